/* Reference kernels of the 'poprt_replace' family (domain "ai.poprt"):
 * libpoprt's own operators produced by the replace_* passes. Schemas and
 * inference live in lib/ir/infer_poprt_replace.c; docs/ops.md describes them. */
#ifndef POPRT_REF_POPRT_REPLACE_H
#define POPRT_REF_POPRT_REPLACE_H
#include "kernels/kernel.h"

/* ErfV2: erf through a short polynomial (|x| < 0.5) and the
 * Abramowitz-Stegun 7.1.26 form elsewhere: one expf per element, absolute
 * error below 5e-7. */
poprt_status poprt__ref_erfv2(poprt__kctx *k);
/* WhereV2: Where whose condition may be bool or any numeric type (non-zero
 * selects X). */
poprt_status poprt__ref_wherev2(poprt__kctx *k);
/* SoftmaxV2: softmax along one axis (opset-13 semantics at any opset). */
poprt_status poprt__ref_softmaxv2(poprt__kctx *k);
/* FastNorm: GroupNormalization with one group: every sample of X [N, C, ...]
 * normalised over all its elements (statistics in double, one sweep), then
 * scaled and shifted per channel (scale/bias hold C or 1 values). */
poprt_status poprt__ref_fastnorm(poprt__kctx *k);
/* NotZero: (X != 0) stored as the dtype of attribute `to`. */
poprt_status poprt__ref_notzero(poprt__kctx *k);

#endif
