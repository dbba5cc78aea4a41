/* Conv and FusedConv as the registry runs them (x86/conv.c). */
#ifndef POPRT_X86_CONV_H
#define POPRT_X86_CONV_H
#include "kernels/kernel.h"

poprt_status poprt__x86_conv(poprt__kctx *k);
poprt_status poprt__x86_fused_conv(poprt__kctx *k); /* ai.poprt FusedConv */
/* float32 weights packed for the path the conv will take on this CPU. */
poprt_status poprt__x86_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size);
/* 1 when convolutions under matmul_precision = bfloat16 take the blocked
 * path on this CPU (channel-pair words, NCHW16c operands): AVX512-BF16
 * without AMX tiles (with them, the tile paths, on NCHW operands). */
int poprt__x86_conv_bf16_blocked(void);

#endif
