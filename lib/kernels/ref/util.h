/* Helpers the reference kernels share (lib/kernels/ref/util.c). */
#ifndef POPRT_REF_UTIL_H
#define POPRT_REF_UTIL_H
#include "kernels/kernel.h"

/* POPRT_OK when ok, else INVALID_MODEL "missing input or output" naming
 * k's node. */
poprt_status poprt__ref_need(const poprt__kctx *k, int ok);
/* Element 0 of t as int64 / double; dflt when t is absent or empty. */
int64_t poprt__ref_scalar_i(const poprt__tval *t, int64_t dflt);
double poprt__ref_scalar_f(const poprt__tval *t, double dflt);

int64_t poprt__ref_prod64(const int64_t *d, int n);
/* OUT_OF_MEMORY "out of scratch memory" naming k's node. */
poprt_status poprt__ref_oom(const poprt__kctx *k);
/* float16 or bfloat16 */
int poprt__ref_is_half(int32_t dt);
/* A float32 view of t: t's own data when float32, else a converted scratch
 * copy (float16, bfloat16, double, small ints). NULL when out of memory. */
const float *poprt__ref_in_f32(poprt__kctx *k, const poprt__tval *t);
/* Where to compute an output in float32: its own buffer when float32, else
 * scratch that poprt__ref_store_f32 converts back into t. */
float *poprt__ref_out_f32(poprt__kctx *k, poprt__tval *t);
void poprt__ref_store_f32(poprt__tval *t, const float *f);
/* Units of work per parallel chunk so that a chunk is worth a wake-up. */
int64_t poprt__ref_grain(int64_t unit_cost, int64_t min_cost);
/* y[i] += a * x[i] and y[i] = x[i] * a + b for i < n, four lanes at a time
 * (GCC's -O2 cost model leaves loops that need a scalar tail unvectorised). */
void poprt__ref_axpy_f32(int64_t n, float a, const float *restrict x, float *restrict y);
void poprt__ref_affine_f32(int64_t n, const float *restrict x, float a, float b, float *restrict y);

#endif
