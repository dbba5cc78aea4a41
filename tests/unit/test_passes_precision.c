/* Unit tests: the precision group of passes (float_to_half, float_to_mixed,
 * float_to_fp8, layer_precision_compare, check_with_fake_data, final_check,
 * model_overview, add_checkpoints, manual_sharding, float_to_int8). Every test builds its
 * graph through the IR, checks the rewrite, and runs the model before and
 * after through the public API on the same inputs. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "builder.h"
#include "passes/rewrite.h"
#include "kernels/x86/sgemm.h"

static char tmpdir[256];

static void logcb(poprt_log_level level, const char *msg, void *user)
{
    (void)level;
    (void)user;
    fprintf(stderr, "%s\n", msg);
}

static void make_tmpdir(void)
{
    if (tmpdir[0])
        return;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/poprt_prec_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static const char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int k;
    make_tmpdir();
    char *p = buf[k++ % 8];
    snprintf(p, 512, "%s/%s", tmpdir, name);
    return p;
}

static uint32_t rng = 7;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)rng / 4294967296.0f * 2.0f - 1.0f;
}

/* Runs model on one float input x (dims) and returns output `out` as a heap copy. */
/* (float16 nodes run as float16 nodes, session option float16_compute =
 * float16: what the converted model computes on a device with float16
 * arithmetic, overflow included; the default computes them in float32) */
static float *run_kv(const poprt_model *model, const char *key, const char *val, const char *in,
                     const int64_t *dims, int rank, const float *x, const char *out,
                     int64_t *n_out);

static float *run1(const poprt_model *model, const char *in, const int64_t *dims, int rank,
                   const float *x, const char *out, int64_t *n_out)
{
    return run_kv(model, "float16_compute", "float16", in, dims, rank, x, out, n_out);
}

/* The same with session option key = val. */
static float *run_kv(const poprt_model *model, const char *key, const char *val, const char *in,
                     const int64_t *dims, int rank, const float *x, const char *out,
                     int64_t *n_out)
{
    poprt_session *s;
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, key, val), POPRT_OK);
    ck_assert_msg(poprt_session_create(model, o, &s) == POPRT_OK, "%s", poprt_last_error());
    poprt_options_free(o);
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    ck_assert_int_eq(poprt_stepio_set_input(io, in, POPRT_DTYPE_FLOAT, dims, rank, x,
                                            (size_t)n * sizeof(float)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output_alloc(io, out), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_dtype dt;
    int r;
    const int64_t *d;
    const void *data;
    size_t nb;
    ck_assert_int_eq(poprt_stepio_output(io, out, &dt, &d, &r, &data, &nb), POPRT_OK);
    ck_assert_int_eq(dt, POPRT_DTYPE_FLOAT);
    float *y = malloc(nb ? nb : 1);
    memcpy(y, data, nb);
    *n_out = (int64_t)(nb / sizeof(float));
    poprt_stepio_free(io);
    poprt_session_free(s);
    return y;
}

static double max_rel(const float *a, const float *b, int64_t n)
{
    double mx = 0, e = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(b[i]))
            return INFINITY;
        mx = fmax(mx, fabs(a[i]));
        e = fmax(e, fabs((double)a[i] - b[i]));
    }
    return e / (mx > 0 ? mx : 1);
}

static double cosine(const float *a, const float *b, int64_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

static poprt_status run_pass(poprt_model *m, const char *name, const char *args)
{
    poprt_pass_manager *pm;
    ck_assert_int_eq(poprt_pass_manager_create(&pm), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_add(pm, name, args), POPRT_OK);
    poprt_status st = poprt_pass_manager_run(pm, m);
    poprt_pass_manager_free(pm);
    return st;
}

static int count_op(const poprt_model *m, const char *op)
{
    int c = 0;
    const poprt__graph *g = m->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++)
        c += strcmp(((const poprt__node *)g->nodes.items[i])->op_type, op) == 0;
    return c;
}

static const poprt__node *node_named(const poprt_model *m, const char *name)
{
    const poprt__graph *g = m->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (strcmp(((const poprt__node *)g->nodes.items[i])->name, name) == 0)
            return g->nodes.items[i];
    return NULL;
}

static int count_const_dtype(const poprt_model *m, int32_t dt)
{
    int c = 0;
    const poprt__graph *g = m->m->graph;
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        c += t->raw && t->type.elem == dt && (t->is_initializer || !t->producer);
    }
    return c;
}

/* x[2,8] -> MatMul W[8,16] -> Add b -> Mul k -> Softmax -> y. With `big`,
 * k = 3e4 so that the product overflows float16. */
static poprt_model *mlp(int big, const char *save_as)
{
    rng = 7; /* the same weights on every call */
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {2, 8}, wd[2] = {8, 16}, bd[1] = {16}, kd[1] = {1};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    float w[128], b[16], k[1] = {big ? 3e4f : 0.5f};
    for (int i = 0; i < 128; i++)
        w[i] = frand();
    for (int i = 0; i < 16; i++)
        b[i] = frand();
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_const(m, "b", POPRT_DTYPE_FLOAT, 1, bd, b);
    tb_const(m, "k", POPRT_DTYPE_FLOAT, 1, kd, k);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"mm"})->name = "mm_node";
    tb_node(m, "Add", 2, (const char *[]){"mm", "b"}, 1, (const char *[]){"s"})->name = "add_node";
    tb_node(m, "Mul", 2, (const char *[]){"s", "k"}, 1, (const char *[]){"z"})->name = "mul_node";
    tb_node(m, "Relu", 1, (const char *[]){"z"}, 1, (const char *[]){"r"})->name = "relu_node";
    tb_node(m, "Softmax", 1, (const char *[]){"r"}, 1, (const char *[]){"y"})->name = "softmax_node";
    tb_output(m, "y");
    tb_output(m, "r");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    if (save_as) {
        ck_assert_int_eq(poprt_model_save(model, save_as), POPRT_OK);
        poprt_model_free(model);
        ck_assert_int_eq(poprt_model_load(save_as, &model), POPRT_OK);
    }
    return model;
}

START_TEST(float_to_half_converts_and_agrees)
{
    poprt_model *a = mlp(0, NULL), *b;
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    ck_assert_msg(run_pass(b, "float_to_half", NULL) == POPRT_OK, "%s", poprt_last_error());
    /* weights stored as float16, interface kept float32 */
    ck_assert_int_ge(count_const_dtype(b, POPRT_DTYPE_FLOAT16), 3);
    ck_assert_int_eq(count_const_dtype(b, POPRT_DTYPE_FLOAT), 0);
    ck_assert_int_ge(count_op(b, "Cast"), 2);
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_input(b, 0, &info), POPRT_OK);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(poprt_model_output(b, 0, &info), POPRT_OK);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_FLOAT);
    /* Softmax stays float32; MatMul reads float16 */
    const poprt__node *sm = node_named(b, "softmax_node"), *mm = node_named(b, "mm_node");
    ck_assert_int_eq(sm->inputs[0]->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(mm->inputs[1]->type.elem, POPRT_DTYPE_FLOAT16);
    ck_assert_int_eq(mm->outputs[0]->type.elem, POPRT_DTYPE_FLOAT16);
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = frand();
    int64_t xd[2] = {2, 8}, n1, n2;
    for (int o = 0; o < 2; o++) {
        const char *out = o ? "r" : "y";
        float *y1 = run1(a, "x", xd, 2, x, out, &n1), *y2 = run1(b, "x", xd, 2, x, out, &n2);
        ck_assert_int_eq(n1, n2);
        ck_assert_double_lt(max_rel(y1, y2, n1), 1e-2);
        free(y1);
        free(y2);
    }
    /* skip_op_types keeps MatMul in float32 */
    poprt_model *c;
    ck_assert_int_eq(poprt_model_clone(a, &c), POPRT_OK);
    ck_assert_int_eq(run_pass(c, "float_to_half", "skip_op_types=[MatMul]"), POPRT_OK);
    mm = node_named(c, "mm_node");
    ck_assert_int_eq(mm->inputs[1]->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(mm->outputs[0]->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(run_pass(c, "float_to_half", "bogus=1"), POPRT_STATUS_PASS_FAILED);
    poprt_model_free(a);
    poprt_model_free(b);
    poprt_model_free(c);
}
END_TEST

/* The range rule: on random inputs |x @ W + b| * 3e4 exceeds max_abs (4096),
 * so the Mul and the nodes reading its result stay float32 and the model
 * agrees with float32 (1e-2 relative, float16 rounding of the MatMul
 * and Add) on inputs 4x larger, where plain float16 overflows. */
START_TEST(float_to_half_keeps_overflow_range)
{
    poprt_model *a = mlp(1, NULL), *h, *plain;
    ck_assert_int_eq(poprt_model_clone(a, &h), POPRT_OK);
    ck_assert_int_eq(poprt_model_clone(a, &plain), POPRT_OK);
    ck_assert_msg(run_pass(h, "float_to_half", NULL) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(run_pass(plain, "float_to_half", "max_abs=0"), POPRT_OK);
    ck_assert_int_eq(node_named(h, "mul_node")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(node_named(h, "relu_node")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(node_named(h, "mm_node")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT16);
    ck_assert_int_eq(node_named(plain, "mul_node")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT16);
    float x[16];
    rng = 21;
    for (int i = 0; i < 16; i++)
        x[i] = 4 * frand();
    int64_t xd[2] = {2, 8}, n1, n2, n3;
    float *y1 = run1(a, "x", xd, 2, x, "r", &n1), *y2 = run1(h, "x", xd, 2, x, "r", &n2),
          *y3 = run1(plain, "x", xd, 2, x, "r", &n3);
    ck_assert_int_eq(n1, n2);
    ck_assert_double_lt(max_rel(y1, y2, n1), 1e-2);
    ck_assert(!(max_rel(y1, y3, n1) < 1e-2));
    free(y1);
    free(y2);
    free(y3);
    ck_assert_int_eq(run_pass(a, "float_to_half", "max_abs=x"), POPRT_STATUS_PASS_FAILED);
    poprt_model_free(a);
    poprt_model_free(h);
    poprt_model_free(plain);
}
END_TEST

/* A subgraph of owner (attribute attr) whose parent is owner's graph. */
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

static poprt__node *g_node(poprt__graph *g, const char *op, int n_in, const char **ins,
                           const char *out, const char *name)
{
    poprt__node *n = poprt__graph_add_node(g, op, "", name, n_in, 1);
    ck_assert_ptr_nonnull(n);
    for (int i = 0; i < n_in; i++) {
        poprt__tensor *t = poprt__graph_find(g, ins[i]);
        poprt__node_set_input(n, i, t ? t : poprt__graph_tensor(g, ins[i]));
    }
    n->outputs[0] = poprt__graph_tensor(g, out);
    return n;
}

static void g_output(poprt__graph *g, const char *name)
{
    poprt__tensor *t = poprt__graph_tensor(g, name);
    t->is_output = 1;
    ck_assert_int_eq(poprt__graph_add_output(g, t), POPRT_OK);
}

/* y = If(c): then Relu(x @ W + b); else Log(|x @ W2| * 2^20 + 1), all
 * weights in the main graph (outer-scope reads). */
static poprt_model *if_model(void)
{
    rng = 5;
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {2, 8}, wd[2] = {8, 16}, bd[1] = {16};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_input(m, "c", POPRT_DTYPE_BOOL, 0, NULL);
    float w[128], w2[128], b[16], k = 1048576.0f, one = 1.0f;
    for (int i = 0; i < 128; i++) {
        w[i] = frand();
        w2[i] = frand();
    }
    for (int i = 0; i < 16; i++)
        b[i] = frand();
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_const(m, "W2", POPRT_DTYPE_FLOAT, 2, wd, w2);
    tb_const(m, "b", POPRT_DTYPE_FLOAT, 1, bd, b);
    tb_const(m, "k", POPRT_DTYPE_FLOAT, 0, NULL, &k);
    tb_const(m, "one", POPRT_DTYPE_FLOAT, 0, NULL, &one);
    poprt__node *n = tb_node(m, "If", 1, (const char *[]){"c"}, 1, (const char *[]){"y"});
    poprt__graph *t = sub_graph(m, n, "then_branch"), *e = sub_graph(m, n, "else_branch");
    g_node(t, "MatMul", 2, (const char *[]){"x", "W"}, "t_mm", "then_mm");
    g_node(t, "Add", 2, (const char *[]){"t_mm", "b"}, "t_add", "then_add");
    g_node(t, "Relu", 1, (const char *[]){"t_add"}, "t_y", "then_relu");
    g_output(t, "t_y");
    g_node(e, "MatMul", 2, (const char *[]){"x", "W2"}, "e_mm", "else_mm");
    g_node(e, "Abs", 1, (const char *[]){"e_mm"}, "e_abs", "else_abs");
    g_node(e, "Mul", 2, (const char *[]){"e_abs", "k"}, "e_mul", "else_mul");
    g_node(e, "Add", 2, (const char *[]){"e_mul", "one"}, "e_add", "else_add");
    g_node(e, "Log", 1, (const char *[]){"e_add"}, "e_y", "else_log");
    g_output(e, "e_y");
    tb_output(m, "y");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    return model;
}

static float *run_if(const poprt_model *model, const float *x, int cond, int64_t *n_out)
{
    poprt_session *s;
    ck_assert_msg(poprt_session_create(model, NULL, &s) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    int64_t xd[2] = {2, 8};
    uint8_t c = (uint8_t)cond;
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 2, x, 16 * sizeof(float)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "c", POPRT_DTYPE_BOOL, NULL, 0, &c, 1), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output_alloc(io, "y"), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_dtype dt;
    int r;
    const int64_t *d;
    const void *data;
    size_t nb;
    ck_assert_int_eq(poprt_stepio_output(io, "y", &dt, &d, &r, &data, &nb), POPRT_OK);
    ck_assert_int_eq(dt, POPRT_DTYPE_FLOAT);
    float *y = malloc(nb ? nb : 1);
    memcpy(y, data, nb);
    *n_out = (int64_t)(nb / sizeof(float));
    poprt_stepio_free(io);
    poprt_session_free(s);
    return y;
}

static const poprt__node *sub_node(const poprt_model *m, int branch, const char *name)
{
    const poprt__node *n = m->m->graph->nodes.items[0];
    int k = 0;
    while (strcmp(n->op_type, "If") != 0)
        n = m->m->graph->nodes.items[++k];
    for (int a = 0; a < n->n_attrs; a++) {
        if (strcmp(n->attrs[a].name, branch ? "then_branch" : "else_branch") != 0)
            continue;
        const poprt__graph *g = n->attrs[a].g;
        for (size_t i = 0; i < g->nodes.len; i++)
            if (strcmp(((const poprt__node *)g->nodes.items[i])->name, name) == 0)
                return g->nodes.items[i];
    }
    return NULL;
}

/* If bodies convert too: their MatMuls read float16 weights made inside
 * the body from the outer float32 initializers, the If keeps its float32
 * output; the else branch's magnitude * 2^20 + 1 stays float32 (static
 * overflow rule); both branches agree with float32 within 1e-2 relative. */
START_TEST(float_to_half_converts_if_bodies)
{
    poprt_model *a = if_model(), *h;
    ck_assert_int_eq(poprt_model_clone(a, &h), POPRT_OK);
    ck_assert_msg(run_pass(h, "float_to_half", NULL) == POPRT_OK, "%s", poprt_last_error());
    const poprt__node *tm = sub_node(h, 1, "then_mm"), *tr = sub_node(h, 1, "then_relu");
    ck_assert_ptr_nonnull(tm);
    ck_assert_int_eq(tm->inputs[1]->type.elem, POPRT_DTYPE_FLOAT16);
    ck_assert_int_eq(tr->outputs[0]->type.elem, POPRT_DTYPE_FLOAT16);
    ck_assert_int_eq(sub_node(h, 0, "else_mm")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT16);
    ck_assert_int_eq(sub_node(h, 0, "else_mul")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(sub_node(h, 0, "else_add")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT);
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_output(h, 0, &info), POPRT_OK);
    ck_assert_int_eq(info.dtype, POPRT_DTYPE_FLOAT);
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = frand();
    for (int c = 0; c < 2; c++) {
        int64_t n1, n2;
        float *y1 = run_if(a, x, c, &n1), *y2 = run_if(h, x, c, &n2);
        ck_assert_int_eq(n1, 32);
        ck_assert_int_eq(n1, n2);
        ck_assert_msg(max_rel(y1, y2, n1) < 1e-2, "branch %d: %g", c, max_rel(y1, y2, n1));
        free(y1);
        free(y2);
    }
    /* a saved and reloaded conversion runs the same */
    const char *path = tmp_path("if16.onnx");
    ck_assert_int_eq(poprt_model_save(h, path), POPRT_OK);
    poprt_model *r;
    ck_assert_msg(poprt_model_load(path, &r) == POPRT_OK, "%s", poprt_last_error());
    int64_t n1, n2;
    float *y1 = run_if(h, x, 1, &n1), *y2 = run_if(r, x, 1, &n2);
    ck_assert_int_eq(n1, n2);
    ck_assert_double_lt(max_rel(y1, y2, n1), 1e-7);
    free(y1);
    free(y2);
    poprt_model_free(a);
    poprt_model_free(h);
    poprt_model_free(r);
}
END_TEST

/* float_to_fp8 stores the weights read inside If bodies in float8 too, with
 * the DequantizeLinear inside the body (weights only: body activations have
 * no calibration); cosine >= 0.999 against float32 on both branches. */
START_TEST(float_to_fp8_converts_if_bodies)
{
    poprt_model *a = if_model(), *q;
    ck_assert_int_eq(poprt_model_clone(a, &q), POPRT_OK);
    ck_assert_msg(run_pass(q, "float_to_fp8", NULL) == POPRT_OK, "%s", poprt_last_error());
    const poprt__node *tm = sub_node(q, 1, "then_mm"), *em = sub_node(q, 0, "else_mm");
    ck_assert_ptr_nonnull(tm->inputs[1]->producer);
    ck_assert_str_eq(tm->inputs[1]->producer->op_type, "DequantizeLinear");
    ck_assert_ptr_eq(tm->inputs[1]->producer->graph, tm->graph);
    ck_assert_int_eq(tm->inputs[1]->producer->inputs[0]->type.elem, POPRT_DTYPE_FLOAT8E4M3FN);
    ck_assert_str_eq(em->inputs[1]->producer->op_type, "DequantizeLinear");
    ck_assert_ptr_null(tm->inputs[0]->producer); /* the activation is not quantized */
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = frand();
    for (int c = 0; c < 2; c++) {
        int64_t n1, n2;
        float *y1 = run_if(a, x, c, &n1), *y2 = run_if(q, x, c, &n2);
        ck_assert_int_eq(n1, n2);
        ck_assert_msg(cosine(y1, y2, n1) >= 0.999, "branch %d: %g", c, cosine(y1, y2, n1));
        free(y1);
        free(y2);
    }
    poprt_model_free(a);
    poprt_model_free(q);
}
END_TEST

START_TEST(float_to_mixed_keeps_overflowing_nodes)
{
    poprt_model *a = mlp(1, NULL), *h, *mx;
    ck_assert_int_eq(poprt_model_clone(a, &h), POPRT_OK);
    ck_assert_int_eq(poprt_model_clone(a, &mx), POPRT_OK);
    ck_assert_int_eq(run_pass(h, "float_to_half", "max_abs=0"), POPRT_OK); /* no range rule */
    if (getenv("PREC_LOG"))
        poprt_set_log_callback(logcb, NULL, POPRT_LOG_DEBUG);
    ck_assert_msg(run_pass(mx, "float_to_mixed", NULL) == POPRT_OK, "%s", poprt_last_error());
    /* the overflowing Mul (and what reads its result) stays float32 */
    ck_assert_int_eq(node_named(mx, "mul_node")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(node_named(mx, "mm_node")->outputs[0]->type.elem, POPRT_DTYPE_FLOAT16);
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = 4 * frand(); /* |x @ W| beyond 65504 / 3e4 somewhere */
    int64_t xd[2] = {2, 8}, n1, n2, n3;
    float *y1 = run1(a, "x", xd, 2, x, "r", &n1), *y2 = run1(h, "x", xd, 2, x, "r", &n2),
          *y3 = run1(mx, "x", xd, 2, x, "r", &n3);
    ck_assert(!(max_rel(y1, y2, n1) < 1e-2)); /* plain float16 overflows */
    ck_assert_double_lt(max_rel(y1, y3, n1), 1e-2);
    free(y1);
    free(y2);
    free(y3);
    poprt_model_free(a);
    poprt_model_free(h);
    poprt_model_free(mx);
}
END_TEST

/* x[1,3,10,10] -> Conv W[8,3,3,3] -> Relu -> Flatten -> Gemm(transB) W2[10,512] -> y */
static poprt_model *cnn(const char *save_as)
{
    rng = 11;
    poprt__model *m = tb_model(19);
    int64_t xd[4] = {1, 3, 10, 10}, wd[4] = {8, 3, 3, 3}, bd[1] = {8}, w2d[2] = {10, 800}, b2d[1] = {10};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    static float w[216], b[8], w2[8000], b2[10];
    for (int i = 0; i < 216; i++)
        w[i] = frand() * 0.5f;
    for (int i = 0; i < 8; i++)
        b[i] = frand() * 0.1f;
    for (int i = 0; i < 8000; i++)
        w2[i] = frand() * 0.1f;
    for (int i = 0; i < 10; i++)
        b2[i] = frand();
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 4, wd, w);
    tb_const(m, "B", POPRT_DTYPE_FLOAT, 1, bd, b);
    tb_const(m, "W2", POPRT_DTYPE_FLOAT, 2, w2d, w2);
    tb_const(m, "B2", POPRT_DTYPE_FLOAT, 1, b2d, b2);
    poprt__node *c = tb_node(m, "Conv", 3, (const char *[]){"x", "W", "B"}, 1, (const char *[]){"c"});
    c->name = "conv_node";
    poprt__attr *p = poprt__node_add_attr(c, "pads", POPRT__ATTR_INTS);
    p->n = 4;
    p->ints = poprt__arena_array(&m->arena, 4, sizeof(int64_t));
    for (int i = 0; i < 4; i++)
        p->ints[i] = 1;
    tb_node(m, "Relu", 1, (const char *[]){"c"}, 1, (const char *[]){"r"});
    tb_node(m, "Flatten", 1, (const char *[]){"r"}, 1, (const char *[]){"f"});
    poprt__node *g = tb_node(m, "Gemm", 3, (const char *[]){"f", "W2", "B2"}, 1, (const char *[]){"y"});
    g->name = "gemm_node";
    poprt__node_add_attr(g, "transB", POPRT__ATTR_INT)->i = 1;
    tb_output(m, "y");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    if (save_as) {
        ck_assert_int_eq(poprt_model_save(model, save_as), POPRT_OK);
        poprt_model_free(model);
        ck_assert_int_eq(poprt_model_load(save_as, &model), POPRT_OK);
    }
    return model;
}

/* A serialized TensorProto (dims, FLOAT, raw data, name) written to path. */
static void write_tensor_pb(const char *path, const char *name, const int64_t *dims, int rank,
                            const float *v, int64_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < rank; i++) {
        fputc(0x08, f); /* field 1 varint */
        uint64_t d = (uint64_t)dims[i];
        do {
            fputc((int)((d & 0x7f) | (d > 0x7f ? 0x80 : 0)), f);
            d >>= 7;
        } while (d);
    }
    fputc(0x10, f); /* field 2: data_type */
    fputc(1, f);
    fputc(0x42, f); /* field 8: name */
    fputc((int)strlen(name), f);
    fputs(name, f);
    fputc(0x4a, f); /* field 9: raw_data */
    uint64_t len = (uint64_t)n * 4;
    do {
        fputc((int)((len & 0x7f) | (len > 0x7f ? 0x80 : 0)), f);
        len >>= 7;
    } while (len);
    fwrite(v, 4, (size_t)n, f);
    fclose(f);
}

static const char *make_calibration(int samples)
{
    const char *dir = tmp_path("calib");
    static char d2[600];
    snprintf(d2, sizeof d2, "%s", dir);
    mkdir(d2, 0755);
    int64_t xd[4] = {1, 3, 10, 10};
    float x[300];
    for (int s = 0; s < samples; s++) {
        char sd[700], f[800];
        snprintf(sd, sizeof sd, "%s/sample_%d", d2, s);
        mkdir(sd, 0755);
        for (int i = 0; i < 300; i++)
            x[i] = frand();
        snprintf(f, sizeof f, "%s/input_0.pb", sd);
        write_tensor_pb(f, "x", xd, 4, x, 300);
    }
    return d2;
}

static void check_fp8(const char *args, int want_q, int32_t wdt, double min_cos)
{
    poprt_model *a = cnn(NULL), *b;
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    ck_assert_msg(run_pass(b, "float_to_fp8", args) == POPRT_OK, "%s: %s", args, poprt_last_error());
    ck_assert_int_eq(count_op(b, "DequantizeLinear"), 2 + want_q);
    ck_assert_int_eq(count_op(b, "QuantizeLinear"), want_q);
    ck_assert_int_eq(count_const_dtype(b, wdt), 2 + want_q); /* weights (+ zero points) */
    float x[300];
    for (int i = 0; i < 300; i++)
        x[i] = frand();
    int64_t xd[4] = {1, 3, 10, 10}, n1, n2;
    float *y1 = run1(a, "x", xd, 4, x, "y", &n1), *y2 = run1(b, "x", xd, 4, x, "y", &n2);
    ck_assert_int_eq(n1, n2);
    double c = cosine(y1, y2, n1);
    ck_assert_msg(c >= min_cos, "%s: cosine %g", args, c);
    free(y1);
    free(y2);
    poprt_model_free(a);
    poprt_model_free(b);
}

/* A Conv whose weight is computed (Reshape of an initializer, as
 * ConstantOfShape in light_resnet50): float_to_fp8 folds it first and
 * quantizes it; the output keeps cosine >= 0.999 (fp8 weights only). */
START_TEST(float_to_fp8_folds_computed_weights)
{
    rng = 13;
    poprt__model *m = tb_model(13);
    int64_t xd[4] = {1, 3, 10, 10}, fd[1] = {216}, sd[1] = {4}, shape[4] = {8, 3, 3, 3};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    float w[216];
    for (int i = 0; i < 216; i++)
        w[i] = frand() * 0.5f;
    tb_const(m, "Wflat", POPRT_DTYPE_FLOAT, 1, fd, w);
    tb_const(m, "Wshape", POPRT_DTYPE_INT64, 1, sd, shape);
    tb_node(m, "Reshape", 2, (const char *[]){"Wflat", "Wshape"}, 1, (const char *[]){"W"});
    tb_node(m, "Conv", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y"})->name = "conv";
    tb_output(m, "y");
    poprt_model *a, *b;
    ck_assert_int_eq(tb_load(m, &a), POPRT_OK);
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    ck_assert_msg(run_pass(b, "float_to_fp8", "mode=fp8_weight") == POPRT_OK, "%s",
                  poprt_last_error());
    ck_assert_int_eq(count_op(b, "Reshape"), 0);
    ck_assert_int_eq(count_op(b, "DequantizeLinear"), 1);
    ck_assert_int_eq(count_const_dtype(b, POPRT_DTYPE_FLOAT8E4M3FN), 1);
    float x[300];
    for (int i = 0; i < 300; i++)
        x[i] = frand();
    int64_t n1, n2;
    float *y1 = run1(a, "x", xd, 4, x, "y", &n1), *y2 = run1(b, "x", xd, 4, x, "y", &n2);
    ck_assert_int_eq(n1, n2);
    ck_assert_double_ge(cosine(y1, y2, n1), 0.999);
    free(y1);
    free(y2);
    poprt_model_free(a);
    poprt_model_free(b);
}
END_TEST

/* Bias correction: a depthwise 3x3 Conv reading inputs with a large mean
 * (3 +- 0.25, as after a Hardswish) responds mostly to that mean, so the
 * float8 rounding of its weights shifts each output channel; with the
 * calibration data's channel means the pass moves the shift into the bias.
 * On held-out inputs of the same distribution the error (max relative to
 * the output's range around its mean) must fall at least 4x with
 * fp8_weight, and by a fifth with fp8. */
static double centred_err(const float *ref, const float *y, int64_t n)
{
    double mean = 0, mx = 0, e = 0;
    for (int64_t i = 0; i < n; i++)
        mean += ref[i] / (double)n;
    for (int64_t i = 0; i < n; i++) {
        mx = fmax(mx, fabs(ref[i] - mean));
        e = fmax(e, fabs((double)ref[i] - y[i]));
    }
    return e / mx;
}

START_TEST(float_to_fp8_bias_correction)
{
    rng = 17;
    poprt__model *m = tb_model(19);
    int64_t xd[4] = {1, 8, 12, 12}, wd[4] = {8, 1, 3, 3}, bd[1] = {8};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    float w[72], b[8];
    for (int i = 0; i < 72; i++)
        w[i] = frand();
    for (int i = 0; i < 8; i++)
        b[i] = frand();
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 4, wd, w);
    tb_const(m, "B", POPRT_DTYPE_FLOAT, 1, bd, b);
    poprt__node *c = tb_node(m, "Conv", 3, (const char *[]){"x", "W", "B"}, 1, (const char *[]){"y"});
    poprt__node_add_attr(c, "group", POPRT__ATTR_INT)->i = 8;
    tb_output(m, "y");
    poprt_model *a;
    ck_assert_int_eq(tb_load(m, &a), POPRT_OK);
    const char *dir = tmp_path("calib_dc");
    mkdir(dir, 0755);
    float x[1152];
    for (int s = 0; s < 3; s++) {
        char sd[700], f[800];
        snprintf(sd, sizeof sd, "%s/sample_%d", dir, s);
        mkdir(sd, 0755);
        for (int i = 0; i < 1152; i++)
            x[i] = 3.0f + 0.25f * frand();
        snprintf(f, sizeof f, "%s/input_0.pb", sd);
        write_tensor_pb(f, "x", xd, 4, x, 1152);
    }
    for (int i = 0; i < 1152; i++) /* held out */
        x[i] = 3.0f + 0.25f * frand();
    int64_t n0;
    float *y0 = run1(a, "x", xd, 4, x, "y", &n0);
    for (int mode = 0; mode < 2; mode++) {
        double err[2];
        for (int bc = 0; bc < 2; bc++) {
            poprt_model *q;
            ck_assert_int_eq(poprt_model_clone(a, &q), POPRT_OK);
            char args[900];
            snprintf(args, sizeof args, "mode=%s,calibration=%s,bias_correction=%d",
                     mode ? "fp8" : "fp8_weight", dir, bc);
            ck_assert_msg(run_pass(q, "float_to_fp8", args) == POPRT_OK, "%s", poprt_last_error());
            int64_t n1;
            float *y1 = run1(q, "x", xd, 4, x, "y", &n1);
            ck_assert_int_eq(n0, n1);
            err[bc] = centred_err(y0, y1, n0);
            free(y1);
            poprt_model_free(q);
        }
        /* fp8: the input's own rounding (step 0.25 at 3) is most of what is left */
        ck_assert_msg(err[1] < (mode ? 0.8 : 0.25) * err[0], "mode %d: error %g with, %g without",
                      mode, err[1], err[0]);
    }
    free(y0);
    poprt_model_free(a);
}
END_TEST

START_TEST(float_to_fp8_modes)
{
    const char *dir = make_calibration(4);
    char args[1024];
    snprintf(args, sizeof args, "calibration=%s", dir);
    check_fp8(args, 2, POPRT_DTYPE_FLOAT8E4M3FN, 0.99);
    snprintf(args, sizeof args, "mode=fp8_weight,calibration=%s,loss=mse", dir);
    check_fp8(args, 0, POPRT_DTYPE_FLOAT8E4M3FN, 0.995);
    snprintf(args, sizeof args, "mode=fp8_weight,calibration=%s,loss=gptq", dir);
    check_fp8(args, 0, POPRT_DTYPE_FLOAT8E4M3FN, 0.995);
    snprintf(args, sizeof args, "fp8_params=[F152,F152,auto,auto],calibration=%s,loss=snr", dir);
    check_fp8(args, 2, POPRT_DTYPE_FLOAT8E5M2, 0.98);
    check_fp8("mode=fp8_weight,fp8_params=[F143,F143,-1,-6]", 0, POPRT_DTYPE_FLOAT8E4M3FN, 0.99);
    for (const char *l = "mae\0cos_dist\0kld\0"; *l; l += strlen(l) + 1) {
        snprintf(args, sizeof args, "calibration=%s,loss=%s", dir, l);
        check_fp8(args, 2, POPRT_DTYPE_FLOAT8E4M3FN, 0.99);
    }
    /* skipping a node, keeping the worst layer */
    poprt_model *b = cnn(NULL);
    ck_assert_int_eq(run_pass(b, "float_to_fp8", "skip_op_names=[gemm_node]"), POPRT_OK);
    ck_assert_int_eq(count_op(b, "DequantizeLinear"), 2);
    poprt_model_free(b);
    b = cnn(NULL);
    snprintf(args, sizeof args, "calibration=%s,num_of_layers_keep_fp16=1", dir);
    ck_assert_int_eq(run_pass(b, "float_to_fp8", args), POPRT_OK);
    ck_assert_int_eq(count_op(b, "DequantizeLinear"), 2);
    poprt_model_free(b);
    /* gptq is for fp8_weight only; unknown formats */
    b = cnn(NULL);
    ck_assert_int_eq(run_pass(b, "float_to_fp8", "loss=gptq"), POPRT_STATUS_PASS_FAILED);
    ck_assert_int_eq(run_pass(b, "float_to_fp8", "fp8_params=[F999]"), POPRT_STATUS_PASS_FAILED);
    ck_assert_int_eq(run_pass(b, "float_to_fp8", "calibration=/nonexistent"), POPRT_STATUS_PASS_FAILED);
    ck_assert_int_eq(count_op(b, "DequantizeLinear"), 0);
    poprt_model_free(b);
}
END_TEST

/* A chain of 6 Convs (8 channels, 3x3, Relu between) on [1, 8, 8, 8]: fp8
 * errors add up along it. */
static poprt_model *conv_chain(void)
{
    rng = 23;
    poprt__model *m = tb_model(19);
    int64_t xd[4] = {1, 8, 8, 8}, wd[4] = {8, 8, 3, 3};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    static float w[6][576];
    char names[6][3][8];
    for (int l = 0; l < 6; l++) {
        for (int i = 0; i < 576; i++)
            w[l][i] = frand() * 0.2f;
        snprintf(names[l][0], 8, "W%d", l);
        snprintf(names[l][1], 8, "c%d", l);
        snprintf(names[l][2], 8, "r%d", l);
        tb_const(m, names[l][0], POPRT_DTYPE_FLOAT, 4, wd, w[l]);
        const char *in = l ? names[l - 1][2] : "x";
        poprt__node *c = tb_node(m, "Conv", 2, (const char *[]){in, names[l][0]}, 1,
                                 (const char *[]){names[l][1]});
        c->name = poprt__arena_strdup(&m->arena, names[l][1]); /* Conv c<l>, Relu r<l> */
        poprt__attr *p = poprt__node_add_attr(c, "pads", POPRT__ATTR_INTS);
        p->n = 4;
        p->ints = poprt__arena_array(&m->arena, 4, sizeof(int64_t));
        for (int i = 0; i < 4; i++)
            p->ints[i] = 1;
        tb_node(m, l < 5 ? "Relu" : "Identity", 1, (const char *[]){names[l][1]}, 1,
                (const char *[]){names[l][2]})
            ->name = poprt__arena_strdup(&m->arena, names[l][2]);
    }
    tb_output(m, "r5");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    return model;
}

/* Lowest cosine over the samples xs (n of 512 values) of b's output, in a
 * session with option kb = vb, against a's with ka = va. */
static double worst_cosine_kv(const poprt_model *a, const char *ka, const char *va,
                              const poprt_model *b, const char *kb, const char *vb,
                              const float *xs, int n)
{
    int64_t xd[4] = {1, 8, 8, 8};
    double low = 1;
    for (int s = 0; s < n; s++) {
        int64_t n1, n2;
        float *y1 = run_kv(a, ka, va, "x", xd, 4, xs + s * 512, "r5", &n1);
        float *y2 = run_kv(b, kb, vb, "x", xd, 4, xs + s * 512, "r5", &n2);
        ck_assert_int_eq(n1, n2);
        double c = cosine(y1, y2, n1);
        low = c < low ? c : low;
        free(y1);
        free(y2);
    }
    return low;
}

/* ... with float16 nodes run as float16 (run1) */
static double worst_cosine(const poprt_model *a, const poprt_model *b, const float *xs, int n)
{
    return worst_cosine_kv(a, "float16_compute", "float16", b, "float16_compute", "float16", xs,
                           n);
}

/* Four random samples of the chain's input in xs and, one sample_K folder
 * each, in calibration folder dir (made). */
static void chain_samples(const char *dir, float *xs)
{
    mkdir(dir, 0755);
    int64_t xd[4] = {1, 8, 8, 8};
    for (int s = 0; s < 4; s++) {
        char sd[700], f[800];
        snprintf(sd, sizeof sd, "%s/sample_%d", dir, s);
        mkdir(sd, 0755);
        for (int i = 0; i < 512; i++)
            xs[s * 512 + i] = frand();
        snprintf(f, sizeof f, "%s/input_0.pb", sd);
        write_tensor_pb(f, "x", xd, 4, xs + s * 512, 512);
    }
}

/* target_cosine keeps the fewest Convs unquantized with which every
 * calibration sample's output reaches the target; it keeps none when full
 * fp8 reaches it already, all when the target is 1; bad values are errors. */
START_TEST(float_to_fp8_target_cosine)
{
    poprt_model *a = conv_chain();
    const char *dir = tmp_path("calib_chain");
    static float xs[4 * 512];
    chain_samples(dir, xs);
    char args[1200];
    poprt_model *b;
    /* full fp8: every Conv's input and weight quantized */
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    snprintf(args, sizeof args, "calibration=%s", dir);
    ck_assert_msg(run_pass(b, "float_to_fp8", args) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_op(b, "QuantizeLinear"), 6);
    double full = worst_cosine(a, b, xs, 4);
    ck_assert_msg(full < 0.9999 && full > 0.9, "full fp8: cosine %g", full);
    poprt_model_free(b);
    /* a target between full fp8 and float32: some Convs kept, target met */
    double want = 1 - (1 - full) / 5;
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    snprintf(args, sizeof args, "calibration=%s,target_cosine=%.9f", dir, want);
    ck_assert_msg(run_pass(b, "float_to_fp8", args) == POPRT_OK, "%s", poprt_last_error());
    int q = count_op(b, "QuantizeLinear");
    ck_assert_msg(q > 0 && q < 6, "%d Convs quantized", q);
    ck_assert_int_eq(count_op(b, "DequantizeLinear"), 2 * q);
    double got = worst_cosine(a, b, xs, 4);
    ck_assert_msg(got >= want, "target %.9f, cosine %.9f", want, got);
    poprt_model_free(b);
    /* a target full fp8 meets: nothing kept */
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    snprintf(args, sizeof args, "calibration=%s,target_cosine=%.9f", dir, full - 1e-6);
    ck_assert_msg(run_pass(b, "float_to_fp8", args) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_op(b, "QuantizeLinear"), 6);
    poprt_model_free(b);
    /* target 1: all kept, the model computes as before */
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    snprintf(args, sizeof args, "calibration=%s,target_cosine=1", dir);
    ck_assert_msg(run_pass(b, "float_to_fp8", args) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_op(b, "QuantizeLinear"), 0);
    ck_assert_int_eq(count_op(b, "DequantizeLinear"), 0);
    ck_assert(worst_cosine(a, b, xs, 4) > 1 - 1e-9);
    /* out of range, or together with num_of_layers_keep_fp16 */
    ck_assert_int_eq(run_pass(b, "float_to_fp8", "target_cosine=1.5"), POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "target_cosine"));
    ck_assert_int_eq(run_pass(b, "float_to_fp8", "target_cosine=0"), POPRT_STATUS_PASS_FAILED);
    ck_assert_int_eq(run_pass(b, "float_to_fp8", "target_cosine=0.9,num_of_layers_keep_fp16=1"),
                     POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "num_of_layers_keep_fp16"));
    ck_assert_int_eq(count_op(b, "QuantizeLinear"), 0);
    poprt_model_free(b);
    poprt_model_free(a);
}
END_TEST

/* bf16_fallback on the Conv chain: b in bfloat16 against a in float32 */
static double worst_cosine_bf16(const poprt_model *a, const poprt_model *b, const float *xs, int n)
{
    return worst_cosine_kv(a, "matmul_precision", "float32", b, "matmul_precision", "bfloat16", xs,
                           n);
}

static int count_float32_marks(const poprt_model *m)
{
    int c = 0;
    const poprt__graph *g = m->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const char *v = poprt__rw_meta(g->nodes.items[i], POPRT__META_MATMUL_FLOAT32);
        c += v && strcmp(v, "1") == 0;
    }
    return c;
}

/* bf16_fallback marks the fewest Convs float32 with which every calibration
 * sample's bfloat16 output reaches target_cosine (none when bfloat16
 * everywhere does; all for 1), float32_nodes by name; a bfloat16 session
 * honours the marks (all marked: the float32 bits), and they survive a save
 * and load (node metadata_props). Bad arguments name what is wrong. On a CPU
 * without bfloat16 kernels every session is float32 and nothing is kept. */
START_TEST(bf16_fallback_keeps_float32)
{
    poprt_model *a = conv_chain();
    const char *dir = tmp_path("calib_bf16");
    static float xs[4 * 512];
    int64_t xd[4] = {1, 8, 8, 8};
    chain_samples(dir, xs);
    const int bf = poprt__sgemm_best_bf16() != NULL;
    const double full = worst_cosine_bf16(a, a, xs, 4);
    if (bf)
        ck_assert_msg(full < 1 - 1e-7 && full > 0.99, "bfloat16: cosine %.9f", full);
    else
        ck_assert(full > 1 - 1e-12);
    char args[1200];
    poprt_model *b;
    /* a target between bfloat16 and float32: some kept, the target met */
    const double want = 1 - (1 - full) / 5;
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    snprintf(args, sizeof args, "calibration=%s,target_cosine=%.12f", dir, want);
    ck_assert_msg(run_pass(b, "bf16_fallback", args) == POPRT_OK, "%s", poprt_last_error());
    const int k = count_float32_marks(b);
    ck_assert_msg(bf ? k > 0 && k < 6 : k == 0, "%d Convs kept float32", k);
    const double got = worst_cosine_bf16(a, b, xs, 4);
    ck_assert_msg(got >= want, "target %.12f, cosine %.12f", want, got);
    poprt_model_free(b);
    /* a target bfloat16 meets: none kept */
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    snprintf(args, sizeof args, "calibration=%s,target_cosine=%.12f", dir, full - 1e-9);
    ck_assert_msg(run_pass(b, "bf16_fallback", args) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_float32_marks(b), 0);
    poprt_model_free(b);
    /* num_of_layers_keep_fp32: that many */
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    snprintf(args, sizeof args, "calibration=%s,num_of_layers_keep_fp32=2", dir);
    ck_assert_msg(run_pass(b, "bf16_fallback", args) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_float32_marks(b), 2);
    poprt_model_free(b);
    /* all six by name: the bfloat16 session computes the float32 bits, also
     * after a save and load */
    ck_assert_int_eq(poprt_model_clone(a, &b), POPRT_OK);
    ck_assert_msg(run_pass(b, "bf16_fallback", "float32_nodes=[c0,c1,c2,c3,c4,c5]") == POPRT_OK,
                  "%s", poprt_last_error());
    ck_assert_int_eq(count_float32_marks(b), 6);
    const char *path = tmp_path("bf16_marked.onnx");
    ck_assert_int_eq(poprt_model_save(b, path), POPRT_OK);
    poprt_model *c;
    ck_assert_msg(poprt_model_load(path, &c) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_float32_marks(c), 6);
    for (int s = 0; s < 2; s++) {
        int64_t n1, n2;
        float *y1 = run_kv(a, "matmul_precision", "float32", "x", xd, 4, xs + s * 512, "r5", &n1);
        float *y2 = run_kv(c, "matmul_precision", "bfloat16", "x", xd, 4, xs + s * 512, "r5", &n2);
        ck_assert_int_eq(n1, n2);
        ck_assert(memcmp(y1, y2, (size_t)n1 * sizeof(float)) == 0);
        free(y1);
        free(y2);
    }
    poprt_model_free(c);
    /* bad arguments */
    ck_assert_int_eq(run_pass(b, "bf16_fallback", "float32_nodes=[nope]"),
                     POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'nope'"));
    ck_assert_int_eq(run_pass(b, "bf16_fallback", "float32_nodes=[r0]"), POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'r0' (Relu)"));
    ck_assert_int_eq(run_pass(b, "bf16_fallback", "target_cosine=1.5"), POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "target_cosine"));
    ck_assert_int_eq(run_pass(b, "bf16_fallback", "target_cosine=0.9,num_of_layers_keep_fp32=1"),
                     POPRT_STATUS_PASS_FAILED);
    ck_assert_int_eq(run_pass(b, "bf16_fallback", "bogus=1"), POPRT_STATUS_PASS_FAILED);
    ck_assert_int_eq(run_pass(b, "bf16_fallback", ""), POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "nothing to do"));
    poprt_model_free(b);
    poprt_model_free(a);
}
END_TEST

START_TEST(layer_precision_compare_writes_table)
{
    const char *orig = tmp_path("cnn.onnx"), *table = tmp_path("table.txt");
    poprt_model *b = cnn(orig);
    ck_assert_int_eq(run_pass(b, "float_to_fp8", "mode=fp8_weight"), POPRT_OK);
    char args[1200];
    snprintf(args, sizeof args, "output=%s", table);
    size_t nodes = poprt_model_num_nodes(b);
    ck_assert_msg(run_pass(b, "layer_precision_compare", args) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_uint_eq(poprt_model_num_nodes(b), nodes);
    FILE *f = fopen(table, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128], op[32];
        double cd, rel;
        if (sscanf(line, "%127s %31s %lf %lf", name, op, &cd, &rel) == 4) {
            rows++;
            ck_assert(cd >= 0 && cd < 0.01);
        }
    }
    fclose(f);
    ck_assert_int_eq(rows, 2);
    poprt_model_free(b);
}
END_TEST

START_TEST(check_with_fake_data_compares)
{
    const char *orig = tmp_path("mlp.onnx");
    poprt_model *b = mlp(0, orig);
    ck_assert_int_eq(run_pass(b, "check_with_fake_data", NULL), POPRT_OK);
    ck_assert_int_eq(run_pass(b, "float_to_half", NULL), POPRT_OK);
    ck_assert_int_eq(run_pass(b, "check_with_fake_data", "tolerance=1e-2"), POPRT_OK);
    ck_assert_int_eq(run_pass(b, "check_with_fake_data", "tolerance=1e-9"), POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "tolerance"));
    char args[700];
    snprintf(args, sizeof args, "origin=%s,samples=3,seed=9,tolerance=1e-7", orig);
    ck_assert_int_eq(run_pass(b, "check_with_fake_data", args), POPRT_STATUS_PASS_FAILED);
    /* a model built in memory has no origin: it only has to run */
    poprt_model *c = mlp(0, NULL);
    ck_assert_int_eq(run_pass(c, "check_with_fake_data", NULL), POPRT_OK);
    poprt_model_free(b);
    poprt_model_free(c);
}
END_TEST

START_TEST(final_check_and_overview)
{
    poprt_model *b = cnn(NULL);
    size_t nodes = poprt_model_num_nodes(b);
    ck_assert_int_eq(run_pass(b, "final_check", NULL), POPRT_OK);
    ck_assert_uint_eq(poprt_model_num_nodes(b), nodes);
    const char *path = tmp_path("overview.txt");
    char args[600];
    snprintf(args, sizeof args, "output=%s", path);
    ck_assert_int_eq(run_pass(b, "model_overview", args), POPRT_OK);
    ck_assert_uint_eq(poprt_model_num_nodes(b), nodes);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    /* Conv: 8*10*10 outputs * 27 MACs * 2 = 43200; Gemm: 10 * 800 * 2 = 16000 */
    ck_assert_msg(strstr(buf, "59.20 KFLOP") != NULL, "%s", buf);
    /* 216 + 8 + 8000 + 10 parameters */
    ck_assert_msg(strstr(buf, "parameters: 8.23 K") != NULL, "%s", buf);
    ck_assert_ptr_nonnull(strstr(buf, "Conv"));
    ck_assert_ptr_nonnull(strstr(buf, "Gemm"));
    poprt_model_free(b);
}
END_TEST

START_TEST(add_checkpoints_adds_outputs)
{
    poprt_model *a = mlp(0, NULL);
    ck_assert_int_eq(run_pass(a, "add_checkpoints", "checkpoints=[mm,s]"), POPRT_OK);
    ck_assert_uint_eq(poprt_model_num_outputs(a), 4);
    poprt_value_info info = {.size = sizeof info};
    ck_assert_int_eq(poprt_model_output(a, 2, &info), POPRT_OK);
    ck_assert_str_eq(info.name, "mm");
    ck_assert_int_eq(info.dims[1], 16);
    ck_assert_int_eq(run_pass(a, "add_checkpoints", "checkpoints=[nope]"), POPRT_STATUS_PASS_FAILED);
    ck_assert_uint_eq(poprt_model_num_outputs(a), 4);
    /* the old outputs are unchanged; the checkpoint equals x @ W */
    poprt_model *o = mlp(0, NULL);
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = frand();
    int64_t xd[2] = {2, 8}, n1, n2;
    float *y1 = run1(o, "x", xd, 2, x, "y", &n1), *y2 = run1(a, "x", xd, 2, x, "y", &n2);
    ck_assert_double_lt(max_rel(y1, y2, n1), 1e-6);
    free(y1);
    free(y2);
    y2 = run1(a, "x", xd, 2, x, "mm", &n2);
    ck_assert_int_eq(n2, 32);
    free(y2);
    poprt_model_free(a);
    poprt_model_free(o);
}
END_TEST

static const char *meta(const poprt__node *n, const char *key)
{
    for (int i = 0; i < n->n_meta; i++)
        if (strcmp(n->meta_keys[i], key) == 0)
            return n->meta_vals[i];
    return NULL;
}

/* ---- float_to_int8_static ---- */

/* The CNN (Conv 3x3 + Relu, Gemm) with static QDQ quantization calibrated on
 * 4 random samples: the Conv reads dequantized int8 weights (per channel,
 * axis 0) and an int32 bias, its Relu's output is quantized, the Gemm reads
 * a dequantized input (the flattened Relu output, quantized again on the
 * same grid) and weights; the session compiler then runs the Conv
 * as QLinearConv and the Gemm on the integer GEMM; on an input inside the
 * calibrated range the output stays within 5% of the float output's largest
 * value (two uint8 activations and int8 weights). */
START_TEST(float_to_int8_static_writes_qdq)
{
    poprt_model *a = cnn(NULL), *q;
    ck_assert_int_eq(poprt_model_clone(a, &q), POPRT_OK);
    ck_assert_msg(run_pass(q, "float_to_int8_static", "min_size=1,samples=4") == POPRT_OK, "%s",
                  poprt_last_error());
    /* x, Relu's r and the Gemm's input (r flattened; on r's grid already) */
    ck_assert_int_eq(count_op(q, "QuantizeLinear"), 3);
    ck_assert_int_eq(count_op(q, "DequantizeLinear"), 6); /* and W, B, W2 */
    const poprt__node *c = node_named(q, "conv_node");
    ck_assert_ptr_nonnull(c);
    const poprt__node *dw = c->inputs[1]->producer, *db = c->inputs[2]->producer;
    ck_assert(dw && !strcmp(dw->op_type, "DequantizeLinear") &&
              dw->inputs[0]->type.elem == POPRT_DTYPE_INT8 && poprt__attr_i(dw, "axis", 1) == 0);
    ck_assert(db && !strcmp(db->op_type, "DequantizeLinear") &&
              db->inputs[0]->type.elem == POPRT_DTYPE_INT32);
    float x[300];
    rng = 99;
    for (int i = 0; i < 300; i++)
        x[i] = 0.9f * frand();
    const int64_t xd[4] = {1, 3, 10, 10};
    int64_t n1, n2;
    float *y1 = run1(a, "x", xd, 4, x, "y", &n1), *y2 = run1(q, "x", xd, 4, x, "y", &n2);
    ck_assert_int_eq(n1, n2);
    float big = 0;
    for (int64_t i = 0; i < n1; i++)
        big = fmaxf(big, fabsf(y1[i]));
    for (int64_t i = 0; i < n1; i++)
        ck_assert_msg(fabsf(y2[i] - y1[i]) <= 0.05f * big, "y[%lld]: int8 %g, float %g",
                      (long long)i, (double)y2[i], (double)y1[i]);
    free(y1);
    free(y2);
    /* the session compiler's integer operators */
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(q, NULL, &s), POPRT_OK);
    int fused = 0;
    for (size_t i = 0; i < s->m->graph->nodes.len; i++) {
        const char *op = ((const poprt__node *)s->m->graph->nodes.items[i])->op_type;
        fused += !strcmp(op, "QLinearConv") || !strcmp(op, "FusedMatMulInteger");
    }
    ck_assert_int_eq(fused, 2);
    poprt_session_free(s);
    ck_assert_int_eq(run_pass(q, "float_to_int8_static", "min_size=0"), POPRT_STATUS_PASS_FAILED);
    /* a quantized model has no float weights left: a second run changes nothing */
    const size_t nodes = poprt_model_num_nodes(q);
    ck_assert_int_eq(run_pass(q, "float_to_int8_static", "min_size=1"), POPRT_OK);
    ck_assert_uint_eq(poprt_model_num_nodes(q), nodes);
    /* calibration data that is not there names the folder */
    ck_assert_int_eq(run_pass(a, "float_to_int8_static", "min_size=1,data=/nonexistent"),
                     POPRT_STATUS_PASS_FAILED);
    ck_assert_msg(strstr(poprt_last_error(), "/nonexistent"), "%s", poprt_last_error());
    poprt_model_free(a);
    poprt_model_free(q);
}
END_TEST

/* ---- float_to_int8 ---- */

/* Largest error dynamic int8 quantization may add to (x W)[j] (x one row of
 * K, W K x N): x is rounded to a multiple of xs (DynamicQuantizeLinear of
 * the whole tensor: xs = (max(x, 0) - min(x, 0)) / 255), column j of W to
 * a multiple of ws[j] = max |W[:, j]| / qmax (127; 63 with reduce_range=1);
 * each product is off by at most |x| ws/2 + (|w| + ws/2) xs/2. Plus float32
 * rounding of the sums. */
static double int8_bound_q(const float *x, const float *w, int64_t K, int64_t N, int64_t j,
                           double xs, double alpha, double qmax)
{
    double ws = 0, b = 0, mag = 0;
    for (int64_t k = 0; k < K; k++)
        ws = fmax(ws, fabs(alpha * w[k * N + j]) / qmax);
    for (int64_t k = 0; k < K; k++) {
        const double wv = fabs(alpha * w[k * N + j]);
        b += fabs(x[k]) * ws / 2 + (wv + ws / 2) * xs / 2;
        mag += fabs(x[k]) * wv;
    }
    return b + 1e-5 * mag + 1e-6;
}

static double int8_bound(const float *x, const float *w, int64_t K, int64_t N, int64_t j,
                         double xs, double alpha)
{
    return int8_bound_q(x, w, K, N, j, xs, alpha, 127.0);
}

/* The smallest and largest value of the model's int8 constants of more than
 * one value (the weights; their zero points are single zeros). */
static void int8_weight_range(const poprt_model *m, int *lo, int *hi)
{
    *lo = 127;
    *hi = -128;
    const poprt__graph *g = m->m->graph;
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (!t->raw || t->type.elem != POPRT_DTYPE_INT8 || t->nbytes < 2)
            continue;
        for (size_t k = 0; k < t->nbytes; k++) {
            const int v = ((const int8_t *)t->raw)[k];
            *lo = v < *lo ? v : *lo;
            *hi = v > *hi ? v : *hi;
        }
    }
}

static double dq_scale(const float *x, int64_t n)
{
    double lo = 0, hi = 0;
    for (int64_t i = 0; i < n; i++) {
        lo = fmin(lo, x[i]);
        hi = fmax(hi, x[i]);
    }
    return (hi - lo) / 255.0;
}

/* MatMul (3-D activations), Gemm (transB, alpha, beta, C) and Conv (pads,
 * bias) with constant weights become DynamicQuantizeLinear +
 * MatMulInteger/ConvInteger + Cast + Mul (+ Add),
 * one DynamicQuantizeLinear per activation; every output stays within the
 * quantization bound of the float result (int8_bound); a MatMul with N <
 * min_size and one named in skip_op_names stay float. */
START_TEST(float_to_int8_quantizes_within_bound)
{
    enum { K = 40, N = 24, N3 = 8, ROWS = 12, K2 = 24, N2 = 20, R2 = 5 };
    static float w1[K * N], w3[N * N3], w2[N2 * K2], c2[N2], x[ROWS * K], x2[R2 * K2];
    rng = 11;
    for (int i = 0; i < K * N; i++)
        w1[i] = frand();
    for (int i = 0; i < N * N3; i++)
        w3[i] = frand();
    for (int i = 0; i < N2 * K2; i++)
        w2[i] = frand() * 0.3f;
    for (int i = 0; i < N2; i++)
        c2[i] = frand();
    for (int i = 0; i < ROWS * K; i++)
        x[i] = frand() * 2.0f + 0.3f;
    for (int i = 0; i < R2 * K2; i++)
        x2[i] = frand();
    /* model a: x [4, 3, K] -> MatMul W1 -> h -> MatMul W3 (N3 < 16) -> y */
    poprt__model *m = tb_model(13);
    int64_t xd[3] = {4, 3, K}, w1d[2] = {K, N}, w3d[2] = {N, N3};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    tb_const(m, "W1", POPRT_DTYPE_FLOAT, 2, w1d, w1);
    tb_const(m, "W3", POPRT_DTYPE_FLOAT, 2, w3d, w3);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W1"}, 1, (const char *[]){"h"})->name = "mm1";
    tb_node(m, "MatMul", 2, (const char *[]){"h", "W3"}, 1, (const char *[]){"y"})->name = "mm3";
    tb_output(m, "h");
    tb_output(m, "y");
    poprt_model *a, *a8, *a_skip;
    ck_assert_int_eq(tb_load(m, &a), POPRT_OK);
    ck_assert_int_eq(poprt_model_clone(a, &a8), POPRT_OK);
    ck_assert_int_eq(poprt_model_clone(a, &a_skip), POPRT_OK);
    ck_assert_msg(run_pass(a8, "float_to_int8", NULL) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_op(a8, "DynamicQuantizeLinear"), 1);
    ck_assert_int_eq(count_op(a8, "MatMulInteger"), 1);
    ck_assert_int_eq(count_op(a8, "MatMul"), 1); /* mm3: N = 8 */
    ck_assert_ptr_nonnull(node_named(a8, "mm3"));
    ck_assert_int_eq(count_const_dtype(a8, POPRT_DTYPE_INT8), 2); /* W1 and its zero points */
    int64_t nh, nh8;
    float *h = run1(a, "x", xd, 3, x, "h", &nh), *h8 = run1(a8, "x", xd, 3, x, "h", &nh8);
    ck_assert_int_eq(nh, ROWS * N);
    ck_assert_int_eq(nh8, nh);
    const double xs = dq_scale(x, ROWS * K);
    double worst = 0;
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < N; j++) {
            const double e = fabs((double)h8[r * N + j] - h[r * N + j]);
            const double b = int8_bound(x + r * K, w1, K, N, j, xs, 1.0);
            ck_assert_msg(e <= b, "h[%d][%d]: int8 %g, float %g, bound %g", r, j,
                          (double)h8[r * N + j], (double)h[r * N + j], b);
            worst = fmax(worst, e / b);
        }
    ck_assert_double_gt(cosine(h, h8, nh), 0.999);
    /* reduce_range=1: the weights in [-63, 63] (reaching both ends: each
     * column's largest magnitude maps to 63), within the 7-bit bound */
    int lo, hi;
    int8_weight_range(a8, &lo, &hi);
    ck_assert_msg(lo == -127 || hi == 127, "8-bit weights span [%d, %d]", lo, hi);
    poprt_model *a7;
    ck_assert_int_eq(poprt_model_clone(a, &a7), POPRT_OK);
    ck_assert_msg(run_pass(a7, "float_to_int8", "reduce_range=1") == POPRT_OK, "%s",
                  poprt_last_error());
    ck_assert_int_eq(count_op(a7, "MatMulInteger"), 1);
    int8_weight_range(a7, &lo, &hi);
    ck_assert_msg(lo >= -63 && hi <= 63 && (lo == -63 || hi == 63),
                  "reduce_range=1 weights span [%d, %d]", lo, hi);
    int64_t nh7;
    float *h7 = run1(a7, "x", xd, 3, x, "h", &nh7);
    ck_assert_int_eq(nh7, nh);
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < N; j++) {
            const double e = fabs((double)h7[r * N + j] - h[r * N + j]);
            const double b = int8_bound_q(x + r * K, w1, K, N, j, xs, 1.0, 63.0);
            ck_assert_msg(e <= b, "reduce_range h[%d][%d]: int8 %g, float %g, bound %g", r, j,
                          (double)h7[r * N + j], (double)h[r * N + j], b);
            worst = fmax(worst, e / b);
        }
    ck_assert_int_eq(run_pass(a7, "float_to_int8", "reduce_range=2"), POPRT_STATUS_PASS_FAILED);
    ck_assert_str_eq(poprt_last_error() + strlen(poprt_last_error()) -
                         strlen("reduce_range 2: expected 0 or 1"),
                     "reduce_range 2: expected 0 or 1");
    poprt_model_free(a7);
    free(h7);
    free(h);
    free(h8);
    /* skip_op_names keeps mm1 float: nothing left to quantize */
    ck_assert_int_eq(run_pass(a_skip, "float_to_int8", "skip_op_names=[mm1]"), POPRT_OK);
    ck_assert_int_eq(count_op(a_skip, "MatMulInteger"), 0);
    ck_assert_int_eq(run_pass(a_skip, "float_to_int8", "min_size=0"), POPRT_STATUS_PASS_FAILED);
    ck_assert_int_eq(run_pass(a_skip, "float_to_int8", "bogus=1"), POPRT_STATUS_PASS_FAILED);

    /* model b: Gemm(x2 [R2, K2], W2 [N2, K2] transposed, C, alpha 0.5, beta 2) */
    m = tb_model(13);
    int64_t x2d[2] = {R2, K2}, w2d[2] = {N2, K2}, cd[1] = {N2};
    tb_input(m, "x2", POPRT_DTYPE_FLOAT, 2, x2d);
    tb_const(m, "W2", POPRT_DTYPE_FLOAT, 2, w2d, w2);
    tb_const(m, "C2", POPRT_DTYPE_FLOAT, 1, cd, c2);
    poprt__node *gn =
        tb_node(m, "Gemm", 3, (const char *[]){"x2", "W2", "C2"}, 1, (const char *[]){"g"});
    gn->name = "gemm";
    ck_assert_int_eq(poprt__rw_attr_i(gn, "transB", 1), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_f(gn, "alpha", 0.5f), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_f(gn, "beta", 2.0f), POPRT_OK);
    tb_output(m, "g");
    poprt_model *b, *b8;
    ck_assert_int_eq(tb_load(m, &b), POPRT_OK);
    ck_assert_int_eq(poprt_model_clone(b, &b8), POPRT_OK);
    ck_assert_msg(run_pass(b8, "float_to_int8", NULL) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_op(b8, "Gemm"), 0);
    ck_assert_int_eq(count_op(b8, "MatMulInteger"), 1);
    ck_assert_int_eq(count_op(b8, "Add"), 1);
    int64_t ng, ng8;
    float *g = run1(b, "x2", x2d, 2, x2, "g", &ng), *g8 = run1(b8, "x2", x2d, 2, x2, "g", &ng8);
    ck_assert_int_eq(ng, R2 * N2);
    ck_assert_int_eq(ng8, ng);
    static float w2t[K2 * N2]; /* W2 as K2 x N2 */
    for (int k = 0; k < K2; k++)
        for (int j = 0; j < N2; j++)
            w2t[k * N2 + j] = w2[j * K2 + k];
    const double xs2 = dq_scale(x2, R2 * K2);
    for (int r = 0; r < R2; r++)
        for (int j = 0; j < N2; j++) {
            const double e = fabs((double)g8[r * N2 + j] - g[r * N2 + j]);
            const double bd = int8_bound(x2 + r * K2, w2t, K2, N2, j, xs2, 0.5) + 1e-5 * fabs(2.0 * c2[j]);
            ck_assert_msg(e <= bd, "g[%d][%d]: int8 %g, float %g, bound %g", r, j,
                          (double)g8[r * N2 + j], (double)g[r * N2 + j], bd);
            worst = fmax(worst, e / bd);
        }
    free(g);
    free(g8);

    /* model c: Conv(x3 [1, C, H, H], W [M, C, 3, 3], bias, pads 1, stride 1) */
    enum { C = 8, H = 6, M = 16, KC = C * 9 };
    static float x3[C * H * H], wc[M * KC], bc[M], wct[KC * M], patch[KC];
    for (int i = 0; i < C * H * H; i++)
        x3[i] = frand();
    for (int i = 0; i < M * KC; i++)
        wc[i] = frand() * 0.2f;
    for (int i = 0; i < M; i++)
        bc[i] = frand();
    for (int j = 0; j < M; j++)
        for (int k = 0; k < KC; k++)
            wct[k * M + j] = wc[j * KC + k];
    m = tb_model(13);
    int64_t x3d[4] = {1, C, H, H}, wcd[4] = {M, C, 3, 3}, bcd[1] = {M};
    tb_input(m, "x3", POPRT_DTYPE_FLOAT, 4, x3d);
    tb_const(m, "Wc", POPRT_DTYPE_FLOAT, 4, wcd, wc);
    tb_const(m, "Bc", POPRT_DTYPE_FLOAT, 1, bcd, bc);
    poprt__node *cn =
        tb_node(m, "Conv", 3, (const char *[]){"x3", "Wc", "Bc"}, 1, (const char *[]){"co"});
    const int64_t pads[4] = {1, 1, 1, 1};
    ck_assert_int_eq(poprt__rw_attr_ints(cn, "pads", 4, pads), POPRT_OK);
    tb_output(m, "co");
    poprt_model *cm, *c8;
    ck_assert_int_eq(tb_load(m, &cm), POPRT_OK);
    ck_assert_int_eq(poprt_model_clone(cm, &c8), POPRT_OK);
    ck_assert_msg(run_pass(c8, "float_to_int8", NULL) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(count_op(c8, "Conv"), 0);
    ck_assert_int_eq(count_op(c8, "ConvInteger"), 1);
    int64_t nc, nc8;
    float *co = run1(cm, "x3", x3d, 4, x3, "co", &nc), *co8 = run1(c8, "x3", x3d, 4, x3, "co", &nc8);
    ck_assert_int_eq(nc, M * H * H);
    ck_assert_int_eq(nc8, nc);
    const double xs3 = dq_scale(x3, C * H * H);
    for (int j = 0; j < M; j++)
        for (int oy = 0; oy < H; oy++)
            for (int ox = 0; ox < H; ox++) {
                for (int ch = 0; ch < C; ch++)
                    for (int t = 0; t < 9; t++) {
                        const int iy = oy + t / 3 - 1, ix = ox + t % 3 - 1;
                        patch[ch * 9 + t] = iy < 0 || iy >= H || ix < 0 || ix >= H
                                                ? 0.0f
                                                : x3[(ch * H + iy) * H + ix];
                    }
                const int64_t o = (j * H + oy) * H + ox;
                const double e = fabs((double)co8[o] - co[o]);
                const double bd = int8_bound(patch, wct, KC, M, j, xs3, 1.0) + 1e-5 * fabs(bc[j]);
                ck_assert_msg(e <= bd, "conv [%d][%d][%d]: int8 %g, float %g, bound %g", j, oy,
                              ox, (double)co8[o], (double)co[o], bd);
                worst = fmax(worst, e / bd);
            }
    free(co);
    free(co8);
    poprt_model_free(cm);
    poprt_model_free(c8);
    printf("passes_precision: float_to_int8 within %.2f of the quantization bound\n", worst);
    poprt_model_free(a);
    poprt_model_free(a8);
    poprt_model_free(a_skip);
    poprt_model_free(b);
    poprt_model_free(b8);
}
END_TEST

START_TEST(manual_sharding_annotates)
{
    const char *cfg = tmp_path("shard.json");
    FILE *f = fopen(cfg, "w");
    fputs("{\"sharding\": {\"add_node\": 1, \"softmax_node\": 2}, \"pipelining\": {\"mul_node\": 1}}", f);
    fclose(f);
    poprt_model *a = mlp(0, NULL);
    char args[600];
    snprintf(args, sizeof args, "config=%s", cfg);
    ck_assert_msg(run_pass(a, "manual_sharding", args) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_str_eq(meta(node_named(a, "mm_node"), "poprt.shard"), "0");
    ck_assert_str_eq(meta(node_named(a, "add_node"), "poprt.shard"), "1");
    ck_assert_str_eq(meta(node_named(a, "relu_node"), "poprt.shard"), "1");
    ck_assert_str_eq(meta(node_named(a, "softmax_node"), "poprt.shard"), "2");
    ck_assert_str_eq(meta(node_named(a, "add_node"), "poprt.pipeline_stage"), "0");
    ck_assert_str_eq(meta(node_named(a, "mul_node"), "poprt.pipeline_stage"), "1");
    ck_assert_str_eq(meta(node_named(a, "softmax_node"), "poprt.pipeline_stage"), "1");
    /* annotations survive saving; outputs are unchanged */
    const char *saved = tmp_path("sharded.onnx");
    ck_assert_int_eq(poprt_model_save(a, saved), POPRT_OK);
    poprt_model *b;
    ck_assert_int_eq(poprt_model_load(saved, &b), POPRT_OK);
    ck_assert_str_eq(meta(node_named(b, "softmax_node"), "poprt.shard"), "2");
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = frand();
    poprt_model *o = mlp(0, NULL);
    int64_t xd[2] = {2, 8}, n1, n2;
    float *y1 = run1(o, "x", xd, 2, x, "y", &n1), *y2 = run1(b, "x", xd, 2, x, "y", &n2);
    ck_assert_double_lt(max_rel(y1, y2, n1), 1e-6);
    free(y1);
    free(y2);
    /* bad configs */
    f = fopen(cfg, "w");
    fputs("{\"sharding\": {\"no_such_node\": 1}}", f);
    fclose(f);
    ck_assert_int_eq(run_pass(a, "manual_sharding", args), POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "no_such_node"));
    f = fopen(cfg, "w");
    fputs("{\"sharding\": [1,2]", f);
    fclose(f);
    ck_assert_int_eq(run_pass(a, "manual_sharding", args), POPRT_STATUS_PASS_FAILED);
    ck_assert_int_eq(run_pass(a, "manual_sharding", NULL), POPRT_STATUS_PASS_FAILED);
    poprt_model_free(a);
    poprt_model_free(b);
    poprt_model_free(o);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("passes_precision");
    TCase *tc = tcase_create("precision");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, float_to_half_converts_and_agrees);
    tcase_add_test(tc, float_to_half_keeps_overflow_range);
    tcase_add_test(tc, float_to_half_converts_if_bodies);
    tcase_add_test(tc, float_to_mixed_keeps_overflowing_nodes);
    tcase_add_test(tc, float_to_fp8_folds_computed_weights);
    tcase_add_test(tc, float_to_fp8_bias_correction);
    tcase_add_test(tc, float_to_fp8_converts_if_bodies);
    tcase_add_test(tc, float_to_fp8_modes);
    tcase_add_test(tc, float_to_fp8_target_cosine);
    tcase_add_test(tc, bf16_fallback_keeps_float32);
    tcase_add_test(tc, layer_precision_compare_writes_table);
    tcase_add_test(tc, check_with_fake_data_compares);
    tcase_add_test(tc, final_check_and_overview);
    tcase_add_test(tc, add_checkpoints_adds_outputs);
    tcase_add_test(tc, manual_sharding_annotates);
    tcase_add_test(tc, float_to_int8_quantizes_within_bound);
    tcase_add_test(tc, float_to_int8_static_writes_qdq);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (tmpdir[0] && !failed) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return failed ? 1 : 0;
}
