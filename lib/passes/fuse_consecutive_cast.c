/* fuse_consecutive_cast: Cast(Cast(x, T2), T3) becomes Cast(x, T3) when T2
 * holds every value of x's type exactly (the result is then the same), and
 * disappears when T3 is x's type. The first Cast stays while something else
 * reads it. */
#include "passes/families.h"

static poprt_status merge(poprt__graph *g, poprt__node *c1, poprt__node *c2, int *done)
{
    poprt__tensor *x = c1->inputs[0];
    int32_t t1 = x && x->type.kind == POPRT__KIND_TENSOR ? x->type.elem : 0;
    int32_t t2 = (int32_t)poprt__attr_i(c1, "to", 0), t3 = (int32_t)poprt__attr_i(c2, "to", 0);
    if (!t1 || !poprt__rw_cast_exact(t1, t2))
        return POPRT_OK;
    *done = 1;
    if (t3 == t1) {
        int gone;
        poprt_status st = poprt__rw_bypass(g, c2, x, c2->outputs[0], &gone);
        if (st || gone)
            return st;
        /* the output keeps its name: c2 stays, a no-op cast of x */
    }
    poprt__node_set_input(c2, 0, x);
    return POPRT_OK;
}

static const poprt__consecutive cast = {"Cast", merge, NULL};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__fuse_consecutive(&cast, m, changed);
}

const poprt__pass poprt__pass_fuse_consecutive_cast = {
    "fuse_consecutive_cast",
    "merge Cast(Cast(x)) into one Cast when the middle type holds x's values exactly", run};
