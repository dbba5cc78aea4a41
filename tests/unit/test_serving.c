/* Unit tests: asynchronous runs and runners (requests, cancel, deadlines,
 * the bounded queue, dynamic batching, drain on free, a stress run). The
 * model is tests/data/mlp_dynamic.onnx: x [batch, 16] -> y [batch, 10]. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "poprt/poprt.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRESS_REQUESTS 1000 /* per thread: the sanitizers run ~10x slower */
#else
#define STRESS_REQUESTS 10000
#endif

static poprt_model *load(void)
{
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/mlp_dynamic.onnx", &m), POPRT_OK);
    return m;
}

static void fill(float *x, int rows, int seed)
{
    for (int i = 0; i < rows * 16; i++)
        x[i] = (float)((i * 7 + seed * 13) % 23) / 11.5f - 1.0f;
}

/* y of x alone, through a plain session (the reference) */
static void solo(poprt_model *m, const float *x, int rows, float *y)
{
    poprt_options *o;
    poprt_session *s;
    poprt_stepio *io;
    char shape[32];
    snprintf(shape, sizeof shape, "%d,16", rows);
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.x", shape), POPRT_OK);
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_OK);
    const int64_t d[2] = {rows, 16};
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x,
                                            sizeof(float) * 16 * (size_t)rows),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof(float) * 10 * (size_t)rows), POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_options_free(o);
}

typedef struct job {
    float x[16 * 8], y[10 * 8];
    int rows;
    poprt_stepio *io;
    poprt_request *req;
    int calls; /* atomic: completions seen by the callback */
    poprt_status seen;
    char msg[256]; /* poprt_last_error() in the callback, when it failed */
} job;

static void on_done(poprt_request *r, poprt_status st, void *user)
{
    (void)r;
    job *j = user;
    j->seen = st;
    if (st)
        snprintf(j->msg, sizeof j->msg, "%s", poprt_last_error());
    __atomic_add_fetch(&j->calls, 1, __ATOMIC_RELAXED);
}

static void job_init(job *j, int rows, int seed, int cols)
{
    memset(j, 0, sizeof *j);
    j->rows = rows;
    fill(j->x, rows, seed);
    const int64_t d[2] = {rows, cols};
    ck_assert_int_eq(poprt_stepio_create(&j->io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(j->io, "x", POPRT_DTYPE_FLOAT, d, 2, j->x,
                                            sizeof(float) * (size_t)(rows * cols)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(j->io, "y", j->y, sizeof j->y), POPRT_OK);
}

/* Requests on a session's workers: each completes once, with the solo
 * run's result. */
START_TEST(session_submit_completes_each_once)
{
    poprt_model *m = load();
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.x", "1,16"), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "async_workers", "2"), POPRT_OK);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_OK);
    enum { N = 32 };
    static job jobs[N];
    for (int i = 0; i < N; i++) {
        job_init(&jobs[i], 1, i, 16);
        ck_assert_int_eq(poprt_session_submit(s, jobs[i].io, on_done, &jobs[i], &jobs[i].req),
                         POPRT_OK);
    }
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(poprt_request_wait(jobs[i].req, -1), POPRT_OK);
        ck_assert_int_eq(poprt_request_done(jobs[i].req), 1);
        ck_assert_int_eq(poprt_request_status(jobs[i].req), POPRT_OK);
        ck_assert_int_eq(jobs[i].calls, 1);
        float want[10];
        solo(m, jobs[i].x, 1, want);
        ck_assert_int_eq(memcmp(want, jobs[i].y, sizeof want), 0);
        poprt_request_free(jobs[i].req);
        poprt_stepio_free(jobs[i].io);
    }
    /* a request whose run fails: its status and message come with it */
    job bad;
    job_init(&bad, 2, 0, 16); /* the session is compiled for 1 row */
    ck_assert_int_eq(poprt_session_submit(s, bad.io, on_done, &bad, &bad.req), POPRT_OK);
    ck_assert_int_eq(poprt_request_wait(bad.req, -1), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "input 'x'"));
    ck_assert_int_eq(bad.calls, 1);
    ck_assert_int_eq(bad.seen, POPRT_STATUS_SHAPE_MISMATCH);
    /* the callback read the request's own message */
    ck_assert_ptr_nonnull(strstr(bad.msg, "input 'x'"));
    poprt_request_free(bad.req);
    poprt_stepio_free(bad.io);
    poprt_session_free(s);
    poprt_options_free(o);
    poprt_model_free(m);
}
END_TEST

/* A callback stepio whose input waits for a gate: holds a replica busy. */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_open, gate_reached;
static float gate_x[16], gate_y[10];

static const void *gate_in(void *user, const char *name, poprt_dtype dt, const int64_t *dims,
                           int rank, int prefetch)
{
    (void)user, (void)name, (void)dt, (void)dims, (void)rank, (void)prefetch;
    pthread_mutex_lock(&gate_mu);
    gate_reached = 1;
    pthread_cond_broadcast(&gate_cv);
    while (!gate_open)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
    return gate_x;
}

static void *gate_out(void *user, const char *name, poprt_dtype dt, const int64_t *dims, int rank)
{
    (void)user, (void)name, (void)dt, (void)dims, (void)rank;
    return gate_y;
}

static poprt_stepio *gate_stepio(void)
{
    poprt_stepio_callbacks cb = {.size = sizeof cb, .in = gate_in, .out = gate_out};
    poprt_stepio *io;
    gate_open = gate_reached = 0;
    ck_assert_int_eq(poprt_stepio_create_callback(&cb, &io), POPRT_OK);
    return io;
}

static void gate_wait_reached(void)
{
    pthread_mutex_lock(&gate_mu);
    while (!gate_reached)
        pthread_cond_wait(&gate_cv, &gate_mu);
    pthread_mutex_unlock(&gate_mu);
}

static void gate_release(void)
{
    pthread_mutex_lock(&gate_mu);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cv);
    pthread_mutex_unlock(&gate_mu);
}

static poprt_runner *runner(poprt_model *m, const char *const *kv)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    for (; kv && kv[0]; kv += 2)
        ck_assert_int_eq(poprt_options_set(o, kv[0], kv[1]), POPRT_OK);
    poprt_runner *r;
    ck_assert_int_eq(poprt_runner_create(m, o, &r), POPRT_OK);
    poprt_options_free(o);
    return r;
}

/* Queue full, cancel, deadline: a replica held busy by a gated request. */
START_TEST(queue_full_cancel_and_deadline)
{
    poprt_model *m = load();
    poprt_runner *r = runner(m, (const char *[]){"input_shape.x", "1,16", "queue_size", "3",
                                                 "replicas", "1", NULL});
    poprt_stepio *g = gate_stepio();
    poprt_request *gr;
    ck_assert_int_eq(poprt_runner_submit(r, g, 0, NULL, NULL, &gr), POPRT_OK);
    gate_wait_reached(); /* the replica is in it: the queue is empty and stays so */
    static job a, b, c, d;
    job_init(&a, 1, 1, 16);
    job_init(&b, 1, 2, 16);
    job_init(&c, 1, 3, 16);
    job_init(&d, 1, 4, 16);
    ck_assert_int_eq(poprt_runner_submit(r, a.io, 0, on_done, &a, &a.req), POPRT_OK);
    ck_assert_int_eq(poprt_runner_submit(r, b.io, 1, on_done, &b, &b.req), POPRT_OK); /* 1 us */
    ck_assert_int_eq(poprt_runner_submit(r, c.io, 0, on_done, &c, &c.req), POPRT_OK);
    ck_assert_int_eq(poprt_runner_submit(r, d.io, 0, on_done, &d, &d.req), POPRT_STATUS_QUEUE_FULL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "queue_size"));
    ck_assert_int_eq(poprt_request_cancel(c.req), POPRT_OK);
    ck_assert_int_eq(poprt_request_wait(c.req, 0), POPRT_STATUS_CANCELLED);
    ck_assert_int_eq(c.calls, 1);
    ck_assert_int_eq(poprt_request_cancel(c.req), POPRT_STATUS_INVALID_ARGUMENT); /* done */
    ck_assert_int_eq(poprt_request_wait(a.req, 1000), POPRT_STATUS_TIMEOUT); /* still queued */
    gate_release();
    ck_assert_int_eq(poprt_request_wait(gr, -1), POPRT_OK);
    ck_assert_int_eq(poprt_request_wait(a.req, -1), POPRT_OK);
    ck_assert_int_eq(poprt_request_wait(b.req, -1), POPRT_STATUS_TIMEOUT); /* its deadline passed */
    ck_assert_int_eq(a.calls + b.calls + c.calls, 3);
    poprt_runner_stats st = {.size = sizeof st};
    ck_assert_int_eq(poprt_runner_stats_get(r, &st), POPRT_OK);
    ck_assert_uint_eq(st.requests, 4);
    ck_assert_uint_eq(st.failed, 2);
    ck_assert_uint_eq(st.queued, 0);
    poprt_request *reqs[] = {gr, a.req, b.req, c.req};
    for (int i = 0; i < 4; i++)
        poprt_request_free(reqs[i]);
    poprt_stepio *ios[] = {g, a.io, b.io, c.io, d.io};
    for (int i = 0; i < 5; i++)
        poprt_stepio_free(ios[i]);
    poprt_runner_free(r);
    poprt_model_free(m);
}
END_TEST

/* Dynamic batching: requests of 1 to 3 rows merged in one run (a long
 * batch timeout lets them gather behind a gated first batch) and split
 * back: each request's rows equal its solo run bit for bit (the MLP's
 * kernels compute each row alone, in the same order, whatever the batch);
 * a request of the wrong width fails alone. */
START_TEST(batching_merges_and_splits)
{
    poprt_model *m = load();
    poprt_runner *r = runner(m, (const char *[]){"max_batch", "8", "batch_timeout_us", "200000",
                                                 "replicas", "1", "cores_per_replica", "1", NULL});
    enum { N = 5 };
    static job jobs[N], bad;
    const int rows[N] = {1, 2, 1, 3, 1};
    for (int i = 0; i < N; i++) {
        job_init(&jobs[i], rows[i], 10 + i, 16);
        ck_assert_int_eq(poprt_runner_submit(r, jobs[i].io, 0, on_done, &jobs[i], &jobs[i].req),
                         POPRT_OK);
        if (i == 1) {
            job_init(&bad, 1, 0, 15); /* x [1, 15]: not the program's width */
            ck_assert_int_eq(poprt_runner_submit(r, bad.io, 0, on_done, &bad, &bad.req), POPRT_OK);
        }
    }
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(poprt_request_wait(jobs[i].req, -1), POPRT_OK);
        float want[10 * 3];
        solo(m, jobs[i].x, rows[i], want);
        ck_assert_int_eq(memcmp(want, jobs[i].y, sizeof(float) * 10 * (size_t)rows[i]), 0);
        poprt_request_free(jobs[i].req);
        poprt_stepio_free(jobs[i].io);
    }
    ck_assert_int_eq(poprt_request_wait(bad.req, -1), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "dim 1 is 15"));
    poprt_runner_stats st = {.size = sizeof st};
    ck_assert_int_eq(poprt_runner_stats_get(r, &st), POPRT_OK);
    ck_assert_uint_eq(st.requests, N + 1);
    ck_assert_uint_eq(st.failed, 1);
    ck_assert(st.mean_batch > 1.0); /* requests did share runs */
    poprt_request_free(bad.req);
    poprt_stepio_free(bad.io);
    poprt_runner_free(r);
    poprt_model_free(m);
}
END_TEST

/* y = model(x) through a plain session: the reference for any model with
 * one float input and one float output. */
static void solo_io(poprt_model *m, const char *in, const int64_t *dims, int rank, const float *x,
                    size_t nx, const char *out, float *y, size_t ny)
{
    poprt_session *s;
    poprt_stepio *io;
    ck_assert_int_eq(poprt_session_create(m, NULL, &s), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, in, POPRT_DTYPE_FLOAT, dims, rank, x, nx * 4), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, out, y, ny * 4), POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    poprt_stepio_free(io);
    poprt_session_free(s);
}

/* Two models behind one runner, requests interleaved: each request runs on
 * the model it names and gets that model's result bit for bit; a request
 * for no such model, or without a name, is refused naming why. */
START_TEST(several_models_one_runner)
{
    poprt_model *models[2];
    models[0] = load();
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/conv.onnx", &models[1]), POPRT_OK);
    const char *names[2] = {"mlp", "conv"};
    poprt_options *own[2], *o;
    ck_assert_int_eq(poprt_options_create(&own[0]), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(own[0], "input_shape.x", "1,16"), POPRT_OK);
    own[1] = NULL;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "replicas", "2"), POPRT_OK);
    poprt_runner *r;
    ck_assert_int_eq(poprt_runner_create_multi(2, (const poprt_model *const *)models, names,
                                               (const poprt_options *const *)own, o, &r),
                     POPRT_OK);
    enum { N = 40 };
    static float x[N][3 * 8 * 8], y[N][10];
    poprt_stepio *io[N];
    poprt_request *q[N];
    const int64_t dm[2] = {1, 16}, dc[4] = {1, 3, 8, 8};
    for (int i = 0; i < N; i++) {
        int conv = i % 3 == 1;
        for (int k = 0; k < 3 * 8 * 8; k++)
            x[i][k] = (float)((k * 5 + i * 3) % 17) / 8.5f - 1.0f;
        ck_assert_int_eq(poprt_stepio_create(&io[i]), POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_input(io[i], "x", POPRT_DTYPE_FLOAT, conv ? dc : dm,
                                                conv ? 4 : 2, x[i], (conv ? 192 : 16) * 4),
                         POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_output(io[i], "y", y[i], (conv ? 5 : 10) * 4), POPRT_OK);
        ck_assert_int_eq(poprt_runner_submit_model(r, names[conv], io[i], 0, NULL, NULL, &q[i]),
                         POPRT_OK);
    }
    for (int i = 0; i < N; i++) {
        int conv = i % 3 == 1;
        ck_assert_int_eq(poprt_request_wait(q[i], -1), POPRT_OK);
        float want[10];
        solo_io(models[conv], "x", conv ? dc : dm, conv ? 4 : 2, x[i], conv ? 192 : 16, "y", want,
                conv ? 5 : 10);
        ck_assert_int_eq(memcmp(want, y[i], (conv ? 5 : 10) * 4), 0);
        poprt_request_free(q[i]);
    }
    ck_assert_int_eq(poprt_runner_submit_model(r, "resnet", io[0], 0, NULL, NULL, NULL),
                     POPRT_STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'resnet'"));
    ck_assert_int_eq(poprt_runner_submit(r, io[0], 0, NULL, NULL, NULL),
                     POPRT_STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "2 models"));
    poprt_runner_stats st = {.size = sizeof st};
    ck_assert_int_eq(poprt_runner_stats_get(r, &st), POPRT_OK);
    ck_assert_uint_eq(st.requests, N);
    poprt_runner_free(r);
    /* bad calls: duplicate names, a model's own bad option named with the model */
    const char *dup[2] = {"m", "m"};
    ck_assert_int_eq(poprt_runner_create_multi(2, (const poprt_model *const *)models, dup, NULL, o,
                                               &r),
                     POPRT_STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "two models named 'm'"));
    ck_assert_int_eq(poprt_options_set(own[0], "input_shape.x", "1,17"), POPRT_OK);
    ck_assert_int_ne(poprt_runner_create_multi(2, (const poprt_model *const *)models, names,
                                               (const poprt_options *const *)own, o, &r),
                     POPRT_OK);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "model 'mlp'"));
    for (int i = 0; i < N; i++)
        poprt_stepio_free(io[i]);
    poprt_options_free(own[0]);
    poprt_options_free(o);
    poprt_model_free(models[0]);
    poprt_model_free(models[1]);
}
END_TEST

/* Host-driven runner ("host_threads"): no library thread; two host threads
 * loop on poprt_runner_work and every request completes on one of them,
 * bit for bit its solo result; an empty queue gives TIMEOUT; a runner with
 * its own threads refuses the call; freeing runs what is still queued on
 * the freeing thread. */
typedef struct host_ctx {
    poprt_runner *r;
    int stop; /* atomic */
    pthread_t ids[2];
} host_ctx;

static host_ctx *host_of_test;
static int completed_off_host; /* atomic: completions on a thread not the host's */

static void on_host_done(poprt_request *q, poprt_status st, void *user)
{
    pthread_t me = pthread_self();
    if (!pthread_equal(me, host_of_test->ids[0]) && !pthread_equal(me, host_of_test->ids[1]))
        __atomic_add_fetch(&completed_off_host, 1, __ATOMIC_RELAXED);
    on_done(q, st, user);
}

static void *host_loop(void *arg)
{
    host_ctx *h = arg;
    while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE)) {
        poprt_status st = poprt_runner_work(h->r, 2000);
        ck_assert(st == POPRT_OK || st == POPRT_STATUS_TIMEOUT);
    }
    return NULL;
}

START_TEST(host_threads_run_the_requests)
{
    poprt_model *m = load();
    poprt_runner *own = runner(m, (const char *[]){"input_shape.x", "1,16", NULL});
    ck_assert_int_eq(poprt_runner_work(own, 0), POPRT_STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "host_threads"));
    poprt_runner_free(own);

    static host_ctx h;
    memset(&h, 0, sizeof h);
    host_of_test = &h;
    h.r = runner(m, (const char *[]){"host_threads", "1", "replicas", "2", "max_batch", "4",
                                     "batch_timeout_us", "500", NULL});
    ck_assert_int_eq(poprt_runner_work(h.r, 1000), POPRT_STATUS_TIMEOUT);
    for (int t = 0; t < 2; t++)
        ck_assert_int_eq(pthread_create(&h.ids[t], NULL, host_loop, &h), 0);
    enum { N = 200 };
    static job jobs[N];
    for (int i = 0; i < N; i++) {
        job_init(&jobs[i], 1 + i % 2, i, 16);
        ck_assert_int_eq(poprt_runner_submit(h.r, jobs[i].io, 0, on_host_done, &jobs[i],
                                             &jobs[i].req),
                         POPRT_OK);
    }
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(poprt_request_wait(jobs[i].req, -1), POPRT_OK);
        ck_assert_int_eq(jobs[i].calls, 1);
        float want[10 * 2];
        solo(m, jobs[i].x, jobs[i].rows, want);
        ck_assert_int_eq(memcmp(want, jobs[i].y, sizeof(float) * 10 * (size_t)jobs[i].rows), 0);
        poprt_request_free(jobs[i].req);
        poprt_stepio_free(jobs[i].io);
    }
    ck_assert_int_eq(completed_off_host, 0);
    __atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < 2; t++)
        pthread_join(h.ids[t], NULL);
    /* queued with no host thread left: freeing runs them here */
    for (int i = 0; i < 8; i++) {
        job_init(&jobs[i], 1, i, 16);
        ck_assert_int_eq(poprt_runner_submit(h.r, jobs[i].io, 0, on_done, &jobs[i], NULL),
                         POPRT_OK);
    }
    poprt_runner_free(h.r);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(jobs[i].calls, 1);
        ck_assert_int_eq(jobs[i].seen, POPRT_OK);
        poprt_stepio_free(jobs[i].io);
    }
    poprt_model_free(m);
}
END_TEST

/* A model whose batch is fixed at 1 (mlp.onnx: x [1, 16]) is batched too:
 * each request's row equals its solo run on that model bit for bit; a
 * model that hard-codes its batch inside is refused, its node named. */
START_TEST(batching_a_fixed_batch_of_one)
{
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/mlp.onnx", &m), POPRT_OK);
    poprt_runner *r = runner(m, (const char *[]){"max_batch", "4", "batch_timeout_us", "200000",
                                                 "replicas", "1", NULL});
    enum { N = 8 };
    static job jobs[N];
    for (int i = 0; i < N; i++) {
        job_init(&jobs[i], 1, 30 + i, 16);
        ck_assert_int_eq(poprt_runner_submit(r, jobs[i].io, 0, on_done, &jobs[i], &jobs[i].req),
                         POPRT_OK);
    }
    const int64_t d[2] = {1, 16};
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(poprt_request_wait(jobs[i].req, -1), POPRT_OK);
        float want[10];
        solo_io(m, "x", d, 2, jobs[i].x, 16, "y", want, 10);
        ck_assert_int_eq(memcmp(want, jobs[i].y, sizeof want), 0);
        poprt_request_free(jobs[i].req);
        poprt_stepio_free(jobs[i].io);
    }
    poprt_runner_stats st = {.size = sizeof st};
    ck_assert_int_eq(poprt_runner_stats_get(r, &st), POPRT_OK);
    ck_assert(st.mean_batch > 1.0);
    poprt_runner_free(r);
    poprt_model_free(m);

    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/reshape_batch1.onnx", &m), POPRT_OK);
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "max_batch", "4"), POPRT_OK);
    ck_assert_int_ne(poprt_runner_create(m, o, &r), POPRT_OK);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "batch fixed at 1"));
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'flatten_fixed'"));
    /* without batching it runs as it is */
    ck_assert_int_eq(poprt_options_set(o, "max_batch", "1"), POPRT_OK);
    ck_assert_int_eq(poprt_runner_create(m, o, &r), POPRT_OK);
    poprt_runner_free(r);
    poprt_options_free(o);
    poprt_model_free(m);
}
END_TEST

/* Freeing a runner with requests queued completes every one of them. */
START_TEST(free_drains_the_queue)
{
    poprt_model *m = load();
    poprt_runner *r = runner(m, (const char *[]){"input_shape.x", "1,16", NULL});
    enum { N = 64 };
    static job jobs[N];
    for (int i = 0; i < N; i++) {
        job_init(&jobs[i], 1, i, 16);
        ck_assert_int_eq(poprt_runner_submit(r, jobs[i].io, 0, on_done, &jobs[i], NULL), POPRT_OK);
    }
    poprt_runner_free(r);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(jobs[i].calls, 1);
        ck_assert_int_eq(jobs[i].seen, POPRT_OK);
        poprt_stepio_free(jobs[i].io);
    }
    poprt_model_free(m);
}
END_TEST

/* 8 threads submitting; every request id completes exactly once, OK, with
 * its own result. */
typedef struct stress {
    poprt_runner *r;
    int thread;
    unsigned *seen; /* per request id: completions (atomic) */
} stress;

static void on_stress(poprt_request *q, poprt_status st, void *user)
{
    (void)q;
    unsigned *slot = user;
    __atomic_add_fetch(slot, st == POPRT_OK ? 1u : 1000u, __ATOMIC_RELAXED);
}

static void *stress_main(void *arg)
{
    stress *s = arg;
    float x[16], y[10];
    const int64_t d[2] = {1, 16};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    fill(x, 1, s->thread);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof y), POPRT_OK);
    for (int i = 0; i < STRESS_REQUESTS; i++) {
        unsigned *slot = &s->seen[s->thread * STRESS_REQUESTS + i];
        poprt_request *q;
        poprt_status st;
        /* one stepio per thread: one request of it in flight at a time */
        while ((st = poprt_runner_submit(s->r, io, 0, on_stress, slot, &q)) ==
               POPRT_STATUS_QUEUE_FULL)
            ;
        ck_assert_int_eq(st, POPRT_OK);
        ck_assert_int_eq(poprt_request_wait(q, -1), POPRT_OK);
        poprt_request_free(q);
    }
    poprt_stepio_free(io);
    return NULL;
}

START_TEST(stress_no_request_lost_or_doubled)
{
    poprt_model *m = load();
    poprt_runner *r = runner(m, (const char *[]){"max_batch", "8", "batch_timeout_us", "50",
                                                 "replicas", "2", "cores_per_replica", "1",
                                                 "queue_size", "16", NULL});
    enum { T = 8 };
    unsigned *seen = calloc((size_t)T * STRESS_REQUESTS, sizeof *seen);
    ck_assert_ptr_nonnull(seen);
    stress s[T];
    pthread_t th[T];
    for (int t = 0; t < T; t++) {
        s[t] = (stress){r, t, seen};
        ck_assert_int_eq(pthread_create(&th[t], NULL, stress_main, &s[t]), 0);
    }
    for (int t = 0; t < T; t++)
        ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    for (int i = 0; i < T * STRESS_REQUESTS; i++)
        ck_assert_msg(seen[i] == 1, "request %d completed %u times", i, seen[i]);
    poprt_runner_stats st = {.size = sizeof st};
    ck_assert_int_eq(poprt_runner_stats_get(r, &st), POPRT_OK);
    ck_assert_uint_eq(st.requests, (uint64_t)T * STRESS_REQUESTS);
    ck_assert_uint_eq(st.failed, 0);
    free(seen);
    poprt_runner_free(r);
    poprt_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("serving");
    TCase *tc = tcase_create("serving");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, session_submit_completes_each_once);
    tcase_add_test(tc, queue_full_cancel_and_deadline);
    tcase_add_test(tc, batching_merges_and_splits);
    tcase_add_test(tc, free_drains_the_queue);
    tcase_add_test(tc, several_models_one_runner);
    tcase_add_test(tc, host_threads_run_the_requests);
    tcase_add_test(tc, batching_a_fixed_batch_of_one);
    tcase_add_test(tc, stress_no_request_lost_or_doubled);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
