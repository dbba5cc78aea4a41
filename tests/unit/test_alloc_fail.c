/* Allocation failures, in the manner of SQLite's and curl's out-of-memory
 * tests: for each scenario (a sequence of public calls) the allocations of a
 * clean pass are counted (N), then for i = 1..N the i-th is made to fail
 * (the countdown in lib/core/alloc.c, core.h), once alone and once with every
 * later one failing too. Each time the calls must
 *  - return POPRT_STATUS_OUT_OF_MEMORY with a message, or POPRT_OK when the
 *    allocation was an optional path with a fallback, and then give exactly
 *    the clean pass's results;
 *  - not crash;
 *  - leave the handles they were given usable (the scenario's check runs them
 *    again, without failures, and compares with the clean results) and every
 *    out-parameter untouched;
 *  - leak nothing: the library's heap blocks are counted in the wrapper
 *    (poprt__alloc_live), and sanitizer builds ask LeakSanitizer too (which
 *    also sees cJSON's blocks).
 * Each scenario reports its allocation count and the distinct allocation
 * sites (return addresses into the library, printed as offsets into this
 * executable for addr2line -f -e) it reached and made fail; a site the clean
 * pass reaches and no iteration fails is an error. Sites reached only after
 * a failure (error paths) are counted apart. Every allocation is failed, in
 * plain and sanitizer builds alike (a few seconds; ~20 s under ASan).
 *
 * cJSON allocates inside its own shared library, where no link-time wrap
 * reaches its malloc calls; its allocating entry points are wrapped instead
 * (-Wl,--wrap=cJSON_..., listed in tests/meson.build, which also checks that
 * the library calls no other allocating cJSON function): each such call passes
 * the same fault point and, failing, returns what cJSON returns when its malloc
 * fails (NULL or false, errno ENOMEM) without calling cJSON.
 *
 * Environment: POPRT_OOM_TRACE=1 prints each iteration before it runs (to
 * find the one that crashes); POPRT_OOM_ONLY=substring runs only scenarios
 * whose name contains it; POPRT_OOM_SITES=1 lists the clean pass's sites. */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "builder.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* ---- cJSON's allocating entry points, behind the fault point ------------- */

#define JSON_FAULT(ret)                                                                     \
    do {                                                                                    \
        if (poprt__fault(POPRT__CALLER)) {                                                  \
            errno = ENOMEM;                                                                 \
            return ret;                                                                     \
        }                                                                                   \
    } while (0)

cJSON *__real_cJSON_CreateArray(void);
cJSON *__real_cJSON_CreateObject(void);
cJSON *__real_cJSON_CreateNumber(double n);
cJSON *__real_cJSON_AddStringToObject(cJSON *o, const char *name, const char *s);
cJSON *__real_cJSON_AddNumberToObject(cJSON *o, const char *name, double n);
cJSON_bool __real_cJSON_AddItemToObject(cJSON *o, const char *name, cJSON *item);
char *__real_cJSON_PrintUnformatted(const cJSON *item);
cJSON *__real_cJSON_ParseWithLength(const char *value, size_t n);
cJSON *__wrap_cJSON_CreateArray(void);
cJSON *__wrap_cJSON_CreateObject(void);
cJSON *__wrap_cJSON_CreateNumber(double n);
cJSON *__wrap_cJSON_AddStringToObject(cJSON *o, const char *name, const char *s);
cJSON *__wrap_cJSON_AddNumberToObject(cJSON *o, const char *name, double n);
cJSON_bool __wrap_cJSON_AddItemToObject(cJSON *o, const char *name, cJSON *item);
char *__wrap_cJSON_PrintUnformatted(const cJSON *item);
cJSON *__wrap_cJSON_ParseWithLength(const char *value, size_t n);

cJSON *__wrap_cJSON_CreateArray(void)
{
    JSON_FAULT(NULL);
    return __real_cJSON_CreateArray();
}
cJSON *__wrap_cJSON_CreateObject(void)
{
    JSON_FAULT(NULL);
    return __real_cJSON_CreateObject();
}
cJSON *__wrap_cJSON_CreateNumber(double n)
{
    JSON_FAULT(NULL);
    return __real_cJSON_CreateNumber(n);
}
cJSON *__wrap_cJSON_AddStringToObject(cJSON *o, const char *name, const char *s)
{
    JSON_FAULT(NULL);
    return __real_cJSON_AddStringToObject(o, name, s);
}
cJSON *__wrap_cJSON_AddNumberToObject(cJSON *o, const char *name, double n)
{
    JSON_FAULT(NULL);
    return __real_cJSON_AddNumberToObject(o, name, n);
}
cJSON_bool __wrap_cJSON_AddItemToObject(cJSON *o, const char *name, cJSON *item)
{
    JSON_FAULT(0); /* the key's copy failed: the item is not added */
    return __real_cJSON_AddItemToObject(o, name, item);
}
char *__wrap_cJSON_PrintUnformatted(const cJSON *item)
{
    JSON_FAULT(NULL);
    return __real_cJSON_PrintUnformatted(item);
}
cJSON *__wrap_cJSON_ParseWithLength(const char *value, size_t n)
{
    JSON_FAULT(NULL);
    return __real_cJSON_ParseWithLength(value, n);
}

/* ---- small helpers (the test's own memory is plain malloc: not counted) --- */

typedef struct bytes {
    unsigned char *p;
    size_t n;
} bytes;

static void bytes_set(bytes *b, const void *p, size_t n)
{
    free(b->p);
    b->p = malloc(n ? n : 1);
    ck_assert_ptr_nonnull(b->p);
    if (n)
        memcpy(b->p, p, n);
    b->n = n;
}

static void bytes_append(bytes *b, const void *p, size_t n)
{
    b->p = realloc(b->p, b->n + n + 1);
    ck_assert_ptr_nonnull(b->p);
    if (n)
        memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void bytes_free(bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

static int bytes_eq(const bytes *a, const bytes *b)
{
    return a->n == b->n && (a->n == 0 || memcmp(a->p, b->p, a->n) == 0);
}

static int read_file(const char *path, bytes *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    bytes b = {0};
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        bytes_append(&b, buf, k);
    fclose(f);
    bytes_free(out);
    *out = b;
    if (!out->p)
        bytes_set(out, "", 0);
    return 1;
}

static char tmpdir[64];
/* Which allocation is failing now (for the checks' messages). */
static long cur_i;
static int cur_mode;
static unsigned long cur_site;

static void make_tmpdir(void)
{
    if (tmpdir[0])
        return;
    strcpy(tmpdir, "/tmp/poprt_oom_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

/* Removes the files in dir and, with rm_dir, dir itself (one level of
 * subfolders, such as an engine cache, is emptied and removed too). */
static void clear_dir_(const char *dir, int rm_dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[512];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            if (unlink(p) != 0)
                clear_dir_(p, 1);
        }
    if (d)
        closedir(d);
    if (rm_dir)
        rmdir(dir);
}

static void clear_dir(const char *dir) { clear_dir_(dir, 0); }

static void remove_tmpdir(void)
{
    if (!tmpdir[0])
        return;
    clear_dir_(tmpdir, 1);
    tmpdir[0] = 0;
}

static size_t files_in_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static const char *tmp_path(const char *name)
{
    static char p[8][256];
    static int k;
    make_tmpdir();
    char *r = p[k++ % 8];
    snprintf(r, sizeof p[0], "%s/%s", tmpdir, name);
    return r;
}

static const char *data_path(const char *name)
{
    static char p[8][512];
    static int k;
    char *r = p[k++ % 8];
    snprintf(r, sizeof p[0], "%s/%s", POPRT_TEST_DATA, name);
    return r;
}

static bytes serialize(const poprt_model *m)
{
    void *data;
    size_t n;
    poprt_status st = poprt_model_serialize(m, &data, &n);
    ck_assert_msg(st == POPRT_OK, "serialize after allocation %ld (mode %d, site exe+0x%lx): %s",
                  cur_i, cur_mode, cur_site, poprt_last_error());
    bytes b = {0};
    bytes_set(&b, data, n);
    poprt_buffer_free(data);
    return b;
}

static poprt_model *load(const char *name)
{
    poprt_model *m;
    ck_assert_msg(poprt_model_load(data_path(name), &m) == POPRT_OK, "%s: %s", name,
                  poprt_last_error());
    return m;
}

/* ---- feeding a session ------------------------------------------------------
 * Inputs from the session's own description with fixed contents; outputs into
 * caller buffers or allocated by the stepio. The outputs read back (dtype,
 * shape, bytes) are the result scenarios compare. */

#define MAX_IO 8

typedef struct feed {
    size_t n_in, n_out;
    char *in_names[MAX_IO], *out_names[MAX_IO];
    poprt_dtype in_dt[MAX_IO];
    int in_rank[MAX_IO];
    int64_t in_dims[MAX_IO][8];
    void *in_data[MAX_IO];
    size_t in_bytes[MAX_IO];
    void *out_buf[MAX_IO]; /* NULL: the stepio allocates */
    size_t out_bytes[MAX_IO];
} feed;

static size_t shape_elems(int rank, const int64_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return n;
}

/* alloc_outputs: 1 every output allocated by the stepio, 0 caller buffers. */
static void feed_init(feed *f, const poprt_session *s, int alloc_outputs)
{
    memset(f, 0, sizeof *f);
    f->n_in = poprt_session_num_inputs(s);
    f->n_out = poprt_session_num_outputs(s);
    ck_assert(f->n_in <= MAX_IO && f->n_out <= MAX_IO);
    for (size_t i = 0; i < f->n_in; i++) {
        poprt_value_info info = {.size = sizeof info};
        ck_assert_int_eq(poprt_session_input(s, i, &info), POPRT_OK);
        f->in_names[i] = strdup(info.name);
        f->in_dt[i] = info.dtype;
        /* a step holds batches_per_step batches: [bps, ...] when bps > 1 */
        const int64_t bps = poprt_session_batches_per_step(s);
        const int lead = bps > 1;
        f->in_rank[i] = info.rank + lead;
        f->in_dims[i][0] = bps;
        for (int d = 0; d < info.rank; d++) {
            ck_assert_int_ge(info.dims[d], 0);
            f->in_dims[i][d + lead] = info.dims[d];
        }
        size_t n = shape_elems(f->in_rank[i], f->in_dims[i]), es = poprt_dtype_size(info.dtype);
        f->in_bytes[i] = n * es;
        f->in_data[i] = calloc(n ? n : 1, es);
        for (size_t k = 0; k < n; k++) {
            if (info.dtype == POPRT_DTYPE_FLOAT)
                ((float *)f->in_data[i])[k] = (float)((k * 7 + i * 3) % 23) / 11.0f - 1.0f;
            else if (info.dtype == POPRT_DTYPE_BOOL)
                ((unsigned char *)f->in_data[i])[k] = (unsigned char)(k % 2 == 0);
            else
                ck_abort_msg("input %s: dtype %s not fed by this test", info.name,
                             poprt_dtype_name(info.dtype));
        }
    }
    for (size_t i = 0; i < f->n_out; i++) {
        poprt_value_info info = {.size = sizeof info};
        ck_assert_int_eq(poprt_session_output(s, i, &info), POPRT_OK);
        f->out_names[i] = strdup(info.name);
        if (alloc_outputs)
            continue;
        ck_assert_int_ge(info.rank, 0);
        for (int d = 0; d < info.rank; d++)
            ck_assert_int_ge(info.dims[d], 0);
        f->out_bytes[i] = shape_elems(info.rank, info.dims) * poprt_dtype_size(info.dtype) *
                          (size_t)poprt_session_batches_per_step(s);
        f->out_buf[i] = calloc(1, f->out_bytes[i] ? f->out_bytes[i] : 1);
    }
}

static void feed_free(feed *f)
{
    for (size_t i = 0; i < f->n_in; i++) {
        free(f->in_names[i]);
        free(f->in_data[i]);
    }
    for (size_t i = 0; i < f->n_out; i++) {
        free(f->out_names[i]);
        free(f->out_buf[i]);
    }
    memset(f, 0, sizeof *f);
}

static poprt_status feed_bind(const feed *f, poprt_stepio *io)
{
    poprt_status st = POPRT_OK;
    for (size_t i = 0; !st && i < f->n_in; i++)
        st = poprt_stepio_set_input(io, f->in_names[i], f->in_dt[i], f->in_dims[i], f->in_rank[i],
                                    f->in_data[i], f->in_bytes[i]);
    for (size_t i = 0; !st && i < f->n_out; i++)
        st = f->out_buf[i] ? poprt_stepio_set_output(io, f->out_names[i], f->out_buf[i], f->out_bytes[i])
                           : poprt_stepio_set_output_alloc(io, f->out_names[i]);
    return st;
}

/* Reads every output after a run (dtype, rank, dims, bytes) into *out. */
static poprt_status feed_read(const feed *f, const poprt_stepio *io, bytes *out)
{
    bytes_free(out);
    for (size_t i = 0; i < f->n_out; i++) {
        poprt_dtype dt;
        int rank;
        const int64_t *dims;
        const void *data;
        size_t n;
        poprt_status st = poprt_stepio_output(io, f->out_names[i], &dt, &dims, &rank, &data, &n);
        if (st)
            return st;
        bytes_append(out, &dt, sizeof dt);
        bytes_append(out, &rank, sizeof rank);
        bytes_append(out, dims, (size_t)rank * sizeof *dims);
        bytes_append(out, data, n);
    }
    return POPRT_OK;
}

/* One run with a fresh stepio, no failures expected. */
static void run_clean(const poprt_session *s, int alloc_outputs, bytes *out)
{
    feed f;
    feed_init(&f, s, alloc_outputs);
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(feed_bind(&f, io), POPRT_OK);
    ck_assert_msg(poprt_session_run((poprt_session *)s, io) == POPRT_OK, "run: %s",
                  poprt_last_error());
    ck_assert_int_eq(feed_read(&f, io, out), POPRT_OK);
    poprt_stepio_free(io);
    feed_free(&f);
}

/* ---- the walk ----------------------------------------------------------------- */

/* A scenario: body() makes the calls under test and returns the status of the
 * first that fails (it stops there); check() then runs with failures off: it
 * checks the handles and out-parameters after that status, compares results
 * with the reference (recording it on the first clean pass) and frees what
 * body() made. */
typedef struct scenario {
    const char *name;
    poprt_status (*body)(struct scenario *);
    void (*check)(struct scenario *, poprt_status st);
    /* inputs */
    const char *model;     /* file in tests/data */
    const char *opts[6][2];
    const char *passes[6][2];
    int alloc_outputs, from_memory, clear_cache;
    /* state */
    poprt_model *m, *m2;
    poprt_session *s;
    poprt_stepio *io;
    poprt_pass_manager *pm;
    feed f;
    bytes orig, ref, got, file;
    int have_ref, stage;
    const char *path, *dir;
    char cache[256];
    char name_buf[192];
} scenario;

static int problems;
static long total_allocs;

static void problem(const scenario *sc, const char *fmt, ...) POPRT__PRINTF(2, 3);
static void problem(const scenario *sc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL %s: ", sc->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    problems++;
}

/* The site as an offset into the test executable, for addr2line -f -e. */
static unsigned long site_offset(const void *site)
{
    Dl_info info;
    if (site && dladdr(site, &info) && info.dli_fbase)
        return (unsigned long)((const char *)site - (const char *)info.dli_fbase);
    return (unsigned long)(uintptr_t)site;
}

/* Compares a result with the reference, recording it first. */
static void same_as_ref(scenario *sc, const bytes *b, const char *what, long i, int mode)
{
    if (!sc->have_ref) {
        bytes_set(&sc->ref, b->p, b->n);
        sc->have_ref = 1;
    } else if (!bytes_eq(b, &sc->ref))
        problem(sc, "%s differs from the clean pass's (allocation %ld, mode %d, site exe+0x%lx)",
                what, i, mode, cur_site);
}


/* Small sets of sites (linear: a few hundred at most). */
typedef struct site_set {
    const void *v[4096];
    size_t n;
} site_set;

static int set_has(const site_set *s, const void *site)
{
    for (size_t k = 0; k < s->n; k++)
        if (s->v[k] == site)
            return 1;
    return 0;
}

static void set_add(site_set *s, const void *site)
{
    if (!set_has(s, site) && s->n < sizeof s->v / sizeof s->v[0])
        s->v[s->n++] = site;
}

static site_set all_sites; /* over all scenarios */
static site_set clean_sites; /* of a walk's clean pass */
static site_set fallbacks; /* whose failure a fallback absorbed (OK), per walk */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The checks' own allocations are not the scenario's sites. */
static void check(scenario *sc, poprt_status st)
{
    poprt__alloc_sites_record(0);
    sc->check(sc, st);
    poprt__alloc_sites_record(1);
}

static void walk(scenario *sc)
{
    const char *only = getenv("POPRT_OOM_ONLY");
    if (only && !strstr(sc->name, only))
        return;
    const int trace = getenv("POPRT_OOM_TRACE") != NULL;
    const double t0 = now();
    const int problems0 = problems;
    fallbacks.n = 0;
    poprt__alloc_fail_after(0, POPRT__FAIL_ONE);
    /* warm-up (first-use paths, the reference), then the counted clean pass */
    cur_i = 0;
    poprt_status st = sc->body(sc);
    ck_assert_msg(st == POPRT_OK, "%s: clean pass: %s: %s", sc->name, poprt_status_string(st),
                  poprt_last_error());
    check(sc, st);
    const long live0 = poprt__alloc_live();
    poprt__alloc_sites_reset();
    poprt__alloc_fail_after(0, POPRT__FAIL_ONE);
    st = sc->body(sc);
    const long n = poprt__alloc_count();
    ck_assert_msg(st == POPRT_OK, "%s: clean pass: %s", sc->name, poprt_last_error());
    check(sc, st);
    if (poprt__alloc_live() != live0)
        problem(sc, "clean pass leaves %ld blocks", poprt__alloc_live() - live0);
    /* the sites of the clean pass: each must be made to fail */
    clean_sites.n = 0;
    {
        const poprt__alloc_site *tab;
        const size_t cap = poprt__alloc_sites(&tab);
        for (size_t k = 0; k < cap; k++)
            if (tab[k].site && tab[k].hits)
                set_add(&clean_sites, tab[k].site);
    }
    if (getenv("POPRT_OOM_SITES")) {
        const poprt__alloc_site *tab;
        const size_t cap = poprt__alloc_sites(&tab);
        for (size_t k = 0; k < cap; k++)
            if (tab[k].site)
                fprintf(stderr, "%s: clean pass: site exe+0x%lx: %ld\n", sc->name,
                        site_offset(tab[k].site), tab[k].hits);
    }
    long oks = 0;
    for (int mode = POPRT__FAIL_ONE; mode <= POPRT__FAIL_FROM; mode++)
        for (long i = 1; i <= n; i++) {
            cur_i = i;
            cur_mode = mode;
            if (trace)
                fprintf(stderr, "%s: allocation %ld/%ld mode %d\n", sc->name, i, n, mode), fflush(stderr);
            poprt__err_clear();
            poprt__alloc_fail_after(i, mode);
            st = sc->body(sc);
            const void *site = NULL;
            const long failed = poprt__alloc_failures(&site);
            poprt__alloc_fail_after(0, POPRT__FAIL_ONE);
            const unsigned long at = site_offset(site);
            if (failed == 0 && st != POPRT_OK)
                problem(sc, "allocation %ld (mode %d) did not happen, yet %s: %s", i, mode,
                        poprt_status_string(st), poprt_last_error());
            if (st == POPRT_OK && failed) {
                oks++;
                set_add(&fallbacks, site);
            }
            if (st != POPRT_OK && st != POPRT_STATUS_OUT_OF_MEMORY)
                problem(sc, "allocation %ld (mode %d, site exe+0x%lx) failed: %s, not out of memory: %s",
                        i, mode, at, poprt_status_string(st), poprt_last_error());
            else if (st == POPRT_STATUS_OUT_OF_MEMORY && !poprt_last_error()[0])
                problem(sc, "allocation %ld (mode %d, site exe+0x%lx) failed: no message", i, mode, at);
            cur_site = at;
            check(sc, st);
            const long live = poprt__alloc_live();
            if (live != live0)
                problem(sc, "allocation %ld (mode %d, site exe+0x%lx) failed: %ld blocks leaked", i,
                        mode, at, live - live0);
            poprt__alloc_fail_after(0, POPRT__FAIL_ONE);
            if (problems - problems0 > 20)
                ck_abort_msg("%s: too many problems", sc->name);
        }
#if SANITIZED
    if (__lsan_do_recoverable_leak_check())
        problem(sc, "LeakSanitizer found leaks (above)");
#endif
    /* sites: those of the clean pass, and those reached only after a
     * failure (error paths; they fail only in the FROM mode, when reached) */
    const poprt__alloc_site *tab;
    const size_t cap = poprt__alloc_sites(&tab);
    size_t reached = 0, failed_sites = 0, extra = 0, extra_failed = 0;
    for (size_t k = 0; k < cap; k++) {
        if (!tab[k].site || !tab[k].hits)
            continue;
        set_add(&all_sites, tab[k].site);
        if (!set_has(&clean_sites, tab[k].site)) {
            extra++;
            extra_failed += tab[k].fails > 0;
            continue;
        }
        reached++;
        if (tab[k].fails)
            failed_sites++;
        else
            problem(sc, "site exe+0x%lx reached %ld times, never failed", site_offset(tab[k].site),
                    tab[k].hits);
    }
    total_allocs += n;
    printf("%s\n    %ld allocations, %zu sites, %zu failed; %zu more sites on error paths "
           "(%zu failed); %ld OK by a fallback; %.2f s\n",
           sc->name, n, reached, failed_sites, extra, extra_failed, oks, now() - t0);
    if (fallbacks.n) {
        printf("    failures absorbed by a fallback at %zu sites:", fallbacks.n);
        for (size_t k = 0; k < fallbacks.n && k < 6; k++)
            printf(" exe+0x%lx", site_offset(fallbacks.v[k]));
        printf("%s\n", fallbacks.n > 6 ? " ..." : "");
    }
    fflush(stdout);
    ck_assert_msg(problems == problems0, "%s: %d problems (stderr)", sc->name, problems - problems0);
}

/* The scenario's name: what, the model, the options (copied into sc->opts)
 * and a suffix. */
static void set_name(scenario *sc, const char *what, const char *model,
                     const char *const opts[][2], const char *suffix)
{
    const size_t cap = sizeof sc->name_buf;
    int o = snprintf(sc->name_buf, cap, "%s %s", what, model);
    for (int k = 0; opts && opts[k][0]; k++) {
        sc->opts[k][0] = opts[k][0];
        sc->opts[k][1] = opts[k][1];
        o += snprintf(sc->name_buf + o, cap - (size_t)o, " %s=%s", opts[k][0], opts[k][1]);
    }
    snprintf(sc->name_buf + o, cap - (size_t)o, "%s", suffix ? suffix : "");
    sc->name = sc->name_buf;
}

/* A session of m made with opts, which must succeed. */
static poprt_session *make_session(const poprt_model *m, const char *const opts[][2])
{
    poprt_options *o;
    poprt_session *s;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    for (int k = 0; opts && opts[k][0]; k++)
        ck_assert_int_eq(poprt_options_set(o, opts[k][0], opts[k][1]), POPRT_OK);
    ck_assert_msg(poprt_session_create(m, o, &s) == POPRT_OK, "%s", poprt_last_error());
    poprt_options_free(o);
    return s;
}

/* ---- scenarios ---------------------------------------------------------------- */

/* poprt_model_load / _load_from_memory. check: *model_out untouched on
 * failure; the model serializes as the clean one. */
static poprt_status load_body(scenario *sc)
{
    sc->m = NULL;
    if (!sc->from_memory)
        return poprt_model_load(data_path(sc->model), &sc->m);
    return poprt_model_load_from_memory(sc->file.p, sc->file.n, sc->dir, &sc->m);
}

static void load_check(scenario *sc, poprt_status st)
{
    if (st) {
        if (sc->m)
            problem(sc, "allocation %ld: model_out set on failure", cur_i);
        return;
    }
    bytes b = serialize(sc->m);
    same_as_ref(sc, &b, "the loaded model", cur_i, cur_mode);
    bytes_free(&b);
    poprt_model_free(sc->m);
    sc->m = NULL;
}

static void scenario_load(const char *model, int from_memory)
{
    scenario sc = {.body = load_body, .check = load_check, .model = model,
                   .from_memory = from_memory};
    set_name(&sc, from_memory ? "model_load_from_memory" : "model_load", model, NULL, NULL);
    if (from_memory) {
        ck_assert(read_file(data_path(model), &sc.file));
        sc.dir = POPRT_TEST_DATA;
    }
    walk(&sc);
    bytes_free(&sc.file);
    bytes_free(&sc.ref);
}

/* poprt_model_clone + pass manager create/add/run on the clone. check: on
 * failure the clone (when made) is as the model was; run again without
 * failures it gives the clean result. */
static poprt_status passes_body(scenario *sc)
{
    sc->m2 = NULL;
    poprt_status st = poprt_model_clone(sc->m, &sc->m2);
    if (st)
        return st;
    poprt_pass_manager *pm = NULL;
    st = poprt_pass_manager_create(&pm);
    for (int k = 0; !st && sc->passes[k][0]; k++)
        st = poprt_pass_manager_add(pm, sc->passes[k][0], sc->passes[k][1]);
    if (!st)
        st = poprt_pass_manager_run(pm, sc->m2);
    poprt_pass_manager_free(pm);
    return st;
}

static void passes_check(scenario *sc, poprt_status st)
{
    if (!sc->m2)
        return;
    bytes b = serialize(sc->m2);
    if (st) {
        if (!bytes_eq(&b, &sc->orig))
            problem(sc, "allocation %ld (mode %d): the model changed on failure", cur_i, cur_mode);
        /* still usable: the same passes again */
        poprt_pass_manager *pm;
        ck_assert_int_eq(poprt_pass_manager_create(&pm), POPRT_OK);
        for (int k = 0; sc->passes[k][0]; k++)
            ck_assert_int_eq(poprt_pass_manager_add(pm, sc->passes[k][0], sc->passes[k][1]), POPRT_OK);
        poprt_status st2 = poprt_pass_manager_run(pm, sc->m2);
        poprt_pass_manager_free(pm);
        if (st2)
            problem(sc, "allocation %ld (mode %d): passes fail afterwards: %s", cur_i, cur_mode,
                    poprt_last_error());
        bytes_free(&b);
        b = serialize(sc->m2);
    }
    same_as_ref(sc, &b, "the model after the passes", cur_i, cur_mode);
    bytes_free(&b);
    poprt_model_free(sc->m2);
    sc->m2 = NULL;
}

static void scenario_passes(const char *model, const char *label, const char *const passes[][2])
{
    scenario sc = {.body = passes_body, .check = passes_check, .model = model};
    char suffix[96];
    snprintf(suffix, sizeof suffix, " (%s)", label);
    set_name(&sc, "passes", model, NULL, suffix);
    for (int k = 0; passes[k][0]; k++) {
        sc.passes[k][0] = passes[k][0];
        sc.passes[k][1] = passes[k][1];
    }
    sc.m = load(model);
    sc.orig = serialize(sc.m);
    walk(&sc);
    poprt_model_free(sc.m);
    bytes_free(&sc.orig);
    bytes_free(&sc.ref);
}

/* Binds the feed to sc->io, runs and reads the outputs into sc->got. */
static poprt_status run_io(scenario *sc)
{
    poprt_status st = feed_bind(&sc->f, sc->io);
    if (!st)
        st = poprt_session_run(sc->s, sc->io);
    return st ? st : feed_read(&sc->f, sc->io, &sc->got);
}

/* stepio_create / set_input / set_output(_alloc) / run / output. */
static poprt_status run_body(scenario *sc)
{
    sc->io = NULL;
    poprt_status st = poprt_stepio_create(&sc->io);
    return st ? st : run_io(sc);
}

/* After run_body's status: a stepio left by a failure is bound again and
 * run, on the same session (or a new stepio when none was made); the outputs
 * must be the clean ones. Frees the stepio. */
static void run_check(scenario *sc, poprt_status st)
{
    if (st && sc->io) {
        poprt_status st2 = run_io(sc);
        if (st2)
            problem(sc, "allocation %ld (mode %d): the run fails afterwards: %s", cur_i, cur_mode,
                    poprt_last_error());
    } else if (st)
        run_clean(sc->s, sc->alloc_outputs, &sc->got);
    same_as_ref(sc, &sc->got, "the outputs", cur_i, cur_mode);
    poprt_stepio_free(sc->io);
    sc->io = NULL;
}

/* options + poprt_session_create + the first run (stepio create, bind, run,
 * read the outputs). check: *session_out untouched on failure, the model
 * unchanged; a session made runs (again) with the clean results; a stepio
 * left by a failed run is bound again and run. */
static poprt_status session_body(scenario *sc)
{
    sc->s = NULL;
    sc->io = NULL;
    if (sc->clear_cache) /* an engine-cache miss each time */
        clear_dir(sc->cache);
    poprt_options *o = NULL;
    poprt_status st = poprt_options_create(&o);
    for (int k = 0; !st && sc->opts[k][0]; k++)
        st = poprt_options_set(o, sc->opts[k][0], sc->opts[k][1]);
    if (!st)
        st = sc->path ? poprt_session_load(sc->path, o, &sc->s) : poprt_session_create(sc->m, o, &sc->s);
    poprt_options_free(o);
    if (st)
        return st;
    if (!sc->f.n_out)
        feed_init(&sc->f, sc->s, sc->alloc_outputs);
    return run_body(sc);
}

static void session_check(scenario *sc, poprt_status st)
{
    if (st && !sc->s && sc->m) {
        bytes b = serialize(sc->m);
        if (!bytes_eq(&b, &sc->orig))
            problem(sc, "allocation %ld (mode %d): the model changed", cur_i, cur_mode);
        bytes_free(&b);
    }
    if (!sc->s)
        return;
    run_check(sc, st); /* the session and the stepio are still usable */
    if (!st) {
        /* and once more on the same session */
        run_clean(sc->s, sc->alloc_outputs, &sc->got);
        same_as_ref(sc, &sc->got, "the outputs of a second run", cur_i, cur_mode);
    }
    poprt_session_free(sc->s);
    sc->s = NULL;
}

static void scenario_session(const char *model, const char *const opts[][2], int alloc_outputs)
{
    scenario sc = {.body = session_body, .check = session_check, .model = model,
                   .alloc_outputs = alloc_outputs};
    set_name(&sc, "session_create+run", model, opts,
             alloc_outputs ? " (stepio-allocated outputs)" : NULL);
    /* cache_dir=hit|miss: the engine cache in the temporary folder, filled
     * by the clean pass, or emptied before each pass */
    for (int k = 0; opts[k][0]; k++)
        if (strcmp(opts[k][0], "cache_dir") == 0) {
            sc.clear_cache = strcmp(opts[k][1], "miss") == 0;
            snprintf(sc.cache, sizeof sc.cache, "%s", tmp_path("cache"));
            sc.opts[k][1] = sc.cache;
        }
    sc.m = load(model);
    sc.orig = serialize(sc.m);
    walk(&sc);
    feed_free(&sc.f);
    poprt_model_free(sc.m);
    bytes_free(&sc.orig);
    bytes_free(&sc.ref);
    bytes_free(&sc.got);
}

/* poprt_session_load of a file exported from a clean session, then the first
 * run: as session_create. model NULL: load tests/data/<name>. */
static void scenario_session_load(const char *name_, poprt_model *model, const char *const opts[][2])
{
    scenario sc = {.body = session_body, .check = session_check, .model = name_};
    char file[64];
    snprintf(file, sizeof file, "%s.popef", name_);
    set_name(&sc, "session_load+run", file, opts, NULL);
    sc.path = tmp_path(file);
    poprt_model *m = model ? model : load(name_);
    poprt_session *s = make_session(m, NULL);
    ck_assert_int_eq(poprt_session_export(s, sc.path), POPRT_OK);
    poprt_session_free(s);
    poprt_model_free(m);
    walk(&sc);
    unlink(sc.path);
    feed_free(&sc.f);
    bytes_free(&sc.ref);
    bytes_free(&sc.got);
}

/* y = MatMul(x[1,1024], W[1024,1100]): 4.5 MB of weights, more than one
 * checksum chunk (4 MiB), so that loading its executable file with threads=2
 * starts a checksum thread (whose failure only means fewer threads). */
static poprt_model *big_matmul(void)
{
    enum { K = 1024, N = 1100 };
    poprt__model *m = tb_model(13);
    int64_t xd[2] = {1, K}, wd[2] = {K, N};
    float *w = malloc(sizeof(float) * K * N);
    ck_assert_ptr_nonnull(w);
    for (int i = 0; i < K * N; i++)
        w[i] = (float)(((unsigned)i * 7919u) % 211u) / 211.0f - 0.5f;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
    free(w);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    return model;
}

/* poprt_session_export. check: on failure no file (nor a temporary one) is
 * left and the session still runs as before; on success the file equals the
 * clean one. */
static poprt_status export_body(scenario *sc) { return poprt_session_export(sc->s, sc->path); }

static void export_check(scenario *sc, poprt_status st)
{
    if (st) {
        if (files_in_tmpdir() != 0)
            problem(sc, "allocation %ld (mode %d): files left behind", cur_i, cur_mode);
        bytes out = {0};
        run_clean(sc->s, 0, &out);
        if (!bytes_eq(&out, &sc->got))
            problem(sc, "allocation %ld (mode %d): the session's outputs changed", cur_i, cur_mode);
        bytes_free(&out);
        return;
    }
    bytes b = {0};
    ck_assert(read_file(sc->path, &b));
    same_as_ref(sc, &b, "the exported file", cur_i, cur_mode);
    bytes_free(&b);
    unlink(sc->path);
}

static void scenario_export(const char *model, const char *const opts[][2])
{
    scenario sc = {.body = export_body, .check = export_check, .model = model};
    set_name(&sc, "session_export", model, opts, NULL);
    remove_tmpdir();
    sc.path = tmp_path("export.popef");
    sc.m = load(model);
    sc.s = make_session(sc.m, opts);
    run_clean(sc.s, 0, &sc.got);
    walk(&sc);
    poprt_session_free(sc.s);
    poprt_model_free(sc.m);
    bytes_free(&sc.ref);
    bytes_free(&sc.got);
}

/* stepio+run on a session that has run before (run_body, run_check). */
static void scenario_run(const char *model, const char *const opts[][2], int alloc_outputs)
{
    scenario sc = {.body = run_body, .check = run_check, .model = model,
                   .alloc_outputs = alloc_outputs};
    set_name(&sc, "stepio+run", model, opts, alloc_outputs ? " (stepio-allocated outputs)" : NULL);
    sc.m = load(model);
    sc.s = make_session(sc.m, opts);
    feed_init(&sc.f, sc.s, alloc_outputs);
    walk(&sc);
    feed_free(&sc.f);
    poprt_session_free(sc.s);
    poprt_model_free(sc.m);
    bytes_free(&sc.ref);
    bytes_free(&sc.got);
}

/* The describing calls on a clone: inputs, outputs, every tensor id and its
 * info, then poprt_model_set_input_shape and the input again. check: after
 * a failure the clone (when made) still describes itself, set_input_shape
 * included, as the clean pass did. */
static void append_info(bytes *b, const poprt_value_info *info)
{
    bytes_append(b, info->name, strlen(info->name) + 1);
    bytes_append(b, &info->kind, sizeof info->kind);
    bytes_append(b, &info->dtype, sizeof info->dtype);
    bytes_append(b, &info->rank, sizeof info->rank);
    for (int d = 0; d < info->rank; d++) {
        bytes_append(b, &info->dims[d], sizeof info->dims[d]);
        const char *p = info->dim_params[d] ? info->dim_params[d] : "";
        bytes_append(b, p, strlen(p) + 1);
    }
}

static poprt_status describe(poprt_model *m, bytes *out)
{
    bytes_free(out);
    poprt_status st = POPRT_OK;
    poprt_value_info info = {.size = sizeof info};
    const size_t ni = poprt_model_num_inputs(m), no = poprt_model_num_outputs(m);
    for (size_t i = 0; !st && i < ni; i++)
        if (!(st = poprt_model_input(m, i, &info)))
            append_info(out, &info);
    for (size_t i = 0; !st && i < no; i++)
        if (!(st = poprt_model_output(m, i, &info)))
            append_info(out, &info);
    const char *const *ids = NULL;
    size_t n_ids = 0;
    if (!st)
        st = poprt_model_tensor_ids(m, &ids, &n_ids);
    for (size_t i = 0; !st && i < n_ids; i++)
        if (!(st = poprt_model_tensor_info(m, ids[i], &info)))
            append_info(out, &info);
    return st;
}

static const int64_t batch4[2] = {4, 16};

static poprt_status describe_body(scenario *sc)
{
    sc->m2 = NULL;
    sc->stage = 0;
    poprt_status st = poprt_model_clone(sc->m, &sc->m2);
    if (!st && (sc->stage = 1) && !(st = describe(sc->m2, &sc->got)) && (sc->stage = 2) &&
        !(st = poprt_model_set_input_shape(sc->m2, "x", batch4, 2)) && (sc->stage = 3))
        st = describe(sc->m2, &sc->got);
    return st;
}

static void describe_check(scenario *sc, poprt_status st)
{
    if (!sc->m2)
        return;
    if (st) {
        /* before set_input_shape or when it failed: the model as it was */
        poprt_status st2 = POPRT_OK;
        if (sc->stage < 3) {
            st2 = describe(sc->m2, &sc->got);
            if (!st2 && !bytes_eq(&sc->got, &sc->orig))
                problem(sc, "allocation %ld (mode %d, site exe+0x%lx, stage %d): the model "
                        "changed", cur_i, cur_mode, cur_site, sc->stage);
            if (!st2)
                st2 = poprt_model_set_input_shape(sc->m2, "x", batch4, 2);
        }
        if (!st2)
            st2 = describe(sc->m2, &sc->got);
        if (st2)
            problem(sc, "allocation %ld (mode %d): the model fails afterwards: %s", cur_i,
                    cur_mode, poprt_last_error());
    }
    same_as_ref(sc, &sc->got, "the description after set_input_shape", cur_i, cur_mode);
    poprt_model_free(sc->m2);
    sc->m2 = NULL;
}

static void scenario_describe(const char *model)
{
    scenario sc = {.body = describe_body, .check = describe_check, .model = model};
    set_name(&sc, "describe+set_input_shape", model, NULL, NULL);
    sc.m = load(model);
    ck_assert_int_eq(describe(sc.m, &sc.orig), POPRT_OK);
    walk(&sc);
    poprt_model_free(sc.m);
    bytes_free(&sc.orig);
    bytes_free(&sc.ref);
    bytes_free(&sc.got);
}

/* poprt_model_serialize / poprt_model_save. check: the bytes (or the file)
 * equal the clean ones; on failure no file. */
static poprt_status serialize_body(scenario *sc)
{
    if (sc->path)
        return poprt_model_save(sc->m, sc->path);
    void *data = NULL;
    size_t n = 0;
    poprt_status st = poprt_model_serialize(sc->m, &data, &n);
    if (!st) {
        bytes_set(&sc->got, data, n);
        poprt_buffer_free(data);
    }
    return st;
}

static void serialize_check(scenario *sc, poprt_status st)
{
    if (sc->path) {
        if (st) {
            if (files_in_tmpdir() != 0)
                problem(sc, "allocation %ld (mode %d): a file is left", cur_i, cur_mode);
            return;
        }
        ck_assert(read_file(sc->path, &sc->got));
        unlink(sc->path);
    }
    if (!st)
        same_as_ref(sc, &sc->got, sc->path ? "the saved file" : "the bytes", cur_i, cur_mode);
}

static void scenario_serialize(const char *model, int save)
{
    scenario sc = {.body = serialize_body, .check = serialize_check, .model = model};
    set_name(&sc, save ? "model_save" : "model_serialize", model, NULL, NULL);
    if (save) {
        remove_tmpdir();
        sc.path = tmp_path("saved.onnx");
    }
    sc.m = load(model);
    walk(&sc);
    poprt_model_free(sc.m);
    bytes_free(&sc.ref);
    bytes_free(&sc.got);
}

/* poprt_tensor_encode / poprt_tensor_decode of a float, an int4 (packed)
 * and a string tensor. check: what is decoded equals the clean pass's; a
 * failed decode leaves its out-parameter alone. */
static poprt_status tensors_body(scenario *sc)
{
    static const float f[6] = {1, -2, 3.5f, 0, 1e-30f, -7};
    static const int8_t i4[5] = {-8, 7, 0, -1, 3};
    static const char *const words[3] = {"poprt", "", "tensor"};
    static const struct {
        const char *name;
        poprt_dtype dt;
        int64_t dims[2];
        int rank;
        const void *data;
        size_t n;
    } t[3] = {{"x", POPRT_DTYPE_FLOAT, {2, 3}, 2, f, sizeof f},
              {"nibbles", POPRT_DTYPE_INT4, {5}, 1, i4, sizeof i4},
              {"words", POPRT_DTYPE_STRING, {3}, 1, words, sizeof words}};
    bytes_free(&sc->got);
    for (int k = 0; k < 3; k++) {
        void *img = NULL;
        size_t len = 0;
        poprt_status st = poprt_tensor_encode(t[k].name, t[k].dt, t[k].dims, t[k].rank,
                                              t[k].data, t[k].n, &img, &len);
        if (st)
            return st;
        poprt_tensor *d = NULL;
        st = poprt_tensor_decode(img, len, &d);
        poprt_buffer_free(img);
        if (st) {
            if (d)
                problem(sc, "allocation %ld (mode %d): a failed decode set its out-parameter",
                        cur_i, cur_mode);
            return st;
        }
        const char *name;
        poprt_dtype dt;
        const int64_t *dims;
        int rank;
        const void *data;
        size_t n;
        poprt_tensor_get(d, &name, &dt, &dims, &rank, &data, &n);
        bytes_append(&sc->got, name, strlen(name) + 1);
        bytes_append(&sc->got, &dt, sizeof dt);
        bytes_append(&sc->got, dims, (size_t)rank * sizeof *dims);
        if (dt == POPRT_DTYPE_STRING)
            for (size_t i = 0; i < n / sizeof(char *); i++)
                bytes_append(&sc->got, ((const char *const *)data)[i],
                             strlen(((const char *const *)data)[i]) + 1);
        else
            bytes_append(&sc->got, data, n);
        poprt_tensor_free(d);
    }
    return POPRT_OK;
}

static void tensors_check(scenario *sc, poprt_status st)
{
    if (!st)
        same_as_ref(sc, &sc->got, "the decoded tensors", cur_i, cur_mode);
}

/* ---- tests ------------------------------------------------------------------------ */

#define NONE {NULL, NULL}

START_TEST(model_load)
{
    scenario_load("mlp.onnx", 0);
    scenario_load("conv.onnx", 0);
    scenario_load("control_flow.onnx", 0);
    scenario_load("mlp_external.onnx", 0);
    scenario_load("mlp.onnx", 1);
    scenario_load("mlp_external.onnx", 1);
}
END_TEST

START_TEST(passes)
{
    scenario_passes("mlp.onnx", "convert_version, float_to_half",
                    (const char *const[][2]){{"convert_version", "version=11"},
                                             {"float_to_half", NULL},
                                             {"eliminate_unused_initializer", NULL},
                                             {NULL, NULL}});
    scenario_passes("mlp.onnx", "float_to_int8",
                    (const char *const[][2]){{"float_to_int8", NULL}, {NULL, NULL}});
    scenario_passes("conv.onnx", "float_to_int8 (every Conv)",
                    (const char *const[][2]){{"float_to_int8", "min_size=1"}, {NULL, NULL}});
    scenario_passes("conv.onnx", "bf16_fallback by name",
                    (const char *const[][2]){{"bf16_fallback", "float32_nodes=[conv,fc]"},
                                             {NULL, NULL}});
    scenario_passes("conv.onnx", "bf16_fallback, trials",
                    (const char *const[][2]){{"bf16_fallback", "target_cosine=1,samples=1"},
                                             {NULL, NULL}});
    scenario_passes("conv.onnx", "constant_folding, unique names, 8-bit io",
                    (const char *const[][2]){{"constant_folding", NULL},
                                             {"unique_name_for_nodes", NULL},
                                             {"eight_bits_io", NULL},
                                             {"final_check", NULL},
                                             {NULL, NULL}});
    scenario_passes("control_flow.onnx", "subgraph initializers, identities",
                    (const char *const[][2]){{"move_subgraph_initializer", NULL},
                                             {"eliminate_identity", NULL},
                                             {"unique_name_for_nodes", NULL},
                                             {"remove_duplicated_initializer", NULL},
                                             {NULL, NULL}});
    FILE *f = fopen(tmp_path("sharding.json"), "w");
    ck_assert_ptr_nonnull(f);
    fputs("{\"sharding\": {\"fc1\": 0, \"fc2\": 1}, \"pipelining\": {\"fc1\": 0, \"fc2\": 1}}", f);
    fclose(f);
    char args[300];
    snprintf(args, sizeof args, "config=%s", tmp_path("sharding.json"));
    scenario_passes("mlp.onnx", "manual_sharding",
                    (const char *const[][2]){{"manual_sharding", args}, {NULL, NULL}});
    remove_tmpdir();
}
END_TEST

START_TEST(session_create)
{
    static const char *const o1t1[][2] = {{"optimize", "1"}, {"threads", "1"}, {NULL, NULL}};
    static const char *const o0t1[][2] = {{"optimize", "0"}, {"threads", "1"}, {NULL, NULL}};
    static const char *const o1t2[][2] = {{"optimize", "1"}, {"threads", "2"}, {NULL, NULL}};
    static const char *const o0t2[][2] = {{"optimize", "0"}, {"threads", "2"}, {NULL, NULL}};
    const char *models[] = {"mlp.onnx", "conv.onnx"};
    for (int k = 0; k < 2; k++) {
        scenario_session(models[k], o1t1, 0);
        scenario_session(models[k], o0t1, 0);
        scenario_session(models[k], o1t2, 0);
        scenario_session(models[k], o0t2, 0);
    }
    /* the NCHW16c layout choice (on AVX-512 CPUs) and residual epilogues */
    scenario_session("conv_blocks.onnx", o1t1, 0);
    scenario_session("control_flow.onnx", o1t1, 1);
    scenario_session("control_flow.onnx", o0t2, 1);
    scenario_session("mlp_dynamic.onnx",
                     (const char *const[][2]){{"input_shape.x", "4,16"}, {NULL, NULL}}, 0);
    scenario_session("mlp_dynamic.onnx",
                     (const char *const[][2]){{"input_shape.x", "3,16"},
                                              {"batches_per_step", "2"},
                                              {"anchor.y", "Sum"},
                                              {NULL, NULL}},
                     1);
    scenario_session("mlp_external.onnx", o1t1, 0);
    scenario_session("mlp.onnx", (const char *const[][2]){{"profile", "1"}, {NULL, NULL}}, 0);
    remove_tmpdir();
    scenario_session("conv.onnx", (const char *const[][2]){{"cache_dir", "miss"}, {NULL, NULL}}, 0);
    remove_tmpdir();
    scenario_session("conv.onnx", (const char *const[][2]){{"cache_dir", "hit"}, {NULL, NULL}}, 0);
    remove_tmpdir();
}
END_TEST

START_TEST(session_export)
{
    scenario_export("mlp.onnx", (const char *const[][2]){NONE});
    scenario_export("conv.onnx", (const char *const[][2]){{"threads", "2"}, {NULL, NULL}});
    scenario_export("control_flow.onnx", (const char *const[][2]){{"optimize", "0"}, {NULL, NULL}});
    remove_tmpdir();
}
END_TEST

START_TEST(session_load)
{
    scenario_session_load("mlp.onnx", NULL, (const char *const[][2]){NONE});
    scenario_session_load("conv.onnx", NULL, (const char *const[][2]){{"threads", "2"}, {NULL, NULL}});
    scenario_session_load("control_flow.onnx", NULL, (const char *const[][2]){NONE});
    scenario_session_load("big_matmul", big_matmul(),
                          (const char *const[][2]){{"threads", "2"}, {NULL, NULL}});
    remove_tmpdir();
}
END_TEST

START_TEST(session_run)
{
    scenario_run("mlp.onnx", (const char *const[][2]){NONE}, 0);
    scenario_run("mlp.onnx", (const char *const[][2]){NONE}, 1);
    scenario_run("conv.onnx", (const char *const[][2]){{"threads", "2"}, {NULL, NULL}}, 0);
    scenario_run("control_flow.onnx", (const char *const[][2]){NONE}, 1);
    scenario_run("control_flow.onnx", (const char *const[][2]){{"optimize", "0"}, {NULL, NULL}}, 1);
}
END_TEST

START_TEST(model_describe)
{
    scenario_describe("mlp_dynamic.onnx");
}
END_TEST

START_TEST(tensor_files)
{
    scenario sc = {.body = tensors_body, .check = tensors_check, .name = "tensor encode+decode"};
    walk(&sc);
    bytes_free(&sc.ref);
    bytes_free(&sc.got);
}
END_TEST

START_TEST(model_save)
{
    scenario_serialize("conv.onnx", 0);
    scenario_serialize("control_flow.onnx", 0);
    scenario_serialize("mlp_external.onnx", 1);
    remove_tmpdir();
}
END_TEST

int main(void)
{
    Suite *s = suite_create("alloc_fail");
    TCase *tc = tcase_create("alloc_fail");
    tcase_set_timeout(tc, 0); /* meson's timeout bounds the executable */
    tcase_add_test(tc, model_load);
    tcase_add_test(tc, passes);
    tcase_add_test(tc, session_create);
    tcase_add_test(tc, session_export);
    tcase_add_test(tc, session_load);
    tcase_add_test(tc, session_run);
    tcase_add_test(tc, model_describe);
    tcase_add_test(tc, model_save);
    tcase_add_test(tc, tensor_files);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    /* one process: the walk's counts and the site table stay with it */
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    poprt__alloc_disarm();
    printf("all scenarios: %ld allocations, %zu distinct allocation sites\n", total_allocs,
           all_sites.n);
    remove_tmpdir();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
