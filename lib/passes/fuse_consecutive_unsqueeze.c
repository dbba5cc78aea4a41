/* fuse_consecutive_unsqueeze: Unsqueeze(Unsqueeze(x, a1), a2) becomes
 * Unsqueeze(x, a): a2 are positions of the final result, and a1 (positions
 * in the intermediate) move to the final positions not taken by a2. */
#include <stdlib.h>
#include "passes/rewrite.h"

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static poprt_status fuse(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *u2 = g->nodes.items[i];
        poprt__tensor *mid = poprt__node_in(u2, 0);
        poprt__node *u1 = mid ? mid->producer : NULL;
        if (!poprt__rw_is(u2, "Unsqueeze") || !u1 || u1->graph != g || !poprt__rw_is(u1, "Unsqueeze"))
            continue;
        poprt__tensor *x = u1->inputs[0];
        int r = x && x->type.kind == POPRT__KIND_TENSOR ? x->type.rank : -1;
        int64_t a1[POPRT__MAX_RANK], a2[POPRT__MAX_RANK], a[POPRT__MAX_RANK];
        int64_t n1 = poprt__rw_attr_or_input_ints(u1, "axes", 1, 13, a1, POPRT__MAX_RANK);
        int64_t n2 = poprt__rw_attr_or_input_ints(u2, "axes", 1, 13, a2, POPRT__MAX_RANK);
        if (r < 0 || n1 < 0 || n2 < 0 || r + n1 + n2 > POPRT__MAX_RANK)
            continue;
        int64_t rm = r + n1, rf = rm + n2, ok = 1;
        int taken[POPRT__MAX_RANK] = {0};
        for (int64_t k = 0; k < n2 && ok; k++) {
            a2[k] = a2[k] < 0 ? a2[k] + rf : a2[k];
            ok &= a2[k] >= 0 && a2[k] < rf && !taken[a2[k]];
            if (ok)
                taken[a2[k]] = 1;
        }
        /* free[j]: final position of intermediate axis j */
        int64_t freep[POPRT__MAX_RANK], nf = 0;
        for (int64_t d = 0; d < rf && ok; d++)
            if (!taken[d])
                freep[nf++] = d;
        for (int64_t k = 0; k < n1 && ok; k++) {
            int64_t v = a1[k] < 0 ? a1[k] + rm : a1[k];
            ok &= v >= 0 && v < rm && nf == rm;
            if (ok)
                a1[k] = freep[v];
        }
        if (!ok)
            continue;
        for (int64_t k = 0; k < n2; k++)
            a[k] = a2[k];
        for (int64_t k = 0; k < n1; k++)
            a[n2 + k] = a1[k];
        qsort(a, (size_t)(n1 + n2), sizeof *a, cmp64);
        poprt_status st = poprt__rw_set_axes(u2, "axes", 1, 13, a, n1 + n2);
        if (st)
            return st;
        poprt__node_set_input(u2, 0, x);
        if (!mid->is_output && !poprt__tensor_use_count(g, mid)) {
            poprt__graph_remove_node(g, u1);
            poprt__rw_drop_if_unused(g, poprt__node_in(u1, 1));
        }
        *changed = 1;
        i = (size_t)-1;
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, fuse, NULL, changed);
}

const poprt__pass poprt__pass_fuse_consecutive_unsqueeze = {
    "fuse_consecutive_unsqueeze", "merge two consecutive Unsqueezes with known axes into one", run};
