/* ai.poprt.SegmentAttention's head function (lib/kernels/ref/poprt_fused.h,
 * poprt__seg_impl) vectorised per ISA: attention_body.inc compiled by
 * attention_avx512.c and attention_avx2.c with their own -m flags and, at
 * baseline flags, by attention.c as the portable instance; the list of them
 * is attention_kernels.inc, and attention.c the registry's entry.
 *
 * Per block of 16 queries of a segment (a 16-lane vector type: one zmm, two
 * ymm or four xmm):
 *   scores  S^T[j][q] = sum_d K[j][d] * (scale * Q[q][d]), d in order, 8 keys
 *           at a time against the block's queries transposed;
 *   softmax down each column: max over j, exp(S - max) (the vmath table's
 *           exp), the sum over j in order; no horizontal reductions;
 *   output  Y[q][d] = (sum_j E[j][q] * V[j][d]) / sum[q], 8 queries x 16
 *           columns at a time, V read in place.
 * The AVX instances multiply-add with FMA, the portable one with a multiply
 * and an add, so their last bits may differ; within one instance the
 * result does not depend on the thread count or the segment's position.
 * Head sizes must be multiples of 16 (others run the reference head).
 * ws: 16 x (HD + L) floats. */
#ifndef POPRT_X86_ATTENTION_H
#define POPRT_X86_ATTENTION_H

#include <stdint.h>
#include "kernels/kernel.h"
#include "kernels/x86/cpu.h"

typedef void (*poprt__attn_head_fn)(const float *q, const float *k, const float *v, int64_t ld,
                                    float *y, int64_t ldy, const float *addk, int64_t L,
                                    int64_t HD, float scale, float *ws,
                                    const poprt__vmath_variant *vm);

typedef struct poprt__attn_variant {
    const char *name; /* "avx512", "avx2", "scalar" */
    poprt__isa isa;   /* level the CPU must have */
    poprt__attn_head_fn head;
} poprt__attn_variant;

/* The kernel list (attention_kernels.inc), best first; the last is portable. */
extern const poprt__attn_variant poprt__attn_variants[];
extern const int poprt__attn_n_variants;
/* 1 when the CPU (after POPRT_ISA) can run v. */
int poprt__attn_usable(const poprt__attn_variant *v);
/* The first usable variant (never NULL). */
const poprt__attn_variant *poprt__attn_best(void);
/* The registry's ai.poprt.SegmentAttention: the best variant's head. */
poprt_status poprt__x86_segment_attention(poprt__kctx *k);
/* The registry's ai.poprt.FusedAttention: the projection on the fast GEMM
 * (Wqkv packed by poprt__x86_matmul_prepare), the heads on the best
 * variant's head. */
poprt_status poprt__x86_fused_attention(poprt__kctx *k);
/* The registry's ai.poprt.MaskedAttention: the heads on the best variant's head. */
poprt_status poprt__x86_masked_attention(poprt__kctx *k);

/* SegmentAttention's and MaskedAttention's prepare: a small state saying the
 * session multiplies in bfloat16 (matmul_precision), or none. */
poprt_status poprt__x86_attention_prepare(poprt__prep_ctx *c, void **state, size_t *size);
/* The head on AMX tiles in bfloat16 (attention_amx.c; HD a multiple of 32,
 * AMX usable), and its workspace in floats. */
void poprt__attn_head_amxbf16(const float *q, const float *k, const float *v, int64_t ld,
                              float *y, int64_t ldy, const float *addk, int64_t L, int64_t HD,
                              float scale, float *ws, const poprt__vmath_variant *vm);
size_t poprt__attn_amx_ws_floats(int64_t max_len, int64_t HD);

#define POPRT__ATTN_VARIANT(isa, level)                                                      \
    void poprt__attn_head_##isa(const float *q, const float *k, const float *v, int64_t ld,  \
                                float *y, int64_t ldy, const float *addk, int64_t L,         \
                                int64_t HD, float scale, float *ws,                          \
                                const poprt__vmath_variant *vm);
#include "kernels/x86/attention_kernels.inc"
#undef POPRT__ATTN_VARIANT

#endif
