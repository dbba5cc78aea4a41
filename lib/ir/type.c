#include <stdio.h>
#include <string.h>
#include "ir/ir.h"

int64_t poprt__type_numel(const poprt__type *t)
{
    if (t->kind != POPRT__KIND_TENSOR || t->rank < 0)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->dims[i].value < 0 || !poprt__mul_i64(n, t->dims[i].value, &n))
            return -1;
    }
    return n;
}

int poprt__type_is_static(const poprt__type *t) { return poprt__type_numel(t) >= 0; }

poprt_status poprt__type_set_tensor(poprt__arena *a, poprt__type *t, int32_t elem, int rank,
                                    const int64_t *dims)
{
    poprt__dim *d = NULL;
    if (rank > 0 && !(d = poprt__arena_array(a, (size_t)rank, sizeof *d)))
        return POPRT_STATUS_OUT_OF_MEMORY;
    for (int i = 0; i < rank; i++)
        d[i].value = dims ? dims[i] : -1;
    t->kind = POPRT__KIND_TENSOR;
    t->elem = elem;
    t->rank = rank;
    t->inner = NULL;
    t->dims = d;
    return POPRT_OK;
}

poprt_status poprt__type_copy(poprt__arena *a, poprt__type *dst, const poprt__type *src)
{
    *dst = *src;
    dst->dims = NULL;
    dst->inner = NULL;
    if (src->rank > 0 && src->dims) {
        dst->dims = poprt__arena_memdup(a, src->dims, (size_t)src->rank * sizeof *src->dims);
        if (!dst->dims)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory copying a type");
    }
    if (src->inner) {
        dst->inner = poprt__arena_alloc(a, sizeof *dst->inner);
        if (!dst->inner)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory copying a type");
        return poprt__type_copy(a, dst->inner, src->inner);
    }
    return POPRT_OK;
}

static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    POPRT__PRINTF(4, 5);
static void append(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (*len >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0)
        *len += (size_t)n;
}

static void type_str(char *buf, size_t cap, size_t *len, const poprt__type *t)
{
    switch (t->kind) {
    case POPRT__KIND_SEQUENCE:
    case POPRT__KIND_OPTIONAL:
        append(buf, cap, len, t->kind == POPRT__KIND_SEQUENCE ? "seq(" : "optional(");
        if (t->inner)
            type_str(buf, cap, len, t->inner);
        else
            append(buf, cap, len, "?");
        append(buf, cap, len, ")");
        return;
    case POPRT__KIND_TENSOR:
        break;
    default:
        append(buf, cap, len, "?");
        return;
    }
    append(buf, cap, len, "%s", poprt__dtype_name((poprt_dtype)t->elem));
    if (t->rank < 0) {
        append(buf, cap, len, "[?]");
        return;
    }
    append(buf, cap, len, "[");
    for (int i = 0; i < t->rank; i++) {
        if (i)
            append(buf, cap, len, ",");
        if (t->dims[i].value >= 0)
            append(buf, cap, len, "%lld", (long long)t->dims[i].value);
        else
            append(buf, cap, len, "%s", t->dims[i].param ? t->dims[i].param : "?");
    }
    append(buf, cap, len, "]");
}

const char *poprt__type_str(poprt__arena *a, const poprt__type *t)
{
    char buf[512];
    size_t len = 0;
    buf[0] = 0;
    type_str(buf, sizeof buf, &len, t);
    const char *s = poprt__arena_strdup(a, buf);
    return s ? s : "?";
}
