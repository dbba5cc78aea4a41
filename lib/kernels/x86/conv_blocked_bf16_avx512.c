/* The blocked direct convolution in bfloat16 (conv_blocked.h): the tiles of
 * conv_blocked_tile.inc on channel-pair words, one VDPBF16PS adding two
 * products (channels 2i and 2i + 1 of a block) to each float32 lane. This
 * file alone is compiled with the AVX-512 and AVX512-BF16 flags; the driver
 * (conv_blocked.c) enters it only where poprt__convb_bf16_usable() said so. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/conv_blocked.h"

#define INLINE static inline __attribute__((always_inline))

#define CB_ELEM uint32_t
#define CB_PER(g) 8
#define CB_PER_CONST 8
#define CB_WV __m512bh
#define CB_WLOAD(p) ((__m512bh)_mm512_loadu_si512(p))
#define CB_XV __m512bh
#define CB_XSET(v) ((__m512bh)_mm512_set1_epi32((int)(v)))
#define CB_MADD(a, w, x) _mm512_dpbf16_ps((a), (w), (x))
#define CB_UNROLL 8
#define CB_RUN poprt__convb_run_bf16_avx512
#include "kernels/x86/conv_blocked_tile.inc"

void poprt__convb_words_avx512(const float *src, int64_t n, uint32_t *dst)
{
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
        /* 32 floats: the low 16 bfloat16 from the first 16, as pairs */
        const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 2 * k + 16),
                                               _mm512_loadu_ps(src + 2 * k));
        _mm512_storeu_si512(dst + k, (__m512i)h);
    }
    if (k < n) { /* 8 words: 16 floats */
        const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(src + 2 * k));
        _mm256_storeu_si256((__m256i *)(dst + k), (__m256i)h);
    }
}
