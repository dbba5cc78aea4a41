/* merge_matmul (the CLI's --merge_matmul): MatMuls that read the same input
 * with constant 2-D weights of the same row count become one MatMul over
 * the column-concatenated weights, followed by a Split into the original
 * outputs. Arguments: the node names, "MatMul_1,MatMul_2" as in the
 * reference (or nodes=[...]); without arguments every such group is merged.
 * CPU meaning: the shared input is read (and packed by the GEMM) once and
 * one wider GEMM keeps the cores busy instead of several narrow ones. The
 * merge_matmul* family (families.h). */
#include "passes/families.h"

static const poprt__merge_kind matmul = {"merge_matmul", 1, 0};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__merge_matmul(&matmul, m, args, changed);
}

const poprt__pass poprt__pass_merge_matmul = {
    "merge_matmul",
    "MatMuls sharing an input (named: MatMul_1,MatMul_2; or all) -> one wider MatMul + Split: "
    "the input is read once, one GEMM instead of several",
    run, 2};
