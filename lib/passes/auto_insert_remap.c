/* auto_insert_remap: on the IPU, inserts Remap ops that re-lay-out tensors
 * across tiles after (or before) a chosen op type. A CPU tensor has one
 * layout in one memory, so there is nothing to remap: the pass validates
 * remap_mode ("before_<op>" / "after_<op>", e.g. after_matmul, before_add)
 * and reports that it changed nothing. */
#include <ctype.h>
#include <string.h>
#include "passes/rewrite.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)m;
    *changed = 0;
    static const char *const known[] = {"remap_mode", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse("auto_insert_remap", args, known, &a);
    if (st)
        return st;
    const char *mode = poprt__pass_arg(&a, "remap_mode");
    if (!mode)
        mode = "after_matmul";
    const char *op = strncmp(mode, "after_", 6) == 0    ? mode + 6
                     : strncmp(mode, "before_", 7) == 0 ? mode + 7
                                                         : NULL;
    int ok = op && *op;
    for (const char *p = op; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || *p == '_';
    if (!ok)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass 'auto_insert_remap': remap_mode '%s' is not before_<op_type> or "
                          "after_<op_type> (e.g. after_matmul)",
                          mode);
    return POPRT_OK;
}

const poprt__pass poprt__pass_auto_insert_remap = {
    "auto_insert_remap",
    "IPU tile remapping; on the CPU a validated no-op (checks remap_mode=before_|after_<op>)", run, 1};
