/* Public tensor files: serialized ONNX TensorProtos (the .pb files of ONNX's
 * backend tests and of calibration folders) decoded and encoded, and the
 * index range of a model's integer inputs, for programs that make inputs. */
#include <string.h>
#include "api/api.h"
#include "ir/dtype.h"
#include "onnx/onnx.h"

struct poprt_tensor {
    poprt__arena arena; /* the file's bytes and everything decoded from them */
    const char *name;
    poprt_dtype dtype;
    int rank;
    int64_t dims[POPRT__MAX_RANK];
    const void *data;
    size_t nbytes;
};

poprt_status poprt_tensor_decode(const void *data, size_t size, poprt_tensor **tensor_out)
{
    if ((!data && size) || !tensor_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_tensor_decode: NULL argument");
    poprt_tensor *t = poprt__calloc(1, sizeof *t);
    if (!t)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory decoding a tensor");
    poprt__arena_init(&t->arena);
    /* decoded data may point into the bytes: the tensor keeps a copy */
    void *copy = size ? poprt__arena_memdup(&t->arena, data, size) : NULL;
    poprt__onnx_tensor d;
    poprt_status st = size && !copy ? poprt__err(POPRT_STATUS_OUT_OF_MEMORY,
                                                 "out of memory decoding a tensor (%zu bytes)", size)
                                    : poprt__onnx_decode_tensor(copy, size, &t->arena, &d);
    if (!st && (d.type.rank < 0 || d.type.rank > POPRT__MAX_RANK))
        st = poprt__err(POPRT_STATUS_UNSUPPORTED, "tensor '%s' has rank %d (at most %d)", d.name,
                        d.type.rank, POPRT__MAX_RANK);
    if (st) {
        poprt__arena_free(&t->arena);
        poprt__free(t);
        return st;
    }
    t->name = d.name ? d.name : "";
    t->dtype = (poprt_dtype)d.type.elem;
    t->rank = d.type.rank;
    for (int i = 0; i < t->rank; i++)
        t->dims[i] = d.type.dims[i].value;
    t->data = d.data;
    t->nbytes = d.nbytes;
    *tensor_out = t;
    return POPRT_OK;
}

poprt_status poprt_tensor_get(const poprt_tensor *tensor, const char **name_out,
                              poprt_dtype *dtype_out, const int64_t **dims_out, int *rank_out,
                              const void **data_out, size_t *nbytes_out)
{
    if (!tensor)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_tensor_get: NULL tensor");
    if (name_out)
        *name_out = tensor->name;
    if (dtype_out)
        *dtype_out = tensor->dtype;
    if (dims_out)
        *dims_out = tensor->dims;
    if (rank_out)
        *rank_out = tensor->rank;
    if (data_out)
        *data_out = tensor->data;
    if (nbytes_out)
        *nbytes_out = tensor->nbytes;
    return POPRT_OK;
}

void poprt_tensor_free(poprt_tensor *tensor)
{
    if (!tensor)
        return;
    poprt__arena_free(&tensor->arena);
    poprt__free(tensor);
}

poprt_status poprt_tensor_encode(const char *name, poprt_dtype dtype, const int64_t *dims,
                                 int rank, const void *data, size_t nbytes, void **data_out,
                                 size_t *size_out)
{
    if ((!dims && rank > 0) || (!data && nbytes) || !data_out || !size_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_tensor_encode: NULL argument");
    if (rank < 0 || rank > POPRT__MAX_RANK)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_tensor_encode: tensor '%s' has rank %d (0..%d)", name ? name : "",
                          rank, POPRT__MAX_RANK);
    if (!poprt__dtype_valid(dtype) || !poprt__dtype_size(dtype))
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_tensor_encode: tensor '%s' has an unknown dtype %d",
                          name ? name : "", (int)dtype);
    poprt__dim d[POPRT__MAX_RANK];
    size_t numel = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || !poprt__mul_size(numel, (size_t)dims[i], &numel))
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                              "poprt_tensor_encode: tensor '%s': bad dim %d (%lld)",
                              name ? name : "", i, (long long)dims[i]);
        d[i].value = dims[i];
        d[i].param = NULL;
    }
    size_t need;
    if (!poprt__mul_size(numel, poprt__dtype_size(dtype), &need) || need != nbytes)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_tensor_encode: tensor '%s': %zu bytes given, its dtype %s and "
                          "shape need %zu",
                          name ? name : "", nbytes, poprt__dtype_name(dtype), need);
    poprt__tensor t;
    memset(&t, 0, sizeof t);
    t.name = name ? name : "";
    t.type.kind = POPRT__KIND_TENSOR;
    t.type.elem = dtype;
    t.type.rank = rank;
    t.type.dims = d;
    t.raw = data ? data : "";
    t.nbytes = nbytes;
    return poprt__onnx_encode_tensor(&t, data_out, size_out);
}

poprt_status poprt_model_input_range(const poprt_model *model, const char *name,
                                     int64_t *lo_out, int64_t *hi_out)
{
    if (!model || !name || !lo_out || !hi_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_model_input_range: NULL %s",
                          !model ? "model" : !name ? "name" : !lo_out ? "lo_out" : "hi_out");
    const poprt__graph *g = model->m->graph;
    for (size_t i = 0; i < g->inputs.len; i++) {
        const poprt__tensor *t = g->inputs.items[i];
        if (!t->is_initializer && !t->raw && !strcmp(t->name, name)) {
            poprt__index_range(t, lo_out, hi_out);
            return POPRT_OK;
        }
    }
    return poprt__err(POPRT_STATUS_NOT_FOUND, "the model has no input '%s'", name);
}
