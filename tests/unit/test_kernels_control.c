/* Unit tests: control flow (If, Loop, Scan), sequence and optional ops, and
 * the recurrent ops (RNN, GRU, LSTM, every opset version). Models are built
 * through the IR, saved, and run through the public API; expected values
 * are computed here by straightforward loops over the ONNX formulas, or
 * (the opset-1 recurrent ops) by NumPy in tests/data/op_reference_values.py. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "builder.h"
#include "ir/op.h"

/* ---- building subgraphs ------------------------------------------------------ */

static poprt__graph *sub_graph(poprt__model *m, poprt__node *owner, const char *attr)
{
    poprt__graph *g = poprt__graph_new(m, owner->graph, attr);
    ck_assert_ptr_nonnull(g);
    g->parent_node = owner;
    poprt__attr *a = poprt__node_add_attr(owner, attr, POPRT__ATTR_GRAPH);
    ck_assert_ptr_nonnull(a);
    a->g = g;
    return g;
}

/* rank -2: leave the input untyped (kind UNKNOWN). */
static poprt__tensor *g_input(poprt__graph *g, const char *name, int32_t elem, int rank,
                              const int64_t *dims)
{
    poprt__tensor *t = poprt__graph_tensor(g, name);
    if (rank >= -1)
        poprt__type_set_tensor(&g->model->arena, &t->type, elem, rank, dims);
    t->is_input = 1;
    ck_assert_int_eq(poprt__vec_push(&g->inputs, t), POPRT_OK);
    return t;
}

static poprt__node *g_node(poprt__graph *g, const char *op, int n_in, const char **ins, int n_out,
                           const char **outs)
{
    poprt__node *n = poprt__graph_add_node(g, op, "", NULL, n_in, n_out);
    ck_assert_ptr_nonnull(n);
    for (int i = 0; i < n_in; i++) {
        if (!ins[i] || !ins[i][0]) {
            poprt__node_set_input(n, i, NULL);
            continue;
        }
        poprt__tensor *t = poprt__graph_find(g, ins[i]);
        poprt__node_set_input(n, i, t ? t : poprt__graph_tensor(g, ins[i]));
    }
    for (int i = 0; i < n_out; i++)
        n->outputs[i] = outs[i] && outs[i][0] ? poprt__graph_tensor(g, outs[i]) : NULL;
    return n;
}

static void g_output(poprt__graph *g, const char *name)
{
    poprt__tensor *t = poprt__graph_tensor(g, name);
    t->is_output = 1;
    ck_assert_int_eq(poprt__graph_add_output(g, t), POPRT_OK);
}

static poprt__tensor *g_const(poprt__graph *g, const char *name, int32_t elem, int rank,
                              const int64_t *dims, const void *data)
{
    poprt__tensor *t = poprt__graph_tensor(g, name);
    poprt__type_set_tensor(&g->model->arena, &t->type, elem, rank, dims);
    t->nbytes = (size_t)poprt__type_numel(&t->type) * poprt_dtype_size((poprt_dtype)elem);
    poprt__tensor_set_data(t, poprt__arena_memdup(&g->model->arena, data, t->nbytes ? t->nbytes : 1));
    t->is_initializer = 1;
    ck_assert_int_eq(poprt__vec_push(&g->initializers, t), POPRT_OK);
    return t;
}

static void attr_i(poprt__node *n, const char *name, int64_t v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INT);
    a->i = v;
}

static void attr_f(poprt__node *n, const char *name, float v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_FLOAT);
    a->f = v;
}

static void attr_s(poprt__node *n, const char *name, const char *s)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_STRING);
    a->s = s;
    a->s_len = strlen(s);
}

static void attr_ints(poprt__node *n, const char *name, int64_t cnt, const int64_t *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS);
    a->n = cnt;
    a->ints = poprt__arena_memdup(&n->graph->model->arena, v, (size_t)cnt * sizeof *v);
}

static void attr_strings(poprt__node *n, const char *name, int64_t cnt, const char **v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_STRINGS);
    a->n = cnt;
    a->strings = poprt__arena_array(&n->graph->model->arena, (size_t)cnt, sizeof *a->strings);
    a->string_lens = poprt__arena_array(&n->graph->model->arena, (size_t)cnt, sizeof *a->string_lens);
    for (int64_t i = 0; i < cnt; i++) {
        a->strings[i] = v[i];
        a->string_lens[i] = strlen(v[i]);
    }
}

static void attr_floats(poprt__node *n, const char *name, int64_t cnt, const float *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_FLOATS);
    a->n = cnt;
    a->floats = poprt__arena_memdup(&n->graph->model->arena, v, (size_t)cnt * sizeof *v);
}

/* ---- running ------------------------------------------------------------------- */

static poprt_session *session_of(poprt_model *m, const char *threads)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    if (threads)
        ck_assert_int_eq(poprt_options_set(o, "threads", threads), POPRT_OK);
    poprt_session *s;
    poprt_status st = poprt_session_create(m, o, &s);
    if (st)
        fprintf(stderr, "session: %s\n", poprt_last_error());
    ck_assert_int_eq(st, POPRT_OK);
    poprt_options_free(o);
    return s;
}

static poprt_model *load(poprt__model *m)
{
    poprt_model *model;
    poprt_status st = tb_load(m, &model);
    if (st)
        fprintf(stderr, "load: %s\n", poprt_last_error());
    ck_assert_int_eq(st, POPRT_OK);
    return model;
}

static void run_ok(poprt_session *s, poprt_stepio *io)
{
    poprt_status st = poprt_session_run(s, io);
    if (st)
        fprintf(stderr, "run: %s\n", poprt_last_error());
    ck_assert_int_eq(st, POPRT_OK);
}

/* Checks output `name` is a float tensor of the given shape and values. */
static void expect_f32(poprt_stepio *io, const char *name, int rank, const int64_t *dims,
                       const float *want, float tol)
{
    poprt_dtype dt;
    int r;
    const int64_t *d;
    const void *data;
    size_t nb;
    ck_assert_int_eq(poprt_stepio_output(io, name, &dt, &d, &r, &data, &nb), POPRT_OK);
    ck_assert_int_eq(dt, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(r, rank);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        ck_assert_int_eq(d[i], dims[i]);
        n *= dims[i];
    }
    ck_assert_uint_eq(nb, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(((const float *)data)[i] - want[i]) <= tol,
                      "%s[%lld] = %g, expected %g", name, (long long)i,
                      (double)((const float *)data)[i], (double)want[i]);
}

/* ==== If ========================================================================= */

/* r = If(c) then Concat(x, x) (shape [4,3]) else x ([2,3]). */
static poprt_model *if_model(void)
{
    poprt__model *m = tb_model(16);
    int64_t xd[2] = {2, 3};
    tb_input(m, "c", POPRT_DTYPE_BOOL, 0, NULL);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    poprt__node *n = tb_node(m, "If", 1, (const char *[]){"c"}, 1, (const char *[]){"r"});
    poprt__graph *th = sub_graph(m, n, "then_branch");
    poprt__node *cat = g_node(th, "Concat", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"tr"});
    attr_i(cat, "axis", 0);
    g_output(th, "tr");
    poprt__graph *el = sub_graph(m, n, "else_branch");
    g_node(el, "Identity", 1, (const char *[]){"x"}, 1, (const char *[]){"er"});
    g_output(el, "er");
    tb_output(m, "r");
    return load(m);
}

START_TEST(if_branches_with_different_shapes)
{
    poprt_model *model = if_model();
    /* inference: [4,3] vs [2,3] joins to [?,3] */
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_output(model, 0, &info), POPRT_OK);
    ck_assert_int_eq(info.rank, 2);
    ck_assert_int_lt(info.dims[0], 0);
    ck_assert_int_eq(info.dims[1], 3);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float x[6] = {1, 2, 3, 4, 5, 6}, x2[12];
    memcpy(x2, x, sizeof x);
    memcpy(x2 + 6, x, sizeof x);
    int64_t xd[2] = {2, 3};
    for (int rep = 0; rep < 4; rep++) {
        uint8_t c = (uint8_t)(rep & 1);
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_input(io, "c", POPRT_DTYPE_BOOL, NULL, 0, &c, 1), POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, sizeof x), POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_output_alloc(io, "r"), POPRT_OK);
        run_ok(s, io);
        int64_t want[2] = {c ? 4 : 2, 3};
        expect_f32(io, "r", 2, want, c ? x2 : x, 0);
        poprt_stepio_free(io);
    }
    poprt_session_free(s);
}
END_TEST

/* Errors inside branches are reported when the branch runs (as ONNX
 * Runtime does), not at load or compile time: r = If(c) then x + x else
 * MatMul(x, x), whose [2,3] x [2,3] cannot multiply. c is an input, or a
 * constant when cval is not NULL. */
static poprt_model *if_bad_else_model(const uint8_t *cval)
{
    poprt__model *m = tb_model(16);
    int64_t xd[2] = {2, 3};
    if (cval)
        tb_const(m, "c", POPRT_DTYPE_BOOL, 0, NULL, cval);
    else
        tb_input(m, "c", POPRT_DTYPE_BOOL, 0, NULL);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    poprt__node *n = tb_node(m, "If", 1, (const char *[]){"c"}, 1, (const char *[]){"r"});
    n->name = "choose";
    poprt__graph *th = sub_graph(m, n, "then_branch");
    g_node(th, "Add", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"tr"});
    g_output(th, "tr");
    poprt__graph *el = sub_graph(m, n, "else_branch");
    poprt__node *mm = g_node(el, "MatMul", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"er"});
    mm->name = "bad_matmul";
    g_output(el, "er");
    tb_output(m, "r");
    return load(m);
}

static poprt_status run_if(poprt_session *s, uint8_t c, const float *x, float *r)
{
    int64_t xd[2] = {2, 3};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "c", POPRT_DTYPE_BOOL, NULL, 0, &c, 1), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, 6 * sizeof *x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "r", r, 6 * sizeof *r),
                     POPRT_OK);
    poprt_status st = poprt_session_run(s, io);
    poprt_stepio_free(io);
    return st;
}

START_TEST(if_invalid_branch_fails_only_when_taken)
{
    poprt_model *model = if_bad_else_model(NULL);
    /* the output is typed from the branch that can run */
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_output(model, 0, &info), POPRT_OK);
    ck_assert_int_eq(info.rank, 2);
    ck_assert_int_eq(info.dims[0], 2);
    ck_assert_int_eq(info.dims[1], 3);
    for (int opt = 0; opt < 2; opt++) {
        poprt_options *o;
        ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
        ck_assert_int_eq(poprt_options_set(o, "optimize", opt ? "1" : "0"), POPRT_OK);
        poprt_session *s;
        ck_assert_msg(poprt_session_create(model, o, &s) == POPRT_OK, "%s", poprt_last_error());
        poprt_options_free(o);
        const float x[6] = {1, 2, 3, 4, 5, 6};
        float r[6];
        for (int rep = 0; rep < 2; rep++) {
            ck_assert_int_eq(run_if(s, 1, x, r), POPRT_OK);
            for (int i = 0; i < 6; i++)
                ck_assert_float_eq(r[i], 2 * x[i]);
            poprt_status st = run_if(s, 0, x, r);
            ck_assert_int_eq(st, POPRT_STATUS_SHAPE_MISMATCH);
            const char *msg = poprt_last_error();
            ck_assert_msg(strstr(msg, "'choose'") && strstr(msg, "'bad_matmul'") &&
                              strstr(msg, "inner dimensions"),
                          "%s", msg);
        }
        poprt_session_free(s);
    }
    poprt_model_free(model);
}
END_TEST

/* A taken branch that cannot run, known at compile time (a constant
 * condition): the session is still made and the run fails naming the
 * node; the untaken invalid branch of the other constant is dropped. */
START_TEST(if_constant_condition_with_invalid_branch)
{
    for (int cval = 0; cval < 2; cval++) {
        const uint8_t c = (uint8_t)cval;
        poprt_model *model = if_bad_else_model(&c);
        poprt_session *s = session_of(model, NULL);
        poprt_model_free(model);
        float x[6] = {1, 2, 3, 4, 5, 6}, r[6];
        int64_t xd2[2] = {2, 3};
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd2, 2, x, sizeof x),
                         POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_output(io, "r", r, sizeof r),
                         POPRT_OK);
        poprt_status st = poprt_session_run(s, io);
        if (cval) {
            /* compiled to the branch taken: no If is left */
            const poprt__graph *g = s->m->graph;
            for (size_t i = 0; i < g->nodes.len; i++)
                ck_assert_str_ne(((const poprt__node *)g->nodes.items[i])->op_type, "If");
            ck_assert_int_eq(st, POPRT_OK);
            for (int i = 0; i < 6; i++)
                ck_assert_float_eq(r[i], 2 * x[i]);
        } else {
            ck_assert_int_eq(st, POPRT_STATUS_SHAPE_MISMATCH);
            ck_assert_msg(strstr(poprt_last_error(), "'bad_matmul'"), "%s", poprt_last_error());
        }
        poprt_stepio_free(io);
        poprt_session_free(s);
    }
}
END_TEST

/* Nested Ifs whose conditions read the input's shape (as PyTorch-scripted
 * exports have): x [N, 3]; r = If(N == 2) then (If(N > 1) then x + x else
 * MatMul(x, x)) else x * x. With N bound to 2 at compile time both
 * conditions fold and the session holds the one branch taken (the
 * MatMul, invalid for [2,3], is dropped); with N left symbolic both
 * levels stay and the run picks. */
static poprt_model *shape_if_model(void)
{
    poprt__model *m = tb_model(16);
    int64_t xd[2] = {-1, 3};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    const int64_t zero = 0, two = 2, one = 1;
    tb_const(m, "zero", POPRT_DTYPE_INT64, 0, NULL, &zero);
    tb_const(m, "two", POPRT_DTYPE_INT64, 0, NULL, &two);
    tb_const(m, "one", POPRT_DTYPE_INT64, 0, NULL, &one);
    tb_node(m, "Shape", 1, (const char *[]){"x"}, 1, (const char *[]){"sh"});
    poprt__node *ga = tb_node(m, "Gather", 2, (const char *[]){"sh", "zero"}, 1,
                              (const char *[]){"n"});
    attr_i(ga, "axis", 0);
    tb_node(m, "Equal", 2, (const char *[]){"n", "two"}, 1, (const char *[]){"is2"});
    poprt__node *outer = tb_node(m, "If", 1, (const char *[]){"is2"}, 1, (const char *[]){"r"});
    poprt__graph *th = sub_graph(m, outer, "then_branch");
    g_node(th, "Greater", 2, (const char *[]){"n", "one"}, 1, (const char *[]){"gt1"});
    poprt__node *inner = g_node(th, "If", 1, (const char *[]){"gt1"}, 1, (const char *[]){"ir"});
    poprt__graph *ith = sub_graph(m, inner, "then_branch");
    g_node(ith, "Add", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"a"});
    g_output(ith, "a");
    poprt__graph *iel = sub_graph(m, inner, "else_branch");
    g_node(iel, "MatMul", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"mm"});
    g_output(iel, "mm");
    g_output(th, "ir");
    poprt__graph *el = sub_graph(m, outer, "else_branch");
    g_node(el, "Mul", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"sq"});
    g_output(el, "sq");
    tb_output(m, "r");
    return load(m);
}

static int count_op(const poprt__graph *g, const char *op)
{
    int k = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        k += !strcmp(((const poprt__node *)g->nodes.items[i])->op_type, op);
    return k;
}

static void shape_if_run(poprt_session *s, int64_t rows)
{
    float x[9], r[9];
    for (int i = 0; i < 9; i++)
        x[i] = (float)i - 3.5f;
    int64_t xd[2] = {rows, 3};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x,
                                            (size_t)rows * 3 * sizeof *x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "r", r, (size_t)rows * 3 * sizeof *r),
                     POPRT_OK);
    run_ok(s, io);
    for (int i = 0; i < rows * 3; i++)
        ck_assert_float_eq(r[i], rows == 2 ? x[i] + x[i] : x[i] * x[i]);
    poprt_stepio_free(io);
}

START_TEST(if_on_input_shapes_compiles_to_the_branch_taken)
{
    poprt_model *model = shape_if_model();
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.x", "2,3"), POPRT_OK);
    poprt_session *s;
    ck_assert_msg(poprt_session_create(model, o, &s) == POPRT_OK, "%s", poprt_last_error());
    poprt_options_free(o);
    ck_assert_int_eq(count_op(s->m->graph, "If"), 0);
    ck_assert_int_eq(count_op(s->m->graph, "MatMul"), 0);
    shape_if_run(s, 2);
    poprt_session_free(s);
    /* rows unknown: both levels stay and the run decides */
    s = session_of(model, NULL);
    ck_assert_int_eq(count_op(s->m->graph, "If"), 1);
    shape_if_run(s, 2);
    shape_if_run(s, 3);
    poprt_session_free(s);
    poprt_model_free(model);
}
END_TEST

/* ==== Loop ======================================================================= */

/* Loop(M, cond, y0): y grows by one element k*i per iteration (shape
 * changes), stops after the iteration where i >= 3, scan output = sum(y). */
static poprt_model *loop_model(int with_cond, int untyped_body)
{
    poprt__model *m = tb_model(13);
    int64_t one = 1;
    tb_input(m, "M", POPRT_DTYPE_INT64, 0, NULL);
    tb_input(m, "y0", POPRT_DTYPE_FLOAT, 1, &one);
    const float k = 2.0f;
    tb_const(m, "k", POPRT_DTYPE_FLOAT, 1, &one, &k);
    if (with_cond)
        tb_input(m, "cond", POPRT_DTYPE_BOOL, 0, NULL);
    poprt__node *n = tb_node(m, "Loop", 3, (const char *[]){"M", with_cond ? "cond" : "", "y0"}, 2,
                             (const char *[]){"yf", "scans"});
    poprt__graph *b = sub_graph(m, n, "body");
    int r = untyped_body ? -2 : 0;
    g_input(b, "i", POPRT_DTYPE_INT64, r, NULL);
    g_input(b, "c", POPRT_DTYPE_BOOL, r, NULL);
    g_input(b, "y", POPRT_DTYPE_FLOAT, untyped_body ? -2 : -1, NULL);
    const int64_t ax = 0, three = 3;
    g_const(b, "ax", POPRT_DTYPE_INT64, 1, &one, &ax);
    g_const(b, "three", POPRT_DTYPE_INT64, 0, NULL, &three);
    poprt__node *cast = g_node(b, "Cast", 1, (const char *[]){"i"}, 1, (const char *[]){"fi"});
    attr_i(cast, "to", POPRT_DTYPE_FLOAT);
    g_node(b, "Unsqueeze", 2, (const char *[]){"fi", "ax"}, 1, (const char *[]){"fi1"});
    g_node(b, "Mul", 2, (const char *[]){"fi1", "k"}, 1, (const char *[]){"v"});
    poprt__node *cat = g_node(b, "Concat", 2, (const char *[]){"y", "v"}, 1, (const char *[]){"y2"});
    attr_i(cat, "axis", 0);
    g_node(b, "Less", 2, (const char *[]){"i", "three"}, 1, (const char *[]){"c2"});
    poprt__node *rs = g_node(b, "ReduceSum", 1, (const char *[]){"y2"}, 1, (const char *[]){"sc"});
    attr_i(rs, "keepdims", 1);
    g_output(b, "c2");
    g_output(b, "y2");
    g_output(b, "sc");
    tb_output(m, "yf");
    tb_output(m, "scans");
    return load(m);
}

static void loop_check(poprt_session *s, int64_t M, int with_cond, uint8_t cond)
{
    float y0 = 1.0f;
    int64_t one = 1;
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "M", POPRT_DTYPE_INT64, NULL, 0, &M, 8), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "y0", POPRT_DTYPE_FLOAT, &one, 1, &y0, 4), POPRT_OK);
    if (with_cond)
        ck_assert_int_eq(poprt_stepio_set_input(io, "cond", POPRT_DTYPE_BOOL, NULL, 0, &cond, 1),
                         POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output_alloc(io, "yf"), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output_alloc(io, "scans"), POPRT_OK);
    run_ok(s, io);
    float y[16] = {1.0f}, sums[16];
    int64_t n = 1, it = 0;
    int c = !with_cond || cond;
    while (it < M && c) {
        y[n++] = 2.0f * (float)it;
        float sum = 0;
        for (int64_t q = 0; q < n; q++)
            sum += y[q];
        sums[it] = sum;
        c = it < 3;
        it++;
    }
    expect_f32(io, "yf", 1, &n, y, 0);
    int64_t sd[2] = {it, 1};
    expect_f32(io, "scans", 2, sd, sums, 0);
    poprt_stepio_free(io);
}

START_TEST(loop_changing_shape_scan_outputs_and_early_exit)
{
    poprt_model *model = loop_model(1, 0);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    loop_check(s, 10, 1, 1); /* stops by the body's condition after 5 iterations */
    loop_check(s, 2, 1, 1);  /* stops by M */
    loop_check(s, 0, 1, 1);  /* no iteration: y0, empty scan output [0, 1] */
    loop_check(s, 10, 1, 0); /* cond false from the start */
    poprt_session_free(s);
}
END_TEST

START_TEST(loop_untyped_body_inputs_are_typed_and_threads_agree)
{
    poprt_model *model = loop_model(0, 1);
    poprt_session *s = session_of(model, "4");
    poprt_model_free(model);
    loop_check(s, 10, 0, 1);
    loop_check(s, 3, 0, 1);
    poprt_session_free(s);
}
END_TEST

START_TEST(loop_inference_types_body_inputs)
{
    poprt__model *m = tb_model(13);
    int64_t d2[2] = {2, 3};
    tb_input(m, "M", POPRT_DTYPE_INT64, 0, NULL);
    tb_input(m, "a0", POPRT_DTYPE_FLOAT, 2, d2);
    poprt__node *n = tb_node(m, "Loop", 3, (const char *[]){"M", "", "a0"}, 2,
                             (const char *[]){"af", "sc"});
    poprt__graph *b = sub_graph(m, n, "body");
    g_input(b, "i", 0, -2, NULL);
    g_input(b, "c", 0, -2, NULL);
    g_input(b, "a", 0, -2, NULL);
    g_node(b, "Identity", 1, (const char *[]){"c"}, 1, (const char *[]){"c2"});
    g_node(b, "Relu", 1, (const char *[]){"a"}, 1, (const char *[]){"a2"});
    g_node(b, "Identity", 1, (const char *[]){"a0"}, 1, (const char *[]){"s"});
    g_output(b, "c2");
    g_output(b, "a2");
    g_output(b, "s");
    tb_output(m, "af");
    tb_output(m, "sc");
    ck_assert_int_eq(poprt__graph_resolve(m->graph), POPRT_OK);
    ck_assert_int_eq(poprt__graph_toposort(m->graph), POPRT_OK);
    ck_assert_int_eq(poprt__graph_toposort(b), POPRT_OK);
    ck_assert_int_eq(poprt__graph_infer(m->graph, NULL), POPRT_OK);
    const poprt__tensor *bi = b->inputs.items[0], *bc = b->inputs.items[1], *ba = b->inputs.items[2];
    ck_assert_int_eq(bi->type.kind, POPRT__KIND_TENSOR);
    ck_assert_int_eq(bi->type.elem, POPRT_DTYPE_INT64);
    ck_assert_int_eq(bi->type.rank, 0);
    ck_assert_int_eq(bc->type.elem, POPRT_DTYPE_BOOL);
    /* loop-carried: element type only, the shape may change */
    ck_assert_int_eq(ba->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(ba->type.rank, -1);
    const poprt__tensor *sc = poprt__graph_find(m->graph, "sc");
    ck_assert_int_eq(sc->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(sc->type.rank, 3);
    ck_assert_int_lt(sc->type.dims[0].value, 0);
    ck_assert_int_eq(sc->type.dims[1].value, 2);
    ck_assert_int_eq(sc->type.dims[2].value, 3);
    ck_assert(n->op->flags & POPRT__OP_DYNAMIC);
    ck_assert(n->op->flags & POPRT__OP_CONTROL);
    poprt__model_free(m);
}
END_TEST

/* Loop with an If inside that reads the loop's carried value and a value
 * of the main graph (outer scopes two levels up). */
START_TEST(loop_with_nested_if_and_outer_scope)
{
    poprt__model *m = tb_model(13);
    int64_t three = 3;
    tb_input(m, "M", POPRT_DTYPE_INT64, 0, NULL);
    tb_input(m, "a0", POPRT_DTYPE_FLOAT, 1, &three);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, &three);
    poprt__node *n = tb_node(m, "Loop", 3, (const char *[]){"M", "", "a0"}, 1, (const char *[]){"af"});
    poprt__graph *b = sub_graph(m, n, "body");
    g_input(b, "i", POPRT_DTYPE_INT64, 0, NULL);
    g_input(b, "c", POPRT_DTYPE_BOOL, 0, NULL);
    g_input(b, "acc", POPRT_DTYPE_FLOAT, 1, &three);
    const int64_t two = 2, zero = 0;
    g_const(b, "two", POPRT_DTYPE_INT64, 0, NULL, &two);
    g_const(b, "zero", POPRT_DTYPE_INT64, 0, NULL, &zero);
    g_node(b, "Mod", 2, (const char *[]){"i", "two"}, 1, (const char *[]){"md"});
    g_node(b, "Equal", 2, (const char *[]){"md", "zero"}, 1, (const char *[]){"even"});
    poprt__node *f = g_node(b, "If", 1, (const char *[]){"even"}, 1, (const char *[]){"acc2"});
    poprt__graph *th = sub_graph(m, f, "then_branch");
    g_node(th, "Add", 2, (const char *[]){"acc", "x"}, 1, (const char *[]){"r1"});
    g_output(th, "r1");
    poprt__graph *el = sub_graph(m, f, "else_branch");
    g_node(el, "Sub", 2, (const char *[]){"acc", "x"}, 1, (const char *[]){"r2"});
    g_output(el, "r2");
    g_node(b, "Identity", 1, (const char *[]){"c"}, 1, (const char *[]){"c2"});
    g_output(b, "c2");
    g_output(b, "acc2");
    tb_output(m, "af");
    poprt_model *model = load(m);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float a0[3] = {0, 1, 2}, x[3] = {0.5f, -1, 2}, want[3];
    int64_t M = 5;
    for (int q = 0; q < 3; q++) {
        want[q] = a0[q];
        for (int i = 0; i < 5; i++)
            want[q] += i % 2 == 0 ? x[q] : -x[q];
    }
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "M", POPRT_DTYPE_INT64, NULL, 0, &M, 8);
    poprt_stepio_set_input(io, "a0", POPRT_DTYPE_FLOAT, &three, 1, a0, sizeof a0);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, &three, 1, x, sizeof x);
    poprt_stepio_set_output_alloc(io, "af");
    run_ok(s, io);
    expect_f32(io, "af", 1, &three, want, 0);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

/* A Loop body that cannot run for the bound shapes (MatMul of the outer
 * x [2,3] by itself): a loop of no iteration gives the initial value, one
 * iteration fails naming the body's node. */
START_TEST(loop_invalid_body_fails_only_when_it_runs)
{
    poprt__model *m = tb_model(13);
    int64_t xd[2] = {2, 3};
    tb_input(m, "M", POPRT_DTYPE_INT64, 0, NULL);
    tb_input(m, "y0", POPRT_DTYPE_FLOAT, 2, xd);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    poprt__node *n = tb_node(m, "Loop", 3, (const char *[]){"M", "", "y0"}, 1, (const char *[]){"yf"});
    n->name = "the_loop";
    poprt__graph *b = sub_graph(m, n, "body");
    g_input(b, "i", POPRT_DTYPE_INT64, 0, NULL);
    g_input(b, "c", POPRT_DTYPE_BOOL, 0, NULL);
    g_input(b, "y", POPRT_DTYPE_FLOAT, -1, NULL);
    poprt__node *mm = g_node(b, "MatMul", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"mm"});
    mm->name = "bad_matmul";
    g_node(b, "Add", 2, (const char *[]){"y", "mm"}, 1, (const char *[]){"y2"});
    g_node(b, "Identity", 1, (const char *[]){"c"}, 1, (const char *[]){"c2"});
    g_output(b, "c2");
    g_output(b, "y2");
    tb_output(m, "yf");
    poprt_model *model = load(m);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float y0[6] = {1, 2, 3, 4, 5, 6}, x[6] = {0}, yf[6];
    for (int64_t M = 0; M < 2; M++) {
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        poprt_stepio_set_input(io, "M", POPRT_DTYPE_INT64, NULL, 0, &M, 8);
        poprt_stepio_set_input(io, "y0", POPRT_DTYPE_FLOAT, xd, 2, y0, sizeof y0);
        poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, sizeof x);
        ck_assert_int_eq(poprt_stepio_set_output(io, "yf", yf, sizeof yf), POPRT_OK);
        poprt_status st = poprt_session_run(s, io);
        if (M == 0) {
            ck_assert_msg(st == POPRT_OK, "%s", poprt_last_error());
            ck_assert_mem_eq(yf, y0, sizeof y0);
        } else {
            ck_assert_int_eq(st, POPRT_STATUS_SHAPE_MISMATCH);
            ck_assert_msg(strstr(poprt_last_error(), "'the_loop'") &&
                              strstr(poprt_last_error(), "'bad_matmul'"),
                          "%s", poprt_last_error());
        }
        poprt_stepio_free(io);
    }
    poprt_session_free(s);
}
END_TEST

/* ==== Scan ======================================================================= */

/* Scan-9: state s [2,3]; x [2,4,3] scanned over axis 1 in reverse; y1 =
 * s*w stacked on the last axis in reverse, y2 = sum of the slice on axis 0. */
START_TEST(scan9_axes_directions_and_outer_scope)
{
    poprt__model *m = tb_model(11);
    int64_t sd[2] = {2, 3}, xd[3] = {2, 4, 3};
    tb_input(m, "s0", POPRT_DTYPE_FLOAT, 2, sd);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    float w[6] = {1, -1, 0.5f, 2, 0, 3};
    tb_const(m, "w", POPRT_DTYPE_FLOAT, 2, sd, w);
    poprt__node *n = tb_node(m, "Scan", 2, (const char *[]){"s0", "x"}, 3,
                             (const char *[]){"sf", "y1", "y2"});
    attr_i(n, "num_scan_inputs", 1);
    attr_ints(n, "scan_input_axes", 1, (const int64_t[]){1});
    attr_ints(n, "scan_input_directions", 1, (const int64_t[]){1});
    attr_ints(n, "scan_output_axes", 2, (const int64_t[]){-1, 0});
    attr_ints(n, "scan_output_directions", 2, (const int64_t[]){1, 0});
    poprt__graph *b = sub_graph(m, n, "body");
    g_input(b, "s", 0, -2, NULL); /* typed by inference from s0 */
    g_input(b, "a", 0, -2, NULL);
    g_node(b, "Add", 2, (const char *[]){"s", "a"}, 1, (const char *[]){"s2"});
    g_node(b, "Mul", 2, (const char *[]){"s2", "w"}, 1, (const char *[]){"o1"});
    poprt__node *rs = g_node(b, "ReduceSum", 1, (const char *[]){"a"}, 1, (const char *[]){"o2"});
    attr_i(rs, "keepdims", 0);
    g_output(b, "s2");
    g_output(b, "o1");
    g_output(b, "o2");
    tb_output(m, "sf");
    tb_output(m, "y1");
    tb_output(m, "y2");
    poprt_model *model = load(m);
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_output(model, 1, &info), POPRT_OK);
    ck_assert_int_eq(info.rank, 3);
    ck_assert_int_eq(info.dims[0], 2);
    ck_assert_int_eq(info.dims[1], 3);
    ck_assert_int_eq(info.dims[2], 4);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float s0[6] = {0}, x[24];
    for (int i = 0; i < 24; i++)
        x[i] = (float)((i * 7) % 11) - 5.0f;
    float st[6] = {0}, y1[24], y2[4];
    for (int t = 0; t < 4; t++) {
        int idx = 3 - t;
        float sum = 0;
        for (int p = 0; p < 2; p++)
            for (int q = 0; q < 3; q++) {
                float a = x[(p * 4 + idx) * 3 + q];
                st[p * 3 + q] += a;
                sum += a;
                y1[(p * 3 + q) * 4 + (3 - t)] = st[p * 3 + q] * w[p * 3 + q];
            }
        y2[t] = sum;
    }
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "s0", POPRT_DTYPE_FLOAT, sd, 2, s0, sizeof s0);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 3, x, sizeof x);
    poprt_stepio_set_output_alloc(io, "sf");
    poprt_stepio_set_output_alloc(io, "y1");
    poprt_stepio_set_output_alloc(io, "y2");
    run_ok(s, io);
    expect_f32(io, "sf", 2, sd, st, 1e-5f);
    expect_f32(io, "y1", 3, (const int64_t[]){2, 3, 4}, y1, 1e-5f);
    expect_f32(io, "y2", 1, (const int64_t[]){4}, y2, 1e-5f);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

/* Scan-8: batch 2, sequence 3, sequence_lens {3, 2}, second input reversed;
 * s = (s + a) * b; outputs padded with zeros past the length. */
START_TEST(scan8_batch_sequence_lens_and_reverse)
{
    poprt__model *m = tb_model(8);
    int64_t ld = 2, sd[2] = {2, 2}, xd[3] = {2, 3, 2};
    tb_input(m, "lens", POPRT_DTYPE_INT64, 1, &ld);
    tb_input(m, "st", POPRT_DTYPE_FLOAT, 2, sd);
    tb_input(m, "x1", POPRT_DTYPE_FLOAT, 3, xd);
    tb_input(m, "x2", POPRT_DTYPE_FLOAT, 3, xd);
    poprt__node *n = tb_node(m, "Scan", 4, (const char *[]){"lens", "st", "x1", "x2"}, 2,
                             (const char *[]){"fs", "ys"});
    attr_i(n, "num_scan_inputs", 2);
    attr_ints(n, "directions", 2, (const int64_t[]){0, 1});
    poprt__graph *b = sub_graph(m, n, "body");
    int64_t two = 2;
    g_input(b, "s", POPRT_DTYPE_FLOAT, 1, &two);
    g_input(b, "a", POPRT_DTYPE_FLOAT, 1, &two);
    g_input(b, "bb", POPRT_DTYPE_FLOAT, 1, &two);
    g_node(b, "Add", 2, (const char *[]){"s", "a"}, 1, (const char *[]){"t"});
    g_node(b, "Mul", 2, (const char *[]){"t", "bb"}, 1, (const char *[]){"s2"});
    g_node(b, "Identity", 1, (const char *[]){"s2"}, 1, (const char *[]){"o"});
    g_output(b, "s2");
    g_output(b, "o");
    tb_output(m, "fs");
    tb_output(m, "ys");
    poprt_model *model = load(m);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    int64_t lens[2] = {3, 2};
    float st[4] = {1, -1, 0.5f, 2}, x1[12], x2[12];
    for (int i = 0; i < 12; i++) {
        x1[i] = 0.25f * (float)i - 1.0f;
        x2[i] = 1.0f + 0.1f * (float)(i % 5);
    }
    float fs[4], ys[12] = {0};
    for (int bt = 0; bt < 2; bt++) {
        float v[2] = {st[bt * 2], st[bt * 2 + 1]};
        for (int t = 0; t < lens[bt]; t++) {
            int r = (int)lens[bt] - 1 - t;
            for (int q = 0; q < 2; q++) {
                v[q] = (v[q] + x1[(bt * 3 + t) * 2 + q]) * x2[(bt * 3 + r) * 2 + q];
                ys[(bt * 3 + t) * 2 + q] = v[q];
            }
        }
        fs[bt * 2] = v[0];
        fs[bt * 2 + 1] = v[1];
    }
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "lens", POPRT_DTYPE_INT64, &ld, 1, lens, sizeof lens);
    poprt_stepio_set_input(io, "st", POPRT_DTYPE_FLOAT, sd, 2, st, sizeof st);
    poprt_stepio_set_input(io, "x1", POPRT_DTYPE_FLOAT, xd, 3, x1, sizeof x1);
    poprt_stepio_set_input(io, "x2", POPRT_DTYPE_FLOAT, xd, 3, x2, sizeof x2);
    poprt_stepio_set_output_alloc(io, "fs");
    poprt_stepio_set_output_alloc(io, "ys");
    run_ok(s, io);
    expect_f32(io, "fs", 2, sd, fs, 1e-5f);
    expect_f32(io, "ys", 3, xd, ys, 1e-5f);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

/* ==== sequences and optionals ===================================================== */

START_TEST(sequence_ops_chain)
{
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {5, 2};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    const int64_t sp = 2, neg1 = -1, zero = 0;
    tb_const(m, "sp", POPRT_DTYPE_INT64, 0, NULL, &sp);
    tb_const(m, "neg1", POPRT_DTYPE_INT64, 0, NULL, &neg1);
    tb_const(m, "zero", POPRT_DTYPE_INT64, 0, NULL, &zero);
    /* [x0:2, x2:4, x4:5] -> erase last -> insert x[4:5]... at the front */
    tb_node(m, "SplitToSequence", 2, (const char *[]){"x", "sp"}, 1, (const char *[]){"s"});
    tb_node(m, "SequenceAt", 2, (const char *[]){"s", "neg1"}, 1, (const char *[]){"tail"});
    tb_node(m, "SequenceErase", 2, (const char *[]){"s", "neg1"}, 1, (const char *[]){"s2"});
    tb_node(m, "SequenceInsert", 3, (const char *[]){"s2", "tail", "zero"}, 1, (const char *[]){"s3"});
    poprt__node *cat = tb_node(m, "ConcatFromSequence", 1, (const char *[]){"s3"}, 1,
                               (const char *[]){"cat"});
    attr_i(cat, "axis", 0);
    tb_node(m, "SequenceLength", 1, (const char *[]){"s3"}, 1, (const char *[]){"len"});
    poprt__node *sp1 = tb_node(m, "SplitToSequence", 1, (const char *[]){"x"}, 1, (const char *[]){"cols"});
    attr_i(sp1, "axis", 1);
    attr_i(sp1, "keepdims", 0);
    poprt__node *stk = tb_node(m, "ConcatFromSequence", 1, (const char *[]){"cols"}, 1,
                               (const char *[]){"stk"});
    attr_i(stk, "axis", 0);
    attr_i(stk, "new_axis", 1);
    tb_node(m, "SequenceEmpty", 0, NULL, 1, (const char *[]){"e"});
    tb_node(m, "SequenceLength", 1, (const char *[]){"e"}, 1, (const char *[]){"elen"});
    tb_output(m, "cat");
    tb_output(m, "len");
    tb_output(m, "stk");
    tb_output(m, "elen");
    tb_output(m, "s3");
    poprt_model *model = load(m);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float x[10];
    for (int i = 0; i < 10; i++)
        x[i] = (float)i;
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, sizeof x);
    const char *outs[5] = {"cat", "len", "stk", "elen", "s3"};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(poprt_stepio_set_output_alloc(io, outs[i]), POPRT_OK);
    run_ok(s, io);
    float want_cat[10] = {8, 9, 0, 1, 2, 3, 4, 5, 6, 7};
    expect_f32(io, "cat", 2, xd, want_cat, 0);
    const void *data;
    ck_assert_int_eq(poprt_stepio_output(io, "len", NULL, NULL, NULL, &data, NULL), POPRT_OK);
    ck_assert_int_eq(*(const int64_t *)data, 3);
    ck_assert_int_eq(poprt_stepio_output(io, "elen", NULL, NULL, NULL, &data, NULL), POPRT_OK);
    ck_assert_int_eq(*(const int64_t *)data, 0);
    float want_stk[10] = {0, 2, 4, 6, 8, 1, 3, 5, 7, 9};
    expect_f32(io, "stk", 2, (const int64_t[]){2, 5}, want_stk, 0);
    poprt_value_kind kind;
    size_t count;
    int present;
    ck_assert_int_eq(poprt_stepio_output_kind(io, "s3", &kind, &present, &count), POPRT_OK);
    ck_assert_int_eq(kind, POPRT_VALUE_SEQUENCE);
    ck_assert_uint_eq(count, 3);
    int rank;
    const int64_t *dims;
    ck_assert_int_eq(poprt_stepio_output_item(io, "s3", 0, NULL, &dims, &rank, &data, NULL), POPRT_OK);
    ck_assert_int_eq(rank, 2);
    ck_assert_int_eq(dims[0], 1);
    ck_assert_float_eq(((const float *)data)[1], 9.0f);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

START_TEST(optional_ops)
{
    poprt__model *m = tb_model(18);
    int64_t d = 3;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, &d);
    tb_node(m, "Optional", 1, (const char *[]){"x"}, 1, (const char *[]){"o"});
    tb_node(m, "OptionalHasElement", 1, (const char *[]){"o"}, 1, (const char *[]){"has"});
    tb_node(m, "OptionalGetElement", 1, (const char *[]){"o"}, 1, (const char *[]){"got"});
    poprt__node *e = tb_node(m, "Optional", 0, NULL, 1, (const char *[]){"none"});
    poprt__attr *ta = poprt__node_add_attr(e, "type", POPRT__ATTR_TYPE_PROTO);
    ta->tp = poprt__arena_alloc(&m->arena, sizeof *ta->tp);
    memset(ta->tp, 0, sizeof *ta->tp);
    poprt__type_set_tensor(&m->arena, ta->tp, POPRT_DTYPE_FLOAT, 1, &d);
    tb_node(m, "OptionalHasElement", 1, (const char *[]){"none"}, 1, (const char *[]){"hasnt"});
    tb_node(m, "OptionalHasElement", 1, (const char *[]){""}, 1, (const char *[]){"omitted"});
    tb_output(m, "has");
    tb_output(m, "got");
    tb_output(m, "hasnt");
    tb_output(m, "omitted");
    poprt_model *model = load(m);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float x[3] = {1, 2, 3};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, &d, 1, x, sizeof x);
    const char *outs[4] = {"has", "got", "hasnt", "omitted"};
    for (int i = 0; i < 4; i++)
        poprt_stepio_set_output_alloc(io, outs[i]);
    run_ok(s, io);
    const void *data;
    poprt_stepio_output(io, "has", NULL, NULL, NULL, &data, NULL);
    ck_assert_int_eq(*(const uint8_t *)data, 1);
    poprt_stepio_output(io, "hasnt", NULL, NULL, NULL, &data, NULL);
    ck_assert_int_eq(*(const uint8_t *)data, 0);
    poprt_stepio_output(io, "omitted", NULL, NULL, NULL, &data, NULL);
    ck_assert_int_eq(*(const uint8_t *)data, 0);
    expect_f32(io, "got", 1, &d, x, 0);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

START_TEST(sequence_at_out_of_range_names_the_node)
{
    poprt__model *m = tb_model(13);
    int64_t d = 4;
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, &d);
    tb_input(m, "p", POPRT_DTYPE_INT64, 0, NULL);
    tb_node(m, "SplitToSequence", 1, (const char *[]){"x"}, 1, (const char *[]){"s"});
    poprt__node *at = tb_node(m, "SequenceAt", 2, (const char *[]){"s", "p"}, 1, (const char *[]){"y"});
    at->name = "pick";
    tb_output(m, "y");
    poprt_model *model = load(m);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float x[4] = {1, 2, 3, 4};
    int64_t p = 4;
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, &d, 1, x, sizeof x);
    poprt_stepio_set_input(io, "p", POPRT_DTYPE_INT64, NULL, 0, &p, 8);
    poprt_stepio_set_output_alloc(io, "y");
    ck_assert_int_ne(poprt_session_run(s, io), POPRT_OK);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "pick"));
    p = -4; /* first item */
    run_ok(s, io);
    float one = 1;
    expect_f32(io, "y", 1, (const int64_t[]){1}, &one, 0);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

/* ==== recurrent ops =============================================================== */

static float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Plain GRU, one direction, per the ONNX formulas (layout 0). */
static void gru_ref(int T, int B, int I, int H, const float *X, const float *W, const float *R,
                    const float *Bi, int lbr, int reverse, float *Y, float *Yh)
{
    for (int b = 0; b < B; b++) {
        float h[8] = {0};
        for (int s = 0; s < T; s++) {
            int t = reverse ? T - 1 - s : s;
            const float *x = X + (t * B + b) * I;
            float z[8], r[8], hh[8];
            for (int n = 0; n < H; n++) {
                float az = Bi[n] + Bi[3 * H + n], ar = Bi[H + n] + Bi[4 * H + n];
                for (int q = 0; q < I; q++) {
                    az += x[q] * W[n * I + q];
                    ar += x[q] * W[(H + n) * I + q];
                }
                for (int q = 0; q < H; q++) {
                    az += h[q] * R[n * H + q];
                    ar += h[q] * R[(H + n) * H + q];
                }
                z[n] = sigm(az);
                r[n] = sigm(ar);
            }
            for (int n = 0; n < H; n++) {
                float xa = Bi[2 * H + n], ra = 0;
                for (int q = 0; q < I; q++)
                    xa += x[q] * W[(2 * H + n) * I + q];
                for (int q = 0; q < H; q++)
                    ra += (lbr ? h[q] : r[q] * h[q]) * R[(2 * H + n) * H + q];
                ra += Bi[5 * H + n];
                hh[n] = tanhf(xa + (lbr ? r[n] * ra : ra));
            }
            for (int n = 0; n < H; n++) {
                h[n] = (1 - z[n]) * hh[n] + z[n] * h[n];
                Y[(t * B + b) * H + n] = h[n];
            }
        }
        for (int n = 0; n < H; n++)
            Yh[b * H + n] = h[n];
    }
}

/* B batch rows: 1 (the recurrent products as matrix-vector products), 2
 * (as a few-column product), 9 (a GEMM per step; kernels/ref/rnn.c), with
 * hidden size H: from 4 on, two rows and more take R as the node's prepare
 * packed it (lib/kernels/x86/gemm_ops.c); lens: sequence_lens (NULL:
 * none), each row then checked against the formulas run on its own first
 * lens[b] steps (zeros after them) */
static void gru_case(int lbr, int reverse, int B, int H, const int32_t *lens)
{
    enum { T = 3, I = 2, HMAX = 5, BMAX = 9 };
    ck_assert_int_le(B, BMAX);
    ck_assert_int_le(H, HMAX);
    poprt__model *m = tb_model(14);
    int64_t xd[3] = {T, B, I}, wd[3] = {1, 3 * H, I}, rd[3] = {1, 3 * H, H}, bd[2] = {1, 6 * H};
    float X[T * BMAX * I], W[3 * HMAX * I], R[3 * HMAX * HMAX], Bi[6 * HMAX];
    for (int i = 0; i < T * B * I; i++)
        X[i] = sinf((float)i);
    for (int i = 0; i < 3 * H * I; i++)
        W[i] = 0.5f * cosf((float)i * 1.3f);
    for (int i = 0; i < 3 * H * H; i++)
        R[i] = 0.4f * sinf((float)i * 0.7f + 1);
    for (int i = 0; i < 6 * H; i++)
        Bi[i] = 0.1f * (float)(i % 7) - 0.3f;
    tb_input(m, "X", POPRT_DTYPE_FLOAT, 3, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 3, wd, W);
    tb_const(m, "R", POPRT_DTYPE_FLOAT, 3, rd, R);
    tb_const(m, "B", POPRT_DTYPE_FLOAT, 2, bd, Bi);
    if (lens)
        tb_const(m, "L", POPRT_DTYPE_INT32, 1, (int64_t[]){B}, lens);
    poprt__node *n = tb_node(m, "GRU", lens ? 5 : 4, (const char *[]){"X", "W", "R", "B", "L"},
                             2, (const char *[]){"Y", "Yh"});
    attr_i(n, "hidden_size", H);
    attr_i(n, "linear_before_reset", lbr);
    if (reverse)
        attr_s(n, "direction", "reverse");
    tb_output(m, "Y");
    tb_output(m, "Yh");
    poprt_model *model = load(m);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float Y[T * BMAX * HMAX], Yh[BMAX * HMAX];
    if (lens) {
        memset(Y, 0, sizeof Y);
        for (int b = 0; b < B; b++) {
            float xb[T * I], yb[T * HMAX];
            for (int t = 0; t < lens[b]; t++)
                memcpy(xb + t * I, X + (t * B + b) * I, sizeof(float) * I);
            gru_ref(lens[b], 1, I, H, xb, W, R, Bi, lbr, reverse, yb, Yh + b * H);
            for (int t = 0; t < lens[b]; t++)
                memcpy(Y + (t * B + b) * H, yb + t * H, sizeof(float) * H);
        }
    } else
        gru_ref(T, B, I, H, X, W, R, Bi, lbr, reverse, Y, Yh);
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "X", POPRT_DTYPE_FLOAT, xd, 3, X, sizeof(float) * T * B * I);
    poprt_stepio_set_output_alloc(io, "Y");
    poprt_stepio_set_output_alloc(io, "Yh");
    run_ok(s, io);
    expect_f32(io, "Y", 4, (const int64_t[]){T, 1, B, H}, Y, 1e-5f);
    expect_f32(io, "Yh", 3, (const int64_t[]){1, B, H}, Yh, 1e-5f);
    poprt_stepio_free(io);
    poprt_session_free(s);
}

START_TEST(gru_matches_formulas)
{
    for (int H = 3; H <= 5; H += 2)
        for (int b = 1; b <= 9; b += b == 1 ? 1 : 7) /* 1, 2, 9 */
            for (int q = 0; q < 4; q++)
                gru_case(q & 1, q >> 1, b, H, NULL);
    /* rows of 3, 1 and 0 steps, and 2 of 9 rows at 0: their rows of the
     * products are still computed */
    const int32_t lens3[3] = {3, 1, 0}, lens9[9] = {3, 0, 2, 1, 3, 3, 0, 2, 1};
    for (int q = 0; q < 4; q++)
        for (int H = 3; H <= 5; H += 2) {
            gru_case(q & 1, q >> 1, 3, H, lens3);
            gru_case(q & 1, q >> 1, 9, H, lens9);
        }
}
END_TEST

/* LSTM, hidden 1, input 1, one step: every gate by hand, with peepholes,
 * clip, custom activations and a bidirectional copy. */
START_TEST(lstm_single_step_by_hand)
{
    poprt__model *m = tb_model(14);
    int64_t xd[3] = {1, 1, 1}, wd[3] = {2, 4, 1}, bd[2] = {2, 8}, pd[2] = {2, 3}, hd[3] = {2, 1, 1};
    /* gates i, o, f, c */
    float W[8] = {0.5f, -0.3f, 0.8f, 0.2f, 0.5f, -0.3f, 0.8f, 0.2f};
    float R[8] = {0.1f, 0.2f, -0.4f, 0.3f, 0.1f, 0.2f, -0.4f, 0.3f};
    float Bi[16] = {0.1f, 0, 0.2f, -0.1f, 0, 0.05f, 0, 0.1f, 0.1f, 0, 0.2f, -0.1f, 0, 0.05f, 0, 0.1f};
    float P[6] = {0.3f, -0.2f, 0.1f, 0.3f, -0.2f, 0.1f};
    float x = 1.5f, h0[2] = {0.4f, 0.4f}, c0[2] = {-0.6f, -0.6f};
    tb_input(m, "X", POPRT_DTYPE_FLOAT, 3, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 3, wd, W);
    tb_const(m, "R", POPRT_DTYPE_FLOAT, 3, wd, R);
    tb_const(m, "B", POPRT_DTYPE_FLOAT, 2, bd, Bi);
    tb_const(m, "h0", POPRT_DTYPE_FLOAT, 3, hd, h0);
    tb_const(m, "c0", POPRT_DTYPE_FLOAT, 3, hd, c0);
    tb_const(m, "P", POPRT_DTYPE_FLOAT, 2, pd, P);
    poprt__node *n = tb_node(m, "LSTM", 8, (const char *[]){"X", "W", "R", "B", "", "h0", "c0", "P"},
                             3, (const char *[]){"Y", "Yh", "Yc"});
    attr_i(n, "hidden_size", 1);
    attr_s(n, "direction", "bidirectional");
    attr_f(n, "clip", 0.9f);
    attr_strings(n, "activations", 3, (const char *[]){"HardSigmoid", "Tanh", "ScaledTanh"});
    attr_floats(n, "activation_alpha", 2, (const float[]){0.25f, 0.5f});
    attr_floats(n, "activation_beta", 2, (const float[]){0.4f, 1.5f});
    tb_output(m, "Y");
    tb_output(m, "Yh");
    tb_output(m, "Yc");
    poprt_model *model = load(m);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
#define CLIP(v) ((v) > 0.9f ? 0.9f : ((v) < -0.9f ? -0.9f : (v)))
#define HSIG(v) fminf(1.0f, fmaxf(0.0f, 0.25f * (v) + 0.4f))
    float gi = CLIP(x * W[0] + h0[0] * R[0] + Bi[0] + Bi[4] + P[0] * c0[0]);
    float gf = CLIP(x * W[2] + h0[0] * R[2] + Bi[2] + Bi[6] + P[2] * c0[0]);
    float gc = CLIP(x * W[3] + h0[0] * R[3] + Bi[3] + Bi[7]);
    float i = HSIG(gi), f = HSIG(gf), cc = tanhf(gc);
    float c = f * c0[0] + i * cc;
    float go = CLIP(x * W[1] + h0[0] * R[1] + Bi[1] + Bi[5] + P[1] * c);
    float o = HSIG(go);
    float hh = o * 0.5f * tanhf(1.5f * c);
    float Y[2] = {hh, hh}, Yc[2] = {c, c};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "X", POPRT_DTYPE_FLOAT, xd, 3, &x, sizeof x);
    poprt_stepio_set_output_alloc(io, "Y");
    poprt_stepio_set_output_alloc(io, "Yh");
    poprt_stepio_set_output_alloc(io, "Yc");
    run_ok(s, io);
    expect_f32(io, "Y", 4, (const int64_t[]){1, 2, 1, 1}, Y, 1e-6f);
    expect_f32(io, "Yh", 3, hd, Y, 1e-6f);
    expect_f32(io, "Yc", 3, hd, Yc, 1e-6f);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

/* RNN with sequence_lens, layout 1: Y zero past each length, Y_h at the
 * last step run; inference gives the layout-1 shapes. */
START_TEST(rnn_layout1_sequence_lens)
{
    enum { T = 3, B = 2, I = 1, H = 2 };
    poprt__model *m = tb_model(14);
    int64_t xd[3] = {B, T, I}, wd[3] = {1, H, I}, rd[3] = {1, H, H}, ld = B;
    float W[2] = {0.5f, -1}, R[4] = {0.2f, 0.1f, -0.3f, 0.4f};
    tb_input(m, "X", POPRT_DTYPE_FLOAT, 3, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 3, wd, W);
    tb_const(m, "R", POPRT_DTYPE_FLOAT, 3, rd, R);
    tb_input(m, "L", POPRT_DTYPE_INT32, 1, &ld);
    poprt__node *n = tb_node(m, "RNN", 5, (const char *[]){"X", "W", "R", "", "L"}, 2,
                             (const char *[]){"Y", "Yh"});
    attr_i(n, "hidden_size", H);
    attr_i(n, "layout", 1);
    tb_output(m, "Y");
    tb_output(m, "Yh");
    poprt_model *model = load(m);
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_output(model, 0, &info), POPRT_OK);
    ck_assert_int_eq(info.rank, 4);
    ck_assert_int_eq(info.dims[0], B);
    ck_assert_int_eq(info.dims[1], T);
    ck_assert_int_eq(info.dims[2], 1);
    ck_assert_int_eq(info.dims[3], H);
    poprt_session *s = session_of(model, NULL);
    poprt_model_free(model);
    float X[B * T] = {1, 2, 3, -1, 0.5f, 7};
    int32_t L[B] = {3, 1};
    float Y[B * T * H] = {0}, Yh[B * H];
    for (int b = 0; b < B; b++) {
        float h[H] = {0};
        for (int t = 0; t < L[b]; t++) {
            float nh[H];
            for (int q = 0; q < H; q++)
                nh[q] = tanhf(X[b * T + t] * W[q] + h[0] * R[q * H] + h[1] * R[q * H + 1]);
            memcpy(h, nh, sizeof h);
            memcpy(Y + (b * T + t) * H, h, sizeof h);
        }
        memcpy(Yh + b * H, h, sizeof h);
    }
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "X", POPRT_DTYPE_FLOAT, xd, 3, X, sizeof X);
    poprt_stepio_set_input(io, "L", POPRT_DTYPE_INT32, &ld, 1, L, sizeof L);
    poprt_stepio_set_output_alloc(io, "Y");
    poprt_stepio_set_output_alloc(io, "Yh");
    run_ok(s, io);
    expect_f32(io, "Y", 4, (const int64_t[]){B, T, 1, H}, Y, 1e-6f);
    expect_f32(io, "Yh", 3, (const int64_t[]){B, 1, H}, Yh, 1e-6f);
    poprt_stepio_free(io);
    poprt_session_free(s);
}
END_TEST

/* ==== RNN-1, GRU-1, GRU-3, LSTM-1 ================================================
 * The opset-1 recurrent ops (and GRU-3) compute as opset 7 but have
 * output_sequence (Y may be omitted when it is 0, and must be there
 * otherwise), no layout, GRU-1 no linear_before_reset and the default
 * direction "foward" (sic), RNN-1 the default activations {Tanh, Tanh}.
 * Expected values: tests/data/op_reference_values.py recurrent_cases()
 * (NumPy float64 from the ONNX equations, on the same float32 inputs);
 * tolerance 1e-6. */

/* float32(sin(0.7 i + shift) * scale): op_reference_values.py's ramp() */
static void ramp(float *v, int n, double scale, double shift)
{
    for (int i = 0; i < n; i++)
        v[i] = (float)(sin(0.7 * i + shift) * scale);
}

static const float rnn1_y[18] = {
    0.378217979, 0.212606231, -0.315442368, 0.561982585, 0.651832087, -0.356687876, 0.137392549,
    0.141362344, -0.21835838, -0.0846856999, -0.626896623, -0.204091842, 0.0750279551,
    -0.243117753, -0.238988638, 0.292871077, 0.698099614, -0.280146059};
static const float rnn1_yh[6] = {
    0.0750279551, -0.243117753, -0.238988638, 0.292871077, 0.698099614, -0.280146059};
static const float gru1_y[18] = {
    0.0580399905, -0.0826908021, -0.0997287172, -0.187536133, -0.370246342, -0.276616136,
    -0.0890569805, -0.0694714327, -0.0385362415, -0.493621346, 0.147361326, 0.0538631818,
    -0.292198368, -0.027843724, 0.157841872, -0.351976636, -0.0807133652, -0.1220886};
static const float gru1_yh[6] = {
    -0.292198368, -0.027843724, 0.157841872, -0.351976636, -0.0807133652, -0.1220886};
static const float gru3_y[36] = {
    -0.0743784006, -0.136064315, -0.0242069474, 0.0582181992, -0.150486215, -0.23493236,
    0.0946264655, -0.0293777492, -0.169427753, -0.176081282, 0.309963743, -0.0129271786,
    -0.130500104, -0.0917231373, 0.00131416656, -0.338681936, 0.264433442, 0.084208158,
    0.0821309133, -0.233415088, -0.216191157, 0.125791225, 0.00876421195, -0.346941555,
    -0.292909233, -0.0234621896, 0.162963592, -0.211435275, 0.0111969694, -0.129294462,
    0.172470586, -0.13767779, -0.251344742, -0.173856595, 0.321805338, 0.124451968};
static const float gru3_yh[12] = {
    -0.292909233, -0.0234621896, 0.162963592, -0.211435275, 0.0111969694, -0.129294462,
    0.0946264655, -0.0293777492, -0.169427753, -0.176081282, 0.309963743, -0.0129271786};
static const float lstm1_y[18] = {
    0.0131362421, -0.0366156945, -0.126319607, 0.104669927, 0.102954796, -0.12614992,
    -0.0662559723, -0.0525195709, -0.0390884795, -0.0134805246, -0.0435107044, 0.026886326,
    -0.0651183553, -0.0818265309, -0.0167601224, 0.113164821, 0.0802399603, -0.146356299};
static const float lstm1_yh[6] = {
    0.0131362421, -0.0366156945, -0.126319607, 0.104669927, 0.102954796, -0.12614992};
static const float lstm1_yc[6] = {
    0.0317600621, -0.0641526919, -0.209962642, 0.367891775, 0.181511557, -0.172310383};

enum { RT = 3, RB = 2, RI = 2, RH = 3 };

/* A constant [dirs, rows, cols] (cols 0: [dirs, rows]) of ramps, one per
 * direction with its own shift. */
static void rec_const(poprt__model *m, const char *name, int dirs, int rows, int cols, double scale,
                      const double *shift)
{
    float v[2 * 4 * RH * RH * 2];
    const int per = rows * (cols ? cols : 1);
    for (int d = 0; d < dirs; d++)
        ramp(v + d * per, per, scale, shift[d]);
    const int64_t dims[3] = {dirs, rows, cols};
    tb_const(m, name, POPRT_DTYPE_FLOAT, cols ? 3 : 2, dims, v);
}

/* A one-node model: X [3, 2, 2] an input, the weights constants made by
 * the caller; outs "" omitted. The node is named "rec". */
static poprt__node *rec_node(poprt__model *m, const char *op, int n_in, const char **ins,
                             int n_out, const char **outs)
{
    const int64_t xd[3] = {RT, RB, RI};
    tb_input(m, "X", POPRT_DTYPE_FLOAT, 3, xd);
    poprt__node *n = g_node(m->graph, op, n_in, ins, n_out, outs);
    n->name = "rec";
    for (int j = 0; j < n_out; j++)
        if (outs[j][0])
            tb_output(m, outs[j]);
    attr_i(n, "hidden_size", RH);
    return n;
}

/* Runs m on X = ramp(3,2,2) at 1 and at 2 threads (a bidirectional node's
 * directions then run on a thread each) and checks the named outputs
 * (within 1e-6), and that both thread counts give the same bits. */
static void rec_run(poprt__model *m, int n_out, const char **outs, const int64_t *const *dims,
                    const float *const *want)
{
    poprt_model *model = load(m);
    const int64_t xd[3] = {RT, RB, RI};
    float X[RT * RB * RI];
    ramp(X, RT * RB * RI, 1.0, 0.0);
    void *first[4] = {NULL};
    for (int th = 1; th <= 2; th++) {
        poprt_session *s = session_of(model, th == 1 ? "1" : "2");
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        poprt_stepio_set_input(io, "X", POPRT_DTYPE_FLOAT, xd, 3, X, sizeof X);
        for (int j = 0; j < n_out; j++)
            if (outs[j][0])
                poprt_stepio_set_output_alloc(io, outs[j]);
        run_ok(s, io);
        for (int j = 0; j < n_out && j < 4; j++) {
            if (!outs[j][0])
                continue;
            expect_f32(io, outs[j], dims[j][0] == 3 ? 3 : 4, dims[j] + 1, want[j], 1e-6f);
            const void *data;
            size_t nb;
            ck_assert_int_eq(poprt_stepio_output(io, outs[j], NULL, NULL, NULL, &data, &nb),
                             POPRT_OK);
            if (th == 1) {
                first[j] = malloc(nb);
                ck_assert_ptr_nonnull(first[j]);
                memcpy(first[j], data, nb);
            } else
                ck_assert_msg(memcmp(first[j], data, nb) == 0,
                              "%s differs between 1 and 2 threads", outs[j]);
        }
        poprt_stepio_free(io);
        poprt_session_free(s);
    }
    for (int j = 0; j < 4; j++)
        free(first[j]);
    poprt_model_free(model);
}

/* dims for rec_run: rank first */
static const int64_t y1d[5] = {4, RT, 1, RB, RH}, h1d[4] = {3, 1, RB, RH};
static const int64_t y2d[5] = {4, RT, 2, RB, RH}, h2d[4] = {3, 2, RB, RH};

/* Loading m fails with INVALID_MODEL naming node 'rec' and saying `what`. */
static void rec_fails(poprt__model *m, const char *what)
{
    poprt_model *model = NULL;
    ck_assert_int_eq(tb_load(m, &model), POPRT_STATUS_INVALID_MODEL);
    ck_assert_msg(strstr(poprt_last_error(), "'rec'") && strstr(poprt_last_error(), what),
                  "message '%s' should name 'rec' and say '%s'", poprt_last_error(), what);
}

static poprt__model *rnn1_model(const char **outs, int64_t output_sequence)
{
    poprt__model *m = tb_model(1);
    rec_const(m, "W", 1, RH, RI, 0.5, (const double[]){0.3});
    rec_const(m, "R", 1, RH, RH, 0.4, (const double[]){0.9});
    rec_const(m, "B", 1, 2 * RH, 0, 0.2, (const double[]){1.4});
    poprt__node *n = rec_node(m, "RNN", 4, (const char *[]){"X", "W", "R", "B"}, 2, outs);
    attr_strings(n, "activations", 2, (const char *[]){"Tanh", "Tanh"}); /* the default */
    attr_i(n, "output_sequence", output_sequence);
    return m;
}

START_TEST(rnn1_output_sequence)
{
    const char *both[] = {"Y", "Yh"}, *last[] = {"", "Yh"};
    rec_run(rnn1_model(both, 1), 2, both, (const int64_t *const[]){y1d, h1d},
            (const float *const[]){rnn1_y, rnn1_yh});
    /* output_sequence 0: Y may be left out, or computed all the same */
    rec_run(rnn1_model(last, 0), 2, last, (const int64_t *const[]){y1d, h1d},
            (const float *const[]){rnn1_y, rnn1_yh});
    rec_run(rnn1_model(both, 0), 2, both, (const int64_t *const[]){y1d, h1d},
            (const float *const[]){rnn1_y, rnn1_yh});
    rec_fails(rnn1_model(last, 1), "output_sequence is 1 but output Y is omitted");
    /* no layout attribute before opset 14 */
    poprt__model *m = rnn1_model(both, 1);
    attr_i(m->graph->nodes.items[0], "layout", 0);
    rec_fails(m, "layout");
}
END_TEST

/* GRU-1 (opset 1) or GRU-3 (opset 3, bidirectional, linear_before_reset). */
static poprt__model *gru_model(int opset, const char **outs, const char *direction)
{
    poprt__model *m = tb_model(opset);
    const int dirs = opset >= 3 ? 2 : 1;
    rec_const(m, "W", dirs, 3 * RH, RI, 0.5, (const double[]){0.2, 3.3});
    rec_const(m, "R", dirs, 3 * RH, RH, 0.4, (const double[]){0.6, 4.1});
    rec_const(m, "B", dirs, 6 * RH, 0, 0.2, (const double[]){1.0, 5.0});
    float h0[RB * RH];
    ramp(h0, RB * RH, 0.3, 2.2);
    tb_const(m, "h0", POPRT_DTYPE_FLOAT, 3, (const int64_t[]){1, RB, RH}, h0);
    poprt__node *n = rec_node(m, "GRU", 6,
                              (const char *[]){"X", "W", "R", "B", "", opset >= 3 ? "" : "h0"},
                              2, outs);
    if (direction)
        attr_s(n, "direction", direction);
    if (opset >= 3)
        attr_i(n, "linear_before_reset", 1);
    attr_i(n, "output_sequence", outs[0][0] != 0);
    return m;
}

/* The ramp bidir_rec_model's W holds (2 G H I floats). */
static void rec_w(float *w, int G, int H, int I)
{
    ramp(w, 2 * G * H * I, 0.4, 0.3);
}

/* A bidirectional node "rec": op (G gates: RNN 1, GRU 3, LSTM 4) over an
 * input X [T, B, I], hidden size H, ramps for W (rec_w; w_input: W is an
 * input of the graph instead), R and B, a GRU's linear_before_reset lbr;
 * outputs Y, Yh. */
static poprt_model *rec_model(const char *op, int G, int T, int B, int I, int H, int lbr,
                              int w_input)
{
    poprt__model *m = tb_model(14);
    tb_input(m, "X", POPRT_DTYPE_FLOAT, 3, (const int64_t[]){T, B, I});
    float *w = malloc(sizeof(float) * (size_t)(2 * G * H * (I + H + 2)));
    ck_assert_ptr_nonnull(w);
    float *r = w + 2 * G * H * I, *b = r + 2 * G * H * H;
    rec_w(w, G, H, I);
    ramp(r, 2 * G * H * H, 0.2, 1.1);
    ramp(b, 2 * 2 * G * H, 0.1, 2.0);
    if (w_input)
        tb_input(m, "W", POPRT_DTYPE_FLOAT, 3, (const int64_t[]){2, G * H, I});
    else
        tb_const(m, "W", POPRT_DTYPE_FLOAT, 3, (const int64_t[]){2, G * H, I}, w);
    tb_const(m, "R", POPRT_DTYPE_FLOAT, 3, (const int64_t[]){2, G * H, H}, r);
    tb_const(m, "B", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){2, 2 * G * H}, b);
    free(w);
    poprt__node *n = g_node(m->graph, op, 4, (const char *[]){"X", "W", "R", "B"}, 2,
                            (const char *[]){"Y", "Yh"});
    n->name = "rec";
    attr_s(n, "direction", "bidirectional");
    attr_i(n, "hidden_size", H);
    if (G == 3)
        attr_i(n, "linear_before_reset", lbr);
    tb_output(m, "Y");
    tb_output(m, "Yh");
    return load(m);
}

static poprt_model *bidir_rec_model(const char *op, int G, int T, int B, int I, int H, int lbr)
{
    return rec_model(op, G, T, B, I, H, lbr, 0);
}

/* Bidirectional LSTM and GRU (linear_before_reset 0: the r h product) of
 * batch 12, more rows than the few-column form takes (the products' GEMM
 * workspaces), at 1, 2 and 4 threads: the directions then run on threads
 * of their own, each with its own scratch; the same bits every time. */
START_TEST(bidirectional_batch_threads_agree)
{
    enum { T = 4, B = 12, I = 5, H = 20 };
    for (int G = 3; G <= 4; G++) {
        poprt_model *model = bidir_rec_model(G == 4 ? "LSTM" : "GRU", G, T, B, I, H, 0);
        static float X[T * B * I];
        ramp(X, T * B * I, 1.0, 0.5);
        float first[T * 2 * B * H];
        for (int th = 1; th <= 4; th *= 2) {
            char threads[4];
            snprintf(threads, sizeof threads, "%d", th);
            poprt_session *s = session_of(model, threads);
            poprt_stepio *io;
            ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
            poprt_stepio_set_input(io, "X", POPRT_DTYPE_FLOAT, (const int64_t[]){T, B, I}, 3, X,
                                   sizeof X);
            poprt_stepio_set_output_alloc(io, "Y");
            poprt_stepio_set_output_alloc(io, "Yh");
            run_ok(s, io);
            const void *data;
            size_t nb;
            ck_assert_int_eq(poprt_stepio_output(io, "Y", NULL, NULL, NULL, &data, &nb), POPRT_OK);
            ck_assert_uint_eq(nb, sizeof first);
            if (th == 1) {
                memcpy(first, data, nb);
                for (size_t i = 0; i < sizeof first / sizeof first[0]; i++)
                    ck_assert(isfinite(first[i]) && fabsf(first[i]) <= 1.0f);
            } else
                ck_assert_msg(memcmp(first, data, nb) == 0, "%s Y differs at %d threads",
                              G == 4 ? "LSTM" : "GRU", th);
            poprt_stepio_free(io);
            poprt_session_free(s);
        }
        poprt_model_free(model);
    }
}
END_TEST

/* Runs s on X [T, B, I] into Y (T * 2 * B * H floats). */
static void packed_rec_run(poprt_session *s, int T, int B, int I, const float *X, float *Y,
                           size_t ybytes)
{
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    poprt_stepio_set_input(io, "X", POPRT_DTYPE_FLOAT, (const int64_t[]){T, B, I}, 3, X,
                           sizeof(float) * (size_t)(T * B * I));
    poprt_stepio_set_output_alloc(io, "Y");
    run_ok(s, io);
    const void *data;
    size_t nb;
    ck_assert_int_eq(poprt_stepio_output(io, "Y", NULL, NULL, NULL, &data, &nb), POPRT_OK);
    ck_assert_uint_eq(nb, ybytes);
    memcpy(Y, data, nb);
    poprt_stepio_free(io);
}

/* The bytes node "rec" has prepared, from s's profile after one run. */
static long long rec_prepared_bytes(poprt_session *s)
{
    char *json;
    size_t len;
    ck_assert_int_eq(poprt_session_profile_trace(s, &json, &len), POPRT_OK);
    const char *at = strstr(json, "\"name\":\"rec\"");
    ck_assert_ptr_nonnull(at);
    const char *pb = strstr(at, "\"prepared_bytes\":");
    ck_assert_ptr_nonnull(pb);
    long long n = strtoll(pb + strlen("\"prepared_bytes\":"), NULL, 10);
    poprt_buffer_free(json);
    return n;
}

/* s exported to path and loaded with o runs X [T, B, I] to the same Y
 * (ybytes) with the same prepared bytes: the executable file keeps them. */
static void rec_export_same(poprt_session *s, poprt_options *o, const char *path, int T, int B,
                            int I, const float *X, const float *Y, size_t ybytes, const char *op)
{
    poprt_session *sl;
    ck_assert_int_eq(poprt_session_export(s, path), POPRT_OK);
    ck_assert_int_eq(poprt_session_load(path, o, &sl), POPRT_OK);
    float *y = calloc(1, ybytes);
    ck_assert_ptr_nonnull(y);
    packed_rec_run(sl, T, B, I, X, y, ybytes);
    ck_assert_msg(memcmp(Y, y, ybytes) == 0, "%s: executable file differs", op);
    ck_assert_int_eq(rec_prepared_bytes(sl), rec_prepared_bytes(s));
    free(y);
    poprt_session_free(sl);
}

/* Two or more batch rows take R as the node's prepare packed it for the
 * fast GEMM (lib/kernels/x86/gemm_ops.c), a batch of one the GEMV on R as
 * stored (kernels/ref/rnn.c): each row of a batch of 5 must give what it
 * gives alone, within 1e-5 (the two sum in different orders; outputs are
 * at most 1), for LSTM, GRU with and without linear_before_reset and RNN,
 * both directions, at 1 and 2 threads (the same bits); the batch of 5 has
 * prepared data and the batch of 1 none; and an executable file exported
 * from the batch of 5 runs on that data with the same bits. */
START_TEST(recurrent_packed_rows_match_single_rows)
{
    enum { T = 6, B = 5, I = 7, H = 24 };
    static const struct {
        const char *op;
        int G, lbr;
    } cases[] = {{"LSTM", 4, 0}, {"GRU", 3, 0}, {"GRU", 3, 1}, {"RNN", 1, 0}};
    static float X[T * B * I], Y[T * 2 * B * H], Y2[T * 2 * B * H], X1[T * I], Y1[T * 2 * H];
    ramp(X, T * B * I, 1.0, 0.5);
    char dir[] = "/tmp/poprt_rnn_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/rec.popef", dir);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        poprt_model *mb = bidir_rec_model(cases[c].op, cases[c].G, T, B, I, H, cases[c].lbr);
        poprt_model *m1 = bidir_rec_model(cases[c].op, cases[c].G, T, 1, I, H, cases[c].lbr);
        poprt_options *o;
        ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
        ck_assert_int_eq(poprt_options_set(o, "profile", "1"), POPRT_OK);
        poprt_session *sb, *s1;
        ck_assert_int_eq(poprt_session_create(mb, o, &sb), POPRT_OK);
        ck_assert_int_eq(poprt_session_create(m1, o, &s1), POPRT_OK);
        packed_rec_run(sb, T, B, I, X, Y, sizeof Y);
        ck_assert_msg(rec_prepared_bytes(sb) > 0, "%s batch %d: R not packed", cases[c].op, B);
        for (int b = 0; b < B; b++) {
            for (int t = 0; t < T; t++)
                memcpy(X1 + t * I, X + (t * B + b) * I, sizeof(float) * I);
            packed_rec_run(s1, T, 1, I, X1, Y1, sizeof Y1);
            for (int t = 0; t < T; t++)
                for (int d = 0; d < 2; d++)
                    for (int n = 0; n < H; n++) {
                        const float got = Y[((t * 2 + d) * B + b) * H + n];
                        const float want = Y1[(t * 2 + d) * H + n];
                        ck_assert_msg(fabsf(got - want) <= 1e-5f && fabsf(want) <= 1.0f,
                                      "%s lbr %d: Y[%d, %d, %d, %d] = %g, alone %g",
                                      cases[c].op, cases[c].lbr, t, d, b, n, (double)got,
                                      (double)want);
                    }
        }
        ck_assert_int_eq(rec_prepared_bytes(s1), 0);
        /* two threads: the directions on a thread each */
        poprt_session *st = session_of(mb, "2");
        packed_rec_run(st, T, B, I, X, Y2, sizeof Y2);
        ck_assert_msg(memcmp(Y, Y2, sizeof Y) == 0, "%s: 2 threads differ", cases[c].op);
        poprt_session_free(st);
        rec_export_same(sb, o, path, T, B, I, X, Y, sizeof Y, cases[c].op);
        poprt_session_free(s1);
        poprt_session_free(sb);
        poprt_options_free(o);
        poprt_model_free(m1);
        poprt_model_free(mb);
    }
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* The input projection X W^T of more than POPRT__RNN_FEW_ROWS rows takes W as
 * the node's prepare packed it (lib/kernels/x86/gemm_ops.c), also for a
 * batch of one (whose R is not packed): 20 steps of one row, for LSTM,
 * GRU (both forms) and RNN, give the bits of the same model with W an
 * input of the graph (packed by the GEMM on every run), and the prepared
 * bytes are W's; an executable file keeps them. */
START_TEST(recurrent_w_packed_for_long_sequences)
{
    enum { T = 20, B = 1, I = 9, H = 12, GMAX = 4 };
    static const struct {
        const char *op;
        int G, lbr;
    } cases[] = {{"LSTM", 4, 0}, {"GRU", 3, 0}, {"GRU", 3, 1}, {"RNN", 1, 0}};
    static float X[T * B * I], W[2 * GMAX * H * I], Y[T * 2 * B * H];
    ramp(X, T * B * I, 1.0, 0.5);
    char dir[] = "/tmp/poprt_rnnw_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/rec.popef", dir);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int G = cases[c].G;
        poprt_model *mc = rec_model(cases[c].op, G, T, B, I, H, cases[c].lbr, 0);
        poprt_model *mi = rec_model(cases[c].op, G, T, B, I, H, cases[c].lbr, 1);
        poprt_options *o;
        ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
        ck_assert_int_eq(poprt_options_set(o, "profile", "1"), POPRT_OK);
        poprt_session *sc, *si;
        ck_assert_int_eq(poprt_session_create(mc, o, &sc), POPRT_OK);
        ck_assert_int_eq(poprt_session_create(mi, o, &si), POPRT_OK);
        packed_rec_run(sc, T, B, I, X, Y, sizeof Y);
        /* W of both directions packed (the GEMM's panels round G H up): at
         * least its floats, and nothing for R */
        const long long bytes = rec_prepared_bytes(sc);
        ck_assert_msg(bytes >= (long long)sizeof(float) * 2 * G * H * I &&
                          bytes < (long long)sizeof(float) * 2 * G * H * (I + H),
                      "%s: %lld prepared bytes", cases[c].op, bytes);
        rec_w(W, G, H, I);
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        poprt_stepio_set_input(io, "X", POPRT_DTYPE_FLOAT, (const int64_t[]){T, B, I}, 3, X,
                               sizeof X);
        poprt_stepio_set_input(io, "W", POPRT_DTYPE_FLOAT, (const int64_t[]){2, G * H, I}, 3,
                               W, sizeof(float) * (size_t)(2 * G * H * I));
        poprt_stepio_set_output_alloc(io, "Y");
        run_ok(si, io);
        const void *data;
        size_t nb;
        ck_assert_int_eq(poprt_stepio_output(io, "Y", NULL, NULL, NULL, &data, &nb), POPRT_OK);
        ck_assert_uint_eq(nb, sizeof Y);
        ck_assert_msg(memcmp(Y, data, nb) == 0, "%s lbr %d: W packed once differs",
                      cases[c].op, cases[c].lbr);
        ck_assert_int_eq(rec_prepared_bytes(si), 0);
        poprt_stepio_free(io);
        rec_export_same(sc, o, path, T, B, I, X, Y, sizeof Y, cases[c].op);
        poprt_session_free(si);
        poprt_session_free(sc);
        poprt_options_free(o);
        poprt_model_free(mi);
        poprt_model_free(mc);
    }
    ck_assert_int_eq(unlink(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(gru1_and_gru3)
{
    const char *both[] = {"Y", "Yh"}, *last[] = {"", "Yh"};
    /* GRU-1: direction absent, or its default "foward" written out */
    rec_run(gru_model(1, both, NULL), 2, both, (const int64_t *const[]){y1d, h1d},
            (const float *const[]){gru1_y, gru1_yh});
    rec_run(gru_model(1, last, "foward"), 2, last, (const int64_t *const[]){y1d, h1d},
            (const float *const[]){gru1_y, gru1_yh});
    /* GRU-3: both directions, linear_before_reset */
    rec_run(gru_model(3, both, "bidirectional"), 2, both, (const int64_t *const[]){y2d, h2d},
            (const float *const[]){gru3_y, gru3_yh});
    /* GRU-1 has no linear_before_reset; "foward" is GRU-1's only; Y_h is
     * required in GRU-1 */
    poprt__model *m = gru_model(1, both, NULL);
    attr_i(m->graph->nodes.items[0], "linear_before_reset", 1);
    rec_fails(m, "linear_before_reset");
    rec_fails(gru_model(3, both, "foward"), "unknown direction 'foward'");
    rec_fails(gru_model(1, (const char *[]){"Y", ""}, NULL), "Y_h");
}
END_TEST

static poprt__model *lstm1_model(const char **outs)
{
    poprt__model *m = tb_model(1);
    rec_const(m, "W", 1, 4 * RH, RI, 0.5, (const double[]){0.7});
    rec_const(m, "R", 1, 4 * RH, RH, 0.4, (const double[]){1.9});
    rec_const(m, "B", 1, 8 * RH, 0, 0.2, (const double[]){2.5});
    rec_const(m, "P", 1, 3 * RH, 0, 0.3, (const double[]){0.8});
    poprt__node *n = rec_node(m, "LSTM", 8, (const char *[]){"X", "W", "R", "B", "", "", "", "P"},
                              3, outs);
    attr_s(n, "direction", "reverse");
    attr_i(n, "output_sequence", outs[0][0] != 0);
    return m;
}

START_TEST(lstm1_reverse_peepholes)
{
    const char *all[] = {"Y", "Yh", "Yc"}, *states[] = {"", "Yh", "Yc"};
    const int64_t *const dims[] = {y1d, h1d, h1d};
    const float *const want[] = {lstm1_y, lstm1_yh, lstm1_yc};
    rec_run(lstm1_model(all), 3, all, dims, want);
    rec_run(lstm1_model(states), 3, states, dims, want);
    poprt__model *m = lstm1_model(states);
    attr_i(m->graph->nodes.items[0], "output_sequence", 2);
    rec_fails(m, "output_sequence is 2 but output Y is omitted");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("kernels_control");
    TCase *tc = tcase_create("control");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, if_branches_with_different_shapes);
    tcase_add_test(tc, if_invalid_branch_fails_only_when_taken);
    tcase_add_test(tc, if_constant_condition_with_invalid_branch);
    tcase_add_test(tc, if_on_input_shapes_compiles_to_the_branch_taken);
    tcase_add_test(tc, loop_changing_shape_scan_outputs_and_early_exit);
    tcase_add_test(tc, loop_untyped_body_inputs_are_typed_and_threads_agree);
    tcase_add_test(tc, loop_inference_types_body_inputs);
    tcase_add_test(tc, loop_with_nested_if_and_outer_scope);
    tcase_add_test(tc, loop_invalid_body_fails_only_when_it_runs);
    tcase_add_test(tc, scan9_axes_directions_and_outer_scope);
    tcase_add_test(tc, scan8_batch_sequence_lens_and_reverse);
    suite_add_tcase(s, tc);
    TCase *ts = tcase_create("sequence");
    tcase_add_test(ts, sequence_ops_chain);
    tcase_add_test(ts, optional_ops);
    tcase_add_test(ts, sequence_at_out_of_range_names_the_node);
    suite_add_tcase(s, ts);
    TCase *tr = tcase_create("recurrent");
    tcase_add_test(tr, gru_matches_formulas);
    tcase_add_test(tr, lstm_single_step_by_hand);
    tcase_add_test(tr, rnn_layout1_sequence_lens);
    tcase_add_test(tr, rnn1_output_sequence);
    tcase_add_test(tr, gru1_and_gru3);
    tcase_add_test(tr, bidirectional_batch_threads_agree);
    tcase_add_test(tr, recurrent_packed_rows_match_single_rows);
    tcase_add_test(tr, recurrent_w_packed_for_long_sequences);
    tcase_add_test(tr, lstm1_reverse_peepholes);
    suite_add_tcase(s, tr);
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
