/* Reference kernels of the 'poprt_replace' family (domain "ai.poprt"). */
#include "kernels/ref/poprt_replace.h"
