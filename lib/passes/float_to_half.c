/* float_to_half: stores activations and weights of the main graph in
 * float16, keeping the model's interface (graph inputs and outputs) in
 * float32 with Cast nodes at the boundary.
 *
 * CPU meaning: float16 storage halves weight memory and activation
 * bandwidth; libpoprt's kernels widen float16 to float32, compute in
 * float32 and round the result to float16, so the error is one float16
 * rounding per stored tensor, not float16 arithmetic.
 *
 * Converted: an allow-list of operators whose float inputs and outputs may
 * be float16 (elementwise, data movement, Conv/MatMul/Gemm, pooling,
 * normalisations that are computed in float32 inside the kernel). Kept in
 * float32 (overflow- or precision-prone): Softmax/LogSoftmax, Exp, Log,
 * Pow, Sqrt, Reciprocal, sum-type reductions (ReduceSum/Mean/Prod/
 * SumSquare/L1/L2/LogSum/LogSumExp), LayerNormalization, GroupNormalization,
 * LRN, CumSum, Einsum, every op outside ai.onnx, nodes with subgraphs (and
 * everything inside subgraphs), nodes reading a constant that float16
 * cannot hold (|v| > 65504, or all nonzero values below 2^-24, such as a
 * LayerNorm epsilon of 1e-12), and the op types and node names the caller
 * skips. */
#include <math.h>
#include <string.h>
#include "passes/util_precision.h"
#include "ir/dtype.h"

#define ALL 0xffffffffu

/* op -> inputs that take the node's float type (bit i: input i) */
static const struct {
    const char *op;
    unsigned mask;
} allowed[] = {
    {"Add", ALL}, {"Sub", ALL}, {"Mul", ALL}, {"Div", ALL}, {"Neg", ALL}, {"Abs", ALL},
    {"Relu", ALL}, {"LeakyRelu", ALL}, {"PRelu", ALL}, {"Elu", ALL}, {"Selu", ALL},
    {"Celu", ALL}, {"ThresholdedRelu", ALL}, {"Sigmoid", ALL}, {"HardSigmoid", ALL},
    {"HardSwish", ALL}, {"Tanh", ALL}, {"Erf", ALL}, {"Gelu", ALL}, {"Mish", ALL},
    {"Softsign", ALL}, {"Softplus", ALL}, {"Sin", ALL}, {"Cos", ALL}, {"Floor", ALL},
    {"Ceil", ALL}, {"Round", ALL}, {"Sign", ALL}, {"Clip", ALL}, {"Max", ALL}, {"Min", ALL},
    {"Sum", ALL}, {"Mean", ALL}, {"Where", ALL}, {"Equal", ALL}, {"Greater", ALL},
    {"Less", ALL}, {"GreaterOrEqual", ALL}, {"LessOrEqual", ALL}, {"Concat", ALL},
    {"Transpose", ALL}, {"Flatten", ALL}, {"Identity", ALL}, {"Reshape", 1}, {"Squeeze", 1},
    {"Unsqueeze", 1}, {"Gather", 1}, {"GatherElements", 1}, {"GatherND", 1}, {"Slice", 1},
    {"Split", 1}, {"Tile", 1}, {"Expand", 1}, {"Pad", 5}, {"Dropout", 1},
    {"ScatterND", 5}, {"ScatterElements", 5}, {"DepthToSpace", ALL}, {"SpaceToDepth", ALL},
    {"Resize", 1}, {"Upsample", 1}, {"TopK", 1}, {"ArgMax", ALL}, {"ArgMin", ALL},
    {"ReduceMax", 1}, {"ReduceMin", 1}, {"Shape", ALL}, {"Size", ALL},
    {"MaxPool", ALL}, {"AveragePool", ALL}, {"GlobalAveragePool", ALL},
    {"GlobalMaxPool", ALL}, {"Conv", ALL}, {"ConvTranspose", ALL}, {"MatMul", ALL},
    {"Gemm", ALL}, {"BatchNormalization", ALL}, {"InstanceNormalization", ALL},
};

static unsigned allowed_mask(const poprt__node *n)
{
    if (n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return 0;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcmp(allowed[i].op, n->op_type) == 0)
            return allowed[i].mask;
    return 0;
}

static int is_f32(const poprt__tensor *t)
{
    return t && t->type.kind == POPRT__KIND_TENSOR && t->type.elem == POPRT_DTYPE_FLOAT;
}

static int has_const(const poprt__tensor *t)
{
    const float *v;
    int64_t n;
    return poprt__const_f32(t, &v, &n);
}

/* Can float16 hold this constant well enough? */
static int half_ok(const poprt__tensor *t)
{
    const float *v;
    int64_t n;
    if (!poprt__const_f32(t, &v, &n))
        return 1;
    float mx = 0;
    for (int64_t i = 0; i < n; i++) {
        float a = fabsf(v[i]);
        if (isnan(a) || isinf(a))
            continue;
        if (a > 65504.0f)
            return 0;
        mx = a > mx ? a : mx;
    }
    return mx == 0 || mx >= 5.9604645e-8f;
}

static int has_subgraph(const poprt__node *n)
{
    for (int a = 0; a < n->n_attrs; a++)
        if (n->attrs[a].type == POPRT__ATTR_GRAPH || n->attrs[a].type == POPRT__ATTR_GRAPHS)
            return 1;
    return 0;
}

static int eligible(const poprt__node *n, const poprt__half_opts *o)
{
    unsigned mask = allowed_mask(n);
    if (!mask || has_subgraph(n))
        return 0;
    if (o && (poprt__list_has(o->skip_types, o->n_skip_types, n->op_type) ||
              poprt__list_has(o->skip_names, o->n_skip_names, n->name)))
        return 0;
    int any = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const poprt__tensor *t = n->inputs[i];
        if (!t || !(mask & (1u << (i < 31 ? i : 31))))
            continue;
        if (t->type.kind != POPRT__KIND_TENSOR || !t->type.elem)
            return 0;
        if (t->type.elem == POPRT_DTYPE_DOUBLE)
            return 0;
        if (is_f32(t)) {
            if (has_const(t) && !half_ok(t))
                return 0;
            any = 1;
        }
    }
    for (int j = 0; j < n->n_outputs; j++) {
        const poprt__tensor *t = n->outputs[j];
        if (!t)
            continue;
        if (t->type.kind != POPRT__KIND_TENSOR || !t->type.elem)
            return 0;
        any |= is_f32(t);
    }
    return any;
}

static poprt_status oom(void) { return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory"); }

static poprt__node *add_cast(poprt__graph *g, poprt__tensor *in, poprt__tensor *out, int64_t to)
{
    poprt__node *c = poprt__graph_add_node(g, "Cast", "", NULL, 1, 1);
    if (!c)
        return NULL;
    c->inputs[0] = in;
    c->outputs[0] = out;
    poprt__attr *a = poprt__node_add_attr(c, "to", POPRT__ATTR_INT);
    if (!a)
        return NULL;
    a->i = to;
    return c;
}

/* The float16 version of float32 tensor t (made once). */
static poprt__tensor *half_of(poprt__graph *g, poprt__map *map, poprt__tensor *t)
{
    poprt__tensor *h = poprt__map_get(map, t->name);
    if (h)
        return h;
    const char *base = poprt__arena_printf(&g->model->arena, "%s_fp16", t->name);
    if (!base)
        return NULL;
    const float *v;
    int64_t n;
    if (poprt__const_f32(t, &v, &n) && poprt__type_is_static(&t->type) &&
        poprt__type_numel(&t->type) == n) {
        uint16_t *d = poprt__malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
        if (!d)
            return NULL;
        for (int64_t i = 0; i < n; i++)
            d[i] = poprt__float_to_half(v[i]);
        int64_t dims[POPRT__MAX_RANK];
        for (int k = 0; k < t->type.rank; k++)
            dims[k] = t->type.dims[k].value;
        h = poprt__graph_add_const(g, base, POPRT_DTYPE_FLOAT16, t->type.rank, dims, d,
                                   (size_t)n * sizeof *d);
        poprt__free(d);
    } else {
        h = poprt__graph_new_tensor(g, base);
        if (h && !add_cast(g, t, h, POPRT_DTYPE_FLOAT16))
            return NULL;
    }
    if (h && poprt__map_put(map, t->name, h))
        return NULL;
    return h;
}

poprt_status poprt__to_half(poprt__model *m, const poprt__half_opts *o, poprt__vec *pairs,
                            int *n_nodes)
{
    poprt__graph *g = m->graph;
    poprt__map map = {0};
    poprt__vec todo = {0}, outs = {0};
    poprt_status st = POPRT_OK;
    *n_nodes = 0;
    for (size_t i = 0; i < g->nodes.len && !st; i++)
        if (eligible(g->nodes.items[i], o))
            st = poprt__vec_push(&todo, g->nodes.items[i]) ? oom() : POPRT_OK;
    /* nodes are in topological order: producers are rewritten first */
    for (size_t k = 0; k < todo.len && !st; k++) {
        poprt__node *n = todo.items[k];
        unsigned mask = allowed_mask(n);
        for (int i = 0; i < n->n_inputs && !st; i++) {
            poprt__tensor *t = n->inputs[i];
            if (!is_f32(t) || !(mask & (1u << (i < 31 ? i : 31))))
                continue;
            poprt__tensor *h = half_of(g, &map, t);
            if (!h)
                st = oom();
            else
                n->inputs[i] = h;
        }
        for (int j = 0; j < n->n_outputs && !st; j++) {
            poprt__tensor *t = n->outputs[j];
            if (!is_f32(t))
                continue;
            const char *base = poprt__arena_printf(&m->arena, "%s_fp16", t->name);
            poprt__tensor *h = base ? poprt__graph_new_tensor(g, base) : NULL;
            if (!h || poprt__map_put(&map, t->name, h) || poprt__vec_push(&outs, t))
                st = oom();
            else {
                n->outputs[j] = h;
                t->producer = NULL;
                if (pairs && (poprt__vec_push(pairs, (void *)t->name) ||
                              poprt__vec_push(pairs, (void *)h->name)))
                    st = oom();
            }
        }
        (*n_nodes)++;
    }
    /* float32 readers (other nodes, subgraphs, graph outputs) keep the
     * original name through a Cast back to float32 */
    for (size_t k = 0; k < outs.len && !st; k++) {
        poprt__tensor *t = outs.items[k];
        if (poprt__tensor_use_count(g, t) > 0 &&
            !add_cast(g, poprt__map_get(&map, t->name), t, POPRT_DTYPE_FLOAT))
            st = oom();
    }
    if (!st)
        poprt__graph_remove_dead(g);
    poprt__map_free(&map);
    poprt__vec_free(&todo);
    poprt__vec_free(&outs);
    return st;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"skip_op_types", "skip_op_names", NULL};
    poprt__pass_args a;
    poprt_status st = poprt__pass_args_parse("float_to_half", args, known, &a);
    if (st)
        return st;
    char b1[2048], b2[2048];
    const char *types[64], *names[64];
    poprt__half_opts o = {types, 0, names, 0};
    o.n_skip_types = poprt__arg_list(poprt__pass_arg(&a, "skip_op_types"), b1, sizeof b1, types, 64);
    o.n_skip_names = poprt__arg_list(poprt__pass_arg(&a, "skip_op_names"), b2, sizeof b2, names, 64);
    int n = 0;
    st = poprt__to_half(m, &o, NULL, &n);
    *changed = n > 0;
    if (!st)
        poprt__log(POPRT_LOG_INFO, "float_to_half: %d nodes now store float16", n);
    return st;
}

const poprt__pass poprt__pass_float_to_half = {
    "float_to_half",
    "store weights and activations in float16 (interface stays float32; Softmax, Exp, Pow, "
    "sum reductions, LayerNorm stay float32); args skip_op_types=[..], skip_op_names=[..]",
    run};
