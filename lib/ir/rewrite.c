/* Graph rewriting helpers shared by the passes. */
#include <string.h>
#include "ir/ir.h"
#include "ir/op.h"

/* Reads of t by the nodes of g (and their subgraphs) and by the outputs of g
 * and of its subgraphs: the slow count, for a tensor of an enclosing graph. */
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

/* Every read of t lies in t's own graph or below it, so when g is t's graph
 * the use list and the output count are the whole answer. */
int poprt__tensor_use_count(const poprt__graph *g, const poprt__tensor *t)
{
    return t->graph == g ? t->n_uses + t->n_out_uses : graph_reads(g, t);
}

/* The node of g that holds n (n itself, or the node whose subgraph holds it). */
static poprt__node *node_in(const poprt__graph *g, poprt__node *n)
{
    while (n && n->graph != g)
        n = n->graph->parent_node;
    return n;
}

poprt_status poprt__graph_consumers(const poprt__graph *g, const poprt__tensor *t, poprt__vec *out)
{
    out->len = 0;
    if (t->graph != g || t->n_out_uses) {
        for (size_t i = 0; i < g->nodes.len; i++) {
            poprt__node *n = g->nodes.items[i];
            int reads = attrs_read(n, t);
            for (int k = 0; k < n->n_inputs && !reads; k++)
                reads = n->inputs[k] == t;
            if (reads && poprt__vec_push(out, n))
                return POPRT_STATUS_OUT_OF_MEMORY;
        }
        return POPRT_OK;
    }
    poprt_status st = POPRT_OK;
    for (const poprt__use *u = t->uses; u && !st; u = u->next) {
        poprt__node *n = node_in(g, u->node);
        /* marked once pushed: a node marked and not pushed (the push
         * failed) would keep its mark, and later queries on this graph
         * would leave it out */
        if (n && !n->seen && !(st = poprt__vec_push(out, n)))
            n->seen = 1;
    }
    for (size_t i = 0; i < out->len; i++)
        ((poprt__node *)out->items[i])->seen = 0;
    return st ? POPRT_STATUS_OUT_OF_MEMORY : POPRT_OK;
}

poprt__node *poprt__graph_sole_consumer(const poprt__graph *g, const poprt__tensor *t)
{
    if (t->graph == g && !t->n_out_uses)
        return t->n_uses == 1 ? node_in(g, t->uses->node) : NULL;
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

poprt_status poprt__graph_replace_uses(poprt__graph *g, poprt__tensor *from, poprt__tensor *to)
{
    if (from == to)
        return POPRT_OK;
    /* the reads within g: all of from's when g is its graph */
    for (poprt__use *u = from->uses, *next; u; u = next) {
        next = u->next;
        if (from->graph == g || poprt__node_within(u->node, g))
            poprt__node_set_input(u->node, u->slot, to);
    }
    for (size_t i = 0; from->n_out_uses && i < g->outputs.len; i++)
        if (g->outputs.items[i] == from) {
            poprt__graph_set_output(g, i, to);
            from->is_output = 0;
            to->is_output = 1;
        }
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

static int node_unused(const poprt__graph *g, const poprt__node *n)
{
    if (n->op && (n->op->flags & POPRT__OP_EFFECT))
        return 0;
    for (int j = 0; j < n->n_outputs; j++) {
        const poprt__tensor *t = n->outputs[j];
        if (t && (t->is_output || poprt__tensor_use_count(g, t)))
            return 0;
    }
    return 1;
}

/* A node whose outputs nothing reads goes, and with it its reads: the
 * producers it read from are looked at again (a stack of candidates, so the
 * whole sweep is linear in the graph's size). */
int poprt__graph_remove_dead_nodes(poprt__graph *g)
{
    poprt__vec stack = {0};
    int removed = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (poprt__vec_push(&stack, g->nodes.items[i]))
            break; /* out of memory: fewer candidates, never a wrong removal */
    while (stack.len) {
        poprt__node *n = stack.items[--stack.len];
        if (n->removed || n->graph != g || !node_unused(g, n))
            continue;
        poprt__graph_detach_node(n);
        removed++;
        for (int k = 0; k < n->n_inputs; k++) {
            poprt__node *p = n->inputs[k] ? n->inputs[k]->producer : NULL;
            if (p && !p->removed && p->graph == g)
                (void)poprt__vec_push(&stack, p);
        }
    }
    poprt__vec_free(&stack);
    if (removed)
        poprt__graph_compact(g);
    return removed;
}

int poprt__graph_remove_dead(poprt__graph *g)
{
    int removed = poprt__graph_remove_dead_nodes(g);
    size_t k = 0;
    for (size_t i = 0; i < g->initializers.len; i++) {
        poprt__tensor *t = g->initializers.items[i];
        if (!t->is_output && !t->is_input && !poprt__tensor_use_count(g, t)) {
            t->is_initializer = 0;
            poprt__tensor_set_data(t, NULL);
            t->nbytes = 0;
        } else
            g->initializers.items[k++] = t;
    }
    g->initializers.len = k;
    return removed;
}

/* As poprt__tensor_set_const for data that poprt__model_fold_alloc of t's
 * model returned: used in place, not copied. */
static poprt_status adopt_const(poprt__tensor *t, int32_t dtype, int rank, const int64_t *dims,
                                const void *data, size_t nbytes)
{
    poprt__model *m = t->graph->model;
    if (poprt__type_set_tensor(&m->arena, &t->type, dtype, rank, dims))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for constant '%s'", t->name);
    poprt__tensor_set_data(t, data);
    t->nbytes = nbytes;
    t->producer = NULL;
    if (!t->is_initializer) {
        t->is_initializer = 1;
        if (poprt__vec_push(&t->graph->initializers, t))
            return POPRT_STATUS_OUT_OF_MEMORY;
    }
    return POPRT_OK;
}

poprt_status poprt__tensor_set_const(poprt__tensor *t, int32_t dtype, int rank, const int64_t *dims,
                                     const void *data, size_t nbytes)
{
    /* a large value in a blob of its own, as folding makes them: clones of
     * the model share it (a session compiles a clone; BERT's fused QKV
     * weights, 85 MB, were copied by every clone) and it is freed once no
     * tensor reads it (poprt__model_sweep_folded) */
    void *copy = poprt__model_fold_alloc(t->graph->model, nbytes);
    if (!copy)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for constant '%s'", t->name);
    if (nbytes)
        memcpy(copy, data, nbytes);
    return adopt_const(t, dtype, rank, dims, copy, nbytes);
}

poprt__tensor *poprt__graph_add_const(poprt__graph *g, const char *base, int32_t dtype, int rank,
                                      const int64_t *dims, const void *data, size_t nbytes)
{
    poprt__tensor *t = poprt__graph_new_tensor(g, base);
    if (!t || poprt__tensor_set_const(t, dtype, rank, dims, data, nbytes))
        return NULL;
    return t;
}

poprt__tensor *poprt__graph_add_const_buffer(poprt__graph *g, const char *base, int32_t dtype,
                                             int rank, const int64_t *dims, size_t nbytes,
                                             void **data)
{
    poprt__tensor *t = poprt__graph_new_tensor(g, base);
    *data = t ? poprt__model_fold_alloc(g->model, nbytes) : NULL;
    if (!*data || adopt_const(t, dtype, rank, dims, *data, nbytes)) {
        *data = NULL;
        return NULL;
    }
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

poprt_status poprt__user_inputs(const poprt__graph *g, poprt__vec *out)
{
    for (size_t i = 0; i < g->inputs.len; i++) {
        poprt__tensor *t = g->inputs.items[i];
        if (!t->is_initializer && !t->raw && poprt__vec_push(out, t))
            return POPRT_STATUS_OUT_OF_MEMORY;
    }
    return POPRT_OK;
}

poprt_status poprt__set_input_shape(poprt__model *m, const char *name, const int64_t *dims, int rank)
{
    poprt__tensor *t = poprt__map_get(&m->graph->by_name, name);
    if (!t || !t->is_input || t->is_initializer)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "input '%s' not found", name);
    if (rank < 0 || rank > POPRT__MAX_RANK)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "input '%s': rank %d out of range", name, rank);
    if (t->type.kind != POPRT__KIND_TENSOR && t->type.kind != POPRT__KIND_UNKNOWN)
        return poprt__err(POPRT_STATUS_SHAPE_MISMATCH, "input '%s' is not a tensor", name);
    if (t->type.rank >= 0 && t->type.rank != rank)
        return poprt__err(POPRT_STATUS_SHAPE_MISMATCH, "input '%s' has rank %d, not %d", name,
                          t->type.rank, rank);
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "input '%s': dim %d is negative", name, i);
        if (t->type.rank >= 0 && t->type.dims[i].value >= 0 && t->type.dims[i].value != dims[i])
            return poprt__err(POPRT_STATUS_SHAPE_MISMATCH,
                              "input '%s': dim %d is fixed to %lld, cannot set %lld", name, i,
                              (long long)t->type.dims[i].value, (long long)dims[i]);
    }
    int32_t elem = t->type.elem;
    if (poprt__type_set_tensor(&m->arena, &t->type, elem, rank, dims))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "input '%s': out of memory", name);
    return POPRT_OK;
}

poprt_status poprt__free_input_dim(poprt__model *m, const char *name, int d, const char *param)
{
    poprt__tensor *t = poprt__map_get(&m->graph->by_name, name);
    if (!t || !t->is_input || t->is_initializer)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "input '%s' not found", name);
    if (t->type.kind != POPRT__KIND_TENSOR || d < 0 || d >= t->type.rank)
        return poprt__err(POPRT_STATUS_SHAPE_MISMATCH, "input '%s' has no dim %d", name, d);
    const char *p = poprt__arena_strdup(&m->arena, param);
    if (!p)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "input '%s': out of memory", name);
    t->type.dims[d].value = -1;
    t->type.dims[d].param = p;
    /* what was inferred from the fixed dim (node outputs, the graph's
     * declared outputs and value infos) is inferred again */
    const poprt__graph *g = m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] && n->outputs[k]->type.kind == POPRT__KIND_TENSOR)
                n->outputs[k]->type.rank = -1;
    }
    return poprt__graph_infer(m->graph, NULL);
}
