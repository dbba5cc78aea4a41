/* Reference kernels of the 'misc' family. */
#include "kernels/ref/misc.h"
