/* Reference kernels of the 'sequence' family. */
#ifndef POPRT_REF_SEQUENCE_H
#define POPRT_REF_SEQUENCE_H
#include "kernels/kernel.h"

#endif
