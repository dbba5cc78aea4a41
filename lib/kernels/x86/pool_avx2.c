/* 2-D max pooling planes, AVX2 instance (see pool.h). */
#define MP_ISA avx2
#include "kernels/x86/pool_body.inc"
