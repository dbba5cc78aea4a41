/* IR construction and lookup. */
#include <string.h>
#include "ir/ir.h"

poprt_status poprt__model_new(poprt__model **out)
{
    poprt__model *m = poprt__calloc(1, sizeof *m);
    if (!m)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory creating a model");
    poprt__arena_init(&m->arena);
    m->graph = poprt__graph_new(m, NULL, "main");
    if (!m->graph) {
        poprt__model_free(m);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory creating a model");
    }
    *out = m;
    return POPRT_OK;
}

/* Every graph registers in m->graphs_all so poprt__model_free can release
 * its heap vectors and maps; the graph structs themselves are in the arena. */
void poprt__model_free(poprt__model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->graphs_all.len; i++) {
        poprt__graph *g = m->graphs_all.items[i];
        poprt__vec_free(&g->nodes);
        poprt__vec_free(&g->tensors);
        poprt__vec_free(&g->inputs);
        poprt__vec_free(&g->outputs);
        poprt__vec_free(&g->initializers);
        poprt__map_free(&g->by_name);
    }
    poprt__vec_free(&m->graphs_all);
    for (size_t i = 0; i < m->blobs.len; i++)
        poprt__blob_unref(m->blobs.items[i]);
    poprt__vec_free(&m->blobs);
    poprt__arena_free(&m->arena);
    poprt__free(m);
}

poprt__graph *poprt__graph_new(poprt__model *m, poprt__graph *parent, const char *name)
{
    poprt__graph *g = poprt__arena_alloc(&m->arena, sizeof *g);
    if (!g)
        return NULL;
    g->model = m;
    g->parent = parent;
    g->name = poprt__arena_strdup(&m->arena, name ? name : "");
    if (!g->name || poprt__vec_push(&m->graphs_all, g) != POPRT_OK)
        return NULL;
    return g;
}

poprt__tensor *poprt__graph_find(const poprt__graph *g, const char *name)
{
    for (; g; g = g->parent) {
        poprt__tensor *t = poprt__map_get(&g->by_name, name);
        if (t)
            return t;
    }
    return NULL;
}

static poprt__tensor *add_tensor(poprt__graph *g, const char *name)
{
    poprt__model *m = g->model;
    poprt__tensor *t = poprt__arena_alloc(&m->arena, sizeof *t);
    if (!t)
        return NULL;
    t->name = poprt__arena_strdup(&m->arena, name);
    if (!t->name)
        return NULL;
    t->graph = g;
    t->type.rank = -1;
    t->id = (int)g->tensors.len;
    if (poprt__vec_push(&g->tensors, t) || poprt__map_put(&g->by_name, t->name, t))
        return NULL;
    return t;
}

poprt__tensor *poprt__graph_tensor(poprt__graph *g, const char *name)
{
    poprt__tensor *t = poprt__map_get(&g->by_name, name);
    return t ? t : add_tensor(g, name);
}

const char *poprt__model_unique_name(poprt__model *m, const char *base)
{
    for (;;) {
        char *name = poprt__arena_printf(&m->arena, "%s__%d", base ? base : "t", m->uid_counter++);
        if (!name)
            return NULL;
        int taken = 0;
        for (size_t i = 0; i < m->graphs_all.len && !taken; i++)
            taken = poprt__map_get(&((poprt__graph *)m->graphs_all.items[i])->by_name, name) != NULL;
        if (!taken)
            return name;
    }
}

poprt__tensor *poprt__graph_new_tensor(poprt__graph *g, const char *base)
{
    const char *name = poprt__model_unique_name(g->model, base);
    return name ? add_tensor(g, name) : NULL;
}

poprt__node *poprt__graph_add_node(poprt__graph *g, const char *op_type, const char *domain,
                                   const char *name, int n_inputs, int n_outputs)
{
    poprt__model *m = g->model;
    poprt__node *n = poprt__arena_alloc(&m->arena, sizeof *n);
    if (!n)
        return NULL;
    n->op_type = poprt__arena_strdup(&m->arena, op_type);
    n->domain = poprt__arena_strdup(&m->arena, domain ? domain : "");
    n->name = name ? poprt__arena_strdup(&m->arena, name)
                   : poprt__model_unique_name(m, op_type);
    n->overload = "";
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->inputs = poprt__arena_array(&m->arena, (size_t)(n_inputs ? n_inputs : 1), sizeof *n->inputs);
    n->outputs = poprt__arena_array(&m->arena, (size_t)(n_outputs ? n_outputs : 1), sizeof *n->outputs);
    n->graph = g;
    if (!n->op_type || !n->domain || !n->name || !n->inputs || !n->outputs)
        return NULL;
    if (poprt__vec_push(&g->nodes, n))
        return NULL;
    return n;
}

void poprt__graph_remove_node(poprt__graph *g, poprt__node *n)
{
    size_t k = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (g->nodes.items[i] != n)
            g->nodes.items[k++] = g->nodes.items[i];
    g->nodes.len = k;
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && n->outputs[i]->producer == n)
            n->outputs[i]->producer = NULL;
}

poprt__attr *poprt__node_add_attr(poprt__node *n, const char *name, poprt__attr_type type)
{
    poprt__model *m = n->graph->model;
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) {
            /* setting an attribute the node has replaces it */
            const char *keep = n->attrs[i].name;
            memset(&n->attrs[i], 0, sizeof n->attrs[i]);
            n->attrs[i].name = keep;
            n->attrs[i].type = type;
            return &n->attrs[i];
        }
    poprt__attr *attrs = poprt__arena_array(&m->arena, (size_t)n->n_attrs + 1, sizeof *attrs);
    if (!attrs)
        return NULL;
    if (n->n_attrs)
        memcpy(attrs, n->attrs, (size_t)n->n_attrs * sizeof *attrs);
    poprt__attr *a = &attrs[n->n_attrs];
    a->name = poprt__arena_strdup(&m->arena, name);
    if (!a->name)
        return NULL;
    a->type = type;
    n->attrs = attrs;
    n->n_attrs++;
    return a;
}

static int is_default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

int64_t poprt__model_opset(const poprt__model *m, const char *domain)
{
    for (int i = 0; i < m->n_opsets; i++) {
        const char *d = m->opsets[i].domain;
        if ((is_default_domain(d) && is_default_domain(domain)) ||
            (d && domain && strcmp(d, domain) == 0))
            return m->opsets[i].version;
    }
    return 0;
}
