/* Unit tests: pass registry and pass manager. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "builder.h"

static int calls;

/* A user pass through the public API only: fixes the batch of input x. */
static poprt_status fix_batch(poprt_model *m, const char *args, void *user)
{
    calls += *(int *)user;
    int64_t dims[2] = {args ? atoi(args) : 1, 3};
    return poprt_model_set_input_shape(m, "x", dims, 2);
}

static poprt_status failing(poprt_model *m, const char *args, void *user)
{
    (void)args;
    (void)user;
    int64_t dims[2] = {7, 3};
    poprt_model_set_input_shape(m, "x", dims, 2); /* changes the model, then fails */
    return POPRT_STATUS_INTERNAL;
}

START_TEST(list_register_and_describe)
{
    int one = 1;
    const char *const *names;
    size_t n, n0;
    ck_assert_int_eq(poprt_pass_list(&names, &n0), POPRT_OK);
    int has = 0;
    for (size_t i = 0; i < n0; i++)
        has |= strcmp(names[i], "shape_inference") == 0;
    ck_assert_int_eq(has, 1);
    ck_assert_int_eq(poprt_pass_register("test_fix_batch", "fixes the batch", fix_batch, &one), POPRT_OK);
    ck_assert_int_eq(poprt_pass_register("test_fix_batch", "again", fix_batch, &one), POPRT_STATUS_INVALID_ARGUMENT);
    ck_assert_int_eq(poprt_pass_register("shape_inference", "shadow", fix_batch, &one), POPRT_STATUS_INVALID_ARGUMENT);
    ck_assert_int_eq(poprt_pass_list(&names, &n), POPRT_OK);
    ck_assert_uint_eq(n, n0 + 1);
    for (size_t i = 1; i < n; i++)
        ck_assert_int_lt(strcmp(names[i - 1], names[i]), 0); /* sorted */
    const char *text;
    ck_assert_int_eq(poprt_pass_describe("test_fix_batch", &text), POPRT_OK);
    ck_assert_str_eq(text, "fixes the batch");
    ck_assert_int_eq(poprt_pass_describe("nope", &text), POPRT_STATUS_NOT_FOUND);
}
END_TEST

START_TEST(run_skip_and_rollback)
{
    static int two = 2;
    poprt_pass_register("test_fix_batch2", "", fix_batch, &two);
    poprt_pass_register("test_failing", "", failing, NULL);
    poprt_model *m = tb_add_relu(1);
    poprt_pass_manager *pm;
    ck_assert_int_eq(poprt_pass_manager_create(&pm), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_add(pm, "no_such_pass", NULL), POPRT_STATUS_NOT_FOUND);
    ck_assert_int_eq(poprt_pass_manager_add(pm, "test_fix_batch2", "5"), POPRT_OK);
    ck_assert_int_eq(poprt_pass_manager_add(pm, "shape_inference", NULL), POPRT_OK);
    calls = 0;
    ck_assert_int_eq(poprt_pass_manager_run(pm, m), POPRT_OK);
    ck_assert_int_eq(calls, 2);
    ck_assert_uint_eq(poprt_pass_manager_changed(pm), 1);
    poprt_value_info info = {.size = sizeof info};
    poprt_model_output(m, 0, &info);
    ck_assert_int_eq(info.dims[0], 5);
    poprt_pass_manager_free(pm);

    /* skipped passes do not run */
    poprt_model *m2 = tb_add_relu(1);
    poprt_pass_manager_create(&pm);
    poprt_pass_manager_add(pm, "test_fix_batch2", "5");
    poprt_pass_manager_skip(pm, "test_fix_batch2");
    calls = 0;
    ck_assert_int_eq(poprt_pass_manager_run(pm, m2), POPRT_OK);
    ck_assert_int_eq(calls, 0);
    poprt_pass_manager_free(pm);

    /* a failing pass leaves the model as it was */
    poprt_pass_manager_create(&pm);
    poprt_pass_manager_add(pm, "test_failing", NULL);
    ck_assert_int_eq(poprt_pass_manager_run(pm, m2), POPRT_STATUS_PASS_FAILED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "test_failing"));
    poprt_model_input(m2, 0, &info);
    ck_assert_int_eq(info.dims[0], -1);
    ck_assert_str_eq(info.dim_params[0], "N");
    poprt_pass_manager_free(pm);
    poprt_model_free(m);
    poprt_model_free(m2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("passes");
    TCase *tc = tcase_create("passes");
    tcase_add_test(tc, list_register_and_describe);
    tcase_add_test(tc, run_skip_and_rollback);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
