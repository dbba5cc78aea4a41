/* Unit tests: the kernel registry (lib/kernels/registry.def) against the
 * operator schemas of lib/ir: the two layers each keep their own table, so
 * this checks they name the same operator versions. */
#include <check.h>
#include <string.h>
#include "kernels/kernel.h"

/* Every schema has the kernel of its own version; every kernel a schema. */
START_TEST(every_schema_has_its_kernel_and_back)
{
    size_t n_ops, n_k;
    const poprt__op *const *ops = poprt__op_all(&n_ops);
    const poprt__kernel *ks = poprt__kernel_all(&n_k);
    ck_assert_uint_eq(n_ops, n_k);
    for (size_t i = 0; i < n_ops; i++) {
        const poprt__op *op = ops[i];
        const poprt__kernel *k = poprt__kernel_find(op->domain, op->name, op->since_version);
        ck_assert_msg(k, "no kernel for %s.%s version %d", op->domain, op->name, op->since_version);
        ck_assert_int_eq(k->since_version, op->since_version);
        ck_assert_ptr_nonnull(k->run);
    }
    for (size_t i = 0; i < n_k; i++) {
        const poprt__op *op = poprt__op_find(ks[i].domain, ks[i].name, ks[i].since_version);
        ck_assert_msg(op && op->since_version == ks[i].since_version,
                      "kernel %s.%s version %d has no schema of that version", ks[i].domain,
                      ks[i].name, ks[i].since_version);
    }
}
END_TEST

/* A node's kernel is the newest entry not above its opset. */
START_TEST(lookup_follows_the_opset)
{
    const poprt__kernel *dft17 = poprt__kernel_find("", "DFT", 17);
    const poprt__kernel *dft20 = poprt__kernel_find("", "DFT", 22);
    ck_assert_ptr_nonnull(dft17);
    ck_assert_ptr_nonnull(dft20);
    ck_assert_int_eq(dft17->since_version, 17);
    ck_assert_int_eq(dft20->since_version, 20);
    ck_assert_ptr_null(poprt__kernel_find("", "DFT", 16));
    ck_assert_ptr_eq(poprt__kernel_find("ai.onnx", "Relu", 14), poprt__kernel_find("", "Relu", 14));
    ck_assert_ptr_null(poprt__kernel_find("com.example", "Relu", 1));
    ck_assert_ptr_null(poprt__kernel_find("", "NoSuchOp", 17));
    ck_assert_ptr_nonnull(poprt__kernel_find("ai.poprt", "FusedConv", 1)->prepare);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("registry");
    TCase *tc = tcase_create("registry");
    tcase_add_test(tc, every_schema_has_its_kernel_and_back);
    tcase_add_test(tc, lookup_follows_the_opset);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
