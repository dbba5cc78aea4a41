/* The session compiler's graph rewrites (lib/compiler), run by
 * poprt__compile_optimize on the session's private copy of the model. */
#ifndef POPRT_COMPILER_H
#define POPRT_COMPILER_H

#include "ir/ir.h"

/* A float32 tensor of known rank (at most max_rank) and known dims. */
static inline int poprt__cc_static_float(const poprt__tensor *t, int max_rank)
{
    if (!t || t->type.kind != POPRT__KIND_TENSOR || t->type.elem != POPRT_DTYPE_FLOAT ||
        t->type.rank < 0 || t->type.rank > max_rank)
        return 0;
    for (int d = 0; d < t->type.rank; d++)
        if (t->type.dims[d].value < 0)
            return 0;
    return 1;
}

/* a and b have the same (known) shape. */
static inline int poprt__cc_same_shape(const poprt__tensor *a, const poprt__tensor *b)
{
    if (a->type.rank != b->type.rank)
        return 0;
    for (int d = 0; d < a->type.rank; d++)
        if (a->type.dims[d].value != b->type.dims[d].value)
            return 0;
    return 1;
}

/* One step of a FusedElementwise chain (kernels/ref/poprt_compiled.h). */
typedef struct poprt__cc_step {
    int64_t op, operand, reverse;
    float alpha, beta;
    poprt__tensor *t;  /* tensor operand, or NULL (none, or the scalar alpha) */
    /* a float8 pair: QuantizeLinear (the node) to e4m3fn / e5m2 with a
     * constant per-tensor scale (alpha), zero points absent or 0 (beta 1:
     * the QuantizeLinear has one), saturating, whose code only this
     * DequantizeLinear with the same scale reads; its output is the step's */
    poprt__node *pair;
} poprt__cc_step;
/* The step node n makes when `cur` (a chain's value so far: float32 of
 * static shape) flows into it; 0 when n cannot be one (fuse_elementwise.c). */
int poprt__cc_step_of(const poprt__graph *g, poprt__node *n, const poprt__tensor *cur,
                      poprt__cc_step *s);
/* A unary activation written as nodes that read `cur` (float32, static
 * shape) twice: x * Sigmoid(x) (Swish), x * HardSigmoid(x, 1/6, 1/2) and
 * x * Clip(x + 3, 0, 6) / 6 with the division by 6 (Div or Mul by 1/6)
 * before or after the product (HardSwish). When cur's two readers make one,
 * fills *s (a step without operand), nodes (at most 4, in order) and
 * *n_nodes, and returns the activation's output; else NULL. */
poprt__tensor *poprt__cc_composite_of(const poprt__graph *g, const poprt__tensor *cur,
                                      poprt__cc_step *s, poprt__node **nodes, int *n_nodes);

/* Node n as a FusedElementwise of the one step it makes from its input
 * cur (poprt__cc_step_of; not a float8 pair): n is detached (removed at the
 * next poprt__graph_compact) and *out is the new node, or NULL when n makes
 * no such step. */
poprt_status poprt__cc_fuse_node(poprt__graph *g, poprt__node *n, poprt__tensor *cur,
                                 poprt__node **out);

/* After a rewrite that made ai.poprt nodes: the opset import, the
 * topological order and the model check; errors say "compiling (what)". */
poprt_status poprt__compile_commit(poprt__model *m, const char *what);
/* one(g, n, &done) on every main-graph node of ONNX operator op (done 1:
 * it fused n with what follows: removed them and appended the fused node);
 * then, when something changed, *any = 1 and poprt__compile_commit(what). */
poprt_status poprt__compile_fuse_from(poprt__model *m, const char *op,
                                      poprt_status (*one)(poprt__graph *g, poprt__node *n,
                                                          int *done),
                                      const char *what, int *any);
/* Chains of float32 elementwise nodes -> one ai.poprt FusedElementwise
 * (fuse_elementwise.c). *changed: 1 when the graph changed. */
poprt_status poprt__compile_fuse_elementwise(poprt__model *m, int *changed);
/* Conv [+ residual Add] [+ activation] -> one ai.poprt FusedConv
 * (fuse_conv.c), model checked afterwards; sets *any when the graph changed. */
poprt_status poprt__compile_fuse_conv(poprt__model *m, int *any);
/* MatMulInteger / ConvInteger -> Cast(float) -> Mul(scale) [-> Add(bias)]
 * -> one ai.poprt FusedMatMulInteger / FusedConvInteger (fuse_qgemm.c);
 * sets *any when the graph changed. */
poprt_status poprt__compile_fuse_matmul_integer(poprt__model *m, int *any);
/* DequantizeLinear -> Conv / MatMul [-> Relu] -> QuantizeLinear (the QDQ
 * form of static quantization) -> QLinearConv / QLinearMatMul on the
 * integer GEMM (fuse_qdq.c), before constant folding; sets *any when the
 * graph changed. */
poprt_status poprt__compile_fuse_qdq(poprt__model *m, int *any);
/* DequantizeLinear x 2 -> Add [-> Relu] -> QuantizeLinear (a QDQ model's
 * residual connections) -> one ai.poprt QLinearAdd (fuse_qdq.c), after shape
 * inference; sets *any when the graph changed. */
poprt_status poprt__compile_fuse_qlinear_add(poprt__model *m, int *any);
/* Activations kept in NCHW16c between convolutions, max pools, channel
 * concatenations and Relus on CPUs with the blocked convolution
 * (layout.c); sets *any when the graph changed. */
poprt_status poprt__compile_layout(poprt__model *m, int *any);
/* Nodes reading or writing float16 tensors get their float32 form (constants
 * converted, Casts at the boundary to nodes left in float16; float16.c);
 * sets *changed when the graph changed. The caller checks the model. */
poprt_status poprt__compile_float16(poprt__model *m, int *changed);

#endif
