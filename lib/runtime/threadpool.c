/* A small thread pool: the calling thread takes part in each job. Between
 * jobs workers poll briefly, then sleep on a condition variable: a model's
 * kernels hand out jobs microseconds apart, and a futex wake-up per job (tens
 * of microseconds on a busy machine) would cost more than many of the jobs
 * themselves; the bounded poll keeps an idle pool off the CPU.
 *
 * Each thread owns a contiguous range of a job's chunks (thread i the i-th
 * of n equal parts) and takes those first, then helps with the others'
 * ranges. Kernels split their outputs in the same order from one node to
 * the next (channels, planes, rows), so a thread tends to read what it
 * wrote itself a moment ago, from its own cache: on the 2-vCPU machines we
 * measure on, a cache line written by one core and read by the other costs
 * more than the arithmetic of many memory-bound kernels.
 *
 * Chunks are claimed from atomic tickets that also name the job, so a
 * worker that wakes late cannot take a chunk of a later job, and the caller
 * waits only for chunks that were actually claimed: a worker the OS has not
 * scheduled yet (a loaded machine) never holds a job up, its range is taken
 * by the others. Kernels compute each output element in one chunk with a
 * fixed order, so results never depend on scheduling or thread count. */
#include <errno.h>
#include <string.h>
#include "runtime/runtime.h"

/* How long a thread polls before sleeping on the condition variable:
 * 200,000 time-stamp ticks, about 100 microseconds with a 2.1 GHz TSC (a
 * node's kernels hand out jobs closer together than that). The poll has no
 * pause instruction: under KVM a loop of pauses makes the hypervisor
 * deschedule the virtual CPU (Intel's pause-loop exiting, AMD's pause
 * filter), and the worker then comes back far later than a futex wake-up
 * would bring it (light_squeezenet at 2 threads: 4.8 -> 2.7 ms per run
 * without it). */
#define SPIN_TICKS 200000   /* time-stamp counter ticks */
#define SPIN_ROUNDS 200000  /* where there is no TSC: polls */
#define MAX_CHUNKS 0xffff /* chunk counts live in 16 bits of the ticket */

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t spin_start(void) { return __rdtsc(); }
static inline uint64_t spin_elapsed(uint64_t t0, uint64_t polls)
{
    (void)polls;
    return __rdtsc() - t0;
}
#define SPIN_LIMIT SPIN_TICKS
#else
static inline uint64_t spin_start(void) { return 0; }
static inline uint64_t spin_elapsed(uint64_t t0, uint64_t polls)
{
    (void)t0;
    return polls;
}
#define SPIN_LIMIT SPIN_ROUNDS
#endif

/* Polls while cond holds, up to the limit (the clock is read every 64
 * polls). */
#define SPIN_WHILE(cond)                                                                    \
    do {                                                                                    \
        const uint64_t spin_t0_ = spin_start();                                             \
        for (uint64_t spin_i_ = 0; (cond); spin_i_++) {                                     \
            __asm__ __volatile__("" ::: "memory");                                          \
            if ((spin_i_ & 63) == 63 && spin_elapsed(spin_t0_, spin_i_) > SPIN_LIMIT)        \
                break;                                                                      \
        }                                                                                   \
    } while (0)

/* One thread's range of the current job's chunks, on a cache line of its
 * own: job id << 32 | end << 16 | next. */
typedef struct pool_range {
    uint64_t ticket;
    char pad[56];
} pool_range;

typedef struct pool_worker {
    poprt__pool *pool;
    int self; /* index of its range; the caller's is 0 */
} pool_worker;

struct poprt__pool {
    int threads; /* including the caller */
    pthread_t *workers;
    pool_worker *args;
    pool_range *ranges; /* threads entries, 64-byte aligned */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    pthread_mutex_t busy; /* one job at a time; others run inline */
    /* the current job: written only while no chunk of the previous job is
     * claimed or running, read by whoever claims one of its chunks */
    void (*fn)(void *, int64_t, int64_t);
    void *ctx;
    int64_t n, chunk;
    int64_t finished; /* chunks of the current job completed */
    int sleeping;     /* the caller waits on done for the job's last chunks */
    uint32_t job_id;  /* changes under mu when a job is published */
    uint32_t rest;    /* bumped at the end of a run: pollers go to sleep now */
    uint32_t alert;   /* bumped under mu at the start of a run: sleepers poll */
    int stop;
    poprt_parallel_for_fn host; /* run jobs through the host instead of workers */
    void *host_user;
};

/* Claims the next chunk of range r of the current job; 0 when none is left. */
static int take_from(poprt__pool *p, int r, int64_t *b, int64_t *e)
{
    uint64_t t = __atomic_load_n(&p->ranges[r].ticket, __ATOMIC_ACQUIRE);
    for (;;) {
        const uint64_t next = t & 0xffff, end = (t >> 16) & 0xffff;
        if (next >= end)
            return 0;
        if (__atomic_compare_exchange_n(&p->ranges[r].ticket, &t, t + 1, 1, __ATOMIC_ACQUIRE,
                                        __ATOMIC_ACQUIRE)) {
            *b = (int64_t)next * p->chunk;
            *e = *b + p->chunk < p->n ? *b + p->chunk : p->n;
            return 1;
        }
    }
}

/* Runs chunks until none is left, its own range first; returns the number
 * run. */
static int64_t run_chunks(poprt__pool *p, int self)
{
    int64_t b, e, did = 0;
    for (int k = 0; k < p->threads; k++) {
        const int r = (self + k) % p->threads;
        while (take_from(p, r, &b, &e)) {
            p->fn(p->ctx, b, e);
            __atomic_add_fetch(&p->finished, 1, __ATOMIC_SEQ_CST);
            did++;
        }
    }
    return did;
}

/* After a worker ran `did` chunks: the caller may be asleep waiting for
 * the last of them. It sets `sleeping` before it checks `finished` and
 * waits; run_chunks counted ours in `finished` before this reads
 * `sleeping` (both sequentially consistent), so either the caller sees our
 * chunks or we see it asleep and wake it under mu. Mostly the caller is
 * still polling and the worker does not touch mu at all. */
static void worker_ran(poprt__pool *p, int64_t did)
{
    if (!did || !__atomic_load_n(&p->sleeping, __ATOMIC_SEQ_CST))
        return;
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->done);
    pthread_mutex_unlock(&p->mu);
}

static void *worker(void *arg)
{
    const pool_worker *w = arg;
    poprt__pool *p = w->pool;
    uint32_t seen = 0, rest = __atomic_load_n(&p->rest, __ATOMIC_RELAXED), alert = 0;
    for (;;) {
        /* job_id and stop change under mu; polling them without it only
         * decides when to take mu, which then reads them properly. A run
         * that ends (poprt__pool_rest) stops the poll: between runs the
         * workers sleep. */
        SPIN_WHILE(!__atomic_load_n(&p->stop, __ATOMIC_RELAXED) &&
                   __atomic_load_n(&p->job_id, __ATOMIC_ACQUIRE) == seen &&
                   __atomic_load_n(&p->rest, __ATOMIC_RELAXED) == rest);
        /* a job seen while polling is run without taking mu: the caller
         * still holds it while it wakes sleepers, and a worker blocking on
         * it there (then woken by the caller's unlock) paid two futex calls
         * per job. The job's fields were written before its tickets were
         * stored (release), and take_from claims a ticket with acquire, so a
         * chunk is always run with the fields of the job that owns it. */
        const uint32_t id = __atomic_load_n(&p->job_id, __ATOMIC_ACQUIRE);
        if (id != seen && !__atomic_load_n(&p->stop, __ATOMIC_RELAXED)) {
            seen = id;
            worker_ran(p, run_chunks(p, w->self));
            continue;
        }
        pthread_mutex_lock(&p->mu);
        while (!p->stop && p->job_id == seen && p->alert == alert)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        alert = p->alert;
        rest = __atomic_load_n(&p->rest, __ATOMIC_RELAXED); /* the current run */
        if (p->job_id == seen) {
            /* a run has started (poprt__pool_alert): poll for its first job */
            pthread_mutex_unlock(&p->mu);
            continue;
        }
        seen = p->job_id;
        pthread_mutex_unlock(&p->mu);
        worker_ran(p, run_chunks(p, w->self));
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
        p->args = poprt__calloc((size_t)p->threads - 1, sizeof *p->args);
        p->ranges = poprt__aligned_alloc((size_t)p->threads * sizeof *p->ranges);
        if (!p->workers || !p->args || !p->ranges) {
            p->threads = 1; /* no worker to stop */
            poprt__pool_free(p);
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory creating threads");
        }
        memset(p->ranges, 0, (size_t)p->threads * sizeof *p->ranges);
        for (int i = 0; i < p->threads - 1; i++) {
            p->args[i].pool = p;
            p->args[i].self = i + 1;
        }
        for (int i = 0; i < p->threads - 1; i++) {
            int e = poprt__thread_create(&p->workers[i], worker, &p->args[i]);
            if (e) {
                p->threads = i + 1;
                poprt__pool_free(p);
                /* EAGAIN: no memory for the stack, or the thread limit */
                return poprt__err(e == EAGAIN ? POPRT_STATUS_OUT_OF_MEMORY : POPRT_STATUS_RUNTIME_ERROR,
                                  "cannot start worker thread %d: %s", i + 1, strerror(e));
            }
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
    __atomic_store_n(&p->stop, 1, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; p->workers && i < p->threads - 1; i++)
        pthread_join(p->workers[i], NULL);
    poprt__free(p->workers);
    poprt__free(p->args);
    poprt__aligned_free(p->ranges);
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
    if (want > MAX_CHUNKS)
        want = MAX_CHUNKS;
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
    const int64_t n_chunks = (n + chunk - 1) / chunk;
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    __atomic_store_n(&p->finished, 0, __ATOMIC_RELAXED);
    const uint32_t id = p->job_id + 1;
    for (int i = 0; i < p->threads; i++) {
        const uint64_t b = (uint64_t)(n_chunks * i / p->threads);
        const uint64_t e = (uint64_t)(n_chunks * (i + 1) / p->threads);
        __atomic_store_n(&p->ranges[i].ticket, (uint64_t)id << 32 | e << 16 | b,
                         __ATOMIC_RELEASE);
    }
    __atomic_store_n(&p->job_id, id, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    run_chunks(p, 0);
    /* every chunk is claimed; wait for those still running elsewhere, which
     * usually end within microseconds of ours */
    SPIN_WHILE(__atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) < n_chunks);
    if (__atomic_load_n(&p->finished, __ATOMIC_ACQUIRE) < n_chunks) {
        pthread_mutex_lock(&p->mu);
        __atomic_store_n(&p->sleeping, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&p->finished, __ATOMIC_SEQ_CST) < n_chunks)
            pthread_cond_wait(&p->done, &p->mu);
        __atomic_store_n(&p->sleeping, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_unlock(&p->busy);
    return 1;
}

void poprt__pool_alert(poprt__pool *p)
{
    if (!p || p->threads < 2 || p->host)
        return;
    pthread_mutex_lock(&p->mu);
    p->alert++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
}

void poprt__pool_rest(poprt__pool *p)
{
    if (p)
        __atomic_add_fetch(&p->rest, 1, __ATOMIC_RELAXED);
}
