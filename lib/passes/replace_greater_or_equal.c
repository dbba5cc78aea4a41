/* replace_greater_or_equal: GreaterOrEqual(a, b) for opset-11 targets (it is an opset-12 op).
 * Integers: Not(Less(a, b)), exact. Floats: Or(Greater(a, b), Equal(a, b)), which
 * keeps NaN comparisons false (Not(Less) would make them true). */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "GreaterOrEqual", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *a = poprt__node_in(n, 0), *b = poprt__node_in(n, 1), *y = poprt__node_out(n, 0);
        if (!a || !b || !y)
            continue;
        int32_t e = a->type.elem ? a->type.elem : b->type.elem;
        if (!e)
            continue;
        poprt__tensor *ins[2] = {a, b};
        if (poprt__dtype_is_float(e)) {
            poprt__node *c1 = rp_node(g, "Greater", "", 2, ins, NULL, "cmp");
            poprt__node *c2 = c1 ? rp_node(g, "Equal", "", 2, ins, NULL, "eq") : NULL;
            poprt__tensor *o[2] = {c1 ? c1->outputs[0] : NULL, c2 ? c2->outputs[0] : NULL};
            if (!c2 || !rp_node(g, "Or", "", 2, o, y, NULL)) {
                st = rp_oom();
                break;
            }
        } else {
            poprt__node *c = rp_node(g, "Less", "", 2, ins, NULL, "cmp");
            if (!c || !rp_node(g, "Not", "", 1, c->outputs, y, NULL)) {
                st = rp_oom();
                break;
            }
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
    poprt_status st = rp_no_args("replace_greater_or_equal", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_greater_or_equal = {
    "replace_greater_or_equal",
    "replace GreaterOrEqual with Not(Less) (integers) or Or(Greater, Equal) (floats, NaN-exact)", run};
