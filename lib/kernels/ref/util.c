#include <string.h>
#include "kernels/ref/util.h"

void poprt__strides(int rank, const int64_t *dims, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= dims[i];
    }
}

void poprt__bcast_strides(const poprt__tval *from, int rank, const int64_t *dims,
                          int64_t *strides)
{
    int64_t s = 1;
    int off = rank - from->rank;
    for (int i = rank - 1; i >= 0; i--) {
        int fi = i - off;
        if (fi < 0) {
            strides[i] = 0;
            continue;
        }
        strides[i] = (from->dims[fi] == 1 && dims[i] != 1) ? 0 : s;
        s *= from->dims[fi];
    }
}

poprt_status poprt__ref_need(const poprt__kctx *k, int ok)
{
    return ok ? POPRT_OK
              : POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing input or output");
}

int64_t poprt__ref_scalar_i(const poprt__tval *t, int64_t dflt)
{
    return t && t->numel > 0 ? poprt__load_i64(t->data, t->dtype, 0) : dflt;
}

double poprt__ref_scalar_f(const poprt__tval *t, double dflt)
{
    return t && t->numel > 0 ? poprt__load_f64(t->data, t->dtype, 0) : dflt;
}

int64_t poprt__ref_prod64(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= d[i];
    return p;
}

poprt_status poprt__ref_oom(const poprt__kctx *k)
{
    return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
}

int poprt__ref_is_half(int32_t dt)
{
    return dt == POPRT_DTYPE_FLOAT16 || dt == POPRT_DTYPE_BFLOAT16;
}

/* A float32 view of t: t's own data when float32, else a converted scratch
 * copy (float16, bfloat16, double, small ints). NULL when out of memory. */
const float *poprt__ref_in_f32(poprt__kctx *k, const poprt__tval *t)
{
    if (t->dtype == POPRT_DTYPE_FLOAT) {
        if (t->data || !t->nbytes)
            return (const float *)t->data;
        for (int i = 0; i < k->n_in; i++) /* a constant prepared data holds (packed weights) */
            if (k->in[i] && &k->in[i]->t == t)
                return poprt__kctx_in_data(k, i);
        return NULL;
    }
    float *f = poprt__kctx_scratch(k, (size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
    if (!f)
        return NULL;
    if (t->dtype == POPRT_DTYPE_FLOAT16) {
        poprt__kctx_vmath(k)->half_to_float(t->data, f, t->numel);
    } else if (t->dtype == POPRT_DTYPE_BFLOAT16) {
        const uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            f[i] = poprt__bf16_to_float(h[i]);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            f[i] = (float)poprt__load_f64(t->data, t->dtype, i);
    }
    return f;
}

/* Where to compute an output in float32: its own buffer when float32, else
 * scratch that store_f32 converts back. */
float *poprt__ref_out_f32(poprt__kctx *k, poprt__tval *t)
{
    if (t->dtype == POPRT_DTYPE_FLOAT)
        return (float *)t->data;
    return poprt__kctx_scratch(k, (size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
}

void poprt__ref_store_f32(poprt__tval *t, const float *f)
{
    if (t->dtype == POPRT_DTYPE_FLOAT)
        return;
    if (t->dtype == POPRT_DTYPE_FLOAT16) {
        uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            h[i] = poprt__float_to_half(f[i]);
    } else if (t->dtype == POPRT_DTYPE_BFLOAT16) {
        uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            h[i] = poprt__float_to_bf16(f[i]);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            poprt__store_f64(t->data, t->dtype, i, f[i]);
    }
}

/* Units of work per parallel chunk so that a chunk is worth a wake-up. */
int64_t poprt__ref_grain(int64_t unit_cost, int64_t min_cost)
{
    if (unit_cost <= 0)
        return 1;
    int64_t g = min_cost / unit_cost;
    return g < 1 ? 1 : g;
}

#if defined(__GNUC__)
/* four float lanes: generic vectors, SSE on baseline x86-64 */
typedef float sg_v4 __attribute__((vector_size(16)));
#endif

/* y[i] += a * x[i] and y[i] = x[i] * a + b, four lanes at a time: GCC's
 * -O2 cost model leaves loops that need a scalar tail unvectorised. */
void poprt__ref_axpy_f32(int64_t n, float a, const float *restrict x, float *restrict y)
{
    int64_t i = 0;
#if defined(__GNUC__)
    const sg_v4 av = {a, a, a, a};
    for (; i + 4 <= n; i += 4) {
        sg_v4 xv, yv;
        memcpy(&xv, x + i, 16);
        memcpy(&yv, y + i, 16);
        yv += av * xv;
        memcpy(y + i, &yv, 16);
    }
#endif
    for (; i < n; i++)
        y[i] += a * x[i];
}

void poprt__ref_affine_f32(int64_t n, const float *restrict x, float a, float b, float *restrict y)
{
    int64_t i = 0;
#if defined(__GNUC__)
    const sg_v4 av = {a, a, a, a}, bv = {b, b, b, b};
    for (; i + 4 <= n; i += 4) {
        sg_v4 xv;
        memcpy(&xv, x + i, 16);
        xv = xv * av + bv;
        memcpy(y + i, &xv, 16);
    }
#endif
    for (; i < n; i++)
        y[i] = x[i] * a + b;
}
