/* The Scan node's layout (see scan_layout.h). */
#include <string.h>
#include "ir/scan_layout.h"
#include "ir/op.h"

/* Attribute list `name` of n entries (default 0 each). */
static poprt_status scan_axes(const poprt__node *node, const char *name, int64_t n, int64_t *out)
{
    int64_t cnt = 0;
    const int64_t *v = poprt__attr_ints(node, name, &cnt);
    if (v && cnt != n)
        return POPRT__NODE_ERR(node, POPRT_STATUS_INVALID_MODEL, "%s has %lld entries, expected %lld",
                               name, (long long)cnt, (long long)n);
    for (int64_t i = 0; i < n; i++)
        out[i] = v ? v[i] : 0;
    return POPRT_OK;
}

poprt_status poprt__scan_layout(const poprt__node *node, int opset, int n_in, int n_out,
                                poprt__scan_layout_t *l)
{
    memset(l, 0, sizeof *l);
    const poprt__attr *ba = poprt__node_attr(node, "body");
    l->body = ba && ba->type == POPRT__ATTR_GRAPH ? ba->g : NULL;
    if (!l->body)
        return POPRT__NODE_ERR(node, POPRT_STATUS_INVALID_MODEL, "needs a body graph attribute");
    l->v8 = opset < 9;
    l->first = l->v8 ? 1 : 0;
    l->m = poprt__attr_i(node, "num_scan_inputs", -1);
    l->n = n_in - l->first - (int)l->m;
    if (l->m < 1 || l->n < 0 || l->m > POPRT__SCAN_MAX || n_out > POPRT__SCAN_MAX)
        return POPRT__NODE_ERR(node, POPRT_STATUS_INVALID_MODEL,
                               "num_scan_inputs %lld does not fit %d inputs", (long long)l->m, n_in);
    l->k = n_out - l->n;
    if (l->k < 0 || l->body->inputs.len != (size_t)(l->n + l->m) ||
        l->body->outputs.len != (size_t)n_out)
        return POPRT__NODE_ERR(node, POPRT_STATUS_INVALID_MODEL,
                               "body takes %zu inputs and gives %zu outputs; the node has %d "
                               "states, %lld scan inputs and %d outputs",
                               l->body->inputs.len, l->body->outputs.len, l->n, (long long)l->m,
                               n_out);
    poprt_status st;
    if (l->v8) {
        st = scan_axes(node, "directions", l->m, l->in_dir);
    } else {
        st = scan_axes(node, "scan_input_axes", l->m, l->in_axis);
        if (!st)
            st = scan_axes(node, "scan_input_directions", l->m, l->in_dir);
        if (!st)
            st = scan_axes(node, "scan_output_axes", l->k, l->out_axis);
        if (!st)
            st = scan_axes(node, "scan_output_directions", l->k, l->out_dir);
    }
    return st;
}
