/* Reference kernels of the 'nn' family: convolutions, pools, GEMM/MatMul,
 * normalisations, LRN, Einsum, Det. The float32 GEMM below is the engine of
 * Conv, ConvTranspose, Gemm and MatMul. */
#ifndef POPRT_REF_NN_H
#define POPRT_REF_NN_H
#include "kernels/kernel.h"
#include "ir/einsum.h"
#include "ir/geom.h"

/* C = alpha * op(A) * op(B) + beta * C, row-major, op(X) = X or X^T.
 * op(A) is M x K, op(B) is K x N. beta == 0 ignores C's old contents (NaN
 * included). Single-threaded and allocation-free; every C element is summed
 * over k in the same fixed order whatever M/N sub-block a caller passes, so
 * callers may split M or N across threads and get identical bits. */
void poprt__ref_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc);
/* The same in double (simple loop nest; for the rare double models). */
void poprt__ref_dgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
                      const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                      double *C, int64_t ldc);
/* poprt__ref_sgemm split over the session's threads (by rows or by column
 * panels); bit-identical to the serial call. */
void poprt__ref_sgemm_mt(poprt__kctx *k, int transA, int transB, int64_t M, int64_t N,
                         int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                         int64_t ldb, float beta, float *C, int64_t ldc);

/* Kernels */
poprt_status poprt__ref_conv(poprt__kctx *k);
poprt_status poprt__ref_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__ref_poprt_fused_conv(poprt__kctx *k); /* ai.poprt FusedConv */
poprt_status poprt__ref_poprt_blocked_maxpool(poprt__kctx *k); /* ai.poprt BlockedMaxPool */
poprt_status poprt__ref_matmul_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__ref_conv_transpose(poprt__kctx *k);
poprt_status poprt__ref_maxpool(poprt__kctx *k);
poprt_status poprt__ref_averagepool(poprt__kctx *k);
poprt_status poprt__ref_lppool(poprt__kctx *k);
poprt_status poprt__ref_global_averagepool(poprt__kctx *k);
poprt_status poprt__ref_global_maxpool(poprt__kctx *k);
poprt_status poprt__ref_global_lppool(poprt__kctx *k);
poprt_status poprt__ref_maxunpool(poprt__kctx *k);
poprt_status poprt__ref_gemm(poprt__kctx *k);
/* A constant float32 B packed once for the fast GEMM (op(B), transB applied). */
poprt_status poprt__ref_gemm_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__ref_matmul(poprt__kctx *k);
poprt_status poprt__ref_batchnorm(poprt__kctx *k);
poprt_status poprt__ref_instancenorm(poprt__kctx *k);
poprt_status poprt__ref_layernorm(poprt__kctx *k);
poprt_status poprt__ref_groupnorm(poprt__kctx *k);
poprt_status poprt__ref_rmsnorm(poprt__kctx *k);
poprt_status poprt__ref_lrn(poprt__kctx *k);
poprt_status poprt__ref_mvn(poprt__kctx *k);
poprt_status poprt__ref_einsum(poprt__kctx *k);
poprt_status poprt__ref_det(poprt__kctx *k);

#endif
