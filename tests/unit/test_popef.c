/* Unit tests: executable files (.popef) and the engine cache. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "builder.h"
#include "compiler/popef.h"
#include "api/api.h"
#include "poprt/experimental.h"

static char tmpdir[64];

static void setup(void)
{
    strcpy(tmpdir, "/tmp/poprt_popef_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* y = Relu(MatMul(x, W) + b) with a 64x32 weight (big enough to be placed
 * in the weights section). */
static poprt_model *model(void)
{
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {2, 64}, wd[2] = {64, 32}, bd[1] = {32};
    static float w[64 * 32], b[32];
    for (int i = 0; i < 64 * 32; i++)
        w[i] = (float)((i * 7919) % 101) / 101.0f - 0.5f;
    for (int i = 0; i < 32; i++)
        b[i] = (float)i / 32.0f - 0.25f;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_const(m, "b", POPRT_DTYPE_FLOAT, 1, bd, b);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"mm"});
    tb_node(m, "Add", 2, (const char *[]){"mm", "b"}, 1, (const char *[]){"s"});
    tb_node(m, "Relu", 1, (const char *[]){"s"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    return pm;
}

static void run(poprt_session *s, float *y)
{
    float x[128];
    for (int i = 0; i < 128; i++)
        x[i] = (float)(i % 13) / 6.5f - 1;
    int64_t d[2] = {2, 64};
    poprt_stepio *io;
    poprt_stepio_create(&io);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x);
    poprt_stepio_set_output(io, "y", y, 64 * sizeof(float));
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    poprt_stepio_free(io);
}

static void export_file(const char *path, float *ref)
{
    poprt_model *m = model();
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(m, NULL, &s), POPRT_OK);
    run(s, ref);
    ck_assert_int_eq(poprt_session_export(s, path), POPRT_OK);
    poprt_session_free(s);
    poprt_model_free(m);
}

static void *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(*n);
    ck_assert_uint_eq(fread(p, 1, *n, f), *n);
    fclose(f);
    return p;
}

static void write_all(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(p, 1, n, f), n);
    fclose(f);
}

START_TEST(export_load_run_matches)
{
    char path[128];
    snprintf(path, sizeof path, "%s/m.popef", tmpdir);
    float ref[64], got[64];
    export_file(path, ref);
    ck_assert_int_eq(poprt_file_is_executable(path), 1);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_load(path, NULL, &s), POPRT_OK);
    run(s, got);
    ck_assert_int_eq(memcmp(ref, got, sizeof ref), 0);
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_session_input(s, 0, &info), POPRT_OK);
    ck_assert_str_eq(info.name, "x");
    ck_assert_int_eq(info.dims[1], 64);
    /* two sessions of one file share the weights in the mapping */
    poprt_session *s2;
    poprt_options *o;
    poprt_options_create(&o);
    poprt_options_set(o, "threads", "2");
    ck_assert_int_eq(poprt_session_load(path, o, &s2), POPRT_OK);
    run(s2, got);
    ck_assert_int_eq(memcmp(ref, got, sizeof ref), 0);
    poprt_options_set(o, "input_shape.x", "3,64");
    poprt_session *s3 = NULL;
    ck_assert_int_eq(poprt_session_load(path, o, &s3), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "input_shape.x"));
    poprt_options_free(o);
    poprt_session_free(s2);
    poprt_session_free(s);
    ck_assert_int_eq(poprt_file_is_executable("/nonexistent"), 0);
}
END_TEST

/* The bytes of a file loaded from memory (the fuzz target's way in) give
 * the session the file gives, and fail as the file would. */
START_TEST(load_from_memory_matches_the_file)
{
    char path[128];
    snprintf(path, sizeof path, "%s/m.popef", tmpdir);
    float ref[64], got[64];
    export_file(path, ref);
    size_t n;
    unsigned char *p = read_all(path, &n);
    poprt_session *s = NULL;
    ck_assert_int_eq(poprt__popef_load_memory("mem.popef", p, n, NULL, &s), POPRT_OK);
    free(p); /* copied: the session does not need the caller's bytes */
    run(s, got);
    ck_assert_int_eq(memcmp(ref, got, sizeof ref), 0);
    poprt_session_free(s);
    s = NULL;
    p = read_all(path, &n);
    ck_assert_int_eq(poprt__popef_load_memory("mem.popef", p, n - 1, NULL, &s),
                     POPRT_STATUS_PARSE_ERROR);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "mem.popef"));
    ck_assert_ptr_null(s);
    free(p);
}
END_TEST

START_TEST(corrupt_truncated_and_foreign_files_are_rejected)
{
    char path[128], bad[160];
    snprintf(path, sizeof path, "%s/m.popef", tmpdir);
    snprintf(bad, sizeof bad, "%s/bad.popef", tmpdir);
    float ref[64];
    export_file(path, ref);
    size_t n;
    unsigned char *p = read_all(path, &n);
    poprt_session *s = NULL;
    /* truncations at several points */
    size_t cuts[] = {0, 7, 100, 511, 600, n / 2, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_all(bad, p, cuts[i]);
        ck_assert_int_eq(poprt_session_load(bad, NULL, &s), POPRT_STATUS_PARSE_ERROR);
        ck_assert_ptr_nonnull(strstr(poprt_last_error(), "bad.popef"));
    }
    /* a flipped byte in each section and in the header */
    size_t flips[] = {20, 600, n / 2, n - 10};
    for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
        p[flips[i]] ^= 0x40;
        write_all(bad, p, n);
        ck_assert_int_eq(poprt_session_load(bad, NULL, &s), POPRT_STATUS_PARSE_ERROR);
        p[flips[i]] ^= 0x40;
    }
    /* another format version, with a consistent header hash */
    poprt__popef_header h;
    memcpy(&h, p, sizeof h);
    h.format = 99;
    h.header_hash = poprt__hash64(&h, offsetof(poprt__popef_header, header_hash), 0);
    memcpy(p, &h, sizeof h);
    write_all(bad, p, n);
    ck_assert_int_eq(poprt_session_load(bad, NULL, &s), POPRT_STATUS_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "format version 99"));
    /* an ONNX file is not an executable */
    ck_assert_int_eq(poprt_file_is_executable(bad), 1);
    write_all(bad, "\x08\x07", 2);
    ck_assert_int_eq(poprt_file_is_executable(bad), 0);
    ck_assert_int_eq(poprt_session_load(bad, NULL, &s), POPRT_STATUS_PARSE_ERROR);
    ck_assert_ptr_null(s);
    free(p);
}
END_TEST

static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strstr(e->d_name, ".popef") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* Constants that folding leaves unread are not written: W2 = W * 2 and
 * W3 = W2 * 3 are folded when the session is compiled, and only W (listed)
 * and W3 (read by MatMul) belong in the weights section, not W2. */
START_TEST(unread_folded_constants_are_not_written)
{
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {2, 64}, wd[2] = {64, 32}, sd[1] = {1};
    static float w[64 * 32];
    for (int i = 0; i < 64 * 32; i++)
        w[i] = (float)((i * 31) % 17) / 17.0f - 0.5f;
    const float two = 2.0f, three = 3.0f;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_const(m, "two", POPRT_DTYPE_FLOAT, 1, sd, &two);
    tb_const(m, "three", POPRT_DTYPE_FLOAT, 1, sd, &three);
    tb_node(m, "Mul", 2, (const char *[]){"W", "two"}, 1, (const char *[]){"W2"});
    tb_node(m, "Mul", 2, (const char *[]){"W2", "three"}, 1, (const char *[]){"W3"});
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W3"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(pm, NULL, &s), POPRT_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/folded.popef", tmpdir);
    ck_assert_int_eq(poprt_session_export(s, path), POPRT_OK);
    size_t n;
    unsigned char *f = read_all(path, &n);
    poprt__popef_header h;
    ck_assert_uint_ge(n, sizeof h);
    memcpy(&h, f, sizeof h);
    uint64_t weights = 0;
    for (uint32_t i = 0; i < h.n_sections && i < POPRT__POPEF_MAX_SECTIONS; i++)
        if (h.sections[i].kind == POPRT__POPEF_WEIGHTS)
            weights = h.sections[i].size;
    /* W and W3: 2 x 8192 bytes plus alignment; W2 too would be 24 KiB */
    ck_assert_uint_ge(weights, 2 * sizeof w);
    ck_assert_uint_lt(weights, 2 * sizeof w + 4096);
    free(f);
    /* and it still runs: y = x * (6 W) */
    poprt_session *l;
    ck_assert_int_eq(poprt_session_load(path, NULL, &l), POPRT_OK);
    float x[128], y[64], want[64];
    for (int i = 0; i < 128; i++)
        x[i] = (float)(i % 9) / 4.5f - 1;
    for (int r = 0; r < 2; r++)
        for (int j = 0; j < 32; j++) {
            double acc = 0;
            for (int k = 0; k < 64; k++)
                acc += (double)x[r * 64 + k] * (6.0 * w[k * 32 + j]);
            want[r * 32 + j] = (float)acc;
        }
    poprt_stepio *io;
    poprt_stepio_create(&io);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, sizeof x);
    poprt_stepio_set_output(io, "y", y, sizeof y);
    ck_assert_int_eq(poprt_session_run(l, io), POPRT_OK);
    for (int i = 0; i < 64; i++) /* float sums of 64 terms: 1e-4 relative + 1e-5 */
        ck_assert_float_le(fabsf(y[i] - want[i]), 1e-5f + 1e-4f * fabsf(want[i]));
    poprt_stepio_free(io);
    poprt_session_free(l);
    poprt_session_free(s);
    poprt_model_free(pm);
}
END_TEST

/* y = x W with a 1200x1000 weight: its executable file (~4.8 MB) is larger
 * than one checksum chunk and than POPRT__MAP_MIN_BYTES (so it is mapped). */
static poprt_model *big_model(float **w_out)
{
    enum { K = 1200, N = 1000 };
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {1, K}, wd[2] = {K, N};
    float *w = malloc(sizeof(float) * K * N);
    ck_assert_ptr_nonnull(w);
    for (int i = 0; i < K * N; i++)
        w[i] = (float)(((long long)i * 7919) % 211) / 211.0f - 0.5f;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    *w_out = w;
    return pm;
}

static poprt_status run_big(poprt_session *s, float *y)
{
    static float x[1200];
    const int64_t xd[2] = {1, 1200};
    for (int i = 0; i < 1200; i++)
        x[i] = (float)(i % 17) / 8.5f - 1;
    poprt_stepio *io;
    poprt_stepio_create(&io);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, sizeof x);
    poprt_stepio_set_output(io, "y", y, 1000 * sizeof(float));
    poprt_status st = poprt_session_run(s, io);
    poprt_stepio_free(io);
    return st;
}

/* Sections bigger than one checksum chunk (4 MiB) verify on any number of
 * threads with the same result, and a flipped byte in a later chunk is
 * found whatever the thread count. */
START_TEST(big_sections_verify_on_threads)
{
    enum { N = 1000 };
    float *w;
    poprt_model *pm = big_model(&w);
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "threads", "2"), POPRT_OK);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(pm, o, &s), POPRT_OK);
    char path[128], bad[160];
    snprintf(path, sizeof path, "%s/big.popef", tmpdir);
    snprintf(bad, sizeof bad, "%s/bigbad.popef", tmpdir);
    ck_assert_int_eq(poprt_session_export(s, path), POPRT_OK);
    float y1[N], y3[N];
    const char *threads[] = {"1", "3"};
    float *ys[] = {y1, y3};
    for (int t = 0; t < 2; t++) {
        ck_assert_int_eq(poprt_options_set(o, "threads", threads[t]), POPRT_OK);
        poprt_session *l = NULL;
        ck_assert_int_eq(poprt_session_load(path, o, &l), POPRT_OK);
        ck_assert_int_eq(run_big(l, ys[t]), POPRT_OK);
        poprt_session_free(l);
    }
    ck_assert_int_eq(memcmp(y1, y3, sizeof y1), 0); /* same program, bit-identical */
    size_t n;
    unsigned char *p = read_all(path, &n);
    ck_assert_uint_gt(n, (size_t)6 << 20);
    p[n - 100] ^= 0x01; /* in the last section, past its first 4 MiB */
    write_all(bad, p, n);
    for (int t = 0; t < 2; t++) {
        poprt_session *l = NULL;
        ck_assert_int_eq(poprt_options_set(o, "threads", threads[t]), POPRT_OK);
        ck_assert_int_eq(poprt_session_load(bad, o, &l), POPRT_STATUS_PARSE_ERROR);
        ck_assert_ptr_nonnull(strstr(poprt_last_error(), "checksum mismatch"));
        ck_assert_ptr_null(l);
    }
    free(p);
    free(w);
    poprt_options_free(o);
    poprt_session_free(s);
    poprt_model_free(pm);
}
END_TEST

/* One compiled program backs several sessions at once: two sessions (one
 * on 2 threads) made from one program run concurrently on two threads,
 * each result bit-equal to a session of its own; the program is freed with
 * its last session. */
typedef struct {
    poprt_session *s;
    float y[64];
} shared_run;

static void *run_many(void *arg)
{
    shared_run *r = arg;
    for (int i = 0; i < 50; i++)
        run(r->s, r->y);
    return NULL;
}

START_TEST(one_program_many_sessions)
{
    poprt_model *pm = model();
    float ref[64];
    poprt_session *alone;
    ck_assert_int_eq(poprt_session_create(pm, NULL, &alone), POPRT_OK);
    run(alone, ref);
    poprt_session_free(alone);
    poprt__model *c;
    ck_assert_int_eq(poprt__model_clone(pm->m, &c), POPRT_OK);
    poprt__program *p;
    ck_assert_int_eq(poprt__program_compile(c, NULL, &poprt__api_folder, NULL, &p), POPRT_OK);
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "threads", "2"), POPRT_OK);
    shared_run r[2];
    ck_assert_int_eq(poprt__session_new(p, NULL, &r[0].s), POPRT_OK);
    ck_assert_int_eq(poprt__session_new(p, o, &r[1].s), POPRT_OK);
    ck_assert_ptr_eq(r[0].s->prog, r[1].s->prog);
    ck_assert_int_eq(p->refs, 3);
    poprt__program_unref(p); /* the sessions keep it */
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&t[i], NULL, run_many, &r[i]), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        ck_assert_int_eq(memcmp(r[i].y, ref, sizeof ref), 0);
        poprt__session_free(r[i].s);
    }
    poprt_options_free(o);
    poprt_model_free(pm);
}
END_TEST

/* The experimental poprt_session_share: a second session on the first's
 * program (its own run options), outliving it; compile options refused. */
START_TEST(shared_session_public_call)
{
    poprt_model *pm = model();
    float ref[64], got[64];
    poprt_session *a, *b = NULL;
    ck_assert_int_eq(poprt_session_create(pm, NULL, &a), POPRT_OK);
    run(a, ref);
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.x", "2,64"), POPRT_OK);
    ck_assert_int_eq(poprt_session_share(a, o, &b), POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "input_shape.x"));
    ck_assert_ptr_null(b);
    poprt_options_free(o);
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "threads", "2"), POPRT_OK);
    ck_assert_int_eq(poprt_session_share(a, o, &b), POPRT_OK);
    ck_assert_ptr_eq(a->prog, b->prog);
    poprt_session_free(a); /* b keeps the program */
    run(b, got);
    ck_assert_int_eq(memcmp(ref, got, sizeof ref), 0);
    poprt_session_free(b);
    poprt_options_free(o);
    poprt_model_free(pm);
}
END_TEST

/* An executable file is exactly a program: loading one and writing the
 * loaded program again gives the same bytes. */
START_TEST(executable_round_trips_a_program)
{
    poprt_model *pm = model();
    poprt__model *c;
    ck_assert_int_eq(poprt__model_clone(pm->m, &c), POPRT_OK);
    poprt__program *p;
    ck_assert_int_eq(poprt__program_compile(c, NULL, &poprt__api_folder, NULL, &p), POPRT_OK);
    void *a, *b;
    size_t na, nb;
    ck_assert_int_eq(poprt__program_serialize(p, 42, &a, &na), POPRT_OK);
    void *copy = poprt__aligned_alloc(na);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, a, na);
    poprt__blob *f = poprt__blob_wrap_aligned(copy, na);
    ck_assert_ptr_nonnull(f);
    poprt__program *q;
    ck_assert_int_eq(poprt__program_load("mem.popef", f, NULL, &poprt__api_folder, &q), POPRT_OK);
    poprt__blob_unref(f); /* the program keeps the bytes */
    ck_assert_int_eq(poprt__program_serialize(q, 42, &b, &nb), POPRT_OK);
    ck_assert_uint_eq(na, nb);
    ck_assert_int_eq(memcmp(a, b, na), 0);
    /* and runs as the original */
    float y0[64], y1[64];
    poprt_session *s0, *s1;
    ck_assert_int_eq(poprt__session_new(p, NULL, &s0), POPRT_OK);
    ck_assert_int_eq(poprt__session_new(q, NULL, &s1), POPRT_OK);
    run(s0, y0);
    run(s1, y1);
    ck_assert_int_eq(memcmp(y0, y1, sizeof y0), 0);
    poprt__session_free(s0);
    poprt__session_free(s1);
    poprt__program_unref(p);
    poprt__program_unref(q);
    poprt__free(a);
    poprt__free(b);
    poprt_model_free(pm);
}
END_TEST

/* A mapped file cut short afterwards: the next run fails with IO_ERROR
 * naming it instead of dying of SIGBUS; a file exported again over it (a
 * new file renamed into place) leaves the running session's mapping intact. */
START_TEST(mapped_file_truncated_or_replaced)
{
    float *w, y0[1000], y1[1000];
    poprt_model *pm = big_model(&w);
    poprt_session *s, *l;
    ck_assert_int_eq(poprt_session_create(pm, NULL, &s), POPRT_OK);
    char path[128];
    snprintf(path, sizeof path, "%s/big.popef", tmpdir);
    ck_assert_int_eq(poprt_session_export(s, path), POPRT_OK);
    ck_assert_int_eq(poprt_session_load(path, NULL, &l), POPRT_OK);
    ck_assert_int_eq(run_big(l, y0), POPRT_OK);
    /* exported again over the file the session maps */
    ck_assert_int_eq(poprt_session_export(s, path), POPRT_OK);
    ck_assert_int_eq(run_big(l, y1), POPRT_OK);
    ck_assert_int_eq(memcmp(y0, y1, sizeof y0), 0);
    /* no temporary file left beside it */
    DIR *d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    int files = 0;
    for (struct dirent *e; (e = readdir(d));)
        files += e->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(files, 1);
    poprt_session_free(l);
    /* cut short under a loaded session */
    ck_assert_int_eq(poprt_session_load(path, NULL, &l), POPRT_OK);
    ck_assert_int_eq(truncate(path, 4096), 0);
    ck_assert_int_eq(run_big(l, y1), POPRT_STATUS_IO_ERROR);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "big.popef"));
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "truncated"));
    poprt_session_free(l);
    poprt_session_free(s);
    poprt_model_free(pm);
    free(w);
}
END_TEST

/* A FIFO where a file is expected is refused at once (opening one for
 * reading would wait for a writer forever). */
START_TEST(fifo_is_refused_without_blocking)
{
    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/pipe", tmpdir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    poprt_session *l = NULL;
    ck_assert_int_eq(poprt_session_load(fifo, NULL, &l), POPRT_STATUS_IO_ERROR);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "not a regular file"));
    ck_assert_ptr_null(l);
    poprt_model *m = NULL;
    ck_assert_int_eq(poprt_model_load(fifo, &m), POPRT_STATUS_IO_ERROR);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(poprt_file_is_executable(fifo), 0);
}
END_TEST

START_TEST(engine_cache_compiles_once)
{
    char cache[128];
    snprintf(cache, sizeof cache, "%s/cache", tmpdir);
    poprt_model *m = model();
    poprt_options *o;
    poprt_options_create(&o);
    ck_assert_int_eq(poprt_options_set(o, "cache_dir", cache), POPRT_OK);
    float a[64], b[64];
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_OK);
    run(s, a);
    poprt_session_free(s);
    ck_assert_int_eq(count_files(cache), 1);
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_OK); /* from the cache */
    run(s, b);
    poprt_session_free(s);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0);
    ck_assert_int_eq(count_files(cache), 1);
    /* other options: another entry */
    poprt_options_set(o, "batches_per_step", "1");
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_OK);
    poprt_session_free(s);
    ck_assert_int_eq(count_files(cache), 2);
    poprt_options_free(o);
    poprt_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("popef");
    TCase *tc = tcase_create("popef");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, export_load_run_matches);
    tcase_add_test(tc, corrupt_truncated_and_foreign_files_are_rejected);
    tcase_add_test(tc, load_from_memory_matches_the_file);
    tcase_add_test(tc, engine_cache_compiles_once);
    tcase_add_test(tc, unread_folded_constants_are_not_written);
    tcase_add_test(tc, big_sections_verify_on_threads);
    tcase_add_test(tc, mapped_file_truncated_or_replaced);
    tcase_add_test(tc, one_program_many_sessions);
    tcase_add_test(tc, executable_round_trips_a_program);
    tcase_add_test(tc, shared_session_public_call);
    tcase_add_test(tc, fifo_is_refused_without_blocking);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
