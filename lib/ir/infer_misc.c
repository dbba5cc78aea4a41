/* Operator family 'misc': schemas and shape/type inference. */
#include "ir/op.h"
#include "kernels/ref/misc.h"

const poprt__op *const poprt__ops_misc[] = {
    NULL,
};
