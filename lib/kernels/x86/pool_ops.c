/* MaxPool and BlockedMaxPool as the registry runs them (and the Reduce*
 * ops, whose adding float32 reductions over trailing axes run here): MaxPool is the
 * operator of lib/kernels/ref (poprt__pool_op) with a fast path for the
 * common 2-D windows; BlockedMaxPool, which the layout pass makes, works on
 * NCHW16c tensors only. */
#include <math.h>
#include <string.h>
#include "kernels/ref/pool.h"
#include "kernels/ref/reduce.h"
#include "kernels/ref/util.h"
#include "kernels/x86/cpu.h"
#include "kernels/x86/pool.h"
#include "kernels/x86/pool_ops.h"

/* 2-D max pooling without indices or dilation, the common CNN case, on
 * the best plane function of the CPU's (pool.h: the first usable of
 * pool_kernels.inc). Same result as the generic loop: max is exact and
 * NaN-free inputs compare the same way; a plane holding a NaN takes the
 * generic loop (poprt__pool_planes), whose first-element rule decides where
 * NaN wins. */
typedef struct maxpool2d_task {
    const poprt__pool_task *pool; /* the generic loop, for planes holding a NaN */
    float *scratch;        /* one row per chunk start: indexed by plane */
    int64_t row;           /* floats per row */
    const poprt__maxpool_variant *v;
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
        if (!t->v->plane(&t->xg, xp, yp, rowmax))
            poprt__pool_planes((void *)t->pool, q, q + 1);
    }
}

/* poprt__pool_op's fast path for MaxPool: 2-D windows without dilation or
 * indices, float32, each window holding at least one element of the plane. */
static poprt_status maxpool_fast(poprt__kctx *k, const poprt__pool_task *t, const poprt__tval *x,
                                 const poprt__tval *ind, int *done)
{
    const int64_t planes = x->dims[0] * x->dims[1];
    int fast = t->kind == POPRT__POOL_MAX && !ind && t->g.in[0] == 1 && t->g.k[0] == 1 &&
               t->g.d[1] == 1 && t->g.d[2] == 1 && x->dtype == POPRT_DTYPE_FLOAT;
    /* every window must hold at least one real element */
    for (int a = 1; fast && a < 3; a++)
        fast = t->g.pb[a] < t->g.k[a] && t->g.pe[a] < t->g.k[a];
    if (!fast)
        return POPRT_OK;
    maxpool2d_task mt = {t, NULL, 0, poprt__maxpool_best(),
                         {t->g.in[1], t->g.in[2], t->g.out[1], t->g.out[2], t->g.k[1],
                          t->g.k[2], t->g.s[1], t->g.s[2], t->g.pb[1], t->g.pb[2]}};
    mt.row = mt.v->row_floats(&mt.xg);
    mt.scratch = poprt__kctx_scratch(k, (size_t)(planes * mt.row) * sizeof(float));
    if (!mt.scratch)
        return poprt__ref_oom(k);
    poprt__kctx_parallel_for(k, planes, poprt__ref_grain(t->g.out_sz * t->g.k_sz, 1 << 14),
                             maxpool2d_task_fn, &mt);
    *done = 1;
    return POPRT_OK;
}

poprt_status poprt__x86_maxpool(poprt__kctx *k)
{
    return poprt__pool_op(k, POPRT__POOL_MAX, maxpool_fast);
}


/* ai.poprt BlockedMaxPool (lib/compiler/layout.c): MaxPool on NCHW16c
 * tensors, 2-D, on the rows of the best maxpool variant (pool.h). */
typedef struct bmp_task {
    const poprt__geom3 *g;
    const float *x;
    float *y;
    const poprt__maxpool_variant *v;
} bmp_task;

static void bmp_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const bmp_task *t = ctx;
    t->v->blocked_rows(t->g, t->x, t->y, r0, r1);
}

poprt_status poprt__x86_blocked_maxpool(poprt__kctx *k)
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
    bmp_task t = {&g, x->data, y->data, poprt__maxpool_best()};
    const int64_t rows = x->dims[0] * (x->dims[1] / 16) * g.out[1];
    poprt__kctx_parallel_for(k, rows, poprt__ref_grain(g.out[2] * 16 * g.k_sz, 1 << 14),
                             bmp_task_fn, &t);
    return POPRT_OK;
}

/* ai.poprt BlockedAveragePool (lib/compiler/layout.c): AveragePool on
 * NCHW16c tensors, 2-D. Each output vector holds 16 channels of one
 * position, summed in double over the window's taps inside the input in
 * AveragePool's order and divided by what it divides by (the taps inside
 * the input, or with count_include_pad those inside the padded extent),
 * so results equal the generic loop's (poprt__pool_planes) bit for bit. */
typedef double ap_v4d __attribute__((vector_size(32)));
typedef float ap_v4f __attribute__((vector_size(16)));
typedef float ap_v8f __attribute__((vector_size(32)));
/* 16 channels' sums in double, 4 per vector (32-byte vectors: GCC kept
 * 64-byte ones of double on the stack in the AVX2 clones) */
typedef struct ap_acc {
    ap_v4d q[4];
} ap_acc;

typedef struct bap_task {
    const poprt__geom3 *g;
    int include_pad;
    const float *x;
    float *y;
} bap_task;

/* Taps k < K of a window starting at `start` (stride already applied)
 * whose position start + k * d lies in [lo, hi). */
static int64_t bap_count(int64_t start, int64_t d, int64_t K, int64_t lo, int64_t hi)
{
    int64_t c = 0;
    for (int64_t k = 0; k < K; k++)
        c += start + k * d >= lo && start + k * d < hi;
    return c;
}

/* 4 n floats at p added to the sums a->q[0 .. n) (n = 4: 16 channels). */
static inline __attribute__((always_inline)) void bap_add(ap_acc *a, const float *p, const int n)
{
#pragma GCC unroll 4
    for (int k = 0; k < n; k++) {
        ap_v4f f;
        memcpy(&f, p + 4 * k, sizeof f);
        a->q[k] += __builtin_convertvector(f, ap_v4d);
    }
}

/* (float)(sum / div) of a->q[0 .. n) into y[0 .. 4 n). (Vectors by
 * address: by value they would cross an ABI boundary in the portable
 * clones.) */
static inline __attribute__((always_inline)) void bap_store(const ap_acc *a, int64_t div,
                                                          float *y, const int n)
{
#pragma GCC unroll 4
    for (int k = 0; k < n; k++) {
        ap_v4f f = {0};
        if (div > 0)
            f = __builtin_convertvector(a->q[k] / ((ap_v4d){0} + (double)div), ap_v4f);
        memcpy(y + 4 * k, &f, sizeof f);
    }
}

POPRT__CLONES
static void bap_rows(const bap_task *t, int64_t r0, int64_t r1)
{
    const poprt__geom3 *g = t->g;
    const int64_t IH = g->in[1], IW = g->in[2], OH = g->out[1], OW = g->out[2];
    for (int64_t r = r0; r < r1; r++) { /* r = block * OH + oh */
        const int64_t blk = r / OH, oh = r % OH;
        const float *xb = t->x + blk * IH * IW * 16;
        float *yr = t->y + r * OW * 16;
        const int64_t h0 = oh * g->s[1] - g->pb[1];
        const int64_t rows_pad = bap_count(h0, g->d[1], g->k[1], -g->pb[1], IH + g->pe[1]);
        for (int64_t ow = 0; ow < OW; ow++) {
            const int64_t w0 = ow * g->s[2] - g->pb[2];
            ap_acc acc = {{{0}}};
            int64_t cnt = 0;
            for (int64_t kh = 0; kh < g->k[1]; kh++) {
                const int64_t ih = h0 + kh * g->d[1];
                if (ih < 0 || ih >= IH)
                    continue;
                for (int64_t kw = 0; kw < g->k[2]; kw++) {
                    const int64_t iw = w0 + kw * g->d[2];
                    if (iw < 0 || iw >= IW)
                        continue;
                    bap_add(&acc, xb + (ih * IW + iw) * 16, 4);
                    cnt++;
                }
            }
            const int64_t div =
                t->include_pad
                    ? rows_pad * bap_count(w0, g->d[2], g->k[2], -g->pb[2], IW + g->pe[2])
                    : cnt;
            bap_store(&acc, div, yr + ow * 16, 4);
        }
    }
}

static void bap_task_fn(void *ctx, int64_t r0, int64_t r1) { bap_rows(ctx, r0, r1); }

/* The checks both blocked average pools make of X and Y. */
static poprt_status blocked_avg_io(poprt__kctx *k, const char *op, const poprt__tval **x,
                                   poprt__tval **y)
{
    *x = poprt__kin(k, 0);
    *y = poprt__kout(k, 0);
    if (!*x || !*y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X or Y");
    if ((*x)->dtype != POPRT_DTYPE_FLOAT || (*x)->rank != 4 || (*x)->dims[1] % 16 ||
        (*y)->rank != 4 || (*y)->dtype != POPRT_DTYPE_FLOAT)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "%s takes float32 NCHW16c tensors of rank 4 with channels in "
                               "blocks of 16",
                               op);
    if ((*y)->dims[0] != (*x)->dims[0] || (*y)->dims[1] != (*x)->dims[1])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output shape mismatch");
    return POPRT_OK;
}

poprt_status poprt__x86_blocked_averagepool(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt__tval *y;
    poprt_status st = blocked_avg_io(k, "BlockedAveragePool", &x, &y);
    if (st)
        return st;
    poprt__nn_geom gg;
    poprt__geom3 g;
    if ((st = poprt__nn_window_geom(k->node, 2, x->dims + 2, NULL, 1, &gg)))
        return st;
    if (!poprt__geom3_lift(&gg, &g) || y->dims[2] != gg.out[0] || y->dims[3] != gg.out[1])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output shape mismatch");
    if (y->numel == 0)
        return POPRT_OK;
    bap_task t = {&g, (int)poprt__attr_i(k->node, "count_include_pad", 0), x->data, y->data};
    const int64_t rows = x->dims[0] * (x->dims[1] / 16) * g.out[1];
    poprt__kctx_parallel_for(k, rows, poprt__ref_grain(g.out[2] * 16 * g.k_sz, 1 << 14),
                             bap_task_fn, &t);
    return POPRT_OK;
}

/* ai.poprt BlockedGlobalAveragePool: GlobalAveragePool of an NCHW16c X
 * (Y [N, C, 1, 1] has the same bytes in either layout). Per channel it
 * sums as the generic kernel does (lib/kernels/ref/pool.c): 8 float
 * partial sums over the positions taken 8 at a time, those added in
 * double, then the remaining positions, divided in double: equal bit for
 * bit, 8 channels (half a block) at once. */

typedef struct bgap_task {
    int64_t sp; /* positions per channel */
    const float *x;
    float *y;
} bgap_task;

POPRT__CLONES
static void bgap_blocks(const bgap_task *t, int64_t b0, int64_t b1)
{
    const int64_t sp = t->sp;
    for (int64_t b = b0; b < b1; b++)
        for (int h = 0; h < 2; h++) { /* channels 8 h .. 8 h + 7 of the block */
            const float *xb = t->x + b * sp * 16 + 8 * h;
            ap_v8f part[8] = {{0}};
            int64_t i = 0;
            for (; i + 8 <= sp; i += 8)
#pragma GCC unroll 8
                for (int j = 0; j < 8; j++) {
                    ap_v8f v;
                    memcpy(&v, xb + (i + j) * 16, sizeof v);
                    part[j] += v;
                }
            ap_acc acc = {{{0}}};
#pragma GCC unroll 8
            for (int j = 0; j < 8; j++)
                bap_add(&acc, (const float *)&part[j], 2);
            for (; i < sp; i++)
                bap_add(&acc, xb + i * 16, 2);
            bap_store(&acc, sp, t->y + b * 16 + 8 * h, 2);
        }
}

static void bgap_task_fn(void *ctx, int64_t b0, int64_t b1) { bgap_blocks(ctx, b0, b1); }

poprt_status poprt__x86_blocked_global_averagepool(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt__tval *y;
    poprt_status st = blocked_avg_io(k, "BlockedGlobalAveragePool", &x, &y);
    if (st)
        return st;
    if (y->dims[2] != 1 || y->dims[3] != 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output shape mismatch");
    if (y->numel == 0)
        return POPRT_OK;
    bgap_task t = {x->dims[2] * x->dims[3], x->data, y->data};
    poprt__kctx_parallel_for(k, x->dims[0] * (x->dims[1] / 16),
                             poprt__ref_grain(t.sp * 16, 1 << 14), bgap_task_fn, &t);
    return POPRT_OK;
}

/* ---- Reduce* over trailing axes ---------------------------------------------
 * The float32 reductions that add (Sum, Mean, SumSquare, L1, L2) over the
 * last axes are rows of contiguous values: each row's sum in double, as the
 * reference sums, but in sixteen partial sums (two vectors of eight) added
 * in a fixed order, over the threads by rows (the reference's four partial
 * sums wait on the adds' latency: ReduceMean over the last two axes of
 * [8,256,64,64] took 1.77 ms against ONNX Runtime's 1.04). */
/* (32-byte vectors: GCC kept 64-byte ones of double on the stack in the
 * AVX2 clone, each add a round trip through memory) */
typedef double red_v4 __attribute__((vector_size(32)));
typedef float red_f4 __attribute__((vector_size(16)));
typedef long long red_i4 __attribute__((vector_size(32)));

/* *acc += the terms of p[0..4) in double: v * v (what 1), |v| (2: no
 * sign bit), or v. (Vectors by address, as bap_add.) */
static inline void red_add(red_v4 *acc, const float *p, int what)
{
    red_f4 f;
    memcpy(&f, p, sizeof f);
    red_v4 d = __builtin_convertvector(f, red_v4);
    if (what == 1)
        d *= d;
    else if (what == 2)
        d = (red_v4)((red_i4)d & ((red_i4){0} + 0x7fffffffffffffffLL));
    *acc += d;
}

typedef struct reduce_rows_task {
    const float *x;
    int64_t n;
    int what;
    double *acc;
} reduce_rows_task;

POPRT__CLONES
static void reduce_rows(const float *x, int64_t rows, int64_t n, int what, double *acc)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *p = x + r * n;
        /* sixteen partial sums: values j + 0..7 in s0 (lanes 0..3 in s0a,
         * 4..7 in s0b), j + 8..15 in s1 */
        red_v4 s0a = {0}, s0b = {0}, s1a = {0}, s1b = {0};
        int64_t j = 0;
        for (; j + 16 <= n; j += 16) {
            red_add(&s0a, p + j, what);
            red_add(&s0b, p + j + 4, what);
            red_add(&s1a, p + j + 8, what);
            red_add(&s1b, p + j + 12, what);
        }
        /* s0 += s1, then ((s0[0] + s0[4]) + (s0[1] + s0[5])) +
         * ((s0[2] + s0[6]) + (s0[3] + s0[7])) */
        const red_v4 t = (s0a + s1a) + (s0b + s1b);
        double s = (t[0] + t[1]) + (t[2] + t[3]);
        for (; j < n; j++) {
            const double v = p[j];
            s += what == 1 ? v * v : what == 2 ? fabs(v) : v;
        }
        acc[r] = s;
    }
}

static void reduce_rows_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const reduce_rows_task *t = ctx;
    reduce_rows(t->x + r0 * t->n, r1 - r0, t->n, t->what, t->acc + r0);
}

static void reduce_rows_mt(poprt__kctx *k, const float *x, int64_t rows, int64_t n, int what,
                           double *acc)
{
    reduce_rows_task t = {x, n, what, acc};
    poprt__kctx_parallel_for(k, rows, poprt__ref_grain(n, 1 << 15), reduce_rows_task_fn, &t);
}

poprt_status poprt__x86_reduce(poprt__kctx *k)
{
    return poprt__reduce_op(k, reduce_rows_mt);
}
