/* replace_less_or_equal: LessOrEqual(a, b) for opset-11 targets (it is an opset-12 op).
 * Integers: Not(Greater(a, b)), exact. Floats: Or(Less(a, b), Equal(a, b)), which
 * keeps NaN comparisons false (Not(Greater) would make them true). The
 * replace_*_or_equal family (families.h). */
#include "passes/families.h"

static const poprt__or_equal le = {"Less", "Greater"};
static const poprt__rw_node_pass pass = {"replace_less_or_equal", "LessOrEqual",
                                         poprt__replace_or_equal, &le};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_less_or_equal = {
    "replace_less_or_equal",
    "replace LessOrEqual with Not(Greater) (integers) or Or(Less, Equal) (floats, NaN-exact)", run};
