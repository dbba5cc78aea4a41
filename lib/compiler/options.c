/* String key/value options. Keys are checked when set and again by the
 * call that consumes them, so a typo never passes silently. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "compiler/program.h"

poprt_status poprt__options_new(poprt_options **options_out)
{
    poprt_options *o = poprt__calloc(1, sizeof *o);
    if (!o)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    *options_out = o;
    return POPRT_OK;
}

void poprt__options_free(poprt_options *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++) {
        poprt__free(o->kv[i].key);
        poprt__free(o->kv[i].value);
    }
    poprt__free(o->kv);
    poprt__free(o);
}

const char *poprt__opt(const poprt_options *o, const char *key)
{
    if (!o)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->kv[i].key, key) == 0)
            return o->kv[i].value;
    return NULL;
}

int poprt__opt_threads(const poprt_options *o, int max)
{
    const char *v = poprt__opt(o, "threads");
    long n = v ? strtol(v, NULL, 10) : 1;
    return n < 1 ? 1 : n > max ? max : (int)n;
}

static int parse_int(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

poprt_status poprt__parse_dims(const char *text, int64_t *dims, int *rank, const char *what)
{
    int r = 0;
    const char *p = text;
    if (!*p) {
        *rank = 0;
        return POPRT_OK;
    }
    for (;;) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v < 0 || r >= POPRT__MAX_RANK)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option '%s' value '%s': expected comma-separated dims >= 0", what, text);
        dims[r++] = v;
        if (*end == 0)
            break;
        if (*end != ',')
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option '%s' value '%s': expected comma-separated dims >= 0", what, text);
        p = end + 1;
    }
    *rank = r;
    return POPRT_OK;
}

static poprt_status parse_anchor(const char *key, const char *v, poprt__anchor_cfg *out)
{
    poprt__anchor_cfg a = {POPRT_ANCHOR_ALL, 1};
    long long n;
    if (strcmp(v, "All") == 0 || strcmp(v, "ALL") == 0)
        a.kind = POPRT_ANCHOR_ALL;
    else if (strcmp(v, "Final") == 0 || strcmp(v, "FINAL") == 0)
        a.kind = POPRT_ANCHOR_FINAL;
    else if (strcmp(v, "Sum") == 0 || strcmp(v, "SUM") == 0)
        a.kind = POPRT_ANCHOR_SUM;
    else if ((strncmp(v, "EveryN:", 7) == 0 || strncmp(v, "EVERYN:", 7) == 0) &&
             parse_int(v + 7, 1, 1LL << 40, &n)) {
        a.kind = POPRT_ANCHOR_EVERY_N;
        a.every_n = n;
    } else
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "option '%s' value '%s': expected All, Final, Sum or EveryN:<n>", key, v);
    if (out)
        *out = a;
    return POPRT_OK;
}

poprt_status poprt__parse_anchor(const char *key, const char *v, poprt__anchor_cfg *out)
{
    return parse_anchor(key, v, out);
}

/* The resource limits (poprt__limits) and the largest value each takes. */
static const struct {
    const char *key;
    long long max;
} limit_keys[] = {
    {"max_nodes", (long long)1 << 40},
    {"max_tensor_bytes", LLONG_MAX},
    {"max_loop_iterations", LLONG_MAX},
    {"max_subgraph_depth", POPRT__HARD_MAX_SUBGRAPH_DEPTH},
};

poprt_status poprt__limits_from_options(const poprt_options *o, poprt__limits *l)
{
    for (size_t i = 0; i < sizeof limit_keys / sizeof limit_keys[0]; i++) {
        const char *v = poprt__opt(o, limit_keys[i].key);
        long long n;
        if (!v)
            continue;
        if (!parse_int(v, 1, limit_keys[i].max, &n))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option '%s' value '%s': expected an integer in 1..%lld",
                              limit_keys[i].key, v, limit_keys[i].max);
        switch (i) {
        case 0: l->max_nodes = n; break;
        case 1: l->max_tensor_bytes = (uint64_t)n; break;
        case 2: l->max_loop_iterations = n; break;
        default: l->max_subgraph_depth = (int)n; break;
        }
    }
    return POPRT_OK;
}

/* Integer options of the runners and asynchronous runs (runtime.h) and
 * their ranges. */
static const struct {
    const char *key;
    long long lo, hi;
} int_keys[] = {
    {"async_workers", 1, 256},      {"replicas", 1, 1024},     {"cores_per_replica", 1, 1024},
    {"pin_cores", 0, 1},            {"queue_size", 1, 1 << 24}, {"max_batch", 1, 1 << 20},
    {"batching_dim", 0, 11},        {"batch_timeout_us", 0, (long long)1 << 40},
    {"host_threads", 0, 1},
    {"pipeline", 0, 1},             {"cores_per_stage", 1, 1024},
    {"pack", 0, 1},                 {"pack_seq_len", 1, 1 << 20}, {"pack_max_rows", 1, 1024},
    {"pack_timeout_us", 0, (long long)1 << 40}, {"pack_positions", 0, 1},
};

/* "n,n,..." ascending positive sizes (at most 32). */
poprt_status poprt__parse_sizes(const char *key, const char *text, int64_t *sizes, int *n_out)
{
    int n = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno || end == p || v < 1 || (n && v <= sizes[n - 1]) || n == 32 ||
            (*end && *end != ','))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option '%s' value '%s': expected up to 32 ascending sizes >= 1, "
                              "comma-separated",
                              key, text);
        sizes[n++] = v;
        p = *end ? end + 1 : end;
    }
    if (!n)
        return poprt__err(POPRT_STATUS_INVALID_OPTION, "option '%s': no sizes", key);
    *n_out = n;
    return POPRT_OK;
}

static poprt_status check_kv(const char *key, const char *value)
{
    long long n;
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++)
        if (strcmp(key, int_keys[i].key) == 0) {
            if (!parse_int(value, int_keys[i].lo, int_keys[i].hi, &n))
                return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                  "option '%s' value '%s': expected an integer in %lld..%lld", key,
                                  value, int_keys[i].lo, int_keys[i].hi);
            return POPRT_OK;
        }
    if (strcmp(key, "batch_sizes") == 0) {
        int64_t sizes[32];
        int ns;
        return poprt__parse_sizes(key, value, sizes, &ns);
    }
    if (strcmp(key, "threads") == 0) {
        if (!parse_int(value, 1, 1024, &n))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option 'threads' value '%s': expected an integer in 1..1024", value);
        return POPRT_OK;
    }
    if (strcmp(key, "batches_per_step") == 0) {
        if (!parse_int(value, 1, 1 << 30, &n))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option 'batches_per_step' value '%s': expected an integer >= 1", value);
        return POPRT_OK;
    }
    if (strcmp(key, "anchors") == 0 || (strncmp(key, "anchor.", 7) == 0 && key[7]))
        return parse_anchor(key, value, NULL);
    if (strcmp(key, "profile") == 0 || strcmp(key, "optimize") == 0) {
        if (strcmp(value, "0") && strcmp(value, "1"))
            return poprt__err(POPRT_STATUS_INVALID_OPTION, "option '%s' value '%s': expected 0 or 1",
                              key, value);
        return POPRT_OK;
    }
    if (strcmp(key, "float16_compute") == 0) {
        if (strcmp(value, "float32") && strcmp(value, "float16"))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option 'float16_compute' value '%s': expected float32 or float16",
                              value);
        return POPRT_OK;
    }
    if (strcmp(key, "matmul_precision") == 0) {
        if (strcmp(value, "float32") && strcmp(value, "bfloat16"))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option 'matmul_precision' value '%s': expected float32 or bfloat16",
                              value);
        return POPRT_OK;
    }
    if (strcmp(key, "conv_algorithm") == 0) {
        if (strcmp(value, "auto") && strcmp(value, "direct") && strcmp(value, "winograd_2x2") &&
            strcmp(value, "winograd_4x4"))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "option 'conv_algorithm' value '%s': expected auto, direct, "
                              "winograd_2x2 or winograd_4x4",
                              value);
        return POPRT_OK;
    }
    if (strcmp(key, "pack_mask_input") == 0)
        return *value ? POPRT_OK
                      : poprt__err(POPRT_STATUS_INVALID_OPTION, "option 'pack_mask_input': empty");
    if (strcmp(key, "cache_dir") == 0)
        return *value ? POPRT_OK
                      : poprt__err(POPRT_STATUS_INVALID_OPTION, "option 'cache_dir': empty path");
    if (strncmp(key, "input_shape.", 12) == 0 && key[12]) {
        int64_t dims[POPRT__MAX_RANK];
        int rank;
        return poprt__parse_dims(value, dims, &rank, key);
    }
    for (size_t i = 0; i < sizeof limit_keys / sizeof limit_keys[0]; i++)
        if (strcmp(key, limit_keys[i].key) == 0) {
            if (!parse_int(value, 1, limit_keys[i].max, &n))
                return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                  "option '%s' value '%s': expected an integer in 1..%lld", key,
                                  value, limit_keys[i].max);
            return POPRT_OK;
        }
    return poprt__err(POPRT_STATUS_INVALID_OPTION,
                      "unknown option '%s' (known: threads, batches_per_step, anchors, "
                      "anchor.<output>, input_shape.<input>, cache_dir, profile, optimize, float16_compute, "
                      "matmul_precision, conv_algorithm, "
                      "max_nodes, max_tensor_bytes, max_loop_iterations, max_subgraph_depth, "
                      "async_workers, replicas, cores_per_replica, pin_cores, queue_size, "
                      "max_batch, batching_dim, batch_sizes, batch_timeout_us, host_threads, "
                      "pipeline, cores_per_stage, pack, pack_seq_len, pack_max_rows, "
                      "pack_timeout_us, pack_mask_input, pack_positions)",
                      key);
}

poprt_status poprt__options_add(poprt_options *dst, const poprt_options *src, int hooks)
{
    return poprt__options_add_except(dst, src, hooks, NULL);
}

poprt_status poprt__options_add_except(poprt_options *dst, const poprt_options *src, int hooks,
                                       const char *skip)
{
    poprt_status st = POPRT_OK;
    for (size_t i = 0; !st && src && i < src->n; i++)
        if (!skip || strncmp(src->kv[i].key, skip, strlen(skip)))
            st = poprt__options_set(dst, src->kv[i].key, src->kv[i].value);
    if (!st && src && hooks) {
        dst->pf = src->pf;
        dst->pf_user = src->pf_user;
        dst->pf_width = src->pf_width;
    }
    return st;
}

poprt_status poprt__options_set(poprt_options *o, const char *key, const char *value)
{
    poprt_status st = check_kv(key, value);
    if (st)
        return st;
    char *v = poprt__strdup(value);
    if (!v)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->kv[i].key, key) == 0) {
            poprt__free(o->kv[i].value);
            o->kv[i].value = v;
            return POPRT_OK;
        }
    char *k = poprt__strdup(key);
    poprt__kv *kv = poprt__realloc(o->kv, (o->n + 1) * sizeof *kv);
    if (!k || !kv) {
        poprt__free(k);
        poprt__free(v);
        if (kv)
            o->kv = kv;
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    o->kv = kv;
    o->kv[o->n].key = k;
    o->kv[o->n].value = v;
    o->n++;
    return POPRT_OK;
}

poprt_status poprt__options_validate(const poprt_options *o)
{
    for (size_t i = 0; o && i < o->n; i++) {
        poprt_status st = check_kv(o->kv[i].key, o->kv[i].value);
        if (st)
            return st;
    }
    return POPRT_OK;
}
