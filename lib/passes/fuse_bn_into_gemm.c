/* fuse_bn_into_gemm: Gemm, or MatMul of a 2-D input by a constant 2-D
 * matrix, followed (as its only reader) by an inference BatchNormalization
 * over the N columns becomes one Gemm with scaled constant weights and bias
 * (alpha and beta folded in): B'[:,n] = alpha*B[:,n]*s[n],
 * C'[n] = beta*C[n]*s[n] + beta_bn[n] - mean[n]*s[n]. C must be absent, a
 * scalar or a per-column vector. */
#include "ir/dtype.h"
#include "passes/rewrite.h"

static poprt_status fuse_one(poprt__graph *g, poprt__node *mm, poprt__node *bn, int *done)
{
    *done = 0;
    int gemm = poprt__rw_is(mm, "Gemm");
    poprt__tensor *a = poprt__node_in(mm, 0), *b = poprt__node_in(mm, 1);
    poprt__tensor *c = gemm ? poprt__node_in(mm, 2) : NULL;
    if (!poprt__rw_is_const(b) || !poprt__dtype_is_float(b->type.elem) || b->type.rank != 2)
        return POPRT_OK;
    if (!gemm && (!a || a->type.rank != 2))
        return POPRT_OK;
    int tb = gemm ? (int)poprt__attr_i(mm, "transB", 0) : 0;
    double alpha = gemm ? poprt__attr_f(mm, "alpha", 1.0f) : 1.0;
    double beta = gemm ? poprt__attr_f(mm, "beta", 1.0f) : 1.0;
    int32_t e = b->type.elem;
    int64_t k0 = b->type.dims[0].value, k1 = b->type.dims[1].value, n = tb ? k0 : k1;
    if (c) {
        int64_t cn = poprt__type_numel(&c->type);
        if (!poprt__rw_is_const(c) || c->type.elem != e ||
            !(cn == 1 || (cn == n && c->type.dims[c->type.rank - 1].value == n)))
            return POPRT_OK;
    }
    poprt__rw_bn aff;
    poprt_status st = poprt__rw_bn_affine(bn, &aff);
    if (st || !aff.s)
        return st;
    const double *s = aff.s, *t = aff.t;
    size_t es = poprt__dtype_size((poprt_dtype)e);
    void *bd = NULL, *cd = NULL;
    if (aff.c != n)
        goto done;
    bd = poprt__malloc((size_t)(k0 * k1) * es + 1);
    cd = poprt__malloc((size_t)n * es + 1);
    const void *bv = poprt__tensor_data(b), *cv0 = c ? poprt__tensor_data(c) : NULL;
    if (!bd || !cd || !bv || (c && !cv0)) {
        st = poprt__rw_oom();
        goto done;
    }
    for (int64_t r = 0; r < k0; r++)
        for (int64_t q = 0; q < k1; q++) {
            int64_t col = tb ? r : q;
            poprt__store_f64(bd, e, r * k1 + q, alpha * poprt__load_f64(bv, e, r * k1 + q) * s[col]);
        }
    for (int64_t q = 0; q < n; q++) {
        double cv = c ? poprt__load_f64(cv0, e, poprt__type_numel(&c->type) == 1 ? 0 : q) : 0.0;
        poprt__store_f64(cd, e, q, beta * cv * s[q] + t[q]);
    }
    int64_t bdims[2] = {k0, k1};
    poprt__tensor *nb = poprt__graph_add_const(g, b->name, e, 2, bdims, bd, (size_t)(k0 * k1) * es);
    poprt__tensor *nc = poprt__graph_add_const(g, c ? c->name : "gemm_bias", e, 1, &n, cd, (size_t)n * es);
    poprt__node *ng = poprt__graph_add_node(g, "Gemm", "", mm->name, 3, 1);
    if (!nb || !nc || poprt__rw_attr_i(ng, "transB", tb) ||
        (gemm && poprt__rw_attr_i(ng, "transA", poprt__attr_i(mm, "transA", 0)))) {
        st = poprt__rw_oom();
        goto done;
    }
    poprt__node_set_input(ng, 0, a);
    poprt__node_set_input(ng, 1, nb);
    poprt__node_set_input(ng, 2, nc);
    if ((st = poprt__rw_bn_replaced(g, bn, ng, mm)))
        goto done;
    poprt__graph_remove_node(g, mm);
    poprt__rw_drop_if_unused(g, b);
    poprt__rw_drop_if_unused(g, c);
    *done = 1;
done:
    poprt__free(bd);
    poprt__free(cd);
    poprt__rw_bn_free(&aff);
    return st;
}

static poprt_status fuse(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *mm = g->nodes.items[i];
        if ((!poprt__rw_is(mm, "Gemm") && !poprt__rw_is(mm, "MatMul")) || mm->n_outputs != 1 ||
            !mm->outputs[0])
            continue;
        poprt__node *bn = poprt__graph_sole_consumer(g, mm->outputs[0]);
        if (!bn || poprt__node_in(bn, 0) != mm->outputs[0] || !bn->outputs[0])
            continue;
        int done;
        poprt_status st = fuse_one(g, mm, bn, &done);
        if (st)
            return st;
        if (done) {
            *changed = 1;
            i = (size_t)-1;
        }
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, fuse, NULL, changed);
}

const poprt__pass poprt__pass_fuse_bn_into_gemm = {
    "fuse_bn_into_gemm",
    "fold an inference BatchNormalization into the preceding Gemm/MatMul's constant weights and "
    "bias (result is a Gemm)",
    run};
