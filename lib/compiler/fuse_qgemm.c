/* Compile-time fusion of an integer matrix product with the float steps
 * that dequantize it, the form dynamic quantization writes (ONNX Runtime's
 * quantize_dynamic, libpoprt's float_to_int8):
 *
 *   MatMulInteger(A, B, a_zero_point, b_zero_point) -> Cast(to float)
 *   -> Mul(., S) [-> Add(., C)]
 *
 * becomes one ai.poprt FusedMatMulInteger(A, B, a_zero_point, b_zero_point,
 * S, C), whose kernel turns each block of integer sums into floats while it
 * is in cache (lib/kernels/x86/quant_ops.c) instead of writing int32 and
 * reading it back twice. S (usually Mul(x_scale, W_scale), computed at run
 * time) and C (a constant bias) are float and hold one value or one per
 * output column, in a shape that broadcasts over the last axis only (every
 * other dim 1, rank at most the product's). The Cast, Mul and Add each round
 * as the ONNX operators do, in that order, so results equal the unfused
 * graph bit for bit. Each intermediate tensor must have exactly one reader
 * and not be a graph output. Only the main graph is rewritten, and only
 * where B is a 2-D constant (the weights). */
#include "compiler/compiler.h"
#include "passes/rewrite.h"

/* t (float) holds one value or one per column of a product with n columns
 * and rank `rank`, broadcast along the last axis only. */
static int per_column(const poprt__tensor *t, int64_t n, int rank)
{
    int64_t d[POPRT__MAX_RANK];
    const int r = poprt__rw_dims(t, d);
    if (!t || t->type.elem != POPRT_DTYPE_FLOAT || r < 0 || r > rank)
        return 0;
    for (int i = 0; i + 1 < r; i++)
        if (d[i] != 1)
            return 0;
    return r == 0 || d[r - 1] == 1 || d[r - 1] == n;
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

/* Fuses the chain starting at MatMulInteger node q; *done 1 when it did. */
static poprt_status fuse_one(poprt__graph *g, poprt__node *q, int *done)
{
    *done = 0;
    poprt__tensor *a = poprt__node_in(q, 0), *b = poprt__node_in(q, 1);
    poprt__tensor *qy = poprt__node_out(q, 0);
    int64_t bd[POPRT__MAX_RANK], yd[POPRT__MAX_RANK];
    const int yr = poprt__rw_dims(qy, yd);
    if (q->n_outputs != 1 || !a || !b || !qy || !poprt__rw_is_const(b) ||
        poprt__rw_dims(b, bd) != 2 || yr < 1 || yd[yr - 1] != bd[1])
        return POPRT_OK;
    const int64_t n = bd[1];
    poprt__node *cast = poprt__graph_sole_consumer(g, qy);
    if (!cast || !poprt__rw_is(cast, "Cast") || cast->n_inputs != 1 || cast->n_outputs != 1 ||
        poprt__attr_i(cast, "to", 0) != POPRT_DTYPE_FLOAT || !poprt__node_out(cast, 0))
        return POPRT_OK;
    poprt__tensor *f = poprt__node_out(cast, 0);
    poprt__node *mul = poprt__graph_sole_consumer(g, f);
    poprt__tensor *s = mul && poprt__rw_is(mul, "Mul") ? other_input(mul, f) : NULL;
    if (!s || !per_column(s, n, yr))
        return POPRT_OK;
    poprt__tensor *out = poprt__node_out(mul, 0), *c = NULL;
    poprt__node *add = poprt__graph_sole_consumer(g, out);
    poprt__tensor *addend = add && poprt__rw_is(add, "Add") ? other_input(add, out) : NULL;
    if (addend && poprt__rw_is_const(addend) && per_column(addend, n, yr)) {
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
    poprt__node *fz =
        poprt__graph_add_node(g, "FusedMatMulInteger", "ai.poprt", name, c ? 6 : 5, 1);
    if (!fz)
        return poprt__rw_oom();
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
    return poprt__compile_fuse_from(m, "MatMulInteger", fuse_one, "MatMulInteger fusion", any);
}
