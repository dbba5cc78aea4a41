/* The SegmentAttention head list and its dispatch (see attention.h), the
 * portable instance of the head function (baseline flags) and the
 * registry's entry. */
#include "kernels/x86/attention.h"
#include "kernels/ref/poprt_fused.h"
#include "kernels/x86/gemm_ops.h"
#include "kernels/x86/sgemm.h"
#include <string.h>

#define AT_HEAD_NAME poprt__attn_head_scalar
#include "kernels/x86/attention_body.inc"
#undef AT_HEAD_NAME

#define POPRT__ATTN_VARIANT(isa, level) {#isa, level, poprt__attn_head_##isa},
const poprt__attn_variant poprt__attn_variants[] = {
#include "kernels/x86/attention_kernels.inc"
};
#undef POPRT__ATTN_VARIANT
const int poprt__attn_n_variants =
    (int)(sizeof poprt__attn_variants / sizeof poprt__attn_variants[0]);

int poprt__attn_usable(const poprt__attn_variant *v)
{
    return v && poprt__cpu_features()->isa >= v->isa;
}

const poprt__attn_variant *poprt__attn_best(void)
{
    const int i = POPRT__ISA_FIRST(poprt__attn_variants, poprt__attn_n_variants);
    return &poprt__attn_variants[i < 0 ? poprt__attn_n_variants - 1 : i];
}

static size_t ws_floats(int64_t max_len, int64_t HD)
{
    return (size_t)(16 * (HD + max_len));
}

/* ---- bfloat16 heads (matmul_precision = bfloat16) ---------------------------
 * A node prepared for a bfloat16 session says so in its state (FusedAttention:
 * its Wqkv packed for a bfloat16 variant; SegmentAttention and
 * MaskedAttention: the state below); its heads then run on AMX tiles where
 * the CPU has them (head sizes a multiple of 32), else in float32. */
#define ATTN_BF16_MAGIC 0x31464241525050ull /* "PPRABF1" */

poprt_status poprt__x86_attention_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (!(c->flags & POPRT__PREP_MATMUL_BF16))
        return POPRT_OK;
    uint64_t *blob = poprt__aligned_alloc(64);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory preparing attention");
    memset(blob, 0, 64);
    blob[0] = ATTN_BF16_MAGIC;
    *state = blob;
    *size = 64;
    return POPRT_OK;
}

static int amx_heads(void)
{
    const poprt__sgemm_variant *bf = poprt__sgemm_best_bf16();
    return bf && bf->isa == POPRT__ISA_AMX;
}

/* AMX for head sizes it takes, the float32 head for others */
static void head_bf16(const float *q, const float *k, const float *v, int64_t ld, float *y,
                      int64_t ldy, const float *addk, int64_t L, int64_t HD, float scale,
                      float *ws, const poprt__vmath_variant *vm)
{
    if (HD % 32 == 0)
        poprt__attn_head_amxbf16(q, k, v, ld, y, ldy, addk, L, HD, scale, ws, vm);
    else
        poprt__attn_best()->head(q, k, v, ld, y, ldy, addk, L, HD, scale, ws, vm);
}

static size_t ws_floats_bf16(int64_t max_len, int64_t HD)
{
    const size_t a = poprt__attn_amx_ws_floats(max_len, HD), b = ws_floats(max_len, HD);
    return a > b ? a : b;
}

/* The heads for node state: bfloat16 ones when it says bf16 (the magic, or
 * a bfloat16 packed Wqkv) and the CPU has AMX. */
static poprt__seg_impl impl_of(const poprt__kctx *k)
{
    uint64_t magic = 0;
    if (k->state && k->state_size >= sizeof magic)
        memcpy(&magic, k->state, sizeof magic);
    const int bf16 = magic == ATTN_BF16_MAGIC || poprt__x86_state_bf16(k->state, k->state_size);
    if (bf16 && amx_heads())
        return (poprt__seg_impl){head_bf16, ws_floats_bf16, 16};
    return (poprt__seg_impl){poprt__attn_best()->head, ws_floats, 16};
}

poprt_status poprt__x86_segment_attention(poprt__kctx *k)
{
    const poprt__seg_impl impl = impl_of(k);
    return poprt__segment_attention_op(k, &impl);
}

poprt_status poprt__x86_fused_attention(poprt__kctx *k)
{
    const poprt__seg_impl impl = impl_of(k);
    return poprt__fused_attention_op(k, &poprt__x86_matmul_engine, &impl);
}

poprt_status poprt__x86_masked_attention(poprt__kctx *k)
{
    const poprt__seg_impl impl = impl_of(k);
    return poprt__masked_attention_op(k, &impl);
}
