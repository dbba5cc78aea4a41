/* Conv and FusedConv as the registry runs them (see conv_paths.h): the
 * operator's checks and types from lib/kernels/ref (poprt__conv_op), then
 * float32 on the fastest path the weights were packed for when the session
 * was compiled and this CPU can run: blocked (AVX2 or AVX-512), transposed GEMM,
 * direct, tiled implicit GEMM, else im2col and the fast GEMM; depthwise
 * convs on padded planes. FusedConv's epilogue runs on each output block
 * while it is in cache. Every path sums each output in an order that does
 * not depend on the thread count. */
#include <math.h>
#include <string.h>
#include "kernels/ref/util.h"
#include "kernels/x86/conv.h"
#include "kernels/x86/conv_paths.h"
#include "kernels/x86/conv_blocked.h"
#include "kernels/x86/gemm_ops.h"

void poprt__x86_conv_plan_of(const poprt__conv_shape *s, poprt__conv_plan *p)
{
    memset(p, 0, sizeof *p);
    p->g = s->g;
    p->N = s->N;
    p->C = s->C;
    p->M = s->M;
    p->G = s->G;
    p->Cg = s->Cg;
    p->Mg = s->Mg;
    p->Kc = s->Kc;
    p->act = CONV_ACT_NONE;
    p->fp8_scale = 1.0f;
}

static poprt__conv_shape shape_of(const poprt__conv_plan *p)
{
    const poprt__conv_shape s = {p->g, p->N, p->C, p->M, p->G, p->Cg, p->Mg, p->Kc};
    return s;
}

/* poprt__x86_conv_epilogue as the reference depthwise loop calls it (poprt__conv_epi) */
static void epi_range(const void *ctx, float *y, int64_t off, int64_t n)
{
    poprt__x86_conv_epilogue(ctx, y, off, n);
}

/* y[off + i] = act(y[off + i] + z[off + i]) for i < n, then the post steps,
 * then rounded to float8 and back (y_fp8): run on each output block right
 * after it is written, while it is in cache. The vectorised functions of
 * the Add and activation kernels and FusedElementwise's steps, so results
 * match the unfused graph's. */
void poprt__x86_conv_epilogue(const poprt__conv_plan *p, float *y, int64_t off, int64_t n)
{
    if (p->z)
        p->add_fn(y + off, 1, p->z + off, 1, y + off, n);
    if (p->n_chain)
        p->vm->chain(p->chain, p->n_chain, y + off, n);
    else {
        if (p->act_fn)
            p->act_fn(y + off, y + off, n, &p->act_p);
        if (p->n_post)
            poprt__ew_scalar_run(p->vm, p->post, p->n_post, y + off, n);
    }
    if (p->fp8)
        poprt__fp8_round(y + off, y + off, n, p->fp8_scale, p->fp8 == 2, p->fp8_zp);
}

/* d[i] = s[i] + v (d may be s): the bias pass of the conv paths, compiled
 * per vector width with target_clones (exact, so every clone agrees). */
POPRT__CLONES
static void row_plus(float *d, const float *s, float v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = s[i] + v;
}

/* (the clones stay static: a target_clones function gets an exported
 * resolver) */
void poprt__x86_row_plus(float *d, const float *s, float v, int64_t n)
{
    row_plus(d, s, v, n);
}

/* y[i] = relu?(y[i] + b + z[i]) (z NULL: no z), the bias, residual and Relu
 * passes of a row in one: the same float operations in the same order as
 * row_plus, the Add kernel and Relu's max(0, v) (NaN and -0 kept), so the
 * same bits (compiled per vector width, as row_plus). */
POPRT__CLONES
static void row_bias_z_relu(float *restrict y, float b, const float *restrict z, int relu,
                            int64_t n)
{
    if (z && relu)
        for (int64_t i = 0; i < n; i++) {
            const float v = (y[i] + b) + z[i];
            y[i] = 0.0f > v ? 0.0f : v;
        }
    else if (z)
        for (int64_t i = 0; i < n; i++)
            y[i] = (y[i] + b) + z[i];
    else if (relu)
        for (int64_t i = 0; i < n; i++) {
            const float v = y[i] + b;
            y[i] = 0.0f > v ? 0.0f : v;
        }
    else
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] + b;
}

void poprt__x86_conv_epi_block(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    const poprt__conv_epi_task *t = ctx;
    const poprt__conv_plan *p = t->p;
    const int64_t n = p->g.out_sz;
    /* bias, Z and a Relu (or no activation) in one pass over each row */
    const int one = t->b && !p->n_post && !p->fp8 &&
                    (p->act == CONV_ACT_NONE || p->act == CONV_ACT_RELU);
    /* whole rows are contiguous: the epilogue runs once over the block
     * (each of its steps is one call, not one per row) */
    const int epi = !one && poprt__x86_conv_has_epilogue(p), whole = n0 == 0 && n1 == n;
    for (int64_t m = m0; m < m1; m++) {
        float *row = t->y + t->off + m * n + n0;
        if (one) {
            row_bias_z_relu(row, t->b[m], p->z ? p->z + (row - t->y) : NULL,
                            p->act == CONV_ACT_RELU, n1 - n0);
            continue;
        }
        if (t->b)
            poprt__x86_row_plus(row, row, t->b[m], n1 - n0);
        if (epi && !whole)
            poprt__x86_conv_epilogue(p, t->y, row - t->y, n1 - n0);
    }
    if (epi && whole && m1 > m0)
        poprt__x86_conv_epilogue(p, t->y, t->off + m0 * n, (m1 - m0) * n);
}

static void conv_epi_task_fn(void *ctx, int64_t m0, int64_t m1)
{
    poprt__x86_conv_epi_block(ctx, m0, m1, 0, ((const poprt__conv_epi_task *)ctx)->p->g.out_sz);
}

static poprt_status conv_layout(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                const float *w, const float *b, float *y);

/* The blocked paths, when the node's prepared weights are theirs for this
 * CPU's blocked variant: Winograd, else the blocked direct convolution.
 * 1 with *st set when one ran; 0 when the weights were packed for another
 * path or CPU (an executable file): the plain paths then. */
static int blocked_paths(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                         const float *b, float *y, poprt_status *st)
{
    const poprt__convb_variant *v = poprt__convb_best();
    int64_t w_group;
    int bf16, tile;
    const void *u = poprt__x86_convw_state(k, p, v, &w_group, &tile, &bf16);
    if (u) {
        *st = poprt__x86_conv_winograd(k, p, v, x, b, u, w_group, tile, bf16, y);
        return 1;
    }
    const void *packed = poprt__x86_convb_state(k, p, v, &w_group, &bf16);
    if (packed) {
        *st = poprt__x86_conv_blocked(k, p, v, x, b, packed, w_group, bf16, y);
        return 1;
    }
    return 0;
}

/* w NULL: the session keeps the weight packed only (the prepare marked it
 * consumed); the paths reading it unpacked get it through this. */
static const float *unpacked_w(poprt__kctx *k, const float *w)
{
    return w ? w : (const float *)poprt__kctx_in_data(k, 1);
}

static poprt_status conv_f32(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                             const float *w, const float *b, float *y)
{
    const poprt__geom3 *g = &p->g;
    if (p->xblk || p->yblk)
        return conv_layout(k, p, x, w, b, y);
    if (p->Cg == 1 && p->G > 1 && !(w = unpacked_w(k, w)))
        return poprt__ref_oom(k);
    if (p->Cg == 1 && p->G > 1) {
        int done;
        poprt_status st = poprt__x86_dwconv_padded(k, p, x, w, b, y, &done);
        if (st || done)
            return st;
        /* 3-D: the operator's own loop, with the epilogue on each plane */
        const poprt__conv_shape s = shape_of(p);
        const poprt__conv_epi epi = {epi_range, p};
        poprt__conv_dw_f32(k, &s, x, w, b, y, poprt__x86_conv_has_epilogue(p) ? &epi : NULL);
        return POPRT_OK;
    }
    const int pointwise = g->k_sz == 1 && g->s[0] == 1 && g->s[1] == 1 && g->s[2] == 1 &&
                          g->pb[0] == 0 && g->pb[1] == 0 && g->pb[2] == 0 && g->pe[0] == 0 &&
                          g->pe[1] == 0 && g->pe[2] == 0;
    {
        poprt_status st;
        if (blocked_paths(k, p, x, b, y, &st))
            return st;
    }
    {
        const uint32_t *wpk = poprt__x86_conv_taps_state(k, p);
        if (wpk) /* else another path's, or AMX not usable here: the paths below */
            return poprt__x86_conv_taps(k, p, x, b, wpk, y);
    }
    {
        uint64_t per;
        const unsigned char *apack = poprt__x86_conv_pairs_state(k, p, &per);
        if (apack) /* else another path's, or packed for another CPU: the paths below */
            return poprt__x86_conv_pairs(k, p, x, b, apack, per, y);
    }
    if (k->state && k->state_size >= CONV_PACK_HEADER) {
        uint64_t h[4];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_TRANS_MAGIC && p->G == 1 && h[1] == (uint64_t)p->M &&
            h[2] == (uint64_t)p->Kc && h[3] <= k->state_size - CONV_PACK_HEADER &&
            poprt__x86_conv_trans_fits(p->G, p->M, p->Kc, g->out_sz)) {
            const void *bp = (const unsigned char *)k->state + CONV_PACK_HEADER;
            const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(bp);
            /* packed for another CPU (an executable file): plain path below */
            if (v && poprt__sgemm_usable(v) && poprt__sgemm_packed_fits(bp, h[3]))
                return poprt__x86_conv_trans(k, p, pointwise, x, b, bp, y);
        }
    }
    if (k->state && k->state_size >= CONV_PACK_HEADER) {
        uint64_t h[8];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_DIRECT_MAGIC && h[1] == (uint64_t)p->G && h[2] == (uint64_t)p->Mg &&
            h[4] == (uint64_t)p->Cg && h[5] == (uint64_t)g->k_sz &&
            h[6] < (uint64_t)poprt__sgemm_n_variants && h[3] > 0 &&
            (uint64_t)p->G <= (k->state_size - CONV_PACK_HEADER) / h[3]) {
            const poprt__sgemm_variant *v = &poprt__sgemm_variants[h[6]];
            /* packed for another CPU (an executable file): plain path below */
            if (v->kpack == 1 && poprt__sgemm_usable(v) &&
                h[7] == ((uint64_t)v->nr << 16 | (uint64_t)v->mr) &&
                poprt__x86_conv_direct_fits(g, p->Cg, v))
                return poprt__x86_conv_direct(
                    k, p, x, b, (const float *)((const unsigned char *)k->state + CONV_PACK_HEADER),
                    (int64_t)(h[3] / sizeof(float)), v, y);
        }
    }
    /* weights pre-packed by poprt__x86_conv_prepare, one block per group */
    const unsigned char *apack = NULL;
    uint64_t per_group = 0;
    void *pws = NULL;
    if (k->state && k->state_size >= CONV_PACK_HEADER &&
        poprt__fast_gemm_fits(p->Mg, g->out_sz, p->Kc)) {
        uint64_t h[4];
        memcpy(h, k->state, sizeof h);
        int fits = h[0] == CONV_PACK_MAGIC && h[1] == (uint64_t)p->G && h[2] == (uint64_t)p->Mg &&
                   h[3] > 0 && (uint64_t)p->G <= (k->state_size - CONV_PACK_HEADER) / h[3];
        for (int64_t gi = 0; fits && gi < p->G; gi++) /* one packed A per group */
            fits = poprt__sgemm_packed_fits((const unsigned char *)k->state + CONV_PACK_HEADER +
                                                (size_t)gi * h[3],
                                            h[3]);
        if (fits) {
            apack = (const unsigned char *)k->state + CONV_PACK_HEADER;
            per_group = h[3];
            int done;
            poprt_status st =
                poprt__x86_conv_tiled(k, p, pointwise, x, b, apack, per_group, y, &done);
            if (st || done)
                return st;
            pws = poprt__kctx_scratch(
                k, poprt__sgemm_packed_workspace(apack, NULL, 0, 0, p->Mg, g->out_sz, p->Kc));
            if (!pws)
                apack = NULL;
        }
    }
    void *ws = NULL;
    if (!apack && poprt__fast_gemm_fits(p->Mg, g->out_sz, p->Kc) &&
        !(ws = poprt__fast_gemm_ws(k, 0, 0, p->Mg, g->out_sz, p->Kc)))
        return poprt__ref_oom(k);
    float *col = NULL;
    if (!pointwise) {
        size_t n;
        if (!poprt__mul_size((size_t)p->Kc, (size_t)g->out_sz, &n) ||
            !poprt__mul_size(n, sizeof(float), &n))
            return poprt__ref_oom(k);
        col = poprt__kctx_scratch(k, n ? n : 1);
        if (!col)
            return poprt__ref_oom(k);
    }
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t gi = 0; gi < p->G; gi++) {
            const float *xg = x + (n * p->C + gi * p->Cg) * g->in_sz;
            float *yg = y + (n * p->M + gi * p->Mg) * g->out_sz;
            const float *B = xg;
            if (!pointwise) {
                poprt__im2col_f32_mt(k, xg, g, p->Kc, col);
                B = col;
            }
            const float beta = 0.0f; /* the bias is added with the epilogue */
            int done = 0;
            poprt__conv_epi_task et = {p, y, yg - y, b ? b + gi * p->Mg : NULL};
            const int epilogue = b || poprt__x86_conv_has_epilogue(p);
            if (apack) {
                /* the bias and epilogue run on each finished block of Y */
                poprt__par par = poprt__par_kctx(k);
                const poprt__sgemm_epi epi = {poprt__x86_conv_epi_block, &et};
                done = poprt__sgemm_packed_epi(&par, pws, 0, 0, p->Mg, g->out_sz, p->Kc, 1.0f,
                                               NULL, 0, apack + (uint64_t)gi * per_group, B,
                                               g->out_sz, NULL, beta, yg, g->out_sz,
                                               epilogue ? &epi : NULL) == 0;
                /* packed for another CPU (an executable file): plain path */
                if (!done && !ws && !(ws = poprt__fast_gemm_ws(k, 0, 0, p->Mg, g->out_sz, p->Kc)))
                    return poprt__ref_oom(k);
                if (done)
                    continue;
            }
            if (!(w = unpacked_w(k, w)))
                return poprt__ref_oom(k);
            poprt__fast_gemm(k, ws, 0, 0, p->Mg, g->out_sz, p->Kc, 1.0f, w + gi * p->Mg * p->Kc,
                             p->Kc, B, g->out_sz, beta, yg, g->out_sz);
            if (epilogue) {
                poprt__kctx_parallel_for(k, p->Mg, poprt__ref_grain(g->out_sz, 1 << 14),
                                         conv_epi_task_fn, &et);
            }
        }
    }
    return POPRT_OK;
}

/* NCHW16c (lib/compiler/layout.c): channel c of position q of image n at
 * ((n * C/16 + c/16) * HW + q) * 16 + c % 16. C must be a multiple of 16. */
static void nchw16c_from_nchw(const float *src, int64_t N, int64_t C, int64_t HW, float *dst)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t q = 0; q < HW; q++)
                dst[((n * C + (c & ~(int64_t)15)) * HW + q * 16) + (c & 15)] =
                    src[(n * C + c) * HW + q];
}

static void nchw16c_to_nchw(const float *src, int64_t N, int64_t C, int64_t HW, float *dst)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t q = 0; q < HW; q++)
                dst[(n * C + c) * HW + q] =
                    src[((n * C + (c & ~(int64_t)15)) * HW + q * 16) + (c & 15)];
}

/* Whether node attribute `name` asks for NCHW16c. */
static int layout_blocked(const poprt__node *n, const char *name)
{
    return strcmp(poprt__attr_s(n, name, "NCHW"), "NCHW16c") == 0;
}

/* A convolution with an NCHW16c input or output: the blocked path reads
 * and writes that layout directly; where it cannot run (an executable file
 * loaded on a CPU without AVX2), the operands are converted around the
 * plain paths, which gives the same results. */
static poprt_status conv_layout(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                const float *w, const float *b, float *y)
{
    const poprt__geom3 *g = &p->g;
    if ((p->xblk && p->C % 16) || (p->yblk && p->M % 16) || g->out[0] != 1 || g->in[0] != 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "NCHW16c needs 2-D tensors with channels in blocks of 16 (X "
                               "has %lld, Y %lld)",
                               (long long)p->C, (long long)p->M);
    poprt_status st;
    if (poprt__x86_dwconv_blocked_fits(p->C, p->M, p->G)) {
        int done;
        if (!(w = unpacked_w(k, w)))
            return poprt__ref_oom(k);
        if ((st = poprt__x86_dwconv_blocked(k, p, x, w, b, y, &done)) || done)
            return st;
    }
    if (blocked_paths(k, p, x, b, y, &st))
        return st;
    poprt__conv_plan q = *p;
    q.xblk = q.yblk = 0;
    const size_t xn = (size_t)(p->N * p->C * g->in_sz), yn = (size_t)(p->N * p->M * g->out_sz);
    float *xs = p->xblk ? poprt__kctx_scratch(k, xn * sizeof(float)) : NULL;
    float *ys = p->yblk ? poprt__kctx_scratch(k, yn * sizeof(float)) : NULL;
    float *zs = p->yblk && p->z ? poprt__kctx_scratch(k, yn * sizeof(float)) : NULL;
    if ((p->xblk && !xs) || (p->yblk && !ys) || (p->yblk && p->z && !zs))
        return poprt__ref_oom(k);
    if (xs)
        nchw16c_to_nchw(x, p->N, p->C, g->in_sz, xs);
    if (zs) {
        nchw16c_to_nchw(p->z, p->N, p->M, g->out_sz, zs);
        q.z = zs;
    }
    st = conv_f32(k, &q, xs ? xs : x, w, b, ys ? ys : y);
    if (!st && ys)
        nchw16c_from_nchw(ys, p->N, p->M, g->out_sz, y);
    return st;
}

/* Conv weights packed once when the session is compiled: the blob is a
 * header {magic, groups, rows per group, bytes per group} then one packed
 * A operand per group (the GEMM's own position-independent format); for
 * convs of the direct path, a header {magic, groups, rows per group, bytes
 * per group, channels per group, taps, GEMM variant index, NR << 16 | MR}
 * then per group the panels poprt__x86_conv_direct reads (checked against the running
 * CPU's variant list when an executable file is loaded). */
/* The micro-kernel for a conv's weights: M output channels x N positions
 * (poprt__sgemm_fit). */
static const poprt__sgemm_variant *conv_variant(int64_t M, int64_t N)
{
    return poprt__sgemm_fit(poprt__sgemm_best(), M, N);
}

/* The node's window lifted to 3-D (1-D to 3-D convs whose X and W shapes
 * are known), 1; else 0. */
static int prep_geom(const poprt__prep_ctx *c, const poprt__type *xt, const poprt__type *wt,
                     int64_t Cg, int64_t Kc, poprt__geom3 *g3)
{
    if (!xt || xt->rank != wt->rank || wt->rank - 2 > 3)
        return 0;
    const int nsp = wt->rank - 2;
    int64_t in_sp[3], ker[3];
    for (int i = 0; i < nsp; i++) {
        in_sp[i] = xt->dims[2 + i].value;
        ker[i] = wt->dims[2 + i].value;
        if (in_sp[i] < 0 || ker[i] <= 0)
            return 0;
    }
    poprt__nn_geom gg;
    return poprt__nn_window_geom(c->node, nsp, in_sp, ker, 0, &gg) == POPRT_OK &&
           poprt__geom3_lift(&gg, g3) && g3->k_sz * Cg == Kc;
}

static poprt_status conv_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in < 2 || !c->in[1].type || !c->in[1].data ||
        c->in[1].type->elem != POPRT_DTYPE_FLOAT || c->n_out < 1 ||
        c->out[0].kind != POPRT__KIND_TENSOR || c->out[0].rank < 3)
        return POPRT_OK;
    const poprt__type *wt = c->in[1].type;
    int64_t wnum = poprt__type_numel(wt), out_sz = 1;
    if (wnum <= 0 || wt->rank < 3)
        return POPRT_OK;
    for (int d = 2; d < c->out[0].rank; d++) {
        if (c->out[0].dims[d].value < 0)
            return POPRT_OK;
        out_sz *= c->out[0].dims[d].value;
    }
    const int64_t M = wt->dims[0].value, G = poprt__attr_i(c->node, "group", 1);
    if (M <= 0 || G <= 0 || M % G)
        return POPRT_OK;
    const int64_t Mg = M / G, Kc = wnum / M, Cg = wt->dims[1].value;
    /* depthwise or grouped with X and Y in NCHW16c (the layout choice
     * gives both or neither): the blocked functions' taps */
    if (poprt__x86_dwconv_blocked_fits(Cg * G, M, G) && wt->rank == 4 &&
        layout_blocked(c->node, "x_layout") && layout_blocked(c->node, "y_layout"))
        return poprt__x86_dwconv_pack(c->in[1].data, M, Cg, Kc / Cg, state, size);
    if ((Cg == 1 && G > 1) || !poprt__fast_gemm_fits(Mg, out_sz, Kc))
        return POPRT_OK; /* depthwise, or shapes the GEMM hands to the reference */
    const poprt__type *xt = c->in[0].type;
    poprt__geom3 g3;
    const int known = prep_geom(c, xt, wt, Cg, Kc, &g3);
    const int blocked_io = layout_blocked(c->node, "x_layout") || layout_blocked(c->node, "y_layout");
    /* the blocked direct convolution's geometry, on this CPU (1x1 convs
     * stay on the GEMM paths: with no taps to share the input's blocking
     * and the output's transposition, those cost more than they save
     * (resnet50's 1x1 convs 0.85x slower blocked), unless an operand is
     * NCHW16c (lib/compiler/layout.c: then there is neither)) */
    const int blocked_geom = known && wt->rank == 4 && poprt__convb_best() && g3.in[1] > 0 &&
                             g3.in[2] > 0 && poprt__x86_convb_fits(&g3, 1) &&
                             (g3.k_sz > 1 || blocked_io);
    /* one group: when it pays for this shape */
    const int blocked = blocked_geom && G == 1 &&
                        poprt__x86_convb_worth(poprt__convb_best(), &g3, Cg, M, blocked_io);
    /* grouped convs of whole blocks of 16 channels per group (ResNeXt):
     * group by group, in float32 (the per-group GEMMs ran ResNeXt-50's 3x3
     * convs of 16 and 32 channels per group at 2.1-2.2x ONNX Runtime's
     * time, Zen 3) */
    if (blocked_geom && G > 1 && poprt__x86_convb_grouped_fits(Cg * G, M, G))
        return poprt__x86_convb_pack_grouped(NULL, c->in[1].data, G, Mg, Cg, wt->dims[2].value,
                                             wt->dims[3].value, state, size);
    const int want_bf16 = (c->flags & POPRT__PREP_MATMUL_BF16) != 0;
    /* matmul_precision = bfloat16 without AMX tiles, a 3x3 conv that
     * Winograd takes: F(4x4, 3x3) (up to 128 channels) in float32 (4x fewer
     * products than the direct sums against bfloat16's twice-float32 rate,
     * and float32's accuracy); F(2x2, 3x3) with its products in bfloat16
     * (2.25x fewer products at the bfloat16 rate: light_resnet50's 256-channel
     * 3x3 convs at 14 x 14 took 0.5x the direct bfloat16 sums' time) */
    const int wino = want_bf16 && blocked && poprt__x86_conv_bf16_blocked() &&
                             !(c->flags & POPRT__PREP_CONV_DIRECT) && g3.k[1] == 3 &&
                             g3.k[2] == 3
                         ? poprt__x86_convw_fits(&g3, G, Cg, M, 0)
                         : 0;
    if (wino)
        return poprt__x86_convw_pack(NULL, c->in[1].data, M, Cg, 3, 3, wino, wino == 2, state,
                                     size);
    /* otherwise, without AMX tiles: the blocked convolution
     * on channel-pair words (VDPBF16PS), for whole blocks of 16 input
     * channels, or on column-pair words for stems; the compiler keeps
     * such sessions' activations NCHW16c too (lib/compiler/optimize.c) */
    if (want_bf16 && blocked && poprt__x86_conv_bf16_blocked() &&
        (Cg % 16 == 0 || poprt__x86_convb_stem_bf16_fits(&g3, Cg)))
        return poprt__x86_convb_pack(NULL, c->in[1].data, M, Cg, wt->dims[2].value,
                                     wt->dims[3].value, 1, state, size);
    const poprt__sgemm_variant *bf_best = want_bf16 ? poprt__sgemm_best_bf16() : NULL;
    /* otherwise the weights as the bfloat16 GEMM's packed A (the tiled and
     * im2col paths), when the CPU has one and the operands are NCHW (the
     * compiler keeps them so for such sessions on CPUs with AMX) */
    const poprt__sgemm_variant *bf = bf_best && !blocked_io ? bf_best : NULL;
    if (bf)
        bf = poprt__sgemm_fit(bf, Mg, out_sz);
    /* 2-D convs on AMX tiles: tap by tap from an NHWC copy of X */
    if (bf && known && poprt__x86_conv_taps_fits(&g3, G, Cg, Mg, bf))
        return poprt__x86_conv_taps_pack(c->in[1].data, M, Cg, g3.k[1], g3.k[2], state, size);
    /* convs that need an im2col: channel pairs straight into packed B */
    if (bf && known && poprt__x86_conv_pairs_fits(&g3, Cg, bf))
        return poprt__x86_conv_pairs_pack(bf, c->in[1].data, G, Mg, Cg, g3.k_sz, state, size);
    /* direct and tiled paths */
    const poprt__sgemm_variant *v = bf ? bf : conv_variant(Mg, out_sz);
    /* 3x3 stride-1 convs: Winograd F(2x2, 3x3) or F(4x4, 3x3) on the
     * blocked kernels */
    const int force = c->flags & POPRT__PREP_CONV_WINO2 ? 2
                      : c->flags & POPRT__PREP_CONV_WINO4 ? 4
                                                          : 0;
    const int tile = !bf && blocked && !(c->flags & POPRT__PREP_CONV_DIRECT)
                         ? poprt__x86_convw_fits(&g3, G, Cg, M, force)
                         : 0;
    if (tile)
        return poprt__x86_convw_pack(NULL, c->in[1].data, M, Cg, g3.k[1], g3.k[2], tile, 0, state,
                                     size);
    if (!bf && blocked)
        return poprt__x86_convb_pack(NULL, c->in[1].data, M, Cg, wt->dims[2].value,
                                     wt->dims[3].value, 0, state, size);
    if (!bf && wt->rank <= 4 && poprt__x86_conv_trans_fits(G, M, Kc, out_sz)) {
        /* small images: W^T as the GEMM's pre-packed B operand */
        const size_t per = (poprt__sgemm_pack_b_size(NULL, Kc, M) + 63) & ~(size_t)63;
        if (per) {
            const size_t total = CONV_PACK_HEADER + per;
            unsigned char *blob = poprt__aligned_alloc(total);
            if (!blob)
                return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
            memset(blob, 0, total);
            uint64_t h[4] = {CONV_TRANS_MAGIC, (uint64_t)M, (uint64_t)Kc, per};
            memcpy(blob, h, sizeof h);
            poprt__sgemm_pack_b(NULL, NULL, 1, Kc, M, c->in[1].data, Kc, blob + CONV_PACK_HEADER);
            *state = blob;
            *size = total;
            return POPRT_OK;
        }
    }
    if (!bf && known && poprt__x86_conv_direct_fits(&g3, Cg, v)) {
        /* stride-1 convs of the direct path: weights per MR-row panel and tap */
        const int64_t MR = v->mr, panels = (Mg + MR - 1) / MR, ksz = g3.k_sz;
        const size_t per = ((size_t)(panels * MR * Kc) * sizeof(float) + 63) & ~(size_t)63;
        const size_t total = CONV_PACK_HEADER + per * (size_t)G;
        float *blob = poprt__aligned_alloc(total);
        if (!blob)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
        memset(blob, 0, total);
        uint64_t h[8] = {CONV_DIRECT_MAGIC, (uint64_t)G, (uint64_t)Mg, per, (uint64_t)Cg,
                         (uint64_t)ksz, (uint64_t)(v - poprt__sgemm_variants),
                         (uint64_t)v->nr << 16 | (uint64_t)MR};
        memcpy(blob, h, sizeof h);
        const float *w = c->in[1].data;
        /* (asked once: the function is in conv_direct.c now) */
        const int taps = poprt__x86_conv_direct_taps(v, ksz);
        for (int64_t gi = 0; gi < G; gi++) {
            float *dst = (float *)((unsigned char *)blob + CONV_PACK_HEADER + per * (size_t)gi);
            for (int64_t m = 0; m < Mg; m++)
                for (int64_t ci = 0; ci < Cg; ci++)
                    for (int64_t t = 0; t < ksz; t++)
                        dst[(taps ? ((m / MR) * Cg + ci) * ksz + t
                                  : ((m / MR) * ksz + t) * Cg + ci) *
                                MR +
                            m % MR] = w[((gi * Mg + m) * Cg + ci) * ksz + t];
        }
        *state = blob;
        *size = total;
        return POPRT_OK;
    }
    const size_t per = (poprt__sgemm_pack_a_size(v, Mg, Kc) + 63) & ~(size_t)63;
    if (!per)
        return POPRT_OK;
    size_t total = CONV_PACK_HEADER + per * (size_t)G;
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    memset(blob, 0, total);
    uint64_t h[4] = {CONV_PACK_MAGIC, (uint64_t)G, (uint64_t)Mg, per};
    memcpy(blob, h, sizeof h);
    const float *w = c->in[1].data;
    for (int64_t gi = 0; gi < G; gi++)
        poprt__sgemm_pack_a(v, NULL, 0, Mg, Kc, w + gi * Mg * Kc, Kc,
                            blob + CONV_PACK_HEADER + (size_t)gi * per);
    *state = blob;
    *size = total;
    return POPRT_OK;
}

/* Conv's and FusedConv's weight packed once (conv_prepare); their runs read
 * it unpacked only on the plain paths, through unpacked_w. */
poprt_status poprt__x86_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    poprt_status st = conv_prepare(c, state, size);
    if (!st && *state)
        c->consumed |= 1u << 1;
    return st;
}

/* Conv: the checks and types of the operator (poprt__conv_op), float32 on
 * the paths above. */
static poprt_status conv_f32_entry(poprt__kctx *k, const poprt__conv_shape *s, const float *x,
                                   const float *w, const float *b, float *y)
{
    poprt__conv_plan p;
    poprt__x86_conv_plan_of(s, &p);
    return conv_f32(k, &p, x, w, b, y);
}

poprt_status poprt__x86_conv(poprt__kctx *k)
{
    return poprt__conv_op(k, conv_f32_entry);
}

/* ai.poprt FusedConv (lib/compiler/fuse_conv.c): Conv plus its epilogue
 * Y = fp8(post(act(conv(X, W) + B + Z))), float32, on the same paths as Conv. */
poprt_status poprt__x86_fused_conv(poprt__kctx *k)
{
    static const struct {
        const char *name;
        int act;
        float a, b; /* defaults of activation_alpha / activation_beta */
    } acts[] = {
        {"", CONV_ACT_NONE, 0.0f, 0.0f},
        {"Relu", CONV_ACT_RELU, 0.0f, 0.0f},
        {"Clip", CONV_ACT_CLIP, -INFINITY, INFINITY},
        {"LeakyRelu", CONV_ACT_LEAKY, 0.01f, 0.0f},
        {"Sigmoid", CONV_ACT_SIGMOID, 0.0f, 0.0f},
        {"HardSigmoid", CONV_ACT_HSIGMOID, 0.2f, 0.5f},
        {"HardSwish", CONV_ACT_HSWISH, 0.0f, 0.0f},
    };
    poprt__conv_shape s;
    poprt_status st = poprt__conv_setup(k, 0, &s);
    if (st)
        return st;
    poprt__conv_plan p;
    poprt__x86_conv_plan_of(&s, &p);
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    const poprt__tval *z = poprt__kin(k, 3);
    poprt__tval *y = poprt__kout(k, 0);
    if (x->dtype != POPRT_DTYPE_FLOAT || w->dtype != POPRT_DTYPE_FLOAT ||
        (b && b->dtype != POPRT_DTYPE_FLOAT) || (z && z->dtype != POPRT_DTYPE_FLOAT))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "FusedConv takes float32 X, W, B and Z");
    if (z && (z->rank != y->rank || memcmp(z->dims, y->dims, sizeof(int64_t) * (size_t)y->rank)))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "Z must have the shape of Y");
    const char *act = poprt__attr_s(k->node, "activation", "");
    size_t i = 0;
    while (i < sizeof acts / sizeof acts[0] && strcmp(acts[i].name, act) != 0)
        i++;
    if (i == sizeof acts / sizeof acts[0])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "unknown activation '%s'",
                               act);
    p.act = acts[i].act;
    p.act_a = poprt__attr_f(k->node, "activation_alpha", acts[i].a);
    p.act_b = poprt__attr_f(k->node, "activation_beta", acts[i].b);
    p.z = z ? z->data : NULL;
    p.xblk = layout_blocked(k->node, "x_layout");
    p.yblk = layout_blocked(k->node, "y_layout");
    const char *fp8 = poprt__attr_s(k->node, "y_fp8", "");
    if (*fp8) {
        if (strcmp(fp8, "float8e4m3fn") != 0 && strcmp(fp8, "float8e5m2") != 0)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                                   "y_fp8 '%s' is not float8e4m3fn or float8e5m2", fp8);
        p.fp8 = strcmp(fp8, "float8e5m2") == 0 ? 2 : 1;
        p.fp8_scale = poprt__attr_f(k->node, "y_fp8_scale", 1.0f);
        p.fp8_zp = poprt__attr_i(k->node, "y_fp8_zero_point", 0) != 0;
    }
    const poprt__vmath_variant *vm = poprt__vmath_best();
    p.vm = vm;
    static const char *const post_attrs[4] = {"post_ops", "post_reverse", "post_alpha",
                                               "post_beta"};
    if ((st = poprt__ew_scalar_read(k->node, post_attrs, p.post, &p.n_post)))
        return st;
    static const int vm_index[] = {
        [CONV_ACT_RELU] = POPRT__VMATH_relu,       [CONV_ACT_CLIP] = POPRT__VMATH_clip,
        [CONV_ACT_LEAKY] = POPRT__VMATH_leaky_relu, [CONV_ACT_SIGMOID] = POPRT__VMATH_sigmoid,
        [CONV_ACT_HSIGMOID] = POPRT__VMATH_hard_sigmoid,
        [CONV_ACT_HSWISH] = POPRT__VMATH_hard_swish};
    p.add_fn = vm->binary[POPRT__VMATH_add];
    p.act_fn = p.act != CONV_ACT_NONE ? vm->unary[vm_index[p.act]] : NULL;
    p.act_p.alpha = p.act_a;
    p.act_p.beta = p.act_b;
    p.act_p.gamma = 0.0f;
    /* the chain's steps compute what act_fn and the post steps compute */
    static const int ew_of[] = {
        [CONV_ACT_NONE] = -1, [CONV_ACT_RELU] = POPRT__EW_RELU, [CONV_ACT_CLIP] = POPRT__EW_CLIP,
        [CONV_ACT_LEAKY] = POPRT__EW_LEAKY_RELU, [CONV_ACT_SIGMOID] = -1,
        [CONV_ACT_HSIGMOID] = POPRT__EW_HARD_SIGMOID, [CONV_ACT_HSWISH] = POPRT__EW_HARD_SWISH};
    if ((p.act == CONV_ACT_NONE || ew_of[p.act] >= 0) &&
        poprt__vmath_chain_takes(p.post, p.n_post)) {
        int n = 0;
        if (p.act != CONV_ACT_NONE) /* (HardSwish: alpha 0, the operator's form) */
            p.chain[n++] = (poprt__vmath_step){ew_of[p.act], 0,
                                               p.act == CONV_ACT_HSWISH ? 0.0f : p.act_a,
                                               p.act == CONV_ACT_HSWISH ? 0.0f : p.act_b};
        for (int s = 0; s < p.n_post; s++)
            p.chain[n++] = p.post[s];
        p.n_chain = n;
    }
    if (y->numel == 0)
        return POPRT_OK;
    return conv_f32(k, &p, x->data, w->data, b ? b->data : NULL, y->data);
}

int poprt__x86_conv_bf16_blocked(void)
{
    const poprt__sgemm_variant *bf = poprt__sgemm_best_bf16();
    return bf && bf->isa < POPRT__ISA_AMX && poprt__convb_bf16_usable();
}

int poprt__x86_conv_state_usable(const void *state, size_t size)
{
    uint64_t h[8];
    if (!state || size < sizeof h)
        return 1;
    memcpy(h, state, sizeof h);
    const unsigned char *body = (const unsigned char *)state + CONV_PACK_HEADER;
    if (h[0] == CONV_PACK_MAGIC || h[0] == CONV_TRANS_MAGIC || h[0] == CONV_PAIRS_MAGIC) {
        /* the first group's packed operand names the variant of all */
        return size > CONV_PACK_HEADER + 64 && poprt__sgemm_packed_current(body);
    }
    if (h[0] == CONV_TAPS_MAGIC)
        return poprt__x86_conv_taps_usable();
    if (h[0] == CONV_DIRECT_MAGIC)
        return h[6] < (uint64_t)poprt__sgemm_n_variants &&
               poprt__sgemm_usable(&poprt__sgemm_variants[h[6]]);
    if (poprt__x86_convw_state_magic(state, size) == 2)
        return poprt__convb_bf16_usable();
    if (poprt__x86_convw_state_magic(state, size))
        return poprt__x86_convb_layout_current(state, size);
    if (poprt__x86_convb_state_magic(state, size) == 2)
        return poprt__convb_bf16_usable();
    if (poprt__x86_convb_state_magic(state, size))
        return poprt__x86_convb_layout_current(state, size);
    return 1;
}
