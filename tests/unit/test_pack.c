/* Unit tests: packing runners (option "pack"). Requests of several lengths
 * packed into rows must give each request what it gets run alone: a plain
 * session on the original model, the request padded to the row length S
 * with its mask 0 on the padding. Tolerance: |packed - solo| <= 1e-4 +
 * 1e-4 * |solo| element-wise (the GEMMs sum in another order when the row
 * count differs). Models: tests/data/bert_tiny.onnx (gen_transformer.py
 * --layers 2 --hidden 8 --heads 2 --intermediate 16 --vocab 32 --seq 24
 * --batch 0: 2 layers, S 24, symbolic batch, CLS pooler; tests/data/make_models.py
 * writes it, bert_tiny_mean.onnx with a mean over the tokens and
 * bert_tiny_slice.onnx with position ids sliced from a buffer) always; minilm_l6
 * (S 128, batch 1: one packed row per run) when the file is there
 * (POPRT_MINILM, else build/models/minilm_l6 or shared/models/minilm_l6). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "poprt/poprt.h"

#define MAXS 128
#define MAXH 384

typedef struct req {
    int64_t ids[MAXS], types[MAXS], mask[MAXS];
    int len;   /* tokens bound */
    int valid; /* mask ones (a prefix) */
    float *hidden, pooled[MAXH];
    poprt_stepio *io;
    poprt_request *q;
} req;

static double max_err; /* largest |packed - solo| / (1 + |solo|) seen */

static void make(req *r, int len, int valid, int S, int vocab, int seed, int H)
{
    memset(r, 0, sizeof *r);
    r->len = len;
    r->valid = valid;
    unsigned x = 2463534242u + (unsigned)seed * 977u;
    for (int t = 0; t < len; t++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        r->ids[t] = (int64_t)(x % (unsigned)vocab);
        r->types[t] = t >= len / 2;
        r->mask[t] = t < valid;
    }
    (void)S;
    r->hidden = calloc((size_t)len * (size_t)H, sizeof(float));
    ck_assert_ptr_nonnull(r->hidden);
}

/* The request's inputs and outputs in a stepio; with_mask 0 leaves the mask out. */
static poprt_stepio *bind(req *r, int H, int with_mask)
{
    poprt_stepio *io;
    const int64_t d[2] = {1, r->len};
    const size_t b = sizeof(int64_t) * (size_t)r->len;
    ck_assert_int_eq(poprt_stepio_create(&io), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(io, "input_ids", POPRT_DTYPE_INT64, d, 2, r->ids, b),
                     POPRT_OK);
    ck_assert_int_eq(
        poprt_stepio_set_input(io, "token_type_ids", POPRT_DTYPE_INT64, d, 2, r->types, b),
        POPRT_OK);
    if (with_mask)
        ck_assert_int_eq(
            poprt_stepio_set_input(io, "attention_mask", POPRT_DTYPE_INT64, d, 2, r->mask, b),
            POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "last_hidden_state", r->hidden,
                                             sizeof(float) * (size_t)(r->len * H)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_output(io, "pooler_output", r->pooled, sizeof(float) * H),
                     POPRT_OK);
    return io;
}

static void close_to(const float *got, const float *want, int n, const char *what, int i)
{
    for (int k = 0; k < n; k++) {
        double e = fabs((double)got[k] - (double)want[k]);
        double rel = e / (1.0 + fabs((double)want[k]));
        if (rel > max_err)
            max_err = rel;
        ck_assert_msg(e <= 1e-4 + 1e-4 * fabs((double)want[k]),
                      "request %d %s[%d]: packed %.7g, solo %.7g", i, what, k, (double)got[k],
                      (double)want[k]);
    }
}

/* r run alone: padded to S, mask 0 on the padding, through a session. */
static void check_solo(poprt_session *s, const req *r, int S, int H, int i)
{
    req p;
    memset(&p, 0, sizeof p);
    p.len = S;
    memcpy(p.ids, r->ids, sizeof(int64_t) * (size_t)r->len);
    memcpy(p.types, r->types, sizeof(int64_t) * (size_t)r->len);
    for (int t = 0; t < r->valid; t++)
        p.mask[t] = 1;
    p.hidden = calloc((size_t)S * (size_t)H, sizeof(float));
    ck_assert_ptr_nonnull(p.hidden);
    poprt_stepio *io = bind(&p, H, 1);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK);
    close_to(r->hidden, p.hidden, r->valid * H, "last_hidden_state", i);
    for (int k = r->valid * H; k < r->len * H; k++)
        ck_assert_msg(r->hidden[k] == 0.0f, "request %d: padding output %d not 0", i, k);
    close_to(r->pooled, p.pooled, H, "pooler_output", i);
    poprt_stepio_free(io);
    free(p.hidden);
}

static const char *row_len; /* option pack_seq_len for the next runners (NULL: none) */

static poprt_runner *pack_runner(poprt_model *m, const char *rows, const char *timeout,
                                 const char *replicas)
{
    poprt_options *o;
    poprt_runner *r;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "pack", "1"), POPRT_OK);
    if (row_len)
        ck_assert_int_eq(poprt_options_set(o, "pack_seq_len", row_len), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "pack_max_rows", rows), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "pack_timeout_us", timeout), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "replicas", replicas), POPRT_OK);
    ck_assert_msg(poprt_runner_create(m, o, &r) == POPRT_OK, "runner: %s", poprt_last_error());
    poprt_options_free(o);
    return r;
}

static poprt_session *solo_session(poprt_model *m, int S)
{
    poprt_options *o;
    poprt_session *s;
    char shape[32];
    snprintf(shape, sizeof shape, "1,%d", S);
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.input_ids", shape), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.token_type_ids", shape), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "input_shape.attention_mask", shape), POPRT_OK);
    ck_assert_msg(poprt_session_create(m, o, &s) == POPRT_OK, "session: %s", poprt_last_error());
    poprt_options_free(o);
    return s;
}

/* n requests of lengths lens[] submitted together, each checked against its solo run;
 * the runs must average more than min_mean requests (1.0: not packed at all). */
static void packs_equal_solo(poprt_model *m, int S, int H, int vocab, const char *rows,
                             const char *replicas, const int *lens, int n, double min_mean)
{
    poprt_runner *r = pack_runner(m, rows, "200000", replicas);
    poprt_session *s = solo_session(m, S);
    req *q = calloc((size_t)n, sizeof *q);
    ck_assert_ptr_nonnull(q);
    for (int i = 0; i < n; i++) {
        /* every third request binds padding (mask 0 after its tokens), every fifth no mask */
        const int pad = i % 3 == 1 && i % 5 != 4 ? (S - lens[i]) / 2 : 0;
        const int len = lens[i] + pad;
        make(&q[i], len, lens[i], S, vocab, i, H);
        q[i].io = bind(&q[i], H, i % 5 != 4);
        ck_assert_int_eq(poprt_runner_submit(r, q[i].io, 0, NULL, NULL, &q[i].q), POPRT_OK);
    }
    for (int i = 0; i < n; i++) {
        ck_assert_msg(poprt_request_wait(q[i].q, -1) == POPRT_OK, "request %d: %s", i,
                      poprt_last_error());
        poprt_request_free(q[i].q);
        check_solo(s, &q[i], S, H, i);
        poprt_stepio_free(q[i].io);
        free(q[i].hidden);
    }
    poprt_runner_stats st = {.size = sizeof st};
    ck_assert_int_eq(poprt_runner_stats_get(r, &st), POPRT_OK);
    ck_assert_uint_eq(st.requests, (uint64_t)n);
    ck_assert_msg(st.mean_batch > min_mean,
                  "requests were not packed: %.2f per run (more than %.2f expected)",
                  st.mean_batch, min_mean);
    printf("pack %d requests: %llu runs, max |packed - solo| / (1 + |solo|) = %.3g\n", n,
           (unsigned long long)st.batches, max_err);
    free(q);
    poprt_session_free(s);
    poprt_runner_free(r);
}

START_TEST(tiny_packed_equals_solo)
{
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/bert_tiny.onnx", &m), POPRT_OK);
    int lens[240];
    for (int i = 0; i < 240; i++)
        lens[i] = 1 + (i * 7) % 24; /* 1..24, every length */
    packs_equal_solo(m, 24, 8, 32, "4", "1", lens, 48, 1.5);
    /* two replicas taking packs off one queue */
    packs_equal_solo(m, 24, 8, 32, "4", "2", lens, 240, 1.5);
    poprt_model_free(m);
}
END_TEST

static void refused(poprt_model *m, const char *const *kv, poprt_status want, const char *what);

/* Rows shorter than the model's 24 tokens: requests laid end to end run
 * across rows (the attention is by segment); still each its solo run. */
START_TEST(tiny_short_rows)
{
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/bert_tiny.onnx", &m), POPRT_OK);
    int lens[120];
    for (int i = 0; i < 120; i++)
        lens[i] = 1 + (i * 11) % 24;
    row_len = "8";
    packs_equal_solo(m, 24, 8, 32, "6", "1", lens, 120, 1.5);
    /* rows of 5, at most 5 x 5 = 25 tokens a run: these 60 requests (12.3 tokens on
     * average) fit 1.875 a run at best (first fit over the whole list), and two
     * replicas forming packs at once split the queue (CI saw 1.50) */
    row_len = "5";
    packs_equal_solo(m, 24, 8, 32, "5", "2", lens, 60, 1.2);
    /* rows too few for a request of 24 tokens */
    refused(m, (const char *[]){"pack_seq_len", "8", "pack_max_rows", "2", NULL},
            POPRT_STATUS_INVALID_OPTION, "cannot hold a request of 24");
    /* longer rows than the model's are refused */
    refused(m, (const char *[]){"pack_seq_len", "32", NULL}, POPRT_STATUS_INVALID_OPTION,
            "'pack_seq_len' 32");
    row_len = NULL;
    poprt_model_free(m);
}
END_TEST

/* Position ids sliced out of a longer buffer (HF exports with a dynamic
 * sequence length) restart at each request too. */
START_TEST(tiny_sliced_positions)
{
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/bert_tiny_slice.onnx", &m), POPRT_OK);
    int lens[40];
    for (int i = 0; i < 40; i++)
        lens[i] = 24 - (i * 5) % 24; /* 24..1 */
    packs_equal_solo(m, 24, 8, 32, "4", "1", lens, 40, 1.5);
    poprt_model_free(m);
}
END_TEST

/* Unfit requests fail alone, naming what is wrong; the others complete. */
START_TEST(tiny_bad_requests_fail_alone)
{
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/bert_tiny.onnx", &m), POPRT_OK);
    poprt_runner *r = pack_runner(m, "2", "100000", "1");
    req good, longer, hole;
    make(&good, 10, 10, 24, 32, 1, 8);
    make(&longer, 30, 30, 24, 32, 2, 8);
    make(&hole, 10, 4, 24, 32, 3, 8);
    hole.mask[7] = 1;
    poprt_stepio *io[3] = {bind(&longer, 8, 1), bind(&good, 8, 1), bind(&hole, 8, 1)};
    poprt_request *q[3];
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(poprt_runner_submit(r, io[i], 0, NULL, NULL, &q[i]), POPRT_OK);
    ck_assert_int_eq(poprt_request_wait(q[0], -1), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "30 tokens"));
    ck_assert_int_eq(poprt_request_wait(q[1], -1), POPRT_OK);
    ck_assert_int_eq(poprt_request_wait(q[2], -1), POPRT_STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'attention_mask'"));
    /* token inputs of different lengths */
    poprt_stepio *odd;
    const int64_t d4[2] = {1, 4}, d5[2] = {1, 5};
    ck_assert_int_eq(poprt_stepio_create(&odd), POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(odd, "input_ids", POPRT_DTYPE_INT64, d4, 2, good.ids,
                                            4 * sizeof(int64_t)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_stepio_set_input(odd, "token_type_ids", POPRT_DTYPE_INT64, d5, 2,
                                            good.types, 5 * sizeof(int64_t)),
                     POPRT_OK);
    ck_assert_int_eq(poprt_runner_run(r, odd), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "input 'token_type_ids'"));
    poprt_stepio_free(odd);
    for (int i = 0; i < 3; i++) {
        poprt_request_free(q[i]);
        poprt_stepio_free(io[i]);
    }
    free(good.hidden);
    free(longer.hidden);
    free(hole.hidden);
    poprt_runner_free(r);
    poprt_model_free(m);
}
END_TEST

/* A packing runner on m with the options kv (pairs, NULL-ended) is
 * refused with status want, the message naming what. */
static void refused(poprt_model *m, const char *const *kv, poprt_status want, const char *what)
{
    poprt_options *o;
    poprt_runner *r = NULL;
    ck_assert_int_eq(poprt_options_create(&o), POPRT_OK);
    ck_assert_int_eq(poprt_options_set(o, "pack", "1"), POPRT_OK);
    for (int i = 0; kv[i]; i += 2)
        ck_assert_int_eq(poprt_options_set(o, kv[i], kv[i + 1]), POPRT_OK);
    ck_assert_int_eq(poprt_runner_create(m, o, &r), want);
    ck_assert_msg(strstr(poprt_last_error(), what), "'%s' not in: %s", what, poprt_last_error());
    ck_assert_ptr_null(r);
    poprt_options_free(o);
}

/* Models packing cannot serve are refused when the runner is made. */
START_TEST(unpackable_models_refused)
{
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/mlp_dynamic.onnx", &m), POPRT_OK);
    refused(m, (const char *[]){NULL}, POPRT_STATUS_INVALID_OPTION, "pack_mask_input");
    refused(m, (const char *[]){"pack_mask_input", "x", NULL}, POPRT_STATUS_INVALID_MODEL,
            "input 'x'");
    refused(m, (const char *[]){"max_batch", "4", NULL}, POPRT_STATUS_INVALID_OPTION, "max_batch");
    poprt_model_free(m);
    /* an output mixing a row's tokens (a mean over them) cannot be unpacked */
    ck_assert_int_eq(poprt_model_load(POPRT_TEST_DATA "/bert_tiny_mean.onnx", &m), POPRT_OK);
    refused(m, (const char *[]){NULL}, POPRT_STATUS_INVALID_MODEL, "output 'mean_pooled'");
    poprt_model_free(m);
}
END_TEST

static const char *minilm_path(void)
{
    static const char *const paths[] = {POPRT_TEST_MODELS "/minilm_l6/model.onnx",
                                        POPRT_TEST_SHARED "/models/minilm_l6/model.onnx"};
    const char *env = getenv("POPRT_MINILM");
    if (env && *env)
        return access(env, R_OK) == 0 ? env : NULL;
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        if (access(paths[i], R_OK) == 0)
            return paths[i];
    return NULL;
}

START_TEST(minilm_packed_equals_solo)
{
    const char *path = minilm_path();
    if (!path) {
        printf("SKIP minilm_l6: no model.onnx (set POPRT_MINILM, or generate it into "
               "build/models/minilm_l6 with shared/models/gen_transformer.py --preset minilm)\n");
        return;
    }
    poprt_model *m;
    ck_assert_int_eq(poprt_model_load(path, &m), POPRT_OK);
    /* 5..128 tokens; batch 1 in the file: one row of 128 per run */
    static const int lens[] = {5, 128, 17, 64, 33, 9, 100, 12, 27, 80, 6, 41, 120, 7, 50};
    packs_equal_solo(m, 128, 384, 30522, "1", "1", lens, (int)(sizeof lens / sizeof lens[0]),
                     1.5);
    /* a fixed batch of 1 cannot take more rows */
    refused(m, (const char *[]){"pack_max_rows", "4", NULL}, POPRT_STATUS_INVALID_OPTION,
            "fixed batch of 1");
    poprt_model_free(m);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pack");
    TCase *tc = tcase_create("pack");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, tiny_packed_equals_solo);
    tcase_add_test(tc, tiny_sliced_positions);
    tcase_add_test(tc, tiny_short_rows);
    tcase_add_test(tc, tiny_bad_requests_fail_alone);
    tcase_add_test(tc, unpackable_models_refused);
    tcase_add_test(tc, minilm_packed_equals_solo);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
