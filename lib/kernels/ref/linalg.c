/* Reference kernels of the 'linalg' group (see linalg.h). */
#include <math.h>
#include <string.h>
#include "ir/einsum.h"
#include "kernels/ref/linalg.h"
#include "kernels/ref/util.h"

poprt_status poprt__ref_einsum(poprt__kctx *k)
{
    const int n_in = k->n_in;
    int ranks[POPRT__EINSUM_MAX_IN];
    const poprt__tval *in[POPRT__EINSUM_MAX_IN];
    if (n_in < 1 || n_in > POPRT__EINSUM_MAX_IN)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "%d inputs", n_in);
    for (int i = 0; i < n_in; i++) {
        in[i] = poprt__kin(k, i);
        if (!in[i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "input %d missing", i);
        ranks[i] = in[i]->rank;
    }
    poprt__tval *y = poprt__kout(k, 0);
    poprt__einsum e;
    if (!poprt__einsum_parse(poprt__attr_s(k->node, "equation", ""), n_in, ranks, &e))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "bad equation '%s'",
                               poprt__attr_s(k->node, "equation", ""));
    int64_t size[64];
    int used[64] = {0};
    for (int l = 0; l < 64; l++)
        size[l] = 1;
    for (int i = 0; i < n_in; i++)
        for (int d = 0; d < e.rank[i]; d++) {
            int l = e.lab[i][d];
            int64_t s = in[i]->dims[d];
            if (used[l] && size[l] != s && s != 1 && size[l] != 1)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                       "label size mismatch: %lld vs %lld", (long long)size[l],
                                       (long long)s);
            if (!used[l] || size[l] == 1)
                size[l] = s;
            used[l] = 1;
        }
    /* loop labels: output labels first, then the summed ones */
    int loop[64], nl = 0, nout = e.out_rank;
    int in_out[64] = {0};
    for (int i = 0; i < e.out_rank; i++) {
        loop[nl++] = e.out_lab[i];
        in_out[e.out_lab[i]] = 1;
    }
    for (int l = 0; l < 64; l++)
        if (used[l] && !in_out[l])
            loop[nl++] = l;
    /* per input, stride of each loop label (dims sharing a label add up:
     * diagonals; size-1 dims broadcast with stride 0) */
    int64_t lstr[POPRT__EINSUM_MAX_IN][64];
    for (int i = 0; i < n_in; i++) {
        int64_t str[POPRT__MAX_RANK];
        poprt__strides(in[i]->rank, in[i]->dims, str);
        for (int j = 0; j < nl; j++) {
            lstr[i][j] = 0;
            for (int d = 0; d < e.rank[i]; d++)
                if (e.lab[i][d] == loop[j] && in[i]->dims[d] != 1)
                    lstr[i][j] += str[d];
        }
    }
    int64_t n_outer = 1, n_inner = 1;
    for (int j = 0; j < nl; j++)
        *(j < nout ? &n_outer : &n_inner) *= size[loop[j]];
    if (y->numel != n_outer)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output size mismatch");
    const int is_int = poprt__dtype_is_int(y->dtype);
    int64_t idx[64] = {0};
    for (int64_t o = 0; o < n_outer; o++) {
        double acc = 0.0;
        int64_t iacc = 0;
        for (int j = nout; j < nl; j++)
            idx[j] = 0;
        for (int64_t r = 0; r < n_inner; r++) {
            double prod = 1.0;
            int64_t iprod = 1;
            for (int i = 0; i < n_in; i++) {
                int64_t off = 0;
                for (int j = 0; j < nl; j++)
                    off += idx[j] * lstr[i][j];
                if (is_int)
                    iprod *= poprt__load_i64(in[i]->data, in[i]->dtype, off);
                else
                    prod *= poprt__load_f64(in[i]->data, in[i]->dtype, off);
            }
            acc += prod;
            iacc += iprod;
            for (int j = nl - 1; j >= nout; j--) {
                if (++idx[j] < size[loop[j]])
                    break;
                idx[j] = 0;
            }
        }
        if (is_int)
            poprt__store_i64(y->data, y->dtype, o, iacc);
        else
            poprt__store_f64(y->data, y->dtype, o, acc);
        for (int j = nout - 1; j >= 0; j--) {
            if (++idx[j] < size[loop[j]])
                break;
            idx[j] = 0;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_det(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X must be [..., n, n]");
    const int64_t n = x->dims[x->rank - 1], nn = n * n;
    const int64_t batch = poprt__ref_prod64(x->dims, x->rank - 2);
    double *a = poprt__kctx_scratch(k, (size_t)(nn > 0 ? nn : 1) * sizeof(double));
    if (!a)
        return poprt__ref_oom(k);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < nn; i++)
            a[i] = poprt__load_f64(x->data, x->dtype, b * nn + i);
        /* LU with partial pivoting */
        double det = 1.0;
        for (int64_t c = 0; c < n && det != 0.0; c++) {
            int64_t piv = c;
            for (int64_t r = c + 1; r < n; r++)
                if (fabs(a[r * n + c]) > fabs(a[piv * n + c]))
                    piv = r;
            if (a[piv * n + c] == 0.0) {
                det = 0.0;
                break;
            }
            if (piv != c) {
                for (int64_t j = 0; j < n; j++) {
                    double t = a[c * n + j];
                    a[c * n + j] = a[piv * n + j];
                    a[piv * n + j] = t;
                }
                det = -det;
            }
            det *= a[c * n + c];
            for (int64_t r = c + 1; r < n; r++) {
                double f = a[r * n + c] / a[c * n + c];
                for (int64_t j = c; j < n; j++)
                    a[r * n + j] -= f * a[c * n + j];
            }
        }
        poprt__store_f64(y->data, y->dtype, b, det);
    }
    return POPRT_OK;
}
