/* Reference kernels of the 'poprt_fused' family (domain "ai.poprt").
 * Computation is in float32 (other float inputs are converted through
 * scratch memory); the GEMMs go through poprt__ref_sgemm so every output is
 * summed in a fixed order whatever the thread count. */
#include <math.h>
#include <string.h>
#include "kernels/ref/poprt_fused.h"
#include "kernels/ref/gemm.h"
#include "kernels/ref/util.h"
#include "kernels/ref/reduce.h"

/* ==================== FusedAttention / PackedAttention ==================== */

#define QBLOCK 32 /* query rows per score block: bounds scratch to 32 x keys per head */

typedef struct att_task {
    const float *q, *kv, *v; /* q rows [B*S] with stride ldq; K and V rows with stride ldkv */
    int64_t ldq, ldkv;
    const int64_t *key_off, *key_n; /* per batch: first K/V row and number of keys */
    const float *mask;   /* general additive mask (FusedAttention) or NULL */
    int64_t mstr[4];     /* its strides broadcast to [B, NH, S, S] */
    const float *addk;   /* PackedAttention: additive value per K/V row, or NULL */
    float *y, *scratch;  /* y [B, S, H]; scratch QBLOCK * max keys per (b, h) */
    int64_t S, H, NH, HD, maxk;
    float scale;
    const poprt__vmath_variant *vm;
    /* e (NULL: poprt__ref_sgemm) computes the score blocks and products on
     * the calling thread, unit u with ews + u * ews_bytes as workspace */
    const poprt__gemm_engine *e;
    char *ews;
    size_t ews_bytes;
} att_task;

/* A key whose additive mask is at most this weighs exactly 0 after the
 * softmax (its score + mask stays far below the row's maximum, and exp
 * underflows to 0), so skipping it leaves every sum as it was. */
#define ATT_DEAD -1e30f

/* Keys [0, n) of qb query rows whose masks m (strides mstr[2] per row,
 * mstr[3] per key) hold each row's last key above ATT_DEAD; nk when a row
 * has none (a row masked whole keeps the softmax of all its keys). */
static int64_t att_live_keys(const float *m, const int64_t mstr[4], int64_t qb, int64_t nk)
{
    int64_t n = 0;
    for (int64_t i = 0; i < qb; i++) {
        const float *r = m + i * mstr[2];
        int64_t j = nk;
        while (j > 0 && r[(j - 1) * mstr[3]] <= ATT_DEAD)
            j--;
        if (j == 0)
            return nk;
        n = j > n ? j : n;
    }
    return n;
}

/* C = alpha A op(B) on the calling thread: t's engine with unit u's
 * workspace, or the reference loops. */
static void att_gemm(const att_task *t, int64_t u, int tb, int64_t M, int64_t N, int64_t K,
                     float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                     float *C, int64_t ldc)
{
    if (t->e)
        t->e->run(NULL, t->ews ? t->ews + (size_t)u * t->ews_bytes : NULL, 0, tb, M, N, K, alpha,
                  A, lda, B, ldb, 0.0f, C, ldc);
    else
        poprt__ref_sgemm(0, tb, M, N, K, alpha, A, lda, B, ldb, 0.0f, C, ldc);
}

static void att_task_fn(void *ctx, int64_t u0, int64_t u1)
{
    const att_task *t = ctx;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t b = u / t->NH, h = u % t->NH;
        const int64_t nk = t->key_n[b], k0 = t->key_off[b];
        const float *K = t->kv + k0 * t->ldkv + h * t->HD;
        const float *V = t->v + k0 * t->ldkv + h * t->HD;
        float *sc = t->scratch + u * QBLOCK * t->maxk;
        for (int64_t i0 = 0; i0 < t->S; i0 += QBLOCK) {
            const int64_t qb = t->S - i0 < QBLOCK ? t->S - i0 : QBLOCK;
            const float *Q = t->q + (b * t->S + i0) * t->ldq + h * t->HD;
            const float *m0 =
                t->mask ? t->mask + b * t->mstr[0] + h * t->mstr[1] + i0 * t->mstr[2] : NULL;
            /* keys past the block's last live one (mask > ATT_DEAD for some
             * row) are skipped: a causal mask's upper triangle */
            const int64_t nl = m0 && t->mstr[2] ? att_live_keys(m0, t->mstr, qb, nk) : nk;
            att_gemm(t, u, 1, qb, nl, t->HD, t->scale, Q, t->ldq, K, t->ldkv, sc, nl);
            for (int64_t i = 0; i < qb; i++) {
                float *row = sc + i * nl;
                if (t->mask) {
                    const float *m = m0 + i * t->mstr[2];
                    for (int64_t j = 0; j < nl; j++)
                        row[j] += m[j * t->mstr[3]];
                } else if (t->addk) {
                    const float *m = t->addk + k0;
                    for (int64_t j = 0; j < nl; j++)
                        row[j] += m[j];
                }
                poprt__ref_softmax_row_f32(t->vm, row, row, nl, 0);
            }
            float *Y = t->y + (b * t->S + i0) * t->H + h * t->HD;
            att_gemm(t, u, 0, qb, t->HD, nl, 1.0f, sc, nl, V, t->ldkv, Y, t->H);
        }
    }
}

typedef struct att_args {
    const poprt__tval *x, *w, *b, *y;
    int64_t B, S, Hin, H, NH, HD;
    float scale;
} att_args;

static poprt_status att_check(poprt__kctx *k, att_args *a, poprt__tval *y)
{
    a->x = poprt__kin(k, 0);
    a->w = poprt__kin(k, 1);
    a->b = poprt__kin(k, 2);
    a->y = y;
    if (!a->x || !a->w || !y || a->x->rank != 3 || a->w->rank != 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "needs X [B, S, Hin], Wqkv [Hin, 3H] and Y");
    a->B = a->x->dims[0];
    a->S = a->x->dims[1];
    a->Hin = a->x->dims[2];
    a->NH = poprt__attr_i(k->node, "num_heads", 0);
    if (a->w->dims[0] != a->Hin || a->w->dims[1] % 3 || a->NH < 1 ||
        (a->w->dims[1] / 3) % a->NH)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "Wqkv must be [%lld, 3 * num_heads * head_dim]", (long long)a->Hin);
    a->H = a->w->dims[1] / 3;
    a->HD = a->H / a->NH;
    if (a->b && a->b->numel != 3 * a->H)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "Bqkv must hold 3H values");
    if (y->numel != a->B * a->S * a->H)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "Y must be [B, S, H]");
    a->scale = poprt__attr_f(k->node, "scale", (float)(1.0 / sqrt((double)(a->HD ? a->HD : 1))));
    return POPRT_OK;
}

/* rows[r] = X[sel[r]] * W[:, c0:c0+n] + bias[c0:c0+n] (all rows when sel is NULL). */
static poprt_status project(poprt__kctx *k, const float *X, const float *W, const float *bias,
                            const int64_t *sel, int64_t nrows, int64_t Hin, int64_t ldw,
                            int64_t c0, int64_t n, float *out)
{
    const float *A = X;
    if (sel) {
        float *g = poprt__kctx_scratch(k, (size_t)(nrows ? nrows : 1) * (size_t)Hin * sizeof(float));
        if (!g)
            return poprt__ref_oom(k);
        for (int64_t r = 0; r < nrows; r++)
            memcpy(g + r * Hin, X + sel[r] * Hin, (size_t)Hin * sizeof(float));
        A = g;
    }
    for (int64_t r = 0; r < nrows; r++) {
        if (bias)
            memcpy(out + r * n, bias + c0, (size_t)n * sizeof(float));
        else
            memset(out + r * n, 0, (size_t)n * sizeof(float));
    }
    poprt__ref_sgemm_mt(k, 0, 0, nrows, n, Hin, 1.0f, A, Hin, W + c0, ldw, 1.0f, out, n);
    return POPRT_OK;
}

/* X Wqkv + Bqkv into qkv [rows, 3H] with e: W as the node's prepare packed
 * it when it did, else as given. */
static poprt_status fa_project(poprt__kctx *k, const poprt__gemm_engine *e, const float *X,
                               const float *W, const float *bias, int64_t rows, int64_t Hin,
                               int64_t N, float *qkv)
{
    for (int64_t r = 0; r < rows; r++) {
        if (bias)
            memcpy(qkv + r * N, bias, (size_t)N * sizeof(float));
        else
            memset(qkv + r * N, 0, (size_t)N * sizeof(float));
    }
    if (e->run_packed_b && e->run_packed_b(k, 0, 0, rows, N, Hin, 1.0f, X, Hin, 1.0f, qkv, N) == 0)
        return POPRT_OK;
    void *ws;
    if (!W) /* kept packed only, and not packed for this product after all */
        W = (const float *)poprt__kctx_in_data(k, 1);
    if (!W || !poprt__gemm_engine_ws(k, e, 0, 0, rows, N, Hin, &ws))
        return poprt__ref_oom(k);
    e->run(k, ws, 0, 0, rows, N, Hin, 1.0f, X, Hin, W, N, 1.0f, qkv, N);
    return POPRT_OK;
}

/* The heads of an attention whose mask adds one value per key (or
 * nothing), chunk by chunk of (batch, head) units. */
typedef struct fa_heads {
    const float *q, *k, *v, *addk; /* rows ld apart; addk: [B, S] or NULL */
    float *y, *ws;
    int64_t ld, S, H, NH, HD, units, chunks;
    size_t ws_floats;
    float scale;
    const poprt__seg_impl *impl;
    const poprt__vmath_variant *vm;
} fa_heads;

static void fa_heads_fn(void *ctx, int64_t c0, int64_t c1)
{
    const fa_heads *t = ctx;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t u = c * t->units / t->chunks; u < (c + 1) * t->units / t->chunks; u++) {
            const int64_t b = u / t->NH, h = u % t->NH, at = b * t->S * t->ld + h * t->HD;
            t->impl->head(t->q + at, t->k + at, t->v + at, t->ld,
                          t->y + b * t->S * t->H + h * t->HD, t->H,
                          t->addk ? t->addk + b * t->S : NULL, t->S, t->HD, t->scale,
                          t->ws + (size_t)c * t->ws_floats, t->vm);
        }
}

/* The mask's strides broadcast to [B, NH, S, S] into mstr (all 0 without
 * one); SHAPE_MISMATCH naming the node when it does not broadcast. */
static poprt_status mask_strides(poprt__kctx *k, const poprt__tval *mt, int64_t B, int64_t NH,
                                 int64_t S, int64_t mstr[4])
{
    memset(mstr, 0, 4 * sizeof *mstr);
    if (!mt)
        return POPRT_OK;
    int64_t full[4] = {B, NH, S, S};
    if (mt->rank > 4)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "mask rank above 4");
    for (int d = 0; d < mt->rank; d++) {
        int64_t want = full[4 - mt->rank + d];
        if (mt->dims[d] != 1 && mt->dims[d] != want)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "mask does not broadcast to [B, heads, S, S]");
    }
    poprt__bcast_strides(mt, 4, full, mstr);
    return POPRT_OK;
}

/* Y [B, S, H] = the NH heads of softmax(scale Q K^T + M) V, Q, K, V rows ld
 * floats apart, M (float, NULL: none) with strides mstr over [B, NH, S, S].
 * A mask of one value per key (the padding masks of encoders: [B, 1, 1, S])
 * and a head size impl takes: impl's head, the mask as one row per batch;
 * any other (a decoder's causal mask [S, S]): score blocks of QBLOCK
 * queries, by e's GEMM (NULL: the reference one). */
static poprt_status attention_heads(poprt__kctx *k, const poprt__seg_impl *impl,
                                    const poprt__gemm_engine *e, const float *Q,
                                    const float *K, const float *V, int64_t ld, const float *M,
                                    const int64_t mstr[4], int64_t B, int64_t S, int64_t NH,
                                    int64_t HD, float scale, float *Y)
{
    const poprt__vmath_variant *vm = poprt__kctx_vmath(k);
    const int64_t H = NH * HD;
    if ((!M || (mstr[1] == 0 && mstr[2] == 0)) && HD % impl->hd_step == 0) {
        float *addk = NULL;
        if (M) {
            if (!(addk = poprt__kctx_scratch(k, (size_t)(B * S) * sizeof(float))))
                return poprt__ref_oom(k);
            for (int64_t b = 0; b < B; b++)
                for (int64_t j = 0; j < S; j++)
                    addk[b * S + j] = M[b * mstr[0] + j * mstr[3]];
        }
        const int64_t th = poprt__kctx_threads(k), units = B * NH;
        fa_heads t = {.q = Q, .k = K, .v = V, .addk = addk, .y = Y, .ld = ld, .S = S, .H = H,
                      .NH = NH, .HD = HD, .units = units, .chunks = th < units ? th : units,
                      .ws_floats = (impl->ws_floats(S, HD) + 15) & ~(size_t)15,
                      .scale = scale, .impl = impl, .vm = vm};
        if (!(t.ws = poprt__kctx_scratch(k, (size_t)t.chunks * t.ws_floats * sizeof(float))))
            return poprt__ref_oom(k);
        poprt__kctx_parallel_for(k, t.chunks, 1, fa_heads_fn, &t);
        return POPRT_OK;
    }
    int64_t *koff = poprt__kctx_scratch(k, (size_t)B * 2 * sizeof(int64_t));
    float *sc = poprt__kctx_scratch(k, (size_t)(B * NH * QBLOCK * S) * sizeof(float));
    if (!koff || !sc)
        return poprt__ref_oom(k);
    for (int64_t b = 0; b < B; b++) {
        koff[b] = b * S;
        koff[B + b] = S;
    }
    att_task t = {.q = Q, .kv = K, .v = V, .ldq = ld, .ldkv = ld, .key_off = koff,
                  .key_n = koff + B, .mask = M, .y = Y, .scratch = sc, .S = S, .H = H,
                  .NH = NH, .HD = HD, .maxk = S, .scale = scale, .vm = vm, .e = e};
    memcpy(t.mstr, mstr, sizeof t.mstr);
    if (e) { /* a workspace per unit, for both products of a block */
        const int64_t qb = S < QBLOCK ? S : QBLOCK;
        const size_t a = e->ws_size(0, 1, qb, S, HD), b = e->ws_size(0, 0, qb, HD, S);
        t.ews_bytes = ((a > b ? a : b) + 63) & ~(size_t)63;
        if (t.ews_bytes &&
            !(t.ews = poprt__kctx_scratch(k, (size_t)(B * NH) * t.ews_bytes)))
            return poprt__ref_oom(k);
    }
    poprt__kctx_parallel_for(k, B * NH, 1, att_task_fn, &t);
    return POPRT_OK;
}

poprt_status poprt__fused_attention_op(poprt__kctx *k, const poprt__gemm_engine *e,
                                       const poprt__seg_impl *impl)
{
    att_args a = {0};
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = att_check(k, &a, y);
    if (st)
        return st;
    const poprt__tval *mt = poprt__kin(k, 3);
    int64_t mstr[4];
    if ((st = mask_strides(k, mt, a.B, a.NH, a.S, mstr)))
        return st;
    if (y->numel == 0)
        return POPRT_OK;
    const int64_t rows = a.B * a.S, H3 = 3 * a.H;
    /* W NULL: kept packed only, read by fa_project if it needs it after all */
    const float *X = poprt__ref_in_f32(k, a.x), *W = a.w->data ? poprt__ref_in_f32(k, a.w) : NULL,
                *bias = a.b ? poprt__ref_in_f32(k, a.b) : NULL;
    const float *M = mt ? poprt__ref_in_f32(k, mt) : NULL;
    float *Y = poprt__ref_out_f32(k, y);
    float *qkv = poprt__kctx_scratch(k, (size_t)rows * (size_t)H3 * sizeof(float));
    if (!X || (a.w->data && !W) || (a.b && !bias) || (mt && !M) || !Y || !qkv)
        return poprt__ref_oom(k);
    if ((st = fa_project(k, e, X, W, bias, rows, a.Hin, H3, qkv)) ||
        (st = attention_heads(k, impl, e, qkv, qkv + a.H, qkv + 2 * a.H, H3, M, mstr, a.B,
                              a.S, a.NH, a.HD, a.scale, Y)))
        return st;
    poprt__ref_store_f32(y, Y);
    return POPRT_OK;
}

poprt_status poprt__ref_poprt_fused_attention(poprt__kctx *k)
{
    return poprt__fused_attention_op(k, &poprt__ref_gemm_engine, &poprt__seg_impl_ref);
}

poprt_status poprt__masked_attention_op(poprt__kctx *k, const poprt__seg_impl *impl)
{
    const poprt__tval *q = poprt__kin(k, 0), *kt = poprt__kin(k, 1), *v = poprt__kin(k, 2),
                      *mt = poprt__kin(k, 3);
    poprt__tval *y = poprt__kout(k, 0);
    if (!q || !kt || !v || !y || q->rank != 3)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "needs Q, K, V [B, S, H] and Y");
    const int64_t B = q->dims[0], S = q->dims[1], H = q->dims[2];
    const int64_t NH = poprt__attr_i(k->node, "num_heads", 0);
    if (NH < 1 || H % NH)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "num_heads %lld does not divide the %lld features",
                               (long long)NH, (long long)H);
    if (kt->numel != q->numel || v->numel != q->numel || y->numel != q->numel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "Q, K, V and Y must have one shape");
    const int64_t HD = H / NH;
    int64_t mstr[4];
    poprt_status st = mask_strides(k, mt, B, NH, S, mstr);
    if (st || y->numel == 0)
        return st;
    const float *Q = poprt__ref_in_f32(k, q), *K = poprt__ref_in_f32(k, kt),
                *V = poprt__ref_in_f32(k, v), *M = mt ? poprt__ref_in_f32(k, mt) : NULL;
    float *Y = poprt__ref_out_f32(k, y);
    if (!Q || !K || !V || (mt && !M) || !Y)
        return poprt__ref_oom(k);
    const float scale = poprt__attr_f(k->node, "scale", (float)(1.0 / sqrt((double)HD)));
    if ((st = attention_heads(k, impl, NULL, Q, K, V, H, M, mstr, B, S, NH, HD, scale, Y)))
        return st;
    poprt__ref_store_f32(y, Y);
    return POPRT_OK;
}

poprt_status poprt__ref_poprt_masked_attention(poprt__kctx *k)
{
    return poprt__masked_attention_op(k, &poprt__seg_impl_ref);
}

poprt_status poprt__ref_poprt_packed_attention(poprt__kctx *k)
{
    att_args a = {0};
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = att_check(k, &a, y);
    if (st)
        return st;
    const poprt__tval *mt = poprt__kin(k, 3);
    if (!mt || mt->rank != 2 || mt->dims[0] != a.B || mt->dims[1] != a.S)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "PackedAttention needs the [B, S] attention mask");
    if (y->numel == 0)
        return POPRT_OK;
    const float value = poprt__attr_f(k->node, "mask_value", -10000.0f);
    const int64_t max_valid = poprt__attr_i(k->node, "max_valid_num", 0);
    const int64_t rows = a.B * a.S, H3 = 3 * a.H;
    const float *X = poprt__ref_in_f32(k, a.x), *W = poprt__ref_in_f32(k, a.w),
                *bias = a.b ? poprt__ref_in_f32(k, a.b) : NULL;
    float *Y = poprt__ref_out_f32(k, y);
    int64_t *koff = poprt__kctx_scratch(k, (size_t)(2 * a.B + rows) * sizeof(int64_t));
    float *addk = poprt__kctx_scratch(k, (size_t)rows * sizeof(float));
    float *q = poprt__kctx_scratch(k, (size_t)rows * (size_t)a.H * sizeof(float));
    if (!X || !W || (a.b && !bias) || !Y || !koff || !addk || !q)
        return poprt__ref_oom(k);
    /* pack: per sequence, the tokens the mask keeps; a sequence with none
     * keeps all (the softmax then sees the uniform mask, as the original) */
    int64_t *sel = koff + 2 * a.B, nsel = 0, maxk = 0;
    for (int64_t b = 0; b < a.B; b++) {
        int64_t n0 = nsel;
        for (int64_t j = 0; j < a.S; j++)
            if (poprt__load_f64(mt->data, mt->dtype, b * a.S + j) != 0.0)
                sel[nsel++] = b * a.S + j;
        if (max_valid > 0 && nsel - n0 > max_valid)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT,
                                   "sequence %lld has %lld valid tokens, above max_valid_num %lld",
                                   (long long)b, (long long)(nsel - n0), (long long)max_valid);
        if (nsel == n0)
            for (int64_t j = 0; j < a.S; j++)
                sel[nsel++] = b * a.S + j;
        koff[b] = n0;
        koff[a.B + b] = nsel - n0;
        maxk = nsel - n0 > maxk ? nsel - n0 : maxk;
    }
    for (int64_t r = 0; r < nsel; r++) {
        /* the same float operations as Cast / Sub(1, m) / Mul(value) */
        float m = (float)poprt__load_f64(mt->data, mt->dtype, sel[r]);
        addk[r] = (1.0f - m) * value;
    }
    float *kv = poprt__kctx_scratch(k, (size_t)(nsel ? nsel : 1) * 2 * (size_t)a.H * sizeof(float));
    float *sc = poprt__kctx_scratch(k, (size_t)(a.B * a.NH * QBLOCK * (maxk ? maxk : 1)) * sizeof(float));
    if (!kv || !sc)
        return poprt__ref_oom(k);
    if ((st = project(k, X, W, bias, NULL, rows, a.Hin, H3, 0, a.H, q)) ||
        (st = project(k, X, W, bias, sel, nsel, a.Hin, H3, a.H, 2 * a.H, kv)))
        return st;
    att_task t;
    memset(&t, 0, sizeof t);
    t.vm = poprt__kctx_vmath(k);
    t.q = q;
    t.ldq = a.H;
    t.kv = kv;
    t.v = kv + a.H;
    t.ldkv = 2 * a.H;
    t.key_off = koff;
    t.key_n = koff + a.B;
    t.addk = addk;
    t.y = Y;
    t.scratch = sc;
    t.S = a.S;
    t.H = a.H;
    t.NH = a.NH;
    t.HD = a.HD;
    t.maxk = maxk;
    t.scale = a.scale;
    poprt__kctx_parallel_for(k, a.B * a.NH, 1, att_task_fn, &t);
    poprt__ref_store_f32(y, Y);
    return POPRT_OK;
}

/* ============================= SegmentAttention ============================= */

#define SEG_QBLOCK 128 /* query rows per score block of the reference head */

/* The reference head (poprt_fused.h): score blocks of SEG_QBLOCK query rows
 * by the reference GEMM. ws: SEG_QBLOCK x L floats. */
static void seg_head_ref(const float *q, const float *k, const float *v, int64_t ld, float *y,
                         int64_t ldy, const float *addk, int64_t L, int64_t HD, float scale,
                         float *ws, const poprt__vmath_variant *vm)
{
    for (int64_t i0 = 0; i0 < L; i0 += SEG_QBLOCK) {
        const int64_t qb = L - i0 < SEG_QBLOCK ? L - i0 : SEG_QBLOCK;
        poprt__ref_sgemm(0, 1, qb, L, HD, scale, q + i0 * ld, ld, k, ld, 0.0f, ws, L);
        for (int64_t i = 0; i < qb; i++) {
            float *row = ws + i * L;
            for (int64_t j = 0; addk && j < L; j++)
                row[j] += addk[j];
            poprt__ref_softmax_row_f32(vm, row, row, L, 0);
        }
        poprt__ref_sgemm(0, 0, qb, HD, L, 1.0f, ws, L, v, ld, 0.0f, y + i0 * ldy, ldy);
    }
}

static size_t seg_ws_ref(int64_t maxl, int64_t HD)
{
    (void)HD;
    return (size_t)((maxl < SEG_QBLOCK ? maxl : SEG_QBLOCK) * maxl);
}

const poprt__seg_impl poprt__seg_impl_ref = {seg_head_ref, seg_ws_ref, 1};

typedef struct seg_task {
    const float *q, *k, *v;
    float *y;
    const int64_t *start, *len; /* per segment: first token and tokens */
    const int64_t *cut;         /* chunk c runs units cut[c] .. cut[c + 1] - 1 */
    int64_t NH, HD, H;
    float scale;
    const poprt__seg_impl *impl;
    float *ws; /* per chunk: ws_floats (64-byte multiples) */
    size_t ws_floats;
    const poprt__vmath_variant *vm;
} seg_task;

static void seg_task_fn(void *ctx, int64_t c0, int64_t c1)
{
    const seg_task *t = ctx;
    for (int64_t c = c0; c < c1; c++)
        for (int64_t u = t->cut[c]; u < t->cut[c + 1]; u++) {
            const int64_t s = u / t->NH, h = u % t->NH;
            const int64_t at = t->start[s] * t->H + h * t->HD;
            t->impl->head(t->q + at, t->k + at, t->v + at, t->H, t->y + at, t->H, NULL,
                          t->len[s], t->HD, t->scale, t->ws + (size_t)c * t->ws_floats, t->vm);
        }
}

/* The segments of the flattened ids (runs of one non-zero id) into
 * start/len; the count. */
static int64_t seg_runs(const poprt__tval *ids, int64_t T, int64_t *start, int64_t *len,
                        int64_t *maxl)
{
    int64_t n = 0, prev = 0;
    *maxl = 0;
    for (int64_t t = 0; t < T; t++) {
        const int64_t id = ids->dtype == POPRT_DTYPE_INT64 ? ((const int64_t *)ids->data)[t]
                                                           : (int64_t)poprt__load_f64(
                                                                 ids->data, ids->dtype, t);
        if (id && id == prev && n) {
            len[n - 1]++;
        } else if (id) {
            start[n] = t;
            len[n++] = 1;
        }
        if (n && len[n - 1] > *maxl)
            *maxl = len[n - 1];
        prev = id;
    }
    return n;
}

/* Chunks of about equal work (L * L per segment and head), one per thread,
 * into cut[0..chunks]: the split sizes the work only, never the arithmetic. */
static void seg_cuts(const int64_t *len, int64_t n, int64_t NH, int64_t chunks, int64_t *cut)
{
    double total = 0, done = 0;
    for (int64_t s = 0; s < n; s++)
        total += (double)len[s] * (double)len[s] * (double)NH;
    cut[0] = 0;
    for (int64_t c = 1, u = 0; c <= chunks; c++) {
        while (u < n * NH && (c == chunks || done < total * (double)c / (double)chunks)) {
            done += (double)len[u / NH] * (double)len[u / NH];
            u++;
        }
        cut[c] = u;
    }
}

poprt_status poprt__segment_attention_op(poprt__kctx *k, const poprt__seg_impl *impl)
{
    const poprt__tval *q = poprt__kin(k, 0), *kt = poprt__kin(k, 1), *v = poprt__kin(k, 2),
                      *ids = poprt__kin(k, 3);
    poprt__tval *y = poprt__kout(k, 0);
    if (!q || !kt || !v || !ids || !y || q->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "needs Q, K, V [..., tokens, H], Segments and Y");
    const int64_t H = q->dims[q->rank - 1], NH = poprt__attr_i(k->node, "num_heads", 0);
    if (NH < 1 || H % NH)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "num_heads %lld does not divide the %lld features",
                               (long long)NH, (long long)H);
    const int64_t T = H ? q->numel / H : 0, HD = H / NH;
    if (kt->numel != q->numel || v->numel != q->numel || y->numel != q->numel ||
        ids->numel != T)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "Q, K, V and Y must have one shape and Segments one id per token "
                               "(%lld)",
                               (long long)T);
    if (!poprt__dtype_is_int(ids->dtype))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "Segments must be integers, not %s",
                               poprt__dtype_name((poprt_dtype)ids->dtype));
    if (y->numel == 0)
        return POPRT_OK;
    if (HD % impl->hd_step)
        impl = &poprt__seg_impl_ref;
    seg_task t;
    memset(&t, 0, sizeof t);
    t.q = poprt__ref_in_f32(k, q);
    t.k = poprt__ref_in_f32(k, kt);
    t.v = poprt__ref_in_f32(k, v);
    t.y = poprt__ref_out_f32(k, y);
    int64_t *start = poprt__kctx_scratch(k, (size_t)T * 2 * sizeof(int64_t));
    if (!t.q || !t.k || !t.v || !t.y || !start)
        return poprt__ref_oom(k);
    int64_t *len = start + T, maxl;
    const int64_t n = seg_runs(ids, T, start, len, &maxl);
    memset(t.y, 0, (size_t)(T * H) * sizeof(float)); /* id 0: zeros */
    const int64_t th = poprt__kctx_threads(k), chunks = n ? (th < n * NH ? th : n * NH) : 0;
    int64_t *cut = poprt__kctx_scratch(k, (size_t)(chunks + 1) * sizeof(int64_t));
    if (!cut)
        return poprt__ref_oom(k);
    seg_cuts(len, n, NH, chunks, cut);
    t.ws_floats = (impl->ws_floats(maxl, HD) + 15) & ~(size_t)15;
    if (chunks && !(t.ws = poprt__kctx_scratch(k, (size_t)chunks * t.ws_floats * sizeof(float))))
        return poprt__ref_oom(k);
    t.start = start;
    t.len = len;
    t.cut = cut;
    t.NH = NH;
    t.HD = HD;
    t.H = H;
    t.scale = poprt__attr_f(k->node, "scale", (float)(1.0 / sqrt((double)(HD ? HD : 1))));
    t.impl = impl;
    t.vm = poprt__kctx_vmath(k);
    if (chunks)
        poprt__kctx_parallel_for(k, chunks, 1, seg_task_fn, &t);
    poprt__ref_store_f32(y, t.y);
    return POPRT_OK;
}

poprt_status poprt__ref_poprt_segment_attention(poprt__kctx *k)
{
    return poprt__segment_attention_op(k, &poprt__seg_impl_ref);
}

/* ============================== AttentionMask ============================== */

poprt_status poprt__ref_poprt_attention_mask(poprt__kctx *k)
{
    const poprt__tval *m = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!m || !y || y->numel != m->numel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "needs M and Y of M's size");
    const float value = poprt__attr_f(k->node, "value", -10000.0f);
    float *o = poprt__ref_out_f32(k, y);
    if (!o)
        return poprt__ref_oom(k);
    if (m->dtype == POPRT_DTYPE_FLOAT) {
        const float *a = m->data;
        for (int64_t i = 0; i < m->numel; i++)
            o[i] = (1.0f - a[i]) * value;
    } else {
        for (int64_t i = 0; i < m->numel; i++)
            o[i] = (1.0f - (float)poprt__load_f64(m->data, m->dtype, i)) * value;
    }
    poprt__ref_store_f32(y, o);
    return POPRT_OK;
}

/* ============================= RotaryEmbedding ============================= */

poprt_status poprt__ref_poprt_rotary_embedding(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *c = poprt__kin(k, 1), *s = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !c || !s || !y || x->rank < 1 || y->numel != x->numel || y->rank != x->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "needs X, Cos, Sin, and Y of X's shape");
    const int64_t d = x->dims[x->rank - 1];
    if (d % 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "the rotated axis has odd size %lld", (long long)d);
    if (x->numel == 0)
        return POPRT_OK;
    int64_t cs[POPRT__MAX_RANK], ss[POPRT__MAX_RANK], idx[POPRT__MAX_RANK] = {0};
    if (c->rank > x->rank || s->rank > x->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "Cos/Sin rank above X's");
    poprt__bcast_strides(c, x->rank, x->dims, cs);
    poprt__bcast_strides(s, x->rank, x->dims, ss);
    const float *X = poprt__ref_in_f32(k, x), *C = poprt__ref_in_f32(k, c),
                *Sn = poprt__ref_in_f32(k, s);
    float *Y = poprt__ref_out_f32(k, y);
    if (!X || !C || !Sn || !Y)
        return poprt__ref_oom(k);
    const int r = x->rank;
    const int64_t half = d / 2, rows = x->numel / d;
    for (int64_t row = 0; row < rows; row++) {
        int64_t co = 0, so = 0;
        for (int a = 0; a < r - 1; a++) {
            co += idx[a] * cs[a];
            so += idx[a] * ss[a];
        }
        const float *xr = X + row * d;
        float *yr = Y + row * d;
        for (int64_t i = 0; i < d; i++) {
            /* rotate_half: (-x2, x1); the same float ops as Mul/Mul/Add */
            float rh = i < half ? -xr[i + half] : xr[i - half];
            yr[i] = xr[i] * C[co + i * cs[r - 1]] + rh * Sn[so + i * ss[r - 1]];
        }
        for (int a = r - 2; a >= 0; a--) {
            if (++idx[a] < x->dims[a])
                break;
            idx[a] = 0;
        }
    }
    poprt__ref_store_f32(y, Y);
    return POPRT_OK;
}
