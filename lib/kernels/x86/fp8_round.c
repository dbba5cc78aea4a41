/* float32 to the float8 grid and back, one clone per vector width (see
 * fp8_round.h; the loop is lib/kernels/fp8.h's, whose clones agree). */
#include "core/core.h"
#include "kernels/x86/fp8_round.h"

POPRT__CLONES
static void fp8_round(const float *src, float *dst, int64_t n, float scale, int e5m2, int zp)
{
    poprt__fp8_round_loop(src, dst, n, scale, e5m2, zp);
}

/* (a target_clones function gets an exported resolver: the clones stay
 * static behind this entry point) */
void poprt__fp8_round(const float *src, float *dst, int64_t n, float scale, int e5m2, int zp)
{
    fp8_round(src, dst, n, scale, e5m2, zp);
}
