/* The Gradient operator (ai.onnx.preview.training) written out as ordinary
 * nodes by reverse-mode differentiation (gradient.h): the region between
 * xs/zs and y, the forward copy when the Gradient node is fed other values,
 * the backward walk, and the build helpers the rules use. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "passes/gradient.h"

#define GRAD_DOMAIN "ai.onnx.preview.training"
static char dep_mark; /* the non-NULL value of c->dep entries */

/* ---- helpers for the rules ---------------------------------------------------- */

poprt__tensor *poprt__grad_val(poprt__grad_ctx *c, const poprt__tensor *t)
{
    poprt__tensor *v = t ? poprt__map_get(&c->val, t->name) : NULL;
    return v ? v : (poprt__tensor *)t;
}

int poprt__grad_wants(poprt__grad_ctx *c, const poprt__node *n, int k)
{
    const poprt__tensor *t = poprt__node_in(n, k);
    return t && t->name[0] && poprt__map_get(&c->dep, t->name) != NULL;
}

static void set_st(poprt__grad_ctx *c, poprt_status st)
{
    if (!c->st)
        c->st = st;
}

poprt__tensor *poprt__grad_fail(poprt__grad_ctx *c, const poprt__node *n, const char *fmt, ...)
{
    if (c->st)
        return NULL;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    c->st = poprt__err(POPRT_STATUS_UNSUPPORTED, "Gradient node '%s': node '%s' (%s): %s",
                       c->gn->name, n->name, n->op_type, msg);
    return NULL;
}

poprt__tensor *poprt__grad_op(poprt__grad_ctx *c, const char *op, int n, poprt__tensor *const *ins,
                              poprt__node **node_out)
{
    if (node_out)
        *node_out = NULL;
    for (int i = 0; i < n; i++)
        if (!ins[i])
            return NULL;
    if (c->st)
        return NULL;
    poprt__node *nd = poprt__rw_node1(c->g, op, "", n, ins, NULL, "grad");
    if (!nd) {
        set_st(c, poprt__rw_oom());
        return NULL;
    }
    if (node_out)
        *node_out = nd;
    return nd->outputs[0];
}

poprt__tensor *poprt__grad_op1(poprt__grad_ctx *c, const char *op, poprt__tensor *a)
{
    return poprt__grad_op(c, op, 1, &a, NULL);
}

poprt__tensor *poprt__grad_op2(poprt__grad_ctx *c, const char *op, poprt__tensor *a,
                               poprt__tensor *b)
{
    poprt__tensor *ins[2] = {a, b};
    return poprt__grad_op(c, op, 2, ins, NULL);
}

poprt__tensor *poprt__grad_scalar(poprt__grad_ctx *c, int32_t dtype, double v)
{
    if (c->st)
        return NULL;
    poprt__tensor *t = poprt__rw_new_scalar(c->g, "grad_const", dtype, 0, v);
    if (!t)
        set_st(c, poprt__rw_oom());
    return t;
}

static poprt__tensor *i64_const(poprt__grad_ctx *c, int n, const int64_t *v)
{
    if (c->st)
        return NULL;
    poprt__tensor *t = poprt__rw_new_i64(c->g, "grad_axes", v, n);
    if (!t)
        set_st(c, poprt__rw_oom());
    return t;
}

static poprt__tensor *ints_attr(poprt__grad_ctx *c, poprt__tensor *out, poprt__node *nd,
                                const char *name, int n, const int64_t *v)
{
    if (out && poprt__rw_attr_ints(nd, name, n, v)) {
        set_st(c, poprt__rw_oom());
        return NULL;
    }
    return out;
}

poprt__tensor *poprt__grad_reduce_sum(poprt__grad_ctx *c, poprt__tensor *x, int n_axes,
                                      const int64_t *axes, int keepdims)
{
    poprt__node *nd = NULL;
    poprt__tensor *out;
    if (c->opset >= 13) {
        poprt__tensor *ins[2] = {x, i64_const(c, n_axes, axes)};
        out = poprt__grad_op(c, "ReduceSum", 2, ins, &nd);
    } else {
        out = poprt__grad_op(c, "ReduceSum", 1, &x, &nd);
        out = ints_attr(c, out, nd, "axes", n_axes, axes);
    }
    if (out && poprt__rw_attr_i(nd, "keepdims", keepdims)) {
        set_st(c, poprt__rw_oom());
        return NULL;
    }
    return out;
}

poprt__tensor *poprt__grad_unsqueeze(poprt__grad_ctx *c, poprt__tensor *x, int n_axes,
                                     const int64_t *axes)
{
    if (!x || c->st)
        return NULL;
    poprt__node *nd = poprt__rw_axes_node(c->g, "Unsqueeze", x, n_axes, axes, NULL);
    if (!nd) {
        set_st(c, poprt__rw_oom());
        return NULL;
    }
    return nd->outputs[0];
}

poprt__tensor *poprt__grad_swap_last(poprt__grad_ctx *c, poprt__tensor *x, int rank)
{
    int64_t perm[POPRT__MAX_RANK];
    for (int i = 0; i < rank; i++)
        perm[i] = i;
    perm[rank - 2] = rank - 1;
    perm[rank - 1] = rank - 2;
    poprt__node *nd = NULL;
    poprt__tensor *out = poprt__grad_op(c, "Transpose", 1, &x, &nd);
    return ints_attr(c, out, nd, "perm", rank, perm);
}

poprt__tensor *poprt__grad_reshape_as(poprt__grad_ctx *c, poprt__tensor *gx, const poprt__tensor *x)
{
    return poprt__grad_op2(c, "Reshape", gx, poprt__grad_op1(c, "Shape", poprt__grad_val(c, x)));
}

static int same_dim(const poprt__dim *a, const poprt__dim *b)
{
    if (a->value >= 0 || b->value >= 0)
        return a->value == b->value;
    return a->param && b->param && !strcmp(a->param, b->param);
}

/* The broadcast axes found when the model runs (opset 13 on: ReduceSum's
 * axes input): those where the shape of gx and that of to_val (padded with
 * leading ones to rank fr) differ. */
static poprt__tensor *unbroadcast_at_run(poprt__grad_ctx *c, poprt__tensor *gx, int fr, int tr,
                                         poprt__tensor *to_val)
{
    poprt__tensor *sx = poprt__grad_op1(c, "Shape", to_val);
    if (fr > tr) {
        int64_t ones[POPRT__MAX_RANK];
        for (int i = 0; i < fr - tr; i++)
            ones[i] = 1;
        poprt__node *nd = NULL;
        poprt__tensor *ins[2] = {i64_const(c, fr - tr, ones), sx};
        sx = poprt__grad_op(c, "Concat", 2, ins, &nd);
        if (sx && poprt__rw_attr_i(nd, "axis", 0)) {
            set_st(c, poprt__rw_oom());
            return NULL;
        }
    }
    poprt__tensor *differ = poprt__grad_op1(
        c, "Not", poprt__grad_op2(c, "Equal", sx, poprt__grad_op1(c, "Shape", gx)));
    int64_t flat = -1;
    poprt__tensor *axes = poprt__grad_op2(c, "Reshape", poprt__grad_op1(c, "NonZero", differ),
                                          i64_const(c, 1, &flat));
    poprt__node *nd = NULL;
    poprt__tensor *ins[2] = {gx, axes};
    poprt__tensor *r = poprt__grad_op(c, "ReduceSum", 2, ins, &nd);
    if (r && (poprt__rw_attr_i(nd, "keepdims", 1) || poprt__rw_attr_i(nd, "noop_with_empty_axes", 1))) {
        set_st(c, poprt__rw_oom());
        return NULL;
    }
    return r;
}

poprt__tensor *poprt__grad_unbroadcast(poprt__grad_ctx *c, const poprt__node *n, poprt__tensor *gx,
                                       int fr, const poprt__dim *from, int tr, const poprt__dim *to,
                                       poprt__tensor *to_val, const poprt__tensor *x)
{
    if (!gx)
        return NULL;
    if (fr < 0 || tr < 0)
        return poprt__grad_fail(c, n, "the rank of '%s' is unknown: cannot undo broadcasting",
                                x->name);
    int64_t axes[POPRT__MAX_RANK];
    int n_axes = 0, at_run = 0;
    for (int i = 0; i < fr; i++) {
        int j = i - (fr - tr);
        if (j < 0 || (to[j].value == 1 && from[i].value != 1))
            axes[n_axes++] = i;
        else if (to[j].value < 0 && from[i].value != 1 && !same_dim(&to[j], &from[i]))
            at_run = 1;
    }
    if (at_run && c->opset < 13)
        return poprt__grad_fail(c, n,
                                "a dim of '%s' is unknown: whether it is broadcast is decided "
                                "when the model runs, which needs opset 13 (give the model "
                                "static shapes)",
                                x->name);
    poprt__tensor *r = at_run   ? unbroadcast_at_run(c, gx, fr, tr, to_val)
                       : n_axes ? poprt__grad_reduce_sum(c, gx, n_axes, axes, 1)
                                : gx;
    return fr != poprt__rw_rank(x) ? poprt__grad_reshape_as(c, r, x) : r;
}

poprt__tensor *poprt__grad_reduce_to(poprt__grad_ctx *c, const poprt__node *n, poprt__tensor *gx,
                                     const poprt__tensor *x)
{
    const poprt__type *f = &n->outputs[0]->type, *t = &x->type;
    if (f->kind != POPRT__KIND_TENSOR || t->kind != POPRT__KIND_TENSOR)
        return poprt__grad_fail(c, n, "'%s' or '%s' is not a tensor of known type",
                                n->outputs[0]->name, x->name);
    return poprt__grad_unbroadcast(c, n, gx, f->rank, f->dims, t->rank, t->dims,
                                   poprt__grad_val(c, x), x);
}

void poprt__grad_add(poprt__grad_ctx *c, const poprt__tensor *t, poprt__tensor *gx)
{
    if (!gx || c->st)
        return;
    poprt__tensor *old = poprt__map_get(&c->grad, t->name);
    poprt__tensor *sum = old ? poprt__grad_op2(c, "Add", old, gx) : gx;
    if (sum && poprt__map_put(&c->grad, t->name, sum))
        set_st(c, poprt__rw_oom());
}

/* ---- the region and the walk -------------------------------------------------- */

/* Filled from the Gradient node's attributes. */
typedef struct spec {
    int n_x, n_z;
    const poprt__tensor **src; /* xs then zs */
    const poprt__tensor *y;
} spec;

/* INVALID_MODEL: "Gradient node 'g': <text><what>'" (no <what>': what NULL) */
static poprt_status bad(const poprt__node *gn, const char *text, const char *what)
{
    return poprt__err(POPRT_STATUS_INVALID_MODEL, "Gradient node '%s': %s%s%s", gn->name, text,
                      what ? what : "", what ? "'" : "");
}

static poprt_status read_spec(poprt__graph *g, const poprt__node *gn, spec *s)
{
    const poprt__attr *xs = poprt__node_attr(gn, "xs"), *zs = poprt__node_attr(gn, "zs");
    const char *y = poprt__attr_s(gn, "y", NULL);
    if (!xs || xs->type != POPRT__ATTR_STRINGS || xs->n < 1)
        return bad(gn, "attribute xs (a list of tensor names) is missing or empty", NULL);
    if (zs && zs->type != POPRT__ATTR_STRINGS)
        return bad(gn, "attribute zs is not a list of tensor names", NULL);
    if (!y)
        return bad(gn, "attribute y (a tensor name) is missing", NULL);
    s->n_x = (int)xs->n;
    s->n_z = zs ? (int)zs->n : 0;
    if (gn->n_inputs != s->n_x + s->n_z) {
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "Gradient node '%s': %d inputs, but xs and zs name %d tensors (the "
                          "inputs are their values, in that order)",
                          gn->name, gn->n_inputs, s->n_x + s->n_z);
    }
    if (gn->n_outputs != s->n_x)
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "Gradient node '%s': %d outputs, but xs names %d tensors", gn->name,
                          gn->n_outputs, s->n_x);
    s->src = poprt__arena_array(&g->model->arena, (size_t)(s->n_x + s->n_z), sizeof *s->src);
    if (!s->src)
        return poprt__rw_oom();
    for (int i = 0; i < s->n_x + s->n_z; i++) {
        const char *name = i < s->n_x ? xs->strings[i] : zs->strings[i - s->n_x];
        s->src[i] = poprt__graph_find(g, name);
        if (!s->src[i] || !(s->src[i]->producer || s->src[i]->is_input || s->src[i]->raw))
            return bad(gn, i < s->n_x ? "xs names no tensor of its graph: '"
                                      : "zs names no tensor of its graph: '",
                       name);
        if (!gn->inputs[i])
            return poprt__err(POPRT_STATUS_INVALID_MODEL,
                              "Gradient node '%s': input %d (the value of '%s') is omitted",
                              gn->name, i, name);
    }
    s->y = poprt__graph_find(g, y);
    if (!s->y || !(s->y->producer || s->y->is_input || s->y->raw))
        return bad(gn, "y names no tensor of its graph: '", y);
    for (int i = 0; i < s->n_x; i++)
        if (!poprt__dtype_is_float(s->src[i]->type.elem))
            return bad(gn, "xs names a tensor that is not floating point: '", s->src[i]->name);
    return POPRT_OK;
}

static int is_src(const spec *s, const poprt__tensor *t, int n)
{
    for (int i = 0; i < n; i++)
        if (s->src[i] == t)
            return 1;
    return 0;
}

/* in[id] = 1 for the nodes of g on which y depends without passing through a
 * source (g toposorted: ids are positions). */
static poprt_status mark_region(poprt__graph *g, const spec *s, char *in)
{
    poprt__vec stack = {0};
    poprt_status st = poprt__vec_push(&stack, (void *)s->y);
    while (!st && stack.len) {
        const poprt__tensor *t = stack.items[--stack.len];
        poprt__node *p = t->producer;
        if (is_src(s, t, s->n_x + s->n_z) || !p || p->graph != g || p->removed || in[p->id])
            continue;
        in[p->id] = 1;
        for (int k = 0; k < p->n_inputs && !st; k++)
            if (p->inputs[k])
                st = poprt__vec_push(&stack, p->inputs[k]);
        if (!st && poprt__rw_has_body(p)) { /* what its subgraphs read */
            poprt__vec imp = {0};
            st = poprt__node_implicit_inputs(p, &imp);
            for (size_t i = 0; i < imp.len && !st; i++)
                st = poprt__vec_push(&stack, imp.items[i]);
            poprt__vec_free(&imp);
        }
    }
    poprt__vec_free(&stack);
    return st ? poprt__rw_oom() : POPRT_OK;
}

/* Whether n reads a tensor of set, as an input or in its subgraphs (-1:
 * out of memory). */
static int reads_any(const poprt__map *set, const poprt__node *n)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] && n->inputs[k]->name[0] && poprt__map_get(set, n->inputs[k]->name))
            return 1;
    if (!poprt__rw_has_body(n))
        return 0;
    poprt__vec imp = {0};
    int r = poprt__node_implicit_inputs(n, &imp) ? -1 : 0;
    for (size_t i = 0; i < imp.len && !r; i++)
        r = poprt__map_get(set, ((const poprt__tensor *)imp.items[i])->name) != NULL;
    poprt__vec_free(&imp);
    return r;
}

/* A copy of forward node n reading the values of c->val. */
static poprt_status copy_node(poprt__grad_ctx *c, const poprt__node *n)
{
    if (poprt__rw_has_body(n))
        return poprt__err(POPRT_STATUS_UNSUPPORTED,
                          "Gradient node '%s': node '%s' (%s) has a subgraph; it cannot be "
                          "evaluated at the Gradient node's own input values",
                          c->gn->name, n->name, n->op_type);
    poprt__node *nd = poprt__rw_node(c->g, n->op_type, n->domain, n->name, n->n_inputs, n->n_outputs);
    if (!nd)
        return poprt__rw_oom();
    for (int k = 0; k < n->n_inputs; k++)
        poprt__node_set_input(nd, k, poprt__grad_val(c, n->inputs[k]));
    for (int k = 0; k < n->n_outputs; k++) {
        const poprt__tensor *o = n->outputs[k];
        if (!o || !o->name[0])
            continue;
        poprt__tensor *t = poprt__graph_new_tensor(c->g, o->name);
        if (!t || poprt__type_copy(&c->g->model->arena, &t->type, &o->type) ||
            poprt__map_put(&c->val, o->name, t))
            return poprt__rw_oom();
        poprt__rw_set_output(nd, k, t);
    }
    /* the attributes' own data is shared: passes replace it, never write it */
    if (n->n_attrs) {
        poprt__attr *a = poprt__arena_array(&c->g->model->arena, (size_t)n->n_attrs, sizeof *a);
        if (!a)
            return poprt__rw_oom();
        memcpy(a, n->attrs, sizeof *a * (size_t)n->n_attrs);
        nd->attrs = a;
        nd->n_attrs = n->n_attrs;
    }
    return POPRT_OK;
}

/* Forward: which tensors depend on an x (dep) and, when the Gradient node is
 * fed other values than xs/zs name, the copies of the region's nodes that
 * depend on a source. */
static poprt_status forward(poprt__grad_ctx *c, const spec *s, const char *in)
{
    poprt__graph *g = c->g;
    int copy = 0;
    poprt__map srcdep = {0};
    poprt_status st = POPRT_OK;
    for (int i = 0; i < s->n_x + s->n_z && !st; i++) {
        copy |= c->gn->inputs[i] != s->src[i];
        st = poprt__map_put(&srcdep, s->src[i]->name, &dep_mark);
        if (!st && i < s->n_x)
            st = poprt__map_put(&c->dep, s->src[i]->name, &dep_mark);
        if (!st && c->gn->inputs[i] != s->src[i])
            st = poprt__map_put(&c->val, s->src[i]->name, c->gn->inputs[i]);
    }
    if (st)
        st = poprt__rw_oom();
    size_t n_nodes = g->nodes.len; /* copies are appended: not visited */
    for (size_t i = 0; i < n_nodes && !st; i++) {
        const poprt__node *n = g->nodes.items[i];
        int r = in[i] ? reads_any(&srcdep, n) : 0, d = r > 0 ? reads_any(&c->dep, n) : 0;
        if (r < 0 || d < 0) {
            st = poprt__rw_oom();
            break;
        }
        if (!r)
            continue;
        for (int k = 0; k < n->n_outputs && !st; k++) {
            const poprt__tensor *o = n->outputs[k];
            if (!o || !o->name[0])
                continue;
            st = poprt__map_put(&srcdep, o->name, &dep_mark);
            if (!st && d && o->type.kind == POPRT__KIND_TENSOR && poprt__dtype_is_float(o->type.elem))
                st = poprt__map_put(&c->dep, o->name, &dep_mark);
        }
        if (st)
            st = poprt__rw_oom();
        else if (copy)
            st = copy_node(c, n);
    }
    poprt__map_free(&srcdep);
    return st;
}

/* ones or zeros of the runtime shape of forward tensor t */
static poprt__tensor *filled(poprt__grad_ctx *c, const poprt__tensor *t, int32_t dtype, double v)
{
    poprt__tensor *shape = poprt__grad_op1(c, "Shape", poprt__grad_val(c, t));
    return poprt__grad_op2(c, "Expand", poprt__grad_scalar(c, dtype, v), shape);
}

static poprt_status backward(poprt__grad_ctx *c, const spec *s, const char *in, size_t n_nodes)
{
    if (poprt__map_get(&c->dep, s->y->name))
        poprt__grad_add(c, s->y, filled(c, s->y, s->y->type.elem, 1.0));
    for (size_t i = n_nodes; i-- > 0 && !c->st;) {
        const poprt__node *n = c->g->nodes.items[i];
        int r = in[i] ? reads_any(&c->dep, n) : 0;
        if (r < 0)
            return poprt__rw_oom();
        if (!r)
            continue;
        poprt__tensor *gy = n->outputs[0] ? poprt__map_get(&c->grad, n->outputs[0]->name) : NULL;
        int others = 0;
        for (int k = 1; k < n->n_outputs; k++)
            others |= n->outputs[k] && poprt__map_get(&c->grad, n->outputs[k]->name) != NULL;
        if (!gy && !others)
            continue; /* y does not depend on it through a float value */
        if (others || !poprt__rw_onnx_domain(n->domain) || !poprt__grad_rule(c, n, gy))
            return poprt__err(POPRT_STATUS_UNSUPPORTED,
                              "Gradient node '%s': no derivative rule for operator %s%s%s (node "
                              "'%s') on the path to '%s'",
                              c->gn->name, n->domain[0] ? n->domain : "", n->domain[0] ? "." : "",
                              n->op_type, n->name, s->y->name);
    }
    for (int i = 0; i < s->n_x && !c->st; i++) {
        const poprt__tensor *x = s->src[i];
        poprt__tensor *gx = poprt__map_get(&c->grad, x->name);
        if (!gx)
            gx = filled(c, x, x->type.elem, 0.0);
        poprt__tensor *out = c->gn->outputs[i];
        if (out && gx && !poprt__rw_node1(c->g, "Identity", "", 1, &gx, out, NULL))
            set_st(c, poprt__rw_oom());
    }
    return c->st;
}

static poprt_status expand_one(poprt__graph *g, poprt__node *gn)
{
    poprt__grad_ctx c = {.g = g, .gn = gn, .opset = (int)poprt__model_opset(g->model, "")};
    if (c.opset < 9)
        return poprt__err(POPRT_STATUS_UNSUPPORTED,
                          "Gradient node '%s': needs opset 9 or newer of the default domain "
                          "(the model imports %d)",
                          gn->name, c.opset);
    spec s = {0};
    poprt_status st = read_spec(g, gn, &s);
    if (st)
        return st;
    size_t n_nodes = g->nodes.len;
    char *in = poprt__calloc(n_nodes ? n_nodes : 1, 1);
    if (!in)
        return poprt__rw_oom();
    st = mark_region(g, &s, in);
    if (!st)
        st = forward(&c, &s, in);
    if (!st)
        st = backward(&c, &s, in, n_nodes);
    poprt__free(in);
    poprt__map_free(&c.grad);
    poprt__map_free(&c.val);
    poprt__map_free(&c.dep);
    if (!st) {
        /* its outputs now come from the Identity nodes */
        for (int k = 0; k < gn->n_outputs; k++)
            gn->outputs[k] = NULL;
        poprt__graph_remove_node(g, gn);
    }
    return st;
}

static int is_gradient(const poprt__node *n)
{
    return !n->removed && !strcmp(n->op_type, "Gradient") && !strcmp(n->domain, GRAD_DOMAIN);
}

static poprt_status expand_graph(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (;;) {
        poprt__node *gn = NULL;
        for (size_t i = 0; i < g->nodes.len && !gn; i++)
            if (is_gradient(g->nodes.items[i]))
                gn = g->nodes.items[i];
        if (!gn)
            return POPRT_OK;
        /* ids are positions; earlier expansions appended nodes */
        poprt_status st = poprt__graph_toposort(g);
        if (!st)
            st = expand_one(g, gn);
        if (st)
            return st;
        ++*changed;
    }
}

poprt_status poprt__expand_gradients(poprt__model *m, int *changed)
{
    return poprt__rw_run_graphs(m, expand_graph, NULL, changed);
}
