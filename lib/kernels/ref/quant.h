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
/* ai.poprt QLinearAdd(A, A_scale, A_zp, B, B_scale, B_zp, Y_scale, Y_zp)
 * [relu]: DequantizeLinear -> Add [-> Relu] -> QuantizeLinear in one pass
 * (lib/compiler/fuse_qdq.c), the same float32 steps. */
poprt_status poprt__ref_poprt_qlinear_add(poprt__kctx *k);
poprt_status poprt__ref_dequantize_linear(poprt__kctx *k);
poprt_status poprt__ref_dynamic_quantize_linear(poprt__kctx *k);
poprt_status poprt__ref_qlinear_matmul(poprt__kctx *k);
poprt_status poprt__ref_matmul_integer(poprt__kctx *k);
poprt_status poprt__ref_qlinear_conv(poprt__kctx *k);
poprt_status poprt__ref_conv_integer(poprt__kctx *k);
/* ai.poprt FusedMatMulInteger(A, B, a_zp, b_zp, S, C) (lib/compiler/fuse_qgemm.c):
 * MatMulInteger's int32 sums v, then per output column j
 * y = (float)v * S[j] (+ C[j]), S and C holding one value or one per column,
 * each step rounded as Cast, Mul and Add round it. */
poprt_status poprt__ref_poprt_fused_matmul_integer(poprt__kctx *k);
/* ai.poprt FusedConvInteger(X, W, x_zp, w_zp, S, C) (fuse_qgemm.c):
 * ConvInteger's int32 sums v (its attributes), then per output channel m
 * y = (float)v * S[m] (+ C[m]), S and C holding one value or one per
 * channel, each step rounded as Cast, Mul and Add round it. */
poprt_status poprt__ref_poprt_fused_conv_integer(poprt__kctx *k);
/* The columns [j0, j0 + n) of one row of that epilogue: y[j] from v[j],
 * s[j0 + j] (s_all) or s[0], and likewise c (NULL: no bias). Two
 * passes, so no compiler contracts them into one rounding. */
static inline void poprt__q_float_cols(const int32_t *v, int64_t n, int64_t j0, const float *s,
                                       int s_all, const float *c, int c_all, float *y)
{
    /* one loop per form, each simple enough to vectorise */
    if (s_all) {
        s += j0;
        for (int64_t j = 0; j < n; j++)
            y[j] = (float)v[j] * s[j];
    } else {
        const float s0 = s[0];
        for (int64_t j = 0; j < n; j++)
            y[j] = (float)v[j] * s0;
    }
    if (c && c_all) {
        c += j0;
        for (int64_t j = 0; j < n; j++)
            y[j] = y[j] + c[j];
    } else if (c) {
        const float c0 = c[0];
        for (int64_t j = 0; j < n; j++)
            y[j] = y[j] + c0;
    }
}

#endif
