/* Unit tests: the tree-ensemble evaluator (lib/kernels/ref/tree_ensemble.c)
 * against a direct walk of the same trees written here. Random ensembles use
 * every branch mode, thresholds and inputs at +-inf, NaN and exactly at the
 * thresholds, float and double inputs, float and double thresholds, one and
 * two weights per leaf, every aggregate; rows are not a multiple of the 8
 * rows the evaluator carries together, and span several blocks. The values
 * must be equal (tolerance 0: both add the leaves of a row in tree order in
 * double). The layout prepared at session creation and the one a run builds
 * (a node in a subgraph) must agree, and a prepared layout with random bytes
 * changed (as a corrupt executable file could hand it over) must never be
 * read out of bounds: the kernel returns, with some status (the ASan build
 * checks the accesses). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "poprt/poprt.h"
#include "ir/op.h"
#include "ir/ml_geom.h"
#include "kernels/kernel.h"
#include "kernels/ref/ml.h"
#include "runtime/runtime.h"

#define MAXN 64   /* nodes per tree */
#define TREES 6

enum { M_LEQ, M_LT, M_GTE, M_GT, M_EQ, M_NEQ, M_LEAF };
static const char *const mode_names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                         "BRANCH_EQ",  "BRANCH_NEQ", "LEAF"};

typedef struct rtree {
    int n;
    int mode[MAXN], feat[MAXN], yes[MAXN], no[MAXN], track[MAXN];
    double thr[MAXN];
    int nw[MAXN], target[MAXN][2];
    double w[MAXN][2];
} rtree;

static uint32_t rng_state = 12345;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* Values chosen so that rows land on thresholds and on the special values
 * (special: also +-inf and NaN). */
static double pick_value(int special)
{
    static const double v[] = {-1.0, -0.5, 0.0, 0.5, 1.0, 0.25, -0.25, INFINITY, -INFINITY, NAN};
    if (rnd() % 3 == 0)
        return (double)(float)((int)(rnd() % 2001) - 1000) / 1000.0;
    return v[rnd() % (special ? 10u : 7u)];
}

/* Thresholds: inf_thr, +-inf and NaN too (some of which only the general
 * layout expresses: x >= -inf, x <= inf). */
static int inf_thr;

static int grow(rtree *t, int depth, int n_modes, int F, int T, int weights)
{
    int i = t->n++;
    t->track[i] = rnd() % 2;
    if (depth == 0 || (depth < 3 && rnd() % 5 == 0)) {
        t->mode[i] = M_LEAF;
        t->nw[i] = weights;
        for (int k = 0; k < weights; k++) {
            t->target[i][k] = (int)(rnd() % (uint32_t)T);
            t->w[i][k] = (double)(float)((int)(rnd() % 2001) - 1000) / 256.0;
        }
        return i;
    }
    t->mode[i] = (int)(rnd() % (uint32_t)n_modes);
    t->feat[i] = (int)(rnd() % (uint32_t)F);
    t->thr[i] = (double)(float)pick_value(inf_thr);
    t->yes[i] = grow(t, depth - 1, n_modes, F, T, weights);
    t->no[i] = grow(t, depth - 1, n_modes, F, T, weights);
    return i;
}

/* The specification's walk: NaN takes the true branch for BRANCH_NEQ or when
 * tracked, every other value compares. */
static void walk(const rtree *t, const double *x, int agg, double *acc, int *hit)
{
    int i = 0;
    while (t->mode[i] != M_LEAF) {
        double v = x[t->feat[i]], s = t->thr[i];
        int c;
        if (isnan(v))
            c = t->track[i] || t->mode[i] == M_NEQ;
        else
            c = t->mode[i] == M_LEQ ? v <= s : t->mode[i] == M_LT ? v < s
                : t->mode[i] == M_GTE ? v >= s : t->mode[i] == M_GT ? v > s
                : t->mode[i] == M_EQ ? v == s : v != s;
        i = c ? t->yes[i] : t->no[i];
    }
    for (int k = 0; k < t->nw[i]; k++) {
        int tg = t->target[i][k];
        double w = t->w[i][k];
        if (agg == POPRT__AGG_SUM || agg == POPRT__AGG_AVERAGE)
            acc[tg] += w;
        else if (!hit[tg] || (agg == POPRT__AGG_MIN ? w < acc[tg] : w > acc[tg]))
            acc[tg] = w;
        hit[tg] = 1;
    }
}

/* ---- the node, built in the IR --------------------------------------------------- */

typedef struct fixture {
    poprt__model *m;
    struct poprt__exec x;
} fixture;

static poprt__attr *add(poprt__node *n, const char *name, poprt__attr_type type, int64_t count)
{
    poprt__attr *a = poprt__node_add_attr(n, name, type);
    ck_assert_ptr_nonnull(a);
    a->n = count;
    return a;
}

static void add_ints(fixture *fx, poprt__node *n, const char *name, const int64_t *v, int64_t c)
{
    poprt__attr *a = add(n, name, POPRT__ATTR_INTS, c);
    a->ints = poprt__arena_array(&fx->m->arena, (size_t)c + 1, sizeof *a->ints);
    memcpy(a->ints, v, (size_t)c * sizeof *v);
}

static poprt__node *forest_node(fixture *fx, const rtree *trees, int n_trees, int T, int agg,
                                int double_thresholds)
{
    static const char *const aggs[] = {"AVERAGE", "SUM", "MIN", "MAX"};
    poprt__node *n = poprt__graph_add_node(fx->m->graph, "TreeEnsembleRegressor", "ai.onnx.ml",
                                           "forest", 1, 1);
    ck_assert_ptr_nonnull(n);
    int64_t nn = 0, nw = 0;
    for (int t = 0; t < n_trees; t++) {
        nn += trees[t].n;
        for (int i = 0; i < trees[t].n; i++)
            nw += trees[t].mode[i] == M_LEAF ? trees[t].nw[i] : 0;
    }
    int64_t *tid = calloc((size_t)nn, 8), *nid = calloc((size_t)nn, 8), *fid = calloc((size_t)nn, 8);
    int64_t *yes = calloc((size_t)nn, 8), *no = calloc((size_t)nn, 8), *tr = calloc((size_t)nn, 8);
    int64_t *wt = calloc((size_t)nw + 1, 8), *wn = calloc((size_t)nw + 1, 8);
    int64_t *wi = calloc((size_t)nw + 1, 8);
    double *thr = calloc((size_t)nn, 8);
    float *w = calloc((size_t)nw + 1, 4);
    poprt__attr *modes = add(n, "nodes_modes", POPRT__ATTR_STRINGS, nn);
    modes->strings = poprt__arena_array(&fx->m->arena, (size_t)nn, sizeof *modes->strings);
    modes->string_lens = poprt__arena_array(&fx->m->arena, (size_t)nn, sizeof(size_t));
    int64_t k = 0, j = 0;
    for (int t = 0; t < n_trees; t++)
        for (int i = 0; i < trees[t].n; i++, k++) {
            const rtree *r = &trees[t];
            tid[k] = t, nid[k] = i, fid[k] = r->feat[i], tr[k] = r->track[i];
            yes[k] = r->mode[i] == M_LEAF ? 0 : r->yes[i];
            no[k] = r->mode[i] == M_LEAF ? 0 : r->no[i];
            thr[k] = r->thr[i];
            modes->strings[k] = mode_names[r->mode[i]];
            modes->string_lens[k] = strlen(mode_names[r->mode[i]]);
            for (int q = 0; r->mode[i] == M_LEAF && q < r->nw[i]; q++, j++)
                wt[j] = t, wn[j] = i, wi[j] = r->target[i][q], w[j] = (float)r->w[i][q];
        }
    add_ints(fx, n, "nodes_treeids", tid, nn);
    add_ints(fx, n, "nodes_nodeids", nid, nn);
    add_ints(fx, n, "nodes_featureids", fid, nn);
    add_ints(fx, n, "nodes_truenodeids", yes, nn);
    add_ints(fx, n, "nodes_falsenodeids", no, nn);
    add_ints(fx, n, "nodes_missing_value_tracks_true", tr, nn);
    add_ints(fx, n, "target_treeids", wt, nw);
    add_ints(fx, n, "target_nodeids", wn, nw);
    add_ints(fx, n, "target_ids", wi, nw);
    poprt__attr *ww = add(n, "target_weights", POPRT__ATTR_FLOATS, nw);
    ww->floats = poprt__arena_array(&fx->m->arena, (size_t)nw + 1, sizeof(float));
    memcpy(ww->floats, w, (size_t)nw * sizeof *w);
    if (double_thresholds) { /* nodes_values_as_tensor */
        poprt__attr *a = add(n, "nodes_values_as_tensor", POPRT__ATTR_TENSOR, 0);
        a->t = poprt__arena_alloc(&fx->m->arena, sizeof *a->t);
        memset(a->t, 0, sizeof *a->t);
        ck_assert_int_eq(poprt__type_set_tensor(&fx->m->arena, &a->t->type, POPRT_DTYPE_DOUBLE, 1,
                                                &nn), POPRT_OK);
        a->t->nbytes = (size_t)nn * 8;
        void *data = poprt__arena_array(&fx->m->arena, (size_t)nn + 1, 8);
        memcpy(data, thr, (size_t)nn * 8);
        poprt__tensor_set_data(a->t, data);
    } else {
        poprt__attr *a = add(n, "nodes_values", POPRT__ATTR_FLOATS, nn);
        a->floats = poprt__arena_array(&fx->m->arena, (size_t)nn + 1, sizeof(float));
        for (int64_t i = 0; i < nn; i++)
            a->floats[i] = (float)thr[i];
    }
    poprt__attr *nt = add(n, "n_targets", POPRT__ATTR_INT, 0);
    nt->i = T;
    poprt__attr *ag = add(n, "aggregate_function", POPRT__ATTR_STRING, 0);
    ag->s = aggs[agg];
    ag->s_len = strlen(aggs[agg]);
    n->op = poprt__op_find("ai.onnx.ml", "TreeEnsembleRegressor", 3);
    n->opset = 3;
    free(tid), free(nid), free(fid), free(yes), free(no), free(tr), free(wt), free(wn), free(wi);
    free(thr), free(w);
    return n;
}

static poprt__value tensor(int32_t dt, int64_t rows, int64_t cols, void *data)
{
    poprt__value v;
    memset(&v, 0, sizeof v);
    v.kind = POPRT__KIND_TENSOR;
    v.t.dtype = dt;
    v.t.rank = 2;
    v.t.dims[0] = rows;
    v.t.dims[1] = cols;
    v.t.numel = rows * cols;
    v.t.nbytes = (size_t)v.t.numel * poprt_dtype_size((poprt_dtype)dt);
    v.t.data = data;
    return v;
}

static poprt_status run_forest(fixture *fx, poprt__node *n, poprt__value *x, float *y, int64_t T,
                               const void *state, size_t state_size)
{
    poprt__value out = tensor(POPRT_DTYPE_FLOAT, x->t.dims[0], T, y);
    poprt__value *in[1] = {x}, *outs[1] = {&out};
    poprt__kctx k = {.node = n, .opset = 3, .n_in = 1, .in = in, .n_out = 1, .out = outs,
                     .exec = &fx->x, .state = state, .state_size = state_size};
    return poprt__ref_tree_ensemble(&k);
}

static poprt_status prepare(poprt__node *n, int32_t x_dt, int64_t F, void **state, size_t *size,
                            fixture *fx)
{
    poprt__type xt;
    memset(&xt, 0, sizeof xt);
    int64_t dims[2] = {-1, F};
    ck_assert_int_eq(poprt__type_set_tensor(&fx->m->arena, &xt, x_dt, 2, dims), POPRT_OK);
    poprt__ival in = {&xt, NULL, 0};
    poprt__prep_ctx c = {.node = n, .opset = 3, .n_in = 1, .in = &in, .n_out = 0};
    return poprt__ref_tree_ensemble_prepare(&c, state, size);
}

/* One random ensemble, evaluated three ways: the walk above, a run building
 * its own layout and a run with the prepared one. */
static void check_forest(int n_modes, int weights, int agg, int double_thr, int32_t x_dt,
                         int64_t rows)
{
    fixture fx;
    memset(&fx, 0, sizeof fx);
    ck_assert_int_eq(poprt__model_new(&fx.m), POPRT_OK);
    poprt__arena_init(&fx.x.strings);
    const int F = 4, T = weights == 2 ? 3 : 2;
    rtree trees[TREES];
    memset(trees, 0, sizeof trees);
    for (int t = 0; t < TREES; t++)
        grow(&trees[t], 4, n_modes, F, T, weights);
    poprt__node *n = forest_node(&fx, trees, TREES, T, agg, double_thr);
    double *xd = malloc((size_t)(rows * F) * sizeof *xd), *want = calloc((size_t)(rows * T), 8);
    float *xf = malloc((size_t)(rows * F) * sizeof *xf);
    for (int64_t i = 0; i < rows * F; i++)
        xd[i] = x_dt == POPRT_DTYPE_DOUBLE ? pick_value(1) : (double)(float)pick_value(1);
    for (int64_t r = 0; r < rows; r++) /* feature values exactly at some nodes' thresholds */
        for (int q = 0; q < 3; q++) {
            const rtree *t = &trees[rnd() % TREES];
            int j = (int)(rnd() % (uint32_t)t->n);
            if (t->mode[j] != M_LEAF)
                xd[r * F + t->feat[j]] = t->thr[j];
        }
    for (int64_t i = 0; i < rows * F; i++)
        xf[i] = (float)xd[i];
    for (int64_t r = 0; r < rows; r++) {
        int hit[4] = {0};
        for (int t = 0; t < TREES; t++)
            walk(&trees[t], xd + r * F, agg, want + r * T, hit);
        for (int t = 0; t < T && agg == POPRT__AGG_AVERAGE; t++)
            want[r * T + t] /= TREES;
    }
    poprt__value x = tensor(x_dt, rows, F, x_dt == POPRT_DTYPE_DOUBLE ? (void *)xd : (void *)xf);
    float *got = calloc((size_t)(rows * T), sizeof *got);
    void *state = NULL;
    size_t size = 0;
    ck_assert_int_eq(prepare(n, x_dt, F, &state, &size, &fx), POPRT_OK);
    ck_assert_ptr_nonnull(state);
    /* the layout the ensemble must get: fast for <, <=, >, >= with finite thresholds */
    const int kind = poprt__ref_tree_ensemble_kind(state, size);
    if (n_modes == 6)
        ck_assert_int_eq(kind, 3);
    else if (!inf_thr)
        ck_assert_int_eq(kind, double_thr || x_dt == POPRT_DTYPE_DOUBLE ? 2 : 1);
    for (int pass = 0; pass < 2; pass++) {
        memset(got, 0, (size_t)(rows * T) * sizeof *got);
        ck_assert_int_eq(run_forest(&fx, n, &x, got, T, pass ? state : NULL, pass ? size : 0),
                         POPRT_OK);
        for (int64_t i = 0; i < rows * T; i++)
            ck_assert_msg(got[i] == (float)want[i] || (isnan(got[i]) && isnan(want[i])),
                          "modes %d weights %d agg %d %s thresholds, %s X, %s layout: [%lld] got "
                          "%.9g want %.9g", n_modes, weights, agg, double_thr ? "double" : "float",
                          x_dt == POPRT_DTYPE_DOUBLE ? "double" : "float",
                          pass ? "prepared" : "run's own", (long long)i, got[i], want[i]);
    }
    /* the prepared layout with bytes changed: no out-of-bounds access, whatever
     * the values */
    unsigned char *bad = poprt__aligned_alloc(size);
    for (int trial = 0; trial < 150; trial++) {
        memcpy(bad, state, size);
        int flips = 1 + (int)(rnd() % 8);
        for (int f = 0; f < flips; f++) {
            size_t at = trial % 3 == 0 ? rnd() % (size < 72 ? size : 72) : rnd() % size;
            bad[at] = (unsigned char)(rnd() & 0xff);
        }
        poprt_status st = run_forest(&fx, n, &x, got, T, bad, size);
        ck_assert(st == POPRT_OK || st == POPRT_STATUS_SHAPE_MISMATCH ||
                  st == POPRT_STATUS_INVALID_MODEL || st == POPRT_STATUS_OUT_OF_MEMORY);
    }
    poprt__aligned_free(bad);
    poprt__aligned_free(state);
    free(xd), free(xf), free(want), free(got);
    poprt__exec_free(&fx.x);
    poprt__model_free(fx.m);
}

START_TEST(test_fast_float)
{
    /* <=, <, >=, > only: the fast layout, leaves with their weight inline */
    for (int agg = 0; agg < 4; agg++)
        check_forest(4, 1, agg, 0, POPRT_DTYPE_FLOAT, agg % 2 ? 37 : 300);
}
END_TEST

START_TEST(test_fast_two_weights)
{
    check_forest(4, 2, POPRT__AGG_SUM, 0, POPRT_DTYPE_FLOAT, 301);
    check_forest(4, 2, POPRT__AGG_MAX, 0, POPRT_DTYPE_FLOAT, 13);
}
END_TEST

START_TEST(test_fast_double)
{
    check_forest(4, 1, POPRT__AGG_SUM, 0, POPRT_DTYPE_DOUBLE, 99);
    check_forest(4, 1, POPRT__AGG_MIN, 1, POPRT_DTYPE_FLOAT, 99);
    check_forest(4, 2, POPRT__AGG_AVERAGE, 1, POPRT_DTYPE_DOUBLE, 260);
}
END_TEST

START_TEST(test_general_modes)
{
    /* == and != too: the general layout */
    for (int agg = 0; agg < 4; agg++)
        check_forest(6, 1 + agg % 2, agg, agg == 3, agg == 2 ? POPRT_DTYPE_DOUBLE
                                                             : POPRT_DTYPE_FLOAT, 70);
}
END_TEST

START_TEST(test_infinite_thresholds)
{
    /* thresholds at +-inf and NaN: fast where the comparison has a fast form */
    inf_thr = 1;
    for (int i = 0; i < 12; i++)
        check_forest(4, 1 + i % 2, i % 4, i % 3 == 0, i % 2 ? POPRT_DTYPE_DOUBLE : POPRT_DTYPE_FLOAT,
                     40 + i);
    inf_thr = 0;
}
END_TEST

START_TEST(test_many_random_forests)
{
    for (int i = 0; i < 40; i++)
        check_forest(i % 3 ? 4 : 6, 1 + i % 2, i % 4, i % 5 == 0,
                     i % 7 == 0 ? POPRT_DTYPE_DOUBLE : POPRT_DTYPE_FLOAT, 9 + i);
}
END_TEST

/* Through the public API: a tree ensemble compiled, written to an executable
 * file and loaded back (its prepared layout read from the file) gives the
 * same bits, at 1 and 2 threads. */
static void run_session(poprt_session *s, const float *x, int64_t rows, float *y)
{
    poprt_stepio *io;
    int64_t dims[2] = {rows, 6};
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "X", POPRT_DTYPE_FLOAT, dims, 2, x,
                                            (size_t)rows * 6 * sizeof *x), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "Y", y, (size_t)rows * 2 * sizeof *y), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
}

START_TEST(test_executable_file_round_trip)
{
    const int64_t rows = 301;
    char path[1024], dir[] = "/tmp/poprt_ml_XXXXXX", file[1100];
    snprintf(path, sizeof path, "%s/ml/tree_reg_many_rows_fast/model.onnx", POPRT_TEST_DATA);
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/forest.popef", dir);
    float *x = malloc((size_t)rows * 6 * sizeof *x), *y1 = calloc((size_t)rows * 2, 4);
    float *y2 = calloc((size_t)rows * 2, 4);
    for (int64_t i = 0; i < rows * 6; i++)
        x[i] = (float)pick_value(1);
    poprt_model *m;
    poprt_options *o;
    poprt_session *s, *s2;
    ck_assert_int_eq(poprt_model_load(path, &m), POPRT_OK);
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.X", "301,6"), POPRT_OK);
    ck_assert_msg(poprt_session_create(m, o, &s) == POPRT_OK, "%s", poprt_last_error());
    run_session(s, x, rows, y1);
    ck_assert_msg(poprt_session_export(s, file) == POPRT_OK, "%s", poprt_last_error());
    for (int threads = 1; threads <= 2; threads++) {
        poprt_options *lo;
        ck_assert_int_eq(poprt_options_create(&lo), POPRT_OK);
        ck_assert_int_eq(poprt_options_set(lo, "threads", threads == 1 ? "1" : "2"), POPRT_OK);
        ck_assert_msg(poprt_session_load(file, lo, &s2) == POPRT_OK, "%s", poprt_last_error());
        memset(y2, 0, (size_t)rows * 2 * sizeof *y2);
        run_session(s2, x, rows, y2);
        ck_assert_int_eq(memcmp(y1, y2, (size_t)rows * 2 * sizeof *y1), 0);
        poprt_session_free(s2);
        poprt_options_free(lo);
    }
    poprt_session_free(s);
    poprt_options_free(o);
    poprt_model_free(m);
    unlink(file);
    rmdir(dir);
    free(x), free(y1), free(y2);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kernels_ml");
    TCase *tc = tcase_create("tree_ensemble");
    tcase_add_test(tc, test_fast_float);
    tcase_add_test(tc, test_fast_two_weights);
    tcase_add_test(tc, test_fast_double);
    tcase_add_test(tc, test_general_modes);
    tcase_add_test(tc, test_infinite_thresholds);
    tcase_add_test(tc, test_many_random_forests);
    tcase_add_test(tc, test_executable_file_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
