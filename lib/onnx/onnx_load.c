/* ModelProto -> poprt__model, zero-copy over the mapped file.
 *
 * nanopb does the wire-format work; every string, bytes, submessage and
 * repeated field is a callback (onnx.options). Submessage and bytes
 * callbacks only record where the field lies in the buffer (a span) and skip
 * it, so raw_data is never copied, and a graph can be built in the order
 * that name resolution needs (initializers and inputs, then node outputs,
 * then node inputs, then subgraphs) whatever order the file uses.
 * Scratch lists live in a temporary arena freed at the end of the load.
 *
 * raw_data whose place in the file does not suit its element type (most
 * float tensors an exporter writes: it aligns nothing) stays where it is
 * for large initializers: poprt__tensor_data copies it when something reads
 * it typed, so a weight only packed or saved is never copied. Other such
 * raw_data (attribute tensors, sparse parts, small initializers) is copied
 * now, large copies to anonymous blobs of the model (sealed read-only once
 * loaded), which copies of the model share instead of copying again, and
 * the file's pages they came from are handed back to the kernel: the bytes
 * then live in one place. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <pb_decode.h>
#include "onnx/onnx.h"
#include "onnx/onnx.pb.h"
#include "ir/dtype.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the ONNX loader assumes a little-endian host (raw_data is little-endian)"
#endif

#define MAX_DEPTH 64 /* nesting of graphs, types, sequences: bounds the C stack */

typedef struct span {
    const uint8_t *p;
    size_t n;
} span;

typedef struct lctx {
    poprt__model *m;   /* NULL when decoding test data */
    poprt__arena *out; /* where results live (model arena or caller's) */
    poprt__arena tmp;  /* scratch, freed at the end */
    const char *dir;   /* external-data folder, or NULL */
    const uint8_t *weights; /* "@weights" section of an executable file, or NULL */
    size_t weights_size;
    poprt__map files;  /* realpath -> poprt__blob * (external data) */
    poprt__map node_names;
    const uint8_t *base, *end; /* the buffer being decoded */
    int oom;
    const char *nul; /* a string with an embedded NUL byte (cut there), or NULL */
    int depth;
    int graph_depth;          /* graphs being built, one inside the other */
    int64_t n_nodes;          /* nodes made so far, all graphs */
    const poprt__limits *lim; /* the model's limits (NULL when decoding test data) */
    int lazy;                 /* decoding an initializer: unaligned raw_data stays in place */
    poprt__blob *chunk;       /* where large copies go (one of m->blobs), or NULL */
    size_t chunk_used;
} lctx;

/* A growable list of spans or numbers in the scratch arena. */
typedef struct list {
    lctx *c;
    void *v;
    size_t len, cap;
} list;

static int list_reserve(list *l, size_t need, size_t elsz)
{
    if (need <= l->cap)
        return 1;
    size_t nc = l->cap ? l->cap : 4;
    while (nc < need) {
        if (nc > SIZE_MAX / 4 / elsz)
            return 0;
        nc *= 2;
    }
    void *nv = poprt__arena_array(&l->c->tmp, nc, elsz);
    if (!nv) {
        l->c->oom = 1;
        return 0;
    }
    if (l->len)
        memcpy(nv, l->v, l->len * elsz);
    l->v = nv;
    l->cap = nc;
    return 1;
}

#define SPANS(l) ((span *)(l).v)
#define U64S(l) ((uint64_t *)(l).v)
#define U32S(l) ((uint32_t *)(l).v)

/* ---- nanopb callbacks ------------------------------------------------------ */

/* Length-delimited field: record where it is (stream->state points into the
 * buffer for a buffer stream) and skip it. */
static bool cb_span(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    list *l = *arg;
    /* A length-delimited field sent with another wire type reaches us as a
     * copy on nanopb's stack: reject it rather than keep the pointer. */
    const uint8_t *p = s->state;
    if (p < l->c->base || p > l->c->end || s->bytes_left > (size_t)(l->c->end - p))
        PB_RETURN_ERROR(s, "wrong wire type");
    if (!list_reserve(l, l->len + 1, sizeof(span)))
        return false;
    SPANS(*l)[l->len].p = s->state;
    SPANS(*l)[l->len].n = s->bytes_left;
    l->len++;
    return pb_read(s, NULL, s->bytes_left);
}

/* Repeated varints, packed or not (stored as uint64). */
static bool cb_varint(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    list *l = *arg;
    if (!list_reserve(l, l->len + (s->bytes_left < 10 ? 1 : s->bytes_left / 2), sizeof(uint64_t)))
        return false;
    while (s->bytes_left) {
        uint64_t u;
        if (!pb_decode_varint(s, &u))
            return false;
        if (!list_reserve(l, l->len + 1, sizeof(uint64_t)))
            return false;
        U64S(*l)[l->len++] = u;
    }
    return true;
}

static bool cb_fixed32(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    list *l = *arg;
    if (!list_reserve(l, l->len + s->bytes_left / 4, sizeof(uint32_t)))
        return false;
    while (s->bytes_left) {
        uint32_t u;
        if (!pb_decode_fixed32(s, &u))
            return false;
        if (!list_reserve(l, l->len + 1, sizeof(uint32_t)))
            return false;
        U32S(*l)[l->len++] = u;
    }
    return true;
}

static bool cb_fixed64(pb_istream_t *s, const pb_field_t *f, void **arg)
{
    (void)f;
    list *l = *arg;
    if (!list_reserve(l, l->len + s->bytes_left / 8, sizeof(uint64_t)))
        return false;
    while (s->bytes_left) {
        uint64_t u;
        if (!pb_decode_fixed64(s, &u))
            return false;
        if (!list_reserve(l, l->len + 1, sizeof(uint64_t)))
            return false;
        U64S(*l)[l->len++] = u;
    }
    return true;
}

#define ON(cbf, fn, lst) \
    do {                 \
        (lst).c = c;     \
        (cbf).funcs.decode = fn; \
        (cbf).arg = &(lst); \
    } while (0)

/* A failure the string helpers or allocations flagged: a name with a NUL
 * byte (which a C string would cut short, changing what it names), or
 * memory. */
static poprt_status oom(const lctx *c)
{
    if (c && c->nul)
        return poprt__err(POPRT_STATUS_PARSE_ERROR,
                          "a name or string holds a NUL byte (it starts '%s'): names are text",
                          c->nul);
    return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory loading ONNX");
}

static poprt_status decode(lctx *c, span sp, const pb_msgdesc_t *fields, void *msg, const char *what,
                           const char *name)
{
    pb_istream_t s = pb_istream_from_buffer(sp.p, sp.n);
    if (!pb_decode_noinit(&s, fields, msg)) {
        if (c->oom)
            return oom(c);
        if (name && *name)
            return poprt__err(POPRT_STATUS_PARSE_ERROR, "malformed %s '%s': %s", what, name, PB_GET_ERROR(&s));
        return poprt__err(POPRT_STATUS_PARSE_ERROR, "malformed %s: %s", what, PB_GET_ERROR(&s));
    }
    return POPRT_OK;
}

/* Last occurrence wins for singular fields, as protobuf says. */
static int last(const list *l, span *out)
{
    if (!l->len)
        return 0;
    *out = SPANS(*l)[l->len - 1];
    return 1;
}

/* A NUL-terminated copy of sp in arena a; NULL (and c->oom set) when out of
 * memory or when sp holds a NUL byte (c->nul then keeps what precedes it). */
static const char *text_in(lctx *c, poprt__arena *a, span sp)
{
    const char *s = poprt__arena_strndup(a, (const char *)sp.p, sp.n);
    if (s && memchr(sp.p, 0, sp.n)) {
        c->nul = c->nul ? c->nul : s;
        s = NULL;
    }
    if (!s)
        c->oom = 1;
    return s;
}

/* Singular string field as a NUL-terminated copy in the output arena ("" if absent). */
static const char *str_of(lctx *c, const list *l)
{
    span sp = {(const uint8_t *)"", 0};
    last(l, &sp);
    return text_in(c, c->out, sp);
}

/* Same, in the scratch arena (names used only during the load). */
static const char *tmp_str(lctx *c, span sp) { return text_in(c, &c->tmp, sp); }

static const char *out_str(lctx *c, span sp) { return text_in(c, c->out, sp); }

/* Bytes that may hold NULs (string attributes keep their length). */
static const char *out_bytes(lctx *c, span sp)
{
    const char *s = poprt__arena_strndup(c->out, (const char *)sp.p, sp.n);
    if (!s)
        c->oom = 1;
    return s;
}

/* StringStringEntryProto list -> key/value arrays. */
static poprt_status decode_entries(lctx *c, const list *l, const char ***keys, const char ***vals)
{
    *keys = poprt__arena_array(c->out, l->len ? l->len : 1, sizeof(char *));
    *vals = poprt__arena_array(c->out, l->len ? l->len : 1, sizeof(char *));
    if (!*keys || !*vals)
        return oom(c);
    for (size_t i = 0; i < l->len; i++) {
        onnx_StringStringEntryProto e;
        memset(&e, 0, sizeof e);
        list k = {0}, v = {0};
        ON(e.key, cb_span, k);
        ON(e.value, cb_span, v);
        poprt_status st = decode(c, SPANS(*l)[i], onnx_StringStringEntryProto_fields, &e,
                                 "StringStringEntryProto", NULL);
        if (st)
            return st;
        (*keys)[i] = str_of(c, &k);
        (*vals)[i] = str_of(c, &v);
        if (c->oom)
            return oom(c);
    }
    return POPRT_OK;
}

/* ---- dtypes and layouts ------------------------------------------------------ */

int poprt__onnx_packed_bits(int32_t dt)
{
    switch (dt) {
    case POPRT_DTYPE_INT4:
    case POPRT_DTYPE_UINT4:
    case POPRT_DTYPE_FLOAT4E2M1:
        return 4;
    case POPRT_DTYPE_INT2:
    case POPRT_DTYPE_UINT2:
        return 2;
    default:
        return 0;
    }
}

/* ONNX packing (low bits first) -> one element per byte, sign-extended for
 * the signed integer types. */
static void unpack_bits(uint8_t *dst, const uint8_t *src, int64_t numel, int bits, int sign)
{
    int per = 8 / bits;
    uint8_t mask = (uint8_t)((1u << bits) - 1u);
    for (int64_t i = 0; i < numel; i++) {
        uint8_t v = (uint8_t)((src[i / per] >> ((i % per) * bits)) & mask);
        if (sign && (v & (1u << (bits - 1))))
            v = (uint8_t)(v | (uint8_t)~mask);
        dst[i] = v;
    }
}

static int is_signed_packed(int32_t dt) { return dt == POPRT_DTYPE_INT4 || dt == POPRT_DTYPE_INT2; }

static const char *dims_str(lctx *c, const poprt__type *t)
{
    const char *s = poprt__type_str(&c->tmp, t);
    return s ? s : "?";
}

/* ---- external data ------------------------------------------------------------ */

static int parse_u64(const char *s, int64_t *out)
{
    if (!*s)
        return 0;
    int64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (INT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (*s - '0');
    }
    *out = v;
    return 1;
}

/* A relative path that never climbs above its start ("a/../b" is fine). */
static int stays_inside(const char *p)
{
    int depth = 0;
    while (*p) {
        const char *e = strchr(p, '/');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0)
                return 0;
        } else if (n && !(n == 1 && p[0] == '.')) {
            depth++;
        }
        p += n;
        if (*p == '/')
            p++;
    }
    return 1;
}

static poprt_status external_span(lctx *c, const char *tname, const list *entries, span *out)
{
    const char **keys, **vals;
    poprt_status st = decode_entries(c, entries, &keys, &vals);
    if (st)
        return st;
    const char *loc = NULL;
    int64_t off = 0, len = -1;
    for (size_t i = 0; i < entries->len; i++) {
        if (strcmp(keys[i], "location") == 0) {
            loc = vals[i];
        } else if (strcmp(keys[i], "offset") == 0) {
            if (!parse_u64(vals[i], &off))
                return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': invalid external data offset '%s'",
                                  tname, vals[i]);
        } else if (strcmp(keys[i], "length") == 0) {
            if (!parse_u64(vals[i], &len))
                return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': invalid external data length '%s'",
                                  tname, vals[i]);
        }
    }
    if (!loc || !*loc)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': external data without a location", tname);
    if (c->weights) {
        if (strcmp(loc, POPRT__ONNX_WEIGHTS_LOCATION) != 0)
            return poprt__err(POPRT_STATUS_INVALID_MODEL,
                              "tensor '%s': executable files keep weights in their own section, not '%s'",
                              tname, loc);
        if ((uint64_t)off > c->weights_size || len < 0 || (uint64_t)len > c->weights_size - (uint64_t)off)
            return poprt__err(POPRT_STATUS_INVALID_MODEL,
                              "tensor '%s': weights offset %lld + length %lld exceed the weights section "
                              "(%zu bytes)", tname, (long long)off, (long long)len, c->weights_size);
        out->p = c->weights + off;
        out->n = (size_t)len;
        return POPRT_OK;
    }
    if (!c->dir)
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "tensor '%s': external data '%s' needs the model's folder (model not loaded from a file)",
                          tname, loc);
    if (loc[0] == '/' || loc[0] == '\\')
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': external data path '%s' is absolute", tname,
                          loc);
    if (!stays_inside(loc))
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': external data path '%s' leaves the model folder",
                          tname, loc);
    char *full = poprt__arena_printf(&c->tmp, "%s/%s", c->dir, loc);
    if (!full)
        return oom(c);
    char root[PATH_MAX], real[PATH_MAX];
    if (!realpath(c->dir, root))
        return poprt__err(POPRT_STATUS_IO_ERROR, "tensor '%s': model folder '%s': %s", tname, c->dir,
                          strerror(errno));
    if (!realpath(full, real))
        return poprt__err(POPRT_STATUS_IO_ERROR, "tensor '%s': external data file '%s': %s", tname, loc,
                          strerror(errno));
    /* symlinks may point anywhere: the resolved file must still be inside */
    size_t rl = strlen(root);
    int inside = strncmp(real, root, rl) == 0 && (real[rl] == '/' || (rl == 1 && root[0] == '/'));
    if (!inside)
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "tensor '%s': external data path '%s' resolves outside the model folder", tname, loc);
    char *key = poprt__arena_strdup(&c->tmp, real);
    if (!key)
        return oom(c);
    poprt__blob *b = poprt__map_get(&c->files, key);
    if (!b) {
        st = poprt__blob_map_file(key, &b);
        if (st)
            return poprt__err_prefix(st, "tensor '%s': external data: ", tname);
        if (poprt__vec_push(&c->m->blobs, b)) {
            poprt__blob_unref(b);
            return oom(c);
        }
        if (poprt__map_put(&c->files, key, b))
            return oom(c);
    }
    if ((uint64_t)off > b->size)
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "tensor '%s': external data offset %lld is beyond the end of '%s' (%zu bytes)", tname,
                          (long long)off, loc, b->size);
    if (len < 0)
        len = (int64_t)(b->size - (size_t)off);
    if ((uint64_t)len > b->size - (size_t)off)
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "tensor '%s': external data offset %lld + length %lld exceeds '%s' (%zu bytes)", tname,
                          (long long)off, (long long)len, loc, b->size);
    out->p = (const uint8_t *)b->data + off;
    out->n = (size_t)len;
    return POPRT_OK;
}

/* ---- tensors ---------------------------------------------------------------- */

typedef struct tensor_out {
    const char *name;
    const char *doc;
    poprt__type type;
    const void *data;
    size_t nbytes;
    int64_t numel;
} tensor_out;

/* Non-NULL data for empty constants (data == NULL means "not constant"). */
static void *empty_data(lctx *c)
{
    void *p = poprt__arena_alloc(c->out, 16);
    if (!p)
        c->oom = 1;
    return p;
}

/* Copies of at least this many bytes go to the model's shared blobs. */
#define BIG_COPY ((size_t)16 << 10)
#define CHUNK_BYTES ((size_t)64 << 20)

/* A 64-byte aligned copy of n bytes at p (NULL when out of memory): in the
 * model's copy blobs when large, the source's file pages then dropped. */
static void *copy_raw(lctx *c, const void *p, size_t n)
{
    if (!c->m || n < BIG_COPY)
        return poprt__arena_memdup(c->out, p, n);
    if (!c->chunk || c->chunk->size - c->chunk_used < n) {
        poprt__blob *b = poprt__blob_anon(n > CHUNK_BYTES ? n : CHUNK_BYTES);
        if (!b)
            return NULL;
        if (poprt__vec_push(&c->m->blobs, b)) {
            poprt__blob_unref(b);
            return NULL;
        }
        poprt__blob_seal(c->chunk); /* full: nothing more is written there */
        c->chunk = b;
        c->chunk_used = 0;
    }
    unsigned char *d = (unsigned char *)c->chunk->data + c->chunk_used;
    memcpy(d, p, n);
    c->chunk_used = (c->chunk_used + n + 63) / 64 * 64;
    if (c->chunk_used > c->chunk->size)
        c->chunk_used = c->chunk->size;
    poprt__model_drop_pages(c->m, p, n);
    return d;
}

static poprt_status from_raw(lctx *c, tensor_out *o, span raw)
{
    int32_t dt = o->type.elem;
    const char *tn = o->name;
    if (dt == POPRT_DTYPE_STRING)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': string tensors cannot use raw_data", tn);
    int bits = poprt__onnx_packed_bits(dt);
    size_t esz = poprt__dtype_size(dt);
    size_t need;
    if (bits) {
        need = (size_t)(((uint64_t)o->numel * (uint64_t)bits + 7) / 8);
    } else if (!poprt__mul_size((size_t)o->numel, esz, &need)) {
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': shape %s is too large", tn, dims_str(c, &o->type));
    }
    if (raw.n != need)
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "tensor '%s': data has %zu bytes, but shape %s of %s needs %zu", tn, raw.n,
                          dims_str(c, &o->type), poprt__dtype_name(dt), need);
    o->nbytes = (size_t)o->numel * esz;
    if (o->numel == 0) {
        o->data = empty_data(c);
        return c->oom ? oom(c) : POPRT_OK;
    }
    if (bits) {
        uint8_t *d = poprt__arena_alloc(c->out, o->nbytes);
        if (!d)
            return oom(c);
        unpack_bits(d, raw.p, o->numel, bits, is_signed_packed(dt));
        o->data = d;
        return POPRT_OK;
    }
    size_t align = esz > 8 ? 8 : esz;
    if (((uintptr_t)raw.p % align) == 0) {
        o->data = raw.p; /* zero copy: the layout already matches */
        return POPRT_OK;
    }
    if (c->lazy && c->m && need >= BIG_COPY) {
        o->data = raw.p; /* copied when something reads it typed (poprt__tensor_data) */
        return POPRT_OK;
    }
    void *d = copy_raw(c, raw.p, need);
    if (!d)
        return oom(c);
    o->data = d;
    return POPRT_OK;
}

typedef struct tensor_lists {
    list dims, segment, f32, i32, strs, i64, name, raw, f64, u64, doc, ext, meta;
} tensor_lists;

static poprt_status count_mismatch(lctx *c, tensor_out *o, const char *field, size_t have, uint64_t need)
{
    if (have == 0 && need > 0)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': no data for shape %s of %s", o->name,
                          dims_str(c, &o->type), poprt__dtype_name(o->type.elem));
    return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': %s has %zu values, but shape %s of %s needs %llu",
                      o->name, field, have, dims_str(c, &o->type), poprt__dtype_name(o->type.elem),
                      (unsigned long long)need);
}

static poprt_status from_typed(lctx *c, tensor_out *o, tensor_lists *L)
{
    int32_t dt = o->type.elem;
    size_t esz = poprt__dtype_size(dt);
    uint64_t numel = (uint64_t)o->numel;
    int bits = poprt__onnx_packed_bits(dt);
    /* Which field carries this dtype and how many values it must hold;
     * checked before allocating so a huge shape without data costs nothing. */
    const list *src;
    const char *field;
    uint64_t need = numel;
    switch (dt) {
    case POPRT_DTYPE_FLOAT:
    case POPRT_DTYPE_COMPLEX64:
        src = &L->f32, field = "float_data", need = dt == POPRT_DTYPE_FLOAT ? numel : 2 * numel;
        break;
    case POPRT_DTYPE_DOUBLE:
    case POPRT_DTYPE_COMPLEX128:
        src = &L->f64, field = "double_data", need = dt == POPRT_DTYPE_DOUBLE ? numel : 2 * numel;
        break;
    case POPRT_DTYPE_INT64:
        src = &L->i64, field = "int64_data";
        break;
    case POPRT_DTYPE_UINT64:
    case POPRT_DTYPE_UINT32:
        src = &L->u64, field = "uint64_data";
        break;
    case POPRT_DTYPE_STRING:
        src = &L->strs, field = "string_data";
        break;
    default:
        /* int32_data carries every other type of 4 bytes or less (float16,
         * bfloat16 and float8 as bit patterns; sub-byte types as one packed
         * byte per value). */
        src = &L->i32, field = "int32_data";
        if (bits)
            need = (numel * (uint64_t)bits + 7) / 8;
        break;
    }
    if (src->len != need)
        return count_mismatch(c, o, field, src->len, need);
    if (!poprt__mul_size((size_t)numel, esz, &o->nbytes))
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': shape %s is too large", o->name,
                          dims_str(c, &o->type));
    void *d = numel ? poprt__arena_alloc(c->out, o->nbytes) : empty_data(c);
    if (!d)
        return oom(c);
    o->data = d;
    switch (dt) {
    case POPRT_DTYPE_FLOAT:
    case POPRT_DTYPE_COMPLEX64:
        if (need)
            memcpy(d, src->v, (size_t)need * 4);
        return POPRT_OK;
    case POPRT_DTYPE_DOUBLE:
    case POPRT_DTYPE_COMPLEX128:
    case POPRT_DTYPE_INT64:
    case POPRT_DTYPE_UINT64:
        if (need)
            memcpy(d, src->v, (size_t)need * 8);
        return POPRT_OK;
    case POPRT_DTYPE_UINT32:
        for (uint64_t i = 0; i < numel; i++)
            ((uint32_t *)d)[i] = (uint32_t)U64S(*src)[i];
        return POPRT_OK;
    case POPRT_DTYPE_STRING:
        for (uint64_t i = 0; i < numel; i++) {
            const char *str = out_str(c, SPANS(*src)[i]);
            if (!str)
                return oom(c);
            ((const char **)d)[i] = str;
        }
        return POPRT_OK;
    default:
        break;
    }
    if (bits) {
        uint8_t *packed = poprt__arena_alloc(&c->tmp, (size_t)need + 1);
        if (!packed)
            return oom(c);
        for (uint64_t i = 0; i < need; i++)
            packed[i] = (uint8_t)U64S(*src)[i];
        unpack_bits(d, packed, o->numel, bits, is_signed_packed(dt));
        return POPRT_OK;
    }
    for (uint64_t i = 0; i < numel; i++) {
        uint64_t v = U64S(*src)[i];
        switch (esz) {
        case 1:
            ((uint8_t *)d)[i] = dt == POPRT_DTYPE_BOOL ? (uint8_t)(v != 0) : (uint8_t)v;
            break;
        case 2:
            ((uint16_t *)d)[i] = (uint16_t)v;
            break;
        default:
            ((uint32_t *)d)[i] = (uint32_t)v;
            break;
        }
    }
    return POPRT_OK;
}

/* Element type number check shared by tensors and types. */
static poprt_status check_elem(int32_t dt, const char *what, const char *name)
{
    if (!poprt__dtype_valid(dt))
        return poprt__err(POPRT_STATUS_UNSUPPORTED, "%s '%s': unknown data type %d", what, name, (int)dt);
    return POPRT_OK;
}

/* Shape from int64 dims: rejects negative dims and element counts that
 * overflow. */
static poprt_status set_shape(lctx *c, tensor_out *o, const uint64_t *dims, size_t rank, const char *what)
{
    o->type.kind = POPRT__KIND_TENSOR;
    o->type.rank = (int)rank;
    if (rank > (size_t)INT_MAX / 2)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "%s '%s': rank %zu is too large", what, o->name, rank);
    o->type.dims = poprt__arena_array(c->out, rank ? rank : 1, sizeof(poprt__dim));
    if (!o->type.dims)
        return oom(c);
    int64_t numel = 1;
    for (size_t i = 0; i < rank; i++) {
        int64_t v = (int64_t)dims[i];
        if (v < 0)
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "%s '%s': negative dimension %lld at axis %zu", what,
                              o->name, (long long)v, i);
        o->type.dims[i].value = v;
        if (!poprt__mul_i64(numel, v, &numel))
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "%s '%s': the element count of its shape overflows",
                              what, o->name);
    }
    size_t esz = poprt__dtype_size(o->type.elem), nbytes;
    if ((uint64_t)numel > SIZE_MAX || !poprt__mul_size((size_t)numel, esz ? esz : 1, &nbytes))
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "%s '%s': shape is too large", what, o->name);
    o->numel = numel;
    return POPRT_OK;
}

static poprt_status tensor_from_proto(lctx *c, span sp, tensor_out *o)
{
    memset(o, 0, sizeof *o);
    onnx_TensorProto msg;
    memset(&msg, 0, sizeof msg);
    tensor_lists L;
    memset(&L, 0, sizeof L);
    ON(msg.dims, cb_varint, L.dims);
    ON(msg.segment, cb_span, L.segment);
    ON(msg.float_data, cb_fixed32, L.f32);
    ON(msg.int32_data, cb_varint, L.i32);
    ON(msg.string_data, cb_span, L.strs);
    ON(msg.int64_data, cb_varint, L.i64);
    ON(msg.name, cb_span, L.name);
    ON(msg.raw_data, cb_span, L.raw);
    ON(msg.double_data, cb_fixed64, L.f64);
    ON(msg.uint64_data, cb_varint, L.u64);
    ON(msg.doc_string, cb_span, L.doc);
    ON(msg.external_data, cb_span, L.ext);
    poprt_status st = decode(c, sp, onnx_TensorProto_fields, &msg, "TensorProto", NULL);
    if (st)
        return st;
    o->name = str_of(c, &L.name);
    o->doc = L.doc.len ? str_of(c, &L.doc) : NULL;
    if (c->oom)
        return oom(c);
    int32_t dt = msg.data_type;
    if (dt == 0)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s' has no data type", o->name);
    if ((st = check_elem(dt, "tensor", o->name)))
        return st;
    o->type.elem = dt;
    if ((st = set_shape(c, o, L.dims.v, L.dims.len, "tensor")))
        return st;
    if (L.segment.len)
        return poprt__err(POPRT_STATUS_UNSUPPORTED, "tensor '%s': segmented tensors are not supported", o->name);
    if (msg.data_location == 1) {
        span ext;
        if (!c->m)
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "tensor '%s': external data is not allowed here", o->name);
        if ((st = external_span(c, o->name, &L.ext, &ext)))
            return st;
        return from_raw(c, o, ext);
    }
    span raw;
    if (last(&L.raw, &raw))
        return from_raw(c, o, raw);
    return from_typed(c, o, &L);
}

/* SparseTensorProto -> dense tensor (zeros, "" for strings). */
static poprt_status sparse_from_proto(lctx *c, span sp, tensor_out *o)
{
    onnx_SparseTensorProto msg;
    memset(&msg, 0, sizeof msg);
    list values = {0}, indices = {0}, dims = {0};
    ON(msg.values, cb_span, values);
    ON(msg.indices, cb_span, indices);
    ON(msg.dims, cb_varint, dims);
    poprt_status st = decode(c, sp, onnx_SparseTensorProto_fields, &msg, "SparseTensorProto", NULL);
    if (st)
        return st;
    span vs, is;
    if (!last(&values, &vs) || !last(&indices, &is))
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "sparse tensor without values or indices");
    tensor_out v, ix;
    if ((st = tensor_from_proto(c, vs, &v)) || (st = tensor_from_proto(c, is, &ix)))
        return st;
    memset(o, 0, sizeof *o);
    o->name = v.name;
    o->doc = v.doc;
    o->type.elem = v.type.elem;
    if ((st = set_shape(c, o, dims.v, dims.len, "sparse tensor")))
        return st;
    int64_t nnz = v.numel;
    if (v.type.rank != 1)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "sparse tensor '%s': values must be 1-D", o->name);
    int r = o->type.rank;
    int ir = ix.type.rank;
    if (!poprt__dtype_is_int(ix.type.elem) || ix.type.elem == POPRT_DTYPE_INT4 ||
        !((ir == 1 && ix.numel == nnz) || (ir == 2 && ix.type.dims[0].value == nnz && ix.type.dims[1].value == r)))
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "sparse tensor '%s': indices must be [NNZ] or [NNZ, rank] integers", o->name);
    size_t esz = poprt__dtype_size(o->type.elem);
    o->nbytes = (size_t)o->numel * esz;
    uint8_t *d = o->numel ? poprt__arena_alloc(c->out, o->nbytes) : empty_data(c);
    if (!d)
        return oom(c);
    if (o->type.elem == POPRT_DTYPE_STRING)
        for (int64_t i = 0; i < o->numel; i++)
            ((const char **)d)[i] = "";
    for (int64_t k = 0; k < nnz; k++) {
        int64_t lin = 0;
        if (ir == 1) {
            lin = poprt__load_i64(ix.data, ix.type.elem, k);
            if (lin < 0 || lin >= o->numel)
                return poprt__err(POPRT_STATUS_INVALID_MODEL, "sparse tensor '%s': index %lld out of range", o->name,
                                  (long long)lin);
        } else {
            for (int j = 0; j < r; j++) {
                int64_t x = poprt__load_i64(ix.data, ix.type.elem, k * r + j);
                if (x < 0 || x >= o->type.dims[j].value)
                    return poprt__err(POPRT_STATUS_INVALID_MODEL, "sparse tensor '%s': index %lld out of range",
                                      o->name, (long long)x);
                lin = lin * o->type.dims[j].value + x;
            }
        }
        memcpy(d + (size_t)lin * esz, (const uint8_t *)v.data + (size_t)k * esz, esz);
    }
    o->data = d;
    return POPRT_OK;
}

/* ---- types ------------------------------------------------------------------ */

static poprt_status type_from_proto(lctx *c, span sp, poprt__type *t, const char *vname);

static poprt_status shape_from_proto(lctx *c, span sp, poprt__type *t, const char *vname)
{
    onnx_TensorShapeProto msg;
    memset(&msg, 0, sizeof msg);
    list dim = {0};
    ON(msg.dim, cb_span, dim);
    poprt_status st = decode(c, sp, onnx_TensorShapeProto_fields, &msg, "shape of", vname);
    if (st)
        return st;
    t->rank = (int)dim.len;
    t->dims = poprt__arena_array(c->out, dim.len ? dim.len : 1, sizeof(poprt__dim));
    if (!t->dims)
        return oom(c);
    for (size_t i = 0; i < dim.len; i++) {
        onnx_TensorShapeProto_Dimension d;
        memset(&d, 0, sizeof d);
        list param = {0};
        ON(d.dim_param, cb_span, param);
        if ((st = decode(c, SPANS(dim)[i], onnx_TensorShapeProto_Dimension_fields, &d, "shape of", vname)))
            return st;
        if (d.has_dim_value && d.dim_value < 0)
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "value '%s': negative dimension %lld at axis %zu", vname,
                              (long long)d.dim_value, i);
        t->dims[i].value = d.has_dim_value ? d.dim_value : -1;
        if (!d.has_dim_value && param.len) {
            t->dims[i].param = str_of(c, &param);
            if (!t->dims[i].param)
                return oom(c);
        }
    }
    return POPRT_OK;
}

static poprt_status inner_type(lctx *c, const list *l, poprt__type *t, const char *vname)
{
    t->inner = poprt__arena_alloc(c->out, sizeof *t->inner);
    if (!t->inner)
        return oom(c);
    t->inner->rank = -1;
    span sp;
    return last(l, &sp) ? type_from_proto(c, sp, t->inner, vname) : POPRT_OK;
}

static poprt_status type_from_proto(lctx *c, span sp, poprt__type *t, const char *vname)
{
    if (c->depth >= MAX_DEPTH)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "value '%s': types nest too deeply", vname);
    memset(t, 0, sizeof *t);
    t->rank = -1;
    onnx_TypeProto msg;
    memset(&msg, 0, sizeof msg);
    list tensor = {0}, seq = {0}, map = {0}, sparse = {0}, opt = {0};
    ON(msg.tensor_type, cb_span, tensor);
    ON(msg.sequence_type, cb_span, seq);
    ON(msg.map_type, cb_span, map);
    ON(msg.sparse_tensor_type, cb_span, sparse);
    ON(msg.optional_type, cb_span, opt);
    poprt_status st = decode(c, sp, onnx_TypeProto_fields, &msg, "type of", vname);
    if (st)
        return st;
    c->depth++;
    span s;
    if (last(&tensor, &s) || last(&sparse, &s)) {
        int sparse_kind = !tensor.len;
        /* Tensor and SparseTensor have the same fields and numbers. */
        onnx_TypeProto_Tensor tt;
        memset(&tt, 0, sizeof tt);
        list shape = {0};
        ON(tt.shape, cb_span, shape);
        if (!(st = decode(c, s, onnx_TypeProto_Tensor_fields, &tt, "type of", vname))) {
            t->kind = sparse_kind ? POPRT__KIND_SPARSE : POPRT__KIND_TENSOR;
            t->elem = tt.elem_type;
            if (tt.elem_type)
                st = check_elem(tt.elem_type, "value", vname);
            span ss;
            if (!st && last(&shape, &ss))
                st = shape_from_proto(c, ss, t, vname);
        }
    } else if (last(&seq, &s) || last(&opt, &s)) {
        int is_seq = seq.len != 0;
        onnx_TypeProto_Sequence sq; /* Optional has the same single field */
        memset(&sq, 0, sizeof sq);
        list elem = {0};
        ON(sq.elem_type, cb_span, elem);
        t->kind = is_seq ? POPRT__KIND_SEQUENCE : POPRT__KIND_OPTIONAL;
        if (!(st = decode(c, s, onnx_TypeProto_Sequence_fields, &sq, "type of", vname)))
            st = inner_type(c, &elem, t, vname);
    } else if (last(&map, &s)) {
        onnx_TypeProto_Map mp;
        memset(&mp, 0, sizeof mp);
        list val = {0};
        ON(mp.value_type, cb_span, val);
        t->kind = POPRT__KIND_MAP;
        if (!(st = decode(c, s, onnx_TypeProto_Map_fields, &mp, "type of", vname))) {
            t->elem = mp.key_type;
            st = inner_type(c, &val, t, vname);
        }
    }
    c->depth--;
    return st;
}

typedef struct vinfo {
    const char *name; /* scratch arena */
    const char *doc;
    span type;
    int has_type;
} vinfo;

static poprt_status vinfo_from_proto(lctx *c, span sp, vinfo *vi)
{
    onnx_ValueInfoProto msg;
    memset(&msg, 0, sizeof msg);
    list name = {0}, type = {0}, doc = {0};
    ON(msg.name, cb_span, name);
    ON(msg.type, cb_span, type);
    ON(msg.doc_string, cb_span, doc);
    poprt_status st = decode(c, sp, onnx_ValueInfoProto_fields, &msg, "ValueInfoProto", NULL);
    if (st)
        return st;
    span s = {(const uint8_t *)"", 0};
    last(&name, &s);
    vi->name = tmp_str(c, s);
    vi->doc = doc.len ? str_of(c, &doc) : NULL;
    vi->has_type = last(&type, &vi->type);
    return c->oom ? oom(c) : POPRT_OK;
}

/* ---- graphs, nodes, attributes ----------------------------------------------- */

static poprt_status build_graph(lctx *c, span sp, poprt__graph *g);

static poprt__tensor *const_tensor(lctx *c, const tensor_out *o)
{
    poprt__tensor *t = poprt__arena_alloc(c->out, sizeof *t);
    if (!t) {
        c->oom = 1;
        return NULL;
    }
    t->name = o->name;
    t->doc = o->doc;
    t->type = o->type;
    poprt__tensor_set_data(t, o->data);
    t->nbytes = o->nbytes;
    t->id = -1;
    return t;
}

static poprt__graph *subgraph(lctx *c, span sp, poprt__graph *parent, poprt__node *pn, poprt_status *st)
{
    if (c->lim && c->graph_depth >= c->lim->max_subgraph_depth) {
        *st = poprt__err(POPRT_STATUS_LIMIT_EXCEEDED,
                         "node '%s': its subgraph would be nested %d levels deep (option "
                         "'max_subgraph_depth' is %d)",
                         pn ? pn->name : "", c->graph_depth + 1, c->lim->max_subgraph_depth);
        return NULL;
    }
    poprt__graph *g = poprt__graph_new(c->m, parent, "");
    if (!g) {
        *st = oom(c);
        return NULL;
    }
    g->parent_node = pn;
    c->graph_depth++;
    *st = build_graph(c, sp, g);
    c->graph_depth--;
    return *st ? NULL : g;
}

typedef struct attr_lists {
    list name, s, t, g, floats, ints, strings, tensors, graphs, doc, tp, tps, ref, sparse, sparses;
} attr_lists;

/* AttributeProto -> *a. g: graph of the node (parent of subgraphs); pn: the
 * node, or NULL for function attribute defaults. */
static poprt_status attr_from_proto(lctx *c, span sp, poprt__graph *g, poprt__node *pn, const char *nname,
                                    poprt__attr *a)
{
    onnx_AttributeProto msg;
    memset(&msg, 0, sizeof msg);
    attr_lists L;
    memset(&L, 0, sizeof L);
    ON(msg.name, cb_span, L.name);
    ON(msg.s, cb_span, L.s);
    ON(msg.t, cb_span, L.t);
    ON(msg.g, cb_span, L.g);
    ON(msg.floats, cb_fixed32, L.floats);
    ON(msg.ints, cb_varint, L.ints);
    ON(msg.strings, cb_span, L.strings);
    ON(msg.tensors, cb_span, L.tensors);
    ON(msg.graphs, cb_span, L.graphs);
    ON(msg.doc_string, cb_span, L.doc);
    ON(msg.tp, cb_span, L.tp);
    ON(msg.type_protos, cb_span, L.tps);
    ON(msg.ref_attr_name, cb_span, L.ref);
    ON(msg.sparse_tensor, cb_span, L.sparse);
    ON(msg.sparse_tensors, cb_span, L.sparses);
    poprt_status st = decode(c, sp, onnx_AttributeProto_fields, &msg, "attribute of node", nname);
    if (st)
        return st;
    memset(a, 0, sizeof *a);
    a->name = str_of(c, &L.name);
    a->doc = L.doc.len ? str_of(c, &L.doc) : NULL;
    a->ref_attr_name = L.ref.len ? str_of(c, &L.ref) : NULL;
    if (c->oom)
        return oom(c);
    int type = msg.type;
    if (type == 0 && c->m && c->m->ir_version >= 2)
        return poprt__err(POPRT_STATUS_INVALID_MODEL,
                          "node '%s': attribute '%s' has no type (IR version %lld requires one)",
                          nname, a->name, (long long)c->m->ir_version);
    if (type == 0) { /* IR version 1 files: infer the kind from the field set */
        type = msg.has_f ? 1 : msg.has_i ? 2 : L.s.len ? 3 : L.t.len ? 4 : L.g.len ? 5 : L.floats.len ? 6
             : L.ints.len ? 7 : L.strings.len ? 8 : L.tensors.len ? 9 : L.graphs.len ? 10 : L.sparse.len ? 11
             : L.sparses.len ? 12 : L.tp.len ? 13 : L.tps.len ? 14 : 0;
        if (!type)
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "node '%s': attribute '%s' has no type and no value",
                              nname, a->name);
    }
    if (type < 1 || type > 14)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "node '%s': attribute '%s' has unknown type %d", nname,
                          a->name, type);
    a->type = (poprt__attr_type)type;
    a->f = msg.f;
    a->i = msg.i;
    span s;
    tensor_out o;
    size_t n = 0;
    switch (a->type) {
    case POPRT__ATTR_STRING:
        if (last(&L.s, &s)) {
            a->s = out_bytes(c, s);
            a->s_len = s.n;
        } else {
            a->s = "";
        }
        break;
    case POPRT__ATTR_TENSOR:
    case POPRT__ATTR_SPARSE_TENSOR:
        if (!last(a->type == POPRT__ATTR_TENSOR ? &L.t : &L.sparse, &s))
            break;
        st = a->type == POPRT__ATTR_TENSOR ? tensor_from_proto(c, s, &o) : sparse_from_proto(c, s, &o);
        if (!st)
            a->t = const_tensor(c, &o);
        break;
    case POPRT__ATTR_GRAPH:
        if (last(&L.g, &s) && c->m)
            a->g = subgraph(c, s, g, pn, &st);
        break;
    case POPRT__ATTR_TYPE_PROTO:
        if (last(&L.tp, &s)) {
            a->tp = poprt__arena_alloc(c->out, sizeof *a->tp);
            st = a->tp ? type_from_proto(c, s, a->tp, a->name) : oom(c);
        }
        break;
    case POPRT__ATTR_FLOATS:
        n = L.floats.len;
        a->floats = poprt__arena_array(c->out, n ? n : 1, sizeof(float));
        if (a->floats && n)
            memcpy(a->floats, L.floats.v, n * sizeof(float));
        c->oom |= !a->floats;
        break;
    case POPRT__ATTR_INTS:
        n = L.ints.len;
        a->ints = poprt__arena_array(c->out, n ? n : 1, sizeof(int64_t));
        if (a->ints && n)
            memcpy(a->ints, L.ints.v, n * sizeof(int64_t));
        c->oom |= !a->ints;
        break;
    case POPRT__ATTR_STRINGS:
        n = L.strings.len;
        a->strings = poprt__arena_array(c->out, n ? n : 1, sizeof(char *));
        a->string_lens = poprt__arena_array(c->out, n ? n : 1, sizeof(size_t));
        if (!a->strings || !a->string_lens)
            return oom(c);
        for (size_t k = 0; k < n; k++) {
            a->strings[k] = out_bytes(c, SPANS(L.strings)[k]);
            a->string_lens[k] = SPANS(L.strings)[k].n;
        }
        break;
    case POPRT__ATTR_TENSORS:
    case POPRT__ATTR_SPARSE_TENSORS: {
        list *l = a->type == POPRT__ATTR_TENSORS ? &L.tensors : &L.sparses;
        n = l->len;
        a->tensors = poprt__arena_array(c->out, n ? n : 1, sizeof(poprt__tensor *));
        if (!a->tensors)
            return oom(c);
        for (size_t k = 0; k < n && !st; k++) {
            st = a->type == POPRT__ATTR_TENSORS ? tensor_from_proto(c, SPANS(*l)[k], &o)
                                                : sparse_from_proto(c, SPANS(*l)[k], &o);
            if (!st && !(a->tensors[k] = const_tensor(c, &o)))
                return oom(c);
        }
        break;
    }
    case POPRT__ATTR_GRAPHS:
        n = L.graphs.len;
        a->graphs = poprt__arena_array(c->out, n ? n : 1, sizeof(poprt__graph *));
        if (!a->graphs)
            return oom(c);
        for (size_t k = 0; k < n && !st && c->m; k++)
            a->graphs[k] = subgraph(c, SPANS(L.graphs)[k], g, pn, &st);
        break;
    case POPRT__ATTR_TYPE_PROTOS:
        n = L.tps.len;
        a->tps = poprt__arena_array(c->out, n ? n : 1, sizeof(poprt__type *));
        if (!a->tps)
            return oom(c);
        for (size_t k = 0; k < n && !st; k++) {
            a->tps[k] = poprt__arena_alloc(c->out, sizeof(poprt__type));
            st = a->tps[k] ? type_from_proto(c, SPANS(L.tps)[k], a->tps[k], a->name) : oom(c);
        }
        break;
    default:
        break;
    }
    a->n = (int64_t)n;
    if (st)
        return poprt__err_prefix(st, "node '%s': attribute '%s': ", nname, a->name);
    return c->oom ? oom(c) : POPRT_OK;
}

typedef struct pnode {
    poprt__node *n;
    list inputs, attrs;
} pnode;

static const char *node_name(lctx *c, const char *name, const char *op, size_t idx)
{
    if (*name) {
        if (!poprt__map_get(&c->node_names, name) && poprt__map_put(&c->node_names, name, (void *)name))
            c->oom = 1;
        return name;
    }
    const char *gen = poprt__arena_printf(&c->tmp, "%s_%zu", op, idx);
    for (int k = 1; gen && poprt__map_get(&c->node_names, gen); k++)
        gen = poprt__arena_printf(&c->tmp, "%s_%zu_%d", op, idx, k);
    if (!gen || poprt__map_put(&c->node_names, gen, (void *)gen))
        c->oom = 1;
    return gen;
}

/* Creates the nodes of g: first every node with its outputs (so any order
 * of nodes in the file resolves), then inputs (local names first, then
 * enclosing graphs), then attributes, whose subgraphs see every name of g. */
static poprt_status build_nodes(lctx *c, poprt__graph *g, const list *nodes)
{
    c->n_nodes += (int64_t)nodes->len;
    if (c->lim && c->n_nodes > c->lim->max_nodes)
        return poprt__err(POPRT_STATUS_LIMIT_EXCEEDED,
                          "graph '%s': the model has more than %lld nodes (option 'max_nodes')",
                          g->name, (long long)c->lim->max_nodes);
    pnode *pn = poprt__arena_array(&c->tmp, nodes->len ? nodes->len : 1, sizeof *pn);
    if (!pn)
        return oom(c);
    poprt_status st;
    for (size_t i = 0; i < nodes->len; i++) {
        onnx_NodeProto msg;
        memset(&msg, 0, sizeof msg);
        list outputs = {0}, name = {0}, op = {0}, doc = {0}, domain = {0}, overload = {0}, meta = {0};
        ON(msg.input, cb_span, pn[i].inputs);
        ON(msg.output, cb_span, outputs);
        ON(msg.name, cb_span, name);
        ON(msg.op_type, cb_span, op);
        ON(msg.attribute, cb_span, pn[i].attrs);
        ON(msg.doc_string, cb_span, doc);
        ON(msg.domain, cb_span, domain);
        ON(msg.overload, cb_span, overload);
        ON(msg.metadata_props, cb_span, meta);
        if ((st = decode(c, SPANS(*nodes)[i], onnx_NodeProto_fields, &msg, "NodeProto", NULL)))
            return poprt__err_prefix(st, "graph '%s': node %zu: ", g->name, i);
        const char *op_type = str_of(c, &op);
        const char *nm = str_of(c, &name);
        if (c->oom)
            return oom(c);
        if (!*op_type)
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "graph '%s': node %zu ('%s') has no op_type", g->name, i,
                              nm);
        if (pn[i].inputs.len > INT_MAX / 2 || outputs.len > INT_MAX / 2)
            return poprt__err(POPRT_STATUS_INVALID_MODEL, "node '%s': too many inputs or outputs", nm);
        nm = node_name(c, nm, op_type, i);
        const char *dom = str_of(c, &domain);
        if (!nm || !dom)
            return oom(c);
        poprt__node *n = poprt__graph_add_node(g, op_type, dom, nm, (int)pn[i].inputs.len, (int)outputs.len);
        if (!n)
            return oom(c);
        pn[i].n = n;
        n->overload = str_of(c, &overload);
        n->doc = doc.len ? str_of(c, &doc) : NULL;
        if (meta.len) {
            if ((st = decode_entries(c, &meta, &n->meta_keys, &n->meta_vals)))
                return st;
            n->n_meta = (int)meta.len;
        }
        if (c->oom)
            return oom(c);
        for (size_t k = 0; k < outputs.len; k++) {
            span s = SPANS(outputs)[k];
            if (!s.n)
                continue;
            const char *tn = tmp_str(c, s);
            poprt__tensor *t = tn ? poprt__graph_tensor(g, tn) : NULL;
            if (!t)
                return oom(c);
            if (t->producer || t->is_input || t->is_initializer)
                return poprt__err(POPRT_STATUS_INVALID_MODEL, "node '%s': output '%s' is already defined in graph '%s'",
                                  n->name, tn, g->name);
            n->outputs[k] = t;
            t->producer = n;
            t->producer_slot = (int)k;
        }
    }
    for (size_t i = 0; i < nodes->len; i++) {
        for (size_t k = 0; k < pn[i].inputs.len; k++) {
            span s = SPANS(pn[i].inputs)[k];
            if (!s.n)
                continue;
            const char *tn = tmp_str(c, s);
            if (!tn)
                return oom(c);
            poprt__tensor *t = poprt__graph_find(g, tn);
            if (!t && !(t = poprt__graph_tensor(g, tn))) /* undefined: poprt__model_check reports it */
                return oom(c);
            poprt__node_set_input(pn[i].n, k, t);
        }
    }
    for (size_t i = 0; i < nodes->len; i++) {
        poprt__node *n = pn[i].n;
        for (size_t k = 0; k < pn[i].attrs.len; k++) {
            poprt__attr a;
            if ((st = attr_from_proto(c, SPANS(pn[i].attrs)[k], g, n, n->name, &a)))
                return st;
            if (poprt__node_attr(n, a.name))
                return poprt__err(POPRT_STATUS_INVALID_MODEL,
                                  "node '%s': attribute '%s' is given twice", n->name, a.name);
            poprt__attr *slot = poprt__node_add_attr(n, a.name, a.type);
            if (!slot)
                return oom(c);
            a.name = slot->name;
            *slot = a;
        }
    }
    return POPRT_OK;
}

static poprt_status add_initializer(lctx *c, poprt__graph *g, const tensor_out *o)
{
    if (c->lim && o->nbytes > c->lim->max_tensor_bytes)
        return poprt__err(POPRT_STATUS_LIMIT_EXCEEDED,
                          "graph '%s': initializer '%s' holds %zu bytes (option 'max_tensor_bytes' "
                          "is %llu)",
                          g->name, o->name, o->nbytes,
                          (unsigned long long)c->lim->max_tensor_bytes);
    if (!*o->name)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "graph '%s': initializer without a name", g->name);
    if (poprt__map_get(&g->by_name, o->name))
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "graph '%s': duplicate initializer '%s'", g->name, o->name);
    poprt__tensor *t = poprt__graph_tensor(g, o->name);
    if (!t)
        return oom(c);
    t->type = o->type;
    poprt__tensor_set_data(t, o->data);
    t->nbytes = o->nbytes;
    t->doc = o->doc;
    t->is_initializer = 1;
    return poprt__vec_push(&g->initializers, t) ? oom(c) : POPRT_OK;
}

static poprt_status build_graph(lctx *c, span sp, poprt__graph *g)
{
    if (c->depth >= MAX_DEPTH)
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "graphs nest more than %d levels", MAX_DEPTH);
    onnx_GraphProto msg;
    memset(&msg, 0, sizeof msg);
    list nodes = {0}, name = {0}, inits = {0}, doc = {0}, inputs = {0}, outputs = {0}, vinfos = {0}, sparse = {0};
    ON(msg.node, cb_span, nodes);
    ON(msg.name, cb_span, name);
    ON(msg.initializer, cb_span, inits);
    ON(msg.doc_string, cb_span, doc);
    ON(msg.input, cb_span, inputs);
    ON(msg.output, cb_span, outputs);
    ON(msg.value_info, cb_span, vinfos);
    ON(msg.sparse_initializer, cb_span, sparse);
    poprt_status st = decode(c, sp, onnx_GraphProto_fields, &msg, "GraphProto", NULL);
    if (st)
        return st;
    g->name = str_of(c, &name);
    g->doc = doc.len ? str_of(c, &doc) : NULL;
    if (c->oom)
        return oom(c);
    c->depth++;
    tensor_out o;
    for (size_t i = 0; i < inits.len && !st; i++) {
        c->lazy = 1;
        st = tensor_from_proto(c, SPANS(inits)[i], &o);
        c->lazy = 0;
        if (!st)
            st = add_initializer(c, g, &o);
    }
    for (size_t i = 0; i < sparse.len && !st; i++)
        if (!(st = sparse_from_proto(c, SPANS(sparse)[i], &o)))
            st = add_initializer(c, g, &o);
    vinfo vi;
    for (size_t i = 0; i < inputs.len && !st; i++) {
        if ((st = vinfo_from_proto(c, SPANS(inputs)[i], &vi)))
            break;
        poprt__tensor *t = poprt__graph_tensor(g, vi.name);
        if (!t) {
            st = oom(c);
            break;
        }
        if (t->is_input) {
            st = poprt__err(POPRT_STATUS_INVALID_MODEL, "graph '%s': input '%s' is listed twice", g->name, vi.name);
            break;
        }
        t->is_input = 1;
        if (!t->doc)
            t->doc = vi.doc;
        /* An input that also has an initializer (pre-IR-4 files) keeps the
         * initializer's exact type. */
        if (vi.has_type && !t->is_initializer)
            st = type_from_proto(c, vi.type, &t->type, vi.name);
        if (!st && poprt__vec_push(&g->inputs, t))
            st = oom(c);
    }
    if (!st)
        st = build_nodes(c, g, &nodes);
    for (size_t i = 0; i < outputs.len && !st; i++) {
        if ((st = vinfo_from_proto(c, SPANS(outputs)[i], &vi)))
            break;
        poprt__tensor *t = poprt__graph_find(g, vi.name);
        if (!t && !(t = poprt__graph_tensor(g, vi.name))) {
            st = oom(c);
            break;
        }
        if (t->graph == g)
            t->is_output = 1;
        if (vi.has_type && t->type.kind == POPRT__KIND_UNKNOWN)
            st = type_from_proto(c, vi.type, &t->type, vi.name);
        if (!st && poprt__graph_add_output(g, t))
            st = oom(c);
    }
    for (size_t i = 0; i < vinfos.len && !st; i++) {
        if ((st = vinfo_from_proto(c, SPANS(vinfos)[i], &vi)))
            break;
        poprt__tensor *t = poprt__map_get(&g->by_name, vi.name);
        if (t && vi.has_type && t->type.kind == POPRT__KIND_UNKNOWN)
            st = type_from_proto(c, vi.type, &t->type, vi.name);
    }
    c->depth--;
    return st;
}

/* ---- functions and the model -------------------------------------------------- */

static poprt_status opsets_from(lctx *c, const list *l, int *n_out, poprt__opset **out)
{
    *out = poprt__arena_array(c->out, l->len ? l->len : 1, sizeof **out);
    if (!*out)
        return oom(c);
    for (size_t i = 0; i < l->len; i++) {
        onnx_OperatorSetIdProto msg;
        memset(&msg, 0, sizeof msg);
        list dom = {0};
        ON(msg.domain, cb_span, dom);
        poprt_status st = decode(c, SPANS(*l)[i], onnx_OperatorSetIdProto_fields, &msg, "opset import", NULL);
        if (st)
            return st;
        (*out)[i].domain = str_of(c, &dom);
        (*out)[i].version = msg.version;
    }
    *n_out = (int)l->len;
    return c->oom ? oom(c) : POPRT_OK;
}

static poprt_status function_from_proto(lctx *c, span sp, poprt__function *f)
{
    onnx_FunctionProto msg;
    memset(&msg, 0, sizeof msg);
    list name = {0}, inputs = {0}, outputs = {0}, attrn = {0}, nodes = {0}, doc = {0}, opsets = {0}, domain = {0},
         attrp = {0}, vinfos = {0}, overload = {0};
    ON(msg.name, cb_span, name);
    ON(msg.input, cb_span, inputs);
    ON(msg.output, cb_span, outputs);
    ON(msg.attribute, cb_span, attrn);
    ON(msg.node, cb_span, nodes);
    ON(msg.doc_string, cb_span, doc);
    ON(msg.opset_import, cb_span, opsets);
    ON(msg.domain, cb_span, domain);
    ON(msg.attribute_proto, cb_span, attrp);
    ON(msg.value_info, cb_span, vinfos);
    ON(msg.overload, cb_span, overload);
    poprt_status st = decode(c, sp, onnx_FunctionProto_fields, &msg, "FunctionProto", NULL);
    if (st)
        return st;
    f->name = str_of(c, &name);
    f->domain = str_of(c, &domain);
    f->overload = str_of(c, &overload);
    if (c->oom)
        return oom(c);
    f->body = poprt__graph_new(c->m, NULL, f->name);
    if (!f->body)
        return oom(c);
    poprt__graph *g = f->body;
    g->doc = doc.len ? str_of(c, &doc) : NULL;
    if ((st = opsets_from(c, &opsets, &f->n_opsets, &f->opsets)))
        return st;
    f->attr_names = poprt__arena_array(c->out, attrn.len ? attrn.len : 1, sizeof(char *));
    f->attr_defaults = poprt__arena_array(c->out, attrp.len ? attrp.len : 1, sizeof(poprt__attr));
    if (!f->attr_names || !f->attr_defaults)
        return oom(c);
    for (size_t i = 0; i < attrn.len; i++)
        f->attr_names[i] = out_str(c, SPANS(attrn)[i]);
    f->n_attr_names = (int)attrn.len;
    for (size_t i = 0; i < inputs.len; i++) {
        const char *tn = tmp_str(c, SPANS(inputs)[i]);
        poprt__tensor *t = tn ? poprt__graph_tensor(g, tn) : NULL;
        if (!t || poprt__vec_push(&g->inputs, t))
            return oom(c);
        t->is_input = 1;
    }
    c->depth++;
    st = build_nodes(c, g, &nodes);
    c->depth--;
    if (st)
        return poprt__err_prefix(st, "function '%s': ", f->name);
    for (size_t i = 0; i < outputs.len; i++) {
        const char *tn = tmp_str(c, SPANS(outputs)[i]);
        poprt__tensor *t = tn ? poprt__graph_tensor(g, tn) : NULL;
        if (!t || poprt__graph_add_output(g, t))
            return oom(c);
        t->is_output = 1;
    }
    for (size_t i = 0; i < vinfos.len; i++) {
        vinfo vi;
        if ((st = vinfo_from_proto(c, SPANS(vinfos)[i], &vi)))
            return st;
        poprt__tensor *t = poprt__map_get(&g->by_name, vi.name);
        if (t && vi.has_type && t->type.kind == POPRT__KIND_UNKNOWN &&
            (st = type_from_proto(c, vi.type, &t->type, vi.name)))
            return st;
    }
    for (size_t i = 0; i < attrp.len; i++)
        if ((st = attr_from_proto(c, SPANS(attrp)[i], g, NULL, f->name, &f->attr_defaults[i])))
            return poprt__err_prefix(st, "function '%s': ", f->name);
    f->n_attr_defaults = (int)attrp.len;
    return c->oom ? oom(c) : POPRT_OK;
}

static void ctx_init(lctx *c, poprt__model *m, poprt__arena *out, const char *dir)
{
    memset(c, 0, sizeof *c);
    c->m = m;
    c->out = out;
    c->dir = dir;
    poprt__arena_init(&c->tmp);
}

static void ctx_free(lctx *c)
{
    poprt__map_free(&c->files);
    poprt__map_free(&c->node_names);
    poprt__arena_free(&c->tmp);
}

static poprt_status model_from_proto(lctx *c, span sp)
{
    poprt__model *m = c->m;
    onnx_ModelProto msg;
    memset(&msg, 0, sizeof msg);
    list pname = {0}, pver = {0}, domain = {0}, doc = {0}, graph = {0}, opsets = {0}, meta = {0}, funcs = {0};
    ON(msg.producer_name, cb_span, pname);
    ON(msg.producer_version, cb_span, pver);
    ON(msg.domain, cb_span, domain);
    ON(msg.doc_string, cb_span, doc);
    ON(msg.graph, cb_span, graph);
    ON(msg.opset_import, cb_span, opsets);
    ON(msg.metadata_props, cb_span, meta);
    ON(msg.functions, cb_span, funcs);
    if (!sp.n)
        return poprt__err(POPRT_STATUS_PARSE_ERROR, "empty ModelProto");
    poprt_status st = decode(c, sp, onnx_ModelProto_fields, &msg, "ModelProto", NULL);
    if (st)
        return st;
    m->ir_version = msg.ir_version;
    m->model_version = msg.model_version;
    m->producer_name = str_of(c, &pname);
    m->producer_version = str_of(c, &pver);
    m->domain = str_of(c, &domain);
    m->doc = doc.len ? str_of(c, &doc) : NULL;
    if (c->oom)
        return oom(c);
    if ((st = opsets_from(c, &opsets, &m->n_opsets, &m->opsets)))
        return st;
    if (meta.len) {
        if ((st = decode_entries(c, &meta, &m->meta_keys, &m->meta_vals)))
            return st;
        m->n_meta = (int)meta.len;
    }
    span gs;
    if (!last(&graph, &gs))
        return poprt__err(POPRT_STATUS_INVALID_MODEL, "the model has no graph");
    if ((st = build_graph(c, gs, m->graph)))
        return st;
    m->functions = poprt__arena_array(c->out, funcs.len ? funcs.len : 1, sizeof *m->functions);
    if (!m->functions)
        return oom(c);
    for (size_t i = 0; i < funcs.len; i++)
        if ((st = function_from_proto(c, SPANS(funcs)[i], &m->functions[i])))
            return st;
    m->n_functions = (int)funcs.len;
    return POPRT_OK;
}

static poprt_status load_blob(poprt__blob *blob, const char *path, const char *dir,
                              poprt__blob *wowner, const void *weights, size_t wsize,
                              const poprt__limits *limits, poprt__model **out);

poprt_status poprt__onnx_load_blob(poprt__blob *blob, const char *path, const char *dir,
                                   const poprt__limits *limits, poprt__model **out)
{
    return load_blob(blob, path, dir, NULL, NULL, 0, limits, out);
}

poprt_status poprt__onnx_load_blob_weights(poprt__blob *blob, poprt__blob *weights_owner,
                                           const void *weights, size_t weights_size,
                                           const poprt__limits *limits, poprt__model **out)
{
    if (!weights)
        weights = "";
    return load_blob(blob, NULL, NULL, weights_owner, weights, weights_size, limits, out);
}

static poprt_status load_blob(poprt__blob *blob, const char *path, const char *dir,
                              poprt__blob *wowner, const void *weights, size_t wsize,
                              const poprt__limits *limits, poprt__model **out)
{
    if (!blob || !out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt__onnx_load_blob: NULL argument");
    poprt__model *m;
    poprt_status st = poprt__model_new(&m);
    if (st)
        return st;
    if (limits)
        m->limits = *limits;
    /* The model keeps the mapping alive: tensors may point into it. */
    poprt__blob_ref(blob);
    if (poprt__vec_push(&m->blobs, blob)) {
        poprt__blob_unref(blob);
        poprt__model_free(m);
        return oom(NULL);
    }
    m->path = path ? poprt__arena_strdup(&m->arena, path) : NULL;
    m->dir = dir ? poprt__arena_strdup(&m->arena, dir) : NULL;
    if ((path && !m->path) || (dir && !m->dir)) {
        poprt__model_free(m);
        return oom(NULL);
    }
    if (wowner) {
        poprt__blob_ref(wowner);
        if (poprt__vec_push(&m->blobs, wowner)) {
            poprt__blob_unref(wowner);
            poprt__model_free(m);
            return oom(NULL);
        }
    }
    lctx c;
    ctx_init(&c, m, &m->arena, m->dir);
    c.lim = &m->limits;
    c.weights = weights;
    c.weights_size = wsize;
    span sp = {blob->data ? blob->data : (const void *)"", blob->size};
    c.base = sp.p;
    c.end = sp.p + sp.n;
    st = model_from_proto(&c, sp);
    poprt__blob_seal(c.chunk);
    ctx_free(&c);
    if (st) {
        poprt__model_free(m);
        if (path)
            return poprt__err_prefix(st, "file '%s': ", path);
        return st;
    }
    *out = m;
    return POPRT_OK;
}

poprt_status poprt__onnx_load_file(const char *path, const poprt__limits *limits,
                                   poprt__model **out)
{
    if (!path || !out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt__onnx_load_file: NULL argument");
    poprt__blob *b;
    poprt_status st = poprt__blob_map_file(path, &b);
    if (st)
        return st;
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash)
        dir = poprt__strdup(".");
    else if (slash == path)
        dir = poprt__strdup("/");
    else if ((dir = poprt__malloc((size_t)(slash - path) + 1))) {
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash - path] = 0;
    }
    if (!dir) {
        poprt__blob_unref(b);
        return oom(NULL);
    }
    st = poprt__onnx_load_blob(b, path, dir, limits, out);
    poprt__free(dir);
    poprt__blob_unref(b);
    return st;
}

/* ---- test data ----------------------------------------------------------------- */

static void to_public(const tensor_out *o, poprt__onnx_tensor *t)
{
    t->name = o->name;
    t->type = o->type;
    t->data = o->data;
    t->nbytes = o->nbytes;
}

poprt_status poprt__onnx_decode_tensor(const void *buf, size_t size, poprt__arena *arena, poprt__onnx_tensor *out)
{
    if ((!buf && size) || !arena || !out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt__onnx_decode_tensor: NULL argument");
    lctx c;
    ctx_init(&c, NULL, arena, NULL);
    tensor_out o;
    span sp = {buf ? buf : (const void *)"", size};
    c.base = sp.p;
    c.end = sp.p + sp.n;
    poprt_status st = tensor_from_proto(&c, sp, &o);
    ctx_free(&c);
    if (!st)
        to_public(&o, out);
    return st;
}

static poprt__kind kind_of_elem(int32_t e)
{
    switch (e) {
    case 1: return POPRT__KIND_TENSOR;
    case 2: return POPRT__KIND_SPARSE;
    case 3: return POPRT__KIND_SEQUENCE;
    case 4: return POPRT__KIND_MAP;
    case 5: return POPRT__KIND_OPTIONAL;
    default: return POPRT__KIND_UNKNOWN;
    }
}

static poprt_status value_from_proto(lctx *c, span sp, poprt__kind kind, poprt__onnx_value *v);

static poprt_status value_elems(lctx *c, poprt__onnx_value *v, const list *l, poprt__kind kind)
{
    size_t base = v->n;
    for (size_t i = 0; i < l->len; i++) {
        poprt_status st = value_from_proto(c, SPANS(*l)[i], kind, &v->elems[base + i]);
        if (st)
            return st;
    }
    v->n += l->len;
    return POPRT_OK;
}

/* A MapProto: its keys as a 1-D tensor of the key type (integers in that
 * type's width) and its values, a sequence of as many tensors, as elems. */
static poprt_status map_from_proto(lctx *c, span sp, poprt__onnx_value *v)
{
    onnx_MapProto msg;
    memset(&msg, 0, sizeof msg);
    list name = {0}, keys = {0}, skeys = {0}, vals = {0};
    ON(msg.name, cb_span, name);
    ON(msg.keys, cb_varint, keys);
    ON(msg.string_keys, cb_span, skeys);
    ON(msg.values, cb_span, vals);
    poprt_status st = decode(c, sp, onnx_MapProto_fields, &msg, "MapProto", NULL);
    if (st)
        return st;
    v->name = str_of(c, &name);
    if (!v->name)
        return oom(c);
    const int32_t kt = msg.key_type;
    if (kt != POPRT_DTYPE_STRING && !poprt__dtype_is_int(kt))
        return poprt__err(POPRT_STATUS_PARSE_ERROR,
                          "map '%s': key_type %d (keys are strings or integers)", v->name, (int)kt);
    const int str = kt == POPRT_DTYPE_STRING;
    if (str ? keys.len != 0 : skeys.len != 0)
        return poprt__err(POPRT_STATUS_PARSE_ERROR, "map '%s': %s keys with key_type %s", v->name,
                          str ? "integer" : "string", poprt__dtype_name((poprt_dtype)kt));
    const size_t n = str ? skeys.len : keys.len;
    void *data = poprt__arena_array(c->out, n ? n : 1, poprt__dtype_size((poprt_dtype)kt));
    if (!data)
        return oom(c);
    for (size_t i = 0; i < n; i++) {
        if (str) {
            const char *k = out_str(c, SPANS(skeys)[i]);
            if (!k)
                return c->nul ? poprt__err(POPRT_STATUS_PARSE_ERROR,
                                           "map '%s': key %zu holds a NUL byte", v->name, i)
                              : oom(c);
            ((const char **)data)[i] = k;
        } else
            poprt__store_i64(data, kt, (int64_t)i, (int64_t)U64S(keys)[i]);
    }
    const int64_t dim = (int64_t)n;
    if (poprt__type_set_tensor(c->out, &v->tensor.type, kt, 1, &dim))
        return oom(c);
    v->tensor.name = v->name;
    v->tensor.data = data;
    v->tensor.nbytes = n * poprt__dtype_size((poprt_dtype)kt);
    /* the values: a SequenceProto of n tensors */
    poprt__onnx_value seq;
    memset(&seq, 0, sizeof seq);
    span vs = {(const uint8_t *)"", 0};
    last(&vals, &vs);
    c->depth++;
    st = value_from_proto(c, vs, POPRT__KIND_SEQUENCE, &seq);
    c->depth--;
    if (st)
        return st;
    if (seq.n != n)
        return poprt__err(POPRT_STATUS_PARSE_ERROR, "map '%s' has %zu keys and %zu values",
                          v->name, n, seq.n);
    for (size_t i = 0; i < n; i++)
        if (seq.elems[i].kind != POPRT__KIND_TENSOR)
            return poprt__err(POPRT_STATUS_UNSUPPORTED, "map '%s': value %zu is not a tensor",
                              v->name, i);
    v->n = n;
    v->elems = seq.elems;
    v->elem_kind = POPRT__KIND_TENSOR;
    v->present = 1;
    return POPRT_OK;
}

static poprt_status value_from_proto(lctx *c, span sp, poprt__kind kind, poprt__onnx_value *v)
{
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->name = "";
    if (kind == POPRT__KIND_TENSOR) {
        tensor_out o;
        poprt_status st = tensor_from_proto(c, sp, &o);
        if (!st) {
            to_public(&o, &v->tensor);
            v->name = o.name;
            v->present = 1;
        }
        return st;
    }
    if (c->depth >= MAX_DEPTH)
        return poprt__err(POPRT_STATUS_PARSE_ERROR, "sequences or optionals nest too deeply");
    if (kind == POPRT__KIND_MAP)
        return map_from_proto(c, sp, v);
    /* SequenceProto and OptionalProto share field numbers; optional has the
     * singular forms. */
    list name = {0}, tens = {0}, sparse = {0}, seqs = {0}, opts = {0}, maps = {0};
    int32_t elem_type;
    poprt_status st;
    if (kind == POPRT__KIND_SEQUENCE) {
        onnx_SequenceProto msg;
        memset(&msg, 0, sizeof msg);
        ON(msg.name, cb_span, name);
        ON(msg.tensor_values, cb_span, tens);
        ON(msg.sparse_tensor_values, cb_span, sparse);
        ON(msg.sequence_values, cb_span, seqs);
        ON(msg.map_values, cb_span, maps);
        ON(msg.optional_values, cb_span, opts);
        st = decode(c, sp, onnx_SequenceProto_fields, &msg, "SequenceProto", NULL);
        elem_type = msg.elem_type;
    } else {
        onnx_OptionalProto msg;
        memset(&msg, 0, sizeof msg);
        ON(msg.name, cb_span, name);
        ON(msg.tensor_value, cb_span, tens);
        ON(msg.sparse_tensor_value, cb_span, sparse);
        ON(msg.sequence_value, cb_span, seqs);
        ON(msg.map_value, cb_span, maps);
        ON(msg.optional_value, cb_span, opts);
        st = decode(c, sp, onnx_OptionalProto_fields, &msg, "OptionalProto", NULL);
        elem_type = msg.elem_type;
    }
    if (st)
        return st;
    v->name = str_of(c, &name);
    if (!v->name)
        return oom(c);
    v->elem_kind = kind_of_elem(elem_type);
    if (sparse.len || elem_type == 2)
        return poprt__err(POPRT_STATUS_UNSUPPORTED, "'%s': sparse elements are not supported", v->name);
    if (kind == POPRT__KIND_OPTIONAL) {
        /* singular fields: keep only the last occurrence */
        if (tens.len > 1) { SPANS(tens)[0] = SPANS(tens)[tens.len - 1]; tens.len = 1; }
        if (seqs.len > 1) { SPANS(seqs)[0] = SPANS(seqs)[seqs.len - 1]; seqs.len = 1; }
        if (maps.len > 1) { SPANS(maps)[0] = SPANS(maps)[maps.len - 1]; maps.len = 1; }
        if (opts.len > 1) { SPANS(opts)[0] = SPANS(opts)[opts.len - 1]; opts.len = 1; }
    }
    size_t total = tens.len + seqs.len + maps.len + opts.len;
    v->elems = poprt__arena_array(c->out, total ? total : 1, sizeof *v->elems);
    if (!v->elems)
        return oom(c);
    c->depth++;
    if (!(st = value_elems(c, v, &tens, POPRT__KIND_TENSOR)) &&
        !(st = value_elems(c, v, &seqs, POPRT__KIND_SEQUENCE)) &&
        !(st = value_elems(c, v, &maps, POPRT__KIND_MAP)))
        st = value_elems(c, v, &opts, POPRT__KIND_OPTIONAL);
    c->depth--;
    if (st)
        return st;
    if (kind == POPRT__KIND_OPTIONAL) {
        if (v->n > 1)
            return poprt__err(POPRT_STATUS_PARSE_ERROR, "optional '%s' holds more than one value", v->name);
        v->present = v->n == 1;
        if (v->present && v->elem_kind == POPRT__KIND_UNKNOWN)
            v->elem_kind = v->elems[0].kind;
    } else {
        v->present = 1;
        if (v->elem_kind == POPRT__KIND_UNKNOWN && v->n)
            v->elem_kind = v->elems[0].kind;
    }
    return POPRT_OK;
}

static poprt_status decode_value(const void *buf, size_t size, poprt__arena *arena, poprt__kind kind,
                                 poprt__onnx_value *out)
{
    if ((!buf && size) || !arena || !out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt__onnx_decode: NULL argument");
    lctx c;
    ctx_init(&c, NULL, arena, NULL);
    span sp = {buf ? buf : (const void *)"", size};
    c.base = sp.p;
    c.end = sp.p + sp.n;
    poprt__onnx_value v;
    poprt_status st = value_from_proto(&c, sp, kind, &v);
    ctx_free(&c);
    if (!st)
        *out = v;
    return st;
}

poprt_status poprt__onnx_decode_sequence(const void *buf, size_t size, poprt__arena *arena, poprt__onnx_value *out)
{
    return decode_value(buf, size, arena, POPRT__KIND_SEQUENCE, out);
}

poprt_status poprt__onnx_decode_optional(const void *buf, size_t size, poprt__arena *arena, poprt__onnx_value *out)
{
    return decode_value(buf, size, arena, POPRT__KIND_OPTIONAL, out);
}

poprt_status poprt__onnx_decode_map(const void *buf, size_t size, poprt__arena *arena, poprt__onnx_value *out)
{
    return decode_value(buf, size, arena, POPRT__KIND_MAP, out);
}
