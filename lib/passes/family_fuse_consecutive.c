/* The fuse_consecutive_* family (families.h): the scan and clean-up all five
 * share, and the axes merge of Squeeze / Unsqueeze pairs. */
#include <stdlib.h>
#include "passes/families.h"

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* n2 takes n1's input and the combined axes (sorted), when f->axes can
 * combine them (the rank of x and both axes lists must be known). */
static poprt_status merge_axes(const poprt__consecutive *f, poprt__node *n1, poprt__node *n2,
                               int *done)
{
    poprt__tensor *x = n1->inputs[0];
    int64_t r = poprt__rw_rank(x);
    int64_t a1[POPRT__MAX_RANK], a2[POPRT__MAX_RANK], a[POPRT__MAX_RANK];
    int64_t n_1 = poprt__rw_attr_or_input_ints(n1, "axes", 1, 13, a1, POPRT__MAX_RANK);
    int64_t n_2 = poprt__rw_attr_or_input_ints(n2, "axes", 1, 13, a2, POPRT__MAX_RANK);
    if (r < 0 || n_1 < 0 || n_2 < 0 || !f->axes(r, a1, n_1, a2, n_2))
        return POPRT_OK;
    for (int64_t k = 0; k < n_1; k++)
        a[k] = a1[k];
    for (int64_t k = 0; k < n_2; k++)
        a[n_1 + k] = a2[k];
    qsort(a, (size_t)(n_1 + n_2), sizeof *a, cmp64);
    poprt_status st = poprt__rw_set_axes(n2, "axes", 1, 13, a, n_1 + n_2);
    if (st)
        return st;
    poprt__node_set_input(n2, 0, x);
    *done = 1;
    return POPRT_OK;
}

static poprt_status fuse_graph(poprt__graph *g, void *ctx, int *changed)
{
    const poprt__consecutive *f = ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n2 = g->nodes.items[i];
        poprt__tensor *mid = poprt__node_in(n2, 0);
        poprt__node *n1 = mid ? mid->producer : NULL;
        if (!poprt__rw_is(n2, f->op) || !n1 || n1->graph != g || !poprt__rw_is(n1, f->op))
            continue;
        int done = 0;
        poprt_status st = f->merge ? f->merge(g, n1, n2, &done) : merge_axes(f, n1, n2, &done);
        if (st)
            return st;
        if (!done)
            continue;
        if (!mid->is_output && !poprt__tensor_use_count(g, mid)) {
            poprt__graph_remove_node(g, n1);
            poprt__rw_drop_if_unused(g, poprt__node_in(n1, 1));
        }
        *changed = 1;
        i = (size_t)-1; /* the node list changed: rescan */
    }
    return POPRT_OK;
}

poprt_status poprt__fuse_consecutive(const poprt__consecutive *f, poprt__model *m, int *changed)
{
    return poprt__rw_run_graphs(m, fuse_graph, (void *)f, changed);
}
