/* Unit tests: elementwise and cast reference kernels, called directly
 * through a small kernel context, against hand-computed values:
 * broadcasting, integer semantics, narrow float rounding, attributes, and
 * the schemas' type/shape inference. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/ref/cast.h"
#include "kernels/ref/elementwise.h"
#include "runtime/runtime.h"

/* ---- a tiny harness: one node, up to 4 inputs, one output ------------------------ */

typedef struct tk {
    poprt__node node;
    poprt__attr attrs[4];
    struct poprt__exec ex;
    poprt__value in[4], out;
    poprt__value *inp[4], *outp;
    poprt__kctx k;
} tk;

static void tk_init(tk *t, const char *op, int opset)
{
    memset(t, 0, sizeof *t);
    t->node.name = "n0";
    t->node.op_type = op;
    t->node.domain = "";
    t->node.attrs = t->attrs;
    t->k.node = &t->node;
    t->k.opset = opset;
    t->k.in = t->inp;
    t->k.out = &t->outp;
    t->k.n_out = 1;
    t->k.exec = &t->ex;
    t->outp = &t->out;
}

static poprt__attr *tk_attr(tk *t, const char *name, poprt__attr_type type)
{
    poprt__attr *a = &t->attrs[t->node.n_attrs++];
    a->name = name;
    a->type = type;
    return a;
}
static void tk_attr_f(tk *t, const char *name, float v) { tk_attr(t, name, POPRT__ATTR_FLOAT)->f = v; }
static void tk_attr_i(tk *t, const char *name, int64_t v) { tk_attr(t, name, POPRT__ATTR_INT)->i = v; }
static void tk_attr_s(tk *t, const char *name, const char *v)
{
    poprt__attr *a = tk_attr(t, name, POPRT__ATTR_STRING);
    a->s = v;
    a->s_len = strlen(v);
}

static void set_tval(poprt__tval *tv, int32_t dt, int rank, const int64_t *dims, const void *data)
{
    tv->dtype = dt;
    tv->rank = rank;
    tv->numel = 1;
    for (int i = 0; i < rank; i++) {
        tv->dims[i] = dims[i];
        tv->numel *= dims[i];
    }
    tv->nbytes = (size_t)tv->numel * poprt_dtype_size((poprt_dtype)dt);
    tv->data = (void *)data;
}

/* Input i; NULL dims with rank 0 is a scalar. */
static void tk_in(tk *t, int i, int32_t dt, int rank, const int64_t *dims, const void *data)
{
    t->in[i].kind = POPRT__KIND_TENSOR;
    set_tval(&t->in[i].t, dt, rank, dims, data);
    t->inp[i] = &t->in[i];
    if (t->k.n_in < i + 1)
        t->k.n_in = i + 1;
}
static void tk_skip(tk *t, int i)
{
    t->inp[i] = NULL;
    if (t->k.n_in < i + 1)
        t->k.n_in = i + 1;
}
static void tk_out(tk *t, int32_t dt, int rank, const int64_t *dims, void *buf)
{
    t->out.kind = POPRT__KIND_TENSOR;
    set_tval(&t->out.t, dt, rank, dims, buf);
}
static poprt_status tk_run(tk *t, poprt__kernel_fn fn)
{
    poprt_status st = fn(&t->k);
    poprt__arena_free(&t->ex.strings);
    return st;
}

#define F32 POPRT_DTYPE_FLOAT
#define F16 POPRT_DTYPE_FLOAT16
#define I32 POPRT_DTYPE_INT32
#define I64 POPRT_DTYPE_INT64
#define U8 POPRT_DTYPE_UINT8
#define BOOL POPRT_DTYPE_BOOL

static void assert_f32(const float *got, const float *want, int n, float tol)
{
    for (int i = 0; i < n; i++) {
        if (isnan(want[i])) {
            ck_assert_msg(isnan(got[i]), "element %d: got %g, want nan", i, (double)got[i]);
            continue;
        }
        ck_assert_msg(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])),
                      "element %d: got %.9g, want %.9g", i, (double)got[i], (double)want[i]);
    }
}

/* ---- binary arithmetic and broadcasting ----------------------------------------- */

START_TEST(test_add_same_and_scalar)
{
    tk t;
    float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50}, s = 0.5f, y[5];
    int64_t d[1] = {5};
    tk_init(&t, "Add", 14);
    tk_in(&t, 0, F32, 1, d, a);
    tk_in(&t, 1, F32, 1, d, b);
    tk_out(&t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_add), POPRT_OK);
    assert_f32(y, (float[]){11, 22, 33, 44, 55}, 5, 0);

    tk_init(&t, "Sub", 14);
    tk_in(&t, 0, F32, 0, NULL, &s); /* scalar on the left */
    tk_in(&t, 1, F32, 1, d, b);
    tk_out(&t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_sub), POPRT_OK);
    assert_f32(y, (float[]){-9.5f, -19.5f, -29.5f, -39.5f, -49.5f}, 5, 0);

    tk_init(&t, "Div", 14);
    tk_in(&t, 0, F32, 1, d, a);
    tk_in(&t, 1, F32, 0, NULL, &s); /* scalar on the right */
    tk_out(&t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_div), POPRT_OK);
    assert_f32(y, (float[]){2, 4, 6, 8, 10}, 5, 0);
}
END_TEST

START_TEST(test_mul_broadcast_2d)
{
    /* [2,1] * [1,3] -> [2,3] */
    tk t;
    float a[2] = {2, 3}, b[3] = {1, 10, 100}, y[6];
    int64_t da[2] = {2, 1}, db[2] = {1, 3}, dy[2] = {2, 3};
    tk_init(&t, "Mul", 14);
    tk_in(&t, 0, F32, 2, da, a);
    tk_in(&t, 1, F32, 2, db, b);
    tk_out(&t, F32, 2, dy, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_mul), POPRT_OK);
    assert_f32(y, (float[]){2, 20, 200, 3, 30, 300}, 6, 0);

    /* [2,3] + [3] (row vector) */
    float m[6] = {0, 1, 2, 3, 4, 5}, r[3] = {100, 200, 300};
    int64_t dr[1] = {3};
    tk_init(&t, "Add", 14);
    tk_in(&t, 0, F32, 2, dy, m);
    tk_in(&t, 1, F32, 1, dr, r);
    tk_out(&t, F32, 2, dy, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_add), POPRT_OK);
    assert_f32(y, (float[]){100, 201, 302, 103, 204, 305}, 6, 0);
}
END_TEST

START_TEST(test_add_broadcast_4d)
{
    /* [2,3,1,4] + [3,5,1] -> [2,3,5,4], checked against index arithmetic */
    tk t;
    static float a[24], b[15], y[120];
    for (int i = 0; i < 24; i++)
        a[i] = (float)i;
    for (int i = 0; i < 15; i++)
        b[i] = (float)(1000 * i);
    int64_t da[4] = {2, 3, 1, 4}, db[3] = {3, 5, 1}, dy[4] = {2, 3, 5, 4};
    tk_init(&t, "Add", 14);
    tk_in(&t, 0, F32, 4, da, a);
    tk_in(&t, 1, F32, 3, db, b);
    tk_out(&t, F32, 4, dy, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_add), POPRT_OK);
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 3; c++)
            for (int h = 0; h < 5; h++)
                for (int w = 0; w < 4; w++) {
                    float want = a[(n * 3 + c) * 4 + w] + b[c * 5 + h];
                    ck_assert_float_eq(y[((n * 3 + c) * 5 + h) * 4 + w], want);
                }
}
END_TEST

/* Large enough to be split over a real thread pool: same bits as a naive
 * loop, including runs that start in the middle of a row. */
START_TEST(test_parallel_broadcast)
{
    enum { R = 301, C = 257 };
    static float a[R * C], b[C], col[R], y[R * C], y2[R * C];
    for (int i = 0; i < R * C; i++)
        a[i] = (float)(i % 97) * 0.25f;
    for (int i = 0; i < C; i++)
        b[i] = (float)i;
    for (int i = 0; i < R; i++)
        col[i] = (float)(i * 3);
    int64_t da[2] = {R, C}, db[1] = {C}, dc[2] = {R, 1};
    poprt__pool *pool = NULL;
    ck_assert_int_eq(poprt__pool_create(4, &pool), POPRT_OK);
    tk t;
    tk_init(&t, "Add", 14);
    t.ex.pool = pool;
    tk_in(&t, 0, F32, 2, da, a);
    tk_in(&t, 1, F32, 1, db, b);
    tk_out(&t, F32, 2, da, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_add), POPRT_OK);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            ck_assert_float_eq(y[r * C + c], a[r * C + c] + b[c]);
    /* [R,1] * [C] -> [R,C], broadcast on both sides */
    tk_init(&t, "Mul", 14);
    t.ex.pool = pool;
    tk_in(&t, 0, F32, 2, dc, col);
    tk_in(&t, 1, F32, 1, db, b);
    tk_out(&t, F32, 2, da, y2);
    ck_assert_int_eq(tk_run(&t, poprt__ref_mul), POPRT_OK);
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            ck_assert_float_eq(y2[r * C + c], col[r] * b[c]);
    tk_init(&t, "Sigmoid", 13);
    t.ex.pool = pool;
    tk_in(&t, 0, F32, 2, da, a);
    tk_out(&t, F32, 2, da, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_sigmoid), POPRT_OK);
    for (int i = 0; i < R * C; i += 101)
        ck_assert_float_eq_tol(y[i], 1.0f / (1.0f + expf(-a[i])), 1e-6f);
    poprt__pool_free(pool);
}
END_TEST

START_TEST(test_broadcast_mismatch)
{
    tk t;
    float a[3] = {0}, b[2] = {0}, y[3];
    int64_t da[1] = {3}, db[1] = {2};
    tk_init(&t, "Add", 14);
    tk_in(&t, 0, F32, 1, da, a);
    tk_in(&t, 1, F32, 1, db, b);
    tk_out(&t, F32, 1, da, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_add), POPRT_STATUS_SHAPE_MISMATCH);
}
END_TEST

START_TEST(test_int_div_mod)
{
    tk t;
    int32_t a[5] = {7, -7, 7, -7, 5}, b[5] = {2, 2, -2, -2, 0}, y[5];
    int64_t d[1] = {5};
    tk_init(&t, "Div", 14);
    tk_in(&t, 0, I32, 1, d, a);
    tk_in(&t, 1, I32, 1, d, b);
    tk_out(&t, I32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_div), POPRT_OK);
    ck_assert_int_eq(y[0], 3);
    ck_assert_int_eq(y[1], -3); /* truncates toward zero */
    ck_assert_int_eq(y[2], -3);
    ck_assert_int_eq(y[3], 3);
    ck_assert_int_eq(y[4], 0); /* x/0 does not trap */

    int64_t ma[4] = {-4, 7, 5, -7}, mb[4] = {3, -3, -3, 3}, my[4];
    int64_t d4[1] = {4};
    tk_init(&t, "Mod", 13); /* fmod=0: sign of the divisor (Python) */
    tk_in(&t, 0, I64, 1, d4, ma);
    tk_in(&t, 1, I64, 1, d4, mb);
    tk_out(&t, I64, 1, d4, my);
    ck_assert_int_eq(tk_run(&t, poprt__ref_mod), POPRT_OK);
    ck_assert_int_eq(my[0], 2);
    ck_assert_int_eq(my[1], -2);
    ck_assert_int_eq(my[2], -1);
    ck_assert_int_eq(my[3], 2);

    tk_init(&t, "Mod", 13); /* fmod=1: sign of the dividend (C) */
    tk_attr_i(&t, "fmod", 1);
    tk_in(&t, 0, I64, 1, d4, ma);
    tk_in(&t, 1, I64, 1, d4, mb);
    tk_out(&t, I64, 1, d4, my);
    ck_assert_int_eq(tk_run(&t, poprt__ref_mod), POPRT_OK);
    ck_assert_int_eq(my[0], -1);
    ck_assert_int_eq(my[1], 1);
    ck_assert_int_eq(my[2], 2);
    ck_assert_int_eq(my[3], -1);
}
END_TEST

START_TEST(test_float_mod)
{
    tk t;
    float a[2] = {-4.5f, 4.5f}, b[2] = {2.0f, -2.0f}, y[2];
    int64_t d[1] = {2};
    tk_init(&t, "Mod", 13);
    tk_attr_i(&t, "fmod", 1);
    tk_in(&t, 0, F32, 1, d, a);
    tk_in(&t, 1, F32, 1, d, b);
    tk_out(&t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_mod), POPRT_OK);
    assert_f32(y, (float[]){-0.5f, 0.5f}, 2, 0);
    tk_init(&t, "Mod", 13);
    tk_in(&t, 0, F32, 1, d, a);
    tk_in(&t, 1, F32, 1, d, b);
    tk_out(&t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_mod), POPRT_OK);
    assert_f32(y, (float[]){1.5f, -1.5f}, 2, 0);
}
END_TEST

START_TEST(test_pow_exact_int)
{
    tk t;
    int64_t a[3] = {3, -3, 2}, b[3] = {39, 3, -1}, y[3];
    int64_t d[1] = {3};
    tk_init(&t, "Pow", 15);
    tk_in(&t, 0, I64, 1, d, a);
    tk_in(&t, 1, I64, 1, d, b);
    tk_out(&t, I64, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_pow), POPRT_OK);
    ck_assert(y[0] == 4052555153018976267ll); /* 3^39: exact, beyond double */
    ck_assert_int_eq(y[1], -27);
    ck_assert_int_eq(y[2], 0);

    /* float base, int64 exponent (mixed types) */
    float fa[2] = {2.0f, 0.5f}, fy[2];
    int64_t e[1] = {3};
    int64_t d2[1] = {2}, d1[1] = {1};
    tk_init(&t, "Pow", 15);
    tk_in(&t, 0, F32, 1, d2, fa);
    tk_in(&t, 1, I64, 1, d1, e);
    tk_out(&t, F32, 1, d2, fy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_pow), POPRT_OK);
    assert_f32(fy, (float[]){8.0f, 0.125f}, 2, 0);

    /* int base, float exponent */
    int32_t ia[3] = {1, 2, 3}, iy[3];
    float fe[3] = {1, 2, 3};
    tk_init(&t, "Pow", 15);
    tk_in(&t, 0, I32, 1, d, ia);
    tk_in(&t, 1, F32, 1, d, fe);
    tk_out(&t, I32, 1, d, iy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_pow), POPRT_OK);
    ck_assert_int_eq(iy[0], 1);
    ck_assert_int_eq(iy[1], 4);
    ck_assert_int_eq(iy[2], 27);
}
END_TEST

START_TEST(test_int_wrap)
{
    tk t;
    int8_t a[2] = {127, -128}, b[2] = {1, -1}, y[2];
    int64_t d[1] = {2};
    tk_init(&t, "Add", 14);
    tk_in(&t, 0, POPRT_DTYPE_INT8, 1, d, a);
    tk_in(&t, 1, POPRT_DTYPE_INT8, 1, d, b);
    tk_out(&t, POPRT_DTYPE_INT8, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_add), POPRT_OK);
    ck_assert_int_eq(y[0], -128);
    ck_assert_int_eq(y[1], 127);

    uint64_t ua[2] = {18446744073709551615ull, 10}, ub[2] = {2, 20}, uy[2];
    tk_init(&t, "Div", 14);
    tk_in(&t, 0, POPRT_DTYPE_UINT64, 1, d, ua);
    tk_in(&t, 1, POPRT_DTYPE_UINT64, 1, d, ub);
    tk_out(&t, POPRT_DTYPE_UINT64, 1, d, uy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_div), POPRT_OK);
    ck_assert(uy[0] == 9223372036854775807ull);
    ck_assert(uy[1] == 0);
}
END_TEST

START_TEST(test_bitshift_bitwise)
{
    tk t;
    uint8_t a[3] = {1, 3, 255}, b[3] = {7, 7, 4}, y[3];
    int64_t d[1] = {3};
    tk_init(&t, "BitShift", 11);
    tk_attr_s(&t, "direction", "LEFT");
    tk_in(&t, 0, U8, 1, d, a);
    tk_in(&t, 1, U8, 1, d, b);
    tk_out(&t, U8, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_bitshift), POPRT_OK);
    ck_assert_uint_eq(y[0], 128);
    ck_assert_uint_eq(y[1], 128); /* 384 wraps */
    ck_assert_uint_eq(y[2], 240);
    tk_init(&t, "BitShift", 11);
    tk_attr_s(&t, "direction", "RIGHT");
    tk_in(&t, 0, U8, 1, d, a);
    tk_in(&t, 1, U8, 1, d, b);
    tk_out(&t, U8, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_bitshift), POPRT_OK);
    ck_assert_uint_eq(y[0], 0);
    ck_assert_uint_eq(y[2], 15);

    int32_t ia[2] = {12, -1}, ib[2] = {10, 6}, iy[2];
    int64_t d2[1] = {2};
    tk_init(&t, "BitwiseAnd", 18);
    tk_in(&t, 0, I32, 1, d2, ia);
    tk_in(&t, 1, I32, 1, d2, ib);
    tk_out(&t, I32, 1, d2, iy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_bitwise_and), POPRT_OK);
    ck_assert_int_eq(iy[0], 8);
    ck_assert_int_eq(iy[1], 6);
    tk_init(&t, "BitwiseXor", 18);
    tk_in(&t, 0, I32, 1, d2, ia);
    tk_in(&t, 1, I32, 1, d2, ib);
    tk_out(&t, I32, 1, d2, iy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_bitwise_xor), POPRT_OK);
    ck_assert_int_eq(iy[0], 6);
    ck_assert_int_eq(iy[1], -7);
    tk_init(&t, "BitwiseNot", 18);
    tk_in(&t, 0, I32, 1, d2, ia);
    tk_out(&t, I32, 1, d2, iy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_bitwise_not), POPRT_OK);
    ck_assert_int_eq(iy[0], -13);
    ck_assert_int_eq(iy[1], 0);
}
END_TEST

START_TEST(test_logical)
{
    tk t;
    uint8_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1}, y[4];
    int64_t d[1] = {4};
    tk_init(&t, "Xor", 7);
    tk_in(&t, 0, BOOL, 1, d, a);
    tk_in(&t, 1, BOOL, 1, d, b);
    tk_out(&t, BOOL, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_xor), POPRT_OK);
    ck_assert(y[0] == 0 && y[1] == 1 && y[2] == 1 && y[3] == 0);
    tk_init(&t, "And", 7);
    tk_in(&t, 0, BOOL, 1, d, a);
    tk_in(&t, 1, BOOL, 1, d, b);
    tk_out(&t, BOOL, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_and), POPRT_OK);
    ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 0 && y[3] == 1);
    tk_init(&t, "Not", 1);
    tk_in(&t, 0, BOOL, 1, d, a);
    tk_out(&t, BOOL, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_not), POPRT_OK);
    ck_assert(y[0] == 1 && y[1] == 1 && y[2] == 0 && y[3] == 0);
}
END_TEST

/* ---- comparisons ------------------------------------------------------------------ */

START_TEST(test_compare)
{
    tk t;
    float a[4] = {1, 2, NAN, 4}, b[1] = {2};
    uint8_t y[4];
    int64_t d[1] = {4}, d1[1] = {1};
    tk_init(&t, "Less", 13);
    tk_in(&t, 0, F32, 1, d, a);
    tk_in(&t, 1, F32, 1, d1, b);
    tk_out(&t, BOOL, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_less), POPRT_OK);
    ck_assert(y[0] == 1 && y[1] == 0 && y[2] == 0 && y[3] == 0);
    tk_init(&t, "GreaterOrEqual", 16);
    tk_in(&t, 0, F32, 1, d, a);
    tk_in(&t, 1, F32, 1, d1, b);
    tk_out(&t, BOOL, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_greater_or_equal), POPRT_OK);
    ck_assert(y[0] == 0 && y[1] == 1 && y[2] == 0 && y[3] == 1);

    /* int64 beyond double precision must compare exactly */
    int64_t ia[2] = {9007199254740993ll, -5}, ib[2] = {9007199254740992ll, -5};
    int64_t d2[1] = {2};
    tk_init(&t, "Equal", 13);
    tk_in(&t, 0, I64, 1, d2, ia);
    tk_in(&t, 1, I64, 1, d2, ib);
    tk_out(&t, BOOL, 1, d2, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_equal), POPRT_OK);
    ck_assert(y[0] == 0 && y[1] == 1);
    tk_init(&t, "Greater", 13);
    tk_in(&t, 0, I64, 1, d2, ia);
    tk_in(&t, 1, I64, 1, d2, ib);
    tk_out(&t, BOOL, 1, d2, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_greater), POPRT_OK);
    ck_assert(y[0] == 1 && y[1] == 0);

    /* strings */
    const char *sa[3] = {"a", "bc", ""}, *sb[1] = {"bc"};
    int64_t d3[1] = {3};
    tk_init(&t, "Equal", 19);
    tk_in(&t, 0, POPRT_DTYPE_STRING, 1, d3, sa);
    tk_in(&t, 1, POPRT_DTYPE_STRING, 1, d1, sb);
    tk_out(&t, BOOL, 1, d3, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_equal), POPRT_OK);
    ck_assert(y[0] == 0 && y[1] == 1 && y[2] == 0);
}
END_TEST

/* ---- float16 computed in float32 and rounded back -------------------------------- */

START_TEST(test_half_add)
{
    tk t;
    uint16_t a[2] = {0x3C00, 0x3C01}, b[2] = {0x1000, 0x1000}, y[2]; /* b = 2^-11 */
    int64_t d[1] = {2};
    tk_init(&t, "Add", 14);
    tk_in(&t, 0, F16, 1, d, a);
    tk_in(&t, 1, F16, 1, d, b);
    tk_out(&t, F16, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_add), POPRT_OK);
    ck_assert_uint_eq(y[0], 0x3C00); /* tie -> even */
    ck_assert_uint_eq(y[1], 0x3C02); /* tie -> even */

    uint16_t bf[2] = {0x3F80, 0xC000}, bfy[2]; /* bfloat16 1, -2 */
    tk_init(&t, "Relu", 14);
    tk_in(&t, 0, POPRT_DTYPE_BFLOAT16, 1, d, bf);
    tk_out(&t, POPRT_DTYPE_BFLOAT16, 1, d, bfy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_relu), POPRT_OK);
    ck_assert_uint_eq(bfy[0], 0x3F80);
    ck_assert_uint_eq(bfy[1], 0x0000);
}
END_TEST

/* ---- unary math and activations --------------------------------------------------- */

static void run_unary_f32(poprt__kernel_fn fn, tk *t, const float *x, float *y, int n)
{
    int64_t d[1] = {n};
    tk_in(t, 0, F32, 1, d, x);
    tk_out(t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(t, fn), POPRT_OK);
}

START_TEST(test_unary_math)
{
    tk t;
    float x[5] = {-2.5f, -0.5f, 0.5f, 1.5f, 2.5f}, y[5];
    tk_init(&t, "Round", 11);
    run_unary_f32(poprt__ref_round, &t, x, y, 5);
    assert_f32(y, (float[]){-2, -0.0f, 0, 2, 2}, 5, 0); /* half to even */
    tk_init(&t, "Floor", 13);
    run_unary_f32(poprt__ref_floor, &t, x, y, 5);
    assert_f32(y, (float[]){-3, -1, 0, 1, 2}, 5, 0);
    tk_init(&t, "Ceil", 13);
    run_unary_f32(poprt__ref_ceil, &t, x, y, 5);
    assert_f32(y, (float[]){-2, -0.0f, 1, 2, 3}, 5, 0);
    tk_init(&t, "Abs", 13);
    run_unary_f32(poprt__ref_abs, &t, x, y, 5);
    assert_f32(y, (float[]){2.5f, 0.5f, 0.5f, 1.5f, 2.5f}, 5, 0);
    tk_init(&t, "Reciprocal", 13);
    run_unary_f32(poprt__ref_reciprocal, &t, x, y, 5);
    assert_f32(y, (float[]){-0.4f, -2, 2, 1.0f / 1.5f, 0.4f}, 5, 1e-7f);
    tk_init(&t, "Exp", 13);
    run_unary_f32(poprt__ref_exp, &t, x, y, 5);
    assert_f32(y, (float[]){0.082084999f, 0.60653066f, 1.6487213f, 4.4816891f, 12.182494f}, 5,
               1e-6f);
    tk_init(&t, "Erf", 13);
    run_unary_f32(poprt__ref_erf, &t, x, y, 5);
    assert_f32(y, (float[]){-0.99959305f, -0.52049988f, 0.52049988f, 0.96610515f, 0.99959305f}, 5,
               1e-6f);
    float s[4] = {-3, 0, NAN, 7}, sy[4];
    tk_init(&t, "Sign", 13);
    run_unary_f32(poprt__ref_sign, &t, s, sy, 4);
    assert_f32(sy, (float[]){-1, 0, NAN, 1}, 4, 0);
}
END_TEST

START_TEST(test_unary_int)
{
    tk t;
    int8_t x[4] = {-128, -5, 0, 7}, y[4];
    int64_t d[1] = {4};
    tk_init(&t, "Abs", 13);
    tk_in(&t, 0, POPRT_DTYPE_INT8, 1, d, x);
    tk_out(&t, POPRT_DTYPE_INT8, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_abs), POPRT_OK);
    ck_assert(y[0] == -128 && y[1] == 5 && y[2] == 0 && y[3] == 7); /* wraps like numpy */
    tk_init(&t, "Neg", 13);
    tk_in(&t, 0, POPRT_DTYPE_INT8, 1, d, x);
    tk_out(&t, POPRT_DTYPE_INT8, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_neg), POPRT_OK);
    ck_assert(y[0] == -128 && y[1] == 5 && y[2] == 0 && y[3] == -7);
    tk_init(&t, "Sign", 13);
    tk_in(&t, 0, POPRT_DTYPE_INT8, 1, d, x);
    tk_out(&t, POPRT_DTYPE_INT8, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_sign), POPRT_OK);
    ck_assert(y[0] == -1 && y[1] == -1 && y[2] == 0 && y[3] == 1);
    tk_init(&t, "Relu", 14);
    tk_in(&t, 0, POPRT_DTYPE_INT8, 1, d, x);
    tk_out(&t, POPRT_DTYPE_INT8, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_relu), POPRT_OK);
    ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 0 && y[3] == 7);
}
END_TEST

START_TEST(test_activations)
{
    tk t;
    float x[4] = {-2, -0.5f, 0, 3}, y[4];
    tk_init(&t, "LeakyRelu", 16);
    tk_attr_f(&t, "alpha", 0.1f);
    run_unary_f32(poprt__ref_leaky_relu, &t, x, y, 4);
    assert_f32(y, (float[]){-0.2f, -0.05f, 0, 3}, 4, 1e-7f);
    tk_init(&t, "Elu", 6);
    run_unary_f32(poprt__ref_elu, &t, x, y, 4);
    assert_f32(y, (float[]){-0.86466473f, -0.39346933f, 0, 3}, 4, 1e-6f);
    tk_init(&t, "Sigmoid", 13);
    run_unary_f32(poprt__ref_sigmoid, &t, x, y, 4);
    assert_f32(y, (float[]){0.11920292f, 0.37754067f, 0.5f, 0.95257413f}, 4, 1e-6f);
    tk_init(&t, "HardSigmoid", 6);
    run_unary_f32(poprt__ref_hard_sigmoid, &t, x, y, 4);
    assert_f32(y, (float[]){0.1f, 0.4f, 0.5f, 1.0f}, 4, 1e-6f);
    tk_init(&t, "HardSwish", 14);
    run_unary_f32(poprt__ref_hard_swish, &t, x, y, 4);
    assert_f32(y, (float[]){-2 * (1.0f / 6), -0.5f * (0.5f - 0.5f / 6), 0, 3}, 4, 1e-6f);
    tk_init(&t, "Softplus", 1);
    run_unary_f32(poprt__ref_softplus, &t, x, y, 4);
    assert_f32(y, (float[]){0.12692801f, 0.47407698f, 0.69314718f, 3.0485873f}, 4, 1e-6f);
    tk_init(&t, "Softsign", 1);
    run_unary_f32(poprt__ref_softsign, &t, x, y, 4);
    assert_f32(y, (float[]){-2.0f / 3, -1.0f / 3, 0, 0.75f}, 4, 1e-6f);
    tk_init(&t, "Gelu", 20);
    run_unary_f32(poprt__ref_gelu, &t, x, y, 4);
    assert_f32(y, (float[]){-0.04550026f, -0.15426877f, 0, 2.9959502f}, 4, 1e-6f);
    tk_init(&t, "Gelu", 20);
    tk_attr_s(&t, "approximate", "tanh");
    run_unary_f32(poprt__ref_gelu, &t, x, y, 4);
    assert_f32(y, (float[]){-0.04540231f, -0.15428599f, 0, 2.9963627f}, 4, 1e-6f);
    tk_init(&t, "ThresholdedRelu", 10);
    tk_attr_f(&t, "alpha", 2.0f);
    run_unary_f32(poprt__ref_thresholded_relu, &t, x, y, 4);
    assert_f32(y, (float[]){0, 0, 0, 3}, 4, 0);
    tk_init(&t, "Shrink", 9);
    tk_attr_f(&t, "lambd", 1.0f);
    tk_attr_f(&t, "bias", 0.5f);
    run_unary_f32(poprt__ref_shrink, &t, x, y, 4);
    assert_f32(y, (float[]){-1.5f, 0, 0, 2.5f}, 4, 0);
    tk_init(&t, "Selu", 6);
    run_unary_f32(poprt__ref_selu, &t, x, y, 4);
    assert_f32(y, (float[]){-1.5201665f, -0.69175819f, 0, 3.1521031f}, 4, 1e-6f);
    tk_init(&t, "Celu", 12);
    tk_attr_f(&t, "alpha", 2.0f);
    run_unary_f32(poprt__ref_celu, &t, x, y, 4);
    assert_f32(y, (float[]){-1.2642411f, -0.44239843f, 0, 3}, 4, 1e-6f);
    tk_init(&t, "Mish", 18);
    run_unary_f32(poprt__ref_mish, &t, x, y, 4);
    assert_f32(y, (float[]){-0.25250148f, -0.22074377f, 0, 2.986535f}, 4, 1e-6f);
}
END_TEST

START_TEST(test_prelu_broadcast)
{
    /* slope per channel [3,1] against x [2,3,2] */
    tk t;
    float x[12] = {-1, 1, -1, 1, -1, 1, -2, 2, -2, 2, -2, 2}, s[3] = {0.1f, 0.2f, 0.3f}, y[12];
    int64_t dx[3] = {2, 3, 2}, ds[2] = {3, 1};
    tk_init(&t, "PRelu", 16);
    tk_in(&t, 0, F32, 3, dx, x);
    tk_in(&t, 1, F32, 2, ds, s);
    tk_out(&t, F32, 3, dx, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_prelu), POPRT_OK);
    assert_f32(y, (float[]){-0.1f, 1, -0.2f, 1, -0.3f, 1, -0.2f, 2, -0.4f, 2, -0.6f, 2}, 12, 1e-7f);
}
END_TEST

START_TEST(test_isnan_isinf)
{
    tk t;
    float x[4] = {1, NAN, INFINITY, -INFINITY};
    uint8_t y[4];
    int64_t d[1] = {4};
    tk_init(&t, "IsNaN", 13);
    tk_in(&t, 0, F32, 1, d, x);
    tk_out(&t, BOOL, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_isnan), POPRT_OK);
    ck_assert(y[0] == 0 && y[1] == 1 && y[2] == 0 && y[3] == 0);
    tk_init(&t, "IsInf", 10);
    tk_attr_i(&t, "detect_positive", 0);
    tk_in(&t, 0, F32, 1, d, x);
    tk_out(&t, BOOL, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_isinf), POPRT_OK);
    ck_assert(y[0] == 0 && y[1] == 0 && y[2] == 0 && y[3] == 1);
}
END_TEST

/* ---- variadic, Where, Clip --------------------------------------------------------- */

START_TEST(test_variadic)
{
    tk t;
    float a[3] = {1, 2, 3}, b[1] = {10}, c[6] = {100, 200, 300, 400, 500, 600}, y[6];
    int64_t da[1] = {3}, db[1] = {1}, dc[2] = {2, 3};
    tk_init(&t, "Sum", 13);
    tk_in(&t, 0, F32, 1, da, a);
    tk_in(&t, 1, F32, 1, db, b);
    tk_in(&t, 2, F32, 2, dc, c);
    tk_out(&t, F32, 2, dc, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_sum), POPRT_OK);
    assert_f32(y, (float[]){111, 212, 313, 411, 512, 613}, 6, 0);
    tk_init(&t, "Mean", 13);
    tk_in(&t, 0, F32, 1, da, a);
    tk_in(&t, 1, F32, 1, db, b);
    tk_in(&t, 2, F32, 2, dc, c);
    tk_out(&t, F32, 2, dc, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_mean), POPRT_OK);
    assert_f32(y, (float[]){37, 212.0f / 3, 313.0f / 3, 137, 512.0f / 3, 613.0f / 3}, 6, 1e-7f);

    float m1[3] = {1, NAN, 5}, m2[3] = {4, 2, 3}, my[3];
    tk_init(&t, "Max", 13);
    tk_in(&t, 0, F32, 1, da, m1);
    tk_in(&t, 1, F32, 1, da, m2);
    tk_out(&t, F32, 1, da, my);
    ck_assert_int_eq(tk_run(&t, poprt__ref_max), POPRT_OK);
    assert_f32(my, (float[]){4, NAN, 5}, 3, 0); /* NaN propagates */

    int32_t i1[3] = {-1, 5, 3}, i2[1] = {2}, iy[3];
    tk_init(&t, "Min", 13);
    tk_in(&t, 0, I32, 1, da, i1);
    tk_in(&t, 1, I32, 1, db, i2);
    tk_out(&t, I32, 1, da, iy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_min), POPRT_OK);
    ck_assert(iy[0] == -1 && iy[1] == 2 && iy[2] == 2);

    /* one input: a copy */
    tk_init(&t, "Max", 13);
    tk_in(&t, 0, I32, 1, da, i1);
    tk_out(&t, I32, 1, da, iy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_max), POPRT_OK);
    ck_assert(iy[0] == -1 && iy[1] == 5 && iy[2] == 3);
}
END_TEST

START_TEST(test_where)
{
    tk t;
    uint8_t c[2] = {1, 0};
    int64_t x[3] = {1, 2, 3}, yv[1] = {-7}, o[6];
    int64_t dc[2] = {2, 1}, dx[1] = {3}, dy[1] = {1}, dout[2] = {2, 3};
    tk_init(&t, "Where", 16);
    tk_in(&t, 0, BOOL, 2, dc, c);
    tk_in(&t, 1, I64, 1, dx, x);
    tk_in(&t, 2, I64, 1, dy, yv);
    tk_out(&t, I64, 2, dout, o);
    ck_assert_int_eq(tk_run(&t, poprt__ref_where), POPRT_OK);
    ck_assert(o[0] == 1 && o[1] == 2 && o[2] == 3 && o[3] == -7 && o[4] == -7 && o[5] == -7);
}
END_TEST

START_TEST(test_clip)
{
    tk t;
    float x[4] = {-5, -0.5f, 0.5f, 5}, y[4], lo = -1, hi = 1;
    int64_t d[1] = {4};
    tk_init(&t, "Clip", 6);
    tk_attr_f(&t, "min", -1);
    tk_attr_f(&t, "max", 1);
    run_unary_f32(poprt__ref_clip, &t, x, y, 4);
    assert_f32(y, (float[]){-1, -0.5f, 0.5f, 1}, 4, 0);
    tk_init(&t, "Clip", 13); /* only max given */
    tk_in(&t, 0, F32, 1, d, x);
    tk_skip(&t, 1);
    tk_in(&t, 2, F32, 0, NULL, &hi);
    tk_out(&t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_clip), POPRT_OK);
    assert_f32(y, (float[]){-5, -0.5f, 0.5f, 1}, 4, 0);
    tk_init(&t, "Clip", 13); /* only min given */
    tk_in(&t, 0, F32, 1, d, x);
    tk_in(&t, 1, F32, 0, NULL, &lo);
    tk_out(&t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_clip), POPRT_OK);
    assert_f32(y, (float[]){-1, -0.5f, 0.5f, 5}, 4, 0);

    int32_t ix[3] = {-10, 3, 10}, ilo = -2, ihi = 4, iy[3];
    int64_t d3[1] = {3};
    tk_init(&t, "Clip", 13);
    tk_in(&t, 0, I32, 1, d3, ix);
    tk_in(&t, 1, I32, 0, NULL, &ilo);
    tk_in(&t, 2, I32, 0, NULL, &ihi);
    tk_out(&t, I32, 1, d3, iy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_clip), POPRT_OK);
    ck_assert(iy[0] == -2 && iy[1] == 3 && iy[2] == 4);
}
END_TEST

/* ---- Cast ------------------------------------------------------------------------- */

START_TEST(test_cast_numbers)
{
    tk t;
    float x[5] = {1.5f, -2.7f, 1e6f, NAN, 300.0f};
    int64_t d[1] = {5};
    uint8_t f8[5];
    tk_init(&t, "Cast", 19);
    tk_attr_i(&t, "to", POPRT_DTYPE_FLOAT8E4M3FN);
    tk_in(&t, 0, F32, 1, d, x);
    tk_out(&t, POPRT_DTYPE_FLOAT8E4M3FN, 1, d, f8);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_OK);
    ck_assert_uint_eq(f8[0], 0x3C);
    ck_assert_uint_eq(f8[1], 0xC3); /* -2.75 */
    ck_assert_uint_eq(f8[2], 0x7E); /* saturates */
    ck_assert_uint_eq(f8[3], 0x7F);
    tk_init(&t, "Cast", 19);
    tk_attr_i(&t, "to", POPRT_DTYPE_FLOAT8E4M3FN);
    tk_attr_i(&t, "saturate", 0);
    tk_in(&t, 0, F32, 1, d, x);
    tk_out(&t, POPRT_DTYPE_FLOAT8E4M3FN, 1, d, f8);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_OK);
    ck_assert_uint_eq(f8[2], 0x7F); /* overflow -> NaN */

    int8_t i8[5];
    tk_init(&t, "Cast", 19);
    tk_attr_i(&t, "to", POPRT_DTYPE_INT8);
    tk_in(&t, 0, F32, 1, d, x);
    tk_out(&t, POPRT_DTYPE_INT8, 1, d, i8);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_OK);
    ck_assert_int_eq(i8[0], 1);
    ck_assert_int_eq(i8[1], -2);
    ck_assert_int_eq(i8[4], 44); /* 300 wraps */

    int8_t i4[5];
    int64_t iv[5] = {-9, -8, 7, 8, 15};
    tk_init(&t, "Cast", 21);
    tk_attr_i(&t, "to", POPRT_DTYPE_INT4);
    tk_in(&t, 0, I64, 1, d, iv);
    tk_out(&t, POPRT_DTYPE_INT4, 1, d, i4);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_OK);
    ck_assert(i4[0] == 7 && i4[1] == -8 && i4[2] == 7 && i4[3] == -8 && i4[4] == -1);

    uint8_t e8[3];
    float ev[3] = {1.5f, 1.25f, 3.0f};
    int64_t d3[1] = {3};
    tk_init(&t, "Cast", 24);
    tk_attr_i(&t, "to", POPRT_DTYPE_FLOAT8E8M0);
    tk_attr_s(&t, "round_mode", "nearest");
    tk_in(&t, 0, F32, 1, d3, ev);
    tk_out(&t, POPRT_DTYPE_FLOAT8E8M0, 1, d3, e8);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_OK);
    ck_assert(e8[0] == 0x80 && e8[1] == 0x7F && e8[2] == 0x81);
    tk_init(&t, "Cast", 24);
    tk_attr_i(&t, "to", POPRT_DTYPE_FLOAT8E8M0);
    tk_attr_s(&t, "round_mode", "down");
    tk_in(&t, 0, F32, 1, d3, ev);
    tk_out(&t, POPRT_DTYPE_FLOAT8E8M0, 1, d3, e8);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_OK);
    ck_assert(e8[0] == 0x7F && e8[1] == 0x7F && e8[2] == 0x80);
}
END_TEST

START_TEST(test_cast_strings)
{
    tk t;
    const char *s[6] = {"0.5", "NaN", "-INF", "+INF", "1e-5", " 7 "};
    float y[6];
    int64_t d[1] = {6};
    tk_init(&t, "Cast", 19);
    tk_attr_i(&t, "to", F32);
    tk_in(&t, 0, POPRT_DTYPE_STRING, 1, d, s);
    tk_out(&t, F32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_OK);
    ck_assert_float_eq(y[0], 0.5f);
    ck_assert(isnan(y[1]));
    ck_assert(isinf(y[2]) && y[2] < 0);
    ck_assert(isinf(y[3]) && y[3] > 0);
    ck_assert_float_eq(y[4], 1e-5f);
    ck_assert_float_eq(y[5], 7.0f);
    /* a string that is not a number is an error naming it, not a zero */
    const char *bad[3] = {"1", "abc", ""};
    int64_t d3[1] = {3};
    tk_init(&t, "Cast", 19);
    tk_attr_i(&t, "to", F32);
    tk_in(&t, 0, POPRT_DTYPE_STRING, 1, d3, bad);
    tk_out(&t, F32, 1, d3, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_STATUS_RUNTIME_ERROR);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "element 1 \"abc\""));

    const char *is[2] = {"9007199254740993", "-12"};
    int64_t iy[2], d2[1] = {2};
    tk_init(&t, "Cast", 19);
    tk_attr_i(&t, "to", I64);
    tk_in(&t, 0, POPRT_DTYPE_STRING, 1, d2, is);
    tk_out(&t, I64, 1, d2, iy);
    ck_assert_int_eq(tk_run(&t, poprt__ref_cast), POPRT_OK);
    ck_assert(iy[0] == 9007199254740993ll && iy[1] == -12);

    /* float -> string in numpy's str() style */
    float fx[7] = {0.47892547f, 3.0f, NAN, -INFINITY, 1e-5f, 1e20f, -0.0f};
    char *out[7];
    int64_t d7[1] = {7};
    tk_init(&t, "Cast", 19);
    tk_attr_i(&t, "to", POPRT_DTYPE_STRING);
    tk_in(&t, 0, F32, 1, d7, fx);
    tk_out(&t, POPRT_DTYPE_STRING, 1, d7, out);
    ck_assert_int_eq(t.k.node->op_type[0], 'C');
    ck_assert_int_eq(poprt__ref_cast(&t.k), POPRT_OK);
    ck_assert_str_eq(out[0], "0.47892547");
    ck_assert_str_eq(out[1], "3.0");
    ck_assert_str_eq(out[2], "nan");
    ck_assert_str_eq(out[3], "-inf");
    ck_assert_str_eq(out[4], "1e-05");
    ck_assert_str_eq(out[5], "1e+20");
    ck_assert_str_eq(out[6], "-0.0");
    poprt__arena_free(&t.ex.strings);
}
END_TEST

START_TEST(test_bitcast)
{
    tk t;
    float x[2] = {1.0f, -2.0f};
    int32_t y[2];
    int64_t d[1] = {2};
    tk_init(&t, "BitCast", 26);
    tk_attr_i(&t, "to", I32);
    tk_in(&t, 0, F32, 1, d, x);
    tk_out(&t, I32, 1, d, y);
    ck_assert_int_eq(tk_run(&t, poprt__ref_bitcast), POPRT_OK);
    ck_assert(y[0] == 0x3F800000 && (uint32_t)y[1] == 0xC0000000u);
    int64_t z[2];
    tk_init(&t, "BitCast", 26);
    tk_in(&t, 0, F32, 1, d, x);
    tk_out(&t, I64, 1, d, z);
    ck_assert_int_eq(tk_run(&t, poprt__ref_bitcast), POPRT_STATUS_INVALID_ARGUMENT);
}
END_TEST

/* ---- schemas: inference ---------------------------------------------------------- */

START_TEST(test_infer_broadcast_and_cast)
{
    poprt__arena arena;
    poprt__arena_init(&arena);
    poprt__node node = {0};
    node.name = "n";
    node.op_type = "Add";
    node.domain = "";
    poprt__dim da[3] = {{2, NULL}, {1, NULL}, {-1, "N"}}, db[2] = {{5, NULL}, {1, NULL}};
    poprt__type ta = {POPRT__KIND_TENSOR, F32, 3, da, NULL};
    poprt__type tb = {POPRT__KIND_TENSOR, F32, 2, db, NULL};
    poprt__ival in[2] = {{&ta, NULL, 0}, {&tb, NULL, 0}};
    poprt__type out[1];
    memset(out, 0, sizeof out);
    poprt__infer_ctx c = {&node, 14, 2, in, 1, out, &arena};
    const poprt__op *op = poprt__op_find("", "Add", 14);
    ck_assert_ptr_nonnull(op);
    ck_assert_int_eq(op->infer(&c), POPRT_OK);
    ck_assert_int_eq(out[0].elem, F32);
    ck_assert_int_eq(out[0].rank, 3);
    ck_assert_int_eq(out[0].dims[0].value, 2);
    ck_assert_int_eq(out[0].dims[1].value, 5);
    ck_assert_int_eq(out[0].dims[2].value, -1);
    ck_assert_str_eq(out[0].dims[2].param, "N");

    /* mismatched element types are a model error */
    poprt__type ti = {POPRT__KIND_TENSOR, I64, 2, db, NULL};
    in[1].type = &ti;
    memset(out, 0, sizeof out);
    ck_assert_int_eq(op->infer(&c), POPRT_STATUS_INVALID_MODEL);

    /* comparisons give bool; unknown rank stays unknown */
    poprt__type tu = {POPRT__KIND_TENSOR, F32, -1, NULL, NULL};
    in[1].type = &tu;
    memset(out, 0, sizeof out);
    node.op_type = "Less";
    op = poprt__op_find("", "Less", 13);
    ck_assert_int_eq(op->infer(&c), POPRT_OK);
    ck_assert_int_eq(out[0].elem, BOOL);
    ck_assert_int_eq(out[0].rank, -1);

    /* Cast: 'to' gives the type, shape is kept */
    poprt__attr to = {0};
    to.name = "to";
    to.type = POPRT__ATTR_INT;
    to.i = POPRT_DTYPE_FLOAT16;
    node.op_type = "Cast";
    node.attrs = &to;
    node.n_attrs = 1;
    c.n_in = 1;
    in[0].type = &ta;
    memset(out, 0, sizeof out);
    op = poprt__op_find("", "Cast", 19);
    ck_assert_int_eq(op->infer(&c), POPRT_OK);
    ck_assert_int_eq(out[0].elem, F16);
    ck_assert_int_eq(out[0].rank, 3);
    ck_assert_int_eq(out[0].dims[0].value, 2);
    poprt__arena_free(&arena);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_elementwise");
    TCase *tc = tcase_create("kernels_elementwise");
    tcase_add_test(tc, test_add_same_and_scalar);
    tcase_add_test(tc, test_mul_broadcast_2d);
    tcase_add_test(tc, test_add_broadcast_4d);
    tcase_add_test(tc, test_parallel_broadcast);
    tcase_add_test(tc, test_broadcast_mismatch);
    tcase_add_test(tc, test_int_div_mod);
    tcase_add_test(tc, test_float_mod);
    tcase_add_test(tc, test_pow_exact_int);
    tcase_add_test(tc, test_int_wrap);
    tcase_add_test(tc, test_bitshift_bitwise);
    tcase_add_test(tc, test_logical);
    tcase_add_test(tc, test_compare);
    tcase_add_test(tc, test_half_add);
    tcase_add_test(tc, test_unary_math);
    tcase_add_test(tc, test_unary_int);
    tcase_add_test(tc, test_activations);
    tcase_add_test(tc, test_prelu_broadcast);
    tcase_add_test(tc, test_isnan_isinf);
    tcase_add_test(tc, test_variadic);
    tcase_add_test(tc, test_where);
    tcase_add_test(tc, test_clip);
    tcase_add_test(tc, test_cast_numbers);
    tcase_add_test(tc, test_cast_strings);
    tcase_add_test(tc, test_bitcast);
    tcase_add_test(tc, test_infer_broadcast_and_cast);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
