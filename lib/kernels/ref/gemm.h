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

/* The float32 GEMM that Gemm, MatMul and ConvTranspose compute with: each
 * operator is written once against it. The reference kernels pass
 * poprt__ref_gemm_engine (poprt__ref_sgemm, split over k's threads), the
 * registry's entries the fast GEMM of lib/kernels/x86 (gemm_ops.h). */
typedef struct poprt__gemm_engine {
    /* Workspace bytes run needs for this shape; 0: none. */
    size_t (*ws_size)(int ta, int tb, int64_t M, int64_t N, int64_t K);
    /* C = alpha op(A) op(B) + beta C over k's threads (k NULL: the calling
     * thread); ws: ws_size bytes (64-byte aligned), or NULL: the reference
     * loops. Results do not depend on the thread count. */
    void (*run)(poprt__kctx *k, void *ws, int ta, int tb, int64_t M, int64_t N, int64_t K,
                float alpha, const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                float *C, int64_t ldc);
    /* The same with B the node's constant as its prepare packed it
     * (k->state): 0 done, -1 nothing written (no packed B of this shape, or
     * packed for another CPU). NULL: the engine packs nothing. */
    int (*run_packed_b)(poprt__kctx *k, int ta, int tb, int64_t M, int64_t N, int64_t K,
                        float alpha, const float *A, int64_t lda, float beta, float *C,
                        int64_t ldc);
    /* Several constants packed by the node's prepare (k->state), as RNN,
     * GRU and LSTM pack their recurrent weights: part(k, i, K, N) is packed
     * operand i, op(B) = K x N, or NULL (none of this shape, or packed for
     * another CPU); part_ws_size its workspace for M rows (> 0); run_part
     * C = A B + beta C with it, A M x K (lda apart), over k's threads (k
     * NULL: the calling thread), the same bits for any thread count. NULL:
     * the engine packs none. */
    const void *(*part)(const poprt__kctx *k, int i, int64_t K, int64_t N);
    size_t (*part_ws_size)(const void *b, int64_t M, int64_t N, int64_t K);
    void (*run_part)(poprt__kctx *k, void *ws, int64_t M, int64_t N, int64_t K, const float *A,
                     int64_t lda, const void *b, float beta, float *C, int64_t ldc);
} poprt__gemm_engine;
extern const poprt__gemm_engine poprt__ref_gemm_engine;
/* *ws = e's workspace for this shape from k's scratch (NULL when it needs
 * none); 0 when out of memory. */
int poprt__gemm_engine_ws(poprt__kctx *k, const poprt__gemm_engine *e, int ta, int tb, int64_t M,
                          int64_t N, int64_t K, void **ws);

/* Gemm and MatMul computing with e; poprt__ref_gemm / _matmul with
 * poprt__ref_gemm_engine. */
poprt_status poprt__gemm_op(poprt__kctx *k, const poprt__gemm_engine *e);
poprt_status poprt__matmul_op(poprt__kctx *k, const poprt__gemm_engine *e);
poprt_status poprt__ref_gemm(poprt__kctx *k);
poprt_status poprt__ref_matmul(poprt__kctx *k);

#endif
