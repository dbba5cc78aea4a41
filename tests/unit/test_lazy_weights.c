/* Unit tests: weights stored unaligned in a model file (raw_data, which no
 * exporter aligns) are read in place and copied aligned only when something
 * reads them typed (poprt__tensor_data, lib/ir/ir.c); a session keeps a
 * weight its kernels hold packed (poprt__prep_ctx.consumed) without any
 * copy, and a kernel that needs it unpacked after all reads it through
 * poprt__kctx_in_data. Results against direct loops within 1e-4 relative
 * (float32 sums of 64 products). */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "builder.h"
#include "passes/rewrite.h"
#include "compiler/program.h"
#include "kernels/kernel.h"
#include "kernels/ref/conv.h"
#include "kernels/ref/poprt_fused.h"
#include "kernels/x86/conv.h"
#include "kernels/x86/attention.h"
#include "kernels/x86/gemm_ops.h"
#include "runtime/runtime.h"

#define OK(call) ck_assert_msg((call) == POPRT_OK, "%s: %s", #call, poprt_last_error())

/* y = x W + b: x [R, K], W [K, N] (24 KiB: above the loader's copy-now size) */
#define R 5
#define K 64
#define N 96

static float X[R * K], W[K * N], B[N];

static void fill(void)
{
    for (int i = 0; i < R * K; i++)
        X[i] = (float)((i * 7) % 19) / 9.0f - 1.0f;
    for (int i = 0; i < K * N; i++)
        W[i] = (float)((i * 11) % 23) / 11.0f - 1.0f;
    for (int i = 0; i < N; i++)
        B[i] = (float)i / 32.0f - 1.0f;
}

static void expected(const float *w, float *y)
{
    for (int r = 0; r < R; r++)
        for (int j = 0; j < N; j++) {
            double s = B[j];
            for (int i = 0; i < K; i++)
                s += (double)X[r * K + i] * w[i * N + j];
            y[r * N + j] = (float)s;
        }
}

static void check_close(const float *got, const float *want, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(got[i] - want[i]) <= 1e-4f * (1 + fabsf(want[i])),
                      "element %zu: %g, expected %g", i, got[i], want[i]);
}

static poprt__tensor *find(poprt__model *m, const char *name)
{
    poprt__tensor *t = poprt__graph_find(m->graph, name);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* The model with W named so that its raw_data lies unaligned once loaded
 * (the name's length moves it); *wname gets that name. */
static poprt_model *unaligned_model(const char **wname)
{
    static const char *names[] = {"W", "Wa", "Wab", "Wabc"};
    fill();
    for (int k = 0; k < 4; k++) {
        poprt__model *m = tb_model(17);
        tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){R, K});
        tb_const(m, names[k], POPRT_DTYPE_FLOAT, 2, (const int64_t[]){K, N}, W);
        tb_const(m, "b", POPRT_DTYPE_FLOAT, 1, (const int64_t[]){N}, B);
        tb_node(m, "MatMul", 2, (const char *[]){"x", names[k]}, 1, (const char *[]){"xw"});
        tb_node(m, "Add", 2, (const char *[]){"xw", "b"}, 1, (const char *[]){"y"});
        tb_output(m, "y");
        poprt_model *pm;
        OK(tb_load(m, &pm));
        const poprt__tensor *t = find(pm->m, names[k]);
        if ((uintptr_t)t->raw % 4) {
            *wname = names[k];
            return pm;
        }
        poprt_model_free(pm);
    }
    ck_abort_msg("no name put W's raw_data unaligned");
    return NULL;
}

static void run(poprt_session *s, float *y)
{
    poprt_stepio *io;
    OK(poprt_stepio_create(&io));
    OK(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, (const int64_t[]){R, K}, 2, X, sizeof X));
    OK(poprt_stepio_set_output(io, "y", y, R * N * sizeof *y));
    OK(poprt_session_run(s, io));
    poprt_stepio_free(io);
}

/* s exported as an executable file and loaded again (the file unlinked:
 * the loaded session keeps its mapping). */
static poprt_session *export_and_load(const poprt_session *s)
{
    char path[] = "/tmp/poprt_lazy_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    OK(poprt_session_export(s, path));
    poprt_session *ls;
    OK(poprt_session_load(path, NULL, &ls));
    unlink(path);
    return ls;
}

START_TEST(test_load_reads_in_place)
{
    const char *wn;
    poprt_model *pm = unaligned_model(&wn);
    const poprt__tensor *t = find(pm->m, wn);
    ck_assert(poprt__tensor_data_lazy(t));
    ck_assert_ptr_null(t->aligned);
    ck_assert_int_eq(memcmp(t->raw, W, sizeof W), 0); /* the file's bytes, in place */
    /* the small bias was copied aligned at once */
    const poprt__tensor *b = find(pm->m, "b");
    ck_assert_int_eq((uintptr_t)b->raw % 4, 0);
    ck_assert_ptr_eq(poprt__tensor_data(b), b->raw);
    /* the first typed read copies, later ones reuse the copy */
    const float *d = poprt__tensor_data(t);
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq((uintptr_t)d % 4, 0);
    ck_assert_int_eq(memcmp(d, W, sizeof W), 0);
    ck_assert_ptr_eq(poprt__tensor_data(t), d);
    ck_assert(!poprt__tensor_data_lazy(t));
    /* a save writes the bytes as loaded */
    void *buf;
    size_t size;
    OK(poprt_model_serialize(pm, &buf, &size));
    poprt_model *again;
    OK(poprt_model_load_from_memory(buf, size, NULL, &again));
    poprt_buffer_free(buf);
    ck_assert_int_eq(memcmp(poprt__tensor_data(find(again->m, wn)), W, sizeof W), 0);
    poprt_model_free(again);
    poprt_model_free(pm);
}
END_TEST

typedef struct reader {
    const poprt__tensor *t;
    pthread_barrier_t *go;
    const void *got;
} reader;

static void *read_typed(void *arg)
{
    reader *r = arg;
    pthread_barrier_wait(r->go);
    r->got = poprt__tensor_data(r->t);
    return NULL;
}

/* Threads sharing a const model (saves, session creates) may make the first
 * typed read at once: one copy, the same pointer for all. */
START_TEST(test_first_reads_at_once)
{
    const char *wn;
    poprt_model *pm = unaligned_model(&wn);
    const poprt__tensor *t = find(pm->m, wn);
    enum { T = 4 };
    pthread_t th[T];
    reader r[T];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, T);
    size_t blobs = pm->m->blobs.len;
    for (int i = 0; i < T; i++) {
        r[i] = (reader){t, &go, NULL};
        ck_assert_int_eq(pthread_create(&th[i], NULL, read_typed, &r[i]), 0);
    }
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&go);
    for (int i = 0; i < T; i++)
        ck_assert_ptr_eq(r[i].got, r[0].got);
    ck_assert_uint_eq(pm->m->blobs.len, blobs + 1); /* one copy */
    ck_assert_int_eq(memcmp(r[0].got, W, sizeof W), 0);
    poprt_model_free(pm);
}
END_TEST

/* A clone shares the file's bytes and an aligned copy made before it. */
START_TEST(test_clone_shares)
{
    const char *wn;
    poprt_model *pm = unaligned_model(&wn);
    const poprt__tensor *t = find(pm->m, wn);
    poprt__model *c1, *c2;
    OK(poprt__model_clone(pm->m, &c1));
    ck_assert_ptr_eq(find(c1, wn)->raw, t->raw);
    ck_assert_ptr_null(find(c1, wn)->aligned);
    const void *d = poprt__tensor_data(t);
    OK(poprt__model_clone(pm->m, &c2));
    ck_assert_ptr_eq(poprt__tensor_data(find(c2, wn)), d);
    poprt_model_free(pm); /* the clones keep what they share */
    ck_assert_int_eq(memcmp(poprt__tensor_data(find(c1, wn)), W, sizeof W), 0);
    ck_assert_int_eq(memcmp(poprt__tensor_data(find(c2, wn)), W, sizeof W), 0);
    poprt__model_free(c1);
    poprt__model_free(c2);
}
END_TEST

/* The session packs W without copying it, in the caller's model or its own;
 * runs, weight reads, writes and resets, and an executable file of the
 * session, all see W's values. */
START_TEST(test_session_packs_in_place)
{
    const char *wn;
    poprt_model *pm = unaligned_model(&wn);
    poprt_session *s;
    OK(poprt_session_create(pm, NULL, &s));
    ck_assert_ptr_null(find(pm->m, wn)->aligned);
    poprt__tensor *st = find(s->m, wn);
    ck_assert(st->prepared_only);
    ck_assert(poprt__tensor_data_lazy(st));
    float y[R * N], want[R * N];
    expected(W, want);
    run(s, y);
    check_close(y, want, R * N);
    ck_assert(poprt__tensor_data_lazy(st)); /* the runs did not copy it either */
    ck_assert(!find(s->m, "b")->prepared_only); /* Add reads the bias as it is */
    ck_assert(!find(s->m, "b")->bytes_only);    /* and typed */
    /* weights: read, write, reset */
    static float w2[K * N], got[K * N];
    OK(poprt_session_read_weight(s, wn, got, sizeof got));
    ck_assert_int_eq(memcmp(got, W, sizeof W), 0);
    for (int i = 0; i < K * N; i++)
        w2[i] = -W[i] * 0.5f;
    OK(poprt_session_write_weight(s, wn, w2, sizeof w2));
    expected(w2, want);
    run(s, y);
    check_close(y, want, R * N);
    OK(poprt_session_reset_weights(s, wn));
    expected(W, want);
    run(s, y);
    check_close(y, want, R * N);
    /* an executable file of it */
    poprt_session *ls = export_and_load(s);
    run(ls, y);
    check_close(y, want, R * N);
    poprt_session_free(ls);
    poprt_model_free(pm); /* the session keeps the file's bytes it reads */
    run(s, y);
    check_close(y, want, R * N);
    poprt_session_free(s);
}
END_TEST

/* Conv likewise (its filters packed by the blocked, direct or GEMM paths):
 * Y = Conv(X, Wc) for X [1, C, 9, 9], a 3x3 window with pads 1; groups G
 * (1, or C: depthwise), against a direct loop. The filters (>= 16 KiB) are
 * stored unaligned in the model. */
/* X [1, C, 9, 9] and W [M, C / G, 3, 3] filled, Y and the expected Y
 * allocated (free all four). */
static void conv_data(int64_t C, int64_t M, int64_t G, float **x, float **w, float **y,
                      float **want)
{
    const int64_t S = 9, wn = M * (C / G) * 9;
    *x = malloc(sizeof(float) * (size_t)(C * S * S));
    *w = malloc(sizeof(float) * (size_t)wn);
    *y = malloc(sizeof(float) * (size_t)(M * S * S));
    *want = malloc(sizeof(float) * (size_t)(M * S * S));
    ck_assert(*x && *w && *y && *want);
    for (int64_t i = 0; i < C * S * S; i++)
        (*x)[i] = (float)((i * 5) % 17) / 8.0f - 1.0f;
    for (int64_t i = 0; i < wn; i++)
        (*w)[i] = (float)((i * 13) % 29) / 14.0f - 1.0f;
}

static void conv_case(int64_t C, int64_t M, int64_t G)
{
    const int64_t S = 9, Cg = C / G, Mg = M / G;
    float *x, *w, *y, *want;
    conv_data(C, M, G, &x, &w, &y, &want);
    for (int64_t m = 0; m < M; m++)
        for (int64_t oy = 0; oy < S; oy++)
            for (int64_t ox = 0; ox < S; ox++) {
                double acc = 0;
                const int64_t gi = m / Mg;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t ky = 0; ky < 3; ky++)
                        for (int64_t kx = 0; kx < 3; kx++) {
                            int64_t iy = oy + ky - 1, ix = ox + kx - 1;
                            if (iy >= 0 && iy < S && ix >= 0 && ix < S)
                                acc += (double)x[((gi * Cg + c) * S + iy) * S + ix] *
                                       w[((m * Cg + c) * 3 + ky) * 3 + kx];
                        }
                want[(m * S + oy) * S + ox] = (float)acc;
            }
    static const char *names[] = {"F", "Fa", "Fab", "Fabc"};
    poprt_model *pm = NULL;
    const char *fn = NULL;
    for (int k = 0; k < 4 && !pm; k++) {
        poprt__model *m = tb_model(17);
        tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, (const int64_t[]){1, C, S, S});
        tb_const(m, names[k], POPRT_DTYPE_FLOAT, 4, (const int64_t[]){M, Cg, 3, 3}, w);
        poprt__node *n = tb_node(m, "Conv", 2, (const char *[]){"x", names[k]}, 1,
                                 (const char *[]){"y"});
        OK(poprt__rw_attr_ints(n, "pads", 4, (const int64_t[]){1, 1, 1, 1}));
        OK(poprt__rw_attr_i(n, "group", G));
        tb_output(m, "y");
        OK(tb_load(m, &pm));
        fn = names[k];
        if (!((uintptr_t)find(pm->m, fn)->raw % 4)) {
            poprt_model_free(pm);
            pm = NULL;
        }
    }
    ck_assert_ptr_nonnull(pm);
    poprt_session *s;
    OK(poprt_session_create(pm, NULL, &s));
    poprt_stepio *io;
    OK(poprt_stepio_create(&io));
    OK(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, (const int64_t[]){1, C, S, S}, 4, x,
                              sizeof(float) * (size_t)(C * S * S)));
    OK(poprt_stepio_set_output(io, "y", y, sizeof(float) * (size_t)(M * S * S)));
    OK(poprt_session_run(s, io));
    check_close(y, want, (size_t)(M * S * S));
    OK(poprt_session_run(s, io)); /* a second run: the weight as the first left it */
    check_close(y, want, (size_t)(M * S * S));
    const poprt__tensor *st = find(s->m, fn);
    if (G == 1) { /* packed: never copied */
        ck_assert(st->prepared_only);
        ck_assert(poprt__tensor_data_lazy(st));
    }
    ck_assert(poprt__tensor_data_lazy(find(pm->m, fn)));
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_model_free(pm);
    free(x);
    free(w);
    free(y);
    free(want);
}

/* The scratch memory kernel calls on ex took. */
static void free_scratch(struct poprt__exec *ex)
{
    while (ex->scratch) {
        poprt__scratch_chunk *s = ex->scratch;
        ex->scratch = s->next;
        poprt__aligned_free(s);
    }
}

/* The x86 Conv kernel without prepared data (in a session: data packed for
 * another CPU) and W bound without its data: the plain paths read it
 * through poprt__kctx_in_data. */
static void conv_kernel_case(int64_t C, int64_t M, int64_t G)
{
    const int64_t S = 9, Cg = C / G, wn = M * Cg * 9;
    float *x, *w, *y, *want;
    conv_data(C, M, G, &x, &w, &y, &want);
    poprt__model *m = tb_model(17);
    const int64_t dx[4] = {1, C, S, S}, dw[4] = {M, Cg, 3, 3}, dy[4] = {1, M, S, S};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 4, dx);
    poprt__tensor *wt = tb_const(m, "F", POPRT_DTYPE_FLOAT, 4, dw, w);
    unsigned char *odd = poprt__arena_alloc(&m->arena, (size_t)wn * sizeof(float) + 1);
    memcpy(odd + 1, w, (size_t)wn * sizeof(float));
    poprt__tensor_set_data(wt, odd + 1);
    poprt__node *n = tb_node(m, "Conv", 2, (const char *[]){"x", "F"}, 1, (const char *[]){"y"});
    OK(poprt__rw_attr_ints(n, "pads", 4, (const int64_t[]){1, 1, 1, 1}));
    OK(poprt__rw_attr_i(n, "group", G));
    poprt__value v[3];
    memset(v, 0, sizeof v);
    const int64_t *dims[3] = {dx, dw, dy};
    void *data[3] = {x, NULL, want};
    for (int i = 0; i < 3; i++) {
        v[i].kind = POPRT__KIND_TENSOR;
        v[i].t.dtype = POPRT_DTYPE_FLOAT;
        v[i].t.rank = 4;
        memcpy(v[i].t.dims, dims[i], sizeof dx);
        v[i].t.numel = poprt__tval_numel(&v[i].t);
        v[i].t.nbytes = (size_t)v[i].t.numel * sizeof(float);
        v[i].t.data = data[i];
    }
    poprt__value *in[2] = {&v[0], &v[1]}, *out[1] = {&v[2]};
    struct poprt__exec ex;
    memset(&ex, 0, sizeof ex);
    poprt__kctx k = {.node = n, .opset = 17, .n_in = 2, .in = in, .n_out = 1, .out = out, .exec = &ex};
    /* the reference with W in hand, then the x86 kernel without it */
    v[1].t.data = w;
    ck_assert_msg(poprt__ref_conv(&k) == POPRT_OK, "%s", poprt_last_error());
    v[1].t.data = NULL;
    v[2].t.data = y;
    ck_assert_msg(poprt__x86_conv(&k) == POPRT_OK, "%s", poprt_last_error());
    check_close(y, want, (size_t)(M * S * S));
    ck_assert(!poprt__tensor_data_lazy(wt));
    free_scratch(&ex);
    poprt__model_free(m);
    free(x);
    free(w);
    free(y);
    free(want);
}

START_TEST(test_conv_kernel_reads_unpacked)
{
    conv_kernel_case(8, 64, 1);
    conv_kernel_case(512, 512, 512);
}
END_TEST

START_TEST(test_conv_packs_in_place)
{
    conv_case(8, 64, 1);    /* 18 KiB of filters */
    conv_case(512, 512, 512); /* depthwise, 18 KiB */
}
END_TEST

/* ---- kernels reading a weight bound without its data ------------------------- */

/* B as a session binds a weight only packed data reads: a value with data
 * NULL, the node's input the unaligned constant. */
typedef struct kfix {
    poprt__model *m;
    poprt__node *node;
    poprt__value vals[4], *in[3], *out[1];
    struct poprt__exec ex;
    poprt__kctx k;
    float y[R * N];
} kfix;

static void kfix_init(kfix *f, const char *op)
{
    memset(f, 0, sizeof *f);
    fill();
    f->m = tb_model(17);
    tb_input(f->m, "x", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){R, K});
    poprt__tensor *w = tb_const(f->m, "W", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){K, N}, W);
    tb_const(f->m, "b", POPRT_DTYPE_FLOAT, 1, (const int64_t[]){N}, B);
    /* W's bytes moved one byte off alignment, as in a mapped file */
    unsigned char *odd = poprt__arena_alloc(&f->m->arena, sizeof W + 1);
    memcpy(odd + 1, W, sizeof W);
    poprt__tensor_set_data(w, odd + 1);
    int gemm = !strcmp(op, "Gemm");
    f->node = tb_node(f->m, op, gemm ? 3 : 2, (const char *[]){"x", "W", "b"}, 1,
                      (const char *[]){"y"});
    const int64_t dx[2] = {R, K}, dw[2] = {K, N}, db[1] = {N}, dy[2] = {R, N};
    const int64_t *dims[4] = {dx, dw, db, dy};
    const int ranks[4] = {2, 2, 1, 2};
    void *data[4] = {X, NULL, B, f->y};
    for (int i = 0; i < 4; i++) {
        poprt__tval *t = &f->vals[i].t;
        f->vals[i].kind = POPRT__KIND_TENSOR;
        t->dtype = POPRT_DTYPE_FLOAT;
        t->rank = ranks[i];
        memcpy(t->dims, dims[i], sizeof(int64_t) * (size_t)ranks[i]);
        t->numel = poprt__tval_numel(t);
        t->nbytes = (size_t)t->numel * sizeof(float);
        t->data = data[i];
    }
    for (int i = 0; i < 3; i++)
        f->in[i] = &f->vals[i];
    f->out[0] = &f->vals[3];
    f->k = (poprt__kctx){.node = f->node, .opset = 17, .n_in = gemm ? 3 : 2, .in = f->in,
                         .n_out = 1, .out = f->out, .exec = &f->ex};
}

static void kfix_free(kfix *f)
{
    free_scratch(&f->ex);
    poprt__model_free(f->m);
}

/* No prepared data fits (none here; in a session: data packed for another
 * CPU), so the kernel reads B unpacked: copied aligned from the node's
 * input, kept in the value for the next runs. */
START_TEST(test_kernels_read_unpacked)
{
    static const char *ops[] = {"MatMul", "Gemm"};
    static const poprt__kernel_fn fns[] = {poprt__x86_matmul, poprt__x86_gemm};
    for (int o = 0; o < 2; o++) {
        kfix f;
        kfix_init(&f, ops[o]);
        const poprt__tensor *w = f.node->inputs[1];
        ck_assert(poprt__tensor_data_lazy(w));
        ck_assert_msg(fns[o](&f.k) == POPRT_OK, "%s: %s", ops[o], poprt_last_error());
        float want[R * N];
        expected(W, want);
        if (o == 0) /* MatMul has no bias */
            for (int r = 0; r < R; r++)
                for (int j = 0; j < N; j++)
                    want[r * N + j] -= B[j];
        check_close(f.y, want, R * N);
        ck_assert(!poprt__tensor_data_lazy(w));
        ck_assert_ptr_eq(f.vals[1].t.data, w->aligned);
        kfix_free(&f);
    }
}
END_TEST

/* FusedAttention's projection likewise: X [1, R, K] with W [K, 3 x 32] as
 * Wqkv, 2 heads, no bias or mask, Y [1, R, 32]; against the reference
 * kernel given W. */
START_TEST(test_fused_attention_reads_unpacked)
{
    kfix f;
    kfix_init(&f, "MatMul");
    f.node->op_type = "FusedAttention";
    f.node->domain = "ai.poprt";
    poprt__attr *a = poprt__node_add_attr(f.node, "num_heads", POPRT__ATTR_INT);
    ck_assert_ptr_nonnull(a);
    a->i = 2;
    for (int i = 0; i < 2; i++) { /* X and Y get a batch of one */
        poprt__tval *t = &f.vals[i ? 3 : 0].t;
        memmove(t->dims + 1, t->dims, 2 * sizeof *t->dims);
        t->dims[0] = 1;
        t->rank = 3;
    }
    poprt__tval *yt = &f.vals[3].t; /* Y [1, R, 32] */
    yt->dims[2] = N / 3;
    yt->numel = R * (N / 3);
    yt->nbytes = (size_t)yt->numel * sizeof(float);
    const poprt__tensor *w = f.node->inputs[1];
    ck_assert_msg(poprt__x86_fused_attention(&f.k) == POPRT_OK, "%s", poprt_last_error());
    ck_assert(!poprt__tensor_data_lazy(w));
    float got[R * N / 3];
    memcpy(got, f.y, sizeof got);
    f.vals[1].t.data = W; /* the reference, W in hand */
    ck_assert_msg(poprt__ref_poprt_fused_attention(&f.k) == POPRT_OK, "%s", poprt_last_error());
    check_close(got, f.y, R * N / 3);
    kfix_free(&f);
}
END_TEST

/* Builds a model with build(m, name, ctx) under table names of 1..4
 * letters until the loaded model's table `name` lies unaligned in the
 * file's bytes (its offset depends on the names before it), and returns
 * that model with the name in *name_out. */
typedef void (*table_model_fn)(poprt__model *m, const char *name, const void *ctx);
static poprt_model *load_unaligned_table(table_model_fn build, const void *ctx,
                                         const char **name_out)
{
    static const char *names[] = {"E", "Ea", "Eab", "Eabc"};
    for (int k = 0; k < 4; k++) {
        poprt__model *m = tb_model(17);
        build(m, names[k], ctx);
        poprt_model *pm;
        OK(tb_load(m, &pm));
        if ((uintptr_t)find(pm->m, names[k])->raw % 4) {
            *name_out = names[k];
            return pm;
        }
        poprt_model_free(pm);
    }
    ck_abort_msg("no name put the table's raw_data unaligned");
    return NULL;
}

enum { TV = 64, TD = 96 }; /* the tables' rows and columns */

static void gather_model(poprt__model *m, const char *name, const void *ctx)
{
    tb_input(m, "i", POPRT_DTYPE_INT64, 1, (const int64_t[]){5});
    tb_const(m, name, POPRT_DTYPE_FLOAT, 2, (const int64_t[]){TV, TD}, ctx);
    tb_node(m, "Gather", 2, (const char *[]){name, "i"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
}

/* A table only Gather reads (an embedding) stays where the file put it,
 * unaligned, and the runs copy its rows from there: the session's value is
 * the raw bytes, no aligned copy is made, and the rows come out exact. */
START_TEST(test_gather_reads_in_place)
{
    enum { V = TV, D = TD, NI = 5 };
    static float E[V * D];
    for (int i = 0; i < V * D; i++)
        E[i] = (float)((i * 13) % 31) / 7.0f - 2.0f;
    const char *en;
    poprt_model *pm = load_unaligned_table(gather_model, E, &en);
    poprt_session *s;
    OK(poprt_session_create(pm, NULL, &s));
    const poprt__tensor *st = find(s->m, en);
    ck_assert(st->bytes_only);
    const int64_t idx[NI] = {3, 0, 63, -1, 17};
    static float E2[V * D];
    for (int i = 0; i < V * D; i++)
        E2[i] = -0.5f * E[i];
    /* the file's table, a written one (an aligned copy), the file's again */
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 1)
            OK(poprt_session_write_weight(s, en, E2, sizeof E2));
        if (pass == 2)
            OK(poprt_session_reset_weights(s, en));
        const float *want = pass == 1 ? E2 : E;
        float y[NI * D];
        poprt_stepio *io;
        OK(poprt_stepio_create(&io));
        OK(poprt_stepio_set_input(io, "i", POPRT_DTYPE_INT64, (const int64_t[]){NI}, 1, idx,
                                  sizeof idx));
        OK(poprt_stepio_set_output(io, "y", y, sizeof y));
        OK(poprt_session_run(s, io));
        poprt_stepio_free(io);
        for (int j = 0; j < NI; j++) {
            const int64_t row = idx[j] < 0 ? idx[j] + V : idx[j];
            ck_assert_msg(memcmp(y + j * D, want + row * D, D * sizeof(float)) == 0,
                          "pass %d: row %d", pass, j);
        }
        if (pass != 1) /* no aligned copy was made of the file's table */
            ck_assert(poprt__tensor_data_lazy(st));
    }
    poprt_session_free(s);
    poprt_model_free(pm);
}
END_TEST

enum { BR_ROWS = 4 };
typedef struct byte_readers {
    const float *table;
    int typed; /* an Add reads the table too */
} byte_readers;

static void byte_readers_model(poprt__model *m, const char *name, const void *ctx)
{
    const byte_readers *br = ctx;
    tb_const(m, name, POPRT_DTYPE_FLOAT, 2, (const int64_t[]){TV, TD}, br->table);
    tb_input(m, "ie", POPRT_DTYPE_INT64, 2, (const int64_t[]){BR_ROWS, TD});
    tb_input(m, "in", POPRT_DTYPE_INT64, 2, (const int64_t[]){BR_ROWS, 1});
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){TV, TD});
    tb_node(m, "GatherElements", 2, (const char *[]){name, "ie"}, 1, (const char *[]){"ye"});
    tb_node(m, "GatherND", 2, (const char *[]){name, "in"}, 1, (const char *[]){"yn"});
    tb_output(m, "ye");
    tb_output(m, "yn");
    if (br->typed) {
        tb_node(m, "Add", 2, (const char *[]){name, "x"}, 1, (const char *[]){"ys"});
        tb_output(m, "ys");
    }
}

/* Every reader the kernel table marks as copying bytes (Gather,
 * GatherElements, GatherND: poprt__kernel.bytes_in) lets a table stay
 * unaligned where the file put it, and their outputs are exact; one typed
 * reader more (Add) and the table is copied aligned as before. */
START_TEST(test_byte_readers_in_place)
{
    enum { V = TV, D = TD, NI = BR_ROWS };
    static float E[V * D];
    for (int i = 0; i < V * D; i++)
        E[i] = (float)((i * 29) % 37) / 5.0f - 3.0f;
    const int64_t rows[NI] = {5, 63, 0, 31};
    static int64_t ie[NI * D];
    for (int i = 0; i < NI * D; i++)
        ie[i] = (i * 7 + i / D) % V;
    for (int typed = 0; typed < 2; typed++) {
        const byte_readers br = {E, typed};
        const char *en;
        poprt_model *pm = load_unaligned_table(byte_readers_model, &br, &en);
        poprt_session *s;
        OK(poprt_session_create(pm, NULL, &s));
        const poprt__tensor *st = find(s->m, en);
        ck_assert_int_eq(st->bytes_only, !typed);
        static float ye[NI * D], yn[NI * D], x[V * D], ys[V * D];
        poprt_stepio *io;
        OK(poprt_stepio_create(&io));
        OK(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, (const int64_t[]){V, D}, 2, x,
                                  sizeof x));
        OK(poprt_stepio_set_input(io, "ie", POPRT_DTYPE_INT64, (const int64_t[]){NI, D}, 2, ie,
                                  sizeof ie));
        OK(poprt_stepio_set_input(io, "in", POPRT_DTYPE_INT64, (const int64_t[]){NI, 1}, 2, rows,
                                  sizeof rows));
        OK(poprt_stepio_set_output(io, "ye", ye, sizeof ye));
        OK(poprt_stepio_set_output(io, "yn", yn, sizeof yn));
        if (typed)
            OK(poprt_stepio_set_output(io, "ys", ys, sizeof ys));
        OK(poprt_session_run(s, io));
        poprt_stepio_free(io);
        for (int i = 0; i < NI * D; i++)
            ck_assert_msg(!memcmp(&ye[i], &E[ie[i] * D + i % D], sizeof(float)),
                          "GatherElements %d", i);
        for (int j = 0; j < NI; j++)
            ck_assert_msg(!memcmp(yn + j * D, E + rows[j] * D, D * sizeof(float)), "GatherND %d",
                          j);
        if (typed)
            ck_assert(!memcmp(ys, E, sizeof ys)); /* (x is zeros) */
        /* in place: no aligned copy was made; a typed reader: one was */
        ck_assert_int_eq(poprt__tensor_data_lazy(st), !typed);
        poprt_session_free(s);
        poprt_model_free(pm);
    }
}
END_TEST

/* Two MatMuls read one weight (x W and relu(x) W): the session packs it
 * for both, and the two nodes keep one copy (share_equal_states); a write
 * and a reset of the weight prepare both again, an executable file holds
 * the copy once and its loaded session shares it too; outputs against
 * direct loops (1e-4 relative). */
static int shared_states(const poprt_session *s, size_t *n_owned)
{
    const poprt__program *p = s->prog;
    const void *first = NULL;
    int n = 0, same = 1;
    *n_owned = 0;
    for (size_t i = 0; i < p->m->graph->nodes.len; i++) {
        if (!p->states[i] || p->state_sizes[i] < 1024)
            continue;
        same &= !first || p->states[i] == first;
        first = p->states[i];
        *n_owned += p->state_owned[i];
        n++;
    }
    ck_assert_int_eq(n, 2);
    return same;
}

static void check_two(poprt_session *s, const float *w)
{
    static float y1[R * N], y2[R * N], w1[R * N], w2[R * N];
    poprt_stepio *io;
    OK(poprt_stepio_create(&io));
    OK(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, (const int64_t[]){R, K}, 2, X, sizeof X));
    OK(poprt_stepio_set_output(io, "y1", y1, sizeof y1));
    OK(poprt_stepio_set_output(io, "y2", y2, sizeof y2));
    OK(poprt_session_run(s, io));
    poprt_stepio_free(io);
    for (int r = 0; r < R; r++)
        for (int j = 0; j < N; j++) {
            double a = 0, b = 0;
            for (int i = 0; i < K; i++) {
                const float x = X[r * K + i];
                a += (double)x * w[i * N + j];
                b += (double)(x > 0 ? x : 0) * w[i * N + j];
            }
            w1[r * N + j] = (float)a;
            w2[r * N + j] = (float)b;
        }
    check_close(y1, w1, R * N);
    check_close(y2, w2, R * N);
}

START_TEST(test_equal_states_shared)
{
    fill();
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){R, K});
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){K, N}, W);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"y1"});
    tb_node(m, "Relu", 1, (const char *[]){"x"}, 1, (const char *[]){"xr"});
    tb_node(m, "MatMul", 2, (const char *[]){"xr", "W"}, 1, (const char *[]){"y2"});
    tb_output(m, "y1");
    tb_output(m, "y2");
    poprt_model *pm;
    OK(tb_load(m, &pm));
    poprt_session *s;
    OK(poprt_session_create(pm, NULL, &s));
    size_t owned;
    ck_assert(shared_states(s, &owned));
    ck_assert_int_eq(owned, 1);
    check_two(s, W);
    static float w2[K * N];
    for (int i = 0; i < K * N; i++)
        w2[i] = 0.25f - W[i];
    OK(poprt_session_write_weight(s, "W", w2, sizeof w2));
    check_two(s, w2);
    OK(poprt_session_reset_weights(s, "W"));
    check_two(s, W);
    poprt_session *ls = export_and_load(s);
    ck_assert(shared_states(ls, &owned)); /* one copy in the file, read by both */
    ck_assert_int_eq(owned, 0);
    check_two(ls, W);
    poprt_session_free(ls);
    poprt_session_free(s);
    poprt_model_free(pm);
}
END_TEST

/* A session of chain model pm on `threads` threads, run once: x [R, d] in,
 * output `out` ([R, d]) into y. */
static poprt_session *chain_session(poprt_model *pm, const char *threads, const float *x,
                                    int64_t d, const char *out, float *y)
{
    poprt_options *o;
    poprt_session *s;
    OK(poprt_options_create(&o));
    OK(poprt_options_set(o, "threads", threads));
    OK(poprt_session_create(pm, o, &s));
    poprt_options_free(o);
    poprt_stepio *io;
    OK(poprt_stepio_create(&io));
    const size_t bytes = (size_t)(R * d) * sizeof(float);
    OK(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, (const int64_t[]){R, d}, 2, x, bytes));
    OK(poprt_stepio_set_output(io, out, y, bytes));
    OK(poprt_session_run(s, io));
    poprt_stepio_free(io);
    return s;
}

/* Option "threads" prepares the nodes on that many threads: the same
 * prepared bytes node by node as on one thread, the same outputs (a chain
 * of eight MatMuls, each weight 16 KiB, one of them read twice). */
START_TEST(test_prepare_on_threads)
{
    enum { D = 64, L = 8 };
    static float w[L][D * D];
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){R, D});
    char wn[16], in[16], out[16];
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < D * D; i++)
            w[l][i] = (float)((i * (l + 3)) % 17) / 64.0f - 0.125f;
        snprintf(wn, sizeof wn, "w%d", l);
        snprintf(in, sizeof in, l ? "h%d" : "x", l);
        snprintf(out, sizeof out, "h%d", l + 1);
        tb_const(m, wn, POPRT_DTYPE_FLOAT, 2, (const int64_t[]){D, D}, w[l]);
        tb_node(m, "MatMul", 2, (const char *[]){in, l == L - 1 ? "w0" : wn}, 1,
                (const char *[]){out});
    }
    snprintf(out, sizeof out, "h%d", L);
    tb_output(m, out);
    poprt_model *pm;
    OK(tb_load(m, &pm));
    static float x[R * D], y[2][R * D];
    for (int i = 0; i < R * D; i++)
        x[i] = (float)((i * 7) % 13) / 6.0f - 1.0f;
    poprt_session *s[2];
    for (int k = 0; k < 2; k++)
        s[k] = chain_session(pm, k ? "3" : "1", x, D, out, y[k]);
    ck_assert_int_eq(memcmp(y[0], y[1], sizeof y[0]), 0);
    const poprt__program *p0 = s[0]->prog, *p1 = s[1]->prog;
    ck_assert_int_eq(p0->m->graph->nodes.len, p1->m->graph->nodes.len);
    int prepared = 0;
    for (size_t i = 0; i < p0->m->graph->nodes.len; i++) {
        ck_assert_int_eq(p0->state_sizes[i], p1->state_sizes[i]);
        ck_assert_int_eq(!p0->states[i], !p1->states[i]);
        ck_assert_int_eq(p0->consumed[i], p1->consumed[i]);
        if (p0->states[i]) {
            ck_assert(!memcmp(p0->states[i], p1->states[i], p0->state_sizes[i]));
            prepared++;
        }
    }
    ck_assert_int_eq(prepared, L);
    poprt_session_free(s[0]);
    poprt_session_free(s[1]);
    poprt_model_free(pm);
}
END_TEST

/* The same with more than 32 MB prepared (ten MatMuls on two 1024 x 1024
 * weights, 4 MB packed each): the compiling thread shares equal copies
 * while the helpers still prepare (poprt__program_share_equal_states as
 * they go); in the end each weight's pack is held once, read by its five
 * nodes, and the outputs are one thread's. */
START_TEST(test_prepare_on_threads_shares)
{
    enum { D = 1024, L = 10 };
    static float w[2][D * D];
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < D * D; i++)
            w[k][i] = (float)((i * (k + 7)) % 13 - 6) / (13.0f * 16.0f);
    poprt__model *m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){R, D});
    tb_const(m, "wa", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){D, D}, w[0]);
    tb_const(m, "wb", POPRT_DTYPE_FLOAT, 2, (const int64_t[]){D, D}, w[1]);
    char in[16], out[16];
    for (int l = 0; l < L; l++) {
        snprintf(in, sizeof in, l ? "h%d" : "x", l);
        snprintf(out, sizeof out, "h%d", l + 1);
        tb_node(m, "MatMul", 2, (const char *[]){in, l % 2 ? "wb" : "wa"}, 1,
                (const char *[]){out});
    }
    tb_output(m, out);
    poprt_model *pm;
    OK(tb_load(m, &pm));
    static float x[R * D], y[2][R * D];
    for (int i = 0; i < R * D; i++)
        x[i] = (float)((i * 5) % 11) / 5.0f - 1.0f;
    poprt_session *s[2];
    for (int k = 0; k < 2; k++)
        s[k] = chain_session(pm, k ? "3" : "1", x, D, out, y[k]);
    ck_assert_int_eq(memcmp(y[0], y[1], sizeof y[0]), 0);
    for (int k = 0; k < 2; k++) {
        const poprt__program *p = s[k]->prog;
        const void *copies[2] = {NULL, NULL};
        int readers[2] = {0, 0}, owned = 0;
        for (size_t i = 0; i < p->m->graph->nodes.len; i++) {
            if (!p->states[i])
                continue;
            const int c = copies[0] && p->states[i] != copies[0];
            ck_assert(!c || !copies[1] || p->states[i] == copies[1]); /* two copies in all */
            copies[c] = p->states[i];
            readers[c]++;
            owned += p->state_owned[i];
        }
        ck_assert_int_eq(readers[0], L / 2);
        ck_assert_int_eq(readers[1], L / 2);
        ck_assert_int_eq(owned, 2);
    }
    poprt_session_free(s[0]);
    poprt_session_free(s[1]);
    poprt_model_free(pm);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("lazy_weights");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_load_reads_in_place);
    tcase_add_test(tc, test_first_reads_at_once);
    tcase_add_test(tc, test_clone_shares);
    tcase_add_test(tc, test_session_packs_in_place);
    tcase_add_test(tc, test_conv_packs_in_place);
    tcase_add_test(tc, test_conv_kernel_reads_unpacked);
    tcase_add_test(tc, test_kernels_read_unpacked);
    tcase_add_test(tc, test_fused_attention_reads_unpacked);
    tcase_add_test(tc, test_gather_reads_in_place);
    tcase_add_test(tc, test_byte_readers_in_place);
    tcase_add_test(tc, test_equal_states_shared);
    tcase_add_test(tc, test_prepare_on_threads);
    tcase_add_test(tc, test_prepare_on_threads_shares);
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
