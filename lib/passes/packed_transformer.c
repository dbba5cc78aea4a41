/* packed_transformer: self-attention over padded batches becomes
 * ai.poprt.PackedAttention, which reads the raw [B, S] attention mask
 * instead of the additive [B, 1, 1, S] one. Attention blocks are fused first
 * (fused_attention) when the model has not been.
 * CPU meaning: per sequence the kernel packs the tokens the mask keeps and
 * computes K/V projections, scores and the weighted sum only over them: the
 * padding's share of that work (S - valid keys per row) is skipped. Query
 * rows at padding are still computed so every output keeps its value;
 * skipped keys contribute exactly 0 to the original softmax (exp of
 * score + value underflows in float32 for value <= -1e4), so results agree
 * with FusedAttention's to the last bit whenever scores stay within 9,900 of
 * each other. A sequence with no valid token is computed in full.
 * Arguments (the reference's --pack_args): max_valid_num=N (the kernel
 * checks each sequence has at most N valid tokens), segment_max_size and
 * enable_double_batch_unpack are accepted for compatibility (IPU tiling
 * choices with no CPU meaning). */
#include <stdlib.h>
#include "passes/transformer.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"max_valid_num", "segment_max_size",
                                        "enable_double_batch_unpack", NULL};
    poprt__pass_args a;
    int64_t max_valid;
    poprt_status st = poprt__pass_args_parse("packed_transformer", args, known, &a);
    if (st || (st = poprt__pass_arg_int("packed_transformer", &a, "max_valid_num", 0, &max_valid)))
        return st;
    poprt__graph *g = m->graph;
    *changed = 0;
    int fused = 0;
    if ((st = poprt__tf_fuse_attention(m, &fused)))
        return st;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (strcmp(n->domain, "ai.poprt") || strcmp(n->op_type, "FusedAttention") ||
            n->n_inputs < 4 || !n->inputs[3])
            continue;
        poprt__node *mp = n->inputs[3]->producer;
        poprt__tensor *raw = NULL;
        float value = -10000.0f;
        int32_t to;
        if (mp && strcmp(mp->domain, "ai.poprt") == 0 && strcmp(mp->op_type, "AttentionMask") == 0) {
            raw = mp->inputs[0];
            value = poprt__attr_f(mp, "value", -10000.0f);
            poprt__node *c = poprt__rw_producer(raw, "Cast"); /* read the mask before its Cast */
            if (c && c->inputs[0]->type.rank == 2)
                raw = c->inputs[0];
        } else if (!poprt__tf_match_mask_chain(m, mp, &raw, &value, &to)) {
            continue;
        }
        if (value > -1e4f || raw->type.rank != 2)
            continue; /* skipping keys is only exact for a strongly negative mask */
        /* n leaves the list (its attributes stay readable); p is appended */
        poprt__tensor *ins[4] = {poprt__node_in(n, 0), poprt__node_in(n, 1), poprt__node_in(n, 2),
                                 raw};
        poprt__node *p = poprt__rw_replace(g, n, "PackedAttention", "ai.poprt", 4, ins);
        if (!p)
            return poprt__rw_oom();
        if ((st = poprt__rw_attr_i(p, "num_heads", poprt__attr_i(n, "num_heads", 1))) ||
            (poprt__node_attr(n, "scale") &&
             (st = poprt__rw_attr_f(p, "scale", poprt__attr_f(n, "scale", 1)))) ||
            (st = poprt__rw_attr_f(p, "mask_value", value)) ||
            (max_valid > 0 && (st = poprt__rw_attr_i(p, "max_valid_num", max_valid))))
            return st;
        i--;
        *changed = 1;
    }
    if (*changed)
        poprt__graph_remove_dead(g);
    *changed |= fused;
    return POPRT_OK;
}

const poprt__pass poprt__pass_packed_transformer = {
    "packed_transformer",
    "self-attention on padded batches -> ai.poprt.PackedAttention reading the [B,S] mask: "
    "K/V and scores computed only over each sequence's valid tokens (args max_valid_num, "
    "segment_max_size, enable_double_batch_unpack)",
    run, 1};
