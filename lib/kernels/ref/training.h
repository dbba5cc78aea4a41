/* Reference kernels of the 'training' group (ai.onnx.preview.training). */
#ifndef POPRT_REF_TRAINING_H
#define POPRT_REF_TRAINING_H
#include "kernels/kernel.h"

poprt_status poprt__ref_adagrad(poprt__kctx *k);
poprt_status poprt__ref_momentum(poprt__kctx *k);
poprt_status poprt__ref_adam(poprt__kctx *k);

#endif
