/* replace_celu: Celu (opset 12) -> alpha * Elu(x / alpha), ops that exist
 * from opset 6, so models converted to older opsets keep it. Same values up
 * to one rounding. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "Celu", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
        if (!x || !y || !poprt__dtype_is_float(x->type.elem))
            continue;
        float alpha = poprt__attr_f(n, "alpha", 1.0f);
        if (!(alpha != 0.0f) || !isfinite(alpha))
            continue;
        poprt__tensor *in = x;
        if (alpha != 1.0f) {
            poprt__tensor *a = rp_const_of(g, "celu_alpha", x->type.elem, 0, alpha);
            poprt__tensor *ins[2] = {x, a};
            poprt__node *d = a ? rp_node(g, "Div", "", 2, ins, NULL, "celu_scaled") : NULL;
            if (!d) {
                st = rp_oom();
                break;
            }
            in = d->outputs[0];
        }
        poprt__node *e = rp_node(g, "Elu", "", 1, &in, alpha != 1.0f ? NULL : y, "celu_elu");
        if (!e || !rp_attr_f(e, "alpha", 1.0f)) {
            st = rp_oom();
            break;
        }
        if (alpha != 1.0f) {
            poprt__tensor *a = rp_const_of(g, "celu_alpha", x->type.elem, 0, alpha);
            poprt__tensor *ins[2] = {e->outputs[0], a};
            if (!a || !rp_node(g, "Mul", "", 2, ins, y, NULL)) {
                st = rp_oom();
                break;
            }
        }
        rp_drop(g, n);
        (*changed)++;
    }
    poprt__vec_free(&v);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("replace_celu", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_celu = {
    "replace_celu", "replace Celu with alpha*Elu(x/alpha) (opset-6 ops, same values)", run};
