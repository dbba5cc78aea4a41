/* fuse_bn_into_conv: Conv followed (as its only reader) by an inference
 * BatchNormalization with constant parameters becomes one Conv with scaled
 * weights and a new bias: W'[m] = W[m]*s[m], B'[m] = (B[m]-mean)*s + beta,
 * s = gamma/sqrt(var+eps). New initializers are made, so shared weights stay. */
#include "ir/dtype.h"
#include "passes/rewrite.h"

static poprt_status fuse(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *conv = g->nodes.items[i];
        if (!poprt__rw_is(conv, "Conv") || conv->n_outputs != 1 || !conv->outputs[0])
            continue;
        poprt__tensor *w = poprt__node_in(conv, 1), *b = poprt__node_in(conv, 2);
        poprt__node *bn = poprt__graph_sole_consumer(g, conv->outputs[0]);
        if (!bn || !poprt__rw_is_const(w) || !poprt__dtype_is_float(w->type.elem) ||
            w->type.rank < 1 || (b && (!poprt__rw_is_const(b) || b->type.elem != w->type.elem)) ||
            poprt__node_in(bn, 0) != conv->outputs[0] || !bn->outputs[0])
            continue;
        poprt__rw_bn a;
        poprt_status st = poprt__rw_bn_affine(bn, &a);
        if (st)
            return st;
        const double *s = a.s, *t = a.t;
        int64_t c = a.c;
        if (!s)
            continue;
        int32_t e = w->type.elem;
        int64_t numel = poprt__type_numel(&w->type), m = w->type.dims[0].value;
        if (m != c || (b && poprt__type_numel(&b->type) != c)) {
            poprt__rw_bn_free(&a);
            continue;
        }
        size_t es = poprt__dtype_size((poprt_dtype)e);
        void *wd = poprt__malloc((size_t)numel * es + 1), *bd = poprt__malloc((size_t)c * es + 1);
        const void *wv = poprt__tensor_data(w), *bv = b ? poprt__tensor_data(b) : NULL;
        poprt__tensor *nw = NULL, *nb = NULL;
        if (wd && bd && wv && (!b || bv)) {
            int64_t per = c ? numel / c : 0;
            for (int64_t k = 0; k < numel; k++)
                poprt__store_f64(wd, e, k, poprt__load_f64(wv, e, k) * s[per ? k / per : 0]);
            for (int64_t k = 0; k < c; k++)
                poprt__store_f64(bd, e, k, (b ? poprt__load_f64(bv, e, k) : 0.0) * s[k] + t[k]);
            int64_t wdims[POPRT__MAX_RANK];
            nw = poprt__graph_add_const(g, w->name, e, poprt__rw_dims(w, wdims), wdims, wd,
                                        (size_t)numel * es);
            nb = poprt__graph_add_const(g, b ? b->name : "conv_bias", e, 1, &c, bd, (size_t)c * es);
        }
        poprt__free(wd);
        poprt__free(bd);
        poprt__rw_bn_free(&a);
        if (!nw || !nb)
            return poprt__rw_oom();
        if (conv->n_inputs < 3 && (st = poprt__node_resize_inputs(conv, 3)))
            return st;
        poprt__node_set_input(conv, 1, nw);
        poprt__node_set_input(conv, 2, nb);
        conv->outputs[0]->producer = NULL;
        if ((st = poprt__rw_bn_replaced(g, bn, conv, conv)))
            return st;
        poprt__rw_drop_if_unused(g, w);
        poprt__rw_drop_if_unused(g, b);
        *changed = 1;
        i = (size_t)-1; /* the node list changed */
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, fuse, NULL, changed);
}

const poprt__pass poprt__pass_fuse_bn_into_conv = {
    "fuse_bn_into_conv",
    "fold an inference BatchNormalization into the preceding Conv's weights and bias", run};
