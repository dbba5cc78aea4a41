/* Reference kernels of the tensor family that sort: TopK and Unique
 * (stable merge sorts, so ties keep their input order). */
#include <math.h>
#include <string.h>
#include "kernels/ref/tensor.h"

/* A key whose unsigned order is the numeric order of element i. */
static uint64_t sort_key(const poprt__tval *x, int64_t i)
{
    double v;
    switch (x->dtype) {
    case POPRT_DTYPE_UINT8:
    case POPRT_DTYPE_BOOL:
        return ((const uint8_t *)x->data)[i];
    case POPRT_DTYPE_UINT16:
        return ((const uint16_t *)x->data)[i];
    case POPRT_DTYPE_UINT32:
        return ((const uint32_t *)x->data)[i];
    case POPRT_DTYPE_UINT64:
        return ((const uint64_t *)x->data)[i];
    case POPRT_DTYPE_FLOAT:
        v = ((const float *)x->data)[i];
        break;
    case POPRT_DTYPE_DOUBLE:
        v = ((const double *)x->data)[i];
        break;
    default:
        if (poprt__dtype_is_float(x->dtype)) {
            v = poprt__load_f64(x->data, x->dtype, i);
            break;
        }
        if (poprt__dtype_is_signed(x->dtype))
            return (uint64_t)poprt__ref_tv_int(x, i) ^ (1ull << 63);
        return (uint64_t)poprt__ref_tv_int(x, i);
    }
    if (v == 0)
        v = 0.0; /* -0 equals +0 */
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return (u >> 63) ? ~u : (u | (1ull << 63));
}

typedef int (*less_fn)(const void *ctx, int64_t a, int64_t b);

/* Stable bottom-up merge sort of v[0..n) (tmp has n entries). */
static void merge_sort(int64_t *v, int64_t *tmp, int64_t n, less_fn less, const void *ctx)
{
    int64_t *src = v, *dst = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                dst[o++] = less(ctx, src[j], src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[o++] = src[i++];
            while (j < hi)
                dst[o++] = src[j++];
        }
        int64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != v)
        memcpy(v, src, (size_t)n * sizeof *v);
}

typedef struct key_ctx {
    const uint64_t *key;
    int largest;
} key_ctx;

static int key_less(const void *ctx, int64_t a, int64_t b)
{
    const key_ctx *c = ctx;
    return c->largest ? c->key[a] > c->key[b] : c->key[a] < c->key[b];
}

poprt_status poprt__ref_topk(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *vals = poprt__kout(k, 0), *inds = poprt__kout(k, 1);
    if (!x)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input");
    int64_t kk;
    const poprt__tval *kt = poprt__kin(k, 1);
    if (kt) {
        if (kt->numel != 1)
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "K must hold one value");
        kk = poprt__ref_tv_int(kt, 0);
    } else {
        kk = poprt__attr_i(k->node, "k", -1);
    }
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", -1), x->rank, &axis))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    int64_t n = x->dims[axis];
    if (kk < 0 || kk > n)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "k=%lld outside [0, %lld]",
                               (long long)kk, (long long)n);
    key_ctx kc = {NULL, poprt__attr_i(k->node, "largest", 1) != 0};
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    uint64_t *key = poprt__kctx_scratch(k, (size_t)(n + 1) * sizeof *key);
    int64_t *idx = poprt__kctx_scratch(k, (size_t)(2 * n + 2) * sizeof *idx);
    if (!key || !idx)
        return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    kc.key = key;
    size_t es = poprt__ref_esize(x->dtype);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = a * n * inner + i;
            for (int64_t t = 0; t < n; t++) {
                key[t] = sort_key(x, base + t * inner);
                idx[t] = t;
            }
            /* stable sort: equal values keep the lower index first */
            merge_sort(idx, idx + n + 1, n, key_less, &kc);
            for (int64_t j = 0; j < kk; j++) {
                int64_t op = (a * kk + j) * inner + i;
                if (vals)
                    memcpy((char *)vals->data + (size_t)op * es,
                           (const char *)x->data + (size_t)(base + idx[j] * inner) * es, es);
                if (inds)
                    ((int64_t *)inds->data)[op] = idx[j];
            }
        }
    return POPRT_OK;
}

typedef struct slice_ctx {
    const uint64_t *key;      /* non-strings: keys, slice-major */
    const char *const *str;   /* strings: pointers, slice-major */
    int64_t S;                /* elements per slice */
} slice_ctx;

static int slice_cmp(const slice_ctx *c, int64_t a, int64_t b)
{
    for (int64_t e = 0; e < c->S; e++) {
        if (c->str) {
            const char *x = c->str[a * c->S + e], *y = c->str[b * c->S + e];
            int r = strcmp(x ? x : "", y ? y : "");
            if (r)
                return r < 0 ? -1 : 1;
        } else {
            uint64_t x = c->key[a * c->S + e], y = c->key[b * c->S + e];
            if (x != y)
                return x < y ? -1 : 1;
        }
    }
    return 0;
}

static int slice_less(const void *ctx, int64_t a, int64_t b) { return slice_cmp(ctx, a, b) < 0; }

static int idx_less(const void *ctx, int64_t a, int64_t b)
{
    const int64_t *first = ctx;
    return first[a] < first[b];
}

poprt_status poprt__ref_unique(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    if (!x)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input");
    int sorted = poprt__attr_i(k->node, "sorted", 1) != 0;
    const poprt__attr *aa = poprt__node_attr(k->node, "axis");
    int64_t axis = 0, outer = 1, inner = 1, len = x->numel;
    if (aa) {
        if (!poprt__norm_axis(aa->i, x->rank, &axis))
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
        len = x->dims[axis];
        for (int i = 0; i < axis; i++)
            outer *= x->dims[i];
        for (int i = (int)axis + 1; i < x->rank; i++)
            inner *= x->dims[i];
    }
    int64_t S = outer * inner;
    int isstr = x->dtype == POPRT_DTYPE_STRING;
    size_t nel = (size_t)(len * S + 1);
    void *keys = poprt__kctx_scratch(k, nel * (isstr ? sizeof(char *) : sizeof(uint64_t)));
    int64_t *order = poprt__kctx_scratch(k, (size_t)(4 * len + 4) * sizeof(int64_t));
    if (!keys || !order)
        return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    int64_t *tmp = order + len + 1, *first = tmp + len + 1, *inv = first + len + 1;
    /* slice s, element e = (o, i) -> x[(o*len + s)*inner + i] */
    for (int64_t s = 0; s < len; s++)
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t src = (o * len + s) * inner + i, dst = s * S + o * inner + i;
                if (isstr)
                    ((const char **)keys)[dst] = ((const char *const *)x->data)[src];
                else
                    ((uint64_t *)keys)[dst] = sort_key(x, src);
            }
    slice_ctx sc = {isstr ? NULL : keys, isstr ? keys : NULL, S};
    for (int64_t s = 0; s < len; s++)
        order[s] = s;
    merge_sort(order, tmp, len, slice_less, &sc);
    /* groups of equal slices; the stable sort puts the first occurrence first */
    int64_t nu = 0;
    for (int64_t p = 0; p < len; p++) {
        if (p == 0 || slice_cmp(&sc, order[p - 1], order[p]) != 0)
            first[nu++] = order[p];
        inv[order[p]] = nu - 1; /* group number in sorted order */
    }
    /* rank[g]: output position of group g */
    int64_t *gpos = tmp;
    if (sorted) {
        for (int64_t g = 0; g < nu; g++)
            gpos[g] = g;
    } else {
        int64_t *byfirst = order; /* reuse: groups ordered by first occurrence */
        for (int64_t g = 0; g < nu; g++)
            byfirst[g] = g;
        int64_t *t2 = poprt__kctx_scratch(k, (size_t)(nu + 1) * sizeof(int64_t));
        if (!t2)
            return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
        merge_sort(byfirst, t2, nu, idx_less, first);
        for (int64_t p = 0; p < nu; p++)
            gpos[byfirst[p]] = p;
    }
    int64_t dims[POPRT__MAX_RANK];
    int orank = aa ? x->rank : 1;
    if (aa) {
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
        dims[axis] = nu;
    } else {
        dims[0] = nu;
    }
    poprt_status st;
    if (k->out[0] && (st = poprt__kctx_alloc_output(k, 0, x->dtype, orank, dims)))
        return st;
    for (int j = 1; j < 4 && j < k->n_out; j++)
        if (k->out[j] && (st = poprt__kctx_alloc_output(k, j, POPRT_DTYPE_INT64, 1,
                                                         j == 2 ? &len : &nu)))
            return st;
    poprt__tval *y = poprt__kout(k, 0), *yi = poprt__kout(k, 1), *yinv = poprt__kout(k, 2),
                *yc = poprt__kout(k, 3);
    size_t es = poprt__ref_esize(x->dtype), blk = (size_t)inner * es;
    for (int64_t g = 0; g < nu; g++) {
        int64_t u = gpos[g];
        if (yi)
            ((int64_t *)yi->data)[u] = first[g];
        if (yc)
            ((int64_t *)yc->data)[u] = 0;
        if (y)
            for (int64_t o = 0; o < outer; o++)
                memcpy((char *)y->data + (size_t)(o * nu + u) * blk,
                       (const char *)x->data + (size_t)(o * len + first[g]) * blk, blk);
    }
    for (int64_t s = 0; s < len; s++) {
        int64_t u = gpos[inv[s]];
        if (yinv)
            ((int64_t *)yinv->data)[s] = u;
        if (yc)
            ((int64_t *)yc->data)[u]++;
    }
    return POPRT_OK;
}
