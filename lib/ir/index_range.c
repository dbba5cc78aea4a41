/* The values an integer tensor may hold without a node that reads it as an
 * index going out of range: what made-up inputs (poprt's --run, the
 * precision passes' random samples) must respect so that a BERT's token
 * type ids stay below the type vocabulary.
 *
 * The tensor's readers are followed: an index slot of Gather, GatherElements,
 * GatherND, ScatterElements or ScatterND bounds it by the data's dim on the
 * indexed axis; nodes that move values without changing them (Cast,
 * Identity, Reshape, Unsqueeze, Squeeze, Flatten, Expand, Transpose, Tile,
 * Slice, Concat, Split, Gather's data) pass their output's bounds back, and
 * Add / Sub of a constant integer scalar shift them. Everything else bounds
 * nothing. */
#include <stdint.h>
#include <string.h>
#include "ir/dtype.h"
#include "ir/ir.h"

#define MAX_DEPTH 24
#define MAX_STEPS 4096

typedef struct range {
    int64_t lo, hi;
    int steps; /* nodes visited, bounded so that a wide graph costs little */
} range;

static void clamp(range *r, int64_t lo, int64_t hi)
{
    if (lo > r->lo)
        r->lo = lo;
    if (hi < r->hi)
        r->hi = hi;
}

/* Dim `axis` (negative: from the end) of t, or -1 when unknown. */
static int64_t dim_of(const poprt__tensor *t, int64_t axis)
{
    if (!t || t->type.kind != POPRT__KIND_TENSOR || t->type.rank <= 0)
        return -1;
    if (axis < 0)
        axis += t->type.rank;
    if (axis < 0 || axis >= t->type.rank)
        return -1;
    return t->type.dims[axis].value;
}

/* An index into a dim of size d lies in [-d, d-1]. */
static void bound_by_dim(range *r, int64_t d)
{
    if (d >= 0)
        clamp(r, -d, d - 1);
}

/* The value of a constant integer scalar (or one-element tensor). */
static int const_int(const poprt__tensor *t, int64_t *v)
{
    if (!t || !t->raw || !poprt__dtype_is_int(t->type.elem) || poprt__type_numel(&t->type) != 1)
        return 0;
    *v = poprt__load_i64(poprt__tensor_data(t), t->type.elem, 0);
    return 1;
}

static int passes_values(const char *op, int slot)
{
    static const char *const any_slot[] = {"Cast", "Identity", "Unsqueeze", "Squeeze", "Flatten",
                                           "Transpose", "Concat", NULL};
    static const char *const data_slot[] = {"Reshape", "Expand", "Tile", "Slice", "Split",
                                            "Gather", "GatherElements", "GatherND", NULL};
    for (int i = 0; any_slot[i]; i++)
        if (!strcmp(op, any_slot[i]))
            return 1;
    for (int i = 0; data_slot[i]; i++)
        if (!strcmp(op, data_slot[i]))
            return slot == 0;
    return 0;
}

static void follow(const poprt__tensor *t, int depth, range *r);

/* What reading t at slot of n says about t's values. */
static void use(const poprt__node *n, int slot, int depth, range *r)
{
    const char *op = n->op_type;
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx") != 0)
        return;
    if (!strcmp(op, "Gather") && slot == 1) {
        bound_by_dim(r, dim_of(poprt__node_in(n, 0), poprt__attr_i(n, "axis", 0)));
        return;
    }
    if ((!strcmp(op, "GatherElements") && slot == 1) ||
        (!strcmp(op, "ScatterElements") && slot == 1)) {
        bound_by_dim(r, dim_of(poprt__node_in(n, 0), poprt__attr_i(n, "axis", 0)));
        return;
    }
    if ((!strcmp(op, "GatherND") || !strcmp(op, "ScatterND")) && slot == 1) {
        /* index component j addresses data dim batch_dims + j: the
         * smallest of those dims bounds them all */
        const poprt__tensor *data = poprt__node_in(n, 0), *idx = poprt__node_in(n, 1);
        int64_t k = dim_of(idx, -1), b = poprt__attr_i(n, "batch_dims", 0);
        if (k <= 0 || b < 0)
            return;
        int64_t smallest = -1;
        for (int64_t j = 0; j < k; j++) {
            int64_t d = dim_of(data, b + j);
            if (d < 0)
                return;
            smallest = smallest < 0 || d < smallest ? d : smallest;
        }
        bound_by_dim(r, smallest);
        return;
    }
    if (passes_values(op, slot)) {
        for (int k = 0; k < n->n_outputs; k++)
            follow(poprt__node_out(n, k), depth + 1, r);
        return;
    }
    int64_t c;
    if ((!strcmp(op, "Add") || !strcmp(op, "Sub")) && n->n_inputs == 2 && n->outputs[0] &&
        const_int(poprt__node_in(n, 1 - slot), &c) && c > -(INT64_C(1) << 40) &&
        c < (INT64_C(1) << 40)) {
        /* out = t + c (Add, either order; Sub with t first) or c - t */
        range o = {INT64_MIN, INT64_MAX, r->steps};
        follow(n->outputs[0], depth + 1, &o);
        r->steps = o.steps;
        int bounded_lo = o.lo > INT64_MIN / 2, bounded_hi = o.hi < INT64_MAX / 2;
        if (!strcmp(op, "Add") || slot == 0) {
            int64_t shift = !strcmp(op, "Add") ? -c : c;
            clamp(r, bounded_lo ? o.lo + shift : INT64_MIN, bounded_hi ? o.hi + shift : INT64_MAX);
        } else {
            clamp(r, bounded_hi ? c - o.hi : INT64_MIN, bounded_lo ? c - o.lo : INT64_MAX);
        }
    }
}

static void follow(const poprt__tensor *t, int depth, range *r)
{
    if (!t || depth > MAX_DEPTH)
        return;
    for (const poprt__use *u = t->uses; u && r->steps < MAX_STEPS; u = u->next) {
        r->steps++;
        if (u->node && !u->node->removed)
            use(u->node, u->slot, depth, r);
    }
}

void poprt__index_range(const poprt__tensor *t, int64_t *lo, int64_t *hi)
{
    range r = {INT64_MIN, INT64_MAX, 0};
    follow(t, 0, &r);
    *lo = r.lo;
    *hi = r.hi;
}
