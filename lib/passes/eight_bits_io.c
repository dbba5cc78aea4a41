/* eight_bits_io: image inputs (rank-4 float tensors, or the inputs named in
 * inputs=[a,b]) become uint8 with a Cast to the original float type right
 * after them, so the caller hands over raw 8-bit pixels: a quarter of the
 * bytes per request. Outputs are unchanged for inputs holding integers in
 * [0, 255]; the caller must now pass uint8 data. */
#include <string.h>
#include "passes/rewrite.h"

static int listed(const char *list, const char *name)
{
    if (!list)
        return -1;
    size_t n = strlen(name);
    const char *p = list;
    if (*p == '[')
        p++;
    while (*p) {
        const char *e = p;
        while (*e && *e != ',' && *e != ']')
            e++;
        if ((size_t)(e - p) == n && strncmp(p, name, n) == 0)
            return 1;
        p = *e ? e + 1 : e;
    }
    return 0;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    *changed = 0;
    static const char *const known[] = {"inputs", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse("eight_bits_io", args, known, &a);
    if (st)
        return st;
    const char *list = poprt__pass_arg(&a, "inputs");
    poprt__graph *g = m->graph;
    for (size_t i = 0; i < g->inputs.len; i++) {
        poprt__tensor *x = g->inputs.items[i];
        if (x->is_initializer || x->is_output || x->type.kind != POPRT__KIND_TENSOR)
            continue;
        int32_t e = x->type.elem;
        if (e != POPRT_DTYPE_FLOAT && e != POPRT_DTYPE_FLOAT16 && e != POPRT_DTYPE_BFLOAT16 &&
            e != POPRT_DTYPE_DOUBLE)
            continue;
        int l = listed(list, x->name);
        if (l == 0 || (l < 0 && x->type.rank != 4))
            continue;
        poprt__tensor *f = poprt__graph_new_tensor(g, "image");
        if (!f)
            return poprt__rw_oom();
        st = poprt__graph_replace_uses(g, x, f);
        poprt__node *c = st ? NULL : poprt__rw_node1(g, "Cast", "", 1, &x, f, NULL);
        if (!c || poprt__rw_attr_i(c, "to", e))
            return st ? st : poprt__rw_oom();
        x->type.elem = POPRT_DTYPE_UINT8;
        (*changed)++;
    }
    return POPRT_OK;
}

const poprt__pass poprt__pass_eight_bits_io = {
    "eight_bits_io",
    "make image inputs (rank-4 float, or inputs=[..]) uint8 with a Cast after them", run, 1};
