/* pre_scale: attention's 1/sqrt(d) scale moves onto the query projection.
 * MatMul(Q, K^T) / c (or * c) with Q = Reshape/Transpose of MatMul(x, Wq)
 * [+ bq] and constant Wq, bq: the pass writes Wq * s and bq * s (s = 1/c or
 * c) as new initializers and drops the Div/Mul. On an ai.poprt.FusedAttention
 * the Q third of Wqkv/Bqkv is scaled and `scale` becomes 1.
 * CPU meaning: the scale costs nothing at run time (it is folded into
 * weights once) instead of a pass over the heads x S x S score tensor. */
#include <stdlib.h>
#include "passes/transformer.h"

/* A new float initializer: the first `cols` of every `ld` values of t scaled by s. */
static poprt__tensor *scaled(poprt__graph *g, const poprt__tensor *t, int64_t ld, int64_t cols,
                             float s)
{
    int64_t n;
    const float *src = poprt__rw_f32(t, POPRT__RW_ANY, &n);
    if (!src || n % ld)
        return NULL;
    float *v = poprt__malloc((size_t)(n ? n : 1) * sizeof(float));
    if (!v)
        return NULL;
    for (int64_t i = 0; i < n; i++)
        v[i] = (i % ld) < cols ? src[i] * s : src[i];
    int64_t dims[POPRT__MAX_RANK];
    int r = poprt__rw_dims(t, dims);
    if (r < 0) {
        r = 1;
        dims[0] = n;
    }
    poprt__tensor *o = poprt__graph_add_const(g, t->name, POPRT_DTYPE_FLOAT, r, dims, v,
                                              (size_t)n * sizeof(float));
    poprt__free(v);
    return o;
}

/* Q = Transpose(Reshape(MatMul(x, Wq) [+ bq])): the MatMul and Add, or 0. */
static int query_proj(const poprt__graph *g, poprt__tensor *qh, poprt__node **mm, poprt__node **add,
                      int *bias_slot)
{
    poprt__node *tr = poprt__rw_producer(qh, "Transpose");
    poprt__node *rs = tr ? poprt__rw_producer(tr->inputs[0], "Reshape") : NULL;
    if (!rs || poprt__graph_sole_consumer(g, qh) == NULL ||
        poprt__graph_sole_consumer(g, tr->inputs[0]) != tr ||
        poprt__graph_sole_consumer(g, rs->inputs[0]) != rs)
        return 0;
    poprt__tensor *p = rs->inputs[0];
    *add = poprt__rw_producer(p, "Add");
    *mm = NULL;
    *bias_slot = -1;
    if (*add) {
        for (int i = 0; i < 2 && !*mm; i++) {
            poprt__node *c = poprt__rw_producer((*add)->inputs[i], "MatMul");
            if (c && poprt__graph_sole_consumer(g, (*add)->inputs[i]) == *add) {
                *mm = c;
                *bias_slot = 1 - i;
            }
        }
    } else {
        *mm = poprt__rw_producer(p, "MatMul");
    }
    int64_t n;
    return *mm && poprt__rw_f32((*mm)->inputs[1], POPRT__RW_ANY, &n) &&
           (*bias_slot < 0 || poprt__rw_f32((*add)->inputs[*bias_slot], POPRT__RW_ANY, &n));
}

static poprt_status fused(poprt__graph *g, poprt__node *n, int *changed)
{
    float s = poprt__attr_f(n, "scale", 0.0f);
    int64_t nh = poprt__attr_i(n, "num_heads", 0), d[POPRT__MAX_RANK], cnt;
    if (s == 1.0f || s == 0.0f || !poprt__node_attr(n, "scale") || nh < 1 ||
        poprt__rw_dims(n->inputs[1], d) != 2 || d[1] % 3 ||
        !poprt__rw_f32(n->inputs[1], POPRT__RW_ANY, &cnt))
        return POPRT_OK;
    poprt__tensor *b = poprt__node_in(n, 2);
    if (b && !poprt__rw_f32(b, POPRT__RW_ANY, &cnt))
        return POPRT_OK;
    poprt__tensor *w2 = scaled(g, n->inputs[1], d[1], d[1] / 3, s);
    poprt__tensor *b2 = b ? scaled(g, b, d[1], d[1] / 3, s) : NULL;
    if (!w2 || (b && !b2))
        return poprt__rw_oom();
    poprt__node_set_input(n, 1, w2);
    if (b)
        poprt__node_set_input(n, 2, b2);
    for (int a = 0; a < n->n_attrs; a++)
        if (strcmp(n->attrs[a].name, "scale") == 0)
            n->attrs[a].f = 1.0f;
    *changed = 1;
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    poprt__graph *g = m->graph;
    *changed = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (strcmp(n->domain, "ai.poprt") == 0 && strcmp(n->op_type, "FusedAttention") == 0) {
            poprt_status st = fused(g, n, changed);
            if (st)
                return st;
            continue;
        }
        /* n = Div/Mul scaling the output of MatMul(Q, K^T) */
        double c;
        float s;
        poprt__tensor *sc;
        if (poprt__rw_is(n, "Div") && poprt__rw_scalar(n->inputs[1], POPRT__RW_ANY, &c) && c != 0) {
            s = (float)(1.0 / c);
            sc = n->inputs[0];
        } else if (poprt__rw_is(n, "Mul") && n->n_inputs == 2 &&
                   (poprt__rw_scalar(n->inputs[1], POPRT__RW_ANY, &c) ||
                    poprt__rw_scalar(n->inputs[0], POPRT__RW_ANY, &c))) {
            s = (float)c;
            sc = poprt__rw_scalar(n->inputs[1], POPRT__RW_ANY, &c) ? n->inputs[0] : n->inputs[1];
        } else {
            continue;
        }
        poprt__node *qk = poprt__rw_producer(sc, "MatMul");
        int64_t dd[POPRT__MAX_RANK];
        if (!qk || poprt__graph_sole_consumer(g, sc) != n || n->outputs[0]->is_output ||
            poprt__rw_dims(sc, dd) != 4)
            continue;
        poprt__node *mm, *add;
        int bs;
        if (!query_proj(g, qk->inputs[0], &mm, &add, &bs))
            continue;
        /* only the attention's scale: the rank-4 score tensor of two heads' tensors */
        if (!poprt__rw_producer(qk->inputs[1], "Transpose"))
            continue;
        int64_t wd[POPRT__MAX_RANK];
        if (poprt__rw_dims(mm->inputs[1], wd) != 2)
            continue;
        poprt__tensor *w2 = scaled(g, mm->inputs[1], wd[1], wd[1], s);
        poprt__tensor *b2 = bs >= 0 ? scaled(g, add->inputs[bs], wd[1], wd[1], s) : NULL;
        if (!w2 || (bs >= 0 && !b2))
            return poprt__rw_oom();
        poprt__node_set_input(mm, 1, w2);
        if (bs >= 0)
            poprt__node_set_input(add, bs, b2);
        poprt_status st = poprt__graph_replace_uses(g, n->outputs[0], sc);
        if (st)
            return st;
        *changed = 1;
    }
    if (*changed)
        poprt__graph_remove_dead(g);
    return POPRT_OK;
}

const poprt__pass poprt__pass_pre_scale = {
    "pre_scale",
    "attention's 1/sqrt(d) scale folded into the query weights and bias (Div/Mul removed; "
    "FusedAttention scale set to 1): no run-time pass over the score tensor",
    run};
