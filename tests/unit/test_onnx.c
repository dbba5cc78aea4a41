/* Unit tests: ONNX I/O (lib/onnx). Protobuf bytes are built here by hand, so
 * the suite does not depend on /work/shared; tests that read shared models
 * skip when they are absent. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "onnx/onnx.h"
#include "ir/dtype.h"

/* ---- a tiny protobuf writer ------------------------------------------------ */

typedef struct pbuf {
    uint8_t *p;
    size_t n, cap;
} pbuf;

static void put(pbuf *b, const void *d, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        ck_assert_ptr_nonnull(b->p);
    }
    if (n)
        memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void varint(pbuf *b, uint64_t v)
{
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v)
            c |= 0x80;
        put(b, &c, 1);
    } while (v);
}

static void tag(pbuf *b, int field, int wt) { varint(b, ((uint64_t)field << 3) | (uint64_t)wt); }
static void f_varint(pbuf *b, int field, int64_t v)
{
    tag(b, field, 0);
    varint(b, (uint64_t)v);
}
static void f_bytes(pbuf *b, int field, const void *d, size_t n)
{
    tag(b, field, 2);
    varint(b, n);
    put(b, d, n);
}
static void f_str(pbuf *b, int field, const char *s) { f_bytes(b, field, s, strlen(s)); }
static void f_msg(pbuf *b, int field, pbuf *sub) /* consumes sub */
{
    f_bytes(b, field, sub->p, sub->n);
    free(sub->p);
    memset(sub, 0, sizeof *sub);
}
static void f_fixed32(pbuf *b, int field, uint32_t v)
{
    tag(b, field, 5);
    put(b, &v, 4);
}
/* packed repeated varints */
static void f_packed(pbuf *b, int field, const int64_t *v, int n)
{
    pbuf t = {0};
    for (int i = 0; i < n; i++)
        varint(&t, (uint64_t)v[i]);
    f_msg(b, field, &t);
}

/* TensorProto header: name, dtype, dims. */
static void tensor_head(pbuf *t, const char *name, int dtype, const int64_t *dims, int rank)
{
    if (name)
        f_str(t, 8, name);
    f_varint(t, 2, dtype);
    for (int i = 0; i < rank; i++)
        f_varint(t, 1, dims[i]); /* unpacked dims: also legal */
}

static poprt__arena A;

static void setup(void) { poprt__arena_init(&A); }
static void teardown(void) { poprt__arena_free(&A); }

static poprt__onnx_tensor decode_ok(pbuf *t)
{
    poprt__onnx_tensor o;
    poprt_status st = poprt__onnx_decode_tensor(t->p, t->n, &A, &o);
    ck_assert_msg(st == POPRT_OK, "decode failed: %s", poprt_last_error());
    return o;
}

static void decode_fails(pbuf *t, poprt_status want, const char *needle)
{
    poprt__onnx_tensor o;
    poprt_status st = poprt__onnx_decode_tensor(t->p, t->n, &A, &o);
    ck_assert_int_eq(st, want);
    if (needle)
        ck_assert_msg(strstr(poprt_last_error(), needle), "message '%s' lacks '%s'", poprt_last_error(), needle);
}

/* ---- tensors: every dtype, typed and raw forms --------------------------------- */

START_TEST(test_float_raw_zero_copy_and_misaligned)
{
    float v[6] = {1, 2, 3, 4, 5, 6};
    int64_t dims[2] = {2, 3};
    pbuf t = {0};
    tensor_head(&t, "w", POPRT_DTYPE_FLOAT, dims, 2);
    f_bytes(&t, 9, v, sizeof v);
    /* place the message so raw data is aligned, then misaligned */
    for (int shift = 0; shift < 4; shift++) {
        uint8_t *buf = aligned_alloc(64, 256);
        size_t raw_off = t.n - sizeof v;
        size_t start = (size_t)((64 - (raw_off % 4)) % 4) + (size_t)shift + 4;
        memcpy(buf + start, t.p, t.n);
        poprt__onnx_tensor o;
        ck_assert_int_eq(poprt__onnx_decode_tensor(buf + start, t.n, &A, &o), POPRT_OK);
        ck_assert_str_eq(o.name, "w");
        ck_assert_int_eq(o.type.rank, 2);
        ck_assert_int_eq(o.type.dims[1].value, 3);
        ck_assert_uint_eq(o.nbytes, sizeof v);
        ck_assert_int_eq(memcmp(o.data, v, sizeof v), 0);
        int inside = (const uint8_t *)o.data >= buf && (const uint8_t *)o.data < buf + 256;
        int aligned = ((uintptr_t)(buf + start + raw_off) % 4) == 0;
        ck_assert_int_eq(inside, aligned); /* zero copy exactly when aligned */
        ck_assert_int_eq((uintptr_t)o.data % 4, 0);
        free(buf);
    }
    free(t.p);
}
END_TEST

START_TEST(test_typed_fields_all_dtypes)
{
    int64_t d3[1] = {3};
    /* float_data */
    {
        pbuf t = {0};
        tensor_head(&t, "f", POPRT_DTYPE_FLOAT, d3, 1);
        float x[3] = {1.5f, -2.f, 3.25f};
        tag(&t, 4, 2);
        varint(&t, 12);
        put(&t, x, 12);
        poprt__onnx_tensor o = decode_ok(&t);
        ck_assert_int_eq(memcmp(o.data, x, 12), 0);
        free(t.p);
    }
    /* float_data, unpacked form, complex64 pairs */
    {
        pbuf t = {0};
        int64_t d1[1] = {1};
        tensor_head(&t, "c", POPRT_DTYPE_COMPLEX64, d1, 1);
        float re = 1.f, im = -1.f;
        uint32_t u;
        memcpy(&u, &re, 4);
        f_fixed32(&t, 4, u);
        memcpy(&u, &im, 4);
        f_fixed32(&t, 4, u);
        poprt__onnx_tensor o = decode_ok(&t);
        ck_assert_uint_eq(o.nbytes, 8);
        ck_assert(((const float *)o.data)[0] == 1.f && ((const float *)o.data)[1] == -1.f);
        free(t.p);
    }
    /* double_data: double and complex128 */
    for (int k = 0; k < 2; k++) {
        pbuf t = {0};
        int dt = k ? POPRT_DTYPE_COMPLEX128 : POPRT_DTYPE_DOUBLE;
        tensor_head(&t, "d", dt, d3, 1);
        double x[6] = {0.5, -1e300, 3, 4, 5, 6};
        size_t n = k ? 6 : 3;
        tag(&t, 10, 2);
        varint(&t, n * 8);
        put(&t, x, n * 8);
        poprt__onnx_tensor o = decode_ok(&t);
        ck_assert_uint_eq(o.nbytes, n * 8);
        ck_assert_int_eq(memcmp(o.data, x, n * 8), 0);
        free(t.p);
    }
    /* int64_data */
    {
        pbuf t = {0};
        tensor_head(&t, "i64", POPRT_DTYPE_INT64, d3, 1);
        int64_t x[3] = {-1, INT64_MAX, INT64_MIN};
        f_packed(&t, 7, x, 3);
        poprt__onnx_tensor o = decode_ok(&t);
        ck_assert_int_eq(memcmp(o.data, x, 24), 0);
        free(t.p);
    }
    /* uint64_data: uint64 and uint32 */
    {
        pbuf t = {0};
        tensor_head(&t, "u64", POPRT_DTYPE_UINT64, d3, 1);
        int64_t x[3] = {0, 1, -1};
        f_packed(&t, 11, x, 3);
        poprt__onnx_tensor o = decode_ok(&t);
        ck_assert(((const uint64_t *)o.data)[2] == UINT64_MAX);
        free(t.p);
        pbuf u = {0};
        tensor_head(&u, "u32", POPRT_DTYPE_UINT32, d3, 1);
        int64_t y[3] = {0, 1, 4294967295LL};
        f_packed(&u, 11, y, 3);
        o = decode_ok(&u);
        ck_assert_uint_eq(o.nbytes, 12);
        ck_assert_uint_eq(((const uint32_t *)o.data)[2], 4294967295u);
        free(u.p);
    }
    /* int32_data for every type of 4 bytes or less */
    struct {
        int dt;
        int64_t in[3];
        int64_t want[3]; /* as the runtime loads them (bit patterns for floats) */
    } cases[] = {
        {POPRT_DTYPE_INT32, {-5, 7, 2147483647}, {-5, 7, 2147483647}},
        {POPRT_DTYPE_INT16, {-5, 7, 32767}, {-5, 7, 32767}},
        {POPRT_DTYPE_INT8, {-128, 7, 127}, {-128, 7, 127}},
        {POPRT_DTYPE_UINT8, {0, 7, 255}, {0, 7, 255}},
        {POPRT_DTYPE_UINT16, {0, 7, 65535}, {0, 7, 65535}},
        {POPRT_DTYPE_BOOL, {0, 1, 1}, {0, 1, 1}},
        {POPRT_DTYPE_FLOAT16, {0x3c00, 0xc000, 0x7c00}, {0x3c00, 0xc000, 0x7c00}},
        {POPRT_DTYPE_BFLOAT16, {0x3f80, 0xc000, 0x7f80}, {0x3f80, 0xc000, 0x7f80}},
        {POPRT_DTYPE_FLOAT8E4M3FN, {0x38, 0xb8, 0x7e}, {0x38, 0xb8, 0x7e}},
        {POPRT_DTYPE_FLOAT8E4M3FNUZ, {0x40, 0xc0, 0x7f}, {0x40, 0xc0, 0x7f}},
        {POPRT_DTYPE_FLOAT8E5M2, {0x3c, 0xbc, 0x7b}, {0x3c, 0xbc, 0x7b}},
        {POPRT_DTYPE_FLOAT8E5M2FNUZ, {0x40, 0xc0, 0x7f}, {0x40, 0xc0, 0x7f}},
        {POPRT_DTYPE_FLOAT8E8M0, {127, 128, 0}, {127, 128, 0}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pbuf t = {0};
        tensor_head(&t, "x", cases[i].dt, d3, 1);
        f_packed(&t, 5, cases[i].in, 3);
        poprt__onnx_tensor o = decode_ok(&t);
        size_t esz = poprt_dtype_size(cases[i].dt);
        ck_assert_uint_eq(o.nbytes, 3 * esz);
        for (int k = 0; k < 3; k++) {
            int64_t got;
            if (esz == 1)
                got = poprt__dtype_is_signed(cases[i].dt) && !poprt__dtype_is_float(cases[i].dt)
                          ? ((const int8_t *)o.data)[k] : ((const uint8_t *)o.data)[k];
            else if (esz == 2)
                got = cases[i].dt == POPRT_DTYPE_INT16 ? ((const int16_t *)o.data)[k] : ((const uint16_t *)o.data)[k];
            else
                got = ((const int32_t *)o.data)[k];
            ck_assert_msg(got == cases[i].want[k], "dtype %d elem %d: %lld", cases[i].dt, k, (long long)got);
        }
        free(t.p);
    }
    /* fp16 bit pattern decodes to the value */
    {
        pbuf t = {0};
        tensor_head(&t, "h", POPRT_DTYPE_FLOAT16, d3, 1);
        int64_t x[3] = {0x3c00, 0xc000, 0x3800};
        f_packed(&t, 5, x, 3);
        poprt__onnx_tensor o = decode_ok(&t);
        ck_assert(poprt__load_f64(o.data, POPRT_DTYPE_FLOAT16, 1) == -2.0);
        ck_assert(poprt__load_f64(o.data, POPRT_DTYPE_FLOAT16, 2) == 0.5);
        free(t.p);
    }
    /* strings */
    {
        pbuf t = {0};
        tensor_head(&t, "s", POPRT_DTYPE_STRING, d3, 1);
        f_str(&t, 6, "alpha");
        f_str(&t, 6, "");
        f_str(&t, 6, "gamma");
        poprt__onnx_tensor o = decode_ok(&t);
        const char *const *s = o.data;
        ck_assert_str_eq(s[0], "alpha");
        ck_assert_str_eq(s[1], "");
        ck_assert_str_eq(s[2], "gamma");
        ck_assert_uint_eq(o.nbytes, 3 * sizeof(char *));
        free(t.p);
    }
    /* scalar (rank 0) and empty tensors */
    {
        pbuf t = {0};
        tensor_head(&t, "scalar", POPRT_DTYPE_INT64, NULL, 0);
        int64_t x = 42;
        f_packed(&t, 7, &x, 1);
        poprt__onnx_tensor o = decode_ok(&t);
        ck_assert_int_eq(o.type.rank, 0);
        ck_assert_int_eq(*(const int64_t *)o.data, 42);
        free(t.p);
        pbuf e = {0};
        int64_t d0[2] = {0, 5};
        tensor_head(&e, "empty", POPRT_DTYPE_FLOAT, d0, 2);
        o = decode_ok(&e);
        ck_assert_ptr_nonnull(o.data);
        ck_assert_uint_eq(o.nbytes, 0);
        free(e.p);
    }
}
END_TEST

START_TEST(test_raw_all_dtypes)
{
    for (int dt = 1; dt <= 26; dt++) {
        if (dt == POPRT_DTYPE_STRING || poprt__onnx_packed_bits(dt))
            continue;
        size_t esz = poprt_dtype_size(dt);
        uint8_t raw[5 * 16];
        for (size_t i = 0; i < sizeof raw; i++)
            raw[i] = (uint8_t)(i * 7 + 1);
        int64_t d5[1] = {5};
        pbuf t = {0};
        tensor_head(&t, "r", dt, d5, 1);
        f_bytes(&t, 9, raw, 5 * esz);
        poprt__onnx_tensor o = decode_ok(&t);
        ck_assert_uint_eq(o.nbytes, 5 * esz);
        ck_assert_int_eq(memcmp(o.data, raw, 5 * esz), 0);
        free(t.p);
    }
}
END_TEST

START_TEST(test_packed_subbyte)
{
    /* int4: -8 7 -1 3 5 -> packed low nibble first */
    int64_t d5[1] = {5};
    uint8_t raw4[3] = {(uint8_t)(0x8 | (0x7 << 4)), (uint8_t)(0xf | (0x3 << 4)), 0x5};
    pbuf t = {0};
    tensor_head(&t, "q", POPRT_DTYPE_INT4, d5, 1);
    f_bytes(&t, 9, raw4, 3);
    poprt__onnx_tensor o = decode_ok(&t);
    const int8_t *q = o.data;
    ck_assert_uint_eq(o.nbytes, 5);
    ck_assert(q[0] == -8 && q[1] == 7 && q[2] == -1 && q[3] == 3 && q[4] == 5);
    free(t.p);
    memset(&t, 0, sizeof t);
    /* uint4 same bytes */
    tensor_head(&t, "q", POPRT_DTYPE_UINT4, d5, 1);
    f_bytes(&t, 9, raw4, 3);
    o = decode_ok(&t);
    const uint8_t *u = o.data;
    ck_assert(u[0] == 8 && u[1] == 7 && u[2] == 15 && u[3] == 3 && u[4] == 5);
    free(t.p);
    memset(&t, 0, sizeof t);
    /* float4e2m1 keeps the 4-bit code */
    tensor_head(&t, "f4", POPRT_DTYPE_FLOAT4E2M1, d5, 1);
    f_bytes(&t, 9, raw4, 3);
    o = decode_ok(&t);
    ck_assert_uint_eq(((const uint8_t *)o.data)[2], 15);
    free(t.p);
    memset(&t, 0, sizeof t);
    /* int4 in int32_data: one byte of two elements per value */
    tensor_head(&t, "q32", POPRT_DTYPE_INT4, d5, 1);
    int64_t w[3] = {raw4[0], raw4[1], raw4[2]};
    f_packed(&t, 5, w, 3);
    o = decode_ok(&t);
    ck_assert(memcmp(o.data, q, 5) == 0);
    free(t.p);
    memset(&t, 0, sizeof t);
    /* int2 / uint2: four per byte: 1 -2 -1 0 | 1 */
    uint8_t raw2[2] = {(uint8_t)(1 | (2 << 2) | (3 << 4) | (0 << 6)), 1};
    tensor_head(&t, "i2", POPRT_DTYPE_INT2, d5, 1);
    f_bytes(&t, 9, raw2, 2);
    o = decode_ok(&t);
    q = o.data;
    ck_assert(q[0] == 1 && q[1] == -2 && q[2] == -1 && q[3] == 0 && q[4] == 1);
    free(t.p);
    memset(&t, 0, sizeof t);
    tensor_head(&t, "u2", POPRT_DTYPE_UINT2, d5, 1);
    f_bytes(&t, 9, raw2, 2);
    o = decode_ok(&t);
    u = o.data;
    ck_assert(u[0] == 1 && u[1] == 2 && u[2] == 3 && u[3] == 0 && u[4] == 1);
    free(t.p);
    memset(&t, 0, sizeof t);
    /* wrong packed size names the tensor */
    tensor_head(&t, "short4", POPRT_DTYPE_INT4, d5, 1);
    f_bytes(&t, 9, raw4, 2);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "short4");
    free(t.p);
}
END_TEST

/* ---- malformed tensors -------------------------------------------------------- */

START_TEST(test_tensor_errors)
{
    float v[4] = {1, 2, 3, 4};
    int64_t d4[1] = {4};
    pbuf t = {0};
    /* truncated: every prefix fails cleanly */
    tensor_head(&t, "cut", POPRT_DTYPE_FLOAT, d4, 1);
    f_bytes(&t, 9, v, sizeof v);
    for (size_t n = 1; n < t.n; n++) {
        poprt__onnx_tensor o;
        uint8_t *copy = malloc(n);
        memcpy(copy, t.p, n);
        ck_assert_int_ne(poprt__onnx_decode_tensor(copy, n, &A, &o), POPRT_OK);
        free(copy);
    }
    /* the cut inside raw_data is a parse error */
    {
        poprt__onnx_tensor o;
        ck_assert_int_eq(poprt__onnx_decode_tensor(t.p, t.n - 3, &A, &o), POPRT_STATUS_PARSE_ERROR);
    }
    free(t.p);
    memset(&t, 0, sizeof t);
    /* garbage: wire type 7 */
    uint8_t junk[4] = {0xff, 0xff, 0xff, 0x07};
    t.p = malloc(4);
    memcpy(t.p, junk, 4);
    t.n = 4;
    decode_fails(&t, POPRT_STATUS_PARSE_ERROR, "TensorProto");
    free(t.p);
    memset(&t, 0, sizeof t);
    /* negative dim */
    int64_t neg[2] = {2, -3};
    tensor_head(&t, "negdim", POPRT_DTYPE_FLOAT, neg, 2);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "negdim");
    free(t.p);
    memset(&t, 0, sizeof t);
    /* overflowing product */
    int64_t big[3] = {1LL << 40, 1LL << 40, 16};
    tensor_head(&t, "huge", POPRT_DTYPE_FLOAT, big, 3);
    f_bytes(&t, 9, v, sizeof v);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "huge");
    free(t.p);
    memset(&t, 0, sizeof t);
    /* data shorter / longer than the shape */
    int64_t d5[1] = {5};
    tensor_head(&t, "short", POPRT_DTYPE_FLOAT, d5, 1);
    f_bytes(&t, 9, v, sizeof v);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "short");
    free(t.p);
    memset(&t, 0, sizeof t);
    int64_t d3[1] = {3};
    tensor_head(&t, "long", POPRT_DTYPE_FLOAT, d3, 1);
    f_bytes(&t, 9, v, sizeof v);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "long");
    free(t.p);
    memset(&t, 0, sizeof t);
    tensor_head(&t, "typedshort", POPRT_DTYPE_INT64, d3, 1);
    int64_t two[2] = {1, 2};
    f_packed(&t, 7, two, 2);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "typedshort");
    free(t.p);
    memset(&t, 0, sizeof t);
    tensor_head(&t, "nodata", POPRT_DTYPE_FLOAT, d3, 1);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "nodata");
    free(t.p);
    memset(&t, 0, sizeof t);
    /* unknown dtype, missing dtype */
    tensor_head(&t, "weird", 99, d3, 1);
    decode_fails(&t, POPRT_STATUS_UNSUPPORTED, "weird");
    free(t.p);
    memset(&t, 0, sizeof t);
    f_str(&t, 8, "untyped");
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "untyped");
    free(t.p);
    memset(&t, 0, sizeof t);
    /* string tensor in raw_data; external data without a model */
    tensor_head(&t, "rawstr", POPRT_DTYPE_STRING, d3, 1);
    f_bytes(&t, 9, "abc", 3);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "rawstr");
    free(t.p);
    memset(&t, 0, sizeof t);
    tensor_head(&t, "ext", POPRT_DTYPE_FLOAT, d3, 1);
    f_varint(&t, 14, 1);
    decode_fails(&t, POPRT_STATUS_INVALID_MODEL, "ext");
    free(t.p);
}
END_TEST

/* ---- models ------------------------------------------------------------------ */

static void vinfo(pbuf *g, int field, const char *name, int elem, const char *dims /* "N,3" or NULL */)
{
    pbuf vi = {0}, tp = {0}, tt = {0}, sh = {0};
    f_str(&vi, 1, name);
    if (elem >= 0) {
        f_varint(&tt, 1, elem);
        if (dims) {
            char buf[64];
            snprintf(buf, sizeof buf, "%s", dims);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                pbuf d = {0};
                if (tok[0] >= '0' && tok[0] <= '9')
                    f_varint(&d, 1, atoll(tok));
                else if (tok[0] != '?')
                    f_str(&d, 2, tok);
                f_msg(&sh, 1, &d);
            }
            f_msg(&tt, 2, &sh);
        }
        f_msg(&tp, 1, &tt);
        f_msg(&vi, 2, &tp);
    }
    f_msg(g, field, &vi);
}

static void node(pbuf *g, int field, const char *op, const char *name, const char *ins, const char *outs,
                 pbuf *attrs /* concatenated field-5 entries, consumed */)
{
    pbuf n = {0};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", ins);
    for (char *p = buf, *e;; p = e + 1) {
        e = strchr(p, ',');
        if (e)
            *e = 0;
        if (*p || e)
            f_str(&n, 1, strcmp(p, "-") == 0 ? "" : p);
        if (!e)
            break;
    }
    snprintf(buf, sizeof buf, "%s", outs);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        f_str(&n, 2, tok);
    if (name)
        f_str(&n, 3, name);
    f_str(&n, 4, op);
    if (attrs) {
        put(&n, attrs->p, attrs->n);
        free(attrs->p);
        memset(attrs, 0, sizeof *attrs);
    }
    f_msg(g, field, &n);
}

static void attr_int(pbuf *a, const char *name, int64_t v)
{
    pbuf x = {0};
    f_str(&x, 1, name);
    f_varint(&x, 20, POPRT__ATTR_INT);
    f_varint(&x, 3, v);
    f_msg(a, 5, &x);
}

static void float_init(pbuf *g, const char *name, const float *v, int n)
{
    pbuf t = {0};
    int64_t d[1] = {n};
    tensor_head(&t, name, POPRT_DTYPE_FLOAT, d, 1);
    f_bytes(&t, 9, v, (size_t)n * 4);
    f_msg(g, 5, &t);
}

/* A model exercising inputs, initializers (one also listed as an input, as
 * pre-IR-4 files do), value_info, unnamed nodes, metadata, attributes of
 * several kinds, an If with subgraphs using outer names, a function. */
static pbuf build_model(void)
{
    pbuf m = {0}, g = {0}, a = {0}, sub = {0};
    float w[3] = {1, 2, 3}, b[3] = {-1, 0, 1};
    f_varint(&m, 1, 8);
    f_str(&m, 2, "unit");
    f_str(&m, 3, "1.0");
    f_varint(&m, 5, 7);
    pbuf os = {0};
    f_str(&os, 1, "");
    f_varint(&os, 2, 17);
    f_msg(&m, 8, &os);
    f_str(&os, 1, "local");
    f_varint(&os, 2, 1);
    f_msg(&m, 8, &os);
    pbuf kv = {0};
    f_str(&kv, 1, "author");
    f_str(&kv, 2, "me");
    f_msg(&m, 14, &kv);

    /* graph: nodes first, as most exporters write them */
    attr_int(&a, "axis", -1);
    node(&g, 1, "Add", "add0", "X,W", "Y", NULL);
    node(&g, 1, "Relu", NULL, "Y", "Z", NULL);
    node(&g, 1, "Softmax", "", "Z", "S", &a);
    /* If(cond) then: Add(S, W) else: Identity(B) -- W and B from outside */
    {
        pbuf then_g = {0}, else_g = {0}, ga = {0};
        node(&then_g, 1, "Add", "then_add", "S,W", "T", NULL);
        f_str(&then_g, 2, "then");
        vinfo(&then_g, 12, "T", POPRT_DTYPE_FLOAT, "N,3");
        node(&else_g, 1, "Identity", "else_id", "B", "E", NULL);
        f_str(&else_g, 2, "else");
        vinfo(&else_g, 12, "E", POPRT_DTYPE_FLOAT, "3");
        pbuf at = {0};
        f_str(&at, 1, "then_branch");
        f_varint(&at, 20, POPRT__ATTR_GRAPH);
        f_msg(&at, 6, &then_g);
        f_msg(&ga, 5, &at);
        f_str(&at, 1, "else_branch");
        f_varint(&at, 20, POPRT__ATTR_GRAPH);
        f_msg(&at, 6, &else_g);
        f_msg(&ga, 5, &at);
        node(&g, 1, "If", "if0", "C", "O", &ga);
    }
    /* attributes of other kinds on a custom node */
    {
        pbuf at = {0}, aa = {0};
        f_str(&at, 1, "fs");
        f_varint(&at, 20, POPRT__ATTR_FLOATS);
        float fl[2] = {0.5f, -2.f};
        f_bytes(&at, 7, fl, 8);
        f_msg(&aa, 5, &at);
        f_str(&at, 1, "is");
        f_varint(&at, 20, POPRT__ATTR_INTS);
        int64_t iv[3] = {1, -2, 300};
        f_packed(&at, 8, iv, 3);
        f_msg(&aa, 5, &at);
        f_str(&at, 1, "s");
        f_varint(&at, 20, POPRT__ATTR_STRING);
        f_bytes(&at, 4, "hi\0x", 4);
        f_msg(&aa, 5, &at);
        f_str(&at, 1, "ss");
        f_varint(&at, 20, POPRT__ATTR_STRINGS);
        f_str(&at, 9, "a");
        f_str(&at, 9, "bc");
        f_msg(&aa, 5, &at);
        f_str(&at, 1, "f");
        f_varint(&at, 20, POPRT__ATTR_FLOAT);
        float half = 0.5f;
        uint32_t u;
        memcpy(&u, &half, 4);
        f_fixed32(&at, 2, u);
        f_msg(&aa, 5, &at);
        pbuf tv = {0};
        int64_t d2[1] = {2};
        tensor_head(&tv, "", POPRT_DTYPE_INT64, d2, 1);
        int64_t tvv[2] = {4, 5};
        f_packed(&tv, 7, tvv, 2);
        f_str(&at, 1, "t");
        f_varint(&at, 20, POPRT__ATTR_TENSOR);
        f_msg(&at, 5, &tv);
        f_msg(&aa, 5, &at);
        /* sparse tensor attr: dims [2,3], values {7,9} at (0,1),(1,2) */
        pbuf sp = {0}, vals = {0}, idx = {0};
        tensor_head(&vals, "sp", POPRT_DTYPE_INT64, d2, 1);
        int64_t vv[2] = {7, 9};
        f_packed(&vals, 7, vv, 2);
        int64_t d22[2] = {2, 2};
        tensor_head(&idx, "", POPRT_DTYPE_INT64, d22, 2);
        int64_t ix[4] = {0, 1, 1, 2};
        f_packed(&idx, 7, ix, 4);
        f_msg(&sp, 1, &vals);
        f_msg(&sp, 2, &idx);
        int64_t sd[2] = {2, 3};
        f_packed(&sp, 3, sd, 2);
        f_str(&at, 1, "sparse");
        f_varint(&at, 20, POPRT__ATTR_SPARSE_TENSOR);
        f_msg(&at, 22, &sp);
        f_msg(&aa, 5, &at);
        /* type proto attr: sequence(tensor(int64)) */
        pbuf tp = {0}, seq = {0}, inner = {0}, tt = {0};
        f_varint(&tt, 1, POPRT_DTYPE_INT64);
        f_msg(&inner, 1, &tt);
        f_msg(&seq, 1, &inner);
        f_msg(&tp, 4, &seq);
        f_str(&at, 1, "tp");
        f_varint(&at, 20, POPRT__ATTR_TYPE_PROTO);
        f_msg(&at, 14, &tp);
        f_msg(&aa, 5, &at);
        pbuf nn = {0};
        f_str(&nn, 1, "S");
        f_str(&nn, 1, "");
        f_str(&nn, 1, "W");
        f_str(&nn, 2, "K");
        f_str(&nn, 4, "MyFunc");
        f_str(&nn, 7, "local");
        put(&nn, aa.p, aa.n);
        free(aa.p);
        pbuf meta = {0};
        f_str(&meta, 1, "shard");
        f_str(&meta, 2, "1");
        f_msg(&nn, 9, &meta);
        f_msg(&g, 1, &nn);
    }
    f_str(&g, 2, "main_graph");
    float_init(&g, "W", w, 3);
    float_init(&g, "B", b, 3);
    vinfo(&g, 11, "X", POPRT_DTYPE_FLOAT, "N,3");
    vinfo(&g, 11, "C", POPRT_DTYPE_BOOL, "");
    vinfo(&g, 11, "W", POPRT_DTYPE_FLOAT, "3"); /* also an initializer */
    vinfo(&g, 12, "O", POPRT_DTYPE_FLOAT, NULL);
    vinfo(&g, 12, "K", POPRT_DTYPE_FLOAT, "?,3");
    vinfo(&g, 13, "Y", POPRT_DTYPE_FLOAT, "N,3");
    f_msg(&m, 7, &g);

    /* function local.MyFunc(a, b, c) -> k = Mul(a, c) */
    pbuf fn = {0};
    f_str(&fn, 1, "MyFunc");
    f_str(&fn, 10, "local");
    f_str(&fn, 4, "a");
    f_str(&fn, 4, "b");
    f_str(&fn, 4, "c");
    f_str(&fn, 5, "k");
    f_str(&fn, 6, "alpha");
    node(&fn, 7, "Mul", NULL, "a,c", "k", NULL);
    f_str(&os, 1, "");
    f_varint(&os, 2, 17);
    f_msg(&fn, 9, &os);
    f_msg(&m, 25, &fn);
    (void)sub;
    return m;
}

static poprt__model *load_bytes(const void *p, size_t n, const char *dir, poprt_status *st)
{
    void *copy = poprt__malloc(n ? n : 1);
    ck_assert_ptr_nonnull(copy);
    memcpy(copy, p, n);
    poprt__blob *b = poprt__blob_wrap(copy, n);
    ck_assert_ptr_nonnull(b);
    poprt__model *m = NULL;
    *st = poprt__onnx_load_blob(b, NULL, dir, NULL, &m);
    poprt__blob_unref(b);
    return m;
}

static poprt__node *find_node(poprt__graph *g, const char *name)
{
    for (size_t i = 0; i < g->nodes.len; i++)
        if (strcmp(((poprt__node *)g->nodes.items[i])->name, name) == 0)
            return g->nodes.items[i];
    return NULL;
}

static void check_model(poprt__model *m)
{
    ck_assert_int_eq(m->ir_version, 8);
    ck_assert_int_eq(m->model_version, 7);
    ck_assert_str_eq(m->producer_name, "unit");
    ck_assert_int_eq(m->n_opsets, 2);
    ck_assert_int_eq(poprt__model_opset(m, ""), 17);
    ck_assert_int_eq(m->n_meta, 1);
    ck_assert_str_eq(m->meta_vals[0], "me");
    poprt__graph *g = m->graph;
    ck_assert_str_eq(g->name, "main_graph");
    ck_assert_uint_eq(g->inputs.len, 3);
    ck_assert_uint_eq(g->initializers.len, 2);
    poprt__tensor *W = poprt__graph_find(g, "W");
    ck_assert(W->is_initializer && W->is_input);
    ck_assert_ptr_eq(g->inputs.items[2], W);
    ck_assert_int_eq(((const float *)poprt__tensor_data(W))[2], 3);
    poprt__tensor *X = g->inputs.items[0];
    ck_assert_int_eq(X->type.rank, 2);
    ck_assert_int_eq(X->type.dims[0].value, -1);
    ck_assert_str_eq(X->type.dims[0].param, "N");
    ck_assert_int_eq(X->type.dims[1].value, 3);
    poprt__tensor *C = g->inputs.items[1];
    ck_assert_int_eq(C->type.elem, POPRT_DTYPE_BOOL);
    ck_assert_int_eq(C->type.rank, 0);
    poprt__tensor *Y = poprt__graph_find(g, "Y");
    ck_assert_int_eq(Y->type.elem, POPRT_DTYPE_FLOAT); /* from value_info */
    poprt__tensor *O = poprt__graph_find(g, "O");
    ck_assert(O->is_output);
    ck_assert_int_eq(O->type.rank, -1);
    poprt__tensor *K = poprt__graph_find(g, "K");
    ck_assert_int_eq(K->type.dims[0].value, -1);
    ck_assert_ptr_null(K->type.dims[0].param);
    /* unnamed nodes get "<op>_<index>" */
    ck_assert_ptr_nonnull(find_node(g, "Relu_1"));
    ck_assert_ptr_nonnull(find_node(g, "Softmax_2"));
    ck_assert_int_eq(poprt__attr_i(find_node(g, "Softmax_2"), "axis", 0), -1);
    poprt__node *add = find_node(g, "add0");
    ck_assert_ptr_eq(add->inputs[1], W);
    ck_assert_ptr_eq(add->outputs[0], Y);
    ck_assert_ptr_eq(Y->producer, add);
    /* subgraphs resolve outer names to the outer tensors */
    poprt__node *ifn = find_node(g, "if0");
    const poprt__attr *th = poprt__node_attr(ifn, "then_branch");
    ck_assert_int_eq(th->type, POPRT__ATTR_GRAPH);
    ck_assert_ptr_eq(th->g->parent, g);
    ck_assert_ptr_eq(th->g->parent_node, ifn);
    ck_assert_str_eq(th->g->name, "then");
    poprt__node *ta = find_node(th->g, "then_add");
    ck_assert_ptr_eq(ta->inputs[0], poprt__graph_find(g, "S"));
    ck_assert_ptr_eq(ta->inputs[1], W);
    ck_assert_ptr_null(poprt__map_get(&th->g->by_name, "W"));
    const poprt__attr *el = poprt__node_attr(ifn, "else_branch");
    ck_assert_ptr_eq(((poprt__node *)el->g->nodes.items[0])->inputs[0], poprt__graph_find(g, "B"));
    ck_assert_int_eq(((poprt__tensor *)el->g->outputs.items[0])->type.dims[0].value, 3);
    /* other attributes */
    poprt__node *mf = NULL;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (strcmp(((poprt__node *)g->nodes.items[i])->op_type, "MyFunc") == 0)
            mf = g->nodes.items[i];
    ck_assert_ptr_nonnull(mf);
    ck_assert_str_eq(mf->name, "MyFunc_4");
    ck_assert_str_eq(mf->domain, "local");
    ck_assert_int_eq(mf->n_inputs, 3);
    ck_assert_ptr_null(mf->inputs[1]);
    ck_assert_int_eq(mf->n_meta, 1);
    ck_assert_str_eq(mf->meta_keys[0], "shard");
    int64_t n;
    const float *fs = poprt__attr_floats(mf, "fs", &n);
    ck_assert(n == 2 && fs[1] == -2.f);
    const int64_t *is = poprt__attr_ints(mf, "is", &n);
    ck_assert(n == 3 && is[1] == -2 && is[2] == 300);
    const poprt__attr *s = poprt__node_attr(mf, "s");
    ck_assert_int_eq(s->type, POPRT__ATTR_STRING);
    ck_assert_uint_eq(s->s_len, 4);
    ck_assert_int_eq(memcmp(s->s, "hi\0x", 5), 0);
    const poprt__attr *ss = poprt__node_attr(mf, "ss");
    ck_assert(ss->n == 2 && strcmp(ss->strings[1], "bc") == 0 && ss->string_lens[1] == 2);
    ck_assert(poprt__attr_f(mf, "f", 0) == 0.5f);
    const poprt__attr *t = poprt__node_attr(mf, "t");
    ck_assert(t->t && ((const int64_t *)poprt__tensor_data(t->t))[1] == 5);
    const poprt__attr *sp = poprt__node_attr(mf, "sparse");
    ck_assert_int_eq(sp->type, POPRT__ATTR_SPARSE_TENSOR);
    const int64_t *dense = poprt__tensor_data(sp->t);
    ck_assert_int_eq(sp->t->type.rank, 2);
    ck_assert(dense[0] == 0 && dense[1] == 7 && dense[5] == 9 && dense[4] == 0);
    const poprt__attr *tp = poprt__node_attr(mf, "tp");
    ck_assert_int_eq(tp->tp->kind, POPRT__KIND_SEQUENCE);
    ck_assert_int_eq(tp->tp->inner->elem, POPRT_DTYPE_INT64);
    /* function */
    ck_assert_int_eq(m->n_functions, 1);
    poprt__function *f = &m->functions[0];
    ck_assert_str_eq(f->name, "MyFunc");
    ck_assert_str_eq(f->domain, "local");
    ck_assert_int_eq(f->n_attr_names, 1);
    ck_assert_uint_eq(f->body->inputs.len, 3);
    ck_assert_uint_eq(f->body->nodes.len, 1);
    poprt__node *mul = f->body->nodes.items[0];
    ck_assert_ptr_eq(mul->inputs[1], f->body->inputs.items[2]);
    ck_assert_int_eq(f->n_opsets, 1);
}

/* Structural equality of two graphs (names, types, data, nodes, attrs). */
static void types_equal(const poprt__type *a, const poprt__type *b)
{
    ck_assert_int_eq(a->kind, b->kind);
    ck_assert_int_eq(a->elem, b->elem);
    if (a->kind == POPRT__KIND_TENSOR || a->kind == POPRT__KIND_SPARSE) {
        ck_assert_int_eq(a->rank, b->rank);
        for (int i = 0; i < a->rank; i++) {
            ck_assert_int_eq(a->dims[i].value, b->dims[i].value);
            ck_assert_int_eq(!a->dims[i].param, !b->dims[i].param);
            if (a->dims[i].param)
                ck_assert_str_eq(a->dims[i].param, b->dims[i].param);
        }
    }
    ck_assert_int_eq(!a->inner, !b->inner);
    if (a->inner)
        types_equal(a->inner, b->inner);
}

static void tensors_equal(const poprt__tensor *a, const poprt__tensor *b)
{
    ck_assert_int_eq(!a, !b);
    if (!a)
        return;
    ck_assert_str_eq(a->name, b->name);
    types_equal(&a->type, &b->type);
    ck_assert_int_eq(!a->raw, !b->raw);
    ck_assert_uint_eq(a->nbytes, b->nbytes);
    if (a->raw && a->type.elem == POPRT_DTYPE_STRING) {
        for (size_t i = 0; i < a->nbytes / sizeof(char *); i++)
            ck_assert_str_eq(((char *const *)poprt__tensor_data(a))[i], ((char *const *)poprt__tensor_data(b))[i]);
    } else if (a->raw) {
        ck_assert_int_eq(memcmp(a->raw, b->raw, a->nbytes), 0);
    }
}

static void graphs_equal(const poprt__graph *a, const poprt__graph *b);

static void attrs_equal(const poprt__attr *x, const poprt__attr *y)
{
    ck_assert_str_eq(x->name, y->name);
    ck_assert_int_eq(x->type, y->type);
    ck_assert_int_eq(x->n, y->n);
    switch (x->type) {
    case POPRT__ATTR_FLOAT: ck_assert(x->f == y->f); break;
    case POPRT__ATTR_INT: ck_assert_int_eq(x->i, y->i); break;
    case POPRT__ATTR_STRING:
        ck_assert_uint_eq(x->s_len, y->s_len);
        ck_assert_int_eq(memcmp(x->s, y->s, x->s_len), 0);
        break;
    case POPRT__ATTR_TENSOR:
    case POPRT__ATTR_SPARSE_TENSOR: tensors_equal(x->t, y->t); break;
    case POPRT__ATTR_GRAPH: graphs_equal(x->g, y->g); break;
    case POPRT__ATTR_TYPE_PROTO: types_equal(x->tp, y->tp); break;
    case POPRT__ATTR_FLOATS: ck_assert_int_eq(memcmp(x->floats, y->floats, (size_t)x->n * 4), 0); break;
    case POPRT__ATTR_INTS: ck_assert_int_eq(memcmp(x->ints, y->ints, (size_t)x->n * 8), 0); break;
    case POPRT__ATTR_STRINGS:
        for (int64_t i = 0; i < x->n; i++)
            ck_assert_str_eq(x->strings[i], y->strings[i]);
        break;
    case POPRT__ATTR_TENSORS:
    case POPRT__ATTR_SPARSE_TENSORS:
        for (int64_t i = 0; i < x->n; i++)
            tensors_equal(x->tensors[i], y->tensors[i]);
        break;
    case POPRT__ATTR_GRAPHS:
        for (int64_t i = 0; i < x->n; i++)
            graphs_equal(x->graphs[i], y->graphs[i]);
        break;
    case POPRT__ATTR_TYPE_PROTOS:
        for (int64_t i = 0; i < x->n; i++)
            types_equal(x->tps[i], y->tps[i]);
        break;
    default: break;
    }
}

static void tvec_equal(const poprt__vec *a, const poprt__vec *b)
{
    ck_assert_uint_eq(a->len, b->len);
    for (size_t i = 0; i < a->len; i++)
        tensors_equal(a->items[i], b->items[i]);
}

static void graphs_equal(const poprt__graph *a, const poprt__graph *b)
{
    ck_assert_str_eq(a->name, b->name);
    tvec_equal(&a->inputs, &b->inputs);
    tvec_equal(&a->outputs, &b->outputs);
    tvec_equal(&a->initializers, &b->initializers);
    ck_assert_uint_eq(a->nodes.len, b->nodes.len);
    for (size_t i = 0; i < a->nodes.len; i++) {
        const poprt__node *x = a->nodes.items[i], *y = b->nodes.items[i];
        ck_assert_str_eq(x->name, y->name);
        ck_assert_str_eq(x->op_type, y->op_type);
        ck_assert_str_eq(x->domain, y->domain);
        ck_assert_int_eq(x->n_inputs, y->n_inputs);
        ck_assert_int_eq(x->n_outputs, y->n_outputs);
        for (int k = 0; k < x->n_inputs; k++)
            tensors_equal(x->inputs[k], y->inputs[k]);
        for (int k = 0; k < x->n_outputs; k++)
            tensors_equal(x->outputs[k], y->outputs[k]);
        ck_assert_int_eq(x->n_attrs, y->n_attrs);
        for (int k = 0; k < x->n_attrs; k++)
            attrs_equal(&x->attrs[k], &y->attrs[k]);
        ck_assert_int_eq(x->n_meta, y->n_meta);
    }
}

static void models_equal(const poprt__model *a, const poprt__model *b)
{
    ck_assert_int_eq(a->ir_version, b->ir_version);
    ck_assert_int_eq(a->n_opsets, b->n_opsets);
    for (int i = 0; i < a->n_opsets; i++) {
        ck_assert_str_eq(a->opsets[i].domain, b->opsets[i].domain);
        ck_assert_int_eq(a->opsets[i].version, b->opsets[i].version);
    }
    ck_assert_int_eq(a->n_meta, b->n_meta);
    graphs_equal(a->graph, b->graph);
    ck_assert_int_eq(a->n_functions, b->n_functions);
    for (int i = 0; i < a->n_functions; i++) {
        ck_assert_str_eq(a->functions[i].name, b->functions[i].name);
        ck_assert_int_eq(a->functions[i].n_attr_names, b->functions[i].n_attr_names);
        graphs_equal(a->functions[i].body, b->functions[i].body);
    }
}

START_TEST(test_model_load_and_roundtrip)
{
    pbuf mb = build_model();
    poprt_status st;
    poprt__model *m = load_bytes(mb.p, mb.n, NULL, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    check_model(m);
    void *data;
    size_t size;
    st = poprt__onnx_save(m, &data, &size);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    poprt__model *m2 = load_bytes(data, size, NULL, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    check_model(m2);
    models_equal(m, m2);
    /* saving again gives the same bytes */
    void *data2;
    size_t size2;
    ck_assert_int_eq(poprt__onnx_save(m2, &data2, &size2), POPRT_OK);
    ck_assert_uint_eq(size, size2);
    ck_assert_int_eq(memcmp(data, data2, size), 0);
    poprt__free(data);
    poprt__free(data2);
    poprt__model_free(m);
    poprt__model_free(m2);
    free(mb.p);
}
END_TEST

/* Found by fuzz_model: a model without ir_version nor opset_import loads
 * (IR versions below 3 need no imports), but the writer gave it version 8,
 * which does need them: what it wrote did not load back. */
START_TEST(test_roundtrip_unversioned)
{
    pbuf m = {0}, g = {0};
    node(&g, 1, "Relu", "relu", "x", "y", NULL);
    vinfo(&g, 11, "x", POPRT_DTYPE_FLOAT, "2");
    vinfo(&g, 12, "y", POPRT_DTYPE_FLOAT, "2");
    f_msg(&m, 7, &g);
    poprt_status st;
    poprt__model *a = load_bytes(m.p, m.n, NULL, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    void *data, *data2;
    size_t size, size2;
    ck_assert_int_eq(poprt__onnx_save(a, &data, &size), POPRT_OK);
    poprt__model *b = load_bytes(data, size, NULL, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(b->ir_version, 0);
    ck_assert_int_eq(poprt__onnx_save(b, &data2, &size2), POPRT_OK);
    ck_assert_uint_eq(size, size2);
    ck_assert_int_eq(memcmp(data, data2, size), 0);
    poprt__free(data);
    poprt__free(data2);
    poprt__model_free(a);
    poprt__model_free(b);
    free(m.p);
}
END_TEST

START_TEST(test_roundtrip_every_dtype)
{
    /* one initializer per dtype, written raw (or strings), saved and reloaded */
    pbuf m = {0}, g = {0};
    f_varint(&m, 1, 10);
    pbuf os = {0};
    f_varint(&os, 2, 21);
    f_msg(&m, 8, &os);
    for (int dt = 1; dt <= 26; dt++) {
        pbuf t = {0};
        char name[16];
        snprintf(name, sizeof name, "t%d", dt);
        int64_t d[1] = {7};
        tensor_head(&t, name, dt, d, 1);
        if (dt == POPRT_DTYPE_STRING) {
            for (int i = 0; i < 7; i++)
                f_str(&t, 6, i % 2 ? "odd" : "even");
        } else {
            int bits = poprt__onnx_packed_bits(dt);
            size_t n = bits ? (size_t)(7 * bits + 7) / 8 : 7 * poprt_dtype_size(dt);
            uint8_t raw[7 * 16];
            for (size_t i = 0; i < n; i++)
                raw[i] = (uint8_t)(i * 37 + 11);
            if (bits == 4)
                raw[n - 1] &= 0x0f; /* padding bits are zero */
            if (bits == 2)
                raw[n - 1] &= 0x3f;
            f_bytes(&t, 9, raw, n);
        }
        f_msg(&g, 5, &t);
    }
    f_msg(&m, 7, &g);
    poprt_status st;
    poprt__model *a = load_bytes(m.p, m.n, NULL, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    ck_assert_uint_eq(a->graph->initializers.len, 26);
    void *data;
    size_t size;
    ck_assert_int_eq(poprt__onnx_save(a, &data, &size), POPRT_OK);
    poprt__model *b = load_bytes(data, size, NULL, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    models_equal(a, b);
    /* the saved int4 bytes are the original packing */
    ck_assert_ptr_nonnull(memmem(data, size, "\x0b\x30\x55\x0a", 4));
    poprt__free(data);
    poprt__model_free(a);
    poprt__model_free(b);
    free(m.p);
}
END_TEST

START_TEST(test_model_malformed)
{
    pbuf mb = build_model();
    poprt_status st;
    /* every truncation fails cleanly, except cuts between top-level fields
     * after the graph, which are valid (shorter) models */
    size_t graph_end = 0;
    for (size_t pos = 0; pos < mb.n;) {
        uint64_t key = 0, len = 0;
        int sh = 0;
        do key |= (uint64_t)(mb.p[pos] & 0x7f) << sh, sh += 7; while (mb.p[pos++] & 0x80);
        if ((key & 7) == 0) {
            while (mb.p[pos++] & 0x80) {}
        } else {
            sh = 0;
            do len |= (uint64_t)(mb.p[pos] & 0x7f) << sh, sh += 7; while (mb.p[pos++] & 0x80);
            pos += len;
        }
        if ((key >> 3) == 7)
            graph_end = pos;
    }
    ck_assert_uint_gt(graph_end, 0);
    for (size_t n = 0; n < mb.n; n++) {
        poprt__model *m = load_bytes(mb.p, n, NULL, &st);
        if (n < graph_end) {
            ck_assert_int_ne(st, POPRT_OK);
            ck_assert_ptr_null(m);
            ck_assert(st == POPRT_STATUS_PARSE_ERROR || st == POPRT_STATUS_INVALID_MODEL);
        }
        poprt__model_free(m);
    }
    /* flipped bytes: any status, no crash */
    for (size_t i = 0; i < mb.n; i += 3) {
        uint8_t save = mb.p[i];
        mb.p[i] ^= (uint8_t)(0x5a + i);
        poprt__model *m = load_bytes(mb.p, mb.n, NULL, &st);
        poprt__model_free(m);
        mb.p[i] = save;
    }
    free(mb.p);
    /* garbage */
    uint8_t junk[8] = {0x0f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    ck_assert_ptr_null(load_bytes(junk, sizeof junk, NULL, &st));
    ck_assert_int_eq(st, POPRT_STATUS_PARSE_ERROR);
    /* no graph */
    pbuf m = {0};
    f_varint(&m, 1, 8);
    ck_assert_ptr_null(load_bytes(m.p, m.n, NULL, &st));
    ck_assert_int_eq(st, POPRT_STATUS_INVALID_MODEL);
    /* bad initializer inside a model names it */
    pbuf g = {0}, t = {0};
    int64_t neg[1] = {-1};
    tensor_head(&t, "badinit", POPRT_DTYPE_FLOAT, neg, 1);
    f_msg(&g, 5, &t);
    f_msg(&m, 7, &g);
    ck_assert_ptr_null(load_bytes(m.p, m.n, NULL, &st));
    ck_assert_int_eq(st, POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "badinit"));
    free(m.p);
    /* negative dim in a value type names the value */
    memset(&m, 0, sizeof m);
    vinfo(&g, 11, "in0", POPRT_DTYPE_FLOAT, "2");
    /* patch: build a type with dim_value -4 by hand */
    {
        pbuf vi = {0}, tp = {0}, tt = {0}, sh = {0}, d = {0};
        f_str(&vi, 1, "negin");
        f_varint(&tt, 1, 1);
        f_varint(&d, 1, -4);
        f_msg(&sh, 1, &d);
        f_msg(&tt, 2, &sh);
        f_msg(&tp, 1, &tt);
        f_msg(&vi, 2, &tp);
        f_msg(&g, 11, &vi);
    }
    f_msg(&m, 7, &g);
    ck_assert_ptr_null(load_bytes(m.p, m.n, NULL, &st));
    ck_assert_int_eq(st, POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "negin"));
    free(m.p);
    /* two producers for one name */
    memset(&m, 0, sizeof m);
    node(&g, 1, "Relu", "r1", "a", "y", NULL);
    node(&g, 1, "Relu", "r2", "a", "y", NULL);
    f_msg(&m, 7, &g);
    ck_assert_ptr_null(load_bytes(m.p, m.n, NULL, &st));
    ck_assert_int_eq(st, POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "r2"));
    free(m.p);
}
END_TEST

/* ---- external data ------------------------------------------------------------ */

static char tmpdir[256];

static void write_file(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(d, 1, n, f), n);
    fclose(f);
}

static pbuf ext_model(const char *loc, const char *off, const char *len, int two)
{
    pbuf m = {0}, g = {0};
    f_varint(&m, 1, 8);
    for (int k = 0; k < (two ? 2 : 1); k++) {
        pbuf t = {0}, e = {0};
        int64_t d[1] = {3};
        tensor_head(&t, k ? "ext_b" : "ext_w", POPRT_DTYPE_FLOAT, d, 1);
        f_str(&e, 1, "location");
        f_str(&e, 2, loc);
        f_msg(&t, 13, &e);
        if (off) {
            f_str(&e, 1, "offset");
            f_str(&e, 2, k ? "16" : off);
            f_msg(&t, 13, &e);
        }
        if (len) {
            f_str(&e, 1, "length");
            f_str(&e, 2, len);
            f_msg(&t, 13, &e);
        }
        f_varint(&t, 14, 1);
        f_msg(&g, 5, &t);
    }
    f_msg(&m, 7, &g);
    return m;
}

static poprt_status try_ext(const char *loc, const char *off, const char *len, const char *needle)
{
    pbuf m = ext_model(loc, off, len, 0);
    poprt_status st;
    poprt__model *mm = load_bytes(m.p, m.n, tmpdir, &st);
    free(m.p);
    ck_assert_ptr_null(mm);
    if (needle)
        ck_assert_msg(strstr(poprt_last_error(), needle), "'%s' lacks '%s'", poprt_last_error(), needle);
    return st;
}

START_TEST(test_external_data)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/poprt_onnx_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    char path[512], outside[512], sub[512];
    float w[7] = {0, 1, 2, 3, 4, 5, 6};
    snprintf(path, sizeof path, "%s/weights.bin", tmpdir);
    write_file(path, w, sizeof w);
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(path, sizeof path, "%s/sub/w2.bin", tmpdir);
    write_file(path, w, sizeof w);
    snprintf(outside, sizeof outside, "%s_outside.bin", tmpdir);
    write_file(outside, w, sizeof w);
    snprintf(path, sizeof path, "%s/link.bin", tmpdir);
    ck_assert_int_eq(symlink(outside, path), 0);

    /* accepted: offset+length, shared mapping for two tensors */
    pbuf m = ext_model("weights.bin", "4", "12", 1);
    poprt_status st;
    poprt__model *mm = load_bytes(m.p, m.n, tmpdir, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    poprt__tensor *t = poprt__graph_find(mm->graph, "ext_w");
    ck_assert(((const float *)poprt__tensor_data(t))[0] == 1 && ((const float *)poprt__tensor_data(t))[2] == 3);
    t = poprt__graph_find(mm->graph, "ext_b");
    ck_assert(((const float *)poprt__tensor_data(t))[0] == 4);
    ck_assert_uint_eq(mm->blobs.len, 2); /* the model bytes + one mapping */
    /* saving inlines the data */
    void *data;
    size_t size;
    ck_assert_int_eq(poprt__onnx_save(mm, &data, &size), POPRT_OK);
    poprt__model *m2 = load_bytes(data, size, NULL, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    ck_assert(((const float *)poprt__tensor_data(poprt__graph_find(m2->graph, "ext_w")))[1] == 2);
    poprt__free(data);
    poprt__model_free(m2);
    poprt__model_free(mm);
    free(m.p);
    /* without length: to the end of the file must match the shape */
    m = ext_model("sub/../sub/w2.bin", "16", NULL, 0);
    mm = load_bytes(m.p, m.n, tmpdir, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    ck_assert(((const float *)poprt__tensor_data(poprt__graph_find(mm->graph, "ext_w")))[0] == 4);
    poprt__model_free(mm);
    free(m.p);

    /* rejected */
    ck_assert_int_eq(try_ext(outside, NULL, NULL, "ext_w"), POPRT_STATUS_INVALID_MODEL);
    ck_assert_int_eq(try_ext("../escape.bin", NULL, NULL, "../escape.bin"), POPRT_STATUS_INVALID_MODEL);
    ck_assert_int_eq(try_ext("sub/../../x.bin", NULL, NULL, "ext_w"), POPRT_STATUS_INVALID_MODEL);
    ck_assert_int_eq(try_ext("link.bin", NULL, NULL, "link.bin"), POPRT_STATUS_INVALID_MODEL);
    ck_assert_int_eq(try_ext("weights.bin", "100", NULL, "ext_w"), POPRT_STATUS_INVALID_MODEL);
    ck_assert_int_eq(try_ext("weights.bin", "20", "12", "ext_w"), POPRT_STATUS_INVALID_MODEL);
    ck_assert_int_eq(try_ext("weights.bin", "0", "8", "ext_w"), POPRT_STATUS_INVALID_MODEL); /* shorter than shape */
    ck_assert_int_eq(try_ext("weights.bin", "-4", NULL, "ext_w"), POPRT_STATUS_INVALID_MODEL);
    ck_assert_int_eq(try_ext("missing.bin", NULL, NULL, "ext_w"), POPRT_STATUS_IO_ERROR);
    /* a FIFO: refused at once, not waited on */
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/pipe.bin", tmpdir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(try_ext("pipe.bin", NULL, NULL, "not a regular file"), POPRT_STATUS_IO_ERROR);
    unlink(fifo);
    /* no folder (loaded from memory) */
    m = ext_model("weights.bin", NULL, NULL, 0);
    ck_assert_ptr_null(load_bytes(m.p, m.n, NULL, &st));
    ck_assert_int_eq(st, POPRT_STATUS_INVALID_MODEL);
    free(m.p);

    unlink(path);
    unlink(outside);
    snprintf(path, sizeof path, "%s/weights.bin", tmpdir);
    unlink(path);
    snprintf(path, sizeof path, "%s/sub/w2.bin", tmpdir);
    unlink(path);
    rmdir(sub);
    rmdir(tmpdir);
}
END_TEST

START_TEST(test_external_misaligned)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/poprt_onnx_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
    char path[512];
    uint8_t bytes[13];
    float w[3] = {7, 8, 9};
    bytes[0] = 0xee;
    memcpy(bytes + 1, w, 12);
    snprintf(path, sizeof path, "%s/w.bin", tmpdir);
    write_file(path, bytes, sizeof bytes);
    pbuf m = ext_model("w.bin", "1", "12", 0);
    poprt_status st;
    poprt__model *mm = load_bytes(m.p, m.n, tmpdir, &st);
    ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
    const poprt__tensor *t = poprt__graph_find(mm->graph, "ext_w");
    ck_assert_int_eq((uintptr_t)poprt__tensor_data(t) % 4, 0);
    ck_assert(((const float *)poprt__tensor_data(t))[2] == 9);
    poprt__model_free(mm);
    free(m.p);
    unlink(path);
    rmdir(tmpdir);
}
END_TEST

/* ---- sequences and optionals (test data) --------------------------------------- */

START_TEST(test_sequence_optional)
{
    pbuf s = {0}, t = {0};
    int64_t d2[1] = {2};
    f_str(&s, 1, "seq");
    f_varint(&s, 2, 1);
    for (int k = 0; k < 3; k++) {
        tensor_head(&t, "", POPRT_DTYPE_INT64, d2, 1);
        int64_t v[2] = {k, -k};
        f_packed(&t, 7, v, 2);
        f_msg(&s, 3, &t);
    }
    poprt__onnx_value v;
    ck_assert_int_eq(poprt__onnx_decode_sequence(s.p, s.n, &A, &v), POPRT_OK);
    ck_assert_str_eq(v.name, "seq");
    ck_assert_int_eq(v.kind, POPRT__KIND_SEQUENCE);
    ck_assert_int_eq(v.elem_kind, POPRT__KIND_TENSOR);
    ck_assert_uint_eq(v.n, 3);
    ck_assert_int_eq(((const int64_t *)v.elems[2].tensor.data)[1], -2);
    /* empty sequence */
    pbuf e = {0};
    f_varint(&e, 2, 1);
    ck_assert_int_eq(poprt__onnx_decode_sequence(e.p, e.n, &A, &v), POPRT_OK);
    ck_assert_uint_eq(v.n, 0);
    ck_assert_int_eq(v.elem_kind, POPRT__KIND_TENSOR);
    /* optional holding the sequence, and an empty optional */
    pbuf o = {0};
    f_str(&o, 1, "opt");
    f_varint(&o, 2, 3);
    f_msg(&o, 5, &s);
    ck_assert_int_eq(poprt__onnx_decode_optional(o.p, o.n, &A, &v), POPRT_OK);
    ck_assert(v.present && v.n == 1 && v.elem_kind == POPRT__KIND_SEQUENCE);
    ck_assert_uint_eq(v.elems[0].n, 3);
    free(o.p);
    memset(&o, 0, sizeof o);
    f_varint(&o, 2, 1);
    ck_assert_int_eq(poprt__onnx_decode_optional(o.p, o.n, &A, &v), POPRT_OK);
    ck_assert_int_eq(v.present, 0);
    ck_assert_int_eq(v.elem_kind, POPRT__KIND_TENSOR);
    /* malformed element names the error */
    free(o.p);
    memset(&o, 0, sizeof o);
    tensor_head(&t, "badelem", POPRT_DTYPE_INT64, d2, 1);
    f_msg(&o, 3, &t);
    ck_assert_int_eq(poprt__onnx_decode_optional(o.p, o.n, &A, &v), POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "badelem"));
    free(o.p);
    free(e.p);
}
END_TEST

/* ---- shared models (skipped without /work/shared) ------------------------------ */

START_TEST(test_shared_models_roundtrip)
{
    const char *models[] = {
        "/work/shared/models/light_squeezenet/model.onnx",
        "/work/shared/models/silero_vad_v4/model.onnx",
        "/work/shared/onnx-tests/node/test_if/model.onnx",
        "/work/shared/onnx-tests/node/test_loop11/model.onnx",
        "/work/shared/onnx-tests/node/test_dequantizelinear_int4/model.onnx",
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        if (access(models[i], R_OK) != 0)
            continue; /* skip when the shared data is absent */
        poprt__model *a = NULL, *b = NULL;
        poprt_status st = poprt__onnx_load_file(models[i], NULL, &a);
        ck_assert_msg(st == POPRT_OK, "%s: %s", models[i], poprt_last_error());
        void *data;
        size_t size;
        ck_assert_int_eq(poprt__onnx_save(a, &data, &size), POPRT_OK);
        poprt__model *c = load_bytes(data, size, NULL, &st);
        ck_assert_msg(st == POPRT_OK, "%s: %s", models[i], poprt_last_error());
        b = c;
        models_equal(a, b);
        poprt__free(data);
        poprt__model_free(a);
        poprt__model_free(b);
    }
}
END_TEST

START_TEST(test_shared_test_data)
{
    const char *files[] = {
        "/work/shared/onnx-tests/node/test_add/test_data_set_0/input_0.pb",
        "/work/shared/onnx-tests/node/test_cast_FLOAT_to_FLOAT16/test_data_set_0/output_0.pb",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        poprt__blob *b;
        if (access(files[i], R_OK) != 0)
            continue;
        ck_assert_int_eq(poprt__blob_map_file(files[i], &b), POPRT_OK);
        poprt__onnx_tensor t;
        ck_assert_msg(poprt__onnx_decode_tensor(b->data, b->size, &A, &t) == POPRT_OK, "%s", poprt_last_error());
        ck_assert_int_gt(t.nbytes, 0);
        poprt__blob_unref(b);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("onnx");
    TCase *tc = tcase_create("onnx");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_float_raw_zero_copy_and_misaligned);
    tcase_add_test(tc, test_typed_fields_all_dtypes);
    tcase_add_test(tc, test_raw_all_dtypes);
    tcase_add_test(tc, test_packed_subbyte);
    tcase_add_test(tc, test_tensor_errors);
    tcase_add_test(tc, test_model_load_and_roundtrip);
    tcase_add_test(tc, test_roundtrip_every_dtype);
    tcase_add_test(tc, test_roundtrip_unversioned);
    tcase_add_test(tc, test_model_malformed);
    tcase_add_test(tc, test_external_data);
    tcase_add_test(tc, test_external_misaligned);
    tcase_add_test(tc, test_sequence_optional);
    tcase_add_test(tc, test_shared_models_roundtrip);
    tcase_add_test(tc, test_shared_test_data);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
