/* IR construction and lookup. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ir/ir.h"

poprt_status poprt__model_new(poprt__model **out)
{
    poprt__model *m = poprt__calloc(1, sizeof *m);
    if (!m)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory creating a model");
    poprt__arena_init(&m->arena);
    poprt__limits_default(&m->limits);
    if (pthread_mutex_init(&m->lock, NULL)) {
        poprt__free(m);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "no mutex for a new model");
    }
    m->graph = poprt__graph_new(m, NULL, "main");
    if (!m->graph) {
        poprt__model_free(m);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory creating a model");
    }
    *out = m;
    return POPRT_OK;
}

void poprt__limits_default(poprt__limits *l)
{
    static uint64_t phys;
    uint64_t p = __atomic_load_n(&phys, __ATOMIC_RELAXED);
    if (!p) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        p = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : (uint64_t)1 << 40;
        __atomic_store_n(&phys, p, __ATOMIC_RELAXED);
    }
    l->max_nodes = POPRT__DEFAULT_MAX_NODES;
    l->max_tensor_bytes = p;
    l->max_loop_iterations = POPRT__DEFAULT_MAX_LOOP_ITERATIONS;
    l->max_subgraph_depth = POPRT__DEFAULT_MAX_SUBGRAPH_DEPTH;
}

static poprt__limits dflt_limits;
static void init_default_limits(void) { poprt__limits_default(&dflt_limits); }

const poprt__limits *poprt__node_limits(const poprt__node *n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (n && n->graph && n->graph->model)
        return &n->graph->model->limits;
    pthread_once(&once, init_default_limits);
    return &dflt_limits;
}

/* Every graph registers in m->graphs_all so poprt__model_free can release
 * its heap vectors and maps; the graph structs themselves are in the arena. */
void poprt__model_free(poprt__model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->graphs_all.len; i++) {
        poprt__graph *g = m->graphs_all.items[i];
        poprt__vec_free(&g->nodes);
        poprt__vec_free(&g->tensors);
        poprt__vec_free(&g->inputs);
        poprt__vec_free(&g->outputs);
        poprt__vec_free(&g->initializers);
        poprt__map_free(&g->by_name);
    }
    poprt__vec_free(&m->graphs_all);
    for (size_t i = 0; i < m->blobs.len; i++)
        poprt__blob_unref(m->blobs.items[i]);
    poprt__vec_free(&m->blobs);
    poprt__vec_free(&m->folded);
    poprt__arena_free(&m->arena);
    pthread_mutex_destroy(&m->lock);
    poprt__free(m);
}

/* ---- constant data -------------------------------------------------------- */

static size_t elem_align(const poprt__tensor *t)
{
    size_t e = poprt__dtype_size((poprt_dtype)t->type.elem);
    return e == 0 ? 1 : e > 8 ? 8 : e;
}

/* Pages of m's file mappings inside [p, p + n) back to the kernel (it reads
 * them from the file again if anything touches them). m->lock held. */
static void drop_locked(const poprt__model *m, const void *p, size_t n)
{
    for (size_t i = 0; i < m->blobs.len; i++)
        poprt__blob_drop_pages(m->blobs.items[i], p, n);
}

void poprt__model_drop_pages(const poprt__model *m, const void *p, size_t n)
{
    pthread_mutex_lock((pthread_mutex_t *)&m->lock);
    drop_locked(m, p, n);
    pthread_mutex_unlock((pthread_mutex_t *)&m->lock);
}

/* Folded values at least this large get a blob of their own. */
#define FOLD_BLOB_MIN ((size_t)64 << 10)

void *poprt__model_fold_alloc(poprt__model *m, size_t n)
{
    if (n < FOLD_BLOB_MIN)
        return poprt__arena_alloc(&m->arena, n ? n : 1);
    poprt__blob *b = poprt__blob_anon(n);
    if (!b)
        return NULL;
    pthread_mutex_lock(&m->lock);
    int fail = poprt__vec_push(&m->blobs, b) != POPRT_OK;
    if (!fail && poprt__vec_push(&m->folded, b)) {
        m->blobs.len--; /* the push just made */
        fail = 1;
    }
    pthread_mutex_unlock(&m->lock);
    if (fail) {
        poprt__blob_unref(b);
        return NULL;
    }
    return b->data;
}

static int in_range(const poprt__blob *b, const void *p)
{
    return p && (const char *)p >= (const char *)b->data &&
           (const char *)p < (const char *)b->data + b->size;
}

static int tensor_live(const poprt__tensor *t)
{
    return t->n_uses > 0 || t->n_out_uses > 0 || t->is_output;
}

static int points_into(const poprt__blob *b, const poprt__tensor *t)
{
    return t && (in_range(b, t->raw) || in_range(b, __atomic_load_n(&t->aligned, __ATOMIC_ACQUIRE)));
}

/* Whether a live tensor of m, or a tensor attribute of any node of m (they
 * live outside the graphs' lists), reads b. */
static int blob_read(const poprt__model *m, const poprt__blob *b)
{
    for (size_t gi = 0; gi < m->graphs_all.len; gi++) {
        const poprt__graph *g = m->graphs_all.items[gi];
        for (size_t i = 0; i < g->tensors.len; i++)
            if (tensor_live(g->tensors.items[i]) && points_into(b, g->tensors.items[i]))
                return 1;
        for (size_t i = 0; i < g->nodes.len; i++) {
            const poprt__node *n = g->nodes.items[i];
            for (int a = 0; a < n->n_attrs; a++) {
                const poprt__attr *at = &n->attrs[a];
                if (at->type == POPRT__ATTR_TENSOR && points_into(b, at->t))
                    return 1;
                for (int64_t k = 0; at->type == POPRT__ATTR_TENSORS && k < at->n; k++)
                    if (points_into(b, at->tensors[k]))
                        return 1;
            }
        }
    }
    return 0;
}

size_t poprt__model_sweep_folded(poprt__model *m)
{
    size_t freed = 0;
    pthread_mutex_lock(&m->lock);
    for (size_t f = 0; f < m->folded.len;) {
        poprt__blob *b = m->folded.items[f];
        if (blob_read(m, b)) {
            f++;
            continue;
        }
        for (size_t gi = 0; gi < m->graphs_all.len; gi++) {
            const poprt__graph *g = m->graphs_all.items[gi];
            for (size_t i = 0; i < g->tensors.len; i++) {
                poprt__tensor *t = g->tensors.items[i];
                if (points_into(b, t)) {
                    poprt__tensor_set_data(t, NULL); /* dead: its value goes */
                    t->nbytes = 0;
                }
            }
        }
        for (size_t i = 0; i < m->blobs.len; i++)
            if (m->blobs.items[i] == b) {
                m->blobs.items[i] = m->blobs.items[--m->blobs.len];
                break;
            }
        m->folded.items[f] = m->folded.items[--m->folded.len];
        freed += b->size;
        poprt__blob_unref(b);
    }
    pthread_mutex_unlock(&m->lock);
    return freed;
}

int poprt__tensor_data_lazy(const poprt__tensor *t)
{
    return t->raw && (uintptr_t)t->raw % elem_align(t) != 0 &&
           !__atomic_load_n(&t->aligned, __ATOMIC_ACQUIRE);
}

const void *poprt__tensor_data(const poprt__tensor *t)
{
    if (!t->raw || (uintptr_t)t->raw % elem_align(t) == 0)
        return t->raw;
    const void *a = __atomic_load_n(&t->aligned, __ATOMIC_ACQUIRE);
    if (a)
        return a;
    poprt__model *m = t->graph ? t->graph->model : NULL;
    if (!m) {
        poprt__err(POPRT_STATUS_INTERNAL, "tensor '%s': unaligned data outside a model", t->name);
        return NULL;
    }
    pthread_mutex_lock(&m->lock);
    a = t->aligned;
    if (!a) {
        poprt__blob *b = poprt__blob_anon(t->nbytes ? t->nbytes : 1);
        if (b && !poprt__vec_push(&m->blobs, b)) {
            /* in steps, each step's file pages handed back after it: the
             * bytes are resident about once, not twice, while copied */
            const size_t step = (size_t)4 << 20;
            for (size_t at = 0; at < t->nbytes; at += step) {
                size_t k = t->nbytes - at < step ? t->nbytes - at : step;
                memcpy((char *)b->data + at, (const char *)t->raw + at, k);
                drop_locked(m, t->raw, at + k);
            }
            poprt__blob_seal(b);
            a = b->data;
            __atomic_store_n(&((poprt__tensor *)t)->aligned, a, __ATOMIC_RELEASE);
        } else {
            poprt__blob_unref(b);
        }
    }
    pthread_mutex_unlock(&m->lock);
    if (!a)
        poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory copying tensor '%s' (%zu bytes)",
                   t->name, t->nbytes);
    return a;
}

poprt__graph *poprt__graph_new(poprt__model *m, poprt__graph *parent, const char *name)
{
    poprt__graph *g = poprt__arena_alloc(&m->arena, sizeof *g);
    if (!g)
        return NULL;
    g->model = m;
    g->parent = parent;
    g->name = poprt__arena_strdup(&m->arena, name ? name : "");
    if (!g->name || poprt__vec_push(&m->graphs_all, g) != POPRT_OK)
        return NULL;
    return g;
}

poprt__tensor *poprt__graph_find(const poprt__graph *g, const char *name)
{
    for (; g; g = g->parent) {
        poprt__tensor *t = poprt__map_get(&g->by_name, name);
        if (t)
            return t;
    }
    return NULL;
}

static poprt__tensor *add_tensor(poprt__graph *g, const char *name)
{
    poprt__model *m = g->model;
    poprt__tensor *t = poprt__arena_alloc(&m->arena, sizeof *t);
    if (!t)
        return NULL;
    t->name = poprt__arena_strdup(&m->arena, name);
    if (!t->name)
        return NULL;
    t->graph = g;
    t->type.rank = -1;
    t->id = (int)g->tensors.len;
    if (poprt__vec_push(&g->tensors, t) || poprt__map_put(&g->by_name, t->name, t))
        return NULL;
    return t;
}

poprt__tensor *poprt__graph_tensor(poprt__graph *g, const char *name)
{
    poprt__tensor *t = poprt__map_get(&g->by_name, name);
    return t ? t : add_tensor(g, name);
}

const char *poprt__model_unique_name(poprt__model *m, const char *base)
{
    for (;;) {
        char *name = poprt__arena_printf(&m->arena, "%s__%d", base ? base : "t", m->uid_counter++);
        if (!name)
            return NULL;
        int taken = 0;
        for (size_t i = 0; i < m->graphs_all.len && !taken; i++)
            taken = poprt__map_get(&((poprt__graph *)m->graphs_all.items[i])->by_name, name) != NULL;
        if (!taken)
            return name;
    }
}

poprt__tensor *poprt__graph_new_tensor(poprt__graph *g, const char *base)
{
    const char *name = poprt__model_unique_name(g->model, base);
    return name ? add_tensor(g, name) : NULL;
}

poprt__node *poprt__graph_add_node(poprt__graph *g, const char *op_type, const char *domain,
                                   const char *name, int n_inputs, int n_outputs)
{
    poprt__model *m = g->model;
    poprt__node *n = poprt__arena_alloc(&m->arena, sizeof *n);
    if (!n)
        return NULL;
    n->op_type = poprt__arena_strdup(&m->arena, op_type);
    n->domain = poprt__arena_strdup(&m->arena, domain ? domain : "");
    n->name = name ? poprt__arena_strdup(&m->arena, name)
                   : poprt__model_unique_name(m, op_type);
    n->overload = "";
    n->n_inputs = n_inputs;
    n->n_outputs = n_outputs;
    n->inputs = poprt__arena_array(&m->arena, (size_t)(n_inputs ? n_inputs : 1), sizeof *n->inputs);
    n->uses = poprt__arena_array(&m->arena, (size_t)(n_inputs ? n_inputs : 1), sizeof *n->uses);
    n->outputs = poprt__arena_array(&m->arena, (size_t)(n_outputs ? n_outputs : 1), sizeof *n->outputs);
    n->graph = g;
    if (!n->op_type || !n->domain || !n->name || !n->inputs || !n->uses || !n->outputs)
        return NULL;
    if (poprt__vec_push(&g->nodes, n))
        return NULL;
    return n;
}

/* ---- use lists ------------------------------------------------------------- */

/* A use is linked while u->node is set. */
static void use_link(poprt__tensor *t, poprt__use *u, poprt__node *n, int slot)
{
    u->node = n;
    u->slot = slot;
    u->prev = NULL;
    u->next = t->uses;
    if (t->uses)
        t->uses->prev = u;
    t->uses = u;
    t->n_uses++;
}

static void use_unlink(poprt__tensor *t, poprt__use *u)
{
    if (u->prev)
        u->prev->next = u->next;
    else
        t->uses = u->next;
    if (u->next)
        u->next->prev = u->prev;
    u->next = u->prev = NULL;
    u->node = NULL;
    t->n_uses--;
}

void poprt__node_set_input(poprt__node *n, int k, poprt__tensor *t)
{
    poprt__tensor **ins = (poprt__tensor **)n->inputs;
    if (ins[k] == t)
        return;
    if (ins[k] && n->uses[k].node)
        use_unlink(ins[k], &n->uses[k]);
    ins[k] = t;
    if (t && !n->removed)
        use_link(t, &n->uses[k], n, k);
}

poprt_status poprt__node_resize_inputs(poprt__node *n, int count)
{
    if (count == n->n_inputs)
        return POPRT_OK;
    if (count < n->n_inputs) {
        for (int k = count; k < n->n_inputs; k++)
            poprt__node_set_input(n, k, NULL);
        n->n_inputs = count;
        return POPRT_OK;
    }
    poprt__arena *a = &n->graph->model->arena;
    poprt__tensor **ins = poprt__arena_array(a, (size_t)count, sizeof *ins);
    poprt__use *uses = poprt__arena_array(a, (size_t)count, sizeof *uses);
    if (!ins || !uses)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory growing node '%s'", n->name);
    /* the reads move to the new slots */
    int old = n->n_inputs;
    poprt__tensor *keep[64], **kept = keep;
    if (old > 64 && !(kept = poprt__arena_array(a, (size_t)old, sizeof *kept)))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory growing node '%s'", n->name);
    for (int k = 0; k < old; k++) {
        kept[k] = n->inputs[k];
        poprt__node_set_input(n, k, NULL);
    }
    n->inputs = ins;
    n->uses = uses;
    n->n_inputs = count;
    /* (new slots read nothing: their uses are zeroed, so unlinked) */
    for (int k = 0; k < old; k++)
        poprt__node_set_input(n, k, kept[k]);
    return POPRT_OK;
}

poprt_status poprt__graph_add_output(poprt__graph *g, poprt__tensor *t)
{
    if (poprt__vec_push(&g->outputs, t))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory adding output '%s'",
                          t ? t->name : "");
    if (t)
        t->n_out_uses++;
    return POPRT_OK;
}

void poprt__graph_set_output(poprt__graph *g, size_t i, poprt__tensor *t)
{
    poprt__tensor *old = g->outputs.items[i];
    if (old)
        old->n_out_uses--;
    g->outputs.items[i] = t;
    if (t)
        t->n_out_uses++;
}

void poprt__graph_truncate_outputs(poprt__graph *g, size_t len)
{
    for (size_t i = len; i < g->outputs.len; i++)
        if (g->outputs.items[i])
            ((poprt__tensor *)g->outputs.items[i])->n_out_uses--;
    if (len < g->outputs.len)
        g->outputs.len = len;
}

int poprt__node_within(const poprt__node *n, const poprt__graph *g)
{
    for (const poprt__graph *h = n ? n->graph : NULL; h; h = h->parent_node ? h->parent_node->graph : NULL)
        if (h == g)
            return 1;
    return 0;
}

/* Drops the reads of every node of g and of its subgraphs, and of g's
 * outputs: g goes away with the node that holds it. */
static void unlink_graph(poprt__graph *g);

static void unlink_node(poprt__node *n)
{
    for (int k = 0; k < n->n_inputs; k++)
        if (n->inputs[k] && n->uses[k].node)
            use_unlink(n->inputs[k], &n->uses[k]);
    for (int a = 0; a < n->n_attrs; a++) {
        const poprt__attr *at = &n->attrs[a];
        if (at->type == POPRT__ATTR_GRAPH && at->g)
            unlink_graph(at->g);
        for (int64_t k = 0; at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
            if (at->graphs[k])
                unlink_graph(at->graphs[k]);
    }
}

static void unlink_graph(poprt__graph *g)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        if (!n->removed) {
            unlink_node(n);
            n->removed = 1;
        }
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.items[i])
            ((poprt__tensor *)g->outputs.items[i])->n_out_uses--;
    g->outputs.len = 0;
}

void poprt__graph_detach_node(poprt__node *n)
{
    if (n->removed)
        return;
    unlink_node(n);
    n->removed = 1;
    for (int i = 0; i < n->n_outputs; i++)
        if (n->outputs[i] && n->outputs[i]->producer == n)
            n->outputs[i]->producer = NULL;
}

void poprt__graph_compact(poprt__graph *g)
{
    size_t k = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (!((poprt__node *)g->nodes.items[i])->removed)
            g->nodes.items[k++] = g->nodes.items[i];
    g->nodes.len = k;
}

void poprt__graph_remove_node(poprt__graph *g, poprt__node *n)
{
    poprt__graph_detach_node(n);
    size_t k = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (g->nodes.items[i] != n)
            g->nodes.items[k++] = g->nodes.items[i];
    g->nodes.len = k;
}

/* ---- use lists checked against the graphs ------------------------------------ */

int poprt__ir_strict_uses(void)
{
    static int v = -1; /* read once; a race only computes the same value twice */
    int r = __atomic_load_n(&v, __ATOMIC_RELAXED);
    if (r < 0) {
        const char *e = getenv("POPRT_CHECK_IR");
        r = e && *e && strcmp(e, "0") != 0;
        __atomic_store_n(&v, r, __ATOMIC_RELAXED);
    }
    return r;
}

/* Calls fn on every graph reachable from the model (main graph, function
 * bodies, their subgraphs), parents before subgraphs. */
static void each_live_graph(poprt__graph *g, void (*fn)(poprt__graph *, void *), void *ctx)
{
    fn(g, ctx);
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        if (n->removed)
            continue;
        for (int a = 0; a < n->n_attrs; a++) {
            const poprt__attr *at = &n->attrs[a];
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                each_live_graph(at->g, fn, ctx);
            for (int64_t k = 0; at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                if (at->graphs[k])
                    each_live_graph(at->graphs[k], fn, ctx);
        }
    }
}

static void each_model_graph(poprt__model *m, void (*fn)(poprt__graph *, void *), void *ctx)
{
    each_live_graph(m->graph, fn, ctx);
    for (int f = 0; f < m->n_functions; f++)
        if (m->functions[f].body)
            each_live_graph(m->functions[f].body, fn, ctx);
}

static void mark_live(poprt__graph *g, void *ctx)
{
    int on = *(int *)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        n->live = on && !n->removed;
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.items[i])
            ((poprt__tensor *)g->outputs.items[i])->n_out_uses += on ? -1 : 1;
}

static void link_live(poprt__graph *g, void *ctx)
{
    (void)ctx;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int k = 0; !n->removed && k < n->n_inputs; k++)
            if (n->inputs[k])
                use_link(n->inputs[k], &n->uses[k], n, k);
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.items[i])
            ((poprt__tensor *)g->outputs.items[i])->n_out_uses++;
}

/* The first disagreement between t's list and the graphs, or NULL. */
static const char *tensor_uses_wrong(const poprt__tensor *t)
{
    int len = 0;
    for (const poprt__use *u = t->uses; u; u = u->next, len++) {
        const poprt__node *n = u->node;
        if (!n || u->slot < 0 || u->slot >= n->n_inputs || &n->uses[u->slot] != u)
            return "holds a stray entry";
        if (n->inputs[u->slot] != t)
            return "names a node input that reads another value";
        if (!n->live)
            return "names a removed or unreachable node";
    }
    if (len != t->n_uses)
        return "length differs from its count";
    if (t->n_out_uses)
        return "output count differs from the graphs' outputs";
    return NULL;
}

poprt_status poprt__model_check_uses(poprt__model *m, int rebuild)
{
    if (rebuild) {
        for (size_t gi = 0; gi < m->graphs_all.len; gi++) {
            poprt__graph *g = m->graphs_all.items[gi];
            for (size_t i = 0; i < g->nodes.len; i++) {
                poprt__node *n = g->nodes.items[i];
                for (int k = 0; k < n->n_inputs; k++)
                    n->uses[k].node = NULL;
            }
            for (size_t i = 0; i < g->tensors.len; i++) {
                poprt__tensor *t = g->tensors.items[i];
                t->uses = NULL;
                t->n_uses = t->n_out_uses = 0;
            }
        }
        each_model_graph(m, link_live, NULL);
        return POPRT_OK;
    }
    /* every live slot linked where it says... */
    int on = 1;
    each_model_graph(m, mark_live, &on); /* also takes the outputs off the counts */
    const poprt__tensor *bad = NULL;
    const char *why = NULL;
    for (size_t gi = 0; gi < m->graphs_all.len && !bad; gi++) {
        poprt__graph *g = m->graphs_all.items[gi];
        for (size_t i = 0; i < g->nodes.len && !bad; i++) {
            poprt__node *n = g->nodes.items[i];
            for (int k = 0; n->live && k < n->n_inputs && !bad; k++)
                if (n->inputs[k] && n->uses[k].node != n) {
                    bad = n->inputs[k];
                    why = "misses a read";
                }
        }
        /* ...and every list entry a live slot reading that tensor */
        for (size_t i = 0; i < g->tensors.len && !bad; i++)
            if ((why = tensor_uses_wrong(g->tensors.items[i])))
                bad = g->tensors.items[i];
    }
    on = 0;
    each_model_graph(m, mark_live, &on);
    if (bad)
        return poprt__err(POPRT_STATUS_INTERNAL, "use list of '%s' (graph '%s') %s", bad->name,
                          bad->graph->name, why);
    return POPRT_OK;
}

poprt__attr *poprt__node_add_attr(poprt__node *n, const char *name, poprt__attr_type type)
{
    poprt__model *m = n->graph->model;
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) {
            /* setting an attribute the node has replaces it */
            const char *keep = n->attrs[i].name;
            memset(&n->attrs[i], 0, sizeof n->attrs[i]);
            n->attrs[i].name = keep;
            n->attrs[i].type = type;
            return &n->attrs[i];
        }
    poprt__attr *attrs = poprt__arena_array(&m->arena, (size_t)n->n_attrs + 1, sizeof *attrs);
    if (!attrs)
        return NULL;
    if (n->n_attrs)
        memcpy(attrs, n->attrs, (size_t)n->n_attrs * sizeof *attrs);
    poprt__attr *a = &attrs[n->n_attrs];
    a->name = poprt__arena_strdup(&m->arena, name);
    if (!a->name)
        return NULL;
    a->type = type;
    n->attrs = attrs;
    n->n_attrs++;
    return a;
}

static int is_default_domain(const char *d) { return !d || !*d || strcmp(d, "ai.onnx") == 0; }

int64_t poprt__model_opset(const poprt__model *m, const char *domain)
{
    for (int i = 0; i < m->n_opsets; i++) {
        const char *d = m->opsets[i].domain;
        if ((is_default_domain(d) && is_default_domain(domain)) ||
            (d && domain && strcmp(d, domain) == 0))
            return m->opsets[i].version;
    }
    return 0;
}
