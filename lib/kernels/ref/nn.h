/* Reference kernels of the 'nn' family: convolutions and pools. */
#ifndef POPRT_REF_NN_H
#define POPRT_REF_NN_H
#include "kernels/kernel.h"
#include "kernels/ref/gemm.h"
#include "ir/geom.h"

/* Kernels */
poprt_status poprt__ref_conv(poprt__kctx *k);
poprt_status poprt__ref_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__ref_poprt_fused_conv(poprt__kctx *k); /* ai.poprt FusedConv */
poprt_status poprt__ref_poprt_blocked_maxpool(poprt__kctx *k); /* ai.poprt BlockedMaxPool */
poprt_status poprt__ref_conv_transpose(poprt__kctx *k);
/* ConvTranspose computing its GEMMs with e (gemm.h) */
poprt_status poprt__conv_transpose_op(poprt__kctx *k, const poprt__gemm_engine *e);
poprt_status poprt__ref_maxpool(poprt__kctx *k);
poprt_status poprt__ref_averagepool(poprt__kctx *k);
poprt_status poprt__ref_lppool(poprt__kctx *k);
poprt_status poprt__ref_global_averagepool(poprt__kctx *k);
poprt_status poprt__ref_global_maxpool(poprt__kctx *k);
poprt_status poprt__ref_global_lppool(poprt__kctx *k);
poprt_status poprt__ref_maxunpool(poprt__kctx *k);

#endif
