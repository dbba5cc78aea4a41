/* float16 values computed in float32 (session option "float16_compute",
 * default "float32"; docs/compiler.md "float16 models").
 *
 * libpoprt has no float16 arithmetic kernels (CPUs with AVX512-FP16 have
 * it, but no kernel uses it yet): a float16 node runs on the reference kernels, which widen every element to
 * float32 and round every result back, several times slower than the float32
 * kernels. So the compiler gives every node that reads or writes float16
 * tensors its float32 form, as ONNX Runtime's CPU provider does:
 *
 *   - float16 constants the node reads become float32 constants (converted
 *     once, at compile time: the prepared weights are then the float32
 *     kernels' own);
 *   - other float16 inputs (graph inputs, outer-scope values, outputs of
 *     nodes left as they are) are read through a Cast to float32;
 *   - the node writes a float32 twin of each float16 output; readers that
 *     are converted too read the twin directly, and a Cast back to float16
 *     keeps the original tensor for the others (graph outputs, subgraphs,
 *     nodes left alone);
 *   - the model's own Casts between the two types are the boundaries of a
 *     mixed-precision model (ops kept in float32 by the converter that
 *     wrote it, ReduceMean, Pow, Softmax, ...): a converted node reading a
 *     Cast to float16 of a float32 value reads the value, and a Cast to
 *     float32 of a converted node's output reads its twin (then a no-op).
 *
 * Between two converted nodes the value therefore stays float32: results
 * are those of float32 arithmetic on the model's float16 inputs and weights,
 * rounded to float16 only where the model's interface asks (its inputs,
 * outputs and nodes left alone), and the float32 patterns of the compiler
 * (layer norms, attention) see the graph the float32 model had.
 * That is at least as accurate as rounding after every node; what differs
 * is that an intermediate value beyond float16's range (65504) does not
 * become infinity. "float16_compute" = "float16" keeps the float16 nodes as
 * they are (rounded after every node, reference kernels).
 *
 * Left as they are: nodes outside ai.onnx, nodes with subgraphs (their
 * bodies are converted on their own, with the same rule at their
 * boundary), nodes with a non-tensor input or output, and nodes whose
 * output type an attribute sets or that only look at shapes (Cast,
 * CastLike, Constant, ConstantOfShape, EyeLike, the random generators,
 * Shape, Size). */
#include <string.h>
#include "compiler/compiler.h"
#include "passes/rewrite.h"

static int is_f16(const poprt__tensor *t)
{
    return t && t->type.kind == POPRT__KIND_TENSOR && t->type.elem == POPRT_DTYPE_FLOAT16;
}

static int kept_op(const char *op)
{
    static const char *const ops[] = {
        "Cast",          "CastLike",          "Constant",    "ConstantOfShape",
        "EyeLike",       "RandomNormal",      "RandomUniform", "RandomNormalLike",
        "RandomUniformLike", "Multinomial",   "Bernoulli",   "Shape",
        "Size",          NULL};
    for (int i = 0; ops[i]; i++)
        if (strcmp(ops[i], op) == 0)
            return 1;
    return 0;
}

static int eligible(const poprt__node *n)
{
    if (!poprt__rw_onnx_domain(n->domain) || poprt__rw_has_body(n) || kept_op(n->op_type))
        return 0;
    int any = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        const poprt__tensor *t = n->inputs[i];
        if (t && (t->type.kind != POPRT__KIND_TENSOR || !t->type.elem))
            return 0;
        any |= is_f16(t);
    }
    for (int j = 0; j < n->n_outputs; j++) {
        const poprt__tensor *t = n->outputs[j];
        if (t && (t->type.kind != POPRT__KIND_TENSOR || !t->type.elem))
            return 0;
        any |= is_f16(t);
    }
    return any;
}

/* The float32 twin of float16 tensor t for readers in g (made once): a
 * converted constant, or t through a Cast to float32. */
static poprt__tensor *f32_of(poprt__graph *g, poprt__map *twins, poprt__tensor *t)
{
    poprt__tensor *f = poprt__map_get(twins, t->name);
    if (f)
        return f;
    /* a float32 value the model stored as float16 for this node (a Cast to
     * float16, the mixed-precision converters' boundary): the value itself */
    const poprt__node *c = t->producer;
    if (c && poprt__rw_is(c, "Cast") && c->n_inputs == 1 && c->inputs[0] &&
        c->inputs[0]->type.kind == POPRT__KIND_TENSOR &&
        c->inputs[0]->type.elem == POPRT_DTYPE_FLOAT)
        return c->inputs[0];
    const char *base = poprt__arena_printf(&g->model->arena, "%s_fp32", t->name);
    if (!base)
        return NULL;
    int64_t dims[POPRT__MAX_RANK];
    int rank;
    if (t->raw && !t->is_input && poprt__rw_static_dims(t, dims, &rank)) {
        size_t n = t->nbytes / sizeof(uint16_t);
        float *v = poprt__malloc((n ? n : 1) * sizeof *v);
        if (!v)
            return NULL;
        /* read in place (a float16 field of a file may sit at an odd
         * address: poprt__tensor_data would keep an aligned copy of it for
         * the model's life, beside the twin) */
        const unsigned char *h = t->raw;
        for (size_t i = 0; i < n; i++) {
            uint16_t x;
            memcpy(&x, h + i * sizeof x, sizeof x);
            v[i] = poprt__half_to_float(x);
        }
        f = poprt__graph_add_const(g, base, POPRT_DTYPE_FLOAT, rank, dims, v, n * sizeof *v);
        poprt__free(v);
        /* the float16 bytes, when they are pages of the model file, back to
         * the kernel (read from the file again if anything still reads
         * them): converted readers read the twin, so they would stay
         * resident beside it for nothing */
        poprt__model_drop_pages(g->model, t->raw, t->nbytes);
    } else {
        f = poprt__graph_new_tensor(g, base);
        if (f && !poprt__rw_cast(g, t, f, POPRT_DTYPE_FLOAT))
            f = NULL;
    }
    return f && !poprt__map_put(twins, t->name, f) ? f : NULL;
}

/* One graph level: nodes in topological order, so a producer's twin exists
 * before its readers ask for it. */
static poprt_status float16_graph(poprt__graph *g, void *ctx, int *changed)
{
    (void)ctx;
    poprt__map twins = {0};
    poprt__vec todo = {0}, outs = {0};
    poprt_status st = poprt__rw_collect(g, NULL, &todo);
    for (size_t k = 0; k < todo.len && !st; k++) {
        poprt__node *n = todo.items[k];
        /* a Cast back to float32 of a converted node's float16 output reads
         * its float32 twin (a Cast to float32 of float32: nothing to do) */
        if (poprt__rw_is(n, "Cast") && n->n_inputs == 1 && is_f16(n->inputs[0]) &&
            poprt__attr_i(n, "to", 0) == POPRT_DTYPE_FLOAT) {
            poprt__tensor *tw = poprt__map_get(&twins, n->inputs[0]->name);
            if (tw) {
                poprt__node_set_input(n, 0, tw);
                (*changed)++;
            }
            continue;
        }
        if (!eligible(n))
            continue;
        for (int i = 0; i < n->n_inputs && !st; i++) {
            poprt__tensor *t = n->inputs[i];
            if (!is_f16(t))
                continue;
            poprt__tensor *f = f32_of(g, &twins, t);
            if (!f)
                st = poprt__rw_oom();
            else
                poprt__node_set_input(n, i, f);
        }
        for (int j = 0; j < n->n_outputs && !st; j++) {
            poprt__tensor *t = n->outputs[j];
            if (!is_f16(t))
                continue;
            const char *base = poprt__arena_printf(&g->model->arena, "%s_fp32", t->name);
            poprt__tensor *f = base ? poprt__graph_new_tensor(g, base) : NULL;
            if (!f || poprt__map_put(&twins, t->name, f) || poprt__vec_push(&outs, t)) {
                st = poprt__rw_oom();
                break;
            }
            n->outputs[j] = f;
            f->producer = n;
            f->producer_slot = j;
            t->producer = NULL;
        }
        (*changed)++;
    }
    /* readers left in float16 keep the original tensor, through a Cast */
    for (size_t k = 0; k < outs.len && !st; k++) {
        poprt__tensor *t = outs.items[k];
        if (poprt__tensor_use_count(g, t) > 0 &&
            !poprt__rw_cast(g, poprt__map_get(&twins, t->name), t, POPRT_DTYPE_FLOAT16))
            st = poprt__rw_oom();
    }
    if (!st && outs.len)
        poprt__graph_remove_dead(g);
    poprt__map_free(&twins);
    poprt__vec_free(&todo);
    poprt__vec_free(&outs);
    return st;
}

poprt_status poprt__compile_float16(poprt__model *m, int *changed)
{
    int n = 0;
    poprt_status st = poprt__rw_run_graphs(m, float16_graph, NULL, &n);
    if (st)
        return poprt__err_prefix(st, "compiling (float16 nodes in float32): ");
    if (n)
        *changed = 1;
    return POPRT_OK;
}
