/* Reference kernels of the 'misc' family. */
#include <math.h>
#include <string.h>
#include "core/regex.h"
#include "kernels/ref/misc.h"
#include "kernels/ref/util.h"

/* ==== Recurrent ops: RNN, GRU, LSTM =========================================
 * Per direction: X·W^T (+ biases) for all steps at once, then per step
 * H·R^T and the gate math; the products are dot products over contiguous
 * rows of W and R, so the weights are used as stored.
 * With sequence_lens, batch entry b runs only its first len[b] steps (the
 * reverse direction starts at len[b]-1); Y is zero past them and Y_h/Y_c
 * hold the state after the last step run. */

enum {
    ACT_SIGMOID,
    ACT_TANH,
    ACT_RELU,
    ACT_AFFINE,
    ACT_LEAKY_RELU,
    ACT_THRESHOLDED_RELU,
    ACT_SCALED_TANH,
    ACT_HARD_SIGMOID,
    ACT_ELU,
    ACT_SOFTSIGN,
    ACT_SOFTPLUS
};

typedef struct {
    int kind;
    float alpha, beta;
} rnn_act;

static const struct {
    const char *name;
    int kind, uses; /* uses: 1 alpha, 2 beta */
    float alpha, beta;
} act_table[] = {
    {"sigmoid", ACT_SIGMOID, 0, 0.f, 0.f},
    {"tanh", ACT_TANH, 0, 0.f, 0.f},
    {"relu", ACT_RELU, 0, 0.f, 0.f},
    {"affine", ACT_AFFINE, 3, 1.f, 0.f},
    {"leakyrelu", ACT_LEAKY_RELU, 1, 0.01f, 0.f},
    {"thresholdedrelu", ACT_THRESHOLDED_RELU, 1, 1.f, 0.f},
    {"scaledtanh", ACT_SCALED_TANH, 3, 1.f, 1.f},
    {"hardsigmoid", ACT_HARD_SIGMOID, 3, 0.2f, 0.5f},
    {"elu", ACT_ELU, 1, 1.f, 0.f},
    {"softsign", ACT_SOFTSIGN, 0, 0.f, 0.f},
    {"softplus", ACT_SOFTPLUS, 0, 0.f, 0.f},
};

static int same_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
        char y = *b >= 'A' && *b <= 'Z' ? (char)(*b - 'A' + 'a') : *b;
        if (x != y)
            return 0;
    }
    return *a == *b;
}

/* Activation functions of all directions (per_dir of each), from the
 * attributes or the op's defaults; alphas/betas are consumed in order by the
 * functions that take them. */
static poprt_status parse_acts(const poprt__kctx *k, int per_dir, int dirs, const int *dflt,
                               rnn_act *out)
{
    const poprt__attr *a = poprt__node_attr(k->node, "activations");
    int64_t na = 0, nb = 0, ia = 0, ib = 0;
    const float *alphas = poprt__attr_floats(k->node, "activation_alpha", &na);
    const float *betas = poprt__attr_floats(k->node, "activation_beta", &nb);
    int64_t n = a && a->type == POPRT__ATTR_STRINGS ? a->n : 0;
    if (n && n != per_dir && n != per_dir * dirs)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "%lld activations given, expected %d", (long long)n, per_dir * dirs);
    for (int i = 0; i < per_dir * dirs; i++) {
        if (!n) {
            out[i].kind = dflt[i % per_dir];
            out[i].alpha = out[i].beta = 0.f;
            continue;
        }
        const char *name = a->strings[i % n];
        size_t q = 0, nt = sizeof act_table / sizeof act_table[0];
        while (q < nt && !same_nocase(name, act_table[q].name))
            q++;
        if (q == nt)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "activation '%s'", name);
        out[i].kind = act_table[q].kind;
        out[i].alpha = act_table[q].alpha;
        out[i].beta = act_table[q].beta;
        if (i < n) { /* a repeated list reuses the parameters already read */
            if ((act_table[q].uses & 1) && ia < na)
                out[i].alpha = alphas[ia++];
            if ((act_table[q].uses & 2) && ib < nb)
                out[i].beta = betas[ib++];
        } else {
            out[i] = out[i % n];
        }
    }
    return POPRT_OK;
}

/* x[i] = clip then act(x[i]) for n values; the switch stays outside the loop. */
static void act_apply(const rnn_act *a, float clip, float *x, int64_t n)
{
    if (clip > 0.f)
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] < -clip ? -clip : (x[i] > clip ? clip : x[i]);
    float al = a->alpha, be = a->beta;
    switch (a->kind) {
    case ACT_SIGMOID:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] >= 0.f ? 1.f / (1.f + expf(-x[i])) : expf(x[i]) / (1.f + expf(x[i]));
        break;
    case ACT_TANH:
        for (int64_t i = 0; i < n; i++)
            x[i] = tanhf(x[i]);
        break;
    case ACT_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > 0.f ? x[i] : 0.f;
        break;
    case ACT_AFFINE:
        for (int64_t i = 0; i < n; i++)
            x[i] = al * x[i] + be;
        break;
    case ACT_LEAKY_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] >= 0.f ? x[i] : al * x[i];
        break;
    case ACT_THRESHOLDED_RELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > al ? x[i] : 0.f;
        break;
    case ACT_SCALED_TANH:
        for (int64_t i = 0; i < n; i++)
            x[i] = al * tanhf(be * x[i]);
        break;
    case ACT_HARD_SIGMOID:
        for (int64_t i = 0; i < n; i++) {
            float v = al * x[i] + be;
            x[i] = v < 0.f ? 0.f : (v > 1.f ? 1.f : v);
        }
        break;
    case ACT_ELU:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] >= 0.f ? x[i] : al * (expf(x[i]) - 1.f);
        break;
    case ACT_SOFTSIGN:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] / (1.f + fabsf(x[i]));
        break;
    case ACT_SOFTPLUS:
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] > 20.f ? x[i] : log1pf(expf(x[i]));
        break;
    }
}

/* Dot product with eight partial sums in a fixed order: vectorisable
 * without reassociation, and the same bits for any thread count. */
static float dot(const float *a, const float *b, int64_t n)
{
    float s[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            s[l] += a[i + l] * b[i + l];
    float r = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
    for (; i < n; i++)
        r += a[i] * b[i];
    return r;
}

/* out[n] += W[n, :] · x for n < N (W row-major, K columns). */
static void matvec_acc(int64_t N, int64_t K, const float *W, const float *x, float *out)
{
    for (int64_t n = 0; n < N; n++)
        out[n] += dot(W + n * K, x, K);
}

typedef struct {
    int gates;     /* 1 RNN, 3 GRU, 4 LSTM */
    int layout, dirs;
    int64_t T, B, I, H;
    float clip;
    int input_forget, lbr; /* LSTM input_forget, GRU linear_before_reset */
    const float *X, *W, *R, *Bias, *P, *h0, *c0;
    const int64_t *lens;
    float *Y, *Yh, *Yc; /* float outputs (NULL when not wanted) */
    rnn_act acts[6];
} rnn_job;

/* Float32 view of tensor input i (converted into scratch when needed). */
static poprt_status f32_in(poprt__kctx *k, int i, const float **out)
{
    const poprt__tval *t = poprt__kin(k, i);
    *out = NULL;
    if (!t)
        return POPRT_OK;
    if (t->dtype == POPRT_DTYPE_FLOAT) {
        *out = t->data;
        return POPRT_OK;
    }
    if (!poprt__dtype_is_float(t->dtype))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "input %d has dtype %s", i,
                               poprt_dtype_name((poprt_dtype)t->dtype));
    float *f = poprt__kctx_scratch(k, (size_t)(t->numel ? t->numel : 1) * sizeof *f);
    if (!f)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int64_t q = 0; q < t->numel; q++)
        f[q] = (float)poprt__load_f64(t->data, t->dtype, q);
    *out = f;
    return POPRT_OK;
}

/* Offsets into X / Y / states for (t, b) and direction d. */
static int64_t x_row(const rnn_job *j, int64_t t, int64_t b)
{
    return j->layout ? b * j->T + t : t * j->B + b;
}
static int64_t y_off(const rnn_job *j, int64_t t, int d, int64_t b)
{
    return (j->layout ? (b * j->T + t) * j->dirs + d : (t * j->dirs + d) * j->B + b) * j->H;
}
static int64_t s_off(const rnn_job *j, int d, int64_t b)
{
    return (j->layout ? b * j->dirs + d : d * j->B + b) * j->H;
}

/* One direction d. Scratch: xw [T*B, G*H], hr [B, G*H], h, c, r·h. */
static poprt_status run_direction(poprt__kctx *k, const rnn_job *j, int d)
{
    int64_t T = j->T, B = j->B, I = j->I, H = j->H, G = j->gates, GH = G * H;
    int reverse = d == 1 || strcmp(poprt__attr_s(k->node, "direction", "forward"), "reverse") == 0;
    const rnn_act *act = &j->acts[d * (G == 4 ? 3 : (G == 3 ? 2 : 1))];
    size_t fs = sizeof(float);
    float *xw = poprt__kctx_scratch(k, (size_t)(T * B * GH + 1) * fs);
    float *hr = poprt__kctx_scratch(k, (size_t)(B * GH + 1) * fs);
    float *h = poprt__kctx_scratch(k, (size_t)(B * H + 1) * fs);
    float *c = poprt__kctx_scratch(k, (size_t)(B * H + 1) * fs);
    float *rh = poprt__kctx_scratch(k, (size_t)(B * H + 1) * fs);
    float *bias = poprt__kctx_scratch(k, (size_t)(GH + 1) * fs);
    float *rbh = poprt__kctx_scratch(k, (size_t)(H + 1) * fs);
    if (!xw || !hr || !h || !c || !rh || !bias || !rbh)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    const float *W = j->W + d * GH * I, *R = j->R + d * GH * H;
    /* biases: Wb + Rb, except GRU's Rbh with linear_before_reset (inside r·(...)) */
    memset(rbh, 0, (size_t)H * fs);
    for (int64_t n = 0; n < GH; n++) {
        const float *Bd = j->Bias ? j->Bias + d * 2 * GH : NULL;
        bias[n] = Bd ? Bd[n] : 0.f;
        if (Bd && G == 3 && j->lbr && n >= 2 * H)
            rbh[n - 2 * H] = Bd[GH + n];
        else if (Bd)
            bias[n] += Bd[GH + n];
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t b = 0; b < B; b++) {
            float *row = xw + (t * B + b) * GH;
            memcpy(row, bias, (size_t)GH * fs);
            matvec_acc(GH, I, W, j->X + x_row(j, t, b) * I, row);
        }
    for (int64_t b = 0; b < B; b++) {
        if (j->h0)
            memcpy(h + b * H, j->h0 + s_off(j, d, b), (size_t)H * fs);
        else
            memset(h + b * H, 0, (size_t)H * fs);
        if (j->c0)
            memcpy(c + b * H, j->c0 + s_off(j, d, b), (size_t)H * fs);
        else
            memset(c + b * H, 0, (size_t)H * fs);
    }
    const float *P = j->P ? j->P + d * 3 * H : NULL;
    for (int64_t s = 0; s < T; s++) {
        /* recurrent product for all batch rows (the GRU candidate gate
         * needs r first unless linear_before_reset) */
        int64_t cols = G == 3 && !j->lbr ? 2 * H : GH;
        memset(hr, 0, (size_t)(B * GH) * fs);
        for (int64_t b = 0; b < B; b++)
            matvec_acc(cols, H, R, h + b * H, hr + b * GH);
        for (int64_t b = 0; b < B; b++) {
            int64_t len = j->lens ? j->lens[b] : T;
            if (s >= len)
                continue;
            int64_t t = reverse ? len - 1 - s : s;
            float *g = hr + b * GH;
            const float *x = xw + (t * B + b) * GH;
            float *hb = h + b * H, *cb = c + b * H;
            if (G == 1) {
                for (int64_t n = 0; n < H; n++)
                    g[n] += x[n];
                act_apply(&act[0], j->clip, g, H);
                memcpy(hb, g, (size_t)H * fs);
            } else if (G == 3) {
                /* zrh: z = f(.), r = f(.), h~ = g(.), H = (1-z) h~ + z H */
                float *z = g, *r = g + H, *hh = g + 2 * H;
                for (int64_t n = 0; n < 2 * H; n++)
                    g[n] += x[n];
                act_apply(&act[0], j->clip, z, 2 * H);
                if (j->lbr) {
                    for (int64_t n = 0; n < H; n++)
                        hh[n] = x[2 * H + n] + r[n] * (hh[n] + rbh[n]);
                } else {
                    float *rhb = rh + b * H;
                    for (int64_t n = 0; n < H; n++) {
                        rhb[n] = r[n] * hb[n];
                        hh[n] = x[2 * H + n];
                    }
                    matvec_acc(H, H, R + 2 * H * H, rhb, hh);
                }
                act_apply(&act[1], j->clip, hh, H);
                for (int64_t n = 0; n < H; n++)
                    hb[n] = (1.f - z[n]) * hh[n] + z[n] * hb[n];
            } else {
                /* iofc: i, o, f, c~ */
                float *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
                for (int64_t n = 0; n < GH; n++)
                    g[n] += x[n];
                if (P)
                    for (int64_t n = 0; n < H; n++) {
                        gi[n] += P[n] * cb[n];
                        gf[n] += P[2 * H + n] * cb[n];
                    }
                act_apply(&act[0], j->clip, gi, H);
                if (j->input_forget)
                    for (int64_t n = 0; n < H; n++)
                        gf[n] = 1.f - gi[n];
                else
                    act_apply(&act[0], j->clip, gf, H);
                act_apply(&act[1], j->clip, gc, H);
                for (int64_t n = 0; n < H; n++)
                    cb[n] = gf[n] * cb[n] + gi[n] * gc[n];
                if (P)
                    for (int64_t n = 0; n < H; n++)
                        go[n] += P[H + n] * cb[n];
                act_apply(&act[0], j->clip, go, H);
                memcpy(gc, cb, (size_t)H * fs);
                act_apply(&act[2], 0.f, gc, H);
                for (int64_t n = 0; n < H; n++)
                    hb[n] = go[n] * gc[n];
            }
            if (j->Y)
                memcpy(j->Y + y_off(j, t, d, b), hb, (size_t)H * fs);
        }
    }
    for (int64_t b = 0; b < B; b++) {
        if (j->Yh)
            memcpy(j->Yh + s_off(j, d, b), h + b * H, (size_t)H * fs);
        if (j->Yc)
            memcpy(j->Yc + s_off(j, d, b), c + b * H, (size_t)H * fs);
    }
    return POPRT_OK;
}

/* Float32 buffer for output o: the output itself, or scratch converted at
 * the end. */
static float *f32_out(poprt__kctx *k, int o)
{
    poprt__tval *t = poprt__kout(k, o);
    if (!t)
        return NULL;
    float *f = t->dtype == POPRT_DTYPE_FLOAT
                   ? t->data
                   : poprt__kctx_scratch(k, (size_t)(t->numel ? t->numel : 1) * sizeof *f);
    if (f)
        memset(f, 0, (size_t)t->numel * sizeof *f);
    return f;
}

static void f32_back(poprt__kctx *k, int o, const float *f)
{
    poprt__tval *t = poprt__kout(k, o);
    if (!t || !f || t->dtype == POPRT_DTYPE_FLOAT)
        return;
    for (int64_t q = 0; q < t->numel; q++)
        poprt__store_f64(t->data, t->dtype, q, (double)f[q]);
}

static poprt_status recurrent(poprt__kctx *k, int gates)
{
    rnn_job j;
    memset(&j, 0, sizeof j);
    j.gates = gates;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *r = poprt__kin(k, 2);
    if (!x || !w || !r || x->rank != 3 || w->rank != 3 || r->rank != 3)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X, W and R must be tensors of rank 3");
    j.layout = (int)poprt__attr_i(k->node, "layout", 0) != 0;
    const char *dir = poprt__attr_s(k->node, "direction", "forward");
    j.dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    j.T = x->dims[j.layout ? 1 : 0];
    j.B = x->dims[j.layout ? 0 : 1];
    j.I = x->dims[2];
    j.H = poprt__attr_i(k->node, "hidden_size", r->dims[2]);
    j.clip = poprt__attr_f(k->node, "clip", 0.f);
    j.input_forget = (int)poprt__attr_i(k->node, "input_forget", 0) != 0;
    j.lbr = (int)poprt__attr_i(k->node, "linear_before_reset", 0) != 0;
    int64_t GH = gates * j.H;
    if (w->dims[0] != j.dirs || w->dims[1] != GH || w->dims[2] != j.I || r->dims[0] != j.dirs ||
        r->dims[1] != GH || r->dims[2] != j.H)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "W/R shapes do not match %d direction(s), %d gates, hidden %lld, "
                               "input %lld",
                               j.dirs, gates, (long long)j.H, (long long)j.I);
    /* optional inputs: B, sequence_lens, initial_h, initial_c (LSTM), P (LSTM) */
    const poprt__tval *bt = poprt__kin(k, 3), *lt = poprt__kin(k, 4), *ht = poprt__kin(k, 5);
    const poprt__tval *ct = gates == 4 ? poprt__kin(k, 6) : NULL;
    const poprt__tval *pt = gates == 4 ? poprt__kin(k, 7) : NULL;
    if (bt && bt->numel != j.dirs * 2 * GH)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "B has %lld values, expected %lld",
                               (long long)bt->numel, (long long)(j.dirs * 2 * GH));
    if ((ht && ht->numel != j.dirs * j.B * j.H) || (ct && ct->numel != j.dirs * j.B * j.H))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "initial states need %lld values", (long long)(j.dirs * j.B * j.H));
    if (pt && pt->numel != j.dirs * 3 * j.H)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "P has %lld values, expected %lld",
                               (long long)pt->numel, (long long)(j.dirs * 3 * j.H));
    if (lt) {
        if (lt->numel != j.B)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "sequence_lens has %lld values for batch %lld", (long long)lt->numel,
                                   (long long)j.B);
        int64_t *lens = poprt__kctx_scratch(k, (size_t)(j.B + 1) * sizeof *lens);
        if (!lens)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int64_t b = 0; b < j.B; b++) {
            lens[b] = poprt__load_i64(lt->data, lt->dtype, b);
            if (lens[b] < 0 || lens[b] > j.T)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                       "sequence_lens[%lld] = %lld outside [0, %lld]", (long long)b,
                                       (long long)lens[b], (long long)j.T);
        }
        j.lens = lens;
    }
    static const int dflt_lstm[3] = {ACT_SIGMOID, ACT_TANH, ACT_TANH};
    static const int dflt_gru[2] = {ACT_SIGMOID, ACT_TANH};
    static const int dflt_rnn[1] = {ACT_TANH};
    int per_dir = gates == 4 ? 3 : (gates == 3 ? 2 : 1);
    poprt_status st = parse_acts(k, per_dir, j.dirs,
                                 gates == 4 ? dflt_lstm : (gates == 3 ? dflt_gru : dflt_rnn), j.acts);
    if (!st)
        st = f32_in(k, 0, &j.X);
    if (!st)
        st = f32_in(k, 1, &j.W);
    if (!st)
        st = f32_in(k, 2, &j.R);
    if (!st && bt)
        st = f32_in(k, 3, &j.Bias);
    if (!st && ht)
        st = f32_in(k, 5, &j.h0);
    if (!st && ct)
        st = f32_in(k, 6, &j.c0);
    if (!st && pt)
        st = f32_in(k, 7, &j.P);
    if (st)
        return st;
    j.Y = f32_out(k, 0);
    j.Yh = f32_out(k, 1);
    j.Yc = gates == 4 ? f32_out(k, 2) : NULL;
    if ((poprt__kout(k, 0) && !j.Y) || (poprt__kout(k, 1) && !j.Yh) ||
        (gates == 4 && poprt__kout(k, 2) && !j.Yc))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int d = 0; d < j.dirs && !st; d++)
        st = run_direction(k, &j, d);
    if (st)
        return st;
    f32_back(k, 0, j.Y);
    f32_back(k, 1, j.Yh);
    if (gates == 4)
        f32_back(k, 2, j.Yc);
    return POPRT_OK;
}

poprt_status poprt__ref_rnn(poprt__kctx *k) { return recurrent(k, 1); }
poprt_status poprt__ref_gru(poprt__kctx *k) { return recurrent(k, 3); }
poprt_status poprt__ref_lstm(poprt__kctx *k) { return recurrent(k, 4); }
/* ==== end of recurrent ops ================================================== */

/* ==== section 'quant' helper: long-tail ops (signal, detection, random, strings, ml,
 * training). Kept contiguous; other families' kernels live outside it. ==== */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define QM_PI 3.14159265358979323846

/* ---- window functions ---------------------------------------------------------- */

poprt_status poprt__misc_window(poprt__kctx *k, int kind)
{
    const poprt__tval *sz = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, sz && y);
    if (st)
        return st;
    const int64_t n = y->numel;
    const int periodic = (int)poprt__attr_i(k->node, "periodic", 1);
    const double den = periodic ? (double)n : (double)(n - 1);
    for (int64_t i = 0; i < n; i++) {
        double t = den > 0 ? 2.0 * QM_PI * (double)i / den : 0.0, v;
        if (kind == POPRT__WIN_HANN)
            v = 0.5 - 0.5 * cos(t);
        else if (kind == POPRT__WIN_HAMMING)
            v = 25.0 / 46.0 - (21.0 / 46.0) * cos(t);
        else
            v = 0.42 - 0.5 * cos(t) + 0.08 * cos(2.0 * t);
        poprt__store_f64(y->data, y->dtype, i, v);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_hann_window(poprt__kctx *k) { return poprt__misc_window(k, POPRT__WIN_HANN); }
poprt_status poprt__ref_hamming_window(poprt__kctx *k)
{
    return poprt__misc_window(k, POPRT__WIN_HAMMING);
}
poprt_status poprt__ref_blackman_window(poprt__kctx *k)
{
    return poprt__misc_window(k, POPRT__WIN_BLACKMAN);
}

poprt_status poprt__ref_mel_weight_matrix(poprt__kctx *k)
{
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, y && poprt__kin(k, 0) && poprt__kin(k, 1) && poprt__kin(k, 2) &&
                                     poprt__kin(k, 3) && poprt__kin(k, 4));
    if (st)
        return st;
    const int64_t nmel = poprt__ref_scalar_i(poprt__kin(k, 0), 0);
    const int64_t dft = poprt__ref_scalar_i(poprt__kin(k, 1), 0);
    const int64_t rate = poprt__ref_scalar_i(poprt__kin(k, 2), 1);
    const double lo = poprt__ref_scalar_f(poprt__kin(k, 3), 0), hi = poprt__ref_scalar_f(poprt__kin(k, 4), 0);
    const int64_t nspec = dft / 2 + 1;
    if (nmel < 0 || rate <= 0 || y->numel != nspec * nmel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "invalid mel parameters");
    int64_t *bins = poprt__kctx_scratch(k, (size_t)(nmel + 2) * sizeof *bins);
    if (!bins)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    /* mel-spaced edges mapped to FFT bins (ONNX's reference formulation) */
    const double lmel = 2595.0 * log10(1.0 + lo / 700.0), hmel = 2595.0 * log10(1.0 + hi / 700.0);
    const double step = (hmel - lmel) / (double)(nmel + 2);
    for (int64_t i = 0; i < nmel + 2; i++) {
        double hz = 700.0 * (pow(10.0, ((double)i * step + lmel) / 2595.0) - 1.0);
        bins[i] = (int64_t)floor((double)(dft + 1) * hz / (double)rate);
    }
    for (int64_t i = 0; i < y->numel; i++)
        poprt__store_f64(y->data, y->dtype, i, 0.0);
    for (int64_t m = 0; m < nmel; m++) {
        int64_t l = bins[m], c = bins[m + 1], r = bins[m + 2];
        if (c - l == 0) {
            if (c >= 0 && c < nspec)
                poprt__store_f64(y->data, y->dtype, c * nmel + m, 1.0);
        } else {
            for (int64_t j = l; j <= c; j++)
                if (j >= 0 && j < nspec)
                    poprt__store_f64(y->data, y->dtype, j * nmel + m,
                                     (double)(j - l) / (double)(c - l));
        }
        if (r - c > 0)
            for (int64_t j = c; j < r; j++)
                if (j >= 0 && j < nspec)
                    poprt__store_f64(y->data, y->dtype, j * nmel + m,
                                     (double)(r - j) / (double)(r - c));
    }
    return POPRT_OK;
}

/* ---- DFT / STFT -------------------------------------------------------------------- */

/* out[0..nout) (complex, interleaved) = DFT of length L of the complex
 * signal in[0..n) (zero padded / truncated to L); sign -1 forward, +1 inverse. */
static void qm_dft(const double *in, int64_t n, int64_t L, int inverse, const double *cs,
                   const double *sn, double *out, int64_t nout)
{
    const int64_t m = n < L ? n : L;
    for (int64_t f = 0; f < nout; f++) {
        double re = 0, im = 0;
        int64_t idx = 0; /* (f * t) mod L, kept exact */
        for (int64_t t = 0; t < m; t++) {
            const double c = cs[idx], s = inverse ? sn[idx] : -sn[idx];
            re += in[2 * t] * c - in[2 * t + 1] * s;
            im += in[2 * t] * s + in[2 * t + 1] * c;
            idx += f;
            idx %= L;
        }
        if (inverse) {
            re /= (double)L;
            im /= (double)L;
        }
        out[2 * f] = re;
        out[2 * f + 1] = im;
    }
}

static poprt_status qm_twiddles(poprt__kctx *k, int64_t L, double **cs, double **sn)
{
    *cs = poprt__kctx_scratch(k, (size_t)(L + 1) * sizeof **cs);
    *sn = poprt__kctx_scratch(k, (size_t)(L + 1) * sizeof **sn);
    if (!*cs || !*sn)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (int64_t i = 0; i < L; i++) {
        double a = 2.0 * QM_PI * (double)i / (double)L;
        (*cs)[i] = cos(a);
        (*sn)[i] = sin(a);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_dft(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y);
    if (st)
        return st;
    int64_t axis;
    if (k->opset >= 20)
        axis = poprt__ref_scalar_i(poprt__kin(k, 2), -2);
    else
        axis = poprt__attr_i(k->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (x->rank < 2 || axis < 0 || axis >= x->rank - 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "invalid DFT axis");
    const int inverse = (int)poprt__attr_i(k->node, "inverse", 0);
    const int64_t n = x->dims[axis], cin = x->dims[x->rank - 1];
    const int64_t L = poprt__kin(k, 1) ? poprt__ref_scalar_i(poprt__kin(k, 1), n) : n;
    const int64_t nout = y->dims[axis];
    if (L <= 0 || (cin != 1 && cin != 2))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "invalid DFT length or input");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = (int)axis + 1; i < x->rank - 1; i++)
        inner *= x->dims[i];
    double *cs, *sn;
    if ((st = qm_twiddles(k, L, &cs, &sn)))
        return st;
    double *sig = poprt__kctx_scratch(k, (size_t)(2 * n + 2) * sizeof *sig);
    double *res = poprt__kctx_scratch(k, (size_t)(2 * nout + 2) * sizeof *res);
    if (!sig || !res)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (int64_t o = 0; o < outer; o++)
        for (int64_t r = 0; r < inner; r++) {
            for (int64_t t = 0; t < n; t++) {
                int64_t base = ((o * n + t) * inner + r) * cin;
                sig[2 * t] = poprt__load_f64(x->data, x->dtype, base);
                sig[2 * t + 1] = cin == 2 ? poprt__load_f64(x->data, x->dtype, base + 1) : 0.0;
            }
            qm_dft(sig, n, L, inverse, cs, sn, res, nout);
            for (int64_t f = 0; f < nout; f++) {
                int64_t base = ((o * nout + f) * inner + r) * 2;
                poprt__store_f64(y->data, y->dtype, base, res[2 * f]);
                poprt__store_f64(y->data, y->dtype, base + 1, res[2 * f + 1]);
            }
        }
    return POPRT_OK;
}

poprt_status poprt__ref_stft(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *stp = poprt__kin(k, 1), *win = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && stp && y && x->rank == 3 && y->rank == 4);
    if (st)
        return st;
    const int64_t B = x->dims[0], n = x->dims[1], cin = x->dims[2];
    const int64_t step = poprt__ref_scalar_i(stp, 1);
    const int64_t fl = poprt__kin(k, 3) ? poprt__ref_scalar_i(poprt__kin(k, 3), 0) : (win ? win->numel : 0);
    const int64_t nfr = y->dims[1], nbins = y->dims[2];
    if (fl <= 0 || step <= 0 || (cin != 1 && cin != 2) || (win && win->numel != fl))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "invalid STFT parameters");
    double *cs, *sn;
    if ((st = qm_twiddles(k, fl, &cs, &sn)))
        return st;
    double *sig = poprt__kctx_scratch(k, (size_t)(2 * fl + 2) * sizeof *sig);
    double *res = poprt__kctx_scratch(k, (size_t)(2 * nbins + 2) * sizeof *res);
    if (!sig || !res)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < nfr; f++) {
            for (int64_t t = 0; t < fl; t++) {
                int64_t pos = f * step + t;
                double w = win ? poprt__load_f64(win->data, win->dtype, t) : 1.0;
                double re = 0, im = 0;
                if (pos < n) {
                    int64_t base = (b * n + pos) * cin;
                    re = poprt__load_f64(x->data, x->dtype, base);
                    im = cin == 2 ? poprt__load_f64(x->data, x->dtype, base + 1) : 0.0;
                }
                sig[2 * t] = re * w;
                sig[2 * t + 1] = im * w;
            }
            qm_dft(sig, fl, fl, 0, cs, sn, res, nbins);
            for (int64_t i = 0; i < 2 * nbins; i++)
                poprt__store_f64(y->data, y->dtype, ((b * nfr + f) * nbins) * 2 + i, res[i]);
        }
    return POPRT_OK;
}

/* ---- detection: NonMaxSuppression, RoiAlign, MaxRoiPool -------------------------------- */

typedef struct qm_cand {
    float score;
    int64_t idx;
} qm_cand;

/* Stable order: higher score first, then lower box index. */
static int qm_cand_before(const qm_cand *a, const qm_cand *b)
{
    return a->score > b->score || (a->score == b->score && a->idx < b->idx);
}

static void qm_sort_cands(qm_cand *c, int64_t n, qm_cand *tmp)
{
    /* bottom-up merge sort: stable and O(n log n) */
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = qm_cand_before(&c[j], &c[i]) ? c[j++] : c[i++];
            while (i < mid)
                tmp[o++] = c[i++];
            while (j < hi)
                tmp[o++] = c[j++];
        }
        memcpy(c, tmp, (size_t)n * sizeof *c);
    }
}

static void qm_box_corners(const float *b, int center, float *y1, float *x1, float *y2, float *x2)
{
    if (center) {
        *x1 = b[0] - b[2] / 2;
        *x2 = b[0] + b[2] / 2;
        *y1 = b[1] - b[3] / 2;
        *y2 = b[1] + b[3] / 2;
    } else {
        *y1 = fminf(b[0], b[2]);
        *y2 = fmaxf(b[0], b[2]);
        *x1 = fminf(b[1], b[3]);
        *x2 = fmaxf(b[1], b[3]);
    }
}

static float qm_iou(const float *a, const float *b, int center)
{
    float ay1, ax1, ay2, ax2, by1, bx1, by2, bx2;
    qm_box_corners(a, center, &ay1, &ax1, &ay2, &ax2);
    qm_box_corners(b, center, &by1, &bx1, &by2, &bx2);
    float iw = fminf(ax2, bx2) - fmaxf(ax1, bx1), ih = fminf(ay2, by2) - fmaxf(ay1, by1);
    if (iw <= 0 || ih <= 0)
        return 0.0f;
    float inter = iw * ih;
    float ua = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
    return ua > 0 ? inter / ua : 0.0f;
}

poprt_status poprt__ref_non_max_suppression(poprt__kctx *k)
{
    const poprt__tval *boxes = poprt__kin(k, 0), *scores = poprt__kin(k, 1);
    poprt_status st = poprt__ref_need(k, boxes && scores && boxes->rank == 3 && scores->rank == 3 &&
                                     boxes->dtype == POPRT_DTYPE_FLOAT &&
                                     scores->dtype == POPRT_DTYPE_FLOAT);
    if (st)
        return st;
    const int64_t B = boxes->dims[0], S = boxes->dims[1], C = scores->dims[1];
    if (boxes->dims[2] != 4 || scores->dims[0] != B || scores->dims[2] != S)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "boxes and scores do not fit");
    int64_t maxo = poprt__ref_scalar_i(poprt__kin(k, 2), 0);
    const float iou_t = (float)poprt__ref_scalar_f(poprt__kin(k, 3), 0.0);
    const int has_st = poprt__kin(k, 4) && poprt__kin(k, 4)->numel > 0;
    const float score_t = (float)poprt__ref_scalar_f(poprt__kin(k, 4), 0.0);
    const int center = (int)poprt__attr_i(k->node, "center_point_box", 0);
    if (maxo < 0)
        maxo = 0;
    int64_t per = maxo < S ? maxo : S;
    qm_cand *cand = poprt__kctx_scratch(k, (size_t)(S + 1) * sizeof *cand);
    qm_cand *tmp = poprt__kctx_scratch(k, (size_t)(S + 1) * sizeof *tmp);
    int64_t *sel = poprt__kctx_scratch(k, (size_t)(B * C * per * 3 + 3) * sizeof *sel);
    int64_t *chosen = poprt__kctx_scratch(k, (size_t)(per + 1) * sizeof *chosen);
    if (!cand || !tmp || !sel || !chosen)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    const float *bx = boxes->data, *sc = scores->data;
    int64_t nsel = 0;
    for (int64_t b = 0; b < B && per > 0; b++)
        for (int64_t c = 0; c < C; c++) {
            const float *s = sc + (b * C + c) * S;
            int64_t nc = 0;
            for (int64_t i = 0; i < S; i++)
                if (!has_st || s[i] > score_t)
                    cand[nc++] = (qm_cand){s[i], i};
            qm_sort_cands(cand, nc, tmp);
            int64_t nch = 0;
            for (int64_t i = 0; i < nc && nch < per; i++) {
                const float *bi = bx + (b * S + cand[i].idx) * 4;
                int keep = 1;
                for (int64_t j = 0; j < nch && keep; j++)
                    if (qm_iou(bi, bx + (b * S + chosen[j]) * 4, center) > iou_t)
                        keep = 0;
                if (keep) {
                    chosen[nch++] = cand[i].idx;
                    sel[nsel * 3] = b;
                    sel[nsel * 3 + 1] = c;
                    sel[nsel * 3 + 2] = cand[i].idx;
                    nsel++;
                }
            }
        }
    int64_t od[2] = {nsel, 3};
    if ((st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_INT64, 2, od)))
        return st;
    poprt__tval *y = poprt__kout(k, 0);
    if (y && nsel)
        memcpy(y->data, sel, (size_t)nsel * 3 * sizeof *sel);
    return POPRT_OK;
}

typedef struct qm_pc {
    int64_t p1, p2, p3, p4;
    double w1, w2, w3, w4;
} qm_pc;

poprt_status poprt__ref_roi_align(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *rois = poprt__kin(k, 1), *bi = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && rois && bi && y && x->rank == 4 && rois->rank == 2 &&
                                     y->rank == 4);
    if (st)
        return st;
    const int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    const int64_t R = rois->dims[0], PH = y->dims[2], PW = y->dims[3];
    const char *ctm = poprt__attr_s(k->node, "coordinate_transformation_mode",
                                    k->opset >= 16 ? "half_pixel" : "output_half_pixel");
    const int half = strcmp(ctm, "half_pixel") == 0;
    const int is_max = strcmp(poprt__attr_s(k->node, "mode", "avg"), "max") == 0;
    const int64_t sr = poprt__attr_i(k->node, "sampling_ratio", 0);
    const double scale = poprt__attr_f(k->node, "spatial_scale", 1.0f);
    if (rois->dims[1] != 4 || bi->numel != R)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "rois must be [num_rois, 4]");
    for (int64_t r = 0; r < R; r++) {
        const int64_t b = poprt__load_i64(bi->data, bi->dtype, r);
        if (b < 0 || b >= N)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "batch index %lld out of range", (long long)b);
        const double off = half ? 0.5 : 0.0;
        double sw = poprt__load_f64(rois->data, rois->dtype, r * 4) * scale - off;
        double sh = poprt__load_f64(rois->data, rois->dtype, r * 4 + 1) * scale - off;
        double ew = poprt__load_f64(rois->data, rois->dtype, r * 4 + 2) * scale - off;
        double eh = poprt__load_f64(rois->data, rois->dtype, r * 4 + 3) * scale - off;
        double rw = ew - sw, rh = eh - sh;
        if (!half) {
            rw = rw > 1.0 ? rw : 1.0;
            rh = rh > 1.0 ? rh : 1.0;
        }
        const double bh = rh / (double)PH, bw = rw / (double)PW;
        const int64_t gh = sr > 0 ? sr : (int64_t)ceil(rh / (double)PH);
        const int64_t gw = sr > 0 ? sr : (int64_t)ceil(rw / (double)PW);
        const int64_t count = gh * gw > 1 ? gh * gw : 1;
        qm_pc *pc = poprt__kctx_scratch(k, (size_t)(PH * PW * gh * gw + 1) * sizeof *pc);
        if (!pc)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
        /* bilinear sample positions and weights, shared by all channels */
        int64_t pi = 0;
        for (int64_t ph = 0; ph < PH; ph++)
            for (int64_t pw = 0; pw < PW; pw++)
                for (int64_t iy = 0; iy < gh; iy++)
                    for (int64_t ix = 0; ix < gw; ix++, pi++) {
                        double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                        qm_pc *p = &pc[pi];
                        memset(p, 0, sizeof *p);
                        if (yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)
                            continue;
                        if (yy <= 0)
                            yy = 0;
                        if (xx <= 0)
                            xx = 0;
                        int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
                        if (yl >= H - 1) {
                            yh = yl = H - 1;
                            yy = (double)yl;
                        } else
                            yh = yl + 1;
                        if (xl >= W - 1) {
                            xh = xl = W - 1;
                            xx = (double)xl;
                        } else
                            xh = xl + 1;
                        double ly = yy - (double)yl, lx = xx - (double)xl;
                        double hy = 1.0 - ly, hx = 1.0 - lx;
                        p->p1 = yl * W + xl;
                        p->p2 = yl * W + xh;
                        p->p3 = yh * W + xl;
                        p->p4 = yh * W + xh;
                        p->w1 = hy * hx;
                        p->w2 = hy * lx;
                        p->w3 = ly * hx;
                        p->w4 = ly * lx;
                    }
        for (int64_t c = 0; c < C; c++) {
            const int64_t xo = (b * C + c) * H * W;
            pi = 0;
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    double acc = 0.0;
                    for (int64_t s = 0; s < gh * gw; s++, pi++) {
                        const qm_pc *p = &pc[pi];
                        double v1 = p->w1 * poprt__load_f64(x->data, x->dtype, xo + p->p1);
                        double v2 = p->w2 * poprt__load_f64(x->data, x->dtype, xo + p->p2);
                        double v3 = p->w3 * poprt__load_f64(x->data, x->dtype, xo + p->p3);
                        double v4 = p->w4 * poprt__load_f64(x->data, x->dtype, xo + p->p4);
                        if (is_max) {
                            /* ONNX (like onnxruntime) takes the max of the weighted corners */
                            double m = fmax(fmax(v1, v2), fmax(v3, v4));
                            acc = s == 0 ? m : fmax(acc, m);
                        } else
                            acc += v1 + v2 + v3 + v4;
                    }
                    if (!is_max)
                        acc /= (double)count;
                    poprt__store_f64(y->data, y->dtype, ((r * C + c) * PH + ph) * PW + pw, acc);
                }
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_max_roi_pool(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *rois = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && rois && y && x->rank == 4 && rois->rank == 2 && y->rank == 4);
    if (st)
        return st;
    const int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    const int64_t R = rois->dims[0], PH = y->dims[2], PW = y->dims[3];
    const double scale = poprt__attr_f(k->node, "spatial_scale", 1.0f);
    if (rois->dims[1] != 5)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "rois must be [num_rois, 5]");
    for (int64_t r = 0; r < R; r++) {
        int64_t b = (int64_t)poprt__load_f64(rois->data, rois->dtype, r * 5);
        if (b < 0 || b >= N)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "batch index %lld out of range", (long long)b);
        int64_t x1 = (int64_t)round(poprt__load_f64(rois->data, rois->dtype, r * 5 + 1) * scale);
        int64_t y1 = (int64_t)round(poprt__load_f64(rois->data, rois->dtype, r * 5 + 2) * scale);
        int64_t x2 = (int64_t)round(poprt__load_f64(rois->data, rois->dtype, r * 5 + 3) * scale);
        int64_t y2 = (int64_t)round(poprt__load_f64(rois->data, rois->dtype, r * 5 + 4) * scale);
        int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
        double bh = (double)rh / (double)PH, bw = (double)rw / (double)PW;
        for (int64_t c = 0; c < C; c++)
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    int64_t hs = (int64_t)floor((double)ph * bh) + y1;
                    int64_t he = (int64_t)ceil((double)(ph + 1) * bh) + y1;
                    int64_t ws = (int64_t)floor((double)pw * bw) + x1;
                    int64_t we = (int64_t)ceil((double)(pw + 1) * bw) + x1;
                    hs = hs < 0 ? 0 : (hs > H ? H : hs);
                    he = he < 0 ? 0 : (he > H ? H : he);
                    ws = ws < 0 ? 0 : (ws > W ? W : ws);
                    we = we < 0 ? 0 : (we > W ? W : we);
                    double m = 0.0;
                    int any = 0;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++) {
                            double v = poprt__load_f64(x->data, x->dtype, ((b * C + c) * H + h) * W + w);
                            if (!any || v > m)
                                m = v;
                            any = 1;
                        }
                    poprt__store_f64(y->data, y->dtype, ((r * C + c) * PH + ph) * PW + pw, m);
                }
    }
    return POPRT_OK;
}

/* ---- random numbers ------------------------------------------------------------------ */

/* splitmix64: tiny, well mixed, and fully determined by the seed */
static uint64_t qm_rand_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static double qm_rand_01(uint64_t *s)
{
    return (double)(qm_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double qm_rand_normal(uint64_t *s)
{
    double u1 = 1.0 - qm_rand_01(s), u2 = qm_rand_01(s);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * QM_PI * u2);
}

/* The seed attribute (a float) when given, else the runtime's per-node stream. */
static uint64_t qm_seed(poprt__kctx *k)
{
    const poprt__attr *a = poprt__node_attr(k->node, "seed");
    if (!a)
        return poprt__kctx_random_seed(k);
    float f = a->type == POPRT__ATTR_INT ? (float)a->i : a->f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return 0x5eed000000000000ull ^ u;
}

static poprt_status qm_random_fill(poprt__kctx *k, int normal)
{
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, y != NULL);
    if (st)
        return st;
    uint64_t s = qm_seed(k);
    double a, b;
    if (normal) {
        a = poprt__attr_f(k->node, "mean", 0.0f);
        b = poprt__attr_f(k->node, "scale", 1.0f);
    } else {
        a = poprt__attr_f(k->node, "low", 0.0f);
        b = poprt__attr_f(k->node, "high", 1.0f);
    }
    for (int64_t i = 0; i < y->numel; i++) {
        double v = normal ? a + b * qm_rand_normal(&s) : a + (b - a) * qm_rand_01(&s);
        poprt__store_f64(y->data, y->dtype, i, v);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_random_normal(poprt__kctx *k) { return qm_random_fill(k, 1); }
poprt_status poprt__ref_random_uniform(poprt__kctx *k) { return qm_random_fill(k, 0); }

poprt_status poprt__ref_bernoulli(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y);
    if (st)
        return st;
    uint64_t s = qm_seed(k);
    for (int64_t i = 0; i < y->numel; i++) {
        double p = poprt__load_f64(x->data, x->dtype, i);
        poprt__store_f64(y->data, y->dtype, i, qm_rand_01(&s) < p ? 1.0 : 0.0);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_multinomial(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y && x->rank == 2 && y->rank == 2);
    if (st)
        return st;
    const int64_t B = x->dims[0], C = x->dims[1], S = y->dims[1];
    double *cdf = poprt__kctx_scratch(k, (size_t)(C + 1) * sizeof *cdf);
    if (!cdf)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    uint64_t s = qm_seed(k);
    for (int64_t b = 0; b < B; b++) {
        double mx = -INFINITY, tot = 0.0;
        for (int64_t c = 0; c < C; c++)
            mx = fmax(mx, poprt__load_f64(x->data, x->dtype, b * C + c));
        for (int64_t c = 0; c < C; c++) {
            tot += exp(poprt__load_f64(x->data, x->dtype, b * C + c) - mx); /* unnormalised log-probs */
            cdf[c] = tot;
        }
        for (int64_t j = 0; j < S; j++) {
            double u = qm_rand_01(&s) * tot;
            int64_t c = 0;
            while (c < C - 1 && cdf[c] <= u)
                c++;
            poprt__store_i64(y->data, y->dtype, b * S + j, c);
        }
    }
    return POPRT_OK;
}

/* ---- strings ----------------------------------------------------------------------- */

static int qm_ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

poprt_status poprt__ref_string_normalizer(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt_status st = poprt__ref_need(k, x && x->dtype == POPRT_DTYPE_STRING && (x->rank == 1 || x->rank == 2));
    if (st)
        return st;
    if (x->rank == 2 && x->dims[0] != 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "input must be [C] or [1, C]");
    const char *act = poprt__attr_s(k->node, "case_change_action", "NONE");
    const int upper = strcmp(act, "UPPER") == 0, lower = strcmp(act, "LOWER") == 0;
    const int sensitive = (int)poprt__attr_i(k->node, "is_case_sensitive", 0);
    const poprt__attr *sw = poprt__node_attr(k->node, "stopwords");
    const char *const *xs = x->data;
    const int64_t n = x->numel;
    const char **keep = poprt__kctx_scratch(k, (size_t)(n + 1) * sizeof *keep);
    if (!keep)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++) {
        int stop = 0;
        for (int64_t j = 0; sw && j < sw->n && !stop; j++)
            stop = sensitive ? strcmp(xs[i], sw->strings[j]) == 0 : qm_ieq(xs[i], sw->strings[j]);
        if (!stop)
            keep[m++] = xs[i];
    }
    int64_t od[2] = {1, m ? m : 1}; /* all removed: one empty string */
    if ((st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_STRING, x->rank,
                                       x->rank == 2 ? od : od + 1)))
        return st;
    poprt__tval *y = poprt__kout(k, 0);
    if (!y)
        return POPRT_OK;
    char **ys = y->data;
    if (!m) {
        ys[0] = poprt__kctx_strdup(k, "", 0);
        return ys[0] ? POPRT_OK
                     : POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t i = 0; i < m; i++) {
        size_t len = strlen(keep[i]);
        char *s = poprt__kctx_strdup(k, keep[i], len);
        if (!s)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (size_t c = 0; c < len; c++)
            if (upper)
                s[c] = (char)toupper((unsigned char)s[c]);
            else if (lower)
                s[c] = (char)tolower((unsigned char)s[c]);
        ys[i] = s;
    }
    return POPRT_OK;
}

poprt_status poprt__ref_string_concat(poprt__kctx *k)
{
    const poprt__tval *a = poprt__kin(k, 0), *b = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, a && b && y);
    if (st)
        return st;
    int64_t sa[POPRT__MAX_RANK], sb[POPRT__MAX_RANK], idx[POPRT__MAX_RANK] = {0};
    poprt__bcast_strides(a, y->rank, y->dims, sa);
    poprt__bcast_strides(b, y->rank, y->dims, sb);
    const char *const *as = a->data, *const *bs = b->data;
    char **ys = y->data;
    for (int64_t i = 0; i < y->numel; i++) {
        int64_t ia = 0, ib = 0;
        for (int d = 0; d < y->rank; d++) {
            ia += idx[d] * sa[d];
            ib += idx[d] * sb[d];
        }
        size_t la = strlen(as[ia]), lb = strlen(bs[ib]);
        char *s = poprt__kctx_strdup(k, as[ia], la + lb);
        if (!s)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        memcpy(s + la, bs[ib], lb);
        s[la + lb] = '\0';
        ys[i] = s;
        for (int d = y->rank - 1; d >= 0; d--)
            if (++idx[d] < y->dims[d])
                break;
            else
                idx[d] = 0;
    }
    return POPRT_OK;
}

/* Splits s; calls out(ctx, piece, len) per substring; returns the count. */
static int64_t qm_split(const char *s, const char *delim, int64_t maxsplit, char **outs,
                        poprt__kctx *k, int *oom)
{
    int64_t n = 0, splits = 0;
    size_t dl = delim ? strlen(delim) : 0;
    const char *p = s;
    if (!dl) {
        /* runs of whitespace separate; leading/trailing whitespace is dropped */
        while (*p) {
            while (*p && isspace((unsigned char)*p))
                p++;
            if (!*p)
                break;
            const char *e = p;
            if (maxsplit >= 0 && splits >= maxsplit)
                e = p + strlen(p);
            else
                while (*e && !isspace((unsigned char)*e))
                    e++;
            if (maxsplit >= 0 && splits >= maxsplit) {
                /* the rest, trailing whitespace removed */
                while (e > p && isspace((unsigned char)e[-1]))
                    e--;
            }
            if (outs && !(outs[n] = poprt__kctx_strdup(k, p, (size_t)(e - p))))
                *oom = 1;
            n++;
            splits++;
            p = e;
        }
        return n;
    }
    for (;;) {
        const char *e = (maxsplit >= 0 && splits >= maxsplit) ? NULL : strstr(p, delim);
        if (!e)
            e = p + strlen(p);
        if (outs && !(outs[n] = poprt__kctx_strdup(k, p, (size_t)(e - p))))
            *oom = 1;
        n++;
        if (!*e)
            break;
        p = e + dl;
        splits++;
    }
    return n;
}

poprt_status poprt__ref_string_split(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt_status st = poprt__ref_need(k, x && x->dtype == POPRT_DTYPE_STRING && x->rank < POPRT__MAX_RANK);
    if (st)
        return st;
    const char *delim = poprt__attr_s(k->node, "delimiter", "");
    const poprt__attr *ma = poprt__node_attr(k->node, "maxsplit");
    const int64_t maxsplit = ma ? ma->i : -1;
    const char *const *xs = x->data;
    int64_t most = 0;
    int oom = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = qm_split(xs[i], delim, maxsplit, NULL, k, &oom);
        most = c > most ? c : most;
    }
    int64_t od[POPRT__MAX_RANK];
    memcpy(od, x->dims, (size_t)x->rank * sizeof *od);
    od[x->rank] = most;
    if ((st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_STRING, x->rank + 1, od)) ||
        (st = poprt__kctx_alloc_output(k, 1, POPRT_DTYPE_INT64, x->rank, od)))
        return st;
    poprt__tval *y = poprt__kout(k, 0), *z = poprt__kout(k, 1);
    char **tmp = poprt__kctx_scratch(k, (size_t)(most + 1) * sizeof *tmp);
    char *empty = poprt__kctx_strdup(k, "", 0);
    if (!tmp || !empty)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = qm_split(xs[i], delim, maxsplit, tmp, k, &oom);
        if (oom)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        if (y)
            for (int64_t j = 0; j < most; j++)
                ((char **)y->data)[i * most + j] = j < c ? tmp[j] : empty;
        if (z)
            ((int64_t *)z->data)[i] = c;
    }
    return POPRT_OK;
}

static void *qm_scratch_alloc(void *ctx, size_t n) { return poprt__kctx_scratch(ctx, n); }

poprt_status poprt__ref_regex_full_match(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y && x->dtype == POPRT_DTYPE_STRING);
    if (st)
        return st;
    poprt__regex *re;
    if ((st = poprt__regex_compile(poprt__attr_s(k->node, "pattern", ""), qm_scratch_alloc, k,
                                   &re)))
        return poprt__node_err_last(k->node, st);
    const char *const *xs = x->data;
    size_t most = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        size_t l = strlen(xs[i]);
        most = l > most ? l : most;
    }
    size_t n_visited, n_stack;
    if (!poprt__regex_scratch(re, most, &n_visited, &n_stack))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                               "pattern of %d instructions on a %zu-byte string: more than %d "
                               "match states",
                               poprt__regex_prog_size(re), most, POPRT__REGEX_MAX_STATES);
    uint8_t *visited = poprt__kctx_scratch(k, n_visited);
    uint32_t *stack = poprt__kctx_scratch(k, n_stack * sizeof *stack);
    if (!visited || !stack)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    uint8_t *yb = y->data;
    for (int64_t i = 0; i < x->numel; i++)
        yb[i] = (uint8_t)poprt__regex_full_match(re, xs[i], visited, stack);
    return POPRT_OK;
}

/* ---- ai.onnx.ml ---------------------------------------------------------------------- */

poprt_status poprt__ref_binarizer(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y);
    if (st)
        return st;
    const double t = poprt__attr_f(k->node, "threshold", 0.0f);
    for (int64_t i = 0; i < x->numel; i++)
        poprt__store_f64(y->data, y->dtype, i,
                         poprt__load_f64(x->data, x->dtype, i) > t ? 1.0 : 0.0);
    return POPRT_OK;
}

/* A tensor attribute as doubles in scratch (n values), or NULL if absent. */
static const double *qm_attr_tensor(poprt__kctx *k, const char *name, int64_t *n)
{
    const poprt__attr *a = poprt__node_attr(k->node, name);
    *n = 0;
    if (!a)
        return NULL;
    if (a->type == POPRT__ATTR_FLOATS || a->type == POPRT__ATTR_INTS) {
        double *d = poprt__kctx_scratch(k, (size_t)(a->n + 1) * sizeof *d);
        if (!d)
            return NULL;
        for (int64_t i = 0; i < a->n; i++)
            d[i] = a->type == POPRT__ATTR_FLOATS ? a->floats[i] : (double)a->ints[i];
        *n = a->n;
        return d;
    }
    if (a->type != POPRT__ATTR_TENSOR || !a->t)
        return NULL;
    int64_t m = poprt__type_numel(&a->t->type);
    if (m < 0 || !a->t->data)
        return NULL;
    double *d = poprt__kctx_scratch(k, (size_t)(m + 1) * sizeof *d);
    if (!d)
        return NULL;
    for (int64_t i = 0; i < m; i++)
        d[i] = poprt__load_f64(a->t->data, a->t->type.elem, i);
    *n = m;
    return d;
}

static int qm_ints(const poprt__kctx *k, const char *name, const int64_t **v, int64_t *n)
{
    *v = poprt__attr_ints(k->node, name, n);
    return *v != NULL;
}

poprt_status poprt__ref_tree_ensemble(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y && x->rank == 2 && y->rank == 2);
    if (st)
        return st;
    const int64_t N = x->dims[0], F = x->dims[1], T = y->dims[1];
    const int64_t *roots, *fid, *tid, *tleaf, *fnid, *fleaf, *ltgt, *mtrack;
    int64_t nroots, nn, n1, n2, n3, n4, nl, nmt;
    int64_t nsplit, nmode, nw, nmem;
    const double *splits = qm_attr_tensor(k, "nodes_splits", &nsplit);
    const double *modes = qm_attr_tensor(k, "nodes_modes", &nmode);
    const double *wts = qm_attr_tensor(k, "leaf_weights", &nw);
    const double *mem = qm_attr_tensor(k, "membership_values", &nmem);
    if (!qm_ints(k, "tree_roots", &roots, &nroots) || !qm_ints(k, "nodes_featureids", &fid, &nn) ||
        !qm_ints(k, "nodes_truenodeids", &tid, &n1) || !qm_ints(k, "nodes_trueleafs", &tleaf, &n2) ||
        !qm_ints(k, "nodes_falsenodeids", &fnid, &n3) ||
        !qm_ints(k, "nodes_falseleafs", &fleaf, &n4) ||
        !qm_ints(k, "leaf_targetids", &ltgt, &nl) || !splits || !modes || !wts)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing tree attributes");
    qm_ints(k, "nodes_missing_value_tracks_true", &mtrack, &nmt);
    if (n1 != nn || n2 != nn || n3 != nn || n4 != nn || nsplit != nn || nmode != nn || nw != nl)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "tree attribute lengths disagree");
    /* membership sets: the i-th BRANCH_MEMBER node owns the i-th NaN-separated run */
    int64_t *mstart = poprt__kctx_scratch(k, (size_t)(nn + 1) * sizeof *mstart);
    int64_t *mend = poprt__kctx_scratch(k, (size_t)(nn + 1) * sizeof *mend);
    double *acc = poprt__kctx_scratch(k, (size_t)(T + 1) * sizeof *acc);
    int64_t *hits = poprt__kctx_scratch(k, (size_t)(T + 1) * sizeof *hits);
    if (!mstart || !mend || !acc || !hits)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    int64_t mp = 0;
    for (int64_t i = 0; i < nn; i++) {
        mstart[i] = mend[i] = 0;
        if ((int)modes[i] != 6)
            continue;
        mstart[i] = mp;
        while (mp < nmem && !isnan(mem[mp]))
            mp++;
        mend[i] = mp;
        if (mp < nmem)
            mp++;
    }
    const int agg = (int)poprt__attr_i(k->node, "aggregate_function", 1);
    const int post = (int)poprt__attr_i(k->node, "post_transform", 0);
    for (int64_t r = 0; r < N; r++) {
        for (int64_t t = 0; t < T; t++) {
            acc[t] = 0.0;
            hits[t] = 0;
        }
        for (int64_t tr = 0; tr < nroots; tr++) {
            int64_t node = roots[tr], leaf = -1;
            for (int64_t guard = 0; guard <= nn && leaf < 0; guard++) {
                if (node < 0 || node >= nn || fid[node] < 0 || fid[node] >= F)
                    return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                                           "tree node index out of range");
                double v = poprt__load_f64(x->data, x->dtype, r * F + fid[node]), s = splits[node];
                int c;
                if (isnan(v) && mtrack && node < nmt && mtrack[node])
                    c = 1;
                else
                    switch ((int)modes[node]) {
                    case 0: c = v <= s; break;
                    case 1: c = v < s; break;
                    case 2: c = v >= s; break;
                    case 3: c = v > s; break;
                    case 4: c = v == s; break;
                    case 5: c = v != s; break;
                    default:
                        c = 0;
                        for (int64_t m = mstart[node]; m < mend[node] && !c; m++)
                            c = v == mem[m];
                        break;
                    }
                int64_t next = c ? tid[node] : fnid[node];
                if (c ? tleaf[node] : fleaf[node])
                    leaf = next;
                else
                    node = next;
            }
            if (leaf < 0 || leaf >= nl || ltgt[leaf] < 0 || ltgt[leaf] >= T)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "bad tree leaf");
            int64_t t = ltgt[leaf];
            double w = wts[leaf];
            if (agg == 2)
                acc[t] = hits[t] ? fmin(acc[t], w) : w;
            else if (agg == 3)
                acc[t] = hits[t] ? fmax(acc[t], w) : w;
            else
                acc[t] += w;
            hits[t]++;
        }
        if (agg == 0 && nroots > 0)
            for (int64_t t = 0; t < T; t++)
                acc[t] /= (double)nroots;
        poprt__misc_post_transform(acc, T, post);
        for (int64_t t = 0; t < T; t++)
            poprt__store_f64(y->data, y->dtype, r * T + t, acc[t]);
    }
    return POPRT_OK;
}

void poprt__misc_post_transform(double *v, int64_t n, int post)
{
    if (post == 1 || post == 3) { /* SOFTMAX, SOFTMAX_ZERO */
        double mx = -INFINITY, sum = 0.0;
        for (int64_t i = 0; i < n; i++)
            mx = fmax(mx, v[i]);
        for (int64_t i = 0; i < n; i++) {
            v[i] = (post == 3 && v[i] == 0.0) ? 0.0 : exp(v[i] - mx);
            sum += v[i];
        }
        for (int64_t i = 0; i < n && sum > 0; i++)
            v[i] /= sum;
    } else if (post == 2) { /* LOGISTIC */
        for (int64_t i = 0; i < n; i++)
            v[i] = 1.0 / (1.0 + exp(-v[i]));
    } else if (post == 4) { /* PROBIT: sqrt(2) * erfinv(2p - 1) */
        for (int64_t i = 0; i < n; i++) {
            double p = 2.0 * v[i] - 1.0, w = -log((1.0 - p) * (1.0 + p)), q;
            if (w < 5.0) {
                w -= 2.5;
                q = 2.81022636e-08;
                q = 3.43273939e-07 + q * w;
                q = -3.5233877e-06 + q * w;
                q = -4.39150654e-06 + q * w;
                q = 0.00021858087 + q * w;
                q = -0.00125372503 + q * w;
                q = -0.00417768164 + q * w;
                q = 0.246640727 + q * w;
                q = 1.50140941 + q * w;
            } else {
                w = sqrt(w) - 3.0;
                q = -0.000200214257;
                q = 0.000100950558 + q * w;
                q = 0.00134934322 + q * w;
                q = -0.00367342844 + q * w;
                q = 0.00573950773 + q * w;
                q = -0.0076224613 + q * w;
                q = 0.00943887047 + q * w;
                q = 1.00167406 + q * w;
                q = 2.83297682 + q * w;
            }
            v[i] = 1.41421356237309504880 * q * p;
        }
    }
}

/* ---- ai.onnx.preview.training -------------------------------------------------------- */

/* Inputs R, T, then n tensors in each of `groups` groups; n from the input count. */
static poprt_status qm_train_setup(poprt__kctx *k, int groups, int64_t *n, double *r, int64_t *t)
{
    if ((k->n_in - 2) % groups || k->n_in <= 2 || k->n_out != (k->n_in - 2) / groups * (groups - 1))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "%d inputs / %d outputs do not fit the optimizer", k->n_in, k->n_out);
    *n = (k->n_in - 2) / groups;
    if (!poprt__kin(k, 0) || !poprt__kin(k, 1))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing R or T");
    *r = poprt__ref_scalar_f(poprt__kin(k, 0), 0);
    *t = poprt__ref_scalar_i(poprt__kin(k, 1), 0);
    for (int i = 2; i < k->n_in; i++) {
        const poprt__tval *v = poprt__kin(k, i);
        if (!v || v->numel != poprt__kin(k, 2 + (i - 2) % (int)*n)->numel)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "optimizer input %d does not match its tensor", i);
    }
    return POPRT_OK;
}

#define QM_LD(tv, i) poprt__load_f64((tv)->data, (tv)->dtype, (i))
#define QM_ST(tv, i, v)                                                                            \
    do {                                                                                           \
        if (tv)                                                                                    \
            poprt__store_f64((tv)->data, (tv)->dtype, (i), (v));                                   \
    } while (0)

poprt_status poprt__ref_adagrad(poprt__kctx *k)
{
    int64_t n, t;
    double r;
    poprt_status st = qm_train_setup(k, 3, &n, &r, &t);
    if (st)
        return st;
    const double decay = poprt__attr_f(k->node, "decay_factor", 0.0f);
    const double eps = poprt__attr_f(k->node, "epsilon", 1e-6f);
    const double lam = poprt__attr_f(k->node, "norm_coefficient", 0.0f);
    const double rr = r / (1.0 + (double)t * decay);
    for (int64_t j = 0; j < n; j++) {
        const poprt__tval *x = poprt__kin(k, 2 + (int)j), *g = poprt__kin(k, 2 + (int)(n + j));
        const poprt__tval *h = poprt__kin(k, 2 + (int)(2 * n + j));
        poprt__tval *xo = poprt__kout(k, (int)j), *ho = poprt__kout(k, (int)(n + j));
        for (int64_t i = 0; i < x->numel; i++) {
            double xv = QM_LD(x, i), gr = lam * xv + QM_LD(g, i);
            double hn = QM_LD(h, i) + gr * gr;
            QM_ST(xo, i, xv - rr * gr / (sqrt(hn) + eps));
            QM_ST(ho, i, hn);
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_momentum(poprt__kctx *k)
{
    int64_t n, t;
    double r;
    poprt_status st = qm_train_setup(k, 3, &n, &r, &t);
    if (st)
        return st;
    const double alpha = poprt__attr_f(k->node, "alpha", 0.0f);
    const double beta = poprt__attr_f(k->node, "beta", 0.0f);
    const double lam = poprt__attr_f(k->node, "norm_coefficient", 0.0f);
    const int nesterov = strcmp(poprt__attr_s(k->node, "mode", "standard"), "nesterov") == 0;
    const double b = t > 0 ? beta : 1.0;
    for (int64_t j = 0; j < n; j++) {
        const poprt__tval *x = poprt__kin(k, 2 + (int)j), *g = poprt__kin(k, 2 + (int)(n + j));
        const poprt__tval *v = poprt__kin(k, 2 + (int)(2 * n + j));
        poprt__tval *xo = poprt__kout(k, (int)j), *vo = poprt__kout(k, (int)(n + j));
        for (int64_t i = 0; i < x->numel; i++) {
            double xv = QM_LD(x, i), gr = lam * xv + QM_LD(g, i);
            double vn = alpha * QM_LD(v, i) + b * gr;
            QM_ST(xo, i, nesterov ? xv - r * (gr + alpha * vn) : xv - r * vn);
            QM_ST(vo, i, vn);
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_adam(poprt__kctx *k)
{
    int64_t n, t;
    double r;
    poprt_status st = qm_train_setup(k, 4, &n, &r, &t);
    if (st)
        return st;
    const double alpha = poprt__attr_f(k->node, "alpha", 0.9f);
    const double beta = poprt__attr_f(k->node, "beta", 0.999f);
    const double eps = poprt__attr_f(k->node, "epsilon", 1e-6f);
    const double lam = poprt__attr_f(k->node, "norm_coefficient", 0.0f);
    const double lam_post = poprt__attr_f(k->node, "norm_coefficient_post", 0.0f);
    const double ra = t > 0 ? r * sqrt(1.0 - pow(beta, (double)t)) / (1.0 - pow(alpha, (double)t)) : r;
    for (int64_t j = 0; j < n; j++) {
        const poprt__tval *x = poprt__kin(k, 2 + (int)j), *g = poprt__kin(k, 2 + (int)(n + j));
        const poprt__tval *v = poprt__kin(k, 2 + (int)(2 * n + j));
        const poprt__tval *h = poprt__kin(k, 2 + (int)(3 * n + j));
        poprt__tval *xo = poprt__kout(k, (int)j), *vo = poprt__kout(k, (int)(n + j));
        poprt__tval *ho = poprt__kout(k, (int)(2 * n + j));
        for (int64_t i = 0; i < x->numel; i++) {
            double xv = QM_LD(x, i), gr = lam * xv + QM_LD(g, i);
            double vn = alpha * QM_LD(v, i) + (1.0 - alpha) * gr;
            double hn = beta * QM_LD(h, i) + (1.0 - beta) * gr * gr;
            double xn = xv - ra * (vn / (sqrt(hn) + eps));
            QM_ST(xo, i, (1.0 - lam_post) * xn);
            QM_ST(vo, i, vn);
            QM_ST(ho, i, hn);
        }
    }
    return POPRT_OK;
}
#undef QM_LD
#undef QM_ST
/* ==== end of section 'quant' helper ==== */
