/* replace_half_reducemean: float16 ReduceMean over statically known dims
 * -> ReduceSum(x * (1/N)): scaling before summing keeps every partial sum
 * within float16 range on backends that accumulate in float16 (libpoprt's
 * own kernels accumulate in float32, where this is numerically neutral up
 * to the rounding of 1/N). */
#include "passes/util_replace.h"
#include "kernels/ref/reduce.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "ReduceMean", &v);
    poprt__model *m = g->model;
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
        int rank;
        int64_t dims[POPRT__MAX_RANK], axes[POPRT__MAX_RANK];
        if (!x || !y || x->type.elem != POPRT_DTYPE_FLOAT16 || !rp_static_dims(x, &rank, dims))
            continue;
        int64_t na = 0;
        if (poprt__reduce_axes_from_input(n, n->opset)) {
            poprt__tensor *a = poprt__node_in(n, 1);
            na = a ? rp_const_ints(a, axes, POPRT__MAX_RANK) : 0;
            if (na < 0)
                continue;
        } else {
            const int64_t *at = poprt__attr_ints(n, "axes", &na);
            if (na > rank)
                continue;
            for (int64_t k = 0; k < na; k++)
                axes[k] = at[k];
        }
        if (na == 0) {
            if (poprt__attr_i(n, "noop_with_empty_axes", 0))
                continue;
            for (int k = 0; k < rank; k++)
                axes[k] = k;
            na = rank;
        }
        int ok = 1, seen[POPRT__MAX_RANK] = {0};
        int64_t cnt = 1;
        for (int64_t k = 0; k < na && ok; k++) {
            int64_t ax;
            ok = poprt__norm_axis(axes[k], rank, &ax) && !seen[ax];
            if (ok) {
                seen[ax] = 1;
                axes[k] = ax;
                cnt *= dims[ax];
            }
        }
        if (!ok || cnt <= 0)
            continue;
        poprt__tensor *c = rp_const_of(g, "mean_scale", POPRT_DTYPE_FLOAT16, 0, 1.0 / (double)cnt);
        poprt__tensor *ins[2] = {x, c};
        poprt__node *mul = c ? rp_node(g, "Mul", "", 2, ins, NULL, "scaled") : NULL;
        if (!mul) {
            st = rp_oom();
            break;
        }
        poprt__node *rs;
        if (rp_opset(m) >= 13) {
            poprt__tensor *at = rp_const_i64(g, "axes", na, axes);
            poprt__tensor *rin[2] = {mul->outputs[0], at};
            rs = at ? rp_node(g, "ReduceSum", "", 2, rin, y, NULL) : NULL;
        } else {
            rs = rp_node(g, "ReduceSum", "", 1, mul->outputs, y, NULL);
            if (rs && !rp_attr_ints(rs, "axes", na, axes))
                rs = NULL;
        }
        if (!rs || !rp_attr_i(rs, "keepdims", poprt__attr_i(n, "keepdims", 1))) {
            st = rp_oom();
            break;
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
    poprt_status st = rp_no_args("replace_half_reducemean", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_half_reducemean = {
    "replace_half_reducemean",
    "replace float16 ReduceMean with Mul(1/N) + ReduceSum so partial sums stay in range", run};
