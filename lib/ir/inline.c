/* Inlining of model-local functions (FunctionProto) into the graphs that
 * call them: each call node is replaced by a renamed copy of the body, with
 * attribute references (ref_attr_name) bound to the call's attributes. */
#include <string.h>
#include "ir/ir.h"

static const poprt__function *find_function(const poprt__model *m, const poprt__node *n)
{
    for (int i = 0; i < m->n_functions; i++) {
        const poprt__function *f = &m->functions[i];
        if (strcmp(f->name, n->op_type) == 0 && strcmp(f->domain ? f->domain : "", n->domain) == 0)
            return f;
    }
    return NULL;
}

static const poprt__attr *call_attr(const poprt__node *call, const poprt__function *f,
                                    const char *name)
{
    for (int i = 0; i < call->n_attrs; i++)
        if (strcmp(call->attrs[i].name, name) == 0)
            return &call->attrs[i];
    for (int i = 0; i < f->n_attr_defaults; i++)
        if (strcmp(f->attr_defaults[i].name, name) == 0)
            return &f->attr_defaults[i];
    return NULL;
}

/* Maps a body tensor to the caller's graph. */
static poprt__tensor *map_tensor(poprt__graph *g, poprt__map *rename, const poprt__tensor *bt,
                                 const char *prefix)
{
    if (!bt)
        return NULL;
    poprt__tensor *t = poprt__map_get(rename, bt->name);
    if (t)
        return t;
    t = poprt__graph_new_tensor(g, poprt__arena_printf(&g->model->arena, "%s/%s", prefix, bt->name));
    if (!t)
        return NULL;
    if (bt->raw) {
        poprt__tensor_set_data(t, bt->raw); /* one model: its aligned copy is shared too */
        t->aligned = __atomic_load_n(&bt->aligned, __ATOMIC_ACQUIRE);
        t->nbytes = bt->nbytes;
        poprt__type_copy(&g->model->arena, &t->type, &bt->type);
    }
    if (poprt__map_put(rename, bt->name, t))
        return NULL;
    return t;
}

static poprt_status inline_call(poprt__graph *g, poprt__node *call, const poprt__function *f,
                                poprt__vec *new_nodes)
{
    poprt__model *m = g->model;
    poprt__map rename = {0};
    poprt_status st = POPRT_OK;
    poprt__graph *body = f->body;
    for (size_t i = 0; i < body->inputs.len && !st; i++) {
        poprt__tensor *formal = body->inputs.items[i];
        poprt__tensor *actual = (int)i < call->n_inputs ? call->inputs[i] : NULL;
        if (actual)
            st = poprt__map_put(&rename, formal->name, actual);
    }
    for (size_t i = 0; i < body->outputs.len && !st; i++) {
        poprt__tensor *formal = body->outputs.items[i];
        poprt__tensor *actual = (int)i < call->n_outputs ? call->outputs[i] : NULL;
        if (actual)
            st = poprt__map_put(&rename, formal->name, actual);
    }
    for (size_t i = 0; i < body->nodes.len && !st; i++) {
        const poprt__node *bn = body->nodes.items[i];
        /* the copy is added to g->nodes by add_node; moved into place below */
        poprt__node *n = poprt__graph_add_node(
            g, bn->op_type, bn->domain, poprt__arena_printf(&m->arena, "%s/%s", call->name, bn->name),
            bn->n_inputs, bn->n_outputs);
        if (!n) {
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory inlining '%s'", call->name);
            break;
        }
        g->nodes.len--; /* placed by the caller */
        for (int k = 0; k < bn->n_inputs; k++) {
            poprt__node_set_input(n, k, NULL);
            if (bn->inputs[k] && bn->inputs[k]->name[0]) {
                poprt__node_set_input(n, k, map_tensor(g, &rename, bn->inputs[k], call->name));
                if (!n->inputs[k])
                    st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory inlining");
            }
        }
        for (int k = 0; k < bn->n_outputs; k++) {
            n->outputs[k] = NULL;
            if (bn->outputs[k] && bn->outputs[k]->name[0]) {
                n->outputs[k] = map_tensor(g, &rename, bn->outputs[k], call->name);
                if (!n->outputs[k])
                    st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory inlining");
            }
        }
        for (int a = 0; a < bn->n_attrs && !st; a++) {
            const poprt__attr *ba = &bn->attrs[a];
            const poprt__attr *src = ba;
            if (ba->ref_attr_name) {
                src = call_attr(call, f, ba->ref_attr_name);
                if (!src)
                    continue; /* unset reference: the attribute is absent */
            }
            poprt__attr *na = poprt__node_add_attr(n, ba->name, src->type);
            if (!na) {
                st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory inlining");
                break;
            }
            const char *name = na->name;
            *na = *src;
            na->name = name;
            na->ref_attr_name = NULL;
        }
        if (!st)
            st = poprt__vec_push(new_nodes, n);
    }
    poprt__map_free(&rename);
    return st;
}

static poprt_status inline_graph(poprt__model *m, poprt__graph *g, int depth)
{
    if (depth > 32)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "functions nest deeper than 32 levels");
    int again = 1;
    while (again) {
        again = 0;
        poprt__vec out = {0};
        poprt_status st = POPRT_OK;
        for (size_t i = 0; i < g->nodes.len && !st; i++) {
            poprt__node *n = g->nodes.items[i];
            const poprt__function *f = find_function(m, n);
            if (f) {
                st = inline_call(g, n, f, &out);
                poprt__graph_detach_node(n); /* its body's copies take its place */
                again = 1;
            } else {
                st = poprt__vec_push(&out, n);
                for (int a = 0; a < n->n_attrs && !st; a++) {
                    if (n->attrs[a].type == POPRT__ATTR_GRAPH && n->attrs[a].g)
                        st = inline_graph(m, n->attrs[a].g, depth + 1);
                    for (int64_t k = 0; !st && n->attrs[a].type == POPRT__ATTR_GRAPHS && k < n->attrs[a].n; k++)
                        st = inline_graph(m, n->attrs[a].graphs[k], depth + 1);
                }
            }
        }
        if (st) {
            poprt__vec_free(&out);
            return st;
        }
        poprt__vec_free(&g->nodes);
        g->nodes = out;
        if (again && ++depth > 32)
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "functions nest deeper than 32 levels");
    }
    return POPRT_OK;
}

poprt_status poprt__model_inline_functions(poprt__model *m)
{
    if (!m->n_functions)
        return POPRT_OK;
    return inline_graph(m, m->graph, 0);
}
