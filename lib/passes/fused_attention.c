/* fused_attention: the BERT self-attention block
 *   Q, K, V = MatMul(x, W) [+ Add(b)] -> Reshape [B, S, heads, hd] -> Transpose
 *   MatMul(Q, K^T) [-> Div/Mul scale] [-> Add mask] -> Softmax -> MatMul(., V)
 *   -> Transpose [0, 2, 1, 3] -> Reshape [B, S, H]
 * (or one projection of all three heads' parts, gathered or split apart:
 * made three first, below; a Where mask as GPT-2 writes its causal one, in
 * place of the Add) becomes one ai.poprt.FusedAttention(x, Wqkv, Bqkv,
 * mask) node (Q/K/V weights concatenated at conversion time), or, when the
 * model's opset is
 * 23 or newer, one ONNX Attention node after the three projections.
 * CPU meaning: one kernel does the three projections as a single GEMM and
 * the attention head by head in cache-sized blocks, with no 4-D score,
 * transpose or reshape tensors in memory. */
#include "passes/transformer.h"

typedef struct proj {
    poprt__tensor *out;  /* projection output [B, S, H] */
    poprt__tensor *w, *b; /* MatMul weight, bias (NULL: none) */
    poprt__tensor *x;    /* MatMul input */
    int64_t nh, hd;      /* from the Reshape's output type */
    const poprt__node *mm; /* the MatMul (NULL when the projection is kept) */
} proj;

static const int64_t P0213[4] = {0, 2, 1, 3}, P0231[4] = {0, 2, 3, 1}, P0132[4] = {0, 1, 3, 2};

/* t = Reshape(p, [B, S, nh, hd]) with p = MatMul(x, W) [+ b]; keep: p is
 * kept (read by the new node), so it may have other readers and come from
 * anything. */
static int match_proj(const poprt__graph *g, poprt__tensor *t, const poprt__node *user, proj *o,
                      int keep)
{
    poprt__node *rs = poprt__rw_producer(t, "Reshape");
    if (!rs || poprt__graph_sole_consumer(g, t) != user)
        return 0;
    int64_t d[POPRT__MAX_RANK];
    if (tf_reshape_dims(rs, d) != 4 || d[2] < 1 || d[3] < 1)
        return 0;
    o->nh = d[2];
    o->hd = d[3];
    o->out = rs->inputs[0];
    if (poprt__rw_dims(o->out, d) != 3 || (d[2] >= 0 && d[2] != o->nh * o->hd))
        return 0;
    o->mm = NULL;
    if (keep)
        return 1;
    if (poprt__graph_sole_consumer(g, o->out) != rs)
        return 0;
    poprt__tensor *mm_out = o->out;
    o->b = NULL;
    poprt__node *add = poprt__rw_producer(o->out, "Add");
    if (add) {
        for (int i = 0; i < 2 && !o->b; i++) {
            poprt__node *mm = poprt__rw_producer(add->inputs[i], "MatMul");
            if (mm && poprt__graph_sole_consumer(g, add->inputs[i]) == add) {
                o->b = add->inputs[1 - i];
                mm_out = add->inputs[i];
            }
        }
        if (!o->b)
            return 0;
    }
    poprt__node *mm = poprt__rw_producer(mm_out, "MatMul");
    if (!mm)
        return 0;
    o->x = mm->inputs[0];
    o->w = mm->inputs[1];
    o->mm = mm;
    return 1;
}

/* head tensor t = Transpose(perm)(Reshape(...)). */
static int match_head(const poprt__graph *g, poprt__tensor *t, const poprt__node *user,
                      const int64_t *perm, proj *o, int keep)
{
    poprt__node *tr = poprt__rw_producer(t, "Transpose");
    if (!tr || !tf_perm_is(tr, 4, perm) || poprt__graph_sole_consumer(g, t) != user)
        return 0;
    return match_proj(g, tr->inputs[0], tr, o, keep);
}

typedef struct att_match {
    proj q, k, v;
    poprt__tensor *mask;
    /* a causal (or other constant) mask written Where(cond, scores, fill):
     * cond a constant bool, fill <= -1e4 (att_mask makes the additive one) */
    const poprt__tensor *cond;
    double fill;
    poprt__node *last;
    double scale;
} att_match;

/* Scores before the mask: [Div/Mul scale of] MatMul(Q, K^T). */
static poprt__node *match_scores(const poprt__graph *g, poprt__tensor *t, const poprt__node *user,
                                 double *scale)
{
    if (poprt__graph_sole_consumer(g, t) != user)
        return NULL;
    *scale = 1.0;
    poprt__node *p = t->producer;
    double c;
    if (poprt__rw_is(p, "Div") && poprt__rw_scalar(p->inputs[1], POPRT__RW_ANY, &c) && c != 0) {
        *scale = 1.0 / c;
        user = p;
        t = p->inputs[0];
    } else if (poprt__rw_is(p, "Mul") && p->n_inputs == 2) {
        int i = poprt__rw_scalar(p->inputs[0], POPRT__RW_ANY, &c)   ? 0
                : poprt__rw_scalar(p->inputs[1], POPRT__RW_ANY, &c) ? 1
                                                                    : -1;
        if (i < 0)
            return NULL;
        *scale = c;
        user = p;
        t = p->inputs[1 - i];
    }
    poprt__node *mm = poprt__rw_producer(t, "MatMul");
    return mm && poprt__graph_sole_consumer(g, t) == user ? mm : NULL;
}

/* keep: the projections stay (match_proj). */
static int match(const poprt__graph *g, poprt__node *sm, att_match *o, int keep)
{
    memset(o, 0, sizeof *o);
    if (!poprt__rw_is(sm, "Softmax"))
        return 0;
    int64_t axis = poprt__attr_i(sm, "axis", sm->opset >= 13 ? -1 : 1);
    if (axis != -1 && axis != 3)
        return 0;
    poprt__tensor *s = sm->inputs[0];
    int64_t sd[POPRT__MAX_RANK], md[POPRT__MAX_RANK];
    if (poprt__rw_dims(s, sd) != 4)
        return 0;
    poprt__node *qk = NULL;
    poprt__node *add = poprt__rw_producer(s, "Add");
    if (add && poprt__graph_sole_consumer(g, s) == sm) {
        for (int i = 0; i < 2 && !qk; i++) {
            qk = match_scores(g, add->inputs[i], add, &o->scale);
            o->mask = add->inputs[1 - i];
        }
        if (!qk)
            return 0;
        int mr = poprt__rw_dims(o->mask, md);
        if (mr < 0 || mr > 4 || o->mask->type.elem != s->type.elem)
            return 0;
        for (int d = 0; d < mr; d++) { /* the mask must not widen the scores */
            int64_t want = sd[4 - mr + d];
            if (md[d] > 1 && want >= 0 && md[d] != want) /* unknown: checked at run time */
                return 0;
        }
    } else if (poprt__rw_producer(s, "Where") && poprt__graph_sole_consumer(g, s) == sm) {
        /* Where(cond, scores, fill): GPT-2's causal mask */
        poprt__node *wh = s->producer;
        poprt__rw_const c;
        int mr = poprt__rw_dims(wh->inputs[0], md);
        if (!poprt__rw_const_of(wh->inputs[0], POPRT__RW_ANY, &c) || c.elem != POPRT_DTYPE_BOOL ||
            mr < 2 || mr > 4 || !poprt__rw_scalar(wh->inputs[2], POPRT__RW_ANY, &o->fill) ||
            !(o->fill <= -1e4) || !(qk = match_scores(g, wh->inputs[1], wh, &o->scale)))
            return 0;
        for (int d = 0; d < mr; d++) { /* [1.., Sq | 1, Sk | 1] within the scores */
            int64_t want = sd[4 - mr + d];
            if (md[d] < 1 || (md[d] > 1 && (d < mr - 2 || md[d] != want)))
                return 0;
        }
        o->cond = wh->inputs[0];
    } else {
        qk = match_scores(g, s, sm, &o->scale);
        if (!qk)
            return 0;
    }
    if (!match_head(g, qk->inputs[0], qk, P0213, &o->q, keep))
        return 0;
    poprt__node *kt = poprt__rw_producer(qk->inputs[1], "Transpose");
    if (!kt || poprt__graph_sole_consumer(g, qk->inputs[1]) != qk)
        return 0;
    if (tf_perm_is(kt, 4, P0231)) {
        if (!match_proj(g, kt->inputs[0], kt, &o->k, keep))
            return 0;
    } else if (!tf_perm_is(kt, 4, P0132) ||
               !match_head(g, kt->inputs[0], kt, P0213, &o->k, keep)) {
        return 0;
    }
    poprt__node *pv = poprt__rw_reader(g, sm->outputs[0], "MatMul");
    if (!pv || pv->inputs[0] != sm->outputs[0] ||
        !match_head(g, pv->inputs[1], pv, P0213, &o->v, keep))
        return 0;
    poprt__node *tr = poprt__rw_reader(g, pv->outputs[0], "Transpose");
    if (!tr || !tf_perm_is(tr, 4, P0213))
        return 0;
    poprt__node *rs = poprt__rw_reader(g, tr->outputs[0], "Reshape");
    int64_t yd[POPRT__MAX_RANK], xd[POPRT__MAX_RANK];
    if (!rs || tf_reshape_dims(rs, yd) != 3)
        return 0;
    const int64_t nh = o->q.nh, hd = o->q.hd;
    if (o->k.nh != nh || o->v.nh != nh || o->k.hd != hd || o->v.hd != hd ||
        (yd[2] >= 0 && yd[2] != nh * hd))
        return 0;
    o->last = rs;
    if (keep)
        return 1;
    if (o->q.x != o->k.x || o->q.x != o->v.x || poprt__rw_dims(o->q.x, xd) != 3)
        return 0;
    o->last = rs;
    return 1;
}

/* Weight [Hin, H] and bias [H] of one projection as float32 constants. */
static int const_proj(const proj *p, int64_t H, const void **w, const void **b, int64_t *hin)
{
    int64_t n, d[POPRT__MAX_RANK];
    *w = poprt__rw_f32_bytes(p->w, POPRT__RW_ANY, &n);
    if (!*w || poprt__rw_dims(p->w, d) != 2 || d[1] != H)
        return 0;
    *hin = d[0];
    *b = NULL;
    if (p->b) {
        *b = poprt__rw_f32_bytes(p->b, POPRT__RW_ANY, &n);
        if (!*b || n != H || p->b->type.rank != 1)
            return 0;
    }
    return 1;
}

/* The additive mask of o: its Add's, or Where's cond as 0 (true) / fill
 * (false), [Sq | 1, Sk | 1] (cond's leading dims are 1): softmax(s + fill)
 * is softmax(Where(cond, s, fill)) as fill <= -1e4 drives both terms to 0.
 * *mask NULL without one; OUT_OF_MEMORY. */
static poprt_status att_mask(poprt__graph *g, const att_match *o, poprt__tensor **mask)
{
    *mask = o->mask;
    if (!o->cond)
        return POPRT_OK;
    int64_t d[POPRT__MAX_RANK];
    const int r = poprt__rw_dims(o->cond, d);
    poprt__rw_const c;
    if (r < 2 || !poprt__rw_const_of(o->cond, POPRT__RW_ANY, &c))
        return poprt__err(POPRT_STATUS_INTERNAL, "attention mask: condition not constant");
    const int64_t rows = d[r - 2], cols = d[r - 1];
    float *v = poprt__malloc((size_t)(rows * cols) * sizeof(float));
    if (!v)
        return poprt__rw_oom();
    const unsigned char *b = c.data;
    for (int64_t i = 0; i < rows * cols; i++)
        v[i] = b[i] ? 0.0f : (float)o->fill;
    const void *src = v;
    *mask = poprt__rw_new_f32_concat(g, "attention_mask", rows, 1, &src, &cols, 0);
    poprt__free(v);
    return *mask ? POPRT_OK : poprt__rw_oom();
}

static poprt_status fuse_poprt(poprt__model *m, const att_match *o, int *done)
{
    poprt__graph *g = m->graph;
    const int64_t H = o->q.nh * o->q.hd;
    const void *w[3], *b[3];
    int64_t hin[3];
    const proj *p[3] = {&o->q, &o->k, &o->v};
    for (int i = 0; i < 3; i++)
        if (!const_proj(p[i], H, &w[i], &b[i], &hin[i]) || hin[i] != hin[0])
            return POPRT_OK;
    int64_t xd[POPRT__MAX_RANK];
    poprt__rw_dims(o->q.x, xd);
    if (xd[2] >= 0 && xd[2] != hin[0])
        return POPRT_OK;
    if (o->q.x->type.elem != POPRT_DTYPE_FLOAT)
        return POPRT_OK;
    /* the three weights [Hin, H] side by side: [Hin, 3H]; biases likewise */
    const int64_t cols[3] = {H, H, H};
    int has_b = b[0] || b[1] || b[2];
    poprt__tensor *wt = poprt__rw_new_f32_concat(g, "attention_qkv_weight", hin[0], 3, w, cols, 0);
    poprt__tensor *bt =
        has_b ? poprt__rw_new_f32_concat(g, "attention_qkv_bias", 1, 3, b, cols, 1) : NULL;
    poprt_status st;
    if (!wt || (has_b && !bt))
        return poprt__rw_oom();
    if ((st = poprt__rw_poprt_domain(m)))
        return st;
    /* one projection kept float32 (bf16_fallback) keeps the fused one so */
    int f32 = 0;
    for (int i = 0; i < 3; i++) {
        const char *v = p[i]->mm ? poprt__rw_meta(p[i]->mm, POPRT__META_MATMUL_FLOAT32) : NULL;
        f32 |= v && strcmp(v, "1") == 0;
    }
    poprt__tensor *mask;
    if ((st = att_mask(g, o, &mask)))
        return st;
    poprt__tensor *ins[4] = {o->q.x, wt, bt, mask};
    poprt__node *n =
        poprt__rw_replace(g, o->last, "FusedAttention", "ai.poprt", mask ? 4 : 3, ins);
    if (!n || (f32 && poprt__rw_set_meta(m, &n->n_meta, &n->meta_keys, &n->meta_vals,
                                         POPRT__META_MATMUL_FLOAT32, "1")))
        return poprt__rw_oom();
    if ((st = poprt__rw_attr_i(n, "num_heads", o->q.nh)) ||
        (st = poprt__rw_attr_f(n, "scale", (float)o->scale)))
        return st;
    *done = 1;
    return POPRT_OK;
}

/* Opset >= 23: ONNX Attention reads the three 3-D projections. */
static poprt_status fuse_onnx(poprt__model *m, const att_match *o, int *done)
{
    poprt__tensor *mask;
    poprt_status st = att_mask(m->graph, o, &mask);
    if (st)
        return st;
    poprt__tensor *ins[4] = {o->q.out, o->k.out, o->v.out, mask};
    poprt__node *n = poprt__rw_replace(m->graph, o->last, "Attention", "", mask ? 4 : 3, ins);
    if (!n)
        return poprt__rw_oom();
    if ((st = poprt__rw_attr_i(n, "q_num_heads", o->q.nh)) ||
        (st = poprt__rw_attr_i(n, "kv_num_heads", o->q.nh)) ||
        (st = poprt__rw_attr_f(n, "scale", (float)o->scale)))
        return st;
    *done = 1;
    return POPRT_OK;
}

static poprt_status fuse(poprt__model *m, poprt__node *sm, const void *ctx, int *done)
{
    (void)ctx;
    att_match o;
    if (!match(m->graph, sm, &o, 0))
        return POPRT_OK;
    poprt_status st =
        poprt__model_opset(m, "") >= 23 ? fuse_onnx(m, &o, done) : fuse_poprt(m, &o, done);
    if (!st && *done)
        poprt__graph_remove_dead(m->graph);
    return st;
}

/* ---- fused projections ------------------------------------------------------
 * timm's ViTs (and others) project Q, K and V with one MatMul:
 *   qkv = MatMul(x, W) [+ b] (W [Hin, 3 nh hd], b [3 nh hd] constants)
 *   -> Reshape [B, S, 3, nh, hd] -> Transpose [2, 0, 3, 1, 4]
 *   -> Gather(index 0 / 1 / 2, axis 0): q, k, v [B, nh, S, hd]
 * which becomes the three projections match() reads,
 *   MatMul(x, W_i) [+ b_i] -> Reshape [B, S, nh, hd] -> Transpose [0, 2, 1, 3],
 * W_i and b_i the columns of head part i (fuse_poprt puts them side by side
 * again for its single GEMM). Only where all three heads then read as an
 * attention block's Q (QK^T's left side), K (through a Transpose [0, 1, 3, 2]
 * into its right side) and V (the probabilities' MatMul's right side).
 * GPT-2 splits its projection with Split(qkv, 3 equal parts, last axis)
 * before the Reshapes: the parts become the three projections likewise
 * (split_qkv_parts). Its causal mask, Where(cond, scores, fill) with a
 * constant bool cond and fill <= -1e4, is taken as the additive mask
 * cond ? 0 : fill (att_mask). */
static const int64_t P20314[5] = {2, 0, 3, 1, 4};

/* Gather(t, scalar index, axis 0) of t's readers, by index (0..2). */
static int qkv_gathers(const poprt__graph *g, const poprt__tensor *t, poprt__node *out[3])
{
    poprt__vec rd = {0};
    int ok = !t->is_output && poprt__graph_consumers(g, t, &rd) == POPRT_OK && rd.len == 3 &&
             poprt__tensor_use_count(g, t) == 3;
    out[0] = out[1] = out[2] = NULL;
    for (size_t r = 0; ok && r < rd.len; r++) {
        poprt__node *n = rd.items[r];
        int64_t v;
        ok = poprt__rw_is(n, "Gather") && n->inputs[0] == t && poprt__attr_i(n, "axis", 0) == 0 &&
             n->inputs[1]->type.rank == 0 &&
             poprt__rw_ints(n->inputs[1], POPRT__RW_ANY, &v, 1) == 1 && v >= -3 && v < 3;
        if (ok) {
            v = v < 0 ? v + 3 : v;
            ok = !out[v];
            out[v] = n;
        }
    }
    poprt__vec_free(&rd);
    return ok;
}

/* q, k, v read as an attention block's operands (see above). */
static int qkv_attention_reads(const poprt__graph *g, poprt__node *const ga[3])
{
    const poprt__tensor *q = ga[0]->outputs[0], *k = ga[1]->outputs[0], *v = ga[2]->outputs[0];
    poprt__node *qk = poprt__graph_sole_consumer(g, q);
    poprt__node *kt = poprt__graph_sole_consumer(g, k);
    poprt__node *pv = poprt__graph_sole_consumer(g, v);
    return qk && kt && pv && poprt__rw_is(qk, "MatMul") && qk->inputs[0] == q &&
           poprt__rw_is(kt, "Transpose") && tf_perm_is(kt, 4, P0132) &&
           poprt__graph_sole_consumer(g, kt->outputs[0]) == qk && qk->inputs[1] == kt->outputs[0] &&
           poprt__rw_is(pv, "MatMul") && pv->inputs[1] == v;
}

/* The fused projection p = MatMul(x, W) [+ b] read only by `reader`: W
 * [hin, 3H] and b [3H] constants (*w, *b: their bytes, maybe unaligned;
 * *b NULL without a bias). The MatMul in *mm; 0 when p is not one. */
static int qkv_proj(const poprt__graph *g, poprt__tensor *p, const poprt__node *reader, int64_t H,
                    poprt__node **mm, const void **w, const void **b, int64_t *hin)
{
    poprt__tensor *mm_out = p, *bt = NULL;
    if (poprt__graph_sole_consumer(g, p) != reader || p->is_output)
        return 0;
    poprt__node *add = poprt__rw_producer(p, "Add");
    for (int i = 0; add && i < 2 && !bt; i++)
        if (poprt__rw_producer(add->inputs[i], "MatMul") &&
            poprt__graph_sole_consumer(g, add->inputs[i]) == add) {
            bt = add->inputs[1 - i];
            mm_out = add->inputs[i];
        }
    *mm = poprt__rw_producer(mm_out, "MatMul");
    int64_t wd[POPRT__MAX_RANK], nw, nb = 0;
    *w = *mm ? poprt__rw_f32_bytes((*mm)->inputs[1], POPRT__RW_ANY, &nw) : NULL;
    *b = bt ? poprt__rw_f32_bytes(bt, POPRT__RW_ANY, &nb) : NULL;
    if ((add && !bt) || !*w || poprt__rw_dims((*mm)->inputs[1], wd) != 2 || wd[1] != 3 * H ||
        (bt && (!*b || nb != 3 * H || bt->type.rank != 1)))
        return 0;
    *hin = wd[0];
    return 1;
}

/* MatMul(mm's input, W_i) [+ b_i] on column third i of w [hin, 3H] and b
 * (wi: hin * H floats of scratch); its output, or NULL when out of memory. */
static poprt__tensor *third_proj(poprt__model *m, const poprt__node *mm, const void *w,
                                 const void *b, int64_t hin, int64_t H, int i, float *wi)
{
    poprt__graph *g = m->graph;
    for (int64_t r = 0; r < hin; r++)
        memcpy(wi + r * H, (const char *)w + ((size_t)(r * 3 * H + i * H)) * sizeof(float),
               (size_t)H * sizeof(float));
    const void *src = wi, *bsrc = b ? (const char *)b + (size_t)(i * H) * sizeof(float) : NULL;
    poprt__tensor *wt = poprt__rw_new_f32_concat(g, "attention_w", hin, 1, &src, &H, 0);
    poprt__tensor *bi = b ? poprt__rw_new_f32_concat(g, "attention_b", 1, 1, &bsrc, &H, 1) : NULL;
    poprt__tensor *ins[2] = {mm->inputs[0], wt};
    poprt__node *nm =
        wt && (bi || !b) ? poprt__rw_node1(g, "MatMul", "", 2, ins, NULL, NULL) : NULL;
    if (!nm || poprt__rw_copy_matmul_float32(m, nm, mm))
        return NULL;
    if (!bi)
        return nm->outputs[0];
    poprt__tensor *ai[2] = {nm->outputs[0], bi};
    poprt__node *na = poprt__rw_node1(g, "Add", "", 2, ai, NULL, NULL);
    return na ? na->outputs[0] : NULL;
}

static poprt_status split_qkv(poprt__model *m, poprt__node *tr, const void *ctx, int *done)
{
    (void)ctx;
    poprt__graph *g = m->graph;
    if (!poprt__rw_is(tr, "Transpose") || !tf_perm_is(tr, 5, P20314))
        return POPRT_OK;
    poprt__node *rs = poprt__rw_producer(tr->inputs[0], "Reshape");
    int64_t shape[POPRT__MAX_RANK];
    if (!rs || rs->n_inputs < 2 || poprt__graph_sole_consumer(g, tr->inputs[0]) != tr ||
        poprt__rw_ints(rs->inputs[1], POPRT__RW_ANY, shape, POPRT__MAX_RANK) != 5 ||
        shape[2] != 3 || shape[3] <= 0 || shape[4] <= 0)
        return POPRT_OK;
    const int64_t H = shape[3] * shape[4];
    poprt__node *mm, *ga[3];
    const void *w, *b;
    int64_t hin;
    if (!qkv_proj(g, rs->inputs[0], rs, H, &mm, &w, &b, &hin) ||
        !qkv_gathers(g, tr->outputs[0], ga) || !qkv_attention_reads(g, ga))
        return POPRT_OK;
    float *wi = poprt__malloc((size_t)(hin * H) * sizeof(float));
    if (!wi)
        return poprt__rw_oom();
    const int64_t rs_shape[4] = {shape[0], shape[1], shape[3], shape[4]};
    static const int64_t p0213[4] = {0, 2, 1, 3};
    poprt_status st = POPRT_OK;
    for (int i = 0; i < 3 && !st; i++) {
        poprt__tensor *pi = third_proj(m, mm, w, b, hin, H, i, wi);
        poprt__tensor *sh = poprt__rw_new_i64(g, "attention_shape", rs_shape, 4);
        poprt__tensor *ri[2] = {pi, sh};
        poprt__node *nr = pi && sh ? poprt__rw_node1(g, "Reshape", "", 2, ri, NULL, NULL) : NULL;
        poprt__node *nt = nr ? poprt__rw_node(g, "Transpose", "", ga[i]->name, 1, 1) : NULL;
        if (!nt) {
            st = poprt__rw_oom();
            break;
        }
        poprt__node_set_input(nt, 0, nr->outputs[0]);
        st = poprt__rw_attr_ints(nt, "perm", 4, p0213);
        poprt__rw_take_output(g, ga[i], 0, nt, 0);
    }
    poprt__free(wi);
    if (st)
        return st;
    *done = 1;
    poprt__graph_remove_dead(g);
    return POPRT_OK;
}

/* Whether the three outputs of Split sp are, in order, the projections of
 * Q, K and V of an attention block that match() takes (the projections
 * aside): otherwise splitting the product would only make one GEMM three. */
static int qkv_parts_attention(const poprt__graph *g, const poprt__node *sp)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        att_match o;
        if (match(g, g->nodes.items[i], &o, 1) && o.q.out == sp->outputs[0] &&
            o.k.out == sp->outputs[1] && o.v.out == sp->outputs[2])
            return 1;
    }
    return 0;
}

/* GPT-2's form: Split(qkv, 3 equal parts, last axis), each part read by one
 * Reshape (then the heads' Transposes, into an attention block): the parts
 * become three projections on W's and b's column thirds. */
static poprt_status split_qkv_parts(poprt__model *m, poprt__node *sp, const void *ctx, int *done)
{
    (void)ctx;
    poprt__graph *g = m->graph;
    int64_t pd[POPRT__MAX_RANK], parts[POPRT__MAX_RANK];
    if (!poprt__rw_is(sp, "Split") || sp->n_outputs != 3 || !sp->inputs[0] ||
        poprt__rw_dims(sp->inputs[0], pd) != 3 || pd[2] <= 0 || pd[2] % 3)
        return POPRT_OK;
    const int64_t axis = poprt__attr_i(sp, "axis", 0), H = pd[2] / 3;
    int64_t np = sp->n_inputs > 1 && sp->inputs[1]
                     ? poprt__rw_ints(sp->inputs[1], POPRT__RW_ANY, parts, POPRT__MAX_RANK)
                     : tf_attr_ints(sp, "split", parts);
    if (np == -2) /* none given: equal parts */
        np = 3, parts[0] = parts[1] = parts[2] = H;
    if ((axis != 2 && axis != -1) || np != 3 || parts[0] != H || parts[1] != H || parts[2] != H)
        return POPRT_OK;
    poprt__node *mm, *rd[3];
    const void *w, *b;
    int64_t hin;
    for (int i = 0; i < 3; i++) {
        poprt__tensor *t = poprt__node_out(sp, i);
        rd[i] = t && !t->is_output ? poprt__graph_sole_consumer(g, t) : NULL;
        if (!rd[i] || !poprt__rw_is(rd[i], "Reshape") || rd[i]->inputs[0] != t)
            return POPRT_OK;
    }
    if (!qkv_proj(g, sp->inputs[0], sp, H, &mm, &w, &b, &hin) || !qkv_parts_attention(g, sp))
        return POPRT_OK;
    float *wi = poprt__malloc((size_t)(hin * H) * sizeof(float));
    if (!wi)
        return poprt__rw_oom();
    poprt_status st = POPRT_OK;
    for (int i = 0; i < 3 && !st; i++) {
        poprt__tensor *pi = third_proj(m, mm, w, b, hin, H, i, wi);
        if (!pi)
            st = poprt__rw_oom();
        else
            poprt__node_set_input(rd[i], 0, pi);
    }
    poprt__free(wi);
    if (st)
        return st;
    *done = 1;
    poprt__graph_remove_dead(g);
    return POPRT_OK;
}

poprt_status poprt__tf_fuse_attention(poprt__model *m, int *changed)
{
    int split = 0, parts = 0;
    poprt_status st = poprt__rw_fixpoint(m, split_qkv, NULL, &split);
    if (!st)
        st = poprt__rw_fixpoint(m, split_qkv_parts, NULL, &parts);
    split |= parts;
    if (!st && split) /* (the new tensors' types, for match) */
        st = poprt__model_check(m);
    if (st)
        return st;
    st = poprt__rw_fixpoint(m, fuse, NULL, changed);
    *changed |= split;
    return st;
}

/* The block matched as o becomes op(Q, K, V[, fourth]) of the ai.poprt
 * domain with o's heads and scale, from the projections on. */
static poprt_status heads_node(poprt__model *m, const att_match *o, const char *op,
                               poprt__tensor *fourth, int *done)
{
    poprt_status st = poprt__rw_poprt_domain(m);
    if (st)
        return st;
    poprt__tensor *ins[4] = {o->q.out, o->k.out, o->v.out, fourth};
    poprt__node *n = poprt__rw_replace(m->graph, o->last, op, "ai.poprt", fourth ? 4 : 3, ins);
    if (!n)
        return poprt__rw_oom();
    if ((st = poprt__rw_attr_i(n, "num_heads", o->q.nh)) ||
        (st = poprt__rw_attr_f(n, "scale", (float)o->scale)))
        return st;
    *done = 1;
    poprt__graph_remove_dead(m->graph);
    return POPRT_OK;
}

static poprt_status heads(poprt__model *m, poprt__node *sm, const void *ctx, int *done)
{
    (void)ctx;
    att_match o;
    if (!match(m->graph, sm, &o, 1) || sm->inputs[0]->type.elem != POPRT_DTYPE_FLOAT)
        return POPRT_OK;
    int64_t qd[POPRT__MAX_RANK], kd[POPRT__MAX_RANK], vd[POPRT__MAX_RANK];
    const proj *p[3] = {&o.q, &o.k, &o.v};
    for (int i = 0; i < 3; i++)
        if (p[i]->out->type.elem != POPRT_DTYPE_FLOAT)
            return POPRT_OK;
    if (poprt__rw_dims(o.q.out, qd) != 3 || poprt__rw_dims(o.k.out, kd) != 3 ||
        poprt__rw_dims(o.v.out, vd) != 3)
        return POPRT_OK;
    for (int d = 0; d < 3; d++)
        if (qd[d] < 0 || qd[d] != kd[d] || qd[d] != vd[d])
            return POPRT_OK;
    poprt__tensor *mask;
    poprt_status st = att_mask(m->graph, &o, &mask);
    return st ? st : heads_node(m, &o, "MaskedAttention", mask, done);
}

poprt_status poprt__tf_fuse_attention_heads(poprt__model *m, int *changed)
{
    return poprt__rw_fixpoint(m, heads, NULL, changed);
}

typedef struct seg_ctx {
    const poprt__tensor *mask;
    poprt__tensor *seg;
} seg_ctx;

/* An attention block whose additive mask is (1 - mask) * value, value <=
 * -1e4 (keys of other segments then weigh exactly 0 after the softmax),
 * with mask the [B, S] input: SegmentAttention on the three projections. */
static poprt_status segment(poprt__model *m, poprt__node *sm, const void *ctx, int *done)
{
    const seg_ctx *c = ctx;
    att_match o;
    poprt__tensor *raw = NULL;
    float value = 0;
    int32_t to;
    if (!match(m->graph, sm, &o, 1) || !o.mask || !o.mask->producer ||
        !poprt__tf_match_mask_chain(m, o.mask->producer, &raw, &value, &to) || raw != c->mask ||
        !(value <= -1e4f))
        return POPRT_OK;
    return heads_node(m, &o, "SegmentAttention", c->seg, done);
}

poprt_status poprt__tf_segment_attention(poprt__model *m, const poprt__tensor *mask,
                                         poprt__tensor *seg, int *changed)
{
    seg_ctx c = {mask, seg};
    return poprt__rw_fixpoint(m, segment, &c, changed);
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__tf_fuse_attention(m, changed);
}

const poprt__pass poprt__pass_fused_attention = {
    "fused_attention",
    "BERT self-attention (Q/K/V MatMul+Add, or one QKV MatMul+Add gathered or split apart, "
    "Reshape/Transpose, QK^T, scale, Add or Where mask, Softmax, xV, Transpose/Reshape) -> one "
    "ai.poprt.FusedAttention (or ONNX Attention from opset 23)",
    run};
