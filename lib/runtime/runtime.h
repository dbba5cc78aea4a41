/* The runtime runs programs (lib/compiler/program.h): sessions (a program
 * and the state of its runs), execution frames and arenas, the thread pool,
 * stepio. It compiles nothing. */
#ifndef POPRT_RUNTIME_H
#define POPRT_RUNTIME_H

#include <pthread.h>
#include "compiler/program.h"
#include "kernels/kernel.h"
#include "passes/pack_convert.h"

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

/* ---- profile trace (trace.c) ---- */
/* One slice of the profile: a main-graph node run for one batch, or a whole
 * run (node -1). Times are poprt__now_ns. */
typedef struct poprt__trace_event {
    uint64_t t0, t1;
    uint64_t run;  /* the session's run number */
    int32_t node;  /* main-graph node id; -1: the run */
    int32_t batch;
    uint32_t tid;
} poprt__trace_event;
typedef struct poprt__trace_buf {
    poprt__trace_event *ev;
    size_t len, cap;
    uint64_t dropped; /* events that found no room */
} poprt__trace_buf;
/* Events a session keeps at most (later ones are counted as dropped). */
#define POPRT__TRACE_MAX_EVENTS ((size_t)1 << 20)

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
    unsigned weights_gen;      /* the program's weights_gen its constants were bound at */
    /* profile: the current run's slices, moved to the session's at its end */
    poprt__trace_buf trace;
    uint64_t trace_run;
    int32_t trace_batch;
};

poprt_status poprt__exec_init(struct poprt__exec *x, struct poprt_session *s);
void poprt__exec_free(struct poprt__exec *x);
/* Runs graph g in frame f (values for inputs already bound). */
poprt_status poprt__exec_graph(struct poprt__exec *x, poprt__frame *f);
poprt_status poprt__frame_init(poprt__frame *f, const poprt__graph *g, poprt__frame *parent);
/* Binds constant tensor i of f's graph to its current value. */
poprt_status poprt__frame_bind_const(poprt__frame *f, size_t i);
void poprt__frame_release(poprt__frame *f); /* frees heap values, keeps vals */
void poprt__frame_free(poprt__frame *f);
/* The folder used by sessions: runs n's kernel on its constant inputs. */
poprt_status poprt__fold_node(poprt__node *n, void *ctx);
/* Deep-copies value src into dst, allocating from the heap (dst owned). */
poprt_status poprt__value_copy_heap(poprt__value *dst, const poprt__value *src);
void poprt__value_free_heap(poprt__value *v);

/* ---- session ---- */
/* A session: a program (shared, read-only) and what its runs need: the
 * thread pool, execution contexts, the run options, profile counters. */
struct poprt_session {
    poprt__program *prog;
    poprt__model *m;            /* prog->m, read only */
    struct poprt_model *view;   /* the API layer's public view of m, or NULL */
    int threads;
    int64_t batches_per_step;
    poprt__anchor_cfg *anchors; /* per graph output */
    poprt__pool *pool;
    pthread_mutex_t mu;
    int profile;                /* option "profile": time each node */
    uint64_t *prof_ns;          /* per main-graph node: total kernel time */
    uint64_t *prof_calls;
    poprt__trace_buf trace;     /* profile: slices of the runs that returned (under mu) */
    uint64_t trace_runs;        /* profile: runs started (atomic) */
    poprt__vec free_execs;      /* struct poprt__exec * ready for a run */
    poprt__vec all_execs;
    int async_workers;          /* option "async_workers" */
    struct poprt_runner *async; /* runs poprt_session_submit's requests, made at the first */
};

/* A session running program p (a reference is taken) with the run options
 * of `options` (threads, batches_per_step, anchors, profile, the host's
 * parallel-for). */
poprt_status poprt__session_new(poprt__program *p, const poprt_options *options,
                                poprt_session **out);
/* Runs one step; safe from several threads at once with one stepio each. */
poprt_status poprt__session_run(poprt_session *s, poprt_stepio *io);
void poprt__session_free(poprt_session *s);

/* ---- runners (runner.c) ---- */
typedef struct poprt__runner_cfg {
    int replicas;
    int cores_per_replica;
    int pin;                  /* pin each replica's threads to its cores */
    size_t queue_size;
    int max_batch;            /* 1: no batching */
    int batching_dim;
    int64_t batch_timeout_ns;
    int n_sizes;
    int64_t sizes[32];        /* compiled batch sizes, ascending (one program each) */
    int host_threads;         /* 1: no replica threads; `replicas` slots for the host's
                                 threads calling poprt__runner_work */
    int n_models;             /* models served (0 counts as 1) */
    const char *const *model_names; /* n_models names (copied by poprt__runner_start) */
    int stages;               /* > 1: the programs are pipeline stages (pipeline.c) */
    int cores_per_stage;
    const poprt__vec *outputs; /* pipelines: the model's (poprt__tensor *), read at the start */
    /* packing (pack.c): pack.seq_len > 0; sizes are then the row counts
     * compiled, the last one pack_rows */
    poprt__pack_spec pack;
    int pack_rows;
} poprt__runner_cfg;
/* Starts a runner over progs[0..n_progs): model-major, per model one per
 * batch size (n_sizes when batching, else 1); the runner takes references.
 * Each replica makes its own sessions with run_opts, or all run `shared`
 * (a session's asynchronous runs). */
poprt_status poprt__runner_start(const poprt__runner_cfg *cfg, poprt__program *const *progs,
                                 int n_progs, const poprt_options *run_opts,
                                 poprt_session *shared, struct poprt_runner **out);
poprt_status poprt__runner_submit(struct poprt_runner *r, poprt_stepio *io, int64_t deadline_us,
                                  poprt_request_fn done, void *user, poprt_request **out);
/* The same for the model named `model` (NULL: a runner of one model). */
poprt_status poprt__runner_submit_to(struct poprt_runner *r, const char *model, poprt_stepio *io,
                                     int64_t deadline_us, poprt_request_fn done, void *user,
                                     poprt_request **out);
/* Host-driven runners: runs one batch of queued requests on the calling
 * thread (waiting up to timeout_us, < 0: as long as it takes, for a free
 * slot and a request). OK: a batch ran (its requests completed here);
 * TIMEOUT; CANCELLED when the runner is stopping. */
poprt_status poprt__runner_work(struct poprt_runner *r, int64_t timeout_us);
/* Stops taking requests, completes the queued ones, frees the runner. */
void poprt__runner_stop(struct poprt_runner *r);
poprt_status poprt__runner_stats(struct poprt_runner *r, poprt_runner_stats *s);
poprt_status poprt__request_wait(poprt_request *q, int64_t timeout_us);
int poprt__request_done(const poprt_request *q);
poprt_status poprt__request_status(const poprt_request *q, const char **error);
poprt_status poprt__request_cancel(poprt_request *q);
void poprt__request_free(poprt_request *q);
/* Pins the calling thread, on Linux, to `count` of the CPUs the process
 * may use, from the `first` of them on (wrapping around); advice only. */
void poprt__pin_cores(int first, int count);

/* ---- pipelined stages (pipeline.c) ---- */
/* One program per pipeline stage (lib/compiler/stages.h), each run by its
 * own thread with its own session on its own cores; requests stream
 * through bounded queues between the stages, so stage 0 works on request
 * i+1 while stage 1 works on request i. A stage reads the request's inputs
 * and the outputs of earlier stages by name, and hands the model's outputs
 * it makes to the request's stepio. */
typedef struct poprt__pipeline poprt__pipeline;
typedef struct poprt__pipeline_cfg {
    int cores_per_stage;
    int first_core; /* stage s runs on cores first_core + s * cores_per_stage ... */
    int pin;
    const poprt__vec *outputs; /* poprt__tensor *: the model's outputs (read by the start only) */
} poprt__pipeline_cfg;
/* Told once per pushed request, on a stage thread: its status and, when
 * failed, the message naming the stage. */
typedef void (*poprt__pipeline_fn)(void *user, poprt_status st, const char *msg);
/* Starts the stage threads over stages[0..n) (references taken); each
 * makes its session with run_opts. */
poprt_status poprt__pipeline_start(poprt__program *const *stages, int n,
                                   const poprt_options *run_opts, const poprt__pipeline_cfg *cfg,
                                   poprt__pipeline **out);
/* Queues io's run at stage 0 (waits while its queue is full); done(user,
 * ...) is told when it leaves the pipeline. Not thread safe: one feeder. */
poprt_status poprt__pipeline_push(poprt__pipeline *p, poprt_stepio *io, poprt__pipeline_fn done,
                                  void *user);
/* Completes every pushed request, stops the threads, frees p (NULL: no-op). */
void poprt__pipeline_free(poprt__pipeline *p);

/* ---- packing (pack.c): several requests' tokens in one row of a runner
 * running a model converted by poprt__pack_convert ---- */
#define POPRT__PACK_MAX_ROWS 1024
/* The tokens request io brings (its mask's leading ones, else its length):
 * SHAPE_MISMATCH / INVALID_ARGUMENT naming the input at fault. */
poprt_status poprt__pack_request_len(const poprt__pack_spec *s, const poprt_stepio *io,
                                     int64_t *len);
/* Where a run's requests go: end to end over the flattened rows (s->flat),
 * else first fit into rows of seq_len tokens; at most max_rows rows and,
 * when the model reads first tokens (s->firsts), max_rows * firsts
 * requests. */
typedef struct poprt__pack_plan {
    int64_t seq_len, max_len;
    int max_rows, rows, flat;
    int64_t max_n, n, used; /* requests at most (0: any) and placed; flat: tokens placed */
    int64_t fill[POPRT__PACK_MAX_ROWS];
} poprt__pack_plan;
void poprt__pack_plan_init(poprt__pack_plan *p, const poprt__pack_spec *s, int max_rows);
/* Places len tokens: 1 with their flat offset *off (row * seq_len + token),
 * 0 when they do not fit. */
int poprt__pack_plan_add(poprt__pack_plan *p, int64_t len, int64_t *off);
/* Tokens that could still be placed (0 when no request can be). */
int64_t poprt__pack_plan_room(const poprt__pack_plan *p);
/* The rows a run of n requests (lens[j] tokens at flat offset off[j]) needs. */
int64_t poprt__pack_rows(const poprt__pack_spec *s, const int64_t *lens, const int64_t *off, int n);
/* The inputs of `rows` packed rows bound in batch (buffers bufs[i] per input
 * of s, allocated here when NULL): request j's lens[j] tokens at flat offset
 * off[j]; every output asked for. */
poprt_status poprt__pack_bind(const poprt__pack_spec *s, poprt_stepio *batch, void **bufs,
                              int64_t rows, poprt_stepio *const *ios, const int64_t *lens,
                              const int64_t *off, int n);
/* Request io's outputs out of the packed batch's: it was the slot-th of the
 * run, its len tokens at flat offset off. */
poprt_status poprt__pack_deliver(const poprt__pack_spec *s, const poprt_stepio *batch,
                                 poprt_stepio *io, int slot, int64_t off, int64_t len);
/* Program p (compiled for `rows` rows) has the inputs of s and outputs
 * that unpack: INVALID_MODEL naming the output that does not. */
poprt_status poprt__pack_check_program(const poprt__pack_spec *s, const poprt__program *p,
                                       int64_t rows);

/* Profile slices (trace.c). poprt__trace_add records one in x's buffer
 * (growing it; dropped when memory runs out); poprt__trace_commit moves x's
 * slices into the session's (the caller holds s->mu); poprt__trace_json
 * writes the session's profile as Chrome trace-event JSON (NUL-terminated,
 * poprt__malloc'd; the caller must not hold s->mu). */
void poprt__trace_add(struct poprt__exec *x, int32_t node, uint64_t t0, uint64_t t1);
void poprt__trace_commit(poprt_session *s, struct poprt__exec *x);
void poprt__trace_buf_free(poprt__trace_buf *b);
poprt_status poprt__trace_json(poprt_session *s, char **out, size_t *size);

/* The session's runner for poprt_session_submit (made at the first call). */
poprt_status poprt__session_submit(poprt_session *s, poprt_stepio *io, poprt_request_fn done,
                                   void *user, poprt_request **out);

/* ---- stepio (stepio.c): the public stepio calls' implementations (the
 * API layer's poprt_stepio_* forward to them), and what the run loop uses */
poprt_status poprt__stepio_output(const poprt_stepio *stepio, const char *name,
                                  poprt_dtype *dtype_out, const int64_t **dims_out, int *rank_out,
                                  const void **data_out, size_t *nbytes_out);
poprt_status poprt__stepio_output_item(const poprt_stepio *stepio, const char *name, size_t index,
                                       poprt_dtype *dtype_out, const int64_t **dims_out,
                                       int *rank_out, const void **data_out, size_t *nbytes_out);
poprt_status poprt__stepio_output_kind(const poprt_stepio *stepio, const char *name,
                                       poprt_value_kind *kind_out, int *present_out,
                                       size_t *count_out);
poprt_status poprt__stepio_set_output(poprt_stepio *stepio, const char *name, void *data,
                                      size_t nbytes);
poprt_status poprt__stepio_set_output_alloc(poprt_stepio *stepio, const char *name);
/* poprt_session_run_buffers' rebinding: the buffers of the bound inputs and
 * outputs, in binding order (NULL keeps one); nothing changes on failure. */
poprt_status poprt__stepio_set_buffers(poprt_stepio *io, size_t n_in, const void *const *in,
                                      size_t n_out, void *const *out);
poprt_status poprt__stepio_set_input(poprt_stepio *stepio, const char *name, poprt_dtype dtype,
                                     const int64_t *dims, int rank, const void *data,
                                     size_t nbytes);
poprt_status poprt__stepio_set_input_map(poprt_stepio *stepio, const char *name,
                                        poprt_dtype key_dtype, const void *keys,
                                        poprt_dtype value_dtype, const void *values, size_t count);
poprt_status poprt__stepio_output_map(const poprt_stepio *stepio, const char *name, size_t index,
                                     poprt_dtype *key_dtype_out, const void **keys_out,
                                     poprt_dtype *value_dtype_out, const void **values_out,
                                     size_t *count_out);
poprt_status poprt__stepio_set_input_sequence(poprt_stepio *stepio, const char *name,
                                              poprt_dtype dtype, size_t count,
                                              const int64_t *const *dims, const int *ranks,
                                              const void *const *data, const size_t *nbytes);
poprt_status poprt__stepio_set_input_optional(poprt_stepio *stepio, const char *name, int present,
                                              poprt_value_kind inner, poprt_dtype dtype,
                                              const int64_t *dims, int rank, const void *data,
                                              size_t nbytes);
poprt_status poprt__stepio_set_input_optional_sequence(poprt_stepio *stepio, const char *name,
                                                       int present, poprt_dtype dtype,
                                                       size_t count, const int64_t *const *dims,
                                                       const int *ranks, const void *const *data,
                                                       const size_t *nbytes);
void poprt__stepio_free(poprt_stepio *stepio);
poprt_status poprt__stepio_create(poprt_stepio **stepio_out);
poprt_status poprt__stepio_create_callback(const poprt_stepio_callbacks *callbacks,
                                           poprt_stepio **stepio_out);

poprt_status poprt__stepio_begin(poprt_stepio *io, struct poprt_session *s);
/* Binds input tensor t for batch b into v (zero copy). */
poprt_status poprt__stepio_bind_input(poprt_stepio *io, struct poprt_session *s,
                                      const poprt__tensor *t, int64_t b, poprt__value *v);
/* Hands output value v of graph output `index` for batch b to the stepio. */
poprt_status poprt__stepio_take_output(poprt_stepio *io, struct poprt_session *s, size_t index,
                                       int64_t b, const poprt__value *v);
poprt_status poprt__stepio_end(poprt_stepio *io, struct poprt_session *s);
/* For runners making batches of stepios: tensor input `name` as bound
 * (dims and data; NOT_FOUND, SHAPE_MISMATCH for a sequence or optional),
 * the written flags cleared before a delivery, and tensor t written as
 * output `name` as a run writes it (skipped when the stepio does not ask
 * for it). */
poprt_status poprt__stepio_input_tensor(const poprt_stepio *io, const char *name, poprt__tval *out);
/* Tensor output `name` of a run (as poprt__stepio_output gives it). */
poprt_status poprt__stepio_output_tensor(const poprt_stepio *io, const char *name,
                                         poprt__tval *out);
void poprt__stepio_reset(poprt_stepio *io);
poprt_status poprt__stepio_deliver(poprt_stepio *io, const char *name, const poprt__tval *t);

#endif
