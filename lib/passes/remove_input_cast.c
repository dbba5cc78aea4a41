/* remove_input_cast: a float graph input read only by Casts to one integer
 * type (input(fp16) -> Cast(int32) -> Gather) becomes an input of that
 * integer type and the Casts disappear. The caller then passes the
 * integers directly (no float round trip; exact for any id, where fp16
 * holds integers only up to 2048). */
#include "passes/rewrite.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = poprt__pass_no_args("remove_input_cast", args);
    if (st)
        return st;
    poprt__graph *g = m->graph;
    poprt__vec cons = {0};
    for (size_t i = 0; !st && i < g->inputs.len; i++) {
        poprt__tensor *x = g->inputs.items[i];
        if (x->is_initializer || x->is_output || !poprt__dtype_is_float(x->type.elem))
            continue;
        st = poprt__graph_consumers(g, x, &cons);
        if (st || !cons.len || (size_t)poprt__tensor_use_count(g, x) != cons.len)
            continue;
        int64_t to = 0;
        int ok = 1;
        for (size_t k = 0; k < cons.len && ok; k++) {
            poprt__node *c = cons.items[k];
            int64_t t = poprt__attr_i(c, "to", 0);
            ok = poprt__rw_is(c, "Cast") && c->outputs[0] && !c->outputs[0]->is_output &&
                 poprt__dtype_is_int((int32_t)t) && (!to || t == to);
            to = t;
        }
        if (!ok)
            continue;
        for (size_t k = 0; k < cons.len && !st; k++) {
            poprt__node *c = cons.items[k];
            st = poprt__graph_replace_uses(g, c->outputs[0], x);
            poprt__graph_remove_node(g, c);
        }
        x->type.elem = (int32_t)to;
        (*changed)++;
    }
    poprt__vec_free(&cons);
    return st;
}

const poprt__pass poprt__pass_remove_input_cast = {
    "remove_input_cast",
    "a float input read only by Casts to one integer type becomes an input of that type", run};
