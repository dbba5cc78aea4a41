/* Test helper: builds small models through the IR and hands them to the
 * public API (serialised with the ONNX writer, loaded from memory). */
#ifndef POPRT_TEST_BUILDER_H
#define POPRT_TEST_BUILDER_H

#include <check.h>
#include <string.h>
#include "ir/ir.h"
#include "onnx/onnx.h"
#include "api/api.h"

static inline poprt__model *tb_model(int64_t opset)
{
    poprt__model *m;
    ck_assert_int_eq(poprt__model_new(&m), POPRT_OK);
    m->ir_version = 8;
    m->n_opsets = 1;
    m->opsets = poprt__arena_array(&m->arena, 1, sizeof *m->opsets);
    m->opsets[0].domain = "";
    m->opsets[0].version = opset;
    m->producer_name = "libpoprt-tests";
    return m;
}

static inline poprt__tensor *tb_input(poprt__model *m, const char *name, int32_t elem, int rank,
                                      const int64_t *dims)
{
    poprt__tensor *t = poprt__graph_tensor(m->graph, name);
    poprt__type_set_tensor(&m->arena, &t->type, elem, rank, dims);
    t->is_input = 1;
    ck_assert_int_eq(poprt__vec_push(&m->graph->inputs, t), POPRT_OK);
    return t;
}

static inline poprt__tensor *tb_const(poprt__model *m, const char *name, int32_t elem, int rank,
                                      const int64_t *dims, const void *data)
{
    poprt__tensor *t = poprt__graph_tensor(m->graph, name);
    poprt__type_set_tensor(&m->arena, &t->type, elem, rank, dims);
    int64_t n = poprt__type_numel(&t->type);
    t->nbytes = (size_t)n * poprt_dtype_size((poprt_dtype)elem);
    poprt__tensor_set_data(t, poprt__arena_memdup(&m->arena, data, t->nbytes ? t->nbytes : 1));
    t->is_initializer = 1;
    ck_assert_int_eq(poprt__vec_push(&m->graph->initializers, t), POPRT_OK);
    return t;
}

static inline poprt__node *tb_node(poprt__model *m, const char *op, int n_in, const char **ins,
                                   int n_out, const char **outs)
{
    poprt__node *n = poprt__graph_add_node(m->graph, op, "", NULL, n_in, n_out);
    ck_assert_ptr_nonnull(n);
    for (int i = 0; i < n_in; i++)
        poprt__node_set_input(n, i, ins[i] ? poprt__graph_tensor(m->graph, ins[i]) : NULL);
    for (int i = 0; i < n_out; i++)
        n->outputs[i] = poprt__graph_tensor(m->graph, outs[i]);
    return n;
}

static inline void tb_output(poprt__model *m, const char *name)
{
    poprt__tensor *t = poprt__graph_tensor(m->graph, name);
    t->is_output = 1;
    ck_assert_int_eq(poprt__graph_add_output(m->graph, t), POPRT_OK);
}

/* Serialises m (then frees it) and loads it through the public API. */
static inline poprt_status tb_load(poprt__model *m, poprt_model **out)
{
    void *data;
    size_t size;
    ck_assert_int_eq(poprt__onnx_save(m, &data, &size), POPRT_OK);
    poprt__model_free(m);
    poprt_status st = poprt_model_load_from_memory(data, size, NULL, out);
    poprt__free(data);
    return st;
}

/* y = Relu(x + c), x float[2,3], c float[3] = {-1, 0, 1}. */
static inline poprt_model *tb_add_relu(int symbolic_batch)
{
    poprt__model *m = tb_model(17);
    int64_t xd[2] = {2, 3}, cd[1] = {3};
    poprt__tensor *x = tb_input(m, "x", POPRT_DTYPE_FLOAT, 2, xd);
    if (symbolic_batch) {
        x->type.dims[0].value = -1;
        x->type.dims[0].param = "N";
    }
    const float c[3] = {-1, 0, 1};
    tb_const(m, "c", POPRT_DTYPE_FLOAT, 1, cd, c);
    tb_node(m, "Add", 2, (const char *[]){"x", "c"}, 1, (const char *[]){"s"});
    tb_node(m, "Relu", 1, (const char *[]){"s"}, 1, (const char *[]){"y"});
    tb_output(m, "y");
    poprt_model *model;
    ck_assert_int_eq(tb_load(m, &model), POPRT_OK);
    return model;
}

/* f rounded to bfloat16 and back, to nearest even (finite values): what the
 * bfloat16 kernels make of an operand (matmul_precision = bfloat16). */
static inline float tb_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
