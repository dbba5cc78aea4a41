/* float32 values rounded to the float8 grid (lib/kernels/fp8.h), compiled
 * per vector width and picked by the loader (x86/fp8_round.c). */
#ifndef POPRT_X86_FP8_ROUND_H
#define POPRT_X86_FP8_ROUND_H
#include "kernels/fp8.h"

/* A poprt__fp8_round_fn: the same bits as poprt__fp8_round_portable. */
void poprt__fp8_round(const float *src, float *dst, int64_t n, float scale, int e5m2,
                      int zero_point);

#endif
