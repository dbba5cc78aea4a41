/* int64_to_int32: stores int64 tensors as int32 where that cannot change any
 * value. The IPU has no int64; on the CPU this halves the memory and
 * bandwidth of index tensors (token ids, gather indices, masks).
 *
 * int64 tensors joined by operators whose type constraint ties them together
 * (Gather data and output, Concat inputs, ...) form classes; a class is
 * converted as a whole, or not at all when one member must stay int64:
 *   - it feeds an input ONNX defines as int64 only (Reshape shape, Expand
 *     shape, axes, pads, ...) or comes from an int64-only output (Shape,
 *     ArgMax, NonZero, TopK indices);
 *   - an operator could produce values outside int32 range from int32
 *     inputs (Add, Mul, Sum, CumSum, ...: they pin their int64 tensors);
 *   - a constant holds a value outside int32 range;
 *   - control flow (If/Loop/Scan) reads or writes it, or the operator is
 *     not known to accept int32.
 * Producers are adapted: Cast(to=int64) of a type that fits int32 casts to
 * int32, ConstantOfShape's value becomes int32. With io=1 (the default, as
 * in the reference: the IPU cannot take int64 inputs) converted graph inputs
 * and outputs become int32 and callers pass int32; with io=0 they stay int64
 * and Casts are inserted at the boundary. */
#include <string.h>
#include "ir/dtype.h"
#include "passes/rewrite.h"

enum { PIN = -1, FREE = 0 };

static int is_any(const poprt__node *n, const char *const *ops)
{
    for (; *ops; ops++)
        if (poprt__rw_is(n, *ops))
            return 1;
    return 0;
}

/* Group of input slot i (out=0) or output slot i (out=1) of n: PIN, FREE, or
 * a positive group number shared by slots of the same type. */
static int slot_group(const poprt__node *n, int out, int i)
{
    static const char *const same_all[] = {"Identity", "Flatten", "Transpose", "Concat", "Min",
                                           "Max", "Clip", "Range", "Sign", "Mod", NULL};
    static const char *const data_first[] = {"Squeeze", "Unsqueeze", "Reshape", "Expand", "Tile",
                                             "ReduceMax", "ReduceMin", "GatherND", "Trilu",
                                             "Split", NULL};
    static const char *const compare[] = {"Equal", "Less", "Greater", "LessOrEqual",
                                          "GreaterOrEqual", NULL};
    if (!poprt__rw_onnx_domain(n->domain))
        return PIN;
    if (is_any(n, same_all))
        return 1;
    if (is_any(n, data_first)) /* data in and out; shape/axes inputs are int64 only */
        return out || i == 0 ? 1 : PIN;
    if (is_any(n, compare))
        return out ? FREE : 1;
    if (poprt__rw_is(n, "Slice"))
        return out || i == 0 ? 1 : 2;
    if (poprt__rw_is(n, "Gather") || poprt__rw_is(n, "GatherElements"))
        return out || i == 0 ? 1 : 2;
    if (poprt__rw_is(n, "Where"))
        return out || i > 0 ? 1 : FREE;
    if (poprt__rw_is(n, "Pad"))
        return out || i == 0 || i == 2 ? 1 : i == 3 ? 2 : PIN;
    if (poprt__rw_is(n, "ScatterElements"))
        return out || i != 1 ? 1 : 2;
    if (poprt__rw_is(n, "ScatterND"))
        return out || i != 1 ? 1 : PIN;
    if (poprt__rw_is(n, "OneHot"))
        return out || i == 2 ? 1 : FREE;
    if (poprt__rw_is(n, "TopK"))
        return (out && i == 0) || (!out && i == 0) ? 1 : PIN;
    if (poprt__rw_is(n, "Cast"))
        return out ? PIN : FREE; /* the output is handled in producer_ok */
    return PIN;
}

/* Producers whose int64 output can be made int32 by changing the node. */
static int adaptable_producer(const poprt__node *n)
{
    if (poprt__rw_is(n, "Cast")) {
        const poprt__tensor *x = poprt__node_in(n, 0);
        return x && x->type.elem && poprt__rw_cast_exact(x->type.elem, POPRT_DTYPE_INT32);
    }
    if (poprt__rw_is(n, "ConstantOfShape")) {
        const poprt__attr *a = poprt__node_attr(n, "value");
        if (!a || !a->t || !a->t->raw || poprt__type_numel(&a->t->type) != 1)
            return 0;
        int64_t v = poprt__load_i64(poprt__tensor_data(a->t), a->t->type.elem, 0);
        return v >= INT32_MIN && v <= INT32_MAX;
    }
    return 0;
}

static int fits_int32(const poprt__tensor *t)
{
    int64_t n = poprt__type_numel(&t->type);
    const int64_t *d = poprt__tensor_data(t);
    if (n < 0 || !d)
        return 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t v = d[k];
        if (v < INT32_MIN || v > INT32_MAX)
            return 0;
    }
    return 1;
}

static int find(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

static int is64(const poprt__tensor *t)
{
    return t && t->type.kind == POPRT__KIND_TENSOR && t->type.elem == POPRT_DTYPE_INT64;
}

static poprt_status convert(poprt__graph *g, poprt__tensor *t, int io, int *changed)
{
    poprt__model *m = g->model;
    if (t->is_initializer) {
        int64_t n = poprt__type_numel(&t->type);
        int32_t *d = poprt__arena_alloc(&m->arena, (size_t)(n ? n : 1) * sizeof *d);
        const int64_t *s = poprt__tensor_data(t);
        if (!d || !s)
            return poprt__rw_oom();
        for (int64_t k = 0; k < n; k++)
            d[k] = (int32_t)s[k];
        poprt__tensor_set_data(t, d);
        t->nbytes = (size_t)n * sizeof *d;
        t->type.elem = POPRT_DTYPE_INT32;
        *changed = 1;
        return POPRT_OK;
    }
    poprt__tensor *t32 = t;
    if (!io && (t->is_input || t->is_output)) {
        /* the boundary keeps int64: a Cast joins it to the int32 class */
        t32 = poprt__graph_new_tensor(g, t->name);
        poprt__node *c = poprt__graph_add_node(g, "Cast", "", NULL, 1, 1);
        poprt__attr *to = c ? poprt__node_add_attr(c, "to", POPRT__ATTR_INT) : NULL;
        if (!t32 || !to || poprt__type_copy(&m->arena, &t32->type, &t->type))
            return poprt__rw_oom();
        poprt__graph_replace_uses(g, t, t32);
        for (size_t k = 0; k < g->outputs.len; k++)
            if (g->outputs.items[k] == t32) {
                poprt__graph_set_output(g, k, t);
                t->is_output = 1;
                t32->is_output = 0;
            }
        if (t->is_input) {
            to->i = POPRT_DTYPE_INT32;
            poprt__node_set_input(c, 0, t);
            poprt__rw_set_output(c, 0, t32);
        } else {
            to->i = POPRT_DTYPE_INT64;
            poprt__node *p = t->producer;
            poprt__rw_set_output(p, t->producer_slot, t32);
            poprt__node_set_input(c, 0, t32);
            poprt__rw_set_output(c, 0, t);
        }
    }
    t32->type.elem = POPRT_DTYPE_INT32;
    poprt__node *p = t32->producer;
    if (p && poprt__rw_is(p, "Cast")) {
        for (int k = 0; k < p->n_attrs; k++)
            if (!strcmp(p->attrs[k].name, "to"))
                p->attrs[k].i = POPRT_DTYPE_INT32;
    } else if (p && poprt__rw_is(p, "ConstantOfShape")) {
        poprt__attr *a = (poprt__attr *)poprt__node_attr(p, "value");
        poprt__tensor *v = poprt__arena_alloc(&m->arena, sizeof *v);
        int32_t *d = poprt__arena_alloc(&m->arena, sizeof *d);
        if (!v || !d)
            return poprt__rw_oom();
        *v = *a->t;
        *d = (int32_t)poprt__load_i64(poprt__tensor_data(a->t), a->t->type.elem, 0);
        poprt__tensor_set_data(v, d);
        v->nbytes = sizeof *d;
        v->type.elem = POPRT_DTYPE_INT32;
        a->t = v;
    }
    *changed = 1;
    return POPRT_OK;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    int64_t io;
    poprt_status st = poprt__pass_only_int("int64_to_int32", args, "io", 1, &io);
    if (st)
        return st;
    *changed = 0;
    poprt__graph *g = m->graph;
    size_t nt = g->tensors.len;
    int *parent = poprt__malloc((nt + 1) * sizeof *parent);
    unsigned char *pinned = poprt__calloc(nt + 1, 1);
    poprt__vec implicit = {0};
    if (!parent || !pinned) {
        st = poprt__rw_oom();
        goto done;
    }
    for (size_t i = 0; i < nt; i++)
        parent[i] = (int)i;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt__node *n = g->nodes.items[i];
        int first[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
        for (int side = 0; side < 2; side++) {
            int cnt = side ? n->n_outputs : n->n_inputs;
            for (int k = 0; k < cnt; k++) {
                poprt__tensor *t = side ? n->outputs[k] : n->inputs[k];
                if (!is64(t) || t->graph != g)
                    continue;
                int grp = slot_group(n, side, k);
                if (side && grp == PIN && adaptable_producer(n))
                    grp = FREE;
                if (grp == PIN || grp >= 8)
                    pinned[t->id] = 1;
                else if (grp > 0) {
                    if (first[grp] < 0)
                        first[grp] = t->id;
                    else
                        parent[find(parent, t->id)] = find(parent, first[grp]);
                }
            }
        }
        /* values read inside subgraphs stay as they are */
        if ((st = poprt__node_implicit_inputs(n, &implicit)))
            goto done;
        for (size_t k = 0; k < implicit.len; k++) {
            poprt__tensor *t = implicit.items[k];
            if (t->graph == g)
                pinned[t->id] = 1;
        }
        implicit.len = 0;
    }
    for (size_t i = 0; i < nt; i++) {
        poprt__tensor *t = g->tensors.items[i];
        if (!is64(t))
            continue;
        int bad = (t->is_initializer && !fits_int32(t)) || (!io && t->is_input && t->is_output) ||
                  (!io && t->is_initializer && (t->is_input || t->is_output)) ||
                  (!t->producer && !t->is_input && !t->is_initializer) ||
                  (t->raw && !t->is_initializer);
        if (bad)
            pinned[t->id] = 1;
    }
    for (size_t i = 0; i < nt; i++)
        if (pinned[i])
            pinned[find(parent, (int)i)] = 1;
    for (size_t i = 0; i < nt && !st; i++) {
        poprt__tensor *t = g->tensors.items[i];
        if (!is64(t) || pinned[find(parent, (int)i)])
            continue;
        /* only tensors something uses or defines */
        if (!t->producer && !t->is_input && !t->is_initializer)
            continue;
        st = convert(g, t, (int)io, changed);
    }
done:
    poprt__vec_free(&implicit);
    poprt__free(parent);
    poprt__free(pinned);
    return st;
}

const poprt__pass poprt__pass_int64_to_int32 = {
    "int64_to_int32",
    "store int64 tensors as int32 where no value can change (index data, not shape math); io=1 "
    "(default) also makes converted graph inputs/outputs int32, io=0 keeps them int64 with Casts",
    run, 1};
