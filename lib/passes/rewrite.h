/* The helper library of the passes (lib/passes/rewrite.c), prefix
 * poprt__rw_: walking graphs and subgraphs, matching nodes and constants,
 * building nodes, constants and attributes, rewiring outputs and
 * initializers, and the run loops several passes share. Every pass (and the
 * compiler's fusions, lib/compiler) takes these from here; none keeps a copy.
 * Helpers that only the transformer passes use are in transformer.h, those of
 * the precision passes in util_precision.h, the run functions of pass
 * families (several registered names over one implementation) in families.h.
 *
 * Writes to the IR keep its use lists (lib/ir/ir.h): inputs through
 * poprt__node_set_input / poprt__node_resize_inputs, removals through
 * poprt__graph_remove_node. Functions returning poprt_status return
 * OUT_OF_MEMORY (with a message) when an allocation fails. */
#ifndef POPRT_PASSES_REWRITE_H
#define POPRT_PASSES_REWRITE_H

#include "ir/dtype.h" /* element types: what most rewrites look at */
#include "passes/passes.h"

/* ---- errors ----------------------------------------------------------------- */

/* OUT_OF_MEMORY with the message "out of memory". */
poprt_status poprt__rw_oom(void);

/* ---- walking ---------------------------------------------------------------- */

/* Called on one graph; *changed is the pass's flag (or count). */
typedef poprt_status (*poprt__rw_graph_fn)(poprt__graph *g, void *ctx, int *changed);
/* Calls fn on every subgraph nested in g (innermost first, in node and
 * attribute order), then on g; stops at the first failure. fn may add or
 * remove nodes of the graph it is given, not of graphs still to be visited. */
poprt_status poprt__rw_each_graph(poprt__graph *g, poprt__rw_graph_fn fn, void *ctx, int *changed);
/* A pass over every graph of m: *changed = 0, then poprt__rw_each_graph on
 * the main graph. */
poprt_status poprt__rw_run_graphs(poprt__model *m, poprt__rw_graph_fn fn, void *ctx, int *changed);

/* Called on one subgraph (body) of a node. */
typedef poprt_status (*poprt__rw_body_fn)(poprt__graph *body, void *ctx);
/* Calls fn on each subgraph of n (GRAPH and GRAPHS attributes, in order; not
 * recursively); stops at the first failure. */
poprt_status poprt__rw_each_body(const poprt__node *n, poprt__rw_body_fn fn, void *ctx);
/* n has a GRAPH or GRAPHS attribute (If, Loop, Scan, ...). */
int poprt__rw_has_body(const poprt__node *n);

/* The nodes of g (not of its subgraphs) that are the ai.onnx operator op
 * (every node when op is NULL), in order, into out (cleared first): a
 * snapshot that rewrites adding or removing nodes do not disturb. */
poprt_status poprt__rw_collect(const poprt__graph *g, const char *op, poprt__vec *out);

/* ---- matching nodes --------------------------------------------------------- */

/* domain names the default domain: NULL, "" or "ai.onnx". */
int poprt__rw_onnx_domain(const char *domain);
/* n is not NULL and is the ai.onnx operator op. */
int poprt__rw_is(const poprt__node *n, const char *op);
/* The producer of t when it is the ai.onnx operator op, else NULL (t may be
 * NULL). */
poprt__node *poprt__rw_producer(const poprt__tensor *t, const char *op);
/* The only reader of t in g (poprt__graph_sole_consumer: not a graph output)
 * when it is the ai.onnx operator op, else NULL. */
poprt__node *poprt__rw_reader(const poprt__graph *g, const poprt__tensor *t, const char *op);
/* For a two-input node reading t: its other input, else NULL (n may be NULL). */
poprt__tensor *poprt__rw_other_input(const poprt__node *n, const poprt__tensor *t);
/* The node of g named name, or NULL. */
poprt__node *poprt__rw_find_node(const poprt__graph *g, const char *name);

/* ---- constants -------------------------------------------------------------- */

/* Where a constant value may come from. Each pass keeps the reach it was
 * written with: a wider one matches more models (and changes its output). */
typedef enum poprt__rw_reach {
    /* t's own data of static shape, not strings: an initializer or a value
     * constant folding stored (poprt__rw_is_const) */
    POPRT__RW_DATA = 0,
    /* also the `value` tensor of the Constant node writing t (poprt__rw_value) */
    POPRT__RW_VALUE = 1,
    /* also a Constant node's value_float or value_int */
    POPRT__RW_ANY = 2
} poprt__rw_reach;

/* A constant's elements: numel values of type elem at data. */
typedef struct poprt__rw_const {
    const void *data;
    int32_t elem;
    int64_t numel;
} poprt__rw_const;

/* t holds constant data of static shape that is not strings (an initializer
 * or a folded value; Constant nodes do not count). */
int poprt__rw_is_const(const poprt__tensor *t);
/* The tensor holding t's constant value: t when it holds data, else the
 * `value` tensor of the Constant node whose one output is t; NULL when t is
 * not constant (or NULL). */
const poprt__tensor *poprt__rw_value(const poprt__tensor *t);
/* t's constant within reach as elements: 1 and *c, or 0 when there is none,
 * its size is unknown or its bytes do not cover it. */
int poprt__rw_const_of(const poprt__tensor *t, poprt__rw_reach reach, poprt__rw_const *c);
/* Integer constant within reach (any integer type, read as int64) into
 * vals: the count, or -1 when t is not one or has more than max values. */
int64_t poprt__rw_ints(const poprt__tensor *t, poprt__rw_reach reach, int64_t *vals, int64_t max);
/* Numeric (float, integer or bool) constant within reach, at least one
 * element, all equal (NaN equals NaN): 1 and *v. */
int poprt__rw_uniform(const poprt__tensor *t, poprt__rw_reach reach, double *v);
/* Numeric constant within reach of exactly one element (any rank): 1 and *v. */
int poprt__rw_scalar(const poprt__tensor *t, poprt__rw_reach reach, double *v);
/* A one-element constant within reach equal to want within rel (relative,
 * plus 1e-12 absolute). */
int poprt__rw_scalar_is(const poprt__tensor *t, poprt__rw_reach reach, double want, double rel);
/* float32 constant within reach: its values and *numel, else NULL. */
const float *poprt__rw_f32(const poprt__tensor *t, poprt__rw_reach reach, int64_t *numel);
/* As poprt__rw_f32, but the bytes as the model holds them, perhaps unaligned:
 * for copying (memcpy), without the aligned copy typed reads make. */
const void *poprt__rw_f32_bytes(const poprt__tensor *t, poprt__rw_reach reach, int64_t *numel);
/* The integer list attribute attr of n or, from opset `from` on, the integer
 * constant input `slot` (POPRT__RW_DATA): the count, -1 when it is not known
 * or longer than max, -2 when absent (axes of Squeeze, shape of Reshape...). */
int64_t poprt__rw_attr_or_input_ints(const poprt__node *n, const char *attr, int slot, int from,
                                     int64_t *vals, int64_t max);
/* Every value of dtype `from` is exactly representable in dtype `to`. */
int poprt__rw_cast_exact(int32_t from, int32_t to);

/* ---- shapes ----------------------------------------------------------------- */

/* Rank of tensor t, -1 when t is NULL, not a tensor or of unknown rank. */
int poprt__rw_rank(const poprt__tensor *t);
/* Dims of t (-1 where unknown) into dims: the rank, or -1 when t is not a
 * tensor of known rank (at most POPRT__MAX_RANK). */
int poprt__rw_dims(const poprt__tensor *t, int64_t *dims);
/* Every dim of t known: 1 with dims and *rank filled, else 0. */
int poprt__rw_static_dims(const poprt__tensor *t, int64_t *dims, int *rank);

/* ---- building --------------------------------------------------------------- */

/* A new node op (domain NULL or "": ai.onnx) with n_in inputs and n_out
 * outputs, all unset, named from base (unique in the model; NULL: the IR
 * names it after op). */
poprt__node *poprt__rw_node(poprt__graph *g, const char *op, const char *domain, const char *base,
                            int n_in, int n_out);
/* A new one-output node (named after op) reading ins. It writes out when out
 * is given, else a new tensor named from out_base (NULL: op), and becomes the
 * producer of what it writes. */
poprt__node *poprt__rw_node1(poprt__graph *g, const char *op, const char *domain, int n_in,
                             poprt__tensor *const *ins, poprt__tensor *out, const char *out_base);
/* Unsqueeze / Squeeze of x with the axes as an attribute below opset 13 of
 * the model, as an int64 constant input from 13 on (poprt__rw_node1). */
poprt__node *poprt__rw_axes_node(poprt__graph *g, const char *op, poprt__tensor *x, int64_t n_axes,
                                 const int64_t *axes, poprt__tensor *out);
/* A new initializer of dtype and rank (every dim 1) holding v (bool: v != 0;
 * integers: v truncated). */
poprt__tensor *poprt__rw_new_scalar(poprt__graph *g, const char *base, int32_t dtype, int rank,
                                    double v);
/* A new 1-D int64 initializer holding vals[0..n). */
poprt__tensor *poprt__rw_new_i64(poprt__graph *g, const char *base, const int64_t *vals, int64_t n);

/* A new float32 initializer holding n matrices src[i] of [rows, cols[i]]
 * side by side, [rows, sum of cols] (1-D when flat; src[i] NULL: zeros; the
 * bytes are copied, so they may lie unaligned). NULL when out of memory. */
poprt__tensor *poprt__rw_new_f32_concat(poprt__graph *g, const char *base, int64_t rows, int n,
                                        const void *const *src, const int64_t *cols, int flat);

/* Initializers also listed as graph inputs of m's main graph (IR version
 * < 4: there they are weights, from 4 on inputs a caller may override) leave
 * the inputs list; 1 when one did. */
int poprt__rw_drop_initializer_inputs(poprt__model *m);

/* A new Cast of in to dtype `to` writing out (poprt__rw_node1; below opset
 * 6 `to` is Cast-1's type name, "FLOAT16"); NULL when out of memory. */
poprt__node *poprt__rw_cast(poprt__graph *g, poprt__tensor *in, poprt__tensor *out, int64_t to);

/* Sets attribute name of n (replacing one it has; copies live in the
 * model's arena). OUT_OF_MEMORY also when n is NULL (a failed build). */
poprt_status poprt__rw_attr_i(poprt__node *n, const char *name, int64_t v);
poprt_status poprt__rw_attr_f(poprt__node *n, const char *name, float v);
poprt_status poprt__rw_attr_s(poprt__node *n, const char *name, const char *v);
poprt_status poprt__rw_attr_ints(poprt__node *n, const char *name, int64_t count, const int64_t *v);
poprt_status poprt__rw_attr_floats(poprt__node *n, const char *name, int64_t count, const float *v);
/* Copies attribute name of src, when it has one, onto dst. */
poprt_status poprt__rw_copy_attr(poprt__node *dst, const poprt__node *src, const char *name);
/* Removes attribute name of n: 1 when n had it. */
int poprt__rw_remove_attr(poprt__node *n, const char *name);
/* Sets the integer list attribute name of n in place (its name, doc and
 * reference kept; a new one when n has none). */
poprt_status poprt__rw_set_ints(poprt__node *n, const char *name, const int64_t *v, int64_t count);
/* Sets the integer list attr of n (before opset `from`, poprt__rw_set_ints)
 * or its constant int64 input `slot` (from opset `from` on; the old input
 * goes when unused). */
poprt_status poprt__rw_set_axes(poprt__node *n, const char *attr, int slot, int from,
                                const int64_t *axes, int64_t count);
/* Sets the metadata entry key (not copied: a static string) of a node or
 * model (its n_meta, meta_keys, meta_vals) to a copy of val. */
poprt_status poprt__rw_set_meta(poprt__model *m, int *n, const char ***keys, const char ***vals,
                                const char *key, const char *val);
/* Node n's metadata value for key, or NULL. */
const char *poprt__rw_meta(const poprt__node *n, const char *key);
/* Node metadata "poprt.matmul_float32" = "1": under the session option
 * matmul_precision = bfloat16 the node's products stay float32 (written by
 * pass bf16_fallback; fusions that replace the node carry it over). */
#define POPRT__META_MATMUL_FLOAT32 "poprt.matmul_float32"
/* Copies that mark from `from` to `to` when from has it. OUT_OF_MEMORY. */
poprt_status poprt__rw_copy_matmul_float32(poprt__model *m, poprt__node *to,
                                           const poprt__node *from);
/* Imports the ai.poprt domain (version 1) unless the model has it. */
poprt_status poprt__rw_poprt_domain(poprt__model *m);

/* ---- rewiring --------------------------------------------------------------- */

/* n writes t as its output k (t keeps its name). */
void poprt__rw_set_output(poprt__node *n, int k, poprt__tensor *t);
/* nw takes over output slot of old as its output nw_slot (the tensor keeps
 * its name, so graph outputs stay as they are), and old leaves g. */
void poprt__rw_take_output(poprt__graph *g, poprt__node *old, int slot, poprt__node *nw,
                           int nw_slot);
/* A new node op (named from old's name, poprt__rw_node) reading the n_in
 * tensors of ins (NULL: an omitted input) that takes over old's output 0
 * (poprt__rw_take_output: old leaves g), with the names of the nodes it
 * replaces in its metadata "poprt.replaced" (old and the nodes only they
 * read). NULL when out of memory. */
poprt__node *poprt__rw_replace(poprt__graph *g, poprt__node *old, const char *op,
                               const char *domain, int n_in, poprt__tensor *const *ins);
/* Removes node n of g whose output out equals its input in: readers of out
 * read in. When out is an output of g, the producer of in writes out instead
 * (output names are kept); when that is impossible (in is an input, an
 * initializer, another output, or from an enclosing graph) n stays and
 * *done is 0. */
poprt_status poprt__rw_bypass(poprt__graph *g, poprt__node *n, poprt__tensor *in,
                              poprt__tensor *out, int *done);
/* t stops being a constant initializer (flag, data and size cleared; the
 * caller takes it out of the initializers list). */
void poprt__rw_unset_initializer(poprt__tensor *t);
/* Removes initializer t from g's list and unsets it. */
void poprt__rw_remove_initializer(poprt__graph *g, poprt__tensor *t);
/* Removes initializer t of g when nothing reads it and it is not a graph
 * input or output (t may be NULL or not an initializer of g: nothing). */
void poprt__rw_drop_if_unused(poprt__graph *g, poprt__tensor *t);

/* ---- patterns shared by several passes --------------------------------------- */

/* A BatchNormalization in inference form as y = x*s[k] + t[k] over c
 * channels (s, t: heap arrays, poprt__rw_bn_free). */
typedef struct poprt__rw_bn {
    double *s, *t;
    int64_t c;
} poprt__rw_bn;
/* bn as *a when it is in inference form with constant float parameters (its
 * other outputs unread); a->s is NULL when it is not. OUT_OF_MEMORY. */
poprt_status poprt__rw_bn_affine(const poprt__node *bn, poprt__rw_bn *a);
void poprt__rw_bn_free(poprt__rw_bn *a);
/* nw takes over bn's output (poprt__rw_take_output) and bn's constant
 * parameters go when nothing else reads them; nw records that it replaces
 * bn and `also` (the node it was made from, or NULL) in its metadata
 * "poprt.replaced". OUT_OF_MEMORY (the graph untouched). */
poprt_status poprt__rw_bn_replaced(poprt__graph *g, poprt__node *bn, poprt__node *nw,
                                   const poprt__node *also);
/* Initializers of g (not graph inputs or outputs) with the same dtype, shape
 * and bytes are merged into the first of them (readers share it). */
poprt_status poprt__rw_dedup_initializers(poprt__graph *g, int *changed);
/* Fixes dim d of tensor t (a graph input) to v; a symbolic name is fixed to
 * v everywhere in the model. SHAPE_MISMATCH when the dim is another known
 * value. The caller infers shapes again. */
poprt_status poprt__rw_fix_dim(poprt__model *m, poprt__tensor *t, int d, int64_t v);

/* ---- run loops --------------------------------------------------------------- */

/* Removes, in every graph, each node for which pred returns the input its
 * first output equals (its other outputs unread), through poprt__rw_bypass.
 * *changed = whether any went. */
poprt_status poprt__rw_remove_nops(poprt__model *m, poprt__tensor *(*pred)(poprt__node *n),
                                   int *changed);

/* A pass that takes no arguments and rewrites nodes one at a time. */
typedef struct poprt__rw_node_pass {
    const char *pass; /* registered name, for argument errors */
    const char *op;   /* the ai.onnx operator visited; NULL: every node */
    /* Rewrites node n of g when it matches (removing n itself when it
     * replaces it); *done = 1 when the graph changed. */
    poprt_status (*rewrite)(poprt__graph *g, poprt__node *n, const void *ctx, int *done);
    const void *ctx;  /* handed to rewrite */
    int poprt_domain; /* the rewrites make ai.poprt nodes: import the domain */
    int rounds;       /* repeat while a round changes something, at most this
                         often (0: once) */
} poprt__rw_node_pass;
/* Runs p: refuses arguments, then in every graph (subgraphs first) calls
 * p->rewrite on the nodes collected before the round (poprt__rw_collect:
 * nodes the rewrites add are not visited); *changed counts the rewrites. */
poprt_status poprt__rw_run_nodes(const poprt__rw_node_pass *p, poprt__model *m, const char *args,
                                 int *changed);

/* Called on node n of m's main graph (*done 0): *done = 1 when it rewrote the graph. */
typedef poprt_status (*poprt__rw_match_fn)(poprt__model *m, poprt__node *n, const void *ctx,
                                           int *done);
/* Calls fn on the nodes of m's main graph in order; after each rewrite the
 * scan starts again from the first node, until a scan rewrites nothing.
 * *changed = whether any did; then the nodes left dead are removed
 * (poprt__graph_remove_dead). */
poprt_status poprt__rw_fixpoint(poprt__model *m, poprt__rw_match_fn fn, const void *ctx,
                                int *changed);

#endif
