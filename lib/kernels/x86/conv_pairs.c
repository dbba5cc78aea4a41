/* bfloat16 convolution on channel pairs (session option matmul_precision =
 * bfloat16 on a CPU with a bfloat16 GEMM variant: AMX tiles or AVX512-BF16).
 *
 * The bfloat16 GEMM takes K in pairs: a word of its packed B holds rows 2p
 * and 2p + 1 of one column. The im2col rows are ordered here channel pair
 * first, row k = (cp * k_sz + tap) * 2 + e for channel 2cp + e and tap
 * (kd, kh, kw), so that the two values of a word are one tap of two
 * neighbouring channels. With X converted once per image to pair words
 * (xp[cp][pos] = bf16(x[2cp][pos]) | bf16(x[2cp + 1][pos]) << 16), a row of
 * a packed B panel is then 32 words of one input row, shifted by the tap:
 * the im2col and the bfloat16 packing become one pass of masked vector loads
 * that write the GEMM's packed B directly, with no float32 im2col matrix
 * in between (light_resnet50's 3x3 convs spent more time in that matrix and
 * its packing than on the AMX tiles). The weights are packed once as the
 * GEMM's A in the same order; an odd channel count gets a zero channel.
 *
 * The products are those of the plain bfloat16 path (same roundings of X
 * and W, float32 sums); only the order of the sum differs. Output columns
 * are cut into chunks whose packed B stays in L2, as the tiled path does;
 * the chunking depends on the shape only, so results do not depend on the
 * thread count. */
#include <string.h>
#include "kernels/ref/util.h"
#include "kernels/x86/conv_paths.h"

#define PAIRS_TILE_BYTES (512 * 1024) /* packed B of one chunk */
#define PAIRS_MAX_COLS 512

int poprt__x86_conv_pairs_fits(const poprt__geom3 *g, int64_t Cg, const poprt__sgemm_variant *v)
{
    int pointwise = g->k_sz == 1;
    for (int i = 0; i < 3; i++)
        pointwise &= g->s[i] == 1 && g->pb[i] == 0 && g->pe[i] == 0;
    return v && v->kpack == 2 && v->nr == 32 && !pointwise && Cg > 0 && g->k_sz > 0 &&
           g->in_sz > 0 && g->out_sz > 0 &&
           g->in[2] < ((int64_t)1 << 30) && g->s[2] < ((int64_t)1 << 20);
}

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static int64_t pairs_k(int64_t Cg, int64_t k_sz)
{
    return (Cg + 1) / 2 * 2 * k_sz;
}

poprt_status poprt__x86_conv_pairs_pack(const poprt__sgemm_variant *v, const float *w,
                                        int64_t G, int64_t Mg, int64_t Cg, int64_t k_sz,
                                        void **state, size_t *size)
{
    const int64_t Kp = pairs_k(Cg, k_sz), Cp = (Cg + 1) / 2;
    const size_t per = align64(poprt__sgemm_pack_a_size(v, Mg, Kp));
    size_t total, wn;
    if (!poprt__mul_size(per, (size_t)G, &total) || total > SIZE_MAX - CONV_PACK_HEADER ||
        !poprt__mul_size((size_t)Mg, (size_t)Kp * sizeof(float), &wn))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "Conv weights too large to pack");
    total += CONV_PACK_HEADER;
    unsigned char *blob = poprt__aligned_alloc(total);
    float *wp = poprt__aligned_alloc(wn ? wn : 1);
    if (!blob || !wp) {
        poprt__aligned_free(blob);
        poprt__aligned_free(wp);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    }
    memset(blob, 0, total);
    uint64_t h[8] = {CONV_PAIRS_MAGIC, (uint64_t)G, (uint64_t)Mg, per, (uint64_t)Cg,
                     (uint64_t)k_sz, 0, 0};
    memcpy(blob, h, sizeof h);
    for (int64_t gi = 0; gi < G; gi++) {
        for (int64_t m = 0; m < Mg; m++)
            for (int64_t cp = 0; cp < Cp; cp++)
                for (int64_t t = 0; t < k_sz; t++)
                    for (int64_t e = 0; e < 2; e++) {
                        const int64_t c = 2 * cp + e;
                        wp[m * Kp + (cp * k_sz + t) * 2 + e] =
                            c < Cg ? w[((gi * Mg + m) * Cg + c) * k_sz + t] : 0.0f;
                    }
        poprt__sgemm_pack_a(v, NULL, 0, Mg, Kp, wp, Kp,
                            blob + CONV_PACK_HEADER + (size_t)gi * per);
    }
    poprt__aligned_free(wp);
    *state = blob;
    *size = total;
    return POPRT_OK;
}

const unsigned char *poprt__x86_conv_pairs_state(const poprt__kctx *k, const poprt__conv_plan *p,
                                                 uint64_t *per)
{
    uint64_t h[6];
    if (!k->state || k->state_size < CONV_PACK_HEADER)
        return NULL;
    memcpy(h, k->state, sizeof h);
    if (h[0] != CONV_PAIRS_MAGIC || h[1] != (uint64_t)p->G || h[2] != (uint64_t)p->Mg ||
        h[4] != (uint64_t)p->Cg || h[5] != (uint64_t)p->g.k_sz || h[3] == 0 ||
        (uint64_t)p->G > (k->state_size - CONV_PACK_HEADER) / h[3])
        return NULL;
    const unsigned char *a = (const unsigned char *)k->state + CONV_PACK_HEADER;
    const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(a);
    if (!v || !poprt__sgemm_usable(v) || !poprt__x86_conv_pairs_fits(&p->g, p->Cg, v))
        return NULL;
    for (int64_t gi = 0; gi < p->G; gi++)
        if (!poprt__sgemm_packed_fits(a + gi * h[3], h[3]))
            return NULL;
    *per = h[3];
    return a;
}

typedef struct pairs_job {
    const poprt__conv_plan *p;
    const float *x, *b;
    float *y;
    const unsigned char *apack;
    uint64_t per;
    const poprt__sgemm_variant *v;
    int64_t Cp, Kp, cw, nchunks, items, lanes, n;
    int64_t next; /* the next item a lane takes (atomic) */
    const int64_t *taps;
    uint32_t *xp;
    unsigned char *scratch; /* per lane: packed B, runs, panel_runs */
    size_t lane_bytes, b_bytes, runs_bytes;
} pairs_job;

/* The runs of columns [c0, c1) of the output, panel by panel. */
static void make_runs(const poprt__geom3 *g, int64_t c0, int64_t c1, poprt__pairs_run *runs,
                      int64_t *panel_runs)
{
    const int64_t ow_n = g->out[2];
    int64_t nr = 0, i = 0;
    for (int64_t q0 = c0; q0 < c1; q0 += 32, i++) {
        panel_runs[i] = nr;
        const int64_t q1 = c1 - q0 < 32 ? c1 : q0 + 32;
        for (int64_t q = q0; q < q1;) {
            const int64_t ow = q % ow_n, orow = q / ow_n;
            const int64_t n = ow_n - ow < q1 - q ? ow_n - ow : q1 - q;
            const int64_t oh = orow % g->out[1], od = orow / g->out[1];
            poprt__pairs_run r = {q - q0, n, od * g->s[0] - g->pb[0], oh * g->s[1] - g->pb[1],
                                  ow * g->s[2] - g->pb[2]};
            runs[nr++] = r;
            q += n;
        }
    }
    panel_runs[i] = nr;
}

static void pack_panels_fn(void *ctx, int64_t i0, int64_t i1)
{
    poprt__conv_pairs_pack_b_avx512(ctx, i0, i1);
}

/* One chunk: B packed into the lane's memory, then the GEMM with its
 * epilogue; k non-NULL: both over the kernel's threads. */
static void pairs_item(const pairs_job *t, int64_t it, unsigned char *mem, poprt__kctx *k)
{
    const poprt__conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    const int64_t ch = it % t->nchunks, gi = it / t->nchunks;
    const int64_t c0 = ch * t->cw, cols = g->out_sz - c0 < t->cw ? g->out_sz - c0 : t->cw;
    poprt__pairs_run *runs = (poprt__pairs_run *)(mem + t->b_bytes);
    int64_t *panel_runs = (int64_t *)(mem + t->b_bytes + t->runs_bytes);
    make_runs(g, c0, c0 + cols, runs, panel_runs);
    poprt__sgemm_b_layout l;
    poprt__sgemm_pack_b_begin(t->v, t->Kp, cols, mem, &l);
    const poprt__pairs_b pb = {g, t->xp + gi * t->Cp * g->in_sz, t->taps, runs, panel_runs, &l};
    if (k)
        poprt__kctx_parallel_for(k, l.npanels, 1, pack_panels_fn, (void *)&pb);
    else
        poprt__conv_pairs_pack_b_avx512(&pb, 0, l.npanels);
    float *yc = t->y + (t->n * p->M + gi * p->Mg) * g->out_sz + c0;
    poprt__conv_epi_task e = {p, t->y, yc - t->y, t->b ? t->b + gi * p->Mg : NULL};
    const poprt__sgemm_epi epi = {poprt__x86_conv_epi_block, &e};
    const int epilogue = t->b || poprt__x86_conv_has_epilogue(p);
    poprt__par par = poprt__par_kctx(k);
    /* both operands packed for one usable variant (checked): cannot fail */
    (void)poprt__sgemm_packed_epi(k ? &par : NULL, NULL, 0, 0, p->Mg, cols, t->Kp, 1.0f, NULL, 0,
                                  t->apack + (size_t)gi * t->per, NULL, 0, mem, 0.0f, yc,
                                  g->out_sz, epilogue ? &epi : NULL);
}

/* Lane l takes the next item not taken yet until none is left: a lane per
 * thread and no fixed share, so a thread that finishes early (or runs
 * alone) takes more. Which lane computes an item does not change its bits. */
static void pairs_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    pairs_job *t = ctx;
    for (int64_t l = l0; l < l1; l++)
        for (int64_t it; (it = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED)) < t->items;)
            pairs_item(t, it, t->scratch + (size_t)l * t->lane_bytes, NULL);
}

static void convert_fn(void *ctx, int64_t u0, int64_t u1)
{
    const pairs_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const int64_t in_sz = p->g.in_sz;
    /* unit u: channel pair u % Cp of group u / Cp */
    for (int64_t u = u0; u < u1;) {
        const int64_t gi = u / t->Cp, cp0 = u % t->Cp;
        const int64_t cp1 = t->Cp - cp0 < u1 - u ? t->Cp : cp0 + (u1 - u);
        poprt__conv_pairs_convert_avx512(t->x + (t->n * p->C + gi * p->Cg) * in_sz, p->Cg, in_sz,
                                         cp0, cp1, t->xp + gi * t->Cp * in_sz);
        u += cp1 - cp0;
    }
}

poprt_status poprt__x86_conv_pairs(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                   const float *b, const unsigned char *apack, uint64_t per,
                                   float *y)
{
    const poprt__geom3 *g = &p->g;
    pairs_job t;
    memset(&t, 0, sizeof t);
    t.p = p;
    t.x = x;
    t.b = b;
    t.y = y;
    t.apack = apack;
    t.per = per;
    t.v = poprt__sgemm_packed_variant(apack);
    t.Cp = (p->Cg + 1) / 2;
    t.Kp = pairs_k(p->Cg, g->k_sz);
    /* chunk width: whole panels, the chunk's packed B within PAIRS_TILE_BYTES */
    int64_t cw = PAIRS_TILE_BYTES / (2 * t.Kp) / 32 * 32;
    cw = cw < 32 ? 32 : cw > PAIRS_MAX_COLS ? PAIRS_MAX_COLS : cw;
    /* enough items for the lanes: narrower chunks, down to one panel */
    if (p->G * poprt__ceil_div(g->out_sz, cw) < 2 * CONV_LANES) {
        const int64_t per_g = poprt__ceil_div(2 * CONV_LANES, p->G);
        int64_t want = poprt__ceil_div(poprt__ceil_div(g->out_sz, per_g), 32) * 32;
        if (want < cw)
            cw = want;
    }
    if (cw > g->out_sz)
        cw = g->out_sz;
    t.cw = cw;
    t.nchunks = poprt__ceil_div(g->out_sz, cw);
    t.items = p->G * t.nchunks;
    const int64_t threads = poprt__kctx_threads(k);
    /* a chunk per thread at least: each thread packs and multiplies its own
     * chunks, no barrier between; fewer chunks run one at a time with the
     * threads inside */
    t.lanes = t.items < threads ? 1 : threads;
    const int64_t panels = poprt__ceil_div(cw, 32);
    t.b_bytes = align64(poprt__sgemm_pack_b_size(t.v, t.Kp, cw));
    t.runs_bytes = align64((size_t)(panels * 32) * sizeof(poprt__pairs_run));
    t.lane_bytes = t.b_bytes + t.runs_bytes + align64((size_t)(panels + 1) * sizeof(int64_t));
    const size_t taps_bytes = (size_t)g->k_sz * 3 * sizeof(int64_t);
    size_t xp_bytes, lanes_bytes;
    if (!poprt__mul_size((size_t)(p->G * t.Cp), (size_t)g->in_sz * sizeof(uint32_t), &xp_bytes) ||
        !poprt__mul_size(t.lane_bytes, (size_t)t.lanes, &lanes_bytes) ||
        xp_bytes > SIZE_MAX / 2 - lanes_bytes - taps_bytes - 64)
        return poprt__ref_oom(k);
    unsigned char *mem = poprt__kctx_scratch(k, lanes_bytes + align64(xp_bytes) + taps_bytes);
    if (!mem)
        return poprt__ref_oom(k);
    t.scratch = mem;
    t.xp = (uint32_t *)(mem + lanes_bytes);
    int64_t *taps = (int64_t *)(mem + lanes_bytes + align64(xp_bytes));
    for (int64_t tap = 0; tap < g->k_sz; tap++) {
        const int64_t kw = tap % g->k[2], kh = (tap / g->k[2]) % g->k[1];
        const int64_t kd = tap / (g->k[1] * g->k[2]);
        taps[3 * tap] = kd * g->d[0];
        taps[3 * tap + 1] = kh * g->d[1];
        taps[3 * tap + 2] = kw * g->d[2];
    }
    t.taps = taps;
    for (t.n = 0; t.n < p->N; t.n++) {
        poprt__kctx_parallel_for(k, p->G * t.Cp, 1 + 65536 / (g->in_sz + 1), convert_fn, &t);
        t.next = 0;
        if (t.lanes > 1)
            poprt__kctx_parallel_for(k, t.lanes, 1, pairs_lane_fn, &t);
        else
            for (int64_t it = 0; it < t.items; it++)
                pairs_item(&t, it, t.scratch, k);
    }
    return POPRT_OK;
}
