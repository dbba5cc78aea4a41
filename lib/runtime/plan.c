/* Static memory plan for the main graph.
 *
 * Every node output whose shape is known before running gets a fixed offset
 * in one arena, so run() never allocates. Three ways to save memory and
 * copies, decided here once:
 *   - views: Reshape, Flatten, Squeeze, Unsqueeze, Identity and inference
 *     Dropout produce their input's bytes unchanged; such a node does not
 *     run, its output aliases its input (arena, constant or the caller's
 *     input buffer);
 *   - in place: an elementwise node whose input dies at that node writes its
 *     output over the input's arena bytes;
 *   - reuse: the remaining buffers are placed greedily (largest first) so
 *     that buffers whose lifetimes overlap never share bytes.
 * Aliases are grouped (union-find) and a group's lifetime is the union of
 * its members'. */
#include <stdlib.h>
#include <string.h>
#include "runtime/runtime.h"

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

static int find(int *parent, int i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
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
    if (!t->producer || t->data || first < 0 || t->type.kind != POPRT__KIND_TENSOR)
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
    return (size_t)poprt__type_numel(&t->type) * poprt_dtype_size((poprt_dtype)t->type.elem);
}

poprt_status poprt__plan_build(const poprt__graph *g, poprt__plan *p)
{
    size_t nt = g->tensors.len, nn = g->nodes.len;
    memset(p, 0, sizeof *p);
    p->offset = poprt__malloc((nt ? nt : 1) * sizeof *p->offset);
    p->view = poprt__calloc(nn ? nn : 1, 1);
    int *first = poprt__malloc((nt ? nt : 1) * sizeof *first);
    int *last = poprt__malloc((nt ? nt : 1) * sizeof *last);
    int *parent = poprt__malloc((nt ? nt : 1) * sizeof *parent);
    int *glast = poprt__malloc((nt ? nt : 1) * sizeof *glast); /* group: latest use */
    unsigned char *arena_member = poprt__calloc(nt ? nt : 1, 1);  /* owns or shares arena bytes */
    interval *iv = poprt__calloc(nt ? nt : 1, sizeof *iv);
    interval **placed = poprt__calloc(nt ? 2 * nt : 1, sizeof *placed);
    poprt_status st = POPRT_OK;
    if (!p->offset || !p->view || !first || !last || !parent || !glast || !arena_member || !iv ||
        !placed) {
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory planning graph '%s'", g->name);
        goto done;
    }
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
    }
    /* views and in-place, in execution order */
    for (int s = 0; s < steps; s++) {
        const poprt__node *n = g->nodes.items[s];
        const poprt__tensor *out = n->outputs[0], *in = n->n_inputs ? n->inputs[0] : NULL;
        if (n->n_outputs < 1 || !out || !in || in->graph != g || out->type.kind != POPRT__KIND_TENSOR)
            continue;
        if (!poprt__type_is_static(&out->type) || !poprt__type_is_static(&in->type) ||
            out->type.elem != in->type.elem || tensor_bytes(out) != tensor_bytes(in) ||
            out->type.elem == POPRT_DTYPE_STRING)
            continue;
        if (out->producer != n || (n->op && (n->op->flags & POPRT__OP_DYNAMIC)))
            continue;
        int ri = find(parent, in->id);
        if (is_view_op(n)) {
            /* inputs that are neither constants, graph inputs nor planned
             * (dynamic values) cannot be aliased statically */
            const poprt__tensor *root = g->tensors.items[ri];
            int aliasable = root->data || root->is_input || arena_member[ri] ||
                            planned_kind(root, first[ri]);
            if (!aliasable)
                continue;
            p->view[s] = 1;
            parent[out->id] = ri;
            if (glast[out->id] > glast[ri])
                glast[ri] = glast[out->id];
            arena_member[out->id] = arena_member[ri] || planned_kind(root, first[ri]);
        } else if (is_inplace_op(n)) {
            const poprt__tensor *root = g->tensors.items[ri];
            /* only arena bytes, and only when nothing reads the group later */
            if (!(arena_member[ri] || planned_kind(root, first[ri])) || glast[ri] != s)
                continue;
            if (!planned_kind(out, first[out->id]))
                continue;
            int dup = 0; /* the same tensor read twice by this node is fine; any other input sharing the group is not */
            for (int k = 1; k < n->n_inputs; k++)
                if (n->inputs[k] && n->inputs[k]->graph == g && find(parent, n->inputs[k]->id) == ri &&
                    n->inputs[k] != in)
                    dup = 1;
            if (dup)
                continue;
            parent[out->id] = ri;
            glast[ri] = glast[out->id];
            arena_member[out->id] = 1;
            arena_member[ri] = 1;
        }
    }
    /* one interval per group rooted at a planned tensor */
    size_t ni = 0;
    for (size_t i = 0; i < nt; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (find(parent, (int)i) != (int)i || !planned_kind(t, first[i]))
            continue;
        size_t bytes = tensor_bytes(t);
        iv[ni].id = (int)i;
        iv[ni].size = (bytes + 63) & ~(size_t)63;
        if (iv[ni].size == 0)
            iv[ni].size = 64;
        iv[ni].first = first[i];
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
    /* members of a group share the root's bytes; views get their value when
     * their node "runs", so they keep no offset of their own */
    for (size_t s = 0; s < nn; s++) {
        const poprt__node *n = g->nodes.items[s];
        if (p->view[s] || !n->n_outputs || !n->outputs[0])
            continue;
        const poprt__tensor *out = n->outputs[0];
        int r = find(parent, out->id);
        if (r != out->id && p->offset[out->id] < 0)
            p->offset[out->id] = p->offset[r];
    }
    p->arena_bytes = total;
done:
    poprt__free(first);
    poprt__free(last);
    poprt__free(parent);
    poprt__free(glast);
    poprt__free(arena_member);
    poprt__free(iv);
    poprt__free(placed);
    if (st)
        poprt__plan_free(p);
    return st;
}

void poprt__plan_free(poprt__plan *p)
{
    poprt__free(p->offset);
    poprt__free(p->view);
    memset(p, 0, sizeof *p);
}
