/* Quantisation parameters as inference (lib/ir/infer_quant.c) and the quant
 * kernels both read them: how a scale maps onto its input, and the shape of
 * the integer matrix products. */
#ifndef POPRT_IR_QUANT_LAYOUT_H
#define POPRT_IR_QUANT_LAYOUT_H

#include "ir/ir.h"

/* How a scale / zero-point tensor maps onto x, seen as [outer, len, inner]
 * around the quantisation axis. */
typedef struct poprt__qlayout {
    int kind;        /* POPRT__Q_TENSOR, POPRT__Q_AXIS, POPRT__Q_BLOCK */
    int axis;        /* normalised axis (AXIS, BLOCK) */
    int64_t outer, len, inner; /* -1 when unknown (inference) */
    int64_t block;   /* BLOCK: block_size */
    int64_t nblk;    /* BLOCK: scale dims[axis] */
} poprt__qlayout;
enum { POPRT__Q_TENSOR = 0, POPRT__Q_AXIS = 1, POPRT__Q_BLOCK = 2 };

/* Derives the layout from the node's axis/block_size attributes and the
 * shapes of x and the scale (dims < 0 unknown). SHAPE_MISMATCH naming the
 * node when known dims disagree. */
poprt_status poprt__quant_layout(const poprt__node *n, int xrank, const int64_t *xd, int srank,
                                 const int64_t *sd, poprt__qlayout *q);

/* numpy matmul shape of a (ra dims) x b (rb dims) into out (rank *ro);
 * unknown dims stay < 0. SHAPE_MISMATCH naming the node on a conflict. */
poprt_status poprt__quant_matmul_shape(const poprt__node *n, int ra, const int64_t *ad, int rb,
                                       const int64_t *bd, int *ro, int64_t *od);

#endif
