/* The inference driver: walks a graph in topological order, calls each
 * operator's inference function and merges the result with what the file
 * declared; optionally folds constant nodes through the runtime. */
#include <string.h>
#include "ir/op.h"
#include "ir/schema.h"

/* An inferred output's type: a rank libpoprt handles, a size that fits. */
static poprt_status check_out(const poprt__infer_ctx *c, int j)
{
    const poprt__type *t = &c->out[j];
    const poprt__tensor *v = poprt__node_out(c->node, j);
    if (t->kind != POPRT__KIND_TENSOR)
        return POPRT_OK;
    if (t->rank > POPRT__MAX_RANK)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_UNSUPPORTED,
                               "output %d '%s' would have rank %d; libpoprt handles ranks up to %d",
                               j, v ? v->name : "", t->rank, POPRT__MAX_RANK);
    size_t bytes = t->elem ? poprt__dtype_size((poprt_dtype)t->elem) : 1;
    for (int i = 0; i < t->rank; i++) {
        int64_t d = t->dims[i].value;
        if (d >= 0 && !poprt__size_fits(&bytes, d))
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                                   "output %d '%s' would have more elements than fit in memory "
                                   "(dimension %d is %lld)",
                                   j, v ? v->name : "", i, (long long)d);
    }
    /* a static size past the model's limit (unknown dims count as 0 here) */
    const poprt__limits *lim = poprt__node_limits(c->node);
    int known = 1;
    for (int i = 0; i < t->rank; i++)
        known &= t->dims[i].value >= 0;
    if (known && bytes > lim->max_tensor_bytes)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_LIMIT_EXCEEDED,
                               "output %d '%s' would hold %zu bytes (option 'max_tensor_bytes' "
                               "is %llu)",
                               j, v ? v->name : "", bytes,
                               (unsigned long long)lim->max_tensor_bytes);
    return POPRT_OK;
}

poprt_status poprt__node_infer(poprt__infer_ctx *c)
{
    const poprt__node *n = c->node;
    const size_t failed = c->arena->failed;
    poprt_status st = poprt__schema_check_types(c, 0);
    if (!st && n->op && n->op->infer)
        st = n->op->infer(c);
    /* the inference helpers leave a type unknown when out of memory */
    if (!st && c->arena->failed != failed)
        st = poprt__node_err(n, POPRT_STATUS_OUT_OF_MEMORY, "out of memory inferring types");
    for (int j = 0; !st && j < c->n_out; j++)
        st = check_out(c, j);
    if (!st)
        st = poprt__schema_check_types(c, 1);
    return st;
}

/* Keep declared information where inference knows less (symbolic names,
 * dims the operator could not compute). */
static void merge_type(poprt__arena *a, poprt__type *decl, const poprt__type *inf)
{
    if (inf->kind == POPRT__KIND_UNKNOWN)
        return;
    if (decl->kind == POPRT__KIND_UNKNOWN || decl->kind != inf->kind) {
        if (poprt__type_copy(a, decl, inf) != POPRT_OK)
            decl->kind = POPRT__KIND_UNKNOWN;
        return;
    }
    if (inf->kind != POPRT__KIND_TENSOR) {
        if (inf->inner) {
            if (!decl->inner) {
                decl->inner = poprt__arena_alloc(a, sizeof *decl->inner);
                if (!decl->inner)
                    return;
                decl->inner->rank = -1;
            }
            merge_type(a, decl->inner, inf->inner);
        }
        return;
    }
    if (inf->elem)
        decl->elem = inf->elem;
    if (inf->rank < 0)
        return;
    if (decl->rank != inf->rank) {
        poprt__type keep = *decl;
        if (poprt__type_copy(a, decl, inf) != POPRT_OK)
            *decl = keep;
        return;
    }
    for (int i = 0; i < inf->rank; i++) {
        if (inf->dims[i].value >= 0)
            decl->dims[i] = inf->dims[i];
        else if (inf->dims[i].param && decl->dims[i].value < 0)
            decl->dims[i].param = inf->dims[i].param;
    }
}

static int foldable(const poprt__node *n, const poprt__folder *f)
{
    if (!f || (n->op->flags & (POPRT__OP_NO_FOLD | POPRT__OP_CONTROL)))
        return 0;
    int shape_only = n->domain[0] == 0 &&
                     (strcmp(n->op_type, "Shape") == 0 || strcmp(n->op_type, "Size") == 0);
    for (int i = 0; i < n->n_inputs; i++) {
        const poprt__tensor *t = n->inputs[i];
        if (!t)
            continue;
        if (t->type.kind != POPRT__KIND_TENSOR)
            return 0;
        if (shape_only ? !poprt__type_is_static(&t->type) : !t->raw)
            return 0;
    }
    for (int j = 0; j < n->n_outputs; j++) {
        const poprt__tensor *t = n->outputs[j];
        if (!t)
            continue;
        int64_t numel = poprt__type_numel(&t->type);
        if (numel < 0 || t->type.elem == POPRT_DTYPE_STRING)
            return 0;
        if ((uint64_t)numel * poprt__dtype_size((poprt_dtype)t->type.elem) > f->max_bytes)
            return 0;
    }
    return 1;
}

const void *poprt__ival_data(const poprt__ival *v)
{
    return v->data ? v->data : v->src ? poprt__tensor_data(v->src) : NULL;
}

static poprt_status infer_node(poprt__node *n, const poprt__folder *folder)
{
    poprt__model *m = n->graph->model;
    poprt__ival in_stack[16];
    poprt__type out_stack[8];
    poprt__ival *in = n->n_inputs <= 16 ? in_stack : poprt__calloc((size_t)n->n_inputs, sizeof *in);
    poprt__type *out = n->n_outputs <= 8 ? out_stack : poprt__calloc((size_t)n->n_outputs, sizeof *out);
    poprt_status st = POPRT_OK;
    if (!in || !out) {
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory inferring node '%s'", n->name);
        goto done;
    }
    /* subgraphs first: control-flow inference reads their output types */
    for (int a = 0; a < n->n_attrs && !st; a++) {
        poprt__attr *at = &n->attrs[a];
        if (at->type == POPRT__ATTR_GRAPH && at->g)
            st = poprt__subgraph_infer(at->g, folder);
        for (int64_t k = 0; !st && at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
            if (at->graphs[k])
                st = poprt__subgraph_infer(at->graphs[k], folder);
    }
    if (st)
        goto done;
    for (int i = 0; i < n->n_inputs; i++) {
        poprt__tensor *t = n->inputs[i];
        in[i].type = t ? &t->type : NULL;
        in[i].data = t && !poprt__tensor_data_lazy(t) ? poprt__tensor_data(t) : NULL;
        in[i].src = t && t->raw ? t : NULL;
        in[i].nbytes = t ? t->nbytes : 0;
    }
    memset(out, 0, (size_t)n->n_outputs * sizeof *out);
    for (int j = 0; j < n->n_outputs; j++)
        out[j].rank = -1;
    poprt__infer_ctx c = {.node = n, .opset = n->opset, .n_in = n->n_inputs, .in = in,
                          .n_out = n->n_outputs, .out = out, .arena = &m->arena};
    if ((st = poprt__node_infer(&c)))
        goto done;
    const size_t failed = m->arena.failed;
    for (int j = 0; j < n->n_outputs; j++)
        if (n->outputs[j])
            merge_type(&m->arena, &n->outputs[j]->type, &out[j]);
    if (m->arena.failed != failed) {
        st = POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "out of memory recording inferred types");
        goto done;
    }
    if (foldable(n, folder)) {
        st = folder->fn(n, folder->ctx);
        if (st)
            st = poprt__err_prefix(st, "constant folding: ");
        for (int i = 0; !st && i < n->n_inputs; i++)
            if (n->inputs[i])
                n->inputs[i]->fed_fold = 1; /* its value lives on in the result */
    }
done:
    if (in != in_stack)
        poprt__free(in);
    if (out != out_stack)
        poprt__free(out);
    return st;
}

poprt_status poprt__graph_infer(poprt__graph *g, const poprt__folder *folder)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (!n->op)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "schema not resolved");
        poprt_status st = infer_node(n, folder);
        if (st)
            return st;
    }
    return POPRT_OK;
}

poprt_status poprt__subgraph_infer(poprt__graph *sub, const poprt__folder *folder)
{
    sub->deferred = POPRT_OK;
    sub->deferred_msg = NULL;
    poprt_status st = poprt__graph_infer(sub, folder);
    if (!st || st == POPRT_STATUS_OUT_OF_MEMORY || st == POPRT_STATUS_INTERNAL)
        return st;
    const char *msg = poprt__arena_strdup(&sub->model->arena, poprt__last_error());
    if (!msg)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory recording an error of "
                                                      "subgraph '%s'", sub->name);
    sub->deferred = st;
    sub->deferred_msg = msg;
    return POPRT_OK;
}
