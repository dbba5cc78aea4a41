/* Gemm, MatMul, ConvTranspose and DeformConv as the registry runs them: the
 * operators of lib/kernels/ref (gemm.h, conv.h) computing with the fast GEMM
 * (sgemm.h), and the packing of a constant B when a session is compiled. */
#ifndef POPRT_X86_GEMM_OPS_H
#define POPRT_X86_GEMM_OPS_H
#include "kernels/kernel.h"
#include "kernels/ref/gemm.h"

poprt_status poprt__x86_gemm(poprt__kctx *k);
/* Gemm's / MatMul's constant float32 B packed once for the fast GEMM (op(B),
 * transB applied); no state for other nodes. */
poprt_status poprt__x86_gemm_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__x86_matmul(poprt__kctx *k);
/* RNN, GRU, LSTM (kernels/ref/rnn.h) with the products on the fast GEMM */
poprt_status poprt__x86_rnn(poprt__kctx *k);
poprt_status poprt__x86_gru(poprt__kctx *k);
poprt_status poprt__x86_lstm(poprt__kctx *k);
/* Their constant float32 R packed once for the recurrent products of two
 * or more batch rows (the engine's parts, kernels/ref/gemm.h); no state
 * for a batch of one or a hidden size below 4. */
poprt_status poprt__x86_rnn_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__x86_matmul_prepare(poprt__prep_ctx *c, void **state, size_t *size);
/* MatMul's engine: the fast GEMM, and a B packed by poprt__x86_matmul_prepare
 * (also the prepare of ai.poprt.FusedAttention, whose Wqkv is input 1 too). */
extern const poprt__gemm_engine poprt__x86_matmul_engine;
/* 1 unless state is prepared data of Gemm, MatMul, FusedAttention, Conv,
 * FusedConv, RNN, GRU or LSTM packed for a kernel variant this CPU (after
 * POPRT_ISA) cannot run: what an executable file made on another CPU may hold. The compiler
 * prepares such nodes again instead of using the file's data. */
int poprt__x86_state_usable(const void *state, size_t size);
/* 1 when state is a MatMul's or Gemm's B packed for a bfloat16 variant
 * (the session's matmul_precision was bfloat16). */
int poprt__x86_state_bf16(const void *state, size_t size);
int poprt__x86_conv_state_usable(const void *state, size_t size);
poprt_status poprt__x86_conv_transpose(poprt__kctx *k);
/* A 2-D ConvTranspose's constant float32 W packed once as the fast GEMM's
 * A (W^T per group) when its kernel equals its stride (no padding,
 * dilation 1, no output padding); no state for other nodes. */
poprt_status poprt__x86_conv_transpose_prepare(poprt__prep_ctx *c, void **state, size_t *size);
/* 0 when state is such packed data for a variant this CPU cannot run. */
int poprt__x86_tconv_state_usable(const void *state, size_t size);
poprt_status poprt__x86_deform_conv(poprt__kctx *k);

/* The fast GEMM as the GEMM-based kernels call it. poprt__fast_gemm_fits:
 * shapes with register tiles to fill (others stay on the reference loops;
 * depends on the shape only, never on threads). poprt__fast_gemm_ws: its
 * workspace from k's scratch, taken once per kernel call; NULL when out of
 * memory or for shapes that do not fit. poprt__fast_gemm: C = alpha op(A)
 * op(B) + beta C over k's threads (k NULL: one thread), split over M and N
 * blocks only, so bits do not depend on the thread count; ws NULL runs
 * poprt__ref_sgemm(_mt). */
int poprt__fast_gemm_fits(int64_t M, int64_t N, int64_t K);
void *poprt__fast_gemm_ws(poprt__kctx *k, int ta, int tb, int64_t M, int64_t N, int64_t K);
void poprt__fast_gemm(poprt__kctx *k, void *ws, int ta, int tb, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc);

#endif
