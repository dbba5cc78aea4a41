/* The depthwise conv plane list and its dispatch (see conv_dw.h), and the
 * portable instance of the plane function, compiled at baseline flags. */
#include "kernels/x86/conv_dw.h"

#define DW_PLANE_NAME poprt__dwconv_plane_scalar
#define DW_PLANE_LINKAGE
#define DW_BLOCKED_NAME poprt__dwconv_blocked_scalar
#define DW_GROUPED_NAME poprt__gconv_blocked_scalar
#define DW_BCOLS 2 /* 16-float vectors are four xmm at baseline */
#include "kernels/x86/conv_dw_body.inc"
#undef DW_PLANE_NAME
#undef DW_PLANE_LINKAGE
#undef DW_BLOCKED_NAME
#undef DW_GROUPED_NAME

#define POPRT__DWCONV_VARIANT(isa, level) {#isa, level, poprt__dwconv_plane_##isa, poprt__dwconv_blocked_##isa, poprt__gconv_blocked_##isa},
const poprt__dwconv_variant poprt__dwconv_variants[] = {
#include "kernels/x86/conv_dw_kernels.inc"
};
#undef POPRT__DWCONV_VARIANT
const int poprt__dwconv_n_variants =
    (int)(sizeof poprt__dwconv_variants / sizeof poprt__dwconv_variants[0]);

int poprt__dwconv_usable(const poprt__dwconv_variant *v)
{
    return v && poprt__cpu_features()->isa >= v->isa;
}

const poprt__dwconv_variant *poprt__dwconv_best(void)
{
    const int i = POPRT__ISA_FIRST(poprt__dwconv_variants, poprt__dwconv_n_variants);
    return &poprt__dwconv_variants[i < 0 ? poprt__dwconv_n_variants - 1 : i];
}
