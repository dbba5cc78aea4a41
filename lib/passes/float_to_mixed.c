/* float_to_mixed: float16 where it is safe, float32 where a quick check
 * says it is not. Runs float_to_half on a copy, runs the float32 model and
 * the copy on the same inputs (calibration folder data=DIR, or random),
 * and compares every converted node's output. A node stays float32 when
 * its float16 output is not finite where float32's is (overflow), or when
 * its error (max|a - b| / max|a|) exceeds tolerance (default 1e-2) and is
 * more than twice the largest error of its inputs (the node itself, not
 * its producers, lost the precision). Then float_to_half runs on the model
 * with those nodes skipped; up to `rounds` (default 3) rounds repeat the
 * check on the result. Args as float_to_half plus data, samples, tolerance,
 * rounds. */
#include <math.h>
#include <string.h>
#include "passes/util_precision.h"

#define NAME "float_to_mixed"

/* Error of each converted output; pairs: original name, float16 name. */
static poprt_status measure(poprt__model *m, poprt__model *h, const poprt__vec *pairs,
                            const poprt__pdata *d, double *err, int *overflow)
{
    int n = (int)(pairs->len / 2);
    const char **on = poprt__calloc((size_t)n + 1, sizeof *on), **hn = poprt__calloc((size_t)n + 1, sizeof *hn);
    poprt__prunner *ro = NULL, *rh = NULL;
    poprt_status st = on && hn ? POPRT_OK : poprt__rw_oom();
    for (int i = 0; !st && i < n; i++) {
        on[i] = pairs->items[2 * i];
        hn[i] = pairs->items[2 * i + 1];
        err[i] = 0;
        overflow[i] = 0;
    }
    if (!st)
        st = poprt__prunner_create(m, n, on, d, &ro);
    if (!st)
        st = poprt__prunner_create(h, n, hn, d, &rh);
    for (int s = 0; !st && s < d->n_samples; s++) {
        const float *const *yo, *const *yh;
        const int64_t *no, *nh;
        st = poprt__prunner_run(ro, d, s, &yo, &no);
        if (!st)
            st = poprt__prunner_run(rh, d, s, &yh, &nh);
        for (int i = 0; !st && i < n; i++) {
            if (no[i] != nh[i] || no[i] <= 0)
                continue;
            /* the float16 result overflowed, or the float32 value cannot
             * be held by float16 (then readers overflow on their Cast) */
            for (int64_t k = 0; k < no[i] && !overflow[i]; k++)
                overflow[i] = isfinite(yo[i][k]) && (!isfinite(yh[i][k]) || fabsf(yo[i][k]) > 65504.0f);
            double e = poprt__metric_max_rel(yo[i], yh[i], no[i]);
            err[i] = e > err[i] ? e : err[i];
        }
    }
    poprt__prunner_free(ro);
    poprt__prunner_free(rh);
    poprt__free(on);
    poprt__free(hn);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"skip_op_types", "skip_op_names", "data", "samples",
                                        "tolerance", "rounds", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse(NAME, args, known, &a);
    double tol;
    int64_t samples, rounds;
    if (!st)
        st = poprt__pass_arg_float(NAME, &a, "tolerance", 1e-2, &tol);
    if (!st)
        st = poprt__pass_arg_int(NAME, &a, "samples", 1, &samples);
    if (!st)
        st = poprt__pass_arg_int(NAME, &a, "rounds", 3, &rounds);
    if (st)
        return st;
    *changed = 0;
    char b1[2048], b2[2048];
    const char *types[64], *names_user[64];
    int n_types = poprt__arg_list(poprt__pass_arg(&a, "skip_op_types"), b1, sizeof b1, types, 64);
    int n_user = poprt__arg_list(poprt__pass_arg(&a, "skip_op_names"), b2, sizeof b2, names_user, 64);
    poprt__vec skip = {0}, pairs = {0};
    for (int i = 0; i < n_user; i++)
        if (poprt__vec_push(&skip, (void *)names_user[i]))
            return poprt__rw_oom();
    poprt__pdata d = {0};
    const char *data = poprt__pass_arg(&a, "data");
    st = poprt__pdata_get(m, data, (int)samples, &d);
    if (st == POPRT_STATUS_UNSUPPORTED && !(data && *data)) {
        poprt__log(POPRT_LOG_WARNING, NAME ": no check (%s), converting as float_to_half",
                   poprt__last_error());
        poprt__err_clear();
        st = POPRT_OK;
        rounds = 0;
    }
    if (st) {
        poprt__vec_free(&skip);
        return st;
    }
    int flagged_total = 0;
    for (int r = 0; !st && r < rounds; r++) {
        poprt__model *h;
        if ((st = poprt__model_clone(m, &h)))
            break;
        poprt__half_opts o = {types, n_types, (const char *const *)skip.items, (int)skip.len};
        int nn = 0;
        pairs.len = 0;
        st = poprt__to_half(h, &o, &pairs, &nn);
        if (!st)
            st = poprt__model_check(h);
        int n = (int)(pairs.len / 2);
        double *err = poprt__calloc((size_t)n + 1, sizeof *err);
        int *ovf = poprt__calloc((size_t)n + 1, sizeof *ovf);
        if (!st && (!err || !ovf))
            st = poprt__rw_oom();
        /* outputs of nodes that turned out dead have no value to compare */
        int k2 = 0;
        for (int i = 0; !st && i < n; i++) {
            const poprt__tensor *t16 = poprt__graph_find(h->graph, pairs.items[2 * i + 1]);
            const poprt__tensor *t32 = poprt__graph_find(m->graph, pairs.items[2 * i]);
            if (t16 && t16->producer && t32 && t32->producer) {
                pairs.items[2 * k2] = pairs.items[2 * i];
                pairs.items[2 * k2 + 1] = pairs.items[2 * i + 1];
                k2++;
            }
        }
        n = k2;
        pairs.len = (size_t)(2 * n);
        if (!st && n)
            st = measure(m, h, &pairs, &d, err, ovf);
        if (st && st != POPRT_STATUS_OUT_OF_MEMORY && !(data && *data)) {
            poprt__log(POPRT_LOG_WARNING,
                       NAME ": the check cannot run on made-up inputs (give data=DIR), converting as "
                       "float_to_half: %s",
                       poprt__last_error());
            poprt__err_clear();
            st = POPRT_OK;
            n = 0;
            rounds = 0;
        }
        int flagged = 0;
        for (int i = 0; !st && i < n; i++) {
            const poprt__tensor *t = poprt__graph_find(m->graph, pairs.items[2 * i]);
            const poprt__node *p = t ? t->producer : NULL;
            if (!p)
                continue;
            double in_err = 0;
            for (int k = 0; k < p->n_inputs; k++)
                for (int j = 0; p->inputs[k] && j < n; j++)
                    if (strcmp(pairs.items[2 * j], p->inputs[k]->name) == 0 && err[j] > in_err)
                        in_err = err[j];
            poprt__log(POPRT_LOG_DEBUG, NAME ": round %d %s err %g in %g ovf %d", r, p->name, err[i], in_err, ovf[i]);
            if (ovf[i] || (err[i] > tol && err[i] > 2 * in_err)) {
                if (poprt__list_has((const char *const *)skip.items, (int)skip.len, p->name))
                    continue;
                if (poprt__vec_push(&skip, (void *)p->name)) {
                    st = poprt__rw_oom();
                    break;
                }
                flagged++;
                poprt__log(POPRT_LOG_INFO, NAME ": node '%s' (%s) stays float32: %s %.3g", p->name,
                           p->op_type, ovf[i] ? "float16 overflows;" : "error", err[i]);
                /* readers of a value float16 cannot hold stay float32 too */
                for (size_t k = 0; ovf[i] && !st && k < m->graph->nodes.len; k++) {
                    const poprt__node *q = m->graph->nodes.items[k];
                    int reads = 0;
                    for (int j = 0; j < q->n_inputs; j++)
                        reads |= q->inputs[j] == t;
                    if (reads && !poprt__list_has((const char *const *)skip.items, (int)skip.len, q->name)) {
                        st = poprt__vec_push(&skip, (void *)q->name) ? poprt__rw_oom() : POPRT_OK;
                        flagged++;
                    }
                }
            }
        }
        poprt__free(err);
        poprt__free(ovf);
        poprt__model_free(h);
        flagged_total += flagged;
        if (!flagged)
            break;
    }
    if (!st) {
        poprt__half_opts o = {types, n_types, (const char *const *)skip.items, (int)skip.len};
        int nn = 0;
        st = poprt__to_half(m, &o, NULL, &nn);
        *changed = nn > 0;
        if (!st)
            poprt__log(POPRT_LOG_INFO, NAME ": %d nodes in float16, %d kept in float32 by the check",
                       nn, flagged_total);
    }
    poprt__vec_free(&skip);
    poprt__vec_free(&pairs);
    poprt__pdata_free(&d);
    return st;
}

const poprt__pass poprt__pass_float_to_mixed = {
    NAME,
    "float16 except nodes a per-layer check on sample data flags (overflow or error > "
    "tolerance); args skip_op_types, skip_op_names, data=DIR, samples, tolerance=1e-2, rounds",
    run, 1};
