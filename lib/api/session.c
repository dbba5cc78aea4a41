/* Public session API: a session is a compiled program (lib/compiler) and
 * the runtime's run state (lib/runtime). Compiling, loading and exporting
 * executable files, and the engine-cache policy, are decided here. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "api/api.h"
#include "poprt/experimental.h"
#include "compiler/popef.h"
#include "kernels/x86/cpu.h"
#include "onnx/onnx.h"

/* Constants are folded when their result is at most this large. */
#define FOLD_MAX_BYTES ((size_t)64 << 20)

const poprt__folder poprt__api_folder = {poprt__fold_node, NULL, FOLD_MAX_BYTES};

/* A session for program p (the caller's reference is handed over). The run
 * options are run_opts' keys; the host's parallel-for comes from host. */
static poprt_status session_of(poprt__program *p, const poprt_options *run_opts,
                               const poprt_options *host, poprt_session **out)
{
    poprt_options *o = NULL;
    poprt_status st = poprt__options_new(&o);
    if (!st)
        st = poprt__options_add(o, run_opts, 0);
    if (!st && host) {
        o->pf = host->pf;
        o->pf_user = host->pf_user;
        o->pf_width = host->pf_width;
    }
    poprt_session *s = NULL;
    if (!st)
        st = poprt__session_new(p, o, &s);
    poprt__options_free(o);
    poprt__program_unref(p);
    if (!st && !(s->view = poprt__calloc(1, sizeof *s->view))) {
        poprt__session_free(s);
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    if (st)
        return st;
    s->view->m = s->m;
    s->view->gen = 1;
    *out = s;
    return POPRT_OK;
}

/* Compiles a copy of model into a program. */
static poprt_status compile(const poprt_model *model, const poprt_options *options,
                            poprt__program **out)
{
    poprt__model *m;
    poprt_status st = poprt__model_clone(model->m, &m);
    return st ? st : poprt__program_compile(m, options, &poprt__api_folder, NULL, out);
}

/* ---- executable files -------------------------------------------------------- */

/* The one reader behind poprt_session_load and poprt__popef_load_memory: f (a
 * mapping or an aligned heap copy) is kept by the program. */
static poprt_status load_blob(const char *name, poprt__blob *f, const poprt_options *options,
                              poprt_session **session_out)
{
    poprt__program *p = NULL;
    poprt_status st = poprt__options_validate(options);
    if (!st)
        st = poprt__program_load(name, f, options, &poprt__api_folder, &p);
    poprt__blob_unref(f);
    return st ? st : session_of(p, p->options, options, session_out);
}

poprt_status poprt_session_load(const char *path, const poprt_options *options,
                                poprt_session **session_out)
{
    if (!path || !session_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_load: NULL argument");
    poprt__blob *f;
    poprt_status st = poprt__blob_map_file(path, &f);
    if (st)
        return st;
    return load_blob(path, f, options, session_out);
}

poprt_status poprt__popef_load_memory(const char *name, const void *data, size_t size,
                                      const poprt_options *options, poprt_session **session_out)
{
    if (!name || (!data && size) || !session_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt__popef_load_memory: NULL argument");
    /* weights are used in place: the copy is aligned as a mapping's pages are */
    void *copy = poprt__aligned_alloc(size);
    poprt__blob *f = copy ? poprt__blob_wrap_aligned(copy, size) : NULL;
    if (!f) {
        poprt__aligned_free(copy);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "executable '%s': out of memory", name);
    }
    if (size)
        memcpy(copy, data, size);
    return load_blob(name, f, options, session_out);
}

/* The program's executable file written to path (atomically). */
static poprt_status write_program(const poprt__program *p, uint64_t key, const char *path)
{
    void *data;
    size_t size;
    poprt_status st = poprt__program_serialize(p, key, &data, &size);
    if (st)
        return st;
    st = poprt__write_file(path, data, size);
    poprt__free(data);
    return st;
}

poprt_status poprt_session_export(const poprt_session *s, const char *path)
{
    if (!s || !path)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_export: NULL argument");
    return write_program(s->prog, 0, path);
}

int poprt_file_is_executable(const char *path)
{
    /* non-blocking: a FIFO is not an executable file, and must not hang */
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY) : -1;
    if (fd < 0)
        return 0;
    struct stat st;
    char magic[8];
    int yes = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && pread(fd, magic, 8, 0) == 8 &&
              memcmp(magic, POPRT__POPEF_MAGIC, 8) == 0;
    close(fd);
    return yes;
}

/* ---- engine cache ---------------------------------------------------------------- */

/* Key: the serialised model, the options that shape compilation, and the
 * library version. */
static poprt_status cache_key(const poprt_model *model, const poprt_options *o, uint64_t *key)
{
    void *data;
    size_t size;
    poprt_status st = poprt__onnx_save(model->m, &data, &size);
    if (st)
        return st;
    uint64_t h = poprt__checksum64(data, size, 1);
    poprt__free(data);
    for (size_t i = 0; o && i < o->n; i++) {
        if (strcmp(o->kv[i].key, "cache_dir") == 0)
            continue;
        h = poprt__hash64(o->kv[i].key, strlen(o->kv[i].key), h);
        h = poprt__hash64(o->kv[i].value, strlen(o->kv[i].value), h);
    }
    /* the program depends on the kernels this CPU may use (the layout
     * choice, the packed weights): CPUs sharing a cache folder keep a file
     * each instead of loading one another's */
    const uint32_t cpu = poprt__cpu_features()->flags;
    h = poprt__hash64(&cpu, sizeof cpu, h);
    const char *v = poprt__version();
    *key = poprt__hash64(v, strlen(v), h);
    return POPRT_OK;
}

/* A program through the engine cache in dir: the executable file of the
 * model and options when the folder has a usable one, else compiled and
 * stored there (storing is optional: a failure is a warning). */
static poprt_status program_cached(const poprt_model *model, const poprt_options *options,
                                   const char *dir, poprt__program **out)
{
    uint64_t key;
    poprt_status st = cache_key(model, options, &key);
    if (st)
        return st;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%016llx.popef", dir, (unsigned long long)key) >=
        sizeof path)
        return poprt__err(POPRT_STATUS_INVALID_OPTION, "cache folder '%s': path too long", dir);
    poprt__blob *f;
    if (poprt__blob_map_file(path, &f) == POPRT_OK) {
        st = poprt__program_load(path, f, options, &poprt__api_folder, out);
        poprt__blob_unref(f);
        if (!st || st == POPRT_STATUS_OUT_OF_MEMORY) /* the file may be fine */
            return st;
        poprt__log(POPRT_LOG_WARNING, "engine cache: '%s' unusable (%s); recompiling", path,
                   poprt__last_error());
    }
    if ((st = compile(model, options, out)))
        return st;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        poprt__log(POPRT_LOG_WARNING, "engine cache: cannot create folder '%s': %s", dir,
                   strerror(errno));
    else if (write_program(*out, key, path) != POPRT_OK)
        poprt__log(POPRT_LOG_WARNING, "engine cache: %s", poprt__last_error());
    poprt__err_clear();
    return POPRT_OK;
}

/* ---- sessions ---------------------------------------------------------------------- */

poprt_status poprt__api_compile(const poprt_model *model, const poprt_options *options,
                                poprt__program **out)
{
    poprt_status st = poprt__model_require_checked(model, "compiling a model");
    if (st)
        return st;
    const char *cache = poprt__opt(options, "cache_dir");
    if (!cache)
        cache = getenv("POPRT_CACHE_DIR");
    if (cache && *cache)
        return program_cached(model, options, cache, out);
    return compile(model, options, out);
}

poprt_status poprt_session_create(const poprt_model *model, const poprt_options *options,
                                  poprt_session **session_out)
{
    if (!model || !session_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_create: NULL argument");
    poprt_status st = poprt__options_validate(options);
    poprt__program *p = NULL;
    if (!st)
        st = poprt__api_compile(model, options, &p);
    /* the program's options: the caller's, or (from the cache) the file's
     * with the caller's run options over them */
    return st ? st : session_of(p, p->options, options, session_out);
}

void poprt_session_free(poprt_session *s)
{
    if (!s)
        return;
    if (s->view) {
        poprt__vec_free(&s->view->user_inputs);
        poprt__free(s->view);
    }
    poprt__session_free(s);
}

poprt_status poprt_session_run(poprt_session *s, poprt_stepio *io)
{
    if (!s || !io)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_run: NULL argument");
    return poprt__session_run(s, io);
}

poprt_status poprt_session_run_buffers(poprt_session *s, poprt_stepio *io, size_t n_inputs,
                                       const void *const *inputs, size_t n_outputs,
                                       void *const *outputs)
{
    if (!s || !io)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_run_buffers: NULL argument");
    poprt_status st = poprt__stepio_set_buffers(io, n_inputs, inputs, n_outputs, outputs);
    return st ? st : poprt__session_run(s, io);
}

size_t poprt_session_num_inputs(const poprt_session *s) { return s ? s->prog->inputs.len : 0; }
size_t poprt_session_num_outputs(const poprt_session *s) { return s ? s->m->graph->outputs.len : 0; }

poprt_status poprt_session_input(const poprt_session *s, size_t index, poprt_value_info *info)
{
    if (!s)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_input: NULL session");
    return poprt_model_input(s->view, index, info);
}

poprt_status poprt_session_output(const poprt_session *s, size_t index, poprt_value_info *info)
{
    if (!s)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_output: NULL session");
    return poprt_model_output(s->view, index, info);
}

int64_t poprt_session_batches_per_step(const poprt_session *s) { return s ? s->batches_per_step : 0; }
size_t poprt_session_arena_bytes(const poprt_session *s) { return s ? s->prog->plan.arena_bytes : 0; }

poprt_status poprt_session_anchor(const poprt_session *s, const char *output,
                                  poprt_anchor *anchor_out, int64_t *every_n_out)
{
    if (!s || !output)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_anchor: NULL argument");
    const poprt__graph *g = s->m->graph;
    for (size_t k = 0; k < g->outputs.len; k++)
        if (strcmp(((poprt__tensor *)g->outputs.items[k])->name, output) == 0) {
            if (anchor_out)
                *anchor_out = s->anchors[k].kind;
            if (every_n_out)
                *every_n_out = s->anchors[k].every_n;
            return POPRT_OK;
        }
    return poprt__err(POPRT_STATUS_NOT_FOUND, "the session has no output '%s'", output);
}

poprt_status poprt_session_profile_trace(const poprt_session *s, char **json_out,
                                         size_t *size_out)
{
    if (!s || !json_out || !size_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_session_profile_trace: NULL argument");
    if (!s->profile)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "poprt_session_profile_trace: the session was made without option "
                          "'profile' = '1'");
    return poprt__trace_json((poprt_session *)s, json_out, size_out);
}

/* ---- experimental: sessions sharing one program -------------------------------- */

poprt_status poprt_session_share(const poprt_session *session, const poprt_options *options,
                                 poprt_session **session_out)
{
    if (!session || !session_out)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT, "poprt_session_share: NULL argument");
    poprt_status st = poprt__options_validate(options);
    for (size_t i = 0; !st && options && i < options->n; i++) {
        const char *k = options->kv[i].key;
        if (strncmp(k, "input_shape.", 12) == 0 || strcmp(k, "optimize") == 0 ||
            strcmp(k, "float16_compute") == 0 || strcmp(k, "matmul_precision") == 0 ||
            strcmp(k, "conv_algorithm") == 0 ||
            strcmp(k, "cache_dir") == 0 || strncmp(k, "max_", 4) == 0)
            st = poprt__err(POPRT_STATUS_INVALID_OPTION,
                            "poprt_session_share: option '%s' shapes the program, which is "
                            "shared: create a session for it instead",
                            k);
    }
    if (st)
        return st;
    poprt__program_ref(session->prog);
    return session_of(session->prog, options, options, session_out);
}
