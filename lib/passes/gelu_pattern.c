/* gelu_pattern: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
 * -> Gelu(x, approximate="tanh"). CPU meaning: eight elementwise passes over
 * the activation become one. The *gelu_pattern family (families.h). */
#include "passes/families.h"

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

static const poprt__gelu_form tanh_form = {"Tanh", tanh_arg, "tanh"};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__gelu_pattern(&tanh_form, m, changed);
}

const poprt__pass poprt__pass_gelu_pattern = {
    "gelu_pattern",
    "0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))) -> Gelu(approximate=tanh) (ai.poprt.Gelu below "
    "opset 20): one pass over the activation instead of eight",
    run};
