/* replace_where_mask: attention masking by Where(cond, scores, C) (or
 * Where(cond, C, scores)) with a constant C <= -1e4 feeding a Softmax
 * becomes scores + Where(cond, 0, C): the select runs on the small mask
 * (typically [B,1,1,S]) and the big scores tensor only sees a broadcast Add.
 * After the Softmax the results agree for every row with at least one
 * unmasked position (exp(C + s) underflows to 0 like exp(C)); fully masked
 * rows differ (softmax of the scores instead of uniform). */
#include <string.h>
#include "passes/rewrite.h"

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *c = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
    if (!c || !y || n->n_inputs != 3 || !n->inputs[1] || !n->inputs[2])
        return POPRT_OK;
    poprt__node *sm = poprt__graph_sole_consumer(g, y);
    if (!sm || !(poprt__rw_is(sm, "Softmax") ||
                 (strcmp(sm->op_type, "SoftmaxV2") == 0 && strcmp(sm->domain, "ai.poprt") == 0)))
        return POPRT_OK;
    double cv;
    int slot = -1; /* which branch holds the mask constant */
    for (int b = 1; b <= 2 && slot < 0; b++)
        if (poprt__rw_uniform(n->inputs[b], POPRT__RW_VALUE, &cv) && cv <= -1e4 &&
            !n->inputs[3 - b]->raw)
            slot = b;
    if (slot < 0)
        return POPRT_OK;
    poprt__tensor *x = n->inputs[3 - slot], *k = n->inputs[slot];
    if (!poprt__dtype_is_float(x->type.elem) || x->type.elem != k->type.elem)
        return POPRT_OK;
    poprt__tensor *z = poprt__rw_new_scalar(g, "zero", x->type.elem, 0, 0.0);
    poprt__tensor *wins[3] = {c, slot == 1 ? k : z, slot == 1 ? z : k};
    poprt__node *w = z ? poprt__rw_node1(g, "Where", "", 3, wins, NULL, "additive_mask") : NULL;
    poprt__tensor *ains[2] = {x, w ? w->outputs[0] : NULL};
    if (!w || !poprt__rw_node1(g, "Add", "", 2, ains, y, NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, n);
    *done = 1;
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_where_mask", "Where", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_where_mask = {
    "replace_where_mask",
    "attention mask Where(cond, scores, C<=-1e4) -> Softmax becomes scores + Where(cond, 0, C)",
    run};
