/* Blocked direct convolution, AVX-512 (see conv_blocked.h). */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/conv_blocked.h"

#define INLINE static inline __attribute__((always_inline))

/* the tiles on float32: one FMA per input channel, tap and output */
#define CB_ELEM float
#define CB_PER(g) ((g)->cb)
#define CB_WV __m512
#define CB_WLOAD(p) _mm512_loadu_ps(p)
#define CB_XV __m512
#define CB_XSET(v) _mm512_set1_ps(v)
#define CB_MADD(a, w, x) _mm512_fmadd_ps((w), (x), (a))
#define CB_UNROLL 2
#define CB_RUN poprt__convb_run_avx512
#include "kernels/x86/conv_blocked_tile.inc"

/* In-register 16x16 transpose: r[c] becomes column c of the rows. */
INLINE void tr16(__m512 r[16])
{
    __m512 t[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 1]), d = _mm512_castps_pd(t[4 * i + 3]);
        r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
        r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
        r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(c, d));
        r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(c, d));
    }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            t[8 * i + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0x88);
            t[8 * i + 4 + j] = _mm512_shuffle_f32x4(r[8 * i + j], r[8 * i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
        r[j + 8] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
    }
}

void poprt__convb_block_avx512(const float *src, int64_t spitch, int rows, int64_t n,
                               float *dst)
{
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 r[16];
        for (int k = 0; k < 16; k++)
            r[k] = k < rows ? _mm512_loadu_ps(src + k * spitch + j) : _mm512_setzero_ps();
        tr16(r);
        for (int c = 0; c < 16; c++)
            _mm512_storeu_ps(dst + (j + c) * 16, r[c]);
    }
    for (; j < n; j++)
        for (int c = 0; c < 16; c++)
            dst[j * 16 + c] = c < rows ? src[c * spitch + j] : 0.0f;
}

/* ---- one-channel blocks: output rows in place (see conv_blocked.h) ---- */

#include "kernels/x86/conv_rows_store.inc"

/* R (<= ROWS_R) vectors of 16 consecutive output columns from ow x ROWS_CH
 * channels from cs of output row oh: acc starts from the bias and gets
 * every (channel, kh, kw) term in that order; S (1 or 2) is the column
 * stride. Lanes past the row read the columns after it (the buffer has
 * room) and are not stored. BLK: y is NCHW16c (the group's first block,
 * ldy positions per block), else channel rows ldy apart. */
INLINE void rows_tile(const float *x, const float *w, int64_t wpitch, const float *bias,
                      const int R, const int S, const int BLK, const poprt__convb_geom *g,
                      int64_t oh, int64_t ow, int64_t cs, int64_t mc, int relu, float *y,
                      int64_t ldy)
{
    __m512 acc[ROWS_R][ROWS_CH];
    rows_tile_bias(acc, R, bias, cs);
    const float *xr = x + oh * g->sh * g->Wp + ow;
    const float *wt = w + cs;
    for (int64_t c = 0; c < g->ncb; c++) {
        for (int64_t kh = 0; kh < g->KH; kh++) {
            const float *xh = xr + c * g->plane + kh * g->dh * g->Wp;
            for (int64_t kw = 0; kw < g->KW; kw++) {
                /* column (ow + i) * S + kw * dw of the padded row */
                const int64_t col = kw * g->dw;
                const float *xp = S == 1 ? xh + col : xh + (col & 1 ? g->split : 0) + (col >> 1);
                __m512 v[ROWS_R];
#pragma GCC unroll 3
                for (int r = 0; r < R; r++)
                    v[r] = _mm512_loadu_ps(xp + 16 * r);
#pragma GCC unroll 8
                for (int j = 0; j < ROWS_CH; j++) {
                    const __m512 wv = _mm512_set1_ps(wt[j]);
#pragma GCC unroll 3
                    for (int r = 0; r < R; r++)
                        acc[r][j] = _mm512_fmadd_ps(v[r], wv, acc[r][j]);
                }
                wt += wpitch;
            }
        }
    }
    rows_tile_store(acc, R, BLK, g, oh, ow, cs, mc, relu, y, ldy);
}

#define ROWS_S(S, BLK)                                                                       \
    static void rows_s##S##_##BLK(const float *x, const float *w, int64_t wpitch,            \
                                  const float *bias, const poprt__convb_geom *g, int64_t oh, \
                                  int64_t mc, int relu, float *y, int64_t ldy)               \
    {                                                                                        \
        const int s = S, blk = BLK;                                                          \
        ROWS_WALK(ROWS_TILE)                                                                 \
    }
#define ROWS_TILE(R, cs, ow) rows_tile(x, w, wpitch, bias, R, s, blk, g, oh, ow, cs, mc, relu, y, ldy)
ROWS_S(1, 0)
ROWS_S(2, 0)
ROWS_S(1, 1)
ROWS_S(2, 1)

void poprt__convb_rows_avx512(const float *x, const float *w, int64_t wpitch, const float *bias,
                              int64_t mc, const poprt__convb_geom *g, int64_t oh, int relu,
                              int blk, float *y, int64_t ldy)
{
    if (blk)
        (g->sw == 1 ? rows_s1_1 : rows_s2_1)(x, w, wpitch, bias, g, oh, mc, relu, y, ldy);
    else
        (g->sw == 1 ? rows_s1_0 : rows_s2_0)(x, w, wpitch, bias, g, oh, mc, relu, y, ldy);
}

void poprt__convb_even_avx512(const float *src, int64_t n, float *dst)
{
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    int64_t i = 0;
    /* src[2i + 31] is read only while it is at most src[2n - 2] */
    for (; 2 * i + 32 <= 2 * n - 1; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_permutex2var_ps(_mm512_loadu_ps(src + 2 * i), even,
                                                         _mm512_loadu_ps(src + 2 * i + 16)));
    for (; i < n; i++)
        dst[i] = src[2 * i];
}

void poprt__transpose_bias_avx512(const float *src, int64_t spitch, int64_t n, int64_t m,
                                  const float *bias, int relu, float *dst, int64_t dpitch)
{
    for (int64_t i0 = 0; i0 < m; i0 += 16) {
        const int mi = m - i0 < 16 ? (int)(m - i0) : 16;
        const __mmask16 mask_i = (__mmask16)((1u << mi) - 1u);
        __m512 b[16];
        for (int c = 0; c < mi; c++)
            b[c] = _mm512_set1_ps(bias ? bias[i0 + c] : 0.0f);
        for (int64_t j0 = 0; j0 < n; j0 += 16) {
            const int nj = n - j0 < 16 ? (int)(n - j0) : 16;
            const __mmask16 mask_j = (__mmask16)((1u << nj) - 1u);
            __m512 r[16];
            for (int k = 0; k < 16; k++)
                r[k] = k < nj ? _mm512_maskz_loadu_ps(mask_i, src + (j0 + k) * spitch + i0)
                              : _mm512_setzero_ps();
            tr16(r);
            for (int c = 0; c < mi; c++) {
                __m512 v = bias ? _mm512_add_ps(r[c], b[c]) : r[c];
                if (relu)
                    v = _mm512_max_ps(_mm512_setzero_ps(), v);
                _mm512_mask_storeu_ps(dst + (i0 + c) * dpitch + j0, mask_j, v);
            }
        }
    }
}

/* ---- Winograd F(2x2, 3x3) transforms (conv_blocked.h) ------------------------------------ */

/* B^T d of one column of four rows: the input transform's rows (and, applied
 * to a row, its columns) */
INLINE void wino_bt(const __m512 d[4], __m512 t[4])
{
    t[0] = _mm512_sub_ps(d[0], d[2]);
    t[1] = _mm512_add_ps(d[1], d[2]);
    t[2] = _mm512_sub_ps(d[2], d[1]);
    t[3] = _mm512_sub_ps(d[1], d[3]);
}

void poprt__convw_in_avx512(const float *xb, int64_t Wp, int64_t tw, float *v, int64_t vstep)
{
    for (int64_t tx = 0; tx < tw; tx++) {
        const float *p = xb + tx * 2 * 16;
        __m512 r[4][4]; /* r[i][c] = (B^T d)[i][c] */
        for (int c = 0; c < 4; c++) {
            __m512 d[4], t[4];
            for (int i = 0; i < 4; i++)
                d[i] = _mm512_loadu_ps(p + (i * Wp + c) * 16);
            wino_bt(d, t);
            for (int i = 0; i < 4; i++)
                r[i][c] = t[i];
        }
        float *o = v + tx * 16;
        for (int i = 0; i < 4; i++) {
            __m512 t[4];
            wino_bt(r[i], t);
            for (int j = 0; j < 4; j++)
                _mm512_storeu_ps(o + (i * 4 + j) * vstep, t[j]);
        }
    }
}

/* A^T m of four values: the output transform's two rows (or columns) */
INLINE void wino_at(const __m512 m[4], __m512 *o0, __m512 *o1)
{
    *o0 = _mm512_add_ps(_mm512_add_ps(m[0], m[1]), m[2]);
    *o1 = _mm512_sub_ps(_mm512_sub_ps(m[1], m[2]), m[3]);
}

void poprt__convw_out_avx512(const float *m, int64_t mstep, int64_t tw, const float *bias, int rows,
                             int64_t OW, int64_t ow, const float *z, int relu, int yblk, float *y,
                             int64_t ldy, int nch)
{
    const __mmask16 lanes = (__mmask16)((1u << nch) - 1u);
    const __m512 b = bias ? _mm512_loadu_ps(bias) : _mm512_setzero_ps();
    const __m512i idx = _mm512_mullo_epi32(_mm512_set1_epi32((int)ldy),
                                           _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                                             11, 12, 13, 14, 15));
    for (int64_t tx = 0; tx < tw; tx++) {
        const float *p = m + tx * 16;
        __m512 s[2][4]; /* s[r][j] = (A^T m)[r][j] */
        for (int j = 0; j < 4; j++) {
            __m512 c[4];
            for (int i = 0; i < 4; i++)
                c[i] = _mm512_loadu_ps(p + (i * 4 + j) * mstep);
            wino_at(c, &s[0][j], &s[1][j]);
        }
        const int cols = 2 * tx + 1 < ow ? 2 : 1;
        for (int r = 0; r < rows; r++) {
            __m512 o[2];
            wino_at(s[r], &o[0], &o[1]);
            for (int c = 0; c < cols; c++) {
                const int64_t q = r * OW + 2 * tx + c; /* position from the tile row's first */
                __m512 val = _mm512_add_ps(o[c], b);
                if (yblk) {
                    if (z)
                        val = _mm512_add_ps(val, _mm512_loadu_ps(z + q * 16));
                    if (relu)
                        val = _mm512_max_ps(_mm512_setzero_ps(), val);
                    _mm512_storeu_ps(y + q * 16, val);
                } else {
                    if (relu)
                        val = _mm512_max_ps(_mm512_setzero_ps(), val);
                    _mm512_mask_i32scatter_ps(y + q, lanes, idx, val, 4);
                }
            }
        }
    }
}

/* ---- Winograd F(4x4, 3x3) transforms (conv_blocked.h) ------------------------------------ */

/* lanes i < n of v to y[i * ldy] */
INLINE void w4_store_planes(float *y, int64_t ldy, __m512 v, int n)
{
    const __m512i idx = _mm512_mullo_epi32(_mm512_set1_epi32((int)ldy),
                                           _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
                                                             11, 12, 13, 14, 15));
    _mm512_mask_i32scatter_ps(y, (__mmask16)((1u << n) - 1u), idx, v, 4);
}

#define W4_V __m512
#define W4_LANES 16
#define W4_LOAD(p) _mm512_loadu_ps(p)
#define W4_STORE(p, v) _mm512_storeu_ps((p), (v))
#define W4_ADD(a, b) _mm512_add_ps((a), (b))
#define W4_SUB(a, b) _mm512_sub_ps((a), (b))
#define W4_MUL(a, b) _mm512_mul_ps((a), (b))
#define W4_FMADD(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define W4_SET1(f) _mm512_set1_ps(f)
#define W4_ZERO() _mm512_setzero_ps()
#define W4_MAX0(v) _mm512_max_ps(_mm512_setzero_ps(), (v))
#define W4_STORE_PLANES(y, ldy, v, n) w4_store_planes((y), (ldy), (v), (n))
#define W4_IN poprt__convw4_in_avx512
#define W4_OUT poprt__convw4_out_avx512
#define W4_IN_W poprt__convw4w_in_avx512
#define W4_OUT_W poprt__convw4w_out_avx512
#define W4_IN_H poprt__convw4h_in_avx512
#define W4_OUT_H poprt__convw4h_out_avx512
#include "kernels/x86/conv_wino4_body.inc"
