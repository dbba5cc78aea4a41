/* fuse_consecutive_cast: Cast(Cast(x, T2), T3) becomes Cast(x, T3) when T2
 * holds every value of x's type exactly (the result is then the same), and
 * disappears when T3 is x's type. The first Cast stays while something else
 * reads it. */
#include <string.h>
#include "passes/rewrite.h"

static poprt_status fuse(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *c2 = g->nodes.items[i];
        poprt__tensor *mid = poprt__node_in(c2, 0);
        poprt__node *c1 = mid ? mid->producer : NULL;
        if (!poprt__rw_is(c2, "Cast") || !c1 || c1->graph != g || !poprt__rw_is(c1, "Cast"))
            continue;
        poprt__tensor *x = c1->inputs[0];
        int32_t t1 = x && x->type.kind == POPRT__KIND_TENSOR ? x->type.elem : 0;
        int32_t t2 = (int32_t)poprt__attr_i(c1, "to", 0), t3 = (int32_t)poprt__attr_i(c2, "to", 0);
        if (!t1 || !poprt__rw_cast_exact(t1, t2))
            continue;
        if (t3 == t1) {
            int done;
            poprt_status st = poprt__rw_bypass(g, c2, x, c2->outputs[0], &done);
            if (st)
                return st;
            if (!done) /* the output keeps its name: c2 stays, a no-op cast of x */
                poprt__node_set_input(c2, 0, x);
        } else
            poprt__node_set_input(c2, 0, x);
        if (!mid->is_output && !poprt__tensor_use_count(g, mid))
            poprt__graph_remove_node(g, c1);
        *changed = 1;
        i = (size_t)-1;
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, fuse, NULL, changed);
}

const poprt__pass poprt__pass_fuse_consecutive_cast = {
    "fuse_consecutive_cast",
    "merge Cast(Cast(x)) into one Cast when the middle type holds x's values exactly", run};
