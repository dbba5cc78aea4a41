/* eliminate_nop_reshape: removes Reshape nodes whose constant target shape
 * is the input's shape (0 copies a dim, at most one -1 then must match the
 * remaining dim); works with symbolic dims. */
#include "passes/rewrite.h"

static poprt__tensor *nop(poprt__node *n)
{
    poprt__tensor *x = poprt__node_in(n, 0);
    if (!poprt__rw_is(n, "Reshape") || !x || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 0)
        return NULL;
    int64_t shape[POPRT__MAX_RANK];
    int64_t ns = poprt__rw_attr_or_input_ints(n, "shape", 1, 5, shape, POPRT__MAX_RANK);
    if (ns != x->type.rank)
        return NULL;
    int allowzero = (int)poprt__attr_i(n, "allowzero", 0);
    int minus = 0;
    for (int64_t i = 0; i < ns; i++) {
        int64_t d = x->type.dims[i].value;
        if (shape[i] == 0 && !allowzero)
            continue;
        if (shape[i] == -1)
            minus++;
        else if (d < 0 || shape[i] != d)
            return NULL;
    }
    return minus <= 1 ? x : NULL;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_remove_nops(m, nop, changed);
}

const poprt__pass poprt__pass_eliminate_nop_reshape = {
    "eliminate_nop_reshape", "remove Reshape nodes whose target shape is the input's shape", run};
