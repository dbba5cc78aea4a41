/* Reference kernels of the 'reduce' group: Reduce*, ArgMax/ArgMin,
 * Softmax/LogSoftmax/Hardmax. Schemas and inference live in
 * lib/ir/infer_reduce.c. */
#ifndef POPRT_REF_REDUCE_H
#define POPRT_REF_REDUCE_H
#include "kernels/kernel.h"
#include "ir/geom.h"

/* All ten Reduce* ops (the node's op_type selects the reduction). */
poprt_status poprt__ref_reduce(poprt__kctx *k);
/* Row sums for the float32 reductions that add (Sum, Mean, SumSquare, L1,
 * L2): acc[r] = sum over j < n of f(x[r * n + j]) in double for r < rows,
 * f: what = 0 x, 1 x * x, 2 |x|. */
typedef void poprt__reduce_rows_fn(poprt__kctx *k, const float *x, int64_t rows, int64_t n,
                                   int what, double *acc);
/* The Reduce* ops with rows_fn computing the float32 adding reductions over
 * trailing axes (the reduced axes, ignoring those of size 1, the last
 * ones); NULL, or any other reduction: the reference's passes. */
poprt_status poprt__reduce_op(poprt__kctx *k, poprt__reduce_rows_fn *rows_fn);
poprt_status poprt__ref_argmax(poprt__kctx *k);
poprt_status poprt__ref_argmin(poprt__kctx *k);
/* Softmax, LogSoftmax, Hardmax (opset < 13: coerced to 2-D at axis;
 * from 13: along one axis). */
poprt_status poprt__ref_softmax(poprt__kctx *k);
poprt_status poprt__ref_logsoftmax(poprt__kctx *k);
poprt_status poprt__ref_hardmax(poprt__kctx *k);

/* Softmax family on float rows, shared with other kernels: y = op(x) along
 * rows of n contiguous elements (x and y may alias). mode 0 softmax,
 * 1 log-softmax, 2 hardmax. Softmax and log-softmax run vm's fused rows
 * (the kernel's poprt__kctx_vmath). */
void poprt__ref_softmax_row_f32(const poprt__vmath_variant *vm, const float *x, float *y,
                                int64_t n, int mode);
/* The same on double rows. */
void poprt__ref_softmax_row_f64(const double *x, double *y, int64_t n, int mode);

#endif
