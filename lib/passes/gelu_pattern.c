/* gelu_pattern: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
 * -> Gelu(x, approximate="tanh"). CPU meaning: eight elementwise passes over
 * the activation become one. */
#include "passes/transformer.h"

/* t = x^3 (Pow(x, 3), x * (x * x) or (x * x) * x): x, else NULL. */
static poprt__tensor *cube_base(const poprt__tensor *t)
{
    poprt__node *p = poprt__rw_producer(t, "Pow");
    if (p)
        return poprt__rw_scalar_is(p->inputs[1], POPRT__RW_ANY, 3.0, 1e-6) ? p->inputs[0] : NULL;
    p = poprt__rw_producer(t, "Mul");
    if (!p || p->n_inputs != 2)
        return NULL;
    for (int i = 0; i < 2; i++) {
        poprt__node *sq = poprt__rw_producer(p->inputs[i], "Mul");
        poprt__tensor *x = p->inputs[1 - i];
        if (sq && sq->inputs[0] == x && sq->inputs[1] == x)
            return x;
    }
    return NULL;
}

/* tanh's argument sqrt(2/pi) * (x + 0.044715 * x^3): x, else NULL. */
static poprt__tensor *tanh_arg(const poprt__graph *g, const poprt__node *th)
{
    poprt__node *s = poprt__rw_producer(th->inputs[0], "Mul");
    if (!s || poprt__graph_sole_consumer(g, th->inputs[0]) != th || s->n_inputs != 2)
        return NULL;
    for (int i = 0; i < 2; i++) {
        if (!poprt__rw_scalar_is(s->inputs[i], POPRT__RW_ANY, 0.7978845608028654, 1e-4))
            continue;
        poprt__node *add = poprt__rw_producer(s->inputs[1 - i], "Add");
        if (!add || add->n_inputs != 2)
            return NULL;
        for (int j = 0; j < 2; j++) {
            poprt__node *c = poprt__rw_producer(add->inputs[j], "Mul");
            poprt__tensor *x = add->inputs[1 - j];
            if (!c || c->n_inputs != 2)
                continue;
            for (int k = 0; k < 2; k++)
                if (poprt__rw_scalar_is(c->inputs[k], POPRT__RW_ANY, 0.044715, 1e-4) &&
                    cube_base(c->inputs[1 - k]) == x)
                    return x;
        }
        return NULL;
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
            poprt__node *th = g->nodes.items[i];
            if (!poprt__rw_is(th, "Tanh") || th->n_inputs != 1 || !th->inputs[0])
                continue;
            poprt__tensor *x = tanh_arg(g, th);
            poprt__node *a = x ? poprt__rw_reader(g, th->outputs[0], "Add") : NULL;
            if (!a || !poprt__rw_scalar_is(poprt__rw_other_input(a, th->outputs[0]), POPRT__RW_ANY,
                                           1.0, 1e-6))
                continue;
            poprt__node *last = tf_gelu_tail(g, a->outputs[0], x);
            if (!last)
                continue;
            poprt_status st = tf_make_gelu(m, last, x, "tanh");
            if (st)
                return st;
            *changed = again = 1;
        }
    }
    if (*changed)
        poprt__graph_remove_dead(g);
    return POPRT_OK;
}

const poprt__pass poprt__pass_gelu_pattern = {
    "gelu_pattern",
    "0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) -> Gelu(approximate=tanh) (ai.poprt.Gelu below "
    "opset 20): one pass over the activation instead of eight",
    run};
