/* Unit tests: the compile-time layout choice (lib/compiler/layout.c) and
 * the kernels of NCHW16c tensors.
 *  - The pass on a graph with every kind of node it handles (convolutions
 *    3x3 and 1x1, stride 2, depthwise, a residual, MaxPool, AveragePool,
 *    GlobalAveragePool, channel Concat, Relu, inference Dropout) and
 *    tensors that keep NCHW (a graph input and output, a 1 x 1 tensor):
 *    exactly the documented tensors change layout; a set of 16-channel
 *    tensors that only 1x1 and depthwise convolutions touch keeps NCHW.
 *  - Sessions: the optimised graph (with the layouts) against the same model
 *    with optimize=0, within 1e-5 relative + 1e-6 absolute (the blocked
 *    convolution sums in another order than the plain paths; the sums
 *    here have at most 288 terms of magnitude <= 1); an executable file of
 *    it gives bit-identical results.
 *  - BlockedMaxPool against MaxPool on blocked copies of the same data,
 *    with NaN and -inf, pads, strides, dilations and ceil_mode: equal bit
 *    for bit (the same comparisons in the same order); BlockedAveragePool
 *    and BlockedGlobalAveragePool against AveragePool (count_include_pad
 *    too) and GlobalAveragePool likewise (the same sums in the same
 *    order).
 * The layout pass runs only where the CPU has a blocked convolution
 * variant (AVX2 or AVX-512); elsewhere the graph test says so and checks
 * that nothing changed. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "builder.h"
#include "compiler/compiler.h"
#include "kernels/x86/conv_blocked.h"

static float frand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

static int have_blocked(void)
{
    return poprt__convb_best() != NULL;
}

static void ints(poprt__model *m, poprt__node *n, const char *name, int cnt, const int64_t *v)
{
    poprt__attr *a = poprt__node_add_attr(n, name, POPRT__ATTR_INTS);
    ck_assert_ptr_nonnull(a);
    a->n = cnt;
    a->ints = poprt__arena_array(&m->arena, (size_t)cnt, sizeof(int64_t));
    memcpy(a->ints, v, sizeof(int64_t) * (size_t)cnt);
}

static void weights(poprt__model *m, const char *name, int64_t M, int64_t C, int64_t k,
                    uint32_t seed)
{
    int64_t d[4] = {M, C, k, k};
    const size_t n = (size_t)(M * C * k * k);
    float *w = malloc(n * sizeof(float));
    ck_assert_ptr_nonnull(w);
    for (size_t i = 0; i < n; i++)
        w[i] = frand(&seed) / sqrtf((float)(C * k * k));
    tb_const(m, name, POPRT_DTYPE_FLOAT, 4, d, w);
    free(w);
}

static poprt__node *conv(poprt__model *m, const char *x, const char *w, const char *y, int k,
                         int stride)
{
    poprt__node *n = tb_node(m, "Conv", 2, (const char *[]){x, w}, 1, (const char *[]){y});
    const int64_t p = k / 2;
    ints(m, n, "pads", 4, (int64_t[]){p, p, p, p});
    ints(m, n, "strides", 2, (int64_t[]){stride, stride});
    return n;
}

/*  s[1,3,23,23] -> Conv 3x3 s2 (stem, 3 channels) -> Relu -> a0 [16,12,12]
 *  a0 -> Conv 3x3 -> Relu -> a [32,12,12]
 *  a -> depthwise Conv 3x3 (group 32) -> Relu -> ad [32,12,12]
 *  ad -> MaxPool 3x3 s2 pad 1 -> p [32,6,6]
 *  p -> Conv 1x1 -> Relu -> e1 [16];  p -> Conv 3x3 -> Relu -> e3 [16]
 *  Concat(e1, e3) -> cat [32,6,6] -> Split [16, 16] -> sa, sb
 *  Concat(sb, sa) -> cat2 [32,6,6]
 *  cat2 -> Conv 1x1 -> Add p -> Relu -> z [32,6,6]     (residual)
 *  z -> Dropout -> zd -> Conv 1x1 s2 -> y5 [48,3,3]    (graph output)
 *  p -> Conv 3x3 -> q [16,6,6] -> GlobalAveragePool -> g (graph output)
 *  p -> AveragePool 6x6 -> v [32,1,1] -> Conv 1x1 -> u [16,1,1] (graph output)
 *  p -> Conv 3x3 -> h -> Tanh -> ht [32,6,6] -> GlobalAveragePool -> Conv 1x1 -> se
 *  [32,1,1] (a squeeze-excitation); Mul(ht, se) -> hm [32,6,6] (one value per
 *  channel: a FusedElementwise reading se per block); hm -> Conv 1x1 -> hc;
 *  Sub(se, hc) -> Add p -> hz [32,6,6] (one FusedElementwise chain, its
 *  operands per channel and full); hz -> Conv 3x3 (group 2: 16 channels per
 *  group) -> hgr [32,6,6] -> Conv 1x1 -> y7 [16,6,6] (graph output)
 * Expected: a0 (the stem writes it with its row tiles), a, ad, p, e1, e3, cat,
 * sa, sb, cat2, z, zd (Dropout's view of z), q (read by GlobalAveragePool, which
 * becomes BlockedGlobalAveragePool), h, ht, hm, hc, hz and hgr in NCHW16c; s (a
 * graph input), v and se (1 x 1: the same bytes either way) and the outputs
 * in NCHW. */
static poprt__model *layout_model(void)
{
    poprt__model *m = tb_model(17);
    int64_t sd[] = {1, 3, 23, 23};
    tb_input(m, "s", POPRT_DTYPE_FLOAT, 4, sd);
    weights(m, "W0", 16, 3, 3, 1u);
    weights(m, "W1", 32, 16, 3, 2u);
    weights(m, "We1", 16, 32, 1, 3u);
    weights(m, "We3", 16, 32, 3, 4u);
    weights(m, "W4", 32, 32, 1, 5u);
    weights(m, "W5", 48, 32, 1, 6u);
    weights(m, "Wq", 16, 32, 3, 7u);
    conv(m, "s", "W0", "c0", 3, 2);
    tb_node(m, "Relu", 1, (const char *[]){"c0"}, 1, (const char *[]){"a0"});
    conv(m, "a0", "W1", "c1", 3, 1);
    tb_node(m, "Relu", 1, (const char *[]){"c1"}, 1, (const char *[]){"a"});
    weights(m, "Wd", 32, 1, 3, 9u);
    poprt__node *dw = conv(m, "a", "Wd", "cd", 3, 1);
    poprt__attr *grp = poprt__node_add_attr(dw, "group", POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(grp);
    grp->i = 32;
    tb_node(m, "Relu", 1, (const char *[]){"cd"}, 1, (const char *[]){"ad"});
    poprt__node *mp = tb_node(m, "MaxPool", 1, (const char *[]){"ad"}, 1, (const char *[]){"p"});
    ints(m, mp, "kernel_shape", 2, (int64_t[]){3, 3});
    ints(m, mp, "strides", 2, (int64_t[]){2, 2});
    ints(m, mp, "pads", 4, (int64_t[]){1, 1, 1, 1});
    conv(m, "p", "We1", "ce1", 1, 1);
    tb_node(m, "Relu", 1, (const char *[]){"ce1"}, 1, (const char *[]){"e1"});
    conv(m, "p", "We3", "ce3", 3, 1);
    tb_node(m, "Relu", 1, (const char *[]){"ce3"}, 1, (const char *[]){"e3"});
    poprt__node *cat =
        tb_node(m, "Concat", 2, (const char *[]){"e1", "e3"}, 1, (const char *[]){"cat"});
    poprt__attr *ax = poprt__node_add_attr(cat, "axis", POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(ax);
    ax->i = 1;
    /* the halves of cat swapped: Split into whole blocks, Concat back */
    int64_t halves[2] = {16, 16}, hd[1] = {2};
    tb_const(m, "halves", POPRT_DTYPE_INT64, 1, hd, halves);
    poprt__node *sp = tb_node(m, "Split", 2, (const char *[]){"cat", "halves"}, 2,
                              (const char *[]){"sa", "sb"});
    poprt__attr *sax = poprt__node_add_attr(sp, "axis", POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(sax);
    sax->i = 1;
    poprt__node *cat2 =
        tb_node(m, "Concat", 2, (const char *[]){"sb", "sa"}, 1, (const char *[]){"cat2"});
    poprt__attr *ax2 = poprt__node_add_attr(cat2, "axis", POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(ax2);
    ax2->i = 1;
    conv(m, "cat2", "W4", "c4", 1, 1);
    tb_node(m, "Add", 2, (const char *[]){"c4", "p"}, 1, (const char *[]){"r4"});
    tb_node(m, "Relu", 1, (const char *[]){"r4"}, 1, (const char *[]){"z"});
    tb_node(m, "Dropout", 1, (const char *[]){"z"}, 1, (const char *[]){"zd"});
    conv(m, "zd", "W5", "y5", 1, 2);
    conv(m, "p", "Wq", "q", 3, 1);
    tb_node(m, "GlobalAveragePool", 1, (const char *[]){"q"}, 1, (const char *[]){"g"});
    poprt__node *ap = tb_node(m, "AveragePool", 1, (const char *[]){"p"}, 1, (const char *[]){"v"});
    ints(m, ap, "kernel_shape", 2, (int64_t[]){6, 6});
    weights(m, "Wu", 16, 32, 1, 8u);
    conv(m, "v", "Wu", "u", 1, 1);
    weights(m, "Wh", 32, 32, 3, 10u);
    weights(m, "Wg", 32, 32, 1, 11u);
    weights(m, "Wm", 32, 32, 1, 12u);
    weights(m, "Wz", 16, 32, 1, 13u);
    conv(m, "p", "Wh", "h", 3, 1);
    tb_node(m, "Tanh", 1, (const char *[]){"h"}, 1, (const char *[]){"ht"});
    tb_node(m, "GlobalAveragePool", 1, (const char *[]){"ht"}, 1, (const char *[]){"hg"});
    conv(m, "hg", "Wg", "se", 1, 1);
    tb_node(m, "Mul", 2, (const char *[]){"ht", "se"}, 1, (const char *[]){"hm"});
    conv(m, "hm", "Wm", "hc", 1, 1);
    tb_node(m, "Sub", 2, (const char *[]){"se", "hc"}, 1, (const char *[]){"hs"});
    tb_node(m, "Add", 2, (const char *[]){"hs", "p"}, 1, (const char *[]){"hz"});
    /* a grouped conv of whole blocks: 2 groups of 16 channels */
    weights(m, "Wgr", 32, 16, 3, 14u);
    poprt__node *gr = conv(m, "hz", "Wgr", "hgr", 3, 1);
    poprt__attr *grg = poprt__node_add_attr(gr, "group", POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(grg);
    grg->i = 2;
    conv(m, "hgr", "Wz", "y7", 1, 1);
    tb_output(m, "y5");
    tb_output(m, "g");
    tb_output(m, "u");
    tb_output(m, "y7");
    return m;
}

/* The layout the compiled graph gives tensor `name`'s producer output and
 * readers: 1 when its producer writes it NCHW16c. */
static int written_blocked(const poprt__graph *g, const char *name)
{
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        if (n->n_outputs < 1 || !n->outputs[0] || strcmp(n->outputs[0]->name, name) != 0)
            continue;
        if (strncmp(n->op_type, "Blocked", 7) == 0)
            return 1;
        return strcmp(poprt__attr_s(n, "y_layout", "NCHW"), "NCHW16c") == 0;
    }
    return -1; /* no such node output (Concat, Relu: see read_blocked) */
}

/* 1 when every convolution reading `name` as X reads it NCHW16c, 0 when
 * every one reads it NCHW, -1 when they disagree or none reads it. */
static int read_blocked(const poprt__graph *g, const char *name)
{
    int seen = 0, blk = 0, plain = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        if (strcmp(n->op_type, "FusedConv") != 0 && strcmp(n->op_type, "Conv") != 0)
            continue;
        if (!n->inputs[0] || strcmp(n->inputs[0]->name, name) != 0)
            continue;
        seen = 1;
        if (strcmp(poprt__attr_s(n, "x_layout", "NCHW"), "NCHW16c") == 0)
            blk = 1;
        else
            plain = 1;
    }
    return !seen || (blk && plain) ? -1 : blk;
}

static void infer(poprt__model *m)
{
    ck_assert_int_eq(poprt__graph_resolve(m->graph), POPRT_OK);
    ck_assert_int_eq(poprt__graph_infer(m->graph, NULL), POPRT_OK);
}

START_TEST(test_layout_graph)
{
    poprt__model *m = layout_model();
    infer(m);
    int any = 0;
    ck_assert_int_eq(poprt__compile_optimize(m, 0, &any), POPRT_OK);
    const poprt__graph *g = m->graph;
    int pools = 0, maxpools = 0, avg = 0, gavg = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        pools += strcmp(n->op_type, "BlockedMaxPool") == 0;
        maxpools += strcmp(n->op_type, "MaxPool") == 0;
        avg += strcmp(n->op_type, "BlockedAveragePool") == 0;
        gavg += strcmp(n->op_type, "BlockedGlobalAveragePool") == 0;
    }
    if (!have_blocked()) {
        fprintf(stderr, "test_layout_graph: no blocked convolution here (POPRT_ISA=scalar): the "
                        "layout pass leaves the graph as it is; checking that\n");
        ck_assert_int_eq(pools + avg + gavg, 0);
        ck_assert_int_eq(maxpools, 1);
        poprt__model_free(m);
        return;
    }
    ck_assert_int_eq(pools, 1);
    ck_assert_int_eq(maxpools, 0);
    ck_assert_int_eq(avg, 1);
    ck_assert_int_eq(gavg, 2); /* q and ht */
    /* writers: y5 is a graph output, v is 1 x 1 */
    ck_assert_int_eq(written_blocked(g, "a0"), 1);
    ck_assert_int_eq(written_blocked(g, "a"), 1);
    ck_assert_int_eq(written_blocked(g, "ad"), 1);
    ck_assert_int_eq(written_blocked(g, "p"), 1);
    ck_assert_int_eq(written_blocked(g, "e1"), 1);
    ck_assert_int_eq(written_blocked(g, "e3"), 1);
    ck_assert_int_eq(written_blocked(g, "z"), 1);
    ck_assert_int_eq(written_blocked(g, "q"), 1);
    ck_assert_int_eq(written_blocked(g, "y5"), 0);
    ck_assert_int_eq(read_blocked(g, "v"), 0);
    /* readers */
    ck_assert_int_eq(read_blocked(g, "s"), 0);
    ck_assert_int_eq(read_blocked(g, "a0"), 1);
    ck_assert_int_eq(read_blocked(g, "a"), 1);
    ck_assert_int_eq(read_blocked(g, "p"), 1);
    ck_assert_int_eq(read_blocked(g, "cat2"), 1); /* through the Split and Concat */
    ck_assert_int_eq(read_blocked(g, "zd"), 1);
    /* the squeeze-excitation branch: blocked from h to hz, two
     * FusedElementwise nodes in NCHW16c (the Mul alone, Sub + Add) */
    ck_assert_int_eq(written_blocked(g, "h") == 1 || written_blocked(g, "ht") == 1, 1);
    ck_assert_int_eq(written_blocked(g, "hc"), 1);
    ck_assert_int_eq(read_blocked(g, "hm"), 1);
    ck_assert_int_eq(read_blocked(g, "hz"), 1); /* the grouped conv */
    ck_assert_int_eq(written_blocked(g, "hgr"), 1);
    ck_assert_int_eq(read_blocked(g, "hgr"), 1);
    ck_assert_int_eq(written_blocked(g, "y7"), 0);
    int ew_blocked = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        if (strcmp(n->op_type, "FusedElementwise") == 0)
            ew_blocked += strcmp(poprt__attr_s(n, "layout", "NCHW"), "NCHW16c") == 0;
        ck_assert_msg(strcmp(n->op_type, "Mul") && strcmp(n->op_type, "Sub"),
                      "node %s (%s) left", n->name, n->op_type);
    }
    ck_assert_int_eq(ew_blocked, 2);
    poprt__model_free(m);

    /* a Concat reader that cannot take the layout keeps its producers in
     * NCHW: the same graph with e1 also a graph output */
    m = layout_model();
    tb_output(m, "e1");
    infer(m);
    ck_assert_int_eq(poprt__compile_optimize(m, 0, &any), POPRT_OK);
    ck_assert_int_eq(written_blocked(m->graph, "e1"), 0);
    ck_assert_int_eq(written_blocked(m->graph, "e3"), 0);
    ck_assert_int_eq(read_blocked(m->graph, "cat2"), 0); /* the Split passes NCHW on */
    ck_assert_int_eq(written_blocked(m->graph, "p"), 1);
    poprt__model_free(m);

    /* a depthwise convolution's X and Y share a layout: with ad also a
     * graph output, a (its X) is NCHW too; a0 before them keeps NCHW16c */
    m = layout_model();
    tb_output(m, "ad");
    infer(m);
    ck_assert_int_eq(poprt__compile_optimize(m, 0, &any), POPRT_OK);
    ck_assert_int_eq(written_blocked(m->graph, "ad"), 0);
    ck_assert_int_eq(read_blocked(m->graph, "a"), 0);
    ck_assert_int_eq(written_blocked(m->graph, "a"), 0);
    ck_assert_int_eq(written_blocked(m->graph, "a0"), 1);
    poprt__model_free(m);
}
END_TEST

/*  x[1,24,10,w] -> Conv 1x1 -> a [16] -> Relu -> ar -> depthwise Conv 3x3 ->
 *  d [16] -> Conv k x k -> y [24] (graph output). With k = 1 and rows of
 *  w >= 16 no dense convolution with taps reads or writes a 16-channel
 *  tensor, nor a depthwise one on narrow rows: a, ar and d stay NCHW
 *  (lib/compiler/layout.c, drop_unpaid: both 1x1 convolutions then run as
 *  GEMMs without conversions). With k = 3, or rows narrower than 16 (the
 *  depthwise convolution's small planes), the set is NCHW16c. */
static int unpaid_blocked(int k, int64_t w)
{
    poprt__model *m = tb_model(17);
    int64_t xd[] = {1, 24, 10, w};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    weights(m, "Wa", 16, 24, 1, 21u);
    weights(m, "Wd", 16, 1, 3, 22u);
    weights(m, "Wy", 24, 16, k, 23u);
    conv(m, "x", "Wa", "a", 1, 1);
    tb_node(m, "Relu", 1, (const char *[]){"a"}, 1, (const char *[]){"ar"});
    poprt__node *dw = conv(m, "ar", "Wd", "d", 3, 1);
    poprt__attr *grp = poprt__node_add_attr(dw, "group", POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(grp);
    grp->i = 16;
    conv(m, "d", "Wy", "y", k, 1);
    tb_output(m, "y");
    infer(m);
    int any = 0;
    ck_assert_int_eq(poprt__compile_optimize(m, 0, &any), POPRT_OK);
    const int blk = read_blocked(m->graph, "d");
    /* the set changes layout as one */
    ck_assert_int_eq(read_blocked(m->graph, "ar") == 1 || read_blocked(m->graph, "a") == 1, blk);
    ck_assert_int_eq(written_blocked(m->graph, "y"), 0);
    poprt__model_free(m);
    return blk;
}

START_TEST(test_layout_unpaid)
{
    ck_assert_int_eq(unpaid_blocked(1, 16), 0);
    ck_assert_int_eq(unpaid_blocked(1, 15), have_blocked());
    ck_assert_int_eq(unpaid_blocked(3, 16), have_blocked());
    ck_assert_int_eq(unpaid_blocked(3, 10), have_blocked());
}
END_TEST

/* The model's outputs y5 [48,3,3], g [16], u [16] and y7 [16,6,6], one after
 * another in out. */
#define LAYOUT_OUT (48 * 9 + 16 + 16 + 16 * 36)
static void layout_run(poprt_session *s, float *out)
{
    static float x[3 * 23 * 23];
    uint32_t st = 11u;
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = frand(&st);
    int64_t xd[] = {1, 3, 23, 23};
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "s", POPRT_DTYPE_FLOAT, xd, 4, x, sizeof x),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y5", out, 48 * 9 * sizeof(float)), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "g", out + 48 * 9, 16 * sizeof(float)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "u", out + 48 * 9 + 16, 16 * sizeof(float)),
                     POPRT_OK);
    ck_assert_int_eq(
        poprt_stepio_set_output(io, "y7", out + 48 * 9 + 32, 16 * 36 * sizeof(float)), POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    poprt_stepio_free(io);
}

START_TEST(test_layout_session)
{
    static float ref[LAYOUT_OUT], got[LAYOUT_OUT], again[LAYOUT_OUT];
    poprt_model *pm;
    ck_assert_int_eq(tb_load(layout_model(), &pm), POPRT_OK);
    poprt_options *o0, *o2;
    ck_assert_int_eq(poprt_options_create(&o0), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o0, "optimize", "0"), POPRT_OK);
    ck_assert_int_eq(poprt_options_create(&o2), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o2, "threads", "2"), POPRT_OK);
    poprt_session *s0, *s1, *s2, *s3;
    ck_assert_int_eq(poprt_session_create(pm, o0, &s0), POPRT_OK);
    ck_assert_int_eq(poprt_session_create(pm, NULL, &s1), POPRT_OK);
    ck_assert_int_eq(poprt_session_create(pm, o2, &s3), POPRT_OK);
    layout_run(s0, ref);
    layout_run(s1, got);
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++)
        ck_assert_msg(fabs(got[i] - ref[i]) <= 1e-5 * fabs(ref[i]) + 1e-6,
                      "element %zu: optimised %.7g, plain %.7g", i, got[i], ref[i]);
    /* the same with 2 threads: bit-identical */
    layout_run(s3, again);
    ck_assert_int_eq(memcmp(got, again, sizeof got), 0);
    /* and through an executable file */
    char path[] = "/tmp/poprt-test-layout-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(poprt_session_export(s1, path), POPRT_OK);
    ck_assert_int_eq(poprt_session_load(path, NULL, &s2), POPRT_OK);
    memset(again, 0, sizeof again);
    layout_run(s2, again);
    ck_assert_int_eq(memcmp(got, again, sizeof got), 0);
    unlink(path);
    poprt_session_free(s0);
    poprt_session_free(s1);
    poprt_session_free(s2);
    poprt_session_free(s3);
    poprt_options_free(o0);
    poprt_options_free(o2);
    poprt_model_free(pm);
}
END_TEST

/* NCHW <-> NCHW16c for one image of C channels and HW positions. */
static void to_blocked(const float *x, int64_t C, int64_t HW, float *xb)
{
    for (int64_t c = 0; c < C; c++)
        for (int64_t q = 0; q < HW; q++)
            xb[((c / 16) * HW + q) * 16 + c % 16] = x[c * HW + q];
}

static void from_blocked(const float *xb, int64_t C, int64_t HW, float *x)
{
    for (int64_t c = 0; c < C; c++)
        for (int64_t q = 0; q < HW; q++)
            x[c * HW + q] = xb[((c / 16) * HW + q) * 16 + c % 16];
}

typedef struct pool_case {
    int64_t C, H, W, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int ceil;
} pool_case;

static const pool_case pool_cases[] = {
    /* C   H   W  kh kw sh sw dh dw pt pl pb pr ceil */
    {32, 13, 13, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1}, /* squeezenet, ceil_mode */
    {16, 12, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0}, /* resnet's, padded */
    {48, 9, 10, 2, 3, 1, 2, 2, 1, 0, 1, 1, 0, 0},  /* dilation, strides and pads differ */
    {16, 1, 7, 1, 4, 1, 3, 1, 1, 0, 2, 0, 2, 1},   /* one row */
};

/* One model: pool `op` (ai.poprt's when it starts with "Blocked") over x
 * with the window of case c, none for the global pools; count_include_pad
 * set when include_pad >= 0. Opset 19, for AveragePool's dilations. */
static poprt_model *pool_model(const pool_case *c, const char *op, int include_pad)
{
    poprt__model *m = tb_model(19);
    int64_t xd[] = {1, c->C, c->H, c->W};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, xd);
    poprt__node *n = tb_node(m, op, 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    if (strncmp(op, "Blocked", 7) == 0) {
        n->domain = "ai.poprt";
        ck_assert_int_eq(poprt__model_ensure_opset(m, "ai.poprt", 1), POPRT_OK);
    }
    if (!strstr(op, "Global")) {
        ints(m, n, "kernel_shape", 2, (int64_t[]){c->kh, c->kw});
        ints(m, n, "strides", 2, (int64_t[]){c->sh, c->sw});
        ints(m, n, "dilations", 2, (int64_t[]){c->dh, c->dw});
        ints(m, n, "pads", 4, (int64_t[]){c->pt, c->pl, c->pb, c->pr});
        poprt__attr *a = poprt__node_add_attr(n, "ceil_mode", POPRT__ATTR_INT);
        ck_assert_ptr_nonnull(a);
        a->i = c->ceil;
        if (include_pad >= 0) {
            a = poprt__node_add_attr(n, "count_include_pad", POPRT__ATTR_INT);
            ck_assert_ptr_nonnull(a);
            a->i = include_pad;
        }
    }
    tb_output(m, "y");
    poprt_model *pm;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_OK);
    return pm;
}

/* Runs model pm on x; writes y and its shape's spatial size. */
static int64_t pool_run(poprt_model *pm, const pool_case *c, const float *x, float *y,
                        size_t cap)
{
    poprt_options *o;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "optimize", "0"), POPRT_OK);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(pm, o, &s), POPRT_OK);
    poprt_stepio *io;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    int64_t xd[] = {1, c->C, c->H, c->W};
    ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 4, x,
                                            sizeof(float) * (size_t)(c->C * c->H * c->W)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, cap), POPRT_OK);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    poprt_dtype dt;
    int rank;
    const int64_t *dims;
    const void *data;
    size_t nbytes;
    ck_assert_int_eq(poprt_stepio_output(io, "y", &dt, &dims, &rank, &data, &nbytes), POPRT_OK);
    ck_assert_int_eq(rank, 4);
    const int64_t ohw = dims[2] * dims[3];
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_options_free(o);
    return ohw;
}

/* Runs `plain` on x and `blk` on x's NCHW16c copy (case c) and checks
 * that their outputs agree bit for bit (a NaN matching a NaN); frees both
 * models. */
static void check_blocked_pool(poprt_model *plain, poprt_model *blk, const pool_case *c,
                               const float *x, int case_no)
{
    const int64_t HW = c->H * c->W;
    const size_t cap = sizeof(float) * (size_t)(c->C * 4 * HW);
    float *xb = malloc(sizeof(float) * (size_t)(c->C * HW));
    float *y = malloc(cap), *yb = malloc(cap), *yu = malloc(cap);
    ck_assert(xb && y && yb && yu);
    to_blocked(x, c->C, HW, xb);
    const int64_t ohw = pool_run(plain, c, x, y, cap);
    ck_assert_int_eq(pool_run(blk, c, xb, yb, cap), ohw);
    from_blocked(yb, c->C, ohw, yu);
    for (int64_t i = 0; i < c->C * ohw; i++)
        ck_assert_msg(memcmp(&y[i], &yu[i], sizeof(float)) == 0 || (isnan(y[i]) && isnan(yu[i])),
                      "case %d element %lld: plain %.9g, blocked %.9g", case_no, (long long)i,
                      y[i], yu[i]);
    poprt_model_free(plain);
    poprt_model_free(blk);
    free(xb);
    free(y);
    free(yb);
    free(yu);
}

START_TEST(test_blocked_maxpool)
{
    const pool_case *c = &pool_cases[_i];
    const int64_t n = c->C * c->H * c->W;
    float *x = malloc(sizeof(float) * (size_t)n);
    ck_assert_ptr_nonnull(x);
    uint32_t s = 7u + (uint32_t)_i;
    for (int64_t i = 0; i < n; i++)
        x[i] = frand(&s);
    /* NaNs first in some windows and later in others, and -inf */
    for (int64_t i = 0; i < n; i += 37)
        x[i] = NAN;
    for (int64_t i = 5; i < n; i += 41)
        x[i] = -INFINITY;
    check_blocked_pool(pool_model(c, "MaxPool", -1), pool_model(c, "BlockedMaxPool", -1), c, x,
                       _i);
    free(x);
}
END_TEST

/* Global cases: positions a multiple of 8, not one, fewer than 8. */
static const pool_case gavg_cases[] = {
    {32, 7, 7}, {48, 4, 4}, {16, 1, 5}, {64, 13, 11},
};

/* Case _i: the pool_cases windows with count_include_pad 0 and 1, then the
 * global cases; values of magnitudes 2^-20 .. 2^20 so that the order of
 * the sums shows in the last bits. */
START_TEST(test_blocked_averagepool)
{
    const int n_win = 2 * (int)(sizeof pool_cases / sizeof pool_cases[0]);
    const int global = _i >= n_win;
    const pool_case *c = global ? &gavg_cases[_i - n_win] : &pool_cases[_i / 2];
    const int include_pad = !global && _i % 2;
    const int64_t n = c->C * c->H * c->W;
    float *x = malloc(sizeof(float) * (size_t)n);
    ck_assert_ptr_nonnull(x);
    uint32_t s = 101u + (uint32_t)_i;
    for (int64_t i = 0; i < n; i++)
        x[i] = ldexpf(frand(&s), (int)(frand(&s) * 20.0f));
    check_blocked_pool(
        pool_model(c, global ? "GlobalAveragePool" : "AveragePool", include_pad),
        pool_model(c, global ? "BlockedGlobalAveragePool" : "BlockedAveragePool", include_pad), c,
        x, _i);
    free(x);
}
END_TEST

/* s [1,16,h,h] -> Conv 3x3 -> c [32] -> MaxPool 2x2 -> p [32,h/2,h/2] ->
 * BatchNormalization (its own node: no Conv before it takes it) -> Relu
 * -> Conv 1x1 -> y [16,h/2,h/2] (DenseNet's and pre-activation ResNets'
 * order). The compiled graph has no BatchNormalization: a FusedElementwise
 * (per-channel scale and shift, then Relu) in NCHW16c between the blocked
 * pool and convolution; the outputs equal the unoptimised session's. */
static poprt__model *bn_model(int64_t h)
{
    poprt__model *m = tb_model(15);
    int64_t sd[] = {1, 16, h, h}, cd[] = {32};
    tb_input(m, "s", POPRT_DTYPE_FLOAT, 4, sd);
    weights(m, "Wc", 32, 16, 3, 21u);
    weights(m, "Wy", 16, 32, 1, 22u);
    float gamma[32], beta[32], mean[32], var[32];
    uint32_t seed = 23u;
    for (int i = 0; i < 32; i++) {
        gamma[i] = 1.0f + 0.5f * frand(&seed);
        beta[i] = frand(&seed);
        mean[i] = 0.3f * frand(&seed);
        var[i] = 1.0f + 0.5f * frand(&seed);
    }
    tb_const(m, "gamma", POPRT_DTYPE_FLOAT, 1, cd, gamma);
    tb_const(m, "beta", POPRT_DTYPE_FLOAT, 1, cd, beta);
    tb_const(m, "mean", POPRT_DTYPE_FLOAT, 1, cd, mean);
    tb_const(m, "var", POPRT_DTYPE_FLOAT, 1, cd, var);
    conv(m, "s", "Wc", "c", 3, 1);
    poprt__node *mp = tb_node(m, "MaxPool", 1, (const char *[]){"c"}, 1, (const char *[]){"p"});
    ints(m, mp, "kernel_shape", 2, (int64_t[]){2, 2});
    ints(m, mp, "strides", 2, (int64_t[]){2, 2});
    tb_node(m, "BatchNormalization", 5, (const char *[]){"p", "gamma", "beta", "mean", "var"}, 1,
            (const char *[]){"bn"});
    tb_node(m, "Relu", 1, (const char *[]){"bn"}, 1, (const char *[]){"r"});
    conv(m, "r", "Wy", "y", 1, 1);
    tb_output(m, "y");
    return m;
}

/* The optimised session against the unoptimised one, on threads: with h
 * = 75 the FusedElementwise's 32 x 37 x 37 values split over the threads
 * at offsets that are no multiple of 16 (its per-channel operands then
 * start mid-block). */
static void bn_compare(int64_t h, const char *threads)
{
    poprt_model *pm;
    ck_assert_int_eq(tb_load(bn_model(h), &pm), POPRT_OK);
    poprt_options *o0, *o1;
    ck_assert_int_eq(poprt_options_create(&o0), POPRT_OK);
    ck_assert_int_eq(poprt_options_create(&o1), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o0, "optimize", "0"), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o1, "threads", threads), POPRT_OK);
    poprt_session *s0, *s1;
    ck_assert_int_eq(poprt_session_create(pm, o0, &s0), POPRT_OK);
    ck_assert_int_eq(poprt_session_create(pm, o1, &s1), POPRT_OK);
    const int64_t q = h / 2, nx = 16 * h * h, ny = 16 * q * q;
    float *x = malloc(sizeof(float) * (size_t)nx), *ref = malloc(sizeof(float) * (size_t)ny),
          *got = malloc(sizeof(float) * (size_t)ny);
    ck_assert(x && ref && got);
    uint32_t st = 5u;
    for (int64_t i = 0; i < nx; i++)
        x[i] = frand(&st);
    int64_t xd[] = {1, 16, h, h};
    poprt_session *ss[2] = {s0, s1};
    float *outs[2] = {ref, got};
    for (int k = 0; k < 2; k++) {
        poprt_stepio *io;
        ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_input(io, "s", POPRT_DTYPE_FLOAT, xd, 4, x,
                                                sizeof(float) * (size_t)nx),
                         POPRT_OK);
        ck_assert_int_eq(poprt_stepio_set_output(io, "y", outs[k], sizeof(float) * (size_t)ny),
                         POPRT_OK);
        ck_assert_int_eq(poprt_session_run(ss[k], io), POPRT_OK);
        poprt_stepio_free(io);
    }
    for (int64_t i = 0; i < ny; i++)
        ck_assert_msg(fabs(got[i] - ref[i]) <= 1e-5 * fabs(ref[i]) + 1e-5,
                      "h %lld, element %lld: optimised %.7g, plain %.7g", (long long)h,
                      (long long)i, got[i], ref[i]);
    free(x);
    free(ref);
    free(got);
    poprt_session_free(s0);
    poprt_session_free(s1);
    poprt_options_free(o0);
    poprt_options_free(o1);
    poprt_model_free(pm);
}

START_TEST(test_layout_batchnorm)
{
    poprt__model *m = bn_model(9);
    infer(m);
    int any = 0;
    ck_assert_int_eq(poprt__compile_optimize(m, 0, &any), POPRT_OK);
    const poprt__graph *g = m->graph;
    int bn = 0, ew = 0, ew_blocked = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        bn += strcmp(n->op_type, "BatchNormalization") == 0;
        if (strcmp(n->op_type, "FusedElementwise") == 0) {
            ew++;
            ew_blocked += strcmp(poprt__attr_s(n, "layout", "NCHW"), "NCHW16c") == 0;
        }
    }
    ck_assert_int_eq(bn, 0);
    ck_assert_int_eq(ew, 1); /* scale, shift and Relu in one */
    if (have_blocked()) {
        ck_assert_int_eq(ew_blocked, 1);
        ck_assert_int_eq(read_blocked(g, "r"), 1);
    }
    poprt__model_free(m);
    bn_compare(9, "1");
    bn_compare(75, "3");
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("layout");
    TCase *tc = tcase_create("nchw16c");
    tcase_add_test(tc, test_layout_graph);
    tcase_add_test(tc, test_layout_session);
    tcase_add_test(tc, test_layout_unpaid);
    tcase_add_test(tc, test_layout_batchnorm);
    tcase_add_loop_test(tc, test_blocked_maxpool, 0,
                        (int)(sizeof pool_cases / sizeof pool_cases[0]));
    tcase_add_loop_test(tc, test_blocked_averagepool, 0,
                        (int)(2 * sizeof pool_cases / sizeof pool_cases[0] +
                              sizeof gavg_cases / sizeof gavg_cases[0]));
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
