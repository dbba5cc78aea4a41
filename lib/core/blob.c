#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"

/* Reads all of fd (size bytes) into 64-byte aligned memory. */
static poprt_status read_all(int fd, const char *path, size_t size, void **out)
{
    unsigned char *p = poprt__aligned_alloc(size);
    if (!p)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "file '%s': out of memory for %zu bytes",
                          path, size);
    size_t got = 0;
    while (got < size) {
        ssize_t r = pread(fd, p + got, size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = r < 0 ? errno : 0;
            poprt__aligned_free(p);
            return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': read failed after %zu of %zu bytes%s%s",
                              path, got, size, e ? ": " : " (the file shrank)", e ? strerror(e) : "");
        }
        got += (size_t)r;
    }
    *out = p;
    return POPRT_OK;
}

poprt_status poprt__blob_map_file(const char *path, poprt__blob **out)
{
    const void *site = POPRT__CALLER; /* of the mapping's fault point */
    /* non-blocking, so that opening a FIFO returns at once (and is refused
     * below) instead of waiting for a writer */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': not a regular file", path);
    }
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX / 2) {
        close(fd);
        return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': too large", path);
    }
    poprt__blob *b = poprt__calloc(1, sizeof *b);
    char *keep = NULL;
    if (!b || (st.st_size >= (off_t)POPRT__MAP_MIN_BYTES && !(keep = poprt__strdup(path)))) {
        poprt__free(b);
        close(fd);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "file '%s': out of memory", path);
    }
    b->refs = 1;
    b->fd = -1;
    b->size = (size_t)st.st_size;
    poprt_status rs = POPRT_OK;
    if (b->size == 0) {
        b->data = NULL;
        b->mapped = 0;
    } else if (b->size < POPRT__MAP_MIN_BYTES) {
        rs = read_all(fd, path, b->size, &b->data);
        b->mapped = 3;
    } else {
        void *p = MAP_FAILED;
        if (poprt__fault(site))
            errno = ENOMEM;
        else
            p = mmap(NULL, b->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            rs = poprt__err(e == ENOMEM ? POPRT_STATUS_OUT_OF_MEMORY : POPRT_STATUS_IO_ERROR,
                            "file '%s': cannot map: %s", path, strerror(e));
            p = NULL;
        }
        b->data = p;
        b->mapped = 1;
        b->fd = fd;
        b->path = keep;
        keep = NULL;
    }
    if (rs) {
        poprt__free(keep);
        poprt__free((char *)b->path);
        poprt__free(b);
        close(fd);
        return rs;
    }
    if (b->fd < 0)
        close(fd);
    *out = b;
    return POPRT_OK;
}

poprt_status poprt__blob_check(const poprt__blob *b)
{
    struct stat st;
    if (!b || b->mapped != 1 || b->fd < 0)
        return POPRT_OK;
    if (fstat(b->fd, &st) != 0)
        return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': %s", b->path, strerror(errno));
    if ((uint64_t)st.st_size < (uint64_t)b->size)
        return poprt__err(POPRT_STATUS_IO_ERROR,
                          "file '%s' was truncated to %lld bytes after it was loaded (%zu bytes are "
                          "in use); load it again",
                          b->path, (long long)st.st_size, b->size);
    return POPRT_OK;
}

poprt__blob *poprt__blob_wrap(void *heap_data, size_t size)
{
    poprt__blob *b = poprt__calloc_at(1, sizeof *b, POPRT__CALLER);
    if (!b)
        return NULL;
    b->refs = 1;
    b->fd = -1;
    b->data = heap_data;
    b->size = size;
    return b;
}

poprt__blob *poprt__blob_borrow(const void *data, size_t size,
                                void (*release)(void *user, const void *data), void *user)
{
    poprt__blob *b = poprt__blob_wrap((void *)data, size);
    if (b) {
        b->mapped = 4;
        b->release = release;
        b->user = user;
    }
    return b;
}

poprt__blob *poprt__blob_wrap_aligned(void *aligned_data, size_t size)
{
    poprt__blob *b = poprt__blob_wrap(aligned_data, size);
    if (b)
        b->mapped = 3;
    return b;
}

poprt__blob *poprt__blob_anon(size_t size)
{
    const void *site = POPRT__CALLER;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (size == 0 || size > SIZE_MAX / 2)
        return NULL;
    size = (size + page - 1) / page * page;
    poprt__blob *b = poprt__calloc_at(1, sizeof *b, site);
    if (!b)
        return NULL;
    void *p = poprt__fault(site) ? MAP_FAILED
                                 : mmap(NULL, size, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        poprt__free(b);
        return NULL;
    }
    b->refs = 1;
    b->fd = -1;
    b->data = p;
    b->size = size;
    b->mapped = 1;
    return b;
}

void poprt__blob_seal(poprt__blob *b)
{
    if (b && b->mapped == 1 && b->fd < 0)
        (void)mprotect(b->data, b->size, PROT_READ);
}

void poprt__blob_drop_pages(const poprt__blob *b, const void *p, size_t n)
{
    if (!b || b->mapped != 1 || b->fd < 0 || !p)
        return;
    const uintptr_t lo = (uintptr_t)b->data, hi = lo + b->size, s = (uintptr_t)p;
    if (s < lo || s >= hi || n > hi - s)
        return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = (s + page - 1) / page * page, e = (s + n) / page * page;
    if (e > a)
        (void)madvise((void *)a, e - a, MADV_DONTNEED);
}

void poprt__blob_ref(poprt__blob *b)
{
    if (b)
        __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
}

void poprt__blob_unref(poprt__blob *b)
{
    if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (b->mapped == 1)
        munmap(b->data, b->size);
    else if (b->mapped == 0)
        poprt__free(b->data);
    else if (b->mapped == 3)
        poprt__aligned_free(b->data);
    else if (b->mapped == 4 && b->release)
        b->release(b->user, b->data);
    if (b->fd >= 0)
        close(b->fd);
    poprt__free((char *)b->path);
    /* mapped == 2: a view into another blob, nothing to release */
    poprt__free(b);
}

/* A temporary file beside path, then rename: readers that mapped the old
 * file keep its bytes (the old inode lives on until they unmap it), and
 * nobody sees a half-written file. */
poprt_status poprt__write_file(const char *path, const void *data, size_t n)
{
    static unsigned long counter;
    size_t len = strlen(path);
    char *tmp = poprt__malloc(len + 48);
    if (!tmp)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "file '%s': out of memory", path);
    snprintf(tmp, len + 48, "%s.tmp-%ld-%lu", path, (long)getpid(),
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    poprt_status st = POPRT_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0666);
    if (fd < 0) {
        st = poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': %s", path, strerror(errno));
        poprt__free(tmp);
        return st;
    }
    const unsigned char *p = data;
    size_t done = 0;
    while (done < n && !st) {
        ssize_t w = write(fd, p + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            st = poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': write failed: %s", path,
                            w < 0 ? strerror(errno) : "no progress");
        else
            done += (size_t)w;
    }
    if (close(fd) != 0 && !st)
        st = poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': write failed: %s", path, strerror(errno));
    if (!st && rename(tmp, path) != 0)
        st = poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': %s", path, strerror(errno));
    if (st)
        unlink(tmp);
    poprt__free(tmp);
    return st;
}
