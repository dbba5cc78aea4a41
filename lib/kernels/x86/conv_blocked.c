/* The blocked convolution's driver (see conv_paths.h) over the kernels of
 * conv_blocked.h, and their list. */
#include <string.h>
#include "kernels/ref/util.h"
#include "kernels/x86/conv_paths.h"
#include "kernels/x86/conv_blocked.h"

#define POPRT__CONVB_VARIANT(isa, level, wlayout)                                                  \
    {#isa,                                                                                         \
     level,                                                                                        \
     wlayout,                                                                                      \
     poprt__convb_run_##isa,                                                                       \
     poprt__convb_block_##isa,                                                                     \
     poprt__convb_rows_##isa,                                                                      \
     poprt__convb_even_##isa,                                                                      \
     poprt__transpose_bias_##isa,                                                                  \
     poprt__convw_in_##isa,                                                                        \
     poprt__convw_out_##isa},
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

typedef struct convb_job {
    const poprt__conv_plan *p;
    const float *x, *b;
    const void *w;          /* packed, group og at og * w_group elements */
    float *y, *xb, *tmp;    /* tmp: per lane, 4 * 16 floats per position of a chunk */
    int64_t w_group, Hp, n_og, chunk, nchunks, cstep, items, lanes, tmp_floats;
    int chunk_major; /* items chunk, then group: all groups' weights stay in L2 */
    poprt__convb_geom g;
    const poprt__convb_variant *v;
    int xblk, yblk; /* x, y (and the residual) in NCHW16c */
    /* bfloat16 weights: the tiles read xw, the blocked input as pair words
     * (8 per position), with gw (g in words) */
    int bf16;
    uint32_t *xw;
    poprt__convb_geom gw;
} convb_job;

/* Whether the blocked path can run a conv: 2-D (or 1-D), one group. */
int poprt__x86_convb_fits(const poprt__geom3 *g, int64_t G)
{
    return G == 1 && g->in[0] == 1 && g->k[0] == 1 && g->out[0] == 1 && g->out_sz >= 1;
}

int poprt__x86_convb_worth(const poprt__convb_variant *v, int64_t C, int blocked_io)
{
    return v && (v->wlayout == POPRT__CONVB_INTERLEAVED || C % 16 == 0 || blocked_io);
}

/* Channels per input block: 16 when they divide C, else 1 (plain padded
 * planes; also for stems with 3 channels, whose weights per channel then
 * fit in L1 on their own). */
static int64_t convb_cb(int64_t C) { return C % 16 == 0 ? 16 : 1; }

/* Blocked geometry: cb channels per block, zero-padded input of Hp x Wp
 * (only the rows and columns some tap reads). */
static void convb_geom_of(const poprt__geom3 *g, int64_t C, poprt__convb_geom *cg, int64_t *Hp)
{
    cg->cb = convb_cb(C);
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

/* Rows [r0, r1) of the blocked input as pair words (bfloat16 weights). */
static void convb_words_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convb_job *t = ctx;
    const int64_t row = t->g.Wp * 16; /* floats per padded row of a block */
    poprt__convb_words_avx512(t->xb + r0 * row, (r1 - r0) * row / 2, t->xw + r0 * row / 2);
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
        const int64_t hp = r % t->Hp, cbi = (r / t->Hp) % cg->ncb, n = r / t->Hp / cg->ncb;
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
        if (cb == 16)
            t->v->block(src, HW, 16, c1 - c0, dst + c0 * 16);
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

static void convb_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const convb_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__convb_geom *cg = &t->g;
    const int64_t OHW = p->g.out_sz;
    float bias[CONVB_GROUP];
    const int relu = poprt__x86_conv_lone_relu(p); /* applied in the transposition */
    /* an NCHW16c output whose epilogue is a residual and/or a Relu gets it
     * in the registers, with the last input blocks */
    const int in_regs =
        t->yblk && !p->fp8 && !p->n_post && (p->act == CONV_ACT_NONE || p->act == CONV_ACT_RELU);
    const int regs_relu = in_regs && p->act == CONV_ACT_RELU;
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
            const int64_t oc0 = og * CONVB_GROUP;
            const int64_t mc = p->M - oc0 < CONVB_GROUP ? p->M - oc0 : CONVB_GROUP;
            const int nb = (int)((mc + 15) / 16);
            if (t->b) {
                memset(bias, 0, sizeof bias);
                memcpy(bias, t->b + oc0, sizeof(float) * (size_t)mc);
            }
            const float *xn = t->xb + n * cg->ncb * cg->plane;
            const uint32_t *xwn = t->bf16 ? t->xw + n * cg->ncb * t->gw.plane : NULL;
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
                /* the weights of the next step (or group) follow these: into
                 * L2 while these run (a small image's tiles use each weight
                 * a few times only, and the weights come from memory) */
                const char *wnext = wg + c1 * wstep * 4;
                if (t->bf16)
                    poprt__convb_run_bf16_avx512(xwn, (const uint32_t *)wg, t->b ? bias : NULL,
                                                 nb, &t->gw, q0, q1, c0, c1, c0 > 0, out, ldo,
                                                 last ? z : NULL, last && regs_relu, wnext,
                                                 4 * t->cstep * wstep);
                else
                    t->v->run(xn, (const float *)wg, t->b ? bias : NULL, nb, cg, q0, q1, c0, c1,
                              c0 > 0, out, ldo, last ? z : NULL, last && regs_relu, wnext,
                              4 * t->cstep * wstep);
            }
            if (t->yblk) {
                for (int bi = 0; !in_regs && poprt__x86_conv_has_epilogue(p) && bi < nb; bi++)
                    poprt__x86_conv_epilogue(p, t->y, out + bi * 16 * OHW - t->y, (q1 - q0) * 16);
                continue;
            }
            float *yq = t->y + (n * p->M + oc0) * OHW + q0;
            for (int bi = 0; bi < nb; bi++) {
                const int rows = (int)(mc - bi * 16 < 16 ? mc - bi * 16 : 16);
                t->v->transpose_bias(tmp + bi * (q1 - q0) * 16, 16, q1 - q0, rows, NULL,
                                             relu, yq + bi * 16 * OHW, OHW);
            }
            if (poprt__x86_conv_has_epilogue(p) && !relu)
                for (int64_t m = 0; m < mc; m++)
                    poprt__x86_conv_epilogue(p, t->y, yq + m * OHW - t->y, q1 - q0);
        }
    }
}

/* One channel per block with column stride 1 or 2 and rows of at least 16
 * columns: whole output rows straight into place
 * (the variant's rows). Items: image-major, then group, then row.
 * (Splitting the channels first, as the next MaxPool splits its planes,
 * measured no faster on light_squeezenet: the conv then reads its whole
 * input once per channel share.) */
static int convb_by_rows(const poprt__convb_geom *cg)
{
    return cg->cb == 1 && (cg->sw == 1 || cg->sw == 2) && cg->OW >= 16;
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
        for (int64_t it = i0; it < i1; it++) {
            const int64_t oh = it % OH, og = (it / OH) % t->n_og, n = it / OH / t->n_og;
            const int64_t oc0 = og * CONVB_GROUP;
            const int64_t mc = p->M - oc0 < CONVB_GROUP ? p->M - oc0 : CONVB_GROUP;
            if (t->b) {
                memset(bias, 0, sizeof bias);
                memcpy(bias, t->b + oc0, sizeof(float) * (size_t)mc);
            }
            /* NCHW16c: the group's first block; else its first row oh */
            float *yg = t->y + (n * p->M + oc0) * OHW;
            float *yr = t->yblk ? yg : yg + oh * cg->OW;
            /* row pitch of the packed weights: the group's width, or a
             * block's 16 when they are packed block by block */
            const int64_t wpitch = t->v->wlayout == POPRT__CONVB_BY_BLOCK
                                       ? 16
                                       : poprt__ceil_div(mc, 16) * 16;
            t->v->rows(t->xb + n * cg->ncb * cg->plane, (const float *)t->w + og * t->w_group,
                       wpitch, t->b ? bias : NULL, mc, cg, oh, relu, t->yblk, yr, OHW);
            if (poprt__x86_conv_has_epilogue(p) && !relu && t->yblk)
                for (int64_t bi = 0; bi < mc / 16; bi++) /* row oh of each block */
                    poprt__x86_conv_epilogue(p, t->y, yg + (bi * OHW + oh * cg->OW) * 16 - t->y,
                                             cg->OW * 16);
            else if (poprt__x86_conv_has_epilogue(p) && !relu)
                for (int64_t m = 0; m < mc; m++)
                    poprt__x86_conv_epilogue(p, t->y, yr + m * OHW - t->y, cg->OW);
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
                   .xblk = p->xblk, .yblk = p->yblk, .v = v, .bf16 = bf16};
    convb_geom_of(g, p->C, &t.g, &t.Hp);
    if (bf16 && t.g.cb != 16) /* (the packer refuses such weights) */
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL,
                               "bfloat16 blocked convolution of %lld channels", (long long)p->C);
    /* an NCHW16c input that no tap reads past (no padding) is read in
     * place, with its own row pitch and plane */
    const int in_place = p->xblk && g->pb[1] == 0 && g->pb[2] == 0 && t.Hp <= g->in[1] &&
                         t.g.Wp <= g->in[2];
    if (in_place) {
        t.Hp = g->in[1];
        t.g.Wp = g->in[2];
        t.g.plane = g->in[1] * g->in[2] * 16;
    }
    const int by_rows = !bf16 && convb_by_rows(&t.g);
    if (by_rows && t.g.sw == 2)
        t.g.split = (t.g.Wp + 1) / 2;
    t.n_og = poprt__ceil_div(p->M, CONVB_GROUP);
    if (by_rows)
        t.items = p->N * t.n_og * g->out[1];
    else {
        /* chunks of about CONVB_CHUNK positions, in whole tiles */
        const int64_t nch = poprt__ceil_div(g->out_sz, CONVB_CHUNK);
        t.chunk = poprt__ceil_div(poprt__ceil_div(g->out_sz, nch), 6) * 6;
        t.nchunks = poprt__ceil_div(g->out_sz, t.chunk);
        /* input blocks per step: their weights (64 output channels) in ~24 KiB
         * (bfloat16: 8 words per channel block and output) */
        const int64_t wblk =
            t.g.KH * t.g.KW * (bf16 ? 8 : t.g.cb) * CONVB_GROUP * (int64_t)sizeof(float);
        t.cstep = (24 << 10) / wblk;
        if (t.cstep < 1)
            t.cstep = 1;
        t.items = p->N * t.n_og * t.nchunks;
        /* on several threads, when the weights of all groups stay in L2,
         * each chunk's groups run one after the other: the chunk's input is
         * read from memory once, not once per group (a 1x1 conv at 56 x 56
         * reads 3 MB per pass; light_resnet50 at 2 threads 23.2 -> 22.2 ms;
         * on one thread, where memory keeps up, the groups' weights then
         * take turns in L1 and it was 1% slower). Same sums either way. */
        t.chunk_major = poprt__kctx_threads(k) > 1 && t.n_og > 1 &&
                        t.n_og * w_group * (int64_t)sizeof(float) <= (1 << 20);
        t.tmp_floats = 4 * 16 * t.chunk;
    }
    t.lanes = t.items < CONV_LANES ? t.items : CONV_LANES;
    if (t.yblk) /* the tiles store into the output itself */
        t.tmp_floats = 0;
    /* the blocked input, then zeros: the row tiles read up to 31 floats
     * past the last plane */
    enum { SLACK = 32 };
    size_t xb_n, tmp_n = 0;
    if (!poprt__mul_size((size_t)(p->N * t.g.ncb), (size_t)t.g.plane, &xb_n) ||
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
        poprt__kctx_parallel_for(k, p->N * t.g.ncb * t.Hp,
                                 poprt__ref_grain(t.g.Wp * t.g.cb, 1 << 14), convb_block_task_fn,
                                 &t);
    }
    if (bf16) { /* the tiles' operand: the blocked input as pair words */
        if (!(t.xw = poprt__kctx_scratch(k, (xb_n / 2 + SLACK) * sizeof(uint32_t))))
            return poprt__ref_oom(k);
        memset(t.xw + xb_n / 2, 0, SLACK * sizeof(uint32_t));
        t.gw = t.g;
        t.gw.plane = t.g.plane / 2;
        poprt__kctx_parallel_for(k, p->N * t.g.ncb * t.Hp, poprt__ref_grain(t.g.Wp * 16, 1 << 14),
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

poprt_status poprt__x86_convb_pack(const poprt__convb_variant *v, const float *w, int64_t M,
                                   int64_t C, int64_t KH, int64_t KW, int bf16, void **state,
                                   size_t *size)
{
    const int64_t cb = convb_cb(C), ncb = C / cb;
    const int layout = convb_layout(v, bf16);
    if (bf16 && (cb != 16 || !poprt__convb_bf16_usable()))
        return poprt__err(POPRT_STATUS_INTERNAL,
                          "bfloat16 blocked convolution weights of %lld channels on this CPU",
                          (long long)C);
    const int64_t n_og = poprt__ceil_div(M, CONVB_GROUP);
    /* floats per group (the last may use fewer); bf16: words, half as many */
    const int64_t w_group = ncb * KH * KW * cb * CONVB_GROUP;
    const int64_t per = bf16 ? w_group / 2 : w_group;
    const size_t total = CONV_PACK_HEADER + (size_t)(n_og * per) * sizeof(float);
    unsigned char *blob = poprt__aligned_alloc(total);
    float *stage = bf16 ? poprt__malloc((size_t)w_group * sizeof(float)) : NULL;
    if (!blob || (bf16 && !stage)) {
        poprt__aligned_free(blob);
        poprt__free(stage);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    }
    memset(blob, 0, total);
    uint64_t h[8] = {bf16 ? CONV_BLOCKED_BF16_MAGIC : CONV_BLOCKED_MAGIC, (uint64_t)M,
                     (uint64_t)C, (uint64_t)KH, (uint64_t)KW, (uint64_t)per, (uint64_t)layout, 0};
    memcpy(blob, h, sizeof h);
    float *dst = (float *)(blob + CONV_PACK_HEADER);
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
    if (!k->state || k->state_size < CONV_PACK_HEADER || !poprt__x86_convb_fits(g, p->G) ||
        !poprt__convb_usable(v))
        return NULL;
    uint64_t h[8];
    memcpy(h, k->state, sizeof h);
    const uint64_t floats = (k->state_size - CONV_PACK_HEADER) / sizeof(float);
    *bf16 = h[0] == CONV_BLOCKED_BF16_MAGIC;
    if ((h[0] != CONV_BLOCKED_MAGIC && !*bf16) || (*bf16 && !poprt__convb_bf16_usable()) ||
        (*bf16 && p->C % 16) || h[1] != (uint64_t)p->M || h[2] != (uint64_t)p->C ||
        h[3] != (uint64_t)g->k[1] || h[4] != (uint64_t)g->k[2] || h[5] == 0 ||
        h[6] != (uint64_t)convb_layout(v, *bf16) ||
        (uint64_t)poprt__ceil_div(p->M, CONVB_GROUP) > floats / h[5])
        return NULL;
    *w_group = (int64_t)h[5];
    return (const unsigned char *)k->state + CONV_PACK_HEADER;
}

/* ---- Winograd F(2x2, 3x3) (conv_blocked.h) ----------------------------------------------
 * For 3x3 convolutions of stride 1 and dilation 1, one group, channels in
 * whole blocks of 16 (conv_paths.h: poprt__x86_convw_fits). Three passes,
 * each split over the threads: the input blocked and zero-padded as the
 * direct path does it, then transformed tile row by tile row into
 * V[xi][n][cbi][tile][16]; the 16 products, each a 1x1 blocked convolution
 * of the tiles (the variant's run, weights U[xi] packed per group of 64
 * outputs as poprt__x86_convb_pack packs a 1x1 conv) into
 * P[xi][n][m block][tile][16]; then each output block's tile rows back into
 * Y with the bias, and the residual and Relu in the registers where the
 * blocked path puts them there (else the epilogue after). 2.25 times fewer
 * products than the direct path; the sums are the same for every thread
 * count. */

#define CONV_WINO_MAGIC 0x31574b4243525050ull /* "PPRCBKW1" */

/* Fewer tiles per image than this and the 16 transformed weight matrices
 * (16 C M floats against the direct path's 9 C M) cost more than the
 * products save: light_resnet50's 512-channel 3x3 convs at 7 x 7 (16
 * tiles) were 0.94x the direct path's speed, the 256-channel ones at
 * 14 x 14 (49 tiles) 1.49x, 128 at 28 x 28 1.41x, 64 at 56 x 56 1.21x. */
#define CONVW_MIN_TILES 32
/* Fewer input channels than this and each of the 16 products sums too few
 * terms per store of its tile (C against the direct path's 9 C): on
 * light_squeezenet (3x3 convs of 16, 32 and 48 input channels) Winograd
 * made the model 0.92x as fast at 1 thread and 0.78x at 2. */
#define CONVW_MIN_CHANNELS 64

int poprt__x86_convw_fits(const poprt__geom3 *g, int64_t G, int64_t C, int64_t M)
{
    return poprt__x86_convb_fits(g, G) && C % 16 == 0 && C >= CONVW_MIN_CHANNELS &&
           M % 16 == 0 && g->k[1] == 3 &&
           g->k[2] == 3 && g->s[1] == 1 && g->s[2] == 1 && g->d[1] == 1 && g->d[2] == 1 &&
           g->out[1] >= 2 && g->out[2] >= 2 &&
           ((g->out[1] + 1) / 2) * ((g->out[2] + 1) / 2) >= CONVW_MIN_TILES;
}

poprt_status poprt__x86_convw_pack(const poprt__convb_variant *v, const float *w, int64_t M,
                                   int64_t C, void **state, size_t *size)
{
    const int layout = convb_layout(v, 0);
    if (C % 16 || M % 16 || C <= 0 || M <= 0)
        return poprt__err(POPRT_STATUS_INTERNAL, "Winograd weights of %lld x %lld channels",
                          (long long)M, (long long)C);
    const int64_t n_og = poprt__ceil_div(M, CONVB_GROUP), ncb = C / 16;
    const int64_t w_group = ncb * 16 * CONVB_GROUP; /* floats per (xi, group) */
    const size_t total = CONV_PACK_HEADER + (size_t)(16 * n_og * w_group) * sizeof(float);
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    memset(blob, 0, total);
    const uint64_t h[8] = {CONV_WINO_MAGIC, (uint64_t)M, (uint64_t)C, 3, 3, (uint64_t)w_group,
                           (uint64_t)layout, 0};
    memcpy(blob, h, sizeof h);
    float *dst = (float *)(blob + CONV_PACK_HEADER);
    for (int64_t m = 0; m < M; m++)
        for (int64_t c = 0; c < C; c++) {
            const float *g = w + (m * C + c) * 9;
            /* G g (4 x 3), then (G g) G^T (4 x 4), in double, rounded once */
            double gg[4][3], u[4][4];
            for (int j = 0; j < 3; j++) {
                gg[0][j] = g[j];
                gg[1][j] = 0.5 * ((double)g[j] + g[3 + j] + g[6 + j]);
                gg[2][j] = 0.5 * ((double)g[j] - g[3 + j] + g[6 + j]);
                gg[3][j] = g[6 + j];
            }
            for (int i = 0; i < 4; i++) {
                u[i][0] = gg[i][0];
                u[i][1] = 0.5 * (gg[i][0] + gg[i][1] + gg[i][2]);
                u[i][2] = 0.5 * (gg[i][0] - gg[i][1] + gg[i][2]);
                u[i][3] = gg[i][2];
            }
            /* as a 1x1 conv's packed weights: group og, [cbi][i][nb * 16]
             * (by block: [n][cbi][i][16]) */
            const int64_t og = m / CONVB_GROUP, mo = m % CONVB_GROUP;
            const int64_t mc = M - og * CONVB_GROUP < CONVB_GROUP ? M - og * CONVB_GROUP
                                                                   : CONVB_GROUP;
            const int64_t width = poprt__ceil_div(mc, 16) * 16;
            for (int xi = 0; xi < 16; xi++)
                dst[(xi * n_og + og) * w_group + convb_wpos(layout, c, mo, width, C)] =
                    (float)u[xi / 4][xi % 4];
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
    return h[6] == (uint64_t)v->wlayout;
}

int poprt__x86_convw_state_magic(const void *state, size_t size)
{
    uint64_t h = 0;
    if (state && size >= sizeof h)
        memcpy(&h, state, sizeof h);
    return h == CONV_WINO_MAGIC;
}

const void *poprt__x86_convw_state(const poprt__kctx *k, const poprt__conv_plan *p,
                                   const poprt__convb_variant *v, int64_t *w_group)
{
    const poprt__geom3 *g = &p->g; /* what the kernels need, not the choice's thresholds */
    if (!k->state || k->state_size < CONV_PACK_HEADER || !poprt__convb_usable(v) ||
        !poprt__x86_convb_fits(g, p->G) || p->C % 16 || p->M % 16 || g->k[1] != 3 ||
        g->k[2] != 3 || g->s[1] != 1 || g->s[2] != 1 || g->d[1] != 1 || g->d[2] != 1)
        return NULL;
    uint64_t h[8];
    memcpy(h, k->state, sizeof h);
    const uint64_t floats = (k->state_size - CONV_PACK_HEADER) / sizeof(float);
    const uint64_t n_og = (uint64_t)poprt__ceil_div(p->M, CONVB_GROUP);
    if (h[0] != CONV_WINO_MAGIC || h[1] != (uint64_t)p->M || h[2] != (uint64_t)p->C ||
        h[5] != (uint64_t)(p->C / 16 * 16 * CONVB_GROUP) || h[6] != (uint64_t)v->wlayout ||
        16 * n_og > floats / h[5])
        return NULL;
    *w_group = (int64_t)h[5];
    return (const unsigned char *)k->state + CONV_PACK_HEADER;
}

typedef struct convw_job {
    convb_job b;          /* the blocked input (b.xb), the plan, the variant */
    const float *u;       /* U[xi][og] at (xi * n_og + og) * w_group */
    float *v, *pr;        /* V and the products */
    int64_t th, tw, T;    /* tile rows, tiles per row, tiles per image */
    int64_t vstep, pstep; /* floats between xi planes of V and of the products */
    int64_t chunk, nchunks, cstep;
    poprt__convb_geom g1; /* the products' 1x1 geometry over the tiles */
    int in_regs, relu, epi_after;
} convw_job;

/* Tile rows r = (n * ncb + cbi) * th + ty of V. */
static void convw_in_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convw_job *t = ctx;
    const int64_t Wp = t->b.g.Wp;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ty = r % t->th, nc = r / t->th; /* nc = n * ncb + cbi */
        const float *xb = t->b.xb + nc * t->b.g.plane + ty * 2 * Wp * 16;
        t->b.v->wino_in(xb, Wp, t->tw, t->v + (nc * t->T + ty * t->tw) * 16, t->vstep);
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
        const int64_t oc0 = og * CONVB_GROUP;
        const int64_t mc = p->M - oc0 < CONVB_GROUP ? p->M - oc0 : CONVB_GROUP;
        const int nb = (int)(mc / 16);
        const float *x = t->v + xi * t->vstep + n * ncb * t->g1.plane;
        const float *w = t->u + (xi * n_og + og) * t->b.w_group;
        float *out = t->pr + xi * t->pstep + (n * p->M + oc0) * t->T + q0 * 16;
        const int64_t wstep = 16 * nb * 16; /* floats per input block */
        for (int64_t c0 = 0; c0 < ncb; c0 += t->cstep) {
            const int64_t c1 = c0 + t->cstep < ncb ? c0 + t->cstep : ncb;
            t->b.v->run(x, w, NULL, nb, &t->g1, q0, q1, c0, c1, c0 > 0, out, t->T, NULL, 0,
                        w + c1 * wstep, 4 * t->cstep * wstep);
        }
    }
}

/* Tile rows r = (n * (M / 16) + ob) * th + ty of Y. */
static void convw_out_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convw_job *t = ctx;
    const poprt__conv_plan *p = t->b.p;
    const int64_t OW = p->g.out[2], OH = p->g.out[1], OHW = p->g.out_sz, nob = p->M / 16;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t ty = r % t->th, nob_i = r / t->th, ob = nob_i % nob, n = nob_i / nob;
        const int rows = 2 * ty + 1 < OH ? 2 : 1;
        /* the products' block ob of image n, tile row ty */
        const float *m = t->pr + (n * p->M + ob * 16) * t->T + ty * t->tw * 16;
        const int64_t yoff = t->b.yblk ? (n * p->M + ob * 16) * OHW + 2 * ty * OW * 16
                                       : (n * p->M + ob * 16) * OHW + 2 * ty * OW;
        const float *z = t->in_regs && p->z ? p->z + yoff : NULL;
        t->b.v->wino_out(m, t->pstep, t->tw, t->b.b ? t->b.b + ob * 16 : NULL, rows, OW, z,
                         t->relu, t->b.yblk, t->b.y + yoff, OHW);
        if (!t->epi_after)
            continue;
        if (t->b.yblk)
            poprt__x86_conv_epilogue(p, t->b.y, yoff, rows * OW * 16);
        else
            for (int64_t i = 0; i < 16; i++)
                poprt__x86_conv_epilogue(p, t->b.y, yoff + i * OHW, rows * OW);
    }
}

poprt_status poprt__x86_conv_winograd(poprt__kctx *k, const poprt__conv_plan *p,
                                      const poprt__convb_variant *v, const float *x,
                                      const float *b, const void *u, int64_t w_group, float *y)
{
    const poprt__geom3 *g = &p->g;
    convw_job t = {.b = {.p = p, .x = x, .b = b, .y = y, .w_group = w_group, .xblk = p->xblk,
                         .yblk = p->yblk, .v = v},
                   .u = u};
    const int64_t OH = g->out[1], OW = g->out[2];
    t.th = (OH + 1) / 2;
    t.tw = (OW + 1) / 2;
    t.T = t.th * t.tw;
    /* the blocked input, padded to whole tiles: 2 th + 2 rows of 2 tw + 2 */
    convb_geom_of(g, p->C, &t.b.g, &t.b.Hp);
    t.b.Hp = 2 * t.th + 2;
    t.b.g.Wp = 2 * t.tw + 2;
    t.b.g.plane = t.b.Hp * t.b.g.Wp * 16;
    t.b.n_og = poprt__ceil_div(p->M, CONVB_GROUP);
    const int64_t ncb = p->C / 16;
    t.g1 = (poprt__convb_geom){.cb = 16, .ncb = ncb, .Wp = t.T, .plane = t.T * 16, .KH = 1,
                               .KW = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .OW = t.T};
    t.vstep = p->N * p->C * t.T;
    t.pstep = p->N * p->M * t.T;
    const int64_t nch = poprt__ceil_div(t.T, CONVB_CHUNK);
    t.chunk = poprt__ceil_div(poprt__ceil_div(t.T, nch), 6) * 6;
    t.nchunks = poprt__ceil_div(t.T, t.chunk);
    t.cstep = (24 << 10) / (16 * CONVB_GROUP * (int64_t)sizeof(float));
    /* the epilogue as the blocked path applies it */
    t.in_regs = p->yblk && !p->fp8 && !p->n_post &&
                (p->act == CONV_ACT_NONE || p->act == CONV_ACT_RELU);
    t.relu = t.in_regs ? p->act == CONV_ACT_RELU : poprt__x86_conv_lone_relu(p);
    t.epi_after = poprt__x86_conv_has_epilogue(p) && !t.in_regs && !t.relu;
    size_t xb_n, v_n, p_n;
    if (!poprt__mul_size((size_t)(p->N * ncb), (size_t)t.b.g.plane, &xb_n) ||
        !poprt__mul_size(16, (size_t)t.vstep, &v_n) || !poprt__mul_size(16, (size_t)t.pstep, &p_n) ||
        xb_n > SIZE_MAX / sizeof(float) || v_n > SIZE_MAX / sizeof(float) ||
        p_n > SIZE_MAX / sizeof(float) || !(t.b.xb = poprt__kctx_scratch(k, xb_n * sizeof(float))) ||
        !(t.v = poprt__kctx_scratch(k, v_n * sizeof(float))) ||
        !(t.pr = poprt__kctx_scratch(k, p_n * sizeof(float))))
        return poprt__ref_oom(k);
    poprt__kctx_parallel_for(k, p->N * ncb * t.b.Hp, poprt__ref_grain(t.b.g.Wp * 16, 1 << 14),
                             convb_block_task_fn, &t.b);
    poprt__kctx_parallel_for(k, p->N * ncb * t.th, poprt__ref_grain(t.tw * 16 * 16, 1 << 14),
                             convw_in_fn, &t);
    poprt__kctx_parallel_for(k, 16 * p->N * t.b.n_og * t.nchunks, 1, convw_mul_fn, &t);
    poprt__kctx_parallel_for(k, p->N * (p->M / 16) * t.th,
                             poprt__ref_grain(t.tw * 16 * 16, 1 << 14), convw_out_fn, &t);
    return POPRT_OK;
}
