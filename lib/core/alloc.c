#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "core/core.h"

/* ---- allocation-failure injection (core.h) ------------------------------- */

int poprt__alloc_armed;

#define MAX_SITES 8192 /* distinct sites recorded (a power of two) */

static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static long fault_target; /* the fault point that fails (1-based); 0: none */
static int fault_mode;
static long fault_count, fault_failures, fault_live;
static const void *fault_first; /* the first failed site */
static poprt__alloc_site sites[MAX_SITES];
static size_t n_sites;
static int record_sites = 1;

static poprt__alloc_site *site_slot(const void *site)
{
    size_t i = ((uintptr_t)site >> 2) * 0x9e3779b97f4a7c15ull >> 51 & (MAX_SITES - 1);
    for (size_t k = 0; k < MAX_SITES; k++, i = (i + 1) & (MAX_SITES - 1)) {
        if (sites[i].site == site)
            return &sites[i];
        if (!sites[i].site) {
            sites[i].site = site;
            n_sites++;
            return &sites[i];
        }
    }
    return NULL; /* table full: counted, not recorded */
}

int poprt__fault_slow(const void *site)
{
    pthread_mutex_lock(&fault_mu);
    const long k = ++fault_count;
    const int fail = fault_target > 0 && (k == fault_target || (fault_mode == POPRT__FAIL_FROM && k > fault_target));
    poprt__alloc_site *s = record_sites ? site_slot(site) : NULL;
    if (s) {
        s->hits++;
        s->fails += fail;
    }
    if (fail && !fault_failures++)
        fault_first = site;
    pthread_mutex_unlock(&fault_mu);
    return fail;
}

void poprt__alloc_fail_after(long n, int mode)
{
    pthread_mutex_lock(&fault_mu);
    fault_target = n > 0 ? n : 0;
    fault_mode = mode;
    fault_count = fault_failures = 0;
    fault_first = NULL;
    __atomic_store_n(&poprt__alloc_armed, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&fault_mu);
}

void poprt__alloc_disarm(void)
{
    pthread_mutex_lock(&fault_mu);
    fault_target = 0;
    __atomic_store_n(&poprt__alloc_armed, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&fault_mu);
}

static long read_locked(const long *v)
{
    pthread_mutex_lock(&fault_mu);
    long r = *v;
    pthread_mutex_unlock(&fault_mu);
    return r;
}

long poprt__alloc_count(void) { return read_locked(&fault_count); }
long poprt__alloc_failures(const void **first_site_out)
{
    pthread_mutex_lock(&fault_mu);
    long r = fault_failures;
    if (first_site_out)
        *first_site_out = fault_first;
    pthread_mutex_unlock(&fault_mu);
    return r;
}
long poprt__alloc_live(void) { return read_locked(&fault_live); }

size_t poprt__alloc_sites(const poprt__alloc_site **sites_out)
{
    *sites_out = sites; /* MAX_SITES slots, unused ones with site NULL */
    return MAX_SITES;
}

void poprt__alloc_sites_record(int on)
{
    pthread_mutex_lock(&fault_mu);
    record_sites = on;
    pthread_mutex_unlock(&fault_mu);
}

void poprt__alloc_sites_reset(void)
{
    pthread_mutex_lock(&fault_mu);
    memset(sites, 0, sizeof sites);
    n_sites = 0;
    pthread_mutex_unlock(&fault_mu);
}

/* Counts a block taken (+1) or given back (-1) while armed. */
static void *live(void *p, long d)
{
    if (p && __atomic_load_n(&poprt__alloc_armed, __ATOMIC_RELAXED)) {
        pthread_mutex_lock(&fault_mu);
        fault_live += d;
        pthread_mutex_unlock(&fault_mu);
    }
    return p;
}

/* ---- the heap wrappers ----------------------------------------------------- */

void *poprt__malloc_at(size_t n, const void *site)
{
    return poprt__fault(site) ? NULL : live(malloc(n ? n : 1), 1);
}

void *poprt__calloc_at(size_t count, size_t size, const void *site)
{
    return poprt__fault(site) ? NULL : live(calloc(count ? count : 1, size ? size : 1), 1);
}

void *poprt__realloc_at(void *p, size_t n, const void *site)
{
    if (poprt__fault(site))
        return NULL;
    void *q = realloc(p, n ? n : 1);
    return p ? q : live(q, 1);
}

void *poprt__malloc(size_t n) { return poprt__malloc_at(n, POPRT__CALLER); }
void *poprt__calloc(size_t count, size_t size) { return poprt__calloc_at(count, size, POPRT__CALLER); }
void *poprt__realloc(void *p, size_t n) { return poprt__realloc_at(p, n, POPRT__CALLER); }
void poprt__free(void *p) { free(live(p, -1)); }

char *poprt__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = poprt__malloc_at(n, POPRT__CALLER);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Blocks of at least this size (activation arenas, kernel scratch, packed
 * weights) are aligned to 2 MiB and marked for transparent huge pages where
 * the kernel offers them only on request (THP "madvise" mode): first touch
 * then faults once per 2 MiB instead of once per 4 KiB (page faults are
 * costly in virtual machines, and a first run touches tens of MB), and the
 * kernels' streaming loads miss the TLB less. */
#define HUGE_MIN ((size_t)2 << 20)

void *poprt__aligned_alloc(size_t n)
{
    return poprt__fault(POPRT__CALLER) ? NULL : poprt__aligned_alloc_unchecked(n);
}

void *poprt__aligned_alloc_unchecked(size_t n)
{
    void *p = NULL;
    const size_t align = n >= HUGE_MIN ? HUGE_MIN : 64;
    if (posix_memalign(&p, align, n ? n : 64) != 0)
        return NULL;
    live(p, 1);
#if defined(MADV_HUGEPAGE)
    if (n >= HUGE_MIN)
        (void)madvise(p, n & ~(HUGE_MIN - 1), MADV_HUGEPAGE); /* advice only: ignore failure */
#endif
    return p;
}

void poprt__aligned_free(void *p) { free(live(p, -1)); }

int poprt__thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
    return poprt__fault(POPRT__CALLER) ? EAGAIN : pthread_create(t, NULL, fn, arg);
}

int poprt__mul_size(size_t a, size_t b, size_t *out)
{
    if (a && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

int poprt__size_fits(size_t *acc, int64_t d)
{
    if (d < 0 || (uint64_t)d > (SIZE_MAX >> 1))
        return 0;
    return d == 0 || poprt__mul_size(*acc, (size_t)d, acc);
}

int poprt__mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return 0;
    *out = r;
    return 1;
}

int poprt__add_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return 0;
    *out = r;
    return 1;
}
