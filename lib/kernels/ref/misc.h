/* Reference kernels of the 'misc' family. */
#ifndef POPRT_REF_MISC_H
#define POPRT_REF_MISC_H
#include "kernels/kernel.h"

/* ---- recurrent ops (RNN, GRU, LSTM): float32 compute; float16, bfloat16
 * and double are converted in and out. ---- */
poprt_status poprt__ref_rnn(poprt__kctx *k);
poprt_status poprt__ref_gru(poprt__kctx *k);
poprt_status poprt__ref_lstm(poprt__kctx *k);

#endif
