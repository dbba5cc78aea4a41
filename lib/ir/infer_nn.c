/* Operator family 'nn': schemas and shape/type inference. */
#include "ir/op.h"
#include "kernels/ref/nn.h"

const poprt__op *const poprt__ops_nn[] = {
    NULL,
};
