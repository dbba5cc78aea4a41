/* Reference kernels of the 'loss' group: NegativeLogLikelihoodLoss and
 * SoftmaxCrossEntropyLoss (computed in double). */
#include <math.h>
#include <string.h>
#include "kernels/ref/elem.h"
#include "kernels/ref/loss.h"
#include "kernels/ref/reduce.h"

/* Negative log-likelihood over lp [N, C, D...] (double, log-probabilities)
 * with target [N, D...]; writes output 0 of k. */
static poprt_status nll_core(poprt__kctx *k, const double *lp, const int64_t *dims, int rank,
                             const poprt__tval *target, const poprt__tval *weight)
{
    const poprt__node *n = k->node;
    poprt__tval *out = poprt__kout(k, 0);
    if (!out)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing output");
    if (rank < 2)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "input must be at least 2-D");
    int64_t N = dims[0], C = dims[1], D = 1;
    for (int i = 2; i < rank; i++)
        D *= dims[i];
    if (target->numel != N * D || target->rank != rank - 1)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "target shape");
    if (weight && weight->numel != C)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "weight must have C values");
    const char *red = poprt__attr_s(n, "reduction", "mean");
    int none = !strcmp(red, "none"), mean = !strcmp(red, "mean");
    const poprt__attr *iia = poprt__node_attr(n, "ignore_index");
    int has_ii = iia != NULL;
    int64_t ii = iia ? iia->i : 0;
    double sum = 0, wsum = 0;
    if (none && out->numel != N * D)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output size");
    for (int64_t i = 0; i < N; i++)
        for (int64_t d = 0; d < D; d++) {
            int64_t c = poprt__load_i64(target->data, target->dtype, i * D + d);
            double l = 0, w = 0;
            if (!(has_ii && c == ii)) {
                if (c < 0 || c >= C)
                    return POPRT__NODE_ERR(n, POPRT_STATUS_RUNTIME_ERROR,
                                           "target class %lld out of range [0, %lld)",
                                           (long long)c, (long long)C);
                w = weight ? poprt__ref_ld_f64(weight->data, weight->dtype, c) : 1.0;
                l = -lp[(i * C + c) * D + d] * w;
            }
            if (none)
                poprt__ref_st_f64(out->data, out->dtype, i * D + d, l);
            sum += l;
            wsum += w;
        }
    if (!none)
        poprt__ref_st_f64(out->data, out->dtype, 0, mean ? sum / wsum : sum);
    return POPRT_OK;
}

poprt_status poprt__ref_nllloss(poprt__kctx *k)
{
    const poprt__tval *X = poprt__kin(k, 0), *T = poprt__kin(k, 1), *W = poprt__kin(k, 2);
    if (!X || !T)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing input");
    double *lp = poprt__kctx_scratch(k, (size_t)(X->numel + 1) * sizeof(double));
    if (!lp)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    for (int64_t i = 0; i < X->numel; i++)
        lp[i] = poprt__ref_ld_f64(X->data, X->dtype, i);
    return nll_core(k, lp, X->dims, X->rank, T, W);
}

poprt_status poprt__ref_sce_loss(poprt__kctx *k)
{
    const poprt__tval *X = poprt__kin(k, 0), *T = poprt__kin(k, 1), *W = poprt__kin(k, 2);
    poprt__tval *LP = poprt__kout(k, 1);
    if (!X || !T)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing input");
    if (X->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "scores must be at least 2-D");
    int64_t N = X->dims[0], C = X->dims[1], NC = N * C, D = NC > 0 ? X->numel / NC : 0;
    double *lp = poprt__kctx_scratch(k, (size_t)(X->numel + 1) * sizeof(double));
    double *row = poprt__kctx_scratch(k, (size_t)(C + 1) * sizeof(double));
    if (!lp || !row)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    /* log-softmax along the class axis */
    for (int64_t i = 0; i < N; i++)
        for (int64_t d = 0; d < D; d++) {
            for (int64_t c = 0; c < C; c++)
                row[c] = poprt__ref_ld_f64(X->data, X->dtype, (i * C + c) * D + d);
            poprt__ref_softmax_row_f64(row, row, C, 1);
            for (int64_t c = 0; c < C; c++) {
                /* round like the input type so loss and log_prob agree */
                double v = row[c];
                if (X->dtype == POPRT_DTYPE_FLOAT)
                    v = (float)v;
                lp[(i * C + c) * D + d] = v;
            }
        }
    if (LP) {
        if (LP->numel != X->numel)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL, "log_prob size");
        for (int64_t i = 0; i < X->numel; i++)
            poprt__ref_st_f64(LP->data, LP->dtype, i, lp[i]);
    }
    return nll_core(k, lp, X->dims, X->rank, T, W);
}
