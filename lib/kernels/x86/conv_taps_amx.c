/* The two loops of the bfloat16 convolution tap by tap (conv_taps.c): X
 * into padded NHWC pair words, and an output row on AMX tiles. This file
 * alone is compiled with the AVX-512, AVX512-BF16 and AMX flags; conv_taps.c
 * enters it only where the AMX bfloat16 GEMM variant is usable.
 *
 * In NHWC the 32 channels of one position are one 64-byte row of an A
 * tile, and 16 output positions of one output row read 16 input positions
 * a column stride apart: for each tap, the A tile is loaded straight from
 * the padded input with a row stride of sw positions, with no im2col. The
 * accumulators are 2 x 2 tiles: 32 positions (two 16-position tiles of the
 * row) x 32 output channels, summed over taps and 32-channel steps in that
 * order (the same for every thread count). */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/bf16_words.h"
#include "kernels/x86/conv_blocked.h"
#include "kernels/x86/conv_paths.h"

/* 16 x 16 transpose of 32-bit words: r[i] lane j becomes r[j] lane i. */
static inline void tr16_epi32(__m512i r[16])
{
    __m512i t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    /* u[4i + k], 128-bit lane L: column 4L + k of rows 4i .. 4i + 3 */
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    for (int k = 0; k < 4; k++) {
        const __m512i x0 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x44);
        const __m512i x1 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xEE);
        const __m512i y0 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x44);
        const __m512i y1 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xEE);
        r[k] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[4 + k] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
        r[8 + k] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[12 + k] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
    }
}

void poprt__conv_taps_convert_amx(const poprt__taps_geom *tg, const float *x, int64_t hp,
                                  int64_t cb, uint32_t *xp)
{
    const int64_t ih = hp - tg->pt, HW = tg->H * tg->W, wpp = tg->Ck / 2;
    uint32_t *row = xp + hp * tg->Wp * wpp + cb * 16;
    for (int64_t wp0 = 0; wp0 < tg->Wp; wp0 += 16) {
        const int64_t n = tg->Wp - wp0 < 16 ? tg->Wp - wp0 : 16;
        /* lanes j with input column wp0 + j - pl inside the row */
        const int64_t jl = tg->pl - wp0, jh = tg->W + tg->pl - wp0;
        const __mmask16 m = ih >= 0 && ih < tg->H ? poprt__lane_mask16(jl, jh) : 0;
        const int64_t first = wp0 + (jl > 0 ? jl : 0) - tg->pl; /* column of the first lane */
        __m512i w[16];
        for (int p = 0; p < 16; p++) {
            const int64_t c0 = cb * 32 + 2 * p, c1 = c0 + 1;
            __m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
            if (m && c0 < tg->C)
                lo = _mm512_maskz_expandloadu_ps(m, x + c0 * HW + ih * tg->W + first);
            if (m && c1 < tg->C)
                hi = _mm512_maskz_expandloadu_ps(m, x + c1 * HW + ih * tg->W + first);
            w[p] = poprt__bf16_pair_words(lo, hi);
        }
        tr16_epi32(w);
        for (int64_t j = 0; j < n; j++)
            _mm512_storeu_si512(row + (wp0 + j) * wpp, w[j]);
    }
}

/* The taps and channel steps of two position tiles (a0, a1: their first
 * positions' words; a1 NULL: one tile) into accumulators 0-3 (1 and 3: the
 * block's channels 16-31; 2 and 3: the second tile). */
static inline __attribute__((always_inline)) void sum_tiles(const poprt__taps_geom *tg,
                                                            const char *a0, const char *a1,
                                                            const char *wb, int64_t astride)
{
    const int64_t csteps = tg->Ck / 32, pos_bytes = tg->Ck * 2;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t kh = 0; kh < tg->KH; kh++)
        for (int64_t kw = 0; kw < tg->KW; kw++) {
            const int64_t off = (kh * tg->dh * tg->Wp + kw * tg->dw) * pos_bytes;
            for (int64_t c = 0; c < csteps; c++, wb += 2048) {
                _tile_loadd(4, a0 + off + c * 64, astride);
                _tile_loadd(6, wb, 128);
                _tile_loadd(7, wb + 64, 128);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                if (a1) {
                    _tile_loadd(5, a1 + off + c * 64, astride);
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
            }
        }
}

void poprt__conv_taps_row_amx(const poprt__taps_geom *tg, const uint32_t *xp,
                              const uint32_t *wpk, int64_t oh, int64_t mb, const float *bias,
                              int relu, float *y)
{
    float acc[32 * 32] __attribute__((aligned(64)));
    const int64_t pos_bytes = tg->Ck * 2, astride = tg->sw * pos_bytes;
    const int64_t OHW = tg->OH * tg->OW;
    const int64_t m0 = mb * 32, mn = tg->M - m0 < 32 ? tg->M - m0 : 32;
    const char *wb = (const char *)(wpk + mb * tg->KH * tg->KW * (tg->Ck / 32) * 512);
    const char *rowp = (const char *)xp + oh * tg->sh * tg->Wp * pos_bytes;
    for (int64_t ow0 = 0; ow0 < tg->OW; ow0 += 32) {
        const int two = tg->OW - ow0 > 16;
        const char *a0 = rowp + ow0 * tg->sw * pos_bytes;
        sum_tiles(tg, a0, two ? a0 + 16 * astride : NULL, wb, astride);
        _tile_stored(0, acc, 128);
        _tile_stored(1, acc + 16, 128);
        if (two) {
            _tile_stored(2, acc + 16 * 32, 128);
            _tile_stored(3, acc + 16 * 32 + 16, 128);
        }
        const int64_t n = tg->OW - ow0 < 32 ? tg->OW - ow0 : 32;
        poprt__transpose_bias_avx512(acc, 32, n, mn, bias ? bias + m0 : NULL, relu,
                                     y + m0 * OHW + oh * tg->OW + ow0, OHW);
    }
}
