/* Reference kernels of the 'poprt_fused' family (domain "ai.poprt"): the
 * operators the transformer passes produce (see docs/ops.md). Gelu and
 * LayerNorm reuse the ONNX kernels (same attributes and semantics). */
#ifndef POPRT_REF_POPRT_FUSED_H
#define POPRT_REF_POPRT_FUSED_H
#include "kernels/kernel.h"
#include "kernels/ref/gemm.h"

/* FusedAttention(X, Wqkv, Bqkv?, Mask?) -> Y: one BERT self-attention block. */
poprt_status poprt__ref_poprt_fused_attention(poprt__kctx *k);
/* PackedAttention(X, Wqkv, Bqkv?, MaskIn): as FusedAttention with the mask
 * given as the raw [B, S] 0/1 mask; keys at padding are skipped. */
poprt_status poprt__ref_poprt_packed_attention(poprt__kctx *k);
/* SegmentAttention(Q, K, V, Segments) -> Y: attention within runs of one
 * non-zero segment id over the flattened tokens (docs/ops.md), computed by
 * an implementation's head function per (segment, head) over the threads;
 * tokens of id 0 get zeros. */
typedef struct poprt__seg_impl {
    /* One segment and head: L tokens whose rows of Q, K and V lie ld
     * floats apart and of Y ldy apart (the pointers at the head's first
     * column), HD columns: Y = softmax(scale Q K^T + addk) V over the L
     * tokens, addk (NULL: none) one value per key added to every query's
     * scores (a padding mask). ws: ws_floats(L, HD) floats at least,
     * 64-byte aligned. */
    void (*head)(const float *q, const float *k, const float *v, int64_t ld, float *y,
                 int64_t ldy, const float *addk, int64_t L, int64_t HD, float scale, float *ws,
                 const poprt__vmath_variant *vm);
    size_t (*ws_floats)(int64_t max_len, int64_t HD);
    int64_t hd_step; /* head sizes it computes: multiples of hd_step (else the reference) */
} poprt__seg_impl;
/* The reference implementation (poprt__ref_sgemm per score block). */
extern const poprt__seg_impl poprt__seg_impl_ref;
poprt_status poprt__segment_attention_op(poprt__kctx *k, const poprt__seg_impl *impl);
/* FusedAttention computing its Q/K/V projection with e (the node's packed
 * Wqkv when its prepare made one) and, when the mask adds one value per key
 * (absent, or broadcast over heads and queries: encoders' padding masks)
 * and the head size suits impl, its heads with impl; any other mask runs
 * the reference's score blocks. */
poprt_status poprt__fused_attention_op(poprt__kctx *k, const poprt__gemm_engine *e,
                                       const poprt__seg_impl *impl);
/* MaskedAttention(Q, K, V [B, S, H], Mask?) -> Y [B, S, H]: the heads of
 * FusedAttention on projections computed elsewhere (the session compiler
 * makes it where the projections are not float MatMuls, e.g. int8 ones),
 * with impl as FusedAttention uses it. */
poprt_status poprt__masked_attention_op(poprt__kctx *k, const poprt__seg_impl *impl);
poprt_status poprt__ref_poprt_masked_attention(poprt__kctx *k);
poprt_status poprt__ref_poprt_segment_attention(poprt__kctx *k);
/* AttentionMask(M) -> (1 - M) * value, [B, S] -> [B, 1, 1, S]. */
poprt_status poprt__ref_poprt_attention_mask(poprt__kctx *k);
/* RotaryEmbedding(X, Cos, Sin) -> X * Cos + rotate_half(X) * Sin. */
poprt_status poprt__ref_poprt_rotary_embedding(poprt__kctx *k);

#endif
