/* Reference kernels of the 'rnn' group: RNN, GRU, LSTM (every version: the
 * opset-1 and GRU-3 schemas differ only in attributes the inference checks,
 * output_sequence and GRU-1's "foward" default direction).
 *
 * Per direction: X·W^T (+ biases) for all steps at once, then per step
 * H·R^T for every batch row and the gate math. The products run on a GEMM
 * engine (kernels/ref/gemm.h: the reference loops here, the fast GEMM in
 * lib/kernels/x86), with W and R used as stored (op(B) = W^T), or as the
 * node's prepare packed them for the engine (its parts, below); one batch
 * row's recurrent product is a matrix-vector product R·h. The activations
 * sigmoid, tanh and relu use the session's vectorised math.
 * With sequence_lens, batch entry b runs only its first len[b] steps (the
 * reverse direction starts at len[b]-1); Y is zero past them and Y_h/Y_c
 * hold the state after the last step run. A bidirectional node's two
 * directions run their steps on a thread each when the session has two
 * (or more, for small steps); the products give the same bits either way. */
#include <math.h>
#include <string.h>
#include "kernels/ref/rnn.h"
#include "kernels/ref/util.h"

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
    /* RNN's schema default is {Tanh, Tanh}: written out on a one-direction
     * RNN, the second is the unused reverse one */
    if (per_dir == 1 && dirs == 1 && n == 2)
        n = 1;
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

/* x[i] = clip then act(x[i]) for n values; the switch stays outside the
 * loop; sigmoid, tanh and relu from vm (kernels/vmath.h). */
static void act_apply(const poprt__vmath_variant *vm, const rnn_act *a, float clip, float *x,
                      int64_t n)
{
    if (clip > 0.f)
        for (int64_t i = 0; i < n; i++)
            x[i] = x[i] < -clip ? -clip : (x[i] > clip ? clip : x[i]);
    float al = a->alpha, be = a->beta;
    switch (a->kind) {
    case ACT_SIGMOID:
        vm->unary[POPRT__VMATH_sigmoid](x, x, n, NULL);
        break;
    case ACT_TANH:
        vm->unary[POPRT__VMATH_tanh](x, x, n, NULL);
        break;
    case ACT_RELU:
        vm->unary[POPRT__VMATH_relu](x, x, n, NULL);
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
    const poprt__gemm_engine *e; /* the products */
    const poprt__vmath_variant *vm;
} rnn_job;

#define RNN_FEW_ROWS POPRT__RNN_FEW_ROWS /* (rnn.h) */
/* Products per step (batch x gates x hidden x hidden) up to which the two
 * directions run on a thread each beyond two threads */
#define RNN_DIRS_APART_MACS (1 << 22)

/* C[b][n] = beta C[b][n] + sum_k A[b][k] Wt[n][k] for b < M, n < N (A's
 * rows K apart, C's ldc apart), on j's engine: with pk (Wt as the engine
 * packed it, an engine part) through it with workspace ws; else up to
 * RNN_FEW_ROWS rows as Wt A^T into ct (N x M floats of scratch), then
 * added to C (one row: straight into C); more with workspace ws (for the
 * shape M x N x K, op(B) = Wt^T). */
static void rnn_mm(poprt__kctx *k, const rnn_job *j, void *ws, float *ct, int64_t M, int64_t N,
                   int64_t K, const float *A, const float *Wt, const void *pk, float beta,
                   float *C, int64_t ldc)
{
    if (pk) {
        j->e->run_part(k, ws, M, N, K, A, K, pk, beta, C, ldc);
    } else if (M == 1) {
        j->e->run(k, NULL, 0, 1, N, 1, K, 1.f, Wt, K, A, K, beta, C, 1);
    } else if (M <= RNN_FEW_ROWS) {
        j->e->run(k, NULL, 0, 1, N, M, K, 1.f, Wt, K, A, K, 0.f, ct, M);
        for (int64_t b = 0; b < M; b++)
            for (int64_t n = 0; n < N; n++)
                C[b * ldc + n] = beta == 0.f ? ct[n * M + b] : ct[n * M + b] + beta * C[b * ldc + n];
    } else {
        j->e->run(k, ws, 0, 1, M, N, K, 1.f, A, K, Wt, K, beta, C, ldc);
    }
}

/* *ws = the workspace rnn_mm needs for M rows (NULL up to RNN_FEW_ROWS:
 * none); 0 when out of memory. */
static int rnn_mm_ws(poprt__kctx *k, const rnn_job *j, int64_t M, int64_t N, int64_t K,
                     void **ws)
{
    *ws = NULL;
    return M <= RNN_FEW_ROWS || poprt__gemm_engine_ws(k, j->e, 0, 1, M, N, K, ws);
}

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
                               poprt__dtype_name((poprt_dtype)t->dtype));
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

/* One direction's state between its preparation and its steps. Scratch:
 * xw [T*B, G*H], hr [B, G*H], h, c, r·h. pk_h, pk_r: R's rows of the two
 * products (all, or a GRU's z r and h rows apart) as the engine packed
 * them, or NULL. */
typedef struct rnn_dir {
    const rnn_job *j;
    int d, reverse;
    const rnn_act *act;
    const float *R;
    const void *pk_h, *pk_r;
    float *xw, *hr, *h, *c, *rh, *rbh, *ct;
    void *ws_h, *ws_r;
} rnn_dir;

/* The recurrent product's operand packed by the node's prepare: part
 * d * 2 + p (p 1: a GRU's h rows without linear_before_reset) of K x N,
 * taken for two or more batch rows (one row reads R as stored: the
 * engines' matrix-vector product streams it as fast, and a batch of 1
 * packs nothing); *ws its workspace from k's scratch. NULL when there is
 * none or no scratch. */
static const void *rnn_part(poprt__kctx *k, const rnn_job *j, int d, int p, int64_t K,
                            int64_t N, void **ws)
{
    *ws = NULL;
    const void *b = j->B >= 2 && j->e->part ? j->e->part(k, d * 2 + p, K, N) : NULL;
    if (b)
        *ws = poprt__kctx_scratch(k, j->e->part_ws_size(b, j->B, N, K));
    return *ws ? b : NULL;
}

/* Direction d's scratch, biases, input projection (over k's threads) and
 * initial states. */
static poprt_status dir_prepare(poprt__kctx *k, const rnn_job *j, int d, rnn_dir *s)
{
    int64_t T = j->T, B = j->B, I = j->I, H = j->H, G = j->gates, GH = G * H;
    s->j = j;
    s->d = d;
    s->reverse =
        d == 1 || strcmp(poprt__attr_s(k->node, "direction", "forward"), "reverse") == 0;
    s->act = &j->acts[d * (G == 4 ? 3 : (G == 3 ? 2 : 1))];
    size_t fs = sizeof(float);
    float *xw = s->xw = poprt__kctx_scratch(k, (size_t)(T * B * GH + 1) * fs);
    s->hr = poprt__kctx_scratch(k, (size_t)(B * GH + 1) * fs);
    float *h = s->h = poprt__kctx_scratch(k, (size_t)(B * H + 1) * fs);
    float *c = s->c = poprt__kctx_scratch(k, (size_t)(B * H + 1) * fs);
    s->rh = poprt__kctx_scratch(k, (size_t)(B * H + 1) * fs);
    float *bias = poprt__kctx_scratch(k, (size_t)(GH + 1) * fs);
    float *rbh = s->rbh = poprt__kctx_scratch(k, (size_t)(H + 1) * fs);
    if (!xw || !s->hr || !h || !c || !s->rh || !bias || !rbh)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    const float *W = j->W + d * GH * I;
    s->R = j->R + d * GH * H;
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
    /* the products' workspaces, once per call (scratch lives until the
     * kernel returns): X W^T over the T B rows at once (layout 0, or one
     * batch entry) or T rows per batch entry; H R^T and GRU's (r h) Rh^T
     * over the B rows (one row: matrix-vector products, no workspace) */
    const int64_t px = !j->layout || B == 1 ? T * B : T;
    const int64_t cols = G == 3 && !j->lbr ? 2 * H : GH;
    const int gru_rh = G == 3 && !j->lbr; /* r h before its product */
    void *ws_x = NULL;
    s->ws_r = NULL;
    s->pk_h = rnn_part(k, j, d, 0, H, cols, &s->ws_h);
    s->pk_r = gru_rh ? rnn_part(k, j, d, 1, H, H, &s->ws_r) : NULL;
    /* W as the prepare packed it, for a projection on the GEMM */
    const void *pk_w = px > RNN_FEW_ROWS && j->e->part
                           ? j->e->part(k, POPRT__RNN_PART_W + d, I, GH)
                           : NULL;
    if (pk_w && !(ws_x = poprt__kctx_scratch(k, j->e->part_ws_size(pk_w, px, GH, I))))
        pk_w = NULL;
    /* Wt A^T of up to RNN_FEW_ROWS rows (the projection's too) */
    s->ct = poprt__kctx_scratch(k, (size_t)(RNN_FEW_ROWS * GH) * fs);
    if ((!pk_w && !rnn_mm_ws(k, j, px, GH, I, &ws_x)) ||
        (!s->pk_h && !rnn_mm_ws(k, j, B, cols, H, &s->ws_h)) ||
        (gru_rh && !s->pk_r && !rnn_mm_ws(k, j, B, H, H, &s->ws_r)) || !s->ct)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    /* xw row t B + b: the biases + X[t, b] W^T */
    for (int64_t q = 0; q < T * B; q++)
        memcpy(xw + q * GH, bias, (size_t)GH * fs);
    for (int64_t b0 = 0; px > 0 && b0 < T * B / px; b0++)
        rnn_mm(k, j, ws_x, s->ct, px, GH, I, j->X + x_row(j, 0, b0) * I, W, pk_w, 1.f,
               xw + b0 * GH, px == T * B ? GH : B * GH);
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
    return POPRT_OK;
}

/* Direction s->d's steps, their products over k's threads (k NULL: the
 * calling thread only), then its final states. */
static void dir_steps(poprt__kctx *k, const rnn_dir *sd)
{
    const rnn_job *j = sd->j;
    const int d = sd->d, reverse = sd->reverse;
    int64_t T = j->T, B = j->B, H = j->H, G = j->gates, GH = G * H;
    const int64_t cols = G == 3 && !j->lbr ? 2 * H : GH;
    const int gru_rh = G == 3 && !j->lbr;
    const rnn_act *act = sd->act;
    const float *R = sd->R, *xw = sd->xw, *rbh = sd->rbh;
    float *hr = sd->hr, *h = sd->h, *c = sd->c, *rh = sd->rh, *ct = sd->ct;
    void *ws_h = sd->ws_h, *ws_r = sd->ws_r;
    size_t fs = sizeof(float);
    const float *P = j->P ? j->P + d * 3 * H : NULL;
    for (int64_t s = 0; s < T; s++) {
        /* recurrent product for all batch rows (the GRU candidate gate
         * needs r first unless linear_before_reset) */
        rnn_mm(k, j, ws_h, ct, B, cols, H, h, R, sd->pk_h, 0.f, hr, GH);
        if (gru_rh) {
            /* z, r, then h~'s input part and r h per row; r h Rh^T for all */
            for (int64_t b = 0; b < B; b++) {
                const int64_t len = j->lens ? j->lens[b] : T;
                float *g = hr + b * GH, *rhb = rh + b * H;
                if (s >= len) { /* (rows the product reads and adds to) */
                    memset(rhb, 0, (size_t)H * fs);
                    memset(g + 2 * H, 0, (size_t)H * fs);
                    continue;
                }
                const float *x = xw + ((reverse ? len - 1 - s : s) * B + b) * GH;
                for (int64_t n = 0; n < 2 * H; n++)
                    g[n] += x[n];
                act_apply(j->vm, &act[0], j->clip, g, 2 * H);
                for (int64_t n = 0; n < H; n++) {
                    rhb[n] = g[H + n] * h[b * H + n];
                    g[2 * H + n] = x[2 * H + n];
                }
            }
            rnn_mm(k, j, ws_r, ct, B, H, H, rh, R + 2 * H * H, sd->pk_r, 1.f, hr + 2 * H, GH);
        }
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
                act_apply(j->vm, &act[0], j->clip, g, H);
                memcpy(hb, g, (size_t)H * fs);
            } else if (G == 3) {
                /* zrh: z = f(.), r = f(.), h~ = g(.), H = (1-z) h~ + z H */
                float *z = g, *r = g + H, *hh = g + 2 * H;
                if (j->lbr) {
                    for (int64_t n = 0; n < 2 * H; n++)
                        g[n] += x[n];
                    act_apply(j->vm, &act[0], j->clip, z, 2 * H);
                    for (int64_t n = 0; n < H; n++)
                        hh[n] = x[2 * H + n] + r[n] * (hh[n] + rbh[n]);
                } /* else: z, r and hh made above */
                act_apply(j->vm, &act[1], j->clip, hh, H);
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
                act_apply(j->vm, &act[0], j->clip, gi, H);
                if (j->input_forget)
                    for (int64_t n = 0; n < H; n++)
                        gf[n] = 1.f - gi[n];
                else
                    act_apply(j->vm, &act[0], j->clip, gf, H);
                act_apply(j->vm, &act[1], j->clip, gc, H);
                for (int64_t n = 0; n < H; n++)
                    cb[n] = gf[n] * cb[n] + gi[n] * gc[n];
                if (P)
                    for (int64_t n = 0; n < H; n++)
                        go[n] += P[H + n] * cb[n];
                act_apply(j->vm, &act[0], j->clip, go, H);
                memcpy(gc, cb, (size_t)H * fs);
                act_apply(j->vm, &act[2], 0.f, gc, H);
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
}

static void dir_steps_fn(void *ctx, int64_t d0, int64_t d1)
{
    const rnn_dir *dirs = ctx;
    for (int64_t d = d0; d < d1; d++)
        dir_steps(NULL, &dirs[d]);
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

poprt_status poprt__rnn_op(poprt__kctx *k, int gates, const poprt__gemm_engine *e)
{
    rnn_job j;
    memset(&j, 0, sizeof j);
    j.gates = gates;
    j.e = e;
    j.vm = poprt__kctx_vmath(k);
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
    rnn_dir dirs[2];
    for (int d = 0; d < j.dirs && !st; d++)
        st = dir_prepare(k, &j, d, &dirs[d]);
    if (st)
        return st;
    /* Two directions on two or more threads: each on a thread of its own,
     * its products on that thread, with no hand-over per step (a step's
     * products of a small batch split over the threads cost more in
     * hand-overs than they saved: gru_bi_t100_b4 at 2 threads was slower
     * than at 1). Beyond two threads only while a step's products are
     * small; the engines' results do not depend on the threads either way. */
    const int64_t step_macs = j.B * GH * j.H;
    if (j.dirs == 2 && poprt__kctx_threads(k) >= 2 &&
        (poprt__kctx_threads(k) == 2 || step_macs <= RNN_DIRS_APART_MACS))
        poprt__kctx_parallel_for(k, 2, 1, dir_steps_fn, dirs);
    else
        for (int d = 0; d < j.dirs; d++)
            dir_steps(k, &dirs[d]);
    f32_back(k, 0, j.Y);
    f32_back(k, 1, j.Yh);
    if (gates == 4)
        f32_back(k, 2, j.Yc);
    return POPRT_OK;
}

poprt_status poprt__ref_rnn(poprt__kctx *k) { return poprt__rnn_op(k, 1, &poprt__ref_gemm_engine); }
poprt_status poprt__ref_gru(poprt__kctx *k) { return poprt__rnn_op(k, 3, &poprt__ref_gemm_engine); }
poprt_status poprt__ref_lstm(poprt__kctx *k)
{
    return poprt__rnn_op(k, 4, &poprt__ref_gemm_engine);
}
