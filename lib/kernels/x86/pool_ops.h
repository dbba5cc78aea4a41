/* MaxPool and ai.poprt BlockedMaxPool as the registry runs them
 * (x86/pool_ops.c). */
#ifndef POPRT_X86_POOL_OPS_H
#define POPRT_X86_POOL_OPS_H
#include "kernels/kernel.h"

poprt_status poprt__x86_maxpool(poprt__kctx *k);
poprt_status poprt__x86_blocked_maxpool(poprt__kctx *k); /* NCHW16c, 2-D */

#endif
