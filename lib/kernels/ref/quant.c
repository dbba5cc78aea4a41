/* Reference kernels of the 'quant' family. */
#include "kernels/ref/quant.h"
