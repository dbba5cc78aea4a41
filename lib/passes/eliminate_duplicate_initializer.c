/* eliminate_duplicate_initializer: initializers of the main graph with the
 * same dtype, shape and bytes are merged into one (readers share it). */
#include "passes/rewrite.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    *changed = 0;
    return poprt__rw_dedup_initializers(m->graph, changed);
}

const poprt__pass poprt__pass_eliminate_duplicate_initializer = {
    "eliminate_duplicate_initializer",
    "merge main-graph initializers holding identical values (same dtype, shape and bytes)", run};
