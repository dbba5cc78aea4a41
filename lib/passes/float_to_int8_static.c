/* float_to_int8_static: static int8 quantization in the QDQ form (ONNX
 * Runtime's quantize_static with QuantFormat.QDQ writes the same), with
 * activation ranges calibrated on data:
 *
 *   X -> QuantizeLinear(xs, xz) -> DequantizeLinear(xs, xz) -> Conv / MatMul / Gemm
 *   W int8 -> DequantizeLinear(Ws, 0[, axis]) ->      B int32 -> DequantizeLinear(xs * Ws) ->
 *   Conv [-> Relu] -> Y -> QuantizeLinear(ys, yz) -> DequantizeLinear -> readers of Y
 *
 * Any ONNX runtime runs it (fake quantization: float arithmetic on values
 * rounded to the int8 grid); runtimes that fuse QDQ (ONNX Runtime, and
 * libpoprt's session compiler, lib/compiler/fuse_qdq.c) run the products
 * on integer kernels.
 *
 * Activations: uint8, one scale and zero point per tensor from the range
 * [min(lo, 0), max(hi, 0)] over the calibration samples (`data=DIR`, a
 * folder as in docs/calibration.md; without one, `samples` random inputs,
 * which only suit models whose inputs are random-like). Weights: int8, per
 * output channel (Conv) or column (MatMul/Gemm) symmetric (as float_to_int8)
 * from opset 13 on, one scale per tensor below (DequantizeLinear has no axis
 * there). A Conv bias becomes int32 at scale xs * Ws; Gemm's C stays float.
 * A Conv whose output only a Relu reads is quantized after the Relu. Outputs
 * that are graph outputs stay float. Taken: the nodes float_to_int8 takes
 * (min_size, skip_op_names, reduce_range), opset >= 10. */
#include <math.h>
#include <string.h>
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/util_precision.h"

#define NAME "float_to_int8_static"

/* The calibrated range of one activation and its Q/DQ pair once made. */
typedef struct act {
    poprt__tensor *t;
    float lo, hi;
    poprt__tensor *dq; /* the DequantizeLinear output readers take, once made */
    poprt__tensor *s, *z;
    float scale; /* s's value */
} act;

typedef struct ctx {
    poprt__vec nodes; /* the nodes to quantize, and per node its input and the
                       * tensor quantized after it (NULL: none), as found */
    poprt__vec ins, outs;
    act *acts;
    size_t n_acts, cap;
    const char *const *skip;
    int n_skip;
    int64_t min_size;
    int per_channel;
    int qmax; /* 127, or 63 with reduce_range=1 */
} ctx;

static act *act_of(ctx *c, const poprt__tensor *t)
{
    for (size_t i = 0; i < c->n_acts; i++)
        if (c->acts[i].t == t)
            return &c->acts[i];
    return NULL;
}

static poprt_status add_act(ctx *c, poprt__tensor *t)
{
    if (act_of(c, t))
        return POPRT_OK;
    if (c->n_acts == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 32;
        act *a = poprt__realloc(c->acts, cap * sizeof *a);
        if (!a)
            return poprt__rw_oom();
        c->acts = a;
        c->cap = cap;
    }
    c->acts[c->n_acts++] = (act){t, 0.0f, 0.0f, NULL, NULL, NULL, 0.0f};
    return POPRT_OK;
}

/* The tensor whose quantization follows node n: its output, or the output
 * of the Relu that alone reads it (Conv only); NULL for a graph output. */
static poprt__tensor *out_of(const poprt__graph *g, const poprt__node *n)
{
    poprt__tensor *y = n->outputs[0];
    poprt__node *r = poprt__rw_is(n, "Conv") ? poprt__rw_reader(g, y, "Relu") : NULL;
    if (r && r->outputs[0])
        y = r->outputs[0];
    return y->is_output ? NULL : y;
}

/* Every reader of a->t but its QuantizeLinear q reads the dequantized value. */
static void redirect(poprt__graph *g, const act *a, const poprt__node *q)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int k = 0; n != q && k < n->n_inputs; k++)
            if (n->inputs[k] == a->t)
                poprt__node_set_input(n, k, a->dq);
    }
}

/* The Q/DQ pair of activation a (uint8 over its range), made once; every
 * other reader of a->t then reads its output. */
static poprt_status qdq_of(poprt__graph *g, act *a)
{
    if (a->dq)
        return POPRT_OK;
    const double lo = a->lo < 0 ? a->lo : 0, hi = a->hi > 0 ? a->hi : 0;
    double s = (hi - lo) / 255.0;
    if (!(s > 0) || !isfinite(s))
        s = 1.0;
    double z = nearbyint(-lo / s);
    z = z < 0 ? 0 : z > 255 ? 255 : z;
    poprt__model *m = g->model;
    const char *sn = poprt__arena_printf(&m->arena, "%s_scale", a->t->name);
    const char *zn = poprt__arena_printf(&m->arena, "%s_zero_point", a->t->name);
    const float sf = (float)s;
    const uint8_t zq = (uint8_t)z;
    a->s = sn ? poprt__graph_add_const(g, sn, POPRT_DTYPE_FLOAT, 0, NULL, &sf, sizeof sf) : NULL;
    a->z = zn ? poprt__graph_add_const(g, zn, POPRT_DTYPE_UINT8, 0, NULL, &zq, 1) : NULL;
    if (!a->s || !a->z)
        return poprt__rw_oom();
    poprt__tensor *qin[3] = {a->t, a->s, a->z};
    poprt__node *q = poprt__rw_node1(g, "QuantizeLinear", "", 3, qin, NULL, "quantized");
    poprt__tensor *din[3] = {q ? q->outputs[0] : NULL, a->s, a->z};
    poprt__node *d = q ? poprt__rw_node1(g, "DequantizeLinear", "", 3, din, NULL, "dequantized")
                       : NULL;
    if (!d)
        return poprt__rw_oom();
    a->dq = d->outputs[0];
    a->scale = sf;
    redirect(g, a, q);
    return POPRT_OK;
}

/* W (float, constant) of node n as int8 + DequantizeLinear; its scales into
 * *scales (N values, heap; one repeated below opset 13). */
static poprt_status weight(poprt__graph *g, ctx *c, poprt__node *n, float **scales, int64_t *nsc)
{
    poprt__tensor *w = n->inputs[1];
    int64_t wd[POPRT__MAX_RANK], numel;
    const float *wv = poprt__rw_f32(w, POPRT__RW_DATA, &numel);
    const int wr = poprt__rw_dims(w, wd);
    const int conv = poprt__rw_is(n, "Conv");
    const int tb = poprt__rw_is(n, "Gemm") && poprt__attr_i(n, "transB", 0) != 0;
    /* columns: Conv's output channels (rows of W), MatMul's columns, Gemm's
     * rows of a transposed B */
    const int64_t N = conv ? wd[0] : tb ? wd[0] : wd[1], K = numel / N;
    const int rows = conv || tb; /* a column's values are one row of W */
    int8_t *q = poprt__malloc((size_t)numel);
    float *s = poprt__malloc((size_t)N * sizeof *s);
    if (!q || !s) {
        poprt__free(q);
        poprt__free(s);
        return poprt__rw_oom();
    }
    if (c->per_channel) {
        poprt__quantize_columns_to(wv, K, N, rows ? 1 : N, rows ? K : 1, 1.0f, c->qmax, q,
                                   rows ? 1 : N, rows ? K : 1, s);
    } else {
        /* one scale: the whole tensor as one column */
        poprt__quantize_columns_to(wv, numel, 1, 1, 0, 1.0f, c->qmax, q, 1, 0, s);
        for (int64_t j = 1; j < N; j++)
            s[j] = s[0];
    }
    poprt__model *m = g->model;
    const char *qn = poprt__arena_printf(&m->arena, "%s_quantized", w->name);
    const char *sn = poprt__arena_printf(&m->arena, "%s_scale", w->name);
    const char *zn = poprt__arena_printf(&m->arena, "%s_zero_point", w->name);
    const int64_t ns = c->per_channel ? N : 1;
    int8_t *zeros = poprt__calloc((size_t)ns, 1);
    poprt__tensor *wq = qn && zeros ? poprt__graph_add_const(g, qn, POPRT_DTYPE_INT8, wr, wd, q,
                                                             (size_t)numel)
                                    : NULL;
    poprt__tensor *ws = wq && sn ? poprt__graph_add_const(g, sn, POPRT_DTYPE_FLOAT,
                                                          c->per_channel ? 1 : 0, &ns, s,
                                                          (size_t)ns * sizeof *s)
                                 : NULL;
    poprt__tensor *wz = ws && zn ? poprt__graph_add_const(g, zn, POPRT_DTYPE_INT8,
                                                          c->per_channel ? 1 : 0, &ns, zeros,
                                                          (size_t)ns)
                                 : NULL;
    poprt__free(q);
    poprt__free(zeros);
    poprt__tensor *in[3] = {wq, ws, wz};
    poprt__node *d = wz ? poprt__rw_node1(g, "DequantizeLinear", "", 3, in, NULL, "dequantized")
                        : NULL;
    poprt_status st = d ? POPRT_OK : poprt__rw_oom();
    if (!st && c->per_channel)
        st = poprt__rw_attr_i(d, "axis", rows ? 0 : 1);
    if (st) {
        poprt__free(s);
        return st;
    }
    poprt__node_set_input(n, 1, d->outputs[0]);
    poprt__rw_drop_if_unused(g, w);
    *scales = s;
    *nsc = N;
    return POPRT_OK;
}

/* Conv's float bias as int32 at scale xs * Ws + DequantizeLinear. */
static poprt_status bias(poprt__graph *g, ctx *c, poprt__node *n, float xs, const float *ws,
                         int64_t N)
{
    poprt__tensor *b = n->inputs[2];
    int64_t bn;
    const float *bv = poprt__rw_f32(b, POPRT__RW_DATA, &bn);
    int32_t *q = poprt__malloc((size_t)N * sizeof *q);
    float *s = poprt__malloc((size_t)N * sizeof *s);
    if (!q || !s || !bv || bn != N) {
        poprt__free(q);
        poprt__free(s);
        return bv && bn == N ? poprt__rw_oom() : POPRT_OK;
    }
    for (int64_t j = 0; j < N; j++) {
        s[j] = xs * ws[j];
        double v = nearbyint((double)bv[j] / s[j]);
        v = v > 2147483647.0 ? 2147483647.0 : v < -2147483647.0 ? -2147483647.0 : isnan(v) ? 0 : v;
        q[j] = (int32_t)v;
    }
    poprt__model *m = g->model;
    const char *qn = poprt__arena_printf(&m->arena, "%s_quantized", b->name);
    const char *sn = poprt__arena_printf(&m->arena, "%s_scale", b->name);
    const int64_t ns = c->per_channel ? N : 1;
    poprt__tensor *bq = qn ? poprt__graph_add_const(g, qn, POPRT_DTYPE_INT32, 1, &N, q,
                                                    (size_t)N * sizeof *q)
                           : NULL;
    poprt__tensor *bs = bq && sn ? poprt__graph_add_const(g, sn, POPRT_DTYPE_FLOAT,
                                                          c->per_channel ? 1 : 0, &ns, s,
                                                          (size_t)ns * sizeof *s)
                                 : NULL;
    poprt__free(q);
    poprt__free(s);
    poprt__tensor *in[2] = {bq, bs};
    poprt__node *d = bs ? poprt__rw_node1(g, "DequantizeLinear", "", 2, in, NULL, "dequantized")
                        : NULL;
    poprt_status st = d ? POPRT_OK : poprt__rw_oom();
    if (!st && c->per_channel)
        st = poprt__rw_attr_i(d, "axis", 0);
    if (st)
        return st;
    poprt__node_set_input(n, 2, d->outputs[0]);
    poprt__rw_drop_if_unused(g, b);
    return POPRT_OK;
}

/* Calibration: the ranges of every activation in c over the samples. */
static poprt_status calibrate(poprt__model *m, ctx *c, const poprt__pdata *d)
{
    const char **names = poprt__malloc((c->n_acts ? c->n_acts : 1) * sizeof *names);
    if (!names)
        return poprt__rw_oom();
    for (size_t i = 0; i < c->n_acts; i++)
        names[i] = c->acts[i].t->name;
    poprt__prunner *r = NULL;
    poprt_status st = poprt__prunner_create(m, (int)c->n_acts, names, d, &r);
    poprt__free(names);
    for (int s = 0; !st && s < d->n_samples; s++) {
        const float *const *out;
        const int64_t *numel;
        if ((st = poprt__prunner_run(r, d, s, &out, &numel)))
            break;
        for (size_t i = 0; i < c->n_acts; i++)
            for (int64_t k = 0; k < numel[i]; k++) {
                const float v = out[i][k];
                if (v < c->acts[i].lo)
                    c->acts[i].lo = v;
                if (v > c->acts[i].hi)
                    c->acts[i].hi = v;
            }
    }
    poprt__prunner_free(r);
    return st;
}

static poprt_status quantize(poprt__graph *g, ctx *c)
{
    poprt_status st = POPRT_OK;
    for (size_t i = 0; !st && i < c->nodes.len; i++) {
        poprt__node *n = c->nodes.items[i];
        act *x = act_of(c, c->ins.items[i]);
        /* the input: already a dequantized output of a node before, or now */
        if (!x || (st = qdq_of(g, x)))
            break;
        float *ws = NULL;
        int64_t N = 0;
        if ((st = weight(g, c, n, &ws, &N)))
            break;
        if (poprt__rw_is(n, "Conv") && n->n_inputs > 2 && n->inputs[2])
            st = bias(g, c, n, x->scale, ws, N);
        poprt__free(ws);
        act *ya = c->outs.items[i] ? act_of(c, c->outs.items[i]) : NULL;
        if (!st && ya)
            st = qdq_of(g, ya);
    }
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"skip_op_names", "min_size", "data", "samples",
                                        "reduce_range", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse(NAME, args, known, &a);
    if (st)
        return st;
    char buf[4096];
    const char *skip[256];
    ctx c = {0};
    c.skip = skip;
    c.n_skip = poprt__arg_list(poprt__pass_arg(&a, "skip_op_names"), buf, sizeof buf, skip, 256);
    int64_t samples, rr = 0;
    if ((st = poprt__pass_arg_int(NAME, &a, "min_size", 16, &c.min_size)) ||
        (st = poprt__pass_arg_int(NAME, &a, "samples", 8, &samples)) ||
        (st = poprt__pass_arg_int(NAME, &a, "reduce_range", 0, &rr)))
        return st;
    if (c.min_size < 1 || samples < 1)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: min_size and samples must be >= 1",
                          NAME);
    if (rr != 0 && rr != 1)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: reduce_range %lld: expected 0 or 1",
                          NAME, (long long)rr);
    c.qmax = rr ? 63 : 127;
    *changed = 0;
    const int64_t opset = poprt__model_opset(m, "");
    if (opset < 10) {
        poprt__log(POPRT_LOG_WARNING,
                   "%s: opset %lld has no QuantizeLinear/DequantizeLinear (10): convert the model "
                   "to opset >= 13 first (--convert_version); nothing quantized",
                   NAME, (long long)opset);
        return POPRT_OK;
    }
    c.per_channel = opset >= 13;
    poprt__graph *g = m->graph;
    for (size_t i = 0; !st && i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (!(poprt__rw_is(n, "Conv") || poprt__rw_is(n, "MatMul") || poprt__rw_is(n, "Gemm")) ||
            !poprt__int8_takes(n, c.skip, c.n_skip, c.min_size))
            continue;
        poprt__tensor *y = out_of(g, n);
        if (poprt__vec_push(&c.nodes, n) || poprt__vec_push(&c.ins, n->inputs[0]) ||
            poprt__vec_push(&c.outs, y) || add_act(&c, n->inputs[0]) || (y && add_act(&c, y)))
            st = poprt__rw_oom();
    }
    poprt__pdata d = {0};
    if (!st && c.nodes.len) {
        const char *data = poprt__pass_arg(&a, "data");
        st = poprt__pdata_get(m, data, (int)samples, &d);
        if (!st)
            st = calibrate(m, &c, &d);
        if (st)
            st = poprt__err_prefix(st, "%s: calibration: ", NAME);
        else
            st = quantize(g, &c);
        if (!st)
            poprt__graph_remove_dead(g);
    }
    if (!st && c.nodes.len)
        *changed = 1;
    if (!st)
        poprt__log(POPRT_LOG_INFO, "%s: %zu Conv/MatMul/Gemm nodes quantized, %zu activations, "
                                   "%s weight scales, %d calibration samples",
                   NAME, c.nodes.len, c.n_acts, c.per_channel ? "per-channel" : "per-tensor",
                   d.n_samples);
    poprt__pdata_free(&d);
    poprt__vec_free(&c.nodes);
    poprt__vec_free(&c.ins);
    poprt__vec_free(&c.outs);
    poprt__free(c.acts);
    return st;
}

const poprt__pass poprt__pass_float_to_int8_static = {
    NAME,
    "static int8 quantization in the QDQ form (ONNX Runtime's quantize_static, QuantFormat.QDQ): "
    "Conv, MatMul and Gemm with a constant float weight read QuantizeLinear -> DequantizeLinear "
    "activations (uint8, ranges calibrated on data=DIR or `samples` random inputs) and "
    "DequantizeLinear int8 weights (per channel from opset 13); args data, samples (default 8), "
    "skip_op_names=[..], min_size (default 16), reduce_range (1: weights in 7 bits)",
    run, 1};
