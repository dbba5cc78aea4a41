/* A small thread pool: workers sleep on a condition variable between jobs
 * (no spinning), the calling thread takes part, and every worker acknowledges
 * every job. Kernels compute each output element in one chunk with a fixed
 * order, so results never depend on scheduling or thread count. */
#include <string.h>
#include "runtime/runtime.h"

struct poprt__pool {
    int threads; /* including the caller */
    pthread_t *workers;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_mutex_t busy; /* one job at a time; others run inline */
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
    int64_t n, chunk, next_chunk, n_chunks;
    int acks; /* workers done with the current job */
    uint64_t job_id;
    int stop;
    poprt_parallel_for_fn host; /* run jobs through the host instead of workers */
    void *host_user;
};

static int take_chunk(poprt__pool *p, int64_t *b, int64_t *e)
{
    int64_t c = __atomic_fetch_add(&p->next_chunk, 1, __ATOMIC_RELAXED);
    if (c >= p->n_chunks)
        return 0;
    *b = c * p->chunk;
    *e = *b + p->chunk < p->n ? *b + p->chunk : p->n;
    return 1;
}

static void *worker(void *arg)
{
    poprt__pool *p = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->job_id == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        seen = p->job_id;
        pthread_mutex_unlock(&p->mu);
        int64_t b, e, did = 0;
        while (take_chunk(p, &b, &e)) {
            p->fn(p->ctx, b, e);
            did++;
        }
        (void)did;
        pthread_mutex_lock(&p->mu);
        if (++p->acks == p->threads - 1)
            pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

poprt_status poprt__pool_create(int threads, poprt__pool **out)
{
    poprt__pool *p = poprt__calloc(1, sizeof *p);
    if (!p)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory creating threads");
    p->threads = threads < 1 ? 1 : threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->busy, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    if (p->threads > 1) {
        p->workers = poprt__calloc((size_t)p->threads - 1, sizeof *p->workers);
        if (!p->workers) {
            poprt__pool_free(p);
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory creating threads");
        }
        for (int i = 0; i < p->threads - 1; i++)
            if (pthread_create(&p->workers[i], NULL, worker, p) != 0) {
                p->threads = i + 1;
                poprt__pool_free(p);
                return poprt__err(POPRT_STATUS_RUNTIME_ERROR, "cannot start worker thread %d", i);
            }
    }
    *out = p;
    return POPRT_OK;
}

poprt_status poprt__pool_create_host(int width, poprt_parallel_for_fn fn, void *user,
                                     poprt__pool **out)
{
    poprt__pool *p = poprt__calloc(1, sizeof *p);
    if (!p)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    p->threads = width < 1 ? 1 : width;
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->busy, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    p->host = fn;
    p->host_user = user;
    *out = p;
    return POPRT_OK;
}

typedef struct host_job {
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
    int64_t n, chunk;
} host_job;

static void host_task(void *arg, size_t i)
{
    const host_job *j = arg;
    int64_t b = (int64_t)i * j->chunk, e = b + j->chunk < j->n ? b + j->chunk : j->n;
    if (b < e)
        j->fn(j->ctx, b, e);
}

void poprt__pool_free(poprt__pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; p->workers && i < p->threads - 1; i++)
        pthread_join(p->workers[i], NULL);
    poprt__free(p->workers);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->busy);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    poprt__free(p);
}

int poprt__pool_threads(const poprt__pool *p) { return p ? p->threads : 1; }

int poprt__pool_run(poprt__pool *p, int64_t n, int64_t grain,
                    void (*fn)(void *ctx, int64_t b, int64_t e), void *ctx)
{
    if (!p || (p->threads < 2 && !p->host))
        return 0;
    int64_t chunks = (n + grain - 1) / grain;
    int64_t want = (int64_t)p->threads * 4;
    if (chunks > want)
        chunks = want;
    int64_t chunk = (n + chunks - 1) / chunks;
    if (p->host) {
        /* the host schedules; several runs may call it at once */
        host_job j = {fn, ctx, n, chunk};
        p->host(p->host_user, (size_t)((n + chunk - 1) / chunk), host_task, &j);
        return 1;
    }
    if (pthread_mutex_trylock(&p->busy) != 0)
        return 0;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    p->n_chunks = (n + chunk - 1) / chunk;
    p->next_chunk = 0;
    p->acks = 0;
    p->job_id++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    int64_t b, e;
    while (take_chunk(p, &b, &e))
        fn(ctx, b, e);
    /* every worker acknowledges every job, so none can straggle into the next */
    pthread_mutex_lock(&p->mu);
    while (p->acks < p->threads - 1)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->busy);
    return 1;
}
