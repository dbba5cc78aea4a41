/* Reference kernels of the 'ml' group (ai.onnx.ml). */
#ifndef POPRT_REF_ML_H
#define POPRT_REF_ML_H
#include "kernels/kernel.h"

poprt_status poprt__ref_binarizer(poprt__kctx *k);
poprt_status poprt__ref_tree_ensemble(poprt__kctx *k);

/* ai.onnx.ml post_transform (0 NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO,
 * 4 PROBIT) applied in place to n scores. */
void poprt__misc_post_transform(double *v, int64_t n, int post);

#endif
