/* serve_bench: a runner under an open-loop load, through the public API.
 * Not a test: it prints figures and asserts nothing.
 *
 *   serve_bench MODEL.onnx [--rates R,R,...] [--seconds S] [--configs C,C,...]
 *               [--max_batch N] [--timeout_us T] [--shape NAME=D,D,...]
 *               [--stages CONFIG.json] [--lengths LO,HI] [--pack_rows N]
 *               [--replicas N] [--pack_seq_len S]
 *
 * Requests (batch 1: the inputs' batching dim, dim 0, is 1; other symbolic
 * dims from --shape) arrive at Poisson times at each offered rate for S
 * seconds; a request's latency runs from its arrival (its scheduled time,
 * so a server falling behind shows as latency, not as a slower client) to
 * its completion. Configurations, measured interleaved (each rate runs
 * every configuration before the next rate):
 *   sync     one request at a time: a runner with max_batch 1, one replica
 *            on every core (--replicas N: N replicas sharing the cores, for
 *            every configuration alike; sync then runs N requests at a time,
 *            each on its own cores)
 *   batch    dynamic batching: max_batch N (default 8), batch timeout T us
 *            (default 2000), one replica on every core
 *   pipe     with --stages (a manual_sharding config, docs/sharding.md):
 *            the model annotated by it, its stages pipelined over every
 *            core (docs/runtime.md "Pipelined stages"); sync then runs the
 *            same model unsharded ("pipeline" 0)
 *   pack     (with --lengths) the packing runner: option "pack", rows of the
 *            model's S tokens (--pack_seq_len: of S tokens), pack_max_rows
 *            --pack_rows (default: max_batch), pack_timeout_us T, one replica
 *            on every core
 * --lengths LO,HI: a transformer load (every input [1, S], one of them the
 * attention mask, its name containing "mask"): each request has a length
 * uniform in LO..HI (the same sequence of lengths for every configuration).
 * sync and batch send it padded to S (mask 1 on its tokens, 0 after), as a
 * server without packing must; pack sends its L tokens alone ([1, L]).
 * For each: offered rate, throughput (completed per second), p50 and p99
 * latency (ms), mean batch. Input values are deterministic pseudo-random
 * floats in [-1, 1) (integer inputs 1). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poprt/poprt.h>

#define MAX_INPUTS 16
#define SLOTS 4096 /* requests in flight at most */

typedef struct slot {
    poprt_stepio *io;
    void *in[MAX_INPUTS];
    void *out;
    double arrival;
    int64_t len; /* tokens (--lengths) */
    struct load *load;
    int index;
} slot;

typedef struct load {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot *slots;
    int *free_list, n_free;
    double *lat; /* ms, per completed request */
    size_t n_lat, cap_lat;
    size_t dropped; /* queue full or no free slot */
} load;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_until(double t)
{
    double d = t - now_s();
    if (d <= 0)
        return;
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
}

static void on_done(poprt_request *q, poprt_status st, void *user)
{
    (void)q;
    slot *s = user;
    load *l = s->load;
    double ms = (now_s() - s->arrival) * 1e3;
    pthread_mutex_lock(&l->mu);
    if (st == POPRT_OK && l->n_lat < l->cap_lat)
        l->lat[l->n_lat++] = ms;
    l->free_list[l->n_free++] = s->index;
    pthread_cond_signal(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct io_desc {
    int n_in;
    char names[MAX_INPUTS][128];
    poprt_dtype dtype[MAX_INPUTS];
    int rank[MAX_INPUTS];
    int64_t dims[MAX_INPUTS][8];
    size_t bytes[MAX_INPUTS];
    char out_name[128];
    int64_t lo, hi; /* --lengths; 0: fixed shapes */
    int mask;       /* the mask input with --lengths */
} io_desc;

static void die(const char *what)
{
    fprintf(stderr, "serve_bench: %s: %s\n", what, poprt_last_error());
    exit(1);
}

/* Input shapes of one request: the model's, batch 1, symbolic dims from
 * --shape NAME=... */
static void describe(poprt_model *m, char **shapes, int n_shapes, io_desc *d)
{
    memset(d, 0, sizeof *d);
    d->n_in = (int)poprt_model_num_inputs(m);
    if (d->n_in > MAX_INPUTS)
        die("too many inputs");
    for (int i = 0; i < d->n_in; i++) {
        poprt_value_info vi = {.size = sizeof vi};
        if (poprt_model_input(m, (size_t)i, &vi))
            die("input");
        snprintf(d->names[i], sizeof d->names[i], "%s", vi.name);
        d->dtype[i] = vi.dtype;
        d->rank[i] = vi.rank;
        size_t n = 1;
        for (int k = 0; k < vi.rank && k < 8; k++) {
            d->dims[i][k] = vi.dims[k] >= 0 ? vi.dims[k] : (k == 0 ? 1 : -1);
            for (int s = 0; s < n_shapes; s++) {
                size_t len = strlen(vi.name);
                if (!strncmp(shapes[s], vi.name, len) && shapes[s][len] == '=') {
                    const char *p = shapes[s] + len + 1;
                    for (int q = 0; q <= k && p; q++) {
                        if (q == k)
                            d->dims[i][k] = strtoll(p, NULL, 10);
                        p = strchr(p, ',');
                        p = p ? p + 1 : NULL;
                    }
                }
            }
            if (d->dims[i][k] < 0) {
                fprintf(stderr, "serve_bench: input '%s' dim %d is symbolic: give --shape\n",
                        vi.name, k);
                exit(2);
            }
            n *= (size_t)d->dims[i][k];
        }
        d->bytes[i] = n * poprt_dtype_size(vi.dtype);
    }
    poprt_value_info vo = {.size = sizeof vo};
    if (poprt_model_output(m, 0, &vo))
        die("output");
    snprintf(d->out_name, sizeof d->out_name, "%s", vo.name);
}

static void fill(void *p, poprt_dtype dt, size_t bytes, unsigned seed)
{
    size_t n = bytes / poprt_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        if (dt == POPRT_DTYPE_FLOAT)
            ((float *)p)[i] = (float)(seed >> 8) / (float)(1u << 23) - 1.0f;
        else if (dt == POPRT_DTYPE_INT64)
            ((int64_t *)p)[i] = 1;
        else if (dt == POPRT_DTYPE_INT32)
            ((int32_t *)p)[i] = 1;
        else
            memset((char *)p + i * poprt_dtype_size(dt), 0, poprt_dtype_size(dt));
    }
}

typedef struct result {
    double offered, throughput, p50, p99, mean_batch;
    size_t dropped;
} result;

/* Slot s's inputs for a request of s->len tokens: padded to S (mask 1 on
 * its tokens), or its tokens alone when packing. */
static void bind_tokens(slot *sl, const io_desc *d, int packed)
{
    for (int i = 0; i < d->n_in; i++) {
        int64_t dims[2] = {1, packed ? sl->len : d->dims[i][1]};
        size_t es = poprt_dtype_size(d->dtype[i]);
        if (i == d->mask)
            for (int64_t t = 0; t < d->dims[i][1]; t++) {
                int64_t one = t < sl->len;
                if (d->dtype[i] == POPRT_DTYPE_INT64)
                    ((int64_t *)sl->in[i])[t] = one;
                else if (d->dtype[i] == POPRT_DTYPE_INT32)
                    ((int32_t *)sl->in[i])[t] = (int32_t)one;
                else if (d->dtype[i] == POPRT_DTYPE_FLOAT)
                    ((float *)sl->in[i])[t] = (float)one;
            }
        if (poprt_stepio_set_input(sl->io, d->names[i], d->dtype[i], dims, 2, sl->in[i],
                                   (size_t)dims[1] * es))
            die("set_input");
    }
}

static result drive(poprt_runner *r, const io_desc *d, double rate, double seconds, int packed)
{
    load l = {0};
    pthread_mutex_init(&l.mu, NULL);
    pthread_cond_init(&l.cv, NULL);
    l.slots = calloc(SLOTS, sizeof *l.slots);
    l.free_list = calloc(SLOTS, sizeof *l.free_list);
    l.cap_lat = (size_t)(rate * seconds * 2 + 16);
    l.lat = calloc(l.cap_lat, sizeof *l.lat);
    if (!l.slots || !l.free_list || !l.lat)
        die("memory");
    for (int s = 0; s < SLOTS; s++) {
        slot *sl = &l.slots[s];
        sl->load = &l;
        sl->index = s;
        if (poprt_stepio_create(&sl->io))
            die("stepio");
        for (int i = 0; i < d->n_in; i++) {
            sl->in[i] = malloc(d->bytes[i] ? d->bytes[i] : 1);
            fill(sl->in[i], d->dtype[i], d->bytes[i], 12345u + (unsigned)s * 7u + (unsigned)i);
            if (poprt_stepio_set_input(sl->io, d->names[i], d->dtype[i], d->dims[i], d->rank[i],
                                       sl->in[i], d->bytes[i]))
                die("set_input");
        }
        if (poprt_stepio_set_output_alloc(sl->io, d->out_name))
            die("set_output");
        l.free_list[l.n_free++] = s;
    }
    unsigned seed = 42, lseed = 7;
    double t = now_s() + 0.05, end = t + seconds;
    const double start = t;
    size_t submitted = 0;
    while (t < end) {
        sleep_until(t);
        pthread_mutex_lock(&l.mu);
        int s = l.n_free ? l.free_list[--l.n_free] : -1;
        pthread_mutex_unlock(&l.mu);
        if (d->hi) { /* the next length, drawn whether or not the request is dropped */
            lseed = lseed * 1664525u + 1013904223u;
            int64_t len = d->lo + (int64_t)((lseed >> 8) % (unsigned)(d->hi - d->lo + 1));
            if (s >= 0) {
                l.slots[s].len = len;
                bind_tokens(&l.slots[s], d, packed);
            }
        }
        if (s < 0 || (l.slots[s].arrival = t,
                      poprt_runner_submit(r, l.slots[s].io, 0, on_done, &l.slots[s], NULL))) {
            l.dropped++;
            if (s >= 0) {
                pthread_mutex_lock(&l.mu);
                l.free_list[l.n_free++] = s;
                pthread_mutex_unlock(&l.mu);
            }
        } else
            submitted++;
        seed = seed * 1664525u + 1013904223u;
        double u = ((double)(seed >> 8) + 0.5) / (double)(1u << 24);
        t += -log(u) / rate; /* exponential gaps: Poisson arrivals */
    }
    pthread_mutex_lock(&l.mu);
    while (l.n_free < SLOTS)
        pthread_cond_wait(&l.cv, &l.mu);
    pthread_mutex_unlock(&l.mu);
    const double elapsed = now_s() - start;
    result res = {.offered = rate, .dropped = l.dropped};
    res.throughput = (double)l.n_lat / elapsed;
    qsort(l.lat, l.n_lat, sizeof *l.lat, cmp_d);
    res.p50 = l.n_lat ? l.lat[l.n_lat / 2] : 0;
    res.p99 = l.n_lat ? l.lat[(size_t)((double)(l.n_lat - 1) * 0.99)] : 0;
    poprt_runner_stats st = {.size = sizeof st};
    if (!poprt_runner_stats_get(r, &st))
        res.mean_batch = st.mean_batch;
    for (int s = 0; s < SLOTS; s++) {
        poprt_stepio_free(l.slots[s].io);
        for (int i = 0; i < d->n_in; i++)
            free(l.slots[s].in[i]);
    }
    free(l.slots);
    free(l.free_list);
    free(l.lat);
    (void)submitted;
    return res;
}

enum { SYNC, BATCH, PACK, PIPE };
/* --option KEY=VALUE: session options every configuration's runner gets */
static char *g_opts[16];
static int g_n_opts;
static const char *const config_names[] = {"sync", "batch", "pack", "pipe"};

static poprt_runner *make_runner(poprt_model *m, const io_desc *d, int config, int max_batch,
                                 int timeout_us, int pack_rows, int replicas, int row_len)
{
    poprt_options *o;
    char v[256];
    if (poprt_options_create(&o))
        die("options");
    long cores = sysconf(_SC_NPROCESSORS_ONLN) / replicas;
    snprintf(v, sizeof v, "%ld", cores > 0 ? cores : 1);
    poprt_options_set(o, "cores_per_replica", v);
    snprintf(v, sizeof v, "%d", replicas);
    poprt_options_set(o, "replicas", v);
    poprt_options_set(o, "queue_size", "4096");
    for (int i = 0; i < d->n_in; i++) {
        char key[200], val[200];
        size_t at = 0;
        for (int k = 0; k < d->rank[i]; k++)
            at += (size_t)snprintf(val + at, sizeof val - at, "%s%lld", k ? "," : "",
                                   (long long)d->dims[i][k]);
        snprintf(key, sizeof key, "input_shape.%s", d->names[i]);
        if (poprt_options_set(o, key, val))
            die("input_shape");
    }
    for (int i = 0; i < g_n_opts; i++) {
        char key[200];
        const char *eq = strchr(g_opts[i], '=');
        snprintf(key, sizeof key, "%.*s", eq ? (int)(eq - g_opts[i]) : 0, g_opts[i]);
        if (!eq || poprt_options_set(o, key, eq + 1))
            die(g_opts[i]);
    }
    poprt_options_set(o, "pipeline", config == PIPE ? "1" : "0");
    if (config == PACK) {
        poprt_options_set(o, "pack", "1");
        snprintf(v, sizeof v, "%d", pack_rows);
        poprt_options_set(o, "pack_max_rows", v);
        snprintf(v, sizeof v, "%d", timeout_us);
        poprt_options_set(o, "pack_timeout_us", v);
        if (row_len) {
            snprintf(v, sizeof v, "%d", row_len);
            poprt_options_set(o, "pack_seq_len", v);
        }
    } else if (config == BATCH) {
        snprintf(v, sizeof v, "%d", max_batch);
        poprt_options_set(o, "max_batch", v);
        snprintf(v, sizeof v, "%d", timeout_us);
        poprt_options_set(o, "batch_timeout_us", v);
    }
    poprt_runner *r;
    if (poprt_runner_create(m, o, &r))
        die("runner_create");
    poprt_options_free(o);
    return r;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: serve_bench MODEL.onnx [--rates R,...] [--seconds S] "
                        "[--configs sync,batch,pack] [--max_batch N] [--timeout_us T] "
                        "[--shape NAME=D,D,...] [--stages CONFIG.json] [--lengths LO,HI] "
                        "[--pack_rows N] [--replicas N] [--pack_seq_len S] [--option K=V]...\n");
        return 2;
    }
    double rates[32] = {100, 200, 400};
    int n_rates = 3, max_batch = 8, timeout_us = 2000, do_sync = 1, do_batch = 1, do_pack = 1;
    int pack_rows = 0, replicas = 1, row_len = 0;
    long long lo = 0, hi = 0;
    double seconds = 2;
    char *shapes[16], *stages = NULL;
    int n_shapes = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--rates") && i + 1 < argc) {
            n_rates = 0;
            for (char *p = argv[++i]; *p && n_rates < 32;) {
                char *e;
                rates[n_rates++] = strtod(p, &e);
                p = *e == ',' ? e + 1 : e;
            }
        } else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--max_batch") && i + 1 < argc)
            max_batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--timeout_us") && i + 1 < argc)
            timeout_us = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--configs") && i + 1 < argc) {
            do_sync = strstr(argv[i + 1], "sync") != NULL;
            do_pack = strstr(argv[i + 1], "pack") != NULL;
            do_batch = strstr(argv[++i], "batch") != NULL;
        } else if (!strcmp(argv[i], "--stages") && i + 1 < argc) {
            stages = argv[++i];
        } else if (!strcmp(argv[i], "--lengths") && i + 1 < argc) {
            if (sscanf(argv[++i], "%lld,%lld", &lo, &hi) != 2 || lo < 1 || hi < lo) {
                fprintf(stderr, "serve_bench: --lengths LO,HI with 1 <= LO <= HI\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--pack_rows") && i + 1 < argc) {
            pack_rows = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--pack_seq_len") && i + 1 < argc) {
            row_len = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--replicas") && i + 1 < argc) {
            replicas = atoi(argv[++i]);
            if (replicas < 1) {
                fprintf(stderr, "serve_bench: --replicas N with N >= 1\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--option") && i + 1 < argc && g_n_opts < 16) {
            g_opts[g_n_opts++] = argv[++i];
        } else if (!strcmp(argv[i], "--shape") && i + 1 < argc && n_shapes < 16)
            shapes[n_shapes++] = argv[++i];
        else {
            fprintf(stderr, "serve_bench: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    poprt_model *m;
    if (poprt_model_load(argv[1], &m))
        die(argv[1]);
    if (stages) {
        char args[4200];
        poprt_pass_manager *pm;
        snprintf(args, sizeof args, "config=%s", stages);
        if (poprt_pass_manager_create(&pm) || poprt_pass_manager_add(pm, "manual_sharding", args) ||
            poprt_pass_manager_run(pm, m))
            die(stages);
        poprt_pass_manager_free(pm);
    }
    io_desc d;
    describe(m, shapes, n_shapes, &d);
    d.lo = lo;
    d.hi = hi;
    d.mask = -1;
    for (int i = 0; hi && i < d.n_in; i++) {
        if (d.rank[i] != 2 || d.dims[i][1] < hi) {
            fprintf(stderr, "serve_bench: --lengths needs every input [1, S >= %lld]\n", hi);
            return 2;
        }
        if (strstr(d.names[i], "mask"))
            d.mask = i;
    }
    if (hi && d.mask < 0) {
        fprintf(stderr, "serve_bench: --lengths needs an input named *mask*\n");
        return 2;
    }
    if (!hi)
        do_pack = 0;
    if (!pack_rows)
        pack_rows = max_batch;
    printf("serve_bench %s: Poisson arrivals, %.1f s per point, %d replica(s), max_batch %d, "
           "batch timeout %d us",
           argv[1], seconds, replicas, max_batch, timeout_us);
    if (hi)
        printf(", lengths uniform in %lld..%lld tokens, pack rows %d of %d tokens", lo, hi,
               pack_rows, row_len ? row_len : (int)d.dims[0][1]);
    for (int i = 0; i < g_n_opts; i++)
        printf("%s %s", i ? "," : ", options", g_opts[i]);
    printf("\n");
    printf("%-6s %10s %12s %10s %10s %10s %8s\n", "config", "offered/s", "throughput/s", "p50 ms",
           "p99 ms", "mean batch", "dropped");
    for (int i = 0; i < n_rates; i++)
        for (int c = SYNC; c <= PIPE; c++) {
            if ((c == SYNC && !do_sync) || (c == BATCH && !do_batch) || (c == PACK && !do_pack) ||
                (c == PIPE && !stages))
                continue;
            poprt_runner *r =
                make_runner(m, &d, c, max_batch, timeout_us, pack_rows, replicas, row_len);
            result res = drive(r, &d, rates[i], seconds, c == PACK);
            printf("%-6s %10.0f %12.1f %10.3f %10.3f %10.2f %8zu\n", config_names[c],
                   res.offered, res.throughput, res.p50, res.p99, res.mean_batch, res.dropped);
            fflush(stdout);
            poprt_runner_free(r);
        }
    poprt_model_free(m);
    return 0;
}
