/* replace_nonzero: NonZero whose output is known to be [rank, 1] (exactly
 * one non-zero element, declared by the model's value_info or a fixed
 * shape) and whose input shape is static -> ArgMax over the flattened
 * (x != 0) mask, unravelled with Div/Mod by constant strides. The result
 * has a static shape, so the runtime plans its memory ahead instead of
 * allocating a dynamic output. */
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
    int rank;
    int64_t dims[POPRT__MAX_RANK];
    if (!x || !y || !poprt__rw_static_dims(x, dims, &rank) || rank < 1)
        return POPRT_OK;
    if (y->type.kind != POPRT__KIND_TENSOR || y->type.rank != 2 || y->type.dims[1].value != 1)
        return POPRT_OK;
    int32_t e = x->type.elem;
    if (!poprt__dtype_is_float(e) && !poprt__dtype_is_int(e) && e != POPRT_DTYPE_BOOL)
        return POPRT_OK;
    poprt__tensor *mask = x;
    if (e != POPRT_DTYPE_BOOL) {
        poprt__tensor *z = poprt__rw_new_scalar(g, "zero", e, 0, 0.0);
        poprt__tensor *ins[2] = {x, z};
        poprt__node *eq = z ? poprt__rw_node1(g, "Equal", "", 2, ins, NULL, "is_zero") : NULL;
        poprt__node *nt =
            eq ? poprt__rw_node1(g, "Not", "", 1, eq->outputs, NULL, "nonzero_mask") : NULL;
        if (!nt)
            return poprt__rw_oom();
        mask = nt->outputs[0];
    }
    poprt__node *cast = poprt__rw_node1(g, "Cast", "", 1, &mask, NULL, "mask_i32");
    int64_t minus1 = -1;
    poprt__tensor *shape = poprt__rw_new_i64(g, "flat", &minus1, 1);
    poprt__tensor *rin[2] = {cast ? cast->outputs[0] : NULL, shape};
    poprt__node *flat = cast && shape && !poprt__rw_attr_i(cast, "to", POPRT_DTYPE_INT32)
                            ? poprt__rw_node1(g, "Reshape", "", 2, rin, NULL, "mask_flat")
                            : NULL;
    poprt__node *am =
        flat ? poprt__rw_node1(g, "ArgMax", "", 1, flat->outputs, NULL, "flat_index") : NULL;
    if (!am || poprt__rw_attr_i(am, "axis", 0) || poprt__rw_attr_i(am, "keepdims", 1))
        return poprt__rw_oom();
    /* index k of the element: (flat / stride_k) % dim_k, as [rank, 1] */
    int64_t strides[POPRT__MAX_RANK], d2[2] = {rank, 1};
    strides[rank - 1] = 1;
    for (int k = rank - 2; k >= 0; k--)
        strides[k] = strides[k + 1] * dims[k + 1];
    poprt__tensor *st_t = poprt__graph_add_const(g, "strides", POPRT_DTYPE_INT64, 2, d2, strides,
                                                 (size_t)rank * sizeof(int64_t));
    poprt__tensor *dm_t = poprt__graph_add_const(g, "dims", POPRT_DTYPE_INT64, 2, d2, dims,
                                                 (size_t)rank * sizeof(int64_t));
    poprt__tensor *din[2] = {am->outputs[0], st_t};
    poprt__node *dv = st_t && dm_t ? poprt__rw_node1(g, "Div", "", 2, din, NULL, "unravel") : NULL;
    poprt__tensor *min[2] = {dv ? dv->outputs[0] : NULL, dm_t};
    if (!dv || !poprt__rw_node1(g, "Mod", "", 2, min, y, NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_nonzero", "NonZero", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_nonzero = {
    "replace_nonzero",
    "replace NonZero known to find exactly one element ([rank,1] output) by ArgMax + unravel",
    run};
