/* Reference kernels of the 'misc' family. */
#ifndef POPRT_REF_MISC_H
#define POPRT_REF_MISC_H
#include "kernels/kernel.h"

#endif
