/* replace_trilu: Trilu (opset 14) whose last two dims and k are constant
 * -> Where(mask, x, 0) with a constant [M, N] mask: ops available at
 * opset 9, for models converted to older opsets. Exact (a select). */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0), *kt = poprt__node_in(n, 1), *y = poprt__node_out(n, 0);
    if (!x || !y || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 2 || !x->type.elem ||
        x->type.elem == POPRT_DTYPE_STRING)
        return POPRT_OK;
    int r = x->type.rank;
    int64_t M = x->type.dims[r - 2].value, N = x->type.dims[r - 1].value, k = 0;
    if (M < 0 || N < 0 || M * N > (1 << 24))
        return POPRT_OK;
    if (kt && poprt__rw_ints(kt, POPRT__RW_VALUE, &k, 1) != 1)
        return POPRT_OK;
    int upper = poprt__attr_i(n, "upper", 1) != 0;
    unsigned char *mask = poprt__arena_alloc(&g->model->arena, (size_t)(M * N > 0 ? M * N : 1));
    if (!mask)
        return poprt__rw_oom();
    for (int64_t a = 0; a < M; a++)
        for (int64_t b = 0; b < N; b++)
            mask[a * N + b] = upper ? (b - a >= k) : (b - a <= k);
    int64_t md[2] = {M, N};
    poprt__tensor *mt =
        poprt__graph_add_const(g, "trilu_mask", POPRT_DTYPE_BOOL, 2, md, mask, (size_t)(M * N));
    poprt__tensor *z = poprt__rw_new_scalar(g, "zero", x->type.elem, 0, 0.0);
    poprt__tensor *ins[3] = {mt, x, z};
    if (!mt || !z || !poprt__rw_node1(g, "Where", "", 3, ins, y, NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_trilu", "Trilu", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_trilu = {
    "replace_trilu", "replace Trilu with static matrix dims and constant k by Where(const mask, x, 0)",
    run};
