/* merge_matmul_add (the CLI's --merge_matmul_add): MatMul + bias Add pairs
 * that read the same input become one MatMul over the concatenated
 * weights, one Add of the concatenated biases and a Split. Arguments as the
 * reference: "MatMul_1,Add_1,MatMul_2,Add_2" (or nodes=[...]); without
 * arguments every such group is merged (e.g. BERT's Q/K/V projections).
 * CPU meaning: one wider GEMM and one bias pass instead of several. */
#include "passes/transformer.h"

poprt_status poprt__tf_merge_run(poprt__model *m, const char *pass, const char *args, int stride,
                                 int with_add, int *changed);

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__tf_merge_run(m, "merge_matmul_add", args, 2, 1, changed);
}

const poprt__pass poprt__pass_merge_matmul_add = {
    "merge_matmul_add",
    "MatMul+Add pairs sharing an input (named: MatMul_1,Add_1,MatMul_2,Add_2; or all) -> one "
    "MatMul + one Add + Split",
    run, 2};
