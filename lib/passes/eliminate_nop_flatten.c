/* eliminate_nop_flatten: removes Flatten nodes whose input already has the
 * output's 2-D shape (rank 2 with axis 1, or equal static shapes). */
#include "passes/rewrite.h"

static poprt__tensor *nop(poprt__node *n)
{
    poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
    if (!poprt__rw_is(n, "Flatten") || !x || !y || x->type.kind != POPRT__KIND_TENSOR)
        return NULL;
    int64_t axis = poprt__attr_i(n, "axis", 1);
    if (x->type.rank == 2 && (axis == 1 || axis == -1))
        return x;
    int64_t xd[POPRT__MAX_RANK], yd[POPRT__MAX_RANK];
    int xr, yr;
    if (!poprt__rw_static_dims(x, xd, &xr) || !poprt__rw_static_dims(y, yd, &yr) || xr != 2 ||
        yr != 2 || xd[0] != yd[0] || xd[1] != yd[1])
        return NULL;
    return x;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_remove_nops(m, nop, changed);
}

const poprt__pass poprt__pass_eliminate_nop_flatten = {
    "eliminate_nop_flatten", "remove Flatten nodes whose input is already of the output's 2-D shape",
    run};
