/* run() on a planned session does no heap allocation once warmed up: the
 * allocator is wrapped (-Wl,--wrap) and every call counted. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "builder.h"

static volatile long allocs;
void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
int __real_posix_memalign(void **p, size_t a, size_t n);
void *__wrap_malloc(size_t n) { allocs++; return __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) { allocs++; return __real_calloc(a, b); }
void *__wrap_realloc(void *p, size_t n) { allocs++; return __real_realloc(p, n); }
int __wrap_posix_memalign(void **p, size_t a, size_t n) { allocs++; return __real_posix_memalign(p, a, n); }

/* y = Relu(MatMul(x, W) + b) -> Softmax, with a Reshape and a Concat so
 * several kernel families and shape ops take part. */
static poprt_model *mlp(void)
{
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {4, 8}, wd[2] = {8, 16}, bd[1] = {16}, sd[1] = {2};
    float w[128], b[16];
    for (int i = 0; i < 128; i++)
        w[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
    for (int i = 0; i < 16; i++)
        b[i] = (float)i / 16.0f - 0.5f;
    int64_t shape[2] = {8, 8};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    tb_const(m, "W", POPRT_DTYPE_FLOAT, 2, wd, w);
    tb_const(m, "b", POPRT_DTYPE_FLOAT, 1, bd, b);
    tb_const(m, "shape", POPRT_DTYPE_INT64, 1, sd, shape);
    tb_node(m, "MatMul", 2, (const char *[]){"x", "W"}, 1, (const char *[]){"mm"});
    tb_node(m, "Add", 2, (const char *[]){"mm", "b"}, 1, (const char *[]){"ab"});
    tb_node(m, "Relu", 1, (const char *[]){"ab"}, 1, (const char *[]){"r"});
    tb_node(m, "Reshape", 2, (const char *[]){"r", "shape"}, 1, (const char *[]){"rs"});
    poprt__node *c = tb_node(m, "Concat", 2, (const char *[]){"rs", "rs"}, 1, (const char *[]){"cc"});
    poprt__node_add_attr(c, "axis", POPRT__ATTR_INT)->i = 1;
    tb_node(m, "Softmax", 1, (const char *[]){"cc"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    return model;
}

static void check_no_alloc(const char *threads)
{
    poprt_model *m = mlp();
    poprt_options *o;
    poprt_options_create(&o);
    poprt_options_set(o, "threads", threads);
    poprt_session *s;
    ck_assert_int_eq(poprt_session_create(m, o, &s), POPRT_OK);
    float x[32], y[128];
    for (int i = 0; i < 32; i++)
        x[i] = (float)i / 8.0f - 2;
    int64_t d[2] = {4, 8};
    poprt_stepio *io;
    poprt_stepio_create(&io);
    poprt_stepio_set_input(io, "x", POPRT_DTYPE_FLOAT, d, 2, x, sizeof x);
    poprt_stepio_set_output(io, "y", y, sizeof y);
    ck_assert_int_eq(poprt_session_run(s, io), POPRT_OK); /* warm-up: scratch grows once */
    float first[128];
    memcpy(first, y, sizeof y);
    /* no Check assertion inside the counted region: Check itself allocates */
    int failures = 0;
    long before = allocs;
    for (int i = 0; i < 10; i++)
        failures += poprt_session_run(s, io) != POPRT_OK;
    long during = allocs - before;
    ck_assert_int_eq(failures, 0);
    ck_assert_msg(during == 0, "%ld heap allocations in 10 runs with %s threads", during, threads);
    ck_assert_int_eq(memcmp(first, y, sizeof y), 0);
    float row = 0;
    for (int i = 0; i < 16; i++)
        row += y[i];
    ck_assert_float_eq_tol(row, 1.0f, 1e-5); /* softmax rows sum to 1 */
    poprt_stepio_free(io);
    poprt_session_free(s);
    poprt_options_free(o);
    poprt_model_free(m);
}

START_TEST(run_does_not_allocate_one_thread) { check_no_alloc("1"); }
END_TEST
START_TEST(run_does_not_allocate_two_threads) { check_no_alloc("2"); }
END_TEST

int main(void)
{
    Suite *s = suite_create("noalloc");
    TCase *tc = tcase_create("noalloc");
    tcase_add_test(tc, run_does_not_allocate_one_thread);
    tcase_add_test(tc, run_does_not_allocate_two_threads);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
