/* Reference kernels of the 'signal' group. */
#ifndef POPRT_REF_SIGNAL_H
#define POPRT_REF_SIGNAL_H
#include "kernels/kernel.h"

/* Window kinds of poprt__misc_window. */
enum { POPRT__WIN_HANN = 0, POPRT__WIN_HAMMING = 1, POPRT__WIN_BLACKMAN = 2 };
poprt_status poprt__misc_window(poprt__kctx *k, int kind);
poprt_status poprt__ref_hann_window(poprt__kctx *k);
poprt_status poprt__ref_hamming_window(poprt__kctx *k);
poprt_status poprt__ref_blackman_window(poprt__kctx *k);
poprt_status poprt__ref_mel_weight_matrix(poprt__kctx *k);
poprt_status poprt__ref_dft(poprt__kctx *k);
poprt_status poprt__ref_stft(poprt__kctx *k);

#endif
