/* replace_where_mask: attention masking by Where(cond, scores, C) (or
 * Where(cond, C, scores)) with a constant C <= -1e4 feeding a Softmax
 * becomes scores + Where(cond, 0, C): the select runs on the small mask
 * (typically [B,1,1,S]) and the big scores tensor only sees a broadcast Add.
 * After the Softmax the results agree for every row with at least one
 * unmasked position (exp(C + s) underflows to 0 like exp(C)); fully masked
 * rows differ (softmax of the scores instead of uniform). */
#include "passes/util_replace.h"

static poprt_status rewrite(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__vec v = {0};
    poprt_status st = rp_collect(g, "Where", &v);
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__node *n = v.items[i];
        poprt__tensor *c = poprt__node_in(n, 0), *y = poprt__node_out(n, 0);
        if (!c || !y || n->n_inputs != 3 || !n->inputs[1] || !n->inputs[2])
            continue;
        poprt__node *sm = poprt__graph_sole_consumer(g, y);
        if (!sm || !(rp_is(sm, "Softmax") || (strcmp(sm->op_type, "SoftmaxV2") == 0 &&
                                              strcmp(sm->domain, "ai.poprt") == 0)))
            continue;
        double cv;
        int slot = -1; /* which branch holds the mask constant */
        for (int b = 1; b <= 2 && slot < 0; b++)
            if (rp_const_uniform(n->inputs[b], &cv) && cv <= -1e4 &&
                !n->inputs[3 - b]->data)
                slot = b;
        if (slot < 0)
            continue;
        poprt__tensor *x = n->inputs[3 - slot], *k = n->inputs[slot];
        if (!poprt__dtype_is_float(x->type.elem) || x->type.elem != k->type.elem)
            continue;
        poprt__tensor *z = rp_const_of(g, "zero", x->type.elem, 0, 0.0);
        poprt__tensor *wins[3] = {c, slot == 1 ? k : z, slot == 1 ? z : k};
        poprt__node *w = z ? rp_node(g, "Where", "", 3, wins, NULL, "additive_mask") : NULL;
        poprt__tensor *ains[2] = {x, w ? w->outputs[0] : NULL};
        if (!w || !rp_node(g, "Add", "", 2, ains, y, NULL)) {
            st = rp_oom();
            break;
        }
        rp_drop(g, n);
        (*changed)++;
    }
    poprt__vec_free(&v);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    poprt_status st = rp_no_args("replace_where_mask", args);
    return st ? st : rp_each_graph(m->graph, rewrite, NULL, changed);
}

const poprt__pass poprt__pass_replace_where_mask = {
    "replace_where_mask",
    "attention mask Where(cond, scores, C<=-1e4) -> Softmax becomes scores + Where(cond, 0, C)",
    run};
