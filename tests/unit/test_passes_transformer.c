/* Unit tests: the transformer passes (lib/passes/list_transformer.def) on a
 * tiny BERT layer built through the IR, and their ai.poprt operators. Each
 * test checks the documented graph change and that the model computes the
 * same outputs before and after (through the public API, same inputs). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builder.h"
#include "passes/transformer.h"

enum { S = 4, H = 8, NH = 2, HD = 4 };

static uint32_t rng = 12345;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)rng / 4294967296.0f * 2.0f - 1.0f;
}

static void cf(poprt__model *m, const char *name, int rank, const int64_t *d, int64_t n, float scale,
               float offset)
{
    float v[64];
    for (int64_t i = 0; i < n; i++)
        v[i] = frand() * scale + offset;
    tb_const(m, name, POPRT_DTYPE_FLOAT, rank, d, v);
}

static void scalar(poprt__model *m, const char *name, float v)
{
    tb_const(m, name, POPRT_DTYPE_FLOAT, 0, NULL, &v);
}

static void ints(poprt__model *m, const char *name, int64_t n, const int64_t *v)
{
    tb_const(m, name, POPRT_DTYPE_INT64, 1, &n, v);
}

static poprt__node *nd(poprt__model *m, const char *name, const char *op, int n_in, const char **ins,
                       const char *out)
{
    poprt__node *n = tb_node(m, op, n_in, ins, 1, &out);
    n->name = poprt__arena_strdup(&m->arena, name);
    return n;
}
#define N2(m, name, op, a, b, out) nd(m, name, op, 2, (const char *[]){a, b}, out)
#define N1(m, name, op, a, out) nd(m, name, op, 1, (const char *[]){a}, out)

/* One BERT layer as exporters write it: mask chain, Q/K/V projections,
 * attention, decomposed LayerNorm, then both GELU forms (outputs y and z). */
static poprt_model *bert(int64_t opset)
{
    poprt__model *m = tb_model(opset);
    int64_t xd[3] = {1, S, H}, md[2] = {1, S}, wd[2] = {H, H}, bd[1] = {H};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    tb_input(m, "m", POPRT_DTYPE_INT64, 2, md);
    const char *p[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        char w[8], b[8];
        snprintf(w, sizeof w, "W%s", p[i]);
        snprintf(b, sizeof b, "b%s", p[i]);
        cf(m, w, 2, wd, H * H, 0.5f, 0);
        cf(m, b, 1, bd, H, 0.1f, 0);
    }
    cf(m, "gamma", 1, bd, H, 0.1f, 1.0f);
    cf(m, "beta", 1, bd, H, 0.1f, 0);
    ints(m, "shape4", 4, (int64_t[]){1, S, NH, HD});
    ints(m, "shape3", 3, (int64_t[]){1, S, H});
    ints(m, "ax1", 1, (int64_t[]){1});
    ints(m, "ax2", 1, (int64_t[]){2});
    scalar(m, "one", 1.0f);
    scalar(m, "neg", -10000.0f);
    scalar(m, "sqrt_hd", 2.0f);
    scalar(m, "two", 2.0f);
    scalar(m, "eps", 1e-5f);
    scalar(m, "sqrt2", 1.4142135623730951f);
    scalar(m, "half", 0.5f);
    scalar(m, "three", 3.0f);
    scalar(m, "k044", 0.044715f);
    scalar(m, "k079", 0.7978845608f);
    /* mask: (1 - float(m[:, None, None, :])) * -10000 */
    N2(m, "mask_unsq1", "Unsqueeze", "m", "ax1", "m1");
    N2(m, "mask_unsq2", "Unsqueeze", "m1", "ax2", "m2");
    poprt__node *c = N1(m, "mask_cast", "Cast", "m2", "mf");
    ck_assert_int_eq(poprt__rw_attr_i(c, "to", POPRT_DTYPE_FLOAT), POPRT_OK);
    N2(m, "mask_sub", "Sub", "one", "mf", "ms");
    N2(m, "mask_mul", "Mul", "ms", "neg", "mask");
    const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
    for (int i = 0; i < 3; i++) {
        char nm[32], w[8], b[8], mm[8], pa[8], pr[8], ph[8];
        snprintf(w, sizeof w, "W%s", p[i]);
        snprintf(b, sizeof b, "b%s", p[i]);
        snprintf(mm, sizeof mm, "%s_mm", p[i]);
        snprintf(pa, sizeof pa, "%s_pa", p[i]);
        snprintf(pr, sizeof pr, "%s_pr", p[i]);
        snprintf(ph, sizeof ph, "%s_h", p[i]);
        snprintf(nm, sizeof nm, "%s_MatMul", p[i]);
        N2(m, nm, "MatMul", "x", w, mm);
        snprintf(nm, sizeof nm, "%s_Add", p[i]);
        N2(m, nm, "Add", b, mm, pa);
        snprintf(nm, sizeof nm, "%s_Reshape", p[i]);
        N2(m, nm, "Reshape", pa, "shape4", pr);
        snprintf(nm, sizeof nm, "%s_Transpose", p[i]);
        poprt__node *t = N1(m, nm, "Transpose", pr, ph);
        ck_assert_int_eq(poprt__rw_attr_ints(t, "perm", 4, i == 1 ? p0231 : p0213), POPRT_OK);
    }
    N2(m, "qk", "MatMul", "q_h", "k_h", "sc");
    N2(m, "scale", "Div", "sc", "sqrt_hd", "sd");
    N2(m, "add_mask", "Add", "sd", "mask", "sm");
    poprt__node *sm = N1(m, "softmax", "Softmax", "sm", "pr");
    ck_assert_int_eq(poprt__rw_attr_i(sm, "axis", -1), POPRT_OK);
    N2(m, "pv", "MatMul", "pr", "v_h", "cx");
    poprt__node *t = N1(m, "ctx_t", "Transpose", "cx", "ct");
    ck_assert_int_eq(poprt__rw_attr_ints(t, "perm", 4, p0213), POPRT_OK);
    N2(m, "ctx_r", "Reshape", "ct", "shape3", "at");
    /* LayerNorm, decomposed */
    const int64_t last[1] = {-1};
    poprt__node *r1 = N1(m, "ln_mean", "ReduceMean", "at", "mu");
    ck_assert_int_eq(poprt__rw_attr_ints(r1, "axes", 1, last), POPRT_OK);
    N2(m, "ln_sub", "Sub", "at", "mu", "dd");
    N2(m, "ln_pow", "Pow", "dd", "two", "sq");
    poprt__node *r2 = N1(m, "ln_var", "ReduceMean", "sq", "var");
    ck_assert_int_eq(poprt__rw_attr_ints(r2, "axes", 1, last), POPRT_OK);
    N2(m, "ln_eps", "Add", "var", "eps", "ve");
    N1(m, "ln_sqrt", "Sqrt", "ve", "sdv");
    N2(m, "ln_div", "Div", "dd", "sdv", "nn");
    N2(m, "ln_mul", "Mul", "nn", "gamma", "ng");
    N2(m, "ln_add", "Add", "ng", "beta", "ln");
    /* GELU, erf form: (x * (1 + erf(x / sqrt2))) * 0.5 */
    N2(m, "g_div", "Div", "ln", "sqrt2", "g1");
    N1(m, "g_erf", "Erf", "g1", "g2");
    N2(m, "g_add", "Add", "g2", "one", "g3");
    N2(m, "g_mul", "Mul", "ln", "g3", "g4");
    N2(m, "g_half", "Mul", "g4", "half", "y");
    /* GELU, tanh form: (x * 0.5) * (1 + tanh(0.79788 * (x + 0.044715 x^3))) */
    N2(m, "t_pow", "Pow", "ln", "three", "t1");
    N2(m, "t_mul", "Mul", "t1", "k044", "t2");
    N2(m, "t_add", "Add", "ln", "t2", "t3");
    N2(m, "t_scale", "Mul", "k079", "t3", "t4");
    N1(m, "t_tanh", "Tanh", "t4", "t5");
    N2(m, "t_one", "Add", "one", "t5", "t6");
    N2(m, "t_half", "Mul", "ln", "half", "th");
    N2(m, "t_out", "Mul", "th", "t6", "z");
    tb_output(m, "y");
    tb_output(m, "z");
    poprt_model *out;
    ck_assert_int_eq(tb_load(m, &out), POPRT_OK);
    return out;
}

/* A model with input x [1, S, H] and the constants of one projection of
 * Q, K and V: Wqkv [H, 3H], bqkv [3H]. */
static poprt__model *qkv_model(void)
{
    poprt__model *m = tb_model(13);
    int64_t xd[3] = {1, S, H}, wd[2] = {H, 3 * H}, bd[1] = {3 * H};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    float w[H * 3 * H], b[3 * H];
    for (int i = 0; i < H * 3 * H; i++)
        w[i] = frand() * 0.5f;
    for (int i = 0; i < 3 * H; i++)
        b[i] = frand() * 0.1f;
    tb_const(m, "Wqkv", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_const(m, "bqkv", POPRT_DTYPE_FLOAT, 1, bd, b);
    return m;
}

/* The end of an attention block on scores (the Softmax's input) and the
 * heads v: Softmax, @ v, Transpose [0, 2, 1, 3], Reshape to "shape3" as
 * graph output y; the model loaded. */
static poprt_model *attention_out(poprt__model *m, const char *scores, const char *v)
{
    poprt__node *sm = N1(m, "softmax", "Softmax", scores, "pr");
    ck_assert_int_eq(poprt__rw_attr_i(sm, "axis", -1), POPRT_OK);
    N2(m, "pv", "MatMul", "pr", v, "cx");
    poprt__node *t = N1(m, "ctx_t", "Transpose", "cx", "ct");
    ck_assert_int_eq(poprt__rw_attr_ints(t, "perm", 4, (int64_t[]){0, 2, 1, 3}), POPRT_OK);
    N2(m, "ctx_r", "Reshape", "ct", "shape3", "y");
    tb_output(m, "y");
    poprt_model *out;
    ck_assert_int_eq(tb_load(m, &out), POPRT_OK);
    return out;
}

/* timm's ViT attention: one projection of Q, K and V, Reshape
 * [1, S, 3, NH, HD], Transpose [2, 0, 3, 1, 4], Gather 0 / 1 / 2 on axis 0,
 * q @ k^T (k through Transpose [0, 1, 3, 2]) * scale, Softmax, @ v. */
static poprt_model *vit_attention(void)
{
    poprt__model *m = qkv_model();
    ints(m, "shape5", 5, (int64_t[]){1, S, 3, NH, HD});
    ints(m, "shape3", 3, (int64_t[]){1, S, H});
    for (int64_t i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "i%d", (int)i);
        tb_const(m, name, POPRT_DTYPE_INT64, 0, NULL, &i);
    }
    scalar(m, "scale", 0.5f);
    N2(m, "qkv_mm", "MatMul", "x", "Wqkv", "qm");
    N2(m, "qkv_add", "Add", "bqkv", "qm", "qa");
    N2(m, "qkv_rs", "Reshape", "qa", "shape5", "q5");
    poprt__node *t = N1(m, "qkv_tr", "Transpose", "q5", "qt");
    ck_assert_int_eq(poprt__rw_attr_ints(t, "perm", 5, (int64_t[]){2, 0, 3, 1, 4}), POPRT_OK);
    N2(m, "g_q", "Gather", "qt", "i0", "q");
    N2(m, "g_k", "Gather", "qt", "i1", "k");
    N2(m, "g_v", "Gather", "qt", "i2", "v");
    t = N1(m, "k_t", "Transpose", "k", "kt");
    ck_assert_int_eq(poprt__rw_attr_ints(t, "perm", 4, (int64_t[]){0, 1, 3, 2}), POPRT_OK);
    N2(m, "qk", "MatMul", "q", "kt", "sc");
    N2(m, "mul_scale", "Mul", "sc", "scale", "ss");
    return attention_out(m, "ss", "v");
}

/* GPT-2's attention: one projection Split into Q, K, V on the last axis,
 * Reshape / Transpose per head (K [0, 2, 3, 1]), scores / sqrt(hd), the
 * causal mask as Where(lower-triangular bool, scores, -3.4e38), Softmax,
 * @ V. */
static poprt_model *gpt2_attention(float fill)
{
    poprt__model *m = qkv_model();
    int64_t cd[4] = {1, 1, S, S};
    unsigned char causal[S * S];
    for (int i = 0; i < S; i++)
        for (int j = 0; j < S; j++)
            causal[i * S + j] = j <= i;
    tb_const(m, "causal", POPRT_DTYPE_BOOL, 4, cd, causal);
    ints(m, "parts", 3, (int64_t[]){H, H, H});
    ints(m, "shape4", 4, (int64_t[]){1, S, NH, HD});
    ints(m, "shape3", 3, (int64_t[]){1, S, H});
    scalar(m, "sqrt_hd", 2.0f);
    scalar(m, "fill", fill);
    N2(m, "qkv_mm", "MatMul", "x", "Wqkv", "qm");
    N2(m, "qkv_add", "Add", "bqkv", "qm", "qa");
    poprt__node *sp = tb_node(m, "Split", 2, (const char *[]){"qa", "parts"}, 3,
                              (const char *[]){"qs", "ks", "vs"});
    ck_assert_int_eq(poprt__rw_attr_i(sp, "axis", 2), POPRT_OK);
    const char *part[3] = {"qs", "ks", "vs"}, *head[3] = {"qh", "kh", "vh"};
    for (int i = 0; i < 3; i++) {
        char rn[8], tn[8], rout[8];
        snprintf(rn, sizeof rn, "rs%d", i);
        snprintf(tn, sizeof tn, "tr%d", i);
        snprintf(rout, sizeof rout, "r%d", i);
        N2(m, rn, "Reshape", part[i], "shape4", rout);
        poprt__node *t = N1(m, tn, "Transpose", rout, head[i]);
        ck_assert_int_eq(
            poprt__rw_attr_ints(t, "perm", 4,
                                i == 1 ? (int64_t[]){0, 2, 3, 1} : (int64_t[]){0, 2, 1, 3}),
            POPRT_OK);
    }
    N2(m, "qk", "MatMul", "qh", "kh", "sc");
    N2(m, "scale", "Div", "sc", "sqrt_hd", "sd");
    tb_node(m, "Where", 3, (const char *[]){"causal", "sd", "fill"}, 1, (const char *[]){"sw"});
    return attention_out(m, "sw", "vh");
}

/* y = x * cos + rotate_half(x) * sin over the last axis (d = 8). */
static poprt_model *rope(void)
{
    poprt__model *m = tb_model(13);
    int64_t xd[4] = {1, 2, 4, 8}, cd[2] = {4, 8};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    cf(m, "cos", 2, cd, 32, 1.0f, 0);
    cf(m, "sin", 2, cd, 32, 1.0f, 0);
    ints(m, "s0", 1, (int64_t[]){0});
    ints(m, "s4", 1, (int64_t[]){4});
    ints(m, "s8", 1, (int64_t[]){8});
    ints(m, "axis", 1, (int64_t[]){-1});
    nd(m, "slice_hi", "Slice", 4, (const char *[]){"x", "s4", "s8", "axis"}, "x2");
    N1(m, "neg", "Neg", "x2", "nx2");
    nd(m, "slice_lo", "Slice", 4, (const char *[]){"x", "s0", "s4", "axis"}, "x1");
    poprt__node *c = N2(m, "concat", "Concat", "nx2", "x1", "rh");
    ck_assert_int_eq(poprt__rw_attr_i(c, "axis", -1), POPRT_OK);
    N2(m, "mul_cos", "Mul", "x", "cos", "a");
    N2(m, "mul_sin", "Mul", "rh", "sin", "b");
    N2(m, "add", "Add", "a", "b", "y");
    tb_output(m, "y");
    poprt_model *out;
    ck_assert_int_eq(tb_load(m, &out), POPRT_OK);
    return out;
}

static int count(const poprt_model *m, const char *op)
{
    int c = 0;
    const poprt__graph *g = m->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        c += strcmp(n->op_type, op) == 0;
    }
    return c;
}

static int nodes(const poprt_model *m) { return (int)m->m->graph->nodes.len; }

static const poprt__node *find_op(const poprt_model *m, const char *op)
{
    const poprt__graph *g = m->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        if (strcmp(n->op_type, op) == 0)
            return n;
    }
    return NULL;
}

/* A copy of m with `pass` applied (asserting it succeeds). */
static poprt_model *with(const poprt_model *m, const char *pass, const char *args, size_t *changed)
{
    poprt_model *c;
    ck_assert_int_eq(poprt_model_clone(m, &c), POPRT_OK);
    poprt_pass_manager *pm;
    ck_assert_int_eq(poprt_pass_manager_create(&pm), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_add(pm, pass, args), POPRT_OK);
    poprt_status st = poprt_pass_manager_run(pm, c);
    ck_assert_msg(st == POPRT_OK, "pass %s: %s", pass, poprt_last_error());
    if (changed)
        *changed = poprt_pass_manager_changed(pm);
    poprt_pass_manager_free(pm);
    return c;
}

/* Runs both models on the same random inputs; every float output agrees
 * within tol (relative, floor 1). The mask has one padding token. a runs
 * as written (session option optimize=0), b with the session's compile-time
 * rewrites, so those are checked against the unfused graph too; tol 0 (the
 * same float operations) compares both as written. */
static void same_outputs(const poprt_model *a, const poprt_model *b, double tol)
{
    const poprt_model *ms[2] = {a, b};
    float out[2][2][256];
    size_t nout = poprt_model_num_outputs(a);
    ck_assert_uint_eq(nout, poprt_model_num_outputs(b));
    ck_assert_uint_le(nout, 2);
    float x[64];
    for (int i = 0; i < 64; i++)
        x[i] = frand() * 2.0f;
    const int64_t mask[S] = {1, 1, 1, 0};
    for (int k = 0; k < 2; k++) {
        poprt_session *s;
        poprt_options *o;
        ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
        const char *opt = k == 0 || tol == 0 ? "0" : "1";
        ck_assert_int_eq(poprt_options_set(o, "optimize", opt), POPRT_OK);
        poprt_status st = poprt_session_create(ms[k], o, &s);
        poprt_options_free(o);
        ck_assert_msg(st == POPRT_OK, "session: %s", poprt_last_error());
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        for (size_t i = 0; i < poprt_model_num_inputs(ms[k]); i++) {
            poprt_value_info info = {.size = sizeof info};
            ck_assert_int_eq(poprt_model_input(ms[k], i, &info), POPRT_OK);
            size_t n = 1;
            for (int d = 0; d < info.rank; d++)
                n *= (size_t)info.dims[d];
            if (info.dtype == POPRT_DTYPE_INT64)
                st = poprt_stepio_set_input(io, info.name, info.dtype, info.dims, info.rank, mask,
                                            n * sizeof(int64_t));
            else
                st = poprt_stepio_set_input(io, info.name, info.dtype, info.dims, info.rank, x,
                                            n * sizeof(float));
            ck_assert_int_eq(st, POPRT_OK);
        }
        for (size_t j = 0; j < nout; j++) {
            poprt_value_info info = {.size = sizeof info};
            ck_assert_int_eq(poprt_model_output(ms[k], j, &info), POPRT_OK);
            ck_assert_int_eq(poprt_stepio_set_output(io, info.name, out[k][j], sizeof out[k][j]),
                             POPRT_OK);
        }
        st = poprt_session_run(s, io);
        ck_assert_msg(st == POPRT_OK, "run: %s", poprt_last_error());
        poprt_stepio_free(io);
        poprt_session_free(s);
    }
    for (size_t j = 0; j < nout; j++) {
        poprt_value_info info = {.size = sizeof info};
        poprt_model_output(a, j, &info);
        size_t n = 1;
        for (int d = 0; d < info.rank; d++)
            n *= (size_t)info.dims[d];
        for (size_t i = 0; i < n; i++) {
            double e = out[0][j][i], g = out[1][j][i];
            ck_assert_msg(fabs(g - e) <= tol * fmax(1.0, fabs(e)), "output %zu [%zu]: %.9g vs %.9g",
                          j, i, g, e);
        }
    }
}

START_TEST(erf_gelu)
{
    poprt_model *m = bert(13);
    size_t ch;
    poprt_model *p = with(m, "erf_gelu_pattern", NULL, &ch);
    ck_assert_uint_eq(ch, 1);
    ck_assert_int_eq(count(p, "Erf"), 0);
    ck_assert_int_eq(count(p, "Gelu"), 1);
    const poprt__node *g = find_op(p, "Gelu");
    ck_assert_str_eq(g->domain, "ai.poprt");
    ck_assert_int_eq(nodes(p), nodes(m) - 4);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(tanh_gelu)
{
    poprt_model *m = bert(13);
    poprt_model *p = with(m, "gelu_pattern", NULL, NULL);
    ck_assert_int_eq(count(p, "Tanh"), 0);
    ck_assert_int_eq(count(p, "Gelu"), 1);
    ck_assert_str_eq(poprt__attr_s(find_op(p, "Gelu"), "approximate", ""), "tanh");
    ck_assert_int_eq(nodes(p), nodes(m) - 7);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(layer_norm)
{
    for (int opset = 13; opset <= 17; opset += 4) {
        poprt_model *m = bert(opset);
        poprt_model *p = with(m, "layer_norm_pattern", NULL, NULL);
        ck_assert_int_eq(count(p, "ReduceMean"), 0);
        ck_assert_int_eq(count(p, "Sqrt"), 0);
        const char *op = opset >= 17 ? "LayerNormalization" : "LayerNorm";
        ck_assert_int_eq(count(p, op), 1);
        const poprt__node *ln = find_op(p, op);
        ck_assert_str_eq(ln->domain, opset >= 17 ? "" : "ai.poprt");
        ck_assert_float_eq_tol(poprt__attr_f(ln, "epsilon", 0), 1e-5f, 1e-9f);
        ck_assert_int_eq(nodes(p), nodes(m) - 8);
        same_outputs(m, p, 1e-5);
        poprt_model_free(p);
        poprt_model_free(m);
    }
}
END_TEST

START_TEST(fused_attention)
{
    poprt_model *m = bert(13);
    poprt_model *p = with(m, "fused_attention", NULL, NULL);
    ck_assert_int_eq(count(p, "FusedAttention"), 1);
    ck_assert_int_eq(count(p, "Softmax"), 0);
    ck_assert_int_eq(count(p, "MatMul"), 0);
    ck_assert_int_eq(count(p, "Transpose"), 0);
    const poprt__node *f = find_op(p, "FusedAttention");
    ck_assert_int_eq(poprt__attr_i(f, "num_heads", 0), NH);
    ck_assert_float_eq_tol(poprt__attr_f(f, "scale", 0), 0.5f, 1e-7f);
    ck_assert_int_eq(nodes(p), nodes(m) - 18);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

/* The fused projection is split into Q, K and V (its columns), then fused
 * as BERT's: one FusedAttention, nothing of the heads left. */
/* fused_attention on m gives one FusedAttention of NH heads, scale 0.5,
 * with n_in inputs, and none of the ops `gone`; the same outputs within
 * 1e-5. */
static void fused_once(const poprt_model *m, const char *const *gone, int n_gone, int n_in)
{
    size_t ch;
    poprt_model *p = with(m, "fused_attention", NULL, &ch);
    ck_assert_uint_eq(ch, 1);
    ck_assert_int_eq(count(p, "FusedAttention"), 1);
    for (int i = 0; i < n_gone; i++)
        ck_assert_msg(count(p, gone[i]) == 0, "%s left", gone[i]);
    const poprt__node *f = find_op(p, "FusedAttention");
    ck_assert_int_eq(f->n_inputs, n_in);
    ck_assert_int_eq(poprt__attr_i(f, "num_heads", 0), NH);
    ck_assert_float_eq_tol(poprt__attr_f(f, "scale", 0), 0.5f, 1e-7f);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
}

START_TEST(fused_attention_qkv)
{
    poprt_model *m = vit_attention();
    static const char *const gone[] = {"Gather", "MatMul", "Softmax", "Transpose"};
    fused_once(m, gone, 4, 3);
    /* V also read elsewhere: not an attention block's operands, left alone */
    size_t ch;
    poprt_model *p, *r = vit_attention();
    poprt__model *rm = r->m;
    tb_output(rm, "v");
    ck_assert_int_eq(poprt__model_check(rm), POPRT_OK);
    p = with(r, "fused_attention", NULL, &ch);
    ck_assert_uint_eq(ch, 0);
    ck_assert_int_eq(count(p, "Gather"), 3);
    poprt_model_free(p);
    poprt_model_free(r);
    poprt_model_free(m);
}
END_TEST

/* GPT-2's form: the Split parts become three projections and the Where a
 * constant additive mask (0 / -3.4e38 from the causal bool): one
 * FusedAttention with a 2-D mask. */
START_TEST(fused_attention_causal)
{
    poprt_model *m = gpt2_attention(-3.4028234663852886e38f);
    static const char *const gone[] = {"Split", "Where", "Softmax", "MatMul"};
    fused_once(m, gone, 4, 4);
    poprt_model_free(m);
    /* a fill of -1 is no mask (the Where stays, so no attention block): the
     * Split is not made three projections either */
    size_t ch;
    poprt_model *w = gpt2_attention(-1.0f);
    poprt_model *p = with(w, "fused_attention", NULL, &ch);
    ck_assert_uint_eq(ch, 0);
    ck_assert_int_eq(count(p, "Split"), 1);
    ck_assert_int_eq(count(p, "MatMul"), count(w, "MatMul"));
    poprt_model_free(p);
    poprt_model_free(w);
}
END_TEST

START_TEST(pre_scale)
{
    poprt_model *m = bert(13);
    poprt_model *p = with(m, "pre_scale", NULL, NULL);
    ck_assert_int_eq(count(p, "Div"), count(m, "Div") - 1);
    ck_assert_int_eq(nodes(p), nodes(m) - 1);
    same_outputs(m, p, 1e-5);
    /* on the fused node: scale goes into Wqkv, the attribute becomes 1 */
    poprt_model *f = with(m, "fused_attention", NULL, NULL);
    poprt_model *fp = with(f, "pre_scale", NULL, NULL);
    ck_assert_float_eq(poprt__attr_f(find_op(fp, "FusedAttention"), "scale", 0), 1.0f);
    same_outputs(f, fp, 1e-5);
    poprt_model_free(fp);
    poprt_model_free(f);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(insert_attention_mask)
{
    poprt_model *m = bert(13);
    poprt_model *p = with(m, "insert_attention_mask", NULL, NULL);
    ck_assert_int_eq(count(p, "AttentionMask"), 1);
    ck_assert_int_eq(count(p, "Unsqueeze"), 0);
    ck_assert_float_eq(poprt__attr_f(find_op(p, "AttentionMask"), "value", 0), -10000.0f);
    ck_assert_int_eq(nodes(p), nodes(m) - 3);
    same_outputs(m, p, 0); /* the same float operations */
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(packed_transformer)
{
    poprt_model *m = bert(13);
    poprt_model *p = with(m, "packed_transformer", "max_valid_num=4", NULL);
    ck_assert_int_eq(count(p, "PackedAttention"), 1);
    ck_assert_int_eq(count(p, "Cast"), 0); /* the raw int mask is read directly */
    ck_assert_int_eq(poprt__attr_i(find_op(p, "PackedAttention"), "max_valid_num", 0), 4);
    same_outputs(m, p, 1e-5);
    /* against FusedAttention: skipped padding keys change nothing beyond
     * rounding (FusedAttention projects with the fast GEMM, PackedAttention
     * with the reference one) */
    poprt_model *f = with(m, "fused_attention", NULL, NULL);
    same_outputs(f, p, 1e-5);
    poprt_model_free(f);
    poprt_model_free(p);
    /* max_valid_num is checked at run time, bad arguments at conversion */
    poprt_pass_manager *pm;
    poprt_pass_manager_create(&pm);
    poprt_pass_manager_add(pm, "packed_transformer", "max_valid=3");
    ck_assert_int_ne(poprt_pass_manager_run(pm, m), POPRT_OK);
    poprt_pass_manager_free(pm);
    poprt_model_free(m);
}
END_TEST

START_TEST(serialize_matmul)
{
    poprt_model *m = bert(13);
    size_t ch;
    poprt_model *p = with(m, "serialize_matmul", NULL, &ch);
    ck_assert_uint_eq(ch, 0); /* no factor: no change */
    poprt_model_free(p);
    const char *modes[3] = {"output_channels", "input_channels", "reducing_dim"};
    const char *join[3] = {"Concat", "Concat", "Sum"};
    for (int k = 0; k < 3; k++) {
        char args[96];
        snprintf(args, sizeof args, "factor=2,mode=%s,nodes=[q_MatMul,v_MatMul]", modes[k]);
        p = with(m, "serialize_matmul", args, NULL);
        ck_assert_int_eq(count(p, "MatMul"), count(m, "MatMul") + 2);
        ck_assert_int_eq(count(p, join[k]), 2);
        ck_assert_int_eq(count(p, "Split"), k ? 2 : 0);
        same_outputs(m, p, 1e-5);
        poprt_model_free(p);
    }
    /* the reference's NAME=FACTOR/MODE/KEEP_PRECISION form */
    p = with(m, "serialize_matmul", "k_MatMul=4/reducing_dim/True", NULL);
    ck_assert_int_eq(count(p, "Sum"), 1);
    ck_assert_int_eq(count(p, "MatMul"), count(m, "MatMul") + 3);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(serialize_matmul_add)
{
    poprt_model *m = bert(13);
    poprt_model *p = with(m, "serialize_matmul_add", "factor=4", NULL);
    ck_assert_int_eq(count(p, "MatMul"), count(m, "MatMul") + 9);
    ck_assert_int_eq(count(p, "Concat"), 3);
    same_outputs(m, p, 1e-6); /* the GEMM may block narrower products differently */
    poprt_model_free(p);
    p = with(m, "serialize_matmul_add", "q_MatMul/q_Add=2", NULL);
    ck_assert_int_eq(count(p, "Concat"), 1);
    same_outputs(m, p, 1e-6);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(merge_matmul)
{
    poprt_model *m = bert(13);
    poprt_model *p = with(m, "merge_matmul", NULL, NULL); /* Q, K, V read x */
    ck_assert_int_eq(count(p, "MatMul"), count(m, "MatMul") - 2);
    ck_assert_int_eq(count(p, "Split"), 1);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    p = with(m, "merge_matmul", "q_MatMul,k_MatMul", NULL);
    ck_assert_int_eq(count(p, "MatMul"), count(m, "MatMul") - 1);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(merge_matmul_add)
{
    poprt_model *m = bert(13);
    poprt_model *p = with(m, "merge_matmul_add", NULL, NULL);
    ck_assert_int_eq(count(p, "MatMul"), count(m, "MatMul") - 2);
    ck_assert_int_eq(count(p, "Split"), 1);
    ck_assert_int_eq(nodes(p), nodes(m) - 3);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    p = with(m, "merge_matmul_add", "q_MatMul,q_Add,v_MatMul,v_Add", NULL);
    ck_assert_int_eq(nodes(p), nodes(m) - 1);
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(merge_moe)
{
    poprt_model *m = bert(13);
    size_t ch;
    poprt_model *p = with(m, "merge_moe", NULL, &ch);
    ck_assert_uint_eq(ch, 0);
    poprt_model_free(p);
    /* three "experts" q/k/v from their MatMul to their Reshape */
    p = with(m, "merge_moe", "q_MatMul,q_Reshape,k_MatMul,k_Reshape,v_MatMul,v_Reshape", NULL);
    ck_assert_int_eq(count(p, "MatMul"), count(m, "MatMul") - 2);
    ck_assert_int_eq(count(p, "Reshape"), count(m, "Reshape"));
    same_outputs(m, p, 1e-5);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(rotary)
{
    poprt_model *m = rope();
    poprt_model *p = with(m, "matmul_rotary_embedding", NULL, NULL);
    ck_assert_int_eq(count(p, "RotaryEmbedding"), 1);
    ck_assert_int_eq(nodes(p), 1);
    same_outputs(m, p, 0);
    poprt_model_free(p);
    p = with(m, "matmul_rotary_embedding", "mode=matmul", NULL);
    ck_assert_int_eq(count(p, "Concat"), 0);
    ck_assert_int_eq(count(p, "Slice"), 0);
    ck_assert_int_eq(count(p, "MatMul"), 1);
    same_outputs(m, p, 1e-6);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

START_TEST(all_fire_together)
{
    poprt_model *m = bert(13);
    poprt_model *p;
    ck_assert_int_eq(poprt_model_clone(m, &p), POPRT_OK);
    poprt_pass_manager *pm;
    poprt_pass_manager_create(&pm);
    const char *seq[] = {"insert_attention_mask", "pre_scale", "fused_attention",
                         "layer_norm_pattern", "erf_gelu_pattern", "gelu_pattern"};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(poprt_pass_manager_add(pm, seq[i], NULL), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_run(pm, p), POPRT_OK);
    ck_assert_uint_eq(poprt_pass_manager_changed(pm), 6);
    ck_assert_int_eq(nodes(p), 6); /* Cast, AttentionMask, FusedAttention, LayerNorm, 2 Gelu */
    same_outputs(m, p, 1e-5);
    poprt_pass_manager_free(pm);
    poprt_model_free(p);
    poprt_model_free(m);
}
END_TEST

/* Nodes of type op in a session's compiled graph. */
static int session_count(const poprt_model *m, const char *optimize, const char *op)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "optimize", optimize), POPRT_OK);
    poprt_session *s;
    poprt_status st = poprt_session_create(m, o, &s);
    poprt_options_free(o);
    ck_assert_msg(st == POPRT_OK, "session: %s", poprt_last_error());
    int c = 0;
    const poprt__graph *g = s->m->graph;
    for (size_t i = 0; i < g->nodes.len; i++)
        c += strcmp(((const poprt__node *)g->nodes.items[i])->op_type, op) == 0;
    poprt_session_free(s);
    return c;
}

/* Compiling a session fuses LayerNorm and both GELU forms (the user's model
 * is left as it is) and computes what the unfused graph computes. */
START_TEST(compile_fuses)
{
    for (int opset = 13; opset <= 17; opset += 4) {
        poprt_model *m = bert(opset);
        const int before = nodes(m);
        ck_assert_int_eq(session_count(m, "0", "ReduceMean"), 2);
        ck_assert_int_eq(session_count(m, "0", "Erf"), 1);
        ck_assert_int_eq(session_count(m, "1", "ReduceMean"), 0);
        ck_assert_int_eq(session_count(m, "1", "Erf"), 0);
        ck_assert_int_eq(session_count(m, "1", "Tanh"), 0);
        ck_assert_int_eq(session_count(m, "1", "Gelu"), 2);
        ck_assert_int_eq(session_count(m, "1", opset >= 17 ? "LayerNormalization" : "LayerNorm"),
                         1);
        ck_assert_int_eq(nodes(m), before);
        same_outputs(m, m, 1e-5);
        poprt_model_free(m);
    }
}
END_TEST

START_TEST(not_applicable)
{
    const char *all[] = {"erf_gelu_pattern", "gelu_pattern", "layer_norm_pattern",
                         "fused_attention", "pre_scale", "insert_attention_mask",
                         "packed_transformer", "serialize_matmul", "serialize_matmul_add",
                         "merge_matmul", "merge_matmul_add", "merge_moe",
                         "matmul_rotary_embedding"};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        poprt_model *m = tb_add_relu(1);
        size_t ch;
        poprt_model *p = with(m, all[i], NULL, &ch);
        ck_assert_msg(ch == 0, "%s changed a model it does not apply to", all[i]);
        poprt_model_free(p);
        poprt_model_free(m);
    }
    /* the rope model is left alone by the attention passes */
    poprt_model *r = rope();
    poprt_model *p = with(r, "fused_attention", NULL, NULL);
    ck_assert_int_eq(nodes(p), nodes(r));
    poprt_model_free(p);
    poprt_model_free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("passes_transformer");
    TCase *tc = tcase_create("transformer");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, erf_gelu);
    tcase_add_test(tc, tanh_gelu);
    tcase_add_test(tc, layer_norm);
    tcase_add_test(tc, fused_attention);
    tcase_add_test(tc, fused_attention_qkv);
    tcase_add_test(tc, fused_attention_causal);
    tcase_add_test(tc, pre_scale);
    tcase_add_test(tc, insert_attention_mask);
    tcase_add_test(tc, packed_transformer);
    tcase_add_test(tc, serialize_matmul);
    tcase_add_test(tc, serialize_matmul_add);
    tcase_add_test(tc, merge_matmul);
    tcase_add_test(tc, merge_matmul_add);
    tcase_add_test(tc, merge_moe);
    tcase_add_test(tc, rotary);
    tcase_add_test(tc, all_fire_together);
    tcase_add_test(tc, compile_fuses);
    tcase_add_test(tc, not_applicable);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
