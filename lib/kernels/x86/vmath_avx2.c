/* AVX2 + FMA instance of the vectorised math (vmath_body.inc), 8 lanes:
 * softmax rows, the sum and the chains (VM_PART 2); its elementwise
 * functions are built on pairs of vectors (vmath_avx2_pairs.c). This
 * file alone is compiled with -mavx2 -mfma; it is only entered after
 * poprt__cpu_features() reported AVX2 and FMA. The same IEEE operations as
 * the AVX-512 instance, hence the same bits per element. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/vmath.h"

#define INLINE static inline __attribute__((always_inline))
#define VM_ISA avx2
#define VM_PART 2
#define VW 8
typedef __m256 V;
typedef __m256i VI;
typedef __m256 M; /* all-ones lanes */

INLINE V v_set(float a) { return _mm256_set1_ps(a); }
INLINE V v_zero(void) { return _mm256_setzero_ps(); }
INLINE V v_ld(const float *p) { return _mm256_loadu_ps(p); }
INLINE void v_st(float *p, V v) { _mm256_storeu_ps(p, v); }
/* Tails through a padded buffer (n < 8). */
INLINE V v_ld_part(const float *p, int64_t n, float fill)
{
    float b[8];
    for (int i = 0; i < 8; i++)
        b[i] = fill;
    memcpy(b, p, (size_t)n * sizeof *p);
    return _mm256_loadu_ps(b);
}
INLINE void v_st_part(float *p, V v, int64_t n)
{
    float b[8];
    _mm256_storeu_ps(b, v);
    memcpy(p, b, (size_t)n * sizeof *p);
}
INLINE V v_add(V a, V b) { return _mm256_add_ps(a, b); }
INLINE V v_sub(V a, V b) { return _mm256_sub_ps(a, b); }
INLINE V v_mul(V a, V b) { return _mm256_mul_ps(a, b); }
INLINE V v_div(V a, V b) { return _mm256_div_ps(a, b); }
INLINE V v_sqrt(V a) { return _mm256_sqrt_ps(a); }
INLINE V v_fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
INLINE V v_fnma(V a, V b, V c) { return _mm256_fnmadd_ps(a, b, c); }
INLINE V v_fms(V a, V b, V c) { return _mm256_fmsub_ps(a, b, c); }
INLINE V v_min(V a, V b) { return _mm256_min_ps(a, b); }
INLINE V v_max(V a, V b) { return _mm256_max_ps(a, b); }
INLINE V v_abs(V a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
INLINE V v_signbit(V a) { return _mm256_and_ps(a, _mm256_set1_ps(-0.0f)); }
INLINE V v_or(V a, V b) { return _mm256_or_ps(a, b); }
INLINE M v_lt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
INLINE M v_gt(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
INLINE M v_eq(V a, V b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
INLINE M v_isnan(V a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
INLINE V v_sel(M m, V a, V b) { return _mm256_blendv_ps(b, a, m); }
INLINE int m_all(M m) { return _mm256_movemask_ps(m) == 0xff; }
INLINE VI v_asi(V a) { return _mm256_castps_si256(a); }
INLINE V i_asf(VI a) { return _mm256_castsi256_ps(a); }
INLINE VI i_add(VI a, VI b) { return _mm256_add_epi32(a, b); }
INLINE VI i_sub(VI a, VI b) { return _mm256_sub_epi32(a, b); }
INLINE VI i_and(VI a, VI b) { return _mm256_and_si256(a, b); }
INLINE VI i_set(int a) { return _mm256_set1_epi32(a); }
#define i_sra(a, k) _mm256_srai_epi32(a, k)
#define i_sll(a, k) _mm256_slli_epi32(a, k)
INLINE V i_cvt(VI a) { return _mm256_cvtepi32_ps(a); }
INLINE float v_hsum(V a)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}
INLINE float v_hmax(V a)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#include "kernels/vmath_body.inc"
