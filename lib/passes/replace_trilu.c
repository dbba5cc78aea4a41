/* replace_trilu: Trilu (opset 14) whose last two dims and k are constant
 * -> Where(mask, x, 0) with a constant [M, N] mask: ops available at
 * opset 9, for models converted to older opsets. Exact (a select). */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "Trilu", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0), *kt = poprt__node_in(n, 1), *y = poprt__node_out(n, 0);
        if (!x || !y || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 2 || !x->type.elem ||
            x->type.elem == POPRT_DTYPE_STRING)
            continue;
        int r = x->type.rank;
        int64_t M = x->type.dims[r - 2].value, N = x->type.dims[r - 1].value, k = 0;
        if (M < 0 || N < 0 || M * N > (1 << 24))
            continue;
        if (kt && rp_const_ints(kt, &k, 1) != 1)
            continue;
        int upper = poprt__attr_i(n, "upper", 1) != 0;
        unsigned char *mask = poprt__arena_alloc(&g->model->arena, (size_t)(M * N > 0 ? M * N : 1));
        if (!mask) {
            st = rp_oom();
            break;
        }
        for (int64_t a = 0; a < M; a++)
            for (int64_t b = 0; b < N; b++)
                mask[a * N + b] = upper ? (b - a >= k) : (b - a <= k);
        int64_t md[2] = {M, N};
        poprt__tensor *mt = poprt__graph_add_const(g, "trilu_mask", POPRT_DTYPE_BOOL, 2, md, mask,
                                                   (size_t)(M * N));
        poprt__tensor *z = rp_const_of(g, "zero", x->type.elem, 0, 0.0);
        poprt__tensor *ins[3] = {mt, x, z};
        if (!mt || !z || !rp_node(g, "Where", "", 3, ins, y, NULL)) {
            st = rp_oom();
            break;
        }
        rp_drop(g, n);
        (*changed)++;
    }
    poprt__vec_free(&v);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("replace_trilu", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_trilu = {
    "replace_trilu", "replace Trilu with static matrix dims and constant k by Where(const mask, x, 0)",
    run};
