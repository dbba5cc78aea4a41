/* float_to_fp8: stores the weights of Conv, ConvTranspose, MatMul and Gemm
 * in float8 (F143 = float8e4m3fn, F152 = float8e5m2) with scales, as
 * DequantizeLinear(float8 weight, scale) feeding the original node; in mode
 * fp8 (the default) the float activations read by those nodes also pass
 * through a QuantizeLinear/DequantizeLinear pair with a calibrated
 * per-tensor scale. mode=fp8_weight quantizes the weights only.
 *
 * CPU meaning: float8 is real storage (the saved model's weights take one
 * byte each) and every value the node sees is exactly a scaled float8
 * value, so the numerics are those of an fp8 matmul with wide
 * accumulation. libpoprt computes the products in float32: at session
 * creation the weight DequantizeLinear nodes are constant-folded, and each
 * activation's QuantizeLinear/DequantizeLinear pair becomes one rounding
 * step of a FusedElementwise (lib/compiler/fuse_elementwise.c), so run time
 * is the float32 model's plus one pass over each quantized input.
 *
 * Scales: weights per output channel (amax / fp8 max, times a ratio chosen
 * by the calibration loss), activations per tensor from calibration data
 * (calibration=DIR, docs/calibration.md; random inputs otherwise, with a
 * warning). Loss types: kld (default), mse, mae, snr, cos_dist, and gptq
 * (fp8_weight only: GPTQ rounding of the weights with the Hessian of the
 * calibration inputs, for MatMul, Gemm and 2-D Conv with group 1 and at
 * most 1024 inputs per output; other nodes fall back to mse).
 * num_of_layers_keep_fp16=N keeps in their original precision the N
 * quantized nodes that, quantized alone, move the model's outputs most;
 * target_cosine=C keeps the fewest of them with which every calibration
 * sample's outputs keep cosine >= C (choose_keep). Conv bias correction
 * (bias_correction=1, the default, with calibration data) removes the mean
 * shift the rounding causes per output channel. Weights computed from
 * constants are folded first; weights read in If/Loop/Scan bodies are
 * quantized too (weights only).
 * float8 in QuantizeLinear/DequantizeLinear is ONNX opset 19;
 * libpoprt runs it at any opset, other runtimes need the model converted to
 * opset >= 19. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "passes/util_precision.h"
#include "ir/dtype.h"

#define NAME "float_to_fp8"
#define RESERVOIR 16384
#define GPTQ_MAX_K 1024
#define GPTQ_ROWS 2048 /* activation rows sampled per calibration sample */

typedef struct cfg {
    int weight_only;
    int32_t in_dt, w_dt;
    int fixed_in, fixed_w; /* fixed power-of-two exponents */
    int64_t in_exp, w_exp;
    int bias_corr;
    const char *loss;
    const char *const *skip;
    int n_skip;
} cfg;

typedef struct target {
    poprt__node *n;
    int w_in, w_axis;   /* weight input (-1: none), per-channel axis (-1: per tensor) */
    int n_act, act_in[2];
} target;

/* Calibration results. */
typedef struct act_stat {
    const char *name;
    float amax;
    float *vals;
    int64_t n_vals;
    float scale;
} act_stat;

typedef struct hess {
    const char *node;
    int K;
    double *H; /* K x K */
    int64_t rows;
} hess;

/* Per-channel means of a Conv input (axis 1), for bias correction. */
typedef struct chmean {
    const char *name;
    int64_t C;
    double *sum;
    double *qsum;  /* of the quantized values (mode fp8), else NULL */
    int64_t count; /* values summed per channel */
} chmean;

/* A "calibration" job's progress (poprt_set_progress_callback): steps done
 * of total, a step being one run on one sample or one scale search. */
typedef poprt__cprog cprog;

static void tick(cprog *p, const char *item)
{
    poprt__cprog_tick(p, item);
}

static void progress_begin(cprog *p, uint64_t total)
{
    poprt__cprog_begin(p, total);
}

typedef struct calib {
    cprog pg;
    act_stat *acts;
    int n_acts;
    hess *h;
    int n_h;
    chmean *cm;
    int n_cm;
} calib;

static float fp8_max(int32_t dt) { return dt == POPRT_DTYPE_FLOAT8E5M2 ? 57344.0f : 448.0f; }

static inline float qdq(float x, float s, int32_t dt)
{
    return poprt__f8_to_float(poprt__float_to_f8(x / s, dt, 1), dt) * s;
}

static const float ratios[] = {1.0f, 0.95f, 0.9f, 0.85f, 0.8f, 0.75f, 0.7f, 0.6f, 0.5f};

/* ---- targets --------------------------------------------------------------- */

static int is_f32_act(const poprt__tensor *t)
{
    const float *v;
    int64_t n;
    return t && t->type.kind == POPRT__KIND_TENSOR &&
           (t->type.elem == POPRT_DTYPE_FLOAT) && !poprt__const_f32(t, &v, &n);
}

static int is_weight(const poprt__tensor *t)
{
    const float *v;
    int64_t n;
    return t && poprt__const_f32(t, &v, &n) && poprt__type_is_static(&t->type) &&
           poprt__type_numel(&t->type) == n && n > 1;
}

static int find_targets(poprt__graph *g, const cfg *c, target *out, int max)
{
    int k = 0;
    for (size_t i = 0; i < g->nodes.len && k < max; i++) {
        poprt__node *n = g->nodes.items[i];
        if (n->domain[0] || poprt__list_has(c->skip, c->n_skip, n->name))
            continue;
        target t = {n, -1, -1, 0, {0, 0}};
        const char *op = n->op_type;
        poprt__tensor *a = poprt__node_in(n, 0), *b = poprt__node_in(n, 1);
        if (strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0) {
            if (!is_weight(b))
                continue;
            t.w_in = 1;
            if (strcmp(op, "Conv") == 0)
                t.w_axis = 0;
            else
                t.w_axis = poprt__attr_i(n, "group", 1) == 1 ? 1 : -1;
            if (is_f32_act(a))
                t.act_in[t.n_act++] = 0;
        } else if (strcmp(op, "Gemm") == 0) {
            if (!is_weight(b) || b->type.rank != 2)
                continue;
            t.w_in = 1;
            t.w_axis = poprt__attr_i(n, "transB", 0) ? 0 : 1;
            if (is_f32_act(a))
                t.act_in[t.n_act++] = 0;
        } else if (strcmp(op, "MatMul") == 0) {
            if (is_weight(b) && b->type.rank >= 2) {
                t.w_in = 1;
                t.w_axis = b->type.rank - 1;
                if (is_f32_act(a))
                    t.act_in[t.n_act++] = 0;
            } else if (is_weight(a)) {
                t.w_in = 0;
                t.w_axis = -1;
                if (is_f32_act(b))
                    t.act_in[t.n_act++] = 1;
            } else {
                /* activation x activation (attention): both inputs */
                if (is_f32_act(a))
                    t.act_in[t.n_act++] = 0;
                if (is_f32_act(b))
                    t.act_in[t.n_act++] = 1;
            }
        } else
            continue;
        if (t.w_in < 0 && (c->weight_only || t.n_act == 0))
            continue;
        out[k++] = t;
    }
    return k;
}

/* Is t computed from constants only (ConstantOfShape(shape), Reshape of an
 * initializer, ...)? Such weights become initializers only after constant
 * folding; the depth bound keeps the walk cheap on deep activation chains. */
static int computed_const(const poprt__tensor *t, int depth)
{
    const float *v;
    int64_t n;
    if (!t || poprt__const_f32(t, &v, &n) || t->raw)
        return 1;
    const poprt__node *p = t->producer;
    if (!p || depth == 0 || p->domain[0])
        return 0;
    if (poprt__rw_has_body(p))
        return 0;
    for (int i = 0; i < p->n_inputs; i++)
        if (p->inputs[i] && !computed_const(p->inputs[i], depth - 1))
            return 0;
    return 1;
}

/* Does some Conv/ConvTranspose/Gemm/MatMul read a weight that constant
 * folding would turn into an initializer? */
static int has_computed_weight(const poprt__graph *g)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        const char *op = n->op_type;
        if (n->domain[0] || !(strcmp(op, "Conv") == 0 || strcmp(op, "ConvTranspose") == 0 ||
                              strcmp(op, "Gemm") == 0 || strcmp(op, "MatMul") == 0))
            continue;
        for (int k = 0; k < 2 && k < n->n_inputs; k++) {
            const poprt__tensor *w = n->inputs[k];
            if (w && w->producer && !is_weight(w) && computed_const(w, 8))
                return 1;
        }
    }
    return 0;
}

/* ---- calibration ----------------------------------------------------------- */

static double qdq_loss(const char *loss, const float *v, int64_t n, float s, int32_t dt, float *tmp)
{
    for (int64_t i = 0; i < n; i++)
        tmp[i] = qdq(v[i], s, dt);
    return poprt__metric_loss(loss, v, tmp, n);
}

/* Ratio of amax minimising the loss over the sampled values. */
static float best_ratio(const char *loss, const float *v, int64_t n, float amax, int32_t dt, float *tmp)
{
    float best = 1.0f;
    double bl = INFINITY;
    for (size_t r = 0; r < sizeof ratios / sizeof ratios[0]; r++) {
        double l = qdq_loss(loss, v, n, ratios[r] * amax / fp8_max(dt), dt, tmp);
        if (l < bl) {
            bl = l;
            best = ratios[r];
        }
    }
    return best;
}

/* The element of arr (n of size sz) whose name, the const char * at
 * offset off, is name; NULL when none. */
static void *find_named(void *arr, int n, size_t sz, size_t off, const char *name)
{
    for (int i = 0; i < n; i++) {
        char *e = (char *)arr + (size_t)i * sz;
        if (strcmp(*(const char **)(e + off), name) == 0)
            return e;
    }
    return NULL;
}

static act_stat *find_act(calib *cb, const char *name)
{
    return find_named(cb->acts, cb->n_acts, sizeof *cb->acts, offsetof(act_stat, name), name);
}

static hess *find_hess(calib *cb, const char *node)
{
    return find_named(cb->h, cb->n_h, sizeof *cb->h, offsetof(hess, node), node);
}

static chmean *find_cm(calib *cb, const char *name)
{
    return find_named(cb->cm, cb->n_cm, sizeof *cb->cm, offsetof(chmean, name), name);
}

/* A Conv whose float8 weight error bias correction can cancel: an
 * activation on input 0 and a constant float32 bias, one per output channel. */
static int bias_correctable(const target *t)
{
    const poprt__node *n = t->n;
    const poprt__tensor *w = poprt__node_in(n, 1), *b = poprt__node_in(n, 2);
    const float *v;
    int64_t nb;
    return strcmp(n->op_type, "Conv") == 0 && t->w_in == 1 && t->n_act == 1 &&
           t->act_in[0] == 0 && w->type.rank >= 3 && b && poprt__const_f32(b, &v, &nb) &&
           nb == w->type.dims[0].value;
}

static void calib_free(calib *cb)
{
    for (int i = 0; i < cb->n_acts; i++)
        poprt__free(cb->acts[i].vals);
    for (int i = 0; i < cb->n_h; i++)
        poprt__free(cb->h[i].H);
    for (int i = 0; i < cb->n_cm; i++) {
        poprt__free(cb->cm[i].sum);
        poprt__free(cb->cm[i].qsum);
    }
    poprt__free(cb->cm);
    poprt__free(cb->acts);
    poprt__free(cb->h);
    memset(cb, 0, sizeof *cb);
}

/* Conv geometry for im2col (2-D, NOTSET padding only). */
typedef struct conv_geom {
    int64_t C, H, W, kh, kw, OH, OW, sh, sw, dh, dw, ph, pw;
} conv_geom;

static int conv_geom_of(const poprt__node *n, const poprt__tensor *x, const poprt__tensor *w,
                        const int64_t *xdims, conv_geom *g)
{
    if (w->type.rank != 4 || poprt__attr_i(n, "group", 1) != 1)
        return 0;
    const char *ap = poprt__attr_s(n, "auto_pad", "NOTSET");
    if (strcmp(ap, "NOTSET") != 0 && strcmp(ap, "VALID") != 0)
        return 0;
    (void)x;
    int64_t cnt;
    const int64_t *st = poprt__attr_ints(n, "strides", &cnt);
    const int64_t *dl = poprt__attr_ints(n, "dilations", &cnt);
    const int64_t *pd = poprt__attr_ints(n, "pads", &cnt);
    g->C = xdims[1];
    g->H = xdims[2];
    g->W = xdims[3];
    g->kh = w->type.dims[2].value;
    g->kw = w->type.dims[3].value;
    g->sh = st ? st[0] : 1;
    g->sw = st ? st[1] : 1;
    g->dh = dl ? dl[0] : 1;
    g->dw = dl ? dl[1] : 1;
    g->ph = pd ? pd[0] : 0;
    g->pw = pd ? pd[1] : 0;
    int64_t pe_h = pd ? pd[2] : 0, pe_w = pd ? pd[3] : 0;
    g->OH = (g->H + g->ph + pe_h - g->dh * (g->kh - 1) - 1) / g->sh + 1;
    g->OW = (g->W + g->pw + pe_w - g->dw * (g->kw - 1) - 1) / g->sw + 1;
    return g->OH > 0 && g->OW > 0 && g->C == w->type.dims[1].value;
}

/* Adds sampled activation rows of target t (value x of numel n) to H. */
static void hess_add(hess *h, const target *t, const float *x, int64_t n, const int64_t *xdims,
                     int xrank, double *row)
{
    const poprt__node *nd = t->n;
    int K = h->K;
    int64_t rows;
    conv_geom cg = {0};
    int is_conv = strcmp(nd->op_type, "Conv") == 0;
    if (is_conv) {
        if (xrank != 4 || !conv_geom_of(nd, nd->inputs[0], nd->inputs[1], xdims, &cg))
            return;
        rows = xdims[0] * cg.OH * cg.OW;
    } else
        rows = n / K;
    int transA = strcmp(nd->op_type, "Gemm") == 0 && poprt__attr_i(nd, "transA", 0);
    int64_t step = rows > GPTQ_ROWS ? rows / GPTQ_ROWS : 1;
    for (int64_t r = 0; r < rows; r += step) {
        if (is_conv) {
            int64_t b = r / (cg.OH * cg.OW), p = r % (cg.OH * cg.OW), oy = p / cg.OW, ox = p % cg.OW;
            int k = 0;
            for (int64_t c = 0; c < cg.C; c++)
                for (int64_t i = 0; i < cg.kh; i++)
                    for (int64_t j = 0; j < cg.kw; j++, k++) {
                        int64_t y = oy * cg.sh - cg.ph + i * cg.dh, xx = ox * cg.sw - cg.pw + j * cg.dw;
                        row[k] = (y < 0 || y >= cg.H || xx < 0 || xx >= cg.W)
                                     ? 0.0
                                     : x[((b * cg.C + c) * cg.H + y) * cg.W + xx];
                    }
        } else if (transA) {
            int64_t M = rows; /* A is [K, M] */
            for (int k = 0; k < K; k++)
                row[k] = x[(int64_t)k * M + r];
        } else
            for (int k = 0; k < K; k++)
                row[k] = x[r * K + k];
        for (int i = 0; i < K; i++) {
            if (row[i] == 0)
                continue;
            double *hi = h->H + (int64_t)i * K;
            for (int j = 0; j <= i; j++)
                hi[j] += row[i] * row[j];
        }
        h->rows++;
    }
}

/* Columns (inputs per output) of a weight for GPTQ, 0 when unsupported. */
static int gptq_k(const target *t)
{
    const poprt__tensor *w = t->n->inputs[t->w_in];
    const char *op = t->n->op_type;
    int64_t K = 0;
    if (t->w_in != 1 || t->n_act != 1 || t->act_in[0] != 0)
        return 0;
    if (strcmp(op, "MatMul") == 0 && w->type.rank == 2)
        K = w->type.dims[0].value;
    else if (strcmp(op, "Gemm") == 0)
        K = w->type.dims[poprt__attr_i(t->n, "transB", 0) ? 1 : 0].value;
    else if (strcmp(op, "Conv") == 0 && w->type.rank == 4 && poprt__attr_i(t->n, "group", 1) == 1)
        K = w->type.dims[1].value * w->type.dims[2].value * w->type.dims[3].value;
    return K > 0 && K <= GPTQ_MAX_K ? (int)K : 0;
}

static poprt_status calibrate(poprt__model *m, const cfg *c, const target *tg, int nt,
                              const poprt__pdata *d, calib *cb)
{
    int gptq = strcmp(c->loss, "gptq") == 0;
    int n_names = 0;
    const char **names = poprt__calloc((size_t)nt * 2 + 1, sizeof *names);
    cb->acts = poprt__calloc((size_t)nt * 2 + 1, sizeof *cb->acts);
    cb->h = poprt__calloc((size_t)nt + 1, sizeof *cb->h);
    cb->cm = poprt__calloc((size_t)nt + 1, sizeof *cb->cm);
    if (!names || !cb->acts || !cb->h || !cb->cm) {
        poprt__free(names);
        return poprt__rw_oom();
    }
    for (int i = 0; i < nt; i++) {
        int bc = c->bias_corr && bias_correctable(&tg[i]);
        int need_act = !c->weight_only || (gptq && gptq_k(&tg[i])) || bc;
        for (int a = 0; need_act && a < tg[i].n_act; a++) {
            const char *nm = tg[i].n->inputs[tg[i].act_in[a]]->name;
            if (!poprt__list_has(names, n_names, nm))
                names[n_names++] = nm;
            if (bc && !find_cm(cb, nm))
                cb->cm[cb->n_cm++].name = nm;
            if (!c->weight_only && !find_act(cb, nm))
                cb->acts[cb->n_acts++].name = nm;
        }
        if (gptq && gptq_k(&tg[i])) {
            hess *h = &cb->h[cb->n_h++];
            h->node = tg[i].n->name;
            h->K = gptq_k(&tg[i]);
            h->H = poprt__calloc((size_t)h->K * (size_t)h->K, sizeof(double));
            if (!h->H) {
                poprt__free(names);
                return poprt__rw_oom();
            }
        }
    }
    if (n_names == 0) {
        poprt__free(names);
        return POPRT_OK;
    }
    poprt__prunner *r = NULL; /* prunner_create leaves it unset when it fails */
    poprt_status st = poprt__prunner_create(m, n_names, names, d, &r);
    double *row = poprt__malloc((GPTQ_MAX_K + 1) * sizeof(double));
    if (!st && !row)
        st = poprt__rw_oom();
    int64_t per = RESERVOIR / (d->n_samples > 0 ? d->n_samples : 1);
    int second = !c->weight_only && cb->n_cm; /* the bias correction's run */
    progress_begin(&cb->pg, (uint64_t)d->n_samples * (second ? 2u : 1u) + (uint64_t)cb->n_acts);
    for (int s = 0; !st && s < d->n_samples; s++) {
        const float *const *y;
        const int64_t *ny;
        if ((st = poprt__prunner_run(r, d, s, &y, &ny)))
            break;
        tick(&cb->pg, "sample");
        for (int i = 0; i < n_names; i++) {
            if (ny[i] <= 0)
                continue;
            act_stat *as = find_act(cb, names[i]);
            if (as) {
                for (int64_t k = 0; k < ny[i]; k++)
                    if (isfinite(y[i][k]) && fabsf(y[i][k]) > as->amax)
                        as->amax = fabsf(y[i][k]);
                int64_t step = ny[i] > per ? ny[i] / per : 1;
                int64_t add = (ny[i] + step - 1) / step;
                float *v = poprt__realloc(as->vals, (size_t)(as->n_vals + add) * sizeof(float));
                if (!v) {
                    st = poprt__rw_oom();
                    break;
                }
                as->vals = v;
                for (int64_t k = 0; k < ny[i]; k += step)
                    v[as->n_vals++] = y[i][k];
            }
            chmean *cm = find_cm(cb, names[i]);
            int xr;
            const int64_t *xd = cm ? poprt__prunner_dims(r, i, &xr) : NULL;
            if (cm && xr >= 3 && (!cm->sum || cm->C == xd[1])) {
                int64_t inner = 1;
                for (int k = 2; k < xr; k++)
                    inner *= xd[k];
                if (!cm->sum) {
                    cm->C = xd[1];
                    cm->sum = poprt__calloc((size_t)cm->C + 1, sizeof(double));
                    if (!cm->sum) {
                        st = poprt__rw_oom();
                        break;
                    }
                }
                for (int64_t k = 0; k < ny[i]; k++)
                    if (isfinite(y[i][k]))
                        cm->sum[(k / inner) % cm->C] += y[i][k];
                cm->count += ny[i] / cm->C;
            }
            for (int t = 0; t < nt; t++) {
                hess *h = gptq ? find_hess(cb, tg[t].n->name) : NULL;
                if (!h || strcmp(tg[t].n->inputs[0]->name, names[i]) != 0)
                    continue;
                int xr;
                const int64_t *xd = poprt__prunner_dims(r, i, &xr);
                if (xr > 0)
                    hess_add(h, &tg[t], y[i], ny[i], xd, xr, row);
            }
        }
    }
    /* activation scales */
    float *tmp = NULL;
    for (int i = 0; !st && i < cb->n_acts; i++) {
        act_stat *as = &cb->acts[i];
        tick(&cb->pg, "scale");
        if (c->fixed_in) {
            as->scale = (float)ldexp(1.0, (int)c->in_exp);
            continue;
        }
        if (as->amax == 0 || !as->n_vals) {
            as->scale = 1.0f;
            continue;
        }
        float *t2 = poprt__realloc(tmp, (size_t)as->n_vals * sizeof(float));
        if (!t2) {
            st = poprt__rw_oom();
            break;
        }
        tmp = t2;
        const char *loss = gptq ? "mse" : c->loss;
        as->scale = best_ratio(loss, as->vals, as->n_vals, as->amax, c->in_dt, tmp) * as->amax /
                    fp8_max(c->in_dt);
    }
    poprt__free(tmp);
    /* mode fp8 quantizes the Conv inputs too, which shifts their means where
     * the scale clips or the values are skewed: a second run over the
     * samples gives the means of the quantized inputs for bias correction */
    for (int s = 0; !st && second && s < d->n_samples; s++) {
        const float *const *y;
        const int64_t *ny;
        if ((st = poprt__prunner_run(r, d, s, &y, &ny)))
            break;
        tick(&cb->pg, "sample");
        for (int i = 0; i < n_names && !st; i++) {
            chmean *cm = find_cm(cb, names[i]);
            act_stat *as = find_act(cb, names[i]);
            if (!cm || !cm->sum || !as || ny[i] <= 0 || ny[i] % cm->C)
                continue;
            if (!cm->qsum && !(cm->qsum = poprt__calloc((size_t)cm->C + 1, sizeof(double)))) {
                st = poprt__rw_oom();
                break;
            }
            int xr;
            const int64_t *xd = poprt__prunner_dims(r, i, &xr);
            int64_t inner = 1;
            for (int k = 2; k < xr; k++)
                inner *= xd[k];
            for (int64_t k = 0; k < ny[i]; k++)
                if (isfinite(y[i][k]))
                    cm->qsum[(k / inner) % cm->C] += qdq(y[i][k], as->scale, c->in_dt);
        }
    }
    poprt__free(row);
    poprt__prunner_free(r);
    poprt__free(names);
    return st;
}

/* ---- weights ---------------------------------------------------------------- */

/* Cholesky of the K x K symmetric matrix A (lower part used) in place: A = L L^T. */
static int cholesky(double *A, int K)
{
    for (int j = 0; j < K; j++) {
        double s = A[(int64_t)j * K + j];
        for (int k = 0; k < j; k++)
            s -= A[(int64_t)j * K + k] * A[(int64_t)j * K + k];
        if (!(s > 0))
            return 0;
        double d = sqrt(s);
        A[(int64_t)j * K + j] = d;
        for (int i = j + 1; i < K; i++) {
            double v = A[(int64_t)i * K + j];
            for (int k = 0; k < j; k++)
                v -= A[(int64_t)i * K + k] * A[(int64_t)j * K + k];
            A[(int64_t)i * K + j] = v / d;
        }
        for (int i = 0; i < j; i++)
            A[(int64_t)i * K + j] = 0;
    }
    return 1;
}

/* GPTQ on W (rows x K, row-major, modified) with per-row scales; writes the
 * float8 codes. Returns 0 when H is not usable. */
static int gptq_rows(double *H, int K, float *W, int64_t rows, const float *scale, int32_t dt,
                     uint8_t *codes, int64_t (*idx)(int64_t r, int64_t k, void *), void *ictx)
{
    double mean = 0;
    for (int i = 0; i < K; i++) {
        for (int j = i + 1; j < K; j++)
            H[(int64_t)i * K + j] = H[(int64_t)j * K + i]; /* symmetrise */
        mean += H[(int64_t)i * K + i];
    }
    mean /= K;
    if (!(mean > 0))
        return 0;
    for (int i = 0; i < K; i++)
        H[(int64_t)i * K + i] += H[(int64_t)i * K + i] == 0 ? 1.0 : 0.01 * mean;
    if (!cholesky(H, K))
        return 0;
    /* H^-1 = L^-T L^-1: invert L in place (lower triangular) */
    for (int j = 0; j < K; j++) {
        H[(int64_t)j * K + j] = 1.0 / H[(int64_t)j * K + j];
        for (int i = j + 1; i < K; i++) {
            double s = 0;
            for (int k = j; k < i; k++)
                s -= H[(int64_t)i * K + k] * H[(int64_t)k * K + j];
            H[(int64_t)i * K + j] = s / H[(int64_t)i * K + i];
        }
    }
    double *Hi = poprt__calloc((size_t)K * (size_t)K, sizeof(double));
    if (!Hi)
        return 0;
    for (int i = 0; i < K; i++)
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int k = i; k < K; k++)
                s += H[(int64_t)k * K + i] * H[(int64_t)k * K + j];
            Hi[(int64_t)i * K + j] = Hi[(int64_t)j * K + i] = s;
        }
    /* U upper with H^-1 = U^T U: U = chol(H^-1)^T */
    if (!cholesky(Hi, K)) {
        poprt__free(Hi);
        return 0;
    }
    for (int64_t r = 0; r < rows; r++) {
        float *w = W + r * K;
        for (int j = 0; j < K; j++) {
            float q = qdq(w[j], scale[r], dt);
            codes[idx(r, j, ictx)] = poprt__float_to_f8(w[j] / scale[r], dt, 1);
            double e = ((double)w[j] - q) / Hi[(int64_t)j * K + j];
            for (int k = j + 1; k < K; k++)
                w[k] -= (float)(e * Hi[(int64_t)k * K + j]);
        }
    }
    poprt__free(Hi);
    return 1;
}

typedef struct wlayout {
    int64_t outer, len, inner; /* around the channel axis */
    int transposed;            /* weight [K, N]: rows are columns */
} wlayout;

static int64_t idx_plain(int64_t r, int64_t k, void *c)
{
    const wlayout *l = c;
    return l->transposed ? k * l->len + r : r * (l->inner) + k;
}

/* Quantizes weight t (float32 constant) of target tg: codes and scales. */
static poprt_status quant_weight(const cfg *c, calib *cb, const target *tg, const float *w,
                                 int64_t n, uint8_t *codes, float *scales, int64_t *n_scales)
{
    const poprt__tensor *t = tg->n->inputs[tg->w_in];
    int rank = t->type.rank;
    wlayout l = {1, 1, 1, 0};
    if (tg->w_axis >= 0) {
        for (int k = 0; k < tg->w_axis; k++)
            l.outer *= t->type.dims[k].value;
        l.len = t->type.dims[tg->w_axis].value;
        for (int k = tg->w_axis + 1; k < rank; k++)
            l.inner *= t->type.dims[k].value;
    } else
        l.inner = n;
    *n_scales = l.len;
    if (c->fixed_w) {
        *n_scales = 1;
        scales[0] = (float)ldexp(1.0, (int)c->w_exp);
        for (int64_t i = 0; i < n; i++)
            codes[i] = poprt__float_to_f8(w[i] / scales[0], c->w_dt, 1);
        return POPRT_OK;
    }
    float *amax = poprt__calloc((size_t)l.len, sizeof(float));
    float *tmp = poprt__malloc((size_t)n * sizeof(float));
    if (!amax || !tmp) {
        poprt__free(amax);
        poprt__free(tmp);
        return poprt__rw_oom();
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t ch = (i / l.inner) % l.len;
        float a = fabsf(w[i]);
        if (isfinite(a) && a > amax[ch])
            amax[ch] = a;
    }
    const float fm = fp8_max(c->w_dt);
    hess *h = strcmp(c->loss, "gptq") == 0 ? find_hess(cb, tg->n->name) : NULL;
    if (h && h->rows > 0) {
        /* rows = output channels, K contiguous inputs */
        for (int64_t ch = 0; ch < l.len; ch++)
            scales[ch] = amax[ch] > 0 ? amax[ch] / fm : 1.0f;
        wlayout gl = l;
        float *W = tmp;
        if (tg->w_axis == rank - 1 && rank == 2) { /* [K, N]: transpose */
            gl.transposed = 1;
            for (int64_t k = 0; k < l.outer; k++)
                for (int64_t r = 0; r < l.len; r++)
                    W[r * l.outer + k] = w[k * l.len + r];
        } else
            memcpy(W, w, (size_t)n * sizeof(float));
        /* GPTQ factorises H in place: work on a copy, H serves later builds */
        double *Hc = poprt__malloc((size_t)h->K * (size_t)h->K * sizeof(double));
        int ok = Hc != NULL;
        if (Hc) {
            memcpy(Hc, h->H, (size_t)h->K * (size_t)h->K * sizeof(double));
            ok = gptq_rows(Hc, h->K, W, l.len, scales, c->w_dt, codes, idx_plain, &gl);
            poprt__free(Hc);
        }
        if (ok) {
            poprt__free(amax);
            poprt__free(tmp);
            return POPRT_OK;
        }
        poprt__log(POPRT_LOG_WARNING, NAME ": node '%s': GPTQ failed (singular Hessian), using mse",
                   tg->n->name);
        /* amax still holds the channel maxima; tmp is scratch again */
    }
    /* a histogram distance ignores the few large weights that matter most:
     * kld (and gptq's fallback) choose weight scales by mse */
    const char *loss = strcmp(c->loss, "gptq") == 0 || strcmp(c->loss, "kld") == 0 ? "mse" : c->loss;
    float best = 1.0f;
    double bl = INFINITY;
    for (size_t r = 0; r < sizeof ratios / sizeof ratios[0]; r++) {
        for (int64_t i = 0; i < n; i++) {
            int64_t ch = (i / l.inner) % l.len;
            float s = amax[ch] > 0 ? ratios[r] * amax[ch] / fm : 1.0f;
            tmp[i] = qdq(w[i], s, c->w_dt);
        }
        double lo = poprt__metric_loss(loss, w, tmp, n);
        if (lo < bl) {
            bl = lo;
            best = ratios[r];
        }
    }
    for (int64_t ch = 0; ch < l.len; ch++)
        scales[ch] = amax[ch] > 0 ? best * amax[ch] / fm : 1.0f;
    for (int64_t i = 0; i < n; i++)
        codes[i] = poprt__float_to_f8(w[i] / scales[(i / l.inner) % l.len], c->w_dt, 1);
    poprt__free(amax);
    poprt__free(tmp);
    return POPRT_OK;
}

/* ---- rewrite ---------------------------------------------------------------- */

/* Bias correction (Nagel et al., "Data-free quantization", 2019): rounding
 * the weights (and, mode fp8, the input) shifts the mean of each output
 * channel by sum(Wq * E[q(x)] - W * E[x]), which matters where the filter's
 * response to its input's mean is larger than to its variation (depthwise
 * 3x3 filters after a Hardswish, in ppocr). The calibration data give the
 * means per input channel; the shift is taken out of the Conv's bias
 * (border pixels, where padding zeros replace the mean, are ignored). */
static poprt_status correct_bias(poprt__model *m, calib *cb, poprt__node *n, const float *w,
                                 const uint8_t *codes, const float *scales, int64_t ns,
                                 int32_t w_dt)
{
    chmean *cm = find_cm(cb, n->inputs[0]->name);
    const poprt__tensor *wt = n->inputs[1], *bt = n->inputs[2];
    if (!cm || !cm->sum || cm->count <= 0)
        return POPRT_OK;
    int64_t M = wt->type.dims[0].value, Cg = wt->type.dims[1].value, K = 1;
    for (int k = 2; k < wt->type.rank; k++)
        K *= wt->type.dims[k].value;
    int64_t groups = poprt__attr_i(n, "group", 1);
    if (groups <= 0 || M % groups || Cg * groups != cm->C)
        return POPRT_OK;
    const float *b;
    int64_t nb;
    poprt__const_f32(bt, &b, &nb);
    float *nbias = poprt__malloc((size_t)M * sizeof(float));
    if (!nbias)
        return poprt__rw_oom();
    for (int64_t o = 0; o < M; o++) {
        int64_t g = o / (M / groups);
        float s = scales[ns > 1 ? o : 0];
        double shift = 0;
        for (int64_t ci = 0; ci < Cg; ci++) {
            double mean = cm->sum[g * Cg + ci] / (double)cm->count;
            double qmean = cm->qsum ? cm->qsum[g * Cg + ci] / (double)cm->count : mean;
            for (int64_t k = 0; k < K; k++) {
                int64_t idx = (o * Cg + ci) * K + k;
                shift += (double)poprt__f8_to_float(codes[idx], w_dt) * s * qmean - w[idx] * mean;
            }
        }
        nbias[o] = (float)(b[o] - shift);
    }
    int64_t dims[1] = {M};
    const char *name = poprt__arena_printf(&m->arena, "%s_bias_corrected", n->name);
    poprt__tensor *t = name ? poprt__graph_add_const(n->graph, name, POPRT_DTYPE_FLOAT, 1, dims,
                                                     nbias, (size_t)M * sizeof(float))
                            : NULL;
    poprt__free(nbias);
    if (!t)
        return poprt__rw_oom();
    poprt__node_set_input(n, 2, t);
    return POPRT_OK;
}

/* Rewrites the targets of graph g but those whose keep[] flag is set (in
 * find_targets' order; keep NULL: none); *n_done counts them. */
static poprt_status build_graph(poprt__model *m, poprt__graph *g, const cfg *c, calib *cb,
                                const unsigned char *keep, int *n_done)
{
    int cap = (int)g->nodes.len + 1;
    target *tg = poprt__calloc((size_t)cap, sizeof *tg);
    if (!tg)
        return poprt__rw_oom();
    int nt = find_targets(g, c, tg, cap);
    poprt__map wmap = {0}, amap = {0};
    poprt_status st = POPRT_OK;
    const int64_t zero_dims[1] = {1};
    const uint8_t zero8 = 0;
    for (int i = 0; i < nt && !st; i++) {
        poprt__node *n = tg[i].n;
        if (keep && keep[i])
            continue;
        if (tg[i].w_in >= 0) {
            poprt__tensor *w = n->inputs[tg[i].w_in];
            poprt__tensor *dq = poprt__map_get(&wmap, w->name);
            if (!dq) {
                const float *v;
                int64_t nv;
                poprt__const_f32(w, &v, &nv);
                uint8_t *codes = poprt__malloc((size_t)nv);
                float *scales = poprt__malloc((size_t)nv * sizeof(float));
                int64_t ns = 0;
                st = codes && scales ? quant_weight(c, cb, &tg[i], v, nv, codes, scales, &ns)
                                     : poprt__rw_oom();
                int64_t dims[POPRT__MAX_RANK];
                poprt__rw_dims(w, dims);
                const char *b8 = poprt__arena_printf(&m->arena, "%s_fp8", w->name);
                const char *bs = poprt__arena_printf(&m->arena, "%s_fp8_scale", w->name);
                const char *bo = poprt__arena_printf(&m->arena, "%s_dq", w->name);
                poprt__tensor *q8 = st || !b8 ? NULL
                                              : poprt__graph_add_const(g, b8, c->w_dt, w->type.rank,
                                                                       dims, codes, (size_t)nv);
                poprt__tensor *sc = !q8 || !bs ? NULL
                                               : poprt__graph_add_const(g, bs, POPRT_DTYPE_FLOAT,
                                                                        ns > 1 ? 1 : 0, &ns, scales,
                                                                        (size_t)ns * sizeof(float));
                poprt__node *d =
                    sc && bo ? poprt__rw_node(g, "DequantizeLinear", "", NULL, 2, 1) : NULL;
                dq = d ? poprt__graph_new_tensor(g, bo) : NULL;
                if (!st && !dq)
                    st = poprt__rw_oom();
                if (!st) {
                    poprt__node_set_input(d, 0, q8);
                    poprt__node_set_input(d, 1, sc);
                    d->outputs[0] = dq;
                    if (ns > 1)
                        st = poprt__rw_attr_i(d, "axis", tg[i].w_axis);
                }
                if (!st && poprt__map_put(&wmap, w->name, dq))
                    st = poprt__rw_oom();
                if (!st && c->bias_corr && bias_correctable(&tg[i]))
                    st = correct_bias(m, cb, n, v, codes, scales, ns, c->w_dt);
                poprt__free(codes);
                poprt__free(scales);
            }
            if (!st)
                poprt__node_set_input(n, tg[i].w_in, dq);
        }
        for (int a = 0; a < tg[i].n_act && !st && !c->weight_only; a++) {
            poprt__tensor *x = n->inputs[tg[i].act_in[a]];
            poprt__tensor *dq = poprt__map_get(&amap, x->name);
            if (!dq) {
                act_stat *as = find_act(cb, x->name);
                float s = as ? as->scale : 1.0f;
                poprt__tensor *sc = poprt__graph_add_const(g, poprt__arena_printf(&m->arena, "%s_scale", x->name),
                                                           POPRT_DTYPE_FLOAT, 0, zero_dims, &s, sizeof s);
                poprt__tensor *zp = poprt__graph_add_const(g, poprt__arena_printf(&m->arena, "%s_zp", x->name),
                                                           c->in_dt, 0, zero_dims, &zero8, 1);
                poprt__node *q = poprt__rw_node(g, "QuantizeLinear", "", NULL, 3, 1);
                poprt__node *d = poprt__rw_node(g, "DequantizeLinear", "", NULL, 2, 1);
                poprt__tensor *qt = poprt__graph_new_tensor(g, poprt__arena_printf(&m->arena, "%s_q", x->name));
                dq = poprt__graph_new_tensor(g, poprt__arena_printf(&m->arena, "%s_dq", x->name));
                if (!sc || !zp || !q || !d || !qt || !dq) {
                    st = poprt__rw_oom();
                    break;
                }
                poprt__node_set_input(q, 0, x);
                poprt__node_set_input(q, 1, sc);
                poprt__node_set_input(q, 2, zp);
                q->outputs[0] = qt;
                poprt__node_set_input(d, 0, qt);
                poprt__node_set_input(d, 1, sc);
                d->outputs[0] = dq;
                if (poprt__map_put(&amap, x->name, dq))
                    st = poprt__rw_oom();
            }
            if (!st)
                poprt__node_set_input(n, tg[i].act_in[a], dq);
        }
        (*n_done)++;
    }
    if (!st)
        poprt__graph_remove_dead(g);
    poprt__map_free(&wmap);
    poprt__map_free(&amap);
    poprt__free(tg);
    return st;
}

/* fn and its context, and how deep the walk is. */
typedef struct bodies {
    poprt__rw_body_fn fn;
    void *ctx;
    int depth;
} bodies;

static poprt_status visit_bodies(poprt__graph *g, bodies *b);

static poprt_status visit_body(poprt__graph *body, void *ctx)
{
    bodies *b = ctx;
    if (b->depth >= 64)
        return poprt__err(POPRT_STATUS_UNSUPPORTED, NAME ": subgraphs nested too deeply");
    poprt_status st = b->fn(body, b->ctx);
    if (!st) {
        b->depth++;
        st = visit_bodies(body, b);
        b->depth--;
    }
    return st;
}

static poprt_status visit_bodies(poprt__graph *g, bodies *b)
{
    poprt_status st = POPRT_OK;
    for (size_t i = 0; i < g->nodes.len && !st; i++)
        st = poprt__rw_each_body(g->nodes.items[i], visit_body, b);
    return st;
}

/* Calls fn on every If/Loop/Scan body under g (nested too), outermost first. */
static poprt_status each_body(poprt__graph *g, poprt__rw_body_fn fn, void *ctx)
{
    bodies b = {fn, ctx, 0};
    return visit_bodies(g, &b);
}

typedef struct body_ctx {
    poprt__model *m;
    const cfg *c;
    calib *cb;
    int count; /* targets found (count_body) or rewritten (build_body) */
} body_ctx;

static poprt_status count_body(poprt__graph *body, void *ctx)
{
    body_ctx *x = ctx;
    int cap = (int)body->nodes.len + 1;
    target *tg = poprt__calloc((size_t)cap, sizeof *tg);
    if (!tg)
        return poprt__rw_oom();
    x->count += find_targets(body, x->c, tg, cap);
    poprt__free(tg);
    return POPRT_OK;
}

static poprt_status build_body(poprt__graph *body, void *ctx)
{
    body_ctx *x = ctx;
    return build_graph(x->m, body, x->c, x->cb, NULL, &x->count);
}

/* The main graph as configured; then If/Loop/Scan bodies, whose weights
 * (outer-scope initializers read inside the body) are stored in float8 with
 * a DequantizeLinear inside the body: weights only, because calibration
 * fetches main-graph tensors only, so body activations have no scales (and
 * no channel means for bias correction). */
static poprt_status build(poprt__model *m, const cfg *c, calib *cb, const unsigned char *keep,
                          int *n_done)
{
    *n_done = 0;
    poprt_status st = build_graph(m, m->graph, c, cb, keep, n_done);
    cfg wc = *c;
    wc.weight_only = 1;
    wc.bias_corr = 0;
    body_ctx x = {m, &wc, cb, 0};
    if (!st)
        st = each_body(m->graph, build_body, &x);
    *n_done += x.count;
    return st;
}

static int32_t parse_fmt(const char *s)
{
    if (strcmp(s, "F143") == 0)
        return POPRT_DTYPE_FLOAT8E4M3FN;
    if (strcmp(s, "F152") == 0)
        return POPRT_DTYPE_FLOAT8E5M2;
    return 0;
}

static poprt_status parse_scale(const char *s, int *fixed, int64_t *exp)
{
    *fixed = 0;
    if (!s || strcmp(s, "auto") == 0)
        return POPRT_OK;
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < -60 || v > 60)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "fp8 scale '%s' is neither 'auto' nor an integer exponent", s);
    *fixed = 1;
    *exp = v;
    return POPRT_OK;
}

/* float8 in QuantizeLinear/DequantizeLinear is opset 19: converts the
 * model's opset when convert_version can (tried on a copy first), else
 * keeps it (libpoprt accepts float8 from opset 10, where the two ops start). */
static poprt_status raise_opset(poprt__model *m)
{
    int64_t from = poprt__model_opset(m, "");
    poprt__model *trial;
    poprt_status st = poprt__model_clone(m, &trial);
    if (st)
        return st;
    int ch = 0;
    st = poprt__pass_convert_version.run(trial, "version=19", &ch);
    if (!st)
        st = poprt__model_check(trial);
    poprt__model_free(trial);
    if (!st) {
        st = poprt__pass_convert_version.run(m, "version=19", &ch);
        if (!st)
            st = poprt__model_check(m);
        if (!st)
            poprt__log(POPRT_LOG_INFO, NAME ": converted the model from opset %lld to 19 for float8 "
                       "QuantizeLinear/DequantizeLinear", (long long)from);
        return st;
    }
    poprt__err_clear();
    if (from < 10)
        return poprt__err(POPRT_STATUS_UNSUPPORTED,
                          "the model imports opset %lld, which has no "
                          "DequantizeLinear, and cannot be converted to opset 19",
                          (long long)from);
    return POPRT_OK;
}

/* ---- layers kept in their original precision ----------------------------- */

/* The float graph outputs of a model on every sample: v[s * n + k] with
 * nv[s * n + k] values (-1: not a float output). */
/* Converts a copy of m, leaving the targets flagged in keep alone, and
 * scores the copy's outputs against ref (run_outputs). */
static poprt_status trial(const poprt__model *m, const cfg *c, calib *cb,
                          const unsigned char *keep, const poprt__pdata *d,
                          const poprt__outset *ref, double *mean_dist, double *worst)
{
    poprt__model *t = NULL;
    int done;
    poprt_status st = poprt__model_clone(m, &t);
    if (!st)
        st = build(t, c, cb, keep, &done);
    if (!st)
        st = poprt__model_check(t);
    if (!st)
        st = poprt__run_outputs(t, NULL, d, NULL, ref, mean_dist, worst, &cb->pg);
    poprt__model_free(t);
    return st;
}

typedef struct trial_ctx {
    poprt__model *m;
    const cfg *c;
    calib *cb;
    const poprt__pdata *d;
} trial_ctx;

static poprt_status trial_fn(void *ctx, const unsigned char *keep, const poprt__outset *ref,
                             double *mean_dist, double *worst)
{
    trial_ctx *t = ctx;
    return trial(t->m, t->c, t->cb, keep, t->d, ref, mean_dist, worst);
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"mode", "fp8_params", "skip_op_names", "calibration",
                                        "samples", "loss", "num_of_layers_keep_fp16",
                                        "target_cosine", "bias_correction", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse(NAME, args, known, &a);
    if (st)
        return st;
    *changed = 0;
    cfg c = {0};
    const char *mode = poprt__pass_arg(&a, "mode");
    if (mode && strcmp(mode, "fp8") != 0 && strcmp(mode, "fp8_weight") != 0)
        return poprt__err(POPRT_STATUS_INVALID_OPTION, "mode '%s' is not fp8 or fp8_weight", mode);
    c.weight_only = mode && strcmp(mode, "fp8_weight") == 0;
    c.loss = poprt__pass_arg(&a, "loss") ? poprt__pass_arg(&a, "loss") : "kld";
    if (strcmp(c.loss, "gptq") == 0 ? !c.weight_only : !poprt__metric_known(c.loss))
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "loss '%s' (mse, mae, snr, kld, cos_dist; gptq with mode=fp8_weight)",
                          c.loss);
    char pbuf[256], sbuf[4096];
    const char *p[4] = {"F143", "F143", "auto", "auto"};
    const char *pp[4];
    int np = poprt__arg_list(poprt__pass_arg(&a, "fp8_params"), pbuf, sizeof pbuf, pp, 4);
    for (int i = 0; i < np; i++)
        p[i] = strcmp(pp[i], "-1") == 0 ? "auto" : pp[i]; /* the reference's default */
    c.in_dt = parse_fmt(p[0]);
    c.w_dt = parse_fmt(p[1]);
    if (!c.in_dt || !c.w_dt)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "fp8 formats must be F143 or F152 (got %s, %s)", p[0], p[1]);
    if ((st = parse_scale(p[2], &c.fixed_in, &c.in_exp)) || (st = parse_scale(p[3], &c.fixed_w, &c.w_exp)))
        return st;
    const char *skip[256];
    c.skip = skip;
    c.n_skip = poprt__arg_list(poprt__pass_arg(&a, "skip_op_names"), sbuf, sizeof sbuf, skip, 256);
    int64_t samples, keep_n, bias_corr;
    if ((st = poprt__pass_arg_int(NAME, &a, "samples", 0, &samples)) ||
        (st = poprt__pass_arg_int(NAME, &a, "num_of_layers_keep_fp16", 0, &keep_n)) ||
        (st = poprt__pass_arg_int(NAME, &a, "bias_correction", 1, &bias_corr)))
        return st;
    c.bias_corr = bias_corr != 0;
    double min_cos;
    if ((st = poprt__pass_arg_float(NAME, &a, "target_cosine", 0, &min_cos)))
        return st;
    if (poprt__pass_arg(&a, "target_cosine") && !(min_cos > 0 && min_cos <= 1))
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          NAME ": target_cosine %g is not in (0, 1]", min_cos);
    if (keep_n > 0 && min_cos > 0)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          NAME ": give num_of_layers_keep_fp16 or target_cosine, not both");

    if (has_computed_weight(m->graph)) {
        /* weights made by nodes (ConstantOfShape, Reshape of an initializer, ...)
         * are quantized once folded into initializers */
        int folded = 0;
        if ((st = poprt__pass_constant_folding.run(m, NULL, &folded)))
            return st;
        *changed |= folded;
        if (folded)
            poprt__log(POPRT_LOG_INFO, NAME ": folded constants to expose computed weights");
    }
    int cap = (int)m->graph->nodes.len + 1;
    target *tg = poprt__calloc((size_t)cap, sizeof *tg);
    if (!tg)
        return poprt__rw_oom();
    int nt = find_targets(m->graph, &c, tg, cap);
    cfg wc = c;
    wc.weight_only = 1;
    body_ctx bx = {m, &wc, NULL, 0};
    if ((st = each_body(m->graph, count_body, &bx))) {
        poprt__free(tg);
        return st;
    }
    if (nt == 0 && bx.count == 0) {
        poprt__free(tg);
        poprt__log(POPRT_LOG_INFO, NAME ": no Conv/MatMul/Gemm node to quantize");
        return POPRT_OK;
    }
    if (0) {
    done_early:
        poprt__free(tg);
        return st;
    }
    int64_t opset0 = poprt__model_opset(m, "");
    if (opset0 < 19 && (st = raise_opset(m)))
        goto done_early;
    *changed |= poprt__model_opset(m, "") != opset0;
    const char *dir = poprt__pass_arg(&a, "calibration");
    /* fp8_weight without data: means of random inputs say nothing about real ones */
    if (c.weight_only && !(dir && *dir))
        c.bias_corr = 0;
    int need_data = nt > 0 && (!c.weight_only || strcmp(c.loss, "gptq") == 0 || keep_n > 0 ||
                               min_cos > 0 || c.bias_corr);
    poprt__pdata d = {0};
    calib cb = {0};
    if (!st && need_data) {
        if (!dir || !*dir)
            poprt__log(POPRT_LOG_WARNING,
                       NAME ": no calibration data (calibration=DIR): calibrating on random inputs");
        st = poprt__pdata_get(m, dir, samples > 0 ? (int)samples : (dir ? 0 : 4), &d);
        if (!st)
            st = calibrate(m, &c, tg, nt, &d, &cb);
    }
    unsigned char *keep = poprt__calloc((size_t)nt + 1, 1);
    if (!st && !keep)
        st = poprt__rw_oom();
    if (!st && nt > 0 && (keep_n > 0 || min_cos > 0))
    {
        const char **names = poprt__calloc((size_t)nt + 1, sizeof *names);
        trial_ctx tc = {m, &c, &cb, &d};
        for (int i = 0; names && i < nt; i++)
            names[i] = tg[i].n->name;
        st = names ? poprt__choose_keep(NAME, "quantized", "unquantized", m, NULL, names, nt, &d, keep_n,
                                        min_cos, trial_fn, &tc, &cb.pg, keep)
                   : poprt__rw_oom();
        poprt__free(names);
    }
    int done = 0;
    if (!st)
        st = build(m, &c, &cb, keep, &done);
    *changed |= done > 0;
    if (!st && done && poprt__model_opset(m, "") < 19)
        poprt__log(POPRT_LOG_WARNING,
                   NAME ": float8 QuantizeLinear/DequantizeLinear needs opset 19 in ONNX; the model "
                   "imports opset %lld (libpoprt runs it; convert the opset for other runtimes)",
                   (long long)poprt__model_opset(m, ""));
    if (!st)
        poprt__log(POPRT_LOG_INFO, NAME ": %d nodes quantized to %s (%s)", done,
                   c.weight_only ? "fp8 weights" : "fp8 weights and inputs", c.loss);
    if (!st && bx.count)
        poprt__log(POPRT_LOG_INFO, NAME ": %d of them in If/Loop/Scan bodies (weights only)",
                   bx.count);
    poprt__free(keep);
    poprt__free(tg);
    calib_free(&cb);
    poprt__pdata_free(&d);
    return st;
}

const poprt__pass poprt__pass_float_to_fp8 = {
    NAME,
    "store Conv/MatMul/Gemm weights (and, mode=fp8, their inputs) in float8 F143/F152 with "
    "calibrated scales; args mode, fp8_params, skip_op_names, calibration=DIR, loss, "
    "num_of_layers_keep_fp16, bias_correction",
    run, 1};
