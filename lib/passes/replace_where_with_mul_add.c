/* replace_where_with_mul_add: float Where(c, X, Y) ->
 * Cast(c) * X + Cast(Not(c)) * Y. Exact while X and Y are finite; a
 * non-finite value in the unselected branch turns the result into NaN
 * (0 * inf), so constant branches holding inf/NaN are left alone. */
#include <math.h>
#include "passes/rewrite.h"

/* 0 when t is a constant holding inf or NaN (a Constant node's value_float
 * counts too); runtime values cannot be checked. */
static int finite_const(const poprt__tensor *t)
{
    const poprt__node *p = t->producer;
    if (!t->raw && p && poprt__rw_is(p, "Constant")) {
        const poprt__attr *a = poprt__node_attr(p, "value_float");
        if (a && !isfinite(a->f))
            return 0;
        a = poprt__node_attr(p, "value_floats");
        for (int64_t i = 0; a && i < a->n; i++)
            if (!isfinite(a->floats[i]))
                return 0;
    }
    t = poprt__rw_value(t);
    if (!t)
        return 1;
    int64_t n = poprt__type_numel(&t->type);
    const void *v = poprt__tensor_data(t);
    if (n < 0 || !v)
        return 0;
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(poprt__load_f64(v, t->type.elem, i)))
            return 0;
    return 1;
}

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *c = poprt__node_in(n, 0), *x = poprt__node_in(n, 1), *yv = poprt__node_in(n, 2);
    poprt__tensor *out = poprt__node_out(n, 0);
    if (!c || !x || !yv || !out)
        return POPRT_OK;
    int32_t e = x->type.elem;
    if (!poprt__dtype_is_float(e) || yv->type.elem != e || !finite_const(x) || !finite_const(yv))
        return POPRT_OK;
    poprt__node *cf = poprt__rw_node1(g, "Cast", "", 1, &c, NULL, "cond_f");
    poprt__node *nc = poprt__rw_node1(g, "Not", "", 1, &c, NULL, "not_cond");
    poprt__node *ncf =
        nc ? poprt__rw_node1(g, "Cast", "", 1, nc->outputs, NULL, "not_cond_f") : NULL;
    if (!cf || !ncf || poprt__rw_attr_i(cf, "to", e) || poprt__rw_attr_i(ncf, "to", e))
        return poprt__rw_oom();
    poprt__tensor *m1[2] = {cf->outputs[0], x}, *m2[2] = {ncf->outputs[0], yv};
    poprt__node *a = poprt__rw_node1(g, "Mul", "", 2, m1, NULL, "sel_x");
    poprt__node *b = poprt__rw_node1(g, "Mul", "", 2, m2, NULL, "sel_y");
    poprt__tensor *s[2] = {a ? a->outputs[0] : NULL, b ? b->outputs[0] : NULL};
    if (!a || !b || !poprt__rw_node1(g, "Add", "", 2, s, out, NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_where_with_mul_add", "Where", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_where_with_mul_add = {
    "replace_where_with_mul_add",
    "replace float Where(c,X,Y) with c*X + (not c)*Y (exact for finite X, Y)", run};
