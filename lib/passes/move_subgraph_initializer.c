/* move_subgraph_initializer: initializers of subgraphs (If/Loop/Scan
 * bodies, at any depth) move to the main graph, under fresh unique names,
 * and the subgraph reads them from the outer scope. PopART looks for
 * initializers in the main graph only; for libpoprt it means every weight
 * lives in one table (loaded, shared and pre-packed once). Values are
 * unchanged. */
#include "passes/rewrite.h"

static poprt_status move(poprt__graph *g, void *ctx, int *changed)
{
    poprt__graph *main = ctx;
    if (g == main)
        return POPRT_OK;
    size_t k = 0;
    for (size_t i = 0; i < g->initializers.len; i++) {
        poprt__tensor *t = g->initializers.items[i];
        int rank;
        int64_t dims[POPRT__MAX_RANK];
        if (t->is_input || t->is_output || t->type.kind != POPRT__KIND_TENSOR ||
            t->type.elem == POPRT_DTYPE_STRING || !poprt__rw_static_dims(t, dims, &rank)) {
            g->initializers.items[k++] = t;
            continue;
        }
        poprt__tensor *nt = poprt__graph_add_const(main, t->name, t->type.elem, rank, dims, t->raw,
                                                   t->nbytes);
        if (!nt)
            return poprt__rw_oom();
        poprt_status st = poprt__graph_replace_uses(g, t, nt);
        if (st)
            return st;
        t->is_initializer = 0;
        poprt__tensor_set_data(t, NULL);
        t->nbytes = 0;
        (*changed)++;
    }
    g->initializers.len = k;
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = poprt__pass_no_args("move_subgraph_initializer", args);
    return st ? st : poprt__rw_each_graph(m->graph, move, m->graph, changed);
}

const poprt__pass poprt__pass_move_subgraph_initializer = {
    "move_subgraph_initializer",
    "move initializers of subgraphs (any depth) into the main graph under unique names", run};
