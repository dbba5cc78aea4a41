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
