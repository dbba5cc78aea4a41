/* bf16_fallback: which nodes keep float32 products when the model runs with
 * the session option matmul_precision = bfloat16 (`--precision bf16`).
 *
 * The model stays float32; the pass only marks nodes: node metadata
 * "poprt.matmul_float32" = "1" (POPRT__META_MATMUL_FLOAT32, kept in the
 * saved ONNX file's metadata_props, which other runtimes ignore). The
 * session compiler prepares marked nodes for float32 (fusions that replace
 * them carry the mark over), the others for the bfloat16 kernels.
 *
 * Candidates: the nodes matmul_precision turns to bfloat16, Conv (not
 * depthwise), MatMul and Gemm reading a constant float weight as input 1.
 * `float32_nodes=[a,b]` marks named ones. `target_cosine=C` keeps the fewest
 * candidates with which every calibration sample's outputs, run in
 * bfloat16, keep a cosine >= C to float32's; `num_of_layers_keep_fp32=N`
 * the N that hurt most. The ranking is that of float_to_fp8 (util_precision:
 * poprt__choose_keep): each candidate by the error it alone causes at the
 * outputs, a trial with every other one kept float32. Trials run on this
 * CPU's kernels: on a CPU without bfloat16 ones every trial is float32 and
 * nothing is kept. */
#include <string.h>
#include "passes/passes.h"
#include "passes/rewrite.h"
#include "passes/util_precision.h"

#define NAME "bf16_fallback"

static const char *const bf16_opts[] = {"matmul_precision", "bfloat16", NULL};

/* n multiplies a constant float weight (input 1) under matmul_precision */
static int candidate(const poprt__node *n)
{
    const int conv = poprt__rw_is(n, "Conv"), mm = poprt__rw_is(n, "MatMul");
    if (!(conv || mm || poprt__rw_is(n, "Gemm")) || n->n_inputs < 2 || !n->inputs[0] ||
        !n->inputs[1])
        return 0;
    const float *w;
    int64_t nw;
    const poprt__tensor *wt = n->inputs[1];
    if (!poprt__const_f32(wt, &w, &nw) || nw <= 0)
        return 0;
    if (mm && wt->type.rank != 2)
        return 0;
    /* depthwise: group > 1 and one input channel per group */
    if (conv && poprt__attr_i(n, "group", 1) > 1 && wt->type.rank >= 3 &&
        wt->type.dims[1].value == 1)
        return 0;
    return 1;
}

static poprt_status mark(poprt__model *m, poprt__node *n)
{
    return poprt__rw_set_meta(m, &n->n_meta, &n->meta_keys, &n->meta_vals,
                              POPRT__META_MATMUL_FLOAT32, "1");
}

typedef struct trial_ctx {
    const poprt__model *m;
    const size_t *at; /* candidate i: node at[i] of the main graph */
    const poprt__pdata *d;
    poprt__cprog *pg;
} trial_ctx;

/* The model in bfloat16 with the candidates flagged in keep marked float32,
 * scored against ref (keep NULL: none kept). */
static poprt_status trial(void *ctx, const unsigned char *keep, const poprt__outset *ref,
                          double *mean_dist, double *worst)
{
    const trial_ctx *t = ctx;
    poprt__model *c = NULL;
    poprt_status st = poprt__model_clone(t->m, &c);
    for (size_t i = 0; !st && keep && t->at[i] != (size_t)-1; i++)
        if (keep[i])
            st = mark(c, c->graph->nodes.items[t->at[i]]);
    if (!st)
        st = poprt__run_outputs(c, bf16_opts, t->d, NULL, ref, mean_dist, worst, t->pg);
    poprt__model_free(c);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"target_cosine", "num_of_layers_keep_fp32",
                                        "float32_nodes", "calibration", "samples", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse(NAME, args, known, &a);
    double min_cos = 0;
    int64_t keep_n = 0, samples = 0;
    if (!st)
        st = poprt__pass_arg_float(NAME, &a, "target_cosine", 0, &min_cos);
    if (!st)
        st = poprt__pass_arg_int(NAME, &a, "num_of_layers_keep_fp32", 0, &keep_n);
    if (!st)
        st = poprt__pass_arg_int(NAME, &a, "samples", 0, &samples);
    if (st)
        return st;
    if (poprt__pass_arg(&a, "target_cosine") && !(min_cos > 0 && min_cos <= 1))
        return poprt__err(POPRT_STATUS_INVALID_OPTION, NAME ": target_cosine %g is not in (0, 1]",
                          min_cos);
    if (keep_n < 0 || samples < 0)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          NAME ": num_of_layers_keep_fp32 and samples must be >= 0");
    if (keep_n > 0 && min_cos > 0)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          NAME ": give num_of_layers_keep_fp32 or target_cosine, not both");
    if (!poprt__pass_arg(&a, "float32_nodes") && !(min_cos > 0) && keep_n == 0)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          NAME ": nothing to do: give float32_nodes=[..], target_cosine=C or "
                          "num_of_layers_keep_fp32=N");
    *changed = 0;
    poprt__graph *g = m->graph;
    /* named nodes first: each must be a candidate */
    char buf[4096];
    const char *names[256];
    const char *list = poprt__pass_arg(&a, "float32_nodes");
    int n_names = list ? poprt__arg_list(list, buf, sizeof buf, names, 256) : 0;
    if (n_names < 0)
        return poprt__err(POPRT_STATUS_INVALID_OPTION, NAME ": float32_nodes: malformed list");
    for (int i = 0; i < n_names; i++) {
        poprt__node *n = NULL;
        for (size_t j = 0; j < g->nodes.len && !n; j++) {
            poprt__node *x = g->nodes.items[j];
            if (x->name && strcmp(x->name, names[i]) == 0)
                n = x;
        }
        if (!n)
            return poprt__err(POPRT_STATUS_NOT_FOUND, NAME ": float32_nodes: no node '%s'",
                              names[i]);
        if (!candidate(n))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              NAME ": float32_nodes: node '%s' (%s) is not a Conv, MatMul or Gemm "
                              "with a constant float weight: matmul_precision leaves it as it is",
                              names[i], n->op_type);
        if ((st = mark(m, n)))
            return st;
        *changed = 1;
    }
    if (!(min_cos > 0) && keep_n == 0)
        return POPRT_OK;
    /* the search among the other candidates */
    size_t *at = poprt__calloc(g->nodes.len + 1, sizeof *at);
    const char **cand = poprt__calloc(g->nodes.len + 1, sizeof *cand);
    if (!at || !cand) {
        poprt__free(at);
        poprt__free(cand);
        return poprt__rw_oom();
    }
    int nt = 0;
    for (size_t j = 0; j < g->nodes.len; j++) {
        const poprt__node *n = g->nodes.items[j];
        const char *v = poprt__rw_meta(n, POPRT__META_MATMUL_FLOAT32);
        if (candidate(n) && !(v && strcmp(v, "1") == 0)) {
            at[nt] = j;
            cand[nt++] = n->name ? n->name : "(unnamed)";
        }
    }
    at[nt] = (size_t)-1;
    const char *dir = poprt__pass_arg(&a, "calibration");
    if (!dir || !*dir)
        poprt__log(POPRT_LOG_WARNING,
                   NAME ": no calibration data (calibration=DIR): ranking on random inputs");
    poprt__pdata d = {0};
    poprt__cprog pg = {0};
    unsigned char *keep = poprt__calloc((size_t)nt + 1, 1);
    st = keep ? poprt__pdata_get(m, dir && *dir ? dir : NULL,
                                 samples > 0 ? (int)samples : (dir && *dir ? 0 : 4), &d)
              : poprt__rw_oom();
    trial_ctx tc = {m, at, &d, &pg};
    int all_bf16 = 0;
    if (!st && nt > 0 && min_cos > 0) {
        /* nothing to search when bfloat16 everywhere reaches the target */
        poprt__outset ref = {0};
        double worst = 0;
        st = poprt__run_outputs(m, NULL, &d, &ref, NULL, NULL, NULL, &pg);
        if (!st)
            st = trial(&tc, NULL, &ref, NULL, &worst);
        poprt__outset_free(&ref);
        if (!st && worst >= min_cos) {
            all_bf16 = 1;
            poprt__log(POPRT_LOG_INFO,
                       NAME ": every one of %d nodes in bfloat16 keeps an output cosine >= %g on "
                       "every calibration sample (lowest %.5f): none kept float32",
                       nt, min_cos, worst);
        }
    }
    if (!st && nt > 0 && !all_bf16)
        st = poprt__choose_keep(NAME, "bfloat16", "float32", m, NULL, cand, nt, &d, keep_n,
                                min_cos, trial, &tc, &pg, keep);
    for (int i = 0; !st && i < nt; i++)
        if (keep[i]) {
            st = mark(m, g->nodes.items[at[i]]);
            *changed = 1;
        }
    if (st)
        st = poprt__err_prefix(st, "%s: ", NAME);
    poprt__pdata_free(&d);
    poprt__free(keep);
    poprt__free(at);
    poprt__free(cand);
    return st;
}

const poprt__pass poprt__pass_bf16_fallback = {
    NAME,
    "marks the Conv/MatMul/Gemm nodes whose products stay float32 under the session option "
    "matmul_precision=bfloat16 (node metadata poprt.matmul_float32; the model stays float32): "
    "float32_nodes=[..] by name; target_cosine=C the fewest with which every calibration "
    "sample's outputs keep a cosine >= C to float32's, or num_of_layers_keep_fp32=N the N that "
    "hurt most (each ranked by a trial run); args calibration=DIR, samples",
    run, 1};
