/* A runner's pipelined stages (docs/runtime.md): whether the runner
 * pipelines (options "pipeline", "cores_per_stage", the model's
 * manual_sharding annotations) and the stage programs, one per stage of
 * the split model (lib/compiler/stages.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "compiler/stages.h"

/* The options of a stage's program: the caller's without the input shapes
 * (applied before the split; a stage may not have the input) and with the
 * stage's cores as "threads". */
static poprt_status stage_options(const poprt_options *o, int cores, poprt_options **out)
{
    poprt_status st = poprt__options_new(out);
    for (size_t i = 0; !st && o && i < o->n; i++)
        if (strncmp(o->kv[i].key, "input_shape.", 12) != 0)
            st = poprt__options_set(*out, o->kv[i].key, o->kv[i].value);
    char val[32];
    snprintf(val, sizeof val, "%d", cores);
    if (!st)
        st = poprt__options_set(*out, "threads", val);
    if (!st && o) {
        (*out)->pf = o->pf;
        (*out)->pf_user = o->pf_user;
        (*out)->pf_width = o->pf_width;
    }
    return st;
}

poprt_status poprt__api_pipeline(const poprt_model *model, const poprt_options *o,
                                 poprt__runner_cfg *cfg, poprt__program **progs, int max,
                                 int *n_out, poprt_options **run_opts)
{
    const char *v = poprt__opt(o, "pipeline");
    const int64_t annotated = poprt__model_num_stages(model->m);
    cfg->stages = 1;
    *n_out = 0;
    if (v && strcmp(v, "0") == 0)
        return POPRT_OK;
    const char *unfit = annotated <= 1       ? "the model has no pipeline stages (metadata "
                                               "'poprt.num_pipeline_stages' > 1: annotate it with "
                                               "the manual_sharding pass, docs/sharding.md)"
                        : cfg->max_batch > 1 ? "a pipelined runner does not batch (max_batch "
                                               "must be 1)"
                        : cfg->n_models > 1  ? "a pipelined runner serves one model"
                        : cfg->host_threads  ? "a pipelined runner runs its own threads "
                                               "(host_threads must be 0)"
                        : cfg->pack_rows     ? "a pipelined runner does not pack (pack must "
                                               "be 0)"
                                             : NULL;
    if (unfit && !v)
        return POPRT_OK; /* one program per model and batch size */
    if (unfit)
        return poprt__err(POPRT_STATUS_INVALID_OPTION, "option 'pipeline': %s", unfit);
    poprt__stages split;
    poprt_status st = poprt__stages_split(model->m, o, &poprt__api_folder, &split);
    if (st && !v && st != POPRT_STATUS_OUT_OF_MEMORY) { /* the stages were not asked for */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", poprt__last_error());
        return poprt__err(st, "%s (option 'pipeline' \"0\" runs the model as one program)", msg);
    }
    if (st)
        return st;
    if (split.n > max) {
        poprt__stages_free(&split);
        return poprt__err(POPRT_STATUS_LIMIT_EXCEEDED,
                          "the model has %d pipeline stages (at most %d)", split.n, max);
    }
    const char *c = poprt__opt(o, "cores_per_stage");
    const int share = cfg->cores_per_replica / split.n;
    cfg->cores_per_stage = c ? (int)strtol(c, NULL, 10) : share > 0 ? share : 1;
    cfg->cores_per_replica = cfg->cores_per_stage * split.n;
    cfg->stages = split.n;
    st = stage_options(o, cfg->cores_per_stage, run_opts);
    for (int s = 0; s < split.n && !st; s++) {
        struct poprt_model wrap = {.m = split.models[s]};
        st = poprt__api_compile(&wrap, *run_opts, &progs[s]);
        if (st)
            st = poprt__err_prefix(st, "pipeline stage %d: ", s);
        else
            *n_out = s + 1;
    }
    poprt__stages_free(&split);
    if (!st)
        poprt__log(POPRT_LOG_INFO, "runner: %d pipeline stages, %d cores each", cfg->stages,
                   cfg->cores_per_stage);
    return st;
}
