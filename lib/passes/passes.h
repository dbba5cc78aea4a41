/* Pass registry: built-in passes (one file each, named after the pass) and
 * passes the host registers through the public API. */
#ifndef POPRT_PASSES_H
#define POPRT_PASSES_H

#include "runtime/runtime.h"

typedef struct poprt__pass {
    const char *name;
    const char *description;
    /* built-in passes work on the IR; *changed tells whether they did anything */
    poprt_status (*run)(poprt__model *m, const char *args, int *changed);
} poprt__pass;

extern const poprt__pass poprt__pass_shape_inference;

const poprt__pass *const *poprt__builtin_passes(size_t *count);

#endif
