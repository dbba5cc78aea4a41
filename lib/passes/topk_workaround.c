/* topk_workaround: TopK's axis attribute made non-negative (backends that
 * require it, PopART among them); needs the input rank. Values unchanged. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)g, (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0);
    int64_t ax = poprt__attr_i(n, "axis", -1), norm;
    if (ax >= 0 || !x || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 1 ||
        !poprt__norm_axis(ax, x->type.rank, &norm))
        return POPRT_OK;
    poprt__rw_remove_attr(n, "axis");
    if (poprt__rw_attr_i(n, "axis", norm))
        return poprt__rw_oom();
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"topk_workaround", "TopK", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_topk_workaround = {
    "topk_workaround", "make TopK's axis attribute non-negative (needs the input rank)", run};
