/* Element access and work chunks shared by the reduce, attention and loss
 * kernels (ref/reduce.c, attention.c, loss.c): inline loads and stores of
 * the common dtypes as double or as ordered int64 keys, and fixed row
 * chunks that do not depend on the thread count. */
#ifndef POPRT_REF_ELEM_H
#define POPRT_REF_ELEM_H
#include "kernels/kernel.h"

static inline double poprt__ref_ld_f64(const void *p, int32_t dt, int64_t i)
{
    switch (dt) {
    case POPRT_DTYPE_FLOAT:
        return ((const float *)p)[i];
    case POPRT_DTYPE_DOUBLE:
        return ((const double *)p)[i];
    case POPRT_DTYPE_FLOAT16:
        return poprt__half_to_float(((const uint16_t *)p)[i]);
    case POPRT_DTYPE_BFLOAT16:
        return poprt__bf16_to_float(((const uint16_t *)p)[i]);
    case POPRT_DTYPE_INT32:
        return ((const int32_t *)p)[i];
    case POPRT_DTYPE_INT64:
        return (double)((const int64_t *)p)[i];
    case POPRT_DTYPE_UINT8:
    case POPRT_DTYPE_BOOL:
        return ((const uint8_t *)p)[i];
    case POPRT_DTYPE_INT8:
        return ((const int8_t *)p)[i];
    default:
        return poprt__load_f64(p, dt, i);
    }
}

static inline void poprt__ref_st_f64(void *p, int32_t dt, int64_t i, double v)
{
    switch (dt) {
    case POPRT_DTYPE_FLOAT:
        ((float *)p)[i] = (float)v;
        break;
    case POPRT_DTYPE_DOUBLE:
        ((double *)p)[i] = v;
        break;
    case POPRT_DTYPE_FLOAT16:
        ((uint16_t *)p)[i] = poprt__float_to_half((float)v);
        break;
    case POPRT_DTYPE_BFLOAT16:
        ((uint16_t *)p)[i] = poprt__float_to_bf16((float)v);
        break;
    default:
        poprt__store_f64(p, dt, i, v);
    }
}

/* Integers as int64 keys that order like the stored values (uint64 is
 * shifted by 2^63 so signed comparison orders it correctly). */
static inline int64_t poprt__ref_ld_key(const void *p, int32_t dt, int64_t i)
{
    switch (dt) {
    case POPRT_DTYPE_INT64:
        return ((const int64_t *)p)[i];
    case POPRT_DTYPE_INT32:
        return ((const int32_t *)p)[i];
    case POPRT_DTYPE_UINT64:
        return (int64_t)(((const uint64_t *)p)[i] ^ 0x8000000000000000ull);
    default:
        return poprt__load_i64(p, dt, i);
    }
}

static inline void poprt__ref_st_key(void *p, int32_t dt, int64_t i, int64_t v)
{
    switch (dt) {
    case POPRT_DTYPE_INT64:
        ((int64_t *)p)[i] = v;
        break;
    case POPRT_DTYPE_INT32:
        ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; /* wraps like ONNX's int32 */
        break;
    case POPRT_DTYPE_UINT64:
        ((uint64_t *)p)[i] = (uint64_t)v ^ 0x8000000000000000ull;
        break;
    default:
        poprt__store_i64(p, dt, i, v);
    }
}

static inline int poprt__ref_is_float_dt(int32_t dt)
{
    return dt == POPRT_DTYPE_FLOAT || dt == POPRT_DTYPE_DOUBLE || dt == POPRT_DTYPE_FLOAT16 ||
           dt == POPRT_DTYPE_BFLOAT16;
}

/* Splits rows [0, rows) into at most max_chunks fixed chunks so each chunk
 * can own a slice of scratch; results do not depend on the thread count. */
typedef struct poprt__ref_chunking {
    int64_t rows, nchunks;
} poprt__ref_chunking;

static inline poprt__ref_chunking poprt__ref_make_chunks(int64_t rows, int64_t max_chunks)
{
    poprt__ref_chunking c = {rows, rows < max_chunks ? rows : max_chunks};
    if (c.nchunks < 1)
        c.nchunks = 1;
    return c;
}

static inline void poprt__ref_chunk_range(const poprt__ref_chunking *c, int64_t i, int64_t *b,
                                          int64_t *e)
{
    *b = c->rows * i / c->nchunks;
    *e = c->rows * (i + 1) / c->nchunks;
}

#endif
