/* Reference kernels of the 'control' family: If, Loop, Scan. They run their
 * subgraphs through poprt__kctx_run_graph and allocate their outputs (the
 * ops are POPRT__OP_DYNAMIC). */
#ifndef POPRT_REF_CONTROL_H
#define POPRT_REF_CONTROL_H
#include "kernels/kernel.h"

poprt_status poprt__ref_if(poprt__kctx *k);
poprt_status poprt__ref_loop(poprt__kctx *k);
poprt_status poprt__ref_scan(poprt__kctx *k);

/* Inputs and attributes of a Scan node, shared by inference and kernel.
 * Scan-8 has a leading sequence_lens input and a batch axis 0 on every
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

/* Inference helpers shared with the sequence family (lib/ir/infer_control.c). */
/* 1 when c comes from the IR driver, so subgraph types may be changed. */
int poprt__control_ir_time(const poprt__infer_ctx *c);
/* The least precise type covering a and b. */
poprt_status poprt__control_join_type(poprt__arena *ar, poprt__type *out, const poprt__type *a,
                                      const poprt__type *b);
/* Types subgraph input t from want where the file left it untyped;
 * sets *changed when it did. */
poprt_status poprt__control_refine_input(poprt__arena *ar, poprt__tensor *t,
                                         const poprt__type *want, int *changed);

#endif
