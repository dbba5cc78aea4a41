/* Reference kernels of the 'quant' family. */
#ifndef POPRT_REF_QUANT_H
#define POPRT_REF_QUANT_H
#include "kernels/kernel.h"

#endif
