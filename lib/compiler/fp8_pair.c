/* Recognition of the float8 QuantizeLinear -> DequantizeLinear pairs that
 * float_to_fp8 puts before every quantized input: the compiler turns each
 * into a rounding step (fuse_elementwise.c) or a FusedConv's output
 * rounding (fuse_conv.c). */
#include "compiler/compiler.h"
#include "passes/util_replace.h"

/* Constant scalar zero point of the pair: absent, or 0 of the float8 type. */
static int zero_point_ok(const poprt__tensor *z, int32_t dt)
{
    double v;
    return !z || (z->type.elem == dt && rp_const_scalar(z, &v) && v == 0);
}

int poprt__cc_fp8_pair(const poprt__graph *g, poprt__node *q, const poprt__tensor *x,
                       poprt__cc_fp8 *out)
{
    const poprt__tensor *code = poprt__node_out(q, 0);
    if (!rp_is(q, "QuantizeLinear") || q->n_outputs != 1 || !code || poprt__node_in(q, 0) != x ||
        !poprt__cc_static_float(x, POPRT__MAX_RANK) ||
        (code->type.elem != POPRT_DTYPE_FLOAT8E4M3FN && code->type.elem != POPRT_DTYPE_FLOAT8E5M2) ||
        poprt__attr_i(q, "saturate", 1) != 1 ||
        (poprt__attr_i(q, "precision", 0) != 0 &&
         poprt__attr_i(q, "precision", 0) != POPRT_DTYPE_FLOAT))
        return 0;
    poprt__node *d = poprt__graph_sole_consumer(g, code);
    const poprt__tensor *y = d ? poprt__node_out(d, 0) : NULL;
    if (!d || !rp_is(d, "DequantizeLinear") || poprt__node_in(d, 0) != code ||
        d->n_outputs != 1 || !y || !poprt__cc_static_float(y, POPRT__MAX_RANK) ||
        !poprt__cc_same_shape(y, x))
        return 0;
    const poprt__tensor *s1 = poprt__node_in(q, 1), *s2 = poprt__node_in(d, 1);
    double v1, v2;
    if (!s1 || !s2 || s1->type.elem != POPRT_DTYPE_FLOAT || s2->type.elem != POPRT_DTYPE_FLOAT ||
        !rp_const_scalar(s1, &v1) || !rp_const_scalar(s2, &v2) || v1 != v2 ||
        !zero_point_ok(poprt__node_in(q, 2), code->type.elem) ||
        !zero_point_ok(poprt__node_in(d, 2), code->type.elem))
        return 0;
    out->q = q;
    out->dq = d;
    out->e5m2 = code->type.elem == POPRT_DTYPE_FLOAT8E5M2;
    out->scale = (float)v1;
    out->zero_point = poprt__node_in(q, 2) != NULL;
    return 1;
}
