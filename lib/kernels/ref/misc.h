/* Reference kernels of the 'misc' family. */
#ifndef POPRT_REF_MISC_H
#define POPRT_REF_MISC_H
#include "kernels/kernel.h"

/* ---- recurrent ops (RNN, GRU, LSTM): float32 compute; float16, bfloat16
 * and double are converted in and out. ---- */
poprt_status poprt__ref_rnn(poprt__kctx *k);
poprt_status poprt__ref_gru(poprt__kctx *k);
poprt_status poprt__ref_lstm(poprt__kctx *k);

/* ==== section 'quant' helper: long-tail ops ==== */
/* Window kinds of poprt__misc_window. */
enum { POPRT__WIN_HANN = 0, POPRT__WIN_HAMMING = 1, POPRT__WIN_BLACKMAN = 2 };
poprt_status poprt__misc_window(poprt__kctx *k, int kind);
poprt_status poprt__ref_hann_window(poprt__kctx *k);
poprt_status poprt__ref_hamming_window(poprt__kctx *k);
poprt_status poprt__ref_blackman_window(poprt__kctx *k);
poprt_status poprt__ref_mel_weight_matrix(poprt__kctx *k);
poprt_status poprt__ref_dft(poprt__kctx *k);
poprt_status poprt__ref_stft(poprt__kctx *k);
poprt_status poprt__ref_non_max_suppression(poprt__kctx *k);
poprt_status poprt__ref_roi_align(poprt__kctx *k);
poprt_status poprt__ref_max_roi_pool(poprt__kctx *k);
poprt_status poprt__ref_random_normal(poprt__kctx *k); /* also RandomNormalLike */
poprt_status poprt__ref_random_uniform(poprt__kctx *k); /* also RandomUniformLike */
poprt_status poprt__ref_bernoulli(poprt__kctx *k);
poprt_status poprt__ref_multinomial(poprt__kctx *k);
poprt_status poprt__ref_string_normalizer(poprt__kctx *k);
poprt_status poprt__ref_string_concat(poprt__kctx *k);
poprt_status poprt__ref_string_split(poprt__kctx *k);
poprt_status poprt__ref_regex_full_match(poprt__kctx *k);
poprt_status poprt__ref_binarizer(poprt__kctx *k);
poprt_status poprt__ref_tree_ensemble(poprt__kctx *k);
poprt_status poprt__ref_adagrad(poprt__kctx *k);
poprt_status poprt__ref_momentum(poprt__kctx *k);
poprt_status poprt__ref_adam(poprt__kctx *k);

/* ai.onnx.ml post_transform (0 NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO,
 * 4 PROBIT) applied in place to n scores. */
void poprt__misc_post_transform(double *v, int64_t n, int post);

/* ==== end of section 'quant' helper ==== */

#endif
