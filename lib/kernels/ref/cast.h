/* Reference kernels of the 'cast' family: Cast, CastLike, BitCast. */
#ifndef POPRT_REF_CAST_H
#define POPRT_REF_CAST_H
#include "kernels/kernel.h"

poprt_status poprt__ref_cast(poprt__kctx *k);
poprt_status poprt__ref_castlike(poprt__kctx *k);
poprt_status poprt__ref_bitcast(poprt__kctx *k);

/* ONNX round_mode of conversions to float8e8m0. */
enum { POPRT__E8M0_UP = 0, POPRT__E8M0_DOWN = 1, POPRT__E8M0_NEAREST = 2 };
/* Parses "up" / "down" / "nearest"; -1 when unknown. */
int poprt__e8m0_round_mode(const char *s);
/* float -> float8e8m0 with an explicit round mode (the sign is ignored). */
uint8_t poprt__float_to_e8m0_mode(float f, int saturate, int mode);

/* Converts n elements of x (dtype x->dtype) into y (dtype y->dtype) with
 * ONNX Cast semantics. Strings produced are allocated through k. */
poprt_status poprt__cast_values(poprt__kctx *k, const poprt__tval *x, poprt__tval *y,
                                int saturate, int round_mode);

#endif
