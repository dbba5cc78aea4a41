/* Internal core: errors, allocation, arenas, logging, small containers.
 * Every layer of the library includes this. Nothing here is exported. */
#ifndef POPRT_CORE_H
#define POPRT_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <pthread.h>
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
/* What the public poprt_status_string / poprt_last_error return (the API
 * layer's functions are these). */
const char *poprt__status_string(poprt_status status);
const char *poprt__last_error(void);

/* ---- logging (goes to the host's callback only; never to stdout) -------- */
void poprt__log(poprt_log_level level, const char *fmt, ...) POPRT__PRINTF(2, 3);
int poprt__log_enabled(poprt_log_level level);
void poprt__log_set_callback(poprt_log_fn fn, void *user, poprt_log_level min_level);
poprt_status poprt__log_level_parse(const char *name, poprt_log_level *level_out);
/* ---- progress (poprt_set_progress_callback; progress.c) ------------------
 * poprt__progress reports one step of a job to the host's callback (nothing
 * when none is set, or while the calling thread is muted: the library's own
 * evaluations mute themselves with poprt__progress_mute(+1) ... (-1)). */
void poprt__progress_set_callback(poprt_progress_fn fn, void *user);
int poprt__progress_enabled(void);
void poprt__progress(const char *phase, const char *item, uint64_t done, uint64_t total);
void poprt__progress_mute(int delta);
/* CLOCK_MONOTONIC in nanoseconds (progress and profiles share the clock). */
uint64_t poprt__now_ns(void);
/* The calling thread's number as the OS knows it (Linux: gettid), cached. */
uint32_t poprt__thread_id(void);
/* "MAJOR.MINOR.PATCH" of this library. */
const char *poprt__version(void);

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
/* pthread_create behind a fault point (EAGAIN when it fails). */
int poprt__thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/* ---- allocation-failure injection (tests) ---------------------------------
 * Every way the library obtains memory, or a resource it can run short of,
 * passes one fault point, poprt__fault(site):
 *  - poprt__malloc / _calloc / _realloc / _strdup / _aligned_alloc;
 *  - every arena request (poprt__arena_alloc and the helpers over it), whether
 *    or not it needs a new block: which request takes the next block depends
 *    on the model's sizes, so each must be ready to fail;
 *  - vec and map growth (their realloc/calloc), blob headers;
 *  - file mappings (poprt__blob_map_file: an injected failure behaves as mmap
 *    failing with ENOMEM);
 *  - thread creation (the session's thread pool: a failure is EAGAIN, lack of
 *    resources, and the session fails with OUT_OF_MEMORY; the checksum
 *    threads of an executable file load: fewer threads, same result).
 * cJSON allocates inside its own shared library; the library calls it as
 * usual, and tests/unit/test_alloc_fail.c wraps its allocating entry points at
 * link time (-Wl,--wrap) so that they pass the same fault point (see there).
 *
 * Outside tests nothing is armed and a fault point costs one relaxed atomic
 * load (allocations are not on the run path: test_noalloc). Armed, the slow
 * path counts fault points, records their sites (the address the wrapper
 * returns to, or one the caller gives) and fails the chosen one:
 *   poprt__alloc_fail_after(n, mode): count from now; n >= 1: the n-th fault
 *     point fails (mode POPRT__FAIL_ONE), or it and every one after it
 *     (POPRT__FAIL_FROM); n == 0: count only, nothing fails;
 *   poprt__alloc_disarm(): back to the one-load fast path;
 *   poprt__alloc_count(), poprt__alloc_failures(&site): fault points passed
 *     and failed since poprt__alloc_fail_after (and the first failed site);
 *   poprt__alloc_live(): heap blocks taken while armed and not yet freed
 *     (frees of blocks from before arming are not subtracted: arm first);
 *   poprt__alloc_sites(&table): the table of distinct sites (its size is
 *     returned; unused slots have site NULL) with their hits and failures
 *     since poprt__alloc_sites_reset(), recorded while
 *     poprt__alloc_sites_record(1) (the default) is in force.
 * Not covered: memory the C library takes for itself (fopen's buffer,
 * realpath, qsort, dlopen); such failures surface as the call's own error
 * (an IO_ERROR naming ENOMEM, for instance).
 * State is process-wide (a mutex guards the slow path): tests only. */
enum { POPRT__FAIL_ONE = 0, POPRT__FAIL_FROM = 1 };
typedef struct poprt__alloc_site {
    const void *site;
    long hits, fails;
} poprt__alloc_site;
extern int poprt__alloc_armed; /* atomic */
int poprt__fault_slow(const void *site);
static inline int poprt__fault(const void *site)
{
    return __atomic_load_n(&poprt__alloc_armed, __ATOMIC_RELAXED) && poprt__fault_slow(site);
}
#define POPRT__CALLER __builtin_return_address(0)
void poprt__alloc_fail_after(long n, int mode);
void poprt__alloc_disarm(void);
long poprt__alloc_count(void);
long poprt__alloc_failures(const void **first_site_out);
long poprt__alloc_live(void);
size_t poprt__alloc_sites(const poprt__alloc_site **sites_out);
void poprt__alloc_sites_reset(void);
void poprt__alloc_sites_record(int on);
/* The heap wrappers with an explicit site (for helpers that allocate on
 * their caller's behalf: the site is then the helper's caller). */
void *poprt__malloc_at(size_t n, const void *site);
void *poprt__calloc_at(size_t count, size_t size, const void *site);
void *poprt__realloc_at(void *p, size_t n, const void *site);
/* For the arena, whose requests pass a fault point each: no second one. */
void *poprt__aligned_alloc_unchecked(size_t n);

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
    poprt__arena_block *spare; /* a block given back by a release, reused first */
    size_t total;
    /* requests that failed, a sticky count (as ferror): code that builds a
     * result through helpers that cannot report (type inference) compares
     * it before and after instead of checking every helper */
    size_t failed;
} poprt__arena;
/* A point to return to: poprt__arena_release frees what was allocated after
 * poprt__arena_mark (the memory is reused, not given back to the system, for
 * one standard block), so scratch that lives for one step of a long loop
 * does not pile up. */
typedef struct poprt__arena_mark {
    poprt__arena_block *head, *next;
    size_t used;
} poprt__arena_mark;

void poprt__arena_init(poprt__arena *a);
void poprt__arena_free(poprt__arena *a);
/* Zeroed memory aligned to 16 bytes (64 for requests >= 4 KiB). */
void *poprt__arena_alloc(poprt__arena *a, size_t n);
poprt__arena_mark poprt__arena_mark_now(const poprt__arena *a);
void poprt__arena_release(poprt__arena *a, poprt__arena_mark m);
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
typedef struct poprt__map_entry poprt__map_entry;
typedef struct poprt__map {
    poprt__map_entry *e; /* open addressing; key, value and hash side by side */
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
    int fd;     /* a mapped file's descriptor, kept to see it truncated; else -1 */
    const char *path; /* a mapped file's path (for messages), else NULL */
    /* mapped == 4: caller's bytes, handed back by release(user, data) */
    void (*release)(void *user, const void *data);
    void *user;
} poprt__blob;
/* A file's bytes: files below POPRT__MAP_MIN_BYTES are read into memory (a
 * copy nothing can pull away), larger ones are mapped read-only and shared
 * with every process that maps them. Only regular files are accepted (a
 * FIFO or a device is refused without blocking). */
#define POPRT__MAP_MIN_BYTES ((size_t)4 << 20)
poprt_status poprt__blob_map_file(const char *path, poprt__blob **out);
/* IO_ERROR when a mapped file is now shorter than its mapping (truncated
 * after it was loaded: reading the mapping would raise SIGBUS); OK for
 * every other blob. */
poprt_status poprt__blob_check(const poprt__blob *b);
poprt__blob *poprt__blob_wrap(void *heap_data, size_t size); /* takes ownership */
/* Borrows a caller's bytes: release(user, data) runs once, when the last
 * reference goes. NULL when out of memory (release not called). */
poprt__blob *poprt__blob_borrow(const void *data, size_t size,
                                void (*release)(void *user, const void *data), void *user);
/* As poprt__blob_wrap, for a block from poprt__aligned_alloc. */
poprt__blob *poprt__blob_wrap_aligned(void *aligned_data, size_t size);
void poprt__blob_ref(poprt__blob *b);
void poprt__blob_unref(poprt__blob *b);
/* Anonymous memory of at least size bytes (whole pages, zero), writable
 * until poprt__blob_seal makes it read-only; its pages cost resident memory
 * only once written, so a blob may be made larger than it will be filled.
 * NULL when out of memory. */
poprt__blob *poprt__blob_anon(size_t size);
void poprt__blob_seal(poprt__blob *b);
/* Lets the kernel drop the resident pages lying wholly inside [p, p + n)
 * when b is a read-only file mapping holding them (they are read from the
 * file again when touched); nothing for any other blob, whose bytes exist
 * nowhere else. For bytes copied elsewhere, or read only at set-up. */
void poprt__blob_drop_pages(const poprt__blob *b, const void *p, size_t n);

/* ---- hashing (checksums, cache keys; not cryptographic) ---------------- */
uint64_t poprt__hash64(const void *data, size_t n, uint64_t seed);
/* A checksum for bulk data (weights in executable files): eight 64-bit
 * lanes, each adding the 32x32->64 bit product of the two halves of a keyed
 * word and the word itself, so it vectorises; several GB/s per core. The
 * value does not depend on the CPU features used to compute it. */
uint64_t poprt__checksum64(const void *data, size_t n, uint64_t seed);

/* ---- growing strings (text.c) ---------------------------------------------
 * A NUL-terminated string on the heap (s, len); oom is sticky (as ferror):
 * after a failed growth nothing more is added. Free s with poprt__free. */
typedef struct poprt__text {
    char *s;
    size_t len, cap;
    int oom;
} poprt__text;
void poprt__text_put(poprt__text *t, const char *s, size_t n);
void poprt__text_printf(poprt__text *t, const char *fmt, ...) POPRT__PRINTF(2, 3);

/* ---- files ---------------------------------------------------------------- */
poprt_status poprt__write_file(const char *path, const void *data, size_t n);

#endif
