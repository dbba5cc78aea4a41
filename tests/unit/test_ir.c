/* Unit tests: IR (construction, toposort, validation, inference, clone). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "builder.h"
#include "ir/op.h"

static poprt__model *chain_reversed(void)
{
    /* nodes listed consumer-first: y = Relu(Add(x, x)) */
    poprt__model *m = tb_model(17);
    int64_t d[2] = {2, 3};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, d);
    tb_node(m, "Relu", 1, (const char *[]){"s"}, 1, (const char *[]){"y"});
    tb_node(m, "Add", 2, (const char *[]){"x", "x"}, 1, (const char *[]){"s"});
    tb_output(m, "y");
    return m;
}

START_TEST(toposort_orders_producers_first)
{
    poprt__model *m = chain_reversed();
    ck_assert_int_eq(poprt__model_check(m), POPRT_OK);
    ck_assert_str_eq(((poprt__node *)m->graph->nodes.items[0])->op_type, "Add");
    ck_assert_str_eq(((poprt__node *)m->graph->nodes.items[1])->op_type, "Relu");
    /* types flow through: y is float[2,3] */
    poprt__tensor *y = poprt__graph_find(m->graph, "y");
    ck_assert_int_eq(y->type.elem, POPRT_DTYPE_FLOAT);
    ck_assert_int_eq(y->type.rank, 2);
    ck_assert_int_eq(y->type.dims[1].value, 3);
    poprt__model_free(m);
}
END_TEST

START_TEST(cycle_is_rejected_naming_a_node)
{
    poprt__model *m = tb_model(17);
    int64_t d[1] = {4};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, d);
    tb_node(m, "Add", 2, (const char *[]){"x", "b"}, 1, (const char *[]){"a"});
    poprt__node *n = tb_node(m, "Relu", 1, (const char *[]){"a"}, 1, (const char *[]){"b"});
    n->name = "the_relu";
    tb_output(m, "b");
    ck_assert_int_eq(poprt__model_check(m), POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "cycle"));
    poprt__model_free(m);
}
END_TEST

START_TEST(missing_producer_is_rejected_naming_the_tensor)
{
    poprt__model *m = tb_model(17);
    int64_t d[1] = {4};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, d);
    tb_node(m, "Add", 2, (const char *[]){"x", "ghost"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    ck_assert_int_eq(poprt__model_check(m), POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "'ghost'"));
    poprt__model_free(m);
}
END_TEST

START_TEST(two_producers_are_rejected)
{
    poprt__model *m = tb_model(17);
    int64_t d[1] = {4};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, d);
    tb_node(m, "Relu", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    tb_node(m, "Neg", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    ck_assert_int_eq(poprt__model_check(m), POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "also produced"));
    poprt__model_free(m);
}
END_TEST

START_TEST(unknown_op_and_domain_are_unsupported)
{
    poprt__model *m = tb_model(17);
    int64_t d[1] = {4};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, d);
    tb_node(m, "FrobnicateX", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    ck_assert_int_eq(poprt__model_check(m), POPRT_STATUS_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "FrobnicateX"));
    poprt__model_free(m);

    m = tb_model(17);
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, d);
    poprt__node *n = tb_node(m, "Relu", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    n->domain = "com.example";
    tb_output(m, "y");
    ck_assert_int_eq(poprt__model_check(m), POPRT_STATUS_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "com.example"));
    poprt__model_free(m);
}
END_TEST

START_TEST(wrong_arity_is_invalid)
{
    poprt__model *m = tb_model(17);
    int64_t d[1] = {4};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 1, d);
    tb_node(m, "Add", 1, (const char *[]){"x"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    ck_assert_int_eq(poprt__model_check(m), POPRT_STATUS_INVALID_MODEL);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "inputs"));
    poprt__model_free(m);
}
END_TEST

START_TEST(broadcast_keeps_symbolic_dims_and_rejects_mismatch)
{
    poprt__model *m = tb_model(17);
    int64_t a[3] = {-1, 1, 5}, b[2] = {4, 5};
    poprt__tensor *x = tb_input(m, "x", POPRT_DTYPE_FLOAT, 3, a);
    x->type.dims[0].param = "batch";
    tb_input(m, "z", POPRT_DTYPE_FLOAT, 2, b);
    tb_node(m, "Add", 2, (const char *[]){"x", "z"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    ck_assert_int_eq(poprt__model_check(m), POPRT_OK);
    poprt__tensor *y = poprt__graph_find(m->graph, "y");
    ck_assert_int_eq(y->type.rank, 3);
    ck_assert_int_lt(y->type.dims[0].value, 0);
    ck_assert_str_eq(y->type.dims[0].param, "batch");
    ck_assert_int_eq(y->type.dims[1].value, 4);
    ck_assert_int_eq(y->type.dims[2].value, 5);
    poprt__model_free(m);

    m = tb_model(17);
    int64_t c[1] = {3};
    tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, b);
    tb_input(m, "z", POPRT_DTYPE_FLOAT, 1, c);
    tb_node(m, "Add", 2, (const char *[]){"x", "z"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    ck_assert_int_eq(poprt__model_check(m), POPRT_STATUS_SHAPE_MISMATCH);
    ck_assert_ptr_nonnull(strstr(poprt_last_error(), "Add"));
    poprt__model_free(m);
}
END_TEST

START_TEST(clone_is_independent)
{
    poprt__model *m = chain_reversed();
    ck_assert_int_eq(poprt__model_check(m), POPRT_OK);
    poprt__model *c;
    ck_assert_int_eq(poprt__model_clone(m, &c), POPRT_OK);
    poprt__model_free(m);
    ck_assert_uint_eq(c->graph->nodes.len, 2);
    poprt__node *n0 = c->graph->nodes.items[0];
    ck_assert_ptr_eq(n0->graph, c->graph);
    ck_assert_ptr_eq(n0->inputs[0], poprt__graph_find(c->graph, "x"));
    ck_assert_int_eq(poprt__model_check(c), POPRT_OK);
    poprt__model_free(c);
}
END_TEST

START_TEST(types_print_readably)
{
    poprt__arena a;
    poprt__arena_init(&a);
    poprt__type t;
    int64_t d[3] = {1, -1, 224};
    poprt__type_set_tensor(&a, &t, POPRT_DTYPE_FLOAT16, 3, d);
    t.dims[1].param = "H";
    ck_assert_str_eq(poprt__type_str(&a, &t), "float16[1,H,224]");
    ck_assert_int_eq(poprt__type_numel(&t), -1);
    t.dims[1].value = 3;
    ck_assert_int_eq(poprt__type_numel(&t), 672);
    poprt__arena_free(&a);
}
END_TEST

START_TEST(every_registered_op_has_inference)
{
    size_t n;
    const poprt__op *const *all = poprt__op_all(&n);
    ck_assert_uint_gt(n, 50);
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(all[i]->infer != NULL, "op %s has no inference", all[i]->name);
        ck_assert_msg(all[i]->since_version >= 1, "op %s since_version", all[i]->name);
    }
    ck_assert_ptr_nonnull(poprt__op_find("", "Add", 14));
    ck_assert_ptr_nonnull(poprt__op_find("ai.onnx", "Add", 14));
    ck_assert_ptr_null(poprt__op_find("", "NoSuchOp", 14));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ir");
    TCase *tc = tcase_create("ir");
    tcase_add_test(tc, toposort_orders_producers_first);
    tcase_add_test(tc, cycle_is_rejected_naming_a_node);
    tcase_add_test(tc, missing_producer_is_rejected_naming_the_tensor);
    tcase_add_test(tc, two_producers_are_rejected);
    tcase_add_test(tc, unknown_op_and_domain_are_unsupported);
    tcase_add_test(tc, wrong_arity_is_invalid);
    tcase_add_test(tc, broadcast_keeps_symbolic_dims_and_rejects_mismatch);
    tcase_add_test(tc, clone_is_independent);
    tcase_add_test(tc, types_print_readably);
    tcase_add_test(tc, every_registered_op_has_inference);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
