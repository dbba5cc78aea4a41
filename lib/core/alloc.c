#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "core/core.h"

void *poprt__malloc(size_t n) { return malloc(n ? n : 1); }
void *poprt__calloc(size_t count, size_t size) { return calloc(count ? count : 1, size ? size : 1); }
void *poprt__realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
void poprt__free(void *p) { free(p); }

char *poprt__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = poprt__malloc(n);
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
    void *p = NULL;
    const size_t align = n >= HUGE_MIN ? HUGE_MIN : 64;
    if (posix_memalign(&p, align, n ? n : 64) != 0)
        return NULL;
#if defined(MADV_HUGEPAGE)
    if (n >= HUGE_MIN)
        (void)madvise(p, n & ~(HUGE_MIN - 1), MADV_HUGEPAGE); /* advice only: ignore failure */
#endif
    return p;
}

void poprt__aligned_free(void *p) { free(p); }

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
