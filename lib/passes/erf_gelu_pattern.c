/* erf_gelu_pattern: x * 0.5 * (1 + erf(x / sqrt(2))) -> Gelu(x).
 * CPU meaning: five elementwise passes over the activation (and four
 * intermediate tensors) become one. */
#include "passes/transformer.h"

/* x when t = x / sqrt(2) or x * (1 / sqrt(2)), else NULL. */
static poprt__tensor *erf_arg(const poprt__graph *g, const poprt__tensor *t, const poprt__node *erf)
{
    poprt__node *d = t->producer;
    if (poprt__graph_sole_consumer(g, t) != erf || !d || d->n_inputs != 2)
        return NULL;
    if (poprt__rw_is(d, "Div") &&
        poprt__rw_scalar_is(d->inputs[1], POPRT__RW_ANY, 1.4142135623730951, 1e-5))
        return d->inputs[0];
    if (poprt__rw_is(d, "Mul")) {
        for (int i = 0; i < 2; i++)
            if (poprt__rw_scalar_is(d->inputs[i], POPRT__RW_ANY, 0.7071067811865476, 1e-5))
                return d->inputs[1 - i];
    }
    return NULL;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    poprt__graph *g = m->graph;
    *changed = 0;
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < g->nodes.len && !again; i++) {
            poprt__node *e = g->nodes.items[i];
            if (!poprt__rw_is(e, "Erf") || e->n_inputs != 1 || !e->inputs[0])
                continue;
            poprt__tensor *x = erf_arg(g, e->inputs[0], e);
            poprt__node *a = x ? poprt__rw_reader(g, e->outputs[0], "Add") : NULL;
            if (!a || !poprt__rw_scalar_is(poprt__rw_other_input(a, e->outputs[0]), POPRT__RW_ANY,
                                           1.0, 1e-6))
                continue;
            poprt__node *last = tf_gelu_tail(g, a->outputs[0], x);
            if (!last)
                continue;
            poprt_status st = tf_make_gelu(m, last, x, "none");
            if (st)
                return st;
            *changed = again = 1;
        }
    }
    if (*changed)
        poprt__graph_remove_dead(g);
    return POPRT_OK;
}

const poprt__pass poprt__pass_erf_gelu_pattern = {
    "erf_gelu_pattern",
    "x*0.5*(1+erf(x/sqrt2)) -> Gelu (ai.poprt.Gelu below opset 20): one pass over the activation "
    "instead of five",
    run};
