/* The merge_matmul* family (families.h): MatMuls reading one input merged
 * into one, and the argument handling of the three passes. */
#include <string.h>
#include "passes/families.h"

/* Bias of an Add reading mm's output: float constant of n values, else NULL. */
static poprt__node *bias_add(const poprt__graph *g, const poprt__node *mm, int64_t n, int *slot)
{
    poprt__node *a = poprt__rw_reader(g, mm->outputs[0], "Add");
    poprt__tensor *b = a ? poprt__rw_other_input(a, mm->outputs[0]) : NULL;
    int64_t cnt;
    if (!b || !poprt__rw_f32(b, POPRT__RW_ANY, &cnt) || cnt != n || b->type.rank != 1)
        return NULL;
    *slot = a->inputs[0] == b ? 0 : 1;
    return a;
}

/* One MatMul (plus one Add when with_add) reading the shared input instead
 * of the n given ones; *merged when it did. */
static poprt_status merge(poprt__model *m, poprt__node **mms, int n, int with_add, int *merged)
{
    poprt__graph *g = m->graph;
    *merged = 0;
    if (n < 2 || n > 256)
        return POPRT_OK;
    poprt__node *adds[256];
    int slots[256];
    int64_t cols[256], K = -1, d[POPRT__MAX_RANK], cnt;
    poprt__tensor *A = mms[0]->inputs[0];
    for (int i = 0; i < n; i++) {
        if (!poprt__rw_is(mms[i], "MatMul") || mms[i]->inputs[0] != A ||
            !poprt__rw_f32_bytes(mms[i]->inputs[1], POPRT__RW_ANY, &cnt) ||
            poprt__rw_dims(mms[i]->inputs[1], d) != 2 || (K >= 0 && d[0] != K) ||
            mms[i]->outputs[0]->type.elem != POPRT_DTYPE_FLOAT)
            return POPRT_OK;
        for (int j = 0; j < i; j++)
            if (mms[j] == mms[i])
                return POPRT_OK;
        K = d[0];
        cols[i] = d[1];
        adds[i] = with_add ? bias_add(g, mms[i], d[1], &slots[i]) : NULL;
        if (with_add && !adds[i])
            return POPRT_OK;
    }
    /* the weights [K, cols[i]] side by side: [K, sum of cols]; the biases likewise */
    const void *w[256], *b[256];
    for (int i = 0; i < n; i++) {
        w[i] = poprt__rw_f32_bytes(mms[i]->inputs[1], POPRT__RW_ANY, &cnt);
        b[i] = with_add ? poprt__rw_f32_bytes(adds[i]->inputs[slots[i]], POPRT__RW_ANY, &cnt) : NULL;
    }
    poprt__tensor *wt = poprt__rw_new_f32_concat(g, "merged_matmul_weight", K, n, w, cols, 0);
    poprt__tensor *bt =
        wt && with_add ? poprt__rw_new_f32_concat(g, "merged_matmul_bias", 1, n, b, cols, 1) : NULL;
    poprt__node *mm = poprt__rw_node(g, "MatMul", "", mms[0]->name, 2, 1);
    poprt__node *add = with_add ? poprt__rw_node(g, "Add", "", adds[0]->name, 2, 1) : NULL;
    int64_t opset = poprt__model_opset(m, "");
    poprt__node *split =
        poprt__rw_node(g, "Split", "", "merged_matmul_split", opset >= 13 ? 2 : 1, n);
    poprt__tensor *t1 = poprt__graph_new_tensor(g, "merged_matmul_out");
    poprt__tensor *t2 = with_add ? poprt__graph_new_tensor(g, "merged_matmul_add_out") : t1;
    poprt__tensor *sz =
        opset >= 13 ? poprt__graph_add_const(g, "merged_matmul_split_sizes", POPRT_DTYPE_INT64, 1,
                                             &(int64_t){n}, cols, (size_t)n * sizeof(int64_t))
                    : NULL;
    poprt_status st;
    if (!wt || (with_add && (!bt || !add || !t2)) || !mm || !split || !t1 || (opset >= 13 && !sz))
        return poprt__rw_oom();
    poprt__node_set_input(mm, 0, A);
    poprt__node_set_input(mm, 1, wt);
    poprt__rw_set_output(mm, 0, t1);
    if (with_add) {
        poprt__node_set_input(add, 0, t1);
        poprt__node_set_input(add, 1, bt);
        poprt__rw_set_output(add, 0, t2);
    }
    poprt__node_set_input(split, 0, t2);
    if (opset >= 13)
        poprt__node_set_input(split, 1, sz);
    else if ((st = poprt__rw_attr_ints(split, "split", n, cols)))
        return st;
    if ((st = poprt__rw_attr_i(split, "axis", -1)))
        return st;
    for (int i = 0; i < n; i++)
        poprt__rw_take_output(g, with_add ? adds[i] : mms[i], 0, split, i);
    *merged = 1;
    return POPRT_OK;
}

/* Merges the MatMuls from a on (in node order) that read a's input with
 * weights of a's row count (and bias Adds for with_add). */
static poprt_status merge_group(poprt__model *m, poprt__node *a, const void *ctx, int *done)
{
    const poprt__merge_kind *k = ctx;
    poprt__graph *g = m->graph;
    poprt__node *mms[256];
    int64_t cnt, d[POPRT__MAX_RANK], e[POPRT__MAX_RANK];
    if (!poprt__rw_is(a, "MatMul") || !poprt__rw_f32(a->inputs[1], POPRT__RW_ANY, &cnt) ||
        poprt__rw_dims(a->inputs[1], d) != 2)
        return POPRT_OK;
    size_t i = 0;
    while (g->nodes.items[i] != a)
        i++;
    int n = 0;
    for (size_t j = i; j < g->nodes.len && n < 256; j++) {
        poprt__node *b = g->nodes.items[j];
        int slot;
        if (poprt__rw_is(b, "MatMul") && b->inputs[0] == a->inputs[0] &&
            poprt__rw_f32(b->inputs[1], POPRT__RW_ANY, &cnt) &&
            poprt__rw_dims(b->inputs[1], e) == 2 && e[0] == d[0] &&
            (!k->with_add || bias_add(g, b, e[1], &slot)))
            mms[n++] = b;
    }
    return merge(m, mms, n, k->with_add, done);
}

/* The named MatMuls (every stride-th name) merged: INVALID_OPTION when they
 * cannot be. */
static poprt_status merge_named(const poprt__merge_kind *k, poprt__model *m, const char **names,
                                int nn)
{
    poprt__graph *g = m->graph;
    poprt__node *mms[256];
    int n = 0;
    for (int i = 0; i < nn; i += k->stride) {
        poprt__node *mm = poprt__rw_find_node(g, names[i]);
        if (!mm || !poprt__rw_is(mm, "MatMul") || n == 256)
            return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass '%s': no MatMul named '%s'",
                              k->pass, names[i]);
        for (int j = 1; j < k->stride; j++)
            if (!poprt__rw_find_node(g, names[i + j]))
                return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass '%s': no node named '%s'",
                                  k->pass, names[i + j]);
        if (k->with_add && k->stride == 2) {
            poprt__node *a = poprt__graph_sole_consumer(g, mm->outputs[0]);
            if (!a || strcmp(a->name, names[i + 1]))
                return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                  "pass '%s': '%s' is not the Add after '%s'", k->pass,
                                  names[i + 1], names[i]);
        }
        mms[n++] = mm;
    }
    int merged;
    poprt_status st = merge(m, mms, n, k->with_add, &merged);
    if (st)
        return st;
    if (!merged)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass '%s': the named MatMuls do not read one input with constant "
                          "weights of one row count%s",
                          k->pass, k->with_add ? " and bias Adds" : "");
    poprt__graph_remove_dead(g);
    return POPRT_OK;
}

poprt_status poprt__merge_matmul(const poprt__merge_kind *k, poprt__model *m, const char *args,
                                 int *changed)
{
    char buf[4096];
    const char *names[512];
    *changed = 0;
    int nn = poprt__pass_node_names(args, buf, sizeof buf, names, 512);
    if (nn < 0 || nn % k->stride)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass '%s': arguments must be node names: %s", k->pass, args);
    if (nn == 0)
        return poprt__rw_fixpoint(m, merge_group, k, changed);
    poprt_status st = merge_named(k, m, names, nn);
    *changed = !st;
    return st;
}
