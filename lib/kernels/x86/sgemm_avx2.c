/* AVX2 + FMA fp32 GEMM micro-kernel (6 x 16: 12 ymm accumulators). This
 * file alone is compiled with -mavx2 -mfma; it is only entered after
 * poprt__cpu_features() reported AVX2 and FMA. */
#include <immintrin.h>
#include "kernels/x86/sgemm.h"

#define INLINE static inline __attribute__((always_inline))

INLINE void tile(const int mr, int64_t kc, const float *restrict a, const float *restrict b,
                 int64_t bs, float *restrict c, int64_t ldc, float alpha, float beta, int nr)
{
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < mr; r++) {
        acc[r][0] = _mm256_setzero_ps();
        acc[r][1] = _mm256_setzero_ps();
    }
    for (int64_t p = 0; p < kc; p++) {
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int r = 0; r < mr; r++) {
            const __m256 ar = _mm256_broadcast_ss(a + r);
            acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
        }
        a += 6;
        b += bs;
    }
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    if (nr == 16) {
#pragma GCC unroll 6
        for (int r = 0; r < mr; r++)
#pragma GCC unroll 2
            for (int v = 0; v < 2; v++) {
                float *cp = c + r * ldc + v * 8;
                __m256 t = _mm256_mul_ps(va, acc[r][v]);
                if (beta != 0.0f)
                    t = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cp), t);
                _mm256_storeu_ps(cp, t);
            }
        return;
    }
    /* partial tile: lane masks for the nr valid columns */
    __m256i m[2];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    m[0] = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane);
    m[1] = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8), lane);
#pragma GCC unroll 6
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++) {
            float *cp = c + r * ldc + v * 8;
            __m256 t = _mm256_mul_ps(va, acc[r][v]);
            if (beta != 0.0f)
                t = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cp, m[v]), t);
            _mm256_maskstore_ps(cp, m[v], t);
        }
}

void poprt__sgemm_ukr_avx2_6x16(int64_t kc, int mr, int nr, const float *a, const float *b,
                                int64_t bs, float *c, int64_t ldc, float alpha, float beta)
{
    switch (mr) {
    case 6: tile(6, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 5: tile(5, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 4: tile(4, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 3: tile(3, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 2: tile(2, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 1: tile(1, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    default: break;
    }
}
