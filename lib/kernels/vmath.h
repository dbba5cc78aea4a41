/* Vectorised float32 math: exp, log, tanh, erf, sigmoid, GELU (erf and tanh
 * forms) and the activations built on them, fast binary Add/Sub/Mul/Div and
 * fused softmax rows, as a table of function pointers.
 *
 * One algorithm (vmath_body.inc) is instantiated on a handful of vector
 * primitives: here once in portable one-lane C (vmath_scalar.c, the table
 * poprt__vmath_portable), and per ISA by the architecture folders
 * (lib/kernels/x86/vmath.h: AVX-512, 16 lanes; AVX2+FMA, 8 lanes), which
 * list their tables best first and pick the one the CPU runs. Every lane
 * runs the same instruction sequence and the tail of an array goes through
 * the same vector code (partial loads), so an element's bits do not depend
 * on where a thread's range starts or ends: splitting an array across
 * threads never changes results. AVX-512 and AVX2 give identical bits for
 * the unary and binary functions (same IEEE ops, same FMAs); the portable
 * table has no FMA and may differ in the last bits.
 *
 * Kernels never choose a table: the one they use comes with their context
 * (poprt__kctx_vmath, lib/kernels/kernel.h), filled by whoever runs them
 * with the table poprt__kernels_vmath() chose; without one they use the
 * portable table.
 *
 * Accuracy (max error vs libm in double, measured by tests/unit/test_vmath.c
 * over wide ranges; results that are subnormal are compared in absolute
 * terms): exp, log, sigmoid <= 2 ulp; tanh, erf <= 3 ulp; gelu, gelu_tanh,
 * softplus, mish, swish, elu, selu, celu <= 4 ulp (see the test for exact
 * bounds per variant). NaN in gives NaN out; overflow gives inf and
 * underflow 0 (or a subnormal) like libm; log of a negative is NaN, of 0
 * -inf.
 *
 * Nothing here allocates or keeps state; all functions are thread-safe. */
#ifndef POPRT_KERNELS_VMATH_H
#define POPRT_KERNELS_VMATH_H

#include <stdint.h>
#include "kernels/fp8.h"

/* Parameters of the parametrised activations (ONNX attribute names):
 *   leaky_relu: alpha     elu, celu: alpha     selu: alpha, gamma
 *   swish: alpha (x * sigmoid(alpha x))     hard_sigmoid: alpha, beta */
typedef struct poprt__vmath_param {
    float alpha, beta, gamma;
} poprt__vmath_param;

/* The unary functions y[i] = f(x[i]), i < n (x == y allowed):
 *   square, cube: x*x, x*x*x (Pow with exponent 2, 3)
 *   pow_half: pow(x, 0.5) (sqrt, with pow's +0 for -0 and +inf for -inf)
 *   clip: x < alpha ? alpha : x, then > beta ? beta : (NaN stays NaN)
 *   x_relu6: a HardSwish as a graph writes it, c = Clip(x + 3, 0, 6), then
 *     beta 0: (x c) / alpha, 1: (x c) alpha, 2: x (c / alpha), 3: x (c alpha)
 *     (each operation rounded as its node would) */
#define POPRT__VMATH_UNARY(X)                                                                \
    X(exp) X(log) X(tanh) X(erf) X(sigmoid) X(gelu) X(gelu_tanh) X(softplus) X(mish)         \
    X(swish) X(elu) X(selu) X(celu) X(relu) X(leaky_relu) X(hard_sigmoid) X(hard_swish)      \
    X(square) X(cube) X(pow_half) X(clip) X(x_relu6)

/* The binary functions y[i] = a[i*sa] op b[i*sb] with sa, sb in {0, 1}
 * (not both 0); IEEE results (Div is a true division). max, min: as ONNX
 * Max / Min compute them, (a != a || a > b) ? a : b (a NaN on either side
 * gives NaN; which zero comes back from max(-0, +0) follows the order). */
#define POPRT__VMATH_BINARY(X) X(add) X(sub) X(mul) X(div) X(max) X(min)

enum {
#define POPRT__VMATH_ENUM(f) POPRT__VMATH_##f,
    POPRT__VMATH_UNARY(POPRT__VMATH_ENUM) POPRT__VMATH_N_UNARY
};
enum { POPRT__VMATH_BINARY(POPRT__VMATH_ENUM) POPRT__VMATH_N_BINARY };
#undef POPRT__VMATH_ENUM

typedef void (*poprt__vmath_unary_fn)(const float *x, float *y, int64_t n,
                                      const poprt__vmath_param *p);
typedef void (*poprt__vmath_binary_fn)(const float *a, int64_t sa, const float *b, int64_t sb,
                                       float *y, int64_t n);
/* One softmax row: mode 0 y = softmax(x), mode 1 y = log(softmax(x)); x == y
 * allowed. Max-subtract, exp and sum are fused; any NaN makes the row NaN. */
typedef void (*poprt__vmath_softmax_fn)(const float *x, float *y, int64_t n, int mode);
/* Sum of x[0..n) in float lanes (fixed order for a given n). */
typedef float (*poprt__vmath_sum_fn)(const float *x, int64_t n);

/* One step of a chain (poprt__vmath_variant.chain): op is a POPRT__EW_*
 * code of lib/ir/fused_elementwise.h; binary ops take the scalar alpha as
 * their right-hand side (reverse: left); the activations read alpha / beta
 * as FusedElementwise's steps do. */
typedef struct poprt__vmath_step {
    int op, reverse;
    float alpha, beta;
} poprt__vmath_step;
/* y = steps(y) in place over n floats, every step of a vector in
 * registers, each computed as the table's own function for it computes it
 * (so the bits of running the steps one by one). Only the steps
 * poprt__vmath_chain_takes accepts. */
typedef void (*poprt__vmath_chain_fn)(const poprt__vmath_step *steps, int n_steps, float *y,
                                      int64_t n);
/* 1 when every step is one the chains compute: Add, Sub, Mul, Div, Max,
 * Min with a scalar, Relu, LeakyRelu, Clip, HardSigmoid, HardSwish (both
 * forms). */
int poprt__vmath_chain_takes(const poprt__vmath_step *steps, int n_steps);

/* float16 <-> float32 of n elements: IEEE binary16, round to nearest even
 * (as poprt__float_to_half); every table gives the same bits except for the
 * payload of a NaN (a NaN stays a NaN). */
typedef void (*poprt__half_to_float_fn)(const uint16_t *x, float *y, int64_t n);
typedef void (*poprt__float_to_half_fn)(const float *x, uint16_t *y, int64_t n);
void poprt__half_to_float_portable(const uint16_t *x, float *y, int64_t n);
void poprt__float_to_half_portable(const float *x, uint16_t *y, int64_t n);

typedef struct poprt__vmath_variant {
    const char *name; /* "avx512", "avx2", "scalar" */
    int isa;          /* level the CPU must have, on the scale of the list it
                         is in (x86: poprt__isa); 0: runs anywhere */
    int width;        /* lanes */
    poprt__vmath_unary_fn unary[POPRT__VMATH_N_UNARY];
    poprt__vmath_binary_fn binary[POPRT__VMATH_N_BINARY];
    poprt__vmath_softmax_fn softmax;
    poprt__vmath_sum_fn sum;
    poprt__vmath_chain_fn chain;
    /* float32 to the float8 grid and back (kernels/fp8.h); every table's
     * gives the same bits */
    poprt__fp8_round_fn fp8_round;
    /* float16 conversions (Cast, float16 inputs and outputs) */
    poprt__half_to_float_fn half_to_float;
    poprt__float_to_half_fn float_to_half;
} poprt__vmath_variant;

/* The portable table ("scalar", one lane of plain C, level 0). */
extern const poprt__vmath_variant poprt__vmath_portable;
/* Names of the functions, indexed like the tables ("exp", ...). */
extern const char *const poprt__vmath_unary_names[POPRT__VMATH_N_UNARY];
extern const char *const poprt__vmath_binary_names[POPRT__VMATH_N_BINARY];

/* The functions of one instance of vmath_body.inc, named
 * poprt__vmath_<isa>_<function>: POPRT__VMATH_DECLARE(isa) declares them,
 * POPRT__VMATH_TABLE(isa, level, lanes, fp8, h2f, f2h) is a poprt__vmath_variant
 * initialiser over them, the float8 rounding fp8 and the float16
 * conversions h2f, f2h. */
#define POPRT__VMATH_DECL_U(isa, f)                                                          \
    void poprt__vmath_##isa##_##f(const float *x, float *y, int64_t n,                       \
                                  const poprt__vmath_param *p);
#define POPRT__VMATH_DECL_B(isa, f)                                                          \
    void poprt__vmath_##isa##_##f(const float *a, int64_t sa, const float *b, int64_t sb,    \
                                  float *y, int64_t n);
#define POPRT__VMATH_DECLARE(isa)                                                            \
    POPRT__VMATH_UNARY(POPRT__VMATH_DECL_U_##isa)                                            \
    POPRT__VMATH_BINARY(POPRT__VMATH_DECL_B_##isa)                                           \
    void poprt__vmath_##isa##_softmax(const float *x, float *y, int64_t n, int mode);         \
    float poprt__vmath_##isa##_sum(const float *x, int64_t n);                                \
    void poprt__vmath_##isa##_chain(const poprt__vmath_step *steps, int n_steps, float *y,    \
                                    int64_t n);
#define POPRT__VMATH_TABLE(isa, level, lanes, fp8, h2f, f2h)                                 \
    {#isa,                                                                                   \
     level,                                                                                  \
     lanes,                                                                                  \
     {POPRT__VMATH_UNARY(POPRT__VMATH_PTR_##isa)},                                           \
     {POPRT__VMATH_BINARY(POPRT__VMATH_PTR_##isa)},                                          \
     poprt__vmath_##isa##_softmax,                                                           \
     poprt__vmath_##isa##_sum,                                                               \
     poprt__vmath_##isa##_chain,                                                             \
     fp8,                                                                                    \
     h2f,                                                                                    \
     f2h}
/* (X-macros pass only the function: one helper per instance) */
#define POPRT__VMATH_DECL_U_scalar(f) POPRT__VMATH_DECL_U(scalar, f)
#define POPRT__VMATH_DECL_B_scalar(f) POPRT__VMATH_DECL_B(scalar, f)
#define POPRT__VMATH_PTR_scalar(f) poprt__vmath_scalar_##f,
POPRT__VMATH_DECLARE(scalar)

#endif
