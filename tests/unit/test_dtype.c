/* Unit tests: dtype scalar conversions (lib/ir/dtype_convert.c) against
 * hand-computed bit patterns: round to nearest even ties, subnormals,
 * saturation, NaN/Inf, -0 for every narrow float format, and the generic
 * load/store with integer wrapping. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/dtype.h"

#define E4M3FN POPRT_DTYPE_FLOAT8E4M3FN
#define E4M3FNUZ POPRT_DTYPE_FLOAT8E4M3FNUZ
#define E5M2 POPRT_DTYPE_FLOAT8E5M2
#define E5M2FNUZ POPRT_DTYPE_FLOAT8E5M2FNUZ

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* ---- float16 ------------------------------------------------------------------ */

START_TEST(test_half_basic)
{
    ck_assert_uint_eq(poprt__float_to_half(1.0f), 0x3C00);
    ck_assert_uint_eq(poprt__float_to_half(-2.0f), 0xC000);
    ck_assert_uint_eq(poprt__float_to_half(0.5f), 0x3800);
    ck_assert_uint_eq(poprt__float_to_half(65504.0f), 0x7BFF);
    ck_assert_uint_eq(poprt__float_to_half(0.0f), 0x0000);
    ck_assert_uint_eq(poprt__float_to_half(-0.0f), 0x8000);
    ck_assert_uint_eq(poprt__float_to_half(INFINITY), 0x7C00);
    ck_assert_uint_eq(poprt__float_to_half(-INFINITY), 0xFC00);
    ck_assert_uint_eq(poprt__float_to_half(NAN) & 0x7E00, 0x7E00);
    ck_assert_float_eq(poprt__half_to_float(0x3C00), 1.0f);
    ck_assert_float_eq(poprt__half_to_float(0x7BFF), 65504.0f);
    ck_assert_float_eq(poprt__half_to_float(0xC000), -2.0f);
    ck_assert_uint_eq(bits_of(poprt__half_to_float(0x8000)), 0x80000000u);
    ck_assert(isinf(poprt__half_to_float(0xFC00)) && poprt__half_to_float(0xFC00) < 0);
    ck_assert(isnan(poprt__half_to_float(0x7E00)));
}
END_TEST

START_TEST(test_half_rounding)
{
    /* 1 + 2^-11 is halfway between 0x3C00 and 0x3C01: even wins */
    ck_assert_uint_eq(poprt__float_to_half(1.0f + 0x1p-11f), 0x3C00);
    /* 1 + 3*2^-11 is halfway between 0x3C01 and 0x3C02 */
    ck_assert_uint_eq(poprt__float_to_half(1.0f + 3 * 0x1p-11f), 0x3C02);
    /* just above the tie rounds up */
    ck_assert_uint_eq(poprt__float_to_half(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
    /* overflow: 65520 is the tie between 65504 and 2^16 -> Inf */
    ck_assert_uint_eq(poprt__float_to_half(65519.0f), 0x7BFF);
    ck_assert_uint_eq(poprt__float_to_half(65520.0f), 0x7C00);
    ck_assert_uint_eq(poprt__float_to_half(1e10f), 0x7C00);
    ck_assert_uint_eq(poprt__float_to_half(-1e10f), 0xFC00);
}
END_TEST

START_TEST(test_half_subnormal)
{
    ck_assert_uint_eq(poprt__float_to_half(0x1p-14f), 0x0400); /* smallest normal */
    ck_assert_uint_eq(poprt__float_to_half(0x1p-24f), 0x0001); /* smallest subnormal */
    ck_assert_uint_eq(poprt__float_to_half(0x1p-25f), 0x0000); /* tie with 0: even */
    ck_assert_uint_eq(poprt__float_to_half(0x1.8p-25f), 0x0001);
    ck_assert_uint_eq(poprt__float_to_half(1.5f * 0x1p-24f), 0x0002); /* tie 1|2 -> 2 */
    ck_assert_uint_eq(poprt__float_to_half(2.5f * 0x1p-24f), 0x0002); /* tie 2|3 -> 2 */
    ck_assert_uint_eq(poprt__float_to_half(-0x1p-24f), 0x8001);
    ck_assert_uint_eq(poprt__float_to_half(1e-10f), 0x0000);
    ck_assert_uint_eq(poprt__float_to_half(-1e-10f), 0x8000);
    /* 0x03FF is the largest subnormal; rounding carries into the exponent */
    ck_assert_uint_eq(poprt__float_to_half(1023.75f * 0x1p-24f), 0x0400);
    ck_assert_float_eq(poprt__half_to_float(0x0001), 0x1p-24f);
    ck_assert_float_eq(poprt__half_to_float(0x03FF), 1023.0f * 0x1p-24f);
    ck_assert_float_eq(poprt__half_to_float(0x8001), -0x1p-24f);
}
END_TEST

START_TEST(test_half_roundtrip_all)
{
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = poprt__half_to_float((uint16_t)h);
        if (isnan(f))
            continue;
        ck_assert_uint_eq(poprt__float_to_half(f), h);
    }
}
END_TEST

/* ---- bfloat16 ----------------------------------------------------------------- */

START_TEST(test_bf16)
{
    ck_assert_uint_eq(poprt__float_to_bf16(1.0f), 0x3F80);
    ck_assert_uint_eq(poprt__float_to_bf16(-1.0f), 0xBF80);
    ck_assert_uint_eq(poprt__float_to_bf16(1.0f + 0x1p-8f), 0x3F80);     /* tie -> even */
    ck_assert_uint_eq(poprt__float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82); /* tie -> even */
    ck_assert_uint_eq(poprt__float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
    ck_assert_uint_eq(poprt__float_to_bf16(INFINITY), 0x7F80);
    ck_assert_uint_eq(poprt__float_to_bf16(-INFINITY), 0xFF80);
    ck_assert_uint_eq(poprt__float_to_bf16(NAN), 0x7FC0);
    ck_assert_uint_eq(poprt__float_to_bf16(3.4028235e38f), 0x7F80); /* rounds to Inf */
    ck_assert_uint_eq(poprt__float_to_bf16(-0.0f), 0x8000);
    ck_assert_float_eq(poprt__bf16_to_float(0x3F80), 1.0f);
    ck_assert_float_eq(poprt__bf16_to_float(0xC040), -3.0f);
    ck_assert(isnan(poprt__bf16_to_float(0x7FC0)));
}
END_TEST

/* ---- float8 ------------------------------------------------------------------- */

START_TEST(test_e4m3fn)
{
    ck_assert_uint_eq(poprt__float_to_f8(1.0f, E4M3FN, 1), 0x38);
    ck_assert_uint_eq(poprt__float_to_f8(-1.0f, E4M3FN, 1), 0xB8);
    ck_assert_uint_eq(poprt__float_to_f8(448.0f, E4M3FN, 1), 0x7E);
    ck_assert_uint_eq(poprt__float_to_f8(464.0f, E4M3FN, 0), 0x7E); /* tie, even is 448 */
    ck_assert_uint_eq(poprt__float_to_f8(480.0f, E4M3FN, 1), 0x7E); /* saturate */
    ck_assert_uint_eq(poprt__float_to_f8(480.0f, E4M3FN, 0), 0x7F); /* overflow: NaN */
    ck_assert_uint_eq(poprt__float_to_f8(1e6f, E4M3FN, 0), 0x7F);
    ck_assert_uint_eq(poprt__float_to_f8(-1e6f, E4M3FN, 1), 0xFE);
    ck_assert_uint_eq(poprt__float_to_f8(INFINITY, E4M3FN, 1), 0x7E);
    ck_assert_uint_eq(poprt__float_to_f8(INFINITY, E4M3FN, 0), 0x7F);
    ck_assert_uint_eq(poprt__float_to_f8(-INFINITY, E4M3FN, 1), 0xFE);
    ck_assert_uint_eq(poprt__float_to_f8(-INFINITY, E4M3FN, 0), 0xFF);
    ck_assert_uint_eq(poprt__float_to_f8(NAN, E4M3FN, 1), 0x7F);
    ck_assert_uint_eq(poprt__float_to_f8(-0.0f, E4M3FN, 1), 0x80);
    ck_assert_uint_eq(poprt__float_to_f8(-1e-7f, E4M3FN, 1), 0x80);
    /* subnormals: step 2^-9 */
    ck_assert_uint_eq(poprt__float_to_f8(0x1p-9f, E4M3FN, 1), 0x01);
    ck_assert_uint_eq(poprt__float_to_f8(0x1p-10f, E4M3FN, 1), 0x00); /* tie with 0 */
    ck_assert_uint_eq(poprt__float_to_f8(0x1.8p-10f, E4M3FN, 1), 0x01);
    ck_assert_uint_eq(poprt__float_to_f8(3 * 0x1p-10f, E4M3FN, 1), 0x02); /* tie 1|2 */
    ck_assert_uint_eq(poprt__float_to_f8(0x1p-6f, E4M3FN, 1), 0x08);     /* min normal */
    /* 1.0625 is the tie between 1.0 (0x38) and 1.125 (0x39) */
    ck_assert_uint_eq(poprt__float_to_f8(1.0625f, E4M3FN, 1), 0x38);
    ck_assert_uint_eq(poprt__float_to_f8(1.1875f, E4M3FN, 1), 0x3A);
    ck_assert_float_eq(poprt__f8_to_float(0x7E, E4M3FN), 448.0f);
    ck_assert_float_eq(poprt__f8_to_float(0x01, E4M3FN), 0x1p-9f);
    ck_assert_float_eq(poprt__f8_to_float(0xB8, E4M3FN), -1.0f);
    ck_assert_uint_eq(bits_of(poprt__f8_to_float(0x80, E4M3FN)), 0x80000000u);
    ck_assert(isnan(poprt__f8_to_float(0x7F, E4M3FN)));
    ck_assert(isnan(poprt__f8_to_float(0xFF, E4M3FN)));
}
END_TEST

START_TEST(test_e4m3fnuz)
{
    ck_assert_uint_eq(poprt__float_to_f8(1.0f, E4M3FNUZ, 1), 0x40);
    ck_assert_uint_eq(poprt__float_to_f8(240.0f, E4M3FNUZ, 1), 0x7F);
    ck_assert_uint_eq(poprt__float_to_f8(1e6f, E4M3FNUZ, 1), 0x7F);
    ck_assert_uint_eq(poprt__float_to_f8(-1e6f, E4M3FNUZ, 1), 0xFF);
    ck_assert_uint_eq(poprt__float_to_f8(1e6f, E4M3FNUZ, 0), 0x80);
    ck_assert_uint_eq(poprt__float_to_f8(INFINITY, E4M3FNUZ, 1), 0x7F);
    ck_assert_uint_eq(poprt__float_to_f8(-INFINITY, E4M3FNUZ, 0), 0x80);
    ck_assert_uint_eq(poprt__float_to_f8(NAN, E4M3FNUZ, 1), 0x80);
    ck_assert_uint_eq(poprt__float_to_f8(-0.0f, E4M3FNUZ, 1), 0x00); /* no -0 */
    ck_assert_uint_eq(poprt__float_to_f8(-1e-7f, E4M3FNUZ, 1), 0x00);
    ck_assert_uint_eq(poprt__float_to_f8(0x1p-10f, E4M3FNUZ, 1), 0x01);
    ck_assert_uint_eq(poprt__float_to_f8(-0x1p-10f, E4M3FNUZ, 1), 0x81);
    ck_assert_float_eq(poprt__f8_to_float(0x7F, E4M3FNUZ), 240.0f);
    ck_assert_float_eq(poprt__f8_to_float(0x01, E4M3FNUZ), 0x1p-10f);
    ck_assert_float_eq(poprt__f8_to_float(0x00, E4M3FNUZ), 0.0f);
    ck_assert(isnan(poprt__f8_to_float(0x80, E4M3FNUZ)));
    ck_assert(!isnan(poprt__f8_to_float(0xFF, E4M3FNUZ)));
}
END_TEST

START_TEST(test_e5m2)
{
    ck_assert_uint_eq(poprt__float_to_f8(1.0f, E5M2, 1), 0x3C);
    ck_assert_uint_eq(poprt__float_to_f8(57344.0f, E5M2, 1), 0x7B);
    /* 61440 is the tie between 57344 (odd mantissa) and 65536: rounds up,
     * which overflows */
    ck_assert_uint_eq(poprt__float_to_f8(61440.0f, E5M2, 1), 0x7B);
    ck_assert_uint_eq(poprt__float_to_f8(61440.0f, E5M2, 0), 0x7C);
    ck_assert_uint_eq(poprt__float_to_f8(61439.0f, E5M2, 0), 0x7B);
    ck_assert_uint_eq(poprt__float_to_f8(INFINITY, E5M2, 1), 0x7B);
    ck_assert_uint_eq(poprt__float_to_f8(INFINITY, E5M2, 0), 0x7C);
    ck_assert_uint_eq(poprt__float_to_f8(-INFINITY, E5M2, 0), 0xFC);
    ck_assert_uint_eq(poprt__float_to_f8(-1e6f, E5M2, 1), 0xFB);
    ck_assert_uint_eq(poprt__float_to_f8(NAN, E5M2, 1), 0x7E);
    ck_assert_uint_eq(poprt__float_to_f8(-0.0f, E5M2, 1), 0x80);
    ck_assert_uint_eq(poprt__float_to_f8(0x1p-16f, E5M2, 1), 0x01);
    ck_assert_uint_eq(poprt__float_to_f8(0x1p-17f, E5M2, 1), 0x00);
    ck_assert_uint_eq(poprt__float_to_f8(1.125f, E5M2, 1), 0x3C); /* tie 1.0|1.25 */
    ck_assert_uint_eq(poprt__float_to_f8(1.375f, E5M2, 1), 0x3E); /* tie 1.25|1.5 */
    ck_assert_float_eq(poprt__f8_to_float(0x7B, E5M2), 57344.0f);
    ck_assert(isinf(poprt__f8_to_float(0x7C, E5M2)));
    ck_assert(poprt__f8_to_float(0xFC, E5M2) < 0);
    ck_assert(isnan(poprt__f8_to_float(0x7D, E5M2)));
    ck_assert_float_eq(poprt__f8_to_float(0x01, E5M2), 0x1p-16f);
}
END_TEST

START_TEST(test_e5m2fnuz)
{
    ck_assert_uint_eq(poprt__float_to_f8(1.0f, E5M2FNUZ, 1), 0x40);
    ck_assert_uint_eq(poprt__float_to_f8(57344.0f, E5M2FNUZ, 1), 0x7F);
    ck_assert_uint_eq(poprt__float_to_f8(1e6f, E5M2FNUZ, 1), 0x7F);
    ck_assert_uint_eq(poprt__float_to_f8(1e6f, E5M2FNUZ, 0), 0x80);
    ck_assert_uint_eq(poprt__float_to_f8(INFINITY, E5M2FNUZ, 0), 0x80);
    ck_assert_uint_eq(poprt__float_to_f8(-INFINITY, E5M2FNUZ, 1), 0xFF);
    ck_assert_uint_eq(poprt__float_to_f8(NAN, E5M2FNUZ, 0), 0x80);
    ck_assert_uint_eq(poprt__float_to_f8(-0.0f, E5M2FNUZ, 1), 0x00);
    ck_assert_uint_eq(poprt__float_to_f8(0x1p-17f, E5M2FNUZ, 1), 0x01);
    ck_assert_float_eq(poprt__f8_to_float(0x7F, E5M2FNUZ), 57344.0f);
    ck_assert_float_eq(poprt__f8_to_float(0x01, E5M2FNUZ), 0x1p-17f);
    ck_assert(isnan(poprt__f8_to_float(0x80, E5M2FNUZ)));
}
END_TEST

START_TEST(test_f8_roundtrip_all)
{
    const int32_t types[4] = {E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ};
    for (int t = 0; t < 4; t++)
        for (int v = 0; v < 256; v++) {
            float f = poprt__f8_to_float((uint8_t)v, types[t]);
            if (isnan(f) || isinf(f))
                continue;
            ck_assert_uint_eq(poprt__float_to_f8(f, types[t], 0), v);
        }
}
END_TEST

/* poprt__float_to_f8 encodes floats without doubles; storing the same value
 * as a double (poprt__store_f64, saturating) takes the double encoder. They
 * agree on every 9973rd float bit pattern (all exponents, both signs, NaNs),
 * and on every float within 64 ulps of each format's code midpoints (the
 * ties). */
START_TEST(test_f8_float_path_matches_double_path)
{
    const int32_t types[4] = {E4M3FN, E4M3FNUZ, E5M2, E5M2FNUZ};
    for (int t = 0; t < 4; t++) {
        for (uint64_t u = 0; u < (1ull << 32); u += 9973) {
            float f;
            uint32_t b = (uint32_t)u;
            memcpy(&f, &b, 4);
            uint8_t d;
            poprt__store_f64(&d, types[t], 0, (double)f);
            ck_assert_msg(poprt__float_to_f8(f, types[t], 1) == d, "type %d, bits %08x: %02x vs %02x",
                          types[t], b, poprt__float_to_f8(f, types[t], 1), d);
        }
        for (int v = 0; v < 255; v++) {
            float lo = poprt__f8_to_float((uint8_t)v, types[t]);
            float hi = poprt__f8_to_float((uint8_t)(v + 1), types[t]);
            if (!isfinite(lo) || !isfinite(hi))
                continue;
            uint32_t mid = bits_of((lo + hi) / 2);
            for (uint32_t k = mid - 64; k != mid + 64; k++) {
                float f;
                memcpy(&f, &k, 4);
                uint8_t d;
                poprt__store_f64(&d, types[t], 0, (double)f);
                ck_assert_msg(poprt__float_to_f8(f, types[t], 1) == d,
                              "type %d, bits %08x: %02x vs %02x", types[t], k,
                              poprt__float_to_f8(f, types[t], 1), d);
            }
        }
    }
}
END_TEST

/* ---- float4 e2m1 and e8m0 ----------------------------------------------------- */

START_TEST(test_f4e2m1)
{
    ck_assert_uint_eq(poprt__float_to_f4e2m1(0.5f), 0x1);
    ck_assert_uint_eq(poprt__float_to_f4e2m1(0.25f), 0x0); /* tie 0|0.5 */
    ck_assert_uint_eq(poprt__float_to_f4e2m1(0.75f), 0x2); /* tie 0.5|1 */
    ck_assert_uint_eq(poprt__float_to_f4e2m1(1.25f), 0x2); /* tie 1|1.5 */
    ck_assert_uint_eq(poprt__float_to_f4e2m1(2.5f), 0x4);  /* tie 2|3 */
    ck_assert_uint_eq(poprt__float_to_f4e2m1(-3.5f), 0xE); /* tie 3|4 */
    ck_assert_uint_eq(poprt__float_to_f4e2m1(5.0f), 0x6);  /* tie 4|6 */
    ck_assert_uint_eq(poprt__float_to_f4e2m1(100.0f), 0x7); /* saturates */
    ck_assert_uint_eq(poprt__float_to_f4e2m1(-INFINITY), 0xF);
    ck_assert_uint_eq(poprt__float_to_f4e2m1(-0.0f), 0x8);
    ck_assert_uint_eq(poprt__float_to_f4e2m1(NAN), 0x8);
    static const float vals[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
    for (int v = 0; v < 16; v++) {
        ck_assert_float_eq(poprt__f4e2m1_to_float((uint8_t)v), vals[v]);
        ck_assert_uint_eq(poprt__float_to_f4e2m1(vals[v]), v);
    }
}
END_TEST

START_TEST(test_e8m0)
{
    ck_assert_uint_eq(poprt__float_to_e8m0(1.0f, 1), 0x7F);
    ck_assert_uint_eq(poprt__float_to_e8m0(2.0f, 1), 0x80);
    ck_assert_uint_eq(poprt__float_to_e8m0(1.1f, 1), 0x80); /* round up */
    ck_assert_uint_eq(poprt__float_to_e8m0(0.124f, 1), 0x7C);
    ck_assert_uint_eq(poprt__float_to_e8m0(0.0f, 1), 0x00);
    ck_assert_uint_eq(poprt__float_to_e8m0(NAN, 1), 0xFF);
    ck_assert_uint_eq(poprt__float_to_e8m0(INFINITY, 1), 0xFE);
    ck_assert_uint_eq(poprt__float_to_e8m0(INFINITY, 0), 0xFF);
    ck_assert_uint_eq(poprt__float_to_e8m0(0x1.8p127f, 1), 0xFE);
    ck_assert_uint_eq(poprt__float_to_e8m0(0x1.8p127f, 0), 0xFF);
    ck_assert_float_eq(poprt__e8m0_to_float(0x7F), 1.0f);
    ck_assert_float_eq(poprt__e8m0_to_float(0x82), 8.0f);
    ck_assert_float_eq(poprt__e8m0_to_float(0x00), 0x1p-127f);
    ck_assert(isnan(poprt__e8m0_to_float(0xFF)));
}
END_TEST

/* ---- generic load / store --------------------------------------------------------- */

START_TEST(test_store_int_wrap)
{
    int8_t i8[6];
    uint8_t u8[6];
    poprt__store_i64(i8, POPRT_DTYPE_INT4, 0, 7);
    poprt__store_i64(i8, POPRT_DTYPE_INT4, 1, 8);
    poprt__store_i64(i8, POPRT_DTYPE_INT4, 2, -9);
    poprt__store_i64(i8, POPRT_DTYPE_INT4, 3, 15);
    poprt__store_i64(i8, POPRT_DTYPE_INT2, 4, 2);
    poprt__store_i64(i8, POPRT_DTYPE_INT2, 5, -3);
    ck_assert_int_eq(i8[0], 7);
    ck_assert_int_eq(i8[1], -8);
    ck_assert_int_eq(i8[2], 7);
    ck_assert_int_eq(i8[3], -1);
    ck_assert_int_eq(i8[4], -2);
    ck_assert_int_eq(i8[5], 1);
    poprt__store_i64(u8, POPRT_DTYPE_UINT4, 0, 16);
    poprt__store_i64(u8, POPRT_DTYPE_UINT4, 1, -1);
    poprt__store_i64(u8, POPRT_DTYPE_UINT2, 2, 5);
    poprt__store_i64(u8, POPRT_DTYPE_UINT8, 3, 300);
    poprt__store_i64(u8, POPRT_DTYPE_BOOL, 4, -7);
    poprt__store_f64(u8, POPRT_DTYPE_BOOL, 5, 0.25);
    ck_assert_uint_eq(u8[0], 0);
    ck_assert_uint_eq(u8[1], 15);
    ck_assert_uint_eq(u8[2], 1);
    ck_assert_uint_eq(u8[3], 44);
    ck_assert_uint_eq(u8[4], 1);
    ck_assert_uint_eq(u8[5], 1);
    ck_assert_int_eq(poprt__load_i64(i8, POPRT_DTYPE_INT4, 1), -8);
    ck_assert_int_eq(poprt__load_i64(u8, POPRT_DTYPE_UINT4, 1), 15);
}
END_TEST

START_TEST(test_store_float_to_int)
{
    int32_t i32[4];
    int8_t i8[2];
    uint64_t u64[1];
    poprt__store_f64(i32, POPRT_DTYPE_INT32, 0, 3.9);
    poprt__store_f64(i32, POPRT_DTYPE_INT32, 1, -3.9);
    poprt__store_f64(i32, POPRT_DTYPE_INT32, 2, -0.5);
    poprt__store_f64(i32, POPRT_DTYPE_INT32, 3, 1e3);
    ck_assert_int_eq(i32[0], 3);
    ck_assert_int_eq(i32[1], -3);
    ck_assert_int_eq(i32[2], 0);
    ck_assert_int_eq(i32[3], 1000);
    poprt__store_f64(i8, POPRT_DTYPE_INT4, 0, -8.7);
    poprt__store_f64(i8, POPRT_DTYPE_INT4, 1, 8.5);
    ck_assert_int_eq(i8[0], -8);
    ck_assert_int_eq(i8[1], -8);
    poprt__store_f64(u64, POPRT_DTYPE_UINT64, 0, 1.5e19);
    ck_assert(u64[0] == 15000000000000000000ull);
    ck_assert(poprt__load_f64(u64, POPRT_DTYPE_UINT64, 0) == 1.5e19);
}
END_TEST

START_TEST(test_store_narrow_floats)
{
    uint16_t h[2];
    uint8_t b[3];
    /* double -> half rounds once: just above the tie goes up, where a detour
     * through float would land exactly on the tie and go to even */
    poprt__store_f64(h, POPRT_DTYPE_FLOAT16, 0, 1.0 + 0x1p-11 + 0x1p-40);
    ck_assert_uint_eq(h[0], 0x3C01);
    poprt__store_f64(h, POPRT_DTYPE_BFLOAT16, 1, -3.0);
    ck_assert_uint_eq(h[1], 0xC040);
    poprt__store_f64(b, E4M3FN, 0, 1e9); /* generic store saturates */
    ck_assert_uint_eq(b[0], 0x7E);
    poprt__store_f64(b, POPRT_DTYPE_FLOAT4E2M1, 1, -1.5);
    ck_assert_uint_eq(b[1], 0xB);
    poprt__store_i64(b, POPRT_DTYPE_FLOAT8E8M0, 2, 4);
    ck_assert_uint_eq(b[2], 0x81);
    ck_assert(poprt__load_f64(h, POPRT_DTYPE_FLOAT16, 0) == 1.0 + 0x1p-10);
    ck_assert(poprt__load_f64(b, POPRT_DTYPE_FLOAT4E2M1, 1) == -1.5);
    ck_assert_int_eq(poprt__load_i64(b, E4M3FN, 0), 448);
}
END_TEST

/* Types without a numeric reading (strings, complex, unknown numbers) read
 * as 0 and take no stores: no conversion recurses between the int64 and
 * double paths (a string operand once overflowed the stack that way). */
START_TEST(test_load_store_non_numeric)
{
    const char *strs[2] = {"1.5", "x"};
    float cplx[4] = {1.f, 2.f, 3.f, 4.f};
    const int32_t types[] = {POPRT_DTYPE_STRING, POPRT_DTYPE_COMPLEX64, POPRT_DTYPE_COMPLEX128,
                             POPRT_DTYPE_UNDEFINED, 99, -3};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const void *src = types[t] == POPRT_DTYPE_STRING ? (const void *)strs : (const void *)cplx;
        ck_assert_int_eq(poprt__load_i64(src, types[t], 1), 0);
        ck_assert(poprt__load_f64(src, types[t], 1) == 0.0);
        unsigned char buf[32];
        memset(buf, 0xA5, sizeof buf);
        poprt__store_i64(buf, types[t], 0, 7);
        poprt__store_f64(buf, types[t], 1, 7.5);
        for (size_t b = 0; b < sizeof buf; b++)
            ck_assert_int_eq(buf[b], 0xA5);
    }
}
END_TEST

int main(void)
{
Suite *s = suite_create("dtype");
    TCase *tc = tcase_create("dtype");
    tcase_add_test(tc, test_half_basic);
    tcase_add_test(tc, test_half_rounding);
    tcase_add_test(tc, test_half_subnormal);
    tcase_add_test(tc, test_half_roundtrip_all);
    tcase_add_test(tc, test_bf16);
    tcase_add_test(tc, test_e4m3fn);
    tcase_add_test(tc, test_e4m3fnuz);
    tcase_add_test(tc, test_e5m2);
    tcase_add_test(tc, test_e5m2fnuz);
    tcase_add_test(tc, test_f8_roundtrip_all);
    tcase_add_test(tc, test_f8_float_path_matches_double_path);
    tcase_add_test(tc, test_f4e2m1);
    tcase_add_test(tc, test_e8m0);
    tcase_add_test(tc, test_store_int_wrap);
    tcase_add_test(tc, test_store_float_to_int);
    tcase_add_test(tc, test_store_narrow_floats);
    tcase_add_test(tc, test_load_store_non_numeric);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
