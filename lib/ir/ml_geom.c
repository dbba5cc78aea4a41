/* Geometry of the linear and SVM operators of ai.onnx.ml (ir/ml_geom.h). */
#include <stdio.h>
#include <string.h>
#include "ir/ml_geom.h"
#include "ir/op.h"
#include "ir/dtype.h"

#define BAD(...) POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, __VA_ARGS__)

poprt_status poprt__ml_rows(const poprt__node *n, int rank, const int64_t *dims, int64_t *rows,
                            int64_t *cols)
{
    *rows = *cols = -1;
    if (rank < 0)
        return POPRT_OK;
    if (rank != 1 && rank != 2)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "input has rank %d, expected [N, C] or [C]", rank);
    *rows = rank == 2 ? dims[0] : 1;
    *cols = dims[rank - 1];
    return POPRT_OK;
}

static const float *floats_of(const poprt__node *n, const char *name, int64_t *count)
{
    return poprt__attr_floats(n, name, count);
}

/* classlabels_<ints_name> / classlabels_strings: at most one. */
static poprt_status labels(const poprt__node *n, const char *ints_name, int64_t *count,
                           int *strings)
{
    int64_t ni = 0, ns = 0;
    poprt__attr_ints(n, ints_name, &ni);
    const poprt__attr *s = poprt__node_attr(n, "classlabels_strings");
    if (s && s->type == POPRT__ATTR_STRINGS)
        ns = s->n;
    if (ni > 0 && ns > 0)
        return BAD("attributes '%s' and 'classlabels_strings' are both set", ints_name);
    *count = ni + ns;
    *strings = ns > 0;
    return POPRT_OK;
}

static poprt_status post_code(const poprt__node *n, int *post)
{
    const char *s = poprt__attr_s(n, "post_transform", "NONE");
    *post = poprt__ml_post_code(s);
    if (*post < 0)
        return BAD("attribute 'post_transform' is '%s'", s);
    return POPRT_OK;
}

/* Checks that `total` values are `rows` rows of C features, C given (>= 0)
 * or derived; writes C. */
static poprt_status split_rows(const poprt__node *n, const char *attr, int64_t total,
                               int64_t rows, int64_t *C)
{
    if (rows <= 0)
        return POPRT_OK;
    if (total % rows)
        return BAD("attribute '%s' has %lld values, not a multiple of %lld", attr,
                   (long long)total, (long long)rows);
    if (*C >= 0 && total / rows != *C)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "attribute '%s' has %lld values for %lld rows, the input has %lld "
                               "features", attr, (long long)total, (long long)rows, (long long)*C);
    *C = total / rows;
    return POPRT_OK;
}

poprt_status poprt__ml_linear_geom(const poprt__node *n, int64_t n_features, poprt__ml_linear *g)
{
    memset(g, 0, sizeof *g);
    const int cls = strcmp(n->op_type, "LinearClassifier") == 0;
    int64_t nc, ni;
    floats_of(n, "coefficients", &nc);
    floats_of(n, "intercepts", &ni);
    poprt_status st = post_code(n, &g->post);
    if (!st && cls)
        st = labels(n, "classlabels_ints", &g->n_labels, &g->string_labels);
    if (st)
        return st;
    g->n_features = n_features;
    g->n_intercepts = ni;
    if (!cls) {
        g->rows = poprt__attr_i(n, "targets", 1);
        if (g->rows < 1 || g->rows > INT32_MAX)
            return BAD("attribute 'targets' is %lld", (long long)g->rows);
    } else if (n_features > 0) {
        if (nc % n_features)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "attribute 'coefficients' has %lld values, not a multiple of "
                                   "the input's %lld features", (long long)nc,
                                   (long long)n_features);
        g->rows = nc / n_features;
    } else if (n_features == 0) {
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "the input has no features");
    } else {
        g->rows = ni > 0 ? ni : -1;
    }
    if ((st = split_rows(n, "coefficients", nc, g->rows, &g->n_features)))
        return st;
    if (g->rows == 0)
        return BAD("attribute 'coefficients' is empty");
    if (g->rows > 0 && ni != 0 && ni != 1 && ni != g->rows)
        return BAD("attribute 'intercepts' has %lld values, expected 0, 1 or %lld", (long long)ni,
                   (long long)g->rows);
    if (cls && g->n_labels > 0 && g->rows > 1 && g->n_labels < g->rows)
        return BAD("%lld class labels for %lld coefficient rows", (long long)g->n_labels,
                   (long long)g->rows);
    g->n_out = cls && g->rows == 1 && g->n_labels == 2 ? 2 : g->rows;
    return POPRT_OK;
}

static poprt_status svm_kernel(const poprt__node *n, poprt__ml_svm *g)
{
    static const char *const names[] = {"LINEAR", "POLY", "RBF", "SIGMOID"};
    const char *k = poprt__attr_s(n, "kernel_type", "LINEAR");
    g->kernel = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(k, names[i]) == 0)
            g->kernel = i;
    if (g->kernel < 0)
        return BAD("attribute 'kernel_type' is '%s'", k);
    int64_t np;
    const float *p = floats_of(n, "kernel_params", &np);
    if (np != 0 && np != 3)
        return BAD("attribute 'kernel_params' has %lld values, expected 3 (gamma, coef0, degree)",
                   (long long)np);
    if (np == 3) {
        g->gamma = p[0];
        g->coef0 = p[1];
        g->degree = (double)(int64_t)p[2];
    }
    return POPRT_OK;
}

static poprt_status svm_classifier(const poprt__node *n, poprt__ml_svm *g, int64_t ncoef,
                                   int64_t nsv)
{
    int64_t nv, na, nb;
    const int64_t *vpc = poprt__attr_ints(n, "vectors_per_class", &nv);
    floats_of(n, "prob_a", &na);
    floats_of(n, "prob_b", &nb);
    poprt_status st = labels(n, "classlabels_ints", &g->n_labels, &g->string_labels);
    if (st)
        return st;
    g->n_classes = g->n_labels > 1 ? g->n_labels : 1;
    for (int64_t i = 0; i < nv; i++) {
        if (vpc[i] < 0 || vpc[i] > INT32_MAX)
            return BAD("attribute 'vectors_per_class' entry %lld is %lld", (long long)i,
                       (long long)vpc[i]);
        g->n_vectors += vpc[i];
        if (g->n_vectors > INT32_MAX)
            return BAD("attribute 'vectors_per_class' sums to more than 2^31 vectors");
    }
    if (g->n_classes > 65536)
        return BAD("%lld classes", (long long)g->n_classes);
    g->n_pairs = g->n_classes * (g->n_classes - 1) / 2;
    if (g->n_vectors > 0) {
        if (nv != g->n_classes || g->n_classes < 2)
            return BAD("attribute 'vectors_per_class' has %lld entries for %lld classes",
                       (long long)nv, (long long)g->n_classes);
        if ((st = split_rows(n, "support_vectors", nsv, g->n_vectors, &g->n_features)))
            return st;
        if (ncoef != (g->n_classes - 1) * g->n_vectors)
            return BAD("attribute 'coefficients' has %lld values, expected %lld (classes - 1) x "
                       "%lld (support vectors)", (long long)ncoef, (long long)(g->n_classes - 1),
                       (long long)g->n_vectors);
        if (g->n_rho < g->n_pairs)
            return BAD("attribute 'rho' has %lld values, expected %lld (one per pair of classes)",
                       (long long)g->n_rho, (long long)g->n_pairs);
        if (na > 0 || nb > 0) {
            if (na < g->n_pairs || nb < g->n_pairs)
                return BAD("attributes 'prob_a' / 'prob_b' have %lld / %lld values, expected %lld",
                           (long long)na, (long long)nb, (long long)g->n_pairs);
            g->has_proba = 1;
        }
        g->n_scores = g->has_proba ? g->n_classes : g->n_pairs;
    } else {
        if ((st = split_rows(n, "coefficients", ncoef, g->n_classes, &g->n_features)))
            return st;
        if (g->n_rho < 1)
            return BAD("attribute 'rho' is empty");
        g->n_scores = g->n_classes;
    }
    g->n_out = g->n_scores;
    if (g->n_scores == 1 && g->post != POPRT__POST_PROBIT && g->n_rho == 1 && g->n_labels == 2) {
        g->two_columns = 1;
        g->n_out = 2;
    }
    return POPRT_OK;
}

poprt_status poprt__ml_svm_geom(const poprt__node *n, int64_t n_features, poprt__ml_svm *g)
{
    memset(g, 0, sizeof *g);
    g->classifier = strcmp(n->op_type, "SVMClassifier") == 0;
    g->n_features = n_features;
    int64_t ncoef, nsv;
    const float *coef = floats_of(n, "coefficients", &ncoef);
    floats_of(n, "support_vectors", &nsv);
    floats_of(n, "rho", &g->n_rho);
    poprt_status st = svm_kernel(n, g);
    if (!st)
        st = post_code(n, &g->post);
    if (st)
        return st;
    g->weights_positive = 1;
    for (int64_t i = 0; i < ncoef; i++)
        g->weights_positive &= coef[i] >= 0;
    if (g->classifier)
        return svm_classifier(n, g, ncoef, nsv);
    g->one_class = poprt__attr_i(n, "one_class", 0) != 0;
    g->n_vectors = poprt__attr_i(n, "n_supports", 0);
    if (g->n_vectors < 0 || g->n_vectors > INT32_MAX)
        return BAD("attribute 'n_supports' is %lld", (long long)g->n_vectors);
    if (g->n_vectors > 0) {
        if ((st = split_rows(n, "support_vectors", nsv, g->n_vectors, &g->n_features)))
            return st;
        if (ncoef < g->n_vectors)
            return BAD("attribute 'coefficients' has %lld values for %lld support vectors",
                       (long long)ncoef, (long long)g->n_vectors);
    } else if ((st = split_rows(n, "coefficients", ncoef, 1, &g->n_features))) {
        return st;
    }
    if (g->n_rho < 1)
        return BAD("attribute 'rho' is empty");
    g->n_scores = g->n_out = 1;
    return POPRT_OK;
}

/* ---- LabelEncoder ------------------------------------------------------------ */

static int64_t attr_len(const poprt__attr *a)
{
    if (a->type == POPRT__ATTR_TENSOR)
        return a->t ? poprt__type_numel(&a->t->type) : -1;
    return a->n;
}

static int32_t attr_elem(const poprt__attr *a)
{
    switch (a->type) {
    case POPRT__ATTR_STRINGS: return POPRT_DTYPE_STRING;
    case POPRT__ATTR_INTS: return POPRT_DTYPE_INT64;
    case POPRT__ATTR_FLOATS: return POPRT_DTYPE_FLOAT;
    case POPRT__ATTR_TENSOR: return a->t ? a->t->type.elem : 0;
    default: return 0;
    }
}

double poprt__ml_attr_num(const poprt__attr *a, int64_t i)
{
    if (a->type == POPRT__ATTR_INTS)
        return (double)a->ints[i];
    if (a->type == POPRT__ATTR_FLOATS)
        return a->floats[i];
    if (a->type == POPRT__ATTR_TENSOR && a->t->type.elem != POPRT_DTYPE_STRING)
        return poprt__load_f64(poprt__tensor_data(a->t), a->t->type.elem, i);
    return 0;
}

const char *poprt__ml_attr_str(const poprt__attr *a, int64_t i)
{
    const char *s = NULL;
    if (a->type == POPRT__ATTR_STRINGS)
        s = a->strings[i];
    else if (a->type == POPRT__ATTR_TENSOR && a->t->type.elem == POPRT_DTYPE_STRING)
        s = ((const char *const *)poprt__tensor_data(a->t))[i];
    return s ? s : "";
}

static int label_elem_ok(int32_t e)
{
    return e == POPRT_DTYPE_STRING || e == POPRT_DTYPE_INT64 || e == POPRT_DTYPE_FLOAT ||
           e == POPRT_DTYPE_INT32 || e == POPRT_DTYPE_INT16 || e == POPRT_DTYPE_DOUBLE;
}

/* The one attribute of prefix_{strings,int64s,floats,tensor} that is set. */
static poprt_status one_of(const poprt__node *n, const char *prefix, const poprt__attr **out)
{
    static const char *const kinds[] = {"strings", "int64s", "floats", "tensor"};
    char name[32];
    *out = NULL;
    for (int k = 0; k < 4; k++) {
        snprintf(name, sizeof name, "%s_%s", prefix, kinds[k]);
        const poprt__attr *a = poprt__node_attr(n, name);
        if (!a)
            continue;
        if (*out)
            return BAD("attributes '%s' and '%s' are both set", (*out)->name, name);
        if (attr_len(a) < 0 || !label_elem_ok(attr_elem(a)) ||
            (a->type == POPRT__ATTR_TENSOR && attr_len(a) > 0 && !a->t->raw))
            return BAD("attribute '%s' is not a list of strings, integers or floats", name);
        *out = a;
    }
    if (!*out)
        return BAD("one of the attributes '%s_*' must be set", prefix);
    return POPRT_OK;
}

poprt_status poprt__ml_labels_geom(const poprt__node *n, poprt__ml_labels *g)
{
    memset(g, 0, sizeof *g);
    if (n->opset < 2) {
        const poprt__attr *a = poprt__node_attr(n, "classes_strings");
        if (a && a->type != POPRT__ATTR_STRINGS)
            return BAD("attribute 'classes_strings' must be a list of strings");
        g->n = a ? a->n : 0;
        return POPRT_OK;
    }
    poprt_status st = one_of(n, "keys", &g->keys);
    if (!st)
        st = one_of(n, "values", &g->values);
    if (st)
        return st;
    g->key_elem = attr_elem(g->keys);
    g->value_elem = attr_elem(g->values);
    g->n = attr_len(g->keys);
    if (attr_len(g->values) != g->n)
        return BAD("attribute '%s' has %lld entries, '%s' has %lld", g->values->name,
                   (long long)attr_len(g->values), g->keys->name, (long long)g->n);
    const poprt__attr *d = poprt__node_attr(n, "default_tensor");
    if (d) {
        if (attr_len(d) < 1 || attr_elem(d) != g->value_elem || !d->t->raw)
            return BAD("attribute 'default_tensor' must hold one %s value",
                       poprt__dtype_name((poprt_dtype)g->value_elem));
        g->dflt_tensor = d;
    }
    return POPRT_OK;
}

/* ---- maps ------------------------------------------------------------------------ */

static int key_cmp2(int32_t dt, const void *ka, int64_t a, const void *kb, int64_t b);
/* Entries a and b of one key array. */
static int key_cmp(int32_t dt, const void *keys, int64_t a, int64_t b)
{
    return key_cmp2(dt, keys, a, keys, b);
}

/* A merge sort of indexes by key (stable; tmp holds n). */
static void sort_range(int32_t dt, const void *keys, int64_t *o, int64_t *tmp, int64_t n)
{
    if (n < 2)
        return;
    int64_t h = n / 2;
    sort_range(dt, keys, o, tmp, h);
    sort_range(dt, keys, o + h, tmp, n - h);
    int64_t i = 0, j = h, k = 0;
    while (i < h && j < n)
        tmp[k++] = key_cmp(dt, keys, o[j], o[i]) < 0 ? o[j++] : o[i++];
    while (i < h)
        tmp[k++] = o[i++];
    while (j < n)
        tmp[k++] = o[j++];
    memcpy(o, tmp, (size_t)n * sizeof *o);
}

int64_t poprt__ml_map_sort(int32_t key_dtype, const void *keys, int64_t n, int64_t *order,
                           int64_t *tmp)
{
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    sort_range(key_dtype, keys, order, tmp, n);
    for (int64_t i = 1; i < n; i++)
        if (key_cmp(key_dtype, keys, order[i - 1], order[i]) == 0)
            return order[i];
    return -1;
}

/* Key a of ka against key b of kb (same dtype). */
static int key_cmp2(int32_t dt, const void *ka, int64_t a, const void *kb, int64_t b)
{
    if (dt == POPRT_DTYPE_STRING)
        return strcmp(((const char *const *)ka)[a], ((const char *const *)kb)[b]);
    if (dt == POPRT_DTYPE_UINT64) {
        uint64_t x = ((const uint64_t *)ka)[a], y = ((const uint64_t *)kb)[b];
        return (x > y) - (x < y);
    }
    int64_t x = poprt__load_i64(ka, dt, a), y = poprt__load_i64(kb, dt, b);
    return (x > y) - (x < y);
}

int64_t poprt__ml_map_find(int32_t key_dtype, const void *keys, const int64_t *order, int64_t n,
                           const void *probe, int64_t at)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int c = key_cmp2(key_dtype, keys, order[mid], probe, at);
        if (c == 0)
            return order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

poprt_status poprt__ml_map_labels_distinct(const poprt__node *n, const char *str_name,
                                           const char *int_name)
{
    const poprt__attr *a = poprt__node_attr(n, str_name);
    int str = a && a->n > 0;
    if (!str)
        a = poprt__node_attr(n, int_name);
    if (!a || a->n < 2)
        return POPRT_OK;
    int64_t *order = poprt__malloc(2 * (size_t)a->n * sizeof *order);
    if (!order)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    const void *keys = str ? (const void *)a->strings : (const void *)a->ints;
    int64_t dup = poprt__ml_map_sort(str ? POPRT_DTYPE_STRING : POPRT_DTYPE_INT64, keys, a->n,
                                     order, order + a->n);
    poprt__free(order);
    if (dup < 0)
        return POPRT_OK;
    if (str)
        return BAD("attribute '%s' holds '%s' twice (map keys are distinct)", a->name,
                   a->strings[dup]);
    return BAD("attribute '%s' holds %lld twice (map keys are distinct)", a->name,
               (long long)a->ints[dup]);
}

poprt_status poprt__ml_cast_map_attrs(const poprt__node *n, int *to, int *sparse, int64_t *max_map)
{
    const char *c = poprt__attr_s(n, "cast_to", "TO_FLOAT");
    const char *f = poprt__attr_s(n, "map_form", "DENSE");
    *max_map = poprt__attr_i(n, "max_map", 1);
    if (strcmp(c, "TO_FLOAT") == 0)
        *to = POPRT_DTYPE_FLOAT;
    else if (strcmp(c, "TO_STRING") == 0)
        *to = POPRT_DTYPE_STRING;
    else if (strcmp(c, "TO_INT64") == 0)
        *to = POPRT_DTYPE_INT64;
    else
        return BAD("attribute 'cast_to' is '%s'; expected TO_FLOAT, TO_STRING or TO_INT64", c);
    if (strcmp(f, "DENSE") != 0 && strcmp(f, "SPARSE") != 0)
        return BAD("attribute 'map_form' is '%s'; expected DENSE or SPARSE", f);
    *sparse = f[0] == 'S';
    if (*sparse && *max_map <= 0)
        return BAD("attribute 'max_map' is %lld; a SPARSE map_form needs it above 0",
                   (long long)*max_map);
    return POPRT_OK;
}
