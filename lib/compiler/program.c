/* Compiling a model into a program (program.h): the model copy the compiler
 * owns gets its input shapes, functions inlined, constants folded by the
 * evaluator the caller hands in, the graph optimisations, a kernel bound to
 * every node, each node's prepared data and the memory plan. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler/compiler.h"
#include "compiler/program.h"
#include "kernels/kernel.h"
#include "kernels/x86/gemm_ops.h"
#include "passes/gradient.h"
#include "passes/rewrite.h"

/* Nodes whose outputs were all folded to constants never run again. */
static void drop_folded(poprt__graph *g)
{
    size_t k = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        int folded = n->n_outputs > 0;
        for (int j = 0; j < n->n_outputs && folded; j++)
            folded = !n->outputs[j] || n->outputs[j]->raw;
        if (!folded) {
            g->nodes.items[k++] = n;
            continue;
        }
        poprt__graph_detach_node(n);
    }
    g->nodes.len = k;
    for (size_t i = 0; i < g->nodes.len; i++)
        ((poprt__node *)g->nodes.items[i])->id = (int)i;
}

/* The options that shape the program: limits, node count, input shapes
 * (the run options are the session's, read by the runtime's session.c). */
static poprt_status configure(poprt__model *m, const poprt_options *o)
{
    poprt_status st = poprt__options_validate(o);
    if (!st) /* the program's limits: the model's, where the options say nothing */
        st = poprt__limits_from_options(o, &m->limits);
    if (st)
        return st;
    size_t nodes = poprt__graph_count_nodes(m->graph);
    for (int f = 0; f < m->n_functions; f++)
        nodes += m->functions[f].body ? poprt__graph_count_nodes(m->functions[f].body) : 0;
    if ((int64_t)nodes > m->limits.max_nodes)
        return poprt__err(POPRT_STATUS_LIMIT_EXCEEDED,
                          "the model has %zu nodes (option 'max_nodes' is %lld)", nodes,
                          (long long)m->limits.max_nodes);
    return poprt__apply_input_shapes(m, o);
}

poprt_status poprt__apply_input_shapes(poprt__model *m, const poprt_options *o)
{
    for (size_t i = 0; o && i < o->n; i++) {
        const char *key = o->kv[i].key;
        if (strncmp(key, "input_shape.", 12) == 0) {
            int64_t dims[POPRT__MAX_RANK];
            int rank;
            poprt_status st;
            if ((st = poprt__parse_dims(o->kv[i].value, dims, &rank, key)) ||
                (st = poprt__set_input_shape(m, key + 12, dims, rank)))
                return poprt__err_prefix(st == POPRT_STATUS_OUT_OF_MEMORY ? st
                                                                        : POPRT_STATUS_INVALID_OPTION,
                                         "option '%s': ", key);
        }
    }
    return POPRT_OK;
}

/* Each kernel's prepare() on the nodes of the main graph (or the data an
 * executable file stored for them). */
/* The steps of a compilation, as progress reports ("compile") and, with
 * option "profile", as the program's spans. */
static const char *const step_names[] = {"check",           "fold constants",  "optimize",
                                         "bind kernels",    "prepare kernels", "plan memory"};
#define N_STEPS ((int)(sizeof step_names / sizeof *step_names))
typedef struct steps {
    poprt__program *p;
    int profile;
} steps;

/* Step k begins (k == N_STEPS: the compilation is done). */
static void step(steps *s, int k)
{
    poprt__program *p = s->p;
    if (s->profile) {
        uint64_t now = poprt__now_ns();
        if (p->n_spans)
            p->spans[p->n_spans - 1].t1 = now;
        if (k < N_STEPS && p->n_spans < POPRT__PROGRAM_SPANS)
            p->spans[p->n_spans++] = (poprt__span){step_names[k], now, now, poprt__thread_id()};
    }
    poprt__progress("compile", k < N_STEPS ? step_names[k] : NULL, (uint64_t)k, N_STEPS);
}

/* node's kernel's prepare() with p's options: *state, *size, *consumed as
 * it made them (NULL, 0, 0: nothing to prepare). */
static poprt_status prepare_one(const poprt__program *p, const poprt__node *node, void **state,
                                size_t *size, unsigned *consumed)
{
    *state = NULL;
    *size = 0;
    *consumed = 0;
    if (!node->op || !node->kernel || !node->kernel->prepare)
        return POPRT_OK;
    poprt__ival in[32];
    poprt__type out[16];
    if (node->n_inputs > 32 || node->n_outputs > 16)
        return POPRT_OK;
    /* A constant not read typed yet (unaligned in the mapped file) is read
     * through a copy made for this call only: when the prepared data is
     * all the runs need of it (packed weights), it is never copied to
     * stay. */
    void *tmp[32] = {0};
    poprt_status st = POPRT_OK;
    for (int k = 0; k < node->n_inputs; k++) {
        poprt__tensor *t = node->inputs[k];
        in[k].type = t ? &t->type : NULL;
        in[k].nbytes = t ? t->nbytes : 0;
        in[k].data = NULL;
        in[k].src = NULL;
        if (t && poprt__tensor_data_lazy(t)) {
            if ((tmp[k] = poprt__aligned_alloc(t->nbytes ? t->nbytes : 1)))
                memcpy(tmp[k], t->raw, t->nbytes);
            in[k].data = tmp[k];
        } else if (t && t->raw) {
            in[k].data = poprt__tensor_data(t);
        }
        if (t && t->raw && !in[k].data) {
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "node '%s': out of memory reading '%s' (%zu bytes)",
                            node->name, t->name, t->nbytes);
            goto done;
        }
    }
    for (int k = 0; k < node->n_outputs; k++) {
        memset(&out[k], 0, sizeof out[k]);
        if (node->outputs[k])
            out[k] = node->outputs[k]->type;
    }
    /* bfloat16 products unless the node is marked to stay float32
     * (POPRT__META_MATMUL_FLOAT32: pass bf16_fallback) */
    const char *mp = poprt__opt(p->options, "matmul_precision");
    const char *keep = poprt__rw_meta(node, POPRT__META_MATMUL_FLOAT32);
    const int bf16 = mp && strcmp(mp, "bfloat16") == 0 && !(keep && strcmp(keep, "1") == 0);
    const char *ca = poprt__opt(p->options, "conv_algorithm");
    const unsigned direct = !ca                             ? 0
                            : strcmp(ca, "direct") == 0       ? POPRT__PREP_CONV_DIRECT
                            : strcmp(ca, "winograd_2x2") == 0 ? POPRT__PREP_CONV_WINO2
                            : strcmp(ca, "winograd_4x4") == 0 ? POPRT__PREP_CONV_WINO4
                                                              : 0;
    poprt__prep_ctx c = {.node = node, .opset = node->opset, .n_in = node->n_inputs, .in = in,
                         .n_out = node->n_outputs, .out = out, .isa = 0,
                         .flags = (bf16 ? POPRT__PREP_MATMUL_BF16 : 0) | direct};
    if (!(st = node->kernel->prepare(&c, state, size)))
        *consumed = *state ? c.consumed : 0;
done:
    for (int k = 0; k < node->n_inputs; k++)
        poprt__aligned_free(tmp[k]);
    return st;
}

/* Node i lets go of its prepared data: freed when it owns it and no other
 * node shares it, else owned by the next node that reads it. */
static void release_state(poprt__program *p, size_t i)
{
    if (!p->state_owned[i])
        return;
    p->state_owned[i] = 0;
    for (size_t j = 0; j < p->m->graph->nodes.len; j++)
        if (j != i && p->states[j] == p->states[i]) {
            p->state_owned[j] = 1;
            return;
        }
    poprt__aligned_free(p->states[i]);
}

poprt_status poprt__program_prepare_node(poprt__program *p, size_t i)
{
    void *state;
    size_t size;
    unsigned consumed;
    poprt_status st = prepare_one(p, p->m->graph->nodes.items[i], &state, &size, &consumed);
    if (st)
        return st;
    /* the old data goes only once the new is made */
    release_state(p, i);
    if (p->share_keys)
        p->share_keys[i].of = NULL;
    p->states[i] = state;
    p->state_sizes[i] = size;
    p->state_owned[i] = 1;
    p->consumed[i] = consumed;
    return POPRT_OK;
}

/* ---- subgraph nodes: their prepared data, by node ---- */

static int sub_cmp(const void *a, const void *b)
{
    const uintptr_t x = (uintptr_t)((const poprt__sub_state *)a)->node,
                    y = (uintptr_t)((const poprt__sub_state *)b)->node;
    return x < y ? -1 : x > y;
}

const poprt__sub_state *poprt__program_sub_state(const poprt__program *p, const poprt__node *n)
{
    if (!p->n_sub_states)
        return NULL;
    const poprt__sub_state key = {.node = n};
    return bsearch(&key, p->sub_states, p->n_sub_states, sizeof key, sub_cmp);
}

poprt_status poprt__program_prepare_sub(poprt__program *p, poprt__sub_state *e)
{
    void *state;
    size_t size;
    unsigned consumed;
    poprt_status st = prepare_one(p, e->node, &state, &size, &consumed);
    if (st)
        return st;
    poprt__aligned_free(e->state);
    e->state = state;
    e->size = size;
    return POPRT_OK;
}

/* Every node with a prepare() in g's subgraphs (recursively) into v. */
static poprt_status collect_sub(const poprt__graph *g, int top, poprt__vec *v)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        if (!top && n->op && n->kernel && n->kernel->prepare && poprt__vec_push(v, (void *)n))
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int a = 0; a < n->n_attrs; a++) {
            const poprt__attr *at = &n->attrs[a];
            poprt_status st = POPRT_OK;
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                st = collect_sub(at->g, 0, v);
            for (int64_t k = 0; !st && at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                if (at->graphs[k])
                    st = collect_sub(at->graphs[k], 0, v);
            if (st)
                return st;
        }
    }
    return POPRT_OK;
}

/* The nodes of If / Loop / Scan bodies prepared as the main graph's are (an
 * executable file does not store theirs: prepared again at load), so a
 * body run on every step does not pack its weights on every step. */
static poprt_status prepare_subgraphs(poprt__program *p)
{
    poprt__vec v = {0};
    poprt_status st = collect_sub(p->m->graph, 1, &v);
    if (!st && v.len &&
        !(p->sub_states = poprt__calloc(v.len, sizeof *p->sub_states)))
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; !st && i < v.len; i++) {
        poprt__sub_state *e = &p->sub_states[p->n_sub_states];
        e->node = v.items[i];
        if (!(st = poprt__program_prepare_sub(p, e)) && e->state)
            p->n_sub_states++;
    }
    poprt__vec_free(&v);
    if (p->n_sub_states)
        qsort(p->sub_states, p->n_sub_states, sizeof *p->sub_states, sub_cmp);
    return st;
}

/* Memory of constants read only while compiling: the pages of a file
 * mapping holding them go back to the kernel, which reads them from the
 * file again if anything touches them later (a weight read, an export, a
 * kernel's fallback), so dropping is never wrong, only sometimes slower.
 * Dropped: large constants whose every reader is a main-graph node with
 * prepared data (packed weights: the packed copy is then the only one
 * resident), as soon as the last reader is prepared, and initializers of
 * the model as given that the compiled graph no longer reads (folded into
 * others, as batch norms into convolutions). */
#define DROP_MIN_BYTES ((size_t)64 << 10)
static void drop_pages(const poprt__program *p, const void *data, size_t nbytes)
{
    if (data && nbytes >= DROP_MIN_BYTES)
        poprt__model_drop_pages(p->m, data, nbytes);
}

/* Whether every reader of t is a main-graph node with prepared data (and,
 * when consumed, one whose prepare consumed the slot t fills); t no graph
 * output. */
static int readers_prepared(const poprt__program *p, const poprt__tensor *t, int consumed)
{
    const poprt__graph *g = p->m->graph;
    if (t->n_out_uses)
        return 0;
    for (const poprt__use *u = t->uses; u; u = u->next) {
        const poprt__node *r = u->node;
        if (r->graph != g || r->id < 0 || (size_t)r->id >= g->nodes.len ||
            g->nodes.items[r->id] != r || !__atomic_load_n(&p->states[r->id], __ATOMIC_ACQUIRE))
            return 0;
        if (consumed && (u->slot < 0 || u->slot >= 32 || !(p->consumed[r->id] >> u->slot & 1u)))
            return 0;
    }
    return 1;
}

static void drop_prepared_inputs(const poprt__program *p, const poprt__node *n)
{
    for (int k = 0; k < n->n_inputs; k++) {
        const poprt__tensor *t = n->inputs[k];
        if (t && t->raw && t->nbytes >= DROP_MIN_BYTES && readers_prepared(p, t, 0))
            drop_pages(p, t->raw, t->nbytes);
    }
}

/* Whether every reader of t is a main-graph node whose kernel reads t
 * only by copying its bytes (poprt__kernel.bytes_in: Gather's rows), so its
 * alignment does not matter; t no graph output. */
static int readers_copy_bytes(const poprt__program *p, const poprt__tensor *t)
{
    const poprt__graph *g = p->m->graph;
    if (t->n_out_uses || !t->uses)
        return 0;
    for (const poprt__use *u = t->uses; u; u = u->next) {
        const poprt__node *r = u->node;
        if (r->graph != g || !r->kernel || u->slot < 0 || u->slot >= 32 ||
            !(r->kernel->bytes_in & (1u << u->slot)))
            return 0;
    }
    return 1;
}

/* Constants of the main graph the runs bind without an aligned copy
 * (lib/runtime/exec.c): prepared_only, those whose every reader consumes
 * them through its prepared data (poprt__prep_ctx.consumed), so a packed
 * weight stored unaligned in the model file is resident once, packed;
 * bytes_only, those only byte-copying readers read, bound in place
 * (bert_base's word embeddings, 93 MB unaligned in the file, were copied
 * aligned at every session's start). */
static void mark_bound_in_place(const poprt__program *p)
{
    const poprt__graph *g = p->m->graph;
    for (size_t i = 0; i < g->tensors.len; i++) {
        poprt__tensor *t = g->tensors.items[i];
        const int fixed = t->raw && !t->producer;
        t->prepared_only = fixed && t->uses && readers_prepared(p, t, 1);
        t->bytes_only = fixed && readers_copy_bytes(p, t);
    }
}

/* poprt__program_share_equal_states: candidates are grouped by size and a
 * checksum of three 4 KiB windows (start, middle, end), then compared
 * whole. It may run while prepare helpers are at work (prepare_parallel):
 * a node counts once its state pointer is published (acquired here), the
 * helpers never touch a published node's slots again, and a node made a
 * reader gets the owner's pointer by a release store (the helpers read the
 * pointers to decide their file-page drops). */
typedef struct state_key {
    size_t i, size;
    uint64_t sum;
    void *d;
} state_key;

static int state_key_cmp(const void *a, const void *b)
{
    const state_key *x = a, *y = b;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    if (x->sum != y->sum)
        return x->sum < y->sum ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

#define SHARE_MIN_BYTES ((size_t)1 << 10)
#define SHARE_EVERY_BYTES ((size_t)32 << 20)
size_t poprt__program_share_equal_states(poprt__program *p)
{
    const size_t n = p->m->graph->nodes.len;
    state_key *keys = poprt__calloc(n ? n : 1, sizeof *keys);
    if (!keys) /* (only memory is lost) */
        return 0;
    if (!p->share_keys && !(p->share_keys = poprt__calloc(n ? n : 1, sizeof *p->share_keys))) {
        poprt__free(keys);
        return 0;
    }
    size_t nk = 0, freed = 0;
    const size_t win = (size_t)4 << 10;
    for (size_t i = 0; i < n; i++) {
        unsigned char *d = __atomic_load_n(&p->states[i], __ATOMIC_ACQUIRE);
        if (!d || !p->state_owned[i] || p->state_sizes[i] < SHARE_MIN_BYTES)
            continue;
        const size_t sz = p->state_sizes[i];
        /* (a key kept for data since freed and its address reused only
         * groups candidates wrongly: the whole bytes decide) */
        struct poprt__share_key *k = &p->share_keys[i];
        if (k->of != d) {
            uint64_t sum;
            if (sz <= 3 * win) {
                sum = poprt__checksum64(d, sz, 0);
            } else {
                sum = poprt__checksum64(d, win, 0);
                sum = poprt__checksum64(d + (sz / 2 - win / 2), win, sum);
                sum = poprt__checksum64(d + (sz - win), win, sum);
            }
            k->sum = sum;
            k->of = d;
        }
        keys[nk++] = (state_key){i, sz, k->sum, d};
    }
    qsort(keys, nk, sizeof *keys, state_key_cmp);
    for (size_t a = 0; a < nk;) {
        size_t b = a + 1;
        while (b < nk && keys[b].size == keys[a].size && keys[b].sum == keys[a].sum)
            b++;
        /* [a, b): same size and windows, in node order; each one equal to
         * an earlier owner of the run becomes its reader */
        for (size_t x = a + 1; x < b; x++) {
            const size_t i = keys[x].i;
            for (size_t y = a; y < x; y++) {
                const size_t o = keys[y].i;
                if (!p->state_owned[o] || memcmp(keys[y].d, keys[x].d, keys[x].size))
                    continue;
                __atomic_store_n(&p->states[i], keys[y].d, __ATOMIC_RELEASE);
                poprt__aligned_free(keys[x].d);
                p->state_owned[i] = 0;
                freed += keys[x].size;
                break;
            }
        }
        a = b;
    }
    poprt__free(keys);
    return freed;
}

/* Preparing, on the session's threads (option "threads"; one thread runs
 * the same loop without helpers): the nodes to prepare are claimed one at
 * a time, in order, by the compiling thread and threads - 1 helpers; each
 * node's results go to its own slots, the state pointer last (released),
 * so a helper dropping an input's file pages (drop_prepared_inputs) counts
 * a reader as prepared only once it is; a drop two threads both miss is
 * made by the sweep after them; the compiling thread reports progress and
 * shares equal copies as it goes. Packing BERT's weights (fresh pages the
 * kernel clears, then the pack) is most of its compile. */
#define PREPARE_MAX_THREADS 16
typedef struct prep_work {
    poprt__program *p;
    const size_t *todo; /* node indices, in order */
    size_t n_todo;
    size_t next, done;  /* atomic: the next entry to claim; entries finished */
    int failed;         /* atomic */
    pthread_mutex_t mu;
    poprt_status st;    /* the failure of the first node in order, its message and */
    char msg[1024];     /* entry (under mu): the error one thread would report */
    size_t failed_at;
    uint64_t total;     /* progress reports (the compiling thread's only) */
    uint64_t reported;  /* the last count it reported */
    size_t fresh;       /* atomic: bytes prepared since they were last shared */
} prep_work;

static void prep_claim(prep_work *w, int reports)
{
    poprt__program *p = w->p;
    while (!__atomic_load_n(&w->failed, __ATOMIC_ACQUIRE)) {
        const size_t q = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
        if (q >= w->n_todo)
            return;
        const size_t i = w->todo[q];
        const poprt__node *node = p->m->graph->nodes.items[i];
        void *state;
        size_t size;
        unsigned consumed;
        poprt_status st = prepare_one(p, node, &state, &size, &consumed);
        if (st) {
            pthread_mutex_lock(&w->mu);
            if (!w->st || q < w->failed_at) {
                w->st = st;
                w->failed_at = q;
                snprintf(w->msg, sizeof w->msg, "%s", poprt__last_error());
            }
            pthread_mutex_unlock(&w->mu);
            __atomic_store_n(&w->failed, 1, __ATOMIC_RELEASE);
            return;
        }
        p->state_sizes[i] = size;
        p->state_owned[i] = 1;
        p->consumed[i] = consumed;
        __atomic_store_n(&p->states[i], state, __ATOMIC_RELEASE);
        drop_prepared_inputs(p, node);
        const size_t done = __atomic_add_fetch(&w->done, 1, __ATOMIC_RELAXED);
        const size_t fresh = __atomic_add_fetch(&w->fresh, size, __ATOMIC_RELAXED);
        if (!reports) /* the compiling thread's part: progress, sharing */
            continue;
        if (w->total)
            poprt__progress("prepare", node->name, w->reported = done, w->total);
        /* equal copies shared every SHARE_EVERY_BYTES made, not only at
         * the end: the compile's peak memory holds them once (a chain of
         * 128 MatMuls on two 1 MB weights peaked at 135 MB) */
        if (fresh >= SHARE_EVERY_BYTES) {
            __atomic_store_n(&w->fresh, 0, __ATOMIC_RELAXED);
            poprt__program_share_equal_states(p);
        }
    }
}

static void *prep_helper(void *arg)
{
    prep_claim(arg, 0);
    return NULL;
}

/* Prepares nodes todo[0 .. n) on `threads` threads (this one included;
 * 1: this one alone, no helper started), reporting progress of `total`
 * (0: none), the last report total of total. */
static poprt_status prepare_parallel(poprt__program *p, const size_t *todo, size_t n, int threads,
                                     uint64_t total)
{
    prep_work w = {.p = p, .todo = todo, .n_todo = n, .total = total};
    pthread_mutex_init(&w.mu, NULL);
    pthread_t tid[PREPARE_MAX_THREADS];
    int started = 0;
    for (int t = 1; t < threads && t < PREPARE_MAX_THREADS; t++) /* (fewer if refused) */
        if (pthread_create(&tid[started], NULL, prep_helper, &w) == 0)
            started++;
    prep_claim(&w, 1);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&w.mu);
    if (w.st)
        return poprt__err(w.st, "%s", w.msg);
    for (size_t q = 0; started && q < n; q++) /* the drops two threads both missed */
        drop_prepared_inputs(p, p->m->graph->nodes.items[todo[q]]);
    /* (helpers may report the last nodes) */
    if (total && w.reported < total)
        poprt__progress("prepare", NULL, total, total);
    return POPRT_OK;
}

static poprt_status prepare_nodes(poprt__program *p, const poprt__stored_states *stored)
{
    poprt__graph *g = p->m->graph;
    size_t n = g->nodes.len;
    p->states = poprt__calloc(n ? n : 1, sizeof *p->states);
    p->state_sizes = poprt__calloc(n ? n : 1, sizeof *p->state_sizes);
    p->state_owned = poprt__calloc(n ? n : 1, 1);
    p->consumed = poprt__calloc(n ? n : 1, sizeof *p->consumed);
    if (!p->states || !p->state_sizes || !p->state_owned || !p->consumed)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    int stored_ok = stored && stored->usable;
    uint64_t total = 0; /* nodes to prepare, for the progress reports */
    for (size_t i = 0; i < n && poprt__progress_enabled(); i++) {
        const poprt__node *node = g->nodes.items[i];
        total += node->op && node->kernel && node->kernel->prepare &&
                 !(stored_ok && i < stored->n && stored->data[i] &&
                   poprt__x86_state_usable(stored->data[i], stored->size[i]));
    }
    if (total)
        poprt__progress("prepare", NULL, 0, total);
    size_t *todo = poprt__calloc(n ? n : 1, sizeof *todo), n_todo = 0;
    if (!todo)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const poprt__node *node = g->nodes.items[i];
        if (!node->op || !node->kernel || !node->kernel->prepare)
            continue;
        if (stored_ok && i < stored->n && stored->data[i] &&
            poprt__x86_state_usable(stored->data[i], stored->size[i])) {
            /* an executable file's data: used in place, not owned (data
             * packed for a kernel this CPU lacks is prepared again below,
             * with the file's options: a bfloat16 file made on a CPU with
             * AMX runs on AVX512-BF16 elsewhere, not in float32) */
            p->states[i] = (void *)stored->data[i];
            p->state_sizes[i] = stored->size[i];
            continue;
        }
        todo[n_todo++] = i;
    }
    poprt_status st = prepare_parallel(p, todo, n_todo,
                                       poprt__opt_threads(p->options, PREPARE_MAX_THREADS), total);
    poprt__free(todo);
    if (st)
        return st;
    poprt__program_share_equal_states(p);
    mark_bound_in_place(p);
    return prepare_subgraphs(p);
}

static void program_free(poprt__program *p)
{
    poprt__vec_free(&p->inputs);
    poprt__plan_free(&p->plan);
    for (size_t i = 0; p->states && p->state_owned && i < p->m->graph->nodes.len; i++)
        if (p->state_owned[i])
            poprt__aligned_free(p->states[i]);
    poprt__free(p->states);
    poprt__free(p->state_owned);
    poprt__free(p->state_sizes);
    poprt__free(p->consumed);
    poprt__free(p->share_keys);
    for (size_t i = 0; i < p->n_sub_states; i++)
        poprt__aligned_free(p->sub_states[i].state);
    poprt__free(p->sub_states);
    poprt__options_free(p->options);
    poprt__blob_unref(p->file);
    poprt__weights_free(p);
    pthread_rwlock_destroy(&p->wlock);
    if (p->shares)
        __atomic_sub_fetch(&p->shares->shared_by, 1, __ATOMIC_RELEASE);
    poprt__program_unref(p->shares);
    poprt__model_free(p->m);
    poprt__free(p);
}

void poprt__program_ref(poprt__program *p)
{
    if (p)
        __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
}

void poprt__program_unref(poprt__program *p)
{
    if (p && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0)
        program_free(p);
}

/* from's node of n's name and operator (first at n's own index), or -1. */
static long same_node(const poprt__graph *from, const poprt__node *n, size_t i)
{
    for (size_t k = 0; k <= from->nodes.len; k++) {
        const size_t j = k == 0 ? i : k - 1;
        if (j >= from->nodes.len || (k && j == i))
            continue;
        const poprt__node *o = from->nodes.items[j];
        if (!strcmp(o->op_type, n->op_type) && !strcmp(o->domain, n->domain) &&
            (o->name && n->name ? !strcmp(o->name, n->name) : o->name == n->name))
            return (long)j;
    }
    return -1;
}

size_t poprt__program_share_states(poprt__program *p, poprt__program *from)
{
    size_t freed = 0;
    const poprt__graph *g = p->m->graph;
    if (!from || from == p || (p->shares && p->shares != from))
        return 0;
    for (size_t i = 0; p->states && from->states && i < g->nodes.len; i++) {
        if (!p->state_owned[i] || !p->states[i])
            continue;
        const long j = same_node(from->m->graph, g->nodes.items[i], i);
        if (j < 0 || from->state_sizes[j] != p->state_sizes[i] ||
            memcmp(from->states[j], p->states[i], p->state_sizes[i]))
            continue;
        /* the nodes of p that read node i's copy too (poprt__program_share_equal_states) */
        void *old = p->states[i];
        for (size_t k = 0; k < g->nodes.len; k++)
            if (p->states[k] == old) {
                p->states[k] = from->states[j];
                p->state_owned[k] = 0;
            }
        poprt__aligned_free(old);
        freed += p->state_sizes[i];
    }
    if (freed && !p->shares) {
        poprt__program_ref(from);
        __atomic_add_fetch(&from->shared_by, 1, __ATOMIC_RELEASE);
        p->shares = from;
    }
    return freed;
}

/* A copy of o's keys and values (the program's own record of them). */
static poprt_status copy_options(const poprt_options *o, poprt_options **out)
{
    poprt_status st = poprt__options_new(out);
    return st ? st : poprt__options_add(*out, o, 1);
}

poprt_status poprt__program_compile(poprt__model *m, const poprt_options *options,
                                    const poprt__folder *folder,
                                    const poprt__stored_states *stored, poprt__program **out)
{
    poprt__program *p = poprt__calloc(1, sizeof *p);
    if (!p) {
        poprt__model_free(m);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    p->refs = 1;
    p->m = m;
    /* writers first, so a weight write is not starved by a stream of steps */
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&p->wlock, &attr);
    pthread_rwlockattr_destroy(&attr);
    poprt__weight *cands = NULL;
    size_t n_cands = 0;
    const char *prof = poprt__opt(options, "profile");
    steps sp = {p, prof && strcmp(prof, "1") == 0};
    step(&sp, 0);
    poprt_status st = configure(m, options);
    if (!st)
        st = copy_options(options, &p->options);
    if (!st)
        st = poprt__model_inline_functions(m);
    if (!st) {
        m->n_functions = 0; /* inlined; the copy no longer refers to them */
        st = poprt__model_check(m);
    }
    int n_grad = 0;
    if (!st) /* before every other step: they see ordinary nodes only */
        st = poprt__expand_gradients(m, &n_grad);
    if (!st && n_grad)
        st = poprt__model_check(m);
    /* before the folding that would turn the weights' DequantizeLinear into
     * float32 constants */
    const char *opt_level = poprt__opt(options, "optimize");
    int n_qdq = 0;
    if (!st && !(opt_level && strcmp(opt_level, "0") == 0))
        st = poprt__compile_fuse_qdq(m, &n_qdq);
    if (!st)
        st = poprt__weights_candidates(m, &cands, &n_cands);
    if (!st) {
        step(&sp, 1);
        st = poprt__graph_infer(m->graph, folder);
        if (!st)
            drop_folded(m->graph);
        const char *v = poprt__opt(options, "optimize");
        const char *f16 = poprt__opt(options, "float16_compute");
        int changed = 0, widened = 0;
        if (!st)
            step(&sp, 2);
        if (!st && !(f16 && strcmp(f16, "float16") == 0)) {
            st = poprt__compile_float16(m, &widened);
            if (!st && widened)
                st = poprt__model_check(m);
        }
        const char *mp = poprt__opt(options, "matmul_precision");
        if (!st && !(v && strcmp(v, "0") == 0))
            st = poprt__compile_optimize(m, mp && strcmp(mp, "bfloat16") == 0, &changed);
        if (!st && (changed || widened)) {
            /* the rewrites may expose more constants */
            st = poprt__graph_infer(m->graph, folder);
            if (!st)
                drop_folded(m->graph);
        }
    }
    if (!st) {
        step(&sp, 3);
        poprt__kernels_bind(m->graph);
        step(&sp, 4);
        for (size_t i = 0; i < n_cands; i++)
            if (!poprt__weights_kept(m, &cands[i]))
                drop_pages(p, cands[i].orig, cands[i].nbytes);
        /* values folding computed on the way to others (a weight made in
         * steps) are dead now: freed before the packed copies are made */
        (void)poprt__model_sweep_folded(m);
        st = prepare_nodes(p, stored);
    }
    if (!st)
        st = poprt__user_inputs(m->graph, &p->inputs)
                 ? poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory")
                 : POPRT_OK;
    if (!st) {
        step(&sp, 5);
        st = poprt__plan_build(m->graph, &p->plan);
    }
    if (!st) {
        st = poprt__weights_select(p, cands, n_cands);
        cands = NULL;
    }
    poprt__free(cands);
    if (st) {
        program_free(p);
        return st;
    }
    step(&sp, N_STEPS);
    *out = p;
    return POPRT_OK;
}
