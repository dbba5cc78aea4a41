/* matmul_rotary_embedding: element-wise rotary embedding
 *   x * cos + rotate_half(x) * sin,
 *   rotate_half(x) = Concat(Neg(Slice(x, d/2:d)), Slice(x, 0:d/2)) on the last axis,
 * is recognised and
 *   mode=fuse (default): replaced by one ai.poprt.RotaryEmbedding(x, cos, sin)
 *     (same float operations: bit-identical);
 *   mode=matmul: rotate_half(x) replaced by MatMul(x, R) with the constant
 *     signed permutation R [d, d], the reference's rewrite (exact too).
 * CPU meaning: fuse makes one pass over x with no intermediate tensors (the
 * matmul form is kept for fidelity; on a CPU it costs d multiply-adds per
 * element instead of a copy). */
#include "passes/transformer.h"

/* Slice of x over [start, end) of the last axis with step 1: 1 and x. */
static int last_axis_slice(const poprt__node *s, int64_t d, int64_t *start, int64_t *end)
{
    if (!poprt__rw_is(s, "Slice"))
        return 0;
    /* counts: -2 absent, -1 not constant */
    int64_t st[POPRT__MAX_RANK], en[POPRT__MAX_RANK], ax[POPRT__MAX_RANK], sp[POPRT__MAX_RANK];
    int64_t n1, n2, n3, n4 = -2;
    if (s->opset < 10) {
        n1 = tf_attr_ints(s, "starts", st);
        n2 = tf_attr_ints(s, "ends", en);
        n3 = tf_attr_ints(s, "axes", ax);
    } else {
        n1 = tf_input_ints(s, 1, st);
        n2 = tf_input_ints(s, 2, en);
        n3 = tf_input_ints(s, 3, ax);
        n4 = tf_input_ints(s, 4, sp);
        if (n3 == -1 || n4 == -1)
            return 0;
    }
    int r = s->inputs[0]->type.rank;
    if (n1 != 1 || n2 != 1 || (n4 != -2 && (n4 != 1 || sp[0] != 1)) || r < 1)
        return 0;
    if (n3 != -2 ? (n3 != 1 || (ax[0] != -1 && ax[0] != r - 1)) : r != 1)
        return 0;
    *start = st[0] < 0 ? st[0] + d : st[0];
    *end = en[0] < 0 ? en[0] + d : (en[0] > d ? d : en[0]);
    return 1;
}

typedef struct rope {
    poprt__tensor *x, *cos, *sin;
    poprt__node *concat, *last;
    int64_t d;
} rope;

static int match(poprt__model *m, poprt__node *c, rope *o)
{
    const poprt__graph *g = m->graph;
    if (!poprt__rw_is(c, "Concat") || c->n_inputs != 2)
        return 0;
    poprt__node *neg = poprt__rw_producer(c->inputs[0], "Neg");
    poprt__node *s2 = neg ? poprt__rw_producer(neg->inputs[0], "Slice") : NULL;
    poprt__node *s1 = poprt__rw_producer(c->inputs[1], "Slice");
    if (!s1 || !s2 || s1->inputs[0] != s2->inputs[0])
        return 0;
    poprt__tensor *x = s1->inputs[0];
    int64_t xd[POPRT__MAX_RANK], a0, a1, b0, b1;
    int r = poprt__rw_dims(x, xd);
    if (r < 1 || xd[r - 1] < 2 || xd[r - 1] % 2)
        return 0;
    const int64_t d = xd[r - 1], h = d / 2;
    int64_t axis = poprt__attr_i(c, "axis", 0);
    if ((axis != -1 && axis != r - 1) || !last_axis_slice(s2, d, &a0, &a1) ||
        !last_axis_slice(s1, d, &b0, &b1) || a0 != h || a1 != d || b0 != 0 || b1 != h)
        return 0;
    poprt__node *ms = poprt__rw_reader(g, c->outputs[0], "Mul");
    poprt__node *add = ms ? poprt__rw_reader(g, ms->outputs[0], "Add") : NULL;
    poprt__tensor *mc_out = add ? poprt__rw_other_input(add, ms->outputs[0]) : NULL;
    poprt__node *mc = poprt__rw_producer(mc_out, "Mul");
    if (!mc || poprt__graph_sole_consumer(g, mc_out) != add || !poprt__rw_other_input(mc, x))
        return 0;
    o->x = x;
    o->sin = poprt__rw_other_input(ms, c->outputs[0]);
    o->cos = poprt__rw_other_input(mc, x);
    o->concat = c;
    o->last = add;
    o->d = d;
    return 1;
}

/* cos and sin broadcast to x without widening it. */
static int fits(const rope *o)
{
    int64_t xd[POPRT__MAX_RANK], cd[POPRT__MAX_RANK];
    int rx = poprt__rw_dims(o->x, xd);
    const poprt__tensor *t[2] = {o->cos, o->sin};
    for (int k = 0; k < 2; k++) {
        int rc = poprt__rw_dims(t[k], cd);
        if (rc < 0 || rc > rx || t[k]->type.elem != o->x->type.elem)
            return 0;
        for (int i = 0; i < rc; i++)
            if (cd[i] != 1 && (cd[i] < 0 || cd[i] != xd[rx - rc + i]))
                return 0;
    }
    return 1;
}

/* mode=matmul: rotate_half(x) becomes MatMul(x, R). */
static poprt_status as_matmul(poprt__graph *g, const rope *o, int *done)
{
    if (o->x->type.elem != POPRT_DTYPE_FLOAT)
        return POPRT_OK;
    const int64_t d = o->d, h = d / 2, dd[2] = {d, d};
    float *R = poprt__calloc((size_t)(d * d), sizeof(float));
    if (!R)
        return poprt__rw_oom();
    for (int64_t c = 0; c < d; c++) /* column c reads x[c+h] negated, or x[c-h] */
        R[(c < h ? c + h : c - h) * d + c] = c < h ? -1.0f : 1.0f;
    poprt__tensor *rt = poprt__graph_add_const(g, "rotate_half_matrix", POPRT_DTYPE_FLOAT, 2, dd, R,
                                               (size_t)(d * d) * sizeof(float));
    poprt__free(R);
    poprt__tensor *ins[2] = {o->x, rt};
    if (!rt || !poprt__rw_replace(g, o->concat, "MatMul", "", 2, ins))
        return poprt__rw_oom();
    *done = 1;
    return POPRT_OK;
}

/* mode=fuse: the whole expression becomes ai.poprt.RotaryEmbedding. */
static poprt_status as_fused(poprt__model *m, const rope *o, int *done)
{
    if (!fits(o))
        return POPRT_OK;
    poprt_status st = poprt__rw_poprt_domain(m);
    if (st)
        return st;
    poprt__tensor *ins[3] = {o->x, o->cos, o->sin};
    if (!poprt__rw_replace(m->graph, o->last, "RotaryEmbedding", "ai.poprt", 3, ins))
        return poprt__rw_oom();
    *done = 1;
    return POPRT_OK;
}

static poprt_status rewrite(poprt__model *m, poprt__node *n, const void *use_matmul, int *done)
{
    rope o;
    if (!match(m, n, &o))
        return POPRT_OK;
    return *(const int *)use_matmul ? as_matmul(m->graph, &o, done) : as_fused(m, &o, done);
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"mode", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse("matmul_rotary_embedding", args, known, &a);
    if (st)
        return st;
    const char *mode = poprt__pass_arg(&a, "mode");
    int use_matmul = mode && !strcmp(mode, "matmul");
    if (mode && !use_matmul && strcmp(mode, "fuse"))
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass 'matmul_rotary_embedding': mode must be fuse or matmul, not '%s'",
                          mode);
    return poprt__rw_fixpoint(m, rewrite, &use_matmul, changed);
}

const poprt__pass poprt__pass_matmul_rotary_embedding = {
    "matmul_rotary_embedding",
    "x*cos + rotate_half(x)*sin -> ai.poprt.RotaryEmbedding (mode=fuse, default) or rotate_half "
    "as MatMul with a signed permutation (mode=matmul, the reference's form)",
    run, 1};
