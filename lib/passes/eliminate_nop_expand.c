/* eliminate_nop_expand: removes Expand nodes whose constant shape
 * broadcasts to the input's own shape (no rank growth, each dim 1 or equal). */
#include "passes/rewrite.h"

static poprt__tensor *nop(poprt__node *n)
{
    poprt__tensor *x = poprt__node_in(n, 0);
    if (!poprt__rw_is(n, "Expand") || !x || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 0)
        return NULL;
    int64_t shape[POPRT__MAX_RANK];
    int64_t ns = poprt__rw_ints(poprt__node_in(n, 1), POPRT__RW_DATA, shape, POPRT__MAX_RANK);
    int r = x->type.rank;
    if (ns < 0 || ns > r)
        return NULL;
    for (int64_t i = 0; i < ns; i++) {
        int64_t d = x->type.dims[r - ns + i].value;
        if (shape[i] != 1 && shape[i] != d)
            return NULL;
    }
    return x;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_remove_nops(m, nop, changed);
}

const poprt__pass poprt__pass_eliminate_nop_expand = {
    "eliminate_nop_expand", "remove Expand nodes that do not change the input's shape", run};
