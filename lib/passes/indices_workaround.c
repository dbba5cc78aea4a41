/* indices_workaround: Gather / GatherElements with constant indices get a
 * fresh int64 initializer whose negative indices are made non-negative
 * against the known size of the gathered axis (backends without
 * negative-index support, PopART among them, then read the right element).
 * Runtime indices are left alone: libpoprt's kernels accept negative ones. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    if (!poprt__rw_is(n, "Gather") && !poprt__rw_is(n, "GatherElements"))
        return POPRT_OK;
    poprt__tensor *d = poprt__node_in(n, 0);
    const poprt__tensor *ix = poprt__rw_value(poprt__node_in(n, 1));
    if (!d || !ix || d->type.kind != POPRT__KIND_TENSOR || d->type.rank < 1 ||
        (ix->type.elem != POPRT_DTYPE_INT64 && ix->type.elem != POPRT_DTYPE_INT32))
        return POPRT_OK;
    int64_t ax;
    if (!poprt__norm_axis(poprt__attr_i(n, "axis", 0), d->type.rank, &ax))
        return POPRT_OK;
    int64_t size = d->type.dims[ax].value, cnt = poprt__type_numel(&ix->type);
    int rank;
    int64_t dims[POPRT__MAX_RANK];
    if (size < 0 || cnt < 0 || !poprt__rw_static_dims(ix, dims, &rank))
        return POPRT_OK;
    const void *iv = poprt__tensor_data(ix);
    if (!iv)
        return poprt__rw_oom();
    int neg = 0;
    for (int64_t k = 0; k < cnt && !neg; k++)
        neg = poprt__load_i64(iv, ix->type.elem, k) < 0;
    if (!neg)
        return POPRT_OK;
    int64_t *vals = poprt__arena_array(&g->model->arena, (size_t)(cnt ? cnt : 1), sizeof *vals);
    if (!vals)
        return poprt__rw_oom();
    for (int64_t k = 0; k < cnt; k++) {
        int64_t x = poprt__load_i64(iv, ix->type.elem, k);
        vals[k] = x < 0 && x >= -size ? x + size : x; /* out of range stays an error */
    }
    poprt__tensor *t = poprt__graph_add_const(g, "indices", POPRT_DTYPE_INT64, rank, dims, vals,
                                              (size_t)cnt * sizeof *vals);
    if (!t)
        return poprt__rw_oom();
    poprt__node_set_input(n, 1, t);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"indices_workaround", NULL, rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_indices_workaround = {
    "indices_workaround",
    "make constant negative Gather/GatherElements indices non-negative (known axis size)", run};
