/* Reference kernels of the 'quant' family: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger,
 * MatMulInteger. Integer products are accumulated exactly (int64) before
 * any rescaling, so results never depend on the summation order. */
#ifndef POPRT_REF_QUANT_H
#define POPRT_REF_QUANT_H
#include "kernels/kernel.h"
#include "ir/quant_layout.h"

/* Representable range of an integer dtype (int2 .. int64). */
void poprt__int_range(int32_t dtype, int64_t *lo, int64_t *hi);

poprt_status poprt__ref_quantize_linear(poprt__kctx *k);
poprt_status poprt__ref_dequantize_linear(poprt__kctx *k);
poprt_status poprt__ref_dynamic_quantize_linear(poprt__kctx *k);
poprt_status poprt__ref_qlinear_matmul(poprt__kctx *k);
poprt_status poprt__ref_matmul_integer(poprt__kctx *k);
poprt_status poprt__ref_qlinear_conv(poprt__kctx *k);
poprt_status poprt__ref_conv_integer(poprt__kctx *k);

#endif
