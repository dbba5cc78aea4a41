/* Reference kernels of the 'rnn' group: RNN, GRU, LSTM (float32 compute;
 * float16, bfloat16 and double converted in and out). */
#ifndef POPRT_REF_RNN_H
#define POPRT_REF_RNN_H
#include "kernels/kernel.h"

poprt_status poprt__ref_rnn(poprt__kctx *k);
poprt_status poprt__ref_gru(poprt__kctx *k);
poprt_status poprt__ref_lstm(poprt__kctx *k);

#endif
