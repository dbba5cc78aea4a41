/* Helpers shared by the core-group passes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/dtype.h"
#include "passes/util_core.h"

poprt_status poprt__pc_each_graph(poprt__graph *g, poprt__pc_graph_fn fn, void *ctx, int *changed)
{
    /* snapshot: fn may add or remove nodes of g, but not of its subgraphs
     * while they are being visited */
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int a = 0; a < n->n_attrs; a++) {
            poprt__attr *at = &n->attrs[a];
            poprt_status st = POPRT_OK;
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                st = poprt__pc_each_graph(at->g, fn, ctx, changed);
            for (int64_t k = 0; !st && at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                if (at->graphs[k])
                    st = poprt__pc_each_graph(at->graphs[k], fn, ctx, changed);
            if (st)
                return st;
        }
    }
    return fn(g, ctx, changed);
}

void poprt__pc_set_output(poprt__node *n, int k, poprt__tensor *out)
{
    n->outputs[k] = out;
    out->producer = n;
    out->producer_slot = k;
}

poprt_status poprt__pc_bypass(poprt__graph *g, poprt__node *n, poprt__tensor *in,
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
    poprt__pc_set_output(p, slot, out);
    in->producer = NULL;
    *done = 1;
    return POPRT_OK;
}

int poprt__pc_is_const(const poprt__tensor *t)
{
    return t && t->data && t->type.kind == POPRT__KIND_TENSOR && t->type.rank >= 0 &&
           poprt__type_is_static(&t->type) && t->type.elem != POPRT_DTYPE_STRING;
}

int64_t poprt__pc_const_ints(const poprt__tensor *t, int64_t *vals, int64_t max)
{
    if (!poprt__pc_is_const(t) || !poprt__dtype_is_int(t->type.elem))
        return -1;
    int64_t n = poprt__type_numel(&t->type);
    if (n < 0 || n > max)
        return -1;
    for (int64_t i = 0; i < n; i++)
        vals[i] = poprt__load_i64(t->data, t->type.elem, i);
    return n;
}

int poprt__pc_const_all_equal(const poprt__tensor *t, double v)
{
    if (!poprt__pc_is_const(t) || t->type.elem == POPRT_DTYPE_BOOL)
        return 0;
    int32_t e = t->type.elem;
    if (!poprt__dtype_is_float(e) && !poprt__dtype_is_int(e))
        return 0;
    int64_t n = poprt__type_numel(&t->type);
    for (int64_t i = 0; i < n; i++)
        if (poprt__load_f64(t->data, e, i) != v)
            return 0;
    return 1;
}

int poprt__pc_static_dims(const poprt__tensor *t, int64_t *dims, int *rank)
{
    if (!t || t->type.kind != POPRT__KIND_TENSOR || t->type.rank < 0 ||
        t->type.rank > POPRT__MAX_RANK)
        return 0;
    *rank = t->type.rank;
    for (int i = 0; i < t->type.rank; i++) {
        if (t->type.dims[i].value < 0)
            return 0;
        dims[i] = t->type.dims[i].value;
    }
    return 1;
}

int64_t poprt__pc_attr_or_input_ints(const poprt__node *n, const char *attr, int slot, int from,
                                     int64_t *vals, int64_t max)
{
    if (n->opset >= from) {
        poprt__tensor *t = poprt__node_in(n, slot);
        if (!t)
            return -2;
        return poprt__pc_const_ints(t, vals, max);
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

poprt__tensor *poprt__pc_add_ints(poprt__graph *g, const char *base, const int64_t *vals, int64_t n)
{
    int64_t d = n;
    return poprt__graph_add_const(g, base, POPRT_DTYPE_INT64, 1, &d, vals,
                                  (size_t)n * sizeof(int64_t));
}

int poprt__pc_is(const poprt__node *n, const char *op_type)
{
    return (!n->domain[0] || strcmp(n->domain, "ai.onnx") == 0) && strcmp(n->op_type, op_type) == 0;
}

typedef struct nop_ctx {
    poprt__tensor *(*pred)(poprt__node *n);
} nop_ctx;

static poprt_status nop_graph(poprt__graph *g, void *ctx, int *changed)
{
    nop_ctx *c = ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        poprt__tensor *in = c->pred(n);
        if (!in || n->n_outputs < 1 || !n->outputs[0])
            continue;
        int extra = 0;
        for (int j = 1; j < n->n_outputs; j++)
            extra |= n->outputs[j] != NULL && poprt__tensor_use_count(g, n->outputs[j]) > 0;
        if (extra)
            continue;
        int done;
        poprt_status st = poprt__pc_bypass(g, n, in, n->outputs[0], &done);
        if (st)
            return st;
        if (done) {
            *changed = 1;
            i--;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__pc_remove_nops(poprt__model *m, poprt__tensor *(*pred)(poprt__node *n),
                                   int *changed)
{
    nop_ctx c = {pred};
    *changed = 0;
    return poprt__pc_each_graph(m->graph, nop_graph, &c, changed);
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
    return a->data == b->data || memcmp(a->data, b->data, a->nbytes) == 0;
}

poprt_status poprt__pc_dedup_initializers(poprt__graph *g, int *changed)
{
    size_t n = g->initializers.len, m = 0;
    if (n < 2)
        return POPRT_OK;
    init_key *keys = poprt__calloc(n, sizeof *keys);
    if (!keys)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        poprt__tensor *t = g->initializers.items[i];
        /* inputs and outputs keep their names; strings hold pointers */
        if (t->is_input || t->is_output || !t->data || !poprt__pc_is_const(t))
            continue;
        uint64_t h = 1469598103934665603ull ^ (uint64_t)t->type.elem;
        const unsigned char *p = t->data;
        for (size_t k = 0; k < t->nbytes; k++)
            h = (h ^ p[k]) * 1099511628211ull;
        keys[m].t = t;
        keys[m].hash = h ^ t->nbytes;
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
            dup->is_initializer = 0;
            dup->data = NULL;
            dup->nbytes = 0;
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

/* ---- BatchNormalization in inference form ---- */
int poprt__pc_bn_affine(const poprt__node *bn, double **s_out, double **t_out, int64_t *c_out)
{
    *s_out = *t_out = NULL;
    if (!poprt__pc_is(bn, "BatchNormalization") || bn->n_inputs != 5 ||
        poprt__attr_i(bn, "training_mode", 0) != 0 || poprt__attr_i(bn, "spatial", 1) != 1 ||
        poprt__attr_i(bn, "is_test", 1) != 1)
        return 0;
    for (int j = 1; j < bn->n_outputs; j++)
        if (bn->outputs[j] && poprt__tensor_use_count(bn->graph, bn->outputs[j]))
            return 0;
    int64_t c = -1;
    for (int i = 1; i < 5; i++) {
        const poprt__tensor *p = bn->inputs[i];
        if (!poprt__pc_is_const(p) || !poprt__dtype_is_float(p->type.elem) || p->type.rank != 1 ||
            (c >= 0 && p->type.dims[0].value != c))
            return 0;
        c = p->type.dims[0].value;
    }
    double *s = poprt__malloc((size_t)(c ? c : 1) * sizeof *s);
    double *t = poprt__malloc((size_t)(c ? c : 1) * sizeof *t);
    if (!s || !t) {
        poprt__free(s);
        poprt__free(t);
        return -1;
    }
    double eps = poprt__attr_f(bn, "epsilon", 1e-5f);
    for (int64_t k = 0; k < c; k++) {
        double scale = poprt__load_f64(bn->inputs[1]->data, bn->inputs[1]->type.elem, k);
        double bias = poprt__load_f64(bn->inputs[2]->data, bn->inputs[2]->type.elem, k);
        double mean = poprt__load_f64(bn->inputs[3]->data, bn->inputs[3]->type.elem, k);
        double var = poprt__load_f64(bn->inputs[4]->data, bn->inputs[4]->type.elem, k);
        s[k] = scale / sqrt(var + eps);
        t[k] = bias - mean * s[k];
    }
    *s_out = s;
    *t_out = t;
    *c_out = c;
    return 1;
}

void poprt__pc_drop_if_unused(poprt__graph *g, poprt__tensor *t)
{
    if (!t || t->graph != g || !t->is_initializer || t->is_input || t->is_output ||
        poprt__tensor_use_count(g, t))
        return;
    size_t w = 0;
    for (size_t r = 0; r < g->initializers.len; r++)
        if (g->initializers.items[r] != t)
            g->initializers.items[w++] = g->initializers.items[r];
    g->initializers.len = w;
    t->is_initializer = 0;
    t->data = NULL;
    t->nbytes = 0;
}

poprt_status poprt__pc_set_axes(poprt__node *n, const char *attr, int slot, int from,
                                const int64_t *axes, int64_t count)
{
    poprt__graph *g = n->graph;
    if (n->opset >= from) {
        poprt__tensor *old = poprt__node_in(n, slot);
        poprt__tensor *t = poprt__pc_add_ints(g, "axes", axes, count);
        if (!t)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        poprt_status st = n->n_inputs <= slot ? poprt__node_resize_inputs(n, slot + 1) : POPRT_OK;
        if (st)
            return st;
        poprt__node_set_input(n, slot, t);
        poprt__pc_drop_if_unused(g, old);
        return POPRT_OK;
    }
    poprt__attr *a = NULL;
    for (int k = 0; k < n->n_attrs; k++)
        if (!strcmp(n->attrs[k].name, attr))
            a = &n->attrs[k];
    if (!a && !(a = poprt__node_add_attr(n, attr, POPRT__ATTR_INTS)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    int64_t *ints = poprt__arena_array(&g->model->arena, (size_t)count + 1, sizeof *ints);
    if (!ints)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    memcpy(ints, axes, (size_t)count * sizeof *ints);
    a->type = POPRT__ATTR_INTS;
    a->ints = ints;
    a->n = count;
    return POPRT_OK;
}

/* Every value of dtype `from` is exactly representable in `to`. */
int poprt__pc_cast_exact(int32_t from, int32_t to)
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

/* ---- fixing symbolic dims ---- */
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

poprt_status poprt__pc_fix_dim(poprt__model *m, poprt__tensor *t, int d, int64_t v)
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
        poprt_status st = poprt__pc_each_graph(m->graph, subst_graph, &fix, &unused);
        if (st)
            return st;
    }
    dim->value = v;
    dim->param = NULL;
    return POPRT_OK;
}
