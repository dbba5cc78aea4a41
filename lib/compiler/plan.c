/* Static memory plan for the main graph.
 *
 * Every node output whose shape is known before running gets a fixed offset
 * in one arena, so run() never allocates. Four ways to save memory and
 * copies, decided here once:
 *   - views: Reshape, Flatten, Squeeze, Unsqueeze, Identity and inference
 *     Dropout produce their input's bytes unchanged; such a node does not
 *     run, its output aliases its input (arena, constant or the caller's
 *     input buffer);
 *   - in place: an elementwise node whose input dies at that node writes its
 *     output over the input's arena bytes;
 *   - Concat in its output: when every dim before the axis is 1, input i of
 *     a Concat is one contiguous byte range of the output, at the sum of the
 *     byte sizes of inputs 0..i-1. Each input's group is then placed there,
 *     so the producers write the result and the Concat does not run. This
 *     needs a default-domain Concat with static shapes and one element type
 *     (not string), an output planned in the arena, and inputs that are
 *     planned arena tensors produced by nodes of the graph (no constants,
 *     graph inputs or views of them), nonempty, in distinct groups other
 *     than the output's. A group moves as a whole and once: the input must
 *     start its group and have its size, and must not already lie in a
 *     Concat output (an input read by two Concats goes to the first only;
 *     a Concat output that feeds another Concat moves with its parts);
 *   - reuse: the remaining buffers are placed greedily (largest first) so
 *     that buffers whose lifetimes overlap never share bytes.
 * Aliases are grouped (union-find); each member keeps its byte offset in the
 * group's root. A group's lifetime runs from the first write of any member
 * (a Concat's parts are written before the Concat's step) to the last read
 * of any member. The three decisions are taken in one pass in execution
 * order, each at its node's step, so the in-place test sees the lifetimes
 * Concats have merged: an op after a Concat never writes over bytes another
 * reader of a part still needs. A Concat's parts hold their share of the
 * output's bytes from their own write on, which can raise the peak; if the
 * arena comes out larger than without Concat placement, the plan without
 * it is kept. */
#include <stdlib.h>
#include <string.h>
#include "compiler/program.h"

typedef struct {
    int id; /* group root */
    size_t size;
    int first, last;
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

/* The planner's state, by tensor id. Alias groups are a union-find whose
 * links carry byte offsets: rel[i] is i's offset inside parent[i]. */
typedef struct planner {
    const poprt__graph *g;
    int *first, *last; /* per tensor: step of its write, of its last read */
    int *parent;
    int64_t *rel;
    int *gfirst, *glast;         /* per group root: earliest write, latest read */
    unsigned char *arena_member; /* owns or shares arena bytes */
    unsigned char *in_concat;    /* lies in an elided Concat's output (as a part) */
    unsigned char *mark;         /* scratch, all 0 between uses */
} planner;

/* The group root of i; afterwards rel[i] is i's byte offset in the root. */
static int find(planner *pl, int i)
{
    int r = i;
    while (pl->parent[r] != r)
        r = pl->parent[r];
    int64_t off = 0;
    for (int x = i; x != r; x = pl->parent[x])
        off += pl->rel[x];
    while (i != r) { /* path compression, offsets summed along the way */
        int next = pl->parent[i];
        int64_t next_off = off - pl->rel[i];
        pl->parent[i] = r;
        pl->rel[i] = off;
        off = next_off;
        i = next;
    }
    return r;
}

static int is_view_op(const poprt__node *n)
{
    static const char *const ops[] = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                      "Dropout"};
    if (n->domain[0] || n->n_outputs < 1 || !n->outputs[0] || n->n_inputs < 1 || !n->inputs[0])
        return 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->op_type, ops[i]) == 0) {
            if (i == 5) {
                /* Dropout is a view only in inference mode with no mask read
                 * (old exporters name a mask output that nothing reads) */
                if (n->n_inputs > 2 && n->inputs[2])
                    return 0;
                if (n->n_outputs > 1 && n->outputs[1] &&
                    (n->outputs[1]->is_output || poprt__tensor_use_count(n->graph, n->outputs[1])))
                    return 0;
            }
            return 1;
        }
    return 0;
}

/* Elementwise ops whose kernels read element i before writing element i
 * (input 0 may share the output's bytes when shapes and types match). */
static int is_inplace_op(const poprt__node *n)
{
    static const char *const ops[] = {
        "Relu",  "LeakyRelu", "Sigmoid", "Tanh",  "Elu",      "Selu",     "Celu",  "HardSigmoid",
        "HardSwish", "Softplus", "Softsign", "Gelu", "Mish", "Swish", "Clip", "Abs", "Neg",
        "Exp",   "Log",   "Sqrt",  "Reciprocal", "Erf", "Floor", "Ceil", "Round", "Sign",
        "Sin",   "Cos",   "Add",   "Sub",   "Mul",   "Div",   "Pow",   "Max",   "Min",
        "Sum",   "PRelu", "ThresholdedRelu", "Shrink"};
    if (n->n_outputs != 1 || !n->outputs[0])
        return 0;
    /* the compiler's elementwise chains read element i of every input
     * before they write element i (lib/kernels/ref/poprt_compiled.c) */
    if (strcmp(n->domain, "ai.poprt") == 0)
        return strcmp(n->op_type, "FusedElementwise") == 0;
    if (n->domain[0])
        return 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(n->op_type, ops[i]) == 0)
            return 1;
    return 0;
}

static int planned_kind(const poprt__tensor *t, int first)
{
    if (!t->producer || t->raw || first < 0 || t->type.kind != POPRT__KIND_TENSOR)
        return 0;
    if (t->producer->op && (t->producer->op->flags & POPRT__OP_DYNAMIC))
        return 0;
    if (t->type.elem == POPRT_DTYPE_STRING)
        return 0;
    int64_t numel = poprt__type_numel(&t->type);
    return numel >= 0 && t->type.rank <= POPRT__MAX_RANK;
}

static size_t tensor_bytes(const poprt__tensor *t)
{
    return (size_t)poprt__type_numel(&t->type) * poprt__dtype_size((poprt_dtype)t->type.elem);
}

/* Whether group root r owns or shares arena bytes. */
static int in_arena(const planner *pl, int r)
{
    return pl->arena_member[r] || planned_kind(pl->g->tensors.items[r], pl->first[r]);
}

/* Places the inputs of Concat node n inside its output when the rule at the
 * top of this file allows it; returns 1 if it did. Called at n's step. */
static int place_concat(planner *pl, const poprt__node *n)
{
    const poprt__graph *g = pl->g;
    const poprt__tensor *out = n->n_outputs == 1 ? n->outputs[0] : NULL;
    if (n->domain[0] || strcmp(n->op_type, "Concat") != 0 || !out || n->n_inputs < 1)
        return 0;
    if (out->producer != n || !planned_kind(out, pl->first[out->id]) ||
        !poprt__type_is_static(&out->type) || find(pl, out->id) != out->id)
        return 0;
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(n, "axis", 1), out->type.rank, &axis))
        return 0;
    for (int d = 0; d < axis; d++)
        if (out->type.dims[d].value != 1)
            return 0; /* an input would be several byte ranges of the output */
    size_t total = 0;
    int k, ok = 1;
    for (k = 0; k < n->n_inputs && ok; k++) {
        const poprt__tensor *t = n->inputs[k];
        if (!t || t->graph != g || !t->producer || t->raw || t->is_input ||
            t->type.kind != POPRT__KIND_TENSOR || !poprt__type_is_static(&t->type) ||
            t->type.elem != out->type.elem || t->type.rank != out->type.rank) {
            ok = 0;
            break;
        }
        int r = find(pl, t->id);
        size_t bytes = tensor_bytes(t);
        /* the whole group moves: t must start it, have its size and not be
         * a part of an earlier Concat's output (a group moves once) */
        ok = bytes > 0 && r != out->id && !pl->mark[r] && in_arena(pl, r) && pl->rel[t->id] == 0 &&
             tensor_bytes(g->tensors.items[r]) == bytes && !pl->in_concat[t->id];
        pl->mark[r] = 1;
        total += bytes;
    }
    ok = ok && total == tensor_bytes(out);
    if (ok) /* every member of a moved group now lies in a Concat output */
        for (size_t i = 0; i < g->tensors.len; i++)
            if (pl->mark[find(pl, (int)i)])
                pl->in_concat[i] = 1;
    for (int j = 0; j < k && j < n->n_inputs; j++)
        if (n->inputs[j] && n->inputs[j]->graph == g)
            pl->mark[find(pl, n->inputs[j]->id)] = 0;
    if (!ok)
        return 0;
    int64_t at = 0;
    for (k = 0; k < n->n_inputs; k++) {
        const poprt__tensor *t = n->inputs[k];
        int r = find(pl, t->id);
        pl->parent[r] = out->id;
        pl->rel[r] = at;
        at += (int64_t)tensor_bytes(t);
        pl->arena_member[r] = 1;
        /* parts are written before the Concat's step, and may be read
         * after it */
        if (pl->gfirst[r] < pl->gfirst[out->id])
            pl->gfirst[out->id] = pl->gfirst[r];
        if (pl->glast[r] > pl->glast[out->id])
            pl->glast[out->id] = pl->glast[r];
    }
    pl->arena_member[out->id] = 1;
    return 1;
}

/* The plan, with Concat placement when place_concats is 1. */
static poprt_status build(const poprt__graph *g, poprt__plan *p, int place_concats)
{
    size_t nt = g->tensors.len, nn = g->nodes.len, n1 = nt ? nt : 1;
    memset(p, 0, sizeof *p);
    planner pl = {.g = g};
    p->offset = poprt__malloc(n1 * sizeof *p->offset);
    p->view = poprt__calloc(nn ? nn : 1, 1);
    pl.first = poprt__malloc(n1 * sizeof *pl.first);
    pl.last = poprt__malloc(n1 * sizeof *pl.last);
    pl.parent = poprt__malloc(n1 * sizeof *pl.parent);
    pl.rel = poprt__calloc(n1, sizeof *pl.rel);
    pl.gfirst = poprt__malloc(n1 * sizeof *pl.gfirst);
    pl.glast = poprt__malloc(n1 * sizeof *pl.glast);
    pl.arena_member = poprt__calloc(n1, 1);
    pl.in_concat = poprt__calloc(n1, 1);
    pl.mark = poprt__calloc(n1, 1);
    interval *iv = poprt__calloc(n1, sizeof *iv);
    interval **placed = poprt__calloc(2 * n1, sizeof *placed);
    poprt_status st = POPRT_OK;
    if (!p->offset || !p->view || !pl.first || !pl.last || !pl.parent || !pl.rel || !pl.gfirst ||
        !pl.glast || !pl.arena_member || !pl.in_concat || !pl.mark || !iv || !placed) {
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory planning graph '%s'", g->name);
        goto done;
    }
    int *first = pl.first, *last = pl.last, *parent = pl.parent, *glast = pl.glast;
    unsigned char *arena_member = pl.arena_member;
    int steps = (int)nn;
    for (size_t i = 0; i < nt; i++) {
        p->offset[i] = -1;
        first[i] = -1;
        last[i] = -1;
        parent[i] = (int)i;
    }
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
    for (size_t i = 0; i < nt; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (t->is_output)
            last[i] = steps; /* read by the stepio after the last node */
        glast[i] = last[i] < first[i] ? first[i] : last[i];
        /* views and in-place outputs are written after their group's root,
         * so only Concat placement moves a group's first write earlier */
        pl.gfirst[i] = first[i];
    }
    /* views, in-place and Concats, in execution order */
    for (int s = 0; s < steps; s++) {
        const poprt__node *n = g->nodes.items[s];
        if (place_concats && place_concat(&pl, n)) {
            p->view[s] = POPRT__PLAN_CONCAT;
            p->n_concat_elided++;
            continue;
        }
        const poprt__tensor *out = n->outputs[0], *in = n->n_inputs ? n->inputs[0] : NULL;
        if (n->n_outputs < 1 || !out || !in || in->graph != g ||
            out->type.kind != POPRT__KIND_TENSOR)
            continue;
        if (!poprt__type_is_static(&out->type) || !poprt__type_is_static(&in->type) ||
            out->type.elem != in->type.elem || tensor_bytes(out) != tensor_bytes(in) ||
            out->type.elem == POPRT_DTYPE_STRING)
            continue;
        if (out->producer != n || (n->op && (n->op->flags & POPRT__OP_DYNAMIC)))
            continue;
        int ri = find(&pl, in->id);
        if (is_view_op(n)) {
            /* inputs that are neither constants, graph inputs nor planned
             * (dynamic values) cannot be aliased statically */
            const poprt__tensor *root = g->tensors.items[ri];
            int aliasable = root->raw || root->is_input || in_arena(&pl, ri);
            if (!aliasable)
                continue;
            p->view[s] = POPRT__PLAN_VIEW;
            parent[out->id] = ri;
            pl.rel[out->id] = pl.rel[in->id];
            pl.in_concat[out->id] = pl.in_concat[in->id];
            if (glast[out->id] > glast[ri])
                glast[ri] = glast[out->id];
            arena_member[out->id] = in_arena(&pl, ri);
        } else if (is_inplace_op(n)) {
            /* only arena bytes, and only when nothing reads the group later
             * (its lifetime includes every Concat it was merged with) */
            if (!in_arena(&pl, ri) || glast[ri] != s)
                continue;
            if (!planned_kind(out, first[out->id]))
                continue;
            /* the same tensor read twice by this node is fine; any other
             * input sharing the group is not */
            int dup = 0;
            for (int k = 1; k < n->n_inputs; k++)
                if (n->inputs[k] && n->inputs[k]->graph == g && n->inputs[k] != in &&
                    find(&pl, n->inputs[k]->id) == ri)
                    dup = 1;
            if (dup)
                continue;
            parent[out->id] = ri;
            pl.rel[out->id] = pl.rel[in->id];
            pl.in_concat[out->id] = pl.in_concat[in->id];
            glast[ri] = glast[out->id];
            arena_member[out->id] = 1;
            arena_member[ri] = 1;
        }
    }
    /* one interval per group rooted at a planned tensor */
    size_t ni = 0;
    for (size_t i = 0; i < nt; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (find(&pl, (int)i) != (int)i || !planned_kind(t, first[i]))
            continue;
        size_t bytes = tensor_bytes(t);
        iv[ni].id = (int)i;
        iv[ni].size = (bytes + 63) & ~(size_t)63;
        if (iv[ni].size == 0)
            iv[ni].size = 64;
        iv[ni].first = pl.gfirst[i];
        iv[ni].last = glast[i];
        ni++;
    }
    qsort(iv, ni, sizeof *iv, by_size_desc);
    size_t np = 0, total = 0;
    for (size_t i = 0; i < ni; i++) {
        /* placed intervals overlapping in time, sorted by offset: first gap that fits */
        size_t nc = 0;
        for (size_t j = 0; j < np; j++)
            if (!(placed[j]->last < iv[i].first || iv[i].last < placed[j]->first))
                placed[np + nc++] = placed[j];
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
    /* members of a group sit at their offset in the root's bytes; views get
     * their value when their node "runs", so they keep no offset of their
     * own. Every output counts: a Concat part may be any output of its node */
    for (size_t s = 0; s < nn; s++) {
        const poprt__node *n = g->nodes.items[s];
        for (int j = 0; j < n->n_outputs; j++) {
            const poprt__tensor *t = n->outputs[j];
            if (!t || t->graph != g || (j == 0 && p->view[s] == POPRT__PLAN_VIEW))
                continue;
            int r = find(&pl, t->id);
            if (r != t->id && p->offset[r] >= 0)
                p->offset[t->id] = p->offset[r] + pl.rel[t->id];
        }
    }
    p->arena_bytes = total;
done:
    poprt__free(pl.first);
    poprt__free(pl.last);
    poprt__free(pl.parent);
    poprt__free(pl.rel);
    poprt__free(pl.gfirst);
    poprt__free(pl.glast);
    poprt__free(pl.arena_member);
    poprt__free(pl.in_concat);
    poprt__free(pl.mark);
    poprt__free(iv);
    poprt__free(placed);
    if (st)
        poprt__plan_free(p);
    return st;
}

poprt_status poprt__plan_build(const poprt__graph *g, poprt__plan *p)
{
    poprt_status st = build(g, p, 1);
    if (st || !p->n_concat_elided)
        return st;
    /* Concat placement must not cost memory: keep the smaller arena */
    poprt__plan plain;
    st = build(g, &plain, 0);
    if (st) {
        poprt__plan_free(p);
        return st;
    }
    if (plain.arena_bytes < p->arena_bytes) {
        poprt__plan_free(p);
        *p = plain;
    } else
        poprt__plan_free(&plain);
    return POPRT_OK;
}

void poprt__plan_free(poprt__plan *p)
{
    poprt__free(p->offset);
    poprt__free(p->view);
    memset(p, 0, sizeof *p);
}
