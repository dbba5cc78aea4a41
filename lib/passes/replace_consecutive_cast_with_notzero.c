/* replace_consecutive_cast_with_notzero: Cast(to=bool) followed by
 * Cast(to=T) is (x != 0) as T: one ai.poprt NotZero node instead of two
 * casts and a bool intermediate. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *c2, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *t = poprt__node_in(c2, 0), *y = poprt__node_out(c2, 0);
    if (!t || !y || !t->producer || !poprt__rw_is(t->producer, "Cast") || t->graph != g)
        return POPRT_OK;
    poprt__node *c1 = t->producer;
    poprt__tensor *x = poprt__node_in(c1, 0);
    int64_t to1 = poprt__attr_i(c1, "to", 0), to2 = poprt__attr_i(c2, "to", 0);
    if (!x || to1 != POPRT_DTYPE_BOOL || to2 == POPRT_DTYPE_STRING ||
        !poprt__dtype_valid((int32_t)to2))
        return POPRT_OK;
    int32_t xe = x->type.elem;
    if (!poprt__dtype_is_float(xe) && !poprt__dtype_is_int(xe) && xe != POPRT_DTYPE_BOOL)
        return POPRT_OK;
    poprt__node *nz = poprt__rw_node1(g, "NotZero", "ai.poprt", 1, &x, y, NULL);
    if (!nz || poprt__rw_attr_i(nz, "to", to2))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, c2);
    if (poprt__tensor_use_count(g, t) == 0 && !t->is_output)
        poprt__graph_remove_node(g, c1);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_consecutive_cast_with_notzero", "Cast", rewrite,
                                         NULL, 1};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_consecutive_cast_with_notzero = {
    "replace_consecutive_cast_with_notzero",
    "replace Cast(to=bool) -> Cast(to=T) with one ai.poprt NotZero(to=T)", run};
