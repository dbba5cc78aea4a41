/* Helpers shared by the precision passes: data sets, a model runner that
 * fetches intermediate tensors, error metrics, list arguments. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "passes/util_precision.h"
#include "onnx/onnx.h"
#include "ir/dtype.h"

/* ---- data sets ------------------------------------------------------------ */

void poprt__pdata_free(poprt__pdata *d)
{
    if (!d)
        return;
    poprt__arena_free(&d->arena);
    memset(d, 0, sizeof *d);
}

static uint32_t xorshift(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

poprt_status poprt__pdata_random(const poprt__model *m, int samples, uint32_t seed,
                                 int64_t unknown_dim, poprt__pdata *out)
{
    memset(out, 0, sizeof *out);
    poprt__arena_init(&out->arena);
    poprt__vec ins = {0};
    poprt_status st = poprt__user_inputs(m->graph, &ins) ? poprt__rw_oom() : POPRT_OK;
    out->n_inputs = (int)ins.len;
    out->n_samples = samples;
    out->t = poprt__arena_array(&out->arena, (size_t)(samples * out->n_inputs + 1), sizeof *out->t);
    if (!st && !out->t)
        st = poprt__rw_oom();
    uint32_t rng = seed ? seed : 1;
    for (int s = 0; !st && s < samples; s++)
        for (size_t i = 0; !st && i < ins.len; i++) {
            const poprt__tensor *t = ins.items[i];
            poprt__ptensor *p = &out->t[s * out->n_inputs + (int)i];
            if (t->type.kind != POPRT__KIND_TENSOR || t->type.rank < 0 || !t->type.elem ||
                t->type.elem == POPRT_DTYPE_STRING) {
                st = poprt__err(POPRT_STATUS_UNSUPPORTED,
                                "input '%s': made-up data needs a tensor of known rank and type",
                                t->name);
                break;
            }
            p->name = t->name;
            p->dtype = t->type.elem;
            p->rank = t->type.rank;
            int64_t n = 1;
            for (int d = 0; d < p->rank; d++) {
                int64_t v = t->type.dims[d].value;
                p->dims[d] = v >= 0 ? v : (d == 0 ? 1 : unknown_dim);
                n *= p->dims[d];
            }
            size_t es = poprt__dtype_size((poprt_dtype)p->dtype);
            p->nbytes = (size_t)n * es;
            void *buf = poprt__arena_alloc(&out->arena, p->nbytes ? p->nbytes : 1);
            if (!buf) {
                st = poprt__rw_oom();
                break;
            }
            /* integers in [0, 4), or in the narrower range an index that
             * the input feeds accepts (a token type id below 2) */
            int64_t lo = 0, hi = 3, ilo, ihi;
            if (poprt__dtype_is_int(p->dtype)) {
                poprt__index_range(t, &ilo, &ihi);
                if (ihi < hi && ihi >= (ilo > 0 ? ilo : 0)) {
                    lo = ilo > 0 ? ilo : 0;
                    hi = ihi;
                }
            }
            for (int64_t k = 0; k < n; k++) {
                uint32_t r = xorshift(&rng);
                if (p->dtype == POPRT_DTYPE_BOOL)
                    ((uint8_t *)buf)[k] = r & 1;
                else if (poprt__dtype_is_int(p->dtype))
                    poprt__store_i64(buf, p->dtype, k, lo + (int64_t)(r % (uint32_t)(hi - lo + 1)));
                else
                    poprt__store_f64(buf, p->dtype, k, (double)r / 4294967296.0 * 2.0 - 1.0);
            }
            p->data = buf;
        }
    poprt__vec_free(&ins);
    if (st)
        poprt__pdata_free(out);
    return st;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in dir (sorted) that start with prefix; *n gets their number. */
static poprt_status list_dir(const char *dir, const char *prefix, int want_dirs, poprt__arena *a,
                             char ***names, int *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return poprt__err(POPRT_STATUS_IO_ERROR, "calibration data: cannot open folder '%s'", dir);
    int cap = 16;
    char **v = poprt__arena_array(a, (size_t)cap, sizeof *v);
    struct dirent *e;
    while (v && (e = readdir(d))) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char *path = poprt__arena_printf(a, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (!path || stat(path, &sb) != 0 || (S_ISDIR(sb.st_mode) != 0) != want_dirs)
            continue;
        if (*n == cap) {
            char **nv = poprt__arena_array(a, (size_t)cap * 2, sizeof *nv);
            if (nv)
                memcpy(nv, v, (size_t)cap * sizeof *v);
            v = nv;
            cap *= 2;
            if (!v)
                break;
        }
        v[(*n)++] = poprt__arena_strdup(a, e->d_name);
    }
    closedir(d);
    if (!v)
        return poprt__rw_oom();
    qsort(v, (size_t)*n, sizeof *v, cmp_str);
    *names = v;
    return POPRT_OK;
}

static poprt_status load_sample(const poprt__vec *ins, const char *dir, poprt__pdata *out,
                                poprt__ptensor *row)
{
    for (size_t i = 0; i < ins->len; i++)
        row[i].data = NULL;
    for (size_t k = 0; k < ins->len; k++) {
        char *path = poprt__arena_printf(&out->arena, "%s/input_%zu.pb", dir, k);
        if (!path)
            return poprt__rw_oom();
        poprt__blob *b;
        poprt_status st = poprt__blob_map_file(path, &b);
        if (st)
            return poprt__err_prefix(POPRT_STATUS_IO_ERROR, "calibration data: ");
        poprt__onnx_tensor t;
        st = poprt__onnx_decode_tensor(b->data, b->size, &out->arena, &t);
        const void *data = st ? NULL : poprt__arena_memdup(&out->arena, t.data, t.nbytes ? t.nbytes : 1);
        poprt__blob_unref(b);
        if (st)
            return poprt__err_prefix(st, "calibration file '%s': ", path);
        if (!data)
            return poprt__rw_oom();
        /* by name when the file names an input, else by position */
        size_t slot = k;
        for (size_t i = 0; t.name && t.name[0] && i < ins->len; i++)
            if (strcmp(((const poprt__tensor *)ins->items[i])->name, t.name) == 0)
                slot = i;
        const poprt__tensor *in = ins->items[slot];
        if (in->type.elem && t.type.elem != in->type.elem)
            return poprt__err(POPRT_STATUS_SHAPE_MISMATCH,
                              "calibration file '%s': dtype %s, input '%s' expects %s", path,
                              poprt__dtype_name((poprt_dtype)t.type.elem), in->name,
                              poprt__dtype_name((poprt_dtype)in->type.elem));
        if (t.type.rank > POPRT__MAX_RANK)
            return poprt__err(POPRT_STATUS_UNSUPPORTED, "calibration file '%s': rank too high", path);
        poprt__ptensor *p = &row[slot];
        p->name = in->name;
        p->dtype = t.type.elem;
        p->rank = t.type.rank;
        for (int d = 0; d < p->rank; d++)
            p->dims[d] = t.type.dims[d].value;
        p->data = data;
        p->nbytes = t.nbytes;
    }
    for (size_t i = 0; i < ins->len; i++)
        if (!row[i].data)
            return poprt__err(POPRT_STATUS_NOT_FOUND, "calibration folder '%s': no file for input '%s'",
                              dir, ((const poprt__tensor *)ins->items[i])->name);
    return POPRT_OK;
}

poprt_status poprt__pdata_load(const poprt__model *m, const char *dir, int max_samples,
                               poprt__pdata *out)
{
    memset(out, 0, sizeof *out);
    poprt__arena_init(&out->arena);
    poprt__vec ins = {0};
    poprt_status st = poprt__user_inputs(m->graph, &ins) ? poprt__rw_oom() : POPRT_OK;
    char **subs = NULL, **files = NULL;
    int n_subs = 0, n_files = 0;
    if (!st)
        st = list_dir(dir, "input_", 0, &out->arena, &files, &n_files);
    if (!st && n_files == 0)
        st = list_dir(dir, "", 1, &out->arena, &subs, &n_subs);
    int n = n_files ? 1 : n_subs;
    if (!st && max_samples > 0 && n > max_samples)
        n = max_samples;
    if (!st && n == 0)
        st = poprt__err(POPRT_STATUS_NOT_FOUND,
                        "calibration folder '%s' holds no input_K.pb files and no sample folders", dir);
    out->n_inputs = (int)ins.len;
    if (!st && !(out->t = poprt__arena_array(&out->arena, (size_t)(n * out->n_inputs + 1), sizeof *out->t)))
        st = poprt__rw_oom();
    for (int s = 0; !st && s < n; s++) {
        const char *sd = n_files ? dir : poprt__arena_printf(&out->arena, "%s/%s", dir, subs[s]);
        st = sd ? load_sample(&ins, sd, out, &out->t[s * out->n_inputs]) : poprt__rw_oom();
        out->n_samples = s + 1;
    }
    poprt__vec_free(&ins);
    if (st)
        poprt__pdata_free(out);
    return st;
}

poprt_status poprt__pdata_get(const poprt__model *m, const char *dir, int samples, poprt__pdata *out)
{
    if (dir && *dir)
        return poprt__pdata_load(m, dir, samples, out);
    return poprt__pdata_random(m, samples > 0 ? samples : 1, 1234, 64, out);
}

/* ---- runner ------------------------------------------------------------- */

struct poprt__prunner {
    const poprt__evaluator *eval;
    void *runner;
    int n;
    const char **names;
    poprt__eval_tensor *outs;
    float **bufs;
    int64_t *numel, *cap;
    int64_t (*dims)[POPRT__MAX_RANK];
    int *rank;
    poprt__arena arena;
};

const int64_t *poprt__prunner_dims(const poprt__prunner *r, int i, int *rank)
{
    *rank = r->numel[i] < 0 ? -1 : r->rank[i];
    return r->dims[i];
}

void poprt__prunner_free(poprt__prunner *r)
{
    if (!r)
        return;
    if (r->runner)
        r->eval->close(r->runner);
    for (int i = 0; i < r->n; i++)
        poprt__free(r->bufs ? r->bufs[i] : NULL);
    poprt__arena_free(&r->arena);
    poprt__free(r);
}

int poprt__prunner_count(const poprt__prunner *r) { return r->n; }
const char *poprt__prunner_name(const poprt__prunner *r, int i) { return r->names[i]; }

poprt_status poprt__prunner_create(const poprt__model *m, int n_names, const char *const *names,
                                   const poprt__pdata *shapes, poprt__prunner **out)
{
    return poprt__prunner_create_opts(m, n_names, names, shapes, NULL, out);
}

poprt_status poprt__prunner_create_opts(const poprt__model *m, int n_names,
                                        const char *const *names, const poprt__pdata *shapes,
                                        const char *const *opts, poprt__prunner **out)
{
    if (!m->eval || !m->eval->open)
        return poprt__err(POPRT_STATUS_INTERNAL,
                          "this pass runs the model: run it through a pass manager");
    poprt__prunner *r = poprt__calloc(1, sizeof *r);
    if (!r)
        return poprt__rw_oom();
    r->eval = m->eval;
    poprt__arena_init(&r->arena);
    poprt__model *c = NULL;
    poprt_status st = poprt__model_clone(m, &c);
    if (!st) {
        poprt__graph *g = c->graph;
        r->n = names ? n_names : (int)g->outputs.len;
        r->names = poprt__arena_array(&r->arena, (size_t)r->n + 1, sizeof *r->names);
        r->outs = poprt__arena_array(&r->arena, (size_t)r->n + 1, sizeof *r->outs);
        r->bufs = poprt__arena_array(&r->arena, (size_t)r->n + 1, sizeof *r->bufs);
        r->numel = poprt__arena_array(&r->arena, (size_t)r->n + 1, sizeof *r->numel);
        r->cap = poprt__arena_array(&r->arena, (size_t)r->n + 1, sizeof *r->cap);
        r->dims = poprt__arena_array(&r->arena, (size_t)r->n + 1, sizeof *r->dims);
        r->rank = poprt__arena_array(&r->arena, (size_t)r->n + 1, sizeof *r->rank);
        if (!r->names || !r->outs || !r->bufs || !r->numel || !r->cap || !r->dims || !r->rank)
            st = poprt__rw_oom();
        for (int i = 0; !st && i < r->n; i++) {
            poprt__tensor *t = names ? poprt__graph_find(g, names[i]) : g->outputs.items[i];
            if (!t || t->graph != g) {
                st = poprt__err(POPRT_STATUS_NOT_FOUND, "no tensor '%s' in the main graph", names[i]);
                break;
            }
            r->names[i] = poprt__arena_strdup(&r->arena, t->name);
            if (!r->names[i])
                st = poprt__rw_oom();
            else if (!t->is_output) {
                t->is_output = 1;
                st = poprt__graph_add_output(g, t);
            }
        }
    }
    /* symbolic input dims take the sample's shape */
    poprt__eval_tensor *fix = NULL;
    int n_fix = 0;
    if (!st && shapes && shapes->n_samples > 0 &&
        !(fix = poprt__arena_array(&r->arena, (size_t)shapes->n_inputs + 1, sizeof *fix)))
        st = poprt__rw_oom();
    for (int i = 0; !st && fix && i < shapes->n_inputs; i++) {
        const poprt__ptensor *p = &shapes->t[i];
        const poprt__tensor *t = poprt__graph_find(c->graph, p->name);
        int fixed = t && t->type.rank == p->rank;
        for (int d = 0; fixed && d < p->rank; d++)
            fixed = t->type.dims[d].value >= 0;
        if (!fixed)
            fix[n_fix++] = (poprt__eval_tensor){.name = p->name, .rank = p->rank, .dims = p->dims};
    }
    if (!st)
        st = r->eval->open(r->eval->ctx, c, n_fix, fix, opts, &r->runner);
    poprt__model_free(c);
    if (st) {
        poprt__prunner_free(r);
        return st;
    }
    *out = r;
    return POPRT_OK;
}

poprt_status poprt__prunner_run(poprt__prunner *r, const poprt__pdata *d, int s,
                                const float *const **out, const int64_t **numel)
{
    poprt__eval_tensor in[256];
    if (d->n_inputs > 256)
        return poprt__err(POPRT_STATUS_UNSUPPORTED, "more than 256 model inputs");
    for (int i = 0; i < d->n_inputs; i++) {
        const poprt__ptensor *p = &d->t[s * d->n_inputs + i];
        in[i] = (poprt__eval_tensor){p->name, p->dtype, p->rank, p->dims, p->data, p->nbytes};
    }
    poprt_status st = r->eval->run(r->runner, d->n_inputs, in, r->n, r->names, r->outs);
    for (int i = 0; !st && i < r->n; i++) {
        const poprt__eval_tensor *o = &r->outs[i];
        int32_t dt = o->dtype;
        r->numel[i] = -1;
        if (!dt || !o->data)
            continue;
        if (!poprt__dtype_is_float(dt) && !poprt__dtype_is_int(dt) && dt != POPRT_DTYPE_BOOL)
            continue;
        int64_t n = 1;
        for (int k = 0; k < o->rank; k++)
            n *= o->dims[k];
        r->rank[i] = o->rank < POPRT__MAX_RANK ? o->rank : POPRT__MAX_RANK;
        for (int k = 0; k < r->rank[i]; k++)
            r->dims[i][k] = o->dims[k];
        if (n > r->cap[i]) {
            float *b = poprt__realloc(r->bufs[i], (size_t)(n > 0 ? n : 1) * sizeof(float));
            if (!b) {
                st = poprt__rw_oom();
                break;
            }
            r->bufs[i] = b;
            r->cap[i] = n;
        }
        if (dt == POPRT_DTYPE_FLOAT)
            memcpy(r->bufs[i], o->data, (size_t)n * sizeof(float));
        else if (dt == POPRT_DTYPE_FLOAT16)
            for (int64_t k = 0; k < n; k++)
                r->bufs[i][k] = poprt__half_to_float(((const uint16_t *)o->data)[k]);
        else
            for (int64_t k = 0; k < n; k++)
                r->bufs[i][k] = (float)poprt__load_f64(o->data, dt, k);
        r->numel[i] = n;
    }
    if (!st) {
        *out = (const float *const *)r->bufs;
        *numel = r->numel;
    }
    return st;
}

/* ---- metrics -------------------------------------------------------------- */

double poprt__metric_cos_dist(const float *a, const float *b, int64_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(a[i]) || !isfinite(b[i])) {
            if (isfinite(a[i]) != isfinite(b[i]))
                return 1.0;
            continue;
        }
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    if (aa == 0 && bb == 0)
        return 0.0;
    if (aa == 0 || bb == 0)
        return 1.0;
    double c = ab / sqrt(aa * bb);
    return 1.0 - (c > 1.0 ? 1.0 : c);
}

double poprt__metric_max_rel(const float *ref, const float *b, int64_t n)
{
    double mx = 0, err = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(ref[i]) || !isfinite(b[i])) {
            if (!(ref[i] == b[i] || (isnan(ref[i]) && isnan(b[i]))))
                return INFINITY;
            continue;
        }
        double a = fabs((double)ref[i]), e = fabs((double)ref[i] - b[i]);
        mx = a > mx ? a : mx;
        err = e > err ? e : err;
    }
    return err / (mx > 1e-12 ? mx : 1e-12);
}

int poprt__metric_known(const char *kind)
{
    static const char *const k[] = {"mse", "mae", "snr", "kld", "cos_dist"};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (strcmp(kind, k[i]) == 0)
            return 1;
    return 0;
}

/* KL(P || Q) of |values| histograms over log2-spaced bins: fp8 is a
 * floating format, so relative (not absolute) resolution matters. */
static double kld(const float *ref, const float *b, int64_t n)
{
    enum { NB = 96 };
    double p[NB] = {0}, q[NB] = {0};
    float mx = 0;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(ref[i]) && fabsf(ref[i]) > mx)
            mx = fabsf(ref[i]);
    if (mx == 0)
        return 0;
    double top = log2((double)mx) + 1e-9;
    for (int64_t i = 0; i < n; i++) {
        double va = fabs((double)ref[i]), vb = fabs((double)b[i]);
        int ia = va > 0 ? (int)((top - log2(va)) * 4.0) : NB - 1;
        int ib = vb > 0 && isfinite(vb) ? (int)((top - log2(vb)) * 4.0) : NB - 1;
        ia = ia < 0 ? 0 : (ia >= NB ? NB - 1 : ia);
        ib = ib < 0 ? 0 : (ib >= NB ? NB - 1 : ib);
        p[ia] += 1;
        q[ib] += 1;
    }
    double r = 0;
    for (int i = 0; i < NB; i++)
        if (p[i] > 0)
            r += p[i] / (double)n * log((p[i] + 1e-3) / (q[i] + 1e-3));
    return r;
}

double poprt__metric_loss(const char *kind, const float *ref, const float *b, int64_t n)
{
    if (n <= 0)
        return 0;
    if (strcmp(kind, "cos_dist") == 0)
        return poprt__metric_cos_dist(ref, b, n);
    if (strcmp(kind, "kld") == 0)
        return kld(ref, b, n);
    double se = 0, ae = 0, sig = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = (double)ref[i] - b[i];
        if (!isfinite(d))
            return INFINITY;
        se += d * d;
        ae += fabs(d);
        sig += (double)ref[i] * ref[i];
    }
    if (strcmp(kind, "mae") == 0)
        return ae / (double)n;
    if (strcmp(kind, "snr") == 0)
        return se / (sig > 0 ? sig : 1e-30);
    return se / (double)n;
}

/* ---- arguments ------------------------------------------------------------ */

int poprt__arg_list(const char *text, char *buf, size_t bufsize, const char **items, int max)
{
    if (!text || !bufsize)
        return 0;
    size_t len = strlen(text);
    if (len >= bufsize)
        len = bufsize - 1;
    memcpy(buf, text, len);
    buf[len] = 0;
    char *p = buf;
    while (*p == '[' || *p == ' ')
        p++;
    char *e = p + strlen(p);
    while (e > p && (e[-1] == ']' || e[-1] == ' '))
        *--e = 0;
    int n = 0;
    while (*p && n < max) {
        while (*p == ' ')
            p++;
        char *q = p;
        while (*q && *q != ',' && *q != ';')
            q++;
        char *end = q;
        while (end > p && end[-1] == ' ')
            end--;
        int more = *q != 0;
        *end = 0;
        if (*p)
            items[n++] = p;
        p = more ? q + 1 : q;
    }
    return n;
}

int poprt__list_has(const char *const *items, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(items[i], s) == 0)
            return 1;
    return 0;
}

poprt_status poprt__load_origin(const poprt__model *m, const char *path, const char *pass,
                                poprt__model **out)
{
    if (!path || !*path)
        path = m->path;
    if (!path)
        return poprt__err(POPRT_STATUS_NOT_FOUND,
                          "%s: no original model to compare with (give origin=PATH; the "
                          "model was not loaded from a file)",
                          pass);
    poprt__model *o = NULL;
    poprt_status st = poprt__onnx_load_file(path, NULL, &o);
    if (!st)
        st = poprt__model_inline_functions(o);
    if (!st)
        st = poprt__model_check(o);
    if (st) {
        if (o)
            poprt__model_free(o);
        return poprt__err_prefix(st, "original model '%s': ", path);
    }
    o->eval = m->eval; /* evaluated as the pass's own model is */
    *out = o;
    return POPRT_OK;
}

int poprt__const_f32(const poprt__tensor *t, const float **data, int64_t *n)
{
    if (!t || t->type.kind != POPRT__KIND_TENSOR || t->type.elem != POPRT_DTYPE_FLOAT || t->is_input)
        return 0;
    if (t->raw) {
        *data = poprt__tensor_data(t);
        *n = (int64_t)(t->nbytes / sizeof(float));
        return *data != NULL; /* NULL: no memory to read it */
    }
    const poprt__node *p = t->producer;
    if (!p || strcmp(p->op_type, "Constant") != 0 || p->domain[0])
        return 0;
    const poprt__attr *a = poprt__node_attr(p, "value");
    if (a && a->type == POPRT__ATTR_TENSOR && a->t && a->t->raw &&
        a->t->type.elem == POPRT_DTYPE_FLOAT) {
        *data = poprt__tensor_data(a->t);
        *n = (int64_t)(a->t->nbytes / sizeof(float));
        return *data != NULL;
    }
    a = poprt__node_attr(p, "value_float");
    if (a && a->type == POPRT__ATTR_FLOAT) {
        *data = &a->f;
        *n = 1;
        return 1;
    }
    return 0;
}

void poprt__quantize_columns(const float *w, int64_t K, int64_t N, int64_t rs, int64_t cs,
                             float alpha, int8_t *q, int64_t qrs, int64_t qcs, float *s)
{
    poprt__quantize_columns_to(w, K, N, rs, cs, alpha, 127, q, qrs, qcs, s);
}

void poprt__quantize_columns_to(const float *w, int64_t K, int64_t N, int64_t rs, int64_t cs,
                                float alpha, int qmax, int8_t *q, int64_t qrs, int64_t qcs,
                                float *s)
{
    for (int64_t j = 0; j < N; j++) {
        double amax = 0;
        for (int64_t k = 0; k < K; k++) {
            const double v = fabs((double)alpha * w[k * rs + j * cs]);
            if (v > amax)
                amax = v;
        }
        const double sc = amax > 0 && isfinite(amax) ? amax / qmax : 1.0;
        s[j] = (float)sc;
        for (int64_t k = 0; k < K; k++) {
            double v = nearbyint((double)alpha * w[k * rs + j * cs] / sc);
            v = v > qmax ? qmax : v < -qmax ? -qmax : isnan(v) ? 0 : v;
            q[k * qrs + j * qcs] = (int8_t)v;
        }
    }
}

int poprt__int8_takes(const poprt__node *n, const char *const *skip, int n_skip,
                      int64_t min_size)
{
    if (n->n_inputs < 2 || !n->inputs[0] || !n->inputs[1] || n->n_outputs < 1 ||
        !n->outputs[0] || poprt__list_has(skip, n_skip, n->name) ||
        n->inputs[0]->type.elem != POPRT_DTYPE_FLOAT)
        return 0;
    int64_t wd[POPRT__MAX_RANK], numel;
    if (!poprt__rw_f32(n->inputs[1], POPRT__RW_DATA, &numel))
        return 0;
    const int wr = poprt__rw_dims(n->inputs[1], wd);
    if (poprt__rw_is(n, "Conv")) {
        if (wr < 3 || numel <= 0 || wd[0] <= 0)
            return 0;
        const poprt__tensor *b = n->n_inputs > 2 ? n->inputs[2] : NULL;
        int64_t bn;
        if (b && (!poprt__rw_f32(b, POPRT__RW_DATA, &bn) || bn != wd[0]))
            return 0;
        return wd[0] >= min_size && numel / wd[0] >= min_size;
    }
    if (wr != 2 || poprt__rw_rank(n->inputs[0]) < 2)
        return 0;
    int tb = 0;
    if (poprt__rw_is(n, "Gemm")) {
        if (poprt__attr_i(n, "transA", 0) != 0)
            return 0;
        tb = poprt__attr_i(n, "transB", 0) != 0;
    }
    return wd[tb ? 1 : 0] >= min_size && wd[tb ? 0 : 1] >= min_size;
}

/* ---- trials against the float32 outputs ---- */

void poprt__cprog_begin(poprt__cprog *p, uint64_t total)
{
    *p = (poprt__cprog){0, total};
    if (total)
        poprt__progress("calibration", NULL, 0, total);
}

void poprt__cprog_tick(poprt__cprog *p, const char *item)
{
    if (p->total)
        poprt__progress("calibration", item, ++p->done, p->total);
}

void poprt__outset_free(poprt__outset *o)
{
    for (int i = 0; o->v && i < o->n * o->n_samples; i++)
        poprt__free(o->v[i]);
    poprt__free(o->v);
    poprt__free(o->nv);
    memset(o, 0, sizeof *o);
}

poprt_status poprt__run_outputs(const poprt__model *m, const char *const *opts,
                                const poprt__pdata *d, poprt__outset *keep_to,
                                const poprt__outset *ref, double *mean_dist, double *worst,
                                poprt__cprog *pg)
{
    poprt__prunner *r;
    poprt_status st = poprt__prunner_create_opts(m, 0, NULL, d, opts, &r);
    if (st)
        return st;
    int n = poprt__prunner_count(r);
    size_t cells = (size_t)n * (size_t)d->n_samples + 1;
    if (keep_to) {
        keep_to->n = n;
        keep_to->n_samples = d->n_samples;
        keep_to->v = poprt__calloc(cells, sizeof *keep_to->v);
        keep_to->nv = poprt__calloc(cells, sizeof *keep_to->nv);
        if (!keep_to->v || !keep_to->nv)
            st = poprt__rw_oom();
    }
    double sum = 0, low = 1;
    int64_t count = 0;
    for (int s = 0; !st && s < d->n_samples; s++) {
        const float *const *y;
        const int64_t *ny;
        if ((st = poprt__prunner_run(r, d, s, &y, &ny)))
            break;
        poprt__cprog_tick(pg, "trial");
        for (int k = 0; k < n && !st; k++) {
            size_t at = (size_t)s * (size_t)n + (size_t)k;
            if (keep_to) {
                keep_to->nv[at] = ny[k];
                if (ny[k] > 0 && !(keep_to->v[at] = poprt__malloc((size_t)ny[k] * sizeof(float))))
                    st = poprt__rw_oom();
                else if (ny[k] > 0)
                    memcpy(keep_to->v[at], y[k], (size_t)ny[k] * sizeof(float));
            } else if (ref->nv[at] > 0) {
                double dist = ny[k] == ref->nv[at] ? poprt__metric_cos_dist(ref->v[at], y[k], ny[k])
                                                   : 1.0;
                sum += dist;
                count++;
                if (1 - dist < low)
                    low = 1 - dist;
            }
        }
    }
    poprt__prunner_free(r);
    if (mean_dist)
        *mean_dist = count ? sum / (double)count : 0;
    if (worst)
        *worst = low;
    return st;
}

typedef struct rank_item {
    int target;
    double loss;
} rank_item;

static int cmp_rank(const void *a, const void *b)
{
    const rank_item *x = a, *y = b;
    if (x->loss != y->loss)
        return x->loss < y->loss ? 1 : -1;
    return x->target - y->target;
}

poprt_status poprt__choose_keep(const char *pass, const char *nodes_as, const char *kept_as,
                                const poprt__model *m,
                                const char *const *ref_opts, const char *const *names, int nt,
                                const poprt__pdata *d, int64_t keep_n, double min_cos,
                                poprt__trial_fn trial, void *ctx, poprt__cprog *pg,
                                unsigned char *keep)
{
    poprt__outset ref = {0};
    rank_item *rk = poprt__calloc((size_t)nt + 1, sizeof *rk);
    unsigned char *mask = poprt__malloc((size_t)nt + 1);
    /* a job of its own: the reference run, one trial per target, the bisection */
    uint64_t runs = 1 + (uint64_t)nt;
    if (min_cos > 0) { /* the bisection: at most 2 + log2(nt + 1) trials */
        runs += 2;
        for (int64_t span = nt + 1; span > 1; span = (span + 1) / 2)
            runs++;
    }
    poprt__cprog_begin(pg, runs * (uint64_t)d->n_samples);
    poprt_status st = rk && mask ? poprt__run_outputs(m, ref_opts, d, &ref, NULL, NULL, NULL, pg)
                                 : poprt__rw_oom();
    for (int i = 0; !st && i < nt; i++) {
        memset(mask, 1, (size_t)nt);
        mask[i] = 0;
        rk[i].target = i;
        st = trial(ctx, mask, &ref, &rk[i].loss, NULL);
    }
    if (!st)
        qsort(rk, (size_t)nt, sizeof *rk, cmp_rank);
    int k = (int)(keep_n < nt ? keep_n : nt);
    double worst = 1;
    if (!st && min_cos > 0) {
        /* lo: a count that misses min_cos; hi: one that reaches it
         * (keeping all of them is the reference model) */
        int lo = -1, hi = nt;
        while (!st && hi - lo > 1) {
            int mid = lo < 0 ? 0 : lo + (hi - lo) / 2;
            double w;
            memset(mask, 0, (size_t)nt);
            for (int i = 0; i < mid; i++)
                mask[rk[i].target] = 1;
            if ((st = trial(ctx, mask, &ref, NULL, &w)))
                break;
            if (w >= min_cos) {
                hi = mid;
                worst = w;
            } else
                lo = mid;
        }
        k = hi;
        if (!st)
            poprt__log(POPRT_LOG_INFO,
                       "%s: %d of %d %s nodes kept %s for an output cosine >= %g on every "
                       "calibration sample (lowest %.5f)",
                       pass, k, nt, nodes_as, kept_as, min_cos, k == nt ? 1.0 : worst);
    }
    if (!st && pg->total)
        poprt__progress("calibration", NULL, pg->total, pg->total);
    for (int i = 0; !st && i < k; i++) {
        keep[rk[i].target] = 1;
        poprt__log(POPRT_LOG_INFO, "%s: keeping '%s' %s (alone it moves the outputs' cosine by %.3g)",
                   pass, names[rk[i].target], kept_as, rk[i].loss);
    }
    poprt__outset_free(&ref);
    poprt__free(rk);
    poprt__free(mask);
    return st;
}
