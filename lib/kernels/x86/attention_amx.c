/* The attention head in bfloat16 on AMX tiles (session option
 * matmul_precision = bfloat16, attention.c): the contract of
 * poprt__seg_impl's head, for head sizes that are multiples of 32. This file
 * alone is compiled with the AVX-512, AVX512-BF16 and AMX flags; it is
 * entered only where poprt__cpu_features() reports AMX (with Linux's
 * permission for tile data).
 *
 * Per block of 16 queries, with L keys padded to Lp, a multiple of 32:
 *   scores  S = (scale Q) K^T on tiles: A = the block's scaled queries as
 *           bfloat16 pair words (d in pairs, a row as stored), B = K^T (for
 *           each key, its pair words down a column), float32 sums;
 *   softmax along each row in float32 (+ the key mask, max, exp as the
 *           float32 head takes it from the vmath table, sum), the
 *           unnormalised probabilities rounded to bfloat16 pairs of keys;
 *   output  O = P V on tiles: A = P's rows, B = V with two key rows
 *           interleaved per word; Y = O / sum.
 * So Q (scaled), K, V and the probabilities are rounded to bfloat16 (round
 * to nearest even) and every product summed in float32, as the bfloat16
 * GEMM does: a product's relative error is at most 2^-7. Padded keys get
 * probability 0, padded queries are not stored. Tiles: the GEMM's
 * configuration (poprt__sgemm_enter_amx: all 16 rows of 64 bytes), 0-3
 * accumulators, 4 A, 6-7 B. */
#include <immintrin.h>
#include <math.h>
#include <string.h>
#include "kernels/x86/attention.h"
#include "kernels/x86/bf16_words.h"
#include "kernels/x86/sgemm.h"

#define QB 16 /* queries per block */

static int64_t pad32(int64_t n)
{
    return (n + 31) / 32 * 32;
}

static size_t a64(size_t words)
{
    return (words + 15) / 16 * 16;
}

size_t poprt__attn_amx_ws_floats(int64_t max_len, int64_t HD)
{
    const int64_t Lp = pad32(max_len);
    return a64((size_t)(HD / 2 * Lp)) + a64((size_t)(Lp / 2 * HD)) + a64((size_t)(QB * HD / 2)) +
           a64((size_t)(QB * Lp)) + a64((size_t)(QB * Lp / 2)) + a64((size_t)(QB * HD)) + 16;
}

/* n floats of s (32 at a time, n a multiple of 32) times scale as bfloat16
 * in order: n / 2 pair words at d */
static void row_words(const float *s, int64_t n, float scale, uint32_t *d)
{
    const __m512 sc = _mm512_set1_ps(scale);
    for (int64_t i = 0; i < n; i += 32) {
        const __m512 lo = _mm512_mul_ps(_mm512_loadu_ps(s + i), sc);
        const __m512 hi = _mm512_mul_ps(_mm512_loadu_ps(s + i + 16), sc);
        const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo);
        memcpy(d + i / 2, &h, sizeof h);
    }
}

void poprt__attn_head_amxbf16(const float *q, const float *k, const float *v, int64_t ld,
                              float *y, int64_t ldy, const float *addk, int64_t L, int64_t HD,
                              float scale, float *ws, const poprt__vmath_variant *vm)
{
    const int64_t Lp = pad32(L), HP = HD / 2;
    uint32_t *kt = (uint32_t *)ws;                     /* [HP][Lp]: K^T, pair words */
    uint32_t *vp = kt + a64((size_t)(HP * Lp));        /* [Lp / 2][HD]: V, key pairs */
    uint32_t *qa = vp + a64((size_t)(Lp / 2 * HD));    /* [QB][HP]: scaled queries */
    float *s = (float *)(qa + a64((size_t)(QB * HP)));  /* [QB][Lp]: scores, exp */
    uint32_t *pa = (uint32_t *)(s + a64((size_t)(QB * Lp))); /* [QB][Lp / 2]: P */
    float *o = (float *)(pa + a64((size_t)(QB * Lp / 2)));   /* [QB][HD]: P V */
    /* denormals flushed as in the float32 head (the tiles flush their own) */
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u);
    poprt__sgemm_enter_amx();
    /* K^T: key j's pair words down column j; padded keys zero */
    const __m512i rows = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)Lp));
    for (int64_t j = 0; j < Lp; j++) {
        for (int64_t p0 = 0; p0 < HP; p0 += 16) {
            __m512i w = _mm512_setzero_si512();
            if (j < L) {
                const __m512 lo = _mm512_loadu_ps(k + j * ld + 2 * p0);
                const __m512 hi = _mm512_loadu_ps(k + j * ld + 2 * p0 + 16);
                const __m512bh h = _mm512_cvtne2ps_pbh(hi, lo);
                memcpy(&w, &h, sizeof w);
            }
            _mm512_i32scatter_epi32(kt + p0 * Lp + j, rows, w, 4);
        }
    }
    /* V: word (p, d) = bf16(V[2p][d]) | bf16(V[2p + 1][d]) << 16 */
    for (int64_t p = 0; p < Lp / 2; p++)
        for (int64_t d = 0; d < HD; d += 16) {
            const __m512 e = 2 * p < L ? _mm512_loadu_ps(v + 2 * p * ld + d) : _mm512_setzero_ps();
            const __m512 f =
                2 * p + 1 < L ? _mm512_loadu_ps(v + (2 * p + 1) * ld + d) : _mm512_setzero_ps();
            _mm512_storeu_si512(vp + p * HD + d, poprt__bf16_pair_words(e, f));
        }
    const int64_t ss = Lp * 4, hs = HD * 4; /* row strides in bytes */
    float inv[QB];
    for (int64_t i0 = 0; i0 < L; i0 += QB) {
        const int64_t nq = L - i0 < QB ? L - i0 : QB;
        for (int64_t r = 0; r < QB; r++) {
            if (r < nq)
                row_words(q + (i0 + r) * ld, HD, scale, qa + r * HP);
            else
                memset(qa + r * HP, 0, (size_t)HP * sizeof *qa);
        }
        /* scores, two key tiles at a time */
        for (int64_t n = 0; n < Lp; n += 32) {
            _tile_zero(0);
            _tile_zero(1);
            for (int64_t p0 = 0; p0 < HP; p0 += 16) {
                _tile_loadd(4, qa + p0, HP * 4);
                _tile_loadd(6, kt + p0 * Lp + n, ss);
                _tile_loadd(7, kt + p0 * Lp + n + 16, ss);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
            }
            _tile_stored(0, s + n, ss);
            _tile_stored(1, s + n + 16, ss);
        }
        /* softmax along each row: exp(score + mask - max), the sum; P's
         * words; padded keys and queries 0 */
        for (int64_t r = 0; r < QB; r++) {
            float *row = s + r * Lp;
            uint32_t *prow = pa + r * (Lp / 2);
            if (r >= nq) {
                memset(prow, 0, (size_t)(Lp / 2) * sizeof *prow);
                continue;
            }
            /* scores + mask, their max (x > m keeps m for a NaN, as the
             * float32 head), x - max, exp, the sum: 16 keys at a time */
            __m512 mv = _mm512_set1_ps(-INFINITY);
            for (int64_t j = 0; j < L; j += 16) {
                const __mmask16 mk = L - j >= 16 ? 0xffff : (__mmask16)((1u << (L - j)) - 1);
                __m512 x = _mm512_maskz_loadu_ps(mk, row + j);
                if (addk)
                    x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(mk, addk + j));
                _mm512_mask_storeu_ps(row + j, mk, x);
                mv = _mm512_mask_max_ps(mv, mk, x, mv);
            }
            const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
            for (int64_t j = 0; j < L; j += 16) {
                const __mmask16 mk = L - j >= 16 ? 0xffff : (__mmask16)((1u << (L - j)) - 1);
                _mm512_mask_storeu_ps(row + j, mk,
                                      _mm512_sub_ps(_mm512_maskz_loadu_ps(mk, row + j), m));
            }
            vm->unary[POPRT__VMATH_exp](row, row, L, NULL);
            __m512 sv = _mm512_setzero_ps();
            for (int64_t j = 0; j < L; j += 16) {
                const __mmask16 mk = L - j >= 16 ? 0xffff : (__mmask16)((1u << (L - j)) - 1);
                sv = _mm512_add_ps(sv, _mm512_maskz_loadu_ps(mk, row + j));
            }
            inv[r] = 1.0f / _mm512_reduce_add_ps(sv);
            for (int64_t j = L; j < Lp; j++)
                row[j] = 0.0f;
            row_words(row, Lp, 1.0f, prow);
        }
        /* O = P V, four column tiles at a time */
        for (int64_t d0 = 0; d0 < HD; d0 += 64) {
            const int nt = HD - d0 >= 64 ? 4 : (int)((HD - d0) / 16);
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t t = 0; t < Lp / 2; t += 16) {
                _tile_loadd(4, pa + t, Lp / 2 * 4);
                _tile_loadd(6, vp + t * HD + d0, hs);
                _tile_dpbf16ps(0, 4, 6);
                _tile_loadd(7, vp + t * HD + d0 + 16, hs);
                _tile_dpbf16ps(1, 4, 7);
                if (nt > 2) {
                    _tile_loadd(6, vp + t * HD + d0 + 32, hs);
                    _tile_dpbf16ps(2, 4, 6);
                    _tile_loadd(7, vp + t * HD + d0 + 48, hs);
                    _tile_dpbf16ps(3, 4, 7);
                }
            }
            _tile_stored(0, o + d0, hs);
            _tile_stored(1, o + d0 + 16, hs);
            if (nt > 2) {
                _tile_stored(2, o + d0 + 32, hs);
                _tile_stored(3, o + d0 + 48, hs);
            }
        }
        for (int64_t r = 0; r < nq; r++) {
            const __m512 iv = _mm512_set1_ps(inv[r]);
            for (int64_t d = 0; d < HD; d += 16)
                _mm512_storeu_ps(y + (i0 + r) * ldy + d,
                                 _mm512_mul_ps(_mm512_loadu_ps(o + r * HD + d), iv));
        }
    }
    _mm_setcsr(csr);
}
