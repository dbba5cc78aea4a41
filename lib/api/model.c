/* Public model API: loading, saving, describing, fixing input shapes. */
#include <string.h>
#include <libgen.h>
#include "api/api.h"
#include "onnx/onnx.h"
#include "passes/passes.h"

#define CHECK_ARG(c, fn)                                                                   \
    do {                                                                                   \
        if (!(c))                                                                          \
            return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: NULL or invalid argument", fn); \
    } while (0)

void poprt__model_touch(poprt_model *model) { model->gen++; }

static poprt_status refresh(poprt_model *model)
{
    if (model->cache_gen == model->gen && model->cache_edits == model->m->edit_count && model->ids)
        return POPRT_OK;
    model->user_inputs.len = 0;
    if (poprt__user_inputs(model->m->graph, &model->user_inputs))
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    poprt__graph *g = model->m->graph;
    model->ids = poprt__arena_array(&model->m->arena, g->tensors.len + 1, sizeof(char *));
    if (!model->ids)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (t->name[0] && (t->producer || t->is_input || t->is_initializer || t->raw))
            model->ids[n++] = t->name;
    }
    model->n_ids = n;
    model->cache_gen = model->gen;
    model->cache_edits = model->m->edit_count;
    return POPRT_OK;
}

poprt_status poprt__api_wrap_model(poprt__model *m, poprt_model **out)
{
    poprt_model *model = poprt__calloc(1, sizeof *model);
    if (!model) {
        poprt__model_free(m);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    model->m = m;
    model->gen = 1;
    *out = model;
    return POPRT_OK;
}

/* Checks a freshly decoded model and wraps it. */
static poprt_status finish_load(poprt__model *m, const char *what, poprt_model **out)
{
    int legacy = 0;
    poprt_status st = poprt__model_inline_functions(m);
    if (!st)
        st = poprt__model_check(m);
    if (!st)
        st = poprt__legacy_broadcast(m, &legacy);
    if (!st && legacy)
        st = poprt__model_check(m);
    if (st) {
        poprt__model_free(m);
        return poprt__err_prefix(st, "model '%s': ", what);
    }
    return poprt__api_wrap_model(m, out);
}

/* The limits a load works within: the defaults and the options' limit keys
 * (the other session keys are accepted and left for the session). */
static poprt_status load_limits(const poprt_options *options, poprt__limits *lim)
{
    poprt__limits_default(lim);
    poprt_status st = poprt__options_validate(options);
    return st ? st : poprt__limits_from_options(options, lim);
}

poprt_status poprt_model_load_v2(const char *path, const poprt_options *options,
                                 poprt_model **model_out)
{
    CHECK_ARG(path && model_out, "poprt_model_load_v2");
    poprt__limits lim;
    poprt__model *m;
    poprt_status st = load_limits(options, &lim);
    if (!st)
        st = poprt__onnx_load_file(path, &lim, &m);
    if (st)
        return st;
    return finish_load(m, path, model_out);
}

poprt_status poprt_model_load(const char *path, poprt_model **model_out)
{
    CHECK_ARG(path && model_out, "poprt_model_load");
    return poprt_model_load_v2(path, NULL, model_out);
}

poprt_status poprt_model_load_from_memory(const void *data, size_t size, const char *base_dir,
                                          poprt_model **model_out)
{
    CHECK_ARG(data && model_out, "poprt_model_load_from_memory");
    return poprt_model_load_from_memory_v2(data, size, base_dir, NULL, model_out);
}

poprt_status poprt_model_load_from_memory_v2(const void *data, size_t size, const char *base_dir,
                                             const poprt_options *options,
                                             poprt_model **model_out)
{
    CHECK_ARG(data && model_out, "poprt_model_load_from_memory_v2");
    poprt__limits lim;
    poprt_status st = load_limits(options, &lim);
    if (st)
        return st;
    void *copy = poprt__malloc(size);
    if (!copy)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory copying %zu bytes", size);
    memcpy(copy, data, size);
    poprt__blob *b = poprt__blob_wrap(copy, size);
    if (!b) {
        poprt__free(copy);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    poprt__model *m;
    st = poprt__onnx_load_blob(b, NULL, base_dir, &lim, &m);
    poprt__blob_unref(b);
    if (st)
        return st;
    return finish_load(m, "<memory>", model_out);
}

poprt_status poprt_model_serialize(const poprt_model *model, void **data_out, size_t *size_out)
{
    CHECK_ARG(model && data_out && size_out, "poprt_model_serialize");
    poprt_status st = poprt__model_require_checked(model, "poprt_model_serialize");
    if (st)
        return st;
    return poprt__onnx_save(model->m, data_out, size_out);
}

void poprt_buffer_free(void *data) { poprt__free(data); }

poprt_status poprt_model_save(const poprt_model *model, const char *path)
{
    CHECK_ARG(model && path, "poprt_model_save");
    void *data;
    size_t size;
    poprt_status st = poprt__model_require_checked(model, "poprt_model_save");
    if (!st)
        st = poprt__onnx_save(model->m, &data, &size);
    if (st)
        return st;
    st = poprt__write_file(path, data, size);
    poprt__free(data);
    return st;
}

poprt_status poprt_model_clone(const poprt_model *model, poprt_model **model_out)
{
    CHECK_ARG(model && model_out, "poprt_model_clone");
    poprt__model *m;
    poprt_status st = poprt__model_require_checked(model, "poprt_model_clone");
    if (!st)
        st = poprt__model_clone(model->m, &m);
    if (st)
        return st;
    return poprt__api_wrap_model(m, model_out);
}

void poprt_model_free(poprt_model *model)
{
    if (!model)
        return;
    poprt__vec_free(&model->user_inputs);
    poprt__model_free(model->m);
    poprt__free(model);
}

size_t poprt_model_num_inputs(const poprt_model *model)
{
    if (!model)
        return 0;
    /* counted here, as poprt__user_inputs selects them: a count cannot
     * report running out of memory, so it takes none */
    const poprt__graph *g = model->m->graph;
    size_t n = 0;
    for (size_t i = 0; i < g->inputs.len; i++) {
        const poprt__tensor *t = g->inputs.items[i];
        n += !t->is_initializer && !t->raw;
    }
    return n;
}

size_t poprt_model_num_outputs(const poprt_model *model)
{
    return model ? model->m->graph->outputs.len : 0;
}

poprt_status poprt__fill_info(poprt__arena *a, const poprt__tensor *t, poprt_value_info *info)
{
    const poprt__type *ty = &t->type;
    info->name = t->name;
    info->kind = (poprt_value_kind)(ty->kind <= POPRT__KIND_OPTIONAL ? ty->kind : POPRT__KIND_UNKNOWN);
    poprt_dtype key = POPRT_DTYPE_UNDEFINED;
    if (ty->kind == POPRT__KIND_MAP) {
        info->kind = POPRT_VALUE_MAP;
        key = (poprt_dtype)ty->elem;
    } else if (ty->kind == POPRT__KIND_SEQUENCE && ty->inner && ty->inner->kind == POPRT__KIND_MAP) {
        info->kind = POPRT_VALUE_SEQUENCE_MAP;
        key = (poprt_dtype)ty->inner->elem;
    }
    if (info->size >= sizeof *info)
        info->key_dtype = key;
    while (ty->kind != POPRT__KIND_TENSOR && ty->inner)
        ty = ty->inner;
    info->dtype = ty->kind == POPRT__KIND_TENSOR || key == POPRT_DTYPE_UNDEFINED
                      ? (poprt_dtype)ty->elem
                      : POPRT_DTYPE_UNDEFINED; /* a map's value type unknown */
    /* a map's values have no shape to report */
    info->rank = ty->kind == POPRT__KIND_TENSOR && key == POPRT_DTYPE_UNDEFINED ? ty->rank : -1;
    info->dims = NULL;
    info->dim_params = NULL;
    if (info->rank > 0) {
        int64_t *dims = poprt__arena_array(a, (size_t)info->rank, sizeof *dims);
        const char **params = poprt__arena_array(a, (size_t)info->rank, sizeof *params);
        if (!dims || !params)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (int i = 0; i < info->rank; i++) {
            dims[i] = ty->dims[i].value >= 0 ? ty->dims[i].value : -1;
            params[i] = ty->dims[i].value >= 0 ? NULL : ty->dims[i].param;
        }
        info->dims = dims;
        info->dim_params = params;
    }
    return POPRT_OK;
}

poprt_status poprt__info_check(const void *h, const poprt_value_info *info, const char *fn)
{
    if (!h || !info)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: NULL argument", fn);
    if (info->size < POPRT__VALUE_INFO_MIN_SIZE)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "%s: info->size is %zu, expected at least %zu", fn, info->size,
                          POPRT__VALUE_INFO_MIN_SIZE);
    return POPRT_OK;
}

poprt_status poprt_model_input(const poprt_model *model, size_t index, poprt_value_info *info)
{
    poprt_status st = poprt__info_check(model, info, "poprt_model_input");
    if (st || (st = refresh((poprt_model *)model)))
        return st;
    if (index >= model->user_inputs.len)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "input index %zu out of range (%zu inputs)",
                          index, model->user_inputs.len);
    return poprt__fill_info(&model->m->arena, model->user_inputs.items[index], info);
}

poprt_status poprt_model_output(const poprt_model *model, size_t index, poprt_value_info *info)
{
    poprt_status st = poprt__info_check(model, info, "poprt_model_output");
    if (st)
        return st;
    const poprt__graph *g = model->m->graph;
    if (index >= g->outputs.len)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "output index %zu out of range (%zu outputs)",
                          index, g->outputs.len);
    return poprt__fill_info(&model->m->arena, g->outputs.items[index], info);
}

poprt_status poprt_model_tensor_ids(const poprt_model *model, const char *const **ids_out,
                                    size_t *count_out)
{
    CHECK_ARG(model && ids_out && count_out, "poprt_model_tensor_ids");
    poprt_status st = refresh((poprt_model *)model);
    if (st)
        return st;
    *ids_out = model->ids;
    *count_out = model->n_ids;
    return POPRT_OK;
}

poprt_status poprt_model_tensor_info(const poprt_model *model, const char *id,
                                     poprt_value_info *info)
{
    poprt_status st = poprt__info_check(model, info, "poprt_model_tensor_info");
    if (st)
        return st;
    CHECK_ARG(id, "poprt_model_tensor_info");
    const poprt__tensor *t = poprt__map_get(&model->m->graph->by_name, id);
    if (!t)
        return poprt__err(POPRT_STATUS_NOT_FOUND, "tensor '%s' not found in the main graph", id);
    return poprt__fill_info(&model->m->arena, t, info);
}

size_t poprt_model_num_nodes(const poprt_model *model) { return model ? model->m->graph->nodes.len : 0; }

int64_t poprt_model_opset(const poprt_model *model)
{
    return model ? poprt__model_opset(model->m, "") : 0;
}

poprt_status poprt_model_set_input_shape(poprt_model *model, const char *name, const int64_t *dims,
                                         int rank)
{
    CHECK_ARG(model && name && (dims || rank == 0), "poprt_model_set_input_shape");
    poprt_status cst = poprt__model_require_checked(model, "poprt_model_set_input_shape");
    if (cst)
        return cst;
    /* all or nothing: every tensor's type is kept (in the model's arena, so
     * that putting it back cannot fail) and restored when the shape or the
     * inference that follows fails */
    poprt__model *m = model->m;
    size_t n = 0, k = 0;
    for (size_t i = 0; i < m->graphs_all.len; i++)
        n += ((const poprt__graph *)m->graphs_all.items[i])->tensors.len;
    poprt__type *saved = poprt__arena_array(&m->arena, n ? n : 1, sizeof *saved);
    if (!saved)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "input '%s': out of memory", name);
    for (size_t i = 0; i < m->graphs_all.len; i++) {
        const poprt__graph *g = m->graphs_all.items[i];
        for (size_t j = 0; j < g->tensors.len; j++)
            if (poprt__type_copy(&m->arena, &saved[k++], &((poprt__tensor *)g->tensors.items[j])->type))
                return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "input '%s': out of memory", name);
    }
    poprt_status st = poprt__set_input_shape(m, name, dims, rank);
    if (!st)
        st = poprt__graph_infer(m->graph, NULL);
    if (st) {
        k = 0;
        for (size_t i = 0; i < m->graphs_all.len; i++) {
            const poprt__graph *g = m->graphs_all.items[i];
            for (size_t j = 0; j < g->tensors.len; j++)
                ((poprt__tensor *)g->tensors.items[j])->type = saved[k++];
        }
    }
    poprt__model_touch(model);
    return st;
}
