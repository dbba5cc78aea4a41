/* serialize_matmul_add: a MatMul with constant weight [K, N] and its bias
 * Add become `factor` MatMul + Add pieces over column slices of the weight
 * and bias, concatenated on the last axis.
 * Arguments: factor=F[,nodes=[MatMul_1,...]] (the Add is the MatMul's only
 * reader; all such pairs when nodes is absent), or the reference's
 * MATMUL_NAME/ADD_NAME=F entries. Without a factor nothing changes.
 * CPU meaning: each piece touches 1/F of the weight and output, bounding
 * the working set; each output is the same dot product, so results agree
 * to rounding (the GEMM may block a narrower product differently). */
#include <stdio.h>
#include <stdlib.h>
#include "passes/transformer.h"

poprt_status poprt__tf_serialize(poprt__model *m, poprt__node *mm, poprt__node *add, int64_t factor,
                                 int mode, int *done);

/* The bias Add reading mm's output, or NULL. */
static poprt__node *bias_add(const poprt__graph *g, const poprt__node *mm)
{
    return poprt__rw_reader(g, mm->outputs[0], "Add");
}

static poprt_status one(poprt__model *m, poprt__node *mm, int64_t factor, int *changed)
{
    poprt__node *add = poprt__rw_is(mm, "MatMul") ? bias_add(m->graph, mm) : NULL;
    int done = 0;
    poprt_status st = add ? poprt__tf_serialize(m, mm, add, factor, 0, &done) : POPRT_OK;
    *changed |= done;
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    poprt__graph *g = m->graph;
    poprt__pass_args a;
    int64_t factor;
    *changed = 0;
    poprt_status st = poprt__pass_args_parse("serialize_matmul_add", args, NULL, &a);
    if (st || (st = poprt__pass_arg_int("serialize_matmul_add", &a, "factor", 0, &factor)))
        return st;
    int explicit_nodes = 0;
    for (int i = 0; i < a.n; i++) {
        const char *k = a.keys[i];
        if (!strcmp(k, "factor") || !strcmp(k, "nodes"))
            continue;
        explicit_nodes = 1;
        /* MATMUL/ADD=F: node names may hold '/', so match the whole key */
        poprt__node *found = NULL;
        char key[1024];
        for (size_t j = 0; j < g->nodes.len && !found; j++) {
            poprt__node *mm = g->nodes.items[j];
            poprt__node *ad = poprt__rw_is(mm, "MatMul") ? bias_add(g, mm) : NULL;
            if (ad && snprintf(key, sizeof key, "%s/%s", mm->name, ad->name) > 0 && !strcmp(key, k))
                found = mm;
        }
        char *e;
        long long f = strtoll(a.vals[i], &e, 10);
        if (!found || e == a.vals[i] || *e)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "pass 'serialize_matmul_add': '%s=%s' does not name a MatMul/Add "
                              "pair with a factor", k, a.vals[i]);
        if ((st = one(m, found, f, changed)))
            return st;
    }
    const char *nodes = poprt__pass_arg(&a, "nodes");
    if (nodes) {
        char buf[4096];
        const char *names[256];
        int nn = poprt__pass_node_names(nodes, buf, sizeof buf, names, 256);
        for (int i = 0; i < nn; i++) {
            poprt__node *mm = poprt__rw_find_node(g, names[i]);
            if (!poprt__rw_is(mm, "MatMul"))
                return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                  "pass 'serialize_matmul_add': no MatMul named '%s'", names[i]);
            if ((st = one(m, mm, factor, changed)))
                return st;
        }
    } else if (!explicit_nodes && factor >= 2) {
        /* the pairs present now (the pieces made here must not be cut again) */
        poprt__vec todo = {0};
        for (size_t i = 0; i < g->nodes.len; i++)
            if (poprt__rw_is(g->nodes.items[i], "MatMul") &&
                poprt__vec_push(&todo, g->nodes.items[i])) {
                poprt__vec_free(&todo);
                return poprt__rw_oom();
            }
        for (size_t i = 0; i < todo.len && !st; i++)
            st = one(m, todo.items[i], factor, changed);
        poprt__vec_free(&todo);
        if (st)
            return st;
    }
    if (*changed)
        poprt__graph_remove_dead(g);
    return POPRT_OK;
}

const poprt__pass poprt__pass_serialize_matmul_add = {
    "serialize_matmul_add",
    "MatMul+bias Add -> `factor` column pieces (MatMul+Add each) joined by Concat: bounds each "
    "GEMM's working set",
    run, 1};
