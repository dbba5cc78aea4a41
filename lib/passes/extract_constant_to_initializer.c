/* extract_constant_to_initializer: every Constant node becomes an
 * initializer of its graph holding the same value (string constants
 * excepted), so later passes see plain constant tensors. */
#include "passes/rewrite.h"

static poprt_status extract(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        poprt__tensor *t = poprt__node_out(n, 0);
        if (!poprt__rw_is(n, "Constant") || n->n_outputs != 1 || !t || t->type.elem == 0 ||
            t->type.elem == POPRT_DTYPE_STRING || !poprt__type_is_static(&t->type))
            continue;
        poprt_status st = poprt__pass_fold("extract_constant_to_initializer", n->graph->model, n);
        if (st) {
            /* a constant form the kernel does not read: leave the node */
            poprt__err_clear();
            poprt__tensor_set_data(t, NULL);
            continue;
        }
        t->producer = NULL;
        t->is_initializer = 1;
        if (poprt__vec_push(&g->initializers, t))
            return poprt__rw_oom();
        poprt__graph_remove_node(g, n);
        i--;
        *changed = 1;
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, extract, NULL, changed);
}

const poprt__pass poprt__pass_extract_constant_to_initializer = {
    "extract_constant_to_initializer",
    "replace each Constant node by an initializer holding its value", run};
