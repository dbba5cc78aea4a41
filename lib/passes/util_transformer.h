/* Small pattern-matching and rewriting helpers shared by the transformer
 * passes (erf_gelu_pattern, layer_norm_pattern, fused_attention, ...).
 * Header-only (static inline) so the pass lists alone drive the build. */
#ifndef POPRT_PASSES_UTIL_TRANSFORMER_H
#define POPRT_PASSES_UTIL_TRANSFORMER_H

#include <math.h>
#include <string.h>
#include "ir/dtype.h"
#include "passes/passes.h"

/* n is the ONNX-domain op `op`. */
static inline int tf_is(const poprt__node *n, const char *op)
{
    return n && (!n->domain[0] || strcmp(n->domain, "ai.onnx") == 0) &&
           strcmp(n->op_type, op) == 0;
}

/* Producer of t when it is the ONNX op `op`, else NULL. */
static inline poprt__node *tf_prod(const poprt__tensor *t, const char *op)
{
    poprt__node *p = t ? t->producer : NULL;
    return tf_is(p, op) ? p : NULL;
}

/* Constant value of t: an initializer / folded value, or a Constant node's
 * value attribute. Returns 1 and fills data, elem, numel. */
static inline int tf_const(const poprt__tensor *t, const void **data, int32_t *elem, int64_t *numel)
{
    if (!t)
        return 0;
    if (t->data) {
        int64_t n = poprt__type_numel(&t->type);
        size_t es = poprt__dtype_size((poprt_dtype)t->type.elem);
        if (n < 0 || !es || (size_t)n * es > t->nbytes)
            return 0;
        *data = t->data;
        *elem = t->type.elem;
        *numel = n;
        return 1;
    }
    const poprt__node *p = t->producer;
    if (!tf_is(p, "Constant"))
        return 0;
    const poprt__attr *a;
    if ((a = poprt__node_attr(p, "value")) && a->t && a->t->data)
        return tf_const(a->t, data, elem, numel);
    if ((a = poprt__node_attr(p, "value_float"))) {
        *data = &a->f;
        *elem = POPRT_DTYPE_FLOAT;
        *numel = 1;
        return 1;
    }
    if ((a = poprt__node_attr(p, "value_int"))) {
        *data = &a->i;
        *elem = POPRT_DTYPE_INT64;
        *numel = 1;
        return 1;
    }
    return 0;
}

/* t is a constant with one element (any rank): its value. */
static inline int tf_scalar(const poprt__tensor *t, double *v)
{
    const void *d;
    int32_t e;
    int64_t n;
    if (!tf_const(t, &d, &e, &n) || n != 1 ||
        !(poprt__dtype_is_float(e) || poprt__dtype_is_int(e)))
        return 0;
    *v = poprt__dtype_is_float(e) ? poprt__load_f64(d, e, 0) : (double)poprt__load_i64(d, e, 0);
    return 1;
}

/* t is a one-element constant within rel of want. */
static inline int tf_scalar_is(const poprt__tensor *t, double want, double rel)
{
    double v;
    return tf_scalar(t, &v) && fabs(v - want) <= rel * fabs(want) + 1e-12;
}

/* float32 constant data of t (NULL if t is not one). */
static inline const float *tf_f32(const poprt__tensor *t, int64_t *numel)
{
    const void *d;
    int32_t e;
    if (!tf_const(t, &d, &e, numel) || e != POPRT_DTYPE_FLOAT)
        return NULL;
    return d;
}

/* Integer constant data of t as int64 values in the model arena. */
static inline const int64_t *tf_ints(poprt__model *m, const poprt__tensor *t, int64_t *numel)
{
    const void *d;
    int32_t e;
    if (!tf_const(t, &d, &e, numel) || !poprt__dtype_is_int(e))
        return NULL;
    int64_t *v = poprt__arena_array(&m->arena, (size_t)(*numel ? *numel : 1), sizeof *v);
    for (int64_t i = 0; v && i < *numel; i++)
        v[i] = poprt__load_i64(d, e, i);
    return v;
}

/* For a two-input node reading t: the other input, else NULL. */
static inline poprt__tensor *tf_other(const poprt__node *n, const poprt__tensor *t)
{
    if (!n || n->n_inputs != 2)
        return NULL;
    if (n->inputs[0] == t)
        return n->inputs[1];
    if (n->inputs[1] == t)
        return n->inputs[0];
    return NULL;
}

/* The only reader of t (in g) when it is the ONNX op `op`. */
static inline poprt__node *tf_next(const poprt__graph *g, const poprt__tensor *t, const char *op)
{
    poprt__node *n = poprt__graph_sole_consumer(g, t);
    return tf_is(n, op) ? n : NULL;
}

static inline int tf_in_graph(const poprt__graph *g, const poprt__node *n)
{
    for (size_t i = 0; i < g->nodes.len; i++)
        if (g->nodes.items[i] == n)
            return 1;
    return 0;
}

/* A new node named from base (unique in the model). */
static inline poprt__node *tf_node(poprt__graph *g, const char *op, const char *domain,
                                   const char *base, int n_in, int n_out)
{
    const char *name = poprt__model_unique_name(g->model, base ? base : op);
    return name ? poprt__graph_add_node(g, op, domain, name, n_in, n_out) : NULL;
}

static inline poprt_status tf_oom(void)
{
    return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
}

static inline poprt_status tf_attr_i(poprt__node *n, const char *name, int64_t v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INT);
    if (!a)
        return tf_oom();
    a->i = v;
    return POPRT_OK;
}

static inline poprt_status tf_attr_f(poprt__node *n, const char *name, float v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_FLOAT);
    if (!a)
        return tf_oom();
    a->f = v;
    return POPRT_OK;
}

static inline poprt_status tf_attr_s(poprt__node *n, const char *name, const char *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_STRING);
    if (!a || !(a->s = poprt__arena_strdup(&n->graph->model->arena, v)))
        return tf_oom();
    a->s_len = strlen(v);
    return POPRT_OK;
}

static inline poprt_status tf_attr_ints(poprt__node *n, const char *name, int64_t count,
                                        const int64_t *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS);
    if (!a)
        return tf_oom();
    a->n = count;
    a->ints = poprt__arena_memdup(&n->graph->model->arena, v,
                                  (size_t)(count ? count : 1) * sizeof *v);
    return a->ints ? POPRT_OK : tf_oom();
}

/* nw takes over old's output `slot` (the tensor keeps its name, so graph
 * outputs stay as they are), and old leaves the graph. */
static inline void tf_take_output(poprt__graph *g, poprt__node *old, int slot, poprt__node *nw,
                                  int nw_slot)
{
    poprt__tensor *t = old->outputs[slot];
    poprt__graph_remove_node(g, old);
    nw->outputs[nw_slot] = t;
    t->producer = nw;
    t->producer_slot = nw_slot;
}

/* Domain for a libpoprt operator, importing ai.poprt v1 when needed. */
static inline poprt_status tf_poprt_domain(poprt__model *m)
{
    return poprt__model_ensure_opset(m, "ai.poprt", 1);
}

/* Static dims of t's type (rank returned, -1 when unknown). */
static inline int tf_dims(const poprt__tensor *t, int64_t *dims)
{
    if (!t || t->type.kind != POPRT__KIND_TENSOR || t->type.rank < 0 ||
        t->type.rank > POPRT__MAX_RANK)
        return -1;
    for (int i = 0; i < t->type.rank; i++)
        dims[i] = t->type.dims ? t->type.dims[i].value : -1;
    return t->type.rank;
}

/* Output dims of a Reshape node: its inferred type, with dims the type does
 * not know taken from a constant shape input (Constant nodes are not folded
 * in the IR, so the type alone often lacks them). Rank or -1. */
static inline int tf_reshape_dims(poprt__model *m, const poprt__node *rs, int64_t *dims)
{
    int r = tf_dims(rs->outputs[0], dims);
    int64_t n;
    const int64_t *shape = rs->n_inputs > 1 ? tf_ints(m, rs->inputs[1], &n) : NULL;
    if (!shape || n > POPRT__MAX_RANK || (r >= 0 && n != r))
        return r;
    for (int i = 0; i < (int)n; i++)
        if (r < 0 || dims[i] < 0)
            dims[i] = shape[i] > 0 ? shape[i] : -1;
    return (int)n;
}

/* Transpose n has exactly permutation p (length r). */
static inline int tf_perm_is(const poprt__node *n, int r, const int64_t *p)
{
    int64_t cnt;
    const int64_t *perm = poprt__attr_ints(n, "perm", &cnt);
    if (!perm || cnt != r)
        return 0;
    for (int i = 0; i < r; i++)
        if (perm[i] != p[i])
            return 0;
    return 1;
}

/* Gelu tail shared by erf_gelu_pattern and gelu_pattern: a = 1 + f(x) and
 * the result is x * a * 0.5 in any of the orders exporters write. Returns
 * the last Mul (whose output is the Gelu value), or NULL. */
static inline poprt__node *tf_gelu_tail(const poprt__graph *g, const poprt__tensor *a,
                                        const poprt__tensor *x)
{
    poprt__node *m1 = tf_next(g, a, "Mul");
    if (!m1)
        return NULL;
    poprt__tensor *o = tf_other(m1, a);
    if (o == x) { /* (x * a) * 0.5 */
        poprt__node *m2 = tf_next(g, m1->outputs[0], "Mul");
        return m2 && tf_scalar_is(tf_other(m2, m1->outputs[0]), 0.5, 1e-6) ? m2 : NULL;
    }
    if (tf_scalar_is(o, 0.5, 1e-6)) { /* (a * 0.5) * x */
        poprt__node *m2 = tf_next(g, m1->outputs[0], "Mul");
        return m2 && tf_other(m2, m1->outputs[0]) == x ? m2 : NULL;
    }
    poprt__node *h = tf_prod(o, "Mul"); /* a * (x * 0.5) */
    if (h && tf_other(h, x) && tf_scalar_is(tf_other(h, x), 0.5, 1e-6) &&
        poprt__graph_sole_consumer(g, o) == m1)
        return m1;
    return NULL;
}

/* Replaces the pattern ending at `last` by Gelu(x) (ONNX Gelu from opset 20,
 * else ai.poprt.Gelu); dead pattern nodes are left for remove_dead. */
static inline poprt_status tf_make_gelu(poprt__model *m, poprt__node *last, poprt__tensor *x,
                                        const char *approximate)
{
    poprt__graph *g = m->graph;
    int onnx = poprt__model_opset(m, "") >= 20;
    poprt_status st = onnx ? POPRT_OK : tf_poprt_domain(m);
    if (st)
        return st;
    poprt__node *n = tf_node(g, "Gelu", onnx ? "" : "ai.poprt", last->name, 1, 1);
    if (!n)
        return tf_oom();
    poprt__node_set_input(n, 0, x);
    if (strcmp(approximate, "none") && (st = tf_attr_s(n, "approximate", approximate)))
        return st;
    tf_take_output(g, last, 0, n, 0);
    return POPRT_OK;
}

/* The fused_attention rewrite (lib/passes/fused_attention.c), also run by
 * packed_transformer. */
poprt_status poprt__tf_fuse_attention(poprt__model *m, int *changed);
/* mul ends the BERT extended-mask chain (lib/passes/insert_attention_mask.c):
 * the rank-2 mask it starts from, the Mul's value and the Cast's type. */
int poprt__tf_match_mask_chain(poprt__model *m, poprt__node *mul, poprt__tensor **raw,
                               float *value, int32_t *to);
/* One MatMul (plus one Add when with_add) reading the shared input instead
 * of the n given ones (lib/passes/merge_matmul.c); *merged when it did. */
poprt_status poprt__tf_merge_matmuls(poprt__model *m, poprt__node **mms, int n, int with_add,
                                     int *merged);
/* Node names from pass arguments: "a,b,c" or "nodes=[a,b,c]" (names point
 * into buf). Returns the count, or -1 on malformed text. */
static inline int tf_name_list(const char *text, char *buf, size_t bufsz, const char **names,
                               int max)
{
    if (!text || !*text)
        return 0;
    if (strlen(text) >= bufsz)
        return -1;
    strcpy(buf, text);
    char *p = buf;
    if (strncmp(p, "nodes=", 6) == 0)
        p += 6;
    else if (strchr(p, '='))
        return -1;
    if (*p == '[') {
        p++;
        char *e = strrchr(p, ']');
        if (!e)
            return -1;
        *e = 0;
    }
    int n = 0;
    while (*p) {
        char *c = strchr(p, ',');
        if (c)
            *c = 0;
        while (*p == ' ')
            p++;
        if (*p) {
            if (n == max)
                return -1;
            names[n++] = p;
        }
        if (!c)
            break;
        p = c + 1;
    }
    return n;
}

/* The node of g named `name`, or NULL. */
static inline poprt__node *tf_find_node(const poprt__graph *g, const char *name)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (strcmp(n->name, name) == 0)
            return n;
    }
    return NULL;
}

#endif
