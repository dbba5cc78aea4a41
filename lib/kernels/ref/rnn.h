/* Reference kernels of the 'rnn' group: RNN, GRU, LSTM (float32 compute;
 * float16, bfloat16 and double converted in and out). */
#ifndef POPRT_REF_RNN_H
#define POPRT_REF_RNN_H
#include "kernels/kernel.h"
#include "kernels/ref/gemm.h"

/* RNN (gates 1), GRU (3), LSTM (4) with their products on engine e; the
 * poprt__ref_* kernels pass poprt__ref_gemm_engine, lib/kernels/x86 the
 * fast GEMM's. */
poprt_status poprt__rnn_op(poprt__kctx *k, int gates, const poprt__gemm_engine *e);
/* The engine's parts (kernels/ref/gemm.h) these kernels ask for: part
 * d * 2 + p is R's rows of direction d (K = H; p 1: a GRU's h rows without
 * linear_before_reset, p 0 the others), part POPRT__RNN_PART_W + d is W of
 * direction d for the input projection (K = input size, N = gates x H). */
enum { POPRT__RNN_PART_W = 4 };
/* Rows of A per product up to which it runs as Wt A^T (N x M, M columns:
 * the engines' few-column form, reading Wt once); more go on the GEMM */
#define POPRT__RNN_FEW_ROWS 8
poprt_status poprt__ref_rnn(poprt__kctx *k);
poprt_status poprt__ref_gru(poprt__kctx *k);
poprt_status poprt__ref_lstm(poprt__kctx *k);

#endif
