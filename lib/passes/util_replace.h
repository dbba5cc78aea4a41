/* Small rewriting helpers shared by the replace_* / workaround passes
 * (header-only so the pass lists alone drive the build). */
#ifndef POPRT_PASSES_UTIL_REPLACE_H
#define POPRT_PASSES_UTIL_REPLACE_H

#include <math.h>
#include <string.h>
#include "passes/passes.h"
#include "ir/dtype.h"

static inline int rp_default_domain(const char *d)
{
    return !d || !*d || strcmp(d, "ai.onnx") == 0;
}

/* n is the ai.onnx operator `op`. */
static inline int rp_is(const poprt__node *n, const char *op)
{
    return rp_default_domain(n->domain) && strcmp(n->op_type, op) == 0;
}

static inline int64_t rp_opset(const poprt__model *m) { return poprt__model_opset(m, ""); }

static inline poprt_status rp_oom(void)
{
    return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
}

/* Calls fn on g and, first, on every subgraph nested in it. */
typedef poprt_status (*rp_graph_fn)(poprt__graph *g, void *ctx, int *changed);
static inline poprt_status rp_each_graph(poprt__graph *g, rp_graph_fn fn, void *ctx, int *changed)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int a = 0; a < n->n_attrs; a++) {
            poprt__attr *at = &n->attrs[a];
            poprt_status st = POPRT_OK;
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                st = rp_each_graph(at->g, fn, ctx, changed);
            for (int64_t k = 0; !st && at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                if (at->graphs[k])
                    st = rp_each_graph(at->graphs[k], fn, ctx, changed);
            if (st)
                return st;
        }
    }
    return fn(g, ctx, changed);
}

/* The nodes of g (not subgraphs) that are ai.onnx `op`, snapshot into out. */
static inline poprt_status rp_collect(const poprt__graph *g, const char *op, poprt__vec *out)
{
    out->len = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (rp_is(g->nodes.items[i], op) && poprt__vec_push(out, g->nodes.items[i]))
            return rp_oom();
    return POPRT_OK;
}

/* The constant value of t: t itself when it holds data, else the 'value'
 * tensor of the Constant node producing it (NULL when not constant). */
static inline const poprt__tensor *rp_value(const poprt__tensor *t)
{
    if (!t)
        return NULL;
    if (t->data)
        return t;
    const poprt__node *p = t->producer;
    if (p && rp_is(p, "Constant") && p->n_outputs == 1 && p->outputs[0] == t) {
        const poprt__attr *a = poprt__node_attr(p, "value");
        if (a && a->type == POPRT__ATTR_TENSOR && a->t && a->t->data)
            return a->t;
    }
    return NULL;
}

/* Constant tensor whose elements all equal one value: returns 1 and *v. */
static inline int rp_const_uniform(const poprt__tensor *t, double *v)
{
    t = rp_value(t);
    if (!t || !t->data || t->type.kind != POPRT__KIND_TENSOR)
        return 0;
    int32_t e = t->type.elem;
    if (!poprt__dtype_is_float(e) && !poprt__dtype_is_int(e) && e != POPRT_DTYPE_BOOL)
        return 0;
    int64_t n = poprt__type_numel(&t->type);
    if (n < 1)
        return 0;
    double first = poprt__load_f64(t->data, t->type.elem, 0);
    for (int64_t i = 1; i < n; i++) {
        double x = poprt__load_f64(t->data, t->type.elem, i);
        if (!(x == first || (isnan(x) && isnan(first))))
            return 0;
    }
    *v = first;
    return 1;
}

/* Constant with numel 1 (any rank): returns 1 and *v. */
static inline int rp_const_scalar(const poprt__tensor *t, double *v)
{
    t = rp_value(t);
    return t && poprt__type_numel(&t->type) == 1 && rp_const_uniform(t, v);
}

/* Integer constant values (int32/int64), into vals (up to cap): count or -1. */
static inline int64_t rp_const_ints(const poprt__tensor *t, int64_t *vals, int64_t cap)
{
    t = rp_value(t);
    if (!t || !t->data || (t->type.elem != POPRT_DTYPE_INT64 && t->type.elem != POPRT_DTYPE_INT32))
        return -1;
    int64_t n = poprt__type_numel(&t->type);
    if (n < 0 || n > cap)
        return -1;
    for (int64_t i = 0; i < n; i++)
        vals[i] = poprt__load_i64(t->data, t->type.elem, i);
    return n;
}

/* A scalar (rank given, all dims 1) constant of dtype holding v. */
static inline poprt__tensor *rp_const_of(poprt__graph *g, const char *base, int32_t dtype,
                                         int rank, double v)
{
    unsigned char buf[16] = {0};
    int64_t dims[POPRT__MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[i] = 1;
    if (dtype == POPRT_DTYPE_BOOL)
        buf[0] = v != 0;
    else if (poprt__dtype_is_int(dtype))
        poprt__store_i64(buf, dtype, 0, (int64_t)v);
    else
        poprt__store_f64(buf, dtype, 0, v);
    return poprt__graph_add_const(g, base, dtype, rank, dims, buf,
                                  poprt__dtype_size((poprt_dtype)dtype));
}

static inline poprt__tensor *rp_const_i64(poprt__graph *g, const char *base, int64_t n,
                                          const int64_t *vals)
{
    int64_t dims[1] = {n};
    return poprt__graph_add_const(g, base, POPRT_DTYPE_INT64, 1, dims, vals,
                                  (size_t)n * sizeof(int64_t));
}

/* A new node (ai.onnx unless domain given) reading ins; its output is `out`
 * when given, else a new tensor named after base. */
static inline poprt__node *rp_node(poprt__graph *g, const char *op, const char *domain, int n_in,
                                   poprt__tensor *const *ins, poprt__tensor *out, const char *base)
{
    poprt__node *n = poprt__graph_add_node(g, op, domain, NULL, n_in, 1);
    if (!n)
        return NULL;
    for (int i = 0; i < n_in; i++)
        poprt__node_set_input(n, i, ins[i]);
    n->outputs[0] = out ? out : poprt__graph_new_tensor(g, base ? base : op);
    return n->outputs[0] ? n : NULL;
}

static inline int rp_attr_i(poprt__node *n, const char *name, int64_t v)
{
    poprt__attr *a = n ? poprt__node_add_attr(n, name, POPRT__ATTR_INT) : NULL;
    if (a)
        a->i = v;
    return a != NULL;
}

static inline int rp_attr_f(poprt__node *n, const char *name, float v)
{
    poprt__attr *a = n ? poprt__node_add_attr(n, name, POPRT__ATTR_FLOAT) : NULL;
    if (a)
        a->f = v;
    return a != NULL;
}

/* STRING attribute name = v (copied into the model's arena). */
static inline int rp_attr_s(poprt__node *n, const char *name, const char *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_STRING);
    if (!a)
        return 0;
    a->s = poprt__arena_strdup(&n->graph->model->arena, v);
    a->s_len = strlen(v);
    return a->s != NULL;
}

static inline int rp_attr_ints(poprt__node *n, const char *name, int64_t cnt, const int64_t *v)
{
    poprt__attr *a = n ? poprt__node_add_attr(n, name, POPRT__ATTR_INTS) : NULL;
    if (!a)
        return 0;
    a->n = cnt;
    a->ints = poprt__arena_memdup(&n->graph->model->arena, v, (size_t)(cnt ? cnt : 1) * sizeof *v);
    return a->ints != NULL;
}

static inline int rp_attr_floats(poprt__node *n, const char *name, int64_t cnt, const float *v)
{
    poprt__attr *a = n ? poprt__node_add_attr(n, name, POPRT__ATTR_FLOATS) : NULL;
    if (!a)
        return 0;
    a->n = cnt;
    a->floats = poprt__arena_memdup(&n->graph->model->arena, v, (size_t)(cnt ? cnt : 1) * sizeof *v);
    return a->floats != NULL;
}

/* Copies attribute `name` of src (if present) onto dst. */
static inline int rp_copy_attr(poprt__node *dst, const poprt__node *src, const char *name)
{
    const poprt__attr *s = poprt__node_attr(src, name);
    if (!s)
        return 1;
    poprt__attr *a = poprt__node_add_attr(dst, name, s->type);
    if (!a)
        return 0;
    const char *nm = a->name;
    *a = *s;
    a->name = nm;
    return 1;
}

static inline void rp_remove_attr(poprt__node *n, const char *name)
{
    int k = 0;
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) != 0)
            n->attrs[k++] = n->attrs[i];
    n->n_attrs = k;
}

/* Unsqueeze / Squeeze with axes as attribute (opset < 13) or input. */
static inline poprt__node *rp_axes_node(poprt__graph *g, const char *op, poprt__tensor *x,
                                        int64_t n_axes, const int64_t *axes, poprt__tensor *out)
{
    if (rp_opset(g->model) >= 13) {
        poprt__tensor *a = rp_const_i64(g, "axes", n_axes, axes);
        poprt__tensor *ins[2] = {x, a};
        return a ? rp_node(g, op, "", 2, ins, out, op) : NULL;
    }
    poprt__node *n = rp_node(g, op, "", 1, &x, out, op);
    return n && rp_attr_ints(n, "axes", n_axes, axes) ? n : NULL;
}

/* Removes `old` after `repl` took over; old's outputs lose their producer. */
static inline void rp_drop(poprt__graph *g, poprt__node *old) { poprt__graph_remove_node(g, old); }

/* Static dims of t into dims: 1 when t is a tensor of known rank and dims. */
static inline int rp_static_dims(const poprt__tensor *t, int *rank, int64_t *dims)
{
    if (!t || t->type.kind != POPRT__KIND_TENSOR || t->type.rank < 0 ||
        t->type.rank > POPRT__MAX_RANK)
        return 0;
    for (int i = 0; i < t->type.rank; i++) {
        if (t->type.dims[i].value < 0)
            return 0;
        dims[i] = t->type.dims[i].value;
    }
    *rank = t->type.rank;
    return 1;
}

/* A pass taking no arguments: INVALID_OPTION for any. */
static inline poprt_status rp_no_args(const char *pass, const char *args)
{
    poprt__pass_args a;
    static const char *const none[] = {NULL};
    return poprt__pass_args_parse(pass, args, none, &a);
}

#endif
