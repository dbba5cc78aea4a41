/* merge_moe (the CLI's --merge_moe): the experts of a Mixture-of-Experts
 * block, named by their first and last nodes as in the reference
 * ("MatMul_1,Add_1,MatMul_2,Add_2": begin and end of each expert), read the
 * same tokens: their first MatMuls (with their bias Adds when every expert
 * has one) become one wider MatMul [+ Add] and a Split; each expert's
 * remaining nodes stay as they are. Without arguments nothing changes.
 * CPU meaning: the tokens are read and packed once for all experts and one
 * GEMM replaces E narrow ones. The merge_matmul* family (families.h). */
#include <stdio.h>
#include "passes/families.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    poprt__graph *g = m->graph;
    char buf[4096], begins[4096];
    const char *names[512];
    *changed = 0;
    int nn = poprt__pass_node_names(args, buf, sizeof buf, names, 512);
    if (nn < 0 || nn % 2)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "pass 'merge_moe': arguments must be begin,end node name pairs: %s", args);
    if (nn == 0)
        return POPRT_OK; /* the experts must be named; nothing to guess */
    size_t len = 0;
    int with_add = 1;
    for (int i = 0; i < nn; i += 2) {
        poprt__node *b = poprt__rw_find_node(g, names[i]);
        if (!b || !poprt__rw_find_node(g, names[i + 1]) || !poprt__rw_is(b, "MatMul"))
            return poprt__err(POPRT_STATUS_INVALID_OPTION,
                              "pass 'merge_moe': expert '%s'..'%s' must begin with a MatMul of "
                              "this graph", names[i], names[i + 1]);
        poprt__node *a = poprt__graph_sole_consumer(g, b->outputs[0]);
        int64_t cnt;
        with_add &= poprt__rw_is(a, "Add") && poprt__rw_f32(poprt__rw_other_input(a, b->outputs[0]),
                                                            POPRT__RW_ANY, &cnt) != NULL;
        int w = snprintf(begins + len, sizeof begins - len, "%s%s", i ? "," : "", names[i]);
        if (w < 0 || (size_t)w >= sizeof begins - len)
            return poprt__err(POPRT_STATUS_INVALID_OPTION, "pass 'merge_moe': arguments too long");
        len += (size_t)w;
    }
    const poprt__merge_kind moe = {"merge_moe", 1, with_add};
    return poprt__merge_matmul(&moe, m, begins, changed);
}

const poprt__pass poprt__pass_merge_moe = {
    "merge_moe",
    "MoE experts named begin,end,begin,end...: their first MatMul(+Add) reading the shared "
    "tokens -> one wider MatMul(+Add) + Split",
    run, 2};
