/* Reference kernels of the 'quant' family. */
#include <math.h>
#include <string.h>
#include "kernels/ref/quant.h"
#include "ir/geom.h"

/* ---- shared helpers -------------------------------------------------------- */

void poprt__int_range(int32_t dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case POPRT_DTYPE_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
    case POPRT_DTYPE_UINT8: *lo = 0; *hi = UINT8_MAX; break;
    case POPRT_DTYPE_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
    case POPRT_DTYPE_UINT16: *lo = 0; *hi = UINT16_MAX; break;
    case POPRT_DTYPE_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
    case POPRT_DTYPE_UINT32: *lo = 0; *hi = UINT32_MAX; break;
    case POPRT_DTYPE_INT4: *lo = -8; *hi = 7; break;
    case POPRT_DTYPE_UINT4: *lo = 0; *hi = 15; break;
    case POPRT_DTYPE_INT2: *lo = -2; *hi = 1; break;
    case POPRT_DTYPE_UINT2: *lo = 0; *hi = 3; break;
    case POPRT_DTYPE_UINT64: *lo = 0; *hi = INT64_MAX; break;
    default: *lo = INT64_MIN; *hi = INT64_MAX; break;
    }
}

static poprt_status layout_of(const poprt__kctx *k, const poprt__tval *x, const poprt__tval *s,
                              const poprt__tval *zp, poprt__qlayout *q)
{
    poprt_status st = poprt__quant_layout(k->node, x->rank, x->dims, s->rank, s->dims, q);
    if (st)
        return st;
    if (zp && zp->numel != s->numel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "zero point has %lld values, scale %lld", (long long)zp->numel,
                               (long long)s->numel);
    return POPRT_OK;
}

/* Index into the scale of element (o, a, r) of x = [outer, len, inner]. */
static inline int64_t q_index(const poprt__qlayout *q, int64_t o, int64_t a, int64_t r)
{
    switch (q->kind) {
    case POPRT__Q_AXIS: return a;
    case POPRT__Q_BLOCK: return (o * q->nblk + a / q->block) * q->inner + r;
    default: return 0;
    }
}

static inline float load_f32(const void *p, int32_t dt, int64_t i)
{
    switch (dt) {
    case POPRT_DTYPE_FLOAT: return ((const float *)p)[i];
    case POPRT_DTYPE_UINT8: return ((const uint8_t *)p)[i];
    case POPRT_DTYPE_INT8: return ((const int8_t *)p)[i];
    default: return (float)poprt__load_f64(p, dt, i);
    }
}

/* Rounds v to the precision of dtype (the type the ONNX computation uses). */
static inline double to_prec(double v, int32_t dt)
{
    switch (dt) {
    case POPRT_DTYPE_FLOAT16: return poprt__half_to_float(poprt__float_to_half((float)v));
    case POPRT_DTYPE_BFLOAT16: return poprt__bf16_to_float(poprt__float_to_bf16((float)v));
    case POPRT_DTYPE_DOUBLE: return v;
    default: return (float)v;
    }
}

static int is_16bit_float(int32_t dt)
{
    return dt == POPRT_DTYPE_FLOAT16 || dt == POPRT_DTYPE_BFLOAT16;
}

/* Saturating round-half-to-even of v into [lo, hi]; NaN gives 0. */
static inline int64_t sat_round(double v, int64_t lo, int64_t hi)
{
    if (isnan(v))
        return lo > 0 ? lo : (hi < 0 ? hi : 0);
    v = nearbyint(v);
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)
        return hi;
    return (int64_t)v;
}

static poprt_status need(const poprt__kctx *k, const void *p, const char *what)
{
    if (!p)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing %s", what);
    return POPRT_OK;
}

/* ---- QuantizeLinear / DequantizeLinear ----------------------------------------- */

poprt_status poprt__ref_quantize_linear(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *s = poprt__kin(k, 1), *zp = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = need(k, x && s && y ? x : NULL, "input or output");
    if (st)
        return st;
    poprt__qlayout q;
    if ((st = layout_of(k, x, s, zp, &q)))
        return st;
    const int32_t yt = y->dtype;
    const int saturate = (int)poprt__attr_i(k->node, "saturate", 1);
    int32_t prec = (int32_t)poprt__attr_i(k->node, "precision", 0);
    if (!prec)
        prec = (is_16bit_float(x->dtype) && x->dtype == s->dtype) ? s->dtype
               : (x->dtype == POPRT_DTYPE_DOUBLE || s->dtype == POPRT_DTYPE_DOUBLE)
                   ? POPRT_DTYPE_DOUBLE
                   : POPRT_DTYPE_FLOAT;
    const int is_int = poprt__dtype_is_int(yt);
    if (poprt__dtype_is_float8(yt) && q.kind != POPRT__Q_BLOCK &&
        x->dtype == POPRT_DTYPE_FLOAT && s->dtype == POPRT_DTYPE_FLOAT && prec == POPRT_DTYPE_FLOAT) {
        /* float32 to float8, the activations of fp8 models: a float quotient
         * is the double one rounded to float (53 >= 2 * 24 + 2 bits, so the
         * double rounding is innocuous), and the encoder works on floats */
        const float *xf = x->data, *sf = s->data;
        uint8_t *yb = y->data;
        int64_t i = 0;
        for (int64_t o = 0; o < q.outer; o++)
            for (int64_t a = 0; a < q.len; a++) {
                int64_t si = q_index(&q, o, a, 0);
                const float sv = sf[si];
                const float zv = zp ? (float)poprt__load_f64(zp->data, zp->dtype, si) : 0.0f;
                if (zp)
                    for (int64_t r = 0; r < q.inner; r++, i++)
                        yb[i] = poprt__float_to_f8(xf[i] / sv + zv, yt, saturate);
                else
                    for (int64_t r = 0; r < q.inner; r++, i++)
                        yb[i] = poprt__float_to_f8(xf[i] / sv, yt, saturate);
            }
        return POPRT_OK;
    }
    int64_t lo, hi;
    poprt__int_range(yt, &lo, &hi);
    int64_t i = 0;
    for (int64_t o = 0; o < q.outer; o++)
        for (int64_t a = 0; a < q.len; a++)
            for (int64_t r = 0; r < q.inner; r++, i++) {
                int64_t si = q_index(&q, o, a, r);
                double v = to_prec((double)load_f32(x->data, x->dtype, i) /
                                       (double)load_f32(s->data, s->dtype, si),
                                   prec);
                if (is_int) {
                    int64_t z = zp ? poprt__load_i64(zp->data, zp->dtype, si) : 0;
                    double rv = isnan(v) ? 0.0 : nearbyint(v) + (double)z;
                    poprt__store_i64(y->data, yt, i, sat_round(rv, lo, hi));
                } else {
                    float fv = (float)v;
                    if (zp)
                        fv += (float)poprt__load_f64(zp->data, zp->dtype, si);
                    uint8_t *yb = y->data;
                    if (yt == POPRT_DTYPE_FLOAT4E2M1)
                        yb[i] = poprt__float_to_f4e2m1(fv);
                    else
                        yb[i] = poprt__float_to_f8(fv, yt, saturate);
                }
            }
    return POPRT_OK;
}

poprt_status poprt__ref_dequantize_linear(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *s = poprt__kin(k, 1), *zp = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = need(k, x && s && y ? x : NULL, "input or output");
    if (st)
        return st;
    poprt__qlayout q;
    if ((st = layout_of(k, x, s, zp, &q)))
        return st;
    int64_t i = 0;
    float *yf = y->dtype == POPRT_DTYPE_FLOAT ? y->data : NULL;
    if (yf && poprt__dtype_is_float8(x->dtype) && q.kind != POPRT__Q_BLOCK &&
        s->dtype == POPRT_DTYPE_FLOAT && x->numel >= 1024) {
        /* float8 to float32 through a table of the 256 codes; the same
         * float arithmetic as below */
        float tab[256];
        for (int c = 0; c < 256; c++)
            tab[c] = poprt__f8_to_float((uint8_t)c, x->dtype);
        const uint8_t *xb = x->data;
        const float *sf = s->data;
        for (int64_t o = 0; o < q.outer; o++)
            for (int64_t a = 0; a < q.len; a++) {
                int64_t si = q_index(&q, o, a, 0);
                const float sv = sf[si];
                const float zv = zp ? load_f32(zp->data, zp->dtype, si) : 0.0f;
                if (zp)
                    for (int64_t r = 0; r < q.inner; r++, i++)
                        yf[i] = (tab[xb[i]] - zv) * sv;
                else
                    for (int64_t r = 0; r < q.inner; r++, i++)
                        yf[i] = tab[xb[i]] * sv;
            }
        return POPRT_OK;
    }
    for (int64_t o = 0; o < q.outer; o++)
        for (int64_t a = 0; a < q.len; a++)
            for (int64_t r = 0; r < q.inner; r++, i++) {
                int64_t si = q_index(&q, o, a, r);
                /* float32 arithmetic as in ONNX, then rounded to y's type */
                float v = load_f32(x->data, x->dtype, i);
                if (zp)
                    v -= load_f32(zp->data, zp->dtype, si);
                v *= load_f32(s->data, s->dtype, si);
                if (yf)
                    yf[i] = v;
                else
                    poprt__store_f64(y->data, y->dtype, i, v);
            }
    return POPRT_OK;
}

poprt_status poprt__ref_dynamic_quantize_linear(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0), *ys = poprt__kout(k, 1), *yzp = poprt__kout(k, 2);
    poprt_status st = need(k, x && y ? x : NULL, "input or output");
    if (st)
        return st;
    const float *xf = x->data;
    float mn = 0.0f, mx = 0.0f; /* the range always includes 0 */
    for (int64_t i = 0; i < x->numel; i++) {
        if (xf[i] < mn)
            mn = xf[i];
        if (xf[i] > mx)
            mx = xf[i];
    }
    float scale = (mx == mn ? 1.0f : (mx - mn)) / 255.0f;
    float zpf = 0.0f - mn / scale;
    zpf = zpf < 0.0f ? 0.0f : (zpf > 255.0f ? 255.0f : zpf);
    uint8_t zp = (uint8_t)sat_round(zpf, 0, 255);
    uint8_t *yb = y->data;
    for (int64_t i = 0; i < x->numel; i++) {
        float v = xf[i] / scale;
        yb[i] = (uint8_t)sat_round(isnan(v) ? 0.0 : nearbyint(v) + zp, 0, 255);
    }
    if (ys)
        *(float *)ys->data = scale;
    if (yzp)
        *(uint8_t *)yzp->data = zp;
    return POPRT_OK;
}

/* ---- integer matrix products ---------------------------------------------------- */

/* Geometry of a batched matmul over concrete tensors. */
typedef struct mm_geom {
    int64_t M, N, K;
    int br;                          /* batch rank */
    int64_t bd[POPRT__MAX_RANK];     /* batch dims */
    int64_t sa[POPRT__MAX_RANK], sb[POPRT__MAX_RANK]; /* batch strides in matrices (0: broadcast) */
    int64_t nbatch;
} mm_geom;

static poprt_status mm_setup(const poprt__kctx *k, const poprt__tval *a, const poprt__tval *b,
                             const poprt__tval *y, mm_geom *g)
{
    int ro;
    int64_t od[POPRT__MAX_RANK + 2];
    poprt_status st = poprt__quant_matmul_shape(k->node, a->rank, a->dims, b->rank, b->dims, &ro, od);
    if (st)
        return st;
    if (ro != y->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL, "output rank mismatch");
    memset(g, 0, sizeof *g);
    g->K = a->dims[a->rank - 1];
    g->M = a->rank > 1 ? a->dims[a->rank - 2] : 1;
    g->N = b->rank > 1 ? b->dims[b->rank - 1] : 1;
    int ba = a->rank > 2 ? a->rank - 2 : 0, bb = b->rank > 2 ? b->rank - 2 : 0;
    g->br = ba > bb ? ba : bb;
    g->nbatch = 1;
    int64_t ma = 1, mb = 1;
    for (int i = g->br - 1; i >= 0; i--) {
        int ia = i - (g->br - ba), ib = i - (g->br - bb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        g->bd[i] = od[i];
        g->sa[i] = da == 1 ? 0 : ma;
        g->sb[i] = db == 1 ? 0 : mb;
        ma *= da;
        mb *= db;
        g->nbatch *= od[i];
    }
    return POPRT_OK;
}

static void mm_offsets(const mm_geom *g, int64_t b, int64_t *oa, int64_t *ob)
{
    int64_t ia = 0, ib = 0;
    for (int i = g->br - 1; i >= 0; i--) {
        int64_t c = b % g->bd[i];
        b /= g->bd[i];
        ia += c * g->sa[i];
        ib += c * g->sb[i];
    }
    *oa = ia;
    *ob = ib;
}

/* Value of a zero point / scale tensor for row i (of M) in batch matrix bi:
 * scalar, per row (M values) or per batch row (nbatch_a * M values). */
static int64_t per_idx(const poprt__tval *t, int64_t bi, int64_t i, int64_t n)
{
    if (!t || t->numel <= 1)
        return 0;
    if (t->numel == n)
        return i;
    return (bi * n + i) % t->numel;
}

/* acc[M x N] = sum_k (A[i,k] - azp_i) * (B[k,j] - bzp_j) for batch matrix pair
 * (oa, ob); exact in int64. Scratch: ai (K), bi (K x N). */
static void int_mm(const mm_geom *g, const poprt__tval *a, int64_t oa, const poprt__tval *azp,
                   const poprt__tval *b, int64_t ob, const poprt__tval *bzp, int64_t *acc,
                   int32_t *arow, int32_t *bmat)
{
    const int64_t M = g->M, N = g->N, K = g->K;
    for (int64_t kk = 0; kk < K; kk++)
        for (int64_t j = 0; j < N; j++) {
            int64_t z = bzp ? poprt__load_i64(bzp->data, bzp->dtype, per_idx(bzp, ob, j, N)) : 0;
            bmat[kk * N + j] = (int32_t)(poprt__load_i64(b->data, b->dtype, ob * K * N + kk * N + j) - z);
        }
    for (int64_t i = 0; i < M; i++) {
        int64_t z = azp ? poprt__load_i64(azp->data, azp->dtype, per_idx(azp, oa, i, M)) : 0;
        for (int64_t kk = 0; kk < K; kk++)
            arow[kk] = (int32_t)(poprt__load_i64(a->data, a->dtype, oa * M * K + i * K + kk) - z);
        int64_t *c = acc + i * N;
        for (int64_t j = 0; j < N; j++)
            c[j] = 0;
        for (int64_t kk = 0; kk < K; kk++) {
            const int64_t av = arow[kk];
            const int32_t *br = bmat + kk * N;
            for (int64_t j = 0; j < N; j++)
                c[j] += av * br[j];
        }
    }
}

static poprt_status mm_scratch(poprt__kctx *k, const mm_geom *g, int64_t **acc, int32_t **arow,
                               int32_t **bmat)
{
    *acc = poprt__kctx_scratch(k, (size_t)(g->M * g->N + 1) * sizeof **acc);
    *arow = poprt__kctx_scratch(k, (size_t)(g->K + 1) * sizeof **arow);
    *bmat = poprt__kctx_scratch(k, (size_t)(g->K * g->N + 1) * sizeof **bmat);
    if (!*acc || !*arow || !*bmat)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    return POPRT_OK;
}

/* MatMulInteger's int32 sums into y (its shape; data int32). */
static poprt_status mm_integer(poprt__kctx *k, const poprt__tval *a, const poprt__tval *b,
                               const poprt__tval *azp, const poprt__tval *bzp, poprt__tval *y)
{
    poprt_status st;
    mm_geom g;
    int64_t *acc;
    int32_t *arow, *bmat;
    if ((st = mm_setup(k, a, b, y, &g)) || (st = mm_scratch(k, &g, &acc, &arow, &bmat)))
        return st;
    int32_t *yo = y->data;
    for (int64_t bi = 0; bi < g.nbatch; bi++) {
        int64_t oa, ob;
        mm_offsets(&g, bi, &oa, &ob);
        int_mm(&g, a, oa, azp, b, ob, bzp, acc, arow, bmat);
        for (int64_t i = 0; i < g.M * g.N; i++)
            yo[bi * g.M * g.N + i] = (int32_t)(uint32_t)acc[i]; /* int32 wrap-around */
    }
    return POPRT_OK;
}

poprt_status poprt__ref_matmul_integer(poprt__kctx *k)
{
    const poprt__tval *a = poprt__kin(k, 0), *b = poprt__kin(k, 1);
    const poprt__tval *azp = poprt__kin(k, 2), *bzp = poprt__kin(k, 3);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = need(k, a && b && y ? a : NULL, "input or output");
    return st ? st : mm_integer(k, a, b, azp, bzp, y);
}

/* The float epilogue's operands of a fused integer product: scale s and
 * bias c (NULL: none) float with 1 or n values, y float. */
static poprt_status fused_float_args(poprt__kctx *k, const poprt__tval *s, const poprt__tval *c,
                                     const poprt__tval *y, int64_t n)
{
    if (y->dtype != POPRT_DTYPE_FLOAT || s->dtype != POPRT_DTYPE_FLOAT ||
        (c && c->dtype != POPRT_DTYPE_FLOAT) || (s->numel != 1 && s->numel != n) ||
        (c && c->numel != 1 && c->numel != n))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "scale and bias must be float with 1 or %lld values, and Y float",
                               (long long)n);
    return POPRT_OK;
}

poprt_status poprt__ref_poprt_fused_matmul_integer(poprt__kctx *k)
{
    const poprt__tval *a = poprt__kin(k, 0), *b = poprt__kin(k, 1);
    const poprt__tval *azp = poprt__kin(k, 2), *bzp = poprt__kin(k, 3);
    const poprt__tval *s = poprt__kin(k, 4), *c = poprt__kin(k, 5);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = need(k, a && b && s && y ? a : NULL, "input, scale or output");
    if (st)
        return st;
    const int64_t N = y->rank > 0 ? y->dims[y->rank - 1] : 1;
    if ((st = fused_float_args(k, s, c, y, N)))
        return st;
    poprt__tval t = *y;
    t.dtype = POPRT_DTYPE_INT32;
    t.data = poprt__kctx_scratch(k, (size_t)(y->numel ? y->numel : 1) * sizeof(int32_t));
    if (!t.data)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    if ((st = mm_integer(k, a, b, azp, bzp, &t)))
        return st;
    for (int64_t r = 0; N > 0 && r < y->numel / N; r++)
        poprt__q_float_cols((const int32_t *)t.data + r * N, N, 0, s->data, s->numel != 1,
                            c ? c->data : NULL, c && c->numel != 1, (float *)y->data + r * N);
    return POPRT_OK;
}

poprt_status poprt__ref_qlinear_matmul(poprt__kctx *k)
{
    const poprt__tval *a = poprt__kin(k, 0), *as = poprt__kin(k, 1), *azp = poprt__kin(k, 2);
    const poprt__tval *b = poprt__kin(k, 3), *bs = poprt__kin(k, 4), *bzp = poprt__kin(k, 5);
    const poprt__tval *ys = poprt__kin(k, 6), *yzp = poprt__kin(k, 7);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = need(k, a && as && b && bs && ys && y ? a : NULL, "input or output");
    if (st)
        return st;
    mm_geom g;
    int64_t *acc;
    int32_t *arow, *bmat;
    if ((st = mm_setup(k, a, b, y, &g)) || (st = mm_scratch(k, &g, &acc, &arow, &bmat)))
        return st;
    int64_t lo, hi;
    poprt__int_range(y->dtype, &lo, &hi);
    /* the multiplier a_scale * b_scale / y_scale is formed in the scales' type */
    const int32_t sdt = as->dtype;
    const double ysv = poprt__load_f64(ys->data, ys->dtype, 0);
    const double yz = yzp ? (double)poprt__load_i64(yzp->data, yzp->dtype, 0) : 0.0;
    for (int64_t bi = 0; bi < g.nbatch; bi++) {
        int64_t oa, ob;
        mm_offsets(&g, bi, &oa, &ob);
        int_mm(&g, a, oa, azp, b, ob, bzp, acc, arow, bmat);
        for (int64_t i = 0; i < g.M; i++) {
            double av = poprt__load_f64(as->data, as->dtype, per_idx(as, oa, i, g.M));
            for (int64_t j = 0; j < g.N; j++) {
                double bv = poprt__load_f64(bs->data, bs->dtype, per_idx(bs, ob, j, g.N));
                double m = to_prec(to_prec(av * bv, sdt) / ysv, sdt);
                int64_t q = sat_round((double)acc[i * g.N + j] * m + yz, lo, hi);
                poprt__store_i64(y->data, y->dtype, bi * g.M * g.N + i * g.N + j, q);
            }
        }
    }
    return POPRT_OK;
}

/* ---- integer convolutions ---------------------------------------------------------- */

/* acc[n, m, out...] = sum over c, kernel of (x - xzp) * (w[m] - wzp[m]), exact.
 * x: [N, C, in...], w: [M, C/group, k...]. */
static poprt_status int_conv(poprt__kctx *k, const poprt__tval *x, const poprt__tval *xzp,
                             const poprt__tval *w, const poprt__tval *wzp, const poprt__tval *y,
                             int64_t **acc_out)
{
    const poprt__node *n = k->node;
    if (x->rank < 3 || w->rank != x->rank)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "x rank %d and w rank %d do not fit",
                               x->rank, w->rank);
    const int nsp = x->rank - 2;
    poprt__nn_geom g;
    poprt_status st = poprt__nn_window_geom(n, nsp, x->dims + 2, w->dims + 2, 0, &g);
    if (st)
        return st;
    const int64_t group = poprt__attr_i(n, "group", 1);
    const int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0], Cg = w->dims[1];
    if (group < 1 || C != Cg * group || M % group)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "channels %lld, weight [%lld, %lld] and group %lld do not fit",
                               (long long)C, (long long)M, (long long)Cg, (long long)group);
    int64_t osz = 1, isz = 1, ksz = 1;
    for (int i = 0; i < nsp; i++) {
        osz *= g.out[i];
        isz *= g.in[i];
        ksz *= g.k[i];
    }
    if (y->numel != N * M * osz)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output size mismatch");
    int64_t *acc = poprt__kctx_scratch(k, (size_t)(N * M * osz + 1) * sizeof *acc);
    int32_t *xs = poprt__kctx_scratch(k, (size_t)(x->numel + 1) * sizeof *xs);
    int32_t *ws = poprt__kctx_scratch(k, (size_t)(w->numel + 1) * sizeof *ws);
    int64_t *koff = poprt__kctx_scratch(k, (size_t)(ksz * nsp + 1) * sizeof *koff);
    if (!acc || !xs || !ws || !koff)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    const int64_t xz = xzp ? poprt__load_i64(xzp->data, xzp->dtype, 0) : 0;
    for (int64_t i = 0; i < x->numel; i++)
        xs[i] = (int32_t)(poprt__load_i64(x->data, x->dtype, i) - xz);
    const int64_t wper = Cg * ksz;
    for (int64_t m = 0; m < M; m++) {
        int64_t wz = 0;
        if (wzp && wzp->numel > 0)
            wz = poprt__load_i64(wzp->data, wzp->dtype, wzp->numel == M ? m : 0);
        for (int64_t i = 0; i < wper; i++)
            ws[m * wper + i] = (int32_t)(poprt__load_i64(w->data, w->dtype, m * wper + i) - wz);
    }
    /* kernel positions as per-axis offsets (dilated) */
    for (int64_t kp = 0; kp < ksz; kp++) {
        int64_t r = kp;
        for (int d = nsp - 1; d >= 0; d--) {
            koff[kp * nsp + d] = (r % g.k[d]) * g.d[d];
            r /= g.k[d];
        }
    }
    const int64_t Mg = M / group;
    int64_t opos[POPRT__MAX_RANK], base[POPRT__MAX_RANK];
    for (int64_t b = 0; b < N; b++)
        for (int64_t m = 0; m < M; m++) {
            const int64_t gi = m / Mg;
            int64_t *yo = acc + (b * M + m) * osz;
            for (int64_t op = 0; op < osz; op++) {
                int64_t r = op;
                for (int d = nsp - 1; d >= 0; d--) {
                    opos[d] = r % g.out[d];
                    r /= g.out[d];
                    base[d] = opos[d] * g.s[d] - g.pb[d];
                }
                int64_t sum = 0;
                for (int64_t c = 0; c < Cg; c++) {
                    const int32_t *xc = xs + (b * C + gi * Cg + c) * isz;
                    const int32_t *wc = ws + (m * Cg + c) * ksz;
                    for (int64_t kp = 0; kp < ksz; kp++) {
                        int64_t off = 0;
                        int inside = 1;
                        for (int d = 0; d < nsp; d++) {
                            int64_t p = base[d] + koff[kp * nsp + d];
                            if (p < 0 || p >= g.in[d]) {
                                inside = 0;
                                break;
                            }
                            off = off * g.in[d] + p;
                        }
                        if (inside)
                            sum += (int64_t)xc[off] * wc[kp];
                    }
                }
                yo[op] = sum;
            }
        }
    *acc_out = acc;
    return POPRT_OK;
}

poprt_status poprt__ref_conv_integer(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1);
    const poprt__tval *xzp = poprt__kin(k, 2), *wzp = poprt__kin(k, 3);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = need(k, x && w && y ? x : NULL, "input or output");
    if (st)
        return st;
    int64_t *acc;
    if ((st = int_conv(k, x, xzp, w, wzp, y, &acc)))
        return st;
    int32_t *yo = y->data;
    for (int64_t i = 0; i < y->numel; i++)
        yo[i] = (int32_t)(uint32_t)acc[i];
    return POPRT_OK;
}

poprt_status poprt__ref_poprt_fused_conv_integer(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1);
    const poprt__tval *xzp = poprt__kin(k, 2), *wzp = poprt__kin(k, 3);
    const poprt__tval *s = poprt__kin(k, 4), *c = poprt__kin(k, 5);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = need(k, x && w && s && y ? x : NULL, "input, scale or output");
    if (st)
        return st;
    const int64_t N = y->rank > 1 ? y->dims[0] : 0, M = y->rank > 1 ? y->dims[1] : 0;
    int64_t *acc;
    if ((st = fused_float_args(k, s, c, y, M)) || (st = int_conv(k, x, xzp, w, wzp, y, &acc)))
        return st;
    const int64_t plane = N && M ? y->numel / (N * M) : 0;
    int32_t *v = poprt__kctx_scratch(k, (size_t)(plane ? plane : 1) * sizeof *v);
    if (!v)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    const float *sv = s->data, *cv = c ? c->data : NULL;
    for (int64_t q = 0; q < N * M; q++) {
        const int64_t m = q % M;
        for (int64_t i = 0; i < plane; i++)
            v[i] = (int32_t)(uint32_t)acc[q * plane + i]; /* int32 wrap-around */
        poprt__q_float_cols(v, plane, 0, sv + (s->numel == M ? m : 0), 0,
                            cv ? cv + (c->numel == M ? m : 0) : NULL, 0,
                            (float *)y->data + q * plane);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_qlinear_conv(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *xs = poprt__kin(k, 1), *xzp = poprt__kin(k, 2);
    const poprt__tval *w = poprt__kin(k, 3), *wsc = poprt__kin(k, 4), *wzp = poprt__kin(k, 5);
    const poprt__tval *ys = poprt__kin(k, 6), *yzp = poprt__kin(k, 7), *bias = poprt__kin(k, 8);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = need(k, x && xs && w && wsc && ys && y ? x : NULL, "input or output");
    if (st)
        return st;
    int64_t *acc;
    if ((st = int_conv(k, x, xzp, w, wzp, y, &acc)))
        return st;
    const int64_t N = y->dims[0], M = y->dims[1], osz = N && M ? y->numel / (N * M) : 0;
    int64_t lo, hi;
    poprt__int_range(y->dtype, &lo, &hi);
    const int32_t sdt = xs->dtype;
    const double xsv = poprt__load_f64(xs->data, xs->dtype, 0);
    const double ysv = poprt__load_f64(ys->data, ys->dtype, 0);
    const double yz = yzp ? (double)poprt__load_i64(yzp->data, yzp->dtype, 0) : 0.0;
    for (int64_t m = 0; m < M; m++) {
        double wv = poprt__load_f64(wsc->data, wsc->dtype, wsc->numel == M ? m : 0);
        double mult = to_prec(to_prec(xsv * wv, sdt) / ysv, sdt);
        int64_t bv = bias && bias->numel ? poprt__load_i64(bias->data, bias->dtype,
                                                            bias->numel == M ? m : 0)
                                         : 0;
        for (int64_t b = 0; b < N; b++) {
            const int64_t *src = acc + (b * M + m) * osz;
            for (int64_t i = 0; i < osz; i++) {
                int64_t q = sat_round((double)(src[i] + bv) * mult + yz, lo, hi);
                poprt__store_i64(y->data, y->dtype, (b * M + m) * osz + i, q);
            }
        }
    }
    return POPRT_OK;
}

/* ai.poprt QLinearAdd: the steps of DequantizeLinear (both operands), Add,
 * the optional Relu and QuantizeLinear, in float32 as those operators
 * compute them, element by element over the kernel's threads. */
typedef struct qadd_job {
    const unsigned char *a, *b;
    unsigned char *y;
    int a8, b8, y8, relu;
    float as, az, bs, bz, ys, yz;
} qadd_job;

/* One loop per operand type pair, branch-free inside so that it
 * vectorises. Rounding to nearest even by adding and subtracting 1.5 * 2^23
 * (exact below 2^22 in magnitude; beyond, the value saturates either way),
 * as QuantizeLinear rounds; NaN gives 0. Results in blocks of 256 floats,
 * then stored as bytes. */
#define QADD_LOOP(TA, TB)                                                                       \
    do {                                                                                        \
        const TA *a = (const TA *)j->a + c0;                                                    \
        const TB *b = (const TB *)j->b + c0;                                                    \
        for (int64_t i = 0; i < n; i++) {                                                       \
            float v = ((float)a[i] - az) * as + ((float)b[i] - bz) * bs;                        \
            v = v > floor ? v : floor;                                                          \
            const float d = v / ys;                                                             \
            float q = ((d + 12582912.0f) - 12582912.0f) + yz;                                   \
            q = q < qlo ? qlo : q;                                                              \
            q = q > qhi ? qhi : q;                                                              \
            out[i] = d == d ? q : 0.0f;                                                         \
        }                                                                                       \
    } while (0)

static void qadd_range(void *ctx, int64_t lo, int64_t hi)
{
    const qadd_job *j = ctx;
    const float qlo = j->y8 ? -128.0f : 0.0f, qhi = j->y8 ? 127.0f : 255.0f;
    const float as = j->as, az = j->az, bs = j->bs, bz = j->bz, ys = j->ys, yz = j->yz;
    /* Relu: max(v, 0); without, a floor no finite value is below */
    const float floor = j->relu ? 0.0f : -INFINITY;
    float out[256];
    for (int64_t c0 = lo; c0 < hi; c0 += 256) {
        const int64_t n = hi - c0 < 256 ? hi - c0 : 256;
        if (!j->a8 && !j->b8)
            QADD_LOOP(uint8_t, uint8_t);
        else if (j->a8 && j->b8)
            QADD_LOOP(int8_t, int8_t);
        else if (j->a8)
            QADD_LOOP(int8_t, uint8_t);
        else
            QADD_LOOP(uint8_t, int8_t);
        if (j->y8)
            for (int64_t i = 0; i < n; i++)
                ((int8_t *)j->y)[c0 + i] = (int8_t)(int)out[i];
        else
            for (int64_t i = 0; i < n; i++)
                j->y[c0 + i] = (uint8_t)(int)out[i];
    }
}
#undef QADD_LOOP

poprt_status poprt__ref_poprt_qlinear_add(poprt__kctx *k)
{
    const poprt__tval *in[8];
    for (int i = 0; i < 8; i++)
        in[i] = poprt__kin(k, i);
    poprt__tval *y = poprt__kout(k, 0);
    for (int i = 0; i < 8; i++)
        if (!in[i] || (i != 0 && i != 3 && in[i]->numel != 1))
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                                   "input %d missing or not one value", i);
    if (!y || in[3]->numel != in[0]->numel || y->numel != in[0]->numel ||
        y->dtype != in[7]->dtype)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "A, B and Y must have one shape, Y the type of C's zero point");
    qadd_job j = {in[0]->data, in[3]->data, y->data, in[0]->dtype == POPRT_DTYPE_INT8,
                  in[3]->dtype == POPRT_DTYPE_INT8, y->dtype == POPRT_DTYPE_INT8,
                  poprt__attr_i(k->node, "relu", 0) != 0,
                  load_f32(in[1]->data, in[1]->dtype, 0), load_f32(in[2]->data, in[2]->dtype, 0),
                  load_f32(in[4]->data, in[4]->dtype, 0), load_f32(in[5]->data, in[5]->dtype, 0),
                  load_f32(in[6]->data, in[6]->dtype, 0), load_f32(in[7]->data, in[7]->dtype, 0)};
    poprt__kctx_parallel_for(k, y->numel, 16384, qadd_range, &j);
    return POPRT_OK;
}
