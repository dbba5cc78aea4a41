/* Reference kernels of the 'cast' family: Cast, CastLike, BitCast. */
#ifndef POPRT_REF_CAST_H
#define POPRT_REF_CAST_H
#include "kernels/kernel.h"

poprt_status poprt__ref_cast(poprt__kctx *k);
poprt_status poprt__ref_castlike(poprt__kctx *k);
poprt_status poprt__ref_bitcast(poprt__kctx *k);

/* Converts n elements of x (dtype x->dtype) into y (dtype y->dtype) with
 * ONNX Cast semantics. Strings produced are allocated through k. */
poprt_status poprt__cast_values(poprt__kctx *k, const poprt__tval *x, poprt__tval *y,
                                int saturate, int round_mode);

#endif
