/* replace_erf_with_erfv2: float Erf -> ai.poprt ErfV2, a cheaper erf (one
 * expf per element, polynomial near zero) with absolute error < 5e-7
 * instead of the libm-accurate Erf. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "Erf", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0);
        if (!x || !n->outputs[0] || !poprt__dtype_is_float(x->type.elem))
            continue;
        if (!rp_node(g, "ErfV2", "ai.poprt", 1, &x, n->outputs[0], NULL)) {
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
    poprt_status st = rp_no_args("replace_erf_with_erfv2", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_erf_with_erfv2 = {
    "replace_erf_with_erfv2", "replace float Erf with ai.poprt ErfV2 (faster, abs. error < 5e-7)",
    run};
