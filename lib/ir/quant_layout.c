/* Quantisation layouts and matmul shapes (see quant_layout.h). */
#include <string.h>
#include "ir/quant_layout.h"
#include "ir/op.h"

static int64_t prod(const int64_t *d, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++) {
        if (d[i] < 0)
            return -1;
        p *= d[i];
    }
    return p;
}

poprt_status poprt__quant_layout(const poprt__node *n, int xrank, const int64_t *xd, int srank,
                                 const int64_t *sd, poprt__qlayout *q)
{
    memset(q, 0, sizeof *q);
    int64_t axis = poprt__attr_i(n, "axis", 1);
    int64_t bs = poprt__attr_i(n, "block_size", 0);
    if (bs < 0)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "block_size must be >= 0");
    /* a one-element scale is per tensor whatever the attributes say */
    if (srank == 0 || (srank > 0 && prod(sd, 0, srank) == 1)) {
        q->kind = POPRT__Q_TENSOR;
        q->outer = 1;
        q->len = 1;
        q->inner = xrank < 0 ? -1 : prod(xd, 0, xrank);
        return POPRT_OK;
    }
    if (xrank < 0 || srank < 0) {
        q->kind = bs > 0 ? POPRT__Q_BLOCK : POPRT__Q_AXIS;
        q->outer = q->len = q->inner = -1;
        q->block = bs;
        return POPRT_OK;
    }
    int64_t ax;
    if (!poprt__norm_axis(axis, xrank, &ax))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "axis %lld out of range for rank %d",
                               (long long)axis, xrank);
    q->axis = (int)ax;
    q->outer = prod(xd, 0, q->axis);
    q->len = xd[q->axis];
    q->inner = prod(xd, q->axis + 1, xrank);
    if (bs == 0) {
        q->kind = POPRT__Q_AXIS;
        if (srank != 1)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "per-axis scale must be 1-D, has rank %d", srank);
        if (sd[0] >= 0 && q->len >= 0 && sd[0] != q->len)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "scale has %lld values for axis %d of size %lld",
                                   (long long)sd[0], q->axis, (long long)q->len);
        return POPRT_OK;
    }
    q->kind = POPRT__Q_BLOCK;
    q->block = bs;
    if (srank != xrank)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "blocked scale rank %d differs from input rank %d", srank, xrank);
    for (int d = 0; d < xrank; d++) {
        if (sd[d] < 0 || xd[d] < 0)
            continue;
        int64_t want = d == q->axis ? xd[d] / bs + (xd[d] % bs != 0) : xd[d];
        if (sd[d] != want)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "blocked scale dim %d is %lld, expected %lld", d,
                                   (long long)sd[d], (long long)want);
    }
    q->nblk = sd[q->axis];
    return POPRT_OK;
}

poprt_status poprt__quant_matmul_shape(const poprt__node *n, int ra, const int64_t *ad, int rb,
                                       const int64_t *bd, int *ro, int64_t *od)
{
    if (ra < 1 || rb < 1)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "matmul inputs must have rank >= 1");
    int64_t ka = ad[ra - 1], kb = rb == 1 ? bd[0] : bd[rb - 2];
    if (ka >= 0 && kb >= 0 && ka != kb)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "inner dimensions %lld and %lld differ", (long long)ka, (long long)kb);
    int ba = ra > 2 ? ra - 2 : 0, bb = rb > 2 ? rb - 2 : 0;
    int br = ba > bb ? ba : bb;
    for (int i = 0; i < br; i++) {
        int ia = i - (br - ba), ib = i - (br - bb);
        int64_t da = ia >= 0 ? ad[ia] : 1, db = ib >= 0 ? bd[ib] : 1;
        int64_t d;
        if (da == 1)
            d = db;
        else if (db == 1)
            d = da;
        else if (da < 0 || db < 0)
            d = da < 0 ? db : da; /* a known dim other than 1 decides */
        else if (da == db)
            d = da;
        else
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "batch dims %lld and %lld do not broadcast", (long long)da,
                                   (long long)db);
        if (da < 0 && db < 0)
            d = -1;
        od[i] = d;
    }
    int r = br;
    if (ra > 1)
        od[r++] = ad[ra - 2];
    if (rb > 1)
        od[r++] = bd[rb - 1];
    *ro = r;
    return POPRT_OK;
}
