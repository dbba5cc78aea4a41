/* Reference kernels of the 'object detection' group. */
#ifndef POPRT_REF_OBJECT_DETECTION_H
#define POPRT_REF_OBJECT_DETECTION_H
#include "kernels/kernel.h"

poprt_status poprt__ref_non_max_suppression(poprt__kctx *k);
poprt_status poprt__ref_roi_align(poprt__kctx *k);
poprt_status poprt__ref_max_roi_pool(poprt__kctx *k);

#endif
