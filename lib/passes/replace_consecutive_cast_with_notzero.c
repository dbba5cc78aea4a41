/* replace_consecutive_cast_with_notzero: Cast(to=bool) followed by
 * Cast(to=T) is (x != 0) as T: one ai.poprt NotZero node instead of two
 * casts and a bool intermediate. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "Cast", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *c2 = v.items[i];
        poprt__tensor *t = poprt__node_in(c2, 0), *y = poprt__node_out(c2, 0);
        if (!t || !y || !t->producer || !rp_is(t->producer, "Cast") || t->graph != g)
            continue;
        poprt__node *c1 = t->producer;
        poprt__tensor *x = poprt__node_in(c1, 0);
        int64_t to1 = poprt__attr_i(c1, "to", 0), to2 = poprt__attr_i(c2, "to", 0);
        if (!x || to1 != POPRT_DTYPE_BOOL || to2 == POPRT_DTYPE_STRING || !poprt__dtype_valid((int32_t)to2))
            continue;
        int32_t xe = x->type.elem;
        if (!poprt__dtype_is_float(xe) && !poprt__dtype_is_int(xe) && xe != POPRT_DTYPE_BOOL)
            continue;
        poprt__node *nz = rp_node(g, "NotZero", "ai.poprt", 1, &x, y, NULL);
        if (!nz || !rp_attr_i(nz, "to", to2)) {
            st = rp_oom();
            break;
        }
        rp_drop(g, c2);
        if (poprt__tensor_use_count(g, t) == 0 && !t->is_output)
            rp_drop(g, c1);
        (*changed)++;
    }
    poprt__vec_free(&v);
    if (!st && *changed)
        st = poprt__model_ensure_opset(g->model, "ai.poprt", 1);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("replace_consecutive_cast_with_notzero", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_consecutive_cast_with_notzero = {
    "replace_consecutive_cast_with_notzero",
    "replace Cast(to=bool) -> Cast(to=T) with one ai.poprt NotZero(to=T)", run};
