/* AVX2 + FMA fp32 GEMM micro-kernel (6 x 16: 12 ymm accumulators). This
 * file alone is compiled with -mavx2 -mfma; it is only entered after
 * poprt__cpu_features() reported AVX2 and FMA. */
#include <immintrin.h>
#include "kernels/x86/sgemm.h"

#define INLINE static inline __attribute__((always_inline))

/* C = alpha * acc (beta 0: C not read) or alpha * acc + beta * C for rows
 * [0, mr) and the nr (<= 16) first columns; acc[r][v] holds columns
 * 8v .. 8v + 7 of row r. */
INLINE void store_tile(const int mr, const __m256 acc[][2], float *restrict c, int64_t ldc,
                       float alpha, float beta, int nr)
{
    const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
    if (nr == 16) {
#pragma GCC unroll 6
        for (int r = 0; r < mr; r++)
#pragma GCC unroll 2
            for (int v = 0; v < 2; v++) {
                float *cp = c + r * ldc + v * 8;
                __m256 t = _mm256_mul_ps(va, acc[r][v]);
                if (beta != 0.0f)
                    t = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cp), t);
                _mm256_storeu_ps(cp, t);
            }
        return;
    }
    /* partial tile: lane masks for the nr valid columns */
    __m256i m[2];
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    m[0] = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lane);
    m[1] = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8), lane);
#pragma GCC unroll 6
    for (int r = 0; r < mr; r++)
#pragma GCC unroll 2
        for (int v = 0; v < 2; v++) {
            float *cp = c + r * ldc + v * 8;
            __m256 t = _mm256_mul_ps(va, acc[r][v]);
            if (beta != 0.0f)
                t = _mm256_fmadd_ps(vb, _mm256_maskload_ps(cp, m[v]), t);
            _mm256_maskstore_ps(cp, m[v], t);
        }
}

/* Tiles of fewer than 6 rows (the last row panel of A). */
INLINE void tile(const int mr, int64_t kc, const float *restrict a, const float *restrict b,
                 int64_t bs, float *restrict c, int64_t ldc, float alpha, float beta, int nr)
{
    __m256 acc[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < mr; r++) {
        acc[r][0] = _mm256_setzero_ps();
        acc[r][1] = _mm256_setzero_ps();
    }
#pragma GCC unroll 4
    for (int64_t p = 0; p < kc; p++) {
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
        for (int r = 0; r < mr; r++) {
            const __m256 ar = _mm256_broadcast_ss(a + r);
            acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
        }
        a += 6;
        b += bs;
    }
    store_tile(mr, acc, c, ldc, alpha, beta, nr);
}

/* One k step of the full tile in assembly: B row k (two vectors, at B0 and
 * B1) against the six A values at A0 .. A5 (byte offsets from a, written
 * out: clang's assembler takes no arithmetic in front of a memory
 * operand), one FMA per accumulator. */
#define K_STEP(B0, B1, A0, A1, A2, A3, A4, A5)                                              \
    "vmovups " B0 ", %%ymm12\n\t"                                                           \
    "vmovups " B1 ", %%ymm13\n\t"                                                           \
    "vbroadcastss " A0 "(%[a]), %%ymm14\n\t"                                                \
    "vbroadcastss " A1 "(%[a]), %%ymm15\n\t"                                                \
    "vfmadd231ps %%ymm12, %%ymm14, %%ymm0\n\t"                                              \
    "vfmadd231ps %%ymm13, %%ymm14, %%ymm1\n\t"                                              \
    "vbroadcastss " A2 "(%[a]), %%ymm14\n\t"                                                \
    "vfmadd231ps %%ymm12, %%ymm15, %%ymm2\n\t"                                              \
    "vfmadd231ps %%ymm13, %%ymm15, %%ymm3\n\t"                                              \
    "vbroadcastss " A3 "(%[a]), %%ymm15\n\t"                                                \
    "vfmadd231ps %%ymm12, %%ymm14, %%ymm4\n\t"                                              \
    "vfmadd231ps %%ymm13, %%ymm14, %%ymm5\n\t"                                              \
    "vbroadcastss " A4 "(%[a]), %%ymm14\n\t"                                                \
    "vfmadd231ps %%ymm12, %%ymm15, %%ymm6\n\t"                                              \
    "vfmadd231ps %%ymm13, %%ymm15, %%ymm7\n\t"                                              \
    "vbroadcastss " A5 "(%[a]), %%ymm15\n\t"                                                \
    "vfmadd231ps %%ymm12, %%ymm14, %%ymm8\n\t"                                              \
    "vfmadd231ps %%ymm13, %%ymm14, %%ymm9\n\t"                                              \
    "vfmadd231ps %%ymm12, %%ymm15, %%ymm10\n\t"                                             \
    "vfmadd231ps %%ymm13, %%ymm15, %%ymm11\n\t"

/* Full-height tiles: the k loop in assembly, four k per turn, so the 12
 * accumulators stay pinned in ymm0-11 with two B and two broadcast
 * registers (GCC's allocation of the intrinsic loop reloaded nothing but
 * kept one k per turn and its pointer updates). Same arithmetic as tile():
 * acc += a[r] * b[j] in k order, one FMA each. B rows 8 k ahead are
 * prefetched (B may be read in place, rows bs apart). */
static void full_6x16(int64_t kc, const float *a, const float *b, int64_t bs, float *c,
                      int64_t ldc, float alpha, float beta, int nr)
{
    __m256 acc[6][2];
    const float *pf = b + 8 * bs;
    const int64_t bs4 = bs * 4, bs12 = bs * 12;
    int64_t n4 = kc >> 2, n1 = kc & 3;
    __asm__ volatile(
        "vxorps %%ymm0, %%ymm0, %%ymm0\n\t"
        "vxorps %%ymm1, %%ymm1, %%ymm1\n\t"
        "vxorps %%ymm2, %%ymm2, %%ymm2\n\t"
        "vxorps %%ymm3, %%ymm3, %%ymm3\n\t"
        "vxorps %%ymm4, %%ymm4, %%ymm4\n\t"
        "vxorps %%ymm5, %%ymm5, %%ymm5\n\t"
        "vxorps %%ymm6, %%ymm6, %%ymm6\n\t"
        "vxorps %%ymm7, %%ymm7, %%ymm7\n\t"
        "vxorps %%ymm8, %%ymm8, %%ymm8\n\t"
        "vxorps %%ymm9, %%ymm9, %%ymm9\n\t"
        "vxorps %%ymm10, %%ymm10, %%ymm10\n\t"
        "vxorps %%ymm11, %%ymm11, %%ymm11\n\t"
        "test %[n4], %[n4]\n\t"
        "jz 3f\n\t"
        ".p2align 5\n\t"
        "1:\n\t"
        "prefetcht0 (%[pf])\n\t"
        "prefetcht0 (%[pf],%[bs],1)\n\t"
        K_STEP("(%[b])", "32(%[b])", "0", "4", "8", "12", "16", "20")
        K_STEP("(%[b],%[bs],1)", "32(%[b],%[bs],1)", "24", "28", "32", "36", "40", "44")
        "prefetcht0 (%[pf],%[bs],2)\n\t"
        "prefetcht0 (%[pf],%[bs3],1)\n\t"
        K_STEP("(%[b],%[bs],2)", "32(%[b],%[bs],2)", "48", "52", "56", "60", "64", "68")
        K_STEP("(%[b],%[bs3],1)", "32(%[b],%[bs3],1)", "72", "76", "80", "84", "88", "92")
        "lea (%[b],%[bs],4), %[b]\n\t"
        "lea (%[pf],%[bs],4), %[pf]\n\t"
        "add $96, %[a]\n\t"
        "dec %[n4]\n\t"
        "jnz 1b\n\t"
        "3:\n\t"
        "test %[n1], %[n1]\n\t"
        "jz 2f\n\t"
        "4:\n\t"
        K_STEP("(%[b])", "32(%[b])", "0", "4", "8", "12", "16", "20")
        "add %[bs], %[b]\n\t"
        "add $24, %[a]\n\t"
        "dec %[n1]\n\t"
        "jnz 4b\n\t"
        "2:\n\t"
        "vmovups %%ymm0, 0(%[acc])\n\t"
        "vmovups %%ymm1, 32(%[acc])\n\t"
        "vmovups %%ymm2, 64(%[acc])\n\t"
        "vmovups %%ymm3, 96(%[acc])\n\t"
        "vmovups %%ymm4, 128(%[acc])\n\t"
        "vmovups %%ymm5, 160(%[acc])\n\t"
        "vmovups %%ymm6, 192(%[acc])\n\t"
        "vmovups %%ymm7, 224(%[acc])\n\t"
        "vmovups %%ymm8, 256(%[acc])\n\t"
        "vmovups %%ymm9, 288(%[acc])\n\t"
        "vmovups %%ymm10, 320(%[acc])\n\t"
        "vmovups %%ymm11, 352(%[acc])\n\t"
        : [a] "+r"(a), [b] "+r"(b), [pf] "+r"(pf), [n4] "+r"(n4), [n1] "+r"(n1)
        : [bs] "r"(bs4), [bs3] "r"(bs12), [acc] "r"(acc)
        : "ymm0", "ymm1", "ymm2", "ymm3", "ymm4", "ymm5", "ymm6", "ymm7", "ymm8", "ymm9",
          "ymm10", "ymm11", "ymm12", "ymm13", "ymm14", "ymm15", "cc", "memory");
    store_tile(6, (const __m256(*)[2])acc, c, ldc, alpha, beta, nr);
}

void poprt__sgemm_ukr_avx2_6x16(int64_t kc, int mr, int nr, const float *a, const float *b,
                                int64_t bs, float *c, int64_t ldc, float alpha, float beta)
{
    switch (mr) {
    case 6: full_6x16(kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 5: tile(5, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 4: tile(4, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 3: tile(3, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 2: tile(2, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    case 1: tile(1, kc, a, b, bs, c, ldc, alpha, beta, nr); break;
    default: break;
    }
}

/* NP panels of one A row (sgemm.h's ukr_row): two accumulators per panel,
 * one FMA each per k in k order, and store_tile's C update, so every
 * column gets tile(1, ...)'s bits. */
INLINE void row_tile(const int NP, int64_t kc, const float *restrict a, const float *restrict b,
                     int64_t bs, int64_t pstride, float *restrict c, float alpha, float beta)
{
    __m256 acc[4][2];
#pragma GCC unroll 4
    for (int i = 0; i < NP; i++)
        acc[i][0] = acc[i][1] = _mm256_setzero_ps();
    for (int64_t p = 0; p < kc; p++) {
        const __m256 ar = _mm256_broadcast_ss(a);
#pragma GCC unroll 4
        for (int i = 0; i < NP; i++) {
            acc[i][0] = _mm256_fmadd_ps(ar, _mm256_loadu_ps(b + i * pstride), acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(ar, _mm256_loadu_ps(b + i * pstride + 8), acc[i][1]);
        }
        a += 6;
        b += bs;
    }
#pragma GCC unroll 4
    for (int i = 0; i < NP; i++) /* each panel a one-row tile of 16 columns */
        store_tile(1, (const __m256(*)[2])acc[i], c + i * 16, 0, alpha, beta, 16);
}

void poprt__sgemm_row_avx2_6x16(int64_t kc, int np, const float *a, const float *b, int64_t bs,
                                int64_t pstride, float *c, float alpha, float beta)
{
    switch (np) {
    case 4: row_tile(4, kc, a, b, bs, pstride, c, alpha, beta); break;
    case 3: row_tile(3, kc, a, b, bs, pstride, c, alpha, beta); break;
    case 2: row_tile(2, kc, a, b, bs, pstride, c, alpha, beta); break;
    case 1: row_tile(1, kc, a, b, bs, pstride, c, alpha, beta); break;
    default: break;
    }
}

/* ---- packing ------------------------------------------------------------------ */

/* x[i][j] -> x[j][i] for the 8 x 8 block in x. */
INLINE void transpose8(__m256 x[8])
{
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(x[i], x[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(x[i], x[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
        u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
        u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int i = 0; i < 4; i++) {
        x[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
        x[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
    }
}

/* lanes [0, n) of a mask, n in [0, 8] */
INLINE __m256i lanes(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The cnt (<= 8) first floats of v to d: 8 and 6 (the A panel's rows) by
 * plain stores, others masked. */
INLINE void store_n(float *d, __m256 v, int cnt)
{
    if (cnt == 8) {
        _mm256_storeu_ps(d, v);
    } else if (cnt == 6) {
        _mm_storeu_ps(d, _mm256_castps256_ps128(v));
        _mm_storel_pi((__m64 *)(d + 4), _mm256_extractf128_ps(v, 1));
    } else {
        _mm256_maskstore_ps(d, lanes(cnt), v);
    }
}

/* Rows [0, nrow) (nrow <= 8) x k [0, np) (np <= 8) of x(r, p) = s[r*rs + p]
 * into d[p*width + i], i < cnt; rows past nrow zero. Inlined with constant
 * nrow, cnt and np for whole blocks, so x stays in registers. */
INLINE void tr_block(const float *s, int64_t rs, int nrow, int np, int cnt, int width, float *d)
{
    __m256 x[8];
    const __m256i km = lanes(np);
    for (int i = 0; i < 8; i++) {
        if (i >= nrow) {
            x[i] = _mm256_setzero_ps();
            continue;
        }
        x[i] = np == 8 ? _mm256_loadu_ps(s + i * rs) : _mm256_maskload_ps(s + i * rs, km);
    }
    transpose8(x);
    for (int q = 0; q < np; q++)
        store_n(d + q * width, x[q], cnt);
}

/* one out-of-line copy for the edge blocks (partial k, rows or columns) */
static void tr_part(const float *s, int64_t rs, int nrow, int np, int cnt, int width, float *d)
{
    tr_block(s, rs, nrow, np, cnt, width, d);
}

/* Six rows x 8 k (rows rs apart, k contiguous; rows from nrow on zeros)
 * to the A panel's 48 contiguous floats d[p * 6 + r]. In pairs of rows:
 * unpacking rows 2i and 2i + 1 gives 64-bit units (r 2i, r 2i+1) per k,
 * and the panel is those units in the order (01, 23, 45) per k, so six
 * output vectors are put together from them by 64-bit and 128-bit lane
 * moves: 20 shuffles and six whole-vector stores, where the 8 x 8 transpose
 * did 24 shuffles, eight extracts and 16 part stores. */
INLINE void tr6x8(const float *s, int64_t rs, const int nrow, float *d)
{
#define ROW(i) (i < nrow ? _mm256_loadu_ps(s + i * rs) : _mm256_setzero_ps())
    const __m256 r0 = ROW(0), r1 = ROW(1), r2 = ROW(2), r3 = ROW(3), r4 = ROW(4), r5 = ROW(5);
#undef ROW
    /* tA: units (k0 k1 | k4 k5), tB: (k2 k3 | k6 k7), of rows 01, 23, 45 */
    const __m256d t01a = _mm256_castps_pd(_mm256_unpacklo_ps(r0, r1));
    const __m256d t01b = _mm256_castps_pd(_mm256_unpackhi_ps(r0, r1));
    const __m256d t23a = _mm256_castps_pd(_mm256_unpacklo_ps(r2, r3));
    const __m256d t23b = _mm256_castps_pd(_mm256_unpackhi_ps(r2, r3));
    const __m256d t45a = _mm256_castps_pd(_mm256_unpacklo_ps(r4, r5));
    const __m256d t45b = _mm256_castps_pd(_mm256_unpackhi_ps(r4, r5));
    /* per 128-bit lane (k, k + 4): */
    const __m256d u = _mm256_unpacklo_pd(t01a, t23a);  /* 01k0 23k0 */
    const __m256d v = _mm256_unpackhi_pd(t01a, t23a);  /* 01k1 23k1 */
    const __m256d w = _mm256_unpacklo_pd(t01b, t23b);  /* 01k2 23k2 */
    const __m256d x = _mm256_unpackhi_pd(t01b, t23b);  /* 01k3 23k3 */
    const __m256d s1 = _mm256_shuffle_pd(t45a, v, 0);  /* 45k0 01k1 */
    const __m256d s2 = _mm256_shuffle_pd(v, t45a, 15); /* 23k1 45k1 */
    const __m256d s3 = _mm256_shuffle_pd(t45b, x, 0);  /* 45k2 01k3 */
    const __m256d s4 = _mm256_shuffle_pd(x, t45b, 15); /* 23k3 45k3 */
    _mm256_storeu_pd((double *)d, _mm256_permute2f128_pd(u, s1, 0x20));
    _mm256_storeu_pd((double *)(d + 8), _mm256_permute2f128_pd(s2, w, 0x20));
    _mm256_storeu_pd((double *)(d + 16), _mm256_permute2f128_pd(s3, s4, 0x20));
    _mm256_storeu_pd((double *)(d + 24), _mm256_permute2f128_pd(u, s1, 0x31));
    _mm256_storeu_pd((double *)(d + 32), _mm256_permute2f128_pd(s2, w, 0x31));
    _mm256_storeu_pd((double *)(d + 40), _mm256_permute2f128_pd(s3, s4, 0x31));
}

/* The AVX2 variant's packer (sgemm.h's contract): rows contiguous in k (A,
 * or B transposed) go through 8 x 8 transposes, an A panel (six rows or
 * fewer) through tr6x8; otherwise each k row is n contiguous floats, copied by
 * vectors (the portable packer's one memcpy per 64-byte row and scalar
 * transposes took a quarter of a 512^3 GEMM's time). */
void poprt__sgemm_pack_avx2(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                            int width, float *dst)
{
    if (ps == 1 && rs != 1 && n >= 1 && n <= 6 && width == 6) {
        int64_t p0 = 0;
        /* one loop per row count, so tr6x8's loads are known (an RNN's
         * batch of 4 rows went through tr_part's masked transposes: 7% of
         * a GRU's steps) */
#define TR6_LOOP(R)                               \
    for (; p0 + 8 <= kc; p0 += 8)                 \
        tr6x8(src + p0, rs, R, dst + p0 * 6);     \
    break
        switch (n) {
        case 6: TR6_LOOP(6);
        case 5: TR6_LOOP(5);
        case 4: TR6_LOOP(4);
        case 3: TR6_LOOP(3);
        case 2: TR6_LOOP(2);
        default: TR6_LOOP(1);
        }
#undef TR6_LOOP
        if (p0 < kc)
            tr_part(src + p0, rs, n, (int)(kc - p0), 6, 6, dst + p0 * 6);
        return;
    }
    if (ps == 1 && rs != 1) {
        for (int64_t p0 = 0; p0 < kc; p0 += 8) {
            const int np = (int)(kc - p0 < 8 ? kc - p0 : 8);
            for (int r0 = 0; r0 < width; r0 += 8) {
                const int nrow = n - r0 < 8 ? (n - r0 > 0 ? n - r0 : 0) : 8;
                const int cnt = width - r0 < 8 ? width - r0 : 8;
                const float *s = src + r0 * rs + p0;
                float *d = dst + p0 * width + r0;
                if (np == 8 && nrow == 8 && cnt == 8)
                    tr_block(s, rs, 8, 8, 8, width, d);
                else if (np == 8 && nrow == 6 && cnt == 6)
                    tr_block(s, rs, 6, 8, 6, width, d);
                else
                    tr_part(s, rs, nrow, np, cnt, width, d);
            }
        }
        return;
    }
    if (n == 16 && width == 16) {
        for (int64_t p = 0; p < kc; p++) {
            const float *s = src + p * ps;
            _mm256_storeu_ps(dst + p * 16, _mm256_loadu_ps(s));
            _mm256_storeu_ps(dst + p * 16 + 8, _mm256_loadu_ps(s + 8));
        }
        return;
    }
    if (n == 6 && width == 6) {
        /* a whole A panel of a transposed A (a convolution's positions as
         * rows, conv_gemm.c): six floats per k by plain moves; the loop
         * below took 170 us for a 169 x 512 A in L2, this one 26 */
        for (int64_t p = 0; p < kc; p++) {
            const float *s = src + p * ps;
            _mm_storeu_ps(dst + p * 6, _mm_loadu_ps(s));
            _mm_storel_pi((__m64 *)(dst + p * 6 + 4),
                          _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(s + 4)));
        }
        return;
    }
    /* rows of n floats, zero-padded to width */
    for (int64_t p = 0; p < kc; p++) {
        const float *s = src + p * ps;
        float *d = dst + p * width;
        for (int r0 = 0; r0 < width; r0 += 8) {
            const int cnt = width - r0 < 8 ? width - r0 : 8;
            const int have = n - r0 < cnt ? (n - r0 > 0 ? n - r0 : 0) : cnt;
            const __m256 v =
                have == 8 ? _mm256_loadu_ps(s + r0) : _mm256_maskload_ps(s + r0, lanes(have));
            store_n(d + r0, v, cnt);
        }
    }
}
