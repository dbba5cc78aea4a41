/* fuse_consecutive_transpose: Transpose(Transpose(x, p1), p2) becomes
 * Transpose(x, p) with p[i] = p1[p2[i]]; an identity result is removed. The
 * first Transpose stays while something else reads it. */
#include <string.h>
#include "passes/rewrite.h"

static int perm_of(const poprt__node *n, int64_t *p)
{
    int64_t np;
    const int64_t *perm = poprt__attr_ints(n, "perm", &np);
    if (perm) {
        if (np > POPRT__MAX_RANK)
            return -1;
        for (int64_t i = 0; i < np; i++)
            p[i] = perm[i];
        return (int)np;
    }
    const poprt__tensor *x = poprt__node_in(n, 0);
    if (!x || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 0)
        return -1;
    for (int i = 0; i < x->type.rank; i++)
        p[i] = x->type.rank - 1 - i;
    return x->type.rank;
}

static poprt_status fuse(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *t2 = g->nodes.items[i];
        poprt__tensor *mid = poprt__node_in(t2, 0);
        poprt__node *t1 = mid ? mid->producer : NULL;
        if (!poprt__rw_is(t2, "Transpose") || !t1 || t1->graph != g || !poprt__rw_is(t1, "Transpose"))
            continue;
        int64_t p1[POPRT__MAX_RANK], p2[POPRT__MAX_RANK], p[POPRT__MAX_RANK];
        int r1 = perm_of(t1, p1), r2 = perm_of(t2, p2);
        if (r1 < 0 || r1 != r2)
            continue;
        int ident = 1;
        for (int k = 0; k < r1; k++) {
            if (p2[k] < 0 || p2[k] >= r1)
                ident = -1;
            else
                p[k] = p1[p2[k]];
            if (ident == 1 && p[k] != k)
                ident = 0;
        }
        if (ident < 0)
            continue;
        poprt__tensor *x = t1->inputs[0];
        int done = 0;
        if (ident) {
            poprt_status st = poprt__rw_bypass(g, t2, x, t2->outputs[0], &done);
            if (st)
                return st;
        }
        if (!done) { /* one Transpose (an identity one when the output keeps its name) */
            poprt__attr *a = NULL;
            for (int k = 0; k < t2->n_attrs; k++)
                if (t2->attrs[k].type == POPRT__ATTR_INTS && !strcmp(t2->attrs[k].name, "perm"))
                    a = &t2->attrs[k];
            if (!a && !(a = poprt__node_add_attr(t2, "perm", POPRT__ATTR_INTS)))
                return poprt__rw_oom();
            int64_t *ints = poprt__arena_array(&g->model->arena, (size_t)r1 + 1, sizeof *ints);
            if (!ints)
                return poprt__rw_oom();
            for (int k = 0; k < r1; k++)
                ints[k] = p[k];
            a->ints = ints;
            a->n = r1;
            poprt__node_set_input(t2, 0, x);
        }
        if (!t1->outputs[0]->is_output && !poprt__tensor_use_count(g, t1->outputs[0]))
            poprt__graph_remove_node(g, t1);
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

const poprt__pass poprt__pass_fuse_consecutive_transpose = {
    "fuse_consecutive_transpose",
    "merge two consecutive Transposes into one (or none when they cancel out)", run};
