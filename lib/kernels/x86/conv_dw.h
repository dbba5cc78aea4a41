/* Depthwise convolution planes (one input channel per output channel),
 * vectorised per ISA: conv_dw_body.inc compiled by conv_dw_avx512.c and
 * conv_dw_avx2.c with their own -m flags and, at baseline flags, by the
 * Conv kernel (lib/kernels/ref/nn.c) as the portable instance.
 *
 * A plane function computes one output plane of OH x OW from a zero-padded
 * input plane (row pitch Wp, padded so no tap reads outside it):
 *   y[oh][ow] = bias + sum_{kh, kw} w[kh*KW + kw]
 *                      * xpad[(oh*sh + kh*dh)*Wp + ow*sw + kw*dw]
 * with the taps added in that order, so every instance gives the same
 * result (the ISA files are built without FMA contraction, -std=c11). Blocks
 * of 16 columns are computed whole: the buffer must stay readable for
 * 16*sw + 16 floats past the end of the plane. */
#ifndef POPRT_X86_CONV_DW_H
#define POPRT_X86_CONV_DW_H

#include <stdint.h>

typedef void (*poprt__dwconv_plane_fn)(const float *xpad, int64_t Wp, const float *w, int64_t KH,
                                       int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                       float bias, int64_t OH, int64_t OW, float *y);

void poprt__dwconv_plane_avx512(const float *xpad, int64_t Wp, const float *w, int64_t KH,
                                int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                float bias, int64_t OH, int64_t OW, float *y);
void poprt__dwconv_plane_avx2(const float *xpad, int64_t Wp, const float *w, int64_t KH,
                              int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                              float bias, int64_t OH, int64_t OW, float *y);

#endif
