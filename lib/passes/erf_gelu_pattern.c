/* erf_gelu_pattern: x * 0.5 * (1 + erf(x / sqrt(2))) -> Gelu(x).
 * CPU meaning: five elementwise passes over the activation (and four
 * intermediate tensors) become one. The *gelu_pattern family (families.h). */
#include "passes/families.h"

/* x when erf's argument is x / sqrt(2) or x * (1 / sqrt(2)), else NULL. */
static poprt__tensor *erf_arg(const poprt__graph *g, const poprt__node *erf)
{
    const poprt__tensor *t = erf->inputs[0];
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

static const poprt__gelu_form erf = {"Erf", erf_arg, "none"};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__gelu_pattern(&erf, m, changed);
}

const poprt__pass poprt__pass_erf_gelu_pattern = {
    "erf_gelu_pattern",
    "x*0.5*(1+erf(x/sqrt2)) -> Gelu (ai.poprt.Gelu below opset 20): one pass over the activation "
    "instead of five",
    run};
