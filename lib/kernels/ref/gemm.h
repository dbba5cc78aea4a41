/* Reference kernels of the 'gemm' group: the float32 reference GEMM (the
 * oracle of lib/kernels/x86's), Gemm and MatMul. */
#ifndef POPRT_REF_GEMM_H
#define POPRT_REF_GEMM_H
#include "kernels/kernel.h"

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

/* The fast GEMM (poprt__sgemm, lib/kernels/x86) as the GEMM-based kernels
 * call it. poprt__fast_gemm_fits: shapes with register tiles to fill (others
 * stay on the reference loops; depends on the shape only, never on
 * threads). poprt__fast_gemm_ws: its workspace from k's scratch, taken once
 * per kernel call; NULL when out of memory or for shapes that do not fit.
 * poprt__fast_gemm: C = alpha op(A) op(B) + beta C over k's threads (k NULL:
 * one thread), split over M and N blocks only, so bits do not depend on
 * the thread count; ws NULL runs poprt__ref_sgemm(_mt). */
int poprt__fast_gemm_fits(int64_t M, int64_t N, int64_t K);
void *poprt__fast_gemm_ws(poprt__kctx *k, int ta, int tb, int64_t M, int64_t N, int64_t K);
void poprt__fast_gemm(poprt__kctx *k, void *ws, int ta, int tb, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc);

poprt_status poprt__ref_gemm(poprt__kctx *k);
/* A constant float32 B packed once for the fast GEMM (op(B), transB applied). */
poprt_status poprt__ref_gemm_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__ref_matmul(poprt__kctx *k);
poprt_status poprt__ref_matmul_prepare(poprt__prep_ctx *c, void **state, size_t *size);

#endif
