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

/* A compiled regular expression (RE2 syntax subset) for RegexFullMatch.
 * alloc provides its memory (scratch or arena); nothing to free. */
typedef struct poprt__regex poprt__regex;
poprt_status poprt__regex_compile(const poprt__node *n, const char *pattern,
                                  void *(*alloc)(void *ctx, size_t size), void *ctx,
                                  poprt__regex **out);
/* Number of instructions of the compiled program. */
int poprt__regex_prog_size(const poprt__regex *re);
/* Matching explores each (instruction, text position) state at most once:
 * at most this many states per text, so time and memory stay bounded. */
#define POPRT__REGEX_MAX_STATES (1 << 24)
/* Scratch for texts of up to max_len bytes: the bytes of visited marks and
 * the entries of the stack. 0 when program size x (max_len + 1) exceeds
 * POPRT__REGEX_MAX_STATES. */
int poprt__regex_scratch(const poprt__regex *re, size_t max_len, size_t *visited_bytes,
                         size_t *stack_entries);
/* 1 when the whole of text matches; visited and stack as poprt__regex_scratch
 * gives for a max_len >= strlen(text). */
int poprt__regex_full_match(const poprt__regex *re, const char *text, uint8_t *visited,
                            uint32_t *stack);
/* ImageDecoder: BMP, PNM, PNG and uncompressed TIFF (others: UNSUPPORTED). */
poprt_status poprt__ref_image_decoder(poprt__kctx *k);
/* ==== end of section 'quant' helper ==== */

#endif
