/* fp32 GEMM driver: packing, blocking, threading and dispatch over the
 * kernel list (see sgemm.h). Portable C; the micro-kernels live in the ISA
 * files compiled with their own flags. */
#include <string.h>
#include "kernels/kernel.h"
#include "kernels/ref/gemm.h"
#include "kernels/x86/sgemm.h"

/* ---- the kernel list ------------------------------------------------------ */

/* tap-summing micro-kernels exist for the AVX-512 variants only */
#define SGEMM_TAPS_avx512(mr, nr) poprt__sgemm_ukr_taps_avx512_##mr##x##nr
#define SGEMM_TAPS_avx2(mr, nr) NULL
#define SGEMM_TAPS_scalar(mr, nr) NULL
#define SGEMM_TAPS_avx512bf16(mr, nr) NULL
#define SGEMM_TAPS_amxbf16(mr, nr) NULL
/* A's own packer, the row padding and the thread set-up: AMX tiles read A
 * row by row, 16 pair words deep, after the tile configuration is loaded */
#define SGEMM_A_avx512 NULL, 1, NULL
#define SGEMM_A_avx2 NULL, 1, NULL
#define SGEMM_A_scalar NULL, 1, NULL
#define SGEMM_A_avx512bf16 NULL, 1, NULL
#define SGEMM_A_amxbf16 poprt__sgemm_pack_a_bf16_amx, 16, poprt__sgemm_enter_amx
/* one-row products over several B panels (AVX2 only so far) */
#define SGEMM_ROW_avx512(mr, nr) NULL
#define SGEMM_ROW_avx2(mr, nr) poprt__sgemm_row_avx2_##mr##x##nr
#define SGEMM_ROW_scalar(mr, nr) NULL
#define SGEMM_ROW_avx512bf16(mr, nr) NULL
#define SGEMM_ROW_amxbf16(mr, nr) NULL
#define POPRT__SGEMM_VARIANT(isa, level, mr, nr, kc, nc, pack, kpack, need)                 \
    {#isa "_" #mr "x" #nr, level, mr, nr, kc, nc, poprt__sgemm_ukr_##isa##_##mr##x##nr,       \
     SGEMM_TAPS_##isa(mr, nr), pack, kpack, need, SGEMM_A_##isa, SGEMM_ROW_##isa(mr, nr)},
const poprt__sgemm_variant poprt__sgemm_variants[] = {
#include "kernels/x86/sgemm_kernels.inc"
};
#undef POPRT__SGEMM_VARIANT
const int poprt__sgemm_n_variants =
    (int)(sizeof poprt__sgemm_variants / sizeof poprt__sgemm_variants[0]);

int poprt__sgemm_usable(const poprt__sgemm_variant *v)
{
    return v && poprt__cpu_features()->isa >= v->isa && (!v->need || poprt__cpu_has(v->need));
}

/* The highest ISA level first, then list order (new variants are appended,
 * see sgemm_kernels.inc, so the list alone cannot rank them). */
static const poprt__sgemm_variant *first_usable(int kpack)
{
    const poprt__sgemm_variant *best = NULL;
    for (int i = 0; i < poprt__sgemm_n_variants; i++) {
        const poprt__sgemm_variant *v = &poprt__sgemm_variants[i];
        if (v->kpack == kpack && poprt__sgemm_usable(v) && (!best || v->isa > best->isa))
            best = v;
    }
    return best;
}

const poprt__sgemm_variant *poprt__sgemm_best(void)
{
    /* never NULL: the portable float32 variant is always usable */
    return first_usable(1);
}

const poprt__sgemm_variant *poprt__sgemm_best_bf16(void)
{
    return first_usable(2);
}

static int64_t round_up(int64_t x, int64_t m);

static double tile_cost(const poprt__sgemm_variant *v, int64_t M, int64_t N)
{
    return (double)round_up(M, v->mr) * (double)round_up(N, v->nr);
}

const poprt__sgemm_variant *poprt__sgemm_fit(const poprt__sgemm_variant *first, int64_t M,
                                             int64_t N)
{
    const poprt__sgemm_variant *pick = first;
    for (int i = 0; pick && i < poprt__sgemm_n_variants; i++) {
        const poprt__sgemm_variant *v = &poprt__sgemm_variants[i];
        if (v->isa == pick->isa && v->kpack == pick->kpack && poprt__sgemm_usable(v) &&
            tile_cost(v, M, N) < 0.97 * tile_cost(pick, M, N))
            pick = v;
    }
    return pick;
}

/* ---- portable micro-kernel (4x16) ----------------------------------------- */

void poprt__sgemm_ukr_scalar_4x16(int64_t kc, int mr, int nr, const float *a, const float *b,
                                  int64_t bs, float *c, int64_t ldc, float alpha, float beta)
{
    float acc[4][16];
    memset(acc, 0, sizeof acc);
    for (int64_t p = 0; p < kc; p++) {
        const float *bp = b + p * bs, *ap = a + p * 4;
        for (int r = 0; r < 4; r++)
            for (int j = 0; j < 16; j++)
                acc[r][j] += ap[r] * bp[j];
    }
    for (int r = 0; r < mr; r++)
        for (int j = 0; j < nr; j++) {
            const float t = alpha * acc[r][j];
            float *cp = c + r * ldc + j;
            *cp = beta == 0.0f ? t : t + beta * *cp;
        }
}

/* ---- packing -------------------------------------------------------------- */

/* float to bfloat16, rounding to nearest even; NaN stays a (quiet) NaN. */
uint32_t poprt__sgemm_bf16_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (u >> 16) | 0x40u;
    return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

void poprt__sgemm_pack_bf16(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                            int width, float *dst)
{
    uint32_t *d = (uint32_t *)dst;
    const int64_t np = (kc + 1) / 2;
    for (int64_t p = 0; p < np; p++)
        for (int r = 0; r < width; r++) {
            uint32_t w = 0;
            if (r < n) {
                const float *s = src + r * rs + 2 * p * ps;
                w = poprt__sgemm_bf16_bits(s[0]) |
                    (2 * p + 1 < kc ? poprt__sgemm_bf16_bits(s[ps]) << 16 : 0u);
            }
            d[p * width + r] = w;
        }
}

/* dst[p*width + r] = src[r*rs + p*ps] for r < n, 0 for n <= r < width. */
static void pack_generic(int64_t kc, int n, const float *src, int64_t rs, int64_t ps, int width,
                         float *dst)
{
    if (rs == 1) {
        for (int64_t p = 0; p < kc; p++) {
            memcpy(dst + p * width, src + p * ps, (size_t)n * sizeof(float));
            for (int r = n; r < width; r++)
                dst[p * width + r] = 0.0f;
        }
        return;
    }
    /* transposing: walk blocks of 16 k so the written lines stay in L1 */
    for (int64_t p0 = 0; p0 < kc; p0 += 16) {
        const int64_t pe = kc - p0 < 16 ? kc : p0 + 16;
        for (int r = 0; r < width; r++) {
            const float *s = src + r * rs;
            for (int64_t p = p0; p < pe; p++)
                dst[p * width + r] = r < n ? s[p * ps] : 0.0f;
        }
    }
}

static void pack_panel(const poprt__sgemm_variant *v, int side, int64_t kc, int n,
                       const float *src, int64_t rs, int64_t ps, int width, float *dst)
{
    if (side == 'A' && v->pack_a)
        v->pack_a(kc, n, src, rs, ps, width, dst);
    else if (v->pack)
        v->pack(kc, n, src, rs, ps, width, dst);
    else
        pack_generic(kc, n, src, rs, ps, width, dst);
}

/* 32-bit words per packed row of kc k values: bfloat16 variants hold k in
 * pairs (a K block's kcb is even, so only the last block may end on half a
 * pair), padded to a multiple of kalign (a K block's kcb is a multiple of
 * 2 * kalign, so only the last block is padded). */
static int64_t kw(const poprt__sgemm_variant *v, int64_t kc)
{
    const int64_t w = v->kpack == 2 ? (kc + 1) / 2 : kc;
    return v->kalign > 1 ? (w + v->kalign - 1) / v->kalign * v->kalign : w;
}

/* K blocking, fixed by K and the variant alone (never by threads): nkb
 * blocks of kcb rows, the last one shorter. */
typedef struct kblocks {
    int64_t nkb, kcb;
} kblocks;

static kblocks k_blocks(const poprt__sgemm_variant *v, int64_t K)
{
    kblocks kb;
    kb.nkb = K <= 0 ? 1 : (K + v->kc - 1) / v->kc;
    kb.kcb = (K + kb.nkb - 1) / kb.nkb;
    const int64_t align = 2 * v->kalign > 8 ? 2 * v->kalign : 8;
    kb.kcb = (kb.kcb + align - 1) / align * align;
    if (kb.kcb < 1)
        kb.kcb = 1;
    kb.nkb = K <= 0 ? 1 : (K + kb.kcb - 1) / kb.kcb;
    return kb;
}

/* ---- packed operand header ------------------------------------------------ */

#define PACK_MAGIC 0x4b435053u /* "SPCK" */
#define PACK_HDR 64            /* data starts one cache line in */

typedef struct pack_hdr {
    uint32_t magic;
    int32_t variant; /* index in the kernel list */
    int32_t side;    /* 'A' or 'B' */
    int32_t width;   /* MR or NR */
    int64_t rows;    /* A: M; B: N (the packed direction) */
    int64_t K;
    int64_t kcb, nkb;
} pack_hdr;

static int variant_index(const poprt__sgemm_variant *v)
{
    for (int i = 0; i < poprt__sgemm_n_variants; i++)
        if (&poprt__sgemm_variants[i] == v || !strcmp(poprt__sgemm_variants[i].name, v->name))
            return i;
    return -1;
}

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* words of a packed operand: every K block holds all panels, zero-padded */
static size_t packed_floats(const poprt__sgemm_variant *v, int64_t n, int width, int64_t K)
{
    return (size_t)round_up(n > 0 ? n : 1, width) * (size_t)kw(v, K > 0 ? K : 1);
}

size_t poprt__sgemm_pack_a_size(const poprt__sgemm_variant *v, int64_t M, int64_t K)
{
    if (!v)
        v = poprt__sgemm_best();
    return PACK_HDR + packed_floats(v, M, v->mr, K) * sizeof(float);
}

size_t poprt__sgemm_pack_b_size(const poprt__sgemm_variant *v, int64_t K, int64_t N)
{
    if (!v)
        v = poprt__sgemm_best();
    return PACK_HDR + packed_floats(v, N, v->nr, K) * sizeof(float);
}

const poprt__sgemm_variant *poprt__sgemm_packed_variant(const void *p)
{
    const pack_hdr *h = p;
    if (!h || h->magic != PACK_MAGIC || h->variant < 0 || h->variant >= poprt__sgemm_n_variants)
        return NULL;
    return &poprt__sgemm_variants[h->variant];
}

/* The header as this library writes it for its variant: the panel width
 * and the K blocking follow from the variant and K alone. */
static int hdr_ok(const pack_hdr *h, const poprt__sgemm_variant *v)
{
    if ((h->side != 'A' && h->side != 'B') || h->rows < 0 || h->K < 0 ||
        h->width != (h->side == 'A' ? v->mr : v->nr))
        return 0;
    const kblocks kb = k_blocks(v, h->K);
    return h->kcb == kb.kcb && h->nkb == kb.nkb;
}

int poprt__sgemm_packed_current(const void *p)
{
    pack_hdr h;
    if (!p)
        return 0;
    memcpy(&h, p, sizeof h);
    const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(&h);
    return v && poprt__sgemm_usable(v) && hdr_ok(&h, v);
}

int poprt__sgemm_packed_fits(const void *p, size_t size)
{
    pack_hdr h;
    if (!p || size < PACK_HDR)
        return 0;
    memcpy(&h, p, sizeof h);
    const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(&h);
    if (!v || !hdr_ok(&h, v) || h.rows > (int64_t)1 << 40 || h.K > (int64_t)1 << 40)
        return 0;
    size_t floats;
    if (!poprt__mul_size((size_t)round_up(h.rows > 0 ? h.rows : 1, h.width),
                         (size_t)kw(v, h.K > 0 ? h.K : 1), &floats) ||
        floats > (SIZE_MAX - PACK_HDR) / sizeof(float))
        return 0;
    return size - PACK_HDR >= floats * sizeof(float);
}

/* An operand as the compute loop sees it: packed panels (pk), or B read in
 * place (raw, row stride ld) with only the last partial panel packed. */
typedef struct operand {
    const float *pk;   /* packed data: block b, panel i at pk + kw(b*kcb)*npad + i*width*kw(kc(b)) */
    int64_t npad;
    const float *raw;  /* B in place (!transB, not packed), else NULL */
    int64_t ld;
    const float *tail; /* raw: packed last panel, block b at tail + b*kcb*width */
} operand;

/* ---- parallel helpers ------------------------------------------------------ */

static void par_for(const poprt__par *par, int64_t n, int64_t grain,
                    void (*fn)(void *, int64_t, int64_t), void *ctx)
{
    if (n <= 0)
        return;
    if (par && par->run && n > grain)
        par->run(par->self, n, grain, fn, ctx);
    else
        fn(ctx, 0, n);
}

static void kctx_run(void *self, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t),
                     void *ctx)
{
    poprt__kctx_parallel_for(self, n, grain, fn, ctx);
}

poprt__par poprt__par_kctx(struct poprt__kctx *k)
{
    poprt__par p = {k ? kctx_run : NULL, k, k ? poprt__kctx_threads(k) : 1};
    return p;
}

/* ---- pack jobs ------------------------------------------------------------- */

typedef struct pack_job {
    const poprt__sgemm_variant *v;
    kblocks kb;
    int64_t n, K;      /* packed direction size, depth */
    int side;          /* 'A' or 'B' */
    int width;
    const float *src;
    int64_t rs, ps;    /* element (r, p) at src[r*rs + p*ps] */
    float *dst;
    int64_t npanels;
} pack_job;

static void pack_job_fn(void *ctx, int64_t u0, int64_t u1)
{
    const pack_job *j = ctx;
    const int64_t npad = round_up(j->n, j->width);
    for (int64_t u = u0; u < u1; u++) {
        const int64_t b = u / j->npanels, i = u % j->npanels;
        const int64_t k0 = b * j->kb.kcb;
        const int64_t kc = j->K - k0 < j->kb.kcb ? j->K - k0 : j->kb.kcb;
        const int64_t r0 = i * j->width;
        const int n = (int)(j->n - r0 < j->width ? j->n - r0 : j->width);
        pack_panel(j->v, j->side, kc, n, j->src + r0 * j->rs + k0 * j->ps, j->rs, j->ps, j->width,
                   j->dst + kw(j->v, k0) * npad + r0 * kw(j->v, kc));
    }
}

/* Runs a pack job over all its panels, split over threads when worth it. */
static void pack_run(pack_job *j, const poprt__par *par)
{
    const int64_t units = j->kb.nkb * j->npanels;
    /* a panel is width * kcb floats: ~64 KiB of copying per chunk at least */
    const int64_t grain = (16384 + j->width * j->kb.kcb - 1) / (j->width * j->kb.kcb);
    par_for(par, units, grain, pack_job_fn, j);
}

static void write_hdr(void *dst, const poprt__sgemm_variant *v, int side, int width, int64_t n,
                      int64_t K)
{
    pack_hdr h;
    memset(&h, 0, sizeof h);
    kblocks kb = k_blocks(v, K);
    h.magic = PACK_MAGIC;
    h.variant = variant_index(v);
    h.side = side;
    h.width = width;
    h.rows = n;
    h.K = K;
    h.kcb = kb.kcb;
    h.nkb = kb.nkb;
    memcpy(dst, &h, sizeof h);
}

void poprt__sgemm_pack_a(const poprt__sgemm_variant *v, const poprt__par *par, int transA,
                         int64_t M, int64_t K, const float *A, int64_t lda, void *dst)
{
    if (!v)
        v = poprt__sgemm_best();
    write_hdr(dst, v, 'A', v->mr, M, K);
    if (M > 0 && K > 0) {
        pack_job j = {v, k_blocks(v, K), M, K, 'A', v->mr, A, transA ? 1 : lda, transA ? lda : 1,
                      (float *)((char *)dst + PACK_HDR), (M + v->mr - 1) / v->mr};
        pack_run(&j, par);
    }
}

void poprt__sgemm_pack_b(const poprt__sgemm_variant *v, const poprt__par *par, int transB,
                         int64_t K, int64_t N, const float *B, int64_t ldb, void *dst)
{
    if (!v)
        v = poprt__sgemm_best();
    write_hdr(dst, v, 'B', v->nr, N, K);
    if (N > 0 && K > 0) {
        pack_job j = {v, k_blocks(v, K), N, K, 'B', v->nr, B, transB ? ldb : 1, transB ? 1 : ldb,
                      (float *)((char *)dst + PACK_HDR), (N + v->nr - 1) / v->nr};
        pack_run(&j, par);
    }
}

void poprt__sgemm_pack_b_begin(const poprt__sgemm_variant *v, int64_t K, int64_t N, void *dst,
                               poprt__sgemm_b_layout *l)
{
    write_hdr(dst, v, 'B', v->nr, N, K);
    const kblocks kb = k_blocks(v, K);
    l->data = (uint32_t *)((char *)dst + PACK_HDR);
    l->K = K;
    l->N = N;
    l->kcb = kb.kcb;
    l->nkb = kb.nkb;
    l->npanels = (N + v->nr - 1) / v->nr;
    l->nr = v->nr;
    l->kalign = v->kalign > 1 ? v->kalign : 1;
}

uint32_t *poprt__sgemm_b_panel(const poprt__sgemm_b_layout *l, int64_t b, int64_t i,
                               int64_t *pairs, int64_t *words)
{
    /* kcb is a multiple of 2 * kalign: the blocks before b take k0 / 2 rows */
    const int64_t k0 = b * l->kcb, kc = l->K - k0 < l->kcb ? l->K - k0 : l->kcb;
    *pairs = (kc + 1) / 2;
    *words = round_up(*pairs, l->kalign);
    return l->data + (k0 / 2) * l->npanels * l->nr + i * l->nr * *words;
}

/* ---- compute ---------------------------------------------------------------- */

typedef struct gemm_job {
    const poprt__sgemm_variant *v;
    kblocks kb;
    int64_t M, N, K;
    float alpha, beta;
    operand a, b;
    float *C;
    int64_t ldc;
    int64_t mpan, npan;     /* panels of A (MR rows) and B (NR columns) */
    int64_t tm, tn;         /* task grid: tm x tn blocks */
    int64_t mb, nb;         /* panels per task block */
    int64_t ncp;            /* B panels per L2 block (l2_panels), set by plan_tasks */
    int a_in_l2;            /* 2: all of packed A fits in L2, 1: one K block of it, 0: no */
    int b_prepacked;        /* B came packed (a weight): read it once, split columns only */
    /* A packed panel by panel just before use (a_fly: one MR x kcb buffer
     * per row block of tasks), from a_src[r*a_rs + p*a_ps] */
    float *a_fly;
    const float *a_src;
    int64_t a_rs, a_ps;
    const poprt__sgemm_epi *epi; /* per finished block, or NULL */
} gemm_job;

static const float *b_panel(const gemm_job *g, int64_t b, int64_t j, int64_t kc, int64_t *bs)
{
    const int nr = g->v->nr;
    const int64_t k0 = b * g->kb.kcb;
    if (g->b.raw) {
        if ((j + 1) * nr <= g->N) {
            *bs = g->b.ld;
            return g->b.raw + k0 * g->b.ld + j * nr;
        }
        *bs = nr;
        return g->b.tail + k0 * nr;
    }
    *bs = nr;
    return g->b.pk + kw(g->v, k0) * g->b.npad + j * nr * kw(g->v, kc);
}

#define PF_MIN_PANELS 4

/* B panels [j0, j1) over A panels [i0, i1) and K blocks [b0, b1). */
static void panel_column(const gemm_job *g, int64_t b0, int64_t b1, int64_t i0, int64_t i1,
                         int64_t j0, int64_t j1)
{
    const poprt__sgemm_variant *v = g->v;
    const int MR = v->mr, NR = v->nr;
    for (int64_t b = b0; b < b1; b++) {
        const int64_t k0 = b * g->kb.kcb;
        const int64_t kc = g->K - k0 < g->kb.kcb ? g->K - k0 : g->kb.kcb;
        const float beta = b == 0 ? g->beta : 1.0f;
        /* One B panel at a time (the orders that keep A in L2): the next
         * packed B block it reads (this panel's next K block, else the next
         * panel's first) on its way to L2 while the A panels run, a share
         * per A panel. Packed blocks are K block major, so the hardware's
         * stream prefetch does not find the next one, and a weight's B comes
         * from memory: BERT's GEMMs (128 x 768..3072 x 768..3072, B packed
         * and cold) ran 1.06-1.12x faster at 1 thread with it (Zen 3).
         * Not for fewer than PF_MIN_PANELS A panels: a block's 256 lines
         * in one or two bursts stalled the ukr calls after them (a GRU's
         * 4 x 768 x 256 steps spent 18% in this loop) and a B panel read
         * by one A panel gains little from being early. */
        const char *pf = NULL;
        int64_t pf_lines = 0;
        if (j1 == j0 + 1 && i1 - i0 >= PF_MIN_PANELS && !g->b.raw && g->b.pk &&
            (b + 1 < b1 || j1 < g->npan)) {
            const int64_t nb = b + 1 < b1 ? b + 1 : b0, nj = b + 1 < b1 ? j0 : j1;
            const int64_t nk = g->K - nb * g->kb.kcb < g->kb.kcb ? g->K - nb * g->kb.kcb
                                                                 : g->kb.kcb;
            int64_t nbs;
            pf = (const char *)b_panel(g, nb, nj, nk, &nbs);
            pf_lines = ((int64_t)NR * kw(v, nk) * (int64_t)sizeof(float) + 63) / 64;
        }
        const int64_t pf_step = i1 > i0 ? (pf_lines + (i1 - i0) - 1) / (i1 - i0) : 0;
        for (int64_t i = i0; i < i1; i++) {
            for (int64_t q = 0; pf && q < pf_step && pf_lines > 0; q++, pf_lines--, pf += 64)
                __builtin_prefetch(pf, 0, 2);
            const float *ap = g->a.pk + kw(v, k0) * g->a.npad + i * MR * kw(v, kc);
            const int mr = (int)(g->M - i * MR < MR ? g->M - i * MR : MR);
            float *crow = g->C + i * MR * g->ldc;
            for (int64_t j = j0; j < j1; j++) {
                int64_t bs;
                const float *bp = b_panel(g, b, j, kc, &bs);
                const int nr = (int)(g->N - j * NR < NR ? g->N - j * NR : NR);
                v->ukr(kc, mr, nr, ap, bp, bs, crow + j * NR, g->ldc, g->alpha, beta);
            }
        }
    }
}

/* Panels [j0, j1) of a one-row product on packed B (a classifier at batch
 * 1): up to four whole panels at once over every K block (ukr_row), the
 * partial last one alone; the same sums and C updates per element as
 * panel_column. */
static void row_block(const gemm_job *g, int64_t j0, int64_t j1)
{
    const poprt__sgemm_variant *v = g->v;
    const int64_t NR = v->nr;
    const int64_t jf = j1 * NR > g->N ? j1 - 1 : j1; /* whole panels end */
    for (int64_t j = j0; j < jf; j += 4) {
        const int np = (int)(jf - j < 4 ? jf - j : 4);
        for (int64_t b = 0; b < g->kb.nkb; b++) {
            const int64_t k0 = b * g->kb.kcb;
            const int64_t kc = g->K - k0 < g->kb.kcb ? g->K - k0 : g->kb.kcb;
            int64_t bs;
            const float *bp = b_panel(g, b, j, kc, &bs);
            v->ukr_row(kc, np, g->a.pk + kw(v, k0) * g->a.npad, bp, bs, NR * kw(v, kc),
                       g->C + j * NR, g->alpha, b == 0 ? g->beta : 1.0f);
        }
    }
    if (jf < j1)
        panel_column(g, 0, g->kb.nkb, 0, 1, jf, j1);
}

/* Output block [i0, i1) x [j0, j1) of panels. Every C element gets the same
 * K blocks in the same order whatever the loop order, so the orders below
 * only change which operand is reused from cache. */
static void gemm_block(const gemm_job *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
    if (g->M == 1 && g->v->ukr_row && g->a.pk && !g->b.raw) {
        row_block(g, j0, j1);
        return;
    }
    if (g->a_in_l2 == 2) {
        /* all of A stays in L2: one B panel at a time over every K block, so
         * each B panel is read from memory once and reused from L1/L2 by all
         * A panels right away, and its C columns stay in L1 between K blocks */
        for (int64_t j = j0; j < j1; j++)
            panel_column(g, 0, g->kb.nkb, i0, i1, j, j + 1);
        return;
    }
    if (g->a_in_l2 == 1) {
        /* one K block of A stays in L2: the same, K block by K block */
        for (int64_t b = 0; b < g->kb.nkb; b++)
            for (int64_t j = j0; j < j1; j++)
                panel_column(g, b, b + 1, i0, i1, j, j + 1);
        return;
    }
    /* an L2-sized block of B panels against one A panel at a time (in L1) */
    const int64_t ncp = g->ncp;
    if (g->a_fly) {
        /* one L2 block of B (j1 - j0 <= ncp): each A panel is packed into
         * this row block's buffer right before its only use, so packed A
         * never travels through L2 next to the B block */
        const poprt__sgemm_variant *v = g->v;
        const int MR = v->mr, NR = v->nr;
        float *ap = g->a_fly + (i0 / g->mb) * MR * kw(v, g->kb.kcb);
        for (int64_t b = 0; b < g->kb.nkb; b++) {
            const int64_t k0 = b * g->kb.kcb;
            const int64_t kc = g->K - k0 < g->kb.kcb ? g->K - k0 : g->kb.kcb;
            const float beta = b == 0 ? g->beta : 1.0f;
            for (int64_t i = i0; i < i1; i++) {
                const int mr = (int)(g->M - i * MR < MR ? g->M - i * MR : MR);
                pack_panel(v, 'A', kc, mr, g->a_src + i * MR * g->a_rs + k0 * g->a_ps, g->a_rs,
                           g->a_ps, MR, ap);
                float *crow = g->C + i * MR * g->ldc;
                for (int64_t j = j0; j < j1; j++) {
                    int64_t bs;
                    const float *bp = b_panel(g, b, j, kc, &bs);
                    const int nr = (int)(g->N - j * NR < NR ? g->N - j * NR : NR);
                    v->ukr(kc, mr, nr, ap, bp, bs, crow + j * NR, g->ldc, g->alpha, beta);
                }
            }
        }
        return;
    }
    for (int64_t b = 0; b < g->kb.nkb; b++)
        for (int64_t jc = j0; jc < j1; jc += ncp)
            for (int64_t i = i0; i < i1; i++)
                panel_column(g, b, b + 1, i, i + 1, jc, j1 - jc < ncp ? j1 : jc + ncp);
}

static void gemm_task_fn(void *ctx, int64_t t0, int64_t t1)
{
    const gemm_job *g = ctx;
    if (g->v->enter)
        g->v->enter();
    for (int64_t t = t0; t < t1; t++) {
        const int64_t bi = t / g->tn, bj = t % g->tn;
        const int64_t i0 = bi * g->mb, j0 = bj * g->nb;
        const int64_t i1 = i0 + g->mb < g->mpan ? i0 + g->mb : g->mpan;
        const int64_t j1 = j0 + g->nb < g->npan ? j0 + g->nb : g->npan;
        if (i0 < i1 && j0 < j1) {
            gemm_block(g, i0, i1, j0, j1);
            if (g->epi && g->epi->fn) {
                const int64_t m1 = i1 * g->v->mr < g->M ? i1 * g->v->mr : g->M;
                const int64_t n1 = j1 * g->v->nr < g->N ? j1 * g->v->nr : g->N;
                g->epi->fn(g->epi->ctx, i0 * g->v->mr, m1, j0 * g->v->nr, n1);
            }
        }
    }
}

/* Packed A of one K block up to this size stays in L2 next to a B panel
 * and C: half of this core's L2 (512 KiB at most: a B block and C need the
 * rest, and 512 KiB is what the 1-2 MiB L2s were tuned with). */
static int64_t a_l2_bytes(void)
{
    const int64_t half = poprt__cpu_l2_reuse_bytes();
    return half < 512 * 1024 ? half : 512 * 1024;
}

/* All of packed A stays in L2 (each B panel then runs over every K block,
 * and its C columns are written once) when it fits beside one B panel over
 * all of K and that panel's C columns, with 32 KiB to spare, up to 512 KiB;
 * never less than a_l2_bytes. On a 512 KiB L2 (Zen 3) half was the limit:
 * an A of 128 x 768 (405 KiB packed) went K block by K block, writing C
 * once per block: BERT's FFN up (128 x 3072 x 768, B packed and out of
 * cache) took 0.84 of the time this way, its fused QKV (128 x 2304 x 768)
 * 0.88, 128 x 768 x 768 0.98 (one process, the two orders alternately). */
static int64_t a_all_l2_bytes(const poprt__sgemm_variant *v, int64_t M, int64_t K)
{
    const int64_t panel = (int64_t)v->nr * (kw(v, K) + M) * (int64_t)sizeof(float);
    int64_t fit = poprt__cpu_features()->l2_bytes - panel - (32 << 10);
    if (fit > 512 * 1024)
        fit = 512 * 1024;
    return fit > a_l2_bytes() ? fit : a_l2_bytes();
}

/* B panels per L2 block: the variant's nc columns, fewer when a block of
 * kcb rows would take more than half of this core's L2 (the A panel and C
 * rows share it); at least one panel. */
static int64_t l2_panels(const poprt__sgemm_variant *v, int64_t kcb)
{
    int64_t ncp = v->nc / v->nr > 0 ? v->nc / v->nr : 1;
    const int64_t panel = (int64_t)v->nr * kw(v, kcb) * (int64_t)sizeof(float);
    const int64_t fit = panel > 0 ? poprt__cpu_l2_reuse_bytes() / panel : ncp;
    if (fit < ncp)
        ncp = fit > 0 ? fit : 1;
    return ncp;
}

/* Splits the output into a grid of blocks for the threads. The split only
 * decides who computes a tile, never how. */
static void plan_tasks(gemm_job *g, const poprt__par *par)
{
    g->tm = g->tn = 1;
    g->mb = g->mpan;
    g->nb = g->npan;
    g->ncp = l2_panels(g->v, g->kb.kcb);
    const int64_t a_block = g->a.npad * kw(g->v, g->kb.kcb) * (int64_t)sizeof(float);
    const int64_t a_l2 = a_l2_bytes();
    if (a_block * g->kb.nkb <= a_all_l2_bytes(g->v, g->M, g->K))
        g->a_in_l2 = 2;
    else
        g->a_in_l2 = a_block <= a_l2 ? 1 : 0;
    /* with a short K the tiles are bound by their C stores, which go best
     * row panel by row panel (whole C rows) */
    if (g->K < 64)
        g->a_in_l2 = 0;
    /* B read in place: a panel over all of K would walk K rows ldb apart (a
     * page each when rows are long); K block by K block, the next panels
     * reuse the same kc rows (and their TLB entries) */
    if (g->b.raw && g->a_in_l2 == 2)
        g->a_in_l2 = 1;
    const double flops = 2.0 * (double)g->M * (double)g->N * (double)g->K;
    /* a few rows against a large B (a classifier's [1, 1024] x [1024, 1000]:
     * 2 MFLOP, 4 MB) are bound by B's bytes, not the flops: split those too,
     * a block per ~256 KiB of B (mobilenet_v3_small's two classifier GEMMs
     * 0.23 ms of its 2.1 at 1 thread took as long at 2) */
    const double b_bytes = 4.0 * (double)g->K * (double)g->N;
    if (!par || !par->run || (flops < 4e6 && b_bytes < (1 << 20)))
        return;
    /* ~16 blocks (enough to balance a few threads), each at least ~1 MFLOP */
    int64_t want = (int64_t)(flops / 1e6);
    if (want < (int64_t)(b_bytes / (256 << 10)))
        want = (int64_t)(b_bytes / (256 << 10));
    if (want > 16)
        want = 16;
    if (g->a_in_l2) {
        /* columns only: every block reads its B columns once (B is often a
         * weight matrix that comes from memory) and shares the L2-resident
         * A; rows too would read B once per row block, even on one thread */
        const int64_t tn = want < g->npan ? want : g->npan;
        g->nb = (g->npan + tn - 1) / tn;
        g->tn = (g->npan + g->nb - 1) / g->nb;
        /* blocks the threads share evenly: the busiest thread's panels,
         * ceil(tn / threads) nb, as few as wider blocks allow (BERT's QKV
         * projection, 72 panels: 15 blocks of 5 went 8:7 on 2 threads; 12
         * of 6 go 6:6) */
        const int64_t th = par->threads;
        for (int64_t nb = g->nb + 1; th > 1 && nb <= 2 * g->nb && nb <= g->npan; nb++) {
            const int64_t t2 = (g->npan + nb - 1) / nb;
            if (t2 >= th && (t2 + th - 1) / th * nb < (g->tn + th - 1) / th * g->nb) {
                g->nb = nb;
                g->tn = t2;
            }
        }
        /* few column panels of a B packed by this call (activations, which
         * the row blocks then read again from cache): rows too, so that a
         * few threads get even shares (7 panels on 2 threads went 4:3) */
        if (!g->b_prepacked && 2 * g->tn < want) {
            int64_t tm = (want + g->tn - 1) / g->tn;
            if (tm > g->mpan)
                tm = g->mpan;
            g->mb = (g->mpan + tm - 1) / tm;
            g->tm = (g->mpan + g->mb - 1) / g->mb;
        }
        return;
    }
    const int64_t ncp = g->ncp;
    /* columns first in L2-block units (A panels are shared), then rows */
    int64_t tn = (g->npan + ncp - 1) / ncp;
    if (tn > want)
        tn = want;
    int64_t tm = (want + tn - 1) / tn;
    if (tm > g->mpan)
        tm = g->mpan;
    if (tn * tm < want && tn < g->npan) {
        tn = (want + tm - 1) / tm;
        if (tn > g->npan)
            tn = g->npan;
    }
    g->mb = (g->mpan + tm - 1) / tm;
    g->nb = (g->npan + tn - 1) / tn;
    g->tm = (g->mpan + g->mb - 1) / g->mb;
    g->tn = (g->npan + g->nb - 1) / g->nb;
}

/* B is read in place (only its partial last panel packed) when few A
 * panels would reuse a packed copy (packing B would cost about as much as
 * the product), or when its rows are short enough that an L2 block of B
 * (kcb rows of the columns l2_panels allows) is one contiguous region.
 * Otherwise a block's rows lie ldb apart and a long power-of-two row falls
 * into a few cache sets (2 KiB rows: 2 of L1's 64 sets, 512 KiB apart in
 * L2; a 512^3 GEMM 10% slower on a 512 KiB L2); row strides that are
 * multiples of 4 KiB are avoided for that reason too. The kernels prefetch
 * B rows ahead. */
static int use_raw_b(const poprt__sgemm_variant *v, int transB, int64_t M, int64_t ldb,
                     int64_t kcb)
{
    if (transB || v->kpack != 1) /* bfloat16 B is always converted */
        return 0;
    if (ldb <= l2_panels(v, kcb) * v->nr || M <= 2 * v->mr)
        return 1;
    return M <= 20 * v->mr && (ldb * (int64_t)sizeof(float)) % 4096 != 0;
}

static size_t ws_parts(const poprt__sgemm_variant *v, int need_a, int need_b, int transB,
                       int64_t M, int64_t N, int64_t K, size_t *a_bytes)
{
    size_t a = need_a ? packed_floats(v, M, v->mr, K) * sizeof(float) : 0;
    a = (a + 63) & ~(size_t)63;
    /* B in place needs K x NR for its last panel; sized for packing all of
     * it, which does not depend on ldb */
    (void)transB;
    size_t b = need_b ? packed_floats(v, N, v->nr, K) * sizeof(float) : 0;
    *a_bytes = a;
    return a + b + 64;
}

size_t poprt__sgemm_workspace(const poprt__sgemm_variant *v, int transA, int transB, int64_t M,
                              int64_t N, int64_t K)
{
    (void)transA;
    if (!v)
        v = poprt__sgemm_best();
    size_t a;
    return ws_parts(v, 1, 1, transB, M, N, K, &a);
}

size_t poprt__sgemm_packed_workspace(const void *Apacked, const void *Bpacked, int transA,
                                     int transB, int64_t M, int64_t N, int64_t K)
{
    (void)transA;
    const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(Apacked ? Apacked : Bpacked);
    if (!v)
        v = poprt__sgemm_best();
    size_t a;
    return ws_parts(v, !Apacked, !Bpacked, transB, M, N, K, &a);
}

/* C = beta * C for the degenerate cases (K == 0 or alpha == 0). */
static void scale_c(int64_t M, int64_t N, float beta, float *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++)
            C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
}

static void run(const poprt__sgemm_variant *v, kblocks kb, const poprt__par *par, void *ws,
                int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                const float *A, int64_t lda, const float *Apk, const float *B, int64_t ldb,
                const float *Bpk, float beta, float *C, int64_t ldc, const poprt__sgemm_epi *epi)
{
    gemm_job g;
    memset(&g, 0, sizeof g);
    g.epi = epi;
    g.v = v;
    g.kb = kb;
    g.M = M;
    g.N = N;
    g.K = K;
    g.alpha = alpha;
    g.beta = beta;
    g.C = C;
    g.ldc = ldc;
    g.mpan = (M + v->mr - 1) / v->mr;
    g.npan = (N + v->nr - 1) / v->nr;
    g.a.npad = g.mpan * v->mr;
    g.b.npad = g.npan * v->nr;
    size_t a_bytes;
    ws_parts(v, !Apk, !Bpk, transB, M, N, K, &a_bytes);
    char *w = ws; /* NULL when both operands come packed: nothing to pack */
    float *bdst = w ? (float *)(w + a_bytes) : NULL;
    if (!Bpk && use_raw_b(v, transB, M, ldb, kb.kcb)) {
        g.b.raw = B;
        g.b.ld = ldb;
    }
    g.b_prepacked = Bpk != NULL;
    plan_tasks(&g, par);
    /* operands not given pre-packed are packed first, in parallel, except A
     * when one L2 block of B covers N and A does not fit in L2: then each
     * row block of tasks packs its A panels as it goes (see gemm_block) */
    if (Apk) {
        g.a.pk = Apk;
    } else if (g.a_in_l2 == 0 && g.tn == 1 && g.npan <= g.ncp &&
               g.tm * v->mr * kw(v, g.kb.kcb) <= g.a.npad * kw(v, K)) {
        g.a_fly = (float *)w;
        g.a_src = A;
        g.a_rs = transA ? 1 : lda;
        g.a_ps = transA ? lda : 1;
    } else {
        pack_job ja = {v, g.kb, M, K, 'A', v->mr, A, transA ? 1 : lda, transA ? lda : 1,
                       (float *)w, g.mpan};
        pack_run(&ja, par);
        g.a.pk = (const float *)w;
    }
    if (Bpk) {
        g.b.pk = Bpk;
    } else if (g.b.raw) {
        g.b.tail = bdst;
        if (N % v->nr) {
            /* only the partial last panel is packed, kcb x NR per K block */
            const int64_t j = g.npan - 1;
            for (int64_t b = 0; b < g.kb.nkb; b++) {
                const int64_t k0 = b * g.kb.kcb;
                const int64_t kc = K - k0 < g.kb.kcb ? K - k0 : g.kb.kcb;
                pack_panel(v, 'B', kc, (int)(N - j * v->nr), B + k0 * ldb + j * v->nr, 1, ldb, v->nr,
                           bdst + k0 * v->nr);
            }
        }
    } else {
        pack_job jb = {v, g.kb, N, K, 'B', v->nr, B, transB ? ldb : 1, transB ? 1 : ldb, bdst,
                       g.npan};
        pack_run(&jb, par);
        g.b.pk = bdst;
    }
    par_for(par, g.tm * g.tn, 1, gemm_task_fn, &g);
}

void poprt__sgemm(const poprt__sgemm_variant *v, const poprt__par *par, void *ws, int transA,
                  int transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0 || alpha == 0.0f) {
        scale_c(M, N, beta, C, ldc);
        return;
    }
    if (!v)
        v = poprt__sgemm_best();
    if (!ws) {
        poprt__ref_sgemm(transA, transB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    run(v, k_blocks(v, K), par, ws, transA, transB, M, N, K, alpha, A, lda, NULL, B, ldb, NULL,
        beta, C, ldc, NULL);
}

int poprt__sgemm_packed(const poprt__par *par, void *ws, int transA, int transB, int64_t M,
                        int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                        const void *Apacked, const float *B, int64_t ldb, const void *Bpacked,
                        float beta, float *C, int64_t ldc)
{
    return poprt__sgemm_packed_epi(par, ws, transA, transB, M, N, K, alpha, A, lda, Apacked, B,
                                   ldb, Bpacked, beta, C, ldc, NULL);
}

int poprt__sgemm_packed_epi(const poprt__par *par, void *ws, int transA, int transB, int64_t M,
                            int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                            const void *Apacked, const float *B, int64_t ldb,
                            const void *Bpacked, float beta, float *C, int64_t ldc,
                            const poprt__sgemm_epi *epi)
{
    const pack_hdr *ha = Apacked, *hb = Bpacked;
    const poprt__sgemm_variant *v = NULL;
    if (ha) {
        v = poprt__sgemm_packed_variant(ha);
        if (!v || ha->side != 'A' || ha->rows != M || ha->K != K || !hdr_ok(ha, v))
            return -1;
    }
    if (hb) {
        const poprt__sgemm_variant *vb = poprt__sgemm_packed_variant(hb);
        if (!vb || (v && vb != v) || hb->side != 'B' || hb->rows != N || hb->K != K ||
            !hdr_ok(hb, vb))
            return -1;
        v = vb;
    }
    if (!v)
        v = poprt__sgemm_best();
    if (!poprt__sgemm_usable(v))
        return -1;
    if ((!ha || !hb) && !ws)
        return -1;
    if (M <= 0 || N <= 0)
        return 0;
    if (K <= 0 || alpha == 0.0f) {
        scale_c(M, N, beta, C, ldc);
        if (epi && epi->fn)
            epi->fn(epi->ctx, 0, M, 0, N);
        return 0;
    }
    /* the K blocking the operands were packed with */
    kblocks kb = k_blocks(v, K);
    if (ha) {
        kb.kcb = ha->kcb;
        kb.nkb = ha->nkb;
    }
    if (hb) {
        if (ha && (hb->kcb != ha->kcb || hb->nkb != ha->nkb))
            return -1;
        kb.kcb = hb->kcb;
        kb.nkb = hb->nkb;
    }
    run(v, kb, par, ws, transA, transB, M, N, K, alpha, A, lda,
        ha ? (const float *)((const char *)ha + PACK_HDR) : NULL, B, ldb,
        hb ? (const float *)((const char *)hb + PACK_HDR) : NULL, beta, C, ldc, epi);
    return 0;
}
