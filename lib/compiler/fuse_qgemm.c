/* Compile-time fusion of an integer matrix product or convolution with the
 * float steps that dequantize it, the form dynamic quantization writes
 * (ONNX Runtime's quantize_dynamic, libpoprt's float_to_int8):
 *
 *   MatMulInteger(A, B, a_zero_point, b_zero_point) -> Cast(to float)
 *   -> Mul(., S) [-> Add(., C)]
 *   ConvInteger(X, W, x_zero_point, w_zero_point) -> Cast(to float)
 *   -> Mul(., S) [-> Add(., C)]
 *
 * becomes one ai.poprt FusedMatMulInteger(A, B, a_zero_point,
 * b_zero_point, S, C) or FusedConvInteger(X, W, x_zero_point, w_zero_point,
 * S, C) (ConvInteger's attributes), whose kernel turns each block of
 * integer sums into floats while it is in cache (lib/kernels/x86/
 * quant_ops.c) instead of writing int32 and reading it back twice. S
 * (usually Mul(x_scale, W_scale), computed at run time) and C (a constant
 * bias) are float and hold one value or one per output column (the
 * product's last axis) or output channel (the convolution's axis 1), in a
 * shape that broadcasts over that axis only. The Cast, Mul and Add each
 * round as the ONNX operators do, in that order, so results equal the
 * unfused graph bit for bit. Each intermediate tensor must have exactly one
 * reader and not be a graph output. Only the main graph is rewritten, and
 * only where B / W is a constant (the weights: 2-D, or 3-D / 4-D). */
#include "compiler/compiler.h"
#include "passes/rewrite.h"

/* t (float) holds one value or n along axis `axis` of an output of rank
 * `rank`, broadcast along that axis only (ONNX broadcasting: t's dims align
 * with the output's last ones). */
static int per_axis(const poprt__tensor *t, int64_t n, int rank, int axis)
{
    int64_t d[POPRT__MAX_RANK];
    const int r = poprt__rw_dims(t, d);
    if (!t || t->type.elem != POPRT_DTYPE_FLOAT || r < 0 || r > rank)
        return 0;
    for (int i = 0; i < r; i++)
        if (d[i] != 1 && !(rank - r + i == axis && d[i] == n))
            return 0;
    return 1;
}

/* The other operand of binary node b whose one input is t, or NULL. */
static poprt__tensor *other_input(const poprt__node *b, const poprt__tensor *t)
{
    if (b->n_inputs != 2 || b->n_outputs != 1 || !poprt__node_out(b, 0))
        return NULL;
    poprt__tensor *x = poprt__node_in(b, 0), *y = poprt__node_in(b, 1);
    if (x == t && y != t)
        return y;
    if (y == t && x != t)
        return x;
    return NULL;
}

/* Fuses the chain starting at MatMulInteger or ConvInteger node q; *done 1
 * when it did. */
static poprt_status fuse_one(poprt__graph *g, poprt__node *q, int *done)
{
    *done = 0;
    const int conv = poprt__rw_is(q, "ConvInteger");
    poprt__tensor *a = poprt__node_in(q, 0), *b = poprt__node_in(q, 1);
    poprt__tensor *qy = poprt__node_out(q, 0);
    int64_t bd[POPRT__MAX_RANK], yd[POPRT__MAX_RANK];
    const int yr = poprt__rw_dims(qy, yd), br = b ? poprt__rw_dims(b, bd) : -1;
    if (q->n_outputs != 1 || !a || !b || !qy || !poprt__rw_is_const(b) || yr < 1)
        return POPRT_OK;
    /* the output axis the scale and bias run along, and its size */
    const int axis = conv ? 1 : yr - 1;
    if (conv ? br < 3 || br > 4 || yr != br || yd[1] != bd[0] : br != 2 || yd[yr - 1] != bd[1])
        return POPRT_OK;
    const int64_t n = conv ? bd[0] : bd[1];
    poprt__node *cast = poprt__graph_sole_consumer(g, qy);
    if (!cast || !poprt__rw_is(cast, "Cast") || cast->n_inputs != 1 || cast->n_outputs != 1 ||
        poprt__attr_i(cast, "to", 0) != POPRT_DTYPE_FLOAT || !poprt__node_out(cast, 0))
        return POPRT_OK;
    poprt__tensor *f = poprt__node_out(cast, 0);
    poprt__node *mul = poprt__graph_sole_consumer(g, f);
    poprt__tensor *s = mul && poprt__rw_is(mul, "Mul") ? other_input(mul, f) : NULL;
    if (!s || !per_axis(s, n, yr, axis))
        return POPRT_OK;
    poprt__tensor *out = poprt__node_out(mul, 0), *c = NULL;
    poprt__node *add = poprt__graph_sole_consumer(g, out);
    poprt__tensor *addend = add && poprt__rw_is(add, "Add") ? other_input(add, out) : NULL;
    if (addend && poprt__rw_is_const(addend) && per_axis(addend, n, yr, axis)) {
        c = addend;
        out = poprt__node_out(add, 0);
    } else {
        add = NULL;
    }
    poprt__tensor *ins[6] = {a, b, poprt__node_in(q, 2), poprt__node_in(q, 3), s, c};
    const char *name = poprt__model_unique_name(g->model, q->name);
    if (!name)
        return poprt__rw_oom();
    poprt__graph_remove_node(g, cast);
    poprt__graph_remove_node(g, mul);
    if (add)
        poprt__graph_remove_node(g, add);
    poprt__node *fz = poprt__graph_add_node(g, conv ? "FusedConvInteger" : "FusedMatMulInteger",
                                            "ai.poprt", name, c ? 6 : 5, 1);
    if (!fz)
        return poprt__rw_oom();
    static const char *const conv_attrs[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                             "pads", "strides"};
    for (size_t i = 0; conv && i < sizeof conv_attrs / sizeof conv_attrs[0]; i++) {
        poprt_status st = poprt__rw_copy_attr(fz, q, conv_attrs[i]);
        if (st)
            return st;
    }
    poprt__graph_remove_node(g, q);
    for (int i = 0; i < (c ? 6 : 5); i++)
        poprt__node_set_input(fz, i, ins[i]);
    fz->outputs[0] = out;
    out->producer = fz;
    out->producer_slot = 0;
    *done = 1;
    return POPRT_OK;
}

poprt_status poprt__compile_fuse_matmul_integer(poprt__model *m, int *any)
{
    poprt_status st =
        poprt__compile_fuse_from(m, "MatMulInteger", fuse_one, "MatMulInteger fusion", any);
    return st ? st : poprt__compile_fuse_from(m, "ConvInteger", fuse_one, "ConvInteger fusion", any);
}
