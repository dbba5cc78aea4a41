/* Operator family 'sequence': schemas and shape/type inference. */
#include "ir/op.h"
#include "kernels/ref/sequence.h"

const poprt__op *const poprt__ops_sequence[] = {
    NULL,
};
