/* insert_attention_mask: the extended-mask chain exporters write for BERT,
 *   [Unsqueeze(1), Unsqueeze(2) | Unsqueeze([1,2]) | Reshape [B,1,1,S]] and
 *   Cast(float), in either order -> Sub(1, .) -> Mul(., value)
 * becomes Cast -> ai.poprt.AttentionMask(value) (as the reference's
 * "Reshape-Cast-Sub-Mul -> Cast-AttentionMask").
 * CPU meaning: the additive mask [B, 1, 1, S] is computed once per run by
 * one kernel, (1 - m) * value with the same float operations, instead of
 * four to five nodes and their intermediate tensors. */
#include "passes/transformer.h"

/* Axes a rank-2 mask gains on its way to [B, 1, 1, S]: 1 when node n is an
 * Unsqueeze/Reshape step consistent with that, adding the axes to *added. */
static int reshape_step(const poprt__node *n, int *added)
{
    int64_t cnt;
    if (poprt__rw_is(n, "Unsqueeze")) {
        int64_t axes[POPRT__MAX_RANK];
        if ((cnt = tf_attr_ints(n, "axes", axes)) == -2)
            cnt = tf_input_ints(n, 1, axes);
        if (cnt < 0)
            return 0;
        const int64_t out_rank = 2 + *added + cnt;
        for (int64_t i = 0; i < cnt; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + out_rank : axes[i];
            if (a != 1 + *added)
                return 0;
            (*added)++;
        }
        return 1;
    }
    if (poprt__rw_is(n, "Reshape") && *added == 0) {
        int64_t d[POPRT__MAX_RANK], xd[POPRT__MAX_RANK];
        int64_t shape[POPRT__MAX_RANK];
        if (tf_reshape_dims(n, d) != 4 || d[1] != 1 || d[2] != 1 ||
            poprt__rw_dims(n->inputs[0], xd) < 0 || tf_input_ints(n, 1, shape) != 4)
            return 0;
        /* batch copied (0) or equal; sequence inferred (-1) or equal */
        int rank_in = n->inputs[0]->type.rank;
        if (rank_in != 2 || !(shape[0] == 0 || (xd[0] >= 0 && shape[0] == xd[0])) ||
            !(shape[3] == -1 || (xd[1] >= 0 && shape[3] == xd[1])))
            return 0;
        *added = 2;
        return 1;
    }
    return 0;
}

int poprt__tf_match_mask_chain(poprt__model *m, poprt__node *mul, poprt__tensor **raw,
                               float *value, int32_t *to)
{
    poprt__graph *g = m->graph;
    if (!poprt__rw_is(mul, "Mul") || mul->n_inputs != 2)
        return 0;
    double v;
    int vi = poprt__rw_scalar(mul->inputs[1], POPRT__RW_ANY, &v)   ? 1
             : poprt__rw_scalar(mul->inputs[0], POPRT__RW_ANY, &v) ? 0
                                                                   : -1;
    if (vi < 0)
        return 0;
    poprt__node *sub = poprt__rw_producer(mul->inputs[1 - vi], "Sub");
    if (!sub || !poprt__rw_scalar_is(sub->inputs[0], POPRT__RW_ANY, 1.0, 0) ||
        poprt__graph_sole_consumer(g, sub->outputs[0]) != mul)
        return 0;
    /* walk back to the rank-2 mask, then check the steps in graph order */
    poprt__tensor *t = sub->inputs[1];
    const poprt__node *user = sub;
    poprt__node *chain[4];
    int n = 0;
    while (n < 4) {
        poprt__node *p = t->producer;
        if (!p || poprt__graph_sole_consumer(g, t) != user ||
            !(poprt__rw_is(p, "Cast") || poprt__rw_is(p, "Unsqueeze") ||
              poprt__rw_is(p, "Reshape")))
            break;
        chain[n++] = p;
        user = p;
        t = p->inputs[0];
    }
    int added = 0, casts = 0;
    *to = 0;
    for (int i = n - 1; i >= 0; i--) {
        if (poprt__rw_is(chain[i], "Cast")) {
            if (casts++)
                return 0;
            *to = (int32_t)poprt__attr_i(chain[i], "to", 0);
        } else if (!reshape_step(chain[i], &added)) {
            return 0;
        }
    }
    if (casts != 1 || added != 2 || t->type.kind != POPRT__KIND_TENSOR || t->type.rank != 2 ||
        !poprt__dtype_is_float(*to))
        return 0;
    *raw = t;
    *value = (float)v;
    return 1;
}

static poprt_status insert(poprt__model *m, poprt__node *mul, const void *ctx, int *done)
{
    (void)ctx;
    poprt__graph *g = m->graph;
    poprt__tensor *raw;
    float value;
    int32_t to;
    if (!poprt__tf_match_mask_chain(m, mul, &raw, &value, &to))
        return POPRT_OK;
    poprt_status st = poprt__rw_poprt_domain(m);
    if (st)
        return st;
    poprt__node *cast = poprt__rw_node(g, "Cast", "", "AttentionMask_Cast", 1, 1);
    poprt__node *am = poprt__rw_node(g, "AttentionMask", "ai.poprt", "AttentionMask", 1, 1);
    poprt__tensor *ct = poprt__graph_new_tensor(g, "attention_mask_float");
    if (!cast || !am || !ct)
        return poprt__rw_oom();
    poprt__node_set_input(cast, 0, raw);
    poprt__rw_set_output(cast, 0, ct);
    poprt__node_set_input(am, 0, ct);
    if ((st = poprt__rw_attr_i(cast, "to", to)) || (st = poprt__rw_attr_f(am, "value", value)) ||
        (to != POPRT_DTYPE_FLOAT && (st = poprt__rw_attr_i(am, "to", to))))
        return st;
    poprt__rw_take_output(g, mul, 0, am, 0);
    *done = 1;
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_fixpoint(m, insert, NULL, changed);
}

const poprt__pass poprt__pass_insert_attention_mask = {
    "insert_attention_mask",
    "Unsqueeze/Reshape-Cast-Sub(1,m)-Mul(value) -> Cast + ai.poprt.AttentionMask: the additive "
    "attention mask computed once by one kernel",
    run};
