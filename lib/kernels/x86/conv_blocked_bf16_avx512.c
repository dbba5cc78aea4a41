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

/* ---- stems: one-channel planes at column stride 2, on column-pair words ----
 * (conv_blocked.h: poprt__convb_rows_bf16_avx512.) Word i of a padded row
 * holds its columns 2i and 2i + 1, so output column ow's kernel columns
 * 2kp and 2kp + 1 are word ow + kp: 16 consecutive output columns read 16
 * consecutive words, and one VDPBF16PS adds both columns' products. */
#include "kernels/x86/conv_rows_store.inc"

INLINE void rows_tile_bf16(const uint32_t *x, const uint32_t *w, int64_t wpitch,
                           const float *bias, const int R, const int BLK,
                           const poprt__convb_geom *g, int64_t oh, int64_t ow, int64_t cs,
                           int64_t mc, int relu, float *y, int64_t ldy)
{
    __m512 acc[ROWS_R][ROWS_CH];
    rows_tile_bias(acc, R, bias, cs);
    const uint32_t *xr = x + oh * g->sh * g->Wp + ow;
    const uint32_t *wt = w + cs;
    for (int64_t c = 0; c < g->ncb; c++) {
        for (int64_t kh = 0; kh < g->KH; kh++) {
            const uint32_t *xh = xr + c * g->plane + kh * g->dh * g->Wp;
            for (int64_t kp = 0; kp < g->KW; kp++) {
                __m512bh v[ROWS_R];
#pragma GCC unroll 3
                for (int r = 0; r < R; r++)
                    v[r] = (__m512bh)_mm512_loadu_si512(xh + kp + 16 * r);
#pragma GCC unroll 8
                for (int j = 0; j < ROWS_CH; j++) {
                    const __m512bh wv = (__m512bh)_mm512_set1_epi32((int)wt[j]);
#pragma GCC unroll 3
                    for (int r = 0; r < R; r++)
                        acc[r][j] = _mm512_dpbf16_ps(acc[r][j], v[r], wv);
                }
                wt += wpitch;
            }
        }
    }
    rows_tile_store(acc, R, BLK, g, oh, ow, cs, mc, relu, y, ldy);
}

#define ROWS_BF16(BLK)                                                                       \
    static void rows_bf16_##BLK(const uint32_t *x, const uint32_t *w, int64_t wpitch,        \
                                const float *bias, const poprt__convb_geom *g, int64_t oh,   \
                                int64_t mc, int relu, float *y, int64_t ldy)                 \
    {                                                                                        \
        const int blk = BLK;                                                                 \
        ROWS_WALK(ROWS_BF16_TILE)                                                            \
    }
#define ROWS_BF16_TILE(R, cs, ow)                                                            \
    rows_tile_bf16(x, w, wpitch, bias, R, blk, g, oh, ow, cs, mc, relu, y, ldy)
ROWS_BF16(0)
ROWS_BF16(1)

void poprt__convb_rows_bf16_avx512(const uint32_t *x, const uint32_t *w, int64_t wpitch,
                                   const float *bias, int64_t mc, const poprt__convb_geom *g,
                                   int64_t oh, int relu, int blk, float *y, int64_t ldy)
{
    (blk ? rows_bf16_1 : rows_bf16_0)(x, w, wpitch, bias, g, oh, mc, relu, y, ldy);
}
