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
#include "kernels/x86/sgemm.h"

#define INLINE static inline __attribute__((always_inline))
#define MR 14
#define NR 32

/* pairs of bfloat16 as the dot-product instruction takes them */
INLINE __m512bh as_bh(__m512i x)
{
    __m512bh r;
    memcpy(&r, &x, sizeof r);
    return r;
}

void poprt__sgemm_ukr_avx512bf16_14x32(int64_t kc, int mr, int nr, const float *a,
                                       const float *b, int64_t bs, float *c, int64_t ldc,
                                       float alpha, float beta)
{
    const uint32_t *ap = (const uint32_t *)a, *bp = (const uint32_t *)b;
    const int64_t np = (kc + 1) / 2;
    __m512 acc[MR][2];
#pragma GCC unroll 14
    for (int r = 0; r < MR; r++) {
        acc[r][0] = _mm512_setzero_ps();
        acc[r][1] = _mm512_setzero_ps();
    }
    for (int64_t p = 0; p < np; p++, ap += MR, bp += bs) {
        const __m512bh b0 = as_bh(_mm512_loadu_si512(bp)), b1 = as_bh(_mm512_loadu_si512(bp + 16));
        _mm_prefetch((const char *)(bp + 8 * bs), _MM_HINT_T0);
        _mm_prefetch((const char *)(bp + 8 * bs + 16), _MM_HINT_T0);
#pragma GCC unroll 14
        for (int r = 0; r < MR; r++) {
            const __m512bh ar = as_bh(_mm512_set1_epi32((int)ap[r]));
            acc[r][0] = _mm512_dpbf16_ps(acc[r][0], ar, b0);
            acc[r][1] = _mm512_dpbf16_ps(acc[r][1], ar, b1);
        }
    }
    const __mmask16 m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? (__mmask16)0xffff
                         : nr <= 16 ? (__mmask16)0
                                    : (__mmask16)((1u << (nr - 16)) - 1);
    const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
    for (int r = 0; r < MR; r++) {
        if (r >= mr)
            break;
        float *cp = c + r * ldc;
        const __m512 t0 = _mm512_mul_ps(va, acc[r][0]), t1 = _mm512_mul_ps(va, acc[r][1]);
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
                __m256i h0, h1;
                const __m256bh c0 = _mm512_cvtneps_pbh(x0), c1 = _mm512_cvtneps_pbh(x1);
                memcpy(&h0, &c0, sizeof h0);
                memcpy(&h1, &c1, sizeof h1);
                const __m512i w = _mm512_or_si512(
                    _mm512_cvtepu16_epi32(h0), _mm512_slli_epi32(_mm512_cvtepu16_epi32(h1), 16));
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
