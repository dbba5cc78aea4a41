/* Reference kernels of the 'ml' group (ai.onnx.ml): the operators on
 * tensors (Binarizer, ArrayFeatureExtractor, CategoryMapper,
 * FeatureVectorizer, Imputer, LabelEncoder, Normalizer, OneHotEncoder,
 * Scaler) and what the classifiers share (post transforms, labels). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/ml_geom.h"
#include "kernels/ref/ml.h"
#include "kernels/ref/util.h"

#define KERR(k, st, ...) POPRT__NODE_ERR((k)->node, st, __VA_ARGS__)

/* ---- shared by the classifiers --------------------------------------------- */

/* erfinv(x) for |x| < 1 (M. Giles' single-precision polynomials). */
static double erfinv(double x)
{
    double w = -log((1.0 - x) * (1.0 + x)), q;
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
    return q * x;
}

void poprt__ml_post_transform(double *v, int64_t n, int post)
{
    if (post == POPRT__POST_SOFTMAX || post == POPRT__POST_SOFTMAX_ZERO) {
        /* SOFTMAX_ZERO: scores within 1e-7 of zero stay (almost) zero;
         * all of them zero gives 0.5 each */
        double mx = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < n; i++)
            mx = fmax(mx, v[i]);
        for (int64_t i = 0; i < n; i++) {
            if (post == POPRT__POST_SOFTMAX_ZERO && fabs(v[i]) <= 1e-7)
                v[i] *= exp(-mx);
            else
                v[i] = exp(v[i] - mx);
            sum += v[i];
        }
        for (int64_t i = 0; i < n; i++)
            v[i] = sum != 0.0 ? v[i] / sum : 0.5;
    } else if (post == POPRT__POST_LOGISTIC) {
        for (int64_t i = 0; i < n; i++) {
            double e = exp(-fabs(v[i]));
            v[i] = v[i] >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
        }
    } else if (post == POPRT__POST_PROBIT) { /* sqrt(2) * erfinv(2p - 1) */
        for (int64_t i = 0; i < n; i++)
            v[i] = 1.41421356237309504880 * erfinv(2.0 * v[i] - 1.0);
    }
}

int64_t poprt__ml_argmax(const double *v, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

void poprt__ml_write_label(const poprt__node *n, const char *ints_name, poprt__tval *y,
                           int64_t row, int64_t idx)
{
    if (y->dtype == POPRT_DTYPE_STRING) {
        const poprt__attr *s = poprt__node_attr(n, "classlabels_strings");
        const char *v = "";
        if (s && s->type == POPRT__ATTR_STRINGS && idx >= 0 && idx < s->n && s->strings[idx])
            v = s->strings[idx];
        ((const char **)y->data)[row] = v;
        return;
    }
    int64_t nl;
    const int64_t *l = poprt__attr_ints(n, ints_name, &nl);
    int64_t v = idx < 0 ? 0 : l && idx < nl ? l[idx] : idx;
    ((int64_t *)y->data)[row] = v;
}

/* ---- lookups: keys sorted once per run, the last of equal keys wins -------- */

typedef struct ml_key {
    double d;
    int64_t i;
    const char *s;
    int64_t idx;
} ml_key;
enum { KEY_NUM, KEY_INT, KEY_STR };

static int cmp_tail(const ml_key *a, const ml_key *b) { return a->idx < b->idx ? 1 : -1; }

static int cmp_num(const void *pa, const void *pb)
{
    const ml_key *a = pa, *b = pb;
    return a->d < b->d ? -1 : a->d > b->d ? 1 : cmp_tail(a, b);
}

static int cmp_int(const void *pa, const void *pb)
{
    const ml_key *a = pa, *b = pb;
    return a->i < b->i ? -1 : a->i > b->i ? 1 : cmp_tail(a, b);
}

static int cmp_str(const void *pa, const void *pb)
{
    const ml_key *a = pa, *b = pb;
    int c = strcmp(a->s, b->s);
    return c ? c : cmp_tail(a, b);
}

typedef struct ml_lookup {
    int kind;
    int64_t n;     /* sorted keys (NaN keys left out) */
    ml_key *keys;
    int64_t nan_idx; /* the last NaN key, or -1 */
} ml_lookup;

/* Builds a lookup of the n keys of attribute a (ints, floats, strings or a
 * tensor of them). */
static poprt_status lookup_build(poprt__kctx *k, const poprt__attr *a, int64_t n, int kind,
                                 ml_lookup *L)
{
    L->kind = kind;
    L->nan_idx = -1;
    L->keys = poprt__kctx_scratch(k, (size_t)(n + 1) * sizeof *L->keys);
    if (!L->keys)
        return poprt__ref_oom(k);
    int64_t m = 0;
    for (int64_t j = 0; j < n; j++) {
        ml_key *e = &L->keys[m];
        e->idx = j;
        if (kind == KEY_STR) {
            e->s = poprt__ml_attr_str(a, j);
        } else if (kind == KEY_INT) {
            e->i = a->type == POPRT__ATTR_INTS ? a->ints[j]
                                                : poprt__load_i64(poprt__tensor_data(a->t), a->t->type.elem, j);
        } else {
            e->d = poprt__ml_attr_num(a, j);
            if (isnan(e->d)) {
                L->nan_idx = j;
                continue;
            }
        }
        m++;
    }
    L->n = m;
    qsort(L->keys, (size_t)m, sizeof *L->keys,
          kind == KEY_STR ? cmp_str : kind == KEY_INT ? cmp_int : cmp_num);
    return POPRT_OK;
}

/* The index of key q (the last one given), or -1. */
static int64_t lookup_find(const ml_lookup *L, const ml_key *q)
{
    if (L->kind == KEY_NUM && isnan(q->d))
        return L->nan_idx;
    int64_t lo = 0, hi = L->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const ml_key *e = &L->keys[mid];
        int c = L->kind == KEY_STR ? strcmp(e->s, q->s)
                : L->kind == KEY_INT ? (e->i < q->i ? -1 : e->i > q->i)
                                     : (e->d < q->d ? -1 : e->d > q->d);
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= L->n)
        return -1;
    const ml_key *e = &L->keys[lo];
    int eq = L->kind == KEY_STR ? strcmp(e->s, q->s) == 0
             : L->kind == KEY_INT ? e->i == q->i
                                  : e->d == q->d;
    return eq ? e->idx : -1;
}

static int key_kind(int32_t elem)
{
    return elem == POPRT_DTYPE_STRING ? KEY_STR
           : (elem == POPRT_DTYPE_FLOAT || elem == POPRT_DTYPE_DOUBLE) ? KEY_NUM
                                                                       : KEY_INT;
}

/* Element i of x as a lookup key of the given kind. */
static void key_of(const poprt__tval *x, int64_t i, int kind, ml_key *q)
{
    if (kind == KEY_STR) {
        const char *s = ((const char *const *)x->data)[i];
        q->s = s ? s : "";
    } else if (kind == KEY_INT) {
        q->i = poprt__load_i64(x->data, x->dtype, i);
    } else {
        q->d = poprt__load_f64(x->data, x->dtype, i);
    }
}

/* ---- operators ---------------------------------------------------------------- */

/* Input 0 and output 0 of an operator whose output has the input's element
 * count (rank >= 1); C: the input's last dimension. */
static poprt_status ml_xy(poprt__kctx *k, const poprt__tval **x, poprt__tval **y, int64_t *C)
{
    *x = poprt__kin(k, 0);
    *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, *x && *y && (*x)->rank >= 1 &&
                                             (*y)->numel == (*x)->numel);
    *C = st ? 0 : (*x)->dims[(*x)->rank - 1];
    return st;
}

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

poprt_status poprt__ref_array_feature_extractor(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ix = poprt__kin(k, 1);
    poprt__tval *z = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && ix && z && x->rank >= 1);
    if (st)
        return st;
    const int64_t L = x->dims[x->rank - 1], K = ix->numel, outer = L ? x->numel / L : 0;
    if (z->numel != outer * K && L)
        return KERR(k, POPRT_STATUS_SHAPE_MISMATCH, "output does not hold %lld x %lld values",
                    (long long)outer, (long long)K);
    const size_t es = poprt__dtype_size((poprt_dtype)x->dtype);
    for (int64_t j = 0; j < K; j++) {
        int64_t c = poprt__load_i64(ix->data, ix->dtype, j);
        if (c < 0 || c >= L)
            return KERR(k, POPRT_STATUS_INVALID_ARGUMENT,
                        "index Y[%lld] is %lld, X's last axis has %lld values", (long long)j,
                        (long long)c, (long long)L);
        for (int64_t o = 0; o < outer; o++)
            memcpy((char *)z->data + (size_t)(o * K + j) * es,
                   (const char *)x->data + (size_t)(o * L + c) * es, es);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_category_mapper(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y && y->numel == x->numel);
    if (st)
        return st;
    const poprt__attr *ints = poprt__node_attr(k->node, "cats_int64s");
    const poprt__attr *strs = poprt__node_attr(k->node, "cats_strings");
    const int to_int = x->dtype == POPRT_DTYPE_STRING;
    const int64_t n = ints && strs ? (ints->n < strs->n ? ints->n : strs->n) : 0;
    ml_lookup L;
    if (n && (st = lookup_build(k, to_int ? strs : ints, n, to_int ? KEY_STR : KEY_INT, &L)))
        return st;
    const int64_t dflt_i = poprt__attr_i(k->node, "default_int64", -1);
    const char *dflt_s = poprt__attr_s(k->node, "default_string", "_Unused");
    for (int64_t i = 0; i < x->numel; i++) {
        ml_key q;
        key_of(x, i, to_int ? KEY_STR : KEY_INT, &q);
        int64_t j = n ? lookup_find(&L, &q) : -1;
        if (to_int)
            ((int64_t *)y->data)[i] = j >= 0 ? ints->ints[j] : dflt_i;
        else
            ((const char **)y->data)[i] = j >= 0 && strs->strings[j] ? strs->strings[j] : dflt_s;
    }
    return POPRT_OK;
}

poprt_status poprt__ref_feature_vectorizer(poprt__kctx *k)
{
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, y && y->rank == 2);
    if (st)
        return st;
    int64_t nd;
    const int64_t *dims = poprt__attr_ints(k->node, "inputdimensions", &nd);
    const int64_t N = y->dims[0], W = y->dims[1];
    float *out = y->data;
    int64_t col = 0;
    for (int i = 0; i < k->n_in && i < nd; i++) {
        const poprt__tval *x = poprt__kin(k, i);
        if (!x || x->rank < 1)
            return KERR(k, POPRT_STATUS_INVALID_ARGUMENT, "input %d is missing or a scalar", i);
        const int64_t rows = x->rank == 1 ? 1 : x->dims[0];
        if (rows != N)
            return KERR(k, POPRT_STATUS_SHAPE_MISMATCH, "input %d has %lld rows, the output %lld",
                        i, (long long)rows, (long long)N);
        const int64_t c = rows ? x->numel / rows : 0, take = c < dims[i] ? c : dims[i];
        if (col + dims[i] > W)
            return KERR(k, POPRT_STATUS_SHAPE_MISMATCH, "output has %lld columns", (long long)W);
        for (int64_t r = 0; r < N; r++)
            for (int64_t j = 0; j < dims[i]; j++)
                out[r * W + col + j] =
                    j < take ? (float)poprt__load_f64(x->data, x->dtype, r * c + j) : 0.0f;
        col += dims[i];
    }
    return POPRT_OK;
}

poprt_status poprt__ref_imputer(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt__tval *y;
    int64_t C, nf, ni;
    poprt_status st = ml_xy(k, &x, &y, &C);
    if (st)
        return st;
    const float *vf = poprt__attr_floats(k->node, "imputed_value_floats", &nf);
    const int64_t *vi = poprt__attr_ints(k->node, "imputed_value_int64s", &ni);
    const int64_t nv = nf ? nf : ni;
    if (nv != 1 && nv != C)
        return KERR(k, POPRT_STATUS_SHAPE_MISMATCH, "%lld imputed values for %lld features",
                    (long long)nv, (long long)C);
    const size_t es = poprt__dtype_size((poprt_dtype)x->dtype);
    if (y->data != x->data && x->numel)
        memcpy(y->data, x->data, (size_t)x->numel * es);
    if (nf) {
        const double rep = poprt__attr_f(k->node, "replaced_value_float", 0.0f);
        for (int64_t i = 0; i < x->numel; i++) {
            double v = poprt__load_f64(x->data, x->dtype, i);
            if (isnan(rep) ? isnan(v) : v == rep)
                poprt__store_f64(y->data, y->dtype, i, vf[nv == 1 ? 0 : i % C]);
        }
    } else {
        const int64_t rep = poprt__attr_i(k->node, "replaced_value_int64", 0);
        for (int64_t i = 0; i < x->numel; i++)
            if (poprt__load_i64(x->data, x->dtype, i) == rep)
                poprt__store_i64(y->data, y->dtype, i, vi[nv == 1 ? 0 : i % C]);
    }
    return POPRT_OK;
}

/* LabelEncoder's output for keys not found (values of type elem). */
static void label_default(const poprt__node *n, const poprt__ml_labels *g, double *d,
                          int64_t *i, const char **s)
{
    if (g->dflt_tensor) {
        *d = poprt__ml_attr_num(g->dflt_tensor, 0);
        *i = g->value_elem == POPRT_DTYPE_STRING
                 ? 0
                 : poprt__load_i64(poprt__tensor_data(g->dflt_tensor->t), g->value_elem, 0);
        *s = poprt__ml_attr_str(g->dflt_tensor, 0);
        return;
    }
    *d = poprt__attr_f(n, "default_float", -0.0f);
    *i = poprt__attr_i(n, "default_int64", -1);
    *s = poprt__attr_s(n, "default_string", "_Unused");
}

poprt_status poprt__ref_label_encoder(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y && y->numel == x->numel);
    if (st)
        return st;
    poprt__ml_labels g;
    if ((st = poprt__ml_labels_geom(k->node, &g)))
        return st;
    const poprt__attr *keys = g.keys, *vals = g.values;
    double dd;
    int64_t di;
    const char *ds;
    label_default(k->node, &g, &dd, &di, &ds);
    if (!keys) { /* version 1: classes_strings, string <-> index */
        keys = vals = poprt__node_attr(k->node, "classes_strings");
        g.key_elem = x->dtype;
    }
    ml_lookup L;
    const int kind = key_kind(g.key_elem);
    const int to_index = !g.keys && x->dtype == POPRT_DTYPE_STRING;
    if (g.n && (g.keys || to_index) && (st = lookup_build(k, keys, g.n, kind, &L)))
        return st;
    for (int64_t i = 0; i < x->numel; i++) {
        ml_key q;
        key_of(x, i, kind, &q);
        if (!g.keys) {
            if (to_index) {
                int64_t j = g.n ? lookup_find(&L, &q) : -1;
                ((int64_t *)y->data)[i] = j >= 0 ? j : di;
            } else {
                ((const char **)y->data)[i] =
                    q.i >= 0 && q.i < g.n ? poprt__ml_attr_str(vals, q.i) : ds;
            }
            continue;
        }
        int64_t j = g.n ? lookup_find(&L, &q) : -1;
        if (y->dtype == POPRT_DTYPE_STRING)
            ((const char **)y->data)[i] = j >= 0 ? poprt__ml_attr_str(vals, j) : ds;
        else if (y->dtype == POPRT_DTYPE_FLOAT || y->dtype == POPRT_DTYPE_DOUBLE)
            poprt__store_f64(y->data, y->dtype, i, j >= 0 ? poprt__ml_attr_num(vals, j) : dd);
        else
            poprt__store_i64(y->data, y->dtype, i,
                             j < 0 ? di
                             : vals->type == POPRT__ATTR_INTS
                                 ? vals->ints[j]
                                 : poprt__load_i64(poprt__tensor_data(vals->t), vals->t->type.elem, j));
    }
    return POPRT_OK;
}

poprt_status poprt__ref_normalizer(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt__tval *y;
    int64_t C;
    poprt_status st = ml_xy(k, &x, &y, &C);
    if (st)
        return st;
    const char *norm = poprt__attr_s(k->node, "norm", "MAX");
    const int mode = strcmp(norm, "L1") == 0 ? 1 : strcmp(norm, "L2") == 0 ? 2 : 0;
    const int64_t N = C ? x->numel / C : 0;
    for (int64_t r = 0; r < N; r++) {
        double d = mode == 0 ? -INFINITY : 0.0;
        for (int64_t c = 0; c < C; c++) {
            double v = poprt__load_f64(x->data, x->dtype, r * C + c);
            d = mode == 0 ? fmax(d, v) : mode == 1 ? d + fabs(v) : d + v * v;
        }
        if (mode == 2)
            d = sqrt(d);
        for (int64_t c = 0; c < C; c++) {
            double v = poprt__load_f64(x->data, x->dtype, r * C + c);
            ((float *)y->data)[r * C + c] = (float)(d != 0.0 ? v / d : v);
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_one_hot_encoder(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y);
    if (st)
        return st;
    const int str = x->dtype == POPRT_DTYPE_STRING;
    const poprt__attr *cats = poprt__node_attr(k->node, str ? "cats_strings" : "cats_int64s");
    const int64_t K = cats ? cats->n : 0;
    if (y->numel != x->numel * K)
        return KERR(k, POPRT_STATUS_SHAPE_MISMATCH, "output does not hold %lld x %lld values",
                    (long long)x->numel, (long long)K);
    const int zeros = poprt__attr_i(k->node, "zeros", 1) != 0;
    ml_lookup L;
    if (K && (st = lookup_build(k, cats, K, str ? KEY_STR : KEY_INT, &L)))
        return st;
    float *out = y->data;
    memset(out, 0, (size_t)y->numel * sizeof *out);
    for (int64_t i = 0; i < x->numel; i++) {
        ml_key q;
        int64_t j = -1;
        if (str) {
            key_of(x, i, KEY_STR, &q);
            j = K ? lookup_find(&L, &q) : -1;
        } else {
            double v = poprt__load_f64(x->data, x->dtype, i);
            q.i = x->dtype == POPRT_DTYPE_INT64 ? poprt__load_i64(x->data, x->dtype, i)
                                                : (int64_t)(fabs(v) < 9.2e18 ? v : 0);
            j = K && (x->dtype == POPRT_DTYPE_INT64 || fabs(v) < 9.2e18) ? lookup_find(&L, &q)
                                                                          : -1;
        }
        if (j >= 0)
            out[i * K + j] = 1.0f;
        else if (!zeros)
            return KERR(k, POPRT_STATUS_INVALID_ARGUMENT,
                        "element %lld is not one of the categories (attribute 'zeros' is 0)",
                        (long long)i);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_scaler(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt__tval *y;
    int64_t C, no, ns;
    poprt_status st = ml_xy(k, &x, &y, &C);
    if (st)
        return st;
    const float *off = poprt__attr_floats(k->node, "offset", &no);
    const float *sc = poprt__attr_floats(k->node, "scale", &ns);
    if ((no != 1 && no != C) || (ns != 1 && ns != C))
        return KERR(k, POPRT_STATUS_SHAPE_MISMATCH,
                    "attributes 'offset' / 'scale' have %lld / %lld values for %lld features",
                    (long long)no, (long long)ns, (long long)C);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = C ? i % C : 0;
        double v = poprt__load_f64(x->data, x->dtype, i);
        ((float *)y->data)[i] = (float)((v - off[no == 1 ? 0 : c]) * sc[ns == 1 ? 0 : c]);
    }
    return POPRT_OK;
}
