/* layer_norm_pattern: the decomposed LayerNorm exporters write,
 *   ReduceMean -> Sub -> Pow(2) -> ReduceMean -> Add(eps) -> Sqrt -> Div
 *   [-> Mul(gamma)] [-> Add(beta)],
 * over the last axis -> one LayerNormalization (opset >= 17) or
 * ai.poprt.LayerNorm (older opsets). CPU meaning: nine passes over the
 * activation and five intermediate tensors become one row-wise kernel. */
#include "passes/transformer.h"

/* r is a ReduceMean over just the last axis of its input, keeping dims. */
static int mean_last(const poprt__node *r)
{
    if (!poprt__rw_is(r, "ReduceMean") || poprt__attr_i(r, "keepdims", 1) != 1)
        return 0;
    int64_t axes[POPRT__MAX_RANK], n = tf_attr_ints(r, "axes", axes);
    if (n == -2)
        n = tf_input_ints(r, 1, axes);
    if (n != 1)
        return 0;
    int rank = r->inputs[0]->type.kind == POPRT__KIND_TENSOR ? r->inputs[0]->type.rank : -1;
    return axes[0] == -1 || (rank > 0 && axes[0] == rank - 1);
}

typedef struct ln_match {
    poprt__tensor *x, *gamma, *beta;
    poprt__node *last;
    double eps;
} ln_match;

static int match(poprt__model *m, poprt__node *r1, ln_match *o)
{
    poprt__graph *g = m->graph;
    memset(o, 0, sizeof *o);
    if (!mean_last(r1))
        return 0;
    poprt__tensor *x = r1->inputs[0];
    poprt__node *sub = poprt__rw_reader(g, r1->outputs[0], "Sub");
    if (!sub || sub->inputs[0] != x || sub->inputs[1] != r1->outputs[0])
        return 0;
    poprt__tensor *d = sub->outputs[0];
    poprt__vec users = {0};
    if (poprt__graph_consumers(g, d, &users) || users.len != 2 || d->is_output) {
        poprt__vec_free(&users);
        return 0;
    }
    poprt__node *sq = NULL, *div = NULL;
    for (int i = 0; i < 2; i++) {
        poprt__node *u = users.items[i];
        if (poprt__rw_is(u, "Pow") && u->inputs[0] == d &&
            poprt__rw_scalar_is(u->inputs[1], POPRT__RW_ANY, 2.0, 0))
            sq = u;
        else if (poprt__rw_is(u, "Mul") && u->inputs[0] == d && u->inputs[1] == d)
            sq = u;
        else if (poprt__rw_is(u, "Div") && u->inputs[0] == d)
            div = u;
    }
    poprt__vec_free(&users);
    if (!sq || !div)
        return 0;
    poprt__node *r2 = poprt__graph_sole_consumer(g, sq->outputs[0]);
    if (!r2 || !mean_last(r2))
        return 0;
    poprt__node *add = poprt__rw_reader(g, r2->outputs[0], "Add");
    if (!add ||
        !poprt__rw_scalar(poprt__rw_other_input(add, r2->outputs[0]), POPRT__RW_ANY, &o->eps) ||
        o->eps < 0)
        return 0;
    poprt__node *sqrt_n = poprt__rw_reader(g, add->outputs[0], "Sqrt");
    if (!sqrt_n || poprt__graph_sole_consumer(g, sqrt_n->outputs[0]) != div ||
        div->inputs[1] != sqrt_n->outputs[0])
        return 0;
    o->x = x;
    o->last = div;
    int64_t c = x->type.kind == POPRT__KIND_TENSOR && x->type.rank > 0
                    ? x->type.dims[x->type.rank - 1].value
                    : -1;
    /* optional affine tail: constants of the last dim's size */
    poprt__node *mul = poprt__rw_reader(g, div->outputs[0], "Mul");
    poprt__tensor *gm = mul ? poprt__rw_other_input(mul, div->outputs[0]) : NULL;
    poprt__rw_const k;
    if (gm && poprt__rw_const_of(gm, POPRT__RW_ANY, &k) && k.elem == x->type.elem &&
        (c < 0 || k.numel == c) && gm->type.rank == 1) {
        o->gamma = gm;
        o->last = mul;
        poprt__node *ab = poprt__rw_reader(g, mul->outputs[0], "Add");
        poprt__tensor *bt = ab ? poprt__rw_other_input(ab, mul->outputs[0]) : NULL;
        if (bt && poprt__rw_const_of(bt, POPRT__RW_ANY, &k) && k.elem == x->type.elem &&
            (c < 0 || k.numel == c) && bt->type.rank == 1 &&
            bt->type.dims[0].value == gm->type.dims[0].value) {
            o->beta = bt;
            o->last = ab;
        }
    }
    if (!o->gamma && c < 0)
        return 0; /* LayerNormalization needs a Scale of known size */
    return 1;
}

/* A Constant node's value as an initializer (the LayerNorm reads it). */
static poprt__tensor *as_initializer(poprt__graph *g, poprt__tensor *t)
{
    if (t->raw)
        return t;
    poprt__rw_const k;
    if (!poprt__rw_const_of(t, POPRT__RW_ANY, &k))
        return NULL;
    return poprt__graph_add_const(g, t->name, k.elem, 1, &k.numel, k.data,
                                  (size_t)k.numel * poprt__dtype_size(k.elem));
}

static poprt_status rewrite(poprt__model *m, const ln_match *o)
{
    poprt__graph *g = m->graph;
    int onnx = poprt__model_opset(m, "") >= 17;
    poprt_status st = onnx ? POPRT_OK : poprt__rw_poprt_domain(m);
    if (st)
        return st;
    poprt__tensor *gamma = o->gamma ? as_initializer(g, o->gamma) : NULL;
    poprt__tensor *beta = o->beta ? as_initializer(g, o->beta) : NULL;
    if ((o->gamma && !gamma) || (o->beta && !beta))
        return poprt__rw_oom();
    if (!gamma) {
        int64_t c = o->x->type.dims[o->x->type.rank - 1].value;
        size_t es = poprt__dtype_size(o->x->type.elem);
        void *ones = poprt__arena_alloc(&m->arena, (size_t)c * es + 1);
        if (!ones)
            return poprt__rw_oom();
        for (int64_t i = 0; i < c; i++)
            poprt__store_f64(ones, o->x->type.elem, i, 1.0);
        gamma = poprt__graph_add_const(g, "layer_norm_scale", o->x->type.elem, 1, &c, ones,
                                       (size_t)c * es);
        if (!gamma)
            return poprt__rw_oom();
    }
    poprt__tensor *ins[3] = {o->x, gamma, beta};
    poprt__node *n = poprt__rw_replace(g, o->last, onnx ? "LayerNormalization" : "LayerNorm",
                                       onnx ? "" : "ai.poprt", beta ? 3 : 2, ins);
    if (!n)
        return poprt__rw_oom();
    if ((st = poprt__rw_attr_i(n, "axis", -1)) ||
        (st = poprt__rw_attr_f(n, "epsilon", (float)o->eps)))
        return st;
    return POPRT_OK;
}

static poprt_status fuse(poprt__model *m, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    ln_match o;
    if (!match(m, n, &o))
        return POPRT_OK;
    *done = 1;
    return rewrite(m, &o);
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_fixpoint(m, fuse, NULL, changed);
}

const poprt__pass poprt__pass_layer_norm_pattern = {
    "layer_norm_pattern",
    "ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div[/Mul/Add] -> LayerNormalization (opset >= 17) "
    "or ai.poprt.LayerNorm: one row-wise kernel instead of nine passes",
    run};
