/* Static memory plan for the main graph: every node output whose shape is
 * known before running gets a fixed offset in one arena. Offsets are
 * assigned greedily (largest first) so that tensors whose lifetimes overlap
 * never share bytes. */
#include <stdlib.h>
#include <string.h>
#include "runtime/runtime.h"

typedef struct {
    int id;
    size_t size;
    int first, last; /* step of definition, step of last use */
    int64_t off;
} interval;

static int by_size_desc(const void *a, const void *b)
{
    const interval *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? 1 : -1;
    return x->id - y->id;
}

static int by_off(const void *a, const void *b)
{
    const interval *x = *(interval *const *)a, *y = *(interval *const *)b;
    return (x->off > y->off) - (x->off < y->off);
}

poprt_status poprt__plan_build(const poprt__graph *g, poprt__plan *p)
{
    size_t nt = g->tensors.len;
    memset(p, 0, sizeof *p);
    p->offset = poprt__malloc((nt ? nt : 1) * sizeof *p->offset);
    int *first = poprt__malloc((nt ? nt : 1) * sizeof *first);
    int *last = poprt__malloc((nt ? nt : 1) * sizeof *last);
    interval *iv = poprt__calloc(nt ? nt : 1, sizeof *iv);
    interval **placed = poprt__calloc(nt ? 2 * nt : 1, sizeof *placed);
    poprt_status st = POPRT_OK;
    if (!p->offset || !first || !last || !iv || !placed) {
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory planning graph '%s'", g->name);
        goto done;
    }
    for (size_t i = 0; i < nt; i++) {
        p->offset[i] = -1;
        first[i] = -1;
        last[i] = -1;
    }
    int steps = (int)g->nodes.len;
    for (int s = 0; s < steps; s++) {
        const poprt__node *n = g->nodes.items[s];
        for (int k = 0; k < n->n_inputs; k++)
            if (n->inputs[k] && n->inputs[k]->graph == g)
                last[n->inputs[k]->id] = s;
        if (n->n_attrs) {
            poprt__vec outer = {0};
            st = poprt__node_implicit_inputs(n, &outer);
            for (size_t j = 0; j < outer.len; j++) {
                const poprt__tensor *t = outer.items[j];
                if (t->graph == g)
                    last[t->id] = s;
            }
            poprt__vec_free(&outer);
            if (st)
                goto done;
        }
        for (int k = 0; k < n->n_outputs; k++) {
            const poprt__tensor *t = n->outputs[k];
            if (t && first[t->id] < 0)
                first[t->id] = s;
        }
    }
    size_t ni = 0;
    for (size_t i = 0; i < nt; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (!t->producer || t->data || first[i] < 0 || t->type.kind != POPRT__KIND_TENSOR)
            continue;
        if (t->producer->op && (t->producer->op->flags & POPRT__OP_DYNAMIC))
            continue;
        int64_t numel = poprt__type_numel(&t->type);
        if (numel < 0 || t->type.rank > POPRT__MAX_RANK)
            continue;
        size_t bytes;
        if (!poprt__mul_size((size_t)numel, poprt_dtype_size((poprt_dtype)t->type.elem), &bytes))
            continue;
        iv[ni].id = (int)i;
        iv[ni].size = (bytes + 63) & ~(size_t)63;
        if (iv[ni].size == 0)
            iv[ni].size = 64;
        iv[ni].first = first[i];
        iv[ni].last = t->is_output ? steps : (last[i] < first[i] ? first[i] : last[i]);
        ni++;
    }
    qsort(iv, ni, sizeof *iv, by_size_desc);
    size_t np = 0, total = 0;
    for (size_t i = 0; i < ni; i++) {
        /* placed intervals overlapping in time, sorted by offset: first gap that fits */
        size_t nc = 0;
        for (size_t j = 0; j < np; j++)
            if (!(placed[j]->last < iv[i].first || iv[i].last < placed[j]->first))
                placed[np + nc++] = placed[j]; /* temporarily after the placed list */
        qsort(placed + np, nc, sizeof *placed, by_off);
        int64_t off = 0;
        for (size_t j = 0; j < nc; j++) {
            interval *c = placed[np + j];
            if (off + (int64_t)iv[i].size <= c->off)
                break;
            if (c->off + (int64_t)c->size > off)
                off = c->off + (int64_t)c->size;
        }
        iv[i].off = off;
        placed[np++] = &iv[i];
        if ((size_t)off + iv[i].size > total)
            total = (size_t)off + iv[i].size;
        p->offset[iv[i].id] = off;
    }
    p->arena_bytes = total;
done:
    poprt__free(first);
    poprt__free(last);
    poprt__free(iv);
    poprt__free(placed);
    if (st)
        poprt__plan_free(p);
    return st;
}

void poprt__plan_free(poprt__plan *p)
{
    poprt__free(p->offset);
    memset(p, 0, sizeof *p);
}
