/* Helpers of the control-flow inference (lib/ir/infer_control.c) that the
 * sequence family's inference (lib/ir/infer_sequence.c) uses too. */
#ifndef POPRT_IR_INFER_CONTROL_H
#define POPRT_IR_INFER_CONTROL_H

#include "ir/op.h"

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
