/* Reference kernels of the 'pool' group: MaxPool, AveragePool, LpPool,
 * GlobalMaxPool, GlobalAveragePool, GlobalLpPool, MaxUnpool, and what
 * MaxPool's fast path (lib/kernels/x86/pool_ops.c) shares with them. */
#ifndef POPRT_REF_POOL_H
#define POPRT_REF_POOL_H
#include "kernels/kernel.h"
#include "kernels/ref/window.h"

enum { POPRT__POOL_MAX, POPRT__POOL_AVG, POPRT__POOL_LP };
/* A pool over the planes of x (float32 views), set up from the node. */
typedef struct poprt__pool_task {
    poprt__geom3 g;
    int kind, count_include_pad, storage_order;
    float p;
    const float *x;
    float *y;
    int64_t *ind; /* MaxPool's Indices, or NULL */
} poprt__pool_task;
/* The pool of planes [q0, q1) (ctx: a poprt__pool_task), window by window. */
void poprt__pool_planes(void *ctx, int64_t q0, int64_t q1);
/* A faster way to run the pool set up in t on x (ind: the Indices output
 * or NULL): *done 1 when it wrote t->y. */
typedef poprt_status (*poprt__pool_fast_fn)(poprt__kctx *k, const poprt__pool_task *t,
                                            const poprt__tval *x, const poprt__tval *ind,
                                            int *done);
/* MaxPool, AveragePool or LpPool (kind): checks, attributes, types; then
 * fast (may be NULL), else poprt__pool_planes over k's threads. */
poprt_status poprt__pool_op(poprt__kctx *k, int kind, poprt__pool_fast_fn fast);

poprt_status poprt__ref_maxpool(poprt__kctx *k);
poprt_status poprt__ref_averagepool(poprt__kctx *k);
poprt_status poprt__ref_lppool(poprt__kctx *k);
poprt_status poprt__ref_global_averagepool(poprt__kctx *k);
poprt_status poprt__ref_global_maxpool(poprt__kctx *k);
poprt_status poprt__ref_global_lppool(poprt__kctx *k);
poprt_status poprt__ref_maxunpool(poprt__kctx *k);

#endif
