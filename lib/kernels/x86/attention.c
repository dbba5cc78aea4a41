/* The SegmentAttention head list and its dispatch (see attention.h), the
 * portable instance of the head function (baseline flags) and the
 * registry's entry. */
#include "kernels/x86/attention.h"
#include "kernels/ref/poprt_fused.h"
#include "kernels/x86/gemm_ops.h"

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

poprt_status poprt__x86_segment_attention(poprt__kctx *k)
{
    const poprt__seg_impl impl = {poprt__attn_best()->head, ws_floats, 16};
    return poprt__segment_attention_op(k, &impl);
}

poprt_status poprt__x86_fused_attention(poprt__kctx *k)
{
    const poprt__seg_impl impl = {poprt__attn_best()->head, ws_floats, 16};
    return poprt__fused_attention_op(k, &poprt__x86_matmul_engine, &impl);
}

poprt_status poprt__x86_masked_attention(poprt__kctx *k)
{
    const poprt__seg_impl impl = {poprt__attn_best()->head, ws_floats, 16};
    return poprt__masked_attention_op(k, &impl);
}
