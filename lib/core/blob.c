#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"

poprt_status poprt__blob_map_file(const char *path, poprt__blob **out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': not a regular file", path);
    }
    poprt__blob *b = poprt__calloc(1, sizeof *b);
    if (!b) {
        close(fd);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "file '%s': out of memory", path);
    }
    b->refs = 1;
    b->size = (size_t)st.st_size;
    if (b->size == 0) {
        b->data = NULL;
        b->mapped = 0;
    } else {
        void *p = mmap(NULL, b->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            int e = errno;
            close(fd);
            poprt__free(b);
            return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': cannot map: %s", path, strerror(e));
        }
        b->data = p;
        b->mapped = 1;
    }
    close(fd);
    *out = b;
    return POPRT_OK;
}

poprt__blob *poprt__blob_wrap(void *heap_data, size_t size)
{
    poprt__blob *b = poprt__calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->refs = 1;
    b->data = heap_data;
    b->size = size;
    return b;
}

poprt__blob *poprt__blob_wrap_aligned(void *aligned_data, size_t size)
{
    poprt__blob *b = poprt__blob_wrap(aligned_data, size);
    if (b)
        b->mapped = 3;
    return b;
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
    /* mapped == 2: a view into another blob, nothing to release */
    poprt__free(b);
}

poprt_status poprt__write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': %s", path, strerror(errno));
    size_t w = n ? fwrite(data, 1, n, f) : 0;
    int closed = fclose(f);
    if (w != n || closed != 0)
        return poprt__err(POPRT_STATUS_IO_ERROR, "file '%s': write failed", path);
    return POPRT_OK;
}
