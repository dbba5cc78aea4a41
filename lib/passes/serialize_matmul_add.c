/* serialize_matmul_add: a MatMul with constant weight [K, N] and its bias
 * Add become `factor` MatMul + Add pieces over column slices of the weight
 * and bias, concatenated on the last axis.
 * Arguments: factor=F[,nodes=[MatMul_1,...]] (the Add is the MatMul's only
 * reader; all such pairs when nodes is absent), or the reference's
 * MATMUL_NAME/ADD_NAME=F entries. Without a factor nothing changes.
 * CPU meaning: each piece touches 1/F of the weight and output, bounding
 * the working set; each output is the same dot product, so results agree
 * to rounding (the GEMM may block a narrower product differently). The
 * serialize_matmul* family (families.h). */
#include "passes/families.h"

static const poprt__serialize_kind matmul_add = {"serialize_matmul_add", 1};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__serialize_matmul(&matmul_add, m, args, changed);
}

const poprt__pass poprt__pass_serialize_matmul_add = {
    "serialize_matmul_add",
    "MatMul+bias Add -> `factor` column pieces (MatMul+Add each) joined by Concat: bounds each "
    "GEMM's working set",
    run, 1};
