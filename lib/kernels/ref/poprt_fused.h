/* Reference kernels of the 'poprt_fused' family (domain "ai.poprt"): the
 * operators the transformer passes produce (see docs/ops.md). Gelu and
 * LayerNorm reuse the ONNX kernels (same attributes and semantics). */
#ifndef POPRT_REF_POPRT_FUSED_H
#define POPRT_REF_POPRT_FUSED_H
#include "kernels/kernel.h"

/* FusedAttention(X, Wqkv, Bqkv?, Mask?) -> Y: one BERT self-attention block. */
poprt_status poprt__ref_poprt_fused_attention(poprt__kctx *k);
/* PackedAttention(X, Wqkv, Bqkv?, MaskIn): as FusedAttention with the mask
 * given as the raw [B, S] 0/1 mask; keys at padding are skipped. */
poprt_status poprt__ref_poprt_packed_attention(poprt__kctx *k);
/* AttentionMask(M) -> (1 - M) * value, [B, S] -> [B, 1, 1, S]. */
poprt_status poprt__ref_poprt_attention_mask(poprt__kctx *k);
/* RotaryEmbedding(X, Cos, Sin) -> X * Cos + rotate_half(X) * Sin. */
poprt_status poprt__ref_poprt_rotary_embedding(poprt__kctx *k);

#endif
