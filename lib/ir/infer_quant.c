/* Operator family 'quant': schemas and shape/type inference. */
#include "ir/op.h"
#include "kernels/ref/quant.h"

const poprt__op *const poprt__ops_quant[] = {
    NULL,
};
