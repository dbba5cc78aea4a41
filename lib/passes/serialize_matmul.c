/* serialize_matmul: one MatMul becomes `factor` smaller ones.
 *   mode output_channels (default): constant weight [K, N] split by
 *     columns, the pieces' results concatenated on the last axis;
 *   input_channels: the input split along its rows (M), results
 *     concatenated on axis -2;
 *   reducing_dim: input split along K and the weight by rows, the partial
 *     products added with Sum;
 *   none: no change.
 * Arguments: factor=F,mode=M[,nodes=[a,b]] (all MatMuls the mode applies to
 * when nodes is absent), or the reference's NAME=F[/MODE[/KEEP_PRECISION]]
 * entries; keep_precision is accepted (partial products are float32 here).
 * Without a factor nothing changes.
 * CPU meaning: each piece's weight and output are 1/F of the original, so
 * the working set of one GEMM is bounded (fits a cache level or a memory
 * budget); results agree with the original to rounding (reducing_dim adds
 * the partial sums in a different order). The serialize_matmul* family
 * (families.h). */
#include "passes/families.h"

static const poprt__serialize_kind matmul = {"serialize_matmul", 0};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__serialize_matmul(&matmul, m, args, changed);
}

const poprt__pass poprt__pass_serialize_matmul = {
    "serialize_matmul",
    "split MatMuls into `factor` pieces along N (output_channels), M (input_channels) or K "
    "(reducing_dim) and join with Concat/Sum: bounds each GEMM's working set",
    run, 1};
