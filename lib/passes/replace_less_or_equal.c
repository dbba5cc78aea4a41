/* replace_less_or_equal: LessOrEqual(a, b) for opset-11 targets (it is an opset-12 op).
 * Integers: Not(Greater(a, b)), exact. Floats: Or(Less(a, b), Equal(a, b)), which
 * keeps NaN comparisons false (Not(Greater) would make them true). */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *a = poprt__node_in(n, 0), *b = poprt__node_in(n, 1), *y = poprt__node_out(n, 0);
    if (!a || !b || !y)
        return POPRT_OK;
    int32_t e = a->type.elem ? a->type.elem : b->type.elem;
    if (!e)
        return POPRT_OK;
    poprt__tensor *ins[2] = {a, b};
    if (poprt__dtype_is_float(e)) {
        poprt__node *c1 = poprt__rw_node1(g, "Less", "", 2, ins, NULL, "cmp");
        poprt__node *c2 = c1 ? poprt__rw_node1(g, "Equal", "", 2, ins, NULL, "eq") : NULL;
        poprt__tensor *o[2] = {c1 ? c1->outputs[0] : NULL, c2 ? c2->outputs[0] : NULL};
        if (!c2 || !poprt__rw_node1(g, "Or", "", 2, o, y, NULL))
            return poprt__rw_oom();
    } else {
        poprt__node *c = poprt__rw_node1(g, "Greater", "", 2, ins, NULL, "cmp");
        if (!c || !poprt__rw_node1(g, "Not", "", 1, c->outputs, y, NULL))
            return poprt__rw_oom();
    }
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_less_or_equal", "LessOrEqual", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_less_or_equal = {
    "replace_less_or_equal",
    "replace LessOrEqual with Not(Greater) (integers) or Or(Less, Equal) (floats, NaN-exact)", run};
