/* eliminate_nop_if: an If whose condition is a constant is replaced by the
 * nodes of the branch it takes (moved into the enclosing graph; clashing
 * names are renamed). The If's output tensors keep their names. */
#include <string.h>
#include "ir/dtype.h"
#include "passes/rewrite.h"

static poprt_status move_tensor(poprt__graph *g, poprt__graph *b, poprt__tensor *t)
{
    poprt__map_del(&b->by_name, t->name);
    if (poprt__graph_find(g, t->name)) {
        const char *nn = poprt__model_unique_name(g->model, t->name);
        if (!nn)
            return POPRT_STATUS_OUT_OF_MEMORY;
        t->name = nn;
    }
    t->graph = g;
    t->id = (int)g->tensors.len;
    if (poprt__vec_push(&g->tensors, t) || poprt__map_put(&g->by_name, t->name, t))
        return POPRT_STATUS_OUT_OF_MEMORY;
    return POPRT_OK;
}

static poprt_status set_parent(poprt__graph *body, void *g)
{
    body->parent = g;
    return POPRT_OK;
}

static poprt_status inline_branch(poprt__graph *g, poprt__node *n, poprt__graph *b)
{
    poprt_status st = POPRT_OK;
    for (size_t i = 0; i < b->tensors.len && !st; i++)
        st = move_tensor(g, b, b->tensors.items[i]);
    for (size_t i = 0; i < b->initializers.len && !st; i++)
        st = poprt__vec_push(&g->initializers, b->initializers.items[i]);
    for (size_t i = 0; i < b->nodes.len && !st; i++) {
        poprt__node *c = b->nodes.items[i];
        c->graph = g;
        poprt__rw_each_body(c, set_parent, g);
        st = poprt__vec_push(&g->nodes, c);
    }
    /* the branch's nodes are g's now; its outputs list is read below, after
     * the If (and with it the branch) is removed */
    poprt__vec outs = {0};
    for (size_t k = 0; k < b->outputs.len && !st; k++)
        st = poprt__vec_push(&outs, b->outputs.items[k]);
    if (st) {
        poprt__vec_free(&outs);
        return poprt__rw_oom();
    }
    b->nodes.len = 0;
    for (size_t k = 0; k < outs.len; k++)
        ((poprt__tensor *)outs.items[k])->is_output = 0;
    poprt__graph_remove_node(g, n);
    for (int k = 0; k < n->n_outputs && (size_t)k < outs.len && !st; k++) {
        poprt__tensor *y = n->outputs[k], *bo = outs.items[k];
        if (!y)
            continue;
        int shared = 0;
        for (size_t j = 0; j < outs.len; j++)
            shared += outs.items[j] == bo;
        poprt__node *p = bo->producer;
        if (shared == 1 && p && bo->graph == g && p->graph == g && !bo->is_input &&
            !bo->is_initializer) {
            poprt__graph_replace_uses(g, bo, y);
            poprt__rw_set_output(p, bo->producer_slot, y);
            bo->producer = NULL;
            continue;
        }
        /* the branch passes through a value defined elsewhere */
        if (!poprt__rw_node1(g, "Identity", "", 1, &bo, y, NULL)) {
            st = poprt__rw_oom();
            break;
        }
    }
    poprt__vec_free(&outs);
    return st;
}

static poprt_status nop_if(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        poprt__tensor *c = poprt__node_in(n, 0);
        if (!poprt__rw_is(n, "If") || !poprt__rw_is_const(c) || poprt__type_numel(&c->type) != 1)
            continue;
        const void *cv = poprt__tensor_data(c); /* one element: copied at load, never NULL */
        int taken = c->type.elem == POPRT_DTYPE_BOOL ? ((const uint8_t *)cv)[0] != 0
                                                     : poprt__load_f64(cv, c->type.elem, 0) != 0;
        const poprt__attr *a = poprt__node_attr(n, taken ? "then_branch" : "else_branch");
        /* a taken branch whose inference failed stays in its If, which
         * reports the error when it runs (poprt__subgraph_infer) */
        if (!a || a->type != POPRT__ATTR_GRAPH || !a->g || a->g->inputs.len ||
            (int)a->g->outputs.len != n->n_outputs || a->g->deferred)
            continue;
        poprt_status st = inline_branch(g, n, a->g);
        if (st)
            return st;
        *changed = 1;
        i = (size_t)-1; /* the node list changed: rescan */
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, nop_if, NULL, changed);
}

const poprt__pass poprt__pass_eliminate_nop_if = {
    "eliminate_nop_if",
    "replace an If with a constant condition by the nodes of the branch it takes", run};
