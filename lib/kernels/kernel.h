/* What kernels see at run time: values (tensors, sequences, optionals) and
 * the kernel context with the runtime's services. Kernels never allocate
 * with malloc: outputs are planned by the runtime (or allocated through
 * poprt__kctx_alloc_output for POPRT__OP_DYNAMIC ops), temporary memory
 * comes from poprt__kctx_scratch. */
#ifndef POPRT_KERNEL_H
#define POPRT_KERNEL_H

#include "ir/op.h"
#include "ir/dtype.h"
#include "kernels/vmath.h"

/* A tensor at run time. data holds numel elements in the runtime layout
 * (lib/ir/ir.h). data may be NULL when numel == 0. */
typedef struct poprt__tval {
    int32_t dtype;
    int rank;
    int64_t dims[POPRT__MAX_RANK];
    int64_t numel;
    size_t nbytes;
    void *data;
} poprt__tval;

/* A value at run time.
 * Maps (ai.onnx.ml): a MAP is two 1-D tensors of equal length in items:
 * items[0] the keys (dtype map_key: string or an integer type), items[1]
 * the values (dtype seq_elem); n_items = 2. A SEQUENCE with inner = MAP
 * holds n_items / 2 maps the same way, map i in items[2i] (keys) and
 * items[2i + 1] (values). Keys of one map are distinct. */
typedef struct poprt__value {
    poprt__kind kind;   /* TENSOR, SEQUENCE, OPTIONAL or MAP */
    poprt__kind inner;  /* OPTIONAL: TENSOR or SEQUENCE; SEQUENCE: MAP for maps, else
                           TENSOR or UNKNOWN (tensors) */
    int present;        /* OPTIONAL: has a value */
    poprt__tval t;      /* TENSOR, or OPTIONAL of a tensor */
    int32_t seq_elem;   /* SEQUENCE (or OPTIONAL of one): element dtype; MAP (or
                           SEQUENCE of maps): value dtype */
    int32_t map_key;    /* MAP (or SEQUENCE of maps): key dtype */
    int64_t n_items;    /* SEQUENCE: number of tensors (of maps: twice their number) */
    poprt__tval *items;
} poprt__value;

/* Whether v is a sequence of maps. */
static inline int poprt__value_is_map_seq(const poprt__value *v)
{
    return v->kind == POPRT__KIND_SEQUENCE && v->inner == POPRT__KIND_MAP;
}

struct poprt__exec; /* runtime internals */

typedef struct poprt__kctx poprt__kctx;
typedef poprt_status (*poprt__kernel_fn)(poprt__kctx *k);

/* Compile-time preparation of one node of a session's main graph (weight
 * pre-packing, precomputed tables): called once when the session is created,
 * with static input types and the constant inputs' data. It returns a
 * position-independent byte blob (no pointers inside), allocated with
 * poprt__aligned_alloc, or NULL for "nothing to prepare"; the kernel then
 * receives it as k->state on every run. Executable files store the blob as
 * is, so its layout must not depend on anything but the node, its inputs and
 * c->isa. */
typedef struct poprt__prep_ctx {
    const poprt__node *node;
    int opset;
    int n_in;
    const poprt__ival *in;
    int n_out;
    const poprt__type *out;
    unsigned isa; /* POPRT__ISA_* bits the kernels may use (lib/kernels/x86) */
    unsigned flags; /* POPRT__PREP_* from the session options */
    /* set by prepare: bit i when the run reads input i through the prepared
     * data whenever it can, and any other way only through
     * poprt__kctx_in_data (0 on entry). A constant every reader consumes
     * this way is not copied aligned for the runs (packed weights). */
    unsigned consumed;
} poprt__prep_ctx;
/* poprt__prep_ctx.flags: session option matmul_precision = bfloat16 (MatMul,
 * Gemm and Conv with constant float weights pack them for a bfloat16 GEMM
 * when the CPU has one) */
#define POPRT__PREP_MATMUL_BF16 1u
/* session option conv_algorithm = direct: no Winograd convolutions */
#define POPRT__PREP_CONV_DIRECT 2u
/* session option conv_algorithm = winograd_2x2 / winograd_4x4: that
 * Winograd tile for every convolution its kernels take */
#define POPRT__PREP_CONV_WINO2 4u
#define POPRT__PREP_CONV_WINO4 8u
typedef poprt_status (*poprt__prepare_fn)(poprt__prep_ctx *c, void **state, size_t *size);

/* One entry of the kernel registry (lib/kernels/registry.def): what runs an
 * operator from since_version on. */
typedef struct poprt__kernel {
    const char *domain; /* "" for ai.onnx */
    const char *name;
    int since_version;
    poprt__kernel_fn run;
    poprt__prepare_fn prepare; /* or NULL */
    const char *impl; /* the run function's name (profiles show it); "user" for user operators */
    /* bit k: run reads input k only by copying its bytes (memcpy), never as
     * typed values, so a constant there may be bound where the model file
     * holds it, at any alignment (lib/compiler/program.c) */
    unsigned bytes_in;
} poprt__kernel;

/* The kernel of (domain, op_type) for a node at opset: the entry with the
 * largest since_version not above opset (opset <= 0: the newest), built-in
 * entries first, then those poprt_op_register added. NULL when libpoprt has
 * none. Thread safe. */
const poprt__kernel *poprt__kernel_find(const char *domain, const char *op_type, int64_t opset);
/* The built-in entries, in registry.def order (for tests and listings). */
const poprt__kernel *poprt__kernel_all(size_t *count_out);
/* Adds a kernel for a user operator (lib/api/plugin.c); the strings must
 * outlive the process's use of it. INVALID_ARGUMENT when that version is
 * registered already. Thread safe. */
poprt_status poprt__kernel_register_user(const char *domain, const char *name, int since_version,
                                         poprt__kernel_fn run);
/* node->kernel for every node of g and its subgraphs (NULL where libpoprt
 * has none: running such a node fails naming it). */
void poprt__kernels_bind(poprt__graph *g);
/* The kernel a node runs: the bound one, or the registry's. */
static inline const poprt__kernel *poprt__node_kernel(const poprt__node *n)
{
    return n->kernel ? n->kernel : poprt__kernel_find(n->domain, n->op_type, n->opset);
}

struct poprt__kctx {
    const poprt__node *node;
    int opset;
    int n_in;
    poprt__value *const *in; /* in[i] NULL: omitted */
    int n_out;
    poprt__value **out;      /* out[j] NULL: omitted. Tensor outputs of
                                non-dynamic ops arrive allocated with the
                                inferred dtype and shape. */
    struct poprt__exec *exec;
    const void *state; /* what the op's prepare() made for this node, or NULL */
    size_t state_size;
    /* The vectorised math the kernel computes with (kernels/vmath.h), as
     * the runner got it from poprt__kernels_vmath(); NULL: the portable
     * table. Kernels read it through poprt__kctx_vmath and never choose
     * one themselves. */
    const poprt__vmath_variant *vm;
};

/* Input i's data. Any kernel may read it so; one whose prepare marked the
 * input consumed must: the value of such a constant comes with data NULL
 * while the session keeps it only in the prepared form, and is copied
 * aligned here (once per session, thread safe). NULL for no tensor, or
 * without memory (the error is then set). */
const void *poprt__kctx_in_data(poprt__kctx *k, int i);

/* The vectorised math table for the kernels of this process: the best the
 * CPU runs after POPRT_ISA (lib/kernels/x86/vmath.h), else the portable
 * one. Never NULL; thread safe; the same pointer on every call. */
const poprt__vmath_variant *poprt__kernels_vmath(void);
/* The table a kernel computes with: k->vm, or the portable one. */
static inline const poprt__vmath_variant *poprt__kctx_vmath(const poprt__kctx *k)
{
    return k->vm ? k->vm : &poprt__vmath_portable;
}

/* Tensor input i, or NULL when omitted / not a tensor. */
static inline const poprt__tval *poprt__kin(const poprt__kctx *k, int i)
{
    if (i >= k->n_in || !k->in[i])
        return NULL;
    const poprt__value *v = k->in[i];
    if (v->kind == POPRT__KIND_TENSOR || (v->kind == POPRT__KIND_OPTIONAL && v->present &&
                                          v->inner == POPRT__KIND_TENSOR))
        return &v->t;
    return NULL;
}
/* Tensor output j, or NULL when omitted. */
static inline poprt__tval *poprt__kout(const poprt__kctx *k, int j)
{
    return (j < k->n_out && k->out[j]) ? &k->out[j]->t : NULL;
}

/* Allocates tensor output j with the given type and shape (for dynamic ops,
 * or to replace an output's planned shape). Memory lives until the value is
 * dead. Writes the value's kind as TENSOR. */
poprt_status poprt__kctx_alloc_output(poprt__kctx *k, int j, int32_t dtype, int rank,
                                      const int64_t *dims);
/* Makes output j a sequence of n tensors of element type elem; the items'
 * tval are zeroed; allocate each with poprt__kctx_alloc_item. */
poprt_status poprt__kctx_alloc_sequence(poprt__kctx *k, int j, int32_t elem, int64_t n);
poprt_status poprt__kctx_alloc_item(poprt__kctx *k, int j, int64_t idx, int32_t dtype,
                                    int rank, const int64_t *dims);
/* Makes output j a sequence of n maps (n < 0: one MAP value) with key type
 * key and value type val, each map holding sizes[i] entries (sizes NULL:
 * every map `size` entries), keys and values allocated and zeroed. */
poprt_status poprt__kctx_alloc_maps(poprt__kctx *k, int j, int32_t key, int32_t val, int64_t n,
                                    const int64_t *sizes, int64_t size);
/* Copies a whole value (tensor, sequence, optional) into output j. */
poprt_status poprt__kctx_set_value(poprt__kctx *k, int j, const poprt__value *v);
/* Temporary memory (64-byte aligned), released after the kernel returns. */
void *poprt__kctx_scratch(poprt__kctx *k, size_t n);
/* A copy of a string that lives as long as the run's values. */
char *poprt__kctx_strdup(poprt__kctx *k, const char *s, size_t len);
/* Runs subgraph g (an attribute of k->node) with the given inputs bound to
 * g's inputs in order (not copied: they must stay valid during the call);
 * writes g's outputs to outs[0..n_outs) as heap copies the kernel owns and
 * must release with poprt__kctx_release_value (or hand to
 * poprt__kctx_set_value first). Outer-scope names resolve to the values of
 * the enclosing frames. */
poprt_status poprt__kctx_run_graph(poprt__kctx *k, const poprt__graph *g, int n_ins,
                                   const poprt__value *const *ins, int n_outs,
                                   poprt__value *outs);
void poprt__kctx_release_value(poprt__kctx *k, poprt__value *v);
/* Counts one iteration of a Loop against the run's limit
 * ("max_loop_iterations", all Loops of the run together): LIMIT_EXCEEDED
 * naming the node once it is passed. */
poprt_status poprt__kctx_loop_iteration(poprt__kctx *k);
/* Parallel loop over [0, n): fn(ctx, begin, end) on the session's worker
 * threads (or inline with one thread). Ranges are split deterministically. */
void poprt__kctx_parallel_for(poprt__kctx *k, int64_t n, int64_t grain,
                              void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);
/* Threads a parallel loop may run on (1: inline). Kernels may size their
 * work split by it, never their arithmetic: results must not depend on it. */
int poprt__kctx_threads(const poprt__kctx *k);
/* A seeded random stream for ops that draw random numbers (per node, per run). */
uint64_t poprt__kctx_random_seed(poprt__kctx *k);

/* ---- tensor helpers ---------------------------------------------------- */
static inline int64_t poprt__tval_numel(const poprt__tval *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}
/* Row-major strides in elements. */
void poprt__strides(int rank, const int64_t *dims, int64_t *strides);
/* Strides of `from` broadcast to the shape (rank, dims): 0 where from has 1
 * or is missing (right-aligned). */
void poprt__bcast_strides(const poprt__tval *from, int rank, const int64_t *dims,
                          int64_t *strides);

#endif
