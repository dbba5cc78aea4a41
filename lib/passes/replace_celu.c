/* replace_celu: Celu (opset 12) -> alpha * Elu(x / alpha), ops that exist
 * from opset 6, so models converted to older opsets keep it. Same values up
 * to one rounding. */
#include <math.h>
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
    if (!x || !y || !poprt__dtype_is_float(x->type.elem))
        return POPRT_OK;
    float alpha = poprt__attr_f(n, "alpha", 1.0f);
    if (!(alpha != 0.0f) || !isfinite(alpha))
        return POPRT_OK;
    poprt__tensor *in = x;
    if (alpha != 1.0f) {
        poprt__tensor *a = poprt__rw_new_scalar(g, "celu_alpha", x->type.elem, 0, alpha);
        poprt__tensor *ins[2] = {x, a};
        poprt__node *d = a ? poprt__rw_node1(g, "Div", "", 2, ins, NULL, "celu_scaled") : NULL;
        if (!d)
            return poprt__rw_oom();
        in = d->outputs[0];
    }
    poprt__node *e = poprt__rw_node1(g, "Elu", "", 1, &in, alpha != 1.0f ? NULL : y, "celu_elu");
    if (!e || poprt__rw_attr_f(e, "alpha", 1.0f))
        return poprt__rw_oom();
    if (alpha != 1.0f) {
        poprt__tensor *a = poprt__rw_new_scalar(g, "celu_alpha", x->type.elem, 0, alpha);
        poprt__tensor *ins[2] = {e->outputs[0], a};
        if (!a || !poprt__rw_node1(g, "Mul", "", 2, ins, y, NULL))
            return poprt__rw_oom();
    }
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_celu", "Celu", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_celu = {
    "replace_celu", "replace Celu with alpha*Elu(x/alpha) (opset-6 ops, same values)", run};
