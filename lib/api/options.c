/* Public options API over the options store (lib/compiler/options.c). */
#include "api/api.h"

poprt_status poprt_options_create(poprt_options **options_out)
{
    if (!options_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_options_create: NULL argument");
    return poprt__options_new(options_out);
}

void poprt_options_free(poprt_options *options) { poprt__options_free(options); }

poprt_status poprt_options_set(poprt_options *options, const char *key, const char *value)
{
    if (!options || !key || !value)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_options_set: NULL argument");
    return poprt__options_set(options, key, value);
}

const char *poprt_options_get(const poprt_options *options, const char *key)
{
    return key ? poprt__opt(options, key) : NULL;
}

poprt_status poprt_options_set_parallel_for(poprt_options *o, poprt_parallel_for_fn fn, void *user,
                                            int width)
{
    if (!o)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_options_set_parallel_for: NULL options");
    if (fn && (width < 1 || width > 1024))
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_options_set_parallel_for: width %d outside 1..1024", width);
    o->pf = fn;
    o->pf_user = user;
    o->pf_width = fn ? width : 0;
    return POPRT_OK;
}
