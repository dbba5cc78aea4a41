/* eliminate_nop_arithmetic: removes x+0, 0+x, x-0, x*1, 1*x, x/1 and x**1
 * when the constant operand broadcasts to x's own shape (so neither shape
 * nor dtype changes). */
#include "ir/dtype.h"
#include "passes/rewrite.h"

/* c broadcasts into x without changing x's shape. */
static int fits(const poprt__tensor *c, const poprt__tensor *x)
{
    if (x->type.kind != POPRT__KIND_TENSOR || x->type.rank < 0 || c->type.rank > x->type.rank)
        return 0;
    int off = x->type.rank - c->type.rank;
    for (int i = 0; i < c->type.rank; i++) {
        int64_t cd = c->type.dims[i].value;
        if (cd != 1 && cd != x->type.dims[off + i].value)
            return 0;
    }
    return 1;
}

/* Every element of c (an initializer or folded value, numeric but not bool)
 * equals v; an empty c counts. */
static int all_equal(const poprt__tensor *c, double v)
{
    poprt__rw_const k;
    if (!poprt__rw_const_of(c, POPRT__RW_DATA, &k) ||
        !(poprt__dtype_is_float(k.elem) || poprt__dtype_is_int(k.elem)))
        return 0;
    for (int64_t i = 0; i < k.numel; i++)
        if (poprt__load_f64(k.data, k.elem, i) != v)
            return 0;
    return 1;
}

static poprt__tensor *nop(poprt__node *n)
{
    poprt__tensor *a = poprt__node_in(n, 0), *b = poprt__node_in(n, 1), *y = poprt__node_out(n, 0);
    double unit;
    int commutes;
    if (!a || !b || !y || n->n_inputs != 2)
        return NULL;
    if (poprt__rw_is(n, "Add"))
        unit = 0, commutes = 1;
    else if (poprt__rw_is(n, "Mul"))
        unit = 1, commutes = 1;
    else if (poprt__rw_is(n, "Sub"))
        unit = 0, commutes = 0;
    else if (poprt__rw_is(n, "Div"))
        unit = 1, commutes = 0;
    else if (poprt__rw_is(n, "Pow"))
        unit = 1, commutes = 0;
    else
        return NULL;
    if (all_equal(b, unit) && fits(b, a) && a->type.elem == y->type.elem)
        return a;
    if (commutes && all_equal(a, unit) && fits(a, b) && b->type.elem == y->type.elem)
        return b;
    return NULL;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_remove_nops(m, nop, changed);
}

const poprt__pass poprt__pass_eliminate_nop_arithmetic = {
    "eliminate_nop_arithmetic",
    "remove x+0, x-0, x*1, x/1, x**1 where the constant does not broadcast x to a new shape", run};
