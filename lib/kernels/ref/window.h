/* Sliding windows (Conv, ConvTranspose, pools) as the kernels walk them:
 * lifted to 3-D with leading unit axes, so one loop nest serves 1-D, 2-D
 * and 3-D. The geometry itself comes from lib/ir/geom.h. */
#ifndef POPRT_REF_WINDOW_H
#define POPRT_REF_WINDOW_H
#include "kernels/kernel.h"
#include "ir/geom.h"

typedef struct poprt__geom3 {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int64_t in_sz, out_sz, k_sz;
} poprt__geom3;
/* g lifted to 3-D; 0 when it has more than 3 spatial axes. */
int poprt__geom3_lift(const poprt__nn_geom *g, poprt__geom3 *o);

/* Range [lo, hi) of output positions o along one axis for which the input
 * position o*s - pb + off lies in [0, in). */
static inline void poprt__valid_range(int64_t out, int64_t s, int64_t pb, int64_t off, int64_t in,
                                      int64_t *lo, int64_t *hi)
{
    int64_t base = off - pb; /* input pos = o*s + base */
    int64_t l = base >= 0 ? 0 : poprt__ceil_div(-base, s);
    int64_t h = poprt__floor_div(in - 1 - base, s) + 1;
    if (l > out)
        l = out;
    if (h > out)
        h = out;
    if (h < l)
        h = l;
    *lo = l;
    *hi = h;
}

#endif
