/* replace_softmax: Softmax along the last axis whose length is known and
 * odd -> ai.poprt SoftmaxV2 (one-axis semantics at any opset). On the IPU
 * this avoids a slow path for odd rows; on the CPU SoftmaxV2 runs the same
 * row kernel, so the pass only pins the opset-13 meaning (for the last axis
 * the opset-11 and -13 meanings coincide). */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "Softmax", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
        if (!x || !y || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 1 ||
            !poprt__dtype_is_float(x->type.elem))
            continue;
        int rank = x->type.rank;
        int64_t ax;
        if (!poprt__norm_axis(poprt__attr_i(n, "axis", n->opset >= 13 ? -1 : 1), rank, &ax) ||
            ax != rank - 1)
            continue;
        int64_t last = x->type.dims[rank - 1].value;
        if (last < 0 || last % 2 == 0)
            continue;
        poprt__node *s = rp_node(g, "SoftmaxV2", "ai.poprt", 1, &x, y, NULL);
        if (!s || !rp_attr_i(s, "axis", -1)) {
            st = rp_oom();
            break;
        }
        rp_drop(g, n);
        (*changed)++;
    }
    poprt__vec_free(&v);
    if (!st && *changed)
        st = poprt__model_ensure_opset(g->model, "ai.poprt", 1);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("replace_softmax", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_softmax = {
    "replace_softmax", "replace last-axis Softmax over an odd length with ai.poprt SoftmaxV2", run};
