/* SegmentAttention heads, AVX2 instance (see attention.h). The portable
 * body (attention_body.inc) keeps 8 tiles of 16 lanes live, which is 16 of
 * AVX2's 16 ymm registers before any operand: GCC spilled every
 * accumulator on each multiply-add (a minilm_l6 run spent 35% of its time
 * in the heads). This instance has the body's blocks, its sums in the same
 * order with the same FMAs (so the same bits as the AVX-512 instance), on
 * register tiles sized for 16 ymm: scores 6 keys x 16 queries, outputs 6
 * queries x 16 columns, 12 accumulators each. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/attention.h"

#define INLINE static inline __attribute__((always_inline))
#define AW 16 /* queries per block: two ymm lanes of 8 */
#define TK 6  /* keys per score tile */
#define TQ 6  /* queries per output tile */

/* qt[d][l] = scale * q[l][d] for the nq (<= 16) rows of q (ld apart),
 * d < HD; zeros for l >= nq (the products of the missing queries are
 * computed and never stored). */
static void queries_t(const float *q, int64_t ld, int64_t nq, int64_t HD, float scale,
                      float *qt)
{
    for (int64_t d = 0; d < HD; d++)
        for (int l = 0; l < AW; l++)
            qt[d * AW + l] = l < nq ? scale * q[l * ld + d] : 0.0f;
}

/* Scores of NK keys from j against the block: st[(j + t) * 16 + l]
 * = sum_d k[(j + t) * ld + d] * qt[d][l] (+ addk[j + t]). */
INLINE void scores(const int NK, const float *restrict k, int64_t ld, const float *restrict qt,
                   int64_t HD, const float *addk, int64_t j, float *restrict st)
{
    __m256 acc[TK][2];
#pragma GCC unroll 6
    for (int t = 0; t < NK; t++)
        acc[t][0] = acc[t][1] = _mm256_setzero_ps();
    const float *kj = k + j * ld;
    for (int64_t d = 0; d < HD; d++) {
        const __m256 b0 = _mm256_loadu_ps(qt + d * AW), b1 = _mm256_loadu_ps(qt + d * AW + 8);
#pragma GCC unroll 6
        for (int t = 0; t < NK; t++) {
            const __m256 kv = _mm256_broadcast_ss(kj + t * ld + d);
            acc[t][0] = _mm256_fmadd_ps(kv, b0, acc[t][0]);
            acc[t][1] = _mm256_fmadd_ps(kv, b1, acc[t][1]);
        }
    }
#pragma GCC unroll 6
    for (int t = 0; t < NK; t++) {
        if (addk) {
            const __m256 a = _mm256_broadcast_ss(addk + j + t);
            acc[t][0] = _mm256_add_ps(acc[t][0], a);
            acc[t][1] = _mm256_add_ps(acc[t][1], a);
        }
        _mm256_storeu_ps(st + (j + t) * AW, acc[t][0]);
        _mm256_storeu_ps(st + (j + t) * AW + 8, acc[t][1]);
    }
}

/* Outputs of NQ queries from l0 of the block, columns c .. c + 15:
 * y[i0 + l0 + g][c ..] = inv[l0 + g] * sum_j st[j][l0 + g] * v[j][c ..]. */
INLINE void outputs(const int NQ, const float *restrict v, int64_t ld, const float *restrict st,
                    int64_t L, int64_t l0, int64_t c, const float *inv, float *restrict y,
                    int64_t ldy)
{
    __m256 acc[TQ][2];
#pragma GCC unroll 6
    for (int g = 0; g < NQ; g++)
        acc[g][0] = acc[g][1] = _mm256_setzero_ps();
    for (int64_t j = 0; j < L; j++) {
        const __m256 b0 = _mm256_loadu_ps(v + j * ld + c), b1 = _mm256_loadu_ps(v + j * ld + c + 8);
        const float *p = st + j * AW + l0;
#pragma GCC unroll 6
        for (int g = 0; g < NQ; g++) {
            const __m256 e = _mm256_broadcast_ss(p + g);
            acc[g][0] = _mm256_fmadd_ps(e, b0, acc[g][0]);
            acc[g][1] = _mm256_fmadd_ps(e, b1, acc[g][1]);
        }
    }
#pragma GCC unroll 6
    for (int g = 0; g < NQ; g++) {
        const __m256 s = _mm256_broadcast_ss(inv + l0 + g);
        _mm256_storeu_ps(y + (l0 + g) * ldy + c, _mm256_mul_ps(acc[g][0], s));
        _mm256_storeu_ps(y + (l0 + g) * ldy + c + 8, _mm256_mul_ps(acc[g][1], s));
    }
}

/* Softmax down each column of st (L rows of 16 queries): max over j,
 * exp(s - max) through the vmath table, the sum over j in order;
 * inv[l] = 1 / sum. */
static void softmax_cols(float *st, int64_t L, const poprt__vmath_variant *vm, float *inv)
{
    __m256 m0 = _mm256_loadu_ps(st), m1 = _mm256_loadu_ps(st + 8);
    for (int64_t j = 1; j < L; j++) {
        const __m256 x0 = _mm256_loadu_ps(st + j * AW), x1 = _mm256_loadu_ps(st + j * AW + 8);
        /* x > m ? x : m, as the portable body selects (NaN keeps m) */
        m0 = _mm256_blendv_ps(m0, x0, _mm256_cmp_ps(x0, m0, _CMP_GT_OQ));
        m1 = _mm256_blendv_ps(m1, x1, _mm256_cmp_ps(x1, m1, _CMP_GT_OQ));
    }
    for (int64_t j = 0; j < L; j++) {
        _mm256_storeu_ps(st + j * AW, _mm256_sub_ps(_mm256_loadu_ps(st + j * AW), m0));
        _mm256_storeu_ps(st + j * AW + 8, _mm256_sub_ps(_mm256_loadu_ps(st + j * AW + 8), m1));
    }
    vm->unary[POPRT__VMATH_exp](st, st, L * AW, NULL);
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    for (int64_t j = 0; j < L; j++) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(st + j * AW));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(st + j * AW + 8));
    }
    const __m256 one = _mm256_set1_ps(1.0f);
    _mm256_storeu_ps(inv, _mm256_div_ps(one, s0));
    _mm256_storeu_ps(inv + 8, _mm256_div_ps(one, s1));
}

void poprt__attn_head_avx2(const float *q, const float *k, const float *v, int64_t ld, float *y,
                           int64_t ldy, const float *addk, int64_t L, int64_t HD, float scale,
                           float *ws, const poprt__vmath_variant *vm)
{
    float *qt = ws;          /* [HD][16]: the block's queries, scaled, transposed */
    float *st = ws + HD * AW; /* [L][16]: scores, then exp(score - max) */
    float inv[AW];
    /* denormals flushed to zero while the head runs (attention_body.inc
     * says why), the caller's mode restored after */
    const unsigned csr = _mm_getcsr();
    _mm_setcsr(csr | 0x8040u);
    for (int64_t i0 = 0; i0 < L; i0 += AW) {
        const int64_t nq = L - i0 < AW ? L - i0 : AW;
        queries_t(q + i0 * ld, ld, nq, HD, scale, qt);
        int64_t j = 0;
        for (; j + TK <= L; j += TK)
            scores(TK, k, ld, qt, HD, addk, j, st);
        for (; j < L; j++)
            scores(1, k, ld, qt, HD, addk, j, st);
        softmax_cols(st, L, vm, inv);
        float *yb = y + i0 * ldy;
        for (int64_t c = 0; c < HD; c += AW) {
            int64_t l0 = 0;
            for (; l0 + TQ <= nq; l0 += TQ)
                outputs(TQ, v, ld, st, L, l0, c, inv, yb, ldy);
            switch (nq - l0) {
            case 5: outputs(5, v, ld, st, L, l0, c, inv, yb, ldy); break;
            case 4: outputs(4, v, ld, st, L, l0, c, inv, yb, ldy); break;
            case 3: outputs(3, v, ld, st, L, l0, c, inv, yb, ldy); break;
            case 2: outputs(2, v, ld, st, L, l0, c, inv, yb, ldy); break;
            case 1: outputs(1, v, ld, st, L, l0, c, inv, yb, ldy); break;
            default: break;
            }
        }
    }
    _mm_setcsr(csr);
}
