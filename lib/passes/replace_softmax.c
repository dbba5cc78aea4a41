/* replace_softmax: Softmax along the last axis whose length is known and
 * odd -> ai.poprt SoftmaxV2 (one-axis semantics at any opset). On the IPU
 * this avoids a slow path for odd rows; on the CPU SoftmaxV2 runs the same
 * row kernel, so the pass only pins the opset-13 meaning (for the last axis
 * the opset-11 and -13 meanings coincide). */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
    if (!x || !y || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 1 ||
        !poprt__dtype_is_float(x->type.elem))
        return POPRT_OK;
    int rank = x->type.rank;
    int64_t ax;
    if (!poprt__norm_axis(poprt__attr_i(n, "axis", n->opset >= 13 ? -1 : 1), rank, &ax) ||
        ax != rank - 1)
        return POPRT_OK;
    int64_t last = x->type.dims[rank - 1].value;
    if (last < 0 || last % 2 == 0)
        return POPRT_OK;
    poprt__node *s = poprt__rw_node1(g, "SoftmaxV2", "ai.poprt", 1, &x, y, NULL);
    if (!s || poprt__rw_attr_i(s, "axis", -1))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_softmax", "Softmax", rewrite, NULL, 1};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_softmax = {
    "replace_softmax", "replace last-axis Softmax over an odd length with ai.poprt SoftmaxV2", run};
