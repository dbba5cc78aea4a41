/* Unit tests: the static memory plan's Concat placement (lib/runtime/plan.c).
 * Each model is run and compared, bit for bit, with a reference computed
 * here (the ops are exact: Relu, Neg, Abs, Add, Transpose, and integer
 * convolutions), and the plan is checked for whether the Concat was elided
 * and where its inputs went. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "builder.h"

/* ---- building and running --------------------------------------------------- */

static void attr_i(poprt__node *n, const char *name, int64_t v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(a);
    a->i = v;
}

static void attr_ints(poprt__node *n, const char *name, int64_t count, const int64_t *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS);
    ck_assert_ptr_nonnull(a);
    a->n = count;
    a->ints = poprt__arena_memdup(&n->graph->model->arena, v, (size_t)count * sizeof *v);
    ck_assert_ptr_nonnull(a->ints);
}

static poprt__node *node1(poprt__model *m, const char *op, const char *in, const char *out)
{
    return tb_node(m, op, 1, (const char *[]){in}, 1, (const char *[]){out});
}

static poprt__node *node2(poprt__model *m, const char *op, const char *a, const char *b,
                          const char *out)
{
    return tb_node(m, op, 2, (const char *[]){a, b}, 1, (const char *[]){out});
}

static poprt__node *concat(poprt__model *m, int64_t axis, int n, const char **ins, const char *out)
{
    poprt__node *c = tb_node(m, "Concat", n, ins, 1, (const char *[]){out});
    attr_i(c, "axis", axis);
    return c;
}

/* Loads m (freed) and makes a session; kv: option pairs, NULL-terminated. */
static poprt_session *session_of(poprt__model *m, const char *const *kv)
{
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    for (; kv && kv[0]; kv += 2)
        ck_assert_int_eq(poprt_options_set(o, kv[0], kv[1]), POPRT_OK);
    poprt_session *s;
    ck_assert_msg(poprt_session_create(model, o, &s) == POPRT_OK, "%s", poprt_last_error());
    poprt_options_free(o);
    poprt_model_free(model);
    return s;
}

static const char *const no_opt[] = {"optimize", "0", NULL};

/* Runs s once with float input x (dims xd, rank xr) into caller buffers. */
static void run(poprt_session *s, const float *x, const int64_t *xd, int xr, int n_out,
                const char *const *outs, float *const *bufs, const size_t *bytes)
{
    size_t n = 1;
    for (int d = 0; d < xr; d++)
        n *= (size_t)xd[d];
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, xr, x, n * sizeof *x),
                     POPRT_OK);
    for (int k = 0; k < n_out; k++) {
        memset(bufs[k], 0xff, bytes[k]);
        ck_assert_int_eq(poprt_stepio_set_output(io, outs[k], bufs[k], bytes[k]), POPRT_OK);
    }
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
}

static int64_t off(const poprt_session *s, const char *name)
{
    const poprt__tensor *t = poprt__graph_find(s->m->graph, name);
    ck_assert_ptr_nonnull(t);
    return s->prog->plan.offset[t->id];
}

/* The plan's decision for the node that writes tensor `name`. */
static int how(const poprt_session *s, const char *name)
{
    const poprt__tensor *t = poprt__graph_find(s->m->graph, name);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_nonnull(t->producer);
    return s->prog->plan.view[t->producer->id];
}

/* Byte ranges [a, a+na) and [b, b+nb) in the arena do not meet. */
static int apart(int64_t a, int64_t na, int64_t b, int64_t nb)
{
    return a + na <= b || b + nb <= a;
}

/* ---- references ----------------------------------------------------------------- */

enum { N = 24 }; /* x: float [1, 4, 6] */
static const int64_t xd[3] = {1, 4, 6};

static void fill(float *x, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = (float)((i * 7) % 11) - 5.25f;
}

static void relu(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] > 0 ? x[i] : 0;
}

static void neg(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = -x[i];
}

static void absf(const float *x, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = x[i] < 0 ? -x[i] : x[i];
}

static void add(const float *a, const float *b, float *y, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = a[i] + b[i];
}

/* Concat of parts along an axis: outer rows, part k row of rows[k] floats. */
static void cat(int outer, int np, const float *const *parts, const int *rows, float *y)
{
    for (int o = 0; o < outer; o++)
        for (int k = 0; k < np; k++) {
            memcpy(y, parts[k] + (size_t)o * (size_t)rows[k], (size_t)rows[k] * sizeof *y);
            y += rows[k];
        }
}

#define SAME(got, want) ck_assert_int_eq(memcmp((got), (want), sizeof(want)), 0)

/* ---- tests ------------------------------------------------------------------------ */

/* a = Relu(x), b = Neg(x), c = Concat(a, b) on channels, y = Abs(c): a and b
 * are written inside c, the Concat does not run, Abs works in place, and
 * the arena holds c alone. */
START_TEST(two_producers_write_into_the_concat)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c");
    node1(m, "Abs", "c", "y");
    tb_output(m, "y");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
    ck_assert_int_eq(how(s, "c"), POPRT__PLAN_CONCAT);
    ck_assert_int_ge(off(s, "c"), 0);
    ck_assert_int_eq(off(s, "a"), off(s, "c"));
    ck_assert_int_eq(off(s, "b"), off(s, "c") + N * 4); /* 96 bytes: not 64-aligned */
    ck_assert_int_eq(off(s, "y"), off(s, "c"));
    ck_assert_uint_eq(poprt_session_arena_bytes(s), 192); /* a, b and c were 128 + 128 + 192 */
    float x[N], a[N], b[N], c[2 * N], want[2 * N], y[2 * N];
    fill(x, N);
    relu(x, a, N);
    neg(x, b, N);
    cat(1, 2, (const float *const[]){a, b}, (const int[]){N, N}, c);
    absf(c, want, 2 * N);
    for (int rep = 0; rep < 2; rep++) {
        run(s, x, xd, 3, 1, (const char *[]){"y"}, (float *[]){y}, (size_t[]){sizeof y});
        SAME(y, want);
    }
    poprt_session_free(s);
}
END_TEST

/* b is read again after the Concat, and the Concat's output is also a graph
 * output: both keep their bytes to the end. */
START_TEST(input_read_after_the_concat)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c");
    node2(m, "Add", "b", "b", "g");
    tb_output(m, "c");
    tb_output(m, "g");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
    ck_assert_int_eq(off(s, "b"), off(s, "c") + N * 4);
    ck_assert(apart(off(s, "g"), N * 4, off(s, "c"), 2 * N * 4));
    float x[N], a[N], b[N], c[2 * N], g[N], want_c[2 * N], want_g[N];
    fill(x, N);
    relu(x, a, N);
    neg(x, b, N);
    cat(1, 2, (const float *const[]){a, b}, (const int[]){N, N}, want_c);
    add(b, b, want_g, N);
    run(s, x, xd, 3, 2, (const char *[]){"c", "g"}, (float *[]){c, g},
        (size_t[]){sizeof c, sizeof g});
    SAME(c, want_c);
    SAME(g, want_g);
    poprt_session_free(s);
}
END_TEST

/* d = Neg(c) is elementwise and c dies there, but a (inside c) is read
 * later by f: d must not write over c. f itself may then write over a,
 * since nothing reads c's bytes after d. */
START_TEST(in_place_after_the_concat_sees_later_readers)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c");
    node1(m, "Neg", "c", "d");
    node2(m, "Add", "a", "x", "f");
    tb_output(m, "d");
    tb_output(m, "f");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
    ck_assert(apart(off(s, "d"), 2 * N * 4, off(s, "c"), 2 * N * 4));
    ck_assert_int_eq(off(s, "f"), off(s, "a"));
    float x[N], a[N], b[N], c[2 * N], d[2 * N], f[N], want_d[2 * N], want_f[N];
    fill(x, N);
    relu(x, a, N);
    neg(x, b, N);
    cat(1, 2, (const float *const[]){a, b}, (const int[]){N, N}, c);
    neg(c, want_d, 2 * N);
    add(a, x, want_f, N);
    run(s, x, xd, 3, 2, (const char *[]){"d", "f"}, (float *[]){d, f},
        (size_t[]){sizeof d, sizeof f});
    SAME(d, want_d);
    SAME(f, want_f);
    poprt_session_free(s);
}
END_TEST

/* a is a graph output and a Concat input; y = Abs(c) must not overwrite it.
 * a comes out through a stepio-allocated buffer, y through the caller's. */
START_TEST(graph_output_as_concat_input)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c");
    node1(m, "Abs", "c", "y");
    tb_output(m, "a");
    tb_output(m, "y");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
    ck_assert_int_eq(off(s, "a"), off(s, "c"));
    ck_assert(apart(off(s, "y"), 2 * N * 4, off(s, "c"), 2 * N * 4));
    float x[N], a[N], b[N], c[2 * N], y[2 * N], want_y[2 * N];
    fill(x, N);
    relu(x, a, N);
    neg(x, b, N);
    cat(1, 2, (const float *const[]){a, b}, (const int[]){N, N}, c);
    absf(c, want_y, 2 * N);
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 3, x, sizeof x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output_alloc(io, "a"), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof y), POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    const void *got;
    size_t nb;
    ck_assert_int_eq(poprt_stepio_output(io, "a", NULL, NULL, NULL, &got, &nb), POPRT_OK);
    ck_assert_uint_eq(nb, sizeof a);
    ck_assert_int_eq(memcmp(got, a, sizeof a), 0);
    SAME(y, want_y);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

/* With batch 2, a Concat on axis 1 interleaves its inputs: it runs. On axis
 * 0 (given as -3) each input is one range: it is elided, and the inputs it
 * holds are still read by the Concat on axis 1. */
START_TEST(batch_two_on_axis_one_runs)
{
    enum { B = 2 * N };
    const int64_t bd[3] = {2, 4, 6};
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, bd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c1");
    concat(m, -3, 2, (const char *[]){"a", "b"}, "c0");
    tb_output(m, "c1");
    tb_output(m, "c0");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
    ck_assert_int_eq(how(s, "c1"), POPRT__PLAN_RUN);
    ck_assert_int_eq(how(s, "c0"), POPRT__PLAN_CONCAT);
    ck_assert_int_eq(off(s, "b"), off(s, "c0") + B * 4);
    float x[B], a[B], b[B], c1[2 * B], c0[2 * B], want1[2 * B], want0[2 * B];
    fill(x, B);
    relu(x, a, B);
    neg(x, b, B);
    cat(2, 2, (const float *const[]){a, b}, (const int[]){N, N}, want1);
    cat(1, 2, (const float *const[]){a, b}, (const int[]){B, B}, want0);
    run(s, x, bd, 3, 2, (const char *[]){"c1", "c0"}, (float *[]){c1, c0},
        (size_t[]){sizeof c1, sizeof c0});
    SAME(c1, want1);
    SAME(c0, want0);
    poprt_session_free(s);
}
END_TEST

/* Concat(a, a, b): a cannot sit in two places, so the Concat runs. */
START_TEST(same_tensor_twice_runs)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    concat(m, 1, 3, (const char *[]){"a", "a", "b"}, "c");
    node1(m, "Abs", "c", "y");
    tb_output(m, "y");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 0);
    ck_assert_int_eq(how(s, "c"), POPRT__PLAN_RUN);
    float x[N], a[N], b[N], c[3 * N], y[3 * N], want[3 * N];
    fill(x, N);
    relu(x, a, N);
    neg(x, b, N);
    cat(1, 3, (const float *const[]){a, a, b}, (const int[]){N, N, N}, c);
    absf(c, want, 3 * N);
    run(s, x, xd, 3, 1, (const char *[]){"y"}, (float *[]){y}, (size_t[]){sizeof y});
    SAME(y, want);
    poprt_session_free(s);
}
END_TEST

/* c1 = Concat(a, b), c2 = Concat(d, c1), c3 = Concat(e, c2): each output
 * moves into the next with the parts it holds, offsets adding up. */
START_TEST(nested_concats_are_all_elided)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    node1(m, "Abs", "x", "d");
    node2(m, "Add", "x", "x", "e");
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c1");
    concat(m, 1, 2, (const char *[]){"d", "c1"}, "c2");
    concat(m, 1, 2, (const char *[]){"e", "c2"}, "c3");
    node1(m, "Neg", "c3", "y");
    tb_output(m, "y");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 3);
    int64_t base = off(s, "c3"), row = N * 4;
    ck_assert_int_eq(off(s, "e"), base);
    ck_assert_int_eq(off(s, "c2"), base + row);
    ck_assert_int_eq(off(s, "d"), base + row);
    ck_assert_int_eq(off(s, "c1"), base + 2 * row);
    ck_assert_int_eq(off(s, "a"), base + 2 * row);
    ck_assert_int_eq(off(s, "b"), base + 3 * row);
    ck_assert_int_eq(off(s, "y"), base);
    ck_assert_uint_eq(poprt_session_arena_bytes(s), 384);
    float x[N], a[N], b[N], d[N], e[N], c3[4 * N], y[4 * N], want[4 * N];
    fill(x, N);
    relu(x, a, N);
    neg(x, b, N);
    absf(x, d, N);
    add(x, x, e, N);
    cat(1, 4, (const float *const[]){e, d, a, b}, (const int[]){N, N, N, N}, c3);
    neg(c3, want, 4 * N);
    run(s, x, xd, 3, 1, (const char *[]){"y"}, (float *[]){y}, (size_t[]){sizeof y});
    SAME(y, want);
    poprt_session_free(s);
}
END_TEST

/* a feeds two Concats: its group moves into the first only. */
START_TEST(input_of_two_concats_moves_once)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    node1(m, "Abs", "x", "d");
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c1");
    concat(m, 1, 2, (const char *[]){"a", "d"}, "c2");
    tb_output(m, "c1");
    tb_output(m, "c2");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
    ck_assert_int_eq(how(s, "c1"), POPRT__PLAN_CONCAT);
    ck_assert_int_eq(how(s, "c2"), POPRT__PLAN_RUN);
    float x[N], a[N], b[N], d[N], c1[2 * N], c2[2 * N], want1[2 * N], want2[2 * N];
    fill(x, N);
    relu(x, a, N);
    neg(x, b, N);
    absf(x, d, N);
    cat(1, 2, (const float *const[]){a, b}, (const int[]){N, N}, want1);
    cat(1, 2, (const float *const[]){a, d}, (const int[]){N, N}, want2);
    run(s, x, xd, 3, 2, (const char *[]){"c1", "c2"}, (float *[]){c1, c2},
        (size_t[]){sizeof c1, sizeof c2});
    SAME(c1, want1);
    SAME(c2, want2);
    poprt_session_free(s);
}
END_TEST

/* Graph inputs and constants have no arena bytes to place: the Concat runs.
 * A view (Reshape) of an arena tensor is placed with the tensor it views. */
START_TEST(inputs_without_arena_bytes_run)
{
    poprt__model *m = tb_model(17);
    const int64_t sd[1] = {3}, shape[3] = {1, 4, 6};
    float k[N];
    fill(k, N);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    tb_const(m, "k", POPRT_DTYPE_FLOAT, 3, xd, k);
    tb_const(m, "shape", POPRT_DTYPE_INT64, 1, sd, shape);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    concat(m, 1, 2, (const char *[]){"x", "a"}, "c1");
    concat(m, 1, 2, (const char *[]){"k", "b"}, "c2");
    node1(m, "Abs", "x", "d");
    node2(m, "Reshape", "d", "shape", "r");
    node1(m, "Neg", "d", "e");
    concat(m, 1, 2, (const char *[]){"e", "r"}, "c3");
    tb_output(m, "c1");
    tb_output(m, "c2");
    tb_output(m, "c3");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
    ck_assert_int_eq(how(s, "c1"), POPRT__PLAN_RUN);
    ck_assert_int_eq(how(s, "c2"), POPRT__PLAN_RUN);
    ck_assert_int_eq(how(s, "r"), POPRT__PLAN_VIEW);
    ck_assert_int_eq(how(s, "c3"), POPRT__PLAN_CONCAT);
    ck_assert_int_eq(off(s, "d"), off(s, "c3") + N * 4);
    float x[N], a[N], b[N], d[N], e[N], c1[2 * N], c2[2 * N], c3[2 * N];
    float want1[2 * N], want2[2 * N], want3[2 * N];
    fill(x, N);
    relu(x, a, N);
    neg(x, b, N);
    absf(x, d, N);
    neg(d, e, N);
    cat(1, 2, (const float *const[]){x, a}, (const int[]){N, N}, want1);
    cat(1, 2, (const float *const[]){k, b}, (const int[]){N, N}, want2);
    cat(1, 2, (const float *const[]){e, d}, (const int[]){N, N}, want3);
    run(s, x, xd, 3, 3, (const char *[]){"c1", "c2", "c3"}, (float *[]){c1, c2, c3},
        (size_t[]){sizeof c1, sizeof c2, sizeof c3});
    SAME(c1, want1);
    SAME(c2, want2);
    SAME(c3, want3);
    poprt_session_free(s);
}
END_TEST

/* a SqueezeNet Fire module, batch 1, integer data (so any summation order
 * gives the same floats): x -> squeeze 1x1 -> Relu -> (expand 1x1, expand
 * 3x3 pad 1) -> Relu -> Concat -> 1x1. With the default options the convs
 * become FusedConv; the 3x3 branch writes at byte 300 of the Concat. */
enum { FC = 4, FS = 2, FE = 3, FO = 2, FH = 5, FW = 5, FP = FH * FW };

static float wsq(int o, int i) { return (float)((o + 2 * i) % 3 - 1); }
static float we1(int o, int i) { return (float)((2 * o + i) % 3 - 1); }
static float we3(int o, int i, int h, int w) { return (float)((o + i + 2 * h + w) % 3 - 1); }
static float wout(int o, int i) { return (float)((o + i) % 2 ? 1 : -1); }

static poprt__tensor *fire_const(poprt__model *m, const char *name, int rank, const int64_t *d,
                                 float (*f)(int, int, int, int), int n1, int n2, int n3, int n4)
{
    float w[64];
    int k = 0;
    for (int o = 0; o < n1; o++)
        for (int i = 0; i < n2; i++)
            for (int h = 0; h < n3; h++)
                for (int v = 0; v < n4; v++)
                    w[k++] = f(o, i, h, v);
    return tb_const(m, name, POPRT_DTYPE_FLOAT, rank, d, w);
}

/* weights by (out, in, kh, kw) for fire_const */
static float f_sq(int o, int i, int h, int w) { return (void)h, (void)w, wsq(o, i); }
static float f_e1(int o, int i, int h, int w) { return (void)h, (void)w, we1(o, i); }
static float f_e3(int o, int i, int h, int w) { return we3(o, i, h, w); }
static float f_out(int o, int i, int h, int w) { return (void)h, (void)w, wout(o, i); }

static poprt__model *fire_model(void)
{
    poprt__model *m = tb_model(17);
    const int64_t in[4] = {1, FC, FH, FW}, dsq[4] = {FS, FC, 1, 1}, de1[4] = {FE, FS, 1, 1},
                  de3[4] = {FE, FS, 3, 3}, dout[4] = {FO, 2 * FE, 1, 1}, k3[2] = {3, 3},
                  p1[4] = {1, 1, 1, 1};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, in);
    fire_const(m, "wsq", 4, dsq, f_sq, FS, FC, 1, 1);
    fire_const(m, "we1", 4, de1, f_e1, FE, FS, 1, 1);
    fire_const(m, "we3", 4, de3, f_e3, FE, FS, 3, 3);
    fire_const(m, "wout", 4, dout, f_out, FO, 2 * FE, 1, 1);
    node2(m, "Conv", "x", "wsq", "sq");
    node1(m, "Relu", "sq", "sqr");
    node2(m, "Conv", "sqr", "we1", "e1");
    node1(m, "Relu", "e1", "e1r");
    poprt__node *c3 = node2(m, "Conv", "sqr", "we3", "e3");
    attr_ints(c3, "kernel_shape", 2, k3);
    attr_ints(c3, "pads", 4, p1);
    node1(m, "Relu", "e3", "e3r");
    concat(m, 1, 2, (const char *[]){"e1r", "e3r"}, "cat");
    node2(m, "Conv", "cat", "wout", "y");
    tb_output(m, "y");
    return m;
}

static void fire_reference(const float *x, float *y)
{
    float sq[FS * FP], cat_[2 * FE * FP];
    for (int o = 0; o < FS; o++)
        for (int p = 0; p < FP; p++) {
            float acc = 0;
            for (int i = 0; i < FC; i++)
                acc += wsq(o, i) * x[i * FP + p];
            sq[o * FP + p] = acc > 0 ? acc : 0;
        }
    for (int o = 0; o < FE; o++)
        for (int p = 0; p < FP; p++) {
            float acc = 0;
            for (int i = 0; i < FS; i++)
                acc += we1(o, i) * sq[i * FP + p];
            cat_[o * FP + p] = acc > 0 ? acc : 0;
        }
    for (int o = 0; o < FE; o++)
        for (int h = 0; h < FH; h++)
            for (int w = 0; w < FW; w++) {
                float acc = 0;
                for (int i = 0; i < FS; i++)
                    for (int kh = 0; kh < 3; kh++)
                        for (int kw = 0; kw < 3; kw++) {
                            int ih = h + kh - 1, iw = w + kw - 1;
                            if (ih >= 0 && ih < FH && iw >= 0 && iw < FW)
                                acc += we3(o, i, kh, kw) * sq[i * FP + ih * FW + iw];
                        }
                cat_[(FE + o) * FP + h * FW + w] = acc > 0 ? acc : 0;
            }
    for (int o = 0; o < FO; o++)
        for (int p = 0; p < FP; p++) {
            float acc = 0;
            for (int i = 0; i < 2 * FE; i++)
                acc += wout(o, i) * cat_[i * FP + p];
            y[o * FP + p] = acc;
        }
}

START_TEST(fire_module_concat_is_elided)
{
    static const char *const threads[2] = {"1", "2"};
    const int64_t in[4] = {1, FC, FH, FW};
    float x[FC * FP], y[FO * FP], want[FO * FP];
    for (int i = 0; i < FC * FP; i++)
        x[i] = (float)((i * 5) % 7 - 3);
    fire_reference(x, want);
    for (int t = 0; t < 2; t++) {
        poprt_session *s =
            session_of(fire_model(), (const char *const[]){"threads", threads[t], NULL});
        ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
        const poprt__tensor *c = poprt__graph_find(s->m->graph, "cat");
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(s->prog->plan.view[c->producer->id], POPRT__PLAN_CONCAT);
        for (int rep = 0; rep < 2; rep++) {
            run(s, x, in, 4, 1, (const char *[]){"y"}, (float *[]){y}, (size_t[]){sizeof y});
            SAME(y, want);
        }
        poprt_session_free(s);
    }
}
END_TEST

/* With batches_per_step 2 the parts are bound anew for each batch. */
START_TEST(batches_per_step_rebind_the_parts)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "x", "b");
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c");
    node1(m, "Abs", "c", "y");
    tb_output(m, "y");
    poprt_session *s = session_of(m, (const char *const[]){"batches_per_step", "2", NULL});
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 1);
    const int64_t d2[4] = {2, 1, 4, 6};
    float x[2 * N], a[N], b[N], c[2 * N], y[4 * N], want[4 * N];
    fill(x, 2 * N);
    for (int i = 0; i < N; i++)
        x[N + i] = -2 * x[i];
    for (int bt = 0; bt < 2; bt++) {
        relu(x + bt * N, a, N);
        neg(x + bt * N, b, N);
        cat(1, 2, (const float *const[]){a, b}, (const int[]){N, N}, c);
        absf(c, want + bt * 2 * N, 2 * N);
    }
    run(s, x, d2, 4, 1, (const char *[]){"y"}, (float *[]){y}, (size_t[]){sizeof y});
    SAME(y, want);
    poprt_session_free(s);
}
END_TEST

/* An executable file stores the program, not the plan: the loaded session
 * plans again and elides the same Concat. */
START_TEST(executable_file_elides_the_same)
{
    char dir[] = "/tmp/poprt_plan_XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fire.popef", dir);
    const int64_t in[4] = {1, FC, FH, FW};
    float x[FC * FP], want[FO * FP], y[FO * FP];
    for (int i = 0; i < FC * FP; i++)
        x[i] = (float)((i * 3) % 5 - 2);
    fire_reference(x, want);
    poprt_session *s = session_of(fire_model(), NULL);
    ck_assert_int_eq(poprt_session_export(s, path), POPRT_OK);
    poprt_session *l;
    ck_assert_int_eq(poprt_session_load(path, NULL, &l), POPRT_OK);
    ck_assert_uint_eq(l->prog->plan.n_concat_elided, 1);
    ck_assert_uint_eq(l->prog->plan.n_concat_elided, s->prog->plan.n_concat_elided);
    ck_assert_uint_eq(poprt_session_arena_bytes(l), poprt_session_arena_bytes(s));
    run(l, x, in, 4, 1, (const char *[]){"y"}, (float *[]){y}, (size_t[]){sizeof y});
    SAME(y, want);
    poprt_session_free(l);
    poprt_session_free(s);
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* a is written first and held to the Concat; the big temporaries t, u
 * come between. Placing b (a Transpose of them) with a would hold the
 * Concat's 4 KiB output from step 0, on top of t and u: the plan without
 * the placement is smaller and is kept. */
START_TEST(placement_never_grows_the_arena)
{
    const int64_t bd[3] = {1, 6, 170}, perm[3] = {0, 2, 1};
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    tb_input(m, "xb", POPRT_DTYPE_FLOAT, 3, bd);
    node1(m, "Relu", "x", "a");
    node1(m, "Neg", "xb", "t");
    node1(m, "Relu", "t", "u");
    node2(m, "Add", "t", "u", "w");
    attr_ints(node1(m, "Transpose", "w", "b"), "perm", 3, perm);
    concat(m, 1, 2, (const char *[]){"a", "b"}, "c");
    node1(m, "Neg", "c", "y");
    tb_output(m, "y");
    poprt_session *s = session_of(m, no_opt);
    ck_assert_uint_eq(s->prog->plan.n_concat_elided, 0);
    ck_assert_int_eq(how(s, "c"), POPRT__PLAN_RUN);
    /* a, w (t's bytes), b and c: 128 + 4096 + 4096 + 4224; with placement
     * c holding a and b would meet t and u: 4224 + 4096 + 4096 */
    ck_assert_uint_eq(poprt_session_arena_bytes(s), 8448);
    enum { NB = 1020 };
    float x[N], xb[NB], a[N], t[NB], w[NB], b[NB], c[N + NB], y[N + NB], want[N + NB];
    fill(x, N);
    fill(xb, NB);
    relu(x, a, N);
    neg(xb, t, NB);
    relu(t, w, NB);
    add(t, w, w, NB);
    for (int i = 0; i < 170; i++)
        for (int j = 0; j < 6; j++)
            b[i * 6 + j] = w[j * 170 + i];
    cat(1, 2, (const float *const[]){a, b}, (const int[]){N, NB}, c);
    neg(c, want, N + NB);
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 3, x, sizeof x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "xb", POPRT_DTYPE_FLOAT, bd, 3, xb, sizeof xb),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, sizeof y), POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    SAME(y, want);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("concat");
    tcase_add_test(tc, two_producers_write_into_the_concat);
    tcase_add_test(tc, input_read_after_the_concat);
    tcase_add_test(tc, in_place_after_the_concat_sees_later_readers);
    tcase_add_test(tc, graph_output_as_concat_input);
    tcase_add_test(tc, batch_two_on_axis_one_runs);
    tcase_add_test(tc, same_tensor_twice_runs);
    tcase_add_test(tc, nested_concats_are_all_elided);
    tcase_add_test(tc, input_of_two_concats_moves_once);
    tcase_add_test(tc, inputs_without_arena_bytes_run);
    tcase_add_test(tc, fire_module_concat_is_elided);
    tcase_add_test(tc, batches_per_step_rebind_the_parts);
    tcase_add_test(tc, executable_file_elides_the_same);
    tcase_add_test(tc, placement_never_grows_the_arena);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
