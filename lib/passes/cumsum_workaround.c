/* cumsum_workaround: CumSum takes its axis from a tensor; backends that
 * compile the axis statically (PopART) need it as an initializer holding a
 * non-negative value. A constant axis (initializer or folded Constant) is
 * replaced by a fresh int64 initializer with the axis normalised against
 * the known input rank. Values are unchanged. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0), *a = poprt__node_in(n, 1);
    int64_t ax, norm;
    if (!x || !a || poprt__rw_ints(a, POPRT__RW_VALUE, &ax, 1) != 1 ||
        x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 1 ||
        !poprt__norm_axis(ax, x->type.rank, &norm))
        return POPRT_OK;
    if (norm == ax && a->is_initializer && a->graph == g && a->type.rank == 0 &&
        a->type.elem == POPRT_DTYPE_INT64)
        return POPRT_OK; /* already canonical */
    poprt__tensor *t =
        poprt__graph_add_const(g, "cumsum_axis", POPRT_DTYPE_INT64, 0, NULL, &norm, sizeof norm);
    if (!t)
        return poprt__rw_oom();
    poprt__node_set_input(n, 1, t);
    if (a->producer && poprt__rw_is(a->producer, "Constant") && a->graph == g && !a->is_output &&
        poprt__tensor_use_count(g, a) == 0)
        poprt__graph_remove_node(g, a->producer);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"cumsum_workaround", "CumSum", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_cumsum_workaround = {
    "cumsum_workaround", "give CumSum a non-negative scalar int64 initializer as its axis", run};
