/* replace_where_with_wherev2: Where -> ai.poprt WhereV2, whose condition
 * may be numeric (non-zero selects X). A condition made by Cast(to=bool)
 * of a numeric tensor read by nothing else is taken directly, so the cast
 * and its bool intermediate disappear. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "Where", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        if (n->n_inputs != 3 || !n->inputs[0] || !n->inputs[1] || !n->inputs[2] || !n->outputs[0])
            continue;
        poprt__tensor *c = n->inputs[0];
        poprt__node *cast = c->producer && c->graph == g ? c->producer : NULL;
        poprt__node *drop_cast = NULL;
        if (cast && rp_is(cast, "Cast") && poprt__attr_i(cast, "to", 0) == POPRT_DTYPE_BOOL &&
            cast->inputs[0] && poprt__graph_sole_consumer(g, c) == n) {
            int32_t e = cast->inputs[0]->type.elem;
            if (poprt__dtype_is_float(e) || poprt__dtype_is_int(e)) {
                c = cast->inputs[0];
                drop_cast = cast;
            }
        }
        poprt__tensor *ins[3] = {c, n->inputs[1], n->inputs[2]};
        if (!rp_node(g, "WhereV2", "ai.poprt", 3, ins, n->outputs[0], NULL)) {
            st = rp_oom();
            break;
        }
        rp_drop(g, n);
        if (drop_cast)
            rp_drop(g, drop_cast);
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
    poprt_status st = rp_no_args("replace_where_with_wherev2", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_where_with_wherev2 = {
    "replace_where_with_wherev2",
    "replace Where with ai.poprt WhereV2, absorbing a Cast(to=bool) of the condition", run};
