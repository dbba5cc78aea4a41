/* Pass families: registered passes that are one implementation with a
 * different operator, constant or direction. Each member keeps its file
 * (<name>.c, the name the lists register) holding its descriptor and what is
 * its own; the shared run function of a family lives in family_<family>.c.
 * Built on rewrite.h. */
#ifndef POPRT_PASSES_FAMILIES_H
#define POPRT_PASSES_FAMILIES_H

#include "passes/rewrite.h"

/* ---- fuse_consecutive_{cast,reshape,squeeze,transpose,unsqueeze} -------------
 * (family_fuse_consecutive.c) X(X(x)) becomes one X, or none: in every graph,
 * each node n2 of the operator whose input is written by n1 of the same
 * operator (same graph) is merged with it, then n1 goes when nothing else
 * reads its output (with its constant second input when that is unused);
 * the scan starts again after each merge. */
typedef struct poprt__consecutive {
    const char *op;
    /* Makes n2 compute X(X(x)) from x = n1's input (or removes it): *done = 1
     * when the graph changed. NULL: a Squeeze / Unsqueeze pair, merged by
     * `axes`. */
    poprt_status (*merge)(poprt__graph *g, poprt__node *n1, poprt__node *n2, int *done);
    /* Squeeze / Unsqueeze: rewrites axes a1 (n1's, n_1 of them) and a2
     * (n2's, n_2) in place into the axes, together, of the one node over x
     * (rank r) that does what both did: 1, or 0 when they cannot merge. */
    int (*axes)(int64_t r, int64_t *a1, int64_t n_1, int64_t *a2, int64_t n_2);
} poprt__consecutive;
poprt_status poprt__fuse_consecutive(const poprt__consecutive *f, poprt__model *m, int *changed);

/* ---- replace_greater_or_equal, replace_less_or_equal ---------------------------
 * (family_replace_or_equal.c) A OrEqual comparison (an opset-12 op) for
 * opset-11 targets: integers get Not(negated(a, b)) (exact), floats
 * Or(strict(a, b), Equal(a, b)), which keeps comparisons with NaN false
 * (Not(negated) would make them true). */
typedef struct poprt__or_equal {
    const char *strict;  /* Greater for GreaterOrEqual */
    const char *negated; /* Less for GreaterOrEqual */
} poprt__or_equal;
/* The poprt__rw_node_pass rewrite of the family (ctx: its poprt__or_equal). */
poprt_status poprt__replace_or_equal(poprt__graph *g, poprt__node *n, const void *ctx, int *done);

/* ---- erf_gelu_pattern, gelu_pattern --------------------------------------------
 * (family_gelu_pattern.c) x * 0.5 * (1 + f(...x...)) -> Gelu(x) (ONNX Gelu from
 * opset 20, else ai.poprt.Gelu), in any of the orders exporters write the
 * tail in; the main graph is scanned until nothing matches, then dead
 * nodes go. */
typedef struct poprt__gelu_form {
    const char *op; /* f: Erf or Tanh */
    /* x when f's argument is the form's function of x, else NULL */
    poprt__tensor *(*arg)(const poprt__graph *g, const poprt__node *f);
    const char *approximate; /* the Gelu's attribute ("none": not written) */
} poprt__gelu_form;
poprt_status poprt__gelu_pattern(const poprt__gelu_form *form, poprt__model *m, int *changed);

/* ---- serialize_matmul, serialize_matmul_add -------------------------------------
 * (family_serialize_matmul.c) A MatMul with a constant weight cut into
 * `factor` pieces whose results are joined again (Concat, or Sum for
 * reducing_dim); with_add: a MatMul and its bias Add, cut by output columns.
 * Arguments factor=F[,nodes=[...]] (mode=M[,keep_precision=..] too without
 * with_add), or the reference's entries (NAME=F[/MODE[/KEEP_PRECISION]],
 * MATMUL/ADD=F); every MatMul (pair) when no node is named; nothing without
 * a factor. */
typedef struct poprt__serialize_kind {
    const char *pass; /* registered name, for messages */
    int with_add;
} poprt__serialize_kind;
poprt_status poprt__serialize_matmul(const poprt__serialize_kind *k, poprt__model *m,
                                     const char *args, int *changed);

/* ---- merge_matmul, merge_matmul_add, merge_moe ------------------------------------
 * (family_merge_matmul.c) MatMuls reading one input with constant 2-D
 * weights of one row count (each with its bias Add for with_add) become one
 * MatMul over the column-concatenated weights [+ one Add] and a Split. The
 * arguments name the MatMuls, every stride-th name of "a,b,c" or
 * nodes=[a,b,c] (the names between: their Adds when with_add and stride is
 * 2, else only checked to exist); without names every such group in the
 * main graph is merged. */
typedef struct poprt__merge_kind {
    const char *pass; /* registered name, for messages */
    int stride;
    int with_add;
} poprt__merge_kind;
poprt_status poprt__merge_matmul(const poprt__merge_kind *k, poprt__model *m, const char *args,
                                 int *changed);

#endif
