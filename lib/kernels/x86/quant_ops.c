/* MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv on the integer
 * GEMM (igemm.h), with the constant weights packed when the session is
 * compiled. Shapes and types outside the fast path (per-row A scales or
 * zero points, batched B, 3-D convolutions, non-float32 scales, K too large
 * for exact int32 sums) run the reference kernels of ref/quant.c, which stay
 * the oracle: the fast path gives the same bits (exact integer sums, then
 * the same double arithmetic and rounding).
 *
 * MatMul: C = A B with A the activations (rows of K bytes, copied when they
 * are int8, which is shifted by 128, or K is not a multiple of 4) and B the
 * weights. Conv: per image and group, the transposed product
 * Y^T[pixels x Mg] = X'[pixels x K] W^T[K x Mg], K ordered (tap, channel):
 * the image goes to channels-last once, X' rows are its Cg channels at
 * each tap (the input zero point outside the image, so padding adds
 * nothing), and the epilogue writes each block back channel-major. */
#include <math.h>
#include <string.h>
#include "ir/geom.h"
#include "kernels/ref/quant.h"
#include "kernels/x86/conv_dw.h"
#include "kernels/x86/igemm.h"
#include "kernels/x86/quant_ops.h"

static int is_byte(int32_t dt)
{
    return dt == POPRT_DTYPE_UINT8 || dt == POPRT_DTYPE_INT8;
}

/* exact int32 sums: K * 255 * 255 < 2^31 */
#define Q_MAX_K 33025

/* ---- output of a block ------------------------------------------------------ */

typedef struct q_out {
    const poprt__igemm_variant *v;
    poprt__igemm_cols cols; /* arrays already offset to the group */
    int requant;            /* 1: bytes through v->rq, 0: int32 through v->fix */
    /* FusedMatMulInteger: floats through v->deq with these scales and
     * bias (deq.s NULL: not fused) */
    poprt__igemm_deq deq;
    int rowsum;             /* some bz != 0 */
    const uint8_t *A;
    int64_t lda, K;
    unsigned char *y;
    int trans;    /* 0: y[m*ldy + n], 1: y[n*ldy + m] */
    int64_t ldy;
} q_out;

/* The block's rows corrected (and requantized) into y, or for trans into
 * scratch rows TS elements apart (the stride spreads them over the cache
 * sets), then copied out channel by channel: runs of m1 - m0 contiguous
 * outputs instead of one element per channel row. */
#define TS (POPRT__IGEMM_NB + 16)
static void q_epi(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int32_t *c,
                  int64_t ldc, void *scratch)
{
    const q_out *o = ctx;
    const size_t esz = o->requant ? 1 : sizeof(int32_t);
    const int64_t n = n1 - n0, rows = m1 - m0;
    unsigned char *t = scratch;
    if (o->deq.s && !o->trans) { /* rows of y */
        for (int64_t m = m0; m < m1; m++) {
            const int32_t rs = o->rowsum ? poprt__igemm_rowsum(o->A + m * o->lda, o->K) : 0;
            o->v->deq(&o->cols, &o->deq, n0, n, c + (m - m0) * ldc, rs,
                      (float *)o->y + m * o->ldy + n0);
        }
        return;
    }
    for (int64_t m = m0; m < m1; m++) {
        const int32_t rs = o->rowsum ? poprt__igemm_rowsum(o->A + m * o->lda, o->K) : 0;
        const int32_t *cr = c + (m - m0) * ldc;
        void *dst = o->trans ? (void *)(t + (size_t)((m - m0) * TS) * esz)
                             : (void *)(o->y + (size_t)(m * o->ldy + n0) * esz);
        if (o->deq.s) /* FusedConvInteger: floats, transposed below as 32-bit words */
            o->v->deq(&o->cols, &o->deq, n0, n, cr, rs, dst);
        else if (o->requant)
            o->v->rq(&o->cols, n0, n, cr, rs, dst);
        else
            o->v->fix(&o->cols, n0, n, cr, rs, dst);
    }
    if (!o->trans)
        return;
    if (o->requant) {
        poprt__igemm_transpose_u8(t, TS, o->y + n0 * o->ldy + m0, o->ldy, rows, n, 0);
        return;
    }
    poprt__igemm_transpose_i32((const int32_t *)scratch, TS, (int32_t *)o->y + n0 * o->ldy + m0,
                               o->ldy, rows, n);
}
#undef TS

/* Zero points and column terms of one product: az of A (shifted when A is
 * int8), bz[j] of B's column j (from zp's element zp_at(j), shifted when B
 * is uint8), colterm[j] = K az bz[j] - az colsum[j], all wrapping. Returns
 * 1 when some bz is not 0. */
static int q_columns(int64_t K, int64_t N, int32_t az, const poprt__tval *bzp, int64_t zp_off,
                     int b_u8, const int32_t *colsum, int32_t *bz, int32_t *colterm)
{
    int any = 0;
    for (int64_t j = 0; j < N; j++) {
        int64_t z = 0;
        if (bzp && bzp->numel > 0)
            z = poprt__load_i64(bzp->data, bzp->dtype, bzp->numel == 1 ? 0 : zp_off + j);
        bz[j] = (int32_t)(z - (b_u8 ? 128 : 0));
        any |= bz[j] != 0;
        colterm[j] = (int32_t)((uint32_t)K * (uint32_t)az * (uint32_t)bz[j] -
                               (uint32_t)az * (uint32_t)colsum[j]);
    }
    return any;
}

static int32_t first_zp(const poprt__tval *zp)
{
    return zp && zp->numel > 0 ? (int32_t)poprt__load_i64(zp->data, zp->dtype, 0) : 0;
}

/* the multiplier a_scale * b_scale / y_scale as the reference forms it */
static float q_mult(double as, double bs, double ys)
{
    return (float)((double)(float)(as * bs) / ys);
}

static int q_scale_ok(const poprt__tval *s)
{
    return s && s->dtype == POPRT_DTYPE_FLOAT && s->numel >= 1;
}

/* Requantization columns of n outputs: mult[j] from the scales (bs per
 * column when it has n values), finite; 0 when some multiplier is not. */
static int q_requant(poprt__igemm_cols *q, float *mult, int64_t n, double as,
                     const poprt__tval *bs, double ys, const poprt__tval *yzp, int32_t ydt)
{
    const float *b = bs->data;
    for (int64_t j = 0; j < n; j++) {
        mult[j] = q_mult(as, b[bs->numel == n ? j : 0], ys);
        if (!isfinite(mult[j]))
            return 0;
    }
    q->mult = mult;
    q->yz = first_zp(yzp);
    q->s8 = ydt == POPRT_DTYPE_INT8;
    q->lo = q->s8 ? -128 : 0;
    q->hi = q->s8 ? 127 : 255;
    return 1;
}

/* ---- packing ------------------------------------------------------------------ */

/* The packed weights of a node: G packs of K x Ng one after the other. */
static const unsigned char *q_packed(const poprt__kctx *k, int64_t G, int64_t K, int64_t Ng)
{
    const size_t one = poprt__igemm_pack_size(K, Ng);
    if (!k->state || k->state_size != (size_t)G * one)
        return NULL;
    for (int64_t g = 0; g < G; g++)
        if (!poprt__igemm_packed_fits((const unsigned char *)k->state + g * one, one, K, Ng))
            return NULL;
    return k->state;
}

/* Conv weights w [M, Cg, taps] as G products of K = taps * Cg (tap-major)
 * by Mg columns; koff: K offsets of scratch */
static void q_pack_conv(const void *w, int b_u8, int64_t G, int64_t Mg, int64_t Cg, int64_t taps,
                        int64_t *koff, unsigned char *dst)
{
    const int64_t K = Cg * taps;
    for (int64_t t = 0; t < taps; t++)
        for (int64_t c = 0; c < Cg; c++)
            koff[t * Cg + c] = c * taps + t;
    const size_t one = poprt__igemm_pack_size(K, Mg);
    for (int64_t g = 0; g < G; g++)
        poprt__igemm_pack(K, Mg, (const int8_t *)w + g * Mg * K, koff, 0, K, b_u8,
                          dst + g * one);
}

/* ---- MatMulInteger, QLinearMatMul ---------------------------------------------- */

typedef struct q_mm_io {
    const poprt__tval *a, *azp, *b, *bzp, *as, *bs, *ys, *yzp;
    poprt__tval *y;
    int requant;
    const poprt__tval *fs, *fc; /* FusedMatMulInteger's scale and bias (float y) */
} q_mm_io;

/* 1 when done, 0 for the reference, < 0 out of scratch */
static int q_matmul(poprt__kctx *k, const q_mm_io *io)
{
    const poprt__tval *a = io->a, *b = io->b;
    if (!a || !b || !io->y || !is_byte(a->dtype) || !is_byte(b->dtype) || b->rank != 2 ||
        a->rank < 1 || (io->azp && io->azp->numel > 1))
        return 0;
    const int64_t K = b->dims[0], N = b->dims[1];
    if (K <= 0 || N <= 0 || a->dims[a->rank - 1] != K || a->numel % K)
        return 0;
    const int64_t M = a->numel / K;
    if (io->y->numel != M * N || (io->bzp && io->bzp->numel > 1 && io->bzp->numel != N))
        return 0;
    if (io->requant &&
        (K > Q_MAX_K || !q_scale_ok(io->as) || io->as->numel != 1 || !q_scale_ok(io->bs) ||
         (io->bs->numel != 1 && io->bs->numel != N) || !q_scale_ok(io->ys) ||
         io->ys->numel != 1 || (io->yzp && io->yzp->numel > 1) || !is_byte(io->y->dtype)))
        return 0;
    if (io->fs && (io->fs->dtype != POPRT_DTYPE_FLOAT || (io->fs->numel != 1 && io->fs->numel != N) ||
                   (io->fc && (io->fc->dtype != POPRT_DTYPE_FLOAT ||
                               (io->fc->numel != 1 && io->fc->numel != N))) ||
                   io->y->dtype != POPRT_DTYPE_FLOAT))
        return 0;
    q_out o;
    memset(&o, 0, sizeof o);
    o.v = poprt__igemm_best();
    o.requant = io->requant;
    if (io->fs) {
        o.deq.s = io->fs->data;
        o.deq.s_all = io->fs->numel != 1;
        o.deq.b = io->fc ? io->fc->data : NULL;
        o.deq.b_all = io->fc && io->fc->numel != 1;
    }
    float *mult = NULL;
    if (io->requant) {
        mult = poprt__kctx_scratch(k, (size_t)N * sizeof *mult);
        if (!mult)
            return -1;
        if (!q_requant(&o.cols, mult, N, ((const float *)io->as->data)[0], io->bs,
                       ((const float *)io->ys->data)[0], io->yzp, io->y->dtype))
            return 0;
    }
    /* B: packed at compile time, else now */
    const int b_u8 = b->dtype == POPRT_DTYPE_UINT8;
    const unsigned char *bp = q_packed(k, 1, K, N);
    if (!bp) {
        unsigned char *p = poprt__kctx_scratch(k, poprt__igemm_pack_size(K, N));
        if (!p)
            return -1;
        poprt__igemm_pack(K, N, b->data, NULL, N, 1, b_u8, p);
        bp = p;
    }
    /* A: rows of 4 * ceil(K/4) bytes, int8 shifted to uint8 */
    const int a_s8 = a->dtype == POPRT_DTYPE_INT8;
    const int32_t az = first_zp(io->azp) + (a_s8 ? 128 : 0);
    const int64_t K4 = (K + 3) / 4 * 4;
    const uint8_t *A = a->data;
    int64_t lda = K;
    if (a_s8 || K4 != K) {
        uint8_t *c = poprt__kctx_scratch(k, (size_t)(M * K4));
        if (!c)
            return -1;
        const uint8_t *src = a->data, flip = a_s8 ? 0x80 : 0;
        for (int64_t i = 0; i < M; i++) {
            for (int64_t j = 0; j < K; j++)
                c[i * K4 + j] = src[i * K + j] ^ flip;
            memset(c + i * K4 + K, 0, (size_t)(K4 - K));
        }
        A = c;
        lda = K4;
    }
    int32_t *bz = poprt__kctx_scratch(k, (size_t)N * sizeof *bz);
    int32_t *colterm = poprt__kctx_scratch(k, (size_t)N * sizeof *colterm);
    const int nt = poprt__kctx_threads(k);
    void *ws = poprt__kctx_scratch(k, poprt__igemm_ws_size(o.v, M, N, nt));
    if (!bz || !colterm || !ws)
        return -1;
    o.rowsum = q_columns(K, N, az, io->bzp, 0, b_u8, poprt__igemm_colsum(bp), bz, colterm);
    o.cols.bz = bz;
    o.cols.colterm = colterm;
    o.A = A;
    o.lda = lda;
    o.K = K;
    o.y = io->y->data;
    o.ldy = N;
    const poprt__igemm_epi epi = {q_epi, &o};
    poprt__par par = poprt__par_kctx(k);
    poprt__igemm(o.v, &par, nt, ws, M, N, K, A, lda, bp, &epi);
    return 1;
}

static poprt_status q_done(poprt__kctx *k, int r, poprt__kernel_fn ref)
{
    if (r > 0)
        return POPRT_OK;
    if (r < 0)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    return ref(k);
}

poprt_status poprt__x86_matmul_integer(poprt__kctx *k)
{
    const q_mm_io io = {poprt__kin(k, 0), poprt__kin(k, 2), poprt__kin(k, 1), poprt__kin(k, 3),
                        NULL, NULL, NULL, NULL, poprt__kout(k, 0), 0};
    if (io.y && io.y->dtype != POPRT_DTYPE_INT32)
        return poprt__ref_matmul_integer(k);
    return q_done(k, q_matmul(k, &io), poprt__ref_matmul_integer);
}

poprt_status poprt__x86_fused_matmul_integer(poprt__kctx *k)
{
    const q_mm_io io = {poprt__kin(k, 0), poprt__kin(k, 2), poprt__kin(k, 1), poprt__kin(k, 3),
                        NULL, NULL, NULL, NULL, poprt__kout(k, 0), 0, poprt__kin(k, 4),
                        poprt__kin(k, 5)};
    if (!io.fs)
        return poprt__ref_poprt_fused_matmul_integer(k);
    return q_done(k, q_matmul(k, &io), poprt__ref_poprt_fused_matmul_integer);
}

poprt_status poprt__x86_qlinear_matmul(poprt__kctx *k)
{
    const q_mm_io io = {poprt__kin(k, 0), poprt__kin(k, 2), poprt__kin(k, 3), poprt__kin(k, 5),
                        poprt__kin(k, 1), poprt__kin(k, 4), poprt__kin(k, 6), poprt__kin(k, 7),
                        poprt__kout(k, 0), 1};
    return q_done(k, q_matmul(k, &io), poprt__ref_qlinear_matmul);
}

/* a constant 2-D byte B (input bi) packed once */
static poprt_status q_prepare_mm(poprt__prep_ctx *c, int bi, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in <= bi || !c->in[bi].type || !c->in[bi].data || c->in[bi].type->rank != 2 ||
        !is_byte(c->in[bi].type->elem))
        return POPRT_OK;
    const int64_t K = c->in[bi].type->dims[0].value, N = c->in[bi].type->dims[1].value;
    if (K <= 0 || N <= 0 || c->in[bi].nbytes < (size_t)(K * N))
        return POPRT_OK;
    const size_t sz = poprt__igemm_pack_size(K, N);
    void *p = poprt__aligned_alloc(sz);
    if (!p)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing the weights of %s",
                          c->node->name ? c->node->name : c->node->op_type);
    poprt__igemm_pack(K, N, c->in[bi].data, NULL, N, 1, c->in[bi].type->elem == POPRT_DTYPE_UINT8,
                      p);
    *state = p;
    *size = sz;
    return POPRT_OK;
}

poprt_status poprt__x86_matmul_integer_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    return q_prepare_mm(c, 1, state, size);
}

poprt_status poprt__x86_qlinear_matmul_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    return q_prepare_mm(c, 3, state, size);
}

/* ---- ConvInteger, QLinearConv ------------------------------------------------------ */

typedef struct q_conv_io {
    const poprt__tval *x, *xzp, *w, *wzp, *xs, *ws, *ys, *yzp, *bias;
    poprt__tval *y;
    int requant;
    const poprt__tval *fs, *fc; /* FusedConvInteger's scale and bias (float y) */
} q_conv_io;

/* 2-D geometry (1-D as a height of 1) */
typedef struct q_geom {
    int64_t N, C, M, G, Cg, Mg, H, W, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL;
} q_geom;

static int q_conv_geom(const poprt__kctx *k, const poprt__tval *x, const poprt__tval *w,
                       const poprt__tval *y, q_geom *q)
{
    if (x->rank != w->rank || (x->rank != 3 && x->rank != 4) || y->rank != x->rank)
        return 0;
    const int nsp = x->rank - 2;
    poprt__nn_geom g;
    if (poprt__nn_window_geom(k->node, nsp, x->dims + 2, w->dims + 2, 0, &g))
        return 0;
    memset(q, 0, sizeof *q);
    q->N = x->dims[0];
    q->C = x->dims[1];
    q->M = w->dims[0];
    q->Cg = w->dims[1];
    q->G = poprt__attr_i(k->node, "group", 1);
    if (q->G < 1 || q->C != q->Cg * q->G || q->M % q->G || q->M <= 0 || q->Cg <= 0)
        return 0;
    q->Mg = q->M / q->G;
    const int h = nsp == 2 ? 0 : -1; /* the height axis, or none */
    q->H = h < 0 ? 1 : g.in[0];
    q->OH = h < 0 ? 1 : g.out[0];
    q->KH = h < 0 ? 1 : g.k[0];
    q->SH = h < 0 ? 1 : g.s[0];
    q->DH = h < 0 ? 1 : g.d[0];
    q->PT = h < 0 ? 0 : g.pb[0];
    q->W = g.in[nsp - 1];
    q->OW = g.out[nsp - 1];
    q->KW = g.k[nsp - 1];
    q->SW = g.s[nsp - 1];
    q->DW = g.d[nsp - 1];
    q->PL = g.pb[nsp - 1];
    return y->numel == q->N * q->M * q->OH * q->OW && q->OH > 0 && q->OW > 0;
}

typedef struct q_im2col {
    const q_geom *g;
    const uint8_t *src; /* one image, channels-last: [H*W][C] */
    const uint8_t *x;   /* the same image, channel-major */
    uint8_t *dst, flip, pad;
    int64_t g0, lda;    /* first channel of the group, row stride */
} q_im2col;

/* channel-major to channels-last, shifting int8 to uint8, in blocks of 64
 * pixels */
static void q_nhwc_rows(void *ctx, int64_t b, int64_t e)
{
    const q_im2col *t = ctx;
    const int64_t C = t->g->C, HW = t->g->H * t->g->W;
    for (int64_t p0 = b; p0 < e; p0 += 64) {
        const int64_t p1 = p0 + 64 < e ? p0 + 64 : e;
        poprt__igemm_transpose_u8(t->x + p0, HW, t->dst + p0 * C, C, C, p1 - p0, t->flip);
    }
}

/* rows [b, e) of X': the group's channels at each tap, pad outside */
static void q_im2col_rows(void *ctx, int64_t b, int64_t e)
{
    const q_im2col *t = ctx;
    const q_geom *g = t->g;
    const int64_t Cg = g->Cg, K = Cg * g->KH * g->KW;
    const int whole = Cg == g->C && g->DW == 1;
    for (int64_t p = b; p < e; p++) {
        const int64_t oh = p / g->OW, ow = p % g->OW;
        uint8_t *d = t->dst + p * t->lda;
        for (int64_t kh = 0; kh < g->KH; kh++) {
            const int64_t ih = oh * g->SH - g->PT + kh * g->DH, iw0 = ow * g->SW - g->PL;
            if (whole && ih >= 0 && ih < g->H && iw0 >= 0 && iw0 + g->KW <= g->W) {
                /* one group, no dilation, the row's taps inside: they are
                 * KW * C contiguous bytes of the channels-last image */
                memcpy(d, t->src + (ih * g->W + iw0) * g->C, (size_t)(g->KW * Cg));
                d += g->KW * Cg;
                continue;
            }
            for (int64_t kw = 0; kw < g->KW; kw++, d += Cg) {
                const int64_t iw = ow * g->SW - g->PL + kw * g->DW;
                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W)
                    memset(d, t->pad, (size_t)Cg);
                else
                    memcpy(d, t->src + (ih * g->W + iw) * g->C + t->g0, (size_t)Cg);
            }
        }
        memset(t->dst + p * t->lda + K, 0, (size_t)(t->lda - K));
    }
}

/* ---- depthwise (one input and one output channel per group) ------------------------ */

typedef struct q_dw {
    const q_geom *g;
    const poprt__igemm_variant *v;
    const poprt__tval *x, *w, *wzp;
    int32_t xz;
    poprt__igemm_cols cols; /* mult, yz, lo, hi, s8 of QLinearConv (mult NULL: int32 out) */
    const float *mult;      /* per channel */
    const poprt__tval *fs, *fc; /* FusedConvInteger's scale and bias per channel or one */
    const double *bias;
    unsigned char *y, *ws;
    size_t chunk;           /* scratch bytes per chunk */
    int64_t nplanes, nchunk;
    /* the float form (DW_F_MAX_TAPS): the plane function, its padded
     * plane's rows and pitch, that plane's floats in the chunk */
    const poprt__dwconv_variant *fv;
    int64_t Hp, Wp, pad_floats;
} q_dw;

/* Taps up to which the float sums of (x - xz)(w - wz) are exact: every
 * product and partial sum is an integer below 258 * 255 * 255 < 2^24. */
#define DW_F_MAX_TAPS 258

static int32_t q_byte(const void *p, int32_t dt, int64_t i)
{
    return dt == POPRT_DTYPE_INT8 ? ((const int8_t *)p)[i] : ((const uint8_t *)p)[i];
}

/* ceil(a / b) for b > 0 */
static int64_t q_cdiv(int64_t a, int64_t b)
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static size_t q_dw_chunk(const q_geom *g, int64_t pad_floats, int int_sums)
{
    const int64_t P = g->OH * g->OW, xs = int_sums ? g->H * g->W : 0;
    return (size_t)(xs + 3 * P + pad_floats) * 4 + (size_t)P * 8 + 192;
}

/* The plane's sums in float on the depthwise plane function (conv_dw.h):
 * x - xz into the interior of the zero-padded plane xp (its border zeroed
 * by the caller), the taps w - wz, then the float sums (exact integers,
 * DW_F_MAX_TAPS) back to int32 in acc. */
static void q_dw_float(const q_dw *d, int64_t plane, int32_t wz, float *xp, int32_t *acc)
{
    const q_geom *g = d->g;
    const int64_t HW = g->H * g->W, taps = g->KH * g->KW, m = plane % g->M;
    int64_t i0, i1, j0, j1;
    poprt__pad_span(g->PT, g->H, d->Hp, &i0, &i1);
    poprt__pad_span(g->PL, g->W, d->Wp, &j0, &j1);
    const float xz = (float)d->xz;
    for (int64_t i = i0; i < i1; i++) {
        float *dst = xp + i * d->Wp;
        const int64_t src = plane * HW + (i - g->PT) * g->W - g->PL;
        if (d->x->dtype == POPRT_DTYPE_INT8) {
            const int8_t *xs = (const int8_t *)d->x->data + src;
            for (int64_t j = j0; j < j1; j++)
                dst[j] = (float)xs[j] - xz;
        } else {
            const uint8_t *xs = (const uint8_t *)d->x->data + src;
            for (int64_t j = j0; j < j1; j++)
                dst[j] = (float)xs[j] - xz;
        }
    }
    float wf[DW_F_MAX_TAPS];
    for (int64_t t = 0; t < taps; t++)
        wf[t] = (float)(q_byte(d->w->data, d->w->dtype, m * taps + t) - wz);
    float *y = (float *)acc;
    d->fv->plane(xp, d->Wp, wf, g->KH, g->KW, g->SH, g->SW, g->DH, g->DW, g->PT, g->H, 0.0f,
                 g->OH, g->OW, y);
    const int64_t P = g->OH * g->OW;
    for (int64_t i = 0; i < P; i++)
        acc[i] = (int32_t)y[i];
}

/* The scratch of a chunk: x - xz [H*W] (int32; only for the int32 sums,
 * q_dw_int), acc, zero and mult [P], then 64-byte aligned bias [P]
 * (double) and the float form's padded plane */
typedef struct q_dw_scr {
    int32_t *xs, *acc, *zero;
    float *mult, *xp;
    double *bias;
} q_dw_scr;

static q_dw_scr q_dw_layout(const q_dw *d, unsigned char *scr)
{
    const int64_t P = d->g->OH * d->g->OW;
    q_dw_scr r;
    r.xs = (int32_t *)scr;
    r.acc = r.xs + (d->fv ? 0 : d->g->H * d->g->W);
    r.zero = r.acc + P;
    r.mult = (float *)(r.zero + P);
    r.bias = (double *)(((uintptr_t)(r.mult + P) + 63) & ~(uintptr_t)63);
    r.xp = (float *)(((uintptr_t)(r.bias + P) + 63) & ~(uintptr_t)63);
    return r;
}

/* The plane's sums in int32 over the taps inside (kept for kernels of more
 * than DW_F_MAX_TAPS taps). */
static void q_dw_int(const q_dw *d, int64_t plane, int32_t wz, int32_t *xs, int32_t *acc)
{
    const q_geom *g = d->g;
    const int64_t P = g->OH * g->OW, HW = g->H * g->W, m = plane % g->M, taps = g->KH * g->KW;
    for (int64_t i = 0; i < HW; i++)
        xs[i] = q_byte(d->x->data, d->x->dtype, plane * HW + i) - d->xz;
    memset(acc, 0, (size_t)P * sizeof *acc);
    for (int64_t t = 0; t < taps; t++) {
        const int32_t wv = q_byte(d->w->data, d->w->dtype, m * taps + t) - wz;
        const int64_t kh = t / g->KW, kw = t % g->KW, off = kw * g->DW - g->PL;
        /* the output columns whose input column is inside */
        int64_t ow0 = q_cdiv(-off, g->SW), ow1 = q_cdiv(g->W - off, g->SW);
        ow0 = ow0 < 0 ? 0 : ow0;
        ow1 = ow1 > g->OW ? g->OW : ow1;
        if (!wv || ow0 >= ow1)
            continue;
        for (int64_t oh = 0; oh < g->OH; oh++) {
            const int64_t ih = oh * g->SH - g->PT + kh * g->DH;
            if (ih < 0 || ih >= g->H)
                continue;
            const int64_t base = ih * g->W + off;
            int32_t *ar = acc + oh * g->OW;
            for (int64_t ow = ow0; ow < ow1; ow++)
                ar[ow] += xs[base + ow * g->SW] * wv;
        }
    }
}

/* One plane: acc[p] = sum over the taps inside of (x - xz)(w - wz), exact
 * (as the reference sums), then the same requantization rows as the GEMM
 * path with the channel's constants repeated over the plane. */
static void q_dw_plane(const q_dw *d, int64_t plane, unsigned char *scr)
{
    const q_geom *g = d->g;
    const int64_t P = g->OH * g->OW, m = plane % g->M;
    const q_dw_scr r = q_dw_layout(d, scr);
    int32_t *acc = r.acc, *zero = r.zero;
    float *mult = r.mult;
    double *bias = r.bias;
    const int64_t wn = d->wzp ? d->wzp->numel : 0;
    const int32_t wz = wn > 0 ? (int32_t)poprt__load_i64(d->wzp->data, d->wzp->dtype,
                                                         wn == g->M ? m : 0)
                              : 0;
    if (d->fv)
        q_dw_float(d, plane, wz, r.xp, acc);
    else
        q_dw_int(d, plane, wz, r.xs, acc);
    poprt__igemm_cols q = d->cols;
    memset(zero, 0, (size_t)P * sizeof *zero);
    q.colterm = zero;
    q.bz = NULL;
    if (d->fs) {
        const int64_t ns = d->fs->numel, nc = d->fc ? d->fc->numel : 0;
        const poprt__igemm_deq dq = {(const float *)d->fs->data + (ns == g->M ? m : 0),
                                     d->fc ? (const float *)d->fc->data + (nc == g->M ? m : 0)
                                           : NULL,
                                     0, 0};
        d->v->deq(&q, &dq, 0, P, acc, 0, (float *)d->y + plane * P);
        return;
    }
    if (!d->mult) {
        d->v->fix(&q, 0, P, acc, 0, (int32_t *)d->y + plane * P);
        return;
    }
    for (int64_t i = 0; i < P; i++) {
        mult[i] = d->mult[m];
        bias[i] = d->bias[m];
    }
    q.mult = mult;
    q.bias = bias;
    d->v->rq(&q, 0, P, acc, 0, d->y + plane * P);
}

static void q_dw_chunks(void *ctx, int64_t b, int64_t e)
{
    const q_dw *d = ctx;
    for (int64_t c = b; c < e; c++) {
        unsigned char *scr = d->ws + (size_t)c * d->chunk;
        if (d->fv) /* the padded plane's border: zeroed once per chunk */
            memset(q_dw_layout(d, scr).xp, 0, (size_t)d->pad_floats * sizeof(float));
        for (int64_t p = c * d->nplanes / d->nchunk; p < (c + 1) * d->nplanes / d->nchunk; p++)
            q_dw_plane(d, p, scr);
    }
}

static int q_depthwise(poprt__kctx *k, const q_conv_io *io, const q_geom *g, const q_out *o,
                       const float *mult, const double *bias)
{
    q_dw d;
    memset(&d, 0, sizeof d);
    d.g = g;
    d.v = o->v;
    d.x = io->x;
    d.w = io->w;
    d.wzp = io->wzp;
    d.xz = first_zp(io->xzp);
    d.cols = o->cols;
    d.mult = io->requant ? mult : NULL;
    d.fs = io->fs;
    d.fc = io->fc;
    d.bias = bias;
    d.y = io->y->data;
    d.nplanes = g->N * g->M;
    d.nchunk = poprt__kctx_threads(k);
    d.nchunk = d.nchunk < d.nplanes ? d.nchunk : d.nplanes;
    if (g->KH * g->KW <= DW_F_MAX_TAPS) {
        d.fv = poprt__dwconv_best();
        d.Hp = (g->OH - 1) * g->SH + g->DH * (g->KH - 1) + 1;
        d.Wp = (g->OW - 1) * g->SW + g->DW * (g->KW - 1) + 1;
        /* the plane function reads up to 16 sw + 16 floats past the plane */
        d.pad_floats = (d.Hp * d.Wp + 16 * g->SW + 16 + 15) & ~(int64_t)15;
    }
    d.chunk = (q_dw_chunk(g, d.pad_floats, !d.fv) + 63) / 64 * 64;
    d.ws = poprt__kctx_scratch(k, d.chunk * (size_t)d.nchunk);
    if (!d.ws)
        return -1;
    poprt__kctx_parallel_for(k, d.nchunk, 1, q_dw_chunks, &d);
    return 1;
}

static int q_conv(poprt__kctx *k, const q_conv_io *io)
{
    const poprt__tval *x = io->x, *w = io->w;
    q_geom g;
    if (!x || !w || !io->y || !is_byte(x->dtype) || !is_byte(w->dtype) ||
        !q_conv_geom(k, x, w, io->y, &g))
        return 0;
    const int64_t taps = g.KH * g.KW, K = g.Cg * taps, P = g.OH * g.OW, M = g.M;
    if (io->wzp && io->wzp->numel > 1 && io->wzp->numel != M)
        return 0;
    if (io->requant &&
        (K > Q_MAX_K || !q_scale_ok(io->xs) || !q_scale_ok(io->ws) ||
         (io->ws->numel != 1 && io->ws->numel != M) || !q_scale_ok(io->ys) ||
         !is_byte(io->y->dtype) ||
         (io->bias && io->bias->numel && (io->bias->dtype != POPRT_DTYPE_INT32 ||
                                          (io->bias->numel != 1 && io->bias->numel != M)))))
        return 0;
    if (io->fs && (io->fs->dtype != POPRT_DTYPE_FLOAT || (io->fs->numel != 1 && io->fs->numel != M) ||
                   (io->fc && (io->fc->dtype != POPRT_DTYPE_FLOAT ||
                               (io->fc->numel != 1 && io->fc->numel != M))) ||
                   io->y->dtype != POPRT_DTYPE_FLOAT))
        return 0;
    q_out o;
    memset(&o, 0, sizeof o);
    o.v = poprt__igemm_best();
    o.requant = io->requant;
    double *bias = NULL;
    float *mult = NULL;
    if (io->requant) {
        mult = poprt__kctx_scratch(k, (size_t)M * sizeof *mult);
        bias = poprt__kctx_scratch(k, (size_t)M * sizeof *bias);
        if (!mult || !bias)
            return -1;
        if (!q_requant(&o.cols, mult, M, ((const float *)io->xs->data)[0], io->ws,
                       ((const float *)io->ys->data)[0], io->yzp, io->y->dtype))
            return 0;
        const int32_t *bv = io->bias && io->bias->numel ? io->bias->data : NULL;
        for (int64_t m = 0; m < M; m++)
            bias[m] = bv ? (double)bv[io->bias->numel == M ? m : 0] : 0.0;
    }
    if (g.Cg == 1 && g.Mg == 1)
        return q_depthwise(k, io, &g, &o, mult, bias);
    const int b_u8 = w->dtype == POPRT_DTYPE_UINT8;
    const unsigned char *bp = q_packed(k, g.G, K, g.Mg);
    const size_t one = poprt__igemm_pack_size(K, g.Mg);
    if (!bp) {
        unsigned char *p = poprt__kctx_scratch(k, (size_t)g.G * one);
        int64_t *koff = poprt__kctx_scratch(k, (size_t)K * sizeof *koff);
        if (!p || !koff)
            return -1;
        q_pack_conv(w->data, b_u8, g.G, g.Mg, g.Cg, taps, koff, p);
        bp = p;
    }
    const int x_s8 = x->dtype == POPRT_DTYPE_INT8;
    const int32_t az = first_zp(io->xzp) + (x_s8 ? 128 : 0);
    const int64_t K4 = (K + 3) / 4 * 4;
    /* 1x1, stride 1, no padding, one group: X' is the channels-last image */
    const int direct = taps == 1 && g.G == 1 && g.SH == 1 && g.SW == 1 && g.PT == 0 &&
                       g.PL == 0 && g.OH == g.H && g.OW == g.W && K4 == K;
    const int nt = poprt__kctx_threads(k);
    uint8_t *nhwc = poprt__kctx_scratch(k, (size_t)(g.H * g.W * g.C));
    uint8_t *cols = direct ? nhwc : poprt__kctx_scratch(k, (size_t)(P * K4));
    int32_t *bz = poprt__kctx_scratch(k, (size_t)M * sizeof *bz);
    int32_t *colterm = poprt__kctx_scratch(k, (size_t)M * sizeof *colterm);
    void *ws = poprt__kctx_scratch(k, poprt__igemm_ws_size(o.v, P, g.Mg, nt));
    if (!nhwc || !cols || !bz || !colterm || !ws)
        return -1;
    int any = 0;
    for (int64_t gi = 0; gi < g.G; gi++)
        any |= q_columns(K, g.Mg, az, io->wzp, gi * g.Mg, b_u8,
                         poprt__igemm_colsum(bp + gi * one), bz + gi * g.Mg,
                         colterm + gi * g.Mg);
    o.rowsum = any;
    o.A = cols;
    o.lda = direct ? K : K4;
    o.K = K;
    o.trans = 1;
    o.ldy = P;
    poprt__par par = poprt__par_kctx(k);
    const size_t esz = io->requant ? 1 : sizeof(int32_t);
    const int64_t HW = g.H * g.W;
    for (int64_t b = 0; b < g.N; b++) {
        q_im2col t = {&g, NULL, (const uint8_t *)x->data + b * g.C * HW, nhwc,
                      (uint8_t)(x_s8 ? 0x80 : 0), (uint8_t)az, 0, K4};
        poprt__kctx_parallel_for(k, HW, 256, q_nhwc_rows, &t);
        t.src = nhwc;
        t.dst = cols;
        for (int64_t gi = 0; gi < g.G; gi++) {
            if (!direct) {
                t.g0 = gi * g.Cg;
                poprt__kctx_parallel_for(k, P, 64, q_im2col_rows, &t);
            }
            const int64_t m0 = gi * g.Mg;
            o.cols.colterm = colterm + m0;
            o.cols.bz = bz + m0;
            o.cols.mult = mult ? mult + m0 : NULL;
            o.cols.bias = bias ? bias + m0 : NULL;
            if (io->fs) { /* the group's scales and biases */
                o.deq.s = (const float *)io->fs->data + (io->fs->numel != 1 ? m0 : 0);
                o.deq.s_all = io->fs->numel != 1;
                o.deq.b = io->fc ? (const float *)io->fc->data + (io->fc->numel != 1 ? m0 : 0)
                                 : NULL;
                o.deq.b_all = io->fc && io->fc->numel != 1;
            }
            o.y = (unsigned char *)io->y->data + (size_t)((b * M + m0) * P) * esz;
            const poprt__igemm_epi epi = {q_epi, &o};
            poprt__igemm(o.v, &par, nt, ws, P, g.Mg, K, cols, o.lda, bp + gi * one, &epi);
        }
    }
    return 1;
}

poprt_status poprt__x86_conv_integer(poprt__kctx *k)
{
    const q_conv_io io = {poprt__kin(k, 0), poprt__kin(k, 2), poprt__kin(k, 1), poprt__kin(k, 3),
                          NULL, NULL, NULL, NULL, NULL, poprt__kout(k, 0), 0};
    if (io.y && io.y->dtype != POPRT_DTYPE_INT32)
        return poprt__ref_conv_integer(k);
    return q_done(k, q_conv(k, &io), poprt__ref_conv_integer);
}

poprt_status poprt__x86_fused_conv_integer(poprt__kctx *k)
{
    const q_conv_io io = {poprt__kin(k, 0), poprt__kin(k, 2), poprt__kin(k, 1), poprt__kin(k, 3),
                          NULL, NULL, NULL, NULL, NULL, poprt__kout(k, 0), 0, poprt__kin(k, 4),
                          poprt__kin(k, 5)};
    if (!io.fs)
        return poprt__ref_poprt_fused_conv_integer(k);
    return q_done(k, q_conv(k, &io), poprt__ref_poprt_fused_conv_integer);
}

poprt_status poprt__x86_qlinear_conv(poprt__kctx *k)
{
    const q_conv_io io = {poprt__kin(k, 0), poprt__kin(k, 2), poprt__kin(k, 3), poprt__kin(k, 5),
                          poprt__kin(k, 1), poprt__kin(k, 4), poprt__kin(k, 6), poprt__kin(k, 7),
                          poprt__kin(k, 8), poprt__kout(k, 0), 1};
    return q_done(k, q_conv(k, &io), poprt__ref_qlinear_conv);
}

/* constant byte weights w (input wi) [M, Cg, k...] packed once per group */
static poprt_status q_prepare_conv(poprt__prep_ctx *c, int wi, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in <= wi || !c->in[wi].type || !c->in[wi].data || c->in[wi].type->rank < 3 ||
        c->in[wi].type->rank > 4 || !is_byte(c->in[wi].type->elem))
        return POPRT_OK;
    const poprt__type *t = c->in[wi].type;
    int64_t taps = 1;
    for (int i = 2; i < t->rank; i++)
        taps *= t->dims[i].value;
    const int64_t M = t->dims[0].value, Cg = t->dims[1].value;
    const int64_t G = poprt__attr_i(c->node, "group", 1);
    if (M <= 0 || Cg <= 0 || taps <= 0 || G < 1 || M % G ||
        c->in[wi].nbytes < (size_t)(M * Cg * taps))
        return POPRT_OK;
    const int64_t K = Cg * taps, Mg = M / G;
    const size_t sz = (size_t)G * poprt__igemm_pack_size(K, Mg);
    unsigned char *p = poprt__aligned_alloc(sz);
    int64_t *koff = poprt__aligned_alloc((size_t)K * sizeof *koff);
    if (!p || !koff) {
        poprt__aligned_free(p);
        poprt__aligned_free(koff);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing the weights of %s",
                          c->node->name ? c->node->name : c->node->op_type);
    }
    q_pack_conv(c->in[wi].data, t->elem == POPRT_DTYPE_UINT8, G, Mg, Cg, taps, koff, p);
    poprt__aligned_free(koff);
    *state = p;
    *size = sz;
    return POPRT_OK;
}

poprt_status poprt__x86_conv_integer_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    return q_prepare_conv(c, 1, state, size);
}

poprt_status poprt__x86_qlinear_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    return q_prepare_conv(c, 3, state, size);
}

/* ---- QuantizeLinear, DynamicQuantizeLinear (float32 per tensor) -------------------- */

typedef struct q_quant {
    const poprt__igemm_variant *v;
    const float *x;
    unsigned char *y;
    float scale, zp;
    int lo, hi, s8;
} q_quant;

static void q_quant_range(void *ctx, int64_t b, int64_t e)
{
    const q_quant *q = ctx;
    q->v->quant(q->x + b, e - b, q->scale, q->zp, q->lo, q->hi, q->s8, q->y + b);
}

static void q_quantize(poprt__kctx *k, const float *x, int64_t n, float scale, float zp,
                       int32_t ydt, void *y)
{
    const int s8 = ydt == POPRT_DTYPE_INT8;
    q_quant q = {poprt__igemm_best(), x, y, scale, zp, s8 ? -128 : 0, s8 ? 127 : 255, s8};
    poprt__kctx_parallel_for(k, n, 16384, q_quant_range, &q);
}

poprt_status poprt__x86_quantize_linear(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *s = poprt__kin(k, 1), *zp = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    const int32_t prec = (int32_t)poprt__attr_i(k->node, "precision", 0);
    if (!x || !s || !y || x->dtype != POPRT_DTYPE_FLOAT || s->dtype != POPRT_DTYPE_FLOAT ||
        s->numel != 1 || !is_byte(y->dtype) || y->numel != x->numel ||
        (zp && (zp->numel != 1 || zp->dtype != y->dtype)) ||
        (prec && prec != POPRT_DTYPE_FLOAT))
        return poprt__ref_quantize_linear(k);
    q_quantize(k, x->data, x->numel, ((const float *)s->data)[0], (float)first_zp(zp), y->dtype,
               y->data);
    return POPRT_OK;
}

/* DequantizeLinear of bytes with one scale and zero point: the reference's
 * float32 steps ((float)x - zp, then * scale: one rounding), over the
 * session's threads; the compiler leaves these on activations that float
 * operators read (a QDQ model's residual Adds, pools, heads). */
typedef struct dq_job {
    const uint8_t *x;
    float *y, zp, scale;
    int s8;
} dq_job;

static void dq_range(void *ctx, int64_t b, int64_t e)
{
    const dq_job *j = ctx;
    const float zp = j->zp, sc = j->scale;
    if (j->s8) {
        const int8_t *x = (const int8_t *)j->x;
        for (int64_t i = b; i < e; i++)
            j->y[i] = ((float)x[i] - zp) * sc;
    } else {
        for (int64_t i = b; i < e; i++)
            j->y[i] = ((float)j->x[i] - zp) * sc;
    }
}

poprt_status poprt__x86_dequantize_linear(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *s = poprt__kin(k, 1), *zp = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !s || !y || !is_byte(x->dtype) || s->dtype != POPRT_DTYPE_FLOAT || s->numel != 1 ||
        y->dtype != POPRT_DTYPE_FLOAT || y->numel != x->numel ||
        (zp && (zp->numel != 1 || zp->dtype != x->dtype)))
        return poprt__ref_dequantize_linear(k);
    dq_job j = {x->data, y->data, (float)first_zp(zp), ((const float *)s->data)[0],
                x->dtype == POPRT_DTYPE_INT8};
    poprt__kctx_parallel_for(k, x->numel, 16384, dq_range, &j);
    return POPRT_OK;
}

/* DynamicQuantizeLinear's range in chunks of this many values */
#define Q_MINMAX_CHUNK 32768

typedef struct q_range {
    const poprt__igemm_variant *v;
    const float *x;
    int64_t n;
    float *part; /* min, max per chunk */
} q_range;

static void q_minmax_chunks(void *ctx, int64_t b, int64_t e)
{
    const q_range *r = ctx;
    for (int64_t c = b; c < e; c++) {
        const int64_t lo = c * Q_MINMAX_CHUNK;
        const int64_t len = r->n - lo < Q_MINMAX_CHUNK ? r->n - lo : Q_MINMAX_CHUNK;
        float mn = 0.0f, mx = 0.0f;
        r->v->minmax(r->x + lo, len, &mn, &mx);
        r->part[2 * c] = mn;
        r->part[2 * c + 1] = mx;
    }
}

poprt_status poprt__x86_dynamic_quantize_linear(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0), *ys = poprt__kout(k, 1), *yzp = poprt__kout(k, 2);
    if (!x || !y || x->dtype != POPRT_DTYPE_FLOAT || y->dtype != POPRT_DTYPE_UINT8 ||
        y->numel != x->numel)
        return poprt__ref_dynamic_quantize_linear(k);
    /* the reference's scale and zero point from the range (which holds 0),
     * over chunks in parallel (min and max do not depend on the split) */
    float mn = 0.0f, mx = 0.0f;
    const int64_t nch = (x->numel + Q_MINMAX_CHUNK - 1) / Q_MINMAX_CHUNK;
    float *part = nch > 1 ? poprt__kctx_scratch(k, (size_t)nch * 2 * sizeof(float)) : NULL;
    if (part) {
        q_range r = {poprt__igemm_best(), x->data, x->numel, part};
        poprt__kctx_parallel_for(k, nch, 1, q_minmax_chunks, &r);
        for (int64_t c = 0; c < nch; c++) {
            mn = part[2 * c] < mn ? part[2 * c] : mn;
            mx = part[2 * c + 1] > mx ? part[2 * c + 1] : mx;
        }
    } else {
        poprt__igemm_best()->minmax(x->data, x->numel, &mn, &mx);
    }
    const float scale = (mx == mn ? 1.0f : (mx - mn)) / 255.0f;
    float zpf = 0.0f - mn / scale;
    zpf = zpf < 0.0f ? 0.0f : (zpf > 255.0f ? 255.0f : zpf);
    const float zp = (float)nearbyint(isnan(zpf) ? 0.0f : zpf);
    q_quantize(k, x->data, x->numel, scale, zp, POPRT_DTYPE_UINT8, y->data);
    if (ys)
        *(float *)ys->data = scale;
    if (yzp)
        *(uint8_t *)yzp->data = (uint8_t)zp;
    return POPRT_OK;
}
