/* Unit tests: sessions and stepios (anchors, batches_per_step, callbacks,
 * concurrent runs, error paths). Model: y = Relu(x + c), c = {-1, 0, 1}. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builder.h"

static void expect_relu(const float *x, const float *y, int n)
{
    const float c[3] = {-1, 0, 1};
    for (int i = 0; i < n; i++) {
        float s = x[i] + c[i % 3];
        ck_assert_float_eq(y[i], s > 0 ? s : 0);
    }
}

static poprt_session *make_session(poprt_model *m, const char *const *kv)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    for (; kv && kv[0]; kv += 2)
        ck_assert_int_eq(poprt_options_set(o, kv[0], kv[1]), POPRT_OK);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_OK);
    poprt_options_free(o);
    return s;
}

START_TEST(single_run_matches_hand_values)
{
    poprt_model *m = tb_add_relu(0);
    poprt_session *s = make_session(m, NULL);
    poprt_model_free(m); /* the session keeps what it needs */
    float x[6] = {0.5f, -2, 3, 1, 0.25f, -4}, y[6] = {0};
    int64_t d[2] = {2, 3};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof y), POPRT_OK);
    for (int rep = 0; rep < 3; rep++) {
        memset(y, 0xff, sizeof y);
        ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
        expect_relu(x, y, 6);
    }
    poprt_dtype dt;
    int rank;
    const int64_t *dims;
    const void *data;
    size_t nb;
    ck_assert_int_eq(poprt_stepio_output(io, "y", &dt, &dims, &rank, &data, &nb), POPRT_OK);
    ck_assert_int_eq(dt, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(rank, 2);
    ck_assert_int_eq(dims[0], 2);
    ck_assert_ptr_eq(data, y);
    ck_assert_uint_eq(nb, sizeof y);
    ck_assert_uint_gt(poprt_session_arena_bytes(s), 0);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

static void run_bps(const char *anchor, int bps, float *x, float *out, size_t out_bytes,
                    int64_t want_dim0, int want_rank)
{
    poprt_model *m = tb_add_relu(0);
    char b[16];
    snprintf(b, sizeof b, "%d", bps);
    poprt_session *s = make_session(m, (const char *const[]){"batches_per_step", b, "anchor.y", anchor, NULL});
    poprt_model_free(m);
    int64_t d[3] = {bps, 2, 3};
    poprt_stepio *io;
    poprt_stepio_create(&io);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 3, x, sizeof(float) * 6 * (size_t)bps), POPRT_OK);
    poprt_stepio_set_output(io, "y", out, out_bytes);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    int rank;
    const int64_t *dims;
    ck_assert_int_eq(poprt_stepio_output(io, "y", NULL, &dims, &rank, NULL, NULL), POPRT_OK);
    ck_assert_int_eq(rank, want_rank);
    ck_assert_int_eq(dims[0], want_dim0);
    poprt_stepio_free(io);
    poprt_session_free(s);
}

START_TEST(anchors_all_final_everyn_sum)
{
    enum { B = 4 };
    float x[B * 6];
    for (int i = 0; i < B * 6; i++)
        x[i] = (float)(i % 7) - 2.5f;
    float all[B * 6], fin[6], every[2 * 6], sum[6];
    run_bps("All", B, x, all, sizeof all, B, 3);
    expect_relu(x, all, B * 6);
    run_bps("Final", B, x, fin, sizeof fin, 2, 2);
    expect_relu(x + 3 * 6, fin, 6);
    run_bps("EveryN:2", B, x, every, sizeof every, 2, 3);
    expect_relu(x + 1 * 6, every, 6);     /* batches 1 and 3 */
    expect_relu(x + 3 * 6, every + 6, 6);
    run_bps("Sum", B, x, sum, sizeof sum, 2, 2);
    float ref[B * 6];
    expect_relu(x, all, B * 6);
    memcpy(ref, all, sizeof ref);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq_tol(sum[i], ref[i] + ref[6 + i] + ref[12 + i] + ref[18 + i], 1e-6);
}
END_TEST

typedef struct {
    float x[6], y[6];
    int ins, in_done, outs, out_done;
} cb_state;

static const void *cb_in(void *u, const char *name, poprt_dtype dt, const int64_t *dims, int rank, int prefetch)
{
    cb_state *s = u;
    ck_assert_str_eq(name, "x");
    ck_assert_int_eq(dt, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(rank, 2);
    ck_assert_int_eq(dims[1], 3);
    ck_assert_int_eq(prefetch, 0);
    s->ins++;
    return s->x;
}
static void cb_in_complete(void *u, const char *name) { (void)name; ((cb_state *)u)->in_done++; }
static void *cb_out(void *u, const char *name, poprt_dtype dt, const int64_t *dims, int rank)
{
    (void)dt; (void)dims; (void)rank;
    ck_assert_str_eq(name, "y");
    ((cb_state *)u)->outs++;
    return ((cb_state *)u)->y;
}
static void cb_out_complete(void *u, const char *name) { (void)name; ((cb_state *)u)->out_done++; }

/* Found by fuzz_model: a graph output declared [1, 4] after an input of
 * symbolic batch got a planned buffer of 4 floats, and a batch of 2 made
 * Softmax write 8 into it. The run now checks the inputs bound give the
 * planned shape. */
START_TEST(declared_output_shape_is_checked_at_run_time)
{
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {-1, 4}, yd[2] = {1, 4};
    poprt__tensor *x = tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    x->type.dims[0].param = "N";
    tb_node(m, "Relu", 1, (const char *[]){"x"}, 1, (const char *[]){"r"});
    poprt__node *sm = tb_node(m, "Softmax", 1, (const char *[]){"r"}, 1, (const char *[]){"y"});
    sm->name = "softmax";
    tb_output(m, "y");
    poprt__tensor *y = m->graph->outputs.items[0];
    poprt__type_set_tensor(&m->arena, &y->type, POPRT_DTYPE_FLOAT, 2, yd);
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(model, NULL, &s), POPRT_OK);
    float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8];
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    int64_t one[2] = {1, 4}, two[2] = {2, 4};
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, one, 2, in, 4 * sizeof(float));
    poprt_stepio_set_output(io, "y", out, sizeof out);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    ck_assert(fabsf(out[0] + out[1] + out[2] + out[3] - 1) < 1e-6f);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, two, 2, in, sizeof in);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "node 'softmax'"));
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "output 'y'"));
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(model);
}
END_TEST

START_TEST(callback_stepio_calls_in_and_out_per_batch)
{
    poprt_model *m = tb_add_relu(0);
    poprt_session *s = make_session(m, (const char *const[]){"batches_per_step", "3", NULL});
    poprt_model_free(m);
    cb_state st = {{1, -1, 0.5f, -3, 2, 0}, {0}, 0, 0, 0, 0};
    poprt_stepio_callbacks cb = {sizeof cb, cb_in, cb_in_complete, cb_out, cb_out_complete, &st};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create_callback(&cb, &io), POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    ck_assert_int_eq(st.ins, 3);
    ck_assert_int_eq(st.in_done, 3);
    ck_assert_int_eq(st.outs, 3);
    ck_assert_int_eq(st.out_done, 3);
    expect_relu(st.x, st.y, 6);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

static const void *cb_in_null(void *u, const char *n, poprt_dtype d, const int64_t *dims, int r, int p)
{
    (void)u; (void)n; (void)d; (void)dims; (void)r; (void)p;
    return NULL;
}

START_TEST(callback_null_cancels)
{
    poprt_model *m = tb_add_relu(0);
    poprt_session *s = make_session(m, NULL);
    poprt_model_free(m);
    cb_state st = {0};
    poprt_stepio_callbacks cb = {sizeof cb, cb_in_null, NULL, cb_out, NULL, &st};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create_callback(&cb, &io), POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_STATUS_CANCELLED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'x'"));
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

typedef struct {
    poprt_session *s;
    int seed, ok;
} th_arg;

static void *th_run(void *p)
{
    th_arg *a = p;
    float x[6], y[6];
    int64_t d[2] = {2, 3};
    poprt_stepio *io;
    a->ok = poprt_stepio_create(&io) == POPRT_OK;
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x);
    poprt_stepio_set_output(io, "y", y, sizeof y);
    const float c[3] = {-1, 0, 1};
    for (int it = 0; it < 200 && a->ok; it++) {
        for (int i = 0; i < 6; i++)
            x[i] = (float)((a->seed * 31 + it * 7 + i) % 11) - 5;
        if (poprt_session_run(a->s, io) != POPRT_OK)
            a->ok = 0;
        for (int i = 0; i < 6; i++) {
            float s = x[i] + c[i % 3];
            if (y[i] != (s > 0 ? s : 0))
                a->ok = 0;
        }
    }
    poprt_stepio_free(io);
    return NULL;
}

START_TEST(concurrent_runs_with_own_stepios)
{
    poprt_model *m = tb_add_relu(0);
    poprt_session *s = make_session(m, (const char *const[]){"threads", "2", NULL});
    poprt_model_free(m);
    pthread_t th[4];
    th_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (th_arg){s, i, 0};
        pthread_create(&th[i], NULL, th_run, &a[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(a[i].ok, 1);
    }
    poprt_session_free(s);
}
END_TEST

START_TEST(error_paths_name_the_culprit)
{
    poprt_model *m = tb_add_relu(0);
    poprt_options *o;
    poprt_session *s = NULL;
    poprt_options_create(&o);
    ck_assert_int_eq(poprt_options_set(o, "thread", "2"), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'thread'"));
    ck_assert_int_eq(poprt_options_set(o, "threads", "zero"), POPRT_STATUS_INVALID_OPTION);
    ck_assert_int_eq(poprt_options_set(o, "anchors", "Sometimes"), POPRT_STATUS_INVALID_OPTION);
    ck_assert_int_eq(poprt_options_set(o, "anchor.nope", "All"), POPRT_OK);
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "nope"));
    ck_assert_ptr_null(s);
    poprt_options_free(o);
    poprt_options_create(&o);
    poprt_options_set(o, "batches_per_step", "3");
    poprt_options_set(o, "anchor.y", "EveryN:2");
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_STATUS_INVALID_OPTION);
    poprt_options_free(o);

    s = make_session(m, NULL);
    float x[6] = {0}, y[6];
    int64_t d[2] = {2, 3}, bad[2] = {3, 3};
    poprt_stepio *io;
    poprt_stepio_create(&io);
    poprt_stepio_set_output(io, "y", y, sizeof y);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_STATUS_NOT_FOUND);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'x'"));
    int32_t xi[6] = {0};
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_INT32, d, 2, xi, sizeof xi);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "dtype"));
    float x9[9] = {0};
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, bad, 2, x9, sizeof x9);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, 8), POPRT_STATUS_SHAPE_MISMATCH);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x);
    poprt_stepio_set_output(io, "y", y, 8);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'y'"));
    ck_assert_int_eq(poprt_session_run(NULL, io), POPRT_STATUS_INVALID_ARGUMENT);
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(m);
}
END_TEST

START_TEST(symbolic_input_bound_by_option_or_at_run)
{
    poprt_model *m = tb_add_relu(1);
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_input(m, 0, &info), POPRT_OK);
    ck_assert_int_eq(info.dims[0], -1);
    ck_assert_str_eq(info.dim_params[0], "N");
    poprt_session *s = make_session(m, (const char *const[]){"input_shape.x", "4,3", NULL});
    ck_assert_int_eq(poprt_session_input(s, 0, &info), POPRT_OK);
    ck_assert_int_eq(info.dims[0], 4);
    float x[12], y[12];
    for (int i = 0; i < 12; i++)
        x[i] = (float)i - 6;
    int64_t d[2] = {4, 3};
    poprt_stepio *io;
    poprt_stepio_create(&io);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x);
    poprt_stepio_set_output(io, "y", y, sizeof y);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    expect_relu(x, y, 12);
    poprt_session_free(s);
    /* without the option the shape comes from the bound input at run time */
    s = make_session(m, NULL);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    expect_relu(x, y, 12);
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(m);
}
END_TEST

/* Neg -> Relu -> Reshape -> Sigmoid -> Flatten: the elementwise chain works
 * in place and the reshapes are views, so the arena holds one buffer. */
START_TEST(views_and_in_place_share_one_buffer)
{
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {4, 6}, sd[1] = {3}, shape[3] = {2, 3, 4};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "shape", POPRT_DTYPE_INT64, 1, sd, shape);
    tb_node(m, "Neg", 1, (const char *[]){"x"}, 1, (const char *[]){"a"});
    tb_node(m, "Relu", 1, (const char *[]){"a"}, 1, (const char *[]){"b"});
    tb_node(m, "Reshape", 2, (const char *[]){"b", "shape"}, 1, (const char *[]){"c"});
    tb_node(m, "Sigmoid", 1, (const char *[]){"c"}, 1, (const char *[]){"d"});
    tb_node(m, "Flatten", 1, (const char *[]){"d"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    poprt_session *s = make_session(model, NULL);
    ck_assert_uint_eq(poprt_session_arena_bytes(s), 128); /* 24 floats, 64-byte rounded */
    float x[24], y[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)i / 4 - 3;
    int64_t d[2] = {4, 6};
    poprt_stepio *io;
    poprt_stepio_create(&io);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x);
    poprt_stepio_set_output(io, "y", y, sizeof y);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    for (int i = 0; i < 24; i++) {
        float r = -x[i] > 0 ? -x[i] : 0;
        ck_assert_float_eq_tol(y[i], 1.0f / (1.0f + expf(-r)), 1e-6);
    }
    int rank;
    const int64_t *dims;
    poprt_stepio_output(io, "y", NULL, &dims, &rank, NULL, NULL);
    ck_assert_int_eq(rank, 2);
    ck_assert_int_eq(dims[0], 2);
    ck_assert_int_eq(dims[1], 12);
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(model);
}
END_TEST

static int host_calls;
static void host_pf(void *user, size_t n, void (*task)(void *, size_t), void *ctx)
{
    /* run the tasks backwards: results must not depend on the order */
    __atomic_add_fetch((int *)user, 1, __ATOMIC_RELAXED);
    for (size_t i = n; i-- > 0;)
        task(ctx, i);
}

START_TEST(host_parallel_for_runs_the_work)
{
    /* an elementwise op big enough to be split */
    poprt__model *m = tb_model(17);
    int64_t ad[2] = {512, 512};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, ad);
    tb_node(m, "Tanh", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    static float x[512 * 512], y1[512 * 512], y2[512 * 512];
    for (int i = 0; i < 512 * 512; i++)
        x[i] = (float)(i % 13) / 13 - 0.5f;
    int64_t d[2] = {512, 512};
    float *ys[2] = {y1, y2};
    for (int k = 0; k < 2; k++) {
        poprt_options *o;
        poprt_options_create(&o);
        if (k)
            ck_assert_int_eq(poprt_options_set_parallel_for(o, host_pf, &host_calls, 4), POPRT_OK);
        ck_assert_int_eq(poprt_options_set_parallel_for(o, host_pf, NULL, 0) == POPRT_OK, 0);
        poprt_session *s;
        ck_assert_int_eq(poprt_session_create(model, o, &s), POPRT_OK);
        poprt_stepio *io;
        poprt_stepio_create(&io);
        poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x);
        poprt_stepio_set_output(io, "y", ys[k], sizeof y1);
        ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
        poprt_stepio_free(io);
        poprt_session_free(s);
        poprt_options_free(o);
    }
    ck_assert_int_gt(host_calls, 0);
    ck_assert_int_eq(memcmp(y1, y2, sizeof y1), 0); /* same bits as one thread */
    poprt_model_free(model);
}
END_TEST

/* The thread pool: over many back-to-back jobs of varied sizes (short gaps
 * exercise the polling hand-over, a pause the sleep path, run starts and
 * ends the alert and rest paths), every index is covered exactly once, none
 * after its job returned, an idle pool uses no CPU time, and jobs issued
 * from several threads at once (one runs, the others run inline) do the
 * same. */
typedef struct pool_job {
    int *hits;
    int64_t n;
    int job;
} pool_job;

static void pool_job_fn(void *ctx, int64_t b, int64_t e)
{
    const pool_job *j = ctx;
    for (int64_t i = b; i < e; i++)
        __atomic_add_fetch(&j->hits[i], 1, __ATOMIC_RELAXED);
}

typedef struct pool_user {
    poprt__pool *p;
    int failures;
} pool_user;

static void *pool_user_fn(void *arg)
{
    pool_user *u = arg;
    int hits[300];
    for (int job = 0; job < 300; job++) {
        const int64_t n = 1 + job % 300;
        memset(hits, 0, sizeof hits);
        pool_job j = {hits, n, job};
        if (!poprt__pool_run(u->p, n, 1 + job % 7, pool_job_fn, &j))
            pool_job_fn(&j, 0, n);
        for (int64_t i = 0; i < n; i++)
            u->failures += __atomic_load_n(&hits[i], __ATOMIC_RELAXED) != 1;
    }
    return NULL;
}

/* A chunk that a worker runs for 3 ms: the caller's poll (about 100 us)
 * ends first and it sleeps until the worker's wake-up (a lost wake-up
 * would hang the test). The caller's own chunk waits (up to 200 ms) for a
 * worker to start the other one, so that it cannot take both. */
typedef struct slow_job {
    pthread_t caller;
    int hits[2];
    int slow_runs;
} slow_job;

static void slow_job_fn(void *ctx, int64_t b, int64_t e)
{
    slow_job *j = ctx;
    for (int64_t i = b; i < e; i++) {
        if (!pthread_equal(pthread_self(), j->caller)) {
            __atomic_store_n(&j->slow_runs, 1, __ATOMIC_RELEASE);
            struct timespec ts = {0, 3000000};
            nanosleep(&ts, NULL);
        } else
            for (int k = 0; k < 4000 && !__atomic_load_n(&j->slow_runs, __ATOMIC_ACQUIRE); k++) {
                struct timespec ts = {0, 50000};
                nanosleep(&ts, NULL);
            }
        __atomic_add_fetch(&j->hits[i], 1, __ATOMIC_RELAXED);
    }
}

START_TEST(thread_pool_covers_each_index_once)
{
    for (int threads = 2; threads <= 4; threads += 2) {
        poprt__pool *p;
        ck_assert_int_eq(poprt__pool_create(threads, &p), POPRT_OK);
        static int hits[5000];
        for (int job = 0; job < 3000; job++) {
            const int64_t n = 1 + (job * 7919) % 5000;
            memset(hits, 0, sizeof(int) * (size_t)n);
            pool_job j = {hits, n, job};
            ck_assert_int_eq(poprt__pool_run(p, n, 1 + job % 13, pool_job_fn, &j), 1);
            int64_t bad = 0;
            for (int64_t i = 0; i < n; i++)
                bad += __atomic_load_n(&hits[i], __ATOMIC_RELAXED) != 1;
            ck_assert_msg(bad == 0, "threads %d job %d: %lld indices not run once", threads, job,
                          (long long)bad);
            if (job % 500 == 0) {
                struct timespec ts = {0, 2000000}; /* let the workers fall asleep */
                nanosleep(&ts, NULL);
            }
            if (job % 500 == 250) {
                /* a run's start wakes them (next job while they poll, or
                 * after they fell asleep again), its end sends them back */
                poprt__pool_alert(p);
                if (job % 1000 == 250) {
                    struct timespec ts = {0, 2000000};
                    nanosleep(&ts, NULL);
                }
            }
            if (job % 500 == 400)
                poprt__pool_rest(p);
        }
        /* no spinning between runs: after a run's start and end, idle
         * workers use (next to) no CPU time; a spinning worker would use
         * the whole 50 ms */
        poprt__pool_alert(p);
        poprt__pool_rest(p);
        struct timespec c0, c1, nap = {0, 50000000};
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
        nanosleep(&nap, NULL);
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
        const double cpu_ms = (double)(c1.tv_sec - c0.tv_sec) * 1e3 +
                              (double)(c1.tv_nsec - c0.tv_nsec) / 1e6;
        ck_assert_msg(cpu_ms < 25.0, "threads %d: idle pool used %.1f ms of CPU in 50 ms",
                      threads, cpu_ms);
        int slow = 0;
        for (int rep = 0; rep < 20; rep++) {
            slow_job sj = {pthread_self(), {0, 0}, 0};
            ck_assert_int_eq(poprt__pool_run(p, 2, 1, slow_job_fn, &sj), 1);
            ck_assert_int_eq(sj.hits[0], 1);
            ck_assert_int_eq(sj.hits[1], 1);
            slow += sj.slow_runs;
        }
        ck_assert_msg(slow > 0, "threads %d: no worker ran a chunk of 20 jobs", threads);
        /* (each job: a worker's 3 ms chunk, the caller asleep meanwhile) */
        pool_user us[3] = {{p, 0}, {p, 0}, {p, 0}};
        pthread_t th[3];
        for (int i = 0; i < 3; i++)
            ck_assert_int_eq(pthread_create(&th[i], NULL, pool_user_fn, &us[i]), 0);
        for (int i = 0; i < 3; i++) {
            pthread_join(th[i], NULL);
            ck_assert_int_eq(us[i].failures, 0);
        }
        poprt__pool_free(p);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("runtime");
    TCase *tc = tcase_create("runtime");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, single_run_matches_hand_values);
    tcase_add_test(tc, declared_output_shape_is_checked_at_run_time);
    tcase_add_test(tc, anchors_all_final_everyn_sum);
    tcase_add_test(tc, callback_stepio_calls_in_and_out_per_batch);
    tcase_add_test(tc, callback_null_cancels);
    tcase_add_test(tc, concurrent_runs_with_own_stepios);
    tcase_add_test(tc, error_paths_name_the_culprit);
    tcase_add_test(tc, symbolic_input_bound_by_option_or_at_run);
    tcase_add_test(tc, views_and_in_place_share_one_buffer);
    tcase_add_test(tc, host_parallel_for_runs_the_work);
    tcase_add_test(tc, thread_pool_covers_each_index_once);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
