/* unique_name_for_nodes: gives every node of the model (subgraphs included)
 * a unique, non-empty name; nodes keep their names when already unique. */
#include "passes/rewrite.h"

typedef struct names {
    poprt__map seen;
    int renamed;
} names;

static poprt_status collect(poprt__graph *g, void *ctx, int *changed)
{
    names *s = ctx;
    (void)changed;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (n->name[0] && !poprt__map_get(&s->seen, n->name) && poprt__map_put(&s->seen, n->name, n))
            return poprt__rw_oom();
    }
    return POPRT_OK;
}

static poprt_status rename_nodes(poprt__graph *g, void *ctx, int *changed)
{
    names *s = ctx;
    poprt__arena *a = &g->model->arena;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (n->name[0] && poprt__map_get(&s->seen, n->name) == n)
            continue;
        const char *base = n->name[0] ? n->name : n->op_type;
        const char *nn;
        for (;;) {
            nn = poprt__arena_printf(a, "%s_%d", base, s->renamed++);
            if (!nn)
                return poprt__rw_oom();
            if (!poprt__map_get(&s->seen, nn))
                break;
        }
        n->name = nn;
        if (poprt__map_put(&s->seen, n->name, n))
            return poprt__rw_oom();
        *changed = 1;
    }
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    *changed = 0;
    names s = {{0}, 0};
    int dummy = 0;
    poprt_status st = poprt__rw_each_graph(m->graph, collect, &s, &dummy);
    if (!st)
        st = poprt__rw_each_graph(m->graph, rename_nodes, &s, changed);
    poprt__map_free(&s.seen);
    return st;
}

const poprt__pass poprt__pass_unique_name_for_nodes = {
    "unique_name_for_nodes",
    "give every node (subgraphs included) a unique, non-empty name; duplicates get a _N suffix",
    run};
