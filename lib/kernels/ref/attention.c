/* Reference kernels of the 'attention' group: Attention, FlexAttention,
 * LinearAttention, RotaryEmbedding. The products run on poprt__ref_sgemm;
 * every output element is computed by one thread in a fixed order. */
#include <math.h>
#include <string.h>
#include "kernels/ref/attention.h"
#include "kernels/ref/elem.h"
#include "kernels/ref/gemm.h"
#include "kernels/ref/reduce.h"

/* A float view of a [B, H, S, D] tensor stored either 4-D (b, h, s, d) or
 * 3-D (b, s, h*d): row (b, h, s) is D contiguous floats. */
typedef struct view4 {
    const float *p;
    int64_t sb, sh, ss;
} view4;

static inline const float *view_row(const view4 *v, int64_t b, int64_t h, int64_t s)
{
    return v->p + b * v->sb + h * v->sh + s * v->ss;
}

static view4 make_view(const float *p, int three_d, int64_t H, int64_t S, int64_t D)
{
    view4 v;
    v.p = p;
    if (three_d) {
        v.sb = S * H * D;
        v.sh = D;
        v.ss = H * D;
    } else {
        v.sb = H * S * D;
        v.sh = S * D;
        v.ss = D;
    }
    return v;
}

/* A float copy of t (or t's own data when it is float already). */
static const float *as_f32(poprt__kctx *k, const poprt__tval *t)
{
    if (!t)
        return NULL;
    if (t->dtype == POPRT_DTYPE_FLOAT)
        return t->data;
    float *f = poprt__kctx_scratch(k, (size_t)(t->numel ? t->numel : 1) * sizeof(float));
    if (!f)
        return NULL;
    for (int64_t i = 0; i < t->numel; i++)
        f[i] = (float)poprt__ref_ld_f64(t->data, t->dtype, i);
    return f;
}

/* Attention works on units of up to ATT_RB query rows of one (batch, head):
 * two GEMMs give the scores (past keys, then current keys), each row is
 * capped, masked and soft-maxed, two GEMMs accumulate probs @ V. */
#define ATT_RB 32

typedef struct att_job {
    int64_t B, Hq, Hkv, Sq, Skv, P, T, Dk, Dv;
    view4 q, k, v, pk, pv; /* pk / pv: past (4-D) */
    int has_past;
    const float *mask;      /* NULL: none */
    const uint8_t *mask_b;  /* bool mask, NULL: none */
    int64_t mstr[4], mlast; /* broadcast strides over (b, h, i, t); mask's last dim */
    const int64_t *nonpad;  /* [B] or NULL */
    int causal;
    float scale, softcap;
    int qk_mode;
    float *qk_out; /* [B, Hq, Sq, T] float, or NULL */
    view4 yv;      /* float output rows (Y's layout) */
    int64_t nblk;  /* row blocks per (batch, head) */
    poprt__ref_chunking ch;   /* over units = B * Hq * nblk */
    float *scratch; /* per chunk: ATT_RB * T scores */
    const poprt__vmath_variant *vm;
} att_job;

/* Bias, softcap, softmax of one score row s (query i of batch b, head h). */
static void att_row(const att_job *a, int64_t b, int64_t h, int64_t i, float *s)
{
    float *qk = a->qk_out ? a->qk_out + ((b * a->Hq + h) * a->Sq + i) * a->T : NULL;
    /* causal frontier: key t is visible iff t <= i + off */
    int64_t off = a->P;
    if (!a->has_past && a->nonpad)
        off = a->nonpad[b] - a->Sq;
    for (int64_t t = 0; t < a->T; t++) {
        float d = s[t];
        if (qk && a->qk_mode == 0)
            qk[t] = d;
        /* softcap before the mask so masked scores stay -inf */
        if (a->softcap > 0)
            d = a->softcap * tanhf(d / a->softcap);
        if (qk && a->qk_mode == 1)
            qk[t] = d;
        float bias = 0;
        if (a->mask || a->mask_b) {
            if (t >= a->mlast) {
                bias = -INFINITY; /* short masks are padded with -inf */
            } else {
                int64_t mo = b * a->mstr[0] + h * a->mstr[1] + i * a->mstr[2] + t * a->mstr[3];
                bias = a->mask_b ? (a->mask_b[mo] ? 0.0f : -INFINITY) : a->mask[mo];
            }
        }
        if (a->causal && t > i + off)
            bias += -INFINITY;
        if (a->nonpad && t >= a->nonpad[b])
            bias += -INFINITY;
        d += bias;
        if (qk && a->qk_mode == 2)
            qk[t] = d;
        s[t] = d;
    }
    poprt__ref_softmax_row_f32(a->vm, s, s, a->T, 0);
    if (qk && a->qk_mode == 3)
        memcpy(qk, s, (size_t)a->T * sizeof *s);
}

static void att_chunk(void *ctx, int64_t c0, int64_t c1)
{
    const att_job *a = ctx;
    int64_t rep = a->Hq / a->Hkv, T = a->T, P = a->P;
    for (int64_t c = c0; c < c1; c++) {
        int64_t u0, u1;
        poprt__ref_chunk_range(&a->ch, c, &u0, &u1);
        float *S = a->scratch + c * ATT_RB * T;
        for (int64_t u = u0; u < u1; u++) {
            int64_t blk = u % a->nblk, h = (u / a->nblk) % a->Hq, b = u / (a->nblk * a->Hq);
            int64_t hk = h / rep, i0 = blk * ATT_RB;
            int64_t rows = a->Sq - i0 < ATT_RB ? a->Sq - i0 : ATT_RB;
            const float *q = view_row(&a->q, b, h, i0);
            float *y = (float *)view_row(&a->yv, b, h, i0);
            if (T == 0) {
                for (int64_t r = 0; r < rows; r++)
                    memset(y + r * a->yv.ss, 0, (size_t)a->Dv * sizeof *y);
                continue;
            }
            if (P > 0)
                poprt__ref_sgemm(0, 1, rows, P, a->Dk, a->scale, q, a->q.ss,
                                 view_row(&a->pk, b, hk, 0), a->pk.ss, 0.0f, S, T);
            if (a->Skv > 0)
                poprt__ref_sgemm(0, 1, rows, a->Skv, a->Dk, a->scale, q, a->q.ss,
                                 view_row(&a->k, b, hk, 0), a->k.ss, 0.0f, S + P, T);
            for (int64_t r = 0; r < rows; r++)
                att_row(a, b, h, i0 + r, S + r * T);
            if (P > 0)
                poprt__ref_sgemm(0, 0, rows, a->Dv, P, 1.0f, S, T, view_row(&a->pv, b, hk, 0),
                                 a->pv.ss, 0.0f, y, a->yv.ss);
            if (a->Skv > 0)
                poprt__ref_sgemm(0, 0, rows, a->Dv, a->Skv, 1.0f, S + P, T,
                                 view_row(&a->v, b, hk, 0), a->v.ss, P > 0 ? 1.0f : 0.0f, y,
                                 a->yv.ss);
        }
    }
}

/* present = concat(past, cur) along the sequence axis, in the input dtype. */
static void write_present(poprt__tval *out, const poprt__tval *past, const poprt__tval *cur,
                          int three_d, int64_t B, int64_t H, int64_t P, int64_t S, int64_t D)
{
    size_t es = poprt__dtype_size(out->dtype), row = (size_t)D * es;
    char *o = out->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            for (int64_t t = 0; t < P; t++, o += row)
                memcpy(o, (const char *)past->data + (size_t)(((b * H + h) * P + t) * D) * es,
                       row);
            for (int64_t t = 0; t < S; t++, o += row) {
                int64_t off = three_d ? (b * S + t) * H * D + h * D : ((b * H + h) * S + t) * D;
                memcpy(o, (const char *)cur->data + (size_t)off * es, row);
            }
        }
}

poprt_status poprt__ref_attention(poprt__kctx *k)
{
    const poprt__node *n = k->node;
    const poprt__tval *Q = poprt__kin(k, 0), *K = poprt__kin(k, 1), *V = poprt__kin(k, 2);
    const poprt__tval *M = poprt__kin(k, 3), *PK = poprt__kin(k, 4), *PV = poprt__kin(k, 5);
    const poprt__tval *NP = poprt__kin(k, 6);
    poprt__tval *Y = poprt__kout(k, 0), *PKo = poprt__kout(k, 1), *PVo = poprt__kout(k, 2);
    poprt__tval *QKo = poprt__kout(k, 3);
    if (!Q || !K || !V || !Y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing Q, K, V or Y");
    if (!poprt__ref_is_float_dt(Q->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt__dtype_name(Q->dtype));
    if ((Q->rank != 3 && Q->rank != 4) || K->rank != Q->rank || V->rank != Q->rank)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q, K, V must all be 3-D or 4-D");
    if ((PK == NULL) != (PV == NULL))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "past_key and past_value go together");
    int three = Q->rank == 3;
    att_job a;
    memset(&a, 0, sizeof a);
    a.vm = poprt__kctx_vmath(k);
    a.B = Q->dims[0];
    if (K->dims[0] != a.B || V->dims[0] != a.B || (three && V->dims[1] != K->dims[1]))
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "Q, K and V must have one batch size and K, V one sequence");
    if (three) {
        a.Hq = poprt__attr_i(n, "q_num_heads", 0);
        a.Hkv = poprt__attr_i(n, "kv_num_heads", 0);
        if (a.Hq <= 0 || a.Hkv <= 0 || Q->dims[2] % a.Hq || K->dims[2] % a.Hkv ||
            V->dims[2] % a.Hkv)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "hidden sizes must divide by q_num_heads / kv_num_heads");
        a.Sq = Q->dims[1];
        a.Skv = K->dims[1];
        a.Dk = K->dims[2] / a.Hkv;
        a.Dv = V->dims[2] / a.Hkv;
        if (Q->dims[2] / a.Hq != a.Dk)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q and K head sizes differ");
    } else {
        a.Hq = Q->dims[1];
        a.Hkv = K->dims[1];
        a.Sq = Q->dims[2];
        a.Skv = K->dims[2];
        a.Dk = K->dims[3];
        a.Dv = V->dims[3];
        if (Q->dims[3] != a.Dk || V->dims[1] != a.Hkv || V->dims[2] != a.Skv)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q, K, V shapes disagree");
    }
    if (a.Hkv <= 0 || a.Hq % a.Hkv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "q heads (%lld) must be a multiple of kv heads (%lld)",
                               (long long)a.Hq, (long long)a.Hkv);
    a.P = PK ? PK->dims[2] : 0;
    if (PK && (PK->rank != 4 || PV->rank != 4 || PK->dims[0] != a.B || PK->dims[1] != a.Hkv ||
               PK->dims[3] != a.Dk || PV->dims[2] != a.P || PV->dims[3] != a.Dv))
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "past_key/past_value shapes");
    a.T = a.P + a.Skv;
    a.has_past = PK != NULL;
    a.causal = poprt__attr_i(n, "is_causal", 0) != 0;
    const poprt__attr *sa = poprt__node_attr(n, "scale");
    a.scale = sa ? sa->f : (float)(1.0 / sqrt((double)a.Dk));
    a.softcap = poprt__attr_f(n, "softcap", 0.0f);
    a.qk_mode = (int)poprt__attr_i(n, "qk_matmul_output_mode", 0);
    if (a.qk_mode < 0 || a.qk_mode > 3)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "qk_matmul_output_mode %d",
                               a.qk_mode);

    const float *q = as_f32(k, Q), *kk = as_f32(k, K), *vv = as_f32(k, V);
    const float *pk = as_f32(k, PK), *pv = as_f32(k, PV);
    if (!q || !kk || !vv || (PK && (!pk || !pv)))
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    a.q = make_view(q, three, a.Hq, a.Sq, a.Dk);
    a.k = make_view(kk, three, a.Hkv, a.Skv, a.Dk);
    a.v = make_view(vv, three, a.Hkv, a.Skv, a.Dv);
    if (PK) {
        a.pk = make_view(pk, 0, a.Hkv, a.P, a.Dk);
        a.pv = make_view(pv, 0, a.Hkv, a.P, a.Dv);
    }
    if (M && M->numel > 0) {
        if (M->rank < 1 || M->rank > 4)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "attn_mask rank %d", M->rank);
        int64_t full[4] = {a.B, a.Hq, a.Sq, a.T}, s = 1;
        int off = 4 - M->rank;
        for (int d = 3; d >= 0; d--) {
            int md = d - off;
            int64_t md_size = md >= 0 ? M->dims[md] : 1;
            int ok = md_size == 1 || md_size == full[d] || (d == 3 && md_size < full[d]);
            if (!ok)
                return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                       "attn_mask dim %d (%lld) does not broadcast to %lld", md,
                                       (long long)md_size, (long long)full[d]);
            a.mstr[d] = md_size == 1 ? 0 : s; /* size 1 broadcasts */
            s *= md_size;
        }
        int64_t last = M->dims[M->rank - 1];
        a.mlast = (last == 1) ? a.T : last;
        if (M->dtype == POPRT_DTYPE_BOOL) {
            a.mask_b = M->data;
        } else {
            a.mask = as_f32(k, M);
            if (!a.mask)
                return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
        }
    }
    int64_t *np = NULL;
    if (NP) {
        if (NP->numel != a.B)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "nonpad_kv_seqlen has %lld values, batch is %lld",
                                   (long long)NP->numel, (long long)a.B);
        np = poprt__kctx_scratch(k, (size_t)(a.B ? a.B : 1) * sizeof *np);
        if (!np)
            return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
        for (int64_t b = 0; b < a.B; b++)
            np[b] = poprt__load_i64(NP->data, NP->dtype, b);
        a.nonpad = np;
    }
    int64_t rows = a.B * a.Hq * a.Sq;
    if (QKo) {
        if (QKo->numel != rows * a.T)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "qk_matmul_output size");
        a.qk_out = QKo->dtype == POPRT_DTYPE_FLOAT
                       ? QKo->data
                       : poprt__kctx_scratch(k, (size_t)(rows * a.T + 1) * 4);
        if (!a.qk_out)
            return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    }
    if (Y->numel != rows * a.Dv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output Y size");
    float *y = Y->dtype == POPRT_DTYPE_FLOAT
                   ? Y->data
                   : poprt__kctx_scratch(k, (size_t)(Y->numel ? Y->numel : 1) * 4);
    if (!y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    a.yv = make_view(y, three, a.Hq, a.Sq, a.Dv);
    a.nblk = (a.Sq + ATT_RB - 1) / ATT_RB;
    a.ch = poprt__ref_make_chunks(a.B * a.Hq * a.nblk, 64);
    a.scratch = poprt__kctx_scratch(k, (size_t)a.ch.nchunks * ATT_RB * (size_t)(a.T + 1) * 4);
    if (!a.scratch)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    if (rows > 0)
        poprt__kctx_parallel_for(k, a.ch.nchunks, 1, att_chunk, &a);

    if (Y->dtype != POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < Y->numel; i++)
            poprt__ref_st_f64(Y->data, Y->dtype, i, y[i]);
    if (QKo && QKo->dtype != POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < QKo->numel; i++)
            poprt__ref_st_f64(QKo->data, QKo->dtype, i, a.qk_out[i]);
    if (PKo) {
        if (PKo->numel != a.B * a.Hkv * a.T * a.Dk || PKo->dtype != K->dtype)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "present_key shape");
        write_present(PKo, PK, K, three, a.B, a.Hkv, a.P, a.Skv, a.Dk);
    }
    if (PVo) {
        if (PVo->numel != a.B * a.Hkv * a.T * a.Dv || PVo->dtype != V->dtype)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "present_value shape");
        write_present(PVo, PV, V, three, a.B, a.Hkv, a.P, a.Skv, a.Dv);
    }
    return POPRT_OK;
}

/* ============================== FlexAttention =============================== */

/* Values returned by poprt__kctx_run_graph are heap copies owned by the
 * caller (lib/runtime/exec.c). */

/* Applies graph attribute `name` (scores -> scores) to s [B, H, L, S] in
 * place; a bool result is a keep-mask (false -> -inf). */
static poprt_status flex_mod(poprt__kctx *k, const char *name, int32_t dt, const int64_t *dims,
                             float *s, int64_t cnt)
{
    const poprt__attr *a = poprt__node_attr(k->node, name);
    if (!a || a->type != POPRT__ATTR_GRAPH || !a->g)
        return POPRT_OK;
    poprt__value in;
    memset(&in, 0, sizeof in);
    in.kind = POPRT__KIND_TENSOR;
    in.t.dtype = dt;
    in.t.rank = 4;
    memcpy(in.t.dims, dims, 4 * sizeof *dims);
    in.t.numel = cnt;
    in.t.nbytes = (size_t)cnt * poprt__dtype_size(dt);
    if (dt == POPRT_DTYPE_FLOAT) {
        in.t.data = s;
    } else {
        in.t.data = poprt__kctx_scratch(k, in.t.nbytes + 1);
        if (!in.t.data)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
        for (int64_t i = 0; i < cnt; i++)
            poprt__ref_st_f64(in.t.data, dt, i, s[i]);
    }
    const poprt__value *ins[1] = {&in};
    poprt__value out;
    memset(&out, 0, sizeof out);
    poprt_status st = poprt__kctx_run_graph(k, a->g, 1, ins, 1, &out);
    if (st)
        return st;
    if (out.kind != POPRT__KIND_TENSOR || out.t.numel != cnt) {
        st = POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                             "%s must return a tensor of the scores' shape", name);
    } else if (out.t.dtype == POPRT_DTYPE_BOOL) {
        for (int64_t i = 0; i < cnt; i++)
            if (!((const uint8_t *)out.t.data)[i])
                s[i] = -INFINITY;
    } else if (poprt__ref_is_float_dt(out.t.dtype)) {
        for (int64_t i = 0; i < cnt; i++)
            s[i] = (float)poprt__ref_ld_f64(out.t.data, out.t.dtype, i);
    } else {
        st = POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "%s returns %s", name,
                             poprt__dtype_name(out.t.dtype));
    }
    poprt__kctx_release_value(k, &out);
    return st;
}

typedef struct flex_job {
    int64_t Hq, Hkv, L, S, E, Ev;
    const float *q, *k, *v;
    float *s, *y;
    float scale;
    int stage; /* 0 scores, 1 softmax, 2 output */
    const poprt__vmath_variant *vm;
} flex_job;

static void flex_rows(void *ctx, int64_t r0, int64_t r1)
{
    const flex_job *a = ctx;
    int64_t rep = a->Hq / a->Hkv;
    for (int64_t r = r0; r < r1; r++) {
        int64_t h = (r / a->L) % a->Hq, b = r / (a->L * a->Hq), hk = b * a->Hkv + h / rep;
        float *s = a->s + r * a->S;
        if (a->stage == 0) {
            const float *qr = a->q + r * a->E;
            for (int64_t t = 0; t < a->S; t++) {
                const float *kr = a->k + (hk * a->S + t) * a->E;
                float d = 0;
                for (int64_t e = 0; e < a->E; e++)
                    d += qr[e] * kr[e];
                s[t] = d * a->scale;
            }
        } else if (a->stage == 1) {
            poprt__ref_softmax_row_f32(a->vm, s, s, a->S, 0);
        } else {
            float *yr = a->y + r * a->Ev;
            for (int64_t e = 0; e < a->Ev; e++)
                yr[e] = 0;
            for (int64_t t = 0; t < a->S; t++) {
                const float *vr = a->v + (hk * a->S + t) * a->Ev;
                for (int64_t e = 0; e < a->Ev; e++)
                    yr[e] += s[t] * vr[e];
            }
        }
    }
}

poprt_status poprt__ref_flex_attention(poprt__kctx *k)
{
    const poprt__node *n = k->node;
    const poprt__tval *Q = poprt__kin(k, 0), *K = poprt__kin(k, 1), *V = poprt__kin(k, 2);
    poprt__tval *Y = poprt__kout(k, 0);
    if (!Q || !K || !V || !Y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing Q, K, V or Y");
    if (!poprt__ref_is_float_dt(Q->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt__dtype_name(Q->dtype));
    if (Q->rank != 4 || K->rank != 4 || V->rank != 4)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q, K, V must be 4-D");
    flex_job a;
    a.vm = poprt__kctx_vmath(k);
    int64_t B = Q->dims[0];
    a.Hq = Q->dims[1];
    a.L = Q->dims[2];
    a.E = Q->dims[3];
    a.Hkv = K->dims[1];
    a.S = K->dims[2];
    a.Ev = V->dims[3];
    if (K->dims[0] != B || V->dims[0] != B || K->dims[3] != a.E || V->dims[1] != a.Hkv ||
        V->dims[2] != a.S || a.Hkv <= 0 || a.Hq % a.Hkv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q, K, V shapes disagree");
    if (Y->numel != B * a.Hq * a.L * a.Ev)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output Y size");
    const poprt__attr *sa = poprt__node_attr(n, "scale");
    a.scale = sa ? sa->f : (float)(1.0 / sqrt((double)a.E));
    int64_t rows = B * a.Hq * a.L, cnt = rows * a.S;
    a.q = as_f32(k, Q);
    a.k = as_f32(k, K);
    a.v = as_f32(k, V);
    a.s = poprt__kctx_scratch(k, (size_t)(cnt + 1) * sizeof(float));
    a.y = Y->dtype == POPRT_DTYPE_FLOAT ? Y->data
                                        : poprt__kctx_scratch(k, (size_t)(Y->numel + 1) * 4);
    if (!a.q || !a.k || !a.v || !a.s || !a.y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    if (rows == 0)
        return POPRT_OK;
    int64_t sd[4] = {B, a.Hq, a.L, a.S};
    /* scores, score_mod, mask_mod, softmax, prob_mod, probs @ V */
    poprt_status st;
    a.stage = 0;
    poprt__kctx_parallel_for(k, rows, 16, flex_rows, &a);
    if ((st = flex_mod(k, "score_mod", Q->dtype, sd, a.s, cnt)) ||
        (st = flex_mod(k, "mask_mod", Q->dtype, sd, a.s, cnt)))
        return st;
    a.stage = 1;
    poprt__kctx_parallel_for(k, rows, 16, flex_rows, &a);
    if ((st = flex_mod(k, "prob_mod", Q->dtype, sd, a.s, cnt)))
        return st;
    a.stage = 2;
    poprt__kctx_parallel_for(k, rows, 16, flex_rows, &a);
    if (Y->dtype != POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < Y->numel; i++)
            poprt__ref_st_f64(Y->data, Y->dtype, i, a.y[i]);
    return POPRT_OK;
}

/* ============================== LinearAttention ============================= */

typedef struct lin_job {
    int64_t B, T, Hq, Hkv, dk, dv, decay_w, beta_w;
    const float *q, *k, *v, *decay, *beta, *erase;
    float *state; /* [B, Hkv, dk, dv] */
    float *out;   /* [B, T, Hq * dv] */
    float scale;
    int gating, delta;
    float *scratch; /* per (b, hkv) pair: dv + dk floats */
} lin_job;

static void lin_pair(void *ctx, int64_t p0, int64_t p1)
{
    const lin_job *a = ctx;
    int64_t dk = a->dk, dv = a->dv, rep = a->Hq / a->Hkv;
    for (int64_t p = p0; p < p1; p++) {
        int64_t b = p / a->Hkv, h = p % a->Hkv;
        float *S = a->state + p * dk * dv;
        float *vt = a->scratch + p * (dv + dk), *ke = vt + dv;
        for (int64_t t = 0; t < a->T; t++) {
            int64_t bt = b * a->T + t;
            const float *kt = a->k + (bt * a->Hkv + h) * dk;
            const float *vin = a->v + (bt * a->Hkv + h) * dv;
            if (a->gating) {
                /* per-head scalar or per-key-dim decay: state *= exp(g) */
                for (int64_t i = 0; i < dk; i++) {
                    float g = a->decay_w == a->Hkv ? a->decay[bt * a->Hkv + h]
                                                   : a->decay[(bt * a->Hkv + h) * dk + i];
                    float e = expf(g);
                    for (int64_t m = 0; m < dv; m++)
                        S[i * dv + m] *= e;
                }
            }
            memcpy(vt, vin, (size_t)dv * sizeof *vt);
            if (a->delta) {
                for (int64_t i = 0; i < dk; i++)
                    ke[i] = a->erase ? a->erase[(bt * a->Hkv + h) * dk + i] * kt[i] : kt[i];
                float beta = a->beta_w == 1 ? a->beta[bt] : a->beta[bt * a->Hkv + h];
                for (int64_t m = 0; m < dv; m++) {
                    float r = 0;
                    for (int64_t i = 0; i < dk; i++)
                        r += S[i * dv + m] * ke[i];
                    vt[m] = beta * (vt[m] - r);
                }
            }
            for (int64_t i = 0; i < dk; i++)
                for (int64_t m = 0; m < dv; m++)
                    S[i * dv + m] += kt[i] * vt[m];
            for (int64_t g = 0; g < rep; g++) {
                int64_t hq = h * rep + g;
                const float *qt = a->q + (bt * a->Hq + hq) * dk;
                float *o = a->out + (bt * a->Hq + hq) * dv;
                for (int64_t m = 0; m < dv; m++) {
                    float s = 0;
                    for (int64_t i = 0; i < dk; i++)
                        s += qt[i] * S[i * dv + m];
                    o[m] = a->scale * s;
                }
            }
        }
    }
}

poprt_status poprt__ref_linear_attention(poprt__kctx *k)
{
    const poprt__node *n = k->node;
    const poprt__tval *Q = poprt__kin(k, 0), *K = poprt__kin(k, 1), *V = poprt__kin(k, 2);
    const poprt__tval *PS = poprt__kin(k, 3), *DC = poprt__kin(k, 4), *BT = poprt__kin(k, 5);
    const poprt__tval *EG = poprt__kin(k, 6);
    poprt__tval *O = poprt__kout(k, 0), *PSo = poprt__kout(k, 1);
    if (!Q || !K || !V || !O)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "missing query, key, value or output");
    if (!poprt__ref_is_float_dt(Q->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt__dtype_name(Q->dtype));
    const char *rule = poprt__attr_s(n, "update_rule", "gated_delta");
    lin_job a;
    memset(&a, 0, sizeof a);
    if (!strcmp(rule, "linear"))
        ;
    else if (!strcmp(rule, "gated"))
        a.gating = 1;
    else if (!strcmp(rule, "delta"))
        a.delta = 1;
    else if (!strcmp(rule, "gated_delta"))
        a.gating = a.delta = 1;
    else
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "unknown update_rule '%s'", rule);
    a.Hq = poprt__attr_i(n, "q_num_heads", 0);
    a.Hkv = poprt__attr_i(n, "kv_num_heads", 0);
    if (Q->rank != 3 || K->rank != 3 || V->rank != 3)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "query, key, value must be 3-D");
    if (a.Hq <= 0 || a.Hkv <= 0 || a.Hq % a.Hkv || Q->dims[2] % a.Hq || V->dims[2] % a.Hkv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "head counts do not divide sizes");
    a.B = Q->dims[0];
    a.T = Q->dims[1];
    a.dk = Q->dims[2] / a.Hq;
    a.dv = V->dims[2] / a.Hkv;
    if (K->dims[0] != a.B || K->dims[1] != a.T || K->dims[2] != a.Hkv * a.dk ||
        V->dims[0] != a.B || V->dims[1] != a.T)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "query, key, value shapes disagree");
    if (a.gating != (DC != NULL))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "update_rule '%s' %s decay", rule,
                               a.gating ? "requires" : "forbids");
    if (a.delta != (BT != NULL))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "update_rule '%s' %s beta", rule,
                               a.delta ? "requires" : "forbids");
    if (DC) {
        a.decay_w = DC->rank == 3 ? DC->dims[2] : -1;
        if (DC->numel != a.B * a.T * a.decay_w ||
            (a.decay_w != a.Hkv && a.decay_w != a.Hkv * a.dk))
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "decay shape");
    }
    if (BT) {
        a.beta_w = BT->rank == 3 ? BT->dims[2] : -1;
        if (BT->numel != a.B * a.T * a.beta_w || (a.beta_w != a.Hkv && a.beta_w != 1))
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "beta shape");
    }
    if (EG && (EG->numel != a.B * a.T * a.Hkv * a.dk || !a.delta))
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "erase_gate");
    if (PS && PS->numel != a.B * a.Hkv * a.dk * a.dv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "past_state shape");
    float sc = poprt__attr_f(n, "scale", 0.0f);
    a.scale = sc != 0.0f ? sc : (float)(1.0 / sqrt((double)a.dk));
    a.q = as_f32(k, Q);
    a.k = as_f32(k, K);
    a.v = as_f32(k, V);
    a.decay = as_f32(k, DC);
    a.beta = as_f32(k, BT);
    a.erase = as_f32(k, EG);
    int64_t pairs = a.B * a.Hkv, ns = pairs * a.dk * a.dv;
    a.state = poprt__kctx_scratch(k, (size_t)(ns ? ns : 1) * 4);
    a.out = O->dtype == POPRT_DTYPE_FLOAT ? O->data
                                          : poprt__kctx_scratch(k, (size_t)(O->numel + 1) * 4);
    a.scratch = poprt__kctx_scratch(k, (size_t)(pairs * (a.dk + a.dv) + 1) * 4);
    if (!a.q || !a.k || !a.v || (DC && !a.decay) || (BT && !a.beta) || (EG && !a.erase) ||
        !a.state || !a.out || !a.scratch)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    if (O->numel != a.B * a.T * a.Hq * a.dv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output size");
    for (int64_t i = 0; i < ns; i++)
        a.state[i] = PS ? (float)poprt__ref_ld_f64(PS->data, PS->dtype, i) : 0.0f;
    if (pairs > 0)
        poprt__kctx_parallel_for(k, pairs, 1, lin_pair, &a);
    if (O->dtype != POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < O->numel; i++)
            poprt__ref_st_f64(O->data, O->dtype, i, a.out[i]);
    if (PSo) {
        if (PSo->numel != ns)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "present_state size");
        for (int64_t i = 0; i < ns; i++)
            poprt__ref_st_f64(PSo->data, PSo->dtype, i, a.state[i]);
    }
    return POPRT_OK;
}

/* ============================== RotaryEmbedding ============================= */

poprt_status poprt__ref_rotary_embedding(poprt__kctx *k)
{
    const poprt__node *n = k->node;
    const poprt__tval *X = poprt__kin(k, 0), *C = poprt__kin(k, 1), *S = poprt__kin(k, 2);
    const poprt__tval *P = poprt__kin(k, 3);
    poprt__tval *Y = poprt__kout(k, 0);
    if (!X || !C || !S || !Y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing input or output");
    if (!poprt__ref_is_float_dt(X->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt__dtype_name(X->dtype));
    int interleaved = poprt__attr_i(n, "interleaved", 0) != 0;
    int64_t B = X->dims[0], H, Sq, D;
    int three = X->rank == 3;
    if (three) {
        H = poprt__attr_i(n, "num_heads", 0);
        if (H <= 0 || X->dims[2] % H)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "3-D input needs num_heads dividing the hidden size");
        Sq = X->dims[1];
        D = X->dims[2] / H;
    } else if (X->rank == 4) {
        H = X->dims[1];
        Sq = X->dims[2];
        D = X->dims[3];
    } else {
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "X must be 3-D or 4-D");
    }
    int64_t rot = poprt__attr_i(n, "rotary_embedding_dim", 0);
    if (rot <= 0)
        rot = D;
    if (rot > D || rot % 2)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "rotary_embedding_dim %lld",
                               (long long)rot);
    int64_t half = rot / 2;
    if (C->dims[C->rank - 1] < half || S->dims[S->rank - 1] < half)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "cos/sin cache too narrow");
    int64_t cw = C->dims[C->rank - 1];
    if (P) {
        if (P->numel != B * Sq)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "position_ids shape");
    } else if (C->numel != B * Sq * cw || S->numel != C->numel) {
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "without position_ids the caches must be [batch, seq, dim/2]");
    }
    int64_t max_pos = C->numel / cw;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < Sq; s++) {
            int64_t row = b * Sq + s;
            if (P) {
                row = poprt__load_i64(P->data, P->dtype, b * Sq + s);
                if (row < 0 || row >= max_pos)
                    return POPRT__NODE_ERR(n, POPRT_STATUS_RUNTIME_ERROR,
                                           "position id %lld out of range", (long long)row);
            }
            for (int64_t h = 0; h < H; h++) {
                int64_t base = three ? (b * Sq + s) * H * D + h * D : ((b * H + h) * Sq + s) * D;
                for (int64_t i = 0; i < half; i++) {
                    double c = poprt__ref_ld_f64(C->data, C->dtype, row * cw + i);
                    double sn = poprt__ref_ld_f64(S->data, S->dtype, row * cw + i);
                    int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
                    double x1 = poprt__ref_ld_f64(X->data, X->dtype, base + i1);
                    double x2 = poprt__ref_ld_f64(X->data, X->dtype, base + i2);
                    poprt__ref_st_f64(Y->data, Y->dtype, base + i1, x1 * c - x2 * sn);
                    poprt__ref_st_f64(Y->data, Y->dtype, base + i2, x2 * c + x1 * sn);
                }
                for (int64_t i = rot; i < D; i++)
                    poprt__ref_st_f64(Y->data, Y->dtype, base + i,
                                      poprt__ref_ld_f64(X->data, X->dtype, base + i));
            }
        }
    return POPRT_OK;
}
