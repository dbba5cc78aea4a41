/* Blocked direct convolution, AVX2 + FMA (see conv_blocked.h): the same
 * NCHW16c layout, packed weights and driver as the AVX-512 variant, each
 * block of 16 channels two ymm vectors. AVX2 has 16 ymm registers, so a
 * tile is 6 positions x one block of 16 outputs (12 accumulators, two
 * weight vectors, one broadcast); a group's nb blocks run one after the
 * other over the run's positions, each reading its own contiguous weights
 * (POPRT__CONVB_BY_BLOCK: rows of the interleaved layout lie 256 bytes
 * apart and use a quarter of L1's sets). The pf lines (the driver's
 * choice: the next group's weights, since a block's next input blocks
 * follow its current ones, a stream the hardware takes) are prefetched
 * into L2 a few before each tile. Every output
 * gets its terms in the AVX-512 variant's order, (block, kh, kw, i), with
 * one FMA each, so the two give the same bits. This file alone is compiled
 * with -mavx2 -mfma. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/conv_blocked.h"

#define INLINE static inline __attribute__((always_inline))
#define TILE_R 6

/* Positions q .. q+R-1 of output block n of a group, over input blocks
 * [c0, c1): as the AVX-512 tile, for one block. */
INLINE void tile(const float *x, const float *w, const float *bias, const int R, const int LIN,
                 int n, const poprt__convb_geom *g, int64_t q, int64_t c0, int64_t c1,
                 int acc_in, float *out, int64_t ldo, const float *z, int relu)
{
    __m256 acc[TILE_R][2];
    const int64_t per = g->cb;
    int64_t off[TILE_R];
    if (LIN) /* positions q .. q + R - 1 at q * per on: one run (off[0] alone is read) */
        off[0] = q * per;
    else {
        int64_t oh = q / g->OW, ow = q - oh * g->OW;
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            off[r] = (oh * g->sh * g->Wp + ow * g->sw) * per;
            if (++ow == g->OW) {
                ow = 0;
                oh++;
            }
        }
    }
    float *o = out + n * ldo * 16;
    {
        const __m256 b0 = bias ? _mm256_loadu_ps(bias + n * 16) : _mm256_setzero_ps();
        const __m256 b1 = bias ? _mm256_loadu_ps(bias + n * 16 + 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            acc[r][0] = acc_in ? _mm256_loadu_ps(o + r * 16) : b0;
            acc[r][1] = acc_in ? _mm256_loadu_ps(o + r * 16 + 8) : b1;
        }
    }
    /* block n's weights: their own run, 16 floats per (block, kh, kw, i) */
    const int64_t wst = 16;
    const float *wp = w + (n * g->ncb + c0) * g->KH * g->KW * per * 16;
    /* The sums over input blocks [c0, c1) with P channels per block,
     * position r read at xp[XOFF(r, P) + i] from xp at tap (kh, kw) of block
     * c plus BASE. */
#define TILE_SUMS(P, BASE, XOFF, UNROLL)                                                     \
    do {                                                                                     \
        for (int64_t c = c0; c < c1; c++)                                                    \
            for (int64_t kh = 0; kh < g->KH; kh++)                                           \
                for (int64_t kw = 0; kw < g->KW; kw++) {                                     \
                    const float *xp =                                                        \
                        x + c * g->plane + (kh * g->dh * g->Wp + kw * g->dw) * (P) + (BASE); \
                    _Pragma(UNROLL) for (int64_t i = 0; i < (P); i++)                        \
                    {                                                                        \
                        const __m256 w0 = _mm256_loadu_ps(wp), w1 = _mm256_loadu_ps(wp + 8); \
                        wp += wst;                                                           \
                        _Pragma("GCC unroll 6") for (int r = 0; r < R; r++)                  \
                        {                                                                    \
                            const __m256 xv = _mm256_broadcast_ss(xp + XOFF(r, P) + i);      \
                            acc[r][0] = _mm256_fmadd_ps(w0, xv, acc[r][0]);                  \
                            acc[r][1] = _mm256_fmadd_ps(w1, xv, acc[r][1]);                  \
                        }                                                                    \
                    }                                                                        \
                }                                                                            \
    } while (0)
#define OFF_TAB(r, P) off[r]
#define OFF_RUN1(r, P) ((r) * (P))
#define OFF_RUN2(r, P) (2 * (r) * (P))
    /* 16 (or 8) channels per block and a tile whose positions are one run
     * of a row at column stride 1 or 2: the block's steps unrolled, the
     * reads at constant offsets from one pointer. The same terms in the
     * same order as the general loop (two steps per turn, six offsets in
     * registers), which ran a 1x1 conv's tiles with their data in L1 at
     * 80.6 GFLOP/s against 87.1 for this form (best of 6 alternating runs,
     * Zen 3, FMA peak ~92); light_resnet50 at 1 thread 103.6 -> 96.0 ms
     * (best runs). Blocks of 8 (24, 40 channels) likewise: mobilenet_v2's
     * 1x1 of 24 into 144 channels at 56 x 56 0.77-0.79 of the general
     * loop's time, at 14 x 14 0.75-0.80, a 3x3 of 24 channels 0.95-0.96
     * (one process, the two alternately). */
    int run1 = per == 16 || per == 8, run2 = run1;
#pragma GCC unroll 6
    for (int r = 1; !LIN && r < R; r++) {
        run1 &= off[r] == off[0] + r * per;
        run2 &= off[r] == off[0] + 2 * r * per;
    }
    if ((LIN || run1) && per == 16)
        TILE_SUMS(16, off[0], OFF_RUN1, "GCC unroll 16");
    else if (LIN || run1)
        TILE_SUMS(8, off[0], OFF_RUN1, "GCC unroll 8");
    else if (run2 && per == 16)
        TILE_SUMS(16, off[0], OFF_RUN2, "GCC unroll 16");
    else if (run2)
        TILE_SUMS(8, off[0], OFF_RUN2, "GCC unroll 8");
    else
        TILE_SUMS(per, 0, OFF_TAB, "GCC unroll 2");
#undef OFF_TAB
#undef OFF_RUN1
#undef OFF_RUN2
#undef TILE_SUMS
    /* the epilogue as the Add, Relu and Clip kernels compute it: v + z,
     * then max(0, v) or the clip (max_ps returns its second operand, v,
     * where v is NaN, as the Clip kernel's compare and select do) */
    const float *zo = z ? z + n * ldo * 16 : NULL;
    const __m256 lo = _mm256_set1_ps(relu == 2 ? g->lo : 0.0f);
    const __m256 hi = _mm256_set1_ps(relu == 2 ? g->hi : 0.0f);
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int h = 0; h < 2; h++) {
            __m256 v = acc[r][h];
            if (zo)
                v = _mm256_add_ps(v, _mm256_loadu_ps(zo + r * 16 + h * 8));
            if (relu)
                v = _mm256_max_ps(lo, v);
            if (relu == 2)
                v = _mm256_min_ps(hi, v);
            _mm256_storeu_ps(o + r * 16 + h * 8, v);
        }
}

void poprt__convb_run_avx2(const float *x, const float *w, const float *bias, int nb,
                           const poprt__convb_geom *g, int64_t q0, int64_t q1, int64_t c0,
                           int64_t c1, int acc_in, float *out, int64_t ldo, const float *z,
                           int relu, const void *pf, int64_t pf_bytes)
{
    /* tiles of 4 to 6 positions, as even as they come: a tile of fewer
     * than 4 waits on its FMAs' latency (1 position takes as long as 4;
     * a 7 x 7 plane was 8 tiles of 6 and one of 1) */
    const int64_t T = q1 - q0, nt = (T + TILE_R - 1) / TILE_R;
    /* the lines of pf, a few before each tile */
    const char *p = pf;
    int64_t pfn = pf ? pf_bytes / 64 : 0;
    const int64_t per = nt ? (pfn + nb * nt - 1) / (nb * nt) : 0;
    /* a plane whose positions lie cb floats apart in x (a 1x1 conv at
     * stride 1 over unpadded blocks of 16 or 8 channels): no offsets to
     * work out per tile (a division and six steps, against 768 FMAs with
     * 64 channels) */
    const int lin = (g->cb == 16 || g->cb == 8) && g->KH == 1 && g->KW == 1 && g->sh == 1 &&
                    g->sw == 1 && g->Wp == g->OW;
    /* block by block over all the positions: a block's weights stay in L1
     * across the tiles */
    for (int n = 0; n < nb; n++)
        for (int64_t i = 0, q = q0; i < nt; i++) {
            for (int64_t j = 0; j < per && pfn > 0; j++, p += 64, pfn--)
                _mm_prefetch(p, _MM_HINT_T1);
            const int64_t qe = q0 + (i + 1) * T / nt;
            float *o = out + (q - q0) * 16;
            const float *zo = z ? z + (q - q0) * 16 : NULL;
#define RUN_TILE(R)                                                                        \
    (lin ? tile(x, w, bias, R, 1, n, g, q, c0, c1, acc_in, o, ldo, zo, relu)               \
         : tile(x, w, bias, R, 0, n, g, q, c0, c1, acc_in, o, ldo, zo, relu))
            switch (qe - q) {
            case 6: RUN_TILE(6); break;
            case 5: RUN_TILE(5); break;
            case 4: RUN_TILE(4); break;
            case 3: RUN_TILE(3); break;
            case 2: RUN_TILE(2); break;
            default: RUN_TILE(1); break;
            }
#undef RUN_TILE
            q = qe;
        }
}

/* In-register 8x8 transpose: r[c] becomes column c of the rows. */
INLINE void tr8(__m256 r[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 2; i++) {
        u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
        u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
        u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
        u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
    }
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
        r[j + 4] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
}

void poprt__convb_block_avx2(const float *src, int64_t spitch, int rows, int64_t n, float *dst)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int h = 0; h < 2; h++) { /* channels 8h .. 8h + 7 */
            __m256 r[8];
            for (int k = 0; k < 8; k++)
                r[k] = 8 * h + k < rows ? _mm256_loadu_ps(src + (8 * h + k) * spitch + j)
                                        : _mm256_setzero_ps();
            tr8(r);
            for (int c = 0; c < 8; c++)
                _mm256_storeu_ps(dst + (j + c) * 16 + 8 * h, r[c]);
        }
    for (; j < n; j++)
        for (int c = 0; c < 16; c++)
            dst[j * 16 + c] = c < rows ? src[c * spitch + j] : 0.0f;
}

void poprt__convb_block8_avx2(const float *src, int64_t spitch, int64_t n, float *dst)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 r[8];
        for (int k = 0; k < 8; k++)
            r[k] = _mm256_loadu_ps(src + k * spitch + j);
        tr8(r);
        for (int c = 0; c < 8; c++)
            _mm256_storeu_ps(dst + (j + c) * 8, r[c]);
    }
    for (; j < n; j++)
        for (int c = 0; c < 8; c++)
            dst[j * 8 + c] = src[c * spitch + j];
}

/* ---- one-channel blocks: output rows in place (see conv_blocked.h) ---- */

#define ROWS_CH 4 /* output channels per tile */
#define ROWS_R 3  /* vectors of 8 columns per tile: 12 accumulators */

/* Where the taps of a padded input row start: tap 2j at xh + j * st, tap
 * 2j + 1 at xh + o1 + j * st (at column stride 2 the row holds its even
 * columns, then from g->split its odd ones; tap kw reads from column
 * kw * dw). Stepping two pointers replaces each tap's column arithmetic
 * (a multiply, a parity test and two shifts per 12 FMAs in a stem). */
INLINE void rows_taps(const poprt__convb_geom *g, const int S, int64_t *o1, int64_t *st)
{
    if (S == 1) {
        *o1 = g->dw;
        *st = 2 * g->dw;
    } else {
        *o1 = g->dw & 1 ? g->split + (g->dw >> 1) : g->dw >> 1;
        *st = g->dw;
    }
}

/* STEP(xp) for every tap (channel, kh, kw) in that order, xp its input in
 * the row from xr */
#define ROWS_TAPS(xr, STEP)                                                                  \
    do {                                                                                     \
        int64_t o1, st;                                                                      \
        rows_taps(g, S, &o1, &st);                                                           \
        for (int64_t c = 0; c < g->ncb; c++)                                                 \
            for (int64_t kh = 0; kh < g->KH; kh++) {                                         \
                const float *xe = (xr) + c * g->plane + kh * g->dh * g->Wp, *xo = xe + o1;   \
                for (int64_t kw = 0; kw < g->KW; kw += 2, xe += st, xo += st) {              \
                    STEP(xe);                                                                \
                    if (kw + 1 < g->KW)                                                      \
                        STEP(xo);                                                            \
                }                                                                            \
            }                                                                                \
    } while (0)

/* Plain output rows: R (<= ROWS_R) vectors of 8 consecutive output columns
 * from ow x ROWS_CH channels from cs of output row oh, as the AVX-512
 * variant's row tiles: acc starts from the bias and gets every (channel,
 * kh, kw) term in that order. Lanes past the row read the columns after it
 * (the buffer has room) and are not stored. */
INLINE void rows_tile(const float *x, const float *w, int64_t wpitch, const float *bias,
                      const int R, const int S, const poprt__convb_geom *g, int64_t oh,
                      int64_t ow, int64_t cs, int64_t mc, int relu, float *y, int64_t ldy)
{
    __m256 acc[ROWS_R][ROWS_CH];
#pragma GCC unroll 4
    for (int j = 0; j < ROWS_CH; j++) {
        const __m256 b = _mm256_set1_ps(bias ? bias[cs + j] : 0.0f);
#pragma GCC unroll 3
        for (int r = 0; r < R; r++)
            acc[r][j] = b;
    }
    const float *xr = x + oh * g->sh * g->Wp + ow;
    /* the block of channel cs (a multiple of 4: all ROWS_CH in it), rows of
     * wpitch (16) floats per (channel, kh, kw) */
    const float *wt = w + (cs >> 4) * g->ncb * g->KH * g->KW * wpitch + (cs & 15);
    /* tap kw at xp: its weights at wt, then the next tap's */
#define ROWS_STEP(xp)                                                                        \
    do {                                                                                     \
        __m256 v[ROWS_R];                                                                    \
        _Pragma("GCC unroll 3") for (int r = 0; r < R; r++)                                  \
            v[r] = _mm256_loadu_ps((xp) + 8 * r);                                            \
        _Pragma("GCC unroll 4") for (int j = 0; j < ROWS_CH; j++)                            \
        {                                                                                    \
            const __m256 wv = _mm256_broadcast_ss(wt + j);                                   \
            _Pragma("GCC unroll 3") for (int r = 0; r < R; r++) acc[r][j] =                  \
                _mm256_fmadd_ps(v[r], wv, acc[r][j]);                                        \
        }                                                                                    \
        wt += wpitch;                                                                        \
    } while (0)
    ROWS_TAPS(xr, ROWS_STEP);
#undef ROWS_STEP
    if (relu)
#pragma GCC unroll 4
        for (int j = 0; j < ROWS_CH; j++)
#pragma GCC unroll 3
            for (int r = 0; r < R; r++)
                acc[r][j] = _mm256_max_ps(_mm256_setzero_ps(), acc[r][j]);
    float *yo = y + cs * ldy + ow;
#pragma GCC unroll 4
    for (int j = 0; j < ROWS_CH; j++)
        if (j < mc - cs)
#pragma GCC unroll 3
            for (int r = 0; r < R; r++) {
                const int64_t left = g->OW - ow - 8 * r;
                if (left >= 8) {
                    _mm256_storeu_ps(yo + j * ldy + 8 * r, acc[r][j]);
                } else if (left > 0) {
                    float t[8];
                    _mm256_storeu_ps(t, acc[r][j]);
                    memcpy(yo + j * ldy + 8 * r, t, sizeof(float) * (size_t)left);
                }
            }
}

#define ROWS_P 6 /* positions per NCHW16c tile: 12 accumulators */

/* NCHW16c output: ROWS_P consecutive positions from ow x the 16 channels
 * of block c16 (acc[p][h]: channels 8h .. 8h + 7 of position ow + p, the
 * output's own layout, stored as they are). A tap's 16 weights are two
 * loads, each position's input a broadcast: 8 loads per 12 FMAs, as the
 * GEMM's tile. (The 4-channel row tiles above, transposed into 16-byte
 * pieces of the blocks, took 1.05-1.45x the time: the stems 7x7 and 3x3 at
 * stride 2 of 3 channels, a 3x3 one of 1 channel.) The same terms in the
 * same order as rows_tile. Positions past the row read the columns after
 * it (fewer than rows_tile's lanes do) and are not stored. */
INLINE void rows_tile16(const float *x, const float *w, int64_t wpitch, const float *bias,
                        const int S, const poprt__convb_geom *g, int64_t oh, int64_t ow,
                        int64_t c16, int relu, float *y, int64_t ldy)
{
    __m256 acc[ROWS_P][2];
    const __m256 b0 = bias ? _mm256_loadu_ps(bias + c16) : _mm256_setzero_ps();
    const __m256 b1 = bias ? _mm256_loadu_ps(bias + c16 + 8) : _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int p = 0; p < ROWS_P; p++) {
        acc[p][0] = b0;
        acc[p][1] = b1;
    }
    const float *xr = x + oh * g->sh * g->Wp + ow;
    const float *wt = w + (c16 >> 4) * g->ncb * g->KH * g->KW * wpitch;
    /* tap kw at xp: its weights at wt, then the next tap's */
#define ROWS16_STEP(xp)                                                                      \
    do {                                                                                     \
        const __m256 w0 = _mm256_loadu_ps(wt), w1 = _mm256_loadu_ps(wt + 8);                \
        _Pragma("GCC unroll 6") for (int p = 0; p < ROWS_P; p++)                             \
        {                                                                                    \
            const __m256 xb = _mm256_broadcast_ss((xp) + p);                                 \
            acc[p][0] = _mm256_fmadd_ps(xb, w0, acc[p][0]);                                  \
            acc[p][1] = _mm256_fmadd_ps(xb, w1, acc[p][1]);                                  \
        }                                                                                    \
        wt += wpitch;                                                                        \
    } while (0)
    ROWS_TAPS(xr, ROWS16_STEP);
#undef ROWS16_STEP
    float *yo = y + ((c16 >> 4) * ldy + oh * g->OW + ow) * 16;
    const int64_t n = g->OW - ow;
#pragma GCC unroll 6
    for (int p = 0; p < ROWS_P; p++) {
        if (relu) {
            acc[p][0] = _mm256_max_ps(_mm256_setzero_ps(), acc[p][0]);
            acc[p][1] = _mm256_max_ps(_mm256_setzero_ps(), acc[p][1]);
        }
        if (p < n) {
            _mm256_storeu_ps(yo + p * 16, acc[p][0]);
            _mm256_storeu_ps(yo + p * 16 + 8, acc[p][1]);
        }
    }
}

/* Plain rows: a block of 16 channels at a time, then a tile of columns,
 * then the block's four tiles of 4 channels: the tile's input (its rows,
 * ~5 KiB for a 7x7 stem) and the block's weights (~9 KiB) stay in L1
 * (channels outermost swept the whole row's input, 19 KiB, once per 4
 * channels). NCHW16c: a block at a time, its tiles along the row. */
#define ROWS_S(S)                                                                            \
    static void rows_s##S(const float *x, const float *w, int64_t wpitch, const float *bias, \
                          const poprt__convb_geom *g, int64_t oh, int64_t mc, int relu,      \
                          float *y, int64_t ldy)                                             \
    {                                                                                        \
        for (int64_t c16 = 0; c16 < mc; c16 += 16) {                                         \
            const int64_t ce = c16 + 16 < mc ? c16 + 16 : mc;                                \
            int64_t ow = 0;                                                                  \
            for (; ow + 16 < g->OW; ow += 24)                                                \
                for (int64_t cs = c16; cs < ce; cs += ROWS_CH)                               \
                    rows_tile(x, w, wpitch, bias, 3, S, g, oh, ow, cs, mc, relu, y, ldy);    \
            for (int64_t cs = c16; cs < ce; cs += ROWS_CH) {                                 \
                if (ow + 8 < g->OW)                                                          \
                    rows_tile(x, w, wpitch, bias, 2, S, g, oh, ow, cs, mc, relu, y, ldy);    \
                else if (ow < g->OW)                                                         \
                    rows_tile(x, w, wpitch, bias, 1, S, g, oh, ow, cs, mc, relu, y, ldy);    \
            }                                                                                \
        }                                                                                    \
    }                                                                                        \
    static void rows16_s##S(const float *x, const float *w, int64_t wpitch,                  \
                            const float *bias, const poprt__convb_geom *g, int64_t oh,       \
                            int64_t mc, int relu, float *y, int64_t ldy)                     \
    {                                                                                        \
        for (int64_t c16 = 0; c16 < mc; c16 += 16)                                           \
            for (int64_t ow = 0; ow < g->OW; ow += ROWS_P)                                   \
                rows_tile16(x, w, wpitch, bias, S, g, oh, ow, c16, relu, y, ldy);            \
    }
ROWS_S(1)
ROWS_S(2)

void poprt__convb_rows_avx2(const float *x, const float *w, int64_t wpitch, const float *bias,
                            int64_t mc, const poprt__convb_geom *g, int64_t oh, int relu, int blk,
                            float *y, int64_t ldy)
{
    if (blk)
        (g->sw == 1 ? rows16_s1 : rows16_s2)(x, w, wpitch, bias, g, oh, mc, relu, y, ldy);
    else
        (g->sw == 1 ? rows_s1 : rows_s2)(x, w, wpitch, bias, g, oh, mc, relu, y, ldy);
}

void poprt__convb_even_avx2(const float *src, int64_t n, float *dst)
{
    int64_t i = 0;
    /* src[2i + 15] is read only while it is at most src[2n - 2] */
    for (; 2 * i + 16 <= 2 * n - 1; i += 8) {
        const __m256 lo = _mm256_loadu_ps(src + 2 * i), hi = _mm256_loadu_ps(src + 2 * i + 8);
        /* [lo0 lo2 hi0 hi2 | lo4 lo6 hi4 hi6], then the 64-bit pairs in order */
        const __m256 e = _mm256_shuffle_ps(lo, hi, 0x88);
        _mm256_storeu_ps(dst + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e),
                                                                         0xD8)));
    }
    for (; i < n; i++)
        dst[i] = src[2 * i];
}

void poprt__transpose_bias_avx2(const float *src, int64_t spitch, int64_t n, int64_t m,
                                const float *bias, int relu, float *dst, int64_t dpitch)
{
    for (int64_t i0 = 0; i0 < m; i0 += 8) {
        const int mi = m - i0 < 8 ? (int)(m - i0) : 8;
        int64_t j0 = 0;
        for (; mi == 8 && j0 + 8 <= n; j0 += 8) {
            __m256 r[8];
            for (int k = 0; k < 8; k++)
                r[k] = _mm256_loadu_ps(src + (j0 + k) * spitch + i0);
            tr8(r);
            for (int c = 0; c < 8; c++) {
                __m256 v = bias ? _mm256_add_ps(r[c], _mm256_set1_ps(bias[i0 + c])) : r[c];
                if (relu)
                    v = _mm256_max_ps(_mm256_setzero_ps(), v);
                _mm256_storeu_ps(dst + (i0 + c) * dpitch + j0, v);
            }
        }
        /* the columns and channels past whole 8 x 8 blocks, one by one with
         * the same operations */
        for (int c = 0; c < mi; c++)
            for (int64_t j = j0; j < n; j++) {
                float v = src[j * spitch + i0 + c];
                if (bias)
                    v = v + bias[i0 + c];
                if (relu) /* as max(0, v) above: NaN and -0 kept */
                    v = 0.0f > v ? 0.0f : v;
                dst[(i0 + c) * dpitch + j] = v;
            }
    }
}

/* ---- Winograd F(2x2, 3x3) transforms (conv_blocked.h) ------------------------------------ */

/* B^T d of one column of four rows (and, applied to a row, its columns) */
INLINE void wino_bt(const __m256 d[4], __m256 t[4])
{
    t[0] = _mm256_sub_ps(d[0], d[2]);
    t[1] = _mm256_add_ps(d[1], d[2]);
    t[2] = _mm256_sub_ps(d[2], d[1]);
    t[3] = _mm256_sub_ps(d[1], d[3]);
}

void poprt__convw_in_avx2(const float *xb, int64_t Wp, int64_t tw, float *v, int64_t vstep)
{
    for (int64_t tx = 0; tx < tw; tx++)
        for (int h = 0; h < 2; h++) { /* channels 8h .. 8h + 7 of the block */
            const float *p = xb + tx * 2 * 16 + 8 * h;
            __m256 r[4][4]; /* r[i][c] = (B^T d)[i][c] */
            for (int c = 0; c < 4; c++) {
                __m256 d[4], t[4];
                for (int i = 0; i < 4; i++)
                    d[i] = _mm256_loadu_ps(p + (i * Wp + c) * 16);
                wino_bt(d, t);
                for (int i = 0; i < 4; i++)
                    r[i][c] = t[i];
            }
            float *o = v + tx * 16 + 8 * h;
            for (int i = 0; i < 4; i++) {
                __m256 t[4];
                wino_bt(r[i], t);
                for (int j = 0; j < 4; j++)
                    _mm256_storeu_ps(o + (i * 4 + j) * vstep, t[j]);
            }
        }
}

/* A^T m of four values: the output transform's two rows (or columns) */
INLINE void wino_at(const __m256 m[4], __m256 *o0, __m256 *o1)
{
    *o0 = _mm256_add_ps(_mm256_add_ps(m[0], m[1]), m[2]);
    *o1 = _mm256_sub_ps(_mm256_sub_ps(m[1], m[2]), m[3]);
}

void poprt__convw_out_avx2(const float *m, int64_t mstep, int64_t tw, const float *bias, int rows,
                           int64_t OW, int64_t ow, const float *z, int relu, int yblk, float *y,
                           int64_t ldy, int nch)
{
    for (int h = 0; h < 2 && 8 * h < nch; h++) { /* channels 8h .. 8h + 7 of the block */
        const int hn = nch - 8 * h < 8 ? nch - 8 * h : 8;
        const __m256 b = bias ? _mm256_loadu_ps(bias + 8 * h) : _mm256_setzero_ps();
        for (int64_t tx = 0; tx < tw; tx++) {
            const float *p = m + tx * 16 + 8 * h;
            __m256 s[2][4]; /* s[r][j] = (A^T m)[r][j] */
            for (int j = 0; j < 4; j++) {
                __m256 c[4];
                for (int i = 0; i < 4; i++)
                    c[i] = _mm256_loadu_ps(p + (i * 4 + j) * mstep);
                wino_at(c, &s[0][j], &s[1][j]);
            }
            const int cols = 2 * tx + 1 < ow ? 2 : 1;
            for (int r = 0; r < rows; r++) {
                __m256 o[2];
                wino_at(s[r], &o[0], &o[1]);
                for (int c = 0; c < cols; c++) {
                    const int64_t q = r * OW + 2 * tx + c; /* position from the tile row's first */
                    __m256 val = _mm256_add_ps(o[c], b);
                    if (yblk) {
                        if (z)
                            val = _mm256_add_ps(val, _mm256_loadu_ps(z + q * 16 + 8 * h));
                        if (relu)
                            val = _mm256_max_ps(_mm256_setzero_ps(), val);
                        _mm256_storeu_ps(y + q * 16 + 8 * h, val);
                    } else {
                        if (relu)
                            val = _mm256_max_ps(_mm256_setzero_ps(), val);
                        float t[8];
                        _mm256_storeu_ps(t, val);
                        for (int i = 0; i < hn; i++)
                            y[(8 * h + i) * ldy + q] = t[i];
                    }
                }
            }
        }
    }
}

/* ---- Winograd F(4x4, 3x3) transforms (conv_blocked.h) ------------------------------------ */

/* lanes i < n of v to y[i * ldy] */
INLINE void w4_store_planes(float *y, int64_t ldy, __m256 v, int n)
{
    float t[8];
    _mm256_storeu_ps(t, v);
    for (int i = 0; i < n && i < 8; i++)
        y[i * ldy] = t[i];
}

#define W4_V __m256
#define W4_LANES 8
#define W4_LOAD(p) _mm256_loadu_ps(p)
#define W4_STORE(p, v) _mm256_storeu_ps((p), (v))
#define W4_ADD(a, b) _mm256_add_ps((a), (b))
#define W4_SUB(a, b) _mm256_sub_ps((a), (b))
#define W4_MUL(a, b) _mm256_mul_ps((a), (b))
#define W4_FMADD(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define W4_SET1(f) _mm256_set1_ps(f)
#define W4_ZERO() _mm256_setzero_ps()
#define W4_MAX0(v) _mm256_max_ps(_mm256_setzero_ps(), (v))
#define W4_STORE_PLANES(y, ldy, v, n) w4_store_planes((y), (ldy), (v), (n))
#define W4_IN poprt__convw4_in_avx2
#define W4_OUT poprt__convw4_out_avx2
#define W4_IN_W poprt__convw4w_in_avx2
#define W4_OUT_W poprt__convw4w_out_avx2
#define W4_IN_H poprt__convw4h_in_avx2
#define W4_OUT_H poprt__convw4h_out_avx2
#include "kernels/x86/conv_wino4_body.inc"
