/* float32 to the float8 grid and back, portable (see fp8.h). */
#include "kernels/fp8.h"

void poprt__fp8_round_portable(const float *src, float *dst, int64_t n, float scale, int e5m2,
                               int zero_point)
{
    poprt__fp8_round_loop(src, dst, n, scale, e5m2, zero_point);
}
