/* Unit tests: pipelined shards (docs/runtime.md "Pipelined stages"). Models
 * annotated by the manual_sharding pass run through a runner whose stages
 * each have their own thread and cores; every result must be the bits of
 * the unsharded run (a plain session on the same model: the same kernels on
 * the same shapes), for 2, 3 and 4 stages, under concurrent submits, with
 * failing requests and a runner freed with requests in flight. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "poprt/poprt.h"
#include "builder.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRESS_REQUESTS 50 /* per thread: the sanitizers run ~10x slower */
#else
#define STRESS_REQUESTS 200
#endif

static char tmpdir[] = "/tmp/poprt_pipeline_XXXXXX"; /* made by main */

static const char *write_config(const char *json)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/stages.json", tmpdir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(json, f);
    fclose(f);
    return path;
}

/* tests/data/<file> annotated by manual_sharding with `json` (NULL: as is). */
static poprt_model *annotated(const char *file, const char *json)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", POPRT_TEST_DATA, file);
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(path, &m), POPRT_OK);
    if (!json)
        return m;
    char args[600];
    snprintf(args, sizeof args, "config=%s", write_config(json));
    poprt_pass_manager *pm;
    ck_assert_int_eq(poprt_pass_manager_create(&pm), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_add(pm, "manual_sharding", args), POPRT_OK);
    ck_assert_msg(poprt_pass_manager_run(pm, m) == POPRT_OK, "%s", poprt_last_error());
    poprt_pass_manager_free(pm);
    return m;
}

/* The two test models: their input and output. */
typedef struct shape {
    const char *file;
    int64_t in_dims[4];
    int in_rank;
    size_t in_n, out_n; /* floats */
    float tol;          /* largest difference to the unsharded run; 0: bit-equal */
} shape;
/* The MLP's stages run the unsharded run's kernels on the same shapes:
 * bit-equal. The CNN's too on AVX2 (POPRT_ISA=avx2 gives bit-equal
 * results); on AVX-512 the unsharded program keeps the activations between
 * convolutions in NCHW16c (docs/compiler.md) where a tensor crossing stages
 * is a graph output, in NCHW, read by the other convolution variant:
 * within 1e-5 (6e-8 measured on outputs near 0.3). */
static const shape MLP = {"mlp.onnx", {1, 16}, 2, 16, 10, 0};
static const shape CNN = {"conv_blocks.onnx", {1, 3, 20, 20}, 4, 3 * 20 * 20, 16, 1e-5f};

static void fill(float *x, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(((int)i * 7 + seed * 13) % 23) / 11.5f - 1.0f;
}

static poprt_stepio *stepio(const shape *sh, const float *x, float *y)
{
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, sh->in_dims, sh->in_rank, x,
                                            sizeof(float) * sh->in_n),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof(float) * sh->out_n), POPRT_OK);
    return io;
}

/* y of x through a plain session: the unsharded run */
static void unsharded(poprt_model *m, const shape *sh, const float *x, float *y)
{
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(m, NULL, &s), POPRT_OK);
    poprt_stepio *io = stepio(sh, x, y);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    poprt_stepio_free(io);
    poprt_session_free(s);
}

/* The runner's log line naming its stages. */
static char stages_line[256];
static void on_log(poprt_log_level level, const char *message, void *user)
{
    (void)level, (void)user;
    if (strstr(message, "pipeline stages"))
        snprintf(stages_line, sizeof stages_line, "%s", message);
}

/* A runner pipelining m in `stages` stages; replicas: NULL for one. */
static poprt_runner *pipelined(poprt_model *m, int stages, const char *cores_per_stage,
                               const char *replicas)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "pipeline", "1"), POPRT_OK);
    if (cores_per_stage)
        ck_assert_int_eq(poprt_options_set(o, "cores_per_stage", cores_per_stage), POPRT_OK);
    if (replicas)
        ck_assert_int_eq(poprt_options_set(o, "replicas", replicas), POPRT_OK);
    poprt_runner *r;
    stages_line[0] = 0;
    poprt_set_log_callback(on_log, NULL, POPRT_LOG_INFO);
    ck_assert_msg(poprt_runner_create(m, o, &r) == POPRT_OK, "%s", poprt_last_error());
    poprt_set_log_callback(NULL, NULL, POPRT_LOG_INFO);
    char want[64];
    snprintf(want, sizeof want, "runner: %d pipeline stages", stages);
    ck_assert_msg(strstr(stages_line, want), "'%s', not %d stages", stages_line, stages);
    poprt_options_free(o);
    return r;
}

typedef struct job {
    float x[3 * 20 * 20], y[16], want[16];
    poprt_stepio *io;
    poprt_request *req;
    int calls; /* atomic: completions told */
} job;

/* user: the int counting the request's completions */
static void count_call(poprt_request *r, poprt_status st, void *user)
{
    (void)r, (void)st;
    __atomic_add_fetch((int *)user, 1, __ATOMIC_RELAXED);
}

/* N requests in flight at once through the pipeline of `json` (`stages`
 * stages): each completes once with the unsharded run's result. */
static void check_equal(const shape *sh, const char *json, int stages, const char *cores_per_stage)
{
    poprt_model *m = annotated(sh->file, json);
    enum { N = 24 };
    static job jobs[N];
    for (int i = 0; i < N; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        fill(jobs[i].x, sh->in_n, i);
        unsharded(m, sh, jobs[i].x, jobs[i].want);
        ck_assert(jobs[i].want[0] != 0.0f); /* written: the comparison means something */
    }
    poprt_runner *r = pipelined(m, stages, cores_per_stage, NULL);
    for (int i = 0; i < N; i++) {
        jobs[i].io = stepio(sh, jobs[i].x, jobs[i].y);
        ck_assert_int_eq(
            poprt_runner_submit(r, jobs[i].io, 0, count_call, &jobs[i].calls, &jobs[i].req),
            POPRT_OK);
    }
    for (int i = 0; i < N; i++) {
        ck_assert_msg(poprt_request_wait(jobs[i].req, -1) == POPRT_OK, "%s", poprt_last_error());
        ck_assert_int_eq(jobs[i].calls, 1);
        float worst = 0;
        for (size_t k = 0; k < sh->out_n; k++) {
            const float d = fabsf(jobs[i].want[k] - jobs[i].y[k]);
            worst = d > worst ? d : worst;
        }
        if (sh->tol == 0)
            ck_assert_msg(memcmp(jobs[i].want, jobs[i].y, sizeof(float) * sh->out_n) == 0,
                          "%s %s: request %d differs from the unsharded run by %g", sh->file, json,
                          i, (double)worst);
        else
            ck_assert_msg(worst <= sh->tol,
                          "%s %s: request %d differs from the unsharded run by %g", sh->file, json,
                          i, (double)worst);
        poprt_request_free(jobs[i].req);
        poprt_stepio_free(jobs[i].io);
    }
    poprt_runner_stats st = {.size = sizeof st};
    ck_assert_int_eq(poprt_runner_stats_get(r, &st), POPRT_OK);
    ck_assert_uint_eq(st.requests, N);
    ck_assert_uint_eq(st.failed, 0);
    poprt_runner_free(r);
    poprt_model_free(m);
}

START_TEST(two_stages_equal_unsharded)
{
    check_equal(&MLP, "{\"pipelining\": {\"fc2\": 1}}", 2, NULL);
    check_equal(&CNN, "{\"pipelining\": {\"conv3x3\": 1}}", 2, "1");
    /* without "pipelining", the stages are the shards */
    check_equal(&MLP, "{\"sharding\": {\"relu1\": 1}}", 2, NULL);
}
END_TEST

START_TEST(three_stages_equal_unsharded)
{
    check_equal(&MLP, "{\"pipelining\": {\"relu1\": 1, \"softmax\": 2}}", 3, "1");
    /* r1 (stage 1) is read by conv3x3 there and by residual in stage 2 */
    check_equal(&CNN, "{\"pipelining\": {\"expand\": 1, \"residual\": 2}}", 3, NULL);
    /* stage numbers without a node are skipped */
    check_equal(&MLP, "{\"pipelining\": {\"relu1\": 2, \"softmax\": 5}}", 3, NULL);
}
END_TEST

START_TEST(four_stages_forward_to_several)
{
    /* r1 is made in stage 1 and read by stages 2 and 3; x by stage 0 only */
    check_equal(&CNN, "{\"pipelining\": {\"expand\": 1, \"conv3x3\": 2, \"residual\": 3}}", 4, "1");
}
END_TEST

/* Concurrent submits: 4 threads x STRESS_REQUESTS on a runner of two
 * replicas, each pipelining 3 stages; each request completes once (its
 * callback counts) with the unsharded bits. */
typedef struct sjob {
    float x[16], y[10];
    poprt_stepio *io;
    poprt_request *req;
    int calls; /* atomic */
} sjob;

static poprt_runner *stress_runner;
static float stress_want[16][10];

static void *submitter(void *arg)
{
    (void)arg;
    sjob *jobs = calloc(STRESS_REQUESTS, sizeof *jobs);
    ck_assert_ptr_nonnull(jobs);
    for (int i = 0; i < STRESS_REQUESTS; i++) {
        fill(jobs[i].x, 16, i % 16);
        jobs[i].io = stepio(&MLP, jobs[i].x, jobs[i].y);
        ck_assert_int_eq(poprt_runner_submit(stress_runner, jobs[i].io, 0, count_call,
                                             &jobs[i].calls, &jobs[i].req),
                         POPRT_OK);
    }
    for (int i = 0; i < STRESS_REQUESTS; i++) {
        ck_assert_int_eq(poprt_request_wait(jobs[i].req, -1), POPRT_OK);
        ck_assert_int_eq(jobs[i].calls, 1);
        ck_assert_int_eq(memcmp(jobs[i].y, stress_want[i % 16], sizeof jobs[i].y), 0);
        poprt_request_free(jobs[i].req);
        poprt_stepio_free(jobs[i].io);
    }
    free(jobs);
    return NULL;
}

START_TEST(concurrent_submits_lose_and_double_nothing)
{
    poprt_model *m = annotated(MLP.file, "{\"pipelining\": {\"relu1\": 1, \"softmax\": 2}}");
    for (int k = 0; k < 16; k++) {
        float x[16];
        fill(x, 16, k);
        unsharded(m, &MLP, x, stress_want[k]);
    }
    stress_runner = pipelined(m, 3, NULL, "2"); /* two pipelines, one per replica */
    enum { T = 4 };
    pthread_t th[T];
    for (int t = 0; t < T; t++)
        ck_assert_int_eq(pthread_create(&th[t], NULL, submitter, NULL), 0);
    for (int t = 0; t < T; t++)
        ck_assert_int_eq(pthread_join(th[t], NULL), 0);
    poprt_runner_stats st = {.size = sizeof st};
    ck_assert_int_eq(poprt_runner_stats_get(stress_runner, &st), POPRT_OK);
    ck_assert_uint_eq(st.requests, (uint64_t)T * STRESS_REQUESTS);
    ck_assert_uint_eq(st.failed, 0);
    poprt_runner_free(stress_runner);
    poprt_model_free(m);
}
END_TEST

/* A request failing in a stage completes once with its status and the
 * stage named; the ones around it are unaffected. Freeing the runner with
 * requests in its stages completes each of them first. */
START_TEST(failures_and_free_drain)
{
    poprt_model *m = annotated(MLP.file, "{\"pipelining\": {\"relu1\": 1, \"softmax\": 2}}");
    poprt_runner *r = pipelined(m, 3, NULL, NULL);
    enum { N = 16 };
    static job jobs[N];
    const int64_t bad_dims[2] = {1, 8};
    for (int i = 0; i < N; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        fill(jobs[i].x, 16, i);
        unsharded(m, &MLP, jobs[i].x, jobs[i].want);
        jobs[i].io = stepio(&MLP, jobs[i].x, jobs[i].y);
        if (i % 5 == 3) /* 8 columns where the model takes 16 */
            ck_assert_int_eq(poprt_stepio_set_input(jobs[i].io, "x", POPRT_DTYPE_FLOAT, bad_dims, 2,
                                                    jobs[i].x, sizeof(float) * 8),
                             POPRT_OK);
        ck_assert_int_eq(
            poprt_runner_submit(r, jobs[i].io, 0, count_call, &jobs[i].calls, &jobs[i].req),
            POPRT_OK);
    }
    for (int i = 0; i < N; i++) {
        poprt_status st = poprt_request_wait(jobs[i].req, -1);
        ck_assert_int_eq(jobs[i].calls, 1);
        if (i % 5 == 3) {
            ck_assert_int_eq(st, POPRT_STATUS_SHAPE_MISMATCH);
            ck_assert_msg(strstr(poprt_last_error(), "pipeline stage 0") &&
                              strstr(poprt_last_error(), "'x'"),
                          "%s", poprt_last_error());
        } else {
            ck_assert_int_eq(st, POPRT_OK);
            ck_assert_int_eq(memcmp(jobs[i].want, jobs[i].y, sizeof(float) * 10), 0);
        }
        poprt_request_free(jobs[i].req);
        poprt_stepio_free(jobs[i].io);
    }
    /* freed with requests queued and in the stages: each completes once */
    for (int i = 0; i < N; i++) {
        jobs[i].calls = 0;
        jobs[i].io = stepio(&MLP, jobs[i].x, jobs[i].y);
        ck_assert_int_eq(poprt_runner_submit(r, jobs[i].io, 0, count_call, &jobs[i].calls, NULL),
                         POPRT_OK);
    }
    poprt_runner_free(r);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(jobs[i].calls, 1);
        ck_assert_int_eq(memcmp(jobs[i].want, jobs[i].y, sizeof(float) * 10), 0);
        poprt_stepio_free(jobs[i].io);
    }
    poprt_model_free(m);
}
END_TEST

/* Tensors crossing in every way: r (stage 0) is a model output read by
 * stages 1 and 2; m (stage 1) is a model output read by stage 2; graph
 * input z is read by stages 1 and 2 only; initializer c by stages 0 and 2.
 *   a = x + c; r = Relu(a) | m = r * z | d = m - r; y = d + z + c */
START_TEST(crossing_outputs_inputs_and_weights)
{
    poprt__model *b = tb_model(17);
    const int64_t xd[2] = {2, 4}, cd[1] = {4};
    tb_input(b, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_input(b, "z", POPRT_DTYPE_FLOAT, 2, xd);
    const float c[4] = {-1.0f, 0.5f, 0.25f, 2.0f};
    tb_const(b, "c", POPRT_DTYPE_FLOAT, 1, cd, c);
    tb_node(b, "Add", 2, (const char *[]){"x", "c"}, 1, (const char *[]){"a"});
    tb_node(b, "Relu", 1, (const char *[]){"a"}, 1, (const char *[]){"r"});
    tb_node(b, "Mul", 2, (const char *[]){"r", "z"}, 1, (const char *[]){"m"})->name = "mul1";
    tb_node(b, "Sub", 2, (const char *[]){"m", "r"}, 1, (const char *[]){"d"})->name = "sub2";
    tb_node(b, "Add", 2, (const char *[]){"d", "z"}, 1, (const char *[]){"e"});
    tb_node(b, "Add", 2, (const char *[]){"e", "c"}, 1, (const char *[]){"y"});
    tb_output(b, "y");
    tb_output(b, "r");
    tb_output(b, "m");
    poprt_model *m;
    ck_assert_int_eq(tb_load(b, &m), POPRT_OK);
    char args[600];
    snprintf(args, sizeof args, "config=%s",
             write_config("{\"pipelining\": {\"mul1\": 1, \"sub2\": 2}}"));
    poprt_pass_manager *pm;
    ck_assert_int_eq(poprt_pass_manager_create(&pm), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_add(pm, "manual_sharding", args), POPRT_OK);
    ck_assert_msg(poprt_pass_manager_run(pm, m) == POPRT_OK, "%s", poprt_last_error());
    poprt_pass_manager_free(pm);
    float x[8], z[8], want[3][8], got[3][8];
    fill(x, 8, 1);
    fill(z, 8, 2);
    const char *names[3] = {"y", "r", "m"};
    poprt_session *s;
    poprt_runner *r = pipelined(m, 3, NULL, NULL);
    ck_assert_int_eq(poprt_session_create(m, NULL, &s), POPRT_OK);
    for (int pass = 0; pass < 2; pass++) { /* 0: the unsharded session, 1: the pipeline */
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, sizeof x),
                         POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_input(io, "z", POPRT_DTYPE_FLOAT, xd, 2, z, sizeof z),
                         POPRT_OK);
        for (int k = 0; k < 3; k++)
            ck_assert_int_eq(
                poprt_stepio_set_output(io, names[k], pass ? got[k] : want[k], sizeof got[k]),
                POPRT_OK);
        ck_assert_msg((pass ? poprt_runner_run(r, io) : poprt_session_run(s, io)) == POPRT_OK, "%s",
                      poprt_last_error());
        poprt_stepio_free(io);
    }
    for (int k = 0; k < 3; k++)
        ck_assert_msg(memcmp(want[k], got[k], sizeof got[k]) == 0, "output '%s' differs", names[k]);
    ck_assert(want[0][1] != 0.0f);
    poprt_session_free(s);
    poprt_runner_free(r);
    poprt_model_free(m);
}
END_TEST

START_TEST(bad_assignments_are_clear_errors)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "pipeline", "1"), POPRT_OK);
    poprt_runner *r = NULL;
    /* fc2 (stage 0) reads a1, made by relu1 in stage 1 */
    poprt_model *m = annotated(MLP.file, "{\"pipelining\": {\"fc1\": 1, \"fc2\": 0}}");
    ck_assert_int_eq(poprt_runner_create(m, o, &r), POPRT_STATUS_INVALID_MODEL);
    const char *e = poprt_last_error();
    ck_assert_msg(strstr(e, "fc2") && strstr(e, "'a1'") && strstr(e, "'relu1'") &&
                      strstr(e, "out of order"),
                  "%s", e);
    ck_assert_ptr_null(r);
    /* without "pipeline", the stages come from the model: the error says
     * how to run it as one program, which works */
    poprt_options *plain;
    ck_assert_int_eq(poprt_options_create(&plain), POPRT_OK);
    ck_assert_int_eq(poprt_runner_create(m, plain, &r), POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "option 'pipeline' \"0\""));
    ck_assert_int_eq(poprt_options_set(plain, "pipeline", "0"), POPRT_OK);
    ck_assert_int_eq(poprt_runner_create(m, plain, &r), POPRT_OK);
    poprt_runner_free(r);
    poprt_options_free(plain);
    /* a plain session still runs it (it ignores the stages) */
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(m, NULL, &s), POPRT_OK);
    poprt_session_free(s);
    poprt_model_free(m);
    /* no stages to pipeline */
    m = annotated(MLP.file, NULL);
    ck_assert_int_eq(poprt_runner_create(m, o, &r), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "option 'pipeline'"));
    poprt_model_free(m);
    /* pipelining and batching together */
    m = annotated(MLP.file, "{\"pipelining\": {\"fc2\": 1}}");
    ck_assert_int_eq(poprt_options_set(o, "max_batch", "4"), POPRT_OK);
    ck_assert_int_eq(poprt_runner_create(m, o, &r), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "max_batch"));
    /* pipelining and the host's threads together */
    ck_assert_int_eq(poprt_options_set(o, "max_batch", "1"), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "host_threads", "1"), POPRT_OK);
    ck_assert_int_eq(poprt_runner_create(m, o, &r), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "host_threads"));
    ck_assert_int_eq(poprt_options_set(o, "host_threads", "0"), POPRT_OK);
    /* pipelining several models behind one runner */
    const poprt_model *two[2] = {m, m};
    const char *names[2] = {"a", "b"};
    ck_assert_int_eq(poprt_runner_create_multi(2, two, names, NULL, o, &r),
                     POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "one model"));
    /* "pipeline"="0": one program, the unsharded run */
    ck_assert_int_eq(poprt_options_set(o, "max_batch", "1"), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "pipeline", "0"), POPRT_OK);
    ck_assert_int_eq(poprt_runner_create(m, o, &r), POPRT_OK);
    float x[16], y[10], want[10];
    fill(x, 16, 3);
    unsharded(m, &MLP, x, want);
    poprt_stepio *io = stepio(&MLP, x, y);
    ck_assert_int_eq(poprt_runner_run(r, io), POPRT_OK);
    ck_assert_int_eq(memcmp(y, want, sizeof y), 0);
    poprt_stepio_free(io);
    poprt_runner_free(r);
    ck_assert_int_eq(poprt_options_set(o, "cores_per_stage", "0"), POPRT_STATUS_INVALID_OPTION);
    poprt_options_free(o);
    poprt_model_free(m);
}
END_TEST

int main(void)
{
    if (!mkdtemp(tmpdir))
        return 1;
    Suite *s = suite_create("pipeline");
    TCase *tc = tcase_create("pipeline");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, two_stages_equal_unsharded);
    tcase_add_test(tc, three_stages_equal_unsharded);
    tcase_add_test(tc, four_stages_forward_to_several);
    tcase_add_test(tc, concurrent_submits_lose_and_double_nothing);
    tcase_add_test(tc, failures_and_free_drain);
    tcase_add_test(tc, crossing_outputs_inputs_and_weights);
    tcase_add_test(tc, bad_assignments_are_clear_errors);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    char path[600];
    snprintf(path, sizeof path, "%s/stages.json", tmpdir);
    unlink(path);
    rmdir(tmpdir);
    return failed ? 1 : 0;
}
