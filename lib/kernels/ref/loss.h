/* Reference kernels of the 'loss' group (inference: lib/ir/infer_reduce.c). */
#ifndef POPRT_REF_LOSS_H
#define POPRT_REF_LOSS_H
#include "kernels/kernel.h"

poprt_status poprt__ref_nllloss(poprt__kctx *k);
poprt_status poprt__ref_sce_loss(poprt__kctx *k);

#endif
