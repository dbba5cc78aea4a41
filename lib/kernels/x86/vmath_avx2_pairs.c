/* The AVX2 + FMA instance's elementwise functions (vmath_body.inc, VM_PART
 * 1: unary and binary), on pairs of vectors: each primitive applies the
 * same instruction to two ymm registers, 16 lanes per step. The lanes'
 * operations are those of vmath_avx2.c (the same bits as the AVX-512
 * instance); what changes is that the dependent chains of two vectors
 * (an exp's reduction, polynomial and scaling; a division) interleave in
 * the instruction stream, where the out-of-order window held about one:
 * one process, 768 floats in L1, this form against the one-vector loops
 * alternately (Zen 3): swish 0.80-0.85 of the time, sigmoid 0.86-0.88,
 * gelu 0.86-0.87, tanh 0.83-0.86, exp 0.87-0.89. The rows, the sum and
 * the chains stay on single vectors (vmath_avx2.c): the chains' steps
 * already run on 8 vectors at a time, and were 1.08-1.12 of the time as
 * 4 pairs. Compiled alone with -mavx2 -mfma. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/vmath.h"

#define INLINE static inline __attribute__((always_inline))
#define VM_ISA avx2
#define VM_PART 1
#define VW 16
typedef struct {
    __m256 a, b;
} V;
typedef struct {
    __m256i a, b;
} VI;
typedef V M; /* all-ones lanes */

/* V name(V x, V y) and V name(V x, V y, V z): op on each half */
#define VM_PAIR2(name, op)                                                                   \
    INLINE V name(V x, V y)                                                                  \
    {                                                                                        \
        V r = {op(x.a, y.a), op(x.b, y.b)};                                                  \
        return r;                                                                            \
    }
#define VM_PAIR3(name, op)                                                                   \
    INLINE V name(V x, V y, V z)                                                             \
    {                                                                                        \
        V r = {op(x.a, y.a, z.a), op(x.b, y.b, z.b)};                                        \
        return r;                                                                            \
    }
#define VM_IPAIR2(name, op)                                                                  \
    INLINE VI name(VI x, VI y)                                                               \
    {                                                                                        \
        VI r = {op(x.a, y.a), op(x.b, y.b)};                                                 \
        return r;                                                                            \
    }

INLINE V v_set(float x)
{
    V r = {_mm256_set1_ps(x), _mm256_set1_ps(x)};
    return r;
}
INLINE V v_zero(void) { return v_set(0.0f); }
INLINE V v_ld(const float *p)
{
    V r = {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)};
    return r;
}
INLINE void v_st(float *p, V v)
{
    _mm256_storeu_ps(p, v.a);
    _mm256_storeu_ps(p + 8, v.b);
}
/* Tails through a padded buffer (n < 16). */
INLINE V v_ld_part(const float *p, int64_t n, float fill)
{
    float b[16];
    for (int i = 0; i < 16; i++)
        b[i] = fill;
    memcpy(b, p, (size_t)n * sizeof *p);
    return v_ld(b);
}
INLINE void v_st_part(float *p, V v, int64_t n)
{
    float b[16];
    v_st(b, v);
    memcpy(p, b, (size_t)n * sizeof *p);
}
VM_PAIR2(v_add, _mm256_add_ps)
VM_PAIR2(v_sub, _mm256_sub_ps)
VM_PAIR2(v_mul, _mm256_mul_ps)
VM_PAIR2(v_div, _mm256_div_ps)
VM_PAIR2(v_min, _mm256_min_ps)
VM_PAIR2(v_max, _mm256_max_ps)
VM_PAIR2(v_or, _mm256_or_ps)
VM_PAIR3(v_fma, _mm256_fmadd_ps)
VM_PAIR3(v_fnma, _mm256_fnmadd_ps)
VM_PAIR3(v_fms, _mm256_fmsub_ps)
INLINE V v_sqrt(V x)
{
    V r = {_mm256_sqrt_ps(x.a), _mm256_sqrt_ps(x.b)};
    return r;
}
INLINE V v_abs(V x)
{
    const __m256 s = _mm256_set1_ps(-0.0f);
    V r = {_mm256_andnot_ps(s, x.a), _mm256_andnot_ps(s, x.b)};
    return r;
}
INLINE V v_signbit(V x)
{
    const __m256 s = _mm256_set1_ps(-0.0f);
    V r = {_mm256_and_ps(x.a, s), _mm256_and_ps(x.b, s)};
    return r;
}
#define VM_CMP(name, pred)                                                                   \
    INLINE M name(V x, V y)                                                                  \
    {                                                                                        \
        M r = {_mm256_cmp_ps(x.a, y.a, pred), _mm256_cmp_ps(x.b, y.b, pred)};                \
        return r;                                                                            \
    }
VM_CMP(v_lt, _CMP_LT_OQ)
VM_CMP(v_gt, _CMP_GT_OQ)
VM_CMP(v_eq, _CMP_EQ_OQ)
INLINE M v_isnan(V x)
{
    M r = {_mm256_cmp_ps(x.a, x.a, _CMP_UNORD_Q), _mm256_cmp_ps(x.b, x.b, _CMP_UNORD_Q)};
    return r;
}
INLINE V v_sel(M m, V x, V y)
{
    V r = {_mm256_blendv_ps(y.a, x.a, m.a), _mm256_blendv_ps(y.b, x.b, m.b)};
    return r;
}
INLINE int m_all(M m) { return _mm256_movemask_ps(_mm256_and_ps(m.a, m.b)) == 0xff; }
INLINE VI v_asi(V x)
{
    VI r = {_mm256_castps_si256(x.a), _mm256_castps_si256(x.b)};
    return r;
}
INLINE V i_asf(VI x)
{
    V r = {_mm256_castsi256_ps(x.a), _mm256_castsi256_ps(x.b)};
    return r;
}
VM_IPAIR2(i_add, _mm256_add_epi32)
VM_IPAIR2(i_sub, _mm256_sub_epi32)
VM_IPAIR2(i_and, _mm256_and_si256)
INLINE VI i_set(int x)
{
    VI r = {_mm256_set1_epi32(x), _mm256_set1_epi32(x)};
    return r;
}
#define i_sra(x, k) ((VI){_mm256_srai_epi32((x).a, k), _mm256_srai_epi32((x).b, k)})
#define i_sll(x, k) ((VI){_mm256_slli_epi32((x).a, k), _mm256_slli_epi32((x).b, k)})
INLINE V i_cvt(VI x)
{
    V r = {_mm256_cvtepi32_ps(x.a), _mm256_cvtepi32_ps(x.b)};
    return r;
}

#include "kernels/vmath_body.inc"
