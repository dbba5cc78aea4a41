/* bfloat16 pair words, as every bfloat16 packer writes them: for 16 lanes,
 * bf16(even[i]) | bf16(odd[i]) << 16, each rounded to nearest even
 * (VCVTNEPS2BF16). Only for files compiled with -mavx512bf16, entered on
 * CPUs that have it. */
#ifndef POPRT_X86_BF16_WORDS_H
#define POPRT_X86_BF16_WORDS_H
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* Lanes [lo, hi) of 16 (clamped) as a mask: the lanes of a 16-word load
 * that fall inside a row, for the packers that read rows with borders. */
static inline __mmask16 poprt__lane_mask16(int64_t lo, int64_t hi)
{
    if (lo < 0)
        lo = 0;
    if (hi > 16)
        hi = 16;
    if (hi <= lo)
        return 0;
    return (__mmask16)(((1u << (hi - lo)) - 1) << lo);
}

static inline __m512i poprt__bf16_pair_words(__m512 even, __m512 odd)
{
    __m256i h0, h1;
    const __m256bh c0 = _mm512_cvtneps_pbh(even), c1 = _mm512_cvtneps_pbh(odd);
    memcpy(&h0, &c0, sizeof h0);
    memcpy(&h1, &c1, sizeof h1);
    return _mm512_or_si512(_mm512_cvtepu16_epi32(h0),
                           _mm512_slli_epi32(_mm512_cvtepu16_epi32(h1), 16));
}

#endif
