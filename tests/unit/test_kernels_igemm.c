/* Unit tests: the integer GEMM (lib/kernels/x86/igemm.h) and the operators
 * on it (x86/quant_ops.c). Every variant of igemm_kernels.inc runs
 * MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv and ai.poprt
 * FusedConvInteger (float scale and bias per tensor or channel), and each
 * result is compared with the reference kernel of ref/quant.c BIT FOR BIT
 * (tolerance 0: integer sums are exact and the requantization repeats the
 * reference's double arithmetic and rounding). Cases: odd M, N, K around
 * the register tiles, the 256-column blocks and the 512-byte K blocks;
 * uint8 and int8 activations and weights (u8s8, s8s8, u8u8, s8u8); zero
 * points absent, per tensor and per column / output channel; scales per
 * tensor and per channel; bias; padding, strides, dilations, groups,
 * depthwise convolutions (their direct path: float sums on the depthwise
 * plane function up to 258 taps, int32 sums beyond), 1-D convolutions and the 1x1
 * direct path; weights packed per call and
 * packed by prepare() (the session's path); 1 and 2 threads. Variants the
 * CPU lacks are reported as skipped on stdout. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/kernel.h"
#include "kernels/ref/quant.h"
#include "kernels/x86/igemm.h"
#include "kernels/x86/quant_ops.h"
#include "runtime/runtime.h"

#define NSLOT 10 /* inputs 0..8, output 9 */

typedef struct kcall {
    poprt__node node;
    poprt__attr attrs[8];
    poprt__value vals[NSLOT];
    poprt__value *in[NSLOT - 1], *out[3];
    poprt__value extra[2]; /* outputs 1, 2 (DynamicQuantizeLinear) */
    poprt__dim dims[NSLOT - 1][POPRT__MAX_RANK];
    poprt__type types[NSLOT - 1];
    struct poprt__exec ex;
    poprt__kctx k;
} kcall;

static void kc_init(kcall *c, const char *op)
{
    memset(c, 0, sizeof *c);
    c->node.name = "igemm_check";
    c->node.op_type = op;
    c->node.domain = "";
    c->node.attrs = c->attrs;
    c->k.node = &c->node;
    c->k.opset = 21;
    c->k.in = c->in;
    c->k.out = c->out;
    c->k.n_out = 1;
    c->k.exec = &c->ex;
    c->out[0] = &c->vals[NSLOT - 1];
}

/* slot i < 9: input i; 9: the output. data NULL: input omitted. */
static void kc_tensor(kcall *c, int i, int32_t dt, int rank, const int64_t *dims, void *data)
{
    if (!data && i < NSLOT - 1)
        return;
    poprt__tval *t = &c->vals[i].t;
    c->vals[i].kind = POPRT__KIND_TENSOR;
    t->dtype = dt;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->numel = poprt__tval_numel(t);
    t->nbytes = (size_t)t->numel * poprt_dtype_size((poprt_dtype)dt);
    t->data = data;
    if (i < NSLOT - 1) {
        c->in[i] = &c->vals[i];
        c->k.n_in = c->k.n_in > i + 1 ? c->k.n_in : i + 1;
    }
}

static void kc_ints(kcall *c, const char *name, int64_t n, int64_t *v)
{
    poprt__attr *a = &c->attrs[c->node.n_attrs++];
    a->name = name;
    a->type = POPRT__ATTR_INTS;
    a->n = n;
    a->ints = v;
}

static void kc_release(kcall *c)
{
    while (c->ex.scratch) {
        poprt__scratch_chunk *s = c->ex.scratch;
        c->ex.scratch = s->next;
        poprt__aligned_free(s);
    }
}

static void kc_run(kcall *c, poprt__kernel_fn fn)
{
    ck_assert_msg(fn(&c->k) == POPRT_OK, "%s: %s", c->node.op_type, poprt_last_error());
    kc_release(c);
}

/* The node's prepare() on its inputs as constants; the state is set on c. */
static void kc_prepare(kcall *c, poprt__prepare_fn prep)
{
    poprt__ival iv[NSLOT - 1] = {0};
    memset(iv, 0, sizeof iv);
    for (int i = 0; i < c->k.n_in; i++) {
        if (!c->in[i])
            continue;
        const poprt__tval *t = &c->in[i]->t;
        c->types[i].kind = POPRT__KIND_TENSOR;
        c->types[i].elem = t->dtype;
        c->types[i].rank = t->rank;
        c->types[i].dims = c->dims[i];
        for (int d = 0; d < t->rank; d++)
            c->dims[i][d].value = t->dims[d];
        iv[i].type = &c->types[i];
        iv[i].data = t->data;
        iv[i].nbytes = t->nbytes;
    }
    poprt__prep_ctx pc = {&c->node, 21, c->k.n_in, iv, 0, NULL, 0};
    void *state = NULL;
    size_t size = 0;
    ck_assert_int_eq(prep(&pc, &state, &size), POPRT_OK);
    ck_assert_msg(state && size, "%s: prepare packed nothing", c->node.op_type);
    c->k.state = state;
    c->k.state_size = size;
}

static uint32_t g_seed = 1;

static void *bytes(int64_t n, int32_t dt)
{
    uint8_t *p = malloc((size_t)(n > 0 ? n : 1));
    ck_assert_ptr_nonnull(p);
    for (int64_t i = 0; i < n; i++) {
        g_seed = g_seed * 1664525u + 1013904223u;
        p[i] = (uint8_t)(g_seed >> 13);
    }
    /* the extremes, which stress the widest products */
    if (n > 2) {
        p[0] = dt == POPRT_DTYPE_INT8 ? 0x80 : 0xff;
        p[n - 1] = dt == POPRT_DTYPE_INT8 ? 0x7f : 0;
    }
    return p;
}

/* set while a b7 variant (igemm.h) is forced: weights then fit 7 bits as
 * stored ([-64, 63] for int8, [64, 191] for uint8, which the pack keeps
 * minus 128), extremes included, so that the variant itself runs */
static int g_b7;

static void *weights(int64_t n, int32_t dt)
{
    uint8_t *p = bytes(n, dt);
    if (g_b7)
        for (int64_t i = 0; i < n; i++)
            p[i] = dt == POPRT_DTYPE_INT8 ? (uint8_t)(int8_t)((p[i] & 127) - 64)
                                          : (uint8_t)((p[i] & 127) + 64);
    return p;
}

static float *scales(int64_t n, float base)
{
    float *p = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    ck_assert_ptr_nonnull(p);
    for (int64_t i = 0; i < n; i++) {
        g_seed = g_seed * 1664525u + 1013904223u;
        p[i] = base * (0.5f + (float)(g_seed >> 8) / 16777216.0f);
    }
    return p;
}

static int32_t *bias_of(int64_t n)
{
    int32_t *p = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    ck_assert_ptr_nonnull(p);
    for (int64_t i = 0; i < n; i++) {
        g_seed = g_seed * 1664525u + 1013904223u;
        p[i] = (int32_t)(g_seed >> 16) - 32768;
    }
    return p;
}

static void free_all(void **p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
}

static const int32_t byte_types[2] = {POPRT_DTYPE_UINT8, POPRT_DTYPE_INT8};

/* the 2-thread pool of the running test (created in the test: Check forks) */
static poprt__pool *g_pool;

/* Variant i forced for the operators, with a 2-thread pool; NULL (said on
 * stdout) when the CPU lacks it. */
static const poprt__igemm_variant *begin_variant(int i)
{
    const poprt__igemm_variant *v = &poprt__igemm_variants[i];
    if (!poprt__igemm_usable(v)) {
        printf("kernels_igemm: %s skipped: CPU lacks it\n", v->name);
        return NULL;
    }
    ck_assert_int_eq(poprt__pool_create(2, &g_pool), POPRT_OK);
    poprt__igemm_force(v);
    ck_assert_ptr_eq(poprt__igemm_best(), v);
    g_b7 = v->b7;
    return v;
}

static void end_variant(void)
{
    poprt__igemm_force(NULL);
    g_b7 = 0;
    poprt__pool_free(g_pool);
    g_pool = NULL;
}

/* Runs the registry's kernel (fast) on 1 and 2 threads, with weights packed
 * per call and by prepare(), against ref; all outputs bit-identical. */
static void compare(kcall *c, poprt__kernel_fn fast, poprt__prepare_fn prep, poprt__kernel_fn ref,
                    const char *what)
{
    poprt__tval *y = &c->vals[NSLOT - 1].t;
    void *want = y->data;
    memset(want, 0x5a, y->nbytes);
    kc_run(c, ref);
    void *got = malloc(y->nbytes ? y->nbytes : 1);
    ck_assert_ptr_nonnull(got);
    y->data = got;
    for (int pass = 0; pass < 4; pass++) {
        c->ex.pool = (pass & 1) ? g_pool : NULL;
        if (pass == 2 && prep)
            kc_prepare(c, prep);
        memset(got, 0xa5, y->nbytes);
        kc_run(c, fast);
        if (memcmp(got, want, y->nbytes)) {
            for (int64_t i = 0; i < y->numel; i++) {
                int64_t g = y->dtype == POPRT_DTYPE_INT32 ? ((int32_t *)got)[i]
                            : y->dtype == POPRT_DTYPE_INT8 ? ((int8_t *)got)[i]
                                                           : ((uint8_t *)got)[i];
                int64_t w = y->dtype == POPRT_DTYPE_INT32 ? ((int32_t *)want)[i]
                            : y->dtype == POPRT_DTYPE_INT8 ? ((int8_t *)want)[i]
                                                           : ((uint8_t *)want)[i];
                if (g != w)
                    ck_abort_msg("%s (%s, %s, %s): y[%lld] = %lld, reference %lld", what,
                                 poprt__igemm_best()->name, pass & 1 ? "2 threads" : "1 thread",
                                 pass & 2 ? "prepared" : "packed per call", (long long)i,
                                 (long long)g, (long long)w);
            }
        }
    }
    c->ex.pool = NULL;
    poprt__aligned_free((void *)c->k.state);
    c->k.state = NULL;
    c->k.state_size = 0;
    y->data = want;
    free(got);
}

/* ---- MatMulInteger, QLinearMatMul ----------------------------------------------- */

static const int64_t mm_shapes[][4] = {
    /* batch, M, K, N */
    {1, 1, 1, 1},   {1, 5, 7, 3},    {2, 13, 33, 17}, {1, 37, 64, 50},
    {1, 25, 130, 300}, {1, 3, 600, 20}, {3, 12, 36, 32}, {1, 97, 5, 257},
    /* whole 32 x 32 tiles of the AMX variant: two K blocks (128 groups, then
     * 22: one tile step and 6 groups on VNNI), 8 rows and 6 columns left over */
    {1, 72, 600, 70},  {2, 32, 128, 64},
};

/* zero-point forms: 0 absent, 1 per tensor, 2 per column */
static void mm_case(const int64_t *s, int at, int bt, int zpf, int yt)
{
    const int64_t B = s[0], M = s[1], K = s[2], N = s[3];
    const int32_t adt = byte_types[at], bdt = byte_types[bt], ydt = byte_types[yt];
    uint8_t *a = bytes(B * M * K, adt), *b = weights(K * N, bdt);
    uint8_t *azp = bytes(1, adt), *bzp = bytes(N, bdt), *yzp = bytes(1, ydt);
    float *as = scales(1, 0.02f), *bs = scales(N, 0.01f), *ys = scales(1, 0.5f);
    const int64_t ad[3] = {B, M, K}, bd[2] = {K, N}, yd[3] = {B, M, N}, one = 1;
    const int64_t nz = zpf == 2 ? N : 1;
    char what[160];
    snprintf(what, sizeof what, "%lldx%lldx%lldx%lld a %s b %s zp form %d", (long long)B,
             (long long)M, (long long)K, (long long)N, at ? "s8" : "u8", bt ? "s8" : "u8", zpf);
    /* MatMulInteger */
    int32_t *yi = malloc(sizeof(int32_t) * (size_t)(B * M * N));
    kcall c;
    kc_init(&c, "MatMulInteger");
    kc_tensor(&c, 0, adt, 3, ad, a);
    kc_tensor(&c, 1, bdt, 2, bd, b);
    kc_tensor(&c, 2, adt, 0, &one, zpf ? azp : NULL);
    kc_tensor(&c, 3, bdt, nz == 1 ? 0 : 1, &nz, zpf ? bzp : NULL);
    kc_tensor(&c, NSLOT - 1, POPRT_DTYPE_INT32, 3, yd, yi);
    compare(&c, poprt__x86_matmul_integer, poprt__x86_matmul_integer_prepare,
            poprt__ref_matmul_integer, what);
    /* QLinearMatMul: per-column scales with per-column zero points */
    uint8_t *yq = malloc((size_t)(B * M * N));
    kc_init(&c, "QLinearMatMul");
    kc_tensor(&c, 0, adt, 3, ad, a);
    kc_tensor(&c, 1, POPRT_DTYPE_FLOAT, 0, &one, as);
    kc_tensor(&c, 2, adt, 0, &one, azp);
    kc_tensor(&c, 3, bdt, 2, bd, b);
    kc_tensor(&c, 4, POPRT_DTYPE_FLOAT, nz == 1 ? 0 : 1, &nz, bs);
    kc_tensor(&c, 5, bdt, nz == 1 ? 0 : 1, &nz, bzp);
    kc_tensor(&c, 6, POPRT_DTYPE_FLOAT, 0, &one, ys);
    kc_tensor(&c, 7, ydt, 0, &one, zpf ? yzp : NULL);
    kc_tensor(&c, NSLOT - 1, ydt, 3, yd, yq);
    compare(&c, poprt__x86_qlinear_matmul, poprt__x86_qlinear_matmul_prepare,
            poprt__ref_qlinear_matmul, what);
    void *mine[] = {a, b, azp, bzp, yzp, as, bs, ys, yi, yq};
    free_all(mine, sizeof mine / sizeof mine[0]);
}

START_TEST(test_matmul_variants_vs_ref)
{
    const poprt__igemm_variant *v = begin_variant(_i);
    if (!v)
        return;
    int n = 0;
    for (size_t s = 0; s < sizeof mm_shapes / sizeof mm_shapes[0]; s++)
        for (int at = 0; at < 2; at++)
            for (int bt = 0; bt < 2; bt++)
                for (int zpf = 0; zpf < 3; zpf++, n++)
                    mm_case(mm_shapes[s], at, bt, zpf, (int)(s + (size_t)at) & 1);
    end_variant();
    printf("kernels_igemm: %s: %d MatMulInteger and %d QLinearMatMul cases bit-exact\n", v->name,
           n, n);
}
END_TEST

/* ---- ConvInteger, QLinearConv ---------------------------------------------------- */

typedef struct conv_case {
    int64_t N, C, M, H, W, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW, G;
    int one_d; /* H == KH == 1 given as a 1-D convolution */
} conv_case;

static const conv_case conv_cases[] = {
    {1, 3, 8, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0},
    {2, 16, 20, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},  /* 1x1 direct */
    {1, 5, 7, 6, 5, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0},    /* 1x1, K % 4 != 0 */
    {1, 8, 6, 10, 9, 3, 2, 2, 2, 1, 0, 1, 1, 1, 2, 1, 0},
    {1, 6, 12, 8, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3, 0},   /* groups, dilation */
    {1, 8, 8, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8, 0},    /* depthwise */
    {2, 6, 6, 9, 8, 3, 3, 2, 2, 1, 0, 1, 2, 2, 1, 6, 0},    /* depthwise, strided, dilated */
    {1, 4, 8, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 0},    /* 2 outputs per group */
    /* depthwise 5x5 over rows of more than 16 columns (the float form's
     * blocks of 16 and its remainder), stride 2, uneven padding */
    {1, 3, 3, 21, 37, 5, 5, 2, 2, 2, 1, 2, 3, 1, 1, 3, 0},
    /* depthwise 17x17: 289 taps, over the float form's exact bound (the
     * int32 sums) */
    {1, 2, 2, 18, 19, 17, 17, 1, 1, 8, 8, 8, 8, 1, 1, 2, 0},
    {1, 40, 270, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0}, /* N > 256, K > 256 */
    {1, 7, 9, 1, 30, 1, 5, 1, 2, 0, 2, 0, 1, 1, 1, 1, 1},   /* 1-D */
};

static void conv_case_run(const conv_case *cc, int xt, int wt, int zpf, int yt)
{
    const int64_t OH = (cc->H + cc->PT + cc->PB - cc->DH * (cc->KH - 1) - 1) / cc->SH + 1;
    const int64_t OW = (cc->W + cc->PL + cc->PR - cc->DW * (cc->KW - 1) - 1) / cc->SW + 1;
    const int64_t Cg = cc->C / cc->G, M = cc->M;
    const int32_t xdt = byte_types[xt], wdt = byte_types[wt], ydt = byte_types[yt];
    uint8_t *x = bytes(cc->N * cc->C * cc->H * cc->W, xdt);
    uint8_t *w = weights(M * Cg * cc->KH * cc->KW, wdt);
    uint8_t *xzp = bytes(1, xdt), *wzp = bytes(M, wdt), *yzp = bytes(1, ydt);
    float *xs = scales(1, 0.02f), *ws = scales(M, 0.01f), *ys = scales(1, 0.8f);
    int32_t *bias = bias_of(M);
    const int nd = cc->one_d ? 3 : 4;
    int64_t xd[4] = {cc->N, cc->C, cc->H, cc->W}, wd[4] = {M, Cg, cc->KH, cc->KW};
    int64_t yd[4] = {cc->N, M, OH, OW};
    if (cc->one_d) {
        xd[2] = cc->W;
        wd[2] = cc->KW;
        yd[2] = OW;
    }
    int64_t ks[2] = {cc->KH, cc->KW}, st[2] = {cc->SH, cc->SW}, dl[2] = {cc->DH, cc->DW};
    int64_t pads[4] = {cc->PT, cc->PL, cc->PB, cc->PR};
    if (cc->one_d) {
        ks[0] = cc->KW, st[0] = cc->SW, dl[0] = cc->DW;
        pads[0] = cc->PL, pads[1] = cc->PR;
    }
    const int64_t one = 1, nz = zpf == 2 ? M : 1, ny = cc->N * M * OH * OW;
    poprt__attr group = {0};
    group.name = "group";
    group.type = POPRT__ATTR_INT;
    group.i = cc->G;
    char what[160];
    snprintf(what, sizeof what, "conv case C%lld M%lld %lldx%lld k%lldx%lld g%lld x %s w %s zp %d",
             (long long)cc->C, (long long)M, (long long)cc->H, (long long)cc->W,
             (long long)cc->KH, (long long)cc->KW, (long long)cc->G, xt ? "s8" : "u8",
             wt ? "s8" : "u8", zpf);
    int32_t *yi = malloc(sizeof(int32_t) * (size_t)ny);
    uint8_t *yq = malloc((size_t)ny);
    float *yf = malloc(sizeof(float) * (size_t)ny), *fb = malloc(sizeof(float) * (size_t)M);
    ck_assert(yi && yq && yf && fb);
    for (int64_t m = 0; m < M; m++)
        fb[m] = 0.125f * (float)(m % 9) - 0.5f;
    for (int op = 0; op < 3; op++) {
        kcall c;
        kc_init(&c, op == 2 ? "FusedConvInteger" : op ? "QLinearConv" : "ConvInteger");
        kc_ints(&c, "kernel_shape", nd - 2, ks);
        kc_ints(&c, "strides", nd - 2, st);
        kc_ints(&c, "dilations", nd - 2, dl);
        kc_ints(&c, "pads", 2 * (nd - 2), pads);
        c.attrs[c.node.n_attrs++] = group;
        if (op != 1) {
            kc_tensor(&c, 0, xdt, nd, xd, x);
            kc_tensor(&c, 1, wdt, nd, wd, w);
            kc_tensor(&c, 2, xdt, 0, &one, zpf ? xzp : NULL);
            kc_tensor(&c, 3, wdt, nz == 1 ? 0 : 1, &nz, zpf ? wzp : NULL);
        }
        if (op == 0) {
            kc_tensor(&c, NSLOT - 1, POPRT_DTYPE_INT32, nd, yd, yi);
            compare(&c, poprt__x86_conv_integer, poprt__x86_conv_integer_prepare,
                    poprt__ref_conv_integer, what);
        } else if (op == 2) { /* scales per channel with per-channel zero points; bias but
                                 without zero points */
            kc_tensor(&c, 4, POPRT_DTYPE_FLOAT, nz == 1 ? 0 : 1, &nz, ws);
            kc_tensor(&c, 5, POPRT_DTYPE_FLOAT, 1, &M, zpf ? fb : NULL);
            kc_tensor(&c, NSLOT - 1, POPRT_DTYPE_FLOAT, nd, yd, yf);
            compare(&c, poprt__x86_fused_conv_integer, poprt__x86_conv_integer_prepare,
                    poprt__ref_poprt_fused_conv_integer, what);
        } else {
            kc_tensor(&c, 0, xdt, nd, xd, x);
            kc_tensor(&c, 1, POPRT_DTYPE_FLOAT, 0, &one, xs);
            kc_tensor(&c, 2, xdt, 0, &one, xzp);
            kc_tensor(&c, 3, wdt, nd, wd, w);
            kc_tensor(&c, 4, POPRT_DTYPE_FLOAT, nz == 1 ? 0 : 1, &nz, ws);
            kc_tensor(&c, 5, wdt, nz == 1 ? 0 : 1, &nz, zpf ? wzp : NULL);
            kc_tensor(&c, 6, POPRT_DTYPE_FLOAT, 0, &one, ys);
            kc_tensor(&c, 7, ydt, 0, &one, yzp);
            kc_tensor(&c, 8, POPRT_DTYPE_INT32, 1, &M, zpf ? bias : NULL);
            kc_tensor(&c, NSLOT - 1, ydt, nd, yd, yq);
            compare(&c, poprt__x86_qlinear_conv, poprt__x86_qlinear_conv_prepare,
                    poprt__ref_qlinear_conv, what);
        }
    }
    void *mine[] = {x, w, xzp, wzp, yzp, xs, ws, ys, bias, yi, yq, yf, fb};
    free_all(mine, sizeof mine / sizeof mine[0]);
}

START_TEST(test_conv_variants_vs_ref)
{
    const poprt__igemm_variant *v = begin_variant(_i);
    if (!v)
        return;
    int n = 0;
    for (size_t s = 0; s < sizeof conv_cases / sizeof conv_cases[0]; s++)
        for (int xt = 0; xt < 2; xt++)
            for (int wt = 0; wt < 2; wt++)
                for (int zpf = 0; zpf < 3; zpf++, n++)
                    conv_case_run(&conv_cases[s], xt, wt, zpf, (int)(s + (size_t)wt) & 1);
    end_variant();
    printf("kernels_igemm: %s: %d cases each of ConvInteger, QLinearConv and FusedConvInteger "
           "bit-exact\n",
           v->name, n);
}
END_TEST

/* ---- QuantizeLinear, DynamicQuantizeLinear ------------------------------------------ */

/* float32 data with the awkward values: ties at .5 after the division,
 * NaN, infinities, -0, values far outside the range */
static float *quant_input(int64_t n, float scale)
{
    float *x = scales(n, 1.0f);
    for (int64_t i = 0; i < n; i++) {
        x[i] = (x[i] - 1.0f) * 300.0f * scale;
        switch (i % 23) {
        case 3: x[i] = ((float)(i % 19) - 9.5f) * scale; break; /* ties */
        case 7: x[i] = -0.0f; break;
        case 11: x[i] = 1e30f; break;
        default: break;
        }
    }
    if (n > 40) {
        x[13] = NAN;
        x[17] = INFINITY;
        x[29] = -INFINITY;
    }
    return x;
}

START_TEST(test_quantize_variants_vs_ref)
{
    const poprt__igemm_variant *v = begin_variant(_i);
    if (!v)
        return;
    static const int64_t lens[] = {1, 7, 16, 33, 100, 40000};
    const float scale = 0.037f;
    int n = 0;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (int yt = 0; yt < 2; yt++, n++) {
            const int64_t len = lens[l], one = 1;
            float *x = quant_input(len, scale), s = scale;
            uint8_t *zp = bytes(1, byte_types[yt]), *y = malloc((size_t)len);
            kcall c;
            kc_init(&c, "QuantizeLinear");
            kc_tensor(&c, 0, POPRT_DTYPE_FLOAT, 1, &len, x);
            kc_tensor(&c, 1, POPRT_DTYPE_FLOAT, 0, &one, &s);
            kc_tensor(&c, 2, byte_types[yt], 0, &one, zp);
            kc_tensor(&c, NSLOT - 1, byte_types[yt], 1, &len, y);
            compare(&c, poprt__x86_quantize_linear, NULL, poprt__ref_quantize_linear,
                    "QuantizeLinear");
            /* DynamicQuantizeLinear: without the non-finite values (they make
             * the scale infinite and every output 0), and with them */
            for (int finite = 1; finite >= 0; finite--) {
                if (finite && len > 40)
                    x[13] = x[17] = x[29] = 1.0f;
                float ys[2] = {0, 0};
                uint8_t yz[2] = {0, 0};
                uint8_t *y2 = malloc((size_t)len);
                for (int pass = 0; pass < 2; pass++) {
                    kc_init(&c, "DynamicQuantizeLinear");
                    kc_tensor(&c, 0, POPRT_DTYPE_FLOAT, 1, &len, x);
                    kc_tensor(&c, NSLOT - 1, POPRT_DTYPE_UINT8, 1, &len, pass ? y2 : y);
                    c.k.n_out = 3;
                    c.out[1] = &c.extra[0];
                    c.out[2] = &c.extra[1];
                    c.extra[0].kind = c.extra[1].kind = POPRT__KIND_TENSOR;
                    c.extra[0].t.dtype = POPRT_DTYPE_FLOAT;
                    c.extra[1].t.dtype = POPRT_DTYPE_UINT8;
                    c.extra[0].t.numel = c.extra[1].t.numel = 1;
                    c.extra[0].t.data = &ys[pass];
                    c.extra[1].t.data = &yz[pass];
                    c.ex.pool = pass ? g_pool : NULL;
                    kc_run(&c, pass ? poprt__x86_dynamic_quantize_linear
                                    : poprt__ref_dynamic_quantize_linear);
                }
                ck_assert_msg(!memcmp(&ys[0], &ys[1], sizeof ys[0]) && yz[0] == yz[1] &&
                                  !memcmp(y, y2, (size_t)len),
                              "DynamicQuantizeLinear (%s) length %lld differs from the reference",
                              v->name, (long long)len);
                free(y2);
            }
            free(x);
            free(zp);
            free(y);
        }
    end_variant();
    printf("kernels_igemm: %s: %d QuantizeLinear and DynamicQuantizeLinear cases bit-exact\n",
           v->name, n);
}
END_TEST

/* FusedMatMulInteger's float output (deq) of every variant against the
 * reference's: the int32 accumulators corrected as fix does (the portable
 * variant's) and poprt__q_float_cols of ref/quant.h, bit for bit. Row
 * lengths around the 8-lane steps, an offset j0, scales and bias per column
 * or one for all, no bias, with and without B zero points; accumulators
 * near the int32 limits (wrapping) and beyond float's 24-bit mantissa. */
START_TEST(test_deq_variants_vs_ref)
{
    const poprt__igemm_variant *v = &poprt__igemm_variants[_i];
    if (!poprt__igemm_usable(v)) {
        printf("kernels_igemm: %s skipped: CPU lacks it\n", v->name);
        return;
    }
    enum { N = 80 };
    int32_t c[N], colterm[N + 5], bz[N + 5], fixed[N];
    float s[N + 5], b[N + 5], got[N], want[N];
    for (int j = 0; j < N + 5; j++) {
        colterm[j] = (int32_t)((uint32_t)j * 2654435761u) >> 3;
        bz[j] = j % 7 - 3;
        s[j] = 1e-3f * (float)(j + 1) / 3.0f;
        b[j] = (float)j * 0.37f - 11.0f;
    }
    for (int j = 0; j < N; j++)
        c[j] = j == 3 ? INT32_MAX : j == 4 ? INT32_MIN : (int32_t)((uint32_t)j * 40503u) * 997;
    static const int64_t lens[] = {1, 7, 8, 9, 23, 64, 75};
    int n = 0;
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
        for (int64_t j0 = 0; j0 <= 5; j0 += 5)
            for (int form = 0; form < 12; form++, n++) {
                const int64_t len = lens[l];
                poprt__igemm_cols q = {colterm, form & 1 ? bz : NULL};
                poprt__igemm_deq d = {s, (form >> 2) == 0 ? NULL : b, (form >> 1) & 1,
                                      (form >> 2) == 2};
                const int32_t rs = 123457;
                poprt__igemm_fix_scalar(&q, j0, len, c, rs, fixed);
                poprt__q_float_cols(fixed, len, j0, d.s, d.s_all, d.b, d.b_all, want);
                memset(got, 0xff, sizeof got);
                v->deq(&q, &d, j0, len, c, rs, got);
                ck_assert_msg(!memcmp(got, want, (size_t)len * sizeof(float)),
                              "%s deq, %lld columns from %lld, form %d: differs from "
                              "the reference",
                              v->name, (long long)len, (long long)j0, form);
                ck_assert_msg(got[len] != got[len], "%s deq wrote past %lld columns", v->name,
                              (long long)len); /* still the NaN pattern */
            }
    printf("kernels_igemm: %s: %d float outputs bit-exact\n", v->name, n);
}
END_TEST

/* A packed B read from a file is checked before use: a wrong size, shape or
 * magic is refused, and the operators then pack the weights again. */
START_TEST(test_packed_checked)
{
    const int64_t K = 10, N = 20;
    int8_t *b = bytes(K * N, POPRT_DTYPE_INT8);
    const size_t sz = poprt__igemm_pack_size(K, N);
    unsigned char *p = aligned_alloc(64, (sz + 63) / 64 * 64);
    ck_assert_ptr_nonnull(p);
    poprt__igemm_pack(K, N, b, NULL, N, 1, 0, p);
    ck_assert_int_eq(poprt__igemm_packed_fits(p, sz, K, N), 1);
    ck_assert_int_eq(poprt__igemm_packed_fits(p, sz - 1, K, N), 0);
    ck_assert_int_eq(poprt__igemm_packed_fits(p, sz, K + 1, N), 0);
    ck_assert_int_eq(poprt__igemm_packed_fits(p, sz, K, N - 1), 0);
    /* the column sums of the stored values */
    const int32_t *cs = poprt__igemm_colsum(p);
    for (int64_t j = 0; j < N; j++) {
        int32_t s = 0;
        for (int64_t k = 0; k < K; k++)
            s += b[k * N + j];
        ck_assert_int_eq(cs[j], s);
    }
    p[0] ^= 1;
    ck_assert_int_eq(poprt__igemm_packed_fits(p, sz, K, N), 0);
    free(p);
    free(b);
}
END_TEST

/* The pack's 7-bit mark: set exactly when every stored value (uint8 minus
 * 128) lies in [-64, 63]. */
START_TEST(test_packed_b7_mark)
{
    const int64_t K = 9, N = 21;
    const size_t sz = poprt__igemm_pack_size(K, N);
    unsigned char *p = aligned_alloc(64, (sz + 63) / 64 * 64);
    ck_assert_ptr_nonnull(p);
    for (int u8 = 0; u8 < 2; u8++) {
        const int32_t dt = u8 ? POPRT_DTYPE_UINT8 : POPRT_DTYPE_INT8;
        g_b7 = 1;
        uint8_t *b = weights(K * N, dt);
        g_b7 = 0;
        b[3] = u8 ? 64 : (uint8_t)-64; /* the ends of the range */
        b[5] = u8 ? 191 : 63;
        poprt__igemm_pack(K, N, b, NULL, N, 1, u8, p);
        ck_assert_int_eq(poprt__igemm_packed_b7(p), 1);
        ck_assert_int_eq(poprt__igemm_packed_fits(p, sz, K, N), 1);
        static const int outside[2][2] = {{-65, 64}, {63, 192}};
        for (int o = 0; o < 2; o++) {
            const uint8_t keep = b[K * N - 2];
            b[K * N - 2] = (uint8_t)outside[u8][o];
            poprt__igemm_pack(K, N, b, NULL, N, 1, u8, p);
            ck_assert_msg(!poprt__igemm_packed_b7(p), "%s value %d marked 7-bit",
                          u8 ? "uint8" : "int8", outside[u8][o]);
            b[K * N - 2] = keep;
        }
        free(b);
    }
    free(p);
}
END_TEST

typedef struct c_out {
    int32_t *c;
    int64_t N;
} c_out;

static void copy_block(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int32_t *c,
                       int64_t ldc, void *scratch)
{
    (void)scratch;
    const c_out *o = ctx;
    for (int64_t i = m0; i < m1; i++)
        memcpy(o->c + i * o->N + n0, c + (i - m0) * ldc, sizeof(int32_t) * (size_t)(n1 - n0));
}

/* A b7 variant given weights outside 7 bits (and A at 255, where its
 * pairs would saturate) hands the product to its stand-in: the sums stay
 * exact. */
START_TEST(test_b7_stand_in)
{
    /* rows of A hold 4 * ceil(K / 4) readable bytes (poprt__igemm) */
    const int64_t M = 13, K = 70, N = 40, lda = (K + 3) / 4 * 4;
    uint8_t *a = malloc((size_t)(M * lda));
    int8_t *b = malloc((size_t)(K * N));
    int32_t *c = malloc(sizeof(int32_t) * (size_t)(M * N));
    ck_assert(a && b && c);
    for (int64_t i = 0; i < M * lda; i++)
        a[i] = 255;
    for (int64_t i = 0; i < K * N; i++)
        b[i] = (int8_t)(i % 3 ? -128 : 127);
    const size_t sz = poprt__igemm_pack_size(K, N);
    unsigned char *p = aligned_alloc(64, (sz + 63) / 64 * 64);
    ck_assert_ptr_nonnull(p);
    poprt__igemm_pack(K, N, b, NULL, N, 1, 0, p);
    int n = 0;
    for (int v = 0; v < poprt__igemm_n_variants; v++) {
        const poprt__igemm_variant *var = &poprt__igemm_variants[v];
        if (!var->b7 || !poprt__igemm_usable(var))
            continue;
        void *ws = aligned_alloc(64, (poprt__igemm_ws_size(var, M, N, 1) + 63) / 64 * 64);
        ck_assert_ptr_nonnull(ws);
        c_out o = {c, N};
        const poprt__igemm_epi epi = {copy_block, &o};
        memset(c, 0, sizeof(int32_t) * (size_t)(M * N));
        poprt__igemm(var, NULL, 1, ws, M, N, K, a, lda, p, &epi);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int32_t want = 0;
                for (int64_t k = 0; k < K; k++)
                    want += 255 * b[k * N + j];
                ck_assert_msg(c[i * N + j] == want, "%s with 8-bit weights: c[%lld][%lld] = %d, "
                              "exact %d", var->name, (long long)i, (long long)j,
                              c[i * N + j], want);
            }
        free(ws);
        n++;
    }
    printf("kernels_igemm: %d 7-bit variant(s) handed 8-bit weights on\n", n);
    free(p);
    free(a);
    free(b);
    free(c);
}
END_TEST

/* The byte transpose of the convolutions against the naive loop: shapes
 * around its 16 x 16 blocks, with and without the int8 -> uint8 flip. */
START_TEST(test_transpose_u8)
{
    static const int64_t sh[][2] = {{1, 1}, {16, 16}, {17, 33}, {48, 15}, {70, 64}, {5, 100}};
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++)
        for (int flip = 0; flip < 2; flip++) {
            const int64_t R = sh[i][0], C = sh[i][1], ss = C + 3, ds = R + 5;
            uint8_t *s = bytes(R * ss, POPRT_DTYPE_UINT8), *d = calloc((size_t)(C * ds), 1);
            ck_assert_ptr_nonnull(d);
            poprt__igemm_transpose_u8(s, ss, d, ds, R, C, flip ? 0x80 : 0);
            for (int64_t r = 0; r < R; r++)
                for (int64_t c = 0; c < C; c++)
                    ck_assert_int_eq(d[c * ds + r], s[r * ss + c] ^ (flip ? 0x80 : 0));
            free(s);
            free(d);
        }
}
END_TEST

/* The int32 transpose of ConvInteger's outputs against the naive loop:
 * shapes around its 4 x 4 blocks; cells outside the shape stay untouched. */
START_TEST(test_transpose_i32)
{
    static const int64_t sh[][2] = {{1, 1}, {4, 4}, {3, 7}, {9, 6}, {66, 16}, {5, 13}};
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) {
        const int64_t R = sh[i][0], C = sh[i][1], ss = C + 3, ds = R + 5;
        int32_t *s = malloc(sizeof *s * (size_t)(R * ss)), *d = malloc(sizeof *d * (size_t)(C * ds));
        ck_assert_ptr_nonnull(s);
        ck_assert_ptr_nonnull(d);
        for (int64_t k = 0; k < R * ss; k++)
            s[k] = (int32_t)(k * 2654435761u);
        for (int64_t k = 0; k < C * ds; k++)
            d[k] = -7;
        poprt__igemm_transpose_i32(s, ss, d, ds, R, C);
        for (int64_t c = 0; c < C; c++)
            for (int64_t r = 0; r < ds; r++)
                ck_assert_int_eq(d[c * ds + r], r < R ? s[r * ss + c] : -7);
        free(s);
        free(d);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_igemm");
    TCase *tc = tcase_create("kernels_igemm");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_matmul_variants_vs_ref, 0, poprt__igemm_n_variants);
    tcase_add_loop_test(tc, test_conv_variants_vs_ref, 0, poprt__igemm_n_variants);
    tcase_add_loop_test(tc, test_quantize_variants_vs_ref, 0, poprt__igemm_n_variants);
    tcase_add_loop_test(tc, test_deq_variants_vs_ref, 0, poprt__igemm_n_variants);
    tcase_add_test(tc, test_packed_checked);
    tcase_add_test(tc, test_transpose_u8);
    tcase_add_test(tc, test_transpose_i32);
    tcase_add_test(tc, test_packed_b7_mark);
    tcase_add_test(tc, test_b7_stand_in);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
