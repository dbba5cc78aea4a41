/* replace_hardswish: HardSwish (opset 14) -> x * HardSigmoid(x, 1/6, 0.5),
 * the same function built from opset-6 ops for older targets. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
    if (!x || !y)
        return POPRT_OK;
    poprt__node *hs = poprt__rw_node1(g, "HardSigmoid", "", 1, &x, NULL, "hardsigmoid");
    if (!hs || poprt__rw_attr_f(hs, "alpha", 1.0f / 6.0f) || poprt__rw_attr_f(hs, "beta", 0.5f))
        return poprt__rw_oom();
    poprt__tensor *ins[2] = {x, hs->outputs[0]};
    if (!poprt__rw_node1(g, "Mul", "", 2, ins, y, NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_hardswish", "HardSwish", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_hardswish = {
    "replace_hardswish", "replace HardSwish with x * HardSigmoid(x, alpha=1/6, beta=0.5)", run};
