/* MaxPool and BlockedMaxPool as the registry runs them: MaxPool is the
 * operator of lib/kernels/ref (poprt__pool_op) with a fast path for the
 * common 2-D windows; BlockedMaxPool, which the layout pass makes, works on
 * NCHW16c tensors only. */
#include <math.h>
#include <string.h>
#include "kernels/ref/pool.h"
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

typedef float mp_v16 __attribute__((vector_size(64)));
typedef int mp_i16 __attribute__((vector_size(64)));

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
    bmp_task t = {&g, x->data, y->data};
    const int64_t rows = x->dims[0] * (x->dims[1] / 16) * g.out[1];
    poprt__kctx_parallel_for(k, rows, poprt__ref_grain(g.out[2] * 16 * g.k_sz, 1 << 14),
                             bmp_task_fn, &t);
    return POPRT_OK;
}
