/* replace_div_with_mul: Div(x, C) with a constant float divisor becomes
 * Mul(x, 1/C): a multiply is several times cheaper than a divide on CPUs.
 * The reciprocal is computed in double and rounded once to C's type, so
 * results differ from the division by at most about one rounding
 * (1/0 = inf keeps x/0 semantics). */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0);
    const poprt__tensor *c = poprt__rw_value(poprt__node_in(n, 1));
    if (!x || !c || c->type.kind != POPRT__KIND_TENSOR)
        return POPRT_OK;
    int32_t dt = c->type.elem;
    if (dt != POPRT_DTYPE_FLOAT && dt != POPRT_DTYPE_FLOAT16 && dt != POPRT_DTYPE_BFLOAT16 &&
        dt != POPRT_DTYPE_DOUBLE)
        return POPRT_OK;
    int rank;
    int64_t dims[POPRT__MAX_RANK];
    int64_t numel = poprt__type_numel(&c->type);
    if (numel < 0 || !poprt__rw_static_dims(c, dims, &rank))
        return POPRT_OK;
    size_t nb = (size_t)numel * poprt__dtype_size((poprt_dtype)dt);
    void *buf = poprt__arena_alloc(&g->model->arena, nb ? nb : 1);
    const void *cv = poprt__tensor_data(c);
    if (!buf || !cv)
        return poprt__rw_oom();
    for (int64_t k = 0; k < numel; k++)
        poprt__store_f64(buf, dt, k, 1.0 / poprt__load_f64(cv, dt, k));
    poprt__tensor *r = poprt__graph_add_const(g, "reciprocal", dt, rank, dims, buf, nb);
    poprt__tensor *ins[2] = {x, r};
    if (!r || !poprt__rw_node1(g, "Mul", "", 2, ins, n->outputs[0], NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_div_with_mul", "Div", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_div_with_mul = {
    "replace_div_with_mul",
    "replace Div by a constant float divisor with Mul by its reciprocal (<= ~1 ulp difference)",
    run};
