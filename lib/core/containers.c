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

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static void **slot(const poprt__map *m, const char *key, size_t *idx)
{
    size_t mask = m->cap - 1, i = hash_str(key) & mask;
    while (m->keys[i]) {
        if (m->keys[i] != (const char *)m && strcmp(m->keys[i], key) == 0)
            break;
        i = (i + 1) & mask;
    }
    *idx = i;
    return &m->vals[i];
}

/* Deleted slots hold the map's own address as a tombstone key. */
static int live(const poprt__map *m, size_t i)
{
    return m->keys[i] && m->keys[i] != (const char *)m;
}

static poprt_status grow(poprt__map *m, const void *site)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    poprt__map n = {0};
    n.cap = cap;
    n.keys = poprt__calloc_at(cap, sizeof *n.keys, site);
    n.vals = poprt__calloc_at(cap, sizeof *n.vals, site);
    if (!n.keys || !n.vals) {
        poprt__free(n.keys);
        poprt__free(n.vals);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory growing a name table");
    }
    for (size_t i = 0; i < m->cap; i++)
        if (live(m, i)) {
            size_t j;
            slot(&n, m->keys[i], &j);
            n.keys[j] = m->keys[i];
            n.vals[j] = m->vals[i];
            n.len++;
        }
    poprt__free(m->keys);
    poprt__free(m->vals);
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
    size_t i;
    /* find existing key first (tombstones are skipped by slot()) */
    slot(m, key, &i);
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->len++;
    }
    m->vals[i] = val;
    return POPRT_OK;
}

void *poprt__map_get(const poprt__map *m, const char *key)
{
    if (!m->cap)
        return NULL;
    size_t i;
    slot(m, key, &i);
    return m->keys[i] ? m->vals[i] : NULL;
}

void poprt__map_del(poprt__map *m, const char *key)
{
    if (!m->cap)
        return;
    size_t i;
    slot(m, key, &i);
    if (m->keys[i]) {
        m->keys[i] = (const char *)m;
        m->vals[i] = NULL;
    }
}

void poprt__map_free(poprt__map *m)
{
    poprt__free(m->keys);
    poprt__free(m->vals);
    memset(m, 0, sizeof *m);
}
