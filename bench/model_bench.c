/* Model latency benchmark: libpoprt next to ONNX Runtime, in one run.
 *
 *   model_bench [--threads N] [--ort] [--iters N] [--runs N] [--warmup N]
 *               [--round-time S] [--startup N] [--headline L] DIR...
 *
 * Each DIR is a model folder (model.onnx + test_data_set_0/input_K.pb, with
 * output_K.pb checked when present) or a folder of model folders. For each
 * model, libpoprt runs in a child process of its own (so the peak resident
 * memory reported is that model's): it loads the model through the public
 * API, fixes symbolic input dims from the data ("input_shape.<name>"),
 * creates a session with the thread count, runs once and checks the outputs
 * (|got - expected| <= 1e-5 + 1e-3 * |expected|, integers exact), then
 * times runs when the parent asks. With --ort, ONNX Runtime runs the same
 * model on the same inputs (written raw by the libpoprt child, with the
 * reference outputs it checks its first run against) in a Node.js child
 * (bench/ort_bench_loop.js, onnxruntime-node, options as
 * ../shared/bench/ort/bench.js), on a copy of the model with the symbolic
 * input dims set when there are any (the shapes libpoprt compiles for); at 2+
 * threads it is timed with intra-op spinning on and off, and the better
 * counts. The parent alternates the engines in --runs rounds (ABBA order) so
 * machine noise hits all alike; each round is a few untimed runs and then
 * timed runs, and a figure is the median over rounds of the rounds' medians.
 * Only one engine runs at a time (the others are stopped with SIGSTOP).
 * --startup N also times start-up in fresh processes, two ways: .popef load
 * + first run against ONNX Runtime loading the model it optimised and saved
 * itself (optimisation off), and load + compile + first run against ONNX
 * Runtime's create + first run (see bench/README.md).
 *
 * Prints a table row per model and, last, the models left out of the means
 * (outputs not matching the reference), the headline geomean over a fixed
 * list of model names (--headline; default the 7 larger models) and
 *   geomean ratio poprt/ort: R over N models
 * (R is "n/a (ONNX Runtime not available)" without node/onnxruntime-node).
 *
 * Environment: NODE (node binary, default "node" on PATH), ORT_NODE_MODULES
 * (onnxruntime-node install, default ~/.cache/poprt-ort/node_modules),
 * MODEL_BENCH_ORT_SCRIPT (the Node script, default the source tree's). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "poprt/poprt.h"
#include "ir/dtype.h"
#include "testdata.h"

#ifndef MODEL_BENCH_ORT_SCRIPT
#define MODEL_BENCH_ORT_SCRIPT "ort_bench_loop.js"
#endif

/* The headline geomean is over this fixed list (issue 19's "7 larger
 * models"), never over models chosen by their measured times. */
#define DEFAULT_HEADLINE                                                                         \
    "oww_embedding,ppocr_mobile_v2_cls,ppocr_v4_det,light_resnet50,light_squeezenet,minilm_l6," \
    "bert_base"
#define ATOL 1e-5
#define RTOL 1e-3
#define LINE_MAX_ 8192

typedef struct config {
    int threads;
    int ort;
    int iters;        /* timed runs per round; 0: from --round-time */
    int runs;         /* rounds */
    int warmup;       /* untimed runs per round; -1: automatic */
    double round_time; /* seconds of timed runs per engine and round */
    const char *node;
    const char *script;
    int startup; /* fresh processes per engine for the start-up figure; 0: off */
    int profile; /* kernel time per operator type, both engines */
    const char *opt_kv[16]; /* --option KEY=VALUE: libpoprt session options */
    int n_opt;
    double cosine; /* > 0: float outputs pass by cosine similarity >= this */
} config;

static config cfg = {1, 0, 0, 5, -1, 0.5, "node", MODEL_BENCH_ORT_SCRIPT, 0, 0, {0}, 0, 0};
/* the smallest cosine similarity of an output against its expected value
 * in the last check (--cosine) */
static double g_cos_min;
static const char *g_headline = DEFAULT_HEADLINE;

/* Whether name is one of the comma-separated list's names. */
static int in_list(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return 1;
        if (!e)
            break;
        p = e + 1;
    }
    return 0;
}

/* --profile: an engine's kernel time per operator type, per run, and of
 * its convolutions and matrix products per shape (key "OUT/wN": the
 * output's dims without leading 1s and a conv's weight count, e.g.
 * 256x56x56/w16384; a matrix product's "OUT/mm", as ONNX Runtime's trace
 * omits the weights it packed; the same in both engines whatever else they
 * fuse) as the nodes' mean time per call, summed over the nodes of that
 * shape. */
#define PROF_MAX 64
#define PROF_SHAPES 256
typedef struct profile {
    int n;
    char op[PROF_MAX][48];
    double ms[PROF_MAX]; /* per run */
    int ns;
    char key[PROF_SHAPES][96];
    double sms[PROF_SHAPES]; /* per run */
    int nodes[PROF_SHAPES];
} profile;

/* Index of shape key in p's table, or -1. */
static int prof_shape_find(const profile *p, const char *key) {
    for (int i = 0; i < p->ns; i++)
        if (!strcmp(p->key[i], key))
            return i;
    return -1;
}

/* Adds nodes of shape key taking ms per run to p's shape table (a full
 * table drops new keys). */
static void prof_shape_add(profile *p, const char *key, double ms, int nodes) {
    int i = prof_shape_find(p, key);
    if (i < 0) {
        i = p->ns;
        if (p->ns == PROF_SHAPES)
            return;
        snprintf(p->key[p->ns], sizeof p->key[0], "%s", key);
        p->sms[p->ns] = 0;
        p->nodes[p->ns++] = 0;
    }
    p->sms[i] += ms;
    p->nodes[i] += nodes;
}

/* The operators whose per-shape time --profile lists. */
static int prof_shape_op(const char *op) {
    return strstr(op, "Conv") || strstr(op, "MatMul") || strstr(op, "Gemm");
}

/* With --startup: the executable file the libpoprt child exports after its
 * first run (set by the parent before the fork). */
static char g_popef[4200];
/* start-up child: 0 loads g_popef, 1 compiles the folder's model.onnx */
static int g_startup_compile;

/* VmHWM before the --startup export (-1: none): see the export */
static long g_hwm_pre_export_kb = -1;

static long vm_hwm_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

/* ------------------------------------------------------------ utilities */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "model_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of this process (all threads), ms. */
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Busy time of the whole machine from /proc/stat (all fields but idle and
 * iowait), ms; -1 off Linux. */
static double machine_busy_ms(void) {
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[10] = {0};
    if (!f)
        return -1;
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (n < 4)
        return -1;
    unsigned long long busy = 0;
    for (int i = 0; i < n; i++)
        if (i != 3 && i != 4)
            busy += v[i];
    return (double)busy * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The name without trailing slashes, in a static buffer. */
static const char *model_name(const char *dir) {
    static char buf[256];
    const char *s = td_base_name(dir);
    size_t n = strcspn(s, "/");
    if (n >= sizeof buf)
        n = sizeof buf - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    return buf;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Reads one line from fd (unbuffered, so nothing is read past it).
 * Returns 0 at end of file or on error. */
static int read_line(int fd, char *buf, size_t size) {
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            buf[n] = 0;
            return 0;
        }
        if (c == '\n')
            break;
        if (n + 1 < size)
            buf[n++] = c;
    }
    buf[n] = 0;
    return 1;
}

static int write_all(int fd, const char *s) {
    size_t len = strlen(s), off = 0;
    while (off < len) {
        ssize_t w = write(fd, s + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return 0;
        off += (size_t)w;
    }
    return 1;
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...) {
    char buf[LINE_MAX_];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    /* one line per message: newlines inside become spaces */
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    strcat(buf, "\n");
    write_all(fd, buf);
}

/* ------------------------------------------- libpoprt child: the model */

typedef struct pchild {
    poprt__arena arena;
    poprt_model *model;
    poprt_session *sess;
    poprt_stepio *io;
    size_t n_in, n_out;
    poprt_value_info *in_info;
    poprt__onnx_tensor *ins; /* decoded inputs (n_given of them) */
    size_t n_given;
    char **out_names;
    void **out_bufs;
    poprt__onnx_tensor *exp; /* decoded output_K.pb (exp_given[k] when present) */
    unsigned char *exp_given;
} pchild;

static int decode_pb(const char *path, poprt__arena *arena, poprt__onnx_tensor *t, char *why,
                     size_t why_size) {
    void *buf;
    size_t size;
    if (!td_read_file(path, arena, &buf, &size)) {
        snprintf(why, why_size, "cannot read %s", path);
        return 0;
    }
    poprt_status st = poprt__onnx_decode_tensor(buf, size, arena, t);
    if (st != POPRT_OK) {
        snprintf(why, why_size, "%s: %s: %s", path, poprt_status_string(st), poprt_last_error());
        return 0;
    }
    return 1;
}

/* Compares one output with its expected value by the conformance rule. */
static int compare(const char *name, poprt_dtype dt, int rank, const int64_t *dims,
                   const void *got, size_t got_bytes, const poprt__onnx_tensor *exp, char *why,
                   size_t why_size, double *worst) {
    if ((int32_t)dt != exp->type.elem) {
        snprintf(why, why_size, "output '%s' dtype %s, expected %s", name, poprt_dtype_name(dt),
                 poprt_dtype_name((poprt_dtype)exp->type.elem));
        return 0;
    }
    int same = rank == exp->type.rank;
    for (int d = 0; same && d < rank; d++)
        same = dims[d] == exp->type.dims[d].value;
    if (!same) {
        snprintf(why, why_size, "output '%s' shape differs from the expected one", name);
        return 0;
    }
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    size_t esz = poprt_dtype_size(dt);
    if (dt == POPRT_DTYPE_STRING || got_bytes < (size_t)n * esz || exp->nbytes < (size_t)n * esz) {
        snprintf(why, why_size, "output '%s': cannot compare (%s, %zu bytes)", name,
                 poprt_dtype_name(dt), got_bytes);
        return 0;
    }
    if (poprt__dtype_is_float(dt) && cfg.cosine > 0) {
        /* lower-precision arithmetic (--option matmul_precision=bfloat16):
         * the output's direction, not each element, is what must hold */
        double dot = 0, gg = 0, ee = 0;
        for (int64_t i = 0; i < n; i++) {
            double g = poprt__load_f64(got, dt, i), e = poprt__load_f64(exp->data, dt, i);
            dot += g * e;
            gg += g * g;
            ee += e * e;
            if (fabs(g - e) > *worst)
                *worst = fabs(g - e);
        }
        const double cs = gg == 0 && ee == 0 ? 1.0 : dot / sqrt(gg * ee);
        if (cs < g_cos_min)
            g_cos_min = cs;
        if (!(cs >= cfg.cosine)) {
            snprintf(why, why_size, "output '%s' cosine similarity %.6f < %g", name, cs,
                     cfg.cosine);
            return 0;
        }
        return 1;
    }
    if (poprt__dtype_is_float(dt)) {
        for (int64_t i = 0; i < n; i++) {
            double g = poprt__load_f64(got, dt, i), e = poprt__load_f64(exp->data, dt, i);
            if (isnan(e) && isnan(g))
                continue;
            if (isinf(e) && g == e)
                continue;
            double err = fabs(g - e);
            if (!(err <= ATOL + RTOL * fabs(e))) {
                snprintf(why, why_size,
                         "output '%s' element [%lld] got %.9g expected %.9g (abs err %.3g)", name,
                         (long long)i, g, e, err);
                return 0;
            }
            if (err > *worst)
                *worst = err;
        }
        return 1;
    }
    if (memcmp(got, exp->data, (size_t)n * esz)) {
        snprintf(why, why_size, "output '%s' differs (integers must match exactly)", name);
        return 0;
    }
    return 1;
}

static const char *ort_type(poprt_dtype dt) {
    switch (dt) {
    case POPRT_DTYPE_FLOAT: return "float32";
    case POPRT_DTYPE_DOUBLE: return "float64";
    case POPRT_DTYPE_FLOAT16: return "float16";
    case POPRT_DTYPE_INT8: return "int8";
    case POPRT_DTYPE_UINT8: return "uint8";
    case POPRT_DTYPE_INT16: return "int16";
    case POPRT_DTYPE_UINT16: return "uint16";
    case POPRT_DTYPE_INT32: return "int32";
    case POPRT_DTYPE_UINT32: return "uint32";
    case POPRT_DTYPE_INT64: return "int64";
    case POPRT_DTYPE_UINT64: return "uint64";
    case POPRT_DTYPE_BOOL: return "bool";
    default: return poprt_dtype_name(dt); /* the Node script rejects it */
    }
}

static void json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* One tensor's entry in inputs.json, its bytes appended to the .bin at *off. */
static int json_tensor(FILE *jf, FILE *bf, int comma, const char *name,
                       const poprt__onnx_tensor *t, size_t *off) {
    fprintf(jf, "%s{\"name\": ", comma ? ", " : "");
    json_string(jf, name);
    fprintf(jf, ", \"type\": \"%s\", \"shape\": [", ort_type((poprt_dtype)t->type.elem));
    for (int d = 0; d < t->type.rank; d++)
        fprintf(jf, d ? ", %lld" : "%lld", (long long)t->type.dims[d].value);
    fprintf(jf, "], \"offset\": %zu, \"nbytes\": %zu}", *off, t->nbytes);
    *off += t->nbytes;
    return !t->nbytes || fwrite(t->data, 1, t->nbytes, bf) == t->nbytes;
}

/* Writes the inputs and the reference outputs for the Node script:
 * tmpdir/inputs.json + inputs.bin. */
static int write_ort_inputs(const pchild *c, const char *tmpdir, char *why, size_t why_size) {
    char *jpath = td_join(tmpdir, "inputs.json"), *bpath = td_join(tmpdir, "inputs.bin");
    FILE *jf = fopen(jpath, "w"), *bf = fopen(bpath, "wb");
    int ok = jf && bf;
    if (ok) {
        fprintf(jf, "{\"bin\": ");
        json_string(jf, bpath);
        fprintf(jf, ", \"inputs\": [");
        size_t off = 0;
        for (size_t k = 0; k < c->n_given && ok; k++)
            ok = json_tensor(jf, bf, k > 0, c->in_info[k].name, &c->ins[k], &off);
        fprintf(jf, "], \"expected\": [");
        int first = 1;
        for (size_t k = 0; k < c->n_out && ok; k++) {
            if (!c->exp_given[k] || !c->out_names[k])
                continue;
            ok = json_tensor(jf, bf, !first, c->out_names[k], &c->exp[k], &off);
            first = 0;
        }
        fprintf(jf, "], \"atol\": %g, \"rtol\": %g}\n", ATOL, RTOL);
    }
    if (jf && fclose(jf) != 0)
        ok = 0;
    if (bf && fclose(bf) != 0)
        ok = 0;
    if (!ok)
        snprintf(why, why_size, "cannot write ONNX Runtime inputs in %s", tmpdir);
    free(jpath);
    free(bpath);
    return ok;
}

static int api_fail(char *why, size_t why_size, poprt_status st, const char *what) {
    snprintf(why, why_size, "%s: %s: %s", what, poprt_status_string(st), poprt_last_error());
    return 0;
}

/* ONNX Runtime gets the shapes libpoprt compiles for: when an input given
 * in test_data_set_0 has symbolic dims, a copy of the model with those dims
 * set from the data is saved as tmpdir/fixed.onnx (the parent hands that
 * file to ONNX Runtime). Nothing is written when every input is fixed. */
static int write_fixed_model(const pchild *c, const char *tmpdir, char *why, size_t why_size) {
    int symbolic = 0;
    for (size_t k = 0; k < c->n_given && !symbolic; k++)
        for (int d = 0; d < c->in_info[k].rank; d++)
            symbolic |= c->in_info[k].dims[d] < 0;
    if (!symbolic)
        return 1;
    poprt_model *copy = NULL;
    poprt_status st = poprt_model_clone(c->model, &copy);
    for (size_t k = 0; k < c->n_given && st == POPRT_OK; k++) {
        const poprt__onnx_tensor *t = &c->ins[k];
        int64_t dims[POPRT__MAX_RANK];
        for (int d = 0; d < t->type.rank && d < POPRT__MAX_RANK; d++)
            dims[d] = t->type.dims[d].value;
        st = poprt_model_set_input_shape(copy, c->in_info[k].name, dims, t->type.rank);
    }
    char *path = td_join(tmpdir, "fixed.onnx");
    if (st == POPRT_OK)
        st = poprt_model_save(copy, path);
    poprt_model_free(copy);
    free(path);
    return st == POPRT_OK ? 1 : api_fail(why, why_size, st, "writing the fixed-shape model");
}

/* Decodes set_dir/input_K.pb into *t: 1 decoded, 0 absent, -1 unreadable
 * (why says why). */
static int read_input(const char *set_dir, size_t k, poprt__arena *arena, poprt__onnx_tensor *t,
                      char *why, size_t why_size) {
    char *p = td_value_path(set_dir, "input", k);
    int r = !td_is_file(p) ? 0 : decode_pb(p, arena, t, why, why_size) ? 1 : -1;
    free(p);
    return r;
}

/* Loads, checks and prepares the model. *check gets "ok", "FAIL" or "-"
 * (no reference outputs); on FAIL why says what differs. */
static int pchild_setup(pchild *c, const char *dir, const char *tmpdir, double *create_ms,
                        double *first_ms, const char **check, char *why, size_t why_size) {
    poprt_status st;
    poprt_options *opts = NULL;
    char *model_path = td_join(dir, "model.onnx"), *set_dir = td_join(dir, "test_data_set_0");
    int ok = 0;
    double t0 = now_ms();
    if ((st = poprt_model_load(model_path, &c->model)) != POPRT_OK) {
        api_fail(why, why_size, st, "loading model.onnx");
        goto done;
    }
    c->n_in = poprt_model_num_inputs(c->model);
    c->n_out = poprt_model_num_outputs(c->model);
    c->in_info = poprt__arena_array(&c->arena, c->n_in + 1, sizeof *c->in_info);
    c->ins = poprt__arena_array(&c->arena, c->n_in + 1, sizeof *c->ins);
    c->out_names = poprt__arena_array(&c->arena, c->n_out + 1, sizeof *c->out_names);
    c->out_bufs = poprt__arena_array(&c->arena, c->n_out + 1, sizeof *c->out_bufs);
    c->exp = poprt__arena_array(&c->arena, c->n_out + 1, sizeof *c->exp);
    c->exp_given = poprt__arena_array(&c->arena, c->n_out + 1, sizeof *c->exp_given);
    if (!c->in_info || !c->ins || !c->out_names || !c->out_bufs || !c->exp || !c->exp_given ||
        poprt_options_create(&opts) != POPRT_OK) {
        snprintf(why, why_size, "out of memory");
        goto done;
    }
    /* Inputs input_K.pb for K = 0.. while present; symbolic dims fixed from them. */
    for (size_t k = 0; k < c->n_in; k++) {
        int r = read_input(set_dir, k, &c->arena, &c->ins[k], why, why_size);
        if (r == 0)
            break;
        if (r < 0)
            goto done;
        c->in_info[k].size = sizeof c->in_info[k];
        if ((st = poprt_model_input(c->model, k, &c->in_info[k])) != POPRT_OK) {
            api_fail(why, why_size, st, "model input");
            goto done;
        }
        c->n_given = k + 1;
        char key[600];
        if ((st = td_fix_input_shape(opts, &c->in_info[k], &c->ins[k], key, sizeof key)) !=
            POPRT_OK) {
            api_fail(why, why_size, st, key);
            goto done;
        }
    }
    if (c->n_given == 0 && c->n_in > 0) {
        snprintf(why, why_size, "no test_data_set_0/input_0.pb");
        goto done;
    }
    char threads[32];
    snprintf(threads, sizeof threads, "%d", cfg.threads);
    if ((st = poprt_options_set(opts, "threads", threads)) != POPRT_OK) {
        api_fail(why, why_size, st, "option threads");
        goto done;
    }
    if (cfg.profile && (st = poprt_options_set(opts, "profile", "1")) != POPRT_OK) {
        api_fail(why, why_size, st, "option profile");
        goto done;
    }
    for (int i = 0; i < cfg.n_opt; i++) {
        char key[256];
        const char *eq = strchr(cfg.opt_kv[i], '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - cfg.opt_kv[i]), cfg.opt_kv[i]);
        if ((st = poprt_options_set(opts, key, eq + 1)) != POPRT_OK) {
            api_fail(why, why_size, st, cfg.opt_kv[i]);
            goto done;
        }
    }
    if ((st = poprt_session_create(c->model, opts, &c->sess)) != POPRT_OK) {
        api_fail(why, why_size, st, "creating the session");
        goto done;
    }
    *create_ms = now_ms() - t0;
    if ((st = poprt_stepio_create(&c->io)) != POPRT_OK) {
        api_fail(why, why_size, st, "stepio");
        goto done;
    }
    for (size_t k = 0; k < c->n_given; k++) {
        if ((st = td_set_input(c->io, c->in_info[k].name, &c->ins[k])) != POPRT_OK) {
            api_fail(why, why_size, st, "binding an input");
            goto done;
        }
    }
    /* Outputs of known size go to our own buffers, so run() allocates nothing. */
    for (size_t k = 0; k < poprt_session_num_outputs(c->sess) && k < c->n_out; k++) {
        poprt_value_info vi = {.size = sizeof vi};
        if ((st = poprt_session_output(c->sess, k, &vi)) != POPRT_OK) {
            api_fail(why, why_size, st, "session output");
            goto done;
        }
        c->out_names[k] = poprt__arena_alloc(&c->arena, strlen(vi.name) + 1);
        if (!c->out_names[k]) {
            snprintf(why, why_size, "out of memory");
            goto done;
        }
        strcpy(c->out_names[k], vi.name);
        int known = vi.kind == POPRT_VALUE_TENSOR && vi.rank >= 0 &&
                    vi.dtype != POPRT_DTYPE_STRING && poprt_dtype_size(vi.dtype) > 0;
        size_t bytes = poprt_dtype_size(vi.dtype);
        for (int d = 0; known && d < vi.rank; d++) {
            known = vi.dims[d] >= 0;
            bytes *= (size_t)(vi.dims[d] > 0 ? vi.dims[d] : 0);
        }
        if (known) {
            c->out_bufs[k] = poprt__arena_alloc(&c->arena, bytes ? bytes : 1);
            if (!c->out_bufs[k]) {
                snprintf(why, why_size, "out of memory");
                goto done;
            }
            st = poprt_stepio_set_output(c->io, vi.name, c->out_bufs[k], bytes);
        } else {
            st = poprt_stepio_set_output_alloc(c->io, vi.name);
        }
        if (st != POPRT_OK) {
            api_fail(why, why_size, st, "binding an output");
            goto done;
        }
    }
    t0 = now_ms();
    if ((st = poprt_session_run(c->sess, c->io)) != POPRT_OK) {
        api_fail(why, why_size, st, "run");
        goto done;
    }
    *first_ms = now_ms() - t0;
    /* Check against output_K.pb where present. */
    *check = "-";
    why[0] = 0;
    double worst = 0;
    g_cos_min = 1.0;
    for (size_t k = 0; k < c->n_out; k++) {
        char *p = td_value_path(set_dir, "output", k);
        int exists = td_is_file(p);
        poprt__onnx_tensor *exp = &c->exp[k];
        int dec = exists && decode_pb(p, &c->arena, exp, why, why_size);
        free(p);
        if (!exists)
            continue;
        if (!dec) {
            *check = "FAIL";
            break;
        }
        c->exp_given[k] = 1;
        poprt_dtype dt;
        int rank;
        const int64_t *dims;
        const void *data;
        size_t nbytes;
        if ((st = poprt_stepio_output(c->io, c->out_names[k], &dt, &dims, &rank, &data,
                                      &nbytes)) != POPRT_OK) {
            api_fail(why, why_size, st, "reading an output");
            *check = "FAIL";
            break;
        }
        if (!compare(c->out_names[k], dt, rank, dims, data, nbytes, exp, why, why_size,
                     &worst)) {
            *check = "FAIL";
            break;
        }
        *check = "ok";
    }
    if (!strcmp(*check, "ok") && cfg.cosine > 0)
        snprintf(why, why_size, "cosine >= %.6f, max abs err %.3g", g_cos_min, worst);
    else if (!strcmp(*check, "ok"))
        snprintf(why, why_size, "max abs err %.3g", worst);
    if (tmpdir && cfg.ort &&
        (!write_ort_inputs(c, tmpdir, why, why_size) ||
         !write_fixed_model(c, tmpdir, why, why_size)))
        goto done;
    if (g_popef[0]) {
        /* the export's own buffers are not the model's footprint: keep the
         * peak so far, and count the rest of the child's life from the
         * resident size after the export (clear_refs 5 resets VmHWM) */
        g_hwm_pre_export_kb = vm_hwm_kb();
        if ((st = poprt_session_export(c->sess, g_popef)) != POPRT_OK) {
            api_fail(why, why_size, st, "exporting the .popef");
            goto done;
        }
        FILE *cr = fopen("/proc/self/clear_refs", "w");
        if (cr) {
            fputs("5", cr);
            fclose(cr);
        }
    }
    ok = 1;
done:
    poprt_options_free(opts);
    free(model_path);
    free(set_dir);
    return ok;
}

/* --profile in the libpoprt child: the session logs its kernel time per
 * operator type at INFO when it is freed ("profile: <op> <ms> ms <pct>%
 * <calls> calls", totals over all runs); this keeps them. */
static profile g_prof;

static void prof_log(poprt_log_level level, const char *message, void *user) {
    (void)level;
    (void)user;
    char op[48], out[48], in1[48], key[96];
    double ms;
    unsigned long long calls;
    if (sscanf(message, "profile: node %*s %47s %lf ms %llu calls out %47s in1 %47s", op, &ms,
               &calls, out, in1) == 5) {
        if (calls && strcmp(in1, "-") && prof_shape_op(op)) {
            /* "1x256x56x56" -> "256x56x56"; "256x64x1x1" -> 16384 */
            const char *o = out;
            while (!strncmp(o, "1x", 2))
                o += 2;
            long long w = 1;
            for (const char *d = in1; *d;) {
                w *= strtoll(d, (char **)&d, 10);
                d += *d == 'x';
            }
            if (strstr(op, "Conv"))
                snprintf(key, sizeof key, "%s/w%lld", o, w);
            else
                snprintf(key, sizeof key, "%s/mm", o);
            prof_shape_add(&g_prof, key, ms / (double)calls, 1);
        }
    } else if (g_prof.n < PROF_MAX && sscanf(message, "profile: %47s %lf ms", op, &ms) == 2 &&
               strcmp(op, "node")) {
        snprintf(g_prof.op[g_prof.n], sizeof g_prof.op[0], "%s", op);
        g_prof.ms[g_prof.n++] = ms;
    }
}

/* The libpoprt child: replies "READY <arena> <create_ms> <first_ms> <check> <note>"
 * (or "ERR <msg>"), then serves "run W N" with
 * "OK <median> <min> <wall_ms> <own_cpu_ms> <machine_busy_ms>" (the last
 * three over the timed runs) and "quit" with "BYE <VmHWM kB>", after
 * "PROF <op> <ms per run>" lines with --profile. */
static void pchild_main(const char *dir, const char *tmpdir, int cmd_fd, int rep_fd) {
    pchild c;
    memset(&c, 0, sizeof c);
    poprt__arena_init(&c.arena);
    char why[2048] = "";
    double create_ms = 0, first_ms = 0;
    const char *check = "-";
    if (!pchild_setup(&c, dir, tmpdir, &create_ms, &first_ms, &check, why, sizeof why)) {
        say(rep_fd, "ERR %s", why);
        _exit(1);
    }
    say(rep_fd, "READY %zu %.3f %.3f %s %s", poprt_session_arena_bytes(c.sess), create_ms,
        first_ms, check, why[0] ? why : "-");
    long runs = 1; /* the first run, in pchild_setup */
    char line[256];
    while (read_line(cmd_fd, line, sizeof line)) {
        int w, n;
        if (!strcmp(line, "quit"))
            break;
        if (sscanf(line, "run %d %d", &w, &n) != 2 || w < 0 || n < 1) {
            say(rep_fd, "ERR bad command '%s'", line);
            _exit(1);
        }
        double *ms = malloc((size_t)n * sizeof *ms);
        if (!ms) {
            say(rep_fd, "ERR out of memory");
            _exit(1);
        }
        runs += w + n;
        poprt_status st = POPRT_OK;
        for (int i = 0; i < w && st == POPRT_OK; i++)
            st = poprt_session_run(c.sess, c.io);
        double busy0 = machine_busy_ms(), cpu0 = cpu_ms(), wall0 = now_ms();
        for (int i = 0; i < n && st == POPRT_OK; i++) {
            double t = now_ms();
            st = poprt_session_run(c.sess, c.io);
            ms[i] = now_ms() - t;
        }
        if (st != POPRT_OK) {
            say(rep_fd, "ERR run: %s: %s", poprt_status_string(st), poprt_last_error());
            _exit(1);
        }
        double lo = ms[0];
        for (int i = 1; i < n; i++)
            lo = ms[i] < lo ? ms[i] : lo;
        double wall = now_ms() - wall0, cpu = cpu_ms() - cpu0, busy = machine_busy_ms() - busy0;
        say(rep_fd, "OK %.6f %.6f %.3f %.3f %.3f", median(ms, n), lo, wall, cpu,
            busy0 < 0 ? -1.0 : busy);
        free(ms);
    }
    poprt_stepio_free(c.io);
    if (cfg.profile)
        poprt_set_log_callback(prof_log, NULL, POPRT_LOG_DEBUG); /* (per node at DEBUG) */
    poprt_session_free(c.sess);
    poprt_set_log_callback(NULL, NULL, POPRT_LOG_OFF);
    for (int i = 0; i < g_prof.n; i++)
        say(rep_fd, "PROF %s %.6f", g_prof.op[i], g_prof.ms[i] / (double)runs);
    for (int i = 0; i < g_prof.ns; i++)
        say(rep_fd, "PROFS %s %.6f %d", g_prof.key[i], g_prof.sms[i], g_prof.nodes[i]);
    poprt_model_free(c.model);
    poprt__arena_free(&c.arena);
    const long hwm = vm_hwm_kb();
    say(rep_fd, "BYE %ld", hwm > g_hwm_pre_export_kb ? hwm : g_hwm_pre_export_kb);
    _exit(0);
}

/* A start-up sample in a fresh process: the inputs are decoded first, then
 * the clock runs over poprt_session_load of the .popef, binding and the
 * first run. Replies "FIRST <total_ms> <load_ms>" or "ERR <msg>". */
static void startup_child_main(const char *dir, const char *tmpdir, int cmd_fd, int rep_fd) {
    (void)tmpdir;
    (void)cmd_fd;
    poprt__arena arena;
    poprt__arena_init(&arena);
    char why[2048] = "";
    poprt__onnx_tensor ins[64];
    size_t n_given = 0;
    char *set_dir = td_join(dir, "test_data_set_0");
    for (size_t k = 0; k < 64; k++) {
        int r = read_input(set_dir, k, &arena, &ins[k], why, sizeof why);
        if (r == 0)
            break;
        if (r < 0) {
            say(rep_fd, "ERR %s", why);
            _exit(1);
        }
        n_given = k + 1;
    }
    free(set_dir);
    poprt_options *opts = NULL;
    poprt_session *sess = NULL;
    poprt_stepio *io = NULL;
    char threads[32];
    snprintf(threads, sizeof threads, "%d", cfg.threads);
    poprt_status st;
    if ((st = poprt_options_create(&opts)) || (st = poprt_options_set(opts, "threads", threads))) {
        say(rep_fd, "ERR options: %s", poprt_last_error());
        _exit(1);
    }
    double t0 = now_ms();
    if (g_startup_compile) {
        /* load + compile, the input shapes fixed from the data as pchild does */
        char *path = td_join(dir, "model.onnx");
        poprt_model *model = NULL;
        st = poprt_model_load(path, &model);
        free(path);
        for (size_t k = 0; k < n_given && st == POPRT_OK; k++) {
            poprt_value_info vi = {.size = sizeof vi};
            char key[600];
            if ((st = poprt_model_input(model, k, &vi)) == POPRT_OK)
                st = td_fix_input_shape(opts, &vi, &ins[k], key, sizeof key);
        }
        if (st == POPRT_OK)
            st = poprt_session_create(model, opts, &sess);
        poprt_model_free(model);
        if (st != POPRT_OK) {
            say(rep_fd, "ERR compiling model.onnx: %s", poprt_last_error());
            _exit(1);
        }
    } else if ((st = poprt_session_load(g_popef, opts, &sess)) != POPRT_OK) {
        say(rep_fd, "ERR loading %s: %s", g_popef, poprt_last_error());
        _exit(1);
    }
    double load_ms = now_ms() - t0;
    if ((st = poprt_stepio_create(&io)) != POPRT_OK)
        goto fail;
    for (size_t k = 0; k < n_given && k < poprt_session_num_inputs(sess); k++) {
        poprt_value_info vi = {.size = sizeof vi};
        if ((st = poprt_session_input(sess, k, &vi)) || (st = td_set_input(io, vi.name, &ins[k])))
            goto fail;
    }
    for (size_t k = 0; k < poprt_session_num_outputs(sess); k++) {
        poprt_value_info vi = {.size = sizeof vi};
        if ((st = poprt_session_output(sess, k, &vi)) ||
            (st = poprt_stepio_set_output_alloc(io, vi.name)))
            goto fail;
    }
    if ((st = poprt_session_run(sess, io)) != POPRT_OK)
        goto fail;
    say(rep_fd, "FIRST %.3f %.3f", now_ms() - t0, load_ms);
    _exit(0);
fail:
    say(rep_fd, "ERR %s: %s", poprt_status_string(st), poprt_last_error());
    _exit(1);
}

/* -------------------------------------------------- parent: the engines */

typedef struct engine {
    const char *label;
    pid_t pid;
    int cmd, rep;   /* our ends: commands to the child, replies from it */
    int alive;
    char err[1024];
    double lat_ms;  /* calibration median */
    int iters, warm;
    double *round_med;
    int n_rounds;
    double wall_ms, own_ms, busy_ms; /* sums over the timed runs */
    int busy_known;
    struct rusage ru;
    profile prof; /* --profile: from the PROF lines before BYE */
} engine;

static void engine_fail(engine *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void engine_fail(engine *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, sizeof e->err, fmt, ap);
    va_end(ap);
    e->alive = 0;
}

/* Sends "run W N" and parses "OK med min wall own busy". */
static int engine_run(engine *e, int w, int n, double *med) {
    char line[LINE_MAX_];
    snprintf(line, sizeof line, "run %d %d\n", w, n);
    if (!write_all(e->cmd, line)) {
        engine_fail(e, "%s child is gone", e->label);
        return 0;
    }
    if (!read_line(e->rep, line, sizeof line)) {
        engine_fail(e, "%s child ended during a run", e->label);
        return 0;
    }
    double lo, wall, own, busy;
    if (sscanf(line, "OK %lf %lf %lf %lf %lf", med, &lo, &wall, &own, &busy) != 5) {
        engine_fail(e, "%s", !strncmp(line, "ERR ", 4) ? line + 4 : line);
        return 0;
    }
    e->wall_ms += wall;
    e->own_ms += own;
    e->busy_ms += busy;
    e->busy_known = busy >= 0;
    return 1;
}

/* Only one engine runs at a time: the other is stopped (SIGSTOP) while
 * it is not its turn, so idle threads of one engine (ONNX Runtime's workers
 * spin for a while after each run) cannot take a core from the other. */
static void engine_pause(engine *e) {
    if (e->pid > 0 && e->alive)
        kill(e->pid, SIGSTOP);
}

static void engine_resume(engine *e) {
    if (e->pid > 0)
        kill(e->pid, SIGCONT);
}

/* Ends the child: "quit", then the reply (libpoprt: its VmHWM) and wait4. */
static long engine_stop(engine *e) {
    long kb = -1;
    char line[LINE_MAX_];
    if (e->pid <= 0)
        return -1;
    engine_resume(e);
    int sent = write_all(e->cmd, "quit\n");
    while (sent && read_line(e->rep, line, sizeof line)) {
        profile *p = &e->prof;
        char key[96];
        double ms;
        int nodes;
        if (sscanf(line, "PROFS %95s %lf %d", key, &ms, &nodes) == 3) {
            prof_shape_add(p, key, ms, nodes);
            continue;
        }
        if (p->n < PROF_MAX && sscanf(line, "PROF %47s %lf", p->op[p->n], &p->ms[p->n]) == 2) {
            p->n++;
            continue;
        }
        sscanf(line, "BYE %ld", &kb);
        break;
    }
    close(e->cmd);
    close(e->rep);
    int status;
    while (wait4(e->pid, &status, 0, &e->ru) < 0 && errno == EINTR) {
    }
    e->pid = 0;
    return kb;
}

static int make_pipes(int to_child[2], int from_child[2]) {
    if (pipe2(to_child, O_CLOEXEC) != 0)
        return 0;
    if (pipe2(from_child, O_CLOEXEC) != 0) {
        close(to_child[0]);
        close(to_child[1]);
        return 0;
    }
    return 1;
}

typedef void (*child_main_fn)(const char *dir, const char *tmpdir, int cmd_fd, int rep_fd);

/* Forks a libpoprt child running fn with pipes both ways. */
static int start_child(engine *e, child_main_fn fn, const char *dir, const char *tmpdir) {
    int tc[2], fc[2];
    if (!make_pipes(tc, fc))
        die("pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        close(tc[1]);
        close(fc[0]);
        fn(dir, tmpdir, tc[0], fc[1]);
    }
    close(tc[0]);
    close(fc[1]);
    e->pid = pid;
    e->cmd = tc[1];
    e->rep = fc[0];
    e->alive = 1;
    return 1;
}

/* Runs argv with stdin/stdout on pipes (stderr shared). */
static int start_exec(engine *e, char *const argv[]) {
    int tc[2], fc[2];
    if (!make_pipes(tc, fc))
        die("pipe: %s", strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(tc[0], 0);
        dup2(fc[1], 1);
        signal(SIGPIPE, SIG_DFL);
        execvp(argv[0], argv);
        printf("ERR cannot run %s: %s\n", argv[0], strerror(errno));
        fflush(stdout);
        _exit(127);
    }
    close(tc[0]);
    close(fc[1]);
    e->pid = pid;
    e->cmd = tc[1];
    e->rep = fc[0];
    e->alive = 1;
    return 1;
}

/* Checks node + onnxruntime-node; fills version or reason. */
static int probe_ort(char *version, size_t vsize, char *reason, size_t rsize) {
    engine e;
    memset(&e, 0, sizeof e);
    e.label = "ONNX Runtime";
    char *argv[] = {(char *)cfg.node, (char *)cfg.script, "--probe", NULL};
    if (!td_is_file(cfg.script)) {
        snprintf(reason, rsize, "Node script %s not found", cfg.script);
        return 0;
    }
    start_exec(&e, argv);
    char line[LINE_MAX_];
    int got = read_line(e.rep, line, sizeof line);
    close(e.cmd);
    close(e.rep);
    int status;
    waitpid(e.pid, &status, 0);
    if (got && !strncmp(line, "ORT ", 4)) {
        snprintf(version, vsize, "%.100s", line + 4);
        return 1;
    }
    snprintf(reason, rsize, "%.900s", got && !strncmp(line, "ERR ", 4) ? line + 4
                                  : got ? line
                                        : "node did not answer (is node installed?)");
    return 0;
}

/* ------------------------------------------------------ parent: a model */

typedef struct result {
    char name[256];
    int ok;            /* libpoprt measured */
    int have_ort;      /* ONNX Runtime measured */
    char check[8];     /* libpoprt's first run against the reference outputs */
    char ort_check[8]; /* ONNX Runtime's */
    char note[1024];
    double poprt_ms, ort_ms;
    /* 2+ threads: ONNX Runtime timed with intra-op spinning on and off; ort_ms
     * is the better, ort_spin says which (1 on, 0 off, -1 only one timed) */
    double ort_ms_spin, ort_ms_nospin;
    int ort_spin;
    int ort_fixed; /* ONNX Runtime ran a copy with the symbolic input dims set */
    size_t arena;
    long rss_kb, ort_rss_kb;
    double create_ms, first_ms, ort_create_ms;
    /* --startup: medians over fresh processes (ms; < 0: not measured) */
    double popef_first_ms, popef_load_ms, ort_saved_first_ms;
    double compile_first_ms, compile_ms, ort_first_ms;
    double other_cores; /* other processes' CPU during the timed runs; <0 unknown */
    int poprt_iters, ort_iters;
    profile prof_p, prof_o; /* --profile */
} result;

static int clampi(double v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : (int)v;
}

static void note_add(result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note_add(result *r, const char *fmt, ...) {
    size_t n = strlen(r->note);
    if (n + 3 >= sizeof r->note)
        return;
    if (n) {
        strcpy(r->note + n, "; ");
        n += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note + n, sizeof r->note - n, fmt, ap);
    va_end(ap);
}

/* Iterations per round and untimed runs per round from a latency. */
static void plan_rounds(engine *e) {
    double budget_ms = cfg.round_time * 1e3;
    e->iters = cfg.iters > 0 ? cfg.iters : clampi(budget_ms / (e->lat_ms > 1e-3 ? e->lat_ms : 1e-3), 5, 20000);
    /* a few runs to bring caches back after the other engine's turn */
    e->warm = cfg.warmup >= 0 ? cfg.warmup : clampi(50.0 / (e->lat_ms + 1e-3), 1, 20);
}

/* Gives the machine to e: every other engine of the n is stopped. */
static void engine_turn_of(engine **all, int n, engine *e) {
    for (int i = 0; i < n; i++)
        if (all[i] != e)
            engine_pause(all[i]);
    engine_resume(e);
}

/* One start-up sample of libpoprt: a fresh child loads the .popef (or, with
 * compile set, loads and compiles model.onnx) and runs once. Returns the
 * child's total (ms), or -1 with r->note extended. */
static double startup_poprt(const char *dir, int compile, double *load_ms, result *r) {
    engine e;
    memset(&e, 0, sizeof e);
    g_startup_compile = compile;
    start_child(&e, startup_child_main, dir, NULL);
    char line[LINE_MAX_];
    double total = -1;
    int got = read_line(e.rep, line, sizeof line);
    close(e.cmd);
    close(e.rep);
    int status;
    while (waitpid(e.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!got || sscanf(line, "FIRST %lf %lf", &total, load_ms) != 2) {
        note_add(r, "start-up: %.500s", got ? line : "libpoprt child crashed");
        return -1;
    }
    return total;
}

/* Starts ort_bench_loop.js on model with up to 4 extra arguments and reads
 * its READY line (create + first run ms, the first run's check). */
static int start_ort(engine *O, const char *model, const char *tmpdir, const char *const *extra,
                     double *create_ms, char *check, size_t check_size, char *why,
                     size_t why_size) {
    char *index = td_join(tmpdir, "inputs.json");
    char threads[32];
    snprintf(threads, sizeof threads, "%d", cfg.threads);
    char *argv[12] = {(char *)cfg.node, (char *)cfg.script, (char *)model, index, "--threads",
                      threads};
    int a = 6;
    for (; extra && *extra && a < 11; extra++)
        argv[a++] = (char *)*extra;
    argv[a] = NULL;
    start_exec(O, argv);
    free(index);
    char line[LINE_MAX_];
    int off = 0;
    char chk[8] = "-";
    if (!read_line(O->rep, line, sizeof line)) {
        engine_fail(O, "node ended before it was ready");
        return 0;
    }
    if (sscanf(line, "READY %lf %7s %n", create_ms, chk, &off) < 1) {
        engine_fail(O, "%s", !strncmp(line, "ERR ", 4) ? line + 4 : line);
        return 0;
    }
    if (check)
        snprintf(check, check_size, "%s", chk);
    if (why)
        snprintf(why, why_size, "%s", off ? line + off : "");
    return 1;
}

/* One start-up sample of ONNX Runtime: a fresh node process creates the
 * session and runs once (its READY figure; loading node and the
 * onnxruntime-node module is not counted). */
static double startup_ort(const char *model, const char *tmpdir, const char *const *extra,
                          result *r) {
    engine O;
    memset(&O, 0, sizeof O);
    O.label = "ONNX Runtime";
    double ms = -1;
    if (!start_ort(&O, model, tmpdir, extra, &ms, NULL, 0, NULL, 0)) {
        note_add(r, "ONNX Runtime start-up: %.500s", O.err);
        ms = -1;
    }
    engine_stop(&O);
    return ms;
}

/* --startup N: N fresh processes per kind, the kinds in turn, medians:
 * libpoprt .popef load + first run and ONNX Runtime loading the model it
 * optimised and saved itself (optimisation off); libpoprt load + compile +
 * first run and ONNX Runtime create + first run on the .onnx. */
static void measure_startup(const char *dir, const char *ort_model, const char *tmpdir,
                            int with_ort, result *r) {
    enum { POPEF, COMPILE, ORT_SAVED, ORT_CREATE, KINDS };
    double *v[KINDS], *load[2];
    int n[KINDS] = {0};
    for (int k = 0; k < KINDS; k++)
        if (!(v[k] = calloc((size_t)cfg.startup, sizeof(double))))
            die("out of memory");
    for (int k = 0; k < 2; k++)
        if (!(load[k] = calloc((size_t)cfg.startup, sizeof(double))))
            die("out of memory");
    char *saved = td_join(tmpdir, "ort_optimized.onnx");
    const char *save_args[] = {"--save-optimized", saved, NULL};
    const char *saved_args[] = {"--no-optimize", NULL};
    int saved_ok = 0;
    if (with_ort) { /* ONNX Runtime optimises the model once and saves it */
        engine O;
        memset(&O, 0, sizeof O);
        O.label = "ONNX Runtime";
        double ms;
        if (start_ort(&O, ort_model, tmpdir, save_args, &ms, NULL, 0, NULL, 0))
            saved_ok = td_is_file(saved);
        else
            note_add(r, "ONNX Runtime could not save its optimised model: %.400s", O.err);
        engine_stop(&O);
    }
    for (int i = 0; i < cfg.startup; i++) {
        for (int j = 0; j < KINDS; j++) {
            int kind = (i % 2) ? KINDS - 1 - j : j;
            double t = -1;
            sleep_ms(20);
            if (kind == POPEF || kind == COMPILE) {
                double l;
                t = startup_poprt(dir, kind == COMPILE, &l, r);
                if (t >= 0)
                    load[kind][n[kind]] = l;
            } else if (kind == ORT_SAVED && saved_ok) {
                t = startup_ort(saved, tmpdir, saved_args, r);
                saved_ok = t >= 0;
            } else if (kind == ORT_CREATE && with_ort) {
                t = startup_ort(ort_model, tmpdir, NULL, r);
                with_ort = t >= 0;
            }
            if (t >= 0)
                v[kind][n[kind]++] = t;
        }
    }
    if (n[POPEF] == cfg.startup) {
        r->popef_first_ms = median(v[POPEF], n[POPEF]);
        r->popef_load_ms = median(load[POPEF], n[POPEF]);
    }
    if (n[COMPILE] == cfg.startup) {
        r->compile_first_ms = median(v[COMPILE], n[COMPILE]);
        r->compile_ms = median(load[COMPILE], n[COMPILE]);
    }
    if (n[ORT_SAVED] == cfg.startup)
        r->ort_saved_first_ms = median(v[ORT_SAVED], n[ORT_SAVED]);
    if (n[ORT_CREATE] == cfg.startup)
        r->ort_first_ms = median(v[ORT_CREATE], n[ORT_CREATE]);
    unlink(saved);
    free(saved);
    for (int k = 0; k < KINDS; k++)
        free(v[k]);
    free(load[0]);
    free(load[1]);
}

static void bench_model(const char *dir, int ort_ok, result *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", model_name(dir));
    snprintf(r->check, sizeof r->check, "-");
    snprintf(r->ort_check, sizeof r->ort_check, "-");
    r->rss_kb = r->ort_rss_kb = -1;
    r->ort_spin = -1;
    r->ort_ms_spin = r->ort_ms_nospin = -1;
    char *model_path = td_join(dir, "model.onnx");
    if (!td_is_file(model_path)) {
        snprintf(r->note, sizeof r->note,
                 "no model.onnx (generated models: see bench/README.md, bench/make_models.sh)");
        free(model_path);
        return;
    }
    char tmpdir[] = "/tmp/model_bench.XXXXXX";
    int use_ort = ort_ok, use_tmp = ort_ok || cfg.startup;
    r->popef_first_ms = r->popef_load_ms = r->ort_saved_first_ms = -1;
    r->compile_first_ms = r->compile_ms = r->ort_first_ms = -1;
    if (use_tmp && !mkdtemp(tmpdir))
        die("mkdtemp: %s", strerror(errno));
    g_popef[0] = 0;
    if (cfg.startup)
        snprintf(g_popef, sizeof g_popef, "%s/model.popef", tmpdir);

    /* E[0] libpoprt, E[1] ONNX Runtime, E[2] ONNX Runtime without spinning
     * (2+ threads only: the better of the two is ONNX Runtime's figure) */
    engine P, O, O2;
    memset(&P, 0, sizeof P);
    memset(&O, 0, sizeof O);
    memset(&O2, 0, sizeof O2);
    P.label = "libpoprt";
    O.label = "ONNX Runtime";
    O2.label = "ONNX Runtime (no spinning)";
    engine *E[3] = {&P, &O, &O2};
    int n_eng = 2;
    char line[LINE_MAX_];
    start_child(&P, pchild_main, dir, use_tmp ? tmpdir : NULL);
    if (!read_line(P.rep, line, sizeof line)) {
        engine_fail(&P, "libpoprt child ended before it was ready (crashed?)");
    } else if (!strncmp(line, "READY ", 6)) {
        int off = 0;
        if (sscanf(line, "READY %zu %lf %lf %7s %n", &r->arena, &r->create_ms, &r->first_ms,
                   r->check, &off) < 4)
            engine_fail(&P, "bad reply '%s'", line);
        else if (strcmp(line + off, "-"))
            note_add(r, "%s%s", strcmp(r->check, "FAIL") ? "" : "libpoprt: ", line + off);
    } else {
        engine_fail(&P, "%s", !strncmp(line, "ERR ", 4) ? line + 4 : line);
    }
    if (!P.alive) {
        note_add(r, "libpoprt: %.900s", P.err);
        engine_stop(&P);
        use_ort = 0;
    }
    /* ONNX Runtime runs the copy with fixed shapes when pchild wrote one */
    char *fixed = use_tmp ? td_join(tmpdir, "fixed.onnx") : NULL;
    r->ort_fixed = fixed && td_is_file(fixed);
    const char *ort_model = r->ort_fixed ? fixed : model_path;
    if (use_ort) {
        char *prof = td_join(tmpdir, "ort_profile");
        const char *extra[] = {cfg.profile ? "--profile" : NULL, prof, NULL};
        char why[LINE_MAX_];
        if (start_ort(&O, ort_model, tmpdir, extra, &r->ort_create_ms, r->ort_check,
                      sizeof r->ort_check, why, sizeof why) &&
            !strcmp(r->ort_check, "FAIL"))
            note_add(r, "ONNX Runtime: %.400s", why);
        free(prof);
        if (cfg.threads >= 2 && !cfg.profile && O.alive) {
            const char *nospin[] = {"--no-spin", NULL};
            double create;
            char chk[8];
            if (start_ort(&O2, ort_model, tmpdir, nospin, &create, chk, sizeof chk, NULL, 0))
                n_eng = 3;
            else
                note_add(r, "ONNX Runtime without spinning: %.400s", O2.err);
        }
    }
    /* Calibration (also the first warm-up): a few runs, then ~0.1 s of runs
     * so that one slow run on a busy machine does not set the round size. */
    for (int j = 0; j < n_eng; j++) {
        engine *e = E[j];
        engine_turn_of(E, n_eng, e);
        if (e->alive && engine_run(e, 2, 5, &e->lat_ms) &&
            engine_run(e, 0, clampi(100.0 / (e->lat_ms + 1e-3), 1, 2000), &e->lat_ms))
            plan_rounds(e);
    }
    for (int j = 0; j < n_eng; j++) {
        E[j]->round_med = calloc((size_t)cfg.runs, sizeof(double));
        if (!E[j]->round_med)
            die("out of memory");
        E[j]->wall_ms = E[j]->own_ms = E[j]->busy_ms = 0;
    }
    /* Rounds in ABBA order: the engines forwards, then backwards, ...
     * (calibration not counted below) */
    for (int round = 0; round < cfg.runs; round++) {
        for (int j = 0; j < n_eng; j++) {
            engine *e = E[round % 2 ? n_eng - 1 - j : j];
            if (!e->alive)
                continue;
            double med;
            engine_turn_of(E, n_eng, e);
            sleep_ms(20);
            if (engine_run(e, e->warm, e->iters, &med))
                e->round_med[e->n_rounds++] = med;
        }
    }
    r->other_cores = -1;
    double wall = 0, own = 0, busy = 0;
    int known = 1;
    for (int j = 0; j < n_eng; j++) {
        wall += E[j]->wall_ms;
        own += E[j]->own_ms;
        busy += E[j]->busy_ms;
        known &= !E[j]->n_rounds || E[j]->busy_known;
    }
    if (known && P.busy_known && wall > 0)
        r->other_cores = (busy - own) / wall;
    if (r->other_cores < 0 && r->other_cores > -0.05)
        r->other_cores = 0; /* clock-tick rounding */
    if (P.pid > 0) {
        long kb = engine_stop(&P);
        r->rss_kb = kb > 0 ? kb : P.ru.ru_maxrss;
    }
    if (O.pid > 0)
        engine_stop(&O);
    if (O2.pid > 0)
        engine_stop(&O2);
    r->prof_p = P.prof;
    r->prof_o = O.prof;
    if (P.n_rounds == cfg.runs) {
        r->ok = 1;
        r->poprt_ms = median(P.round_med, P.n_rounds);
        r->poprt_iters = P.iters;
    } else if (P.err[0]) {
        note_add(r, "libpoprt: %.900s", P.err);
    }
    if (O.n_rounds == cfg.runs)
        r->ort_ms_spin = median(O.round_med, O.n_rounds);
    else if (O.err[0])
        note_add(r, "ONNX Runtime: %s", O.err);
    if (n_eng == 3 && O2.n_rounds == cfg.runs)
        r->ort_ms_nospin = median(O2.round_med, O2.n_rounds);
    else if (n_eng == 3 && O2.err[0])
        note_add(r, "ONNX Runtime without spinning: %s", O2.err);
    if (r->ort_ms_spin >= 0 || r->ort_ms_nospin >= 0) {
        int nospin = r->ort_ms_spin < 0 ||
                     (r->ort_ms_nospin >= 0 && r->ort_ms_nospin < r->ort_ms_spin);
        engine *best = nospin ? &O2 : &O;
        r->have_ort = 1;
        r->ort_ms = nospin ? r->ort_ms_nospin : r->ort_ms_spin;
        r->ort_spin = n_eng == 3 ? !nospin : -1;
        r->ort_iters = best->iters;
        r->ort_rss_kb = best->ru.ru_maxrss;
    }
    for (int j = 0; j < 3; j++)
        free(E[j]->round_med);
    if (cfg.startup && r->ok)
        measure_startup(dir, ort_model, tmpdir, r->have_ort, r);
    if (use_tmp) {
        const char *names[] = {"inputs.json", "inputs.bin", "model.popef", "fixed.onnx"};
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            char *p = td_join(tmpdir, names[i]);
            unlink(p);
            free(p);
        }
        rmdir(tmpdir);
    }
    free(fixed);
    free(model_path);
}

/* --------------------------------------------------------------- output */

/* --profile: the convolutions and matrix products of each shape in both
 * engines (output / second input), the largest first: where one engine's
 * kernels are slower than the other's for the same work. */
static void print_profile_shapes(const result *r) {
    const profile *p = &r->prof_p, *o = &r->prof_o;
    enum { ROWS = 16 };
    /* the union of both tables' keys: each row's index in either (-1: absent)
     * and the larger of its two times, which orders the rows */
    struct shape_row {
        int p, o;
        double big;
    } row[2 * PROF_SHAPES];
    int n = 0;
    for (int i = 0; i < p->ns; i++, n++) {
        row[n].p = i;
        row[n].o = prof_shape_find(o, p->key[i]);
    }
    for (int i = 0; i < o->ns; i++)
        if (prof_shape_find(p, o->key[i]) < 0) {
            row[n].p = -1;
            row[n++].o = i;
        }
    if (!n)
        return;
    for (int i = 0; i < n; i++) {
        const double a = row[i].p >= 0 ? p->sms[row[i].p] : 0;
        const double b = row[i].o >= 0 ? o->sms[row[i].o] : 0;
        row[i].big = a > b ? a : b;
    }
    for (int i = 1; i < n; i++) /* insertion sort, largest first */
        for (int j = i; j > 0 && row[j].big > row[j - 1].big; j--) {
            const struct shape_row t = row[j];
            row[j] = row[j - 1];
            row[j - 1] = t;
        }
    printf("  profile %s: Conv / MatMul / Gemm ms per run by shape (output/weights; nodes)\n",
           r->name);
    printf("    %-44s %14s %14s %9s\n", "shape", "libpoprt", "ONNX Runtime", "ratio");
    for (int i = 0; i < n && i < ROWS; i++) {
        const int pi = row[i].p, oi = row[i].o;
        char a[32] = "-", b[32] = "-", ratio[16] = "-";
        if (pi >= 0)
            snprintf(a, sizeof a, "%.3f (%d)", p->sms[pi], p->nodes[pi]);
        if (oi >= 0)
            snprintf(b, sizeof b, "%.3f (%d)", o->sms[oi], o->nodes[oi]);
        if (pi >= 0 && oi >= 0 && p->sms[pi] > 0 && o->sms[oi] > 0)
            snprintf(ratio, sizeof ratio, "%.2f", p->sms[pi] / o->sms[oi]);
        printf("    %-44s %14s %14s %9s\n", pi >= 0 ? p->key[pi] : o->key[oi], a, b, ratio);
    }
}

/* --profile: the two engines' kernel time per operator type, side by side,
 * each sorted by time (their operator sets differ: each reports the nodes
 * it runs after its own fusions). */
static void print_profile(const result *r) {
    const profile *pp[2] = {&r->prof_p, &r->prof_o};
    int order[2][PROF_MAX];
    double total[2] = {0, 0};
    for (int e = 0; e < 2; e++) {
        for (int i = 0; i < pp[e]->n; i++) {
            order[e][i] = i;
            total[e] += pp[e]->ms[i];
        }
        for (int i = 1; i < pp[e]->n; i++) /* insertion sort, largest first */
            for (int j = i; j > 0 && pp[e]->ms[order[e][j]] > pp[e]->ms[order[e][j - 1]]; j--) {
                int t = order[e][j];
                order[e][j] = order[e][j - 1];
                order[e][j - 1] = t;
            }
    }
    if (!pp[0]->n && !pp[1]->n)
        return;
    printf("  profile %s: kernel ms per run by operator type (with profiling's own cost)\n",
           r->name);
    printf("    %-26s %9.3f %6s | %-26s %9.3f\n", "libpoprt total", total[0], "",
           r->prof_o.n ? "ONNX Runtime total" : "ONNX Runtime: -", total[1]);
    int rows = pp[0]->n > pp[1]->n ? pp[0]->n : pp[1]->n;
    for (int i = 0; i < rows; i++) {
        char left[64] = "", right[64] = "";
        if (i < pp[0]->n)
            snprintf(left, sizeof left, "%-26s %9.3f %5.1f%%", pp[0]->op[order[0][i]],
                     pp[0]->ms[order[0][i]],
                     total[0] > 0 ? 100 * pp[0]->ms[order[0][i]] / total[0] : 0.0);
        if (i < pp[1]->n)
            snprintf(right, sizeof right, "%-26s %9.3f %5.1f%%", pp[1]->op[order[1][i]],
                     pp[1]->ms[order[1][i]],
                     total[1] > 0 ? 100 * pp[1]->ms[order[1][i]] / total[1] : 0.0);
        printf("    %-43s | %s\n", left, right);
    }
    print_profile_shapes(r);
}

static void print_row(const result *r, int ort_ok) {
    char pm[32] = "-", om[32] = "-", ratio[32] = "-", arena[32] = "-", rss[32] = "-",
         orss[32] = "-", create[32] = "-", iters[48] = "-", other[32] = "-";
    if (r->ok) {
        snprintf(pm, sizeof pm, "%.3f", r->poprt_ms);
        snprintf(arena, sizeof arena, "%zu", r->arena);
        snprintf(create, sizeof create, "%.0f", r->create_ms);
        if (r->other_cores >= 0)
            snprintf(other, sizeof other, "%.2f", r->other_cores);
    }
    if (r->rss_kb > 0)
        snprintf(rss, sizeof rss, "%.1f", r->rss_kb / 1024.0);
    if (r->have_ort) {
        snprintf(om, sizeof om, "%.3f", r->ort_ms);
        if (r->ort_rss_kb > 0)
            snprintf(orss, sizeof orss, "%.1f", r->ort_rss_kb / 1024.0);
    }
    if (r->ok && r->have_ort)
        snprintf(ratio, sizeof ratio, "%.3f", r->poprt_ms / r->ort_ms);
    if (r->ok && r->have_ort)
        snprintf(iters, sizeof iters, "%dx%d/%d", cfg.runs, r->poprt_iters, r->ort_iters);
    else if (r->ok)
        snprintf(iters, sizeof iters, "%dx%d", cfg.runs, r->poprt_iters);
    if (ort_ok)
        printf("%-20s %-5s %-5s %10s %10s %9s %12s %8s %8s %8s %6s %13s", r->name, r->check,
               r->ort_check, pm, om, ratio, arena, rss, orss, create, other, iters);
    else
        printf("%-20s %-5s %10s %12s %8s %8s %6s %10s", r->name, r->check, pm, arena, rss,
               create, other, iters);
    if (r->note[0])
        printf("  %s", r->note);
    if (r->have_ort && r->ort_fixed)
        printf("%sONNX Runtime ran a copy with the input dims fixed", r->note[0] ? "; " : "  ");
    if (r->ort_spin >= 0)
        printf("%sONNX Runtime spinning %s: %.3f ms, %s: %.3f ms",
               r->note[0] || (r->have_ort && r->ort_fixed) ? "; " : "  ", "on", r->ort_ms_spin,
               "off", r->ort_ms_nospin);
    printf("\n");
    if (r->popef_first_ms >= 0) {
        printf("  start-up, saved: libpoprt .popef load + first run %.1f ms (load %.1f ms)",
               r->popef_first_ms, r->popef_load_ms);
        if (r->ort_saved_first_ms >= 0)
            printf("; ONNX Runtime loading the model it optimised and saved (optimisation off) + "
                   "first run %.1f ms; poprt/ort %.2f",
                   r->ort_saved_first_ms, r->popef_first_ms / r->ort_saved_first_ms);
        printf("\n");
    }
    if (r->compile_first_ms >= 0) {
        printf("  start-up, from .onnx: libpoprt load + compile + first run %.1f ms (compile "
               "%.1f ms)",
               r->compile_first_ms, r->compile_ms);
        if (r->ort_first_ms >= 0)
            printf("; ONNX Runtime create + first run %.1f ms; poprt/ort %.2f", r->ort_first_ms,
                   r->compile_first_ms / r->ort_first_ms);
        printf("\n");
    }
    if (r->popef_first_ms >= 0 || r->compile_first_ms >= 0)
        printf("  (start-up figures: medians of %d fresh processes each)\n", cfg.startup);
    fflush(stdout);
}

static void print_header(int ort_ok) {
    if (ort_ok)
        printf("%-20s %-5s %-5s %10s %10s %9s %12s %8s %8s %8s %6s %13s  %s\n", "model",
               "check", "ortck", "poprt ms", "ort ms", "poprt/ort", "arena bytes", "RSS MiB", "ortRSS", "load ms",
               "other", "runs x iters", "notes");
    else
        printf("%-20s %-5s %10s %12s %8s %8s %6s %10s  %s\n", "model", "check", "poprt ms",
               "arena bytes", "RSS MiB", "load ms", "other", "runs x it", "notes");
}

/* ----------------------------------------------------------------- main */

static void usage(void) {
    fprintf(stderr,
            "usage: model_bench [--threads N] [--ort] [--iters N] [--runs N] [--warmup N]\n"
            "                   [--round-time S] [--startup N] [--headline L] [--profile]\n"
            "                   [--option K=V]... [--cosine C] DIR...\n"
            "  DIR        model folder (model.onnx + test_data_set_0) or a folder of them\n"
            "  --threads  session threads for both engines (default 1)\n"
            "  --ort      also time ONNX Runtime (node + onnxruntime-node), alternating\n"
            "  --iters    timed runs per round (default: about --round-time of runs)\n"
            "  --runs     rounds per engine (default 5); figures are medians over rounds\n"
            "  --warmup   untimed runs at the start of each round (default: automatic)\n"
            "  --round-time  seconds of timed runs per engine and round (default 0.5)\n"
            "  --startup N   also time start-up in N fresh processes of each kind, two\n"
            "                ways: libpoprt loading a .popef exported from the model against\n"
            "                ONNX Runtime loading the model it optimised and saved itself\n"
            "                (optimisation off), and libpoprt load + compile against ONNX\n"
            "                Runtime's session create, each with its first run\n"
            "  --headline L  models (comma-separated folder names) of the headline geomean\n"
            "                (default " DEFAULT_HEADLINE ")\n"
            "  --profile     also time every kernel (libpoprt session option profile,\n"
            "                ONNX Runtime enableProfiling) and print, per model, each\n"
            "                engine's kernel time per run by operator type; latencies\n"
            "                then include the profiling's own cost\n"
            "  --option K=V  a libpoprt session option (repeatable), e.g.\n"
            "                matmul_precision=bfloat16; ONNX Runtime runs as always\n"
            "  --cosine C    libpoprt's float outputs pass when their cosine similarity\n"
            "                to the expected output is >= C (lower precision), instead of\n"
            "                |err| <= 1e-5 + 1e-3 |expected|\n");
    exit(2);
}

static int parse_int(const char *s, const char *opt, int lo) {
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    if (!s || *end || v < lo || v > 1000000)
        die("%s expects an integer >= %d", opt, lo);
    return (int)v;
}

int main(int argc, char **argv) {
    poprt__vec dirs = {0}; /* the model folders, malloc'ed */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--threads"))
            cfg.threads = parse_int(v, a, 1), i++;
        else if (!strcmp(a, "--ort"))
            cfg.ort = 1;
        else if (!strcmp(a, "--profile"))
            cfg.profile = 1;
        else if (!strcmp(a, "--option")) {
            if (!v || !strchr(v, '=') || cfg.n_opt == 16)
                die("--option expects KEY=VALUE (at most 16)");
            cfg.opt_kv[cfg.n_opt++] = v;
            i++;
        } else if (!strcmp(a, "--cosine")) {
            if (!v || (cfg.cosine = atof(v)) <= 0 || cfg.cosine > 1)
                die("--cosine expects a number in (0, 1]");
            i++;
        }
        else if (!strcmp(a, "--iters"))
            cfg.iters = parse_int(v, a, 1), i++;
        else if (!strcmp(a, "--runs"))
            cfg.runs = parse_int(v, a, 1), i++;
        else if (!strcmp(a, "--headline")) {
            if (!v)
                die("--headline expects a comma-separated list of model names");
            g_headline = v;
            i++;
        } else if (!strcmp(a, "--startup"))
            cfg.startup = parse_int(v, a, 1), i++;
        else if (!strcmp(a, "--warmup"))
            cfg.warmup = parse_int(v, a, 0), i++;
        else if (!strcmp(a, "--round-time")) {
            if (!v || (cfg.round_time = atof(v)) <= 0)
                die("--round-time expects seconds > 0");
            i++;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            usage();
        else if (a[0] == '-' && a[1] == '-')
            die("unknown option %s", a);
        else {
            /* A folder without model.onnx or data sets is a folder of models. */
            char *m = td_join(a, "model.onnx"), *s = td_join(a, "test_data_set_0");
            int single = td_is_file(m) || td_is_dir(s);
            free(m);
            free(s);
            if (single || !td_is_dir(a)) {
                td_push(&dirs, strdup(a));
            } else {
                poprt__vec sub = td_subdirs(a, "");
                for (size_t k = 0; k < sub.len; k++)
                    td_push(&dirs, td_join(a, sub.items[k]));
                td_free_all(&sub);
            }
        }
    }
    if (!dirs.len)
        usage();
    const char *env;
    if ((env = getenv("NODE")) && *env)
        cfg.node = env;
    if ((env = getenv("MODEL_BENCH_ORT_SCRIPT")) && *env)
        cfg.script = env;
    signal(SIGPIPE, SIG_IGN); /* a crashed child shows as an error, not our death */

    char ort_version[128] = "", reason[1024] = "";
    int ort_ok = cfg.ort && probe_ort(ort_version, sizeof ort_version, reason, sizeof reason);
    printf("model_bench: libpoprt %s, threads %d, %d rounds", poprt_version(), cfg.threads,
           cfg.runs);
    if (cfg.iters)
        printf(" x %d iterations", cfg.iters);
    else
        printf(" of ~%.2g s per engine", cfg.round_time);
    if (ort_ok)
        printf(", ONNX Runtime %s (onnxruntime-node, CPU EP), engines alternated", ort_version);
    printf("\n");
    if (cfg.ort && !ort_ok)
        printf("ONNX Runtime not available: %s; libpoprt figures only\n", reason);
    printf("(ms: median over rounds of each round's median latency; RSS MiB: peak resident "
           "memory of the process running the model%s; load ms: libpoprt model load + session "
           "create; other: CPU cores busy with other processes during the timed runs, 0 on a "
           "quiet machine)\n",
           ort_ok ? "; ortRSS: the node process's, node included" : "");
    print_header(ort_ok);

    double log_sum = 0, log_head = 0, worst = 0;
    int n_ratio = 0, n_head = 0, n_poprt = 0;
    char worst_name[256] = "", excluded[4096] = "", found[4096] = ",";
    for (size_t i = 0; i < dirs.len; i++) {
        result r;
        fprintf(stderr, "[%zu/%zu] %s\n", i + 1, dirs.len, (const char *)dirs.items[i]);
        bench_model(dirs.items[i], ort_ok, &r);
        print_row(&r, ort_ok);
        if (cfg.profile)
            print_profile(&r);
        if (r.ok)
            n_poprt++;
        if (!r.ok || !r.have_ort)
            continue;
        /* a row counts only when both engines' outputs match the reference */
        if (!strcmp(r.check, "FAIL") || !strcmp(r.ort_check, "FAIL")) {
            size_t n = strlen(excluded);
            snprintf(excluded + n, sizeof excluded - n, "%s%s (%s)", n ? ", " : "", r.name,
                     !strcmp(r.check, "FAIL") && !strcmp(r.ort_check, "FAIL") ? "both engines"
                     : !strcmp(r.check, "FAIL")                                ? "libpoprt"
                                                                              : "ONNX Runtime");
            continue;
        }
        double q = r.poprt_ms / r.ort_ms;
        log_sum += log(q);
        n_ratio++;
        if (in_list(g_headline, r.name) && !in_list(found + 1, r.name)) {
            size_t n = strlen(found);
            snprintf(found + n, sizeof found - n, "%s,", r.name);
            log_head += log(q);
            n_head++;
            if (q > worst) {
                worst = q;
                snprintf(worst_name, sizeof worst_name, "%s", r.name);
            }
        }
    }
    td_free_all(&dirs);
    if (excluded[0])
        printf("excluded from the means (outputs differ from the reference): %s\n", excluded);
    if (ort_ok) {
        char missing[4096] = "";
        int n_list = 0;
        for (const char *p = g_headline; *p;) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(len < 255 ? len : 255), p);
            if (len) {
                n_list++;
                if (!in_list(found + 1, name)) {
                    size_t n = strlen(missing);
                    snprintf(missing + n, sizeof missing - n, "%s%s", n ? ", " : "", name);
                }
            }
            if (!e)
                break;
            p = e + 1;
        }
        printf("headline geomean ratio poprt/ort: ");
        if (n_head)
            printf("%.3f over %d of the %d listed models, highest %.3f (%s)", exp(log_head / n_head),
                   n_head, n_list, worst, worst_name);
        else
            printf("n/a (none of the %d listed models measured)", n_list);
        if (missing[0])
            printf("; not measured or excluded: %s", missing);
        printf("\n");
        if (n_ratio)
            printf("geomean ratio poprt/ort: %.3f over %d models\n", exp(log_sum / n_ratio),
                   n_ratio);
        else
            printf("geomean ratio poprt/ort: n/a (no model measured by both engines with "
                   "matching outputs) over 0 models\n");
    } else {
        printf("geomean ratio poprt/ort: n/a (%s) over %d models\n",
               cfg.ort ? "ONNX Runtime not available" : "--ort not given", n_poprt);
    }
    return 0;
}
