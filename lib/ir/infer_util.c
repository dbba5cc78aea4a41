/* Helpers shared by the operator inference functions. */
#include <stdio.h>
#include <string.h>
#include "ir/op.h"

poprt_status poprt__node_err(const poprt__node *n, poprt_status st, const char *fmt, ...)
{
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return poprt__err(st, "node '%s' (%s%s%s): %s", n->name, n->domain && *n->domain ? n->domain : "",
                      n->domain && *n->domain ? "." : "", n->op_type, msg);
}

poprt_status poprt__node_err_last(const poprt__node *n, poprt_status st)
{
    /* poprt__node_err formats into last_error from its own copy */
    return poprt__node_err(n, st, "%s", poprt__last_error());
}

void poprt__infer_set(poprt__infer_ctx *c, int j, int32_t elem, int rank, const poprt__dim *dims)
{
    if (j >= c->n_out)
        return;
    poprt__type *t = &c->out[j];
    t->kind = POPRT__KIND_TENSOR;
    t->elem = elem;
    t->rank = rank;
    t->inner = NULL;
    t->dims = NULL;
    if (rank > 0) {
        t->dims = poprt__arena_array(c->arena, (size_t)rank, sizeof *t->dims);
        if (!t->dims) {
            t->rank = -1;
            return;
        }
        for (int i = 0; i < rank; i++) {
            if (dims)
                t->dims[i] = dims[i];
            else
                t->dims[i].value = -1;
        }
    }
}

void poprt__infer_set_i64(poprt__infer_ctx *c, int j, int32_t elem, int rank, const int64_t *dims)
{
    if (j >= c->n_out)
        return;
    poprt__infer_set(c, j, elem, rank, NULL);
    for (int i = 0; i < rank && c->out[j].dims; i++)
        c->out[j].dims[i].value = dims ? (dims[i] < 0 ? -1 : dims[i]) : -1;
}

void poprt__infer_same(poprt__infer_ctx *c, int j, int i)
{
    if (j >= c->n_out)
        return;
    if (i >= c->n_in || !c->in[i].type) {
        poprt__infer_unknown(c, j, 0);
        return;
    }
    if (poprt__type_copy(c->arena, &c->out[j], c->in[i].type) != POPRT_OK)
        poprt__infer_unknown(c, j, c->in[i].type->elem);
}

void poprt__infer_unknown(poprt__infer_ctx *c, int j, int32_t elem)
{
    if (j >= c->n_out)
        return;
    memset(&c->out[j], 0, sizeof c->out[j]);
    c->out[j].kind = POPRT__KIND_TENSOR;
    c->out[j].elem = elem;
    c->out[j].rank = -1;
}

poprt_status poprt__infer_broadcast(poprt__infer_ctx *c, int j, int first, int count, int32_t elem)
{
    int rank = 0;
    for (int k = first; k < first + count; k++) {
        if (k >= c->n_in || !c->in[k].type)
            continue;
        const poprt__type *t = c->in[k].type;
        if (t->rank < 0) {
            poprt__infer_unknown(c, j, elem);
            return POPRT_OK;
        }
        if (t->rank > rank)
            rank = t->rank;
    }
    poprt__dim dims[POPRT__MAX_RANK * 4];
    if (rank > (int)(sizeof dims / sizeof dims[0]))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_UNSUPPORTED, "rank %d too large", rank);
    for (int d = 0; d < rank; d++) {
        dims[d].value = 1;
        dims[d].param = NULL;
    }
    for (int k = first; k < first + count; k++) {
        if (k >= c->n_in || !c->in[k].type)
            continue;
        const poprt__type *t = c->in[k].type;
        int off = rank - t->rank;
        for (int d = 0; d < t->rank; d++) {
            poprt__dim *o = &dims[off + d];
            const poprt__dim *x = &t->dims[d];
            if (x->value == 1)
                continue;
            if (o->value == 1 && !o->param) {
                *o = *x;
            } else if (x->value < 0) {
                /* unknown dim: keep a known non-1 value, else stay unknown */
                if (o->value < 0 && !(o->param && x->param && strcmp(o->param, x->param) == 0)) {
                    o->value = -1;
                    o->param = NULL;
                }
            } else if (o->value < 0) {
                o->value = x->value;
                o->param = NULL;
            } else if (o->value != x->value) {
                return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                       "input %d dim %d is %lld, cannot broadcast with %lld", k,
                                       d, (long long)x->value, (long long)o->value);
            }
        }
    }
    poprt__infer_set(c, j, elem, rank, dims);
    return POPRT_OK;
}

int poprt__infer_input_ints(poprt__infer_ctx *c, int i, int64_t **vals, int64_t *n)
{
    if (i >= c->n_in || !c->in[i].type || !poprt__ival_data(&c->in[i]))
        return 0;
    const poprt__type *t = c->in[i].type;
    int64_t cnt = poprt__type_numel(t);
    if (cnt < 0)
        return 0;
    int64_t *v = poprt__arena_array(c->arena, (size_t)(cnt ? cnt : 1), sizeof *v);
    if (!v)
        return 0;
    for (int64_t k = 0; k < cnt; k++) {
        switch (t->elem) {
        case POPRT_DTYPE_INT64:
            v[k] = ((const int64_t *)poprt__ival_data(&c->in[i]))[k];
            break;
        case POPRT_DTYPE_INT32:
            v[k] = ((const int32_t *)poprt__ival_data(&c->in[i]))[k];
            break;
        case POPRT_DTYPE_INT16:
            v[k] = ((const int16_t *)poprt__ival_data(&c->in[i]))[k];
            break;
        case POPRT_DTYPE_INT8:
            v[k] = ((const int8_t *)poprt__ival_data(&c->in[i]))[k];
            break;
        case POPRT_DTYPE_UINT8:
        case POPRT_DTYPE_BOOL:
            v[k] = ((const uint8_t *)poprt__ival_data(&c->in[i]))[k];
            break;
        case POPRT_DTYPE_UINT16:
            v[k] = ((const uint16_t *)poprt__ival_data(&c->in[i]))[k];
            break;
        case POPRT_DTYPE_UINT32:
            v[k] = ((const uint32_t *)poprt__ival_data(&c->in[i]))[k];
            break;
        case POPRT_DTYPE_UINT64:
            v[k] = (int64_t)((const uint64_t *)poprt__ival_data(&c->in[i]))[k];
            break;
        default:
            return 0;
        }
    }
    *vals = v;
    *n = cnt;
    return 1;
}

int32_t poprt__infer_elem(const poprt__infer_ctx *c, int i)
{
    if (i >= c->n_in || !c->in[i].type)
        return 0;
    const poprt__type *t = c->in[i].type;
    if (t->kind == POPRT__KIND_TENSOR)
        return t->elem;
    return t->inner ? t->inner->elem : 0;
}

int poprt__norm_axis(int64_t axis, int rank, int64_t *out)
{
    if (axis < -rank || axis >= rank)
        return 0;
    *out = axis < 0 ? axis + rank : axis;
    return 1;
}

int poprt__double_dim(double v, int64_t *out)
{
    if (!(v >= 0.0 && v <= 4611686018427387904.0)) /* NaN fails too */
        return 0;
    *out = (int64_t)v;
    return 1;
}

poprt_status poprt__infer_overflow(const poprt__infer_ctx *c, const char *what)
{
    return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                           "%s overflows (more elements than fit in memory)", what);
}

int poprt__infer_dims(const poprt__infer_ctx *c, int i, int64_t *dims)
{
    if (i >= c->n_in || !c->in[i].type || c->in[i].type->kind != POPRT__KIND_TENSOR)
        return -1;
    const poprt__type *t = c->in[i].type;
    if (t->rank < 0 || t->rank > POPRT__MAX_RANK)
        return -1;
    for (int d = 0; d < t->rank; d++)
        dims[d] = t->dims ? t->dims[d].value : -1;
    return t->rank;
}

poprt_status poprt__infer_conv_dims(poprt__infer_ctx *c, int ix, int iw, int32_t elem,
                                    int64_t *xd, int64_t *wd, int *rank)
{
    const int rx = poprt__infer_dims(c, ix, xd), rw = poprt__infer_dims(c, iw, wd);
    *rank = rx >= 0 ? rx : rw;
    if (*rank < 0) {
        *rank = 0;
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    if (*rank < 3 || (rx >= 0 && rw >= 0 && rx != rw))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X rank %d and W rank %d do not fit", rx, rw);
    for (int i = 0; rx < 0 && i < *rank; i++)
        xd[i] = -1;
    for (int i = 0; rw < 0 && i < *rank; i++)
        wd[i] = -1;
    return POPRT_OK;
}
