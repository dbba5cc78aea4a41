/* float_ops_workaround: backends whose kernels for some operators take only
 * float32/float16 (PopART: TopK, ArgMax/ArgMin, ReduceMax/ReduceMin,
 * Max/Min, Clip, Relu) get Cast(to=float) on the data inputs and a Cast back
 * on the value outputs. Applied only to 8- and 16-bit integers, which
 * float32 holds exactly, and to these selection-type ops whose results are
 * input values, so the converted model computes the same bits. libpoprt's
 * own kernels take the integer types directly. */
#include "passes/rewrite.h"

typedef struct rule {
    const char *op;
    int all_inputs;   /* every input is data (else input 0 only) */
    int value_output; /* output 0 carries input values (cast back) */
} rule;

static const rule rules[] = {
    {"TopK", 0, 1},      {"ArgMax", 0, 0}, {"ArgMin", 0, 0}, {"ReduceMax", 0, 1},
    {"ReduceMin", 0, 1}, {"Max", 1, 1},    {"Min", 1, 1},    {"Clip", 1, 1},
    {"Relu", 0, 1},
};

static int small_int(int32_t e)
{
    return e == POPRT_DTYPE_INT8 || e == POPRT_DTYPE_UINT8 || e == POPRT_DTYPE_INT16 ||
           e == POPRT_DTYPE_UINT16;
}

static poprt_status rewrite(poprt__graph *g, poprt__node *n, const void *ctx, int *done)
{
    (void)ctx;
    const rule *r = NULL;
    for (size_t k = 0; k < sizeof rules / sizeof rules[0] && !r; k++)
        if (poprt__rw_is(n, rules[k].op))
            r = &rules[k];
    if (!r || !n->inputs[0] || !small_int(n->inputs[0]->type.elem) || !n->outputs[0])
        return POPRT_OK;
    if (poprt__rw_is(n, "Clip") && n->opset < 11)
        return POPRT_OK; /* bounds are float attributes there */
    int32_t e = n->inputs[0]->type.elem;
    int nin = r->all_inputs ? n->n_inputs : 1;
    for (int k = 0; k < nin; k++) {
        if (!n->inputs[k])
            continue;
        poprt__node *c = poprt__rw_node1(g, "Cast", "", 1, &n->inputs[k], NULL, "as_float");
        if (!c || poprt__rw_attr_i(c, "to", POPRT_DTYPE_FLOAT))
            return poprt__rw_oom();
        poprt__node_set_input(n, k, c->outputs[0]);
    }
    if (r->value_output) {
        poprt__tensor *y = n->outputs[0], *t = poprt__graph_new_tensor(g, "float_out");
        poprt__node *c = t ? poprt__rw_node1(g, "Cast", "", 1, &t, y, NULL) : NULL;
        if (!c || poprt__rw_attr_i(c, "to", e))
            return poprt__rw_oom();
        poprt__rw_set_output(n, 0, t);
    }
    *done = 1;
    return POPRT_OK;
}

/* every node (the Casts added are never candidates) */
static const poprt__rw_node_pass pass = {"float_ops_workaround", NULL, rewrite};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_float_ops_workaround = {
    "float_ops_workaround",
    "run TopK/ArgMax/ArgMin/ReduceMax/ReduceMin/Max/Min/Clip/Relu on 8/16-bit ints in float32 "
    "(exact)",
    run};
