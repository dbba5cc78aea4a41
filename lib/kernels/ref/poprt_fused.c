/* Reference kernels of the 'poprt_fused' family (domain "ai.poprt"). */
#include "kernels/ref/poprt_fused.h"
