/* bfloat16 convolution tap by tap on AMX tiles (session option
 * matmul_precision = bfloat16 on a CPU whose bfloat16 GEMM variant is
 * AMX): the implicit GEMM with output positions as the tiles' rows.
 *
 * The channel-pair path (conv_pairs.c) writes, for every output column,
 * the K = C x taps words of its packed B and multiplies them by the M
 * output channels: with few output channels (ppocr_v4_det's 96 -> 24 3x3
 * convs at 160 x 160) writing B costs more than the tiles' products. Here
 * X is converted once per image into a zero-padded NHWC copy of bfloat16
 * pair words, so that for each tap 16 output positions of a row are one A
 * tile loaded in place (rows sw positions apart), the 32 channels of a
 * position one tile row; the weights, packed once, are the B tiles. Each
 * input value is converted once instead of written once per tap.
 *
 * The products are those of the other bfloat16 paths (X and W rounded to
 * bfloat16 to nearest even, float32 sums); the order of the sum is per
 * tap, then 32 channels at a time. Work items are (output row, 32 output
 * channels); the sums do not depend on which thread runs an item. */
#include <string.h>
#include "kernels/ref/util.h"
#include "kernels/x86/conv_paths.h"

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

int poprt__x86_conv_taps_usable(void)
{
    const poprt__sgemm_variant *bf = poprt__sgemm_best_bf16();
    return bf && bf->isa == POPRT__ISA_AMX;
}

int poprt__x86_conv_taps_fits(const poprt__geom3 *g, int64_t G, int64_t Cg, int64_t Mg,
                              const poprt__sgemm_variant *v)
{
    (void)Mg;
    /* a 1x1 conv reads each position once anyway: the pair path (strided)
     * and the tiled GEMM (pointwise) need no NHWC copy, and with one tap
     * this path's A tiles and transposition outweigh its few steps
     * (light_resnet50's 1x1 convs 1.5-2.2x slower here) */
    return v && v->kpack == 2 && v->isa == POPRT__ISA_AMX && G == 1 && g->k_sz > 1 && Cg >= 32 &&
           Cg % 16 == 0 && g->k[0] == 1 && g->in[0] == 1 && g->out[0] == 1 &&
           g->out[2] >= 16 && g->in[1] > 0 && g->in[2] > 0 && g->out[1] > 0 &&
           g->in_sz < ((int64_t)1 << 28) && g->s[2] < 64 && Cg < 4096;
}

poprt_status poprt__x86_conv_taps_pack(const float *w, int64_t M, int64_t C, int64_t KH,
                                       int64_t KW, void **state, size_t *size)
{
    const int64_t Ck = round_up(C, 32), mblocks = (M + 31) / 32;
    size_t words, total;
    /* per block, tap and 32 channels: 16 pair rows x 32 columns */
    if (!poprt__mul_size((size_t)(mblocks * KH * KW), (size_t)(Ck / 32) * 512, &words) ||
        words > (SIZE_MAX - CONV_PACK_HEADER) / sizeof(uint32_t))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "Conv weights too large to pack");
    total = CONV_PACK_HEADER + words * sizeof(uint32_t);
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    memset(blob, 0, total);
    uint64_t h[8] = {CONV_TAPS_MAGIC, (uint64_t)M, (uint64_t)C, (uint64_t)KH, (uint64_t)KW,
                     (uint64_t)words, 0, 0};
    memcpy(blob, h, sizeof h);
    uint32_t *d = (uint32_t *)(blob + CONV_PACK_HEADER);
    const int64_t ksz = KH * KW;
    for (int64_t mb = 0; mb < mblocks; mb++)
        for (int64_t t = 0; t < ksz; t++)
            for (int64_t cs = 0; cs < Ck / 32; cs++, d += 512)
                for (int64_t p = 0; p < 16; p++)
                    for (int64_t j = 0; j < 32; j++) {
                        const int64_t m = mb * 32 + j, c = cs * 32 + 2 * p;
                        if (m >= M)
                            continue;
                        const float *wm = w + m * C * ksz + t;
                        uint32_t word = c < C ? poprt__sgemm_bf16_bits(wm[c * ksz]) : 0u;
                        if (c + 1 < C)
                            word |= poprt__sgemm_bf16_bits(wm[(c + 1) * ksz]) << 16;
                        d[p * 32 + j] = word;
                    }
    *state = blob;
    *size = total;
    return POPRT_OK;
}

const uint32_t *poprt__x86_conv_taps_state(const poprt__kctx *k, const poprt__conv_plan *p)
{
    uint64_t h[6];
    if (!k->state || k->state_size < CONV_PACK_HEADER)
        return NULL;
    memcpy(h, k->state, sizeof h);
    const poprt__geom3 *g = &p->g;
    if (h[0] != CONV_TAPS_MAGIC || h[1] != (uint64_t)p->M || h[2] != (uint64_t)p->C ||
        h[3] != (uint64_t)g->k[1] || h[4] != (uint64_t)g->k[2] || p->G != 1)
        return NULL;
    const uint64_t need = (uint64_t)((p->M + 31) / 32 * g->k[1] * g->k[2]) *
                          (uint64_t)(round_up(p->C, 32) / 32) * 512u;
    if (h[5] != need || need > (k->state_size - CONV_PACK_HEADER) / sizeof(uint32_t) ||
        !poprt__x86_conv_taps_usable() ||
        !poprt__x86_conv_taps_fits(g, p->G, p->Cg, p->Mg, poprt__sgemm_best_bf16()))
        return NULL;
    return (const uint32_t *)((const unsigned char *)k->state + CONV_PACK_HEADER);
}

typedef struct taps_job {
    const poprt__conv_plan *p;
    poprt__taps_geom tg;
    const float *x, *b;
    float *y;
    const uint32_t *wpk;
    uint32_t *xp;
    int64_t n, items, cblocks;
    int64_t next; /* the next item a lane takes (atomic) */
} taps_job;

static void convert_fn(void *ctx, int64_t u0, int64_t u1)
{
    const taps_job *t = ctx;
    const float *x = t->x + t->n * t->tg.C * t->tg.H * t->tg.W;
    /* unit u: padded row u / cblocks, channel block u % cblocks */
    for (int64_t u = u0; u < u1; u++)
        poprt__conv_taps_convert_amx(&t->tg, x, u / t->cblocks, u % t->cblocks, t->xp);
}

static void lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    taps_job *t = ctx;
    const poprt__conv_plan *p = t->p;
    const poprt__taps_geom *tg = &t->tg;
    const int64_t OHW = tg->OH * tg->OW;
    const int relu = poprt__x86_conv_lone_relu(p);
    const int epilogue = poprt__x86_conv_has_epilogue(p) && !relu;
    float *yn = t->y + t->n * tg->M * OHW;
    poprt__sgemm_enter_amx();
    for (int64_t l = l0; l < l1; l++)
        for (int64_t it; (it = __atomic_fetch_add(&t->next, 1, __ATOMIC_RELAXED)) < t->items;) {
            /* items: output row major, so a lane's rows share input rows */
            const int64_t oh = it / tg->mblocks, mb = it % tg->mblocks;
            poprt__conv_taps_row_amx(tg, t->xp, t->wpk, oh, mb, t->b, relu, yn);
            if (!epilogue)
                continue;
            const int64_t m1 = (mb + 1) * 32 < tg->M ? (mb + 1) * 32 : tg->M;
            for (int64_t m = mb * 32; m < m1; m++)
                poprt__x86_conv_epilogue(p, t->y, yn + m * OHW + oh * tg->OW - t->y, tg->OW);
        }
}

poprt_status poprt__x86_conv_taps(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                  const float *b, const uint32_t *wpk, float *y)
{
    const poprt__geom3 *g = &p->g;
    taps_job t;
    memset(&t, 0, sizeof t);
    t.p = p;
    t.x = x;
    t.b = b;
    t.y = y;
    t.wpk = wpk;
    poprt__taps_geom *tg = &t.tg;
    tg->C = p->C;
    tg->H = g->in[1];
    tg->W = g->in[2];
    tg->M = p->M;
    tg->Ck = round_up(p->C, 32);
    tg->KH = g->k[1];
    tg->KW = g->k[2];
    tg->sh = g->s[1];
    tg->sw = g->s[2];
    tg->dh = g->d[1];
    tg->dw = g->d[2];
    tg->OH = g->out[1];
    tg->OW = g->out[2];
    tg->pt = g->pb[1];
    tg->pl = g->pb[2];
    /* rows and columns the tiles read: every output row in whole 16-position
     * tiles */
    tg->Hp = (tg->OH - 1) * tg->sh + (tg->KH - 1) * tg->dh + 1;
    tg->Wp = (round_up(tg->OW, 16) - 1) * tg->sw + (tg->KW - 1) * tg->dw + 1;
    tg->mblocks = (p->M + 31) / 32;
    t.cblocks = tg->Ck / 32;
    t.items = tg->OH * tg->mblocks;
    size_t xp_bytes;
    if (!poprt__mul_size((size_t)(tg->Hp * tg->Wp), (size_t)tg->Ck * 2, &xp_bytes) ||
        xp_bytes > SIZE_MAX - 64)
        return poprt__ref_oom(k);
    if (!(t.xp = poprt__kctx_scratch(k, xp_bytes)))
        return poprt__ref_oom(k);
    const int64_t threads = poprt__kctx_threads(k);
    const int64_t lanes = t.items < threads ? t.items : threads;
    for (t.n = 0; t.n < p->N; t.n++) {
        poprt__kctx_parallel_for(k, tg->Hp * t.cblocks, 1 + 8192 / (tg->Wp * 32), convert_fn,
                                 &t);
        t.next = 0;
        poprt__kctx_parallel_for(k, lanes, 1, lane_fn, &t);
    }
    return POPRT_OK;
}
