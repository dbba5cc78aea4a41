/* Compile-time fusion of a float32 Conv with what follows it: a residual
 * Add or two-input Sum (Conv output + another tensor of the same shape),
 * then an activation (Relu, Clip with constant bounds, LeakyRelu, Sigmoid,
 * HardSigmoid, HardSwish), then elementwise steps with at most a scalar
 * operand (FusedElementwise's, among them activations written as several
 * nodes: x * Sigmoid(x), a decomposed HardSwish), then a float8 QuantizeLinear ->
 * DequantizeLinear pair become one ai.poprt FusedConv node,
 * Y = fp8(post(act(conv + B + Z))), whose kernel applies the epilogue to
 * each output block while it is still in cache (lib/kernels/x86/conv.c). Each
 * intermediate tensor must have exactly one reader (the input of a
 * several-node activation: its two) and must not be a graph output. Only the main graph is rewritten, and only where the shapes are
 * static. It runs before the elementwise-chain fusion, which would
 * otherwise take Add -> Relu. */
#include <math.h>
#include "compiler/compiler.h"
#include "kernels/ref/poprt_compiled.h"
#include "passes/rewrite.h"

/* A float32 activation of rank >= 3 with static dims. */
static int static_float(const poprt__tensor *t)
{
    return poprt__cc_static_float(t, POPRT__MAX_RANK) && t->type.rank >= 3;
}

/* The activation n computes on its input 0 (name and parameters), or 0. */
static int activation(const poprt__node *n, const char **name, float *a, float *b)
{
    *a = *b = 0.0f;
    if (n->n_outputs != 1 || !poprt__node_out(n, 0))
        return 0;
    if (poprt__rw_is(n, "Relu") || poprt__rw_is(n, "Sigmoid") || poprt__rw_is(n, "HardSwish")) {
        *name = n->op_type;
        return 1;
    }
    if (poprt__rw_is(n, "LeakyRelu")) {
        *name = "LeakyRelu";
        *a = poprt__attr_f(n, "alpha", 0.01f);
        return 1;
    }
    if (poprt__rw_is(n, "HardSigmoid")) {
        *name = "HardSigmoid";
        *a = poprt__attr_f(n, "alpha", 0.2f);
        *b = poprt__attr_f(n, "beta", 0.5f);
        return 1;
    }
    if (poprt__rw_is(n, "Clip")) {
        *name = "Clip";
        *a = -INFINITY;
        *b = INFINITY;
        if (n->opset < 11) {
            *a = poprt__attr_f(n, "min", -INFINITY);
            *b = poprt__attr_f(n, "max", INFINITY);
            return 1;
        }
        double v;
        const poprt__tensor *lo = poprt__node_in(n, 1), *hi = poprt__node_in(n, 2);
        if (lo && !poprt__rw_scalar(lo, POPRT__RW_VALUE, &v))
            return 0;
        if (lo)
            *a = (float)v;
        if (hi && !poprt__rw_scalar(hi, POPRT__RW_VALUE, &v))
            return 0;
        if (hi)
            *b = (float)v;
        return 1;
    }
    return 0;
}

static int copy_conv_attrs(poprt__node *f, const poprt__node *conv)
{
    static const char *const names[] = {"auto_pad", "dilations", "group",
                                        "kernel_shape", "pads", "strides"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (poprt__rw_copy_attr(f, conv, names[i]))
            return 0;
    return 1;
}

/* Fuses the chain starting at Conv node c; *done 1 when it did. */
static poprt_status fuse_one(poprt__graph *g, poprt__node *c, int *done)
{
    *done = 0;
    poprt__tensor *x = poprt__node_in(c, 0), *w = poprt__node_in(c, 1);
    poprt__tensor *y = poprt__node_out(c, 0);
    if (c->n_outputs != 1 || !static_float(x) || !static_float(y) || !w ||
        w->type.elem != POPRT_DTYPE_FLOAT)
        return POPRT_OK;
    poprt__node *chain[3 + 4 * POPRT__EW_MAX_STEPS] = {c};
    int len = 1;
    poprt__tensor *z = NULL, *out = y;
    poprt__node *next = poprt__graph_sole_consumer(g, out);
    if (next && (poprt__rw_is(next, "Add") || poprt__rw_is(next, "Sum")) && next->n_inputs == 2 &&
        next->n_outputs == 1) {
        poprt__tensor *a = poprt__node_in(next, 0), *b = poprt__node_in(next, 1);
        poprt__tensor *other = a == out ? b : a;
        if (other && other != out && static_float(other) && poprt__cc_same_shape(other, out) &&
            static_float(poprt__node_out(next, 0)) &&
            poprt__cc_same_shape(poprt__node_out(next, 0), out)) {
            z = other;
            chain[len++] = next;
            out = poprt__node_out(next, 0);
            next = poprt__graph_sole_consumer(g, out);
        }
    }
    const char *act = "";
    float aa = 0.0f, ab = 0.0f;
    if (next && poprt__node_in(next, 0) == out && activation(next, &act, &aa, &ab) &&
        static_float(poprt__node_out(next, 0))) {
        chain[len++] = next;
        out = poprt__node_out(next, 0);
    } else {
        act = "";
    }
    /* elementwise steps with at most a scalar operand (x * s + b,
     * Max(x, c), another activation, ...): FusedElementwise's own steps,
     * applied to each output block after the activation */
    int64_t pops[POPRT__EW_MAX_STEPS], prev[POPRT__EW_MAX_STEPS];
    float pal[POPRT__EW_MAX_STEPS], pbe[POPRT__EW_MAX_STEPS];
    int n_post = 0;
    poprt__cc_step st, f8 = {0};
    while (n_post < POPRT__EW_MAX_STEPS) {
        poprt__node *comp[4];
        int n_comp = 0;
        poprt__tensor *end;
        next = poprt__graph_sole_consumer(g, out);
        if (!next || !poprt__cc_step_of(g, next, out, &st) || st.t) {
            /* x * Sigmoid(x), a decomposed HardSwish, ...: out read twice */
            if (!(end = poprt__cc_composite_of(g, out, &st, comp, &n_comp)))
                break;
            for (int i = 0; i < n_comp; i++)
                chain[len++] = comp[i];
            out = end;
        } else if (st.pair) {
            /* a float8 QuantizeLinear -> DequantizeLinear pair (the input
             * of a conv float_to_fp8 quantized): its rounding ends the
             * epilogue */
            f8 = st;
            chain[len++] = next;
            chain[len++] = st.pair;
            out = poprt__node_out(st.pair, 0);
            break;
        } else {
            chain[len++] = next;
            out = poprt__node_out(next, 0);
        }
        pops[n_post] = st.op;
        prev[n_post] = st.reverse;
        pal[n_post] = st.alpha;
        pbe[n_post] = st.beta;
        n_post++;
    }
    if (len < 2)
        return POPRT_OK;

    poprt__tensor *ins[4] = {x, w, poprt__node_in(c, 2), z};
    const int n_in = z ? 4 : poprt__node_in(c, 2) ? 3 : 2;
    const char *name = poprt__model_unique_name(g->model, c->name);
    if (!name)
        return poprt__rw_oom();
    poprt__node *keep = c;
    for (int i = 1; i < len; i++)
        poprt__graph_remove_node(g, chain[i]);
    poprt__node *f = poprt__graph_add_node(g, "FusedConv", "ai.poprt", name, n_in, 1);
    if (!f || !copy_conv_attrs(f, keep) || poprt__rw_copy_matmul_float32(g->model, f, keep) ||
        poprt__rw_attr_s(f, "activation", act) ||
        poprt__rw_attr_f(f, "activation_alpha", aa) || poprt__rw_attr_f(f, "activation_beta", ab) ||
        (n_post && (poprt__rw_attr_ints(f, "post_ops", n_post, pops) ||
                    poprt__rw_attr_ints(f, "post_reverse", n_post, prev) ||
                    poprt__rw_attr_floats(f, "post_alpha", n_post, pal) ||
                    poprt__rw_attr_floats(f, "post_beta", n_post, pbe))) ||
        (f8.pair && (poprt__rw_attr_s(
                         f, "y_fp8", f8.op == POPRT__EW_FP8_E5M2 ? "float8e5m2" : "float8e4m3fn") ||
                     poprt__rw_attr_f(f, "y_fp8_scale", f8.alpha) ||
                     poprt__rw_attr_i(f, "y_fp8_zero_point", f8.beta != 0))))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, keep);
    for (int i = 0; i < n_in; i++)
        poprt__node_set_input(f, i, ins[i]);
    f->outputs[0] = out;
    out->producer = f;
    out->producer_slot = 0;
    *done = 1;
    return POPRT_OK;
}

poprt_status poprt__compile_fuse_conv(poprt__model *m, int *any)
{
    return poprt__compile_fuse_from(m, "Conv", fuse_one, "Conv fusion", any);
}
