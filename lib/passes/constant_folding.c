/* constant_folding: evaluates every node whose inputs are all constant with
 * its kernel (through the evaluator handed in) and turns its outputs into
 * initializers; Shape/Size of statically shaped tensors fold too. Argument
 * max_tensor_size (bytes, -1 = no limit, the default): larger results are
 * left to run at inference time. */
#include <stdint.h>
#include "passes/rewrite.h"

/* A kernel that cannot fold a node (unsupported case) leaves it to run at
 * inference time instead of failing the pass. */
static poprt_status fold_or_skip(poprt__node *n, void *ctx)
{
    (void)ctx;
    if (poprt__pass_fold("constant_folding", n->graph->model, n) != POPRT_OK) {
        poprt__err_clear();
        for (int j = 0; j < n->n_outputs; j++)
            if (n->outputs[j] && n->outputs[j]->producer == n)
                poprt__tensor_set_data(n->outputs[j], NULL);
    }
    return POPRT_OK;
}

static poprt_status to_initializers(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec inputs = {0};
    poprt_status st = POPRT_OK;
    size_t k = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        int folded = n->n_outputs > 0;
        for (int j = 0; j < n->n_outputs && folded; j++)
            folded = !n->outputs[j] || (n->outputs[j]->raw && n->outputs[j]->producer == n);
        if (!folded) {
            g->nodes.items[k++] = n;
            continue;
        }
        poprt__graph_detach_node(n);
        for (int j = 0; j < n->n_outputs && !st; j++) {
            poprt__tensor *t = n->outputs[j];
            if (!t)
                continue;
            t->producer = NULL;
            t->is_initializer = 1;
            st = poprt__vec_push(&g->initializers, t);
        }
        for (int i2 = 0; i2 < n->n_inputs && !st; i2++)
            if (n->inputs[i2] && n->inputs[i2]->graph == g && n->inputs[i2]->is_initializer)
                st = poprt__vec_push(&inputs, n->inputs[i2]);
        *changed = 1;
    }
    g->nodes.len = k;
    /* initializers read only by folded nodes are dropped with them */
    for (size_t i = 0; i < inputs.len && !st; i++)
        poprt__rw_drop_if_unused(g, inputs.items[i]);
    poprt__vec_free(&inputs);
    return st ? poprt__rw_oom() : POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    int64_t max;
    poprt_status st = poprt__pass_only_int("constant_folding", args, "max_tensor_size", -1, &max);
    if (st)
        return st;
    *changed = 0;
    poprt__folder f = {fold_or_skip, NULL, max < 0 ? SIZE_MAX : (size_t)max};
    st = poprt__graph_infer(m->graph, &f);
    if (!st)
        st = poprt__rw_each_graph(m->graph, to_initializers, NULL, changed);
    return st;
}

const poprt__pass poprt__pass_constant_folding = {
    "constant_folding",
    "evaluate nodes whose inputs are all constant (and Shape/Size of static shapes) and store "
    "their results as initializers; max_tensor_size=BYTES limits each folded result (-1: no limit)",
    run, 1};
