/* Reference kernels of the 'control' family: If, Loop, Scan.
 *
 * Bookkeeping here (result arrays, scan slices, accumulated scan outputs)
 * lives on the heap, not in poprt__kctx_scratch: scratch is reset after
 * every node, including the nodes of the subgraphs these kernels run. */
#include <string.h>
#include "kernels/ref/control.h"

static const poprt__graph *graph_attr(const poprt__node *n, const char *name)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    return a && a->type == POPRT__ATTR_GRAPH ? a->g : NULL;
}

static int truthy(const poprt__tval *t)
{
    if (t->numel < 1 || !t->data)
        return 0;
    if (t->dtype == POPRT_DTYPE_BOOL || t->dtype == POPRT_DTYPE_UINT8)
        return ((const uint8_t *)t->data)[0] != 0;
    return poprt__load_f64(t->data, t->dtype, 0) != 0.0;
}

static void tensor_value(poprt__value *v, const poprt__tval *t)
{
    memset(v, 0, sizeof *v);
    v->kind = POPRT__KIND_TENSOR;
    v->t = *t;
}

static void release_all(poprt__kctx *k, poprt__value *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        poprt__kctx_release_value(k, &v[i]);
}

/* Copies the slice src[..., idx, ...] (axis removed) into dst->data. */
static void slice_axis(const poprt__tval *src, int axis, int64_t idx, poprt__tval *dst)
{
    size_t es = poprt__dtype_size((poprt_dtype)src->dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= src->dims[d];
    for (int d = axis + 1; d < src->rank; d++)
        inner *= src->dims[d];
    dst->dtype = src->dtype;
    dst->rank = src->rank - 1;
    for (int d = 0, o = 0; d < src->rank; d++)
        if (d != axis)
            dst->dims[o++] = src->dims[d];
    dst->numel = outer * inner;
    dst->nbytes = (size_t)dst->numel * es;
    size_t row = (size_t)inner * es;
    for (int64_t o = 0; o < outer && row; o++)
        memcpy((char *)dst->data + (size_t)o * row,
               (const char *)src->data + ((size_t)(o * src->dims[axis] + idx)) * row, row);
}

/* Writes s into dst[..., idx, ...]; s must have dst's shape without axis. */
static int place_axis(poprt__tval *dst, int axis, int64_t idx, const poprt__tval *s)
{
    if (s->rank != dst->rank - 1 || s->dtype != dst->dtype)
        return 0;
    for (int d = 0, o = 0; d < dst->rank; d++)
        if (d != axis && dst->dims[d] != s->dims[o++])
            return 0;
    size_t es = poprt__dtype_size((poprt_dtype)dst->dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= dst->dims[d];
    for (int d = axis + 1; d < dst->rank; d++)
        inner *= dst->dims[d];
    size_t row = (size_t)inner * es;
    for (int64_t o = 0; o < outer && row; o++)
        memcpy((char *)dst->data + ((size_t)(o * dst->dims[axis] + idx)) * row,
               (const char *)s->data + (size_t)o * row, row);
    return 1;
}

static poprt_status oom(const poprt__kctx *k)
{
    return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
}

/* A scan output that no iteration produced: shape [0, ...] from the body's
 * declared type (unknown dims as 0). */
static poprt_status empty_scan_output(poprt__kctx *k, int j, const poprt__type *t, int lead,
                                      const int64_t *lead_dims, int axis)
{
    int64_t dims[POPRT__MAX_RANK];
    int rank = t->kind == POPRT__KIND_TENSOR && t->rank >= 0 ? t->rank : 0;
    if (rank + lead > POPRT__MAX_RANK)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "output rank too large");
    int o = 0;
    for (int d = 0; d <= rank; d++) {
        if (d == axis)
            for (int q = 0; q < lead; q++)
                dims[o++] = lead_dims[q];
        if (d < rank)
            dims[o++] = t->dims[d].value > 0 ? t->dims[d].value : 0;
    }
    int32_t elem = t->elem ? t->elem : POPRT_DTYPE_FLOAT;
    poprt_status st = poprt__kctx_alloc_output(k, j, elem, rank + lead, dims);
    poprt__tval *ot = poprt__kout(k, j);
    if (!st && ot && ot->nbytes)
        memset(ot->data, 0, ot->nbytes);
    return st;
}

/* ---- If ------------------------------------------------------------------------ */

poprt_status poprt__ref_if(poprt__kctx *k)
{
    const poprt__tval *c = poprt__kin(k, 0);
    if (!c || c->numel < 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "cond must be a 1-element tensor");
    const poprt__graph *g = graph_attr(k->node, truthy(c) ? "then_branch" : "else_branch");
    if (!g)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing branch graph");
    size_t n = (size_t)k->n_out;
    poprt__value *outs = poprt__calloc(n ? n : 1, sizeof *outs);
    if (!outs)
        return oom(k);
    poprt_status st = poprt__kctx_run_graph(k, g, 0, NULL, k->n_out, outs);
    for (int j = 0; j < k->n_out && !st; j++)
        st = poprt__kctx_set_value(k, j, &outs[j]);
    release_all(k, outs, n);
    poprt__free(outs);
    return st;
}

/* ---- Loop ---------------------------------------------------------------------- */

/* One scan output of Loop: the per-iteration tensors, concatenated. */
typedef struct {
    poprt__tval shape; /* of the first iteration's tensor */
    char *buf;
    size_t used, cap;
    int seen;
} loop_acc;

static poprt_status acc_push(poprt__kctx *k, loop_acc *a, const poprt__value *v, int idx)
{
    if (v->kind != POPRT__KIND_TENSOR)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                               "scan output %d of the body is not a tensor", idx);
    const poprt__tval *t = &v->t;
    if (!a->seen) {
        a->shape = *t;
        a->shape.data = NULL;
        a->seen = 1;
    } else {
        int same = t->dtype == a->shape.dtype && t->rank == a->shape.rank;
        for (int d = 0; same && d < t->rank; d++)
            same = t->dims[d] == a->shape.dims[d];
        if (!same)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "scan output %d changes shape between iterations", idx);
    }
    if (a->used + t->nbytes > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 256;
        while (cap < a->used + t->nbytes)
            cap *= 2;
        char *nb = poprt__realloc(a->buf, cap);
        if (!nb)
            return oom(k);
        a->buf = nb;
        a->cap = cap;
    }
    if (t->nbytes)
        memcpy(a->buf + a->used, t->data, t->nbytes);
    a->used += t->nbytes;
    return POPRT_OK;
}

poprt_status poprt__ref_loop(poprt__kctx *k)
{
    const poprt__graph *body = graph_attr(k->node, "body");
    int n_car = k->n_in - 2;
    if (!body || n_car < 0 || body->inputs.len != (size_t)n_car + 2 ||
        body->outputs.len < (size_t)n_car + 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "body does not match the node");
    int n_scan = (int)body->outputs.len - 1 - n_car;
    int64_t trip = INT64_MAX;
    const poprt__tval *mt = poprt__kin(k, 0);
    if (mt) {
        if (mt->numel < 1)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "empty trip count M");
        trip = poprt__load_i64(mt->data, mt->dtype, 0);
    }
    int cond = 1;
    const poprt__tval *ct = poprt__kin(k, 1);
    if (ct)
        cond = truthy(ct);

    size_t n_res = body->outputs.len;
    poprt__value *cur = poprt__calloc((size_t)n_car + 1, sizeof *cur);
    poprt__value *res = poprt__calloc(n_res, sizeof *res);
    const poprt__value **bind = poprt__calloc((size_t)n_car + 2, sizeof *bind);
    loop_acc *acc = poprt__calloc((size_t)n_scan + 1, sizeof *acc);
    poprt_status st = POPRT_OK;
    int owned = 0; /* cur holds body results (heap) rather than the node's inputs */
    if (!cur || !res || !bind || !acc) {
        st = oom(k);
        goto done;
    }
    for (int i = 0; i < n_car; i++)
        if (k->in[2 + i])
            cur[i] = *k->in[2 + i];

    int64_t it = 0, itv = 0;
    uint8_t cb = 1;
    poprt__value iv, cv;
    poprt__tval scalar = {.dtype = POPRT_DTYPE_INT64, .rank = 0, .numel = 1, .nbytes = 8, .data = &itv};
    tensor_value(&iv, &scalar);
    scalar.dtype = POPRT_DTYPE_BOOL;
    scalar.nbytes = 1;
    scalar.data = &cb;
    tensor_value(&cv, &scalar);
    while (it < trip && cond) {
        if ((st = poprt__kctx_loop_iteration(k)))
            goto done;
        itv = it;
        cb = 1;
        bind[0] = &iv;
        bind[1] = &cv;
        for (int i = 0; i < n_car; i++)
            bind[2 + i] = cur[i].kind != POPRT__KIND_UNKNOWN ? &cur[i] : NULL;
        memset(res, 0, n_res * sizeof *res);
        st = poprt__kctx_run_graph(k, body, n_car + 2, bind, (int)n_res, res);
        if (st)
            goto done;
        if (res[0].kind != POPRT__KIND_TENSOR) {
            st = POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                 "body condition output is not a tensor");
            goto done;
        }
        cond = truthy(&res[0].t);
        for (int i = 0; i < n_car; i++) {
            if (owned)
                poprt__kctx_release_value(k, &cur[i]);
            cur[i] = res[1 + i];
            memset(&res[1 + i], 0, sizeof res[1 + i]);
        }
        owned = 1;
        for (int s = 0; s < n_scan && !st; s++)
            st = acc_push(k, &acc[s], &res[1 + n_car + s], s);
        release_all(k, res, n_res);
        if (st)
            goto done;
        it++;
    }
    for (int i = 0; i < n_car && !st; i++)
        st = poprt__kctx_set_value(k, i, &cur[i]);
    for (int s = 0; s < n_scan && !st; s++) {
        int j = n_car + s;
        if (j >= k->n_out)
            break;
        if (!acc[s].seen) {
            int64_t zero = 0;
            st = empty_scan_output(k, j, &((const poprt__tensor *)body->outputs.items[1 + j])->type,
                                   1, &zero, 0);
            continue;
        }
        int64_t dims[POPRT__MAX_RANK];
        if (acc[s].shape.rank + 1 > POPRT__MAX_RANK) {
            st = POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "scan output rank too large");
            break;
        }
        dims[0] = it;
        memcpy(dims + 1, acc[s].shape.dims, (size_t)acc[s].shape.rank * sizeof *dims);
        st = poprt__kctx_alloc_output(k, j, acc[s].shape.dtype, acc[s].shape.rank + 1, dims);
        poprt__tval *ot = poprt__kout(k, j);
        if (!st && ot && acc[s].used)
            memcpy(ot->data, acc[s].buf, acc[s].used);
    }
done:
    if (res)
        release_all(k, res, n_res);
    if (owned)
        release_all(k, cur, (size_t)n_car);
    for (int s = 0; acc && s < n_scan; s++)
        poprt__free(acc[s].buf);
    poprt__free(cur);
    poprt__free(res);
    poprt__free(bind);
    poprt__free(acc);
    return st;
}

/* ---- Scan ---------------------------------------------------------------------- */

typedef struct {
    poprt__scan_layout_t l;
    int64_t batch, T;       /* batch 1 for Scan-9+ */
    const poprt__tval *seq_lens;
    poprt__value *cur;      /* states of the running iteration */
    poprt__tval *slices;    /* one slice per scan input (heap buffers) */
    poprt__tval *state_in;  /* Scan-8: per-batch slices of the initial states */
    poprt__value *res;
    const poprt__value **bind;
    int *out_ready;
} scan_run;

/* Scan-8 views [batch, T, ...] as [batch*T, ...] so one axis-0 slice picks
 * (b, t); the same for outputs. */
static poprt__tval merge_lead(const poprt__tval *t)
{
    poprt__tval v = *t;
    v.rank = t->rank - 1;
    v.dims[0] = t->dims[0] * t->dims[1];
    for (int d = 1; d < v.rank; d++)
        v.dims[d] = t->dims[d + 1];
    return v;
}

static poprt_status scan_prepare(poprt__kctx *k, scan_run *r)
{
    poprt__scan_layout_t *l = &r->l;
    r->batch = 1;
    r->T = -1;
    for (int64_t j = 0; j < l->m; j++) {
        const poprt__tval *x = poprt__kin(k, l->first + l->n + (int)j);
        if (!x)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "scan input %lld is missing",
                                   (long long)j);
        int64_t len;
        if (l->v8) {
            if (x->rank < 2)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                       "scan input %lld needs [batch, sequence, ...]", (long long)j);
            if (j == 0)
                r->batch = x->dims[0];
            else if (x->dims[0] != r->batch)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                       "scan inputs differ in batch size");
            len = x->dims[1];
        } else {
            int64_t ax;
            if (!poprt__norm_axis(l->in_axis[j], x->rank, &ax))
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                                       "scan input %lld: axis %lld out of range", (long long)j,
                                       (long long)l->in_axis[j]);
            l->in_axis[j] = ax;
            len = x->dims[ax];
        }
        if (r->T >= 0 && len != r->T)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "scan inputs have sequence lengths %lld and %lld",
                                   (long long)r->T, (long long)len);
        r->T = len;
        /* a slice buffer for this input */
        int64_t per = len * (l->v8 ? r->batch : 1);
        size_t bytes = per ? x->nbytes / (size_t)per : 0;
        r->slices[j].data = poprt__aligned_alloc(bytes ? bytes : 1);
        if (!r->slices[j].data)
            return oom(k);
    }
    if (l->v8) {
        r->seq_lens = poprt__kin(k, 0);
        if (r->seq_lens && r->seq_lens->numel != r->batch)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "sequence_lens has %lld entries for batch %lld",
                                   (long long)r->seq_lens->numel, (long long)r->batch);
        for (int i = 0; i < l->n; i++) {
            const poprt__tval *s = poprt__kin(k, l->first + i);
            if (!s || s->rank < 1 || s->dims[0] != r->batch)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                       "state %d needs a leading batch dim %lld", i,
                                       (long long)r->batch);
            size_t bytes = r->batch ? s->nbytes / (size_t)r->batch : 0;
            r->state_in[i].data = poprt__aligned_alloc(bytes ? bytes : 1);
            if (!r->state_in[i].data)
                return oom(k);
        }
    }
    return POPRT_OK;
}

/* Stores scan output s of step t (batch b) into the node output. */
static poprt_status scan_store(poprt__kctx *k, scan_run *r, int s, int64_t b, int64_t t)
{
    poprt__scan_layout_t *l = &r->l;
    int j = l->n + s;
    const poprt__value *v = &r->res[j];
    if (v->kind != POPRT__KIND_TENSOR)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                               "scan output %d of the body is not a tensor", s);
    if (j >= k->n_out || !k->out[j])
        return POPRT_OK;
    const poprt__tval *x = &v->t;
    int64_t axis = l->v8 ? 1 : l->out_axis[s];
    if (!r->out_ready[j]) {
        if (!l->v8 && !poprt__norm_axis(axis, x->rank + 1, &axis))
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                                   "scan output %d: axis %lld out of range", s, (long long)axis);
        l->out_axis[s] = axis;
        int64_t dims[POPRT__MAX_RANK];
        int lead = l->v8 ? 2 : 1;
        if (x->rank + lead > POPRT__MAX_RANK)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "scan output rank too large");
        int o = 0;
        if (l->v8) {
            dims[o++] = r->batch;
            dims[o++] = r->T;
        }
        for (int d = 0; d <= x->rank; d++) {
            if (!l->v8 && d == axis)
                dims[o++] = r->T;
            if (d < x->rank)
                dims[o++] = x->dims[d];
        }
        poprt_status st = poprt__kctx_alloc_output(k, j, x->dtype, x->rank + lead, dims);
        if (st)
            return st;
        poprt__tval *ot = poprt__kout(k, j);
        if (ot->nbytes)
            memset(ot->data, 0, ot->nbytes); /* Scan-8 pads short sequences with zeros */
        r->out_ready[j] = 1;
    }
    poprt__tval *ot = poprt__kout(k, j);
    int ok;
    if (l->v8) {
        poprt__tval view = merge_lead(ot);
        ok = place_axis(&view, 0, b * r->T + t, x);
    } else {
        int64_t pos = l->out_dir[s] ? r->T - 1 - t : t;
        ok = place_axis(ot, (int)l->out_axis[s], pos, x);
    }
    if (!ok)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "scan output %d changes shape or type between iterations", s);
    return POPRT_OK;
}

/* Runs the body over the sequence of batch entry b. */
static poprt_status scan_batch(poprt__kctx *k, scan_run *r, int64_t b)
{
    poprt__scan_layout_t *l = &r->l;
    int n = l->n;
    int64_t len = r->T;
    if (r->seq_lens) {
        len = poprt__load_i64(r->seq_lens->data, r->seq_lens->dtype, b);
        if (len < 0 || len > r->T)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "sequence_lens[%lld] = %lld outside [0, %lld]", (long long)b,
                                   (long long)len, (long long)r->T);
    }
    for (int i = 0; i < n; i++) {
        const poprt__value *init = k->in[l->first + i];
        if (l->v8) {
            slice_axis(poprt__kin(k, l->first + i), 0, b, &r->state_in[i]);
            tensor_value(&r->cur[i], &r->state_in[i]);
        } else if (init) {
            r->cur[i] = *init;
        }
    }
    int owned = 0;
    poprt_status st = POPRT_OK;
    for (int64_t t = 0; t < len && !st; t++) {
        for (int64_t j = 0; j < l->m; j++) {
            const poprt__tval *x = poprt__kin(k, l->first + n + (int)j);
            int64_t idx = l->in_dir[j] ? len - 1 - t : t;
            if (l->v8) {
                poprt__tval view = merge_lead(x);
                slice_axis(&view, 0, b * r->T + idx, &r->slices[j]);
            } else {
                slice_axis(x, (int)l->in_axis[j], idx, &r->slices[j]);
            }
            poprt__value *sv = &r->cur[n + j];
            tensor_value(sv, &r->slices[j]);
        }
        for (int i = 0; i < n + (int)l->m; i++)
            r->bind[i] = r->cur[i].kind != POPRT__KIND_UNKNOWN ? &r->cur[i] : NULL;
        memset(r->res, 0, (size_t)k->n_out * sizeof *r->res);
        st = poprt__kctx_run_graph(k, l->body, n + (int)l->m, r->bind, k->n_out, r->res);
        if (st)
            break;
        for (int i = 0; i < n; i++) {
            if (owned)
                poprt__kctx_release_value(k, &r->cur[i]);
            r->cur[i] = r->res[i];
            memset(&r->res[i], 0, sizeof r->res[i]);
        }
        owned = 1;
        for (int s = 0; s < l->k && !st; s++)
            st = scan_store(k, r, s, b, t);
        release_all(k, r->res, (size_t)k->n_out);
    }
    release_all(k, r->res, (size_t)k->n_out); /* after a failed step */
    /* final states */
    for (int i = 0; i < n && !st; i++) {
        if (!l->v8) {
            st = poprt__kctx_set_value(k, i, &r->cur[i]);
            continue;
        }
        if (r->cur[i].kind != POPRT__KIND_TENSOR) {
            st = POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "state %d is not a tensor", i);
            break;
        }
        const poprt__tval *x = &r->cur[i].t;
        if (!r->out_ready[i] && i < k->n_out && k->out[i]) {
            int64_t dims[POPRT__MAX_RANK];
            if (x->rank + 1 > POPRT__MAX_RANK) {
                st = POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "state rank too large");
                break;
            }
            dims[0] = r->batch;
            memcpy(dims + 1, x->dims, (size_t)x->rank * sizeof *dims);
            st = poprt__kctx_alloc_output(k, i, x->dtype, x->rank + 1, dims);
            r->out_ready[i] = 1;
        }
        poprt__tval *ot = poprt__kout(k, i);
        if (!st && ot && !place_axis(ot, 0, b, x))
            st = POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                 "state %d differs in shape between batch entries", i);
    }
    if (owned)
        release_all(k, r->cur, (size_t)n);
    memset(r->cur, 0, (size_t)n * sizeof *r->cur);
    return st;
}

poprt_status poprt__ref_scan(poprt__kctx *k)
{
    scan_run r;
    memset(&r, 0, sizeof r);
    poprt_status st = poprt__scan_layout(k->node, k->opset, k->n_in, k->n_out, &r.l);
    if (st)
        return st;
    size_t nm = (size_t)r.l.n + (size_t)r.l.m;
    r.cur = poprt__calloc(nm + 1, sizeof *r.cur);
    r.slices = poprt__calloc((size_t)r.l.m + 1, sizeof *r.slices);
    r.state_in = poprt__calloc((size_t)r.l.n + 1, sizeof *r.state_in);
    r.res = poprt__calloc((size_t)k->n_out + 1, sizeof *r.res);
    r.bind = poprt__calloc(nm + 1, sizeof *r.bind);
    r.out_ready = poprt__calloc((size_t)k->n_out + 1, sizeof *r.out_ready);
    if (!r.cur || !r.slices || !r.state_in || !r.res || !r.bind || !r.out_ready) {
        st = oom(k);
        goto done;
    }
    st = scan_prepare(k, &r);
    for (int64_t b = 0; b < r.batch && !st; b++)
        st = scan_batch(k, &r, b);
    /* outputs no step produced (empty sequences or batch) */
    for (int j = 0; j < k->n_out && !st; j++) {
        if (r.out_ready[j] || !k->out[j])
            continue;
        const poprt__type *bt = &((const poprt__tensor *)r.l.body->outputs.items[j])->type;
        int is_state = j < r.l.n;
        if (!r.l.v8 && is_state)
            continue; /* set from the states by scan_batch */
        int64_t lead[2] = {r.batch, r.T < 0 ? 0 : r.T};
        if (r.l.v8)
            st = empty_scan_output(k, j, bt, is_state ? 1 : 2, lead, 0);
        else {
            int64_t ax = r.l.out_axis[j - r.l.n];
            int rank = bt->kind == POPRT__KIND_TENSOR && bt->rank >= 0 ? bt->rank : 0;
            if (!poprt__norm_axis(ax, rank + 1, &ax))
                ax = 0;
            st = empty_scan_output(k, j, bt, 1, &lead[1], (int)ax);
        }
    }
done:
    for (int64_t j = 0; r.slices && j < r.l.m; j++)
        poprt__aligned_free(r.slices[j].data);
    for (int i = 0; r.state_in && i < r.l.n; i++)
        poprt__aligned_free(r.state_in[i].data);
    poprt__free(r.cur);
    poprt__free(r.slices);
    poprt__free(r.state_in);
    poprt__free(r.res);
    poprt__free(r.bind);
    poprt__free(r.out_ready);
    return st;
}
