/* Reference kernels of the 'nn' family: convolutions and pools.
 *
 * float32 is the hot path: Conv lowers to im2col (or a direct loop for
 * depthwise) plus a GEMM, ConvTranspose to a GEMM + col2im; those GEMMs
 * run on the fast, CPU-dispatched poprt__sgemm (lib/kernels/x86).
 * float16/bfloat16 are computed in float32 through scratch copies; double
 * runs its own (simple) GEMM. Work is split over output rows/channels so
 * each output element is produced by one thread with a fixed summation
 * order: results do not depend on the thread count. */
#include <math.h>
#include <string.h>
#include <float.h>
#include "kernels/ref/gemm.h"
#include "kernels/ref/nn.h"
#include "kernels/ref/util.h"
#include "kernels/ref/window.h"
#include "kernels/ref/poprt_compiled.h"
#include "kernels/x86/gemm_ops.h"
#include "kernels/x86/sgemm.h"
#include "kernels/x86/conv_dw.h"
#include "kernels/x86/conv_blocked.h"
#include "kernels/x86/pool.h"
#include "kernels/x86/vmath.h"

/* ======================================================================
 * Conv
 * ==================================================================== */

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

/* FusedConv epilogue: Y = act(conv + B + Z) (see docs/ops.md). */
enum {
    CONV_ACT_NONE = 0,
    CONV_ACT_RELU,
    CONV_ACT_CLIP,    /* a = min, b = max */
    CONV_ACT_LEAKY,   /* a = alpha */
    CONV_ACT_SIGMOID,
    CONV_ACT_HSIGMOID, /* a = alpha, b = beta */
    CONV_ACT_HSWISH
};

typedef struct conv_plan {
    poprt__geom3 g;
    int64_t N, C, M, G, Cg, Mg, Kc;
    int act;        /* CONV_ACT_*; Conv: none */
    float act_a, act_b;
    const float *z; /* residual added before act (Y's shape), or NULL */
    int xblk, yblk; /* X, and Y with Z, in NCHW16c (FusedConv x_layout / y_layout) */
    poprt__vmath_binary_fn add_fn;
    poprt__vmath_unary_fn act_fn; /* NULL: no activation */
    poprt__vmath_param act_p;
    int fp8;        /* FusedConv y_fp8: 0, 1 float8e4m3fn, 2 float8e5m2 */
    float fp8_scale;
    int fp8_zp;
    int n_post;     /* FusedConv post_*: scalar steps after the activation */
    poprt__ew_scalar_step post[POPRT__EW_MAX_STEPS];
    const poprt__vmath_variant *vm;
} conv_plan;

/* Whether the AVX-512 kernels (kernels/x86/conv_blocked.h, pool.h) may run:
 * the CPU has AVX-512 and POPRT_ISA does not cap it. */
static int avx512_usable(void)
{
#if defined(__x86_64__)
    return poprt__cpu_features()->isa >= POPRT__ISA_AVX512;
#else
    return 0;
#endif
}

static int conv_has_epilogue(const conv_plan *p)
{
    return p->act != CONV_ACT_NONE || p->z || p->fp8 || p->n_post;
}

/* The epilogue is a Relu alone: the AVX-512 paths apply it (max(0, v), as
 * the Relu kernel computes it) while storing their results. */
static int conv_lone_relu(const conv_plan *p)
{
    return p->act == CONV_ACT_RELU && !p->z && !p->fp8 && !p->n_post;
}

/* y[off + i] = act(y[off + i] + z[off + i]) for i < n, then the post steps,
 * then rounded to float8 and back (y_fp8): run on each output block right
 * after it is written, while it is in cache. The vectorised functions of
 * the Add and activation kernels and FusedElementwise's steps, so results
 * match the unfused graph's. */
static void conv_epilogue(const conv_plan *p, float *y, int64_t off, int64_t n)
{
    if (p->z)
        p->add_fn(y + off, 1, p->z + off, 1, y + off, n);
    if (p->act_fn)
        p->act_fn(y + off, y + off, n, &p->act_p);
    if (p->n_post)
        poprt__ew_scalar_run(p->vm, p->post, p->n_post, y + off, n);
    if (p->fp8)
        poprt__fp8_round(y + off, y + off, n, p->fp8_scale, p->fp8 == 2, p->fp8_zp);
}

/* d[i] = s[i] + v (d may be s): the bias pass of the conv paths, compiled
 * per vector width like maxpool2d_plane (exact, so every clone agrees). */
POPRT__CLONES
static void row_plus(float *d, const float *s, float v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = s[i] + v;
}

typedef struct conv_epi_task {
    const conv_plan *p;
    float *y;
    int64_t off;    /* of the block's first row */
    const float *b; /* the rows' bias, or NULL */
} conv_epi_task;

/* The same on block [m0, m1) x [n0, n1) of the output rows, as the GEMM's
 * epilogue (poprt__sgemm_epi). */
static void conv_epi_block(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    const conv_epi_task *t = ctx;
    const int64_t n = t->p->g.out_sz;
    for (int64_t m = m0; m < m1; m++) {
        float *row = t->y + t->off + m * n + n0;
        if (t->b)
            row_plus(row, row, t->b[m], n1 - n0);
        if (conv_has_epilogue(t->p))
            conv_epilogue(t->p, t->y, row - t->y, n1 - n0);
    }
}

static void conv_epi_task_fn(void *ctx, int64_t m0, int64_t m1)
{
    conv_epi_block(ctx, m0, m1, 0, ((const conv_epi_task *)ctx)->p->g.out_sz);
}

/* Checks X/W/B and computes the geometry. transposed: ConvTranspose
 * (W is [C, M/group, k...]). */
static poprt_status conv_setup(poprt__kctx *k, int transposed, conv_plan *p)
{
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    const poprt__tval *y = poprt__kout(k, 0);
    p->act = CONV_ACT_NONE;
    p->act_a = p->act_b = 0.0f;
    p->z = NULL;
    p->xblk = p->yblk = 0;
    p->add_fn = NULL;
    p->act_fn = NULL;
    p->fp8 = p->fp8_zp = 0;
    p->fp8_scale = 1.0f;
    p->n_post = 0;
    p->vm = NULL;
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

typedef struct dw_task {
    const conv_plan *p;
    const float *x, *w, *b;
    float *y;
} dw_task;

/* Direct convolution for one input channel per group (depthwise): output
 * planes [q0, q1) of the N*M planes; taps accumulate in a fixed order. */
static void dwconv_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const dw_task *t = ctx;
    const conv_plan *p = t->p;
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
        if (conv_has_epilogue(p))
            conv_epilogue(p, t->y, q * g->out_sz, g->out_sz);
    }
}

#define CONV_PACK_MAGIC 0x31434b5043525050ull /* "PPRCPKC1" */
#define CONV_PACK_HEADER 64u

/* ---- tiled implicit GEMM ----------------------------------------------------
 * The output positions of each (image, group) are cut into column chunks.
 * A work item im2cols one chunk (Kc x cw, sized to stay in L2), multiplies
 * it by the pre-packed weights on one thread and adds the bias while the
 * output block is still in cache. Items go round-robin to a fixed number of lanes, each with its
 * own scratch, and the pool balances lanes over threads. The chunking
 * depends on the shape only, so results do not depend on the thread count. */

#define CONV_TILE_BYTES (768 * 1024) /* im2col block of one chunk */
#define CONV_TILE_MAX_COLS 512       /* B stays unpacked up to the GEMM's NC */
#define CONV_LANES 8
#define CONV_MIN_ITEMS 4 /* fewer: one multi-threaded GEMM splits better */

typedef struct conv_tile_job {
    const conv_plan *p;
    const float *x, *b;
    const unsigned char *apack;
    uint64_t per_group;
    float *y;
    int64_t cw, nchunks, items, lanes;
    unsigned char *scratch;
    size_t lane_bytes, col_bytes;
} conv_tile_job;

/* im2col of output columns [c0, c1) of one group: rows (c, kd, kh, kw) of
 * c1 - c0 values each, walking the chunk one output row segment at a time. */
static void im2col_cols_f32(const float *x, const poprt__geom3 *g, int64_t rows, int64_t c0,
                            int64_t c1, float *col)
{
    const int64_t k12 = g->k[1] * g->k[2], ow_n = g->out[2], cw = c1 - c0, s2 = g->s[2];
    for (int64_t r = 0; r < rows; r++) {
        const int64_t c = r / g->k_sz, rem = r % g->k_sz;
        const int64_t kd = rem / k12, kh = (rem / g->k[2]) % g->k[1], kw = rem % g->k[2];
        const float *xp = x + c * g->in_sz;
        float *dst = col + r * cw;
        int64_t d0, d1, h0, h1, w0, w1;
        poprt__valid_range(g->out[0], g->s[0], g->pb[0], kd * g->d[0], g->in[0], &d0, &d1);
        poprt__valid_range(g->out[1], g->s[1], g->pb[1], kh * g->d[1], g->in[1], &h0, &h1);
        poprt__valid_range(g->out[2], g->s[2], g->pb[2], kw * g->d[2], g->in[2], &w0, &w1);
        const int64_t woff = kw * g->d[2] - g->pb[2];
        int64_t pos = c0, ow = c0 % ow_n, orow = c0 / ow_n;
        while (pos < c1) {
            const int64_t n = ow_n - ow < c1 - pos ? ow_n - ow : c1 - pos;
            float *o = dst + (pos - c0) - ow; /* o[ow'] for ow' in [ow, ow + n) */
            const int64_t oh = orow % g->out[1], od = orow / g->out[1];
            if (od < d0 || od >= d1 || oh < h0 || oh >= h1) {
                memset(o + ow, 0, sizeof(float) * (size_t)n);
            } else {
                const int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
                const int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
                const float *src = xp + (id * g->in[1] + ih) * g->in[2] + woff;
                const int64_t end = ow + n;
                const int64_t a = w0 < ow ? ow : w0 > end ? end : w0;
                const int64_t e = w1 < a ? a : w1 > end ? end : w1;
                for (int64_t j = ow; j < a; j++)
                    o[j] = 0;
                if (s2 == 1) {
                    if (e > a)
                        memcpy(o + a, src + a, sizeof(float) * (size_t)(e - a));
                } else {
                    for (int64_t j = a; j < e; j++)
                        o[j] = src[j * s2];
                }
                for (int64_t j = e; j < end; j++)
                    o[j] = 0;
            }
            pos += n;
            ow = 0;
            orow++;
        }
    }
}

static void conv_tile_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const conv_tile_job *t = ctx;
    const conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    for (int64_t l = l0; l < l1; l++) {
        unsigned char *mem = t->scratch + (size_t)l * t->lane_bytes;
        float *col = (float *)mem;
        void *ws = mem + t->col_bytes;
        for (int64_t it = l; it < t->items; it += t->lanes) {
            const int64_t ch = it % t->nchunks, ng = it / t->nchunks;
            const int64_t n = ng / p->G, gi = ng % p->G;
            const int64_t c0 = ch * t->cw;
            const int64_t cols = g->out_sz - c0 < t->cw ? g->out_sz - c0 : t->cw;
            const float *xg = t->x + (n * p->C + gi * p->Cg) * g->in_sz;
            float *yg = t->y + (n * p->M + gi * p->Mg) * g->out_sz + c0;
            im2col_cols_f32(xg, g, p->Kc, c0, c0 + cols, col);
            /* variant and shape were checked by conv_tiled: cannot fail */
            (void)poprt__sgemm_packed(NULL, ws, 0, 0, p->Mg, cols, p->Kc, 1.0f, NULL, 0,
                                      t->apack + (uint64_t)gi * t->per_group, col, cols, NULL,
                                      0.0f, yg, g->out_sz);
            if (t->b) {
                const float *bg = t->b + gi * p->Mg;
                for (int64_t m = 0; m < p->Mg; m++) {
                    float *row = yg + m * g->out_sz;
                    row_plus(row, row, bg[m], cols);
                }
            }
            if (conv_has_epilogue(p))
                for (int64_t m = 0; m < p->Mg; m++)
                    conv_epilogue(p, t->y, yg + m * g->out_sz - t->y, cols);
        }
    }
}

/* Runs the conv tiled when the weights are pre-packed for this CPU and the
 * shape gives enough work items; *done 0: the caller takes the plain path. */
static poprt_status conv_tiled(poprt__kctx *k, const conv_plan *p, int pointwise, const float *x,
                               const float *b, const unsigned char *apack, uint64_t per_group,
                               float *y, int *done)
{
    const poprt__geom3 *g = &p->g;
    *done = 0;
    const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(apack);
    /* 1x1 stride-1: no im2col to save; one multi-threaded GEMM over the
     * whole image shares the packed weights better, unless the input rows
     * are a multiple of 4 KiB apart (the GEMM reads them in place, all in
     * the same cache sets) and few (the copy is cheap): then chunks are
     * copied like im2col blocks (measured: C16 -> M32 at 320x320 1.3x) */
    if ((pointwise && ((g->out_sz * (int64_t)sizeof(float)) % 4096 != 0 || p->Kc > p->Mg)) ||
        !v || !poprt__sgemm_usable(v))
        return POPRT_OK;
    const int64_t nr = v->nr, ng = p->N * p->G;
    int64_t cw = CONV_TILE_BYTES / ((int64_t)sizeof(float) * p->Kc) / nr * nr;
    if (cw > CONV_TILE_MAX_COLS / nr * nr)
        cw = CONV_TILE_MAX_COLS / nr * nr;
    if (cw < 2 * nr)
        cw = 2 * nr;
    /* enough items for a few threads: narrower chunks, down to two panels */
    if (ng * poprt__ceil_div(g->out_sz, cw) < 2 * CONV_LANES) {
        const int64_t per = poprt__ceil_div(2 * CONV_LANES, ng);
        int64_t want = poprt__ceil_div(poprt__ceil_div(g->out_sz, per), nr) * nr;
        if (want < 2 * nr)
            want = 2 * nr;
        if (want < cw)
            cw = want;
    }
    if (cw > g->out_sz)
        cw = g->out_sz;
    const int64_t nchunks = poprt__ceil_div(g->out_sz, cw), items = ng * nchunks;
    if (items < CONV_MIN_ITEMS)
        return POPRT_OK;
    conv_tile_job t = {p, x, b, apack, per_group, y, cw, nchunks, items, 0, NULL, 0, 0};
    t.lanes = items < CONV_LANES ? items : CONV_LANES;
    t.col_bytes = ((size_t)(p->Kc * cw) * sizeof(float) + 63) & ~(size_t)63;
    size_t ws = poprt__sgemm_packed_workspace(apack, NULL, 0, 0, p->Mg, cw, p->Kc);
    t.lane_bytes = (t.col_bytes + ws + 63) & ~(size_t)63;
    size_t all;
    if (!poprt__mul_size(t.lane_bytes, (size_t)t.lanes, &all) ||
        !(t.scratch = poprt__kctx_scratch(k, all)))
        return poprt__ref_oom(k);
    poprt__kctx_parallel_for(k, t.lanes, 1, conv_tile_lane_fn, &t);
    *done = 1;
    return POPRT_OK;
}

/* ---- direct conv on the GEMM micro-kernel ----------------------------------
 * For stride-1 2-D convs no im2col is needed: on a zero-padded copy of the
 * input with row pitch Wp, output position q = oh*Wp + ow reads tap (kh, kw)
 * of channel c at xpad[c][q + kh*dh*Wp + kw*dw], so each tap's B operand is
 * the padded input itself, shifted, with one row stride (the plane size).
 * The micro-kernel then runs once per tap over the channels, accumulating
 * in a register tile; the (kw-1)*dw extra columns per row are computed and
 * dropped when the block is copied out with the bias. Stride 2 becomes
 * stride 1 by splitting each padded plane into its 4 phases
 * (rows/columns even/odd): tap (kh, kw) reads phase (kh%2, kw%2) shifted by
 * (kh/2, kw/2). Weights are packed per MR-row panel and tap:
 * apanel(i, t)[c*MR + r] = W[i*MR + r][c][t]; for a variant with a tap
 * micro-kernel, channel-major instead: apanel(i)[(c*taps + t)*MR + r], so
 * that the kernel walks the taps of one channel (a few neighbouring rows of
 * one plane, in L1) before the next channel. */

#define CONV_DIRECT_MAGIC 0x31524443525050ull /* "PPRCDR1" */
#define CONV_DIRECT_B_BYTES (512 * 1024)     /* B block of one chunk */
#define CONV_DIRECT_MAX_TAPS 64 /* more: one micro-kernel call per tap */

/* Whether the direct path pays off: at most 2-D, stride 1 or 2 (undilated),
 * not 1x1 (a plain GEMM; with stride 2 only a quarter of the phases would be
 * read), enough channels for the micro-kernel's K loop (per tap when v runs
 * one call per tap; over all taps when it has a tap micro-kernel, which
 * keeps the sum in registers: then a 3-channel stem conv needs no im2col),
 * little width wasted on the grid. */
/* Whether v's tap micro-kernel runs this conv (and so the weights are
 * packed channel-major for it). */
static int conv_direct_taps(const poprt__sgemm_variant *v, int64_t k_sz)
{
    return v->ukr_taps && k_sz <= CONV_DIRECT_MAX_TAPS;
}

static int conv_direct_fits(const poprt__geom3 *g, int64_t Cg, const poprt__sgemm_variant *v)
{
    const int taps = conv_direct_taps(v, g->k_sz);
    if (g->in[0] != 1 || g->k[0] != 1 || g->out[0] != 1 || g->s[1] != g->s[2] ||
        (taps ? Cg * g->k_sz < 16 : Cg < 8) || g->out_sz < 32 || g->k_sz < 2)
        return 0;
    if (g->s[1] == 1)
        return g->out[2] >= 3 * g->d[2] * (g->k[2] - 1);
    return g->s[1] == 2 && g->d[1] == 1 && g->d[2] == 1 && g->out[2] >= 3 * ((g->k[2] - 1) / 2);
}

typedef struct conv_direct_job {
    const conv_plan *p;
    const float *x, *b;
    const float *apack; /* group 0 */
    int64_t a_group;    /* floats per group */
    const poprt__sgemm_variant *v;
    float *xpad, *tmp;
    float *y;
    int64_t Hp, Wp, plane, Q, cw, cwp, nchunks, items, lanes, tmp_floats;
    int64_t pblk, nmb; /* MR-row panels per M block, M blocks */
    int64_t ph;        /* 2: planes split into 4 phases of Hp x Wp (stride 2) */
    int64_t toff[CONV_DIRECT_MAX_TAPS]; /* B offset of each tap, for v->ukr_taps */
} conv_direct_job;

/* Input offset of tap (kh, kw) from an output position on the grid. */
static int64_t conv_tap_off(const conv_direct_job *t, int64_t kh, int64_t kw)
{
    const poprt__geom3 *g = &t->p->g;
    if (t->ph != 2)
        return kh * g->d[1] * t->Wp + kw * g->d[2];
    return ((kh % 2) * 2 + kw % 2) * t->Hp * t->Wp + (kh / 2) * t->Wp + kw / 2;
}

/* Stride 2: phase (a, b) of plane q holds padded rows 2i+a, columns 2j+b. */
static void conv_phase_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const conv_direct_job *t = ctx;
    const poprt__geom3 *g = &t->p->g;
    const int64_t H = g->in[1], W = g->in[2], pt = g->pb[1], pl = g->pb[2];
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        for (int64_t a = 0; a < 2; a++)
            for (int64_t b = 0; b < 2; b++) {
                float *dst = t->xpad + q * t->plane + (a * 2 + b) * t->Hp * t->Wp;
                /* columns j with 0 <= 2j + b - pl < W */
                int64_t j0 = (pl - b + 1) / 2, j1 = (W - 1 + pl - b) / 2 + 1;
                j0 = j0 < 0 ? 0 : j0 > t->Wp ? t->Wp : j0;
                j1 = j1 < j0 ? j0 : j1 > t->Wp ? t->Wp : j1;
                for (int64_t i = 0; i < t->Hp; i++) {
                    float *restrict row = dst + i * t->Wp;
                    const int64_t ih = 2 * i + a - pt;
                    if (ih < 0 || ih >= H) {
                        memset(row, 0, sizeof(float) * (size_t)t->Wp);
                        continue;
                    }
                    const float *restrict src = xp + ih * W + b - pl;
                    for (int64_t j = 0; j < j0; j++)
                        row[j] = 0.0f;
                    for (int64_t j = j0; j < j1; j++)
                        row[j] = src[2 * j];
                    for (int64_t j = j1; j < t->Wp; j++)
                        row[j] = 0.0f;
                }
            }
    }
}

static void conv_pad_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const conv_direct_job *t = ctx;
    const poprt__geom3 *g = &t->p->g;
    const int64_t H = g->in[1], W = g->in[2], pt = g->pb[1], pl = g->pb[2];
    const int64_t j0 = pl < 0 ? 0 : pl > t->Wp ? t->Wp : pl;
    const int64_t j1 = pl + W < j0 ? j0 : pl + W > t->Wp ? t->Wp : pl + W;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        float *dst = t->xpad + q * t->plane;
        for (int64_t i = 0; i < t->Hp; i++) {
            float *row = dst + i * t->Wp;
            const int64_t ih = i - pt;
            if (ih < 0 || ih >= H) {
                memset(row, 0, sizeof(float) * (size_t)t->Wp);
                continue;
            }
            memset(row, 0, sizeof(float) * (size_t)j0);
            memcpy(row + j0, xp + ih * W + (j0 - pl), sizeof(float) * (size_t)(j1 - j0));
            memset(row + j1, 0, sizeof(float) * (size_t)(t->Wp - j1));
        }
    }
}

static void conv_direct_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const conv_direct_job *t = ctx;
    const conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    const poprt__sgemm_variant *v = t->v;
    const int MR = v->mr, NR = v->nr;
    const int64_t OW = g->out[2], panels = (p->Mg + MR - 1) / MR;
    for (int64_t l = l0; l < l1; l++) {
        float *tmp = t->tmp + l * t->tmp_floats;
        for (int64_t it = l; it < t->items; it += t->lanes) {
            const int64_t mbi = it % t->nmb, rest = it / t->nmb;
            const int64_t ch = rest % t->nchunks, ng = rest / t->nchunks;
            const int64_t n = ng / p->G, gi = ng % p->G;
            const int64_t q0 = ch * t->cw, cols = t->Q - q0 < t->cw ? t->Q - q0 : t->cw;
            const float *xb = t->xpad + (n * p->C + gi * p->Cg) * t->plane + q0;
            const float *ag = t->apack + gi * t->a_group;
            const int64_t i0 = mbi * t->pblk, i1 = i0 + t->pblk < panels ? i0 + t->pblk : panels;
            const int64_t m1 = i1 * MR < p->Mg ? i1 * MR : p->Mg;
            for (int64_t i = i0; i < i1; i++) {
                const int mr = (int)(p->Mg - i * MR < MR ? p->Mg - i * MR : MR);
                const float *ai = ag + i * g->k_sz * p->Cg * MR;
                for (int64_t j = 0; j < cols; j += NR) {
                    float *cp = tmp + i * MR * t->cwp + j;
                    if (conv_direct_taps(v, g->k_sz)) {
                        /* all taps summed in registers, C written once; a
                         * last partial panel runs full height too (its A rows
                         * are zero-padded and tmp has room for them), so it
                         * keeps the sum in registers as well */
                        v->ukr_taps(p->Cg, g->k_sz, t->toff, MR, NR, ai, xb + j, t->plane, cp,
                                    t->cwp, 1.0f, 0.0f);
                        continue;
                    }
                    int64_t tap = 0;
                    for (int64_t kh = 0; kh < g->k[1]; kh++)
                        for (int64_t kw = 0; kw < g->k[2]; kw++, tap++)
                            v->ukr(p->Cg, mr, NR, ai + tap * p->Cg * MR,
                                   xb + j + conv_tap_off(t, kh, kw), t->plane, cp, t->cwp, 1.0f,
                                   tap ? 1.0f : 0.0f);
                }
            }
            /* copy the valid columns out, with the bias */
            float *yg = t->y + (n * p->M + gi * p->Mg) * g->out_sz;
            for (int64_t m = i0 * MR; m < m1; m++) {
                const float *src = tmp + m * t->cwp;
                float *restrict dst = yg + m * g->out_sz;
                const float bv = t->b ? t->b[gi * p->Mg + m] : 0.0f;
                int64_t q = q0, oh = q0 / t->Wp, ow = q0 % t->Wp, y0 = -1, y1 = 0;
                while (q < q0 + cols) {
                    const int64_t n_ = t->Wp - ow < q0 + cols - q ? t->Wp - ow : q0 + cols - q;
                    const int64_t e = ow + n_ < OW ? ow + n_ : OW;
                    if (e > ow)
                        row_plus(dst + oh * OW + ow, src + (q - q0), bv, e - ow);
                    if (e > ow) {
                        y0 = y0 < 0 ? oh * OW + ow : y0;
                        y1 = oh * OW + e;
                    }
                    q += n_;
                    ow = 0;
                    oh++;
                }
                /* the chunk's valid positions are one run of Y's row */
                if (y0 >= 0 && conv_has_epilogue(p))
                    conv_epilogue(p, t->y, dst + y0 - t->y, y1 - y0);
            }
        }
    }
}

static poprt_status conv_direct(poprt__kctx *k, const conv_plan *p, const float *x,
                                const float *b, const float *apack, int64_t a_group,
                                const poprt__sgemm_variant *v, float *y)
{
    const poprt__geom3 *g = &p->g;
    conv_direct_job t;
    memset(&t, 0, sizeof t);
    t.p = p;
    t.x = x;
    t.b = b;
    t.apack = apack;
    t.a_group = a_group;
    t.v = v;
    t.y = y;
    t.ph = g->s[1] == 2 ? 2 : 1;
    if (t.ph == 2) {
        t.Hp = g->out[1] + (g->k[1] - 1) / 2;
        t.Wp = g->out[2] + (g->k[2] - 1) / 2;
        t.plane = 4 * t.Hp * t.Wp;
    } else {
        t.Hp = g->out[1] + g->d[1] * (g->k[1] - 1);
        t.Wp = g->out[2] + g->d[2] * (g->k[2] - 1);
        t.plane = t.Hp * t.Wp;
    }
    t.Q = (g->out[1] - 1) * t.Wp + g->out[2];
    for (int64_t kh = 0, tap = 0; kh < g->k[1]; kh++)
        for (int64_t kw = 0; kw < g->k[2]; kw++, tap++)
            if (tap < CONV_DIRECT_MAX_TAPS)
                t.toff[tap] = conv_tap_off(&t, kh, kw);
    /* columns a chunk reads past its own in each phase */
    const int64_t halo = t.ph == 2 ? (g->k[1] - 1) / 2 * t.Wp + (g->k[2] - 1) / 2
                                   : conv_tap_off(&t, g->k[1] - 1, g->k[2] - 1);
    const int64_t NR = v->nr, ng = p->N * p->G;
    int64_t cw = CONV_DIRECT_B_BYTES / ((int64_t)sizeof(float) * p->Cg * t.ph * t.ph) - halo;
    cw = cw / NR * NR;
    if (cw > 1024)
        cw = 1024;
    if (cw < 2 * NR)
        cw = 2 * NR;
    /* small images: narrower chunks (and below, M blocks) so that several
     * threads get work; one thread keeps whole chunks (the split never
     * changes how an output is computed, only which item computes it) */
    const int64_t want_items = poprt__kctx_threads(k) > 1 ? 2 * CONV_LANES : 1;
    if (ng * poprt__ceil_div(t.Q, cw) < want_items) {
        int64_t want = poprt__ceil_div(poprt__ceil_div(t.Q, poprt__ceil_div(want_items, ng)), NR) * NR;
        if (want < 2 * NR)
            want = 2 * NR;
        if (want < cw)
            cw = want;
    }
    t.cw = cw;
    t.cwp = poprt__ceil_div(cw, NR) * NR;
    t.nchunks = poprt__ceil_div(t.Q, cw);
    /* small images: split the output channels too */
    const int64_t panels = poprt__ceil_div(p->Mg, v->mr);
    t.nmb = poprt__ceil_div(want_items, ng * t.nchunks);
    if (t.nmb > panels)
        t.nmb = panels;
    t.pblk = poprt__ceil_div(panels, t.nmb);
    t.nmb = poprt__ceil_div(panels, t.pblk);
    t.items = ng * t.nchunks * t.nmb;
    t.lanes = t.items < CONV_LANES ? t.items : CONV_LANES;
    t.tmp_floats = (poprt__ceil_div(p->Mg, v->mr) * v->mr * t.cwp + 15) & ~(int64_t)15;
    /* the micro-kernel reads NR columns past the last grid position */
    size_t pad_n, tmp_n;
    if (!poprt__mul_size((size_t)(p->N * p->C), (size_t)t.plane, &pad_n) ||
        !poprt__mul_size((size_t)t.lanes, (size_t)t.tmp_floats, &tmp_n) ||
        !(t.xpad = poprt__kctx_scratch(k, (pad_n + (size_t)(2 * NR)) * sizeof(float))) ||
        !(t.tmp = poprt__kctx_scratch(k, tmp_n * sizeof(float))))
        return poprt__ref_oom(k);
    memset(t.xpad + pad_n, 0, sizeof(float) * (size_t)(2 * NR));
    poprt__kctx_parallel_for(k, p->N * p->C, poprt__ref_grain(t.plane, 1 << 14),
                             t.ph == 2 ? conv_phase_task_fn : conv_pad_task_fn, &t);
    poprt__kctx_parallel_for(k, t.lanes, 1, conv_direct_lane_fn, &t);
    return POPRT_OK;
}

/* ---- depthwise planes on a padded copy ---------------------------------------
 * Each input plane is copied once with its zero border (conv_pad_task_fn),
 * then every output plane runs the ISA's plane function (conv_dw.h): all
 * taps of a block of columns accumulate in registers, no bounds checks. */

#define DW_PLANE_NAME dwconv_plane_scalar
#define DW_PLANE_LINKAGE static
#include "kernels/x86/conv_dw_body.inc"
#undef DW_PLANE_NAME
#undef DW_PLANE_LINKAGE

static poprt__dwconv_plane_fn dwconv_plane_best(void)
{
#if defined(__x86_64__)
    const poprt__isa isa = poprt__cpu_features()->isa;
    if (isa >= POPRT__ISA_AVX512)
        return poprt__dwconv_plane_avx512;
    if (isa >= POPRT__ISA_AVX2)
        return poprt__dwconv_plane_avx2;
#endif
    return dwconv_plane_scalar;
}

typedef struct dw_plane_job {
    const conv_direct_job *pad; /* the padded input */
    const float *w, *b;
    float *y;
    poprt__dwconv_plane_fn fn;
} dw_plane_job;

static void dw_plane_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const dw_plane_job *t = ctx;
    const conv_plan *p = t->pad->p;
    const poprt__geom3 *g = &p->g;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t n = q / p->M, m = q % p->M, c = m / p->Mg;
        t->fn(t->pad->xpad + (n * p->C + c) * t->pad->plane, t->pad->Wp, t->w + m * g->k_sz,
              g->k[1], g->k[2], g->s[1], g->s[2], g->d[1], g->d[2], t->b ? t->b[m] : 0.0f, g->out[1],
              g->out[2], t->y + q * g->out_sz);
        if (conv_has_epilogue(p))
            conv_epilogue(p, t->y, q * g->out_sz, g->out_sz);
    }
}

/* Depthwise 1-D / 2-D convs; 0 in *done for 3-D (the generic loop). */
static poprt_status dwconv_padded(poprt__kctx *k, const conv_plan *p, const float *x,
                                  const float *w, const float *b, float *y, int *done)
{
    const poprt__geom3 *g = &p->g;
    *done = 0;
    if (g->in[0] != 1 || g->k[0] != 1 || g->out[0] != 1)
        return POPRT_OK;
    conv_direct_job pad;
    memset(&pad, 0, sizeof pad);
    pad.p = p;
    pad.x = x;
    pad.Hp = (g->out[1] - 1) * g->s[1] + g->d[1] * (g->k[1] - 1) + 1;
    pad.Wp = (g->out[2] - 1) * g->s[2] + g->d[2] * (g->k[2] - 1) + 1;
    pad.plane = pad.Hp * pad.Wp;
    const int64_t slack = 16 * g->s[2] + 16; /* whole 16-column blocks (conv_dw.h) */
    size_t n;
    if (!poprt__mul_size((size_t)(p->N * p->C), (size_t)pad.plane, &n) ||
        !(pad.xpad = poprt__kctx_scratch(k, (n + (size_t)slack) * sizeof(float))))
        return poprt__ref_oom(k);
    memset(pad.xpad + n, 0, (size_t)slack * sizeof(float));
    poprt__kctx_parallel_for(k, p->N * p->C, poprt__ref_grain(pad.plane, 1 << 14), conv_pad_task_fn,
                             &pad);
    dw_plane_job t = {&pad, w, b, y, dwconv_plane_best()};
    poprt__kctx_parallel_for(k, p->N * p->M, poprt__ref_grain(g->out_sz * g->k_sz, 1 << 15),
                             dw_plane_task_fn, &t);
    *done = 1;
    return POPRT_OK;
}

/* ---- small images: the GEMM transposed ---------------------------------------
 * With few output positions (7x7, 13x13, 14x14) and many channels, the
 * weights are the big operand and each weight would be used by only a few
 * NR-column tiles. Computing Y^T = X^T W^T instead makes the positions the
 * rows (MR-row panels of the im2col matrix, or of the input itself for
 * 1x1) and the weights the pre-packed B operand, each value of which then
 * meets every position from cache; Y^T is transposed into Y with the bias
 * and the epilogue (measured: 512x49x4608 139 -> 173, 2048x49x512 150 ->
 * 189, 256x196x2304 151 -> 170 GFLOP/s). */

#define CONV_TRANS_MAGIC 0x31524e5443525050ull /* "PPRCTNR1" */
#define CONV_TRANS_MAX_POSITIONS 256
#define CONV_TRANS_BLOCK 16 /* output channels transposed together */

/* Whether the transposed GEMM pays off (2-D or less, one group, 4 to
 * CONV_TRANS_MAX_POSITIONS outputs: an STFT-like conv with 8 positions fills
 * 8 of 32 columns the other way round, 8 of 14 rows this way; channels
 * enough to fill the tiles: with
 * fewer than 4 column panels of output channels the threads have too little
 * to share; measured on oww_embedding's 72- and 96-channel layers). */
static int conv_trans_fits(int64_t G, int64_t M, int64_t Kc, int64_t out_sz)
{
    return G == 1 && out_sz >= 4 && out_sz <= CONV_TRANS_MAX_POSITIONS && M >= 128 && Kc >= 32;
}

typedef struct conv_trans_job {
    const conv_plan *p;
    const float *ct, *b; /* Y^T of one image (out_sz x M), bias */
    float *y;            /* Y of that image */
    float *yall;         /* Y (for the epilogue's offsets) */
    int avx512;          /* transpose with poprt__transpose_bias_avx512 */
} conv_trans_job;

/* The GEMM's epilogue (poprt__sgemm_epi): positions [q0, q1) x channels
 * [m0, m1) of Y^T, just computed, go to Y with the bias, 16 channels at a
 * time, then get the conv's epilogue, on the thread that computed them. */
static void conv_trans_epi(void *ctx, int64_t q0, int64_t q1, int64_t m0, int64_t m1)
{
    const conv_trans_job *t = ctx;
    const conv_plan *p = t->p;
    const int64_t Q = p->g.out_sz, M = p->M;
    const int relu = t->avx512 && conv_lone_relu(p); /* applied in the transposition */
    for (int64_t mb = m0; mb < m1; mb += CONV_TRANS_BLOCK) {
        const int64_t nm = m1 - mb < CONV_TRANS_BLOCK ? m1 - mb : CONV_TRANS_BLOCK;
        if (t->avx512)
            poprt__transpose_bias_avx512(t->ct + q0 * M + mb, M, q1 - q0, nm,
                                         t->b ? t->b + mb : NULL, relu, t->y + mb * Q + q0, Q);
        else {
            float bias[CONV_TRANS_BLOCK];
            for (int64_t i = 0; i < nm; i++)
                bias[i] = t->b ? t->b[mb + i] : 0.0f;
            for (int64_t q = q0; q < q1; q++) {
                const float *restrict src = t->ct + q * M + mb;
                for (int64_t i = 0; i < nm; i++)
                    t->y[(mb + i) * Q + q] = src[i] + bias[i];
            }
        }
        for (int64_t i = 0; conv_has_epilogue(p) && !relu && i < nm; i++)
            conv_epilogue(p, t->yall, t->y + (mb + i) * Q + q0 - t->yall, q1 - q0);
    }
}

static poprt_status conv_trans(poprt__kctx *k, const conv_plan *p, int pointwise, const float *x,
                               const float *b, const void *bpack, float *y)
{
    const poprt__geom3 *g = &p->g;
    const int64_t Q = g->out_sz;
    float *col = NULL, *ct;
    void *ws;
    size_t n;
    if (!pointwise && (!poprt__mul_size((size_t)p->Kc, (size_t)Q * sizeof(float), &n) ||
                       !(col = poprt__kctx_scratch(k, n))))
        return poprt__ref_oom(k);
    if (!poprt__mul_size((size_t)p->M, (size_t)Q * sizeof(float), &n) ||
        !(ct = poprt__kctx_scratch(k, n)) ||
        !(ws = poprt__kctx_scratch(
              k, poprt__sgemm_packed_workspace(NULL, bpack, 1, 0, Q, p->M, p->Kc) + 64)))
        return poprt__ref_oom(k);
    poprt__par par = poprt__par_kctx(k);
    for (int64_t in = 0; in < p->N; in++) {
        const float *xn = x + in * p->C * g->in_sz;
        const float *a = xn;
        if (!pointwise) {
            im2col_task t = {xn, g, col};
            poprt__kctx_parallel_for(k, p->Kc, poprt__ref_grain(Q, 1 << 14), im2col_task_fn, &t);
            a = col;
        }
        /* cannot fail: the packed variant was checked by the caller */
        conv_trans_job t = {p, ct, b, y + in * p->M * Q, y, avx512_usable()};
        const poprt__sgemm_epi epi = {conv_trans_epi, &t};
        (void)poprt__sgemm_packed_epi(&par, ws, 1, 0, Q, p->M, p->Kc, 1.0f, a, Q, NULL, NULL, 0,
                                      bpack, 0.0f, ct, p->M, &epi);
    }
    return POPRT_OK;
}

/* ---- blocked direct convolution (kernels/x86/conv_blocked.h) -----------------
 * The input is copied once into 16-channel blocks with its zero border
 * (xb[cbi][hp][wp][cb]); each work item then computes a run of about 48
 * output positions of one group of up to 64 output channels, summing a few
 * input blocks at a time (their weights stay in L1), and transposes the run
 * back into Y's channel rows, where the epilogue runs while the rows are in
 * cache. The weights are packed per
 * group when the session is compiled. Used for 2-D convs with one group and
 * more than one tap, on CPUs with AVX-512; inputs whose channels are not a
 * multiple of 16 (3-channel stems) are blocked one channel per block. */

#define CONV_BLOCKED_MAGIC 0x31424b4243525050ull /* "PPRCBKB1" */
#define CONVB_GROUP 64                          /* output channels per group */
#define CONVB_CHUNK 48                          /* output positions per work item */

typedef struct convb_job {
    const conv_plan *p;
    const float *x, *b, *w; /* w: packed, group og at og * w_group */
    float *y, *xb, *tmp;    /* tmp: per lane, 4 * 16 floats per position of a chunk */
    int64_t w_group, Hp, n_og, chunk, nchunks, cstep, items, lanes, tmp_floats;
    poprt__convb_geom g;
    int xblk, yblk; /* x, y (and the residual) in NCHW16c */
} convb_job;

/* Whether the blocked path can run a conv: 2-D (or 1-D), one group. */
static int convb_fits(const poprt__geom3 *g, int64_t G)
{
    return G == 1 && g->in[0] == 1 && g->k[0] == 1 && g->out[0] == 1 && g->out_sz >= 1;
}

/* Channels per input block: 16 when they divide C, else 1 (plain padded
 * planes; also for stems with 3 channels, whose weights per channel then
 * fit in L1 on their own). */
static int64_t convb_cb(int64_t C) { return C % 16 == 0 ? 16 : 1; }

/* Blocked geometry: cb channels per block, zero-padded input of Hp x Wp
 * (only the rows and columns some tap reads). */
static void convb_geom_of(const poprt__geom3 *g, int64_t C, poprt__convb_geom *cg, int64_t *Hp)
{
    cg->cb = convb_cb(C);
    cg->split = 0;
    cg->ncb = C / cg->cb;
    cg->KH = g->k[1];
    cg->KW = g->k[2];
    cg->sh = g->s[1];
    cg->sw = g->s[2];
    cg->dh = g->d[1];
    cg->dw = g->d[2];
    cg->OW = g->out[2];
    cg->Wp = (g->out[2] - 1) * g->s[2] + (g->k[2] - 1) * g->d[2] + 1;
    *Hp = (g->out[1] - 1) * g->s[1] + (g->k[1] - 1) * g->d[1] + 1;
    cg->plane = *Hp * cg->Wp * cg->cb;
}

/* Rows [r0, r1) of the blocked input: row r = (image * ncb + cbi) * Hp + hp. */
static void convb_block_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convb_job *t = ctx;
    const conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    const poprt__convb_geom *cg = &t->g;
    const int64_t H = g->in[1], W = g->in[2], HW = H * W, pt = g->pb[1], pl = g->pb[2];
    const int64_t cb = cg->cb, Wp = cg->Wp;
    /* padded columns [c0, c1) hold input columns [c0 - pl, c1 - pl) */
    int64_t c0 = pl < 0 ? 0 : pl, c1 = pl + W;
    if (c1 > Wp)
        c1 = Wp;
    if (c0 > c1)
        c0 = c1;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t hp = r % t->Hp, cbi = (r / t->Hp) % cg->ncb, n = r / t->Hp / cg->ncb;
        float *dst = t->xb + r * Wp * cb;
        const int64_t ih = hp - pt;
        if (ih < 0 || ih >= H) {
            memset(dst, 0, sizeof(float) * (size_t)(Wp * cb));
            continue;
        }
        if (cg->split) /* the border columns are spread over the row */
            memset(dst, 0, sizeof(float) * (size_t)Wp);
        else {
            memset(dst, 0, sizeof(float) * (size_t)(c0 * cb));
            memset(dst + c1 * cb, 0, sizeof(float) * (size_t)((Wp - c1) * cb));
        }
        if (t->xblk) { /* already blocked: the row's run of positions */
            memcpy(dst + c0 * 16, t->x + (n * p->C + cbi * 16) * HW + (ih * W + c0 - pl) * 16,
                   sizeof(float) * (size_t)((c1 - c0) * 16));
            continue;
        }
        const float *src = t->x + (n * p->C + cbi * cb) * HW + ih * W + (c0 - pl);
        if (cb == 16)
            poprt__convb_block_avx512(src, HW, 16, c1 - c0, dst + c0 * 16);
        else if (cg->split) { /* even columns, then odd ones */
            const int64_t a = c0 & 1; /* src[a] is the first even column */
            poprt__convb_even_avx512(src + a, (c1 - c0 - a + 1) / 2, dst + ((c0 + a) >> 1));
            poprt__convb_even_avx512(src + !a, (c1 - c0 - !a + 1) / 2,
                                     dst + cg->split + ((c0 + !a) >> 1));
        }
        else /* one channel per block: a padded copy of the row */
            memcpy(dst + c0, src, sizeof(float) * (size_t)(c1 - c0));
    }
}

static void convb_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const convb_job *t = ctx;
    const conv_plan *p = t->p;
    const poprt__convb_geom *cg = &t->g;
    const int64_t OHW = p->g.out_sz;
    float bias[CONVB_GROUP];
    const int relu = conv_lone_relu(p); /* applied in the transposition */
    /* an NCHW16c output whose epilogue is a residual and/or a Relu gets it
     * in the registers, with the last input blocks */
    const int in_regs =
        t->yblk && !p->fp8 && !p->n_post && (p->act == CONV_ACT_NONE || p->act == CONV_ACT_RELU);
    const int regs_relu = in_regs && p->act == CONV_ACT_RELU;
    for (int64_t l = l0; l < l1; l++) {
        float *tmp = t->tmp ? t->tmp + l * t->tmp_floats : NULL;
        /* a lane takes a contiguous run of items: neighbouring chunks share
         * the cache lines at their ends, which two threads writing them at
         * once would pass back and forth */
        const int64_t i0 = l * t->items / t->lanes, i1 = (l + 1) * t->items / t->lanes;
        for (int64_t it = i0; it < i1; it++) {
            /* items: image-major, then group, then chunk (a lane's chunks of
             * one group follow each other, so its weights stay in cache) */
            const int64_t ch = it % t->nchunks, og = (it / t->nchunks) % t->n_og;
            const int64_t n = it / t->nchunks / t->n_og;
            const int64_t q0 = ch * t->chunk, q1 = q0 + t->chunk < OHW ? q0 + t->chunk : OHW;
            const int64_t oc0 = og * CONVB_GROUP;
            const int64_t mc = p->M - oc0 < CONVB_GROUP ? p->M - oc0 : CONVB_GROUP;
            const int nb = (int)((mc + 15) / 16);
            if (t->b) {
                memset(bias, 0, sizeof bias);
                memcpy(bias, t->b + oc0, sizeof(float) * (size_t)mc);
            }
            const float *xn = t->xb + n * cg->ncb * cg->plane;
            const float *wg = t->w + og * t->w_group;
            /* NCHW16c output: the tiles store straight into its blocks */
            float *out = t->yblk ? t->y + (n * p->M + oc0) * OHW + q0 * 16 : tmp;
            const int64_t ldo = t->yblk ? OHW : q1 - q0;
            const float *z = in_regs && p->z ? p->z + (out - t->y) : NULL;
            /* a few input blocks at a time: their weights stay in L1 while
             * the chunk's tiles run over them */
            for (int64_t c0 = 0; c0 < cg->ncb; c0 += t->cstep) {
                const int64_t c1 = c0 + t->cstep < cg->ncb ? c0 + t->cstep : cg->ncb;
                const int last = c1 == cg->ncb;
                poprt__convb_run_avx512(xn, wg, t->b ? bias : NULL, nb, cg, q0, q1, c0, c1,
                                        c0 > 0, out, ldo, last ? z : NULL, last && regs_relu);
            }
            if (t->yblk) {
                for (int bi = 0; !in_regs && conv_has_epilogue(p) && bi < nb; bi++)
                    conv_epilogue(p, t->y, out + bi * 16 * OHW - t->y, (q1 - q0) * 16);
                continue;
            }
            float *yq = t->y + (n * p->M + oc0) * OHW + q0;
            for (int bi = 0; bi < nb; bi++) {
                const int rows = (int)(mc - bi * 16 < 16 ? mc - bi * 16 : 16);
                poprt__transpose_bias_avx512(tmp + bi * (q1 - q0) * 16, 16, q1 - q0, rows, NULL,
                                             relu, yq + bi * 16 * OHW, OHW);
            }
            if (conv_has_epilogue(p) && !relu)
                for (int64_t m = 0; m < mc; m++)
                    conv_epilogue(p, t->y, yq + m * OHW - t->y, q1 - q0);
        }
    }
}

/* One channel per block with column stride 1 or 2 and rows of at least 16
 * columns: whole output rows straight into place
 * (poprt__convb_rows_avx512). Items: image-major, then group, then row.
 * (Splitting the channels first, as the next MaxPool splits its planes,
 * measured no faster on light_squeezenet: the conv then reads its whole
 * input once per channel share.) */
static int convb_by_rows(const poprt__convb_geom *cg)
{
    return cg->cb == 1 && (cg->sw == 1 || cg->sw == 2) && cg->OW >= 16;
}

static void convb_rows_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const convb_job *t = ctx;
    const conv_plan *p = t->p;
    const poprt__convb_geom *cg = &t->g;
    const int64_t OH = p->g.out[1], OHW = p->g.out_sz;
    float bias[CONVB_GROUP];
    const int relu = conv_lone_relu(p); /* applied in the tiles' registers */
    for (int64_t l = l0; l < l1; l++) {
        const int64_t i0 = l * t->items / t->lanes, i1 = (l + 1) * t->items / t->lanes;
        for (int64_t it = i0; it < i1; it++) {
            const int64_t oh = it % OH, og = (it / OH) % t->n_og, n = it / OH / t->n_og;
            const int64_t oc0 = og * CONVB_GROUP;
            const int64_t mc = p->M - oc0 < CONVB_GROUP ? p->M - oc0 : CONVB_GROUP;
            if (t->b) {
                memset(bias, 0, sizeof bias);
                memcpy(bias, t->b + oc0, sizeof(float) * (size_t)mc);
            }
            /* NCHW16c: the group's first block; else its first row oh */
            float *yg = t->y + (n * p->M + oc0) * OHW;
            float *yr = t->yblk ? yg : yg + oh * cg->OW;
            poprt__convb_rows_avx512(t->xb + n * cg->ncb * cg->plane, t->w + og * t->w_group,
                                     poprt__ceil_div(mc, 16) * 16, t->b ? bias : NULL, mc, cg, oh, relu,
                                     t->yblk, yr, OHW);
            if (conv_has_epilogue(p) && !relu && t->yblk)
                for (int64_t bi = 0; bi < mc / 16; bi++) /* row oh of each block */
                    conv_epilogue(p, t->y, yg + (bi * OHW + oh * cg->OW) * 16 - t->y,
                                  cg->OW * 16);
            else if (conv_has_epilogue(p) && !relu)
                for (int64_t m = 0; m < mc; m++)
                    conv_epilogue(p, t->y, yr + m * OHW - t->y, cg->OW);
        }
    }
}

static poprt_status conv_blocked(poprt__kctx *k, const conv_plan *p, const float *x,
                                 const float *b, const float *w, int64_t w_group, float *y)
{
    const poprt__geom3 *g = &p->g;
    convb_job t = {.p = p, .x = x, .b = b, .w = w, .y = y, .w_group = w_group,
                   .xblk = p->xblk, .yblk = p->yblk};
    convb_geom_of(g, p->C, &t.g, &t.Hp);
    /* an NCHW16c input that no tap reads past (no padding) is read in
     * place, with its own row pitch and plane */
    const int in_place = p->xblk && g->pb[1] == 0 && g->pb[2] == 0 && t.Hp <= g->in[1] &&
                         t.g.Wp <= g->in[2];
    if (in_place) {
        t.Hp = g->in[1];
        t.g.Wp = g->in[2];
        t.g.plane = g->in[1] * g->in[2] * 16;
    }
    const int by_rows = convb_by_rows(&t.g);
    if (by_rows && t.g.sw == 2)
        t.g.split = (t.g.Wp + 1) / 2;
    t.n_og = poprt__ceil_div(p->M, CONVB_GROUP);
    if (by_rows)
        t.items = p->N * t.n_og * g->out[1];
    else {
        /* chunks of about CONVB_CHUNK positions, in whole tiles */
        const int64_t nch = poprt__ceil_div(g->out_sz, CONVB_CHUNK);
        t.chunk = poprt__ceil_div(poprt__ceil_div(g->out_sz, nch), 6) * 6;
        t.nchunks = poprt__ceil_div(g->out_sz, t.chunk);
        /* input blocks per step: their weights (64 output channels) in ~24 KiB */
        const int64_t wblk = t.g.KH * t.g.KW * t.g.cb * CONVB_GROUP * (int64_t)sizeof(float);
        t.cstep = (24 << 10) / wblk;
        if (t.cstep < 1)
            t.cstep = 1;
        t.items = p->N * t.n_og * t.nchunks;
        t.tmp_floats = 4 * 16 * t.chunk;
    }
    t.lanes = t.items < CONV_LANES ? t.items : CONV_LANES;
    if (t.yblk) /* the tiles store into the output itself */
        t.tmp_floats = 0;
    /* the blocked input, then zeros: the row tiles read up to 31 floats
     * past the last plane */
    enum { SLACK = 32 };
    size_t xb_n, tmp_n = 0;
    if (!poprt__mul_size((size_t)(p->N * t.g.ncb), (size_t)t.g.plane, &xb_n) ||
        xb_n > SIZE_MAX / sizeof(float) - SLACK ||
        !poprt__mul_size((size_t)t.lanes, (size_t)t.tmp_floats, &tmp_n) ||
        (tmp_n && !(t.tmp = poprt__kctx_scratch(k, tmp_n * sizeof(float)))))
        return poprt__ref_oom(k);
    if (in_place)
        t.xb = (float *)x;
    else {
        if (!(t.xb = poprt__kctx_scratch(k, (xb_n + SLACK) * sizeof(float))))
            return poprt__ref_oom(k);
        memset(t.xb + xb_n, 0, SLACK * sizeof(float));
        poprt__kctx_parallel_for(k, p->N * t.g.ncb * t.Hp,
                                 poprt__ref_grain(t.g.Wp * t.g.cb, 1 << 14), convb_block_task_fn,
                                 &t);
    }
    poprt__kctx_parallel_for(k, t.lanes, 1, by_rows ? convb_rows_lane_fn : convb_lane_fn, &t);
    return POPRT_OK;
}

/* Packs W [M][C][KH][KW] for conv_blocked: per group of 64 output channels,
 * [cbi][kh][kw][i][nb * 16], zero for channels past C and M. */
static poprt_status convb_pack(const float *w, int64_t M, int64_t C, int64_t KH, int64_t KW,
                               void **state, size_t *size)
{
    const int64_t cb = convb_cb(C), ncb = C / cb;
    const int64_t n_og = poprt__ceil_div(M, CONVB_GROUP);
    const int64_t w_group = ncb * KH * KW * cb * CONVB_GROUP; /* floats, the last may use fewer */
    const size_t total = CONV_PACK_HEADER + (size_t)(n_og * w_group) * sizeof(float);
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    memset(blob, 0, total);
    uint64_t h[8] = {CONV_BLOCKED_MAGIC, (uint64_t)M, (uint64_t)C, (uint64_t)KH,
                     (uint64_t)KW, (uint64_t)w_group, 0, 0};
    memcpy(blob, h, sizeof h);
    float *dst = (float *)(blob + CONV_PACK_HEADER);
    for (int64_t og = 0; og < n_og; og++) {
        const int64_t oc0 = og * CONVB_GROUP;
        const int64_t mc = M - oc0 < CONVB_GROUP ? M - oc0 : CONVB_GROUP;
        const int64_t width = poprt__ceil_div(mc, 16) * 16;
        float *wg = dst + og * w_group;
        for (int64_t cbi = 0; cbi < ncb; cbi++)
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++)
                    for (int64_t i = 0; i < cb; i++) {
                        float *o = wg + (((cbi * KH + kh) * KW + kw) * cb + i) * width;
                        for (int64_t m = 0; m < mc; m++)
                            o[m] = w[(((oc0 + m) * C + cbi * cb + i) * KH + kh) * KW + kw];
                    }
    }
    *state = blob;
    *size = total;
    return POPRT_OK;
}

static poprt_status conv_layout(poprt__kctx *k, const conv_plan *p, const float *x,
                                const float *w, const float *b, float *y);

/* The weights convb_pack made for this conv, when the blocked path can run
 * them on this CPU (*w_group: floats per group of output channels); else
 * NULL (no such blob, or one made for another shape). */
static const float *convb_state(const poprt__kctx *k, const conv_plan *p, int64_t *w_group)
{
    const poprt__geom3 *g = &p->g;
    if (!k->state || k->state_size < CONV_PACK_HEADER || !convb_fits(g, p->G) ||
        !avx512_usable())
        return NULL;
    uint64_t h[8];
    memcpy(h, k->state, sizeof h);
    const uint64_t floats = (k->state_size - CONV_PACK_HEADER) / sizeof(float);
    if (h[0] != CONV_BLOCKED_MAGIC || h[1] != (uint64_t)p->M || h[2] != (uint64_t)p->C ||
        h[3] != (uint64_t)g->k[1] || h[4] != (uint64_t)g->k[2] || h[5] == 0 ||
        (uint64_t)poprt__ceil_div(p->M, CONVB_GROUP) > floats / h[5])
        return NULL;
    *w_group = (int64_t)h[5];
    return (const float *)((const unsigned char *)k->state + CONV_PACK_HEADER);
}

static poprt_status conv_f32(poprt__kctx *k, const conv_plan *p, const float *x, const float *w,
                             const float *b, float *y)
{
    const poprt__geom3 *g = &p->g;
    if (p->xblk || p->yblk)
        return conv_layout(k, p, x, w, b, y);
    if (p->Cg == 1 && p->G > 1) {
        int done;
        poprt_status st = dwconv_padded(k, p, x, w, b, y, &done);
        if (st || done)
            return st;
        dw_task t = {p, x, w, b, y};
        int64_t planes = p->N * p->M;
        poprt__kctx_parallel_for(k, planes, poprt__ref_grain(g->out_sz * g->k_sz, 1 << 15),
                                 dwconv_task_fn, &t);
        return POPRT_OK;
    }
    const int pointwise = g->k_sz == 1 && g->s[0] == 1 && g->s[1] == 1 && g->s[2] == 1 &&
                          g->pb[0] == 0 && g->pb[1] == 0 && g->pb[2] == 0 && g->pe[0] == 0 &&
                          g->pe[1] == 0 && g->pe[2] == 0;
    {
        int64_t w_group;
        const float *packed = convb_state(k, p, &w_group);
        if (packed) /* else packed for another CPU (an executable file): the paths below */
            return conv_blocked(k, p, x, b, packed, w_group, y);
    }
    if (k->state && k->state_size >= CONV_PACK_HEADER) {
        uint64_t h[4];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_TRANS_MAGIC && p->G == 1 && h[1] == (uint64_t)p->M &&
            h[2] == (uint64_t)p->Kc && h[3] <= k->state_size - CONV_PACK_HEADER &&
            conv_trans_fits(p->G, p->M, p->Kc, g->out_sz)) {
            const void *bp = (const unsigned char *)k->state + CONV_PACK_HEADER;
            const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(bp);
            /* packed for another CPU (an executable file): plain path below */
            if (v && poprt__sgemm_usable(v))
                return conv_trans(k, p, pointwise, x, b, bp, y);
        }
    }
    if (k->state && k->state_size >= CONV_PACK_HEADER) {
        uint64_t h[8];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_DIRECT_MAGIC && h[1] == (uint64_t)p->G && h[2] == (uint64_t)p->Mg &&
            h[4] == (uint64_t)p->Cg && h[5] == (uint64_t)g->k_sz &&
            h[6] < (uint64_t)poprt__sgemm_n_variants && h[3] > 0 &&
            (uint64_t)p->G <= (k->state_size - CONV_PACK_HEADER) / h[3]) {
            const poprt__sgemm_variant *v = &poprt__sgemm_variants[h[6]];
            /* packed for another CPU (an executable file): plain path below */
            if (poprt__sgemm_usable(v) && h[7] == ((uint64_t)v->nr << 16 | (uint64_t)v->mr) &&
                conv_direct_fits(g, p->Cg, v))
                return conv_direct(k, p, x, b,
                                   (const float *)((const unsigned char *)k->state +
                                                   CONV_PACK_HEADER),
                                   (int64_t)(h[3] / sizeof(float)), v, y);
        }
    }
    /* weights pre-packed by poprt__ref_conv_prepare, one block per group */
    const unsigned char *apack = NULL;
    uint64_t per_group = 0;
    void *pws = NULL;
    if (k->state && k->state_size >= CONV_PACK_HEADER &&
        poprt__fast_gemm_fits(p->Mg, g->out_sz, p->Kc)) {
        uint64_t h[4];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_PACK_MAGIC && h[1] == (uint64_t)p->G && h[2] == (uint64_t)p->Mg &&
            h[3] > 0 && (uint64_t)p->G <= (k->state_size - CONV_PACK_HEADER) / h[3]) {
            apack = (const unsigned char *)k->state + CONV_PACK_HEADER;
            per_group = h[3];
            int done;
            poprt_status st = conv_tiled(k, p, pointwise, x, b, apack, per_group, y, &done);
            if (st || done)
                return st;
            pws = poprt__kctx_scratch(
                k, poprt__sgemm_packed_workspace(apack, NULL, 0, 0, p->Mg, g->out_sz, p->Kc));
            if (!pws)
                apack = NULL;
        }
    }
    void *ws = NULL;
    if (!apack && poprt__fast_gemm_fits(p->Mg, g->out_sz, p->Kc) &&
        !(ws = poprt__fast_gemm_ws(k, 0, 0, p->Mg, g->out_sz, p->Kc)))
        return poprt__ref_oom(k);
    float *col = NULL;
    if (!pointwise) {
        size_t n;
        if (!poprt__mul_size((size_t)p->Kc, (size_t)g->out_sz, &n) ||
            !poprt__mul_size(n, sizeof(float), &n))
            return poprt__ref_oom(k);
        col = poprt__kctx_scratch(k, n ? n : 1);
        if (!col)
            return poprt__ref_oom(k);
    }
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t gi = 0; gi < p->G; gi++) {
            const float *xg = x + (n * p->C + gi * p->Cg) * g->in_sz;
            const float *wg = w + gi * p->Mg * p->Kc;
            float *yg = y + (n * p->M + gi * p->Mg) * g->out_sz;
            const float *B = xg;
            if (!pointwise) {
                im2col_task t = {xg, g, col};
                poprt__kctx_parallel_for(k, p->Kc, poprt__ref_grain(g->out_sz, 1 << 14),
                                         im2col_task_fn, &t);
                B = col;
            }
            const float beta = 0.0f; /* the bias is added with the epilogue */
            int done = 0;
            conv_epi_task et = {p, y, yg - y, b ? b + gi * p->Mg : NULL};
            const int epilogue = b || conv_has_epilogue(p);
            if (apack) {
                /* the bias and epilogue run on each finished block of Y */
                poprt__par par = poprt__par_kctx(k);
                const poprt__sgemm_epi epi = {conv_epi_block, &et};
                done = poprt__sgemm_packed_epi(&par, pws, 0, 0, p->Mg, g->out_sz, p->Kc, 1.0f,
                                               NULL, 0, apack + (uint64_t)gi * per_group, B,
                                               g->out_sz, NULL, beta, yg, g->out_sz,
                                               epilogue ? &epi : NULL) == 0;
                /* packed for another CPU (an executable file): plain path */
                if (!done && !ws && !(ws = poprt__fast_gemm_ws(k, 0, 0, p->Mg, g->out_sz, p->Kc)))
                    return poprt__ref_oom(k);
                if (done)
                    continue;
            }
            poprt__fast_gemm(k, ws, 0, 0, p->Mg, g->out_sz, p->Kc, 1.0f, wg, p->Kc, B, g->out_sz,
                             beta, yg, g->out_sz);
            if (epilogue) {
                poprt__kctx_parallel_for(k, p->Mg, poprt__ref_grain(g->out_sz, 1 << 14),
                                         conv_epi_task_fn, &et);
            }
        }
    }
    return POPRT_OK;
}

/* NCHW16c (lib/compiler/layout.c): channel c of position q of image n at
 * ((n * C/16 + c/16) * HW + q) * 16 + c % 16. C must be a multiple of 16. */
static void nchw16c_from_nchw(const float *src, int64_t N, int64_t C, int64_t HW, float *dst)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t q = 0; q < HW; q++)
                dst[((n * C + (c & ~(int64_t)15)) * HW + q * 16) + (c & 15)] =
                    src[(n * C + c) * HW + q];
}

static void nchw16c_to_nchw(const float *src, int64_t N, int64_t C, int64_t HW, float *dst)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t q = 0; q < HW; q++)
                dst[(n * C + c) * HW + q] =
                    src[((n * C + (c & ~(int64_t)15)) * HW + q * 16) + (c & 15)];
}

/* Whether node attribute `name` asks for NCHW16c. */
static int layout_blocked(const poprt__node *n, const char *name)
{
    return strcmp(poprt__attr_s(n, name, "NCHW"), "NCHW16c") == 0;
}

/* A convolution with an NCHW16c input or output: the blocked path reads
 * and writes that layout directly; where it cannot run (an executable file
 * loaded on a CPU without AVX-512), the operands are converted around the
 * plain paths, which gives the same results. */
static poprt_status conv_layout(poprt__kctx *k, const conv_plan *p, const float *x,
                                const float *w, const float *b, float *y)
{
    const poprt__geom3 *g = &p->g;
    if ((p->xblk && p->C % 16) || (p->yblk && p->M % 16) || g->out[0] != 1 || g->in[0] != 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "NCHW16c needs 2-D tensors with channels in blocks of 16 (X "
                               "has %lld, Y %lld)",
                               (long long)p->C, (long long)p->M);
    int64_t w_group;
    const float *packed = convb_state(k, p, &w_group);
    if (packed)
        return conv_blocked(k, p, x, b, packed, w_group, y);
    conv_plan q = *p;
    q.xblk = q.yblk = 0;
    const size_t xn = (size_t)(p->N * p->C * g->in_sz), yn = (size_t)(p->N * p->M * g->out_sz);
    float *xs = p->xblk ? poprt__kctx_scratch(k, xn * sizeof(float)) : NULL;
    float *ys = p->yblk ? poprt__kctx_scratch(k, yn * sizeof(float)) : NULL;
    float *zs = p->yblk && p->z ? poprt__kctx_scratch(k, yn * sizeof(float)) : NULL;
    if ((p->xblk && !xs) || (p->yblk && !ys) || (p->yblk && p->z && !zs))
        return poprt__ref_oom(k);
    if (xs)
        nchw16c_to_nchw(x, p->N, p->C, g->in_sz, xs);
    if (zs) {
        nchw16c_to_nchw(p->z, p->N, p->M, g->out_sz, zs);
        q.z = zs;
    }
    poprt_status st = conv_f32(k, &q, xs ? xs : x, w, b, ys ? ys : y);
    if (!st && ys)
        nchw16c_from_nchw(ys, p->N, p->M, g->out_sz, y);
    return st;
}

/* Conv weights packed once when the session is compiled: the blob is a
 * header {magic, groups, rows per group, bytes per group} then one packed
 * A operand per group (the GEMM's own position-independent format); for
 * convs of the direct path, a header {magic, groups, rows per group, bytes
 * per group, channels per group, taps, GEMM variant index, NR << 16 | MR}
 * then per group the panels conv_direct reads (checked against the running
 * CPU's variant list when an executable file is loaded). */
/* The micro-kernel for a conv's weights: among the usable variants of the
 * best one's ISA level (their speeds differ by a few percent), the one
 * whose tiles cover M output channels x N positions with the least padding
 * (M = 16: 14-row tiles compute 28 rows, 6-row tiles 18). */
static double conv_tile_cost(const poprt__sgemm_variant *v, int64_t M, int64_t N)
{
    return (double)(poprt__ceil_div(M, v->mr) * v->mr) * (double)(poprt__ceil_div(N, v->nr) * v->nr);
}

static const poprt__sgemm_variant *conv_variant(int64_t M, int64_t N)
{
    const poprt__sgemm_variant *pick = poprt__sgemm_best();
    for (int i = 0; i < poprt__sgemm_n_variants; i++) {
        const poprt__sgemm_variant *v = &poprt__sgemm_variants[i];
        /* a clear gain only */
        if (v->isa == pick->isa && poprt__sgemm_usable(v) &&
            conv_tile_cost(v, M, N) < 0.97 * conv_tile_cost(pick, M, N))
            pick = v;
    }
    return pick;
}

poprt_status poprt__ref_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in < 2 || !c->in[1].type || !c->in[1].data || c->in[1].type->elem != POPRT_DTYPE_FLOAT ||
        c->n_out < 1 || c->out[0].kind != POPRT__KIND_TENSOR || c->out[0].rank < 3)
        return POPRT_OK;
    const poprt__type *wt = c->in[1].type;
    int64_t wnum = poprt__type_numel(wt), out_sz = 1;
    if (wnum <= 0 || wt->rank < 3)
        return POPRT_OK;
    for (int d = 2; d < c->out[0].rank; d++) {
        if (c->out[0].dims[d].value < 0)
            return POPRT_OK;
        out_sz *= c->out[0].dims[d].value;
    }
    const int64_t M = wt->dims[0].value, G = poprt__attr_i(c->node, "group", 1);
    if (M <= 0 || G <= 0 || M % G)
        return POPRT_OK;
    const int64_t Mg = M / G, Kc = wnum / M, Cg = wt->dims[1].value;
    if ((Cg == 1 && G > 1) || !poprt__fast_gemm_fits(Mg, out_sz, Kc))
        return POPRT_OK; /* depthwise, or shapes the GEMM hands to the reference */
    const poprt__type *xt = c->in[0].type;
    const poprt__sgemm_variant *v = conv_variant(Mg, out_sz); /* direct and tiled paths */
    if (xt && xt->rank == 4 && wt->rank == 4 && G == 1 && avx512_usable()) {
        int64_t in_sp[2] = {xt->dims[2].value, xt->dims[3].value};
        int64_t ker[2] = {wt->dims[2].value, wt->dims[3].value};
        poprt__nn_geom gg;
        poprt__geom3 g3;
        /* 1x1 convs stay on the GEMM paths: with no taps to share the
         * input's blocking and the output's transposition, those cost more
         * than they save (resnet50's 1x1 convs 0.85x slower blocked) */
        /* (unless an operand is NCHW16c, lib/compiler/layout.c: then there
         * is neither) */
        const int blk = layout_blocked(c->node, "x_layout") || layout_blocked(c->node, "y_layout");
        if (in_sp[0] > 0 && in_sp[1] > 0 &&
            poprt__nn_window_geom(c->node, 2, in_sp, ker, 0, &gg) == POPRT_OK &&
            poprt__geom3_lift(&gg, &g3) && convb_fits(&g3, G) && (g3.k_sz > 1 || blk))
            return convb_pack(c->in[1].data, M, Cg, ker[0], ker[1], state, size);
    }
    if (wt->rank <= 4 && conv_trans_fits(G, M, Kc, out_sz)) {
        /* small images: W^T as the GEMM's pre-packed B operand */
        const size_t per = (poprt__sgemm_pack_b_size(NULL, Kc, M) + 63) & ~(size_t)63;
        if (per) {
            const size_t total = CONV_PACK_HEADER + per;
            unsigned char *blob = poprt__aligned_alloc(total);
            if (!blob)
                return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
            memset(blob, 0, total);
            uint64_t h[4] = {CONV_TRANS_MAGIC, (uint64_t)M, (uint64_t)Kc, per};
            memcpy(blob, h, sizeof h);
            poprt__sgemm_pack_b(NULL, NULL, 1, Kc, M, c->in[1].data, Kc, blob + CONV_PACK_HEADER);
            *state = blob;
            *size = total;
            return POPRT_OK;
        }
    }
    if (xt && xt->rank == wt->rank && wt->rank - 2 <= 3) {
        /* stride-1 convs of the direct path: weights per MR-row panel and tap */
        const int nsp = wt->rank - 2;
        int64_t in_sp[3], ker[3];
        int known = 1;
        for (int i = 0; i < nsp; i++) {
            in_sp[i] = xt->dims[2 + i].value;
            ker[i] = wt->dims[2 + i].value;
            known &= in_sp[i] >= 0 && ker[i] > 0;
        }
        poprt__nn_geom gg;
        poprt__geom3 g3;
        if (known && poprt__nn_window_geom(c->node, nsp, in_sp, ker, 0, &gg) == POPRT_OK &&
            poprt__geom3_lift(&gg, &g3) && g3.k_sz * Cg == Kc && conv_direct_fits(&g3, Cg, v)) {
            const int64_t MR = v->mr, panels = (Mg + MR - 1) / MR, ksz = g3.k_sz;
            const size_t per = ((size_t)(panels * MR * Kc) * sizeof(float) + 63) & ~(size_t)63;
            const size_t total = CONV_PACK_HEADER + per * (size_t)G;
            float *blob = poprt__aligned_alloc(total);
            if (!blob)
                return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
            memset(blob, 0, total);
            uint64_t h[8] = {CONV_DIRECT_MAGIC, (uint64_t)G, (uint64_t)Mg, per, (uint64_t)Cg,
                             (uint64_t)ksz, (uint64_t)(v - poprt__sgemm_variants),
                             (uint64_t)v->nr << 16 | (uint64_t)MR};
            memcpy(blob, h, sizeof h);
            const float *w = c->in[1].data;
            for (int64_t gi = 0; gi < G; gi++) {
                float *dst = (float *)((unsigned char *)blob + CONV_PACK_HEADER + per * (size_t)gi);
                for (int64_t m = 0; m < Mg; m++)
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t t = 0; t < ksz; t++)
                            dst[(conv_direct_taps(v, ksz) ? ((m / MR) * Cg + ci) * ksz + t
                                             : ((m / MR) * ksz + t) * Cg + ci) *
                                    MR + m % MR] =
                                w[((gi * Mg + m) * Cg + ci) * ksz + t];
            }
            *state = blob;
            *size = total;
            return POPRT_OK;
        }
    }
    const size_t per = (poprt__sgemm_pack_a_size(v, Mg, Kc) + 63) & ~(size_t)63;
    if (!per)
        return POPRT_OK;
    size_t total = CONV_PACK_HEADER + per * (size_t)G;
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    memset(blob, 0, total);
    uint64_t h[4] = {CONV_PACK_MAGIC, (uint64_t)G, (uint64_t)Mg, per};
    memcpy(blob, h, sizeof h);
    const float *w = c->in[1].data;
    for (int64_t gi = 0; gi < G; gi++)
        poprt__sgemm_pack_a(v, NULL, 0, Mg, Kc, w + gi * Mg * Kc, Kc,
                            blob + CONV_PACK_HEADER + (size_t)gi * per);
    *state = blob;
    *size = total;
    return POPRT_OK;
}

static poprt_status conv_f64(poprt__kctx *k, const conv_plan *p, const double *x,
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

poprt_status poprt__ref_conv(poprt__kctx *k)
{
    conv_plan p;
    poprt_status st = conv_setup(k, 0, &p);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (y->numel == 0)
        return POPRT_OK;
    if (x->dtype == POPRT_DTYPE_DOUBLE)
        return conv_f64(k, &p, x->data, w->data, b ? b->data : NULL, y->data);
    const float *xf = poprt__ref_in_f32(k, x), *wf = poprt__ref_in_f32(k, w),
                *bf = b ? poprt__ref_in_f32(k, b) : NULL;
    float *yf = poprt__ref_out_f32(k, y);
    if (!xf || !wf || (b && !bf) || !yf)
        return poprt__ref_oom(k);
    if ((st = conv_f32(k, &p, xf, wf, bf, yf)))
        return st;
    poprt__ref_store_f32(y, yf);
    return POPRT_OK;
}

/* ai.poprt FusedConv (lib/compiler/fuse_conv.c): Conv plus its epilogue
 * Y = fp8(post(act(conv(X, W) + B + Z))), float32, on the same paths as Conv. */
poprt_status poprt__ref_poprt_fused_conv(poprt__kctx *k)
{
    static const struct {
        const char *name;
        int act;
        float a, b; /* defaults of activation_alpha / activation_beta */
    } acts[] = {
        {"", CONV_ACT_NONE, 0.0f, 0.0f},
        {"Relu", CONV_ACT_RELU, 0.0f, 0.0f},
        {"Clip", CONV_ACT_CLIP, -INFINITY, INFINITY},
        {"LeakyRelu", CONV_ACT_LEAKY, 0.01f, 0.0f},
        {"Sigmoid", CONV_ACT_SIGMOID, 0.0f, 0.0f},
        {"HardSigmoid", CONV_ACT_HSIGMOID, 0.2f, 0.5f},
        {"HardSwish", CONV_ACT_HSWISH, 0.0f, 0.0f},
    };
    conv_plan p;
    poprt_status st = conv_setup(k, 0, &p);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    const poprt__tval *z = poprt__kin(k, 3);
    poprt__tval *y = poprt__kout(k, 0);
    if (x->dtype != POPRT_DTYPE_FLOAT || w->dtype != POPRT_DTYPE_FLOAT ||
        (b && b->dtype != POPRT_DTYPE_FLOAT) || (z && z->dtype != POPRT_DTYPE_FLOAT))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "FusedConv takes float32 X, W, B and Z");
    if (z && (z->rank != y->rank || memcmp(z->dims, y->dims, sizeof(int64_t) * (size_t)y->rank)))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "Z must have the shape of Y");
    const char *act = poprt__attr_s(k->node, "activation", "");
    size_t i = 0;
    while (i < sizeof acts / sizeof acts[0] && strcmp(acts[i].name, act) != 0)
        i++;
    if (i == sizeof acts / sizeof acts[0])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "unknown activation '%s'",
                               act);
    p.act = acts[i].act;
    p.act_a = poprt__attr_f(k->node, "activation_alpha", acts[i].a);
    p.act_b = poprt__attr_f(k->node, "activation_beta", acts[i].b);
    p.z = z ? z->data : NULL;
    p.xblk = layout_blocked(k->node, "x_layout");
    p.yblk = layout_blocked(k->node, "y_layout");
    const char *fp8 = poprt__attr_s(k->node, "y_fp8", "");
    if (*fp8) {
        if (strcmp(fp8, "float8e4m3fn") != 0 && strcmp(fp8, "float8e5m2") != 0)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                                   "y_fp8 '%s' is not float8e4m3fn or float8e5m2", fp8);
        p.fp8 = strcmp(fp8, "float8e5m2") == 0 ? 2 : 1;
        p.fp8_scale = poprt__attr_f(k->node, "y_fp8_scale", 1.0f);
        p.fp8_zp = poprt__attr_i(k->node, "y_fp8_zero_point", 0) != 0;
    }
    const poprt__vmath_variant *vm = poprt__vmath_best();
    p.vm = vm;
    static const char *const post_attrs[4] = {"post_ops", "post_reverse", "post_alpha",
                                               "post_beta"};
    if ((st = poprt__ew_scalar_read(k->node, post_attrs, p.post, &p.n_post)))
        return st;
    static const int vm_index[] = {
        [CONV_ACT_RELU] = POPRT__VMATH_relu,       [CONV_ACT_CLIP] = POPRT__VMATH_clip,
        [CONV_ACT_LEAKY] = POPRT__VMATH_leaky_relu, [CONV_ACT_SIGMOID] = POPRT__VMATH_sigmoid,
        [CONV_ACT_HSIGMOID] = POPRT__VMATH_hard_sigmoid,
        [CONV_ACT_HSWISH] = POPRT__VMATH_hard_swish};
    p.add_fn = vm->binary[POPRT__VMATH_add];
    p.act_fn = p.act != CONV_ACT_NONE ? vm->unary[vm_index[p.act]] : NULL;
    p.act_p.alpha = p.act_a;
    p.act_p.beta = p.act_b;
    p.act_p.gamma = 0.0f;
    if (y->numel == 0)
        return POPRT_OK;
    return conv_f32(k, &p, x->data, w->data, b ? b->data : NULL, y->data);
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

/* A transposed convolution whose kernel equals its stride, without padding
 * or dilation (out = in * stride): every output element takes exactly one
 * product sum, from one input position and one kernel tap (the 2x2 / 2
 * upsampling of detection heads). */
static int tconv_patches(const poprt__geom3 *g)
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

poprt_status poprt__conv_transpose_op(poprt__kctx *k, const poprt__gemm_engine *e)
{
    conv_plan p;
    poprt_status st = conv_setup(k, 1, &p);
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
    const int patches = !dbl && tconv_patches(g);
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
                    tconv_scatter_task t = {col, g, bf ? bf + gi * p.Mg : NULL, r0, r1, npos,
                                            yf + (n * p.M + gi * p.Mg) * g->out_sz};
                    poprt__kctx_parallel_for(k, p.Mg, poprt__ref_grain(g->k_sz * npos, 1 << 14),
                                             tconv_scatter_fn, &t);
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
 * Pools
 * ==================================================================== */

enum { POOL_MAX, POOL_AVG, POOL_LP };

typedef struct pool_task {
    poprt__geom3 g;
    int kind, count_include_pad, storage_order;
    float p;
    const float *x;
    float *y;
    int64_t *ind;
} pool_task;

/* 2-D max pooling without indices or dilation, the common CNN case: the
 * kernel-height maximum of whole input rows first (contiguous, vectorised),
 * then the kernel-width maximum at the strided positions (stride 2: even
 * and odd lanes split with shuffles, 16 outputs at a time). Same result as
 * the generic loop: max is exact and NaN-free inputs compare the same way;
 * a plane holding a NaN takes the generic loop (pool_task_fn), whose
 * first-element rule decides where NaN wins. */
/* Row width maxpool2d_plane needs: the input row with a -inf border on
 * both sides covering every window, plus room for whole 16-lane blocks. */
static int64_t maxpool2d_row(const poprt__geom3 *g)
{
    const int64_t need = (g->out[2] - 1) * g->s[2] + g->k[2];
    return (need > g->pb[2] + g->in[2] ? need : g->pb[2] + g->in[2]) + 1 + 2 * 16 + 16;
}

typedef float mp_v16 __attribute__((vector_size(64)));
typedef int mp_i16 __attribute__((vector_size(64)));

/* *v = p[0], p[2], ..., p[30] */
static inline __attribute__((always_inline)) void mp_even16(const float *p, mp_v16 *v)
{
    mp_v16 lo, hi;
    memcpy(&lo, p, sizeof lo);
    memcpy(&hi, p + 16, sizeof hi);
    *v = POPRT__EVEN16(lo, hi, mp_i16);
}

/* Compiled for each vector width the CPU may have and picked by the loader
 * from the CPU's features (POPRT_ISA does not cap it: max is exact, so every
 * clone gives the same result). Returns 0 when a window holds a NaN; what it
 * wrote is then overwritten by the generic loop. */
POPRT__CLONES
static int maxpool2d_plane(const poprt__geom3 *g, const float *xp, float *yp, float *rowmax)
{
    const int64_t IH = g->in[1], IW = g->in[2], OH = g->out[1], OW = g->out[2];
    const int64_t KH = g->k[1], KW = g->k[2], SH = g->s[1], SW = g->s[2], PH = g->pb[1],
                  PW = g->pb[2], RW = maxpool2d_row(g);
    /* NaN check over the rows the windows read (no early exit, so it
     * vectorises; elements outside every window cannot reach the output) */
    int ok = 1;
    /* max over the window rows, then over the columns of the -inf-bordered
     * row, both vectorisable */
    float *restrict r = rowmax;
    for (int64_t w = 0; w < RW; w++)
        r[w] = -INFINITY;
    for (int64_t oh = 0; oh < OH; oh++) {
        int64_t h0 = oh * SH - PH, h1 = h0 + KH;
        if (h0 < 0)
            h0 = 0;
        if (h1 > IH)
            h1 = IH;
        float *restrict rm = r + PW;
        const float *restrict row0 = xp + h0 * IW;
        for (int64_t w = 0; w < IW; w++) {
            rm[w] = row0[w];
            ok &= row0[w] == row0[w];
        }
        for (int64_t h = h0 + 1; h < h1; h++) {
            const float *restrict row = xp + h * IW;
            for (int64_t w = 0; w < IW; w++) {
                rm[w] = row[w] > rm[w] ? row[w] : rm[w];
                ok &= row[w] == row[w];
            }
        }
        float *restrict yr = yp + oh * OW;
        int64_t ow0 = 0;
        if (SW == 2) {
            for (; ow0 + 16 <= OW; ow0 += 16) {
                mp_v16 m, e;
                mp_even16(r + 2 * ow0, &m);
                for (int64_t kw = 1; kw < KW; kw++) {
                    mp_even16(r + 2 * ow0 + kw, &e);
                    const mp_i16 gt = e > m;
                    m = (mp_v16)(((mp_i16)e & gt) | ((mp_i16)m & ~gt));
                }
                memcpy(yr + ow0, &m, sizeof m);
            }
        }
        for (int64_t ow = ow0; ow < OW; ow++)
            yr[ow] = r[ow * SW];
        for (int64_t kw = 1; kw < KW; kw++) {
            const float *restrict rk = r + kw;
            if (SW == 1) {
                for (int64_t ow = ow0; ow < OW; ow++)
                    yr[ow] = rk[ow] > yr[ow] ? rk[ow] : yr[ow];
            } else {
                for (int64_t ow = ow0; ow < OW; ow++)
                    yr[ow] = rk[ow * SW] > yr[ow] ? rk[ow * SW] : yr[ow];
            }
        }
    }
    return ok;
}

static void pool_task_fn(void *ctx, int64_t q0, int64_t q1);

typedef struct maxpool2d_task {
    const pool_task *pool; /* the generic loop, for planes holding a NaN */
    float *scratch;        /* one row per chunk start: indexed by plane */
    int64_t row;           /* floats per row */
    int avx512;            /* poprt__maxpool2d_plane_avx512 */
    poprt__maxpool2d_geom xg;
} maxpool2d_task;

static void maxpool2d_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const maxpool2d_task *t = ctx;
    const poprt__geom3 *g = &t->pool->g;
    float *rowmax = t->scratch + q0 * t->row;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->pool->x + q * g->in_sz;
        float *yp = t->pool->y + q * g->out_sz;
        const int ok = t->avx512 ? poprt__maxpool2d_plane_avx512(&t->xg, xp, yp, rowmax)
                                 : maxpool2d_plane(g, xp, yp, rowmax);
        if (!ok)
            pool_task_fn((void *)t->pool, q, q + 1);
    }
}

static void pool_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const pool_task *t = ctx;
    const poprt__geom3 *g = &t->g;
    const int lp2 = t->kind == POOL_LP && t->p == 2.0f;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        float *yp = t->y + q * g->out_sz;
        int64_t *ip = t->ind ? t->ind + q * g->out_sz : NULL;
        for (int64_t od = 0; od < g->out[0]; od++)
            for (int64_t oh = 0; oh < g->out[1]; oh++)
                for (int64_t ow = 0; ow < g->out[2]; ow++) {
                    const int64_t sd = od * g->s[0] - g->pb[0], sh = oh * g->s[1] - g->pb[1],
                                  sw = ow * g->s[2] - g->pb[2];
                    float best = -INFINITY;
                    int64_t best_i = -1;
                    double sum = 0.0;
                    int64_t cnt = 0, cnt_pad = 1;
                    if (t->kind == POOL_AVG && t->count_include_pad) {
                        /* taps inside the padded extent [-pb, in + pe) */
                        const int64_t st[3] = {sd, sh, sw};
                        for (int a = 0; a < 3; a++) {
                            int64_t c = 0;
                            for (int64_t kk = 0; kk < g->k[a]; kk++) {
                                int64_t pos = st[a] + kk * g->d[a];
                                c += pos >= -g->pb[a] && pos < g->in[a] + g->pe[a];
                            }
                            cnt_pad *= c;
                        }
                    }
                    for (int64_t kd = 0; kd < g->k[0]; kd++) {
                        const int64_t id = sd + kd * g->d[0];
                        if (id < 0 || id >= g->in[0])
                            continue;
                        for (int64_t kh = 0; kh < g->k[1]; kh++) {
                            const int64_t ih = sh + kh * g->d[1];
                            if (ih < 0 || ih >= g->in[1])
                                continue;
                            const float *row = xp + (id * g->in[1] + ih) * g->in[2];
                            for (int64_t kw = 0; kw < g->k[2]; kw++) {
                                const int64_t iw = sw + kw * g->d[2];
                                if (iw < 0 || iw >= g->in[2])
                                    continue;
                                const float v = row[iw];
                                if (t->kind == POOL_MAX) {
                                    if (v > best || best_i < 0) {
                                        best = v;
                                        best_i = t->storage_order
                                                     ? id + (ih + iw * g->in[1]) * g->in[0]
                                                     : (id * g->in[1] + ih) * g->in[2] + iw;
                                    }
                                } else if (t->kind == POOL_AVG) {
                                    sum += v;
                                    cnt++;
                                } else {
                                    const double a = fabs((double)v);
                                    sum += lp2 ? a * a : pow(a, t->p);
                                }
                            }
                        }
                    }
                    const int64_t o = (od * g->out[1] + oh) * g->out[2] + ow;
                    if (t->kind == POOL_MAX) {
                        yp[o] = best;
                        if (ip)
                            ip[o] = best_i < 0 ? -1 : q * g->in_sz + best_i;
                    } else if (t->kind == POOL_AVG) {
                        int64_t div = t->count_include_pad ? cnt_pad : cnt;
                        yp[o] = div > 0 ? (float)(sum / (double)div) : 0.0f;
                    } else {
                        yp[o] = (float)(lp2 ? sqrt(sum) : pow(sum, 1.0 / t->p));
                    }
                }
    }
}

static poprt_status pool_run(poprt__kctx *k, int kind)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0), *ind = poprt__kout(k, 1);
    if (!x || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X or Y");
    if (x->rank < 3)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X must have rank >= 3, has %d", x->rank);
    const int nsp = x->rank - 2;
    poprt__nn_geom gg;
    /* ceil_mode exists for MaxPool/AveragePool >= 10 and LpPool >= 18 */
    int allow_ceil = kind == POOL_LP ? k->opset >= 18 : k->opset >= 10;
    poprt_status st = poprt__nn_window_geom(k->node, nsp, x->dims + 2, NULL, allow_ceil, &gg);
    if (st)
        return st;
    pool_task t;
    memset(&t, 0, sizeof t);
    if (!poprt__geom3_lift(&gg, &t.g))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "more than 3 spatial axes are not supported");
    for (int i = 0; i < nsp; i++)
        if (y->dims[2 + i] != gg.out[i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape mismatch on axis %d", 2 + i);
    t.kind = kind;
    t.count_include_pad = (int)poprt__attr_i(k->node, "count_include_pad", 0);
    t.storage_order = (int)poprt__attr_i(k->node, "storage_order", 0);
    if (kind == POOL_LP) {
        /* p was a float attribute in LpPool-1, an int since 2 */
        const poprt__attr *pa = poprt__node_attr(k->node, "p");
        t.p = !pa ? 2.0f : pa->type == POPRT__ATTR_FLOAT ? pa->f : (float)pa->i;
    }
    if (y->numel == 0)
        return POPRT_OK;
    t.x = poprt__ref_in_f32(k, x);
    t.y = poprt__ref_out_f32(k, y);
    if (!t.x || !t.y)
        return poprt__ref_oom(k);
    if (ind) {
        if (ind->dtype != POPRT_DTYPE_INT64)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "Indices must be int64");
        t.ind = ind->data;
    }
    const int64_t planes = x->dims[0] * x->dims[1];
    int fast = kind == POOL_MAX && !ind && t.g.in[0] == 1 && t.g.k[0] == 1 && t.g.d[1] == 1 &&
               t.g.d[2] == 1 && x->dtype == POPRT_DTYPE_FLOAT;
    /* every window must hold at least one real element */
    for (int a = 1; fast && a < 3; a++)
        fast = t.g.pb[a] < t.g.k[a] && t.g.pe[a] < t.g.k[a];
    if (fast) {
        maxpool2d_task mt = {&t, NULL, maxpool2d_row(&t.g), avx512_usable(),
                             {t.g.in[1], t.g.in[2], t.g.out[1], t.g.out[2], t.g.k[1], t.g.k[2],
                              t.g.s[1], t.g.s[2], t.g.pb[1], t.g.pb[2]}};
        if (mt.avx512)
            mt.row = poprt__maxpool2d_row_floats(&mt.xg);
        mt.scratch = poprt__kctx_scratch(k, (size_t)(planes * mt.row) * sizeof(float));
        if (!mt.scratch)
            return poprt__ref_oom(k);
        poprt__kctx_parallel_for(k, planes, poprt__ref_grain(t.g.out_sz * t.g.k_sz, 1 << 14),
                                 maxpool2d_task_fn, &mt);
    } else
        poprt__kctx_parallel_for(k, planes, poprt__ref_grain(t.g.out_sz * t.g.k_sz, 1 << 14),
                                 pool_task_fn, &t);
    poprt__ref_store_f32(y, t.y);
    return POPRT_OK;
}

poprt_status poprt__ref_maxpool(poprt__kctx *k) { return pool_run(k, POOL_MAX); }
poprt_status poprt__ref_averagepool(poprt__kctx *k) { return pool_run(k, POOL_AVG); }
poprt_status poprt__ref_lppool(poprt__kctx *k) { return pool_run(k, POOL_LP); }

/* ai.poprt BlockedMaxPool (lib/compiler/layout.c): MaxPool on NCHW16c
 * tensors, 2-D. Each output vector holds 16 channels of one position; the
 * window's taps are taken in MaxPool's order with its rule (the first tap
 * inside the input, then any greater value), so NaNs come out as the
 * generic loop gives them. */
typedef struct bmp_task {
    const poprt__geom3 *g;
    const float *x;
    float *y;
} bmp_task;

/* Taps k < K with k * d <= room (room >= 0): the window's end inside the
 * input. */
static inline int64_t bmp_taps(int64_t room, int64_t d, int64_t K)
{
    return room / d + 1 < K ? room / d + 1 : K;
}

POPRT__CLONES
static void bmp_rows(const poprt__geom3 *g, const float *x, float *y, int64_t r0, int64_t r1)
{
    const int64_t IH = g->in[1], IW = g->in[2], OH = g->out[1], OW = g->out[2];
    const int64_t KH = g->k[1], KW = g->k[2], DH = g->d[1], DW = g->d[2];
    const int k33 = KH == 3 && KW == 3;
    for (int64_t r = r0; r < r1; r++) { /* r = block * OH + oh */
        const int64_t blk = r / OH, oh = r % OH;
        const float *xb = x + blk * IH * IW * 16;
        float *yr = y + r * OW * 16;
        /* the taps inside the input: kh in [kh0, kh1), kw in [kw0, kw1) */
        const int64_t h0 = oh * g->s[1] - g->pb[1];
        const int64_t kh0 = h0 >= 0 ? 0 : (-h0 + DH - 1) / DH;
        const int64_t kh1 = h0 >= IH ? 0 : bmp_taps(IH - 1 - h0, DH, KH);
        for (int64_t ow = 0; ow < OW; ow++) {
            const int64_t w0 = ow * g->s[2] - g->pb[2];
            const int64_t kw0 = w0 >= 0 ? 0 : (-w0 + DW - 1) / DW;
            const int64_t kw1 = w0 >= IW ? 0 : bmp_taps(IW - 1 - w0, DW, KW);
            mp_v16 best = (mp_v16){0} - INFINITY;
            if (k33 && kh0 == 0 && kh1 == 3 && kw0 == 0 && kw1 == 3) {
                /* 3x3 inside the input (most windows): unrolled, same order */
                const float *xp = xb + (h0 * IW + w0) * 16;
                memcpy(&best, xp, sizeof best);
#pragma GCC unroll 9
                for (int t = 1; t < 9; t++) {
                    mp_v16 v;
                    memcpy(&v, xp + ((t / 3) * DH * IW + (t % 3) * DW) * 16, sizeof v);
                    const mp_i16 gt = v > best;
                    best = (mp_v16)(((mp_i16)v & gt) | ((mp_i16)best & ~gt));
                }
            } else if (kh0 < kh1 && kw0 < kw1) {
                const float *xp = xb + ((h0 + kh0 * DH) * IW + w0 + kw0 * DW) * 16;
                memcpy(&best, xp, sizeof best); /* the first tap, then greater values */
                for (int64_t kh = kh0; kh < kh1; kh++) {
                    const float *xr = xb + ((h0 + kh * DH) * IW + w0) * 16;
                    for (int64_t kw = kh == kh0 ? kw0 + 1 : kw0; kw < kw1; kw++) {
                        mp_v16 v;
                        memcpy(&v, xr + kw * DW * 16, sizeof v);
                        const mp_i16 gt = v > best;
                        best = (mp_v16)(((mp_i16)v & gt) | ((mp_i16)best & ~gt));
                    }
                }
            }
            memcpy(yr + ow * 16, &best, sizeof best);
        }
    }
}

static void bmp_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const bmp_task *t = ctx;
    bmp_rows(t->g, t->x, t->y, r0, r1);
}

poprt_status poprt__ref_poprt_blocked_maxpool(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X or Y");
    if (x->dtype != POPRT_DTYPE_FLOAT || x->rank != 4 || x->dims[1] % 16 || y->rank != 4)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "BlockedMaxPool takes float32 NCHW16c tensors of rank 4 with "
                               "channels in blocks of 16");
    poprt__nn_geom gg;
    poprt__geom3 g;
    poprt_status st = poprt__nn_window_geom(k->node, 2, x->dims + 2, NULL, 1, &gg);
    if (st)
        return st;
    if (!poprt__geom3_lift(&gg, &g) || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1] ||
        y->dims[2] != gg.out[0] || y->dims[3] != gg.out[1])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output shape mismatch");
    if (y->numel == 0)
        return POPRT_OK;
    bmp_task t = {&g, x->data, y->data};
    const int64_t rows = x->dims[0] * (x->dims[1] / 16) * g.out[1];
    poprt__kctx_parallel_for(k, rows, poprt__ref_grain(g.out[2] * 16 * g.k_sz, 1 << 14),
                             bmp_task_fn, &t);
    return POPRT_OK;
}

typedef struct gpool_task {
    int kind;
    float p;
    int64_t sp;
    const float *x;
    float *y;
} gpool_task;

static void gpool_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const gpool_task *t = ctx;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * t->sp;
        if (t->kind == POOL_MAX) {
            float m = t->sp > 0 ? xp[0] : -INFINITY;
            for (int64_t i = 1; i < t->sp; i++)
                m = xp[i] > m ? xp[i] : m;
            t->y[q] = m;
        } else if (t->kind == POOL_AVG) {
            /* float lanes of partial sums keep this vectorised; the order
             * is fixed, so results stay deterministic */
            float part[8] = {0};
            int64_t i = 0;
            for (; i + 8 <= t->sp; i += 8)
                for (int j = 0; j < 8; j++)
                    part[j] += xp[i + j];
            double s = 0.0;
            for (int j = 0; j < 8; j++)
                s += part[j];
            for (; i < t->sp; i++)
                s += xp[i];
            t->y[q] = t->sp > 0 ? (float)(s / (double)t->sp) : 0.0f;
        } else {
            double s = 0.0;
            for (int64_t i = 0; i < t->sp; i++) {
                double a = fabs((double)xp[i]);
                s += t->p == 2.0f ? a * a : pow(a, t->p);
            }
            t->y[q] = (float)(t->p == 2.0f ? sqrt(s) : pow(s, 1.0 / t->p));
        }
    }
}

static poprt_status gpool_run(poprt__kctx *k, int kind)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "X must have rank >= 2");
    gpool_task t = {kind, 2.0f, poprt__ref_prod64(x->dims + 2, x->rank - 2), NULL, NULL};
    if (kind == POOL_LP) {
        const poprt__attr *pa = poprt__node_attr(k->node, "p");
        t.p = !pa ? 2.0f : pa->type == POPRT__ATTR_FLOAT ? pa->f : (float)pa->i;
    }
    if (y->numel == 0)
        return POPRT_OK;
    t.x = poprt__ref_in_f32(k, x);
    t.y = poprt__ref_out_f32(k, y);
    if (!t.x || !t.y)
        return poprt__ref_oom(k);
    poprt__kctx_parallel_for(k, x->dims[0] * x->dims[1], poprt__ref_grain(t.sp, 1 << 14),
                             gpool_task_fn, &t);
    poprt__ref_store_f32(y, t.y);
    return POPRT_OK;
}

poprt_status poprt__ref_global_averagepool(poprt__kctx *k) { return gpool_run(k, POOL_AVG); }
poprt_status poprt__ref_global_maxpool(poprt__kctx *k) { return gpool_run(k, POOL_MAX); }
poprt_status poprt__ref_global_lppool(poprt__kctx *k) { return gpool_run(k, POOL_LP); }

poprt_status poprt__ref_maxunpool(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ind = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ind || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X, I or Y");
    if (ind->numel != x->numel || x->rank < 3 || y->rank != x->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "I must match X (rank >= 3) and Y must have X's rank");
    /* Indices address the default output shape (what MaxPool saw); an
     * explicit output_shape only moves the same coordinates into a larger
     * tensor. */
    const int nsp = x->rank - 2;
    int64_t ks[POPRT__MAX_RANK], s[POPRT__MAX_RANK], pads[2 * POPRT__MAX_RANK];
    poprt_status st;
    if ((st = poprt__attr_ints_n(k->node, "kernel_shape", nsp, 1, ks)) ||
        (st = poprt__attr_ints_n(k->node, "strides", nsp, 1, s)) ||
        (st = poprt__attr_ints_n(k->node, "pads", 2 * nsp, 0, pads)))
        return st;
    int64_t def[POPRT__MAX_RANK];
    def[0] = x->dims[0];
    def[1] = x->dims[1];
    for (int i = 0; i < nsp; i++)
        def[2 + i] = (x->dims[2 + i] - 1) * s[i] + ks[i] - pads[i] - pads[nsp + i];
    int same = 1;
    for (int i = 0; i < x->rank; i++)
        same &= def[i] == y->dims[i];
    const int64_t def_numel = poprt__ref_prod64(def, x->rank);
    const size_t esz = poprt_dtype_size((poprt_dtype)y->dtype);
    memset(y->data, 0, y->nbytes);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t j = poprt__load_i64(ind->data, ind->dtype, i);
        if (j < 0 || j >= def_numel)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "index %lld out of range [0, %lld)", (long long)j,
                                   (long long)def_numel);
        if (!same) {
            int64_t o = 0, mul = 1, r = j;
            for (int d = x->rank - 1; d >= 0; d--) {
                int64_t cd = r % def[d];
                r /= def[d];
                if (cd >= y->dims[d])
                    return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                           "index %lld falls outside output_shape",
                                           (long long)j);
                o += cd * mul;
                mul *= y->dims[d];
            }
            j = o;
        }
        memcpy((char *)y->data + (size_t)j * esz, (const char *)x->data + (size_t)i * esz, esz);
    }
    return POPRT_OK;
}
