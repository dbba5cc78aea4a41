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
 * [-127, 127]); the weight zero point is a scalar 0 (ONNX Runtime's
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

/* W (K x N; element (k, j) at w[k*rs + j*cs]) times alpha, quantized per
 * column into q [K, N] with scales s [N]. */
static void quantize_columns(const float *w, int64_t K, int64_t N, int64_t rs, int64_t cs,
                             float alpha, int8_t *q, float *s)
{
    for (int64_t j = 0; j < N; j++) {
        double amax = 0;
        for (int64_t k = 0; k < K; k++) {
            const double v = fabs((double)alpha * w[k * rs + j * cs]);
            if (v > amax)
                amax = v;
        }
        const double sc = amax > 0 && isfinite(amax) ? amax / 127.0 : 1.0;
        s[j] = (float)sc;
        for (int64_t k = 0; k < K; k++) {
            double v = nearbyint((double)alpha * w[k * rs + j * cs] / sc);
            v = v > 127 ? 127 : v < -127 ? -127 : isnan(v) ? 0 : v;
            q[k * N + j] = (int8_t)v;
        }
    }
}

/* Rewrites node n (MatMul or Gemm) when it qualifies; *done 1 when it did. */
static poprt_status rewrite(poprt__graph *g, ctx *c, poprt__node *n, int *done)
{
    *done = 0;
    const int gemm = poprt__rw_is(n, "Gemm");
    if (n->n_inputs < 2 || !n->inputs[0] || !n->inputs[1] || n->n_outputs < 1 ||
        !n->outputs[0] || poprt__list_has(c->skip, c->n_skip, n->name))
        return POPRT_OK;
    poprt__tensor *x = n->inputs[0], *w = n->inputs[1];
    poprt__tensor *cin = gemm && n->n_inputs > 2 ? n->inputs[2] : NULL;
    if (x->type.elem != POPRT_DTYPE_FLOAT || poprt__rw_rank(x) < 2)
        return POPRT_OK;
    int64_t wd[POPRT__MAX_RANK], numel;
    const float *wv = poprt__rw_f32(w, POPRT__RW_DATA, &numel);
    if (!wv || poprt__rw_dims(w, wd) != 2 || wd[0] * wd[1] != numel)
        return POPRT_OK;
    int tb = 0;
    float alpha = 1.0f, beta = 1.0f;
    if (gemm) {
        if (poprt__attr_i(n, "transA", 0) != 0)
            return POPRT_OK;
        tb = poprt__attr_i(n, "transB", 0) != 0;
        alpha = poprt__attr_f(n, "alpha", 1.0f);
        beta = poprt__attr_f(n, "beta", 1.0f);
        if (cin && beta != 1.0f && !poprt__rw_f32(cin, POPRT__RW_DATA, &numel))
            return POPRT_OK;
    }
    const int64_t K = tb ? wd[1] : wd[0], N = tb ? wd[0] : wd[1];
    if (K < c->min_size || N < c->min_size)
        return POPRT_OK;
    poprt__model *m = g->model;
    int8_t *q = poprt__malloc((size_t)(K * N));
    float *s = poprt__malloc((size_t)N * sizeof(float));
    const int8_t z = 0;
    poprt_status st = q && s ? POPRT_OK : poprt__rw_oom();
    if (!st)
        quantize_columns(wv, K, N, tb ? 1 : N, tb ? K : 1, alpha, q, s);
    const int64_t qd[2] = {K, N}, nd[1] = {N};
    const char *base = n->name && *n->name ? n->name : w->name;
    poprt__tensor *wq = NULL, *ws = NULL, *wz = NULL;
    const char *qname = poprt__arena_printf(&m->arena, "%s_W_quantized", base);
    const char *sname = poprt__arena_printf(&m->arena, "%s_W_scale", base);
    const char *zname = poprt__arena_printf(&m->arena, "%s_W_zero_point", base);
    if (!st && (!qname || !sname || !zname))
        st = poprt__rw_oom();
    if (!st) {
        wq = poprt__graph_add_const(g, qname, POPRT_DTYPE_INT8, 2, qd, q, (size_t)(K * N));
        ws = poprt__graph_add_const(g, sname, POPRT_DTYPE_FLOAT, 1, nd, s,
                                    (size_t)N * sizeof(float));
        wz = poprt__graph_add_const(g, zname, POPRT_DTYPE_INT8, 0, nd, &z, 1);
        if (!wq || !ws || !wz)
            st = poprt__rw_oom();
    }
    poprt__free(q);
    poprt__free(s);
    dq *d = NULL;
    if (!st)
        st = dq_of(g, c, x, &d);
    if (st)
        return st;
    poprt__tensor *mi_in[4] = {d->q, wq, d->z, wz};
    poprt__node *mi = poprt__rw_node1(g, "MatMulInteger", "", 4, mi_in, NULL, "matmul_integer");
    poprt__node *cast = mi ? poprt__rw_cast(g, mi->outputs[0], NULL, POPRT_DTYPE_FLOAT) : NULL;
    poprt__tensor *sc_in[2] = {d->s, ws};
    poprt__node *sc = cast ? poprt__rw_node1(g, "Mul", "", 2, sc_in, NULL, "scale") : NULL;
    if (!sc)
        return poprt__rw_oom();
    poprt__tensor *y_in[2] = {cast->outputs[0], sc->outputs[0]};
    poprt__node *last;
    if (cin) {
        poprt__node *mul = poprt__rw_node1(g, "Mul", "", 2, y_in, NULL, "dequantized");
        poprt__tensor *cb = cin;
        if (mul && beta != 1.0f) {
            int64_t cd[POPRT__MAX_RANK], cn;
            const float *cv = poprt__rw_f32(cin, POPRT__RW_DATA, &cn);
            const int cr = poprt__rw_dims(cin, cd);
            float *scaled = cv && cr >= 0 ? poprt__malloc((size_t)(cn > 0 ? cn : 1) * sizeof(float))
                                          : NULL;
            for (int64_t i = 0; scaled && i < cn; i++)
                scaled[i] = beta * cv[i];
            const char *cname = poprt__arena_printf(&m->arena, "%s_C_scaled", base);
            cb = scaled && cname ? poprt__graph_add_const(g, cname, POPRT_DTYPE_FLOAT, cr, cd,
                                                          scaled, (size_t)cn * sizeof(float))
                                 : NULL;
            poprt__free(scaled);
        }
        if (!mul || !cb)
            return poprt__rw_oom();
        poprt__tensor *add_in[2] = {mul->outputs[0], cb};
        last = poprt__rw_replace(g, n, "Add", "", 2, add_in);
    } else {
        last = poprt__rw_replace(g, n, "Mul", "", 2, y_in);
    }
    if (!last)
        return poprt__rw_oom();
    poprt__rw_drop_if_unused(g, w);
    if (cin)
        poprt__rw_drop_if_unused(g, cin);
    *done = 1;
    return POPRT_OK;
}

/* Rewrites Conv node n when it qualifies; *done 1 when it did. */
static poprt_status rewrite_conv(poprt__graph *g, ctx *c, poprt__node *n, int *done)
{
    *done = 0;
    if (n->n_inputs < 2 || !n->inputs[0] || !n->inputs[1] || n->n_outputs < 1 ||
        !n->outputs[0] || poprt__list_has(c->skip, c->n_skip, n->name))
        return POPRT_OK;
    poprt__tensor *x = n->inputs[0], *w = n->inputs[1];
    poprt__tensor *bias = n->n_inputs > 2 ? n->inputs[2] : NULL;
    int64_t wd[POPRT__MAX_RANK], numel, bn = 0;
    const float *wv = poprt__rw_f32(w, POPRT__RW_DATA, &numel);
    const int wr = poprt__rw_dims(w, wd);
    const float *bv = bias ? poprt__rw_f32(bias, POPRT__RW_DATA, &bn) : NULL;
    if (x->type.elem != POPRT_DTYPE_FLOAT || !wv || wr < 3 || numel <= 0 || (bias && !bv))
        return POPRT_OK;
    const int64_t M = wd[0], K = numel / M;
    if (M < c->min_size || K < c->min_size || (bias && bn != M))
        return POPRT_OK;
    poprt__model *m = g->model;
    int8_t *q = poprt__malloc((size_t)numel);
    float *s = poprt__malloc((size_t)M * sizeof(float));
    poprt_status st = q && s ? POPRT_OK : poprt__rw_oom();
    /* W as K x M: element (k, j) at w[j*K + k] */
    if (!st) {
        int8_t *qt = poprt__malloc((size_t)numel);
        if (!qt) {
            st = poprt__rw_oom();
        } else {
            quantize_columns(wv, K, M, 1, K, 1.0f, qt, s);
            for (int64_t j = 0; j < M; j++)
                for (int64_t k = 0; k < K; k++)
                    q[j * K + k] = qt[k * M + j];
            poprt__free(qt);
        }
    }
    int64_t sd[POPRT__MAX_RANK];
    sd[0] = M;
    for (int i = 1; i < wr - 1; i++)
        sd[i] = 1;
    const int8_t z = 0;
    const char *base = n->name && *n->name ? n->name : w->name;
    poprt__tensor *wq = NULL, *ws = NULL, *wz = NULL, *bt = NULL;
    const char *qname = poprt__arena_printf(&m->arena, "%s_W_quantized", base);
    const char *sname = poprt__arena_printf(&m->arena, "%s_W_scale", base);
    const char *zname = poprt__arena_printf(&m->arena, "%s_W_zero_point", base);
    const char *bname = poprt__arena_printf(&m->arena, "%s_B_channels", base);
    if (!st && (!qname || !sname || !zname || !bname))
        st = poprt__rw_oom();
    if (!st) {
        wq = poprt__graph_add_const(g, qname, POPRT_DTYPE_INT8, wr, wd, q, (size_t)numel);
        ws = poprt__graph_add_const(g, sname, POPRT_DTYPE_FLOAT, wr - 1, sd, s,
                                    (size_t)M * sizeof(float));
        wz = poprt__graph_add_const(g, zname, POPRT_DTYPE_INT8, 0, sd, &z, 1);
        if (bv)
            bt = poprt__graph_add_const(g, bname, POPRT_DTYPE_FLOAT, wr - 1, sd, bv,
                                        (size_t)M * sizeof(float));
        if (!wq || !ws || !wz || (bv && !bt))
            st = poprt__rw_oom();
    }
    poprt__free(q);
    poprt__free(s);
    dq *d = NULL;
    if (!st)
        st = dq_of(g, c, x, &d);
    if (st)
        return st;
    poprt__tensor *ci_in[4] = {d->q, wq, d->z, wz};
    poprt__node *ci = poprt__rw_node1(g, "ConvInteger", "", 4, ci_in, NULL, "conv_integer");
    static const char *const attrs[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads",
                                        "strides"};
    for (size_t i = 0; ci && !st && i < sizeof attrs / sizeof *attrs; i++)
        if (poprt__node_attr(n, attrs[i]))
            st = poprt__rw_copy_attr(ci, n, attrs[i]);
    if (st)
        return st;
    poprt__node *cast = ci ? poprt__rw_cast(g, ci->outputs[0], NULL, POPRT_DTYPE_FLOAT) : NULL;
    poprt__tensor *sc_in[2] = {d->s, ws};
    poprt__node *sc = cast ? poprt__rw_node1(g, "Mul", "", 2, sc_in, NULL, "scale") : NULL;
    if (!sc)
        return poprt__rw_oom();
    poprt__tensor *y_in[2] = {cast->outputs[0], sc->outputs[0]};
    poprt__node *last;
    if (bt) {
        poprt__node *mul = poprt__rw_node1(g, "Mul", "", 2, y_in, NULL, "dequantized");
        poprt__tensor *add_in[2] = {mul ? mul->outputs[0] : NULL, bt};
        last = mul ? poprt__rw_replace(g, n, "Add", "", 2, add_in) : NULL;
    } else {
        last = poprt__rw_replace(g, n, "Mul", "", 2, y_in);
    }
    if (!last)
        return poprt__rw_oom();
    poprt__rw_drop_if_unused(g, w);
    if (bias)
        poprt__rw_drop_if_unused(g, bias);
    *done = 1;
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"skip_op_names", "min_size", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse(NAME, args, known, &a);
    if (st)
        return st;
    char buf[4096];
    const char *skip[256];
    ctx c = {NULL, 0, 0, skip, 0, 16};
    c.n_skip = poprt__arg_list(poprt__pass_arg(&a, "skip_op_names"), buf, sizeof buf, skip, 256);
    if ((st = poprt__pass_arg_int(NAME, &a, "min_size", 16, &c.min_size)))
        return st;
    if (c.min_size < 1)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: min_size %lld: expected >= 1", NAME,
                          (long long)c.min_size);
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
    "min_size (default 16: smaller K or N stay float)",
    run, 1};
