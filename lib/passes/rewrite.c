/* The helper library of the passes (see rewrite.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ir/dtype.h"
#include "passes/rewrite.h"

poprt_status poprt__rw_oom(void) { return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory"); }

/* ---- walking ---------------------------------------------------------------- */

poprt_status poprt__rw_each_body(const poprt__node *n, poprt__rw_body_fn fn, void *ctx)
{
    for (int a = 0; a < n->n_attrs; a++) {
        const poprt__attr *at = &n->attrs[a];
        poprt_status st = POPRT_OK;
        if (at->type == POPRT__ATTR_GRAPH && at->g)
            st = fn(at->g, ctx);
        for (int64_t k = 0; !st && at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
            if (at->graphs[k])
                st = fn(at->graphs[k], ctx);
        if (st)
            return st;
    }
    return POPRT_OK;
}

int poprt__rw_has_body(const poprt__node *n)
{
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].type == POPRT__ATTR_GRAPH || n->attrs[a].type == POPRT__ATTR_GRAPHS)
            return 1;
    return 0;
}

typedef struct walk {
    poprt__rw_graph_fn fn;
    void *ctx;
    int *changed;
} walk;

static poprt_status walk_body(poprt__graph *body, void *ctx)
{
    const walk *w = ctx;
    return poprt__rw_each_graph(body, w->fn, w->ctx, w->changed);
}

poprt_status poprt__rw_each_graph(poprt__graph *g, poprt__rw_graph_fn fn, void *ctx, int *changed)
{
    walk w = {fn, ctx, changed};
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt_status st = poprt__rw_each_body(g->nodes.items[i], walk_body, &w);
        if (st)
            return st;
    }
    return fn(g, ctx, changed);
}

poprt_status poprt__rw_run_graphs(poprt__model *m, poprt__rw_graph_fn fn, void *ctx, int *changed)
{
    *changed = 0;
    return poprt__rw_each_graph(m->graph, fn, ctx, changed);
}

poprt_status poprt__rw_collect(const poprt__graph *g, const char *op, poprt__vec *out)
{
    out->len = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        if ((!op || poprt__rw_is(g->nodes.items[i], op)) && poprt__vec_push(out, g->nodes.items[i]))
            return poprt__rw_oom();
    return POPRT_OK;
}

/* ---- matching nodes --------------------------------------------------------- */

int poprt__rw_onnx_domain(const char *domain)
{
    return !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
}

int poprt__rw_is(const poprt__node *n, const char *op)
{
    return n && poprt__rw_onnx_domain(n->domain) && strcmp(n->op_type, op) == 0;
}

poprt__node *poprt__rw_producer(const poprt__tensor *t, const char *op)
{
    poprt__node *p = t ? t->producer : NULL;
    return poprt__rw_is(p, op) ? p : NULL;
}

poprt__node *poprt__rw_reader(const poprt__graph *g, const poprt__tensor *t, const char *op)
{
    poprt__node *n = poprt__graph_sole_consumer(g, t);
    return poprt__rw_is(n, op) ? n : NULL;
}

poprt__tensor *poprt__rw_other_input(const poprt__node *n, const poprt__tensor *t)
{
    if (!n || n->n_inputs != 2)
        return NULL;
    if (n->inputs[0] == t)
        return n->inputs[1];
    if (n->inputs[1] == t)
        return n->inputs[0];
    return NULL;
}

poprt__node *poprt__rw_find_node(const poprt__graph *g, const char *name)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (strcmp(n->name, name) == 0)
            return n;
    }
    return NULL;
}

/* ---- constants -------------------------------------------------------------- */

int poprt__rw_is_const(const poprt__tensor *t)
{
    return t && t->raw && t->type.kind == POPRT__KIND_TENSOR && t->type.rank >= 0 &&
           poprt__type_is_static(&t->type) && t->type.elem != POPRT_DTYPE_STRING;
}

const poprt__tensor *poprt__rw_value(const poprt__tensor *t)
{
    if (!t)
        return NULL;
    if (t->raw)
        return t;
    const poprt__node *p = t->producer;
    if (poprt__rw_is(p, "Constant") && p->n_outputs == 1 && p->outputs[0] == t) {
        const poprt__attr *a = poprt__node_attr(p, "value");
        if (a && a->type == POPRT__ATTR_TENSOR && a->t && a->t->raw)
            return a->t;
    }
    return NULL;
}

int poprt__rw_const_of(const poprt__tensor *t, poprt__rw_reach reach, poprt__rw_const *c)
{
    const poprt__tensor *v =
        reach == POPRT__RW_DATA ? (poprt__rw_is_const(t) ? t : NULL) : poprt__rw_value(t);
    if (v) {
        int64_t n = poprt__type_numel(&v->type);
        size_t es = poprt__dtype_size((poprt_dtype)v->type.elem);
        if (v->type.kind != POPRT__KIND_TENSOR || n < 0 || !es || (size_t)n * es > v->nbytes)
            return 0;
        *c = (poprt__rw_const){poprt__tensor_data(v), v->type.elem, n};
        return c->data != NULL; /* NULL: no memory for its aligned copy */
    }
    const poprt__node *p = reach == POPRT__RW_ANY && t ? t->producer : NULL;
    if (!poprt__rw_is(p, "Constant"))
        return 0;
    const poprt__attr *a;
    if ((a = poprt__node_attr(p, "value_float"))) {
        *c = (poprt__rw_const){&a->f, POPRT_DTYPE_FLOAT, 1};
        return 1;
    }
    if ((a = poprt__node_attr(p, "value_int"))) {
        *c = (poprt__rw_const){&a->i, POPRT_DTYPE_INT64, 1};
        return 1;
    }
    return 0;
}

int64_t poprt__rw_ints(const poprt__tensor *t, poprt__rw_reach reach, int64_t *vals, int64_t max)
{
    poprt__rw_const c;
    if (!poprt__rw_const_of(t, reach, &c) || !poprt__dtype_is_int(c.elem) || c.numel > max)
        return -1;
    for (int64_t i = 0; i < c.numel; i++)
        vals[i] = poprt__load_i64(c.data, c.elem, i);
    return c.numel;
}

int poprt__rw_uniform(const poprt__tensor *t, poprt__rw_reach reach, double *v)
{
    poprt__rw_const c;
    if (!poprt__rw_const_of(t, reach, &c) || c.numel < 1 ||
        !(poprt__dtype_is_float(c.elem) || poprt__dtype_is_int(c.elem) ||
          c.elem == POPRT_DTYPE_BOOL))
        return 0;
    double first = poprt__load_f64(c.data, c.elem, 0);
    for (int64_t i = 1; i < c.numel; i++) {
        double x = poprt__load_f64(c.data, c.elem, i);
        if (!(x == first || (isnan(x) && isnan(first))))
            return 0;
    }
    *v = first;
    return 1;
}

int poprt__rw_scalar(const poprt__tensor *t, poprt__rw_reach reach, double *v)
{
    poprt__rw_const c;
    return poprt__rw_const_of(t, reach, &c) && c.numel == 1 && poprt__rw_uniform(t, reach, v);
}

int poprt__rw_scalar_is(const poprt__tensor *t, poprt__rw_reach reach, double want, double rel)
{
    double v;
    return poprt__rw_scalar(t, reach, &v) && fabs(v - want) <= rel * fabs(want) + 1e-12;
}

const float *poprt__rw_f32(const poprt__tensor *t, poprt__rw_reach reach, int64_t *numel)
{
    poprt__rw_const c;
    if (!poprt__rw_const_of(t, reach, &c) || c.elem != POPRT_DTYPE_FLOAT)
        return NULL;
    *numel = c.numel;
    return c.data;
}

const void *poprt__rw_f32_bytes(const poprt__tensor *t, poprt__rw_reach reach, int64_t *numel)
{
    const poprt__tensor *v =
        reach == POPRT__RW_DATA ? (poprt__rw_is_const(t) ? t : NULL) : poprt__rw_value(t);
    if (!v || v->type.kind != POPRT__KIND_TENSOR || v->type.elem != POPRT_DTYPE_FLOAT)
        return v ? NULL : poprt__rw_f32(t, reach, numel); /* a Constant's value_float */
    int64_t n = poprt__type_numel(&v->type);
    if (n < 0 || (size_t)n * sizeof(float) > v->nbytes)
        return NULL;
    *numel = n;
    return v->raw;
}

int64_t poprt__rw_attr_or_input_ints(const poprt__node *n, const char *attr, int slot, int from,
                                     int64_t *vals, int64_t max)
{
    if (n->opset >= from) {
        poprt__tensor *t = poprt__node_in(n, slot);
        if (!t)
            return -2;
        return poprt__rw_ints(t, POPRT__RW_DATA, vals, max);
    }
    const poprt__attr *a = poprt__node_attr(n, attr);
    if (!a)
        return -2;
    if (a->type != POPRT__ATTR_INTS || a->n > max)
        return -1;
    for (int64_t i = 0; i < a->n; i++)
        vals[i] = a->ints[i];
    return a->n;
}

int poprt__rw_cast_exact(int32_t from, int32_t to)
{
    enum { B = POPRT_DTYPE_BOOL, I8 = POPRT_DTYPE_INT8, U8 = POPRT_DTYPE_UINT8,
           I16 = POPRT_DTYPE_INT16, U16 = POPRT_DTYPE_UINT16, I32 = POPRT_DTYPE_INT32,
           U32 = POPRT_DTYPE_UINT32, I64 = POPRT_DTYPE_INT64, U64 = POPRT_DTYPE_UINT64,
           F16 = POPRT_DTYPE_FLOAT16, BF = POPRT_DTYPE_BFLOAT16, F32 = POPRT_DTYPE_FLOAT,
           F64 = POPRT_DTYPE_DOUBLE };
    if (from == to)
        return 1;
    switch (from) {
    case B:
        return to == I8 || to == U8 || to == I16 || to == U16 || to == I32 || to == U32 ||
               to == I64 || to == U64 || to == F16 || to == BF || to == F32 || to == F64;
    case I8:
        return to == I16 || to == I32 || to == I64 || to == F16 || to == BF || to == F32 || to == F64;
    case U8:
        return to == I16 || to == U16 || to == I32 || to == U32 || to == I64 || to == U64 ||
               to == F16 || to == BF || to == F32 || to == F64;
    case I16:
        return to == I32 || to == I64 || to == F32 || to == F64;
    case U16:
        return to == I32 || to == U32 || to == I64 || to == U64 || to == F32 || to == F64;
    case I32:
        return to == I64 || to == F64;
    case U32:
        return to == I64 || to == U64 || to == F64;
    case F16:
    case BF:
        return to == F32 || to == F64;
    case F32:
        return to == F64;
    default:
        return 0;
    }
}

/* ---- shapes ----------------------------------------------------------------- */

int poprt__rw_rank(const poprt__tensor *t)
{
    return t && t->type.kind == POPRT__KIND_TENSOR ? t->type.rank : -1;
}

int poprt__rw_dims(const poprt__tensor *t, int64_t *dims)
{
    int r = poprt__rw_rank(t);
    if (r < 0 || r > POPRT__MAX_RANK)
        return -1;
    for (int i = 0; i < r; i++)
        dims[i] = t->type.dims ? t->type.dims[i].value : -1;
    return r;
}

int poprt__rw_static_dims(const poprt__tensor *t, int64_t *dims, int *rank)
{
    int r = poprt__rw_dims(t, dims);
    for (int i = 0; i < r; i++)
        if (dims[i] < 0)
            return 0;
    *rank = r;
    return r >= 0;
}

/* ---- building --------------------------------------------------------------- */

poprt__node *poprt__rw_node(poprt__graph *g, const char *op, const char *domain, const char *base,
                            int n_in, int n_out)
{
    const char *name = base ? poprt__model_unique_name(g->model, base) : NULL;
    if (base && !name)
        return NULL;
    return poprt__graph_add_node(g, op, domain, name, n_in, n_out);
}

poprt__node *poprt__rw_node1(poprt__graph *g, const char *op, const char *domain, int n_in,
                             poprt__tensor *const *ins, poprt__tensor *out, const char *out_base)
{
    poprt__node *n = poprt__rw_node(g, op, domain, NULL, n_in, 1);
    if (!n)
        return NULL;
    for (int i = 0; i < n_in; i++)
        poprt__node_set_input(n, i, ins[i]);
    poprt__tensor *t = out ? out : poprt__graph_new_tensor(g, out_base ? out_base : op);
    if (!t)
        return NULL;
    poprt__rw_set_output(n, 0, t);
    return n;
}

poprt__node *poprt__rw_axes_node(poprt__graph *g, const char *op, poprt__tensor *x, int64_t n_axes,
                                 const int64_t *axes, poprt__tensor *out)
{
    if (poprt__model_opset(g->model, "") >= 13) {
        poprt__tensor *a = poprt__rw_new_i64(g, "axes", axes, n_axes);
        poprt__tensor *ins[2] = {x, a};
        return a ? poprt__rw_node1(g, op, "", 2, ins, out, op) : NULL;
    }
    poprt__node *n = poprt__rw_node1(g, op, "", 1, &x, out, op);
    return n && !poprt__rw_attr_ints(n, "axes", n_axes, axes) ? n : NULL;
}

poprt__tensor *poprt__rw_new_scalar(poprt__graph *g, const char *base, int32_t dtype, int rank,
                                    double v)
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

poprt__tensor *poprt__rw_new_i64(poprt__graph *g, const char *base, const int64_t *vals, int64_t n)
{
    int64_t d = n;
    return poprt__graph_add_const(g, base, POPRT_DTYPE_INT64, 1, &d, vals,
                                  (size_t)n * sizeof(int64_t));
}

poprt__tensor *poprt__rw_new_f32_concat(poprt__graph *g, const char *base, int64_t rows, int n,
                                        const void *const *src, const int64_t *cols, int flat)
{
    int64_t width = 0;
    for (int i = 0; i < n; i++)
        width += cols[i];
    const int64_t len = rows * width, dims[2] = {rows, width};
    const size_t nbytes = (size_t)len * sizeof(float);
    /* written in place: the model's own memory for constants */
    void *mem;
    poprt__tensor *t = poprt__graph_add_const_buffer(g, base, POPRT_DTYPE_FLOAT, flat ? 1 : 2,
                                                     flat ? &len : dims, nbytes, &mem);
    if (!t)
        return NULL;
    float *v = mem;
    int64_t c0 = 0;
    for (int i = 0; i < n; c0 += cols[i], i++)
        for (int64_t r = 0; r < rows; r++) {
            float *d = v + r * width + c0;
            if (src[i])
                memcpy(d, (const char *)src[i] + (size_t)(r * cols[i]) * sizeof *v,
                       (size_t)cols[i] * sizeof *v);
            else
                memset(d, 0, (size_t)cols[i] * sizeof *v);
        }
    for (int i = 0; i < n; i++) /* sources in the model file: read once */
        if (src[i])
            poprt__model_drop_pages(g->model, src[i], (size_t)(rows * cols[i]) * sizeof *v);
    return t;
}

static poprt__attr *new_attr(poprt__node *n, const char *name, poprt__attr_type type)
{
    return n ? poprt__node_add_attr(n, name, type) : NULL;
}

poprt_status poprt__rw_attr_i(poprt__node *n, const char *name, int64_t v)
{
    poprt__attr *a = new_attr(n, name, POPRT__ATTR_INT);
    return a ? (a->i = v, POPRT_OK) : poprt__rw_oom();
}

poprt_status poprt__rw_attr_f(poprt__node *n, const char *name, float v)
{
    poprt__attr *a = new_attr(n, name, POPRT__ATTR_FLOAT);
    return a ? (a->f = v, POPRT_OK) : poprt__rw_oom();
}

poprt_status poprt__rw_attr_s(poprt__node *n, const char *name, const char *v)
{
    poprt__attr *a = new_attr(n, name, POPRT__ATTR_STRING);
    if (!a || !(a->s = poprt__arena_strdup(&n->graph->model->arena, v)))
        return poprt__rw_oom();
    a->s_len = strlen(v);
    return POPRT_OK;
}

/* An INTS or FLOATS attribute holding a copy of count elements of size es. */
static poprt_status list_attr(poprt__node *n, const char *name, poprt__attr_type type,
                              int64_t count, const void *v, size_t es)
{
    poprt__attr *a = new_attr(n, name, type);
    void *copy =
        a ? poprt__arena_array(&n->graph->model->arena, (size_t)(count ? count : 1), es) : NULL;
    if (!copy)
        return poprt__rw_oom();
    if (count)
        memcpy(copy, v, (size_t)count * es);
    a->n = count;
    if (type == POPRT__ATTR_INTS)
        a->ints = copy;
    else
        a->floats = copy;
    return POPRT_OK;
}

poprt_status poprt__rw_attr_ints(poprt__node *n, const char *name, int64_t count, const int64_t *v)
{
    return list_attr(n, name, POPRT__ATTR_INTS, count, v, sizeof *v);
}

poprt_status poprt__rw_attr_floats(poprt__node *n, const char *name, int64_t count, const float *v)
{
    return list_attr(n, name, POPRT__ATTR_FLOATS, count, v, sizeof *v);
}

poprt_status poprt__rw_copy_attr(poprt__node *dst, const poprt__node *src, const char *name)
{
    const poprt__attr *s = poprt__node_attr(src, name);
    if (!s)
        return POPRT_OK;
    poprt__attr *a = poprt__node_add_attr(dst, name, s->type);
    if (!a)
        return poprt__rw_oom();
    const char *nm = a->name;
    *a = *s;
    a->name = nm;
    return POPRT_OK;
}

int poprt__rw_remove_attr(poprt__node *n, const char *name)
{
    int k = 0;
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) != 0)
            n->attrs[k++] = n->attrs[i];
    int removed = k < n->n_attrs;
    n->n_attrs = k;
    return removed;
}

poprt_status poprt__rw_set_ints(poprt__node *n, const char *name, const int64_t *v, int64_t count)
{
    poprt__attr *a = (poprt__attr *)poprt__node_attr(n, name);
    if (!a && !(a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS)))
        return poprt__rw_oom();
    int64_t *ints = poprt__arena_array(&n->graph->model->arena, (size_t)count + 1, sizeof *ints);
    if (!ints)
        return poprt__rw_oom();
    memcpy(ints, v, (size_t)count * sizeof *ints);
    a->type = POPRT__ATTR_INTS;
    a->ints = ints;
    a->n = count;
    return POPRT_OK;
}

poprt_status poprt__rw_set_axes(poprt__node *n, const char *attr, int slot, int from,
                                const int64_t *axes, int64_t count)
{
    poprt__graph *g = n->graph;
    if (n->opset < from)
        return poprt__rw_set_ints(n, attr, axes, count);
    poprt__tensor *old = poprt__node_in(n, slot);
    poprt__tensor *t = poprt__rw_new_i64(g, "axes", axes, count);
    if (!t)
        return poprt__rw_oom();
    poprt_status st = n->n_inputs <= slot ? poprt__node_resize_inputs(n, slot + 1) : POPRT_OK;
    if (st)
        return st;
    poprt__node_set_input(n, slot, t);
    poprt__rw_drop_if_unused(g, old);
    return POPRT_OK;
}

poprt_status poprt__rw_poprt_domain(poprt__model *m)
{
    return poprt__model_ensure_opset(m, "ai.poprt", 1);
}

/* ---- rewiring --------------------------------------------------------------- */

void poprt__rw_set_output(poprt__node *n, int k, poprt__tensor *t)
{
    n->outputs[k] = t;
    t->producer = n;
    t->producer_slot = k;
}

void poprt__rw_take_output(poprt__graph *g, poprt__node *old, int slot, poprt__node *nw,
                           int nw_slot)
{
    poprt__tensor *t = old->outputs[slot];
    poprt__graph_remove_node(g, old);
    poprt__rw_set_output(nw, nw_slot, t);
}

poprt_status poprt__rw_set_meta(poprt__model *m, int *n, const char ***keys, const char ***vals,
                                const char *key, const char *val)
{
    val = poprt__arena_strdup(&m->arena, val);
    if (!val)
        return poprt__rw_oom();
    for (int i = 0; i < *n; i++)
        if (strcmp((*keys)[i], key) == 0) {
            (*vals)[i] = val;
            return POPRT_OK;
        }
    const char **k = poprt__arena_array(&m->arena, (size_t)*n + 1, sizeof *k);
    const char **w = poprt__arena_array(&m->arena, (size_t)*n + 1, sizeof *w);
    if (!k || !w)
        return poprt__rw_oom();
    if (*n) {
        memcpy(k, *keys, (size_t)*n * sizeof *k);
        memcpy(w, *vals, (size_t)*n * sizeof *w);
    }
    k[*n] = key;
    w[*n] = val;
    *keys = k;
    *vals = w;
    (*n)++;
    return POPRT_OK;
}

const char *poprt__rw_meta(const poprt__node *n, const char *key)
{
    for (int i = 0; i < n->n_meta; i++)
        if (strcmp(n->meta_keys[i], key) == 0)
            return n->meta_vals[i];
    return NULL;
}

poprt_status poprt__rw_copy_matmul_float32(poprt__model *m, poprt__node *to,
                                           const poprt__node *from)
{
    const char *v = poprt__rw_meta(from, POPRT__META_MATMUL_FLOAT32);
    if (!v)
        return POPRT_OK;
    return poprt__rw_set_meta(m, &to->n_meta, &to->meta_keys, &to->meta_vals,
                              POPRT__META_MATMUL_FLOAT32, v);
}

#define REPLACED_SCAN 256 /* nodes looked at, at most */
#define REPLACED_NAMES 64 /* names recorded, at most */

static int in_set(poprt__node *const *set, int n, const poprt__node *x)
{
    for (int i = 0; i < n; i++)
        if (set[i] == x)
            return 1;
    return 0;
}

/* p's outputs are read only by nodes of set (and are no graph output). */
static int read_only_by(const poprt__node *p, poprt__node *const *set, int n)
{
    for (int k = 0; k < p->n_outputs; k++) {
        const poprt__tensor *o = p->outputs[k];
        if (!o)
            continue;
        if (o->is_output || o->n_out_uses)
            return 0;
        for (const poprt__use *u = o->uses; u; u = u->next)
            if (!in_set(set, n, u->node))
                return 0;
    }
    return 1;
}

/* Records on nw the names of the n nodes of set it replaces (metadata
 * "poprt.replaced"; DOT pictures show it), the last first. A replaced
 * node's own record stands for it, so the names are those of the model as
 * loaded. */
static poprt_status record_replaced(poprt__graph *g, poprt__node *nw,
                                    const poprt__node *const *set, int n)
{
    char buf[4096];
    size_t len = 0;
    int names = 0;
    buf[0] = 0;
    for (int i = n - 1; i >= 0; i--) {
        const char *r = poprt__rw_meta(set[i], "poprt.replaced");
        const char *name = r ? r : set[i]->name;
        if (names == REPLACED_NAMES || len + strlen(name) + 5 >= sizeof buf) {
            snprintf(buf + len, sizeof buf - len, ",...");
            break;
        }
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", len ? "," : "", name);
        names++;
    }
    return poprt__rw_set_meta(g->model, &nw->n_meta, &nw->meta_keys, &nw->meta_vals,
                              "poprt.replaced", buf);
}

/* nw takes old's place reading its own inputs: it replaces old and the
 * nodes of g that then nothing but replaced nodes reads, found from old's
 * inputs backwards (recorded with record_replaced, the pattern's first
 * nodes first). */
static poprt_status note_replaced(poprt__graph *g, poprt__node *old, poprt__node *nw)
{
    poprt__node *set[REPLACED_SCAN];
    int n = 0;
    set[n++] = old;
    for (int i = 0; i < n && n < REPLACED_SCAN; i++)
        for (int k = 0; k < set[i]->n_inputs && n < REPLACED_SCAN; k++) {
            poprt__node *p = set[i]->inputs[k] ? set[i]->inputs[k]->producer : NULL;
            if (p && p != nw && p->graph == g && !p->removed && !in_set(set, n, p) &&
                read_only_by(p, set, n))
                set[n++] = p;
        }
    return record_replaced(g, nw, (const poprt__node *const *)set, n);
}

poprt__node *poprt__rw_replace(poprt__graph *g, poprt__node *old, const char *op,
                               const char *domain, int n_in, poprt__tensor *const *ins)
{
    poprt__node *n = poprt__rw_node(g, op, domain, old->name, n_in, 1);
    if (!n)
        return NULL;
    for (int i = 0; i < n_in; i++)
        poprt__node_set_input(n, i, ins[i]);
    if (note_replaced(g, old, n) != POPRT_OK)
        return NULL; /* the graph as it was, but for the new node nothing reads */
    poprt__rw_take_output(g, old, 0, n, 0);
    return n;
}

poprt_status poprt__rw_bypass(poprt__graph *g, poprt__node *n, poprt__tensor *in,
                              poprt__tensor *out, int *done)
{
    *done = 0;
    if (!in || !out || in == out)
        return POPRT_OK;
    if (!out->is_output) {
        poprt__graph_remove_node(g, n);
        poprt__graph_replace_uses(g, out, in);
        *done = 1;
        return POPRT_OK;
    }
    poprt__node *p = in->producer;
    if (!p || in->graph != g || p->graph != g || in->is_output || in->is_input ||
        in->is_initializer)
        return POPRT_OK;
    /* the producer of in writes the output tensor itself */
    int slot = -1;
    for (int k = 0; k < p->n_outputs; k++)
        if (p->outputs[k] == in)
            slot = k;
    if (slot < 0)
        return POPRT_OK;
    poprt__graph_remove_node(g, n);
    poprt__graph_replace_uses(g, in, out);
    poprt__rw_set_output(p, slot, out);
    in->producer = NULL;
    *done = 1;
    return POPRT_OK;
}

void poprt__rw_unset_initializer(poprt__tensor *t)
{
    t->is_initializer = 0;
    poprt__tensor_set_data(t, NULL);
    t->nbytes = 0;
}

void poprt__rw_remove_initializer(poprt__graph *g, poprt__tensor *t)
{
    size_t w = 0;
    for (size_t r = 0; r < g->initializers.len; r++)
        if (g->initializers.items[r] != t)
            g->initializers.items[w++] = g->initializers.items[r];
    g->initializers.len = w;
    poprt__rw_unset_initializer(t);
}

void poprt__rw_drop_if_unused(poprt__graph *g, poprt__tensor *t)
{
    if (!t || t->graph != g || !t->is_initializer || t->is_input || t->is_output ||
        poprt__tensor_use_count(g, t))
        return;
    poprt__rw_remove_initializer(g, t);
}

/* ---- patterns shared by several passes --------------------------------------- */

poprt_status poprt__rw_bn_affine(const poprt__node *bn, poprt__rw_bn *a)
{
    *a = (poprt__rw_bn){NULL, NULL, 0};
    if (!poprt__rw_is(bn, "BatchNormalization") || bn->n_inputs != 5 ||
        poprt__attr_i(bn, "training_mode", 0) != 0 || poprt__attr_i(bn, "spatial", 1) != 1 ||
        poprt__attr_i(bn, "is_test", 1) != 1)
        return POPRT_OK;
    for (int j = 1; j < bn->n_outputs; j++)
        if (bn->outputs[j] && poprt__tensor_use_count(bn->graph, bn->outputs[j]))
            return POPRT_OK;
    int64_t c = -1;
    for (int i = 1; i < 5; i++) {
        const poprt__tensor *p = bn->inputs[i];
        if (!poprt__rw_is_const(p) || !poprt__dtype_is_float(p->type.elem) || p->type.rank != 1 ||
            (c >= 0 && p->type.dims[0].value != c))
            return POPRT_OK;
        c = p->type.dims[0].value;
    }
    double *s = poprt__malloc((size_t)(c ? c : 1) * sizeof *s);
    double *t = poprt__malloc((size_t)(c ? c : 1) * sizeof *t);
    const void *v[5] = {NULL};
    int have = 1;
    for (int i = 1; i < 5; i++)
        have &= (v[i] = poprt__tensor_data(bn->inputs[i])) != NULL;
    if (!s || !t || !have) {
        poprt__free(s);
        poprt__free(t);
        return poprt__rw_oom();
    }
    double eps = poprt__attr_f(bn, "epsilon", 1e-5f);
    for (int64_t k = 0; k < c; k++) {
        double scale = poprt__load_f64(v[1], bn->inputs[1]->type.elem, k);
        double bias = poprt__load_f64(v[2], bn->inputs[2]->type.elem, k);
        double mean = poprt__load_f64(v[3], bn->inputs[3]->type.elem, k);
        double var = poprt__load_f64(v[4], bn->inputs[4]->type.elem, k);
        s[k] = scale / sqrt(var + eps);
        t[k] = bias - mean * s[k];
    }
    *a = (poprt__rw_bn){s, t, c};
    return POPRT_OK;
}

void poprt__rw_bn_free(poprt__rw_bn *a)
{
    poprt__free(a->s);
    poprt__free(a->t);
    a->s = a->t = NULL;
}

poprt_status poprt__rw_bn_replaced(poprt__graph *g, poprt__node *bn, poprt__node *nw,
                                   const poprt__node *also)
{
    const poprt__node *set[2] = {bn, also};
    if (record_replaced(g, nw, set, also ? 2 : 1) != POPRT_OK)
        return POPRT_STATUS_OUT_OF_MEMORY;
    poprt__rw_take_output(g, bn, 0, nw, 0);
    for (int k = 0; k < bn->n_inputs; k++) /* (its data input is no initializer) */
        poprt__rw_drop_if_unused(g, bn->inputs[k]);
    return POPRT_OK;
}

typedef struct init_key {
    poprt__tensor *t;
    uint64_t hash;
} init_key;

static int key_cmp(const void *a, const void *b)
{
    const init_key *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return x->t->id < y->t->id ? -1 : x->t->id > y->t->id;
}

static int same_const(const poprt__tensor *a, const poprt__tensor *b)
{
    if (a->type.elem != b->type.elem || a->type.rank != b->type.rank || a->nbytes != b->nbytes)
        return 0;
    for (int i = 0; i < a->type.rank; i++)
        if (a->type.dims[i].value != b->type.dims[i].value)
            return 0;
    return a->raw == b->raw || memcmp(a->raw, b->raw, a->nbytes) == 0;
}

poprt_status poprt__rw_dedup_initializers(poprt__graph *g, int *changed)
{
    size_t n = g->initializers.len, m = 0;
    if (n < 2)
        return POPRT_OK;
    init_key *keys = poprt__calloc(n, sizeof *keys);
    if (!keys)
        return poprt__rw_oom();
    for (size_t i = 0; i < n; i++) {
        poprt__tensor *t = g->initializers.items[i];
        /* inputs and outputs keep their names; strings hold pointers */
        if (t->is_input || t->is_output || !t->raw || !poprt__rw_is_const(t))
            continue;
        /* the bulk checksum: a byte-serial hash took a fifth of loading
         * bert_base (440 MB of weights) */
        keys[m].t = t;
        keys[m].hash = poprt__checksum64(t->raw, t->nbytes, (uint64_t)t->type.elem);
        /* read for the hash only: the model file's pages go back (a weight
         * read later is read from the file again) */
        poprt__model_drop_pages(g->model, t->raw, t->nbytes);
        m++;
    }
    qsort(keys, m, sizeof *keys, key_cmp);
    for (size_t i = 0; i < m; i++) {
        if (!keys[i].t)
            continue;
        for (size_t j = i + 1; j < m && keys[j].hash == keys[i].hash; j++) {
            poprt__tensor *dup = keys[j].t;
            if (!dup || !same_const(keys[i].t, dup))
                continue;
            poprt__graph_replace_uses(g, dup, keys[i].t);
            keys[j].t = NULL;
            poprt__rw_unset_initializer(dup);
            *changed = 1;
        }
    }
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        poprt__tensor *t = g->initializers.items[i];
        if (t->is_initializer)
            g->initializers.items[w++] = t;
    }
    g->initializers.len = w;
    poprt__free(keys);
    return POPRT_OK;
}

static void subst_type(poprt__type *t, const char *param, int64_t v)
{
    for (; t; t = t->inner) {
        if (t->kind != POPRT__KIND_TENSOR && t->kind != POPRT__KIND_UNKNOWN)
            continue;
        for (int d = 0; d < t->rank && t->dims; d++)
            if (t->dims[d].value < 0 && t->dims[d].param && !strcmp(t->dims[d].param, param)) {
                t->dims[d].value = v;
                t->dims[d].param = NULL;
            }
    }
}

static poprt_status subst_graph(poprt__graph *g, void *ctx, int *changed)
{
    const poprt__dim *fix = ctx;
    (void)changed;
    for (size_t i = 0; i < g->tensors.len; i++)
        subst_type(&((poprt__tensor *)g->tensors.items[i])->type, fix->param, fix->value);
    return POPRT_OK;
}

poprt_status poprt__rw_fix_dim(poprt__model *m, poprt__tensor *t, int d, int64_t v)
{
    poprt__dim *dim = &t->type.dims[d];
    if (dim->value >= 0)
        return dim->value == v ? POPRT_OK
                               : poprt__err(POPRT_STATUS_SHAPE_MISMATCH,
                                            "input '%s': dim %d is %lld, cannot set %lld", t->name,
                                            d, (long long)dim->value, (long long)v);
    if (dim->param) {
        /* a named dim is the same size wherever the name appears */
        poprt__dim fix = {v, dim->param};
        int unused = 0;
        poprt_status st = poprt__rw_each_graph(m->graph, subst_graph, &fix, &unused);
        if (st)
            return st;
    }
    dim->value = v;
    dim->param = NULL;
    return POPRT_OK;
}

/* ---- run loops --------------------------------------------------------------- */

static poprt_status nop_graph(poprt__graph *g, void *ctx, int *changed)
{
    poprt__tensor *(*pred)(poprt__node *n) = *(poprt__tensor *(**)(poprt__node *))ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        poprt__tensor *in = pred(n);
        if (!in || n->n_outputs < 1 || !n->outputs[0])
            continue;
        int extra = 0;
        for (int j = 1; j < n->n_outputs; j++)
            extra |= n->outputs[j] != NULL && poprt__tensor_use_count(g, n->outputs[j]) > 0;
        if (extra)
            continue;
        int done;
        poprt_status st = poprt__rw_bypass(g, n, in, n->outputs[0], &done);
        if (st)
            return st;
        if (done) {
            *changed = 1;
            i--;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__rw_remove_nops(poprt__model *m, poprt__tensor *(*pred)(poprt__node *n),
                                   int *changed)
{
    return poprt__rw_run_graphs(m, nop_graph, &pred, changed);
}

static poprt_status nodes_graph(poprt__graph *g, void *ctx, int *changed)
{
    const poprt__rw_node_pass *p = ctx;
    poprt__vec v = {0};
    poprt_status st = POPRT_OK;
    for (int round = 0, again = 1; again && !st && round < (p->rounds > 1 ? p->rounds : 1);
         round++) {
        again = 0;
        st = poprt__rw_collect(g, p->op, &v);
        for (size_t i = 0; !st && i < v.len; i++) {
            int done = 0;
            st = p->rewrite(g, v.items[i], p->ctx, &done);
            if (!st && done) {
                (*changed)++;
                again = 1;
            }
        }
    }
    poprt__vec_free(&v);
    if (!st && *changed && p->poprt_domain)
        st = poprt__rw_poprt_domain(g->model);
    return st;
}

poprt_status poprt__rw_run_nodes(const poprt__rw_node_pass *p, poprt__model *m, const char *args,
                                 int *changed)
{
    *changed = 0;
    poprt_status st = poprt__pass_no_args(p->pass, args);
    return st ? st : poprt__rw_each_graph(m->graph, nodes_graph, (void *)p, changed);
}

poprt_status poprt__rw_fixpoint(poprt__model *m, poprt__rw_match_fn fn, const void *ctx,
                                int *changed)
{
    poprt__graph *g = m->graph;
    *changed = 0;
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < g->nodes.len && !again; i++) {
            poprt_status st = fn(m, g->nodes.items[i], ctx, &again);
            if (st)
                return st;
        }
        *changed |= again;
    }
    if (*changed)
        poprt__graph_remove_dead(g);
    return POPRT_OK;
}

poprt__node *poprt__rw_cast(poprt__graph *g, poprt__tensor *in, poprt__tensor *out, int64_t to)
{
    poprt__node *c = poprt__rw_node1(g, "Cast", "", 1, &in, out, NULL);
    if (!c)
        return NULL;
    const int64_t opset = poprt__model_opset(g->model, "");
    if (opset <= 0 || opset >= 6)
        return poprt__rw_attr_i(c, "to", to) ? NULL : c;
    /* Cast-1 names the type: "FLOAT16" */
    char name[32];
    const char *n = poprt_dtype_name((poprt_dtype)to);
    size_t i = 0;
    for (; n[i] && i + 1 < sizeof name; i++)
        name[i] = (char)(n[i] >= 'a' && n[i] <= 'z' ? n[i] - 'a' + 'A' : n[i]);
    name[i] = '\0';
    return poprt__rw_attr_s(c, "to", name) ? NULL : c;
}

int poprt__rw_drop_initializer_inputs(poprt__model *m)
{
    poprt__graph *g = m->graph;
    size_t k = 0;
    int dropped = 0;
    for (size_t i = 0; i < g->inputs.len; i++) {
        poprt__tensor *t = g->inputs.items[i];
        if (t->is_initializer) {
            t->is_input = 0;
            dropped = 1;
        } else
            g->inputs.items[k++] = t;
    }
    g->inputs.len = k;
    return dropped;
}
