/* batchnorm_workaround: puts inference BatchNormalization in the canonical
 * form backends expect: a 2-D [N, C] input is unsqueezed to [N, C, 1] (and
 * the result squeezed back), and unused running-statistics outputs are
 * dropped. Numerically identical; libpoprt's kernel takes either form. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "BatchNormalization", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
        if (!x || !y || poprt__attr_i(n, "training_mode", 0) || poprt__node_attr(n, "spatial"))
            continue;
        int touched = 0;
        int last = n->n_outputs;
        while (last > 1 && (!n->outputs[last - 1] ||
                            (!n->outputs[last - 1]->is_output &&
                             poprt__tensor_use_count(g, n->outputs[last - 1]) == 0)))
            last--;
        if (last != n->n_outputs) {
            n->n_outputs = last;
            touched = 1;
        }
        if (x->type.kind == POPRT__KIND_TENSOR && x->type.rank == 2 && n->n_outputs == 1) {
            int64_t ax = 2;
            poprt__node *u = rp_axes_node(g, "Unsqueeze", x, 1, &ax, NULL);
            poprt__tensor *t = u ? poprt__graph_new_tensor(g, "bn_3d") : NULL;
            if (!t) {
                st = rp_oom();
                break;
            }
            poprt__node_set_input(n, 0, u->outputs[0]);
            n->outputs[0] = t;
            if (!rp_axes_node(g, "Squeeze", t, 1, &ax, y)) {
                st = rp_oom();
                break;
            }
            touched = 1;
        }
        *changed += touched;
    }
    poprt__vec_free(&v);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("batchnorm_workaround", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_batchnorm_workaround = {
    "batchnorm_workaround",
    "canonical inference BatchNormalization: 2-D input via Unsqueeze/Squeeze, unused outputs dropped",
    run};
