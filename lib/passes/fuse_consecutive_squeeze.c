/* fuse_consecutive_squeeze: Squeeze(Squeeze(x, a1), a2) becomes
 * Squeeze(x, a) where a holds a1 and a2 mapped back to x's axes (x's rank
 * and both axes lists must be known). */
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
        poprt__node *s2 = g->nodes.items[i];
        poprt__tensor *mid = poprt__node_in(s2, 0);
        poprt__node *s1 = mid ? mid->producer : NULL;
        if (!poprt__rw_is(s2, "Squeeze") || !s1 || s1->graph != g || !poprt__rw_is(s1, "Squeeze"))
            continue;
        poprt__tensor *x = s1->inputs[0];
        int r = x && x->type.kind == POPRT__KIND_TENSOR ? x->type.rank : -1;
        int64_t a1[POPRT__MAX_RANK], a2[POPRT__MAX_RANK], a[POPRT__MAX_RANK];
        int64_t n1 = poprt__rw_attr_or_input_ints(s1, "axes", 1, 13, a1, POPRT__MAX_RANK);
        int64_t n2 = poprt__rw_attr_or_input_ints(s2, "axes", 1, 13, a2, POPRT__MAX_RANK);
        if (r < 0 || n1 < 0 || n2 < 0 || n1 + n2 > r)
            continue;
        /* kept[j]: the x axis that is axis j of the intermediate */
        int64_t kept[POPRT__MAX_RANK], nk = 0, ok = 1;
        for (int64_t k = 0; k < n1; k++) {
            a1[k] = a1[k] < 0 ? a1[k] + r : a1[k];
            ok &= a1[k] >= 0 && a1[k] < r;
        }
        for (int d = 0; d < r && ok; d++) {
            int gone = 0;
            for (int64_t k = 0; k < n1; k++)
                gone |= a1[k] == d;
            if (!gone)
                kept[nk++] = d;
        }
        for (int64_t k = 0; k < n2 && ok; k++) {
            int64_t v = a2[k] < 0 ? a2[k] + nk : a2[k];
            ok &= v >= 0 && v < nk;
            if (ok)
                a2[k] = kept[v];
        }
        if (!ok)
            continue;
        for (int64_t k = 0; k < n1; k++)
            a[k] = a1[k];
        for (int64_t k = 0; k < n2; k++)
            a[n1 + k] = a2[k];
        qsort(a, (size_t)(n1 + n2), sizeof *a, cmp64);
        poprt_status st = poprt__rw_set_axes(s2, "axes", 1, 13, a, n1 + n2);
        if (st)
            return st;
        poprt__node_set_input(s2, 0, x);
        if (!mid->is_output && !poprt__tensor_use_count(g, mid)) {
            poprt__graph_remove_node(g, s1);
            poprt__rw_drop_if_unused(g, poprt__node_in(s1, 1));
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

const poprt__pass poprt__pass_fuse_consecutive_squeeze = {
    "fuse_consecutive_squeeze", "merge two consecutive Squeezes with known axes into one", run};
