/* Reference kernels of the 'cast' family. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/ref/cast.h"

/* ---- numbers <-> strings ------------------------------------------------------ */

/* numpy's str() of a float: the shortest digits that read back to the same
 * value, positional for 1e-4 <= |v| < 1e16 (with ".0" for integers),
 * scientific otherwise; "nan", "inf", "-inf". */
static void format_float(char *buf, size_t cap, double v, int is_single)
{
    if (isnan(v)) {
        snprintf(buf, cap, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v < 0 ? "-inf" : "inf");
        return;
    }
    if (v == 0) {
        snprintf(buf, cap, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    int maxp = is_single ? 9 : 17, p;
    char tmp[40];
    for (p = 1; p < maxp; p++) {
        snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
        double back = strtod(tmp, NULL);
        if (is_single ? ((float)back == (float)v) : (back == v))
            break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", p - 1, v);
    int exp10 = atoi(strchr(tmp, 'e') + 1);
    double a = fabs(v);
    if (a >= 1e-4 && a < 1e16) {
        int frac = p - 1 - exp10;
        if (frac < 0)
            frac = 0;
        snprintf(buf, cap, "%.*f", frac, v);
        if (!strchr(buf, '.'))
            strncat(buf, ".0", cap - strlen(buf) - 1);
    } else {
        /* mantissa digits as printed, exponent with at least two digits */
        char *e = strchr(tmp, 'e');
        *e = '\0';
        snprintf(buf, cap, "%se%c%02d", tmp, exp10 < 0 ? '-' : '+', abs(exp10));
    }
}

static const char *format_value(char *buf, size_t cap, const void *data, int32_t dt, int64_t i)
{
    if (dt == POPRT_DTYPE_BOOL)
        return ((const uint8_t *)data)[i] ? "True" : "False";
    if (dt == POPRT_DTYPE_UINT64)
        snprintf(buf, cap, "%llu", (unsigned long long)((const uint64_t *)data)[i]);
    else if (poprt__dtype_is_int(dt))
        snprintf(buf, cap, "%lld", (long long)poprt__load_i64(data, dt, i));
    else
        format_float(buf, cap, poprt__load_f64(data, dt, i), dt != POPRT_DTYPE_DOUBLE);
    return buf;
}

/* Integer strings exactly ("123", "-5"); anything else through strtod, which
 * also reads "NaN", "INF", "+INF", "-inf" and scientific notation. 0 when
 * the string is not a number (surrounding spaces allowed). */
static int parse_value(const char *s, void *data, int32_t dt, int64_t i, int saturate,
                       int mode)
{
    if (!s)
        s = "";
    char *end;
    if (poprt__dtype_is_int(dt) || dt == POPRT_DTYPE_BOOL) {
        errno = 0;
        if (dt == POPRT_DTYPE_UINT64 && s[0] != '-') {
            unsigned long long u = strtoull(s, &end, 10);
            if (end != s && *end == '\0' && !errno) {
                ((uint64_t *)data)[i] = u;
                return 1;
            }
        } else {
            long long v = strtoll(s, &end, 10);
            if (end != s && *end == '\0' && !errno) {
                poprt__store_i64(data, dt, i, v);
                return 1;
            }
        }
    }
    double d = strtod(s, &end);
    while (*end == ' ' || *end == '\t' || *end == '\n')
        end++;
    if (end == s || *end)
        return 0;
    if (poprt__dtype_is_float8(dt))
        ((uint8_t *)data)[i] = poprt__float_to_f8((float)d, dt, saturate);
    else if (dt == POPRT_DTYPE_FLOAT8E8M0)
        ((uint8_t *)data)[i] = poprt__float_to_e8m0_mode((float)d, saturate, mode);
    else
        poprt__store_f64(data, dt, i, d);
    return 1;
}

/* int32 to float over [b, e) of a span (a parallel-for body: the cast of
 * an int8 GEMM's accumulators is large and each element independent) */
typedef struct cast_span {
    const void *x;
    void *y;
} cast_span;

static void i32_to_f32(void *ctx, int64_t b, int64_t e)
{
    const cast_span *sp = ctx;
    const int32_t *x = sp->x;
    float *y = sp->y;
    for (int64_t i = b; i < e; i++)
        y[i] = (float)x[i];
}

/* ---- the conversion ----------------------------------------------------------- */

poprt_status poprt__cast_values(poprt__kctx *k, const poprt__tval *x, poprt__tval *y,
                                int saturate, int mode)
{
    int32_t sd = x->dtype, dd = y->dtype;
    int64_t n = x->numel;
    if (n != y->numel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output size differs");
    if (!poprt__dtype_valid(sd) || !poprt__dtype_valid(dd) || sd == POPRT_DTYPE_COMPLEX64 ||
        sd == POPRT_DTYPE_COMPLEX128 || dd == POPRT_DTYPE_COMPLEX64 ||
        dd == POPRT_DTYPE_COMPLEX128)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "cast %s -> %s not supported",
                               poprt__dtype_name((poprt_dtype)sd), poprt__dtype_name((poprt_dtype)dd));
    if (n == 0)
        return POPRT_OK;
    const void *X = x->data;
    void *Y = y->data;

    if (sd == POPRT_DTYPE_STRING || dd == POPRT_DTYPE_STRING) {
        char buf[128];
        for (int64_t i = 0; i < n; i++) {
            if (sd == POPRT_DTYPE_STRING && dd == POPRT_DTYPE_STRING) {
                const char *s = ((const char *const *)X)[i];
                s = s ? s : "";
                char *c = poprt__kctx_strdup(k, s, strlen(s));
                if (!c)
                    return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
                ((char **)Y)[i] = c;
            } else if (sd == POPRT_DTYPE_STRING) {
                const char *v = ((const char *const *)X)[i];
                if (!parse_value(v, Y, dd, i, saturate, mode))
                    return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                           "element %lld \"%.40s\" is not a number",
                                           (long long)i, v ? v : "");
            } else {
                const char *s = format_value(buf, sizeof buf, X, sd, i);
                char *c = poprt__kctx_strdup(k, s, strlen(s));
                if (!c)
                    return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
                ((char **)Y)[i] = c;
            }
        }
        return POPRT_OK;
    }
    if (sd == dd) {
        memcpy(Y, X, (size_t)n * poprt__dtype_size(sd));
        return POPRT_OK;
    }

    /* common pairs without the per-element dispatch */
    if (sd == POPRT_DTYPE_FLOAT && dd == POPRT_DTYPE_FLOAT16) {
        poprt__kctx_vmath(k)->float_to_half(X, Y, n);
        return POPRT_OK;
    }
    if (sd == POPRT_DTYPE_FLOAT16 && dd == POPRT_DTYPE_FLOAT) {
        poprt__kctx_vmath(k)->half_to_float(X, Y, n);
        return POPRT_OK;
    }
    if (sd == POPRT_DTYPE_FLOAT && dd == POPRT_DTYPE_DOUBLE) {
        for (int64_t i = 0; i < n; i++)
            ((double *)Y)[i] = ((const float *)X)[i];
        return POPRT_OK;
    }
    if (sd == POPRT_DTYPE_INT64 && dd == POPRT_DTYPE_FLOAT) {
        for (int64_t i = 0; i < n; i++)
            ((float *)Y)[i] = (float)((const int64_t *)X)[i];
        return POPRT_OK;
    }
    if (sd == POPRT_DTYPE_INT32 && dd == POPRT_DTYPE_FLOAT) { /* MatMulInteger's output */
        const cast_span sp = {X, Y};
        poprt__kctx_parallel_for(k, n, 32768, i32_to_f32, (void *)&sp);
        return POPRT_OK;
    }
    if (sd == POPRT_DTYPE_INT32 && dd == POPRT_DTYPE_INT64) {
        for (int64_t i = 0; i < n; i++)
            ((int64_t *)Y)[i] = ((const int32_t *)X)[i];
        return POPRT_OK;
    }

    int src_float = poprt__dtype_is_float(sd);
    for (int64_t i = 0; i < n; i++) {
        if (poprt__dtype_is_float8(dd) || dd == POPRT_DTYPE_FLOAT8E8M0) {
            double d = sd == POPRT_DTYPE_UINT64 ? (double)((const uint64_t *)X)[i]
                                                : poprt__load_f64(X, sd, i);
            ((uint8_t *)Y)[i] = poprt__dtype_is_float8(dd)
                                    ? poprt__float_to_f8((float)d, dd, saturate)
                                    : poprt__float_to_e8m0_mode((float)d, saturate, mode);
        } else if (src_float) {
            poprt__store_f64(Y, dd, i, poprt__load_f64(X, sd, i));
        } else if (sd == POPRT_DTYPE_UINT64 && poprt__dtype_is_float(dd)) {
            poprt__store_f64(Y, dd, i, (double)((const uint64_t *)X)[i]);
        } else {
            poprt__store_i64(Y, dd, i, poprt__load_i64(X, sd, i));
        }
    }
    return POPRT_OK;
}

static poprt_status cast_to(poprt__kctx *k, int32_t to)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "missing input or output");
    if (y->dtype != to)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL, "output is %s, expected %s",
                               poprt__dtype_name((poprt_dtype)y->dtype),
                               poprt__dtype_name((poprt_dtype)to));
    int sat = (int)poprt__attr_i(k->node, "saturate", 1);
    int mode = poprt__e8m0_round_mode(poprt__attr_s(k->node, "round_mode", "up"));
    if (mode < 0)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "round_mode must be up, down or nearest");
    return poprt__cast_values(k, x, y, sat, mode);
}

poprt_status poprt__ref_cast(poprt__kctx *k)
{
    poprt__tval *y = poprt__kout(k, 0);
    if (!y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "missing output");
    return cast_to(k, y->dtype);
}

poprt_status poprt__ref_castlike(poprt__kctx *k)
{
    const poprt__tval *t = poprt__kin(k, 1);
    if (!t)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "missing target_type");
    return cast_to(k, t->dtype);
}

poprt_status poprt__ref_bitcast(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "missing input or output");
    size_t sx = poprt__dtype_size(x->dtype), sy = poprt__dtype_size(y->dtype);
    if (sx != sy || x->dtype == POPRT_DTYPE_STRING || y->dtype == POPRT_DTYPE_STRING ||
        x->numel != y->numel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT,
                               "cannot bitcast %s to %s", poprt__dtype_name((poprt_dtype)x->dtype),
                               poprt__dtype_name((poprt_dtype)y->dtype));
    int bits = 0; /* sub-byte types keep one element per byte: re-pack the low bits */
    if (x->dtype == POPRT_DTYPE_INT4 || x->dtype == POPRT_DTYPE_UINT4 ||
        x->dtype == POPRT_DTYPE_FLOAT4E2M1)
        bits = 4;
    else if (x->dtype == POPRT_DTYPE_INT2 || x->dtype == POPRT_DTYPE_UINT2)
        bits = 2;
    if (bits && x->numel > 0) {
        const uint8_t *a = x->data;
        uint8_t *o = y->data;
        int sgn = y->dtype == POPRT_DTYPE_INT4 || y->dtype == POPRT_DTYPE_INT2;
        for (int64_t i = 0; i < x->numel; i++) {
            unsigned v = a[i] & ((1u << bits) - 1);
            if (sgn && (v >> (bits - 1)))
                v |= 0xFFu << bits;
            o[i] = (uint8_t)v;
        }
    } else if (x->numel > 0) {
        memcpy(y->data, x->data, (size_t)x->numel * sx);
    }
    return POPRT_OK;
}
