/* A sample libpoprt plugin (see docs/plugins.md): the operator
 * com.example.Scale (y = factor * x, float tensors) and the pass
 * example_fix_batch (fixes a symbolic first dim of every input to the
 * argument, default 1). Built by the tests; uses only the public API. */
#include <stdio.h>
#include <stdlib.h>
#include "poprt/poprt.h"

static poprt_status scale_infer(poprt_op_context *c, void *user)
{
    (void)user;
    poprt_dtype dt;
    int rank;
    const int64_t *dims;
    poprt_status st = poprt_op_input(c, 0, &dt, &dims, &rank, NULL);
    if (st)
        return st;
    if (dt != POPRT_DTYPE_FLOAT)
        return poprt_op_error(c, POPRT_STATUS_UNSUPPORTED, "Scale takes float tensors");
    return poprt_op_set_output(c, 0, dt, dims, rank, NULL);
}

static poprt_status scale_compute(poprt_op_context *c, void *user)
{
    (void)user;
    poprt_dtype dt;
    int rank;
    const int64_t *dims;
    const void *x;
    poprt_status st = poprt_op_input(c, 0, &dt, &dims, &rank, &x);
    if (st)
        return st;
    float factor = 1.0f;
    poprt_op_attr_float(c, "factor", &factor);
    void *y;
    if ((st = poprt_op_set_output(c, 0, dt, dims, rank, &y)))
        return st;
    int64_t n = 1;
    for (int d = 0; d < rank; d++)
        n *= dims[d];
    for (int64_t i = 0; i < n; i++)
        ((float *)y)[i] = factor * ((const float *)x)[i];
    return POPRT_OK;
}

static poprt_status fix_batch(poprt_model *m, const char *args, void *user)
{
    (void)user;
    int64_t batch = args && *args ? atoll(args) : 1;
    for (size_t i = 0; i < poprt_model_num_inputs(m); i++) {
        poprt_value_info info = {.size = sizeof info};
        poprt_status st = poprt_model_input(m, i, &info);
        if (st)
            return st;
        if (info.rank < 1 || info.dims[0] >= 0)
            continue;
        int64_t dims[16];
        for (int d = 0; d < info.rank && d < 16; d++)
            dims[d] = d == 0 ? batch : info.dims[d];
        if ((st = poprt_model_set_input_shape(m, info.name, dims, info.rank)))
            return st;
    }
    return POPRT_OK;
}

poprt_status poprt_plugin_init(unsigned library_version_num)
{
    /* same major version: the ABI this plugin was built against */
    if ((library_version_num >> 16) != POPRT_VERSION_MAJOR)
        return POPRT_STATUS_UNSUPPORTED;
    poprt_op_desc d = {sizeof d, "com.example", "Scale", 1, 1, 1, 1, 1,
                       scale_infer, scale_compute, NULL};
    poprt_status st = poprt_op_register(&d);
    if (!st)
        st = poprt_pass_register("example_fix_batch",
                                 "fixes a symbolic first dim of every input (sample plugin)",
                                 fix_batch, NULL);
    return st;
}
