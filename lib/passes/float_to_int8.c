/* float_to_int8: dynamic int8 quantization of MatMul and Gemm with a
 * constant float weight, in the form ONNX Runtime's quantize_dynamic writes
 * (so its runtime recognises and fuses it, and any ONNX runtime can run it):
 *
 *   x -> DynamicQuantizeLinear -> (xq uint8, xs, xz)       (one per x)
 *   MatMulInteger(xq, Wq int8 [K, N], xz, Wz = 0) -> int32
 *   Cast(to float) -> Mul(., Mul(xs, Ws [N])) -> y     (+ C for Gemm)
 * and for Conv, ConvInteger(xq, Wq int8 [M, C/group, k...], xz, 0) with its
 * attributes, the scales Ws [M, 1, ...] per output channel and the bias
 * added after as [M, 1, ...].
 *
 * Weights are quantized per output column (channel), symmetrically:
 * Ws[j] = max_k |W[k][j]| / 127, Wq = round(W / Ws) (ties to even, within
 * [-127, 127]; with reduce_range=1, 63 and [-63, 63]: 7 bits, which CPUs
 * without VNNI multiply exactly at twice the rate, igemm.h); the weight zero point is a scalar 0 (ONNX Runtime's
 * ConvInteger takes no other). Gemm's alpha is folded into Ws and beta * C
 * added after.
 * The activations get one scale and zero point per tensor and per run
 * (DynamicQuantizeLinear: uint8 over [min(x, 0), max(x, 0)]). Integer
 * products are exact: two runtimes agree up to the float steps.
 *
 * Taken: MatMul (A float of any rank >= 2, B a 2-D float constant), Gemm
 * (transA = 0, B a float constant, C absent, or a constant when beta != 1)
 * and Conv (float X, constant float W of rank >= 3, constant or no bias),
 * with K (Conv: C/group times the kernel size) and N (Conv: M) at least
 * `min_size` (default 16: smaller products gain nothing and lose accuracy;
 * depthwise convolutions stay float), in the main graph, at opset >= 10
 * (where these operators exist); nodes named in skip_op_names stay
 * float. */
#include <math.h>
#include <string.h>
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/util_precision.h"

#define NAME "float_to_int8"

typedef struct dq {
    const poprt__tensor *x;
    poprt__tensor *q, *s, *z;
} dq;

typedef struct ctx {
    dq *dqs;
    size_t n_dq, cap_dq;
    const char *const *skip;
    int n_skip;
    int64_t min_size;
    int qmax; /* 127, or 63 with reduce_range=1 */
} ctx;

/* The DynamicQuantizeLinear of x, made on first use. */
static poprt_status dq_of(poprt__graph *g, ctx *c, poprt__tensor *x, dq **out)
{
    for (size_t i = 0; i < c->n_dq; i++)
        if (c->dqs[i].x == x) {
            *out = &c->dqs[i];
            return POPRT_OK;
        }
    if (c->n_dq == c->cap_dq) {
        size_t cap = c->cap_dq ? 2 * c->cap_dq : 16;
        dq *d = poprt__realloc(c->dqs, cap * sizeof *d);
        if (!d)
            return poprt__rw_oom();
        c->dqs = d;
        c->cap_dq = cap;
    }
    poprt__model *m = g->model;
    poprt__node *n = poprt__rw_node(g, "DynamicQuantizeLinear", "", x->name, 1, 3);
    const char *qn = poprt__arena_printf(&m->arena, "%s_quantized", x->name);
    const char *sn = poprt__arena_printf(&m->arena, "%s_scale", x->name);
    const char *zn = poprt__arena_printf(&m->arena, "%s_zero_point", x->name);
    dq d = {x, NULL, NULL, NULL};
    if (n && qn && sn && zn) {
        d.q = poprt__graph_new_tensor(g, qn);
        d.s = poprt__graph_new_tensor(g, sn);
        d.z = poprt__graph_new_tensor(g, zn);
    }
    if (!d.q || !d.s || !d.z)
        return poprt__rw_oom();
    poprt__node_set_input(n, 0, x);
    poprt__rw_set_output(n, 0, d.q);
    poprt__rw_set_output(n, 1, d.s);
    poprt__rw_set_output(n, 2, d.z);
    c->dqs[c->n_dq] = d;
    *out = &c->dqs[c->n_dq++];
    return POPRT_OK;
}

/* What one quantized node reads: the int8 weight of wrank dims wd, its
 * scales of srank dims sd (N values), the scalar zero point 0, and an
 * optional float addend of arank dims ad (NULL: none) named base_<add_name>,
 * as new constants named from base. */
typedef struct qweight {
    poprt__tensor *q, *s, *z, *add;
} qweight;

static poprt_status add_weight(poprt__graph *g, const char *base, const int8_t *q, int wrank,
                               const int64_t *wd, int64_t numel, const float *s, int srank,
                               const int64_t *sd, int64_t N, const float *add,
                               const char *add_name, int arank, const int64_t *ad, int64_t add_n,
                               qweight *out)
{
    poprt__model *m = g->model;
    const int8_t z = 0;
    const char *qn = poprt__arena_printf(&m->arena, "%s_W_quantized", base);
    const char *sn = poprt__arena_printf(&m->arena, "%s_W_scale", base);
    const char *zn = poprt__arena_printf(&m->arena, "%s_W_zero_point", base);
    const char *an = add ? poprt__arena_printf(&m->arena, "%s_%s", base, add_name) : NULL;
    if (!qn || !sn || !zn || (add && !an))
        return poprt__rw_oom();
    out->q = poprt__graph_add_const(g, qn, POPRT_DTYPE_INT8, wrank, wd, q, (size_t)numel);
    out->s = poprt__graph_add_const(g, sn, POPRT_DTYPE_FLOAT, srank, sd, s,
                                    (size_t)N * sizeof(float));
    out->z = poprt__graph_add_const(g, zn, POPRT_DTYPE_INT8, 0, sd, &z, 1);
    out->add = add ? poprt__graph_add_const(g, an, POPRT_DTYPE_FLOAT, arank, ad, add,
                                            (size_t)add_n * sizeof(float))
                   : NULL;
    return out->q && out->s && out->z && (!add || out->add) ? POPRT_OK : poprt__rw_oom();
}

/* Replaces n (reading weight w and, when not NULL, the addend it had, old)
 * by op (MatMulInteger or ConvInteger) on x's DynamicQuantizeLinear and
 * wt's constants, Cast to float, Mul by xs * Ws and, with an addend, Add;
 * the attributes named in attrs (NULL-terminated) are copied to op. */
static poprt_status replace_node(poprt__graph *g, ctx *c, poprt__node *n, const char *op,
                                 const char *const *attrs, poprt__tensor *x, poprt__tensor *w,
                                 poprt__tensor *old, const qweight *wt)
{
    dq *d = NULL;
    poprt_status st = dq_of(g, c, x, &d);
    if (st)
        return st;
    poprt__tensor *in[4] = {d->q, wt->q, d->z, wt->z};
    poprt__node *qi = poprt__rw_node1(g, op, "", 4, in, NULL,
                                      strcmp(op, "ConvInteger") ? "matmul_integer"
                                                                : "conv_integer");
    for (int i = 0; qi && !st && attrs && attrs[i]; i++)
        if (poprt__node_attr(n, attrs[i]))
            st = poprt__rw_copy_attr(qi, n, attrs[i]);
    if (st)
        return st;
    poprt__node *cast = qi ? poprt__rw_cast(g, qi->outputs[0], NULL, POPRT_DTYPE_FLOAT) : NULL;
    poprt__tensor *sc_in[2] = {d->s, wt->s};
    poprt__node *sc = cast ? poprt__rw_node1(g, "Mul", "", 2, sc_in, NULL, "scale") : NULL;
    if (!sc)
        return poprt__rw_oom();
    poprt__tensor *y_in[2] = {cast->outputs[0], sc->outputs[0]};
    poprt__node *last;
    if (wt->add) {
        poprt__node *mul = poprt__rw_node1(g, "Mul", "", 2, y_in, NULL, "dequantized");
        poprt__tensor *add_in[2] = {mul ? mul->outputs[0] : NULL, wt->add};
        last = mul ? poprt__rw_replace(g, n, "Add", "", 2, add_in) : NULL;
    } else {
        last = poprt__rw_replace(g, n, "Mul", "", 2, y_in);
    }
    if (!last)
        return poprt__rw_oom();
    poprt__rw_drop_if_unused(g, w);
    if (old)
        poprt__rw_drop_if_unused(g, old);
    return POPRT_OK;
}

static const char *base_name(const poprt__node *n)
{
    return n->name && *n->name ? n->name : n->inputs[1]->name;
}

/* Rewrites node n (MatMul or Gemm) when it qualifies; *done 1 when it did. */
static poprt_status rewrite(poprt__graph *g, ctx *c, poprt__node *n, int *done)
{
    *done = 0;
    const int gemm = poprt__rw_is(n, "Gemm");
    if (!poprt__int8_takes(n, c->skip, c->n_skip, c->min_size))
        return POPRT_OK;
    poprt__tensor *x = n->inputs[0], *w = n->inputs[1];
    poprt__tensor *cin = gemm && n->n_inputs > 2 ? n->inputs[2] : NULL;
    int64_t wd[POPRT__MAX_RANK], numel, cn = 0, cd[POPRT__MAX_RANK];
    const float *wv = poprt__rw_f32(w, POPRT__RW_DATA, &numel);
    if (!wv || poprt__rw_dims(w, wd) != 2 || wd[0] * wd[1] != numel)
        return POPRT_OK;
    int tb = 0;
    float alpha = 1.0f, beta = 1.0f;
    const float *cv = NULL;
    int cr = 0;
    if (gemm) {
        tb = poprt__attr_i(n, "transB", 0) != 0;
        alpha = poprt__attr_f(n, "alpha", 1.0f);
        beta = poprt__attr_f(n, "beta", 1.0f);
        /* beta * C as a new constant (C itself when beta is 1) */
        if (cin && beta != 1.0f &&
            (!(cv = poprt__rw_f32(cin, POPRT__RW_DATA, &cn)) || (cr = poprt__rw_dims(cin, cd)) < 0))
            return POPRT_OK;
    }
    const int64_t K = tb ? wd[1] : wd[0], N = tb ? wd[0] : wd[1];
    int8_t *q = poprt__malloc((size_t)(K * N));
    float *s = poprt__malloc((size_t)N * sizeof(float));
    float *scaled = cv ? poprt__malloc((size_t)(cn > 0 ? cn : 1) * sizeof(float)) : NULL;
    poprt_status st = q && s && (!cv || scaled) ? POPRT_OK : poprt__rw_oom();
    qweight wt = {0};
    if (!st) {
        poprt__quantize_columns_to(wv, K, N, tb ? 1 : N, tb ? K : 1, alpha, c->qmax, q, N, 1, s);
        for (int64_t i = 0; cv && i < cn; i++)
            scaled[i] = beta * cv[i];
        const int64_t qd[2] = {K, N}, nd[1] = {N};
        st = add_weight(g, base_name(n), q, 2, qd, K * N, s, 1, nd, N, scaled, "C_scaled", cr,
                        cd, cn, &wt);
    }
    poprt__free(q);
    poprt__free(s);
    poprt__free(scaled);
    if (!st && cin && !cv)
        wt.add = cin;
    if (!st)
        st = replace_node(g, c, n, "MatMulInteger", NULL, x, w, cin, &wt);
    *done = !st;
    return st;
}

/* Rewrites Conv node n when it qualifies; *done 1 when it did. */
static poprt_status rewrite_conv(poprt__graph *g, ctx *c, poprt__node *n, int *done)
{
    *done = 0;
    if (!poprt__int8_takes(n, c->skip, c->n_skip, c->min_size))
        return POPRT_OK;
    poprt__tensor *x = n->inputs[0], *w = n->inputs[1];
    poprt__tensor *bias = n->n_inputs > 2 ? n->inputs[2] : NULL;
    int64_t wd[POPRT__MAX_RANK], numel, bn = 0;
    const float *wv = poprt__rw_f32(w, POPRT__RW_DATA, &numel);
    const int wr = poprt__rw_dims(w, wd);
    const float *bv = bias ? poprt__rw_f32(bias, POPRT__RW_DATA, &bn) : NULL;
    const int64_t M = wd[0], K = numel / M;
    int8_t *q = poprt__malloc((size_t)numel);
    float *s = poprt__malloc((size_t)M * sizeof(float));
    poprt_status st = q && s ? POPRT_OK : poprt__rw_oom();
    qweight wt = {0};
    if (!st) {
        /* W [M, K...] read and written as K x M: element (k, j) at j*K + k */
        poprt__quantize_columns_to(wv, K, M, 1, K, 1.0f, c->qmax, q, 1, K, s);
        /* scales and bias as [M, 1, ...] against the output's channel axis */
        int64_t sd[POPRT__MAX_RANK];
        sd[0] = M;
        for (int i = 1; i < wr - 1; i++)
            sd[i] = 1;
        st = add_weight(g, base_name(n), q, wr, wd, numel, s, wr - 1, sd, M, bv, "B_channels",
                        wr - 1, sd, M, &wt);
    }
    poprt__free(q);
    poprt__free(s);
    static const char *const attrs[] = {"auto_pad", "dilations", "group", "kernel_shape",
                                        "pads",     "strides",   NULL};
    if (!st)
        st = replace_node(g, c, n, "ConvInteger", attrs, x, w, bias, &wt);
    *done = !st;
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"skip_op_names", "min_size", "reduce_range", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse(NAME, args, known, &a);
    if (st)
        return st;
    char buf[4096];
    const char *skip[256];
    ctx c = {NULL, 0, 0, skip, 0, 16, 127};
    c.n_skip = poprt__arg_list(poprt__pass_arg(&a, "skip_op_names"), buf, sizeof buf, skip, 256);
    int64_t rr = 0;
    if ((st = poprt__pass_arg_int(NAME, &a, "min_size", 16, &c.min_size)) ||
        (st = poprt__pass_arg_int(NAME, &a, "reduce_range", 0, &rr)))
        return st;
    if (c.min_size < 1)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: min_size %lld: expected >= 1", NAME,
                          (long long)c.min_size);
    if (rr != 0 && rr != 1)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: reduce_range %lld: expected 0 or 1",
                          NAME, (long long)rr);
    c.qmax = rr ? 63 : 127;
    *changed = 0;
    if (poprt__model_opset(m, "") < 10) {
        poprt__log(POPRT_LOG_WARNING,
                   "%s: opset %lld has no DynamicQuantizeLinear/MatMulInteger (10): convert the "
                   "model to opset >= 10 first (--convert_version); nothing quantized", NAME,
                   (long long)poprt__model_opset(m, ""));
        return POPRT_OK;
    }
    poprt__graph *g = m->graph;
    /* the node list grows while it is rewritten: walk the nodes there were */
    const size_t n0 = g->nodes.len;
    poprt__node **nodes = poprt__malloc((n0 ? n0 : 1) * sizeof *nodes);
    if (!nodes)
        return poprt__rw_oom();
    memcpy(nodes, g->nodes.items, n0 * sizeof *nodes);
    int count = 0;
    for (size_t i = 0; !st && i < n0; i++) {
        poprt__node *n = nodes[i];
        int done = 0;
        if (poprt__rw_is(n, "Conv"))
            st = rewrite_conv(g, &c, n, &done);
        else if (poprt__rw_is(n, "MatMul") || poprt__rw_is(n, "Gemm"))
            st = rewrite(g, &c, n, &done);
        else
            continue;
        count += done;
    }
    poprt__free(nodes);
    poprt__free(c.dqs);
    if (!st && count)
        poprt__graph_remove_dead(g);
    *changed = count > 0;
    if (!st)
        poprt__log(POPRT_LOG_INFO,
                   "%s: %d MatMul/Gemm/Conv nodes now int8 (%zu activations quantized)",
                   NAME, count, c.n_dq);
    return st;
}

const poprt__pass poprt__pass_float_to_int8 = {
    NAME,
    "dynamic int8 quantization as ONNX Runtime's quantize_dynamic writes it: MatMul, Gemm and "
    "Conv with a constant float weight become DynamicQuantizeLinear + MatMulInteger/ConvInteger "
    "(int8 weights per output channel, symmetric) + Cast + Mul; args skip_op_names=[..], "
    "min_size (default 16: smaller K or N stay float), reduce_range (1: weights in 7 bits, "
    "[-63, 63], as ONNX Runtime's reduce_range)",
    run, 1};
