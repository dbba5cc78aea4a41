/* replace_erf_with_erfv2: float Erf -> ai.poprt ErfV2, a cheaper erf (one
 * expf per element, polynomial near zero) with absolute error < 5e-7
 * instead of the libm-accurate Erf. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0);
    if (!x || !n->outputs[0] || !poprt__dtype_is_float(x->type.elem))
        return POPRT_OK;
    if (!poprt__rw_node1(g, "ErfV2", "ai.poprt", 1, &x, n->outputs[0], NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_erf_with_erfv2", "Erf", rewrite, NULL, 1};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_erf_with_erfv2 = {
    "replace_erf_with_erfv2", "replace float Erf with ai.poprt ErfV2 (faster, abs. error < 5e-7)",
    run};
