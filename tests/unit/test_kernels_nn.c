/* Unit tests: kernels_nn. */
#include <check.h>
#include <stdlib.h>

START_TEST(test_placeholder_kernels_nn)
{
    ck_assert_int_eq(1 + 1, 2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_nn");
    TCase *tc = tcase_create("kernels_nn");
    tcase_add_test(tc, test_placeholder_kernels_nn);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
