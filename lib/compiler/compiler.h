/* The session compiler's graph rewrites (lib/compiler), run by
 * poprt__compile_optimize on the session's private copy of the model. */
#ifndef POPRT_COMPILER_H
#define POPRT_COMPILER_H

#include "ir/ir.h"

/* Chains of float32 elementwise nodes -> one ai.poprt FusedElementwise
 * (fuse_elementwise.c). *changed: 1 when the graph changed. */
poprt_status poprt__compile_fuse_elementwise(poprt__model *m, int *changed);
/* Conv [+ residual Add] [+ activation] -> one ai.poprt FusedConv
 * (fuse_conv.c), model checked afterwards; sets *any when the graph changed. */
poprt_status poprt__compile_fuse_conv(poprt__model *m, int *any);

#endif
