/* The Scan node's inputs and attributes, read alike by its inference
 * (lib/ir/infer_control.c) and its kernel. */
#ifndef POPRT_IR_SCAN_LAYOUT_H
#define POPRT_IR_SCAN_LAYOUT_H

#include "ir/ir.h"

/* Scan-8 has a leading sequence_lens input and a batch axis 0 on every
 * input and output (scan axis 1); Scan-9+ has per-input/output axes and
 * directions and no batch. */
#define POPRT__SCAN_MAX 64
typedef struct poprt__scan_layout_t {
    poprt__graph *body;
    int v8;      /* opset < 9 */
    int first;   /* index of the first state input (1 for Scan-8) */
    int n;       /* states */
    int64_t m;   /* scan inputs */
    int k;       /* scan outputs */
    int64_t in_axis[POPRT__SCAN_MAX], in_dir[POPRT__SCAN_MAX];
    int64_t out_axis[POPRT__SCAN_MAX], out_dir[POPRT__SCAN_MAX];
} poprt__scan_layout_t;
poprt_status poprt__scan_layout(const poprt__node *node, int opset, int n_in, int n_out,
                                poprt__scan_layout_t *l);

#endif
