/* Depthwise conv planes, AVX2 + FMA instance (see conv_dw.h). */
#include "kernels/x86/conv_dw.h"

#define DW_PLANE_NAME poprt__dwconv_plane_avx2
#define DW_PLANE_LINKAGE
#define DW_LANES 8
#define DW_BLOCKED_NAME poprt__dwconv_blocked_avx2
#define DW_GROUPED_NAME poprt__gconv_blocked_avx2
#define DW_BLANES 8 /* the blocked form a half block at a time */
#include "kernels/x86/conv_dw_body.inc"
