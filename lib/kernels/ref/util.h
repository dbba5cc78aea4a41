/* Helpers the reference kernels share (lib/kernels/ref/util.c). */
#ifndef POPRT_REF_UTIL_H
#define POPRT_REF_UTIL_H
#include "kernels/kernel.h"

/* POPRT_OK when ok, else INVALID_MODEL "missing input or output" naming
 * k's node. */
poprt_status poprt__ref_need(const poprt__kctx *k, int ok);
/* Element 0 of t as int64 / double; dflt when t is absent or empty. */
int64_t poprt__ref_scalar_i(const poprt__tval *t, int64_t dflt);
double poprt__ref_scalar_f(const poprt__tval *t, double dflt);

#endif
