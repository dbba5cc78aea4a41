/* AVX512-BF16 GEMM micro-kernel and packer (the bfloat16 variant of
 * sgemm_kernels.inc). This file alone is compiled with -mavx512bf16 on top
 * of the AVX-512 flags; it is only entered after poprt__cpu_features()
 * reported AVX512_BF16.
 *
 * Packed operands hold k in pairs: the 32-bit word of row r and pair p is
 * bf16(x(r, 2p)) | bf16(x(r, 2p+1)) << 16 (round to nearest even; the
 * instruction treats denormal inputs as zero), so one VDPBF16PS adds two
 * products per float lane: acc += a(r,2p) b(2p,j) + a(r,2p+1) b(2p+1,j),
 * the products exact, the sum in float32. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/bf16_words.h"
#include "kernels/x86/sgemm.h"

#define INLINE static inline __attribute__((always_inline))
#define NR 32

/* One pair row of the tile: broadcast A's word of row r (byte offset off)
 * into zmm `t`, two dot products into accumulators zmm a0 and a1. */
#define ROW(off, t, a0, a1)                                                                        \
    "vpbroadcastd " #off "(%[a]), %%zmm" #t "\n\t"                                                 \
    "vdpbf16ps %%zmm28, %%zmm" #t ", %%zmm" #a0 "\n\t"                                             \
    "vdpbf16ps %%zmm29, %%zmm" #t ", %%zmm" #a1 "\n\t"
#define ZERO(r) "vpxord %%zmm" #r ", %%zmm" #r ", %%zmm" #r "\n\t"
#define SAVE(r) "vmovaps %%zmm" #r ", " #r "*64(%[acc])\n\t"

void poprt__sgemm_bf16_store(const float *acc, int mr, int nr, float *c, int64_t ldc,
                             float alpha, float beta)
{
    const __mmask16 m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? (__mmask16)0xffff
                         : nr <= 16 ? (__mmask16)0
                                    : (__mmask16)((1u << (nr - 16)) - 1);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int r = 0; r < mr; r++) {
        float *cp = c + r * ldc;
        const __m512 t0 = _mm512_mul_ps(va, _mm512_load_ps(acc + r * NR));
        const __m512 t1 = _mm512_mul_ps(va, _mm512_load_ps(acc + r * NR + 16));
        if (beta == 0.0f) {
            _mm512_mask_storeu_ps(cp, m0, t0);
            _mm512_mask_storeu_ps(cp + 16, m1, t1);
        } else {
            _mm512_mask_storeu_ps(cp, m0, _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, cp), t0));
            _mm512_mask_storeu_ps(cp + 16, m1,
                                  _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, cp + 16), t1));
        }
    }
}

/* The k loops are written out in assembly so that the accumulators stay
 * pinned in zmm0.. next to B's two vectors (zmm28, zmm29) and the
 * broadcasts (zmm30, zmm31) (GCC's allocation of the intrinsic version ran
 * at ~70% of the instruction's peak): per pair of k, 2 B loads, one
 * broadcast per row, two VDPBF16PS per row. All rows of the tile are
 * computed (packed A is zero-padded); mr of them are stored. Two heights:
 * 14 rows (28 accumulators) and 12 (24), which pads 128-row activations
 * (a transformer's sequence) to 132 rows instead of 140. */
#define LOOP_HEAD                                                                                  \
    "test %[n], %[n]\n\t"                                                                          \
    "jz 2f\n\t"                                                                                    \
    ".p2align 5\n\t"                                                                               \
    "1:\n\t"                                                                                       \
    "vmovups 0(%[b]), %%zmm28\n\t"                                                                 \
    "vmovups 64(%[b]), %%zmm29\n\t"                                                                \
    "prefetcht0 (%[pf])\n\t"                                                                       \
    "prefetcht0 64(%[pf])\n\t"
#define LOOP_TAIL(abytes)                                                                          \
    "add $" #abytes ", %[a]\n\t"                                                                   \
    "add %[bstride], %[b]\n\t"                                                                     \
    "add %[bstride], %[pf]\n\t"                                                                    \
    "dec %[n]\n\t"                                                                                 \
    "jnz 1b\n\t"                                                                                   \
    "2:\n\t"
#define ASM_OPERANDS                                                                               \
    : [a] "+r"(a), [b] "+r"(b), [pf] "+r"(pf), [n] "+r"(n)                                         \
    : [bstride] "r"(bs * 4), [acc] "r"(acc)                                                        \
    : "memory", "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",     \
      "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18",    \
      "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28",   \
      "xmm29", "xmm30", "xmm31"

void poprt__sgemm_ukr_avx512bf16_14x32(int64_t kc, int mr, int nr, const float *a,
                                       const float *b, int64_t bs, float *c, int64_t ldc,
                                       float alpha, float beta)
{
    float acc[14 * NR] __attribute__((aligned(64)));
    const char *pf = (const char *)(b + 8 * bs); /* B pair rows 8 ahead */
    int64_t n = (kc + 1) / 2;
    __asm__ volatile(
        ZERO(0) ZERO(1) ZERO(2) ZERO(3) ZERO(4) ZERO(5) ZERO(6) ZERO(7) ZERO(8) ZERO(9)
        ZERO(10) ZERO(11) ZERO(12) ZERO(13) ZERO(14) ZERO(15) ZERO(16) ZERO(17) ZERO(18)
        ZERO(19) ZERO(20) ZERO(21) ZERO(22) ZERO(23) ZERO(24) ZERO(25) ZERO(26) ZERO(27)
        LOOP_HEAD
        ROW(0, 30, 0, 1) ROW(4, 31, 2, 3) ROW(8, 30, 4, 5) ROW(12, 31, 6, 7)
        ROW(16, 30, 8, 9) ROW(20, 31, 10, 11) ROW(24, 30, 12, 13) ROW(28, 31, 14, 15)
        ROW(32, 30, 16, 17) ROW(36, 31, 18, 19) ROW(40, 30, 20, 21) ROW(44, 31, 22, 23)
        ROW(48, 30, 24, 25) ROW(52, 31, 26, 27)
        LOOP_TAIL(56)
        SAVE(0) SAVE(1) SAVE(2) SAVE(3) SAVE(4) SAVE(5) SAVE(6) SAVE(7) SAVE(8) SAVE(9)
        SAVE(10) SAVE(11) SAVE(12) SAVE(13) SAVE(14) SAVE(15) SAVE(16) SAVE(17) SAVE(18)
        SAVE(19) SAVE(20) SAVE(21) SAVE(22) SAVE(23) SAVE(24) SAVE(25) SAVE(26) SAVE(27)
        ASM_OPERANDS);
    poprt__sgemm_bf16_store(acc, mr < 14 ? mr : 14, nr, c, ldc, alpha, beta);
}

void poprt__sgemm_ukr_avx512bf16_12x32(int64_t kc, int mr, int nr, const float *a,
                                       const float *b, int64_t bs, float *c, int64_t ldc,
                                       float alpha, float beta)
{
    float acc[12 * NR] __attribute__((aligned(64)));
    const char *pf = (const char *)(b + 8 * bs);
    int64_t n = (kc + 1) / 2;
    __asm__ volatile(
        ZERO(0) ZERO(1) ZERO(2) ZERO(3) ZERO(4) ZERO(5) ZERO(6) ZERO(7) ZERO(8) ZERO(9)
        ZERO(10) ZERO(11) ZERO(12) ZERO(13) ZERO(14) ZERO(15) ZERO(16) ZERO(17) ZERO(18)
        ZERO(19) ZERO(20) ZERO(21) ZERO(22) ZERO(23)
        LOOP_HEAD
        ROW(0, 30, 0, 1) ROW(4, 31, 2, 3) ROW(8, 30, 4, 5) ROW(12, 31, 6, 7)
        ROW(16, 30, 8, 9) ROW(20, 31, 10, 11) ROW(24, 30, 12, 13) ROW(28, 31, 14, 15)
        ROW(32, 30, 16, 17) ROW(36, 31, 18, 19) ROW(40, 30, 20, 21) ROW(44, 31, 22, 23)
        LOOP_TAIL(48)
        SAVE(0) SAVE(1) SAVE(2) SAVE(3) SAVE(4) SAVE(5) SAVE(6) SAVE(7) SAVE(8) SAVE(9)
        SAVE(10) SAVE(11) SAVE(12) SAVE(13) SAVE(14) SAVE(15) SAVE(16) SAVE(17) SAVE(18)
        SAVE(19) SAVE(20) SAVE(21) SAVE(22) SAVE(23)
        ASM_OPERANDS);
    poprt__sgemm_bf16_store(acc, mr < 12 ? mr : 12, nr, c, ldc, alpha, beta);
}

/* 16 floats at s (the first n of them; the others read as 0) */
INLINE __m512 load_n(const float *s, int n)
{
    return n >= 16 ? _mm512_loadu_ps(s) : _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), s);
}

void poprt__sgemm_pack_bf16_avx512(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                                   int width, float *dst)
{
    uint32_t *d = (uint32_t *)dst;
    const int64_t np = (kc + 1) / 2;
    if (ps == 1) {
        /* k runs along each row (A as stored, B transposed): 32 k of a row
         * become 16 words, one per pair, written down the panel's column */
        const __m512i idx = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(width));
        for (int r = 0; r < width; r++) {
            const float *s = src + r * rs;
            for (int64_t p0 = 0; p0 < np; p0 += 16) {
                const int pn = np - p0 < 16 ? (int)(np - p0) : 16;
                const int64_t k0 = 2 * p0;
                const int left = kc - k0 < 32 ? (int)(kc - k0) : 32;
                __m512i w = _mm512_setzero_si512();
                if (r < n) {
                    const __m512 lo = load_n(s + k0, left), hi = load_n(s + k0 + 16, left - 16 > 0 ? left - 16 : 0);
                    const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo);
                    memcpy(&w, &h, sizeof w);
                }
                _mm512_mask_i32scatter_epi32(d + p0 * width + r, (__mmask16)((1u << pn) - 1), idx,
                                             w, 4);
            }
        }
        return;
    }
    if (rs == 1) {
        /* the packed direction runs along memory (B as stored: rows of N):
         * two k rows give 16 words of 16 columns */
        for (int64_t p = 0; p < np; p++) {
            const float *s0 = src + 2 * p * ps, *s1 = s0 + ps;
            const int two = 2 * p + 1 < kc;
            for (int r = 0; r < width; r += 16) {
                const int left = n - r >= 16 ? 16 : n - r > 0 ? n - r : 0;
                const __m512 x0 = load_n(s0 + r, left);
                const __m512 x1 = two ? load_n(s1 + r, left) : _mm512_setzero_ps();
                const __m512i w = poprt__bf16_pair_words(x0, x1);
                if (width - r >= 16)
                    _mm512_storeu_si512(d + p * width + r, w);
                else
                    _mm512_mask_storeu_epi32(d + p * width + r,
                                             (__mmask16)((1u << (width - r)) - 1), w);
            }
        }
        return;
    }
    poprt__sgemm_pack_bf16(kc, n, src, rs, ps, width, dst);
}
