#include <stdio.h>
#include <string.h>
#include "core/core.h"

struct poprt__arena_block {
    poprt__arena_block *next;
    size_t size, used;
    /* data follows, 64-byte aligned */
};

#define HDR 64
#define BLOCK 65536

void poprt__arena_init(poprt__arena *a) { memset(a, 0, sizeof *a); }

void poprt__arena_free(poprt__arena *a)
{
    poprt__arena_block *b = a->head;
    while (b) {
        poprt__arena_block *n = b->next;
        poprt__aligned_free(b);
        b = n;
    }
    poprt__aligned_free(a->spare);
    a->head = NULL;
    a->spare = NULL;
    a->total = 0;
    a->failed = 0;
}

poprt__arena_mark poprt__arena_mark_now(const poprt__arena *a)
{
    poprt__arena_mark m = {a->head, a->head ? a->head->next : NULL, a->head ? a->head->used : 0};
    return m;
}

/* Frees b, or keeps it as the spare when it is a standard block. */
static void give_back(poprt__arena *a, poprt__arena_block *b)
{
    a->total -= b->size;
    if (b->size == BLOCK && !a->spare)
        a->spare = b;
    else
        poprt__aligned_free(b);
}

void poprt__arena_release(poprt__arena *a, poprt__arena_mark m)
{
    /* blocks made after the mark sit in front of it, and large blocks made
     * while the mark's block was the head sit right behind it */
    while (a->head && a->head != m.head) {
        poprt__arena_block *b = a->head;
        a->head = b->next;
        give_back(a, b);
    }
    if (!m.head)
        return;
    while (m.head->next != m.next) {
        poprt__arena_block *b = m.head->next;
        m.head->next = b->next;
        give_back(a, b);
    }
    m.head->used = m.used;
}

/* Every request passes a fault point (core.h), at the site of the caller of
 * the poprt__arena_* function it came through. */
static void *arena_alloc_at(poprt__arena *a, size_t n, const void *site)
{
    size_t align = n >= 4096 ? 64 : 16;
    poprt__arena_block *b = a->head;
    if (n > SIZE_MAX / 2 || poprt__fault(site)) {
        a->failed++;
        return NULL;
    }
    if (b) {
        size_t off = (b->used + align - 1) & ~(align - 1);
        if (off + n <= b->size) {
            b->used = off + n;
            void *p = (char *)b + HDR + off;
            memset(p, 0, n);
            return p;
        }
    }
    size_t size = n > BLOCK / 4 ? n : BLOCK;
    poprt__arena_block *nb;
    if (size == BLOCK && a->spare) {
        nb = a->spare;
        a->spare = NULL;
    } else if (!(nb = poprt__aligned_alloc_unchecked(HDR + size))) {
        a->failed++;
        return NULL;
    }
    nb->size = size;
    nb->used = n;
    if (n > BLOCK / 4 && b) {
        /* large request: own block behind the current one, keep filling head */
        nb->next = b->next;
        b->next = nb;
    } else {
        nb->next = b;
        a->head = nb;
    }
    a->total += size;
    void *p = (char *)nb + HDR;
    memset(p, 0, n);
    return p;
}

void *poprt__arena_alloc(poprt__arena *a, size_t n) { return arena_alloc_at(a, n, POPRT__CALLER); }

void *poprt__arena_array(poprt__arena *a, size_t count, size_t size)
{
    size_t n;
    if (!poprt__mul_size(count, size, &n))
        return NULL;
    return arena_alloc_at(a, n, POPRT__CALLER);
}

static char *strndup_at(poprt__arena *a, const char *s, size_t n, const void *site)
{
    char *d = arena_alloc_at(a, n + 1, site);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

char *poprt__arena_strndup(poprt__arena *a, const char *s, size_t n)
{
    return strndup_at(a, s, n, POPRT__CALLER);
}

char *poprt__arena_strdup(poprt__arena *a, const char *s)
{
    return s ? strndup_at(a, s, strlen(s), POPRT__CALLER) : NULL;
}

char *poprt__arena_printf(poprt__arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *d = arena_alloc_at(a, (size_t)n + 1, POPRT__CALLER);
    if (!d)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(d, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return d;
}

void *poprt__arena_memdup(poprt__arena *a, const void *p, size_t n)
{
    void *d = arena_alloc_at(a, n, POPRT__CALLER);
    if (d && n)
        memcpy(d, p, n);
    return d;
}
