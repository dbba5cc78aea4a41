/* Operator family 'poprt_fused': libpoprt's own operators (domain "ai.poprt"),
 * produced by passes; schemas and shape/type inference. */
#include "ir/op.h"
#include "kernels/ref/poprt_fused.h"

const poprt__op *const poprt__ops_poprt_fused[] = {
    NULL,
};
