/* libpoprt's experimental tier: calls that may change or go in any release,
 * outside the ABI promise of poprt.h (docs/abi.md). They are exported like
 * the others; a program that uses them rebuilds with each release. Once a
 * call has settled it moves to poprt.h (with a _v2 name if it changed). */
#ifndef POPRT_EXPERIMENTAL_H
#define POPRT_EXPERIMENTAL_H

#include "poprt/poprt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A new session running the compiled program of `session` (shared, not
 * copied: no compilation, and the weights and prepared kernel data are held
 * once however many sessions share them), with its own run options
 * (options: "threads", "batches_per_step", "anchors", "anchor.<output>",
 * "profile", the host's parallel-for; NULL: the defaults). Compile options
 * in `options` ("input_shape.*", "optimize", "cache_dir", limits) are
 * refused (INVALID_OPTION): they would need another program. The sessions
 * may run at the same time from different threads and be freed in any
 * order. Returns INVALID_ARGUMENT, INVALID_OPTION, OUT_OF_MEMORY. */
POPRT_API poprt_status poprt_session_share(const poprt_session *session,
                                           const poprt_options *options,
                                           poprt_session **session_out);

#ifdef __cplusplus
}
#endif

#endif
