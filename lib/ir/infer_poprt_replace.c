/* Operator family 'poprt_replace': libpoprt's own operators (domain "ai.poprt"),
 * produced by passes; schemas and shape/type inference. */
#include "ir/op.h"
#include "kernels/ref/poprt_replace.h"

const poprt__op *const poprt__ops_poprt_replace[] = {
    NULL,
};
