/* shape_inference: re-runs type and shape inference over the whole model so
 * every intermediate tensor carries its dtype and (symbolic) shape. */
#include "passes/passes.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    *changed = 0;
    return poprt__graph_infer(m->graph, NULL);
}

const poprt__pass poprt__pass_shape_inference = {
    "shape_inference", "infer dtypes and shapes of all tensors (symbolic dims kept)", run};
