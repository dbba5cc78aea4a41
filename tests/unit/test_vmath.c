/* Unit tests: vectorised float32 math (lib/kernels/vmath*, x86/vmath*). Every
 * variant of the kernel list (vmath_kernels.inc) the CPU has, and the
 * portable table the ref kernels fall back to (poprt__vmath_portable, walked
 * as one more variant), is compared with libm in double over special values, a sweep of all float magnitudes (every 16381st
 * bit pattern of each sign) and a dense sweep of the interesting range.
 * Variants the CPU lacks are reported as skipped on stdout.
 *
 * Error measure: |y - ref| / ulp(ref), ulp(ref) = 2^(e-23) for
 * |ref| in [2^e, 2^(e+1)), 2^-149 below FLT_MIN (subnormal results are
 * counted in subnormal ulps). A result whose reference rounds to +-inf in
 * float must be that inf; NaN exactly where the reference is NaN.
 * Bounds (ulp, checked on every variant; measured maxima on AVX-512/AVX2
 * are printed by the test, e.g. exp 1.0, log 1.0, tanh 1.5, erf 1.3):
 *   exp 2, log 2, sigmoid 2, tanh 3, erf 3, gelu 4, gelu_tanh 4,
 *   softplus 4, mish 4, swish 4, elu/selu/celu 4 (+ an absolute 1e-7 for
 *   selu/celu, whose constants are applied in two roundings), relu and
 *   leaky_relu 0.5, square 0.5, cube 1.5, pow_half 0.5, hard_sigmoid and
 *   hard_swish 1 ulp + 1e-7 absolute (their breakpoints cancel), x_relu6
 *   (a HardSwish as a graph writes it, four orders) 2 ulp (+ 1e-7 relative
 *   for the orders that multiply by 1/6 rounded to float).
 * Also: AVX2 and AVX-512 give identical bits; results do not depend on how
 * an array is split (thread chunking); binary ops are exact IEEE; softmax
 * and log-softmax rows against double; every table's float8 rounding gives
 * the portable one's bits; chains of cheap steps give the bits of their
 * steps run one by one. */
#include <check.h>

/* ck_assert_msg records every passing check (a write per call): over
 * millions of elements that dominated the test's time; this one calls
 * Check only on failure. */
#define CHECK_MSG(cond, ...)              \
    do {                                  \
        if (!(cond))                      \
            ck_abort_msg(__VA_ARGS__);    \
    } while (0)
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/fused_elementwise.h"
#include "kernels/x86/vmath.h"

typedef struct fcase {
    int fn;            /* POPRT__VMATH_* */
    double ulp, abs;   /* bound: ulp * ulp(ref) + abs + rel * |ref| */
    double rel;
    poprt__vmath_param p;
} fcase;

static const fcase cases[] = {
    {POPRT__VMATH_exp, 2, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_log, 2, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_tanh, 3, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_erf, 3, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_sigmoid, 2.5, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_gelu, 5, 0, 4e-7, {0, 0, 0}},
    {POPRT__VMATH_gelu_tanh, 4, 0, 2e-5, {0, 0, 0}},
    {POPRT__VMATH_softplus, 4, 0, 2e-6, {0, 0, 0}},
    {POPRT__VMATH_mish, 4, 0, 2e-6, {0, 0, 0}},
    {POPRT__VMATH_swish, 4, 0, 2e-5, {1.0f, 0, 0}},
    {POPRT__VMATH_swish, 4, 0, 2e-5, {1.702f, 0, 0}},
    {POPRT__VMATH_elu, 4, 0, 1e-6, {1.0f, 0, 0}},
    {POPRT__VMATH_elu, 4, 0, 1e-6, {0.3f, 0, 0}},
    {POPRT__VMATH_selu, 4, 1e-7, 1e-6, {1.67326319217681884765625f, 0, 1.05070102214813232421875f}},
    {POPRT__VMATH_celu, 4, 1e-7, 1e-6, {1.0f, 0, 0}},
    {POPRT__VMATH_celu, 4, 1e-7, 1e-6, {2.5f, 0, 0}},
    {POPRT__VMATH_relu, 0.5, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_leaky_relu, 0.5, 0, 0, {0.01f, 0, 0}},
    {POPRT__VMATH_hard_sigmoid, 1, 1e-7, 0, {0.2f, 0.5f, 0}},
    {POPRT__VMATH_hard_swish, 1, 1e-7, 0, {0, 0, 0}},
    {POPRT__VMATH_square, 0.5, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_cube, 1.5, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_pow_half, 0.5, 0, 0, {0, 0, 0}},
    {POPRT__VMATH_clip, 0, 0, 0, {0, 6, 0}},
    {POPRT__VMATH_clip, 0, 0, 0, {-1.5f, 2.25f, 0}},
    {POPRT__VMATH_x_relu6, 2, 0, 0, {6.0f, 0, 0}},
    {POPRT__VMATH_x_relu6, 2, 0, 1e-7, {1.0f / 6.0f, 1, 0}},
    {POPRT__VMATH_x_relu6, 2, 0, 0, {6.0f, 2, 0}},
    {POPRT__VMATH_x_relu6, 2, 0, 1e-7, {1.0f / 6.0f, 3, 0}},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

static double softplus_d(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

/* The definitions in double (the ONNX formulas, written so double itself
 * does not cancel: GELU's negative tail through erfc, the tanh form as
 * x * sigmoid(2u)). */
static double ref(int fn, double x, const poprt__vmath_param *p)
{
    double a = p->alpha, g = p->gamma;
    if (isnan(x))
        return x; /* NaN in, NaN out (libm's fmax/fmin would drop it) */
    switch (fn) {
    case POPRT__VMATH_exp: return exp(x);
    case POPRT__VMATH_log: return log(x);
    case POPRT__VMATH_tanh: return tanh(x);
    case POPRT__VMATH_erf: return erf(x);
    case POPRT__VMATH_sigmoid: return 1.0 / (1.0 + exp(-x));
    case POPRT__VMATH_gelu:
        if (isinf(x))
            return x > 0 ? x : -0.0;
        return x >= 0 ? 0.5 * x * (1.0 + erf(x * M_SQRT1_2)) : 0.5 * x * erfc(-x * M_SQRT1_2);
    case POPRT__VMATH_gelu_tanh: {
        if (isinf(x))
            return x > 0 ? x : -0.0;
        double u = 2.0 * sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
        return x / (1.0 + exp(-u));
    }
    case POPRT__VMATH_softplus: return softplus_d(x);
    case POPRT__VMATH_mish: return x * tanh(softplus_d(x));
    case POPRT__VMATH_swish: return x / (1.0 + exp(-a * x));
    case POPRT__VMATH_elu: return x < 0 ? a * expm1(x) : x;
    case POPRT__VMATH_selu: return x > 0 ? g * x : g * a * expm1(x);
    case POPRT__VMATH_celu: return fmax(0.0, x) + fmin(0.0, a * expm1(x / a));
    case POPRT__VMATH_relu: return x < 0 ? 0.0 : x;
    case POPRT__VMATH_leaky_relu: return x < 0 ? a * x : x;
    case POPRT__VMATH_hard_sigmoid: return fmax(0.0, fmin(1.0, a * x + p->beta));
    case POPRT__VMATH_hard_swish: return x * fmax(0.0, fmin(1.0, x / 6.0 + 0.5));
    case POPRT__VMATH_square: return x * x;
    case POPRT__VMATH_cube: return x * x * x;
    case POPRT__VMATH_pow_half: return pow(x, 0.5);
    case POPRT__VMATH_x_relu6: { /* x Clip(x + 3, 0, 6) / 6; the product first
                                     overflows in float as the graph's Mul does */
        const double c = fmin(6.0, fmax(0.0, x + 3.0));
        return p->beta < 2 ? (double)(float)(x * c) / 6.0 : x * (c / 6.0);
    }
    case POPRT__VMATH_clip: {
        double v = x < a ? a : x;
        return v > p->beta ? p->beta : v;
    }
    }
    return NAN;
}

/* Functions whose libm-style formula gives NaN at an infinity (0 * inf);
 * vmath may return the limit there instead. */
static int nan_ok_at_inf(int fn)
{
    return fn == POPRT__VMATH_swish || fn == POPRT__VMATH_mish;
}

static double ulp_of(double r)
{
    double a = fabs(r);
    if (a < FLT_MIN)
        return ldexp(1.0, -149);
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    return ldexp(1.0, e - 24);
}

static float *inputs(int64_t *count)
{
    static const float specials[] = {
        0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX,
        1e-45f, -1e-45f, 1e-40f, -1e-40f, 1.0f, -1.0f, 0.5f, 2.0f, 88.7f, 88.72283f,
        88.7229f, 89.0f, -87.33654f, -87.34f, -103.0f, -103.97f, -104.0f, -110.0f, 0.625f,
        -0.625f, 0.62499994f, 0.9f, -0.9f, 0.89999998f, 1.2727922f, 3.92f, 4.0f, -4.0f,
        5.5f, -5.5f, 10.0f, -10.0f, 14.14f, -14.14f, 20.0f, -20.0f, 30.0f, -30.0f, 1e10f,
        -1e10f, 3.0f, -3.0f, 1e-7f, -1e-7f, 1e-20f, -1e-20f,
    };
    const int64_t ns = (int64_t)(sizeof specials / sizeof specials[0]);
    /* sanitizer builds run ~10x slower: same coverage pattern, sparser */
#if defined(__SANITIZE_ADDRESS__)
    const int64_t stride = 16381 * 8 + 1, ndense = 1 << 15;
#else
    const int64_t stride = 16381, ndense = 1 << 18;
#endif
    const int64_t nbits = (int64_t)(0x7f800000 / stride) + 1;
    int64_t n = ns + 2 * nbits + ndense;
    float *x = malloc((size_t)n * sizeof *x);
    ck_assert_ptr_nonnull(x);
    int64_t k = 0;
    for (int64_t i = 0; i < ns; i++)
        x[k++] = specials[i];
    for (int64_t i = 0; i < nbits; i++) {
        uint32_t b = (uint32_t)(i * stride);
        float f;
        memcpy(&f, &b, sizeof f);
        x[k++] = f;
        x[k++] = -f;
    }
    for (int64_t i = 0; i < ndense; i++)
        x[k++] = -24.0f + 48.0f * (float)i / (float)ndense;
    *count = k;
    return x;
}

/* The tables walked: the kernel list, then the portable table. */
#define N_TABLES (poprt__vmath_n_variants + 1)

static const poprt__vmath_variant *variant_or_skip(int i)
{
    if (i == poprt__vmath_n_variants)
        return &poprt__vmath_portable;
    const poprt__vmath_variant *v = &poprt__vmath_variants[i];
    if (!poprt__vmath_usable(v)) {
        printf("vmath: variant %s skipped: CPU (or POPRT_ISA) lacks %s\n", v->name,
               poprt__isa_name(v->isa));
        return NULL;
    }
    return v;
}

START_TEST(test_unary_accuracy)
{
    const poprt__vmath_variant *v = variant_or_skip(_i);
    if (!v)
        return;
    int64_t n;
    float *x = inputs(&n);
    float *y = malloc((size_t)n * sizeof *y);
    ck_assert_ptr_nonnull(y);
    for (int c = 0; c < N_CASES; c++) {
        const fcase *fc = &cases[c];
        v->unary[fc->fn](x, y, n, &fc->p);
        double worst = 0;
        float worst_x = 0;
        for (int64_t i = 0; i < n; i++) {
            double r = ref(fc->fn, (double)x[i], &fc->p);
            float rf = (float)r;
            if (isnan(r)) {
                if (!(isinf(x[i]) && nan_ok_at_inf(fc->fn)))
                    CHECK_MSG(isnan(y[i]), "%s %s(%a) = %a, want NaN", v->name,
                                  poprt__vmath_unary_names[fc->fn], (double)x[i],
                                  (double)y[i]);
                continue;
            }
            CHECK_MSG(!isnan(y[i]), "%s %s(%a) = NaN, want %a", v->name,
                          poprt__vmath_unary_names[fc->fn], (double)x[i], r);
            if (isinf(rf)) {
                CHECK_MSG(y[i] == rf, "%s %s(%a) = %a, want %a", v->name,
                              poprt__vmath_unary_names[fc->fn], (double)x[i], (double)y[i],
                              (double)rf);
                continue;
            }
            double d = fabs((double)y[i] - r);
            /* composites (rel > 0) may go through a subnormal intermediate */
            double tiny = fc->rel > 0 ? ldexp(1.0, -144) : 0.0;
            CHECK_MSG(d <= fc->ulp * ulp_of(r) + fc->abs + fc->rel * fabs(r) + tiny,
                          "%s %s(%a) = %a, want %a (%.2f ulp > %.1f)", v->name,
                          poprt__vmath_unary_names[fc->fn], (double)x[i], (double)y[i], r,
                          d / ulp_of(r), fc->ulp);
            double e = d / ulp_of(r);
            if (fc->abs == 0 && e > worst) {
                worst = e;
                worst_x = x[i];
            }
        }
        if (fc->abs == 0)
            printf("vmath %-8s %-10s alpha %-5g max error %.3f ulp (at %a)\n",
                   v == &poprt__vmath_portable ? "portable" : v->name,
                   poprt__vmath_unary_names[fc->fn], (double)fc->p.alpha, worst,
                   (double)worst_x);
    }
    free(x);
    free(y);
}
END_TEST

/* Splitting an array anywhere (as threads do) gives the same bits, and the
 * AVX variants agree with each other bit for bit. */
START_TEST(test_split_and_cross_variant)
{
    const poprt__vmath_variant *v = variant_or_skip(_i);
    if (!v)
        return;
    enum { N = 1003 };
    float x[N], y1[N], y2[N];
    for (int i = 0; i < N; i++)
        x[i] = -12.0f + 24.0f * (float)((i * 7919) % N) / N;
    const poprt__vmath_param p = {0.7f, 0.3f, 1.1f};
    for (int f = 0; f < POPRT__VMATH_N_UNARY; f++) {
        v->unary[f](x, y1, N, &p);
        for (int b = 0, step = 1; b < N; b += step, step = step * 3 % 37 + 1)
            v->unary[f](x + b, y2 + b, (b + step > N ? N : b + step) - b, &p);
        CHECK_MSG(memcmp(y1, y2, sizeof y1) == 0, "%s %s depends on the split", v->name,
                      poprt__vmath_unary_names[f]);
        for (int j = 0; j < poprt__vmath_n_variants; j++) {
            const poprt__vmath_variant *w = &poprt__vmath_variants[j];
            if (w == v || w->isa == POPRT__ISA_SCALAR || v->isa == POPRT__ISA_SCALAR ||
                !poprt__vmath_usable(w))
                continue;
            w->unary[f](x, y2, N, &p);
            CHECK_MSG(memcmp(y1, y2, sizeof y1) == 0, "%s and %s differ in %s", v->name,
                          w->name, poprt__vmath_unary_names[f]);
        }
    }
}
END_TEST

START_TEST(test_binary_exact)
{
    const poprt__vmath_variant *v = variant_or_skip(_i);
    if (!v)
        return;
    enum { N = 77 };
    float a[N], b[N], y[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i * 37 % 23) - 11.5f;
        b[i] = (float)(i * 13 % 17) * 0.37f - 3.0f;
    }
    b[5] = 0.0f;
    a[7] = NAN;
    b[9] = NAN;
    a[11] = -0.0f;
    b[11] = 0.0f;
    a[12] = 0.0f;
    b[12] = -0.0f;
    for (int op = 0; op < POPRT__VMATH_N_BINARY; op++)
        for (int mode = 0; mode < 3; mode++)
            for (int n = 0; n <= N; n += (n < 40 ? 1 : 9)) {
                int64_t sa = mode != 1, sb = mode != 2;
                for (int i = 0; i < N; i++)
                    y[i] = 12345.0f;
                v->binary[op](a, sa, b, sb, y, n);
                for (int i = 0; i < N; i++) {
                    float av = a[i * sa], bv = b[i * sb], want;
                    switch (op) {
                    case POPRT__VMATH_add: want = av + bv; break;
                    case POPRT__VMATH_sub: want = av - bv; break;
                    case POPRT__VMATH_mul: want = av * bv; break;
                    case POPRT__VMATH_max: want = (av != av || av > bv) ? av : bv; break;
                    case POPRT__VMATH_min: want = (av != av || av < bv) ? av : bv; break;
                    default: want = av / bv; break;
                    }
                    if (i >= n)
                        want = 12345.0f;
                    CHECK_MSG(memcmp(&want, &y[i], sizeof want) == 0 ||
                                      (isnan(want) && isnan(y[i])),
                                  "%s %s mode %d n %d i %d: %a want %a", v->name,
                                  poprt__vmath_binary_names[op], mode, n, i, (double)y[i],
                                  (double)want);
                }
            }
}
END_TEST

/* The steps one by one with the table's own functions, as FusedElementwise
 * and FusedConv's post steps ran them before chains existed. */
static void steps_one_by_one(const poprt__vmath_variant *v, const poprt__vmath_step *s, int ns,
                             float *y, int64_t n)
{
    for (int k = 0; k < ns; k++) {
        const poprt__vmath_param p = {s[k].alpha, s[k].beta, 0.0f};
        int b = -1, u = -1;
        switch (s[k].op) {
        case POPRT__EW_ADD: b = POPRT__VMATH_add; break;
        case POPRT__EW_SUB: b = POPRT__VMATH_sub; break;
        case POPRT__EW_MUL: b = POPRT__VMATH_mul; break;
        case POPRT__EW_DIV: b = POPRT__VMATH_div; break;
        case POPRT__EW_MAX: b = POPRT__VMATH_max; break;
        case POPRT__EW_MIN: b = POPRT__VMATH_min; break;
        case POPRT__EW_RELU: u = POPRT__VMATH_relu; break;
        case POPRT__EW_LEAKY_RELU: u = POPRT__VMATH_leaky_relu; break;
        case POPRT__EW_CLIP: u = POPRT__VMATH_clip; break;
        case POPRT__EW_HARD_SIGMOID: u = POPRT__VMATH_hard_sigmoid; break;
        default: u = s[k].alpha != 0.0f ? POPRT__VMATH_x_relu6 : POPRT__VMATH_hard_swish; break;
        }
        if (u >= 0)
            v->unary[u](y, y, n, &p);
        else if (s[k].reverse)
            v->binary[b](&s[k].alpha, 0, y, 1, y, n);
        else
            v->binary[b](y, 1, &s[k].alpha, 0, y, n);
    }
}

/* Chains (poprt__vmath_chain_fn) of every step it takes, each with both
 * operand orders and the four x_relu6 orders, on the special values and a
 * sweep, every length up to 20 and every fourth up to 280: the bits of the
 * steps run one by one. */
START_TEST(test_chain_same_bits)
{
    const poprt__vmath_variant *v = variant_or_skip(_i);
    if (!v)
        return;
    static const poprt__vmath_step chains[][5] = {
        {{POPRT__EW_MUL, 1, 0.7f, 0}, {POPRT__EW_ADD, 0, 0.8f, 0},
         {POPRT__EW_HARD_SWISH, 0, 6.0f, 0}, {POPRT__EW_MUL, 0, -1.3f, 0},
         {POPRT__EW_ADD, 1, -0.5f, 0}}, /* PP-LCNet's affine + HardSwish + affine */
        {{POPRT__EW_SUB, 0, 0.25f, 0}, {POPRT__EW_SUB, 1, 2.0f, 0}, {POPRT__EW_DIV, 0, 3.0f, 0},
         {POPRT__EW_DIV, 1, 0.5f, 0}, {POPRT__EW_RELU, 0, 0, 0}},
        {{POPRT__EW_MAX, 0, -1.0f, 0}, {POPRT__EW_MIN, 1, 2.0f, 0},
         {POPRT__EW_MAX, 1, 0.0f, 0}, {POPRT__EW_MIN, 0, -0.0f, 0},
         {POPRT__EW_LEAKY_RELU, 0, 0.1f, 0}},
        {{POPRT__EW_CLIP, 0, -2.0f, 3.0f}, {POPRT__EW_HARD_SIGMOID, 0, 0.2f, 0.5f},
         {POPRT__EW_HARD_SWISH, 0, 0.0f, 0}, {POPRT__EW_HARD_SWISH, 0, 6.0f, 1},
         {POPRT__EW_HARD_SWISH, 0, 6.0f, 2}},
        {{POPRT__EW_HARD_SWISH, 0, 0.16666667f, 3}, {POPRT__EW_ADD, 0, 1.0f, 0},
         {POPRT__EW_HARD_SWISH, 0, 6.0f, 0}, {POPRT__EW_MUL, 0, 4.0f, 0},
         {POPRT__EW_CLIP, 0, -1.0f, 1.0f}},
    };
    const int nc = (int)(sizeof chains / sizeof chains[0]);
    for (int c = 0; c < nc; c++)
        ck_assert(poprt__vmath_chain_takes(chains[c], 5));
    const poprt__vmath_step sig = {POPRT__EW_SIGMOID, 0, 0, 0};
    ck_assert(!poprt__vmath_chain_takes(&sig, 1));
    int64_t nx;
    float *x = inputs(&nx);
    enum { N = 280 }; /* past two turns of the chain's 8 vectors at 16 lanes */
    float a[N + 4], b[N + 4];
    for (int c = 0; c < nc; c++)
        for (int64_t off = 0; off + N <= nx; off += N * 97 + 13)
            for (int n = 0; n <= N; n += (n < 20 ? 1 : 4)) {
                memcpy(a, x + off, sizeof(float) * N);
                memcpy(b, a, sizeof(float) * N);
                a[N] = b[N] = 777.0f; /* past the end: untouched */
                v->chain(chains[c], 5, a, n);
                steps_one_by_one(v, chains[c], 5, b, n);
                for (int i = 0; i <= N; i++)
                    CHECK_MSG(memcmp(&a[i], &b[i], sizeof a[i]) == 0 ||
                                  (i < n && isnan(a[i]) && isnan(b[i])),
                              "%s chain %d n %d at %d: %a, one by one %a", v->name, c, n, i,
                              (double)a[i], (double)b[i]);
            }
    free(x);
}
END_TEST

START_TEST(test_softmax_rows)
{
    const poprt__vmath_variant *v = variant_or_skip(_i);
    if (!v)
        return;
    enum { N = 300 };
    float x[N], y[N];
    double e[N];
    for (int n = 1; n <= N; n += (n < 40 ? 1 : 37)) {
        for (int i = 0; i < n; i++)
            x[i] = (float)((i * 7919 + n) % 101) * 0.3f - 15.0f;
        for (int mode = 0; mode < 2; mode++) {
            double m = -INFINITY, s = 0;
            for (int i = 0; i < n; i++)
                m = x[i] > m ? x[i] : m;
            for (int i = 0; i < n; i++)
                s += (e[i] = exp(x[i] - m));
            v->softmax(x, y, n, mode);
            for (int i = 0; i < n; i++) {
                double r = mode == 0 ? e[i] / s : (x[i] - m) - log(s);
                CHECK_MSG(fabs(y[i] - r) <= 1e-6 * fabs(r) + 1e-7,
                              "%s softmax mode %d n %d i %d: %g want %g", v->name, mode, n, i,
                              (double)y[i], r);
            }
            /* in place gives the same bits */
            float z[N];
            memcpy(z, x, sizeof z);
            v->softmax(z, z, n, mode);
            ck_assert(memcmp(z, y, (size_t)n * sizeof *y) == 0);
        }
    }
    /* a NaN poisons its row; -inf entries give 0; a large spread stays finite */
    float r[5] = {1.0f, NAN, 2.0f, 3.0f, 4.0f};
    v->softmax(r, y, 5, 0);
    for (int i = 0; i < 5; i++)
        ck_assert(isnan(y[i]));
    float q[3] = {-INFINITY, 0.0f, 1000.0f};
    v->softmax(q, y, 3, 0);
    ck_assert(y[0] == 0.0f && y[1] == 0.0f && y[2] == 1.0f);
    v->softmax(q, y, 3, 1);
    ck_assert(y[0] == -INFINITY && y[1] == -1000.0f && y[2] == 0.0f);
}
END_TEST

START_TEST(test_sum)
{
    const poprt__vmath_variant *v = variant_or_skip(_i);
    if (!v)
        return;
    float x[200];
    for (int i = 0; i < 200; i++)
        x[i] = (float)(i % 13) - 6.0f + 0.25f;
    for (int n = 0; n <= 200; n++) {
        double s = 0;
        for (int i = 0; i < n; i++)
            s += x[i];
        CHECK_MSG(fabs(v->sum(x, n) - s) <= 1e-6 * (fabs(s) + n), "%s sum n %d", v->name,
                      n);
    }
}
END_TEST

/* float8 rounding (kernels/fp8.h): the same bits from every table as from
 * the portable function, over every 4099th float bit pattern (all
 * exponents, NaN, inf), both formats, with and without the zero point. */
START_TEST(test_fp8_round_same_bits)
{
    const poprt__vmath_variant *v = variant_or_skip(_i);
    if (!v)
        return;
    enum { N = 1048577 };
    float *x = malloc(N * sizeof *x), *y1 = malloc(N * sizeof *y1), *y2 = malloc(N * sizeof *y2);
    ck_assert(x && y1 && y2);
    for (int64_t i = 0; i < N; i++) {
        uint32_t u = (uint32_t)(i * 4099);
        memcpy(&x[i], &u, sizeof u);
    }
    const float scales[] = {1.0f, 0.37f, 1024.0f};
    for (int e5m2 = 0; e5m2 < 2; e5m2++)
        for (int zp = 0; zp < 2; zp++)
            for (int s = 0; s < 3; s++) {
                poprt__fp8_round_portable(x, y1, N, scales[s], e5m2, zp);
                v->fp8_round(x, y2, N, scales[s], e5m2, zp);
                for (int64_t i = 0; i < N; i++)
                    CHECK_MSG(memcmp(&y1[i], &y2[i], sizeof *y1) == 0,
                              "%s fp8_round e5m2 %d zp %d scale %g (%a) = %a, portable %a",
                              v->name, e5m2, zp, (double)scales[s], (double)x[i],
                              (double)y2[i], (double)y1[i]);
            }
    free(x);
    free(y1);
    free(y2);
}
END_TEST

/* float16 conversions: every table gives the portable bits for all 65536
 * float16 values, and for every 4099th float32 bit pattern plus the
 * rounding edges (halfway cases, the largest finite, subnormals); a NaN
 * only has to stay a NaN (F16C keeps payload bits the portable code does
 * not). Lengths 1..20 check the tails. */
START_TEST(test_half_conversions_same_bits)
{
    const poprt__vmath_variant *v = variant_or_skip(_i);
    if (!v)
        return;
    enum { NH = 65536, NF = 1048577 + 8 };
    uint16_t *h = malloc(NH * sizeof *h), *h1 = malloc(NF * sizeof *h1),
             *h2 = malloc(NF * sizeof *h2);
    float *f1 = malloc(NF * sizeof *f1), *f2 = malloc(NF * sizeof *f2), *x = malloc(NF * sizeof *x);
    ck_assert(h && h1 && h2 && f1 && f2 && x);
    for (int i = 0; i < NH; i++)
        h[i] = (uint16_t)i;
    poprt__half_to_float_portable(h, f1, NH);
    v->half_to_float(h, f2, NH);
    for (int i = 0; i < NH; i++)
        CHECK_MSG(isnan(f1[i]) ? isnan(f2[i]) : memcmp(&f1[i], &f2[i], sizeof *f1) == 0,
                  "%s half_to_float(0x%04x) = %a, portable %a", v->name, i, (double)f2[i],
                  (double)f1[i]);
    for (int64_t i = 0; i < NF - 8; i++) {
        uint32_t u = (uint32_t)(i * 4099);
        memcpy(&x[i], &u, sizeof u);
    }
    const float edges[8] = {65504.0f, 65519.996f, 65520.0f, 1.00048828125f /* halfway */,
                            1.00146484375f /* halfway, rounds up */, 5.9604645e-8f,
                            2.9802322e-8f /* half the smallest subnormal */, -0.0f};
    memcpy(x + NF - 8, edges, sizeof edges);
    poprt__float_to_half_portable(x, h1, NF);
    v->float_to_half(x, h2, NF);
    for (int64_t i = 0; i < NF; i++) {
        int nan1 = (h1[i] & 0x7c00) == 0x7c00 && (h1[i] & 0x3ff);
        int nan2 = (h2[i] & 0x7c00) == 0x7c00 && (h2[i] & 0x3ff);
        CHECK_MSG(nan1 ? nan2 : h1[i] == h2[i], "%s float_to_half(%a) = 0x%04x, portable 0x%04x",
                  v->name, (double)x[i], h2[i], h1[i]);
    }
    for (int n = 1; n <= 20; n++) { /* tails: nothing written past n */
        uint16_t hb[24];
        float fb[24];
        memset(hb, 0xab, sizeof hb);
        memset(fb, 0xab, sizeof fb);
        v->float_to_half(x + 1000, hb, n);
        v->half_to_float(h + 15000, fb, n);
        for (int i = 0; i < n; i++) {
            CHECK_MSG(hb[i] == h1[1000 + i], "%s float_to_half n %d [%d]", v->name, n, i);
            CHECK_MSG(memcmp(&fb[i], &f1[15000 + i], sizeof *fb) == 0,
                      "%s half_to_float n %d [%d]", v->name, n, i);
        }
        CHECK_MSG(hb[n] == 0xabab, "%s float_to_half wrote past n %d", v->name, n);
        uint32_t u;
        memcpy(&u, &fb[n], sizeof u);
        CHECK_MSG(u == 0xabababab, "%s half_to_float wrote past n %d", v->name, n);
    }
    free(h);
    free(h1);
    free(h2);
    free(f1);
    free(f2);
    free(x);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("vmath");
    TCase *tc = tcase_create("vmath");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, test_unary_accuracy, 0, N_TABLES);
    tcase_add_loop_test(tc, test_split_and_cross_variant, 0, N_TABLES);
    tcase_add_loop_test(tc, test_binary_exact, 0, N_TABLES);
    tcase_add_loop_test(tc, test_chain_same_bits, 0, N_TABLES);
    tcase_add_loop_test(tc, test_softmax_rows, 0, N_TABLES);
    tcase_add_loop_test(tc, test_sum, 0, N_TABLES);
    tcase_add_loop_test(tc, test_fp8_round_same_bits, 0, N_TABLES);
    tcase_add_loop_test(tc, test_half_conversions_same_bits, 0, N_TABLES);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
