/* Two conv paths on pre-packed GEMM operands (see conv_paths.h): the tiled
 * implicit GEMM and, for small images, the GEMM transposed. */
#include <string.h>
#include "kernels/ref/util.h"
#include "kernels/x86/conv_paths.h"
#include "kernels/x86/conv_blocked.h"

/* ---- tiled implicit GEMM ----------------------------------------------------
 * The output positions of each (image, group) are cut into column chunks.
 * A work item im2cols one chunk (Kc x cw, sized to stay in L2), multiplies
 * it by the pre-packed weights on one thread and adds the bias while the
 * output block is still in cache. Items go round-robin to a fixed number of lanes, each with its
 * own scratch, and the pool balances lanes over threads. The chunking
 * depends on the shape only, so results do not depend on the thread count. */

#define CONV_TILE_BYTES (768 * 1024) /* im2col block of one chunk */
#define CONV_TILE_MAX_COLS 512       /* B stays unpacked up to the GEMM's NC */
#define CONV_MIN_ITEMS 4 /* fewer: one multi-threaded GEMM splits better */

typedef struct conv_tile_job {
    const poprt__conv_plan *p;
    const float *x, *b;
    const unsigned char *apack;
    uint64_t per_group;
    float *y;
    int64_t cw, nchunks, items, lanes;
    unsigned char *scratch;
    size_t lane_bytes, col_bytes;
} conv_tile_job;

/* im2col of output columns [c0, c1) of one group: rows (c, kd, kh, kw) of
 * c1 - c0 values each, walking the chunk one output row segment at a time. */
static void im2col_cols_f32(const float *x, const poprt__geom3 *g, int64_t rows, int64_t c0,
                            int64_t c1, float *col)
{
    const int64_t k12 = g->k[1] * g->k[2], ow_n = g->out[2], cw = c1 - c0, s2 = g->s[2];
    for (int64_t r = 0; r < rows; r++) {
        const int64_t c = r / g->k_sz, rem = r % g->k_sz;
        const int64_t kd = rem / k12, kh = (rem / g->k[2]) % g->k[1], kw = rem % g->k[2];
        const float *xp = x + c * g->in_sz;
        float *dst = col + r * cw;
        int64_t d0, d1, h0, h1, w0, w1;
        poprt__valid_range(g->out[0], g->s[0], g->pb[0], kd * g->d[0], g->in[0], &d0, &d1);
        poprt__valid_range(g->out[1], g->s[1], g->pb[1], kh * g->d[1], g->in[1], &h0, &h1);
        poprt__valid_range(g->out[2], g->s[2], g->pb[2], kw * g->d[2], g->in[2], &w0, &w1);
        const int64_t woff = kw * g->d[2] - g->pb[2];
        int64_t pos = c0, ow = c0 % ow_n, orow = c0 / ow_n;
        while (pos < c1) {
            const int64_t n = ow_n - ow < c1 - pos ? ow_n - ow : c1 - pos;
            float *o = dst + (pos - c0) - ow; /* o[ow'] for ow' in [ow, ow + n) */
            const int64_t oh = orow % g->out[1], od = orow / g->out[1];
            if (od < d0 || od >= d1 || oh < h0 || oh >= h1) {
                memset(o + ow, 0, sizeof(float) * (size_t)n);
            } else {
                const int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
                const int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
                const float *src = xp + (id * g->in[1] + ih) * g->in[2] + woff;
                const int64_t end = ow + n;
                const int64_t a = w0 < ow ? ow : w0 > end ? end : w0;
                const int64_t e = w1 < a ? a : w1 > end ? end : w1;
                for (int64_t j = ow; j < a; j++)
                    o[j] = 0;
                if (s2 == 1) {
                    if (e > a)
                        memcpy(o + a, src + a, sizeof(float) * (size_t)(e - a));
                } else {
                    for (int64_t j = a; j < e; j++)
                        o[j] = src[j * s2];
                }
                for (int64_t j = e; j < end; j++)
                    o[j] = 0;
            }
            pos += n;
            ow = 0;
            orow++;
        }
    }
}

static void conv_tile_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const conv_tile_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    for (int64_t l = l0; l < l1; l++) {
        unsigned char *mem = t->scratch + (size_t)l * t->lane_bytes;
        float *col = (float *)mem;
        void *ws = mem + t->col_bytes;
        for (int64_t it = l; it < t->items; it += t->lanes) {
            const int64_t ch = it % t->nchunks, ng = it / t->nchunks;
            const int64_t n = ng / p->G, gi = ng % p->G;
            const int64_t c0 = ch * t->cw;
            const int64_t cols = g->out_sz - c0 < t->cw ? g->out_sz - c0 : t->cw;
            const float *xg = t->x + (n * p->C + gi * p->Cg) * g->in_sz;
            float *yg = t->y + (n * p->M + gi * p->Mg) * g->out_sz + c0;
            im2col_cols_f32(xg, g, p->Kc, c0, c0 + cols, col);
            /* variant and shape were checked by poprt__x86_conv_tiled: cannot fail */
            (void)poprt__sgemm_packed(NULL, ws, 0, 0, p->Mg, cols, p->Kc, 1.0f, NULL, 0,
                                      t->apack + (uint64_t)gi * t->per_group, col, cols, NULL,
                                      0.0f, yg, g->out_sz);
            poprt__conv_epi_task e = {p, t->y, yg - t->y, t->b ? t->b + gi * p->Mg : NULL};
            poprt__x86_conv_epi_block(&e, 0, p->Mg, 0, cols);
        }
    }
}

/* Runs the conv tiled when the weights are pre-packed for this CPU and the
 * shape gives enough work items; *done 0: the caller takes the plain path. */
poprt_status poprt__x86_conv_tiled(poprt__kctx *k, const poprt__conv_plan *p, int pointwise,
                                   const float *x, const float *b, const unsigned char *apack,
                                   uint64_t per_group, float *y, int *done)
{
    const poprt__geom3 *g = &p->g;
    *done = 0;
    const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(apack);
    /* 1x1 stride-1: no im2col to save; one multi-threaded GEMM over the
     * whole image shares the packed weights better, unless the input rows
     * are a multiple of 4 KiB apart (the GEMM reads them in place, all in
     * the same cache sets) and few (the copy is cheap): then chunks are
     * copied like im2col blocks (measured: C16 -> M32 at 320x320 1.3x) */
    if ((pointwise && ((g->out_sz * (int64_t)sizeof(float)) % 4096 != 0 || p->Kc > p->Mg)) ||
        !v || !poprt__sgemm_usable(v))
        return POPRT_OK;
    const int64_t nr = v->nr, ng = p->N * p->G;
    int64_t cw = CONV_TILE_BYTES / ((int64_t)sizeof(float) * p->Kc) / nr * nr;
    if (cw > CONV_TILE_MAX_COLS / nr * nr)
        cw = CONV_TILE_MAX_COLS / nr * nr;
    if (cw < 2 * nr)
        cw = 2 * nr;
    /* enough items for a few threads: narrower chunks, down to two panels */
    if (ng * poprt__ceil_div(g->out_sz, cw) < 2 * CONV_LANES) {
        const int64_t per = poprt__ceil_div(2 * CONV_LANES, ng);
        int64_t want = poprt__ceil_div(poprt__ceil_div(g->out_sz, per), nr) * nr;
        if (want < 2 * nr)
            want = 2 * nr;
        if (want < cw)
            cw = want;
    }
    if (cw > g->out_sz)
        cw = g->out_sz;
    const int64_t nchunks = poprt__ceil_div(g->out_sz, cw), items = ng * nchunks;
    if (items < CONV_MIN_ITEMS)
        return POPRT_OK;
    conv_tile_job t = {p, x, b, apack, per_group, y, cw, nchunks, items, 0, NULL, 0, 0};
    t.lanes = items < CONV_LANES ? items : CONV_LANES;
    t.col_bytes = ((size_t)(p->Kc * cw) * sizeof(float) + 63) & ~(size_t)63;
    size_t ws = poprt__sgemm_packed_workspace(apack, NULL, 0, 0, p->Mg, cw, p->Kc);
    t.lane_bytes = (t.col_bytes + ws + 63) & ~(size_t)63;
    size_t all;
    if (!poprt__mul_size(t.lane_bytes, (size_t)t.lanes, &all) ||
        !(t.scratch = poprt__kctx_scratch(k, all)))
        return poprt__ref_oom(k);
    poprt__kctx_parallel_for(k, t.lanes, 1, conv_tile_lane_fn, &t);
    *done = 1;
    return POPRT_OK;
}

/* ---- small images: the GEMM transposed ---------------------------------------
 * With few output positions (7x7, 13x13, 14x14) and many channels, the
 * weights are the big operand and each weight would be used by only a few
 * NR-column tiles. Computing Y^T = X^T W^T instead makes the positions the
 * rows (MR-row panels of the im2col matrix, or of the input itself for
 * 1x1) and the weights the pre-packed B operand, each value of which then
 * meets every position from cache; Y^T is transposed into Y with the bias
 * and the epilogue (measured: 512x49x4608 139 -> 173, 2048x49x512 150 ->
 * 189, 256x196x2304 151 -> 170 GFLOP/s). */

#define CONV_TRANS_MAX_POSITIONS 256
#define CONV_TRANS_BLOCK 16 /* output channels transposed together */

/* Whether the transposed GEMM pays off (2-D or less, one group, 4 to
 * CONV_TRANS_MAX_POSITIONS outputs: an STFT-like conv with 8 positions fills
 * 8 of 32 columns the other way round, 8 of 14 rows this way; channels
 * enough to fill the tiles: with
 * fewer than 4 column panels of output channels the threads have too little
 * to share; measured on oww_embedding's 72- and 96-channel layers). */
int poprt__x86_conv_trans_fits(int64_t G, int64_t M, int64_t Kc, int64_t out_sz)
{
    return G == 1 && out_sz >= 4 && out_sz <= CONV_TRANS_MAX_POSITIONS && M >= 128 && Kc >= 32;
}

typedef struct conv_trans_job {
    const poprt__conv_plan *p;
    const float *ct, *b; /* Y^T of one image (out_sz x M), bias */
    float *y;            /* Y of that image */
    float *yall;         /* Y (for the epilogue's offsets) */
    const poprt__convb_variant *cv; /* transpose with its transpose_bias, or NULL */
} conv_trans_job;

/* The GEMM's epilogue (poprt__sgemm_epi): positions [q0, q1) x channels
 * [m0, m1) of Y^T, just computed, go to Y with the bias, 16 channels at a
 * time, then get the conv's epilogue, on the thread that computed them. */
static void conv_trans_epi(void *ctx, int64_t q0, int64_t q1, int64_t m0, int64_t m1)
{
    const conv_trans_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const int64_t Q = p->g.out_sz, M = p->M;
    const int relu = t->cv && poprt__x86_conv_lone_relu(p); /* applied in the transposition */
    for (int64_t mb = m0; mb < m1; mb += CONV_TRANS_BLOCK) {
        const int64_t nm = m1 - mb < CONV_TRANS_BLOCK ? m1 - mb : CONV_TRANS_BLOCK;
        if (t->cv)
            t->cv->transpose_bias(t->ct + q0 * M + mb, M, q1 - q0, nm, t->b ? t->b + mb : NULL,
                                  relu, t->y + mb * Q + q0, Q);
        else {
            float bias[CONV_TRANS_BLOCK];
            for (int64_t i = 0; i < nm; i++)
                bias[i] = t->b ? t->b[mb + i] : 0.0f;
            for (int64_t q = q0; q < q1; q++) {
                const float *restrict src = t->ct + q * M + mb;
                for (int64_t i = 0; i < nm; i++)
                    t->y[(mb + i) * Q + q] = src[i] + bias[i];
            }
        }
        /* whole rows: the nm rows are one span (one call instead of one
         * per channel of a few dozen positions) */
        const int whole = q0 == 0 && q1 == Q;
        for (int64_t i = 0; poprt__x86_conv_has_epilogue(p) && !relu && i < (whole ? 1 : nm); i++)
            poprt__x86_conv_epilogue(p, t->yall, t->y + (mb + i) * Q + q0 - t->yall,
                                     whole ? nm * Q : q1 - q0);
    }
}

poprt_status poprt__x86_conv_trans(poprt__kctx *k, const poprt__conv_plan *p, int pointwise,
                                   const float *x, const float *b, const void *bpack, float *y)
{
    const poprt__geom3 *g = &p->g;
    const int64_t Q = g->out_sz;
    float *col = NULL, *ct;
    void *ws;
    size_t n;
    if (!pointwise && (!poprt__mul_size((size_t)p->Kc, (size_t)Q * sizeof(float), &n) ||
                       !(col = poprt__kctx_scratch(k, n))))
        return poprt__ref_oom(k);
    if (!poprt__mul_size((size_t)p->M, (size_t)Q * sizeof(float), &n) ||
        !(ct = poprt__kctx_scratch(k, n)) ||
        !(ws = poprt__kctx_scratch(
              k, poprt__sgemm_packed_workspace(NULL, bpack, 1, 0, Q, p->M, p->Kc) + 64)))
        return poprt__ref_oom(k);
    poprt__par par = poprt__par_kctx(k);
    for (int64_t in = 0; in < p->N; in++) {
        const float *xn = x + in * p->C * g->in_sz;
        const float *a = xn;
        if (!pointwise) {
            poprt__im2col_f32_mt(k, xn, g, p->Kc, col);
            a = col;
        }
        /* cannot fail: the packed variant was checked by the caller */
        conv_trans_job t = {p, ct, b, y + in * p->M * Q, y, poprt__convb_best()};
        const poprt__sgemm_epi epi = {conv_trans_epi, &t};
        (void)poprt__sgemm_packed_epi(&par, ws, 1, 0, Q, p->M, p->Kc, 1.0f, a, Q, NULL, NULL, 0,
                                      bpack, 0.0f, ct, p->M, &epi);
    }
    return POPRT_OK;
}
