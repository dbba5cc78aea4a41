/* Reference kernels of the 'poprt_fused' family (domain "ai.poprt"). */
#ifndef POPRT_REF_POPRT_FUSED_H
#define POPRT_REF_POPRT_FUSED_H
#include "kernels/kernel.h"

#endif
