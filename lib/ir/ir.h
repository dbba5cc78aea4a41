/* The in-memory IR: models, graphs (with nested subgraphs), tensors, nodes,
 * attributes. Every object of a model lives in the model's arena and is
 * freed with the model; removed nodes and tensors just become unreachable.
 *
 * Constant data (initializers, Constant values after folding) is stored in
 * the runtime layout that kernels read (see lib/ir/dtype.h):
 *   - dense, row-major, little-endian, aligned to the element size;
 *   - sub-byte types (int4, uint4, int2, uint2, float4e2m1) one element per
 *     byte (sign-extended for the signed ones);
 *   - strings as an array of NUL-terminated `char *`.
 * raw may point into the mapped model file (zero copy); the blob keeps the
 * mapping alive. There it may also lie unaligned for its element type (an
 * exporter aligns no raw_data field): typed reads go through
 * poprt__tensor_data, which makes an aligned copy on the first read of such
 * a tensor, so a weight nothing reads typed (one a session packs, one a save
 * writes) is never copied. */
#ifndef POPRT_IR_H
#define POPRT_IR_H

#include <pthread.h>
#include "core/core.h"

#define POPRT__MAX_RANK 12

/* What the public poprt_dtype_name / poprt_dtype_size return (dtype.c). */
const char *poprt__dtype_name(poprt_dtype dt);
size_t poprt__dtype_size(poprt_dtype dt);

typedef struct poprt__graph poprt__graph;
typedef struct poprt__node poprt__node;
typedef struct poprt__model poprt__model;
typedef struct poprt__op poprt__op;

/* One dimension: value >= 0 is known; value < 0 is unknown, and param names
 * it when the model gives a symbolic name. */
typedef struct poprt__dim {
    int64_t value;
    const char *param;
} poprt__dim;

typedef enum poprt__kind {
    POPRT__KIND_UNKNOWN = 0,
    POPRT__KIND_TENSOR = 1,
    POPRT__KIND_SEQUENCE = 2,
    POPRT__KIND_OPTIONAL = 3,
    POPRT__KIND_MAP = 4,
    POPRT__KIND_SPARSE = 5
} poprt__kind;

/* The type of a value. For TENSOR: elem and rank (-1: unknown rank) and
 * dims. For SEQUENCE and OPTIONAL: inner describes the element. */
typedef struct poprt__type {
    poprt__kind kind;
    int32_t elem; /* poprt_dtype; 0 = unknown */
    int rank;     /* -1 = unknown */
    poprt__dim *dims;
    struct poprt__type *inner;
} poprt__type;

/* One read of a tensor by an input slot of a node: node->uses[slot], linked
 * into the list of the tensor the slot reads (the tensor's uses). The lists
 * are kept by the functions that change a node's inputs, a graph's outputs
 * or remove nodes (poprt__node_set_input, poprt__node_resize_inputs,
 * poprt__graph_add_output, poprt__graph_set_output, poprt__graph_remove_node,
 * ...), so "who reads t" costs the number of readers, not a graph scan. */
typedef struct poprt__use {
    struct poprt__use *next, *prev;
    poprt__node *node;
    int slot;
} poprt__use;

/* A named value of a graph: a graph input, an initializer, a node output. */
typedef struct poprt__tensor {
    const char *name;
    poprt__type type;
    poprt__graph *graph;  /* graph that owns the name */
    poprt__node *producer; /* NULL for inputs and initializers */
    int producer_slot;
    /* Constant value (initializer, or folded), else NULL: nbytes bytes
     * (numel * poprt__dtype_size(type.elem)), perhaps unaligned for the
     * element type. Read as bytes (memcpy, save, compare) or typed through
     * poprt__tensor_data; set with poprt__tensor_set_data. */
    const void *raw;
    size_t nbytes;
    /* raw's aligned copy once poprt__tensor_data made one (in one of the
     * model's blobs), else NULL; written once, read with acquire loads */
    const void *aligned;
    unsigned is_input : 1;       /* listed in graph inputs */
    unsigned is_output : 1;      /* listed in graph outputs */
    unsigned is_initializer : 1; /* listed in graph initializers */
    unsigned fed_fold : 1;       /* read by a node that constant folding computed */
    /* a session's main-graph constant that every reader has in its prepared
     * data (packed weights): runs bind it without reading it when
     * poprt__tensor_data has not copied it (lib/compiler/program.c) */
    unsigned prepared_only : 1;
    /* a session's main-graph constant whose every reader copies rows of it
     * as bytes (Gather's data: an embedding table): runs bind it where it
     * is, unaligned or not, instead of an aligned copy, so the rows never
     * read stay out of memory (lib/compiler/program.c) */
    unsigned bytes_only : 1;
    const char *doc;
    int id; /* position in graph->tensors */
    /* reads: node input slots (any graph: subgraph nodes read outer values)
     * in the list, and the number of graph output slots (any graph) naming t */
    poprt__use *uses;
    int n_uses;
    int n_out_uses;
} poprt__tensor;

/* ONNX AttributeProto.AttributeType numbers. */
typedef enum poprt__attr_type {
    POPRT__ATTR_UNDEFINED = 0,
    POPRT__ATTR_FLOAT = 1,
    POPRT__ATTR_INT = 2,
    POPRT__ATTR_STRING = 3,
    POPRT__ATTR_TENSOR = 4,
    POPRT__ATTR_GRAPH = 5,
    POPRT__ATTR_FLOATS = 6,
    POPRT__ATTR_INTS = 7,
    POPRT__ATTR_STRINGS = 8,
    POPRT__ATTR_TENSORS = 9,
    POPRT__ATTR_GRAPHS = 10,
    POPRT__ATTR_SPARSE_TENSOR = 11,
    POPRT__ATTR_SPARSE_TENSORS = 12,
    POPRT__ATTR_TYPE_PROTO = 13,
    POPRT__ATTR_TYPE_PROTOS = 14
} poprt__attr_type;

typedef struct poprt__attr {
    const char *name;
    poprt__attr_type type;
    const char *ref_attr_name; /* inside function bodies: refers to the caller's attribute */
    const char *doc;
    float f;
    int64_t i;
    const char *s; /* bytes, NUL-terminated for convenience; s_len excludes the NUL */
    size_t s_len;
    poprt__tensor *t; /* TENSOR / SPARSE_TENSOR (dense form); name may be "" */
    poprt__graph *g;
    poprt__type *tp;
    /* list kinds */
    int64_t n;
    float *floats;
    int64_t *ints;
    const char **strings;
    size_t *string_lens;
    poprt__tensor **tensors;
    poprt__graph **graphs;
    poprt__type **tps;
} poprt__attr;

struct poprt__node {
    const char *name; /* never NULL; may be "" in a file, the loader names it */
    const char *op_type;
    const char *domain; /* "" for ai.onnx */
    const char *overload;
    const char *doc;
    /* Inputs are written only through poprt__node_set_input and
     * poprt__node_resize_inputs (the elements are const so the compiler
     * refuses other writes): they keep the tensors' use lists. */
    int n_inputs;
    poprt__tensor *const *inputs; /* NULL entry: omitted optional input */
    poprt__use *uses;             /* uses[k]: the read of inputs[k] */
    int n_outputs;
    poprt__tensor **outputs; /* NULL entry: omitted optional output */
    int n_attrs;
    poprt__attr *attrs;
    poprt__graph *graph;
    const poprt__op *op; /* schema and inference, resolved by poprt__graph_resolve */
    /* what runs it: bound by the compiler from lib/kernels' registry (an
     * opaque slot here: the IR knows no kernel) */
    const struct poprt__kernel *kernel;
    const struct poprt__schema *schema; /* ONNX schema in force (lib/ir/schema.h), or NULL */
    int opset;           /* version of node->domain in force */
    int id;              /* scratch index, set by poprt__graph_toposort */
    unsigned removed : 1; /* detached, waiting for poprt__graph_compact */
    unsigned live : 1;    /* scratch of poprt__model_check_uses */
    unsigned seen : 1;    /* scratch of poprt__graph_consumers */
    /* metadata_props as key/value pairs (used for shard/pipeline annotations) */
    int n_meta;
    const char **meta_keys;
    const char **meta_vals;
};

struct poprt__graph {
    const char *name;
    const char *doc;
    poprt__model *model;
    poprt__graph *parent;       /* enclosing graph of a subgraph, else NULL */
    poprt__node *parent_node;   /* node whose attribute holds this graph */
    poprt__vec nodes;           /* poprt__node *, topological after toposort */
    poprt__vec tensors;         /* poprt__tensor * owned by this graph */
    poprt__vec inputs;          /* poprt__tensor *, in order (initializers excluded
                                   unless the file also lists them as inputs) */
    poprt__vec outputs;         /* poprt__tensor *, in order */
    poprt__vec initializers;    /* poprt__tensor *, in file order */
    poprt__map by_name;         /* name -> poprt__tensor * (this graph only) */
    /* A subgraph whose inference failed (poprt__subgraph_infer): the status
     * and message, reported when the subgraph runs, not before (POPRT_OK:
     * none). Its value types past the failing node stay unknown. */
    poprt_status deferred;
    const char *deferred_msg;
};

typedef struct poprt__opset {
    const char *domain;
    int64_t version;
} poprt__opset;

/* A model-local function (FunctionProto). Its body is a graph whose inputs
 * and outputs are the formal parameters. */
typedef struct poprt__function {
    const char *name;
    const char *domain;
    const char *overload;
    int n_attr_names;
    const char **attr_names;
    int n_attr_defaults;
    poprt__attr *attr_defaults;
    int n_opsets;
    poprt__opset *opsets;
    poprt__graph *body;
} poprt__function;

/* Resource limits (options "max_nodes", "max_tensor_bytes",
 * "max_loop_iterations", "max_subgraph_depth"): a model or run that would
 * exceed one fails with LIMIT_EXCEEDED naming the option. */
typedef struct poprt__limits {
    int64_t max_nodes;           /* nodes in all graphs of a model */
    uint64_t max_tensor_bytes;   /* bytes of one tensor (declared, inferred, made) */
    int64_t max_loop_iterations; /* Loop iterations, all Loops together, in one run */
    int max_subgraph_depth;      /* graphs nested inside graphs */
} poprt__limits;
#define POPRT__DEFAULT_MAX_NODES ((int64_t)1 << 22)
#define POPRT__DEFAULT_MAX_LOOP_ITERATIONS ((int64_t)100000000)
#define POPRT__HARD_MAX_SUBGRAPH_DEPTH 64 /* what the C stack allows */
#define POPRT__DEFAULT_MAX_SUBGRAPH_DEPTH POPRT__HARD_MAX_SUBGRAPH_DEPTH
/* The defaults; max_tensor_bytes is the machine's physical memory. */
void poprt__limits_default(poprt__limits *l);
/* The limits of the model n belongs to (the defaults for a node outside any
 * model, as the kernel tests make). */
const poprt__limits *poprt__node_limits(const poprt__node *n);

struct poprt__model {
    poprt__arena arena;
    poprt__limits limits;
    poprt__vec blobs; /* poprt__blob * kept alive (file mapping, external data) */
    /* the blobs of m->blobs holding one large folded value each
     * (poprt__model_fold_alloc), which poprt__model_sweep_folded frees once
     * no live tensor reads them */
    poprt__vec folded;
    poprt__vec graphs_all; /* every poprt__graph made for this model */
    int64_t ir_version;
    const char *producer_name, *producer_version, *domain, *doc;
    int64_t model_version;
    int n_opsets;
    poprt__opset *opsets;
    int n_meta;
    const char **meta_keys;
    const char **meta_vals;
    int n_functions;
    poprt__function *functions;
    poprt__graph *graph;
    /* the evaluator passes use while a pass manager runs them (opaque here:
     * lib/passes/passes.h), else NULL */
    const struct poprt__evaluator *eval;
    const char *path;    /* file it was loaded from, or NULL */
    const char *dir;     /* folder for external data, or NULL */
    int uid_counter;     /* for unique names made by passes */
    /* public graph edits (lib/api/graph.c): counted, for the API's caches;
     * edited until poprt__model_check next succeeds through the API */
    unsigned edit_count;
    unsigned edited : 1;
    /* held while poprt__tensor_data copies a tensor into blobs and while a
     * clone reads blobs, so threads sharing a const model (saves, session
     * creates) may both do that */
    pthread_mutex_t lock;
};

/* ---- construction --------------------------------------------------------- */
poprt_status poprt__model_new(poprt__model **out);
void poprt__model_free(poprt__model *m);
poprt_status poprt__model_clone(const poprt__model *m, poprt__model **out);
poprt__graph *poprt__graph_new(poprt__model *m, poprt__graph *parent, const char *name);
/* Tensor by name in g or an enclosing graph, else NULL. */
poprt__tensor *poprt__graph_find(const poprt__graph *g, const char *name);
/* The tensor named `name` in g (found or created with unknown type). */
poprt__tensor *poprt__graph_tensor(poprt__graph *g, const char *name);
/* A new tensor with a name unique in the model, derived from base. */
poprt__tensor *poprt__graph_new_tensor(poprt__graph *g, const char *base);
poprt__node *poprt__graph_add_node(poprt__graph *g, const char *op_type, const char *domain,
                                   const char *name, int n_inputs, int n_outputs);
/* Removes n from g: its reads (and those of its subgraphs' nodes and
 * outputs) leave the use lists and its outputs lose their producer. Costs a
 * pass over g->nodes; passes that remove many nodes detach them and compact
 * once. */
void poprt__graph_remove_node(poprt__graph *g, poprt__node *n);
/* The first half of a removal: n's reads leave the use lists, its outputs
 * lose their producer, and n is marked removed, but it stays in g->nodes
 * until poprt__graph_compact(g) (callers skip removed nodes meanwhile). */
void poprt__graph_detach_node(poprt__node *n);
void poprt__graph_compact(poprt__graph *g);
/* n->inputs[k] = t, moving the read between use lists (t may be NULL). */
void poprt__node_set_input(poprt__node *n, int k, poprt__tensor *t);
/* Grows (new slots read nothing) or shrinks n's inputs. OUT_OF_MEMORY
 * leaves n as it was. */
poprt_status poprt__node_resize_inputs(poprt__node *n, int count);
/* g's outputs list, kept with the tensors' output-read counts. */
poprt_status poprt__graph_add_output(poprt__graph *g, poprt__tensor *t);
void poprt__graph_set_output(poprt__graph *g, size_t i, poprt__tensor *t);
void poprt__graph_truncate_outputs(poprt__graph *g, size_t len);
/* Whether node n lies in g or in a subgraph of g's nodes. */
int poprt__node_within(const poprt__node *n, const poprt__graph *g);
/* The use lists checked against the graphs (every reachable node's input
 * slots and graph outputs); INTERNAL naming the first tensor whose list
 * disagrees. Rebuilds them when asked (rebuild = 1): after a bulk change that
 * did not keep them. */
poprt_status poprt__model_check_uses(poprt__model *m, int rebuild);
/* Whether poprt__model_check fails (INTERNAL) on a use list that disagrees
 * with the graphs instead of rebuilding it: set POPRT_CHECK_IR=1 in the
 * environment (the tests do) to find the pass that did not keep them. */
int poprt__ir_strict_uses(void);
/* The attribute `name` of n, zeroed with the given type: added, or the one n
 * has replaced (a node never holds one name twice). NULL when out of memory. */
poprt__attr *poprt__node_add_attr(poprt__node *n, const char *name, poprt__attr_type type);
/* Opset version imported for domain ("" and "ai.onnx" are the same), or 0. */
int64_t poprt__model_opset(const poprt__model *m, const char *domain);
const char *poprt__model_unique_name(poprt__model *m, const char *base);

/* ---- rewriting (lib/ir/rewrite.c), for passes ------------------------------- */
/* Nodes of g (not subgraphs) reading t (directly or in their subgraphs),
 * each once, in no particular order; out is cleared first. */
poprt_status poprt__graph_consumers(const poprt__graph *g, const poprt__tensor *t, poprt__vec *out);
/* Number of reads of t anywhere (nodes of g and of subgraphs, and as a graph
 * output of g). */
int poprt__tensor_use_count(const poprt__graph *g, const poprt__tensor *t);
/* Every read of `from` (in g, its subgraphs, and g's outputs list) reads
 * `to` instead. When `from` is a graph output, `to` takes its place in the
 * outputs list keeping the output's name: callers that need the output
 * name kept should rename instead (poprt__tensor_rename). */
poprt_status poprt__graph_replace_uses(poprt__graph *g, poprt__tensor *from, poprt__tensor *to);
/* Renames a tensor (updates the name table). NOT_FOUND-free: the new name
 * must be unused (INVALID_ARGUMENT otherwise). */
poprt_status poprt__tensor_rename(poprt__tensor *t, const char *name);
/* Removes nodes whose outputs are all unused and not graph outputs, repeatedly,
 * and initializers nothing reads; returns the number of nodes removed. */
int poprt__graph_remove_dead(poprt__graph *g);
/* Only the nodes part of poprt__graph_remove_dead (initializers stay). */
int poprt__graph_remove_dead_nodes(poprt__graph *g);
/* Makes t a constant initializer of its graph holding data (copied into
 * poprt__model_fold_alloc's memory: a blob of its own when large, which the
 * model's clones share) with the given dtype and shape; t keeps its name. */
poprt_status poprt__tensor_set_const(poprt__tensor *t, int32_t dtype, int rank,
                                     const int64_t *dims, const void *data, size_t nbytes);
/* t's constant value for typed reads: raw when it is aligned for the element
 * type, else an aligned copy of it made on the first call and kept with the
 * model (the mapped file pages it came from then go back to the kernel).
 * NULL when t is not a constant, or when that copy finds no memory (the
 * error is then set: OUT_OF_MEMORY naming t). Thread safe. */
const void *poprt__tensor_data(const poprt__tensor *t);
/* Hands the pages of m's file mappings inside [p, p + n) back to the kernel
 * (bytes read once and not needed soon: the kernel reads them from the file
 * again if anything touches them). Thread safe. */
void poprt__model_drop_pages(const poprt__model *m, const void *p, size_t n);
/* n writable bytes for a value constant folding computed, aligned for any
 * element type: large ones in a blob of their own (see folded), others in
 * m's arena. NULL
 * when out of memory. Thread safe for one model as poprt__tensor_data. */
void *poprt__model_fold_alloc(poprt__model *m, size_t n);
/* Frees the folded blobs no live tensor of m reads (one with readers, a
 * graph output, in any graph of m, or a node's tensor attribute), clearing
 * the dead tensors that still point into them; returns the bytes freed. For the end of a compile: the
 * intermediates of folding (a weight computed in steps) are dead by then. */
size_t poprt__model_sweep_folded(poprt__model *m);
/* Whether poprt__tensor_data(t) would copy raw now: a constant unaligned for
 * its element type and not read typed yet. */
int poprt__tensor_data_lazy(const poprt__tensor *t);
/* t's constant value becomes data (NULL: t is no constant); the caller keeps
 * nbytes and the type in step. */
static inline void poprt__tensor_set_data(poprt__tensor *t, const void *data)
{
    t->raw = data;
    t->aligned = NULL;
}
/* A new initializer named from base. */
poprt__tensor *poprt__graph_add_const(poprt__graph *g, const char *base, int32_t dtype, int rank,
                                      const int64_t *dims, const void *data, size_t nbytes);
/* The same with nbytes of memory for its value (poprt__model_fold_alloc's,
 * as poprt__tensor_set_const copies into) that the caller writes through
 * *data before anything reads the tensor: a pass computes a large constant
 * in place instead of in a buffer of its own then copied. NULL when out of
 * memory. */
poprt__tensor *poprt__graph_add_const_buffer(poprt__graph *g, const char *base, int32_t dtype,
                                             int rank, const int64_t *dims, size_t nbytes,
                                             void **data);
/* Single consumer of t in g, or NULL when t has zero or several readers or is
 * a graph output. */
poprt__node *poprt__graph_sole_consumer(const poprt__graph *g, const poprt__tensor *t);
/* Adds an opset import for domain unless the model has one (passes that
 * create ai.poprt nodes call this with ("ai.poprt", 1)). */
poprt_status poprt__model_ensure_opset(poprt__model *m, const char *domain, int64_t version);
/* The inputs a caller binds: graph inputs that are not initializers. */
poprt_status poprt__user_inputs(const poprt__graph *g, poprt__vec *out);
/* Fixes the symbolic dims of main-graph input `name` (NOT_FOUND, SHAPE_MISMATCH
 * against known dims, INVALID_ARGUMENT); the caller infers again. */
poprt_status poprt__set_input_shape(poprt__model *m, const char *name, const int64_t *dims,
                                    int rank);
/* Makes dim d of input `name` symbolic (param, copied), every other tensor's
 * type unknown again, and re-infers the graph: what a model whose batch is
 * fixed computes for any batch. A node whose shapes then disagree (a
 * Reshape to a constant batch of 1, say) fails the inference, named. */
poprt_status poprt__free_input_dim(poprt__model *m, const char *name, int d, const char *param);
/* Number of nodes in g and all its subgraphs. */
size_t poprt__graph_count_nodes(const poprt__graph *g);

/* ---- attribute access (defaults when absent) -------------------------------- */
const poprt__attr *poprt__node_attr(const poprt__node *n, const char *name);
int64_t poprt__attr_i(const poprt__node *n, const char *name, int64_t dflt);
float poprt__attr_f(const poprt__node *n, const char *name, float dflt);
const char *poprt__attr_s(const poprt__node *n, const char *name, const char *dflt);
/* INTS attribute: *count_out = n and returns the array, or NULL (count 0). */
const int64_t *poprt__attr_ints(const poprt__node *n, const char *name, int64_t *count_out);
const float *poprt__attr_floats(const poprt__node *n, const char *name, int64_t *count_out);

/* Input i if present (n_inputs > i and not omitted), else NULL. */
static inline poprt__tensor *poprt__node_in(const poprt__node *n, int i)
{
    return (i < n->n_inputs) ? n->inputs[i] : NULL;
}
static inline poprt__tensor *poprt__node_out(const poprt__node *n, int i)
{
    return (i < n->n_outputs) ? n->outputs[i] : NULL;
}

/* ---- types ------------------------------------------------------------------ */
/* Number of elements if every dim is known, else -1. rank 0 -> 1. */
int64_t poprt__type_numel(const poprt__type *t);
int poprt__type_is_static(const poprt__type *t);
/* Makes *t a tensor type of rank dims (NULL: unknown dims); OUT_OF_MEMORY
 * (no message) leaves it unchanged. */
poprt_status poprt__type_set_tensor(poprt__arena *a, poprt__type *t, int32_t elem, int rank,
                                    const int64_t *dims);
poprt_status poprt__type_copy(poprt__arena *a, poprt__type *dst, const poprt__type *src);
/* "float[1,3,N,224]" for messages; arena-allocated. */
const char *poprt__type_str(poprt__arena *a, const poprt__type *t);

/* ---- analysis --------------------------------------------------------------- */
/* Resolves each node's schema (op + opset), recursing into subgraphs.
 * UNSUPPORTED naming node and op for unknown ops or domains. */
poprt_status poprt__graph_resolve(poprt__graph *g);
/* Topologically sorts g->nodes (stable for already ordered graphs);
 * INVALID_MODEL naming a node on a cycle or a tensor without producer. */
poprt_status poprt__graph_toposort(poprt__graph *g);
/* Structural validation: unique producers, defined inputs, arity, attribute
 * kinds, then type/shape inference (poprt__graph_infer). */
poprt_status poprt__model_check(poprt__model *m);
/* The parts of poprt__model_check before inference (lib/ir/validate.c):
 * opset imports (versions from 1 to the newest known, each domain once),
 * and, after poprt__graph_resolve, every node's attributes against its
 * schema and the declared types of every value. */
poprt_status poprt__model_validate_opsets(const poprt__model *m);
poprt_status poprt__model_validate(const poprt__model *m);
/* The checks poprt__model_validate_opsets applies to a model's imports, on
 * a list of them. */
poprt_status poprt__model_check_opsets(const poprt__opset *opsets, int n);
/* Shape and type inference over g and its subgraphs, in topological order.
 * With a folder, nodes whose inputs are all constant (Shape/Size: whose
 * input shape is static) and whose outputs are at most folder->max_bytes
 * are evaluated (the runtime supplies fn: it runs the reference kernel and
 * stores the result as the outputs' constant data). */
typedef struct poprt__folder {
    poprt_status (*fn)(poprt__node *n, void *ctx);
    void *ctx;
    size_t max_bytes;
} poprt__folder;
poprt_status poprt__graph_infer(poprt__graph *g, const poprt__folder *folder);
/* Inference of a control-flow subgraph (If branch, Loop/Scan/SequenceMap
 * body). Its shape and type errors are deferred, as ONNX Runtime checks
 * only the branch that runs: recorded on sub (deferred, deferred_msg) and
 * POPRT_OK returned, so a branch not taken never fails a load or a compile;
 * running sub reports them (poprt__kctx_run_graph). Out-of-memory and
 * internal errors are returned. A later inference that succeeds clears it. */
poprt_status poprt__subgraph_infer(poprt__graph *sub, const poprt__folder *folder);
/* Nodes of g's subgraphs (recursively) read these tensors of g or of graphs
 * enclosing g: collected into out (no duplicates). */
poprt_status poprt__node_implicit_inputs(const poprt__node *n, poprt__vec *out);
/* The values integer tensor t may hold without a node that reads it as an
 * index (Gather, GatherElements, GatherND, ScatterElements, ScatterND) going
 * out of range, followed through nodes that only move values (Cast,
 * Reshape, Unsqueeze, ...) and Add/Sub of a constant scalar (index_range.c):
 * [*lo, *hi], INT64_MIN / INT64_MAX on a side nothing bounds; *lo > *hi when
 * two readers disagree. */
void poprt__index_range(const poprt__tensor *t, int64_t *lo, int64_t *hi);
/* Inlines calls to model-local functions into the graphs. */
poprt_status poprt__model_inline_functions(poprt__model *m);

#endif
