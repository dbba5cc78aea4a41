/* apply_ir_pass: runs a list of built-in passes in order,
 * passes=[name,name,...], checking the model after each one (the manager
 * checks once more after the whole list). PopRT applies its ONNX-IR
 * optimizer passes (eliminate_*, fuse_*) this way; here any built-in pass
 * can be listed. Host-registered passes work on the public handle and are
 * run by the pass manager instead. */
#include <string.h>
#include "passes/rewrite.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    static const char *const known[] = {"passes", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse("apply_ir_pass", args, known, &a);
    if (st)
        return st;
    const char *list = poprt__pass_arg(&a, "passes");
    if (!list)
        return POPRT_OK;
    char buf[1024];
    size_t len = strlen(list);
    if (len >= sizeof buf)
        return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass 'apply_ir_pass': passes list too long");
    memcpy(buf, list, len + 1);
    char *p = buf;
    if (*p == '[') {
        p++;
        if (len < 2 || buf[len - 1] != ']')
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "pass 'apply_ir_pass': passes='%s' lacks its closing ']'", list);
        buf[len - 1] = 0;
    }
    /* check every name first: a typo must not leave the model half converted */
    for (int pass = 0; pass < 2; pass++) {
        char *q = p;
        while (*q) {
            while (*q == ' ')
                q++;
            char *e = q;
            while (*e && *e != ',')
                e++;
            char save = *e;
            char *end = e;
            while (end > q && end[-1] == ' ')
                end--;
            char keep = *end;
            *end = 0;
            if (*q) {
                const poprt__pass *b = NULL;
                poprt_pass_fn fn;
                void *user;
                if (!poprt__pass_lookup(q, &b, &fn, &user))
                    return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                      "pass 'apply_ir_pass': no pass named '%s'", q);
                if (!b || b->run == run)
                    return poprt__err(POPRT_STATUS_INVALID_OPTION,
                                      "pass 'apply_ir_pass': '%s' is not a built-in pass it can run", q);
                if (pass == 1) {
                    int ch = 0;
                    st = b->run(m, NULL, &ch);
                    if (!st)
                        st = poprt__model_check(m);
                    if (st)
                        return poprt__err_prefix(st, "pass 'apply_ir_pass': '%s': ", q);
                    *changed += ch != 0;
                }
            }
            *end = keep;
            q = save ? e + 1 : e;
        }
    }
    return POPRT_OK;
}

const poprt__pass poprt__pass_apply_ir_pass = {
    "apply_ir_pass", "run the built-in passes passes=[a,b,...] in order, checking after each", run, 1};
