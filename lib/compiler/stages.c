/* Splitting a model annotated with pipeline stages into one model per stage
 * (stages.h). The whole model is shaped and inferred once, then each stage
 * is a copy of it keeping only its own nodes: what it reads from earlier
 * stages becomes its graph inputs (with the types inferred on the whole),
 * what later stages read from it becomes its graph outputs. */
#include <stdlib.h>
#include <string.h>
#include "compiler/stages.h"

#define MAX_STAGE 4096 /* stage numbers above it are surely a mistake */

static const char *meta_of(int n, const char *const *keys, const char *const *vals, const char *key)
{
    for (int i = 0; i < n; i++)
        if (strcmp(keys[i], key) == 0)
            return vals[i];
    return NULL;
}

static int64_t parse_count(const char *v)
{
    char *end;
    long long x = v ? strtoll(v, &end, 10) : 0;
    return v && *v && !*end && x >= 0 ? (int64_t)x : -1;
}

int64_t poprt__model_num_stages(const poprt__model *m)
{
    int64_t n =
        parse_count(meta_of(m->n_meta, m->meta_keys, m->meta_vals, "poprt.num_pipeline_stages"));
    return n > 0 ? n : 0;
}

/* The main-graph node a read by node n belongs to (n itself, or the node
 * holding the subgraph n lies in). */
static const poprt__node *top_node(const poprt__node *n, const poprt__graph *main)
{
    while (n && n->graph != main)
        n = n->graph->parent_node;
    return n;
}

/* Each main-graph node's dense stage (by node id), the stage count, and per
 * tensor (by id) the last stage reading it (-1: none). */
typedef struct split_info {
    int *stage;
    int *last_reader;
    int n;
} split_info;

static poprt_status assign(const poprt__graph *g, split_info *si)
{
    const size_t nn = g->nodes.len;
    si->stage = poprt__calloc(nn ? nn : 1, sizeof *si->stage);
    si->last_reader = poprt__calloc(g->tensors.len ? g->tensors.len : 1, sizeof *si->last_reader);
    int *dense = poprt__calloc(MAX_STAGE + 1, sizeof *dense);
    if (!si->stage || !si->last_reader || !dense) {
        poprt__free(dense);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory splitting pipeline stages");
    }
    for (size_t i = 0; i < nn; i++) {
        const poprt__node *n = g->nodes.items[i];
        const int64_t s =
            parse_count(meta_of(n->n_meta, n->meta_keys, n->meta_vals, "poprt.pipeline_stage"));
        if (s < 0 || s > MAX_STAGE) {
            poprt__free(dense);
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "no pipeline stage (metadata 'poprt.pipeline_stage' from 0 to "
                                   "%d): annotate every node with the manual_sharding pass",
                                   MAX_STAGE);
        }
        si->stage[i] = (int)s;
        dense[s] = 1;
    }
    /* stage numbers without a node are skipped */
    int next = 0;
    for (int s = 0; s <= MAX_STAGE; s++)
        dense[s] = dense[s] ? next++ : -1;
    for (size_t i = 0; i < nn; i++)
        si->stage[i] = dense[si->stage[i]];
    si->n = next;
    poprt__free(dense);
    return POPRT_OK;
}

/* Every read of a tensor made in stage j by a node of stage k: k >= j, or
 * the error naming both; records each tensor's last reading stage. */
static poprt_status check_order(const poprt__graph *g, split_info *si)
{
    for (size_t t = 0; t < g->tensors.len; t++) {
        const poprt__tensor *x = g->tensors.items[t];
        si->last_reader[t] = -1;
        const poprt__node *p = x->producer;
        const int made = p ? si->stage[p->id] : 0;
        for (const poprt__use *u = x->uses; u; u = u->next) {
            const poprt__node *r = top_node(u->node, g);
            if (!r)
                continue;
            const int k = si->stage[r->id];
            if (k < made)
                return POPRT__NODE_ERR(r, POPRT_STATUS_INVALID_MODEL,
                                       "pipeline stages out of order: this node of stage %d reads "
                                       "tensor '%s', made by node '%s' in the later stage %d",
                                       k, x->name, p->name, made);
            if (k > si->last_reader[t])
                si->last_reader[t] = k;
        }
    }
    return POPRT_OK;
}

/* Stage s of `full` (shaped and inferred; its nodes in the same order as
 * in the copy c made from it, tensors found by name) kept in c. */
static poprt_status keep_stage(const poprt__model *full, const split_info *si, int s,
                               poprt__model *c)
{
    const poprt__graph *fg = full->graph;
    poprt__graph *g = c->graph;
    if (g->nodes.len != fg->nodes.len)
        return poprt__err(POPRT_STATUS_INTERNAL, "pipeline stage %d: the model copy differs", s);
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (strcmp(n->name, ((const poprt__node *)fg->nodes.items[i])->name) != 0)
            return poprt__err(POPRT_STATUS_INTERNAL, "pipeline stage %d: the model copy differs",
                              s);
        if (si->stage[i] != s)
            poprt__graph_detach_node(n);
    }
    poprt__graph_compact(g);
    /* outputs: the model's made here (made by no node: stage 0's), and
     * what later stages read from here */
    poprt__vec outs = {0};
    poprt_status st = POPRT_OK;
    for (size_t i = 0; i < g->outputs.len && !st; i++) {
        const poprt__tensor *ft = fg->outputs.items[i];
        const int made = ft && ft->producer ? si->stage[ft->producer->id] : 0;
        if (ft && made == s)
            st =
                poprt__vec_push(&outs, g->outputs.items[i]) ? POPRT_STATUS_OUT_OF_MEMORY : POPRT_OK;
    }
    for (size_t t = 0; t < fg->tensors.len && !st; t++) {
        const poprt__tensor *ft = fg->tensors.items[t];
        poprt__tensor *x = poprt__graph_find(g, ft->name);
        if (x && ft->producer && si->stage[ft->producer->id] == s && si->last_reader[t] > s &&
            !ft->is_output && !ft->raw)
            st = poprt__vec_push(&outs, x) ? POPRT_STATUS_OUT_OF_MEMORY : POPRT_OK;
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.items[i])
            ((poprt__tensor *)g->outputs.items[i])->is_output = 0;
    poprt__graph_truncate_outputs(g, 0);
    for (size_t i = 0; i < outs.len && !st; i++) {
        ((poprt__tensor *)outs.items[i])->is_output = 1;
        st = poprt__graph_add_output(g, outs.items[i]);
    }
    poprt__vec_free(&outs);
    if (st)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory splitting pipeline stages");
    /* inputs: the model's this stage reads (or returns), then the tensors
     * of earlier stages it reads */
    size_t k = 0;
    for (size_t i = 0; i < g->inputs.len; i++) {
        poprt__tensor *x = g->inputs.items[i];
        if (x->n_uses || x->is_output || x->is_initializer)
            g->inputs.items[k++] = x;
        else
            x->is_input = 0;
    }
    g->inputs.len = k;
    for (size_t t = 0; t < fg->tensors.len; t++) {
        const poprt__tensor *ft = fg->tensors.items[t];
        poprt__tensor *x = poprt__graph_find(g, ft->name);
        if (!x || !ft->producer || x->producer || !x->n_uses)
            continue;
        if (x->raw) { /* folded on the whole model: a constant here */
            x->is_initializer = 1;
            st = poprt__vec_push(&g->initializers, x) ? POPRT_STATUS_OUT_OF_MEMORY : POPRT_OK;
        } else if (!poprt__type_is_static(&x->type)) {
            return poprt__err(POPRT_STATUS_SHAPE_MISMATCH,
                              "tensor '%s' goes from pipeline stage %d to stage %d without a "
                              "static shape (%s): fix the inputs' shapes with input_shape.<name>",
                              x->name, si->stage[ft->producer->id], s,
                              poprt__type_str(&c->arena, &x->type));
        } else {
            x->is_input = 1;
            st = poprt__vec_push(&g->inputs, x) ? POPRT_STATUS_OUT_OF_MEMORY : POPRT_OK;
        }
        if (st)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY,
                              "out of memory splitting pipeline stages");
    }
    poprt__graph_remove_dead(g); /* initializers other stages read */
    return POPRT_OK;
}

void poprt__stages_free(poprt__stages *s)
{
    for (int i = 0; s && s->models && i < s->n; i++)
        poprt__model_free(s->models[i]);
    if (s) {
        poprt__free(s->models);
        s->models = NULL;
        s->n = 0;
    }
}

poprt_status poprt__stages_split(const poprt__model *m, const poprt_options *o,
                                 const poprt__folder *folder, poprt__stages *out)
{
    memset(out, 0, sizeof *out);
    poprt__model *full;
    poprt_status st = poprt__model_clone(m, &full);
    if (st)
        return st;
    split_info si = {0};
    st = poprt__apply_input_shapes(full, o);
    if (!st)
        st = poprt__graph_toposort(full->graph);
    if (!st)
        st = poprt__model_check(full);
    if (!st)
        st = poprt__graph_infer(full->graph, folder);
    if (!st)
        st = assign(full->graph, &si);
    if (!st)
        st = check_order(full->graph, &si);
    if (!st && !(out->models = poprt__calloc((size_t)si.n, sizeof *out->models)))
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory splitting pipeline stages");
    for (int s = 0; s < si.n && !st; s++) {
        st = poprt__model_clone(full, &out->models[s]);
        if (!st) {
            out->n = s + 1;
            st = keep_stage(full, &si, s, out->models[s]);
        }
    }
    poprt__free(si.stage);
    poprt__free(si.last_reader);
    poprt__model_free(full);
    if (st)
        poprt__stages_free(out);
    return st;
}
