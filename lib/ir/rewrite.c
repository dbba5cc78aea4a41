/* Graph rewriting helpers shared by the passes. */
#include <string.h>
#include "ir/ir.h"

static int node_reads(const poprt__node *n, const poprt__tensor *t)
{
    for (int i = 0; i < n->n_inputs; i++)
        if (n->inputs[i] == t)
            return 1;
    return 0;
}

static int graph_reads(const poprt__graph *g, const poprt__tensor *t);

static int attrs_read(const poprt__node *n, const poprt__tensor *t)
{
    int c = 0;
    for (int a = 0; a < n->n_attrs; a++) {
        const poprt__attr *at = &n->attrs[a];
        if (at->type == POPRT__ATTR_GRAPH && at->g)
            c += graph_reads(at->g, t);
        for (int64_t k = 0; at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
            c += graph_reads(at->graphs[k], t);
    }
    return c;
}

/* Reads of t by nodes of g, its subgraphs, and g's outputs. */
static int graph_reads(const poprt__graph *g, const poprt__tensor *t)
{
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            c += n->inputs[k] == t;
        c += attrs_read(n, t);
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        c += g->outputs.items[i] == t;
    return c;
}

int poprt__tensor_use_count(const poprt__graph *g, const poprt__tensor *t)
{
    return graph_reads(g, t);
}

poprt_status poprt__graph_consumers(const poprt__graph *g, const poprt__tensor *t, poprt__vec *out)
{
    out->len = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if ((node_reads(n, t) || attrs_read(n, t)) && poprt__vec_push(out, n))
            return POPRT_STATUS_OUT_OF_MEMORY;
    }
    return POPRT_OK;
}

poprt__node *poprt__graph_sole_consumer(const poprt__graph *g, const poprt__tensor *t)
{
    poprt__node *found = NULL;
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.items[i] == t)
            return NULL;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        int reads = 0;
        for (int k = 0; k < n->n_inputs; k++)
            reads += n->inputs[k] == t;
        reads += attrs_read(n, t);
        if (!reads)
            continue;
        if (found || reads > 1)
            return NULL;
        found = n;
    }
    return found;
}

static void replace_in_graph(poprt__graph *g, poprt__tensor *from, poprt__tensor *to, int outputs)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] == from)
                n->inputs[k] = to;
        for (int a = 0; a < n->n_attrs; a++) {
            poprt__attr *at = &n->attrs[a];
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                replace_in_graph(at->g, from, to, 0);
            for (int64_t k = 0; at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                replace_in_graph(at->graphs[k], from, to, 0);
        }
    }
    if (outputs)
        for (size_t i = 0; i < g->outputs.len; i++)
            if (g->outputs.items[i] == from) {
                g->outputs.items[i] = to;
                from->is_output = 0;
                to->is_output = 1;
            }
}

poprt_status poprt__graph_replace_uses(poprt__graph *g, poprt__tensor *from, poprt__tensor *to)
{
    if (from == to)
        return POPRT_OK;
    replace_in_graph(g, from, to, 1);
    return POPRT_OK;
}

poprt_status poprt__tensor_rename(poprt__tensor *t, const char *name)
{
    poprt__graph *g = t->graph;
    if (poprt__graph_find(g, name))
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "tensor name '%s' is already used", name);
    const char *nn = poprt__arena_strdup(&g->model->arena, name);
    if (!nn)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    poprt__map_del(&g->by_name, t->name);
    t->name = nn;
    return poprt__map_put(&g->by_name, t->name, t);
}

static void remove_from(poprt__vec *v, const void *item)
{
    size_t k = 0;
    for (size_t i = 0; i < v->len; i++)
        if (v->items[i] != item)
            v->items[k++] = v->items[i];
    v->len = k;
}

int poprt__graph_remove_dead(poprt__graph *g)
{
    int removed = 0, again = 1;
    while (again) {
        again = 0;
        for (size_t i = g->nodes.len; i-- > 0;) {
            poprt__node *n = g->nodes.items[i];
            int used = 0;
            for (int j = 0; j < n->n_outputs && !used; j++)
                used = n->outputs[j] && (n->outputs[j]->is_output || graph_reads(g, n->outputs[j]));
            if (used)
                continue;
            poprt__graph_remove_node(g, n);
            removed++;
            again = 1;
        }
    }
    for (size_t i = g->initializers.len; i-- > 0;) {
        poprt__tensor *t = g->initializers.items[i];
        if (!t->is_output && !t->is_input && !graph_reads(g, t)) {
            remove_from(&g->initializers, t);
            t->is_initializer = 0;
            t->data = NULL;
            t->nbytes = 0;
        }
    }
    return removed;
}

poprt_status poprt__tensor_set_const(poprt__tensor *t, int32_t dtype, int rank, const int64_t *dims,
                                     const void *data, size_t nbytes)
{
    poprt__model *m = t->graph->model;
    void *copy = poprt__arena_memdup(&m->arena, data, nbytes ? nbytes : 1);
    if (!copy)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for constant '%s'", t->name);
    if (poprt__type_set_tensor(&m->arena, &t->type, dtype, rank, dims))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for constant '%s'", t->name);
    t->data = copy;
    t->nbytes = nbytes;
    t->producer = NULL;
    if (!t->is_initializer) {
        t->is_initializer = 1;
        if (poprt__vec_push(&t->graph->initializers, t))
            return POPRT_STATUS_OUT_OF_MEMORY;
    }
    return POPRT_OK;
}

poprt__tensor *poprt__graph_add_const(poprt__graph *g, const char *base, int32_t dtype, int rank,
                                      const int64_t *dims, const void *data, size_t nbytes)
{
    poprt__tensor *t = poprt__graph_new_tensor(g, base);
    if (!t || poprt__tensor_set_const(t, dtype, rank, dims, data, nbytes))
        return NULL;
    return t;
}

size_t poprt__graph_count_nodes(const poprt__graph *g)
{
    size_t c = g->nodes.len;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        for (int a = 0; a < n->n_attrs; a++) {
            const poprt__attr *at = &n->attrs[a];
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                c += poprt__graph_count_nodes(at->g);
            for (int64_t k = 0; at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                c += poprt__graph_count_nodes(at->graphs[k]);
        }
    }
    return c;
}

poprt_status poprt__model_ensure_opset(poprt__model *m, const char *domain, int64_t version)
{
    if (poprt__model_opset(m, domain))
        return POPRT_OK;
    poprt__opset *o = poprt__arena_array(&m->arena, (size_t)m->n_opsets + 1, sizeof *o);
    if (!o)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (m->n_opsets)
        memcpy(o, m->opsets, (size_t)m->n_opsets * sizeof *o);
    o[m->n_opsets].domain = poprt__arena_strdup(&m->arena, domain);
    o[m->n_opsets].version = version;
    if (!o[m->n_opsets].domain)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    m->opsets = o;
    m->n_opsets++;
    return POPRT_OK;
}
