/* float32 values rounded to the float8 grid (FusedElementwise's and
 * FusedConv's float8 steps): the portable function, and the loop itself for
 * the architecture folders that compile it per vector width
 * (lib/kernels/x86/fp8_round.c). */
#ifndef POPRT_KERNELS_FP8_H
#define POPRT_KERNELS_FP8_H
#include <stdint.h>
#include <string.h>

/* dst[i] = src[i] / scale (+ 0 when zero_point) rounded to float8 e4m3fn
 * (e5m2: e5m2) with saturation, times scale: a float8 QuantizeLinear and
 * DequantizeLinear, bit for bit, without the byte (dst may be src). */
typedef void (*poprt__fp8_round_fn)(const float *src, float *dst, int64_t n, float scale,
                                    int e5m2, int zero_point);
/* Compiled at the baseline flags. */
void poprt__fp8_round_portable(const float *src, float *dst, int64_t n, float scale, int e5m2,
                               int zero_point);

/* The loop of every poprt__fp8_round_fn: exactly what QuantizeLinear's code
 * decoded by DequantizeLinear gives (lib/ir/dtype_convert.c encodes the
 * same way), but on floats. Every operation is exact or correctly rounded
 * and the build does not contract a * b + c, so any vector width or clone
 * of it gives the same bits. */
static inline __attribute__((always_inline)) void
poprt__fp8_round_loop(const float *src, float *dst, int64_t n, float scale, int e5m2, int zp)
{
    const int drop = e5m2 ? 21 : 20;                            /* mantissa bits dropped */
    const uint32_t min_normal = (uint32_t)(e5m2 ? 127 - 14 : 127 - 6) << 23;
    const uint32_t max_bits = e5m2 ? 0x47600000u : 0x43E00000u; /* 57344, 448 */
    const float sub = e5m2 ? 65536.0f : 512.0f;                 /* 1 / smallest subnormal */
    const float inv_sub = 1.0f / sub;                           /* a power of two: exact */
    const uint32_t half = (1u << (drop - 1)) - 1;
    /* + 0 maps -0 to +0 (QuantizeLinear's zero point); + -0 changes nothing */
    const float zadd = zp ? 0.0f : -0.0f;
    /* branch-free, so that the compiler vectorises it (with FP traps on, a
     * ?: between float results stays a branch) */
    for (int64_t i = 0; i < n; i++) {
        float v = src[i] / scale + zadd, m, q;
        uint32_t u, a, r, rs;
        memcpy(&u, &v, 4);
        a = u & 0x7FFFFFFFu;
        /* normal: the mantissa rounded to nearest even (a carry moves into
         * the exponent); beyond the largest value, and Inf, saturate */
        r = ((a + half + ((a >> drop) & 1)) >> drop) << drop;
        r = r > max_bits ? max_bits : r;
        /* subnormal: a whole number of the smallest subnormal, to nearest
         * even (adding 1.5 * 2^23 leaves the integer in the mantissa) */
        memcpy(&m, &a, 4);
        m = ((m * sub + 12582912.0f) - 12582912.0f) * inv_sub;
        memcpy(&rs, &m, 4);
        /* masks rather than ?: so that no arm becomes a branch: NaN gives the
         * format's NaN, decoded */
        const uint32_t normal = 0u - (uint32_t)(a >= min_normal);
        const uint32_t nan = 0u - (uint32_t)(a > 0x7F800000u);
        r = (r & normal) | (rs & ~normal);
        r = (r & ~nan) | (0x7FC00000u & nan);
        r |= u & 0x80000000u;
        memcpy(&q, &r, 4);
        dst[i] = q * scale;
    }
}

#endif
