/* Reference kernels of the 'control' family: If, Loop, Scan. They run their
 * subgraphs through poprt__kctx_run_graph and allocate their outputs (the
 * ops are POPRT__OP_DYNAMIC). */
#ifndef POPRT_REF_CONTROL_H
#define POPRT_REF_CONTROL_H
#include "kernels/kernel.h"
#include "ir/scan_layout.h"

poprt_status poprt__ref_if(poprt__kctx *k);
poprt_status poprt__ref_loop(poprt__kctx *k);
poprt_status poprt__ref_scan(poprt__kctx *k);

#endif
