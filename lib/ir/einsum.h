/* Einsum equations, parsed alike by inference (lib/ir/infer_nn.c) and the
 * Einsum kernel (lib/kernels). */
#ifndef POPRT_IR_EINSUM_H
#define POPRT_IR_EINSUM_H

#include "ir/ir.h"

/* Labels are letters; '...' becomes up to POPRT__MAX_RANK broadcast dims. */
#define POPRT__EINSUM_MAX_IN 16
typedef struct poprt__einsum {
    int n_in;
    int rank[POPRT__EINSUM_MAX_IN];               /* input ranks (after ellipsis expansion) */
    int lab[POPRT__EINSUM_MAX_IN][POPRT__MAX_RANK]; /* label id per input dim */
    int out_rank;
    int out_lab[POPRT__MAX_RANK];
    int n_labels;   /* distinct labels (ellipsis dims are labels 52..) */
} poprt__einsum;
/* Parses eq for inputs of the given ranks; returns 0 on a malformed equation. */
int poprt__einsum_parse(const char *eq, int n_in, const int *ranks, poprt__einsum *e);

#endif
