/* Operator family 'cast': schemas and shape/type inference. */
#include <ctype.h>
#include <string.h>
#include "ir/op.h"
#include "ir/dtype.h"

/* The `to` attribute: a dtype number, or (opset < 6) a name like "FLOAT". */
static poprt_status attr_to(poprt__infer_ctx *c, int32_t *to)
{
    const poprt__attr *a = poprt__node_attr(c->node, "to");
    if (!a)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "attribute 'to' is required");
    if (a->type == POPRT__ATTR_STRING && a->s) {
        char name[32];
        size_t n = strlen(a->s);
        if (n >= sizeof name)
            n = sizeof name - 1;
        for (size_t i = 0; i < n; i++)
            name[i] = (char)tolower((unsigned char)a->s[i]);
        name[n] = '\0';
        *to = poprt__dtype_from_name(name);
    } else {
        *to = (int32_t)a->i;
    }
    if (!poprt__dtype_valid(*to) || *to == POPRT_DTYPE_COMPLEX64 || *to == POPRT_DTYPE_COMPLEX128)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "attribute 'to' names no element type Cast produces (%d)", *to);
    return POPRT_OK;
}

static poprt_status check_round_mode(poprt__infer_ctx *c)
{
    if (poprt__e8m0_round_mode(poprt__attr_s(c->node, "round_mode", "up")) < 0)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "round_mode must be up, down or nearest");
    return POPRT_OK;
}

static void same_shape(poprt__infer_ctx *c, int32_t elem)
{
    poprt__infer_same(c, 0, 0);
    c->out[0].kind = POPRT__KIND_TENSOR;
    c->out[0].elem = elem;
}

static poprt_status inf_cast(poprt__infer_ctx *c)
{
    int32_t to;
    poprt_status st = attr_to(c, &to);
    if (!st)
        st = check_round_mode(c);
    if (st)
        return st;
    same_shape(c, to);
    return POPRT_OK;
}

static poprt_status inf_castlike(poprt__infer_ctx *c)
{
    poprt_status st = check_round_mode(c);
    if (st)
        return st;
    same_shape(c, poprt__infer_elem(c, 1));
    return POPRT_OK;
}

static poprt_status inf_bitcast(poprt__infer_ctx *c)
{
    int32_t to;
    poprt_status st = attr_to(c, &to);
    if (st)
        return st;
    int32_t from = poprt__infer_elem(c, 0);
    if (from && (poprt__dtype_size((poprt_dtype)from) != poprt__dtype_size((poprt_dtype)to) ||
                 from == POPRT_DTYPE_STRING || to == POPRT_DTYPE_STRING))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "cannot bitcast %s to %s",
                               poprt__dtype_name((poprt_dtype)from), poprt__dtype_name((poprt_dtype)to));
    same_shape(c, to);
    return POPRT_OK;
}

static const poprt__op op_cast = {"Cast", "", 1, 1, 1, 1, 1, 0, inf_cast};
static const poprt__op op_castlike = {"CastLike", "", 15, 2, 2, 1, 1, 0, inf_castlike};
static const poprt__op op_bitcast = {"BitCast", "", 26, 1, 1, 1, 1, 0, inf_bitcast};

const poprt__op *const poprt__ops_cast[] = {
    &op_cast,
    &op_castlike,
    &op_bitcast,
    NULL,
};
