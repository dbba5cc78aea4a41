/* Depthwise conv planes, AVX-512 instance (see conv_dw.h). */
#include "kernels/x86/conv_dw.h"

#define DW_PLANE_NAME poprt__dwconv_plane_avx512
#define DW_PLANE_LINKAGE
#define DW_BLOCKED_NAME poprt__dwconv_blocked_avx512
#define DW_GROUPED_NAME poprt__gconv_blocked_avx512
#include "kernels/x86/conv_dw_body.inc"
