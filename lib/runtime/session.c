/* Sessions: a compiled program (shared, read-only) and the state of its
 * runs: the thread pool and a pool of execution contexts, so several
 * threads can run one session at once, and several sessions one program. */
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include "runtime/runtime.h"

poprt_status poprt__exec_init(struct poprt__exec *x, struct poprt_session *s)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->pool = s->pool;
    x->weights_gen = ~0u; /* constants bound again at the first step, under the lock */
    poprt__arena_init(&x->strings);
    poprt__arena_init(&x->types);
    if (s->profile) {
        /* room for one run's slices, so that runs do not allocate for them
         * (nodes of every batch and the run; a failure here only means the
         * first run grows the buffer) */
        size_t cap = s->m->graph->nodes.len * (size_t)s->batches_per_step + 1;
        x->trace.ev = poprt__calloc(cap, sizeof *x->trace.ev);
        x->trace.cap = x->trace.ev ? cap : 0;
    }
    const size_t bytes = s->prog->plan.arena_bytes;
    if (bytes) {
        x->arena = poprt__aligned_alloc(bytes);
        if (!x->arena)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for a %zu-byte arena",
                              bytes);
    }
    return poprt__frame_init(&x->main, s->m->graph, NULL);
}

static poprt_status new_exec(poprt_session *s, struct poprt__exec **out)
{
    struct poprt__exec *x = poprt__calloc(1, sizeof *x);
    if (!x)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    poprt_status st = poprt__exec_init(x, s);
    if (!st)
        st = poprt__vec_push(&s->all_execs, x);
    if (st) {
        poprt__exec_free(x);
        poprt__free(x);
        return st;
    }
    *out = x;
    return POPRT_OK;
}

/* The profile, by operator type, through the log callback at INFO; nothing
 * when no node ran (a session freed after a failed or no run). */
static void log_profile(const poprt_session *s)
{
    const poprt__graph *g = s->m->graph;
    const char *types[256];
    uint64_t ns[256] = {0}, calls[256] = {0}, total = 0, ran = 0;
    int nt = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        ran += s->prof_calls[i];
    if (!ran)
        return;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        int k = 0;
        while (k < nt && strcmp(types[k], n->op_type) != 0)
            k++;
        if (k == nt) {
            if (nt == 256)
                continue;
            types[nt++] = n->op_type;
        }
        ns[k] += s->prof_ns[i];
        calls[k] += s->prof_calls[i];
        total += s->prof_ns[i];
    }
    poprt__log(POPRT_LOG_INFO, "profile: %.3f ms in kernels over all runs", (double)total / 1e6);
    for (int pass = 0; pass < nt; pass++) {
        int best = -1;
        for (int k = 0; k < nt; k++)
            if (calls[k] != UINT64_MAX && (best < 0 || ns[k] > ns[best]))
                best = k;
        poprt__log(POPRT_LOG_INFO, "profile: %-24s %10.3f ms %5.1f%% %8llu calls", types[best],
                   (double)ns[best] / 1e6, total ? 100.0 * (double)ns[best] / (double)total : 0.0,
                   (unsigned long long)calls[best]);
        calls[best] = UINT64_MAX;
    }
    /* and per node, in execution order, at DEBUG */
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        /* the output's shape and the second input's (a weight, for most
         * of the heavy operators) */
        const poprt__tensor *y = n->n_outputs ? n->outputs[0] : NULL;
        const poprt__tensor *w = n->n_inputs > 1 ? n->inputs[1] : NULL;
        char shape[96] = "", wshape[96] = "";
        size_t o = 0;
        for (int d = 0; y && d < y->type.rank && o + 24 < sizeof shape; d++)
            o += (size_t)snprintf(shape + o, sizeof shape - o, d ? "x%lld" : "%lld",
                                  (long long)y->type.dims[d].value);
        o = 0;
        for (int d = 0; w && d < w->type.rank && o + 24 < sizeof wshape; d++)
            o += (size_t)snprintf(wshape + o, sizeof wshape - o, d ? "x%lld" : "%lld",
                                  (long long)w->type.dims[d].value);
        poprt__log(POPRT_LOG_DEBUG,
                   "profile: node %-32s %-18s %10.3f ms %8llu calls  out %s  in1 %s", n->name,
                   n->op_type, (double)s->prof_ns[i] / 1e6, (unsigned long long)s->prof_calls[i],
                   shape, w ? wshape : "-");
    }
}

void poprt__session_free(poprt_session *s)
{
    if (!s)
        return;
    poprt__runner_stop(s->async); /* its requests complete first */
    if (s->profile && s->prof_ns && s->prof_calls) /* both: a failed build may have one */
        log_profile(s);
    poprt__free(s->prof_ns);
    poprt__free(s->prof_calls);
    poprt__trace_buf_free(&s->trace);
    for (size_t i = 0; i < s->all_execs.len; i++) {
        poprt__exec_free(s->all_execs.items[i]);
        poprt__free(s->all_execs.items[i]);
    }
    poprt__vec_free(&s->all_execs);
    poprt__vec_free(&s->free_execs);
    poprt__pool_free(s->pool);
    poprt__free(s->anchors);
    poprt__program_unref(s->prog);
    pthread_mutex_destroy(&s->mu);
    poprt__free(s);
}

/* The run options: threads, profile, batches_per_step and anchors (checked
 * against the program's outputs). */
static poprt_status configure(poprt_session *s, const poprt_options *o)
{
    poprt_status st = poprt__options_validate(o);
    if (st)
        return st;
    const char *v;
    s->threads = (v = poprt__opt(o, "threads")) ? atoi(v) : 1;
    s->profile = (v = poprt__opt(o, "profile")) && strcmp(v, "1") == 0;
    s->batches_per_step = (v = poprt__opt(o, "batches_per_step")) ? atoll(v) : 1;
    s->async_workers = (v = poprt__opt(o, "async_workers")) ? atoi(v) : 1;
    const poprt__graph *g = s->m->graph;
    for (size_t i = 0; o && i < o->n; i++) {
        const char *key = o->kv[i].key;
        if (strncmp(key, "anchor.", 7) != 0)
            continue;
        int found = 0;
        for (size_t k = 0; k < g->outputs.len && !found; k++)
            found = strcmp(((poprt__tensor *)g->outputs.items[k])->name, key + 7) == 0;
        if (!found)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option '%s': the model has no output '%s'", key, key + 7);
    }
    s->anchors = poprt__calloc(g->outputs.len + 1, sizeof *s->anchors);
    if (!s->anchors)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    poprt__anchor_cfg dflt = {POPRT_ANCHOR_ALL, 1};
    if ((v = poprt__opt(o, "anchors")) && (st = poprt__parse_anchor("anchors", v, &dflt)))
        return st;
    for (size_t k = 0; k < g->outputs.len; k++) {
        char key[512];
        snprintf(key, sizeof key, "anchor.%s", ((poprt__tensor *)g->outputs.items[k])->name);
        s->anchors[k] = dflt;
        if ((v = poprt__opt(o, key)) && (st = poprt__parse_anchor(key, v, &s->anchors[k])))
            return st;
        if (s->anchors[k].kind == POPRT_ANCHOR_EVERY_N && s->batches_per_step % s->anchors[k].every_n)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "output '%s': EveryN:%lld does not divide batches_per_step %lld",
                              ((poprt__tensor *)g->outputs.items[k])->name,
                              (long long)s->anchors[k].every_n, (long long)s->batches_per_step);
    }
    return POPRT_OK;
}

poprt_status poprt__session_new(poprt__program *p, const poprt_options *options,
                                poprt_session **session_out)
{
    poprt_session *s = poprt__calloc(1, sizeof *s);
    if (!s)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    poprt__program_ref(p);
    s->prog = p;
    s->m = p->m;
    poprt_status st = configure(s, options);
    if (!st && s->profile) {
        size_t nn = s->m->graph->nodes.len + 1;
        s->prof_ns = poprt__calloc(nn, sizeof *s->prof_ns);
        s->prof_calls = poprt__calloc(nn, sizeof *s->prof_calls);
        if (!s->prof_ns || !s->prof_calls)
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (!st && options && options->pf)
        st = poprt__pool_create_host(options->pf_width, options->pf, options->pf_user, &s->pool);
    else if (!st && s->threads > 1)
        st = poprt__pool_create(s->threads, &s->pool);
    struct poprt__exec *x;
    if (!st) {
        pthread_rwlock_rdlock(&p->wlock); /* its constants are read */
        st = new_exec(s, &x);
        pthread_rwlock_unlock(&p->wlock);
    }
    if (!st)
        st = poprt__vec_push(&s->free_execs, x);
    if (st) {
        poprt__session_free(s);
        return st;
    }
    *session_out = s;
    return POPRT_OK;
}

/* Values of node outputs back to their planned state before each batch. */
static poprt_status reset_frame(struct poprt__exec *x, poprt_session *s)
{
    poprt__frame *f = &x->main;
    poprt__frame_release(f);
    const poprt__graph *g = f->g;
    /* constants are bound once, and again after a weight changed */
    unsigned gen = __atomic_load_n(&s->prog->weights_gen, __ATOMIC_ACQUIRE);
    int rebind = x->weights_gen != gen;
    x->weights_gen = gen;
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        poprt__value *v = &f->vals[i];
        if (!t->producer && t->raw) {
            poprt_status st = rebind ? poprt__frame_bind_const(f, i) : POPRT_OK;
            if (st) {
                x->weights_gen = gen - 1; /* bound again on the next run */
                return st;
            }
            continue;
        }
        memset(v, 0, sizeof *v);
        int64_t off = s->prog->plan.offset[i];
        if (off >= 0) {
            v->kind = POPRT__KIND_TENSOR;
            v->t.dtype = t->type.elem;
            v->t.rank = t->type.rank;
            for (int d = 0; d < t->type.rank; d++)
                v->t.dims[d] = t->type.dims[d].value;
            v->t.numel = poprt__type_numel(&t->type);
            v->t.nbytes = (size_t)v->t.numel * poprt__dtype_size((poprt_dtype)t->type.elem);
            v->t.data = x->arena + off;
        }
    }
    return POPRT_OK;
}

/* The files whose mappings the session reads (an executable file, a model
 * file or external data used in place) must still be as long as when they
 * were mapped: a truncated one is an error here, not SIGBUS in a kernel. */
static poprt_status check_files(const poprt_session *s)
{
    poprt_status st = poprt__blob_check(s->prog->file);
    for (size_t i = 0; !st && i < s->m->blobs.len; i++)
        st = poprt__blob_check(s->m->blobs.items[i]);
    return st;
}

poprt_status poprt__session_run(poprt_session *s, poprt_stepio *io)
{
    struct poprt__exec *x = NULL;
    poprt_status st = check_files(s);
    if (st)
        return st;
    /* weights are not written while a step runs (lib/compiler/weights.c),
     * nor while a new execution context binds the constants */
    pthread_rwlock_rdlock(&s->prog->wlock);
    poprt__pool_alert(s->pool);
    pthread_mutex_lock(&s->mu);
    if (s->free_execs.len)
        x = s->free_execs.items[--s->free_execs.len];
    else
        st = new_exec(s, &x);
    pthread_mutex_unlock(&s->mu);
    if (st) {
        pthread_rwlock_unlock(&s->prog->wlock);
        return st;
    }
    x->run_counter++;
    x->loop_iterations = 0;
    const uint64_t t_run = s->profile ? poprt__now_ns() : 0;
    if (s->profile)
        x->trace_run = __atomic_fetch_add(&s->trace_runs, 1, __ATOMIC_RELAXED);
    st = poprt__stepio_begin(io, s);
    const poprt__graph *g = s->m->graph;
    for (int64_t b = 0; !st && b < s->batches_per_step; b++) {
        x->trace_batch = (int32_t)b;
        if ((st = reset_frame(x, s)))
            break;
        poprt__arena_free(&x->strings);
        poprt__arena_init(&x->strings);
        for (size_t i = 0; !st && i < s->prog->inputs.len; i++) {
            const poprt__tensor *t = s->prog->inputs.items[i];
            st = poprt__stepio_bind_input(io, s, t, b, &x->main.vals[t->id]);
        }
        if (!st)
            st = poprt__exec_graph(x, &x->main);
        for (size_t k = 0; !st && k < g->outputs.len; k++) {
            const poprt__tensor *t = g->outputs.items[k];
            st = poprt__stepio_take_output(io, s, k, b, &x->main.vals[t->id]);
        }
    }
    if (!st)
        st = poprt__stepio_end(io, s);
    pthread_rwlock_unlock(&s->prog->wlock);
    poprt__pool_rest(s->pool);
    poprt__frame_release(&x->main);
    if (s->profile && !st)
        poprt__trace_add(x, -1, t_run, poprt__now_ns());
    pthread_mutex_lock(&s->mu);
    if (s->profile && st)
        x->trace.len = 0; /* a failed run leaves no slices */
    else if (s->profile)
        poprt__trace_commit(s, x);
    poprt_status pst = poprt__vec_push(&s->free_execs, x); /* capacity exists: never fails after warm-up */
    pthread_mutex_unlock(&s->mu);
    return st ? st : pst;
}

poprt_status poprt__session_submit(poprt_session *s, poprt_stepio *io, poprt_request_fn done,
                                   void *user, poprt_request **out)
{
    poprt_status st = POPRT_OK;
    pthread_mutex_lock(&s->mu);
    if (!s->async) {
        /* the session's own workers: no pinning, no batching, a queue as
         * long as memory allows */
        poprt__runner_cfg cfg = {.replicas = s->async_workers, .cores_per_replica = 1,
                                 .queue_size = (size_t)1 << 20, .max_batch = 1, .n_sizes = 1,
                                 .sizes = {1}};
        st = poprt__runner_start(&cfg, &s->prog, 1, NULL, s, &s->async);
    }
    pthread_mutex_unlock(&s->mu);
    return st ? st : poprt__runner_submit(s->async, io, 0, done, user, out);
}
