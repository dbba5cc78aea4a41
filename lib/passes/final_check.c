/* final_check: the last gate of a conversion. Re-validates the model
 * (structure, schemas, shape and type inference) and checks that libpoprt
 * can run it: every node, in subgraphs too, has a reference kernel, and
 * every graph input and output has a known element type. Does not change
 * the model. */
#include "kernels/kernel.h"
#include "passes/rewrite.h"

static poprt_status check_kernels(const poprt__graph *g);

static poprt_status check_body(poprt__graph *body, void *ctx)
{
    (void)ctx;
    return check_kernels(body);
}

static poprt_status check_kernels(const poprt__graph *g)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        if (!n->op || !poprt__kernel_find(n->domain, n->op_type, n->opset))
            return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED,
                                   "libpoprt has no kernel for %s%s%s (opset %d)",
                                   n->domain[0] ? n->domain : "", n->domain[0] ? "::" : "",
                                   n->op_type, n->opset);
        poprt_status st = poprt__rw_each_body(n, check_body, NULL);
        if (st)
            return st;
    }
    return POPRT_OK;
}

static poprt_status check_io(const poprt__vec *v, const char *what)
{
    for (size_t i = 0; i < v->len; i++) {
        const poprt__tensor *t = v->items[i];
        if (t->is_initializer)
            continue;
        if (t->type.kind == POPRT__KIND_UNKNOWN ||
            (t->type.kind == POPRT__KIND_TENSOR && !t->type.elem))
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "graph %s '%s' has no known type", what,
                              t->name);
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    poprt__pass_args a;
    static const char *const known[] = {NULL};
    poprt_status st = poprt__pass_args_parse("final_check", args, known, &a);
    *changed = 0;
    if (!st)
        st = poprt__model_check(m);
    if (!st)
        st = check_kernels(m->graph);
    if (!st)
        st = check_io(&m->graph->inputs, "input");
    if (!st)
        st = check_io(&m->graph->outputs, "output");
    if (!st)
        poprt__log(POPRT_LOG_INFO, "final_check: %zu nodes, every node has a kernel",
                   poprt__graph_count_nodes(m->graph));
    return st;
}

const poprt__pass poprt__pass_final_check = {
    "final_check",
    "validate the converted model: structure, dtypes and shapes, a libpoprt kernel for every op",
    run, 1};
