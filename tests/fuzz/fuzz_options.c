/* fuzz_options: session options as text ("key=value" lines) set with
 * poprt_options_set, then a session of one of the small models created
 * with them and run once (fz_run).
 *
 * Input: one byte choosing the model, then lines of key=value. Skipped,
 * as resources rather than faults: "cache_dir" (it writes files), more
 * than 4 threads and more than 8 batches per step (the run is skipped). */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

static long value_of(const poprt_options *o, const char *key)
{
    const char *v = poprt_options_get(o, key);
    return v ? strtol(v, NULL, 10) : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes b = {data, size};
    poprt_model *m = fz_small_models()[fz_u8(&b) % FZ_SMALL_MODELS];
    poprt_options *o;
    fz_check(poprt_options_create(&o), "poprt_options_create");
    int ok = 1;
    while (b.n) {
        char line[512], *eq;
        fz_token(&b, '\n', line, sizeof line);
        if (!(eq = strchr(line, '=')))
            continue;
        *eq = 0;
        if (!strcmp(line, "cache_dir"))
            continue;
        if (poprt_options_set(o, line, eq + 1) != POPRT_OK) {
            ok = 0;
            continue;
        }
        const char *back = poprt_options_get(o, line);
        if (!back || strcmp(back, eq + 1) != 0)
            fz_fail("poprt_options_get", "does not give back the value set");
    }
    /* the session (what the options do) for one input in 64 (fz_one_in):
     * this target is about the parser, and a session costs a thousand
     * parses; fuzz_model covers sessions */
    if (ok && fz_one_in(data, size, 64) && value_of(o, "threads") <= 4 &&
        value_of(o, "batches_per_step") <= 8)
        fz_session_run(m, o, (fz_bytes){data, size});
    poprt_options_free(o);
    return 0;
}
