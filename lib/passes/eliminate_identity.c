/* eliminate_identity: removes Identity nodes; readers use the input. */
#include "passes/rewrite.h"

static poprt__tensor *nop(poprt__node *n)
{
    return poprt__rw_is(n, "Identity") ? poprt__node_in(n, 0) : NULL;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_remove_nops(m, nop, changed);
}

const poprt__pass poprt__pass_eliminate_identity = {
    "eliminate_identity", "remove Identity nodes (graph outputs keep their names)", run};
