/* The blocked convolution's driver (see conv_paths.h) over the kernels of
 * conv_blocked.h, and their list. */
#include <string.h>
#include "kernels/ref/util.h"
#include "kernels/x86/conv_paths.h"
#include "kernels/x86/conv_blocked.h"

#define POPRT__CONVB_VARIANT(isa, level, wlayout, cb8)                                             \
    {#isa,                                                                                         \
     level,                                                                                        \
     wlayout,                                                                                      \
     poprt__convb_run_##isa,                                                                       \
     poprt__convb_block_##isa,                                                                     \
     cb8,                                                                                          \
     poprt__convb_block8_avx2,                                                                     \
     poprt__convb_rows_##isa,                                                                      \
     poprt__convb_even_##isa,                                                                      \
     poprt__transpose_bias_##isa,                                                                  \
     poprt__convw_in_##isa,                                                                        \
     poprt__convw4_in_##isa,                                                                       \
     poprt__convw4h_in_##isa,                                                                      \
     poprt__convw4w_in_##isa,                                                                      \
     poprt__convw_out_##isa,                                                                       \
     poprt__convw4_out_##isa,                                                                      \
     poprt__convw4h_out_##isa,                                                                     \
     poprt__convw4w_out_##isa},
const poprt__convb_variant poprt__convb_variants[] = {
#include "kernels/x86/conv_blocked_kernels.inc"
};
#undef POPRT__CONVB_VARIANT
const int poprt__convb_n_variants =
    (int)(sizeof poprt__convb_variants / sizeof poprt__convb_variants[0]);

int poprt__convb_usable(const poprt__convb_variant *v)
{
    return v && poprt__cpu_features()->isa >= v->isa;
}

int poprt__convb_bf16_usable(void)
{
#if defined(__x86_64__)
    return poprt__convb_best() && poprt__cpu_has(POPRT__CPU_AVX512_BF16);
#else
    return 0;
#endif
}

const poprt__convb_variant *poprt__convb_best(void)
{
    const int i = POPRT__ISA_FIRST(poprt__convb_variants, poprt__convb_n_variants);
    return i < 0 ? NULL : &poprt__convb_variants[i];
}

/* ---- blocked direct convolution (kernels/x86/poprt__x86_conv_blocked.h) -----------------
 * The input is copied once into 16-channel blocks with its zero border
 * (xb[cbi][hp][wp][cb]); each work item then computes a run of about 48
 * output positions of one group of up to 64 output channels, summing a few
 * input blocks at a time (their weights stay in L1), and transposes the run
 * back into Y's channel rows, where the epilogue runs while the rows are in
 * cache. The weights are packed per
 * group when the session is compiled. Used for 2-D convs with one group and
 * more than one tap, on CPUs with AVX-512; inputs whose channels are not a
 * multiple of 16 (3-channel stems) are blocked one channel per block. */

#define CONV_BLOCKED_MAGIC 0x31424b4243525050ull      /* "PPRCBKB1" */
#define CONV_BLOCKED_BF16_MAGIC 0x31484b4243525050ull /* "PPRCBKH1": pair words */
#define CONVB_GROUP 64                          /* output channels per group */
#define CONVB_CHUNK 48                          /* output positions per work item */
#define CONVB_BAND 256 /* row tiles: output positions of a channel per work item */

typedef struct convb_job {
    const poprt__conv_plan *p;
    const float *x, *b;
    const void *w;          /* packed, group og at og * w_group elements */
    float *y, *xb, *tmp;    /* tmp: per lane, 4 * 16 floats per position of a chunk */
    /* n_og: groups of up to 64 output channels in all conv groups, n_og_g
     * of them per conv group; ncb_all: input blocks of an image, g.ncb of
     * them per conv group */
    int64_t w_group, Hp, n_og, n_og_g, ncb_all, chunk, nchunks, cstep, items, lanes, tmp_floats;
    int chunk_major; /* items chunk, then group: all groups' weights stay in L2 */
    poprt__convb_geom g;
    const poprt__convb_variant *v;
    int xblk, yblk; /* x, y (and the residual) in NCHW16c */
    /* bfloat16 weights: the tiles read xw, the blocked input as pair words
     * (8 per position), with gw (g in words) */
    int bf16;
    uint32_t *xw;
    poprt__convb_geom gw;
    /* float32 weights packed block by block (POPRT__CONVB_BY_BLOCK): the
     * variant's tiles take one block of 16 outputs at a time */
    int by_block;
    /* row tiles (convb_rows_lane_fn): output rows per work item */
    int64_t band;
} convb_job;

/* Whether the blocked path can run a conv: 2-D (or 1-D), one group. */
int poprt__x86_convb_fits(const poprt__geom3 *g, int64_t G)
{
    return G == 1 && g->in[0] == 1 && g->k[0] == 1 && g->out[0] == 1 && g->out_sz >= 1;
}

/* Rows the row tiles take: column stride 1 or 2, at least 16 columns. */
static int rows_fit(int64_t sw, int64_t OW)
{
    return (sw == 1 || sw == 2) && OW >= 16;
}

/* One channel per block with column stride 1 or 2 and rows of at least 16
 * columns: whole output rows straight into place
 * (the variant's rows). Items: image-major, then group, then row.
 * (Splitting the channels first, as the next MaxPool splits its planes,
 * measured no faster on light_squeezenet: the conv then reads its whole
 * input once per channel share.) */
static int convb_by_rows(const poprt__convb_geom *cg)
{
    return cg->cb == 1 && rows_fit(cg->sw, cg->OW);
}

int poprt__x86_convb_worth(const poprt__convb_variant *v, const poprt__geom3 *g, int64_t C,
                           int64_t M, int blocked_io)
{
    /* blocks of 8 input channels: for whole blocks of 16 outputs, or from
     * 40 input channels on. A last output block of 8 (M = 24, 72) is
     * computed as 16; with few input channels that lost to the GEMM paths
     * (oww_embedding's 24 -> 24 convs 0.20 -> 0.24 ms), with more the
     * blocked sums win anyway. Single convs, 1 thread, Zen 3, this over
     * the GEMM paths (whole-process time of 4000 runs, median of 9 pairs):
     * 24 -> 24 at 74 x 32, 3x1: 1.11; 40 -> 40 at 36 x 16, 1x3: 0.94;
     * 56 -> 56 at 32 x 16, 3x1: 0.93; 72 -> 72 at 30 x 8, 1x3: 0.67-0.70,
     * 3x1: 0.82. (Tiles computing only a half block's 8 channels, one
     * accumulator per position, ran no faster: one broadcast per FMA.) */
    if (!v)
        return 0;
    /* stems of fewer than 8 channels, one per block, that the row tiles
     * take (column stride 1 or 2, 16 output columns or more): each step
     * reads 3 input vectors for 12 FMAs, and the few channels' weights
     * stay in L1. ppocr_mobile_v2_cls's 3 -> 8 3x3 stride-2 stem at
     * 24 x 96 with its HardSwish: 115 -> 56 us (Zen 3, 1 thread, three
     * alternated runs each) against im2col and the GEMM */
    if (C < 8 && rows_fit(g->s[2], g->out[2])) /* (C < 8: one channel per block) */
        return 1;
    return v->wlayout == POPRT__CONVB_INTERLEAVED || C % 16 == 0 ||
           (v->cb8 == 8 && C % 8 == 0 && (M % 16 == 0 || C >= 40)) || blocked_io;
}

/* Channels per input block for variant v (NULL: the best here): 16 when
 * they divide C, else 8 when they divide it and v blocks by 8, else 1
 * (plain padded planes; also for stems with 3 channels, whose weights per
 * channel then fit in L1 on their own). */
static int64_t convb_cb(const poprt__convb_variant *v, int64_t C)
{
    if (!v)
        v = poprt__convb_best();
    return C % 16 == 0 ? 16 : v && v->cb8 == 8 && C % 8 == 0 ? 8 : 1;
}

int poprt__x86_convb_stem_bf16_fits(const poprt__geom3 *g, int64_t C)
{
    return convb_cb(NULL, C) == 1 && poprt__x86_convb_fits(g, 1) && g->s[2] == 2 && g->d[2] == 1 &&
           g->out[2] >= 16 && poprt__convb_bf16_usable();
}

/* Blocked geometry: cb channels per block, zero-padded input of Hp x Wp
 * (only the rows and columns some tap reads). */
static void convb_geom_of(const poprt__convb_variant *v, const poprt__geom3 *g, int64_t C,
                          poprt__convb_geom *cg, int64_t *Hp)
{
    cg->cb = convb_cb(v, C);
    cg->split = 0;
    cg->ncb = C / cg->cb;
    cg->KH = g->k[1];
    cg->KW = g->k[2];
    cg->sh = g->s[1];
    cg->sw = g->s[2];
    cg->dh = g->d[1];
    cg->dw = g->d[2];
    cg->OW = g->out[2];
    cg->Wp = (g->out[2] - 1) * g->s[2] + (g->k[2] - 1) * g->d[2] + 1;
    *Hp = (g->out[1] - 1) * g->s[1] + (g->k[1] - 1) * g->d[1] + 1;
    cg->plane = *Hp * cg->Wp * cg->cb;
}

/* Input blocks per step for variant v (taps weights per input channel, cb
 * channels per block): their weights for the outputs a tile takes
 * (bfloat16: 8 words per channel block and output) in ~24 KiB, so they
 * stay in L1 while a chunk's tiles run over them. The AVX-512 tile takes a
 * group's 64 outputs; a variant whose tiles take one block of 16 at a time
 * (POPRT__CONVB_BY_BLOCK) needs only that block's in L1, and with one tap
 * (1x1 convs, Winograd's products) a chunk's input is small beside them:
 * four times the input blocks per step, a quarter of the accumulators'
 * loads and stores (AVX2, light_resnet50's 1x1 convs at 14 x 14 and 7 x 7
 * alone: 3-9% faster, Zen 3). With 9 taps the chunk's input rows for two
 * blocks and their weights overflow L1: its 3x3 convs at stride 2 were
 * 5-20% slower at 2 blocks per step. */
static int64_t convb_step_blocks(int by_block, int bf16, int64_t taps, int64_t cb)
{
    const int one_block = by_block && taps == 1;
    const int64_t wblk =
        taps * (bf16 ? 8 : cb) * (one_block ? 16 : CONVB_GROUP) * (int64_t)sizeof(float);
    return wblk >= (24 << 10) ? 1 : (24 << 10) / wblk;
}

/* Rows [r0, r1) of the blocked input as pair words (bfloat16 weights). */
static void convb_words_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convb_job *t = ctx;
    const int64_t row = t->g.Wp * 16; /* floats per padded row of a block */
    poprt__convb_words_avx512(t->xb + r0 * row, (r1 - r0) * row / 2, t->xw + r0 * row / 2);
}

/* Stems (one channel per block): words [8 u0, 8 u1) of the padded planes
 * as column-pair words (the last unit reads into the zeroed slack). */
static void convb_stem_words_task_fn(void *ctx, int64_t u0, int64_t u1)
{
    const convb_job *t = ctx;
    poprt__convb_words_avx512(t->xb + 16 * u0, 8 * (u1 - u0), t->xw + 8 * u0);
}

/* Rows [r0, r1) of the blocked input: row r = (image * ncb + cbi) * Hp + hp. */
static void convb_block_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convb_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__geom3 *g = &p->g;
    const poprt__convb_geom *cg = &t->g;
    const int64_t H = g->in[1], W = g->in[2], HW = H * W, pt = g->pb[1], pl = g->pb[2];
    const int64_t cb = cg->cb, Wp = cg->Wp;
    /* padded columns [c0, c1) hold input columns [c0 - pl, c1 - pl) */
    int64_t c0 = pl < 0 ? 0 : pl, c1 = pl + W;
    if (c1 > Wp)
        c1 = Wp;
    if (c0 > c1)
        c0 = c1;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t hp = r % t->Hp, cbi = (r / t->Hp) % t->ncb_all, n = r / t->Hp / t->ncb_all;
        float *dst = t->xb + r * Wp * cb;
        const int64_t ih = hp - pt;
        if (ih < 0 || ih >= H) {
            memset(dst, 0, sizeof(float) * (size_t)(Wp * cb));
            continue;
        }
        if (cg->split) /* the border columns are spread over the row */
            memset(dst, 0, sizeof(float) * (size_t)Wp);
        else {
            memset(dst, 0, sizeof(float) * (size_t)(c0 * cb));
            memset(dst + c1 * cb, 0, sizeof(float) * (size_t)((Wp - c1) * cb));
        }
        if (t->xblk) { /* already blocked: the row's run of positions */
            memcpy(dst + c0 * 16, t->x + (n * p->C + cbi * 16) * HW + (ih * W + c0 - pl) * 16,
                   sizeof(float) * (size_t)((c1 - c0) * 16));
            continue;
        }
        const float *src = t->x + (n * p->C + cbi * cb) * HW + ih * W + (c0 - pl);
        if (cb == 16) /* Winograd's last block of C not a multiple of 16: zeros past C */
            t->v->block(src, HW, (int)(p->C - cbi * 16 < 16 ? p->C - cbi * 16 : 16), c1 - c0,
                        dst + c0 * 16);
        else if (cb == 8)
            t->v->block8(src, HW, c1 - c0, dst + c0 * 8);
        else if (cg->split) { /* even columns, then odd ones */
            const int64_t a = c0 & 1; /* src[a] is the first even column */
            t->v->even(src + a, (c1 - c0 - a + 1) / 2, dst + ((c0 + a) >> 1));
            t->v->even(src + !a, (c1 - c0 - !a + 1) / 2,
                                     dst + cg->split + ((c0 + !a) >> 1));
        }
        else /* one channel per block: a padded copy of the row */
            memcpy(dst + c0, src, sizeof(float) * (size_t)(c1 - c0));
    }
}

/* What the step over input blocks [c0, c1) of item (og, ch) prefetches
 * into L2 while it runs: *bytes from the pointer returned (NULL: nothing).
 * In the interleaved layout the next step's weights (or the next group's)
 * follow these: a small image's tiles use each weight a few times only,
 * and the weights come from memory. By block, each block's weights are a
 * stream of their own, which the hardware follows; what it cannot know is
 * the next group's, read from memory by that group's first chunk: a share
 * of them per step, over the group's items (light_resnet50's 1x1 convs,
 * weights out of cache: 512 -> 2048 at 7 x 7 4-16% faster alone, Zen 3). */
static const char *convb_step_prefetch(const convb_job *t, const char *wg, int64_t og,
                                       int64_t ch, int64_t c0, int64_t c1, int64_t wstep,
                                       int64_t *bytes)
{
    if (!t->by_block) {
        *bytes = 4 * t->cstep * wstep;
        return wg + c1 * wstep * 4;
    }
    if (og + 1 >= t->n_og || (t->chunk_major && ch != 0)) {
        *bytes = 0;
        return NULL;
    }
    /* share u of us: the group's steps, over its chunks unless chunk-major */
    const int64_t nsteps = poprt__ceil_div(t->g.ncb, t->cstep), s = c0 / t->cstep;
    const int64_t u = t->chunk_major ? s : ch * nsteps + s;
    const int64_t us = t->chunk_major ? nsteps : t->nchunks * nsteps;
    const int64_t gb = t->w_group * 4, from = u * gb / us / 64 * 64; /* whole lines */
    *bytes = (u + 1) * gb / us - from;
    return wg + gb + from;
}

static void convb_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const convb_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__convb_geom *cg = &t->g;
    const int64_t OHW = p->g.out_sz;
    float bias[CONVB_GROUP];
    const int relu = poprt__x86_conv_lone_relu(p); /* applied in the transposition */
    /* an NCHW16c output whose epilogue is a residual and/or a Relu or Clip
     * gets it in the registers, with the last input blocks */
    const int in_regs = t->yblk && !p->fp8 && !p->n_post &&
                        (p->act == CONV_ACT_NONE || p->act == CONV_ACT_RELU ||
                         p->act == CONV_ACT_CLIP);
    /* the tiles' relu: 1 Relu, 2 Clip to g.lo, g.hi (MobileNetV2's ReLU6:
     * an epilogue pass over every block of its 1x1 convolutions' outputs
     * was 3.9% of its run, Zen 3) */
    const int regs_relu = !in_regs                    ? 0
                          : p->act == CONV_ACT_RELU ? 1
                          : p->act == CONV_ACT_CLIP ? 2
                                                    : 0;
    for (int64_t l = l0; l < l1; l++) {
        float *tmp = t->tmp ? t->tmp + l * t->tmp_floats : NULL;
        /* a lane takes a contiguous run of items: neighbouring chunks share
         * the cache lines at their ends, which two threads writing them at
         * once would pass back and forth */
        const int64_t i0 = l * t->items / t->lanes, i1 = (l + 1) * t->items / t->lanes;
        for (int64_t it = i0; it < i1; it++) {
            /* items: image-major, then group, then chunk (a lane's chunks of
             * one group follow each other, so its weights stay in cache), or
             * with chunk_major chunk, then group */
            const int64_t ch = t->chunk_major ? (it / t->n_og) % t->nchunks : it % t->nchunks;
            const int64_t og = t->chunk_major ? it % t->n_og : (it / t->nchunks) % t->n_og;
            const int64_t n = it / t->nchunks / t->n_og;
            const int64_t q0 = ch * t->chunk, q1 = q0 + t->chunk < OHW ? q0 + t->chunk : OHW;
            /* conv group gi, its output channels [oc0, oc0 + mc) */
            const int64_t gi = og / t->n_og_g, og0 = og % t->n_og_g * CONVB_GROUP;
            const int64_t oc0 = gi * p->Mg + og0;
            const int64_t mc = p->Mg - og0 < CONVB_GROUP ? p->Mg - og0 : CONVB_GROUP;
            const int nb = (int)((mc + 15) / 16);
            if (t->b) {
                memset(bias, 0, sizeof bias);
                memcpy(bias, t->b + oc0, sizeof(float) * (size_t)mc);
            }
            const float *xn = t->xb + (n * t->ncb_all + gi * cg->ncb) * cg->plane;
            const uint32_t *xwn = t->bf16 ? t->xw + n * t->ncb_all * t->gw.plane : NULL;
            /* elements (floats or pair words) per input block */
            const int64_t wstep = cg->KH * cg->KW * (t->bf16 ? 8 : cg->cb) * nb * 16;
            const char *wg = (const char *)t->w + og * t->w_group * 4;
            /* NCHW16c output: the tiles store straight into its blocks */
            float *out = t->yblk ? t->y + (n * p->M + oc0) * OHW + q0 * 16 : tmp;
            const int64_t ldo = t->yblk ? OHW : q1 - q0;
            const float *z = in_regs && p->z ? p->z + (out - t->y) : NULL;
            /* a few input blocks at a time: their weights stay in L1 while
             * the chunk's tiles run over them */
            for (int64_t c0 = 0; c0 < cg->ncb; c0 += t->cstep) {
                const int64_t c1 = c0 + t->cstep < cg->ncb ? c0 + t->cstep : cg->ncb;
                const int last = c1 == cg->ncb;
                int64_t pf_bytes;
                const char *pf = convb_step_prefetch(t, wg, og, ch, c0, c1, wstep, &pf_bytes);
                if (t->bf16)
                    poprt__convb_run_bf16_avx512(xwn, (const uint32_t *)wg, t->b ? bias : NULL,
                                                 nb, &t->gw, q0, q1, c0, c1, c0 > 0, out, ldo,
                                                 last ? z : NULL, last ? regs_relu : 0, pf,
                                                 pf_bytes);
                else
                    t->v->run(xn, (const float *)wg, t->b ? bias : NULL, nb, cg, q0, q1, c0, c1,
                              c0 > 0, out, ldo, last ? z : NULL, last ? regs_relu : 0, pf,
                              pf_bytes);
            }
            if (t->yblk) {
                for (int bi = 0; !in_regs && poprt__x86_conv_has_epilogue(p) && bi < nb; bi++)
                    poprt__x86_conv_epilogue(p, t->y, out + bi * 16 * OHW - t->y, (q1 - q0) * 16);
                continue;
            }
            float *yq = t->y + (n * p->M + oc0) * OHW + q0;
            /* an epilogue without a residual is elementwise: on the run's
             * blocks before they are transposed, one span instead of a
             * short one per channel (the blocks past mc are not stored) */
            const int epi_tmp = poprt__x86_conv_has_epilogue(p) && !relu && !p->z;
            if (epi_tmp)
                poprt__x86_conv_epilogue(p, tmp, 0, nb * (q1 - q0) * 16);
            for (int bi = 0; bi < nb; bi++) {
                const int rows = (int)(mc - bi * 16 < 16 ? mc - bi * 16 : 16);
                t->v->transpose_bias(tmp + bi * (q1 - q0) * 16, 16, q1 - q0, rows, NULL, relu,
                                     yq + bi * 16 * OHW, OHW);
            }
            if (poprt__x86_conv_has_epilogue(p) && !relu && !epi_tmp)
                for (int64_t m = 0; m < mc; m++)
                    poprt__x86_conv_epilogue(p, t->y, yq + m * OHW - t->y, q1 - q0);
        }
    }
}

static void convb_rows_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const convb_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__convb_geom *cg = &t->g;
    const int64_t OH = p->g.out[1], OHW = p->g.out_sz;
    float bias[CONVB_GROUP];
    const int relu = poprt__x86_conv_lone_relu(p); /* applied in the tiles' registers */
    for (int64_t l = l0; l < l1; l++) {
        const int64_t i0 = l * t->items / t->lanes, i1 = (l + 1) * t->items / t->lanes;
        const int64_t nb = poprt__ceil_div(OH, t->band);
        for (int64_t it = i0; it < i1; it++) {
            const int64_t oh0 = it % nb * t->band, og = (it / nb) % t->n_og, n = it / nb / t->n_og;
            const int64_t oh1 = oh0 + t->band < OH ? oh0 + t->band : OH;
            const int64_t oc0 = og * CONVB_GROUP;
            const int64_t mc = p->M - oc0 < CONVB_GROUP ? p->M - oc0 : CONVB_GROUP;
            if (t->b) {
                memset(bias, 0, sizeof bias);
                memcpy(bias, t->b + oc0, sizeof(float) * (size_t)mc);
            }
            /* NCHW16c: the group's first block; else its first row oh */
            float *yg = t->y + (n * p->M + oc0) * OHW;
            /* row pitch of the packed weights: the group's width, or a
             * block's 16 when they are packed block by block */
            const int64_t wpitch = t->by_block ? 16 : poprt__ceil_div(mc, 16) * 16;
            for (int64_t oh = oh0; oh < oh1; oh++) {
                float *yr = t->yblk ? yg : yg + oh * cg->OW;
                if (t->bf16) /* a stem on column-pair words */
                    poprt__convb_rows_bf16_avx512(t->xw + n * cg->ncb * t->gw.plane,
                                                  (const uint32_t *)t->w + og * t->w_group,
                                                  wpitch, t->b ? bias : NULL, mc, &t->gw, oh,
                                                  relu, t->yblk, yr, OHW);
                else
                    t->v->rows(t->xb + n * cg->ncb * cg->plane,
                               (const float *)t->w + og * t->w_group, wpitch,
                               t->b ? bias : NULL, mc, cg, oh, relu, t->yblk, yr, OHW);
            }
            /* the epilogue on the band's rows, contiguous in each plane
             * (or block) */
            const int64_t span = (oh1 - oh0) * cg->OW;
            if (poprt__x86_conv_has_epilogue(p) && !relu && t->yblk)
                for (int64_t bi = 0; bi < mc / 16; bi++)
                    poprt__x86_conv_epilogue(p, t->y, yg + (bi * OHW + oh0 * cg->OW) * 16 - t->y,
                                             span * 16);
            else if (poprt__x86_conv_has_epilogue(p) && !relu)
                for (int64_t m = 0; m < mc; m++)
                    poprt__x86_conv_epilogue(p, t->y, yg + m * OHW + oh0 * cg->OW - t->y, span);
        }
    }
}

poprt_status poprt__x86_conv_blocked(poprt__kctx *k, const poprt__conv_plan *p,
                                     const poprt__convb_variant *v, const float *x,
                                     const float *b, const void *w, int64_t w_group, int bf16,
                                     float *y)
{
    const poprt__geom3 *g = &p->g;
    convb_job t = {.p = p, .x = x, .b = b, .w = w, .y = y, .w_group = w_group,
                   .xblk = p->xblk, .yblk = p->yblk, .v = v, .bf16 = bf16,
                   .by_block = !bf16 && v->wlayout == POPRT__CONVB_BY_BLOCK};
    convb_geom_of(v, g, p->Cg, &t.g, &t.Hp); /* (C for one group) */
    t.g.lo = p->act_a; /* (CONV_ACT_CLIP's bounds: the tiles' relu 2) */
    t.g.hi = p->act_b;
    t.ncb_all = t.g.ncb * p->G;
    /* bfloat16 with one channel per block: a stem on column-pair words */
    const int stem_bf16 = bf16 && t.g.cb == 1;
    if (stem_bf16 && !poprt__x86_convb_stem_bf16_fits(g, p->C)) /* (the packer refuses it) */
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL,
                               "bfloat16 blocked convolution of %lld channels at column stride "
                               "%lld, %lld output columns",
                               (long long)p->C, (long long)g->s[2], (long long)g->out[2]);
    if (stem_bf16) { /* whole pairs of columns, the last one zero */
        t.g.Wp += t.g.Wp & 1;
        t.g.plane = t.Hp * t.g.Wp;
    }
    /* an NCHW16c input that no tap reads past (no padding) is read in
     * place, with its own row pitch and plane */
    const int in_place = p->xblk && g->pb[1] == 0 && g->pb[2] == 0 && t.Hp <= g->in[1] &&
                         t.g.Wp <= g->in[2];
    if (in_place) {
        t.Hp = g->in[1];
        t.g.Wp = g->in[2];
        t.g.plane = g->in[1] * g->in[2] * 16;
    }
    const int by_rows = stem_bf16 || (!bf16 && convb_by_rows(&t.g));
    if (by_rows && t.g.sw == 2 && !stem_bf16)
        t.g.split = (t.g.Wp + 1) / 2;
    t.n_og_g = poprt__ceil_div(p->Mg, CONVB_GROUP);
    t.n_og = p->G * t.n_og_g;
    if (by_rows) {
        /* bands of rows: at least CONVB_BAND outputs per channel, so that the
         * epilogue's calls (one per channel and item) are not a few
         * vectors each (oww_embedding's 1 -> 24 stem has rows of 32);
         * at least two items (image, group, band) per thread */
        t.band = poprt__ceil_div(CONVB_BAND, g->out[2]);
        const int64_t min_items = 2 * (int64_t)poprt__kctx_threads(k);
        while (t.band > 1 && p->N * t.n_og * poprt__ceil_div(g->out[1], t.band) < min_items)
            t.band /= 2;
        if (t.band > g->out[1])
            t.band = g->out[1];
        t.items = p->N * t.n_og * poprt__ceil_div(g->out[1], t.band);
    }
    else {
        /* chunks of about CONVB_CHUNK positions, in whole tiles */
        const int64_t nch = poprt__ceil_div(g->out_sz, CONVB_CHUNK);
        t.chunk = poprt__ceil_div(poprt__ceil_div(g->out_sz, nch), 6) * 6;
        t.nchunks = poprt__ceil_div(g->out_sz, t.chunk);
        t.cstep = convb_step_blocks(t.by_block, bf16, t.g.KH * t.g.KW, t.g.cb);
        t.items = p->N * t.n_og * t.nchunks;
        /* on several threads, when the weights of all groups stay in L2,
         * each chunk's groups run one after the other: the chunk's input is
         * read from memory once, not once per group (a 1x1 conv at 56 x 56
         * reads 3 MB per pass; light_resnet50 at 2 threads 23.2 -> 22.2 ms;
         * on one thread, where memory keeps up, the groups' weights then
         * take turns in L1 and it was 1% slower). Same sums either way.
         * "Stay in L2": half of this core's L2 (the 1 MiB this was measured
         * with on a 2 MiB L2; on Zen 3's 512 KiB, light_resnet50's 1 MiB
         * 1x1 convs at 14 x 14 re-read all groups' weights from L3 per
         * chunk: group by group they take 0.89-1.00x the time at 2
         * threads, per-shape profile, medians of 5 and 7 alternated runs) */
        t.chunk_major = poprt__kctx_threads(k) > 1 && t.n_og > 1 &&
                        t.n_og * w_group * (int64_t)sizeof(float) <= poprt__cpu_l2_reuse_bytes();
        t.tmp_floats = 4 * 16 * t.chunk;
    }
    t.lanes = t.items < CONV_LANES ? t.items : CONV_LANES;
    if (t.yblk) /* the tiles store into the output itself */
        t.tmp_floats = 0;
    /* the blocked input, then zeros: the row tiles read up to 31 floats
     * past the last plane */
    enum { SLACK = 32 };
    size_t xb_n, tmp_n = 0;
    if (!poprt__mul_size((size_t)(p->N * t.ncb_all), (size_t)t.g.plane, &xb_n) ||
        xb_n > SIZE_MAX / sizeof(float) - SLACK ||
        !poprt__mul_size((size_t)t.lanes, (size_t)t.tmp_floats, &tmp_n) ||
        (tmp_n && !(t.tmp = poprt__kctx_scratch(k, tmp_n * sizeof(float)))))
        return poprt__ref_oom(k);
    if (in_place)
        t.xb = (float *)x;
    else {
        if (!(t.xb = poprt__kctx_scratch(k, (xb_n + SLACK) * sizeof(float))))
            return poprt__ref_oom(k);
        memset(t.xb + xb_n, 0, SLACK * sizeof(float));
        poprt__kctx_parallel_for(k, p->N * t.ncb_all * t.Hp,
                                 poprt__ref_grain(t.g.Wp * t.g.cb, 1 << 14), convb_block_task_fn,
                                 &t);
    }
    if (stem_bf16) { /* the padded rows as column-pair words */
        const int64_t units = poprt__ceil_div((int64_t)xb_n / 2, 8);
        if (!(t.xw = poprt__kctx_scratch(k, (size_t)(units * 8 + SLACK) * sizeof(uint32_t))))
            return poprt__ref_oom(k);
        memset(t.xw + units * 8, 0, SLACK * sizeof(uint32_t));
        t.gw = t.g;
        t.gw.Wp = t.g.Wp / 2;
        t.gw.plane = t.g.plane / 2;
        t.gw.KW = (t.g.KW + 1) / 2;
        poprt__kctx_parallel_for(k, units, poprt__ref_grain(16, 1 << 14),
                                 convb_stem_words_task_fn, &t);
    } else if (bf16) { /* the tiles' operand: the blocked input as pair words */
        if (!(t.xw = poprt__kctx_scratch(k, (xb_n / 2 + SLACK) * sizeof(uint32_t))))
            return poprt__ref_oom(k);
        memset(t.xw + xb_n / 2, 0, SLACK * sizeof(uint32_t));
        t.gw = t.g;
        t.gw.plane = t.g.plane / 2;
        poprt__kctx_parallel_for(k, p->N * t.ncb_all * t.Hp, poprt__ref_grain(t.g.Wp * 16, 1 << 14),
                                 convb_words_task_fn, &t);
    }
    poprt__kctx_parallel_for(k, t.lanes, 1, by_rows ? convb_rows_lane_fn : convb_lane_fn, &t);
    return POPRT_OK;
}

/* Packs W [M][C][KH][KW] for poprt__x86_conv_blocked: per group of 64 output channels,
 * [cbi][kh][kw][i][nb * 16], zero for channels past C and M; bf16: the same
 * order with i a channel pair and each element the pair word (C a multiple
 * of 16, on a CPU with AVX512-BF16: the words are rounded by it). */
/* Where weight (row, o) of a group of `width` outputs goes in its packed
 * floats, row = ((cbi * KH + kh) * KW + kw) * cb + i of `rows` such rows. */
static int64_t convb_wpos(int layout, int64_t row, int64_t o, int64_t width, int64_t rows)
{
    return layout == POPRT__CONVB_BY_BLOCK ? ((o >> 4) * rows + row) * 16 + (o & 15)
                                           : row * width + o;
}

/* The layout weights for variant v (NULL: the best here) are packed in;
 * bfloat16 pair words are always interleaved (the AVX-512 tiles). */
static int convb_layout(const poprt__convb_variant *v, int bf16)
{
    if (!v)
        v = poprt__convb_best();
    return bf16 || !v ? POPRT__CONVB_INTERLEAVED : v->wlayout;
}

/* A stem's bfloat16 weights (one channel per block, column stride 2: the
 * rows of poprt__convb_rows_bf16_avx512): per group of 64 outputs
 * [c][kh][kp][width] words, word (w[.][c][kh][2 kp], w[.][c][kh][2 kp + 1]),
 * zero past KW and M. */
static poprt_status convb_pack_stem_bf16(const float *w, int64_t M, int64_t C, int64_t KH,
                                         int64_t KW, int layout, void **state, size_t *size)
{
    const int64_t KP = (KW + 1) / 2, n_og = poprt__ceil_div(M, CONVB_GROUP);
    const int64_t per = C * KH * KP * CONVB_GROUP; /* words per group */
    const size_t total = CONV_PACK_HEADER + (size_t)(n_og * per) * sizeof(uint32_t);
    unsigned char *blob = poprt__aligned_alloc(total);
    float *stage = poprt__malloc((size_t)(2 * per) * sizeof(float));
    if (!blob || !stage) {
        poprt__aligned_free(blob);
        poprt__free(stage);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    }
    memset(blob, 0, total);
    uint64_t h[8] = {CONV_BLOCKED_BF16_MAGIC, (uint64_t)M, (uint64_t)C, (uint64_t)KH,
                     (uint64_t)KW, (uint64_t)per, (uint64_t)layout, 0};
    memcpy(blob, h, sizeof h);
    uint32_t *dst = (uint32_t *)(blob + CONV_PACK_HEADER);
    for (int64_t og = 0; og < n_og; og++) {
        const int64_t oc0 = og * CONVB_GROUP;
        const int64_t mc = M - oc0 < CONVB_GROUP ? M - oc0 : CONVB_GROUP;
        const int64_t width = poprt__ceil_div(mc, 16) * 16;
        memset(stage, 0, (size_t)(2 * per) * sizeof(float));
        for (int64_t c = 0; c < C; c++)
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++)
                    for (int64_t m = 0; m < mc; m++)
                        stage[(((c * KH + kh) * KP + kw / 2) * width + m) * 2 + kw % 2] =
                            w[(((oc0 + m) * C + c) * KH + kh) * KW + kw];
        /* (rows of width words: a multiple of 16) */
        poprt__convb_words_avx512(stage, C * KH * KP * width, dst + og * per);
    }
    poprt__free(stage);
    *state = blob;
    *size = total;
    return POPRT_OK;
}

/* G groups of M outputs and C inputs each (weights [G M][C][KH][KW]):
 * poprt__x86_convb_pack's layout per group, one after the other. */
static poprt_status convb_pack_groups(const poprt__convb_variant *v, const float *w, int64_t G,
                                      int64_t M, int64_t C, int64_t KH, int64_t KW, int bf16,
                                      void **state, size_t *size)
{
    const int64_t cb = convb_cb(v, C), ncb = C / cb;
    const int layout = convb_layout(v, bf16);
    if (bf16 && !poprt__convb_bf16_usable())
        return poprt__err(POPRT_STATUS_INTERNAL,
                          "bfloat16 blocked convolution weights of %lld channels on this CPU",
                          (long long)C);
    if (bf16 && cb == 1)
        return convb_pack_stem_bf16(w, M, C, KH, KW, layout, state, size);
    if (bf16 && cb != 16)
        return poprt__err(POPRT_STATUS_INTERNAL,
                          "bfloat16 blocked convolution weights of %lld channels", (long long)C);
    if (bf16 && G != 1)
        return poprt__err(POPRT_STATUS_INTERNAL,
                          "bfloat16 blocked convolution weights of %lld groups", (long long)G);
    const int64_t n_og = poprt__ceil_div(M, CONVB_GROUP);
    /* floats per group (the last may use fewer); bf16: words, half as many */
    const int64_t w_group = ncb * KH * KW * cb * CONVB_GROUP;
    const int64_t per = bf16 ? w_group / 2 : w_group;
    const size_t total = CONV_PACK_HEADER + (size_t)(G * n_og * per) * sizeof(float);
    unsigned char *blob = poprt__aligned_alloc(total);
    float *stage = bf16 ? poprt__malloc((size_t)w_group * sizeof(float)) : NULL;
    if (!blob || (bf16 && !stage)) {
        poprt__aligned_free(blob);
        poprt__free(stage);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    }
    memset(blob, 0, total);
    uint64_t h[8] = {bf16 ? CONV_BLOCKED_BF16_MAGIC : CONV_BLOCKED_MAGIC, (uint64_t)M,
                     (uint64_t)C, (uint64_t)KH, (uint64_t)KW, (uint64_t)per, (uint64_t)layout,
                     (uint64_t)cb};
    memcpy(blob, h, sizeof h);
    float *dst = (float *)(blob + CONV_PACK_HEADER);
    for (int64_t gi = 0; gi < G; gi++, w += M * C * KH * KW, dst += n_og * per)
    for (int64_t og = 0; og < n_og; og++) {
        const int64_t oc0 = og * CONVB_GROUP;
        const int64_t mc = M - oc0 < CONVB_GROUP ? M - oc0 : CONVB_GROUP;
        const int64_t width = poprt__ceil_div(mc, 16) * 16;
        /* float32: [cbi][kh][kw][i][o]; bfloat16: [cbi][kh][kw][i/2][o][i%2],
         * then turned into words */
        float *wg = bf16 ? stage : dst + og * w_group;
        if (bf16)
            memset(stage, 0, (size_t)w_group * sizeof(float));
        for (int64_t cbi = 0; cbi < ncb; cbi++)
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++)
                    for (int64_t i = 0; i < cb; i++) {
                        const int64_t row = ((cbi * KH + kh) * KW + kw) * cb;
                        for (int64_t m = 0; m < mc; m++) {
                            const float e = w[(((oc0 + m) * C + cbi * cb + i) * KH + kh) * KW + kw];
                            if (bf16)
                                wg[(row + (i & ~(int64_t)1)) * width + 2 * m + (i & 1)] = e;
                            else
                                wg[convb_wpos(layout, row + i, m, width, ncb * KH * KW * cb)] = e;
                        }
                    }
        if (bf16) /* (the packed rows hold width words: 2 * width floats per pair) */
            poprt__convb_words_avx512(stage, ncb * KH * KW * 8 * width,
                                      (uint32_t *)dst + og * per);
    }
    poprt__free(stage);
    *state = blob;
    *size = total;
    return POPRT_OK;
}

poprt_status poprt__x86_convb_pack(const poprt__convb_variant *v, const float *w, int64_t M,
                                   int64_t C, int64_t KH, int64_t KW, int bf16, void **state,
                                   size_t *size)
{
    return convb_pack_groups(v, w, 1, M, C, KH, KW, bf16, state, size);
}

poprt_status poprt__x86_convb_pack_grouped(const poprt__convb_variant *v, const float *w,
                                           int64_t G, int64_t Mg, int64_t Cg, int64_t KH,
                                           int64_t KW, void **state, size_t *size)
{
    if (!poprt__x86_convb_grouped_fits(G * Cg, G * Mg, G))
        return poprt__err(POPRT_STATUS_INTERNAL,
                          "blocked convolution weights of %lld groups of %lld x %lld channels",
                          (long long)G, (long long)Mg, (long long)Cg);
    return convb_pack_groups(v, w, G, Mg, Cg, KH, KW, 0, state, size);
}

int poprt__x86_convb_grouped_fits(int64_t C, int64_t M, int64_t G)
{
    return G > 1 && C % G == 0 && M % G == 0 && C / G % 16 == 0 && M / G % 16 == 0;
}

/* The weights poprt__x86_convb_pack made for this conv, when the blocked path can run
 * them on this CPU (*w_group: floats per group of output channels); else
 * NULL (no such blob, or one made for another shape). */
int poprt__x86_convb_state_magic(const void *state, size_t size)
{
    uint64_t h = 0;
    if (state && size >= sizeof h)
        memcpy(&h, state, sizeof h);
    return h == CONV_BLOCKED_MAGIC ? 1 : h == CONV_BLOCKED_BF16_MAGIC ? 2 : 0;
}

const void *poprt__x86_convb_state(const poprt__kctx *k, const poprt__conv_plan *p,
                                   const poprt__convb_variant *v, int64_t *w_group, int *bf16)
{
    const poprt__geom3 *g = &p->g;
    if (!k->state || k->state_size < CONV_PACK_HEADER || !poprt__x86_convb_fits(g, 1) ||
        (p->G != 1 && !poprt__x86_convb_grouped_fits(p->C, p->M, p->G)) ||
        !poprt__convb_usable(v))
        return NULL;
    uint64_t h[8];
    memcpy(h, k->state, sizeof h);
    const uint64_t floats = (k->state_size - CONV_PACK_HEADER) / sizeof(float);
    *bf16 = h[0] == CONV_BLOCKED_BF16_MAGIC;
    if ((h[0] != CONV_BLOCKED_MAGIC && !*bf16) || (*bf16 && !poprt__convb_bf16_usable()) ||
        (*bf16 && p->C % 16 && !poprt__x86_convb_stem_bf16_fits(g, p->C)) ||
        (*bf16 && p->G != 1) || h[1] != (uint64_t)p->Mg || h[2] != (uint64_t)p->Cg ||
        h[3] != (uint64_t)g->k[1] || h[4] != (uint64_t)g->k[2] || h[5] == 0 ||
        h[6] != (uint64_t)convb_layout(v, *bf16) ||
        (!*bf16 && h[7] != (uint64_t)convb_cb(v, p->Cg)) ||
        (uint64_t)(p->G * poprt__ceil_div(p->Mg, CONVB_GROUP)) > floats / h[5])
        return NULL;
    *w_group = (int64_t)h[5];
    return (const unsigned char *)k->state + CONV_PACK_HEADER;
}

/* ---- Winograd F(2x2, 3x3), F(4x4, 3x3) and F(4, 3) (conv_blocked.h) ----------------------
 * For 3x3, 3x1 and 1x3 convolutions of stride 1 and dilation 1, one group,
 * input channels blocked by 16 with zeros past C (conv_paths.h:
 * poprt__x86_convw_fits). Output tiles of eh x ew positions (2 x 2, 4 x 4;
 * 4 x 1 and 1 x 4 along one axis) from (eh + KH - 1) x (ew + KW - 1) input
 * patches, np products, one per patch position. Three passes, each split over the threads: the input
 * blocked and zero-padded as the direct path does it, then transformed tile
 * row by tile row into V[xi][n][cbi][tile][16]; the np products, each a 1x1
 * blocked convolution of the tiles (the variant's run, weights U[xi] packed
 * per group of 64 outputs as poprt__x86_convb_pack packs a 1x1 conv) into
 * P[xi][n][m block][tile][16]; then each output block's tile rows back into
 * Y with the bias, and the residual and Relu in the registers where the
 * blocked path puts them there (else the epilogue after). When an image's
 * tiles make enough chunks of a few dozen, the last three steps are fused
 * instead (convw_fused_fn): each chunk's V, products and output while they
 * are in L2, in a few MiB of scratch instead of all of V and P. 2.25
 * (e = 2) or 4 (e = 4) times fewer products than the direct path; the sums
 * are the same for every thread count. */

#define CONV_WINO_MAGIC 0x31574b4243525050ull /* "PPRCBKW1" */
/* U as bfloat16 pair words (F(2x2, 3x3) only): the products on VDPBF16PS */
#define CONV_WINO_BF16_MAGIC 0x32574b4243525050ull /* "PPRCBKW2" */

/* The choice (poprt__x86_convw_fits without force). Measured on a Zen 4
 * core (bench/README.md, "Winograd F(4x4, 3x3)"), single 3x3 convs of C
 * channels at H x H against the direct blocked path: F(4x4, 3x3) was the
 * fastest of the three at every size from 7 x 7 to 112 x 112 and 16 to 512
 * channels but 512 at 7 x 7 (F(2x2, 3x3) 1.4x direct's speed, F(4x4, 3x3)
 * 1.3x: 37 MB of transformed weights): 1.6-3.3x direct's speed from 32
 * channels, 1.1x for 16 channels at 14 x 14; F(2x2, 3x3) 1.0-2.1x.
 * Accuracy decides between the two: against float64 sums, F(2x2, 3x3)'s
 * errors are 2-4x smaller than the direct sums' (each
 * product sums C terms, not 9 C), F(4x4, 3x3)'s RMS error is 1.4x the
 * direct sums' at 64 channels, 2.1x at 128 and 2.6x at 512 (largest error
 * 3-4x), growing with the channels. So: F(4x4, 3x3) up to
 * CONVW4_MAX_CHANNELS input channels, F(2x2, 3x3) above; the direct sums
 * where there are too few tiles for the transformed weights ((e + 2)^2 C M
 * floats against 9 C M) to pay. On a Sapphire Rapids core, whose direct
 * path runs at twice the FMA rate, F(2x2, 3x3) of 512 channels at 7 x 7 was
 * 0.94x the direct path's speed; here F(2x2, 3x3) of 512 channels at 7 x 7
 * was 1.4x faster alone, but light_resnet50 with it ran no faster (64.2-74.3
 * against 64.9-67.1 ms, alternated: its 16.8 MB of transformed weights per
 * conv come from memory on every run) and took 13 MiB more: hence 32 tiles
 * of 2 x 2 (12 x 12 and larger) for F(2x2, 3x3). */
#define CONVW4_MAX_CHANNELS 128
#define CONVW4_MIN_TILES 4       /* 4x4 tiles: 7 x 7 outputs and larger */
#define CONVW4_FEW_CHANNELS 32   /* fewer: only from CONVW4_MANY_TILES */
#define CONVW4_MANY_TILES 49     /* 28 x 28 */
#define CONVW_MIN_TILES 32       /* 2x2 tiles: 12 x 12 (see above) */
#define CONVW1_MIN_TILES 16      /* F(4, 3) along one axis */

/* What the kernels take: one group, 3x3, stride 1, dilation 1, outputs of
 * at least 2 x 2; any number of channels (input channels are blocked by 16
 * with zeros past C, the last output block's products computed for 16). */
static int convw_kernels_fit(const poprt__geom3 *g, int64_t G, int64_t C, int64_t M)
{
    const int k33 = g->k[1] == 3 && g->k[2] == 3, k31 = g->k[1] == 3 && g->k[2] == 1,
              k13 = g->k[1] == 1 && g->k[2] == 3;
    return poprt__x86_convb_fits(g, G) && C > 0 && M > 0 && (k33 || k31 || k13) &&
           g->s[1] == 1 && g->s[2] == 1 && g->d[1] == 1 && g->d[2] == 1 &&
           (k13 || g->out[1] >= 2) && (k31 || g->out[2] >= 2);
}

/* Tiles of eh x ew outputs per image */
static int64_t convw_tiles(const poprt__geom3 *g, int64_t eh, int64_t ew)
{
    return ((g->out[1] + eh - 1) / eh) * ((g->out[2] + ew - 1) / ew);
}

int poprt__x86_convw_fits(const poprt__geom3 *g, int64_t G, int64_t C, int64_t M, int force)
{
    if (!convw_kernels_fit(g, G, C, M))
        return 0;
    const int one_d = g->k[1] == 1 || g->k[2] == 1; /* F(4, 3) along one axis */
    if (force == 2 || force == 4)
        return one_d ? 4 : force;
    /* AVX2 (weights by block): a single input block of 16 channels lost
     * to the direct tiles, which then read whole blocks too:
     * light_squeezenet's 16 -> 64 3x3 convs at 55 x 55 took 0.76-0.79 ms
     * each direct against 0.91-1.06 in F(4x4, 3x3) (Zen 3, 1 thread, two
     * runs each; its 32-channel ones at 27 x 27 1.46 against 1.07) */
    const poprt__convb_variant *bv = poprt__convb_best();
    if (!one_d && C == 16 && bv && bv->wlayout == POPRT__CONVB_BY_BLOCK)
        return 0;
    /* input channels padded to a block of 16: at most a third more products
     * (24 -> 32, 72 -> 80; not a 3-channel stem) */
    if (3 * poprt__ceil_div(C, 16) * 16 > 4 * C)
        return 0;
    /* along one axis: 2x fewer products, one transform's roundings (any C);
     * padding both C and M by a third ate the saving (oww_embedding's 24 x 24
     * 1x3 and 3x1 convs took 1.5x the direct tiles' time, its 72 x 72 ones
     * 0.65-0.85x) */
    if (one_d && 2 * poprt__ceil_div(C, 16) * 16 * poprt__ceil_div(M, 16) * 16 > 3 * C * M)
        return 0;
    if (one_d)
        return convw_tiles(g, g->k[1] == 1 ? 1 : 4, g->k[2] == 1 ? 1 : 4) >= CONVW1_MIN_TILES ? 4
                                                                                          : 0;
    const int64_t t4 = convw_tiles(g, 4, 4);
    if (C <= CONVW4_MAX_CHANNELS)
        return t4 >= CONVW4_MANY_TILES || (C >= CONVW4_FEW_CHANNELS && t4 >= CONVW4_MIN_TILES)
                   ? 4
                   : 0;
    return convw_tiles(g, 2, 2) >= CONVW_MIN_TILES ? 2 : 0;
}

/* G of F(4, 3) (conv_blocked.h) */
static const double convw_g4[6][3] = {{1.0 / 4, 0, 0},
                                      {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                      {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                      {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                      {0, 0, 1}};

/* U of one kernel g, in double: G g G^T of a 3x3 kernel for tile edge e
 * (e + 2 rows of G), u[(e + 2) * (e + 2)]; G g of a 3x1 or 1x3 kernel
 * (one_d, e = 4), u[6] */
static void convw_weights(const float *g, int e, int one_d, double *u)
{
    /* the rows of G (conv_blocked.h) */
    static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
    const int a = e + 2;
    const double(*G)[3] = e == 4 ? convw_g4 : G2;
    if (one_d) {
        for (int i = 0; i < a; i++)
            u[i] = G[i][0] * g[0] + G[i][1] * g[1] + G[i][2] * g[2];
        return;
    }
    double gg[6][3]; /* G g */
    for (int i = 0; i < a; i++)
        for (int j = 0; j < 3; j++)
            gg[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
    for (int i = 0; i < a; i++)
        for (int j = 0; j < a; j++)
            u[i * a + j] = gg[i][0] * G[j][0] + gg[i][1] * G[j][1] + gg[i][2] * G[j][2];
}

poprt_status poprt__x86_convw_pack(const poprt__convb_variant *v, const float *w, int64_t M,
                                   int64_t C, int64_t KH, int64_t KW, int tile, int bf16,
                                   void **state, size_t *size)
{
    const int layout = convb_layout(v, bf16);
    const int one_d = (KH == 3 && KW == 1) || (KH == 1 && KW == 3);
    if (C <= 0 || M <= 0 || (tile != 2 && tile != 4) || !(one_d || (KH == 3 && KW == 3)) ||
        (one_d && tile != 4) || (bf16 && (tile != 2 || one_d || !poprt__convb_bf16_usable())))
        return poprt__err(POPRT_STATUS_INTERNAL,
                          "Winograd weights of %lld x %lld channels, %lld x %lld, tile %d%s",
                          (long long)M, (long long)C, (long long)KH, (long long)KW, tile,
                          bf16 ? ", bfloat16" : "");
    const int np = one_d ? tile + 2 : (tile + 2) * (tile + 2);
    const int64_t n_og = poprt__ceil_div(M, CONVB_GROUP), ncb = poprt__ceil_div(C, 16);
    /* floats per (xi, group), zero past C; bfloat16: words, half as many */
    const int64_t w_group = ncb * 16 * CONVB_GROUP / (bf16 ? 2 : 1);
    const size_t total = CONV_PACK_HEADER + (size_t)(np * n_og * w_group) * sizeof(float);
    unsigned char *blob = poprt__aligned_alloc(total);
    /* bfloat16: U in float32 first, as pairs [xi][og][cbi][i / 2][o][i % 2] */
    float *stage = bf16 ? poprt__malloc((size_t)(np * n_og * w_group * 2) * sizeof(float)) : NULL;
    if (!blob || (bf16 && !stage)) {
        poprt__aligned_free(blob);
        poprt__free(stage);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    }
    memset(blob, 0, total);
    if (stage)
        memset(stage, 0, (size_t)(np * n_og * w_group * 2) * sizeof(float));
    /* h[7]: the tile edge (0 in files written before F(4x4, 3x3): 2) */
    const uint64_t h[8] = {bf16 ? CONV_WINO_BF16_MAGIC : CONV_WINO_MAGIC,
                           (uint64_t)M,
                           (uint64_t)C,
                           (uint64_t)KH,
                           (uint64_t)KW,
                           (uint64_t)w_group,
                           (uint64_t)layout,
                           (uint64_t)tile};
    memcpy(blob, h, sizeof h);
    float *dst = (float *)(blob + CONV_PACK_HEADER);
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < C; c++) {
            double u[36];
            convw_weights(w + (m * C + c) * KH * KW, tile, one_d, u); /* rounded once */
            /* as a 1x1 conv's packed weights: group og, [cbi][i][nb * 16]
             * (by block: [n][cbi][i][16]) */
            const int64_t og = m / CONVB_GROUP, mo = m % CONVB_GROUP;
            const int64_t mc = M - og * CONVB_GROUP < CONVB_GROUP ? M - og * CONVB_GROUP
                                                                   : CONVB_GROUP;
            const int64_t width = poprt__ceil_div(mc, 16) * 16;
            for (int xi = 0; xi < np; xi++)
                if (bf16) /* (rows of width words: 2 * width floats per pair) */
                    stage[(xi * n_og + og) * w_group * 2 + (c & ~(int64_t)1) * width + 2 * mo +
                          (c & 1)] = (float)u[xi];
                else
                    dst[(xi * n_og + og) * w_group +
                        convb_wpos(layout, c, mo, width, ncb * 16)] = (float)u[xi];
        }
    if (bf16) {
        for (int64_t xo = 0; xo < np * n_og; xo++) { /* rounded to nearest even */
            const int64_t og = xo % n_og, oc0 = og * CONVB_GROUP;
            const int64_t width = poprt__ceil_div(M - oc0 < CONVB_GROUP ? M - oc0 : CONVB_GROUP,
                                                  16) * 16;
            poprt__convb_words_avx512(stage + xo * w_group * 2, ncb * 8 * width,
                                      (uint32_t *)dst + xo * w_group);
        }
        poprt__free(stage);
    }
    *state = blob;
    *size = total;
    return POPRT_OK;
}

int poprt__x86_convb_layout_current(const void *state, size_t size)
{
    uint64_t h[8];
    const poprt__convb_variant *v = poprt__convb_best();
    if (!v || !state || size < sizeof h)
        return 0;
    memcpy(h, state, sizeof h);
    /* float32 direct weights: also blocked by the channels per block that v
     * takes (h[7]; files from before it was kept hold 0) */
    return h[6] == (uint64_t)v->wlayout &&
           (h[0] != CONV_BLOCKED_MAGIC || h[7] == (uint64_t)convb_cb(v, (int64_t)h[2]));
}

int poprt__x86_convw_state_magic(const void *state, size_t size)
{
    uint64_t h = 0;
    if (state && size >= sizeof h)
        memcpy(&h, state, sizeof h);
    return h == CONV_WINO_MAGIC ? 1 : h == CONV_WINO_BF16_MAGIC ? 2 : 0;
}

const void *poprt__x86_convw_state(const poprt__kctx *k, const poprt__conv_plan *p,
                                   const poprt__convb_variant *v, int64_t *w_group, int *tile,
                                   int *bf16)
{
    /* what the kernels need, not the choice's thresholds */
    if (!k->state || k->state_size < CONV_PACK_HEADER || !poprt__convb_usable(v) ||
        !convw_kernels_fit(&p->g, p->G, p->C, p->M) || (p->yblk && p->M % 16))
        return NULL;
    uint64_t h[8];
    memcpy(h, k->state, sizeof h);
    const uint64_t floats = (k->state_size - CONV_PACK_HEADER) / sizeof(float);
    const uint64_t n_og = (uint64_t)poprt__ceil_div(p->M, CONVB_GROUP);
    const uint64_t e = h[7] ? h[7] : 2;
    const uint64_t np = p->g.k[1] == 1 || p->g.k[2] == 1 ? e + 2 : (e + 2) * (e + 2);
    const int words = h[0] == CONV_WINO_BF16_MAGIC;
    if ((h[0] != CONV_WINO_MAGIC && !words) || (words && (e != 2 || !poprt__convb_bf16_usable())) ||
        h[1] != (uint64_t)p->M || h[2] != (uint64_t)p->C || h[3] != (uint64_t)p->g.k[1] ||
        h[4] != (uint64_t)p->g.k[2] ||
        h[5] != (uint64_t)(poprt__ceil_div(p->C, 16) * 16 * CONVB_GROUP / (words ? 2 : 1)) ||
        h[6] != (uint64_t)convb_layout(v, words) || (e != 2 && e != 4) ||
        np * n_og > floats / h[5])
        return NULL;
    *w_group = (int64_t)h[5];
    *tile = (int)e;
    *bf16 = words;
    return (const unsigned char *)k->state + CONV_PACK_HEADER;
}

typedef struct convw_job {
    convb_job b;          /* the blocked input (b.xb), the plan, the variant */
    const void *u;        /* U[xi][og] at (xi * n_og + og) * w_group */
    float *v, *pr;        /* V and the products */
    /* bfloat16 U: the products read V as pair words, vw (the three-pass
     * form: [xi][n][cbi][tile][8]; g1 in words) */
    int bf16;
    uint32_t *vw;
    int64_t eh, ew, np;   /* tile rows and columns (2 x 2, 4 x 4, 4 x 1, 1 x 4), products */
    poprt__convw_in_fn *in;   /* the transforms of this tile */
    poprt__convw_out_fn *out;
    int64_t Mp;           /* M rounded up to a block of 16 */
    int64_t th, tw, T;    /* tile rows, tiles per row, tiles per image */
    int64_t vstep, pstep; /* floats between xi planes of V and of the products */
    int64_t chunk, nchunks, cstep;
    poprt__convb_geom g1; /* the products' 1x1 geometry over the tiles */
    int in_regs, relu, epi_after;
    /* the fused form: items (image, chunk of `chunk` tiles) in lanes, each
     * with lane_floats of scratch at v + lane * lane_floats */
    int64_t items, lanes, lane_floats;
} convw_job;

/* The run of tiles from tile q of an image within its tile row, up to q1:
 * the row ty, first column tx and length. */
static int64_t convw_run_of(const convw_job *t, int64_t q, int64_t q1, int64_t *ty, int64_t *tx)
{
    *ty = q / t->tw;
    *tx = q % t->tw;
    return t->tw - *tx < q1 - q ? t->tw - *tx : q1 - q;
}

/* Product xi of output group og: U[xi] . V[xi] over nq positions of x
 * (laid out by g1) into out (blocks ldo positions apart), the input blocks
 * cstep at a time while their weights stay in L1. */
static void convw_product(const convw_job *t, const void *x, const poprt__convb_geom *g1,
                          int64_t xi, int64_t og, int64_t nq, float *out, int64_t ldo)
{
    const int64_t ncb = g1->ncb, oc0 = og * CONVB_GROUP, M = t->b.p->M;
    const int nb = (int)(((M - oc0 < CONVB_GROUP ? M - oc0 : CONVB_GROUP) + 15) / 16);
    if (t->bf16) { /* 8 pair words per input block and output */
        const uint32_t *w = (const uint32_t *)t->u + (xi * t->b.n_og + og) * t->b.w_group;
        const int64_t wstep = 8 * nb * 16;
        for (int64_t c0 = 0; c0 < ncb; c0 += t->cstep) {
            const int64_t c1 = c0 + t->cstep < ncb ? c0 + t->cstep : ncb;
            poprt__convb_run_bf16_avx512(x, w, NULL, nb, g1, 0, nq, c0, c1, c0 > 0, out, ldo,
                                         NULL, 0, w + c1 * wstep, 4 * t->cstep * wstep);
        }
        return;
    }
    const float *w = (const float *)t->u + (xi * t->b.n_og + og) * t->b.w_group;
    const int64_t wstep = 16 * nb * 16; /* floats per input block */
    /* the next step's weights follow these in the interleaved layout; by
     * block they are each block's own stream, which the hardware follows */
    for (int64_t c0 = 0; c0 < ncb; c0 += t->cstep) {
        const int64_t c1 = c0 + t->cstep < ncb ? c0 + t->cstep : ncb;
        t->b.v->run(x, w, NULL, nb, g1, 0, nq, c0, c1, c0 > 0, out, ldo, NULL, 0,
                    t->b.by_block ? NULL : w + c1 * wstep, 4 * t->cstep * wstep);
    }
}

/* The epilogue the output transform left (epi_after) on rows of cols
 * outputs from Y's yoff, OW apart, for the block's nch channels: parts of
 * rows (whole rows: convw_epi_rows). */
static void convw_epilogue(const convw_job *t, int64_t yoff, int rows, int64_t cols, int nch)
{
    const poprt__conv_plan *p = t->b.p;
    const int64_t OW = p->g.out[2], OHW = p->g.out_sz;
    for (int r = 0; r < rows; r++) {
        if (t->b.yblk)
            poprt__x86_conv_epilogue(p, t->b.y, yoff + r * OW * 16, cols * 16);
        else
            for (int64_t i = 0; i < nch; i++)
                poprt__x86_conv_epilogue(p, t->b.y, yoff + i * OHW + r * OW, cols);
    }
}

/* Tile rows r = (n * ncb + cbi) * th + ty of V. */
static void convw_in_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convw_job *t = ctx;
    const int64_t Wp = t->b.g.Wp;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ty = r % t->th, nc = r / t->th; /* nc = n * ncb + cbi */
        const float *xb = t->b.xb + nc * t->b.g.plane + ty * t->eh * Wp * 16;
        float *v = t->v + (nc * t->T + ty * t->tw) * 16;
        t->in(xb, Wp, t->tw, v, t->vstep);
        for (int64_t xi = 0; t->bf16 && xi < t->np; xi++) /* the row's V as pair words */
            poprt__convb_words_avx512(v + xi * t->vstep, t->tw * 8,
                                      t->vw + xi * (t->vstep / 2) + (nc * t->T + ty * t->tw) * 8);
    }
}

/* Items (xi, n, og, chunk), the chunk fastest: a lane's consecutive items
 * share their weights. */
static void convw_mul_fn(void *ctx, int64_t i0, int64_t i1)
{
    const convw_job *t = ctx;
    const poprt__conv_plan *p = t->b.p;
    const int64_t ncb = t->g1.ncb, n_og = t->b.n_og, N = p->N;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t ch = it % t->nchunks, og = (it / t->nchunks) % n_og;
        const int64_t n = (it / t->nchunks / n_og) % N, xi = it / t->nchunks / n_og / N;
        const int64_t q0 = ch * t->chunk, q1 = q0 + t->chunk < t->T ? q0 + t->chunk : t->T;
        /* positions [q0, q1) of the image's V[xi] */
        const void *x = t->bf16 ? (const void *)(t->vw + xi * (t->vstep / 2) +
                                                 n * ncb * t->g1.plane + q0 * 8)
                                : (const void *)(t->v + xi * t->vstep + n * ncb * t->g1.plane +
                                                 q0 * 16);
        float *out = t->pr + xi * t->pstep + (n * t->Mp + og * CONVB_GROUP) * t->T + q0 * 16;
        convw_product(t, x, &t->g1, xi, og, q1 - q0, out, t->T);
    }
}

/* The epilogue on output rows [oh0, oh1) of image n's block ob (nch
 * channels): one run per channel, or one for the block (NCHW16c). */
static void convw_epi_rows(const convw_job *t, int64_t n, int64_t ob, int64_t oh0, int64_t oh1,
                           int nch)
{
    const poprt__conv_plan *p = t->b.p;
    const int64_t OW = p->g.out[2], OHW = p->g.out_sz, base = (n * p->M + ob * 16) * OHW;
    if (t->b.yblk)
        poprt__x86_conv_epilogue(p, t->b.y, base + oh0 * OW * 16, (oh1 - oh0) * OW * 16);
    else
        for (int i = 0; i < nch; i++)
            poprt__x86_conv_epilogue(p, t->b.y, base + i * OHW + oh0 * OW, (oh1 - oh0) * OW);
}

/* Tile rows r = (n * (Mp / 16) + ob) * th + ty of Y. The epilogue left to
 * do runs once per run of a block's consecutive tile rows (one per tile
 * row was a call per channel for a few outputs on small images). */
static void convw_out_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convw_job *t = ctx;
    const poprt__conv_plan *p = t->b.p;
    const int64_t OW = p->g.out[2], OH = p->g.out[1], OHW = p->g.out_sz, nob = t->Mp / 16;
    int64_t en = -1, eob = 0, eoh0 = 0, eoh1 = 0; /* the rows whose epilogue is pending */
    int enc = 0;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ty = r % t->th, nob_i = r / t->th, ob = nob_i % nob, n = nob_i / nob;
        const int64_t oh = t->eh * ty;
        const int rows = (int)(OH - oh < t->eh ? OH - oh : t->eh);
        /* the products' block ob of image n, tile row ty */
        const float *m = t->pr + (n * t->Mp + ob * 16) * t->T + ty * t->tw * 16;
        const int nch = (int)(p->M - ob * 16 < 16 ? p->M - ob * 16 : 16);
        const int64_t yoff = t->b.yblk ? (n * p->M + ob * 16) * OHW + oh * OW * 16
                                       : (n * p->M + ob * 16) * OHW + oh * OW;
        const float *z = t->in_regs && p->z ? p->z + yoff : NULL;
        const float *bias = t->b.b ? t->b.b + ob * 16 : NULL;
        t->out(m, t->pstep, t->tw, bias, rows, OW, OW, z, t->relu, t->b.yblk, t->b.y + yoff, OHW,
               nch);
        if (!t->epi_after)
            continue;
        if (en == n && eob == ob && eoh1 == oh) {
            eoh1 = oh + rows;
            continue;
        }
        if (en >= 0)
            convw_epi_rows(t, en, eob, eoh0, eoh1, enc);
        en = n, eob = ob, eoh0 = oh, eoh1 = oh + rows, enc = nch;
    }
    if (en >= 0)
        convw_epi_rows(t, en, eob, eoh0, eoh1, enc);
}

/* The fused form's lanes: each item transforms its chunk of tiles into the
 * lane's V, runs the products into the lane's P and transforms them back
 * into Y, while they are in cache (the three-pass form sends all of V and
 * P through memory, and reads V once per group of 64 outputs). */
static void convw_fused_fn(void *ctx, int64_t l0, int64_t l1)
{
    const convw_job *t = ctx;
    const poprt__conv_plan *p = t->b.p;
    const int64_t ncb = t->b.g.ncb, n_og = t->b.n_og, ct = t->chunk, nob = t->Mp / 16;
    const int64_t OW = p->g.out[2], OH = p->g.out[1], OHW = p->g.out_sz, Wp = t->b.g.Wp;
    /* V of a chunk [cbi][tile][xi][16]: each tile's transform stores one
     * run; the products read V[xi] as a 1x1 conv of column stride np.
     * bfloat16: V [xi][cbi][tile][16], a transform per run of tiles, then
     * each xi's pair words [xi][cbi][tile][8] after P: the products read
     * them at column stride 1 (the tiles' one-pointer loop) */
    const int64_t np = t->np, vsize = ncb * ct * np * 16, pstep = t->Mp * ct;
    const poprt__convb_geom g1 =
        t->bf16 ? (poprt__convb_geom){.cb = 16, .ncb = ncb, .Wp = ct, .plane = ct * 8, .KH = 1,
                                      .KW = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .OW = ct}
                : (poprt__convb_geom){.cb = 16, .ncb = ncb, .Wp = ct * np, .plane = ct * np * 16,
                                      .KH = 1, .KW = 1, .sh = 1, .sw = np, .dh = 1, .dw = 1,
                                      .OW = ct};
    for (int64_t l = l0; l < l1; l++) {
        float *vc = t->v + l * t->lane_floats, *pc = vc + vsize, *tb = pc + np * pstep;
        uint32_t *vwc = (uint32_t *)(tb + t->eh * t->ew * 16 * ct);
        const int64_t i0 = l * t->items / t->lanes, i1 = (l + 1) * t->items / t->lanes;
        for (int64_t it = i0; it < i1; it++) {
            const int64_t n = it / t->nchunks, q0 = it % t->nchunks * ct;
            const int64_t q1 = q0 + ct < t->T ? q0 + ct : t->T;
            for (int64_t q = q0, ty, tx, len; q < q1; q += len) {
                len = convw_run_of(t, q, q1, &ty, &tx);
                for (int64_t cbi = 0; cbi < ncb; cbi++) {
                    const float *xb = t->b.xb + (n * ncb + cbi) * t->b.g.plane +
                                      (ty * t->eh * Wp + tx * t->ew) * 16;
                    if (t->bf16)
                        t->in(xb, Wp, len, vc + (cbi * ct + q - q0) * 16, ncb * ct * 16);
                    else
                        for (int64_t j = 0; j < len; j++)
                            t->in(xb + j * t->ew * 16, Wp, 1,
                                  vc + (cbi * ct + q - q0 + j) * np * 16, 16);
                }
            }
            for (int64_t xi = 0; t->bf16 && xi < np; xi++)
                for (int64_t cbi = 0; cbi < ncb; cbi++)
                    poprt__convb_words_avx512(vc + (xi * ncb + cbi) * ct * 16, (q1 - q0) * 8,
                                              vwc + (xi * ncb + cbi) * ct * 8);
            for (int64_t xi = 0; xi < np; xi++)
                for (int64_t og = 0; og < n_og; og++)
                    convw_product(t,
                                  t->bf16 ? (const void *)(vwc + xi * ncb * ct * 8)
                                          : (const void *)(vc + xi * 16),
                                  &g1, xi, og, q1 - q0, pc + xi * pstep + og * CONVB_GROUP * ct,
                                  ct);
            for (int64_t q = q0, ty, tx, len; q < q1; q += len) {
                len = convw_run_of(t, q, q1, &ty, &tx);
                const int64_t oh = t->eh * ty, ox = t->ew * tx;
                const int rows = (int)(OH - oh < t->eh ? OH - oh : t->eh);
                const int64_t cols = t->ew * len < OW - ox ? t->ew * len : OW - ox;
                for (int64_t ob = 0; ob < nob; ob++) {
                    const int nch = (int)(p->M - ob * 16 < 16 ? p->M - ob * 16 : 16);
                    const int64_t base = (n * p->M + ob * 16) * OHW;
                    const int64_t yoff =
                        t->b.yblk ? base + (oh * OW + ox) * 16 : base + oh * OW + ox;
                    const float *z = t->in_regs && p->z ? p->z + yoff : NULL;
                    const float *m = pc + (ob * ct + q - q0) * 16;
                    const float *bias = t->b.b ? t->b.b + ob * 16 : NULL;
                    if (t->b.yblk)
                        t->out(m, pstep, len, bias, rows, OW, OW - ox, z, t->relu, 1,
                               t->b.y + yoff, OHW, nch);
                    else { /* blocked into tb, then each row transposed into the planes
                            * (the transform's scatter stores cost more) */
                        t->out(m, pstep, len, bias, rows, t->ew * len, cols, NULL, t->relu, 1,
                               tb, 0, 16);
                        for (int r = 0; t->epi_after && !p->z && r < rows; r++)
                            /* elementwise: on each row's blocks (its cols
                             * written positions), before the transposition */
                            poprt__x86_conv_epilogue(p, tb, r * t->ew * len * 16, cols * 16);
                        for (int r = 0; r < rows; r++)
                            t->b.v->transpose_bias(tb + r * t->ew * len * 16, 16, cols, nch, NULL,
                                                   0, t->b.y + yoff + r * OW, OHW);
                    }
                    if (t->epi_after && (t->b.yblk || p->z)) {
                        if (cols == OW) /* (ox is 0) */
                            convw_epi_rows(t, n, ob, oh, oh + rows, nch);
                        else
                            convw_epilogue(t, yoff, rows, cols, nch);
                    }
                }
            }
        }
    }
}

/* Scratch of the fused form per lane: V and P of a chunk, about this many
 * bytes (in L2 with the chunk's share of the weights). */
#define CONVW_CHUNK_BYTES (512 << 10)

poprt_status poprt__x86_conv_winograd(poprt__kctx *k, const poprt__conv_plan *p,
                                      const poprt__convb_variant *v, const float *x,
                                      const float *b, const void *u, int64_t w_group, int tile,
                                      int bf16, float *y)
{
    const poprt__geom3 *g = &p->g;
    convw_job t = {.b = {.p = p, .x = x, .b = b, .y = y, .w_group = w_group, .xblk = p->xblk,
                         .yblk = p->yblk, .v = v,
                         .by_block = !bf16 && v->wlayout == POPRT__CONVB_BY_BLOCK},
                   .u = u,
                   .bf16 = bf16};
    if (bf16 && (tile != 2 || g->k[1] != 3 || g->k[2] != 3 || !poprt__convb_bf16_usable()))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL,
                               "bfloat16 Winograd weights for a %lld x %lld conv, tile %d",
                               (long long)g->k[1], (long long)g->k[2], tile);
    const int64_t OH = g->out[1], OW = g->out[2];
    const int64_t KH = g->k[1], KW = g->k[2];
    if (KH == 1) { /* 1x3: F(4, 3) along the rows */
        t.eh = 1, t.ew = 4, t.in = v->wino4w_in, t.out = v->wino4w_out;
    } else if (KW == 1) { /* 3x1: down the columns */
        t.eh = 4, t.ew = 1, t.in = v->wino4h_in, t.out = v->wino4h_out;
    } else if (tile == 4) {
        t.eh = t.ew = 4, t.in = v->wino4_in, t.out = v->wino4_out;
    } else {
        t.eh = t.ew = 2, t.in = v->wino_in, t.out = v->wino_out;
    }
    t.np = (t.eh + KH - 1) * (t.ew + KW - 1);
    t.th = (OH + t.eh - 1) / t.eh;
    t.tw = (OW + t.ew - 1) / t.ew;
    t.T = t.th * t.tw;
    /* the blocked input, padded to whole tiles: e th + 2 rows of e tw + 2 */
    convb_geom_of(v, g, p->C, &t.b.g, &t.b.Hp);
    t.b.g.cb = 16; /* blocks of 16 channels, the last zero past C */
    t.b.g.ncb = poprt__ceil_div(p->C, 16);
    t.b.ncb_all = t.b.g.ncb;
    t.b.g.split = 0;
    t.b.Hp = t.eh * t.th + KH - 1;
    t.b.g.Wp = t.ew * t.tw + KW - 1;
    t.b.g.plane = t.b.Hp * t.b.g.Wp * 16;
    t.b.n_og = t.b.n_og_g = poprt__ceil_div(p->M, CONVB_GROUP);
    const int64_t ncb = t.b.g.ncb;
    t.Mp = poprt__ceil_div(p->M, 16) * 16;
    t.cstep = convb_step_blocks(t.b.by_block, bf16, 1, 16);
    /* the epilogue as the blocked path applies it */
    t.in_regs = p->yblk && !p->fp8 && !p->n_post &&
                (p->act == CONV_ACT_NONE || p->act == CONV_ACT_RELU);
    t.relu = t.in_regs ? p->act == CONV_ACT_RELU : poprt__x86_conv_lone_relu(p);
    t.epi_after = poprt__x86_conv_has_epilogue(p) && !t.in_regs && !t.relu;
    /* The fused form when its chunks (V and P of a chunk in about
     * CONVW_CHUNK_BYTES, whole 6-tile runs) give every lane work; else the
     * three passes, whose items (product, group, chunk) are many. */
    const int64_t per_tile = t.np * (ncb * (bf16 ? 24 : 16) + t.Mp) * (int64_t)sizeof(float);
    int64_t ct = CONVW_CHUNK_BYTES / per_tile / 6 * 6;
    ct = ct < 6 ? 6 : ct;
    const int fused = poprt__ceil_div(t.T, ct) * p->N >= CONV_LANES;
    size_t xb_n, v_n, p_n;
    if (fused) {
        t.chunk = ct;
        t.nchunks = poprt__ceil_div(t.T, ct);
        t.items = p->N * t.nchunks;
        t.lanes = CONV_LANES;
        /* V, P, the blocked output rows; bfloat16: V's words */
        t.lane_floats = (t.np * (ncb * (bf16 ? 24 : 16) + t.Mp) + t.eh * t.ew * 16) * ct;
        v_n = (size_t)(t.lanes * t.lane_floats); /* a few MiB at most */
        p_n = 0;
    } else {
        t.g1 = (poprt__convb_geom){.cb = 16, .ncb = ncb, .Wp = t.T, .plane = t.T * (bf16 ? 8 : 16),
                                   .KH = 1, .KW = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .OW = t.T};
        t.vstep = p->N * ncb * 16 * t.T;
        t.pstep = p->N * t.Mp * t.T;
        const int64_t nch = poprt__ceil_div(t.T, CONVB_CHUNK);
        t.chunk = poprt__ceil_div(poprt__ceil_div(t.T, nch), 6) * 6;
        t.nchunks = poprt__ceil_div(t.T, t.chunk);
        if (!poprt__mul_size((size_t)t.np, (size_t)t.vstep, &v_n) ||
            !poprt__mul_size((size_t)t.np, (size_t)t.pstep, &p_n))
            return poprt__ref_oom(k);
    }
    if (!poprt__mul_size((size_t)(p->N * ncb), (size_t)t.b.g.plane, &xb_n) ||
        xb_n > SIZE_MAX / sizeof(float) || v_n > SIZE_MAX / sizeof(float) ||
        p_n > SIZE_MAX / sizeof(float) ||
        !(t.b.xb = poprt__kctx_scratch(k, xb_n * sizeof(float))) ||
        !(t.v = poprt__kctx_scratch(k, v_n * sizeof(float))) ||
        (p_n && !(t.pr = poprt__kctx_scratch(k, p_n * sizeof(float)))) ||
        (bf16 && !fused && !(t.vw = poprt__kctx_scratch(k, v_n / 2 * sizeof(uint32_t)))))
        return poprt__ref_oom(k);
    if (b && t.Mp != p->M) { /* the last block's bias, read 16 at a time */
        float *bp = poprt__kctx_scratch(k, (size_t)t.Mp * sizeof(float));
        if (!bp)
            return poprt__ref_oom(k);
        memcpy(bp, b, (size_t)p->M * sizeof(float));
        memset(bp + p->M, 0, (size_t)(t.Mp - p->M) * sizeof(float));
        t.b.b = bp;
    }
    poprt__kctx_parallel_for(k, p->N * ncb * t.b.Hp, poprt__ref_grain(t.b.g.Wp * 16, 1 << 14),
                             convb_block_task_fn, &t.b);
    if (fused) {
        poprt__kctx_parallel_for(k, t.lanes, 1, convw_fused_fn, &t);
        return POPRT_OK;
    }
    poprt__kctx_parallel_for(k, p->N * ncb * t.th,
                             poprt__ref_grain(t.tw * t.np * 16, 1 << 14), convw_in_fn, &t);
    poprt__kctx_parallel_for(k, t.np * p->N * t.b.n_og * t.nchunks, 1, convw_mul_fn, &t);
    poprt__kctx_parallel_for(k, p->N * (t.Mp / 16) * t.th,
                             poprt__ref_grain(t.tw * t.np * 16, 1 << 14), convw_out_fn, &t);
    return POPRT_OK;
}
