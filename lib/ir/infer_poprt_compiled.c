/* Operator family 'poprt_compiled': operators the session compiler makes
 * when it fuses nodes (domain "ai.poprt"); schemas and inference.
 * docs/ops.md describes each. */
#include "ir/op.h"
#include "ir/fused_elementwise.h"

int poprt__ew_is_binary(int64_t op)
{
    return op >= POPRT__EW_ADD && op <= POPRT__EW_MIN;
}

int poprt__ew_known(int64_t op)
{
    return poprt__ew_is_binary(op) || (op >= POPRT__EW_RELU && op <= POPRT__EW_SWISH);
}

/* FusedElementwise: Y has X's type; the step attributes must agree. */
static poprt_status infer_fused_elementwise(poprt__infer_ctx *c)
{
    const poprt__node *n = c->node;
    int64_t c_ops = 0, c_opd = 0, c_rev = 0, c_a = 0, c_b = 0;
    const int64_t *ops = poprt__attr_ints(n, "ops", &c_ops);
    const int64_t *opd = poprt__attr_ints(n, "operand", &c_opd);
    if (!ops || c_ops < 1 || c_ops > POPRT__EW_MAX_STEPS)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "attribute 'ops' must list 1..%d steps", POPRT__EW_MAX_STEPS);
    poprt__attr_ints(n, "reverse", &c_rev);
    poprt__attr_floats(n, "alpha", &c_a);
    poprt__attr_floats(n, "beta", &c_b);
    if (!opd || c_opd != c_ops || c_rev != c_ops || c_a != c_ops || c_b != c_ops)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "attributes 'operand', 'reverse', 'alpha' and 'beta' must have "
                               "one value per step (%lld)",
                               (long long)c_ops);
    for (int64_t s = 0; s < c_ops; s++) {
        if (!poprt__ew_known(ops[s]))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "step %lld: unknown operation %lld", (long long)s,
                                   (long long)ops[s]);
        if (opd[s] < -1 || opd[s] >= c->n_in || (opd[s] >= 0 && !poprt__ew_is_binary(ops[s])))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "step %lld: bad operand %lld",
                                   (long long)s, (long long)opd[s]);
    }
    for (int i = 0; i < c->n_in; i++) {
        int32_t e = poprt__infer_elem(c, i);
        if (e && e != POPRT_DTYPE_FLOAT)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "input %d must be float, got %s", i,
                                   poprt__dtype_name((poprt_dtype)e));
    }
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

static const poprt__op op_fused_elementwise = {
    .name = "FusedElementwise", .domain = "ai.poprt", .since_version = 1,
    .min_inputs = 1, .max_inputs = POPRT__EW_MAX_STEPS + 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_fused_elementwise};

/* BlockedMaxPool (lib/compiler/layout.c): MaxPool's attributes and
 * shapes, one output (no Indices); the data is NCHW16c. */
static poprt_status infer_blocked_maxpool(poprt__infer_ctx *c)
{
    const poprt__op *mp = poprt__op_find("", "MaxPool", 12);
    if (!mp || !mp->infer)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INTERNAL, "no MaxPool schema");
    const int32_t e = poprt__infer_elem(c, 0);
    if (e && e != POPRT_DTYPE_FLOAT)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "X must be float32");
    return mp->infer(c);
}

static const poprt__op op_blocked_maxpool = {
    .name = "BlockedMaxPool", .domain = "ai.poprt", .since_version = 1, .min_inputs = 1,
    .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .infer = infer_blocked_maxpool};

/* BlockedAveragePool, BlockedGlobalAveragePool (lib/compiler/layout.c):
 * the attributes and shapes of AveragePool (19: with dilations) and
 * GlobalAveragePool; X is float32 NCHW16c. */
static poprt_status infer_blocked_avg(poprt__infer_ctx *c, const char *op, int version)
{
    const poprt__op *p = poprt__op_find("", op, version);
    if (!p || !p->infer)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INTERNAL, "no %s schema", op);
    const int32_t e = poprt__infer_elem(c, 0);
    if (e && e != POPRT_DTYPE_FLOAT)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "X must be float32");
    return p->infer(c);
}

static poprt_status infer_blocked_averagepool(poprt__infer_ctx *c)
{
    return infer_blocked_avg(c, "AveragePool", 19);
}

static poprt_status infer_blocked_global_averagepool(poprt__infer_ctx *c)
{
    return infer_blocked_avg(c, "GlobalAveragePool", 1);
}

static const poprt__op op_blocked_averagepool = {
    .name = "BlockedAveragePool", .domain = "ai.poprt", .since_version = 1, .min_inputs = 1,
    .max_inputs = 1, .min_outputs = 1, .max_outputs = 1, .infer = infer_blocked_averagepool};

static const poprt__op op_blocked_global_averagepool = {
    .name = "BlockedGlobalAveragePool", .domain = "ai.poprt", .since_version = 1,
    .min_inputs = 1, .max_inputs = 1, .min_outputs = 1, .max_outputs = 1,
    .infer = infer_blocked_global_averagepool};

/* FusedMatMulInteger and FusedConvInteger (lib/compiler/fuse_qgemm.c):
 * MatMulInteger's / ConvInteger's shapes, a float output; the scale and the
 * optional bias are float with one value or one per output column (the
 * last axis) / output channel (axis 1), broadcast along that axis only. */
static poprt_status infer_fused_integer(poprt__infer_ctx *c, const char *op, int conv)
{
    const poprt__op *mi = poprt__op_find("", op, 10);
    if (!mi || !mi->infer)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INTERNAL, "no %s schema", op);
    if (c->n_in < 5 || !c->in[4].type)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "input 4 (scale) is required");
    poprt_status st = mi->infer(c);
    if (st)
        return st;
    const int rank = c->out[0].rank, axis = conv ? 1 : rank - 1;
    const int64_t n = axis >= 0 && axis < rank && c->out[0].dims ? c->out[0].dims[axis].value : -1;
    for (int i = 4; i < c->n_in && i < 6; i++) {
        if (!c->in[i].type)
            continue;
        const int32_t e = poprt__infer_elem(c, i);
        if (e && e != POPRT_DTYPE_FLOAT)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "input %d (%s) must be float, got %s", i,
                                   i == 4 ? "scale" : "bias", poprt__dtype_name((poprt_dtype)e));
        int64_t d[POPRT__MAX_RANK];
        const int r = poprt__infer_dims(c, i, d);
        int ok = r <= rank || rank < 0;
        for (int k = 0; ok && rank >= 0 && k < r; k++) /* d[k]: output axis rank - r + k */
            ok = d[k] == 1 || (rank - r + k == axis && (n < 0 || d[k] == n));
        if (!ok)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "input %d (%s) must hold 1 or %lld values along axis %d only",
                                   i, i == 4 ? "scale" : "bias", (long long)n, axis);
    }
    c->out[0].elem = POPRT_DTYPE_FLOAT;
    return POPRT_OK;
}

static poprt_status infer_fused_matmul_integer(poprt__infer_ctx *c)
{
    return infer_fused_integer(c, "MatMulInteger", 0);
}

static poprt_status infer_fused_conv_integer(poprt__infer_ctx *c)
{
    return infer_fused_integer(c, "ConvInteger", 1);
}

static const poprt__op op_fused_matmul_integer = {
    .name = "FusedMatMulInteger", .domain = "ai.poprt", .since_version = 1, .min_inputs = 5,
    .max_inputs = 6, .min_outputs = 1, .max_outputs = 1, .infer = infer_fused_matmul_integer};

static const poprt__op op_fused_conv_integer = {
    .name = "FusedConvInteger", .domain = "ai.poprt", .since_version = 1, .min_inputs = 5,
    .max_inputs = 6, .min_outputs = 1, .max_outputs = 1, .infer = infer_fused_conv_integer};

/* QLinearAdd (lib/compiler/fuse_qdq.c): A and B of one shape and byte
 * type, scalar float scales, scalar zero points (C's gives Y's type). */
static poprt_status infer_qlinear_add(poprt__infer_ctx *c)
{
    for (int i = 0; i < 8; i++)
        if (!c->in[i].type)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "input %d is required", i);
    static const int bytes[5] = {0, 2, 3, 5, 7}, floats[3] = {1, 4, 6};
    for (int k = 0; k < 5; k++) {
        const int32_t e = poprt__infer_elem(c, bytes[k]);
        if (e && e != POPRT_DTYPE_UINT8 && e != POPRT_DTYPE_INT8)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "input %d must be uint8 or int8, got %s", bytes[k],
                                   poprt__dtype_name((poprt_dtype)e));
    }
    for (int k = 0; k < 3; k++) {
        const int32_t e = poprt__infer_elem(c, floats[k]);
        if (e && e != POPRT_DTYPE_FLOAT)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "input %d (a scale) must be float, got %s", floats[k],
                                   poprt__dtype_name((poprt_dtype)e));
    }
    int64_t da[POPRT__MAX_RANK], db[POPRT__MAX_RANK];
    const int ra = poprt__infer_dims(c, 0, da), rb = poprt__infer_dims(c, 3, db);
    int same = ra == rb;
    for (int k = 0; same && k < ra; k++)
        same = da[k] < 0 || db[k] < 0 || da[k] == db[k];
    if (ra >= 0 && rb >= 0 && !same)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "A and B must have one shape");
    poprt__infer_same(c, 0, 0);
    const int32_t yt = poprt__infer_elem(c, 7);
    if (yt)
        c->out[0].elem = yt;
    return POPRT_OK;
}

static const poprt__op op_qlinear_add = {
    .name = "QLinearAdd", .domain = "ai.poprt", .since_version = 1, .min_inputs = 8,
    .max_inputs = 8, .min_outputs = 1, .max_outputs = 1, .infer = infer_qlinear_add};

const poprt__op *const poprt__ops_poprt_compiled[] = {&op_fused_elementwise,
                                                      &op_blocked_maxpool,
                                                      &op_blocked_averagepool,
                                                      &op_blocked_global_averagepool,
                                                      &op_fused_matmul_integer,
                                                      &op_fused_conv_integer,
                                                      &op_qlinear_add,
                                                      NULL};
