/* const_batch_size: fixes the unknown first (batch) dim of every graph input
 * to const_batch_size (default 1); a symbolic batch name is fixed wherever
 * it appears, then shapes are inferred again so the model has static shapes
 * (the CPU runtime then plans memory once instead of per run). */
#include "passes/rewrite.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    int64_t bs;
    poprt_status st = poprt__pass_only_int("const_batch_size", args, "const_batch_size", 1, &bs);
    if (st)
        return st;
    if (bs < 1)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass 'const_batch_size': const_batch_size must be at least 1");
    *changed = 0;
    poprt__graph *g = m->graph;
    for (size_t i = 0; i < g->inputs.len && !st; i++) {
        poprt__tensor *t = g->inputs.items[i];
        if (t->is_initializer || t->type.kind != POPRT__KIND_TENSOR || t->type.rank < 1 ||
            t->type.dims[0].value >= 0)
            continue;
        st = poprt__rw_fix_dim(m, t, 0, bs);
        *changed = 1;
    }
    if (!st && *changed)
        st = poprt__graph_infer(g, NULL);
    return st;
}

const poprt__pass poprt__pass_const_batch_size = {
    "const_batch_size",
    "fix the unknown batch dim (dim 0) of every input to const_batch_size=N (default 1) and "
    "re-infer shapes",
    run, 1};
