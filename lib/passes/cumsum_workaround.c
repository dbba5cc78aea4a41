/* cumsum_workaround: CumSum takes its axis from a tensor; backends that
 * compile the axis statically (PopART) need it as an initializer holding a
 * non-negative value. A constant axis (initializer or folded Constant) is
 * replaced by a fresh int64 initializer with the axis normalised against
 * the known input rank. Values are unchanged. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "CumSum", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0), *a = poprt__node_in(n, 1);
        int64_t ax, norm;
        if (!x || !a || rp_const_ints(a, &ax, 1) != 1 || x->type.kind != POPRT__KIND_TENSOR ||
            x->type.rank < 1 || !poprt__norm_axis(ax, x->type.rank, &norm))
            continue;
        if (norm == ax && a->is_initializer && a->graph == g && a->type.rank == 0 &&
            a->type.elem == POPRT_DTYPE_INT64)
            continue; /* already canonical */
        poprt__tensor *t = poprt__graph_add_const(g, "cumsum_axis", POPRT_DTYPE_INT64, 0, NULL, &norm,
                                                  sizeof norm);
        if (!t) {
            st = rp_oom();
            break;
        }
        poprt__node_set_input(n, 1, t);
        if (a->producer && rp_is(a->producer, "Constant") && a->graph == g && !a->is_output &&
            poprt__tensor_use_count(g, a) == 0)
            rp_drop(g, a->producer);
        (*changed)++;
    }
    poprt__vec_free(&v);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("cumsum_workaround", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_cumsum_workaround = {
    "cumsum_workaround", "give CumSum a non-negative scalar int64 initializer as its axis", run};
