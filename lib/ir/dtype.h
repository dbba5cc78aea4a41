/* Element types: sizes, names, classes, and scalar conversions between the
 * storage formats (float16, bfloat16, float8 x4, float4, int4/int2) and
 * float. Conversions follow ONNX's rules: round to nearest even; float8
 * "fn"/"fnuz" types saturate to their max finite value when `saturate` is
 * set and map overflow to NaN (or Inf for e5m2) otherwise. */
#ifndef POPRT_DTYPE_H
#define POPRT_DTYPE_H

#include <stdint.h>
#include <stddef.h>
#include "poprt/poprt.h"

int poprt__dtype_valid(int32_t dt);
int poprt__dtype_is_float(int32_t dt);   /* any floating type incl. float8/float4 */
int poprt__dtype_is_int(int32_t dt);     /* signed or unsigned integer incl. int4/int2 */
int poprt__dtype_is_float8(int32_t dt);  /* the four 8-bit floats with sign (not e8m0) */
int poprt__dtype_is_signed(int32_t dt);  /* signed integers and all floats */
/* Parses ONNX names ("float", "tensor(float)" not accepted) -> dtype, 0 if unknown. */
int32_t poprt__dtype_from_name(const char *name);

/* ---- scalar conversions (lib/ir/dtype_convert.c) ---- */
float poprt__half_to_float(uint16_t h);
uint16_t poprt__float_to_half(float f);
float poprt__bf16_to_float(uint16_t h);
uint16_t poprt__float_to_bf16(float f);
float poprt__f8_to_float(uint8_t v, int32_t dtype);              /* dtype: one of the four float8 */
uint8_t poprt__float_to_f8(float f, int32_t dtype, int saturate);
float poprt__f4e2m1_to_float(uint8_t v);
uint8_t poprt__float_to_f4e2m1(float f);
float poprt__e8m0_to_float(uint8_t v);
uint8_t poprt__float_to_e8m0(float f, int saturate);
/* ONNX round_mode of conversions to float8e8m0. */
enum { POPRT__E8M0_UP = 0, POPRT__E8M0_DOWN = 1, POPRT__E8M0_NEAREST = 2 };
/* Parses "up" / "down" / "nearest"; -1 when unknown. */
int poprt__e8m0_round_mode(const char *s);
/* float -> float8e8m0 with an explicit round mode (the sign is ignored). */
uint8_t poprt__float_to_e8m0_mode(float f, int saturate, int mode);

/* Element i of a buffer of dtype as double / int64 (for generic code paths,
 * not for hot loops). Strings, complex and unknown types read as 0: the
 * schema check keeps them from operands that are read as numbers. */
double poprt__load_f64(const void *data, int32_t dtype, int64_t i);
int64_t poprt__load_i64(const void *data, int32_t dtype, int64_t i);
/* Stores v converted to dtype (with ONNX Cast semantics: floats to ints
 * truncate toward zero, saturating fp8 conversion); strings, complex and
 * unknown types are left unchanged. */
void poprt__store_f64(void *data, int32_t dtype, int64_t i, double v);
void poprt__store_i64(void *data, int32_t dtype, int64_t i, int64_t v);

#endif
