/* Reference kernels of the 'nn' family: convolutions and pools. */
#ifndef POPRT_REF_NN_H
#define POPRT_REF_NN_H
#include "kernels/kernel.h"
#include "kernels/ref/gemm.h"
#include "kernels/ref/window.h"
#include "ir/geom.h"

/* ---- convolutions: what the registry's fast paths (lib/kernels/x86)
 * share with the reference kernels ---- */

/* A Conv / ConvTranspose node's shape: the window lifted to 3-D, images,
 * channels (C in, M out), groups, channels per group, Kc = Cg * taps. */
typedef struct poprt__conv_shape {
    poprt__geom3 g;
    int64_t N, C, M, G, Cg, Mg, Kc;
} poprt__conv_shape;
/* Checks X, W, B and Y of k's node and computes its shape. transposed:
 * ConvTranspose (W is [C, M/group, k...]). */
poprt_status poprt__conv_setup(poprt__kctx *k, int transposed, poprt__conv_shape *s);
/* im2col rows [0, rows) of one group of x into col (row r = (c, kd, kh,
 * kw), a column per output position), split over k's threads. */
void poprt__im2col_f32_mt(poprt__kctx *k, const float *x, const poprt__geom3 *g, int64_t rows,
                          float *col);
/* Runs fn(ctx, y, off, n) on y[off, off + n) right after it is written. */
typedef struct poprt__conv_epi {
    void (*fn)(const void *ctx, float *y, int64_t off, int64_t n);
    const void *ctx;
} poprt__conv_epi;
/* Depthwise conv (one input channel per group), tap by tap in a fixed
 * order over k's threads; epi (or NULL) on each output plane. */
void poprt__conv_dw_f32(poprt__kctx *k, const poprt__conv_shape *s, const float *x, const float *w,
                        const float *b, float *y, const poprt__conv_epi *epi);
/* Conv: checks, an empty output, double in double, the other types
 * through float32 computed by f32. poprt__ref_conv passes the reference
 * float32 conv. */
typedef poprt_status (*poprt__conv_f32_fn)(poprt__kctx *k, const poprt__conv_shape *s,
                                           const float *x, const float *w, const float *b,
                                           float *y);
poprt_status poprt__conv_op(poprt__kctx *k, poprt__conv_f32_fn f32);

/* ---- pools: what MaxPool's fast path (lib/kernels/x86) shares with the
 * reference kernels ---- */

enum { POPRT__POOL_MAX, POPRT__POOL_AVG, POPRT__POOL_LP };
/* A pool over the planes of x (float32 views), set up from the node. */
typedef struct poprt__pool_task {
    poprt__geom3 g;
    int kind, count_include_pad, storage_order;
    float p;
    const float *x;
    float *y;
    int64_t *ind; /* MaxPool's Indices, or NULL */
} poprt__pool_task;
/* The pool of planes [q0, q1) (ctx: a poprt__pool_task), window by window. */
void poprt__pool_planes(void *ctx, int64_t q0, int64_t q1);
/* A faster way to run the pool set up in t on x (ind: the Indices output
 * or NULL): *done 1 when it wrote t->y. */
typedef poprt_status (*poprt__pool_fast_fn)(poprt__kctx *k, const poprt__pool_task *t,
                                            const poprt__tval *x, const poprt__tval *ind,
                                            int *done);
/* MaxPool, AveragePool or LpPool (kind): checks, attributes, types; then
 * fast (may be NULL), else poprt__pool_planes over k's threads. */
poprt_status poprt__pool_op(poprt__kctx *k, int kind, poprt__pool_fast_fn fast);

/* Kernels */
poprt_status poprt__ref_conv(poprt__kctx *k);
poprt_status poprt__ref_conv_transpose(poprt__kctx *k);
/* ConvTranspose computing its GEMMs with e (gemm.h) */
poprt_status poprt__conv_transpose_op(poprt__kctx *k, const poprt__gemm_engine *e);
poprt_status poprt__ref_maxpool(poprt__kctx *k);
poprt_status poprt__ref_averagepool(poprt__kctx *k);
poprt_status poprt__ref_lppool(poprt__kctx *k);
poprt_status poprt__ref_global_averagepool(poprt__kctx *k);
poprt_status poprt__ref_global_maxpool(poprt__kctx *k);
poprt_status poprt__ref_global_lppool(poprt__kctx *k);
poprt_status poprt__ref_maxunpool(poprt__kctx *k);

#endif
