/* Reference kernels of the 'sequence' family. */
#include <string.h>
#include "kernels/ref/sequence.h"

/* The sequence held by input i (a sequence, or an optional holding one). */
static const poprt__value *seq_in(const poprt__kctx *k, int i)
{
    const poprt__value *v = i < k->n_in ? k->in[i] : NULL;
    if (v && (v->kind == POPRT__KIND_SEQUENCE ||
              (v->kind == POPRT__KIND_OPTIONAL && v->present && v->inner == POPRT__KIND_SEQUENCE)))
        return v;
    return NULL;
}

static poprt_status need_seq(const poprt__kctx *k, int i, const poprt__value **out)
{
    *out = seq_in(k, i);
    if (!*out)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "input %d is not a sequence", i);
    return POPRT_OK;
}

static poprt_status need_tensor(const poprt__kctx *k, int i, const poprt__tval **out)
{
    *out = poprt__kin(k, i);
    if (!*out)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "input %d is not a tensor", i);
    return POPRT_OK;
}

/* Item idx of sequence output j = a copy of src. */
static poprt_status put_item(poprt__kctx *k, int j, int64_t idx, const poprt__tval *src)
{
    poprt_status st = poprt__kctx_alloc_item(k, j, idx, src->dtype, src->rank, src->dims);
    if (st || j >= k->n_out || !k->out[j])
        return st;
    if (src->nbytes)
        memcpy(k->out[j]->items[idx].data, src->data, src->nbytes);
    return POPRT_OK;
}

/* Optional position input i (scalar int32/int64) normalised against n;
 * allowed range [0, n - 1 + extra]. */
static poprt_status position(const poprt__kctx *k, int i, int64_t n, int extra, int64_t dflt,
                             int64_t *pos)
{
    const poprt__tval *p = poprt__kin(k, i);
    if (!p) {
        *pos = dflt;
        return POPRT_OK;
    }
    if (p->numel != 1 || (p->dtype != POPRT_DTYPE_INT64 && p->dtype != POPRT_DTYPE_INT32))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                               "position must be an int32/int64 scalar");
    int64_t v = poprt__load_i64(p->data, p->dtype, 0);
    if (v < -n || v > n - 1 + extra)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                               "position %lld out of range for a sequence of %lld", (long long)v,
                               (long long)n);
    *pos = v < 0 ? v + n : v;
    return POPRT_OK;
}

poprt_status poprt__ref_sequence_empty(poprt__kctx *k)
{
    int64_t dt = poprt__attr_i(k->node, "dtype", POPRT_DTYPE_FLOAT);
    return poprt__kctx_alloc_sequence(k, 0, (int32_t)dt, 0);
}

poprt_status poprt__ref_sequence_construct(poprt__kctx *k)
{
    const poprt__tval *t0;
    poprt_status st = need_tensor(k, 0, &t0);
    if (st)
        return st;
    st = poprt__kctx_alloc_sequence(k, 0, t0->dtype, k->n_in);
    for (int i = 0; i < k->n_in && !st; i++) {
        const poprt__tval *t;
        st = need_tensor(k, i, &t);
        if (!st && t->dtype != t0->dtype)
            st = POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "inputs mix %s and %s",
                                 poprt__dtype_name((poprt_dtype)t0->dtype),
                                 poprt__dtype_name((poprt_dtype)t->dtype));
        if (!st)
            st = put_item(k, 0, i, t);
    }
    return st;
}

poprt_status poprt__ref_sequence_insert(poprt__kctx *k)
{
    const poprt__value *s;
    const poprt__tval *t;
    poprt_status st = need_seq(k, 0, &s);
    if (!st)
        st = need_tensor(k, 1, &t);
    if (st)
        return st;
    int64_t n = s->n_items, pos;
    st = position(k, 2, n, 1, n, &pos);
    if (st)
        return st;
    if (n && s->seq_elem && t->dtype != s->seq_elem)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                               "inserts %s into a sequence of %s", poprt__dtype_name((poprt_dtype)t->dtype),
                               poprt__dtype_name((poprt_dtype)s->seq_elem));
    st = poprt__kctx_alloc_sequence(k, 0, t->dtype, n + 1);
    for (int64_t i = 0, o = 0; i <= n && !st; i++) {
        if (i == pos)
            st = put_item(k, 0, o++, t);
        if (i < n && !st)
            st = put_item(k, 0, o++, &s->items[i]);
    }
    return st;
}

poprt_status poprt__ref_sequence_erase(poprt__kctx *k)
{
    const poprt__value *s;
    poprt_status st = need_seq(k, 0, &s);
    if (st)
        return st;
    int64_t n = s->n_items, pos;
    if (n == 0)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "erase from an empty sequence");
    st = position(k, 1, n, 0, n - 1, &pos);
    if (!st)
        st = poprt__kctx_alloc_sequence(k, 0, s->seq_elem, n - 1);
    for (int64_t i = 0, o = 0; i < n && !st; i++)
        if (i != pos)
            st = put_item(k, 0, o++, &s->items[i]);
    return st;
}

poprt_status poprt__ref_sequence_at(poprt__kctx *k)
{
    const poprt__value *s;
    poprt_status st = need_seq(k, 0, &s);
    if (st)
        return st;
    int64_t pos;
    if (!poprt__kin(k, 1))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "position is missing");
    st = position(k, 1, s->n_items, 0, 0, &pos);
    if (st)
        return st;
    poprt__value v;
    memset(&v, 0, sizeof v);
    v.kind = POPRT__KIND_TENSOR;
    v.t = s->items[pos];
    return poprt__kctx_set_value(k, 0, &v);
}

poprt_status poprt__ref_sequence_length(poprt__kctx *k)
{
    const poprt__value *s;
    poprt_status st = need_seq(k, 0, &s);
    if (!st)
        st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_INT64, 0, NULL);
    poprt__tval *o = poprt__kout(k, 0);
    if (!st && o)
        *(int64_t *)o->data = s->n_items;
    return st;
}

/* Copies x[..., off:off+len, ...] (along axis) into dst. */
static void copy_range(const poprt__tval *x, int axis, int64_t off, int64_t len, void *dst)
{
    size_t es = poprt__dtype_size((poprt_dtype)x->dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    size_t row = (size_t)inner * es;
    for (int64_t o = 0; o < outer && len && row; o++)
        memcpy((char *)dst + (size_t)(o * len) * row,
               (const char *)x->data + (size_t)(o * x->dims[axis] + off) * row, (size_t)len * row);
}

poprt_status poprt__ref_split_to_sequence(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt_status st = need_tensor(k, 0, &x);
    if (st)
        return st;
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", 0), x->rank, &axis))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "axis out of range for rank %d",
                               x->rank);
    int64_t dim = x->dims[axis];
    const poprt__tval *sp = poprt__kin(k, 1);
    int keep = sp || poprt__attr_i(k->node, "keepdims", 1) != 0;
    int64_t n, chunk = 1;
    if (!sp) {
        n = dim;
    } else if (sp->rank == 0) {
        chunk = poprt__load_i64(sp->data, sp->dtype, 0);
        if (chunk <= 0)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "split %lld must be positive",
                                   (long long)chunk);
        n = (dim + chunk - 1) / chunk;
    } else {
        n = sp->numel;
        int64_t sum = 0;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = poprt__load_i64(sp->data, sp->dtype, i);
            if (v < 0)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "negative split %lld",
                                       (long long)v);
            sum += v;
        }
        if (sum != dim)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "split sizes sum to %lld, the axis has %lld", (long long)sum,
                                   (long long)dim);
    }
    st = poprt__kctx_alloc_sequence(k, 0, x->dtype, n);
    int64_t off = 0;
    for (int64_t i = 0; i < n && !st; i++) {
        int64_t len = sp && sp->rank > 0 ? poprt__load_i64(sp->data, sp->dtype, i)
                                         : (off + chunk <= dim ? chunk : dim - off);
        int64_t dims[POPRT__MAX_RANK];
        int r = 0;
        for (int d = 0; d < x->rank; d++) {
            if (d == axis && !keep)
                continue;
            dims[r++] = d == axis ? len : x->dims[d];
        }
        st = poprt__kctx_alloc_item(k, 0, i, x->dtype, r, dims);
        if (!st && k->out[0])
            copy_range(x, (int)axis, off, len, k->out[0]->items[i].data);
        off += len;
    }
    return st;
}

poprt_status poprt__ref_concat_from_sequence(poprt__kctx *k)
{
    const poprt__value *s;
    poprt_status st = need_seq(k, 0, &s);
    if (st)
        return st;
    if (s->n_items < 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "the sequence is empty");
    const poprt__tval *f = &s->items[0];
    int new_axis = poprt__attr_i(k->node, "new_axis", 0) != 0;
    int rank = f->rank + new_axis;
    int64_t axis;
    if (rank > POPRT__MAX_RANK || !poprt__norm_axis(poprt__attr_i(k->node, "axis", 0), rank, &axis))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "axis out of range for rank %d",
                               rank);
    int64_t total = 0;
    for (int64_t i = 0; i < s->n_items; i++) {
        const poprt__tval *t = &s->items[i];
        int ok = t->rank == f->rank && t->dtype == f->dtype;
        for (int d = 0; ok && d < f->rank; d++)
            ok = t->dims[d] == f->dims[d] || (!new_axis && d == axis);
        if (!ok)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "item %lld does not match the shape of item 0", (long long)i);
        total += new_axis ? 1 : t->dims[axis];
    }
    int64_t dims[POPRT__MAX_RANK];
    for (int d = 0, i = 0; d < rank; d++) {
        if (d == axis) {
            dims[d] = total;
            if (!new_axis)
                i++;
        } else {
            dims[d] = f->dims[i++];
        }
    }
    st = poprt__kctx_alloc_output(k, 0, f->dtype, rank, dims);
    poprt__tval *o = poprt__kout(k, 0);
    if (st || !o)
        return st;
    size_t es = poprt__dtype_size((poprt_dtype)f->dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= dims[d];
    for (int d = (int)axis + 1; d < rank; d++)
        inner *= dims[d];
    size_t row = (size_t)inner * es;
    int64_t off = 0;
    for (int64_t i = 0; i < s->n_items; i++) {
        const poprt__tval *t = &s->items[i];
        int64_t a = new_axis ? 1 : t->dims[axis];
        for (int64_t q = 0; q < outer && a && row; q++)
            memcpy((char *)o->data + (size_t)(q * total + off) * row,
                   (const char *)t->data + (size_t)(q * a) * row, (size_t)a * row);
        off += a;
    }
    return POPRT_OK;
}

/* Bookkeeping lives on the heap, not in scratch: scratch is reset after
 * every node, including the body's. */
poprt_status poprt__ref_sequence_map(poprt__kctx *k)
{
    const poprt__attr *a = poprt__node_attr(k->node, "body");
    const poprt__graph *body = a && a->type == POPRT__ATTR_GRAPH ? a->g : NULL;
    const poprt__value *s0;
    poprt_status st = need_seq(k, 0, &s0);
    if (st)
        return st;
    if (!body)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "needs a body graph attribute");
    int64_t n = s0->n_items;
    for (int i = 1; i < k->n_in; i++) {
        const poprt__value *s = seq_in(k, i);
        if (s && s->n_items != n)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "sequence input %d has %lld items, input 0 has %lld", i,
                                   (long long)s->n_items, (long long)n);
    }
    poprt__value *items = poprt__calloc((size_t)k->n_in + 1, sizeof *items);
    const poprt__value **bind = poprt__calloc((size_t)k->n_in + 1, sizeof *bind);
    poprt__value *res = poprt__calloc((size_t)k->n_out + 1, sizeof *res);
    if (!items || !bind || !res) {
        st = POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int j = 0; j < k->n_out && !st; j++) {
        const poprt__tensor *ot = k->node->outputs[j];
        int32_t elem = ot && ot->type.inner ? ot->type.inner->elem : 0;
        st = poprt__kctx_alloc_sequence(k, j, elem, n);
    }
    for (int64_t it = 0; it < n && !st; it++) {
        for (int i = 0; i < k->n_in; i++) {
            const poprt__value *s = seq_in(k, i);
            bind[i] = k->in[i];
            if (s) {
                memset(&items[i], 0, sizeof items[i]);
                items[i].kind = POPRT__KIND_TENSOR;
                items[i].t = s->items[it];
                bind[i] = &items[i];
            }
        }
        memset(res, 0, (size_t)k->n_out * sizeof *res);
        st = poprt__kctx_run_graph(k, body, k->n_in, bind, k->n_out, res);
        for (int j = 0; j < k->n_out && !st; j++) {
            if (res[j].kind != POPRT__KIND_TENSOR) {
                st = POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                     "body output %d is not a tensor", j);
                break;
            }
            st = put_item(k, j, it, &res[j].t);
            if (!st && k->out[j])
                k->out[j]->seq_elem = res[j].t.dtype;
        }
        for (int j = 0; j < k->n_out; j++)
            poprt__kctx_release_value(k, &res[j]);
    }
done:
    poprt__free(items);
    poprt__free(bind);
    poprt__free(res);
    return st;
}

poprt_status poprt__ref_optional(poprt__kctx *k)
{
    const poprt__value *in = k->n_in > 0 ? k->in[0] : NULL;
    poprt__value v;
    memset(&v, 0, sizeof v);
    v.kind = POPRT__KIND_OPTIONAL;
    if (in) {
        if (in->kind != POPRT__KIND_TENSOR && in->kind != POPRT__KIND_SEQUENCE)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "input must be a tensor or a sequence");
        v.inner = in->kind;
        v.present = 1;
        v.t = in->t;
        v.seq_elem = in->seq_elem;
        v.n_items = in->n_items;
        v.items = in->items;
    } else {
        /* the inferred output type, optional(tp), carries the 'type' attribute */
        const poprt__tensor *ot = k->node->outputs[0];
        const poprt__type *tp = ot && ot->type.kind == POPRT__KIND_OPTIONAL ? ot->type.inner : NULL;
        v.inner = tp && tp->kind == POPRT__KIND_SEQUENCE ? POPRT__KIND_SEQUENCE : POPRT__KIND_TENSOR;
        int32_t elem = tp ? (tp->kind == POPRT__KIND_SEQUENCE && tp->inner ? tp->inner->elem : tp->elem)
                          : 0;
        v.seq_elem = elem;
        v.t.dtype = elem;
    }
    return poprt__kctx_set_value(k, 0, &v);
}

poprt_status poprt__ref_optional_has_element(poprt__kctx *k)
{
    const poprt__value *in = k->n_in > 0 ? k->in[0] : NULL;
    int has = in && (in->kind != POPRT__KIND_OPTIONAL || in->present);
    poprt_status st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_BOOL, 0, NULL);
    poprt__tval *o = poprt__kout(k, 0);
    if (!st && o)
        *(uint8_t *)o->data = (uint8_t)has;
    return st;
}

poprt_status poprt__ref_optional_get_element(poprt__kctx *k)
{
    const poprt__value *in = k->n_in > 0 ? k->in[0] : NULL;
    if (!in || (in->kind == POPRT__KIND_OPTIONAL && !in->present))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR, "the optional input is empty");
    if (in->kind != POPRT__KIND_OPTIONAL)
        return poprt__kctx_set_value(k, 0, in);
    poprt__value v = *in;
    v.kind = in->inner;
    v.inner = POPRT__KIND_UNKNOWN;
    v.present = 0;
    return poprt__kctx_set_value(k, 0, &v);
}
