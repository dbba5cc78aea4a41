/* Reference kernels of the 'quant' family: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, QLinearConv, QLinearMatMul, ConvInteger,
 * MatMulInteger. Integer products are accumulated exactly (int64) before
 * any rescaling, so results never depend on the summation order. */
#ifndef POPRT_REF_QUANT_H
#define POPRT_REF_QUANT_H
#include "kernels/kernel.h"

/* How a scale / zero-point tensor maps onto x, seen as [outer, len, inner]
 * around the quantisation axis. */
typedef struct poprt__qlayout {
    int kind;        /* POPRT__Q_TENSOR, POPRT__Q_AXIS, POPRT__Q_BLOCK */
    int axis;        /* normalised axis (AXIS, BLOCK) */
    int64_t outer, len, inner; /* -1 when unknown (inference) */
    int64_t block;   /* BLOCK: block_size */
    int64_t nblk;    /* BLOCK: scale dims[axis] */
} poprt__qlayout;
enum { POPRT__Q_TENSOR = 0, POPRT__Q_AXIS = 1, POPRT__Q_BLOCK = 2 };

/* Derives the layout from the node's axis/block_size attributes and the
 * shapes of x and the scale (dims < 0 unknown). SHAPE_MISMATCH naming the
 * node when known dims disagree. */
poprt_status poprt__quant_layout(const poprt__node *n, int xrank, const int64_t *xd, int srank,
                                 const int64_t *sd, poprt__qlayout *q);

/* numpy matmul shape of a (ra dims) x b (rb dims) into out (rank *ro);
 * unknown dims stay < 0. SHAPE_MISMATCH naming the node on a conflict. */
poprt_status poprt__quant_matmul_shape(const poprt__node *n, int ra, const int64_t *ad, int rb,
                                       const int64_t *bd, int *ro, int64_t *od);

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
