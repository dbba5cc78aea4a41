/* 2-D max pooling of one NCHW plane: windows without dilation, every
 * window holding at least one element of the plane. Variants per ISA, in
 * one list (pool_kernels.inc): AVX-512 intrinsics (pool_avx512.c), and
 * pool_body.inc's 16-lane vector types compiled for AVX2 (pool_avx2.c) and
 * at baseline flags (pool.c).
 *
 * For each output row the window's input rows are reduced into a row
 * buffer bordered with -inf (vertical maximum, 16 columns per vector), then
 * the window columns are reduced at the output positions: stride 1 from
 * shifted loads, stride 2 by splitting even and odd lanes (a two-source
 * permute or shuffle), other strides one position at a time. Max is exact:
 * every variant gives the same bits.
 *
 * Each variant also has BlockedMaxPool's rows (pool_blocked_body.inc, on
 * NCHW16c: one vector of 16 channels per position, one zmm or two ymm, or
 * 16 floats in the portable instance). */
#ifndef POPRT_X86_POOL_H
#define POPRT_X86_POOL_H

#include <stdint.h>
#include "kernels/x86/cpu.h"

struct poprt__geom3; /* kernels/ref/window.h */

typedef struct poprt__maxpool2d_geom {
    int64_t IH, IW, OH, OW;
    int64_t KH, KW, SH, SW, PH, PW;
} poprt__maxpool2d_geom;

typedef struct poprt__maxpool_variant {
    const char *name; /* "avx512", "avx2", "scalar" */
    poprt__isa isa;   /* level the CPU must have */
    /* Floats of the row buffer plane needs. */
    int64_t (*row_floats)(const poprt__maxpool2d_geom *g);
    /* y[oh][ow] = max of the window of x at (oh, ow). row: scratch of
     * row_floats(g) floats. Returns 0 when an element a window reads is NaN
     * (y is then partly written: the caller redoes the plane with its own
     * NaN rule), 1 otherwise. */
    int (*plane)(const poprt__maxpool2d_geom *g, const float *x, float *y, float *row);
    /* ai.poprt BlockedMaxPool on NCHW16c, 2-D (g: lifted to 3-D, window.h;
     * any window, dilation, padding): output rows r0..r1-1, row r being
     * channel block r / OH, output row r % OH; 16 channels per position,
     * taken with MaxPool's rule (the first tap inside the input, then any
     * greater value), so NaNs come out as the generic loop gives them;
     * -inf where a window holds no input. */
    void (*blocked_rows)(const struct poprt__geom3 *g, const float *x, float *y, int64_t r0,
                         int64_t r1);
} poprt__maxpool_variant;

/* The kernel list (pool_kernels.inc), best first; the last is portable. */
extern const poprt__maxpool_variant poprt__maxpool_variants[];
extern const int poprt__maxpool_n_variants;
/* 1 when the CPU (after POPRT_ISA) can run v. */
int poprt__maxpool_usable(const poprt__maxpool_variant *v);
/* The first usable variant (never NULL). */
const poprt__maxpool_variant *poprt__maxpool_best(void);

#define POPRT__MAXPOOL_VARIANT(isa, level)                                                         \
    int64_t poprt__maxpool2d_row_floats_##isa(const poprt__maxpool2d_geom *g);                     \
    int poprt__maxpool2d_plane_##isa(const poprt__maxpool2d_geom *g, const float *x, float *y,     \
                                     float *row);                                                  \
    void poprt__bmaxpool_rows_##isa(const struct poprt__geom3 *g, const float *x, float *y,        \
                                    int64_t r0, int64_t r1);
#include "kernels/x86/pool_kernels.inc"
#undef POPRT__MAXPOOL_VARIANT

#endif
