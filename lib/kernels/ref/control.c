/* Reference kernels of the 'control' family. */
#include "kernels/ref/control.h"
