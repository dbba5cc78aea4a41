/* Public weight calls (poprt.h "poprt_session_*weight*"): a compiled
 * session's weights, kept by its program (lib/compiler/weights.c). */
#include <string.h>
#include "api/api.h"

/* The weight named name, or NOT_FOUND saying why a value of that name is
 * not one. */
static poprt_status find(const poprt_session *s, const char *name, const char *fn, size_t *out)
{
    if (!s || !name)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "%s: NULL argument", fn);
    long i = poprt__weight_find(s->prog, name);
    if (i >= 0) {
        *out = (size_t)i;
        return POPRT_OK;
    }
    const poprt__tensor *t = poprt__map_get(&s->m->graph->by_name, name);
    if (t && t->raw && !t->producer)
        return poprt__err(POPRT_STATUS_NOT_FOUND,
                          "%s: '%s' is a constant of the compiled program, not a weight: it was "
                          "folded into other constants or made by a fusion at compile time",
                          fn, name);
    return poprt__err(POPRT_STATUS_NOT_FOUND,
                      "%s: the session has no weight '%s' (an initializer folded or fused at "
                      "compile time is none; see poprt_session_num_weights)",
                      fn, name);
}

size_t poprt_session_num_weights(const poprt_session *session)
{
    return session ? session->prog->n_weights : 0;
}

poprt_status poprt_session_weight(const poprt_session *session, size_t index,
                                  poprt_value_info *info)
{
    if (!session || !info)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_weight: NULL argument");
    if (info->size < POPRT__VALUE_INFO_MIN_SIZE)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_session_weight: info->size is %zu, expected at least %zu",
                          info->size, POPRT__VALUE_INFO_MIN_SIZE);
    if (index >= session->prog->n_weights)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_session_weight: index %zu out of range (%zu weights)", index,
                          session->prog->n_weights);
    /* the program's arena is shared by threads: the info's arrays come
     * from the weight's type itself */
    const poprt__tensor *t = session->prog->weights[index].t;
    info->name = t->name;
    info->kind = POPRT_VALUE_TENSOR;
    info->dtype = (poprt_dtype)t->type.elem;
    info->rank = t->type.rank;
    info->dims = session->prog->weights[index].dims;
    info->dim_params = NULL;
    if (info->size >= sizeof *info)
        info->key_dtype = POPRT_DTYPE_UNDEFINED;
    return POPRT_OK;
}

poprt_status poprt_session_read_weight(const poprt_session *session, const char *name, void *data,
                                       size_t nbytes)
{
    size_t i;
    poprt_status st = find(session, name, "poprt_session_read_weight", &i);
    if (st)
        return st;
    if (nbytes && !data)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_read_weight: NULL data");
    return poprt__weight_read(session->prog, i, data, nbytes);
}

poprt_status poprt_session_write_weight(poprt_session *session, const char *name,
                                        const void *data, size_t nbytes)
{
    size_t i;
    poprt_status st = find(session, name, "poprt_session_write_weight", &i);
    return st ? st : poprt__weight_write(session->prog, i, data, nbytes);
}

poprt_status poprt_session_reset_weights(poprt_session *session, const char *name)
{
    if (!session)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_reset_weights: NULL session");
    if (name) {
        size_t i;
        poprt_status st = find(session, name, "poprt_session_reset_weights", &i);
        return st ? st : poprt__weight_reset(session->prog, i);
    }
    for (size_t i = 0; i < session->prog->n_weights; i++) {
        poprt_status st = poprt__weight_reset(session->prog, i);
        if (st)
            return st;
    }
    return POPRT_OK;
}
