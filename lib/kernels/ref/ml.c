/* Reference kernels of the 'ml' group (ai.onnx.ml): Binarizer,
 * TreeEnsemble and the post transforms. */
#include <math.h>
#include <string.h>
#include "kernels/ref/ml.h"
#include "kernels/ref/util.h"

poprt_status poprt__ref_binarizer(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y);
    if (st)
        return st;
    const double t = poprt__attr_f(k->node, "threshold", 0.0f);
    for (int64_t i = 0; i < x->numel; i++)
        poprt__store_f64(y->data, y->dtype, i,
                         poprt__load_f64(x->data, x->dtype, i) > t ? 1.0 : 0.0);
    return POPRT_OK;
}

/* A tensor attribute as doubles in scratch (n values), or NULL if absent. */
static const double *qm_attr_tensor(poprt__kctx *k, const char *name, int64_t *n)
{
    const poprt__attr *a = poprt__node_attr(k->node, name);
    *n = 0;
    if (!a)
        return NULL;
    if (a->type == POPRT__ATTR_FLOATS || a->type == POPRT__ATTR_INTS) {
        double *d = poprt__kctx_scratch(k, (size_t)(a->n + 1) * sizeof *d);
        if (!d)
            return NULL;
        for (int64_t i = 0; i < a->n; i++)
            d[i] = a->type == POPRT__ATTR_FLOATS ? a->floats[i] : (double)a->ints[i];
        *n = a->n;
        return d;
    }
    if (a->type != POPRT__ATTR_TENSOR || !a->t)
        return NULL;
    int64_t m = poprt__type_numel(&a->t->type);
    if (m < 0 || !a->t->data)
        return NULL;
    double *d = poprt__kctx_scratch(k, (size_t)(m + 1) * sizeof *d);
    if (!d)
        return NULL;
    for (int64_t i = 0; i < m; i++)
        d[i] = poprt__load_f64(a->t->data, a->t->type.elem, i);
    *n = m;
    return d;
}

static int qm_ints(const poprt__kctx *k, const char *name, const int64_t **v, int64_t *n)
{
    *v = poprt__attr_ints(k->node, name, n);
    return *v != NULL;
}

poprt_status poprt__ref_tree_ensemble(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y && x->rank == 2 && y->rank == 2);
    if (st)
        return st;
    const int64_t N = x->dims[0], F = x->dims[1], T = y->dims[1];
    const int64_t *roots, *fid, *tid, *tleaf, *fnid, *fleaf, *ltgt, *mtrack;
    int64_t nroots, nn, n1, n2, n3, n4, nl, nmt;
    int64_t nsplit, nmode, nw, nmem;
    const double *splits = qm_attr_tensor(k, "nodes_splits", &nsplit);
    const double *modes = qm_attr_tensor(k, "nodes_modes", &nmode);
    const double *wts = qm_attr_tensor(k, "leaf_weights", &nw);
    const double *mem = qm_attr_tensor(k, "membership_values", &nmem);
    if (!qm_ints(k, "tree_roots", &roots, &nroots) || !qm_ints(k, "nodes_featureids", &fid, &nn) ||
        !qm_ints(k, "nodes_truenodeids", &tid, &n1) || !qm_ints(k, "nodes_trueleafs", &tleaf, &n2) ||
        !qm_ints(k, "nodes_falsenodeids", &fnid, &n3) ||
        !qm_ints(k, "nodes_falseleafs", &fleaf, &n4) ||
        !qm_ints(k, "leaf_targetids", &ltgt, &nl) || !splits || !modes || !wts)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing tree attributes");
    qm_ints(k, "nodes_missing_value_tracks_true", &mtrack, &nmt);
    if (n1 != nn || n2 != nn || n3 != nn || n4 != nn || nsplit != nn || nmode != nn || nw != nl)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "tree attribute lengths disagree");
    /* membership sets: the i-th BRANCH_MEMBER node owns the i-th NaN-separated run */
    int64_t *mstart = poprt__kctx_scratch(k, (size_t)(nn + 1) * sizeof *mstart);
    int64_t *mend = poprt__kctx_scratch(k, (size_t)(nn + 1) * sizeof *mend);
    double *acc = poprt__kctx_scratch(k, (size_t)(T + 1) * sizeof *acc);
    int64_t *hits = poprt__kctx_scratch(k, (size_t)(T + 1) * sizeof *hits);
    if (!mstart || !mend || !acc || !hits)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    int64_t mp = 0;
    for (int64_t i = 0; i < nn; i++) {
        mstart[i] = mend[i] = 0;
        if ((int)modes[i] != 6)
            continue;
        mstart[i] = mp;
        while (mp < nmem && !isnan(mem[mp]))
            mp++;
        mend[i] = mp;
        if (mp < nmem)
            mp++;
    }
    const int agg = (int)poprt__attr_i(k->node, "aggregate_function", 1);
    const int post = (int)poprt__attr_i(k->node, "post_transform", 0);
    for (int64_t r = 0; r < N; r++) {
        for (int64_t t = 0; t < T; t++) {
            acc[t] = 0.0;
            hits[t] = 0;
        }
        for (int64_t tr = 0; tr < nroots; tr++) {
            int64_t node = roots[tr], leaf = -1;
            for (int64_t guard = 0; guard <= nn && leaf < 0; guard++) {
                if (node < 0 || node >= nn || fid[node] < 0 || fid[node] >= F)
                    return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                                           "tree node index out of range");
                double v = poprt__load_f64(x->data, x->dtype, r * F + fid[node]), s = splits[node];
                int c;
                if (isnan(v) && mtrack && node < nmt && mtrack[node])
                    c = 1;
                else
                    switch ((int)modes[node]) {
                    case 0: c = v <= s; break;
                    case 1: c = v < s; break;
                    case 2: c = v >= s; break;
                    case 3: c = v > s; break;
                    case 4: c = v == s; break;
                    case 5: c = v != s; break;
                    default:
                        c = 0;
                        for (int64_t m = mstart[node]; m < mend[node] && !c; m++)
                            c = v == mem[m];
                        break;
                    }
                int64_t next = c ? tid[node] : fnid[node];
                if (c ? tleaf[node] : fleaf[node])
                    leaf = next;
                else
                    node = next;
            }
            if (leaf < 0 || leaf >= nl || ltgt[leaf] < 0 || ltgt[leaf] >= T)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "bad tree leaf");
            int64_t t = ltgt[leaf];
            double w = wts[leaf];
            if (agg == 2)
                acc[t] = hits[t] ? fmin(acc[t], w) : w;
            else if (agg == 3)
                acc[t] = hits[t] ? fmax(acc[t], w) : w;
            else
                acc[t] += w;
            hits[t]++;
        }
        if (agg == 0 && nroots > 0)
            for (int64_t t = 0; t < T; t++)
                acc[t] /= (double)nroots;
        poprt__misc_post_transform(acc, T, post);
        for (int64_t t = 0; t < T; t++)
            poprt__store_f64(y->data, y->dtype, r * T + t, acc[t]);
    }
    return POPRT_OK;
}

void poprt__misc_post_transform(double *v, int64_t n, int post)
{
    if (post == 1 || post == 3) { /* SOFTMAX, SOFTMAX_ZERO */
        double mx = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < n; i++)
            mx = fmax(mx, v[i]);
        for (int64_t i = 0; i < n; i++) {
            v[i] = (post == 3 && v[i] == 0.0) ? 0.0 : exp(v[i] - mx);
            sum += v[i];
        }
        for (int64_t i = 0; i < n && sum > 0; i++)
            v[i] /= sum;
    } else if (post == 2) { /* LOGISTIC */
        for (int64_t i = 0; i < n; i++)
            v[i] = 1.0 / (1.0 + exp(-v[i]));
    } else if (post == 4) { /* PROBIT: sqrt(2) * erfinv(2p - 1) */
        for (int64_t i = 0; i < n; i++) {
            double p = 2.0 * v[i] - 1.0, w = -log((1.0 - p) * (1.0 + p)), q;
            if (w < 5.0) {
                w -= 2.5;
                q = 2.81022636e-08;
                q = 3.43273939e-07 + q * w;
                q = -3.5233877e-06 + q * w;
                q = -4.39150654e-06 + q * w;
                q = 0.00021858087 + q * w;
                q = -0.00125372503 + q * w;
                q = -0.00417768164 + q * w;
                q = 0.246640727 + q * w;
                q = 1.50140941 + q * w;
            } else {
                w = sqrt(w) - 3.0;
                q = -0.000200214257;
                q = 0.000100950558 + q * w;
                q = 0.00134934322 + q * w;
                q = -0.00367342844 + q * w;
                q = 0.00573950773 + q * w;
                q = -0.0076224613 + q * w;
                q = 0.00943887047 + q * w;
                q = 1.00167406 + q * w;
                q = 2.83297682 + q * w;
            }
            v[i] = 1.41421356237309504880 * q * p;
        }
    }
}
