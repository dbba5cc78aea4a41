/* Helpers shared by the fuzz targets (tests/fuzz/fuzz_*.c). Each target is
 * one LLVMFuzzerTestOneInput; built with libFuzzer (-Dfuzz=true, clang) it
 * fuzzes, built with replay.c it replays a corpus as a regression test.
 *
 * The targets bound the work one input may ask for (sizes, threads, paths)
 * so that a finding is a fault of the library, not a model that asks for
 * a terabyte: what they skip is said where they skip it. */
#ifndef POPRT_FUZZ_H
#define POPRT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include "poprt/poprt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The bytes of an input, consumed from the front. */
typedef struct fz_bytes {
    const uint8_t *p;
    size_t n;
} fz_bytes;

/* Next byte (0 when none is left). */
uint8_t fz_u8(fz_bytes *b);
/* Up to the next `sep` byte (not included, consumed) or the end, as a
 * NUL-terminated copy into buf (cut at cap - 1 bytes). */
void fz_token(fz_bytes *b, char sep, char *buf, size_t cap);

/* 1 for about one input in n, chosen by a hash of all of its bytes (FNV-1a):
 * a mutation of an input changes the choice as often as not, so libFuzzer,
 * which keeps inputs that reach new code, cannot fill its corpus with ones
 * that always take the expensive path (a byte of the input would be kept
 * by most mutations); the same input always chooses the same way, so a
 * finding replays. */
int fz_one_in(const uint8_t *data, size_t size, unsigned n);

/* Aborts the fuzz run with a message: an invariant of the library broke
 * (a status other than the documented ones, a round trip that changed). */
void fz_fail(const char *what, const char *detail);

/* Inputs the target's parser accepted as a whole (a loaded file), counted
 * by targets whose corpus can go stale: replay's --min-accepted checks it,
 * so a corpus the reader no longer accepts fails the tests instead of
 * fuzzing only the first check. */
extern long fz_accepted;

/* A fatal check for the target's own set-up (models that must load). */
void fz_check(poprt_status st, const char *what);

/* Loads tests/<name> ("data/mlp.onnx", "fuzz/models/small.onnx"; the
 * folder is compiled in). */
poprt_model *fz_model(const char *name);

/* The models options and passes are tried on: patterns.onnx (something
 * for most passes), small.onnx (two outputs, a symbolic batch),
 * mlp_dynamic.onnx and conv.onnx, loaded on the first call (which also
 * unsets POPRT_CACHE_DIR). */
#define FZ_SMALL_MODELS 4
poprt_model *const *fz_small_models(void);

/* 1 when a tensor of the main graph would hold more than FZ_MAX_ELEMS
 * elements (unknown dims counted as 3): such models are skipped, since a
 * model may legitimately ask for any amount of memory. */
int fz_model_too_big(const poprt_model *m);

/* Binds every input of s with the shape the session reports (symbolic dims
 * 1..3 taken from the bytes; a leading batches_per_step dim when it is > 1),
 * data made from the bytes (small numbers: a model's data may drive loop
 * counts and sizes), lets the stepio allocate every output, and runs.
 * Returns the run's status; OK without running when the inputs would
 * exceed FZ_MAX_BYTES or the session's arena FZ_MAX_ARENA. */
poprt_status fz_run(poprt_session *s, fz_bytes seed);

/* A session from model with threads=1 (and the options given, may be NULL;
 * symbolic input dims fixed with input_shape options unless given), run
 * once with fz_run; returns the first failing status. */
poprt_status fz_session_run(const poprt_model *model, poprt_options *options, fz_bytes seed);

#define FZ_MAX_ELEMS ((int64_t)1 << 22)
#define FZ_MAX_BYTES ((size_t)8 << 20)
#define FZ_MAX_ARENA ((size_t)256 << 20)
/* fz_session_run's max_tensor_bytes unless the options set one (64 MiB) */
#define FZ_MAX_RUN_BYTES_STR "67108864"

#endif
