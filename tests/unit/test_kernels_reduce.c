/* Unit tests: the 'reduce' family (Reduce*, ArgMax/ArgMin, Softmax family,
 * Attention, losses) against hand-computed values. Each case builds one
 * node, runs its inference on the concrete inputs, allocates the outputs
 * with the inferred shapes and runs the reference kernel. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ir/op.h"
#include "kernels/kernel.h"
#include "kernels/ref/reduce.h"
#include "runtime/runtime.h"

#define MAXIO 8

typedef struct harness {
    poprt__model *m;
    struct poprt__exec x;
    poprt__value outs[MAXIO];
} harness;

static void h_init(harness *h, int threads)
{
    memset(h, 0, sizeof *h);
    ck_assert_int_eq(poprt__model_new(&h->m), POPRT_OK);
    poprt__arena_init(&h->x.strings);
    if (threads > 1)
        ck_assert_int_eq(poprt__pool_create(threads, &h->x.pool), POPRT_OK);
}

static void h_free(harness *h)
{
    for (int j = 0; j < MAXIO; j++)
        free(h->outs[j].t.data);
    if (h->x.pool)
        poprt__pool_free(h->x.pool);
    h->x.pool = NULL;
    poprt__exec_free(&h->x);
    poprt__model_free(h->m);
}

static poprt__node *mk(harness *h, const char *op, int nin, int nout)
{
    poprt__node *n = poprt__graph_add_node(h->m->graph, op, "", NULL, nin, nout);
    ck_assert_ptr_nonnull(n);
    return n;
}

static void set_i(poprt__node *n, const char *name, int64_t v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(a);
    a->i = v;
}

static void set_f(poprt__node *n, const char *name, float v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_FLOAT);
    ck_assert_ptr_nonnull(a);
    a->f = v;
}

static void set_s(poprt__node *n, const char *name, const char *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_STRING);
    ck_assert_ptr_nonnull(a);
    a->s = v;
    a->s_len = strlen(v);
}

static void set_ints(harness *h, poprt__node *n, const char *name, const int64_t *v, int cnt)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS);
    ck_assert_ptr_nonnull(a);
    a->n = cnt;
    a->ints = poprt__arena_memdup(&h->m->arena, v, (size_t)cnt * sizeof *v);
}

static poprt__value tv(int32_t dt, int rank, const int64_t *dims, const void *data)
{
    poprt__value v;
    memset(&v, 0, sizeof v);
    v.kind = POPRT__KIND_TENSOR;
    v.t.dtype = dt;
    v.t.rank = rank;
    v.t.numel = 1;
    for (int i = 0; i < rank; i++) {
        v.t.dims[i] = dims[i];
        v.t.numel *= dims[i];
    }
    v.t.nbytes = (size_t)v.t.numel * poprt_dtype_size(dt);
    v.t.data = (void *)data;
    return v;
}

/* Infers, allocates outputs, runs the kernel. in[i] NULL: omitted. */
static poprt_status run(harness *h, poprt__node *n, int opset, int nin, poprt__value **in,
                        int nout)
{
    const poprt__op *op = poprt__op_find("", n->op_type, opset);
    ck_assert_ptr_nonnull(op);
    n->op = op;
    n->opset = opset;
    poprt__type types[MAXIO];
    poprt__ival iv[MAXIO] = {0};
    poprt__type otypes[MAXIO];
    memset(types, 0, sizeof types);
    memset(iv, 0, sizeof iv);
    memset(otypes, 0, sizeof otypes);
    for (int i = 0; i < nin; i++) {
        if (!in[i])
            continue;
        const poprt__tval *t = &in[i]->t;
        poprt__type_set_tensor(&h->m->arena, &types[i], t->dtype, t->rank, t->dims);
        iv[i].type = &types[i];
        iv[i].data = t->data;
        iv[i].nbytes = t->nbytes;
    }
    poprt__infer_ctx c = {n, opset, nin, iv, nout, otypes, &h->m->arena};
    poprt_status st = op->infer(&c);
    if (st)
        return st;
    poprt__value *out[MAXIO];
    for (int j = 0; j < nout; j++) {
        ck_assert_int_eq(otypes[j].kind, POPRT__KIND_TENSOR);
        ck_assert_int_ge(otypes[j].rank, 0);
        int64_t dims[POPRT__MAX_RANK];
        for (int d = 0; d < otypes[j].rank; d++) {
            ck_assert_int_ge(otypes[j].dims[d].value, 0);
            dims[d] = otypes[j].dims[d].value;
        }
        free(h->outs[j].t.data);
        h->outs[j] = tv(otypes[j].elem, otypes[j].rank, dims, NULL);
        h->outs[j].t.data = calloc(1, h->outs[j].t.nbytes + 1);
        out[j] = &h->outs[j];
    }
    poprt__kctx k = {.node = n, .opset = opset, .n_in = nin, .in = in, .n_out = nout,
                     .out = out, .exec = &h->x};
    return poprt__kernel_find(op->domain, op->name, op->since_version)->run(&k);
}

static void expect_shape(const poprt__value *v, int rank, const int64_t *dims)
{
    ck_assert_int_eq(v->t.rank, rank);
    for (int i = 0; i < rank; i++)
        ck_assert_int_eq(v->t.dims[i], dims[i]);
}

static void expect_f32(const poprt__value *v, const float *want, int64_t n, double tol)
{
    ck_assert_int_eq(v->t.dtype, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(v->t.numel, n);
    const float *got = v->t.data;
    for (int64_t i = 0; i < n; i++) {
        if (isinf(want[i])) {
            ck_assert_msg(got[i] == want[i], "[%lld] got %g want %g", (long long)i, got[i],
                          want[i]);
            continue;
        }
        ck_assert_msg(fabs(got[i] - want[i]) <= tol * (1 + fabs(want[i])),
                      "[%lld] got %.9g want %.9g", (long long)i, got[i], want[i]);
    }
}

/* ---- reductions ------------------------------------------------------------ */

START_TEST(test_reduce_sum_keepdims_axes_input)
{
    harness h;
    h_init(&h, 1);
    float x[] = {1, 2, 3, 4, 5, 6};
    int64_t xd[] = {2, 3}, axes[] = {1}, ad[] = {1};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 2, xd, x), va = tv(POPRT_DTYPE_INT64, 1, ad, axes);
    poprt__value *in[] = {&vx, &va};
    poprt__node *n = mk(&h, "ReduceSum", 2, 1);
    ck_assert_int_eq(run(&h, n, 13, 2, in, 1), POPRT_OK);
    int64_t od[] = {2, 1};
    expect_shape(&h.outs[0], 2, od);
    float want[] = {6, 15};
    expect_f32(&h.outs[0], want, 2, 0);

    /* keepdims=0, negative axis */
    n = mk(&h, "ReduceSum", 2, 1);
    set_i(n, "keepdims", 0);
    axes[0] = -2;
    ck_assert_int_eq(run(&h, n, 13, 2, in, 1), POPRT_OK);
    int64_t od2[] = {3};
    expect_shape(&h.outs[0], 1, od2);
    float want2[] = {5, 7, 9};
    expect_f32(&h.outs[0], want2, 3, 0);
    h_free(&h);
}
END_TEST

START_TEST(test_reduce_empty_axes)
{
    harness h;
    h_init(&h, 1);
    float x[] = {1, 2, 3, 4, 5, 6};
    int64_t xd[] = {2, 3}, ad[] = {0};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 2, xd, x), va = tv(POPRT_DTYPE_INT64, 1, ad, NULL);
    poprt__value *in[] = {&vx, &va};

    /* no axes: reduce everything; keepdims=1 keeps rank */
    poprt__node *n = mk(&h, "ReduceMean", 1, 1);
    ck_assert_int_eq(run(&h, n, 18, 1, in, 1), POPRT_OK);
    int64_t od[] = {1, 1};
    expect_shape(&h.outs[0], 2, od);
    float want[] = {3.5f};
    expect_f32(&h.outs[0], want, 1, 1e-7);

    /* empty axes tensor with noop_with_empty_axes: identity */
    n = mk(&h, "ReduceSum", 2, 1);
    set_i(n, "noop_with_empty_axes", 1);
    ck_assert_int_eq(run(&h, n, 13, 2, in, 1), POPRT_OK);
    expect_shape(&h.outs[0], 2, xd);
    expect_f32(&h.outs[0], x, 6, 0);

    /* empty axes without noop, keepdims=0: scalar */
    n = mk(&h, "ReduceSumSquare", 2, 1);
    set_i(n, "keepdims", 0);
    ck_assert_int_eq(run(&h, n, 18, 2, in, 1), POPRT_OK);
    ck_assert_int_eq(h.outs[0].t.rank, 0);
    float want2[] = {91};
    expect_f32(&h.outs[0], want2, 1, 0);
    h_free(&h);
}
END_TEST

START_TEST(test_reduce_attribute_axes_old_opsets)
{
    harness h;
    h_init(&h, 1);
    float x[] = {3, 4, -6, 8};
    int64_t xd[] = {2, 2}, axes[] = {-1};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 2, xd, x);
    poprt__value *in[] = {&vx};
    poprt__node *n = mk(&h, "ReduceL2", 1, 1);
    set_ints(&h, n, "axes", axes, 1);
    ck_assert_int_eq(run(&h, n, 13, 1, in, 1), POPRT_OK);
    float want[] = {5, 10};
    expect_f32(&h.outs[0], want, 2, 1e-7);

    n = mk(&h, "ReduceL1", 1, 1);
    set_ints(&h, n, "axes", axes, 1);
    set_i(n, "keepdims", 0);
    ck_assert_int_eq(run(&h, n, 11, 1, in, 1), POPRT_OK);
    float want1[] = {7, 14};
    expect_f32(&h.outs[0], want1, 2, 0);

    /* ReduceSum before 13 takes the attribute too */
    n = mk(&h, "ReduceSum", 1, 1);
    int64_t ax0[] = {0};
    set_ints(&h, n, "axes", ax0, 1);
    ck_assert_int_eq(run(&h, n, 11, 1, in, 1), POPRT_OK);
    float want2[] = {-3, 12};
    expect_f32(&h.outs[0], want2, 2, 0);

    n = mk(&h, "ReduceProd", 1, 1);
    ck_assert_int_eq(run(&h, n, 13, 1, in, 1), POPRT_OK);
    float want3[] = {-576};
    expect_f32(&h.outs[0], want3, 1, 0);

    n = mk(&h, "ReduceLogSum", 1, 1);
    float xp[] = {1, 2, 3, 4};
    poprt__value vp = tv(POPRT_DTYPE_FLOAT, 2, xd, xp);
    poprt__value *inp[] = {&vp};
    set_ints(&h, n, "axes", axes, 1);
    ck_assert_int_eq(run(&h, n, 13, 1, inp, 1), POPRT_OK);
    float want4[] = {logf(3), logf(7)};
    expect_f32(&h.outs[0], want4, 2, 1e-6);
    h_free(&h);
}
END_TEST

START_TEST(test_reduce_empty_set_identities)
{
    harness h;
    h_init(&h, 1);
    int64_t xd[] = {2, 0, 4}, axes[] = {1}, ad[] = {1};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 3, xd, NULL), va = tv(POPRT_DTYPE_INT64, 1, ad, axes);
    poprt__value *in[] = {&vx, &va};
    struct {
        const char *op;
        float v;
    } cases[] = {
        {"ReduceMax", -INFINITY}, {"ReduceMin", INFINITY},     {"ReduceProd", 1},
        {"ReduceSum", 0},         {"ReduceSumSquare", 0},      {"ReduceL1", 0},
        {"ReduceL2", 0},          {"ReduceLogSum", -INFINITY}, {"ReduceLogSumExp", -INFINITY},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        poprt__node *n = mk(&h, cases[c].op, 2, 1);
        ck_assert_int_eq(run(&h, n, 18, 2, in, 1), POPRT_OK);
        int64_t od[] = {2, 1, 4};
        expect_shape(&h.outs[0], 3, od);
        float want[8];
        for (int i = 0; i < 8; i++)
            want[i] = cases[c].v;
        expect_f32(&h.outs[0], want, 8, 0);
    }
    /* integer ReduceMax of an empty set is the type's minimum */
    poprt__value vi = tv(POPRT_DTYPE_INT32, 3, xd, NULL);
    poprt__value *ini[] = {&vi, &va};
    poprt__node *n = mk(&h, "ReduceMax", 2, 1);
    ck_assert_int_eq(run(&h, n, 18, 2, ini, 1), POPRT_OK);
    ck_assert_int_eq(((int32_t *)h.outs[0].t.data)[0], INT32_MIN);
    h_free(&h);
}
END_TEST

START_TEST(test_reduce_logsumexp_stable_and_ints)
{
    harness h;
    h_init(&h, 1);
    float x[] = {1000, 1000, -1000, -1001};
    int64_t xd[] = {2, 2}, axes[] = {1}, ad[] = {1};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 2, xd, x), va = tv(POPRT_DTYPE_INT64, 1, ad, axes);
    poprt__value *in[] = {&vx, &va};
    poprt__node *n = mk(&h, "ReduceLogSumExp", 2, 1);
    set_i(n, "keepdims", 0);
    ck_assert_int_eq(run(&h, n, 18, 2, in, 1), POPRT_OK);
    float want[] = {1000 + (float)log(2.0), -1000 + (float)log(1 + exp(-1.0))};
    expect_f32(&h.outs[0], want, 2, 1e-7);

    int32_t xi[] = {5, -7, 2, 9, 0, -1};
    int64_t xid[] = {2, 3};
    poprt__value vi = tv(POPRT_DTYPE_INT32, 2, xid, xi);
    poprt__value *ini[] = {&vi, &va};
    n = mk(&h, "ReduceMin", 2, 1);
    ck_assert_int_eq(run(&h, n, 18, 2, ini, 1), POPRT_OK);
    ck_assert_int_eq(((int32_t *)h.outs[0].t.data)[0], -7);
    ck_assert_int_eq(((int32_t *)h.outs[0].t.data)[1], -1);
    n = mk(&h, "ReduceMean", 2, 1);
    ck_assert_int_eq(run(&h, n, 18, 2, ini, 1), POPRT_OK);
    ck_assert_int_eq(((int32_t *)h.outs[0].t.data)[0], 0); /* 0/3 truncated */
    ck_assert_int_eq(((int32_t *)h.outs[0].t.data)[1], 2); /* 8/3 truncated */

    /* float16 accumulates in wider precision: 2048 + 1 + 1 = 2050 exactly */
    uint16_t xh[] = {poprt__float_to_half(2048), poprt__float_to_half(1),
                     poprt__float_to_half(1)};
    int64_t xhd[] = {3};
    poprt__value vh = tv(POPRT_DTYPE_FLOAT16, 1, xhd, xh);
    poprt__value *inh[] = {&vh};
    n = mk(&h, "ReduceSum", 1, 1);
    ck_assert_int_eq(run(&h, n, 13, 1, inh, 1), POPRT_OK);
    ck_assert_float_eq(poprt__half_to_float(((uint16_t *)h.outs[0].t.data)[0]), 2050.0f);
    h_free(&h);
}
END_TEST

START_TEST(test_reduce_middle_axis)
{
    harness h;
    h_init(&h, 1);
    /* [2, 3, 2]: max over axis 1 touches strided data */
    float x[12];
    for (int i = 0; i < 12; i++)
        x[i] = (float)((i * 7) % 12);
    int64_t xd[] = {2, 3, 2}, axes[] = {1}, ad[] = {1};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 3, xd, x), va = tv(POPRT_DTYPE_INT64, 1, ad, axes);
    poprt__value *in[] = {&vx, &va};
    poprt__node *n = mk(&h, "ReduceMax", 2, 1);
    ck_assert_int_eq(run(&h, n, 18, 2, in, 1), POPRT_OK);
    float want[4];
    for (int b = 0; b < 2; b++)
        for (int c = 0; c < 2; c++) {
            float m = -INFINITY;
            for (int j = 0; j < 3; j++)
                m = fmaxf(m, x[b * 6 + j * 2 + c]);
            want[b * 2 + c] = m;
        }
    expect_f32(&h.outs[0], want, 4, 0);
    h_free(&h);
}
END_TEST

/* The adding reductions over trailing axes (rows of contiguous values: the
 * x86 kernels' row sums, sixteen double partial sums) against float64 sums:
 * rows of 185 (two axes), 37 (one, a tail past the 16-value steps), 37
 * behind an axis of size 1, and 16; the same bits at 1 and 2 threads.
 * Tolerance 1e-6 of 1 + |result| (double sums rounded once to float). */
START_TEST(test_reduce_trailing_rows)
{
    static const char *const ops[] = {"ReduceSum", "ReduceMean", "ReduceL1", "ReduceL2",
                                      "ReduceSumSquare"};
    static const struct {
        int64_t dims[3], axes[2];
        int na;
    } cases[] = {{{3, 5, 37}, {1, 2}, 2}, {{3, 5, 37}, {-1}, 1}, {{6, 1, 37}, {2}, 1},
                 {{4, 8, 16}, {2}, 1}};
    float x[3 * 5 * 37];
    for (int i = 0; i < 3 * 5 * 37; i++)
        x[i] = sinf((float)i * 0.37f) * (float)(1 + i % 5);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            float got[2][64];
            int64_t rows = 0;
            for (int threads = 1; threads <= 2; threads++) {
                harness h;
                h_init(&h, threads);
                int64_t ad[] = {cases[c].na};
                poprt__value vx = tv(POPRT_DTYPE_FLOAT, 3, cases[c].dims, x),
                             va = tv(POPRT_DTYPE_INT64, 1, ad, cases[c].axes);
                poprt__value *in[] = {&vx, &va};
                poprt__node *n = mk(&h, ops[o], 2, 1);
                ck_assert_int_eq(run(&h, n, 18, 2, in, 1), POPRT_OK);
                const int64_t numel = cases[c].dims[0] * cases[c].dims[1] * cases[c].dims[2];
                rows = h.outs[0].t.numel;
                ck_assert_int_le(rows, 64);
                const int64_t len = numel / rows;
                float want[64];
                for (int64_t r = 0; r < rows; r++) {
                    double s = 0;
                    for (int64_t j = 0; j < len; j++) {
                        const double v = x[r * len + j];
                        s += o == 2 ? fabs(v) : o >= 3 ? v * v : v;
                    }
                    want[r] = (float)(o == 1 ? s / (double)len : o == 3 ? sqrt(s) : s);
                }
                expect_f32(&h.outs[0], want, rows, 1e-6);
                memcpy(got[threads - 1], h.outs[0].t.data, (size_t)rows * sizeof(float));
                h_free(&h);
            }
            ck_assert_msg(memcmp(got[0], got[1], (size_t)rows * sizeof(float)) == 0,
                          "%s case %zu: 1 and 2 threads differ", ops[o], c);
        }
}
END_TEST

START_TEST(test_reduce_infer_unknown_axes)
{
    harness h;
    h_init(&h, 1);
    poprt__node *n = mk(&h, "ReduceSum", 2, 1);
    n->opset = 13;
    int64_t xd[] = {2, 3}, ad[] = {1};
    poprt__type tx, ta, out;
    memset(&out, 0, sizeof out);
    poprt__type_set_tensor(&h.m->arena, &tx, POPRT_DTYPE_FLOAT, 2, xd);
    poprt__type_set_tensor(&h.m->arena, &ta, POPRT_DTYPE_INT64, 1, ad);
    poprt__ival iv[2] = {{&tx, NULL, 0}, {&ta, NULL, 0}};
    poprt__infer_ctx c = {n, 13, 2, iv, 1, &out, &h.m->arena};
    const poprt__op *op = poprt__op_find("", "ReduceSum", 13);
    ck_assert_int_eq(op->infer(&c), POPRT_OK);
    ck_assert_int_eq(out.rank, 2); /* keepdims: rank known, dims not */
    ck_assert_int_lt(out.dims[0].value, 0);
    set_i(n, "keepdims", 0);
    memset(&out, 0, sizeof out);
    ck_assert_int_eq(op->infer(&c), POPRT_OK);
    ck_assert_int_eq(out.rank, -1);
    h_free(&h);
}
END_TEST

/* ---- ArgMax / ArgMin ------------------------------------------------------- */

START_TEST(test_argmax_select_last_index)
{
    harness h;
    h_init(&h, 1);
    float x[] = {1, 3, 3, 2, 5, 5, 5, 0};
    int64_t xd[] = {2, 4};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 2, xd, x);
    poprt__value *in[] = {&vx};
    poprt__node *n = mk(&h, "ArgMax", 1, 1);
    set_i(n, "axis", 1);
    set_i(n, "keepdims", 0);
    ck_assert_int_eq(run(&h, n, 13, 1, in, 1), POPRT_OK);
    int64_t od[] = {2};
    expect_shape(&h.outs[0], 1, od);
    ck_assert_int_eq(((int64_t *)h.outs[0].t.data)[0], 1);
    ck_assert_int_eq(((int64_t *)h.outs[0].t.data)[1], 0);

    n = mk(&h, "ArgMax", 1, 1);
    set_i(n, "axis", -1);
    set_i(n, "select_last_index", 1);
    ck_assert_int_eq(run(&h, n, 13, 1, in, 1), POPRT_OK);
    int64_t od2[] = {2, 1};
    expect_shape(&h.outs[0], 2, od2);
    ck_assert_int_eq(((int64_t *)h.outs[0].t.data)[0], 2);
    ck_assert_int_eq(((int64_t *)h.outs[0].t.data)[1], 2);

    /* ArgMin along axis 0 with keepdims */
    int32_t xi[] = {4, 1, 2, 4, 0, 9};
    int64_t xid[] = {2, 3};
    poprt__value vi = tv(POPRT_DTYPE_INT32, 2, xid, xi);
    poprt__value *ini[] = {&vi};
    n = mk(&h, "ArgMin", 1, 1);
    set_i(n, "select_last_index", 1);
    ck_assert_int_eq(run(&h, n, 13, 1, ini, 1), POPRT_OK);
    int64_t od3[] = {1, 3};
    expect_shape(&h.outs[0], 2, od3);
    int64_t *r = h.outs[0].t.data;
    ck_assert_int_eq(r[0], 1); /* tie 4,4: last */
    ck_assert_int_eq(r[1], 1);
    ck_assert_int_eq(r[2], 0);
    h_free(&h);
}
END_TEST

/* ---- Softmax family -------------------------------------------------------- */

START_TEST(test_softmax_axis_semantics)
{
    harness h;
    h_init(&h, 1);
    float x[] = {0, 1, 2, 3, 4, 5, 6, 7};
    int64_t xd[] = {2, 2, 2};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 3, xd, x);
    poprt__value *in[] = {&vx};

    /* opset 11, axis=1: coerced to [2, 4], softmax over 4 elements */
    poprt__node *n = mk(&h, "Softmax", 1, 1);
    set_i(n, "axis", 1);
    ck_assert_int_eq(run(&h, n, 11, 1, in, 1), POPRT_OK);
    float want[8];
    double s = exp(0) + exp(1) + exp(2) + exp(3);
    for (int i = 0; i < 8; i++)
        want[i] = (float)(exp((i % 4)) / s);
    expect_f32(&h.outs[0], want, 8, 1e-6);

    /* opset 13, axis=1: only along dim 1 (pairs 2 apart) */
    n = mk(&h, "Softmax", 1, 1);
    set_i(n, "axis", 1);
    ck_assert_int_eq(run(&h, n, 13, 1, in, 1), POPRT_OK);
    float lo = (float)(1 / (1 + exp(2.0))), hi = (float)(exp(2.0) / (1 + exp(2.0)));
    float want13[] = {lo, lo, hi, hi, lo, lo, hi, hi};
    expect_f32(&h.outs[0], want13, 8, 1e-6);

    /* opset 13 default axis -1 for LogSoftmax */
    n = mk(&h, "LogSoftmax", 1, 1);
    ck_assert_int_eq(run(&h, n, 13, 1, in, 1), POPRT_OK);
    float l0 = (float)-log(1 + exp(1.0)), l1 = (float)(1 - log(1 + exp(1.0)));
    float wantl[] = {l0, l1, l0, l1, l0, l1, l0, l1};
    expect_f32(&h.outs[0], wantl, 8, 1e-6);

    /* opset 1 default axis 1 for Hardmax: first maximum of each [4] row */
    float xh[] = {1, 3, 3, 0, 2, 2, 2, 2};
    poprt__value vh = tv(POPRT_DTYPE_FLOAT, 3, xd, xh);
    poprt__value *inh[] = {&vh};
    n = mk(&h, "Hardmax", 1, 1);
    ck_assert_int_eq(run(&h, n, 11, 1, inh, 1), POPRT_OK);
    float wanth[] = {0, 1, 0, 0, 1, 0, 0, 0};
    expect_f32(&h.outs[0], wanth, 8, 0);
    h_free(&h);
}
END_TEST

START_TEST(test_softmax_large_values_and_threads)
{
    /* same bits for 1 and 4 threads, and no overflow on large inputs */
    enum { R = 37, C = 129 };
    static float x[R * C], y1[R * C];
    for (int i = 0; i < R * C; i++)
        x[i] = (float)((i * 7919) % 1000) * 0.37f + 10000.0f;
    int64_t xd[] = {R, C};
    for (int pass = 0; pass < 2; pass++) {
        harness h;
        h_init(&h, pass ? 4 : 1);
        poprt__value vx = tv(POPRT_DTYPE_FLOAT, 2, xd, x);
        poprt__value *in[] = {&vx};
        poprt__node *n = mk(&h, "Softmax", 1, 1);
        ck_assert_int_eq(run(&h, n, 13, 1, in, 1), POPRT_OK);
        const float *y = h.outs[0].t.data;
        if (!pass) {
            memcpy(y1, y, sizeof y1);
            for (int r = 0; r < R; r++) {
                double s = 0;
                for (int c = 0; c < C; c++) {
                    ck_assert(isfinite(y[r * C + c]));
                    s += y[r * C + c];
                }
                ck_assert(fabs(s - 1) < 1e-5);
            }
        } else {
            ck_assert(memcmp(y1, y, sizeof y1) == 0);
        }
        h_free(&h);
    }
}
END_TEST

/* ---- Attention --------------------------------------------------------------- */

START_TEST(test_attention_tiny_causal)
{
    harness h;
    h_init(&h, 1);
    /* B=1, H=1, S=2, D=1: Q=[1,1], K=[1,2], V=[10,20], scale 1/sqrt(1) */
    float q[] = {1, 1}, kk[] = {1, 2}, v[] = {10, 20};
    int64_t d4[] = {1, 1, 2, 1};
    poprt__value vq = tv(POPRT_DTYPE_FLOAT, 4, d4, q), vk = tv(POPRT_DTYPE_FLOAT, 4, d4, kk),
                 vv = tv(POPRT_DTYPE_FLOAT, 4, d4, v);
    poprt__value *in[] = {&vq, &vk, &vv};
    poprt__node *n = mk(&h, "Attention", 3, 1);
    set_i(n, "is_causal", 1);
    ck_assert_int_eq(run(&h, n, 23, 3, in, 1), POPRT_OK);
    expect_shape(&h.outs[0], 4, d4);
    double p1 = exp(2.0) / (exp(1.0) + exp(2.0));
    float want[] = {10, (float)(10 * (1 - p1) + 20 * p1)};
    expect_f32(&h.outs[0], want, 2, 1e-6);

    /* without is_causal the first query sees both keys */
    n = mk(&h, "Attention", 3, 1);
    ck_assert_int_eq(run(&h, n, 23, 3, in, 1), POPRT_OK);
    float want2[] = {want[1], want[1]};
    expect_f32(&h.outs[0], want2, 2, 1e-6);

    /* 3-D layout with past: present_key = concat(past, K); a bool mask
     * hiding the past key gives the no-past result */
    float pk[] = {100}, pv[] = {-50};
    int64_t d3[] = {1, 2, 1}, pd[] = {1, 1, 1, 1}, md[] = {2, 3};
    uint8_t mask[] = {0, 1, 1, 0, 1, 1};
    poprt__value q3 = tv(POPRT_DTYPE_FLOAT, 3, d3, q), k3 = tv(POPRT_DTYPE_FLOAT, 3, d3, kk),
                 v3 = tv(POPRT_DTYPE_FLOAT, 3, d3, v), vm = tv(POPRT_DTYPE_BOOL, 2, md, mask),
                 vpk = tv(POPRT_DTYPE_FLOAT, 4, pd, pk), vpv = tv(POPRT_DTYPE_FLOAT, 4, pd, pv);
    poprt__value *in3[] = {&q3, &k3, &v3, &vm, &vpk, &vpv};
    n = mk(&h, "Attention", 6, 3);
    set_i(n, "q_num_heads", 1);
    set_i(n, "kv_num_heads", 1);
    ck_assert_int_eq(run(&h, n, 23, 6, in3, 3), POPRT_OK);
    expect_shape(&h.outs[0], 3, d3);
    expect_f32(&h.outs[0], want2, 2, 1e-6);
    int64_t pkd[] = {1, 1, 3, 1};
    expect_shape(&h.outs[1], 4, pkd);
    float wantk[] = {100, 1, 2}, wantv[] = {-50, 10, 20};
    expect_f32(&h.outs[1], wantk, 3, 0);
    expect_f32(&h.outs[2], wantv, 3, 0);
    h_free(&h);
}
END_TEST

START_TEST(test_attention_gqa_softcap)
{
    harness h;
    h_init(&h, 1);
    /* 2 query heads share 1 kv head; softcap 1: scores become tanh(qk) */
    float q[] = {1, 0, 0, 2}, kk[] = {1, 0, 0, 1}, v[] = {1, 2, 3, 4};
    int64_t qd[] = {1, 2, 1, 2}, kd[] = {1, 1, 2, 2};
    poprt__value vq = tv(POPRT_DTYPE_FLOAT, 4, qd, q), vk = tv(POPRT_DTYPE_FLOAT, 4, kd, kk),
                 vv = tv(POPRT_DTYPE_FLOAT, 4, kd, v);
    poprt__value *in[] = {&vq, &vk, &vv};
    poprt__node *n = mk(&h, "Attention", 3, 4);
    set_f(n, "softcap", 1.0f);
    set_f(n, "scale", 1.0f);
    set_i(n, "qk_matmul_output_mode", 1);
    ck_assert_int_eq(run(&h, n, 23, 3, in, 4), POPRT_OK);
    /* head 0: scores (1, 0) -> tanh; head 1: scores (0, 2) */
    double s00 = tanh(1.0), s11 = tanh(2.0);
    double p0 = exp(s00) / (exp(s00) + 1), p1 = exp(s11) / (exp(s11) + 1);
    float want[] = {(float)(p0 * 1 + (1 - p0) * 3), (float)(p0 * 2 + (1 - p0) * 4),
                    (float)((1 - p1) * 1 + p1 * 3), (float)((1 - p1) * 2 + p1 * 4)};
    expect_f32(&h.outs[0], want, 4, 1e-6);
    float wantqk[] = {(float)s00, 0, 0, (float)s11};
    expect_f32(&h.outs[3], wantqk, 4, 1e-6);
    h_free(&h);
}
END_TEST

START_TEST(test_rotary_embedding)
{
    harness h;
    h_init(&h, 1);
    float x[] = {1, 2, 3, 4}, c[] = {0.5f, 0.25f}, sn[] = {0.75f, -1};
    int64_t xd[] = {1, 1, 1, 4}, cd[] = {1, 1, 2};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 4, xd, x), vc = tv(POPRT_DTYPE_FLOAT, 3, cd, c),
                 vs = tv(POPRT_DTYPE_FLOAT, 3, cd, sn);
    poprt__value *in[] = {&vx, &vc, &vs};
    /* halves: x1 = (1, 2), x2 = (3, 4) */
    poprt__node *n = mk(&h, "RotaryEmbedding", 3, 1);
    ck_assert_int_eq(run(&h, n, 23, 3, in, 1), POPRT_OK);
    float want[] = {1 * 0.5f - 3 * 0.75f, 2 * 0.25f + 4, 3 * 0.5f + 1 * 0.75f, 4 * 0.25f - 2};
    expect_f32(&h.outs[0], want, 4, 1e-7);
    /* interleaved: pairs (1, 2) and (3, 4) */
    n = mk(&h, "RotaryEmbedding", 3, 1);
    set_i(n, "interleaved", 1);
    ck_assert_int_eq(run(&h, n, 23, 3, in, 1), POPRT_OK);
    float wanti[] = {1 * 0.5f - 2 * 0.75f, 2 * 0.5f + 1 * 0.75f, 3 * 0.25f + 4, 4 * 0.25f - 3};
    expect_f32(&h.outs[0], wanti, 4, 1e-7);
    /* 3-D input, position_ids pick row 1 of a [2, 1] cache, half rotated */
    float c2[] = {9, 0}, s2[] = {9, 1};
    int64_t x3d[] = {1, 1, 4}, c2d[] = {2, 1}, pd[] = {1, 1}, pos[] = {1};
    poprt__value vx3 = tv(POPRT_DTYPE_FLOAT, 3, x3d, x), vc2 = tv(POPRT_DTYPE_FLOAT, 2, c2d, c2),
                 vs2 = tv(POPRT_DTYPE_FLOAT, 2, c2d, s2), vp = tv(POPRT_DTYPE_INT64, 2, pd, pos);
    poprt__value *in3[] = {&vx3, &vc2, &vs2, &vp};
    n = mk(&h, "RotaryEmbedding", 4, 1);
    set_i(n, "num_heads", 1);
    set_i(n, "rotary_embedding_dim", 2);
    ck_assert_int_eq(run(&h, n, 23, 4, in3, 1), POPRT_OK);
    float want3[] = {-2, 1, 3, 4};
    expect_f32(&h.outs[0], want3, 4, 1e-7);
    h_free(&h);
}
END_TEST

START_TEST(test_attention_threads_same_bits)
{
    /* GQA, 3-D layout, past, causal, float mask; 1 and 4 threads agree bit
     * for bit, and match a plain double-precision loop */
    enum { B = 2, HQ = 4, HKV = 2, S = 45, P = 7, D = 8, T = P + S };
    static float q[B * S * HQ * D], kk[B * S * HKV * D], v[B * S * HKV * D];
    static float pk[B * HKV * P * D], pv[B * HKV * P * D], mask[S * T], y1[B * S * HQ * D];
    for (int i = 0; i < (int)(sizeof q / sizeof q[0]); i++)
        q[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < (int)(sizeof kk / sizeof kk[0]); i++) {
        kk[i] = (float)((i * 11) % 13) / 13.0f - 0.5f;
        v[i] = (float)((i * 5) % 7) / 7.0f;
    }
    for (int i = 0; i < (int)(sizeof pk / sizeof pk[0]); i++) {
        pk[i] = (float)((i * 3) % 5) / 5.0f;
        pv[i] = (float)((i * 7) % 9) / 9.0f;
    }
    for (int i = 0; i < S * T; i++)
        mask[i] = (float)(i % 3) * -0.25f;
    int64_t qd[] = {B, S, HQ * D}, kd[] = {B, S, HKV * D}, pd[] = {B, HKV, P, D}, md[] = {S, T};
    for (int pass = 0; pass < 2; pass++) {
        harness h;
        h_init(&h, pass ? 4 : 1);
        poprt__value vq = tv(POPRT_DTYPE_FLOAT, 3, qd, q), vk = tv(POPRT_DTYPE_FLOAT, 3, kd, kk),
                     vv = tv(POPRT_DTYPE_FLOAT, 3, kd, v), vm = tv(POPRT_DTYPE_FLOAT, 2, md, mask),
                     vpk = tv(POPRT_DTYPE_FLOAT, 4, pd, pk), vpv = tv(POPRT_DTYPE_FLOAT, 4, pd, pv);
        poprt__value *in[] = {&vq, &vk, &vv, &vm, &vpk, &vpv};
        poprt__node *n = mk(&h, "Attention", 6, 1);
        set_i(n, "q_num_heads", HQ);
        set_i(n, "kv_num_heads", HKV);
        set_i(n, "is_causal", 1);
        ck_assert_int_eq(run(&h, n, 23, 6, in, 1), POPRT_OK);
        const float *y = h.outs[0].t.data;
        if (pass) {
            ck_assert(memcmp(y, y1, sizeof y1) == 0);
        } else {
            memcpy(y1, y, sizeof y1);
            for (int b = 0; b < B; b++)
                for (int hq = 0; hq < HQ; hq++)
                    for (int i = 0; i < S; i++) {
                        int hk = hq / (HQ / HKV);
                        double sc[T], mx = -INFINITY, sum = 0;
                        for (int t = 0; t < T; t++) {
                            const float *kr = t < P ? pk + ((b * HKV + hk) * P + t) * D
                                                    : kk + ((b * S + t - P) * HKV + hk) * D;
                            double d = 0;
                            for (int e = 0; e < D; e++)
                                d += (double)q[(b * S + i) * HQ * D + hq * D + e] * kr[e];
                            d = d / sqrt((double)D) + mask[i * T + t];
                            sc[t] = t > i + P ? -INFINITY : d;
                            mx = fmax(mx, sc[t]);
                        }
                        for (int t = 0; t < T; t++)
                            sum += (sc[t] = exp(sc[t] - mx));
                        for (int e = 0; e < D; e++) {
                            double o = 0;
                            for (int t = 0; t < T; t++) {
                                const float *vr = t < P ? pv + ((b * HKV + hk) * P + t) * D
                                                        : v + ((b * S + t - P) * HKV + hk) * D;
                                o += sc[t] / sum * vr[e];
                            }
                            float got = y[(b * S + i) * HQ * D + hq * D + e];
                            ck_assert_msg(fabs(got - o) < 1e-5, "b%d h%d i%d e%d: %g vs %g", b,
                                          hq, i, e, got, o);
                        }
                    }
        }
        h_free(&h);
    }
}
END_TEST

/* ---- losses -------------------------------------------------------------------- */

START_TEST(test_nll_and_sce)
{
    harness h;
    h_init(&h, 1);
    float x[] = {-1, -2, -3, -4, -5, -6};
    int64_t xd[] = {3, 2}, td[] = {3}, wd[] = {2};
    int64_t tgt[] = {0, 1, 1};
    float w[] = {2, 0.5f};
    poprt__value vx = tv(POPRT_DTYPE_FLOAT, 2, xd, x), vt = tv(POPRT_DTYPE_INT64, 1, td, tgt),
                 vw = tv(POPRT_DTYPE_FLOAT, 1, wd, w);
    poprt__value *in[] = {&vx, &vt, &vw};
    poprt__node *n = mk(&h, "NegativeLogLikelihoodLoss", 3, 1);
    set_s(n, "reduction", "none");
    ck_assert_int_eq(run(&h, n, 13, 3, in, 1), POPRT_OK);
    float want[] = {2, 2, 3};
    expect_f32(&h.outs[0], want, 3, 0);

    /* mean divides by the sum of the used weights; ignore_index drops row 1 */
    n = mk(&h, "NegativeLogLikelihoodLoss", 3, 1);
    set_i(n, "ignore_index", 1);
    ck_assert_int_eq(run(&h, n, 13, 3, in, 1), POPRT_OK);
    ck_assert_int_eq(h.outs[0].t.rank, 0);
    float wantm[] = {2.0f / 2.0f};
    expect_f32(&h.outs[0], wantm, 1, 1e-7);

    /* SCE = NLL of log_softmax; both logits rows (0, 0) give log 2 */
    float s[] = {0, 0, 5, 5};
    int64_t sd[] = {2, 2}, t2d[] = {2}, t2[] = {0, 1};
    poprt__value vs = tv(POPRT_DTYPE_FLOAT, 2, sd, s), vt2 = tv(POPRT_DTYPE_INT64, 1, t2d, t2);
    poprt__value *ins[] = {&vs, &vt2};
    n = mk(&h, "SoftmaxCrossEntropyLoss", 2, 2);
    set_s(n, "reduction", "sum");
    ck_assert_int_eq(run(&h, n, 13, 2, ins, 2), POPRT_OK);
    float wants[] = {(float)(2 * log(2.0))};
    expect_f32(&h.outs[0], wants, 1, 1e-6);
    float wantlp[] = {(float)-log(2.0), (float)-log(2.0), (float)-log(2.0), (float)-log(2.0)};
    expect_f32(&h.outs[1], wantlp, 4, 1e-6);
    h_free(&h);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_reduce");
    TCase *tc = tcase_create("kernels_reduce");
    tcase_add_test(tc, test_reduce_sum_keepdims_axes_input);
    tcase_add_test(tc, test_reduce_empty_axes);
    tcase_add_test(tc, test_reduce_attribute_axes_old_opsets);
    tcase_add_test(tc, test_reduce_empty_set_identities);
    tcase_add_test(tc, test_reduce_logsumexp_stable_and_ints);
    tcase_add_test(tc, test_reduce_middle_axis);
    tcase_add_test(tc, test_reduce_trailing_rows);
    tcase_add_test(tc, test_reduce_infer_unknown_axes);
    tcase_add_test(tc, test_argmax_select_last_index);
    tcase_add_test(tc, test_softmax_axis_semantics);
    tcase_add_test(tc, test_softmax_large_values_and_threads);
    tcase_add_test(tc, test_attention_tiny_causal);
    tcase_add_test(tc, test_attention_gqa_softcap);
    tcase_add_test(tc, test_attention_threads_same_bits);
    tcase_add_test(tc, test_rotary_embedding);
    tcase_add_test(tc, test_nll_and_sce);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
