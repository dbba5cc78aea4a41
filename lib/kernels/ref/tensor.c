/* Reference kernels of the 'tensor' family (TopK and Unique: sort.c;
 * Resize, GridSample and AffineGrid: resample.c).
 *
 * Most kernels here move elements without looking at them, so they work on
 * every dtype by element size (strings are arrays of `char *`; copying the
 * pointer is enough because string storage outlives the run's values).
 * Output shapes arrive from inference; kernels recompute only the
 * parameters they need (slice starts, pads, ...), with the same helpers. */
#include <math.h>
#include <string.h>
#include "kernels/ref/tensor.h"

int poprt__ref_kin_ints(const poprt__kctx *k, int i, int64_t *buf, int64_t cap, int64_t *n)
{
    const poprt__tval *t = poprt__kin(k, i);
    if (!t)
        return 0;
    *n = t->numel;
    for (int64_t j = 0; j < t->numel && j < cap; j++)
        buf[j] = poprt__ref_tv_int(t, j);
    return 1;
}

/* Integer list from input i when present, else from attribute `name`. */
static int ints_in_or_attr(const poprt__kctx *k, int i, const char *name, int64_t *buf,
                           int64_t cap, int64_t *n)
{
    if (poprt__ref_kin_ints(k, i, buf, cap, n))
        return 1;
    const int64_t *a = poprt__attr_ints(k->node, name, n);
    if (!a)
        return 0;
    for (int64_t j = 0; j < *n && j < cap; j++)
        buf[j] = a[j];
    return 1;
}

static void copy_row(char *o, const char *p, int64_t n, int64_t stride, size_t es)
{
    if (stride == 1) {
        memcpy(o, p, (size_t)n * es);
        return;
    }
    switch (es) {
    case 1:
        for (int64_t i = 0; i < n; i++)
            o[i] = p[i * stride];
        break;
    case 2:
        for (int64_t i = 0; i < n; i++)
            memcpy(o + 2 * i, p + 2 * i * stride, 2);
        break;
    case 4:
        for (int64_t i = 0; i < n; i++)
            memcpy(o + 4 * i, p + 4 * i * stride, 4);
        break;
    case 8:
        for (int64_t i = 0; i < n; i++)
            memcpy(o + 8 * i, p + 8 * i * stride, 8);
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(o + (size_t)i * es, p + (size_t)(i * stride) * (ptrdiff_t)es, es);
    }
}

#define MAXS (2 * POPRT__MAX_RANK + 4)

/* Drops size-1 dims and merges adjacent dims that are contiguous in src
 * (so plain copies become memcpy). Returns the merged rank; -1 when a dim
 * is 0 (nothing to copy). */
static int merge_dims(int rank, const int64_t *dims, const int64_t *sstr, int64_t *d, int64_t *s)
{
    int r = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 0)
            return -1;
        if (dims[i] == 1)
            continue;
        if (r > 0 && s[r - 1] == sstr[i] * dims[i]) {
            d[r - 1] *= dims[i];
            s[r - 1] = sstr[i];
        } else {
            d[r] = dims[i];
            s[r] = sstr[i];
            r++;
        }
    }
    return r;
}

/* Output rows [n0, n1) (rows of the merged last dim, r >= 1) of a strided copy. */
static void copy_merged_rows(char *dst, const char *src, int r, const int64_t *d,
                             const int64_t *s, size_t es, int64_t n0, int64_t n1)
{
    const int64_t inner = d[r - 1], istr = s[r - 1];
    int64_t idx[MAXS] = {0}, off = 0, q = n0;
    for (int j = r - 2; j >= 0; j--) {
        idx[j] = q % d[j];
        q /= d[j];
        off += idx[j] * s[j];
    }
    char *o = dst + (size_t)n0 * (size_t)inner * es;
    for (int64_t n = n0; n < n1; n++) {
        copy_row(o, src + off * (ptrdiff_t)es, inner, istr, es);
        o += (size_t)inner * es;
        for (int j = r - 2; j >= 0; j--) {
            off += s[j];
            if (++idx[j] < d[j])
                break;
            off -= s[j] * d[j];
            idx[j] = 0;
        }
    }
}

/* dst (contiguous, row-major over dims) = src at offsets sum(idx*sstr)
 * (elements, strides may be 0 or negative). */
static void copy_strided(void *dst, const void *src, int rank, const int64_t *dims,
                         const int64_t *sstr, size_t es)
{
    int64_t d[MAXS], s[MAXS];
    int r = merge_dims(rank, dims, sstr, d, s);
    if (r < 0)
        return;
    if (r == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t outer = 1;
    for (int i = 0; i < r - 1; i++)
        outer *= d[i];
    copy_merged_rows(dst, src, r, d, s, es, 0, outer);
}

/* dst[o] = src[sum_a maps[a][o_a] * istr[a]], or *fill when any map entry is
 * negative (padding, out-of-range). */
void poprt__ref_gather_mapped(void *dst, const void *src, int rank, const int64_t *odims,
                          int64_t *const *maps, const int64_t *istr, size_t es, const void *fill)
{
    char *o = dst;
    const char *b = src;
    if (rank == 0) {
        memcpy(o, b, es);
        return;
    }
    int64_t outer = 1;
    for (int i = 0; i < rank - 1; i++)
        outer *= odims[i];
    int64_t inner = odims[rank - 1];
    if (inner == 0 || outer == 0)
        return;
    const int64_t *lm = maps[rank - 1];
    int64_t ls = istr[rank - 1];
    int in_range = 1; /* the last axis maps inside the input everywhere */
    for (int64_t i = 0; i < inner && in_range; i++)
        in_range = lm[i] >= 0;
    int64_t idx[POPRT__MAX_RANK] = {0};
    int64_t prev_off = -1; /* the source row of the row before, if valid */
    for (int64_t n = 0; n < outer; n++) {
        int64_t off = 0;
        int valid = 1;
        for (int a = 0; a < rank - 1; a++) {
            int64_t m = maps[a][idx[a]];
            if (m < 0)
                valid = 0;
            off += m * istr[a];
        }
        if (!valid) {
            for (int64_t i = 0; i < inner; i++, o += es)
                memcpy(o, fill, es);
            prev_off = -1;
        } else if (off == prev_off) {
            /* the same source row as the row just written (an upsampled
             * row): copy that row */
            memcpy(o, o - (size_t)inner * es, (size_t)inner * es);
            o += (size_t)inner * es;
        } else if (es == 4 && in_range) {
            const uint32_t *s4 = (const uint32_t *)(const void *)b + off;
            uint32_t *d4 = (uint32_t *)(void *)o;
            for (int64_t i = 0; i < inner; i++)
                d4[i] = s4[lm[i] * ls];
            o += (size_t)inner * 4;
            prev_off = off;
        } else if (es == 4) {
            for (int64_t i = 0; i < inner; i++, o += 4) {
                int64_t m = lm[i];
                memcpy(o, m < 0 ? fill : b + (off + m * ls) * 4, 4);
            }
            prev_off = off;
        } else {
            for (int64_t i = 0; i < inner; i++, o += es) {
                int64_t m = lm[i];
                memcpy(o, m < 0 ? fill : b + (size_t)(off + m * ls) * es, es);
            }
            prev_off = off;
        }
        for (int j = rank - 2; j >= 0; j--) {
            if (++idx[j] < odims[j])
                break;
            idx[j] = 0;
        }
    }
}

/* Per-axis index maps for poprt__ref_gather_mapped, in scratch memory. */
int64_t **poprt__ref_alloc_maps(poprt__kctx *k, int rank, const int64_t *odims)
{
    size_t total = 0;
    for (int a = 0; a < rank; a++)
        total += (size_t)odims[a];
    int64_t **maps = poprt__kctx_scratch(k, sizeof(int64_t *) * (size_t)(rank ? rank : 1) +
                                                 sizeof(int64_t) * (total + 1));
    if (!maps)
        return NULL;
    int64_t *p = (int64_t *)(maps + (rank ? rank : 1));
    for (int a = 0; a < rank; a++) {
        maps[a] = p;
        p += odims[a];
    }
    return maps;
}

static const char *const empty_string = "";

/* A zero element of dtype dt (strings: ""). */
void poprt__ref_zero_elem(int32_t dt, void *buf)
{
    memset(buf, 0, 16);
    if (dt == POPRT_DTYPE_STRING)
        memcpy(buf, &empty_string, sizeof(char *));
}

static poprt_status same_bytes_copy(poprt__kctx *k, const poprt__tval *x, poprt__tval *y)
{
    if (!x || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    if (x->nbytes != y->nbytes)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "output holds %zu bytes, input %zu", y->nbytes, x->nbytes);
    if (y->data != x->data && x->nbytes)
        memcpy(y->data, x->data, x->nbytes);
    return POPRT_OK;
}

/* ---- reshape family, identity ------------------------------------------------ */

poprt_status poprt__ref_copy_input(poprt__kctx *k)
{
    return same_bytes_copy(k, poprt__kin(k, 0), poprt__kout(k, 0));
}

poprt_status poprt__ref_identity(poprt__kctx *k)
{
    const poprt__value *v = k->n_in > 0 ? k->in[0] : NULL;
    if (!v)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input");
    if (v->kind == POPRT__KIND_TENSOR && k->out[0] && k->out[0]->kind == POPRT__KIND_TENSOR &&
        k->out[0]->t.data && k->out[0]->t.nbytes == v->t.nbytes)
        return same_bytes_copy(k, &v->t, &k->out[0]->t);
    return poprt__kctx_set_value(k, 0, v);
}

/* ---- Transpose ---------------------------------------------------------------- */

/* Transpose as a strided copy over the session's threads. When the
 * innermost output dim is strided in the input but the one before it is
 * contiguous there (the K^T of attention, NCHW <-> NHWC), rows would read one
 * element per cache line; square tiles read and write whole lines instead. */
#define TP_TILE 16
#define TP_PAR_BYTES (256 * 1024) /* below this, waking threads costs more */

typedef struct tp_job {
    char *dst;
    const char *src;
    int r;
    int64_t d[MAXS], s[MAXS];
    size_t es;
    int64_t strips; /* tiled: TP_TILE-row strips per 2-D plane */
} tp_job;

static void tp_rows_fn(void *ctx, int64_t n0, int64_t n1)
{
    const tp_job *j = ctx;
    copy_merged_rows(j->dst, j->src, j->r, j->d, j->s, j->es, n0, n1);
}

/* Units are TP_TILE-row strips of the 2-D planes out[a][b] = in[a + b * sb]
 * (a over d[r-2], b over d[r-1]); planes are indexed by the dims before. */
static void tp_tiles_fn(void *ctx, int64_t u0, int64_t u1)
{
    const tp_job *j = ctx;
    const int r = j->r;
    const int64_t A = j->d[r - 2], B = j->d[r - 1], sb = j->s[r - 1];
    for (int64_t u = u0; u < u1; u++) {
        int64_t plane = u / j->strips, a0 = (u % j->strips) * TP_TILE, q = plane, off = 0;
        for (int i = r - 3; i >= 0; i--) {
            off += (q % j->d[i]) * j->s[i];
            q /= j->d[i];
        }
        const int64_t a1 = a0 + TP_TILE < A ? a0 + TP_TILE : A;
        const float *in = (const float *)j->src + off;
        float *out = (float *)j->dst + plane * A * B;
        for (int64_t b0 = 0; b0 < B; b0 += TP_TILE) {
            const int64_t b1 = b0 + TP_TILE < B ? b0 + TP_TILE : B;
            for (int64_t a = a0; a < a1; a++)
                for (int64_t b = b0; b < b1; b++)
                    out[a * B + b] = in[a + b * sb];
        }
    }
}

static void transpose_run(poprt__kctx *k, void *dst, const void *src, int rank,
                          const int64_t *dims, const int64_t *sstr, size_t es)
{
    tp_job j;
    j.dst = dst;
    j.src = src;
    j.es = es;
    j.r = merge_dims(rank, dims, sstr, j.d, j.s);
    if (j.r < 0)
        return;
    if (j.r == 0) {
        memcpy(dst, src, es);
        return;
    }
    int64_t total = 1;
    for (int i = 0; i < j.r; i++)
        total *= j.d[i];
    const int par = k->exec && (size_t)total * es >= TP_PAR_BYTES;
    if (j.r >= 2 && es == sizeof(float) && j.s[j.r - 2] == 1 && j.s[j.r - 1] != 1 &&
        j.d[j.r - 1] >= 4) {
        j.strips = (j.d[j.r - 2] + TP_TILE - 1) / TP_TILE;
        const int64_t units = total / (j.d[j.r - 2] * j.d[j.r - 1]) * j.strips;
        if (par)
            poprt__kctx_parallel_for(k, units, 1, tp_tiles_fn, &j);
        else
            tp_tiles_fn(&j, 0, units);
        return;
    }
    const int64_t rows = total / j.d[j.r - 1];
    if (par)
        poprt__kctx_parallel_for(k, rows, 1, tp_rows_fn, &j);
    else
        tp_rows_fn(&j, 0, rows);
}

poprt_status poprt__ref_transpose(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int r = x->rank;
    int64_t perm[POPRT__MAX_RANK], n = 0;
    const int64_t *p = poprt__attr_ints(k->node, "perm", &n);
    for (int i = 0; i < r; i++)
        perm[i] = p && n == r ? (p[i] < 0 ? p[i] + r : p[i]) : r - 1 - i;
    int64_t istr[POPRT__MAX_RANK], sstr[POPRT__MAX_RANK];
    poprt__strides(r, x->dims, istr);
    for (int i = 0; i < r; i++) {
        if (perm[i] < 0 || perm[i] >= r)
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "invalid perm");
        sstr[i] = istr[perm[i]];
    }
    if (y->numel)
        transpose_run(k, y->data, x->data, r, y->dims, sstr, poprt__ref_esize(x->dtype));
    return POPRT_OK;
}

/* ---- Concat / Split ------------------------------------------------------------- */

poprt_status poprt__ref_concat(poprt__kctx *k)
{
    poprt__tval *y = poprt__kout(k, 0);
    if (!y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing output");
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", 1), y->rank, &axis))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    size_t es = poprt__ref_esize(y->dtype);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= y->dims[i];
    for (int i = (int)axis + 1; i < y->rank; i++)
        inner *= y->dims[i];
    size_t orow = (size_t)(y->dims[axis] * inner) * es;
    size_t at = 0;
    for (int i = 0; i < k->n_in; i++) {
        const poprt__tval *x = poprt__kin(k, i);
        if (!x)
            continue;
        if (x->rank != y->rank)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "inputs differ in rank");
        size_t row = (size_t)(x->dims[axis] * inner) * es;
        if (at + row > orow)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "inputs exceed the output");
        for (int64_t o = 0; o < outer && row; o++)
            memcpy((char *)y->data + (size_t)o * orow + at, (const char *)x->data + (size_t)o * row,
                   row);
        at += row;
    }
    return POPRT_OK;
}

poprt_status poprt__ref_split(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    if (!x)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input");
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", 0), x->rank, &axis))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    size_t es = poprt__ref_esize(x->dtype);
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    size_t irow = (size_t)(x->dims[axis] * inner) * es;
    size_t at = 0;
    /* the split sizes are the inferred output dims on axis */
    for (int j = 0; j < k->n_out; j++) {
        poprt__tval *y = poprt__kout(k, j);
        if (!y)
            return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED,
                                   "omitted Split outputs are not supported");
        if (y->rank != x->rank)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output rank differs from input");
        size_t row = (size_t)(y->dims[axis] * inner) * es;
        if (at + row > irow)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "splits exceed the input");
        for (int64_t o = 0; o < outer && row; o++)
            memcpy((char *)y->data + (size_t)o * row, (const char *)x->data + (size_t)o * irow + at,
                   row);
        at += row;
    }
    return POPRT_OK;
}

/* ---- Slice -------------------------------------------------------------------- */

poprt_status poprt__ref_slice(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int r = x->rank;
    int64_t starts[POPRT__MAX_RANK], ends[POPRT__MAX_RANK], axes[POPRT__MAX_RANK],
        steps[POPRT__MAX_RANK];
    int64_t ns = 0, ne = 0, na = 0, nst = 0;
    int have_axes, have_steps;
    if (k->opset >= 10 || poprt__kin(k, 1)) {
        if (!poprt__ref_kin_ints(k, 1, starts, POPRT__MAX_RANK, &ns) ||
            !poprt__ref_kin_ints(k, 2, ends, POPRT__MAX_RANK, &ne))
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "missing starts or ends");
        have_axes = poprt__ref_kin_ints(k, 3, axes, POPRT__MAX_RANK, &na);
        have_steps = poprt__ref_kin_ints(k, 4, steps, POPRT__MAX_RANK, &nst);
    } else {
        if (!ints_in_or_attr(k, 99, "starts", starts, POPRT__MAX_RANK, &ns) ||
            !ints_in_or_attr(k, 99, "ends", ends, POPRT__MAX_RANK, &ne))
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "missing starts or ends");
        have_axes = ints_in_or_attr(k, 99, "axes", axes, POPRT__MAX_RANK, &na);
        have_steps = 0;
    }
    if (ns != ne || ns > r || (have_axes && na != ns) || (have_steps && nst != ns))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "starts/ends/axes/steps disagree");
    int64_t first[POPRT__MAX_RANK], step[POPRT__MAX_RANK], cnt[POPRT__MAX_RANK];
    for (int i = 0; i < r; i++) {
        first[i] = 0;
        step[i] = 1;
        cnt[i] = x->dims[i];
    }
    for (int64_t i = 0; i < ns; i++) {
        int64_t a = have_axes ? axes[i] : i;
        if (a < 0)
            a += r;
        if (a < 0 || a >= r)
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
        int64_t s = have_steps ? steps[i] : 1;
        if (s == 0)
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "step is zero");
        step[a] = s;
        cnt[a] = poprt__slice_axis(x->dims[a], starts[i], ends[i], s, &first[a]);
    }
    int64_t istr[POPRT__MAX_RANK], sstr[POPRT__MAX_RANK], off = 0;
    poprt__strides(r, x->dims, istr);
    for (int i = 0; i < r; i++) {
        if (cnt[i] != y->dims[i])
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape differs from the slice");
        off += first[i] * istr[i];
        sstr[i] = istr[i] * step[i];
    }
    if (y->numel) {
        size_t es = poprt__ref_esize(x->dtype);
        copy_strided(y->data, (const char *)x->data + (size_t)off * es, r, y->dims, sstr, es);
    }
    return POPRT_OK;
}

/* ---- Gather family ---------------------------------------------------------------- */

static int fix_index(int64_t *i, int64_t dim)
{
    if (*i < 0)
        *i += dim;
    return *i >= 0 && *i < dim;
}

poprt_status poprt__ref_gather(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ind = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ind || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", 0), x->rank, &axis))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    size_t es = poprt__ref_esize(x->dtype);
    int64_t outer = 1, inner = 1, dim = x->dims[axis];
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    size_t blk = (size_t)inner * es;
    char *o = y->data;
    for (int64_t a = 0; a < outer; a++) {
        const char *base = (const char *)x->data + (size_t)(a * dim) * blk;
        for (int64_t j = 0; j < ind->numel; j++) {
            int64_t i = poprt__ref_tv_int(ind, j);
            if (!fix_index(&i, dim))
                return POPRT__NODE_ERR(
                    k->node, POPRT_STATUS_RUNTIME_ERROR, "index %lld out of range [-%lld, %lld)",
                    (long long)poprt__ref_tv_int(ind, j), (long long)dim, (long long)dim);
            memcpy(o, base + (size_t)i * blk, blk);
            o += blk;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_gather_elements(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ind = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ind || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int r = x->rank;
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", 0), r, &axis) || ind->rank != r)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis or indices rank invalid");
    size_t es = poprt__ref_esize(x->dtype);
    int64_t istr[POPRT__MAX_RANK], idx[POPRT__MAX_RANK] = {0};
    poprt__strides(r, x->dims, istr);
    for (int64_t n = 0; n < ind->numel; n++) {
        int64_t off = 0;
        for (int a = 0; a < r; a++) {
            if (a == axis) {
                int64_t i = poprt__ref_tv_int(ind, n);
                if (!fix_index(&i, x->dims[a]))
                    return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "index out of range");
                off += i * istr[a];
            } else {
                if (idx[a] >= x->dims[a])
                    return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                           "indices larger than data");
                off += idx[a] * istr[a];
            }
        }
        memcpy((char *)y->data + (size_t)n * es, (const char *)x->data + (size_t)off * es, es);
        for (int j = r - 1; j >= 0; j--) {
            if (++idx[j] < ind->dims[j])
                break;
            idx[j] = 0;
        }
    }
    return POPRT_OK;
}

/* Shared walk of GatherND/ScatterND: for each index tuple, the element
 * offset of the addressed slice in data. */
typedef struct nd_plan {
    int64_t batch, per_batch, m, slice, batch_stride;
    int64_t dstr[POPRT__MAX_RANK];
} nd_plan;

static poprt_status nd_prepare(const poprt__kctx *k, const poprt__tval *data,
                               const poprt__tval *ind, int64_t b, nd_plan *p)
{
    if (ind->rank < 1 || b < 0 || b >= ind->rank || b >= data->rank)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "invalid indices rank or batch_dims");
    p->m = ind->dims[ind->rank - 1];
    if (p->m < 1 || b + p->m > data->rank)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL,
                               "indices last dim too large for data");
    p->batch = 1;
    for (int i = 0; i < b; i++)
        p->batch *= data->dims[i];
    p->per_batch = 1;
    for (int i = (int)b; i < ind->rank - 1; i++)
        p->per_batch *= ind->dims[i];
    p->slice = 1;
    for (int i = (int)(b + p->m); i < data->rank; i++)
        p->slice *= data->dims[i];
    poprt__strides(data->rank, data->dims, p->dstr);
    p->batch_stride = b > 0 ? p->dstr[b - 1] : 0;
    return POPRT_OK;
}

/* Offset (elements) of tuple t of batch bi, or -1 when out of range. */
static int64_t nd_offset(const nd_plan *p, const poprt__tval *data, const poprt__tval *ind,
                         int64_t b, int64_t bi, int64_t t)
{
    int64_t off = bi * p->batch_stride;
    int64_t base = (bi * p->per_batch + t) * p->m;
    for (int64_t j = 0; j < p->m; j++) {
        int64_t i = poprt__ref_tv_int(ind, base + j);
        if (!fix_index(&i, data->dims[b + j]))
            return -1;
        off += i * p->dstr[b + j];
    }
    return off;
}

poprt_status poprt__ref_gather_nd(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ind = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ind || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int64_t b = poprt__attr_i(k->node, "batch_dims", 0);
    nd_plan p;
    poprt_status st = nd_prepare(k, x, ind, b, &p);
    if (st)
        return st;
    size_t es = poprt__ref_esize(x->dtype), blk = (size_t)p.slice * es;
    char *o = y->data;
    for (int64_t bi = 0; bi < p.batch; bi++)
        for (int64_t t = 0; t < p.per_batch; t++) {
            int64_t off = nd_offset(&p, x, ind, b, bi, t);
            if (off < 0)
                return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "index out of range");
            memcpy(o, (const char *)x->data + (size_t)off * es, blk);
            o += blk;
        }
    return POPRT_OK;
}

/* ---- Scatter family ------------------------------------------------------------ */

enum { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static int parse_reduction(const poprt__node *n)
{
    const char *r = poprt__attr_s(n, "reduction", "none");
    if (strcmp(r, "add") == 0)
        return RED_ADD;
    if (strcmp(r, "mul") == 0)
        return RED_MUL;
    if (strcmp(r, "max") == 0)
        return RED_MAX;
    if (strcmp(r, "min") == 0)
        return RED_MIN;
    return strcmp(r, "none") == 0 ? RED_NONE : -1;
}

#define COMBINE(T)                                                                             \
    do {                                                                                       \
        T a, b;                                                                                \
        memcpy(&a, dst, sizeof a);                                                             \
        memcpy(&b, src, sizeof b);                                                             \
        a = red == RED_ADD ? (T)(a + b) : red == RED_MUL ? (T)(a * b)                          \
            : red == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);                              \
        memcpy(dst, &a, sizeof a);                                                             \
    } while (0)

/* *dst = dst (reduction) src for one element of dtype dt. */
static void combine(void *dst, const void *src, int32_t dt, int red, size_t es)
{
    if (red == RED_NONE) {
        memcpy(dst, src, es);
        return;
    }
    switch (dt) {
    case POPRT_DTYPE_FLOAT: COMBINE(float); return;
    case POPRT_DTYPE_DOUBLE: COMBINE(double); return;
    case POPRT_DTYPE_INT8: COMBINE(int8_t); return;
    case POPRT_DTYPE_UINT8: COMBINE(uint8_t); return;
    case POPRT_DTYPE_INT16: COMBINE(int16_t); return;
    case POPRT_DTYPE_UINT16: COMBINE(uint16_t); return;
    case POPRT_DTYPE_INT32: COMBINE(int32_t); return;
    case POPRT_DTYPE_UINT32: COMBINE(uint32_t); return;
    case POPRT_DTYPE_INT64: COMBINE(int64_t); return;
    case POPRT_DTYPE_UINT64: COMBINE(uint64_t); return;
    case POPRT_DTYPE_BOOL: {
        uint8_t a = *(uint8_t *)dst != 0, b = *(const uint8_t *)src != 0;
        *(uint8_t *)dst = (red == RED_ADD || red == RED_MAX) ? (a | b) : (a & b);
        return;
    }
    default: {
        double a = poprt__load_f64(dst, dt, 0), b = poprt__load_f64(src, dt, 0);
        a = red == RED_ADD   ? a + b
            : red == RED_MUL ? a * b
            : red == RED_MAX ? fmax(a, b)
                             : fmin(a, b);
        poprt__store_f64(dst, dt, 0, a);
    }
    }
}

poprt_status poprt__ref_scatter_elements(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ind = poprt__kin(k, 1), *upd = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ind || !upd || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int red = parse_reduction(k->node);
    if (red < 0)
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED, "unknown reduction");
    if (red != RED_NONE && x->dtype == POPRT_DTYPE_STRING)
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED, "reduction on strings");
    int r = x->rank;
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", 0), r, &axis) || ind->rank != r ||
        upd->rank != r)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis or ranks invalid");
    for (int a = 0; a < r; a++)
        if (ind->dims[a] != upd->dims[a])
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "indices and updates differ in shape");
    poprt_status st = same_bytes_copy(k, x, y);
    if (st)
        return st;
    size_t es = poprt__ref_esize(x->dtype);
    int64_t istr[POPRT__MAX_RANK], idx[POPRT__MAX_RANK] = {0};
    poprt__strides(r, x->dims, istr);
    for (int64_t n = 0; n < ind->numel; n++) {
        int64_t off = 0;
        for (int a = 0; a < r; a++) {
            int64_t i = a == axis ? poprt__ref_tv_int(ind, n) : idx[a];
            if (!fix_index(&i, x->dims[a]))
                return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "index out of range");
            off += i * istr[a];
        }
        combine((char *)y->data + (size_t)off * es, (const char *)upd->data + (size_t)n * es,
                x->dtype, red, es);
        for (int j = r - 1; j >= 0; j--) {
            if (++idx[j] < ind->dims[j])
                break;
            idx[j] = 0;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_scatter_nd(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ind = poprt__kin(k, 1), *upd = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ind || !upd || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int red = parse_reduction(k->node);
    if (red < 0)
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED, "unknown reduction");
    if (red != RED_NONE && x->dtype == POPRT_DTYPE_STRING)
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED, "reduction on strings");
    nd_plan p;
    poprt_status st = nd_prepare(k, x, ind, 0, &p);
    if (st)
        return st;
    if (upd->numel != p.per_batch * p.slice)
        return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                               "updates do not match indices and data");
    st = same_bytes_copy(k, x, y);
    if (st)
        return st;
    size_t es = poprt__ref_esize(x->dtype);
    const char *u = upd->data;
    for (int64_t t = 0; t < p.per_batch; t++) {
        int64_t off = nd_offset(&p, x, ind, 0, 0, t);
        if (off < 0)
            return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "index out of range");
        char *d = (char *)y->data + (size_t)off * es;
        if (red == RED_NONE) {
            memcpy(d, u, (size_t)p.slice * es);
        } else {
            for (int64_t e = 0; e < p.slice; e++)
                combine(d + (size_t)e * es, u + (size_t)e * es, x->dtype, red, es);
        }
        u += (size_t)p.slice * es;
    }
    return POPRT_OK;
}

/* TensorScatter (opset 24): writes update into a copy of past_cache along
 * the sequence axis, starting per batch row at write_indices[b] (0 when
 * absent); mode "circular" wraps around the cache length. */
poprt_status poprt__ref_tensor_scatter(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *upd = poprt__kin(k, 1), *wi = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !upd || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int r = x->rank;
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", -2), r, &axis) || axis == 0 ||
        upd->rank != r)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis or ranks invalid");
    for (int a = 0; a < r; a++)
        if (a != axis && upd->dims[a] != x->dims[a])
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "update shape differs from the cache");
    int circular = strcmp(poprt__attr_s(k->node, "mode", "linear"), "circular") == 0;
    poprt_status st = same_bytes_copy(k, x, y);
    if (st)
        return st;
    size_t es = poprt__ref_esize(x->dtype);
    int64_t batch = x->dims[0], mid = 1, inner = 1;
    for (int a = 1; a < axis; a++)
        mid *= x->dims[a];
    for (int a = (int)axis + 1; a < r; a++)
        inner *= x->dims[a];
    int64_t L = x->dims[axis], S = upd->dims[axis];
    size_t blk = (size_t)inner * es;
    for (int64_t b = 0; b < batch; b++) {
        int64_t start = wi ? poprt__ref_tv_int(wi, b) : 0;
        for (int64_t m = 0; m < mid; m++)
            for (int64_t s = 0; s < S; s++) {
                int64_t pos = start + s;
                if (circular && L > 0)
                    pos = ((pos % L) + L) % L;
                if (pos < 0 || pos >= L)
                    return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR,
                                           "write index out of range");
                memcpy((char *)y->data + (size_t)(((b * mid + m) * L + pos)) * blk,
                       (const char *)upd->data + (size_t)(((b * mid + m) * S + s)) * blk, blk);
            }
    }
    return POPRT_OK;
}

/* ---- Expand / Tile / Pad ------------------------------------------------------------ */

poprt_status poprt__ref_expand(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    if (x->rank > y->rank)
        return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "output rank below input rank");
    int64_t sstr[POPRT__MAX_RANK];
    poprt__bcast_strides(x, y->rank, y->dims, sstr);
    if (y->numel)
        copy_strided(y->data, x->data, y->rank, y->dims, sstr, poprt__ref_esize(x->dtype));
    return POPRT_OK;
}

poprt_status poprt__ref_tile(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || y->rank != x->rank)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    /* tile = copy over (repeat, dim) pairs with stride 0 for the repeat */
    int64_t d[MAXS], s[MAXS], istr[POPRT__MAX_RANK];
    poprt__strides(x->rank, x->dims, istr);
    for (int a = 0; a < x->rank; a++) {
        if (x->dims[a] == 0 ? y->dims[a] != 0 : y->dims[a] % x->dims[a] != 0)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output is not a tiling of the input");
        d[2 * a] = x->dims[a] ? y->dims[a] / x->dims[a] : 0;
        s[2 * a] = 0;
        d[2 * a + 1] = x->dims[a];
        s[2 * a + 1] = istr[a];
    }
    if (y->numel)
        copy_strided(y->data, x->data, 2 * x->rank, d, s, poprt__ref_esize(x->dtype));
    return POPRT_OK;
}

/* Padding index maps for one axis: input coordinate or -1 (constant). */
static int pad_map(int64_t *map, int64_t out, int64_t in, int64_t begin, int mode)
{
    for (int64_t o = 0; o < out; o++) {
        int64_t c = o - begin;
        if (c >= 0 && c < in) {
            map[o] = c;
            continue;
        }
        if (mode == 0 || in == 0) {
            map[o] = -1;
            if (mode != 0)
                return 0;
            continue;
        }
        if (mode == 1) { /* edge */
            c = c < 0 ? 0 : in - 1;
        } else if (mode == 2) { /* reflect (edge value not repeated) */
            if (in == 1) {
                c = 0;
            } else {
                int64_t period = 2 * (in - 1);
                c = ((c % period) + period) % period;
                if (c >= in)
                    c = period - c;
            }
        } else { /* wrap */
            c = ((c % in) + in) % in;
        }
        map[o] = c;
    }
    return 1;
}

poprt_status poprt__ref_pad(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || y->rank != x->rank)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int r = x->rank;
    const char *ms = poprt__attr_s(k->node, "mode", "constant");
    int mode = strcmp(ms, "constant") == 0 ? 0 : strcmp(ms, "edge") == 0 ? 1
             : strcmp(ms, "reflect") == 0 ? 2 : strcmp(ms, "wrap") == 0 ? 3 : -1;
    if (mode < 0)
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED, "unknown pad mode");
    int64_t pads[2 * POPRT__MAX_RANK], axes[POPRT__MAX_RANK], full[2 * POPRT__MAX_RANK], np = 0,
                                                                                         na = 0;
    int have_axes = 0;
    if (poprt__kin(k, 1)) {
        poprt__ref_kin_ints(k, 1, pads, 2 * POPRT__MAX_RANK, &np);
        have_axes = poprt__ref_kin_ints(k, 3, axes, POPRT__MAX_RANK, &na);
    } else if (!ints_in_or_attr(k, 99, "pads", pads, 2 * POPRT__MAX_RANK, &np) &&
               !ints_in_or_attr(k, 99, "paddings", pads, 2 * POPRT__MAX_RANK, &np)) {
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "missing pads");
    }
    if (np > 2 * POPRT__MAX_RANK || na > POPRT__MAX_RANK ||
        !poprt__pad_full(r, pads, np, have_axes ? axes : NULL, na, full))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "pads do not match the input rank");
    unsigned char fill[16];
    poprt__ref_zero_elem(x->dtype, fill);
    const poprt__tval *cv = poprt__kin(k, 2);
    size_t es = poprt__ref_esize(x->dtype);
    if (cv && cv->numel > 0) {
        if (cv->dtype != x->dtype)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "constant_value type differs from data");
        memcpy(fill, cv->data, es);
    } else if (!poprt__kin(k, 1) && x->dtype != POPRT_DTYPE_STRING) {
        poprt__store_f64(fill, x->dtype, 0, poprt__attr_f(k->node, "value", 0.0f));
    }
    for (int a = 0; a < r; a++)
        if (y->dims[a] != x->dims[a] + full[a] + full[a + r])
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape differs from the padding");
    if (!y->numel)
        return POPRT_OK;
    int64_t **maps = poprt__ref_alloc_maps(k, r, y->dims);
    if (!maps)
        return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (int a = 0; a < r; a++)
        if (!pad_map(maps[a], y->dims[a], x->dims[a], full[a], mode))
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL,
                                   "cannot pad an empty axis in this mode");
    int64_t istr[POPRT__MAX_RANK];
    poprt__strides(r, x->dims, istr);
    poprt__ref_gather_mapped(y->data, x->data, r, y->dims, maps, istr, es, fill);
    return POPRT_OK;
}

/* ---- Shape / Size / constants / Range ----------------------------------------------- */

static void shape_range(const poprt__node *n, int rank, int64_t *lo, int64_t *hi)
{
    int64_t s = poprt__attr_i(n, "start", 0);
    const poprt__attr *ea = poprt__node_attr(n, "end");
    int64_t e = ea ? ea->i : rank;
    if (s < 0)
        s += rank;
    if (e < 0)
        e += rank;
    s = s < 0 ? 0 : s > rank ? rank : s;
    e = e < 0 ? 0 : e > rank ? rank : e;
    *lo = s;
    *hi = e > s ? e : s;
}

poprt_status poprt__ref_shape(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int64_t lo, hi;
    shape_range(k->node, x->rank, &lo, &hi);
    if (y->numel != hi - lo)
        return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                               "output length differs from the shape");
    for (int64_t i = lo; i < hi; i++)
        ((int64_t *)y->data)[i - lo] = x->dims[i];
    return POPRT_OK;
}

poprt_status poprt__ref_size(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    *(int64_t *)y->data = poprt__tval_numel(x);
    return POPRT_OK;
}

static void fill_elems(void *dst, const void *elem, int64_t n, size_t es)
{
    char *o = dst;
    int zero = 1;
    for (size_t i = 0; i < es; i++)
        zero &= ((const unsigned char *)elem)[i] == 0;
    if (zero) {
        memset(o, 0, (size_t)n * es);
        return;
    }
    if (n <= 0)
        return;
    /* one element, then the filled part copied after itself: a few large
     * copies instead of one per element (a model whose weights are all
     * ConstantOfShape spent a fifth of its load here) */
    const size_t total = (size_t)n * es;
    size_t done = es;
    memcpy(o, elem, es);
    while (done < total) {
        const size_t k = total - done < done ? total - done : done;
        memcpy(o + done, o, k);
        done += k;
    }
}

poprt_status poprt__ref_constant_of_shape(poprt__kctx *k)
{
    poprt__tval *y = poprt__kout(k, 0);
    if (!y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing output");
    unsigned char v[16];
    poprt__ref_zero_elem(y->dtype, v);
    const poprt__attr *a = poprt__node_attr(k->node, "value");
    if (a && a->t && a->t->raw) {
        if (a->t->type.elem != y->dtype)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "value type differs from the output");
        memcpy(v, a->t->raw, poprt__ref_esize(y->dtype));
    }
    fill_elems(y->data, v, y->numel, poprt__ref_esize(y->dtype));
    return POPRT_OK;
}

poprt_status poprt__ref_constant(poprt__kctx *k)
{
    poprt__tval *y = poprt__kout(k, 0);
    if (!y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing output");
    const poprt__node *n = k->node;
    const poprt__attr *a;
    if ((a = poprt__node_attr(n, "value")) || (a = poprt__node_attr(n, "sparse_value"))) {
        if (!a->t)
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL,
                                   "value attribute holds no tensor");
        if (a->t->nbytes != y->nbytes || a->t->type.elem != y->dtype)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "value differs from the output");
        if (y->nbytes)
            memcpy(y->data, a->t->raw, y->nbytes);
        return POPRT_OK;
    }
    if ((a = poprt__node_attr(n, "value_float"))) {
        if (y->numel != 1 || y->dtype != POPRT_DTYPE_FLOAT)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "value differs from the output");
        *(float *)y->data = a->f;
    } else if ((a = poprt__node_attr(n, "value_floats"))) {
        if (y->numel != a->n || y->dtype != POPRT_DTYPE_FLOAT)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "value differs from the output");
        if (a->n)
            memcpy(y->data, a->floats, (size_t)a->n * sizeof(float));
    } else if ((a = poprt__node_attr(n, "value_int"))) {
        if (y->numel != 1 || y->dtype != POPRT_DTYPE_INT64)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "value differs from the output");
        *(int64_t *)y->data = a->i;
    } else if ((a = poprt__node_attr(n, "value_ints"))) {
        if (y->numel != a->n || y->dtype != POPRT_DTYPE_INT64)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "value differs from the output");
        if (a->n)
            memcpy(y->data, a->ints, (size_t)a->n * sizeof(int64_t));
    } else if ((a = poprt__node_attr(n, "value_string"))) {
        if (y->numel != 1 || y->dtype != POPRT_DTYPE_STRING)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "value differs from the output");
        ((const char **)y->data)[0] = a->s ? a->s : empty_string;
    } else if ((a = poprt__node_attr(n, "value_strings"))) {
        if (y->numel != a->n || y->dtype != POPRT_DTYPE_STRING)
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "value differs from the output");
        for (int64_t i = 0; i < a->n; i++)
            ((const char **)y->data)[i] = a->strings[i] ? a->strings[i] : empty_string;
    } else {
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "Constant without a value attribute");
    }
    return POPRT_OK;
}

poprt_status poprt__ref_range(poprt__kctx *k)
{
    const poprt__tval *s = poprt__kin(k, 0), *d = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!s || !d || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int32_t dt = y->dtype;
    if (poprt__dtype_is_int(dt)) {
        int64_t a = poprt__ref_tv_int(s, 0), st = poprt__ref_tv_int(d, 0);
        /* start + i * delta in two's complement, as the function body's
         * repeated additions wrap (no undefined signed overflow) */
        for (int64_t i = 0; i < y->numel; i++)
            poprt__store_i64(y->data, dt, i,
                             (int64_t)((uint64_t)a + (uint64_t)i * (uint64_t)st));
    } else if (dt == POPRT_DTYPE_FLOAT) {
        /* float arithmetic as the ONNX function body (Loop adding delta) does */
        float a = (float)poprt__ref_tv_f64(s, 0), st = (float)poprt__ref_tv_f64(d, 0);
        for (int64_t i = 0; i < y->numel; i++, a += st)
            ((float *)y->data)[i] = a;
    } else if (dt == POPRT_DTYPE_DOUBLE) {
        double a = poprt__ref_tv_f64(s, 0), st = poprt__ref_tv_f64(d, 0);
        for (int64_t i = 0; i < y->numel; i++, a += st)
            ((double *)y->data)[i] = a;
    } else {
        double a = poprt__ref_tv_f64(s, 0), st = poprt__ref_tv_f64(d, 0);
        for (int64_t i = 0; i < y->numel; i++) {
            poprt__store_f64(y->data, dt, i, a);
            /* accumulate in the element type, as the function body does */
            a = poprt__load_f64(y->data, dt, i) + st;
            unsigned char tmp[16];
            poprt__store_f64(tmp, dt, 0, a);
            a = poprt__load_f64(tmp, dt, 0);
        }
    }
    return POPRT_OK;
}

/* ---- Dropout ---------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

poprt_status poprt__ref_dropout(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0), *mask = poprt__kout(k, 1);
    if (!x || !y)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    double ratio = poprt__attr_f(k->node, "ratio", 0.5f);
    int training = 0;
    if (k->opset >= 12) {
        const poprt__tval *rt = poprt__kin(k, 1), *tm = poprt__kin(k, 2);
        ratio = rt && rt->numel ? poprt__ref_tv_f64(rt, 0) : 0.5;
        training = tm && tm->numel ? *(const uint8_t *)tm->data != 0 : 0;
    }
    if (!training || ratio == 0.0) {
        poprt_status st = same_bytes_copy(k, x, y);
        if (st)
            return st;
        if (mask) {
            if (mask->dtype == POPRT_DTYPE_BOOL)
                memset(mask->data, 1, (size_t)mask->numel);
            else
                for (int64_t i = 0; i < mask->numel; i++)
                    poprt__store_f64(mask->data, mask->dtype, i, 1.0);
        }
        return POPRT_OK;
    }
    if (ratio < 0 || ratio >= 1)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "ratio must be in [0, 1)");
    const poprt__attr *sa = poprt__node_attr(k->node, "seed");
    uint64_t state = sa ? (uint64_t)sa->i : poprt__kctx_random_seed(k);
    double scale = 1.0 / (1.0 - ratio);
    for (int64_t i = 0; i < x->numel; i++) {
        double u = (double)(splitmix64(&state) >> 11) * (1.0 / 9007199254740992.0);
        int keep = u >= ratio;
        if (x->dtype == POPRT_DTYPE_FLOAT)
            ((float *)y->data)[i] = keep ? (float)(((const float *)x->data)[i] * scale) : 0.0f;
        else
            poprt__store_f64(y->data, y->dtype, i,
                             keep ? poprt__load_f64(x->data, x->dtype, i) * scale : 0.0);
        if (mask)
            poprt__store_f64(mask->data, mask->dtype, i, keep);
    }
    return POPRT_OK;
}

/* ---- DepthToSpace / SpaceToDepth ---------------------------------------------------- */

poprt_status poprt__ref_depth_to_space(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank != 4)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "DepthToSpace needs a 4-D input");
    int64_t b = poprt__attr_i(k->node, "blocksize", 0);
    if (b <= 0 || x->dims[1] % (b * b))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL,
                               "channels not divisible by blocksize^2");
    int64_t N = x->dims[0], C = x->dims[1] / (b * b), H = x->dims[2], W = x->dims[3];
    int crd = strcmp(poprt__attr_s(k->node, "mode", "DCR"), "CRD") == 0;
    /* view the input as 6-D, then read it in the output's order */
    int64_t t[6], ts[6];
    if (crd) {
        t[0] = N; t[1] = C; t[2] = b; t[3] = b; t[4] = H; t[5] = W;
    } else {
        t[0] = N; t[1] = b; t[2] = b; t[3] = C; t[4] = H; t[5] = W;
    }
    poprt__strides(6, t, ts);
    int64_t od[6] = {N, C, H, b, W, b};
    int64_t os[6];
    if (crd) {
        int64_t s[6] = {ts[0], ts[1], ts[4], ts[2], ts[5], ts[3]};
        memcpy(os, s, sizeof os);
    } else {
        int64_t s[6] = {ts[0], ts[3], ts[4], ts[1], ts[5], ts[2]};
        memcpy(os, s, sizeof os);
    }
    if (y->numel)
        copy_strided(y->data, x->data, 6, od, os, poprt__ref_esize(x->dtype));
    return POPRT_OK;
}

poprt_status poprt__ref_space_to_depth(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank != 4)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "SpaceToDepth needs a 4-D input");
    int64_t b = poprt__attr_i(k->node, "blocksize", 0);
    if (b <= 0 || x->dims[2] % b || x->dims[3] % b)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL,
                               "spatial dims not divisible by blocksize");
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2] / b, W = x->dims[3] / b;
    int64_t t[6] = {N, C, H, b, W, b}, ts[6];
    poprt__strides(6, t, ts);
    /* output [N, b, b, C, H, W] */
    int64_t od[6] = {N, b, b, C, H, W};
    int64_t os[6] = {ts[0], ts[3], ts[5], ts[1], ts[2], ts[4]};
    if (y->numel)
        copy_strided(y->data, x->data, 6, od, os, poprt__ref_esize(x->dtype));
    return POPRT_OK;
}

/* ---- Trilu / EyeLike ----------------------------------------------------------------- */

poprt_status poprt__ref_trilu(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *kt = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank < 2)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "Trilu needs an input of rank >= 2");
    poprt_status st = same_bytes_copy(k, x, y);
    if (st)
        return st;
    int64_t kk = kt && kt->numel ? poprt__ref_tv_int(kt, 0) : 0;
    int upper = poprt__attr_i(k->node, "upper", 1) != 0;
    int64_t R = x->dims[x->rank - 2], C = x->dims[x->rank - 1];
    int64_t mats = (R * C) != 0 ? x->numel / (R * C) : 0;
    size_t es = poprt__ref_esize(x->dtype);
    for (int64_t m = 0; m < mats; m++)
        for (int64_t i = 0; i < R; i++)
            for (int64_t j = 0; j < C; j++) {
                int keep = upper ? j - i >= kk : j - i <= kk;
                if (!keep)
                    memset((char *)y->data + (size_t)((m * R + i) * C + j) * es, 0, es);
            }
    return POPRT_OK;
}

poprt_status poprt__ref_eye_like(poprt__kctx *k)
{
    poprt__tval *y = poprt__kout(k, 0);
    if (!y || y->rank != 2)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "EyeLike needs a 2-D output");
    int64_t kk = poprt__attr_i(k->node, "k", 0);
    size_t es = poprt__ref_esize(y->dtype);
    memset(y->data, 0, y->nbytes);
    for (int64_t i = 0; i < y->dims[0]; i++) {
        int64_t j = i + kk;
        if (j >= 0 && j < y->dims[1])
            poprt__store_f64((char *)y->data + (size_t)(i * y->dims[1] + j) * es, y->dtype, 0, 1.0);
    }
    return POPRT_OK;
}

/* ---- NonZero / Compress / ReverseSequence ----------------------------------------------- */

static int elem_nonzero(const poprt__tval *x, int64_t i, size_t es)
{
    if (x->dtype == POPRT_DTYPE_STRING) {
        const char *s = ((const char *const *)x->data)[i];
        return s && *s;
    }
    if (poprt__dtype_is_float(x->dtype))
        return poprt__ref_tv_f64(x, i) != 0.0;
    const unsigned char *p = (const unsigned char *)x->data + (size_t)i * es;
    for (size_t b = 0; b < es; b++)
        if (p[b])
            return 1;
    return 0;
}

poprt_status poprt__ref_nonzero(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    if (!x)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input");
    size_t es = poprt__ref_esize(x->dtype);
    int64_t nnz = 0;
    for (int64_t i = 0; i < x->numel; i++)
        nnz += elem_nonzero(x, i, es);
    int r = x->rank;
    int64_t dims[2] = {r, nnz};
    poprt_status st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_INT64, 2, dims);
    if (st)
        return st;
    int64_t *o = poprt__kout(k, 0)->data;
    int64_t idx[POPRT__MAX_RANK] = {0}, c = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        if (elem_nonzero(x, i, es)) {
            for (int a = 0; a < r; a++)
                o[a * nnz + c] = idx[a];
            c++;
        }
        for (int j = r - 1; j >= 0; j--) {
            if (++idx[j] < x->dims[j])
                break;
            idx[j] = 0;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_compress(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *cond = poprt__kin(k, 1);
    if (!x || !cond)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input");
    const poprt__attr *aa = poprt__node_attr(k->node, "axis");
    int64_t axis = -1, dims[POPRT__MAX_RANK];
    int r = x->rank;
    if (aa && !poprt__norm_axis(aa->i, r, &axis))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    int64_t len = aa ? x->dims[axis] : x->numel;
    if (cond->numel > len)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "condition longer than the axis");
    int64_t cnt = 0;
    for (int64_t i = 0; i < cond->numel; i++)
        cnt += ((const uint8_t *)cond->data)[i] != 0;
    int orank = aa ? r : 1;
    if (aa) {
        memcpy(dims, x->dims, sizeof(int64_t) * (size_t)r);
        dims[axis] = cnt;
    } else {
        dims[0] = cnt;
    }
    poprt_status st = poprt__kctx_alloc_output(k, 0, x->dtype, orank, dims);
    if (st)
        return st;
    poprt__tval *y = poprt__kout(k, 0);
    size_t es = poprt__ref_esize(x->dtype);
    int64_t outer = 1, inner = 1;
    if (aa) {
        for (int i = 0; i < axis; i++)
            outer *= x->dims[i];
        for (int i = (int)axis + 1; i < r; i++)
            inner *= x->dims[i];
    }
    size_t blk = (size_t)inner * es;
    char *o = y->data;
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < cond->numel; i++)
            if (((const uint8_t *)cond->data)[i]) {
                memcpy(o, (const char *)x->data + (size_t)(a * len + i) * blk, blk);
                o += blk;
            }
    return POPRT_OK;
}

poprt_status poprt__ref_reverse_sequence(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *lens = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !lens || !y || x->rank < 2)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int64_t ba = poprt__attr_i(k->node, "batch_axis", 1),
            ta = poprt__attr_i(k->node, "time_axis", 0);
    if (!((ba == 0 && ta == 1) || (ba == 1 && ta == 0)))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL,
                               "batch_axis/time_axis must be 0 and 1");
    poprt_status st = same_bytes_copy(k, x, y);
    if (st)
        return st;
    int64_t B = x->dims[ba], T = x->dims[ta], inner = 1;
    for (int i = 2; i < x->rank; i++)
        inner *= x->dims[i];
    if (lens->numel != B)
        return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                               "sequence_lens length differs from batch");
    size_t blk = (size_t)inner * poprt__ref_esize(x->dtype);
    for (int64_t b = 0; b < B; b++) {
        int64_t L = poprt__ref_tv_int(lens, b);
        if (L < 0 || L > T)
            return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "sequence length out of range");
        for (int64_t t = 0; t < L; t++) {
            int64_t src = L - 1 - t;
            int64_t oi = ba == 0 ? b * T + t : t * B + b;
            int64_t ii = ba == 0 ? b * T + src : src * B + b;
            memcpy((char *)y->data + (size_t)oi * blk, (const char *)x->data + (size_t)ii * blk,
                   blk);
        }
    }
    return POPRT_OK;
}

/* ---- OneHot ----------------------------------------------------------------------------- */

poprt_status poprt__ref_one_hot(poprt__kctx *k)
{
    const poprt__tval *ind = poprt__kin(k, 0), *dep = poprt__kin(k, 1), *vals = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!ind || !dep || !vals || !y || vals->numel != 2)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing or invalid inputs");
    int64_t depth;
    if (poprt__dtype_is_float(dep->dtype)) {
        double f = poprt__ref_tv_f64(dep, 0);
        if (!(f >= 1.0 && f < 9.2e18)) /* NaN, below 1 or past int64 */
            return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "depth is not a positive integer");
        depth = (int64_t)f;
    } else {
        depth = poprt__ref_tv_int(dep, 0);
    }
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", -1), ind->rank + 1, &axis))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    size_t es = poprt__ref_esize(vals->dtype);
    const char *off = vals->data, *on = off + es;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= ind->dims[i];
    for (int i = (int)axis; i < ind->rank; i++)
        inner *= ind->dims[i];
    if (depth < 1)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "depth is not positive");
    if (outer * inner == 0)
        return POPRT_OK; /* no indices: an empty output, whatever the depth */
    if (y->numel / (outer * inner) != depth || y->numel % (outer * inner) != 0)
        return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "output size differs from depth");
    int isf = poprt__dtype_is_float(ind->dtype);
    char *o = y->data;
    /* every element off, then the one "on" per index: O(output) */
    for (int64_t e = 0; e < y->numel; e++)
        memcpy(o + (size_t)e * es, off, es);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t v = -depth - 1; /* NaN and values past int64 match no class */
            if (isf) {
                double f = poprt__ref_tv_f64(ind, a * inner + i);
                if (f > -9.2e18 && f < 9.2e18)
                    v = (int64_t)f;
            } else {
                v = poprt__ref_tv_int(ind, a * inner + i);
            }
            if (v < 0)
                v += depth;
            if (v >= 0 && v < depth) /* out of range: the row stays off */
                memcpy(o + (size_t)((a * depth + v) * inner + i) * es, on, es);
        }
    return POPRT_OK;
}

/* ---- CumSum / CumProd ----------------------------------------------------------------- */

/* Step by step along the axis, a whole row of `inner` values at a time
 * (contiguous reads and writes; the axis walked one value at a time per
 * column went a row apart per step: 2.2x ONNX Runtime's time along axis 1 of
 * [64, 128, 768]): each element's running value is the previous step's
 * output, so the operations and their order per element are those of one
 * accumulator. Exclusive: step t holds the values before t (ID first). */
#define CUM_LOOP(T, OP, ID)                                                                    \
    do {                                                                                       \
        const T *xi = x->data;                                                                 \
        T *yo = y->data;                                                                       \
        for (int64_t a = 0; a < outer; a++)                                                    \
            for (int64_t t = 0; t < len; t++) {                                                \
                const int64_t tt = reverse ? len - 1 - t : t;                                  \
                T *yr = yo + (a * len + tt) * inner;                                           \
                if (t == 0) {                                                                  \
                    const T *xr = xi + (a * len + tt) * inner;                                 \
                    for (int64_t i = 0; i < inner; i++)                                        \
                        yr[i] = exclusive ? (T)(ID) : (T)((T)(ID)OP xr[i]);                    \
                    continue;                                                                  \
                }                                                                              \
                const int64_t pt = reverse ? tt + 1 : tt - 1; /* the step before */           \
                const T *yp = yo + (a * len + pt) * inner;                                     \
                const T *xr = xi + (a * len + (exclusive ? pt : tt)) * inner;                  \
                for (int64_t i = 0; i < inner; i++)                                            \
                    yr[i] = (T)(yp[i] OP xr[i]);                                               \
            }                                                                                  \
    } while (0)

static poprt_status cumulative(poprt__kctx *k, int prod)
{
    const poprt__tval *x = poprt__kin(k, 0), *ax = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ax || !y || ax->numel < 1)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int64_t axis;
    if (!poprt__norm_axis(poprt__ref_tv_int(ax, 0), x->rank, &axis))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    int exclusive = poprt__attr_i(k->node, "exclusive", 0) != 0;
    int reverse = poprt__attr_i(k->node, "reverse", 0) != 0;
    int64_t outer = 1, inner = 1, len = x->dims[axis];
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = (int)axis + 1; i < x->rank; i++)
        inner *= x->dims[i];
    switch (x->dtype) {
#define CASE(DT, T)                                                                            \
    case DT:                                                                                   \
        if (prod)                                                                              \
            CUM_LOOP(T, *, 1);                                                                 \
        else                                                                                   \
            CUM_LOOP(T, +, 0);                                                                 \
        break;
        CASE(POPRT_DTYPE_FLOAT, float)
        CASE(POPRT_DTYPE_DOUBLE, double)
        CASE(POPRT_DTYPE_INT32, int32_t)
        CASE(POPRT_DTYPE_INT64, int64_t)
        CASE(POPRT_DTYPE_UINT32, uint32_t)
        CASE(POPRT_DTYPE_UINT64, uint64_t)
        CASE(POPRT_DTYPE_INT8, int8_t)
        CASE(POPRT_DTYPE_UINT8, uint8_t)
        CASE(POPRT_DTYPE_INT16, int16_t)
        CASE(POPRT_DTYPE_UINT16, uint16_t)
#undef CASE
    default:
        if (!poprt__dtype_is_float(x->dtype))
            return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED, "unsupported element type");
        /* half types: accumulate in float, round each partial result */
        for (int64_t a = 0; a < outer; a++)
            for (int64_t i = 0; i < inner; i++) {
                double acc = prod ? 1.0 : 0.0;
                for (int64_t t = 0; t < len; t++) {
                    int64_t tt = reverse ? len - 1 - t : t;
                    int64_t p = (a * len + tt) * inner + i;
                    double v = poprt__load_f64(x->data, x->dtype, p);
                    if (exclusive)
                        poprt__store_f64(y->data, y->dtype, p, acc);
                    acc = prod ? acc * v : acc + v;
                    if (!exclusive)
                        poprt__store_f64(y->data, y->dtype, p, acc);
                    unsigned char tmp[16];
                    poprt__store_f64(tmp, y->dtype, 0, acc);
                    acc = poprt__load_f64(tmp, y->dtype, 0);
                }
            }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_cumsum(poprt__kctx *k) { return cumulative(k, 0); }
poprt_status poprt__ref_cumprod(poprt__kctx *k) { return cumulative(k, 1); }

/* ---- CenterCropPad / Col2Im ---------------------------------------------------------------- */

poprt_status poprt__ref_center_crop_pad(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || y->rank != x->rank)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    int r = x->rank;
    int64_t **maps = poprt__ref_alloc_maps(k, r, y->dims);
    if (!maps)
        return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (int a = 0; a < r; a++) {
        int64_t in = x->dims[a], out = y->dims[a];
        for (int64_t o = 0; o < out; o++) {
            int64_t c = in >= out ? o + (in - out) / 2 : o - (out - in) / 2;
            maps[a][o] = c >= 0 && c < in ? c : -1;
        }
    }
    unsigned char fill[16];
    poprt__ref_zero_elem(x->dtype, fill);
    int64_t istr[POPRT__MAX_RANK];
    poprt__strides(r, x->dims, istr);
    if (y->numel)
        poprt__ref_gather_mapped(y->data, x->data, r, y->dims, maps, istr,
                                 poprt__ref_esize(x->dtype), fill);
    return POPRT_OK;
}

poprt_status poprt__ref_col2im(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    int64_t img[POPRT__MAX_RANK], blkd[POPRT__MAX_RANK], ni = 0, nb = 0;
    if (!x || !y || x->rank != 3 || !poprt__ref_kin_ints(k, 1, img, POPRT__MAX_RANK, &ni) ||
        !poprt__ref_kin_ints(k, 2, blkd, POPRT__MAX_RANK, &nb) || ni != nb || ni < 1 ||
        ni > POPRT__MAX_RANK - 2)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "invalid inputs");
    int nd = (int)ni;
    int64_t dil[POPRT__MAX_RANK], str[POPRT__MAX_RANK], pads[2 * POPRT__MAX_RANK], n;
    const int64_t *a;
    for (int d = 0; d < nd; d++) {
        dil[d] = str[d] = 1;
        pads[d] = pads[d + nd] = 0;
    }
    if ((a = poprt__attr_ints(k->node, "dilations", &n)) && n == nd)
        memcpy(dil, a, sizeof(int64_t) * (size_t)nd);
    if ((a = poprt__attr_ints(k->node, "strides", &n)) && n == nd)
        memcpy(str, a, sizeof(int64_t) * (size_t)nd);
    if ((a = poprt__attr_ints(k->node, "pads", &n)) && n == 2 * nd)
        memcpy(pads, a, sizeof(int64_t) * (size_t)(2 * nd));
    int64_t K = 1, L = 1, grid[POPRT__MAX_RANK], ostr[POPRT__MAX_RANK];
    for (int d = 0; d < nd; d++) {
        K *= blkd[d];
        grid[d] = (img[d] + pads[d] + pads[d + nd] - (dil[d] * (blkd[d] - 1) + 1)) / str[d] + 1;
        L *= grid[d];
    }
    if (K <= 0 || x->dims[1] % K || x->dims[2] != L)
        return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                               "input does not match image and block shapes");
    int64_t N = x->dims[0], C = x->dims[1] / K, P = 1;
    poprt__strides(nd, img, ostr);
    for (int d = 0; d < nd; d++)
        P *= img[d];
    int isf = x->dtype == POPRT_DTYPE_FLOAT;
    memset(y->data, 0, y->nbytes);
    for (int64_t b = 0; b < N; b++)
        for (int64_t c = 0; c < C; c++) {
            int64_t ybase = (b * C + c) * P;
            int64_t kk[POPRT__MAX_RANK] = {0};
            for (int64_t ki = 0; ki < K; ki++) {
                int64_t xbase = (b * C * K + c * K + ki) * L;
                int64_t ll[POPRT__MAX_RANK] = {0};
                for (int64_t li = 0; li < L; li++) {
                    int64_t off = 0;
                    int in = 1;
                    for (int d = 0; d < nd; d++) {
                        int64_t p = ll[d] * str[d] - pads[d] + kk[d] * dil[d];
                        if (p < 0 || p >= img[d])
                            in = 0;
                        off += p * ostr[d];
                    }
                    if (in) {
                        if (isf)
                            ((float *)y->data)[ybase + off] += ((const float *)x->data)[xbase + li];
                        else
                            poprt__store_f64(y->data, y->dtype, ybase + off,
                                             poprt__load_f64(y->data, y->dtype, ybase + off) +
                                                 poprt__ref_tv_f64(x, xbase + li));
                    }
                    for (int d = nd - 1; d >= 0; d--) {
                        if (++ll[d] < grid[d])
                            break;
                        ll[d] = 0;
                    }
                }
                for (int d = nd - 1; d >= 0; d--) {
                    if (++kk[d] < blkd[d])
                        break;
                    kk[d] = 0;
                }
            }
        }
    return POPRT_OK;
}

