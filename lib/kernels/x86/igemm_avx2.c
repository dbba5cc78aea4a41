/* The integer GEMM's AVX2 variants (igemm.h). vpmaddubsw would sum two
 * uint8 x int8 products into a saturating int16 (2 * 255 * 127 > 32767), so
 * unless B fits 7 bits (avx2_b7, at the end of this file) both operands are
 * int16 and multiplied with vpmaddwd, whose int32 pair
 * sums are exact: A arrives widened by the driver (the variant's a16), B's
 * packed bytes are widened here, once per step for all six rows. A 6 x 8
 * tile, each 32-bit lane holding the sum of half of a column's four K
 * values, the halves added at the end. The whole tile's k loop is
 * assembly, the accumulators pinned in ymm0-11: GCC's code for it spilled
 * half of them, and widening A per row took a shuffle per row and step
 * (one process, 6 x 8 x 512 tiles, Zen 3: 29-34 GMAC/s before, 57-61 with
 * this loop; uops.info and a loop of vpmaddwd alone give about one per
 * cycle, 16 products). Requantization in double, 4 lanes; tails of rows go
 * to the portable code (same arithmetic). */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/igemm.h"

/* [c0 c1 c4 c5 | c2 c3 c6 c7] pairs of half sums -> c0..c7, stored or
 * added to the nr (<= 8) columns at ci */
static inline __attribute__((always_inline)) void store_row(__m256i lo, __m256i hi, int nr,
                                                            int32_t *ci, int accumulate)
{
    __m256i s = _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo, hi), _MM_SHUFFLE(3, 1, 2, 0));
    if (nr == 8) {
        if (accumulate)
            s = _mm256_add_epi32(s, _mm256_loadu_si256((const __m256i *)ci));
        _mm256_storeu_si256((__m256i *)ci, s);
    } else {
        int32_t t[8];
        _mm256_storeu_si256((__m256i *)t, s);
        for (int j = 0; j < nr; j++)
            ci[j] = accumulate ? (int32_t)((uint32_t)ci[j] + (uint32_t)t[j]) : t[j];
    }
}

/* Tiles of fewer than 6 rows: the same sums in intrinsics. a: int16 rows
 * lda bytes apart; each step broadcasts a row's four values (64 bits). */
static inline __attribute__((always_inline)) void tile(const int MR, int64_t kq, int nr,
                                                       const unsigned char *a, int64_t lda,
                                                       const int8_t *b, int32_t *c, int64_t ldc,
                                                       int accumulate)
{
    __m256i acc[6][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
        acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    for (int64_t q = 0; q < kq; q++) {
        const __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + q * 64)));
        const __m256i b1 =
            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + q * 64 + 16)));
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            long long w;
            memcpy(&w, a + i * lda + 8 * q, 8);
            const __m256i av = _mm256_set1_epi64x(w);
            acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(b0, av));
            acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(b1, av));
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
        store_row(acc[i][0], acc[i][1], nr, c + i * ldc, accumulate);
}

/* The 6-row tiles' loop frame: accumulators ymm0-11 zeroed, the loop
 * skipped when n is 0 (label 1: the step, 2: after the loop), and the
 * accumulators stored to acc[12]. */
#define LOOP_OPEN                                                                             \
    "vpxor %%xmm0, %%xmm0, %%xmm0\n\t"                                                        \
    "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"                                                        \
    "vpxor %%xmm2, %%xmm2, %%xmm2\n\t"                                                        \
    "vpxor %%xmm3, %%xmm3, %%xmm3\n\t"                                                        \
    "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"                                                        \
    "vpxor %%xmm5, %%xmm5, %%xmm5\n\t"                                                        \
    "vpxor %%xmm6, %%xmm6, %%xmm6\n\t"                                                        \
    "vpxor %%xmm7, %%xmm7, %%xmm7\n\t"                                                        \
    "vpxor %%xmm8, %%xmm8, %%xmm8\n\t"                                                        \
    "vpxor %%xmm9, %%xmm9, %%xmm9\n\t"                                                        \
    "vpxor %%xmm10, %%xmm10, %%xmm10\n\t"                                                     \
    "vpxor %%xmm11, %%xmm11, %%xmm11\n\t"                                                     \
    "test %[n], %[n]\n\t"                                                                     \
    "jz 2f\n\t"                                                                               \
    ".p2align 5\n\t"                                                                          \
    "1:\n\t"
#define LOOP_CLOSE                                                                            \
    "2:\n\t"                                                                                  \
    "vmovdqu %%ymm0, 0(%[acc])\n\t"                                                           \
    "vmovdqu %%ymm1, 32(%[acc])\n\t"                                                          \
    "vmovdqu %%ymm2, 64(%[acc])\n\t"                                                          \
    "vmovdqu %%ymm3, 96(%[acc])\n\t"                                                          \
    "vmovdqu %%ymm4, 128(%[acc])\n\t"                                                         \
    "vmovdqu %%ymm5, 160(%[acc])\n\t"                                                         \
    "vmovdqu %%ymm6, 192(%[acc])\n\t"                                                         \
    "vmovdqu %%ymm7, 224(%[acc])\n\t"                                                         \
    "vmovdqu %%ymm8, 256(%[acc])\n\t"                                                         \
    "vmovdqu %%ymm9, 288(%[acc])\n\t"                                                         \
    "vmovdqu %%ymm10, 320(%[acc])\n\t"                                                        \
    "vmovdqu %%ymm11, 352(%[acc])\n\t"

/* A step's six rows (row r at a + r * lda) into accumulator pairs */
#define SIX_ROWS(STEP)                                                                        \
    STEP("(%[a])", 0, 1)                                                                      \
    STEP("(%[a],%[l],1)", 2, 3)                                                               \
    STEP("(%[a],%[l],2)", 4, 5)                                                               \
    STEP("(%[a],%[l3],1)", 6, 7)                                                              \
    STEP("(%[a],%[l],4)", 8, 9)                                                               \
    STEP("(%[a5])", 10, 11)

/* One row's step: its four values broadcast (ADDR), times B's two vectors
 * (ymm12: columns 0-3, ymm13: 4-7), added to accumulators X and Y. */
#define ROW_STEP(ADDR, X, Y)                                                                  \
    "vpbroadcastq " ADDR ", %%ymm14\n\t"                                                     \
    "vpmaddwd %%ymm12, %%ymm14, %%ymm15\n\t"                                                 \
    "vpaddd %%ymm15, %%ymm" #X ", %%ymm" #X "\n\t"                                            \
    "vpmaddwd %%ymm13, %%ymm14, %%ymm15\n\t"                                                 \
    "vpaddd %%ymm15, %%ymm" #Y ", %%ymm" #Y "\n\t"

static void full_6x8(int64_t kq, int nr, const unsigned char *a, int64_t lda, const int8_t *b,
                     int32_t *c, int64_t ldc, int accumulate)
{
    __m256i acc[12];
    const unsigned char *a5 = a + 5 * lda;
    const int64_t l3 = 3 * lda;
    __asm__ volatile(
        LOOP_OPEN
        "vpmovsxbw (%[b]), %%ymm12\n\t"
        "vpmovsxbw 16(%[b]), %%ymm13\n\t"
        SIX_ROWS(ROW_STEP)
        "add $64, %[b]\n\t"
        "add $8, %[a]\n\t"
        "add $8, %[a5]\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        LOOP_CLOSE
        : [a] "+r"(a), [a5] "+r"(a5), [b] "+r"(b), [n] "+r"(kq)
        : [l] "r"(lda), [l3] "r"(l3), [acc] "r"(acc)
        : "ymm0", "ymm1", "ymm2", "ymm3", "ymm4", "ymm5", "ymm6", "ymm7", "ymm8", "ymm9",
          "ymm10", "ymm11", "ymm12", "ymm13", "ymm14", "ymm15", "cc", "memory");
    for (int i = 0; i < 6; i++)
        store_row(acc[2 * i], acc[2 * i + 1], nr, c + i * ldc, accumulate);
}

void poprt__igemm_ukr_avx2(int64_t kq, int mr, int nr, const uint8_t *a, int64_t lda,
                           const int8_t *b, int64_t pstride, int32_t *c, int64_t ldc,
                           int accumulate)
{
    (void)pstride; /* 8 columns never leave their panel */
    switch (mr) {
    case 6: full_6x8(kq, nr, a, lda, b, c, ldc, accumulate); break;
    case 5: tile(5, kq, nr, a, lda, b, c, ldc, accumulate); break;
    case 4: tile(4, kq, nr, a, lda, b, c, ldc, accumulate); break;
    case 3: tile(3, kq, nr, a, lda, b, c, ldc, accumulate); break;
    case 2: tile(2, kq, nr, a, lda, b, c, ldc, accumulate); break;
    case 1: tile(1, kq, nr, a, lda, b, c, ldc, accumulate); break;
    default: break;
    }
}

/* ---- 7-bit weights (the avx2_b7 variant) -----------------------------------------
 * Every packed B value in [-64, 63]: vpmaddubsw's pair sums of uint8 A and
 * int8 B are at most 2 * 255 * 64 = 32640 in magnitude, so they never
 * saturate, and a vpmaddwd by ones adds each column's two pairs into its
 * int32 lane: 32 products per two multiplies and no widened A (the int16
 * variant: 16 per multiply plus an add, and A widened by the driver). In one
 * process on Zen 3 (6 rows, 16 columns, 384 K, in L1): 76-80 GMAC/s against
 * the int16 tile's 53-59. A tile of 6 rows by 16 columns (a whole panel: one
 * step reads its 64 bytes as two vectors); lane j of a row's accumulator
 * is column j's sum (8 + j in the second), stored without shuffles. */

static inline __attribute__((always_inline)) void store8(__m256i s, int nr, int32_t *ci,
                                                         int accumulate)
{
    if (nr >= 8) {
        if (accumulate)
            s = _mm256_add_epi32(s, _mm256_loadu_si256((const __m256i *)ci));
        _mm256_storeu_si256((__m256i *)ci, s);
    } else if (nr > 0) {
        int32_t t[8];
        _mm256_storeu_si256((__m256i *)t, s);
        for (int j = 0; j < nr; j++)
            ci[j] = accumulate ? (int32_t)((uint32_t)ci[j] + (uint32_t)t[j]) : t[j];
    }
}

static inline __attribute__((always_inline)) void store16(__m256i lo, __m256i hi, int nr,
                                                          int32_t *ci, int accumulate)
{
    store8(lo, nr, ci, accumulate);
    store8(hi, nr - 8, ci + 8, accumulate);
}

/* Tiles of fewer than 6 rows, in intrinsics: the same sums; NV 1 for
 * panels of at most 8 columns (the last of 24 or 40 output channels): the
 * panel's first vector only, half the products. */
static inline __attribute__((always_inline)) void tile_b7(const int MR, const int NV, int64_t kq,
                                                          int nr, const unsigned char *a,
                                                          int64_t lda, const int8_t *b, int32_t *c,
                                                          int64_t ldc, int accumulate)
{
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i acc[6][2];
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++)
        acc[i][0] = acc[i][1] = _mm256_setzero_si256();
    for (int64_t q = 0; q < kq; q++) {
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + q * 64));
        const __m256i b1 =
            NV == 2 ? _mm256_loadu_si256((const __m256i *)(b + q * 64 + 32)) : b0;
#pragma GCC unroll 6
        for (int i = 0; i < MR; i++) {
            int w;
            memcpy(&w, a + i * lda + 4 * q, 4);
            const __m256i av = _mm256_set1_epi32(w);
            acc[i][0] = _mm256_add_epi32(
                acc[i][0], _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones));
            if (NV == 2)
                acc[i][1] = _mm256_add_epi32(
                    acc[i][1], _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones));
        }
    }
#pragma GCC unroll 6
    for (int i = 0; i < MR; i++) {
        if (NV == 2)
            store16(acc[i][0], acc[i][1], nr, c + i * ldc, accumulate);
        else
            store8(acc[i][0], nr, c + i * ldc, accumulate);
    }
}

/* One row's step: its four bytes broadcast (ADDR), times B's two vectors
 * (ymm12: columns 0-7, ymm13: 8-15), pairs summed by ones (memory) and
 * added to accumulators X and Y. */
#define ROW_STEP_B7(ADDR, X, Y)                                                               \
    "vpbroadcastd " ADDR ", %%ymm14\n\t"                                                     \
    "vpmaddubsw %%ymm12, %%ymm14, %%ymm15\n\t"                                               \
    "vpmaddwd (%[one]), %%ymm15, %%ymm15\n\t"                                                \
    "vpaddd %%ymm15, %%ymm" #X ", %%ymm" #X "\n\t"                                            \
    "vpmaddubsw %%ymm13, %%ymm14, %%ymm15\n\t"                                               \
    "vpmaddwd (%[one]), %%ymm15, %%ymm15\n\t"                                                \
    "vpaddd %%ymm15, %%ymm" #Y ", %%ymm" #Y "\n\t"

static void full_6x16_b7(int64_t kq, int nr, const unsigned char *a, int64_t lda,
                         const int8_t *b, int32_t *c, int64_t ldc, int accumulate)
{
    static const int16_t ones[16] __attribute__((aligned(32))) = {1, 1, 1, 1, 1, 1, 1, 1,
                                                                  1, 1, 1, 1, 1, 1, 1, 1};
    __m256i acc[12];
    const unsigned char *a5 = a + 5 * lda;
    const int64_t l3 = 3 * lda;
    __asm__ volatile(
        LOOP_OPEN
        "vmovdqu (%[b]), %%ymm12\n\t"
        "vmovdqu 32(%[b]), %%ymm13\n\t"
        SIX_ROWS(ROW_STEP_B7)
        "add $64, %[b]\n\t"
        "add $4, %[a]\n\t"
        "add $4, %[a5]\n\t"
        "dec %[n]\n\t"
        "jnz 1b\n\t"
        LOOP_CLOSE
        : [a] "+r"(a), [a5] "+r"(a5), [b] "+r"(b), [n] "+r"(kq)
        : [l] "r"(lda), [l3] "r"(l3), [acc] "r"(acc), [one] "r"(ones)
        : "ymm0", "ymm1", "ymm2", "ymm3", "ymm4", "ymm5", "ymm6", "ymm7", "ymm8", "ymm9",
          "ymm10", "ymm11", "ymm12", "ymm13", "ymm14", "ymm15", "cc", "memory");
    for (int i = 0; i < 6; i++)
        store16(acc[2 * i], acc[2 * i + 1], nr, c + i * ldc, accumulate);
}

/* one or both vectors of the panel, MR a constant for the tile's unrolling */
#define TILE_B7(MR)                                                                               \
    (nr <= 8 ? tile_b7(MR, 1, kq, nr, a, lda, b, c, ldc, accumulate)                             \
             : tile_b7(MR, 2, kq, nr, a, lda, b, c, ldc, accumulate))

void poprt__igemm_ukr_avx2_b7(int64_t kq, int mr, int nr, const uint8_t *a, int64_t lda,
                              const int8_t *b, int64_t pstride, int32_t *c, int64_t ldc,
                              int accumulate)
{
    (void)pstride; /* 16 columns: one whole panel */
    switch (mr) {
    case 6:
        if (nr <= 8)
            tile_b7(6, 1, kq, nr, a, lda, b, c, ldc, accumulate);
        else
            full_6x16_b7(kq, nr, a, lda, b, c, ldc, accumulate);
        break;
    case 5: TILE_B7(5); break;
    case 4: TILE_B7(4); break;
    case 3: TILE_B7(3); break;
    case 2: TILE_B7(2); break;
    case 1: TILE_B7(1); break;
    default: break;
    }
}
#undef TILE_B7

static inline __m256i fixed8(const poprt__igemm_cols *q, int64_t jj, const int32_t *c, __m256i rs)
{
    __m256i v = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)c),
                                 _mm256_loadu_si256((const __m256i *)(q->colterm + jj)));
    if (q->bz)
        v = _mm256_sub_epi32(
            v, _mm256_mullo_epi32(_mm256_loadu_si256((const __m256i *)(q->bz + jj)), rs));
    return v;
}

void poprt__igemm_fix_avx2(const poprt__igemm_cols *q, int64_t j0, int64_t n, const int32_t *c,
                           int32_t rs, int32_t *out)
{
    const __m256i r = _mm256_set1_epi32(rs);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_si256((__m256i *)(out + j), fixed8(q, j0 + j, c + j, r));
    poprt__igemm_fix_scalar(q, j0 + j, n - j, c + j, rs, out + j);
}

void poprt__igemm_deq_avx2(const poprt__igemm_cols *q, const poprt__igemm_deq *d, int64_t j0,
                           int64_t n, const int32_t *c, int32_t rs, float *out)
{
    const __m256i r = _mm256_set1_epi32(rs);
    const __m256 s0 = _mm256_set1_ps(d->s[0]);
    const __m256 b0 = d->b ? _mm256_set1_ps(d->b[0]) : _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const int64_t jj = j0 + j;
        /* separate multiply and add (ISO C: no contraction into an FMA) */
        __m256 y = _mm256_mul_ps(_mm256_cvtepi32_ps(fixed8(q, jj, c + j, r)),
                                 d->s_all ? _mm256_loadu_ps(d->s + jj) : s0);
        if (d->b)
            y = _mm256_add_ps(y, d->b_all ? _mm256_loadu_ps(d->b + jj) : b0);
        _mm256_storeu_ps(out + j, y);
    }
    poprt__igemm_deq_scalar(q, d, j0 + j, n - j, c + j, rs, out + j);
}

static inline __m128i rq4(__m128i v, const poprt__igemm_cols *q, int64_t jj, __m256d yz,
                          __m256d lo, __m256d hi)
{
    __m256d t = _mm256_cvtepi32_pd(v);
    if (q->bias)
        t = _mm256_add_pd(t, _mm256_loadu_pd(q->bias + jj));
    const __m256d m = _mm256_cvtps_pd(_mm_loadu_ps(q->mult + jj));
    __m256d r = _mm256_add_pd(_mm256_mul_pd(t, m), yz);
    r = _mm256_round_pd(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_min_pd(_mm256_max_pd(r, lo), hi);
    return _mm256_cvtpd_epi32(r);
}

void poprt__igemm_rq_avx2(const poprt__igemm_cols *q, int64_t j0, int64_t n, const int32_t *c,
                          int32_t rs, void *out)
{
    const __m256i r = _mm256_set1_epi32(rs);
    const __m256d yz = _mm256_set1_pd(q->yz), lo = _mm256_set1_pd(q->lo),
                  hi = _mm256_set1_pd(q->hi);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const int64_t jj = j0 + j;
        const __m256i v = fixed8(q, jj, c + j, r);
        const __m128i l = rq4(_mm256_castsi256_si128(v), q, jj, yz, lo, hi);
        const __m128i h = rq4(_mm256_extracti128_si256(v, 1), q, jj + 4, yz, lo, hi);
        const __m128i w = _mm_packs_epi32(l, h); /* in range: exact */
        const __m128i x = q->s8 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
        _mm_storel_epi64((__m128i *)((char *)out + j), x);
    }
    poprt__igemm_rq_scalar(q, j0 + j, n - j, c + j, rs, (char *)out + j);
}

void poprt__igemm_minmax_avx2(const float *x, int64_t n, float *mn, float *mx)
{
    /* min_ps(x, acc) keeps acc when x is NaN or equal: the scalar loop's
     * strict comparisons */
    __m256 lo = _mm256_set1_ps(*mn), hi = _mm256_set1_ps(*mx);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        lo = _mm256_min_ps(v, lo);
        hi = _mm256_max_ps(v, hi);
    }
    float l[8], h[8];
    _mm256_storeu_ps(l, lo);
    _mm256_storeu_ps(h, hi);
    poprt__igemm_minmax_scalar(l, 8, mn, mx);
    poprt__igemm_minmax_scalar(h, 8, mn, mx);
    poprt__igemm_minmax_scalar(x + i, n - i, mn, mx);
}

void poprt__igemm_quant_avx2(const float *x, int64_t n, float scale, float zp, int lo, int hi,
                             int s8, void *y)
{
    const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(zp);
    const __m256 l = _mm256_set1_ps((float)lo), h = _mm256_set1_ps((float)hi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
        /* integers below 2^24 add exactly; larger ones saturate either way */
        __m256 r = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                                 z);
        r = _mm256_min_ps(_mm256_max_ps(r, l), h);
        r = _mm256_and_ps(r, _mm256_cmp_ps(v, v, _CMP_ORD_Q)); /* NaN: 0 */
        const __m256i q = _mm256_cvtps_epi32(r);
        const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
        _mm_storel_epi64((__m128i *)((char *)y + i), s8 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
    }
    poprt__igemm_quant_scalar(x + i, n - i, scale, zp, lo, hi, s8, (char *)y + i);
}
