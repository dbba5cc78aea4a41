/* topk_workaround: TopK's axis attribute made non-negative (backends that
 * require it, PopART among them); needs the input rank. Values unchanged. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "TopK", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0);
        int64_t ax = poprt__attr_i(n, "axis", -1), norm;
        if (ax >= 0 || !x || x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 1 ||
            !poprt__norm_axis(ax, x->type.rank, &norm))
            continue;
        rp_remove_attr(n, "axis");
        if (!rp_attr_i(n, "axis", norm)) {
            st = rp_oom();
            break;
        }
        (*changed)++;
    }
    poprt__vec_free(&v);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("topk_workaround", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_topk_workaround = {
    "topk_workaround", "make TopK's axis attribute non-negative (needs the input rank)", run};
