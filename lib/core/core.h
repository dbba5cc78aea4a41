/* Internal core: errors, allocation, arenas, logging, small containers.
 * Every layer of the library includes this. Nothing here is exported. */
#ifndef POPRT_CORE_H
#define POPRT_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include "poprt/poprt.h"

#if defined(__GNUC__)
#define POPRT__PRINTF(a, b) __attribute__((format(printf, a, b)))
#define POPRT__UNUSED __attribute__((unused))
#else
#define POPRT__PRINTF(a, b)
#define POPRT__UNUSED
#endif

/* Functions compiled once per vector width and picked by the loader from the
 * CPU's features (GCC's target_clones: an ifunc resolver). Left out under the
 * sanitizers (their runtimes are not set up when the resolvers run at
 * relocation time: ASan misreports, TSan crashes) and with clang. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define POPRT__CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define POPRT__CLONES
#endif

/* The even lanes of two 16-lane vectors: lo[0], lo[2], ..., hi[14]. ITYPE is
 * the matching 16-lane int vector type (GCC's __builtin_shuffle takes a
 * mask vector, clang's __builtin_shufflevector constant indices). */
#if defined(__clang__)
#define POPRT__EVEN16(lo, hi, ITYPE) \
    __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30)
#else
#define POPRT__EVEN16(lo, hi, ITYPE) \
    __builtin_shuffle(lo, hi, (ITYPE){0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30})
#endif

/* ---- errors -------------------------------------------------------------
 * poprt__err() records the thread-local detail message returned by
 * poprt_last_error() and returns the status, so call sites read
 *     return poprt__err(POPRT_STATUS_INVALID_MODEL, "node '%s': ...", name);
 * poprt__err_prefix() prepends context ("file 'x.onnx': ") to the message
 * already recorded, for callers that add where the error happened. */
poprt_status poprt__err(poprt_status st, const char *fmt, ...) POPRT__PRINTF(2, 3);
poprt_status poprt__err_prefix(poprt_status st, const char *fmt, ...) POPRT__PRINTF(2, 3);
void poprt__err_clear(void);

/* ---- logging (goes to the host's callback only; never to stdout) -------- */
void poprt__log(poprt_log_level level, const char *fmt, ...) POPRT__PRINTF(2, 3);
int poprt__log_enabled(poprt_log_level level);

/* ---- allocation -----------------------------------------------------------
 * The one allocation wrapper. Every call may return NULL; callers check. */
void *poprt__malloc(size_t n);
void *poprt__calloc(size_t count, size_t size);
void *poprt__realloc(void *p, size_t n);
void poprt__free(void *p);
char *poprt__strdup(const char *s);
/* 64-byte aligned allocation, freed with poprt__aligned_free. */
void *poprt__aligned_alloc(size_t n);
void poprt__aligned_free(void *p);

/* Overflow-checked size arithmetic: return 0 on overflow. */
int poprt__mul_size(size_t a, size_t b, size_t *out);
/* acc *= d for a size check over a shape's dims (d >= 0); 0 when it would
 * not fit. A 0 dim leaves acc as it is: a tensor [0, 2^41, 2^41] is empty,
 * but the sizes code computes over its other dims (a spatial size, a row)
 * must still fit. */
int poprt__size_fits(size_t *acc, int64_t d);
int poprt__mul_i64(int64_t a, int64_t b, int64_t *out);
int poprt__add_i64(int64_t a, int64_t b, int64_t *out);

/* ---- arena: bump allocator; everything freed at once --------------------- */
typedef struct poprt__arena_block poprt__arena_block;
typedef struct poprt__arena {
    poprt__arena_block *head;
    size_t total;
} poprt__arena;

void poprt__arena_init(poprt__arena *a);
void poprt__arena_free(poprt__arena *a);
/* Zeroed memory aligned to 16 bytes (64 for requests >= 4 KiB). */
void *poprt__arena_alloc(poprt__arena *a, size_t n);
void *poprt__arena_array(poprt__arena *a, size_t count, size_t size);
char *poprt__arena_strdup(poprt__arena *a, const char *s);
char *poprt__arena_strndup(poprt__arena *a, const char *s, size_t n);
char *poprt__arena_printf(poprt__arena *a, const char *fmt, ...) POPRT__PRINTF(2, 3);
void *poprt__arena_memdup(poprt__arena *a, const void *p, size_t n);

/* ---- growable pointer vector (heap) -------------------------------------- */
typedef struct poprt__vec {
    void **items;
    size_t len, cap;
} poprt__vec;
poprt_status poprt__vec_push(poprt__vec *v, void *item);
void poprt__vec_free(poprt__vec *v);

/* ---- string -> pointer hash map (keys are not copied) --------------------- */
typedef struct poprt__map {
    const char **keys;
    void **vals;
    size_t cap, len;
} poprt__map;
poprt_status poprt__map_put(poprt__map *m, const char *key, void *val);
void *poprt__map_get(const poprt__map *m, const char *key);
void poprt__map_del(poprt__map *m, const char *key);
void poprt__map_free(poprt__map *m);

/* ---- reference-counted byte blob (an mmap'd file or a heap copy) --------- */
typedef struct poprt__blob {
    int refs; /* atomic */
    void *data;
    size_t size;
    int mapped; /* 1: munmap on release, 0: poprt__free, 2: a view (nothing),
                   3: poprt__aligned_free */
} poprt__blob;
poprt_status poprt__blob_map_file(const char *path, poprt__blob **out);
poprt__blob *poprt__blob_wrap(void *heap_data, size_t size); /* takes ownership */
/* As poprt__blob_wrap, for a block from poprt__aligned_alloc. */
poprt__blob *poprt__blob_wrap_aligned(void *aligned_data, size_t size);
void poprt__blob_ref(poprt__blob *b);
void poprt__blob_unref(poprt__blob *b);

/* ---- hashing (checksums, cache keys; not cryptographic) ---------------- */
uint64_t poprt__hash64(const void *data, size_t n, uint64_t seed);
/* A checksum for bulk data (weights in executable files): eight 64-bit
 * lanes, each adding the 32x32->64 bit product of the two halves of a keyed
 * word and the word itself, so it vectorises; several GB/s per core. The
 * value does not depend on the CPU features used to compute it. */
uint64_t poprt__checksum64(const void *data, size_t n, uint64_t seed);

/* ---- files ---------------------------------------------------------------- */
poprt_status poprt__write_file(const char *path, const void *data, size_t n);

#endif
