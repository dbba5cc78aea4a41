/* replace_half_reducemean: float16 ReduceMean over statically known dims
 * -> ReduceSum(x * (1/N)): scaling before summing keeps every partial sum
 * within float16 range on backends that accumulate in float16 (libpoprt's
 * own kernels accumulate in float32, where this is numerically neutral up
 * to the rounding of 1/N). */
#include "passes/rewrite.h"
#include "kernels/ref/reduce.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__model *m = g->model;
    poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
    int rank;
    int64_t dims[POPRT__MAX_RANK], axes[POPRT__MAX_RANK];
    if (!x || !y || x->type.elem != POPRT_DTYPE_FLOAT16 || !poprt__rw_static_dims(x, dims, &rank))
        return POPRT_OK;
    int64_t na = 0;
    if (poprt__reduce_axes_from_input(n, n->opset)) {
        poprt__tensor *a = poprt__node_in(n, 1);
        na = a ? poprt__rw_ints(a, POPRT__RW_VALUE, axes, POPRT__MAX_RANK) : 0;
        if (na < 0)
            return POPRT_OK;
    } else {
        const int64_t *at = poprt__attr_ints(n, "axes", &na);
        if (na > rank)
            return POPRT_OK;
        for (int64_t k = 0; k < na; k++)
            axes[k] = at[k];
    }
    if (na == 0) {
        if (poprt__attr_i(n, "noop_with_empty_axes", 0))
            return POPRT_OK;
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
        return POPRT_OK;
    poprt__tensor *c =
        poprt__rw_new_scalar(g, "mean_scale", POPRT_DTYPE_FLOAT16, 0, 1.0 / (double)cnt);
    poprt__tensor *ins[2] = {x, c};
    poprt__node *mul = c ? poprt__rw_node1(g, "Mul", "", 2, ins, NULL, "scaled") : NULL;
    if (!mul)
        return poprt__rw_oom();
    poprt__node *rs;
    if (poprt__model_opset(m, "") >= 13) {
        poprt__tensor *at = poprt__rw_new_i64(g, "axes", axes, na);
        poprt__tensor *rin[2] = {mul->outputs[0], at};
        rs = at ? poprt__rw_node1(g, "ReduceSum", "", 2, rin, y, NULL) : NULL;
    } else {
        rs = poprt__rw_node1(g, "ReduceSum", "", 1, mul->outputs, y, NULL);
        if (rs && poprt__rw_attr_ints(rs, "axes", na, axes))
            rs = NULL;
    }
    if (!rs || poprt__rw_attr_i(rs, "keepdims", poprt__attr_i(n, "keepdims", 1)))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_half_reducemean", "ReduceMean", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_half_reducemean = {
    "replace_half_reducemean",
    "replace float16 ReduceMean with Mul(1/N) + ReduceSum so partial sums stay in range", run};
