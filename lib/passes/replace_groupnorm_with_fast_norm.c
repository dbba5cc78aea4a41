/* replace_groupnorm_with_fast_norm: GroupNormalization with num_groups = 1
 * on half-precision data (float16/bfloat16) -> ai.poprt FastNorm: one fused
 * kernel that accumulates the statistics in double in a single sweep, so
 * half inputs cannot overflow the sums. Unused extra outputs (the
 * ai.graphcore form's mean / inv-std) are allowed; used ones are not. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt_status st = POPRT_OK;
    size_t len = g->nodes.len;
    for (size_t i = 0; !st && i < len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (strcmp(n->op_type, "GroupNormalization") != 0 || n->n_inputs != 3)
            continue;
        poprt__tensor *x = n->inputs[0], *s = n->inputs[1], *b = n->inputs[2];
        if (!x || !s || !b || !n->outputs[0] || poprt__attr_i(n, "num_groups", 0) != 1)
            continue;
        if (x->type.elem != POPRT_DTYPE_FLOAT16 && x->type.elem != POPRT_DTYPE_BFLOAT16)
            continue;
        if (x->type.rank >= 0 && x->type.rank < 2)
            continue;
        int used = 0;
        for (int j = 1; j < n->n_outputs; j++)
            used |= n->outputs[j] && poprt__tensor_use_count(g, n->outputs[j]) > 0;
        if (used)
            continue;
        poprt__tensor *ins[3] = {x, s, b};
        poprt__node *f = rp_node(g, "FastNorm", "ai.poprt", 3, ins, n->outputs[0], NULL);
        if (!f || !rp_attr_f(f, "epsilon", poprt__attr_f(n, "epsilon", 1e-5f))) {
            st = rp_oom();
            break;
        }
        rp_drop(g, n);
        i--;
        len--;
        (*changed)++;
    }
    if (!st && *changed)
        st = poprt__model_ensure_opset(g->model, "ai.poprt", 1);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("replace_groupnorm_with_fast_norm", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_groupnorm_with_fast_norm = {
    "replace_groupnorm_with_fast_norm",
    "replace float16/bfloat16 GroupNormalization with num_groups=1 by ai.poprt FastNorm", run};
