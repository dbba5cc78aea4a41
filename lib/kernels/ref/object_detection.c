/* Reference kernels of the 'object detection' group: NonMaxSuppression,
 * RoiAlign, MaxRoiPool. */
#include <math.h>
#include <string.h>
#include "kernels/ref/object_detection.h"
#include "kernels/ref/util.h"

typedef struct qm_cand {
    float score;
    int64_t idx;
} qm_cand;

/* Stable order: higher score first, then lower box index. */
static int qm_cand_before(const qm_cand *a, const qm_cand *b)
{
    return a->score > b->score || (a->score == b->score && a->idx < b->idx);
}

static void qm_sort_cands(qm_cand *c, int64_t n, qm_cand *tmp)
{
    /* bottom-up merge sort: stable and O(n log n) */
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                tmp[o++] = qm_cand_before(&c[j], &c[i]) ? c[j++] : c[i++];
            while (i < mid)
                tmp[o++] = c[i++];
            while (j < hi)
                tmp[o++] = c[j++];
        }
        memcpy(c, tmp, (size_t)n * sizeof *c);
    }
}

static void qm_box_corners(const float *b, int center, float *y1, float *x1, float *y2, float *x2)
{
    if (center) {
        *x1 = b[0] - b[2] / 2;
        *x2 = b[0] + b[2] / 2;
        *y1 = b[1] - b[3] / 2;
        *y2 = b[1] + b[3] / 2;
    } else {
        *y1 = fminf(b[0], b[2]);
        *y2 = fmaxf(b[0], b[2]);
        *x1 = fminf(b[1], b[3]);
        *x2 = fmaxf(b[1], b[3]);
    }
}

static float qm_iou(const float *a, const float *b, int center)
{
    float ay1, ax1, ay2, ax2, by1, bx1, by2, bx2;
    qm_box_corners(a, center, &ay1, &ax1, &ay2, &ax2);
    qm_box_corners(b, center, &by1, &bx1, &by2, &bx2);
    float iw = fminf(ax2, bx2) - fmaxf(ax1, bx1), ih = fminf(ay2, by2) - fmaxf(ay1, by1);
    if (iw <= 0 || ih <= 0)
        return 0.0f;
    float inter = iw * ih;
    float ua = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
    return ua > 0 ? inter / ua : 0.0f;
}

poprt_status poprt__ref_non_max_suppression(poprt__kctx *k)
{
    const poprt__tval *boxes = poprt__kin(k, 0), *scores = poprt__kin(k, 1);
    poprt_status st = poprt__ref_need(k, boxes && scores && boxes->rank == 3 && scores->rank == 3 &&
                                     boxes->dtype == POPRT_DTYPE_FLOAT &&
                                     scores->dtype == POPRT_DTYPE_FLOAT);
    if (st)
        return st;
    const int64_t B = boxes->dims[0], S = boxes->dims[1], C = scores->dims[1];
    if (boxes->dims[2] != 4 || scores->dims[0] != B || scores->dims[2] != S)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "boxes and scores do not fit");
    int64_t maxo = poprt__ref_scalar_i(poprt__kin(k, 2), 0);
    const float iou_t = (float)poprt__ref_scalar_f(poprt__kin(k, 3), 0.0);
    const int has_st = poprt__kin(k, 4) && poprt__kin(k, 4)->numel > 0;
    const float score_t = (float)poprt__ref_scalar_f(poprt__kin(k, 4), 0.0);
    const int center = (int)poprt__attr_i(k->node, "center_point_box", 0);
    if (maxo < 0)
        maxo = 0;
    int64_t per = maxo < S ? maxo : S;
    qm_cand *cand = poprt__kctx_scratch(k, (size_t)(S + 1) * sizeof *cand);
    qm_cand *tmp = poprt__kctx_scratch(k, (size_t)(S + 1) * sizeof *tmp);
    int64_t *sel = poprt__kctx_scratch(k, (size_t)(B * C * per * 3 + 3) * sizeof *sel);
    int64_t *chosen = poprt__kctx_scratch(k, (size_t)(per + 1) * sizeof *chosen);
    if (!cand || !tmp || !sel || !chosen)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    const float *bx = boxes->data, *sc = scores->data;
    int64_t nsel = 0;
    for (int64_t b = 0; b < B && per > 0; b++)
        for (int64_t c = 0; c < C; c++) {
            const float *s = sc + (b * C + c) * S;
            int64_t nc = 0;
            for (int64_t i = 0; i < S; i++)
                if (!has_st || s[i] > score_t)
                    cand[nc++] = (qm_cand){s[i], i};
            qm_sort_cands(cand, nc, tmp);
            int64_t nch = 0;
            for (int64_t i = 0; i < nc && nch < per; i++) {
                const float *bi = bx + (b * S + cand[i].idx) * 4;
                int keep = 1;
                for (int64_t j = 0; j < nch && keep; j++)
                    if (qm_iou(bi, bx + (b * S + chosen[j]) * 4, center) > iou_t)
                        keep = 0;
                if (keep) {
                    chosen[nch++] = cand[i].idx;
                    sel[nsel * 3] = b;
                    sel[nsel * 3 + 1] = c;
                    sel[nsel * 3 + 2] = cand[i].idx;
                    nsel++;
                }
            }
        }
    int64_t od[2] = {nsel, 3};
    if ((st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_INT64, 2, od)))
        return st;
    poprt__tval *y = poprt__kout(k, 0);
    if (y && nsel)
        memcpy(y->data, sel, (size_t)nsel * 3 * sizeof *sel);
    return POPRT_OK;
}

typedef struct qm_pc {
    int64_t p1, p2, p3, p4;
    double w1, w2, w3, w4;
} qm_pc;

poprt_status poprt__ref_roi_align(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *rois = poprt__kin(k, 1), *bi = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && rois && bi && y && x->rank == 4 && rois->rank == 2 &&
                                     y->rank == 4);
    if (st)
        return st;
    const int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    const int64_t R = rois->dims[0], PH = y->dims[2], PW = y->dims[3];
    const char *ctm = poprt__attr_s(k->node, "coordinate_transformation_mode",
                                    k->opset >= 16 ? "half_pixel" : "output_half_pixel");
    const int half = strcmp(ctm, "half_pixel") == 0;
    const int is_max = strcmp(poprt__attr_s(k->node, "mode", "avg"), "max") == 0;
    const int64_t sr = poprt__attr_i(k->node, "sampling_ratio", 0);
    const double scale = poprt__attr_f(k->node, "spatial_scale", 1.0f);
    if (rois->dims[1] != 4 || bi->numel != R)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "rois must be [num_rois, 4]");
    for (int64_t r = 0; r < R; r++) {
        const int64_t b = poprt__load_i64(bi->data, bi->dtype, r);
        if (b < 0 || b >= N)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "batch index %lld out of range", (long long)b);
        const double off = half ? 0.5 : 0.0;
        double sw = poprt__load_f64(rois->data, rois->dtype, r * 4) * scale - off;
        double sh = poprt__load_f64(rois->data, rois->dtype, r * 4 + 1) * scale - off;
        double ew = poprt__load_f64(rois->data, rois->dtype, r * 4 + 2) * scale - off;
        double eh = poprt__load_f64(rois->data, rois->dtype, r * 4 + 3) * scale - off;
        double rw = ew - sw, rh = eh - sh;
        if (!half) {
            rw = rw > 1.0 ? rw : 1.0;
            rh = rh > 1.0 ? rh : 1.0;
        }
        const double bh = rh / (double)PH, bw = rw / (double)PW;
        const int64_t gh = sr > 0 ? sr : (int64_t)ceil(rh / (double)PH);
        const int64_t gw = sr > 0 ? sr : (int64_t)ceil(rw / (double)PW);
        const int64_t count = gh * gw > 1 ? gh * gw : 1;
        qm_pc *pc = poprt__kctx_scratch(k, (size_t)(PH * PW * gh * gw + 1) * sizeof *pc);
        if (!pc)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
        /* bilinear sample positions and weights, shared by all channels */
        int64_t pi = 0;
        for (int64_t ph = 0; ph < PH; ph++)
            for (int64_t pw = 0; pw < PW; pw++)
                for (int64_t iy = 0; iy < gh; iy++)
                    for (int64_t ix = 0; ix < gw; ix++, pi++) {
                        double yy = sh + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
                        double xx = sw + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
                        qm_pc *p = &pc[pi];
                        memset(p, 0, sizeof *p);
                        if (yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W)
                            continue;
                        if (yy <= 0)
                            yy = 0;
                        if (xx <= 0)
                            xx = 0;
                        int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
                        if (yl >= H - 1) {
                            yh = yl = H - 1;
                            yy = (double)yl;
                        } else
                            yh = yl + 1;
                        if (xl >= W - 1) {
                            xh = xl = W - 1;
                            xx = (double)xl;
                        } else
                            xh = xl + 1;
                        double ly = yy - (double)yl, lx = xx - (double)xl;
                        double hy = 1.0 - ly, hx = 1.0 - lx;
                        p->p1 = yl * W + xl;
                        p->p2 = yl * W + xh;
                        p->p3 = yh * W + xl;
                        p->p4 = yh * W + xh;
                        p->w1 = hy * hx;
                        p->w2 = hy * lx;
                        p->w3 = ly * hx;
                        p->w4 = ly * lx;
                    }
        for (int64_t c = 0; c < C; c++) {
            const int64_t xo = (b * C + c) * H * W;
            pi = 0;
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    double acc = 0.0;
                    for (int64_t s = 0; s < gh * gw; s++, pi++) {
                        const qm_pc *p = &pc[pi];
                        double v1 = p->w1 * poprt__load_f64(x->data, x->dtype, xo + p->p1);
                        double v2 = p->w2 * poprt__load_f64(x->data, x->dtype, xo + p->p2);
                        double v3 = p->w3 * poprt__load_f64(x->data, x->dtype, xo + p->p3);
                        double v4 = p->w4 * poprt__load_f64(x->data, x->dtype, xo + p->p4);
                        if (is_max) {
                            /* ONNX (like onnxruntime) takes the max of the weighted corners */
                            double m = fmax(fmax(v1, v2), fmax(v3, v4));
                            acc = s == 0 ? m : fmax(acc, m);
                        } else
                            acc += v1 + v2 + v3 + v4;
                    }
                    if (!is_max)
                        acc /= (double)count;
                    poprt__store_f64(y->data, y->dtype, ((r * C + c) * PH + ph) * PW + pw, acc);
                }
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_max_roi_pool(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *rois = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && rois && y && x->rank == 4 && rois->rank == 2 && y->rank == 4);
    if (st)
        return st;
    const int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    const int64_t R = rois->dims[0], PH = y->dims[2], PW = y->dims[3];
    const double scale = poprt__attr_f(k->node, "spatial_scale", 1.0f);
    if (rois->dims[1] != 5)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "rois must be [num_rois, 5]");
    for (int64_t r = 0; r < R; r++) {
        int64_t b = (int64_t)poprt__load_f64(rois->data, rois->dtype, r * 5);
        if (b < 0 || b >= N)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "batch index %lld out of range", (long long)b);
        int64_t x1 = (int64_t)round(poprt__load_f64(rois->data, rois->dtype, r * 5 + 1) * scale);
        int64_t y1 = (int64_t)round(poprt__load_f64(rois->data, rois->dtype, r * 5 + 2) * scale);
        int64_t x2 = (int64_t)round(poprt__load_f64(rois->data, rois->dtype, r * 5 + 3) * scale);
        int64_t y2 = (int64_t)round(poprt__load_f64(rois->data, rois->dtype, r * 5 + 4) * scale);
        int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
        double bh = (double)rh / (double)PH, bw = (double)rw / (double)PW;
        for (int64_t c = 0; c < C; c++)
            for (int64_t ph = 0; ph < PH; ph++)
                for (int64_t pw = 0; pw < PW; pw++) {
                    int64_t hs = (int64_t)floor((double)ph * bh) + y1;
                    int64_t he = (int64_t)ceil((double)(ph + 1) * bh) + y1;
                    int64_t ws = (int64_t)floor((double)pw * bw) + x1;
                    int64_t we = (int64_t)ceil((double)(pw + 1) * bw) + x1;
                    hs = hs < 0 ? 0 : (hs > H ? H : hs);
                    he = he < 0 ? 0 : (he > H ? H : he);
                    ws = ws < 0 ? 0 : (ws > W ? W : ws);
                    we = we < 0 ? 0 : (we > W ? W : we);
                    double m = 0.0;
                    int any = 0;
                    for (int64_t h = hs; h < he; h++)
                        for (int64_t w = ws; w < we; w++) {
                            double v = poprt__load_f64(x->data, x->dtype, ((b * C + c) * H + h) * W + w);
                            if (!any || v > m)
                                m = v;
                            any = 1;
                        }
                    poprt__store_f64(y->data, y->dtype, ((r * C + c) * PH + ph) * PW + pw, m);
                }
    }
    return POPRT_OK;
}
