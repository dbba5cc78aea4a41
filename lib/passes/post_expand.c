/* post_expand: moves Expand after the elementwise op that reads it:
 * Op(Expand(x, s)) -> Expand(Op(x), s) for unary elementwise ops and for
 * binary ones whose other operand is a one-element constant. The op then
 * works on the small tensor and only the final result is broadcast; the
 * values are identical. Repeats, so chains (Expand -> Cast -> Mul) move as
 * a whole. */
#include "passes/rewrite.h"

static const char *const unary[] = {
    "Cast", "Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal",
    "Floor", "Ceil", "Round", "Sign", "Not", "Erf", "Sin", "Cos", "Softplus", "Elu",
    "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu", "IsNaN", "IsInf", "Identity", NULL};
static const char *const binary[] = {"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less",
                                     "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or",
                                     "Max", "Min", NULL};

static int in_list(const poprt__node *n, const char *const *l)
{
    for (; *l; l++)
        if (poprt__rw_is(n, *l))
            return 1;
    return 0;
}

static poprt_status rewrite(poprt__graph *g, poprt__node *e, const void *ctx, int *done)
{
    (void)ctx;
    poprt__tensor *x = poprt__node_in(e, 0), *s = poprt__node_in(e, 1), *ex = poprt__node_out(e, 0);
    if (!x || !s || !ex)
        return POPRT_OK;
    poprt__node *op = poprt__graph_sole_consumer(g, ex);
    if (!op || op->n_outputs != 1 || !op->outputs[0])
        return POPRT_OK;
    if (in_list(op, unary)) {
        if (op->n_inputs != 1)
            return POPRT_OK;
    } else if (in_list(op, binary) && op->n_inputs == 2) {
        poprt__tensor *other = op->inputs[0] == ex ? op->inputs[1] : op->inputs[0];
        if (!other || !other->raw || poprt__type_numel(&other->type) != 1)
            return POPRT_OK;
    } else
        return POPRT_OK;
    poprt__tensor *y = op->outputs[0], *t = poprt__graph_new_tensor(g, "pre_expand");
    if (!t)
        return poprt__rw_oom();
    for (int k = 0; k < op->n_inputs; k++)
        if (op->inputs[k] == ex)
            poprt__node_set_input(op, k, x);
    poprt__rw_set_output(op, 0, t);
    poprt__tensor *ins[2] = {t, s};
    if (!poprt__rw_node1(g, "Expand", "", 2, ins, y, NULL))
        return poprt__rw_oom();
    poprt__graph_remove_node(g, e);
    *done = 1;
    return POPRT_OK;
}

/* rounds: chains (Expand -> Cast -> Mul) move as a whole */
static const poprt__rw_node_pass pass = {"post_expand", "Expand", rewrite, NULL, 0, 16};

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    return poprt__rw_run_nodes(&pass, m, args, changed);
}

const poprt__pass poprt__pass_post_expand = {
    "post_expand",
    "move Expand after unary elementwise ops (and binary ones with a 1-element constant)", run};
