/* Pipelined stages (runtime.h): the CPU meaning of PopRT's pipelining over
 * IPUs. Each stage program runs on its own thread (pinned to its own cores,
 * with a session whose pool has those cores); a request goes from stage to
 * stage through bounded queues. A request's stage stepios live until it
 * leaves the pipeline, so a later stage binds an earlier one's outputs
 * without copies. A request leaves after the last stage, or after the
 * first stage that fails (with that stage's status and message): once.
 *
 * Stopping: the feeder stops pushing, stage 0 drains its queue and stops
 * stage 1, which drains and stops stage 2, ...: nothing pushed is lost. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "runtime/runtime.h"

#define STAGE_QUEUE 4 /* requests waiting at a stage: enough to keep it busy */
#define SPARE 8       /* stepios a stage keeps for reuse */

typedef struct item {
    poprt_stepio *io;   /* the request's */
    poprt_stepio **ios; /* per stage: its run's stepio, NULL until it runs */
    poprt__pipeline_fn done;
    void *user;
    poprt_status st;
    char msg[512];
} item;

typedef struct stage {
    struct poprt__pipeline *p;
    int index;
    poprt__program *prog;
    poprt_session *sess;
    int *src;             /* per program input: the earlier stage making it, -1: the request's
                           */
    unsigned char *final; /* per graph output: one of the model's outputs */
    pthread_t thread;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t nonempty, nonfull;
    item *q[STAGE_QUEUE];
    size_t head, len;
    int stopping;
    /* stepios of finished requests, kept for the next ones: their output
     * buffers are reused instead of allocated per request (under mu) */
    poprt_stepio *spare[SPARE];
    size_t n_spare;
} stage;

struct poprt__pipeline {
    int n;
    stage *stages;
    poprt_options *opts;
    poprt__pipeline_cfg cfg;
    pthread_mutex_t mu; /* guards the start's bookkeeping */
    pthread_cond_t ready_cv;
    int n_ready;
    poprt_status init; /* the first stage whose session could not be made */
    char init_msg[512];
};

static void put(stage *sg, item *it)
{
    pthread_mutex_lock(&sg->mu);
    while (sg->len == STAGE_QUEUE)
        pthread_cond_wait(&sg->nonfull, &sg->mu);
    sg->q[(sg->head + sg->len++) % STAGE_QUEUE] = it;
    pthread_cond_signal(&sg->nonempty);
    pthread_mutex_unlock(&sg->mu);
}

/* The next request at sg, or NULL when it is stopping and drained. */
static item *get(stage *sg)
{
    pthread_mutex_lock(&sg->mu);
    while (!sg->len && !sg->stopping)
        pthread_cond_wait(&sg->nonempty, &sg->mu);
    item *it = NULL;
    if (sg->len) {
        it = sg->q[sg->head];
        sg->head = (sg->head + 1) % STAGE_QUEUE;
        sg->len--;
        pthread_cond_signal(&sg->nonfull);
    }
    pthread_mutex_unlock(&sg->mu);
    return it;
}

static void stop(stage *sg)
{
    pthread_mutex_lock(&sg->mu);
    sg->stopping = 1;
    pthread_cond_broadcast(&sg->nonempty);
    pthread_mutex_unlock(&sg->mu);
}

static poprt_stepio *take_spare(stage *sg)
{
    pthread_mutex_lock(&sg->mu);
    poprt_stepio *io = sg->n_spare ? sg->spare[--sg->n_spare] : NULL;
    pthread_mutex_unlock(&sg->mu);
    return io;
}

static void give_spare(stage *sg, poprt_stepio *io)
{
    pthread_mutex_lock(&sg->mu);
    if (sg->n_spare < SPARE) {
        sg->spare[sg->n_spare++] = io;
        io = NULL;
    }
    pthread_mutex_unlock(&sg->mu);
    poprt__stepio_free(io);
}

static void finish(struct poprt__pipeline *p, item *it)
{
    for (int s = 0; s < p->n; s++)
        if (it->ios[s])
            give_spare(&p->stages[s], it->ios[s]);
    it->done(it->user, it->st, it->st ? it->msg : NULL);
    poprt__free(it);
}

/* Runs stage sg on request it: binds its inputs (the request's, or the
 * outputs of the stage making them), runs, hands the model's outputs made
 * here to the request. */
static poprt_status run_stage(stage *sg, item *it)
{
    const poprt__program *prog = sg->prog;
    poprt_stepio *io = take_spare(sg);
    poprt_status st = io ? POPRT_OK : poprt__stepio_create(&io);
    if (st)
        return st;
    it->ios[sg->index] = io;
    for (size_t i = 0; i < prog->inputs.len && !st; i++) {
        const char *name = ((const poprt__tensor *)prog->inputs.items[i])->name;
        poprt__tval v;
        st = sg->src[i] < 0 ? poprt__stepio_input_tensor(it->io, name, &v)
                            : poprt__stepio_output_tensor(it->ios[sg->src[i]], name, &v);
        if (!st)
            st = poprt__stepio_set_input(io, name, (poprt_dtype)v.dtype, v.dims, v.rank, v.data,
                                         v.nbytes);
    }
    const poprt__graph *g = prog->m->graph;
    for (size_t o = 0; o < g->outputs.len && !st; o++)
        st = poprt__stepio_set_output_alloc(io, ((const poprt__tensor *)g->outputs.items[o])->name);
    if (!st)
        st = poprt__session_run(sg->sess, io);
    for (size_t o = 0; o < g->outputs.len && !st; o++) {
        if (!sg->final[o])
            continue;
        const char *name = ((const poprt__tensor *)g->outputs.items[o])->name;
        poprt__tval y;
        st = poprt__stepio_output_tensor(io, name, &y);
        if (!st)
            st = poprt__stepio_deliver(it->io, name, &y);
    }
    return st;
}

static void *stage_main(void *arg)
{
    stage *sg = arg;
    struct poprt__pipeline *p = sg->p;
    if (p->cfg.pin)
        poprt__pin_cores(p->cfg.first_core + sg->index * p->cfg.cores_per_stage,
                         p->cfg.cores_per_stage);
    /* made on this thread: the session's pool inherits its CPUs */
    poprt_status st = poprt__session_new(sg->prog, p->opts, &sg->sess);
    pthread_mutex_lock(&p->mu);
    if (st && !p->init) {
        p->init = st;
        snprintf(p->init_msg, sizeof p->init_msg, "pipeline stage %d: %s", sg->index,
                 poprt__last_error());
    }
    p->n_ready++;
    pthread_cond_broadcast(&p->ready_cv);
    pthread_mutex_unlock(&p->mu);
    item *it;
    while ((it = get(sg))) { /* nothing comes unless every stage started */
        if (!it->st && (it->st = run_stage(sg, it)))
            snprintf(it->msg, sizeof it->msg, "pipeline stage %d: %s", sg->index,
                     poprt__last_error());
        if (it->st || sg->index == p->n - 1)
            finish(p, it);
        else
            put(&p->stages[sg->index + 1], it);
    }
    if (sg->index + 1 < p->n)
        stop(&p->stages[sg->index + 1]);
    return NULL;
}

/* Where each stage's inputs come from and which of its outputs are the
 * model's. */
static poprt_status wire(struct poprt__pipeline *p, const poprt__pipeline_cfg *cfg)
{
    for (int s = 0; s < p->n; s++) {
        stage *sg = &p->stages[s];
        const poprt__vec *in = &sg->prog->inputs, *out = &sg->prog->m->graph->outputs;
        sg->src = poprt__calloc(in->len + 1, sizeof *sg->src);
        sg->final = poprt__calloc(out->len + 1, 1);
        if (!sg->src || !sg->final)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < in->len; i++) {
            const char *name = ((const poprt__tensor *)in->items[i])->name;
            sg->src[i] = -1;
            for (int j = 0; j < s && sg->src[i] < 0; j++) {
                const poprt__tensor *t = poprt__graph_find(p->stages[j].prog->m->graph, name);
                if (t && t->is_output)
                    sg->src[i] = j;
            }
        }
        for (size_t o = 0; o < out->len; o++)
            for (size_t k = 0; cfg->outputs && k < cfg->outputs->len && !sg->final[o]; k++)
                sg->final[o] = strcmp(((const poprt__tensor *)out->items[o])->name,
                                      ((const poprt__tensor *)cfg->outputs->items[k])->name) == 0;
    }
    return POPRT_OK;
}

void poprt__pipeline_free(poprt__pipeline *p)
{
    if (!p)
        return;
    if (p->n)
        stop(&p->stages[0]);
    for (int s = 0; s < p->n; s++) {
        stage *sg = &p->stages[s];
        if (sg->started)
            pthread_join(sg->thread, NULL);
        else if (s + 1 < p->n)
            stop(&p->stages[s + 1]);
    }
    for (int s = 0; s < p->n; s++) {
        stage *sg = &p->stages[s];
        for (size_t k = 0; k < sg->n_spare; k++)
            poprt__stepio_free(sg->spare[k]);
        poprt__session_free(sg->sess);
        poprt__program_unref(sg->prog);
        poprt__free(sg->src);
        poprt__free(sg->final);
        pthread_mutex_destroy(&sg->mu);
        pthread_cond_destroy(&sg->nonempty);
        pthread_cond_destroy(&sg->nonfull);
    }
    poprt__options_free(p->opts);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->ready_cv);
    poprt__free(p->stages);
    poprt__free(p);
}

poprt_status poprt__pipeline_start(poprt__program *const *stages, int n,
                                   const poprt_options *run_opts, const poprt__pipeline_cfg *cfg,
                                   poprt__pipeline **out)
{
    struct poprt__pipeline *p = poprt__calloc(1, sizeof *p);
    if (!p)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->ready_cv, NULL);
    p->cfg = *cfg;
    p->cfg.outputs = NULL; /* read during the start only */
    poprt_status st = poprt__options_new(&p->opts);
    if (!st) /* the host's parallel-for too, as the replicas' sessions have it */
        st = poprt__options_add(p->opts, run_opts, 1);
    if (!st && !(p->stages = poprt__calloc((size_t)n, sizeof *p->stages)))
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int s = 0; s < n && !st; s++) {
        stage *sg = &p->stages[s];
        sg->p = p;
        sg->index = s;
        sg->prog = stages[s];
        poprt__program_ref(sg->prog);
        pthread_mutex_init(&sg->mu, NULL);
        pthread_cond_init(&sg->nonempty, NULL);
        pthread_cond_init(&sg->nonfull, NULL);
        p->n = s + 1;
    }
    if (!st)
        st = wire(p, cfg);
    for (int s = 0; s < p->n && !st; s++) {
        stage *sg = &p->stages[s];
        int e = poprt__thread_create(&sg->thread, stage_main, sg);
        if (e)
            st = poprt__err(e == EAGAIN ? POPRT_STATUS_OUT_OF_MEMORY : POPRT_STATUS_RUNTIME_ERROR,
                            "cannot start pipeline stage %d: %s", s, strerror(e));
        sg->started = !e;
    }
    pthread_mutex_lock(&p->mu);
    int want = 0;
    for (int s = 0; s < p->n; s++)
        want += p->stages[s].started;
    while (p->n_ready < want)
        pthread_cond_wait(&p->ready_cv, &p->mu);
    if (!st && p->init)
        st = poprt__err(p->init, "%s", p->init_msg);
    pthread_mutex_unlock(&p->mu);
    if (st) {
        poprt__pipeline_free(p);
        return st;
    }
    *out = p;
    return POPRT_OK;
}

poprt_status poprt__pipeline_push(poprt__pipeline *p, poprt_stepio *io, poprt__pipeline_fn done,
                                  void *user)
{
    item *it = poprt__calloc(1, sizeof *it + (size_t)p->n * sizeof(poprt_stepio *));
    if (!it)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for a pipelined request");
    it->ios = (poprt_stepio **)(it + 1);
    it->io = io;
    it->done = done;
    it->user = user;
    poprt__stepio_reset(io);
    put(&p->stages[0], it);
    return POPRT_OK;
}
