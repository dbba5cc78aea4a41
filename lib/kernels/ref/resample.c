/* Reference kernels of the tensor family that resample: Resize (and
 * Upsample), GridSample, AffineGrid. The output plan comes from
 * lib/ir/geom.h (poprt__resize_plan), as inference computes it. */
#include <math.h>
#include <string.h>
#include "kernels/ref/tensor.h"
#include "kernels/ref/util.h"

/* ---- Resize / Upsample --------------------------------------------------------------------- */

enum { CT_HALF, CT_HALF_SYM, CT_PYTORCH, CT_ALIGN, CT_ASYM, CT_TF_CROP, CT_TF_NN };
enum { NM_PREFER_FLOOR, NM_PREFER_CEIL, NM_FLOOR, NM_CEIL, NM_SIMPLE };

static double resize_coord(int ct, double x, double scale, int64_t in, int64_t out,
                           double r0, double r1, int *outside)
{
    *outside = 0;
    switch (ct) {
    case CT_HALF_SYM: {
        double adj = (double)out / (scale * (double)in);
        double center = (double)in / 2.0;
        return center * (1.0 - adj) + (x + 0.5) / scale - 0.5;
    }
    case CT_PYTORCH:
        return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case CT_ALIGN:
        return out == 1 ? 0.0 : x * (double)(in - 1) / (double)(out - 1);
    case CT_ASYM:
        return x / scale;
    case CT_TF_NN:
        return (x + 0.5) / scale;
    case CT_TF_CROP: {
        double v =
            out > 1 ? r0 * (double)(in - 1) + x * (r1 - r0) * (double)(in - 1) / (double)(out - 1)
                    : 0.5 * (r0 + r1) * (double)(in - 1);
        if (v < 0 || v > (double)(in - 1))
            *outside = 1;
        return v;
    }
    default:
        return (x + 0.5) / scale - 0.5;
    }
}

static double cubic_w(double d, double A)
{
    d = fabs(d);
    if (d <= 1)
        return ((A + 2) * d - (A + 3)) * d * d + 1;
    if (d < 2)
        return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
    return 0;
}

typedef struct resize_params {
    int mode; /* 0 nearest, 1 linear, 2 cubic */
    int ct, nm, antialias, exclude;
    double cubic_a, extrap;
} resize_params;

/* The kernel's stretch along an axis of scale `scale` (antialiased
 * downsampling widens it) and the first tap's offset: an output takes
 * 2 - 2 * start taps. */
static double resize_stretch(const resize_params *p, double scale)
{
    return p->antialias && scale < 1.0 ? scale : 1.0;
}
static int64_t resize_start(const resize_params *p, double s)
{
    return p->mode == 1 ? (int64_t)floor(-1.0 / s) + 1 : (int64_t)floor(-2.0 / s) + 1;
}

/* Taps of output coordinate xo along an axis: n indices and weights. */
static int64_t resize_taps(const resize_params *p, double x, double scale, int64_t in,
                           int64_t *idx, double *w)
{
    double s = resize_stretch(p, scale);
    int64_t start = resize_start(p, s);
    int64_t n = 2 - 2 * start;
    double base = ceil(x) - 1.0; /* the ratio below lies in (0, 1] */
    double ratio = x - base;
    double sum = 0;
    for (int64_t j = 0; j < n; j++) {
        double d = ((double)(start + j) - ratio) * s;
        double wj = p->mode == 1 ? (1 - fabs(d) > 0 ? 1 - fabs(d) : 0) : cubic_w(d, p->cubic_a);
        int64_t i = (int64_t)base + start + j;
        if (i < 0 || i >= in) {
            if (p->exclude)
                wj = 0;
            i = i < 0 ? 0 : in - 1;
        }
        idx[j] = i;
        w[j] = wj;
        sum += wj;
    }
    if ((p->antialias || p->exclude) && sum != 0)
        for (int64_t j = 0; j < n; j++)
            w[j] /= sum;
    return n;
}

static int64_t nearest_pick(double x, int nm, int down)
{
    double f = floor(x);
    if (x == f)
        return (int64_t)f;
    double r = x - f;
    switch (nm) {
    case NM_PREFER_CEIL:
        return (int64_t)(r < 0.5 ? f : f + 1);
    case NM_FLOOR:
        return (int64_t)f;
    case NM_CEIL:
        return (int64_t)f + 1;
    case NM_SIMPLE:
        return (int64_t)(down ? f + 1 : f);
    default:
        return (int64_t)(r <= 0.5 ? f : f + 1);
    }
}

/* The common case by planes: float32 data whose axes before the last two
 * are kept as they are, resized on the last two by nearest or two-tap
 * linear interpolation (no antialiasing downsample): each output row from
 * at most two input rows, spread over the threads. The operations and
 * their order are those of the generic code below (nearest: the gather;
 * linear: the rows' pass, then the columns', in double, zero weights
 * skipped, an axis whose size and scale stay 1 untouched), so the results
 * are the same bits. */
typedef struct resize_planes {
    const float *x;
    float *y;
    int64_t H, W, OH, OW;
    int mode;
    /* nearest: the maps (-1: outside, the fill value) */
    const int64_t *mh, *mw;
    float fill;
    /* linear: per output row / column two taps and weights and whether it
     * lies outside (tf_crop_and_resize); kept: the axis is untouched */
    const int64_t *th, *tw;
    const double *wh, *ww;
    const unsigned char *eh, *ew;
    int keep_h, keep_w;
    double extrap;
} resize_planes;

/* Output rows [r0, r1) (row r: plane r / OH, row r % OH); tmp: W doubles,
 * the rows' pass of the current output row (linear). A row whose source
 * is the previous row's (an upsampled row) is a copy of it. */
static void resize_rows(const resize_planes *t, int64_t r0, int64_t r1, double *tmp)
{
    for (int64_t r = r0; r < r1; r++) {
        const int64_t q = r / t->OH, oh = r % t->OH;
        const float *xp = t->x + q * t->H * t->W;
        float *yr = t->y + r * t->OW;
        int same = r > r0 && oh > 0;
        if (t->mode == 0) {
            const int64_t ih = t->mh[oh];
            if (same && ih == t->mh[oh - 1]) {
                memcpy(yr, yr - t->OW, (size_t)t->OW * sizeof(float));
                continue;
            }
            if (ih < 0) {
                for (int64_t ow = 0; ow < t->OW; ow++)
                    yr[ow] = t->fill;
                continue;
            }
            const float *xr = xp + ih * t->W;
            for (int64_t ow = 0; ow < t->OW; ow++)
                yr[ow] = t->mw[ow] < 0 ? t->fill : xr[t->mw[ow]];
            continue;
        }
        if (t->keep_h) {
            same = 0;
            for (int64_t iw = 0; iw < t->W; iw++)
                tmp[iw] = xp[oh * t->W + iw];
        } else {
            const int64_t *ti = t->th + 2 * oh;
            const double *tw = t->wh + 2 * oh;
            same = same && t->eh[oh] == t->eh[oh - 1] && ti[0] == ti[-2] && ti[1] == ti[-1] &&
                   tw[0] == tw[-2] && tw[1] == tw[-1];
            if (same) {
                memcpy(yr, yr - t->OW, (size_t)t->OW * sizeof(float));
                continue;
            }
            /* 0, then each tap with a weight, as the generic pass adds them */
            const float *x0 = xp + ti[0] * t->W, *x1 = xp + ti[1] * t->W;
            const double w0 = tw[0], w1 = tw[1];
            if (t->eh[oh])
                for (int64_t iw = 0; iw < t->W; iw++)
                    tmp[iw] = t->extrap;
            else if (w0 != 0 && w1 != 0)
                for (int64_t iw = 0; iw < t->W; iw++)
                    tmp[iw] = (0.0 + w0 * (double)x0[iw]) + w1 * (double)x1[iw];
            else if (w0 != 0 || w1 != 0)
                for (int64_t iw = 0; iw < t->W; iw++)
                    tmp[iw] = 0.0 + (w0 != 0 ? w0 * (double)x0[iw] : w1 * (double)x1[iw]);
            else
                for (int64_t iw = 0; iw < t->W; iw++)
                    tmp[iw] = 0.0;
        }
        if (t->keep_w) {
            for (int64_t ow = 0; ow < t->OW; ow++)
                yr[ow] = (float)tmp[ow];
            continue;
        }
        for (int64_t ow = 0; ow < t->OW; ow++) {
            double v = t->extrap;
            if (!t->ew[ow]) {
                v = 0;
                for (int j = 0; j < 2; j++)
                    if (t->ww[2 * ow + j] != 0)
                        v += t->ww[2 * ow + j] * tmp[t->tw[2 * ow + j]];
            }
            yr[ow] = (float)v;
        }
    }
}

/* The rows, split into lanes of contiguous runs, each lane with its own
 * row of doubles. */
#define RESIZE_LANES 8
typedef struct resize_lanes {
    const resize_planes *t;
    int64_t rows, lanes;
    double *tmp; /* lanes x W */
} resize_lanes;

static void resize_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const resize_lanes *j = ctx;
    for (int64_t l = l0; l < l1; l++)
        resize_rows(j->t, j->rows * l / j->lanes, j->rows * (l + 1) / j->lanes,
                    j->tmp ? j->tmp + l * j->t->W : NULL); /* (nearest: none) */
}

static poprt_status resize_planes_run(poprt__kctx *k, const resize_planes *t, int64_t rows)
{
    resize_lanes j = {t, rows, poprt__ceil_div(rows, poprt__ref_grain(4 * t->OW, 1 << 14)), NULL};
    if (j.lanes > RESIZE_LANES)
        j.lanes = RESIZE_LANES;
    if (j.lanes < 1)
        j.lanes = 1;
    if (t->mode == 1 &&
        !(j.tmp = poprt__kctx_scratch(k, (size_t)(j.lanes * t->W) * sizeof(double))))
        return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    poprt__kctx_parallel_for(k, j.lanes, 1, resize_lane_fn, &j);
    return POPRT_OK;
}

/* An axis the generic linear code leaves untouched. */
static int resize_axis_kept(int64_t in, int64_t out, double eff, int ct)
{
    return in == out && eff == 1.0 && ct != CT_TF_CROP;
}

/* The taps of every output coordinate along one axis (n per output, the
 * return value; 0: out of scratch memory) and whether each lies outside
 * (tf_crop_and_resize), in k's scratch. */
static int64_t resize_axis_taps(poprt__kctx *k, const resize_params *p, double eff, int64_t in,
                                int64_t out, double r0, double r1, int64_t **ti, double **tw,
                                unsigned char **ext)
{
    const int64_t n = 2 - 2 * resize_start(p, resize_stretch(p, eff));
    *ti = poprt__kctx_scratch(k, (size_t)(out * n) * sizeof(int64_t));
    *tw = poprt__kctx_scratch(k, (size_t)(out * n) * sizeof(double));
    *ext = poprt__kctx_scratch(k, (size_t)out + 1);
    if (!*ti || !*tw || !*ext)
        return 0;
    for (int64_t o = 0; o < out; o++) {
        int outside;
        double c = resize_coord(p->ct, (double)o, eff, in, out, r0, r1, &outside);
        (*ext)[o] = (unsigned char)outside;
        resize_taps(p, c, eff, in, *ti + o * n, *tw + o * n);
    }
    return n;
}

/* Two-tap linear taps of an axis for the plane path; 0 when an output
 * needs more (antialiased downsampling) or memory ran out. */
static int resize_two_taps(poprt__kctx *k, const resize_params *p, double eff, int64_t in,
                           int64_t out, double r0, double r1, int64_t **ti, double **tw,
                           unsigned char **ext)
{
    return resize_start(p, resize_stretch(p, eff)) == 0 &&
           resize_axis_taps(k, p, eff, in, out, r0, r1, ti, tw, ext) == 2;
}

poprt_status poprt__ref_resize(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || y->rank != x->rank)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "missing input or output");
    const poprt__node *node = k->node;
    int r = x->rank;
    int upsample = strcmp(node->op_type, "Upsample") == 0;
    int legacy = upsample || k->opset < 11;
    float scales[POPRT__MAX_RANK];
    int64_t ns = 0, sizes[POPRT__MAX_RANK], nsz = 0, axes[POPRT__MAX_RANK], na = 0;
    double roi[2 * POPRT__MAX_RANK];
    int64_t nroi = 0;
    const poprt__tval *st = NULL, *sz = NULL, *rt = NULL;
    if (legacy) {
        st = poprt__kin(k, 1);
        if (!st) {
            const float *f = poprt__attr_floats(node, "scales", &ns);
            for (int64_t i = 0; f && i < ns && i < POPRT__MAX_RANK; i++)
                scales[i] = f[i];
        }
    } else {
        rt = poprt__kin(k, 1);
        st = poprt__kin(k, 2);
        sz = poprt__kin(k, 3);
    }
    if (st) {
        ns = st->numel;
        for (int64_t i = 0; i < ns && i < POPRT__MAX_RANK; i++)
            scales[i] = (float)poprt__ref_tv_f64(st, i);
    }
    if (sz)
        poprt__ref_kin_ints(k, 3, sizes, POPRT__MAX_RANK, &nsz);
    if (rt) {
        nroi = rt->numel;
        for (int64_t i = 0; i < nroi && i < 2 * POPRT__MAX_RANK; i++)
            roi[i] = poprt__ref_tv_f64(rt, i);
    }
    const int64_t *ap = poprt__attr_ints(node, "axes", &na);
    if (na > POPRT__MAX_RANK || ns > POPRT__MAX_RANK || nsz > POPRT__MAX_RANK ||
        nroi > 2 * POPRT__MAX_RANK)
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "too many scales, sizes or axes");
    for (int64_t i = 0; i < na; i++)
        axes[i] = ap[i] < 0 ? ap[i] + r : ap[i];
    int64_t odims[POPRT__MAX_RANK];
    double eff[POPRT__MAX_RANK];
    if (!poprt__resize_plan(node, r, x->dims, ns ? scales : NULL, ns, nsz ? sizes : NULL, nsz,
                            ap ? axes : NULL, na, odims, eff))
        return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL, "invalid scales or sizes");
    for (int a = 0; a < r; a++)
        if (odims[a] != y->dims[a])
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape differs from the resize");
    /* per-axis roi [start, end] (normalised), default the whole axis */
    double r0[POPRT__MAX_RANK], r1[POPRT__MAX_RANK];
    for (int a = 0; a < r; a++) {
        r0[a] = 0.0;
        r1[a] = 1.0;
    }
    if (nroi) {
        int64_t nax = ap ? na : r;
        if (nroi != 2 * nax)
            return poprt__ref_kerr(k, POPRT_STATUS_INVALID_MODEL,
                                   "roi length must be twice the axes");
        for (int64_t i = 0; i < nax; i++) {
            int64_t a = ap ? axes[i] : i;
            r0[a] = roi[i];
            r1[a] = roi[i + nax];
        }
    }
    resize_params p;
    const char *ms = poprt__attr_s(node, "mode", "nearest");
    p.mode = strcmp(ms, "nearest") == 0 ? 0
           : (strcmp(ms, "linear") == 0 || strcmp(ms, "bilinear") == 0) ? 1
           : strcmp(ms, "cubic") == 0 ? 2 : -1;
    if (p.mode < 0)
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED, "unknown resize mode");
    const char *cs =
        legacy ? "asymmetric" : poprt__attr_s(node, "coordinate_transformation_mode", "half_pixel");
    p.ct = strcmp(cs, "half_pixel") == 0 ? CT_HALF
         : strcmp(cs, "half_pixel_symmetric") == 0 ? CT_HALF_SYM
         : strcmp(cs, "pytorch_half_pixel") == 0 ? CT_PYTORCH
         : strcmp(cs, "align_corners") == 0 ? CT_ALIGN
         : strcmp(cs, "asymmetric") == 0 ? CT_ASYM
         : strcmp(cs, "tf_crop_and_resize") == 0 ? CT_TF_CROP
         : strcmp(cs, "tf_half_pixel_for_nn") == 0 ? CT_TF_NN : -1;
    if (p.ct < 0)
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED,
                               "unknown coordinate_transformation_mode");
    const char *ns_ = poprt__attr_s(node, "nearest_mode", "round_prefer_floor");
    p.nm = upsample ? NM_FLOOR : legacy ? NM_SIMPLE
         : strcmp(ns_, "round_prefer_ceil") == 0 ? NM_PREFER_CEIL
         : strcmp(ns_, "floor") == 0 ? NM_FLOOR
         : strcmp(ns_, "ceil") == 0 ? NM_CEIL : NM_PREFER_FLOOR;
    p.antialias = poprt__attr_i(node, "antialias", 0) != 0;
    p.exclude = poprt__attr_i(node, "exclude_outside", 0) != 0;
    p.cubic_a = poprt__attr_f(node, "cubic_coeff_a", -0.75f);
    p.extrap = poprt__attr_f(node, "extrapolation_value", 0.0f);
    if (!y->numel)
        return POPRT_OK;
    if (x->numel == 0)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "cannot resize an empty input");
    size_t es = poprt__ref_esize(x->dtype);

    if (p.mode == 0) {
        int64_t **maps = poprt__ref_alloc_maps(k, r, y->dims);
        if (!maps)
            return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
        for (int a = 0; a < r; a++)
            for (int64_t o = 0; o < y->dims[a]; o++) {
                int outside;
                double c = resize_coord(p.ct, (double)o, eff[a], x->dims[a], y->dims[a], r0[a],
                                        r1[a], &outside);
                int64_t i = nearest_pick(c, p.nm, eff[a] < 1.0);
                i = i < 0 ? 0 : i >= x->dims[a] ? x->dims[a] - 1 : i;
                maps[a][o] = outside ? -1 : i;
            }
        unsigned char fill[16];
        poprt__ref_zero_elem(x->dtype, fill);
        if (x->dtype != POPRT_DTYPE_STRING)
            poprt__store_f64(fill, x->dtype, 0, p.extrap);
        int planes = x->dtype == POPRT_DTYPE_FLOAT && y->dtype == POPRT_DTYPE_FLOAT && r >= 2;
        for (int a = 0; planes && a < r - 2; a++)
            for (int64_t o = 0; planes && o < y->dims[a]; o++)
                planes = x->dims[a] == y->dims[a] && maps[a][o] == o;
        if (planes) {
            resize_planes t = {.x = x->data, .y = y->data, .H = x->dims[r - 2],
                               .W = x->dims[r - 1], .OH = y->dims[r - 2], .OW = y->dims[r - 1],
                               .mode = 0, .mh = maps[r - 2], .mw = maps[r - 1]};
            memcpy(&t.fill, fill, sizeof t.fill);
            return resize_planes_run(k, &t, y->numel / t.OW);
        }
        int64_t istr[POPRT__MAX_RANK];
        poprt__strides(r, x->dims, istr);
        poprt__ref_gather_mapped(y->data, x->data, r, y->dims, maps, istr, es, fill);
        return POPRT_OK;
    }
    if (!poprt__dtype_is_float(x->dtype) && !poprt__dtype_is_int(x->dtype))
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED,
                               "linear/cubic resize needs a numeric type");

    if (p.mode == 1 && x->dtype == POPRT_DTYPE_FLOAT && y->dtype == POPRT_DTYPE_FLOAT && r >= 2) {
        int planes = 1;
        for (int a = 0; a < r - 2; a++)
            planes &= resize_axis_kept(x->dims[a], y->dims[a], eff[a], p.ct);
        const int ah = r - 2, aw = r - 1;
        resize_planes t = {.x = x->data, .y = y->data, .H = x->dims[ah], .W = x->dims[aw],
                           .OH = y->dims[ah], .OW = y->dims[aw], .mode = 1, .extrap = p.extrap};
        t.keep_h = resize_axis_kept(t.H, t.OH, eff[ah], p.ct);
        t.keep_w = resize_axis_kept(t.W, t.OW, eff[aw], p.ct);
        int64_t *th = NULL, *tw = NULL;
        double *wh = NULL, *ww = NULL;
        unsigned char *eh = NULL, *ew = NULL;
        planes = planes &&
                 (t.keep_h || resize_two_taps(k, &p, eff[ah], t.H, t.OH, r0[ah], r1[ah], &th,
                                              &wh, &eh)) &&
                 (t.keep_w ||
                  resize_two_taps(k, &p, eff[aw], t.W, t.OW, r0[aw], r1[aw], &tw, &ww, &ew));
        if (planes) {
            t.th = th, t.wh = wh, t.eh = eh, t.tw = tw, t.ww = ww, t.ew = ew;
            return resize_planes_run(k, &t, y->numel / t.OW);
        }
    }
    /* separable passes, one axis at a time, in double */
    int64_t cur[POPRT__MAX_RANK], total = x->numel, maxel = x->numel;
    memcpy(cur, x->dims, sizeof(int64_t) * (size_t)r);
    for (int a = 0; a < r; a++) {
        total = total / cur[a] * y->dims[a];
        cur[a] = y->dims[a];
        if (total > maxel)
            maxel = total;
    }
    double *b0 = poprt__kctx_scratch(k, (size_t)maxel * sizeof(double));
    double *b1 = poprt__kctx_scratch(k, (size_t)maxel * sizeof(double));
    if (!b0 || !b1)
        return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    if (x->dtype == POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < x->numel; i++)
            b0[i] = ((const float *)x->data)[i];
    else
        for (int64_t i = 0; i < x->numel; i++)
            b0[i] = poprt__ref_tv_f64(x, i);
    memcpy(cur, x->dims, sizeof(int64_t) * (size_t)r);
    for (int a = 0; a < r; a++) {
        int64_t in = cur[a], out = y->dims[a];
        if (resize_axis_kept(in, out, eff[a], p.ct))
            continue;
        int64_t *ti, n;
        double *tw;
        unsigned char *ext;
        if (!(n = resize_axis_taps(k, &p, eff[a], in, out, r0[a], r1[a], &ti, &tw, &ext)))
            return poprt__ref_kerr(k, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < a; i++)
            outer *= cur[i];
        for (int i = a + 1; i < r; i++)
            inner *= cur[i];
        for (int64_t q = 0; q < outer; q++)
            for (int64_t o = 0; o < out; o++) {
                double *dst = b1 + (q * out + o) * inner;
                if (ext[o]) {
                    for (int64_t i = 0; i < inner; i++)
                        dst[i] = p.extrap;
                    continue;
                }
                for (int64_t i = 0; i < inner; i++)
                    dst[i] = 0;
                for (int64_t j = 0; j < n; j++) {
                    double w = tw[o * n + j];
                    if (w == 0)
                        continue;
                    const double *src = b0 + (q * in + ti[o * n + j]) * inner;
                    for (int64_t i = 0; i < inner; i++)
                        dst[i] += w * src[i];
                }
            }
        cur[a] = out;
        double *t = b0;
        b0 = b1;
        b1 = t;
    }
    if (y->dtype == POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < y->numel; i++)
            ((float *)y->data)[i] = (float)b0[i];
    else
        for (int64_t i = 0; i < y->numel; i++)
            poprt__store_f64(y->data, y->dtype, i, b0[i]);
    return POPRT_OK;
}

/* ---- GridSample / AffineGrid ---------------------------------------------------------------- */

static double gs_reflect(double x, double lo, double hi)
{
    double rng = hi - lo;
    if (rng <= 0)
        return lo;
    if (x < lo) {
        double dx = lo - x;
        int64_t n = (int64_t)(dx / rng);
        double r = dx - (double)n * rng;
        return n % 2 == 0 ? lo + r : hi - r;
    }
    if (x > hi) {
        double dx = x - hi;
        int64_t n = (int64_t)(dx / rng);
        double r = dx - (double)n * rng;
        return n % 2 == 0 ? hi - r : lo + r;
    }
    return x;
}

poprt_status poprt__ref_grid_sample(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *g = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !g || !y || x->rank < 3 || g->rank != x->rank ||
        g->dims[g->rank - 1] != x->rank - 2 || x->rank - 2 > 3)
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "invalid input or grid shape");
    int nd = x->rank - 2;
    const char *ms = poprt__attr_s(k->node, "mode", k->opset >= 20 ? "linear" : "bilinear");
    int mode = strcmp(ms, "nearest") == 0 ? 0
             : (strcmp(ms, "linear") == 0 || strcmp(ms, "bilinear") == 0) ? 1
             : (strcmp(ms, "cubic") == 0 || strcmp(ms, "bicubic") == 0) ? 2 : -1;
    const char *ps = poprt__attr_s(k->node, "padding_mode", "zeros");
    int pad = strcmp(ps, "zeros") == 0 ? 0 : strcmp(ps, "border") == 0 ? 1
            : strcmp(ps, "reflection") == 0 ? 2 : -1;
    if (mode < 0 || pad < 0)
        return poprt__ref_kerr(k, POPRT_STATUS_UNSUPPORTED, "unknown mode or padding_mode");
    int align = poprt__attr_i(k->node, "align_corners", 0) != 0;
    int64_t N = x->dims[0], C = x->dims[1], D[3], P = 1, Q = 1;
    for (int d = 0; d < nd; d++) {
        D[d] = x->dims[2 + d];
        P *= D[d];
        Q *= g->dims[1 + d];
    }
    int64_t xs[3];
    poprt__strides(nd, D, xs);
    for (int d = 0; d < nd; d++)
        if (y->dims[2 + d] != g->dims[1 + d])
            return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape differs from the grid");
    int isf = x->dtype == POPRT_DTYPE_FLOAT;
    for (int64_t b = 0; b < N; b++)
        for (int64_t q = 0; q < Q; q++) {
            int64_t ti[3][4];
            double tw[3][4];
            int nt = mode == 0 ? 1 : mode == 1 ? 2 : 4;
            for (int d = 0; d < nd; d++) {
                /* grid holds (x, y, z): x indexes the last spatial dim */
                double gc = poprt__ref_tv_f64(g, (b * Q + q) * nd + (nd - 1 - d));
                double L = (double)D[d];
                double c = align ? (gc + 1) / 2.0 * (L - 1) : ((gc + 1) * L - 1) / 2.0;
                double lo = align ? 0.0 : -0.5, hi = align ? L - 1 : L - 0.5;
                if (mode == 0)
                    c = nearbyint(c);
                if (c < lo || c > hi) {
                    if (pad == 1)
                        c = c < 0 ? 0 : c > L - 1 ? L - 1 : c;
                    else if (pad == 2)
                        c = gs_reflect(c, lo, hi);
                }
                int64_t i0;
                if (mode == 0) {
                    ti[d][0] = (int64_t)c;
                    tw[d][0] = 1.0;
                    i0 = 0;
                } else {
                    double f = floor(c), t = c - f;
                    i0 = (int64_t)f - (mode == 2 ? 1 : 0);
                    for (int j = 0; j < nt; j++) {
                        ti[d][j] = i0 + j;
                        tw[d][j] = mode == 1 ? (j == 0 ? 1 - t : t) : cubic_w(t + 1 - j, -0.75);
                    }
                }
                for (int j = 0; j < nt; j++) {
                    int64_t i = ti[d][j];
                    if (i >= 0 && i < D[d])
                        continue;
                    if (pad == 0 || mode == 0)
                        ti[d][j] = -1; /* reads as zero */
                    else if (pad == 1)
                        ti[d][j] = i < 0 ? 0 : D[d] - 1;
                    else
                        ti[d][j] = (int64_t)gs_reflect((double)i, lo, hi);
                    if (ti[d][j] >= D[d])
                        ti[d][j] = D[d] - 1;
                }
            }
            int64_t taps = 1;
            for (int d = 0; d < nd; d++)
                taps *= nt;
            for (int64_t c = 0; c < C; c++) {
                int64_t xb = (b * C + c) * P;
                double acc = 0;
                for (int64_t t = 0; t < taps; t++) {
                    int64_t rem = t, off = 0;
                    double w = 1;
                    int zero = 0;
                    for (int d = nd - 1; d >= 0; d--) {
                        int j = (int)(rem % nt);
                        rem /= nt;
                        if (ti[d][j] < 0)
                            zero = 1;
                        off += ti[d][j] * xs[d];
                        w *= tw[d][j];
                    }
                    if (zero || w == 0)
                        continue;
                    acc += w * (isf ? ((const float *)x->data)[xb + off]
                                    : poprt__ref_tv_f64(x, xb + off));
                }
                int64_t yo = (b * C + c) * Q + q;
                if (isf)
                    ((float *)y->data)[yo] = (float)acc;
                else
                    poprt__store_f64(y->data, y->dtype, yo, acc);
            }
        }
    return POPRT_OK;
}

poprt_status poprt__ref_affine_grid(poprt__kctx *k)
{
    const poprt__tval *th = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    int64_t size[5], ns = 0;
    if (!th || !y || !poprt__ref_kin_ints(k, 1, size, 5, &ns) || (ns != 4 && ns != 5))
        return poprt__ref_kerr(k, POPRT_STATUS_RUNTIME_ERROR, "invalid theta or size");
    int nd = (int)ns - 2;
    if (th->rank != 3 || th->dims[0] != size[0] || th->dims[1] != nd || th->dims[2] != nd + 1)
        return poprt__ref_kerr(k, POPRT_STATUS_SHAPE_MISMATCH, "theta shape does not match size");
    int align = poprt__attr_i(k->node, "align_corners", 0) != 0;
    int64_t N = size[0], S[3], Q = 1;
    for (int d = 0; d < nd; d++) {
        S[d] = size[2 + d];
        Q *= S[d];
    }
    for (int64_t b = 0; b < N; b++) {
        int64_t ii[3] = {0, 0, 0};
        for (int64_t q = 0; q < Q; q++) {
            /* base coordinates in (x, y, z) order: x runs along the last dim */
            double base[4];
            for (int d = 0; d < nd; d++) {
                int64_t L = S[nd - 1 - d], i = ii[nd - 1 - d];
                double step = align ? (L > 1 ? 2.0 / (double)(L - 1) : 0.0) : 2.0 / (double)L;
                base[d] = align ? -1.0 + (double)i * step : -1.0 + step / 2 + (double)i * step;
            }
            base[nd] = 1.0;
            for (int r = 0; r < nd; r++) {
                double acc = 0;
                for (int c = 0; c <= nd; c++)
                    acc += poprt__ref_tv_f64(th, (b * nd + r) * (nd + 1) + c) * base[c];
                poprt__store_f64(y->data, y->dtype, (b * Q + q) * nd + r, acc);
            }
            for (int d = nd - 1; d >= 0; d--) {
                if (++ii[d] < S[d])
                    break;
                ii[d] = 0;
            }
        }
    }
    return POPRT_OK;
}
