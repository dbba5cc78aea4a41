/* The portable vectorised math table and the function names (see vmath.h). */
#include "kernels/vmath.h"
#include "ir/dtype.h"
#include "ir/fused_elementwise.h"

int poprt__vmath_chain_takes(const poprt__vmath_step *steps, int n_steps)
{
    for (int i = 0; i < n_steps; i++)
        switch (steps[i].op) {
        case POPRT__EW_ADD:
        case POPRT__EW_SUB:
        case POPRT__EW_MUL:
        case POPRT__EW_DIV:
        case POPRT__EW_MAX:
        case POPRT__EW_MIN:
        case POPRT__EW_RELU:
        case POPRT__EW_LEAKY_RELU:
        case POPRT__EW_CLIP:
        case POPRT__EW_HARD_SIGMOID:
        case POPRT__EW_HARD_SWISH: break;
        default: return 0;
        }
    return 1;
}

void poprt__half_to_float_portable(const uint16_t *x, float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = poprt__half_to_float(x[i]);
}

void poprt__float_to_half_portable(const float *x, uint16_t *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = poprt__float_to_half(x[i]);
}

const poprt__vmath_variant poprt__vmath_portable =
    POPRT__VMATH_TABLE(scalar, 0, 1, poprt__fp8_round_portable, poprt__half_to_float_portable,
                       poprt__float_to_half_portable);

#define POPRT__VMATH_NAME(f) #f,
const char *const poprt__vmath_unary_names[POPRT__VMATH_N_UNARY] = {
    POPRT__VMATH_UNARY(POPRT__VMATH_NAME)};
const char *const poprt__vmath_binary_names[POPRT__VMATH_N_BINARY] = {
    POPRT__VMATH_BINARY(POPRT__VMATH_NAME)};
