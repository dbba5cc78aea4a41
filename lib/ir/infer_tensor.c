/* Operator family 'tensor': schemas and shape/type inference for data
 * movement, indexing, padding and resizing ops. Shapes that depend on input
 * values (Reshape's shape, Slice's starts, Pad's pads, ...) are exact when
 * the values are known (constants at IR level, real data at run time) and
 * unknown dims otherwise. */
#include <math.h>
#include <string.h>
#include "ir/op.h"
#include "ir/dtype.h"
#include "ir/geom.h"

#define MAXR POPRT__MAX_RANK

/* ---- helpers ----------------------------------------------------------------- */

static int present(const poprt__infer_ctx *c, int i) { return i < c->n_in && c->in[i].type; }

/* Tensor type of input i, or NULL when absent or not a tensor. */
static const poprt__type *tin(const poprt__infer_ctx *c, int i)
{
    if (!present(c, i) || c->in[i].type->kind != POPRT__KIND_TENSOR)
        return NULL;
    return c->in[i].type;
}

static int rank_of(const poprt__infer_ctx *c, int i)
{
    const poprt__type *t = tin(c, i);
    return t ? t->rank : -1;
}

static poprt__dim mkdim(int64_t v)
{
    poprt__dim d = {v < 0 ? -1 : v, NULL};
    return d;
}

static poprt__dim unknown_dim(void) { return mkdim(-1); }

static poprt_status bad(const poprt__infer_ctx *c, const char *msg)
{
    return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "%s", msg);
}

static poprt_status too_big(const poprt__infer_ctx *c, int rank)
{
    return POPRT__NODE_ERR(c->node, POPRT_STATUS_UNSUPPORTED, "rank %d exceeds the maximum %d",
                           rank, MAXR);
}

/* Integer list from input i when present (1 known, 0 unknown value) or
 * else from attribute `name` (1), or -1 when neither exists. */
static int ints_in_or_attr(poprt__infer_ctx *c, int i, const char *name, int64_t **v, int64_t *n)
{
    if (present(c, i))
        return poprt__infer_input_ints(c, i, v, n) ? 1 : 0;
    const int64_t *a = poprt__attr_ints(c->node, name, n);
    if (!a)
        return -1;
    *v = poprt__arena_memdup(c->arena, a, (size_t)(*n ? *n : 1) * sizeof(int64_t));
    return *v ? 1 : 0;
}

/* First value of input i as double when known. */
static int in_f64(const poprt__infer_ctx *c, int i, double *out)
{
    const poprt__type *t = tin(c, i);
    if (!t || !poprt__ival_data(&c->in[i]) || poprt__type_numel(t) < 1 || t->elem == POPRT_DTYPE_STRING)
        return 0;
    *out = poprt__load_f64(poprt__ival_data(&c->in[i]), t->elem, 0);
    return 1;
}

/* Number of values a 1-D input holds when its length is known, else -1. */
static int64_t in_len(const poprt__infer_ctx *c, int i)
{
    const poprt__type *t = tin(c, i);
    if (!t || t->rank != 1)
        return t && t->rank == 0 ? 1 : -1;
    return t->dims[0].value;
}

/* Product of dims [lo, hi) of t, or -1 when any is unknown. */
static int64_t dims_prod(const poprt__type *t, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++) {
        if (t->dims[i].value < 0)
            return -1;
        p *= t->dims[i].value;
    }
    return p;
}

static poprt_status same_as_input(poprt__infer_ctx *c)
{
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

/* ---- Reshape family ---------------------------------------------------------------- */

static poprt_status infer_reshape(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    int64_t *shape, n;
    int known = ints_in_or_attr(c, 1, "shape", &shape, &n);
    if (known < 0)
        return bad(c, "missing shape");
    if (!known) {
        int64_t len = in_len(c, 1);
        if (len < 0)
            poprt__infer_unknown(c, 0, elem);
        else if (len > MAXR)
            return too_big(c, (int)len);
        else
            poprt__infer_set(c, 0, elem, (int)len, NULL);
        return POPRT_OK;
    }
    if (n > MAXR)
        return too_big(c, (int)n);
    const poprt__type *x = tin(c, 0);
    int xr = x ? x->rank : -1;
    int allowzero = poprt__attr_i(c->node, "allowzero", 0) != 0;
    poprt__dim d[MAXR];
    int neg = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = shape[i];
        if (v == 0 && !allowzero) {
            if (xr >= 0 && i >= xr)
                return bad(c, "shape has 0 beyond the input rank");
            d[i] = xr >= 0 ? x->dims[i] : unknown_dim();
        } else if (v == -1) {
            if (neg >= 0)
                return bad(c, "shape has more than one -1");
            neg = (int)i;
            d[i] = unknown_dim();
        } else if (v < 0) {
            return bad(c, "shape has a negative value other than -1");
        } else {
            d[i] = mkdim(v);
        }
    }
    int64_t total = x && xr >= 0 ? dims_prod(x, 0, xr) : -1;
    int64_t known_prod = 1;
    int all = 1, ovf = 0;
    for (int64_t i = 0; i < n; i++) {
        if (i == neg)
            continue;
        if (d[i].value < 0)
            all = 0;
        else
            known_prod = poprt__dmul(known_prod, d[i].value, &ovf);
    }
    if (ovf)
        return poprt__infer_overflow(c, "the shape's element count");
    if (neg >= 0 && all && total >= 0) {
        if (known_prod == 0 ? total != 0 : total % known_prod != 0)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "cannot reshape %lld elements with -1",
                                   (long long)total);
        d[neg] = mkdim(known_prod ? total / known_prod : 0);
    } else if (neg < 0 && all && total >= 0 && total != known_prod) {
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "cannot reshape %lld elements into %lld", (long long)total,
                               (long long)known_prod);
    }
    poprt__infer_set(c, 0, elem, (int)n, d);
    return POPRT_OK;
}

static poprt_status infer_flatten(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int64_t axis = poprt__attr_i(c->node, "axis", 1);
    if (!x || x->rank < 0) {
        poprt__infer_set(c, 0, elem, 2, NULL);
        return POPRT_OK;
    }
    int r = x->rank;
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis > r)
        return bad(c, "axis out of range");
    poprt__dim d[2] = {mkdim(dims_prod(x, 0, (int)axis)), mkdim(dims_prod(x, (int)axis, r))};
    poprt__infer_set(c, 0, elem, 2, d);
    return POPRT_OK;
}

static poprt_status infer_squeeze(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int64_t *axes, n;
    int known = ints_in_or_attr(c, 1, "axes", &axes, &n);
    if (!x || x->rank < 0 || known == 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int r = x->rank;
    int drop[MAXR] = {0};
    if (known > 0) {
        for (int64_t i = 0; i < n; i++) {
            int64_t a;
            if (!poprt__norm_axis(axes[i], r, &a))
                return bad(c, "axis out of range");
            if (x->dims[a].value >= 0 && x->dims[a].value != 1)
                return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                       "cannot squeeze axis %lld of size %lld", (long long)a,
                                       (long long)x->dims[a].value);
            drop[a] = 1;
        }
    } else {
        for (int a = 0; a < r; a++) {
            if (x->dims[a].value < 0) {
                poprt__infer_unknown(c, 0, elem);
                return POPRT_OK;
            }
            drop[a] = x->dims[a].value == 1;
        }
    }
    poprt__dim d[MAXR];
    int o = 0;
    for (int a = 0; a < r; a++)
        if (!drop[a])
            d[o++] = x->dims[a];
    poprt__infer_set(c, 0, elem, o, d);
    return POPRT_OK;
}

static poprt_status infer_unsqueeze(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int64_t *axes, n;
    int known = ints_in_or_attr(c, 1, "axes", &axes, &n);
    if (known < 0)
        return bad(c, "missing axes");
    if (!x || x->rank < 0 || known == 0) {
        int64_t len = known ? n : in_len(c, 1);
        if (x && x->rank >= 0 && len >= 0 && x->rank + len <= MAXR)
            poprt__infer_set(c, 0, elem, x->rank + (int)len, NULL);
        else
            poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int orank = x->rank + (int)n;
    if (orank > MAXR)
        return too_big(c, orank);
    int ins[MAXR] = {0};
    for (int64_t i = 0; i < n; i++) {
        int64_t a;
        if (!poprt__norm_axis(axes[i], orank, &a) || ins[a])
            return bad(c, "axes out of range or repeated");
        ins[a] = 1;
    }
    poprt__dim d[MAXR];
    int j = 0;
    for (int a = 0; a < orank; a++)
        d[a] = ins[a] ? mkdim(1) : x->dims[j++];
    poprt__infer_set(c, 0, elem, orank, d);
    return POPRT_OK;
}

/* ---- Transpose / Concat / Split / Slice ---------------------------------------------- */

static poprt_status infer_transpose(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int64_t n;
    const int64_t *perm = poprt__attr_ints(c->node, "perm", &n);
    if (!x || x->rank < 0) {
        if (perm && n <= MAXR)
            poprt__infer_set(c, 0, elem, (int)n, NULL);
        else
            poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int r = x->rank;
    if (perm && n != r)
        return bad(c, "perm length differs from the input rank");
    int seen[MAXR] = {0};
    poprt__dim d[MAXR];
    for (int i = 0; i < r; i++) {
        int64_t p = perm ? perm[i] : r - 1 - i;
        if (p < 0)
            p += r;
        if (p < 0 || p >= r || seen[p])
            return bad(c, "perm is not a permutation");
        seen[p] = 1;
        d[i] = x->dims[p];
    }
    poprt__infer_set(c, 0, elem, r, d);
    return POPRT_OK;
}

static poprt_status infer_concat(poprt__infer_ctx *c)
{
    int32_t elem = 0;
    int r = -1;
    for (int i = 0; i < c->n_in; i++) {
        if (!elem)
            elem = poprt__infer_elem(c, i);
        if (r < 0)
            r = rank_of(c, i);
    }
    if (r < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(c->node, "axis", 1), r, &axis))
        return bad(c, "axis out of range");
    poprt__dim d[MAXR];
    for (int a = 0; a < r; a++)
        d[a] = unknown_dim();
    int64_t sum = 0;
    int sum_known = 1, ovf = 0;
    for (int i = 0; i < c->n_in; i++) {
        if (!present(c, i))
            continue;
        const poprt__type *t = tin(c, i);
        if (!t || t->rank < 0) {
            sum_known = 0;
            continue;
        }
        if (t->rank != r)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "input %d has rank %d, expected %d", i, t->rank, r);
        for (int a = 0; a < r; a++) {
            const poprt__dim *x = &t->dims[a];
            if (a == axis) {
                if (x->value < 0)
                    sum_known = 0;
                else
                    sum = poprt__dadd(sum, x->value, &ovf);
                continue;
            }
            if (x->value >= 0 && d[a].value >= 0 && x->value != d[a].value)
                return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                       "input %d dim %d is %lld, expected %lld", i, a,
                                       (long long)x->value, (long long)d[a].value);
            if (d[a].value < 0 && (x->value >= 0 || (!d[a].param && x->param)))
                d[a] = *x;
        }
    }
    if (ovf)
        return poprt__infer_overflow(c, "the concatenated axis");
    d[axis] = mkdim(sum_known ? sum : -1);
    poprt__infer_set(c, 0, elem, r, d);
    return POPRT_OK;
}

static poprt_status infer_split(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int nout = c->n_out;
    if (!x || x->rank < 0) {
        for (int j = 0; j < nout; j++)
            poprt__infer_unknown(c, j, elem);
        return POPRT_OK;
    }
    int r = x->rank;
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(c->node, "axis", 0), r, &axis))
        return bad(c, "axis out of range");
    int64_t *split, n;
    int known = ints_in_or_attr(c, 1, "split", &split, &n);
    int64_t D = x->dims[axis].value;
    int64_t *sizes = poprt__arena_array(c->arena, (size_t)nout + 1, sizeof *sizes);
    if (!sizes)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (known > 0) {
        if (n != nout)
            return bad(c, "split has a different length than the outputs");
        int64_t s = 0;
        int ovf = 0;
        for (int j = 0; j < nout; j++) {
            if (split[j] < 0)
                return bad(c, "negative split");
            sizes[j] = split[j];
            s = poprt__dadd(s, split[j], &ovf);
        }
        if (ovf)
            return poprt__infer_overflow(c, "the sum of the splits");
        if (D >= 0 && s != D)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "splits sum to %lld, axis has %lld", (long long)s, (long long)D);
    } else if (known == 0 || D < 0) {
        for (int j = 0; j < nout; j++)
            sizes[j] = -1;
    } else {
        const poprt__attr *na = poprt__node_attr(c->node, "num_outputs");
        int64_t parts = na ? na->i : nout;
        if (parts != nout || parts <= 0)
            return bad(c, "num_outputs differs from the number of outputs");
        if (!na && D % parts != 0)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "axis of %lld cannot be split into %lld equal parts",
                                   (long long)D, (long long)parts);
        int64_t chunk = (D + parts - 1) / parts;
        for (int j = 0; j < nout; j++) {
            int64_t left = D - chunk * j;
            sizes[j] = left < 0 ? 0 : left < chunk ? left : chunk;
        }
    }
    for (int j = 0; j < nout; j++) {
        poprt__dim d[MAXR];
        for (int a = 0; a < r; a++)
            d[a] = x->dims[a];
        d[axis] = mkdim(sizes[j]);
        poprt__infer_set(c, j, elem, r, d);
    }
    return POPRT_OK;
}

static poprt_status infer_slice(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int r = x->rank;
    int64_t *starts = NULL, *ends = NULL, *axes = NULL, *steps = NULL;
    int64_t ns = 0, ne = 0, na = 0, nst = 0;
    int ks, ke, ka, kst;
    if (c->opset >= 10 || present(c, 1)) {
        ks = present(c, 1) ? poprt__infer_input_ints(c, 1, &starts, &ns) : -1;
        ke = present(c, 2) ? poprt__infer_input_ints(c, 2, &ends, &ne) : -1;
        ka = present(c, 3) ? poprt__infer_input_ints(c, 3, &axes, &na) : -1;
        kst = present(c, 4) ? poprt__infer_input_ints(c, 4, &steps, &nst) : -1;
    } else {
        ks = ints_in_or_attr(c, 99, "starts", &starts, &ns);
        ke = ints_in_or_attr(c, 99, "ends", &ends, &ne);
        ka = ints_in_or_attr(c, 99, "axes", &axes, &na);
        kst = -1;
    }
    if (ks < 0 || ke < 0)
        return bad(c, "missing starts or ends");
    poprt__dim d[MAXR];
    for (int a = 0; a < r; a++)
        d[a] = x->dims[a];
    if (ks == 0 || ke == 0 || ka == 0 || kst == 0) {
        /* values unknown: sliced axes lose their size */
        for (int a = 0; a < r; a++) {
            int touched = ka <= 0;
            for (int64_t i = 0; ka > 0 && i < na; i++)
                touched |= (axes[i] < 0 ? axes[i] + r : axes[i]) == a;
            if (touched)
                d[a] = unknown_dim();
        }
        poprt__infer_set(c, 0, elem, r, d);
        return POPRT_OK;
    }
    if (ns != ne || (ka > 0 && na != ns) || (kst > 0 && nst != ns) || ns > r)
        return bad(c, "starts, ends, axes and steps differ in length");
    int seen[MAXR] = {0};
    for (int64_t i = 0; i < ns; i++) {
        int64_t a = ka > 0 ? axes[i] : i;
        if (!poprt__norm_axis(a, r, &a) || seen[a])
            return bad(c, "axes out of range or repeated");
        seen[a] = 1;
        int64_t step = kst > 0 ? steps[i] : 1;
        if (step == 0)
            return bad(c, "step is zero");
        int64_t dim = x->dims[a].value, first;
        d[a] = dim < 0 ? unknown_dim() : mkdim(poprt__slice_axis(dim, starts[i], ends[i], step, &first));
    }
    poprt__infer_set(c, 0, elem, r, d);
    return POPRT_OK;
}

/* ---- Gather / Scatter family ---------------------------------------------------------- */

static poprt_status infer_gather(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0), *ind = tin(c, 1);
    if (!x || !ind || x->rank < 0 || ind->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(c->node, "axis", 0), x->rank, &axis))
        return bad(c, "axis out of range");
    int orank = x->rank - 1 + ind->rank;
    if (orank > MAXR)
        return too_big(c, orank);
    poprt__dim d[MAXR];
    int o = 0;
    for (int a = 0; a < axis; a++)
        d[o++] = x->dims[a];
    for (int a = 0; a < ind->rank; a++)
        d[o++] = ind->dims[a];
    for (int a = (int)axis + 1; a < x->rank; a++)
        d[o++] = x->dims[a];
    poprt__infer_set(c, 0, elem, orank, d);
    return POPRT_OK;
}

static poprt_status infer_gather_elements(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *ind = tin(c, 1);
    if (!ind || ind->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    poprt__infer_set(c, 0, elem, ind->rank, ind->dims);
    return POPRT_OK;
}

static poprt_status infer_gather_nd(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0), *ind = tin(c, 1);
    if (!x || !ind || x->rank < 0 || ind->rank < 1 || ind->dims[ind->rank - 1].value < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int64_t b = poprt__attr_i(c->node, "batch_dims", 0);
    int64_t m = ind->dims[ind->rank - 1].value;
    if (b < 0 || b >= ind->rank || b + m > x->rank)
        return bad(c, "indices do not fit the data rank");
    int orank = ind->rank - 1 + x->rank - (int)(b + m);
    if (orank > MAXR)
        return too_big(c, orank);
    poprt__dim d[MAXR];
    int o = 0;
    for (int a = 0; a < ind->rank - 1; a++)
        d[o++] = ind->dims[a];
    for (int a = (int)(b + m); a < x->rank; a++)
        d[o++] = x->dims[a];
    poprt__infer_set(c, 0, elem, orank, d);
    return POPRT_OK;
}

/* ---- Expand / Tile / Pad / CenterCropPad ------------------------------------------------ */

static poprt_status infer_expand(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int64_t *shape, n;
    if (!poprt__infer_input_ints(c, 1, &shape, &n)) {
        int64_t len = in_len(c, 1);
        if (x && x->rank >= 0 && len >= 0) {
            int R = x->rank > len ? x->rank : (int)len;
            if (R > MAXR)
                return too_big(c, R);
            poprt__infer_set(c, 0, elem, R, NULL);
        } else {
            poprt__infer_unknown(c, 0, elem);
        }
        return POPRT_OK;
    }
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int R = x->rank > n ? x->rank : (int)n;
    if (R > MAXR)
        return too_big(c, R);
    poprt__dim d[MAXR];
    for (int i = 0; i < R; i++) {
        int xi = i - (R - x->rank), si = i - (R - (int)n);
        poprt__dim a = xi >= 0 ? x->dims[xi] : mkdim(1);
        int64_t b = si >= 0 ? shape[si] : 1;
        if (b < 0)
            return bad(c, "negative value in shape");
        if (b == 1)
            d[i] = a;
        else if (a.value == 1 || a.value < 0 || a.value == b)
            d[i] = mkdim(b);
        else
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "cannot expand dim %lld to %lld", (long long)a.value,
                                   (long long)b);
    }
    poprt__infer_set(c, 0, elem, R, d);
    return POPRT_OK;
}

static poprt_status infer_tile(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int64_t *rep, n;
    if (!poprt__infer_input_ints(c, 1, &rep, &n)) {
        poprt__infer_set(c, 0, elem, x->rank, NULL);
        return POPRT_OK;
    }
    if (n != x->rank)
        return bad(c, "repeats length differs from the input rank");
    poprt__dim d[MAXR];
    int ovf = 0;
    for (int a = 0; a < x->rank; a++) {
        if (rep[a] < 0)
            return bad(c, "negative repeat");
        d[a] = rep[a] == 1 ? x->dims[a]
                           : mkdim(x->dims[a].value < 0 ? -1 : poprt__dmul(x->dims[a].value, rep[a], &ovf));
    }
    if (ovf)
        return poprt__infer_overflow(c, "the tiled shape");
    poprt__infer_set(c, 0, elem, x->rank, d);
    return POPRT_OK;
}

/* Tile-1: the whole input repeated `tiles` times along `axis`, both
 * one-value inputs of the input's (float) type holding integers. Returns 1
 * with *v when known, 0 when unknown, -1 after recording an error. */
static int tile1_value(poprt__infer_ctx *c, int i, const char *what, int64_t *v)
{
    const poprt__type *t = tin(c, i);
    int64_t n = t ? poprt__type_numel(t) : -1;
    if (n >= 0 && n != 1) {
        POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "%s must hold one value, has %lld",
                        what, (long long)n);
        return -1;
    }
    if (n < 0 || !poprt__ival_data(&c->in[i]))
        return 0;
    double d = poprt__load_f64(poprt__ival_data(&c->in[i]), t->elem, 0);
    if (!(d == floor(d)) || fabs(d) > 4611686018427387904.0) { /* NaN, inf, fractions */
        POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "%s %g is not an integer", what, d);
        return -1;
    }
    *v = (int64_t)d;
    return 1;
}

static poprt_status infer_tile1(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int64_t tiles = -1, axis = 0;
    int kt = tile1_value(c, 1, "tiles", &tiles), ka = tile1_value(c, 2, "axis", &axis);
    if (kt < 0 || ka < 0)
        return POPRT_STATUS_INVALID_MODEL;
    if (kt && tiles < 0)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "tiles %lld is negative",
                               (long long)tiles);
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int64_t a = -1;
    if (ka && !poprt__norm_axis(axis, x->rank, &a))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "axis %lld out of range for rank %d", (long long)axis, x->rank);
    poprt__dim d[MAXR];
    int ovf = 0;
    for (int i = 0; i < x->rank; i++) {
        if (!ka)
            d[i] = unknown_dim();
        else if (i != a || tiles == 1)
            d[i] = x->dims[i];
        else
            d[i] = mkdim(!kt || x->dims[i].value < 0 ? -1
                                                      : poprt__dmul(x->dims[i].value, tiles, &ovf));
    }
    if (ovf)
        return poprt__infer_overflow(c, "the tiled shape");
    poprt__infer_set(c, 0, elem, x->rank, d);
    return POPRT_OK;
}

static poprt_status infer_pad(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int r = x->rank;
    int64_t *pads = NULL, *axes = NULL, np = 0, na = 0;
    int kp, ka = -1;
    if (present(c, 1)) {
        kp = poprt__infer_input_ints(c, 1, &pads, &np);
        if (present(c, 3))
            ka = poprt__infer_input_ints(c, 3, &axes, &na);
    } else {
        kp = ints_in_or_attr(c, 99, "pads", &pads, &np);
        if (kp < 0)
            kp = ints_in_or_attr(c, 99, "paddings", &pads, &np);
        if (kp < 0)
            return bad(c, "missing pads");
    }
    poprt__dim d[MAXR];
    if (!kp || !ka) {
        for (int a = 0; a < r; a++) {
            int touched = ka <= 0;
            for (int64_t i = 0; ka > 0 && i < na; i++)
                touched |= (axes[i] < 0 ? axes[i] + r : axes[i]) == a;
            d[a] = touched ? unknown_dim() : x->dims[a];
        }
        poprt__infer_set(c, 0, elem, r, d);
        return POPRT_OK;
    }
    int64_t full[2 * MAXR];
    if (!poprt__pad_full(r, pads, np, ka > 0 ? axes : NULL, na, full))
        return bad(c, "pads do not match the input rank or axes");
    int ovf = 0;
    for (int a = 0; a < r; a++) {
        int64_t v = x->dims[a].value;
        int64_t padded = poprt__dadd(poprt__dadd(v, full[a], &ovf), full[a + r], &ovf);
        if (ovf)
            return poprt__infer_overflow(c, "the padded shape");
        if (full[a] == 0 && full[a + r] == 0)
            d[a] = x->dims[a];
        else if (v < 0)
            d[a] = unknown_dim();
        else if (padded < 0)
            return bad(c, "negative pads remove more than the axis");
        else
            d[a] = mkdim(padded);
    }
    poprt__infer_set(c, 0, elem, r, d);
    return POPRT_OK;
}

static poprt_status infer_center_crop_pad(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int r = x->rank;
    int64_t na = 0, *shape, ns;
    const int64_t *axes = poprt__attr_ints(c->node, "axes", &na);
    int known = poprt__infer_input_ints(c, 1, &shape, &ns);
    poprt__dim d[MAXR];
    for (int a = 0; a < r; a++)
        d[a] = x->dims[a];
    int64_t nax = axes ? na : r;
    if (known && ns != nax)
        return bad(c, "shape length differs from the axes");
    for (int64_t i = 0; i < nax; i++) {
        int64_t a = axes ? axes[i] : i;
        if (!poprt__norm_axis(a, r, &a))
            return bad(c, "axis out of range");
        if (known && shape[i] < 0)
            return bad(c, "negative value in shape");
        d[a] = known ? mkdim(shape[i]) : unknown_dim();
    }
    poprt__infer_set(c, 0, elem, r, d);
    return POPRT_OK;
}

/* ---- Shape / Size / constants / Range ----------------------------------------------------- */

static poprt_status infer_shape(poprt__infer_ctx *c)
{
    int r = rank_of(c, 0);
    if (r < 0) {
        poprt__infer_set(c, 0, POPRT_DTYPE_INT64, 1, NULL);
        return POPRT_OK;
    }
    int64_t s = poprt__attr_i(c->node, "start", 0);
    const poprt__attr *ea = poprt__node_attr(c->node, "end");
    int64_t e = ea ? ea->i : r;
    if (s < 0)
        s += r;
    if (e < 0)
        e += r;
    s = s < 0 ? 0 : s > r ? r : s;
    e = e < 0 ? 0 : e > r ? r : e;
    int64_t len = e > s ? e - s : 0;
    poprt__infer_set_i64(c, 0, POPRT_DTYPE_INT64, 1, &len);
    return POPRT_OK;
}

static poprt_status infer_size(poprt__infer_ctx *c)
{
    poprt__infer_set(c, 0, POPRT_DTYPE_INT64, 0, NULL);
    return POPRT_OK;
}

static poprt_status infer_constant_of_shape(poprt__infer_ctx *c)
{
    const poprt__attr *v = poprt__node_attr(c->node, "value");
    int32_t elem = v && v->t ? v->t->type.elem : POPRT_DTYPE_FLOAT;
    int64_t *shape, n;
    if (!poprt__infer_input_ints(c, 0, &shape, &n)) {
        int64_t len = in_len(c, 0);
        if (len >= 0 && len <= MAXR)
            poprt__infer_set(c, 0, elem, (int)len, NULL);
        else
            poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    if (n > MAXR)
        return too_big(c, (int)n);
    for (int64_t i = 0; i < n; i++)
        if (shape[i] < 0)
            return bad(c, "negative dimension");
    poprt__infer_set_i64(c, 0, elem, (int)n, shape);
    return POPRT_OK;
}

static poprt_status infer_constant(poprt__infer_ctx *c)
{
    const poprt__node *n = c->node;
    const poprt__attr *a;
    if ((a = poprt__node_attr(n, "value")) || (a = poprt__node_attr(n, "sparse_value"))) {
        if (!a->t)
            return bad(c, "value attribute holds no tensor");
        poprt__infer_set(c, 0, a->t->type.elem, a->t->type.rank, a->t->type.dims);
    } else if (poprt__node_attr(n, "value_float")) {
        poprt__infer_set(c, 0, POPRT_DTYPE_FLOAT, 0, NULL);
    } else if ((a = poprt__node_attr(n, "value_floats"))) {
        poprt__infer_set_i64(c, 0, POPRT_DTYPE_FLOAT, 1, &a->n);
    } else if (poprt__node_attr(n, "value_int")) {
        poprt__infer_set(c, 0, POPRT_DTYPE_INT64, 0, NULL);
    } else if ((a = poprt__node_attr(n, "value_ints"))) {
        poprt__infer_set_i64(c, 0, POPRT_DTYPE_INT64, 1, &a->n);
    } else if (poprt__node_attr(n, "value_string")) {
        poprt__infer_set(c, 0, POPRT_DTYPE_STRING, 0, NULL);
    } else if ((a = poprt__node_attr(n, "value_strings"))) {
        poprt__infer_set_i64(c, 0, POPRT_DTYPE_STRING, 1, &a->n);
    } else {
        return bad(c, "Constant without a value attribute");
    }
    return POPRT_OK;
}

static poprt_status infer_range(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    int64_t len = -1;
    if (poprt__dtype_is_int(elem)) {
        int64_t *s, *l, *d, n1, n2, n3;
        if (poprt__infer_input_ints(c, 0, &s, &n1) && poprt__infer_input_ints(c, 1, &l, &n2) &&
            poprt__infer_input_ints(c, 2, &d, &n3) && n1 && n2 && n3) {
            if (d[0] == 0)
                return bad(c, "delta is zero");
            /* ceil((limit - start) / delta), in 128 bits: the span of two
             * int64 values does not fit in one */
            __int128 span = (__int128)l[0] - (__int128)s[0], q = span / d[0];
            if (span % d[0] != 0 && ((span < 0) == (d[0] < 0)))
                q++;
            if (q > ((__int128)1 << 62))
                return poprt__infer_overflow(c, "the number of values");
            len = q < 0 ? 0 : (int64_t)q;
        }
    } else {
        double s, l, d;
        if (in_f64(c, 0, &s) && in_f64(c, 1, &l) && in_f64(c, 2, &d)) {
            if (d == 0)
                return bad(c, "delta is zero");
            double q = elem == POPRT_DTYPE_FLOAT ? (double)(((float)l - (float)s) / (float)d)
                                                 : (l - s) / d;
            q = ceil(q);
            if (q > 0 && !poprt__double_dim(q, &len))
                return poprt__infer_overflow(c, "the number of values");
            if (!(q > 0))
                len = 0;
        }
    }
    poprt__infer_set_i64(c, 0, elem, 1, &len);
    return POPRT_OK;
}

static poprt_status infer_identity(poprt__infer_ctx *c)
{
    poprt__infer_same(c, 0, 0);
    return POPRT_OK;
}

static poprt_status infer_dropout(poprt__infer_ctx *c)
{
    poprt__infer_same(c, 0, 0);
    if (c->n_out > 1) {
        const poprt__type *x = tin(c, 0);
        int32_t me = c->opset >= 10 ? POPRT_DTYPE_BOOL : poprt__infer_elem(c, 0);
        if (x && x->rank >= 0)
            poprt__infer_set(c, 1, me, x->rank, x->dims);
        else
            poprt__infer_unknown(c, 1, me);
    }
    return POPRT_OK;
}

/* ---- DepthToSpace / SpaceToDepth / EyeLike ----------------------------------------------- */

static poprt_status infer_d2s(poprt__infer_ctx *c, int to_space)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int64_t b = poprt__attr_i(c->node, "blocksize", 0);
    if (b <= 0)
        return bad(c, "blocksize must be positive");
    if (!x || x->rank < 0) {
        poprt__infer_set(c, 0, elem, 4, NULL);
        return POPRT_OK;
    }
    if (x->rank != 4)
        return bad(c, "input must be 4-D");
    poprt__dim d[4];
    int64_t ch = x->dims[1].value, h = x->dims[2].value, w = x->dims[3].value;
    int ovf = 0;
    const int64_t bb = poprt__dmul(b, b, &ovf);
    if (ovf)
        return poprt__infer_overflow(c, "blocksize squared");
    d[0] = x->dims[0];
    if (to_space) {
        if (ch >= 0 && ch % bb)
            return bad(c, "channels not divisible by blocksize^2");
        d[1] = mkdim(ch < 0 ? -1 : ch / bb);
        d[2] = mkdim(h < 0 ? -1 : poprt__dmul(h, b, &ovf));
        d[3] = mkdim(w < 0 ? -1 : poprt__dmul(w, b, &ovf));
    } else {
        if ((h >= 0 && h % b) || (w >= 0 && w % b))
            return bad(c, "spatial dims not divisible by blocksize");
        d[1] = mkdim(ch < 0 ? -1 : poprt__dmul(ch, bb, &ovf));
        d[2] = mkdim(h < 0 ? -1 : h / b);
        d[3] = mkdim(w < 0 ? -1 : w / b);
    }
    if (ovf)
        return poprt__infer_overflow(c, "the output shape");
    poprt__infer_set(c, 0, elem, 4, d);
    return POPRT_OK;
}

static poprt_status infer_depth_to_space(poprt__infer_ctx *c) { return infer_d2s(c, 1); }
static poprt_status infer_space_to_depth(poprt__infer_ctx *c) { return infer_d2s(c, 0); }

static poprt_status infer_eye_like(poprt__infer_ctx *c)
{
    const poprt__attr *dt = poprt__node_attr(c->node, "dtype");
    int32_t elem = dt ? (int32_t)dt->i : poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    if (x && x->rank >= 0 && x->rank != 2)
        return bad(c, "input must be 2-D");
    poprt__infer_set(c, 0, elem, 2, x && x->rank == 2 ? x->dims : NULL);
    return POPRT_OK;
}

/* ---- NonZero / Compress ---------------------------------------------------------------- */

static poprt_status infer_nonzero(poprt__infer_ctx *c)
{
    const poprt__type *x = tin(c, 0);
    int64_t d[2] = {x && x->rank >= 0 ? x->rank : -1, -1};
    int64_t n = x ? poprt__type_numel(x) : -1;
    if (x && poprt__ival_data(&c->in[0]) && n >= 0 && x->elem != POPRT_DTYPE_STRING) {
        size_t es = poprt__dtype_size((poprt_dtype)x->elem);
        int64_t cnt = 0;
        for (int64_t i = 0; i < n; i++) {
            if (poprt__dtype_is_float(x->elem)) {
                cnt += poprt__load_f64(poprt__ival_data(&c->in[0]), x->elem, i) != 0.0;
            } else {
                const unsigned char *p = (const unsigned char *)poprt__ival_data(&c->in[0]) + (size_t)i * es;
                int nz = 0;
                for (size_t b = 0; b < es; b++)
                    nz |= p[b] != 0;
                cnt += nz;
            }
        }
        d[1] = cnt;
    }
    poprt__infer_set_i64(c, 0, POPRT_DTYPE_INT64, 2, d);
    return POPRT_OK;
}

static poprt_status infer_compress(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0), *cond = tin(c, 1);
    int64_t cnt = -1;
    int64_t n = cond ? poprt__type_numel(cond) : -1;
    if (cond && poprt__ival_data(&c->in[1]) && n >= 0) {
        cnt = 0;
        for (int64_t i = 0; i < n; i++)
            cnt += ((const uint8_t *)poprt__ival_data(&c->in[1]))[i] != 0;
    }
    const poprt__attr *aa = poprt__node_attr(c->node, "axis");
    if (!aa) {
        poprt__infer_set_i64(c, 0, elem, 1, &cnt);
        return POPRT_OK;
    }
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int64_t axis;
    if (!poprt__norm_axis(aa->i, x->rank, &axis))
        return bad(c, "axis out of range");
    poprt__dim d[MAXR];
    for (int a = 0; a < x->rank; a++)
        d[a] = x->dims[a];
    d[axis] = mkdim(cnt);
    poprt__infer_set(c, 0, elem, x->rank, d);
    return POPRT_OK;
}

/* ---- OneHot / TopK / Unique ---------------------------------------------------------------- */

static poprt_status infer_one_hot(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 2);
    const poprt__type *ind = tin(c, 0);
    if (!ind || ind->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int orank = ind->rank + 1;
    if (orank > MAXR)
        return too_big(c, orank);
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(c->node, "axis", -1), orank, &axis))
        return bad(c, "axis out of range");
    double depth;
    int64_t dep = -1;
    if (in_f64(c, 1, &depth)) {
        if (!(depth >= 1))
            return bad(c, "depth must be positive");
        if (!poprt__double_dim(depth, &dep))
            return poprt__infer_overflow(c, "depth");
    }
    poprt__dim d[MAXR];
    int j = 0;
    for (int a = 0; a < orank; a++)
        d[a] = a == axis ? mkdim(dep) : ind->dims[j++];
    poprt__infer_set(c, 0, elem, orank, d);
    return POPRT_OK;
}

static poprt_status infer_topk(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        poprt__infer_unknown(c, 1, POPRT_DTYPE_INT64);
        return POPRT_OK;
    }
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(c->node, "axis", -1), x->rank, &axis))
        return bad(c, "axis out of range");
    int64_t kk = -1, *kv, n;
    int known = 0;
    if (present(c, 1)) {
        if ((known = poprt__infer_input_ints(c, 1, &kv, &n) && n == 1))
            kk = kv[0];
    } else {
        known = poprt__node_attr(c->node, "k") != NULL;
        kk = poprt__attr_i(c->node, "k", -1);
    }
    int64_t dim = x->dims[axis].value;
    if (known && kk < 0)
        return bad(c, "k is negative");
    if (kk >= 0 && dim >= 0 && kk > dim)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "k=%lld exceeds axis size %lld",
                               (long long)kk, (long long)dim);
    poprt__dim d[MAXR];
    for (int a = 0; a < x->rank; a++)
        d[a] = x->dims[a];
    d[axis] = mkdim(kk);
    poprt__infer_set(c, 0, elem, x->rank, d);
    poprt__infer_set(c, 1, POPRT_DTYPE_INT64, x->rank, d);
    return POPRT_OK;
}

static poprt_status infer_unique(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    const poprt__attr *aa = poprt__node_attr(c->node, "axis");
    int64_t len = -1;
    if (!aa || !x || x->rank < 0) {
        if (!aa) {
            poprt__infer_set(c, 0, elem, 1, NULL);
            len = x ? poprt__type_numel(x) : -1;
        } else {
            poprt__infer_unknown(c, 0, elem);
        }
    } else {
        int64_t axis;
        if (!poprt__norm_axis(aa->i, x->rank, &axis))
            return bad(c, "axis out of range");
        poprt__dim d[MAXR];
        for (int a = 0; a < x->rank; a++)
            d[a] = x->dims[a];
        d[axis] = unknown_dim();
        len = x->dims[axis].value;
        poprt__infer_set(c, 0, elem, x->rank, d);
    }
    poprt__infer_set(c, 1, POPRT_DTYPE_INT64, 1, NULL);
    poprt__infer_set_i64(c, 2, POPRT_DTYPE_INT64, 1, &len);
    poprt__infer_set(c, 3, POPRT_DTYPE_INT64, 1, NULL);
    return POPRT_OK;
}

/* ---- Col2Im ----------------------------------------------------------------------------- */

static poprt_status infer_col2im(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    int64_t *img, *blk, ni, nb;
    int ki = poprt__infer_input_ints(c, 1, &img, &ni);
    int kb = poprt__infer_input_ints(c, 2, &blk, &nb);
    int64_t nd = ki ? ni : in_len(c, 1);
    if (nd < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    if (nd + 2 > MAXR)
        return too_big(c, (int)nd + 2);
    poprt__dim d[MAXR];
    d[0] = x && x->rank == 3 ? x->dims[0] : unknown_dim();
    d[1] = unknown_dim();
    if (kb && x && x->rank == 3 && x->dims[1].value >= 0) {
        int64_t K = 1;
        int ovf = 0;
        for (int64_t i = 0; i < nb; i++) {
            if (blk[i] <= 0)
                return bad(c, "block_shape values must be positive");
            K = poprt__dmul(K, blk[i], &ovf);
        }
        if (ovf)
            return poprt__infer_overflow(c, "the block size");
        if (x->dims[1].value % K)
            return bad(c, "channels not divisible by the block size");
        d[1] = mkdim(x->dims[1].value / K);
    }
    for (int64_t i = 0; i < nd; i++) {
        if (ki && img[i] < 0)
            return bad(c, "negative image_shape value");
        d[2 + i] = ki ? mkdim(img[i]) : unknown_dim();
    }
    poprt__infer_set(c, 0, elem, (int)nd + 2, d);
    return POPRT_OK;
}

/* ---- Resize / Upsample ------------------------------------------------------------------- */

/* Float values of input i when known. */
static int in_floats(poprt__infer_ctx *c, int i, float *out, int64_t cap, int64_t *n)
{
    const poprt__type *t = tin(c, i);
    if (!t || !poprt__ival_data(&c->in[i]))
        return 0;
    int64_t cnt = poprt__type_numel(t);
    if (cnt < 0 || cnt > cap)
        return 0;
    for (int64_t k = 0; k < cnt; k++)
        out[k] = (float)poprt__load_f64(poprt__ival_data(&c->in[i]), t->elem, k);
    *n = cnt;
    return 1;
}

static poprt_status infer_resize(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0);
    if (!x || x->rank < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    int r = x->rank;
    int upsample = strcmp(c->node->op_type, "Upsample") == 0;
    int legacy = upsample || c->opset < 11;
    float scales[MAXR];
    int64_t ns = 0, nsz = 0, *sizes = NULL, na = 0;
    int known = 1;
    if (legacy) {
        if (present(c, 1)) {
            known = in_floats(c, 1, scales, MAXR, &ns);
        } else {
            const float *f = poprt__attr_floats(c->node, "scales", &ns);
            if (!f || ns > MAXR)
                return bad(c, "missing scales");
            memcpy(scales, f, sizeof(float) * (size_t)ns);
        }
    } else {
        if (present(c, 3) && in_len(c, 3) != 0)
            known = poprt__infer_input_ints(c, 3, &sizes, &nsz);
        if (known && !sizes && present(c, 2))
            known = in_floats(c, 2, scales, MAXR, &ns);
    }
    const int64_t *axes = poprt__attr_ints(c->node, "axes", &na);
    int resized[MAXR] = {0};
    for (int64_t i = 0; i < (axes ? na : r); i++) {
        int64_t a;
        if (!poprt__norm_axis(axes ? axes[i] : i, r, &a))
            return bad(c, "axis out of range");
        resized[a] = 1;
    }
    poprt__dim d[MAXR];
    for (int a = 0; a < r; a++)
        d[a] = resized[a] ? unknown_dim() : x->dims[a];
    if (!known || (!ns && !nsz)) {
        if (known && !ns && !nsz)
            return bad(c, "neither scales nor sizes given");
        poprt__infer_set(c, 0, elem, r, d);
        return POPRT_OK;
    }
    int64_t in_dims[MAXR], out_dims[MAXR], ax[MAXR];
    double eff[MAXR];
    int any_unknown = 0;
    for (int a = 0; a < r; a++) {
        in_dims[a] = x->dims[a].value < 0 ? 1 : x->dims[a].value;
        any_unknown |= resized[a] && x->dims[a].value < 0;
    }
    for (int64_t i = 0; axes && i < na; i++)
        ax[i] = axes[i];
    if (!poprt__resize_plan(c->node, r, in_dims, ns ? scales : NULL, ns, sizes, nsz,
                            axes ? ax : NULL, na, out_dims, eff))
        return bad(c, "invalid scales or sizes");
    int stretch = strcmp(poprt__attr_s(c->node, "keep_aspect_ratio_policy", "stretch"), "stretch") == 0;
    for (int a = 0; a < r; a++) {
        if (!resized[a])
            continue;
        int depends = sizes ? (!stretch && any_unknown) : x->dims[a].value < 0;
        d[a] = depends ? unknown_dim() : mkdim(out_dims[a]);
    }
    poprt__infer_set(c, 0, elem, r, d);
    return POPRT_OK;
}

/* ---- GridSample / AffineGrid --------------------------------------------------------------- */

static poprt_status infer_grid_sample(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    const poprt__type *x = tin(c, 0), *g = tin(c, 1);
    int r = x && x->rank >= 0 ? x->rank : g && g->rank >= 0 ? g->rank : -1;
    if (r < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    if (r < 3 || r > MAXR)
        return bad(c, "input rank must be at least 3");
    poprt__dim d[MAXR];
    for (int a = 0; a < r; a++)
        d[a] = unknown_dim();
    if (x && x->rank == r) {
        d[0] = x->dims[0];
        d[1] = x->dims[1];
    }
    if (g && g->rank == r) {
        if (d[0].value < 0)
            d[0] = g->dims[0];
        for (int a = 2; a < r; a++)
            d[a] = g->dims[a - 1];
    }
    poprt__infer_set(c, 0, elem, r, d);
    return POPRT_OK;
}

static poprt_status infer_affine_grid(poprt__infer_ctx *c)
{
    int32_t elem = poprt__infer_elem(c, 0);
    int64_t *size, n;
    if (!poprt__infer_input_ints(c, 1, &size, &n)) {
        int64_t len = in_len(c, 1);
        if (len == 4 || len == 5) {
            poprt__dim d[5];
            for (int a = 0; a < len; a++)
                d[a] = unknown_dim();
            d[len - 1] = mkdim(len - 2);
            poprt__infer_set(c, 0, elem, (int)len, d);
        } else {
            poprt__infer_unknown(c, 0, elem);
        }
        return POPRT_OK;
    }
    if (n != 4 && n != 5)
        return bad(c, "size must have 4 or 5 values");
    for (int64_t i = 0; i < n; i++)
        if (size[i] < 0)
            return bad(c, "negative value in size");
    int64_t d[5];
    d[0] = size[0];
    for (int i = 2; i < n; i++)
        d[i - 1] = size[i];
    d[n - 1] = n - 2;
    poprt__infer_set_i64(c, 0, elem, (int)n, d);
    return POPRT_OK;
}


/* ---- schemas -------------------------------------------------------------------------------- */

#define OP(var, name, since, mini, maxi, mino, maxo, flags, infer)                         \
    static const poprt__op var = {name, "", since, mini, maxi, mino, maxo, flags, infer};

OP(op_reshape, "Reshape", 1, 1, 2, 1, 1, 0, infer_reshape)
OP(op_flatten, "Flatten", 1, 1, 1, 1, 1, 0, infer_flatten)
OP(op_squeeze, "Squeeze", 1, 1, 2, 1, 1, 0, infer_squeeze)
OP(op_unsqueeze, "Unsqueeze", 1, 1, 2, 1, 1, 0, infer_unsqueeze)
OP(op_identity, "Identity", 1, 1, 1, 1, 1, 0, infer_identity)
OP(op_transpose, "Transpose", 1, 1, 1, 1, 1, 0, infer_transpose)
OP(op_concat, "Concat", 1, 1, -1, 1, 1, 0, infer_concat)
OP(op_split, "Split", 1, 1, 2, 1, -1, 0, infer_split)
OP(op_slice, "Slice", 1, 1, 5, 1, 1, 0, infer_slice)
OP(op_gather, "Gather", 1, 2, 2, 1, 1, 0, infer_gather)
OP(op_gather_elements, "GatherElements", 11, 2, 2, 1, 1, 0, infer_gather_elements)
OP(op_gather_nd, "GatherND", 11, 2, 2, 1, 1, 0, infer_gather_nd)
OP(op_scatter, "Scatter", 9, 3, 3, 1, 1, 0, same_as_input)
OP(op_scatter_elements, "ScatterElements", 11, 3, 3, 1, 1, 0, same_as_input)
OP(op_scatter_nd, "ScatterND", 11, 3, 3, 1, 1, 0, same_as_input)
OP(op_tensor_scatter, "TensorScatter", 24, 2, 3, 1, 1, 0, same_as_input)
OP(op_expand, "Expand", 8, 2, 2, 1, 1, 0, infer_expand)
OP(op_tile1, "Tile", 1, 3, 3, 1, 1, 0, infer_tile1)
OP(op_tile, "Tile", 6, 2, 2, 1, 1, 0, infer_tile)
OP(op_pad, "Pad", 1, 1, 4, 1, 1, 0, infer_pad)
OP(op_shape, "Shape", 1, 1, 1, 1, 1, 0, infer_shape)
OP(op_size, "Size", 1, 1, 1, 1, 1, 0, infer_size)
OP(op_constant_of_shape, "ConstantOfShape", 9, 1, 1, 1, 1, 0, infer_constant_of_shape)
OP(op_constant, "Constant", 1, 0, 0, 1, 1, 0, infer_constant)
OP(op_range, "Range", 11, 3, 3, 1, 1, 0, infer_range)
OP(op_dropout, "Dropout", 1, 1, 3, 1, 2, 0, infer_dropout)
OP(op_depth_to_space, "DepthToSpace", 1, 1, 1, 1, 1, 0, infer_depth_to_space)
OP(op_space_to_depth, "SpaceToDepth", 1, 1, 1, 1, 1, 0, infer_space_to_depth)
OP(op_trilu, "Trilu", 14, 1, 2, 1, 1, 0, same_as_input)
OP(op_nonzero, "NonZero", 9, 1, 1, 1, 1, POPRT__OP_DYNAMIC, infer_nonzero)
OP(op_compress, "Compress", 9, 2, 2, 1, 1, POPRT__OP_DYNAMIC, infer_compress)
OP(op_reverse_sequence, "ReverseSequence", 10, 2, 2, 1, 1, 0, same_as_input)
OP(op_eye_like, "EyeLike", 9, 1, 1, 1, 1, 0, infer_eye_like)
OP(op_one_hot, "OneHot", 9, 3, 3, 1, 1, 0, infer_one_hot)
OP(op_cumsum, "CumSum", 11, 2, 2, 1, 1, 0, same_as_input)
OP(op_cumprod, "CumProd", 26, 2, 2, 1, 1, 0, same_as_input)
OP(op_topk, "TopK", 1, 1, 2, 2, 2, 0, infer_topk)
OP(op_unique, "Unique", 11, 1, 1, 1, 4, POPRT__OP_DYNAMIC, infer_unique)
OP(op_center_crop_pad, "CenterCropPad", 18, 2, 2, 1, 1, 0, infer_center_crop_pad)
OP(op_col2im, "Col2Im", 18, 3, 3, 1, 1, 0, infer_col2im)
OP(op_resize, "Resize", 10, 1, 4, 1, 1, 0, infer_resize)
OP(op_upsample, "Upsample", 7, 1, 2, 1, 1, 0, infer_resize)
OP(op_grid_sample, "GridSample", 16, 2, 2, 1, 1, 0, infer_grid_sample)
OP(op_affine_grid, "AffineGrid", 20, 2, 2, 1, 1, 0, infer_affine_grid)

const poprt__op *const poprt__ops_tensor[] = {
    &op_reshape, &op_flatten, &op_squeeze, &op_unsqueeze, &op_identity, &op_transpose,
    &op_concat, &op_split, &op_slice, &op_gather, &op_gather_elements, &op_gather_nd,
    &op_scatter, &op_scatter_elements, &op_scatter_nd, &op_tensor_scatter, &op_expand,
    &op_tile1, &op_tile, &op_pad, &op_shape, &op_size, &op_constant_of_shape, &op_constant,
    &op_range,
    &op_dropout, &op_depth_to_space, &op_space_to_depth, &op_trilu, &op_nonzero,
    &op_compress, &op_reverse_sequence, &op_eye_like, &op_one_hot, &op_cumsum, &op_cumprod,
    &op_topk, &op_unique, &op_center_crop_pad, &op_col2im, &op_resize, &op_upsample,
    &op_grid_sample, &op_affine_grid,
    NULL,
};
