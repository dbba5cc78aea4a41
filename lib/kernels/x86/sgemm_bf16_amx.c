/* AMX-BF16 GEMM micro-kernel and packers (the amxbf16 variant of
 * sgemm_kernels.inc). This file alone is compiled with -mamx-tile
 * -mamx-bf16 on top of the AVX-512 flags; it is only entered after
 * poprt__cpu_features() reported the AMX level (which includes Linux's
 * permission for tile data).
 *
 * A tile multiply TDPBF16PS(C, A, B) adds, for a 16 x 16 float block C,
 * C[i][j] += sum_p a(i, 2p) b(2p, j) + a(i, 2p+1) b(2p+1, j) over 16 pairs p:
 * A's tile holds 16 rows of 16 pair words (64 bytes each, k running along
 * the row), B's tile 16 pair rows of 16 column words. So the two packed
 * operands differ here:
 *   B panel: word (p, j) at b[p*NR + j], the layout of every bfloat16
 *            variant (poprt__sgemm_pack_bf16_avx512), two tiles side by side;
 *   A panel: word (r, p) at a[r*kw + p], row by row (pack_a below);
 * and the pairs of a panel are padded with zero words to kw, a multiple of
 * 16 (one tile's depth), so every tile step is whole (sgemm.c's kalign).
 *
 * The 32 x 32 tile: 4 accumulator tiles (2 x 2 blocks of 16 x 16), 2 of A
 * (rows 0-15, 16-31), 2 of B (columns 0-15, 16-31), per 32 k four tile
 * loads and four multiplies. Products are exact and summed in float32
 * (denormal inputs and outputs flushed to zero by the instruction). */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "kernels/x86/bf16_words.h"
#include "kernels/x86/sgemm.h"

#define MR 32
#define NR 32
#define KT 16 /* pairs per tile step */

/* The tile configuration (LDTILECFG: palette 1; tiles 0-3 accumulators,
 * 4-5 A, 6-7 B, all 16 rows of 64 bytes). It belongs to the thread, and the
 * host may use tiles between two GEMMs: the driver loads it at the start of
 * each of its tasks, on the thread that runs it (the variant's enter,
 * sgemm.c), and the micro-kernel relies on it. */
typedef struct tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

static const tilecfg cfg = {
    1, 0, {0}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

void poprt__sgemm_enter_amx(void)
{
    _tile_loadconfig(&cfg);
}

static int64_t row_words(int64_t kc)
{
    return ((kc + 1) / 2 + KT - 1) / KT * KT;
}

/* The k loop of a 32 x 32 block into accumulator tiles 0-3 (C's rows
 * 0-15: 0 and 1, rows 16-31: 2 and 3; columns 16-31: 1 and 3). */
static inline __attribute__((always_inline)) void steps_32x32(const char *ap, const char *bp,
                                                              int64_t bst, int64_t steps)
{
    for (int64_t s = 0; s < steps; s++) {
        _tile_loadd(4, ap + s * 2048, 64);
        _tile_loadd(6, bp + s * KT * bst, bst);
        _tile_loadd(7, bp + s * KT * bst + 64, bst);
        _tile_loadd(5, ap + s * 2048 + 1024, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
}

void poprt__sgemm_ukr_amxbf16_32x32(int64_t kc, int mr, int nr, const float *a, const float *b,
                                    int64_t bs, float *c, int64_t ldc, float alpha, float beta)
{
    const int64_t steps = row_words(kc) / KT;
    const int64_t bst = bs * 4; /* bytes between B pair rows */
    const char *ap = (const char *)a, *bp = (const char *)b;
    if (mr == MR && nr == NR && alpha == 1.0f && (beta == 0.0f || beta == 1.0f)) {
        /* a whole tile of C, plain sum: C itself is the accumulator (loaded
         * for beta 1: later K blocks add to the earlier ones' sums) */
        const int64_t cs = ldc * 4;
        if (beta == 0.0f) {
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
        } else {
            _tile_loadd(0, c, cs);
            _tile_loadd(1, c + 16, cs);
            _tile_loadd(2, c + 16 * ldc, cs);
            _tile_loadd(3, c + 16 * ldc + 16, cs);
        }
        steps_32x32(ap, bp, bst, steps);
        _tile_stored(0, c, cs);
        _tile_stored(1, c + 16, cs);
        _tile_stored(2, c + 16 * ldc, cs);
        _tile_stored(3, c + 16 * ldc + 16, cs);
        return;
    }
    float acc[MR * NR] __attribute__((aligned(64)));
    _tile_zero(0);
    _tile_zero(1);
    if (mr <= 16) {
        /* rows 16-31 are padding: half the work */
        for (int64_t s = 0; s < steps; s++) {
            _tile_loadd(4, ap + s * 2048, 64);
            _tile_loadd(6, bp + s * KT * bst, bst);
            _tile_loadd(7, bp + s * KT * bst + 64, bst);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
        }
        _tile_stored(0, acc, NR * 4);
        _tile_stored(1, acc + 16, NR * 4);
    } else {
        _tile_zero(2);
        _tile_zero(3);
        steps_32x32(ap, bp, bst, steps);
        _tile_stored(0, acc, NR * 4);
        _tile_stored(1, acc + 16, NR * 4);
        _tile_stored(2, acc + 16 * NR, NR * 4);
        _tile_stored(3, acc + 16 * NR + 16, NR * 4);
    }
    poprt__sgemm_bf16_store(acc, mr, nr, c, ldc, alpha, beta);
}

/* 16 floats at s (the first n of them; the others read as 0) */
static inline __m512 load_n(const float *s, int n)
{
    return n >= 16 ? _mm512_loadu_ps(s)
           : n > 0 ? _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), s)
                   : _mm512_setzero_ps();
}

void poprt__sgemm_pack_a_bf16_amx(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                                  int width, float *dst)
{
    uint32_t *d = (uint32_t *)dst;
    const int64_t np = (kc + 1) / 2, kw = row_words(kc);
    memset(d, 0, (size_t)width * (size_t)kw * sizeof *d);
    if (ps == 1) {
        /* k runs along each row (A as stored): 32 floats of a row are one
         * row of a tile */
        for (int r = 0; r < n; r++) {
            const float *s = src + r * rs;
            for (int64_t p0 = 0; p0 < np; p0 += 16) {
                const int64_t k0 = 2 * p0;
                const int left = kc - k0 < 32 ? (int)(kc - k0) : 32;
                const __m512 lo = load_n(s + k0, left), hi = load_n(s + k0 + 16, left - 16);
                const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo);
                __m512i w;
                memcpy(&w, &h, sizeof w);
                const int pn = np - p0 < 16 ? (int)(np - p0) : 16;
                _mm512_mask_storeu_epi32(d + (p0 / KT * width + r) * KT,
                                         (__mmask16)((1u << pn) - 1), w);
            }
        }
        return;
    }
    if (rs == 1) {
        /* rows run along memory (A transposed): two k rows give the pair
         * words of 16 rows, written down the panel's column */
        const __m512i idx = _mm512_mullo_epi32(
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm512_set1_epi32(KT));
        for (int64_t p = 0; p < np; p++) {
            const float *s0 = src + 2 * p * ps, *s1 = s0 + ps;
            const int two = 2 * p + 1 < kc;
            for (int r = 0; r < n; r += 16) {
                const int left = n - r >= 16 ? 16 : n - r;
                const __m512i w = poprt__bf16_pair_words(load_n(s0 + r, left),
                                             two ? load_n(s1 + r, left) : _mm512_setzero_ps());
                _mm512_mask_i32scatter_epi32(d + (p / KT * width + r) * KT + p % KT,
                                             (__mmask16)((1u << left) - 1), idx, w, 4);
            }
        }
        return;
    }
    for (int r = 0; r < n; r++)
        for (int64_t p = 0; p < np; p++) {
            const float *s = src + r * rs + 2 * p * ps;
            d[(p / KT * width + r) * KT + p % KT] = poprt__sgemm_bf16_bits(s[0]) |
                            (2 * p + 1 < kc ? poprt__sgemm_bf16_bits(s[ps]) << 16 : 0u);
        }
}

void poprt__sgemm_pack_b_bf16_amx(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                                  int width, float *dst)
{
    const int64_t np = (kc + 1) / 2, kw = row_words(kc);
    poprt__sgemm_pack_bf16_avx512(kc, n, src, rs, ps, width, dst);
    memset(dst + np * width, 0, (size_t)(kw - np) * (size_t)width * sizeof *dst);
}
