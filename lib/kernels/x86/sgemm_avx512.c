/* AVX-512 fp32 GEMM micro-kernels and packer. This file alone is compiled
 * with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma; it is only entered
 * after poprt__cpu_features() reported AVX-512. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/sgemm.h"

#define INLINE static inline __attribute__((always_inline))

/* The mr x (16*NV) tile, mr a compile-time constant after inlining so the
 * accumulators live in zmm registers. AS is the packed A row count (the
 * variant's MR). Direct convolution, channel-major: for each of kc
 * channels, every tap t reads B at b + c*bs + toff[t] (the taps of one
 * channel touch a few neighbouring rows of one plane, which stay in L1);
 * A holds (channel, tap) rows of AS values. */
INLINE void tile_taps(const int mr, const int NV, const int AS, int64_t kc, int64_t ntaps,
                      const int64_t *restrict toff, const float *restrict a,
                      const float *restrict b, int64_t bs, float *restrict c, int64_t ldc,
                      float alpha, float beta, int nr)
{
    __m512 acc[14][4];
#pragma GCC unroll 14
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            acc[r][v] = _mm512_setzero_ps();
    /* C is touched once at the end: start bringing it in now */
#pragma GCC unroll 14
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++)
            _mm_prefetch((const char *)(c + r * ldc + v * 16), _MM_HINT_T0);
    for (int64_t ch = 0; ch < kc; ch++, b += bs) {
        for (int64_t t = 0; t < ntaps; t++) {
            const float *bt = b + toff[t];
            __m512 bv[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++)
                bv[v] = _mm512_loadu_ps(bt + v * 16);
#pragma GCC unroll 14
            for (int r = 0; r < mr; r++) {
                const __m512 ar = _mm512_set1_ps(a[r]);
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++)
                    acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
            }
            a += AS;
        }
    }
    __mmask16 m[4];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        const int left = nr - v * 16;
        m[v] = left >= 16 ? (__mmask16)0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            float *cp = c + r * ldc + v * 16;
            const __m512 t = _mm512_mul_ps(va, acc[r][v]);
            if (beta == 0.0f)
                _mm512_mask_storeu_ps(cp, m[v], t);
            else
                _mm512_mask_storeu_ps(cp, m[v],
                                      _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m[v], cp), t));
        }
}

/* The GEMM tile: one tap at offset 0, B rows NV vectors at b + p*bs. */
INLINE void tile(const int mr, const int NV, const int AS, int64_t kc, const float *restrict a,
                 const float *restrict b, int64_t bs, float *restrict c, int64_t ldc, float alpha,
                 float beta, int nr)
{
    static const int64_t at_b[1] = {0};
    tile_taps(mr, NV, AS, kc, 1, at_b, a, b, bs, c, ldc, alpha, beta, nr);
}

/* C update of a full tile whose accumulators the k loop left in acc[r][v*16..]. */
INLINE void store_acc(const int MR, const int NV, const float *acc, float *restrict c,
                      int64_t ldc, float alpha, float beta, int nr)
{
    __mmask16 m[4];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        const int left = nr - v * 16;
        m[v] = left >= 16 ? (__mmask16)0xffff : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
    }
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            float *cp = c + r * ldc + v * 16;
            const __m512 t = _mm512_mul_ps(va, _mm512_load_ps(acc + (r * NV + v) * 16));
            if (beta == 0.0f)
                _mm512_mask_storeu_ps(cp, m[v], t);
            else
                _mm512_mask_storeu_ps(cp, m[v],
                                      _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m[v], cp), t));
        }
}

/* Full-height tiles: the k loop is written out in assembly so that the
 * accumulators stay pinned in zmm0.. with one broadcast per A value and no
 * register shuffling (GCC's allocation of the intrinsic version cost ~10%).
 * Same arithmetic as tile(): acc += a[r] * b[j] in k order, one FMA each.
 * 14x32 takes two k per loop turn (B rows at b and b + bs), which halves
 * the pointer updates and the loop branch, scalar uops that can compete
 * with the FMAs for ports 0 and 5 (about 1% on the kernel alone). */
static void full_14x32(int64_t kc, const float *a, const float *b, int64_t bs,
                        float *c, int64_t ldc, float alpha, float beta, int nr)
{
    float acc[14 * 32] __attribute__((aligned(64)));
    const float *pf = b + 8 * bs; /* B rows 8 k ahead: B may be read in place */
    int64_t n2;
    __asm__ volatile(
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
        "vpxord %%zmm1, %%zmm1, %%zmm1\n\t"
        "vpxord %%zmm2, %%zmm2, %%zmm2\n\t"
        "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"
        "vpxord %%zmm4, %%zmm4, %%zmm4\n\t"
        "vpxord %%zmm5, %%zmm5, %%zmm5\n\t"
        "vpxord %%zmm6, %%zmm6, %%zmm6\n\t"
        "vpxord %%zmm7, %%zmm7, %%zmm7\n\t"
        "vpxord %%zmm8, %%zmm8, %%zmm8\n\t"
        "vpxord %%zmm9, %%zmm9, %%zmm9\n\t"
        "vpxord %%zmm10, %%zmm10, %%zmm10\n\t"
        "vpxord %%zmm11, %%zmm11, %%zmm11\n\t"
        "vpxord %%zmm12, %%zmm12, %%zmm12\n\t"
        "vpxord %%zmm13, %%zmm13, %%zmm13\n\t"
        "vpxord %%zmm14, %%zmm14, %%zmm14\n\t"
        "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
        "vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
        "vpxord %%zmm17, %%zmm17, %%zmm17\n\t"
        "vpxord %%zmm18, %%zmm18, %%zmm18\n\t"
        "vpxord %%zmm19, %%zmm19, %%zmm19\n\t"
        "vpxord %%zmm20, %%zmm20, %%zmm20\n\t"
        "vpxord %%zmm21, %%zmm21, %%zmm21\n\t"
        "vpxord %%zmm22, %%zmm22, %%zmm22\n\t"
        "vpxord %%zmm23, %%zmm23, %%zmm23\n\t"
        "vpxord %%zmm24, %%zmm24, %%zmm24\n\t"
        "vpxord %%zmm25, %%zmm25, %%zmm25\n\t"
        "vpxord %%zmm26, %%zmm26, %%zmm26\n\t"
        "vpxord %%zmm27, %%zmm27, %%zmm27\n\t"
        "mov %[kc], %[n2]\n\t"
        "shr $1, %[n2]\n\t"
        "jz 3f\n\t"
        ".p2align 5\n\t"
        "1:\n\t"
        "vmovups 0(%[b]), %%zmm28\n\t"
        "vmovups 64(%[b]), %%zmm29\n\t"
        "prefetcht0 (%[pf])\n\t"
        "prefetcht0 64(%[pf])\n\t"
        "vbroadcastss 0(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm0\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm1\n\t"
        "vbroadcastss 4(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm2\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm3\n\t"
        "vbroadcastss 8(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm4\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm5\n\t"
        "vbroadcastss 12(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm6\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm7\n\t"
        "vbroadcastss 16(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm8\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm9\n\t"
        "vbroadcastss 20(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm10\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm11\n\t"
        "vbroadcastss 24(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm12\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm13\n\t"
        "vbroadcastss 28(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm14\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm15\n\t"
        "vbroadcastss 32(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm16\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm17\n\t"
        "vbroadcastss 36(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm18\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm19\n\t"
        "vbroadcastss 40(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm20\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm21\n\t"
        "vbroadcastss 44(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm22\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm23\n\t"
        "vbroadcastss 48(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm24\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm25\n\t"
        "vbroadcastss 52(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm26\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm27\n\t"
        "vmovups (%[b],%[bs],1), %%zmm28\n\t"
        "vmovups 64(%[b],%[bs],1), %%zmm29\n\t"
        "prefetcht0 (%[pf],%[bs],1)\n\t"
        "prefetcht0 64(%[pf],%[bs],1)\n\t"
        "vbroadcastss 56(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm0\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm1\n\t"
        "vbroadcastss 60(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm2\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm3\n\t"
        "vbroadcastss 64(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm4\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm5\n\t"
        "vbroadcastss 68(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm6\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm7\n\t"
        "vbroadcastss 72(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm8\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm9\n\t"
        "vbroadcastss 76(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm10\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm11\n\t"
        "vbroadcastss 80(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm12\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm13\n\t"
        "vbroadcastss 84(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm14\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm15\n\t"
        "vbroadcastss 88(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm16\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm17\n\t"
        "vbroadcastss 92(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm18\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm19\n\t"
        "vbroadcastss 96(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm20\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm21\n\t"
        "vbroadcastss 100(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm22\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm23\n\t"
        "vbroadcastss 104(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm24\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm25\n\t"
        "vbroadcastss 108(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm26\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm27\n\t"
        "lea (%[b],%[bs],2), %[b]\n\t"
        "lea (%[pf],%[bs],2), %[pf]\n\t"
        "add $112, %[a]\n\t"
        "dec %[n2]\n\t"
        "jnz 1b\n\t"
        "3:\n\t"
        "test $1, %[kc]\n\t"
        "jz 2f\n\t"
        "vmovups 0(%[b]), %%zmm28\n\t"
        "vmovups 64(%[b]), %%zmm29\n\t"
        "prefetcht0 (%[pf])\n\t"
        "prefetcht0 64(%[pf])\n\t"
        "vbroadcastss 0(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm0\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm1\n\t"
        "vbroadcastss 4(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm2\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm3\n\t"
        "vbroadcastss 8(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm4\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm5\n\t"
        "vbroadcastss 12(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm6\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm7\n\t"
        "vbroadcastss 16(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm8\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm9\n\t"
        "vbroadcastss 20(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm10\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm11\n\t"
        "vbroadcastss 24(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm12\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm13\n\t"
        "vbroadcastss 28(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm14\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm15\n\t"
        "vbroadcastss 32(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm16\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm17\n\t"
        "vbroadcastss 36(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm18\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm19\n\t"
        "vbroadcastss 40(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm20\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm21\n\t"
        "vbroadcastss 44(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm22\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm23\n\t"
        "vbroadcastss 48(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm24\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm25\n\t"
        "vbroadcastss 52(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm26\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm27\n\t"
        "2:\n\t"
        "vmovups %%zmm0, 0(%[acc])\n\t"
        "vmovups %%zmm1, 64(%[acc])\n\t"
        "vmovups %%zmm2, 128(%[acc])\n\t"
        "vmovups %%zmm3, 192(%[acc])\n\t"
        "vmovups %%zmm4, 256(%[acc])\n\t"
        "vmovups %%zmm5, 320(%[acc])\n\t"
        "vmovups %%zmm6, 384(%[acc])\n\t"
        "vmovups %%zmm7, 448(%[acc])\n\t"
        "vmovups %%zmm8, 512(%[acc])\n\t"
        "vmovups %%zmm9, 576(%[acc])\n\t"
        "vmovups %%zmm10, 640(%[acc])\n\t"
        "vmovups %%zmm11, 704(%[acc])\n\t"
        "vmovups %%zmm12, 768(%[acc])\n\t"
        "vmovups %%zmm13, 832(%[acc])\n\t"
        "vmovups %%zmm14, 896(%[acc])\n\t"
        "vmovups %%zmm15, 960(%[acc])\n\t"
        "vmovups %%zmm16, 1024(%[acc])\n\t"
        "vmovups %%zmm17, 1088(%[acc])\n\t"
        "vmovups %%zmm18, 1152(%[acc])\n\t"
        "vmovups %%zmm19, 1216(%[acc])\n\t"
        "vmovups %%zmm20, 1280(%[acc])\n\t"
        "vmovups %%zmm21, 1344(%[acc])\n\t"
        "vmovups %%zmm22, 1408(%[acc])\n\t"
        "vmovups %%zmm23, 1472(%[acc])\n\t"
        "vmovups %%zmm24, 1536(%[acc])\n\t"
        "vmovups %%zmm25, 1600(%[acc])\n\t"
        "vmovups %%zmm26, 1664(%[acc])\n\t"
        "vmovups %%zmm27, 1728(%[acc])\n\t"
        : [a] "+r"(a), [b] "+r"(b), [pf] "+r"(pf), [n2] "=&r"(n2)
        : [kc] "r"(kc), [bs] "r"(bs * 4), [acc] "r"(acc)
        : "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7",
          "zmm8", "zmm9", "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15",
          "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", "zmm21", "zmm22", "zmm23",
          "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30", "zmm31",
          "cc", "memory");
    store_acc(14, 2, acc, c, ldc, alpha, beta, nr);
}

static void full_12x32(int64_t kc, const float *a, const float *b, int64_t bs,
                        float *c, int64_t ldc, float alpha, float beta, int nr)
{
    float acc[12 * 32] __attribute__((aligned(64)));
    const float *pf = b + 8 * bs; /* B rows 8 k ahead: B may be read in place */
    __asm__ volatile(
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
        "vpxord %%zmm1, %%zmm1, %%zmm1\n\t"
        "vpxord %%zmm2, %%zmm2, %%zmm2\n\t"
        "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"
        "vpxord %%zmm4, %%zmm4, %%zmm4\n\t"
        "vpxord %%zmm5, %%zmm5, %%zmm5\n\t"
        "vpxord %%zmm6, %%zmm6, %%zmm6\n\t"
        "vpxord %%zmm7, %%zmm7, %%zmm7\n\t"
        "vpxord %%zmm8, %%zmm8, %%zmm8\n\t"
        "vpxord %%zmm9, %%zmm9, %%zmm9\n\t"
        "vpxord %%zmm10, %%zmm10, %%zmm10\n\t"
        "vpxord %%zmm11, %%zmm11, %%zmm11\n\t"
        "vpxord %%zmm12, %%zmm12, %%zmm12\n\t"
        "vpxord %%zmm13, %%zmm13, %%zmm13\n\t"
        "vpxord %%zmm14, %%zmm14, %%zmm14\n\t"
        "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
        "vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
        "vpxord %%zmm17, %%zmm17, %%zmm17\n\t"
        "vpxord %%zmm18, %%zmm18, %%zmm18\n\t"
        "vpxord %%zmm19, %%zmm19, %%zmm19\n\t"
        "vpxord %%zmm20, %%zmm20, %%zmm20\n\t"
        "vpxord %%zmm21, %%zmm21, %%zmm21\n\t"
        "vpxord %%zmm22, %%zmm22, %%zmm22\n\t"
        "vpxord %%zmm23, %%zmm23, %%zmm23\n\t"
        "test %[kc], %[kc]\n\t"
        "jz 2f\n\t"
        ".p2align 5\n\t"
        "1:\n\t"
        "vmovups 0(%[b]), %%zmm28\n\t"
        "vmovups 64(%[b]), %%zmm29\n\t"
        "prefetcht0 (%[pf])\n\t"
        "prefetcht0 64(%[pf])\n\t"
        "add %[bs], %[b]\n\t"
        "add %[bs], %[pf]\n\t"
        "vbroadcastss 0(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm0\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm1\n\t"
        "vbroadcastss 4(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm2\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm3\n\t"
        "vbroadcastss 8(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm4\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm5\n\t"
        "vbroadcastss 12(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm6\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm7\n\t"
        "vbroadcastss 16(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm8\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm9\n\t"
        "vbroadcastss 20(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm10\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm11\n\t"
        "vbroadcastss 24(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm12\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm13\n\t"
        "vbroadcastss 28(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm14\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm15\n\t"
        "vbroadcastss 32(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm16\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm17\n\t"
        "vbroadcastss 36(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm18\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm19\n\t"
        "vbroadcastss 40(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm28, %%zmm30, %%zmm20\n\t"
        "vfmadd231ps %%zmm29, %%zmm30, %%zmm21\n\t"
        "vbroadcastss 44(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm28, %%zmm31, %%zmm22\n\t"
        "vfmadd231ps %%zmm29, %%zmm31, %%zmm23\n\t"
        "add $48, %[a]\n\t"
        "dec %[kc]\n\t"
        "jnz 1b\n\t"
        "2:\n\t"
        "vmovups %%zmm0, 0(%[acc])\n\t"
        "vmovups %%zmm1, 64(%[acc])\n\t"
        "vmovups %%zmm2, 128(%[acc])\n\t"
        "vmovups %%zmm3, 192(%[acc])\n\t"
        "vmovups %%zmm4, 256(%[acc])\n\t"
        "vmovups %%zmm5, 320(%[acc])\n\t"
        "vmovups %%zmm6, 384(%[acc])\n\t"
        "vmovups %%zmm7, 448(%[acc])\n\t"
        "vmovups %%zmm8, 512(%[acc])\n\t"
        "vmovups %%zmm9, 576(%[acc])\n\t"
        "vmovups %%zmm10, 640(%[acc])\n\t"
        "vmovups %%zmm11, 704(%[acc])\n\t"
        "vmovups %%zmm12, 768(%[acc])\n\t"
        "vmovups %%zmm13, 832(%[acc])\n\t"
        "vmovups %%zmm14, 896(%[acc])\n\t"
        "vmovups %%zmm15, 960(%[acc])\n\t"
        "vmovups %%zmm16, 1024(%[acc])\n\t"
        "vmovups %%zmm17, 1088(%[acc])\n\t"
        "vmovups %%zmm18, 1152(%[acc])\n\t"
        "vmovups %%zmm19, 1216(%[acc])\n\t"
        "vmovups %%zmm20, 1280(%[acc])\n\t"
        "vmovups %%zmm21, 1344(%[acc])\n\t"
        "vmovups %%zmm22, 1408(%[acc])\n\t"
        "vmovups %%zmm23, 1472(%[acc])\n\t"
        : [a] "+r"(a), [b] "+r"(b), [kc] "+r"(kc), [pf] "+r"(pf)
        : [bs] "r"(bs * 4), [acc] "r"(acc)
        : "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7",
          "zmm8", "zmm9", "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15",
          "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", "zmm21", "zmm22", "zmm23",
          "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30", "zmm31",
          "cc", "memory");
    store_acc(12, 2, acc, c, ldc, alpha, beta, nr);
}

static void full_6x64(int64_t kc, const float *a, const float *b, int64_t bs,
                        float *c, int64_t ldc, float alpha, float beta, int nr)
{
    float acc[6 * 64] __attribute__((aligned(64)));
    const float *pf = b + 8 * bs; /* B rows 8 k ahead: B may be read in place */
    __asm__ volatile(
        "vpxord %%zmm0, %%zmm0, %%zmm0\n\t"
        "vpxord %%zmm1, %%zmm1, %%zmm1\n\t"
        "vpxord %%zmm2, %%zmm2, %%zmm2\n\t"
        "vpxord %%zmm3, %%zmm3, %%zmm3\n\t"
        "vpxord %%zmm4, %%zmm4, %%zmm4\n\t"
        "vpxord %%zmm5, %%zmm5, %%zmm5\n\t"
        "vpxord %%zmm6, %%zmm6, %%zmm6\n\t"
        "vpxord %%zmm7, %%zmm7, %%zmm7\n\t"
        "vpxord %%zmm8, %%zmm8, %%zmm8\n\t"
        "vpxord %%zmm9, %%zmm9, %%zmm9\n\t"
        "vpxord %%zmm10, %%zmm10, %%zmm10\n\t"
        "vpxord %%zmm11, %%zmm11, %%zmm11\n\t"
        "vpxord %%zmm12, %%zmm12, %%zmm12\n\t"
        "vpxord %%zmm13, %%zmm13, %%zmm13\n\t"
        "vpxord %%zmm14, %%zmm14, %%zmm14\n\t"
        "vpxord %%zmm15, %%zmm15, %%zmm15\n\t"
        "vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
        "vpxord %%zmm17, %%zmm17, %%zmm17\n\t"
        "vpxord %%zmm18, %%zmm18, %%zmm18\n\t"
        "vpxord %%zmm19, %%zmm19, %%zmm19\n\t"
        "vpxord %%zmm20, %%zmm20, %%zmm20\n\t"
        "vpxord %%zmm21, %%zmm21, %%zmm21\n\t"
        "vpxord %%zmm22, %%zmm22, %%zmm22\n\t"
        "vpxord %%zmm23, %%zmm23, %%zmm23\n\t"
        "test %[kc], %[kc]\n\t"
        "jz 2f\n\t"
        ".p2align 5\n\t"
        "1:\n\t"
        "vmovups 0(%[b]), %%zmm24\n\t"
        "vmovups 64(%[b]), %%zmm25\n\t"
        "vmovups 128(%[b]), %%zmm26\n\t"
        "vmovups 192(%[b]), %%zmm27\n\t"
        "prefetcht0 (%[pf])\n\t"
        "prefetcht0 64(%[pf])\n\t"
        "prefetcht0 128(%[pf])\n\t"
        "prefetcht0 192(%[pf])\n\t"
        "add %[bs], %[b]\n\t"
        "add %[bs], %[pf]\n\t"
        "vbroadcastss 0(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm24, %%zmm30, %%zmm0\n\t"
        "vfmadd231ps %%zmm25, %%zmm30, %%zmm1\n\t"
        "vfmadd231ps %%zmm26, %%zmm30, %%zmm2\n\t"
        "vfmadd231ps %%zmm27, %%zmm30, %%zmm3\n\t"
        "vbroadcastss 4(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm24, %%zmm31, %%zmm4\n\t"
        "vfmadd231ps %%zmm25, %%zmm31, %%zmm5\n\t"
        "vfmadd231ps %%zmm26, %%zmm31, %%zmm6\n\t"
        "vfmadd231ps %%zmm27, %%zmm31, %%zmm7\n\t"
        "vbroadcastss 8(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm24, %%zmm30, %%zmm8\n\t"
        "vfmadd231ps %%zmm25, %%zmm30, %%zmm9\n\t"
        "vfmadd231ps %%zmm26, %%zmm30, %%zmm10\n\t"
        "vfmadd231ps %%zmm27, %%zmm30, %%zmm11\n\t"
        "vbroadcastss 12(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm24, %%zmm31, %%zmm12\n\t"
        "vfmadd231ps %%zmm25, %%zmm31, %%zmm13\n\t"
        "vfmadd231ps %%zmm26, %%zmm31, %%zmm14\n\t"
        "vfmadd231ps %%zmm27, %%zmm31, %%zmm15\n\t"
        "vbroadcastss 16(%[a]), %%zmm30\n\t"
        "vfmadd231ps %%zmm24, %%zmm30, %%zmm16\n\t"
        "vfmadd231ps %%zmm25, %%zmm30, %%zmm17\n\t"
        "vfmadd231ps %%zmm26, %%zmm30, %%zmm18\n\t"
        "vfmadd231ps %%zmm27, %%zmm30, %%zmm19\n\t"
        "vbroadcastss 20(%[a]), %%zmm31\n\t"
        "vfmadd231ps %%zmm24, %%zmm31, %%zmm20\n\t"
        "vfmadd231ps %%zmm25, %%zmm31, %%zmm21\n\t"
        "vfmadd231ps %%zmm26, %%zmm31, %%zmm22\n\t"
        "vfmadd231ps %%zmm27, %%zmm31, %%zmm23\n\t"
        "add $24, %[a]\n\t"
        "dec %[kc]\n\t"
        "jnz 1b\n\t"
        "2:\n\t"
        "vmovups %%zmm0, 0(%[acc])\n\t"
        "vmovups %%zmm1, 64(%[acc])\n\t"
        "vmovups %%zmm2, 128(%[acc])\n\t"
        "vmovups %%zmm3, 192(%[acc])\n\t"
        "vmovups %%zmm4, 256(%[acc])\n\t"
        "vmovups %%zmm5, 320(%[acc])\n\t"
        "vmovups %%zmm6, 384(%[acc])\n\t"
        "vmovups %%zmm7, 448(%[acc])\n\t"
        "vmovups %%zmm8, 512(%[acc])\n\t"
        "vmovups %%zmm9, 576(%[acc])\n\t"
        "vmovups %%zmm10, 640(%[acc])\n\t"
        "vmovups %%zmm11, 704(%[acc])\n\t"
        "vmovups %%zmm12, 768(%[acc])\n\t"
        "vmovups %%zmm13, 832(%[acc])\n\t"
        "vmovups %%zmm14, 896(%[acc])\n\t"
        "vmovups %%zmm15, 960(%[acc])\n\t"
        "vmovups %%zmm16, 1024(%[acc])\n\t"
        "vmovups %%zmm17, 1088(%[acc])\n\t"
        "vmovups %%zmm18, 1152(%[acc])\n\t"
        "vmovups %%zmm19, 1216(%[acc])\n\t"
        "vmovups %%zmm20, 1280(%[acc])\n\t"
        "vmovups %%zmm21, 1344(%[acc])\n\t"
        "vmovups %%zmm22, 1408(%[acc])\n\t"
        "vmovups %%zmm23, 1472(%[acc])\n\t"
        : [a] "+r"(a), [b] "+r"(b), [kc] "+r"(kc), [pf] "+r"(pf)
        : [bs] "r"(bs * 4), [acc] "r"(acc)
        : "zmm0", "zmm1", "zmm2", "zmm3", "zmm4", "zmm5", "zmm6", "zmm7",
          "zmm8", "zmm9", "zmm10", "zmm11", "zmm12", "zmm13", "zmm14", "zmm15",
          "zmm16", "zmm17", "zmm18", "zmm19", "zmm20", "zmm21", "zmm22", "zmm23",
          "zmm24", "zmm25", "zmm26", "zmm27", "zmm28", "zmm29", "zmm30", "zmm31",
          "cc", "memory");
    store_acc(6, 4, acc, c, ldc, alpha, beta, nr);
}

/* One function per variant; a switch turns the run-time row count into a
 * constant so each case is a fully unrolled, register-allocated tile. */
#define CASE(R, NV, AS)                                                                     \
    case R: tile(R, NV, AS, kc, a, b, bs, c, ldc, alpha, beta, nr); break;

/* The plain micro-kernel, and the one summing over channels and taps for
 * direct convolution (sgemm.h), whose sum stays in registers throughout
 * (its inner loop compiles to the same broadcast/FMA sequence as the
 * assembly above, with no spills). */
#define TCASE(R, NV, AS)                                                                    \
    case R: tile_taps(R, NV, AS, kc, ntaps, toff, a, b, bs, c, ldc, alpha, beta, nr); break;
#define DEFINE_UKR(MR, NR, NV, CASES, TCASES)                                               \
    void poprt__sgemm_ukr_avx512_##MR##x##NR(int64_t kc, int mr, int nr, const float *a,     \
                                             const float *b, int64_t bs, float *c,           \
                                             int64_t ldc, float alpha, float beta)           \
    {                                                                                       \
        if (mr == MR) {                                                                     \
            full_##MR##x##NR(kc, a, b, bs, c, ldc, alpha, beta, nr);                        \
            return;                                                                         \
        }                                                                                   \
        switch (mr) { CASES default: break; }                                               \
    }                                                                                       \
    void poprt__sgemm_ukr_taps_avx512_##MR##x##NR(int64_t kc, int64_t ntaps,                 \
                                                  const int64_t *toff, int mr, int nr,       \
                                                  const float *a, const float *b, int64_t bs, \
                                                  float *c, int64_t ldc, float alpha,        \
                                                  float beta)                                \
    {                                                                                       \
        switch (mr) { TCASES default: break; }                                              \
    }

#define CASES14(C, NV, AS)                                                                  \
    C(14, NV, AS) C(13, NV, AS) C(12, NV, AS) C(11, NV, AS) C(10, NV, AS)                   \
    C(9, NV, AS) C(8, NV, AS) C(7, NV, AS) C(6, NV, AS) C(5, NV, AS)                        \
    C(4, NV, AS) C(3, NV, AS) C(2, NV, AS) C(1, NV, AS)
#define CASES12(C, NV, AS)                                                                  \
    C(12, NV, AS) C(11, NV, AS) C(10, NV, AS) C(9, NV, AS) C(8, NV, AS)                     \
    C(7, NV, AS) C(6, NV, AS) C(5, NV, AS) C(4, NV, AS) C(3, NV, AS)                        \
    C(2, NV, AS) C(1, NV, AS)
#define CASES6(C, NV, AS)                                                                   \
    C(6, NV, AS) C(5, NV, AS) C(4, NV, AS) C(3, NV, AS) C(2, NV, AS)                        \
    C(1, NV, AS)

DEFINE_UKR(14, 32, 2, CASES14(CASE, 2, 14), CASES14(TCASE, 2, 14))
DEFINE_UKR(12, 32, 2, CASES12(CASE, 2, 12), CASES12(TCASE, 2, 12))
DEFINE_UKR(6, 64, 4, CASES6(CASE, 4, 6), CASES6(TCASE, 4, 6))

/* ---- packer ----------------------------------------------------------------
 * dst[p*width + r] = src[r*rs + p*ps] (r < n), zero for n <= r < width.
 * ps == 1 (rows contiguous along k: A, or B^T) is a transpose, done 16 x 16
 * at a time with four rounds of two-source permutes; rs == 1 is a copy. */

/* Permute indices of the transpose rounds: for round h (1, 2, 4, 8), lane c
 * of the low row takes (c & ~h) from row i (c & h clear) or row i + h, and
 * the high row takes c | h from row i or c from row i + h. Swapping row bit
 * h with column bit h in all four rounds transposes 16 x 16. */
static const int32_t tr_idx[8][16] __attribute__((aligned(64))) = {
    {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
    {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31},
    {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
    {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31},
    {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
    {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31},
    {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
    {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31},
};

INLINE void tr_round(__m512 *x, int round)
{
    const int h = 1 << round;
    const __m512i ilo = _mm512_load_si512(tr_idx[2 * round]);
    const __m512i ihi = _mm512_load_si512(tr_idx[2 * round + 1]);
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++)
        if (!(i & h)) {
            const __m512 a = x[i], b = x[i + h];
            x[i] = _mm512_permutex2var_ps(a, ilo, b);
            x[i + h] = _mm512_permutex2var_ps(a, ihi, b);
        }
}

INLINE void transpose16(__m512 *x)
{
    tr_round(x, 0);
    tr_round(x, 1);
    tr_round(x, 2);
    tr_round(x, 3);
}

/* rows [r0, r0 + nrow) (nrow <= 16) x k [p0, p0 + np) (np <= 16) */
static void tr_block(const float *src, int64_t rs, int r0, int nrow, int64_t p0, int np,
                     int width, float *dst)
{
    __m512 x[16];
    const __mmask16 km = (__mmask16)(np >= 16 ? 0xffff : (1u << np) - 1);
    for (int i = 0; i < 16; i++)
        x[i] = i < nrow ? _mm512_maskz_loadu_ps(km, src + (r0 + i) * rs + p0)
                        : _mm512_setzero_ps();
    transpose16(x);
    const int cnt = width - r0 < 16 ? width - r0 : 16;
    const __mmask16 wm = (__mmask16)(cnt >= 16 ? 0xffff : (1u << cnt) - 1);
    for (int q = 0; q < np; q++)
        _mm512_mask_storeu_ps(dst + (p0 + q) * width + r0, wm, x[q]);
}

void poprt__sgemm_pack_avx512(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                              int width, float *dst)
{
    if (ps == 1 && rs != 1) {
        for (int64_t p0 = 0; p0 < kc; p0 += 16) {
            const int np = (int)(kc - p0 < 16 ? kc - p0 : 16);
            for (int r0 = 0; r0 < width; r0 += 16) {
                const int nrow = n - r0 < 16 ? (n - r0 > 0 ? n - r0 : 0) : 16;
                tr_block(src, rs, r0, nrow, p0, np, width, dst);
            }
        }
        return;
    }
    /* copy rows of n floats, zero-padded to width */
    for (int64_t p = 0; p < kc; p++) {
        const float *s = src + p * ps;
        float *d = dst + p * width;
        for (int r0 = 0; r0 < width; r0 += 16) {
            const int cnt = width - r0 < 16 ? width - r0 : 16;
            const int have = n - r0 < cnt ? (n - r0 > 0 ? n - r0 : 0) : cnt;
            const __mmask16 hm = (__mmask16)(have >= 16 ? 0xffff : (1u << have) - 1);
            const __mmask16 wm = (__mmask16)(cnt >= 16 ? 0xffff : (1u << cnt) - 1);
            _mm512_mask_storeu_ps(d + r0, wm, _mm512_maskz_loadu_ps(hm, s + r0));
        }
    }
}
