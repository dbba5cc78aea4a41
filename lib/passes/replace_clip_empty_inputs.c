/* replace_clip_empty_inputs: Clip (opset >= 11) with omitted bounds gets
 * explicit ones: an omitted min before a given max becomes a constant
 * holding the type's lowest value (-inf for floats), trailing omitted
 * inputs are dropped. Backends that cannot take empty input names accept
 * the result; values are unchanged. */
#include <math.h>
#include <stdint.h>
#include "passes/rewrite.h"

static int lowest(int32_t dt, double *v)
{
    switch (dt) {
    case POPRT_DTYPE_INT8: *v = INT8_MIN; return 1;
    case POPRT_DTYPE_INT16: *v = INT16_MIN; return 1;
    case POPRT_DTYPE_INT32: *v = INT32_MIN; return 1;
    case POPRT_DTYPE_UINT8:
    case POPRT_DTYPE_UINT16:
    case POPRT_DTYPE_UINT32:
    case POPRT_DTYPE_UINT64: *v = 0; return 1;
    default: break;
    }
    if (poprt__dtype_is_float(dt) && dt != POPRT_DTYPE_FLOAT8E4M3FN &&
        dt != POPRT_DTYPE_FLOAT8E4M3FNUZ && dt != POPRT_DTYPE_FLOAT8E5M2FNUZ &&
        dt != POPRT_DTYPE_FLOAT4E2M1 && dt != POPRT_DTYPE_FLOAT8E8M0) {
        *v = -INFINITY;
        return 1;
    }
    return 0; /* int64: stored through double would not be exact */
}

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    if (n->opset < 11 || n->n_inputs < 2)
        return POPRT_OK;
    if (n->n_inputs >= 3 && !n->inputs[1] && n->inputs[2] && n->inputs[0]) {
        double lo;
        int32_t dt = n->inputs[0]->type.elem;
        if (dt == POPRT_DTYPE_INT64) {
            int64_t mn = INT64_MIN;
            poprt__node_set_input(
                n, 1, poprt__graph_add_const(g, "clip_min", dt, 0, NULL, &mn, sizeof mn));
        } else if (lowest(dt, &lo))
            poprt__node_set_input(n, 1, poprt__rw_new_scalar(g, "clip_min", dt, 0, lo));
        else
            return POPRT_OK;
        if (!n->inputs[1])
            return poprt__rw_oom();
        *done = 1;
    }
    int keep = n->n_inputs;
    while (keep > 1 && !n->inputs[keep - 1])
        keep--;
    if (keep < n->n_inputs) {
        poprt__node_resize_inputs(n, keep); /* shrinking allocates nothing */
        *done = 1;
    }
    return POPRT_OK;
}

static const poprt__rw_node_pass pass = {"replace_clip_empty_inputs", "Clip", rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_clip_empty_inputs = {
    "replace_clip_empty_inputs",
    "give Clip explicit bounds: omitted min before max -> lowest value, drop trailing empty inputs",
    run};
