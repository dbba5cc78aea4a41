/* eliminate_unused_initializer: drops initializers nothing reads (in every
 * graph); an unused initializer also listed as a graph input leaves the
 * inputs list too. */
#include "passes/rewrite.h"

static poprt_status unused(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    size_t w = 0;
    for (size_t i = 0; i < g->initializers.len; i++) {
        poprt__tensor *t = g->initializers.items[i];
        if (t->is_output || poprt__tensor_use_count(g, t)) {
            g->initializers.items[w++] = t;
            continue;
        }
        poprt__rw_unset_initializer(t);
        if (t->is_input) {
            size_t k = 0;
            for (size_t r = 0; r < g->inputs.len; r++)
                if (g->inputs.items[r] != t)
                    g->inputs.items[k++] = g->inputs.items[r];
            g->inputs.len = k;
            t->is_input = 0;
        }
        *changed = 1;
    }
    g->initializers.len = w;
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)args;
    return poprt__rw_run_graphs(m, unused, NULL, changed);
}

const poprt__pass poprt__pass_eliminate_unused_initializer = {
    "eliminate_unused_initializer", "remove initializers that no node reads", run};
