/* convert_version: converts the model's default-domain (ai.onnx) opset up or
 * down between 7 and the newest version libpoprt knows, rewriting every node
 * whose operator signature changed between the two versions (attributes that
 * became inputs and back, renamed or replaced operators, changed defaults),
 * in the main graph and in every subgraph. A node that has no equivalent in
 * the target opset fails the pass with "node 'x' (Op): cannot convert to
 * opset N: why"; the manager then restores the model.
 *
 * Arguments: version=N (default 11, as PopRT's --convert_version). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ir/dtype.h"
#include "ir/op.h"
#include "passes/rewrite.h"

#define CV_MIN 7
#define CV_MAX 27
#define MAXR POPRT__MAX_RANK

typedef struct cv {
    poprt__model *m;
    int from, to;
    int changed;
    poprt__vec dropped; /* tensors that lost a reader; removed at the end if unused */
} cv;

/* ---- small helpers --------------------------------------------------------------------------- */

static int op_is(const poprt__node *n, const char *op) { return strcmp(n->op_type, op) == 0; }
/* The node's form changes at boundary b (one side < b, the other >= b). */
static int crosses(const cv *c, int b) { return (c->from < b) != (c->to < b); }

static poprt_status cv_fail(const cv *c, const poprt__node *n, const char *fmt, ...)
    POPRT__PRINTF(3, 4);
static poprt_status cv_fail(const cv *c, const poprt__node *n, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "cannot convert to opset %d: %s", c->to,
                           buf);
}

static int64_t dim_of(const poprt__tensor *t, int i)
{
    return poprt__rw_rank(t) > i && i >= 0 ? t->type.dims[i].value : -1;
}
static int32_t elem_of(const poprt__tensor *t) { return t ? t->type.elem : 0; }

/* ---- attributes ------------------------------------------------------------------------------ */

static poprt__attr *attr_get(poprt__node *n, const char *name)
{
    for (int i = 0; i < n->n_attrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0)
            return &n->attrs[i];
    return NULL;
}

/* Removes attribute name of n: 1 when n had it. */
static int attr_del(cv *c, poprt__node *n, const char *name)
{
    int had = poprt__rw_remove_attr(n, name);
    c->changed |= had;
    return had;
}

/* Sets attribute name of n (poprt__rw_attr_*); the model changed. */
static poprt_status attr_set_int(cv *c, poprt__node *n, const char *name, int64_t v)
{
    c->changed = 1;
    return poprt__rw_attr_i(n, name, v);
}

static poprt_status attr_set_float(cv *c, poprt__node *n, const char *name, float v)
{
    c->changed = 1;
    return poprt__rw_attr_f(n, name, v);
}

static poprt_status attr_set_str(cv *c, poprt__node *n, const char *name, const char *v)
{
    c->changed = 1;
    return poprt__rw_attr_s(n, name, v);
}

static poprt_status attr_set_ints(cv *c, poprt__node *n, const char *name, const int64_t *v,
                                  int64_t cnt)
{
    c->changed = 1;
    return poprt__rw_attr_ints(n, name, cnt, v);
}

/* cnt <= MAXR doubles (the scales of a rank) stored as float32 */
static poprt_status attr_set_floats(cv *c, poprt__node *n, const char *name, const double *v,
                                    int64_t cnt)
{
    float f[MAXR];
    if (cnt > MAXR)
        return poprt__err(POPRT_STATUS_INTERNAL, "node '%s': %lld scales", n->name, (long long)cnt);
    for (int64_t i = 0; i < cnt; i++)
        f[i] = (float)v[i];
    c->changed = 1;
    return poprt__rw_attr_floats(n, name, cnt, f);
}

/* ---- constant values ------------------------------------------------------------------------- */

typedef struct cval {
    int32_t dtype;
    int64_t numel;
    const void *data;
} cval;

/* The value of t when it is an initializer, a folded constant or a Constant
 * node's output; 0 when it is not known. */
static int const_of(const poprt__tensor *t, cval *v)
{
    if (!t || t->type.kind != POPRT__KIND_TENSOR)
        return 0;
    size_t es;
    if (t->raw) {
        es = poprt__dtype_size((poprt_dtype)t->type.elem);
        if (!es)
            return 0;
        v->dtype = t->type.elem;
        v->numel = (int64_t)(t->nbytes / es);
        v->data = poprt__tensor_data(t);
        return v->data != NULL; /* NULL: no memory to read it */
    }
    const poprt__node *p = t->producer;
    if (!p || !op_is(p, "Constant") || !poprt__rw_onnx_domain(p->domain) || p->n_attrs < 1)
        return 0;
    const poprt__attr *a = &p->attrs[0];
    if (strcmp(a->name, "value") == 0 && a->t && a->t->raw) {
        es = poprt__dtype_size((poprt_dtype)a->t->type.elem);
        if (!es)
            return 0;
        v->dtype = a->t->type.elem;
        v->numel = (int64_t)(a->t->nbytes / es);
        v->data = poprt__tensor_data(a->t);
        return v->data != NULL;
    }
    if (strcmp(a->name, "value_int") == 0) {
        v->dtype = POPRT_DTYPE_INT64, v->numel = 1, v->data = &a->i;
        return 1;
    }
    if (strcmp(a->name, "value_ints") == 0) {
        v->dtype = POPRT_DTYPE_INT64, v->numel = a->n, v->data = a->ints;
        return a->ints || !a->n;
    }
    if (strcmp(a->name, "value_float") == 0) {
        v->dtype = POPRT_DTYPE_FLOAT, v->numel = 1, v->data = &a->f;
        return 1;
    }
    if (strcmp(a->name, "value_floats") == 0) {
        v->dtype = POPRT_DTYPE_FLOAT, v->numel = a->n, v->data = a->floats;
        return a->floats || !a->n;
    }
    return 0;
}

/* Integer constant (int32/int64) of at most cap values. */
static int const_ints(const poprt__tensor *t, int64_t *out, int64_t cap, int64_t *n)
{
    cval v;
    if (!const_of(t, &v) || !poprt__dtype_is_int(v.dtype) || v.numel > cap)
        return 0;
    for (int64_t i = 0; i < v.numel; i++)
        out[i] = poprt__load_i64(v.data, v.dtype, i);
    *n = v.numel;
    return 1;
}

/* Numeric constant read as doubles. */
static int const_f64(const poprt__tensor *t, double *out, int64_t cap, int64_t *n)
{
    cval v;
    if (!const_of(t, &v) || v.dtype == POPRT_DTYPE_STRING || v.dtype == POPRT_DTYPE_BOOL ||
        v.numel > cap)
        return 0;
    for (int64_t i = 0; i < v.numel; i++)
        out[i] = poprt__load_f64(v.data, v.dtype, i);
    *n = v.numel;
    return 1;
}

/* Constant with no elements (the "unused" roi/scales of Resize-11). */
static int const_empty(const poprt__tensor *t)
{
    cval v;
    return const_of(t, &v) && v.numel == 0;
}

static const char *base_of(const poprt__node *n, const char *what)
{
    poprt__arena *a = &n->graph->model->arena;
    const char *s = poprt__arena_printf(a, "%s_%s", n->name[0] ? n->name : n->op_type, what);
    return s ? s : what;
}

static poprt__tensor *mk_i64(poprt__node *n, const char *what, const int64_t *v, int64_t cnt,
                             int rank)
{
    int64_t dims[1] = {cnt};
    return poprt__graph_add_const(n->graph, base_of(n, what), POPRT_DTYPE_INT64, rank, dims, v,
                                  (size_t)cnt * sizeof *v);
}

/* Constant of dtype holding cnt values (rank 1, or a scalar when rank 0). */
static poprt__tensor *mk_num(poprt__node *n, const char *what, int32_t dtype, const double *v,
                             int64_t cnt, int rank)
{
    size_t es = poprt__dtype_size((poprt_dtype)dtype);
    if (!es || !poprt__dtype_valid(dtype) || dtype == POPRT_DTYPE_STRING) {
        poprt__err(POPRT_STATUS_UNSUPPORTED, "node '%s': cannot make a %s constant", n->name,
                   poprt__dtype_name((poprt_dtype)dtype));
        return NULL;
    }
    unsigned char buf[MAXR * 2 * 8 + 8];
    if ((size_t)cnt * es > sizeof buf)
        return NULL;
    memset(buf, 0, sizeof buf);
    for (int64_t i = 0; i < cnt; i++)
        poprt__store_f64(buf, dtype, i, v[i]);
    int64_t dims[1] = {cnt};
    return poprt__graph_add_const(n->graph, base_of(n, what), dtype, rank, dims, buf,
                                  (size_t)cnt * es);
}

/* ---- inputs and new nodes -------------------------------------------------------------------- */

static poprt_status set_input(cv *c, poprt__node *n, int i, poprt__tensor *t)
{
    c->changed = 1;
    if (i >= n->n_inputs && poprt__node_resize_inputs(n, i + 1))
        return poprt__rw_oom();
    poprt__node_set_input(n, i, t);
    return POPRT_OK;
}

/* Omits input i (trailing omitted inputs are dropped); the old tensor is
 * removed at the end when nothing else reads it. */
static poprt_status drop_input(cv *c, poprt__node *n, int i)
{
    if (i >= n->n_inputs || !n->inputs[i])
        return POPRT_OK;
    c->changed = 1;
    if (poprt__vec_push(&c->dropped, n->inputs[i]))
        return poprt__rw_oom();
    poprt__node_set_input(n, i, NULL);
    int k = n->n_inputs;
    while (k > 0 && !n->inputs[k - 1])
        k--;
    return poprt__node_resize_inputs(n, k);
}

static poprt_status set_n_inputs(cv *c, poprt__node *n, int k)
{
    for (int i = k; i < n->n_inputs; i++) {
        poprt_status st = drop_input(c, n, i);
        if (st)
            return st;
    }
    return n->n_inputs > k ? poprt__node_resize_inputs(n, k) : POPRT_OK;
}

static poprt__node *add_node(cv *c, poprt__node *near, const char *op, int nin, int nout)
{
    c->changed = 1;
    poprt__node *n = poprt__rw_node(near->graph, op, "", base_of(near, op), nin, nout);
    for (int i = 0; n && i < nout; i++)
        if (!(n->outputs[i] = poprt__graph_new_tensor(near->graph, base_of(near, op))))
            return NULL;
    return n;
}

/* The node now writes a fresh tensor at output j, and returns the tensor it
 * used to write (which a node added after it then writes, so graph outputs
 * keep their names). */
static poprt__tensor *detach_output(cv *c, poprt__node *n, int j)
{
    poprt__tensor *old = n->outputs[j];
    poprt__tensor *t = poprt__graph_new_tensor(n->graph, base_of(n, "out"));
    if (!t)
        return NULL;
    n->outputs[j] = t;
    c->changed = 1;
    return old;
}

/* ---- operator existence ---------------------------------------------------------------------- */

/* Earliest opset of the default domain that has op (0: libpoprt does not know it). */
static int intro_version(const char *op)
{
    if (strcmp(op, "Swish") == 0)
        return 24; /* registered for every opset, but the spec has it from 24 */
    size_t n;
    const poprt__op *const *all = poprt__op_all(&n);
    int best = 0;
    for (size_t i = 0; i < n; i++)
        if (poprt__rw_onnx_domain(all[i]->domain) && strcmp(all[i]->name, op) == 0 &&
            (!best || all[i]->since_version < best))
            best = all[i]->since_version;
    return best;
}

/* Opset from which an operator is deprecated (removed from the spec). */
static int removed_version(const char *op)
{
    if (strcmp(op, "Upsample") == 0)
        return 10;
    if (strcmp(op, "Scatter") == 0)
        return 11;
    return 0;
}

/* ---- data types ------------------------------------------------------------------------------ */

/* Opset that introduced a data type to the default domain's operators. */
static int dtype_version(int32_t dt)
{
    switch (dt) {
    case POPRT_DTYPE_BFLOAT16: return 13;
    case POPRT_DTYPE_FLOAT8E4M3FN: case POPRT_DTYPE_FLOAT8E4M3FNUZ:
    case POPRT_DTYPE_FLOAT8E5M2: case POPRT_DTYPE_FLOAT8E5M2FNUZ: return 19;
    case POPRT_DTYPE_UINT4: case POPRT_DTYPE_INT4: return 21;
    case POPRT_DTYPE_FLOAT4E2M1: return 23;
    case POPRT_DTYPE_FLOAT8E8M0: return 24;
    case POPRT_DTYPE_UINT2: case POPRT_DTYPE_INT2: return 25;
    default: return 0;
    }
}

#define B(t) (1u << POPRT_DTYPE_##t)
#define FLOATS (B(FLOAT16) | B(FLOAT) | B(DOUBLE))

/* Operators whose input `slot` (-1: output 0) accepted fewer types before `version`. */
static const struct {
    const char *op;
    int version;
    int slot;
    unsigned allowed; /* dtype bit mask accepted below version */
} type_rules[] = {
    {"Equal", 11, 0, B(BOOL) | B(INT32) | B(INT64)},
    {"Equal", 19, 0, ~B(STRING)},
    {"Greater", 9, 0, FLOATS},
    {"Less", 9, 0, FLOATS},
    {"Max", 12, 0, FLOATS},
    {"Min", 12, 0, FLOATS},
    {"Clip", 12, 0, FLOATS},
    {"MatMul", 9, 0, FLOATS},
    {"Gemm", 9, 0, FLOATS},
    {"Flatten", 9, 0, FLOATS},
    {"Relu", 14, 0, FLOATS | B(BFLOAT16)},
    {"Pad", 11, 0, FLOATS},
    {"Pow", 12, 0, FLOATS | B(BFLOAT16)},
    {"TopK", 11, 0, FLOATS},
    {"Add", 14, 0, FLOATS | B(BFLOAT16) | B(INT32) | B(INT64) | B(UINT32) | B(UINT64)},
    {"Sub", 14, 0, FLOATS | B(BFLOAT16) | B(INT32) | B(INT64) | B(UINT32) | B(UINT64)},
    {"Mul", 14, 0, FLOATS | B(BFLOAT16) | B(INT32) | B(INT64) | B(UINT32) | B(UINT64)},
    {"Div", 14, 0, FLOATS | B(BFLOAT16) | B(INT32) | B(INT64) | B(UINT32) | B(UINT64)},
    {"MaxPool", 12, 0, FLOATS | B(BFLOAT16)},
    {"ReduceMax", 20, 0, ~B(BOOL)},
    {"ReduceMin", 20, 0, ~B(BOOL)},
    {"IsInf", 20, 0, B(FLOAT) | B(DOUBLE)},
    {"IsNaN", 20, 0, FLOATS | B(BFLOAT16)},
    {"DequantizeLinear", 21, 0, B(INT8) | B(UINT8) | B(INT32) | (0xfu << 17)},
    {"QuantizeLinear", 21, -1, B(INT8) | B(UINT8) | (0xfu << 17)},
    {"QLinearMatMul", 21, 1, B(FLOAT)},
    {"Range", 27, 0, B(FLOAT) | B(DOUBLE) | B(INT16) | B(INT32) | B(INT64)},
};

static poprt_status check_types(cv *c, poprt__node *n)
{
    if (c->to >= c->from)
        return POPRT_OK;
    /* sequences and optionals through If/Loop (13/16) and Identity (14/16) */
    int seq_v = op_is(n, "Identity") ? 14 : op_is(n, "If") || op_is(n, "Loop") ? 13 : 0;
    for (int j = 0; seq_v && j < n->n_outputs; j++) {
        poprt__kind k = n->outputs[j] ? n->outputs[j]->type.kind : POPRT__KIND_TENSOR;
        int need = k == POPRT__KIND_SEQUENCE ? seq_v : k == POPRT__KIND_OPTIONAL ? 16 : 0;
        if (need > c->to)
            return cv_fail(c, n, "%s values need opset %d",
                           k == POPRT__KIND_SEQUENCE ? "sequence" : "optional", need);
    }
    for (int io = 0; io < 2; io++) {
        int cnt = io ? n->n_outputs : n->n_inputs;
        for (int i = 0; i < cnt; i++) {
            poprt__tensor *t = io ? n->outputs[i] : n->inputs[i];
            int v = t ? dtype_version(t->type.elem) : 0;
            if (v > c->to)
                return cv_fail(c, n, "%s '%s' has type %s, which needs opset %d",
                               io ? "output" : "input", t->name,
                               poprt__dtype_name((poprt_dtype)t->type.elem), v);
        }
    }
    for (size_t k = 0; k < sizeof type_rules / sizeof type_rules[0]; k++) {
        if (strcmp(type_rules[k].op, n->op_type) != 0 || c->to >= type_rules[k].version)
            continue;
        int s = type_rules[k].slot;
        int32_t dt = elem_of(s < 0 ? poprt__node_out(n, 0) : poprt__node_in(n, s));
        if (dt > 0 && dt < 32 && !(type_rules[k].allowed & (1u << dt)))
            return cv_fail(c, n, "type %s is accepted only from opset %d",
                           poprt__dtype_name((poprt_dtype)dt), type_rules[k].version);
    }
    return POPRT_OK;
}

/* ---- negative axes (allowed from opset 11) ---------------------------------------------------- */

static poprt_status normalize_axes(cv *c, poprt__node *n)
{
    static const char *const ops[] = {
        "ArgMax", "ArgMin", "Compress", "Concat", "Flatten", "Gather", "Hardmax", "LogSoftmax",
        "OneHot", "Softmax", "Split", "Squeeze", "Unsqueeze", "TopK", "Slice", "Scatter",
        "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
        "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
    int known = 0;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        known |= op_is(n, ops[k]);
    if (!known || c->to >= 11)
        return POPRT_OK;
    int r = poprt__rw_rank(poprt__node_in(n, 0));
    if (op_is(n, "OneHot"))
        r = poprt__rw_rank(poprt__node_out(n, 0));
    const char *name = op_is(n, "Squeeze") || op_is(n, "Unsqueeze") || op_is(n, "Slice") ||
                               strncmp(n->op_type, "Reduce", 6) == 0
                           ? "axes"
                           : "axis";
    poprt__attr *a = attr_get(n, name);
    if (!a)
        return POPRT_OK;
    if (op_is(n, "Unsqueeze")) {
        r = poprt__rw_rank(poprt__node_out(n, 0));
    }
    int64_t cnt = a->type == POPRT__ATTR_INTS ? a->n : a->type == POPRT__ATTR_INT ? 1 : 0;
    int64_t *vals = a->type == POPRT__ATTR_INTS ? a->ints : &a->i;
    for (int64_t i = 0; i < cnt; i++) {
        if (vals[i] >= 0)
            continue;
        if (op_is(n, "TopK") && vals[i] == -1)
            continue; /* TopK's default, valid in every version */
        if (r < 0)
            return cv_fail(c, n, "negative %s needs opset 11 or a known input rank", name);
        vals[i] += r;
        c->changed = 1;
    }
    return POPRT_OK;
}

/* ---- per-operator conversions ---------------------------------------------------------------- */

/* Reshape: allowzero (14). */
static poprt_status cv_reshape(cv *c, poprt__node *n)
{
    if (c->to >= 14 || !attr_get(n, "allowzero"))
        return POPRT_OK;
    if (poprt__attr_i(n, "allowzero", 0)) {
        int64_t s[MAXR], k;
        if (!const_ints(poprt__node_in(n, 1), s, MAXR, &k))
            return cv_fail(c, n, "allowzero=1 needs a constant shape without zeros");
        for (int64_t i = 0; i < k; i++)
            if (s[i] == 0)
                return cv_fail(c, n, "allowzero=1 with a zero in the shape needs opset 14");
    }
    attr_del(c, n, "allowzero");
    return POPRT_OK;
}

/* Attribute `name` <-> input `slot` (ints), at boundary b. */
static poprt_status ints_attr_to_input(cv *c, poprt__node *n, const char *name, int slot,
                                       int rank1)
{
    int64_t cnt;
    const int64_t *v = poprt__attr_ints(n, name, &cnt);
    if (!v)
        return POPRT_OK;
    poprt__tensor *t = mk_i64(n, name, v, cnt, rank1 ? 1 : 0);
    if (!t)
        return poprt__rw_oom();
    attr_del(c, n, name);
    return set_input(c, n, slot, t);
}

static poprt_status ints_input_to_attr(cv *c, poprt__node *n, const char *name, int slot)
{
    poprt__tensor *t = poprt__node_in(n, slot);
    if (!t)
        return POPRT_OK;
    int64_t v[4 * MAXR], cnt;
    if (!const_ints(t, v, 4 * MAXR, &cnt))
        return cv_fail(c, n, "input '%s' (%s) must be constant to become an attribute", t->name,
                       name);
    poprt_status st = attr_set_ints(c, n, name, v, cnt);
    return st ? st : drop_input(c, n, slot);
}

/* Squeeze / Unsqueeze: axes attribute before 13, input from 13. */
static poprt_status cv_axes13(cv *c, poprt__node *n, int b)
{
    if (!crosses(c, b))
        return POPRT_OK;
    if (c->to >= b)
        return ints_attr_to_input(c, n, "axes", 1, 1);
    return ints_input_to_attr(c, n, "axes", 1);
}

/* Reduce*: axes input from 13 (ReduceSum) or 18 (the others). */
static poprt_status cv_reduce(cv *c, poprt__node *n)
{
    int b = op_is(n, "ReduceSum") ? 13 : 18;
    if (!crosses(c, b))
        return POPRT_OK;
    if (c->to >= b)
        return ints_attr_to_input(c, n, "axes", 1, 1);
    poprt__tensor *t = poprt__node_in(n, 1);
    int64_t v[MAXR], cnt = 0;
    if (t && !const_ints(t, v, MAXR, &cnt))
        return cv_fail(c, n, "axes input '%s' must be constant", t->name);
    int noop = (int)poprt__attr_i(n, "noop_with_empty_axes", 0);
    attr_del(c, n, "noop_with_empty_axes");
    poprt_status st = drop_input(c, n, 1);
    if (st)
        return st;
    if (cnt == 0 && noop) {
        /* nothing to reduce: the node is an identity */
        n->op_type = "Identity";
        n->n_attrs = 0;
        return set_n_inputs(c, n, 1);
    }
    return cnt ? attr_set_ints(c, n, "axes", v, cnt) : POPRT_OK;
}

/* Slice: attributes starts/ends/axes before 10, inputs from 10. */
static poprt_status cv_slice(cv *c, poprt__node *n)
{
    if (!crosses(c, 10))
        return POPRT_OK;
    poprt_status st = POPRT_OK;
    if (c->to >= 10) {
        int64_t ns, ne, na;
        const int64_t *s = poprt__attr_ints(n, "starts", &ns), *e = poprt__attr_ints(n, "ends", &ne);
        const int64_t *a = poprt__attr_ints(n, "axes", &na);
        if (!s || !e)
            return cv_fail(c, n, "starts and ends are required");
        poprt__tensor *ts = mk_i64(n, "starts", s, ns, 1), *te = mk_i64(n, "ends", e, ne, 1);
        poprt__tensor *ta = a ? mk_i64(n, "axes", a, na, 1) : NULL;
        if (!ts || !te || (a && !ta))
            return poprt__rw_oom();
        attr_del(c, n, "starts"), attr_del(c, n, "ends"), attr_del(c, n, "axes");
        if (!(st = set_input(c, n, 1, ts)) && !(st = set_input(c, n, 2, te)) && ta)
            st = set_input(c, n, 3, ta);
        return st;
    }
    int64_t s[MAXR], e[MAXR], a[MAXR], p[MAXR], ns, ne, na = 0, np = 0;
    if (!const_ints(poprt__node_in(n, 1), s, MAXR, &ns) ||
        !const_ints(poprt__node_in(n, 2), e, MAXR, &ne) ||
        (poprt__node_in(n, 3) && !const_ints(poprt__node_in(n, 3), a, MAXR, &na)) ||
        (poprt__node_in(n, 4) && !const_ints(poprt__node_in(n, 4), p, MAXR, &np)))
        return cv_fail(c, n, "starts, ends, axes and steps must be constant");
    for (int64_t i = 0; i < np; i++)
        if (p[i] != 1)
            return cv_fail(c, n, "steps other than 1 need opset 10");
    if ((st = attr_set_ints(c, n, "starts", s, ns)) || (st = attr_set_ints(c, n, "ends", e, ne)) ||
        (na && (st = attr_set_ints(c, n, "axes", a, na))))
        return st;
    return set_n_inputs(c, n, 1);
}

/* Split: `split` attribute before 13, input from 13, num_outputs from 18. */
static poprt_status cv_split(cv *c, poprt__node *n)
{
    int ff = c->from < 13 ? 0 : c->from < 18 ? 1 : 2, tf = c->to < 13 ? 0 : c->to < 18 ? 1 : 2;
    if (ff == tf)
        return POPRT_OK;
    int64_t sizes[256], ns = -1; /* -1: equal split */
    poprt__tensor *dyn = NULL;   /* non-constant split input */
    int64_t cnt;
    const int64_t *sa = poprt__attr_ints(n, "split", &cnt);
    poprt_status st;
    if (ff == 0 && sa) {
        if (cnt > 256)
            return cv_fail(c, n, "too many outputs");
        memcpy(sizes, sa, (size_t)cnt * sizeof *sa);
        ns = cnt;
    } else if (ff >= 1 && poprt__node_in(n, 1)) {
        if (!const_ints(poprt__node_in(n, 1), sizes, 256, &ns)) {
            dyn = poprt__node_in(n, 1);
            ns = -1;
        }
    } else if (ff == 2 && attr_get(n, "num_outputs")) {
        /* num_outputs (18): ceil-sized chunks, the last one smaller */
        int64_t k = poprt__attr_i(n, "num_outputs", n->n_outputs), ax;
        int r = poprt__rw_rank(poprt__node_in(n, 0));
        int64_t axis = poprt__attr_i(n, "axis", 0);
        int64_t d = r >= 0 && poprt__norm_axis(axis, r, &ax) ? dim_of(n->inputs[0], (int)ax) : -1;
        if (d < 0)
            return cv_fail(c, n, "num_outputs needs the size of the split axis to be known");
        if (d % k) {
            int64_t chunk = (d + k - 1) / k;
            for (int64_t i = 0; i < k && i < 256; i++)
                sizes[i] = i < k - 1 ? chunk : d - chunk * (k - 1);
            ns = k;
        }
    }
    attr_del(c, n, "split");
    attr_del(c, n, "num_outputs");
    if (tf == 0) {
        if (dyn)
            return cv_fail(c, n, "the split input '%s' must be constant", dyn->name);
        if ((st = set_n_inputs(c, n, 1)))
            return st;
        return ns >= 0 ? attr_set_ints(c, n, "split", sizes, ns) : POPRT_OK;
    }
    if (dyn)
        return POPRT_OK; /* stays an input */
    if (ns >= 0) {
        poprt__tensor *t = mk_i64(n, "split", sizes, ns, 1);
        if (!t)
            return poprt__rw_oom();
        if (poprt__node_in(n, 1) && (st = drop_input(c, n, 1)))
            return st;
        return set_input(c, n, 1, t);
    }
    if ((st = set_n_inputs(c, n, 1)))
        return st;
    return tf == 2 ? attr_set_int(c, n, "num_outputs", n->n_outputs) : POPRT_OK;
}

/* Clip: min/max attributes before 11, optional inputs from 11. */
static poprt_status cv_clip(cv *c, poprt__node *n)
{
    if (!crosses(c, 11))
        return POPRT_OK;
    poprt_status st;
    int32_t dt = elem_of(poprt__node_in(n, 0));
    if (c->to >= 11) {
        static const char *const names[2] = {"min", "max"};
        for (int k = 0; k < 2; k++) {
            const poprt__attr *a = attr_get(n, names[k]);
            if (!a)
                continue;
            double v = a->f;
            poprt__tensor *t = mk_num(n, names[k], dt ? dt : POPRT_DTYPE_FLOAT, &v, 1, 0);
            if (!t)
                return poprt__rw_oom();
            attr_del(c, n, names[k]);
            if ((st = set_input(c, n, 1 + k, t)))
                return st;
        }
        return POPRT_OK;
    }
    for (int k = 0; k < 2; k++) {
        poprt__tensor *t = poprt__node_in(n, 1 + k);
        double v;
        int64_t cnt;
        if (!t)
            continue;
        if (!const_f64(t, &v, 1, &cnt) || cnt != 1)
            return cv_fail(c, n, "%s input '%s' must be a constant scalar", k ? "max" : "min",
                           t->name);
        if ((st = attr_set_float(c, n, k ? "max" : "min", (float)v)))
            return st;
    }
    return set_n_inputs(c, n, 1);
}

/* Pad: pads/value attributes before 11, inputs from 11; axes input 18;
 * mode wrap 19. */
static poprt_status cv_pad(cv *c, poprt__node *n)
{
    poprt_status st;
    const char *mode = poprt__attr_s(n, "mode", "constant");
    if (c->to < 19 && strcmp(mode, "wrap") == 0)
        return cv_fail(c, n, "mode 'wrap' needs opset 19");
    int32_t dt = elem_of(poprt__node_in(n, 0));
    if (c->from < 11 && c->to >= 11) {
        int64_t np;
        const int64_t *p = poprt__attr_ints(n, "pads", &np);
        if (!p)
            return cv_fail(c, n, "pads is required");
        poprt__tensor *tp = mk_i64(n, "pads", p, np, 1);
        if (!tp || (st = set_input(c, n, 1, tp)))
            return tp ? st : poprt__rw_oom();
        const poprt__attr *va = attr_get(n, "value");
        if (va && va->f != 0.0f) {
            double v = va->f;
            poprt__tensor *tv = mk_num(n, "value", dt ? dt : POPRT_DTYPE_FLOAT, &v, 1, 0);
            if (!tv || (st = set_input(c, n, 2, tv)))
                return tv ? st : poprt__rw_oom();
        }
        attr_del(c, n, "pads");
        attr_del(c, n, "value");
        return POPRT_OK;
    }
    if (c->from < 11 || !(c->to < 11 || (c->from >= 18 && c->to < 18)))
        return POPRT_OK;
    /* from an input form: read pads (and axes) */
    int64_t p[2 * MAXR], np, ax[MAXR], na = 0;
    if (!const_ints(poprt__node_in(n, 1), p, 2 * MAXR, &np))
        return cv_fail(c, n, "pads must be constant");
    if (poprt__node_in(n, 3)) {
        if (!const_ints(poprt__node_in(n, 3), ax, MAXR, &na))
            return cv_fail(c, n, "axes must be constant");
        int r = poprt__rw_rank(poprt__node_in(n, 0));
        if (r < 0)
            return cv_fail(c, n, "axes needs a known input rank");
        if (np != 2 * na)
            return cv_fail(c, n, "pads must have twice as many values as axes");
        int64_t full[2 * MAXR] = {0};
        for (int64_t i = 0; i < na; i++) {
            int64_t a;
            if (!poprt__norm_axis(ax[i], r, &a))
                return cv_fail(c, n, "axis %lld out of range", (long long)ax[i]);
            full[a] = p[i];
            full[a + r] = p[i + na];
        }
        memcpy(p, full, sizeof full);
        np = 2 * r;
    }
    if (c->to >= 11) {
        /* 18+ -> 11..17: pads over every axis, no axes input */
        poprt__tensor *tp = mk_i64(n, "pads", p, np, 1);
        if (!tp)
            return poprt__rw_oom();
        if ((st = drop_input(c, n, 3)) || (st = drop_input(c, n, 1)))
            return st;
        return set_input(c, n, 1, tp);
    }
    double v = 0;
    int64_t cnt;
    poprt__tensor *tv = poprt__node_in(n, 2);
    if (tv && (!const_f64(tv, &v, 1, &cnt) || cnt != 1))
        return cv_fail(c, n, "constant_value must be a constant scalar");
    if ((st = attr_set_ints(c, n, "pads", p, np)))
        return st;
    if (v != 0 && (st = attr_set_float(c, n, "value", (float)v)))
        return st;
    return set_n_inputs(c, n, 1);
}

/* TopK: k attribute before 10, input from 10; largest/sorted from 11. */
static poprt_status cv_topk(cv *c, poprt__node *n)
{
    poprt_status st;
    if (c->to < 11) {
        if (poprt__attr_i(n, "largest", 1) == 0)
            return cv_fail(c, n, "largest=0 needs opset 11");
        attr_del(c, n, "largest");
        attr_del(c, n, "sorted"); /* sorted output is a valid unsorted one */
    }
    if (!crosses(c, 10))
        return POPRT_OK;
    if (c->to >= 10) {
        int64_t k = poprt__attr_i(n, "k", -1);
        if (k < 0)
            return cv_fail(c, n, "k is required");
        poprt__tensor *t = mk_i64(n, "k", &k, 1, 1);
        if (!t)
            return poprt__rw_oom();
        attr_del(c, n, "k");
        return set_input(c, n, 1, t);
    }
    int64_t k, cnt;
    if (!const_ints(poprt__node_in(n, 1), &k, 1, &cnt) || cnt != 1)
        return cv_fail(c, n, "k must be a constant");
    if ((st = attr_set_int(c, n, "k", k)))
        return st;
    return set_n_inputs(c, n, 1);
}

/* Softmax, LogSoftmax, Hardmax: before 13 the input is coerced to 2-D at
 * `axis` (default 1); from 13 the op works along the single axis (default -1). */
static poprt_status cv_softmax(cv *c, poprt__node *n)
{
    if (!crosses(c, 13))
        return POPRT_OK;
    poprt__tensor *x = poprt__node_in(n, 0);
    int r = poprt__rw_rank(x);
    poprt_status st;
    if (c->to >= 13) {
        int64_t axis = poprt__attr_i(n, "axis", 1), a;
        if (r >= 0) {
            if (!poprt__norm_axis(axis, r, &a))
                return cv_fail(c, n, "axis %lld out of range", (long long)axis);
            int ones = 1; /* dims between axis and the last are all 1 */
            for (int d = (int)a; d < r - 1; d++)
                ones &= dim_of(x, d) == 1;
            if (ones)
                return attr_set_int(c, n, "axis", r - 1);
        }
        /* Flatten -> op(axis=1) -> Reshape back to the input's shape */
        poprt__node *fl = add_node(c, n, "Flatten", 1, 1);
        poprt__node *sh = add_node(c, n, "Shape", 1, 1);
        poprt__node *rs = add_node(c, n, "Reshape", 2, 1);
        if (!fl || !sh || !rs || (st = attr_set_int(c, fl, "axis", axis)))
            return fl && sh && rs ? st : poprt__rw_oom();
        poprt__node_set_input(fl, 0, x);
        poprt__node_set_input(sh, 0, x);
        poprt__node_set_input(n, 0, fl->outputs[0]);
        poprt__tensor *y = detach_output(c, n, 0);
        if (!y)
            return poprt__rw_oom();
        poprt__node_set_input(rs, 0, n->outputs[0]);
        poprt__node_set_input(rs, 1, sh->outputs[0]);
        rs->outputs[0] = y;
        return attr_set_int(c, n, "axis", 1);
    }
    int64_t axis = poprt__attr_i(n, "axis", -1), a;
    if (r < 0) {
        if (axis == -1 && c->to >= 11)
            return attr_set_int(c, n, "axis", -1); /* coerced at the last axis: the same */
        return cv_fail(c, n, "the input rank must be known");
    }
    if (!poprt__norm_axis(axis, r, &a))
        return cv_fail(c, n, "axis %lld out of range", (long long)axis);
    int ones = 1;
    for (int d = (int)a + 1; d < r; d++)
        ones &= dim_of(x, d) == 1;
    if (ones)
        return attr_set_int(c, n, "axis", a);
    /* move the axis last, apply, move it back */
    int64_t perm[MAXR], inv[MAXR];
    int k = 0;
    for (int d = 0; d < r; d++)
        if (d != a)
            perm[k++] = d;
    perm[k] = a;
    for (int d = 0; d < r; d++)
        inv[perm[d]] = d;
    poprt__node *t1 = add_node(c, n, "Transpose", 1, 1), *t2 = add_node(c, n, "Transpose", 1, 1);
    if (!t1 || !t2)
        return poprt__rw_oom();
    if ((st = attr_set_ints(c, t1, "perm", perm, r)) || (st = attr_set_ints(c, t2, "perm", inv, r)))
        return st;
    poprt__node_set_input(t1, 0, x);
    poprt__node_set_input(n, 0, t1->outputs[0]);
    poprt__tensor *y = detach_output(c, n, 0);
    if (!y)
        return poprt__rw_oom();
    poprt__node_set_input(t2, 0, n->outputs[0]);
    t2->outputs[0] = y;
    return attr_set_int(c, n, "axis", r - 1);
}

/* BatchNormalization: spatial (before 9), training_mode (14). */
static poprt_status cv_batchnorm(cv *c, poprt__node *n)
{
    if (c->from < 9 && c->to >= 9) {
        if (poprt__attr_i(n, "spatial", 1) != 1)
            return cv_fail(c, n, "spatial=0 has no equivalent from opset 9");
        attr_del(c, n, "spatial");
    }
    if (c->to < 14) {
        if (poprt__attr_i(n, "training_mode", 0) != 0)
            return cv_fail(c, n, "training_mode=1 needs opset 14");
        attr_del(c, n, "training_mode");
    }
    if (c->to >= 14 && n->n_outputs > 3) {
        for (int j = 3; j < n->n_outputs; j++)
            if (n->outputs[j] && poprt__tensor_use_count(n->graph, n->outputs[j]))
                return cv_fail(c, n, "the saved mean/variance outputs do not exist from opset 14");
        n->n_outputs = 3;
        c->changed = 1;
    }
    if (c->to >= 14 && n->n_outputs > 1) {
        /* running mean/var outputs exist only in training mode from 14 */
        for (int j = 1; j < n->n_outputs; j++)
            if (n->outputs[j] && poprt__tensor_use_count(n->graph, n->outputs[j]))
                return cv_fail(c, n, "the mean/variance outputs exist only in training mode");
        n->n_outputs = 1;
        c->changed = 1;
    }
    return POPRT_OK;
}

/* Dropout: ratio attribute before 12, ratio/training_mode inputs from 12;
 * the mask output is bool from 10. */
static poprt_status cv_dropout(cv *c, poprt__node *n)
{
    poprt_status st;
    if (crosses(c, 10) && n->n_outputs > 1 && n->outputs[1] &&
        poprt__tensor_use_count(n->graph, n->outputs[1]))
        return cv_fail(c, n, "the mask output changes type at opset 10");
    if (!crosses(c, 12))
        return POPRT_OK;
    if (c->to >= 12) {
        const poprt__attr *a = attr_get(n, "ratio");
        if (a) {
            double v = a->f;
            poprt__tensor *t = mk_num(n, "ratio", POPRT_DTYPE_FLOAT, &v, 1, 0);
            if (!t || (st = set_input(c, n, 1, t)))
                return t ? st : poprt__rw_oom();
            attr_del(c, n, "ratio");
        }
        return POPRT_OK;
    }
    poprt__tensor *tm = poprt__node_in(n, 2);
    if (tm) {
        cval v;
        if (!const_of(tm, &v) || v.numel != 1 || poprt__load_i64(v.data, v.dtype, 0) != 0)
            return cv_fail(c, n, "training_mode must be a constant false");
    }
    poprt__tensor *tr = poprt__node_in(n, 1);
    if (tr) {
        double v;
        int64_t cnt;
        if (!const_f64(tr, &v, 1, &cnt) || cnt != 1)
            return cv_fail(c, n, "ratio must be a constant scalar");
        if ((st = attr_set_float(c, n, "ratio", (float)v)))
            return st;
    }
    attr_del(c, n, "seed");
    return set_n_inputs(c, n, 1);
}

/* Gemm: C optional from 11. */
static poprt_status cv_gemm(cv *c, poprt__node *n)
{
    if (c->to >= 11 || poprt__node_in(n, 2))
        return POPRT_OK;
    int32_t dt = elem_of(poprt__node_in(n, 0));
    double z = 0;
    poprt__tensor *t = mk_num(n, "C", dt ? dt : POPRT_DTYPE_FLOAT, &z, 1, 1);
    return t ? set_input(c, n, 2, t) : poprt__rw_oom();
}

/* Scatter (9-10) <-> ScatterElements (11+); reduction (16, min/max 18). */
static poprt_status cv_scatter(cv *c, poprt__node *n)
{
    const char *red = poprt__attr_s(n, "reduction", "none");
    if (c->to < 18 && (strcmp(red, "min") == 0 || strcmp(red, "max") == 0))
        return cv_fail(c, n, "reduction '%s' needs opset 18", red);
    if (c->to < 16) {
        if (strcmp(red, "none") != 0)
            return cv_fail(c, n, "reduction '%s' needs opset 16", red);
        attr_del(c, n, "reduction");
    }
    if (op_is(n, "ScatterND"))
        return POPRT_OK;
    if (c->to >= 11 && op_is(n, "Scatter")) {
        n->op_type = "ScatterElements";
        c->changed = 1;
    } else if (c->to < 11 && op_is(n, "ScatterElements")) {
        if (c->to < 9)
            return cv_fail(c, n, "Scatter exists from opset 9");
        n->op_type = "Scatter";
        c->changed = 1;
    }
    return POPRT_OK;
}

/* Shape: start/end (15) -> Shape + Slice before 15. */
static poprt_status cv_shape(cv *c, poprt__node *n)
{
    if (c->to >= 15 || (!attr_get(n, "start") && !attr_get(n, "end")))
        return POPRT_OK;
    int64_t s = poprt__attr_i(n, "start", 0), e = poprt__attr_i(n, "end", INT64_MAX);
    attr_del(c, n, "start");
    attr_del(c, n, "end");
    if (s == 0 && e == INT64_MAX)
        return POPRT_OK;
    poprt__node *sl = add_node(c, n, "Slice", c->to >= 10 ? 3 : 1, 1);
    if (!sl)
        return poprt__rw_oom();
    poprt_status st;
    if (c->to >= 10) {
        poprt__tensor *ts = mk_i64(n, "start", &s, 1, 1), *te = mk_i64(n, "end", &e, 1, 1);
        if (!ts || !te)
            return poprt__rw_oom();
        poprt__node_set_input(sl, 1, ts);
        poprt__node_set_input(sl, 2, te);
    } else {
        int64_t zero = 0;
        if ((st = attr_set_ints(c, sl, "starts", &s, 1)) || (st = attr_set_ints(c, sl, "ends", &e, 1)) ||
            (st = attr_set_ints(c, sl, "axes", &zero, 1)))
            return st;
        if (s < 0 || e < 0)
            return cv_fail(c, n, "negative start/end need opset 10");
    }
    poprt__tensor *y = detach_output(c, n, 0);
    if (!y)
        return poprt__rw_oom();
    poprt__node_set_input(sl, 0, n->outputs[0]);
    sl->outputs[0] = y;
    return POPRT_OK;
}

/* Constant: value_* attributes (12) -> value tensor; sparse_value (11). */
static poprt_status cv_constant(cv *c, poprt__node *n)
{
    if (c->to >= 12 || n->n_attrs < 1)
        return POPRT_OK;
    poprt__attr *a = &n->attrs[0];
    if (strcmp(a->name, "sparse_value") == 0 && c->to < 11)
        return cv_fail(c, n, "sparse_value needs opset 11");
    if (strncmp(a->name, "value_", 6) != 0 || strcmp(a->name, "value_") == 0)
        return POPRT_OK;
    poprt__arena *ar = &c->m->arena;
    poprt__tensor *t = poprt__arena_alloc(ar, sizeof *t);
    if (!t)
        return poprt__rw_oom();
    t->name = "";
    t->id = -1;
    int64_t cnt = 1;
    int rank = 0;
    int32_t dt;
    const void *src;
    const char *nm = a->name + 6;
    if (!strcmp(nm, "int")) {
        dt = POPRT_DTYPE_INT64, src = &a->i;
    } else if (!strcmp(nm, "ints")) {
        dt = POPRT_DTYPE_INT64, src = a->ints, cnt = a->n, rank = 1;
    } else if (!strcmp(nm, "float")) {
        dt = POPRT_DTYPE_FLOAT, src = &a->f;
    } else if (!strcmp(nm, "floats")) {
        dt = POPRT_DTYPE_FLOAT, src = a->floats, cnt = a->n, rank = 1;
    } else if (!strcmp(nm, "string")) {
        dt = POPRT_DTYPE_STRING, src = &a->s;
    } else if (!strcmp(nm, "strings")) {
        dt = POPRT_DTYPE_STRING, src = a->strings, cnt = a->n, rank = 1;
    } else {
        return POPRT_OK;
    }
    size_t nb = (size_t)cnt * poprt__dtype_size((poprt_dtype)dt);
    poprt_status st = poprt__type_set_tensor(ar, &t->type, dt, rank, &cnt);
    poprt__tensor_set_data(t, poprt__arena_memdup(ar, src ? src : "", nb ? nb : 1));
    t->nbytes = nb;
    if (st || !t->raw)
        return poprt__rw_oom();
    /* the attribute itself becomes `value` (emptied in place: never NULL) */
    c->changed = 1;
    poprt__attr *v = poprt__node_add_attr(n, a->name, POPRT__ATTR_TENSOR);
    v->name = "value";
    v->t = t;
    return POPRT_OK;
}

/* Max/Average/Lp pooling: ceil_mode and dilations arrived later. */
static int all_ones(const poprt__node *n, const char *name)
{
    int64_t k;
    const int64_t *d = poprt__attr_ints(n, name, &k);
    for (int64_t i = 0; d && i < k; i++)
        if (d[i] != 1)
            return 0;
    return 1;
}

static poprt_status cv_pool(cv *c, poprt__node *n)
{
    int ceil_v = op_is(n, "LpPool") ? 18 : 10;
    int dil_v = op_is(n, "MaxPool") ? 10 : op_is(n, "AveragePool") ? 19 : 18;
    if (c->to < ceil_v) {
        if (poprt__attr_i(n, "ceil_mode", 0))
            return cv_fail(c, n, "ceil_mode=1 needs opset %d", ceil_v);
        attr_del(c, n, "ceil_mode");
    }
    if (c->to < dil_v) {
        if (!all_ones(n, "dilations"))
            return cv_fail(c, n, "dilations need opset %d", dil_v);
        attr_del(c, n, "dilations");
    }
    if (op_is(n, "MaxPool") && c->to < 8) {
        if (n->n_outputs > 1 && n->outputs[1] && poprt__tensor_use_count(n->graph, n->outputs[1]))
            return cv_fail(c, n, "the Indices output needs opset 8");
        if (n->n_outputs > 1)
            n->n_outputs = 1, c->changed = 1;
        attr_del(c, n, "storage_order");
    }
    return POPRT_OK;
}

/* An attribute that arrived at version v and must have its default value
 * (or be absent) below it. */
static poprt_status drop_new_attr(cv *c, poprt__node *n, const char *name, int v, int64_t dflt)
{
    if (c->to >= v || !attr_get(n, name))
        return POPRT_OK;
    if (poprt__attr_i(n, name, dflt) != dflt)
        return cv_fail(c, n, "%s=%lld needs opset %d", name,
                       (long long)poprt__attr_i(n, name, dflt), v);
    attr_del(c, n, name);
    return POPRT_OK;
}

static poprt_status drop_new_str_attr(cv *c, poprt__node *n, const char *name, int v,
                                      const char *dflt)
{
    if (c->to >= v || !attr_get(n, name))
        return POPRT_OK;
    const char *s = poprt__attr_s(n, name, dflt);
    if (strcmp(s, dflt) != 0)
        return cv_fail(c, n, "%s='%s' needs opset %d", name, s, v);
    attr_del(c, n, name);
    return POPRT_OK;
}

/* RoiAlign: coordinate_transformation_mode (16) defaults to half_pixel,
 * while RoiAlign-10 behaves as output_half_pixel. */
static poprt_status cv_roialign(cv *c, poprt__node *n)
{
    if (!crosses(c, 16))
        return POPRT_OK;
    if (c->to >= 16)
        return attr_set_str(c, n, "coordinate_transformation_mode", "output_half_pixel");
    const char *ct = poprt__attr_s(n, "coordinate_transformation_mode", "half_pixel");
    if (strcmp(ct, "output_half_pixel") != 0)
        return cv_fail(c, n, "coordinate_transformation_mode '%s' needs opset 16", ct);
    attr_del(c, n, "coordinate_transformation_mode");
    return POPRT_OK;
}

/* GridSample: modes renamed at 20 (bilinear -> linear, bicubic -> cubic). */
static poprt_status cv_gridsample(cv *c, poprt__node *n)
{
    if (!crosses(c, 20))
        return POPRT_OK;
    const char *m = poprt__attr_s(n, "mode", c->from >= 20 ? "linear" : "bilinear");
    if (c->to >= 20)
        return attr_set_str(c, n, "mode", !strcmp(m, "bilinear") ? "linear"
                                              : !strcmp(m, "bicubic") ? "cubic" : m);
    if (poprt__rw_rank(poprt__node_in(n, 0)) != 4)
        return cv_fail(c, n, "only 4-D inputs exist before opset 20");
    return attr_set_str(c, n, "mode", !strcmp(m, "linear") ? "bilinear"
                                          : !strcmp(m, "cubic") ? "bicubic" : m);
}

/* DFT: axis attribute (17, default 1) -> input (20, default -2). */
static poprt_status cv_dft(cv *c, poprt__node *n)
{
    if (!crosses(c, 20))
        return POPRT_OK;
    if (c->to >= 20) {
        int64_t axis = poprt__attr_i(n, "axis", 1);
        poprt__tensor *t = mk_i64(n, "axis", &axis, 1, 0);
        if (!t)
            return poprt__rw_oom();
        attr_del(c, n, "axis");
        return set_input(c, n, 2, t);
    }
    int64_t axis = -2, cnt;
    if (poprt__node_in(n, 2) && (!const_ints(n->inputs[2], &axis, 1, &cnt) || cnt != 1))
        return cv_fail(c, n, "axis must be a constant");
    poprt_status st = attr_set_int(c, n, "axis", axis);
    return st ? st : drop_input(c, n, 2);
}

/* GroupNormalization: scale/bias per group (18) or per channel (21). */
static poprt_status cv_groupnorm(cv *c, poprt__node *n)
{
    if (!crosses(c, 21))
        return POPRT_OK;
    int64_t g = poprt__attr_i(n, "num_groups", 0), ch = dim_of(poprt__node_in(n, 0), 1);
    if (g <= 0 || ch <= 0 || ch % g)
        return cv_fail(c, n, "the channel count must be known");
    for (int k = 1; k <= 2; k++) {
        poprt__tensor *t = poprt__node_in(n, k);
        cval v;
        if (!t || !const_of(t, &v) || !poprt__dtype_is_float(v.dtype))
            return cv_fail(c, n, "scale and bias must be constant");
        int64_t out_n = c->to >= 21 ? ch : g, per = ch / g;
        if (v.numel != (c->to >= 21 ? g : ch))
            return cv_fail(c, n, "scale/bias of '%s' has the wrong size", t->name);
        size_t es = poprt__dtype_size((poprt_dtype)v.dtype);
        unsigned char *buf = poprt__arena_alloc(&c->m->arena, (size_t)out_n * es);
        if (!buf)
            return poprt__rw_oom();
        for (int64_t i = 0; i < out_n; i++) {
            int64_t src = c->to >= 21 ? i / per : i * per;
            if (c->to < 21)
                for (int64_t j = 1; j < per; j++)
                    if (poprt__load_f64(v.data, v.dtype, src + j) !=
                        poprt__load_f64(v.data, v.dtype, src))
                        return cv_fail(c, n, "per-channel scale/bias that differ within a group");
            memcpy(buf + i * es, (const unsigned char *)v.data + src * es, es);
        }
        int64_t d[1] = {out_n};
        poprt__tensor *nt = poprt__graph_add_const(n->graph, base_of(n, k == 1 ? "scale" : "bias"),
                                                   v.dtype, 1, d, buf, (size_t)out_n * es);
        poprt_status st;
        if (!nt)
            return poprt__rw_oom();
        if ((st = drop_input(c, n, k)) || (st = set_input(c, n, k, nt)))
            return st;
    }
    return POPRT_OK;
}

/* Pow: the exponent may have its own type from 12. */
static poprt_status cv_pow(cv *c, poprt__node *n)
{
    if (c->to >= 12)
        return POPRT_OK;
    int32_t a = elem_of(poprt__node_in(n, 0)), b = elem_of(poprt__node_in(n, 1));
    if (!a || !b || a == b)
        return POPRT_OK;
    poprt__node *cast = add_node(c, n, "Cast", 1, 1);
    poprt_status st;
    if (!cast || (st = attr_set_int(c, cast, "to", a)))
        return cast ? st : poprt__rw_oom();
    poprt__node_set_input(cast, 0, n->inputs[1]);
    poprt__node_set_input(n, 1, cast->outputs[0]);
    return POPRT_OK;
}

/* Quantize/DequantizeLinear: per-axis (13), saturate (19), block_size and
 * output_dtype (21). */
static poprt_status cv_quant(cv *c, poprt__node *n)
{
    poprt_status st;
    if ((st = drop_new_attr(c, n, "block_size", 21, 0)))
        return st;
    if (c->to < 19)
        attr_del(c, n, "saturate"); /* only float8 saturates, and it needs 19 */
    if (c->to < 21 && attr_get(n, "output_dtype")) {
        int64_t od = poprt__attr_i(n, "output_dtype", 0);
        int32_t want = op_is(n, "QuantizeLinear")
                           ? (poprt__node_in(n, 2) ? elem_of(n->inputs[2]) : POPRT_DTYPE_UINT8)
                           : elem_of(poprt__node_in(n, 1));
        if (od && od != want)
            return cv_fail(c, n, "output_dtype needs opset %d", op_is(n, "QuantizeLinear") ? 21 : 23);
        attr_del(c, n, "output_dtype");
    }
    if (c->to < 13) {
        poprt__tensor *s = poprt__node_in(n, 1);
        if (s && poprt__type_numel(&s->type) != 1)
            return cv_fail(c, n, "per-axis scales need opset 13");
        attr_del(c, n, "axis");
    }
    return POPRT_OK;
}

/* Sum/Max/Min/Mean broadcast from 8: below, the inputs must have one shape. */
static poprt_status cv_variadic(cv *c, poprt__node *n)
{
    if (c->to >= 8)
        return POPRT_OK;
    const poprt__tensor *a = poprt__node_in(n, 0);
    for (int i = 1; i < n->n_inputs; i++) {
        const poprt__tensor *b = n->inputs[i];
        if (!b || !a || poprt__rw_rank(a) < 0 || poprt__rw_rank(a) != poprt__rw_rank(b))
            return cv_fail(c, n, "inputs must have one known shape (no broadcasting before 8)");
        for (int d = 0; d < a->type.rank; d++)
            if (dim_of(a, d) < 0 || dim_of(a, d) != dim_of(b, d))
                return cv_fail(c, n, "inputs must have one known shape (no broadcasting before 8)");
    }
    return POPRT_OK;
}

/* ---- Resize / Upsample ----------------------------------------------------------------------- */

/* Which scales a Resize-10 / Upsample node uses, read from a constant. */
static int scales_const(const poprt__tensor *t, double *s, int64_t *n)
{
    return t && const_f64(t, s, MAXR, n);
}

/* scales = sizes / input dims, for targets that take only scales. */
static poprt_status sizes_to_scales(cv *c, poprt__node *n, const poprt__tensor *sizes, double *s,
                                    int64_t *ns)
{
    int64_t sz[MAXR], k;
    const poprt__tensor *x = poprt__node_in(n, 0);
    if (!const_ints(sizes, sz, MAXR, &k) || k != poprt__rw_rank(x))
        return cv_fail(c, n, "sizes must be constant and cover every axis");
    for (int64_t d = 0; d < k; d++) {
        int64_t in = dim_of(x, (int)d);
        if (in <= 0)
            return cv_fail(c, n, "sizes need a known input shape");
        float f = (float)sz[d] / (float)in;
        while ((int64_t)floorf((float)in * f) < sz[d])
            f = nextafterf(f, INFINITY);
        s[d] = f;
    }
    *ns = k;
    return POPRT_OK;
}

static poprt_status cv_resize(cv *c, poprt__node *n)
{
    int ups = op_is(n, "Upsample");
    int src = ups ? 0 : c->from < 11 ? 1 : 2; /* 0 Upsample, 1 Resize-10, 2 Resize-11+ */
    int dst = c->to < 10 ? 0 : c->to < 11 ? 1 : 2;
    poprt_status st;
    const char *mode = poprt__attr_s(n, "mode", "nearest");
    int m = !strcmp(mode, "nearest") ? 0 : !strcmp(mode, "linear") || !strcmp(mode, "bilinear") ? 1
          : !strcmp(mode, "cubic") ? 2 : -1;
    if (m < 0)
        return cv_fail(c, n, "unknown mode '%s'", mode);
    if (src == 2 && dst == 2) {
        /* Resize-11+ to Resize-11+: attributes and optional inputs */
        const char *ct = poprt__attr_s(n, "coordinate_transformation_mode", "half_pixel");
        if (c->to >= 13 && !strcmp(ct, "tf_half_pixel_for_nn"))
            return cv_fail(c, n, "coordinate_transformation_mode 'tf_half_pixel_for_nn' was "
                                 "removed at opset 13");
        if (c->to < 19 && !strcmp(ct, "half_pixel_symmetric"))
            return cv_fail(c, n, "coordinate_transformation_mode 'half_pixel_symmetric' needs "
                                 "opset 19");
        if (c->to < 18) {
            if (poprt__attr_i(n, "antialias", 0) && m != 0) {
                double s[MAXR];
                int64_t ns;
                if (!scales_const(poprt__node_in(n, 2), s, &ns) || !ns)
                    return cv_fail(c, n, "antialias=1 needs opset 18");
                for (int64_t i = 0; i < ns; i++)
                    if (s[i] < 1)
                        return cv_fail(c, n, "antialias=1 when downsampling needs opset 18");
            }
            attr_del(c, n, "antialias");
            const char *kp = poprt__attr_s(n, "keep_aspect_ratio_policy", "stretch");
            if (strcmp(kp, "stretch") != 0 && poprt__node_in(n, 3))
                return cv_fail(c, n, "keep_aspect_ratio_policy '%s' needs opset 18", kp);
            attr_del(c, n, "keep_aspect_ratio_policy");
            int64_t na;
            const int64_t *ax = poprt__attr_ints(n, "axes", &na);
            if (ax) {
                /* expand roi/scales/sizes over every axis */
                int r = poprt__rw_rank(poprt__node_in(n, 0));
                if (r < 0)
                    return cv_fail(c, n, "axes need a known input rank");
                int64_t pos[MAXR];
                for (int d = 0; d < r; d++)
                    pos[d] = -1;
                for (int64_t i = 0; i < na; i++) {
                    int64_t a;
                    if (!poprt__norm_axis(ax[i], r, &a))
                        return cv_fail(c, n, "axis out of range");
                    pos[a] = i;
                }
                for (int k = 1; k <= 3; k++) {
                    poprt__tensor *t = poprt__node_in(n, k);
                    double v[2 * MAXR], full[2 * MAXR];
                    int64_t cnt;
                    if (!t || const_empty(t))
                        continue;
                    if (!const_f64(t, v, 2 * MAXR, &cnt))
                        return cv_fail(c, n, "axes need constant roi/scales/sizes");
                    for (int d = 0; d < r; d++) {
                        if (k == 1) {
                            full[d] = pos[d] < 0 ? 0 : v[pos[d]];
                            full[d + r] = pos[d] < 0 ? 1 : v[pos[d] + na];
                        } else if (k == 2) {
                            full[d] = pos[d] < 0 ? 1 : v[pos[d]];
                        } else {
                            full[d] = pos[d] < 0 ? (double)dim_of(n->inputs[0], d) : v[pos[d]];
                            if (full[d] < 0)
                                return cv_fail(c, n, "axes need a known input shape");
                        }
                    }
                    poprt__tensor *nt = mk_num(n, k == 1 ? "roi" : k == 2 ? "scales" : "sizes",
                                               elem_of(t), full, k == 1 ? 2 * r : r, 1);
                    if (!nt)
                        return poprt__rw_oom();
                    if ((st = drop_input(c, n, k)) || (st = set_input(c, n, k, nt)))
                        return st;
                }
                attr_del(c, n, "axes");
            }
        }
        if (c->to < 13) {
            /* roi and scales are required inputs before 13 (empty when unused) */
            for (int k = 1; k <= 2; k++)
                if (!poprt__node_in(n, k) && (k == 1 || poprt__node_in(n, 3))) {
                    int64_t zero = 0;
                    poprt__tensor *t = poprt__graph_add_const(n->graph, base_of(n, k == 1 ? "roi" : "scales"),
                                                              POPRT_DTYPE_FLOAT, 1, &zero, "", 0);
                    if (!t || (st = set_input(c, n, k, t)))
                        return t ? st : poprt__rw_oom();
                }
        }
        return POPRT_OK;
    }
    if (src == dst && src == 0) {
        /* Upsample-7/8 (scales attribute) <-> Upsample-9 (scales input) */
        if (!crosses(c, 9))
            return POPRT_OK;
        if (c->to >= 9) {
            int64_t cnt;
            const float *f = poprt__attr_floats(n, "scales", &cnt);
            double s[MAXR];
            if (!f || cnt > MAXR)
                return cv_fail(c, n, "scales is required");
            for (int64_t i = 0; i < cnt; i++)
                s[i] = f[i];
            poprt__tensor *t = mk_num(n, "scales", POPRT_DTYPE_FLOAT, s, cnt, 1);
            if (!t)
                return poprt__rw_oom();
            attr_del(c, n, "scales");
            return set_input(c, n, 1, t);
        }
        double s[MAXR];
        int64_t ns;
        if (!scales_const(poprt__node_in(n, 1), s, &ns))
            return cv_fail(c, n, "scales must be constant");
        if ((st = attr_set_floats(c, n, "scales", s, ns)))
            return st;
        return set_n_inputs(c, n, 1);
    }
    if (src == 1 && dst == 1)
        return POPRT_OK;

    /* Read the canonical description: mode m, coordinate mode, nearest
     * rounding, scales tensor (or constant values), sizes tensor. */
    const char *ct = "asymmetric", *nm = "floor";
    poprt__tensor *scales = NULL, *sizes = NULL;
    double sv[MAXR];
    int64_t nsv = -1; /* scales as constants, when known */
    if (src == 0) {
        int64_t cnt;
        const float *f = poprt__attr_floats(n, "scales", &cnt);
        if (f && cnt <= MAXR) {
            for (int64_t i = 0; i < cnt; i++)
                sv[i] = f[i];
            nsv = cnt;
        }
        scales = poprt__node_in(n, 1);
    } else if (src == 1) {
        scales = poprt__node_in(n, 1);
    } else {
        ct = poprt__attr_s(n, "coordinate_transformation_mode", "half_pixel");
        nm = poprt__attr_s(n, "nearest_mode", "round_prefer_floor");
        scales = poprt__node_in(n, 2);
        sizes = poprt__node_in(n, 3);
        if (scales && const_empty(scales))
            scales = NULL;
        if (sizes && const_empty(sizes))
            sizes = NULL;
        if (attr_get(n, "axes") || strcmp(poprt__attr_s(n, "keep_aspect_ratio_policy", "stretch"), "stretch"))
            return cv_fail(c, n, "axes / keep_aspect_ratio_policy need opset 18");
        if (m == 2 || !strcmp(ct, "tf_crop_and_resize"))
            return cv_fail(c, n, "%s has no equivalent before opset 11",
                           m == 2 ? "cubic mode" : "tf_crop_and_resize");
        if (strcmp(ct, "asymmetric") != 0)
            return cv_fail(c, n, "coordinate_transformation_mode '%s' has no equivalent before "
                                 "opset 11 (only 'asymmetric')", ct);
        if (poprt__attr_i(n, "antialias", 0) && m != 0)
            return cv_fail(c, n, "antialias=1 needs opset 18");
    }
    if (nsv < 0 && scales && scales_const(scales, sv, &nsv) && nsv == 0)
        nsv = -1;
    if (nsv < 0 && sizes) {
        if ((st = sizes_to_scales(c, n, sizes, sv, &nsv)))
            return st;
    }
    int up = 0, down = 0; /* some scale above / below 1 */
    for (int64_t i = 0; i < nsv; i++)
        up |= sv[i] > 1, down |= sv[i] < 1;

    if (dst == 2) {
        /* Upsample / Resize-10 -> Resize-11+ */
        if (m == 0) {
            if (src == 1 && nsv < 0)
                return cv_fail(c, n, "nearest rounding of Resize-10 depends on constant scales");
            if (src == 1 && up && down)
                return cv_fail(c, n, "nearest mode with scales above and below 1 has no "
                                     "equivalent from opset 11");
            nm = src == 1 && down ? "ceil" : "floor";
        }
        n->op_type = "Resize";
        if ((st = attr_set_str(c, n, "mode", m ? "linear" : "nearest")) ||
            (st = attr_set_str(c, n, "coordinate_transformation_mode", "asymmetric")) ||
            (m == 0 && (st = attr_set_str(c, n, "nearest_mode", nm))))
            return st;
        attr_del(c, n, "scales");
        poprt__tensor *ts = scales;
        if (!ts) {
            if (nsv < 0)
                return cv_fail(c, n, "scales are required");
            if (!(ts = mk_num(n, "scales", POPRT_DTYPE_FLOAT, sv, nsv, 1)))
                return poprt__rw_oom();
        }
        poprt__tensor *roi = NULL;
        if (c->to < 13) {
            int64_t zero = 0;
            if (!(roi = poprt__graph_add_const(n->graph, base_of(n, "roi"), POPRT_DTYPE_FLOAT, 1, &zero, "", 0)))
                return poprt__rw_oom();
        }
        if ((st = set_input(c, n, 2, ts)))
            return st;
        poprt__node_set_input(n, 1, roi);
        return POPRT_OK;
    }

    /* -> Upsample (7-9) or Resize-10 */
    if (nsv < 0 && !scales)
        return cv_fail(c, n, "scales are required");
    if (m == 2)
        return cv_fail(c, n, "cubic mode needs opset 11");
    if (m == 0) {
        /* Upsample rounds down; Resize-10 rounds down when upsampling and
         * up when downsampling */
        if (nsv < 0)
            return cv_fail(c, n, "nearest rounding needs constant scales");
        if (up && down)
            return cv_fail(c, n, "nearest mode with scales above and below 1");
        const char *need = src == 1 ? (down ? "ceil" : "floor") : src == 0 ? "floor" : nm;
        const char *have = dst == 1 ? (down ? "ceil" : "floor") : "floor";
        if (src == 2 && (up || down) && strcmp(nm, have) != 0)
            return cv_fail(c, n, "nearest_mode '%s' has no equivalent before opset 11", nm);
        if (src != 2 && strcmp(need, have) != 0)
            return cv_fail(c, n, "nearest rounding differs when downsampling");
    }
    if (dst == 0 && down)
        return cv_fail(c, n, "Upsample takes only scales >= 1");
    if (nsv < 0 && c->to < 9)
        return cv_fail(c, n, "scales must be constant");
    if (sizes || (src == 2 && !scales) || (src == 0 && !scales)) {
        if (!(scales = mk_num(n, "scales", POPRT_DTYPE_FLOAT, sv, nsv, 1)))
            return poprt__rw_oom();
    }
    /* attributes of the 11+ form do not exist before */
    static const char *const newer[] = {"coordinate_transformation_mode", "nearest_mode",
                                        "cubic_coeff_a", "exclude_outside",
                                        "extrapolation_value", "antialias", "axes",
                                        "keep_aspect_ratio_policy"};
    for (size_t k = 0; k < sizeof newer / sizeof newer[0]; k++)
        attr_del(c, n, newer[k]);
    n->op_type = dst == 0 ? "Upsample" : "Resize";
    if ((st = attr_set_str(c, n, "mode", m ? "linear" : "nearest")))
        return st;
    if (dst == 0 && c->to < 9) {
        if ((st = attr_set_floats(c, n, "scales", sv, nsv)))
            return st;
        return set_n_inputs(c, n, 1);
    }
    attr_del(c, n, "scales");
    if ((st = set_n_inputs(c, n, 1)))
        return st;
    return set_input(c, n, 1, scales);
}

/* ---- replaced and decomposed operators ------------------------------------------------------- */

/* HardSwish (14) = x * HardSigmoid(x; 1/6, 0.5); Mish (18) = x * tanh(softplus(x)). */
static poprt_status cv_decompose(cv *c, poprt__node *n)
{
    poprt__tensor *x = poprt__node_in(n, 0);
    poprt_status st;
    int hs = op_is(n, "HardSwish");
    poprt__node *a = add_node(c, n, hs ? "HardSigmoid" : "Softplus", 1, 1);
    poprt__node *b = hs ? NULL : add_node(c, n, "Tanh", 1, 1);
    if (!a || (!hs && !b))
        return poprt__rw_oom();
    poprt__node_set_input(a, 0, x);
    if (hs && ((st = attr_set_float(c, a, "alpha", 1.0f / 6)) || (st = attr_set_float(c, a, "beta", 0.5f))))
        return st;
    if (b)
        poprt__node_set_input(b, 0, a->outputs[0]);
    /* the node itself becomes the Mul, keeping its output */
    n->op_type = "Mul";
    n->n_attrs = 0;
    return set_input(c, n, 1, (b ? b : a)->outputs[0]);
}

/* GreaterOrEqual / LessOrEqual (12) = Or(Greater|Less, Equal). */
static poprt_status cv_or_equal(cv *c, poprt__node *n)
{
    int32_t dt = elem_of(poprt__node_in(n, 0));
    if (c->to < 11 && dt != POPRT_DTYPE_INT32 && dt != POPRT_DTYPE_INT64 && dt != POPRT_DTYPE_BOOL)
        return cv_fail(c, n, "Equal on %s needs opset 11", poprt__dtype_name((poprt_dtype)dt));
    poprt__node *cmp = add_node(c, n, op_is(n, "GreaterOrEqual") ? "Greater" : "Less", 2, 1);
    poprt__node *eq = add_node(c, n, "Equal", 2, 1);
    if (!cmp || !eq)
        return poprt__rw_oom();
    for (int i = 0; i < 2; i++) {
        poprt__node_set_input(cmp, i, n->inputs[i]);
        poprt__node_set_input(eq, i, n->inputs[i]);
    }
    n->op_type = "Or";
    poprt__node_set_input(n, 0, cmp->outputs[0]);
    poprt__node_set_input(n, 1, eq->outputs[0]);
    return POPRT_OK;
}

/* CastLike (15) = Cast to the second input's type. */
static poprt_status cv_castlike(cv *c, poprt__node *n)
{
    int32_t to = elem_of(poprt__node_in(n, 1));
    if (!to)
        return cv_fail(c, n, "the type of input 2 must be known");
    poprt_status st;
    if ((st = set_n_inputs(c, n, 1)))
        return st;
    n->op_type = "Cast";
    if (c->to < 19)
        attr_del(c, n, "saturate");
    return attr_set_int(c, n, "to", to);
}

/* A binary node a op b writing a new tensor (or `out`). */
static poprt__tensor *bin(cv *c, poprt__node *near, const char *op, poprt__tensor *a,
                          poprt__tensor *b, poprt__tensor *out)
{
    poprt__node *k = add_node(c, near, op, b ? 2 : 1, 1);
    if (!k || !a)
        return NULL;
    poprt__node_set_input(k, 0, a);
    if (b)
        poprt__node_set_input(k, 1, b);
    if (out)
        k->outputs[0] = out;
    return k->outputs[0];
}

/* Gelu (20): 0.5 x (1 + erf(x / sqrt 2)), or with approximate=tanh
 * 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
static poprt_status cv_gelu(cv *c, poprt__node *n)
{
    if (c->to < 9)
        return cv_fail(c, n, "Gelu needs Erf (opset 9)");
    poprt__tensor *x = poprt__node_in(n, 0);
    int32_t dt = elem_of(x);
    if (!dt)
        return cv_fail(c, n, "the input type must be known");
    int tanh_form = strcmp(poprt__attr_s(n, "approximate", "none"), "tanh") == 0;
    double v[5] = {0.5, 1.0, sqrt(2.0), 0.044715, sqrt(2.0 / 3.14159265358979323846)};
    poprt__tensor *k[5];
    for (int i = 0; i < 5; i++)
        if (!(k[i] = mk_num(n, "gelu_c", dt, &v[i], 1, 0)))
            return poprt__rw_oom();
    poprt__tensor *inner;
    if (tanh_form) {
        poprt__tensor *x2 = bin(c, n, "Mul", x, x, NULL);
        poprt__tensor *x3 = bin(c, n, "Mul", x2, x, NULL);
        poprt__tensor *t = bin(c, n, "Mul", x3, k[3], NULL);
        t = bin(c, n, "Add", x, t, NULL);
        t = bin(c, n, "Mul", t, k[4], NULL);
        inner = bin(c, n, "Tanh", t, NULL, NULL);
    } else {
        poprt__tensor *t = bin(c, n, "Div", x, k[2], NULL);
        inner = bin(c, n, "Erf", t, NULL, NULL);
    }
    poprt__tensor *t = bin(c, n, "Add", inner, k[1], NULL);
    t = bin(c, n, "Mul", x, t, NULL);
    if (!t)
        return poprt__rw_oom();
    /* the node itself becomes the last Mul, keeping its output */
    n->op_type = "Mul";
    n->n_attrs = 0;
    poprt__node_set_input(n, 0, t);
    return set_input(c, n, 1, k[0]);
}

/* ---- one node --------------------------------------------------------------------------------- */

static const char *const reduce_ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                         "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
                                         "ReduceLogSumExp", "ReduceSumSquare"};

static poprt_status convert_node(cv *c, poprt__node *n)
{
    poprt_status st = POPRT_OK;
    /* legacy attributes of opsets before 7 */
    if (c->from < 7) {
        attr_del(c, n, "consumed_inputs");
        attr_del(c, n, "is_test");
        if (attr_get(n, "broadcast")) {
            if (attr_get(n, "axis") && !op_is(n, "Concat") && !op_is(n, "Gather"))
                return cv_fail(c, n, "legacy broadcasting along an axis");
            attr_del(c, n, "broadcast");
        }
    }

    /* operators renamed, replaced or decomposed */
    if ((op_is(n, "Upsample") && c->to >= 10) || (op_is(n, "Resize") && c->to < 10))
        return (st = cv_resize(c, n)) ? st : check_types(c, n);
    if ((op_is(n, "Scatter") && c->to >= 11) || (op_is(n, "ScatterElements") && c->to < 11))
        if ((st = cv_scatter(c, n)))
            return st;
    int intro = intro_version(n->op_type);
    if (intro > c->to) {
        if ((op_is(n, "HardSwish") || op_is(n, "Mish")))
            return cv_decompose(c, n);
        if ((op_is(n, "GreaterOrEqual") || op_is(n, "LessOrEqual")))
            return cv_or_equal(c, n);
        if (op_is(n, "CastLike"))
            return (st = cv_castlike(c, n)) ? st : check_types(c, n);
        if (op_is(n, "Gelu"))
            return cv_gelu(c, n);
        return cv_fail(c, n, "%s exists only from opset %d", n->op_type, intro);
    }
    int rm = removed_version(n->op_type);
    if (rm && c->to >= rm)
        return cv_fail(c, n, "%s was removed at opset %d", n->op_type, rm);

    const char *op = n->op_type;
    if (!strcmp(op, "Reshape"))
        st = cv_reshape(c, n);
    else if (!strcmp(op, "Slice"))
        st = cv_slice(c, n);
    else if (!strcmp(op, "Split"))
        st = cv_split(c, n);
    else if (!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze"))
        st = cv_axes13(c, n, 13);
    else if (!strcmp(op, "Resize") || !strcmp(op, "Upsample"))
        st = cv_resize(c, n);
    else if (!strcmp(op, "Clip"))
        st = cv_clip(c, n);
    else if (!strcmp(op, "Pad"))
        st = cv_pad(c, n);
    else if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax") || !strcmp(op, "Hardmax"))
        st = cv_softmax(c, n);
    else if (!strcmp(op, "TopK"))
        st = cv_topk(c, n);
    else if (!strcmp(op, "BatchNormalization"))
        st = cv_batchnorm(c, n);
    else if (!strcmp(op, "Dropout"))
        st = cv_dropout(c, n);
    else if (!strcmp(op, "Gemm"))
        st = cv_gemm(c, n);
    else if (!strcmp(op, "Scatter") || !strcmp(op, "ScatterElements") || !strcmp(op, "ScatterND"))
        st = cv_scatter(c, n);
    else if (!strcmp(op, "Cast") && c->to < 19)
        attr_del(c, n, "saturate"); /* only float8 saturates, and it needs 19 */
    else if (!strcmp(op, "Shape"))
        st = cv_shape(c, n);
    else if (!strcmp(op, "Constant"))
        st = cv_constant(c, n);
    else if (!strcmp(op, "MaxPool") || !strcmp(op, "AveragePool") || !strcmp(op, "LpPool"))
        st = cv_pool(c, n);
    else if (!strcmp(op, "ArgMax") || !strcmp(op, "ArgMin"))
        st = drop_new_attr(c, n, "select_last_index", 12, 0);
    else if (!strcmp(op, "DepthToSpace"))
        st = drop_new_str_attr(c, n, "mode", 11, "DCR");
    else if (!strcmp(op, "RoiAlign"))
        st = cv_roialign(c, n);
    else if (!strcmp(op, "GridSample"))
        st = cv_gridsample(c, n);
    else if (!strcmp(op, "DFT"))
        st = cv_dft(c, n);
    else if (!strcmp(op, "GroupNormalization"))
        st = cv_groupnorm(c, n);
    else if (!strcmp(op, "RNN") || !strcmp(op, "GRU") || !strcmp(op, "LSTM"))
        st = drop_new_attr(c, n, "layout", 14, 0);
    else if (!strcmp(op, "Sum") || !strcmp(op, "Max") || !strcmp(op, "Min") || !strcmp(op, "Mean"))
        st = cv_variadic(c, n);
    else if (!strcmp(op, "Pow"))
        st = cv_pow(c, n);
    else if (!strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear"))
        st = cv_quant(c, n);
    else if (!strcmp(op, "GatherND"))
        st = drop_new_attr(c, n, "batch_dims", 12, 0);
    else if ((!strcmp(op, "OptionalHasElement") || !strcmp(op, "OptionalGetElement")) &&
             c->to < 18 &&
             (!poprt__node_in(n, 0) || n->inputs[0]->type.kind == POPRT__KIND_TENSOR))
        st = cv_fail(c, n, "a tensor or missing input needs opset 18");
    else if (!strcmp(op, "Scan") && crosses(c, 9))
        st = cv_fail(c, n, "Scan-8 (batched, with sequence_lens) and Scan-9 differ");
    else if (!strcmp(op, "Attention") && c->to < 24 && poprt__node_in(n, 6))
        st = cv_fail(c, n, "the nonpad_kv_seqlen input needs opset 24");
    else
        for (size_t k = 0; k < sizeof reduce_ops / sizeof reduce_ops[0]; k++)
            if (!strcmp(op, reduce_ops[k]))
                st = cv_reduce(c, n);
    if (!st)
        st = check_types(c, n);
    if (!st)
        st = normalize_axes(c, n);
    return st;
}

/* ---- graphs ----------------------------------------------------------------------------------- */

static poprt_status convert_graph(cv *c, poprt__graph *g);

static poprt_status convert_body(poprt__graph *body, void *c)
{
    return convert_graph(c, body);
}

static poprt_status convert_graph(cv *c, poprt__graph *g)
{
    size_t count = g->nodes.len; /* nodes added while converting are already in the target form */
    for (size_t i = 0; i < count; i++) {
        poprt__node *n = g->nodes.items[i];
        poprt_status st = poprt__rw_each_body(n, convert_body, c);
        if (st || (poprt__rw_onnx_domain(n->domain) && (st = convert_node(c, n))))
            return st;
    }
    return POPRT_OK;
}

/* Constants the conversion stopped reading (attributes now hold them). */
static void cleanup(cv *c)
{
    for (size_t i = 0; i < c->dropped.len; i++) {
        poprt__tensor *t = c->dropped.items[i];
        if (!t->graph || t->is_output || t->is_input || poprt__tensor_use_count(t->graph, t))
            continue;
        if (t->is_initializer)
            poprt__rw_remove_initializer(t->graph, t);
        else if (t->producer && op_is(t->producer, "Constant") && t->producer->graph == t->graph)
            poprt__graph_remove_node(t->graph, t->producer);
    }
}

/* Lowest IR version that may carry a given opset (onnx/helper.py's table). */
static int64_t ir_for_opset(int v)
{
    static const int ir[] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 4, 5, 6, 7, 7, 7, 8,
                             8, 8, 8, 9, 9, 10, 10, 11, 11, 11, 11, 11};
    return v < (int)(sizeof ir / sizeof ir[0]) ? ir[v] : 11;
}

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    static const char *const known[] = {"version", NULL};
    poprt__pass_args pa;
    poprt_status st = poprt__pass_args_parse("convert_version", args, known, &pa);
    int64_t to;
    if (st || (st = poprt__pass_arg_int("convert_version", &pa, "version", 11, &to)))
        return st;
    *changed = 0;
    if (to < CV_MIN || to > CV_MAX)
        return poprt__err(POPRT_STATUS_INVALID_OPTION,
                          "version %lld is outside %d..%d",
                          (long long)to, CV_MIN, CV_MAX);
    int from = (int)poprt__model_opset(m, "");
    int idx = -1;
    for (int i = 0; i < m->n_opsets; i++)
        if (poprt__rw_onnx_domain(m->opsets[i].domain))
            idx = i;
    if (idx < 0 || from == to)
        return POPRT_OK; /* no ai.onnx import: nothing to convert */
    cv c = {.m = m, .from = from, .to = (int)to};
    st = convert_graph(&c, m->graph);
    if (!st) {
        cleanup(&c);
        m->opsets[idx].version = to;
        /* initializers outside the inputs need IR 4; an IR 3 model's
         * initializers listed as inputs are weights there, but inputs a
         * caller may override from IR 4 on: they leave the inputs list */
        int64_t ir = ir_for_opset((int)to);
        if (m->ir_version < 4)
            (void)poprt__rw_drop_initializer_inputs(m);
        if (m->ir_version < ir || m->ir_version < 4)
            m->ir_version = ir < 4 ? 4 : ir;
        *changed = 1;
    }
    poprt__vec_free(&c.dropped);
    return st;
}

const poprt__pass poprt__pass_convert_version = {
    "convert_version",
    "convert the default-domain opset to version=N (default 11, 7..27), rewriting every operator "
    "whose signature changed; fails naming the node when one has no equivalent",
    run, 1};
