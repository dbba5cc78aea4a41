/* 2-D max pooling of one NCHW plane (AVX-512): windows without dilation,
 * every window holding at least one element of the plane.
 *
 * For each output row the window's input rows are reduced into a row
 * buffer bordered with -inf (vertical maximum, 16 columns per vector), then
 * the window columns are reduced at the output positions: stride 1 from
 * shifted loads, stride 2 by splitting even and odd lanes with a two-source
 * permute, other strides one position at a time. */
#ifndef POPRT_X86_POOL_H
#define POPRT_X86_POOL_H

#include <stdint.h>

typedef struct poprt__maxpool2d_geom {
    int64_t IH, IW, OH, OW;
    int64_t KH, KW, SH, SW, PH, PW;
} poprt__maxpool2d_geom;

/* Floats the row buffer of poprt__maxpool2d_plane_avx512 needs. */
int64_t poprt__maxpool2d_row_floats(const poprt__maxpool2d_geom *g);

/* y[oh][ow] = max of the window of x at (oh, ow). row: scratch of
 * poprt__maxpool2d_row_floats floats. Returns 0 when an element a window
 * reads is NaN (y is then partly written: the caller redoes the plane with
 * its own NaN rule), 1 otherwise. */
int poprt__maxpool2d_plane_avx512(const poprt__maxpool2d_geom *g, const float *x, float *y,
                                  float *row);

#if !defined(__x86_64__)
/* other CPUs: never called (callers check for AVX-512 first) */
static inline int poprt__maxpool2d_plane_avx512(const poprt__maxpool2d_geom *g, const float *x,
                                                float *y, float *row)
{
    (void)g, (void)x, (void)y, (void)row;
    return 0;
}
#endif

#endif
