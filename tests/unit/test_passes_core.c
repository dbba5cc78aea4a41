/* Unit tests: the core passes (constant folding, eliminate_*, fuse_*, ...).
 * Each test builds a graph where the pass applies, checks the rewrite and
 * that the model computes the same outputs before and after (public API,
 * same random inputs, fp32 within 1e-5 relative). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builder.h"
#include "ir/dtype.h"

#define I(...) ((const char *[]){__VA_ARGS__})
#define D(...) ((const int64_t[]){__VA_ARGS__})

/* ---- building ---- */

static poprt__node *node(poprt__model *m, const char *op, int n_in, const char **ins, int n_out,
                         const char **outs)
{
    return tb_node(m, op, n_in, ins, n_out, outs);
}

static void attr_i(poprt__node *n, const char *name, int64_t v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(a);
    a->i = v;
}

static void attr_f(poprt__node *n, const char *name, float v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_FLOAT);
    ck_assert_ptr_nonnull(a);
    a->f = v;
}

static void attr_ints(poprt__node *n, const char *name, int64_t count, const int64_t *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS);
    ck_assert_ptr_nonnull(a);
    a->n = count;
    a->ints = poprt__arena_memdup(&n->graph->model->arena, v, (size_t)count * sizeof *v);
}

static void const_f(poprt__model *m, const char *name, int rank, const int64_t *dims, const float *v)
{
    tb_const(m, name, POPRT_DTYPE_FLOAT, rank, dims, v);
}

static void const_i64(poprt__model *m, const char *name, int64_t n, const int64_t *v)
{
    tb_const(m, name, POPRT_DTYPE_INT64, 1, &n, v);
}

/* count floats of deterministic pseudo-random values in [lo, hi) */
static void fill(float *p, int64_t n, float lo, float hi, unsigned seed)
{
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        p[i] = lo + (hi - lo) * (float)((seed >> 8) & 0xffff) / 65536.0f;
    }
}

static poprt_model *load(poprt__model *m)
{
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    return model;
}

/* ---- running ---- */

static void run_pass(poprt_model *m, const char *pass, const char *args, int expect_changed)
{
    poprt_pass_manager *pm;
    ck_assert_int_eq(poprt_pass_manager_create(&pm), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_add(pm, pass, args), POPRT_OK);
    poprt_status st = poprt_pass_manager_run(pm, m);
    ck_assert_msg(st == POPRT_OK, "pass %s: %s", pass, poprt_last_error());
    if (expect_changed >= 0)
        ck_assert_uint_eq(poprt_pass_manager_changed(pm), (size_t)expect_changed);
    poprt_pass_manager_free(pm);
}

static int count_op(const poprt_model *m, const char *op)
{
    const poprt__graph *g = m->m->graph;
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++)
        c += strcmp(((poprt__node *)g->nodes.items[i])->op_type, op) == 0;
    return c;
}

static int n_nodes(const poprt_model *m) { return (int)m->m->graph->nodes.len; }

typedef struct result {
    int n;
    char names[8][64];
    double *vals[8];
    int64_t count[8];
} result;

/* Runs m on inputs made from `seed` (floats in [-1,1), integers in [0,3),
 * bools alternating); unknown dims are 2. */
static const poprt_model *shape_from; /* when set: input shapes come from this model */

static void run_model(const poprt_model *m, unsigned seed, result *r)
{
    /* the session's own compile-time rewrites off (fuse_bn_into_conv is
     * one), so the unconverted model runs as written */
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "optimize", "0"), POPRT_OK);
    poprt_session *s;
    poprt_status st = poprt_session_create(m, o, &s);
    poprt_options_free(o);
    ck_assert_msg(st == POPRT_OK, "session: %s", poprt_last_error());
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    void *bufs[8] = {0};
    size_t ni = poprt_session_num_inputs(s);
    ck_assert_uint_le(ni, 8);
    for (size_t i = 0; i < ni; i++) {
        poprt_value_info info = {.size = sizeof info};
        ck_assert_int_eq(poprt_session_input(s, i, &info), POPRT_OK);
        int64_t dims[POPRT__MAX_RANK], n = 1;
        poprt_value_info fixed = {.size = sizeof fixed};
        if (shape_from)
            ck_assert_int_eq(poprt_model_input(shape_from, i, &fixed), POPRT_OK);
        for (int d = 0; d < info.rank; d++) {
            dims[d] = info.dims[d] >= 0 ? info.dims[d] : 2;
            if (shape_from && fixed.rank == info.rank && fixed.dims[d] >= 0)
                dims[d] = fixed.dims[d];
            n *= dims[d];
        }
        size_t es = poprt_dtype_size(info.dtype);
        bufs[i] = calloc((size_t)n + 1, es);
        float *f = malloc(((size_t)n + 1) * sizeof *f);
        fill(f, n, -1, 1, seed + (unsigned)i * 7919u);
        for (int64_t k = 0; k < n; k++) {
            if (poprt__dtype_is_float(info.dtype))
                poprt__store_f64(bufs[i], info.dtype, k, f[k]);
            else if (info.dtype == POPRT_DTYPE_BOOL)
                ((uint8_t *)bufs[i])[k] = (uint8_t)(k & 1);
            else
                poprt__store_i64(bufs[i], info.dtype, k, (int64_t)((f[k] + 1) * 1.5f));
        }
        free(f);
        ck_assert_int_eq(poprt_stepio_set_input(io, info.name, info.dtype, dims, info.rank, bufs[i],
                                                (size_t)n * es),
                         POPRT_OK);
    }
    r->n = (int)poprt_session_num_outputs(s);
    ck_assert_int_le(r->n, 8);
    for (int j = 0; j < r->n; j++) {
        poprt_value_info info = {.size = sizeof info};
        ck_assert_int_eq(poprt_session_output(s, (size_t)j, &info), POPRT_OK);
        snprintf(r->names[j], sizeof r->names[j], "%s", info.name);
        ck_assert_int_eq(poprt_stepio_set_output_alloc(io, info.name), POPRT_OK);
    }
    st = poprt_session_run(s, io);
    ck_assert_msg(st == POPRT_OK, "run: %s", poprt_last_error());
    for (int j = 0; j < r->n; j++) {
        poprt_dtype dt;
        int rank;
        const int64_t *dims;
        const void *data;
        ck_assert_int_eq(poprt_stepio_output(io, r->names[j], &dt, &dims, &rank, &data, NULL), POPRT_OK);
        int64_t n = 1;
        for (int d = 0; d < rank; d++)
            n *= dims[d];
        r->count[j] = n;
        r->vals[j] = malloc(((size_t)n + 1) * sizeof(double));
        for (int64_t k = 0; k < n; k++)
            r->vals[j][k] = dt == POPRT_DTYPE_BOOL ? ((const uint8_t *)data)[k]
                                                   : poprt__load_f64(data, dt, k);
    }
    poprt_stepio_free(io);
    poprt_session_free(s);
    for (size_t i = 0; i < ni; i++)
        free(bufs[i]);
}

static void result_free(result *r)
{
    for (int j = 0; j < r->n; j++)
        free(r->vals[j]);
}

/* a and b give the same outputs (same names, counts; 1e-5 relative). */
static void compare(const poprt_model *a, const poprt_model *b)
{
    for (unsigned seed = 1; seed <= 2; seed++) {
        result ra, rb;
        run_model(a, seed, &ra);
        run_model(b, seed, &rb);
        ck_assert_int_eq(ra.n, rb.n);
        for (int j = 0; j < ra.n; j++) {
            ck_assert_str_eq(ra.names[j], rb.names[j]);
            ck_assert_int_eq(ra.count[j], rb.count[j]);
            for (int64_t k = 0; k < ra.count[j]; k++) {
                double x = ra.vals[j][k], y = rb.vals[j][k];
                ck_assert_msg(fabs(x - y) <= 1e-6 + 1e-5 * fabs(x), "output %s[%lld]: %g vs %g",
                              ra.names[j], (long long)k, x, y);
            }
        }
        result_free(&ra);
        result_free(&rb);
    }
}

/* Builds the model twice (the builder makes a fresh IR each call), runs the
 * pass on the second and compares; returns the converted model. */
typedef poprt__model *(*build_fn)(void);
static poprt_model *check_pass(build_fn build, const char *pass, const char *args, poprt_model **orig)
{
    poprt_model *a = load(build()), *b = load(build());
    run_pass(b, pass, args, 1);
    compare(a, b);
    /* the converted model survives saving and loading */
    void *data;
    size_t size;
    ck_assert_int_eq(poprt_model_serialize(b, &data, &size), POPRT_OK);
    poprt_model *c;
    ck_assert_int_eq(poprt_model_load_from_memory(data, size, NULL, &c), POPRT_OK);
    poprt_buffer_free(data);
    compare(b, c);
    poprt_model_free(c);
    if (orig)
        *orig = a;
    else
        poprt_model_free(a);
    return b;
}

/* ---- constant_folding / extract_constant_to_initializer ---- */

static poprt__model *b_fold(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    const_f(m, "a", 1, D(3), (const float[]){1, 2, 3});
    const_f(m, "b", 1, D(3), (const float[]){0.5f, -1, 2});
    node(m, "Mul", 2, I("a", "b"), 1, I("ab"));
    node(m, "Exp", 1, I("ab"), 1, I("e"));
    node(m, "Shape", 1, I("x"), 1, I("shp"));
    node(m, "Reshape", 2, I("x", "shp"), 1, I("xr"));
    node(m, "Add", 2, I("xr", "e"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(constant_folding)
{
    poprt_model *b = check_pass(b_fold, "constant_folding", NULL, NULL);
    ck_assert_int_eq(n_nodes(b), 2); /* Reshape, Add */
    ck_assert_int_eq(count_op(b, "Shape"), 0);
    ck_assert_int_eq(count_op(b, "Exp"), 0);
    /* the inputs of folded nodes are gone */
    ck_assert_ptr_null(poprt__map_get(&b->m->graph->by_name, "a") ?
                       poprt__tensor_data(poprt__map_get(&b->m->graph->by_name, "a")) : NULL);
    poprt_model_free(b);
    /* max_tensor_size: larger results stay */
    poprt_model *c = load(b_fold());
    run_pass(c, "constant_folding", "max_tensor_size=12", 1);
    ck_assert_int_eq(count_op(c, "Mul"), 0);   /* float[3]: 12 bytes */
    ck_assert_int_eq(count_op(c, "Shape"), 1); /* int64[2]: 16 bytes */
    poprt_model_free(c);
}
END_TEST

static poprt__model *b_constant_node(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    poprt__node *c = node(m, "Constant", 0, NULL, 1, I("c"));
    poprt__attr *a = poprt__node_add_attr(c, "value", POPRT__ATTR_TENSOR);
    poprt__tensor *t = poprt__arena_alloc(&m->arena, sizeof *t);
    t->name = "";
    poprt__type_set_tensor(&m->arena, &t->type, POPRT_DTYPE_FLOAT, 1, D(3));
    static const float v[3] = {1, -2, 3};
    poprt__tensor_set_data(t, poprt__arena_memdup(&m->arena, v, sizeof v));
    t->nbytes = sizeof v;
    a->t = t;
    poprt__node *c2 = node(m, "Constant", 0, NULL, 1, I("k"));
    poprt__node_add_attr(c2, "value_float", POPRT__ATTR_FLOAT)->f = 0.5f;
    node(m, "Mul", 2, I("x", "c"), 1, I("xc"));
    node(m, "Add", 2, I("xc", "k"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(extract_constant_to_initializer)
{
    poprt_model *b = check_pass(b_constant_node, "extract_constant_to_initializer", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Constant"), 0);
    ck_assert_int_eq(n_nodes(b), 2);
    ck_assert_uint_eq(b->m->graph->initializers.len, 2);
    poprt_model_free(b);
}
END_TEST

/* ---- eliminate_* ---- */

static poprt__model *b_deadend(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    node(m, "Relu", 1, I("x"), 1, I("y"));
    node(m, "Sigmoid", 1, I("x"), 1, I("d1"));
    node(m, "Neg", 1, I("d1"), 1, I("d2"));
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_deadend)
{
    poprt_model *b = check_pass(b_deadend, "eliminate_deadend", NULL, NULL);
    ck_assert_int_eq(n_nodes(b), 1);
    ck_assert_int_eq(count_op(b, "Relu"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_dup_init(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    const_f(m, "c1", 1, D(3), (const float[]){1, 2, 3});
    const_f(m, "c2", 1, D(3), (const float[]){1, 2, 3});
    const_f(m, "c3", 1, D(3), (const float[]){1, 2, 4});
    node(m, "Add", 2, I("x", "c1"), 1, I("a"));
    node(m, "Mul", 2, I("a", "c2"), 1, I("b"));
    node(m, "Sub", 2, I("b", "c3"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_duplicate_initializer)
{
    poprt_model *b = check_pass(b_dup_init, "eliminate_duplicate_initializer", NULL, NULL);
    ck_assert_uint_eq(b->m->graph->initializers.len, 2);
    poprt_model_free(b);
    b = check_pass(b_dup_init, "remove_duplicated_initializer", NULL, NULL);
    ck_assert_uint_eq(b->m->graph->initializers.len, 2);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_identity(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    node(m, "Identity", 1, I("x"), 1, I("i1"));
    node(m, "Relu", 1, I("i1"), 1, I("r"));
    node(m, "Identity", 1, I("r"), 1, I("y"));
    node(m, "Identity", 1, I("x"), 1, I("z")); /* input -> output: must stay */
    tb_output(m, "y");
    tb_output(m, "z");
    return m;
}

START_TEST(eliminate_identity)
{
    poprt_model *b = check_pass(b_identity, "eliminate_identity", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Identity"), 1);
    ck_assert_int_eq(n_nodes(b), 2);
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_output(b, 0, &info), POPRT_OK);
    ck_assert_str_eq(info.name, "y");
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_nop_arith(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    const_f(m, "zero", 1, D(3), (const float[]){0, 0, 0});
    const_f(m, "one", 0, NULL, (const float[]){1});
    const_f(m, "zero3", 3, D(2, 1, 3), (const float[]){0, 0, 0, 0, 0, 0});
    node(m, "Add", 2, I("zero", "x"), 1, I("a"));
    node(m, "Mul", 2, I("a", "one"), 1, I("b"));
    node(m, "Div", 2, I("b", "one"), 1, I("c"));
    node(m, "Sub", 2, I("c", "zero"), 1, I("d"));
    node(m, "Pow", 2, I("d", "one"), 1, I("e"));
    node(m, "Sub", 2, I("zero", "e"), 1, I("f"));    /* 0 - x: not a nop */
    node(m, "Add", 2, I("f", "zero3"), 1, I("y")); /* broadcasts to rank 3: kept */
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_nop_arithmetic)
{
    poprt_model *b = check_pass(b_nop_arith, "eliminate_nop_arithmetic", NULL, NULL);
    ck_assert_int_eq(n_nodes(b), 2);
    ck_assert_int_eq(count_op(b, "Sub"), 1);
    ck_assert_int_eq(count_op(b, "Add"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_nop_cast(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    attr_i(node(m, "Cast", 1, I("x"), 1, I("c")), "to", POPRT_DTYPE_FLOAT);
    node(m, "Relu", 1, I("c"), 1, I("r"));
    attr_i(node(m, "Cast", 1, I("r"), 1, I("y")), "to", POPRT_DTYPE_DOUBLE);
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_nop_cast)
{
    poprt_model *b = check_pass(b_nop_cast, "eliminate_nop_cast", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Cast"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_nop_expand(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    const_i64(m, "s1", 2, D(1, 3));
    const_i64(m, "s2", 3, D(2, 2, 3));
    node(m, "Expand", 2, I("x", "s1"), 1, I("a"));
    node(m, "Expand", 2, I("a", "s2"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_nop_expand)
{
    poprt_model *b = check_pass(b_nop_expand, "eliminate_nop_expand", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Expand"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_nop_flatten(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    node(m, "Flatten", 1, I("x"), 1, I("a"));
    attr_i(node(m, "Flatten", 1, I("a"), 1, I("y")), "axis", 0);
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_nop_flatten)
{
    poprt_model *b = check_pass(b_nop_flatten, "eliminate_nop_flatten", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Flatten"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__graph *branch(poprt__model *m, poprt__node *owner, const char *attr, const char *op,
                            const char *out)
{
    poprt__graph *g = poprt__graph_new(m, owner->graph, attr);
    g->parent_node = owner;
    poprt__node_add_attr(owner, attr, POPRT__ATTR_GRAPH)->g = g;
    poprt__node *n = poprt__graph_add_node(g, op, "", NULL, 1, 1);
    poprt__node_set_input(n, 0, poprt__graph_find(g, "x"));
    n->outputs[0] = poprt__graph_tensor(g, out);
    poprt__tensor *t = n->outputs[0];
    t->is_output = 1;
    poprt__graph_add_output(g, t);
    return g;
}

static poprt__model *b_nop_if(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    tb_const(m, "cond", POPRT_DTYPE_BOOL, 0, NULL, (const uint8_t[]){1});
    poprt__node *n = node(m, "If", 1, I("cond"), 1, I("r"));
    branch(m, n, "then_branch", "Relu", "t_out");
    branch(m, n, "else_branch", "Neg", "e_out");
    node(m, "Sigmoid", 1, I("r"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_nop_if)
{
    poprt_model *b = check_pass(b_nop_if, "eliminate_nop_if", NULL, NULL);
    ck_assert_int_eq(count_op(b, "If"), 0);
    ck_assert_int_eq(count_op(b, "Relu"), 1);
    ck_assert_int_eq(count_op(b, "Neg"), 0);
    ck_assert_int_eq(n_nodes(b), 2);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_nop_pad(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    const_i64(m, "p0", 4, D(0, 0, 0, 0));
    const_i64(m, "p1", 4, D(0, 1, 0, 0));
    node(m, "Pad", 2, I("x", "p0"), 1, I("a"));
    node(m, "Pad", 2, I("a", "p1"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_nop_pad)
{
    poprt_model *b = check_pass(b_nop_pad, "eliminate_nop_pad", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Pad"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_nop_reshape(void)
{
    poprt__model *m = tb_model(17);
    poprt__tensor *x = tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    x->type.dims[0].value = -1; /* symbolic batch */
    x->type.dims[0].param = "N";
    const_i64(m, "s1", 2, D(0, 3));
    const_i64(m, "s2", 2, D(-1, 3));
    const_i64(m, "s3", 1, D(-1));
    node(m, "Reshape", 2, I("x", "s1"), 1, I("a"));
    node(m, "Reshape", 2, I("a", "s2"), 1, I("b"));
    node(m, "Reshape", 2, I("b", "s3"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_nop_reshape)
{
    poprt_model *b = check_pass(b_nop_reshape, "eliminate_nop_reshape", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Reshape"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_nop_transpose(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, D(2, 3, 4));
    attr_ints(node(m, "Transpose", 1, I("x"), 1, I("a")), "perm", 3, D(0, 1, 2));
    attr_ints(node(m, "Transpose", 1, I("a"), 1, I("y")), "perm", 3, D(0, 2, 1));
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_nop_transpose)
{
    poprt_model *b = check_pass(b_nop_transpose, "eliminate_nop_transpose", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Transpose"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_unused_init(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    const_f(m, "w", 1, D(3), (const float[]){1, 2, 3});
    const_f(m, "unused", 1, D(3), (const float[]){4, 5, 6});
    node(m, "Add", 2, I("x", "w"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(eliminate_unused_initializer)
{
    poprt_model *b = check_pass(b_unused_init, "eliminate_unused_initializer", NULL, NULL);
    ck_assert_uint_eq(b->m->graph->initializers.len, 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_init_input(void)
{
    poprt__model *m = b_unused_init();
    m->ir_version = 3;
    poprt__tensor *w = poprt__map_get(&m->graph->by_name, "w");
    w->is_input = 1;
    poprt__vec_push(&m->graph->inputs, w);
    return m;
}

START_TEST(remove_initializer_from_input)
{
    poprt_model *b = check_pass(b_init_input, "remove_initializer_from_input", NULL, NULL);
    ck_assert_uint_eq(b->m->graph->inputs.len, 1);
    ck_assert_int_ge(b->m->ir_version, 4);
    poprt_model_free(b);
}
END_TEST

/* ---- fuse_* ---- */

static void bn_params(poprt__model *m, int64_t c)
{
    float g[8], bb[8], mean[8], var[8];
    fill(g, c, 0.5f, 1.5f, 11);
    fill(bb, c, -1, 1, 12);
    fill(mean, c, -1, 1, 13);
    fill(var, c, 0.2f, 2, 14);
    const_f(m, "gamma", 1, &c, g);
    const_f(m, "beta", 1, &c, bb);
    const_f(m, "mean", 1, &c, mean);
    const_f(m, "var", 1, &c, var);
}

static poprt__model *b_conv_bn(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, D(1, 2, 5, 5));
    float w[54], bias[3];
    fill(w, 54, -1, 1, 5);
    fill(bias, 3, -1, 1, 6);
    const_f(m, "w", 4, D(3, 2, 3, 3), w);
    const_f(m, "b", 1, D(3), bias);
    bn_params(m, 3);
    node(m, "Conv", 3, I("x", "w", "b"), 1, I("c"));
    attr_f(node(m, "BatchNormalization", 5, I("c", "gamma", "beta", "mean", "var"), 1, I("y")),
           "epsilon", 1e-3f);
    /* a second Conv without bias */
    node(m, "Conv", 2, I("x", "w"), 1, I("c2"));
    node(m, "BatchNormalization", 5, I("c2", "gamma", "beta", "mean", "var"), 1, I("y2"));
    tb_output(m, "y");
    tb_output(m, "y2");
    return m;
}

START_TEST(fuse_bn_into_conv)
{
    poprt_model *b = check_pass(b_conv_bn, "fuse_bn_into_conv", NULL, NULL);
    ck_assert_int_eq(count_op(b, "BatchNormalization"), 0);
    ck_assert_int_eq(count_op(b, "Conv"), 2);
    poprt_model_free(b);
}
END_TEST

/* ConvTranspose (group 1 with a bias, group 2 without) then BatchNormalization;
 * Conv then a per-channel Add ([1,M,1,1]), then a per-channel Mul ([M,1,1]),
 * which stays; ConvTranspose then a one-value Add; a Conv whose Add varies
 * along W (not per channel) stays. */
static poprt__model *b_conv_affine(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, D(1, 4, 3, 5));
    float w[4 * 3 * 4], w2[4 * 2 * 4], wc[3 * 4 * 9], bias[3], add[3], mul[3], wadd[7];
    fill(w, 48, -1, 1, 21);
    fill(w2, 32, -1, 1, 22);
    fill(wc, 108, -1, 1, 23);
    fill(bias, 3, -1, 1, 24);
    fill(add, 3, -1, 1, 25);
    fill(mul, 3, 0.5f, 2, 26);
    fill(wadd, 7, -1, 1, 27);
    const_f(m, "wt", 4, D(4, 3, 2, 2), w);   /* C 4 -> M 3, 2x2 / 2 */
    const_f(m, "wt2", 4, D(4, 2, 2, 2), w2); /* group 2: C 4 -> M 4 */
    const_f(m, "wc", 4, D(3, 4, 3, 3), wc);
    const_f(m, "bt", 1, D(3), bias);
    const_f(m, "add", 4, D(1, 3, 1, 1), add);
    const_f(m, "mul", 3, D(3, 1, 1), mul);
    const_f(m, "one", 0, D(1), (const float[]){0.25f});
    const_f(m, "wadd", 4, D(1, 1, 1, 7), wadd);
    bn_params(m, 4);
    poprt__node *t1 = node(m, "ConvTranspose", 3, I("x", "wt", "bt"), 1, I("t1"));
    attr_ints(t1, "strides", 2, D(2, 2));
    node(m, "Add", 2, I("t1", "one"), 1, I("y1"));
    poprt__node *t2 = node(m, "ConvTranspose", 2, I("x", "wt2"), 1, I("t2"));
    attr_ints(t2, "strides", 2, D(2, 2));
    attr_i(t2, "group", 2);
    node(m, "BatchNormalization", 5, I("t2", "gamma", "beta", "mean", "var"), 1, I("y2"));
    poprt__node *c = node(m, "Conv", 2, I("x", "wc"), 1, I("c"));
    attr_ints(c, "pads", 4, D(1, 1, 1, 1));
    node(m, "Add", 2, I("add", "c"), 1, I("ca"));
    node(m, "Mul", 2, I("ca", "mul"), 1, I("y3"));
    poprt__node *c4 = node(m, "Conv", 2, I("x", "wc"), 1, I("c4"));
    attr_ints(c4, "pads", 4, D(1, 2, 1, 2));
    node(m, "Add", 2, I("c4", "wadd"), 1, I("y4"));
    tb_output(m, "y1");
    tb_output(m, "y2");
    tb_output(m, "y3");
    tb_output(m, "y4");
    return m;
}

START_TEST(fuse_bn_into_conv_transpose_and_affine)
{
    poprt_model *b = check_pass(b_conv_affine, "fuse_bn_into_conv", NULL, NULL);
    ck_assert_int_eq(count_op(b, "BatchNormalization"), 0);
    ck_assert_int_eq(count_op(b, "Mul"), 1);
    ck_assert_int_eq(count_op(b, "Add"), 1); /* the one along W */
    ck_assert_int_eq(count_op(b, "ConvTranspose"), 2);
    ck_assert_int_eq(count_op(b, "Conv"), 2);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_gemm_bn(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(4, 5));
    float w[15], c[3];
    fill(w, 15, -1, 1, 5);
    fill(c, 3, -1, 1, 6);
    const_f(m, "w", 2, D(5, 3), w);
    const_f(m, "wt", 2, D(3, 5), w);
    const_f(m, "c", 1, D(3), c);
    bn_params(m, 3);
    node(m, "MatMul", 2, I("x", "w"), 1, I("mm"));
    node(m, "BatchNormalization", 5, I("mm", "gamma", "beta", "mean", "var"), 1, I("y"));
    poprt__node *g = node(m, "Gemm", 3, I("x", "wt", "c"), 1, I("gm"));
    attr_i(g, "transB", 1);
    attr_f(g, "alpha", 0.5f);
    attr_f(g, "beta", 2.0f);
    node(m, "BatchNormalization", 5, I("gm", "gamma", "beta", "mean", "var"), 1, I("y2"));
    tb_output(m, "y");
    tb_output(m, "y2");
    return m;
}

START_TEST(fuse_bn_into_gemm)
{
    poprt_model *b = check_pass(b_gemm_bn, "fuse_bn_into_gemm", NULL, NULL);
    ck_assert_int_eq(count_op(b, "BatchNormalization"), 0);
    ck_assert_int_eq(count_op(b, "MatMul"), 0);
    ck_assert_int_eq(count_op(b, "Gemm"), 2);
    poprt_model_free(b);
}
END_TEST

START_TEST(replace_bn_with_mul_add)
{
    poprt_model *b = check_pass(b_conv_bn, "replace_bn_with_mul_add", NULL, NULL);
    ck_assert_int_eq(count_op(b, "BatchNormalization"), 0);
    ck_assert_int_eq(count_op(b, "Mul"), 2);
    ck_assert_int_eq(count_op(b, "Add"), 2);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_onehot(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "idx", POPRT_DTYPE_INT32, 1, D(4));
    const_i64(m, "depth", 1, D(3));
    const_f(m, "vals", 1, D(2), (const float[]){-1, 2});
    attr_i(node(m, "Cast", 1, I("idx"), 1, I("i64")), "to", POPRT_DTYPE_INT64);
    node(m, "OneHot", 3, I("i64", "depth", "vals"), 1, I("oh"));
    attr_i(node(m, "Cast", 1, I("oh"), 1, I("y")), "to", POPRT_DTYPE_DOUBLE);
    tb_output(m, "y");
    return m;
}

START_TEST(fuse_cast_into_onehot)
{
    poprt_model *b = check_pass(b_onehot, "fuse_cast_into_onehot", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Cast"), 0);
    ck_assert_int_eq(count_op(b, "OneHot"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_casts(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    tb_input(m, "k", POPRT_DTYPE_INT32, 1, D(3));
    attr_i(node(m, "Cast", 1, I("x"), 1, I("d")), "to", POPRT_DTYPE_DOUBLE);
    attr_i(node(m, "Cast", 1, I("d"), 1, I("y")), "to", POPRT_DTYPE_FLOAT);
    attr_i(node(m, "Cast", 1, I("k"), 1, I("k64")), "to", POPRT_DTYPE_INT64);
    attr_i(node(m, "Cast", 1, I("k64"), 1, I("kf")), "to", POPRT_DTYPE_FLOAT);
    /* float -> int32 -> float truncates: not fused */
    attr_i(node(m, "Cast", 1, I("x"), 1, I("xi")), "to", POPRT_DTYPE_INT32);
    attr_i(node(m, "Cast", 1, I("xi"), 1, I("z")), "to", POPRT_DTYPE_FLOAT);
    tb_output(m, "y");
    tb_output(m, "kf");
    tb_output(m, "z");
    return m;
}

START_TEST(fuse_consecutive_cast)
{
    poprt_model *b = check_pass(b_casts, "fuse_consecutive_cast", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Cast"), 4); /* y: one (keeps its name), kf: one, z: two */
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_reshapes(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, D(2, 3, 4));
    const_i64(m, "s1", 2, D(6, 4));
    const_i64(m, "s2", 2, D(4, -1));
    node(m, "Reshape", 2, I("x", "s1"), 1, I("a"));
    node(m, "Reshape", 2, I("a", "s2"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(fuse_consecutive_reshape)
{
    poprt_model *b = check_pass(b_reshapes, "fuse_consecutive_reshape", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Reshape"), 1);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_squeezes(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 5, D(1, 2, 1, 3, 1));
    const_i64(m, "a1", 1, D(2));
    const_i64(m, "a2", 2, D(0, -1));
    node(m, "Squeeze", 2, I("x", "a1"), 1, I("s"));
    node(m, "Squeeze", 2, I("s", "a2"), 1, I("y"));
    tb_output(m, "y");
    return m;
}

START_TEST(fuse_consecutive_squeeze)
{
    poprt_model *b = check_pass(b_squeezes, "fuse_consecutive_squeeze", NULL, NULL);
    ck_assert_int_eq(count_op(b, "Squeeze"), 1);
    poprt_value_info info = {.size = sizeof info};
    poprt_model_output(b, 0, &info);
    ck_assert_int_eq(info.rank, 2);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_unsqueezes(void)
{
    poprt__model *m = tb_model(11); /* axes as attributes */
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    attr_ints(node(m, "Unsqueeze", 1, I("x"), 1, I("u")), "axes", 2, D(0, -1));
    attr_ints(node(m, "Unsqueeze", 1, I("u"), 1, I("y")), "axes", 2, D(2, 0));
    tb_output(m, "y");
    return m;
}

START_TEST(fuse_consecutive_unsqueeze)
{
    poprt_model *a;
    poprt_model *b = check_pass(b_unsqueezes, "fuse_consecutive_unsqueeze", NULL, &a);
    ck_assert_int_eq(count_op(b, "Unsqueeze"), 1);
    poprt_value_info ia = {.size = sizeof ia}, ib = {.size = sizeof ib};
    poprt_model_output(a, 0, &ia);
    poprt_model_output(b, 0, &ib);
    ck_assert_int_eq(ia.rank, 6);
    ck_assert_int_eq(ib.rank, 6);
    for (int d = 0; d < 6; d++)
        ck_assert_int_eq(ia.dims[d], ib.dims[d]);
    poprt_model_free(a);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_transposes(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, D(2, 3, 4));
    attr_ints(node(m, "Transpose", 1, I("x"), 1, I("a")), "perm", 3, D(1, 2, 0));
    attr_ints(node(m, "Transpose", 1, I("a"), 1, I("y")), "perm", 3, D(2, 0, 1)); /* cancels */
    attr_ints(node(m, "Transpose", 1, I("x"), 1, I("b")), "perm", 3, D(0, 2, 1));
    attr_ints(node(m, "Transpose", 1, I("b"), 1, I("z")), "perm", 3, D(1, 0, 2));
    tb_output(m, "y");
    tb_output(m, "z");
    return m;
}

START_TEST(fuse_consecutive_transpose)
{
    poprt_model *b = check_pass(b_transposes, "fuse_consecutive_transpose", NULL, NULL);
    /* y = x needs one node to keep its name; z: one Transpose */
    ck_assert_int_eq(count_op(b, "Transpose") + count_op(b, "Identity"), 2);
    poprt_model_free(b);
}
END_TEST

/* ---- the rest ---- */

static poprt__model *b_names(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    poprt__node *a = node(m, "Relu", 1, I("x"), 1, I("a"));
    poprt__node *b = node(m, "Neg", 1, I("a"), 1, I("y"));
    a->name = "same";
    b->name = "same";
    tb_output(m, "y");
    return m;
}

START_TEST(unique_name_for_nodes)
{
    poprt_model *b = check_pass(b_names, "unique_name_for_nodes", NULL, NULL);
    const poprt__graph *g = b->m->graph;
    ck_assert_str_ne(((poprt__node *)g->nodes.items[0])->name,
                     ((poprt__node *)g->nodes.items[1])->name);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_int64(void)
{
    poprt__model *m = tb_model(17);
    tb_input(m, "ids", POPRT_DTYPE_INT64, 2, D(2, 3));
    float e[12];
    fill(e, 12, -1, 1, 3);
    const_f(m, "emb", 2, D(3, 4), e);
    const_i64(m, "extra", 2, D(2, 1));
    const_i64(m, "newshape", 2, D(8, 6));
    node(m, "Concat", 2, I("ids", "ids"), 1, I("cat"));
    attr_i(m->graph->nodes.items[0], "axis", 0);
    node(m, "Gather", 2, I("emb", "cat"), 1, I("g"));
    node(m, "Shape", 1, I("g"), 1, I("shp")); /* shape math stays int64 */
    node(m, "Reshape", 2, I("g", "newshape"), 1, I("y"));
    node(m, "Identity", 1, I("shp"), 1, I("shape_out"));
    tb_output(m, "y");
    tb_output(m, "shape_out");
    tb_output(m, "cat");
    return m;
}

START_TEST(int64_to_int32)
{
    poprt_model *b = check_pass(b_int64, "int64_to_int32", "io=0", NULL);
    poprt_value_info info = {.size = sizeof info};
    poprt_model_input(b, 0, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_INT64);
    poprt_model_output(b, 2, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_INT64);
    const poprt__tensor *cat = NULL;
    for (size_t i = 0; i < b->m->graph->nodes.len; i++) {
        const poprt__node *n = b->m->graph->nodes.items[i];
        if (!strcmp(n->op_type, "Concat"))
            cat = n->outputs[0];
    }
    ck_assert_ptr_nonnull(cat);
    ck_assert_int_eq(cat->type.elem, POPRT_DTYPE_INT32);
    ck_assert_int_eq(count_op(b, "Cast"), 2);
    poprt_model_free(b);
    /* io=1: the input and the ids output become int32 */
    b = check_pass(b_int64, "int64_to_int32", NULL, NULL);
    poprt_model_input(b, 0, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_INT32);
    poprt_model_output(b, 1, &info);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_INT64); /* from Shape */
    ck_assert_int_eq(count_op(b, "Cast"), 0);
    poprt_model_free(b);
}
END_TEST

static poprt__model *b_symbolic(void)
{
    poprt__model *m = tb_model(17);
    poprt__tensor *x = tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, D(2, 3));
    x->type.dims[0].value = -1;
    x->type.dims[0].param = "N";
    poprt__tensor *z = tb_input(m, "z", POPRT_DTYPE_FLOAT, 1, D(3));
    z->type.dims[0].value = -1;
    z->type.dims[0].param = "M";
    node(m, "Relu", 1, I("x"), 1, I("y"));
    node(m, "Neg", 1, I("z"), 1, I("w"));
    tb_output(m, "y");
    tb_output(m, "w");
    poprt__tensor *y = poprt__graph_tensor(m->graph, "y");
    poprt__type_set_tensor(&m->arena, &y->type, POPRT_DTYPE_FLOAT, 2, D(-1, 3));
    y->type.dims[0].param = "N";
    return m;
}

START_TEST(const_batch_size)
{
    poprt_model *b = load(b_symbolic());
    run_pass(b, "const_batch_size", "const_batch_size=4", 1);
    poprt_value_info info = {.size = sizeof info};
    poprt_model_input(b, 0, &info);
    ck_assert_int_eq(info.dims[0], 4);
    poprt_model_output(b, 0, &info);
    ck_assert_int_eq(info.dims[0], 4);
    ck_assert_ptr_null(info.dim_params ? info.dim_params[0] : NULL);
    poprt_model_output(b, 1, &info);
    ck_assert_int_eq(info.dims[0], 4);
    poprt_model *a = load(b_symbolic());
    shape_from = b; /* feed the fixed shape to both */
    compare(a, b);
    shape_from = NULL;
    poprt_model_free(a);
    poprt_model_free(b);
    b = load(b_symbolic());
    poprt_pass_manager *pm;
    poprt_pass_manager_create(&pm);
    poprt_pass_manager_add(pm, "const_batch_size", "const_batch_size=0");
    ck_assert_int_eq(poprt_pass_manager_run(pm, b), POPRT_STATUS_PASS_FAILED);
    poprt_pass_manager_free(pm);
    poprt_model_free(b);
}
END_TEST

START_TEST(const_input_shape)
{
    poprt_model *b = load(b_symbolic());
    run_pass(b, "const_input_shape", "x=[5,3],z=7", 1);
    poprt_value_info info = {.size = sizeof info};
    poprt_model_output(b, 0, &info);
    ck_assert_int_eq(info.dims[0], 5);
    poprt_model_output(b, 1, &info);
    ck_assert_int_eq(info.dims[0], 7);
    poprt_model *a = load(b_symbolic());
    shape_from = b;
    compare(a, b);
    shape_from = NULL;
    poprt_model_free(a);
    poprt_model_free(b);
    /* a known dim that disagrees, and an unknown input, fail cleanly */
    b = load(b_symbolic());
    poprt_pass_manager *pm;
    poprt_pass_manager_create(&pm);
    poprt_pass_manager_add(pm, "const_input_shape", "x=[5,4]");
    ck_assert_int_eq(poprt_pass_manager_run(pm, b), POPRT_STATUS_PASS_FAILED);
    poprt_pass_manager_free(pm);
    poprt_pass_manager_create(&pm);
    poprt_pass_manager_add(pm, "const_input_shape", "nope=[1]");
    ck_assert_int_eq(poprt_pass_manager_run(pm, b), POPRT_STATUS_PASS_FAILED);
    poprt_pass_manager_free(pm);
    poprt_model_free(b);
}
END_TEST

/* Passes that do not apply leave the model alone (changed = 0). */
START_TEST(no_op_when_not_applicable)
{
    static const char *const passes[] = {
        "constant_folding", "extract_constant_to_initializer", "eliminate_deadend",
        "eliminate_duplicate_initializer", "eliminate_identity", "eliminate_nop_arithmetic",
        "eliminate_nop_cast", "eliminate_nop_expand", "eliminate_nop_flatten", "eliminate_nop_if",
        "eliminate_nop_pad", "eliminate_nop_reshape", "eliminate_nop_transpose",
        "eliminate_unused_initializer", "remove_duplicated_initializer",
        "remove_initializer_from_input", "fuse_bn_into_conv", "fuse_bn_into_gemm",
        "fuse_cast_into_onehot", "fuse_consecutive_cast", "fuse_consecutive_reshape",
        "fuse_consecutive_squeeze", "fuse_consecutive_transpose", "fuse_consecutive_unsqueeze",
        "replace_bn_with_mul_add", "unique_name_for_nodes", "int64_to_int32", "const_batch_size",
        "const_input_shape", NULL};
    for (const char *const *p = passes; *p; p++) {
        poprt_model *m = tb_add_relu(0);
        run_pass(m, *p, NULL, 0);
        ck_assert_uint_eq(poprt_model_num_nodes(m), 2);
        poprt_model_free(m);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("passes_core");
    TCase *tc = tcase_create("passes_core");
    tcase_add_test(tc, constant_folding);
    tcase_add_test(tc, extract_constant_to_initializer);
    tcase_add_test(tc, eliminate_deadend);
    tcase_add_test(tc, eliminate_duplicate_initializer);
    tcase_add_test(tc, eliminate_identity);
    tcase_add_test(tc, eliminate_nop_arithmetic);
    tcase_add_test(tc, eliminate_nop_cast);
    tcase_add_test(tc, eliminate_nop_expand);
    tcase_add_test(tc, eliminate_nop_flatten);
    tcase_add_test(tc, eliminate_nop_if);
    tcase_add_test(tc, eliminate_nop_pad);
    tcase_add_test(tc, eliminate_nop_reshape);
    tcase_add_test(tc, eliminate_nop_transpose);
    tcase_add_test(tc, eliminate_unused_initializer);
    tcase_add_test(tc, remove_initializer_from_input);
    tcase_add_test(tc, fuse_bn_into_conv);
    tcase_add_test(tc, fuse_bn_into_conv_transpose_and_affine);
    tcase_add_test(tc, fuse_bn_into_gemm);
    tcase_add_test(tc, replace_bn_with_mul_add);
    tcase_add_test(tc, fuse_cast_into_onehot);
    tcase_add_test(tc, fuse_consecutive_cast);
    tcase_add_test(tc, fuse_consecutive_reshape);
    tcase_add_test(tc, fuse_consecutive_squeeze);
    tcase_add_test(tc, fuse_consecutive_unsqueeze);
    tcase_add_test(tc, fuse_consecutive_transpose);
    tcase_add_test(tc, unique_name_for_nodes);
    tcase_add_test(tc, int64_to_int32);
    tcase_add_test(tc, const_batch_size);
    tcase_add_test(tc, const_input_shape);
    tcase_add_test(tc, no_op_when_not_applicable);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
