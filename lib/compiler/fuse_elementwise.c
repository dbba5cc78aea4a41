/* Compile-time fusion of elementwise chains: a run of float32 elementwise
 * nodes where each node's result feeds only the next one (Add(3) -> Clip ->
 * Mul(x) -> Div(6), a decomposed HardSwish, one step; Mul -> Add with per-channel
 * scale and shift; x * Sigmoid(x); a bias Add -> Gelu; a float8 QuantizeLinear ->
 * DequantizeLinear pair, with what precedes or follows it; ...) becomes one ai.poprt
 * FusedElementwise node (lib/kernels/ref/poprt_compiled.h), which makes one
 * pass over memory instead of one per node and leaves no intermediate
 * tensors to plan. Only the main graph is rewritten, and only where every
 * shape is static. */
#include <math.h>
#include <string.h>
#include "compiler/compiler.h"
#include "kernels/ref/poprt_compiled.h"
#include "passes/rewrite.h"

typedef poprt__cc_step step;

/* t broadcasts to y over one contiguous run of axes (the kernel's rule). */
static int broadcasts_in_run(const poprt__tensor *t, const poprt__tensor *y)
{
    if (!poprt__cc_static_float(t, y->type.rank))
        return 0;
    const int pad = y->type.rank - t->type.rank;
    int first = -1, last = -1;
    for (int d = 0; d < t->type.rank; d++)
        if (t->type.dims[d].value != 1) {
            if (first < 0)
                first = d;
            last = d;
        }
    for (int d = first; first >= 0 && d <= last; d++)
        if (t->type.dims[d].value != y->type.dims[d + pad].value)
            return 0;
    return 1;
}

static int unary_code(const poprt__node *n)
{
    static const struct {
        const char *name;
        int code;
    } tab[] = {
        {"Relu", POPRT__EW_RELU},       {"LeakyRelu", POPRT__EW_LEAKY_RELU},
        {"Sigmoid", POPRT__EW_SIGMOID}, {"HardSigmoid", POPRT__EW_HARD_SIGMOID},
        {"HardSwish", POPRT__EW_HARD_SWISH}, {"Tanh", POPRT__EW_TANH},
        {"Exp", POPRT__EW_EXP},         {"Log", POPRT__EW_LOG},
        {"Erf", POPRT__EW_ERF},         {"Neg", POPRT__EW_NEG},
        {"Abs", POPRT__EW_ABS},         {"Sqrt", POPRT__EW_SQRT},
        {"Reciprocal", POPRT__EW_RECIPROCAL}, {"Softplus", POPRT__EW_SOFTPLUS},
        {"Clip", POPRT__EW_CLIP},       {"Swish", POPRT__EW_SWISH},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (poprt__rw_is(n, tab[i].name))
            return tab[i].code;
    /* Gelu: ONNX's (opset 20) and ai.poprt's (the gelu pattern passes) */
    if (!strcmp(n->op_type, "Gelu") && (!n->domain[0] || !strcmp(n->domain, "ai.poprt")))
        return strcmp(poprt__attr_s(n, "approximate", "none"), "tanh") ? POPRT__EW_GELU
                                                                       : POPRT__EW_GELU_TANH;
    return 0;
}

static int binary_code(const poprt__node *n)
{
    if (n->n_inputs != 2)
        return 0;
    if (poprt__rw_is(n, "Add") || poprt__rw_is(n, "Sum"))
        return POPRT__EW_ADD;
    if (poprt__rw_is(n, "Sub"))
        return POPRT__EW_SUB;
    if (poprt__rw_is(n, "Mul"))
        return POPRT__EW_MUL;
    if (poprt__rw_is(n, "Div"))
        return POPRT__EW_DIV;
    if (poprt__rw_is(n, "Max"))
        return POPRT__EW_MAX;
    if (poprt__rw_is(n, "Min"))
        return POPRT__EW_MIN;
    return 0;
}

/* Constant scalar zero point of the pair: absent, or 0 of the float8 type. */
static int zero_point_ok(const poprt__tensor *z, int32_t dt)
{
    double v;
    return !z || (z->type.elem == dt && poprt__rw_scalar(z, POPRT__RW_VALUE, &v) && v == 0);
}

/* The pair step QuantizeLinear q (reading x) starts, or 0 (poprt__cc_step). */
static int fp8_pair(const poprt__graph *g, poprt__node *q, const poprt__tensor *x, step *s)
{
    const poprt__tensor *code = poprt__node_out(q, 0);
    if (q->n_outputs != 1 || !code || poprt__node_in(q, 0) != x ||
        (code->type.elem != POPRT_DTYPE_FLOAT8E4M3FN &&
         code->type.elem != POPRT_DTYPE_FLOAT8E5M2) ||
        poprt__attr_i(q, "saturate", 1) != 1 ||
        (poprt__attr_i(q, "precision", 0) != 0 &&
         poprt__attr_i(q, "precision", 0) != POPRT_DTYPE_FLOAT))
        return 0;
    poprt__node *d = poprt__graph_sole_consumer(g, code);
    const poprt__tensor *y = d ? poprt__node_out(d, 0) : NULL;
    if (!d || !poprt__rw_is(d, "DequantizeLinear") || poprt__node_in(d, 0) != code ||
        d->n_outputs != 1 || !y || !poprt__cc_static_float(y, POPRT__MAX_RANK) ||
        !poprt__cc_same_shape(y, x))
        return 0;
    const poprt__tensor *s1 = poprt__node_in(q, 1), *s2 = poprt__node_in(d, 1);
    double v1, v2;
    if (!s1 || !s2 || s1->type.elem != POPRT_DTYPE_FLOAT || s2->type.elem != POPRT_DTYPE_FLOAT ||
        !poprt__rw_scalar(s1, POPRT__RW_VALUE, &v1) ||
        !poprt__rw_scalar(s2, POPRT__RW_VALUE, &v2) || v1 != v2 ||
        !zero_point_ok(poprt__node_in(q, 2), code->type.elem) ||
        !zero_point_ok(poprt__node_in(d, 2), code->type.elem))
        return 0;
    memset(s, 0, sizeof *s);
    s->op = code->type.elem == POPRT_DTYPE_FLOAT8E5M2 ? POPRT__EW_FP8_E5M2 : POPRT__EW_FP8_E4M3FN;
    s->operand = -1;
    s->alpha = (float)v1;
    s->beta = poprt__node_in(q, 2) ? 1.0f : 0.0f;
    s->pair = d;
    return 1;
}

/* The node whose output is step s's result (n, or the pair's second). */
static poprt__node *step_last(poprt__node *n, const step *s) { return s->pair ? s->pair : n; }

int poprt__cc_step_of(const poprt__graph *g, poprt__node *n, const poprt__tensor *cur,
                      poprt__cc_step *s)
{
    if (poprt__rw_is(n, "QuantizeLinear")) /* a float8 pair is one step */
        return poprt__cc_static_float(cur, POPRT__MAX_RANK) && fp8_pair(g, n, cur, s);
    const poprt__tensor *y = poprt__node_out(n, 0);
    if (n->n_outputs != 1 || !y || !poprt__cc_static_float(y, POPRT__MAX_RANK) ||
        !poprt__cc_same_shape(y, cur))
        return 0;
    memset(s, 0, sizeof *s);
    s->operand = -1;
    int code = unary_code(n);
    if (code) {
        if (poprt__node_in(n, 0) != cur)
            return 0;
        s->op = code;
        switch (code) {
        case POPRT__EW_LEAKY_RELU: s->alpha = poprt__attr_f(n, "alpha", 0.01f); break;
        case POPRT__EW_SWISH: s->alpha = poprt__attr_f(n, "alpha", 1.0f); break;
        case POPRT__EW_HARD_SIGMOID:
            s->alpha = poprt__attr_f(n, "alpha", 0.2f);
            s->beta = poprt__attr_f(n, "beta", 0.5f);
            break;
        case POPRT__EW_CLIP: {
            double lo = -INFINITY, hi = INFINITY;
            if (n->opset < 11) {
                lo = poprt__attr_f(n, "min", -3.402823466e+38f);
                hi = poprt__attr_f(n, "max", 3.402823466e+38f);
            } else {
                const poprt__tensor *tl = poprt__node_in(n, 1), *th = poprt__node_in(n, 2);
                if ((tl && (!poprt__rw_value(tl) || tl->type.elem != POPRT_DTYPE_FLOAT ||
                            !poprt__rw_scalar(tl, POPRT__RW_VALUE, &lo))) ||
                    (th && (!poprt__rw_value(th) || th->type.elem != POPRT_DTYPE_FLOAT ||
                            !poprt__rw_scalar(th, POPRT__RW_VALUE, &hi))))
                    return 0;
            }
            s->alpha = (float)lo;
            s->beta = (float)hi;
            break;
        }
        default: break;
        }
        return 1;
    }
    code = binary_code(n);
    if (!code)
        return 0;
    poprt__tensor *a = poprt__node_in(n, 0), *b = poprt__node_in(n, 1);
    if (!a || !b || (a == cur) == (b == cur))
        return 0; /* cur must be exactly one side (x * x is not a step) */
    poprt__tensor *other = a == cur ? b : a;
    s->op = code;
    s->reverse = b == cur;
    double v;
    if (other->type.elem == POPRT_DTYPE_FLOAT && poprt__type_numel(&other->type) == 1 &&
        poprt__rw_scalar(other, POPRT__RW_VALUE, &v) && other->type.rank <= cur->type.rank) {
        s->alpha = (float)v;
        return 1;
    }
    if (!broadcasts_in_run(other, y))
        return 0;
    s->t = other;
    return 1;
}

/* step_of(n, cur) is the scalar step op (operand on the side reverse
 * says) with exactly the value v. */
static int scalar_step(const poprt__graph *g, poprt__node *n, const poprt__tensor *cur, int op,
                       float v, int reverse)
{
    step s;
    return n && poprt__cc_step_of(g, n, cur, &s) && s.op == op && !s.t && !s.pair &&
           s.reverse == reverse && s.alpha == v;
}

/* Clip(cur, 0, 6) */
static int relu6(const poprt__graph *g, poprt__node *n, const poprt__tensor *cur)
{
    step s;
    return n && poprt__cc_step_of(g, n, cur, &s) && s.op == POPRT__EW_CLIP && s.alpha == 0.0f &&
           s.beta == 6.0f;
}

/* t divided by 6 (Div(t, 6): *mul 0, *k 6) or multiplied by about 1/6
 * (Mul: *mul 1, *k the constant as the model holds it). */
static int by_six(const poprt__graph *g, poprt__node *n, const poprt__tensor *t, int *mul,
                  float *k)
{
    step s;
    if (!n || !poprt__cc_step_of(g, n, t, &s) || s.t || s.pair)
        return 0;
    *k = s.alpha;
    *mul = s.op == POPRT__EW_MUL;
    return (s.op == POPRT__EW_DIV && !s.reverse && s.alpha == 6.0f) ||
           (*mul && fabsf(s.alpha - 1.0f / 6.0f) <= 1e-7f);
}

poprt__tensor *poprt__cc_composite_of(const poprt__graph *g, const poprt__tensor *cur,
                                      poprt__cc_step *s, poprt__node **nodes, int *n_nodes)
{
    *n_nodes = 0;
    if (!cur || cur->is_output || !poprt__cc_static_float(cur, POPRT__MAX_RANK) ||
        poprt__tensor_use_count(g, cur) != 2)
        return NULL;
    poprt__vec users = {0};
    if (poprt__graph_consumers(g, cur, &users) || users.len != 2) {
        poprt__vec_free(&users);
        return NULL;
    }
    poprt__node *u[2] = {users.items[0], users.items[1]};
    poprt__vec_free(&users);
    memset(s, 0, sizeof *s);
    s->operand = -1;
    for (int k = 0; k < 2; k++) {
        poprt__node *f = u[k], *m = u[1 - k];
        /* m: Mul(cur, t) or Mul(t, cur), the product that ends the activation */
        if (!poprt__rw_is(m, "Mul") || m->n_inputs != 2 || m->n_outputs != 1)
            continue;
        const poprt__tensor *t = poprt__rw_other_input(m, cur);
        const poprt__tensor *fy = f->n_outputs == 1 ? poprt__node_out(f, 0) : NULL;
        if (!t || !fy || !poprt__cc_static_float(fy, POPRT__MAX_RANK) ||
            !poprt__cc_same_shape(fy, cur))
            continue;
        poprt__node *path[4] = {f};
        int n = 1;
        if (poprt__rw_is(f, "Sigmoid") || poprt__rw_is(f, "HardSigmoid")) {
            /* x * Sigmoid(x): Swish; x * HardSigmoid(x, 1/6, 1/2): HardSwish */
            if (poprt__node_in(f, 0) != cur || t != fy || poprt__graph_sole_consumer(g, fy) != m)
                continue;
            if (poprt__rw_is(f, "Sigmoid")) {
                s->op = POPRT__EW_SWISH;
                s->alpha = 1.0f;
            } else if (poprt__attr_f(f, "alpha", 0.2f) == 1.0f / 6.0f &&
                       poprt__attr_f(f, "beta", 0.5f) == 0.5f) {
                /* the operator's formula: HardSigmoid's own, times x */
                s->op = POPRT__EW_HARD_SWISH;
            } else {
                continue;
            }
            path[n++] = m;
        } else if (scalar_step(g, f, cur, POPRT__EW_ADD, 3.0f, 0) ||
                   scalar_step(g, f, cur, POPRT__EW_ADD, 3.0f, 1)) {
            /* x * Clip(x + 3, 0, 6) / 6, the division after or before the
             * product: the step computes the same operations in that order */
            poprt__node *c = poprt__graph_sole_consumer(g, fy);
            if (!relu6(g, c, fy))
                continue;
            path[n++] = c;
            const poprt__tensor *cy = poprt__node_out(c, 0);
            poprt__node *d = poprt__graph_sole_consumer(g, cy);
            int mul;
            float k6;
            if (d == m && t == cy) {
                d = poprt__graph_sole_consumer(g, poprt__node_out(m, 0));
                if (!by_six(g, d, poprt__node_out(m, 0), &mul, &k6))
                    continue;
                path[n++] = m;
                path[n++] = d;
                s->beta = (float)mul;
            } else if (by_six(g, d, cy, &mul, &k6) && t == poprt__node_out(d, 0) &&
                       poprt__graph_sole_consumer(g, t) == m) {
                path[n++] = d;
                path[n++] = m;
                s->beta = (float)(2 + mul);
            } else {
                continue;
            }
            s->op = POPRT__EW_HARD_SWISH;
            s->alpha = k6;
        } else {
            continue;
        }
        poprt__tensor *y = poprt__node_out(path[n - 1], 0);
        if (!y || !poprt__cc_static_float(y, POPRT__MAX_RANK) || !poprt__cc_same_shape(y, cur))
            continue;
        for (int i = 0; i < n; i++)
            nodes[i] = path[i];
        *n_nodes = n;
        return y;
    }
    return NULL;
}

/* A chain: its steps, every node they replace (a step may replace up to
 * four: a float8 pair, a composite activation), its input and its output. */
typedef struct {
    step steps[POPRT__EW_MAX_STEPS];
    int len;
    poprt__node *nodes[4 * POPRT__EW_MAX_STEPS];
    int n_nodes;
    poprt__tensor *x, *y;
} chain;

/* Adds the step that the nodes ns[0..n) make, ending at tensor end. */
static void chain_add(chain *c, const step *s, poprt__node *const *ns, int n, poprt__tensor *end)
{
    c->steps[c->len++] = *s;
    for (int i = 0; i < n; i++)
        c->nodes[c->n_nodes++] = ns[i];
    c->y = end;
}

/* The next step after c->y, if any: the step of its sole reader, or a
 * composite activation of its two. */
static int grow_one(const poprt__graph *g, chain *c)
{
    step s;
    poprt__node *ns[4];
    int n = 0;
    poprt__node *r = poprt__graph_sole_consumer(g, c->y);
    if (r && poprt__cc_step_of(g, r, c->y, &s)) {
        ns[n++] = r;
        if (s.pair)
            ns[n++] = s.pair;
        chain_add(c, &s, ns, n, poprt__node_out(step_last(r, &s), 0));
        return 1;
    }
    poprt__tensor *end = poprt__cc_composite_of(g, c->y, &s, ns, &n);
    if (!end)
        return 0;
    chain_add(c, &s, ns, n, end);
    return 1;
}

/* Finds the chain starting at n; returns its length (c filled). */
static int grow(const poprt__graph *g, poprt__node *n, chain *c)
{
    poprt__tensor *a = poprt__node_in(n, 0), *b = n->n_inputs > 1 ? poprt__node_in(n, 1) : NULL;
    const poprt__tensor *y = poprt__node_out(n, 0);
    c->len = c->n_nodes = 0;
    if (!y)
        return 0;
    /* the chain's input: the side with Y's shape (input 0 first); n may
     * also begin a composite activation of it */
    poprt__tensor *cands[2] = {a, b};
    for (int k = 0; k < 2 && !c->len; k++) {
        poprt__tensor *t = cands[k];
        step s;
        poprt__node *ns[4];
        int m = 0;
        if (!t || !poprt__cc_static_float(t, POPRT__MAX_RANK) || !poprt__cc_same_shape(t, y) ||
            poprt__rw_value(t))
            continue;
        c->x = t;
        poprt__tensor *end = poprt__cc_composite_of(g, t, &s, ns, &m);
        if (end && ns[0] == n) {
            chain_add(c, &s, ns, m, end);
        } else if (poprt__cc_step_of(g, n, t, &s)) {
            ns[0] = n;
            ns[1] = s.pair;
            chain_add(c, &s, ns, s.pair ? 2 : 1, poprt__node_out(step_last(n, &s), 0));
        }
    }
    while (c->len && c->len < POPRT__EW_MAX_STEPS && grow_one(g, c)) {
    }
    return c->len;
}

/* Replaces the chain's nodes by one FusedElementwise node (*out, when
 * out is not NULL). */
static poprt_status fuse(poprt__graph *g, const chain *c, poprt__node **out)
{
    poprt__tensor *ins[POPRT__EW_MAX_STEPS + 1];
    int n_in = 0;
    ins[n_in++] = c->x;
    int64_t ops[POPRT__EW_MAX_STEPS], opd[POPRT__EW_MAX_STEPS], rev[POPRT__EW_MAX_STEPS];
    float al[POPRT__EW_MAX_STEPS], be[POPRT__EW_MAX_STEPS];
    const int len = c->len;
    for (int s = 0; s < len; s++) {
        const step *st = &c->steps[s];
        ops[s] = st->op;
        rev[s] = st->reverse;
        al[s] = st->alpha;
        be[s] = st->beta;
        opd[s] = -1;
        if (st->t) {
            int i = 0;
            while (i < n_in && ins[i] != st->t)
                i++;
            if (i == n_in)
                ins[n_in++] = st->t;
            opd[s] = i;
        }
    }
    poprt__tensor *y = c->y;
    const char *name = poprt__model_unique_name(g->model, c->nodes[0]->name);
    if (!name)
        return poprt__rw_oom();
    /* detached now, dropped from the list once the sweep is done */
    for (int i = 0; i < c->n_nodes; i++)
        poprt__graph_detach_node(c->nodes[i]);
    poprt__node *f = poprt__graph_add_node(g, "FusedElementwise", "ai.poprt", name, n_in, 1);
    if (!f)
        return poprt__rw_oom();
    for (int i = 0; i < n_in; i++)
        poprt__node_set_input(f, i, ins[i]);
    f->outputs[0] = y;
    y->producer = f;
    y->producer_slot = 0;
    if (poprt__rw_attr_ints(f, "ops", len, ops) || poprt__rw_attr_ints(f, "operand", len, opd) ||
        poprt__rw_attr_ints(f, "reverse", len, rev) || poprt__rw_attr_floats(f, "alpha", len, al) ||
        poprt__rw_attr_floats(f, "beta", len, be))
        return poprt__rw_oom();
    if (out)
        *out = f;
    return POPRT_OK;
}

poprt_status poprt__cc_fuse_node(poprt__graph *g, poprt__node *n, poprt__tensor *cur,
                                 poprt__node **out)
{
    chain c = {.len = 0, .n_nodes = 0, .x = cur};
    step s;
    *out = NULL;
    if (!poprt__cc_step_of(g, n, cur, &s) || s.pair)
        return POPRT_OK;
    chain_add(&c, &s, &n, 1, poprt__node_out(n, 0));
    return fuse(g, &c, out);
}

poprt_status poprt__compile_fuse_elementwise(poprt__model *m, int *changed)
{
    poprt__graph *g = m->graph;
    *changed = 0;
    chain c;
    /* in graph order, so that a chain is found from its first node */
    poprt_status st = POPRT_OK;
    for (size_t i = 0; i < g->nodes.len && !st; i++) {
        poprt__node *n = g->nodes.items[i];
        if (n->removed)
            continue;
        int len = grow(g, n, &c);
        if (len < 1 || c.n_nodes < 2) /* one node gains nothing */
            continue;
        /* (nodes before i cannot start a chain now: fusing removes readers,
         * it adds no fusable step; the fused node goes to the list's end) */
        st = fuse(g, &c, NULL);
        *changed = 1;
    }
    poprt__graph_compact(g);
    if (st || !*changed)
        return st;
    st = poprt__model_ensure_opset(m, "ai.poprt", 1);
    if (!st)
        st = poprt__graph_toposort(g);
    return st;
}
