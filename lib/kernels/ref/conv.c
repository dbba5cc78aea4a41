/* Reference kernels of the 'conv' group: Conv and ConvTranspose.
 *
 * Conv lowers to im2col (or a direct loop for depthwise) plus
 * poprt__ref_sgemm, ConvTranspose to a GEMM (poprt__gemm_engine) + col2im.
 * The registry runs Conv, FusedConv and ConvTranspose through the fast
 * paths of lib/kernels/x86 (conv*.c, gemm_ops.c), which share the
 * operator's checks, im2col and depthwise loop with these. float16/bfloat16
 * are computed in float32 through scratch copies; double runs its own
 * (simple) GEMM. Work is split over output rows/channels so each output
 * element is produced by one thread with a fixed summation order: results
 * do not depend on the thread count. */
#include <math.h>
#include <string.h>
#include "kernels/ref/conv.h"
#include "kernels/ref/util.h"

/* im2col rows [r0, r1) of one group: row r = (c, kd, kh, kw), column =
 * output position. Pure copies, so the same template serves every type. */
#define DEF_IM2COL(NAME, T)                                                                        \
    static void NAME(const T *x, const poprt__geom3 *g, int64_t r0, int64_t r1, T *col)            \
    {                                                                                              \
        const int64_t k12 = g->k[1] * g->k[2];                                                     \
        for (int64_t r = r0; r < r1; r++) {                                                        \
            const int64_t c = r / g->k_sz, rem = r % g->k_sz;                                      \
            const int64_t kd = rem / k12, kh = (rem / g->k[2]) % g->k[1], kw = rem % g->k[2];      \
            const T *xp = x + c * g->in_sz;                                                        \
            T *dst = col + r * g->out_sz;                                                          \
            int64_t d0, d1, h0, h1, w0, w1;                                                        \
            poprt__valid_range(g->out[0], g->s[0], g->pb[0], kd * g->d[0], g->in[0], &d0, &d1);    \
            poprt__valid_range(g->out[1], g->s[1], g->pb[1], kh * g->d[1], g->in[1], &h0, &h1);    \
            poprt__valid_range(g->out[2], g->s[2], g->pb[2], kw * g->d[2], g->in[2], &w0, &w1);    \
            const int64_t woff = kw * g->d[2] - g->pb[2];                                          \
            for (int64_t od = 0; od < g->out[0]; od++) {                                           \
                for (int64_t oh = 0; oh < g->out[1]; oh++) {                                       \
                    T *o = dst + (od * g->out[1] + oh) * g->out[2];                                \
                    if (od < d0 || od >= d1 || oh < h0 || oh >= h1) {                              \
                        memset(o, 0, sizeof(T) * (size_t)g->out[2]);                               \
                        continue;                                                                  \
                    }                                                                              \
                    const int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];                     \
                    const int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];                     \
                    const T *row = xp + (id * g->in[1] + ih) * g->in[2];                           \
                    for (int64_t ow = 0; ow < w0; ow++)                                            \
                        o[ow] = 0;                                                                 \
                    if (g->s[2] == 1 && w1 > w0) {                                                 \
                        memcpy(o + w0, row + w0 + woff, sizeof(T) * (size_t)(w1 - w0));            \
                    } else {                                                                       \
                        const int64_t s2 = g->s[2];                                                \
                        for (int64_t ow = w0; ow < w1; ow++)                                       \
                            o[ow] = row[ow * s2 + woff];                                           \
                    }                                                                              \
                    for (int64_t ow = w1; ow < g->out[2]; ow++)                                    \
                        o[ow] = 0;                                                                 \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEF_IM2COL(im2col_f32, float)
DEF_IM2COL(im2col_f64, double)

/* col2im for channels [m0, m1) of one group (ConvTranspose): y[m] gets the
 * sum over taps of the column rows, scattered to o = i*s - pb + t*d. */
#define DEF_COL2IM(NAME, T)                                                                        \
    static void NAME(const T *col, const poprt__geom3 *g, int64_t m0, int64_t m1, T *y)            \
    {                                                                                              \
        const int64_t k12 = g->k[1] * g->k[2];                                                     \
        for (int64_t m = m0; m < m1; m++) {                                                        \
            T *yp = y + m * g->out_sz;                                                             \
            for (int64_t t = 0; t < g->k_sz; t++) {                                                \
                const int64_t kd = t / k12, kh = (t / g->k[2]) % g->k[1], kw = t % g->k[2];        \
                const T *row = col + (m * g->k_sz + t) * g->in_sz;                                 \
                int64_t d0, d1, h0, h1, w0, w1;                                                    \
                poprt__valid_range(g->in[0], g->s[0], g->pb[0], kd * g->d[0], g->out[0], &d0,      \
                                   &d1);                                                           \
                poprt__valid_range(g->in[1], g->s[1], g->pb[1], kh * g->d[1], g->out[1], &h0,      \
                                   &h1);                                                           \
                poprt__valid_range(g->in[2], g->s[2], g->pb[2], kw * g->d[2], g->out[2], &w0,      \
                                   &w1);                                                           \
                for (int64_t id = d0; id < d1; id++) {                                             \
                    const int64_t od = id * g->s[0] - g->pb[0] + kd * g->d[0];                     \
                    for (int64_t ih = h0; ih < h1; ih++) {                                         \
                        const int64_t oh = ih * g->s[1] - g->pb[1] + kh * g->d[1];                 \
                        const T *r = row + (id * g->in[1] + ih) * g->in[2];                        \
                        T *o = yp + (od * g->out[1] + oh) * g->out[2];                             \
                        const int64_t s2 = g->s[2], off = kw * g->d[2] - g->pb[2];                 \
                        for (int64_t iw = w0; iw < w1; iw++)                                       \
                            o[iw * s2 + off] += r[iw];                                             \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEF_COL2IM(col2im_f32, float)
DEF_COL2IM(col2im_f64, double)

poprt_status poprt__conv_setup(poprt__kctx *k, int transposed, poprt__conv_shape *p)
{
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    const poprt__tval *y = poprt__kout(k, 0);
    if (!x || !w || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X, W or Y");
    if (x->rank < 3 || w->rank != x->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X rank %d and W rank %d do not fit", x->rank, w->rank);
    const int nsp = x->rank - 2;
    poprt__nn_geom gg;
    poprt_status st =
        transposed ? poprt__nn_convtranspose_geom(k->node, nsp, x->dims + 2, w->dims + 2, &gg)
                   : poprt__nn_window_geom(k->node, nsp, x->dims + 2, w->dims + 2, 0, &gg);
    if (st)
        return st;
    for (int i = 0; i < nsp; i++)
        if (gg.k[i] != w->dims[2 + i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "kernel_shape does not match W on axis %d", i);
    if (!poprt__geom3_lift(&gg, &p->g))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "more than 3 spatial axes are not supported");
    p->N = x->dims[0];
    p->C = x->dims[1];
    p->G = poprt__attr_i(k->node, "group", 1);
    if (p->G < 1 || p->C % p->G)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "%lld channels do not split into %lld groups", (long long)p->C,
                               (long long)p->G);
    p->Cg = p->C / p->G;
    if (!transposed) {
        p->M = w->dims[0];
        p->Mg = p->M / p->G;
        if (w->dims[1] != p->Cg || p->M % p->G)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "W has %lld input channels, X gives %lld per group",
                                   (long long)w->dims[1], (long long)p->Cg);
    } else {
        if (w->dims[0] != p->C)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "W has %lld input channels, X has %lld", (long long)w->dims[0],
                                   (long long)p->C);
        p->Mg = w->dims[1];
        p->M = p->Mg * p->G;
    }
    p->Kc = p->Cg * p->g.k_sz;
    if (b && b->numel != p->M)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "B has %lld values for %lld output channels", (long long)b->numel,
                               (long long)p->M);
    if (y->rank != x->rank || y->dims[0] != p->N || y->dims[1] != p->M)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output shape mismatch");
    for (int i = 0; i < nsp; i++)
        if (y->dims[2 + i] != gg.out[i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape mismatch on axis %d", 2 + i);
    return POPRT_OK;
}

typedef struct im2col_task {
    const float *x;
    const poprt__geom3 *g;
    float *col;
} im2col_task;

static void im2col_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const im2col_task *t = ctx;
    im2col_f32(t->x, t->g, r0, r1, t->col);
}

void poprt__im2col_f32_mt(poprt__kctx *k, const float *x, const poprt__geom3 *g, int64_t rows,
                          float *col)
{
    im2col_task t = {x, g, col};
    poprt__kctx_parallel_for(k, rows, poprt__ref_grain(g->out_sz, 1 << 14), im2col_task_fn, &t);
}

typedef struct dw_task {
    const poprt__conv_shape *p;
    const float *x, *w, *b;
    float *y;
    const poprt__conv_epi *epi;
} dw_task;

/* Direct convolution for one input channel per group (depthwise): output
 * planes [q0, q1) of the N*M planes; taps accumulate in a fixed order. */
static void dwconv_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const dw_task *t = ctx;
    const poprt__conv_shape *p = t->p;
    const poprt__geom3 *g = &p->g;
    const int64_t k12 = g->k[1] * g->k[2];
    for (int64_t q = q0; q < q1; q++) {
        const int64_t n = q / p->M, m = q % p->M, c = m / p->Mg;
        const float *xp = t->x + (n * p->C + c) * g->in_sz;
        const float *wp = t->w + m * g->k_sz;
        float *yp = t->y + q * g->out_sz;
        const float bias = t->b ? t->b[m] : 0.0f;
        for (int64_t i = 0; i < g->out_sz; i++)
            yp[i] = bias;
        for (int64_t tap = 0; tap < g->k_sz; tap++) {
            const int64_t kd = tap / k12, kh = (tap / g->k[2]) % g->k[1], kw = tap % g->k[2];
            const float wv = wp[tap];
            int64_t d0, d1, h0, h1, w0, w1;
            poprt__valid_range(g->out[0], g->s[0], g->pb[0], kd * g->d[0], g->in[0], &d0, &d1);
            poprt__valid_range(g->out[1], g->s[1], g->pb[1], kh * g->d[1], g->in[1], &h0, &h1);
            poprt__valid_range(g->out[2], g->s[2], g->pb[2], kw * g->d[2], g->in[2], &w0, &w1);
            const int64_t s2 = g->s[2];
            for (int64_t od = d0; od < d1; od++) {
                const int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
                for (int64_t oh = h0; oh < h1; oh++) {
                    const int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
                    float *restrict o = yp + (od * g->out[1] + oh) * g->out[2];
                    const float *restrict r = xp + (id * g->in[1] + ih) * g->in[2];
                    const int64_t off = kw * g->d[2] - g->pb[2];
                    if (s2 == 1) {
                        poprt__ref_axpy_f32(w1 - w0, wv, r + w0 + off, o + w0);
                    } else {
                        for (int64_t ow = w0; ow < w1; ow++)
                            o[ow] += wv * r[ow * s2 + off];
                    }
                }
            }
        }
        if (t->epi)
            t->epi->fn(t->epi->ctx, t->y, q * g->out_sz, g->out_sz);
    }
}

void poprt__conv_dw_f32(poprt__kctx *k, const poprt__conv_shape *s, const float *x, const float *w,
                        const float *b, float *y, const poprt__conv_epi *epi)
{
    dw_task t = {s, x, w, b, y, epi};
    poprt__kctx_parallel_for(k, s->N * s->M, poprt__ref_grain(s->g.out_sz * s->g.k_sz, 1 << 15),
                             dwconv_task_fn, &t);
}

static poprt_status conv_f64(poprt__kctx *k, const poprt__conv_shape *p, const double *x,
                             const double *w, const double *b, double *y)
{
    const poprt__geom3 *g = &p->g;
    double *col = poprt__kctx_scratch(k, (size_t)(p->Kc * g->out_sz + 1) * sizeof(double));
    if (!col)
        return poprt__ref_oom(k);
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t gi = 0; gi < p->G; gi++) {
            im2col_f64(x + (n * p->C + gi * p->Cg) * g->in_sz, g, 0, p->Kc, col);
            double *yg = y + (n * p->M + gi * p->Mg) * g->out_sz;
            for (int64_t m = 0; m < p->Mg; m++)
                for (int64_t i = 0; i < g->out_sz; i++)
                    yg[m * g->out_sz + i] = b ? b[gi * p->Mg + m] : 0.0;
            poprt__ref_dgemm(0, 0, p->Mg, g->out_sz, p->Kc, 1.0, w + gi * p->Mg * p->Kc, p->Kc,
                             col, g->out_sz, 1.0, yg, g->out_sz);
        }
    return POPRT_OK;
}

poprt_status poprt__conv_op(poprt__kctx *k, poprt__conv_f32_fn f32)
{
    poprt__conv_shape p;
    poprt_status st = poprt__conv_setup(k, 0, &p);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (y->numel == 0)
        return POPRT_OK;
    if (x->dtype == POPRT_DTYPE_DOUBLE)
        return conv_f64(k, &p, x->data, w->data, b ? b->data : NULL, y->data);
    /* W NULL: a float32 weight the session keeps in the node's prepared data
     * only; f32 reads it through poprt__kctx_in_data where it needs it */
    const float *xf = poprt__ref_in_f32(k, x),
                *wf = w->data || w->dtype != POPRT_DTYPE_FLOAT ? poprt__ref_in_f32(k, w) : NULL,
                *bf = b ? poprt__ref_in_f32(k, b) : NULL;
    float *yf = poprt__ref_out_f32(k, y);
    if (!xf || (w->data && !wf) || (b && !bf) || !yf)
        return poprt__ref_oom(k);
    if ((st = f32(k, &p, xf, wf, bf, yf)))
        return st;
    poprt__ref_store_f32(y, yf);
    return POPRT_OK;
}

/* The reference float32 convolution: depthwise convs tap by tap, the
 * others as im2col and poprt__ref_sgemm_mt, then the bias. */
static poprt_status ref_conv_f32(poprt__kctx *k, const poprt__conv_shape *p, const float *x,
                                 const float *w, const float *b, float *y)
{
    const poprt__geom3 *g = &p->g;
    if (!w && !(w = poprt__kctx_in_data(k, 1)))
        return poprt__ref_oom(k);
    if (p->Cg == 1 && p->G > 1) {
        poprt__conv_dw_f32(k, p, x, w, b, y, NULL);
        return POPRT_OK;
    }
    size_t sz;
    float *col;
    if (!poprt__mul_size((size_t)p->Kc, (size_t)g->out_sz, &sz) ||
        !poprt__mul_size(sz, sizeof(float), &sz) || !(col = poprt__kctx_scratch(k, sz ? sz : 1)))
        return poprt__ref_oom(k);
    for (int64_t img = 0; img < p->N; img++)
        for (int64_t gi = 0; gi < p->G; gi++) {
            float *yg = y + (img * p->M + gi * p->Mg) * g->out_sz;
            poprt__im2col_f32_mt(k, x + (img * p->C + gi * p->Cg) * g->in_sz, g, p->Kc, col);
            poprt__ref_sgemm_mt(k, 0, 0, p->Mg, g->out_sz, p->Kc, 1.0f, w + gi * p->Mg * p->Kc,
                                p->Kc, col, g->out_sz, 0.0f, yg, g->out_sz);
            for (int64_t m = 0; b && m < p->Mg; m++)
                for (int64_t q = 0; q < g->out_sz; q++)
                    yg[m * g->out_sz + q] += b[gi * p->Mg + m];
        }
    return POPRT_OK;
}

poprt_status poprt__ref_conv(poprt__kctx *k)
{
    return poprt__conv_op(k, ref_conv_f32);
}

/* ======================================================================
 * ConvTranspose: col = W_g^T X_g (GEMM), then col2im into Y
 * ==================================================================== */

typedef struct col2im_task {
    const float *col;
    const poprt__geom3 *g;
    float *y;
} col2im_task;

static void col2im_task_fn(void *ctx, int64_t m0, int64_t m1)
{
    const col2im_task *t = ctx;
    col2im_f32(t->col, t->g, m0, m1, t->y);
}

/* (conv.h; the 2x2 / 2 upsampling of detection heads) */
int poprt__tconv_patches(const poprt__geom3 *g)
{
    for (int i = 0; i < 3; i++)
        if (g->k[i] != g->s[i] || g->d[i] != 1 || g->pb[i] != 0 || g->out[i] != g->in[i] * g->s[i])
            return 0;
    return 1;
}

/* Writes y = bias + col for input rows [r0, r1) (a row: one (d, h) of the
 * input, in[2] positions) of col = W^T X over those rows only. */
typedef struct tconv_scatter_task {
    const float *col;  /* [Mg * k_sz][npos] */
    const poprt__geom3 *g;
    const float *bias; /* of the group's channels, or NULL */
    int64_t r0, r1, npos;
    float *y;          /* the group's first output channel */
} tconv_scatter_task;

static void tconv_scatter_fn(void *ctx, int64_t m0, int64_t m1)
{
    const tconv_scatter_task *t = ctx;
    const poprt__geom3 *g = t->g;
    const int64_t W = g->in[2], K2 = g->k[2]; /* = s[2]: the taps of a row interleave */
    for (int64_t m = m0; m < m1; m++) {
        const float bv = t->bias ? t->bias[m] : 0.0f;
        float *yp = t->y + m * g->out_sz;
        for (int64_t kd = 0; kd < g->k[0]; kd++)
            for (int64_t kh = 0; kh < g->k[1]; kh++) {
                /* col rows of the taps (kd, kh, 0 .. K2-1) */
                const float *row =
                    t->col + (m * g->k_sz + (kd * g->k[1] + kh) * K2) * t->npos;
                for (int64_t r = t->r0; r < t->r1; r++) {
                    const int64_t od = (r / g->in[1]) * g->s[0] + kd;
                    const int64_t oh = (r % g->in[1]) * g->s[1] + kh;
                    float *o = yp + (od * g->out[1] + oh) * g->out[2];
                    const float *src = row + (r - t->r0) * W;
                    if (K2 == 2) { /* the common case, as two streams the compiler interleaves */
                        const float *s1 = src + t->npos;
                        for (int64_t iw = 0; iw < W; iw++) {
                            o[2 * iw] = bv + src[iw];
                            o[2 * iw + 1] = bv + s1[iw];
                        }
                    } else {
                        for (int64_t iw = 0; iw < W; iw++)
                            for (int64_t kw = 0; kw < K2; kw++)
                                o[iw * K2 + kw] = bv + src[kw * t->npos + iw];
                    }
                }
            }
    }
}

void poprt__tconv_scatter(poprt__kctx *k, const float *col, const poprt__geom3 *g,
                          const float *bias, int64_t Mg, int64_t r0, int64_t r1, int64_t npos,
                          float *y)
{
    tconv_scatter_task t = {col, g, bias, r0, r1, npos, y};
    poprt__kctx_parallel_for(k, Mg, poprt__ref_grain(g->k_sz * npos, 1 << 14), tconv_scatter_fn,
                             &t);
}

poprt_status poprt__conv_transpose_op(poprt__kctx *k, const poprt__gemm_engine *e)
{
    poprt__conv_shape p;
    poprt_status st = poprt__conv_setup(k, 1, &p);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (y->numel == 0)
        return POPRT_OK;
    const poprt__geom3 *g = &p.g;
    const int64_t rows = p.Mg * g->k_sz; /* col is rows x in_sz */
    const int dbl = x->dtype == POPRT_DTYPE_DOUBLE;
    const size_t esz = dbl ? sizeof(double) : sizeof(float);
    const int patches = !dbl && poprt__tconv_patches(g);
    /* col: rows x in_sz, or (patches) rows x one slab of R input rows */
    const int64_t W = g->in[2], nrows = g->in[0] * g->in[1];
    int64_t R = (65536 / (rows > 0 ? rows : 1)) / (W > 0 ? W : 1);
    R = R < 1 ? 1 : R > nrows ? nrows : R;
    void *col = poprt__kctx_scratch(k, (size_t)(rows * (patches ? R * W : g->in_sz) + 1) * esz);
    if (!col)
        return poprt__ref_oom(k);
    if (dbl) {
        const double *xd = x->data, *wd = w->data, *bd = b ? b->data : NULL;
        double *yd = y->data;
        for (int64_t n = 0; n < p.N; n++)
            for (int64_t gi = 0; gi < p.G; gi++) {
                poprt__ref_dgemm(1, 0, rows, g->in_sz, p.Cg, 1.0, wd + gi * p.Cg * rows, rows,
                                 xd + (n * p.C + gi * p.Cg) * g->in_sz, g->in_sz, 0.0, col,
                                 g->in_sz);
                double *yg = yd + (n * p.M + gi * p.Mg) * g->out_sz;
                for (int64_t m = 0; m < p.Mg; m++)
                    for (int64_t i = 0; i < g->out_sz; i++)
                        yg[m * g->out_sz + i] = bd ? bd[gi * p.Mg + m] : 0.0;
                col2im_f64(col, g, 0, p.Mg, yg);
            }
        return POPRT_OK;
    }
    const float *xf = poprt__ref_in_f32(k, x), *wf = poprt__ref_in_f32(k, w),
                *bf = b ? poprt__ref_in_f32(k, b) : NULL;
    float *yf = poprt__ref_out_f32(k, y);
    if (!xf || !wf || (b && !bf) || !yf)
        return poprt__ref_oom(k);
    void *ws = NULL;
    if (patches) {
        /* in slabs of input rows whose col (rows x slab positions, ~256 KiB)
         * stays in cache between the GEMM and the scatter, which writes each
         * output element once: bias + its product sum (what the general
         * path's bias fill and col2im add compute, in one pass). The GEMM
         * workspaces, for a full slab and the shorter last one, are taken
         * once (scratch lives until the kernel returns). */
        const int64_t last = (nrows % R) * W;
        void *ws_last = NULL;
        if (!poprt__gemm_engine_ws(k, e, 1, 0, rows, R * W, p.Cg, &ws) ||
            (last && !poprt__gemm_engine_ws(k, e, 1, 0, rows, last, p.Cg, &ws_last)))
            return poprt__ref_oom(k);
        for (int64_t n = 0; n < p.N; n++)
            for (int64_t gi = 0; gi < p.G; gi++)
                for (int64_t r0 = 0; r0 < nrows; r0 += R) {
                    const int64_t r1 = r0 + R < nrows ? r0 + R : nrows, npos = (r1 - r0) * W;
                    void *wsr = npos == R * W ? ws : ws_last;
                    e->run(k, wsr, 1, 0, rows, npos, p.Cg, 1.0f, wf + gi * p.Cg * rows, rows,
                           xf + (n * p.C + gi * p.Cg) * g->in_sz + r0 * W, g->in_sz, 0.0f, col,
                           npos);
                    poprt__tconv_scatter(k, col, g, bf ? bf + gi * p.Mg : NULL, p.Mg, r0, r1,
                                         npos, yf + (n * p.M + gi * p.Mg) * g->out_sz);
                }

        poprt__ref_store_f32(y, yf);
        return POPRT_OK;
    }
    if (!poprt__gemm_engine_ws(k, e, 1, 0, rows, g->in_sz, p.Cg, &ws))
        return poprt__ref_oom(k);
    for (int64_t n = 0; n < p.N; n++)
        for (int64_t gi = 0; gi < p.G; gi++) {
            e->run(k, ws, 1, 0, rows, g->in_sz, p.Cg, 1.0f, wf + gi * p.Cg * rows, rows,
                   xf + (n * p.C + gi * p.Cg) * g->in_sz, g->in_sz, 0.0f, col, g->in_sz);
            float *yg = yf + (n * p.M + gi * p.Mg) * g->out_sz;
            for (int64_t m = 0; m < p.Mg; m++) {
                const float bv = bf ? bf[gi * p.Mg + m] : 0.0f;
                for (int64_t i = 0; i < g->out_sz; i++)
                    yg[m * g->out_sz + i] = bv;
            }
            col2im_task t = {col, g, yg};
            poprt__kctx_parallel_for(k, p.Mg, poprt__ref_grain(g->k_sz * g->in_sz, 1 << 14),
                                     col2im_task_fn, &t);
        }
    poprt__ref_store_f32(y, yf);
    return POPRT_OK;
}

poprt_status poprt__ref_conv_transpose(poprt__kctx *k)
{
    return poprt__conv_transpose_op(k, &poprt__ref_gemm_engine);
}

/* ======================================================================
 * DeformConv: per image and group, a column matrix of bilinearly sampled
 * inputs (im2col with offsets and mask), then one GEMM with the group's
 * weights, as Conv does
 * ==================================================================== */

#define DEFORM_BLOCK 64 /* output positions whose sampling points are computed together */

typedef struct deform_geom {
    int nsp, corners; /* spatial axes (1-3), 2^nsp corners per sampling point */
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3];
    int64_t in_sz, out_sz, k_sz;
    int64_t C, Cg, Cog, M, Mg, G, OG;
} deform_geom;

/* One image, one group: col rows (c - c_first) * k_sz + tap, one column per
 * output position. x: the image's channels, off: [OG, k_sz, nsp, out_sz],
 * mask: [OG, k_sz, out_sz] or NULL. */
typedef struct deform_task {
    const deform_geom *g;
    const void *x, *off, *mask;
    void *col;
    int64_t gi;
    int dbl;
} deform_task;

/* The corners of one sampling point inside the input, at pos (per axis:
 * the tap's place in the window plus the offset): flat input indexes and
 * weights (bilinear weight times the mask m); corners outside the input
 * read zeros and are left out. Returns how many were written. */
static int deform_corners(const deform_geom *g, const double *pos, double m, int64_t *idx,
                          double *w)
{
    int64_t lo[3];
    double fr[3];
    for (int a = 0; a < g->nsp; a++) {
        /* every corner outside (NaN and infinities too): the point reads 0 */
        if (!(pos[a] > -1.0 && pos[a] < (double)g->in[a]))
            return 0;
        const double f = floor(pos[a]);
        lo[a] = (int64_t)f;
        fr[a] = pos[a] - f;
    }
    int n = 0;
    for (int q = 0; q < g->corners; q++) {
        int64_t at = 0;
        double wt = m;
        int in = 1;
        for (int a = 0; a < g->nsp && in; a++) {
            const int hi = (q >> (g->nsp - 1 - a)) & 1;
            const int64_t i = lo[a] + hi;
            in = i >= 0 && i < g->in[a];
            wt *= hi ? fr[a] : 1.0 - fr[a];
            at = at * g->in[a] + i;
        }
        if (in) {
            idx[n] = at;
            w[n++] = wt;
        }
    }
    return n;
}

#define DEF_DEFORM_COL(NAME, T)                                                                    \
    static void NAME(const deform_task *t, int64_t b0, int64_t b1)                                 \
    {                                                                                              \
        const deform_geom *g = t->g;                                                               \
        const T *x = t->x, *off = t->off, *mask = t->mask;                                         \
        T *col = t->col;                                                                           \
        const int64_t P = g->out_sz, K = g->k_sz, cg0 = t->gi * g->Cg;                             \
        int64_t idx[DEFORM_BLOCK * 8];                                                             \
        T wt[DEFORM_BLOCK * 8];                                                                    \
        int nc[DEFORM_BLOCK];                                                                      \
        double w8[8], pos[3];                                                                      \
        for (int64_t blk = b0; blk < b1; blk++) {                                                  \
            const int64_t p0 = blk * DEFORM_BLOCK;                                                 \
            const int64_t np = P - p0 < DEFORM_BLOCK ? P - p0 : DEFORM_BLOCK;                      \
            for (int64_t o = 0; o < g->OG; o++) {                                                  \
                /* this group's channels that take offset group o */                              \
                const int64_t c0 = cg0 > o * g->Cog ? cg0 : o * g->Cog;                            \
                const int64_t c1 = cg0 + g->Cg < (o + 1) * g->Cog ? cg0 + g->Cg                    \
                                                                  : (o + 1) * g->Cog;              \
                for (int64_t tap = 0; c0 < c1 && tap < K; tap++) {                                 \
                    const T *ob = off + (o * K + tap) * g->nsp * P;                                \
                    int64_t kd[3];                                                                 \
                    for (int64_t a = g->nsp - 1, r = tap; a >= 0; a--) {                           \
                        kd[a] = r % g->k[a];                                                       \
                        r /= g->k[a];                                                              \
                    }                                                                              \
                    for (int64_t i = 0; i < np; i++) {                                             \
                        for (int64_t a = g->nsp - 1, r = p0 + i; a >= 0; a--) {                    \
                            const int64_t od = r % g->out[a];                                      \
                            r /= g->out[a];                                                        \
                            pos[a] = (double)(od * g->s[a] - g->pb[a] + kd[a] * g->d[a]) +         \
                                     (double)ob[a * P + p0 + i];                                   \
                        }                                                                          \
                        const double m = mask ? (double)mask[(o * K + tap) * P + p0 + i] : 1.0;    \
                        nc[i] = deform_corners(g, pos, m, idx + i * 8, w8);                        \
                        for (int q = 0; q < nc[i]; q++)                                            \
                            wt[i * 8 + q] = (T)w8[q];                                              \
                    }                                                                              \
                    for (int64_t ch = c0; ch < c1; ch++) {                                         \
                        const T *xp = x + ch * g->in_sz;                                           \
                        T *dst = col + ((ch - cg0) * K + tap) * P + p0;                            \
                        for (int64_t i = 0; i < np; i++) {                                         \
                            T v = 0;                                                               \
                            for (int q = 0; q < nc[i]; q++)                                        \
                                v += wt[i * 8 + q] * xp[idx[i * 8 + q]];                           \
                            dst[i] = v;                                                            \
                        }                                                                          \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
DEF_DEFORM_COL(deform_col_f32, float)
DEF_DEFORM_COL(deform_col_f64, double)

static void deform_task_fn(void *ctx, int64_t b0, int64_t b1)
{
    const deform_task *t = ctx;
    if (t->dbl)
        deform_col_f64(t, b0, b1);
    else
        deform_col_f32(t, b0, b1);
}

/* Checks the node's inputs against each other and fills g. */
static poprt_status deform_setup(poprt__kctx *k, deform_geom *g)
{
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *off = poprt__kin(k, 2);
    const poprt__tval *b = poprt__kin(k, 3), *mask = poprt__kin(k, 4);
    const poprt__tval *y = poprt__kout(k, 0);
    if (!x || !w || !off || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X, W, offset or Y");
    if (x->rank < 3 || x->rank > 5 || w->rank != x->rank || off->rank != x->rank ||
        (mask && mask->rank != x->rank) || y->rank != x->rank)
        return POPRT__NODE_ERR(k->node, x->rank > 5 ? POPRT_STATUS_UNSUPPORTED
                                                    : POPRT_STATUS_SHAPE_MISMATCH,
                               "X, W, offset, mask and Y must have one rank from 3 to 5");
    memset(g, 0, sizeof *g);
    g->nsp = x->rank - 2;
    g->corners = 1 << g->nsp;
    poprt__nn_geom gg;
    poprt_status st = poprt__nn_window_geom(k->node, g->nsp, x->dims + 2, w->dims + 2, 0, &gg);
    if (st)
        return st;
    g->in_sz = g->out_sz = g->k_sz = 1;
    for (int a = 0; a < g->nsp; a++) {
        if (gg.k[a] != w->dims[2 + a] || y->dims[2 + a] != gg.out[a] ||
            off->dims[2 + a] != gg.out[a] || (mask && mask->dims[2 + a] != gg.out[a]))
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "W, offset, mask or Y do not fit the window on axis %d", a);
        g->in[a] = gg.in[a];
        g->out[a] = gg.out[a];
        g->k[a] = gg.k[a];
        g->s[a] = gg.s[a];
        g->d[a] = gg.d[a];
        g->pb[a] = gg.pb[a];
        g->in_sz *= g->in[a];
        g->out_sz *= g->out[a];
        g->k_sz *= g->k[a];
    }
    g->C = x->dims[1];
    g->M = w->dims[0];
    g->G = poprt__attr_i(k->node, "group", 1);
    g->OG = poprt__attr_i(k->node, "offset_group", 1);
    if (g->G < 1 || g->OG < 1 || g->C % g->G || g->C % g->OG || g->M % g->G ||
        w->dims[1] != g->C / g->G)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X's %lld channels and W's [%lld, %lld] do not split into group "
                               "%lld and offset_group %lld",
                               (long long)g->C, (long long)g->M, (long long)w->dims[1],
                               (long long)g->G, (long long)g->OG);
    g->Cg = g->C / g->G;
    g->Cog = g->C / g->OG;
    g->Mg = g->M / g->G;
    const int64_t N = x->dims[0];
    if (off->dims[0] != N || off->dims[1] != g->OG * g->k_sz * g->nsp ||
        (mask && (mask->dims[0] != N || mask->dims[1] != g->OG * g->k_sz)) ||
        (b && b->numel != g->M) || y->dims[0] != N || y->dims[1] != g->M)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "offset must be [%lld, %lld, ...], mask [%lld, %lld, ...], B [%lld] "
                               "and Y [%lld, %lld, ...]",
                               (long long)N, (long long)(g->OG * g->k_sz * g->nsp), (long long)N,
                               (long long)(g->OG * g->k_sz), (long long)g->M, (long long)N,
                               (long long)g->M);
    return POPRT_OK;
}

poprt_status poprt__deform_conv_op(poprt__kctx *k, const poprt__gemm_engine *e)
{
    deform_geom g;
    poprt_status st = deform_setup(k, &g);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *off = poprt__kin(k, 2);
    const poprt__tval *b = poprt__kin(k, 3), *mask = poprt__kin(k, 4);
    poprt__tval *y = poprt__kout(k, 0);
    if (y->numel == 0)
        return POPRT_OK;
    const int dbl = x->dtype == POPRT_DTYPE_DOUBLE;
    const int64_t N = x->dims[0], P = g.out_sz, Kc = g.Cg * g.k_sz;
    const size_t esz = dbl ? sizeof(double) : sizeof(float);
    size_t sz;
    void *col, *ws = NULL;
    if (!poprt__mul_size((size_t)Kc, (size_t)P, &sz) || !poprt__mul_size(sz, esz, &sz) ||
        !(col = poprt__kctx_scratch(k, sz ? sz : 1)))
        return poprt__ref_oom(k);
    const void *xd = x->data, *wd = w->data, *od = off->data, *md = mask ? mask->data : NULL;
    const void *bd = b ? b->data : NULL;
    void *yd = y->data;
    if (!dbl) {
        xd = poprt__ref_in_f32(k, x);
        wd = poprt__ref_in_f32(k, w);
        od = poprt__ref_in_f32(k, off);
        md = mask ? poprt__ref_in_f32(k, mask) : NULL;
        bd = b ? poprt__ref_in_f32(k, b) : NULL;
        yd = poprt__ref_out_f32(k, y);
        if (!xd || !wd || !od || (mask && !md) || (b && !bd) || !yd ||
            !poprt__gemm_engine_ws(k, e, 0, 0, g.Mg, P, Kc, &ws))
            return poprt__ref_oom(k);
    }
    const int64_t blocks = (P + DEFORM_BLOCK - 1) / DEFORM_BLOCK;
    for (int64_t n = 0; n < N; n++)
        for (int64_t gi = 0; gi < g.G; gi++) {
            deform_task t = {&g,
                             (const char *)xd + (size_t)(n * g.C * g.in_sz) * esz,
                             (const char *)od + (size_t)(n * g.OG * g.k_sz * g.nsp * P) * esz,
                             md ? (const char *)md + (size_t)(n * g.OG * g.k_sz * P) * esz : NULL,
                             col,
                             gi,
                             dbl};
            poprt__kctx_parallel_for(k, blocks,
                                     poprt__ref_grain(DEFORM_BLOCK * g.k_sz * (g.Cg + 8), 1 << 14),
                                     deform_task_fn, &t);
            const int64_t y0 = (n * g.M + gi * g.Mg) * P, w0 = gi * g.Mg * Kc;
            if (dbl) {
                double *yg = (double *)yd + y0;
                poprt__ref_dgemm(0, 0, g.Mg, P, Kc, 1.0, (const double *)wd + w0, Kc, col, P, 0.0,
                                 yg, P);
                for (int64_t m = 0; bd && m < g.Mg; m++)
                    for (int64_t q = 0; q < P; q++)
                        yg[m * P + q] += ((const double *)bd)[gi * g.Mg + m];
            } else {
                float *yg = (float *)yd + y0;
                e->run(k, ws, 0, 0, g.Mg, P, Kc, 1.0f, (const float *)wd + w0, Kc, col, P, 0.0f,
                       yg, P);
                for (int64_t m = 0; bd && m < g.Mg; m++)
                    for (int64_t q = 0; q < P; q++)
                        yg[m * P + q] += ((const float *)bd)[gi * g.Mg + m];
            }
        }
    if (!dbl)
        poprt__ref_store_f32(y, yd);
    return POPRT_OK;
}

poprt_status poprt__ref_deform_conv(poprt__kctx *k)
{
    return poprt__deform_conv_op(k, &poprt__ref_gemm_engine);
}

/* ======================================================================
 * CausalConvWithState: per (batch, channel) row, the input after the
 * carried state (past_state, or k-1 zeros) convolved with the channel's k
 * taps (valid positions only), optional SiLU; present_state is the last
 * k-1 values of that padded row. float32 arithmetic (float16 and bfloat16
 * through scratch copies), taps summed in order: no thread dependence.
 * ==================================================================== */

typedef struct causal_task {
    const float *x, *w, *b, *past;
    float *y, *state, *pad; /* pad: per row of the task, k-1+L floats */
    int64_t C, L, K;
    int silu;
    const poprt__vmath_variant *vm;
} causal_task;

static void causal_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const causal_task *t = ctx;
    const int64_t S = t->K - 1, L = t->L;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t c = r % t->C;
        float *pad = t->pad + r * (S + L);
        if (t->past && S)
            memcpy(pad, t->past + r * S, (size_t)S * sizeof(float));
        else
            memset(pad, 0, (size_t)S * sizeof(float));
        if (L)
            memcpy(pad + S, t->x + r * L, (size_t)L * sizeof(float));
        const float *w = t->w + c * t->K;
        float *y = t->y + r * L;
        const float bias = t->b ? t->b[c] : 0.0f;
        for (int64_t i = 0; i < L; i++)
            y[i] = bias;
        for (int64_t j = 0; j < t->K; j++)
            poprt__ref_axpy_f32(L, w[j], pad + j, y);
        if (t->silu) {
            const poprt__vmath_param one = {1.0f, 0.0f, 0.0f};
            t->vm->unary[POPRT__VMATH_swish](y, y, L, &one);
        }
        if (t->state && S)
            memcpy(t->state + r * S, pad + L, (size_t)S * sizeof(float));
    }
}

poprt_status poprt__ref_causal_conv_with_state(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    const poprt__tval *past = poprt__kin(k, 3);
    poprt__tval *y = poprt__kout(k, 0), *st = poprt__kout(k, 1);
    if (!x || !w || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing input, weight or "
                               "output");
    const char *act = poprt__attr_s(k->node, "activation", "none");
    const int silu = !strcmp(act, "silu") || !strcmp(act, "swish");
    if (!silu && strcmp(act, "none"))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "activation '%s' is not none, silu or swish", act);
    if (x->rank != 3 || w->rank != 3 || w->dims[0] != x->dims[1] || w->dims[1] != 1 ||
        w->dims[2] < 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "input must be [batch, channels, length] and weight "
                               "[channels, 1, k >= 1]");
    const int64_t B = x->dims[0], C = x->dims[1], L = x->dims[2], K = w->dims[2];
    const int64_t sd[3] = {B, C, K - 1};
    if ((b && (b->rank != 1 || b->dims[0] != C)) ||
        (past && (past->rank != 3 || memcmp(past->dims, sd, sizeof sd))) ||
        (st && (st->rank != 3 || memcmp(st->dims, sd, sizeof sd))) || y->rank != 3 ||
        memcmp(y->dims, x->dims, 3 * sizeof(int64_t)))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "bias must be [%lld] and past_state / present_state "
                               "[%lld, %lld, %lld]",
                               (long long)C, (long long)B, (long long)C, (long long)(K - 1));
    if (B * C == 0)
        return POPRT_OK;
    causal_task t = {poprt__ref_in_f32(k, x),
                     poprt__ref_in_f32(k, w),
                     b ? poprt__ref_in_f32(k, b) : NULL,
                     past ? poprt__ref_in_f32(k, past) : NULL,
                     poprt__ref_out_f32(k, y),
                     st ? poprt__ref_out_f32(k, st) : NULL,
                     poprt__kctx_scratch(k, (size_t)(B * C * (K - 1 + L)) * sizeof(float) + 1),
                     C,
                     L,
                     K,
                     silu,
                     poprt__kctx_vmath(k)};
    if ((x->numel && !t.x) || !t.w || (b && !t.b) || (past && past->numel && !t.past) ||
        (y->numel && !t.y) || (st && st->numel && !t.state) || !t.pad)
        return poprt__ref_oom(k);
    poprt__kctx_parallel_for(k, B * C, poprt__ref_grain(L * K + 1, 1 << 14), causal_task_fn, &t);
    poprt__ref_store_f32(y, t.y);
    if (st)
        poprt__ref_store_f32(st, t.state);
    return POPRT_OK;
}
