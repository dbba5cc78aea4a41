/* fuse_consecutive_reshape: Reshape(Reshape(x, s1), s2) reads x directly
 * when s2 is constant and has no 0 entry that would copy a dim of the
 * intermediate (with allowzero=1 a 0 is literal and fine). The first
 * Reshape goes when nothing else reads it. */
#include "passes/families.h"

static poprt_status merge(poprt__graph *g, poprt__node *r1, poprt__node *r2, int *done)
{
    (void)g;
    int64_t shape[POPRT__MAX_RANK];
    int64_t ns = poprt__rw_attr_or_input_ints(r2, "shape", 1, 5, shape, POPRT__MAX_RANK);
    if (ns < 0)
        return POPRT_OK;
    int copies = 0;
    for (int64_t k = 0; k < ns; k++)
        copies |= shape[k] == 0;
    if (copies && !poprt__attr_i(r2, "allowzero", 0))
        return POPRT_OK;
    poprt__node_set_input(r2, 0, r1->inputs[0]);
    *done = 1;
    return POPRT_OK;
}

static const poprt__consecutive reshape = {"Reshape", merge, NULL};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__fuse_consecutive(&reshape, m, changed);
}

const poprt__pass poprt__pass_fuse_consecutive_reshape = {
    "fuse_consecutive_reshape", "merge two consecutive Reshapes into one", run};
