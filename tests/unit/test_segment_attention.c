/* Unit tests: ai.poprt.SegmentAttention (attention within each run of one
 * segment id over the flattened tokens; docs/ops.md), the attention of
 * packed models, and ai.poprt.FusedAttention, which computes its heads
 * with the same head functions.
 *   - every head implementation (the reference, and each x86 instance the
 *     CPU runs) against softmax attention computed in double;
 *   - the operator through sessions at 1 and 2 threads against the dense
 *     masked attention it replaces in packed models (Equal of the segment
 *     ids -> additive -10000 mask -> Softmax -> x V), on every token of a
 *     segment; padding (id 0) gets zeros from the operator; a segment may
 *     run across rows (compared with the dense attention over the rows
 *     joined into one).
 * Tolerance |got - want| <= 1e-5 + 1e-4 * |want| element-wise (the sums run
 * in another order, exp comes from the vectorised math tables). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builder.h"
#include "passes/rewrite.h"
#include "kernels/ref/poprt_fused.h"
#include "kernels/x86/attention.h"
#include "kernels/x86/sgemm.h"
#include "runtime/runtime.h"

static uint32_t rng = 2463534242u;
static float frand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return (float)rng / 4294967296.0f * 4.0f - 2.0f;
}

static void close_to(double got, double want, const char *what, long i)
{
    ck_assert_msg(fabs(got - want) <= 1e-5 + 1e-4 * fabs(want), "%s[%ld]: got %.8g, want %.8g",
                  what, i, got, want);
}

/* ---- heads ------------------------------------------------------------------ */

/* Y = softmax(scale Q K^T + addk) V over L tokens, rows ld apart, in
 * double (addk NULL: nothing added). */
static void head_double(const float *q, const float *k, const float *v, double *y, int64_t ld,
                        int64_t L, int64_t HD, float scale, const float *addk)
{
    double *s = malloc(sizeof(double) * (size_t)L);
    ck_assert_ptr_nonnull(s);
    for (int64_t i = 0; i < L; i++) {
        double m = -INFINITY, sum = 0;
        for (int64_t j = 0; j < L; j++) {
            double a = 0;
            for (int64_t d = 0; d < HD; d++)
                a += (double)q[i * ld + d] * (double)k[j * ld + d];
            s[j] = a * scale + (addk ? addk[j] : 0.0);
            m = s[j] > m ? s[j] : m;
        }
        for (int64_t j = 0; j < L; j++)
            sum += (s[j] = exp(s[j] - m));
        for (int64_t d = 0; d < HD; d++) {
            double a = 0;
            for (int64_t j = 0; j < L; j++)
                a += s[j] * (double)v[j * ld + d];
            y[i * HD + d] = a / sum;
        }
    }
    free(s);
}

/* y's L rows (ldy apart) against want's (HD apart): |got - want| <= atol +
 * rtol |want| on the HD columns, the columns past HD (when ldy > HD) still
 * 777. */
static void check_rows(const float *y, int64_t ldy, const double *want, int64_t L, int64_t HD,
                       double atol, double rtol, const char *what)
{
    for (int64_t i = 0; i < L; i++)
        for (int64_t c = 0; c < ldy; c++) {
            const float got = y[i * ldy + c];
            if (c < HD)
                ck_assert_msg(fabs(got - want[i * HD + c]) <= atol + rtol * fabs(want[i * HD + c]),
                              "%s HD %lld L %lld [%lld][%lld]: got %.8g, want %.8g", what,
                              (long long)HD, (long long)L, (long long)i, (long long)c,
                              (double)got, want[i * HD + c]);
            else
                ck_assert_msg(got == 777.0f, "%s: column %lld of row %lld written", what,
                              (long long)c, (long long)i);
        }
}

/* Head _i: x86 instance _i, or past them the reference. Each writes its HD
 * columns of every row and nothing else. */
START_TEST(heads_match_double)
{
    const poprt__attn_variant *xv = _i < poprt__attn_n_variants ? &poprt__attn_variants[_i] : NULL;
    if (xv && !poprt__attn_usable(xv)) {
        printf("segment_attention: head %s skipped: CPU lacks it\n", xv->name);
        return;
    }
    const poprt__seg_impl *ref = &poprt__seg_impl_ref;
    static const int64_t lens[] = {1, 3, 8, 15, 16, 17, 40, 129};
    static const int64_t dims[] = {4, 16, 32, 64};
    const poprt__vmath_variant *vm = poprt__kernels_vmath();
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int64_t HD = dims[di], ld = 2 * HD + 3;
        if (xv && HD % 16)
            continue; /* x86 heads take multiples of 16 (others run the reference) */
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t L = lens[li];
            const size_t n = (size_t)(L * ld), wsn = 16 * (size_t)(HD + L) + ref->ws_floats(L, HD);
            float *q = malloc(n * sizeof(float)), *k = malloc(n * sizeof(float)),
                  *v = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
            float *ws = poprt__aligned_alloc(wsn * sizeof(float));
            double *want = malloc(sizeof(double) * (size_t)(L * HD));
            ck_assert(q && k && v && y && ws && want);
            for (size_t i = 0; i < n; i++) {
                q[i] = frand();
                k[i] = frand();
                v[i] = frand();
                y[i] = 777.0f;
            }
            const float scale = 1.0f / sqrtf((float)HD);
            /* without a key mask, Y rows as Q's; with one (every third key
             * masked as encoders do, the others shifted), Y rows HD apart */
            float *addk = malloc(sizeof(float) * (size_t)L);
            ck_assert_ptr_nonnull(addk);
            for (int64_t j = 0; j < L; j++)
                addk[j] = j % 3 == 1 ? -10000.0f : 0.25f * frand();
            for (int masked = 0; masked < 2; masked++) {
                const int64_t ldy = masked ? HD : ld;
                const float *ak = masked ? addk : NULL;
                for (size_t i = 0; i < n; i++)
                    y[i] = 777.0f;
                (xv ? xv->head : ref->head)(q, k, v, ld, y, ldy, ak, L, HD, scale, ws, vm);
                head_double(q, k, v, want, ld, L, HD, scale, ak);
                check_rows(y, ldy, want, L, HD, 1e-5, 1e-4, xv ? xv->name : "reference");
            }
            free(addk);
            free(q);
            free(k);
            free(v);
            free(y);
            free(want);
            poprt__aligned_free(ws);
        }
    }
}
END_TEST

/* The bfloat16 head on AMX tiles (matmul_precision = bfloat16) against
 * attention in double on the operands it rounds (scale * Q, K and V to
 * bfloat16): it also rounds the probabilities (2^-9 relative each), so
 * |got - want| <= 2^-8 max |V| (twice that bound) + 1e-5; head sizes 32 to
 * 128, lengths across the 16-query blocks and 32-key steps, with and
 * without a key mask; columns past HD untouched. */
START_TEST(amx_head_matches_bf16_double)
{
    const poprt__sgemm_variant *bfv = poprt__sgemm_best_bf16();
    if (!bfv || bfv->isa != POPRT__ISA_AMX) {
        printf("segment_attention: AMX head skipped: CPU lacks AMX-BF16\n");
        return;
    }
    static const int64_t lens[] = {1, 3, 15, 16, 17, 33, 40, 129};
    static const int64_t dims[] = {32, 64, 96, 128};
    const poprt__vmath_variant *vm = poprt__kernels_vmath();
    for (size_t di = 0; di < sizeof dims / sizeof dims[0]; di++) {
        const int64_t HD = dims[di], ld = 2 * HD + 3;
        for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
            const int64_t L = lens[li];
            const size_t n = (size_t)(L * ld);
            float *q = malloc(n * sizeof(float)), *k = malloc(n * sizeof(float)),
                  *v = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
            float *qr = malloc(n * sizeof(float)), *kr = malloc(n * sizeof(float)),
                  *vr = malloc(n * sizeof(float)), *addk = malloc(sizeof(float) * (size_t)L);
            float *ws = poprt__aligned_alloc(poprt__attn_amx_ws_floats(L, HD) * sizeof(float));
            double *want = malloc(sizeof(double) * (size_t)(L * HD));
            ck_assert(q && k && v && y && qr && kr && vr && addk && ws && want);
            const float scale = 1.0f / sqrtf((float)HD);
            double vmax = 0;
            for (size_t i = 0; i < n; i++) {
                q[i] = frand();
                k[i] = frand();
                v[i] = frand();
                qr[i] = tb_bf16(scale * q[i]);
                kr[i] = tb_bf16(k[i]);
                vr[i] = tb_bf16(v[i]);
                vmax = fabs(vr[i]) > vmax ? fabs(vr[i]) : vmax;
            }
            for (int64_t j = 0; j < L; j++)
                addk[j] = j % 3 == 1 ? -10000.0f : 0.25f * frand();
            for (int masked = 0; masked < 2; masked++) {
                const int64_t ldy = masked ? HD : ld;
                const float *ak = masked ? addk : NULL;
                for (size_t i = 0; i < n; i++)
                    y[i] = 777.0f;
                poprt__attn_head_amxbf16(q, k, v, ld, y, ldy, ak, L, HD, scale, ws, vm);
                head_double(qr, kr, vr, want, ld, L, HD, 1.0f, ak);
                check_rows(y, ldy, want, L, HD, vmax / 256 + 1e-5, 0, "AMX head");
            }
            free(q);
            free(k);
            free(v);
            free(y);
            free(qr);
            free(kr);
            free(vr);
            free(addk);
            free(want);
            poprt__aligned_free(ws);
        }
    }
}
END_TEST

/* ---- the operator against the dense masked attention --------------------------- */

static void ints(poprt__model *m, const char *name, int64_t n, const int64_t *v)
{
    tb_const(m, name, POPRT_DTYPE_INT64, 1, &n, v);
}

static void scalar(poprt__model *m, const char *name, float v)
{
    tb_const(m, name, POPRT_DTYPE_FLOAT, 0, NULL, &v);
}

static poprt__node *nd(poprt__model *m, const char *op, int n_in, const char **ins,
                       const char *out)
{
    return tb_node(m, op, n_in, ins, 1, &out);
}
#define N2(m, op, a, b, out) nd(m, op, 2, (const char *[]){a, b}, out)
#define N1(m, op, a, out) nd(m, op, 1, (const char *[]){a}, out)

static void inputs(poprt__model *m, int64_t B, int64_t S, int64_t H)
{
    const int64_t xd[3] = {B, S, H}, sd[2] = {B, S};
    tb_input(m, "q", POPRT_DTYPE_FLOAT, 3, xd);
    tb_input(m, "k", POPRT_DTYPE_FLOAT, 3, xd);
    tb_input(m, "v", POPRT_DTYPE_FLOAT, 3, xd);
    tb_input(m, "seg", POPRT_DTYPE_INT64, 2, sd);
}

/* The dense form (what pack_convert leaves when it cannot segment): heads
 * by Reshape/Transpose, scores scaled, the mask (1 - (seg_q == seg_k)) *
 * -10000 added, Softmax, x V, heads joined. */
static poprt_model *dense_model(int64_t B, int64_t S, int64_t NH, int64_t HD, float scale)
{
    poprt__model *m = tb_model(13);
    const int64_t H = NH * HD;
    inputs(m, B, S, H);
    ints(m, "shape4", 4, (int64_t[]){B, S, NH, HD});
    ints(m, "shape3", 3, (int64_t[]){B, S, H});
    ints(m, "ax13", 2, (int64_t[]){1, 3});
    ints(m, "ax12", 2, (int64_t[]){1, 2});
    scalar(m, "one", 1.0f);
    scalar(m, "neg", -10000.0f);
    scalar(m, "scale", scale);
    static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
    static const char *const x[3] = {"q", "k", "v"}, *const r[3] = {"qr", "kr", "vr"},
                             *const h[3] = {"qh", "kh", "vh"};
    for (int i = 0; i < 3; i++) {
        N2(m, "Reshape", x[i], "shape4", r[i]);
        poprt__node *t = N1(m, "Transpose", r[i], h[i]);
        ck_assert_int_eq(poprt__rw_attr_ints(t, "perm", 4, i == 1 ? p0231 : p0213), POPRT_OK);
    }
    N2(m, "Unsqueeze", "seg", "ax13", "sq");
    N2(m, "Unsqueeze", "seg", "ax12", "sk");
    N2(m, "Equal", "sq", "sk", "same");
    ck_assert_int_eq(poprt__rw_attr_i(N1(m, "Cast", "same", "samef"), "to", POPRT_DTYPE_FLOAT),
                     POPRT_OK);
    N2(m, "Sub", "one", "samef", "other");
    N2(m, "Mul", "other", "neg", "mask");
    N2(m, "MatMul", "qh", "kh", "sc");
    N2(m, "Mul", "sc", "scale", "ss");
    N2(m, "Add", "ss", "mask", "sm");
    ck_assert_int_eq(poprt__rw_attr_i(N1(m, "Softmax", "sm", "p"), "axis", -1), POPRT_OK);
    N2(m, "MatMul", "p", "vh", "cx");
    ck_assert_int_eq(poprt__rw_attr_ints(N1(m, "Transpose", "cx", "ct"), "perm", 4, p0213),
                     POPRT_OK);
    N2(m, "Reshape", "ct", "shape3", "y");
    tb_output(m, "y");
    poprt_model *out;
    ck_assert_int_eq(tb_load(m, &out), POPRT_OK);
    return out;
}

static poprt_model *segment_model(int64_t B, int64_t S, int64_t NH, int64_t HD, float scale)
{
    poprt__model *m = tb_model(13);
    inputs(m, B, S, NH * HD);
    ck_assert_int_eq(poprt__rw_poprt_domain(m), POPRT_OK);
    poprt__node *n = poprt__graph_add_node(m->graph, "SegmentAttention", "ai.poprt", NULL, 4, 1);
    ck_assert_ptr_nonnull(n);
    static const char *const in[4] = {"q", "k", "v", "seg"};
    for (int i = 0; i < 4; i++)
        poprt__node_set_input(n, i, poprt__graph_tensor(m->graph, in[i]));
    n->outputs[0] = poprt__graph_tensor(m->graph, "y");
    ck_assert_int_eq(poprt__rw_attr_i(n, "num_heads", NH), POPRT_OK);
    ck_assert_int_eq(poprt__rw_attr_f(n, "scale", scale), POPRT_OK);
    tb_output(m, "y");
    poprt_model *out;
    ck_assert_msg(tb_load(m, &out) == POPRT_OK, "%s", poprt_last_error());
    return out;
}

/* ---- FusedAttention ------------------------------------------------------------ */

/* FusedAttention(X [B, S, Hin], Wqkv [Hin, 3 NH HD], Bqkv, mask of rank
 * mrank with dims md) with Wqkv constant (packed when the session is
 * compiled) or a graph input. */
static poprt_model *fused_model(int64_t B, int64_t S, int64_t Hin, int64_t NH, int64_t HD,
                                const float *w, const float *bias, int mrank, const int64_t *md,
                                int w_input)
{
    poprt__model *m = tb_model(13);
    const int64_t xd[3] = {B, S, Hin}, wd[2] = {Hin, 3 * NH * HD}, bd[1] = {3 * NH * HD};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, xd);
    if (w_input)
        tb_input(m, "w", POPRT_DTYPE_FLOAT, 2, wd);
    else
        tb_const(m, "w", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_const(m, "b", POPRT_DTYPE_FLOAT, 1, bd, bias);
    if (mrank)
        tb_input(m, "mask", POPRT_DTYPE_FLOAT, mrank, md);
    ck_assert_int_eq(poprt__rw_poprt_domain(m), POPRT_OK);
    poprt__node *n =
        poprt__graph_add_node(m->graph, "FusedAttention", "ai.poprt", NULL, mrank ? 4 : 3, 1);
    ck_assert_ptr_nonnull(n);
    static const char *const in[4] = {"x", "w", "b", "mask"};
    for (int i = 0; i < (mrank ? 4 : 3); i++)
        poprt__node_set_input(n, i, poprt__graph_tensor(m->graph, in[i]));
    n->outputs[0] = poprt__graph_tensor(m->graph, "y");
    ck_assert_int_eq(poprt__rw_attr_i(n, "num_heads", NH), POPRT_OK);
    tb_output(m, "y");
    poprt_model *out;
    ck_assert_msg(tb_load(m, &out) == POPRT_OK, "%s", poprt_last_error());
    return out;
}

/* The operator as sessions run it (the projection on the fast GEMM, the
 * heads on the CPU's head function for per-key masks and head sizes of 16,
 * the reference's score blocks otherwise) against the attention computed in
 * double, at 1 and 2 threads (bit-equal), for: no mask, a padding mask
 * [B, 1, 1, S], one shared by the batch [S], a mask per query [B, 1, S, S],
 * a head size of 8, and Wqkv given at run time instead of packed. */
START_TEST(fused_attention_matches_double)
{
    enum { B = 2, S = 19, HIN = 40 };
    static const struct {
        int64_t NH, HD;
        int mrank;
        int64_t md[4];
        int w_input;
    } cases[] = {
        {2, 16, 0, {0}, 0},          {2, 16, 4, {B, 1, 1, S}, 0}, {3, 32, 1, {S}, 0},
        {2, 16, 4, {B, 1, S, S}, 0}, {4, 8, 4, {B, 1, 1, S}, 0},  {2, 16, 4, {B, 1, 1, S}, 1},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t NH = cases[ci].NH, HD = cases[ci].HD, H = NH * HD, H3 = 3 * H;
        float *x = malloc(sizeof(float) * B * S * HIN), *w = malloc(sizeof(float) * HIN * H3);
        float *bias = malloc(sizeof(float) * H3), *mask = malloc(sizeof(float) * B * S * S);
        float *y1 = malloc(sizeof(float) * B * S * H), *y2 = malloc(sizeof(float) * B * S * H);
        double *qkv = malloc(sizeof(double) * B * S * H3), *sc = malloc(sizeof(double) * S);
        ck_assert(x && w && bias && mask && y1 && y2 && qkv && sc);
        for (int64_t i = 0; i < B * S * HIN; i++)
            x[i] = frand();
        for (int64_t i = 0; i < HIN * H3; i++)
            w[i] = 0.3f * frand();
        for (int64_t i = 0; i < H3; i++)
            bias[i] = 0.1f * frand();
        int64_t mn = 1;
        for (int d = 0; d < cases[ci].mrank; d++)
            mn *= cases[ci].md[d];
        for (int64_t i = 0; i < mn; i++) /* padding at every fourth, else small shifts */
            mask[i] = i % 4 == 3 ? -10000.0f : 0.5f * frand();
        poprt_model *pm = fused_model(B, S, HIN, NH, HD, w, bias, cases[ci].mrank, cases[ci].md,
                                      cases[ci].w_input);
        for (int t = 0; t < 2; t++) {
            poprt_options *o;
            poprt_session *s;
            poprt_stepio *io;
            ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
            ck_assert_int_eq(poprt_options_set(o, "threads", t ? "2" : "1"), POPRT_OK);
            ck_assert_msg(poprt_session_create(pm, o, &s) == POPRT_OK, "%s", poprt_last_error());
            ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
            const int64_t xd[3] = {B, S, HIN}, wd[2] = {HIN, H3};
            ck_assert_int_eq(poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, xd, 3, x,
                                                    sizeof(float) * B * S * HIN),
                             POPRT_OK);
            if (cases[ci].w_input)
                ck_assert_int_eq(poprt_stepio_set_input(io, "w", POPRT_DTYPE_FLOAT, wd, 2, w,
                                                        sizeof(float) * (size_t)(HIN * H3)),
                                 POPRT_OK);
            if (cases[ci].mrank)
                ck_assert_int_eq(poprt_stepio_set_input(io, "mask", POPRT_DTYPE_FLOAT,
                                                        cases[ci].md, cases[ci].mrank, mask,
                                                        sizeof(float) * (size_t)mn),
                                 POPRT_OK);
            ck_assert_int_eq(poprt_stepio_set_output(io, "y", t ? y2 : y1,
                                                     sizeof(float) * (size_t)(B * S * H)),
                             POPRT_OK);
            ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
            poprt_stepio_free(io);
            poprt_session_free(s);
            poprt_options_free(o);
        }
        ck_assert_msg(memcmp(y1, y2, sizeof(float) * (size_t)(B * S * H)) == 0,
                      "case %zu: 1 and 2 threads differ", ci);
        for (int64_t r = 0; r < B * S; r++)
            for (int64_t c = 0; c < H3; c++) {
                double a = bias[c];
                for (int64_t i = 0; i < HIN; i++)
                    a += (double)x[r * HIN + i] * w[i * H3 + c];
                qkv[r * H3 + c] = a;
            }
        const double scale = 1.0 / sqrt((double)HD);
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < NH; h++)
                for (int64_t i = 0; i < S; i++) {
                    double m = -INFINITY, sum = 0;
                    for (int64_t j = 0; j < S; j++) {
                        double a = 0;
                        for (int64_t d = 0; d < HD; d++)
                            a += qkv[(b * S + i) * H3 + h * HD + d] *
                                 qkv[(b * S + j) * H3 + H + h * HD + d];
                        /* the mask broadcast to [B, NH, S, S] */
                        const int r = cases[ci].mrank;
                        const int64_t *md = cases[ci].md;
                        int64_t at = 0;
                        const int64_t full[4] = {b, h, i, j};
                        for (int d = 0; d < r; d++)
                            at = at * md[d] + (md[d] == 1 ? 0 : full[4 - r + d]);
                        sc[j] = a * scale + (r ? mask[at] : 0.0);
                        m = sc[j] > m ? sc[j] : m;
                    }
                    for (int64_t j = 0; j < S; j++)
                        sum += (sc[j] = exp(sc[j] - m));
                    for (int64_t d = 0; d < HD; d++) {
                        double a = 0;
                        for (int64_t j = 0; j < S; j++)
                            a += sc[j] * qkv[(b * S + j) * H3 + 2 * H + h * HD + d];
                        const int64_t at = (b * S + i) * H + h * HD + d;
                        close_to(y1[at], a / sum, "FusedAttention", (long)at);
                    }
                }
        poprt_model_free(pm);
        free(x);
        free(w);
        free(bias);
        free(mask);
        free(y1);
        free(y2);
        free(qkv);
        free(sc);
    }
}
END_TEST

/* ---- MaskedAttention: what the compiler makes of attention on given Q, K, V ---- */

/* The attention block as exporters write it on inputs q, k, v [B, S, H]
 * (projections computed elsewhere: no MatMul weights to fuse), with the
 * additive float mask input of rank mrank (dims md; 0: none). */
static poprt_model *qkv_model(int64_t B, int64_t S, int64_t NH, int64_t HD, int mrank,
                              const int64_t *md)
{
    poprt__model *m = tb_model(13);
    const int64_t xd[3] = {B, S, NH * HD};
    tb_input(m, "q", POPRT_DTYPE_FLOAT, 3, xd);
    tb_input(m, "k", POPRT_DTYPE_FLOAT, 3, xd);
    tb_input(m, "v", POPRT_DTYPE_FLOAT, 3, xd);
    if (mrank)
        tb_input(m, "mask", POPRT_DTYPE_FLOAT, mrank, md);
    ints(m, "shape4", 4, (int64_t[]){B, S, NH, HD});
    ints(m, "shape3", 3, (int64_t[]){B, S, NH * HD});
    scalar(m, "scale", 1.0f / sqrtf((float)HD));
    static const int64_t p0213[4] = {0, 2, 1, 3}, p0231[4] = {0, 2, 3, 1};
    static const char *const x[3] = {"q", "k", "v"}, *const r[3] = {"qr", "kr", "vr"},
                             *const h[3] = {"qh", "kh", "vh"};
    for (int i = 0; i < 3; i++) {
        N2(m, "Reshape", x[i], "shape4", r[i]);
        poprt__node *t = N1(m, "Transpose", r[i], h[i]);
        ck_assert_int_eq(poprt__rw_attr_ints(t, "perm", 4, i == 1 ? p0231 : p0213), POPRT_OK);
    }
    N2(m, "MatMul", "qh", "kh", "sc");
    N2(m, "Mul", "sc", "scale", mrank ? "ss" : "sm");
    if (mrank)
        N2(m, "Add", "ss", "mask", "sm");
    ck_assert_int_eq(poprt__rw_attr_i(N1(m, "Softmax", "sm", "p"), "axis", -1), POPRT_OK);
    N2(m, "MatMul", "p", "vh", "cx");
    ck_assert_int_eq(poprt__rw_attr_ints(N1(m, "Transpose", "cx", "ct"), "perm", 4, p0213),
                     POPRT_OK);
    N2(m, "Reshape", "ct", "shape3", "y");
    tb_output(m, "y");
    poprt_model *out;
    ck_assert_msg(tb_load(m, &out) == POPRT_OK, "%s", poprt_last_error());
    return out;
}

/* y of m on q, k, v and the mask; *fused: MaskedAttention nodes compiled. */
static const char *g_precision = "float32"; /* matmul_precision of run_qkv's sessions */

static void run_qkv(poprt_model *m, const char *optimize, const char *threads, int64_t B,
                    int64_t S, int64_t H, const float *const *qkv, int mrank, const int64_t *md,
                    const float *mask, int64_t mn, float *y, int *fused)
{
    poprt_options *o;
    poprt_session *s;
    poprt_stepio *io;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "optimize", optimize), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "matmul_precision", g_precision), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "threads", threads), POPRT_OK);
    ck_assert_msg(poprt_session_create(m, o, &s) == POPRT_OK, "%s", poprt_last_error());
    *fused = 0;
    for (size_t i = 0; i < s->m->graph->nodes.len; i++)
        *fused += !strcmp(((const poprt__node *)s->m->graph->nodes.items[i])->op_type,
                          "MaskedAttention");
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    const int64_t xd[3] = {B, S, H};
    const size_t xb = sizeof(float) * (size_t)(B * S * H);
    static const char *const names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(poprt_stepio_set_input(io, names[i], POPRT_DTYPE_FLOAT, xd, 3, qkv[i], xb),
                         POPRT_OK);
    if (mrank)
        ck_assert_int_eq(poprt_stepio_set_input(io, "mask", POPRT_DTYPE_FLOAT, md, mrank, mask,
                                                sizeof(float) * (size_t)mn),
                         POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, xb), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_options_free(o);
}

/* Buffers of one MaskedAttention case: q, k, v (n floats, random), the mask
 * (mn floats: every fifth key -10000, else small), outputs y[0..2]. */
typedef struct qkv_bufs {
    float *q, *k, *v, *mask, *y[3];
} qkv_bufs;

static void qkv_alloc(qkv_bufs *b, int64_t n, int64_t mn)
{
    b->q = malloc(sizeof(float) * n);
    b->k = malloc(sizeof(float) * n);
    b->v = malloc(sizeof(float) * n);
    b->mask = malloc(sizeof(float) * mn);
    for (int i = 0; i < 3; i++)
        b->y[i] = malloc(sizeof(float) * n);
    ck_assert(b->q && b->k && b->v && b->mask && b->y[0] && b->y[1] && b->y[2]);
    for (int64_t i = 0; i < n; i++) {
        b->q[i] = frand();
        b->k[i] = frand();
        b->v[i] = frand();
    }
    for (int64_t i = 0; i < mn; i++)
        b->mask[i] = i % 5 == 2 ? -10000.0f : 0.5f * frand();
}

static void qkv_free(qkv_bufs *b)
{
    free(b->q);
    free(b->k);
    free(b->v);
    free(b->mask);
    for (int i = 0; i < 3; i++)
        free(b->y[i]);
}

/* The compiler turns the block into one MaskedAttention (the heads on the
 * CPU's head function for per-key masks and head sizes of 16, the
 * reference's score blocks otherwise), equal to the unfused graph (the
 * session option optimize = 0) within the stated tolerance, and the same
 * bits at 1 and 2 threads; cases: padding mask [B, 1, 1, S], none, one per
 * query [B, 1, S, S], head size 8, and a causal mask [S, S] (-3.4e38 above
 * the diagonal) over 70 queries: the score blocks of 32 queries skip the
 * keys past their last live one. */
START_TEST(masked_attention_equals_unfused)
{
    enum { B = 2 };
    static const struct {
        int64_t S, NH, HD;
        int mrank;
        int64_t md[4];
        int causal;
    } cases[] = {{21, 2, 16, 4, {B, 1, 1, 21}, 0}, {21, 3, 32, 0, {0}, 0},
                 {21, 2, 16, 4, {B, 1, 21, 21}, 0}, {21, 4, 8, 4, {B, 1, 1, 21}, 0},
                 {70, 2, 16, 2, {70, 70}, 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t S = cases[ci].S;
        const int64_t NH = cases[ci].NH, HD = cases[ci].HD, H = NH * HD, n = B * S * H;
        int64_t mn = 1;
        for (int d = 0; d < cases[ci].mrank; d++)
            mn *= cases[ci].md[d];
        qkv_bufs b;
        qkv_alloc(&b, n, mn > 1 ? mn : 1);
        for (int64_t i = 0; cases[ci].causal && i < mn; i++)
            if (i % S > i / S)
                b.mask[i] = -3.4028234663852886e38f;
        poprt_model *pm = qkv_model(B, S, NH, HD, cases[ci].mrank, cases[ci].md);
        const float *const in[3] = {b.q, b.k, b.v};
        int f0, f1, f2;
        run_qkv(pm, "0", "1", B, S, H, in, cases[ci].mrank, cases[ci].md, b.mask, mn, b.y[0],
                &f0);
        run_qkv(pm, "1", "1", B, S, H, in, cases[ci].mrank, cases[ci].md, b.mask, mn, b.y[1],
                &f1);
        run_qkv(pm, "1", "2", B, S, H, in, cases[ci].mrank, cases[ci].md, b.mask, mn, b.y[2],
                &f2);
        ck_assert_int_eq(f0, 0);
        ck_assert_msg(f1 == 1 && f2 == 1, "case %zu: %d MaskedAttention nodes", ci, f1);
        ck_assert_msg(memcmp(b.y[1], b.y[2], sizeof(float) * (size_t)n) == 0,
                      "case %zu: 1 and 2 threads differ", ci);
        for (int64_t i = 0; i < n; i++)
            close_to(b.y[1][i], b.y[0][i], "MaskedAttention", (long)i);
        poprt_model_free(pm);
        qkv_free(&b);
    }
}
END_TEST

/* y of model m run on q, k, v [B, S, H] and seg [B, S] with `threads`. */
static void run(poprt_model *m, const char *threads, int64_t B, int64_t S, int64_t H,
                const float *const *qkv, const int64_t *seg, float *y)
{
    poprt_options *o;
    poprt_session *s;
    poprt_stepio *io;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "threads", threads), POPRT_OK);
    ck_assert_msg(poprt_session_create(m, o, &s) == POPRT_OK, "%s", poprt_last_error());
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    const int64_t xd[3] = {B, S, H}, sd[2] = {B, S};
    const size_t xb = sizeof(float) * (size_t)(B * S * H);
    static const char *const names[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(poprt_stepio_set_input(io, names[i], POPRT_DTYPE_FLOAT, xd, 3, qkv[i], xb),
                         POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "seg", POPRT_DTYPE_INT64, sd, 2, seg,
                                            sizeof(int64_t) * (size_t)(B * S)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "y", y, xb), POPRT_OK);
    ck_assert_msg(poprt_session_run(s, io) == POPRT_OK, "%s", poprt_last_error());
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_options_free(o);
}

/* SegmentAttention on [B, S] ids equals the dense masked attention on every
 * token with an id; zeros at id 0. joined: the ids may run across rows, and
 * the dense attention runs on the rows joined into one [1, B * S]. */
static void equals_dense(int64_t B, int64_t S, int64_t NH, int64_t HD, const int64_t *seg,
                         int joined)
{
    const int64_t H = NH * HD, T = B * S;
    const float scale = 1.0f / sqrtf((float)HD);
    float *x[3], *ys = malloc(sizeof(float) * (size_t)(T * H)),
                 *yd = malloc(sizeof(float) * (size_t)(T * H));
    ck_assert(ys && yd);
    for (int i = 0; i < 3; i++) {
        ck_assert_ptr_nonnull(x[i] = malloc(sizeof(float) * (size_t)(T * H)));
        for (int64_t e = 0; e < T * H; e++)
            x[i][e] = frand();
    }
    const float *qkv[3] = {x[0], x[1], x[2]};
    poprt_model *sm = segment_model(B, S, NH, HD, scale);
    poprt_model *dm = joined ? dense_model(1, T, NH, HD, scale) : dense_model(B, S, NH, HD, scale);
    static const char *const threads[2] = {"1", "2"};
    for (int t = 0; t < 2; t++) {
        run(sm, threads[t], B, S, H, qkv, seg, ys);
        run(dm, threads[t], joined ? 1 : B, joined ? T : S, H, qkv, seg, yd);
        for (int64_t tok = 0; tok < T; tok++)
            for (int64_t c = 0; c < H; c++) {
                const int64_t e = tok * H + c;
                if (seg[tok])
                    close_to(ys[e], yd[e], "SegmentAttention vs dense", (long)e);
                else
                    ck_assert_msg(ys[e] == 0.0f, "padding token %lld: %g", (long long)tok,
                                  (double)ys[e]);
            }
    }
    poprt_model_free(sm);
    poprt_model_free(dm);
    for (int i = 0; i < 3; i++)
        free(x[i]);
    free(ys);
    free(yd);
}

/* ids of a row: runs of (id, length) */
static void fill(int64_t *seg, const int64_t *runs, int n)
{
    for (int r = 0; r < n; r++)
        for (int64_t i = 0; i < runs[2 * r + 1]; i++)
            *seg++ = runs[2 * r];
}

START_TEST(operator_equals_dense)
{
    enum { B = 2, S = 24 };
    int64_t seg[B * S];
    /* row 0: three requests and padding; row 1: one full request */
    fill(seg, (const int64_t[]){1, 5, 2, 10, 3, 7, 0, 2, 4, 24}, 5);
    equals_dense(B, S, 2, 16, seg, 0); /* x86 heads */
    equals_dense(B, S, 3, 4, seg, 0);  /* head size 4: the reference head */
    equals_dense(B, S, 2, 32, seg, 0);
    /* request 2 runs from the end of row 0 into row 1 (packing end to end) */
    fill(seg, (const int64_t[]){1, 20, 2, 14, 3, 13, 0, 1}, 4);
    equals_dense(B, S, 2, 16, seg, 1);
    equals_dense(B, S, 3, 4, seg, 1);
    /* one token per segment; all padding */
    for (int i = 0; i < B * S; i++)
        seg[i] = i + 1;
    equals_dense(B, S, 2, 16, seg, 0);
    memset(seg, 0, sizeof seg);
    equals_dense(B, S, 2, 16, seg, 0);
}
END_TEST

/* A head count that does not divide the features is refused when the
 * model is loaded, naming both. */
/* MaskedAttention in a session with matmul_precision = bfloat16: its heads
 * run on AMX tiles where the CPU has them (head sizes 32 and 64: other bits
 * than float32's, within 2^-7 max |V| of them: the head test's 2^-8 bound
 * plus the rounding of Q, K and V themselves), head size 16 keeps the
 * float32 head (the float32 bits); the same bits at 1 and 2 threads. */
START_TEST(masked_attention_bfloat16)
{
    enum { B = 2, S = 37 };
    static const struct {
        int64_t NH, HD;
        int mrank;
    } cases[] = {{2, 32, 4}, {2, 64, 0}, {2, 16, 4}};
    const poprt__sgemm_variant *bfv = poprt__sgemm_best_bf16();
    const int amx = bfv && bfv->isa == POPRT__ISA_AMX;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int64_t NH = cases[ci].NH, HD = cases[ci].HD, H = NH * HD, n = B * S * H;
        const int64_t md[4] = {B, 1, 1, S}, mn = B * S;
        qkv_bufs b;
        qkv_alloc(&b, n, mn);
        double vmax = 0;
        for (int64_t i = 0; i < n; i++)
            vmax = fabs(b.v[i]) > vmax ? fabs(b.v[i]) : vmax;
        poprt_model *pm = qkv_model(B, S, NH, HD, cases[ci].mrank, md);
        const float *const in[3] = {b.q, b.k, b.v};
        int f[3];
        for (int r = 0; r < 3; r++) { /* float32, then bfloat16 at 1 and 2 threads */
            g_precision = r ? "bfloat16" : "float32";
            run_qkv(pm, "1", r == 2 ? "2" : "1", B, S, H, in, cases[ci].mrank, md, b.mask, mn,
                    b.y[r], &f[r]);
        }
        g_precision = "float32";
        ck_assert_msg(f[0] == 1 && f[1] == 1 && f[2] == 1,
                      "case %zu: MaskedAttention nodes %d %d %d", ci, f[0], f[1], f[2]);
        ck_assert_msg(memcmp(b.y[1], b.y[2], sizeof(float) * (size_t)n) == 0,
                      "case %zu: 1 and 2 threads differ", ci);
        const int bf_heads = amx && HD % 32 == 0;
        ck_assert_msg((memcmp(b.y[0], b.y[1], sizeof(float) * (size_t)n) != 0) == bf_heads,
                      "case %zu: bfloat16 heads %s", ci, bf_heads ? "did not run" : "ran");
        for (int64_t i = 0; i < n; i++)
            ck_assert_msg(fabs(b.y[1][i] - b.y[0][i]) <= vmax / 128 + 1e-5,
                          "case %zu [%lld]: %.7g, float32 %.7g", ci, (long long)i,
                          (double)b.y[1][i], (double)b.y[0][i]);
        poprt_model_free(pm);
        qkv_free(&b);
    }
}
END_TEST

START_TEST(operator_refuses_bad_inputs)
{
    poprt__model *m = tb_model(13);
    inputs(m, 1, 4, 6);
    ck_assert_int_eq(poprt__rw_poprt_domain(m), POPRT_OK);
    poprt__node *n = poprt__graph_add_node(m->graph, "SegmentAttention", "ai.poprt", NULL, 4, 1);
    static const char *const in[4] = {"q", "k", "v", "seg"};
    for (int i = 0; i < 4; i++)
        poprt__node_set_input(n, i, poprt__graph_tensor(m->graph, in[i]));
    n->outputs[0] = poprt__graph_tensor(m->graph, "y");
    ck_assert_int_eq(poprt__rw_attr_i(n, "num_heads", 4), POPRT_OK); /* 6 features */
    tb_output(m, "y");
    poprt_model *pm = NULL;
    ck_assert_int_eq(tb_load(m, &pm), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_msg(strstr(poprt_last_error(), "num_heads 4 does not divide the 6 features"), "%s",
                  poprt_last_error());
    ck_assert_ptr_null(pm);
    /* MaskedAttention: heads that do not divide, Q not [B, S, H], an integer mask */
    static const struct {
        int64_t heads;
        int qrank;
        int32_t mdt;
        const char *want;
    } bad[] = {{4, 3, POPRT_DTYPE_FLOAT, "num_heads 4 does not divide the 6 features"},
               {2, 2, POPRT_DTYPE_FLOAT, "input 0 must be [B, S, H] (rank 3), not rank 2"},
               {2, 3, POPRT_DTYPE_INT64, "input 3 must be floating point"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        m = tb_model(13);
        const int64_t d3[3] = {1, 4, 6}, d2[2] = {4, 6}, md[4] = {1, 1, 1, 4};
        tb_input(m, "q", POPRT_DTYPE_FLOAT, bad[i].qrank, bad[i].qrank == 3 ? d3 : d2);
        tb_input(m, "k", POPRT_DTYPE_FLOAT, 3, d3);
        tb_input(m, "v", POPRT_DTYPE_FLOAT, 3, d3);
        tb_input(m, "mask", bad[i].mdt, 4, md);
        ck_assert_int_eq(poprt__rw_poprt_domain(m), POPRT_OK);
        n = poprt__graph_add_node(m->graph, "MaskedAttention", "ai.poprt", "att", 4, 1);
        static const char *const min[4] = {"q", "k", "v", "mask"};
        for (int j = 0; j < 4; j++)
            poprt__node_set_input(n, j, poprt__graph_tensor(m->graph, min[j]));
        n->outputs[0] = poprt__graph_tensor(m->graph, "y");
        ck_assert_int_eq(poprt__rw_attr_i(n, "num_heads", bad[i].heads), POPRT_OK);
        tb_output(m, "y");
        pm = NULL;
        ck_assert_int_ne(tb_load(m, &pm), POPRT_OK);
        ck_assert_msg(strstr(poprt_last_error(), bad[i].want) && strstr(poprt_last_error(), "att"),
                      "%s", poprt_last_error());
        ck_assert_ptr_null(pm);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("segment_attention");
    TCase *tc = tcase_create("segment_attention");
    tcase_add_loop_test(tc, heads_match_double, 0, poprt__attn_n_variants + 1);
    tcase_add_test(tc, operator_equals_dense);
    tcase_add_test(tc, fused_attention_matches_double);
    tcase_add_test(tc, masked_attention_equals_unfused);
    tcase_add_test(tc, amx_head_matches_bf16_double);
    tcase_add_test(tc, masked_attention_bfloat16);
    tcase_add_test(tc, operator_refuses_bad_inputs);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
