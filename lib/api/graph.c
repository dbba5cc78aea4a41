/* Public graph API (include/poprt/poprt.h "graph", docs/graph.md): reading
 * and editing a model's graphs and building a model from nothing.
 *
 * poprt_graph and poprt_node are the IR's graphs and nodes seen through
 * opaque types. Every call checks all its arguments before it changes
 * anything, so a refused call leaves the model as it was; each change marks
 * the model edited (poprt__model.edited) until poprt_model_check succeeds,
 * and the calls that need a checked model refuse an edited one
 * (poprt__model_require_checked). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "api/api.h"

#define G(g) ((poprt__graph *)(g))
#define N(n) ((poprt__node *)(n))

static poprt_status bad(const char *fn, const char *what)
{
    return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: %s", fn, what);
}

/* INVALID_ARGUMENT naming the first NULL of n (pointer, name) pairs. */
static poprt_status need(const char *fn, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    poprt_status st = POPRT_OK;
    for (int i = 0; i < n && !st; i++) {
        const void *p = va_arg(ap, const void *);
        const char *what = va_arg(ap, const char *);
        if (!p)
            st = poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: NULL %s", fn, what);
    }
    va_end(ap);
    return st;
}

/* A node handle of graph g (g NULL: any graph), not removed. */
static poprt_status live_node(const char *fn, const poprt__graph *g, const poprt__node *n)
{
    if (!n)
        return bad(fn, "NULL node");
    if (n->removed)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: node '%s' was removed", fn, n->name);
    if (g && n->graph != g)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: node '%s' belongs to graph '%s', not '%s'",
                          fn, n->name, n->graph->name, g->name);
    return POPRT_OK;
}

static void edited(poprt__model *m)
{
    m->edit_count++;
    m->edited = 1;
}

poprt_status poprt__model_require_checked(const poprt_model *model, const char *fn)
{
    if (model && model->m->edited)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: the model was edited since it was last checked: call "
                          "poprt_model_check first",
                          fn);
    return POPRT_OK;
}

/* ---- model ------------------------------------------------------------------ */

poprt_status poprt_model_create(int64_t opset, poprt_model **model_out)
{
    if (!model_out)
        return bad("poprt_model_create", "NULL model_out");
    poprt__model *m;
    poprt_status st = poprt__model_new(&m);
    if (st)
        return st;
    m->ir_version = 8;
    m->producer_name = "libpoprt";
    m->producer_version = poprt_version();
    m->opsets = poprt__arena_array(&m->arena, 1, sizeof *m->opsets);
    if (!m->opsets) {
        poprt__model_free(m);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "poprt_model_create: out of memory");
    }
    m->opsets[0].domain = "";
    m->opsets[0].version = opset;
    m->n_opsets = 1;
    /* the opset is checked as a loaded model's is */
    if ((st = poprt__model_validate_opsets(m))) {
        poprt__model_free(m);
        return poprt__err_prefix(POPRT_STATUS_INVALID_ARGUMENT, "poprt_model_create: ");
    }
    m->graph->name = "main";
    return poprt__api_wrap_model(m, model_out);
}

poprt_status poprt_model_set_opset(poprt_model *model, const char *domain, int64_t version)
{
    const char *fn = "poprt_model_set_opset";
    if (!model)
        return bad(fn, "NULL model");
    poprt__model *m = model->m;
    const char *d = !domain || !strcmp(domain, "ai.onnx") ? "" : domain;
    poprt__opset one = {d, version};
    poprt_status st = poprt__model_check_opsets(&one, 1);
    if (st)
        return poprt__err_prefix(POPRT_STATUS_INVALID_ARGUMENT, "%s: ", fn);
    for (int i = 0; i < m->n_opsets; i++)
        if (!strcmp(m->opsets[i].domain, d) ||
            (!strcmp(m->opsets[i].domain, "ai.onnx") && !*d)) {
            m->opsets[i].version = version;
            edited(m);
            return POPRT_OK;
        }
    poprt__opset *o = poprt__arena_array(&m->arena, (size_t)m->n_opsets + 1, sizeof *o);
    const char *dd = poprt__arena_strdup(&m->arena, d);
    if (!o || !dd)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    memcpy(o, m->opsets, (size_t)m->n_opsets * sizeof *o);
    o[m->n_opsets].domain = dd;
    o[m->n_opsets].version = version;
    m->opsets = o;
    m->n_opsets++;
    edited(m);
    return POPRT_OK;
}

poprt_status poprt_model_check(poprt_model *model)
{
    if (!model)
        return bad("poprt_model_check", "NULL model");
    poprt_status st = poprt__model_check(model->m);
    poprt__model_touch(model);
    if (st)
        return st;
    model->m->edited = 0;
    return POPRT_OK;
}

poprt_status poprt_model_graph(poprt_model *model, poprt_graph **graph_out)
{
    poprt_status st = need("poprt_model_graph", 2, (const void *)model, "model",
                           (const void *)graph_out, "graph_out");
    if (st)
        return st;
    *graph_out = (poprt_graph *)model->m->graph;
    return POPRT_OK;
}

/* ---- reading a graph ---------------------------------------------------------- */

const char *poprt_graph_name(const poprt_graph *graph)
{
    return graph ? G(graph)->name : NULL;
}

size_t poprt_graph_num_nodes(const poprt_graph *graph)
{
    return graph ? G(graph)->nodes.len : 0;
}

poprt_status poprt_graph_node(const poprt_graph *graph, size_t index, poprt_node **node_out)
{
    poprt_status st = need("poprt_graph_node", 2, (const void *)graph, "graph",
                           (const void *)node_out, "node_out");
    if (st)
        return st;
    if (index >= G(graph)->nodes.len)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_graph_node: index %zu out of range (graph '%s' has %zu nodes)",
                          index, G(graph)->name, G(graph)->nodes.len);
    *node_out = G(graph)->nodes.items[index];
    return POPRT_OK;
}

poprt_status poprt_graph_find_node(const poprt_graph *graph, const char *name,
                                   poprt_node **node_out)
{
    poprt_status st = need("poprt_graph_find_node", 3, (const void *)graph, "graph",
                           (const void *)name, "name", (const void *)node_out, "node_out");
    if (st)
        return st;
    const poprt__graph *g = G(graph);
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (!strcmp(n->name, name)) {
            *node_out = (poprt_node *)n;
            return POPRT_OK;
        }
    }
    return poprt__err(POPRT_STATUS_NOT_FOUND, "graph '%s' has no node named '%s'", g->name, name);
}

size_t poprt_graph_num_inputs(const poprt_graph *graph)
{
    return graph ? G(graph)->inputs.len : 0;
}

size_t poprt_graph_num_outputs(const poprt_graph *graph)
{
    return graph ? G(graph)->outputs.len : 0;
}

static poprt_status info_args(const void *h, const poprt_value_info *info, const char *fn)
{
    poprt_status st = need(fn, 2, h, "graph", (const void *)info, "info");
    if (st)
        return st;
    if (info->size < POPRT__VALUE_INFO_MIN_SIZE)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: info->size is %zu, expected at least %zu", fn, info->size,
                          POPRT__VALUE_INFO_MIN_SIZE);
    return POPRT_OK;
}

static poprt_status list_info(const poprt_graph *graph, const poprt__vec *v, size_t index,
                              poprt_value_info *info, const char *fn, const char *what)
{
    poprt_status st = info_args(graph, info, fn);
    if (st)
        return st;
    if (index >= v->len)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: index %zu out of range (graph '%s' "
                                                         "has %zu %s)",
                          fn, index, G(graph)->name, v->len, what);
    return poprt__fill_info(&G(graph)->model->arena, v->items[index], info);
}

poprt_status poprt_graph_input(const poprt_graph *graph, size_t index, poprt_value_info *info)
{
    return list_info(graph, graph ? &G(graph)->inputs : NULL, index, info, "poprt_graph_input",
                     "inputs");
}

poprt_status poprt_graph_output(const poprt_graph *graph, size_t index, poprt_value_info *info)
{
    return list_info(graph, graph ? &G(graph)->outputs : NULL, index, info, "poprt_graph_output",
                     "outputs");
}

/* A value the graph or an enclosing one names (a tensor with a producer, an
 * input, an initializer or a declared type). */
static poprt__tensor *find_value(const poprt__graph *g, const char *name)
{
    poprt__tensor *t = *name ? poprt__graph_find(g, name) : NULL;
    return t && (t->producer || t->is_input || t->is_initializer || t->raw || t->n_uses ||
                 t->type.kind != POPRT__KIND_UNKNOWN)
               ? t
               : NULL;
}

poprt_status poprt_graph_value_info(const poprt_graph *graph, const char *name,
                                    poprt_value_info *info)
{
    poprt_status st = info_args(graph, info, "poprt_graph_value_info");
    if (st)
        return st;
    if (!name)
        return bad("poprt_graph_value_info", "NULL name");
    const poprt__tensor *t = find_value(G(graph), name);
    if (!t)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "graph '%s' has no value named '%s'",
                          G(graph)->name, name);
    return poprt__fill_info(&G(graph)->model->arena, t, info);
}

size_t poprt_graph_num_initializers(const poprt_graph *graph)
{
    return graph ? G(graph)->initializers.len : 0;
}

/* view->size covers the struct (n, name: the attribute read, or NULL). */
static poprt_status view_args(const poprt_tensor_view *view, const char *fn,
                              const poprt__node *n, const char *name)
{
    if (view->size < sizeof *view)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: %s%s%s%s%sview->size is %zu, expected at least %zu", fn,
                          n ? "node '" : "", n ? n->name : "", n ? "', attribute '" : "",
                          n ? name : "", n ? "': " : "", view->size, sizeof *view);
    return POPRT_OK;
}

/* A constant tensor as a view (dims from the model's arena). */
static poprt_status fill_view(poprt__arena *a, const poprt__tensor *t, poprt_tensor_view *v)
{
    v->name = t->name;
    v->dtype = (poprt_dtype)t->type.elem;
    v->rank = t->type.rank;
    v->dims = NULL;
    if (t->type.rank > 0) {
        int64_t *d = poprt__arena_array(a, (size_t)t->type.rank, sizeof *d);
        if (!d)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int i = 0; i < t->type.rank; i++)
            d[i] = t->type.dims[i].value;
        v->dims = d;
    }
    v->data = poprt__tensor_data(t);
    v->nbytes = t->nbytes;
    if (t->raw && !v->data)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory reading '%s' (%zu bytes)",
                          t->name, t->nbytes);
    return POPRT_OK;
}

poprt_status poprt_graph_initializer(const poprt_graph *graph, size_t index,
                                     poprt_tensor_view *view)
{
    const char *fn = "poprt_graph_initializer";
    poprt_status st = need(fn, 2, (const void *)graph, "graph", (const void *)view, "view");
    if (!st)
        st = view_args(view, fn, NULL, NULL);
    if (st)
        return st;
    const poprt__graph *g = G(graph);
    if (index >= g->initializers.len)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: index %zu out of range (graph '%s' has %zu initializers)", fn,
                          index, g->name, g->initializers.len);
    return fill_view(&g->model->arena, g->initializers.items[index], view);
}

/* ---- graph values ------------------------------------------------------------- */

/* dims/rank of a declared type: rank 0..POPRT__MAX_RANK, dims given when
 * rank > 0; dims < 0 unknown. */
static poprt_status type_args(const char *fn, const char *name, poprt_dtype dtype,
                              const int64_t *dims, int rank, int allow_undefined)
{
    if (!name || !*name)
        return bad(fn, "NULL or empty name");
    if (!allow_undefined && dtype == POPRT_DTYPE_UNDEFINED)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: '%s': no element type", fn, name);
    if (dtype != POPRT_DTYPE_UNDEFINED && !strcmp(poprt_dtype_name(dtype), "undefined"))
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: '%s': unknown data type %d", fn,
                          name, (int)dtype);
    if (dtype != POPRT_DTYPE_UNDEFINED && (rank < 0 || rank > POPRT__MAX_RANK || (rank && !dims)))
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: '%s': rank %d (0 to %d, with dims when above 0)", fn, name, rank,
                          POPRT__MAX_RANK);
    return POPRT_OK;
}

static poprt_status set_type(poprt__model *m, poprt__tensor *t, poprt_dtype dtype,
                             const int64_t *dims, int rank)
{
    int64_t d[POPRT__MAX_RANK];
    for (int i = 0; i < rank; i++)
        d[i] = dims[i] < 0 ? -1 : dims[i];
    if (poprt__type_set_tensor(&m->arena, &t->type, dtype, rank, d))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory typing '%s'", t->name);
    return POPRT_OK;
}

/* A name free in g for a new value: no producer, not an input or initializer. */
static poprt_status name_free(const char *fn, const poprt__graph *g, const char *name)
{
    const poprt__tensor *t = poprt__map_get(&g->by_name, name);
    if (!t)
        return POPRT_OK;
    if (t->producer)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: graph '%s': '%s' is the output of "
                                                         "node '%s'",
                          fn, g->name, name, t->producer->name);
    if (t->is_input || t->is_initializer)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: graph '%s': '%s' is already %s", fn,
                          g->name, name, t->is_input ? "an input" : "an initializer");
    return POPRT_OK;
}

poprt_status poprt_graph_add_input(poprt_graph *graph, const char *name, poprt_dtype dtype,
                                   const int64_t *dims, int rank)
{
    const char *fn = "poprt_graph_add_input";
    if (!graph)
        return bad(fn, "NULL graph");
    poprt__graph *g = G(graph);
    poprt_status st = type_args(fn, name, dtype, dims, rank, 0);
    if (!st)
        st = name_free(fn, g, name);
    if (st)
        return st;
    poprt__tensor *t = poprt__graph_tensor(g, name);
    if (!t || set_type(g->model, t, dtype, dims, rank) || poprt__vec_push(&g->inputs, t))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    t->is_input = 1;
    edited(g->model);
    return POPRT_OK;
}

poprt_status poprt_graph_add_output(poprt_graph *graph, const char *name, poprt_dtype dtype,
                                    const int64_t *dims, int rank)
{
    const char *fn = "poprt_graph_add_output";
    if (!graph)
        return bad(fn, "NULL graph");
    poprt__graph *g = G(graph);
    poprt_status st = type_args(fn, name, dtype, dims, rank, 1);
    if (st)
        return st;
    poprt__tensor *t = poprt__graph_find(g, name);
    if (t && t->is_output && t->graph == g)
        for (size_t i = 0; i < g->outputs.len; i++)
            if (g->outputs.items[i] == t)
                return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                                  "%s: '%s' is already an output of graph '%s'", fn, name, g->name);
    if (!t)
        t = poprt__graph_tensor(g, name);
    if (!t || (dtype != POPRT_DTYPE_UNDEFINED && set_type(g->model, t, dtype, dims, rank)) ||
        poprt__graph_add_output(g, t))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    t->is_output = 1;
    edited(g->model);
    return POPRT_OK;
}

static int vec_index(const poprt__vec *v, const void *item)
{
    for (size_t i = 0; i < v->len; i++)
        if (v->items[i] == item)
            return (int)i;
    return -1;
}

static void vec_remove_at(poprt__vec *v, size_t i)
{
    memmove(&v->items[i], &v->items[i + 1], (v->len - i - 1) * sizeof *v->items);
    v->len--;
}

poprt_status poprt_graph_remove_input(poprt_graph *graph, const char *name)
{
    const char *fn = "poprt_graph_remove_input";
    poprt_status st = need(fn, 2, (const void *)graph, "graph", (const void *)name, "name");
    if (st)
        return st;
    poprt__graph *g = G(graph);
    poprt__tensor *t = poprt__map_get(&g->by_name, name);
    int i = t && t->is_input ? vec_index(&g->inputs, t) : -1;
    if (i < 0)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "%s: graph '%s' has no input '%s'", fn, g->name,
                          name);
    vec_remove_at(&g->inputs, (size_t)i);
    t->is_input = 0;
    edited(g->model);
    return POPRT_OK;
}

poprt_status poprt_graph_remove_output(poprt_graph *graph, const char *name)
{
    const char *fn = "poprt_graph_remove_output";
    poprt_status st = need(fn, 2, (const void *)graph, "graph", (const void *)name, "name");
    if (st)
        return st;
    poprt__graph *g = G(graph);
    size_t i = 0;
    while (i < g->outputs.len && strcmp(((poprt__tensor *)g->outputs.items[i])->name, name))
        i++;
    if (i == g->outputs.len)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "%s: graph '%s' has no output '%s'", fn, g->name,
                          name);
    poprt__tensor *t = g->outputs.items[i];
    /* the outputs after it move up one place, keeping the read counts */
    for (size_t k = i; k + 1 < g->outputs.len; k++)
        poprt__graph_set_output(g, k, g->outputs.items[k + 1]);
    poprt__graph_truncate_outputs(g, g->outputs.len - 1);
    int still = 0;
    for (size_t k = 0; k < g->outputs.len; k++)
        still |= g->outputs.items[k] == t;
    t->is_output = still;
    edited(g->model);
    return POPRT_OK;
}

poprt_status poprt_graph_set_value_info(poprt_graph *graph, const char *name, poprt_dtype dtype,
                                        const int64_t *dims, int rank)
{
    const char *fn = "poprt_graph_set_value_info";
    if (!graph)
        return bad(fn, "NULL graph");
    poprt__graph *g = G(graph);
    poprt_status st = type_args(fn, name, dtype, dims, rank, 0);
    if (st)
        return st;
    poprt__tensor *t = poprt__map_get(&g->by_name, name);
    if (t && (t->is_initializer || t->raw))
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: '%s' is a constant of graph '%s': its type is its value's", fn,
                          name, g->name);
    if (!t && !(t = poprt__graph_tensor(g, name)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    if ((st = set_type(g->model, t, dtype, dims, rank)))
        return st;
    edited(g->model);
    return POPRT_OK;
}

/* dims and nbytes of constant data agree: element count * size, no overflow. */
static poprt_status data_args(const char *fn, const char *name, poprt_dtype dtype,
                              const int64_t *dims, int rank, const void *data, size_t nbytes)
{
    if (dtype == POPRT_DTYPE_STRING)
        return poprt__err(POPRT_STATUS_UNSUPPORTED, "%s: '%s': string constants are not supported "
                                                    "here", fn, name);
    poprt_status st = type_args(fn, name, dtype, dims, rank, 0);
    if (st)
        return st;
    uint64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || (dims[i] && n > UINT64_MAX / (uint64_t)dims[i]))
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: '%s': dim %d is %lld", fn, name,
                              i, (long long)dims[i]);
        n *= (uint64_t)dims[i];
    }
    size_t es = poprt_dtype_size(dtype);
    if (es && n > SIZE_MAX / es)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: '%s': too many elements", fn, name);
    size_t want = (size_t)n * es;
    if (dtype == POPRT_DTYPE_INT4 || dtype == POPRT_DTYPE_UINT4 || dtype == POPRT_DTYPE_FLOAT4E2M1)
        want = (size_t)((n + 1) / 2); /* two to a byte */
    else if (dtype == POPRT_DTYPE_INT2 || dtype == POPRT_DTYPE_UINT2)
        want = (size_t)((n + 3) / 4);
    if (nbytes != want)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: '%s': %zu bytes given, the shape needs %zu", fn, name, nbytes, want);
    if (want && !data)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: '%s': NULL data", fn, name);
    return POPRT_OK;
}

poprt_status poprt_graph_add_initializer(poprt_graph *graph, const char *name, poprt_dtype dtype,
                                         const int64_t *dims, int rank, const void *data,
                                         size_t nbytes,
                                         void (*release)(void *user, const void *data), void *user)
{
    const char *fn = "poprt_graph_add_initializer";
    if (!graph)
        return bad(fn, "NULL graph");
    poprt__graph *g = G(graph);
    poprt_status st = data_args(fn, name, dtype, dims, rank, data, nbytes);
    if (st)
        return st;
    poprt__tensor *t = poprt__map_get(&g->by_name, name);
    if (t && !t->is_initializer && (st = name_free(fn, g, name)))
        return st;
    poprt__model *m = g->model;
    const void *bytes = data;
    if (!release) {
        void *copy = poprt__arena_alloc(&m->arena, nbytes ? nbytes : 1);
        if (!copy)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory copying '%s'", fn,
                              name);
        if (nbytes)
            memcpy(copy, data, nbytes);
        bytes = copy;
    } else {
        poprt__blob *b = poprt__blob_borrow(data, nbytes, release, user);
        if (!b || poprt__vec_push(&m->blobs, b)) {
            if (b) {
                b->release = NULL; /* not taken: the caller keeps it */
                poprt__blob_unref(b);
            }
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
        }
    }
    int is_new = !t;
    if (!t && !(t = poprt__graph_tensor(g, name)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    if ((st = set_type(m, t, dtype, dims, rank)))
        return st;
    if ((is_new || !t->is_initializer) && poprt__vec_push(&g->initializers, t))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    poprt__tensor_set_data(t, bytes);
    t->nbytes = nbytes;
    t->is_initializer = 1;
    edited(m);
    return POPRT_OK;
}

poprt_status poprt_graph_remove_initializer(poprt_graph *graph, const char *name)
{
    const char *fn = "poprt_graph_remove_initializer";
    poprt_status st = need(fn, 2, (const void *)graph, "graph", (const void *)name, "name");
    if (st)
        return st;
    poprt__graph *g = G(graph);
    poprt__tensor *t = poprt__map_get(&g->by_name, name);
    int i = t && t->is_initializer ? vec_index(&g->initializers, t) : -1;
    if (i < 0)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "%s: graph '%s' has no initializer '%s'", fn,
                          g->name, name);
    if (t->uses)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: initializer '%s' is read by node '%s'", fn, name, t->uses->node->name);
    if (t->n_out_uses)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: initializer '%s' is a graph output",
                          fn, name);
    vec_remove_at(&g->initializers, (size_t)i);
    int in = t->is_input ? vec_index(&g->inputs, t) : -1;
    if (in >= 0)
        vec_remove_at(&g->inputs, (size_t)in);
    t->is_initializer = t->is_input = 0;
    poprt__tensor_set_data(t, NULL);
    t->nbytes = 0;
    t->type.kind = POPRT__KIND_UNKNOWN;
    edited(g->model);
    return POPRT_OK;
}

/* ---- nodes -------------------------------------------------------------------- */

/* The tensor a node slot of g reads: g's or an enclosing graph's value, else a
 * new name in g. */
static poprt__tensor *read_value(poprt__graph *g, const char *name)
{
    poprt__tensor *t = poprt__graph_find(g, name);
    return t ? t : poprt__graph_tensor(g, name);
}

static poprt_status names_args(const char *fn, size_t n, const char *const *names,
                               const char *what)
{
    if (n > 4096)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: %zu %s (at most 4096)", fn, n, what);
    if (n && !names)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: NULL %s", fn, what);
    for (size_t i = 0; i < n; i++)
        if (!names[i])
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: %s[%zu] is NULL", fn, what, i);
    return POPRT_OK;
}

/* Outputs a node may write: new, distinct names. */
static poprt_status outputs_free(const char *fn, const poprt__graph *g, size_t n,
                                 const char *const *outs)
{
    for (size_t i = 0; i < n; i++) {
        if (!*outs[i])
            continue;
        poprt_status st = name_free(fn, g, outs[i]);
        if (st)
            return st;
        for (size_t k = 0; k < i; k++)
            if (!strcmp(outs[k], outs[i]))
                return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: output '%s' named twice",
                                  fn, outs[i]);
    }
    return POPRT_OK;
}

static void set_output(poprt__node *n, int slot, poprt__tensor *t)
{
    n->outputs[slot] = t;
    if (t) {
        t->producer = n;
        t->producer_slot = slot;
    }
}

poprt_status poprt_graph_add_node(poprt_graph *graph, const char *op_type, const char *domain,
                                  const char *name, size_t n_inputs, const char *const *inputs,
                                  size_t n_outputs, const char *const *outputs,
                                  poprt_node **node_out)
{
    const char *fn = "poprt_graph_add_node";
    poprt_status st = need(fn, 2, (const void *)graph, "graph", (const void *)op_type, "op_type");
    if (st)
        return st;
    if (!*op_type)
        return bad(fn, "empty op_type");
    poprt__graph *g = G(graph);
    st = names_args(fn, n_inputs, inputs, "inputs");
    if (!st)
        st = names_args(fn, n_outputs, outputs, "outputs");
    if (!st)
        st = outputs_free(fn, g, n_outputs, outputs);
    if (st)
        return st;
    if (name && *name)
        for (size_t i = 0; i < g->nodes.len; i++)
            if (!strcmp(((poprt__node *)g->nodes.items[i])->name, name))
                return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                                  "%s: graph '%s' has a node named '%s' already", fn, g->name, name);
    poprt__node *n = poprt__graph_add_node(g, op_type, domain, name && *name ? name : NULL,
                                           (int)n_inputs, (int)n_outputs);
    if (!n)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < n_inputs + n_outputs; i++) {
        int in = i < n_inputs;
        const char *v = in ? inputs[i] : outputs[i - n_inputs];
        poprt__tensor *t = !*v ? NULL : in ? read_value(g, v) : poprt__graph_tensor(g, v);
        if (*v && !t) {
            poprt__graph_remove_node(g, n);
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
        }
        if (in)
            poprt__node_set_input(n, (int)i, t);
        else
            set_output(n, (int)(i - n_inputs), t);
    }
    edited(g->model);
    if (node_out)
        *node_out = (poprt_node *)n;
    return POPRT_OK;
}

poprt_status poprt_graph_remove_node(poprt_graph *graph, poprt_node *node)
{
    const char *fn = "poprt_graph_remove_node";
    if (!graph)
        return bad(fn, "NULL graph");
    poprt_status st = live_node(fn, G(graph), N(node));
    if (st)
        return st;
    poprt__graph_remove_node(G(graph), N(node));
    N(node)->removed = 1;
    edited(G(graph)->model);
    return POPRT_OK;
}

poprt_status poprt_graph_replace_uses(poprt_graph *graph, const char *from, const char *to)
{
    const char *fn = "poprt_graph_replace_uses";
    poprt_status st = need(fn, 3, (const void *)graph, "graph", (const void *)from, "from",
                           (const void *)to, "to");
    if (st)
        return st;
    if (!*to)
        return bad(fn, "empty to");
    poprt__graph *g = G(graph);
    poprt__tensor *f = poprt__graph_find(g, from), *t = find_value(g, to);
    if (!f)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "%s: graph '%s' has no value '%s'", fn, g->name,
                          from);
    if (!t)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "%s: graph '%s' has no value '%s'", fn, g->name,
                          to);
    if (f == t)
        return POPRT_OK;
    st = poprt__graph_replace_uses(g, f, t);
    if (st)
        return st;
    if (t->n_out_uses)
        t->is_output = 1;
    if (!f->n_out_uses)
        f->is_output = 0;
    edited(g->model);
    return POPRT_OK;
}

const char *poprt_node_op_type(const poprt_node *node)
{
    return node ? N(node)->op_type : NULL;
}

const char *poprt_node_domain(const poprt_node *node)
{
    return node ? N(node)->domain : NULL;
}

const char *poprt_node_name(const poprt_node *node)
{
    return node ? N(node)->name : NULL;
}

size_t poprt_node_num_inputs(const poprt_node *node)
{
    return node ? (size_t)N(node)->n_inputs : 0;
}

size_t poprt_node_num_outputs(const poprt_node *node)
{
    return node ? (size_t)N(node)->n_outputs : 0;
}

const char *poprt_node_input(const poprt_node *node, size_t index)
{
    if (!node || index >= (size_t)N(node)->n_inputs)
        return NULL;
    const poprt__tensor *t = N(node)->inputs[index];
    return t ? t->name : "";
}

const char *poprt_node_output(const poprt_node *node, size_t index)
{
    if (!node || index >= (size_t)N(node)->n_outputs)
        return NULL;
    const poprt__tensor *t = N(node)->outputs[index];
    return t ? t->name : "";
}

poprt_status poprt_node_set_input(poprt_node *node, size_t index, const char *name)
{
    const char *fn = "poprt_node_set_input";
    poprt_status st = live_node(fn, NULL, N(node));
    if (st)
        return st;
    poprt__node *n = N(node);
    if (!name)
        return bad(fn, "NULL name");
    if (index > (size_t)n->n_inputs || index >= 4096)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: node '%s': index %zu (the node has %d inputs)", fn, n->name, index,
                          n->n_inputs);
    poprt__tensor *t = NULL;
    if (*name && !(t = read_value(n->graph, name)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (index == (size_t)n->n_inputs && poprt__node_resize_inputs(n, n->n_inputs + 1))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    poprt__node_set_input(n, (int)index, t);
    edited(n->graph->model);
    return POPRT_OK;
}

poprt_status poprt_node_set_output(poprt_node *node, size_t index, const char *name)
{
    const char *fn = "poprt_node_set_output";
    poprt_status st = live_node(fn, NULL, N(node));
    if (st)
        return st;
    poprt__node *n = N(node);
    if (!name)
        return bad(fn, "NULL name");
    if (index > (size_t)n->n_outputs || index >= 4096)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: node '%s': index %zu (the node has %d outputs)", fn, n->name, index,
                          n->n_outputs);
    if (*name && index < (size_t)n->n_outputs && n->outputs[index] &&
        !strcmp(n->outputs[index]->name, name))
        return POPRT_OK;
    if (*name && (st = name_free(fn, n->graph, name)))
        return st;
    poprt__model *m = n->graph->model;
    poprt__tensor *t = NULL;
    if (*name && !(t = poprt__graph_tensor(n->graph, name)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    if (index == (size_t)n->n_outputs) {
        poprt__tensor **o = poprt__arena_array(&m->arena, (size_t)n->n_outputs + 1, sizeof *o);
        if (!o)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
        memcpy(o, n->outputs, (size_t)n->n_outputs * sizeof *o);
        n->outputs = o;
        n->n_outputs++;
    } else if (n->outputs[index]) {
        n->outputs[index]->producer = NULL; /* the old value loses its producer */
    }
    set_output(n, (int)index, t);
    edited(m);
    return POPRT_OK;
}

/* ---- attributes --------------------------------------------------------------- */

static const char *const type_names[] = {"UNDEFINED", "FLOAT",  "INT",     "STRING",
                                         "TENSOR",    "GRAPH",  "FLOATS",  "INTS",
                                         "STRINGS",   "TENSORS", "GRAPHS", "SPARSE_TENSOR",
                                         "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};

static const char *type_name(int t)
{
    return t >= 0 && t <= 14 ? type_names[t] : "?";
}

/* The getters of attributes, shared by nodes (poprt_node_attr_*) and
 * custom-operator contexts (poprt_op_attr_*, plugin.c): fn names the public
 * call in messages. */

static poprt_status null_handle(const char *fn)
{
    return bad(fn, strncmp(fn, "poprt_op_", 9) ? "NULL node" : "NULL context");
}

/* The attribute `name` of n, of type want (want < 0: any), with the out
 * pointer the call needs (`what` names it in the message when NULL). */
static poprt_status get_attr(const char *fn, const poprt__node *n, const char *name, int want,
                             int have_out, const char *what, const poprt__attr **out)
{
    if (!n)
        return null_handle(fn);
    if (!name)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: node '%s': NULL attribute name", fn,
                          n->name);
    if (!have_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: node '%s', attribute '%s': NULL %s",
                          fn, n->name, name, what);
    const poprt__attr *a = poprt__node_attr(n, name);
    if (!a)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "%s: node '%s' (%s) has no attribute '%s'", fn,
                          n->name, n->op_type, name);
    if (want >= 0 && (int)a->type != want)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: attribute '%s' of node '%s' is %s, not %s", fn, name, n->name,
                          type_name(a->type), type_name(want));
    *out = a;
    return POPRT_OK;
}

#define GET(type, have_out, what)                                                              \
    const poprt__attr *a = NULL;                                                               \
    poprt_status st = get_attr(fn, n, name, type, have_out, what, &a);                         \
    if (st)                                                                                    \
        return st

size_t poprt__attr_count(const poprt__node *n)
{
    return n ? (size_t)n->n_attrs : 0;
}

const char *poprt__attr_name(const poprt__node *n, size_t index)
{
    return n && index < (size_t)n->n_attrs ? n->attrs[index].name : NULL;
}

poprt_status poprt__attr_get_type(const char *fn, const poprt__node *n, const char *name,
                                  poprt_attr_type *type_out)
{
    GET(-1, type_out != NULL, "type_out");
    *type_out = (poprt_attr_type)a->type;
    return POPRT_OK;
}

poprt_status poprt__attr_get_int(const char *fn, const poprt__node *n, const char *name,
                                 int64_t *value)
{
    GET(POPRT__ATTR_INT, value != NULL, "value");
    *value = a->i;
    return POPRT_OK;
}

poprt_status poprt__attr_get_float(const char *fn, const poprt__node *n, const char *name,
                                   float *value)
{
    GET(POPRT__ATTR_FLOAT, value != NULL, "value");
    *value = a->f;
    return POPRT_OK;
}

poprt_status poprt__attr_get_string(const char *fn, const poprt__node *n, const char *name,
                                    const char **value, size_t *len)
{
    GET(POPRT__ATTR_STRING, value != NULL, "value");
    *value = a->s ? a->s : "";
    if (len)
        *len = a->s ? a->s_len : 0;
    return POPRT_OK;
}

poprt_status poprt__attr_get_ints(const char *fn, const poprt__node *n, const char *name,
                                  const int64_t **values, size_t *count)
{
    GET(POPRT__ATTR_INTS, values && count, "values or count");
    *values = a->ints;
    *count = (size_t)a->n;
    return POPRT_OK;
}

poprt_status poprt__attr_get_floats(const char *fn, const poprt__node *n, const char *name,
                                    const float **values, size_t *count)
{
    GET(POPRT__ATTR_FLOATS, values && count, "values or count");
    *values = a->floats;
    *count = (size_t)a->n;
    return POPRT_OK;
}

poprt_status poprt__attr_get_strings(const char *fn, const poprt__node *n, const char *name,
                                     const char *const **values, const size_t **lens,
                                     size_t *count)
{
    GET(POPRT__ATTR_STRINGS, values && count, "values or count");
    *values = a->strings;
    if (lens)
        *lens = a->string_lens;
    *count = (size_t)a->n;
    return POPRT_OK;
}

poprt_status poprt__attr_get_tensor(const char *fn, const poprt__node *n, const char *name,
                                    poprt_tensor_view *view, poprt__arena *scratch)
{
    GET(POPRT__ATTR_TENSOR, view != NULL, "view");
    if ((st = view_args(view, fn, n, name)))
        return st;
    if (!a->t)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "%s: attribute '%s' of node '%s' has no "
                                                      "tensor", fn, name, n->name);
    return fill_view(scratch ? scratch : &n->graph->model->arena, a->t, view);
}

/* Element index of a list attribute (a TENSORS or GRAPHS one). */
static poprt_status list_item(const char *fn, const poprt__attr *a, const poprt__node *n,
                              size_t index, int want_item, size_t *count)
{
    if (count)
        *count = (size_t)a->n;
    if (want_item && index >= (size_t)a->n)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: attribute '%s' of node '%s' has %lld elements, asked for %zu", fn,
                          a->name, n->name, (long long)a->n, index);
    return POPRT_OK;
}

poprt_status poprt__attr_get_tensors(const char *fn, const poprt__node *n, const char *name,
                                     size_t index, poprt_tensor_view *view, size_t *count,
                                     poprt__arena *scratch)
{
    GET(POPRT__ATTR_TENSORS, view || count, "view and count");
    if (view && (st = view_args(view, fn, n, name)))
        return st;
    if ((st = list_item(fn, a, n, index, view != NULL, count)) || !view)
        return st;
    return fill_view(scratch ? scratch : &n->graph->model->arena, a->tensors[index], view);
}

static poprt_status get_graph(const char *fn, const poprt__node *n, const char *name,
                              poprt_graph **graph_out)
{
    GET(POPRT__ATTR_GRAPH, graph_out != NULL, "graph_out");
    *graph_out = (poprt_graph *)a->g;
    return POPRT_OK;
}

static poprt_status get_graphs(const char *fn, const poprt__node *n, const char *name,
                               size_t index, poprt_graph **graph_out, size_t *count)
{
    GET(POPRT__ATTR_GRAPHS, graph_out || count, "graph_out and count");
    if ((st = list_item(fn, a, n, index, graph_out != NULL, count)) || !graph_out)
        return st;
    *graph_out = (poprt_graph *)a->graphs[index];
    return POPRT_OK;
}

size_t poprt_node_num_attrs(const poprt_node *node)
{
    return poprt__attr_count(N(node));
}

const char *poprt_node_attr_name(const poprt_node *node, size_t index)
{
    return poprt__attr_name(N(node), index);
}

poprt_status poprt_node_attr_type(const poprt_node *node, const char *name,
                                  poprt_attr_type *type_out)
{
    return poprt__attr_get_type("poprt_node_attr_type", N(node), name, type_out);
}

poprt_status poprt_node_attr_int(const poprt_node *node, const char *name, int64_t *value)
{
    return poprt__attr_get_int("poprt_node_attr_int", N(node), name, value);
}

poprt_status poprt_node_attr_float(const poprt_node *node, const char *name, float *value)
{
    return poprt__attr_get_float("poprt_node_attr_float", N(node), name, value);
}

poprt_status poprt_node_attr_string(const poprt_node *node, const char *name,
                                    const char **value, size_t *len)
{
    return poprt__attr_get_string("poprt_node_attr_string", N(node), name, value, len);
}

poprt_status poprt_node_attr_ints(const poprt_node *node, const char *name,
                                  const int64_t **values, size_t *count)
{
    return poprt__attr_get_ints("poprt_node_attr_ints", N(node), name, values, count);
}

poprt_status poprt_node_attr_floats(const poprt_node *node, const char *name,
                                    const float **values, size_t *count)
{
    return poprt__attr_get_floats("poprt_node_attr_floats", N(node), name, values, count);
}

poprt_status poprt_node_attr_strings(const poprt_node *node, const char *name,
                                     const char *const **values, const size_t **lens,
                                     size_t *count)
{
    return poprt__attr_get_strings("poprt_node_attr_strings", N(node), name, values, lens, count);
}

poprt_status poprt_node_attr_tensor(const poprt_node *node, const char *name,
                                    poprt_tensor_view *view)
{
    return poprt__attr_get_tensor("poprt_node_attr_tensor", N(node), name, view, NULL);
}

poprt_status poprt_node_attr_graph(const poprt_node *node, const char *name,
                                   poprt_graph **graph_out)
{
    return get_graph("poprt_node_attr_graph", N(node), name, graph_out);
}

poprt_status poprt_node_attr_tensors(const poprt_node *node, const char *name, size_t index,
                                     poprt_tensor_view *view, size_t *count)
{
    return poprt__attr_get_tensors("poprt_node_attr_tensors", N(node), name, index, view, count,
                                   NULL);
}

poprt_status poprt_node_attr_graphs(const poprt_node *node, const char *name, size_t index,
                                    poprt_graph **graph_out, size_t *count)
{
    return get_graphs("poprt_node_attr_graphs", N(node), name, index, graph_out, count);
}

/* A new attribute value for node: the arguments are checked by the caller;
 * the data is copied into the arena first, then the attribute replaced, so
 * running out of memory leaves the old one. */
static poprt_status set_attr(poprt__node *n, const char *name, const poprt__attr *v)
{
    poprt__model *m = n->graph->model;
    const char *nm = poprt__arena_strdup(&m->arena, name);
    poprt__attr *a = nm ? poprt__node_add_attr(n, nm, v->type) : NULL;
    if (!a)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory setting attribute '%s'", name);
    *a = *v;
    a->name = nm;
    edited(m);
    return POPRT_OK;
}

static poprt_status attr_args(const char *fn, poprt_node *node, const char *name)
{
    poprt_status st = live_node(fn, NULL, N(node));
    if (st)
        return st;
    if (!name || !*name)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: node '%s': NULL or empty attribute "
                                                         "name", fn, N(node)->name);
    return POPRT_OK;
}

static void *dup_array(poprt__node *n, const void *p, size_t count, size_t each)
{
    return poprt__arena_memdup(&n->graph->model->arena, p, count ? count * each : 1);
}

/* count > 0 elements need their array. */
static poprt_status list_args(const char *fn, const char *name, const void *items, size_t count,
                              const char *what)
{
    if (count && !items)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: attribute '%s': NULL %s", fn, name,
                          what);
    return POPRT_OK;
}

#define SET_ARGS(fn)                                                                           \
    poprt_status st = attr_args(fn, node, name);                                               \
    if (st)                                                                                    \
        return st;                                                                             \
    poprt__attr v;                                                                             \
    memset(&v, 0, sizeof v)

poprt_status poprt_node_set_attr_int(poprt_node *node, const char *name, int64_t value)
{
    SET_ARGS("poprt_node_set_attr_int");
    v.type = POPRT__ATTR_INT;
    v.i = value;
    return set_attr(N(node), name, &v);
}

poprt_status poprt_node_set_attr_float(poprt_node *node, const char *name, float value)
{
    SET_ARGS("poprt_node_set_attr_float");
    v.type = POPRT__ATTR_FLOAT;
    v.f = value;
    return set_attr(N(node), name, &v);
}

poprt_status poprt_node_set_attr_string(poprt_node *node, const char *name, const char *value,
                                        size_t len)
{
    SET_ARGS("poprt_node_set_attr_string");
    if (!value && len)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_node_set_attr_string: attribute '%s': NULL value", name);
    v.type = POPRT__ATTR_STRING;
    v.s = poprt__arena_strndup(&N(node)->graph->model->arena, value ? value : "", len);
    v.s_len = len;
    if (!v.s)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory setting attribute '%s'", name);
    return set_attr(N(node), name, &v);
}

poprt_status poprt_node_set_attr_ints(poprt_node *node, const char *name, const int64_t *values,
                                      size_t count)
{
    SET_ARGS("poprt_node_set_attr_ints");
    if ((st = list_args("poprt_node_set_attr_ints", name, values, count, "values")))
        return st;
    v.type = POPRT__ATTR_INTS;
    v.n = (int64_t)count;
    if (!(v.ints = dup_array(N(node), values, count, sizeof *values)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory setting attribute '%s'", name);
    return set_attr(N(node), name, &v);
}

poprt_status poprt_node_set_attr_floats(poprt_node *node, const char *name, const float *values,
                                        size_t count)
{
    SET_ARGS("poprt_node_set_attr_floats");
    if ((st = list_args("poprt_node_set_attr_floats", name, values, count, "values")))
        return st;
    v.type = POPRT__ATTR_FLOATS;
    v.n = (int64_t)count;
    if (!(v.floats = dup_array(N(node), values, count, sizeof *values)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory setting attribute '%s'", name);
    return set_attr(N(node), name, &v);
}

poprt_status poprt_node_set_attr_strings(poprt_node *node, const char *name,
                                         const char *const *values, size_t count)
{
    SET_ARGS("poprt_node_set_attr_strings");
    if ((st = list_args("poprt_node_set_attr_strings", name, values, count, "values")))
        return st;
    for (size_t i = 0; i < count; i++)
        if (!values[i])
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                              "poprt_node_set_attr_strings: attribute '%s': values[%zu] is NULL",
                              name, i);
    poprt__arena *ar = &N(node)->graph->model->arena;
    v.type = POPRT__ATTR_STRINGS;
    v.n = (int64_t)count;
    v.strings = poprt__arena_array(ar, count ? count : 1, sizeof *v.strings);
    v.string_lens = poprt__arena_array(ar, count ? count : 1, sizeof *v.string_lens);
    for (size_t i = 0; v.strings && v.string_lens && i < count; i++) {
        v.string_lens[i] = strlen(values[i]);
        if (!(v.strings[i] = poprt__arena_strdup(ar, values[i])))
            v.strings = NULL;
    }
    if (!v.strings || !v.string_lens)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory setting attribute '%s'", name);
    return set_attr(N(node), name, &v);
}

/* A copy of constant data for a tensor attribute, checked by the caller. */
static poprt_status attr_tensor(const char *fn, poprt__model *m, const char *name,
                                poprt_dtype dtype, const int64_t *dims, int rank, const void *data,
                                size_t nbytes, poprt__tensor **out)
{
    poprt__tensor *t = poprt__arena_alloc(&m->arena, sizeof *t);
    void *copy = poprt__arena_alloc(&m->arena, nbytes ? nbytes : 1);
    const char *nm = poprt__arena_strdup(&m->arena, name ? name : "");
    if (!t || !copy || !nm)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    t->name = nm;
    poprt_status st = set_type(m, t, dtype, dims, rank);
    if (st)
        return st;
    if (nbytes)
        memcpy(copy, data, nbytes);
    poprt__tensor_set_data(t, copy);
    t->nbytes = nbytes;
    t->is_initializer = 1;
    *out = t;
    return POPRT_OK;
}

poprt_status poprt_node_set_attr_tensor(poprt_node *node, const char *name, poprt_dtype dtype,
                                        const int64_t *dims, int rank, const void *data,
                                        size_t nbytes)
{
    const char *fn = "poprt_node_set_attr_tensor";
    SET_ARGS(fn);
    if ((st = data_args(fn, name, dtype, dims, rank, data, nbytes)))
        return st;
    v.type = POPRT__ATTR_TENSOR;
    if ((st = attr_tensor(fn, N(node)->graph->model, NULL, dtype, dims, rank, data, nbytes, &v.t)))
        return st;
    return set_attr(N(node), name, &v);
}

poprt_status poprt_node_set_attr_tensors(poprt_node *node, const char *name,
                                         const poprt_tensor_view *tensors, size_t count)
{
    const char *fn = "poprt_node_set_attr_tensors";
    SET_ARGS(fn);
    if ((st = list_args(fn, name, tensors, count, "tensors")))
        return st;
    char label[128];
    for (size_t i = 0; i < count; i++) {
        const poprt_tensor_view *e = &tensors[i];
        snprintf(label, sizeof label, "%s[%zu]", name, i);
        if (e->size < sizeof *e)
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                              "%s: '%s': size is %zu, expected at least %zu", fn, label, e->size,
                              sizeof *e);
        if ((st = data_args(fn, label, e->dtype, e->dims, e->rank, e->data, e->nbytes)))
            return st;
    }
    poprt__model *m = N(node)->graph->model;
    v.type = POPRT__ATTR_TENSORS;
    v.n = (int64_t)count;
    if (!(v.tensors = poprt__arena_array(&m->arena, count ? count : 1, sizeof *v.tensors)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < count; i++) {
        const poprt_tensor_view *e = &tensors[i];
        if ((st = attr_tensor(fn, m, e->name, e->dtype, e->dims, e->rank, e->data, e->nbytes,
                              &v.tensors[i])))
            return st;
    }
    return set_attr(N(node), name, &v);
}

poprt_status poprt_node_set_attr_graph(poprt_node *node, const char *name,
                                       poprt_graph **graph_out)
{
    const char *fn = "poprt_node_set_attr_graph";
    SET_ARGS(fn);
    if (!graph_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: attribute '%s': NULL graph_out", fn,
                          name);
    poprt__node *n = N(node);
    poprt__graph *sub = poprt__graph_new(n->graph->model, n->graph, name);
    if (!sub)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    sub->parent_node = n;
    v.type = POPRT__ATTR_GRAPH;
    v.g = sub;
    if ((st = set_attr(n, name, &v)))
        return st;
    *graph_out = (poprt_graph *)sub;
    return POPRT_OK;
}

poprt_status poprt_node_set_attr_graphs(poprt_node *node, const char *name, size_t count,
                                        poprt_graph **graphs_out)
{
    const char *fn = "poprt_node_set_attr_graphs";
    SET_ARGS(fn);
    if ((st = list_args(fn, name, graphs_out, count, "graphs_out")))
        return st;
    poprt__node *n = N(node);
    poprt__model *m = n->graph->model;
    v.type = POPRT__ATTR_GRAPHS;
    v.n = (int64_t)count;
    if (!(v.graphs = poprt__arena_array(&m->arena, count ? count : 1, sizeof *v.graphs)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
    for (size_t i = 0; i < count; i++) {
        const char *gname = poprt__arena_printf(&m->arena, "%s_%zu", name, i);
        if (!gname || !(v.graphs[i] = poprt__graph_new(m, n->graph, gname)))
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "%s: out of memory", fn);
        v.graphs[i]->parent_node = n;
    }
    if ((st = set_attr(n, name, &v)))
        return st;
    for (size_t i = 0; i < count; i++)
        graphs_out[i] = (poprt_graph *)v.graphs[i];
    return POPRT_OK;
}

poprt_status poprt_node_remove_attr(poprt_node *node, const char *name)
{
    const char *fn = "poprt_node_remove_attr";
    poprt_status st = attr_args(fn, node, name);
    if (st)
        return st;
    poprt__node *n = N(node);
    for (int i = 0; i < n->n_attrs; i++)
        if (!strcmp(n->attrs[i].name, name)) {
            memmove(&n->attrs[i], &n->attrs[i + 1], (size_t)(n->n_attrs - i - 1) * sizeof *n->attrs);
            n->n_attrs--;
            edited(n->graph->model);
            return POPRT_OK;
        }
    return poprt__err(POPRT_STATUS_NOT_FOUND, "%s: node '%s' (%s) has no attribute '%s'", fn,
                      n->name, n->op_type, name);
}
