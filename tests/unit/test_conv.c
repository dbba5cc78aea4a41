/* Unit tests: the float32 Conv fast paths (tiled implicit GEMM over
 * pre-packed weights, the plain im2col + GEMM path, depthwise) against a
 * direct convolution summed in double, over many shapes: strides, pads,
 * dilations, groups, 1x1, depthwise, odd sizes, N > 1, with and without
 * bias. Weights are packed by the op's prepare() as a session would.
 * The cases cover the blocked direct convolution (kernels/x86/conv_blocked.h)
 * too, which takes every 2-D single-group conv with more than one tap on
 * CPUs with AVX-512 (elsewhere those cases run the other paths); those with
 * channels not a multiple of 16, column stride 1 or 2 and at least 16
 * output columns take its row tiles (the stems, the odd-channel and
 * dilated cases, the "rows" ones).
 * Tolerance: 1e-4 relative to the sum of |terms| (K up to 4608), and
 * results with 1 and 2 threads must be bit-identical. Then the ai.poprt
 * FusedConv kernel (each activation, with and without a residual; with
 * NCHW16c operands, on the blocked path and converted around the plain
 * ones) against the same reference, and the compile-time rewrite (lib/compiler/
 * fuse_conv.c) on small graphs: fewer nodes, outputs within 1e-5 relative
 * of the unfused session, unchanged through an executable file. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "builder.h"
#include "compiler/compiler.h"
#include "runtime/runtime.h"

typedef struct conv_case {
    int64_t N, C, M, G, H, W, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int bias;
} conv_case;

static int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1)
{
    return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

static float frand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Direct convolution in double; also the sum of |terms| per output for the
 * tolerance. */
static void fill(float *a, int64_t n, uint32_t *s)
{
    for (int64_t i = 0; i < n; i++)
        a[i] = frand(s);
}

static void naive_conv(const conv_case *c, const float *x, const float *w, const float *b,
                       int64_t OH, int64_t OW, double *y, double *mag)
{
    const int64_t Cg = c->C / c->G, Mg = c->M / c->G;
    for (int64_t n = 0; n < c->N; n++)
        for (int64_t m = 0; m < c->M; m++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = b ? b[m] : 0.0, a = b ? fabs(b[m]) : 0.0;
                    const int64_t g = m / Mg;
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t i = 0; i < c->kh; i++)
                            for (int64_t j = 0; j < c->kw; j++) {
                                int64_t ih = oh * c->sh - c->pt + i * c->dh;
                                int64_t iw = ow * c->sw - c->pl + j * c->dw;
                                if (ih < 0 || ih >= c->H || iw < 0 || iw >= c->W)
                                    continue;
                                double t = (double)x[((n * c->C + g * Cg + ci) * c->H + ih) *
                                                         c->W + iw] *
                                           w[((m * Cg + ci) * c->kh + i) * c->kw + j];
                                acc += t;
                                a += fabs(t);
                            }
                    int64_t o = ((n * c->M + m) * OH + oh) * OW + ow;
                    y[o] = acc;
                    mag[o] = a;
                }
}

static poprt__value tensor(int rank, const int64_t *dims, void *data)
{
    poprt__value v;
    memset(&v, 0, sizeof v);
    v.kind = POPRT__KIND_TENSOR;
    v.t.dtype = POPRT_DTYPE_FLOAT;
    v.t.rank = rank;
    for (int i = 0; i < rank; i++)
        v.t.dims[i] = dims[i];
    v.t.numel = poprt__tval_numel(&v.t);
    v.t.nbytes = (size_t)v.t.numel * sizeof(float);
    v.t.data = data;
    return v;
}

static void add_ints(poprt__model *m, poprt__node *n, const char *name, int cnt,
                     const int64_t *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS);
    ck_assert_ptr_nonnull(a);
    a->n = cnt;
    a->ints = poprt__arena_memdup(&m->arena, v, sizeof(int64_t) * (size_t)cnt);
}

/* FusedConv epilogue of a run: activation name and parameters, residual. */
typedef struct epi {
    const char *act; /* NULL: plain Conv */
    float a, b;
    const float *z;
    int xblk, yblk; /* x_layout / y_layout NCHW16c: x, and y with z, in that layout */
} epi;

/* Runs the Conv kernel of case c (FusedConv with e) with `threads` workers
 * (0: no pool); with pack, the weights go through the op's prepare() first. */
static void run_conv_epi(const conv_case *c, const epi *e, int pack, int threads, const float *x,
                         const float *w, const float *b, float *y, int64_t OH, int64_t OW)
{
    poprt__model *m;
    ck_assert_int_eq(poprt__model_new(&m), POPRT_OK);
    poprt__node *n = poprt__graph_add_node(m->graph, e ? "FusedConv" : "Conv",
                                           e ? "ai.poprt" : "", "conv", 0, 0);
    ck_assert_ptr_nonnull(n);
    add_ints(m, n, "kernel_shape", 2, (int64_t[]){c->kh, c->kw});
    add_ints(m, n, "strides", 2, (int64_t[]){c->sh, c->sw});
    add_ints(m, n, "dilations", 2, (int64_t[]){c->dh, c->dw});
    add_ints(m, n, "pads", 4, (int64_t[]){c->pt, c->pl, c->pb, c->pr});
    poprt__attr *ga = poprt__node_add_attr(n, "group", POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(ga);
    ga->i = c->G;
    if (e) {
        poprt__attr *aa = poprt__node_add_attr(n, "activation", POPRT__ATTR_STRING);
        ck_assert_ptr_nonnull(aa);
        aa->s = e->act;
        aa->s_len = strlen(e->act);
        /* each add may move the attribute array: fill one before the next */
        poprt__attr *fa = poprt__node_add_attr(n, "activation_alpha", POPRT__ATTR_FLOAT);
        ck_assert_ptr_nonnull(fa);
        fa->f = e->a;
        poprt__attr *fb = poprt__node_add_attr(n, "activation_beta", POPRT__ATTR_FLOAT);
        ck_assert_ptr_nonnull(fb);
        fb->f = e->b;
        const char *lay[2] = {e->xblk ? "x_layout" : NULL, e->yblk ? "y_layout" : NULL};
        for (int i = 0; i < 2; i++) {
            if (!lay[i])
                continue;
            poprt__attr *la = poprt__node_add_attr(n, lay[i], POPRT__ATTR_STRING);
            ck_assert_ptr_nonnull(la);
            la->s = "NCHW16c";
            la->s_len = 7;
        }
    }
    const poprt__op *op = e ? poprt__op_find("ai.poprt", "FusedConv", 1)
                            : poprt__op_find("", "Conv", 11);
    ck_assert_ptr_nonnull(op);

    int64_t xd[] = {c->N, c->C, c->H, c->W}, wd[] = {c->M, c->C / c->G, c->kh, c->kw};
    int64_t bd[] = {c->M}, yd[] = {c->N, c->M, OH, OW};
    void *state = NULL;
    size_t state_size = 0;
    if (pack) {
        poprt__type tt[4];
        memset(tt, 0, sizeof tt);
        poprt__type_set_tensor(&m->arena, &tt[0], POPRT_DTYPE_FLOAT, 4, xd);
        poprt__type_set_tensor(&m->arena, &tt[1], POPRT_DTYPE_FLOAT, 4, wd);
        poprt__type_set_tensor(&m->arena, &tt[2], POPRT_DTYPE_FLOAT, 1, bd);
        poprt__type_set_tensor(&m->arena, &tt[3], POPRT_DTYPE_FLOAT, 4, yd);
        poprt__ival iv[3] = {{&tt[0], NULL, 0},
                             {&tt[1], w, sizeof(float) * (size_t)poprt__type_numel(&tt[1])},
                             {b ? &tt[2] : NULL, b, b ? sizeof(float) * (size_t)c->M : 0}};
        poprt__prep_ctx pc = {n, 11, b ? 3 : 2, iv, 1, &tt[3], 0};
        ck_assert_ptr_nonnull(poprt__kernel_find(op->domain, op->name, op->since_version)->prepare);
        ck_assert_int_eq(poprt__kernel_find(op->domain, op->name, op->since_version)->prepare(&pc, &state, &state_size), POPRT_OK);
    }

    poprt__value vx = tensor(4, xd, (void *)x), vw = tensor(4, wd, (void *)w);
    poprt__value vb = tensor(1, bd, (void *)b), vy = tensor(4, yd, y);
    poprt__value vz = tensor(4, yd, e ? (void *)e->z : NULL);
    poprt__value *in[] = {&vx, &vw, b ? &vb : NULL, &vz}, *out[] = {&vy};
    struct poprt__exec ex;
    memset(&ex, 0, sizeof ex);
    if (threads > 0)
        ck_assert_int_eq(poprt__pool_create(threads, &ex.pool), POPRT_OK);
    poprt__kctx k;
    memset(&k, 0, sizeof k);
    k.node = n;
    k.opset = 11;
    k.n_in = e && e->z ? 4 : b ? 3 : 2;
    k.in = (poprt__value *const *)in;
    k.n_out = 1;
    k.out = out;
    k.exec = &ex;
    k.state = state;
    k.state_size = state_size;
    ck_assert_int_eq(poprt__kernel_find(op->domain, op->name, op->since_version)->run(&k), POPRT_OK);
    while (ex.scratch) {
        poprt__scratch_chunk *s = ex.scratch;
        ex.scratch = s->next;
        poprt__aligned_free(s);
    }
    if (ex.pool)
        poprt__pool_free(ex.pool);
    poprt__aligned_free(state);
    poprt__model_free(m);
}

static void run_conv(const conv_case *c, int pack, int threads, const float *x, const float *w,
                     const float *b, float *y, int64_t OH, int64_t OW)
{
    run_conv_epi(c, NULL, pack, threads, x, w, b, y, OH, OW);
}

static void check_case(const conv_case *c)
{
    const int64_t OH = out_dim(c->H, c->kh, c->sh, c->dh, c->pt, c->pb);
    const int64_t OW = out_dim(c->W, c->kw, c->sw, c->dw, c->pl, c->pr);
    const int64_t nx = c->N * c->C * c->H * c->W, nw = c->M * (c->C / c->G) * c->kh * c->kw;
    const int64_t ny = c->N * c->M * OH * OW;
    float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)nw);
    float *b = malloc(sizeof(float) * (size_t)c->M);
    float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
    double *ref = malloc(sizeof(double) * (size_t)ny), *mag = malloc(sizeof(double) * (size_t)ny);
    ck_assert(x && w && b && y1 && y2 && ref && mag);
    uint32_t s = 12345u + (uint32_t)(c->C * 31 + c->M * 7 + c->kh);
    for (int64_t i = 0; i < nx; i++)
        x[i] = frand(&s);
    for (int64_t i = 0; i < nw; i++)
        w[i] = frand(&s);
    for (int64_t i = 0; i < c->M; i++)
        b[i] = frand(&s);
    const float *bp = c->bias ? b : NULL;
    naive_conv(c, x, w, bp, OH, OW, ref, mag);
    for (int pack = 0; pack <= 1; pack++) {
        run_conv(c, pack, 0, x, w, bp, y1, OH, OW);
        for (int64_t i = 0; i < ny; i++) {
            double tol = 1e-4 * mag[i] + 1e-6;
            if (fabs(y1[i] - ref[i]) > tol)
                ck_abort_msg("case C%lld M%lld G%lld %lldx%lld k%lldx%lld pack %d: element %lld "
                             "got %.7g want %.7g",
                             (long long)c->C, (long long)c->M, (long long)c->G, (long long)c->H,
                             (long long)c->W, (long long)c->kh, (long long)c->kw, pack,
                             (long long)i, y1[i], ref[i]);
        }
        run_conv(c, pack, 2, x, w, bp, y2, OH, OW);
        ck_assert_int_eq(memcmp(y1, y2, sizeof(float) * (size_t)ny), 0);
    }
    free(x);
    free(w);
    free(b);
    free(y1);
    free(y2);
    free(ref);
    free(mag);
}

/*                      N  C    M    G  H   W   kh kw sh sw dh dw pt pl pb pr bias */
static const conv_case cases[] = {
    {1, 16, 32, 1, 56, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    /* resnet-like 3x3 */
    {1, 64, 48, 1, 28, 28, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},    /* pointwise */
    {2, 24, 40, 1, 33, 31, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0},    /* pointwise, N=2, no bias */
    {1, 3, 16, 1, 67, 65, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1},     /* stem 7x7 s2 */
    {1, 32, 24, 1, 29, 27, 3, 3, 2, 2, 1, 1, 1, 1, 0, 1, 1},    /* stride 2, odd pads */
    {1, 12, 20, 1, 40, 37, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1},    /* dilation 2 */
    {2, 16, 32, 4, 23, 25, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    /* groups */
    {1, 24, 24, 24, 30, 29, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* depthwise 3x3 */
    {2, 16, 16, 16, 21, 19, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 0},   /* depthwise 5x5 s2 */
    {1, 20, 17, 1, 36, 16, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},    /* 3x1, odd M */
    {1, 24, 24, 1, 74, 32, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1},    /* 1x3 (oww) */
    {1, 512, 64, 1, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},     /* K = 4608 */
    {1, 256, 96, 1, 14, 14, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1},   /* 1x1 stride 2 */
    {3, 8, 8, 1, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},        /* tiny, N=3 */
    {1, 4, 6, 1, 90, 90, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1},      /* small K, many columns */
    {1, 32, 16, 2, 20, 22, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    /* direct, 2 groups */
    {1, 64, 96, 1, 7, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},      /* direct, split over M */
    {1, 96, 24, 1, 40, 41, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    /* direct, M = 24 */
    {1, 8, 8, 8, 31, 35, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1},      /* depthwise stride 3 */
    {1, 8, 16, 8, 17, 40, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1},     /* depthwise x2, dilated */
    {2, 8, 16, 1, 32, 64, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},     /* 1x1, rows 8 KiB apart */
    {1, 16, 40, 1, 27, 30, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},    /* direct stride 2 */
    {2, 24, 20, 2, 33, 35, 5, 5, 2, 2, 1, 1, 2, 1, 0, 2, 0},    /* stride 2, 5x5, groups */
    {1, 32, 48, 1, 28, 28, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 1},    /* 1x1 stride 2 */
    {1, 16, 24, 1, 30, 31, 4, 4, 2, 2, 1, 1, 1, 1, 2, 2, 1},    /* stride 2, even kernel */
    {1, 12, 12, 12, 6, 96, 5, 5, 2, 1, 1, 1, 2, 2, 2, 2, 1},    /* depthwise stride (2, 1) */
    {1, 8, 8, 8, 5, 150, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 1},      /* depthwise, 4-block rows */
    {1, 8, 8, 8, 9, 56, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},       /* depthwise, 56 columns: 3 + 1 blocks */
    {1, 6, 6, 6, 9, 141, 3, 3, 1, 2, 1, 1, 1, 1, 1, 1, 0},      /* depthwise stride (1, 2) */
    {1, 13, 30, 1, 21, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},    /* direct, odd channels */
    {1, 9, 16, 1, 22, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},     /* direct stride 2, odd channels */
    {2, 96, 136, 1, 9, 11, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},    /* transposed GEMM, 1x1, N=2 */
    {1, 48, 140, 1, 13, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0},   /* transposed GEMM, 3x3 */
    {1, 16, 130, 1, 3, 12, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1},    /* transposed, 10 positions */
    {1, 32, 100, 1, 19, 23, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* blocked: 2 blocks in, M = 64 + 36 */
    {2, 48, 80, 1, 17, 15, 5, 5, 2, 1, 2, 1, 4, 2, 3, 1, 1},    /* blocked: strides, dilations, pads differ */
    {1, 24, 70, 1, 26, 29, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0},    /* blocked, one channel per block */
    {1, 16, 16, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},      /* blocked, one output position */
    {2, 5, 75, 1, 19, 50, 3, 3, 2, 2, 1, 2, 1, 2, 0, 3, 0},     /* rows: N=2, dilated s2, M = 64 + 11 */
    {1, 3, 64, 1, 35, 38, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1},     /* rows: stem 3x3 s2, odd width */
    {1, 1, 24, 1, 76, 32, 3, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1},     /* rows: 1 channel, bands of rows */
};

static double act_ref(const char *act, double v, double a, double b)
{
    if (!strcmp(act, "Relu"))
        return v < 0 ? 0 : v;
    if (!strcmp(act, "Clip"))
        return v < a ? a : v > b ? b : v;
    if (!strcmp(act, "LeakyRelu"))
        return v < 0 ? a * v : v;
    if (!strcmp(act, "Sigmoid"))
        return 1 / (1 + exp(-v));
    if (!strcmp(act, "HardSigmoid"))
        return fmax(0, fmin(1, a * v + b));
    if (!strcmp(act, "HardSwish"))
        return v * fmax(0, fmin(1, v / 6 + 0.5));
    return v;
}

/* FusedConv: every activation, with and without a residual, on shapes of the
 * direct, tiled, depthwise and 1x1 paths; the same tolerance as above
 * (every activation changes a difference by at most 1.5x). */
static const conv_case fused_cases[] = {
    {1, 16, 24, 1, 20, 22, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  /* direct */
    {1, 3, 16, 1, 33, 31, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},   /* rows (a stem; else tiled im2col) */
    {1, 3, 16, 1, 21, 19, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1},   /* tiled im2col (10 columns) */
    {2, 16, 16, 16, 19, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0}, /* depthwise */
    {1, 32, 20, 1, 9, 11, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},   /* 1x1: plain GEMM */
    {1, 40, 128, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* transposed GEMM */
    {1, 5, 21, 1, 18, 45, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* rows, M not a multiple of 8 */
    {2, 1, 24, 1, 37, 20, 3, 3, 1, 1, 1, 1, 0, 1, 0, 1, 1},   /* rows: bands, the last partial */
};

START_TEST(test_fused_conv_kernel)
{
    static const struct {
        const char *act;
        float a, b;
    } acts[] = {{"", 0, 0},           {"Relu", 0, 0},        {"Clip", -0.5f, 0.75f},
                {"LeakyRelu", 0.1f, 0}, {"Sigmoid", 0, 0},   {"HardSigmoid", 0.2f, 0.5f},
                {"HardSwish", 0, 0}};
    const conv_case *c = &fused_cases[_i];
    const int64_t OH = out_dim(c->H, c->kh, c->sh, c->dh, c->pt, c->pb);
    const int64_t OW = out_dim(c->W, c->kw, c->sw, c->dw, c->pl, c->pr);
    const int64_t nx = c->N * c->C * c->H * c->W, nw = c->M * (c->C / c->G) * c->kh * c->kw;
    const int64_t ny = c->N * c->M * OH * OW;
    float *x = malloc(sizeof(float) * (size_t)nx), *w = malloc(sizeof(float) * (size_t)nw);
    float *b = malloc(sizeof(float) * (size_t)c->M), *z = malloc(sizeof(float) * (size_t)ny);
    float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
    double *ref = malloc(sizeof(double) * (size_t)ny), *mag = malloc(sizeof(double) * (size_t)ny);
    ck_assert(x && w && b && z && y1 && y2 && ref && mag);
    uint32_t s = 777u;
    fill(x, nx, &s);
    fill(w, nw, &s);
    fill(b, c->M, &s);
    fill(z, ny, &s);
    const float *bp = c->bias ? b : NULL;
    naive_conv(c, x, w, bp, OH, OW, ref, mag);
    for (size_t ai = 0; ai < sizeof acts / sizeof acts[0]; ai++)
        for (int res = 0; res <= 1; res++) {
            epi e = {acts[ai].act, acts[ai].a, acts[ai].b, res ? z : NULL};
            run_conv_epi(c, &e, 1, 0, x, w, bp, y1, OH, OW);
            for (int64_t i = 0; i < ny; i++) {
                double want = act_ref(e.act, ref[i] + (res ? z[i] : 0), e.a, e.b);
                double tol = 1.5e-4 * (mag[i] + 1) + 1e-6;
                if (fabs(y1[i] - want) > tol)
                    ck_abort_msg("case %d act '%s' residual %d: element %lld got %.7g want %.7g",
                                 _i, e.act, res, (long long)i, y1[i], want);
            }
            run_conv_epi(c, &e, 1, 2, x, w, bp, y2, OH, OW);
            ck_assert_int_eq(memcmp(y1, y2, sizeof(float) * (size_t)ny), 0);
        }
    free(x);
    free(w);
    free(b);
    free(z);
    free(y1);
    free(y2);
    free(ref);
    free(mag);
}
END_TEST

/* x[1,8,12,12] -> Conv 3x3 (+B) -> Add r -> Relu -> y1 -> Conv 1x1 -> Clip(0, 6) -> y2,
 * plus a Conv whose output is also a graph output (must stay unfused). */
static poprt__model *fuse_model(void)
{
    poprt__model *m = tb_model(17);
    int64_t xd[] = {1, 8, 12, 12}, rd[] = {1, 16, 12, 12}, wd[] = {16, 8, 3, 3}, bd[] = {16};
    int64_t w2d[] = {16, 16, 1, 1}, sd[] = {1};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    tb_input(m, "r", POPRT_DTYPE_FLOAT, 4, rd);
    float w[16 * 8 * 9], bb[16], w2[16 * 16], lo = 0, hi = 6;
    uint32_t s = 99u;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = frand(&s);
    for (size_t i = 0; i < 16; i++)
        bb[i] = frand(&s);
    for (size_t i = 0; i < sizeof w2 / sizeof w2[0]; i++)
        w2[i] = frand(&s) * 2;
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 4, wd, w);
    tb_const(m, "B", POPRT_DTYPE_FLOAT, 1, bd, bb);
    tb_const(m, "W2", POPRT_DTYPE_FLOAT, 4, w2d, w2);
    tb_const(m, "lo", POPRT_DTYPE_FLOAT, 0, sd, &lo);
    tb_const(m, "hi", POPRT_DTYPE_FLOAT, 0, sd, &hi);
    poprt__node *c1 = tb_node(m, "Conv", 3, (const char *[]){"x", "W", "B"}, 1,
                              (const char *[]){"c1"});
    add_ints(m, c1, "pads", 4, (int64_t[]){1, 1, 1, 1});
    tb_node(m, "Add", 2, (const char *[]){"r", "c1"}, 1, (const char *[]){"s1"});
    tb_node(m, "Relu", 1, (const char *[]){"s1"}, 1, (const char *[]){"y1"});
    tb_node(m, "Conv", 2, (const char *[]){"y1", "W2"}, 1, (const char *[]){"c2"});
    tb_node(m, "Clip", 3, (const char *[]){"c2", "lo", "hi"}, 1, (const char *[]){"y2"});
    tb_node(m, "Conv", 2, (const char *[]){"y1", "W2"}, 1, (const char *[]){"y3"});
    tb_node(m, "Relu", 1, (const char *[]){"y3"}, 1, (const char *[]){"y4"});
    tb_output(m, "y1");
    tb_output(m, "y2");
    tb_output(m, "y3");
    tb_output(m, "y4");
    return m;
}

static void fuse_run(poprt_session *s, float *out)
{
    static float x[8 * 144], r[16 * 144];
    uint32_t st = 5u;
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = frand(&st);
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        r[i] = frand(&st);
    int64_t xd[] = {1, 8, 12, 12}, rd[] = {1, 16, 12, 12};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 4, x, sizeof x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "r", POPRT_DTYPE_FLOAT, rd, 4, r, sizeof r),
                     POPRT_OK);
    const char *names[] = {"y1", "y2", "y3", "y4"};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(poprt_stepio_set_output(io, names[i], out + i * 16 * 144,
                                                 16 * 144 * sizeof(float)),
                         POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    poprt_stepio_free(io);
}

/* NCHW <-> NCHW16c (lib/compiler/layout.c) for N images of C channels. */
static void blocked_from(const float *x, int64_t N, int64_t C, int64_t HW, float *xb)
{
    for (int64_t i = 0; i < N * C * HW; i++) {
        const int64_t n = i / (C * HW), c = i / HW % C, q = i % HW;
        xb[(n * C + c / 16 * 16) * HW + q * 16 + c % 16] = x[i];
    }
}

/* FusedConv with an NCHW16c input, output (with its residual) or both:
 * on the blocked convolution (weights packed, AVX-512; stems on its row
 * tiles, which then transpose each tile into place) and on the plain
 * paths with the operands converted around them (no packed weights, as
 * for an executable file loaded on a CPU without AVX-512); the tolerance
 * of test_fused_conv_kernel, and 1 and 2 threads bit-identical. */
static const conv_case layout_cases[] = {
    {1, 32, 48, 1, 13, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  /* 3x3, padded: rows copied */
    {2, 16, 32, 1, 9, 10, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1},   /* 1x1, N=2: read in place */
    {1, 64, 80, 1, 14, 14, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 0},  /* 1x1 stride 2, M = 64 + 16 */
    {1, 16, 16, 1, 7, 8, 3, 3, 2, 1, 1, 2, 0, 0, 0, 0, 1},    /* unpadded 3x3, in place */
    /* stems (row tiles; only the output can be NCHW16c): */
    {1, 3, 32, 1, 35, 38, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1},   /* 3x3 s2, partial tiles */
    {1, 3, 64, 1, 29, 50, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, 1},   /* 7x7 s2 pad 3 */
    {2, 5, 80, 1, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0},    /* s1, N=2, two groups */
    /* depthwise (blocked when X and Y both are: taps packed by the prepare,
     * else reordered per run; one side NCHW16c converts around the plain
     * path): */
    {1, 32, 32, 32, 13, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* 3x3, padded */
    {1, 48, 48, 48, 15, 14, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, 0}, /* 5x5 stride 2 */
    /* grouped, groups inside blocks of 16 (the same, on the grouped function) */
    {1, 32, 32, 8, 13, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  /* 4 per group */
    {1, 64, 64, 8, 12, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0},  /* 8 per group, stride 2 */
};

START_TEST(test_conv_layouts)
{
    const conv_case *c = &layout_cases[_i];
    const int64_t OH = out_dim(c->H, c->kh, c->sh, c->dh, c->pt, c->pb);
    const int64_t OW = out_dim(c->W, c->kw, c->sw, c->dw, c->pl, c->pr);
    const int64_t HW = c->H * c->W, OHW = OH * OW;
    const int64_t nx = c->N * c->C * HW, nw = c->M * (c->C / c->G) * c->kh * c->kw;
    const int64_t ny = c->N * c->M * OHW;
    float *x = malloc(sizeof(float) * (size_t)nx), *xb = malloc(sizeof(float) * (size_t)nx);
    float *w = malloc(sizeof(float) * (size_t)nw), *b = malloc(sizeof(float) * (size_t)c->M);
    float *z = malloc(sizeof(float) * (size_t)ny), *zb = malloc(sizeof(float) * (size_t)ny);
    float *y1 = malloc(sizeof(float) * (size_t)ny), *y2 = malloc(sizeof(float) * (size_t)ny);
    double *ref = malloc(sizeof(double) * (size_t)ny), *mag = malloc(sizeof(double) * (size_t)ny);
    double *want = malloc(sizeof(double) * (size_t)ny), *wmag = malloc(sizeof(double) * (size_t)ny);
    ck_assert(x && xb && w && b && z && zb && y1 && y2 && ref && mag && want && wmag);
    uint32_t s = 4242u + (uint32_t)_i;
    fill(x, nx, &s);
    fill(w, nw, &s);
    fill(b, c->M, &s);
    fill(z, ny, &s);
    if (c->C % 16 == 0)
        blocked_from(x, c->N, c->C, HW, xb);
    blocked_from(z, c->N, c->M, OHW, zb);
    const float *bp = c->bias ? b : NULL;
    naive_conv(c, x, w, bp, OH, OW, ref, mag);
    /* the activations applied in the tiles' registers (Relu, Clip, none)
     * and in the epilogue pass (HardSwish) */
    static const struct {
        const char *name;
        float a, b;
    } acts[] = {{"Relu", 0, 0}, {"", 0, 0}, {"HardSwish", 0, 0}, {"Clip", -0.5f, 0.75f}};
    for (int k = 0; k < 4 * 3; k++) {
        const int lay = k % 3 + 1, xl = lay & 1, yl = lay >> 1; /* x, y, both */
        const char *act = acts[k / 3].name;
        const float aa = acts[k / 3].a, ab = acts[k / 3].b;
        if (xl && c->C % 16)
            continue;
        /* the expected output (act(conv + z)) in the output's layout */
        for (int64_t i = 0; i < ny; i++) {
            const int64_t n = i / (c->M * OHW), m = i / OHW % c->M, q = i % OHW;
            const int64_t o = yl ? (n * c->M + m / 16 * 16) * OHW + q * 16 + m % 16 : i;
            want[o] = act_ref(act, ref[i] + z[i], aa, ab);
            wmag[o] = mag[i];
        }
        for (int pack = 0; pack <= 1; pack++) {
            epi e = {act, aa, ab, yl ? zb : z, xl, yl};
            run_conv_epi(c, &e, pack, 0, xl ? xb : x, w, bp, y1, OH, OW);
            for (int64_t i = 0; i < ny; i++)
                if (fabs(y1[i] - want[i]) > 1.5e-4 * (wmag[i] + 1) + 1e-6)
                    ck_abort_msg("case %d act '%s' x_layout %s y_layout %s pack %d: element %lld "
                                 "got %.7g want %.7g",
                                 _i, act, xl ? "NCHW16c" : "NCHW", yl ? "NCHW16c" : "NCHW", pack,
                                 (long long)i, y1[i], want[i]);
            run_conv_epi(c, &e, pack, 2, xl ? xb : x, w, bp, y2, OH, OW);
            ck_assert_int_eq(memcmp(y1, y2, sizeof(float) * (size_t)ny), 0);
        }
    }
    free(x);
    free(xb);
    free(w);
    free(b);
    free(z);
    free(zb);
    free(y1);
    free(y2);
    free(ref);
    free(mag);
    free(want);
    free(wmag);
}
END_TEST

START_TEST(test_fuse_conv_graph)
{
    /* the rewrite itself: 7 nodes -> Conv(y3 is an output), Relu, 2 FusedConv */
    poprt__model *m = fuse_model();
    ck_assert_int_eq(poprt__graph_resolve(m->graph), POPRT_OK);
    ck_assert_int_eq(poprt__graph_infer(m->graph, NULL), POPRT_OK);
    ck_assert_uint_eq(poprt__graph_count_nodes(m->graph), 7);
    int any = 0;
    ck_assert_int_eq(poprt__compile_fuse_conv(m, &any), POPRT_OK);
    ck_assert_int_eq(any, 1);
    ck_assert_uint_eq(poprt__graph_count_nodes(m->graph), 4);
    int fused = 0, convs = 0;
    for (size_t i = 0; i < m->graph->nodes.len; i++) {
        const poprt__node *n = m->graph->nodes.items[i];
        fused += strcmp(n->op_type, "FusedConv") == 0;
        convs += strcmp(n->op_type, "Conv") == 0;
    }
    ck_assert_int_eq(fused, 2);
    ck_assert_int_eq(convs, 1);
    poprt__model_free(m);

    /* through sessions: unoptimised vs optimised vs an executable file */
    static float ref[4 * 16 * 144], got[4 * 16 * 144], again[4 * 16 * 144];
    poprt_model *pm;
    ck_assert_int_eq(tb_load(fuse_model(), &pm), POPRT_OK);
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "optimize", "0"), POPRT_OK);
    poprt_session *s0, *s1, *s2;
    ck_assert_int_eq(poprt_session_create(pm, o, &s0), POPRT_OK);
    ck_assert_int_eq(poprt_session_create(pm, NULL, &s1), POPRT_OK);
    fuse_run(s0, ref);
    fuse_run(s1, got);
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++)
        ck_assert_msg(fabs(got[i] - ref[i]) <= 1e-5 * fabs(ref[i]) + 1e-6,
                      "element %zu: fused %.7g, unfused %.7g", i, got[i], ref[i]);
    char path[] = "/tmp/poprt-test-conv-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(poprt_session_export(s1, path), POPRT_OK);
    ck_assert_int_eq(poprt_session_load(path, NULL, &s2), POPRT_OK);
    fuse_run(s2, again);
    ck_assert_int_eq(memcmp(got, again, sizeof got), 0);
    unlink(path);
    poprt_session_free(s0);
    poprt_session_free(s1);
    poprt_session_free(s2);
    poprt_options_free(o);
    poprt_model_free(pm);
}
END_TEST

START_TEST(test_conv_cases)
{
    check_case(&cases[_i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("conv");
    TCase *tc = tcase_create("f32");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_conv_cases, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_loop_test(tc, test_fused_conv_kernel, 0,
                        (int)(sizeof fused_cases / sizeof fused_cases[0]));
    tcase_add_test(tc, test_fuse_conv_graph);
    tcase_add_loop_test(tc, test_conv_layouts, 0,
                        (int)(sizeof layout_cases / sizeof layout_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
