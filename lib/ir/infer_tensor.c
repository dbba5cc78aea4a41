/* Operator family 'tensor': schemas and shape/type inference. */
#include "ir/op.h"
#include "kernels/ref/tensor.h"

const poprt__op *const poprt__ops_tensor[] = {
    NULL,
};
