/* Unit tests: the replace_* / workaround passes (lib/passes/list_precision.def,
 * replace group). Each test builds a graph where the pass applies, checks the
 * rewrite, and runs the model before and after on the same random inputs
 * through the public API. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builder.h"
#include "ir/dtype.h"

/* ---- building ------------------------------------------------------------- */

#define S(...) ((const char *[]){__VA_ARGS__})
#define D(...) ((const int64_t[]){__VA_ARGS__})

static poprt__node *nd(poprt__model *m, const char *op, int n_in, const char **ins, const char *out)
{
    return tb_node(m, op, n_in, ins, 1, (const char *[]){out});
}

static void a_i(poprt__node *n, const char *name, int64_t v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(a);
    a->i = v;
}

static void a_f(poprt__node *n, const char *name, float v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_FLOAT);
    ck_assert_ptr_nonnull(a);
    a->f = v;
}

static void a_s(poprt__node *n, const char *name, const char *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_STRING);
    ck_assert_ptr_nonnull(a);
    a->s = v;
    a->s_len = strlen(v);
}

static void a_ints(poprt__model *m, poprt__node *n, const char *name, int cnt, const int64_t *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS);
    ck_assert_ptr_nonnull(a);
    a->n = cnt;
    a->ints = poprt__arena_memdup(&m->arena, v, (size_t)cnt * sizeof *v);
}

static void cf(poprt__model *m, const char *name, int rank, const int64_t *dims, const float *v)
{
    tb_const(m, name, POPRT_DTYPE_FLOAT, rank, dims, v);
}

static void ci64(poprt__model *m, const char *name, int rank, const int64_t *dims, const int64_t *v)
{
    tb_const(m, name, POPRT_DTYPE_INT64, rank, dims, v);
}

static poprt_model *load(poprt__model *m)
{
    poprt_model *pm;
    ck_assert_msg(tb_load(m, &pm) == POPRT_OK, "load: %s", poprt_last_error());
    return pm;
}

/* ---- running -------------------------------------------------------------- */

enum { FILL_RANDOM, FILL_INTEGRAL, FILL_ONEHOT };
static int fill_mode = FILL_RANDOM;

static uint64_t rng;
static double rnd(void)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Runs m on inputs drawn from seed; returns output `out` as doubles. */
static double *run(poprt_model *m, size_t out, int64_t *n_out, poprt_dtype *dt_out)
{
    poprt_session *s;
    ck_assert_msg(poprt_session_create(m, NULL, &s) == POPRT_OK, "session: %s", poprt_last_error());
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    size_t ni = poprt_model_num_inputs(m);
    void *bufs[8] = {0};
    ck_assert_uint_le(ni, 8);
    for (size_t i = 0; i < ni; i++) {
        poprt_value_info info = {.size = sizeof info};
        ck_assert_int_eq(poprt_model_input(m, i, &info), POPRT_OK);
        int64_t n = 1;
        for (int d = 0; d < info.rank; d++)
            n *= info.dims[d];
        size_t nb = (size_t)n * poprt_dtype_size(info.dtype);
        bufs[i] = calloc(1, nb ? nb : 1);
        rng = 12345 + i * 77;
        int64_t hot = (int64_t)(rnd() * (double)n);
        for (int64_t k = 0; k < n; k++) {
            double v;
            if (fill_mode == FILL_ONEHOT)
                v = k == hot ? 1.5 : 0.0;
            else if (fill_mode == FILL_INTEGRAL || poprt__dtype_is_int(info.dtype))
                v = floor(rnd() * 10.0) - (poprt__dtype_is_signed(info.dtype) && fill_mode != FILL_INTEGRAL ? 5 : 0);
            else if (info.dtype == POPRT_DTYPE_BOOL)
                v = rnd() < 0.5;
            else
                v = rnd() * 4.0 - 2.0;
            if (info.dtype == POPRT_DTYPE_BOOL)
                ((unsigned char *)bufs[i])[k] = v != 0;
            else if (poprt__dtype_is_int(info.dtype))
                poprt__store_i64(bufs[i], info.dtype, k, (int64_t)v);
            else
                poprt__store_f64(bufs[i], info.dtype, k, v);
        }
        ck_assert_int_eq(poprt_stepio_set_input(io, info.name, info.dtype, info.dims, info.rank,
                                                bufs[i], nb),
                         POPRT_OK);
    }
    poprt_value_info oinfo = {.size = sizeof oinfo};
    ck_assert_int_eq(poprt_model_output(m, out, &oinfo), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output_alloc(io, oinfo.name), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "run: %s", poprt_last_error());
    poprt_dtype dt;
    int rank;
    const int64_t *dims;
    const void *data;
    ck_assert_int_eq(poprt_stepio_output(io, oinfo.name, &dt, &dims, &rank, &data, NULL), POPRT_OK);
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    double *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    for (int64_t k = 0; k < n; k++)
        r[k] = poprt__load_f64(data, dt, k);
    *n_out = n;
    if (dt_out)
        *dt_out = dt;
    poprt_stepio_free(io);
    poprt_session_free(s);
    for (size_t i = 0; i < ni; i++)
        free(bufs[i]);
    return r;
}

/* Every output of a and b agrees within tol (relative, with a 1e-6 floor). */
static void same_outputs(poprt_model *a, poprt_model *b, double tol)
{
    size_t no = poprt_model_num_outputs(a);
    ck_assert_uint_eq(no, poprt_model_num_outputs(b));
    for (size_t j = 0; j < no; j++) {
        int64_t na, nb;
        poprt_dtype da, db;
        double *x = run(a, j, &na, &da), *y = run(b, j, &nb, &db);
        ck_assert_int_eq(na, nb);
        ck_assert_int_eq(da, db);
        for (int64_t k = 0; k < na; k++) {
            double d = fabs(x[k] - y[k]), s = fmax(fabs(x[k]), fabs(y[k]));
            int ok = (isnan(x[k]) && isnan(y[k])) || x[k] == y[k] || d <= tol * s || d <= 1e-6;
            ck_assert_msg(ok, "output %zu element %lld: %.9g vs %.9g", j, (long long)k, x[k], y[k]);
        }
        free(x);
        free(y);
    }
}

/* Clones m, runs the pass on the clone, returns the clone. */
static poprt_model *apply(poprt_model *m, const char *pass, const char *args, size_t *changed)
{
    poprt_model *c;
    ck_assert_int_eq(poprt_model_clone(m, &c), POPRT_OK);
    poprt_pass_manager *pm;
    ck_assert_int_eq(poprt_pass_manager_create(&pm), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_add(pm, pass, args), POPRT_OK);
    ck_assert_msg(poprt_pass_manager_run(pm, c) == POPRT_OK, "%s: %s", pass, poprt_last_error());
    if (changed)
        *changed = poprt_pass_manager_changed(pm);
    poprt_pass_manager_free(pm);
    return c;
}

static int count(const poprt_model *m, const char *op)
{
    const poprt__graph *g = m->m->graph;
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        c += strcmp(((poprt__node *)g->nodes.items[i])->op_type, op) == 0;
    return c;
}

static poprt__node *producer(const poprt_model *m, const char *tensor)
{
    const poprt__graph *g = m->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        for (int k = 0; k < n->n_outputs; k++)
            if (n->outputs[k] && strcmp(n->outputs[k]->name, tensor) == 0)
                return n;
    }
    return NULL;
}

/* Applies pass, checks it changed something, compares outputs. */
static poprt_model *check_pass(poprt_model *m, const char *pass, const char *args, double tol)
{
    size_t changed;
    poprt_model *c = apply(m, pass, args, &changed);
    ck_assert_uint_eq(changed, 1);
    same_outputs(m, c, tol);
    return c;
}

static void done(poprt_model *a, poprt_model *b)
{
    poprt_model_free(a);
    poprt_model_free(b);
    fill_mode = FILL_RANDOM;
}

/* ---- tests ----------------------------------------------------------------- */

START_TEST(celu)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    a_f(nd(m, "Celu", 1, S("x"), "y"), "alpha", 2.0f);
    nd(m, "Celu", 1, S("x"), "y1");
    tb_output(m, "y");
    tb_output(m, "y1");
    poprt_model *a = load(m), *b = check_pass(a, "replace_celu", NULL, 1e-5);
    ck_assert_int_eq(count(b, "Celu"), 0);
    ck_assert_int_eq(count(b, "Elu"), 2);
    done(a, b);
}
END_TEST

START_TEST(clip_empty_inputs)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    cf(m, "hi", 0, NULL, (float[]){0.5f});
    cf(m, "lo", 0, NULL, (float[]){-0.5f});
    nd(m, "Clip", 3, S("x", NULL, "hi"), "y");
    nd(m, "Clip", 3, S("x", "lo", NULL), "y2");
    tb_output(m, "y");
    tb_output(m, "y2");
    poprt_model *a = load(m), *b = check_pass(a, "replace_clip_empty_inputs", NULL, 0);
    poprt__node *c1 = producer(b, "y"), *c2 = producer(b, "y2");
    ck_assert_int_eq(c1->n_inputs, 3);
    ck_assert_ptr_nonnull(c1->inputs[1]);
    ck_assert_int_eq(c2->n_inputs, 2);
    done(a, b);
}
END_TEST

START_TEST(consecutive_cast_with_notzero)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    a_i(nd(m, "Cast", 1, S("x"), "b"), "to", POPRT_DTYPE_BOOL);
    a_i(nd(m, "Cast", 1, S("b"), "y"), "to", POPRT_DTYPE_FLOAT);
    tb_output(m, "y");
    fill_mode = FILL_INTEGRAL; /* zeros and non-zeros */
    poprt_model *a = load(m), *b = check_pass(a, "replace_consecutive_cast_with_notzero", NULL, 0);
    ck_assert_int_eq(count(b, "Cast"), 0);
    ck_assert_int_eq(count(b, "NotZero"), 1);
    ck_assert_int_gt(poprt__model_opset(b->m, "ai.poprt"), 0);
    done(a, b);
}
END_TEST

START_TEST(div_with_mul)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    cf(m, "c", 1, D(3), (float[]){2.0f, -4.0f, 0.3f});
    nd(m, "Div", 2, S("x", "c"), "y");
    tb_input(m, "z", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    nd(m, "Div", 2, S("x", "z"), "y2"); /* not constant: stays */
    tb_output(m, "y");
    tb_output(m, "y2");
    poprt_model *a = load(m), *b = check_pass(a, "replace_div_with_mul", NULL, 1e-6);
    ck_assert_int_eq(count(b, "Div"), 1);
    ck_assert_int_eq(count(b, "Mul"), 1);
    done(a, b);
}
END_TEST

START_TEST(einsum_with_matmul)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "q", POPRT_DTYPE_FLOAT, 4, D(2, 3, 4, 5));
    tb_input(m, "k", POPRT_DTYPE_FLOAT, 4, D(2, 3, 6, 5));
    tb_input(m, "a", POPRT_DTYPE_FLOAT, 3, D(2, 3, 4));
    tb_input(m, "w", POPRT_DTYPE_FLOAT, 2, D(4, 5));
    tb_input(m, "v", POPRT_DTYPE_FLOAT, 1, D(4));
    a_s(nd(m, "Einsum", 2, S("q", "k"), "y1"), "equation", "bhqd,bhkd->bhqk");
    a_s(nd(m, "Einsum", 2, S("a", "w"), "y2"), "equation", "bnd,dh->bnh");
    a_s(nd(m, "Einsum", 2, S("a", "w"), "y3"), "equation", "...ij,...jk->...ik");
    a_s(nd(m, "Einsum", 2, S("a", "v"), "y4"), "equation", "bnd,d->nb");
    a_s(nd(m, "Einsum", 2, S("a", "a"), "y5"), "equation", "bnd,bnd->bn"); /* no m, n */
    a_s(nd(m, "Einsum", 1, S("a"), "y6"), "equation", "bnd->bdn");        /* stays */
    a_s(nd(m, "Einsum", 2, S("v", "w"), "y7"), "equation", "d, dh");      /* implicit -> h */
    for (int i = 1; i <= 7; i++) {
        char name[4] = {'y', (char)('0' + i), 0};
        tb_output(m, name);
    }
    poprt_model *a = load(m);
    size_t changed;
    poprt_model *b = apply(a, "replace_einsum_with_matmul", NULL, &changed);
    ck_assert_uint_eq(changed, 1);
    ck_assert_int_eq(count(b, "Einsum"), 1);
    ck_assert_int_eq(count(b, "MatMul"), 6);
    same_outputs(a, b, 1e-5);
    done(a, b);
}
END_TEST

START_TEST(erf_with_erfv2)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(8, 16));
    nd(m, "Erf", 1, S("x"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "replace_erf_with_erfv2", NULL, 1e-5);
    ck_assert_int_eq(count(b, "Erf"), 0);
    ck_assert_int_eq(count(b, "ErfV2"), 1);
    done(a, b);
}
END_TEST

static void cmp_test(const char *op, const char *pass, const char *int_op, const char *float_op)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "a", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    tb_input(m, "b", POPRT_DTYPE_FLOAT, 1, D(4));
    tb_input(m, "c", POPRT_DTYPE_INT32, 2, D(3, 4));
    tb_input(m, "d", POPRT_DTYPE_INT32, 2, D(3, 4));
    nd(m, op, 2, S("a", "b"), "y1");
    nd(m, op, 2, S("a", "a"), "y2");
    nd(m, op, 2, S("c", "d"), "y3");
    tb_output(m, "y1");
    tb_output(m, "y2");
    tb_output(m, "y3");
    poprt_model *a = load(m), *b = check_pass(a, pass, NULL, 0);
    ck_assert_int_eq(count(b, op), 0);
    ck_assert_int_eq(count(b, int_op), 1);
    ck_assert_int_eq(count(b, "Not"), 1);
    ck_assert_int_eq(count(b, float_op), 2);
    ck_assert_int_eq(count(b, "Or"), 2);
    done(a, b);
}

START_TEST(greater_or_equal) { cmp_test("GreaterOrEqual", "replace_greater_or_equal", "Less", "Greater"); }
END_TEST

START_TEST(less_or_equal) { cmp_test("LessOrEqual", "replace_less_or_equal", "Greater", "Less"); }
END_TEST

START_TEST(groupnorm_with_fast_norm)
{
    poprt__model *m = tb_model(18);
    tb_input(m, "x", POPRT_DTYPE_FLOAT16, 3, D(2, 4, 3));
    uint16_t one = poprt__float_to_half(1.5f), zero = poprt__float_to_half(0.25f);
    tb_const(m, "s", POPRT_DTYPE_FLOAT16, 1, D(1), &one);
    tb_const(m, "b", POPRT_DTYPE_FLOAT16, 1, D(1), &zero);
    poprt__node *n = nd(m, "GroupNormalization", 3, S("x", "s", "b"), "y");
    a_i(n, "num_groups", 1);
    a_f(n, "epsilon", 1e-3f);
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "replace_groupnorm_with_fast_norm", NULL, 2e-3);
    ck_assert_int_eq(count(b, "GroupNormalization"), 0);
    ck_assert_int_eq(count(b, "FastNorm"), 1);
    done(a, b);
}
END_TEST

START_TEST(half_reducemean)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT16, 3, D(2, 3, 4));
    poprt__node *n = nd(m, "ReduceMean", 1, S("x"), "y");
    a_ints(m, n, "axes", 1, D(1));
    a_i(n, "keepdims", 0);
    nd(m, "ReduceMean", 1, S("x"), "y2"); /* all axes, keepdims */
    tb_output(m, "y");
    tb_output(m, "y2");
    poprt_model *a = load(m), *b = check_pass(a, "replace_half_reducemean", NULL, 2e-3);
    ck_assert_int_eq(count(b, "ReduceMean"), 0);
    ck_assert_int_eq(count(b, "ReduceSum"), 2);
    ck_assert_int_eq(count(b, "Mul"), 2);
    done(a, b);
}
END_TEST

START_TEST(hardswish)
{
    poprt__model *m = tb_model(14);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(4, 8));
    nd(m, "HardSwish", 1, S("x"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "replace_hardswish", NULL, 1e-6);
    ck_assert_int_eq(count(b, "HardSwish"), 0);
    ck_assert_int_eq(count(b, "HardSigmoid"), 1);
    done(a, b);
}
END_TEST

START_TEST(nonzero)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    nd(m, "NonZero", 1, S("x"), "y");
    tb_output(m, "y");
    poprt__type_set_tensor(&m->arena, &poprt__graph_find(m->graph, "y")->type, POPRT_DTYPE_INT64, 2,
                           D(2, 1));
    fill_mode = FILL_ONEHOT;
    poprt_model *a = load(m), *b = check_pass(a, "replace_nonzero", NULL, 0);
    ck_assert_int_eq(count(b, "NonZero"), 0);
    ck_assert_int_eq(count(b, "ArgMax"), 1);
    done(a, b);
    /* unknown count: untouched */
    m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    nd(m, "NonZero", 1, S("x"), "y");
    tb_output(m, "y");
    a = load(m);
    size_t changed;
    b = apply(a, "replace_nonzero", NULL, &changed);
    ck_assert_uint_eq(changed, 0);
    ck_assert_int_eq(count(b, "NonZero"), 1);
    done(a, b);
}
END_TEST

START_TEST(pow_const)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    nd(m, "Abs", 1, S("x"), "ax");
    const float e[] = {2, 3, 0.5f, -1, -0.5f, 4, -2, 1, 1.7f};
    for (int i = 0; i < 9; i++) {
        char c[8], y[8];
        snprintf(c, sizeof c, "e%d", i);
        snprintf(y, sizeof y, "y%d", i);
        cf(m, c, 0, NULL, &e[i]);
        int pos = e[i] == 0.5f || e[i] == -0.5f || e[i] == 1.7f; /* real results */
        nd(m, "Pow", 2, S(pos ? "ax" : "x", c), y);
        tb_output(m, y);
    }
    poprt_model *a = load(m), *b = check_pass(a, "replace_pow", NULL, 1e-6);
    ck_assert_int_eq(count(b, "Pow"), 1); /* 1.7 stays */
    ck_assert_int_eq(count(b, "Sqrt"), 2);
    done(a, b);
}
END_TEST

START_TEST(softmax)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(3, 5));
    tb_input(m, "x2", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    nd(m, "Softmax", 1, S("x"), "y");
    nd(m, "Softmax", 1, S("x2"), "y2");
    tb_output(m, "y");
    tb_output(m, "y2");
    poprt_model *a = load(m), *b = check_pass(a, "replace_softmax", NULL, 1e-6);
    ck_assert_int_eq(count(b, "Softmax"), 1);
    ck_assert_int_eq(count(b, "SoftmaxV2"), 1);
    done(a, b);
}
END_TEST

START_TEST(trilu)
{
    poprt__model *m = tb_model(14);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, D(2, 3, 4));
    ci64(m, "k", 0, NULL, (int64_t[]){1});
    nd(m, "Trilu", 2, S("x", "k"), "y");
    a_i(nd(m, "Trilu", 1, S("x"), "y2"), "upper", 0);
    tb_output(m, "y");
    tb_output(m, "y2");
    poprt_model *a = load(m), *b = check_pass(a, "replace_trilu", NULL, 0);
    ck_assert_int_eq(count(b, "Trilu"), 0);
    ck_assert_int_eq(count(b, "Where"), 2);
    done(a, b);
}
END_TEST

START_TEST(where_mask)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "s", POPRT_DTYPE_FLOAT, 4, D(2, 2, 3, 5));
    tb_input(m, "mf", POPRT_DTYPE_FLOAT, 4, D(2, 1, 1, 5));
    cf(m, "zero", 0, NULL, (float[]){0});
    cf(m, "big", 0, NULL, (float[]){-10000.0f});
    const unsigned char first[5] = {1, 0, 0, 0, 0};
    tb_const(m, "first", POPRT_DTYPE_BOOL, 1, D(5), first);
    nd(m, "Less", 2, S("mf", "zero"), "neg");
    nd(m, "Or", 2, S("neg", "first"), "keep"); /* every row keeps one position */
    nd(m, "Where", 3, S("keep", "s", "big"), "masked");
    nd(m, "Softmax", 1, S("masked"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "replace_where_mask", NULL, 1e-5);
    ck_assert_int_eq(count(b, "Add"), 1);
    ck_assert_int_eq(count(b, "Where"), 1);
    poprt__node *w = producer(b, "masked");
    ck_assert_str_eq(w->op_type, "Add");
    done(a, b);
}
END_TEST

START_TEST(where_with_mul_add)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "a", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    tb_input(m, "b", POPRT_DTYPE_FLOAT, 1, D(4));
    nd(m, "Greater", 2, S("a", "b"), "c");
    nd(m, "Where", 3, S("c", "a", "b"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "replace_where_with_mul_add", NULL, 0);
    ck_assert_int_eq(count(b, "Where"), 0);
    ck_assert_int_eq(count(b, "Mul"), 2);
    ck_assert_int_eq(count(b, "Add"), 1);
    done(a, b);
}
END_TEST

START_TEST(where_with_wherev2)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "c", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    tb_input(m, "a", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    tb_input(m, "b", POPRT_DTYPE_FLOAT, 1, D(4));
    a_i(nd(m, "Cast", 1, S("c"), "cb"), "to", POPRT_DTYPE_BOOL);
    nd(m, "Where", 3, S("cb", "a", "b"), "y");
    tb_output(m, "y");
    fill_mode = FILL_INTEGRAL;
    poprt_model *a = load(m), *b = check_pass(a, "replace_where_with_wherev2", NULL, 0);
    ck_assert_int_eq(count(b, "Where"), 0);
    ck_assert_int_eq(count(b, "Cast"), 0);
    ck_assert_int_eq(count(b, "WhereV2"), 1);
    done(a, b);
}
END_TEST

START_TEST(batchnorm)
{
    poprt__model *m = tb_model(15);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(4, 3));
    cf(m, "s", 1, D(3), (float[]){1, 2, 3});
    cf(m, "b", 1, D(3), (float[]){0, 1, -1});
    cf(m, "mu", 1, D(3), (float[]){0.5f, 0, -0.5f});
    cf(m, "var", 1, D(3), (float[]){1, 0.5f, 2});
    nd(m, "BatchNormalization", 5, S("x", "s", "b", "mu", "var"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "batchnorm_workaround", NULL, 1e-6);
    ck_assert_int_eq(count(b, "Unsqueeze"), 1);
    ck_assert_int_eq(count(b, "Squeeze"), 1);
    ck_assert_int_eq(producer(b, "y")->op_type[0], 'S');
    done(a, b);
}
END_TEST

START_TEST(cumsum)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(3, 4));
    tb_const(m, "ax", POPRT_DTYPE_INT32, 0, NULL, (int32_t[]){-1});
    nd(m, "CumSum", 2, S("x", "ax"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "cumsum_workaround", NULL, 0);
    poprt__tensor *t = producer(b, "y")->inputs[1];
    ck_assert_int_eq(t->type.elem, POPRT_DTYPE_INT64);
    ck_assert_int_eq(*(const int64_t *)poprt__tensor_data(t), 1);
    done(a, b);
}
END_TEST

START_TEST(float_ops)
{
    poprt__model *m = tb_model(14);
    tb_input(m, "x", POPRT_DTYPE_INT8, 2, D(3, 5));
    ci64(m, "K", 1, D(1), (int64_t[]){2});
    tb_node(m, "TopK", 2, S("x", "K"), 2, S("v", "i"));
    nd(m, "ReduceMax", 1, S("x"), "r");
    nd(m, "ArgMin", 1, S("x"), "am");
    nd(m, "Relu", 1, S("x"), "re");
    tb_output(m, "v");
    tb_output(m, "i");
    tb_output(m, "r");
    tb_output(m, "am");
    tb_output(m, "re");
    poprt_model *a = load(m), *b = check_pass(a, "float_ops_workaround", NULL, 0);
    ck_assert_int_eq(count(b, "Cast"), 7); /* 4 in, 3 back */
    ck_assert_str_eq(producer(b, "v")->op_type, "Cast");
    ck_assert_str_eq(producer(b, "am")->op_type, "ArgMin");
    done(a, b);
}
END_TEST

START_TEST(indices)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "d", POPRT_DTYPE_FLOAT, 2, D(5, 3));
    ci64(m, "ix", 1, D(3), (int64_t[]){-1, 0, -5});
    nd(m, "Gather", 2, S("d", "ix"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "indices_workaround", NULL, 0);
    const int64_t *ix = poprt__tensor_data(producer(b, "y")->inputs[1]);
    ck_assert_int_eq(ix[0], 4);
    ck_assert_int_eq(ix[1], 0);
    ck_assert_int_eq(ix[2], 0);
    done(a, b);
}
END_TEST

START_TEST(topk)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(3, 5));
    ci64(m, "K", 1, D(1), (int64_t[]){3});
    tb_node(m, "TopK", 2, S("x", "K"), 2, S("v", "i"));
    tb_output(m, "v");
    tb_output(m, "i");
    poprt_model *a = load(m), *b = check_pass(a, "topk_workaround", NULL, 0);
    ck_assert_int_eq(poprt__attr_i(producer(b, "v"), "axis", -1), 1);
    done(a, b);
}
END_TEST

START_TEST(auto_insert_remap)
{
    poprt_model *a = tb_add_relu(0);
    size_t changed;
    poprt_model *b = apply(a, "auto_insert_remap", "remap_mode=before_add", &changed);
    ck_assert_uint_eq(changed, 0);
    poprt_model_free(b);
    b = apply(a, "auto_insert_remap", NULL, &changed);
    ck_assert_uint_eq(changed, 0);
    same_outputs(a, b, 0);
    poprt_pass_manager *pm;
    poprt_pass_manager_create(&pm);
    poprt_pass_manager_add(pm, "auto_insert_remap", "remap_mode=sideways");
    ck_assert_int_eq(poprt_pass_manager_run(pm, b), POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "sideways"));
    poprt_pass_manager_free(pm);
    done(a, b);
}
END_TEST

START_TEST(overlap_io)
{
    poprt_model *a = tb_add_relu(0);
    size_t changed;
    poprt_model *b = apply(a, "overlap_io", NULL, &changed);
    ck_assert_uint_eq(changed, 0);
    same_outputs(a, b, 0);
    poprt_pass_manager *pm;
    poprt_pass_manager_create(&pm);
    /* a pass that takes no arguments refuses them when they are given */
    ck_assert_int_eq(poprt_pass_manager_add(pm, "overlap_io", "tiles=4"),
                     POPRT_STATUS_INVALID_OPTION);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "takes no arguments"));
    poprt_pass_manager_free(pm);
    done(a, b);
}
END_TEST

START_TEST(trace_folding)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, D(2, 3, 4));
    ci64(m, "zero", 0, NULL, (int64_t[]){0});
    ci64(m, "ax0", 1, D(1), (int64_t[]){0});
    ci64(m, "rest", 1, D(1), (int64_t[]){-1});
    nd(m, "Shape", 1, S("x"), "shp");
    nd(m, "Gather", 2, S("shp", "zero"), "n");
    nd(m, "Unsqueeze", 2, S("n", "ax0"), "n1");
    a_i(nd(m, "Concat", 2, S("n1", "rest"), "target"), "axis", 0);
    nd(m, "Reshape", 2, S("x", "target"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "trace_folding", NULL, 0);
    ck_assert_int_eq(count(b, "Shape"), 0);
    ck_assert_int_eq(count(b, "Concat"), 0);
    ck_assert_int_eq(count(b, "Reshape"), 1);
    const int64_t *t = poprt__tensor_data(producer(b, "y")->inputs[1]);
    ck_assert_ptr_nonnull(t);
    ck_assert_int_eq(t[0], 2);
    ck_assert_int_eq(t[1], -1);
    done(a, b);
}
END_TEST

START_TEST(post_expand)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(1, 3));
    ci64(m, "shape", 1, D(2), (int64_t[]){4, 3});
    cf(m, "two", 0, NULL, (float[]){2});
    nd(m, "Expand", 2, S("x", "shape"), "e");
    nd(m, "Exp", 1, S("e"), "t");
    nd(m, "Mul", 2, S("two", "t"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "post_expand", NULL, 0);
    ck_assert_str_eq(producer(b, "y")->op_type, "Expand");
    ck_assert_int_eq(count(b, "Expand"), 1);
    done(a, b);
}
END_TEST

START_TEST(move_subgraph_initializer)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "c", POPRT_DTYPE_BOOL, 0, NULL);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, D(3));
    poprt__node *n = nd(m, "If", 1, S("c"), "y");
    const char *names[2] = {"then_branch", "else_branch"};
    for (int b = 0; b < 2; b++) {
        poprt__graph *sub = poprt__graph_new(m, m->graph, names[b]);
        sub->parent_node = n;
        poprt__tensor *w = poprt__graph_tensor(sub, "w");
        const float wv[3] = {1.0f + b, -2, 0.5f};
        poprt__type_set_tensor(&m->arena, &w->type, POPRT_DTYPE_FLOAT, 1, D(3));
        poprt__tensor_set_data(w, poprt__arena_memdup(&m->arena, wv, sizeof wv));
        w->nbytes = sizeof wv;
        w->is_initializer = 1;
        poprt__vec_push(&sub->initializers, w);
        poprt__node *add = poprt__graph_add_node(sub, b ? "Sub" : "Add", "", NULL, 2, 1);
        poprt__node_set_input(add, 0, poprt__graph_find(m->graph, "x"));
        poprt__node_set_input(add, 1, w);
        add->outputs[0] = poprt__graph_tensor(sub, "o");
        add->outputs[0]->is_output = 1;
        poprt__graph_add_output(sub, add->outputs[0]);
        poprt__attr *at = poprt__node_add_attr(n, names[b], POPRT__ATTR_GRAPH);
        at->g = sub;
    }
    tb_output(m, "y");
    poprt_model *a = load(m), *b = check_pass(a, "move_subgraph_initializer", NULL, 0);
    poprt__node *iff = producer(b, "y");
    for (int k = 0; k < iff->n_attrs; k++)
        ck_assert_uint_eq(iff->attrs[k].g->initializers.len, 0);
    ck_assert_uint_eq(b->m->graph->initializers.len, 2);
    done(a, b);
}
END_TEST

START_TEST(remove_input_cast)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "ids", POPRT_DTYPE_FLOAT16, 2, D(2, 3));
    float table[40];
    for (int i = 0; i < 40; i++)
        table[i] = (float)i * 0.25f;
    cf(m, "table", 2, D(10, 4), table);
    a_i(nd(m, "Cast", 1, S("ids"), "ids32"), "to", POPRT_DTYPE_INT32);
    nd(m, "Gather", 2, S("table", "ids32"), "y");
    tb_output(m, "y");
    fill_mode = FILL_INTEGRAL;
    poprt_model *a = load(m), *b = check_pass(a, "remove_input_cast", NULL, 0);
    ck_assert_int_eq(count(b, "Cast"), 0);
    poprt_value_info info = {.size = sizeof info};
    poprt_model_input(b, 0, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_INT32);
    done(a, b);
}
END_TEST

START_TEST(eight_bits_io)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "img", POPRT_DTYPE_FLOAT, 4, D(1, 3, 2, 2));
    tb_input(m, "aux", POPRT_DTYPE_FLOAT, 1, D(3));
    cf(m, "scale", 0, NULL, (float[]){1.0f / 255});
    nd(m, "Mul", 2, S("img", "scale"), "y");
    nd(m, "Neg", 1, S("aux"), "y2");
    tb_output(m, "y");
    tb_output(m, "y2");
    fill_mode = FILL_INTEGRAL;
    poprt_model *a = load(m), *b = check_pass(a, "eight_bits_io", NULL, 0);
    poprt_value_info info = {.size = sizeof info};
    poprt_model_input(b, 0, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_UINT8);
    poprt_model_input(b, 1, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(count(b, "Cast"), 1);
    poprt_model_free(b);
    /* explicit list */
    b = check_pass(a, "eight_bits_io", "inputs=[aux]", 0);
    poprt_model_input(b, 0, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_FLOAT);
    poprt_model_input(b, 1, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_UINT8);
    done(a, b);
}
END_TEST

START_TEST(apply_ir_pass)
{
    poprt__model *m = tb_model(13);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    cf(m, "two", 0, NULL, (float[]){2});
    nd(m, "Pow", 2, S("x", "two"), "p");
    nd(m, "Div", 2, S("p", "two"), "y");
    tb_output(m, "y");
    poprt_model *a = load(m);
    poprt_model *b = check_pass(a, "apply_ir_pass", "passes=[replace_pow,replace_div_with_mul]", 1e-6);
    ck_assert_int_eq(count(b, "Pow"), 0);
    ck_assert_int_eq(count(b, "Div"), 0);
    ck_assert_int_eq(count(b, "Mul"), 2);
    poprt_pass_manager *pm;
    const char *bad[] = {"passes=[replace_pow,no_such_pass]", "passes=[apply_ir_pass]", "passes=[x",
                         "list=[replace_pow]"};
    for (int i = 0; i < 4; i++) {
        poprt_pass_manager_create(&pm);
        /* malformed text fails when added, a wrong list when run */
        if (poprt_pass_manager_add(pm, "apply_ir_pass", bad[i]) == POPRT_OK)
            ck_assert_int_eq(poprt_pass_manager_run(pm, a), POPRT_STATUS_PASS_FAILED);
        else
            ck_assert_int_eq(i, 2);
        poprt_pass_manager_free(pm);
    }
    ck_assert_int_eq(count(a, "Pow"), 1); /* nothing half-applied */
    done(a, b);
}
END_TEST

/* Every pass of the group on a model where none applies: no change, no error. */
START_TEST(no_match_no_change)
{
    static const char *const passes[] = {
        "replace_celu", "replace_clip_empty_inputs", "replace_consecutive_cast_with_notzero",
        "replace_div_with_mul", "replace_einsum_with_matmul", "replace_erf_with_erfv2",
        "replace_greater_or_equal", "replace_less_or_equal", "replace_groupnorm_with_fast_norm",
        "replace_half_reducemean", "replace_hardswish", "replace_nonzero", "replace_pow",
        "replace_softmax", "replace_trilu", "replace_where_mask", "replace_where_with_mul_add",
        "replace_where_with_wherev2", "batchnorm_workaround", "cumsum_workaround",
        "float_ops_workaround", "indices_workaround", "topk_workaround", "auto_insert_remap",
        "trace_folding", "post_expand", "move_subgraph_initializer", "remove_input_cast",
        "overlap_io", "eight_bits_io", "apply_ir_pass"};
    poprt_model *a = tb_add_relu(1);
    for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
        size_t changed;
        poprt_model *b = apply(a, passes[i], NULL, &changed);
        ck_assert_msg(changed == 0, "%s changed a model it does not apply to", passes[i]);
        const char *text;
        ck_assert_int_eq(poprt_pass_describe(passes[i], &text), POPRT_OK);
        ck_assert_uint_gt(strlen(text), 10);
        poprt_model_free(b);
    }
    poprt_model_free(a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("passes_replace");
    TCase *tc = tcase_create("passes_replace");
    tcase_add_test(tc, celu);
    tcase_add_test(tc, clip_empty_inputs);
    tcase_add_test(tc, consecutive_cast_with_notzero);
    tcase_add_test(tc, div_with_mul);
    tcase_add_test(tc, einsum_with_matmul);
    tcase_add_test(tc, erf_with_erfv2);
    tcase_add_test(tc, greater_or_equal);
    tcase_add_test(tc, less_or_equal);
    tcase_add_test(tc, groupnorm_with_fast_norm);
    tcase_add_test(tc, half_reducemean);
    tcase_add_test(tc, hardswish);
    tcase_add_test(tc, nonzero);
    tcase_add_test(tc, pow_const);
    tcase_add_test(tc, softmax);
    tcase_add_test(tc, trilu);
    tcase_add_test(tc, where_mask);
    tcase_add_test(tc, where_with_mul_add);
    tcase_add_test(tc, where_with_wherev2);
    tcase_add_test(tc, batchnorm);
    tcase_add_test(tc, cumsum);
    tcase_add_test(tc, float_ops);
    tcase_add_test(tc, indices);
    tcase_add_test(tc, topk);
    tcase_add_test(tc, auto_insert_remap);
    tcase_add_test(tc, overlap_io);
    tcase_add_test(tc, trace_folding);
    tcase_add_test(tc, post_expand);
    tcase_add_test(tc, move_subgraph_initializer);
    tcase_add_test(tc, remove_input_cast);
    tcase_add_test(tc, eight_bits_io);
    tcase_add_test(tc, apply_ir_pass);
    tcase_add_test(tc, no_match_no_change);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
