/* indices_workaround: Gather / GatherElements with constant indices get a
 * fresh int64 initializer whose negative indices are made non-negative
 * against the known size of the gathered axis (backends without
 * negative-index support, PopART among them, then read the right element).
 * Runtime indices are left alone: libpoprt's kernels accept negative ones. */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt_status st = POPRT_OK;
    for (size_t i = 0; !st && i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (!rp_is(n, "Gather") && !rp_is(n, "GatherElements"))
            continue;
        poprt__tensor *d = poprt__node_in(n, 0);
        const poprt__tensor *ix = rp_value(poprt__node_in(n, 1));
        if (!d || !ix || d->type.kind != POPRT__KIND_TENSOR || d->type.rank < 1 ||
            (ix->type.elem != POPRT_DTYPE_INT64 && ix->type.elem != POPRT_DTYPE_INT32))
            continue;
        int64_t ax;
        if (!poprt__norm_axis(poprt__attr_i(n, "axis", 0), d->type.rank, &ax))
            continue;
        int64_t size = d->type.dims[ax].value, cnt = poprt__type_numel(&ix->type);
        int rank;
        int64_t dims[POPRT__MAX_RANK];
        if (size < 0 || cnt < 0 || !rp_static_dims(ix, &rank, dims))
            continue;
        int neg = 0;
        for (int64_t k = 0; k < cnt && !neg; k++)
            neg = poprt__load_i64(ix->data, ix->type.elem, k) < 0;
        if (!neg)
            continue;
        int64_t *vals = poprt__arena_array(&g->model->arena, (size_t)(cnt ? cnt : 1), sizeof *vals);
        if (!vals) {
            st = rp_oom();
            break;
        }
        for (int64_t k = 0; k < cnt; k++) {
            int64_t x = poprt__load_i64(ix->data, ix->type.elem, k);
            vals[k] = x < 0 && x >= -size ? x + size : x; /* out of range stays an error */
        }
        poprt__tensor *t = poprt__graph_add_const(g, "indices", POPRT_DTYPE_INT64, rank, dims, vals,
                                                  (size_t)cnt * sizeof *vals);
        if (!t) {
            st = rp_oom();
            break;
        }
        poprt__node_set_input(n, 1, t);
        (*changed)++;
    }
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("indices_workaround", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_indices_workaround = {
    "indices_workaround",
    "make constant negative Gather/GatherElements indices non-negative (known axis size)", run};
