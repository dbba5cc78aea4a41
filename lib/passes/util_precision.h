/* Helpers shared by the precision passes (float_to_half, float_to_mixed,
 * float_to_fp8, layer_precision_compare, check_with_fake_data, ...):
 * input data sets (random or read from a calibration folder), running a
 * model on them through a session and reading graph outputs or
 * intermediate tensors as float32, error metrics, list arguments. */
#ifndef POPRT_UTIL_PRECISION_H
#define POPRT_UTIL_PRECISION_H

#include "passes/rewrite.h"

/* One input tensor of one sample. */
typedef struct poprt__ptensor {
    const char *name;
    int32_t dtype;
    int rank;
    int64_t dims[POPRT__MAX_RANK];
    const void *data;
    size_t nbytes;
} poprt__ptensor;

/* A data set: n samples, each a full set of the model's user inputs
 * (sample s is t[s * n_inputs .. (s + 1) * n_inputs)). Memory in arena. */
typedef struct poprt__pdata {
    int n_samples, n_inputs;
    poprt__ptensor *t;
    poprt__arena arena;
} poprt__pdata;

/* Random inputs for every user input of m: floats uniform in [-1, 1),
 * integers in [0, 4), bools 0/1. Unknown dims are 1 on axis 0 and
 * `unknown_dim` elsewhere. UNSUPPORTED for non-tensor inputs. */
poprt_status poprt__pdata_random(const poprt__model *m, int samples, uint32_t seed,
                                 int64_t unknown_dim, poprt__pdata *out);
/* Reads a calibration folder (docs/calibration.md): either input_K.pb
 * files directly in dir (one sample) or sub-folders holding them (one
 * sample each, in name order), at most max_samples (<= 0: all). */
poprt_status poprt__pdata_load(const poprt__model *m, const char *dir, int max_samples,
                               poprt__pdata *out);
/* pdata_load when dir is set, else pdata_random(samples, seed 1234, 64). */
poprt_status poprt__pdata_get(const poprt__model *m, const char *dir, int samples,
                              poprt__pdata *out);
void poprt__pdata_free(poprt__pdata *d);

/* Runs a model (a private copy, with the requested tensors added as graph
 * outputs) on samples. Fetched values are converted to float32. */
typedef struct poprt__prunner poprt__prunner;
/* names: tensors of the main graph to fetch (NULL: the graph outputs). A
 * name that is not a float tensor of known type is fetched as well but
 * reported with numel -1. shapes: the sample whose shapes fix symbolic
 * input dims. */
poprt_status poprt__prunner_create(const poprt__model *m, int n_names, const char *const *names,
                                   const poprt__pdata *shapes, poprt__prunner **out);
/* The same compiled with session options opts (key, value, ..., NULL), e.g.
 * matmul_precision. */
poprt_status poprt__prunner_create_opts(const poprt__model *m, int n_names,
                                        const char *const *names, const poprt__pdata *shapes,
                                        const char *const *opts, poprt__prunner **out);
/* Runs sample s; out[i] / numel[i] stay valid until the next run or free. */
poprt_status poprt__prunner_run(poprt__prunner *r, const poprt__pdata *d, int s,
                                const float *const **out, const int64_t **numel);
int poprt__prunner_count(const poprt__prunner *r);
/* Shape of fetched value i in the last run (*rank -1 when not fetched). */
const int64_t *poprt__prunner_dims(const poprt__prunner *r, int i, int *rank);
const char *poprt__prunner_name(const poprt__prunner *r, int i);
void poprt__prunner_free(poprt__prunner *r);

/* ---- trials against the float32 outputs (precision passes that keep some
 * nodes in higher precision: float_to_fp8, bf16_fallback) ---- */
/* Progress of a calibration job (poprt__progress "calibration"). */
typedef struct poprt__cprog {
    uint64_t done, total;
} poprt__cprog;
void poprt__cprog_begin(poprt__cprog *p, uint64_t total);
void poprt__cprog_tick(poprt__cprog *p, const char *item);
/* A model's graph outputs on every sample (sample s, output k at
 * v[s * n + k], nv[...] floats). */
typedef struct poprt__outset {
    int n, n_samples;
    float **v;
    int64_t *nv;
} poprt__outset;
void poprt__outset_free(poprt__outset *o);
/* Runs m (session options opts, NULL: none) on every sample of d: keeps its
 * outputs in *keep_to (ref NULL), or compares them with ref's: *mean_dist
 * gets the mean cosine distance over samples and outputs, *worst the lowest
 * cosine. One pg tick per sample. */
poprt_status poprt__run_outputs(const poprt__model *m, const char *const *opts,
                                const poprt__pdata *d, poprt__outset *keep_to,
                                const poprt__outset *ref, double *mean_dist, double *worst,
                                poprt__cprog *pg);
/* A trial: the model with the targets flagged in keep left in their higher
 * precision, scored against ref (as poprt__run_outputs). */
typedef poprt_status (*poprt__trial_fn)(void *ctx, const unsigned char *keep,
                                        const poprt__outset *ref, double *mean_dist,
                                        double *worst);
/* Sets keep[i] for the nt targets (named names[i]) that stay in higher
 * precision (the INFO log of pass `pass` says "N of nt <nodes_as> nodes kept
 * <kept_as>"). ref: m's
 * outputs with session options ref_opts. Each target is ranked by the error
 * it alone causes in the outputs (a trial with every other target kept: the
 * mean cosine distance from ref). The keep_n worst are kept; or, with
 * min_cos > 0, the fewest worst with which every sample's outputs keep a
 * cosine >= min_cos (bisection on the count, trials again: the error grows
 * as fewer are kept; keeping all of them is the reference model). */
poprt_status poprt__choose_keep(const char *pass, const char *nodes_as, const char *kept_as,
                                const poprt__model *m,
                                const char *const *ref_opts, const char *const *names, int nt,
                                const poprt__pdata *d, int64_t keep_n, double min_cos,
                                poprt__trial_fn trial, void *ctx, poprt__cprog *pg,
                                unsigned char *keep);

/* W (K x N; element (k, j) at w[k*rs + j*cs]) times alpha, quantized per
 * column into int8 q (element (k, j) at q[k*qrs + j*qcs]) with scales s [N]:
 * symmetric, s[j] = max_k |alpha W[k][j]| / 127 (1 for an all-zero column),
 * q = round(alpha W / s), ties to even, in [-127, 127] (float_to_int8,
 * float_to_int8_static). */
void poprt__quantize_columns(const float *w, int64_t K, int64_t N, int64_t rs, int64_t cs,
                             float alpha, int8_t *q, int64_t qrs, int64_t qcs, float *s);
/* The same onto [-qmax, qmax], s[j] = max_k |alpha W[k][j]| / qmax: qmax 127,
 * or 63 for weights in 7 bits (reduce_range=1 of the int8 passes: ONNX
 * Runtime's reduce_range, exact in vpmaddubsw on CPUs without VNNI). */
void poprt__quantize_columns_to(const float *w, int64_t K, int64_t N, int64_t rs, int64_t cs,
                                float alpha, int qmax, int8_t *q, int64_t qrs, int64_t qcs,
                                float *s);

/* The nodes the int8 passes (float_to_int8, float_to_int8_static) take: a
 * MatMul/Gemm (transA 0) or Conv with a float input, a constant float
 * weight (and a constant float Conv bias of M values), not named in skip,
 * whose K and N (Conv: output channels and the weight's values per channel)
 * are both at least min_size. */
int poprt__int8_takes(const poprt__node *n, const char *const *skip, int n_skip,
                      int64_t min_size);

/* ---- metrics (double accumulation; non-finite values count as error) ---- */
/* 1 - cosine similarity; 0 when both are all zero. */
double poprt__metric_cos_dist(const float *a, const float *b, int64_t n);
/* max |a - b| / max(max |a|, 1e-12): error relative to the reference's scale. */
double poprt__metric_max_rel(const float *ref, const float *b, int64_t n);
/* Named losses of calibration: "mse", "mae", "snr" (noise / signal power),
 * "kld" (KL divergence of |values| histograms), "cos_dist". */
double poprt__metric_loss(const char *kind, const float *ref, const float *b, int64_t n);
int poprt__metric_known(const char *kind);

/* ---- list arguments: "[a,b,c]" or "a;b" or "a" -> items (in buf) ---- */
int poprt__arg_list(const char *text, char *buf, size_t bufsize, const char **items, int max);
int poprt__list_has(const char *const *items, int n, const char *s);

/* Wraps an internal model for the public session API (no copy). */

/* Origin model of a comparison: loads `path`, or m->path when NULL. Returns
 * NOT_FOUND with a message when neither is available. */
poprt_status poprt__load_origin(const poprt__model *m, const char *path, const char *pass,
                                poprt__model **out);

/* Constant float32 value of t: an initializer (not also a graph input) or
 * the output of a Constant node. Returns 1 and sets *data / *n, else 0. */
int poprt__const_f32(const poprt__tensor *t, const float **data, int64_t *n);

/* ---- shared conversions (implemented in the pass files) ---- */

/* float_to_half's rewrite (float_to_half.c): nodes whose
 * type is in skip_types or whose name is in skip_names stay float32.
 * When pairs is not NULL it receives, for each converted float output,
 * the original tensor name then the float16 tensor's name (arena strings of
 * m). *n_nodes gets the number of nodes converted. */
typedef struct poprt__half_opts {
    const char *const *skip_types;
    int n_skip_types;
    const char *const *skip_names;
    int n_skip_names;
    /* tensors float16 cannot hold (names as keys; NULL: none): nodes reading
     * or writing one stay float32 */
    const poprt__map *keep_f32;
    /* also convert the bodies of If/Loop/Scan nodes (their inputs, outputs
     * and outer-scope reads stay float32 through Casts) */
    int subgraphs;
} poprt__half_opts;

/* Names of the float tensors of m's main graph (graph inputs and node
 * outputs) whose magnitude on d exceeds limit or is not finite, as keys of
 * *big (values non-NULL). *n_big gets their number. */
poprt_status poprt__half_range_scan(const poprt__model *m, const poprt__pdata *d, float limit,
                                    poprt__map *big, int *n_big);
poprt_status poprt__to_half(poprt__model *m, const poprt__half_opts *o, poprt__vec *pairs,
                            int *n_nodes);

#endif
