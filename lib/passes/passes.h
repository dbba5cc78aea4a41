/* Pass registry: built-in passes (one file each, named after the pass, each
 * defining `const poprt__pass poprt__pass_<name>`) and passes the host
 * registers through the public API.
 *
 * Adding a built-in pass: write lib/passes/<name>.c defining
 * poprt__pass_<name>, and add `<name>` as one line to one of the lists
 * lib/passes/list_*.def (the lists drive both the build and registration).
 *
 * Passes work on the IR (lib/ir/ir.h; rewriting helpers there) and must
 * leave a model that poprt__model_check accepts; the manager re-checks and
 * rolls back on failure. A pass sets *changed when it modified the model. */
#ifndef POPRT_PASSES_H
#define POPRT_PASSES_H

#include "runtime/runtime.h"

typedef struct poprt__pass {
    const char *name;
    const char *description;
    poprt_status (*run)(poprt__model *m, const char *args, int *changed);
    /* 0: takes no arguments (poprt_pass_manager_add refuses any); 1: a
     * key=value list (checked for form when added, keys when run); 2: text
     * of its own form (lists of node or output names) */
    int takes_args;
} poprt__pass;

#define POPRT__PASS(name) extern const poprt__pass poprt__pass_##name;
#include "passes/list_core.def"
#include "passes/list_transformer.def"
#include "passes/list_precision.def"
#include "passes/list_converter.def"
#undef POPRT__PASS

const poprt__pass *const *poprt__builtin_passes(size_t *count);

/* ---- argument parsing: "key=value,key=value" (values may be quoted with
 * [] for lists: "checkpoints=[a,b,c]") ---- */
typedef struct poprt__pass_args {
    int n;
    char *keys[32];
    char *vals[32];
    char buf[4096];
} poprt__pass_args;
/* INVALID_OPTION naming the pass for malformed text or keys not in `known`
 * (a NULL-terminated list). */
poprt_status poprt__pass_args_parse(const char *pass, const char *text, const char *const *known,
                                    poprt__pass_args *out);
const char *poprt__pass_arg(const poprt__pass_args *a, const char *key);
/* Integer / float argument, dflt when absent; INVALID_OPTION when malformed. */
poprt_status poprt__pass_arg_int(const char *pass, const poprt__pass_args *a, const char *key,
                                 int64_t dflt, int64_t *out);
poprt_status poprt__pass_arg_float(const char *pass, const poprt__pass_args *a, const char *key,
                                   double dflt, double *out);

#endif
