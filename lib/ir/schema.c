/* Schema lookup and the checks of a node against its schema: attributes
 * (names, types, required) and value types (type constraints and their
 * bindings). */
#include <stdio.h>
#include <string.h>
#include "ir/op.h"
#include "ir/schema.h"

static const char *norm_domain(const char *d) { return !d || strcmp(d, "ai.onnx") == 0 ? "" : d; }

static int cmp_key(const poprt__schema *s, const char *domain, const char *op)
{
    int c = strcmp(s->domain, domain);
    return c ? c : strcmp(s->name, op);
}

const poprt__schema *poprt__schema_find(const char *domain, const char *op_type, int64_t opset)
{
    domain = norm_domain(domain);
    /* first entry not before (domain, op) */
    size_t lo = 0, hi = poprt__n_schemas;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cmp_key(&poprt__schemas[mid], domain, op_type) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const poprt__schema *best = NULL;
    for (size_t i = lo; i < poprt__n_schemas && cmp_key(&poprt__schemas[i], domain, op_type) == 0;
         i++)
        if (poprt__schemas[i].since <= opset)
            best = &poprt__schemas[i];
    return best;
}

/* The node's schema at opset: the one poprt__graph_resolve recorded when it
 * was resolved at that opset, else looked up. */
static const poprt__schema *schema_of(const poprt__node *n, int opset)
{
    if (n->schema && n->opset == opset && strcmp(n->schema->name, n->op_type) == 0)
        return n->schema;
    return poprt__schema_find(n->domain, n->op_type, opset);
}

static const char *attr_type_name(int t)
{
    static const char *const names[] = {
        "undefined", "float",  "int",     "string",  "tensor",        "graph",
        "floats",    "ints",   "strings", "tensors", "graphs",        "sparse_tensor",
        "sparse_tensors",      "type_proto",         "type_protos"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

static const poprt__attr_decl *find_decl(const poprt__schema *s, const char *name)
{
    for (int i = 0; i < s->n_attrs; i++)
        if (strcmp(s->attrs[i].name, name) == 0)
            return &s->attrs[i];
    return NULL;
}

/* "a, b and c" of the schema's attribute names, for messages. */
static const char *attr_names(const poprt__schema *s, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < s->n_attrs && len < size; i++) {
        int n = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", s->attrs[i].name);
        if (n < 0)
            break;
        len += (size_t)n;
    }
    return s->n_attrs ? buf : "none";
}

poprt_status poprt__schema_check_attrs(const poprt__node *n)
{
    for (int i = 0; i < n->n_attrs; i++)
        for (int j = 0; j < i; j++)
            if (strcmp(n->attrs[i].name, n->attrs[j].name) == 0)
                return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                       "attribute '%s' is given twice", n->attrs[i].name);
    const poprt__schema *s = schema_of(n, n->opset);
    if (!s)
        return POPRT_OK;
    for (int i = 0; i < n->n_attrs; i++) {
        const poprt__attr *a = &n->attrs[i];
        const poprt__attr_decl *d = find_decl(s, a->name);
        if (!d) {
            char names[512];
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "unknown attribute '%s' (%s-%d takes: %s)", a->name,
                                   s->name, s->since, attr_names(s, names, sizeof names));
        }
        /* a reference to a function's attribute takes its type when inlined */
        if (a->ref_attr_name)
            continue;
        if (a->type != d->type)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "attribute '%s' is of type %s; %s-%d takes %s", a->name,
                                   attr_type_name(a->type), s->name, s->since,
                                   attr_type_name(d->type));
    }
    for (int i = 0; i < s->n_attrs; i++)
        if (s->attrs[i].required && !poprt__node_attr(n, s->attrs[i].name))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "required attribute '%s' (%s) is missing", s->attrs[i].name,
                                   attr_type_name(s->attrs[i].type));
    return POPRT_OK;
}

/* The typeset slot and element type of t, or 0 when not known enough. */
static int classify(const poprt__type *t, int *slot, int32_t *elem)
{
    const poprt__type *in = t->inner;
    switch (t->kind) {
    case POPRT__KIND_TENSOR:
    case POPRT__KIND_SPARSE:
        *slot = POPRT__TS_TENSOR;
        *elem = t->elem;
        break;
    case POPRT__KIND_SEQUENCE:
        if (!in)
            return 0;
        if (in->kind == POPRT__KIND_TENSOR) {
            *slot = POPRT__TS_SEQ;
            *elem = in->elem;
        } else if (in->kind == POPRT__KIND_MAP && in->inner) {
            if (in->elem != POPRT_DTYPE_STRING && in->elem != POPRT_DTYPE_INT64)
                return -1;
            *slot = in->elem == POPRT_DTYPE_STRING ? POPRT__TS_SEQ_MAP_STR : POPRT__TS_SEQ_MAP_I64;
            *elem = in->inner->elem;
        } else
            return in->kind == POPRT__KIND_UNKNOWN ? 0 : -1;
        break;
    case POPRT__KIND_OPTIONAL:
        if (!in)
            return 0;
        if (in->kind == POPRT__KIND_TENSOR) {
            *slot = POPRT__TS_OPT_TENSOR;
            *elem = in->elem;
        } else if (in->kind == POPRT__KIND_SEQUENCE && in->inner &&
                   in->inner->kind == POPRT__KIND_TENSOR) {
            *slot = POPRT__TS_OPT_SEQ;
            *elem = in->inner->elem;
        } else
            return in->kind == POPRT__KIND_UNKNOWN ||
                           (in->kind == POPRT__KIND_SEQUENCE &&
                            (!in->inner || in->inner->kind == POPRT__KIND_UNKNOWN))
                       ? 0
                       : -1;
        break;
    case POPRT__KIND_MAP:
        if (!in)
            return 0;
        if (t->elem != POPRT_DTYPE_STRING && t->elem != POPRT_DTYPE_INT64)
            return -1;
        *slot = t->elem == POPRT_DTYPE_STRING ? POPRT__TS_MAP_STR : POPRT__TS_MAP_I64;
        *elem = in->elem;
        break;
    default:
        return 0;
    }
    if (*elem == 0)
        return 0;
    return *elem > 0 && *elem < 32 ? 1 : -1;
}

static const char *const slot_fmt[8] = {"tensor(%s)", "seq(tensor(%s))", "optional(tensor(%s))",
                                        "optional(seq(tensor(%s)))", "map(string,%s)",
                                        "map(int64,%s)", "seq(map(string,%s))",
                                        "seq(map(int64,%s))"};

static const char *slot_str(int slot, int32_t elem, char *buf, size_t size)
{
    snprintf(buf, size, slot_fmt[slot], poprt__dtype_name((poprt_dtype)elem));
    return buf;
}

const char *poprt__type_spelling(const poprt__type *t, char *buf, size_t size)
{
    int slot = 0;
    int32_t elem = 0;
    if (classify(t, &slot, &elem) <= 0) {
        snprintf(buf, size, "%s",
                 t->kind == POPRT__KIND_TENSOR ? "tensor(undefined)" : "a value of unknown type");
        return buf;
    }
    return slot_str(slot, elem, buf, size);
}

/* The members of a typeset, abbreviated after a few, for messages. */
static const char *set_str(const poprt__typeset *ts, char *buf, size_t size)
{
    size_t len = 0;
    int shown = 0, total = 0;
    buf[0] = 0;
    for (int s = 0; s < 8; s++)
        for (int e = 1; e < 32; e++) {
            if (!(ts->m[s] >> e & 1))
                continue;
            if (++total > 6)
                continue;
            char one[64];
            int k = snprintf(buf + len, size - len, "%s%s", shown ? ", " : "",
                             slot_str(s, e, one, sizeof one));
            if (k < 0 || (size_t)k >= size - len)
                return buf;
            len += (size_t)k;
            shown++;
        }
    if (total > shown)
        snprintf(buf + len, size - len, " and %d more", total - shown);
    return buf;
}

typedef struct binding {
    int slot;
    int32_t elem;
    int is_output, index; /* who bound it */
} binding;

static poprt_status check_one(const poprt__node *n, const poprt__schema *s, binding *bound,
                              int is_output, int i, const poprt__type *t)
{
    const int nf = is_output ? s->n_out : s->n_in;
    const poprt__formal *fs = is_output ? s->out : s->in;
    const char *what = is_output ? "output" : "input";
    const poprt__tensor *v = is_output ? poprt__node_out(n, i) : poprt__node_in(n, i);
    const char *vname = v ? v->name : "";
    if (nf == 0 || (i >= nf && fs[nf - 1].how != POPRT__FORMAL_VARIADIC &&
                    fs[nf - 1].how != POPRT__FORMAL_HETERO))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "has %s %d '%s', but %s-%d has only %d %ss", what, i, vname,
                               s->name, s->since, nf, what);
    const poprt__formal *f = &fs[i < nf ? i : nf - 1];
    if (!t)
        return POPRT_OK;
    int slot = 0;
    int32_t elem = 0;
    int known = classify(t, &slot, &elem);
    char have[96], want[600];
    if (known < 0)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "%s %d (%s) '%s' has a type %s-%d does not take", what, i, f->name,
                               vname, s->name, s->since);
    if (!known)
        return POPRT_OK;
    const poprt__typeset *ts = &poprt__typesets[s->params[f->param]];
    /* an optional that holds a value is that value at run time (and a Loop
     * may carry an optional in and its value out) */
    if (!(ts->m[slot] >> elem & 1) && (slot == POPRT__TS_TENSOR || slot == POPRT__TS_SEQ) &&
        (ts->m[slot + 2] >> elem & 1))
        slot += 2;
    if (!(ts->m[slot] >> elem & 1))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "%s %d (%s) '%s' is %s; %s-%d takes %s",
                               what, i, f->name, vname, slot_str(slot, elem, have, sizeof have),
                               s->name, s->since, set_str(ts, want, sizeof want));
    if (f->how == POPRT__FORMAL_HETERO)
        return POPRT_OK;
    binding *b = &bound[f->param];
    if (b->elem == 0) {
        *b = (binding){slot, elem, is_output, i};
        return POPRT_OK;
    }
    if (b->slot != slot || b->elem != elem) {
        const poprt__tensor *bv = b->is_output ? poprt__node_out(n, b->index)
                                               : poprt__node_in(n, b->index);
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "%s %d (%s) '%s' is %s, but %s %d '%s' is %s: both must have the "
                               "same type",
                               what, i, f->name, vname, slot_str(slot, elem, have, sizeof have),
                               b->is_output ? "output" : "input", b->index, bv ? bv->name : "",
                               slot_str(b->slot, b->elem, want, sizeof want));
    }
    return POPRT_OK;
}

poprt_status poprt__schema_check_types(const poprt__infer_ctx *c, int outputs)
{
    const poprt__node *n = c->node;
    const poprt__schema *s = schema_of(n, c->opset);
    if (!s)
        return POPRT_OK;
    binding bound[256];
    memset(bound, 0, (size_t)s->n_params * sizeof *bound);
    for (int i = 0; i < c->n_in; i++) {
        if (!poprt__node_in(n, i) && i < s->n_in && s->in[i].how == POPRT__FORMAL_SINGLE)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "input %d (%s) is required but omitted", i, s->in[i].name);
        poprt_status st = check_one(n, s, bound, 0, i, c->in[i].type);
        if (st)
            return st;
    }
    for (int j = 0; outputs && j < c->n_out; j++) {
        poprt_status st = check_one(n, s, bound, 1, j, &c->out[j]);
        if (st)
            return st;
    }
    return POPRT_OK;
}
