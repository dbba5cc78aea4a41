/* Operator family 'control': schemas and shape/type inference. */
#include "ir/op.h"
#include "kernels/ref/control.h"

const poprt__op *const poprt__ops_control[] = {
    NULL,
};
