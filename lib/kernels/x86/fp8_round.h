/* float32 values rounded to the float8 grid (FusedElementwise's and
 * FusedConv's float8 steps), compiled per vector width (x86/fp8_round.c). */
#ifndef POPRT_X86_FP8_ROUND_H
#define POPRT_X86_FP8_ROUND_H
#include <stdint.h>

/* dst[i] = src[i] / scale (+ 0 when zero_point) rounded to float8 e4m3fn
 * (e5m2: e5m2) with saturation, times scale: a float8 QuantizeLinear and
 * DequantizeLinear, bit for bit, without the byte (dst may be src). */
void poprt__fp8_round(const float *src, float *dst, int64_t n, float scale, int e5m2,
                      int zero_point);

#endif
