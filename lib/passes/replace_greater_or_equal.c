/* replace_greater_or_equal: GreaterOrEqual(a, b) for opset-11 targets (it is an opset-12 op).
 * Integers: Not(Less(a, b)), exact. Floats: Or(Greater(a, b), Equal(a, b)), which
 * keeps NaN comparisons false (Not(Less) would make them true). The
 * replace_*_or_equal family (families.h). */
#include "passes/families.h"

static const poprt__or_equal ge = {"Greater", "Less"};
static const poprt__rw_node_pass pass = {"replace_greater_or_equal", "GreaterOrEqual",
                                         poprt__replace_or_equal, &ge};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_replace_greater_or_equal = {
    "replace_greater_or_equal",
    "replace GreaterOrEqual with Not(Less) (integers) or Or(Greater, Equal) (floats, NaN-exact)", run};
