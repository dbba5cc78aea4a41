/* Scalar conversions between float and the narrow storage formats, and the
 * generic element load/store used by rare-dtype code paths.
 *
 * All narrowing conversions go through one bit-level encoder (mini_encode)
 * that rounds to nearest even at the target precision, including its
 * subnormal range; each format then applies its own NaN/Inf/overflow rules
 * (ONNX Cast semantics). */
#include <math.h>
#include <string.h>
#include "ir/dtype.h"

static uint32_t f2u(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float u2f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint64_t d2u(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* Magnitude bits of |x| (finite, non-NaN) in a format with mbits mantissa
 * bits and exponent bias `bias` and unbounded exponent range above: rounded
 * to nearest even. The result can exceed the format's largest finite
 * encoding; callers check for overflow. */
static uint32_t mini_encode(double x, int mbits, int bias)
{
    uint64_t u = d2u(x) & 0x7FFFFFFFFFFFFFFFull;
    int e64 = (int)(u >> 52);
    uint64_t sig = u & 0xFFFFFFFFFFFFFull;
    int E; /* unbiased exponent of sig's leading bit position 52 */
    if (e64 == 0) {
        if (sig == 0)
            return 0;
        E = -1022;
    } else {
        sig |= 1ull << 52;
        E = e64 - 1023;
    }
    int emin = 1 - bias;
    int shift = 52 - mbits;
    if (E < emin)
        shift += emin - E;
    if (shift > 54)
        return 0; /* below half of the smallest subnormal */
    uint64_t q = sig >> shift;
    uint64_t rem = sig & ((1ull << shift) - 1);
    uint64_t half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    if (E < emin)
        return (uint32_t)q; /* subnormal (may carry into the smallest normal) */
    /* q in [2^mbits, 2^(mbits+1)]; a carry moves into the exponent field */
    return (uint32_t)(((uint64_t)(E + bias) << mbits) + (q - (1ull << mbits)));
}

/* Value of magnitude bits (exponent/mantissa fields, no special values). */
static float mini_decode(uint32_t bits, int mbits, int bias)
{
    uint32_t e = bits >> mbits;
    uint32_t m = bits & ((1u << mbits) - 1);
    if (e == 0)
        return ldexpf((float)m, 1 - bias - mbits);
    return ldexpf((float)(m | (1u << mbits)), (int)e - bias - mbits);
}

/* ---- float16 ---------------------------------------------------------------- */

float poprt__half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1F;
    uint32_t m = h & 0x3FF;
    if (e == 0x1F)
        return u2f(sign | 0x7F800000 | (m << 13));
    if (e == 0) {
        if (m == 0)
            return u2f(sign);
        float v = (float)m * (1.0f / 16777216.0f); /* m * 2^-24, exact */
        return sign ? -v : v;
    }
    return u2f(sign | ((e + 112) << 23) | (m << 13));
}

static uint16_t double_to_half(double d)
{
    uint16_t sign = (uint16_t)((d2u(d) >> 48) & 0x8000);
    if (isnan(d))
        return (uint16_t)(sign | 0x7E00);
    if (isinf(d))
        return (uint16_t)(sign | 0x7C00);
    uint32_t b = mini_encode(d, 10, 15);
    if (b >= 0x7C00)
        b = 0x7C00; /* overflow to Inf (IEEE) */
    return (uint16_t)(sign | b);
}

uint16_t poprt__float_to_half(float f)
{
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7FFFFFFF;
    if (a >= 0x7F800000) {
        /* keep the NaN payload's top bits, as numpy does */
        uint32_t pl = (a & 0x7FFFFF) >> 13;
        if (a > 0x7F800000 && pl == 0)
            pl = 1;
        return (uint16_t)(sign | 0x7C00 | pl);
    }
    /* normal half range: bit trick with round to nearest even */
    if (a >= 0x38800000 && a < 0x477FF000) {
        uint32_t r = a - 0x38000000; /* rebias 127 -> 15 in bits 23.. */
        uint32_t q = r >> 13, rem = r & 0x1FFF;
        if (rem > 0x1000 || (rem == 0x1000 && (q & 1)))
            q++;
        return (uint16_t)(sign | q);
    }
    return double_to_half((double)f);
}

/* ---- bfloat16 --------------------------------------------------------------- */

float poprt__bf16_to_float(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t poprt__float_to_bf16(float f)
{
    uint32_t u = f2u(f);
    if ((u & 0x7FFFFFFF) > 0x7F800000)
        return (uint16_t)(((u >> 16) & 0x8000) | 0x7FC0);
    u += 0x7FFF + ((u >> 16) & 1); /* round to nearest even; Inf stays Inf */
    return (uint16_t)(u >> 16);
}

/* ---- float8 ----------------------------------------------------------------- */

typedef struct f8_fmt {
    int mbits, bias;
    uint8_t max;  /* largest finite magnitude encoding */
    int uz;       /* fnuz: no -0, NaN is 0x80 */
    int has_inf;  /* e5m2: Inf is 0x7C */
} f8_fmt;

static const f8_fmt *f8_format(int32_t dtype)
{
    static const f8_fmt e4m3fn = {3, 7, 0x7E, 0, 0};
    static const f8_fmt e4m3fnuz = {3, 8, 0x7F, 1, 0};
    static const f8_fmt e5m2 = {2, 15, 0x7B, 0, 1};
    static const f8_fmt e5m2fnuz = {2, 16, 0x7F, 1, 0};
    switch (dtype) {
    case POPRT_DTYPE_FLOAT8E4M3FNUZ: return &e4m3fnuz;
    case POPRT_DTYPE_FLOAT8E5M2: return &e5m2;
    case POPRT_DTYPE_FLOAT8E5M2FNUZ: return &e5m2fnuz;
    default: return &e4m3fn;
    }
}

float poprt__f8_to_float(uint8_t v, int32_t dtype)
{
    const f8_fmt *t = f8_format(dtype);
    int neg = v & 0x80;
    uint32_t mag = v & 0x7F;
    if (t->uz) {
        if (v == 0x80)
            return -NAN; /* the one NaN; its sign bit is set */
    } else if (t->has_inf) {
        if (mag > 0x7C)
            return neg ? -NAN : NAN;
        if (mag == 0x7C)
            return neg ? -INFINITY : INFINITY;
    } else if (mag == 0x7F) {
        return neg ? -NAN : NAN;
    }
    float r = mini_decode(mag, t->mbits, t->bias);
    return neg ? -r : r;
}

/* Encoding of magnitude bits b (mini_encode's, 0xFFFF for Inf) with sign:
 * the format's overflow rules. */
static uint8_t f8_finish(const f8_fmt *t, uint8_t sign, uint32_t b, int saturate)
{
    if (b > t->max) {
        if (saturate)
            b = t->max;
        else if (t->uz)
            return 0x80;
        else
            b = t->has_inf ? 0x7C : 0x7F;
    }
    if (t->uz && b == 0)
        return 0; /* no negative zero */
    return (uint8_t)(sign | b);
}

static uint8_t f8_nan(const f8_fmt *t, uint8_t sign)
{
    if (t->uz)
        return 0x80;
    return (uint8_t)(sign | (t->has_inf ? 0x7E : 0x7F));
}

static uint8_t double_to_f8(double f, int32_t dtype, int saturate)
{
    const f8_fmt *t = f8_format(dtype);
    uint8_t sign = (d2u(f) >> 63) ? 0x80 : 0;
    if (isnan(f))
        return f8_nan(t, sign);
    return f8_finish(t, sign, isinf(f) ? 0xFFFFu : mini_encode(f, t->mbits, t->bias), saturate);
}

/* mini_encode for a finite float32 magnitude (bits a), without doubles: the
 * same rounding (to nearest even, subnormals included). Quantizing
 * activations to float8 calls this per value, so it is kept cheap. */
static uint32_t mini_encode_f32(uint32_t a, int mbits, int bias)
{
    int emin = 1 - bias;
    if ((int)(a >> 23) - 127 >= emin) {
        /* normal in the target: round the mantissa field; a carry moves
         * into the exponent, as it should */
        int drop = 23 - mbits;
        uint32_t r = (a + ((1u << (drop - 1)) - 1) + ((a >> drop) & 1)) >> drop;
        return r - ((uint32_t)(127 - bias) << mbits);
    }
    /* subnormal: a whole number of the smallest subnormal, 2^(emin - mbits);
     * the scaling is exact, the rounding to nearest even */
    float v = u2f(a) * u2f((uint32_t)(127 + mbits - emin) << 23);
    return (uint32_t)nearbyintf(v);
}

uint8_t poprt__float_to_f8(float f, int32_t dtype, int saturate)
{
    const f8_fmt *t = f8_format(dtype);
    uint32_t u = f2u(f), a = u & 0x7FFFFFFFu;
    uint8_t sign = (u >> 24) & 0x80;
    if (a > 0x7F800000u)
        return f8_nan(t, sign);
    return f8_finish(t, sign, a == 0x7F800000u ? 0xFFFFu : mini_encode_f32(a, t->mbits, t->bias),
                     saturate);
}

/* ---- float4 e2m1 ------------------------------------------------------------ */

float poprt__f4e2m1_to_float(uint8_t v)
{
    static const float mag[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    float r = mag[v & 7];
    return (v & 8) ? -r : r;
}

static uint8_t double_to_f4(double f)
{
    if (isnan(f))
        return 0x8; /* no NaN in e2m1; ONNX's reference yields this code */
    uint8_t sign = (d2u(f) >> 63) ? 0x8 : 0;
    uint32_t b = isinf(f) ? 0xFFu : mini_encode(f, 1, 1);
    if (b > 7)
        b = 7; /* always saturates */
    return (uint8_t)(sign | b);
}

uint8_t poprt__float_to_f4e2m1(float f) { return double_to_f4((double)f); }

/* ---- float8 e8m0 (unsigned power of two, 0xFF NaN) ------------------------- */

float poprt__e8m0_to_float(uint8_t v)
{
    if (v == 0xFF)
        return NAN;
    return ldexpf(1.0f, (int)v - 127);
}

uint8_t poprt__float_to_e8m0(float f, int saturate)
{
    /* Default ONNX round_mode "up": any nonzero mantissa takes the next
     * power of two. The sign is ignored. */
    uint32_t u = f2u(f);
    if (isnan(f))
        return 0xFF;
    if (isinf(f))
        return saturate ? 0xFE : 0xFF;
    uint32_t e = (u >> 23) & 0xFF;
    if (u & 0x7FFFFF)
        e++;
    if (e > 0xFE)
        e = saturate ? 0xFE : 0xFF;
    return (uint8_t)e;
}

int poprt__e8m0_round_mode(const char *s)
{
    if (!s || strcmp(s, "up") == 0)
        return POPRT__E8M0_UP;
    if (strcmp(s, "down") == 0)
        return POPRT__E8M0_DOWN;
    if (strcmp(s, "nearest") == 0)
        return POPRT__E8M0_NEAREST;
    return -1;
}

uint8_t poprt__float_to_e8m0_mode(float f, int saturate, int mode)
{
    if (mode == POPRT__E8M0_UP)
        return poprt__float_to_e8m0(f, saturate);
    if (isnan(f))
        return 0xFF;
    if (isinf(f))
        return saturate ? 0xFE : 0xFF;
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t e = (u >> 23) & 0xFF, m = u & 0x7FFFFF;
    /* nearest: the midpoint between 2^e and 2^(e+1) is 1.5 * 2^e; ties go up */
    if (mode == POPRT__E8M0_NEAREST && m >= 0x400000)
        e++;
    if (e > 0xFE)
        e = saturate ? 0xFE : 0xFF;
    return (uint8_t)e;
}

/* ---- generic load / store ---------------------------------------------------- */

double poprt__load_f64(const void *data, int32_t dtype, int64_t i)
{
    switch (dtype) {
    case POPRT_DTYPE_FLOAT: return ((const float *)data)[i];
    case POPRT_DTYPE_DOUBLE: return ((const double *)data)[i];
    case POPRT_DTYPE_FLOAT16: return poprt__half_to_float(((const uint16_t *)data)[i]);
    case POPRT_DTYPE_BFLOAT16: return poprt__bf16_to_float(((const uint16_t *)data)[i]);
    case POPRT_DTYPE_FLOAT8E4M3FN:
    case POPRT_DTYPE_FLOAT8E4M3FNUZ:
    case POPRT_DTYPE_FLOAT8E5M2:
    case POPRT_DTYPE_FLOAT8E5M2FNUZ:
        return poprt__f8_to_float(((const uint8_t *)data)[i], dtype);
    case POPRT_DTYPE_FLOAT4E2M1: return poprt__f4e2m1_to_float(((const uint8_t *)data)[i]);
    case POPRT_DTYPE_FLOAT8E8M0: return poprt__e8m0_to_float(((const uint8_t *)data)[i]);
    case POPRT_DTYPE_UINT64: return (double)((const uint64_t *)data)[i];
    default:
        /* integers and bool; strings, complex and unknown types have no
         * numeric reading here (callers check the type first) */
        return poprt__dtype_is_int(dtype) || dtype == POPRT_DTYPE_BOOL
                   ? (double)poprt__load_i64(data, dtype, i)
                   : 0.0;
    }
}

int64_t poprt__load_i64(const void *data, int32_t dtype, int64_t i)
{
    switch (dtype) {
    case POPRT_DTYPE_UINT8:
    case POPRT_DTYPE_BOOL:
    case POPRT_DTYPE_UINT4:
    case POPRT_DTYPE_UINT2:
        return ((const uint8_t *)data)[i];
    case POPRT_DTYPE_INT8:
    case POPRT_DTYPE_INT4:
    case POPRT_DTYPE_INT2:
        return ((const int8_t *)data)[i];
    case POPRT_DTYPE_UINT16: return ((const uint16_t *)data)[i];
    case POPRT_DTYPE_INT16: return ((const int16_t *)data)[i];
    case POPRT_DTYPE_INT32: return ((const int32_t *)data)[i];
    case POPRT_DTYPE_UINT32: return ((const uint32_t *)data)[i];
    case POPRT_DTYPE_INT64: return ((const int64_t *)data)[i];
    case POPRT_DTYPE_UINT64: return (int64_t)((const uint64_t *)data)[i];
    default: {
        if (!poprt__dtype_is_float(dtype))
            return 0; /* strings, complex, unknown: see poprt__load_f64 */
        double d = poprt__load_f64(data, dtype, i);
        if (isnan(d))
            return 0;
        if (d >= 9223372036854775807.0)
            return INT64_MAX;
        if (d <= -9223372036854775808.0)
            return INT64_MIN;
        return (int64_t)d;
    }
    }
}

/* Truncates toward zero; NaN gives 0 and out-of-range values clamp to the
 * int64 range (C leaves them undefined). */
static int64_t trunc_i64(double v)
{
    if (isnan(v))
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

void poprt__store_f64(void *data, int32_t dtype, int64_t i, double v)
{
    switch (dtype) {
    case POPRT_DTYPE_FLOAT: ((float *)data)[i] = (float)v; return;
    case POPRT_DTYPE_DOUBLE: ((double *)data)[i] = v; return;
    case POPRT_DTYPE_FLOAT16: ((uint16_t *)data)[i] = double_to_half(v); return;
    case POPRT_DTYPE_BFLOAT16: ((uint16_t *)data)[i] = poprt__float_to_bf16((float)v); return;
    case POPRT_DTYPE_FLOAT8E4M3FN:
    case POPRT_DTYPE_FLOAT8E4M3FNUZ:
    case POPRT_DTYPE_FLOAT8E5M2:
    case POPRT_DTYPE_FLOAT8E5M2FNUZ:
        ((uint8_t *)data)[i] = double_to_f8(v, dtype, 1);
        return;
    case POPRT_DTYPE_FLOAT4E2M1: ((uint8_t *)data)[i] = double_to_f4(v); return;
    case POPRT_DTYPE_FLOAT8E8M0: ((uint8_t *)data)[i] = poprt__float_to_e8m0((float)v, 1); return;
    case POPRT_DTYPE_BOOL: ((uint8_t *)data)[i] = (v != 0.0); return;
    case POPRT_DTYPE_UINT64:
        if (v >= 0.0 && v < 18446744073709551616.0) {
            ((uint64_t *)data)[i] = (uint64_t)v;
            return;
        }
        poprt__store_i64(data, dtype, i, trunc_i64(v));
        return;
    default:
        /* integers; strings, complex and unknown types take no number */
        if (poprt__dtype_is_int(dtype))
            poprt__store_i64(data, dtype, i, trunc_i64(v));
        return;
    }
}

/* Sign-extends the low `bits` bits of v. */
static int8_t sext(int64_t v, int bits)
{
    int64_t m = (int64_t)1 << bits;
    int64_t r = v & (m - 1);
    return (int8_t)(r >= m / 2 ? r - m : r);
}

void poprt__store_i64(void *data, int32_t dtype, int64_t i, int64_t v)
{
    /* Integer targets wrap modulo 2^bits, as ONNX's reference does. */
    switch (dtype) {
    case POPRT_DTYPE_UINT8: ((uint8_t *)data)[i] = (uint8_t)v; return;
    case POPRT_DTYPE_INT8: ((int8_t *)data)[i] = (int8_t)(uint8_t)v; return;
    case POPRT_DTYPE_UINT16: ((uint16_t *)data)[i] = (uint16_t)v; return;
    case POPRT_DTYPE_INT16: ((int16_t *)data)[i] = (int16_t)(uint16_t)v; return;
    case POPRT_DTYPE_INT32: ((int32_t *)data)[i] = (int32_t)(uint32_t)v; return;
    case POPRT_DTYPE_UINT32: ((uint32_t *)data)[i] = (uint32_t)v; return;
    case POPRT_DTYPE_INT64: ((int64_t *)data)[i] = v; return;
    case POPRT_DTYPE_UINT64: ((uint64_t *)data)[i] = (uint64_t)v; return;
    case POPRT_DTYPE_BOOL: ((uint8_t *)data)[i] = (v != 0); return;
    case POPRT_DTYPE_UINT4: ((uint8_t *)data)[i] = (uint8_t)(v & 0xF); return;
    case POPRT_DTYPE_INT4: ((int8_t *)data)[i] = sext(v, 4); return;
    case POPRT_DTYPE_UINT2: ((uint8_t *)data)[i] = (uint8_t)(v & 0x3); return;
    case POPRT_DTYPE_INT2: ((int8_t *)data)[i] = sext(v, 2); return;
    default:
        if (poprt__dtype_is_float(dtype))
            poprt__store_f64(data, dtype, i, (double)v);
        return;
    }
}
