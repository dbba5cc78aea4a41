/* Schema resolution, topological order and structural validation. */
#include <string.h>
#include "ir/op.h"
#include "ir/schema.h"

static int node_has_graphs(const poprt__node *n)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (n->attrs[i].type == POPRT__ATTR_GRAPH || n->attrs[i].type == POPRT__ATTR_GRAPHS)
            return 1;
    return 0;
}

static poprt_status collect_outer(const poprt__graph *sub, poprt__vec *out)
{
    for (size_t i = 0; i < sub->nodes.len; i++) {
        const poprt__node *n = sub->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++) {
            poprt__tensor *t = n->inputs[k];
            if (!t || t->graph == sub)
                continue;
            /* defined outside this subgraph: an outer-scope read */
            int seen = 0;
            for (size_t j = 0; j < out->len && !seen; j++)
                seen = out->items[j] == t;
            if (!seen && poprt__vec_push(out, t))
                return POPRT_STATUS_OUT_OF_MEMORY;
        }
        if (node_has_graphs(n)) {
            poprt__vec inner = {0};
            poprt_status st = poprt__node_implicit_inputs(n, &inner);
            for (size_t j = 0; st == POPRT_OK && j < inner.len; j++) {
                poprt__tensor *t = inner.items[j];
                if (t->graph == sub)
                    continue;
                int seen = 0;
                for (size_t q = 0; q < out->len && !seen; q++)
                    seen = out->items[q] == t;
                if (!seen)
                    st = poprt__vec_push(out, t);
            }
            poprt__vec_free(&inner);
            if (st)
                return st;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__node_implicit_inputs(const poprt__node *n, poprt__vec *out)
{
    for (int i = 0; i < n->n_attrs; i++) {
        const poprt__attr *a = &n->attrs[i];
        if (a->type == POPRT__ATTR_GRAPH && a->g) {
            if (collect_outer(a->g, out))
                return POPRT_STATUS_OUT_OF_MEMORY;
        } else if (a->type == POPRT__ATTR_GRAPHS) {
            for (int64_t k = 0; k < a->n; k++)
                if (a->graphs[k] && collect_outer(a->graphs[k], out))
                    return POPRT_STATUS_OUT_OF_MEMORY;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__graph_resolve(poprt__graph *g)
{
    poprt__model *m = g->model;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        int64_t opset = poprt__model_opset(m, n->domain);
        if (opset == 0 && !(n->domain[0] == 0 || strcmp(n->domain, "ai.onnx") == 0))
            return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED,
                                   "domain '%s' is not imported by the model", n->domain);
        if (opset == 0)
            opset = 1;
        const poprt__op *op = poprt__op_find(n->domain, n->op_type, opset);
        if (!op) {
            if (poprt__op_find(n->domain, n->op_type, 0))
                return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED,
                                       "operator is not supported at opset %lld",
                                       (long long)opset);
            return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "unknown operator '%s%s%s'",
                                   n->domain, *n->domain ? "." : "", n->op_type);
        }
        n->op = op;
        n->opset = (int)opset;
        n->schema = poprt__schema_find(n->domain, n->op_type, opset);
        if (n->n_inputs < op->min_inputs || (op->max_inputs >= 0 && n->n_inputs > op->max_inputs))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "has %d inputs, the operator takes %d to %d", n->n_inputs,
                                   op->min_inputs, op->max_inputs);
        if (n->n_outputs < op->min_outputs ||
            (op->max_outputs >= 0 && n->n_outputs > op->max_outputs))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "has %d outputs, the operator gives %d to %d", n->n_outputs,
                                   op->min_outputs, op->max_outputs);
        for (int a = 0; a < n->n_attrs; a++) {
            poprt__attr *at = &n->attrs[a];
            if (at->type == POPRT__ATTR_GRAPH && at->g) {
                poprt_status st = poprt__graph_resolve(at->g);
                if (st)
                    return st;
            } else if (at->type == POPRT__ATTR_GRAPHS) {
                for (int64_t k = 0; k < at->n; k++) {
                    poprt_status st = at->graphs[k] ? poprt__graph_resolve(at->graphs[k]) : POPRT_OK;
                    if (st)
                        return st;
                }
            }
        }
    }
    return POPRT_OK;
}

/* Kahn's algorithm, FIFO in the current order, so already-sorted graphs keep
 * their order. Dependencies include outer-scope reads of subgraphs. */
poprt_status poprt__graph_toposort(poprt__graph *g)
{
    size_t nn = g->nodes.len, nt = g->tensors.len;
    poprt_status st = POPRT_OK;
    int *pending = poprt__calloc(nn ? nn : 1, sizeof *pending);
    poprt__vec *deps = poprt__calloc(nn ? nn : 1, sizeof *deps);   /* node -> tensors it waits on */
    size_t *cons_count = poprt__calloc(nt + 1, sizeof *cons_count); /* CSR: tensor -> consumers */
    size_t *cons_start = poprt__calloc(nt + 2, sizeof *cons_start);
    poprt__node **order = poprt__calloc(nn ? nn : 1, sizeof *order);
    poprt__node **cons = NULL;
    if (!pending || !deps || !cons_count || !cons_start || !order) {
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory sorting graph '%s'", g->name);
        goto done;
    }
    for (size_t i = 0; i < nn; i++)
        ((poprt__node *)g->nodes.items[i])->id = (int)i;
    /* dependency lists: tensors of this graph produced by a node of this graph */
    for (size_t i = 0; i < nn && !st; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs && !st; k++) {
            poprt__tensor *t = n->inputs[k];
            if (t && t->graph == g && t->producer)
                st = poprt__vec_push(&deps[i], t);
        }
        if (!st && node_has_graphs(n)) {
            poprt__vec outer = {0};
            st = poprt__node_implicit_inputs(n, &outer);
            for (size_t j = 0; !st && j < outer.len; j++) {
                poprt__tensor *t = outer.items[j];
                if (t->graph == g && t->producer)
                    st = poprt__vec_push(&deps[i], t);
            }
            poprt__vec_free(&outer);
        }
    }
    if (st)
        goto done;
    /* already in order (a saved program, a re-check after a pass that kept
     * the order): leave it exactly as it is */
    int sorted = 1;
    for (size_t i = 0; i < nn && sorted; i++)
        for (size_t j = 0; j < deps[i].len && sorted; j++) {
            const poprt__tensor *t = deps[i].items[j];
            sorted = t->producer->graph != g || (size_t)t->producer->id < i;
        }
    if (sorted)
        goto done;
    for (size_t i = 0; i < nn; i++) {
        pending[i] = (int)deps[i].len;
        for (size_t j = 0; j < deps[i].len; j++)
            cons_count[((poprt__tensor *)deps[i].items[j])->id]++;
    }
    for (size_t t = 0; t < nt; t++)
        cons_start[t + 1] = cons_start[t] + cons_count[t];
    cons = poprt__calloc(cons_start[nt] + 1, sizeof *cons);
    if (!cons) {
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory sorting graph '%s'", g->name);
        goto done;
    }
    memset(cons_count, 0, (nt + 1) * sizeof *cons_count);
    for (size_t i = 0; i < nn; i++)
        for (size_t j = 0; j < deps[i].len; j++) {
            int tid = ((poprt__tensor *)deps[i].items[j])->id;
            cons[cons_start[tid] + cons_count[tid]++] = g->nodes.items[i];
        }
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < nn; i++)
        if (pending[i] == 0)
            order[tail++] = g->nodes.items[i];
    while (head < tail) {
        poprt__node *n = order[head++];
        for (int k = 0; k < n->n_outputs; k++) {
            poprt__tensor *t = n->outputs[k];
            if (!t || t->graph != g)
                continue;
            for (size_t c = cons_start[t->id]; c < cons_start[t->id] + cons_count[t->id]; c++) {
                poprt__node *m = cons[c];
                if (--pending[m->id] == 0)
                    order[tail++] = m;
            }
            cons_count[t->id] = 0; /* a node listing one output twice must not double-release */
        }
    }
    if (tail != nn) {
        for (size_t i = 0; i < nn; i++)
            if (pending[i] > 0) {
                poprt__node *n = g->nodes.items[i];
                st = POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                     "is on a cycle (graph '%s' is not a DAG)", g->name);
                break;
            }
        goto done;
    }
    memcpy(g->nodes.items, order, nn * sizeof *order);
    for (size_t i = 0; i < nn; i++)
        order[i]->id = (int)i;
done:
    if (deps)
        for (size_t i = 0; i < nn; i++)
            poprt__vec_free(&deps[i]);
    poprt__free(deps);
    poprt__free(pending);
    poprt__free(cons_count);
    poprt__free(cons_start);
    poprt__free(cons);
    poprt__free(order);
    return st;
}

/* The node holding g (or a graph g is nested in) when that node produces t:
 * a subgraph reading its own enclosing node's output, a cycle no order can
 * run. NULL otherwise. */
static const poprt__node *enclosing_producer(const poprt__graph *g, const poprt__tensor *t)
{
    if (!t || t->graph == g || !t->producer)
        return NULL;
    for (const poprt__graph *gg = g; gg && gg != t->graph; gg = gg->parent)
        if (gg->parent_node == t->producer)
            return gg->parent_node;
    return NULL;
}

/* Producers, definitions and arity of g and its subgraphs. */
static poprt_status check_graph(poprt__graph *g)
{
    for (size_t i = 0; i < g->tensors.len; i++) {
        poprt__tensor *t = g->tensors.items[i];
        t->producer = NULL;
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_outputs; k++) {
            poprt__tensor *t = n->outputs[k];
            if (!t)
                continue;
            if (t->graph != g)
                return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                       "output '%s' is already defined in an enclosing graph",
                                       t->name);
            if (t->producer)
                return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                       "output '%s' is also produced by node '%s'", t->name,
                                       t->producer->name);
            if (t->is_initializer || t->is_input)
                return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                       "output '%s' is also a graph input or initializer",
                                       t->name);
            t->producer = n;
            t->producer_slot = k;
        }
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++) {
            poprt__tensor *t = n->inputs[k];
            if (t && !t->producer && !t->is_input && !t->is_initializer && !t->raw)
                return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                       "input %d '%s' is not a graph input, an initializer or "
                                       "the output of any node",
                                       k, t->name);
            const poprt__node *e = enclosing_producer(g, t);
            if (e)
                return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                       "input %d '%s' is an output of node '%s', which holds "
                                       "this subgraph",
                                       k, t->name, e->name);
        }
        for (int a = 0; a < n->n_attrs; a++) {
            poprt__attr *at = &n->attrs[a];
            poprt_status st = POPRT_OK;
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                st = check_graph(at->g);
            for (int64_t k = 0; !st && at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                st = at->graphs[k] ? check_graph(at->graphs[k]) : POPRT_OK;
            if (st)
                return st;
        }
    }
    for (size_t i = 0; i < g->outputs.len; i++) {
        poprt__tensor *t = g->outputs.items[i];
        if (!t->producer && !t->is_input && !t->is_initializer && !t->raw && t->graph == g)
            return poprt__err(POPRT_STATUS_INVALID_MODEL,
                              "graph '%s': output '%s' is not produced by any node", g->name,
                              t->name);
        const poprt__node *e = enclosing_producer(g, t);
        if (e)
            return poprt__err(POPRT_STATUS_INVALID_MODEL,
                              "graph '%s': output '%s' is an output of node '%s', which holds "
                              "this graph",
                              g->name, t->name, e->name);
    }
    /* subgraphs were sorted by their own check_graph above */
    return poprt__graph_toposort(g);
}

poprt_status poprt__model_check(poprt__model *m)
{
    /* the use lists are kept by every change a pass makes; a list that
     * disagrees is a bug there: the tests stop on it, users get it rebuilt */
    poprt_status st = poprt__model_check_uses(m, 0);
    if (st && !poprt__ir_strict_uses())
        st = poprt__model_check_uses(m, 1);
    if (!st)
        st = poprt__model_validate_opsets(m);
    if (!st)
        st = poprt__graph_resolve(m->graph);
    if (!st)
        st = check_graph(m->graph);
    if (!st)
        st = poprt__model_validate(m);
    if (!st)
        st = poprt__graph_infer(m->graph, NULL);
    return st;
}
