/* docs/runtime.md's example: a runner with dynamic batching serving
 * asynchronous requests, each completed through a callback. Built and run
 * by the tests (meson test example_runner) on tests/data/mlp_dynamic.onnx.
 *   example_runner MODEL.onnx */
#include <stdio.h>
#include <string.h>
#include <poprt/poprt.h>

enum { N = 16 };

typedef struct request_buffers {
    float x[16], y[10];
    poprt_stepio *io;
} request_buffers;

static void done(poprt_request *request, poprt_status status, void *user)
{
    (void)request;
    request_buffers *b = user;
    if (status != POPRT_OK) /* each request gets its own status */
        fprintf(stderr, "request failed: %s\n", poprt_status_string(status));
    else
        b->y[9] += 0.0f; /* the outputs are in b->y now */
}

int main(int argc, char **argv)
{
    poprt_model *model;
    poprt_options *options;
    poprt_runner *runner;
    if (argc < 2 || poprt_model_load(argv[1], &model) != POPRT_OK) {
        fprintf(stderr, "%s\n", argc < 2 ? "usage: example_runner MODEL.onnx" : poprt_last_error());
        return 1;
    }
    /* batches of up to 8 rows, waiting at most 1 ms for a batch to fill */
    poprt_options_create(&options);
    poprt_options_set(options, "max_batch", "8");
    poprt_options_set(options, "batch_timeout_us", "1000");
    if (poprt_runner_create(model, options, &runner) != POPRT_OK) {
        fprintf(stderr, "%s\n", poprt_last_error());
        return 1;
    }
    static request_buffers b[N];
    poprt_request *requests[N];
    const int64_t dims[2] = {1, 16}; /* one row each: the runner batches them */
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 16; k++)
            b[i].x[k] = (float)(i + k) / 16.0f;
        poprt_stepio_create(&b[i].io);
        poprt_stepio_set_input(b[i].io, "x", POPRT_DTYPE_FLOAT, dims, 2, b[i].x, sizeof b[i].x);
        poprt_stepio_set_output(b[i].io, "y", b[i].y, sizeof b[i].y);
        if (poprt_runner_submit(runner, b[i].io, 0, done, &b[i], &requests[i]) != POPRT_OK) {
            fprintf(stderr, "%s\n", poprt_last_error());
            return 1;
        }
    }
    int failed = 0;
    for (int i = 0; i < N; i++) {
        failed += poprt_request_wait(requests[i], -1) != POPRT_OK;
        poprt_request_free(requests[i]);
        poprt_stepio_free(b[i].io);
    }
    poprt_runner_stats stats = {.size = sizeof stats};
    poprt_runner_stats_get(runner, &stats);
    printf("%llu requests in %llu runs (%.2f per run), p50 wait %.0f us, p50 run %.0f us\n",
           (unsigned long long)stats.requests, (unsigned long long)stats.batches, stats.mean_batch,
           stats.wait_p50_us, stats.run_p50_us);
    poprt_runner_free(runner);
    poprt_options_free(options);
    poprt_model_free(model);
    return failed != 0;
}
