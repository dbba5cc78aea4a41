#include <string.h>
#include "ir/dtype.h"

typedef struct {
    const char *name;
    size_t size;
    unsigned cls; /* 1 float, 2 signed int, 3 unsigned int, 4 bool, 5 string, 6 complex */
} dtype_row;

static const dtype_row rows[] = {
    [POPRT_DTYPE_UNDEFINED] = {"undefined", 0, 0},
    [POPRT_DTYPE_FLOAT] = {"float", 4, 1},
    [POPRT_DTYPE_UINT8] = {"uint8", 1, 3},
    [POPRT_DTYPE_INT8] = {"int8", 1, 2},
    [POPRT_DTYPE_UINT16] = {"uint16", 2, 3},
    [POPRT_DTYPE_INT16] = {"int16", 2, 2},
    [POPRT_DTYPE_INT32] = {"int32", 4, 2},
    [POPRT_DTYPE_INT64] = {"int64", 8, 2},
    [POPRT_DTYPE_STRING] = {"string", sizeof(char *), 5},
    [POPRT_DTYPE_BOOL] = {"bool", 1, 4},
    [POPRT_DTYPE_FLOAT16] = {"float16", 2, 1},
    [POPRT_DTYPE_DOUBLE] = {"double", 8, 1},
    [POPRT_DTYPE_UINT32] = {"uint32", 4, 3},
    [POPRT_DTYPE_UINT64] = {"uint64", 8, 3},
    [POPRT_DTYPE_COMPLEX64] = {"complex64", 8, 6},
    [POPRT_DTYPE_COMPLEX128] = {"complex128", 16, 6},
    [POPRT_DTYPE_BFLOAT16] = {"bfloat16", 2, 1},
    [POPRT_DTYPE_FLOAT8E4M3FN] = {"float8e4m3fn", 1, 1},
    [POPRT_DTYPE_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", 1, 1},
    [POPRT_DTYPE_FLOAT8E5M2] = {"float8e5m2", 1, 1},
    [POPRT_DTYPE_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", 1, 1},
    [POPRT_DTYPE_UINT4] = {"uint4", 1, 3},
    [POPRT_DTYPE_INT4] = {"int4", 1, 2},
    [POPRT_DTYPE_FLOAT4E2M1] = {"float4e2m1", 1, 1},
    [POPRT_DTYPE_FLOAT8E8M0] = {"float8e8m0", 1, 1},
    [POPRT_DTYPE_UINT2] = {"uint2", 1, 3},
    [POPRT_DTYPE_INT2] = {"int2", 1, 2},
};
#define NROWS ((int32_t)(sizeof rows / sizeof rows[0]))

int poprt__dtype_valid(int32_t dt) { return dt > 0 && dt < NROWS; }

const char *poprt__dtype_name(poprt_dtype dt)
{
    return poprt__dtype_valid(dt) ? rows[dt].name : "undefined";
}

size_t poprt__dtype_size(poprt_dtype dt) { return poprt__dtype_valid(dt) ? rows[dt].size : 0; }

int poprt__dtype_is_float(int32_t dt) { return poprt__dtype_valid(dt) && rows[dt].cls == 1; }

int poprt__dtype_is_float8(int32_t dt)
{
    return dt == POPRT_DTYPE_FLOAT8E4M3FN || dt == POPRT_DTYPE_FLOAT8E4M3FNUZ ||
           dt == POPRT_DTYPE_FLOAT8E5M2 || dt == POPRT_DTYPE_FLOAT8E5M2FNUZ;
}

int poprt__dtype_is_int(int32_t dt)
{
    return poprt__dtype_valid(dt) && (rows[dt].cls == 2 || rows[dt].cls == 3);
}

int poprt__dtype_is_signed(int32_t dt)
{
    return poprt__dtype_valid(dt) && (rows[dt].cls == 1 || rows[dt].cls == 2);
}

int32_t poprt__dtype_from_name(const char *name)
{
    for (int32_t i = 1; i < NROWS; i++)
        if (strcmp(rows[i].name, name) == 0)
            return i;
    return 0;
}
