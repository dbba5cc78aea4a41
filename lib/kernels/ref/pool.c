/* Reference kernels of the 'pool' group: MaxPool, AveragePool, LpPool,
 * their global forms and MaxUnpool. float32 views of the input (others
 * converted through scratch), planes split over the threads. */
#include <math.h>
#include <string.h>
#include "kernels/ref/pool.h"
#include "kernels/ref/util.h"

void poprt__pool_planes(void *ctx, int64_t q0, int64_t q1)
{
    const poprt__pool_task *t = ctx;
    const poprt__geom3 *g = &t->g;
    const int lp2 = t->kind == POPRT__POOL_LP && t->p == 2.0f;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        float *yp = t->y + q * g->out_sz;
        int64_t *ip = t->ind ? t->ind + q * g->out_sz : NULL;
        for (int64_t od = 0; od < g->out[0]; od++)
            for (int64_t oh = 0; oh < g->out[1]; oh++)
                for (int64_t ow = 0; ow < g->out[2]; ow++) {
                    const int64_t sd = od * g->s[0] - g->pb[0], sh = oh * g->s[1] - g->pb[1],
                                  sw = ow * g->s[2] - g->pb[2];
                    float best = -INFINITY;
                    int64_t best_i = -1;
                    double sum = 0.0;
                    int64_t cnt = 0, cnt_pad = 1;
                    if (t->kind == POPRT__POOL_AVG && t->count_include_pad) {
                        /* taps inside the padded extent [-pb, in + pe) */
                        const int64_t st[3] = {sd, sh, sw};
                        for (int a = 0; a < 3; a++) {
                            int64_t c = 0;
                            for (int64_t kk = 0; kk < g->k[a]; kk++) {
                                int64_t pos = st[a] + kk * g->d[a];
                                c += pos >= -g->pb[a] && pos < g->in[a] + g->pe[a];
                            }
                            cnt_pad *= c;
                        }
                    }
                    for (int64_t kd = 0; kd < g->k[0]; kd++) {
                        const int64_t id = sd + kd * g->d[0];
                        if (id < 0 || id >= g->in[0])
                            continue;
                        for (int64_t kh = 0; kh < g->k[1]; kh++) {
                            const int64_t ih = sh + kh * g->d[1];
                            if (ih < 0 || ih >= g->in[1])
                                continue;
                            const float *row = xp + (id * g->in[1] + ih) * g->in[2];
                            for (int64_t kw = 0; kw < g->k[2]; kw++) {
                                const int64_t iw = sw + kw * g->d[2];
                                if (iw < 0 || iw >= g->in[2])
                                    continue;
                                const float v = row[iw];
                                if (t->kind == POPRT__POOL_MAX) {
                                    if (v > best || best_i < 0) {
                                        best = v;
                                        best_i = t->storage_order
                                                     ? id + (ih + iw * g->in[1]) * g->in[0]
                                                     : (id * g->in[1] + ih) * g->in[2] + iw;
                                    }
                                } else if (t->kind == POPRT__POOL_AVG) {
                                    sum += v;
                                    cnt++;
                                } else {
                                    const double a = fabs((double)v);
                                    sum += lp2 ? a * a : pow(a, t->p);
                                }
                            }
                        }
                    }
                    const int64_t o = (od * g->out[1] + oh) * g->out[2] + ow;
                    if (t->kind == POPRT__POOL_MAX) {
                        yp[o] = best;
                        if (ip)
                            ip[o] = best_i < 0 ? -1 : q * g->in_sz + best_i;
                    } else if (t->kind == POPRT__POOL_AVG) {
                        int64_t div = t->count_include_pad ? cnt_pad : cnt;
                        yp[o] = div > 0 ? (float)(sum / (double)div) : 0.0f;
                    } else {
                        yp[o] = (float)(lp2 ? sqrt(sum) : pow(sum, 1.0 / t->p));
                    }
                }
    }
}

/* LpPool's p: a float attribute in LpPool-1, an int since 2 */
static float lp_p(const poprt__node *n)
{
    const poprt__attr *pa = poprt__node_attr(n, "p");
    return !pa ? 2.0f : pa->type == POPRT__ATTR_FLOAT ? pa->f : (float)pa->i;
}

poprt_status poprt__pool_op(poprt__kctx *k, int kind, poprt__pool_fast_fn fast)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0), *ind = poprt__kout(k, 1);
    if (!x || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X or Y");
    if (x->rank < 3)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X must have rank >= 3, has %d", x->rank);
    const int nsp = x->rank - 2;
    poprt__nn_geom gg;
    /* ceil_mode exists for MaxPool/AveragePool >= 10 and LpPool >= 18 */
    int allow_ceil = kind == POPRT__POOL_LP ? k->opset >= 18 : k->opset >= 10;
    poprt_status st = poprt__nn_window_geom(k->node, nsp, x->dims + 2, NULL, allow_ceil, &gg);
    if (st)
        return st;
    poprt__pool_task t;
    memset(&t, 0, sizeof t);
    if (!poprt__geom3_lift(&gg, &t.g))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "more than 3 spatial axes are not supported");
    for (int i = 0; i < nsp; i++)
        if (y->dims[2 + i] != gg.out[i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape mismatch on axis %d", 2 + i);
    t.kind = kind;
    t.count_include_pad = (int)poprt__attr_i(k->node, "count_include_pad", 0);
    t.storage_order = (int)poprt__attr_i(k->node, "storage_order", 0);
    if (kind == POPRT__POOL_LP)
        t.p = lp_p(k->node);
    if (y->numel == 0)
        return POPRT_OK;
    t.x = poprt__ref_in_f32(k, x);
    t.y = poprt__ref_out_f32(k, y);
    if (!t.x || !t.y)
        return poprt__ref_oom(k);
    if (ind) {
        if (ind->dtype != POPRT_DTYPE_INT64)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "Indices must be int64");
        t.ind = ind->data;
    }
    int done = 0;
    if (fast && (st = fast(k, &t, x, ind, &done)))
        return st;
    if (!done)
        poprt__kctx_parallel_for(k, x->dims[0] * x->dims[1],
                                 poprt__ref_grain(t.g.out_sz * t.g.k_sz, 1 << 14),
                                 poprt__pool_planes, &t);
    poprt__ref_store_f32(y, t.y);
    return POPRT_OK;
}

poprt_status poprt__ref_maxpool(poprt__kctx *k) { return poprt__pool_op(k, POPRT__POOL_MAX, NULL); }
poprt_status poprt__ref_averagepool(poprt__kctx *k)
{
    return poprt__pool_op(k, POPRT__POOL_AVG, NULL);
}
poprt_status poprt__ref_lppool(poprt__kctx *k) { return poprt__pool_op(k, POPRT__POOL_LP, NULL); }

typedef struct gpool_task {
    int kind;
    float p;
    int64_t sp;
    const float *x;
    float *y;
} gpool_task;

static void gpool_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const gpool_task *t = ctx;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * t->sp;
        if (t->kind == POPRT__POOL_MAX) {
            float m = t->sp > 0 ? xp[0] : -INFINITY;
            for (int64_t i = 1; i < t->sp; i++)
                m = xp[i] > m ? xp[i] : m;
            t->y[q] = m;
        } else if (t->kind == POPRT__POOL_AVG) {
            /* float lanes of partial sums keep this vectorised; the order
             * is fixed, so results stay deterministic */
            float part[8] = {0};
            int64_t i = 0;
            for (; i + 8 <= t->sp; i += 8)
                for (int j = 0; j < 8; j++)
                    part[j] += xp[i + j];
            double s = 0.0;
            for (int j = 0; j < 8; j++)
                s += part[j];
            for (; i < t->sp; i++)
                s += xp[i];
            t->y[q] = t->sp > 0 ? (float)(s / (double)t->sp) : 0.0f;
        } else {
            double s = 0.0;
            for (int64_t i = 0; i < t->sp; i++) {
                double a = fabs((double)xp[i]);
                s += t->p == 2.0f ? a * a : pow(a, t->p);
            }
            t->y[q] = (float)(t->p == 2.0f ? sqrt(s) : pow(s, 1.0 / t->p));
        }
    }
}

static poprt_status gpool_run(poprt__kctx *k, int kind)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "X must have rank >= 2");
    gpool_task t = {kind, 2.0f, poprt__ref_prod64(x->dims + 2, x->rank - 2), NULL, NULL};
    if (kind == POPRT__POOL_LP)
        t.p = lp_p(k->node);
    if (y->numel == 0)
        return POPRT_OK;
    t.x = poprt__ref_in_f32(k, x);
    t.y = poprt__ref_out_f32(k, y);
    if (!t.x || !t.y)
        return poprt__ref_oom(k);
    poprt__kctx_parallel_for(k, x->dims[0] * x->dims[1], poprt__ref_grain(t.sp, 1 << 14),
                             gpool_task_fn, &t);
    poprt__ref_store_f32(y, t.y);
    return POPRT_OK;
}

poprt_status poprt__ref_global_averagepool(poprt__kctx *k)
{
    return gpool_run(k, POPRT__POOL_AVG);
}
poprt_status poprt__ref_global_maxpool(poprt__kctx *k)
{
    return gpool_run(k, POPRT__POOL_MAX);
}
poprt_status poprt__ref_global_lppool(poprt__kctx *k)
{
    return gpool_run(k, POPRT__POOL_LP);
}

poprt_status poprt__ref_maxunpool(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ind = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ind || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X, I or Y");
    if (ind->numel != x->numel || x->rank < 3 || y->rank != x->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "I must match X (rank >= 3) and Y must have X's rank");
    /* Indices address the default output shape (what MaxPool saw); an
     * explicit output_shape only moves the same coordinates into a larger
     * tensor. */
    const int nsp = x->rank - 2;
    int64_t ks[POPRT__MAX_RANK], s[POPRT__MAX_RANK], pads[2 * POPRT__MAX_RANK];
    poprt_status st;
    if ((st = poprt__attr_ints_n(k->node, "kernel_shape", nsp, 1, ks)) ||
        (st = poprt__attr_ints_n(k->node, "strides", nsp, 1, s)) ||
        (st = poprt__attr_ints_n(k->node, "pads", 2 * nsp, 0, pads)))
        return st;
    int64_t def[POPRT__MAX_RANK];
    def[0] = x->dims[0];
    def[1] = x->dims[1];
    for (int i = 0; i < nsp; i++)
        def[2 + i] = (x->dims[2 + i] - 1) * s[i] + ks[i] - pads[i] - pads[nsp + i];
    int same = 1;
    for (int i = 0; i < x->rank; i++)
        same &= def[i] == y->dims[i];
    const int64_t def_numel = poprt__ref_prod64(def, x->rank);
    const size_t esz = poprt__dtype_size((poprt_dtype)y->dtype);
    memset(y->data, 0, y->nbytes);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t j = poprt__load_i64(ind->data, ind->dtype, i);
        if (j < 0 || j >= def_numel)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "index %lld out of range [0, %lld)", (long long)j,
                                   (long long)def_numel);
        if (!same) {
            int64_t o = 0, mul = 1, r = j;
            for (int d = x->rank - 1; d >= 0; d--) {
                int64_t cd = r % def[d];
                r /= def[d];
                if (cd >= y->dims[d])
                    return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                           "index %lld falls outside output_shape",
                                           (long long)j);
                o += cd * mul;
                mul *= y->dims[d];
            }
            j = o;
        }
        memcpy((char *)y->data + (size_t)j * esz, (const char *)x->data + (size_t)i * esz, esz);
    }
    return POPRT_OK;
}
