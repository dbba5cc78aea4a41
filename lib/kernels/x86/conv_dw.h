/* Depthwise convolution planes (one input channel per output channel),
 * and the same on NCHW16c blocks (poprt__dwconv_blocked_fn, below),
 * vectorised per ISA: conv_dw_body.inc compiled by conv_dw_avx512.c and
 * conv_dw_avx2.c with their own -m flags and, at baseline flags, by
 * conv_dw.c as the portable instance; the list of them is
 * conv_dw_kernels.inc.
 *
 * A plane function computes one output plane of OH x OW from a zero-padded
 * input plane (row pitch Wp, padded so no tap reads outside it):
 *   y[oh][ow] = bias + sum_{kh, kw} w[kh*KW + kw]
 *                      * xpad[(oh*sh + kh*dh)*Wp + ow*sw + kw*dw]
 * where top is the number of zero rows above the H input rows of xpad:
 * kernel rows that read only those zero rows (or the ones below) for every
 * output row of a group of two are skipped (their products are zeros); the
 * others are added in that order, so every instance gives the same
 * result (the ISA files are built without FMA contraction, -std=c11). Blocks
 * of 16 columns are computed whole: the buffer must stay readable for
 * 16*sw + 16 floats past the end of the plane. */
#ifndef POPRT_X86_CONV_DW_H
#define POPRT_X86_CONV_DW_H

#include <stdint.h>
#include "kernels/x86/cpu.h"

/* The rows (columns) *j0 .. *j1 - 1 of a padded plane of n that hold the
 * input's n_in rows (columns) shifted by p zero rows (columns) before them,
 * clipped to the plane. */
static inline void poprt__pad_span(int64_t p, int64_t n_in, int64_t n, int64_t *j0, int64_t *j1)
{
    *j0 = p < 0 ? 0 : p > n ? n : p;
    *j1 = p + n_in < *j0 ? *j0 : p + n_in > n ? n : p + n_in;
}

typedef void (*poprt__dwconv_plane_fn)(const float *xpad, int64_t Wp, const float *w, int64_t KH,
                                       int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,
                                       int64_t top, int64_t H, float bias, int64_t OH, int64_t OW,
                                       float *y);

/* NCHW16c (16 channels per vector): output rows oh0 .. oh1 - 1 of one
 * block of 16 channels, from the block's input plane x [H][W][16], its taps
 * w [KH * KW][16] and 16 biases b (NULL: none) into its output plane
 * y [OH][OW][16], pt / pl zero rows / columns before the input. Each
 * output is 0 + bias, then w * x added for each tap inside the input in
 * (kh, kw) order, so every instance gives the same bits (the padded-plane
 * function adds the border taps' zero products too). Reads only inside x.
 * clip (NULL: none) {lo, hi}: each output is stored as the Clip kernel
 * computes it, v < lo ? lo : v, then > hi ? hi : v (NaN kept); {0, +inf}
 * is Relu's max(0, v) bit for bit. */
typedef void (*poprt__dwconv_blocked_fn)(const float *x, int64_t H, int64_t W, const float *w,
                                         const float *b, int64_t KH, int64_t KW, int64_t sh,
                                         int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                                         int64_t pl, int64_t oh0, int64_t oh1, int64_t OW,
                                         const float *clip, float *y);

/* The same for a grouped convolution of g channels per group (g = Cg =
 * Mg > 1, 16 % g == 0: a block holds whole groups), taps w [KH * KW][g][16]
 * (w[tap][ci][l]: output lane l's weight on input channel (l & -g) + ci of
 * its block): per tap inside the input, in (kh, kw) order, and per ci,
 * w * x is added; every instance gives the same bits. */
typedef void (*poprt__gconv_blocked_fn)(const float *x, int64_t H, int64_t W, const float *w,
                                        const float *b, int g, int64_t KH, int64_t KW, int64_t sh,
                                        int64_t sw, int64_t dh, int64_t dw, int64_t pt,
                                        int64_t pl, int64_t oh0, int64_t oh1, int64_t OW,
                                        float *y);

typedef struct poprt__dwconv_variant {
    const char *name; /* "avx512", "avx2", "scalar" */
    poprt__isa isa;   /* level the CPU must have */
    poprt__dwconv_plane_fn plane;
    poprt__dwconv_blocked_fn blocked;
    poprt__gconv_blocked_fn grouped;
} poprt__dwconv_variant;

/* The kernel list (conv_dw_kernels.inc), best first; the last is portable. */
extern const poprt__dwconv_variant poprt__dwconv_variants[];
extern const int poprt__dwconv_n_variants;
/* 1 when the CPU (after POPRT_ISA) can run v. */
int poprt__dwconv_usable(const poprt__dwconv_variant *v);
/* The first usable variant (never NULL). */
const poprt__dwconv_variant *poprt__dwconv_best(void);

#define POPRT__DWCONV_VARIANT(isa, level)                                                          \
    void poprt__dwconv_plane_##isa(const float *xpad, int64_t Wp, const float *w, int64_t KH,      \
                                   int64_t KW, int64_t sh, int64_t sw, int64_t dh, int64_t dw,     \
                                   int64_t top, int64_t H, float bias, int64_t OH, int64_t OW,     \
                                   float *y);                                                      \
    void poprt__dwconv_blocked_##isa(const float *x, int64_t H, int64_t W, const float *w,         \
                                     const float *b, int64_t KH, int64_t KW, int64_t sh,           \
                                     int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,   \
                                     int64_t oh0, int64_t oh1, int64_t OW, const float *clip,      \
                                     float *y);                                                    \
    void poprt__gconv_blocked_##isa(const float *x, int64_t H, int64_t W, const float *w,          \
                                    const float *b, int g, int64_t KH, int64_t KW, int64_t sh,     \
                                    int64_t sw, int64_t dh, int64_t dw, int64_t pt, int64_t pl,    \
                                    int64_t oh0, int64_t oh1, int64_t OW, float *y);
#include "kernels/x86/conv_dw_kernels.inc"
#undef POPRT__DWCONV_VARIANT

#endif
