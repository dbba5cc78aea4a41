/* The ONNX backend-test folder layout, read in one place for the
 * conformance runner (tests/onnx_conformance.c) and model_bench
 * (bench/model_bench.c):
 *
 *   DIR/model.onnx
 *   DIR/test_data_set_N/input_K.pb    K = 0.. while present
 *   DIR/test_data_set_N/output_K.pb
 *
 * A .pb file is a TensorProto, SequenceProto or OptionalProto, as the model
 * declares the slot; it is decoded with the library's internal decoder
 * (lib/onnx) into an arena. The rest goes through the public API.
 *
 * Paths and lists are malloc'ed. Running out of memory for them ends the
 * program with "<program>: out of memory" and status 2, as both tools did. */
#ifndef POPRT_TESTDATA_H
#define POPRT_TESTDATA_H

#include <stddef.h>
#include <stdint.h>

#include "poprt/poprt.h"
#include "core/core.h"
#include "ir/ir.h"
#include "onnx/onnx.h"

#define TD_DATA_SET_PREFIX "test_data_set_"

/* ---- paths and folders */

/* "a/b", malloc'ed. */
char *td_join(const char *a, const char *b);
int td_is_dir(const char *path);
int td_is_file(const char *path);
/* The last component of path, trailing slashes ignored (they stay in the
 * returned pointer's string). */
const char *td_base_name(const char *path);

/* Lists of strings are poprt__vec (lib/core) of char *. */

/* Appends s (not copied; NULL, as from a failed strdup, counts as out of
 * memory). */
void td_push(poprt__vec *l, char *s);
/* Frees the strings and the list. */
void td_free_all(poprt__vec *l);

/* Names of the folders in dir that start with prefix (not hidden ones),
 * sorted by name; empty when dir cannot be read. */
poprt__vec td_subdirs(const char *dir, const char *prefix);
/* A test folder has model.onnx or a test_data_set_N folder. */
int td_is_test_dir(const char *dir);
/* Names of dir's test_data_set_N folders in numeric order (_2 before _10). */
poprt__vec td_data_sets(const char *dir);
/* set_dir/input_K.pb (io "input") or set_dir/output_K.pb (io "output"). */
char *td_value_path(const char *set_dir, const char *io, size_t k);

/* ---- values */

/* Reads a whole file into arena memory; 0 when it cannot. */
int td_read_file(const char *path, poprt__arena *arena, void **data, size_t *size);
/* Decodes a .pb file's bytes as the message for a slot of kind (TENSOR:
 * TensorProto, with out->kind TENSOR and present). Statuses and details are
 * the decoder's. */
poprt_status td_decode_value(const void *buf, size_t size, poprt_value_kind kind,
                             poprt__arena *arena, poprt__onnx_value *out);
/* Both: POPRT_STATUS_IO_ERROR "cannot read 'PATH'" for a file that cannot
 * be read; a decoding error keeps its status, the detail prefixed "'PATH': ". */
poprt_status td_read_value(const char *path, poprt_value_kind kind, poprt__arena *arena,
                           poprt__onnx_value *out);

/* ---- using values through the public API */

/* t's dims into dims; returns the rank. */
int td_tensor_dims(const poprt__onnx_tensor *t, int64_t dims[POPRT__MAX_RANK]);
/* Binds tensor t as input name of io. */
poprt_status td_set_input(poprt_stepio *io, const char *name, const poprt__onnx_tensor *t);
/* When model input vi has an unknown rank or dim, sets the session option
 * "input_shape.<name>" to t's dims. key (key_size bytes) gets the option's
 * name, for messages. */
poprt_status td_fix_input_shape(poprt_options *opts, const poprt_value_info *vi,
                                const poprt__onnx_tensor *t, char *key, size_t key_size);

#endif
