/* replace_pow: Pow(x, c) with a constant scalar exponent on float x becomes
 * multiplies / Sqrt / Reciprocal (c in {1, 2, 3, 4, 0.5, -0.5, -1, -2}),
 * avoiding a libm pow per element. Values agree to rounding; edge cases of
 * pow for c = 0.5 differ as sqrt does (pow(-0, .5) = +0, sqrt(-0) = -0,
 * pow(-inf, .5) = +inf, sqrt(-inf) = NaN). */
#include "passes/rewrite.h"

static poprt__tensor *un(poprt__graph *g, const char *op, poprt__tensor *a, poprt__tensor *out)
{
    poprt__node *n = a ? poprt__rw_node1(g, op, "", 1, &a, out, "pow") : NULL;
    return n ? n->outputs[0] : NULL;
}

static poprt__tensor *mul(poprt__graph *g, poprt__tensor *a, poprt__tensor *b, poprt__tensor *out)
{
    poprt__tensor *ins[2] = {a, b};
    poprt__node *n = a && b ? poprt__rw_node1(g, "Mul", "", 2, ins, out, "pow") : NULL;
    return n ? n->outputs[0] : NULL;
}

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0), *c = poprt__node_in(n, 1), *y = poprt__node_out(n, 0);
    double e;
    if (!x || !y || !poprt__dtype_is_float(x->type.elem) ||
        !poprt__rw_scalar(c, POPRT__RW_VALUE, &e))
        return POPRT_OK;
    /* a rank-r exponent would raise the output rank of a lower-rank x */
    if (c->type.rank > 0 && (x->type.rank < 0 || c->type.rank > x->type.rank))
        return POPRT_OK;
    poprt__tensor *r = NULL;
    if (e == 1.0)
        r = un(g, "Identity", x, y);
    else if (e == 2.0)
        r = mul(g, x, x, y);
    else if (e == 3.0)
        r = mul(g, mul(g, x, x, NULL), x, y);
    else if (e == 4.0) {
        poprt__tensor *s = mul(g, x, x, NULL);
        r = mul(g, s, s, y);
    } else if (e == 0.5)
        r = un(g, "Sqrt", x, y);
    else if (e == -0.5)
        r = un(g, "Reciprocal", un(g, "Sqrt", x, NULL), y);
    else if (e == -1.0)
        r = un(g, "Reciprocal", x, y);
    else if (e == -2.0)
        r = un(g, "Reciprocal", mul(g, x, x, NULL), y);
    else
        return POPRT_OK;
    if (!r)
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_pow", "Pow", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_pow = {
    "replace_pow",
    "replace Pow by constant exponents 1,2,3,4,0.5,-0.5,-1,-2 with Mul/Sqrt/Reciprocal", run};
