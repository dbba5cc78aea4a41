/* Helpers shared by the fuzz targets: see fuzz.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

long fz_accepted;

uint8_t fz_u8(fz_bytes *b)
{
    if (!b->n)
        return 0;
    b->n--;
    return *b->p++;
}

int fz_one_in(const uint8_t *data, size_t size, unsigned n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    return n && h % n == 0;
}

void fz_token(fz_bytes *b, char sep, char *buf, size_t cap)
{
    size_t k = 0;
    while (b->n) {
        char c = (char)*b->p++;
        b->n--;
        if (c == sep)
            break;
        if (k + 1 < cap)
            buf[k++] = c;
    }
    buf[k] = 0;
}

void fz_fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz: %s: %s\n", what, detail ? detail : "");
    abort();
}

void fz_check(poprt_status st, const char *what)
{
    if (st)
        fz_fail(what, poprt_last_error());
}

/* Every failure is a documented status with a message. */
static poprt_status checked(poprt_status st, const char *call)
{
    if (st && !strcmp(poprt_status_string(st), "unknown status"))
        fz_fail(call, "returned a status outside POPRT_STATUS_MAP");
    if (st && !*poprt_last_error())
        fz_fail(call, "failed without a message");
    return st;
}

poprt_model *fz_model(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", POPRT_FUZZ_TESTS, name);
    poprt_model *m = NULL;
    fz_check(poprt_model_load(path, &m), path);
    return m;
}

poprt_model *const *fz_small_models(void)
{
    static poprt_model *models[FZ_SMALL_MODELS];
    if (!models[0]) {
        unsetenv("POPRT_CACHE_DIR"); /* no engine cache: nothing is written */
        models[0] = fz_model("fuzz/models/patterns.onnx");
        models[1] = fz_model("fuzz/models/small.onnx");
        models[2] = fz_model("data/mlp_dynamic.onnx");
        models[3] = fz_model("data/conv.onnx");
    }
    return models;
}

static int64_t numel(const poprt_value_info *vi)
{
    int64_t n = 1;
    for (int d = 0; d < vi->rank; d++) {
        int64_t v = vi->dims[d] < 0 ? 3 : vi->dims[d];
        if (v && n > FZ_MAX_ELEMS / v)
            return FZ_MAX_ELEMS + 1;
        n *= v;
    }
    return n;
}

int fz_model_too_big(const poprt_model *m)
{
    const char *const *ids;
    size_t count;
    if (poprt_model_tensor_ids(m, &ids, &count))
        return 1;
    for (size_t i = 0; i < count; i++) {
        poprt_value_info vi = {.size = sizeof vi};
        if (!poprt_model_tensor_info(m, ids[i], &vi) && numel(&vi) > FZ_MAX_ELEMS)
            return 1;
    }
    return 0;
}

/* Small values of every type: integers -2..5, floats in [-4, 4) in steps
 * of 1/32 (data may set sizes, indices and loop counts); other types
 * (float16, float8, ...) get the bytes as they come. */
static void fill(void *buf, poprt_dtype dt, size_t n, fz_bytes *b)
{
    static const char *const strings[8] = {"1", "", "abc", "-2.5", "a,b", "NaN", "x y", "0"};
    const size_t es = poprt_dtype_size(dt);
    for (size_t i = 0; i < n; i++) {
        uint8_t v = fz_u8(b);
        double f = (double)(int8_t)v / 32.0;
        int64_t k = (int64_t)(v % 8) - 2;
        switch (dt) {
        case POPRT_DTYPE_FLOAT: ((float *)buf)[i] = (float)f; break;
        case POPRT_DTYPE_DOUBLE: ((double *)buf)[i] = f; break;
        case POPRT_DTYPE_INT64: ((int64_t *)buf)[i] = k; break;
        case POPRT_DTYPE_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(v % 6); break;
        case POPRT_DTYPE_INT32: ((int32_t *)buf)[i] = (int32_t)k; break;
        case POPRT_DTYPE_UINT32: ((uint32_t *)buf)[i] = v % 6u; break;
        case POPRT_DTYPE_INT16: ((int16_t *)buf)[i] = (int16_t)k; break;
        case POPRT_DTYPE_UINT16: ((uint16_t *)buf)[i] = (uint16_t)(v % 6u); break;
        case POPRT_DTYPE_INT8: ((int8_t *)buf)[i] = (int8_t)k; break;
        case POPRT_DTYPE_BOOL: ((uint8_t *)buf)[i] = v & 1; break;
        case POPRT_DTYPE_STRING: ((const char **)buf)[i] = strings[v % 8]; break;
        default:
            for (size_t j = 0; j < es; j++)
                ((uint8_t *)buf)[i * es + j] = j ? fz_u8(b) : v;
        }
    }
}

typedef struct bound {
    void *data;
    size_t bytes;
    void *keys; /* a map input's */
} bound;

/* A map input of up to 4 entries: keys and values from the bytes (keys
 * may repeat, which the operators reading the map must report). */
static poprt_status bind_map(poprt_stepio *io, const poprt_value_info *vi, bound *b,
                             fz_bytes *seed)
{
    const size_t n = fz_u8(seed) % 5, ks = poprt_dtype_size(vi->key_dtype),
                 vs = poprt_dtype_size(vi->dtype);
    b->keys = calloc(n + 1, ks ? ks : 1);
    b->data = calloc(n + 1, vs ? vs : 1);
    if (!b->keys || !b->data)
        fz_fail("fz_run", "out of memory");
    fill(b->keys, vi->key_dtype, n, seed);
    fill(b->data, vi->dtype, n, seed);
    return poprt_stepio_set_input_map(io, vi->name, vi->key_dtype, b->keys, vi->dtype, b->data, n);
}

poprt_status fz_run(poprt_session *s, fz_bytes seed)
{
    poprt_stepio *io = NULL;
    poprt_status st = checked(poprt_stepio_create(&io), "poprt_stepio_create");
    const size_t n_in = poprt_session_num_inputs(s);
    bound *bufs = calloc(n_in + 1, sizeof *bufs);
    if (!bufs)
        fz_fail("fz_run", "out of memory");
    const int64_t bps = poprt_session_batches_per_step(s);
    size_t total = 0;
    /* a model (or options) may plan any amount of activation memory */
    int skip = poprt_session_arena_bytes(s) > FZ_MAX_ARENA;
    for (size_t i = 0; !st && !skip && i < n_in; i++) {
        poprt_value_info vi = {.size = sizeof vi};
        if ((st = checked(poprt_session_input(s, i, &vi), "poprt_session_input")))
            break;
        if (vi.kind == POPRT_VALUE_MAP) {
            st = checked(bind_map(io, &vi, &bufs[i], &seed), "poprt_stepio_set_input_map");
            continue;
        }
        int64_t dims[16];
        int rank = 0;
        if (bps > 1)
            dims[rank++] = bps;
        for (int d = 0; d < vi.rank && rank < 16; d++)
            dims[rank++] = vi.dims[d] >= 0 ? vi.dims[d] : 1 + fz_u8(&seed) % 3;
        size_t n = 1, es = poprt_dtype_size(vi.dtype);
        for (int d = 0; d < rank; d++) {
            if (dims[d] && n > FZ_MAX_BYTES / (size_t)dims[d])
                skip = 1;
            n *= (size_t)dims[d];
        }
        if (skip || !es || n > FZ_MAX_BYTES / es || (total += n * es) > FZ_MAX_BYTES) {
            skip = 1;
            break;
        }
        bufs[i].bytes = n * es;
        if (!(bufs[i].data = calloc(n ? n : 1, es)))
            fz_fail("fz_run", "out of memory");
        fill(bufs[i].data, vi.dtype, n, &seed);
        const void *data = bufs[i].data;
        if (vi.kind == POPRT_VALUE_SEQUENCE)
            st = poprt_stepio_set_input_sequence(io, vi.name, vi.dtype, 1,
                                                 (const int64_t *const[]){dims}, &rank, &data,
                                                 &bufs[i].bytes);
        else if (vi.kind == POPRT_VALUE_OPTIONAL)
            st = poprt_stepio_set_input_optional(io, vi.name, fz_u8(&seed) & 1,
                                                 POPRT_VALUE_TENSOR, vi.dtype, dims, rank, data,
                                                 bufs[i].bytes);
        else
            st = poprt_stepio_set_input(io, vi.name, vi.dtype, dims, rank, data, bufs[i].bytes);
        checked(st, "poprt_stepio_set_input*");
    }
    for (size_t i = 0; !st && !skip && i < poprt_session_num_outputs(s); i++) {
        poprt_value_info vi = {.size = sizeof vi};
        if (!(st = checked(poprt_session_output(s, i, &vi), "poprt_session_output"))) {
            st = checked(poprt_stepio_set_output_alloc(io, vi.name), "poprt_stepio_set_output_alloc");
            poprt_anchor a;
            int64_t every;
            checked(poprt_session_anchor(s, vi.name, &a, &every), "poprt_session_anchor");
        }
    }
    if (!st && !skip)
        st = checked(poprt_session_run(s, io), "poprt_session_run");
    poprt_stepio_free(io);
    for (size_t i = 0; i < n_in; i++) {
        free(bufs[i].data);
        free(bufs[i].keys);
    }
    free(bufs);
    return st;
}

/* Fixes the symbolic dims of the model's tensor inputs (1..3, from the
 * bytes) with input_shape options the caller did not set, so the session
 * plans every shape and fz_run can skip arenas that are too large (a model
 * may scale a dim by 1e17 with a constant). */
static void fix_input_shapes(const poprt_model *m, poprt_options *o, fz_bytes *b)
{
    for (size_t i = 0; i < poprt_model_num_inputs(m); i++) {
        poprt_value_info vi = {.size = sizeof vi};
        if (poprt_model_input(m, i, &vi) || vi.kind != POPRT_VALUE_TENSOR || vi.rank <= 0 ||
            vi.rank > 16 || strlen(vi.name) > 200)
            continue;
        char key[256], val[16 * 24];
        size_t len = 0;
        int symbolic = 0;
        for (int d = 0; d < vi.rank; d++) {
            long long v = vi.dims[d];
            if (v < 0) {
                symbolic = 1;
                v = 1 + fz_u8(b) % 3;
            }
            len += (size_t)snprintf(val + len, sizeof val - len, d ? ",%lld" : "%lld", v);
        }
        snprintf(key, sizeof key, "input_shape.%s", vi.name);
        if (symbolic && !poprt_options_get(o, key))
            poprt_options_set(o, key, val); /* refused for odd names: the run stays dynamic */
    }
}

poprt_status fz_session_run(const poprt_model *model, poprt_options *options, fz_bytes seed)
{
    poprt_options *own = NULL;
    if (!options) {
        fz_check(poprt_options_create(&own), "poprt_options_create");
        options = own;
    }
    fix_input_shapes(model, options, &seed);
    /* a tensor made at run time from data (OneHot's depth, Range, Expand)
     * may ask for gigabytes: such runs stop with LIMIT_EXCEEDED */
    if (!poprt_options_get(options, "max_tensor_bytes"))
        poprt_options_set(options, "max_tensor_bytes", FZ_MAX_RUN_BYTES_STR);
    poprt_session *s = NULL;
    poprt_status st = checked(poprt_session_create(model, options, &s), "poprt_session_create");
    if (!st)
        st = fz_run(s, seed);
    poprt_session_free(s);
    poprt_options_free(own);
    return st;
}
