/* merge_matmul_add (the CLI's --merge_matmul_add): MatMul + bias Add pairs
 * that read the same input become one MatMul over the concatenated
 * weights, one Add of the concatenated biases and a Split. Arguments as the
 * reference: "MatMul_1,Add_1,MatMul_2,Add_2" (or nodes=[...]); without
 * arguments every such group is merged (e.g. BERT's Q/K/V projections).
 * CPU meaning: one wider GEMM and one bias pass instead of several. The
 * merge_matmul* family (families.h). */
#include "passes/families.h"

static const poprt__merge_kind matmul_add = {"merge_matmul_add", 2, 1};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__merge_matmul(&matmul_add, m, args, changed);
}

const poprt__pass poprt__pass_merge_matmul_add = {
    "merge_matmul_add",
    "MatMul+Add pairs sharing an input (named: MatMul_1,Add_1,MatMul_2,Add_2; or all) -> one "
    "MatMul + one Add + Split",
    run, 2};
