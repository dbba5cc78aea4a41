/* replace_groupnorm_with_fast_norm: GroupNormalization with num_groups = 1
 * on half-precision data (float16/bfloat16) -> ai.poprt FastNorm: one fused
 * kernel that accumulates the statistics in double in a single sweep, so
 * half inputs cannot overflow the sums. Unused extra outputs (the
 * ai.graphcore form's mean / inv-std) are allowed; used ones are not. */
#include <string.h>
#include "passes/rewrite.h"

/* (any domain: the ai.graphcore form too) */
static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    if (strcmp(n->op_type, "GroupNormalization") != 0 || n->n_inputs != 3)
        return POPRT_OK;
    poprt__tensor *x = n->inputs[0], *s = n->inputs[1], *b = n->inputs[2];
    if (!x || !s || !b || !n->outputs[0] || poprt__attr_i(n, "num_groups", 0) != 1)
        return POPRT_OK;
    if (x->type.elem != POPRT_DTYPE_FLOAT16 && x->type.elem != POPRT_DTYPE_BFLOAT16)
        return POPRT_OK;
    if (x->type.rank >= 0 && x->type.rank < 2)
        return POPRT_OK;
    int used = 0;
    for (int j = 1; j < n->n_outputs; j++)
        used |= n->outputs[j] && poprt__tensor_use_count(g, n->outputs[j]) > 0;
    if (used)
        return POPRT_OK;
    poprt__tensor *ins[3] = {x, s, b};
    poprt__node *f = poprt__rw_node1(g, "FastNorm", "ai.poprt", 3, ins, n->outputs[0], NULL);
    if (!f || poprt__rw_attr_f(f, "epsilon", poprt__attr_f(n, "epsilon", 1e-5f)))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_groupnorm_with_fast_norm", NULL, rewrite, NULL,
                                         1};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_groupnorm_with_fast_norm = {
    "replace_groupnorm_with_fast_norm",
    "replace float16/bfloat16 GroupNormalization with num_groups=1 by ai.poprt FastNorm", run};
