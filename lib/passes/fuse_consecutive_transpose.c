/* fuse_consecutive_transpose: Transpose(Transpose(x, p1), p2) becomes
 * Transpose(x, p) with p[i] = p1[p2[i]]; an identity result is removed. The
 * first Transpose stays while something else reads it. */
#include "passes/families.h"

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

static poprt_status merge(poprt__graph *g, poprt__node *t1, poprt__node *t2, int *done)
{
    int64_t p1[POPRT__MAX_RANK], p2[POPRT__MAX_RANK], p[POPRT__MAX_RANK];
    int r1 = perm_of(t1, p1), r2 = perm_of(t2, p2);
    if (r1 < 0 || r1 != r2)
        return POPRT_OK;
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
        return POPRT_OK;
    poprt__tensor *x = t1->inputs[0];
    *done = 1;
    int gone = 0;
    poprt_status st = ident ? poprt__rw_bypass(g, t2, x, t2->outputs[0], &gone) : POPRT_OK;
    if (st || gone)
        return st;
    /* one Transpose (an identity one when the output keeps its name) */
    if ((st = poprt__rw_set_ints(t2, "perm", p, r1)))
        return st;
    poprt__node_set_input(t2, 0, x);
    return POPRT_OK;
}

static const poprt__consecutive transpose = {"Transpose", merge, NULL};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__fuse_consecutive(&transpose, m, changed);
}

const poprt__pass poprt__pass_fuse_consecutive_transpose = {
    "fuse_consecutive_transpose",
    "merge two consecutive Transposes into one (or none when they cancel out)", run};
