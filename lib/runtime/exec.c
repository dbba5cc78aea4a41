/* The executor: runs a graph node by node in a frame of values, and the
 * services kernels reach through poprt__kctx. */
#include <string.h>
#include <time.h>
#include "runtime/runtime.h"

/* ---- values ---------------------------------------------------------------- */

static size_t tval_bytes(int32_t dtype, int64_t numel)
{
    return (size_t)numel * poprt__dtype_size((poprt_dtype)dtype);
}

static poprt_status tval_set_shape(poprt__tval *t, int32_t dtype, int rank, const int64_t *dims)
{
    if (rank < 0 || rank > POPRT__MAX_RANK)
        return poprt__err(POPRT_STATUS_UNSUPPORTED, "rank %d exceeds the supported %d", rank,
                          POPRT__MAX_RANK);
    t->dtype = dtype;
    t->rank = rank;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || !poprt__mul_i64(n, dims[i], &n))
            return poprt__err(POPRT_STATUS_SHAPE_MISMATCH, "invalid or overflowing dimension %lld",
                              (long long)dims[i]);
        t->dims[i] = dims[i];
    }
    size_t esz = poprt__dtype_size((poprt_dtype)dtype);
    if (esz && (uint64_t)n > SIZE_MAX / esz)
        return poprt__err(POPRT_STATUS_SHAPE_MISMATCH, "tensor too large");
    t->numel = n;
    t->nbytes = tval_bytes(dtype, n);
    return POPRT_OK;
}

static poprt_status tval_heap(poprt__tval *t, int32_t dtype, int rank, const int64_t *dims)
{
    poprt_status st = tval_set_shape(t, dtype, rank, dims);
    if (st)
        return st;
    t->data = poprt__aligned_alloc(t->nbytes ? t->nbytes : 1);
    if (!t->data)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for a %zu-byte tensor",
                          t->nbytes);
    memset(t->data, 0, t->nbytes);
    return POPRT_OK;
}

void poprt__value_free_heap(poprt__value *v)
{
    if (!v)
        return;
    if (v->kind == POPRT__KIND_TENSOR || (v->kind == POPRT__KIND_OPTIONAL && v->inner == POPRT__KIND_TENSOR))
        poprt__aligned_free(v->t.data);
    if (v->items) {
        for (int64_t i = 0; i < v->n_items; i++)
            poprt__aligned_free(v->items[i].data);
        poprt__free(v->items);
    }
    memset(v, 0, sizeof *v);
}

poprt_status poprt__value_copy_heap(poprt__value *dst, const poprt__value *src)
{
    memset(dst, 0, sizeof *dst);
    dst->kind = src->kind;
    dst->inner = src->inner;
    dst->present = src->present;
    dst->seq_elem = src->seq_elem;
    dst->map_key = src->map_key;
    int has_tensor = src->kind == POPRT__KIND_TENSOR ||
                     (src->kind == POPRT__KIND_OPTIONAL && src->present && src->inner == POPRT__KIND_TENSOR);
    if (has_tensor) {
        poprt_status st = tval_heap(&dst->t, src->t.dtype, src->t.rank, src->t.dims);
        if (st)
            return st;
        if (src->t.nbytes)
            memcpy(dst->t.data, src->t.data, src->t.nbytes);
    }
    int has_seq = src->kind == POPRT__KIND_SEQUENCE || src->kind == POPRT__KIND_MAP ||
                  (src->kind == POPRT__KIND_OPTIONAL && src->present && src->inner == POPRT__KIND_SEQUENCE);
    if (has_seq) {
        dst->items = poprt__calloc((size_t)(src->n_items ? src->n_items : 1), sizeof *dst->items);
        if (!dst->items)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory copying a sequence");
        dst->n_items = src->n_items;
        for (int64_t i = 0; i < src->n_items; i++) {
            poprt_status st = tval_heap(&dst->items[i], src->items[i].dtype, src->items[i].rank,
                                        src->items[i].dims);
            if (st) {
                poprt__value_free_heap(dst);
                return st;
            }
            if (src->items[i].nbytes)
                memcpy(dst->items[i].data, src->items[i].data, src->items[i].nbytes);
        }
    }
    return POPRT_OK;
}

/* ---- frames ----------------------------------------------------------------- */

/* A constant in its value; one only prepared data reads (packed weights),
 * not yet copied aligned, is bound with data NULL (kernels reach it through
 * poprt__kctx_in_data if they need it after all). */
static poprt_status bind_const(poprt__value *v, const poprt__tensor *t)
{
    memset(v, 0, sizeof *v);
    v->kind = POPRT__KIND_TENSOR;
    v->t.dtype = t->type.elem;
    v->t.rank = t->type.rank < 0 ? 0 : t->type.rank;
    for (int i = 0; i < v->t.rank && i < POPRT__MAX_RANK; i++)
        v->t.dims[i] = t->type.dims[i].value;
    v->t.numel = poprt__type_numel(&t->type);
    v->t.nbytes = t->nbytes;
    if (t->prepared_only && poprt__tensor_data_lazy(t))
        return POPRT_OK;
    if (t->bytes_only && poprt__tensor_data_lazy(t)) {
        v->t.data = (void *)t->raw; /* rows copied as bytes: alignment does not matter */
        return POPRT_OK;
    }
    v->t.data = (void *)poprt__tensor_data(t);
    if (t->raw && !v->t.data)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory reading constant '%s' (%zu bytes)",
                          t->name, t->nbytes);
    return POPRT_OK;
}

poprt_status poprt__frame_bind_const(poprt__frame *f, size_t i)
{
    return bind_const(&f->vals[i], f->g->tensors.items[i]);
}

poprt_status poprt__frame_init(poprt__frame *f, const poprt__graph *g, poprt__frame *parent)
{
    memset(f, 0, sizeof *f);
    f->g = g;
    f->parent = parent;
    size_t n = g->tensors.len ? g->tensors.len : 1;
    f->vals = poprt__calloc(n, sizeof *f->vals);
    f->heap = poprt__calloc(n, 1);
    if (!f->vals || !f->heap) {
        poprt__frame_free(f);
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for graph '%s'", g->name);
    }
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (t->raw && !t->producer) {
            poprt_status st = bind_const(&f->vals[i], t);
            if (st) {
                poprt__frame_free(f);
                return st;
            }
        }
    }
    return POPRT_OK;
}

void poprt__frame_release(poprt__frame *f)
{
    if (!f->vals || !f->heap)
        return;
    for (size_t i = 0; i < f->g->tensors.len; i++)
        if (f->heap[i]) {
            poprt__value_free_heap(&f->vals[i]);
            f->heap[i] = 0;
        }
}

void poprt__frame_free(poprt__frame *f)
{
    poprt__frame_release(f);
    poprt__free(f->vals);
    poprt__free(f->heap);
    memset(f, 0, sizeof *f);
}

static poprt__value *find_value(poprt__frame *f, const poprt__tensor *t)
{
    for (; f; f = f->parent)
        if (f->g == t->graph)
            return &f->vals[t->id];
    return NULL;
}

/* ---- kernel services ---------------------------------------------------------- */

const void *poprt__kctx_in_data(poprt__kctx *k, int i)
{
    poprt__value *v = i >= 0 && i < k->n_in ? k->in[i] : NULL;
    if (!v || v->kind != POPRT__KIND_TENSOR)
        return NULL;
    void *d = __atomic_load_n(&v->t.data, __ATOMIC_ACQUIRE);
    if (d || !v->t.nbytes)
        return d;
    const poprt__tensor *t = i < k->node->n_inputs ? k->node->inputs[i] : NULL;
    d = t && t->raw ? (void *)poprt__tensor_data(t) : NULL;
    if (d) /* kept for the next runs of this frame (another reader may store the same) */
        __atomic_store_n(&v->t.data, d, __ATOMIC_RELEASE);
    return d;
}

void *poprt__kctx_scratch(poprt__kctx *k, size_t n)
{
    struct poprt__exec *x = k->exec;
    n = (n + 63) & ~(size_t)63;
    for (poprt__scratch_chunk *c = x->scratch; c; c = c->next)
        if (c->size - c->used >= n) {
            void *p = (char *)c + 64 + c->used;
            c->used += n;
            return p;
        }
    size_t size = n > (1u << 20) ? n : (1u << 20);
    poprt__scratch_chunk *c = poprt__aligned_alloc(64 + size);
    if (!c)
        return NULL;
    c->size = size;
    c->used = n;
    c->next = x->scratch;
    x->scratch = c;
    return (char *)c + 64;
}

static void scratch_reset(struct poprt__exec *x)
{
    for (poprt__scratch_chunk *c = x->scratch; c; c = c->next)
        c->used = 0;
}

/* Marks value v of the current frame as heap-owned (v must be in it). */
static void own(struct poprt__exec *x, poprt__value *v)
{
    poprt__frame *f = x->cur;
    if (f && v >= f->vals && v < f->vals + f->g->tensors.len)
        f->heap[v - f->vals] = 1;
}

static int is_owned(struct poprt__exec *x, const poprt__value *v)
{
    poprt__frame *f = x->cur;
    return f && v >= f->vals && v < f->vals + f->g->tensors.len && f->heap[v - f->vals];
}

poprt_status poprt__kctx_alloc_output(poprt__kctx *k, int j, int32_t dtype, int rank,
                                      const int64_t *dims)
{
    if (j >= k->n_out || !k->out[j])
        return POPRT_OK; /* omitted output: nothing to write */
    poprt__value *v = k->out[j];
    struct poprt__exec *x = k->exec;
    poprt__tval nt = {0};
    poprt_status st = tval_set_shape(&nt, dtype, rank, dims);
    if (st)
        return POPRT__NODE_ERR(k->node, st, "output %d: %s", j, poprt__last_error());
    const uint64_t max = poprt__node_limits(k->node)->max_tensor_bytes;
    if (nt.nbytes > max)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_LIMIT_EXCEEDED,
                               "output %d would hold %zu bytes (option 'max_tensor_bytes' is %llu)",
                               j, nt.nbytes, (unsigned long long)max);
    /* a planned buffer of the same size is reused */
    if (v->kind == POPRT__KIND_TENSOR && v->t.data && v->t.nbytes == nt.nbytes && !is_owned(x, v)) {
        nt.data = v->t.data;
        v->t = nt;
        return POPRT_OK;
    }
    if (is_owned(x, v))
        poprt__value_free_heap(v);
    memset(v, 0, sizeof *v);
    v->kind = POPRT__KIND_TENSOR;
    if (!x->cur) {
        /* folding: memory comes from the exec's arena */
        nt.data = poprt__arena_alloc(&x->strings, nt.nbytes ? nt.nbytes : 1);
        if (!nt.data)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory folding");
        v->t = nt;
        return POPRT_OK;
    }
    st = tval_heap(&v->t, dtype, rank, dims);
    if (st)
        return POPRT__NODE_ERR(k->node, st, "output %d: %s", j, poprt__last_error());
    own(x, v);
    return POPRT_OK;
}

poprt_status poprt__kctx_alloc_sequence(poprt__kctx *k, int j, int32_t elem, int64_t n)
{
    if (j >= k->n_out || !k->out[j])
        return POPRT_OK;
    poprt__value *v = k->out[j];
    if (is_owned(k->exec, v))
        poprt__value_free_heap(v);
    memset(v, 0, sizeof *v);
    v->kind = POPRT__KIND_SEQUENCE;
    v->seq_elem = elem;
    v->items = poprt__calloc((size_t)(n > 0 ? n : 1), sizeof *v->items);
    if (!v->items)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory for a sequence");
    v->n_items = n;
    own(k->exec, v);
    return POPRT_OK;
}

poprt_status poprt__kctx_alloc_item(poprt__kctx *k, int j, int64_t idx, int32_t dtype, int rank,
                                    const int64_t *dims)
{
    if (j >= k->n_out || !k->out[j])
        return POPRT_OK;
    poprt__value *v = k->out[j];
    if (!v->items || idx < 0 || idx >= v->n_items)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL, "sequence item %lld out of range",
                               (long long)idx);
    poprt__aligned_free(v->items[idx].data);
    memset(&v->items[idx], 0, sizeof v->items[idx]);
    return tval_heap(&v->items[idx], dtype, rank, dims);
}

poprt_status poprt__kctx_alloc_maps(poprt__kctx *k, int j, int32_t key, int32_t val, int64_t n,
                                    const int64_t *sizes, int64_t size)
{
    if (j >= k->n_out || !k->out[j])
        return POPRT_OK;
    int64_t maps = n < 0 ? 1 : n;
    poprt_status st = poprt__kctx_alloc_sequence(k, j, val, 2 * maps);
    if (st)
        return st;
    poprt__value *v = k->out[j];
    v->kind = n < 0 ? POPRT__KIND_MAP : POPRT__KIND_SEQUENCE;
    v->inner = n < 0 ? POPRT__KIND_UNKNOWN : POPRT__KIND_MAP;
    v->map_key = key;
    for (int64_t i = 0; i < maps && !st; i++) {
        const int64_t d = sizes ? sizes[i] : size;
        st = poprt__kctx_alloc_item(k, j, 2 * i, key, 1, &d);
        if (!st)
            st = poprt__kctx_alloc_item(k, j, 2 * i + 1, val, 1, &d);
    }
    return st ? POPRT__NODE_ERR(k->node, st, "output %d: %s", j, poprt__last_error()) : POPRT_OK;
}

poprt_status poprt__kctx_set_value(poprt__kctx *k, int j, const poprt__value *src)
{
    if (j >= k->n_out || !k->out[j])
        return POPRT_OK;
    poprt__value *v = k->out[j];
    if (src->kind == POPRT__KIND_TENSOR) {
        poprt_status st = poprt__kctx_alloc_output(k, j, src->t.dtype, src->t.rank, src->t.dims);
        if (st)
            return st;
        if (src->t.nbytes && v->t.data != src->t.data)
            memcpy(v->t.data, src->t.data, src->t.nbytes);
        return POPRT_OK;
    }
    if (is_owned(k->exec, v))
        poprt__value_free_heap(v);
    poprt_status st = poprt__value_copy_heap(v, src);
    if (st)
        return st;
    own(k->exec, v);
    return POPRT_OK;
}

char *poprt__kctx_strdup(poprt__kctx *k, const char *s, size_t len)
{
    return poprt__arena_strndup(&k->exec->strings, s, len);
}

void poprt__kctx_release_value(poprt__kctx *k, poprt__value *v)
{
    (void)k;
    poprt__value_free_heap(v);
}

poprt_status poprt__kctx_run_graph(poprt__kctx *k, const poprt__graph *g, int n_ins,
                                   const poprt__value *const *ins, int n_outs, poprt__value *outs)
{
    struct poprt__exec *x = k->exec;
    if (g->deferred)
        return POPRT__NODE_ERR(k->node, g->deferred, "subgraph '%s': %s", g->name,
                               g->deferred_msg ? g->deferred_msg : "failed shape inference");
    if ((size_t)n_ins > g->inputs.len)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "subgraph '%s' takes %zu inputs, got %d", g->name, g->inputs.len, n_ins);
    poprt__frame child;
    poprt__frame *saved = x->cur;
    poprt_status st = poprt__frame_init(&child, g, saved);
    if (st)
        return st;
    for (int i = 0; i < n_ins; i++) {
        const poprt__tensor *t = g->inputs.items[i];
        if (ins[i])
            child.vals[t->id] = *ins[i];
    }
    st = poprt__exec_graph(x, &child);
    x->cur = saved;
    for (int i = 0; i < n_outs && !st; i++) {
        if ((size_t)i >= g->outputs.len) {
            st = POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                                 "subgraph '%s' has only %zu outputs", g->name, g->outputs.len);
            break;
        }
        const poprt__tensor *t = g->outputs.items[i];
        poprt__value *src = find_value(&child, t);
        if (!src || src->kind == POPRT__KIND_UNKNOWN)
            st = POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                 "subgraph '%s' output '%s' has no value", g->name, t->name);
        else
            st = poprt__value_copy_heap(&outs[i], src);
    }
    poprt__frame_free(&child);
    return st;
}

poprt_status poprt__kctx_loop_iteration(poprt__kctx *k)
{
    const int64_t max = poprt__node_limits(k->node)->max_loop_iterations;
    if (++k->exec->loop_iterations > max)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_LIMIT_EXCEEDED,
                               "more than %lld Loop iterations in this run (option "
                               "'max_loop_iterations')",
                               (long long)max);
    return POPRT_OK;
}

void poprt__kctx_parallel_for(poprt__kctx *k, int64_t n, int64_t grain,
                              void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx)
{
    if (n <= 0)
        return;
    struct poprt__exec *x = k->exec;
    if (grain < 1)
        grain = 1;
    if (x->pool && n > grain && poprt__pool_run(x->pool, n, grain, fn, ctx))
        return;
    fn(ctx, 0, n);
}

int poprt__kctx_threads(const poprt__kctx *k)
{
    return poprt__pool_threads(k->exec->pool);
}

uint64_t poprt__kctx_random_seed(poprt__kctx *k)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = k->node->name; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ^ (k->exec->run_counter * 0x9e3779b97f4a7c15ull);
}

/* ---- running nodes --------------------------------------------------------------- */

static poprt_status value_type(poprt__arena *a, const poprt__value *v, poprt__type *t)
{
    memset(t, 0, sizeof *t);
    t->rank = -1;
    if (v->kind == POPRT__KIND_TENSOR) {
        return poprt__type_set_tensor(a, t, v->t.dtype, v->t.rank, v->t.dims);
    }
    if (v->kind == POPRT__KIND_MAP || poprt__value_is_map_seq(v)) {
        /* map(key, tensor(value)), or a sequence of them */
        poprt__type *mt = t;
        if (v->kind == POPRT__KIND_SEQUENCE) {
            t->kind = POPRT__KIND_SEQUENCE;
            mt = t->inner = poprt__arena_alloc(a, sizeof *t->inner);
            if (!mt)
                return POPRT_STATUS_OUT_OF_MEMORY;
            memset(mt, 0, sizeof *mt);
        }
        mt->kind = POPRT__KIND_MAP;
        mt->elem = v->map_key;
        mt->rank = -1;
        mt->inner = poprt__arena_alloc(a, sizeof *mt->inner);
        if (!mt->inner)
            return POPRT_STATUS_OUT_OF_MEMORY;
        memset(mt->inner, 0, sizeof *mt->inner);
        return poprt__type_set_tensor(a, mt->inner, v->seq_elem, -1, NULL);
    }
    if (v->kind == POPRT__KIND_SEQUENCE || v->kind == POPRT__KIND_OPTIONAL) {
        t->kind = v->kind;
        t->inner = poprt__arena_alloc(a, sizeof *t->inner);
        if (!t->inner)
            return POPRT_STATUS_OUT_OF_MEMORY;
        if (v->kind == POPRT__KIND_OPTIONAL && v->inner == POPRT__KIND_TENSOR && v->present)
            return poprt__type_set_tensor(a, t->inner, v->t.dtype, v->t.rank, v->t.dims);
        else {
            t->inner->kind = v->kind == POPRT__KIND_OPTIONAL ? v->inner : POPRT__KIND_TENSOR;
            t->inner->elem = v->seq_elem ? v->seq_elem : v->t.dtype;
            t->inner->rank = -1;
        }
    }
    return POPRT_OK;
}

/* Output types of n for the values in in (ots: n->n_outputs entries, at
 * most 16; n->n_inputs at most 32), made in the run's 'types' arena: the
 * callers release them once the node is prepared, so a Loop of a million
 * iterations does not keep a million nodes' worth of types. */
static poprt_status infer_now(struct poprt__exec *x, poprt__node *n, poprt__value **in,
                              poprt__type *ots)
{
    poprt__ival ivs[32];
    poprt__type its[32];
    for (int i = 0; i < n->n_inputs; i++) {
        ivs[i].type = NULL;
        ivs[i].data = NULL;
        ivs[i].nbytes = 0;
        /* a constant bound without its data (kept packed only) */
        ivs[i].src = n->inputs[i] && n->inputs[i]->raw ? n->inputs[i] : NULL;
        if (!in[i] || in[i]->kind == POPRT__KIND_UNKNOWN)
            continue;
        if (value_type(&x->types, in[i], &its[i]))
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        ivs[i].type = &its[i];
        if (in[i]->kind == POPRT__KIND_TENSOR) {
            ivs[i].data = in[i]->t.data;
            ivs[i].nbytes = in[i]->t.nbytes;
        }
    }
    memset(ots, 0, (size_t)n->n_outputs * sizeof *ots);
    for (int j = 0; j < n->n_outputs; j++)
        ots[j].rank = -1;
    poprt__infer_ctx c = {.node = n, .opset = n->opset, .n_in = n->n_inputs, .in = ivs,
                          .n_out = n->n_outputs, .out = ots, .arena = &x->types};
    return poprt__node_infer(&c);
}

/* Types the node's outputs with concrete shapes from its actual inputs and
 * allocates those that come out static. */
static poprt_status infer_and_allocate(struct poprt__exec *x, poprt__node *n, poprt__value **in,
                                       poprt__value **out)
{
    poprt__type ots[16];
    if (n->n_inputs > 32 || n->n_outputs > 16)
        return POPRT_OK; /* the kernel allocates */
    poprt_status st = infer_now(x, n, in, ots);
    if (st)
        return st;
    for (int j = 0; j < n->n_outputs; j++) {
        if (!out[j] || ots[j].kind != POPRT__KIND_TENSOR || poprt__type_numel(&ots[j]) < 0)
            continue;
        int64_t dims[POPRT__MAX_RANK];
        if (ots[j].rank > POPRT__MAX_RANK)
            return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "output rank %d", ots[j].rank);
        for (int d = 0; d < ots[j].rank; d++)
            dims[d] = ots[j].dims[d].value;
        poprt__kctx k = {.node = n, .n_out = n->n_outputs, .out = out, .exec = x};
        st = poprt__kctx_alloc_output(&k, j, ots[j].elem, ots[j].rank, dims);
        if (st)
            return st;
    }
    return POPRT_OK;
}

static poprt_status prepare_dynamic(struct poprt__exec *x, poprt__node *n, poprt__value **in,
                                    poprt__value **out)
{
    poprt__arena_mark mark = poprt__arena_mark_now(&x->types);
    poprt_status st = infer_and_allocate(x, n, in, out);
    poprt__arena_release(&x->types, mark);
    return st;
}

/* 1 when an input of n had a shape unknown when the session was planned. */
static int reads_dynamic(const poprt__node *n)
{
    for (int i = 0; i < n->n_inputs; i++) {
        const poprt__type *t = n->inputs[i] ? &n->inputs[i]->type : NULL;
        if (!t || t->kind != POPRT__KIND_TENSOR)
            continue;
        if (t->rank < 0)
            return 1;
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d].value < 0)
                return 1;
    }
    return 0;
}

/* Outputs planned with a fixed shape (the model declared it) for a node
 * whose inputs are known only now: the kernels write what the inputs give,
 * so that must be the planned shape (a graph output declared [1, 10] after
 * a batch of 2 would otherwise be overrun). */
static poprt_status check_planned_in(struct poprt__exec *x, poprt__node *n, poprt__value **in,
                                  poprt__value **out)
{
    poprt__type ots[16];
    if (n->n_inputs > 32 || n->n_outputs > 16)
        return POPRT_OK;
    poprt_status st = infer_now(x, n, in, ots);
    if (st)
        return st;
    for (int j = 0; j < n->n_outputs; j++) {
        if (!out[j] || out[j]->kind != POPRT__KIND_TENSOR || ots[j].kind != POPRT__KIND_TENSOR ||
            ots[j].rank < 0)
            continue;
        int same = ots[j].rank == out[j]->t.rank;
        for (int d = 0; same && d < ots[j].rank; d++)
            same = ots[j].dims[d].value < 0 || ots[j].dims[d].value == out[j]->t.dims[d];
        if (!same) {
            poprt__type planned;
            poprt__type_set_tensor(&x->types, &planned, out[j]->t.dtype, out[j]->t.rank,
                                   out[j]->t.dims);
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output '%s' is %s as the model declares it, but the inputs "
                                   "bound make it %s",
                                   n->outputs[j]->name, poprt__type_str(&x->types, &planned),
                                   poprt__type_str(&x->types, &ots[j]));
        }
    }
    return POPRT_OK;
}

static poprt_status check_planned(struct poprt__exec *x, poprt__node *n, poprt__value **in,
                                  poprt__value **out)
{
    poprt__arena_mark mark = poprt__arena_mark_now(&x->types);
    poprt_status st = check_planned_in(x, n, in, out);
    poprt__arena_release(&x->types, mark);
    return st;
}

/* A Concat the plan elided: its inputs were written in place inside its
 * output, so it has nothing to do. An input found elsewhere (a kernel that
 * did not write its planned buffer) is copied to its place. */
static poprt_status concat_in_output(poprt__frame *f, const poprt__node *n, poprt__value *const *in)
{
    const poprt__value *o = &f->vals[n->outputs[0]->id];
    size_t at = 0;
    int fits = o->kind == POPRT__KIND_TENSOR && o->t.data;
    for (int i = 0; i < n->n_inputs && fits; i++) {
        fits = in[i] && in[i]->kind == POPRT__KIND_TENSOR && in[i]->t.nbytes <= o->t.nbytes - at;
        if (fits)
            at += in[i]->t.nbytes;
    }
    if (!fits || at != o->t.nbytes)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL,
                               "the inputs do not fill the output planned to hold them");
    at = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        char *dst = (char *)o->t.data + at;
        if (in[i]->t.data != dst)
            memmove(dst, in[i]->t.data, in[i]->t.nbytes);
        at += in[i]->t.nbytes;
    }
    return POPRT_OK;
}

static poprt_status run_node(struct poprt__exec *x, poprt__frame *f, poprt__node *n)
{
    poprt__value *in_stack[32], *out_stack[16];
    poprt__value **in = n->n_inputs <= 32 ? in_stack : poprt__calloc((size_t)n->n_inputs, sizeof *in);
    poprt__value **out = n->n_outputs <= 16 ? out_stack : poprt__calloc((size_t)n->n_outputs, sizeof *out);
    poprt_status st = POPRT_OK;
    /* profile: the node's slice and its kernel's time */
    const int prof = x->s && x->s->profile && f == &x->main && n->id >= 0;
    const uint64_t t_node = prof ? poprt__now_ns() : 0;
    if (!in || !out) {
        st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory running node '%s'", n->name);
        goto done;
    }
    const poprt__kernel *kern = poprt__node_kernel(n);
    if (!n->op || !kern) {
        st = POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "no kernel for this operator");
        goto done;
    }
    for (int i = 0; i < n->n_inputs; i++) {
        in[i] = n->inputs[i] ? find_value(f, n->inputs[i]) : NULL;
        if (in[i] && in[i]->kind == POPRT__KIND_UNKNOWN) {
            /* an omitted optional input has no value; anything else is a bug */
            if (n->inputs[i]->name[0]) {
                st = POPRT__NODE_ERR(n, POPRT_STATUS_RUNTIME_ERROR, "input '%s' has no value",
                                     n->inputs[i]->name);
                goto done;
            }
            in[i] = NULL;
        }
    }
    unsigned char how = x->s && f == &x->main && n->id >= 0 && x->s->prog->plan.view
                            ? x->s->prog->plan.view[n->id]
                            : POPRT__PLAN_RUN;
    if (how == POPRT__PLAN_CONCAT) {
        st = concat_in_output(f, n, in);
        goto done;
    }
    if (how == POPRT__PLAN_VIEW && in[0] && in[0]->kind == POPRT__KIND_TENSOR) {
        /* a view: the output is the input's bytes under the output's shape */
        const poprt__tensor *t = n->outputs[0];
        poprt__value *o = &f->vals[t->id];
        memset(o, 0, sizeof *o);
        o->kind = POPRT__KIND_TENSOR;
        o->t = in[0]->t;
        o->t.rank = t->type.rank;
        for (int d = 0; d < t->type.rank; d++)
            o->t.dims[d] = t->type.dims[d].value;
        goto done;
    }
    int need_infer = 0;
    for (int j = 0; j < n->n_outputs; j++) {
        out[j] = n->outputs[j] ? &f->vals[n->outputs[j]->id] : NULL;
        if (out[j] && out[j]->kind == POPRT__KIND_UNKNOWN)
            need_infer = 1;
    }
    x->cur = f;
    if (need_infer && !(n->op->flags & POPRT__OP_DYNAMIC)) {
        st = prepare_dynamic(x, n, in, out);
        if (st)
            goto done;
    } else if (!need_infer && reads_dynamic(n) && (st = check_planned(x, n, in, out)))
        goto done;
    poprt__kctx k = {.node = n, .opset = n->opset, .n_in = n->n_inputs, .in = in,
                     .n_out = n->n_outputs, .out = out, .exec = x,
                     .vm = poprt__kernels_vmath()};
    if (x->s && x->s->prog->states && f == &x->main && n->id >= 0) {
        k.state = x->s->prog->states[n->id];
        k.state_size = x->s->prog->state_sizes[n->id];
    } else if (x->s && f != &x->main) {
        const poprt__sub_state *e = poprt__program_sub_state(x->s->prog, n);
        if (e) {
            k.state = e->state;
            k.state_size = e->size;
        }
    }
    if (prof) {
        const uint64_t t0 = poprt__now_ns();
        st = kern->run(&k);
        const uint64_t ns = poprt__now_ns() - t0;
        __atomic_add_fetch(&x->s->prof_ns[n->id], ns, __ATOMIC_RELAXED);
        __atomic_add_fetch(&x->s->prof_calls[n->id], 1, __ATOMIC_RELAXED);
    } else
        st = kern->run(&k);
    x->cur = f;
    scratch_reset(x);
    if (st)
        goto done;
    for (int j = 0; j < n->n_outputs; j++)
        if (out[j] && out[j]->kind == POPRT__KIND_UNKNOWN) {
            st = POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "kernel gave no value for output '%s'",
                                 n->outputs[j]->name);
            goto done;
        }
done:
    if (prof && !st)
        poprt__trace_add(x, n->id, t_node, poprt__now_ns());
    if (in != in_stack)
        poprt__free(in);
    if (out != out_stack)
        poprt__free(out);
    return st;
}

poprt_status poprt__exec_graph(struct poprt__exec *x, poprt__frame *f)
{
    const poprt__graph *g = f->g;
    for (size_t i = 0; i < g->nodes.len; i++) {
        poprt_status st = run_node(x, f, g->nodes.items[i]);
        if (st)
            return st;
    }
    return POPRT_OK;
}

void poprt__exec_free(struct poprt__exec *x)
{
    poprt__frame_free(&x->main);
    poprt__aligned_free(x->arena);
    while (x->scratch) {
        poprt__scratch_chunk *c = x->scratch->next;
        poprt__aligned_free(x->scratch);
        x->scratch = c;
    }
    poprt__arena_free(&x->strings);
    poprt__arena_free(&x->types);
    poprt__trace_buf_free(&x->trace);
}

/* ---- constant folding ------------------------------------------------------------- */

poprt_status poprt__fold_node(poprt__node *n, void *ctx)
{
    (void)ctx;
    poprt__model *m = n->graph->model;
    struct poprt__exec x;
    memset(&x, 0, sizeof x);
    poprt__arena_init(&x.strings);
    poprt__arena_init(&x.types);
    poprt__value in_vals[32], out_vals[16];
    poprt__value *in[32], *out[16];
    void *provided[16] = {0};
    poprt_status st = POPRT_OK;
    /* declined (the node stays as it is): no kernel, or more operands than
     * the folder's arrays hold */
    const poprt__kernel *kern = poprt__node_kernel(n);
    if (!kern || n->n_inputs > 32 || n->n_outputs > 16)
        goto done;
    for (int i = 0; i < n->n_inputs; i++) {
        in[i] = NULL;
        if (!n->inputs[i])
            continue;
        if ((st = bind_const(&in_vals[i], n->inputs[i])))
            goto done;
        in[i] = &in_vals[i];
    }
    for (int j = 0; j < n->n_outputs; j++) {
        out[j] = NULL;
        if (!n->outputs[j])
            continue;
        const poprt__type *t = &n->outputs[j]->type;
        int64_t dims[POPRT__MAX_RANK];
        if (t->rank > POPRT__MAX_RANK)
            goto done;
        for (int d = 0; d < t->rank; d++)
            dims[d] = t->dims[d].value;
        memset(&out_vals[j], 0, sizeof out_vals[j]);
        out_vals[j].kind = POPRT__KIND_TENSOR;
        st = tval_set_shape(&out_vals[j].t, t->elem, t->rank, dims);
        if (st)
            goto done;
        out_vals[j].t.data = poprt__model_fold_alloc(m, out_vals[j].t.nbytes);
        if (!out_vals[j].t.data) {
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory folding '%s'", n->name);
            goto done;
        }
        out[j] = &out_vals[j];
        provided[j] = out_vals[j].t.data;
    }
    poprt__kctx k = {.node = n, .opset = n->opset, .n_in = n->n_inputs, .in = in,
                     .n_out = n->n_outputs, .out = out, .exec = &x,
                     .vm = poprt__kernels_vmath()};
    st = kern->run(&k);
    if (st)
        goto done;
    for (int j = 0; j < n->n_outputs; j++) {
        poprt__tensor *t = n->outputs[j];
        if (!t || out_vals[j].kind != POPRT__KIND_TENSOR)
            continue;
        const poprt__tval *v = &out_vals[j].t;
        void *data = v->data;
        if (data != provided[j]) {
            /* the kernel allocated its own output (in the fold exec's arena) */
            if ((data = poprt__model_fold_alloc(m, v->nbytes)))
                memcpy(data, v->data, v->nbytes);
            if (!data) {
                st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory folding '%s'", n->name);
                goto done;
            }
        }
        if (poprt__type_set_tensor(&m->arena, &t->type, v->dtype, v->rank, v->dims)) {
            st = poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory folding '%s'", n->name);
            goto done;
        }
        poprt__tensor_set_data(t, data);
        t->nbytes = v->nbytes;
    }
done:
    poprt__exec_free(&x);
    return st;
}
