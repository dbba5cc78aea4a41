/* Graph-level optimisation when a session is compiled: passes that keep the
 * model's results (exactly, or within float rounding for the batch-norm
 * folds) and make it cheaper to run, applied to the session's private copy
 * after constants are folded. Executable files store the optimised program,
 * so loading one does not repeat this. */
#include <string.h>
#include "compiler/compiler.h"
#include "kernels/x86/conv.h"
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/transformer.h"

static const char *const compile_passes[] = {
    /* first: an If whose condition folded to a constant for the bound
     * shapes becomes the branch it takes, so the rest see its nodes */
    "eliminate_nop_if",
    "eliminate_identity",      "eliminate_nop_cast",         "eliminate_nop_transpose",
    "eliminate_nop_reshape",   "eliminate_nop_pad",          "eliminate_nop_expand",
    "eliminate_nop_flatten",   "eliminate_nop_arithmetic",   "fuse_consecutive_cast",
    "fuse_consecutive_reshape", "fuse_consecutive_transpose", "fuse_consecutive_squeeze",
    "fuse_consecutive_unsqueeze", "fuse_bn_into_conv",       "fuse_bn_into_gemm",
    /* a batch norm no Conv or Gemm before it takes (DenseNet's and
     * pre-activation ResNets' BatchNormalization -> Relu -> Conv): Mul and
     * Add by per-channel constants, which the elementwise fusion joins to
     * the activation after them and the layout choice runs in NCHW16c */
    "replace_bn_with_mul_add",
    /* transformer blocks: each rewrite computes the same formula in one
     * row-wise or elementwise kernel (equal within float rounding) */
    "erf_gelu_pattern",        "gelu_pattern",               "layer_norm_pattern",
    /* attention blocks with float projections: one kernel for the three
     * projections (weights concatenated) and the heads */
    "fused_attention",         "eliminate_deadend",
};

poprt_status poprt__compile_commit(poprt__model *m, const char *what)
{
    poprt_status st = poprt__model_ensure_opset(m, "ai.poprt", 1);
    if (!st)
        st = poprt__graph_toposort(m->graph);
    if (!st)
        st = poprt__model_check(m);
    return st ? poprt__err_prefix(st, "compiling (%s): ", what) : POPRT_OK;
}

poprt_status poprt__compile_fuse_from(poprt__model *m, const char *op,
                                      poprt_status (*one)(poprt__graph *g, poprt__node *n,
                                                          int *done),
                                      const char *what, int *any)
{
    poprt__graph *g = m->graph;
    int changed = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (!poprt__rw_is(n, op))
            continue;
        int done;
        poprt_status st = one(g, n, &done);
        if (st)
            return st;
        if (done) {
            changed = 1;
            i--; /* the chain left the list; the fused node went to its end */
        }
    }
    if (!changed)
        return POPRT_OK;
    *any = 1;
    return poprt__compile_commit(m, what);
}

poprt_status poprt__compile_optimize(poprt__model *m, int bf16, int *changed_out)
{
    int any = 0;
    for (size_t i = 0; i < sizeof compile_passes / sizeof compile_passes[0]; i++) {
        const poprt__pass *p = NULL;
        poprt_pass_fn fn;
        void *user;
        if (!poprt__pass_lookup(compile_passes[i], &p, &fn, &user) || !p)
            continue;
        int changed = 0;
        poprt_status st = p->run(m, NULL, &changed);
        if (!st && changed)
            st = poprt__model_check(m);
        if (st)
            return poprt__err_prefix(st, "compiling (pass '%s'): ", compile_passes[i]);
        any |= changed;
    }
    /* the attention blocks left (int8 projections, ...): the heads in one
     * kernel from the projections on */
    int heads = 0;
    poprt_status hst = poprt__tf_fuse_attention_heads(m, &heads);
    if (!hst && heads)
        hst = poprt__model_check(m);
    if (hst)
        return poprt__err_prefix(hst, "compiling (attention heads): ");
    any |= heads;
    /* QDQ residual Adds before the Conv and chain fusions take Add/Relu */
    poprt_status cst = poprt__compile_fuse_qlinear_add(m, &any);
    if (!cst)
        cst = poprt__compile_fuse_conv(m, &any); /* before the chains take Add/Relu */
    if (!cst)
        cst = poprt__compile_fuse_matmul_integer(m, &any);
    if (cst)
        return cst;
    /* elementwise chains last, so the pattern passes above see the plain
     * operators they match */
    int changed = 0;
    poprt_status st = poprt__compile_fuse_elementwise(m, &changed);
    if (!st && changed)
        st = poprt__model_check(m);
    if (st)
        return poprt__err_prefix(st, "compiling (elementwise fusion): ");
    any |= changed;
    /* last: it sees the fused convolutions and what reads them (not for
     * bfloat16 convolutions on AMX tiles, which run in NCHW) */
    if ((!bf16 || poprt__x86_conv_bf16_blocked()) && (st = poprt__compile_layout(m, &any)))
        return st;
    if (changed_out)
        *changed_out = any;
    return POPRT_OK;
}
