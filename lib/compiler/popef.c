/* Executable files (.popef): a program written out, and read back with its
 * weights and prepared data used in place. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "compiler/popef.h"
#include "kernels/x86/cpu.h"
#include "onnx/onnx.h"
#include "compiler/program.h"
#include "kernels/kernel.h"

#define PAGE 4096u
/* Sections are checksummed in chunks of this size, so that a load can
 * verify them on several threads; the value does not depend on how many. */
#define CHUNK ((uint64_t)4 << 20)
#define MAX_VERIFY_THREADS 16 /* files are checksummed on as many threads as the
                               * session will run on (option "threads"), up to this */
#define ALIGN_UP(x, a) (((x) + (a)-1) & ~((uint64_t)(a)-1))

/* ---- section checksums ----------------------------------------------------
 * hash(section) = poprt__hash64 over the poprt__checksum64 of each CHUNK
 * bytes (seeded with the section kind and the chunk index). */

typedef struct ck_job {
    const unsigned char *data;
    uint64_t size;
    uint32_t kind;
    uint64_t *sums;
    uint64_t n_chunks;
    uint64_t next; /* atomic: next chunk to take */
} ck_job;

static void *ck_worker(void *arg)
{
    ck_job *j = arg;
    for (;;) {
        uint64_t c = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
        if (c >= j->n_chunks)
            return NULL;
        uint64_t off = c * CHUNK, len = j->size - off < CHUNK ? j->size - off : CHUNK;
        j->sums[c] = poprt__checksum64(j->data + off, (size_t)len, ((uint64_t)j->kind << 32) ^ c);
    }
}

int poprt__popef_section_hash(const void *data, uint64_t size, uint32_t kind, int threads,
                              uint64_t *out)
{
    uint64_t one;
    ck_job j = {data, size, kind, &one, size ? (size + CHUNK - 1) / CHUNK : 0, 0};
    if (j.n_chunks > 1 && !(j.sums = poprt__malloc(j.n_chunks * sizeof *j.sums)))
        return -1;
    pthread_t tid[MAX_VERIFY_THREADS];
    int started = 0;
    if (threads > MAX_VERIFY_THREADS)
        threads = MAX_VERIFY_THREADS;
    for (int t = 1; t < threads && (uint64_t)t < j.n_chunks; t++)
        if (poprt__thread_create(&tid[started], ck_worker, &j) == 0)
            started++; /* else fewer threads: the same hash */
    ck_worker(&j);
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    *out = poprt__hash64(j.sums, (size_t)j.n_chunks * sizeof *j.sums, kind ^ size);
    if (j.sums != &one)
        poprt__free(j.sums);
    return 0;
}

/* ---- writing ------------------------------------------------------------- */

typedef struct placed {
    const poprt__tensor *t;
    uint64_t offset, size;
    poprt__onnx_place place;
    const char *keys[3], *vals[3];
} placed;

typedef struct layout {
    placed *v;
    size_t n, cap;
    /* constants something reads (node inputs and graph outputs, subgraphs
     * included), sorted: only those and listed initializers are written,
     * as the ONNX writer does (folding leaves unread constants behind) */
    const poprt__tensor **used;
    size_t n_used, cap_used;
    uint64_t total;
    poprt__arena a;
} layout;

static int cmp_placed(const void *x, const void *y)
{
    const poprt__tensor *a = ((const placed *)x)->t, *b = ((const placed *)y)->t;
    return (a > b) - (a < b);
}

static const poprt__onnx_place *find_place(void *ctx, const poprt__tensor *t)
{
    layout *l = ctx;
    placed key = {.t = t};
    placed *p = l->n ? bsearch(&key, l->v, l->n, sizeof *l->v, cmp_placed) : NULL;
    return p ? &p->place : NULL;
}

static int cmp_ptr(const void *x, const void *y)
{
    const void *a = *(const void *const *)x, *b = *(const void *const *)y;
    return (a > b) - (a < b);
}

static int add_used(layout *l, const poprt__tensor *t)
{
    if (!t || !t->raw || t->producer)
        return 1;
    if (l->n_used == l->cap_used) {
        size_t cap = l->cap_used ? l->cap_used * 2 : 256;
        const poprt__tensor **v = poprt__realloc(l->used, cap * sizeof *v);
        if (!v)
            return 0;
        l->used = v;
        l->cap_used = cap;
    }
    l->used[l->n_used++] = t;
    return 1;
}

static poprt_status collect_used(layout *l, const poprt__graph *g)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_inputs; k++)
            if (!add_used(l, n->inputs[k]))
                return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int a = 0; a < n->n_attrs; a++) {
            const poprt__attr *at = &n->attrs[a];
            poprt_status st = POPRT_OK;
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                st = collect_used(l, at->g);
            for (int64_t k = 0; !st && at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                st = collect_used(l, at->graphs[k]);
            if (st)
                return st;
        }
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        if (!add_used(l, g->outputs.items[i]))
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    return POPRT_OK;
}

static int is_used(const layout *l, const poprt__tensor *t)
{
    return t->is_initializer ||
           (l->n_used && bsearch(&t, l->used, l->n_used, sizeof *l->used, cmp_ptr));
}

static poprt_status place_graph(layout *l, const poprt__graph *g)
{
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (!t->raw || t->producer || !is_used(l, t) || t->type.kind != POPRT__KIND_TENSOR ||
            t->type.elem == POPRT_DTYPE_STRING || poprt__onnx_packed_bits(t->type.elem) ||
            t->nbytes < 64)
            continue;
        if (l->n == l->cap) {
            size_t cap = l->cap ? l->cap * 2 : 64;
            placed *v = poprt__realloc(l->v, cap * sizeof *v);
            if (!v)
                return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
            l->v = v;
            l->cap = cap;
        }
        placed *p = &l->v[l->n++];
        memset(p, 0, sizeof *p);
        p->t = t;
        p->offset = ALIGN_UP(l->total, 64);
        p->size = t->nbytes;
        l->total = p->offset + p->size;
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        for (int a = 0; a < n->n_attrs; a++) {
            const poprt__attr *at = &n->attrs[a];
            poprt_status st = POPRT_OK;
            if (at->type == POPRT__ATTR_GRAPH && at->g)
                st = place_graph(l, at->g);
            for (int64_t k = 0; !st && at->type == POPRT__ATTR_GRAPHS && k < at->n; k++)
                st = place_graph(l, at->graphs[k]);
            if (st)
                return st;
        }
    }
    return POPRT_OK;
}

static poprt_status finish_layout(layout *l)
{
    if (l->n) /* l->v is NULL when no weight is placed */
        qsort(l->v, l->n, sizeof *l->v, cmp_placed);
    for (size_t i = 0; i < l->n; i++) {
        placed *p = &l->v[i];
        p->keys[0] = "location";
        p->keys[1] = "offset";
        p->keys[2] = "length";
        p->vals[0] = POPRT__ONNX_WEIGHTS_LOCATION;
        p->vals[1] = poprt__arena_printf(&l->a, "%llu", (unsigned long long)p->offset);
        p->vals[2] = poprt__arena_printf(&l->a, "%llu", (unsigned long long)p->size);
        if (!p->vals[1] || !p->vals[2])
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        p->place.kv.n = 3;
        p->place.kv.keys = p->keys;
        p->place.kv.vals = p->vals;
    }
    return POPRT_OK;
}

/* Adds item to obj under key; on failure (out of memory) frees item.
 * Returns 0 on failure. */
static int add_item(cJSON *obj, const char *key, cJSON *item)
{
    if (item && cJSON_AddItemToObject(obj, key, item))
        return 1;
    cJSON_Delete(item);
    return 0;
}

/* Every cJSON call below may fail for want of memory: each is checked, so
 * that metadata is complete or not written at all. */
static cJSON *io_json(const poprt__vec *tensors)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr && i < tensors->len; i++) {
        const poprt__tensor *t = tensors->items[i];
        cJSON *o = cJSON_CreateObject(), *dims = NULL;
        if (!o || !cJSON_AddItemToArray(arr, o)) {
            cJSON_Delete(o);
            goto fail;
        }
        /* o, then dims, belong to arr once added */
        int ok = cJSON_AddStringToObject(o, "name", t->name) &&
                 cJSON_AddStringToObject(o, "dtype", poprt__dtype_name((poprt_dtype)t->type.elem)) &&
                 add_item(o, "shape", dims = cJSON_CreateArray());
        for (int d = 0; ok && d < t->type.rank; d++) {
            cJSON *v = cJSON_CreateNumber((double)t->type.dims[d].value);
            ok = v && cJSON_AddItemToArray(dims, v);
        }
        if (!ok)
            goto fail;
    }
    return arr;
fail:
    cJSON_Delete(arr);
    return NULL;
}

static char *meta_json(const poprt__program *s)
{
    cJSON *root = cJSON_CreateObject(), *opts = NULL;
    int ok = root && cJSON_AddNumberToObject(root, "format", POPRT__POPEF_FORMAT) &&
             cJSON_AddStringToObject(root, "library", poprt__version()) &&
             add_item(root, "options", opts = cJSON_CreateObject());
    for (size_t i = 0; ok && s->options && i < s->options->n; i++)
        if (strcmp(s->options->kv[i].key, "cache_dir") != 0)
            ok = cJSON_AddStringToObject(opts, s->options->kv[i].key, s->options->kv[i].value) != NULL;
    ok = ok && add_item(root, "inputs", io_json(&s->inputs)) &&
         add_item(root, "outputs", io_json(&s->m->graph->outputs)) &&
         cJSON_AddNumberToObject(root, "arena_bytes", (double)s->plan.arena_bytes) &&
         cJSON_AddNumberToObject(root, "nodes", (double)s->m->graph->nodes.len);
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    return text;
}

static uint64_t name_hash(const char *name) { return poprt__hash64(name, strlen(name), 7); }

/* first[i] = the first node whose prepared data is node i's very copy
 * (poprt__program_share_equal_states), i itself when none comes before it;
 * nodes without data -1. 0 when out of memory. */
typedef struct state_ref {
    const void *p;
    size_t i;
} state_ref;

static int state_ref_cmp(const void *a, const void *b)
{
    const state_ref *x = a, *y = b;
    if (x->p != y->p)
        return (uintptr_t)x->p < (uintptr_t)y->p ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static int first_readers(const poprt__program *s, size_t n, long *first)
{
    state_ref *r = poprt__calloc(n ? n : 1, sizeof *r);
    if (!r)
        return 0;
    size_t nr = 0;
    for (size_t i = 0; i < n; i++) {
        first[i] = -1;
        if (s->states && s->states[i])
            r[nr++] = (state_ref){s->states[i], i};
    }
    qsort(r, nr, sizeof *r, state_ref_cmp);
    for (size_t k = 0; k < nr; k++)
        first[r[k].i] = (long)(k && r[k - 1].p == r[k].p ? (size_t)first[r[k - 1].i] : r[k].i);
    poprt__free(r);
    return 1;
}

typedef struct wbuf {
    unsigned char *p;
    size_t len, cap;
} wbuf;

static int put(wbuf *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->len + n)
            cap *= 2;
        unsigned char *p = poprt__realloc(b->p, cap);
        if (!p)
            return 0;
        b->p = p;
        b->cap = cap;
    }
    if (data)
        memcpy(b->p + b->len, data, n);
    else
        memset(b->p + b->len, 0, n);
    b->len += n;
    return 1;
}

static int pad_to(wbuf *b, uint64_t align)
{
    return put(b, NULL, (size_t)(ALIGN_UP(b->len, align) - b->len));
}

/* Serialises a program into one buffer laid out as popef.h says. */
static poprt_status build_file(const poprt__program *s, uint64_t model_hash, wbuf *out)
{
    const int threads = poprt__opt_threads(s->options, MAX_VERIFY_THREADS);
    layout l = {0};
    poprt__arena_init(&l.a);
    void *program = NULL;
    size_t program_size = 0;
    char *meta = NULL;
    poprt_status st = collect_used(&l, s->m->graph);
    if (!st) {
        if (l.n_used)
            qsort(l.used, l.n_used, sizeof *l.used, cmp_ptr);
        st = place_graph(&l, s->m->graph);
    }
    if (!st)
        st = finish_layout(&l);
    if (!st) {
        poprt__onnx_placer placer = {find_place, &l};
        st = poprt__onnx_save_placed(s->m, &placer, &program, &program_size);
    }
    if (!st && !(meta = meta_json(s)))
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory writing metadata");
    poprt__popef_header h;
    memset(&h, 0, sizeof h);
    wbuf b = {0};
    if (!st && !put(&b, NULL, POPRT__POPEF_HEADER))
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    int ns = 0;
#define SECTION(kind_, start_)                                                  \
    do {                                                                        \
        h.sections[ns].kind = (kind_);                                          \
        h.sections[ns].offset = (start_);                                       \
        h.sections[ns].size = b.len - (start_);                                 \
        if (poprt__popef_section_hash(b.p + (start_), b.len - (start_), kind_, threads,     \
                         &h.sections[ns].hash))                                 \
            st = POPRT_STATUS_OUT_OF_MEMORY;                                    \
        ns++;                                                                   \
    } while (0)
    if (!st) {
        size_t start = b.len;
        if (!put(&b, meta, strlen(meta)))
            st = POPRT_STATUS_OUT_OF_MEMORY;
        else
            SECTION(POPRT__POPEF_META, start);
    }
    if (!st) {
        size_t start = b.len;
        if (!put(&b, program, program_size))
            st = POPRT_STATUS_OUT_OF_MEMORY;
        else
            SECTION(POPRT__POPEF_PROGRAM, start);
    }
    if (!st && pad_to(&b, PAGE)) {
        size_t start = b.len;
        if (!put(&b, NULL, (size_t)l.total))
            st = POPRT_STATUS_OUT_OF_MEMORY;
        for (size_t i = 0; !st && i < l.n; i++) {
            memcpy(b.p + start + l.v[i].offset, l.v[i].t->raw, l.v[i].size);
            /* pages of the model file read for this copy only: handed back,
             * or an exported bert_base kept 330 MB more resident */
            poprt__model_drop_pages(s->m, l.v[i].t->raw, l.v[i].size);
        }
        if (!st)
            SECTION(POPRT__POPEF_WEIGHTS, start);
    } else if (!st)
        st = POPRT_STATUS_OUT_OF_MEMORY;
    if (!st && pad_to(&b, PAGE)) {
        size_t start = b.len;
        const poprt__graph *g = s->m->graph;
        uint64_t count = 0;
        for (size_t i = 0; i < g->nodes.len; i++)
            count += s->states && s->states[i] != NULL;
        uint64_t data_off = ALIGN_UP(8 + count * 32, 64);
        /* per node, its data's offset; nodes that share one copy
         * (poprt__program_share_equal_states) name the same bytes, once */
        uint64_t *offs = poprt__calloc(g->nodes.len ? g->nodes.len : 1, sizeof *offs);
        long *first = poprt__calloc(g->nodes.len ? g->nodes.len : 1, sizeof *first);
        if (!offs || !first || !first_readers(s, g->nodes.len, first) || !put(&b, &count, 8))
            st = POPRT_STATUS_OUT_OF_MEMORY;
        for (size_t i = 0; !st && i < g->nodes.len; i++) {
            if (!s->states || !s->states[i])
                continue;
            const long o = first[i] != (long)i ? first[i] : -1;
            offs[i] = o >= 0 ? offs[o] : data_off;
            uint64_t e[4] = {i, name_hash(((poprt__node *)g->nodes.items[i])->name), offs[i],
                             s->state_sizes[i]};
            if (!put(&b, e, sizeof e))
                st = POPRT_STATUS_OUT_OF_MEMORY;
            if (o < 0)
                data_off = ALIGN_UP(data_off + s->state_sizes[i], 64);
        }
        for (size_t i = 0; !st && i < g->nodes.len; i++) {
            if (!s->states || !s->states[i] || first[i] != (long)i)
                continue;
            if (!pad_to(&b, 64) || !put(&b, s->states[i], s->state_sizes[i]))
                st = POPRT_STATUS_OUT_OF_MEMORY;
        }
        poprt__free(offs);
        poprt__free(first);
        if (!st)
            SECTION(POPRT__POPEF_STATES, start);
    } else if (!st)
        st = POPRT_STATUS_OUT_OF_MEMORY;
#undef SECTION
    if (st == POPRT_STATUS_OUT_OF_MEMORY)
        st = poprt__err(st, "out of memory writing the executable");
    if (!st) {
        memcpy(h.magic, POPRT__POPEF_MAGIC, 8);
        h.format = POPRT__POPEF_FORMAT;
        h.header_size = POPRT__POPEF_HEADER;
        h.file_size = b.len;
        h.lib_major = POPRT_VERSION_MAJOR;
        h.lib_minor = POPRT_VERSION_MINOR;
        h.lib_patch = POPRT_VERSION_PATCH;
        h.n_sections = (uint32_t)ns;
        h.isa = 0;
        h.model_hash = model_hash;
        h.header_hash = poprt__hash64(&h, offsetof(poprt__popef_header, header_hash), 0);
        memcpy(b.p, &h, sizeof h);
        *out = b;
    } else
        poprt__free(b.p);
    poprt__free(program);
    cJSON_free(meta);
    poprt__free(l.v);
    poprt__free(l.used);
    poprt__arena_free(&l.a);
    return st;
}

poprt_status poprt__program_serialize(const poprt__program *p, uint64_t model_hash, void **data,
                                      size_t *size)
{
    wbuf b;
    poprt_status st = build_file(p, model_hash, &b);
    if (st)
        return st;
    *data = b.p;
    *size = b.len;
    return POPRT_OK;
}

/* ---- reading ------------------------------------------------------------- */

static poprt_status bad(const char *path, const char *what)
{
    return poprt__err(POPRT_STATUS_PARSE_ERROR, "executable '%s': %s", path, what);
}

/* Checks the header and every section; fills the sections by kind. */
static poprt_status check_file(const char *path, const poprt__blob *f, int threads,
                               const poprt__popef_section **by_kind)
{
    if (f->size < POPRT__POPEF_HEADER)
        return bad(path, "truncated (shorter than its header)");
    poprt__popef_header h;
    memcpy(&h, f->data, sizeof h);
    if (memcmp(h.magic, POPRT__POPEF_MAGIC, 8) != 0)
        return bad(path, "not a libpoprt executable (bad magic)");
    if (h.header_hash != poprt__hash64(&h, offsetof(poprt__popef_header, header_hash), 0))
        return bad(path, "corrupt header (checksum mismatch)");
    if (h.format != POPRT__POPEF_FORMAT)
        return poprt__err(POPRT_STATUS_UNSUPPORTED,
                          "executable '%s': format version %u, this library reads version %d "
                          "(recompile the model)",
                          path, h.format, POPRT__POPEF_FORMAT);
    if (h.lib_major != POPRT_VERSION_MAJOR || h.lib_minor != POPRT_VERSION_MINOR)
        return poprt__err(POPRT_STATUS_UNSUPPORTED,
                          "executable '%s': made by libpoprt %u.%u.%u, this is %s (recompile the model)",
                          path, h.lib_major, h.lib_minor, h.lib_patch, poprt__version());
    if (h.file_size != f->size)
        return poprt__err(POPRT_STATUS_PARSE_ERROR,
                          "executable '%s': %zu bytes, the header says %llu (truncated or extended)",
                          path, f->size, (unsigned long long)h.file_size);
    if (h.n_sections > POPRT__POPEF_MAX_SECTIONS)
        return bad(path, "corrupt section table");
    const poprt__popef_header *hp = f->data;
    for (uint32_t i = 0; i < h.n_sections; i++) {
        const poprt__popef_section *sec = &hp->sections[i];
        if (sec->offset < POPRT__POPEF_HEADER || sec->offset > f->size ||
            sec->size > f->size - sec->offset || sec->kind == 0 ||
            sec->kind > POPRT__POPEF_STATES)
            return bad(path, "corrupt section table");
        uint64_t hash;
        if (poprt__popef_section_hash((const char *)f->data + sec->offset, sec->size, sec->kind, threads, &hash))
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory checking '%s'", path);
        if (hash != sec->hash)
            return poprt__err(POPRT_STATUS_PARSE_ERROR,
                              "executable '%s': section %u (kind %u) is corrupt (checksum mismatch)",
                              path, i, sec->kind);
        by_kind[sec->kind] = sec;
    }
    for (int k = POPRT__POPEF_META; k <= POPRT__POPEF_STATES; k++)
        if (!by_kind[k])
            return bad(path, "a section is missing");
    /* sections are written in kind order; the padding between them (and
     * after the header table) must be zero, so every byte is checked */
    const unsigned char *bytes = f->data;
    uint64_t pos = offsetof(poprt__popef_header, header_hash) + 8;
    for (int k = POPRT__POPEF_META; k <= POPRT__POPEF_STATES; k++) {
        const poprt__popef_section *sec = by_kind[k];
        if (sec->offset < pos)
            return bad(path, "overlapping sections");
        for (; pos < sec->offset; pos++)
            if (bytes[pos])
                return bad(path, "corrupt padding between sections");
        pos = sec->offset + sec->size;
    }
    if (pos != f->size)
        return bad(path, "trailing bytes after the last section");
    if (by_kind[POPRT__POPEF_WEIGHTS]->offset % PAGE || by_kind[POPRT__POPEF_STATES]->offset % PAGE)
        return bad(path, "misaligned section");
    return POPRT_OK;
}

/* Options: the file's, then the caller's for the keys that may change
 * after compiling (threads, batches_per_step, anchors). */
static poprt_status merge_options(const char *path, const cJSON *stored, const poprt_options *user,
                                  poprt_options **out)
{
    poprt_options *o;
    poprt_status st = poprt__options_new(&o);
    if (st)
        return st;
    const cJSON *it;
    cJSON_ArrayForEach(it, stored)
    {
        if (!cJSON_IsString(it)) {
            poprt__options_free(o);
            return bad(path, "corrupt metadata (options)");
        }
        if ((st = poprt__options_set(o, it->string, it->valuestring))) {
            poprt__options_free(o);
            return poprt__err_prefix(st, "executable '%s': ", path);
        }
    }
    for (size_t i = 0; user && i < user->n; i++) {
        const char *k = user->kv[i].key, *v = user->kv[i].value;
        if (strncmp(k, "input_shape.", 12) == 0) {
            const char *have = poprt__opt(o, k);
            if (!have || strcmp(have, v) != 0) {
                poprt__options_free(o);
                return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                  "option '%s': input shapes are fixed when the executable '%s' "
                                  "is compiled",
                                  k, path);
            }
            continue;
        }
        if (strcmp(k, "cache_dir") == 0)
            continue;
        if ((st = poprt__options_set(o, k, v))) {
            poprt__options_free(o);
            return st;
        }
    }
    *out = o;
    return POPRT_OK;
}

poprt_status poprt__program_load(const char *path, poprt__blob *f, const poprt_options *options,
                                 const poprt__folder *folder, poprt__program **out)
{
    const poprt__popef_section *sec[POPRT__POPEF_STATES + 1] = {0};
    poprt_status st = check_file(path, f, poprt__opt_threads(options, MAX_VERIFY_THREADS), sec);
    if (st)
        return st;
    const char *base = f->data;
    errno = 0; /* ENOMEM: cJSON's malloc failed, else the JSON is bad */
    cJSON *meta = cJSON_ParseWithLength(base + sec[POPRT__POPEF_META]->offset,
                                        sec[POPRT__POPEF_META]->size);
    if (!meta && errno == ENOMEM)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "executable '%s': out of memory", path);
    if (!meta)
        return bad(path, "corrupt metadata");
    poprt_options *opts = NULL;
    st = merge_options(path, cJSON_GetObjectItemCaseSensitive(meta, "options"), options, &opts);
    cJSON_Delete(meta);
    if (st)
        return st;
    /* the program: its own blob view over the mapping (kept alive by f) */
    poprt__blob *program = poprt__blob_wrap(NULL, 0);
    if (!program) {
        poprt__options_free(opts);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    program->data = (void *)(base + sec[POPRT__POPEF_PROGRAM]->offset);
    program->size = sec[POPRT__POPEF_PROGRAM]->size;
    program->mapped = 2; /* a view: nothing to release */
    poprt__model *m;
    poprt__limits lim;
    poprt__limits_default(&lim);
    st = poprt__limits_from_options(options, &lim);
    if (!st)
        st = poprt__onnx_load_blob_weights(program, f, base + sec[POPRT__POPEF_WEIGHTS]->offset,
                                           sec[POPRT__POPEF_WEIGHTS]->size, &lim, &m);
    poprt__blob_unref(program);
    if (st) {
        poprt__options_free(opts);
        return poprt__err_prefix(st, "executable '%s': ", path);
    }
    /* prepared blobs, by node index, checked against the node names */
    const unsigned char *sb = (const unsigned char *)base + sec[POPRT__POPEF_STATES]->offset;
    uint64_t ssize = sec[POPRT__POPEF_STATES]->size, count = 0;
    if (ssize >= 8)
        memcpy(&count, sb, 8);
    size_t nn = m->graph->nodes.len;
    const void **sd = poprt__calloc(nn + 1, sizeof *sd);
    size_t *sz = poprt__calloc(nn + 1, sizeof *sz);
    if (!sd || !sz)
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st && (ssize < 8 || count > (ssize - 8) / 32))
        st = bad(path, "corrupt prepared-state table");
    for (uint64_t i = 0; !st && i < count; i++) {
        uint64_t e[4];
        memcpy(e, sb + 8 + i * 32, sizeof e);
        if (e[0] >= nn || e[2] > ssize || e[3] > ssize - e[2] ||
            e[1] != name_hash(((poprt__node *)m->graph->nodes.items[e[0]])->name)) {
            st = bad(path, "prepared state does not match the program");
            break;
        }
        sd[e[0]] = sb + e[2];
        sz[e[0]] = e[3];
    }
    poprt__stored_states stored = {nn, sd, sz, 1};
    poprt__program *p = NULL;
    if (!st) {
        st = poprt__program_compile(m, opts, folder, &stored, &p);
        m = NULL;
    }
    if (m)
        poprt__model_free(m);
    poprt__free(sd);
    poprt__free(sz);
    poprt__options_free(opts);
    if (st)
        return st;
    poprt__blob_ref(f);
    p->file = f;
    *out = p;
    return POPRT_OK;
}
