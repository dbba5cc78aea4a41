/* Public asynchronous runs and runners: requests on a session's workers,
 * and runners (replicas of programs compiled here, one per batch size,
 * through the engine cache when the options name one). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"

poprt_status poprt_session_submit(poprt_session *session, poprt_stepio *stepio,
                                  poprt_request_fn done, void *user, poprt_request **request_out)
{
    if (!session || !stepio)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_submit: NULL argument");
    return poprt__session_submit(session, stepio, done, user, request_out);
}

poprt_status poprt_request_wait(poprt_request *request, int64_t timeout_us)
{
    if (!request)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_request_wait: NULL request");
    return poprt__request_wait(request, timeout_us);
}

int poprt_request_done(const poprt_request *request)
{
    return request ? poprt__request_done(request) : 0;
}

poprt_status poprt_request_status(const poprt_request *request)
{
    if (!request)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_request_status: NULL request");
    const char *msg = NULL;
    poprt_status st = poprt__request_status(request, &msg);
    if (st && msg)
        poprt__err(st, "%s", msg); /* the worker's message, on the caller's thread */
    return st;
}

poprt_status poprt_request_cancel(poprt_request *request)
{
    if (!request)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_request_cancel: NULL request");
    return poprt__request_cancel(request);
}

void poprt_request_free(poprt_request *request)
{
    if (request)
        poprt__request_free(request);
}

/* ---- runners --------------------------------------------------------------------- */

static long option_int(const poprt_options *o, const char *key, long dflt)
{
    const char *v = poprt__opt(o, key);
    return v ? strtol(v, NULL, 10) : dflt;
}

static int allowed_cpus(void)
{
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) != 0)
        return 1;
    int n = CPU_COUNT(&s);
    return n > 0 ? n : 1;
}

/* Packing (lib/runtime/pack.c): a program per row count, the powers of two
 * up to pack_max_rows and pack_max_rows; cfg->pack is filled when the model
 * is converted. */
static poprt_status configure_pack(const poprt_options *o, poprt__runner_cfg *cfg)
{
    if (cfg->max_batch > 1 || poprt__opt(o, "batch_sizes"))
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "option 'pack': packing batches rows itself (pack_max_rows), without "
                          "'max_batch' or 'batch_sizes'");
    cfg->pack_rows = (int)option_int(o, "pack_max_rows", 8);
    cfg->batch_timeout_ns = (int64_t)option_int(o, "pack_timeout_us", 1000) * 1000;
    /* every row count up to 8, then steps of a quarter (10, 12, 14, 16, 20,
     * ...): a run pads at most a fifth of its rows */
    for (int64_t b = 1; b < cfg->pack_rows && cfg->n_sizes < 31; b += b < 8 ? 1 : b / 4)
        cfg->sizes[cfg->n_sizes++] = b;
    cfg->sizes[cfg->n_sizes++] = cfg->pack_rows;
    return POPRT_OK;
}

/* A converted model whose batch dim is fixed packs that many rows, in one
 * program. */
static poprt_status fixed_rows(const poprt_model *packed, int asked, poprt__runner_cfg *cfg)
{
    const poprt__graph *g = packed->m->graph;
    for (size_t i = 0; i < g->inputs.len; i++) {
        const poprt__tensor *t = g->inputs.items[i];
        const int64_t b = t->is_initializer ? -1 : t->type.dims[0].value;
        if (b < 0)
            continue;
        if (asked && b != cfg->pack_rows)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option 'pack_max_rows' %d: input '%s' has a fixed batch of %lld "
                              "rows",
                              cfg->pack_rows, t->name, (long long)b);
        cfg->pack_rows = (int)b;
        cfg->n_sizes = 1;
        cfg->sizes[0] = b;
        break;
    }
    return POPRT_OK;
}

/* A batching runner batches models whose batch is fixed at 1 too (as many
 * exports are): *copy_out gets a copy with that dim symbolic on every input,
 * re-inferred (NULL when no input has a fixed batch of 1). A model that
 * hard-codes its batch inside (a Reshape to a constant batch of 1) fails
 * here, its node named. */
static poprt_status free_fixed_batch(const poprt_model *model, int bd, poprt_model **copy_out)
{
    const poprt__graph *g = model->m->graph;
    poprt_status st = POPRT_OK;
    *copy_out = NULL;
    for (size_t i = 0; i < g->inputs.len && !st; i++) {
        const poprt__tensor *t = g->inputs.items[i];
        if (t->is_initializer || t->raw || t->type.kind != POPRT__KIND_TENSOR ||
            t->type.rank <= bd || t->type.dims[bd].value != 1)
            continue;
        if (!*copy_out && (st = poprt_model_clone(model, copy_out)))
            break;
        st = poprt__free_input_dim((*copy_out)->m, t->name, bd, "poprt_batch");
        if (st)
            poprt__err_prefix(st, "batching input '%s' (its dim %d fixed at 1 in the model): ",
                              t->name, bd);
    }
    if (*copy_out)
        poprt__model_touch(*copy_out);
    return st;
}

/* The runner's configuration from the options. */
static poprt_status configure(const poprt_options *o, poprt__runner_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->replicas = (int)option_int(o, "replicas", 1);
    int cpr = allowed_cpus() / cfg->replicas;
    cfg->cores_per_replica = (int)option_int(o, "cores_per_replica", cpr > 0 ? cpr : 1);
    cfg->pin = (int)option_int(o, "pin_cores", 1);
    cfg->host_threads = (int)option_int(o, "host_threads", 0);
    cfg->queue_size = (size_t)option_int(o, "queue_size", 1024);
    cfg->max_batch = (int)option_int(o, "max_batch", 1);
    cfg->batching_dim = (int)option_int(o, "batching_dim", 0);
    cfg->batch_timeout_ns = (int64_t)option_int(o, "batch_timeout_us", 1000) * 1000;
    if (option_int(o, "pack", 0))
        return configure_pack(o, cfg);
    const char *v = poprt__opt(o, "batch_sizes");
    if (v) {
        poprt_status st = poprt__parse_sizes("batch_sizes", v, cfg->sizes, &cfg->n_sizes);
        if (st)
            return st;
        if (cfg->sizes[cfg->n_sizes - 1] != cfg->max_batch)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option 'batch_sizes': the last size must be max_batch (%d)",
                              cfg->max_batch);
    } else {
        for (int64_t b = 1; b < cfg->max_batch && cfg->n_sizes < 31; b *= 2)
            cfg->sizes[cfg->n_sizes++] = b;
        cfg->sizes[cfg->n_sizes++] = cfg->max_batch;
    }
    return POPRT_OK;
}

/* The options of the program for batch size b: the caller's, each input's
 * shape with b rows on the batching dim (its other dims the model's or the
 * caller's input_shape.<name>), "threads" the replica's cores. */
static poprt_status size_options(const poprt_model *model, const poprt_options *o,
                                 const poprt__runner_cfg *cfg, int64_t b, poprt_options **out)
{
    poprt_status st = poprt__options_new(out);
    const int pack = cfg->pack.seq_len > 0; /* input shapes: the packed rows' */
    if (!st) /* the host's parallel-for too: the replicas' sessions use it */
        st = poprt__options_add_except(*out, o, 1, pack ? "input_shape." : NULL);
    char val[512];
    snprintf(val, sizeof val, "%d", cfg->cores_per_replica);
    if (!st)
        st = poprt__options_set(*out, "threads", val);
    for (size_t i = 0; !st && (cfg->max_batch > 1 || pack) && i < model->m->graph->inputs.len;
         i++) {
        const poprt__tensor *t = model->m->graph->inputs.items[i];
        if (t->is_initializer || t->raw)
            continue;
        char key[300];
        snprintf(key, sizeof key, "input_shape.%s", t->name);
        int64_t dims[POPRT__MAX_RANK];
        int rank = t->type.rank;
        const char *given = pack ? NULL : poprt__opt(o, key);
        if (given)
            st = poprt__parse_dims(given, dims, &rank, key);
        else
            for (int d = 0; d < rank; d++)
                dims[d] = t->type.dims[d].value;
        if (st)
            break;
        if (t->type.kind != POPRT__KIND_TENSOR || rank <= cfg->batching_dim)
            st = poprt__err(POPRT_STATUS_INVALID_OPTION,
                            "input '%s': a batching runner needs tensor inputs with a dim %d "
                            "(option 'batching_dim')",
                            t->name, cfg->batching_dim);
        size_t at = 0;
        val[0] = 0;
        for (int d = 0; !st && d < rank; d++) {
            int64_t v = d == cfg->batching_dim ? b : dims[d];
            if (v < 0)
                st = poprt__err(POPRT_STATUS_INVALID_OPTION,
                                "input '%s': dim %d is symbolic: fix it with option '%s' to batch",
                                t->name, d, key);
            at += (size_t)snprintf(val + at, sizeof val - at, "%s%lld", d ? "," : "", (long long)v);
        }
        if (!st)
            st = poprt__options_set(*out, key, val);
    }
    return st;
}

/* The caller's options for model m: the runner's, then the model's own
 * (which win), in a new set. */
static poprt_status model_options(const poprt_options *runner_opts, const poprt_options *own,
                                  poprt_options **out)
{
    poprt_status st = poprt__options_new(out);
    if (!st)
        st = poprt__options_add(*out, runner_opts, 1);
    return st ? st : poprt__options_add(*out, own, 0);
}

/* Compiles each model for each batch size (model-major) and starts the
 * runner over the programs. */
static poprt_status create(size_t n_models, const poprt_model *const *models,
                           const char *const *names, const poprt_options *const *own,
                           const poprt_options *options, poprt_runner **runner_out)
{
    poprt__runner_cfg cfg;
    poprt_status st = poprt__options_validate(options);
    for (size_t i = 0; !st && own && i < n_models; i++)
        if (own[i] && (st = poprt__options_validate(own[i])))
            poprt__err_prefix(st, "model '%s': ", names ? names[i] : "");
    if (!st)
        st = configure(options, &cfg);
    if (st)
        return st;
    if (cfg.pack_rows && n_models > 1)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "option 'pack': a packing runner serves one model");
    if (cfg.max_batch <= 1 && !cfg.pack_rows) {
        cfg.n_sizes = 1;
        cfg.sizes[0] = 1;
    }
    cfg.n_models = (int)n_models;
    cfg.model_names = names;
    const int per = cfg.n_sizes;
    size_t n_progs = n_models * (size_t)per;
    poprt__program **progs = poprt__calloc(n_progs > 32 ? n_progs : 32, sizeof *progs);
    /* the models served: the caller's, or a converted copy (copies[m]) */
    poprt_model **copies = poprt__calloc(n_models, sizeof *copies);
    const poprt_model **served = poprt__calloc(n_models, sizeof *served);
    if (!progs || !copies || !served) {
        poprt__free(progs);
        poprt__free(copies);
        poprt__free(served);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    for (size_t m = 0; m < n_models; m++)
        served[m] = models[m];
    if (cfg.pack_rows && !(st = poprt_model_clone(models[0], &copies[0]))) {
        st = poprt__pack_convert(copies[0]->m, option_int(options, "pack_seq_len", 0),
                                 poprt__opt(options, "pack_mask_input"),
                                 (int)option_int(options, "pack_positions", 1), &cfg.pack);
        poprt__model_touch(copies[0]);
        served[0] = copies[0];
        if (!st)
            st = fixed_rows(copies[0], poprt__opt(options, "pack_max_rows") != NULL, &cfg);
        if (!st && (int64_t)cfg.pack_rows * cfg.pack.seq_len < cfg.pack.max_len)
            st = poprt__err(POPRT_STATUS_INVALID_OPTION,
                            "option 'pack_max_rows' %d: rows of %lld tokens cannot hold a "
                            "request of %lld",
                            cfg.pack_rows, (long long)cfg.pack.seq_len,
                            (long long)cfg.pack.max_len);
    }
    for (size_t m = 0; m < n_models && !st && cfg.max_batch > 1; m++) {
        st = free_fixed_batch(models[m], cfg.batching_dim, &copies[m]);
        if (copies[m])
            served[m] = copies[m];
        if (st && names)
            poprt__err_prefix(st, "model '%s': ", names[m]);
    }
    poprt_options *run_opts = NULL;
    int piped = 0; /* stage programs, when the (one) model is pipelined */
    cfg.stages = 1;
    if (!st)
        st = poprt__api_pipeline(served[0], options, &cfg, progs, 32, &piped, &run_opts);
    if (st || cfg.stages > 1)
        n_progs = (size_t)piped; /* the stage programs (those compiled before a failure) */
    if (cfg.stages > 1)
        cfg.outputs = &served[0]->m->graph->outputs;
    for (size_t m = 0; m < n_models && !st && cfg.stages <= 1; m++) {
        poprt_options *mo = NULL;
        st = model_options(options, own ? own[m] : NULL, &mo);
        for (int k = 0; k < per && !st; k++) {
            poprt_options *o = NULL;
            poprt__program **pk = &progs[m * (size_t)per + (size_t)k];
            st = size_options(served[m], mo, &cfg, cfg.sizes[k], &o);
            if (!st && (st = poprt__api_compile(served[m], o, pk)) && cfg.max_batch > 1)
                poprt__err_prefix(st, "%s for batches of %lld rows: ",
                                  copies[m] ? "the model, its batch fixed at 1, compiled"
                                            : "compiled",
                                  (long long)cfg.sizes[k]);
            if (!st && cfg.pack_rows)
                st = poprt__pack_check_program(&cfg.pack, *pk, cfg.sizes[k]);
            if (!st && k) /* the packed weights once for all sizes */
                poprt__program_share_states(*pk, progs[m * (size_t)per]);
            if (!st && !run_opts)
                run_opts = o;
            else
                poprt__options_free(o);
        }
        poprt__options_free(mo);
        if (st && names)
            poprt__err_prefix(st, "model '%s': ", names[m]);
    }
    struct poprt_runner *r = NULL;
    if (!st)
        st = poprt__runner_start(&cfg, progs, (int)n_progs, run_opts, NULL, &r);
    for (size_t k = 0; k < n_progs; k++)
        poprt__program_unref(progs[k]);
    poprt__free(progs);
    poprt__options_free(run_opts);
    for (size_t m = 0; m < n_models; m++)
        poprt_model_free(copies[m]);
    poprt__free(copies);
    poprt__free(served);
    if (st)
        return st;
    *runner_out = r;
    return POPRT_OK;
}

poprt_status poprt_runner_create(const poprt_model *model, const poprt_options *options,
                                 poprt_runner **runner_out)
{
    if (!model || !runner_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_runner_create: NULL argument");
    return create(1, &model, NULL, NULL, options, runner_out);
}

poprt_status poprt_runner_create_multi(size_t n_models, const poprt_model *const *models,
                                       const char *const *names,
                                       const poprt_options *const *model_options,
                                       const poprt_options *options, poprt_runner **runner_out)
{
    if (!models || !names || !runner_out || n_models == 0 || n_models > 1024)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_runner_create_multi: NULL argument or n_models not in 1..1024");
    for (size_t i = 0; i < n_models; i++) {
        if (!models[i] || !names[i] || !names[i][0])
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                              "poprt_runner_create_multi: model %zu has no model or no name", i);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(names[i], names[j]))
                return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                                  "poprt_runner_create_multi: two models named '%s'", names[i]);
    }
    return create(n_models, models, names, model_options, options, runner_out);
}

poprt_status poprt_runner_submit_model(poprt_runner *runner, const char *model,
                                       poprt_stepio *stepio, int64_t deadline_us,
                                       poprt_request_fn done, void *user,
                                       poprt_request **request_out)
{
    if (!runner || !model || !stepio)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_runner_submit_model: NULL argument");
    return poprt__runner_submit_to(runner, model, stepio, deadline_us, done, user, request_out);
}

poprt_status poprt_runner_submit(poprt_runner *runner, poprt_stepio *stepio, int64_t deadline_us,
                                 poprt_request_fn done, void *user, poprt_request **request_out)
{
    if (!runner || !stepio)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_runner_submit: NULL argument");
    return poprt__runner_submit(runner, stepio, deadline_us, done, user, request_out);
}

poprt_status poprt_runner_run(poprt_runner *runner, poprt_stepio *stepio)
{
    poprt_request *q;
    poprt_status st = poprt_runner_submit(runner, stepio, 0, NULL, NULL, &q);
    if (st)
        return st;
    st = poprt__request_wait(q, -1);
    poprt__request_free(q);
    return st;
}

poprt_status poprt_runner_stats_get(const poprt_runner *runner, poprt_runner_stats *stats_out)
{
    if (!runner || !stats_out || stats_out->size < sizeof *stats_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_runner_stats_get: NULL argument or size not set");
    return poprt__runner_stats((poprt_runner *)runner, stats_out);
}

void poprt_runner_free(poprt_runner *runner) { poprt__runner_stop(runner); }

poprt_status poprt_runner_work(poprt_runner *runner, int64_t timeout_us)
{
    if (!runner)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_runner_work: NULL runner");
    return poprt__runner_work(runner, timeout_us);
}
