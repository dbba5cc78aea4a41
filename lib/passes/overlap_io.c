/* overlap_io: on the IPU, dedicates IO tiles so host transfers overlap
 * compute. On the CPU inputs are read in place from the caller's buffers
 * and there is no transfer to overlap; throughput from concurrent requests
 * comes from running one session from several threads with separate
 * stepios. The pass takes no arguments and changes nothing. */
#include "passes/rewrite.h"

static poprt_status run(poprt__model *m, const char *args, int *changed)
{
    (void)m;
    *changed = 0;
    return poprt__pass_no_args("overlap_io", args);
}

const poprt__pass poprt__pass_overlap_io = {
    "overlap_io",
    "IPU IO-tile overlap; on the CPU a validated no-op (inputs are read in place, nothing to overlap)",
    run};
