/* The compiler's product: a program (DESIGN.md's one flow: model -> passes
 * -> compile -> program -> .popef / session). A program holds the optimised
 * graph with a kernel bound to every node, each node's prepared kernel data
 * (packed weights, tables) and the main graph's memory plan. It is built
 * once (poprt__program_compile, or poprt__program_load from an executable
 * file), immutable afterwards, and shared read-only by every session made
 * from it: it is reference counted and nothing writes it while sessions run.
 *
 * Also here, because the compiler is their first reader: the options store
 * behind the public poprt_options handle, and the memory plan. */
#ifndef POPRT_PROGRAM_H
#define POPRT_PROGRAM_H

#include <pthread.h>
#include "ir/op.h"

/* ---- options (options.c) ------------------------------------------------ */
typedef struct poprt__kv {
    char *key, *value;
} poprt__kv;
struct poprt_options {
    poprt__kv *kv;
    size_t n;
    poprt_parallel_for_fn pf; /* host parallel-for, or NULL */
    void *pf_user;
    int pf_width;
};
typedef struct poprt__anchor_cfg {
    poprt_anchor kind;
    int64_t every_n;
} poprt__anchor_cfg;
/* The value of key, or NULL. */
const char *poprt__opt(const poprt_options *o, const char *key);
/* The "threads" option: 1 when absent or below 1, at most max. */
int poprt__opt_threads(const poprt_options *o, int max);
/* INVALID_OPTION naming the first unknown key or malformed value. */
poprt_status poprt__options_validate(const poprt_options *o);
poprt_status poprt__options_new(poprt_options **out);
void poprt__options_free(poprt_options *o);
/* Sets key (checked as poprt_options_set does) to value; both copied. */
poprt_status poprt__options_set(poprt_options *o, const char *key, const char *value);
/* Sets every key of src (may be NULL) on dst, src's values winning; with
 * hooks, dst also takes src's host parallel-for. */
poprt_status poprt__options_add(poprt_options *dst, const poprt_options *src, int hooks);
/* The same, leaving out the keys that start with skip (NULL: none). */
poprt_status poprt__options_add_except(poprt_options *dst, const poprt_options *src, int hooks,
                                       const char *skip);
poprt_status poprt__parse_dims(const char *text, int64_t *dims, int *rank, const char *what);
poprt_status poprt__parse_anchor(const char *key, const char *v, poprt__anchor_cfg *out);
poprt_status poprt__parse_sizes(const char *key, const char *text, int64_t *sizes, int *n_out);
/* The options' input_shape.<name> set on m's main-graph inputs
 * (INVALID_OPTION naming the option). */
poprt_status poprt__apply_input_shapes(poprt__model *m, const poprt_options *o);
/* The limit options present in o override l's values (INVALID_OPTION for a
 * malformed value). */
poprt_status poprt__limits_from_options(const poprt_options *o, poprt__limits *l);

/* ---- the memory plan (plan.c) ---------------------------------------------- */
/* plan.view values: how a main-graph node runs */
enum {
    POPRT__PLAN_RUN = 0,    /* its kernel runs */
    POPRT__PLAN_VIEW = 1,   /* output 0 aliases input 0: the node does not run */
    POPRT__PLAN_CONCAT = 2  /* a Concat whose inputs were written in its output: does not run */
};
typedef struct poprt__plan {
    int64_t *offset;     /* per main-graph tensor: arena offset, or -1 */
    unsigned char *view; /* per main-graph node: a POPRT__PLAN_* value */
    size_t arena_bytes;
    size_t n_concat_elided; /* nodes marked POPRT__PLAN_CONCAT */
} poprt__plan;
poprt_status poprt__plan_build(const poprt__graph *g, poprt__plan *p);
void poprt__plan_free(poprt__plan *p);

/* ---- programs (program.c) --------------------------------------------------- */
/* A weight of a program: an initializer of the source model that reaches
 * the compiled graph unchanged (not folded into other constants, not
 * rewritten by a fusion), so replacing its value means what the caller
 * expects (weights.c). */
typedef struct poprt__weight {
    poprt__tensor *t;  /* in the program's main graph */
    const void *orig;  /* the compiled value, put back by a reset */
    const void *orig_aligned; /* its aligned copy when it was last replaced */
    size_t nbytes;     /* its size as given */
    void *copy;        /* a value written since (aligned heap), or NULL */
    int64_t dims[POPRT__MAX_RANK]; /* its shape, for poprt_session_weight */
} poprt__weight;

/* One step of a compilation as the profile shows it: name (static), start
 * and end (poprt__now_ns) and the thread that ran it. */
typedef struct poprt__span {
    const char *name;
    uint64_t t0, t1;
    uint32_t tid;
} poprt__span;
#define POPRT__PROGRAM_SPANS 8
/* A subgraph node's prepared data (If / Loop / Scan bodies). */
typedef struct poprt__sub_state {
    const poprt__node *node;
    void *state; /* poprt__aligned_alloc'd, owned */
    size_t size;
} poprt__sub_state;

typedef struct poprt__program {
    int refs;                   /* atomic */
    poprt__model *m;            /* the optimised graph; node->kernel bound everywhere */
    poprt__plan plan;           /* the main graph's memory plan */
    void **states;              /* per main-graph node (by node->id): prepared data */
    size_t *state_sizes;
    unsigned char *state_owned; /* 0: the data lives in the executable file's bytes, in
                                   `shares`', or is another node's (equal bytes) */
    unsigned *consumed;         /* per main-graph node: poprt__prep_ctx.consumed of its
                                   prepare (0 for data from an executable file) */
    /* per main-graph node, poprt__program_share_equal_states' key of its
     * data (window checksum) and the data it was taken of: each copy is
     * hashed once over the sharing passes (NULL until the first) */
    struct poprt__share_key {
        const void *of;
        uint64_t sum;
    } *share_keys;
    poprt__sub_state *sub_states; /* subgraph nodes with prepared data, by node address */
    size_t n_sub_states;
    poprt__vec inputs;          /* poprt__tensor *: the inputs a caller binds */
    poprt_options *options;     /* as compiled with (recorded in executable files) */
    poprt__blob *file;          /* the executable file it came from, or NULL */
    /* weights (weights.c): runs hold wlock for reading, a write or reset
     * for writing, and bumps weights_gen so runs rebind the constants */
    pthread_rwlock_t wlock;
    unsigned weights_gen; /* atomic */
    poprt__weight *weights;
    size_t n_weights;
    /* compiled with option "profile" = "1": when each step ran */
    poprt__span spans[POPRT__PROGRAM_SPANS];
    int n_spans;
    struct poprt__program *shares; /* a program whose prepared data it reads (a reference) */
    int shared_by; /* atomic: programs that read this one's prepared data (their `shares`) */
} poprt__program;

/* ---- weights (weights.c) ---------------------------------------------------- */
/* Before compiling: the main graph's initializers (candidates for weights),
 * with their values, into *out (poprt__free'd by the caller). */
poprt_status poprt__weights_candidates(const poprt__model *m, poprt__weight **out, size_t *n_out);
/* After compiling: the candidates that are still initializers read by a
 * node, with the same value and never folded into another constant, become
 * the program's weights (takes cands). */
poprt_status poprt__weights_select(poprt__program *p, poprt__weight *cands, size_t n);
/* 1 when candidate w of compiled model m is such a weight. */
int poprt__weights_kept(const poprt__model *m, const poprt__weight *w);
void poprt__weights_free(poprt__program *p);
/* Index of the weight named name, or -1. */
long poprt__weight_find(const poprt__program *p, const char *name);
/* Reads / writes / puts back weight i (write and reset block until running
 * steps finish; steps started after see the new value). A program loaded
 * from an executable file refuses writes. */
poprt_status poprt__weight_read(poprt__program *p, size_t i, void *data, size_t nbytes);
poprt_status poprt__weight_write(poprt__program *p, size_t i, const void *data, size_t nbytes);
poprt_status poprt__weight_reset(poprt__program *p, size_t i);
/* Prepares node i of the main graph again (its inputs' values changed). */
poprt_status poprt__program_prepare_node(poprt__program *p, size_t i);
/* Main-graph nodes whose prepared data are the very same bytes (nodes
 * reading one shared weight with the same attributes and shapes:
 * light_resnet50's blocks share their convolutions' weights, each packed
 * again, 9 MB apiece) keep one copy: the first node owns it, the others
 * read it (state_owned 0; a node prepared again lets go of it, passing it
 * on to a reader: poprt__program_prepare_node). Kernels only read their
 * prepared data (poprt__kctx.state is const), so a shared copy runs every
 * node as its own did. Run after compiling and after a weight's readers
 * are prepared again; returns the bytes freed. */
size_t poprt__program_share_equal_states(poprt__program *p);
/* The prepared data of subgraph node n, or NULL (none: the kernel runs
 * without). */
const poprt__sub_state *poprt__program_sub_state(const poprt__program *p, const poprt__node *n);
/* Prepares subgraph entry e's node again (its inputs' values changed). */
poprt_status poprt__program_prepare_sub(poprt__program *p, poprt__sub_state *e);

/* Prepared data read from an executable file, by main-graph node index. */
typedef struct poprt__stored_states {
    size_t n;
    const void *const *data;
    const size_t *size;
    int usable; /* 0: made for a CPU this one is not: prepare anew */
} poprt__stored_states;

/* Compiles model m (taken: freed on failure) with options (input shapes,
 * "optimize", limits): functions inlined, constants folded by `folder` (the
 * evaluator the caller hands in: the compiler runs no kernel itself),
 * graph optimisation, kernels bound, nodes prepared (or their data taken
 * from `stored`), memory planned. */
poprt_status poprt__program_compile(poprt__model *m, const poprt_options *options,
                                    const poprt__folder *folder,
                                    const poprt__stored_states *stored, poprt__program **out);
void poprt__program_ref(poprt__program *p);
void poprt__program_unref(poprt__program *p); /* frees it with the last reference */
/* p reads from's prepared data wherever a node of p (same name and
 * operator) prepared the very same bytes, and frees its own copy: programs
 * of one model compiled for other input shapes (a runner's batch sizes)
 * then hold packed weights once. p keeps a reference to from; from must not
 * share p's. Returns the bytes freed. Not thread safe with sessions of p
 * running (call it right after compiling). */
size_t poprt__program_share_states(poprt__program *p, poprt__program *from);

/* Graph optimisation of the program's model (optimize.c); bf16: the
 * session multiplies in bfloat16 (matmul_precision), so convolutions keep
 * NCHW (their bfloat16 path is the GEMM's, not the blocked one's). */
poprt_status poprt__compile_optimize(poprt__model *m, int bf16, int *changed);

/* ---- executable files (popef.c) -------------------------------------------- */
/* The program serialised as one executable file (popef.h), model_hash
 * recorded for the engine cache (0: none). *data is poprt__malloc'd. */
poprt_status poprt__program_serialize(const poprt__program *p, uint64_t model_hash, void **data,
                                      size_t *size);
/* The program of an executable file held by f (a mapping or an aligned
 * copy; the program keeps a reference): checked, weights and prepared data
 * used in place. options: the caller's, applied over the file's for the
 * keys that may change after compiling (threads, batches_per_step,
 * anchors); the result's options are that merge. name is for messages. */
poprt_status poprt__program_load(const char *name, poprt__blob *f, const poprt_options *options,
                                 const poprt__folder *folder, poprt__program **out);
/* The model hash an executable file records (0 when it has none). */
uint64_t poprt__program_file_hash(const poprt__blob *f);

#endif
