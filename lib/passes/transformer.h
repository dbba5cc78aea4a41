/* Pattern matchers that only the transformer passes use (erf_gelu_pattern,
 * layer_norm_pattern, fused_attention, ...), built on the passes' helper
 * library (rewrite.h); header-only. Their constants are those of
 * POPRT__RW_ANY: initializers, folded values and every form of Constant. */
#ifndef POPRT_PASSES_TRANSFORMER_H
#define POPRT_PASSES_TRANSFORMER_H

#include <string.h>
#include "passes/rewrite.h"

/* The values of t = Concat of one-element pieces (a shape computed at run
 * time, as dynamic-batch exports build Reshape targets): each constant
 * piece's value, -1 for the others. The count, or -1 when t is no such
 * Concat. */
static inline int64_t tf_concat_ints(const poprt__tensor *t, int64_t *v)
{
    const poprt__node *c = t->producer;
    if (!c || !poprt__rw_is(c, "Concat") || c->n_inputs > POPRT__MAX_RANK)
        return -1;
    for (int i = 0; i < c->n_inputs; i++) {
        int64_t d[POPRT__MAX_RANK], one;
        const poprt__tensor *p = c->inputs[i];
        int r = p ? poprt__rw_dims(p, d) : -1;
        /* [1], or an Unsqueeze of a scalar (its axes maybe not folded yet) */
        if (r != 1 || (d[0] != 1 && !(d[0] < 0 && poprt__rw_is(p->producer, "Unsqueeze") &&
                                      poprt__rw_rank(p->producer->inputs[0]) == 0)))
            return -1;
        v[i] = poprt__rw_ints(c->inputs[i], POPRT__RW_ANY, &one, 1) == 1 ? one : -1;
    }
    return c->n_inputs;
}

/* Output dims of a Reshape node: its inferred type, with dims the type does
 * not know taken from a constant shape input, or from the constant pieces of
 * a Concat making it (Constant nodes are not folded in the IR, so the type
 * alone often lacks them). Rank or -1. */
static inline int tf_reshape_dims(const poprt__node *rs, int64_t *dims)
{
    int r = poprt__rw_dims(rs->outputs[0], dims);
    int64_t shape[POPRT__MAX_RANK];
    int64_t n = rs->n_inputs > 1
                    ? poprt__rw_ints(rs->inputs[1], POPRT__RW_ANY, shape, POPRT__MAX_RANK)
                    : -1;
    if (n < 0 && rs->n_inputs > 1)
        n = tf_concat_ints(rs->inputs[1], shape);
    if (n < 0 || (r >= 0 && n != r))
        return r;
    for (int i = 0; i < (int)n; i++)
        if (r < 0 || dims[i] < 0)
            dims[i] = shape[i] > 0 ? shape[i] : -1;
    return (int)n;
}

/* The integer list attribute attr of n (into v, at most POPRT__MAX_RANK
 * values): the count, -2 when n has none, -1 when it is longer. */
static inline int64_t tf_attr_ints(const poprt__node *n, const char *attr, int64_t *v)
{
    int64_t cnt;
    const int64_t *a = poprt__attr_ints(n, attr, &cnt);
    if (!a)
        return -2;
    if (cnt > POPRT__MAX_RANK)
        return -1;
    memcpy(v, a, (size_t)cnt * sizeof *v);
    return cnt;
}

/* The integer constant input slot of n (into v, at most POPRT__MAX_RANK
 * values): the count, -2 when the input is omitted, -1 when it is not such
 * a constant. */
static inline int64_t tf_input_ints(const poprt__node *n, int slot, int64_t *v)
{
    const poprt__tensor *t = poprt__node_in(n, slot);
    return t ? poprt__rw_ints(t, POPRT__RW_ANY, v, POPRT__MAX_RANK) : -2;
}

/* Transpose n has exactly permutation p (length r). */
static inline int tf_perm_is(const poprt__node *n, int r, const int64_t *p)
{
    int64_t cnt;
    const int64_t *perm = poprt__attr_ints(n, "perm", &cnt);
    if (!perm || cnt != r)
        return 0;
    for (int i = 0; i < r; i++)
        if (perm[i] != p[i])
            return 0;
    return 1;
}

/* The fused_attention rewrite (lib/passes/fused_attention.c), also run by
 * packed_transformer. */
poprt_status poprt__tf_fuse_attention(poprt__model *m, int *changed);
/* The attention blocks left (projections that are not float MatMuls with
 * constant weights: int8 ones, or weights given at run time): from the three
 * projections on, one ai.poprt MaskedAttention(Q, K, V, mask) each, where
 * the scores are float32. The session compiler's step, after
 * poprt__tf_fuse_attention. */
poprt_status poprt__tf_fuse_attention_heads(poprt__model *m, int *changed);
/* The pack conversion's attention (lib/passes/fused_attention.c): every
 * block fused_attention matches whose additive mask is (1 - mask) * value
 * (value <= -1e4, through the Unsqueeze/Cast chain of
 * poprt__tf_match_mask_chain) from the [B, S] tensor mask becomes
 * ai.poprt.SegmentAttention(Q, K, V, seg): attention within each run of one
 * segment id of seg, skipping the other tokens (what the mask of "same
 * segment" would give them: weight 0). */
poprt_status poprt__tf_segment_attention(poprt__model *m, const poprt__tensor *mask,
                                         poprt__tensor *seg, int *changed);
/* mul ends the BERT extended-mask chain (lib/passes/insert_attention_mask.c):
 * the rank-2 mask it starts from, the Mul's value and the Cast's type. */
int poprt__tf_match_mask_chain(poprt__model *m, poprt__node *mul, poprt__tensor **raw, float *value,
                               int32_t *to);

#endif
