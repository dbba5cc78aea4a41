/* fuse_consecutive_reshape: Reshape(Reshape(x, s1), s2) reads x directly
 * when s2 is constant and has no 0 entry that would copy a dim of the
 * intermediate (with allowzero=1 a 0 is literal and fine). The first
 * Reshape goes when nothing else reads it. */
#include "passes/rewrite.h"

static poprt_status fuse(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *r2 = g->nodes.items[i];
        poprt__tensor *mid = poprt__node_in(r2, 0);
        poprt__node *r1 = mid ? mid->producer : NULL;
        if (!poprt__rw_is(r2, "Reshape") || !r1 || r1->graph != g || !poprt__rw_is(r1, "Reshape"))
            continue;
        int64_t shape[POPRT__MAX_RANK];
        int64_t ns = poprt__rw_attr_or_input_ints(r2, "shape", 1, 5, shape, POPRT__MAX_RANK);
        if (ns < 0)
            continue;
        int copies = 0;
        for (int64_t k = 0; k < ns; k++)
            copies |= shape[k] == 0;
        if (copies && !poprt__attr_i(r2, "allowzero", 0))
            continue;
        poprt__node_set_input(r2, 0, r1->inputs[0]);
        if (!mid->is_output && !poprt__tensor_use_count(g, mid)) {
            poprt__graph_remove_node(g, r1);
            poprt__rw_drop_if_unused(g, poprt__node_in(r1, 1));
        }
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

const poprt__pass poprt__pass_fuse_consecutive_reshape = {
    "fuse_consecutive_reshape", "merge two consecutive Reshapes into one", run};
