/* remove_outputs (the CLI's --remove_outputs): removes the named graph
 * outputs, then the nodes and initializers only they needed. Arguments:
 * outputs=[a,b] (or the bare names "a,b"). Naming an output the graph does
 * not have is an error, and so is removing every output. */
#include <string.h>
#include "passes/passes.h"

static int listed(const poprt__pass_args *a, const char *name)
{
    for (int i = 0; i < a->n; i++) {
        const char *k = a->keys[i], *v = a->vals[i];
        if (strcmp(k, "outputs") != 0) {
            if (strcmp(k, name) == 0)
                return 1;
            continue;
        }
        /* "[a,b,c]" or "a" */
        size_t n = strlen(name);
        const char *p = v + (*v == '[');
        while (*p && *p != ']') {
            const char *e = p;
            while (*e && *e != ',' && *e != ']')
                e++;
            if ((size_t)(e - p) == n && strncmp(p, name, n) == 0)
                return 1;
            p = *e == ',' ? e + 1 : e;
        }
    }
    return 0;
}

/* Bare names "a,b" become "a=,b=" for the key=value parser. */
static poprt_status parse(const char *args, poprt__pass_args *a)
{
    if (!args || !*args || strchr(args, '='))
        return poprt__pass_args_parse("remove_outputs", args, NULL, a);
    char buf[4096];
    size_t k = 0;
    for (const char *p = args; *p; p++) {
        if (k + 3 >= sizeof buf)
            return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass 'remove_outputs': arguments too long");
        if (*p == ',')
            buf[k++] = '=';
        buf[k++] = *p;
    }
    buf[k++] = '=';
    buf[k] = 0;
    return poprt__pass_args_parse("remove_outputs", buf, NULL, a);
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    poprt__pass_args a;
    poprt_status st = parse(args, &a);
    *changed = 0;
    if (st)
        return st;
    poprt__graph *g = m->graph;
    /* every name must be an output */
    for (int i = 0; i < a.n; i++) {
        const char *names = strcmp(a.keys[i], "outputs") == 0 ? a.vals[i] : a.keys[i];
        char one[1024];
        const char *p = names + (*names == '[');
        while (*p && *p != ']') {
            size_t len = strcspn(p, ",]");
            if (len && len < sizeof one) {
                memcpy(one, p, len);
                one[len] = 0;
                int found = 0;
                for (size_t k = 0; k < g->outputs.len && !found; k++)
                    found = strcmp(((poprt__tensor *)g->outputs.items[k])->name, one) == 0;
                if (!found)
                    return poprt__err(POPRT_STATUS_NOT_FOUND,
                                      "pass 'remove_outputs': the graph has no output '%s'", one);
            }
            p += len;
            p += *p == ',';
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < g->outputs.len; i++)
        k += !listed(&a, ((poprt__tensor *)g->outputs.items[i])->name);
    if (k == 0)
        return poprt__err(POPRT_STATUS_INVALID_ARGUMENT,
                          "pass 'remove_outputs': removing every output leaves nothing to compute");
    k = 0;
    for (size_t i = 0, n = g->outputs.len; i < n; i++) {
        poprt__tensor *t = g->outputs.items[i];
        if (listed(&a, t->name)) {
            t->is_output = 0;
            *changed = 1;
        } else
            poprt__graph_set_output(g, k++, t);
    }
    poprt__graph_truncate_outputs(g, k);
    if (*changed)
        poprt__graph_remove_dead(g);
    return POPRT_OK;
}

const poprt__pass poprt__pass_remove_outputs = {
    "remove_outputs",
    "remove the named graph outputs (outputs=[a,b] or a,b) and the nodes only they needed", run, 2};
