/* batchnorm_workaround: puts inference BatchNormalization in the canonical
 * form backends expect: a 2-D [N, C] input is unsqueezed to [N, C, 1] (and
 * the result squeezed back), and unused running-statistics outputs are
 * dropped. Numerically identical; libpoprt's kernel takes either form. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
    if (!x || !y || poprt__attr_i(n, "training_mode", 0) || poprt__node_attr(n, "spatial"))
        return POPRT_OK;
    int last = n->n_outputs;
    while (last > 1 &&
           (!n->outputs[last - 1] || (!n->outputs[last - 1]->is_output &&
                                      poprt__tensor_use_count(g, n->outputs[last - 1]) == 0)))
        last--;
    if (last != n->n_outputs) {
        n->n_outputs = last;
        *done = 1;
    }
    if (x->type.kind == POPRT__KIND_TENSOR && x->type.rank == 2 && n->n_outputs == 1) {
        int64_t ax = 2;
        poprt__node *u = poprt__rw_axes_node(g, "Unsqueeze", x, 1, &ax, NULL);
        poprt__tensor *t = u ? poprt__graph_new_tensor(g, "bn_3d") : NULL;
        if (!t)
            return poprt__rw_oom();
        poprt__node_set_input(n, 0, u->outputs[0]);
        poprt__rw_set_output(n, 0, t);
        if (!poprt__rw_axes_node(g, "Squeeze", t, 1, &ax, y))
            return poprt__rw_oom();
        *done = 1;
    }
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"batchnorm_workaround", "BatchNormalization", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_batchnorm_workaround = {
    "batchnorm_workaround",
    "canonical inference BatchNormalization: 2-D input via Unsqueeze/Squeeze, unused outputs dropped",
    run};
