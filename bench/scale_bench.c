/* scale_bench: how libpoprt's costs grow with a model's size, through the
 * public API. Not a test: it prints figures and ratios, asserts nothing.
 *
 *   scale_bench [--nodes N,N,...] [--loop N,N,...] [--reps R]
 *
 * Part 1, session creation: chains of N nodes (x -> Relu -> Mul(t, 0.5) ->
 * Add(t, t) -> Relu -> ...: runs of fusable elementwise steps cut by nodes
 * that read a value twice), each built in memory as ONNX bytes. For each N, the medians
 * over R fresh processes of poprt_model_load_from_memory and of
 * poprt_session_create (threads 1, optimize 1), and the time per node; a
 * linear implementation keeps the time per node flat as N grows.
 *
 * Part 2, Loop memory: a model whose Loop runs N iterations of a small body
 * (a carried [16] float vector: v = v * 0.5 + 1, plus a scan output of the
 * iteration count cast to float) and a Loop without scan outputs. Each case
 * runs in a fresh process; its peak resident memory (getrusage ru_maxrss)
 * is reported next to the smallest N's, as a ratio.
 *
 * The models are written here with a small protobuf writer (field numbers
 * from onnx.proto) so the bench needs nothing but the library. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <poprt/poprt.h>

/* ---- protobuf writer ----------------------------------------------------- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->n + n)
            cap *= 2;
        b->p = realloc(b->p, cap);
        if (!b->p) {
            fprintf(stderr, "scale_bench: out of memory\n");
            exit(1);
        }
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void varint(buf *b, uint64_t v)
{
    unsigned char t[10];
    int k = 0;
    do {
        t[k++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    put(b, t, (size_t)k);
}

static void f_int(buf *b, int field, int64_t v)
{
    varint(b, (uint64_t)field << 3);
    varint(b, (uint64_t)v);
}

static void f_bytes(buf *b, int field, const void *d, size_t n)
{
    varint(b, (uint64_t)field << 3 | 2);
    varint(b, n);
    put(b, d, n);
}

static void f_str(buf *b, int field, const char *s) { f_bytes(b, field, s, strlen(s)); }

static void f_msg(buf *b, int field, buf *m)
{
    f_bytes(b, field, m->p, m->n);
    free(m->p);
    *m = (buf){0};
}

/* ValueInfoProto of a tensor: name, elem type, dims (rank 0: scalar). */
static void value_info(buf *g, int field, const char *name, int elem, int rank, const int64_t *dims)
{
    buf vi = {0}, tp = {0}, tt = {0}, sh = {0};
    for (int d = 0; d < rank; d++) {
        buf dim = {0};
        f_int(&dim, 1, dims[d]);
        f_msg(&sh, 1, &dim);
    }
    f_int(&tt, 1, elem);
    if (sh.n || rank == 0)
        f_msg(&tt, 2, &sh);
    f_msg(&tp, 1, &tt);
    f_str(&vi, 1, name);
    f_msg(&vi, 2, &tp);
    f_msg(g, field, &vi);
}

/* NodeProto with up to 3 inputs and 2 outputs ("" skips), optional graph attr. */
static void node(buf *g, const char *op, const char *in0, const char *in1, const char *in2,
                 const char *out0, const char *out1, buf *attrs)
{
    buf n = {0};
    const char *ins[3] = {in0, in1, in2};
    for (int i = 0; i < 3; i++)
        if (ins[i])
            f_str(&n, 1, ins[i]);
    f_str(&n, 2, out0);
    if (out1)
        f_str(&n, 2, out1);
    f_str(&n, 4, op);
    if (attrs && attrs->n) {
        put(&n, attrs->p, attrs->n);
        free(attrs->p);
        *attrs = (buf){0};
    }
    f_msg(g, 1, &n);
}

static void initializer(buf *g, const char *name, int elem, int rank, const int64_t *dims,
                        const void *raw, size_t nbytes)
{
    buf t = {0};
    for (int d = 0; d < rank; d++)
        f_int(&t, 1, dims[d]);
    f_int(&t, 2, elem);
    f_str(&t, 8, name);
    f_bytes(&t, 9, raw, nbytes);
    f_msg(g, 5, &t);
}

static buf model(buf *graph)
{
    buf m = {0}, op = {0};
    f_int(&m, 1, 8); /* ir_version */
    f_str(&op, 1, "");
    f_int(&op, 2, 17);
    f_msg(&m, 8, &op);
    f_msg(&m, 7, graph);
    return m;
}

enum { FLOAT = 1, INT64 = 7, BOOL = 9 };

/* x[1,16] -> Relu -> Mul(t, 0.5) -> Add(t,t) -> Relu -> ... (n nodes) -> y */
static buf chain_model(long n)
{
    buf g = {0};
    const int64_t dims[2] = {1, 16};
    const float half = 0.5f;
    char in[32] = "x", out[32];
    for (long i = 0; i < n; i++) {
        if (i == n - 1)
            snprintf(out, sizeof out, "y");
        else
            snprintf(out, sizeof out, "t%ld", i);
        if (i % 3 == 2)
            node(&g, "Add", in, in, NULL, out, NULL, NULL);
        else if (i % 3 == 1)
            node(&g, "Mul", in, "half", NULL, out, NULL, NULL);
        else
            node(&g, "Relu", in, NULL, NULL, out, NULL, NULL);
        memcpy(in, out, sizeof in);
    }
    f_str(&g, 2, "chain");
    initializer(&g, "half", FLOAT, 0, NULL, &half, sizeof half);
    value_info(&g, 11, "x", FLOAT, 2, dims);
    value_info(&g, 12, "y", FLOAT, 2, dims);
    return model(&g);
}

/* Loop of `iters` iterations over v[16]: v = v * 0.5 + 1; with scan, also
 * the iteration number as a float scan output. */
static buf loop_model(long iters, int scan)
{
    buf body = {0}, g = {0}, attr = {0};
    const int64_t d16 = 16;
    float half = 0.5f, one = 1.0f;
    node(&body, "Identity", "cond_in", NULL, NULL, "cond_out", NULL, NULL);
    node(&body, "Mul", "v_in", "half", NULL, "v_half", NULL, NULL);
    node(&body, "Add", "v_half", "one", NULL, "v_out", NULL, NULL);
    if (scan) {
        buf to = {0};
        f_str(&to, 1, "to");
        f_int(&to, 3, FLOAT);
        f_int(&to, 20, 2);
        f_msg(&attr, 5, &to);
        node(&body, "Cast", "iter", NULL, NULL, "it_f", NULL, &attr);
    }
    f_str(&body, 2, "body");
    initializer(&body, "half", FLOAT, 0, NULL, &half, sizeof half);
    initializer(&body, "one", FLOAT, 0, NULL, &one, sizeof one);
    value_info(&body, 11, "iter", INT64, 0, NULL);
    value_info(&body, 11, "cond_in", BOOL, 0, NULL);
    value_info(&body, 11, "v_in", FLOAT, 1, &d16);
    value_info(&body, 12, "cond_out", BOOL, 0, NULL);
    value_info(&body, 12, "v_out", FLOAT, 1, &d16);
    if (scan)
        value_info(&body, 12, "it_f", FLOAT, 0, NULL);

    buf a = {0};
    f_str(&a, 1, "body");
    f_msg(&a, 6, &body);
    f_int(&a, 20, 5);
    f_msg(&attr, 5, &a);
    node(&g, "Loop", "M", "cond", "v0", "v", scan ? "its" : NULL, &attr);
    int64_t m = iters;
    unsigned char t = 1;
    f_str(&g, 2, "loop");
    initializer(&g, "M", INT64, 0, NULL, &m, sizeof m);
    initializer(&g, "cond", BOOL, 0, NULL, &t, 1);
    value_info(&g, 11, "v0", FLOAT, 1, &d16);
    value_info(&g, 12, "v", FLOAT, 1, &d16);
    if (scan) {
        int64_t di = iters;
        value_info(&g, 12, "its", FLOAT, 1, &di);
    }
    return model(&g);
}

/* ---- measurement ---------------------------------------------------------------- */

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void) { return clock_s(CLOCK_MONOTONIC); }
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static _Noreturn void die_api(const char *what)
{
    fprintf(stderr, "scale_bench: %s: %s\n", what, poprt_last_error());
    exit(1);
}

/* In a child: load and create, write their wall times and the creation's
 * CPU time (what a busy machine does not inflate) to fd. */
static void create_child(const buf *m, int fd)
{
    poprt_model *pm;
    poprt_session *s;
    poprt_options *o;
    if (poprt_options_create(&o) || poprt_options_set(o, "threads", "1"))
        die_api("options");
    double t0 = now();
    if (poprt_model_load_from_memory(m->p, m->n, NULL, &pm))
        die_api("load");
    double t1 = now(), c1 = cpu_now();
    if (poprt_session_create(pm, o, &s))
        die_api("session_create");
    double t[3] = {t1 - t0, now() - t1, cpu_now() - c1};
    if (write(fd, t, sizeof t) != (ssize_t)sizeof t)
        exit(1);
    poprt_session_free(s);
    poprt_model_free(pm);
    poprt_options_free(o);
}

/* In a child: create, run once, write peak RSS (KiB) to fd. */
static void loop_child(const buf *m, int fd)
{
    poprt_model *pm;
    poprt_session *s;
    poprt_stepio *io;
    float v0[16] = {0}, v[16];
    const int64_t d16 = 16;
    if (poprt_model_load_from_memory(m->p, m->n, NULL, &pm) || poprt_session_create(pm, NULL, &s) ||
        poprt_stepio_create(&io))
        die_api("loop model");
    if (poprt_stepio_set_input(io, "v0", POPRT_DTYPE_FLOAT, &d16, 1, v0, sizeof v0) ||
        poprt_stepio_set_output(io, "v", v, sizeof v))
        die_api("stepio");
    if (poprt_session_run(s, io))
        die_api("run");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double kb = (double)ru.ru_maxrss;
    if (write(fd, &kb, sizeof kb) != (ssize_t)sizeof kb)
        exit(1);
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(pm);
}

/* Runs fn(m, fd) in a fresh process; reads k doubles back. */
static int in_child(void (*fn)(const buf *, int), const buf *m, double *out, size_t k)
{
    int p[2];
    if (pipe(p))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        fn(m, p[1]);
        _exit(0);
    }
    close(p[1]);
    ssize_t got = read(p[0], out, k * sizeof *out);
    close(p[0]);
    int ws;
    waitpid(pid, &ws, 0);
    return got == (ssize_t)(k * sizeof *out) && WIFEXITED(ws) && WEXITSTATUS(ws) == 0 ? 0 : -1;
}

static int parse_list(const char *s, long *v, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *e;
        v[n++] = strtol(s, &e, 10);
        s = *e == ',' ? e + 1 : e;
        if (e == s && *e)
            return -1;
    }
    return n;
}

int main(int argc, char **argv)
{
    long nodes[16] = {1000, 10000, 100000}, loops[16] = {1000, 1000000};
    int n_nodes = 3, n_loops = 2, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--nodes") && i + 1 < argc)
            n_nodes = parse_list(argv[++i], nodes, 16);
        else if (!strcmp(argv[i], "--loop") && i + 1 < argc)
            n_loops = parse_list(argv[++i], loops, 16);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: scale_bench [--nodes N,...] [--loop N,...] [--reps R]\n");
            return 2;
        }
    }
    if (n_nodes < 0 || n_loops < 0 || reps < 1 || reps > 99) {
        fprintf(stderr, "scale_bench: bad arguments\n");
        return 2;
    }

    printf("session creation of an N-node chain (median of %d processes)\n", reps);
    printf("%10s %10s %12s %14s %16s\n", "nodes", "load ms", "create ms", "create cpu ms",
           "cpu us/node");
    for (int i = 0; i < n_nodes; i++) {
        buf m = chain_model(nodes[i]);
        double load[99], create[99], cpu[99];
        for (int r = 0; r < reps; r++) {
            double t[3];
            if (in_child(create_child, &m, t, 3)) {
                fprintf(stderr, "scale_bench: child failed for %ld nodes\n", nodes[i]);
                return 1;
            }
            load[r] = t[0];
            create[r] = t[1];
            cpu[r] = t[2];
        }
        qsort(load, (size_t)reps, sizeof *load, cmp_d);
        qsort(create, (size_t)reps, sizeof *create, cmp_d);
        qsort(cpu, (size_t)reps, sizeof *cpu, cmp_d);
        printf("%10ld %10.1f %12.1f %14.1f %16.2f\n", nodes[i], load[reps / 2] * 1e3,
               create[reps / 2] * 1e3, cpu[reps / 2] * 1e3, cpu[reps / 2] * 1e6 / (double)nodes[i]);
        free(m.p);
    }

    printf("\nLoop peak resident memory (one run, fresh process each)\n");
    printf("%10s %6s %12s %10s\n", "iters", "scan", "peak KiB", "ratio");
    for (int scan = 0; scan < 2; scan++) {
        double base = 0;
        for (int i = 0; i < n_loops; i++) {
            buf m = loop_model(loops[i], scan);
            double kb;
            if (in_child(loop_child, &m, &kb, 1)) {
                fprintf(stderr, "scale_bench: loop child failed for %ld iterations\n", loops[i]);
                return 1;
            }
            if (i == 0)
                base = kb;
            printf("%10ld %6s %12.0f %10.2f\n", loops[i], scan ? "yes" : "no", kb, kb / base);
            free(m.p);
        }
    }
    return 0;
}
