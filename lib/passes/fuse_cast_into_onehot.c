/* fuse_cast_into_onehot: OneHot reads indices of any numeric type and
 * writes the type of its values, so (1) a Cast between integer types that
 * keeps every index value exactly, feeding OneHot's indices, is dropped, and
 * (2) a Cast of OneHot's output is folded into OneHot by casting its
 * constant values input instead. */
#include "ir/dtype.h"
#include "passes/rewrite.h"

static poprt_status fuse(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *oh = g->nodes.items[i];
        if (!poprt__rw_is(oh, "OneHot") || oh->n_inputs < 3 || !oh->outputs[0])
            continue;
        /* (1) Cast -> indices */
        poprt__tensor *idx = oh->inputs[0];
        poprt__node *c = idx ? idx->producer : NULL;
        if (c && c->graph == g && poprt__rw_is(c, "Cast") && c->inputs[0] &&
            poprt__dtype_is_int(c->inputs[0]->type.elem) &&
            poprt__dtype_is_int((int32_t)poprt__attr_i(c, "to", 0)) &&
            poprt__rw_cast_exact(c->inputs[0]->type.elem, (int32_t)poprt__attr_i(c, "to", 0))) {
            poprt__node_set_input(oh, 0, c->inputs[0]);
            if (!idx->is_output && !poprt__tensor_use_count(g, idx))
                poprt__graph_remove_node(g, c);
            *changed = 1;
            i = (size_t)-1;
            continue;
        }
        /* (2) OneHot -> Cast */
        poprt__tensor *vals = oh->inputs[2];
        poprt__node *c2 = poprt__graph_sole_consumer(g, oh->outputs[0]);
        if (!c2 || !poprt__rw_is(c2, "Cast") || !c2->outputs[0] || !poprt__rw_is_const(vals) ||
            poprt__type_numel(&vals->type) != 2)
            continue;
        int32_t to = (int32_t)poprt__attr_i(c2, "to", 0), from = vals->type.elem;
        if (!(poprt__dtype_is_int(to) || poprt__dtype_is_float(to)) ||
            !(poprt__dtype_is_int(from) || poprt__dtype_is_float(from)) ||
            poprt__dtype_is_float(from) != poprt__dtype_is_float(to) || to == from)
            continue; /* float<->int and bool conversions: keep them at run time */
        unsigned char buf[32];
        int64_t two = 2;
        const void *vv = poprt__tensor_data(vals); /* two values: never copied later */
        for (int k = 0; vv && k < 2; k++) {
            if (poprt__dtype_is_float(to))
                poprt__store_f64(buf, to, k, poprt__load_f64(vv, from, k));
            else
                poprt__store_i64(buf, to, k, poprt__load_i64(vv, from, k));
        }
        if (!vv)
            return poprt__rw_oom();
        poprt__tensor *nv = poprt__graph_add_const(g, vals->name, to, 1, &two, buf,
                                                   2 * poprt__dtype_size((poprt_dtype)to));
        if (!nv)
            return poprt__rw_oom();
        poprt__node_set_input(oh, 2, nv);
        oh->outputs[0]->producer = NULL;
        poprt__rw_take_output(g, c2, 0, oh, 0);
        poprt__rw_drop_if_unused(g, vals);
        *changed = 1;
        i = (size_t)-1;
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, fuse, NULL, changed);
}

const poprt__pass poprt__pass_fuse_cast_into_onehot = {
    "fuse_cast_into_onehot",
    "drop a lossless integer Cast feeding OneHot's indices; fold a Cast of OneHot's output into its "
    "values",
    run};
