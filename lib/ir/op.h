/* Operator schemas: one poprt__op per (domain, op_type, since_version),
 * holding the arity and the type/shape inference function. The kernels that
 * run an operator are lib/kernels' business (its registry.def).
 *
 * One inference function serves both the IR (types with symbolic dims,
 * constant inputs only) and the runtime (concrete shapes and the actual
 * input data), so it must:
 *   - handle unknown rank (-1) and unknown dims (value < 0) by producing
 *     unknown dims, never failing for lack of information;
 *   - use in[i].data when it needs an input's value (Reshape's shape,
 *     Slice's starts, ...) and produce unknown dims when it is NULL;
 *   - fail with SHAPE_MISMATCH / INVALID_MODEL and a message naming the node
 *     (use POPRT__NODE_ERR) when inputs are inconsistent.
 * Data seen through poprt__ival is in the runtime layout (lib/ir/ir.h). */
#ifndef POPRT_OP_H
#define POPRT_OP_H

#include "ir/ir.h"

typedef struct poprt__ival {
    const poprt__type *type; /* NULL: input omitted */
    const void *data;        /* value when known, else NULL (see poprt__ival_data) */
    size_t nbytes;
    /* shape inference: the constant tensor behind the value, whose data
     * only poprt__ival_data reads (so inference copies no unaligned weight
     * it does not look at), else NULL */
    const struct poprt__tensor *src;
} poprt__ival;

/* The value of v when known (data, else src's constant value), else NULL. */
const void *poprt__ival_data(const poprt__ival *v);

typedef struct poprt__infer_ctx {
    const poprt__node *node;
    int opset; /* version of the node's domain in force */
    int n_in;
    const poprt__ival *in;
    int n_out;
    poprt__type *out; /* zeroed on entry (kind UNKNOWN); fill kind, elem, rank, dims */
    poprt__arena *arena; /* allocate dims arrays here */
} poprt__infer_ctx;

typedef poprt_status (*poprt__infer_fn)(poprt__infer_ctx *c);

/* Runs c->node's inference function between the checks every inference
 * gets (lib/ir/infer.c): the inputs' types against the node's schema
 * before, the outputs' ranks, sizes and types after. Graph inference and
 * the runtime's inference of dynamic nodes both come through here. */
poprt_status poprt__node_infer(poprt__infer_ctx *c);
enum {
    /* Output shapes depend on input values in ways inference does not compute
     * (NonZero, Unique, ...): the runtime does not pre-allocate outputs; the
     * kernel calls poprt__kctx_alloc_output for each. */
    POPRT__OP_DYNAMIC = 1u << 0,
    /* Never constant-fold (random ops). */
    POPRT__OP_NO_FOLD = 1u << 1,
    /* Has graph attributes (If, Loop, Scan): outputs may be dynamic. */
    POPRT__OP_CONTROL = 1u << 2,
    /* Runs for its effect (ai.graphcore Abort, PrintTensor): dead-node
     * removal keeps it even when nothing reads its outputs. */
    POPRT__OP_EFFECT = 1u << 3
};

struct poprt__op {
    const char *name;
    const char *domain; /* "" for ai.onnx, "ai.onnx.ml", "ai.poprt", ... */
    int since_version;  /* earliest opset this schema (and kernel) supports */
    int min_inputs, max_inputs;   /* max -1: variadic */
    int min_outputs, max_outputs; /* max -1: variadic */
    unsigned flags;
    poprt__infer_fn infer;
};

/* Registry lookup: the schema for (domain, op_type) valid at `opset`, or NULL. */
const poprt__op *poprt__op_find(const char *domain, const char *op_type, int64_t opset);
/* Operators registered through poprt_op_register (lib/api/plugin.c). */
const poprt__op *poprt__user_op_find(const char *domain, const char *op_type, int64_t opset);
/* All registered schemas (for listing); *count_out gets their number. */
const poprt__op *const *poprt__op_all(size_t *count_out);

/* Each family file defines one NULL-terminated table, listed in
 * lib/ir/op_registry.c. */
extern const poprt__op *const poprt__ops_elementwise[];
extern const poprt__op *const poprt__ops_cast[];
extern const poprt__op *const poprt__ops_tensor[];
extern const poprt__op *const poprt__ops_nn[];
extern const poprt__op *const poprt__ops_reduce[];
extern const poprt__op *const poprt__ops_control[];
extern const poprt__op *const poprt__ops_sequence[];
extern const poprt__op *const poprt__ops_quant[];
extern const poprt__op *const poprt__ops_misc[];
extern const poprt__op *const poprt__ops_ml[]; /* ai.onnx.ml */
extern const poprt__op *const poprt__ops_poprt_fused[];   /* ai.poprt ops of the transformer passes */
extern const poprt__op *const poprt__ops_poprt_replace[]; /* ai.poprt ops of the replace_* passes */
extern const poprt__op *const poprt__ops_poprt_compiled[]; /* ai.poprt ops the compiler's fusions make */
extern const poprt__op *const poprt__ops_graphcore[]; /* ai.graphcore (PopART exports) */

/* ---- helpers for inference functions --------------------------------------- */

/* Records an error naming the node ("node 'name' (OpType): ...") and returns st. */
poprt_status poprt__node_err(const poprt__node *n, poprt_status st, const char *fmt, ...)
    POPRT__PRINTF(3, 4);
#define POPRT__NODE_ERR(node, st, ...) poprt__node_err((node), (st), __VA_ARGS__)
/* The error just recorded with poprt__err (by code that knows no node, as
 * lib/core/regex.c), recorded again naming the node, exactly as
 * POPRT__NODE_ERR with that message would have; returns st. */
poprt_status poprt__node_err_last(const poprt__node *n, poprt_status st);

/* out = tensor of elem with rank/dims (dims copied into the arena). */
void poprt__infer_set(poprt__infer_ctx *c, int j, int32_t elem, int rank, const poprt__dim *dims);
void poprt__infer_set_i64(poprt__infer_ctx *c, int j, int32_t elem, int rank, const int64_t *dims);
/* out j = same type as input i (elementwise ops). */
void poprt__infer_same(poprt__infer_ctx *c, int j, int i);
/* out j = elem with unknown rank. */
void poprt__infer_unknown(poprt__infer_ctx *c, int j, int32_t elem);
/* Multidirectional (numpy) broadcast of inputs [first, first+count) into
 * out j with element type elem. SHAPE_MISMATCH when known dims disagree. */
poprt_status poprt__infer_broadcast(poprt__infer_ctx *c, int j, int first, int count, int32_t elem);
/* Reads integer input i (int32 or int64) when its value is known: returns 1
 * and fills vals (allocated in c->arena) and *n, else 0. */
int poprt__infer_input_ints(poprt__infer_ctx *c, int i, int64_t **vals, int64_t *n);
/* Elem type of input i (0 if omitted or unknown). */
int32_t poprt__infer_elem(const poprt__infer_ctx *c, int i);
/* Rank of tensor input i (-1 when unknown, omitted or not a tensor) and
 * its dims into dims[POPRT__MAX_RANK] (-1 where unknown). */
int poprt__infer_dims(const poprt__infer_ctx *c, int i, int64_t *dims);
/* Conv-like ops (inputs ix = X and iw = W of one rank >= 3): their dims in
 * xd and wd (-1 where unknown) and that rank in *rank; *rank 0 when
 * neither rank is known (output 0 is then an unknown tensor of elem).
 * SHAPE_MISMATCH naming the node when the ranks differ or are below 3. */
poprt_status poprt__infer_conv_dims(poprt__infer_ctx *c, int ix, int iw, int32_t elem,
                                    int64_t *xd, int64_t *wd, int *rank);
/* Dimension arithmetic on values that come from the model (attributes,
 * constant inputs, data at run time): a * b and a + b, or -1 with *ovf set
 * when the result does not fit in int64; the inference function then
 * reports poprt__infer_overflow. */
static inline int64_t poprt__dmul(int64_t a, int64_t b, int *ovf)
{
    int64_t r;
    if (poprt__mul_i64(a, b, &r))
        return r;
    *ovf = 1;
    return -1;
}
static inline int64_t poprt__dadd(int64_t a, int64_t b, int *ovf)
{
    int64_t r;
    if (poprt__add_i64(a, b, &r))
        return r;
    *ovf = 1;
    return -1;
}
/* A double (a scaled size, a count) as a dimension: 1 and *out for finite
 * values in [0, 2^62], else 0. */
int poprt__double_dim(double v, int64_t *out);
/* INVALID_MODEL naming the node: `what` overflows. */
poprt_status poprt__infer_overflow(const poprt__infer_ctx *c, const char *what);

/* The reduction attribute of the ai.graphcore losses (lib/ir/infer_graphcore.c):
 * "Sum" 0, "Mean" 1 (default), "None" 2, anything else -1. */
int poprt__gc_reduction(const poprt__node *n);

/* Normalises axis in [-rank, rank) to [0, rank); returns 0 when out of range. */
int poprt__norm_axis(int64_t axis, int rank, int64_t *out);

#endif
