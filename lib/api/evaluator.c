/* The evaluator passes get (lib/passes/passes.h): constant folding through
 * the runtime's folder, and models compiled and run as sessions. */
#include <stdio.h>
#include <string.h>
#include "api/api.h"
#include "passes/passes.h"

static poprt_status fold(void *ctx, poprt__node *n)
{
    (void)ctx;
    return poprt__fold_node(n, NULL);
}

typedef struct runner {
    poprt_session *s;
    poprt_stepio *io; /* the last run's: its outputs are handed out */
} runner;

static poprt_status open_runner(void *ctx, const poprt__model *m, int n_shapes,
                                const poprt__eval_tensor *shapes, const char *const *opts,
                                void **out)
{
    (void)ctx;
    runner *r = poprt__calloc(1, sizeof *r);
    poprt_options *o = NULL;
    poprt_status st = r ? poprt__options_new(&o)
                        : poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (int i = 0; !st && i < n_shapes; i++) {
        char key[512], val[512];
        size_t at = 0;
        val[0] = 0;
        for (int d = 0; d < shapes[i].rank && at < sizeof val - 24; d++)
            at += (size_t)snprintf(val + at, sizeof val - at, "%s%lld", d ? "," : "",
                                   (long long)shapes[i].dims[d]);
        snprintf(key, sizeof key, "input_shape.%s", shapes[i].name);
        st = poprt__options_set(o, key, val);
    }
    for (int i = 0; !st && opts && opts[i]; i += 2)
        st = poprt__options_set(o, opts[i], opts[i + 1]);
    poprt__model *c = NULL;
    if (!st)
        st = poprt__model_clone(m, &c);
    poprt__program *p = NULL;
    if (!st) {
        c->eval = NULL;
        poprt__progress_mute(1); /* an evaluation inside a job: not a job of its own */
        st = poprt__program_compile(c, o, &poprt__api_folder, NULL, &p);
        poprt__progress_mute(-1);
    }
    if (!st) {
        st = poprt__session_new(p, o, &r->s);
        poprt__program_unref(p);
    }
    poprt__options_free(o);
    if (st) {
        poprt__free(r);
        return st;
    }
    *out = r;
    return POPRT_OK;
}

static poprt_status run(void *rv, int n_in, const poprt__eval_tensor *in, int n_out,
                        const char *const *names, poprt__eval_tensor *out)
{
    runner *r = rv;
    poprt_stepio_free(r->io);
    r->io = NULL;
    poprt_status st = poprt_stepio_create(&r->io);
    for (int i = 0; !st && i < n_in; i++)
        st = poprt_stepio_set_input(r->io, in[i].name, (poprt_dtype)in[i].dtype, in[i].dims,
                                    in[i].rank, in[i].data, in[i].nbytes);
    for (int i = 0; !st && i < n_out; i++)
        st = poprt_stepio_set_output_alloc(r->io, names[i]);
    if (!st)
        st = poprt__session_run(r->s, r->io);
    for (int i = 0; !st && i < n_out; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].name = names[i];
        poprt_value_kind kind = POPRT_VALUE_TENSOR;
        poprt_dtype dt;
        if (poprt_stepio_output_kind(r->io, names[i], &kind, NULL, NULL) ||
            kind != POPRT_VALUE_TENSOR ||
            poprt_stepio_output(r->io, names[i], &dt, &out[i].dims, &out[i].rank, &out[i].data,
                                &out[i].nbytes)) {
            memset(&out[i], 0, sizeof out[i]); /* not a tensor: dtype 0 */
            continue;
        }
        out[i].dtype = dt;
    }
    poprt__err_clear();
    return st;
}

static void close_runner(void *rv)
{
    runner *r = rv;
    poprt_stepio_free(r->io);
    poprt__session_free(r->s);
    poprt__free(r);
}

const poprt__evaluator poprt__api_evaluator = {NULL, fold, open_runner, run, close_runner};
