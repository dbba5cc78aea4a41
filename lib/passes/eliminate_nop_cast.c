/* eliminate_nop_cast: removes Cast (and CastLike) nodes whose target type
 * is already the input's type. */
#include "passes/rewrite.h"

static poprt__tensor *nop(poprt__node *n)
{
    poprt__tensor *x = poprt__node_in(n, 0);
    if (!x || x->type.kind != POPRT__KIND_TENSOR || !x->type.elem)
        return NULL;
    if (poprt__rw_is(n, "Cast") && poprt__attr_i(n, "to", 0) == x->type.elem)
        return x;
    poprt__tensor *like = poprt__node_in(n, 1);
    if (poprt__rw_is(n, "CastLike") && like && like->type.elem == x->type.elem)
        return x;
    return NULL;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_remove_nops(m, nop, changed);
}

const poprt__pass poprt__pass_eliminate_nop_cast = {
    "eliminate_nop_cast", "remove Cast/CastLike nodes that cast a tensor to its own type", run};
