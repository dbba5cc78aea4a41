/* Reference kernels of the 'conv' group: Conv, ConvTranspose, DeformConv
 * and CausalConvWithState, and what the registry's fast convolution paths
 * (lib/kernels/x86) share with them. */
#ifndef POPRT_REF_CONV_H
#define POPRT_REF_CONV_H
#include "kernels/kernel.h"
#include "kernels/ref/gemm.h"
#include "kernels/ref/window.h"

/* A Conv / ConvTranspose node's shape: the window lifted to 3-D, images,
 * channels (C in, M out), groups, channels per group, Kc = Cg * taps. */
typedef struct poprt__conv_shape {
    poprt__geom3 g;
    int64_t N, C, M, G, Cg, Mg, Kc;
} poprt__conv_shape;
/* Checks X, W, B and Y of k's node and computes its shape. transposed:
 * ConvTranspose (W is [C, M/group, k...]). */
poprt_status poprt__conv_setup(poprt__kctx *k, int transposed, poprt__conv_shape *s);
/* A transposed convolution whose kernel equals its stride, without padding
 * or dilation (out = in * stride): each output element is one product sum,
 * from one input position and one tap. */
int poprt__tconv_patches(const poprt__geom3 *g);
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
 * float32 conv. f32 gets w NULL for a float32 weight the session keeps in
 * the node's prepared data only (its prepare marked it consumed), and reads
 * it through poprt__kctx_in_data on any path that needs it unpacked. */
typedef poprt_status (*poprt__conv_f32_fn)(poprt__kctx *k, const poprt__conv_shape *s,
                                           const float *x, const float *w, const float *b,
                                           float *y);
poprt_status poprt__conv_op(poprt__kctx *k, poprt__conv_f32_fn f32);

poprt_status poprt__ref_conv(poprt__kctx *k);
poprt_status poprt__ref_conv_transpose(poprt__kctx *k);
/* ConvTranspose computing its GEMMs with e (gemm.h) */
poprt_status poprt__conv_transpose_op(poprt__kctx *k, const poprt__gemm_engine *e);
/* A ConvTranspose whose kernel equals its stride (poprt__tconv_patches):
 * y = bias + col for input rows [r0, r1) (a row: one (d, h) of the input)
 * of the Mg output channels from y, col = W^T X over those rows only
 * ([Mg k_sz][npos]); each output element written once, split over k's
 * threads by channel. */
void poprt__tconv_scatter(poprt__kctx *k, const float *col, const poprt__geom3 *g,
                          const float *bias, int64_t Mg, int64_t r0, int64_t r1, int64_t npos,
                          float *y);
/* DeformConv (1 to 3 spatial axes): bilinear sampling into a column matrix
 * per image and group, then a GEMM with e (double: poprt__ref_dgemm) */
poprt_status poprt__deform_conv_op(poprt__kctx *k, const poprt__gemm_engine *e);
poprt_status poprt__ref_deform_conv(poprt__kctx *k);
/* CausalConvWithState (depthwise causal 1-D conv with carried state) */
poprt_status poprt__ref_causal_conv_with_state(poprt__kctx *k);

#endif
