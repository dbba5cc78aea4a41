/* Helpers shared by the core-group passes (lib/passes/util_core.c). */
#ifndef POPRT_PASSES_UTIL_CORE_H
#define POPRT_PASSES_UTIL_CORE_H

#include "passes/passes.h"

/* Calls fn on every subgraph of g (innermost first), then on g. */
typedef poprt_status (*poprt__pc_graph_fn)(poprt__graph *g, void *ctx, int *changed);
poprt_status poprt__pc_each_graph(poprt__graph *g, poprt__pc_graph_fn fn, void *ctx, int *changed);

/* Removes node n of g whose output `out` equals `in`: readers of out read in.
 * When out is an output of g, the producer of in writes out instead (output
 * names are kept); when that is impossible (in is an input, an initializer,
 * another output, or from an enclosing graph) the node stays and *done is 0. */
poprt_status poprt__pc_bypass(poprt__graph *g, poprt__node *n, poprt__tensor *in,
                              poprt__tensor *out, int *done);

/* t is a constant tensor (initializer or folded value) with known shape. */
int poprt__pc_is_const(const poprt__tensor *t);
/* Values of a constant integer tensor (int8..int64, uint8..uint64): returns
 * the count (at most max) or -1 when t is not such a constant or too long. */
int64_t poprt__pc_const_ints(const poprt__tensor *t, int64_t *vals, int64_t max);
/* Every element of a constant numeric tensor equals v. */
int poprt__pc_const_all_equal(const poprt__tensor *t, double v);
/* Tensor t and its static shape: 1 when every dim is known (dims filled). */
int poprt__pc_static_dims(const poprt__tensor *t, int64_t *dims, int *rank);
/* An integer attribute list or, from opset `from` on, the constant integer
 * input `slot` (axes of Squeeze/Unsqueeze, ...): count, or -1 when unknown,
 * -2 when absent. */
int64_t poprt__pc_attr_or_input_ints(const poprt__node *n, const char *attr, int slot, int from,
                                     int64_t *vals, int64_t max);
/* Makes node n write `out` as output slot k (out keeps its name). */
void poprt__pc_set_output(poprt__node *n, int k, poprt__tensor *out);
/* A new int64 1-D initializer in g. */
poprt__tensor *poprt__pc_add_ints(poprt__graph *g, const char *base, const int64_t *vals, int64_t n);
/* Node is op_type of the default domain. */
int poprt__pc_is(const poprt__node *n, const char *op_type);

/* Removes every node (in all graphs) for which pred returns the input tensor
 * its first output equals (other outputs must be unused). */
poprt_status poprt__pc_remove_nops(poprt__model *m, poprt__tensor *(*pred)(poprt__node *n),
                                   int *changed);
/* Initializers of g (not inputs/outputs) with the same dtype, shape and
 * bytes are merged into the first of them. */
poprt_status poprt__pc_dedup_initializers(poprt__graph *g, int *changed);
/* BatchNormalization node bn in inference form with constant float
 * parameters of C channels (and no other output read): y = x*s[c] + t[c].
 * Returns 1 and heap arrays s, t (poprt__free them), 0 when bn does not
 * qualify, -1 out of memory. */
int poprt__pc_bn_affine(const poprt__node *bn, double **s_out, double **t_out, int64_t *c_out);
/* Removes initializer t of g when nothing reads it any more. */
void poprt__pc_drop_if_unused(poprt__graph *g, poprt__tensor *t);
/* Sets the integer list `attr` (before opset `from`) or a new constant
 * int64 input `slot` (from opset `from` on) of n. */
poprt_status poprt__pc_set_axes(poprt__node *n, const char *attr, int slot, int from,
                                const int64_t *axes, int64_t count);
/* Every value of dtype `from` is exactly representable in dtype `to`. */
int poprt__pc_cast_exact(int32_t from, int32_t to);
/* Fixes dim d of tensor t (a graph input) to v; a symbolic name is fixed
 * to v everywhere in the model. SHAPE_MISMATCH when the dim is another known
 * value. The caller re-infers. */
poprt_status poprt__pc_fix_dim(poprt__model *m, poprt__tensor *t, int d, int64_t v);

#endif
