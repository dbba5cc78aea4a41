/* libpoprt: a CPU inference engine for ONNX models.
 *
 * Stable C ABI. Conventions that hold for every function below unless its
 * comment says otherwise:
 *  - A fallible call returns poprt_status (POPRT_OK == 0) and writes its
 *    results through out-parameters, which are left untouched on failure.
 *  - On failure, poprt_last_error() returns a message for the calling thread
 *    that names the file, node, tensor or option at fault.
 *  - Handles are opaque. Every *_create / *_load has a *_free that accepts NULL.
 *  - Strings and arrays returned by the library live as long as the handle
 *    that returned them, unless the comment says otherwise.
 *  - The library never prints, never exits, and never takes ownership of the
 *    caller's buffers unless a comment says so.
 *  - Thread safety: distinct handles may be used from distinct threads freely.
 *    One handle may be used from several threads only where the comment says.
 */
#ifndef POPRT_POPRT_H
#define POPRT_POPRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(POPRT_BUILDING_LIBRARY) && defined(__GNUC__)
#define POPRT_API __attribute__((visibility("default")))
#else
#define POPRT_API
#endif

/* Marks a function that a later release removes: the compiler warns at each
 * use, naming what replaces it (docs/abi.md keeps the list). */
#if defined(__GNUC__) || defined(__clang__)
#define POPRT_DEPRECATED(replacement) __attribute__((deprecated("use " replacement)))
#else
#define POPRT_DEPRECATED(replacement)
#endif

/* ---------------------------------------------------------------- version */

#define POPRT_VERSION_MAJOR 0
#define POPRT_VERSION_MINOR 2
#define POPRT_VERSION_PATCH 0
#define POPRT_VERSION_NUM \
    ((POPRT_VERSION_MAJOR << 16) | (POPRT_VERSION_MINOR << 8) | POPRT_VERSION_PATCH)

/* The library's version as "MAJOR.MINOR.PATCH" (static string, never NULL).
 * Compare with POPRT_VERSION_* to detect a header/library mismatch.
 * Thread safe. */
POPRT_API const char *poprt_version(void);

/* The library's version as POPRT_VERSION_NUM computes it. Thread safe. */
POPRT_API unsigned poprt_version_num(void);

/* ----------------------------------------------------------------- status */

/* Status numbers are pinned: never renumbered, never reused. */
#define POPRT_STATUS_MAP(XX)                                                    \
    XX(OK, 0, "success")                                                         \
    XX(INVALID_ARGUMENT, 1, "invalid argument")                                  \
    XX(OUT_OF_MEMORY, 2, "out of memory")                                        \
    XX(IO_ERROR, 3, "file input/output error")                                   \
    XX(PARSE_ERROR, 4, "malformed model or tensor file")                         \
    XX(INVALID_MODEL, 5, "invalid model")                                        \
    XX(UNSUPPORTED, 6, "unsupported operator, type or feature")                  \
    XX(NOT_FOUND, 7, "name not found")                                           \
    XX(SHAPE_MISMATCH, 8, "shape or type mismatch")                              \
    XX(RUNTIME_ERROR, 9, "error while running the model")                        \
    XX(INVALID_OPTION, 10, "unknown option or invalid option value")             \
    XX(PASS_FAILED, 11, "pass failed")                                           \
    XX(INTERNAL, 12, "internal error")                                           \
    XX(CANCELLED, 13, "cancelled by a callback")                                 \
    XX(LIMIT_EXCEEDED, 14, "a resource limit was exceeded")                     \
    XX(TIMEOUT, 15, "timed out")                                                 \
    XX(QUEUE_FULL, 16, "request queue full")

typedef enum poprt_status {
#define POPRT__STATUS_ENUM(name, num, text) POPRT_STATUS_##name = num,
    POPRT_STATUS_MAP(POPRT__STATUS_ENUM)
#undef POPRT__STATUS_ENUM
    POPRT_OK = 0
} poprt_status;

/* A static, never-NULL description of a status ("unknown status" for numbers
 * outside the list). Thread safe. */
POPRT_API const char *poprt_status_string(poprt_status status);

/* The calling thread's detail message for the last failed call: never NULL,
 * "" when no call has failed on this thread. Valid until the next libpoprt
 * call on this thread. Thread safe (the message is thread-local). */
POPRT_API const char *poprt_last_error(void);

/* ---------------------------------------------------------------- logging */

typedef enum poprt_log_level {
    POPRT_LOG_DEBUG = 10,
    POPRT_LOG_INFO = 20,
    POPRT_LOG_WARNING = 30,
    POPRT_LOG_ERROR = 40,
    POPRT_LOG_CRITICAL = 50,
    POPRT_LOG_OFF = 100
} poprt_log_level;

typedef void (*poprt_log_fn)(poprt_log_level level, const char *message, void *user);

/* Installs the process-wide log callback (NULL removes it) and the lowest
 * level passed to it (default POPRT_LOG_WARNING). Without a callback the
 * library logs nothing. The callback may be called from any thread that is
 * inside a libpoprt call; it must not call back into libpoprt.
 * Thread safe, but messages in flight may still reach the previous callback. */
POPRT_API void poprt_set_log_callback(poprt_log_fn fn, void *user, poprt_log_level min_level);

/* Parses "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL" (case-insensitive).
 * Returns POPRT_STATUS_INVALID_ARGUMENT for anything else. Thread safe. */
POPRT_API poprt_status poprt_log_level_parse(const char *name, poprt_log_level *level_out);

/* Progress of the library's long jobs, for a host that shows it (the
 * library itself never prints). A job is named by `phase`:
 *   "passes"       poprt_pass_manager_run: done passes of the total to run;
 *                  item names the pass about to run (NULL once all ran)
 *   "calibration"  the precision passes' data runs (float_to_fp8,
 *                  float_to_half's range check): done of total steps, a
 *                  step being one run of the model on one sample (item
 *                  "sample"; "trial" for the runs of float_to_fp8's trial
 *                  conversions that choose the layers kept in higher
 *                  precision, a job of their own) or one activation's
 *                  scale search (item "scale")
 *   "compile"      compiling a session (poprt_session_create, runners and
 *                  their batch sizes): done of total steps; item names the
 *                  step ("check", "fold constants", "optimize",
 *                  "bind kernels", "prepare kernels", "plan memory")
 *   "prepare"      within compile's "prepare kernels": done of total nodes
 *                  whose kernels pre-pack data; item names the node
 * New phases may be added; a host shows unknown ones by name. Each job
 * calls fn first with done == 0, then with done rising (never falling)
 * and total fixed, and last with done == total, unless it fails. Jobs may
 * nest (calibration inside a pass run); compilations the library makes for
 * its own evaluations (constant folding, calibration runs) report nothing.
 * fn is called on the thread doing the job, possibly from several threads
 * at once; it must return quickly and must not call back into libpoprt.
 * NULL removes it. Process-wide; thread safe, but calls in flight may
 * still reach the previous callback. */
typedef void (*poprt_progress_fn)(const char *phase, const char *item, uint64_t done,
                                  uint64_t total, void *user);
POPRT_API void poprt_set_progress_callback(poprt_progress_fn fn, void *user);

/* ------------------------------------------------------------- data types */

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum poprt_dtype {
    POPRT_DTYPE_UNDEFINED = 0,
    POPRT_DTYPE_FLOAT = 1,
    POPRT_DTYPE_UINT8 = 2,
    POPRT_DTYPE_INT8 = 3,
    POPRT_DTYPE_UINT16 = 4,
    POPRT_DTYPE_INT16 = 5,
    POPRT_DTYPE_INT32 = 6,
    POPRT_DTYPE_INT64 = 7,
    POPRT_DTYPE_STRING = 8,
    POPRT_DTYPE_BOOL = 9,
    POPRT_DTYPE_FLOAT16 = 10,
    POPRT_DTYPE_DOUBLE = 11,
    POPRT_DTYPE_UINT32 = 12,
    POPRT_DTYPE_UINT64 = 13,
    POPRT_DTYPE_COMPLEX64 = 14,
    POPRT_DTYPE_COMPLEX128 = 15,
    POPRT_DTYPE_BFLOAT16 = 16,
    POPRT_DTYPE_FLOAT8E4M3FN = 17,
    POPRT_DTYPE_FLOAT8E4M3FNUZ = 18,
    POPRT_DTYPE_FLOAT8E5M2 = 19,
    POPRT_DTYPE_FLOAT8E5M2FNUZ = 20,
    POPRT_DTYPE_UINT4 = 21,
    POPRT_DTYPE_INT4 = 22,
    POPRT_DTYPE_FLOAT4E2M1 = 23,
    POPRT_DTYPE_FLOAT8E8M0 = 24,
    POPRT_DTYPE_UINT2 = 25,
    POPRT_DTYPE_INT2 = 26
} poprt_dtype;

/* ONNX's name of a dtype ("float", "int64", "float8e4m3fn", ...); "undefined"
 * for unknown numbers. Static string. Thread safe. */
POPRT_API const char *poprt_dtype_name(poprt_dtype dtype);

/* Bytes one element occupies in buffers exchanged with the library: the
 * natural size for byte-sized and larger types; 1 for the sub-byte types
 * (int4, uint4, int2, uint2, float4e2m1 are exchanged one element per byte,
 * sign-extended for the signed ones); sizeof(char *) for strings (a buffer
 * of NUL-terminated string pointers); 0 for unknown numbers. Thread safe. */
POPRT_API size_t poprt_dtype_size(poprt_dtype dtype);

/* What a value in a graph is: a tensor, a sequence of tensors, an optional
 * tensor or sequence, a map (ai.onnx.ml: keys, strings or integers, to
 * values of one element type, as ZipMap makes and DictVectorizer and
 * CastMap take) or a sequence of maps. */
typedef enum poprt_value_kind {
    POPRT_VALUE_UNKNOWN = 0,
    POPRT_VALUE_TENSOR = 1,
    POPRT_VALUE_SEQUENCE = 2,
    POPRT_VALUE_OPTIONAL = 3,
    POPRT_VALUE_MAP = 4,
    POPRT_VALUE_SEQUENCE_MAP = 5
} poprt_value_kind;

/* Description of a graph input or output. The struct carries its own size:
 * set .size = sizeof(poprt_value_info) before passing it in, so later
 * versions can grow it without breaking the ABI.
 * dims[i] >= 0 is a fixed dimension; -1 is unknown, and dim_params[i] then
 * names it when the model gives a symbolic name (else NULL). rank is -1 when
 * unknown. For sequences and optionals, dtype/rank/dims describe the element
 * tensor; for maps and sequences of maps, dtype is the values' type (rank
 * -1) and key_dtype the keys' type. Pointers live as long as the model
 * handle and are invalidated by passes run on the model.
 * key_dtype came in 0.2.0: a .size that ends before it is still accepted,
 * and then key_dtype is not written. */
typedef struct poprt_value_info {
    size_t size;
    const char *name;
    poprt_value_kind kind;
    poprt_dtype dtype;
    int rank;
    const int64_t *dims;
    const char *const *dim_params;
    poprt_dtype key_dtype; /* MAP, SEQUENCE_MAP; else POPRT_DTYPE_UNDEFINED */
} poprt_value_info;

/* ------------------------------------------------------------------ model */

typedef struct poprt_model poprt_model;
typedef struct poprt_options poprt_options; /* see "options" below */

/* Loads an ONNX model (ModelProto) from a file. The file is mapped, not read:
 * weights stay in the mapping and are not copied, except those whose place
 * in the file does not suit their type (a float at an offset that is not a
 * multiple of 4, as most exporters write them): each is copied once, the
 * file's pages it came from are given back, and sessions made from the
 * model share the copy. External data is resolved
 * relative to the model's folder; absolute paths and paths that leave the
 * folder are rejected. The model is checked (graph structure, operator
 * schemas, shape and type inference) before it is returned.
 * Returns INVALID_ARGUMENT (NULL arguments), IO_ERROR (cannot open or map),
 * PARSE_ERROR (not a valid ModelProto), INVALID_MODEL (graph errors, bad
 * external data), UNSUPPORTED (unknown operator or domain), OUT_OF_MEMORY.
 * The caller frees *model_out with poprt_model_free. Thread safe. */
POPRT_API poprt_status poprt_model_load(const char *path, poprt_model **model_out);

/* As poprt_model_load, from a serialized ModelProto in memory. The bytes are
 * copied; the caller may free them when the call returns. base_dir resolves
 * external data (NULL: external data is an error). Thread safe. */
POPRT_API poprt_status poprt_model_load_from_memory(const void *data, size_t size,
                                                    const char *base_dir,
                                                    poprt_model **model_out);

/* As poprt_model_load and poprt_model_load_from_memory, within the resource
 * limits that options set ("max_nodes", "max_tensor_bytes",
 * "max_subgraph_depth"; see poprt_options_create; NULL options: the
 * defaults). The limits stay with the model: sessions created from it use
 * them unless their own options set others. Other session keys in options
 * are accepted and not used here. Returns LIMIT_EXCEEDED naming the limit
 * and the node, graph or tensor past it, INVALID_OPTION, and the statuses
 * of the calls above. Thread safe. */
POPRT_API poprt_status poprt_model_load_v2(const char *path, const poprt_options *options,
                                           poprt_model **model_out);
POPRT_API poprt_status poprt_model_load_from_memory_v2(const void *data, size_t size,
                                                       const char *base_dir,
                                                       const poprt_options *options,
                                                       poprt_model **model_out);

/* Saves the model as an ONNX file (all weights inside the file). Returns
 * INVALID_ARGUMENT, IO_ERROR, OUT_OF_MEMORY. The model must not be modified
 * concurrently; several threads may save the same model at once. */
POPRT_API poprt_status poprt_model_save(const poprt_model *model, const char *path);

/* Serializes the model into a buffer the library allocates; free it with
 * poprt_buffer_free. Thread safety as poprt_model_save. */
POPRT_API poprt_status poprt_model_serialize(const poprt_model *model, void **data_out,
                                             size_t *size_out);

/* Frees a buffer returned by the library. Accepts NULL. */
POPRT_API void poprt_buffer_free(void *data);

/* Deep copy of a model (weights are shared read-only, not copied). */
POPRT_API poprt_status poprt_model_clone(const poprt_model *model, poprt_model **model_out);

/* Frees a model. Sessions created from it stay valid. Accepts NULL. */
POPRT_API void poprt_model_free(poprt_model *model);

/* Number of graph inputs (initializers excluded) and outputs. */
POPRT_API size_t poprt_model_num_inputs(const poprt_model *model);
POPRT_API size_t poprt_model_num_outputs(const poprt_model *model);

/* Describes input / output `index`. info->size must be set by the caller.
 * Returns INVALID_ARGUMENT for a NULL argument, a bad index or a wrong size. */
POPRT_API poprt_status poprt_model_input(const poprt_model *model, size_t index,
                                         poprt_value_info *info);
POPRT_API poprt_status poprt_model_output(const poprt_model *model, size_t index,
                                          poprt_value_info *info);

/* All tensor ids of the main graph (inputs, initializers, node outputs) in a
 * stable order; *count_out gets their number. The array lives as long as the
 * model and is invalidated by passes. */
POPRT_API poprt_status poprt_model_tensor_ids(const poprt_model *model,
                                              const char *const **ids_out,
                                              size_t *count_out);

/* Describes any tensor of the main graph by id, as inferred (NOT_FOUND if
 * no such tensor). */
POPRT_API poprt_status poprt_model_tensor_info(const poprt_model *model, const char *id,
                                               poprt_value_info *info);

/* Number of nodes in the main graph (subgraphs not counted), and the highest
 * opset imported for the default ONNX domain. */
POPRT_API size_t poprt_model_num_nodes(const poprt_model *model);
POPRT_API int64_t poprt_model_opset(const poprt_model *model);

/* Description of a node of the main graph. Set .size = sizeof before the
 * call. inputs[i] is "" for an omitted optional input. meta_keys and
 * meta_values are the node's metadata_props: libpoprt's passes record there
 * "poprt.replaced" (on a node a pass made in place of others: their names,
 * comma-separated, the first pass's originals when fused nodes are fused
 * again, at most 64 then ",...") and "poprt.shard" /
 * "poprt.pipeline_stage" (manual_sharding). Pointers live as long as the
 * model and are invalidated by passes run on it. */
typedef struct poprt_node_info {
    size_t size;
    const char *name;
    const char *op_type;
    const char *domain; /* "" for ai.onnx */
    size_t num_inputs;
    const char *const *inputs;
    size_t num_outputs;
    const char *const *outputs;
    size_t num_meta;
    const char *const *meta_keys;
    const char *const *meta_values;
} poprt_node_info;

/* Describes node `index` (0 .. poprt_model_num_nodes - 1, in the graph's
 * topological order) of the main graph. Returns INVALID_ARGUMENT for a NULL
 * argument, a bad index or a wrong size; OUT_OF_MEMORY. Not thread safe for
 * one model (the arrays are made in the model's memory). */
POPRT_API poprt_status poprt_model_node(const poprt_model *model, size_t index,
                                        poprt_node_info *info);

/* Number of initializers (weights and other constants stored in the model)
 * of the main graph, and initializer `index` (in file order): its
 * description, and in *nbytes_out (may be NULL) the bytes of its data as the
 * library holds it (poprt_dtype_size per element). INVALID_ARGUMENT for a
 * NULL argument, a bad index or a wrong size; OUT_OF_MEMORY. Not thread
 * safe for one model. */
POPRT_API size_t poprt_model_num_initializers(const poprt_model *model);
POPRT_API poprt_status poprt_model_initializer(const poprt_model *model, size_t index,
                                               poprt_value_info *info, size_t *nbytes_out);

/* Fixes the shape of an input: dims of length rank, each >= 0 (symbolic
 * dims become fixed), then re-runs shape inference. Returns NOT_FOUND,
 * SHAPE_MISMATCH (rank or a fixed dim disagrees), INVALID_ARGUMENT,
 * OUT_OF_MEMORY; on failure the model's types are left as they were. Not
 * thread safe for one model. */
POPRT_API poprt_status poprt_model_set_input_shape(poprt_model *model, const char *name,
                                                   const int64_t *dims, int rank);

/* ------------------------------------------------------------------ graph */

/* Reading and editing a model's graphs, and building a model from nothing
 * (PopART's Builder): docs/graph.md. A poprt_graph is the model's main graph
 * or a subgraph held by a node attribute (If branches, Loop/Scan bodies);
 * a poprt_node is one node of a graph. Both are owned by the model: valid
 * until the model is freed, a node until it is removed. Strings returned
 * are owned by the model too.
 *
 * Every call checks its arguments before changing anything: on a bad one it
 * returns INVALID_ARGUMENT (a NULL handle, a node of another graph, a name
 * taken), NOT_FOUND (a name the graph lacks) or OUT_OF_MEMORY, with a
 * message naming the graph, node, tensor or attribute, and the model stays
 * as it was. An edited model must be checked again before it is compiled,
 * saved, cloned or passed to a pass manager (those calls refuse it,
 * INVALID_ARGUMENT): poprt_model_check sorts, validates and infers it.
 * A user pass (poprt_pass_register) may edit the model it is given without
 * calling poprt_model_check: the pass manager checks it after the pass.
 * A model is not safe to edit while another thread uses it. */

typedef struct poprt_graph poprt_graph;
typedef struct poprt_node poprt_node;

/* ONNX's AttributeProto.AttributeType numbers. */
typedef enum poprt_attr_type {
    POPRT_ATTR_UNDEFINED = 0,
    POPRT_ATTR_FLOAT = 1,
    POPRT_ATTR_INT = 2,
    POPRT_ATTR_STRING = 3,
    POPRT_ATTR_TENSOR = 4,
    POPRT_ATTR_GRAPH = 5,
    POPRT_ATTR_FLOATS = 6,
    POPRT_ATTR_INTS = 7,
    POPRT_ATTR_STRINGS = 8,
    POPRT_ATTR_TENSORS = 9,
    POPRT_ATTR_GRAPHS = 10,
    POPRT_ATTR_SPARSE_TENSOR = 11,
    POPRT_ATTR_SPARSE_TENSORS = 12,
    POPRT_ATTR_TYPE_PROTO = 13,
    POPRT_ATTR_TYPE_PROTOS = 14
} poprt_attr_type;

/* A constant tensor: an initializer or a tensor attribute. Set size to
 * sizeof(poprt_tensor_view) before the call (later versions may grow it). */
typedef struct poprt_tensor_view {
    size_t size;
    const char *name;
    poprt_dtype dtype;
    int rank;
    const int64_t *dims;
    const void *data;
    size_t nbytes;
} poprt_tensor_view;

/* A new empty model (the Builder's start): ONNX IR version 8, the default
 * domain imported at `opset` (7 to the newest libpoprt knows), producer
 * "libpoprt". Add inputs, initializers, nodes and outputs to its graph,
 * then poprt_model_check, and save or compile it. */
POPRT_API poprt_status poprt_model_create(int64_t opset, poprt_model **model_out);
/* Imports `domain` ("" or "ai.onnx" for the default) at `version`, or
 * changes the version imported. */
POPRT_API poprt_status poprt_model_set_opset(poprt_model *model, const char *domain,
                                             int64_t version);
/* Sorts every graph topologically, validates the model (schemas, attributes,
 * types) and infers its shapes; on success the model may be compiled and
 * saved again. On failure the status and message name the node at fault and
 * the model stays editable. */
POPRT_API poprt_status poprt_model_check(poprt_model *model);
/* The model's main graph. */
POPRT_API poprt_status poprt_model_graph(poprt_model *model, poprt_graph **graph_out);

POPRT_API const char *poprt_graph_name(const poprt_graph *graph);
POPRT_API size_t poprt_graph_num_nodes(const poprt_graph *graph);
/* The index-th node, in topological order after poprt_model_check (nodes
 * added since come last). */
POPRT_API poprt_status poprt_graph_node(const poprt_graph *graph, size_t index,
                                        poprt_node **node_out);
POPRT_API poprt_status poprt_graph_find_node(const poprt_graph *graph, const char *name,
                                             poprt_node **node_out);
/* Graph inputs (initializers not included unless the file lists them) and
 * outputs, with their types. */
POPRT_API size_t poprt_graph_num_inputs(const poprt_graph *graph);
POPRT_API size_t poprt_graph_num_outputs(const poprt_graph *graph);
POPRT_API poprt_status poprt_graph_input(const poprt_graph *graph, size_t index,
                                         poprt_value_info *info);
POPRT_API poprt_status poprt_graph_output(const poprt_graph *graph, size_t index,
                                          poprt_value_info *info);
/* The type of any value the graph (or, for a subgraph, an enclosing graph)
 * names. */
POPRT_API poprt_status poprt_graph_value_info(const poprt_graph *graph, const char *name,
                                              poprt_value_info *info);
POPRT_API size_t poprt_graph_num_initializers(const poprt_graph *graph);
POPRT_API poprt_status poprt_graph_initializer(const poprt_graph *graph, size_t index,
                                               poprt_tensor_view *view);

/* Adds a graph input of the given type; a dim < 0 is unknown. */
POPRT_API poprt_status poprt_graph_add_input(poprt_graph *graph, const char *name,
                                             poprt_dtype dtype, const int64_t *dims, int rank);
/* Makes the value `name` a graph output; dtype POPRT_DTYPE_UNDEFINED leaves
 * its type to inference, else it is declared (dims as for inputs). */
POPRT_API poprt_status poprt_graph_add_output(poprt_graph *graph, const char *name,
                                              poprt_dtype dtype, const int64_t *dims, int rank);
POPRT_API poprt_status poprt_graph_remove_input(poprt_graph *graph, const char *name);
POPRT_API poprt_status poprt_graph_remove_output(poprt_graph *graph, const char *name);
/* Declares the type of an intermediate value (a value_info entry). */
POPRT_API poprt_status poprt_graph_set_value_info(poprt_graph *graph, const char *name,
                                                  poprt_dtype dtype, const int64_t *dims,
                                                  int rank);
/* Adds an initializer, or replaces the value of an existing one (its
 * readers then read the new value). nbytes must be the element count times
 * the dtype's size. With release NULL the data is copied; otherwise it is
 * borrowed: the caller keeps it unchanged until the library calls
 * release(user, data), once, when no model, clone or session uses it. On
 * failure release is not called. */
POPRT_API poprt_status poprt_graph_add_initializer(poprt_graph *graph, const char *name,
                                                   poprt_dtype dtype, const int64_t *dims,
                                                   int rank, const void *data, size_t nbytes,
                                                   void (*release)(void *user, const void *data),
                                                   void *user);
/* Removes an initializer nothing reads (INVALID_ARGUMENT naming a reader
 * otherwise). */
POPRT_API poprt_status poprt_graph_remove_initializer(poprt_graph *graph, const char *name);

/* Adds a node reading inputs[0..n_inputs) and writing outputs[0..n_outputs)
 * (value names; "" for an omitted optional one). domain NULL or "" is the
 * default domain; name NULL or "" gets a unique name. An output must not be
 * produced already nor be a graph input or initializer. The node is not
 * checked against its schema until poprt_model_check. */
POPRT_API poprt_status poprt_graph_add_node(poprt_graph *graph, const char *op_type,
                                            const char *domain, const char *name,
                                            size_t n_inputs, const char *const *inputs,
                                            size_t n_outputs, const char *const *outputs,
                                            poprt_node **node_out);
/* Removes a node; its output values lose their producer (remove or rewire
 * their readers, e.g. with poprt_graph_replace_uses). */
POPRT_API poprt_status poprt_graph_remove_node(poprt_graph *graph, poprt_node *node);
/* Every read of value `from` in the graph, its subgraphs and its outputs
 * list reads `to` instead (a graph output named `from` becomes `to`). */
POPRT_API poprt_status poprt_graph_replace_uses(poprt_graph *graph, const char *from,
                                                const char *to);

POPRT_API const char *poprt_node_op_type(const poprt_node *node);
/* "" for the default domain. */
POPRT_API const char *poprt_node_domain(const poprt_node *node);
POPRT_API const char *poprt_node_name(const poprt_node *node);
POPRT_API size_t poprt_node_num_inputs(const poprt_node *node);
POPRT_API size_t poprt_node_num_outputs(const poprt_node *node);
/* The index-th input's / output's value name: "" when omitted, NULL when
 * index is out of range. */
POPRT_API const char *poprt_node_input(const poprt_node *node, size_t index);
POPRT_API const char *poprt_node_output(const poprt_node *node, size_t index);
/* Sets the index-th input to value `name` ("" omits it); index ==
 * poprt_node_num_inputs appends one. */
POPRT_API poprt_status poprt_node_set_input(poprt_node *node, size_t index, const char *name);
/* Sets the index-th output to value `name` (a new name: not produced, not an
 * input or initializer); index == poprt_node_num_outputs appends one. */
POPRT_API poprt_status poprt_node_set_output(poprt_node *node, size_t index, const char *name);

POPRT_API size_t poprt_node_num_attrs(const poprt_node *node);
/* Name of the index-th attribute (NULL out of range). */
POPRT_API const char *poprt_node_attr_name(const poprt_node *node, size_t index);
/* Type of attribute `name` (NOT_FOUND when the node has none). */
POPRT_API poprt_status poprt_node_attr_type(const poprt_node *node, const char *name,
                                            poprt_attr_type *type_out);
/* Getters: NOT_FOUND when the node has no such attribute, INVALID_ARGUMENT
 * naming both types when it has another type. Lists give a pointer to
 * `count` elements owned by the model. Sparse tensors and type protos are
 * reported by poprt_node_attr_type but have no getter. */
POPRT_API poprt_status poprt_node_attr_int(const poprt_node *node, const char *name,
                                           int64_t *value);
POPRT_API poprt_status poprt_node_attr_float(const poprt_node *node, const char *name,
                                             float *value);
/* Bytes (NUL-terminated; len excludes the NUL). */
POPRT_API poprt_status poprt_node_attr_string(const poprt_node *node, const char *name,
                                              const char **value, size_t *len);
POPRT_API poprt_status poprt_node_attr_ints(const poprt_node *node, const char *name,
                                            const int64_t **values, size_t *count);
POPRT_API poprt_status poprt_node_attr_floats(const poprt_node *node, const char *name,
                                              const float **values, size_t *count);
POPRT_API poprt_status poprt_node_attr_strings(const poprt_node *node, const char *name,
                                               const char *const **values, const size_t **lens,
                                               size_t *count);
POPRT_API poprt_status poprt_node_attr_tensor(const poprt_node *node, const char *name,
                                              poprt_tensor_view *view);
POPRT_API poprt_status poprt_node_attr_graph(const poprt_node *node, const char *name,
                                             poprt_graph **graph_out);
/* Elements of TENSORS and GRAPHS attributes; *count gets their number
 * (index is then not read when view / graph_out is NULL). */
POPRT_API poprt_status poprt_node_attr_tensors(const poprt_node *node, const char *name,
                                               size_t index, poprt_tensor_view *view,
                                               size_t *count);
POPRT_API poprt_status poprt_node_attr_graphs(const poprt_node *node, const char *name,
                                              size_t index, poprt_graph **graph_out,
                                              size_t *count);

/* Setters: add the attribute, or replace one of that name (whatever its
 * type). Values are copied. */
POPRT_API poprt_status poprt_node_set_attr_int(poprt_node *node, const char *name, int64_t value);
POPRT_API poprt_status poprt_node_set_attr_float(poprt_node *node, const char *name, float value);
POPRT_API poprt_status poprt_node_set_attr_string(poprt_node *node, const char *name,
                                                  const char *value, size_t len);
POPRT_API poprt_status poprt_node_set_attr_ints(poprt_node *node, const char *name,
                                                const int64_t *values, size_t count);
POPRT_API poprt_status poprt_node_set_attr_floats(poprt_node *node, const char *name,
                                                  const float *values, size_t count);
/* values[i] are NUL-terminated strings. */
POPRT_API poprt_status poprt_node_set_attr_strings(poprt_node *node, const char *name,
                                                   const char *const *values, size_t count);
POPRT_API poprt_status poprt_node_set_attr_tensor(poprt_node *node, const char *name,
                                                  poprt_dtype dtype, const int64_t *dims,
                                                  int rank, const void *data, size_t nbytes);
/* Gives the node an empty subgraph attribute `name` (an If branch, a Loop
 * body) and returns it to be filled: add its inputs, nodes and outputs; its
 * nodes may read values of the enclosing graphs by name. */
POPRT_API poprt_status poprt_node_set_attr_graph(poprt_node *node, const char *name,
                                                 poprt_graph **graph_out);
/* A TENSORS attribute of count tensors: each view's dtype, rank, dims,
 * data and nbytes are checked and copied as poprt_node_set_attr_tensor's
 * (its name too, NULL for ""; size must be set). */
POPRT_API poprt_status poprt_node_set_attr_tensors(poprt_node *node, const char *name,
                                                   const poprt_tensor_view *tensors,
                                                   size_t count);
/* A GRAPHS attribute of count empty subgraphs (named name_0, name_1, ...),
 * returned in graphs_out[0 .. count) to be filled as poprt_node_set_attr_graph's. */
POPRT_API poprt_status poprt_node_set_attr_graphs(poprt_node *node, const char *name,
                                                  size_t count, poprt_graph **graphs_out);
POPRT_API poprt_status poprt_node_remove_attr(poprt_node *node, const char *name);
/* The values integer input `name` may hold without a node that reads it as
 * an index going out of range, for programs that make up inputs: the input's
 * readers are followed through nodes that only move values (Cast, Reshape,
 * Unsqueeze, Squeeze, Concat, Slice, ...) and Add/Sub of a constant scalar to
 * the index slots of Gather, GatherElements, GatherND, ScatterElements and
 * ScatterND, each bounding the index by the data's dim d on its axis
 * ([-d, d-1]). *lo_out and *hi_out get the inclusive range: INT64_MIN /
 * INT64_MAX on a side nothing bounds (an input that indexes nothing), *lo_out
 * > *hi_out when no value fits every reader. A BERT's input_ids get
 * [-vocab, vocab-1], its token_type_ids [-2, 1]. Dims must be known for a
 * bound to show (fix symbolic ones first). Returns INVALID_ARGUMENT,
 * NOT_FOUND (no such input). */
POPRT_API poprt_status poprt_model_input_range(const poprt_model *model, const char *name,
                                               int64_t *lo_out, int64_t *hi_out);

/* ---------------------------------------------------------------- tensors */

/* A tensor read from a serialized ONNX TensorProto: the input_K.pb and
 * output_K.pb files of ONNX's backend tests (test_data_set_N), of
 * calibration folders (docs/calibration.md) and of poprt --output_data. */
typedef struct poprt_tensor poprt_tensor;

/* Decodes size bytes at data (one serialized TensorProto; the bytes are
 * copied and may be freed after the call) into a new tensor. The data may be
 * in raw_data or the typed fields; external data is refused. Returns
 * INVALID_ARGUMENT (NULL arguments), PARSE_ERROR (malformed protobuf),
 * INVALID_MODEL (data that disagrees with the dims, external data),
 * UNSUPPORTED (an unknown dtype number, a segmented tensor, rank above 12),
 * OUT_OF_MEMORY. Thread safe. */
POPRT_API poprt_status poprt_tensor_decode(const void *data, size_t size,
                                           poprt_tensor **tensor_out);

/* What tensor holds: its name ("" when the file has none), dtype, rank dims
 * and data in the layout of stepio buffers (poprt_dtype_size: sub-byte types
 * one element per byte, strings as `const char *` pointers), nbytes its
 * size. Any out-parameter may be NULL; pointers live as long as the tensor.
 * Returns INVALID_ARGUMENT for a NULL tensor. */
POPRT_API poprt_status poprt_tensor_get(const poprt_tensor *tensor, const char **name_out,
                                        poprt_dtype *dtype_out, const int64_t **dims_out,
                                        int *rank_out, const void **data_out,
                                        size_t *nbytes_out);

POPRT_API void poprt_tensor_free(poprt_tensor *tensor);

/* Encodes a tensor as one serialized TensorProto (what
 * poprt_tensor_decode reads, and onnx.numpy_helper.to_array): name (NULL
 * or "": none), dtype, rank dims (0..12, each >= 0) and nbytes of data in
 * the layout of stepio buffers, written as raw_data (sub-byte types packed
 * as ONNX packs them) or string_data. *data_out (*size_out bytes) is freed
 * with poprt_buffer_free. Returns INVALID_ARGUMENT (NULL arguments, a bad
 * rank or dim, an unknown dtype, nbytes that disagrees with dtype and dims),
 * OUT_OF_MEMORY. Thread safe. */
POPRT_API poprt_status poprt_tensor_encode(const char *name, poprt_dtype dtype,
                                           const int64_t *dims, int rank, const void *data,
                                           size_t nbytes, void **data_out, size_t *size_out);

/* ---------------------------------------------------------------- options */


/* Options are string key/value pairs; unknown keys are rejected by the call
 * that consumes the options (and by poprt_options_set for known consumers),
 * never ignored. Session keys:
 *   "threads"            worker threads for one run (default: 1); the
 *                        session's compile prepares its nodes on as many
 *   "batches_per_step"   batches run per poprt_session_run (default: 1)
 *   "anchor.<output>"    return type of one output: "All", "Final",
 *                        "EveryN:<n>" or "Sum" (default "All")
 *   "anchors"            return type for every output not named above
 *   "input_shape.<input>" comma-separated dims fixing a symbolic input shape
 *   "optimize"           "1" (default): compile-time rewrites that keep
 *                        the results (within float rounding): batch norms
 *                        folded into convolutions, no-op nodes removed,
 *                        consecutive reshapes/transposes/casts merged,
 *                        LayerNorm and GELU patterns, convolution
 *                        epilogues and elementwise chains fused
 *                        (docs/compiler.md); "0": run the graph as given
 *   "float16_compute"    "float32" (default): nodes reading or writing
 *                        float16 tensors compute in float32 (float16
 *                        weights converted once, Casts where float16
 *                        values meet nodes left in float16; this CPU has
 *                        no float16 arithmetic), as ONNX Runtime's CPU
 *                        provider does; "float16": each such node rounds
 *                        its results to float16 (reference kernels, slower)
 *   "matmul_precision"   "float32" (default); "bfloat16": MatMul, Gemm and
 *                        Conv (not depthwise) nodes with constant float
 *                        weights, and attention heads (head sizes a
 *                        multiple of 32, CPUs with AMX), multiply in
 *                        bfloat16 on CPUs with AMX or AVX512-BF16 (weights and
 *                        activations rounded to nearest even bfloat16 as
 *                        they are packed, products summed in float32: a
 *                        product's relative error is at most 2^-7;
 *                        results change with it) and in float32 elsewhere;
 *                        without AMX, 3x3 convolutions that Winograd
 *                        F(4x4, 3x3) takes (conv_algorithm) run that in
 *                        float32 instead (4x fewer products against
 *                        bfloat16's twice-float32 rate);
 *                        nodes with the metadata poprt.matmul_float32 = 1
 *                        (pass bf16_fallback) stay float32;
 *                        an executable file keeps the choice
 *   "conv_algorithm"     "auto" (default): float32 3x3 convolutions of
 *                        stride 1 (input channels padded to a block of
 *                        16 by at most a third: 24 but not 3 or 20)
 *                        run as Winograd convolutions on CPUs with
 *                        AVX-512 or AVX2 where they pay: F(4x4, 3x3)
 *                        (4x fewer products) up to 128 input channels
 *                        and outputs of 7 x 7 and larger (28 x 28 and
 *                        larger for fewer than 32 channels),
 *                        F(2x2, 3x3) (2.25x fewer) for more channels
 *                        and outputs of 12 x 12 and larger; 3x1 and 1x3
 *                        convolutions as F(4, 3) along their axis (2x
 *                        fewer products); results
 *                        differ from the direct sums in the last bits
 *                        (docs/compiler.md states the bounds);
 *                        "direct": every convolution sums its products
 *                        directly; "winograd_2x2" / "winograd_4x4":
 *                        that tile for every convolution the Winograd
 *                        kernels take, paying or not (3x1 and 1x3 take
 *                        F(4, 3) either way); an executable
 *                        file keeps the choice
 *   "profile"            "1": time every node; the totals by operator type
 *                        go to the log callback (INFO) when the session
 *                        is freed, each node's (DEBUG) after them, and
 *                        poprt_session_profile_trace gives every node's
 *                        run as a trace (with the compilation's steps)
 *   "cache_dir"          engine cache folder (also the POPRT_CACHE_DIR
 *                        environment variable): poprt_session_create loads
 *                        a matching executable file from it, or compiles
 *                        and stores one. The key covers the model, the
 *                        options, the library version and the CPU
 *                        features the kernels may use.
 * Resource limits (also taken by poprt_model_load_v2): past one, the call
 * fails with LIMIT_EXCEEDED naming the option:
 *   "max_nodes"          nodes in all graphs of a model (default 4194304)
 *   "max_tensor_bytes"   bytes of any one tensor: declared, inferred, an
 *                        initializer, or made at run time (default: the
 *                        machine's physical memory)
 *   "max_loop_iterations" Loop iterations in one poprt_session_run, all Loop
 *                        nodes (nested ones included) together (default
 *                        100000000)
 *   "max_subgraph_depth" graphs nested in graphs (default and most: 64)
 */
POPRT_API poprt_status poprt_options_create(poprt_options **options_out);
POPRT_API void poprt_options_free(poprt_options *options);

/* Sets key to value (both copied). Returns INVALID_OPTION for an unknown key
 * or a malformed value, naming both. Not thread safe for one handle. */
POPRT_API poprt_status poprt_options_set(poprt_options *options, const char *key,
                                         const char *value);

/* A parallel-for the host supplies so that libpoprt's kernels run on the
 * host's own threads instead of the session's thread pool: the host must run
 * task(task_ctx, i) for every i in [0, n), in any order, on any of its
 * threads, and return only when all have finished. width is the number of
 * tasks the host can run at once (the work is split for that many); the
 * "threads" option is then ignored. Results do not depend on how the host
 * schedules the tasks. fn NULL removes it. The callback may be called from
 * every thread that runs the session. */
typedef void (*poprt_parallel_for_fn)(void *user, size_t n, void (*task)(void *task_ctx, size_t i),
                                      void *task_ctx);
POPRT_API poprt_status poprt_options_set_parallel_for(poprt_options *options,
                                                      poprt_parallel_for_fn fn, void *user,
                                                      int width);

/* The value of key, or NULL when unset. Lives until the key is set again. */
POPRT_API const char *poprt_options_get(const poprt_options *options, const char *key);

/* ----------------------------------------------------------------- passes */

typedef struct poprt_pass_manager poprt_pass_manager;

/* Names of all registered passes (built-in and user-registered), sorted.
 * The array is owned by the library and valid until the next registration. */
POPRT_API poprt_status poprt_pass_list(const char *const **names_out, size_t *count_out);

/* One-line description of a registered pass (NOT_FOUND otherwise). */
POPRT_API poprt_status poprt_pass_describe(const char *name, const char **text_out);

/* A user pass: transforms the model in place through the public API.
 * Returns POPRT_OK or a status that fails the pass run. */
typedef poprt_status (*poprt_pass_fn)(poprt_model *model, const char *args, void *user);

/* Registers a user pass under a new name (INVALID_ARGUMENT if the name is
 * taken). user is passed back unchanged. Thread safe. */
POPRT_API poprt_status poprt_pass_register(const char *name, const char *description,
                                           poprt_pass_fn fn, void *user);

POPRT_API poprt_status poprt_pass_manager_create(poprt_pass_manager **pm_out);
POPRT_API void poprt_pass_manager_free(poprt_pass_manager *pm);

/* Appends pass `name` with its arguments ("key=value,key=value" or NULL).
 * Returns NOT_FOUND for an unknown pass, INVALID_OPTION for bad arguments. */
POPRT_API poprt_status poprt_pass_manager_add(poprt_pass_manager *pm, const char *name,
                                              const char *args);

/* Passes named here are skipped when the manager runs. */
POPRT_API poprt_status poprt_pass_manager_skip(poprt_pass_manager *pm, const char *name);

/* Runs the added passes in order on the model, then re-checks the model.
 * On failure (PASS_FAILED, naming the pass; OUT_OF_MEMORY) the model is left
 * as it was before the run. Not thread safe for one model. */
POPRT_API poprt_status poprt_pass_manager_run(poprt_pass_manager *pm, poprt_model *model);

/* Number of passes that changed the model in the last run. */
POPRT_API size_t poprt_pass_manager_changed(const poprt_pass_manager *pm);

/* ---------------------------------------------------------------- plugins */

/* Custom operators. A host (or a plugin) registers an operator by domain,
 * name and first opset version, with a type/shape inference callback and a
 * compute callback; models using it then load, convert and run like any
 * other. Both callbacks get an opaque context read and written through the
 * poprt_op_* functions below; they return POPRT_OK or a status (with
 * poprt_op_error for the message). Callbacks may run on any thread, several
 * at once. */
typedef struct poprt_op_context poprt_op_context;
typedef poprt_status (*poprt_op_fn)(poprt_op_context *ctx, void *user);

typedef struct poprt_op_desc {
    size_t size;        /* sizeof(poprt_op_desc) */
    const char *domain; /* not "" or "ai.onnx": those belong to ONNX */
    const char *name;
    int since_version;
    int min_inputs, max_inputs;   /* max -1: variadic */
    int min_outputs, max_outputs;
    poprt_op_fn infer;   /* sets every output's dtype and shape */
    poprt_op_fn compute; /* reads inputs, writes outputs; NULL: shape inference only */
    void *user;
} poprt_op_desc;

/* Registers an operator (strings are copied). INVALID_ARGUMENT when a
 * field is missing or the (domain, name, since_version) is taken. Thread
 * safe. Registrations last for the life of the process. An operator
 * registered without compute (since 0.2.0) has its shape function only:
 * models using it load, infer shapes and convert, and a session running
 * it fails at that node with UNSUPPORTED (no kernel). */
POPRT_API poprt_status poprt_op_register(const poprt_op_desc *desc);

/* In both callbacks: the node's name, input count and each input. dims
 * hold -1 for dims unknown at inference time, rank is -1 when unknown, data
 * is NULL unless the value is known (always known in compute). */
POPRT_API const char *poprt_op_node_name(const poprt_op_context *ctx);
POPRT_API size_t poprt_op_num_inputs(const poprt_op_context *ctx);
POPRT_API size_t poprt_op_num_outputs(const poprt_op_context *ctx);
POPRT_API poprt_status poprt_op_input(const poprt_op_context *ctx, size_t index,
                                      poprt_dtype *dtype_out, const int64_t **dims_out,
                                      int *rank_out, const void **data_out);
/* Attributes of the node, read as poprt_node_attr_* reads them (since 0.2.0
 * for all but int, float and string): NOT_FOUND when the node has no such
 * attribute, INVALID_ARGUMENT naming both types when it has another type
 * (NOT_FOUND before 0.2.0) and for NULL arguments, each message naming the
 * node and the attribute. Strings and lists live as long as the model; a
 * tensor view's dims live until the callback returns, its data as long as
 * the model. */
POPRT_API size_t poprt_op_num_attrs(const poprt_op_context *ctx);
/* Name of the index-th attribute (NULL out of range). */
POPRT_API const char *poprt_op_attr_name(const poprt_op_context *ctx, size_t index);
POPRT_API poprt_status poprt_op_attr_type(const poprt_op_context *ctx, const char *name,
                                          poprt_attr_type *type_out);
POPRT_API poprt_status poprt_op_attr_int(const poprt_op_context *ctx, const char *name,
                                         int64_t *value_out);
POPRT_API poprt_status poprt_op_attr_float(const poprt_op_context *ctx, const char *name,
                                           float *value_out);
/* NUL-terminated (poprt_op_attr_strings gives lengths for bytes). */
POPRT_API poprt_status poprt_op_attr_string(const poprt_op_context *ctx, const char *name,
                                            const char **value_out);
POPRT_API poprt_status poprt_op_attr_ints(const poprt_op_context *ctx, const char *name,
                                          const int64_t **values, size_t *count);
POPRT_API poprt_status poprt_op_attr_floats(const poprt_op_context *ctx, const char *name,
                                            const float **values, size_t *count);
/* lens may be NULL. */
POPRT_API poprt_status poprt_op_attr_strings(const poprt_op_context *ctx, const char *name,
                                             const char *const **values, const size_t **lens,
                                             size_t *count);
/* Set view->size = sizeof *view first. */
POPRT_API poprt_status poprt_op_attr_tensor(const poprt_op_context *ctx, const char *name,
                                            poprt_tensor_view *view);
/* Element index of a TENSORS attribute; *count gets their number (index is
 * then not read when view is NULL). */
POPRT_API poprt_status poprt_op_attr_tensors(const poprt_op_context *ctx, const char *name,
                                             size_t index, poprt_tensor_view *view,
                                             size_t *count);
/* infer: the type of output index (dims -1 for unknown, rank -1 unknown).
 * compute: allocates output index with that exact shape and returns its
 * buffer (owned by the library) in *data_out. */
POPRT_API poprt_status poprt_op_set_output(poprt_op_context *ctx, size_t index, poprt_dtype dtype,
                                           const int64_t *dims, int rank, void **data_out);
/* Records the message poprt_last_error() will report, naming the node, and
 * returns status: `return poprt_op_error(ctx, POPRT_STATUS_SHAPE_MISMATCH,
 * "x must be 2-D");` */
POPRT_API poprt_status poprt_op_error(poprt_op_context *ctx, poprt_status status,
                                      const char *message);

/* Loads a plugin: a shared library (by path) that exports
 *     poprt_status poprt_plugin_init(unsigned library_version_num);
 * which checks the version it was built against and registers passes
 * (poprt_pass_register) and operators (poprt_op_register). The library is
 * never unloaded. IO_ERROR naming the file when it cannot be loaded,
 * INVALID_ARGUMENT when it lacks poprt_plugin_init, the init's own status
 * when it fails. Thread safe. See docs/plugins.md. */
POPRT_API poprt_status poprt_plugin_load(const char *path);

/* ---------------------------------------------------------------- session */

typedef struct poprt_session poprt_session;
typedef struct poprt_stepio poprt_stepio;

/* How an output is returned when batches_per_step > 1 (PopART's
 * AnchorReturnType): ALL returns every batch ([batches_per_step, ...]);
 * FINAL the last batch; EVERY_N every N-th batch ([batches_per_step/N, ...]);
 * SUM the element-wise sum over the batches. */
typedef enum poprt_anchor {
    POPRT_ANCHOR_ALL = 0,
    POPRT_ANCHOR_FINAL = 1,
    POPRT_ANCHOR_EVERY_N = 2,
    POPRT_ANCHOR_SUM = 3
} poprt_anchor;

/* Creates a session: checks the model, infers all shapes for the bound input
 * shapes, chooses kernels and plans every buffer once. The session keeps
 * what it needs; the model may be freed afterwards. options may be NULL.
 * Returns INVALID_OPTION, INVALID_MODEL, UNSUPPORTED, SHAPE_MISMATCH,
 * OUT_OF_MEMORY. Thread safe for distinct sessions. */
POPRT_API poprt_status poprt_session_create(const poprt_model *model,
                                            const poprt_options *options,
                                            poprt_session **session_out);
POPRT_API void poprt_session_free(poprt_session *session);

/* Inputs and outputs as the session sees them (shapes fixed by options). */
POPRT_API size_t poprt_session_num_inputs(const poprt_session *session);
POPRT_API size_t poprt_session_num_outputs(const poprt_session *session);
POPRT_API poprt_status poprt_session_input(const poprt_session *session, size_t index,
                                           poprt_value_info *info);
POPRT_API poprt_status poprt_session_output(const poprt_session *session, size_t index,
                                            poprt_value_info *info);

/* batches_per_step, the anchor of an output, and the bytes of activation
 * memory one concurrent run uses (the memory plan's arena size). */
POPRT_API int64_t poprt_session_batches_per_step(const poprt_session *session);
POPRT_API poprt_status poprt_session_anchor(const poprt_session *session, const char *output,
                                            poprt_anchor *anchor_out, int64_t *every_n_out);
POPRT_API size_t poprt_session_arena_bytes(const poprt_session *session);

/* Runs batches_per_step batches, reading inputs from and writing outputs to
 * the stepio. Input buffers of a step hold batches_per_step batches back to
 * back (shape [batches_per_step, ...] when batches_per_step > 1); output
 * buffers hold what the output's anchor returns.
 * Thread safe: several threads may run one session at once, each with its
 * own stepio. Returns INVALID_ARGUMENT, NOT_FOUND (a missing input),
 * SHAPE_MISMATCH (buffer too small or wrong shape/type), RUNTIME_ERROR,
 * CANCELLED (a callback stepio returned NULL). */
POPRT_API poprt_status poprt_session_run(poprt_session *session, poprt_stepio *stepio);

/* Runs with new buffers for what stepio binds: inputs[k] replaces the data of
 * the k-th input bound to it and outputs[k] the buffer of the k-th output, in
 * the order they were first bound (NULL keeps a buffer); every name, dtype,
 * shape and size stays as bound, so each new buffer must be at least as
 * large as the one it replaces. Then as poprt_session_run. For callers that
 * run one model many times on fresh buffers (servers, language bindings):
 * one call instead of one per value. n_inputs and n_outputs must be the
 * numbers bound. Returns INVALID_ARGUMENT (NULL session or stepio, counts
 * that differ, a new buffer for an input not bound as a tensor or for an
 * output bound with poprt_stepio_set_output_alloc, a callback stepio;
 * nothing is rebound then) and the statuses of poprt_session_run. */
POPRT_API poprt_status poprt_session_run_buffers(poprt_session *session, poprt_stepio *stepio,
                                                 size_t n_inputs, const void *const *inputs,
                                                 size_t n_outputs, void *const *outputs);

/* Weights of a compiled session (PopART's readWeights / writeWeights /
 * resetHostWeights), docs/runtime.md "Weights". A weight is an initializer
 * of the model that reaches the compiled program unchanged: not folded into
 * another constant at compile time (Transpose(W) of a constant W, say) and
 * not rewritten by a fusion (batch norm folded into a Conv, Q/K/V weights
 * concatenated); those are not listed and cannot be written (option
 * "optimize" = "0" keeps the fusions' inputs). Weights belong to the
 * compiled program, which sessions made from one program share (runner
 * replicas, the engine cache): a write is seen by all of them. A write or
 * reset waits for the steps running to finish, and the steps started after
 * it see the new value whole; it prepares again the kernel data made from
 * the weight (packed GEMM panels). A session loaded from an executable
 * file lists every constant of its program (the file does not record which
 * were weights) and refuses writes (UNSUPPORTED). Thread safe. */
POPRT_API size_t poprt_session_num_weights(const poprt_session *session);
/* Name, dtype and shape of the index-th weight (in the model's order). */
POPRT_API poprt_status poprt_session_weight(const poprt_session *session, size_t index,
                                            poprt_value_info *info);
/* Copies the current value of weight `name` into data (nbytes must be its
 * size). NOT_FOUND names a value that is no weight, saying why when it is
 * a model initializer that was folded or fused. */
POPRT_API poprt_status poprt_session_read_weight(const poprt_session *session, const char *name,
                                                 void *data, size_t nbytes);
/* Replaces the value of weight `name` (copied; nbytes must be its size). */
POPRT_API poprt_status poprt_session_write_weight(poprt_session *session, const char *name,
                                                  const void *data, size_t nbytes);
/* Puts back the compiled value of weight `name`, or of every weight when
 * name is NULL. */
POPRT_API poprt_status poprt_session_reset_weights(poprt_session *session, const char *name);
/* With session option "profile" = "1": the profile of the runs that have
 * returned, as Chrome trace-event JSON (the format Perfetto and
 * chrome://tracing open), in a NUL-terminated buffer the library allocates
 * (*size_out: its length without the NUL); free it with poprt_buffer_free.
 * It holds one complete event ("ph":"X") per main-graph node per batch of
 * each run: name the node's name, cat "node,<op type>", tid the thread that
 * ran it, args its op_type and domain, its inputs and outputs with their
 * types as compiled ("?" for dims known only at run time), kernel (the
 * implementation's name, or why the node ran without one: a view, a Concat
 * written in place), isa (the vector instruction set of the kernels),
 * prepared_bytes (data its kernel pre-packed when compiling), run and
 * batch; one event per run (cat "run") spanning its nodes; and, when the
 * session was compiled with "profile", one per compilation step (cat
 * "compile"). ts and dur are microseconds of CLOCK_MONOTONIC, so a host can
 * add its own events on the same clock. otherData gives the node count, the
 * runs and the slices dropped (a session keeps at most 1,048,576; a failed
 * run keeps none). Nodes of subgraphs (If, Loop, Scan bodies) are inside
 * their node's slice. Returns INVALID_ARGUMENT (a NULL argument, a session
 * made without "profile"), OUT_OF_MEMORY. Thread safe: runs may go on
 * meanwhile (those still running are not in it). */
POPRT_API poprt_status poprt_session_profile_trace(const poprt_session *session, char **json_out,
                                                   size_t *size_out);

/* ------------------------------------------------------ executable files */

/* Writes the compiled session as a self-contained executable file (.popef):
 * the compiled program, its metadata and options, page-aligned weights and
 * pre-packed kernel data, each section checksummed. The file is written to
 * a temporary name and renamed, so readers never see half a file. Returns
 * INVALID_ARGUMENT, IO_ERROR, OUT_OF_MEMORY. Thread safe (the session is
 * only read). */
POPRT_API poprt_status poprt_session_export(const poprt_session *session, const char *path);

/* Creates a session from an executable file. The file is mapped: weights
 * are used in place, so sessions and processes that load the same file share
 * them. options may change "threads", "batches_per_step" and the anchors;
 * input shapes are fixed when the file is made. Data prepared for CPU
 * features this CPU lacks is prepared anew for this CPU. Corrupt, truncated
 * or foreign files give PARSE_ERROR; files of another format or library
 * version give UNSUPPORTED; both name the file. Thread safe. */
POPRT_API poprt_status poprt_session_load(const char *path, const poprt_options *options,
                                          poprt_session **session_out);

/* 1 when the file at path starts like an executable file, else 0. */
POPRT_API int poprt_file_is_executable(const char *path);

/* ----------------------------------------------------------------- stepio */

/* A stepio over buffers the caller owns: the library reads and writes them
 * in place, never copies them at bind time, never frees them. Buffers must
 * stay valid until the runs that use them return. Not thread safe for one
 * stepio; use one stepio per concurrent run. */
POPRT_API poprt_status poprt_stepio_create(poprt_stepio **stepio_out);
POPRT_API void poprt_stepio_free(poprt_stepio *stepio);

/* Binds the buffer for input `name`: dtype, shape (rank dims) and size in
 * bytes. The shape is the shape of one step (with the leading
 * batches_per_step dimension when batches_per_step > 1). For string
 * tensors the buffer holds `const char *` pointers. */
POPRT_API poprt_status poprt_stepio_set_input(poprt_stepio *stepio, const char *name,
                                              poprt_dtype dtype, const int64_t *dims,
                                              int rank, const void *data, size_t nbytes);

/* Binds the buffer for output `name`; nbytes is its capacity. After a run,
 * poprt_stepio_output tells what was written. String outputs are
 * written as pointers owned by the stepio (valid until the next run with it
 * or its free). */
POPRT_API poprt_status poprt_stepio_set_output(poprt_stepio *stepio, const char *name,
                                               void *data, size_t nbytes);

/* Asks the library to allocate the output buffer itself for outputs whose
 * size is only known at run time. The data stays owned by the stepio. */
POPRT_API poprt_status poprt_stepio_set_output_alloc(poprt_stepio *stepio, const char *name);

/* After a run: the dtype and shape written to output `name` (*dims_out
 * points to rank dims owned by the stepio), the buffer (*data_out; the
 * caller's own buffer or the one allocated by the stepio) and the bytes
 * written. Any out-parameter may be NULL. NOT_FOUND before the first run. */
POPRT_API poprt_status poprt_stepio_output(const poprt_stepio *stepio, const char *name,
                                           poprt_dtype *dtype_out, const int64_t **dims_out,
                                           int *rank_out, const void **data_out,
                                           size_t *nbytes_out);

/* Sequence and optional values in a stepio. A sequence input is bound as
 * `count` tensors (count may be 0, with the element dtype given); an
 * optional input with no value is bound with present = 0. Outputs of these
 * kinds are always allocated by the stepio; read them with
 * poprt_stepio_output_kind and poprt_stepio_output_item. */
POPRT_API poprt_status poprt_stepio_set_input_sequence(poprt_stepio *stepio, const char *name,
                                                       poprt_dtype dtype, size_t count,
                                                       const int64_t *const *dims,
                                                       const int *ranks,
                                                       const void *const *data,
                                                       const size_t *nbytes);
POPRT_API poprt_status poprt_stepio_set_input_optional(poprt_stepio *stepio, const char *name,
                                                       int present, poprt_value_kind inner,
                                                       poprt_dtype dtype, const int64_t *dims,
                                                       int rank, const void *data,
                                                       size_t nbytes);
/* An optional input holding a sequence (present = 1, count tensors as in
 * poprt_stepio_set_input_sequence) or holding nothing (present = 0). */
POPRT_API poprt_status poprt_stepio_set_input_optional_sequence(
    poprt_stepio *stepio, const char *name, int present, poprt_dtype dtype, size_t count,
    const int64_t *const *dims, const int *ranks, const void *const *data, const size_t *nbytes);
/* kind_out: TENSOR, SEQUENCE, OPTIONAL, MAP or SEQUENCE_MAP; count_out:
 * number of tensors (sequence length; 0 or 1 for an optional tensor; for
 * an optional sequence, the sequence length and *present_out tells
 * presence) or of maps (1 for a map). */
POPRT_API poprt_status poprt_stepio_output_kind(const poprt_stepio *stepio, const char *name,
                                                poprt_value_kind *kind_out,
                                                int *present_out, size_t *count_out);
POPRT_API poprt_status poprt_stepio_output_item(const poprt_stepio *stepio, const char *name,
                                                size_t index, poprt_dtype *dtype_out,
                                                const int64_t **dims_out, int *rank_out,
                                                const void **data_out, size_t *nbytes_out);

/* Maps in a stepio (ai.onnx.ml). A map input is bound as `count` keys and
 * `count` values, two arrays the caller owns (not copied, as tensors are):
 * key_dtype POPRT_DTYPE_STRING (keys are `const char *`, none NULL) or an
 * integer type, values of value_dtype (strings as `const char *`). The
 * types must be the model's; keys must be distinct (the operators that
 * read the map report a repeated key). count may be 0 (keys and values
 * may then be NULL). INVALID_ARGUMENT names the input for NULL arrays or
 * strings and for key types that are neither; at the run, SHAPE_MISMATCH
 * names it when the model takes another kind or other key or value
 * types. Map outputs and sequence-of-map outputs are always allocated by
 * the stepio: poprt_stepio_output_kind gives POPRT_VALUE_MAP (count 1) or
 * POPRT_VALUE_SEQUENCE_MAP (count: the number of maps); read map `index`
 * (0 for a map output) with poprt_stepio_output_map: *keys_out and
 * *values_out point to *count_out elements owned by the stepio (strings
 * too), valid until its next run or its free. Any out-parameter may be
 * NULL. NOT_FOUND before the first run, for an index past the last map,
 * and for outputs that are not maps (poprt_stepio_output_item reads
 * tensors, and refuses maps). */
POPRT_API poprt_status poprt_stepio_set_input_map(poprt_stepio *stepio, const char *name,
                                                  poprt_dtype key_dtype, const void *keys,
                                                  poprt_dtype value_dtype, const void *values,
                                                  size_t count);
POPRT_API poprt_status poprt_stepio_output_map(const poprt_stepio *stepio, const char *name,
                                               size_t index, poprt_dtype *key_dtype_out,
                                               const void **keys_out,
                                               poprt_dtype *value_dtype_out,
                                               const void **values_out, size_t *count_out);

/* A stepio driven by callbacks, like PopART's PyStepIOCallback: for each
 * batch, `in` is asked for the buffer of each input (prefetch is 0 here: the
 * CPU has no prefetch stage), `in_complete` is told when the library is done
 * reading it; `out` is asked for the buffer to write each output into, and
 * `out_complete` when it is written. Buffers must hold exactly one batch
 * (one return of the anchor). A NULL from `in` or `out` cancels the run
 * (CANCELLED). Callbacks run on the thread that called poprt_session_run. */
typedef struct poprt_stepio_callbacks {
    size_t size; /* sizeof(poprt_stepio_callbacks) */
    const void *(*in)(void *user, const char *name, poprt_dtype dtype, const int64_t *dims,
                      int rank, int prefetch);
    void (*in_complete)(void *user, const char *name);
    void *(*out)(void *user, const char *name, poprt_dtype dtype, const int64_t *dims, int rank);
    void (*out_complete)(void *user, const char *name);
    void *user;
} poprt_stepio_callbacks;

POPRT_API poprt_status poprt_stepio_create_callback(const poprt_stepio_callbacks *callbacks,
                                                    poprt_stepio **stepio_out);

/* --------------------------------------------------------------- requests */

/* An asynchronous run: submitted to a session (poprt_session_submit) or a
 * runner (poprt_runner_submit), completed on a library thread. Each request
 * completes exactly once: run, failed (its own status), cancelled
 * (CANCELLED) or past its deadline (TIMEOUT). */
typedef struct poprt_request poprt_request;

/* Told of a request's completion, on the library thread that completed it,
 * before poprt_request_wait returns for it. status is the request's; when it
 * is not OK, poprt_last_error() in the callback gives its message. The
 * callback must not block for long (it holds up that thread's next run);
 * it may call poprt_request_status and poprt_request_free. */
typedef void (*poprt_request_fn)(poprt_request *request, poprt_status status, void *user);

/* Runs stepio on session asynchronously, on one of the session's request
 * workers (session option "async_workers", default 1, started at the first
 * submit). stepio must stay valid and untouched until the request
 * completes. done (may be NULL) is called once, user is handed to it.
 * request_out (may be NULL: the library frees the request after done)
 * receives a handle the caller frees with poprt_request_free. Thread safe;
 * several requests may be in flight on one session. Returns
 * INVALID_ARGUMENT, OUT_OF_MEMORY; the run's own status comes with its
 * completion. */
POPRT_API poprt_status poprt_session_submit(poprt_session *session, poprt_stepio *stepio,
                                            poprt_request_fn done, void *user,
                                            poprt_request **request_out);

/* Waits until the request completed and returns its status; timeout_us < 0
 * waits as long as it takes; TIMEOUT when it has not completed in time (the
 * request goes on). Thread safe. */
POPRT_API poprt_status poprt_request_wait(poprt_request *request, int64_t timeout_us);
/* 1 when the request has completed, else 0. Thread safe. */
POPRT_API int poprt_request_done(const poprt_request *request);
/* The status of a completed request (INVALID_ARGUMENT before). */
POPRT_API poprt_status poprt_request_status(const poprt_request *request);
/* Cancels a request that has not started: it completes with CANCELLED.
 * INVALID_ARGUMENT (naming why) when it is running or completed. */
POPRT_API poprt_status poprt_request_cancel(poprt_request *request);
/* Frees a request handle. A request still in flight is freed by the library
 * when it completes (its callback still runs). Accepts NULL. */
POPRT_API void poprt_request_free(poprt_request *request);

/* ----------------------------------------------------------------- runner */

/* A runner serves requests for one model: it compiles the model once (per
 * batch size when batching) and runs it on `replicas` independent replicas,
 * each a thread pinned, on Linux, to its own group of `cores_per_replica`
 * cores (PopRT's replication, on CPU cores), fed from one bounded queue. With
 * "max_batch" > 1 it batches dynamically: requests whose inputs agree but
 * for the batching dim are merged (in arrival order) until max_batch rows or
 * until "batch_timeout_us" after the first of them, run as one batch padded
 * to the next compiled size, and split back; padding rows are never
 * returned. A request that does not fit its batch (another dtype or shape)
 * fails alone, the others of the batch complete. A model whose batching dim
 * is fixed at 1 is batched as if it were symbolic (one that hard-codes the
 * batch inside is refused, its node named). Options: the session keys
 * (compile options apply to every replica; "threads" is replaced by
 * cores_per_replica) and
 *   "replicas"           replicas (default 1)
 *   "cores_per_replica"  threads per replica (default: the machine's cores
 *                        divided by replicas, at least 1)
 *   "pin_cores"          "1" (default): each replica's threads stay on its
 *                        cores; "0": not pinned
 *   "queue_size"         requests queued at most (default 1024); a submit
 *                        past it is QUEUE_FULL
 *   "max_batch"          rows per run at most (default 1: no batching)
 *   "batching_dim"       the dim of every input and output that counts rows
 *                        (default 0)
 *   "batch_sizes"        comma-separated batch sizes compiled, ascending,
 *                        the last one max_batch (default: powers of two up
 *                        to max_batch, and max_batch); the programs share
 *                        their packed weights
 *   "batch_timeout_us"   how long a batch waits for more requests after its
 *                        first (default 1000)
 *   "host_threads"       "1": the runner starts no thread; the host's threads
 *                        run the requests by calling poprt_runner_work, at
 *                        most `replicas` at once (each with its own sessions;
 *                        not pinned: the host places its threads), so
 *                        completions and callbacks happen on the host's
 *                        threads. Default "0": the runner's replica threads
 *   "pipeline"           for a model annotated with pipeline stages (the
 *                        manual_sharding pass): "1" (the default for such a
 *                        model without batching) runs each stage on its own
 *                        thread and cores, requests streaming through the
 *                        stages (docs/runtime.md); "0": the whole model as
 *                        one program
 *   "cores_per_stage"    threads per pipeline stage (default: the replica's
 *                        cores divided among the stages, at least 1)
 * With "pack" = "1" the runner packs transformer requests (PopRT's
 * PackRunner; not with max_batch): a request binds each token input as
 * [1, L] (L tokens; the attention mask, when bound, 1 on its first tokens
 * and 0 after them, which are then padding), and several requests share
 * rows of S tokens, each attending only to its own tokens, its positions
 * numbered from 0 (when the model's attention blocks become
 * ai.poprt.SegmentAttention, requests are laid end to end and one may run
 * from a row into the next; else each stays in one row). It gets each
 * per-token output as [1, L, ...] (zeros at its padding) and a CLS
 * pooler's output as [1, ...]: what it gets run alone padded to S, within
 * float rounding (sums in another order: tests/unit/test_pack.c allows
 * 1e-4 + 1e-4 * |solo| and measures under 1e-6). The model is converted once, on a copy: every input must be
 * [batch, seq]; its mask must reach the attention only as the extended
 * [batch, 1, 1, seq] form (Unsqueeze, Cast); positions must come from
 * 0..S-1 fed to a Gather (a constant, or a Slice from 0 of a longer one) or
 * from an input named *position*;
 * outputs must be per token or the first token's. Otherwise the runner is
 * not made (INVALID_MODEL naming the input, node or output). A request
 * longer than S, with a mask that keeps a token after padding, or with
 * token inputs of different lengths completes alone with SHAPE_MISMATCH or
 * INVALID_ARGUMENT naming it. Options:
 *   "pack"               "1": pack requests (default "0")
 *   "pack_seq_len"       S, tokens per row (default: the model's sequence
 *                        dim, else 128); fewer than the model's when every
 *                        attention block becomes SegmentAttention: a run is
 *                        then padded to a multiple of S, requests (up to
 *                        the model's length) running across rows
 *   "pack_max_rows"      rows per run at most (default 8); programs are
 *                        compiled for every row count up to 8, then in
 *                        steps of a quarter (10, 12, 14, 16, 20, ...) and
 *                        for it, sharing their packed weights
 *                        (a model whose batch dim is fixed packs that many
 *                        rows: the option, when given, must agree)
 *   "pack_timeout_us"    how long a pack with room waits for more requests
 *                        after its first (default 1000)
 *   "pack_mask_input"    the attention-mask input (default: the input whose
 *                        name contains "mask")
 *   "pack_positions"     "0" accepts a model with no position ids found
 *                        (default "1": such a model is refused)
 * Returns INVALID_ARGUMENT, INVALID_OPTION, OUT_OF_MEMORY, INVALID_MODEL (a
 * node reading a tensor of a later pipeline stage; a model packing cannot
 * vouch for) and the statuses of
 * poprt_session_create. */
typedef struct poprt_runner poprt_runner;
POPRT_API poprt_status poprt_runner_create(const poprt_model *model, const poprt_options *options,
                                           poprt_runner **runner_out);

/* Queues a request (as poprt_session_submit). deadline_us > 0: the request
 * completes with TIMEOUT if it has not started within that many
 * microseconds of the submit. QUEUE_FULL when the queue holds queue_size
 * requests (nothing is queued then). Thread safe. */
POPRT_API poprt_status poprt_runner_submit(poprt_runner *runner, poprt_stepio *stepio,
                                           int64_t deadline_us, poprt_request_fn done, void *user,
                                           poprt_request **request_out);
/* Several models behind one runner (PopRT's model fusion, on the host): one
 * queue and one set of replicas serve n_models models, each known by its
 * name (names[i], unique, non-empty). Every model is compiled (per batch
 * size when batching) with `options` and, when model_options is not NULL
 * and model_options[i] is not NULL, its own keys on top (input_shape.<name>
 * and other compile options; the runner keys replicas, max_batch, ... are
 * the runner's, from `options`). A batch holds requests of one model only.
 * Requests name their model with poprt_runner_submit_model;
 * poprt_runner_submit on such a runner is INVALID_ARGUMENT. Statistics
 * count every model's requests. Returns as poprt_runner_create; errors in a
 * model's compilation name the model. */
POPRT_API poprt_status poprt_runner_create_multi(size_t n_models,
                                                 const poprt_model *const *models,
                                                 const char *const *names,
                                                 const poprt_options *const *model_options,
                                                 const poprt_options *options,
                                                 poprt_runner **runner_out);
/* Queues a request for the model named `model` (as poprt_runner_submit).
 * INVALID_ARGUMENT, naming it, when the runner serves no such model. */
POPRT_API poprt_status poprt_runner_submit_model(poprt_runner *runner, const char *model,
                                                 poprt_stepio *stepio, int64_t deadline_us,
                                                 poprt_request_fn done, void *user,
                                                 poprt_request **request_out);
/* For a runner with "host_threads" "1": runs one batch of queued requests
 * on the calling thread (their callbacks run here too), waiting up to
 * timeout_us (< 0: as long as it takes) for a free slot and a request. OK
 * when a batch ran; TIMEOUT when none came in time; CANCELLED once
 * poprt_runner_free has begun; INVALID_ARGUMENT on a runner with its own
 * threads. Thread safe: up to `replicas` threads run batches at once, more
 * wait for a slot. A host typically loops on it from each of its threads
 * (or calls it with timeout 0 from its event loop). Do not call
 * poprt_runner_run from the only thread that calls poprt_runner_work: it
 * waits for a completion that thread would have to run. */
POPRT_API poprt_status poprt_runner_work(poprt_runner *runner, int64_t timeout_us);
/* Submits and waits: one synchronous request. Thread safe. */
POPRT_API poprt_status poprt_runner_run(poprt_runner *runner, poprt_stepio *stepio);

/* What a runner has done since it was created. Set .size = sizeof before
 * the call. Times are microseconds over the last (up to 65,536) requests. */
typedef struct poprt_runner_stats {
    size_t size;
    uint64_t requests;       /* completed, any status */
    uint64_t failed;         /* completed with a status other than OK */
    uint64_t batches;        /* runs of the model */
    double mean_batch;       /* requests per run */
    uint64_t queued;         /* waiting now */
    double wait_p50_us, wait_p90_us, wait_p99_us; /* submit to start */
    double run_p50_us, run_p90_us, run_p99_us;    /* start to completion */
} poprt_runner_stats;
POPRT_API poprt_status poprt_runner_stats_get(const poprt_runner *runner,
                                              poprt_runner_stats *stats_out);

/* Stops taking requests, completes every queued one (runs it, or TIMEOUT
 * past its deadline), then frees the runner. Accepts NULL. Not thread safe
 * with submits to the same runner. With "host_threads": host threads inside
 * poprt_runner_work finish their batch and return CANCELLED, the queued
 * requests then run on the freeing thread; no poprt_runner_work call may
 * start after poprt_runner_free returned. */
POPRT_API void poprt_runner_free(poprt_runner *runner);

#ifdef __cplusplus
}
#endif

#endif
