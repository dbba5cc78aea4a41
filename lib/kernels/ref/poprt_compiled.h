/* Kernels of the 'poprt_compiled' family (domain "ai.poprt"): operators the
 * session compiler makes when it fuses nodes (lib/compiler), described in
 * docs/ops.md.
 *
 * FusedElementwise(X, T1, ..., Tk) -> Y runs a chain of float32 elementwise
 * steps over X without writing the intermediate tensors:
 *   acc = X;  for each step s: acc = f_s(acc [, operand_s]);  Y = acc
 * Attributes, one entry per step:
 *   ops      INTS    the operation (POPRT__EW_*, lib/ir/fused_elementwise.h)
 *   operand  INTS    -1: none (unary) or the scalar `alpha` (binary);
 *                    i >= 0: input i (0 is X itself)
 *   reverse  INTS    1: the operand is the left-hand side (operand - acc)
 *   alpha    FLOATS  the scalar operand, or the op's first parameter
 *   beta     FLOATS  the op's second parameter
 * A tensor operand either has Y's shape or broadcasts to it over one
 * contiguous run of axes [first, last] (its other dims are 1): a per-channel
 * [C,1,1] against [N,C,H,W], [N,C,1,1], a bias [C] against [N,S,C], a scalar.
 * Each step computes exactly what the ONNX operator it replaces computes
 * (same vectorised functions), so results match the unfused graph bit for
 * bit. */
#ifndef POPRT_REF_POPRT_COMPILED_H
#define POPRT_REF_POPRT_COMPILED_H
#include "kernels/kernel.h"
#include "ir/fused_elementwise.h"

poprt_status poprt__ref_poprt_fused_elementwise(poprt__kctx *k);

/* A step with no tensor operand (unary, or binary with the scalar alpha;
 * reverse: alpha is the left-hand side), as FusedElementwise runs it. */
typedef poprt__vmath_step poprt__ew_scalar_step;
/* y = steps(y) in place over n floats, in cache-sized blocks, with vm's
 * functions. */
void poprt__ew_scalar_run(const poprt__vmath_variant *vm, const poprt__ew_scalar_step *steps,
                          int n_steps, float *y, int64_t n);
/* Reads steps from the node's attributes names = {ops (INTS), reverse
 * (INTS), alpha (FLOATS), beta (FLOATS)} (ops absent: *n_steps 0);
 * INVALID_MODEL naming them when malformed. */
poprt_status poprt__ew_scalar_read(const poprt__node *n, const char *const names[4],
                                   poprt__ew_scalar_step *steps, int *n_steps);

#endif
