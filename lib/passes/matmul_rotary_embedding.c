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
#include "passes/util_transformer.h"

/* Slice of x over [start, end) of the last axis with step 1: 1 and x. */
static int last_axis_slice(poprt__model *m, const poprt__node *s, int64_t d, int64_t *start,
                           int64_t *end)
{
    if (!tf_is(s, "Slice"))
        return 0;
    int64_t n1, n2, n3 = 0, n4 = 0;
    const int64_t *st, *en, *ax = NULL, *sp = NULL;
    if (s->opset < 10) {
        st = poprt__attr_ints(s, "starts", &n1);
        en = poprt__attr_ints(s, "ends", &n2);
        ax = poprt__attr_ints(s, "axes", &n3);
    } else {
        st = s->n_inputs > 1 ? tf_ints(m, s->inputs[1], &n1) : NULL;
        en = s->n_inputs > 2 ? tf_ints(m, s->inputs[2], &n2) : NULL;
        if (s->n_inputs > 3 && s->inputs[3] && !(ax = tf_ints(m, s->inputs[3], &n3)))
            return 0;
        if (s->n_inputs > 4 && s->inputs[4] && !(sp = tf_ints(m, s->inputs[4], &n4)))
            return 0;
    }
    int r = s->inputs[0]->type.rank;
    if (!st || !en || n1 != 1 || n2 != 1 || (sp && (n4 != 1 || sp[0] != 1)) || r < 1)
        return 0;
    if (ax ? (n3 != 1 || (ax[0] != -1 && ax[0] != r - 1)) : r != 1)
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
    if (!tf_is(c, "Concat") || c->n_inputs != 2)
        return 0;
    poprt__node *neg = tf_prod(c->inputs[0], "Neg");
    poprt__node *s2 = neg ? tf_prod(neg->inputs[0], "Slice") : NULL;
    poprt__node *s1 = tf_prod(c->inputs[1], "Slice");
    if (!s1 || !s2 || s1->inputs[0] != s2->inputs[0])
        return 0;
    poprt__tensor *x = s1->inputs[0];
    int64_t xd[POPRT__MAX_RANK], a0, a1, b0, b1;
    int r = tf_dims(x, xd);
    if (r < 1 || xd[r - 1] < 2 || xd[r - 1] % 2)
        return 0;
    const int64_t d = xd[r - 1], h = d / 2;
    int64_t axis = poprt__attr_i(c, "axis", 0);
    if ((axis != -1 && axis != r - 1) || !last_axis_slice(m, s2, d, &a0, &a1) ||
        !last_axis_slice(m, s1, d, &b0, &b1) || a0 != h || a1 != d || b0 != 0 || b1 != h)
        return 0;
    poprt__node *ms = tf_next(g, c->outputs[0], "Mul");
    poprt__node *add = ms ? tf_next(g, ms->outputs[0], "Add") : NULL;
    poprt__tensor *mc_out = add ? tf_other(add, ms->outputs[0]) : NULL;
    poprt__node *mc = tf_prod(mc_out, "Mul");
    if (!mc || poprt__graph_sole_consumer(g, mc_out) != add || !tf_other(mc, x))
        return 0;
    o->x = x;
    o->sin = tf_other(ms, c->outputs[0]);
    o->cos = tf_other(mc, x);
    o->concat = c;
    o->last = add;
    o->d = d;
    return 1;
}

/* cos and sin broadcast to x without widening it. */
static int fits(const rope *o)
{
    int64_t xd[POPRT__MAX_RANK], cd[POPRT__MAX_RANK];
    int rx = tf_dims(o->x, xd);
    const poprt__tensor *t[2] = {o->cos, o->sin};
    for (int k = 0; k < 2; k++) {
        int rc = tf_dims(t[k], cd);
        if (rc < 0 || rc > rx || t[k]->type.elem != o->x->type.elem)
            return 0;
        for (int i = 0; i < rc; i++)
            if (cd[i] != 1 && (cd[i] < 0 || cd[i] != xd[rx - rc + i]))
                return 0;
    }
    return 1;
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
    poprt__graph *g = m->graph;
    *changed = 0;
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < g->nodes.len && !again; i++) {
            rope o;
            if (!match(m, g->nodes.items[i], &o))
                continue;
            if (use_matmul) {
                if (o.x->type.elem != POPRT_DTYPE_FLOAT)
                    continue;
                const int64_t d = o.d, h = d / 2, dd[2] = {d, d};
                float *R = poprt__calloc((size_t)(d * d), sizeof(float));
                if (!R)
                    return tf_oom();
                for (int64_t c = 0; c < d; c++) /* column c reads x[c+h] negated, or x[c-h] */
                    R[(c < h ? c + h : c - h) * d + c] = c < h ? -1.0f : 1.0f;
                poprt__tensor *rt = poprt__graph_add_const(g, "rotate_half_matrix", POPRT_DTYPE_FLOAT,
                                                           2, dd, R, (size_t)(d * d) * sizeof(float));
                poprt__free(R);
                poprt__node *mm = tf_node(g, "MatMul", "", o.concat->name, 2, 1);
                if (!rt || !mm)
                    return tf_oom();
                poprt__node_set_input(mm, 0, o.x);
                poprt__node_set_input(mm, 1, rt);
                tf_take_output(g, o.concat, 0, mm, 0);
            } else {
                if (!fits(&o))
                    continue;
                if ((st = tf_poprt_domain(m)))
                    return st;
                poprt__node *n = tf_node(g, "RotaryEmbedding", "ai.poprt", o.last->name, 3, 1);
                if (!n)
                    return tf_oom();
                poprt__node_set_input(n, 0, o.x);
                poprt__node_set_input(n, 1, o.cos);
                poprt__node_set_input(n, 2, o.sin);
                tf_take_output(g, o.last, 0, n, 0);
            }
            *changed = again = 1;
        }
    }
    if (*changed)
        poprt__graph_remove_dead(g);
    return POPRT_OK;
}

const poprt__pass poprt__pass_matmul_rotary_embedding = {
    "matmul_rotary_embedding",
    "x*cos + rotate_half(x)*sin -> ai.poprt.RotaryEmbedding (mode=fuse, default) or rotate_half "
    "as MatMul with a signed permutation (mode=matmul, the reference's form)",
    run, 1};
