/* eliminate_nop_transpose: removes Transpose nodes whose permutation is the
 * identity. */
#include "passes/rewrite.h"

static poprt__tensor *nop(poprt__node *n)
{
    poprt__tensor *x = poprt__node_in(n, 0);
    if (!poprt__rw_is(n, "Transpose") || !x)
        return NULL;
    int64_t np;
    const int64_t *perm = poprt__attr_ints(n, "perm", &np);
    if (!perm) /* default: reversed axes, the identity only up to rank 1 */
        return x->type.kind == POPRT__KIND_TENSOR && x->type.rank >= 0 && x->type.rank <= 1 ? x : NULL;
    for (int64_t i = 0; i < np; i++)
        if (perm[i] != i)
            return NULL;
    return x;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_remove_nops(m, nop, changed);
}

const poprt__pass poprt__pass_eliminate_nop_transpose = {
    "eliminate_nop_transpose", "remove Transpose nodes with an identity permutation", run};
