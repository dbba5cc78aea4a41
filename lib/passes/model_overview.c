/* model_overview: a readable report of the model: inputs and outputs,
 * operator histogram, parameter count and weight memory by dtype, FLOPs of
 * MatMul/Gemm/Conv/ConvTranspose (multiply-add = 2 FLOPs, for the inferred
 * shapes; dims that are unknown are reported, not guessed), and activation
 * memory (sum of all intermediate tensors, i.e. with no buffer reuse, and
 * the largest one). Written to the log at INFO, one line per log call, and
 * to the file given by output=PATH. Does not change the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "passes/util_precision.h"

typedef struct hist {
    const char *op;
    int64_t count;
} hist;

typedef struct stats {
    hist *h;
    int nh, caph;
    int64_t nodes;
    double flops;
    int flops_unknown;
} stats;

static int64_t dimv(const poprt__tensor *t, int i)
{
    return (t && t->type.kind == POPRT__KIND_TENSOR && i >= 0 && i < t->type.rank)
               ? t->type.dims[i].value
               : -1;
}

static int64_t numel(const poprt__tensor *t)
{
    return t && t->type.kind == POPRT__KIND_TENSOR ? poprt__type_numel(&t->type) : -1;
}

/* FLOPs of one node, -1 when a needed dim is unknown, 0 for other ops. */
static double node_flops(const poprt__node *n)
{
    const poprt__tensor *a = poprt__node_in(n, 0), *b = poprt__node_in(n, 1), *y = poprt__node_out(n, 0);
    if (strcmp(n->op_type, "MatMul") == 0 || strcmp(n->op_type, "Gemm") == 0) {
        int64_t ny = numel(y);
        int64_t k;
        if (strcmp(n->op_type, "Gemm") == 0)
            k = poprt__attr_i(n, "transA", 0) ? dimv(a, 0) : dimv(a, 1);
        else
            k = a && a->type.rank >= 1 ? dimv(a, a->type.rank - 1) : -1;
        return ny < 0 || k < 0 ? -1 : 2.0 * (double)ny * (double)k;
    }
    if (strcmp(n->op_type, "Conv") == 0 || strcmp(n->op_type, "ConvTranspose") == 0) {
        int64_t nw = numel(b), ny = numel(y), nx = numel(a);
        if (nw < 0 || ny < 0 || nx < 0 || !b || b->type.rank < 1)
            return -1;
        int64_t g = poprt__attr_i(n, "group", 1);
        if (strcmp(n->op_type, "Conv") == 0) {
            /* each output element: (Cin/g)*k MACs = numel(W) / Cout */
            int64_t cout = dimv(b, 0);
            return cout <= 0 ? -1 : 2.0 * (double)ny * (double)nw / (double)cout;
        }
        /* ConvTranspose: each input element scatters Cout/g * k values */
        int64_t cin = dimv(b, 0);
        (void)g;
        return cin <= 0 ? -1 : 2.0 * (double)nx * (double)nw / (double)cin;
    }
    return 0;
}

static poprt_status walk(const poprt__graph *g, stats *s);

static poprt_status walk_body(poprt__graph *body, void *s)
{
    return walk(body, s);
}

static poprt_status walk(const poprt__graph *g, stats *s)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        s->nodes++;
        int k = 0;
        while (k < s->nh && strcmp(s->h[k].op, n->op_type) != 0)
            k++;
        if (k == s->nh) {
            if (s->nh == s->caph) {
                int cap = s->caph ? s->caph * 2 : 64;
                hist *h = poprt__realloc(s->h, (size_t)cap * sizeof *h);
                if (!h)
                    return poprt__rw_oom();
                s->h = h;
                s->caph = cap;
            }
            s->h[s->nh].op = n->op_type;
            s->h[s->nh++].count = 0;
        }
        s->h[k].count++;
        double f = node_flops(n);
        if (f < 0)
            s->flops_unknown++;
        else
            s->flops += f;
        poprt_status st = poprt__rw_each_body(n, walk_body, s);
        if (st)
            return st;
    }
    return POPRT_OK;
}

static int cmp_hist(const void *a, const void *b)
{
    const hist *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->op, y->op);
}

static const char *human(char *buf, size_t n, double v, const char *unit)
{
    static const char *const p[] = {"", "K", "M", "G", "T"};
    int i = 0;
    while (v >= 1000.0 && i < 4) {
        v /= 1000.0;
        i++;
    }
    snprintf(buf, n, i ? "%.2f %s%s" : "%.0f %s%s", v, p[i], unit);
    return buf;
}

static void describe_io(poprt__text *t, poprt__model *m, const poprt__vec *v, const char *what)
{
    for (size_t i = 0; i < v->len; i++) {
        const poprt__tensor *x = v->items[i];
        if (x->is_initializer)
            continue;
        poprt__text_printf(t, "  %-7s %s: %s\n", what, x->name,
                           poprt__type_str(&m->arena, &x->type));
    }
}

static poprt_status report(poprt__model *m, poprt__text *t)
{
    poprt__graph *g = m->graph;
    stats s = {0};
    poprt_status st = walk(g, &s);
    if (st) {
        poprt__free(s.h);
        return st;
    }
    char b1[64], b2[64];
    poprt__text_printf(t, "model overview: %s (opset %lld, producer '%s')\n",
                       g->name ? g->name : "", (long long)poprt__model_opset(m, ""),
                       m->producer_name ? m->producer_name : "");
    describe_io(t, m, &g->inputs, "input");
    describe_io(t, m, &g->outputs, "output");
    /* parameters: constant tensors of the main graph */
    int64_t params = 0, per_dt[32] = {0};
    size_t bytes = 0, per_dt_bytes[32] = {0};
    int n_const = 0;
    int64_t act_unknown = 0;
    double act = 0, act_max = 0;
    const char *act_max_name = "";
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *x = g->tensors.items[i];
        if (x->raw && !x->producer) {
            int64_t ne = numel(x);
            if (ne < 0)
                continue;
            n_const++;
            params += ne;
            bytes += x->nbytes;
            int dt = x->type.elem >= 0 && x->type.elem < 32 ? x->type.elem : 0;
            per_dt[dt] += ne;
            per_dt_bytes[dt] += x->nbytes;
        } else if (x->producer && !x->raw) {
            int64_t ne = numel(x);
            size_t es = poprt__dtype_size((poprt_dtype)x->type.elem);
            if (ne < 0 || !es) {
                act_unknown++;
                continue;
            }
            double b = (double)ne * (double)es;
            act += b;
            if (b > act_max) {
                act_max = b;
                act_max_name = x->name;
            }
        }
    }
    poprt__text_printf(t, "  nodes: %lld (main graph %zu), operator types: %d\n",
                       (long long)s.nodes, g->nodes.len, s.nh);
    poprt__text_printf(t, "  parameters: %s in %d constant tensors, %s\n",
                       human(b1, sizeof b1, (double)params, ""), n_const,
                       human(b2, sizeof b2, (double)bytes, "B"));
    for (int dt = 0; dt < 32; dt++)
        if (per_dt[dt])
            poprt__text_printf(t, "    %-14s %14lld values %14zu bytes\n",
                               poprt__dtype_name((poprt_dtype)dt), (long long)per_dt[dt],
                               per_dt_bytes[dt]);
    poprt__text_printf(t, "  FLOPs (MatMul, Gemm, Conv, ConvTranspose): %s%s\n",
                       human(b1, sizeof b1, s.flops, "FLOP"),
                       s.flops_unknown ? " (plus nodes with unknown shapes)" : "");
    if (s.flops_unknown)
        poprt__text_printf(
            t, "    %d of those nodes have unknown dims (fix input shapes to count them)\n",
            s.flops_unknown);
    poprt__text_printf(
        t, "  activations: %s in all intermediate tensors (no reuse), largest %s (%s)\n",
        human(b1, sizeof b1, act, "B"), human(b2, sizeof b2, act_max, "B"), act_max_name);
    if (act_unknown)
        poprt__text_printf(
            t, "    %lld intermediate tensors have unknown shapes and are not counted\n",
            (long long)act_unknown);
    qsort(s.h, (size_t)s.nh, sizeof *s.h, cmp_hist);
    poprt__text_printf(t, "  operator histogram:\n");
    for (int k = 0; k < s.nh; k++)
        poprt__text_printf(t, "    %-28s %8lld\n", s.h[k].op, (long long)s.h[k].count);
    poprt__free(s.h);
    return t->oom ? poprt__rw_oom() : POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"output", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse("model_overview", args, known, &a);
    *changed = 0;
    if (st)
        return st;
    poprt__text t = {0};
    st = report(m, &t);
    if (!st && poprt__log_enabled(POPRT_LOG_INFO)) {
        for (char *p = t.s; p && *p;) {
            char *e = strchr(p, '\n');
            if (e)
                *e = 0;
            poprt__log(POPRT_LOG_INFO, "%s", p);
            if (!e)
                break;
            *e = '\n';
            p = e + 1;
        }
    }
    const char *path = poprt__pass_arg(&a, "output");
    if (!st && path && *path) {
        st = poprt__write_file(path, t.s ? t.s : "", t.len);
    }
    poprt__free(t.s);
    return st;
}

const poprt__pass poprt__pass_model_overview = {
    "model_overview",
    "report operator histogram, parameters, FLOPs and memory (log at INFO; args output=PATH)",
    run, 1};
