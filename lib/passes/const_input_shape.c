/* const_input_shape: fixes the shapes of named inputs, e.g.
 * "input_ids=[1,128],attention_mask=[1,128]" (also 1x128), then infers shapes
 * again. Symbolic names are fixed wherever they appear. Known dims must agree. */
#include <errno.h>
#include <stdlib.h>
#include "passes/rewrite.h"

static poprt_status parse_dims(const char *key, const char *v, int64_t *dims, int *rank)
{
    const char *p = v;
    int r = 0;
    if (*p == '[')
        p++;
    while (*p && *p != ']') {
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || x < 0 || r == POPRT__MAX_RANK)
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "pass 'const_input_shape': bad shape '%s' for input '%s'", v, key);
        dims[r++] = x;
        p = end;
        if (*p == ',' || *p == 'x' || *p == 'X')
            p++;
    }
    if ((*v == '[') != (*p == ']') || (*p == ']' && p[1]))
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass 'const_input_shape': bad shape '%s' for input '%s'", v, key);
    *rank = r;
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse("const_input_shape", args, NULL, &a);
    if (st)
        return st;
    *changed = 0;
    poprt__graph *g = m->graph;
    for (int k = 0; k < a.n && !st; k++) {
        int64_t dims[POPRT__MAX_RANK];
        int rank = 0;
        if ((st = parse_dims(a.keys[k], a.vals[k], dims, &rank)))
            break;
        poprt__tensor *t = poprt__map_get(&g->by_name, a.keys[k]);
        if (!t || !t->is_input || t->is_initializer)
            return poprt__err(POPRT_STATUS_NOT_FOUND, "pass 'const_input_shape': no input '%s'",
                              a.keys[k]);
        if (t->type.kind != POPRT__KIND_TENSOR)
            return poprt__err(POPRT_STATUS_SHAPE_MISMATCH,
                              "pass 'const_input_shape': input '%s' is not a tensor", t->name);
        if (t->type.rank < 0) {
            if (poprt__type_set_tensor(&m->arena, &t->type, t->type.elem, rank, dims))
                return poprt__rw_oom();
            *changed = 1;
            continue;
        }
        if (t->type.rank != rank)
            return poprt__err(POPRT_STATUS_SHAPE_MISMATCH,
                              "pass 'const_input_shape': input '%s' has rank %d, not %d", t->name,
                              t->type.rank, rank);
        for (int d = 0; d < rank && !st; d++) {
            *changed |= t->type.dims[d].value < 0;
            st = poprt__rw_fix_dim(m, t, d, dims[d]);
        }
    }
    if (!st && *changed)
        st = poprt__graph_infer(g, NULL);
    return st;
}

const poprt__pass poprt__pass_const_input_shape = {
    "const_input_shape",
    "fix input shapes given as NAME=[D1,D2,...],... (symbolic dims become constants) and re-infer",
    run, 1};
