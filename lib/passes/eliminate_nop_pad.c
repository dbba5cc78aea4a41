/* eliminate_nop_pad: removes Pad nodes whose pads are all zero (from the
 * attribute before opset 11, from the constant pads input after). */
#include "passes/rewrite.h"

static poprt__tensor *nop(poprt__node *n)
{
    poprt__tensor *x = poprt__node_in(n, 0);
    if (!poprt__rw_is(n, "Pad") || !x)
        return NULL;
    int64_t pads[2 * POPRT__MAX_RANK];
    int64_t np;
    if (n->opset >= 11)
        np = poprt__rw_attr_or_input_ints(n, "pads", 1, 11, pads, 2 * POPRT__MAX_RANK);
    else
        np = poprt__rw_attr_or_input_ints(n, n->opset < 2 ? "paddings" : "pads", 1, 1000, pads,
                                          2 * POPRT__MAX_RANK);
    if (np < 0)
        return NULL;
    for (int64_t i = 0; i < np; i++)
        if (pads[i] != 0)
            return NULL;
    return x;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_remove_nops(m, nop, changed);
}

const poprt__pass poprt__pass_eliminate_nop_pad = {
    "eliminate_nop_pad", "remove Pad nodes whose pads are all zero", run};
