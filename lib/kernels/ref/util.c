#include "kernels/kernel.h"

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
