/* Reference kernels of the 'attention' group (inference: lib/ir/infer_reduce.c). */
#ifndef POPRT_REF_ATTENTION_H
#define POPRT_REF_ATTENTION_H
#include "kernels/kernel.h"

/* ai.onnx Attention (23, 24) and LinearAttention. */
poprt_status poprt__ref_attention(poprt__kctx *k);
poprt_status poprt__ref_linear_attention(poprt__kctx *k);
/* ai.onnx.preview FlexAttention with score_mod / mask_mod / prob_mod graphs. */
poprt_status poprt__ref_flex_attention(poprt__kctx *k);
poprt_status poprt__ref_rotary_embedding(poprt__kctx *k);

#endif
