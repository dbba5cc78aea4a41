/* Operator family 'poprt_fused': libpoprt's own operators (domain "ai.poprt"),
 * produced by the transformer passes; schemas and shape/type inference.
 * docs/ops.md describes each. */
#include <string.h>
#include "ir/op.h"
#include "ir/dtype.h"

static const poprt__type *tin(const poprt__infer_ctx *c, int i)
{
    if (i >= c->n_in || !c->in[i].type || c->in[i].type->kind != POPRT__KIND_TENSOR)
        return NULL;
    return c->in[i].type;
}

static poprt__dim dim_at(const poprt__type *t, int d)
{
    poprt__dim u = {-1, NULL};
    return (t && t->rank > d && d >= 0 && t->dims) ? t->dims[d] : u;
}

static poprt_status need_float(poprt__infer_ctx *c, int i)
{
    int32_t e = poprt__infer_elem(c, i);
    if (e && !poprt__dtype_is_float(e))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "input %d must be floating point, got %s", i,
                               poprt__dtype_name((poprt_dtype)e));
    return POPRT_OK;
}

/* Gelu, LayerNorm: Y has X's type. */
static poprt_status infer_same_float(poprt__infer_ctx *c)
{
    poprt_status st = need_float(c, 0);
    if (st)
        return st;
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

static poprt_status infer_layernorm(poprt__infer_ctx *c)
{
    const poprt__type *x = tin(c, 0);
    int64_t axis;
    if (x && x->rank >= 0 && !poprt__norm_axis(poprt__attr_i(c->node, "axis", -1), x->rank, &axis))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    return infer_same_float(c);
}

/* FusedAttention / PackedAttention: Y [B, S, H] from X [B, S, Hin] and
 * Wqkv [Hin, 3H]. */
static poprt_status infer_attention(poprt__infer_ctx *c)
{
    const poprt__type *x = tin(c, 0), *w = tin(c, 1);
    poprt_status st = need_float(c, 0);
    if (st || (st = need_float(c, 1)))
        return st;
    int64_t nh = poprt__attr_i(c->node, "num_heads", 0);
    if (nh < 1)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "num_heads must be >= 1");
    if ((x && x->rank >= 0 && x->rank != 3) || (w && w->rank >= 0 && w->rank != 2))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "X must be [B, S, Hin] and Wqkv [Hin, 3H]");
    poprt__dim h = {-1, NULL};
    poprt__dim w1 = dim_at(w, 1), w0 = dim_at(w, 0), x2 = dim_at(x, 2);
    if (w1.value >= 0) {
        if (w1.value % (3 * nh))
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "Wqkv's %lld columns are not 3 * num_heads * head_dim",
                                   (long long)w1.value);
        h.value = w1.value / 3;
    }
    if (w0.value >= 0 && x2.value >= 0 && w0.value != x2.value)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X has %lld features, Wqkv expects %lld", (long long)x2.value,
                               (long long)w0.value);
    poprt__dim d[3] = {dim_at(x, 0), dim_at(x, 1), h};
    int32_t elem = poprt__infer_elem(c, 0);
    poprt__infer_set(c, 0, elem ? elem : POPRT_DTYPE_FLOAT, 3, d);
    return POPRT_OK;
}

/* The heads' output: nh must divide Q's last dim (when known); Y is Q's. */
static poprt_status heads_output(poprt__infer_ctx *c, const poprt__type *q, int64_t nh)
{
    poprt__dim h = dim_at(q, q ? q->rank - 1 : -1);
    if (h.value >= 0 && h.value % nh)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "num_heads %lld does not divide the %lld features", (long long)nh,
                               (long long)h.value);
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

/* SegmentAttention: Y of Q's type; Q, K, V float of one shape [..., H],
 * Segments integer ids, one per token. */
static poprt_status infer_segment_attention(poprt__infer_ctx *c)
{
    poprt_status st = POPRT_OK;
    for (int i = 0; i < 3 && !st; i++)
        st = need_float(c, i);
    if (st)
        return st;
    int64_t nh = poprt__attr_i(c->node, "num_heads", 0);
    if (nh < 1)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "num_heads must be >= 1");
    int32_t e = poprt__infer_elem(c, 3);
    if (e && !poprt__dtype_is_int(e))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "Segments must be integers, not %s",
                               poprt__dtype_name((poprt_dtype)e));
    const poprt__type *q = tin(c, 0);
    if (q && q->rank >= 0 && q->rank < 2)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "Q must be [..., tokens, features]");
    return heads_output(c, q, nh);
}

/* MaskedAttention: Y of Q's type; Q, K, V float [B, S, H], the mask float
 * (broadcast to [B, heads, S, S] checked at run time). */
static poprt_status infer_masked_attention(poprt__infer_ctx *c)
{
    poprt_status st = POPRT_OK;
    for (int i = 0; i < 3 && !st; i++)
        st = need_float(c, i);
    if (!st && c->n_in > 3 && tin(c, 3))
        st = need_float(c, 3);
    if (st)
        return st;
    const int64_t nh = poprt__attr_i(c->node, "num_heads", 0);
    if (nh < 1)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "num_heads must be >= 1");
    for (int i = 0; i < 3; i++) {
        const poprt__type *t = tin(c, i);
        if (t && t->rank >= 0 && t->rank != 3)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                                   "input %d must be [B, S, H] (rank 3), not rank %d", i,
                                   t->rank);
    }
    const poprt__type *q = tin(c, 0);
    return heads_output(c, q, nh);
}

/* AttentionMask: [B, S] -> float [B, 1, 1, S]. */
static poprt_status infer_attention_mask(poprt__infer_ctx *c)
{
    const poprt__type *m = tin(c, 0);
    if (m && m->rank >= 0 && m->rank != 2)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "mask must be [B, S]");
    int32_t to = (int32_t)poprt__attr_i(c->node, "to", POPRT_DTYPE_FLOAT);
    if (!poprt__dtype_is_float(to))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "'to' must be a float type");
    poprt__dim one = {1, NULL};
    poprt__dim d[4] = {dim_at(m, 0), one, one, dim_at(m, 1)};
    poprt__infer_set(c, 0, to, 4, d);
    return POPRT_OK;
}

/* RotaryEmbedding: Y has X's type; Cos and Sin must broadcast to X. */
static poprt_status infer_rotary(poprt__infer_ctx *c)
{
    poprt_status st = need_float(c, 0);
    if (st)
        return st;
    const poprt__type *x = tin(c, 0);
    poprt__dim last = dim_at(x, x ? x->rank - 1 : -1);
    if (last.value >= 0 && last.value % 2)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "the rotated axis has odd size %lld", (long long)last.value);
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

/* FusedConv (lib/compiler/fuse_conv.c): Conv's attributes and shapes, plus
 * an optional residual Z of Y's shape. */
static poprt_status infer_fused_conv(poprt__infer_ctx *c)
{
    const poprt__op *conv = poprt__op_find("", "Conv", 11);
    if (!conv || !conv->infer)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INTERNAL, "no Conv schema");
    poprt_status st = conv->infer(c);
    if (st)
        return st;
    for (int i = 0; i < 4 && i < c->n_in; i++) {
        const poprt__type *t = tin(c, i);
        if (t && t->elem && t->elem != POPRT_DTYPE_FLOAT)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "FusedConv input %d must be float32", i);
    }
    return POPRT_OK;
}

static const poprt__op op_fused_conv = {
    .name = "FusedConv", .domain = "ai.poprt", .since_version = 1, .min_inputs = 2,
    .max_inputs = 4, .min_outputs = 1, .max_outputs = 1, .infer = infer_fused_conv};

#define OP(var, nm, imin, imax, inf)                                                       \
    static const poprt__op var = {.name = nm, .domain = "ai.poprt", .since_version = 1,         \
                                  .min_inputs = imin, .max_inputs = imax, .min_outputs = 1,    \
                                  .max_outputs = 1, .infer = inf};

OP(op_gelu, "Gelu", 1, 1, infer_same_float)
OP(op_layernorm, "LayerNorm", 2, 3, infer_layernorm)
OP(op_fused_attention, "FusedAttention", 2, 4, infer_attention)
OP(op_packed_attention, "PackedAttention", 4, 4, infer_attention)
OP(op_segment_attention, "SegmentAttention", 4, 4, infer_segment_attention)
OP(op_masked_attention, "MaskedAttention", 3, 4, infer_masked_attention)
OP(op_attention_mask, "AttentionMask", 1, 1, infer_attention_mask)
OP(op_rotary, "RotaryEmbedding", 3, 3, infer_rotary)

const poprt__op *const poprt__ops_poprt_fused[] = {
    &op_gelu, &op_layernorm, &op_fused_attention, &op_packed_attention, &op_segment_attention,
    &op_masked_attention, &op_attention_mask,
    &op_rotary, &op_fused_conv, NULL,
};
