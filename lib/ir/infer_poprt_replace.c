/* Operator family 'poprt_replace': libpoprt's own operators (domain "ai.poprt"),
 * produced by the replace_* passes; schemas and shape/type inference.
 * Semantics: docs/ops.md. */
#include "ir/op.h"
#include "ir/dtype.h"

static poprt_status need_float(poprt__infer_ctx *c, int i)
{
    int32_t e = poprt__infer_elem(c, i);
    if (e && !poprt__dtype_is_float(e))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "input %d is %s, expected a float type",
                               i, poprt__dtype_name((poprt_dtype)e));
    return POPRT_OK;
}

static poprt_status infer_float_same(poprt__infer_ctx *c)
{
    poprt_status st = need_float(c, 0);
    if (!st)
        poprt__infer_same(c, 0, 0);
    return st;
}

static poprt_status infer_wherev2(poprt__infer_ctx *c)
{
    int32_t ce = poprt__infer_elem(c, 0), xe = poprt__infer_elem(c, 1), ye = poprt__infer_elem(c, 2);
    if (ce == POPRT_DTYPE_STRING)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "condition must be bool or numeric");
    if (xe && ye && xe != ye)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "X is %s but Y is %s",
                               poprt__dtype_name((poprt_dtype)xe), poprt__dtype_name((poprt_dtype)ye));
    return poprt__infer_broadcast(c, 0, 0, 3, xe ? xe : ye);
}

static poprt_status infer_softmaxv2(poprt__infer_ctx *c)
{
    poprt_status st = need_float(c, 0);
    if (st)
        return st;
    const poprt__type *t = c->in[0].type;
    int64_t ax;
    if (t && t->kind == POPRT__KIND_TENSOR && t->rank >= 0 &&
        !poprt__norm_axis(poprt__attr_i(c->node, "axis", -1), t->rank ? t->rank : 1, &ax))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "axis out of range for rank %d",
                               t->rank);
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

static poprt_status infer_fastnorm(poprt__infer_ctx *c)
{
    poprt_status st = need_float(c, 0);
    if (st)
        return st;
    const poprt__type *t = c->in[0].type;
    if (t && t->kind == POPRT__KIND_TENSOR && t->rank >= 0 && t->rank < 2)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "X must have rank >= 2, not %d",
                               t->rank);
    int64_t ch = (t && t->rank >= 2) ? t->dims[1].value : -1;
    for (int i = 1; i < 3 && ch >= 0; i++) {
        const poprt__type *s = c->in[i].type;
        int64_t n = s ? poprt__type_numel(s) : -1;
        if (n >= 0 && n != ch && n != 1)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "input %d holds %lld values, expected %lld or 1", i, (long long)n,
                                   (long long)ch);
    }
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

static poprt_status infer_notzero(poprt__infer_ctx *c)
{
    int64_t to = poprt__attr_i(c->node, "to", 0);
    if (!poprt__dtype_valid((int32_t)to) || to == POPRT_DTYPE_STRING)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "attribute 'to' (%lld) is not a numeric dtype",
                               (long long)to);
    if (poprt__infer_elem(c, 0) == POPRT_DTYPE_STRING)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "numeric input required");
    poprt__infer_same(c, 0, 0);
    c->out[0].kind = POPRT__KIND_TENSOR;
    c->out[0].elem = (int32_t)to;
    return POPRT_OK;
}

#define OP(var, opname, nin_min, nin_max, inf) \
    static const poprt__op var = {.name = opname, .domain = "ai.poprt", .since_version = 1,   \
                                  .min_inputs = nin_min, .max_inputs = nin_max,             \
                                  .min_outputs = 1, .max_outputs = 1, .infer = inf};
OP(op_erfv2, "ErfV2", 1, 1, infer_float_same)
OP(op_wherev2, "WhereV2", 3, 3, infer_wherev2)
OP(op_softmaxv2, "SoftmaxV2", 1, 1, infer_softmaxv2)
OP(op_fastnorm, "FastNorm", 3, 3, infer_fastnorm)
OP(op_notzero, "NotZero", 1, 1, infer_notzero)

const poprt__op *const poprt__ops_poprt_replace[] = {
    &op_erfv2, &op_wherev2, &op_softmaxv2, &op_fastnorm, &op_notzero, NULL,
};
