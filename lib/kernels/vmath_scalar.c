/* Portable instance of the vectorised math (vmath_body.inc): one lane of
 * plain C (the table poprt__vmath_portable, vmath.c), for the ref kernels
 * when nothing chose another table, CPUs without AVX2 and other
 * architectures. No FMA is assumed (a*b+c rounds twice), so results may
 * differ from the AVX variants in the last bits; the exact product error
 * v_fms is computed in double. */
#include <math.h>
#include <string.h>
#include "kernels/vmath.h"

#define INLINE static inline __attribute__((always_inline))
#define VM_ISA scalar
#define VW 1
typedef float V;
typedef int32_t VI;
typedef int M;

INLINE V v_set(float a) { return a; }
INLINE V v_zero(void) { return 0.0f; }
INLINE V v_ld(const float *p) { return *p; }
INLINE void v_st(float *p, V v) { *p = v; }
INLINE V v_ld_part(const float *p, int64_t n, float fill) { return n > 0 ? *p : fill; }
INLINE void v_st_part(float *p, V v, int64_t n)
{
    if (n > 0)
        *p = v;
}
INLINE V v_add(V a, V b) { return a + b; }
INLINE V v_sub(V a, V b) { return a - b; }
INLINE V v_mul(V a, V b) { return a * b; }
INLINE V v_div(V a, V b) { return a / b; }
INLINE V v_sqrt(V a) { return sqrtf(a); }
INLINE V v_fma(V a, V b, V c) { return a * b + c; }
INLINE V v_fnma(V a, V b, V c) { return c - a * b; }
INLINE V v_fms(V a, V b, V c) { return (float)((double)a * (double)b - (double)c); }
INLINE V v_min(V a, V b) { return a < b ? a : b; }
INLINE V v_max(V a, V b) { return a > b ? a : b; }
INLINE VI v_asi(V a)
{
    VI i;
    memcpy(&i, &a, sizeof i);
    return i;
}
INLINE V i_asf(VI a)
{
    V f;
    memcpy(&f, &a, sizeof f);
    return f;
}
INLINE V v_abs(V a) { return i_asf(v_asi(a) & 0x7fffffff); }
INLINE V v_signbit(V a) { return i_asf((VI)((uint32_t)v_asi(a) & 0x80000000u)); }
INLINE V v_or(V a, V b) { return i_asf(v_asi(a) | v_asi(b)); }
INLINE M v_lt(V a, V b) { return a < b; }
INLINE M v_gt(V a, V b) { return a > b; }
INLINE M v_eq(V a, V b) { return a == b; }
INLINE M v_isnan(V a) { return a != a; }
INLINE V v_sel(M m, V a, V b) { return m ? a : b; }
INLINE int m_all(M m) { return m; }
INLINE VI i_add(VI a, VI b) { return (VI)((uint32_t)a + (uint32_t)b); }
INLINE VI i_sub(VI a, VI b) { return (VI)((uint32_t)a - (uint32_t)b); }
INLINE VI i_and(VI a, VI b) { return a & b; }
INLINE VI i_set(int a) { return a; }
INLINE VI i_sra(VI a, int k) { return a >> k; }
INLINE VI i_sll(VI a, int k) { return (VI)((uint32_t)a << k); }
INLINE V i_cvt(VI a) { return (float)a; }
INLINE float v_hsum(V a) { return a; }
INLINE float v_hmax(V a) { return a; }

#include "kernels/vmath_body.inc"
