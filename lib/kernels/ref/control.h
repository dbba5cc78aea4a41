/* Reference kernels of the 'control' family. */
#ifndef POPRT_REF_CONTROL_H
#define POPRT_REF_CONTROL_H
#include "kernels/kernel.h"

#endif
