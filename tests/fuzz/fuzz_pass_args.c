/* fuzz_pass_args: pass arguments as text. Each input is up to 4 steps, each
 * a pass (a byte choosing one of poprt_pass_list's names, or from 0xF0 on a
 * name as text up to '\n') and its arguments (text up to '\n'), added with
 * poprt_pass_manager_add and run on a clone of one of the small models;
 * when the passes succeed the result is compiled and run once (fz_run).
 * The arguments also go through poprt__pass_args_parse with a list of
 * known keys and the integer and number readers.
 *
 * Not run (added only), as they touch files or ask for unbounded work
 * rather than test parsing: arguments naming files (output=, csv=, config=,
 * data=, origin=, calibration=) and numbers above 64. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "passes/passes.h"
#include "passes/util_precision.h"

static int safe_to_run(const char *args)
{
    static const char *const paths[] = {"output=", "csv=", "config=", "data=", "origin=",
                                        "calibration="};
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++)
        if (strstr(args, paths[i]))
            return 0;
    for (const char *p = args; *p; p++)
        if (isdigit((unsigned char)*p) && strtoll(p, NULL, 10) > 64)
            return 0;
    return 1;
}

/* The internal parser with a list of known keys, and its value readers. */
static void parse_directly(const char *name, const char *args)
{
    static const char *const known[] = {"a", "mode", "nodes", "factor", "version", NULL};
    poprt__pass_args pa;
    if (poprt__pass_args_parse(name, args, known, &pa) != POPRT_OK)
        return;
    for (int i = 0; i < pa.n; i++) {
        int64_t v;
        double d;
        poprt__pass_arg_int(name, &pa, pa.keys[i], 0, &v);
        poprt__pass_arg_float(name, &pa, pa.keys[i], 0, &d);
        char buf[256];
        const char *items[8];
        poprt__arg_list(pa.vals[i], buf, sizeof buf, items, 8);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes b = {data, size};
    const char *const *names;
    size_t count;
    fz_check(poprt_pass_list(&names, &count), "poprt_pass_list");
    const poprt_model *base = fz_small_models()[fz_u8(&b) % FZ_SMALL_MODELS];
    poprt_pass_manager *pm;
    fz_check(poprt_pass_manager_create(&pm), "poprt_pass_manager_create");
    int run = 1, added = 0;
    for (int step = 0; step < 4 && b.n; step++) {
        char name[128], args[4400];
        uint8_t k = fz_u8(&b);
        if (k >= 0xF0)
            fz_token(&b, '\n', name, sizeof name);
        else
            strcpy(name, names[k % count]);
        fz_token(&b, '\n', args, sizeof args);
        parse_directly(name, args);
        if (poprt_pass_manager_add(pm, name, *args ? args : NULL) == POPRT_OK) {
            added++;
            run &= safe_to_run(args);
        }
    }
    poprt_model *m = NULL;
    /* the passes and a session for one input in 64 (fz_one_in): this
     * target is about the parsers, and running passes costs a thousand
     * parses */
    run &= fz_one_in(data, size, 64);
    if (added && run && poprt_model_clone(base, &m) == POPRT_OK) {
        if (poprt_pass_manager_run(pm, m) == POPRT_OK && !fz_model_too_big(m))
            fz_session_run(m, NULL, b);
        poprt_model_free(m);
    }
    poprt_pass_manager_free(pm);
    return 0;
}
