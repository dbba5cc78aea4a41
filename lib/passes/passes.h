/* Pass registry: built-in passes (one file each, named after the pass, each
 * defining `const poprt__pass poprt__pass_<name>`) and passes the host
 * registers through the public API.
 *
 * Adding a built-in pass: write lib/passes/<name>.c defining
 * poprt__pass_<name>, and add `<name>` as one line to one of the lists
 * lib/passes/list_*.def (the lists drive both the build and registration).
 * A pass that is another pass with a different operator, constant or
 * direction joins its family (families.h): <name>.c then holds only its
 * descriptor.
 *
 * Passes work on the IR (lib/ir/ir.h) through the passes' helper library
 * (rewrite.h; nothing there is to be copied into a pass) and must
 * leave a model that poprt__model_check accepts; the manager re-checks and
 * rolls back on failure. A pass sets *changed when it modified the model. */
#ifndef POPRT_PASSES_H
#define POPRT_PASSES_H

#include "ir/op.h"

/* ---- evaluation, handed in -------------------------------------------------
 * What passes evaluate with: constant folding and running a model on
 * samples. Whoever runs passes hands one in (the API layer gives the
 * runtime's, lib/api/evaluator.c) as m->eval for the run; passes never call
 * the runtime. A tensor crossing it: */
typedef struct poprt__eval_tensor {
    const char *name;
    int32_t dtype; /* poprt_dtype; 0 for a value that is not a tensor */
    int rank;
    const int64_t *dims;
    const void *data;
    size_t nbytes;
} poprt__eval_tensor;
typedef struct poprt__evaluator poprt__evaluator;
struct poprt__evaluator {
    void *ctx;
    /* Folds n (constant inputs): its outputs become constant data; OK with
     * nothing done when it cannot. */
    poprt_status (*fold)(void *ctx, poprt__node *n);
    /* Compiles a copy of m, the inputs named in shapes fixed to their dims,
     * with the session options opts (key, value, ..., NULL; NULL: none). */
    poprt_status (*open)(void *ctx, const poprt__model *m, int n_shapes,
                         const poprt__eval_tensor *shapes, const char *const *opts,
                         void **runner);
    /* Runs once; output names[i] into out[i] (data valid until the next run
     * or close; dtype 0 when it is not a tensor). */
    poprt_status (*run)(void *runner, int n_in, const poprt__eval_tensor *in, int n_out,
                        const char *const *names, poprt__eval_tensor *out);
    void (*close)(void *runner);
};
/* The folder of m's evaluator (INTERNAL naming the pass when it has none). */
poprt_status poprt__pass_fold(const char *pass, poprt__model *m, poprt__node *n);
/* Run by the model loader after inference: binary ops of opsets before 7
 * with broadcast=1 and an axis become numpy broadcasting (an Unsqueeze of B);
 * the broadcast/axis attributes go. *changed counts the nodes
 * (lib/passes/legacy_broadcast.c). */
poprt_status poprt__legacy_broadcast(poprt__model *m, int *changed);

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
/* A pass by name: a built-in (*builtin set), or a registered one (*fn and
 * *user set, *builtin NULL); 0 when none has that name. */
int poprt__pass_lookup(const char *name, const poprt__pass **builtin, poprt_pass_fn *fn, void **user);
/* The registry and the manager behind the public pass API (lib/api/passes.c). */
poprt_status poprt__pass_register(const char *name, const char *description, poprt_pass_fn fn,
                                  void *user);
poprt_status poprt__pass_list(const char *const **names_out, size_t *count_out);
poprt_status poprt__pass_describe(const char *name, const char **text_out);
poprt_status poprt__pass_manager_new(poprt_pass_manager **out);
void poprt__pass_manager_free(poprt_pass_manager *pm);
poprt_status poprt__pass_manager_add(poprt_pass_manager *pm, const char *name, const char *args);
poprt_status poprt__pass_manager_skip(poprt_pass_manager *pm, const char *name);
size_t poprt__pass_manager_changed(const poprt_pass_manager *pm);
/* Runs the steps on *mp, all or nothing (on failure *mp is the model as it
 * was). eval is handed to the passes (m->eval); registered passes get
 * `handle` (the caller's poprt_model), and after each pass touch(handle) so
 * the caller's caches follow the model. */
poprt_status poprt__pass_manager_run(poprt_pass_manager *pm, poprt__model **mp,
                                     const struct poprt__evaluator *eval, poprt_model *handle,
                                     void (*touch)(poprt_model *handle));

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
/* A pass that takes no arguments: INVALID_OPTION naming the pass for any. */
poprt_status poprt__pass_no_args(const char *pass, const char *args);
/* A pass whose only argument is the integer key: its value, dflt when absent
 * (INVALID_OPTION for other keys or a malformed value). */
poprt_status poprt__pass_only_int(const char *pass, const char *args, const char *key, int64_t dflt,
                                  int64_t *out);
/* Node names from pass arguments, "a,b,c" or "nodes=[a,b,c]" (names point
 * into buf, bufsz bytes): the count, or -1 on malformed text or more than
 * max names. */
int poprt__pass_node_names(const char *text, char *buf, size_t bufsz, const char **names, int max);

#endif
