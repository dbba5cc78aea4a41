/* Two conv paths on a zero-padded copy of the input (see conv_paths.h): the
 * direct convolution on the GEMM micro-kernel and the depthwise planes. */
#include <math.h>
#include <string.h>
#include "kernels/ref/util.h"
#include "kernels/x86/conv_paths.h"
#include "kernels/x86/conv_dw.h"

/* ---- direct conv on the GEMM micro-kernel ----------------------------------
 * For stride-1 2-D convs no im2col is needed: on a zero-padded copy of the
 * input with row pitch Wp, output position q = oh*Wp + ow reads tap (kh, kw)
 * of channel c at xpad[c][q + kh*dh*Wp + kw*dw], so each tap's B operand is
 * the padded input itself, shifted, with one row stride (the plane size).
 * The micro-kernel then runs once per tap over the channels, accumulating
 * in a register tile; the (kw-1)*dw extra columns per row are computed and
 * dropped when the block is copied out with the bias. Stride 2 becomes
 * stride 1 by splitting each padded plane into its 4 phases
 * (rows/columns even/odd): tap (kh, kw) reads phase (kh%2, kw%2) shifted by
 * (kh/2, kw/2). Weights are packed per MR-row panel and tap:
 * apanel(i, t)[c*MR + r] = W[i*MR + r][c][t]; for a variant with a tap
 * micro-kernel, channel-major instead: apanel(i)[(c*taps + t)*MR + r], so
 * that the kernel walks the taps of one channel (a few neighbouring rows of
 * one plane, in L1) before the next channel. */

#define CONV_DIRECT_B_BYTES (512 * 1024)     /* B block of one chunk */

/* Whether the direct path pays off: at most 2-D, stride 1 or 2 (undilated),
 * not 1x1 (a plain GEMM; with stride 2 only a quarter of the phases would be
 * read), enough channels for the micro-kernel's K loop (per tap when v runs
 * one call per tap; over all taps when it has a tap micro-kernel, which
 * keeps the sum in registers: then a 3-channel stem conv needs no im2col),
 * little width wasted on the grid. */
/* Whether v's tap micro-kernel runs this conv (and so the weights are
 * packed channel-major for it). */
int poprt__x86_conv_direct_taps(const poprt__sgemm_variant *v, int64_t k_sz)
{
    return v->ukr_taps && k_sz <= CONV_DIRECT_MAX_TAPS;
}

int poprt__x86_conv_direct_fits(const poprt__geom3 *g, int64_t Cg, const poprt__sgemm_variant *v)
{
    const int taps = poprt__x86_conv_direct_taps(v, g->k_sz);
    if (g->in[0] != 1 || g->k[0] != 1 || g->out[0] != 1 || g->s[1] != g->s[2] ||
        (taps ? Cg * g->k_sz < 16 : Cg < 8) || g->out_sz < 32 || g->k_sz < 2)
        return 0;
    if (g->s[1] == 1)
        return g->out[2] >= 3 * g->d[2] * (g->k[2] - 1);
    return g->s[1] == 2 && g->d[1] == 1 && g->d[2] == 1 && g->out[2] >= 3 * ((g->k[2] - 1) / 2);
}

typedef struct conv_direct_job {
    const poprt__conv_plan *p;
    const float *x, *b;
    const float *apack; /* group 0 */
    int64_t a_group;    /* floats per group */
    const poprt__sgemm_variant *v;
    float *xpad, *tmp;
    float *y;
    int64_t Hp, Wp, plane, Q, cw, cwp, nchunks, items, lanes, tmp_floats;
    int64_t pblk, nmb; /* MR-row panels per M block, M blocks */
    int64_t ph;        /* 2: planes split into 4 phases of Hp x Wp (stride 2) */
    int64_t toff[CONV_DIRECT_MAX_TAPS]; /* B offset of each tap, for v->ukr_taps */
} conv_direct_job;

/* Input offset of tap (kh, kw) from an output position on the grid. */
static int64_t conv_tap_off(const conv_direct_job *t, int64_t kh, int64_t kw)
{
    const poprt__geom3 *g = &t->p->g;
    if (t->ph != 2)
        return kh * g->d[1] * t->Wp + kw * g->d[2];
    return ((kh % 2) * 2 + kw % 2) * t->Hp * t->Wp + (kh / 2) * t->Wp + kw / 2;
}

/* Stride 2: phase (a, b) of plane q holds padded rows 2i+a, columns 2j+b. */
static void conv_phase_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const conv_direct_job *t = ctx;
    const poprt__geom3 *g = &t->p->g;
    const int64_t H = g->in[1], W = g->in[2], pt = g->pb[1], pl = g->pb[2];
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        for (int64_t a = 0; a < 2; a++)
            for (int64_t b = 0; b < 2; b++) {
                float *dst = t->xpad + q * t->plane + (a * 2 + b) * t->Hp * t->Wp;
                /* columns j with 0 <= 2j + b - pl < W */
                int64_t j0 = (pl - b + 1) / 2, j1 = (W - 1 + pl - b) / 2 + 1;
                j0 = j0 < 0 ? 0 : j0 > t->Wp ? t->Wp : j0;
                j1 = j1 < j0 ? j0 : j1 > t->Wp ? t->Wp : j1;
                for (int64_t i = 0; i < t->Hp; i++) {
                    float *restrict row = dst + i * t->Wp;
                    const int64_t ih = 2 * i + a - pt;
                    if (ih < 0 || ih >= H) {
                        memset(row, 0, sizeof(float) * (size_t)t->Wp);
                        continue;
                    }
                    const float *restrict src = xp + ih * W + b - pl;
                    for (int64_t j = 0; j < j0; j++)
                        row[j] = 0.0f;
                    for (int64_t j = j0; j < j1; j++)
                        row[j] = src[2 * j];
                    for (int64_t j = j1; j < t->Wp; j++)
                        row[j] = 0.0f;
                }
            }
    }
}

static void conv_pad_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const conv_direct_job *t = ctx;
    const poprt__geom3 *g = &t->p->g;
    const int64_t H = g->in[1], W = g->in[2], pt = g->pb[1], pl = g->pb[2];
    int64_t j0, j1;
    poprt__pad_span(pl, W, t->Wp, &j0, &j1);
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        float *dst = t->xpad + q * t->plane;
        for (int64_t i = 0; i < t->Hp; i++) {
            float *row = dst + i * t->Wp;
            const int64_t ih = i - pt;
            if (ih < 0 || ih >= H) {
                memset(row, 0, sizeof(float) * (size_t)t->Wp);
                continue;
            }
            memset(row, 0, sizeof(float) * (size_t)j0);
            memcpy(row + j0, xp + ih * W + (j0 - pl), sizeof(float) * (size_t)(j1 - j0));
            memset(row + j1, 0, sizeof(float) * (size_t)(t->Wp - j1));
        }
    }
}

static void conv_direct_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const conv_direct_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    const poprt__sgemm_variant *v = t->v;
    const int MR = v->mr, NR = v->nr;
    const int64_t OW = g->out[2], panels = (p->Mg + MR - 1) / MR;
    for (int64_t l = l0; l < l1; l++) {
        float *tmp = t->tmp + l * t->tmp_floats;
        for (int64_t it = l; it < t->items; it += t->lanes) {
            const int64_t mbi = it % t->nmb, rest = it / t->nmb;
            const int64_t ch = rest % t->nchunks, ng = rest / t->nchunks;
            const int64_t n = ng / p->G, gi = ng % p->G;
            const int64_t q0 = ch * t->cw, cols = t->Q - q0 < t->cw ? t->Q - q0 : t->cw;
            const float *xb = t->xpad + (n * p->C + gi * p->Cg) * t->plane + q0;
            const float *ag = t->apack + gi * t->a_group;
            const int64_t i0 = mbi * t->pblk, i1 = i0 + t->pblk < panels ? i0 + t->pblk : panels;
            const int64_t m1 = i1 * MR < p->Mg ? i1 * MR : p->Mg;
            for (int64_t i = i0; i < i1; i++) {
                const int mr = (int)(p->Mg - i * MR < MR ? p->Mg - i * MR : MR);
                const float *ai = ag + i * g->k_sz * p->Cg * MR;
                for (int64_t j = 0; j < cols; j += NR) {
                    float *cp = tmp + i * MR * t->cwp + j;
                    if (poprt__x86_conv_direct_taps(v, g->k_sz)) {
                        /* all taps summed in registers, C written once; a
                         * last partial panel runs full height too (its A rows
                         * are zero-padded and tmp has room for them), so it
                         * keeps the sum in registers as well */
                        v->ukr_taps(p->Cg, g->k_sz, t->toff, MR, NR, ai, xb + j, t->plane, cp,
                                    t->cwp, 1.0f, 0.0f);
                        continue;
                    }
                    int64_t tap = 0;
                    for (int64_t kh = 0; kh < g->k[1]; kh++)
                        for (int64_t kw = 0; kw < g->k[2]; kw++, tap++)
                            v->ukr(p->Cg, mr, NR, ai + tap * p->Cg * MR,
                                   xb + j + conv_tap_off(t, kh, kw), t->plane, cp, t->cwp, 1.0f,
                                   tap ? 1.0f : 0.0f);
                }
            }
            /* copy the valid columns out, with the bias */
            float *yg = t->y + (n * p->M + gi * p->Mg) * g->out_sz;
            for (int64_t m = i0 * MR; m < m1; m++) {
                const float *src = tmp + m * t->cwp;
                float *restrict dst = yg + m * g->out_sz;
                const float bv = t->b ? t->b[gi * p->Mg + m] : 0.0f;
                int64_t q = q0, oh = q0 / t->Wp, ow = q0 % t->Wp, y0 = -1, y1 = 0;
                while (q < q0 + cols) {
                    const int64_t n_ = t->Wp - ow < q0 + cols - q ? t->Wp - ow : q0 + cols - q;
                    const int64_t e = ow + n_ < OW ? ow + n_ : OW;
                    if (e > ow)
                        poprt__x86_row_plus(dst + oh * OW + ow, src + (q - q0), bv, e - ow);
                    if (e > ow) {
                        y0 = y0 < 0 ? oh * OW + ow : y0;
                        y1 = oh * OW + e;
                    }
                    q += n_;
                    ow = 0;
                    oh++;
                }
                /* the chunk's valid positions are one run of Y's row */
                if (y0 >= 0 && poprt__x86_conv_has_epilogue(p))
                    poprt__x86_conv_epilogue(p, t->y, dst + y0 - t->y, y1 - y0);
            }
        }
    }
}

poprt_status poprt__x86_conv_direct(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                    const float *b, const float *apack, int64_t a_group,
                                    const poprt__sgemm_variant *v, float *y)
{
    const poprt__geom3 *g = &p->g;
    conv_direct_job t;
    memset(&t, 0, sizeof t);
    t.p = p;
    t.x = x;
    t.b = b;
    t.apack = apack;
    t.a_group = a_group;
    t.v = v;
    t.y = y;
    t.ph = g->s[1] == 2 ? 2 : 1;
    if (t.ph == 2) {
        t.Hp = g->out[1] + (g->k[1] - 1) / 2;
        t.Wp = g->out[2] + (g->k[2] - 1) / 2;
        t.plane = 4 * t.Hp * t.Wp;
    } else {
        t.Hp = g->out[1] + g->d[1] * (g->k[1] - 1);
        t.Wp = g->out[2] + g->d[2] * (g->k[2] - 1);
        t.plane = t.Hp * t.Wp;
    }
    t.Q = (g->out[1] - 1) * t.Wp + g->out[2];
    for (int64_t kh = 0, tap = 0; kh < g->k[1]; kh++)
        for (int64_t kw = 0; kw < g->k[2]; kw++, tap++)
            if (tap < CONV_DIRECT_MAX_TAPS)
                t.toff[tap] = conv_tap_off(&t, kh, kw);
    /* columns a chunk reads past its own in each phase */
    const int64_t halo = t.ph == 2 ? (g->k[1] - 1) / 2 * t.Wp + (g->k[2] - 1) / 2
                                   : conv_tap_off(&t, g->k[1] - 1, g->k[2] - 1);
    const int64_t NR = v->nr, ng = p->N * p->G;
    int64_t cw = CONV_DIRECT_B_BYTES / ((int64_t)sizeof(float) * p->Cg * t.ph * t.ph) - halo;
    cw = cw / NR * NR;
    if (cw > 1024)
        cw = 1024;
    if (cw < 2 * NR)
        cw = 2 * NR;
    /* small images: narrower chunks (and below, M blocks) so that several
     * threads get work; one thread keeps whole chunks (the split never
     * changes how an output is computed, only which item computes it) */
    const int64_t want_items = poprt__kctx_threads(k) > 1 ? 2 * CONV_LANES : 1;
    if (ng * poprt__ceil_div(t.Q, cw) < want_items) {
        int64_t want =
            poprt__ceil_div(poprt__ceil_div(t.Q, poprt__ceil_div(want_items, ng)), NR) * NR;
        if (want < 2 * NR)
            want = 2 * NR;
        if (want < cw)
            cw = want;
    }
    t.cw = cw;
    t.cwp = poprt__ceil_div(cw, NR) * NR;
    t.nchunks = poprt__ceil_div(t.Q, cw);
    /* small images: split the output channels too */
    const int64_t panels = poprt__ceil_div(p->Mg, v->mr);
    t.nmb = poprt__ceil_div(want_items, ng * t.nchunks);
    if (t.nmb > panels)
        t.nmb = panels;
    t.pblk = poprt__ceil_div(panels, t.nmb);
    t.nmb = poprt__ceil_div(panels, t.pblk);
    t.items = ng * t.nchunks * t.nmb;
    t.lanes = t.items < CONV_LANES ? t.items : CONV_LANES;
    t.tmp_floats = (poprt__ceil_div(p->Mg, v->mr) * v->mr * t.cwp + 15) & ~(int64_t)15;
    /* the micro-kernel reads NR columns past the last grid position */
    size_t pad_n, tmp_n;
    if (!poprt__mul_size((size_t)(p->N * p->C), (size_t)t.plane, &pad_n) ||
        !poprt__mul_size((size_t)t.lanes, (size_t)t.tmp_floats, &tmp_n) ||
        !(t.xpad = poprt__kctx_scratch(k, (pad_n + (size_t)(2 * NR)) * sizeof(float))) ||
        !(t.tmp = poprt__kctx_scratch(k, tmp_n * sizeof(float))))
        return poprt__ref_oom(k);
    memset(t.xpad + pad_n, 0, sizeof(float) * (size_t)(2 * NR));
    poprt__kctx_parallel_for(k, p->N * p->C, poprt__ref_grain(t.plane, 1 << 14),
                             t.ph == 2 ? conv_phase_task_fn : conv_pad_task_fn, &t);
    poprt__kctx_parallel_for(k, t.lanes, 1, conv_direct_lane_fn, &t);
    return POPRT_OK;
}

/* ---- depthwise planes on a padded copy ---------------------------------------
 * Each lane owns a zero-padded plane buffer (L1/L2-sized): its border is
 * zeroed once, then for each of the lane's output planes the input plane's
 * rows are copied into its interior (once per input channel) and the best
 * plane function of the CPU's (conv_dw.h: the first usable of
 * conv_dw_kernels.inc) accumulates all taps of a block of columns in
 * registers, without bounds checks; the epilogue follows while the output
 * plane is in cache. */

typedef struct dw_plane_job {
    const poprt__conv_plan *p;
    const float *x, *w, *b;
    float *y, *buf;
    int64_t Hp, Wp, buf_floats, lanes, items;
    poprt__dwconv_plane_fn fn;
} dw_plane_job;

#define DW_EPI_SPAN 2048 /* floats of output planes per epilogue call */

static void dw_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const dw_plane_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    const int64_t H = g->in[1], W = g->in[2], pt = g->pb[1], pl = g->pb[2];
    /* input columns j0 - pl .. j1 - pl land on buffer columns j0 .. j1,
     * input rows on buffer rows i0 .. i1 */
    int64_t j0, j1, i0, i1;
    poprt__pad_span(pl, W, t->Wp, &j0, &j1);
    poprt__pad_span(pt, H, t->Hp, &i0, &i1);
    for (int64_t l = l0; l < l1; l++) {
        float *xp = t->buf + l * t->buf_floats;
        memset(xp, 0, sizeof(float) * (size_t)t->buf_floats);
        int64_t last = -1, epi0 = -1;
        const int64_t q1 = t->items * (l + 1) / t->lanes;
        for (int64_t q = t->items * l / t->lanes; q < q1; q++) {
            const int64_t n = q / p->M, m = q % p->M, src = n * p->C + m / p->Mg;
            if (src != last) {
                const float *xs = t->x + src * g->in_sz;
                for (int64_t i = i0; i < i1; i++)
                    memcpy(xp + i * t->Wp + j0, xs + (i - pt) * W + (j0 - pl),
                           sizeof(float) * (size_t)(j1 - j0));
                last = src;
            }
            t->fn(xp, t->Wp, t->w + m * g->k_sz, g->k[1], g->k[2], g->s[1], g->s[2], g->d[1],
                  g->d[2], pt, H, t->b ? t->b[m] : 0.0f, g->out[1], g->out[2],
                  t->y + q * g->out_sz);
            /* the epilogue once over consecutive planes, about DW_EPI_SPAN
             * floats, while they are in L1 (once per plane, ppocr_mobile_v2_cls's
             * planes of 192 and 288 floats made its calls 24 to 36 vectors
             * each: 8% of that model in the chain's dispatch) */
            if (poprt__x86_conv_has_epilogue(p)) {
                if (epi0 < 0)
                    epi0 = q;
                if ((q + 1 - epi0) * g->out_sz >= DW_EPI_SPAN || q + 1 == q1) {
                    poprt__x86_conv_epilogue(p, t->y, epi0 * g->out_sz, (q + 1 - epi0) * g->out_sz);
                    epi0 = -1;
                }
            }
        }
    }
}

/* ---- depthwise and grouped on NCHW16c ----------------------------------------
 * Input and output in blocks of 16 channels (lib/compiler/layout.c): the
 * best blocked function of conv_dw.h computes rows of a block with the 16
 * channels in one vector, reading the input in place (no padded copy: the
 * border taps are skipped); the epilogue (Z in Y's layout) follows on the
 * rows while they are in cache. Grouped convolutions whose groups of g
 * channels (g = Cg = Mg, 16 % g == 0) lie inside the blocks run the
 * grouped function, which picks each output lane's input channels with a
 * permute. Items are (image, block, output row). */

typedef struct dw_blocked_job {
    const poprt__conv_plan *p;
    const float *x, *wt, *b; /* wt: the taps [C / 16][KH * KW][g][16] */
    float *y;
    const poprt__dwconv_variant *v;
} dw_blocked_job;

static void dw_blocked_fn(void *ctx, int64_t r0, int64_t r1)
{
    const dw_blocked_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    const int64_t OH = g->out[1], OW = g->out[2], ncb = p->C / 16, cg = p->Cg;
    /* rows at a time: about 128 KiB of output (2048 positions), in L2 for the epilogue */
    const int64_t step = 2048 / OW > 1 ? 2048 / OW : 1;
    /* a Relu or Clip alone is applied as the depthwise tiles store
     * (MobileNetV2's ReLU6: the pass after them was 2.5% of its run) */
    const int clip_in = cg == 1 && !p->z && !p->fp8 && !p->n_post &&
                        (p->act == CONV_ACT_RELU || p->act == CONV_ACT_CLIP);
    const float clip[2] = {p->act == CONV_ACT_CLIP ? p->act_a : 0.0f,
                           p->act == CONV_ACT_CLIP ? p->act_b : INFINITY};
    for (int64_t r = r0; r < r1;) {
        const int64_t plane = r / OH, oh0 = r % OH, cb = plane % ncb;
        int64_t oh1 = OH - oh0 < r1 - r ? OH : oh0 + (r1 - r);
        oh1 = oh1 - oh0 > step ? oh0 + step : oh1;
        float *y = t->y + plane * g->out_sz * 16;
        const float *x = t->x + plane * g->in_sz * 16, *w = t->wt + cb * g->k_sz * cg * 16;
        const float *b = t->b ? t->b + cb * 16 : NULL;
        if (cg == 1)
            t->v->blocked(x, g->in[1], g->in[2], w, b, g->k[1], g->k[2], g->s[1], g->s[2],
                          g->d[1], g->d[2], g->pb[1], g->pb[2], oh0, oh1, OW,
                          clip_in ? clip : NULL, y);
        else
            t->v->grouped(x, g->in[1], g->in[2], w, b, (int)cg, g->k[1], g->k[2], g->s[1],
                          g->s[2], g->d[1], g->d[2], g->pb[1], g->pb[2], oh0, oh1, OW, y);
        if (poprt__x86_conv_has_epilogue(p) && !clip_in)
            poprt__x86_conv_epilogue(p, t->y, (plane * OH + oh0) * OW * 16, (oh1 - oh0) * OW * 16);
        r += oh1 - oh0;
    }
}

/* W [C][g][taps] -> [C / 16][taps][g][16] (C output channels, g per group) */
static void dw_taps(const float *w, int64_t C, int64_t g, int64_t taps, float *wt)
{
    for (int64_t c = 0; c < C; c++)
        for (int64_t ci = 0; ci < g; ci++)
            for (int64_t i = 0; i < taps; i++)
                wt[(((c / 16) * taps + i) * g + ci) * 16 + c % 16] = w[(c * g + ci) * taps + i];
}

int poprt__x86_dwconv_blocked_fits(int64_t C, int64_t M, int64_t G)
{
    /* (16 channels per group: 16 permutes per tap measured slower than
     * the per-group GEMMs, ResNeXt-50's 512-channel 3x3 convs at 14 x 14
     * 0.53 -> 0.66 ms) */
    return G > 1 && C == M && C % G == 0 && C % 16 == 0 && C / G <= 8 && 8 % (C / G) == 0;
}

poprt_status poprt__x86_dwconv_pack(const float *w, int64_t C, int64_t g, int64_t taps,
                                    void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (C <= 0 || C % 16 || g <= 0 || 16 % g || taps <= 0 || taps > INT64_MAX / 64 / C)
        return POPRT_OK;
    const size_t total = CONV_PACK_HEADER + (size_t)(C * g * taps) * sizeof(float);
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    memset(blob, 0, CONV_PACK_HEADER);
    const uint64_t h[4] = {CONV_DWB_MAGIC, (uint64_t)C, (uint64_t)taps, (uint64_t)g};
    memcpy(blob, h, sizeof h);
    dw_taps(w, C, g, taps, (float *)(blob + CONV_PACK_HEADER));
    *state = blob;
    *size = total;
    return POPRT_OK;
}

/* Depthwise and grouped 2-D convs (poprt__x86_dwconv_blocked_fits) with X,
 * Y and Z in NCHW16c; 0 in *done for other shapes. */
poprt_status poprt__x86_dwconv_blocked(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                       const float *w, const float *b, float *y, int *done)
{
    const poprt__geom3 *g = &p->g;
    *done = 0;
    if (!p->xblk || !p->yblk || !poprt__x86_dwconv_blocked_fits(p->C, p->M, p->G) ||
        g->in[0] != 1 || g->k[0] != 1 || g->out[0] != 1)
        return POPRT_OK;
    const int64_t taps = g->k_sz, n = p->C * p->Cg * taps;
    const float *wt = NULL;
    if (k->state && k->state_size >= CONV_PACK_HEADER) { /* poprt__x86_dwconv_pack's */
        uint64_t h[4];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_DWB_MAGIC && h[1] == (uint64_t)p->C && h[2] == (uint64_t)taps &&
            h[3] == (uint64_t)p->Cg && k->state_size - CONV_PACK_HEADER >= (size_t)n * sizeof(float))
            wt = (const float *)((const unsigned char *)k->state + CONV_PACK_HEADER);
    }
    if (!wt) { /* no prepared state for this shape: the same taps in scratch */
        float *s = poprt__kctx_scratch(k, (size_t)n * sizeof(float));
        if (!s || !w)
            return poprt__ref_oom(k);
        dw_taps(w, p->C, p->Cg, taps, s);
        wt = s;
    }
    dw_blocked_job t = {p, x, wt, b, y, poprt__dwconv_best()};
    const int64_t rows = p->N * (p->C / 16) * g->out[1];
    poprt__kctx_parallel_for(k, rows, poprt__ref_grain(g->out[2] * 16 * taps * p->Cg, 1 << 15),
                             dw_blocked_fn, &t);
    *done = 1;
    return POPRT_OK;
}

/* Depthwise 1-D / 2-D convs; 0 in *done for 3-D (the generic loop). */
poprt_status poprt__x86_dwconv_padded(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                      const float *w, const float *b, float *y, int *done)
{
    const poprt__geom3 *g = &p->g;
    *done = 0;
    if (g->in[0] != 1 || g->k[0] != 1 || g->out[0] != 1)
        return POPRT_OK;
    dw_plane_job t;
    memset(&t, 0, sizeof t);
    t.p = p;
    t.x = x;
    t.w = w;
    t.b = b;
    t.y = y;
    t.fn = poprt__dwconv_best()->plane;
    t.Hp = (g->out[1] - 1) * g->s[1] + g->d[1] * (g->k[1] - 1) + 1;
    t.Wp = (g->out[2] - 1) * g->s[2] + g->d[2] * (g->k[2] - 1) + 1;
    /* whole 16-column blocks read up to 16 sw + 16 floats past the plane
     * (conv_dw.h); rounded to a cache line */
    t.buf_floats = (t.Hp * t.Wp + 16 * g->s[2] + 16 + 15) & ~(int64_t)15;
    t.items = p->N * p->M;
    /* up to CONV_LANES lanes, each a contiguous run of planes worth a
     * wake-up */
    t.lanes = poprt__ceil_div(t.items, poprt__ref_grain(g->out_sz * g->k_sz, 1 << 15));
    if (t.lanes > CONV_LANES)
        t.lanes = CONV_LANES;
    size_t n;
    if (!poprt__mul_size((size_t)t.lanes, (size_t)t.buf_floats, &n) ||
        !(t.buf = poprt__kctx_scratch(k, n * sizeof(float))))
        return poprt__ref_oom(k);
    poprt__kctx_parallel_for(k, t.lanes, 1, dw_lane_fn, &t);
    *done = 1;
    return POPRT_OK;
}
