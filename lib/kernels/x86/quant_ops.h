/* MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv, QuantizeLinear and
 * DynamicQuantizeLinear as the registry runs them: the integer GEMM
 * (igemm.h) and its vectorised quantization where the shapes and types
 * allow, else the reference kernels (ref/quant.h), with the same bits; and
 * the packing of constant weights when a session is compiled. */
#ifndef POPRT_X86_QUANT_OPS_H
#define POPRT_X86_QUANT_OPS_H
#include "kernels/kernel.h"

poprt_status poprt__x86_matmul_integer(poprt__kctx *k);
poprt_status poprt__x86_matmul_integer_prepare(poprt__prep_ctx *c, void **state, size_t *size);
/* ai.poprt FusedMatMulInteger: MatMulInteger's product with the float
 * epilogue applied to each block on the thread that computed it; B packed
 * by poprt__x86_matmul_integer_prepare (input 1 as well). */
poprt_status poprt__x86_fused_matmul_integer(poprt__kctx *k);
poprt_status poprt__x86_qlinear_matmul(poprt__kctx *k);
poprt_status poprt__x86_qlinear_matmul_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__x86_conv_integer(poprt__kctx *k);
poprt_status poprt__x86_conv_integer_prepare(poprt__prep_ctx *c, void **state, size_t *size);
/* ai.poprt FusedConvInteger: ConvInteger with the float epilogue applied
 * to each block before it goes back channel-major; W packed by
 * poprt__x86_conv_integer_prepare (input 1 as well). */
poprt_status poprt__x86_fused_conv_integer(poprt__kctx *k);
poprt_status poprt__x86_qlinear_conv(poprt__kctx *k);
poprt_status poprt__x86_qlinear_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size);
/* QuantizeLinear (float32, one scale, to uint8/int8) and
 * DynamicQuantizeLinear (float32) vectorised, the same bits as ref. */
poprt_status poprt__x86_quantize_linear(poprt__kctx *k);
/* DequantizeLinear: bytes with one scale and zero point on the session's
 * threads, anything else on the reference. */
poprt_status poprt__x86_dequantize_linear(poprt__kctx *k);
poprt_status poprt__x86_dynamic_quantize_linear(poprt__kctx *k);

#endif
