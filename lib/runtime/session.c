/* Sessions: a private copy of the model with input shapes bound, constants
 * folded and every static buffer planned, plus a pool of execution contexts
 * so several threads can run one session at once. */
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include "runtime/runtime.h"

#define FOLD_MAX_BYTES ((size_t)64 << 20)

poprt_status poprt__exec_init(struct poprt__exec *x, struct poprt_session *s)
{
    memset(x, 0, sizeof *x);
    x->s = s;
    x->pool = s->pool;
    poprt__arena_init(&x->strings);
    poprt__arena_init(&x->types);
    if (s->plan.arena_bytes) {
        x->arena = poprt__aligned_alloc(s->plan.arena_bytes);
        if (!x->arena)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for a %zu-byte arena",
                              s->plan.arena_bytes);
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

/* The profile, by operator type, through the log callback at INFO. */
static void log_profile(const poprt_session *s)
{
    const poprt__graph *g = s->m->graph;
    const char *types[256];
    uint64_t ns[256] = {0}, calls[256] = {0}, total = 0;
    int nt = 0;
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

void poprt_session_free(poprt_session *s)
{
    if (!s)
        return;
    if (s->profile && s->prof_ns && s->prof_calls) /* both: a failed build may have one */
        log_profile(s);
    poprt__free(s->prof_ns);
    poprt__free(s->prof_calls);
    for (size_t i = 0; i < s->all_execs.len; i++) {
        poprt__exec_free(s->all_execs.items[i]);
        poprt__free(s->all_execs.items[i]);
    }
    poprt__vec_free(&s->all_execs);
    poprt__vec_free(&s->free_execs);
    poprt__vec_free(&s->inputs);
    poprt__pool_free(s->pool);
    poprt__plan_free(&s->plan);
    for (size_t i = 0; s->states && s->state_owned && i < s->m->graph->nodes.len; i++)
        if (s->state_owned[i])
            poprt__aligned_free(s->states[i]);
    poprt__free(s->states);
    poprt__free(s->state_owned);
    poprt_options_free(s->options);
    poprt__blob_unref(s->file);
    poprt__free(s->state_sizes);
    poprt__free(s->anchors);
    if (s->view) {
        poprt__vec_free(&s->view->user_inputs);
        poprt__free(s->view);
    }
    poprt__model_free(s->m);
    pthread_mutex_destroy(&s->mu);
    poprt__free(s);
}

static poprt_status configure(poprt_session *s, const poprt_options *o)
{
    poprt_status st = poprt__options_validate(o);
    if (!st) /* the session's limits: the model's, where the options say nothing */
        st = poprt__limits_from_options(o, &s->m->limits);
    if (st)
        return st;
    size_t nodes = poprt__graph_count_nodes(s->m->graph);
    for (int f = 0; f < s->m->n_functions; f++)
        nodes += s->m->functions[f].body ? poprt__graph_count_nodes(s->m->functions[f].body) : 0;
    if ((int64_t)nodes > s->m->limits.max_nodes)
        return poprt__err(POPRT_STATUS_LIMIT_EXCEEDED,
                          "the model has %zu nodes (option 'max_nodes' is %lld)", nodes,
                          (long long)s->m->limits.max_nodes);
    const char *v;
    s->threads = (v = poprt__opt(o, "threads")) ? atoi(v) : 1;
    s->profile = (v = poprt__opt(o, "profile")) && strcmp(v, "1") == 0;
    s->batches_per_step = (v = poprt__opt(o, "batches_per_step")) ? atoll(v) : 1;
    poprt__graph *g = s->m->graph;
    /* input shapes */
    for (size_t i = 0; o && i < o->n; i++) {
        const char *key = o->kv[i].key;
        if (strncmp(key, "input_shape.", 12) == 0) {
            int64_t dims[POPRT__MAX_RANK];
            int rank;
            if ((st = poprt__parse_dims(o->kv[i].value, dims, &rank, key)) ||
                (st = poprt__set_input_shape(s->m, key + 12, dims, rank)))
                return poprt__err_prefix(st == POPRT_STATUS_OUT_OF_MEMORY ? st
                                                                        : POPRT_STATUS_INVALID_OPTION,
                                         "option '%s': ", key);
        } else if (strncmp(key, "anchor.", 7) == 0) {
            int found = 0;
            for (size_t k = 0; k < g->outputs.len && !found; k++)
                found = strcmp(((poprt__tensor *)g->outputs.items[k])->name, key + 7) == 0;
            if (!found)
                return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                  "option '%s': the model has no output '%s'", key, key + 7);
        }
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

/* Nodes whose outputs were all folded to constants never run again. */
static void drop_folded(poprt__graph *g)
{
    size_t k = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        int folded = n->n_outputs > 0;
        for (int j = 0; j < n->n_outputs && folded; j++)
            folded = !n->outputs[j] || n->outputs[j]->data;
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

/* Runs each op's prepare() on the nodes of the main graph. */
static poprt_status prepare_nodes(poprt_session *s, const poprt__stored_states *stored)
{
    poprt__graph *g = s->m->graph;
    size_t n = g->nodes.len;
    /* the compiled program's kernels, in every graph */
    poprt__kernels_bind(g);
    s->states = poprt__calloc(n ? n : 1, sizeof *s->states);
    s->state_sizes = poprt__calloc(n ? n : 1, sizeof *s->state_sizes);
    s->state_owned = poprt__calloc(n ? n : 1, 1);
    if (!s->states || !s->state_sizes || !s->state_owned)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < n; i++) {
        poprt__node *node = g->nodes.items[i];
        if (!node->op || !node->kernel || !node->kernel->prepare)
            continue;
        if (stored && stored->usable && i < stored->n && stored->data[i]) {
            /* an executable file's blob: used in place, not owned */
            s->states[i] = (void *)stored->data[i];
            s->state_sizes[i] = stored->size[i];
            continue;
        }
        poprt__ival in[32];
        poprt__type out[16];
        if (node->n_inputs > 32 || node->n_outputs > 16)
            continue;
        for (int k = 0; k < node->n_inputs; k++) {
            poprt__tensor *t = node->inputs[k];
            in[k].type = t ? &t->type : NULL;
            in[k].data = t ? t->data : NULL;
            in[k].nbytes = t ? t->nbytes : 0;
        }
        for (int k = 0; k < node->n_outputs; k++) {
            memset(&out[k], 0, sizeof out[k]);
            if (node->outputs[k])
                out[k] = node->outputs[k]->type;
        }
        poprt__prep_ctx c = {.node = node, .opset = node->opset, .n_in = node->n_inputs, .in = in,
                             .n_out = node->n_outputs, .out = out, .isa = 0};
        poprt_status st = node->kernel->prepare(&c, &s->states[i], &s->state_sizes[i]);
        if (st)
            return st;
        s->state_owned[i] = 1;
    }
    return POPRT_OK;
}

poprt_status poprt__session_build(poprt__model *m, const poprt_options *options,
                                  const poprt__stored_states *stored, poprt_session **session_out)
{
    poprt_session *s = poprt__calloc(1, sizeof *s);
    if (!s) {
        poprt__model_free(m);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    s->m = m;
    poprt_status st = configure(s, options);
    if (!st)
        st = poprt_options_create(&s->options);
    for (size_t i = 0; !st && options && i < options->n; i++)
        st = poprt_options_set(s->options, options->kv[i].key, options->kv[i].value);
    if (!st)
        st = poprt__model_inline_functions(s->m);
    if (!st) {
        s->m->n_functions = 0; /* inlined; the copy no longer refers to them */
        st = poprt__model_check(s->m);
    }
    if (!st) {
        poprt__folder folder = {poprt__fold_node, NULL, FOLD_MAX_BYTES};
        st = poprt__graph_infer(s->m->graph, &folder);
        if (!st)
            drop_folded(s->m->graph);
        const char *v = poprt__opt(options, "optimize");
        int changed = 0;
        if (!st && !(v && strcmp(v, "0") == 0))
            st = poprt__compile_optimize(s->m, &changed);
        if (!st && changed) {
            /* the passes' rewrites may expose more constants */
            st = poprt__graph_infer(s->m->graph, &folder);
            if (!st)
                drop_folded(s->m->graph);
        }
    }
    if (!st)
        st = prepare_nodes(s, stored);
    if (!st && s->profile) {
        size_t nn = s->m->graph->nodes.len + 1;
        s->prof_ns = poprt__calloc(nn, sizeof *s->prof_ns);
        s->prof_calls = poprt__calloc(nn, sizeof *s->prof_calls);
        if (!s->prof_ns || !s->prof_calls)
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (!st)
        st = poprt__user_inputs(s->m->graph, &s->inputs);
    if (!st)
        st = poprt__plan_build(s->m->graph, &s->plan);
    if (!st && options && options->pf)
        st = poprt__pool_create_host(options->pf_width, options->pf, options->pf_user, &s->pool);
    else if (!st && s->threads > 1)
        st = poprt__pool_create(s->threads, &s->pool);
    if (!st) {
        s->view = poprt__calloc(1, sizeof *s->view);
        if (!s->view)
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        else {
            s->view->m = s->m;
            s->view->gen = 1;
        }
    }
    struct poprt__exec *x;
    if (!st)
        st = new_exec(s, &x);
    if (!st)
        st = poprt__vec_push(&s->free_execs, x);
    if (st) {
        poprt_session_free(s);
        return st;
    }
    *session_out = s;
    return POPRT_OK;
}

poprt_status poprt_session_create(const poprt_model *model, const poprt_options *options,
                                  poprt_session **session_out)
{
    if (!model || !session_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_create: NULL argument");
    const char *cache = poprt__opt(options, "cache_dir");
    if (!cache)
        cache = getenv("POPRT_CACHE_DIR");
    if (cache && *cache)
        return poprt__session_cached(model, options, cache, session_out);
    poprt__model *m;
    poprt_status st = poprt__model_clone(model->m, &m);
    if (st)
        return st;
    return poprt__session_build(m, options, NULL, session_out);
}

size_t poprt_session_num_inputs(const poprt_session *s) { return s ? s->inputs.len : 0; }
size_t poprt_session_num_outputs(const poprt_session *s) { return s ? s->m->graph->outputs.len : 0; }

poprt_status poprt_session_input(const poprt_session *s, size_t index, poprt_value_info *info)
{
    if (!s)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_input: NULL session");
    return poprt_model_input(s->view, index, info);
}

poprt_status poprt_session_output(const poprt_session *s, size_t index, poprt_value_info *info)
{
    if (!s)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_output: NULL session");
    return poprt_model_output(s->view, index, info);
}

int64_t poprt_session_batches_per_step(const poprt_session *s) { return s ? s->batches_per_step : 0; }
size_t poprt_session_arena_bytes(const poprt_session *s) { return s ? s->plan.arena_bytes : 0; }

poprt_status poprt_session_anchor(const poprt_session *s, const char *output,
                                  poprt_anchor *anchor_out, int64_t *every_n_out)
{
    if (!s || !output)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_anchor: NULL argument");
    const poprt__graph *g = s->m->graph;
    for (size_t k = 0; k < g->outputs.len; k++)
        if (strcmp(((poprt__tensor *)g->outputs.items[k])->name, output) == 0) {
            if (anchor_out)
                *anchor_out = s->anchors[k].kind;
            if (every_n_out)
                *every_n_out = s->anchors[k].every_n;
            return POPRT_OK;
        }
    return poprt__err(POPRT_STATUS_NOT_FOUND, "the session has no output '%s'", output);
}

/* Values of node outputs back to their planned state before each batch. */
static void reset_frame(struct poprt__exec *x, poprt_session *s)
{
    poprt__frame *f = &x->main;
    poprt__frame_release(f);
    const poprt__graph *g = f->g;
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        poprt__value *v = &f->vals[i];
        if (!t->producer && t->data)
            continue; /* constant, bound once */
        memset(v, 0, sizeof *v);
        int64_t off = s->plan.offset[i];
        if (off >= 0) {
            v->kind = POPRT__KIND_TENSOR;
            v->t.dtype = t->type.elem;
            v->t.rank = t->type.rank;
            for (int d = 0; d < t->type.rank; d++)
                v->t.dims[d] = t->type.dims[d].value;
            v->t.numel = poprt__type_numel(&t->type);
            v->t.nbytes = (size_t)v->t.numel * poprt_dtype_size((poprt_dtype)t->type.elem);
            v->t.data = x->arena + off;
        }
    }
}

/* The files whose mappings the session reads (an executable file, a model
 * file or external data used in place) must still be as long as when they
 * were mapped: a truncated one is an error here, not SIGBUS in a kernel. */
static poprt_status check_files(const poprt_session *s)
{
    poprt_status st = poprt__blob_check(s->file);
    for (size_t i = 0; !st && i < s->m->blobs.len; i++)
        st = poprt__blob_check(s->m->blobs.items[i]);
    return st;
}

poprt_status poprt_session_run(poprt_session *s, poprt_stepio *io)
{
    if (!s || !io)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_run: NULL argument");
    struct poprt__exec *x = NULL;
    poprt_status st = check_files(s);
    if (st)
        return st;
    poprt__pool_alert(s->pool);
    pthread_mutex_lock(&s->mu);
    if (s->free_execs.len)
        x = s->free_execs.items[--s->free_execs.len];
    else
        st = new_exec(s, &x);
    pthread_mutex_unlock(&s->mu);
    if (st)
        return st;
    x->run_counter++;
    x->loop_iterations = 0;
    st = poprt__stepio_begin(io, s);
    const poprt__graph *g = s->m->graph;
    for (int64_t b = 0; !st && b < s->batches_per_step; b++) {
        reset_frame(x, s);
        poprt__arena_free(&x->strings);
        poprt__arena_init(&x->strings);
        for (size_t i = 0; !st && i < s->inputs.len; i++) {
            const poprt__tensor *t = s->inputs.items[i];
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
    poprt__pool_rest(s->pool);
    poprt__frame_release(&x->main);
    pthread_mutex_lock(&s->mu);
    poprt_status pst = poprt__vec_push(&s->free_execs, x); /* capacity exists: never fails after warm-up */
    pthread_mutex_unlock(&s->mu);
    return st ? st : pst;
}
