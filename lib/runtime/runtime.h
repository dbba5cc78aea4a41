/* Runtime internals: options, thread pool, sessions, execution frames. */
#ifndef POPRT_RUNTIME_H
#define POPRT_RUNTIME_H

#include <pthread.h>
#include "kernels/kernel.h"

struct poprt_model {
    poprt__model *m;
    /* caches behind the public getters, rebuilt when gen changes */
    unsigned gen, cache_gen;
    poprt__vec user_inputs; /* poprt__tensor *: graph inputs without initializers */
    const char **ids;
    size_t n_ids;
};
/* Public inputs of a graph: inputs that are not initializers. */
poprt_status poprt__user_inputs(const poprt__graph *g, poprt__vec *out);
void poprt__model_touch(poprt_model *model);
poprt_status poprt__set_input_shape(poprt__model *m, const char *name, const int64_t *dims, int rank);
/* Fills a poprt_value_info from a tensor (dims arrays from the arena). */
poprt_status poprt__fill_info(poprt__arena *a, const poprt__tensor *t, poprt_value_info *info);

/* ---- options ---- */
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

/* ---- thread pool ---- */
typedef struct poprt__pool poprt__pool;
poprt_status poprt__pool_create(int threads, poprt__pool **out);
/* A pool whose work runs through the host's parallel-for. */
poprt_status poprt__pool_create_host(int width, poprt_parallel_for_fn fn, void *user,
                                     poprt__pool **out);
void poprt__pool_free(poprt__pool *p);
/* Runs fn over [0,n) in deterministic chunks; returns 0 if the pool was
 * busy (the caller then runs the chunks itself). */
int poprt__pool_run(poprt__pool *p, int64_t n, int64_t grain,
                    void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx);
int poprt__pool_threads(const poprt__pool *p);
/* A run starts: sleeping workers wake and poll for its first job (their
 * wake-up then overlaps the run's set-up instead of delaying its first
 * parallel kernel); they sleep again after the short poll or at the end of
 * the run. */
void poprt__pool_alert(poprt__pool *p);
/* A run ended: workers polling for the next job go to sleep at once
 * instead of at the end of their short poll (no spinning between runs). */
void poprt__pool_rest(poprt__pool *p);

/* ---- execution ---- */
typedef struct poprt__frame {
    const poprt__graph *g;
    poprt__value *vals;        /* by tensor id */
    unsigned char *heap;       /* 1: vals[i] data is heap memory owned by the frame */
    struct poprt__frame *parent;
} poprt__frame;

typedef struct poprt__scratch_chunk {
    struct poprt__scratch_chunk *next;
    size_t size, used;
} poprt__scratch_chunk;

struct poprt__exec {
    struct poprt_session *s;   /* NULL when folding constants */
    poprt__pool *pool;
    char *arena;               /* activations of the main graph's static plan */
    poprt__frame main;
    poprt__scratch_chunk *scratch;
    poprt__arena strings;      /* string payloads (and folded outputs) */
    poprt__arena types;        /* types of the node being prepared (released after it) */
    uint64_t run_counter;
    int64_t loop_iterations;   /* Loop iterations in the current run */
    poprt__frame *cur;         /* frame of the node being run */
    poprt_status sub_status;
};

poprt_status poprt__exec_init(struct poprt__exec *x, struct poprt_session *s);
void poprt__exec_free(struct poprt__exec *x);
/* Runs graph g in frame f (values for inputs already bound). */
poprt_status poprt__exec_graph(struct poprt__exec *x, poprt__frame *f);
poprt_status poprt__frame_init(poprt__frame *f, const poprt__graph *g, poprt__frame *parent);
void poprt__frame_release(poprt__frame *f); /* frees heap values, keeps vals */
void poprt__frame_free(poprt__frame *f);
/* The folder used by sessions: runs n's kernel on its constant inputs. */
poprt_status poprt__fold_node(poprt__node *n, void *ctx);
/* Deep-copies value src into dst, allocating from the heap (dst owned). */
poprt_status poprt__value_copy_heap(poprt__value *dst, const poprt__value *src);
void poprt__value_free_heap(poprt__value *v);

/* ---- plan ---- */
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

/* ---- session ---- */
typedef struct poprt__anchor_cfg {
    poprt_anchor kind;
    int64_t every_n;
} poprt__anchor_cfg;

struct poprt_session {
    poprt__model *m;         /* private clone, shapes bound and folded */
    poprt_model *view;       /* public view for info getters */
    poprt__plan plan;
    int threads;
    int64_t batches_per_step;
    poprt__anchor_cfg *anchors; /* per graph output */
    poprt__vec inputs;          /* poprt__tensor * user inputs */
    poprt__pool *pool;
    pthread_mutex_t mu;
    void **states;              /* per main-graph node (by node->id): prepare() blobs */
    size_t *state_sizes;
    unsigned char *state_owned; /* 0: the blob lives in an executable file's mapping */
    poprt_options *options;     /* as given, recorded in executable files */
    poprt__blob *file;          /* executable file this session came from, or NULL */
    int profile;                /* option "profile": time each node */
    uint64_t *prof_ns;          /* per main-graph node: total kernel time */
    uint64_t *prof_calls;
    poprt__vec free_execs;      /* struct poprt__exec * ready for a run */
    poprt__vec all_execs;
};

/* Prepared states read from an executable file, by main-graph node index. */
typedef struct poprt__stored_states {
    size_t n;
    const void *const *data;
    const size_t *size;
    int usable; /* 0: made for a CPU this one is not: prepare() anew */
} poprt__stored_states;

/* Builds a session from a model it takes ownership of (freed on failure). */
poprt_status poprt__session_build(poprt__model *m, const poprt_options *options,
                                  const poprt__stored_states *stored, poprt_session **out);
/* Graph optimisation of a session's private model (lib/compiler/optimize.c). */
poprt_status poprt__compile_optimize(poprt__model *m, int *changed);
/* Session through the engine cache in dir (lib/compiler/popef.c). */
poprt_status poprt__session_cached(const poprt_model *model, const poprt_options *options,
                                   const char *dir, poprt_session **out);

#endif

/* ---- stepio (stepio.c), used by the run loop ---- */
poprt_status poprt__stepio_begin(poprt_stepio *io, struct poprt_session *s);
/* Binds input tensor t for batch b into v (zero copy). */
poprt_status poprt__stepio_bind_input(poprt_stepio *io, struct poprt_session *s,
                                      const poprt__tensor *t, int64_t b, poprt__value *v);
/* Hands output value v of graph output `index` for batch b to the stepio. */
poprt_status poprt__stepio_take_output(poprt_stepio *io, struct poprt_session *s, size_t index,
                                       int64_t b, const poprt__value *v);
poprt_status poprt__stepio_end(poprt_stepio *io, struct poprt_session *s);
/* Options: value of key or NULL; validation of all keys. */
const char *poprt__opt(const poprt_options *o, const char *key);
/* The limit options present in o override l's values (INVALID_OPTION for a
 * malformed value). */
poprt_status poprt__limits_from_options(const poprt_options *o, poprt__limits *l);
poprt_status poprt__options_validate(const poprt_options *o);
poprt_status poprt__parse_dims(const char *text, int64_t *dims, int *rank, const char *what);
poprt_status poprt__parse_anchor(const char *key, const char *v, poprt__anchor_cfg *out);
