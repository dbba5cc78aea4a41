#include <string.h>
#include "core/core.h"

poprt_status poprt__vec_push(poprt__vec *v, void *item)
{
    if (v->len == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        void **items = poprt__realloc_at(v->items, cap * sizeof *items, POPRT__CALLER);
        if (!items)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory growing a list");
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = item;
    return POPRT_OK;
}

void poprt__vec_free(poprt__vec *v)
{
    poprt__free(v->items);
    memset(v, 0, sizeof *v);
}

struct poprt__map_entry {
    const char *key; /* NULL: empty; TOMB: deleted */
    void *val;
    uint64_t hash;
};

static const char tomb[1];
#define TOMB tomb

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    /* the table takes the low bits, which a multiplicative hash mixes least
     * (names like t0, t1, ... cluster): fold the high bits down */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

/* The entry holding key, or the empty one ending its probe sequence. The
 * stored hash is compared first, so a probe rarely reads another key. */
static poprt__map_entry *slot(const poprt__map *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1, i = h & mask;
    while (m->e[i].key) {
        if (m->e[i].key != TOMB && m->e[i].hash == h && strcmp(m->e[i].key, key) == 0)
            break;
        i = (i + 1) & mask;
    }
    return &m->e[i];
}

static poprt_status grow(poprt__map *m, const void *site)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    poprt__map n = {0};
    n.cap = cap;
    n.e = poprt__calloc_at(cap, sizeof *n.e, site);
    if (!n.e)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory growing a name table");
    for (size_t i = 0; i < m->cap; i++)
        if (m->e[i].key && m->e[i].key != TOMB) {
            poprt__map_entry *d = slot(&n, m->e[i].key, m->e[i].hash);
            *d = m->e[i];
            n.len++;
        }
    poprt__free(m->e);
    *m = n;
    return POPRT_OK;
}

poprt_status poprt__map_put(poprt__map *m, const char *key, void *val)
{
    if ((m->len + 1) * 2 > m->cap) {
        poprt_status st = grow(m, POPRT__CALLER);
        if (st)
            return st;
    }
    uint64_t h = hash_str(key);
    /* find the existing key first (tombstones are skipped by slot()) */
    poprt__map_entry *e = slot(m, key, h);
    if (!e->key) {
        e->key = key;
        e->hash = h;
        m->len++;
    }
    e->val = val;
    return POPRT_OK;
}

void *poprt__map_get(const poprt__map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    poprt__map_entry *e = slot(m, key, hash_str(key));
    return e->key ? e->val : NULL;
}

void poprt__map_del(poprt__map *m, const char *key)
{
    if (!m->cap)
        return;
    poprt__map_entry *e = slot(m, key, hash_str(key));
    if (e->key) {
        e->key = TOMB;
        e->val = NULL;
    }
}

void poprt__map_free(poprt__map *m)
{
    poprt__free(m->e);
    memset(m, 0, sizeof *m);
}
