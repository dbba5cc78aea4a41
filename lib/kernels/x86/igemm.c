/* The integer GEMM (igemm.h): the kernel list and its dispatch, B packing,
 * the blocked driver and the portable variant. */
#include <math.h>
#include <string.h>
#include "kernels/x86/igemm.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The row-wise helpers (requantization, fix-up, range, quantization) a
 * variant shares with another, its float output's (deq), the set-up a
 * thread runs before its micro-kernel calls, and its a16 and b7 marks: the
 * AMX variant has only its micro-kernel, takes the VNNI variant's helpers
 * and loads the tile configuration (the bfloat16 GEMM's: 16 rows of 64
 * bytes in every tile); the 7-bit AVX2 one has only its micro-kernel too.
 * The AVX-512 variants write floats with the AVX2 deq (8 columns a step:
 * memory-bound, and every AVX-512 CPU has AVX2). */
#define IG_HELPERS_avx512_vnni avx512_vnni, avx2, NULL, 0, 0
#define IG_HELPERS_avx2_b7 avx2, avx2, NULL, 0, 1
#define IG_HELPERS_avx2 avx2, avx2, NULL, 1, 0
#define IG_HELPERS_scalar scalar, scalar, NULL, 0, 0
#define IG_HELPERS_amx_int8 avx512_vnni, avx2, poprt__sgemm_enter_amx, 0, 0
#define IG_ENTRY(name, level, flags, mr, nr, ukr, h, hd, enter, a16, b7)                          \
    {name, level, flags, mr, nr, ukr, poprt__igemm_rq_##h, poprt__igemm_fix_##h,                   \
     poprt__igemm_deq_##hd, poprt__igemm_minmax_##h, poprt__igemm_quant_##h, enter, a16, b7},
#define IG_ENTRY_(...) IG_ENTRY(__VA_ARGS__)
#define POPRT__IGEMM_VARIANT(isa, level, flags, mr, nr)                                           \
    IG_ENTRY_(#isa, level, flags, mr, nr, poprt__igemm_ukr_##isa, IG_HELPERS_##isa)
const poprt__igemm_variant poprt__igemm_variants[] = {
#include "kernels/x86/igemm_kernels.inc"
};
#undef POPRT__IGEMM_VARIANT
const int poprt__igemm_n_variants =
    (int)(sizeof poprt__igemm_variants / sizeof poprt__igemm_variants[0]);

int poprt__igemm_usable(const poprt__igemm_variant *v)
{
    return v && poprt__cpu_features()->isa >= v->isa && poprt__cpu_has(v->flags);
}

static const poprt__igemm_variant *g_forced;

void poprt__igemm_force(const poprt__igemm_variant *v)
{
    __atomic_store_n(&g_forced, poprt__igemm_usable(v) ? v : NULL, __ATOMIC_RELAXED);
}

const poprt__igemm_variant *poprt__igemm_best(void)
{
    const poprt__igemm_variant *f = __atomic_load_n(&g_forced, __ATOMIC_RELAXED);
    if (f)
        return f;
    for (int i = 0; i < poprt__igemm_n_variants; i++)
        if (poprt__igemm_usable(&poprt__igemm_variants[i]))
            return &poprt__igemm_variants[i];
    return &poprt__igemm_variants[poprt__igemm_n_variants - 1];
}

/* ---- packed B ---------------------------------------------------------------- */

#define PACK_HEADER 64u
#define PACK_MAGIC 0x31384d4749525050ull /* "PPRIGM81" */

static int64_t kq_of(int64_t K)
{
    return (K + 3) / 4;
}

static int64_t npan_of(int64_t N)
{
    return (N + POPRT__IGEMM_PANEL - 1) / POPRT__IGEMM_PANEL;
}

size_t poprt__igemm_pack_size(int64_t K, int64_t N)
{
    const int64_t np = npan_of(N);
    return PACK_HEADER + (size_t)np * POPRT__IGEMM_PANEL * sizeof(int32_t) +
           (size_t)(np * kq_of(K) * 4 * POPRT__IGEMM_PANEL);
}

/* The header's words: magic, K, N, kq, npan, then the 7-bit mark (1 when
 * every value lies in [-64, 63]; 0 in packs written before it existed,
 * which only costs them the 7-bit variants). */
#define PACK_WORDS 6
#define PACK_B7 5

void poprt__igemm_pack(int64_t K, int64_t N, const void *src, const int64_t *koff, int64_t rs,
                       int64_t cs, int b_u8, void *dst)
{
    const int64_t kq = kq_of(K), np = npan_of(N);
    unsigned char *d = dst;
    memset(d, 0, poprt__igemm_pack_size(K, N));
    uint64_t h[PACK_WORDS] = {PACK_MAGIC, (uint64_t)K, (uint64_t)N, (uint64_t)kq, (uint64_t)np,
                              1};
    int32_t *colsum = (int32_t *)(d + PACK_HEADER);
    int8_t *pan = (int8_t *)(colsum + np * POPRT__IGEMM_PANEL);
    for (int64_t n = 0; n < N; n++) {
        int8_t *col = pan + (n / POPRT__IGEMM_PANEL) * kq * 64 + (n % POPRT__IGEMM_PANEL) * 4;
        int32_t sum = 0;
        for (int64_t k = 0; k < K; k++) {
            const int64_t o = (koff ? koff[k] : k * rs) + n * cs;
            const int v = b_u8 ? (int)((const uint8_t *)src)[o] - 128 : ((const int8_t *)src)[o];
            col[(k / 4) * 64 + k % 4] = (int8_t)v;
            sum += v;
            if (v < -64 || v > 63)
                h[PACK_B7] = 0;
        }
        colsum[n] = sum;
    }
    memcpy(d, h, sizeof h);
}

int poprt__igemm_packed_b7(const void *packed)
{
    uint64_t b7;
    memcpy(&b7, (const unsigned char *)packed + PACK_B7 * sizeof b7, sizeof b7);
    return b7 == 1;
}

int poprt__igemm_packed_fits(const void *p, size_t size, int64_t K, int64_t N)
{
    uint64_t h[5];
    if (!p || size < PACK_HEADER || K <= 0 || N <= 0)
        return 0;
    memcpy(h, p, sizeof h);
    return h[0] == PACK_MAGIC && h[1] == (uint64_t)K && h[2] == (uint64_t)N &&
           h[3] == (uint64_t)kq_of(K) && h[4] == (uint64_t)npan_of(N) &&
           size == poprt__igemm_pack_size(K, N);
}

const int32_t *poprt__igemm_colsum(const void *packed)
{
    return (const int32_t *)((const unsigned char *)packed + PACK_HEADER);
}

/* ---- the driver --------------------------------------------------------------------- */

#define IG_MB POPRT__IGEMM_MB /* rows per block (rounded to a multiple of MR below) */
#define IG_NB POPRT__IGEMM_NB /* columns per block (a multiple of every NR) */
#define IG_KQB 128 /* K groups per K block (512 bytes of an A row) */

typedef struct ig_job {
    const poprt__igemm_variant *v;
    int64_t M, N, kq, lda, mbs, nmb, nnb, ntask, nchunk, pstride;
    const uint8_t *A;
    const int8_t *pan;
    int32_t *ws; /* nchunk chunks of chunk_bytes */
    const poprt__igemm_epi *epi;
} ig_job;

/* rows per block: a multiple of MR, at most IG_MB */
static int64_t mb_of(const poprt__igemm_variant *v)
{
    return IG_MB / v->mr * v->mr;
}

/* bytes of one chunk's workspace: its C block, then the epilogue's
 * scratch, then for an a16 variant its block of A widened (a16_of) */
static size_t a16_bytes(const poprt__igemm_variant *v)
{
    return v->a16 ? (size_t)(mb_of(v) * IG_KQB * 4) * sizeof(int16_t) : 0;
}

static size_t chunk_bytes(const poprt__igemm_variant *v)
{
    return (size_t)(mb_of(v) * IG_NB) * sizeof(int32_t) + POPRT__IGEMM_EPI_BYTES + a16_bytes(v);
}

/* The widened rows of a chunk whose C block is at cb (see chunk_bytes):
 * rows of IG_KQB * 4 int16 values. */
static int16_t *a16_of(const poprt__igemm_variant *v, int32_t *cb)
{
    return (int16_t *)((unsigned char *)cb + chunk_bytes(v) - a16_bytes(v));
}

/* d[k] = s[k], k < n (a row of A for an a16 variant) */
static void widen(const uint8_t *restrict s, int64_t n, int16_t *restrict d)
{
    for (int64_t k = 0; k < n; k++)
        d[k] = s[k];
}

/* The first row of row block i (M for i = nmb): i * M / nmb rounded to the
 * nearest multiple of MR, so that blocks differ by at most MR rows and a
 * thread's contiguous share of them is even too (128 rows in 4 blocks of
 * 36, 36, 36 and 20 gave 2 threads 72 and 56 rows; now 30, 36, 30, 32).
 * Heights stay within mbs (see poprt__igemm); a block may be empty. */
static int64_t row_at(const ig_job *j, int64_t i)
{
    if (i >= j->nmb)
        return j->M;
    const int64_t mr = j->v->mr, r = (i * j->M / j->nmb + mr / 2) / mr * mr;
    return r < j->M ? r : j->M;
}

static void ig_task(const ig_job *j, int64_t t, int32_t *cb)
{
    const poprt__igemm_variant *v = j->v;
    const int64_t m0 = row_at(j, t / j->nnb), n0 = (t % j->nnb) * IG_NB;
    const int64_t m1 = row_at(j, t / j->nnb + 1);
    const int64_t n1 = n0 + IG_NB < j->N ? n0 + IG_NB : j->N;
    if (m1 <= m0)
        return;
    int16_t *w = v->a16 ? a16_of(v, cb) : NULL;
    for (int64_t kb = 0; kb < j->kq; kb += IG_KQB) {
        const int64_t kqn = j->kq - kb < IG_KQB ? j->kq - kb : IG_KQB;
        /* the micro-kernel's A: the block's rows, or their widened copy */
        const uint8_t *a = j->A + m0 * j->lda + kb * 4;
        int64_t lda = j->lda;
        if (w) {
            for (int64_t r = 0; r < m1 - m0; r++)
                widen(a + r * j->lda, 4 * kqn, w + r * IG_KQB * 4);
            a = (const uint8_t *)w;
            lda = IG_KQB * 4 * (int64_t)sizeof(int16_t);
        }
        for (int64_t c = n0; c < n1; c += v->nr) {
            const int nr = (int)(n1 - c < v->nr ? n1 - c : v->nr);
            const int8_t *b = j->pan + (c / POPRT__IGEMM_PANEL) * j->pstride + kb * 64 +
                              (c % POPRT__IGEMM_PANEL) * 4;
            /* the next panel's B (in this K block, else the first one's in
             * the next K block) on its way to L2 while this one runs,
             * a share per row panel: weights come from memory or L3, and
             * the next panel is pstride bytes on, where the hardware's
             * stream prefetch does not look */
            const char *pf = NULL;
            int64_t pf_lines = 0, pf_step = 0;
            const int64_t next = (c / POPRT__IGEMM_PANEL + 1) * POPRT__IGEMM_PANEL;
            if (c % POPRT__IGEMM_PANEL == 0 && (next < n1 || kb + IG_KQB < j->kq)) {
                const int64_t nc = next < n1 ? next : n0;
                const int64_t nk = next < n1 ? kb : kb + IG_KQB;
                const int64_t nq = j->kq - nk < IG_KQB ? j->kq - nk : IG_KQB;
                pf = (const char *)(j->pan + (nc / POPRT__IGEMM_PANEL) * j->pstride + nk * 64);
                pf_lines = nq; /* 64 bytes (one line) per K group */
                const int64_t np = (m1 - m0 + v->mr - 1) / v->mr;
                pf_step = (pf_lines + np - 1) / np;
            }
            for (int64_t r = m0; r < m1; r += v->mr) {
                const int mr = (int)(m1 - r < v->mr ? m1 - r : v->mr);
                for (int64_t q = 0; pf && q < pf_step && pf_lines > 0; q++, pf_lines--, pf += 64)
                    __builtin_prefetch(pf, 0, 2);
                v->ukr(kqn, mr, nr, a + (r - m0) * lda, lda, b, j->pstride,
                       cb + (r - m0) * IG_NB + (c - n0), IG_NB, kb > 0);
            }
        }
    }
    j->epi->fn(j->epi->ctx, m0, m1, n0, n1, cb, IG_NB, cb + mb_of(v) * IG_NB);
}

static void ig_chunks(void *ctx, int64_t b, int64_t e)
{
    const ig_job *j = ctx;
    if (j->v->enter)
        j->v->enter();
    for (int64_t ch = b; ch < e; ch++) {
        int32_t *cb = (int32_t *)((unsigned char *)j->ws + (size_t)ch * chunk_bytes(j->v));
        for (int64_t t = ch * j->ntask / j->nchunk; t < (ch + 1) * j->ntask / j->nchunk; t++)
            ig_task(j, t, cb);
    }
}

/* What runs for a b7 variant when B is not within 7 bits: the first usable
 * variant after it without the mark (the list ends with the portable one). */
static const poprt__igemm_variant *stand_in(const poprt__igemm_variant *v)
{
    const poprt__igemm_variant *end = poprt__igemm_variants + poprt__igemm_n_variants;
    const poprt__igemm_variant *w = v >= poprt__igemm_variants && v < end ? v + 1 : end - 1;
    for (; w < end; w++)
        if (!w->b7 && poprt__igemm_usable(w))
            return w;
    return end - 1;
}

size_t poprt__igemm_ws_size(const poprt__igemm_variant *v, int64_t M, int64_t N, int nthreads)
{
    (void)M;
    (void)N;
    if (!v)
        v = poprt__igemm_best();
    size_t c = chunk_bytes(v);
    if (v->b7 && chunk_bytes(stand_in(v)) > c)
        c = chunk_bytes(stand_in(v));
    return (size_t)(nthreads < 1 ? 1 : nthreads) * c;
}

void poprt__igemm(const poprt__igemm_variant *v, const poprt__par *par, int nthreads, void *ws,
                  int64_t M, int64_t N, int64_t K, const uint8_t *A, int64_t lda,
                  const void *Bpacked, const poprt__igemm_epi *epi)
{
    if (M <= 0 || N <= 0)
        return;
    if (!v)
        v = poprt__igemm_best();
    if (v->b7 && !poprt__igemm_packed_b7(Bpacked))
        v = stand_in(v);
    ig_job j;
    memset(&j, 0, sizeof j);
    j.v = v;
    j.M = M;
    j.N = N;
    j.kq = kq_of(K);
    j.lda = lda;
    j.nchunk = nthreads < 1 ? 1 : nthreads;
    j.nnb = (N + IG_NB - 1) / IG_NB;
    /* blocks of fewer rows when there would be under 4 per thread (the
     * small late layers of a CNN), so the threads' shares stay even */
    j.mbs = mb_of(v);
    while (j.mbs > v->mr && ((M + j.mbs - 1) / j.mbs) * j.nnb < 4 * j.nchunk)
        j.mbs -= v->mr;
    /* row blocks of even heights (row_at), at most mbs rows: their mean
     * within mbs - MR, since rounding a boundary moves it by up to MR / 2
     * (with mbs = MR: at most 2 MR, within the workspace's mb_of rows,
     * which is at least 2 MR for every variant) */
    const int64_t avg = j.mbs > v->mr ? j.mbs - v->mr : v->mr;
    j.nmb = (M + avg - 1) / avg;
    j.ntask = j.nmb * j.nnb;
    if (j.nchunk > j.ntask)
        j.nchunk = j.ntask;
    j.pstride = j.kq * 64;
    j.A = A;
    j.pan = (const int8_t *)(poprt__igemm_colsum(Bpacked) + npan_of(N) * POPRT__IGEMM_PANEL);
    j.ws = ws;
    j.epi = epi;
    if (K <= 0) { /* nothing to sum: blocks of zeros */
        const int64_t mb = mb_of(v);
        for (int64_t t = 0; t < j.ntask; t++) {
            const int64_t m0 = row_at(&j, t / j.nnb), m1 = row_at(&j, t / j.nnb + 1);
            const int64_t n0 = (t % j.nnb) * IG_NB;
            if (m1 <= m0)
                continue;
            memset(j.ws, 0, (size_t)(mb * IG_NB) * sizeof(int32_t));
            epi->fn(epi->ctx, m0, m1, n0, n0 + IG_NB < N ? n0 + IG_NB : N, j.ws, IG_NB,
                    j.ws + mb * IG_NB);
        }
        return;
    }
    if (par && par->run && j.nchunk > 1)
        par->run(par->self, j.nchunk, 1, ig_chunks, &j);
    else
        ig_chunks(&j, 0, j.nchunk);
}

int32_t poprt__igemm_rowsum(const uint8_t *a, int64_t K)
{
    uint32_t s = 0;
    for (int64_t k = 0; k < K; k++)
        s += a[k];
    return (int32_t)s;
}

#if defined(__SSE2__)
/* one 16 x 16 block: interleaving pairs of rows by 8, 16, 32 and 64 bits
 * leaves column c of the block in register c */
static void t16(const uint8_t *s, int64_t ss, uint8_t *d, int64_t ds, uint8_t flip)
{
    const __m128i f = _mm_set1_epi8((char)flip);
    __m128i x[16], y[16];
    for (int i = 0; i < 16; i++)
        x[i] = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + i * ss)), f);
    for (int i = 0; i < 8; i++) { /* y[i]: rows 2i, 2i+1, columns 0-7; y[8+i]: 8-15 */
        y[i] = _mm_unpacklo_epi8(x[2 * i], x[2 * i + 1]);
        y[i + 8] = _mm_unpackhi_epi8(x[2 * i], x[2 * i + 1]);
    }
    for (int h = 0; h < 16; h += 8) /* x[h+i]: rows 4i..4i+3, 4 columns from h, h+4 */
        for (int i = 0; i < 4; i++) {
            x[h + i] = _mm_unpacklo_epi16(y[h + 2 * i], y[h + 2 * i + 1]);
            x[h + i + 4] = _mm_unpackhi_epi16(y[h + 2 * i], y[h + 2 * i + 1]);
        }
    for (int q = 0; q < 16; q += 4) /* y[q+i]: rows 8i..8i+7, 2 columns from q, q+2 */
        for (int i = 0; i < 2; i++) {
            y[q + i] = _mm_unpacklo_epi32(x[q + 2 * i], x[q + 2 * i + 1]);
            y[q + i + 2] = _mm_unpackhi_epi32(x[q + 2 * i], x[q + 2 * i + 1]);
        }
    for (int q = 0; q < 16; q += 4) {
        _mm_storeu_si128((__m128i *)(d + (q + 0) * ds), _mm_unpacklo_epi64(y[q], y[q + 1]));
        _mm_storeu_si128((__m128i *)(d + (q + 1) * ds), _mm_unpackhi_epi64(y[q], y[q + 1]));
        _mm_storeu_si128((__m128i *)(d + (q + 2) * ds), _mm_unpacklo_epi64(y[q + 2], y[q + 3]));
        _mm_storeu_si128((__m128i *)(d + (q + 3) * ds), _mm_unpackhi_epi64(y[q + 2], y[q + 3]));
    }
}
#endif

void poprt__igemm_transpose_u8(const uint8_t *s, int64_t ss, uint8_t *d, int64_t ds, int64_t rows,
                               int64_t cols, uint8_t flip)
{
    int64_t r0 = 0, c0 = 0;
#if defined(__SSE2__)
    for (; r0 + 16 <= rows; r0 += 16)
        for (c0 = 0; c0 + 16 <= cols; c0 += 16)
            t16(s + r0 * ss + c0, ss, d + c0 * ds + r0, ds, flip);
#endif
    /* the edges: the columns right of the blocks, then the rows below */
    for (int64_t i = 0; i < r0; i++)
        for (int64_t j = c0; j < cols; j++)
            d[j * ds + i] = s[i * ss + j] ^ flip;
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = r0; i < rows; i++)
            d[j * ds + i] = s[i * ss + j] ^ flip;
}

void poprt__igemm_transpose_i32(const int32_t *s, int64_t ss, int32_t *d, int64_t ds,
                                int64_t rows, int64_t cols)
{
    /* Strips of 4 destination rows (source columns), each walked down all
     * the source rows, so that every destination line is finished while it
     * is in L1: destination rows are often planes a multiple of 4 KiB apart
     * (the same L1 set), and a row-major walk over all of them evicted each
     * line between its four partial writes. */
    int64_t c0 = 0, r0 = 0;
#if defined(__SSE2__)
    for (; c0 + 4 <= cols; c0 += 4) {
        int32_t *o = d + c0 * ds;
        for (r0 = 0; r0 + 4 <= rows; r0 += 4) {
            const int32_t *b = s + r0 * ss + c0;
            const __m128i x0 = _mm_loadu_si128((const __m128i *)b);
            const __m128i x1 = _mm_loadu_si128((const __m128i *)(b + ss));
            const __m128i x2 = _mm_loadu_si128((const __m128i *)(b + 2 * ss));
            const __m128i x3 = _mm_loadu_si128((const __m128i *)(b + 3 * ss));
            const __m128i y0 = _mm_unpacklo_epi32(x0, x1), y1 = _mm_unpackhi_epi32(x0, x1);
            const __m128i y2 = _mm_unpacklo_epi32(x2, x3), y3 = _mm_unpackhi_epi32(x2, x3);
            _mm_storeu_si128((__m128i *)(o + r0), _mm_unpacklo_epi64(y0, y2));
            _mm_storeu_si128((__m128i *)(o + ds + r0), _mm_unpackhi_epi64(y0, y2));
            _mm_storeu_si128((__m128i *)(o + 2 * ds + r0), _mm_unpacklo_epi64(y1, y3));
            _mm_storeu_si128((__m128i *)(o + 3 * ds + r0), _mm_unpackhi_epi64(y1, y3));
        }
        for (int64_t j = c0; j < c0 + 4; j++) /* the strip's rows below the blocks */
            for (int64_t i = r0; i < rows; i++)
                d[j * ds + i] = s[i * ss + j];
    }
#endif
    /* the columns right of the strips */
    for (int64_t j = c0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++)
            d[j * ds + i] = s[i * ss + j];
}

/* ---- the portable variant --------------------------------------------------------- */

void poprt__igemm_ukr_scalar(int64_t kq, int mr, int nr, const uint8_t *a, int64_t lda,
                             const int8_t *b, int64_t pstride, int32_t *c, int64_t ldc,
                             int accumulate)
{
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            const int8_t *bc = b + (j / POPRT__IGEMM_PANEL) * pstride + (j % POPRT__IGEMM_PANEL) * 4;
            uint32_t s = accumulate ? (uint32_t)c[i * ldc + j] : 0u;
            for (int64_t q = 0; q < kq; q++)
                for (int t = 0; t < 4; t++)
                    s += (uint32_t)((int32_t)a[i * lda + 4 * q + t] * bc[q * 64 + t]);
            c[i * ldc + j] = (int32_t)s;
        }
}

/* v of column j (igemm.h): the corrected accumulator, wrapping */
static inline int32_t fixed(const poprt__igemm_cols *q, int64_t jj, int32_t c, int32_t rs)
{
    uint32_t v = (uint32_t)c + (uint32_t)q->colterm[jj];
    if (q->bz)
        v -= (uint32_t)q->bz[jj] * (uint32_t)rs;
    return (int32_t)v;
}

void poprt__igemm_fix_scalar(const poprt__igemm_cols *q, int64_t j0, int64_t n, const int32_t *c,
                             int32_t rs, int32_t *out)
{
    for (int64_t j = 0; j < n; j++)
        out[j] = fixed(q, j0 + j, c[j], rs);
}

void poprt__igemm_deq_scalar(const poprt__igemm_cols *q, const poprt__igemm_deq *d, int64_t j0,
                             int64_t n, const int32_t *c, int32_t rs, float *out)
{
    for (int64_t j = 0; j < n; j++) {
        const int64_t jj = j0 + j;
        float y = (float)fixed(q, jj, c[j], rs) * d->s[d->s_all ? jj : 0];
        if (d->b)
            y = y + d->b[d->b_all ? jj : 0];
        out[j] = y;
    }
}

void poprt__igemm_rq_scalar(const poprt__igemm_cols *q, int64_t j0, int64_t n, const int32_t *c,
                            int32_t rs, void *out)
{
    for (int64_t j = 0; j < n; j++) {
        const int64_t jj = j0 + j;
        double t = (double)fixed(q, jj, c[j], rs);
        if (q->bias)
            t += q->bias[jj];
        double r = nearbyint(t * (double)q->mult[jj] + q->yz);
        r = r <= q->lo ? q->lo : (r >= q->hi ? q->hi : r);
        if (q->s8)
            ((int8_t *)out)[j] = (int8_t)r;
        else
            ((uint8_t *)out)[j] = (uint8_t)r;
    }
}

void poprt__igemm_minmax_scalar(const float *x, int64_t n, float *mn, float *mx)
{
    float lo = *mn, hi = *mx;
    for (int64_t i = 0; i < n; i++) {
        if (x[i] < lo)
            lo = x[i];
        if (x[i] > hi)
            hi = x[i];
    }
    *mn = lo;
    *mx = hi;
}

void poprt__igemm_quant_scalar(const float *x, int64_t n, float scale, float zp, int lo, int hi,
                               int s8, void *y)
{
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i] / scale;
        double r = isnan(v) ? 0.0 : nearbyint(v) + zp;
        r = r <= lo ? lo : (r >= hi ? hi : r);
        if (s8)
            ((int8_t *)y)[i] = (int8_t)r;
        else
            ((uint8_t *)y)[i] = (uint8_t)r;
    }
}
