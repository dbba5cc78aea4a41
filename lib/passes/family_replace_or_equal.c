/* The replace_*_or_equal family (families.h). */
#include "passes/families.h"

poprt_status poprt__replace_or_equal(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    const poprt__or_equal *c = ctx;
    poprt__tensor *a = poprt__node_in(n, 0), *b = poprt__node_in(n, 1), *y = poprt__node_out(n, 0);
    if (!a || !b || !y)
        return POPRT_OK;
    int32_t e = a->type.elem ? a->type.elem : b->type.elem;
    if (!e)
        return POPRT_OK;
    poprt__tensor *ins[2] = {a, b};
    if (poprt__dtype_is_float(e)) {
        poprt__node *c1 = poprt__rw_node1(g, c->strict, "", 2, ins, NULL, "cmp");
        poprt__node *c2 = c1 ? poprt__rw_node1(g, "Equal", "", 2, ins, NULL, "eq") : NULL;
        poprt__tensor *o[2] = {c1 ? c1->outputs[0] : NULL, c2 ? c2->outputs[0] : NULL};
        if (!c2 || !poprt__rw_node1(g, "Or", "", 2, o, y, NULL))
            return poprt__rw_oom();
    } else {
        poprt__node *c1 = poprt__rw_node1(g, c->negated, "", 2, ins, NULL, "cmp");
        if (!c1 || !poprt__rw_node1(g, "Not", "", 1, c1->outputs, y, NULL))
            return poprt__rw_oom();
    }
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}
