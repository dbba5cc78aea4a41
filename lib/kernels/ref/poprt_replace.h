/* Reference kernels of the 'poprt_replace' family (domain "ai.poprt"). */
#ifndef POPRT_REF_POPRT_REPLACE_H
#define POPRT_REF_POPRT_REPLACE_H
#include "kernels/kernel.h"

#endif
