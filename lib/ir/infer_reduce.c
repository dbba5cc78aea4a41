/* Operator family 'reduce': schemas and shape/type inference for Reduce*,
 * ArgMax/ArgMin, Softmax/LogSoftmax/Hardmax, Attention, LinearAttention,
 * RotaryEmbedding and the classification losses. */
#include <string.h>
#include "ir/op.h"
#include "ir/geom.h"

/* ---- small helpers -------------------------------------------------------- */

static const poprt__type *tensor_in(const poprt__infer_ctx *c, int i)
{
    if (i >= c->n_in || !c->in[i].type || c->in[i].type->kind != POPRT__KIND_TENSOR)
        return NULL;
    return c->in[i].type;
}

/* Dim i of t, unknown when t or its rank is unknown. */
static poprt__dim dim_of(const poprt__type *t, int i)
{
    poprt__dim d = {-1, NULL};
    if (t && t->rank > i && i >= 0)
        d = t->dims[i];
    return d;
}

static poprt__dim dim_val(int64_t v)
{
    poprt__dim d = {v < 0 ? -1 : v, NULL};
    return d;
}

static int64_t dv(const poprt__type *t, int i) { return dim_of(t, i).value; }

static int64_t mul_known(int64_t a, int64_t b)
{
    int64_t r;
    return (a < 0 || b < 0 || !poprt__mul_i64(a, b, &r)) ? -1 : r;
}

/* SHAPE_MISMATCH when two known sizes of one quantity differ. */
static poprt_status agree(const poprt__node *n, const char *what, int64_t a, int64_t b)
{
    if (a >= 0 && b >= 0 && a != b)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "%s: %lld and %lld differ", what,
                               (long long)a, (long long)b);
    return POPRT_OK;
}

/* ---- Reduce* -------------------------------------------------------------- */

static poprt_status infer_reduce(poprt__infer_ctx *c)
{
    const poprt__node *n = c->node;
    const poprt__type *t = tensor_in(c, 0);
    int32_t elem = poprt__infer_elem(c, 0);
    int keep = poprt__attr_i(n, "keepdims", 1) != 0;
    int noop = poprt__attr_i(n, "noop_with_empty_axes", 0) != 0;
    int64_t *axes = NULL, na = 0;
    int axes_known = 1;

    if (poprt__reduce_axes_from_input(n, c->opset)) {
        const poprt__type *at = tensor_in(c, 1);
        if (at && !poprt__infer_input_ints(c, 1, &axes, &na)) {
            /* a tensor of statically known size 0 is still "no axes" */
            if (poprt__type_numel(at) == 0)
                na = 0;
            else
                axes_known = 0;
        }
    } else {
        const int64_t *a = poprt__attr_ints(n, "axes", &na);
        axes = (int64_t *)a; /* only read below */
    }
    if (axes_known && na == 0 && noop) {
        poprt__infer_same(c, 0, 0);
        return POPRT_OK;
    }
    if (!t || t->rank < 0) {
        if (axes_known && na == 0 && !keep)
            poprt__infer_set(c, 0, elem, 0, NULL);
        else
            poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int r = t->rank;
    if (!axes_known) {
        if (keep)
            poprt__infer_set(c, 0, elem, r, NULL);
        else
            poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    unsigned char red[POPRT__MAX_RANK] = {0};
    if (r > POPRT__MAX_RANK)
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "rank %d too large", r);
    for (int64_t i = 0; i < na; i++) {
        int64_t ax;
        if (!poprt__norm_axis(axes[i], r, &ax))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "axis %lld out of range for rank %d", (long long)axes[i], r);
        red[ax] = 1;
    }
    poprt__dim dims[POPRT__MAX_RANK];
    int orank = 0;
    for (int i = 0; i < r; i++) {
        int reduced = na == 0 || red[i];
        if (!reduced)
            dims[orank++] = t->dims[i];
        else if (keep)
            dims[orank++] = dim_val(1);
    }
    poprt__infer_set(c, 0, elem, orank, dims);
    return POPRT_OK;
}

/* ---- ArgMax / ArgMin ------------------------------------------------------ */

static poprt_status infer_arg(poprt__infer_ctx *c)
{
    const poprt__type *t = tensor_in(c, 0);
    int keep = poprt__attr_i(c->node, "keepdims", 1) != 0;
    int64_t axis = poprt__attr_i(c->node, "axis", 0);
    if (!t || t->rank < 0) {
        poprt__infer_unknown(c, 0, POPRT_DTYPE_INT64);
        return POPRT_OK;
    }
    int64_t ax;
    if (!poprt__norm_axis(axis, t->rank, &ax))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "axis %lld out of range for rank %d", (long long)axis, t->rank);
    poprt__dim dims[POPRT__MAX_RANK];
    int orank = 0;
    for (int i = 0; i < t->rank && i < POPRT__MAX_RANK; i++) {
        if (i != ax)
            dims[orank++] = t->dims[i];
        else if (keep)
            dims[orank++] = dim_val(1);
    }
    poprt__infer_set(c, 0, POPRT_DTYPE_INT64, orank, dims);
    return POPRT_OK;
}

/* ---- Softmax family ------------------------------------------------------- */

static poprt_status infer_softmax(poprt__infer_ctx *c)
{
    const poprt__type *t = tensor_in(c, 0);
    if (t && t->rank >= 0) {
        int64_t axis = poprt__attr_i(c->node, "axis", c->opset >= 13 ? -1 : 1);
        int64_t ax;
        /* rank 0 is accepted by some exporters with axis -1/0 */
        if (t->rank > 0 && !poprt__norm_axis(axis, t->rank, &ax))
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                                   "axis %lld out of range for rank %d", (long long)axis,
                                   t->rank);
    }
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

/* ---- Attention (23, 24) --------------------------------------------------- */

static poprt_status infer_attention(poprt__infer_ctx *c)
{
    const poprt__node *n = c->node;
    const poprt__type *q = tensor_in(c, 0), *k = tensor_in(c, 1), *v = tensor_in(c, 2);
    const poprt__type *pk = tensor_in(c, 4), *pv = tensor_in(c, 5);
    int32_t elem = poprt__infer_elem(c, 0);
    int qr = q ? q->rank : -1;
    if (qr >= 0 && qr != 3 && qr != 4)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "Q must be 3-D or 4-D, not %d-D",
                               qr);
    if (q && k && v && qr >= 0 && (k->rank >= 0 && k->rank != qr))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "Q, K, V must have the same rank");
    int64_t qh = poprt__attr_i(n, "q_num_heads", 0), kvh = poprt__attr_i(n, "kv_num_heads", 0);
    if (qr == 3 && (qh <= 0 || kvh <= 0))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "3-D inputs need q_num_heads and kv_num_heads");
    /* per-head views: batch, heads, seq, head size */
    int64_t B = dv(q, 0), Hq = -1, Sq = -1, Hkv = -1, Skv = -1, Dk = -1, Dv = -1;
    if (qr == 4) {
        Hq = dv(q, 1);
        Sq = dv(q, 2);
        Hkv = dv(k, 1);
        if (Hkv < 0)
            Hkv = dv(v, 1);
        Skv = dv(k, 2);
        Dk = dv(k, 3);
        if (Dk < 0)
            Dk = dv(q, 3);
        Dv = dv(v, 3);
    } else if (qr == 3) {
        Hq = qh;
        Hkv = kvh;
        Sq = dv(q, 1);
        Skv = dv(k, 1);
        Dk = dv(k, 2) >= 0 ? dv(k, 2) / kvh : -1;
        Dv = dv(v, 2) >= 0 ? dv(v, 2) / kvh : -1;
    }
    /* Q, K, V (and the past state) must describe one batch, one key/value
     * sequence and one head size: the kernels index them together */
    const int sa = qr == 4 ? 2 : 1;
    poprt_status st = POPRT_OK;
    if (qr == 3 && ((dv(q, 2) >= 0 && dv(q, 2) % qh) || (dv(k, 2) >= 0 && dv(k, 2) % kvh) ||
                    (dv(v, 2) >= 0 && dv(v, 2) % kvh)))
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "hidden sizes must divide by q_num_heads / kv_num_heads");
    if (qr >= 0 && (!(st = agree(n, "batch of Q and K", dv(q, 0), dv(k, 0))) &&
                    !(st = agree(n, "batch of Q and V", dv(q, 0), dv(v, 0))) &&
                    !(st = agree(n, "sequence of K and V", dv(k, sa), dv(v, sa))) &&
                    !(st = agree(n, "head size of Q and K",
                                 qr == 4 ? dv(q, 3) : dv(q, 2) >= 0 ? dv(q, 2) / qh : -1, Dk))))
        st = qr == 4 ? agree(n, "heads of K and V", dv(k, 1), dv(v, 1)) : POPRT_OK;
    if (!st && Hq >= 0 && Hkv > 0 && Hq % Hkv)
        st = POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                             "q heads (%lld) must be a multiple of kv heads (%lld)", (long long)Hq,
                             (long long)Hkv);
    if (!st && (pk || pv)) {
        if (!pk || !pv || (pk->rank >= 0 && pk->rank != 4) || (pv->rank >= 0 && pv->rank != 4))
            st = POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                 "past_key and past_value go together, both 4-D");
        else if (!(st = agree(n, "batch of Q and past_key", dv(q, 0), dv(pk, 0))) &&
                 !(st = agree(n, "batch of Q and past_value", dv(q, 0), dv(pv, 0))) &&
                 !(st = agree(n, "heads of K and past_key", Hkv, dv(pk, 1))) &&
                 !(st = agree(n, "heads of K and past_value", Hkv, dv(pv, 1))) &&
                 !(st = agree(n, "sequence of past_key and past_value", dv(pk, 2), dv(pv, 2))) &&
                 !(st = agree(n, "head size of K and past_key", Dk, dv(pk, 3))))
            st = agree(n, "head size of V and past_value", Dv, dv(pv, 3));
    }
    if (st)
        return st;
    if (B < 0)
        B = dv(k, 0);
    int64_t past = pk ? dv(pk, 2) : 0;
    int64_t total = (past < 0 || Skv < 0) ? -1 : past + Skv;
    if (qr < 0) {
        poprt__infer_unknown(c, 0, elem);
    } else if (qr == 4) {
        poprt__dim d[4] = {dim_of(q, 0), dim_of(q, 1), dim_of(q, 2), dim_val(Dv)};
        poprt__infer_set(c, 0, elem, 4, d);
    } else {
        poprt__dim d[3] = {dim_of(q, 0), dim_of(q, 1), dim_val(mul_known(Hq, Dv))};
        poprt__infer_set(c, 0, elem, 3, d);
    }
    poprt__dim pkd[4] = {dim_val(B), dim_val(Hkv), dim_val(total), dim_val(Dk)};
    poprt__dim pvd[4] = {dim_val(B), dim_val(Hkv), dim_val(total), dim_val(Dv)};
    if (pk && pk->rank == 4) {
        if (pkd[1].value < 0)
            pkd[1] = pk->dims[1];
        if (pkd[3].value < 0)
            pkd[3] = pk->dims[3];
    }
    if (pv && pv->rank == 4 && pvd[3].value < 0)
        pvd[3] = pv->dims[3];
    poprt__infer_set(c, 1, elem, 4, pkd);
    poprt__infer_set(c, 2, elem, 4, pvd);
    poprt__dim qkd[4] = {dim_val(B), dim_val(Hq), dim_val(Sq), dim_val(total)};
    poprt__infer_set(c, 3, elem, 4, qkd);
    return POPRT_OK;
}

/* ---- LinearAttention ------------------------------------------------------ */

static poprt_status infer_linear_attention(poprt__infer_ctx *c)
{
    const poprt__node *n = c->node;
    const poprt__type *q = tensor_in(c, 0), *v = tensor_in(c, 2), *ps = tensor_in(c, 3);
    int32_t elem = poprt__infer_elem(c, 0);
    int64_t qh = poprt__attr_i(n, "q_num_heads", 0), kvh = poprt__attr_i(n, "kv_num_heads", 0);
    if (qh <= 0 || kvh <= 0 || qh % kvh != 0)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "q_num_heads (%lld) must be a positive multiple of kv_num_heads "
                               "(%lld)", (long long)qh, (long long)kvh);
    if (q && q->rank >= 0 && q->rank != 3)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "query must be 3-D");
    int64_t dk = dv(q, 2) >= 0 ? dv(q, 2) / qh : -1;
    int64_t dvv = dv(v, 2) >= 0 ? dv(v, 2) / kvh : -1;
    poprt__dim od[3] = {dim_of(q, 0), dim_of(q, 1), dim_val(mul_known(qh, dvv))};
    poprt__infer_set(c, 0, elem, 3, od);
    poprt__dim sd[4] = {dim_of(q, 0), dim_val(kvh), dim_val(dk), dim_val(dvv)};
    poprt__infer_set(c, 1, ps ? ps->elem : elem, 4, sd);
    return POPRT_OK;
}

/* ---- FlexAttention (ai.onnx.preview) -------------------------------------- */

static poprt_status infer_flex_attention(poprt__infer_ctx *c)
{
    const poprt__type *q = tensor_in(c, 0), *v = tensor_in(c, 2);
    int32_t elem = poprt__infer_elem(c, 0);
    if (q && q->rank >= 0 && q->rank != 4)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "Q must be 4-D");
    poprt__dim d[4] = {dim_of(q, 0), dim_of(q, 1), dim_of(q, 2), dim_of(v, 3)};
    poprt__infer_set(c, 0, elem, 4, d);
    return POPRT_OK;
}

/* ---- RotaryEmbedding ------------------------------------------------------ */

static poprt_status infer_rotary(poprt__infer_ctx *c)
{
    const poprt__type *x = tensor_in(c, 0);
    if (x && x->rank >= 0 && x->rank != 3 && x->rank != 4)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "X must be 3-D or 4-D");
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

/* ---- losses --------------------------------------------------------------- */

static int reduction_none(const poprt__node *n)
{
    return strcmp(poprt__attr_s(n, "reduction", "mean"), "none") == 0;
}

static poprt_status check_reduction(const poprt__node *n)
{
    const char *r = poprt__attr_s(n, "reduction", "mean");
    if (strcmp(r, "none") && strcmp(r, "sum") && strcmp(r, "mean"))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "unknown reduction '%s'", r);
    return POPRT_OK;
}

static poprt_status infer_nll(poprt__infer_ctx *c)
{
    poprt_status st = check_reduction(c->node);
    if (st)
        return st;
    int32_t elem = poprt__infer_elem(c, 0);
    if (!reduction_none(c->node)) {
        poprt__infer_set(c, 0, elem, 0, NULL);
        return POPRT_OK;
    }
    const poprt__type *t = tensor_in(c, 1);
    if (!t || t->rank < 0)
        poprt__infer_unknown(c, 0, elem);
    else
        poprt__infer_set(c, 0, elem, t->rank, t->dims);
    return POPRT_OK;
}

static poprt_status infer_sce(poprt__infer_ctx *c)
{
    poprt_status st = infer_nll(c);
    if (st)
        return st;
    poprt__infer_same(c, 1, 0);
    return POPRT_OK;
}

/* ---- table ---------------------------------------------------------------- */

#define REDUCE_OP(id, nm)                                                                  \
    static const poprt__op id = {nm, "", 1, 1, 2, 1, 1, 0, infer_reduce}

REDUCE_OP(op_reduce_sum, "ReduceSum");
REDUCE_OP(op_reduce_mean, "ReduceMean");
REDUCE_OP(op_reduce_max, "ReduceMax");
REDUCE_OP(op_reduce_min, "ReduceMin");
REDUCE_OP(op_reduce_prod, "ReduceProd");
REDUCE_OP(op_reduce_l1, "ReduceL1");
REDUCE_OP(op_reduce_l2, "ReduceL2");
REDUCE_OP(op_reduce_logsum, "ReduceLogSum");
REDUCE_OP(op_reduce_logsumexp, "ReduceLogSumExp");
REDUCE_OP(op_reduce_sumsquare, "ReduceSumSquare");

static const poprt__op op_argmax = {"ArgMax", "", 1, 1, 1, 1, 1, 0, infer_arg};
static const poprt__op op_argmin = {"ArgMin", "", 1, 1, 1, 1, 1, 0, infer_arg};
static const poprt__op op_softmax = {"Softmax", "", 1, 1, 1, 1, 1, 0, infer_softmax};
static const poprt__op op_logsoftmax = {"LogSoftmax", "", 1, 1, 1, 1, 1, 0, infer_softmax};
static const poprt__op op_hardmax = {"Hardmax", "", 1, 1, 1, 1, 1, 0, infer_softmax};
static const poprt__op op_attention = {"Attention", "", 23, 3, 7, 1, 4, 0, infer_attention};
static const poprt__op op_linear_attention = {"LinearAttention", "", 27, 3, 7, 1, 2, 0,
                                              infer_linear_attention};
/* CONTROL: its graph attributes need a run-time frame, so it is never folded */
static const poprt__op op_flex_attention = {"FlexAttention", "ai.onnx.preview", 1, 3, 3, 1, 1,
                                            POPRT__OP_CONTROL, infer_flex_attention};
static const poprt__op op_rotary = {"RotaryEmbedding", "", 23, 3, 4, 1, 1, 0, infer_rotary};
static const poprt__op op_nll = {"NegativeLogLikelihoodLoss", "", 12, 2, 3, 1, 1, 0, infer_nll};
static const poprt__op op_sce = {"SoftmaxCrossEntropyLoss", "", 12, 2, 3, 1, 2, 0, infer_sce};

const poprt__op *const poprt__ops_reduce[] = {
    &op_reduce_sum,
    &op_reduce_mean,
    &op_reduce_max,
    &op_reduce_min,
    &op_reduce_prod,
    &op_reduce_l1,
    &op_reduce_l2,
    &op_reduce_logsum,
    &op_reduce_logsumexp,
    &op_reduce_sumsquare,
    &op_argmax,
    &op_argmin,
    &op_softmax,
    &op_logsoftmax,
    &op_hardmax,
    &op_attention,
    &op_linear_attention,
    &op_flex_attention,
    &op_rotary,
    &op_nll,
    &op_sce,
    NULL,
};
