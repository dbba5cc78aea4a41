/* The portable vectorised math table and the function names (see vmath.h). */
#include "kernels/vmath.h"

const poprt__vmath_variant poprt__vmath_portable = POPRT__VMATH_TABLE(scalar, 0, 1,
                                                                     poprt__fp8_round_portable);

#define POPRT__VMATH_NAME(f) #f,
const char *const poprt__vmath_unary_names[POPRT__VMATH_N_UNARY] = {
    POPRT__VMATH_UNARY(POPRT__VMATH_NAME)};
const char *const poprt__vmath_binary_names[POPRT__VMATH_N_BINARY] = {
    POPRT__VMATH_BINARY(POPRT__VMATH_NAME)};
