/* fuse_bn_into_conv: Conv or ConvTranspose followed (as its only reader) by
 * an inference BatchNormalization with constant parameters becomes one node
 * with scaled weights and a new bias: W'[m] = W[m]*s[m],
 * B'[m] = (B[m]-mean)*s + beta, s = gamma/sqrt(var+eps). A per-channel
 * constant Add (shape [M,1,...] or [1,M,1,...], or one value) folds into the
 * bias the same way (s = 1, t = the addend): the bias some exporters write
 * as a separate Add. (A constant Mul is left alone: folded into the weights
 * of ppocr_v4_det's mobile-one blocks it moved the model's bfloat16 cosine
 * from 0.9987 to 0.9936, float32 unchanged. Not a wrong fold: scaling that
 * conv's weights by 1 +- 2^-12, which only flips some bfloat16 roundings,
 * moves it to 0.995-0.997 too; the figure is that fragile.)
 * ConvTranspose's weights are [C, M/group, k...]:
 * output channel m scales W[c][m % (M/group)] for the c of its group. New
 * initializers are made, so shared weights stay. */
#include "ir/dtype.h"
#include "passes/rewrite.h"

/* y -> Add(y, k) with k a constant of elem e holding one value per channel
 * (axis 1 of y, rank ry) or one value: *a as scale 1 and shift k for the M
 * channels. */
static poprt_status affine_of(const poprt__node *n, const poprt__tensor *y, int ry, int64_t M,
                              int32_t e, poprt__rw_bn *a)
{
    *a = (poprt__rw_bn){NULL, NULL, 0};
    if (!poprt__rw_is(n, "Add") || n->n_inputs != 2 || n->n_outputs != 1)
        return POPRT_OK;
    const poprt__tensor *k = poprt__rw_other_input(n, y);
    poprt__rw_const kc;
    if (!k || k == y || k->type.elem != e || k->type.rank > ry ||
        !poprt__rw_const_of(k, POPRT__RW_VALUE, &kc) || kc.elem != e)
        return POPRT_OK;
    const int pad = ry - k->type.rank;
    for (int d = 0; d < k->type.rank; d++) {
        const int64_t v = k->type.dims[d].value;
        if (v != 1 && !(d + pad == 1 && v == M))
            return POPRT_OK;
    }
    if (kc.numel != 1 && kc.numel != M)
        return POPRT_OK;
    double *sc = poprt__malloc((size_t)(M ? M : 1) * sizeof *sc);
    double *sh = poprt__malloc((size_t)(M ? M : 1) * sizeof *sh);
    if (!sc || !sh) {
        poprt__free(sc);
        poprt__free(sh);
        return poprt__rw_oom();
    }
    for (int64_t m = 0; m < M; m++) {
        const double v = poprt__load_f64(kc.data, e, kc.numel == 1 ? 0 : m);
        sc[m] = 1.0;
        sh[m] = v;
    }
    *a = (poprt__rw_bn){sc, sh, M};
    return POPRT_OK;
}

static poprt_status fuse(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *conv = g->nodes.items[i];
        const int tconv = poprt__rw_is(conv, "ConvTranspose");
        if ((!tconv && !poprt__rw_is(conv, "Conv")) || conv->n_outputs != 1 || !conv->outputs[0])
            continue;
        poprt__tensor *w = poprt__node_in(conv, 1), *b = poprt__node_in(conv, 2);
        poprt__node *bn = poprt__graph_sole_consumer(g, conv->outputs[0]);
        if (!bn || !poprt__rw_is_const(w) || !poprt__dtype_is_float(w->type.elem) ||
            w->type.rank < (tconv ? 2 : 1) ||
            (b && (!poprt__rw_is_const(b) || b->type.elem != w->type.elem)) ||
            !bn->outputs[0] || bn->n_inputs < 1)
            continue;
        /* output channels: W's first dim, or group * its second (ConvTranspose) */
        const int64_t group = poprt__attr_i(conv, "group", 1);
        const int64_t m = tconv ? group * w->type.dims[1].value : w->type.dims[0].value;
        poprt__rw_bn a;
        poprt_status st = poprt__node_in(bn, 0) == conv->outputs[0]
                              ? poprt__rw_bn_affine(bn, &a)
                              : (a = (poprt__rw_bn){NULL, NULL, 0}, POPRT_OK);
        if (!st && !a.s)
            st = affine_of(bn, conv->outputs[0], w->type.rank, m, w->type.elem, &a);
        if (st)
            return st;
        const double *s = a.s, *t = a.t;
        int64_t c = a.c;
        if (!s)
            continue;
        int32_t e = w->type.elem;
        int64_t numel = poprt__type_numel(&w->type);
        if (m != c || group < 1 || (tconv && w->type.dims[0].value % group) ||
            (b && poprt__type_numel(&b->type) != c)) {
            poprt__rw_bn_free(&a);
            continue;
        }
        size_t es = poprt__dtype_size((poprt_dtype)e);
        /* the new values straight into the model's memory for constants */
        const void *wv = poprt__tensor_data(w), *bv = b ? poprt__tensor_data(b) : NULL;
        int64_t wdims[POPRT__MAX_RANK];
        const int wrank = poprt__rw_dims(w, wdims);
        void *wd, *bd;
        poprt__tensor *nw = poprt__graph_add_const_buffer(g, w->name, e, wrank, wdims,
                                                          (size_t)numel * es, &wd);
        poprt__tensor *nb = poprt__graph_add_const_buffer(g, b ? b->name : "conv_bias", e, 1, &c,
                                                          (size_t)c * es, &bd);
        if (nw && nb && wv && (!b || bv)) {
            /* the output channel of weight k: W[m] (Conv); ConvTranspose:
             * W[ci][j] with j < M/group, channel (ci / (C/group)) M/group + j */
            const int64_t per = c ? numel / c : 0, mg = c / group;
            const int64_t cg = tconv ? w->type.dims[0].value / group : 0;
            const int64_t ksz = tconv && w->type.dims[0].value && mg
                                    ? numel / (w->type.dims[0].value * mg)
                                    : 0;
            if (e == POPRT_DTYPE_FLOAT && !tconv) {
                /* float32 Conv, channel by channel: the generic loop's
                 * products and roundings (load as double, store as float)
                 * without its per-element type dispatch */
                const float *x = wv;
                float *y = wd;
                for (int64_t ch = 0; ch < c; ch++)
                    for (int64_t j = ch * per; j < (ch + 1) * per; j++)
                        y[j] = (float)((double)x[j] * s[ch]);
            } else {
                for (int64_t k = 0; k < numel; k++) {
                    int64_t ch = per ? k / per : 0;
                    if (tconv) {
                        const int64_t row = k / ksz; /* ci * mg + j */
                        ch = (row / mg) / cg * mg + row % mg;
                    }
                    poprt__store_f64(wd, e, k, poprt__load_f64(wv, e, k) * s[ch]);
                }
            }
            for (int64_t k = 0; k < c; k++)
                poprt__store_f64(bd, e, k, (b ? poprt__load_f64(bv, e, k) : 0.0) * s[k] + t[k]);
        } else {
            nw = NULL;
        }
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
