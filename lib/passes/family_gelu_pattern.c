/* The *gelu_pattern family (families.h): the Gelu tail, the rewrite and the
 * scan both forms share. */
#include <string.h>
#include "passes/families.h"

/* The tail both forms share: a = 1 + f(x) and the result is x * a * 0.5 in
 * any of the orders exporters write. Returns the last Mul (whose output is
 * the Gelu value), or NULL. */
static poprt__node *tail(const poprt__graph *g, const poprt__tensor *a, const poprt__tensor *x)
{
    poprt__node *m1 = poprt__rw_reader(g, a, "Mul");
    if (!m1)
        return NULL;
    poprt__tensor *o = poprt__rw_other_input(m1, a);
    if (o == x) { /* (x * a) * 0.5 */
        poprt__node *m2 = poprt__rw_reader(g, m1->outputs[0], "Mul");
        return m2 && poprt__rw_scalar_is(poprt__rw_other_input(m2, m1->outputs[0]), POPRT__RW_ANY,
                                         0.5, 1e-6)
                   ? m2
                   : NULL;
    }
    if (poprt__rw_scalar_is(o, POPRT__RW_ANY, 0.5, 1e-6)) { /* (a * 0.5) * x */
        poprt__node *m2 = poprt__rw_reader(g, m1->outputs[0], "Mul");
        return m2 && poprt__rw_other_input(m2, m1->outputs[0]) == x ? m2 : NULL;
    }
    poprt__node *h = poprt__rw_producer(o, "Mul"); /* a * (x * 0.5) */
    if (h && poprt__rw_other_input(h, x) &&
        poprt__rw_scalar_is(poprt__rw_other_input(h, x), POPRT__RW_ANY, 0.5, 1e-6) &&
        poprt__graph_sole_consumer(g, o) == m1)
        return m1;
    return NULL;
}

/* Replaces the pattern ending at `last` by Gelu(x) (ONNX Gelu from opset 20,
 * else ai.poprt.Gelu); dead pattern nodes are left for remove_dead. */
static poprt_status make_gelu(poprt__model *m, poprt__node *last, poprt__tensor *x,
                              const char *approximate)
{
    poprt__graph *g = m->graph;
    int onnx = poprt__model_opset(m, "") >= 20;
    poprt_status st = onnx ? POPRT_OK : poprt__rw_poprt_domain(m);
    if (st)
        return st;
    poprt__node *n = poprt__rw_replace(g, last, "Gelu", onnx ? "" : "ai.poprt", 1, &x);
    if (!n)
        return poprt__rw_oom();
    if (strcmp(approximate, "none") && (st = poprt__rw_attr_s(n, "approximate", approximate)))
        return st;
    return POPRT_OK;
}

static poprt_status fuse(poprt__model *m, poprt__node *f, const void *ctx, int *done)
{
    const poprt__gelu_form *form = ctx;
    poprt__graph *g = m->graph;
    if (!poprt__rw_is(f, form->op) || f->n_inputs != 1 || !f->inputs[0])
        return POPRT_OK;
    poprt__tensor *x = form->arg(g, f);
    poprt__node *a = x ? poprt__rw_reader(g, f->outputs[0], "Add") : NULL;
    if (!a ||
        !poprt__rw_scalar_is(poprt__rw_other_input(a, f->outputs[0]), POPRT__RW_ANY, 1.0, 1e-6))
        return POPRT_OK;
    poprt__node *last = tail(g, a->outputs[0], x);
    if (!last)
        return POPRT_OK;
    *done = 1;
    return make_gelu(m, last, x, form->approximate);
}

poprt_status poprt__gelu_pattern(const poprt__gelu_form *form, poprt__model *m, int *changed)
{
    return poprt__rw_fixpoint(m, fuse, form, changed);
}
