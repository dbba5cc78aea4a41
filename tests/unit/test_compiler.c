/* Unit tests: the session compiler's fusions (lib/compiler) and the
 * operators they make (ai.poprt FusedElementwise). Each fused session is
 * compared with the same model compiled with "optimize" = "0" (no
 * rewrites). The fused steps call the same element functions as the ONNX
 * kernels they replace, so the tolerance is 0: outputs must be bit-equal. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "builder.h"
#include "passes/rewrite.h"
#include "ir/dtype.h"
#include "kernels/ref/poprt_compiled.h"
#include "runtime/runtime.h"
#include "kernels/x86/conv.h"
#include "kernels/x86/conv_blocked.h"
#include "kernels/x86/conv_paths.h"
#include "kernels/x86/sgemm.h"
#include "poprt/experimental.h"

/* Runs model with the options (key/value pairs, NULL-terminated) on the
 * float input x and writes the float output y (n floats). *fused_out: the
 * number of FusedElementwise nodes of the compiled session, *nodes_out its
 * node count. */
static void run_model(const poprt_model *m, const char *const *kv, const char *in_name,
                      const int64_t *dims, int rank, const float *x, size_t nx,
                      const char *out_name, float *y, size_t ny, int *fused_out, int *nodes_out)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    for (int i = 0; kv && kv[i]; i += 2)
        ck_assert_int_eq(poprt_options_set(o, kv[i], kv[i + 1]), POPRT_OK);
    poprt_session *s;
    ck_assert_msg(poprt_session_create(m, o, &s) == POPRT_OK, "%s", poprt_last_error());
    int fused = 0;
    const poprt__graph *g = s->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        fused += strcmp(n->op_type, "FusedElementwise") == 0 && strcmp(n->domain, "ai.poprt") == 0;
    }
    if (fused_out)
        *fused_out = fused;
    if (nodes_out)
        *nodes_out = (int)g->nodes.len;
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, in_name, POPRT_DTYPE_FLOAT, dims, rank, x,
                                            nx * sizeof(float)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, out_name, y, ny * sizeof(float)), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_options_free(o);
}

static void fill(float *x, size_t n, unsigned seed)
{
    uint32_t r = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = ((float)(r >> 8) / 16777216.0f - 0.5f) * 12.0f; /* [-6, 6) */
    }
}

/* Compares fused (default options, then also 2 threads) with unfused. */
static void check_same(const poprt_model *m, const int64_t *dims, int rank, const float *x,
                       size_t n, int want_fused, int want_nodes)
{
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float)),
          *c = malloc(n * sizeof(float));
    ck_assert(a && b && c);
    const char *const off[] = {"optimize", "0", NULL};
    const char *const two[] = {"threads", "2", NULL};
    int fused = -1, nodes = -1, fused0 = -1;
    run_model(m, NULL, "x", dims, rank, x, n, "y", a, n, &fused, &nodes);
    run_model(m, off, "x", dims, rank, x, n, "y", b, n, &fused0, NULL);
    run_model(m, two, "x", dims, rank, x, n, "y", c, n, NULL, NULL);
    ck_assert_int_eq(fused, want_fused);
    ck_assert_int_eq(nodes, want_nodes);
    ck_assert_int_eq(fused0, 0);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(memcmp(&a[i], &b[i], sizeof(float)) == 0 || (isnan(a[i]) && isnan(b[i])),
                      "element %zu: fused %.9g, unfused %.9g", i, (double)a[i], (double)b[i]);
        ck_assert_msg(memcmp(&a[i], &c[i], sizeof(float)) == 0 || (isnan(a[i]) && isnan(c[i])),
                      "element %zu: 1 thread %.9g, 2 threads %.9g", i, (double)a[i],
                      (double)c[i]);
    }
    free(a);
    free(b);
    free(c);
}

static void scalar(poprt__model *m, const char *name, float v)
{
    int64_t d[1] = {1};
    tb_const(m, name, POPRT_DTYPE_FLOAT, 0, d, &v);
}

/* A decomposed HardSwish followed by a per-channel scale ([C,1,1]), a
 * per-channel shift ([1,C,1,1]) and Relu: 7 nodes -> 1. */
START_TEST(hardswish_and_channel_affine_fuse)
{
    enum { N = 2, C = 5, H = 7, W = 9, NUM = N * C * H * W };
    poprt__model *m = tb_model(13);
    int64_t xd[4] = {N, C, H, W}, sd[3] = {C, 1, 1}, bd[4] = {1, C, 1, 1};
    float sc[C], sh[C];
    for (int i = 0; i < C; i++)
        sc[i] = 0.5f + 0.25f * (float)i, sh[i] = -1.0f + 0.5f * (float)i;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    scalar(m, "three", 3.0f);
    scalar(m, "zero", 0.0f);
    scalar(m, "six", 6.0f);
    tb_const(m, "scale", POPRT_DTYPE_FLOAT, 3, sd, sc);
    tb_const(m, "shift", POPRT_DTYPE_FLOAT, 4, bd, sh);
    tb_node(m, "Add", 2, (const char *[]){"x", "three"}, 1, (const char *[]){"a"});
    tb_node(m, "Clip", 3, (const char *[]){"a", "zero", "six"}, 1, (const char *[]){"c"});
    tb_node(m, "Mul", 2, (const char *[]){"c", "x"}, 1, (const char *[]){"m"});
    tb_node(m, "Div", 2, (const char *[]){"m", "six"}, 1, (const char *[]){"d"});
    tb_node(m, "Mul", 2, (const char *[]){"scale", "d"}, 1, (const char *[]){"e"});
    tb_node(m, "Add", 2, (const char *[]){"e", "shift"}, 1, (const char *[]){"f"});
    tb_node(m, "Relu", 1, (const char *[]){"f"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    float x[NUM];
    fill(x, NUM, 1);
    check_same(pm, xd, 4, x, NUM, 1, 1);
    poprt_model_free(pm);
}
END_TEST

/* A bias Add then Gelu (a transformer's intermediate layer), erf and tanh
 * forms: 2 nodes -> 1, bit-equal. */
START_TEST(bias_gelu_fuses)
{
    enum { B = 2, S = 33, K = 40, NUM = B * S * K };
    for (int tanh_form = 0; tanh_form < 2; tanh_form++) {
        poprt__model *m = tb_model(20);
        int64_t xd[3] = {B, S, K}, bd[1] = {K};
        float bias[K], x[NUM];
        fill(bias, K, 7);
        fill(x, NUM, 8);
        tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
        tb_const(m, "bias", POPRT_DTYPE_FLOAT, 1, bd, bias);
        tb_node(m, "Add", 2, (const char *[]){"bias", "x"}, 1, (const char *[]){"a"});
        poprt__node *g = tb_node(m, "Gelu", 1, (const char *[]){"a"}, 1, (const char *[]){"y"});
        if (tanh_form) {
            poprt__attr *at = poprt__node_add_attr(g, "approximate", POPRT__ATTR_STRING);
            at->s = "tanh";
            at->s_len = 4;
        }
        tb_output(m, "y");
        poprt_model *pm;
        ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
        check_same(pm, xd, 3, x, NUM, 1, 1);
        poprt_model_free(pm);
    }
}
END_TEST

/* Operands on the left (3 - x, 1 / x), a bias [K] on [B, S, K] (contiguous
 * with period K), a full-shape tensor, Max / Min with a scalar: NaN, signed
 * zeros and infinities in the input. Large enough for several blocks and
 * threads. */
START_TEST(reversed_operands_bias_and_special_values)
{
    enum { B = 3, S = 50, K = 37, NUM = B * S * K };
    poprt__model *m = tb_model(13);
    int64_t xd[3] = {B, S, K}, kd[1] = {K};
    static float bias[K], full[NUM];
    for (int i = 0; i < K; i++)
        bias[i] = 0.125f * (float)(i - K / 2);
    fill(full, NUM, 7);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    tb_const(m, "bias", POPRT_DTYPE_FLOAT, 1, kd, bias);
    tb_const(m, "full", POPRT_DTYPE_FLOAT, 3, xd, full);
    scalar(m, "three", 3.0f);
    scalar(m, "one", 1.0f);
    scalar(m, "lo", -0.0f);
    scalar(m, "hi", 4.0f);
    tb_node(m, "Sub", 2, (const char *[]){"three", "x"}, 1, (const char *[]){"a"});
    tb_node(m, "Div", 2, (const char *[]){"one", "a"}, 1, (const char *[]){"b"});
    tb_node(m, "Add", 2, (const char *[]){"bias", "b"}, 1, (const char *[]){"c"});
    tb_node(m, "Max", 2, (const char *[]){"c", "lo"}, 1, (const char *[]){"d"});
    tb_node(m, "Min", 2, (const char *[]){"hi", "d"}, 1, (const char *[]){"e"});
    tb_node(m, "Mul", 2, (const char *[]){"e", "full"}, 1, (const char *[]){"f"});
    tb_node(m, "Sigmoid", 1, (const char *[]){"f"}, 1, (const char *[]){"g"});
    tb_node(m, "Sub", 2, (const char *[]){"g", "x"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    static float x[NUM];
    fill(x, NUM, 3);
    x[0] = NAN;
    x[1] = 3.0f; /* 1 / 0 = inf */
    x[2] = INFINITY;
    x[3] = -INFINITY;
    x[4] = -0.0f;
    x[5] = 3.0f + 1e-7f;
    check_same(pm, xd, 3, x, NUM, 1, 1);
    poprt_model_free(pm);
}
END_TEST

/* x -> QuantizeLinear(scale) -> code -> DequantizeLinear(scale) -> y: to
 * float8e4m3fn through the zero point zp when given, else to float8e5m2
 * (output_dtype) without one. */
static void fp8_pair(poprt__model *m, const char *x, const char *scale, const char *zp,
                     const char *code, const char *y)
{
    if (zp) {
        tb_node(m, "QuantizeLinear", 3, (const char *[]){x, scale, zp}, 1, (const char *[]){code});
    } else {
        poprt__node *q = tb_node(m, "QuantizeLinear", 2, (const char *[]){x, scale}, 1,
                                 (const char *[]){code});
        poprt__node_add_attr(q, "output_dtype", POPRT__ATTR_INT)->i = POPRT_DTYPE_FLOAT8E5M2;
    }
    tb_node(m, "DequantizeLinear", 2, (const char *[]){code, scale}, 1, (const char *[]){y});
}

/* float8 QuantizeLinear -> DequantizeLinear pairs (e4m3fn with a zero
 * point, e5m2 without: -0 keeps its sign) join the chain as rounding steps:
 * 5 nodes -> 1. The input walks every range of both formats: NaN, +-Inf,
 * signed zeros, ties in the subnormal and normal ranges, values at and past
 * the largest one, random values over 2^-30..2^30. */
START_TEST(float8_pairs_fuse)
{
    enum { NUM = 4096 };
    poprt__model *m = tb_model(21);
    int64_t xd[1] = {NUM}, one[1] = {1};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, xd);
    scalar(m, "s1", 0.05f);
    scalar(m, "s2", 3.0f);
    scalar(m, "two", 2.0f);
    const uint8_t z8 = 0;
    tb_const(m, "z1", POPRT_DTYPE_FLOAT8E4M3FN, 0, one, &z8);
    fp8_pair(m, "x", "s1", "z1", "q1", "d1");
    tb_node(m, "Mul", 2, (const char *[]){"d1", "two"}, 1, (const char *[]){"e"});
    fp8_pair(m, "e", "s2", NULL, "q2", "y");
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    static float x[NUM];
    uint32_t r = 12345;
    for (int i = 0; i < NUM; i++) {
        r = r * 1664525u + 1013904223u;
        float mant = 1.0f + (float)(r >> 9) / 8388608.0f;
        x[i] = ldexpf((r & 1) ? -mant : mant, (int)((r >> 1) % 61) - 30);
    }
    const float special[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f,
                             /* e4m3fn after / 0.05: smallest subnormal 2^-9, ties */
                             0.05f * 0x1p-10f, 0.05f * 0x3p-10f, 0.05f * 0x1p-6f,
                             0.05f * 0x1.1p-6f, 0.05f * 0x1.08p-6f, 0.05f * 448.0f,
                             0.05f * 464.0f, 0.05f * 465.0f, 0.05f * 1e6f, -0.05f * 1e6f,
                             /* e5m2 after * 2 / 3: 2^-16 subnormals, 57344 */
                             1.5f * 0x1p-17f, 1.5f * 0x1p-14f, 1.5f * 57344.0f, 1.5f * 61440.0f,
                             3e38f, -3e38f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        x[i] = special[i];
    check_same(pm, xd, 1, x, NUM, 1, 1);
    poprt_model_free(pm);
}
END_TEST

static void pads1(poprt__node *c)
{
    poprt__attr *p = poprt__node_add_attr(c, "pads", POPRT__ATTR_INTS);
    p->n = 4;
    p->ints = poprt__arena_array(&c->graph->model->arena, 4, sizeof(int64_t));
    for (int i = 0; i < 4; i++)
        p->ints[i] = 1;
}

/* Small exact data for the two-conv tests: weights in halves (w1 in
 * -2 .. 1.5, w2 in -1 .. 0.5), inputs integers in -4 .. 3, from seed r. */
static void exact_data(uint32_t r, float *w1, float *w2, int nw, float *x, int nx)
{
    for (int i = 0; i < nw; i++) {
        r = r * 1664525u + 1013904223u;
        w1[i] = 0.5f * (float)((int)(r >> 29) - 4);
        r = r * 1664525u + 1013904223u;
        w2[i] = 0.5f * (float)((int)(r >> 30) - 2);
    }
    for (int i = 0; i < nx; i++) {
        r = r * 1664525u + 1013904223u;
        x[i] = (float)((int)(r >> 29) - 4);
    }
}

/* Conv -> Relu -> float8 e4m3fn pair -> Conv -> residual Add -> float8 e5m2
 * pair (no zero point): two FusedConvs that round their outputs in the
 * epilogue; the first output is NCHW16c on AVX-512 CPUs (32 channels
 * between two convs). Inputs are small integers and weights multiples of
 * 1/2 (exact_data), so every sum is exact in any order: each path gives the
 * same values before the rounding, and the rounding must give the same
 * codes. */
START_TEST(conv_output_rounding_fuses)
{
    enum { C = 16, M = 32, H = 8, W = 8, NUM = C * H * W };
    poprt__model *m = tb_model(21);
    int64_t xd[4] = {1, C, H, W}, w1d[4] = {M, C, 3, 3}, w2d[4] = {C, M, 3, 3}, one[1] = {1};
    static float w1[M * C * 9], w2[C * M * 9], x[NUM];
    exact_data(99, w1, w2, M * C * 9, x, NUM);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    tb_const(m, "w1", POPRT_DTYPE_FLOAT, 4, w1d, w1);
    tb_const(m, "w2", POPRT_DTYPE_FLOAT, 4, w2d, w2);
    scalar(m, "s1", 0.25f);
    scalar(m, "s2", 2.0f);
    const uint8_t z8 = 0;
    tb_const(m, "z1", POPRT_DTYPE_FLOAT8E4M3FN, 0, one, &z8);
    pads1(tb_node(m, "Conv", 2, (const char *[]){"x", "w1"}, 1, (const char *[]){"c1"}));
    tb_node(m, "Relu", 1, (const char *[]){"c1"}, 1, (const char *[]){"r1"});
    fp8_pair(m, "r1", "s1", "z1", "q1", "d1");
    pads1(tb_node(m, "Conv", 2, (const char *[]){"d1", "w2"}, 1, (const char *[]){"c2"}));
    tb_node(m, "Add", 2, (const char *[]){"c2", "x"}, 1, (const char *[]){"a2"});
    fp8_pair(m, "a2", "s2", NULL, "q2", "y");
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    x[0] = -0.0f;
    check_same(pm, xd, 4, x, NUM, 0, 2);
    poprt_model_free(pm);
}
END_TEST

/* Elementwise steps with scalar operands after a Conv's activation join its
 * epilogue: Conv -> Relu -> Mul(s) -> Add(s) -> Sub(c - x) -> Conv -> Max(c, x)
 * -> HardSwish -> Min(x, c) becomes two FusedConvs (the first output NCHW16c
 * on AVX-512 CPUs). Integer data and weights in halves keep every conv sum
 * exact, so the steps see the same values on both paths: bit-equal. */
START_TEST(conv_scalar_steps_fuse)
{
    enum { C = 16, M = 32, H = 6, W = 7, NUM = C * H * W };
    poprt__model *m = tb_model(14);
    int64_t xd[4] = {1, C, H, W}, w1d[4] = {M, C, 3, 3}, w2d[4] = {C, M, 3, 3};
    static float w1[M * C * 9], w2[C * M * 9], x[NUM];
    exact_data(5, w1, w2, M * C * 9, x, NUM);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    tb_const(m, "w1", POPRT_DTYPE_FLOAT, 4, w1d, w1);
    tb_const(m, "w2", POPRT_DTYPE_FLOAT, 4, w2d, w2);
    scalar(m, "half", 0.5f);
    scalar(m, "one", 1.0f);
    scalar(m, "four", 4.0f);
    scalar(m, "lo", -2.0f);
    scalar(m, "hi", 5.0f);
    pads1(tb_node(m, "Conv", 2, (const char *[]){"x", "w1"}, 1, (const char *[]){"c1"}));
    tb_node(m, "Relu", 1, (const char *[]){"c1"}, 1, (const char *[]){"r1"});
    tb_node(m, "Mul", 2, (const char *[]){"r1", "half"}, 1, (const char *[]){"m1"});
    tb_node(m, "Add", 2, (const char *[]){"m1", "one"}, 1, (const char *[]){"a1"});
    tb_node(m, "Sub", 2, (const char *[]){"four", "a1"}, 1, (const char *[]){"s1"});
    pads1(tb_node(m, "Conv", 2, (const char *[]){"s1", "w2"}, 1, (const char *[]){"c2"}));
    tb_node(m, "Max", 2, (const char *[]){"lo", "c2"}, 1, (const char *[]){"x2"});
    tb_node(m, "HardSwish", 1, (const char *[]){"x2"}, 1, (const char *[]){"h2"});
    tb_node(m, "Min", 2, (const char *[]){"h2", "hi"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    check_same(pm, xd, 4, x, NUM, 0, 2);
    poprt_model_free(pm);
}
END_TEST

/* Convs whose epilogue (LeakyRelu, then Max with a scalar: openWakeWord's
 * blocks) runs on spans the paths choose: a 24-channel 1x3 conv (blocked by
 * 8 channels on AVX2, its run's blocks before they are transposed) and
 * 72-channel 3x1 and 1x3 ones (Winograd F(4, 3), a block's consecutive tile
 * rows at once) on 8-column images, and 64-channel 3x3 ones (Winograd
 * F(4x4, 3x3) on enough tiles for its fused form, 172 and 136 rows: the
 * first conv's NCHW16c output gets the epilogue per run of whole tile rows
 * at 16 columns, of parts of rows at 18); the unfused graph's bits. */
START_TEST(conv_epilogue_spans)
{
    static const struct {
        int64_t C, H, W, kh, kw;
    } cases[] = {{24, 10, 8, 1, 3}, {72, 30, 8, 3, 1}, {72, 30, 8, 1, 3},
                 {24, 5, 70, 1, 3},  {64, 172, 16, 3, 3}, {64, 136, 18, 3, 3}};
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const int64_t C = cases[t].C, H = cases[t].H, W = cases[t].W, NUM = C * H * W;
        const int64_t nw = C * C * cases[t].kh * cases[t].kw;
        float *w1 = malloc((size_t)nw * sizeof(float)), *w2 = malloc((size_t)nw * sizeof(float));
        float *x = malloc((size_t)NUM * sizeof(float));
        ck_assert(w1 && w2 && x);
        fill(w1, (size_t)nw, 3 + (unsigned)t);
        fill(w2, (size_t)nw, 5 + (unsigned)t);
        fill(x, (size_t)NUM, 7 + (unsigned)t);
        for (int64_t i = 0; i < nw; i++) /* sums of a few units */
            w1[i] *= 0.05f, w2[i] *= 0.05f;
        poprt__model *m = tb_model(14);
        int64_t xd[4] = {1, C, H, W}, wd[4] = {C, C, cases[t].kh, cases[t].kw};
        tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
        tb_const(m, "w1", POPRT_DTYPE_FLOAT, 4, wd, w1);
        tb_const(m, "w2", POPRT_DTYPE_FLOAT, 4, wd, w2);
        scalar(m, "lo", -0.5f);
        const int64_t ph = cases[t].kh / 2, pw = cases[t].kw / 2;
        const char *in = "x";
        for (int k = 0; k < 2; k++) {
            char c[8], r[8], o[8];
            snprintf(c, sizeof c, "c%d", k);
            snprintf(r, sizeof r, "r%d", k);
            snprintf(o, sizeof o, k ? "y" : "m%d", k);
            poprt__node *n = tb_node(m, "Conv", 2, (const char *[]){in, k ? "w2" : "w1"}, 1,
                                     (const char *[]){c});
            ck_assert_int_eq(poprt__rw_attr_ints(n, "pads", 4, (int64_t[]){ph, pw, ph, pw}),
                             POPRT_OK);
            poprt__node *l = tb_node(m, "LeakyRelu", 1, (const char *[]){c}, 1,
                                     (const char *[]){r});
            poprt__node_add_attr(l, "alpha", POPRT__ATTR_FLOAT)->f = 0.2f;
            tb_node(m, "Max", 2, (const char *[]){r, "lo"}, 1, (const char *[]){o});
            in = "m0";
        }
        tb_output(m, "y");
        poprt_model *pm;
        ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
        check_same(pm, xd, 4, x, (size_t)NUM, 0, 2);
        poprt_model_free(pm);
        free(w1);
        free(w2);
        free(x);
    }
}
END_TEST

/* Activations written as several nodes that read the conv's (scaled) output
 * twice join the FusedConv as one step, with the unfused graph's bits:
 * x * Clip(x + 3, 0, 6) with the 6 divided or multiplied (by 1/6) after or
 * before the product, x * HardSigmoid(x, 1/6, 1/2) and x * Sigmoid(x); the
 * Swish operator is one step too.
 * HardSigmoid with another slope is no HardSwish: it stays elementwise. */
START_TEST(conv_composite_activations_fuse)
{
    enum { C = 16, H = 6, W = 7, NUM = C * H * W };
    static float w1[C * C * 9], w2[C * C * 9], x[NUM];
    exact_data(11, w1, w2, C * C * 9, x, NUM);
    for (int form = 0; form < 8; form++) {
        poprt__model *m = tb_model(13);
        int64_t xd[4] = {1, C, H, W}, w1d[4] = {C, C, 3, 3};
        tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
        tb_const(m, "w1", POPRT_DTYPE_FLOAT, 4, w1d, w1);
        scalar(m, "scale", 1.0f / 64.0f);
        scalar(m, "three", 3.0f);
        scalar(m, "zero", 0.0f);
        scalar(m, "six", 6.0f);
        scalar(m, "sixth", 1.0f / 6.0f);
        pads1(tb_node(m, "Conv", 2, (const char *[]){"x", "w1"}, 1, (const char *[]){"c"}));
        tb_node(m, "Mul", 2, (const char *[]){"c", "scale"}, 1, (const char *[]){"v"});
        const char *by = form % 2 ? "Mul" : "Div", *k = form % 2 ? "sixth" : "six";
        if (form < 2) { /* (v * relu6) / 6 */
            tb_node(m, "Add", 2, (const char *[]){"three", "v"}, 1, (const char *[]){"a"});
            tb_node(m, "Clip", 3, (const char *[]){"a", "zero", "six"}, 1, (const char *[]){"r"});
            tb_node(m, "Mul", 2, (const char *[]){"v", "r"}, 1, (const char *[]){"p"});
            tb_node(m, by, 2, (const char *[]){"p", k}, 1, (const char *[]){"y"});
        } else if (form < 4) { /* v * (relu6 / 6) */
            tb_node(m, "Add", 2, (const char *[]){"v", "three"}, 1, (const char *[]){"a"});
            tb_node(m, "Clip", 3, (const char *[]){"a", "zero", "six"}, 1, (const char *[]){"r"});
            tb_node(m, by, 2, (const char *[]){"r", k}, 1, (const char *[]){"q"});
            tb_node(m, "Mul", 2, (const char *[]){"q", "v"}, 1, (const char *[]){"y"});
        } else if (form == 7) { /* the operator (opset 24) with its alpha */
            poprt__node *h = tb_node(m, "Swish", 1, (const char *[]){"v"}, 1, (const char *[]){"y"});
            poprt__node_add_attr(h, "alpha", POPRT__ATTR_FLOAT)->f = 1.702f;
        } else {
            poprt__node *h =
                tb_node(m, form == 5 ? "Sigmoid" : "HardSigmoid", 1, (const char *[]){"v"}, 1,
                        (const char *[]){"s"});
            if (form != 5) {
                poprt__attr *at = poprt__node_add_attr(h, "alpha", POPRT__ATTR_FLOAT);
                at->f = form == 4 ? 1.0f / 6.0f : 0.2f;
                at = poprt__node_add_attr(h, "beta", POPRT__ATTR_FLOAT);
                at->f = 0.5f;
            }
            tb_node(m, "Mul", 2, (const char *[]){"s", "v"}, 1, (const char *[]){"y"});
        }
        tb_output(m, "y");
        poprt_model *pm;
        ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
        /* form 6: FusedConv (Conv, Mul) and FusedElementwise (HardSigmoid, Mul) */
        check_same(pm, xd, 4, x, NUM, form == 6, form == 6 ? 2 : 1);
        poprt_model_free(pm);
    }
}
END_TEST

/* The chain stops at a tensor that is a graph output or read twice, and a
 * single elementwise node is left alone. */
START_TEST(chains_stop_at_outputs_and_shared_tensors)
{
    enum { NUM = 4 * 6 };
    poprt__model *m = tb_model(13);
    int64_t xd[2] = {4, 6};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    scalar(m, "two", 2.0f);
    /* x -> Mul -> Relu (= z, an output) -> Tanh -> Exp (= y) */
    tb_node(m, "Mul", 2, (const char *[]){"x", "two"}, 1, (const char *[]){"a"});
    tb_node(m, "Relu", 1, (const char *[]){"a"}, 1, (const char *[]){"z"});
    tb_node(m, "Tanh", 1, (const char *[]){"z"}, 1, (const char *[]){"b"});
    tb_node(m, "Exp", 1, (const char *[]){"b"}, 1, (const char *[]){"y0"});
    /* y0 read twice: the Neg alone cannot start a chain of 2 */
    tb_node(m, "Neg", 1, (const char *[]){"y0"}, 1, (const char *[]){"n"});
    tb_node(m, "Add", 2, (const char *[]){"n", "y0"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    tb_output(m, "z");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    float x[NUM];
    fill(x, NUM, 5);
    /* Mul+Relu fuse (z, an output, ends the chain), Tanh+Exp fuse (y0,
     * read twice, ends it), and Neg+Add fuse as -y0 + y0 with y0 as the
     * chain's input: 3 nodes, all fused */
    check_same(pm, xd, 2, x, NUM, 3, 3);
    poprt_model_free(pm);
}
END_TEST

/* The chain's input is an intermediate tensor whose last reader is the
 * fused node, so the memory plan runs it in place (Y shares X's bytes),
 * with X also read as an operand by a later step. */
START_TEST(in_place_chain_matches)
{
    enum { R = 64, K = 300, NUM = R * K };
    poprt__model *m = tb_model(13);
    int64_t xd[2] = {R, K};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    scalar(m, "two", 2.0f);
    tb_node(m, "Softmax", 1, (const char *[]){"x"}, 1, (const char *[]){"t"});
    tb_node(m, "Mul", 2, (const char *[]){"t", "two"}, 1, (const char *[]){"a"});
    tb_node(m, "Tanh", 1, (const char *[]){"a"}, 1, (const char *[]){"b"});
    tb_node(m, "Sub", 2, (const char *[]){"t", "b"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    static float x[NUM];
    fill(x, NUM, 11);
    check_same(pm, xd, 2, x, NUM, 1, 2);
    /* and the plan did put Y on X's bytes */
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(pm, NULL, &s), POPRT_OK);
    const poprt__graph *g = s->m->graph;
    const poprt__node *f = NULL;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (!strcmp(((const poprt__node *)g->nodes.items[i])->op_type, "FusedElementwise"))
            f = g->nodes.items[i];
    ck_assert_ptr_nonnull(f);
    ck_assert_int_ge(s->prog->plan.offset[f->inputs[0]->id], 0);
    ck_assert_int_eq(s->prog->plan.offset[f->inputs[0]->id], s->prog->plan.offset[f->outputs[0]->id]);
    poprt_session_free(s);
    poprt_model_free(pm);
}
END_TEST

/* Dropout in inference with a mask output nothing reads (old exporters
 * name one) is a view: the node does not run and Y is X's bytes. */
START_TEST(dropout_with_unread_mask_is_a_view)
{
    enum { NUM = 8 * 40 };
    poprt__model *m = tb_model(10);
    int64_t xd[2] = {8, 40};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_node(m, "Softmax", 1, (const char *[]){"x"}, 1, (const char *[]){"t"});
    poprt__node *d = tb_node(m, "Dropout", 1, (const char *[]){"t"}, 2,
                             (const char *[]){"u", "mask"});
    poprt__attr *a = poprt__node_add_attr(d, "ratio", POPRT__ATTR_FLOAT);
    a->f = 0.5f;
    tb_node(m, "Softmax", 1, (const char *[]){"u"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    static float x[NUM];
    fill(x, NUM, 13);
    check_same(pm, xd, 2, x, NUM, 0, 3);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(pm, NULL, &s), POPRT_OK);
    const poprt__graph *g = s->m->graph;
    int found = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        if (!strcmp(n->op_type, "Dropout")) {
            found = 1;
            ck_assert_int_eq(s->prog->plan.view[i], 1);
        }
    }
    ck_assert_int_eq(found, 1);
    poprt_session_free(s);
    poprt_model_free(pm);
}
END_TEST

/* Gemm with a constant B: the weight is packed when the session is
 * compiled (prepare) and the run uses it; transA/transB, alpha, beta and a
 * broadcast C, against a double-precision reference. Tolerance: 1e-5 of
 * the sum of |terms| (float accumulation over K = 300). */
static void gemm_case(int M, int ta, int tb, int with_c)
{
    enum { K = 300, N = 37 };
    poprt__model *m = tb_model(13);
    int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N}, cd[1] = {N};
    static float b[K * N], c[N];
    float *a = malloc(sizeof(float) * (size_t)(M * K));
    float *y = malloc(sizeof(float) * (size_t)(M * N));
    ck_assert(a && y);
    fill(b, K * N, 21);
    fill(c, N, 22);
    fill(a, (size_t)(M * K), 23);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, ad);
    tb_const(m, "B", POPRT_DTYPE_FLOAT, 2, bd, b);
    if (with_c)
        tb_const(m, "C", POPRT_DTYPE_FLOAT, 1, cd, c);
    poprt__node *g = tb_node(m, "Gemm", with_c ? 3 : 2, (const char *[]){"x", "B", "C"}, 1,
                             (const char *[]){"y"});
    poprt__attr *at = poprt__node_add_attr(g, "transA", POPRT__ATTR_INT);
    at->i = ta;
    at = poprt__node_add_attr(g, "transB", POPRT__ATTR_INT);
    at->i = tb;
    at = poprt__node_add_attr(g, "alpha", POPRT__ATTR_FLOAT);
    at->f = 0.75f;
    at = poprt__node_add_attr(g, "beta", POPRT__ATTR_FLOAT);
    at->f = 1.5f;
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(pm, NULL, &s), POPRT_OK);
    int packed = 0;
    for (size_t i = 0; i < s->m->graph->nodes.len; i++)
        packed |= s->prog->states && s->prog->states[i] != NULL;
    ck_assert_int_eq(packed, 1);
    poprt_session_free(s);
    run_model(pm, NULL, "x", ad, 2, a, (size_t)(M * K), "y", y, (size_t)(M * N), NULL, NULL);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0, mag = 0;
            for (int p = 0; p < K; p++) {
                double t = (double)a[ta ? p * M + i : i * K + p] * b[tb ? j * K + p : p * N + j];
                acc += t;
                mag += fabs(t);
            }
            double want = 0.75 * acc + (with_c ? 1.5 * c[j] : 0.0);
            const double tol = 1e-5 * (0.75 * mag + 1.5 * fabs(c[j])) + 1e-6;
            ck_assert_msg(fabs(y[i * N + j] - want) <= tol,
                          "M %d ta %d tb %d: [%d,%d] %g vs %g", M, ta, tb, i, j,
                          (double)y[i * N + j], want);
        }
    free(a);
    free(y);
    poprt_model_free(pm);
}

START_TEST(gemm_constant_b_is_prepacked)
{
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            gemm_case(1, ta, tb, 1);
            gemm_case(19, ta, tb, tb);
        }
}
END_TEST

/* Programs of one model compiled for two batch sizes (as a runner compiles
 * them): the second reads the first's packed MatMul weight (the same bytes)
 * instead of its own copy, keeps the first alive, and computes the same. */
START_TEST(programs_share_packed_weights)
{
    enum { M = 5, K = 64, N = 48 };
    static float w[K * N], x[M * K], y[M * N];
    fill(w, K * N, 31);
    fill(x, M * K, 32);
    poprt__model *m = tb_model(13);
    const int64_t xd[2] = {-1, K}, wd[2] = {K, N}; /* batch unknown */
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    poprt__program *one, *five;
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.x", "1,64"), POPRT_OK);
    ck_assert_int_eq(poprt__api_compile(pm, o, &one), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.x", "5,64"), POPRT_OK);
    ck_assert_int_eq(poprt__api_compile(pm, o, &five), POPRT_OK);
    const size_t freed = poprt__program_share_states(five, one);
    ck_assert_uint_ge(freed, sizeof w); /* the packed weight, padded */
    ck_assert_ptr_eq(five->shares, one);
    ck_assert_uint_eq(poprt__program_share_states(five, one), 0); /* nothing left to share */
    /* neither program's weight can be written now: one's packed copy is
     * five's too */
    ck_assert_int_eq(one->shared_by, 1);
    poprt__program *both[2] = {one, five};
    for (int p = 0; p < 2; p++) {
        const long wi = poprt__weight_find(both[p], "W");
        ck_assert_int_ge(wi, 0);
        ck_assert_int_eq(poprt__weight_write(both[p], (size_t)wi, w, sizeof w),
                         POPRT_STATUS_UNSUPPORTED);
        ck_assert_ptr_nonnull(strstr(poprt_last_error(), "weight 'W'"));
        ck_assert_int_eq(poprt__weight_reset(both[p], (size_t)wi), POPRT_OK); /* (unchanged) */
    }
    poprt__program_unref(one); /* five keeps it */
    poprt_session *s;
    ck_assert_int_eq(poprt__session_new(five, o, &s), POPRT_OK);
    poprt__program_unref(five);
    poprt_stepio *io;
    const int64_t d5[2] = {M, K};
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d5, 2, x, sizeof x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof y), POPRT_OK);
    ck_assert_msg(poprt__session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                want += (double)x[i * K + k] * w[k * N + j];
                mag += fabs((double)x[i * K + k] * w[k * N + j]);
            }
            ck_assert_msg(fabs(y[i * N + j] - want) <= 1e-5 * mag + 1e-6, "[%d,%d] %g vs %g", i,
                          j, (double)y[i * N + j], want);
        }
    poprt_stepio_free(io);
    poprt__session_free(s);
    poprt_options_free(o);
    poprt_model_free(pm);
}
END_TEST

/* The dequantization chain dynamic quantization writes after an integer
 * product "acc": Cast(to float), Mul by "S", Add of "bias" unless no_add
 * (operands reversed when rev), graph output "y". */
static void dequant_chain(poprt__model *m, int rev, int no_add)
{
    poprt__node *cast = tb_node(m, "Cast", 1, (const char *[]){"acc"}, 1, (const char *[]){"f"});
    ck_assert_int_eq(poprt__rw_attr_i(cast, "to", POPRT_DTYPE_FLOAT), POPRT_OK);
    const char *yname = no_add ? "y" : "scaled";
    tb_node(m, "Mul", 2, rev ? (const char *[]){"S", "f"} : (const char *[]){"f", "S"}, 1,
            (const char *[]){yname});
    if (!no_add)
        tb_node(m, "Add", 2,
                rev ? (const char *[]){"bias", "scaled"} : (const char *[]){"scaled", "bias"},
                1, (const char *[]){"y"});
    tb_output(m, "y");
}

/* n int8 weights from an LCG seeded with seed */
static void int8_weights(int8_t *w, int n, uint32_t seed)
{
    for (int i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        w[i] = (int8_t)((int)(seed >> 24) - 128);
    }
}

/* y = [Add(bias)] Mul(Cast(MatMulInteger(DynamicQuantizeLinear(x), W, xz, Wz)),
 * Mul(xs, Ws)) as dynamic quantization writes it, x [M, K] float, W int8
 * [K, N]; form: bit 0 Mul/Add operands reversed, bit 1 no Add, bit 2 one
 * scale for all columns, bit 3 a per-column weight zero point, bit 4 a
 * zero point per row of x (the reference kernel's case). Fused into
 * DynamicQuantizeLinear, Mul(xs, Ws) and FusedMatMulInteger, equal bit for
 * bit to the unfused graph (check_same, 1 and 2 threads). */
static poprt_model *qgemm_model(int M, int K, int N, int form)
{
    poprt__model *m = tb_model(13);
    const int64_t xd[2] = {M, K}, wd[2] = {K, N}, nd[1] = {N};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    int8_t *w = malloc((size_t)K * N), *wz = malloc((size_t)N);
    float *ws = malloc(sizeof(float) * N), *bias = malloc(sizeof(float) * N);
    ck_assert(w && wz && ws && bias);
    int8_weights(w, K * N, 12345u + (uint32_t)form);
    for (int j = 0; j < N; j++) {
        wz[j] = (form & 8) ? (int8_t)(j % 7 - 3) : 0;
        ws[j] = 0.001f * (float)(j % 13 + 1);
        bias[j] = 0.25f * (float)(j % 5) - 0.5f;
    }
    tb_const(m, "W", POPRT_DTYPE_INT8, 2, wd, w);
    if (form & 8)
        tb_const(m, "Wz", POPRT_DTYPE_INT8, 1, nd, wz);
    else
        tb_const(m, "Wz", POPRT_DTYPE_INT8, 0, NULL, wz);
    if (form & 4)
        tb_const(m, "Ws", POPRT_DTYPE_FLOAT, 0, NULL, ws);
    else
        tb_const(m, "Ws", POPRT_DTYPE_FLOAT, 1, nd, ws);
    tb_const(m, "bias", POPRT_DTYPE_FLOAT, 1, nd, bias);
    if (form & 16) {
        uint8_t *az = malloc((size_t)M);
        ck_assert_ptr_nonnull(az);
        for (int i = 0; i < M; i++)
            az[i] = (uint8_t)(100 + i % 50);
        const int64_t md[1] = {M};
        tb_const(m, "az", POPRT_DTYPE_UINT8, 1, md, az);
        free(az);
    }
    tb_node(m, "DynamicQuantizeLinear", 1, (const char *[]){"x"}, 3,
            (const char *[]){"xq", "xs", "xz"});
    tb_node(m, "Mul", 2, (const char *[]){"xs", "Ws"}, 1, (const char *[]){"S"});
    tb_node(m, "MatMulInteger", 4, (const char *[]){"xq", "W", (form & 16) ? "az" : "xz", "Wz"}, 1,
            (const char *[]){"acc"});
    dequant_chain(m, form & 1, form & 2);
    free(w);
    free(wz);
    free(ws);
    free(bias);
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    return pm;
}

START_TEST(matmul_integer_dequantize_fuses)
{
    enum { M = 37, K = 70, N = 300 };
    static float x[M * K];
    fill(x, M * K, 77);
    const int64_t d[2] = {M, K};
    for (int form = 0; form < 32; form++) {
        poprt_model *pm = qgemm_model(M, K, N, form);
        /* DynamicQuantizeLinear, Mul(xs, Ws), FusedMatMulInteger */
        check_same(pm, d, 2, x, (size_t)M * N, 0, 3);
        poprt_options *o;
        poprt_session *s;
        ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
        ck_assert_int_eq(poprt_session_create(pm, o, &s), POPRT_OK);
        int found = 0;
        for (size_t i = 0; i < s->m->graph->nodes.len; i++)
            found += !strcmp(((const poprt__node *)s->m->graph->nodes.items[i])->op_type,
                             "FusedMatMulInteger");
        ck_assert_int_eq(found, 1);
        poprt_session_free(s);
        poprt_options_free(o);
        poprt_model_free(pm);
    }
}
END_TEST

/* The convolution form: y = [Add(bias)] Mul(Cast(ConvInteger(
 * DynamicQuantizeLinear(x), W, xz, Wz)), Mul(xs, Ws)), x [2, C, H, W]
 * float, W int8 [M, C / G, 3, 3], pads 1, stride st; form: bit 0 Mul/Add
 * operands reversed, bit 1 no Add, bit 2 one scale for all channels, bit 3
 * scale and bias shaped [1, M, 1, 1] (else [M, 1, 1]), bit 4 a per-channel
 * weight zero point, bit 5 the scale shaped [M] (broadcast along the
 * width, which is M here: not a per-channel scale, so nothing fuses). */
static poprt_model *qconv_model(int C, int M, int H, int W, int G, int st, int form)
{
    poprt__model *m = tb_model(13);
    const int64_t xd[4] = {2, C, H, W}, wd[4] = {M, C / G, 3, 3}, md[1] = {M};
    const int64_t s3[3] = {M, 1, 1}, s4[4] = {1, M, 1, 1};
    const int n = M * (C / G) * 9;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    int8_t *w = malloc((size_t)n), *wz = malloc((size_t)M);
    float *ws = malloc(sizeof(float) * M), *bias = malloc(sizeof(float) * M);
    ck_assert(w && wz && ws && bias);
    int8_weights(w, n, 777u + (uint32_t)form);
    for (int j = 0; j < M; j++) {
        wz[j] = (form & 16) ? (int8_t)(j % 7 - 3) : 0;
        ws[j] = 0.001f * (float)(j % 13 + 1);
        bias[j] = 0.25f * (float)(j % 5) - 0.5f;
    }
    tb_const(m, "W", POPRT_DTYPE_INT8, 4, wd, w);
    if (form & 16)
        tb_const(m, "Wz", POPRT_DTYPE_INT8, 1, md, wz);
    else
        tb_const(m, "Wz", POPRT_DTYPE_INT8, 0, NULL, wz);
    const int sr = (form & 8) ? 4 : 3;
    const int64_t *sd = (form & 8) ? s4 : s3;
    if (form & 4)
        tb_const(m, "Ws", POPRT_DTYPE_FLOAT, 0, NULL, ws);
    else if (form & 32)
        tb_const(m, "Ws", POPRT_DTYPE_FLOAT, 1, md, ws);
    else
        tb_const(m, "Ws", POPRT_DTYPE_FLOAT, sr, sd, ws);
    tb_const(m, "bias", POPRT_DTYPE_FLOAT, sr, sd, bias);
    tb_node(m, "DynamicQuantizeLinear", 1, (const char *[]){"x"}, 3,
            (const char *[]){"xq", "xs", "xz"});
    tb_node(m, "Mul", 2, (const char *[]){"xs", "Ws"}, 1, (const char *[]){"S"});
    poprt__node *cv = tb_node(m, "ConvInteger", 4, (const char *[]){"xq", "W", "xz", "Wz"}, 1,
                              (const char *[]){"acc"});
    const int64_t pads[4] = {1, 1, 1, 1}, strides[2] = {st, st}, ks[2] = {3, 3};
    ck_assert_int_eq(poprt__rw_attr_ints(cv, "pads", 4, pads), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_ints(cv, "strides", 2, strides), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_ints(cv, "kernel_shape", 2, ks), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_i(cv, "group", G), POPRT_OK);
    dequant_chain(m, form & 1, form & 2);
    free(w);
    free(wz);
    free(ws);
    free(bias);
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    return pm;
}

/* ConvInteger's chain fused into FusedConvInteger, equal bit for bit to
 * the unfused graph (1 and 2 threads): the GEMM path (one group, 3
 * groups), the depthwise path (float sums), strides 1 and 2, every form;
 * the scale along the width is left alone. */
START_TEST(conv_integer_dequantize_fuses)
{
    static const int shapes[][6] = {
        /* C, M, H, W, G, stride: W == M for bit 5 (a [M] scale broadcasts) */
        {5, 20, 9, 20, 1, 1}, {6, 12, 8, 12, 3, 2}, {16, 16, 10, 16, 16, 1}, {8, 8, 7, 8, 8, 2}};
    for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
        for (int form = 0; form < 64; form++) {
            const int *c = shapes[sh];
            if ((form & 32) && (form & 4))
                continue; /* one scale: the [M] shape is not used */
            const int st = c[5], OH = (c[2] - 1) / st + 1, OW = (c[3] - 1) / st + 1;
            if ((form & 32) && OW != c[1])
                continue; /* an [M] scale must broadcast along the width */
            const int64_t d[4] = {2, c[0], c[2], c[3]};
            const size_t nx = (size_t)2 * c[0] * c[2] * c[3], ny = (size_t)2 * c[1] * OH * OW;
            float *x = malloc(nx * sizeof *x);
            ck_assert_ptr_nonnull(x);
            fill(x, (int)nx, 91 + form);
            poprt_model *pm = qconv_model(c[0], c[1], c[2], c[3], c[4], st, form);
            const int fuses = !(form & 32);
            /* fused (or not) on 1 and 2 threads against optimize 0 */
            const char *const off[] = {"optimize", "0", NULL};
            const char *const two[] = {"threads", "2", NULL};
            float *y = malloc(3 * ny * sizeof *y);
            ck_assert_ptr_nonnull(y);
            run_model(pm, NULL, "x", d, 4, x, nx, "y", y, ny, NULL, NULL);
            run_model(pm, off, "x", d, 4, x, nx, "y", y + ny, ny, NULL, NULL);
            run_model(pm, two, "x", d, 4, x, nx, "y", y + 2 * ny, ny, NULL, NULL);
            for (size_t i = 0; i < ny; i++)
                ck_assert_msg(!memcmp(&y[i], &y[ny + i], sizeof *y) &&
                                  !memcmp(&y[i], &y[2 * ny + i], sizeof *y),
                              "shape %zu form %d element %zu: %.9g, unfused %.9g, 2 threads %.9g",
                              sh, form, i, (double)y[i], (double)y[ny + i],
                              (double)y[2 * ny + i]);
            free(y);
            poprt_options *o;
            poprt_session *s;
            ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
            ck_assert_int_eq(poprt_session_create(pm, o, &s), POPRT_OK);
            int found = 0;
            for (size_t i = 0; i < s->m->graph->nodes.len; i++)
                found += !strcmp(((const poprt__node *)s->m->graph->nodes.items[i])->op_type,
                                 "FusedConvInteger");
            ck_assert_msg(found == fuses, "shape %zu form %d: %d FusedConvInteger", sh, form, found);
            poprt_session_free(s);
            poprt_options_free(o);
            poprt_model_free(pm);
            free(x);
        }
}
END_TEST

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RSS_CHECKED 0 /* the sanitizers' shadow memory grows with what is touched */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RSS_CHECKED 0
#else
#define RSS_CHECKED 1
#endif
#else
#define RSS_CHECKED 1
#endif

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

/* A large float weight stored where floats cannot be read typed in place (an
 * offset not a multiple of 4 in the file, as exporters write them) stays in
 * the file's pages until something reads it typed: a load copies nothing,
 * and a session that packs it (MatMul) holds the packed panels only, in the
 * caller's model as in its own: resident memory grows by about nothing at
 * load and one weight at session creation (before lazy reads, one and two;
 * before that, two and four). The bounds allow 4-6 MB more (the kernel may
 * map a file's pages two huge pages at a time). */
START_TEST(unaligned_weights_are_read_in_place)
{
    enum { M = 4, K = 2048, N = 2048 };
    const size_t wbytes = (size_t)K * N * sizeof(float);
    float *w = malloc(wbytes);
    ck_assert_ptr_nonnull(w);
    fill(w, (size_t)K * N, 41);
    void *data = NULL;
    size_t size = 0, off = 0;
    for (int pad = 0; pad < 4; pad++) {
        poprt__model *m = tb_model(13);
        char producer[8] = "p";
        memset(producer, 'p', (size_t)pad + 1);
        producer[pad + 1] = 0;
        m->producer_name = poprt__arena_strdup(&m->arena, producer);
        const int64_t xd[2] = {M, K}, wd[2] = {K, N};
        tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
        tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
        tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"});
        tb_output(m, "y");
        poprt__free(data);
        ck_assert_int_eq(poprt__onnx_save(m, &data, &size), POPRT_OK);
        poprt__model_free(m);
        const unsigned char *at = memmem(data, size, w, 64);
        ck_assert_ptr_nonnull(at);
        off = (size_t)(at - (const unsigned char *)data);
        if (off % 4)
            break;
    }
    ck_assert_uint_ne(off % 4, 0);
    char path[] = "/tmp/poprt_unaligned_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, size), (ssize_t)size);
    close(fd);
    poprt__free(data);

    const long r0 = rss_kb();
    poprt_model *pm;
    ck_assert_int_eq(poprt_model_load(path, &pm), POPRT_OK);
    const long r1 = rss_kb();
    const poprt__tensor *t = poprt__graph_find(pm->m->graph, "W");
    ck_assert_ptr_nonnull(t);
    /* left in the file's pages, unaligned: nothing read it typed */
    ck_assert(poprt__tensor_data_lazy(t));
    ck_assert_int_eq(memcmp(t->raw, w, wbytes), 0);
    poprt__model *c;
    ck_assert_int_eq(poprt__model_clone(pm->m, &c), POPRT_OK);
    ck_assert_ptr_eq(poprt__graph_find(c->graph, "W")->raw, t->raw); /* shared */
    poprt__model_free(c);

    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(pm, NULL, &s), POPRT_OK);
    const long r2 = rss_kb();
    float x[M * K], y[M * N];
    fill(x, M * K, 42);
    poprt_stepio *io;
    const int64_t d[2] = {M, K};
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof y), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j += 97) {
            double want = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                want += (double)x[i * K + k] * w[(size_t)k * N + j];
                mag += fabs((double)x[i * K + k] * w[(size_t)k * N + j]);
            }
            ck_assert_msg(fabs(y[i * N + j] - want) <= 1e-5 * mag + 1e-6, "[%d,%d] %g vs %g", i,
                          j, (double)y[i * N + j], want);
        }
    /* packed without a copy, by the session as in the caller's model */
    ck_assert(poprt__tensor_data_lazy(t));
    ck_assert(poprt__tensor_data_lazy(poprt__graph_find(s->m->graph, "W")));
    if (RSS_CHECKED && r0 > 0 && r1 > 0 && r2 > 0) {
        /* load: the file is mapped, nothing copied; session: the packed
         * weight (the file pages the check above read are given back) */
        const double wkb = (double)wbytes / 1024;
        ck_assert_msg(r1 - r0 <= 4096, "load: +%ld kB for a %.0f kB weight", r1 - r0, wkb);
        ck_assert_msg(r2 - r0 <= wkb + 6144, "session: +%ld kB for a %.0f kB weight",
                      r2 - r0, wkb);
    }
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(pm);
    unlink(path);
    free(w);
}
END_TEST

/* If branches' nodes are prepared as the main graph's are: y = x Wt (then:
 * Wt a branch initializer) or x W (else: W a main-graph weight the branch
 * reads), x [4, 8], W and Wt [8, 16]. Results for both conditions, after a
 * write of W and after its reset, within 1e-5 relative of direct loops. */
static void if_run(poprt_session *s, uint8_t c, const float *x, float *y)
{
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "c", POPRT_DTYPE_BOOL, NULL, 0, &c, 1), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, (const int64_t[]){4, 8}, 2,
                                            x, 32 * sizeof *x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, 64 * sizeof *y), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
}

static void if_check(const float *x, const float *w, const float *y)
{
    for (int r = 0; r < 4; r++)
        for (int j = 0; j < 16; j++) {
            double want = 0;
            for (int k = 0; k < 8; k++)
                want += (double)x[r * 8 + k] * w[k * 16 + j];
            ck_assert_msg(fabs(y[r * 16 + j] - want) <= 1e-5 * (1 + fabs(want)), "[%d,%d] %g vs %g",
                          r, j, (double)y[r * 16 + j], want);
        }
}

START_TEST(subgraph_nodes_are_prepared)
{
    float x[32], w[128], wt[128], w2[128], y[64];
    fill(x, 32, 3);
    fill(w, 128, 4);
    fill(wt, 128, 5);
    fill(w2, 128, 6);
    poprt_model *m;
    poprt_graph *g, *th, *el;
    poprt_node *n;
    const int64_t wd[2] = {8, 16};
    ck_assert_int_eq(poprt_model_create(16, &m), POPRT_OK);
    ck_assert_int_eq(poprt_model_graph(m, &g), POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_input(g, "c", POPRT_DTYPE_BOOL, NULL, 0), POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_input(g, "x", POPRT_DTYPE_FLOAT, (const int64_t[]){4, 8}, 2),
                     POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_initializer(g, "W", POPRT_DTYPE_FLOAT, wd, 2, w, sizeof w,
                                                 NULL, NULL),
                     POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_node(g, "If", NULL, "choose", 1, (const char *[]){"c"}, 1,
                                          (const char *[]){"y"}, &n),
                     POPRT_OK);
    ck_assert_int_eq(poprt_node_set_attr_graph(n, "then_branch", &th), POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_initializer(th, "Wt", POPRT_DTYPE_FLOAT, wd, 2, wt, sizeof wt,
                                                 NULL, NULL),
                     POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_node(th, "MatMul", NULL, "t_mm", 2, (const char *[]){"x", "Wt"},
                                          1, (const char *[]){"ty"}, NULL),
                     POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_output(th, "ty", POPRT_DTYPE_UNDEFINED, NULL, 0), POPRT_OK);
    ck_assert_int_eq(poprt_node_set_attr_graph(n, "else_branch", &el), POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_node(el, "MatMul", NULL, "e_mm", 2, (const char *[]){"x", "W"},
                                          1, (const char *[]){"ey"}, NULL),
                     POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_output(el, "ey", POPRT_DTYPE_UNDEFINED, NULL, 0), POPRT_OK);
    ck_assert_int_eq(poprt_graph_add_output(g, "y", POPRT_DTYPE_UNDEFINED, NULL, 0), POPRT_OK);
    ck_assert_msg(poprt_model_check(m) == POPRT_OK, "%s", poprt_last_error());
    poprt_session *s;
    ck_assert_msg(poprt_session_create(m, NULL, &s) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_uint_eq(s->prog->n_sub_states, 2); /* both MatMuls packed their weight */
    for (size_t i = 0; i < s->prog->n_sub_states; i++)
        ck_assert_ptr_nonnull(s->prog->sub_states[i].state);
    if_run(s, 1, x, y);
    if_check(x, wt, y);
    if_run(s, 0, x, y);
    if_check(x, w, y);
    /* the else branch's packed W follows writes and resets of W */
    ck_assert_int_eq(poprt_session_write_weight(s, "W", w2, sizeof w2), POPRT_OK);
    if_run(s, 0, x, y);
    if_check(x, w2, y);
    ck_assert_int_eq(poprt_session_reset_weights(s, "W"), POPRT_OK);
    if_run(s, 0, x, y);
    if_check(x, w, y);
    poprt_session_free(s);
    poprt_model_free(m);
}
END_TEST

/* A weight computed in steps by folding, W = (A + B) * C (each [64, 512],
 * 128 KiB): the intermediate A + B is dead once W is folded, and its memory
 * goes before the weight is packed; W itself stays (the session's constant
 * of record). y = x W for x [2, 64], within 1e-5 relative. */
START_TEST(folded_intermediates_are_freed)
{
    enum { K = 64, N = 512 };
    static float a[K * N], b[K * N], c[K * N], w[K * N];
    float x[2 * K], y[2 * N];
    fill(a, K * N, 7);
    fill(b, K * N, 8);
    fill(c, K * N, 9);
    fill(x, 2 * K, 10);
    for (int i = 0; i < K * N; i++)
        w[i] = (a[i] + b[i]) * c[i];
    poprt__model *m = tb_model(13);
    const int64_t wd[2] = {K, N};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){2, K});
    tb_const(m, "A", POPRT_DTYPE_FLOAT, 2, wd, a);
    tb_const(m, "B", POPRT_DTYPE_FLOAT, 2, wd, b);
    tb_const(m, "C", POPRT_DTYPE_FLOAT, 2, wd, c);
    tb_node(m, "Add", 2, (const char *[]){"A", "B"}, 1, (const char *[]){"ab"});
    tb_node(m, "Mul", 2, (const char *[]){"ab", "C"}, 1, (const char *[]){"W"});
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    poprt_session *s;
    ck_assert_msg(poprt_session_create(pm, NULL, &s) == POPRT_OK, "%s", poprt_last_error());
    /* one folded value left, W's, read by the MatMul */
    ck_assert_uint_eq(s->m->folded.len, 1);
    const poprt__blob *fb = s->m->folded.items[0];
    const poprt__tensor *wt = NULL;
    for (size_t i = 0; i < s->m->graph->tensors.len; i++) {
        const poprt__tensor *t = s->m->graph->tensors.items[i];
        if (t->raw && (const char *)t->raw >= (const char *)fb->data &&
            (const char *)t->raw < (const char *)fb->data + fb->size)
            wt = t;
    }
    ck_assert_ptr_nonnull(wt);
    ck_assert_int_gt(wt->n_uses, 0);
    ck_assert_int_eq(memcmp(wt->raw, w, sizeof w), 0);
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, (const int64_t[]){2, K}, 2,
                                            x, sizeof x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof y), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < N; j++) {
            double want = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                want += (double)x[r * K + k] * w[k * N + j];
                mag += fabs((double)x[r * K + k] * w[k * N + j]);
            }
            ck_assert_msg(fabs(y[r * N + j] - want) <= 1e-5 * mag + 1e-6, "[%d,%d] %g vs %g", r, j,
                          (double)y[r * N + j], want);
        }
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(pm);
}
END_TEST

/* A malformed FusedElementwise in a model file fails at load with a
 * message naming the node. */
/* Adds the ai.poprt opset import to a built model (one default import). */
static void import_poprt(poprt__model *m)
{
    m->n_opsets = 2;
    poprt__opset *os = poprt__arena_array(&m->arena, 2, sizeof *os);
    os[0] = m->opsets[0];
    os[1].domain = "ai.poprt";
    os[1].version = 1;
    m->opsets = os;
}

/* A FusedConv whose post_ops has no post_reverse / alpha / beta fails with
 * a status and a message naming the attributes, at the latest when it runs. */
START_TEST(malformed_fused_conv_steps_are_rejected)
{
    poprt__model *m = tb_model(13);
    int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 1, 1};
    const float w = 2.0f;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    tb_const(m, "w", POPRT_DTYPE_FLOAT, 4, wd, &w);
    import_poprt(m);
    poprt__node *n = poprt__graph_add_node(m->graph, "FusedConv", "ai.poprt", "badconv", 2, 1);
    poprt__node_set_input(n, 0, poprt__graph_tensor(m->graph, "x"));
    poprt__node_set_input(n, 1, poprt__graph_tensor(m->graph, "w"));
    n->outputs[0] = poprt__graph_tensor(m->graph, "y");
    poprt__attr *a = poprt__node_add_attr(n, "post_ops", POPRT__ATTR_INTS);
    static int64_t ops[1] = {POPRT__EW_MUL};
    a->n = 1;
    a->ints = ops;
    tb_output(m, "y");
    poprt_model *pm = NULL;
    poprt_status st = tb_load(m, &pm);
    if (st == POPRT_OK) {
        poprt_session *s = NULL;
        st = poprt_session_create(pm, NULL, &s);
        if (st == POPRT_OK) {
            float x[9] = {0}, y[9];
            poprt_stepio *io;
            ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
            ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 4, x, sizeof x),
                             POPRT_OK);
            ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof y), POPRT_OK);
            st = poprt_session_run(s, io);
            poprt_stepio_free(io);
            poprt_session_free(s);
        }
        poprt_model_free(pm);
    }
    ck_assert_int_eq(st, POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "post_ops"));
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "badconv"));
}
END_TEST

START_TEST(malformed_fused_node_is_rejected)
{
    poprt__model *m = tb_model(13);
    int64_t xd[1] = {4};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, xd);
    import_poprt(m);
    poprt__node *n = poprt__graph_add_node(m->graph, "FusedElementwise", "ai.poprt", "bad", 1, 1);
    poprt__node_set_input(n, 0, poprt__graph_tensor(m->graph, "x"));
    n->outputs[0] = poprt__graph_tensor(m->graph, "y");
    poprt__attr *a = poprt__node_add_attr(n, "ops", POPRT__ATTR_INTS);
    static int64_t ops[2] = {POPRT__EW_RELU, 99};
    a->n = 2;
    a->ints = ops;
    tb_output(m, "y");
    poprt_model *pm = NULL;
    poprt_status st = tb_load(m, &pm);
    if (st == POPRT_OK) {
        poprt_session *s = NULL;
        st = poprt_session_create(pm, NULL, &s);
        ck_assert_ptr_null(s);
        poprt_model_free(pm);
    }
    ck_assert_int_eq(st, POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'bad'"));
}
END_TEST

/* Node n (named "bad") writes y, the graph output; loading m fails with an
 * error naming the node and holding needle (case ci). */
static void refused_naming(poprt__model *m, poprt__node *n, const char *needle, size_t ci)
{
    n->outputs[0] = poprt__graph_tensor(m->graph, "y");
    tb_output(m, "y");
    poprt_model *pm = NULL;
    poprt_status st = tb_load(m, &pm);
    ck_assert_ptr_null(pm);
    ck_assert_int_ne(st, POPRT_OK);
    ck_assert_msg(strstr(poprt_last_error(), "'bad'") && strstr(poprt_last_error(), needle),
                  "case %zu: %s", ci, poprt_last_error());
}

/* A FusedMatMulInteger in a model file whose scale is missing, not float,
 * or of the wrong length fails at load naming the node and the input. */
START_TEST(malformed_fused_matmul_integer_is_rejected)
{
    static const struct {
        int32_t sdt;
        int64_t sn; /* scale values; 0: no scale input */
        const char *needle;
    } cases[] = {{POPRT_DTYPE_FLOAT, 0, "scale"},
                 {POPRT_DTYPE_INT32, 1, "scale"},
                 {POPRT_DTYPE_FLOAT, 5, "scale"}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        poprt__model *m = tb_model(13);
        const int64_t ad[2] = {2, 8}, bd[2] = {8, 6};
        tb_input(m, "a", POPRT_DTYPE_UINT8, 2, ad);
        static const int8_t b[48];
        tb_const(m, "b", POPRT_DTYPE_INT8, 2, bd, b);
        static const float sv[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        if (cases[ci].sn)
            tb_const(m, "s", cases[ci].sdt, 1, &cases[ci].sn, sv);
        import_poprt(m);
        poprt__node *n =
            poprt__graph_add_node(m->graph, "FusedMatMulInteger", "ai.poprt", "bad", 5, 1);
        poprt__node_set_input(n, 0, poprt__graph_tensor(m->graph, "a"));
        poprt__node_set_input(n, 1, poprt__graph_tensor(m->graph, "b"));
        if (cases[ci].sn)
            poprt__node_set_input(n, 4, poprt__graph_tensor(m->graph, "s"));
        refused_naming(m, n, cases[ci].needle, ci);
    }
}
END_TEST

/* ai.poprt QLinearAdd with a float operand, an int32 zero point, operands of
 * two shapes, an input missing: refused at load naming the node and what. */
START_TEST(malformed_qlinear_add_is_rejected)
{
    static const struct {
        int32_t at, zt;
        int64_t bn; /* B's length (A's: 6) */
        int n_in;
        const char *needle;
    } cases[] = {{POPRT_DTYPE_FLOAT, POPRT_DTYPE_UINT8, 6, 8, "input 0 must be uint8 or int8"},
                 {POPRT_DTYPE_UINT8, POPRT_DTYPE_INT32, 6, 8, "must be uint8 or int8"},
                 {POPRT_DTYPE_UINT8, POPRT_DTYPE_UINT8, 5, 8, "one shape"},
                 {POPRT_DTYPE_UINT8, POPRT_DTYPE_UINT8, 6, 7, "input 7 is required"}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        poprt__model *m = tb_model(13);
        const int64_t ad[1] = {6}, bd[1] = {cases[ci].bn};
        tb_input(m, "a", cases[ci].at, 1, ad);
        tb_input(m, "b", POPRT_DTYPE_UINT8, 1, bd);
        static const float one = 1.0f;
        static const int32_t zero[1] = {0};
        tb_const(m, "s", POPRT_DTYPE_FLOAT, 0, NULL, &one);
        tb_const(m, "z", cases[ci].zt, 0, NULL, zero);
        import_poprt(m);
        poprt__node *n = poprt__graph_add_node(m->graph, "QLinearAdd", "ai.poprt", "bad", 8, 1);
        static const char *const ins[8] = {"a", "s", "z", "b", "s", "z", "s", "z"};
        for (int i = 0; i < cases[ci].n_in; i++)
            poprt__node_set_input(n, i, poprt__graph_tensor(m->graph, ins[i]));
        refused_naming(m, n, cases[ci].needle, ci);
    }
}
END_TEST

/* ---- float16 nodes computed in float32 (compiler/float16.c) ---- */

/* Conv + Relu + GlobalAveragePool, the Relu output also a graph output and
 * read by a Sigmoid (a second branch), with weights and data in dtype. */
static poprt_model *f16_model(int32_t dtype, const void *w, const void *b)
{
    poprt__model *m = tb_model(17);
    int64_t xd[4] = {1, 4, 6, 6}, wd[4] = {8, 4, 3, 3}, bd[1] = {8};
    tb_input(m, "x", dtype, 4, xd);
    tb_const(m, "w", dtype, 4, wd, w);
    tb_const(m, "b", dtype, 1, bd, b);
    tb_node(m, "Conv", 3, (const char *[]){"x", "w", "b"}, 1, (const char *[]){"c"});
    tb_node(m, "Relu", 1, (const char *[]){"c"}, 1, (const char *[]){"r"});
    tb_node(m, "GlobalAveragePool", 1, (const char *[]){"r"}, 1, (const char *[]){"y"});
    tb_node(m, "Sigmoid", 1, (const char *[]){"r"}, 1, (const char *[]){"s"});
    tb_output(m, "y");
    tb_output(m, "r");
    tb_output(m, "s");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    return pm;
}

enum { F16_NX = 144, F16_NW = 288, F16_NB = 8, F16_NY = 8, F16_NR = 128 };

/* Runs one of the models on x (dtype-sized elements); outputs into y, r, s. */
static void f16_run(const poprt_model *pm, const char *compute, int32_t dtype, const void *x,
                    void *y, void *r, void *s, int *f16_nodes)
{
    size_t es = dtype == POPRT_DTYPE_FLOAT ? 4 : 2;
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    if (compute)
        ck_assert_int_eq(poprt_options_set(o, "float16_compute", compute), POPRT_OK);
    poprt_session *sess;
    ck_assert_msg(poprt_session_create(pm, o, &sess) == POPRT_OK, "%s", poprt_last_error());
    /* nodes other than Cast that still read or write float16 */
    int n16 = 0;
    const poprt__graph *g = sess->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        int any = 0;
        for (int k = 0; k < n->n_inputs; k++)
            any |= n->inputs[k] && n->inputs[k]->type.elem == POPRT_DTYPE_FLOAT16;
        for (int k = 0; k < n->n_outputs; k++)
            any |= n->outputs[k] && n->outputs[k]->type.elem == POPRT_DTYPE_FLOAT16;
        n16 += any && strcmp(n->op_type, "Cast") != 0;
    }
    *f16_nodes = n16;
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    int64_t xd[4] = {1, 4, 6, 6};
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", (poprt_dtype)dtype, xd, 4, x, F16_NX * es),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, F16_NY * es), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "r", r, F16_NR * es), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "s", s, F16_NR * es), POPRT_OK);
    ck_assert_msg(poprt_session_run(sess, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
    poprt_session_free(sess);
    poprt_options_free(o);
}

/* A float16 model compiles to float32 nodes (Casts only at its interface),
 * and its outputs are bit for bit the float32 model's on the same (float16)
 * values, rounded once to float16. With "float16_compute" = "float16" the
 * nodes stay float16 (rounded after each): within 2 float16 ulps. */
START_TEST(float16_nodes_compute_in_float32)
{
    uint16_t xh[F16_NX], wh[F16_NW], bh[F16_NB];
    float xf[F16_NX], wf[F16_NW], bf[F16_NB];
    fill(xf, F16_NX, 3);
    fill(wf, F16_NW, 4);
    fill(bf, F16_NB, 5);
    for (int i = 0; i < F16_NW; i++)
        wf[i] *= 0.05f;
    for (int i = 0; i < F16_NX; i++)
        xh[i] = poprt__float_to_half(xf[i]), xf[i] = poprt__half_to_float(xh[i]);
    for (int i = 0; i < F16_NW; i++)
        wh[i] = poprt__float_to_half(wf[i]), wf[i] = poprt__half_to_float(wh[i]);
    for (int i = 0; i < F16_NB; i++)
        bh[i] = poprt__float_to_half(bf[i]), bf[i] = poprt__half_to_float(bh[i]);
    poprt_model *m16 = f16_model(POPRT_DTYPE_FLOAT16, wh, bh);
    poprt_model *m32 = f16_model(POPRT_DTYPE_FLOAT, wf, bf);
    float y32[F16_NY], r32[F16_NR], s32[F16_NR];
    uint16_t y16[F16_NY], r16[F16_NR], s16[F16_NR], ya[F16_NY], ra[F16_NR], sa[F16_NR];
    int n16 = -1;
    f16_run(m32, NULL, POPRT_DTYPE_FLOAT, xf, y32, r32, s32, &n16);
    f16_run(m16, NULL, POPRT_DTYPE_FLOAT16, xh, y16, r16, s16, &n16);
    ck_assert_int_eq(n16, 0);
    const float *want[3] = {y32, r32, s32};
    const uint16_t *got[3] = {y16, r16, s16}, *alone[3] = {ya, ra, sa};
    const int count[3] = {F16_NY, F16_NR, F16_NR};
    for (int o = 0; o < 3; o++)
        for (int i = 0; i < count[o]; i++)
            ck_assert_msg(got[o][i] == poprt__float_to_half(want[o][i]),
                          "output %d [%d]: 0x%04x, float32 model rounded 0x%04x", o, i,
                          got[o][i], poprt__float_to_half(want[o][i]));
    f16_run(m16, "float16", POPRT_DTYPE_FLOAT16, xh, ya, ra, sa, &n16);
    ck_assert_int_gt(n16, 0);
    for (int o = 0; o < 3; o++)
        for (int i = 0; i < count[o]; i++) {
            float a = poprt__half_to_float(alone[o][i]), b = poprt__half_to_float(got[o][i]);
            ck_assert_msg(fabsf(a - b) <= 2 * 0x1p-10f * fmaxf(fabsf(b), 0x1p-14f),
                          "output %d [%d]: per-node float16 %g, float32 compute %g", o, i,
                          (double)a, (double)b);
        }
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "float16_compute", "bf16"), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "float16_compute"));
    poprt_options_free(o);
    poprt_model_free(m16);
    poprt_model_free(m32);
}
END_TEST

/* Mixed precision as converters write it: x (float32) -> Cast(float16) ->
 * Mul(3, float16) -> Cast(float32) -> ReduceMean (kept in float32). With
 * float16_compute = float32 the two Casts are storage boundaries of values
 * that are float32 on both sides, not rounding points: y = mean(3 x) in
 * float32 (within 1e-6 relative of the double sum), and the Casts are gone
 * from the compiled graph; with float16 the Mul rounds x and 3 x. */
START_TEST(float16_storage_casts_do_not_round)
{
    enum { R = 4, C = 8 };
    float x[R * C], y[R], yh[R];
    for (int i = 0; i < R * C; i++)
        x[i] = 0.1f + 0.0013f * (float)i; /* not float16 values */
    const uint16_t three = poprt__float_to_half(3.0f);
    poprt__model *m = tb_model(17);
    const int64_t xd[2] = {R, C}, one[1] = {1};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "three", POPRT_DTYPE_FLOAT16, 1, one, &three);
    poprt__node *c1 = tb_node(m, "Cast", 1, (const char *[]){"x"}, 1, (const char *[]){"xh"});
    ck_assert_int_eq(poprt__rw_attr_i(c1, "to", POPRT_DTYPE_FLOAT16), POPRT_OK);
    tb_node(m, "Mul", 2, (const char *[]){"xh", "three"}, 1, (const char *[]){"mh"});
    poprt__node *c2 = tb_node(m, "Cast", 1, (const char *[]){"mh"}, 1, (const char *[]){"mf"});
    ck_assert_int_eq(poprt__rw_attr_i(c2, "to", POPRT_DTYPE_FLOAT), POPRT_OK);
    poprt__node *rm = tb_node(m, "ReduceMean", 1, (const char *[]){"mf"}, 1, (const char *[]){"y"});
    static const int64_t last[1] = {-1};
    ck_assert_int_eq(poprt__rw_attr_ints(rm, "axes", 1, last), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_i(rm, "keepdims", 0), POPRT_OK);
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    for (int mode = 0; mode < 2; mode++) {
        poprt_options *o;
        ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
        ck_assert_int_eq(poprt_options_set(o, "float16_compute", mode ? "float16" : "float32"),
                         POPRT_OK);
        poprt_session *sess;
        ck_assert_msg(poprt_session_create(pm, o, &sess) == POPRT_OK, "%s", poprt_last_error());
        int casts = 0;
        for (size_t i = 0; i < sess->m->graph->nodes.len; i++)
            casts += !strcmp(((const poprt__node *)sess->m->graph->nodes.items[i])->op_type,
                             "Cast");
        ck_assert_int_eq(casts, mode ? 2 : 0);
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, sizeof x),
                         POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_output(io, "y", mode ? yh : y, sizeof y), POPRT_OK);
        ck_assert_msg(poprt_session_run(sess, io) == POPRT_OK, "%s", poprt_last_error());
        poprt_stepio_free(io);
        poprt_session_free(sess);
        poprt_options_free(o);
    }
    for (int r = 0; r < R; r++) {
        double want = 0, rounded = 0;
        for (int c = 0; c < C; c++) {
            want += 3.0 * x[r * C + c];
            rounded += poprt__half_to_float(
                poprt__float_to_half(3.0f * poprt__half_to_float(poprt__float_to_half(x[r * C + c]))));
        }
        want /= C;
        rounded /= C;
        ck_assert_msg(fabs(y[r] - want) <= 1e-6 * fabs(want), "row %d: %.9g, float32 %.9g", r,
                      (double)y[r], want);
        ck_assert_msg(fabs(yh[r] - rounded) <= 1e-6 * fabs(rounded),
                      "row %d: float16 nodes %.9g, expected %.9g", r, (double)yh[r], rounded);
        ck_assert(fabs(want - rounded) > 1e-5 * fabs(want)); /* the cases differ */
    }
    poprt_model_free(pm);
}
END_TEST

/* ---- QDQ static quantization -> QLinearConv / QLinearMatMul (fuse_qdq.c) ---- */

/* y = DQ(Q(Relu(Conv(DQ(Q(x)), DQ(wq, per channel), DQ(bq int32))))) and
 * y2 = DQ(Q(MatMul(DQ(Q(x2)), DQ(wq2, per column)))), with uint8 activations
 * (zero points 128, 0 and 100) and int8 weights */
enum { QC_C = 8, QC_M = 12, QC_H = 7, QC_K = 16, QC_N = 10, QC_R = 6 };

static poprt_model *qdq_model(void)
{
    static int8_t wq[QC_M * QC_C * 9], wq2[QC_K * QC_N], wz[QC_M], wz2[QC_N];
    static int32_t bq[QC_M];
    static float ws[QC_M], bs[QC_M], ws2[QC_N];
    static const float xs = 0.05f, ys = 0.1f, xs2 = 0.04f, ys2 = 0.02f;
    static const uint8_t xz = 128, yz = 0, yz2 = 100;
    uint32_t r = 12345u;
    for (int i = 0; i < QC_M * QC_C * 9; i++)
        wq[i] = (int8_t)((r = r * 1103515245u + 12345u) >> 25) - 64;
    for (int i = 0; i < QC_K * QC_N; i++)
        wq2[i] = (int8_t)((r = r * 1103515245u + 12345u) >> 25) - 64;
    for (int m = 0; m < QC_M; m++) {
        ws[m] = 0.002f * (float)(m + 1);
        bs[m] = xs * ws[m];
        bq[m] = (int32_t)((r = r * 1103515245u + 12345u) >> 20) - 2048;
    }
    for (int n = 0; n < QC_N; n++)
        ws2[n] = 0.003f * (float)(n + 2);
    poprt__model *m = tb_model(13);
    const int64_t xd[4] = {1, QC_C, QC_H, QC_H}, wd[4] = {QC_M, QC_C, 3, 3}, md[1] = {QC_M},
                  x2d[2] = {QC_R, QC_K}, w2d[2] = {QC_K, QC_N}, nd[1] = {QC_N};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    tb_input(m, "x2", POPRT_DTYPE_FLOAT, 2, x2d);
    tb_const(m, "xs", POPRT_DTYPE_FLOAT, 0, NULL, &xs);
    tb_const(m, "xz", POPRT_DTYPE_UINT8, 0, NULL, &xz);
    tb_const(m, "ys", POPRT_DTYPE_FLOAT, 0, NULL, &ys);
    tb_const(m, "yz", POPRT_DTYPE_UINT8, 0, NULL, &yz);
    tb_const(m, "xs2", POPRT_DTYPE_FLOAT, 0, NULL, &xs2);
    tb_const(m, "ys2", POPRT_DTYPE_FLOAT, 0, NULL, &ys2);
    tb_const(m, "yz2", POPRT_DTYPE_UINT8, 0, NULL, &yz2);
    tb_const(m, "wq", POPRT_DTYPE_INT8, 4, wd, wq);
    tb_const(m, "ws", POPRT_DTYPE_FLOAT, 1, md, ws);
    tb_const(m, "wz", POPRT_DTYPE_INT8, 1, md, wz);
    tb_const(m, "bq", POPRT_DTYPE_INT32, 1, md, bq);
    tb_const(m, "bs", POPRT_DTYPE_FLOAT, 1, md, bs);
    tb_const(m, "wq2", POPRT_DTYPE_INT8, 2, w2d, wq2);
    tb_const(m, "ws2", POPRT_DTYPE_FLOAT, 1, nd, ws2);
    tb_const(m, "wz2", POPRT_DTYPE_INT8, 1, nd, wz2);
    tb_node(m, "QuantizeLinear", 3, (const char *[]){"x", "xs", "xz"}, 1, (const char *[]){"xq"});
    tb_node(m, "DequantizeLinear", 3, (const char *[]){"xq", "xs", "xz"}, 1,
            (const char *[]){"xd"});
    poprt__node *d = tb_node(m, "DequantizeLinear", 3, (const char *[]){"wq", "ws", "wz"}, 1,
                             (const char *[]){"wf"});
    ck_assert_int_eq(poprt__rw_attr_i(d, "axis", 0), POPRT_OK);
    d = tb_node(m, "DequantizeLinear", 2, (const char *[]){"bq", "bs"}, 1, (const char *[]){"bf"});
    ck_assert_int_eq(poprt__rw_attr_i(d, "axis", 0), POPRT_OK);
    static const int64_t pads[4] = {1, 1, 1, 1};
    poprt__node *c = tb_node(m, "Conv", 3, (const char *[]){"xd", "wf", "bf"}, 1,
                             (const char *[]){"c"});
    ck_assert_int_eq(poprt__rw_attr_ints(c, "pads", 4, pads), POPRT_OK);
    tb_node(m, "Relu", 1, (const char *[]){"c"}, 1, (const char *[]){"r"});
    tb_node(m, "QuantizeLinear", 3, (const char *[]){"r", "ys", "yz"}, 1, (const char *[]){"yq"});
    tb_node(m, "DequantizeLinear", 3, (const char *[]){"yq", "ys", "yz"}, 1,
            (const char *[]){"y"});
    tb_node(m, "QuantizeLinear", 3, (const char *[]){"x2", "xs2", "xz"}, 1,
            (const char *[]){"x2q"});
    tb_node(m, "DequantizeLinear", 3, (const char *[]){"x2q", "xs2", "xz"}, 1,
            (const char *[]){"x2d"});
    tb_node(m, "DequantizeLinear", 3, (const char *[]){"wq2", "ws2", "wz2"}, 1,
            (const char *[]){"w2f"});
    tb_node(m, "MatMul", 2, (const char *[]){"x2d", "w2f"}, 1, (const char *[]){"p2"});
    tb_node(m, "QuantizeLinear", 3, (const char *[]){"p2", "ys2", "yz2"}, 1,
            (const char *[]){"y2q"});
    tb_node(m, "DequantizeLinear", 3, (const char *[]){"y2q", "ys2", "yz2"}, 1,
            (const char *[]){"y2"});
    /* the same dequantized operands, the float result with a bias: y3 */
    static float b3[QC_N];
    for (int n = 0; n < QC_N; n++)
        b3[n] = 0.25f * (float)n - 1.0f;
    tb_const(m, "b3", POPRT_DTYPE_FLOAT, 1, nd, b3);
    tb_node(m, "MatMul", 2, (const char *[]){"x2d", "w2f"}, 1, (const char *[]){"p3"});
    tb_node(m, "Add", 2, (const char *[]){"p3", "b3"}, 1, (const char *[]){"y3"});
    /* Gemm(x2d, DQ(wq2t) transposed, C), alpha 0.5, beta 2, per-row (axis 0) weight scales:
     * y4 */
    static int8_t wq2t[QC_N * QC_K];
    for (int n = 0; n < QC_N; n++)
        for (int k = 0; k < QC_K; k++)
            wq2t[n * QC_K + k] = (int8_t)(3 * k - 2 * n + 1);
    const int64_t w2td[2] = {QC_N, QC_K};
    tb_const(m, "wq2t", POPRT_DTYPE_INT8, 2, w2td, wq2t);
    d = tb_node(m, "DequantizeLinear", 2, (const char *[]){"wq2t", "ws2"}, 1,
                (const char *[]){"w2tf"});
    ck_assert_int_eq(poprt__rw_attr_i(d, "axis", 0), POPRT_OK);
    poprt__node *gm = tb_node(m, "Gemm", 3, (const char *[]){"x2d", "w2tf", "b3"}, 1,
                              (const char *[]){"y4"});
    ck_assert_int_eq(poprt__rw_attr_i(gm, "transB", 1), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_f(gm, "alpha", 0.5f), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_f(gm, "beta", 2.0f), POPRT_OK);
    /* a residual connection: y5 = DQ(Q(Relu(DQ(yq) + DQ(Q(x5))))) */
    static const float s5 = 0.07f;
    static const uint8_t z5 = 3;
    const int64_t x5d[4] = {1, QC_M, QC_H, QC_H};
    tb_input(m, "x5", POPRT_DTYPE_FLOAT, 4, x5d);
    tb_const(m, "s5", POPRT_DTYPE_FLOAT, 0, NULL, &s5);
    tb_const(m, "z5", POPRT_DTYPE_UINT8, 0, NULL, &z5);
    tb_node(m, "QuantizeLinear", 3, (const char *[]){"x5", "xs", "xz"}, 1, (const char *[]){"x5q"});
    tb_node(m, "DequantizeLinear", 3, (const char *[]){"x5q", "xs", "xz"}, 1,
            (const char *[]){"x5d"});
    tb_node(m, "Add", 2, (const char *[]){"y", "x5d"}, 1, (const char *[]){"s"});
    tb_node(m, "Relu", 1, (const char *[]){"s"}, 1, (const char *[]){"sr"});
    tb_node(m, "QuantizeLinear", 3, (const char *[]){"sr", "s5", "z5"}, 1,
            (const char *[]){"y5q"});
    tb_node(m, "DequantizeLinear", 3, (const char *[]){"y5q", "s5", "z5"}, 1,
            (const char *[]){"y5"});
    tb_output(m, "y");
    tb_output(m, "y2");
    tb_output(m, "y3");
    tb_output(m, "y4");
    tb_output(m, "y5");
    tb_output(m, "xd"); /* the dequantized input has another reader: its node stays */
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    return pm;
}

static void qdq_run(const poprt_model *pm, const char *optimize, const float *x, const float *x2,
                    const float *x5, float *y, float *y2, float *y3, float *y4, float *y5,
                    int *fused)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "optimize", optimize), POPRT_OK);
    poprt_session *sess;
    ck_assert_msg(poprt_session_create(pm, o, &sess) == POPRT_OK, "%s", poprt_last_error());
    *fused = 0;
    for (size_t i = 0; i < sess->m->graph->nodes.len; i++) {
        const char *op = ((const poprt__node *)sess->m->graph->nodes.items[i])->op_type;
        *fused += !strcmp(op, "QLinearConv") || !strcmp(op, "QLinearMatMul") ||
                  !strcmp(op, "FusedMatMulInteger") || !strcmp(op, "QLinearAdd");
    }
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    const int64_t xd[4] = {1, QC_C, QC_H, QC_H}, x2d[2] = {QC_R, QC_K};
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 4, x,
                                            sizeof(float) * QC_C * QC_H * QC_H),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x2", POPRT_DTYPE_FLOAT, x2d, 2, x2,
                                            sizeof(float) * QC_R * QC_K),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof(float) * QC_M * QC_H * QC_H),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y2", y2, sizeof(float) * QC_R * QC_N),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y3", y3, sizeof(float) * QC_R * QC_N),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y4", y4, sizeof(float) * QC_R * QC_N),
                     POPRT_OK);
    const int64_t x5d[4] = {1, QC_M, QC_H, QC_H};
    ck_assert_int_eq(poprt_stepio_set_input(io, "x5", POPRT_DTYPE_FLOAT, x5d, 4, x5,
                                            sizeof(float) * QC_M * QC_H * QC_H),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y5", y5, sizeof(float) * QC_M * QC_H * QC_H),
                     POPRT_OK);
    ck_assert_msg(poprt_session_run(sess, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
    poprt_session_free(sess);
    poprt_options_free(o);
}

/* The compiler turns the quantized products into the integer operators
 * (the float-result MatMul with its bias, and a Gemm with transposed
 * weights, alpha and beta, into FusedMatMulInteger; a residual Add and Relu
 * between quantized tensors into QLinearAdd);
 * each output equals the unfused graph's (optimize = 0: float32 products
 * of the dequantized values, then QuantizeLinear) within one quantization
 * step, and most are equal (the float32 sum's rounding can move a value
 * across a rounding boundary, nothing else differs). */
START_TEST(qdq_products_fuse_into_integer_operators)
{
    static float x[QC_C * QC_H * QC_H], x2[QC_R * QC_K];
    static float y0[QC_M * QC_H * QC_H], y1[QC_M * QC_H * QC_H], z0[QC_R * QC_N],
        z1[QC_R * QC_N], u0[QC_R * QC_N], u1[QC_R * QC_N], v0[QC_R * QC_N], v1[QC_R * QC_N],
        x5[QC_M * QC_H * QC_H], w0[QC_M * QC_H * QC_H], w1[QC_M * QC_H * QC_H];
    fill(x5, QC_M * QC_H * QC_H, 43);
    fill(x, QC_C * QC_H * QC_H, 41);
    fill(x2, QC_R * QC_K, 42);
    for (int i = 0; i < QC_C * QC_H * QC_H; i++)
        x[i] *= 5.0f;
    for (int i = 0; i < QC_R * QC_K; i++)
        x2[i] *= 4.0f;
    poprt_model *pm = qdq_model();
    int f0, f1;
    qdq_run(pm, "0", x, x2, x5, y0, z0, u0, v0, w0, &f0);
    qdq_run(pm, "1", x, x2, x5, y1, z1, u1, v1, w1, &f1);
    ck_assert_int_eq(f0, 0);
    ck_assert_int_eq(f1, 5);
    /* the residual Add: the same float32 steps in one kernel, the same bits
     * (on the conv's fused result, so compared against what the fused run
     * dequantized: y1) */
    for (int i = 0; i < QC_M * QC_H * QC_H; i++) {
        float v =
            y1[i] + (fmaxf(0.0f, fminf(255.0f, rintf(x5[i] / 0.05f) + 128.0f)) - 128.0f) * 0.05f;
        v = fmaxf(v, 0.0f);
        const float q = fmaxf(0.0f, fminf(255.0f, rintf(v / 0.07f) + 3.0f));
        ck_assert_msg(w1[i] == (q - 3.0f) * 0.07f, "y5[%d]: %g, steps %g", i, (double)w1[i],
                      (double)((q - 3.0f) * 0.07f));
    }
    /* the float result: the exact integer sum scaled once against the
     * float32 sum of dequantized products (16 terms): within 1e-5 of the
     * largest output */
    float big = 0;
    for (int i = 0; i < QC_R * QC_N; i++)
        big = fmaxf(big, fabsf(u0[i]));
    for (int i = 0; i < QC_R * QC_N; i++)
        ck_assert_msg(fabsf(u1[i] - u0[i]) <= 1e-5f * big, "y3[%d]: %g, unfused %g", i,
                      (double)u1[i], (double)u0[i]);
    big = 0;
    for (int i = 0; i < QC_R * QC_N; i++)
        big = fmaxf(big, fabsf(v0[i]));
    for (int i = 0; i < QC_R * QC_N; i++)
        ck_assert_msg(fabsf(v1[i] - v0[i]) <= 1e-5f * big, "y4[%d]: %g, unfused %g", i,
                      (double)v1[i], (double)v0[i]);
    int same = 0, nonzero = 0;
    for (int i = 0; i < QC_M * QC_H * QC_H; i++) {
        ck_assert_msg(fabsf(y1[i] - y0[i]) <= 0.1f * 1.0001f, "y[%d]: %g, unfused %g", i,
                      (double)y1[i], (double)y0[i]);
        same += y1[i] == y0[i];
        nonzero += y0[i] != 0.0f;
    }
    ck_assert_int_ge(same, QC_M * QC_H * QC_H * 95 / 100);
    ck_assert_int_ge(nonzero, QC_M * QC_H * QC_H / 4);
    int same2 = 0;
    for (int i = 0; i < QC_R * QC_N; i++) {
        ck_assert_msg(fabsf(z1[i] - z0[i]) <= 0.02f * 1.0001f, "y2[%d]: %g, unfused %g", i,
                      (double)z1[i], (double)z0[i]);
        same2 += z1[i] == z0[i];
    }
    ck_assert_int_ge(same2, QC_R * QC_N * 9 / 10);
    poprt_model_free(pm);
}
END_TEST

/* ---- session option matmul_precision (bfloat16 GEMM, kernels/x86/sgemm.h) ---- */

enum { BF_M = 33, BF_K = 70, BF_N = 50, BF_N2 = 20 };

/* x[M,K] -> MatMul(W1[K,N]) -> h -> Gemm(h, W2[N,N2], b2) -> y; h and y out */
static void bf_run(const poprt_model *pm, const char *precision, const float *x, float *h,
                   float *y)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    if (precision)
        ck_assert_int_eq(poprt_options_set(o, "matmul_precision", precision), POPRT_OK);
    poprt_session *sess;
    ck_assert_msg(poprt_session_create(pm, o, &sess) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    int64_t xd[2] = {BF_M, BF_K};
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x,
                                            sizeof(float) * BF_M * BF_K),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "h", h, sizeof(float) * BF_M * BF_N), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof(float) * BF_M * BF_N2), POPRT_OK);
    ck_assert_msg(poprt_session_run(sess, io) == POPRT_OK, "%s", poprt_last_error());
    if (precision) {
        /* the program is shared as compiled: the option cannot change on it */
        poprt_session *other = NULL;
        ck_assert_int_eq(poprt_session_share(sess, o, &other), POPRT_STATUS_INVALID_OPTION);
        ck_assert_ptr_nonnull(strstr(poprt_last_error(), "matmul_precision"));
        ck_assert_ptr_null(other);
    }
    poprt_stepio_free(io);
    poprt_session_free(sess);
    poprt_options_free(o);
}

/* c[i][j] against sum_k r(a[i][k]) r(b[k][j]) (+ bias) in double, r the
 * operand rounding (bfloat16 or none): within 1e-5 of the sum of |terms|
 * (float32 accumulation of K exact products). Returns the largest error
 * relative to that sum. */
static double bf_check(const float *a, const float *b, const float *bias, const float *c, int M,
                       int K, int N, int round, const char *what)
{
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double sum = bias ? bias[j] : 0, mag = bias ? fabs(bias[j]) : 0;
            for (int k = 0; k < K; k++) {
                const float av = round ? tb_bf16(a[i * K + k]) : a[i * K + k];
                const float bv = round ? tb_bf16(b[k * N + j]) : b[k * N + j];
                sum += (double)av * bv;
                mag += fabs((double)av * bv);
            }
            const double err = fabs(c[i * N + j] - sum);
            ck_assert_msg(err <= 1e-5 * mag + 1e-30, "%s [%d][%d]: %.9g, expected %.9g", what, i,
                          j, (double)c[i * N + j], sum);
            if (err / (mag + 1e-30) > worst)
                worst = err / (mag + 1e-30);
        }
    return worst;
}

/* "matmul_precision" = "bfloat16": MatMul and Gemm with constant weights
 * round both operands to bfloat16 and sum the products in float32, on a
 * CPU with AVX512-BF16 (elsewhere they stay float32); the results differ
 * from float32 by the operands' rounding only. Unknown values and sharing a
 * program with the option are refused naming it. */
START_TEST(matmul_precision_bfloat16)
{
    static float x[BF_M * BF_K], w1[BF_K * BF_N], w2[BF_N * BF_N2], b2[BF_N2];
    static float h32[BF_M * BF_N], y32[BF_M * BF_N2], h16[BF_M * BF_N], y16[BF_M * BF_N2];
    fill(x, BF_M * BF_K, 21);
    fill(w1, BF_K * BF_N, 22);
    fill(w2, BF_N * BF_N2, 23);
    fill(b2, BF_N2, 24);
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {BF_M, BF_K}, w1d[2] = {BF_K, BF_N}, w2d[2] = {BF_N, BF_N2}, b2d[1] = {BF_N2};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "w1", POPRT_DTYPE_FLOAT, 2, w1d, w1);
    tb_const(m, "w2", POPRT_DTYPE_FLOAT, 2, w2d, w2);
    tb_const(m, "b2", POPRT_DTYPE_FLOAT, 1, b2d, b2);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "w1"}, 1, (const char *[]){"h"});
    tb_node(m, "Gemm", 3, (const char *[]){"h", "w2", "b2"}, 1, (const char *[]){"y"});
    tb_output(m, "h");
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    bf_run(pm, NULL, x, h32, y32);
    bf_run(pm, "bfloat16", x, h16, y16);
    const int bf = poprt__sgemm_best_bf16() != NULL;
    bf_check(x, w1, NULL, h32, BF_M, BF_K, BF_N, 0, "float32 MatMul");
    bf_check(h32, w2, b2, y32, BF_M, BF_N, BF_N2, 0, "float32 Gemm");
    bf_check(x, w1, NULL, h16, BF_M, BF_K, BF_N, bf, "bfloat16 MatMul");
    bf_check(h16, w2, b2, y16, BF_M, BF_N, BF_N2, bf, "bfloat16 Gemm");
    /* the bfloat16 path really ran: its results differ from float32 */
    int differ = memcmp(h16, h32, sizeof h32) != 0;
    ck_assert_int_eq(differ, bf);
    printf("compiler: matmul_precision=bfloat16 %s\n",
           bf ? "ran the bfloat16 GEMM" : "fell back to float32 (no AVX512-BF16)");
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "matmul_precision", "bf16"),
                     POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "matmul_precision"));
    poprt_options_free(o);
    poprt_model_free(pm);
}
END_TEST

/* Conv with matmul_precision = bfloat16: a 3x3 (pads 1), a 3x3 stride 2 and a
 * 1x1 convolution of a [1, 20, 9, 11] input, bias and Relu, whose weights
 * are constant: each output within 1e-5 of the sum of |terms| of
 * sum r(x) r(w) + b in double (r: bfloat16 rounding where the CPU has a
 * bfloat16 GEMM, else none), the same bits at 1 and 2 threads, and other
 * bits than float32 when the bfloat16 path ran. */
enum { CV_C = 20, CV_H = 9, CV_W = 11, CV_M = 36 };

/* A session of pm with matmul_precision (NULL: the default) and threads. */
static poprt_session *prec_session(const poprt_model *pm, const char *precision,
                                   const char *threads)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    if (precision)
        ck_assert_int_eq(poprt_options_set(o, "matmul_precision", precision), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "threads", threads), POPRT_OK);
    poprt_session *sess;
    ck_assert_msg(poprt_session_create(pm, o, &sess) == POPRT_OK, "%s", poprt_last_error());
    poprt_options_free(o);
    return sess;
}

static void cv_run(const poprt_model *pm, const char *precision, const char *threads,
                   const float *x, float *const *y, const size_t *bytes)
{
    poprt_session *sess = prec_session(pm, precision, threads);
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    const int64_t xd[4] = {1, CV_C, CV_H, CV_W};
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 4, x,
                                            sizeof(float) * CV_C * CV_H * CV_W),
                     POPRT_OK);
    static const char *const names[3] = {"y0", "y1", "y2"};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(poprt_stepio_set_output(io, names[i], y[i], bytes[i]), POPRT_OK);
    ck_assert_msg(poprt_session_run(sess, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
    poprt_session_free(sess);
}

/* output (m, oy, ox) of a k x k conv (stride st, pads pd), bias, Relu,
 * against the double sum of rounded operands */
static void cv_check(const float *x, const float *w, const float *b, const float *y, int k, int st,
                     int pd, int round, const char *what)
{
    const int oh = (CV_H + 2 * pd - k) / st + 1, ow = (CV_W + 2 * pd - k) / st + 1;
    for (int m = 0; m < CV_M; m++)
        for (int oy = 0; oy < oh; oy++)
            for (int ox = 0; ox < ow; ox++) {
                double sum = b[m], mag = fabs(b[m]);
                for (int c = 0; c < CV_C; c++)
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            const int iy = oy * st - pd + ky, ix = ox * st - pd + kx;
                            if (iy < 0 || iy >= CV_H || ix < 0 || ix >= CV_W)
                                continue;
                            float xv = x[(c * CV_H + iy) * CV_W + ix];
                            float wv = w[((m * CV_C + c) * k + ky) * k + kx];
                            if (round) {
                                xv = tb_bf16(xv);
                                wv = tb_bf16(wv);
                            }
                            sum += (double)xv * wv;
                            mag += fabs((double)xv * wv);
                        }
                const double want = sum > 0 ? sum : 0;
                const float got = y[(m * oh + oy) * ow + ox];
                ck_assert_msg(fabs(got - want) <= 1e-5 * mag + 1e-30,
                              "%s [%d][%d][%d]: %.9g, expected %.9g", what, m, oy, ox,
                              (double)got, want);
            }
}

START_TEST(conv_precision_bfloat16)
{
    static float x[CV_C * CV_H * CV_W], w3[CV_M * CV_C * 9], w1[CV_M * CV_C], b[CV_M];
    fill(x, CV_C * CV_H * CV_W, 31);
    fill(w3, CV_M * CV_C * 9, 32);
    fill(w1, CV_M * CV_C, 33);
    fill(b, CV_M, 34);
    poprt__model *m = tb_model(17);
    const int64_t xd[4] = {1, CV_C, CV_H, CV_W}, w3d[4] = {CV_M, CV_C, 3, 3},
                  w1d[4] = {CV_M, CV_C, 1, 1}, bd[1] = {CV_M};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    tb_const(m, "w3", POPRT_DTYPE_FLOAT, 4, w3d, w3);
    tb_const(m, "w1", POPRT_DTYPE_FLOAT, 4, w1d, w1);
    tb_const(m, "b", POPRT_DTYPE_FLOAT, 1, bd, b);
    static const int64_t pads1[4] = {1, 1, 1, 1}, two[2] = {2, 2};
    poprt__node *c0 = tb_node(m, "Conv", 3, (const char *[]){"x", "w3", "b"}, 1,
                              (const char *[]){"c0"});
    ck_assert_int_eq(poprt__rw_attr_ints(c0, "pads", 4, pads1), POPRT_OK);
    poprt__node *c1 = tb_node(m, "Conv", 3, (const char *[]){"x", "w3", "b"}, 1,
                              (const char *[]){"c1"});
    ck_assert_int_eq(poprt__rw_attr_ints(c1, "strides", 2, two), POPRT_OK);
    tb_node(m, "Conv", 3, (const char *[]){"x", "w1", "b"}, 1, (const char *[]){"c2"});
    tb_node(m, "Relu", 1, (const char *[]){"c0"}, 1, (const char *[]){"y0"});
    tb_node(m, "Relu", 1, (const char *[]){"c1"}, 1, (const char *[]){"y1"});
    tb_node(m, "Relu", 1, (const char *[]){"c2"}, 1, (const char *[]){"y2"});
    tb_output(m, "y0");
    tb_output(m, "y1");
    tb_output(m, "y2");
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    enum { N0 = CV_M * CV_H * CV_W, N1 = CV_M * 4 * 5, N2 = CV_M * CV_H * CV_W };
    static float a0[N0], a1[N1], a2[N2], f0[N0], f1[N1], f2[N2], t0[N0], t1[N1], t2[N2];
    const size_t bytes[3] = {sizeof a0, sizeof a1, sizeof a2};
    float *const y32[3] = {a0, a1, a2}, *const y16[3] = {f0, f1, f2}, *const y16t[3] = {t0, t1, t2};
    cv_run(pm, NULL, "1", x, y32, bytes);
    cv_run(pm, "bfloat16", "1", x, y16, bytes);
    cv_run(pm, "bfloat16", "2", x, y16t, bytes);
    const int bf = poprt__sgemm_best_bf16() != NULL;
    cv_check(x, w3, b, a0, 3, 1, 1, 0, "float32 3x3");
    cv_check(x, w3, b, a1, 3, 2, 0, 0, "float32 3x3/2");
    cv_check(x, w1, b, a2, 1, 1, 0, 0, "float32 1x1");
    cv_check(x, w3, b, f0, 3, 1, 1, bf, "bfloat16 3x3");
    cv_check(x, w3, b, f1, 3, 2, 0, bf, "bfloat16 3x3/2");
    cv_check(x, w1, b, f2, 1, 1, 0, bf, "bfloat16 1x1");
    ck_assert(memcmp(f0, t0, sizeof f0) == 0 && memcmp(f1, t1, sizeof f1) == 0 &&
              memcmp(f2, t2, sizeof f2) == 0);
    ck_assert_int_eq(memcmp(f0, a0, sizeof f0) != 0, bf);
    ck_assert_int_eq(memcmp(f2, a2, sizeof f2) != 0, bf);
    poprt_model_free(pm);
}
END_TEST

/* The channel-pair path of bfloat16 convolutions (kernels/x86/conv_pairs.c)
 * over the geometries it must handle: 1-D, 2-D and 3-D, odd channel counts
 * (a zero channel in the last pair), groups, batch 2, strides 1, 2 (the
 * paired loads) and 3 (gathers), dilations, asymmetric pads, output rows
 * wider and narrower than a 32-column panel, K in two blocks, chunks run
 * one at a time and spread over lanes, with and without a Relu. Each output
 * within 2e-5 of the sum of |terms| of sum r(x) r(w) + b in double (r:
 * bfloat16 rounding where the CPU has a bfloat16 GEMM; float32 sums of up
 * to 1200 terms), 1 and 2 threads bit-equal, and where the CPU has a
 * bfloat16 GEMM the node's prepared data is the pair path's; an executable
 * file of the session gives the same bits with the same prepared data. */
typedef struct pair_case {
    int nsp;                 /* spatial dims */
    int64_t N, C, M, G;
    int64_t in[3], k[3], s[3], d[3], pb[3], pe[3];
    int act;                 /* 0: none, 1: Relu, 2: Sigmoid (FusedConv's epilogue) */
} pair_case;
#define WINOGRAD_MAGIC 0x31574b4243525050ull /* CONV_WINO_MAGIC */
#define PAIRS_MAGIC 0x31525043525050ull /* CONV_PAIRS_MAGIC */
#define TAPS_MAGIC 0x31535054435050ull  /* CONV_TAPS_MAGIC */

static const pair_case pair_cases[] = {
    {2, 2, 7, 40, 1, {13, 37}, {5, 5}, {1, 1}, {1, 1}, {2, 1}, {1, 2}, 1},
    {2, 1, 6, 8, 2, {20, 23}, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, 0},
    {2, 1, 130, 33, 1, {15, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
    {1, 1, 5, 12, 1, {100}, {7}, {2}, {1}, {3}, {3}, 0},
    {3, 1, 4, 16, 1, {5, 6, 7}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1},
    {2, 1, 16, 64, 1, {64, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 3, 64, 1, {30, 30}, {7, 7}, {2, 2}, {1, 1}, {3, 3}, {3, 3}, 1},
    {2, 1, 8, 16, 1, {9, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, 0},
};

static int64_t pc_out(const pair_case *c, int i)
{
    return (c->in[i] + c->pb[i] + c->pe[i] - c->d[i] * (c->k[i] - 1) - 1) / c->s[i] + 1;
}

/* 1 when a node of sess's program has prepared data starting with magic. */
static int has_state(const poprt_session *sess, uint64_t want)
{
    const poprt__graph *g = sess->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        const void *st = sess->prog->states[n->id];
        uint64_t magic = 0;
        if (st && sess->prog->state_sizes[n->id] >= sizeof magic)
            memcpy(&magic, st, sizeof magic);
        if (magic == want)
            return 1;
    }
    return 0;
}

static void pc_session_run(poprt_session *sess, const pair_case *c, const float *x, size_t nx,
                           float *y, size_t ny)
{
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    int64_t xd[5] = {c->N, c->C};
    for (int i = 0; i < c->nsp; i++)
        xd[2 + i] = c->in[i];
    ck_assert_int_eq(
        poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2 + c->nsp, x, nx * sizeof(float)),
        POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, ny * sizeof(float)), POPRT_OK);
    ck_assert_msg(poprt_session_run(sess, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
}

/* y of a session of pm with matmul_precision and threads; *path_state: a
 * state with magic is in its program. roundtrip: the session is also
 * written as an executable file and loaded again, which must give the same
 * bits and keep the state. */
static void pc_run(const poprt_model *pm, const pair_case *c, const char *precision,
                   const char *threads, const float *x, size_t nx, float *y, size_t ny,
                   uint64_t magic, int *path_state, int roundtrip)
{
    poprt_session *sess = prec_session(pm, precision, threads);
    *path_state = has_state(sess, magic);
    pc_session_run(sess, c, x, nx, y, ny);
    if (roundtrip) {
        char path[] = "/tmp/poprt-test-pairs-XXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        close(fd);
        ck_assert_int_eq(poprt_session_export(sess, path), POPRT_OK);
        poprt_session *s2;
        ck_assert_msg(poprt_session_load(path, NULL, &s2) == POPRT_OK, "%s", poprt_last_error());
        unlink(path);
        float *y2 = malloc(ny * sizeof *y2);
        ck_assert_ptr_nonnull(y2);
        pc_session_run(s2, c, x, nx, y2, ny);
        ck_assert_int_eq(has_state(s2, magic), *path_state);
        ck_assert_msg(memcmp(y, y2, ny * sizeof *y) == 0, "executable file: other bits");
        free(y2);
        poprt_session_free(s2);
    }
    poprt_session_free(sess);
}

/* Case c (seed: its data) of a bfloat16 convolution path: the node's
 * prepared data is the path's (magic) exactly when expect_state, outputs as
 * described above pair_cases. */
/* Whether a bfloat16 session runs case c as float32 Winograd F(4x4, 3x3)
 * (kernels/x86/conv.c: without AMX tiles, where that tile fits a 2-D 3x3
 * conv of one group, 4x fewer products beat bfloat16's rate) */
static int bf16_takes_winograd(const pair_case *c)
{
    if (c->nsp != 2 || c->G != 1 || c->k[0] != 3 || c->k[1] != 3 || !poprt__x86_conv_bf16_blocked())
        return 0;
    const int64_t out[2] = {pc_out(c, 0), pc_out(c, 1)};
    const poprt__geom3 g = {.in = {1, c->in[0], c->in[1]}, .out = {1, out[0], out[1]},
                            .k = {1, 3, 3}, .s = {1, c->s[0], c->s[1]},
                            .d = {1, c->d[0], c->d[1]}, .out_sz = out[0] * out[1]};
    return poprt__x86_convw_fits(&g, 1, c->C, c->M, 0) == 4;
}

static void conv_prec_case(const pair_case *c, int seed, const char *precision, uint64_t magic,
                           int expect_state)
{
    const int _i = seed;
    /* lifted to 3 spatial dims: leading unit dims */
    int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1},
            pb[3] = {0, 0, 0}, out[3] = {1, 1, 1};
    for (int i = 0; i < c->nsp; i++) {
        const int j = 3 - c->nsp + i;
        in[j] = c->in[i];
        k[j] = c->k[i];
        s[j] = c->s[i];
        d[j] = c->d[i];
        pb[j] = c->pb[i];
        out[j] = pc_out(c, i);
    }
    const int64_t Cg = c->C / c->G, Mg = c->M / c->G, ksz = k[0] * k[1] * k[2];
    const int64_t isz = in[0] * in[1] * in[2], osz = out[0] * out[1] * out[2];
    const size_t nx = (size_t)(c->N * c->C * isz), nw = (size_t)(c->M * Cg * ksz);
    const size_t ny = (size_t)(c->N * c->M * osz);
    float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *b = malloc(c->M * sizeof *b);
    float *y1 = malloc(ny * sizeof *y1), *y2 = malloc(ny * sizeof *y2);
    ck_assert(x && w && b && y1 && y2);
    fill(x, nx, 41 + _i);
    fill(w, nw, 51 + _i);
    fill(b, (size_t)c->M, 61 + _i);
    poprt__model *m = tb_model(17);
    int64_t xd[5] = {c->N, c->C}, wd[5] = {c->M, Cg}, bd[1] = {c->M};
    for (int i = 0; i < c->nsp; i++) {
        xd[2 + i] = c->in[i];
        wd[2 + i] = c->k[i];
    }
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2 + c->nsp, xd);
    tb_const(m, "w", POPRT_DTYPE_FLOAT, 2 + c->nsp, wd, w);
    tb_const(m, "b", POPRT_DTYPE_FLOAT, 1, bd, b);
    poprt__node *n = tb_node(m, "Conv", 3, (const char *[]){"x", "w", "b"}, 1,
                             (const char *[]){c->act ? "c" : "y"});
    int64_t pads[6];
    for (int i = 0; i < c->nsp; i++) {
        pads[i] = c->pb[i];
        pads[c->nsp + i] = c->pe[i];
    }
    ck_assert_int_eq(poprt__rw_attr_ints(n, "pads", 2 * c->nsp, pads), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_ints(n, "strides", c->nsp, c->s), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_ints(n, "dilations", c->nsp, c->d), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_i(n, "group", c->G), POPRT_OK);
    if (c->act)
        tb_node(m, c->act == 1 ? "Relu" : "Sigmoid", 1, (const char *[]){"c"}, 1,
                (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    int st1, st2;
    pc_run(pm, c, precision, "1", x, nx, y1, ny, magic, &st1, 1);
    pc_run(pm, c, precision, "2", x, nx, y2, ny, magic, &st2, 0);
    const int bf = !strcmp(precision, "bfloat16") && poprt__sgemm_best_bf16() != NULL &&
                   !bf16_takes_winograd(c);
    ck_assert_int_eq(st1, expect_state);
    ck_assert_int_eq(st2, expect_state);
    ck_assert_msg(memcmp(y1, y2, ny * sizeof *y1) == 0, "case %d: 1 and 2 threads differ", _i);
    for (int64_t in_ = 0; in_ < c->N; in_++)
        for (int64_t mo = 0; mo < c->M; mo++)
            for (int64_t q = 0; q < osz; q++) {
                const int64_t o0 = q / (out[1] * out[2]), o1 = q / out[2] % out[1],
                              o2 = q % out[2], gi = mo / Mg;
                double sum = b[mo], mag = fabs(b[mo]);
                for (int64_t ci = 0; ci < Cg; ci++)
                    for (int64_t t = 0; t < ksz; t++) {
                        const int64_t t0 = t / (k[1] * k[2]), t1 = t / k[2] % k[1], t2 = t % k[2];
                        const int64_t i0 = o0 * s[0] - pb[0] + t0 * d[0],
                                      i1 = o1 * s[1] - pb[1] + t1 * d[1],
                                      i2 = o2 * s[2] - pb[2] + t2 * d[2];
                        if (i0 < 0 || i0 >= in[0] || i1 < 0 || i1 >= in[1] || i2 < 0 ||
                            i2 >= in[2])
                            continue;
                        float xv = x[((in_ * c->C + gi * Cg + ci) * in[0] + i0) * in[1] * in[2] +
                                     i1 * in[2] + i2];
                        float wv = w[(mo * Cg + ci) * ksz + t];
                        if (bf) {
                            xv = tb_bf16(xv);
                            wv = tb_bf16(wv);
                        }
                        sum += (double)xv * wv;
                        mag += fabs((double)xv * wv);
                    }
                /* Sigmoid: its slope is at most 1/4, plus the vector
                 * sigmoid's own error (a few float ulps of a value < 1) */
                const double want = c->act == 1 && sum < 0 ? 0
                                    : c->act == 2      ? 1.0 / (1.0 + exp(-sum))
                                                       : sum;
                const float got = y1[(in_ * c->M + mo) * osz + q];
                ck_assert_msg(fabs(got - want) <= 2e-5 * mag + (c->act == 2 ? 1e-6 : 1e-30),
                              "case %d [%ld][%ld][%ld]: %.9g, expected %.9g", _i, (long)in_,
                              (long)mo, (long)q, (double)got, want);
            }
    poprt_model_free(pm);
    free(x);
    free(w);
    free(b);
    free(y1);
    free(y2);
}

START_TEST(conv_pairs_bfloat16)
{
    /* a CPU with a bfloat16 GEMM runs these on the pair path (the taps path
     * takes none of them: channel counts below 32 or not a multiple of 16,
     * groups, 3-D, narrow rows, 1x1), but for the 2-D convs of whole
     * 16-channel blocks with taps (case 5), which take the blocked path
     * where that runs bfloat16 (AVX512-BF16 without AMX) */
    const pair_case *c = &pair_cases[_i];
    const int blocked = poprt__x86_conv_bf16_blocked() && c->nsp == 2 && c->G == 1 &&
                        c->C % 16 == 0 && c->k[0] * c->k[1] > 1;
    conv_prec_case(c, _i, "bfloat16", PAIRS_MAGIC, poprt__sgemm_best_bf16() != NULL && !blocked);
}
END_TEST

/* The blocked path in bfloat16 (kernels/x86/conv_blocked_bf16_avx512.c,
 * AVX512-BF16 without AMX) over a session: batch 2, a partial output block
 * (24, 40 and 70 outputs: 1 and 2 groups of 64), 2 to 16 input blocks,
 * strides 2, dilations, asymmetric pads, a window of 3x5, the epilogue in
 * the registers (Relu) and after them (Sigmoid); the checks of the pair
 * path's cases, with the node's prepared data the blocked bfloat16 one.
 * Elsewhere another path runs them with the same outcome. */
#define BLOCKED_BF16_MAGIC 0x31484b4243525050ull /* CONV_BLOCKED_BF16_MAGIC */
static const pair_case blocked_cases[] = {
    {2, 2, 32, 24, 1, {20, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 48, 70, 1, {12, 33}, {3, 5}, {1, 1}, {2, 3}, {2, 6}, {2, 6}, 0},
    {2, 1, 16, 40, 1, {15, 14}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 2},
    {2, 1, 256, 16, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
};

START_TEST(conv_blocked_bfloat16)
{
    const int wino = bf16_takes_winograd(&blocked_cases[_i]);
    conv_prec_case(&blocked_cases[_i], 200 + _i, "bfloat16", BLOCKED_BF16_MAGIC,
                   poprt__x86_conv_bf16_blocked() && !wino);
    if (wino) /* float32 Winograd instead, float32's sums */
        conv_prec_case(&blocked_cases[_i], 200 + _i, "bfloat16", WINOGRAD_MAGIC, 1);
}
END_TEST

/* Winograd (conv_blocked.c; float32 on AVX-512 or AVX2) through sessions:
 * batch 2, partial tile rows and columns (13 x 15), 64 + 16 output
 * channels, uneven pads, Relu in the output transform and Sigmoid after
 * it, 4x4 tiles (up to 128 input channels) down to 7 x 7 outputs; 5 x 5
 * outputs of 32 channels (one 4x4 tile) and stride 2 take the direct
 * blocked path. 1 and 2 threads give the same bits, and so does the
 * executable file. Tolerance: 2e-5 of the sum of |terms| (float32). */
static const pair_case winograd_cases[] = {
    {2, 2, 64, 80, 1, {13, 15}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 96, 16, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {0, 1}, {2, 1}, 2},
    {2, 1, 64, 32, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0},
    {2, 1, 32, 32, 1, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 32, 32, 1, {24, 24}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 32, 32, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0},
    {2, 1, 160, 24, 1, {10, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    /* chunks of tiles (the fused form), partial rows of tiles in them
     * (32 input channels: AVX2 runs a single block of 16 direct) */
    {2, 2, 32, 32, 1, {96, 94}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2},
    {2, 1, 16, 32, 1, {30, 28}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 2, 32, 40, 1, {60, 50}, {3, 3}, {1, 1}, {1, 1}, {1, 0}, {1, 2}, 1},
    /* 3x1 and 1x3: F(4, 3) along one axis; 24 input channels */
    {2, 1, 72, 40, 1, {30, 8}, {3, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, 1},
    {2, 2, 24, 48, 1, {37, 32}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, 2},
    /* oww_embedding's: 72 -> 72 (AVX2: blocks of 8, the last output block
     * of 8 computed as 16) and 24 -> 24 (AVX2: the GEMM paths) */
    {2, 1, 72, 72, 1, {30, 8}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, 1},
    {2, 1, 24, 24, 1, {74, 32}, {1, 3}, {1, 1}, {1, 1}, {0, 1}, {0, 1}, 1},
};

START_TEST(conv_winograd)
{
    const pair_case *c = &winograd_cases[_i];
    const int64_t oh = pc_out(c, 0), ow = pc_out(c, 1);
    const poprt__geom3 g = {.in = {1, c->in[0], c->in[1]}, .out = {1, oh, ow},
                            .k = {1, c->k[0], c->k[1]},
                            .s = {1, c->s[0], c->s[1]}, .d = {1, 1, 1}, .out_sz = oh * ow};
    /* kernels/x86/conv.c: the blocked kernels take the conv (on AVX2 their
     * weights are laid out by block, and channel counts that are not whole
     * blocks stay on the GEMM paths) and Winograd fits it */
    const int fits = poprt__x86_convw_fits(&g, c->G, c->C, c->M, 0) != 0 &&
                     poprt__x86_convb_worth(poprt__convb_best(), &g, c->C, c->M, 0);
    conv_prec_case(c, 300 + _i, "float32", WINOGRAD_MAGIC, fits);
}
END_TEST

/* conv_algorithm = direct: no Winograd weights, the direct sums' bits;
 * other values refused naming the option. */
START_TEST(conv_algorithm_direct)
{
    const pair_case *c = &winograd_cases[2];
    const size_t nx = (size_t)(c->N * c->C * c->in[0] * c->in[1]);
    const size_t ny = (size_t)(c->N * c->M * pc_out(c, 0) * pc_out(c, 1));
    /* the buffers also serve the residual block below (2 x 64 x 40 x 40) */
    const size_t nw = 3 * 64 * 64 * 9, nb = 2 * 64 * 40 * 40, nyb = ny > nb ? ny : nb;
    const size_t nxb = nx > nb ? nx : nb;
    float *x = malloc(nxb * sizeof *x), *w = malloc(nw * sizeof *w);
    float *y1 = malloc(nyb * sizeof *y1), *y2 = malloc(nyb * sizeof *y2);
    ck_assert(x && w && y1 && y2 && nw >= (size_t)(c->M * c->C * 9));
    fill(x, nxb, 7);
    fill(w, nw, 8);
    poprt__model *m = tb_model(17);
    int64_t xd[4] = {c->N, c->C, c->in[0], c->in[1]}, wd[4] = {c->M, c->C, 3, 3};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    tb_const(m, "w", POPRT_DTYPE_FLOAT, 4, wd, w);
    poprt__node *n = tb_node(m, "Conv", 2, (const char *[]){"x", "w"}, 1, (const char *[]){"y"});
    ck_assert_int_eq(poprt__rw_attr_ints(n, "pads", 4, (int64_t[]){1, 1, 1, 1}), POPRT_OK);
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "%s", poprt_last_error());
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "conv_algorithm", "direct"), POPRT_OK);
    poprt_session *direct, *wino;
    ck_assert_msg(poprt_session_create(pm, o, &direct) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(poprt_options_set(o, "conv_algorithm", "auto"), POPRT_OK);
    ck_assert_msg(poprt_session_create(pm, o, &wino) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(has_state(direct, WINOGRAD_MAGIC), 0);
    ck_assert_int_eq(has_state(wino, WINOGRAD_MAGIC), poprt__convb_best() != NULL);
    pc_session_run(direct, c, x, nx, y1, ny);
    pc_session_run(wino, c, x, nx, y2, ny);
    double worst = 0;
    for (size_t i = 0; i < ny; i++) {
        const double e = fabs((double)y1[i] - y2[i]);
        worst = e > worst ? e : worst;
    }
    /* |terms| here: 64 channels x 9 taps of values below 36: the two sums
     * of each output agree within 2e-5 of that */
    ck_assert_msg(worst <= 2e-5 * 64 * 9 * 36, "direct and Winograd differ by %g", worst);
    if (poprt__convb_best()) /* Winograd ran: not the direct sums' bits */
        ck_assert_msg(memcmp(y1, y2, ny * sizeof *y1) != 0, "Winograd gave the direct bits");
    poprt_session_free(wino);
    /* either tile forced: the same sums within the same bound, and the two
     * tiles' results differ (each ran its own transforms) */
    float *y3 = malloc(ny * sizeof *y3);
    ck_assert_ptr_nonnull(y3);
    const char *forced[2] = {"winograd_2x2", "winograd_4x4"};
    for (int f = 0; f < 2; f++) {
        ck_assert_int_eq(poprt_options_set(o, "conv_algorithm", forced[f]), POPRT_OK);
        ck_assert_msg(poprt_session_create(pm, o, &wino) == POPRT_OK, "%s", poprt_last_error());
        ck_assert_int_eq(has_state(wino, WINOGRAD_MAGIC), poprt__convb_best() != NULL);
        pc_session_run(wino, c, x, nx, f ? y3 : y2, ny);
        poprt_session_free(wino);
    }
    worst = 0;
    for (size_t i = 0; i < ny; i++) {
        const double e2 = fabs((double)y1[i] - y2[i]), e4 = fabs((double)y1[i] - y3[i]);
        worst = e2 > worst ? e2 : worst;
        worst = e4 > worst ? e4 : worst;
    }
    ck_assert_msg(worst <= 2e-5 * 64 * 9 * 36, "direct and forced Winograd differ by %g", worst);
    if (poprt__convb_best())
        ck_assert_msg(memcmp(y2, y3, ny * sizeof *y2) != 0, "the two tiles gave the same bits");
    free(y3);
    poprt_session_free(direct);
    /* a residual block whose tensors the layout pass keeps NCHW16c: the
     * residual and Relu in the output transform's registers; 2 images of
     * 10 x 10 tiles of 4 x 4 in chunks of 24: the fused form */
    poprt__model *mb = tb_model(17);
    int64_t bd[4] = {2, 64, 40, 40}, bw[4] = {64, 64, 3, 3};
    tb_input(mb, "x", POPRT_DTYPE_FLOAT, 4, bd);
    const char *wn[3] = {"w0", "w1", "w2"};
    for (int i = 0; i < 3; i++)
        tb_const(mb, wn[i], POPRT_DTYPE_FLOAT, 4, bw, w + i * 64 * 64 * 9);
    const char *cin[3] = {"x", "a", "r"}, *cout[3] = {"c0", "c1", "y"};
    for (int i = 0; i < 3; i++) { /* in topological order */
        poprt__node *cv = tb_node(mb, "Conv", 2, (const char *[]){cin[i], wn[i]}, 1,
                                  (const char *[]){cout[i]});
        ck_assert_int_eq(poprt__rw_attr_ints(cv, "pads", 4, (int64_t[]){1, 1, 1, 1}), POPRT_OK);
        if (i == 0)
            tb_node(mb, "Relu", 1, (const char *[]){"c0"}, 1, (const char *[]){"a"});
        if (i == 1) {
            tb_node(mb, "Add", 2, (const char *[]){"c1", "a"}, 1, (const char *[]){"s"});
            tb_node(mb, "Relu", 1, (const char *[]){"s"}, 1, (const char *[]){"r"});
        }
    }
    tb_output(mb, "y");
    poprt_model *pb;
    ck_assert_msg(tb_load(mb, &pb) == POPRT_OK, "%s", poprt_last_error());
    const pair_case blk = {2, 2, 64, 64, 1, {40, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 0};
    ck_assert_int_eq(poprt_options_set(o, "conv_algorithm", "direct"), POPRT_OK);
    ck_assert_msg(poprt_session_create(pb, o, &direct) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(poprt_options_set(o, "conv_algorithm", "auto"), POPRT_OK);
    ck_assert_msg(poprt_session_create(pb, o, &wino) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(has_state(wino, WINOGRAD_MAGIC), poprt__convb_best() != NULL);
    pc_session_run(direct, &blk, x, nb, y1, nb);
    pc_session_run(wino, &blk, x, nb, y2, nb);
    int blocked = 0;
    const poprt__graph *gw = wino->m->graph;
    for (size_t i = 0; i < gw->nodes.len; i++)
        blocked |= strcmp(poprt__attr_s(gw->nodes.items[i], "y_layout", "NCHW"), "NCHW16c") == 0;
    ck_assert_int_eq(blocked, poprt__convb_best() != NULL);
    /* three convs deep: values grow by about 64 * 9 * 6 per layer; within
     * 1e-5 of the largest output */
    double big = 0;
    worst = 0;
    for (size_t i = 0; i < nb; i++) {
        big = fabs((double)y1[i]) > big ? fabs((double)y1[i]) : big;
        const double e = fabs((double)y1[i] - y2[i]);
        worst = e > worst ? e : worst;
    }
    ck_assert_msg(worst <= 1e-5 * big, "residual block: direct and Winograd differ by %g of %g",
                  worst, big);
    poprt_session_free(direct);
    poprt_session_free(wino);
    poprt_model_free(pb);
    ck_assert_int_eq(poprt_options_set(o, "conv_algorithm", "fast"), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "conv_algorithm"));
    poprt_options_free(o);
    poprt_model_free(pm);
    free(x);
    free(w);
    free(y1);
    free(y2);
}
END_TEST

/* The taps path (kernels/x86/conv_taps.c: AMX only) over what it must
 * handle: batch 2, output channels in partial 32-blocks (24, 40, 70),
 * channels padded to 32 (48), a row of 37 = 32 + 5 positions (a lone last
 * tile), strides 2 and 3, dilations, wide and asymmetric pads, 1-D, and the
 * epilogue in the transposition (Relu) and after it (Sigmoid); the same
 * checks as the pair path's. Elsewhere the pair path (or float32) runs them
 * with the same outcome. */
static const pair_case taps_cases[] = {
    {2, 2, 32, 24, 1, {20, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 48, 40, 1, {19, 40}, {3, 3}, {2, 2}, {1, 1}, {1, 0}, {1, 2}, 2},
    {2, 1, 64, 70, 1, {12, 33}, {3, 5}, {1, 1}, {2, 3}, {2, 6}, {2, 6}, 0},
    {1, 1, 32, 16, 1, {50}, {5}, {1}, {1}, {2}, {2}, 1},
    {2, 1, 96, 24, 1, {16, 64}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1},
    {2, 1, 32, 32, 1, {10, 60}, {3, 3}, {3, 3}, {1, 1}, {0, 0}, {0, 0}, 0},
};

START_TEST(conv_taps_bfloat16)
{
    const poprt__sgemm_variant *bf = poprt__sgemm_best_bf16();
    conv_prec_case(&taps_cases[_i], 100 + _i, "bfloat16", TAPS_MAGIC, bf && bf->isa == POPRT__ISA_AMX);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("compiler");
    TCase *tc = tcase_create("fuse_elementwise");
    tcase_add_test(tc, hardswish_and_channel_affine_fuse);
    tcase_add_test(tc, reversed_operands_bias_and_special_values);
    tcase_add_test(tc, float8_pairs_fuse);
    tcase_add_test(tc, conv_output_rounding_fuses);
    tcase_add_test(tc, conv_scalar_steps_fuse);
    tcase_add_test(tc, conv_epilogue_spans);
    tcase_add_test(tc, conv_composite_activations_fuse);
    tcase_add_test(tc, chains_stop_at_outputs_and_shared_tensors);
    tcase_add_test(tc, in_place_chain_matches);
    tcase_add_test(tc, malformed_fused_node_is_rejected);
    tcase_add_test(tc, malformed_fused_conv_steps_are_rejected);
    tcase_add_test(tc, dropout_with_unread_mask_is_a_view);
    tcase_add_test(tc, gemm_constant_b_is_prepacked);
    tcase_add_test(tc, bias_gelu_fuses);
    tcase_add_test(tc, programs_share_packed_weights);
    tcase_add_test(tc, unaligned_weights_are_read_in_place);
    tcase_add_test(tc, folded_intermediates_are_freed);
    tcase_add_test(tc, subgraph_nodes_are_prepared);
    tcase_add_test(tc, matmul_integer_dequantize_fuses);
    tcase_add_test(tc, conv_integer_dequantize_fuses);
    tcase_add_test(tc, malformed_fused_matmul_integer_is_rejected);
    tcase_add_test(tc, malformed_qlinear_add_is_rejected);
    tcase_add_test(tc, float16_nodes_compute_in_float32);
    tcase_add_test(tc, float16_storage_casts_do_not_round);
    tcase_add_test(tc, matmul_precision_bfloat16);
    tcase_add_test(tc, conv_precision_bfloat16);
    tcase_add_loop_test(tc, conv_pairs_bfloat16, 0,
                        (int)(sizeof pair_cases / sizeof pair_cases[0]));
    tcase_add_loop_test(tc, conv_taps_bfloat16, 0,
                        (int)(sizeof taps_cases / sizeof taps_cases[0]));
    tcase_add_loop_test(tc, conv_blocked_bfloat16, 0,
                        (int)(sizeof blocked_cases / sizeof blocked_cases[0]));
    tcase_add_loop_test(tc, conv_winograd, 0,
                        (int)(sizeof winograd_cases / sizeof winograd_cases[0]));
    tcase_add_test(tc, conv_algorithm_direct);
    tcase_add_test(tc, qdq_products_fuse_into_integer_operators);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
