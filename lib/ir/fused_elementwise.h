/* The step codes of ai.poprt FusedElementwise (and FusedConv's post_ops):
 * the contract between the compiler that writes them (lib/compiler), the
 * inference that checks them (lib/ir/infer_poprt_compiled.c) and the kernels
 * that run them. docs/ops.md describes the op. */
#ifndef POPRT_IR_FUSED_ELEMENTWISE_H
#define POPRT_IR_FUSED_ELEMENTWISE_H

#include <stdint.h>

enum {
    POPRT__EW_ADD = 1,
    POPRT__EW_SUB = 2,
    POPRT__EW_MUL = 3,
    POPRT__EW_DIV = 4,
    POPRT__EW_MAX = 5,
    POPRT__EW_MIN = 6,
    POPRT__EW_RELU = 20,
    POPRT__EW_LEAKY_RELU = 21,  /* alpha */
    POPRT__EW_CLIP = 22,        /* alpha = min, beta = max */
    POPRT__EW_SIGMOID = 23,
    POPRT__EW_HARD_SIGMOID = 24, /* alpha, beta */
    /* alpha 0: the operator's x * max(0, min(1, x / 6 + 1/2)); else as a
     * graph writes it, c = Clip(x + 3, 0, 6) then, by beta, 0: (x c) / alpha,
     * 1: (x c) * alpha, 2: x (c / alpha), 3: x (c * alpha) */
    POPRT__EW_HARD_SWISH = 25,
    POPRT__EW_TANH = 26,
    POPRT__EW_EXP = 27,
    POPRT__EW_LOG = 28,
    POPRT__EW_ERF = 29,
    POPRT__EW_NEG = 30,
    POPRT__EW_ABS = 31,
    POPRT__EW_SQRT = 32,
    POPRT__EW_RECIPROCAL = 33,
    POPRT__EW_SOFTPLUS = 34,
    /* QuantizeLinear to float8 then DequantizeLinear, same per-tensor scale
     * (alpha), saturating: acc rounded to the float8 grid times the scale.
     * beta 1: the QuantizeLinear had a (zero) zero point, so it computed
     * acc / scale + 0, which turns -0 into +0 */
    POPRT__EW_FP8_E4M3FN = 35,
    POPRT__EW_FP8_E5M2 = 36,
    POPRT__EW_GELU = 37,      /* Gelu, erf form */
    POPRT__EW_GELU_TANH = 38, /* Gelu with approximate = "tanh" */
    POPRT__EW_SWISH = 39,     /* x * Sigmoid(alpha * x) */
};
#define POPRT__EW_MAX_STEPS 32

/* 1 when op is a binary step (takes an operand). */
int poprt__ew_is_binary(int64_t op);
/* 1 when op is a known step code. */
int poprt__ew_known(int64_t op);

#endif
