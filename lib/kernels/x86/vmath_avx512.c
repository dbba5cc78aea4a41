/* AVX-512 instance of the vectorised math (vmath_body.inc), 16 lanes. This
 * file alone is compiled with -mavx512f/bw/vl/dq -mfma; it is only entered
 * after poprt__cpu_features() reported AVX-512. */
#include <immintrin.h>
#include "kernels/x86/vmath.h"

#define INLINE static inline __attribute__((always_inline))
#define VM_ISA avx512
#define VW 16
typedef __m512 V;
typedef __m512i VI;
typedef __mmask16 M;

INLINE V v_set(float a) { return _mm512_set1_ps(a); }
INLINE V v_zero(void) { return _mm512_setzero_ps(); }
INLINE V v_ld(const float *p) { return _mm512_loadu_ps(p); }
INLINE void v_st(float *p, V v) { _mm512_storeu_ps(p, v); }
INLINE M part_mask(int64_t n) { return (M)((1u << n) - 1u); }
INLINE V v_ld_part(const float *p, int64_t n, float fill)
{
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), part_mask(n), p);
}
INLINE void v_st_part(float *p, V v, int64_t n) { _mm512_mask_storeu_ps(p, part_mask(n), v); }
INLINE V v_add(V a, V b) { return _mm512_add_ps(a, b); }
INLINE V v_sub(V a, V b) { return _mm512_sub_ps(a, b); }
INLINE V v_mul(V a, V b) { return _mm512_mul_ps(a, b); }
INLINE V v_div(V a, V b) { return _mm512_div_ps(a, b); }
INLINE V v_sqrt(V a) { return _mm512_sqrt_ps(a); }
INLINE V v_fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
INLINE V v_fnma(V a, V b, V c) { return _mm512_fnmadd_ps(a, b, c); }
INLINE V v_fms(V a, V b, V c) { return _mm512_fmsub_ps(a, b, c); }
INLINE V v_min(V a, V b) { return _mm512_min_ps(a, b); }
INLINE V v_max(V a, V b) { return _mm512_max_ps(a, b); }
INLINE V v_abs(V a) { return _mm512_abs_ps(a); }
INLINE V v_signbit(V a) { return _mm512_and_ps(a, _mm512_set1_ps(-0.0f)); }
INLINE V v_or(V a, V b) { return _mm512_or_ps(a, b); }
INLINE M v_lt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
INLINE M v_gt(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
INLINE M v_eq(V a, V b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
INLINE M v_isnan(V a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
INLINE V v_sel(M m, V a, V b) { return _mm512_mask_blend_ps(m, b, a); }
INLINE int m_all(M m) { return m == 0xffff; }
INLINE VI v_asi(V a) { return _mm512_castps_si512(a); }
INLINE V i_asf(VI a) { return _mm512_castsi512_ps(a); }
INLINE VI i_add(VI a, VI b) { return _mm512_add_epi32(a, b); }
INLINE VI i_sub(VI a, VI b) { return _mm512_sub_epi32(a, b); }
INLINE VI i_and(VI a, VI b) { return _mm512_and_si512(a, b); }
INLINE VI i_set(int a) { return _mm512_set1_epi32(a); }
#define i_sra(a, k) _mm512_srai_epi32(a, k)
#define i_sll(a, k) _mm512_slli_epi32(a, k)
INLINE V i_cvt(VI a) { return _mm512_cvtepi32_ps(a); }
INLINE float v_hsum(V a) { return _mm512_reduce_add_ps(a); }
INLINE float v_hmax(V a) { return _mm512_reduce_max_ps(a); }

#include "kernels/vmath_body.inc"
