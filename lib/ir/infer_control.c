/* Operator family 'control': If, Loop and Scan — schemas and shape/type
 * inference.
 *
 * The driver infers subgraphs before the node, so the outputs here are
 * typed from the subgraphs' output types. Body inputs that the file leaves
 * untyped are typed from the node's inputs first (then the body is inferred
 * again). Loop-carried values may change shape between iterations, so like
 * ONNX we give Loop bodies only the kind and element type of those values;
 * Scan states and slices keep their shapes.
 *
 * All three are POPRT__OP_DYNAMIC: their kernels allocate the outputs, since
 * the branch taken or the trip count decide the shapes. */
#include <string.h>
#include "ir/op.h"
#include "ir/dtype.h"
#include "ir/infer_control.h"
#include "ir/scan_layout.h"

static poprt__graph *graph_attr(const poprt__node *n, const char *name)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    return a && a->type == POPRT__ATTR_GRAPH ? a->g : NULL;
}

/* Subgraph types may be changed only when inferring the IR (types in the
 * model arena), never while a session runs. */
int poprt__control_ir_time(const poprt__infer_ctx *c)
{
    return c->node->graph && c->node->graph->model && c->arena == &c->node->graph->model->arena;
}

static const poprt__type *gout(const poprt__graph *g, size_t i)
{
    return &((const poprt__tensor *)g->outputs.items[i])->type;
}

static poprt__tensor *gin(const poprt__graph *g, size_t i)
{
    return g->inputs.items[i];
}

/* The least precise type covering a and b: equal dims stay, others become
 * unknown; different ranks give an unknown rank. */
poprt_status poprt__control_join_type(poprt__arena *ar, poprt__type *out, const poprt__type *a,
                                      const poprt__type *b)
{
    memset(out, 0, sizeof *out);
    out->rank = -1;
    if (a->kind == POPRT__KIND_UNKNOWN || a->kind != b->kind)
        return POPRT_OK;
    out->kind = a->kind;
    if (a->kind != POPRT__KIND_TENSOR) {
        if (!a->inner || !b->inner)
            return POPRT_OK;
        out->inner = poprt__arena_alloc(ar, sizeof *out->inner);
        if (!out->inner)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory joining types");
        return poprt__control_join_type(ar, out->inner, a->inner, b->inner);
    }
    out->elem = a->elem == b->elem ? a->elem : (a->elem && b->elem ? 0 : a->elem | b->elem);
    if (a->rank < 0 || a->rank != b->rank)
        return POPRT_OK;
    out->rank = a->rank;
    if (a->rank > 0) {
        out->dims = poprt__arena_array(ar, (size_t)a->rank, sizeof *out->dims);
        if (!out->dims)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory joining types");
    }
    for (int d = 0; d < a->rank; d++) {
        const poprt__dim *x = &a->dims[d], *y = &b->dims[d];
        out->dims[d].value = -1;
        if (x->value >= 0 && x->value == y->value)
            out->dims[d] = *x;
        else if (x->value < 0 && y->value < 0 && x->param && y->param &&
                 strcmp(x->param, y->param) == 0)
            out->dims[d].param = x->param;
    }
    return POPRT_OK;
}

/* Kind and element type of src, shapes dropped (loop-carried values). */
static poprt_status loose_copy(poprt__arena *ar, poprt__type *dst, const poprt__type *src)
{
    memset(dst, 0, sizeof *dst);
    dst->kind = src->kind;
    dst->elem = src->elem;
    dst->rank = -1;
    if (src->inner) {
        dst->inner = poprt__arena_alloc(ar, sizeof *dst->inner);
        if (!dst->inner)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory typing a subgraph");
        return loose_copy(ar, dst->inner, src->inner);
    }
    return POPRT_OK;
}

/* Gives an untyped (or less precisely typed) body input the type want.
 * Sets *changed when it did. */
poprt_status poprt__control_refine_input(poprt__arena *ar, poprt__tensor *t,
                                         const poprt__type *want, int *changed)
{
    poprt__type *ty = &t->type;
    if (want->kind == POPRT__KIND_UNKNOWN)
        return POPRT_OK;
    if (ty->kind == POPRT__KIND_UNKNOWN ||
        (ty->kind == POPRT__KIND_TENSOR && want->kind == POPRT__KIND_TENSOR && ty->rank < 0 &&
         want->rank >= 0) ||
        (ty->kind != POPRT__KIND_TENSOR && ty->kind == want->kind && !ty->inner && want->inner)) {
        poprt_status st = poprt__type_copy(ar, ty, want);
        if (st)
            return st;
        *changed = 1;
        return POPRT_OK;
    }
    if (ty->kind != want->kind || ty->kind != POPRT__KIND_TENSOR)
        return POPRT_OK;
    if (!ty->elem && want->elem) {
        ty->elem = want->elem;
        *changed = 1;
    }
    if (ty->rank == want->rank)
        for (int d = 0; d < ty->rank; d++)
            if (ty->dims[d].value < 0 && want->dims[d].value >= 0) {
                ty->dims[d] = want->dims[d];
                *changed = 1;
            }
    return POPRT_OK;
}

/* A tensor type of elem with src's dims, dim `drop` removed (-1: none) and
 * `ins_n` dims inserted at `ins_at` with value ins_val (unknown rank stays). */
static poprt_status reshape_type(poprt__arena *ar, poprt__type *dst, const poprt__type *src,
                                 int drop, int drop2, int ins_at, int ins_n, int64_t ins_val)
{
    memset(dst, 0, sizeof *dst);
    dst->kind = POPRT__KIND_TENSOR;
    dst->elem = src->kind == POPRT__KIND_TENSOR ? src->elem : 0;
    dst->rank = -1;
    if (src->kind != POPRT__KIND_TENSOR || src->rank < 0)
        return POPRT_OK;
    poprt__dim tmp[POPRT__MAX_RANK + 2];
    int r = 0;
    for (int d = 0; d < src->rank && r < POPRT__MAX_RANK; d++)
        if (d != drop && d != drop2)
            tmp[r++] = src->dims[d];
    if (ins_at < 0 || ins_at > r || r + ins_n > POPRT__MAX_RANK)
        return POPRT_OK;
    dst->rank = r + ins_n;
    if (dst->rank > 0) {
        dst->dims = poprt__arena_array(ar, (size_t)dst->rank, sizeof *dst->dims);
        if (!dst->dims)
            return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory typing Scan");
    }
    int o = 0;
    for (int d = 0; d <= r; d++) {
        if (d == ins_at)
            for (int q = 0; q < ins_n; q++) {
                dst->dims[o].value = ins_val;
                dst->dims[o++].param = NULL;
            }
        if (d < r)
            dst->dims[o++] = tmp[d];
    }
    return POPRT_OK;
}

/* ---- If ------------------------------------------------------------------------ */

static poprt_status inf_if(poprt__infer_ctx *c)
{
    const poprt__graph *th = graph_attr(c->node, "then_branch");
    const poprt__graph *el = graph_attr(c->node, "else_branch");
    if (!th || !el)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "needs then_branch and else_branch graph attributes");
    if (th->outputs.len != el->outputs.len || th->outputs.len < (size_t)c->n_out)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "branches give %zu and %zu outputs for %d node outputs",
                               th->outputs.len, el->outputs.len, c->n_out);
    int32_t ce = poprt__infer_elem(c, 0);
    if (ce && ce != POPRT_DTYPE_BOOL)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "cond must be bool, not %s",
                               poprt__dtype_name((poprt_dtype)ce));
    int pick = -1; /* branch known from a constant condition */
    if (c->in[0].type && poprt__ival_data(&c->in[0]) && c->in[0].nbytes >= 1)
        pick = ((const uint8_t *)poprt__ival_data(&c->in[0]))[0] != 0;
    /* a branch whose inference failed (deferred until it runs) gives no
     * types: the outputs are those of the other branch, or unknown */
    const poprt__graph *only = pick >= 0 ? (pick ? th : el) : NULL;
    if (!only && (th->deferred || el->deferred))
        only = th->deferred ? el : th;
    if (only && only->deferred)
        return POPRT_OK; /* c->out stays unknown */
    for (int j = 0; j < c->n_out; j++) {
        poprt_status st;
        if (only)
            st = poprt__type_copy(c->arena, &c->out[j], gout(only, (size_t)j));
        else
            st = poprt__control_join_type(c->arena, &c->out[j], gout(th, (size_t)j), gout(el, (size_t)j));
        if (st)
            return st;
    }
    return POPRT_OK;
}

/* ---- Loop ---------------------------------------------------------------------- */

static poprt_status inf_loop(poprt__infer_ctx *c)
{
    poprt__graph *body = graph_attr(c->node, "body");
    if (!body)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "needs a body graph attribute");
    int n_car = c->n_in - 2;
    if (n_car < 0 || body->inputs.len != (size_t)n_car + 2 ||
        body->outputs.len < (size_t)n_car + 1)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "body takes %zu inputs and gives %zu outputs for %d loop-carried "
                               "values",
                               body->inputs.len, body->outputs.len, n_car < 0 ? 0 : n_car);
    int n_scan = (int)body->outputs.len - 1 - n_car;
    if (c->n_out > n_car + n_scan)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "has %d outputs, the body gives %d", c->n_out, n_car + n_scan);
    if (poprt__control_ir_time(c)) {
        int changed = 0;
        poprt__type want;
        (void)poprt__type_set_tensor(c->arena, &want, POPRT_DTYPE_INT64, 0, NULL); /* rank 0 */
        poprt_status st = poprt__control_refine_input(c->arena, gin(body, 0), &want, &changed);
        (void)poprt__type_set_tensor(c->arena, &want, POPRT_DTYPE_BOOL, 0, NULL);
        if (!st)
            st = poprt__control_refine_input(c->arena, gin(body, 1), &want, &changed);
        for (int i = 0; i < n_car && !st; i++) {
            if (!c->in[2 + i].type)
                continue;
            st = loose_copy(c->arena, &want, c->in[2 + i].type);
            if (!st)
                st = poprt__control_refine_input(c->arena, gin(body, (size_t)(2 + i)), &want, &changed);
        }
        if (!st && changed)
            st = poprt__subgraph_infer(body, NULL);
        if (st)
            return st;
    }
    for (int j = 0; j < c->n_out; j++) {
        const poprt__type *bt = gout(body, (size_t)(1 + j));
        poprt_status st = POPRT_OK;
        if (body->deferred) {
            /* the body fails when it runs: a loop of no iteration still
             * gives the initial values */
            if (j < n_car && c->in[2 + j].type)
                st = loose_copy(c->arena, &c->out[j], c->in[2 + j].type);
        } else if (j < n_car) {
            /* the initial value leaves unchanged when the loop runs no iteration */
            if (c->in[2 + j].type)
                st = poprt__control_join_type(c->arena, &c->out[j], bt, c->in[2 + j].type);
            else
                st = loose_copy(c->arena, &c->out[j], bt);
        } else {
            st = reshape_type(c->arena, &c->out[j], bt, -1, -1, 0, 1, -1);
        }
        if (st)
            return st;
    }
    return POPRT_OK;
}

/* ---- Scan ---------------------------------------------------------------------- */

static poprt_status inf_scan(poprt__infer_ctx *c)
{
    poprt__scan_layout_t l;
    poprt_status st = poprt__scan_layout(c->node, c->opset, c->n_in, c->n_out, &l);
    if (st)
        return st;
    int64_t seq = -1, batch = -1;
    /* types for the body: states and one slice of each scan input */
    poprt__type want[POPRT__SCAN_MAX * 2];
    for (int i = 0; i < l.n + (int)l.m; i++) {
        const poprt__type *t = c->in[l.first + i].type;
        memset(&want[i], 0, sizeof want[i]);
        want[i].rank = -1;
        if (!t)
            continue;
        int is_scan = i >= l.n;
        if (l.v8) {
            if (t->kind == POPRT__KIND_TENSOR && t->rank > 0 && t->dims[0].value >= 0)
                batch = t->dims[0].value;
            if (is_scan && t->kind == POPRT__KIND_TENSOR && t->rank > 1 && t->dims[1].value >= 0)
                seq = t->dims[1].value;
            st = reshape_type(c->arena, &want[i], t, 0, is_scan ? 1 : -1, 0, 0, 0);
        } else if (is_scan) {
            int64_t ax = l.in_axis[i - l.n];
            if (t->kind == POPRT__KIND_TENSOR && t->rank >= 0) {
                if (!poprt__norm_axis(ax, t->rank, &ax))
                    return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                                           "scan input %d: axis %lld out of range for rank %d",
                                           i - l.n, (long long)ax, t->rank);
                if (t->dims[ax].value >= 0)
                    seq = t->dims[ax].value;
                st = reshape_type(c->arena, &want[i], t, (int)ax, -1, 0, 0, 0);
            }
        } else {
            st = poprt__type_copy(c->arena, &want[i], t);
        }
        if (st)
            return st;
    }
    if (poprt__control_ir_time(c)) {
        int changed = 0;
        for (int i = 0; i < l.n + (int)l.m && !st; i++)
            st = poprt__control_refine_input(c->arena, gin(l.body, (size_t)i), &want[i], &changed);
        if (!st && changed)
            st = poprt__subgraph_infer(l.body, NULL);
        if (st)
            return st;
    }
    for (int j = 0; j < c->n_out && !l.body->deferred; j++) {
        const poprt__type *bt = gout(l.body, (size_t)j);
        if (j < l.n) {
            st = l.v8 ? reshape_type(c->arena, &c->out[j], bt, -1, -1, 0, 1, batch)
                      : poprt__type_copy(c->arena, &c->out[j], bt);
        } else if (l.v8) {
            st = reshape_type(c->arena, &c->out[j], bt, -1, -1, 0, 2, seq);
            if (!st && c->out[j].rank > 1)
                c->out[j].dims[0].value = batch;
        } else {
            int64_t ax = l.out_axis[j - l.n];
            if (bt->kind == POPRT__KIND_TENSOR && bt->rank >= 0 &&
                !poprt__norm_axis(ax, bt->rank + 1, &ax))
                return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                                       "scan output %d: axis %lld out of range", j - l.n,
                                       (long long)ax);
            st = reshape_type(c->arena, &c->out[j], bt, -1, -1, (int)ax, 1, seq);
        }
        if (st)
            return st;
    }
    return POPRT_OK;
}

static const poprt__op op_if = {"If", "", 1, 1, 1, 1, -1,
                                POPRT__OP_DYNAMIC | POPRT__OP_CONTROL, inf_if};
static const poprt__op op_loop = {"Loop", "", 1, 2, -1, 1, -1,
                                  POPRT__OP_DYNAMIC | POPRT__OP_CONTROL, inf_loop};
static const poprt__op op_scan = {"Scan", "", 8, 2, -1, 1, -1,
                                  POPRT__OP_DYNAMIC | POPRT__OP_CONTROL, inf_scan};

const poprt__op *const poprt__ops_control[] = {
    &op_if,
    &op_loop,
    &op_scan,
    NULL,
};
