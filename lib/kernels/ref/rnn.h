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
poprt_status poprt__ref_rnn(poprt__kctx *k);
poprt_status poprt__ref_gru(poprt__kctx *k);
poprt_status poprt__ref_lstm(poprt__kctx *k);

#endif
