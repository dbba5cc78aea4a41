/* replace_where_with_wherev2: Where -> ai.poprt WhereV2, whose condition
 * may be numeric (non-zero selects X). A condition made by Cast(to=bool)
 * of a numeric tensor read by nothing else is taken directly, so the cast
 * and its bool intermediate disappear. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    if (n->n_inputs != 3 || !n->inputs[0] || !n->inputs[1] || !n->inputs[2] || !n->outputs[0])
        return POPRT_OK;
    poprt__tensor *c = n->inputs[0];
    poprt__node *cast = c->producer && c->graph == g ? c->producer : NULL;
    poprt__node *drop_cast = NULL;
    if (cast && poprt__rw_is(cast, "Cast") && poprt__attr_i(cast, "to", 0) == POPRT_DTYPE_BOOL &&
        cast->inputs[0] && poprt__graph_sole_consumer(g, c) == n) {
        int32_t e = cast->inputs[0]->type.elem;
        if (poprt__dtype_is_float(e) || poprt__dtype_is_int(e)) {
            c = cast->inputs[0];
            drop_cast = cast;
        }
    }
    poprt__tensor *ins[3] = {c, n->inputs[1], n->inputs[2]};
    if (!poprt__rw_node1(g, "WhereV2", "ai.poprt", 3, ins, n->outputs[0], NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    if (drop_cast)
        poprt__graph_remove_node(g, drop_cast);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_where_with_wherev2", "Where", rewrite, NULL, 1};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_where_with_wherev2 = {
    "replace_where_with_wherev2",
    "replace Where with ai.poprt WhereV2, absorbing a Cast(to=bool) of the condition", run};
