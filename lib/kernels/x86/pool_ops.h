/* MaxPool and the ai.poprt Blocked* pools as the registry runs them
 * (x86/pool_ops.c). */
#ifndef POPRT_X86_POOL_OPS_H
#define POPRT_X86_POOL_OPS_H
#include "kernels/kernel.h"

poprt_status poprt__x86_maxpool(poprt__kctx *k);
/* Reduce* (kernels/ref/reduce.h) with the adding float32 reductions over
 * trailing axes by rows over the threads */
poprt_status poprt__x86_reduce(poprt__kctx *k);
poprt_status poprt__x86_blocked_maxpool(poprt__kctx *k); /* NCHW16c, 2-D */
poprt_status poprt__x86_blocked_averagepool(poprt__kctx *k);        /* NCHW16c, 2-D */
poprt_status poprt__x86_blocked_global_averagepool(poprt__kctx *k); /* NCHW16c X */

#endif
