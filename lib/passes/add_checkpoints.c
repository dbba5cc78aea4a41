/* add_checkpoints: makes intermediate tensors graph outputs so their values
 * can be inspected (PopRT's --checkpoints, for debugging precision). */
#include <string.h>
#include "passes/util_precision.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"checkpoints", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse("add_checkpoints", args, known, &a);
    if (st)
        return st;
    char buf[4096];
    const char *names[256];
    int n = poprt__arg_list(poprt__pass_arg(&a, "checkpoints"), buf, sizeof buf, names, 256);
    poprt__graph *g = m->graph;
    *changed = 0;
    for (int i = 0; i < n; i++) {
        poprt__tensor *t = poprt__graph_find(g, names[i]);
        if (!t || t->graph != g || (!t->producer && !t->is_input && !t->is_initializer && !t->raw))
            return poprt__err(POPRT_STATUS_NOT_FOUND,
                              "no tensor '%s' in the main graph", names[i]);
        if (t->is_output)
            continue;
        t->is_output = 1;
        poprt_status st = poprt__graph_add_output(g, t);
        if (st)
            return st;
        *changed = 1;
    }
    return POPRT_OK;
}

const poprt__pass poprt__pass_add_checkpoints = {
    "add_checkpoints",
    "add intermediate tensors as graph outputs for debugging; args checkpoints=[name,...]", run, 1};
