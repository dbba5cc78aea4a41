/* 2-D max pooling planes and BlockedMaxPool's rows, AVX2 instances (see
 * pool.h). */
#include <immintrin.h>

#define MP_ISA avx2
#include "kernels/x86/pool_body.inc"

/* BlockedMaxPool's rows (pool_blocked_body.inc): two ymm per position. */
typedef struct bmp_v {
    __m256 lo, hi;
} bmp_v;
static inline __attribute__((always_inline)) bmp_v bmp_load(const float *p)
{
    return (bmp_v){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
}
static inline __attribute__((always_inline)) void bmp_store(float *p, bmp_v v)
{
    _mm256_storeu_ps(p, v.lo);
    _mm256_storeu_ps(p + 8, v.hi);
}
static inline __attribute__((always_inline)) bmp_v bmp_max(bmp_v p, bmp_v b)
{
    return (bmp_v){_mm256_max_ps(p.lo, b.lo), _mm256_max_ps(p.hi, b.hi)};
}
#include "kernels/x86/pool_blocked_body.inc"
