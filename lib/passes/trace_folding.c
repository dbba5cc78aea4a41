/* trace_folding: folds the shape arithmetic that tracing exporters leave
 * in graphs (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, scale
 * computations through Cast/Mul/Floor, ...) into initializers, using the
 * static shapes the model has now. Folded: nodes whose inputs are constant
 * (or, for Shape/Size, have a static shape) and whose outputs are integer or
 * bool tensors, or tiny (<= 64 elements) tensors of any type; weights are
 * never folded here (use constant_folding). Shapes fixed afterwards with
 * set_input_shape are not re-traced. */
#include "passes/rewrite.h"

#define TINY 64
#define MAX_BYTES (64 * 1024)

static int traced(const poprt__node *n)
{
    if (poprt__rw_has_body(n) || poprt__rw_is(n, "Constant") || n->n_outputs < 1)
        return 0;
    for (int j = 0; j < n->n_outputs; j++) {
        const poprt__tensor *t = n->outputs[j];
        if (!t)
            continue;
        int32_t e = t->type.elem;
        int64_t numel = poprt__type_numel(&t->type);
        if (t->type.kind != POPRT__KIND_TENSOR || numel < 0 || t->is_output || !e ||
            e == POPRT_DTYPE_STRING)
            return 0;
        if (!poprt__dtype_is_int(e) && e != POPRT_DTYPE_BOOL && numel > TINY)
            return 0;
    }
    return 1;
}

static poprt_status fold(poprt__node *n, void *ctx)
{
    (void)ctx;
    return traced(n) ? poprt__pass_fold("trace_folding", n->graph->model, n) : POPRT_OK;
}

static poprt_status to_initializers(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (!traced(n))
            continue;
        int all = 1;
        for (int j = 0; j < n->n_outputs && all; j++)
            all = !n->outputs[j] || n->outputs[j]->raw;
        if (!all)
            continue;
        for (int j = 0; j < n->n_outputs; j++) {
            poprt__tensor *t = n->outputs[j];
            if (!t)
                continue;
            int rank;
            int64_t dims[POPRT__MAX_RANK];
            if (!poprt__rw_static_dims(t, dims, &rank))
                return poprt__err(POPRT_STATUS_INTERNAL, "trace_folding: '%s' has no static shape", t->name);
            poprt_status st = poprt__tensor_set_const(t, t->type.elem, rank, dims, t->raw, t->nbytes);
            if (st)
                return st;
        }
        poprt__graph_remove_node(g, n);
        i--;
        (*changed)++;
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = poprt__pass_no_args("trace_folding", args);
    if (st)
        return st;
    poprt__folder f = {fold, NULL, MAX_BYTES};
    st = poprt__graph_infer(m->graph, &f);
    if (!st)
        st = poprt__rw_each_graph(m->graph, to_initializers, NULL, changed);
    if (!st && *changed)
        poprt__graph_remove_dead(m->graph);
    return st;
}

const poprt__pass poprt__pass_trace_folding = {
    "trace_folding",
    "fold traced shape arithmetic (int/bool or tiny results of constants/static shapes) into "
    "initializers",
    run};
