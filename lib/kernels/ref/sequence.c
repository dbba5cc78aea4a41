/* Reference kernels of the 'sequence' family. */
#include "kernels/ref/sequence.h"
