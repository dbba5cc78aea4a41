/* Reference kernels of the 'reduce' family: Reduce*, ArgMax/ArgMin,
 * Softmax/LogSoftmax/Hardmax, Attention, LinearAttention and the two
 * classification losses. Schemas and inference live in lib/ir/infer_reduce.c. */
#ifndef POPRT_REF_REDUCE_H
#define POPRT_REF_REDUCE_H
#include "kernels/kernel.h"
#include "ir/geom.h"

/* All ten Reduce* ops (the node's op_type selects the reduction). */
poprt_status poprt__ref_reduce(poprt__kctx *k);
poprt_status poprt__ref_argmax(poprt__kctx *k);
poprt_status poprt__ref_argmin(poprt__kctx *k);
/* Softmax, LogSoftmax, Hardmax (opset < 13: coerced to 2-D at axis;
 * from 13: along one axis). */
poprt_status poprt__ref_softmax(poprt__kctx *k);
poprt_status poprt__ref_logsoftmax(poprt__kctx *k);
poprt_status poprt__ref_hardmax(poprt__kctx *k);
/* ai.onnx Attention (23, 24) and LinearAttention. */
poprt_status poprt__ref_attention(poprt__kctx *k);
poprt_status poprt__ref_linear_attention(poprt__kctx *k);
/* ai.onnx.preview FlexAttention with score_mod / mask_mod / prob_mod graphs. */
poprt_status poprt__ref_flex_attention(poprt__kctx *k);
poprt_status poprt__ref_rotary_embedding(poprt__kctx *k);
poprt_status poprt__ref_nllloss(poprt__kctx *k);
poprt_status poprt__ref_sce_loss(poprt__kctx *k);

/* Softmax family on float rows, shared with other kernels: y = op(x) along
 * rows of n contiguous elements (x and y may alias). mode 0 softmax,
 * 1 log-softmax, 2 hardmax. Sums in double, fixed order. */
void poprt__ref_softmax_row_f32(const float *x, float *y, int64_t n, int mode);

#endif
