/* replace_hardswish: HardSwish (opset 14) -> x * HardSigmoid(x, 1/6, 0.5),
 * the same function built from opset-6 ops for older targets. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "HardSwish", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
        if (!x || !y)
            continue;
        poprt__node *hs = rp_node(g, "HardSigmoid", "", 1, &x, NULL, "hardsigmoid");
        if (!hs || !rp_attr_f(hs, "alpha", 1.0f / 6.0f) || !rp_attr_f(hs, "beta", 0.5f)) {
            st = rp_oom();
            break;
        }
        poprt__tensor *ins[2] = {x, hs->outputs[0]};
        if (!rp_node(g, "Mul", "", 2, ins, y, NULL)) {
            st = rp_oom();
            break;
        }
        rp_drop(g, n);
        (*changed)++;
    }
    poprt__vec_free(&v);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("replace_hardswish", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_hardswish = {
    "replace_hardswish", "replace HardSwish with x * HardSigmoid(x, alpha=1/6, beta=0.5)", run};
