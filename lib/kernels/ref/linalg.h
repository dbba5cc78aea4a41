/* Reference kernels of the 'linalg' group: Einsum and Det. */
#ifndef POPRT_REF_LINALG_H
#define POPRT_REF_LINALG_H
#include "kernels/kernel.h"

poprt_status poprt__ref_einsum(poprt__kctx *k);
poprt_status poprt__ref_det(poprt__kctx *k);

#endif
