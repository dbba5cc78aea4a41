#include <stdlib.h>
#include <string.h>
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

void *poprt__aligned_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0)
        return NULL;
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

int poprt__mul_i64(int64_t a, int64_t b, int64_t *out)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return 0;
    *out = r;
    return 1;
}
