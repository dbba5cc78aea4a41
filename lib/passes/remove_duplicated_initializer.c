/* remove_duplicated_initializer: like eliminate_duplicate_initializer but
 * over every graph of the model, subgraphs (If/Loop bodies) included, to save
 * weight memory. */
#include "passes/rewrite.h"

static poprt_status dedup(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    return poprt__rw_dedup_initializers(g, changed);
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, dedup, NULL, changed);
}

const poprt__pass poprt__pass_remove_duplicated_initializer = {
    "remove_duplicated_initializer",
    "merge initializers holding identical values, in the main graph and every subgraph, to save "
    "memory",
    run};
