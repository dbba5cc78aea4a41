/* eliminate_deadend: removes nodes none of whose outputs is read (by a node,
 * a subgraph or as a graph output), repeatedly, in every graph. */
#include "passes/rewrite.h"

static poprt_status dead(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    if (poprt__graph_remove_dead_nodes(g))
        *changed = 1;
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, dead, NULL, changed);
}

const poprt__pass poprt__pass_eliminate_deadend = {
    "eliminate_deadend", "remove nodes whose outputs nothing reads", run};
