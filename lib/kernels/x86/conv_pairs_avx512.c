/* The two loops of the channel-pair bfloat16 convolution (conv_pairs.c):
 * X to pair words, and pair words to the GEMM's packed B. This file alone is
 * compiled with the AVX-512, AVX512-BF16 and BMI2 flags; conv_pairs.c enters
 * it only with a usable bfloat16 GEMM variant (AVX512-BF16 or AMX), whose
 * CPUs have all three. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/bf16_words.h"
#include "kernels/x86/conv_paths.h"

void poprt__conv_pairs_convert_avx512(const float *x, int64_t Cg, int64_t in_sz, int64_t cp0,
                                      int64_t cp1, uint32_t *xp)
{
    for (int64_t cp = cp0; cp < cp1; cp++) {
        const float *s0 = x + 2 * cp * in_sz;
        const float *s1 = 2 * cp + 1 < Cg ? s0 + in_sz : NULL;
        uint32_t *d = xp + cp * in_sz;
        int64_t i = 0;
        for (; i + 16 <= in_sz; i += 16) {
            const __m512 hi = s1 ? _mm512_loadu_ps(s1 + i) : _mm512_setzero_ps();
            _mm512_storeu_si512(d + i, poprt__bf16_pair_words(_mm512_loadu_ps(s0 + i), hi));
        }
        if (i < in_sz) {
            const __mmask16 m = (__mmask16)((1u << (in_sz - i)) - 1);
            const __m512 hi = s1 ? _mm512_maskz_loadu_ps(m, s1 + i) : _mm512_setzero_ps();
            const __m512 lo = _mm512_maskz_loadu_ps(m, s0 + i);
            _mm512_mask_storeu_epi32(d + i, m, poprt__bf16_pair_words(lo, hi));
        }
    }
}

/* Fills the 32 words w[0..1] of one panel row: run r puts input row `row`
 * (NULL: outside the image, zeros) at lanes [r->j, r->j + r->n), lane
 * r->j + q reading column base + q * s of it, zero where that column is
 * outside [0, width). */
static inline void run_words(__m512i w[2], const uint32_t *row, int64_t base, int64_t s,
                             int64_t width, const poprt__pairs_run *r)
{
    /* the run's valid q: 0 <= base + q*s < width */
    int64_t qlo = base >= 0 ? 0 : (-base + s - 1) / s;
    int64_t qhi = base >= width ? 0 : (width - 1 - base) / s + 1;
    if (qhi > r->n)
        qhi = r->n;
    if (qhi <= qlo)
        return;
    for (int h = 0; h < 2; h++) {
        const int64_t l0 = 16 * h; /* lane l0 + i: q = l0 + i - r->j */
        const __mmask16 m = poprt__lane_mask16(r->j + qlo - l0, r->j + qhi - l0);
        if (!m)
            continue;
        if (s == 1) {
            w[h] = _mm512_mask_loadu_epi32(w[h], m, row + base + l0 - r->j);
        } else if (s == 2) {
            /* 32 words from column base + 2 (l0 - r->j): the even ones */
            const uint32_t *q = row + base + 2 * (l0 - r->j);
            const uint32_t m2 = _pdep_u32(m, 0x55555555u);
            const __m512i a = _mm512_maskz_loadu_epi32((__mmask16)m2, q);
            const __m512i b = _mm512_maskz_loadu_epi32((__mmask16)(m2 >> 16), q + 16);
            const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24,
                                                   26, 28, 30);
            w[h] = _mm512_mask_mov_epi32(w[h], m, _mm512_permutex2var_epi32(a, even, b));
        } else {
            const __m512i idx = _mm512_add_epi32(
                _mm512_set1_epi32((int)(base + (l0 - r->j) * s)),
                _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                                     14, 15),
                                   _mm512_set1_epi32((int)s)));
            w[h] = _mm512_mask_i32gather_epi32(w[h], m, idx, row, 4);
        }
    }
}

void poprt__conv_pairs_pack_b_avx512(const poprt__pairs_b *t, int64_t i0, int64_t i1)
{
    const poprt__geom3 *g = t->g;
    const poprt__sgemm_b_layout *l = t->l;
    const int64_t in12 = g->in[1] * g->in[2];
    for (int64_t b = 0; b < l->nkb; b++) {
        for (int64_t i = i0; i < i1; i++) {
            int64_t pairs, words;
            uint32_t *dst = poprt__sgemm_b_panel(l, b, i, &pairs, &words);
            const poprt__pairs_run *r0 = t->runs + t->panel_runs[i];
            const poprt__pairs_run *r1 = t->runs + t->panel_runs[i + 1];
            /* pair P = cp * k_sz + tap */
            int64_t P = b * l->kcb / 2, cp = P / g->k_sz, tap = P % g->k_sz;
            for (int64_t p = 0; p < pairs; p++) {
                const uint32_t *plane = t->xp + cp * g->in_sz;
                const int64_t *o = t->taps + 3 * tap;
                __m512i w[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
                for (const poprt__pairs_run *r = r0; r < r1; r++) {
                    const int64_t id = r->d + o[0], ih = r->h + o[1];
                    if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1])
                        continue;
                    run_words(w, plane + id * in12 + ih * g->in[2], r->w + o[2], g->s[2],
                              g->in[2], r);
                }
                _mm512_store_si512(dst + p * 32, w[0]);
                _mm512_store_si512(dst + p * 32 + 16, w[1]);
                if (++tap == g->k_sz) {
                    tap = 0;
                    cp++;
                }
            }
            for (int64_t p = pairs; p < words; p++) {
                _mm512_store_si512(dst + p * 32, _mm512_setzero_si512());
                _mm512_store_si512(dst + p * 32 + 16, _mm512_setzero_si512());
            }
        }
    }
}
