/* Reference kernels of the 'poprt_replace' family (domain "ai.poprt"). */
#include <math.h>
#include <string.h>
#include "kernels/ref/poprt_replace.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/reduce.h"

static poprt_status in_out(poprt__kctx *k, const poprt__tval **x, poprt__tval **y)
{
    *x = poprt__kin(k, 0);
    *y = poprt__kout(k, 0);
    if (!*x || !*y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "missing input or output");
    if ((*y)->numel != (*x)->numel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "output has %lld elements, input %lld", (long long)(*y)->numel,
                               (long long)(*x)->numel);
    return POPRT_OK;
}

/* ---- ErfV2 ----------------------------------------------------------------- */

static inline float erf_fast(float x)
{
    float a = fabsf(x);
    if (a < 0.5f) {
        /* Taylor series of erf: 2/sqrt(pi) * sum (-1)^n x^(2n+1) / (n! (2n+1)) */
        float z = x * x;
        return x * (1.12837916709551f +
                    z * (-0.376126389031838f +
                         z * (0.112837916709551f +
                              z * (-0.0268661706451312f +
                                   z * (0.00522397762544218f + z * -0.000854832702345085f)))));
    }
    float t = 1.0f / (1.0f + 0.3275911f * a);
    float p = t * (0.254829592f +
                   t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
    return copysignf(1.0f - p * expf(-a * a), x);
}

poprt_status poprt__ref_erfv2(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt__tval *y;
    poprt_status st = in_out(k, &x, &y);
    if (st)
        return st;
    if (!poprt__dtype_is_float(x->dtype) || y->dtype != x->dtype)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "ErfV2 needs a float input");
    if (x->dtype == POPRT_DTYPE_FLOAT) {
        const float *a = x->data;
        float *b = y->data;
        for (int64_t i = 0; i < x->numel; i++)
            b[i] = erf_fast(a[i]);
    } else {
        for (int64_t i = 0; i < x->numel; i++)
            poprt__store_f64(y->data, y->dtype, i,
                             erf_fast((float)poprt__load_f64(x->data, x->dtype, i)));
    }
    return POPRT_OK;
}

/* ---- WhereV2 ---------------------------------------------------------------- */

poprt_status poprt__ref_wherev2(poprt__kctx *k)
{
    const poprt__tval *c = poprt__kin(k, 0);
    if (!c)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "missing condition");
    if (c->dtype == POPRT_DTYPE_BOOL)
        return poprt__ref_where(k);
    if (!poprt__dtype_is_float(c->dtype) && !poprt__dtype_is_int(c->dtype))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT,
                               "condition must be bool or numeric");
    /* non-zero -> true, then the ordinary Where on a bool view */
    unsigned char *b = poprt__kctx_scratch(k, (size_t)(c->numel ? c->numel : 1));
    if (!b)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (c->dtype == POPRT_DTYPE_FLOAT) {
        const float *p = c->data;
        for (int64_t i = 0; i < c->numel; i++)
            b[i] = p[i] != 0.0f;
    } else if (poprt__dtype_is_int(c->dtype)) {
        for (int64_t i = 0; i < c->numel; i++)
            b[i] = poprt__load_i64(c->data, c->dtype, i) != 0;
    } else {
        for (int64_t i = 0; i < c->numel; i++)
            b[i] = poprt__load_f64(c->data, c->dtype, i) != 0.0;
    }
    poprt__value cv = *k->in[0];
    cv.kind = POPRT__KIND_TENSOR;
    cv.t = *c;
    cv.t.dtype = POPRT_DTYPE_BOOL;
    cv.t.nbytes = (size_t)c->numel;
    cv.t.data = b;
    poprt__value *ins[3] = {&cv, k->in[1], k->in[2]};
    poprt__kctx k2 = *k;
    k2.in = ins;
    return poprt__ref_where(&k2);
}

/* ---- SoftmaxV2 --------------------------------------------------------------- */

poprt_status poprt__ref_softmaxv2(poprt__kctx *k)
{
    poprt__kctx k2 = *k;
    k2.opset = 13; /* one-axis semantics, default axis -1 */
    return poprt__ref_softmax(&k2);
}

/* ---- FastNorm ---------------------------------------------------------------- */

poprt_status poprt__ref_fastnorm(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt__tval *y;
    poprt_status st = in_out(k, &x, &y);
    if (st)
        return st;
    const poprt__tval *sc = poprt__kin(k, 1), *bi = poprt__kin(k, 2);
    if (!sc || !bi || x->rank < 2 || !poprt__dtype_is_float(x->dtype) || y->dtype != x->dtype)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT,
                               "FastNorm needs float X of rank >= 2, scale and bias");
    int64_t N = x->dims[0], C = x->dims[1];
    int64_t per = N ? x->numel / N : 0, inner = C ? per / C : 0;
    if ((sc->numel != C && sc->numel != 1) || (bi->numel != C && bi->numel != 1))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "scale and bias must hold %lld or 1 values", (long long)C);
    double eps = poprt__attr_f(k->node, "epsilon", 1e-5f);
    int f32 = x->dtype == POPRT_DTYPE_FLOAT;
    for (int64_t n = 0; n < N; n++) {
        int64_t base = n * per;
        double s = 0, s2 = 0;
        if (f32) {
            const float *p = (const float *)x->data + base;
            for (int64_t i = 0; i < per; i++) {
                s += p[i];
                s2 += (double)p[i] * p[i];
            }
        } else {
            for (int64_t i = 0; i < per; i++) {
                double v = poprt__load_f64(x->data, x->dtype, base + i);
                s += v;
                s2 += v * v;
            }
        }
        double mean = per ? s / (double)per : 0.0;
        double var = per ? s2 / (double)per - mean * mean : 0.0;
        double inv = 1.0 / sqrt((var > 0 ? var : 0) + eps);
        for (int64_t c = 0; c < C; c++) {
            double g = poprt__load_f64(sc->data, sc->dtype, sc->numel == 1 ? 0 : c);
            double b = poprt__load_f64(bi->data, bi->dtype, bi->numel == 1 ? 0 : c);
            double mul = g * inv, add = b - mean * g * inv;
            int64_t o = base + c * inner;
            if (f32) {
                const float *p = (const float *)x->data + o;
                float *q = (float *)y->data + o;
                for (int64_t i = 0; i < inner; i++)
                    q[i] = (float)(p[i] * mul + add);
            } else {
                for (int64_t i = 0; i < inner; i++)
                    poprt__store_f64(y->data, y->dtype, o + i,
                                     poprt__load_f64(x->data, x->dtype, o + i) * mul + add);
            }
        }
    }
    return POPRT_OK;
}

/* ---- NotZero ------------------------------------------------------------------ */

poprt_status poprt__ref_notzero(poprt__kctx *k)
{
    const poprt__tval *x;
    poprt__tval *y;
    poprt_status st = in_out(k, &x, &y);
    if (st)
        return st;
    if (!poprt__dtype_is_float(x->dtype) && !poprt__dtype_is_int(x->dtype) &&
        x->dtype != POPRT_DTYPE_BOOL)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "numeric input required");
    if (y->dtype == POPRT_DTYPE_STRING)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT, "string output");
    if (x->dtype == POPRT_DTYPE_FLOAT && y->dtype == POPRT_DTYPE_FLOAT) {
        const float *a = x->data;
        float *b = y->data;
        for (int64_t i = 0; i < x->numel; i++)
            b[i] = a[i] != 0.0f ? 1.0f : 0.0f;
        return POPRT_OK;
    }
    for (int64_t i = 0; i < x->numel; i++) {
        int nz = poprt__dtype_is_float(x->dtype) ? poprt__load_f64(x->data, x->dtype, i) != 0.0
                                                  : poprt__load_i64(x->data, x->dtype, i) != 0;
        if (y->dtype == POPRT_DTYPE_BOOL)
            ((unsigned char *)y->data)[i] = (unsigned char)nz;
        else if (poprt__dtype_is_float(y->dtype))
            poprt__store_f64(y->data, y->dtype, i, nz);
        else
            poprt__store_i64(y->data, y->dtype, i, nz);
    }
    return POPRT_OK;
}
