/* The 2-D max-pooling plane list and its dispatch (see pool.h), and the
 * portable instance of the vector-type body, compiled at baseline flags. */
#include "kernels/x86/pool.h"

#define MP_ISA scalar
#include "kernels/x86/pool_body.inc"

/* BlockedMaxPool's rows (pool_blocked_body.inc), portable: 16 floats. */
typedef struct bmp_v {
    float f[16];
} bmp_v;
static inline bmp_v bmp_load(const float *p)
{
    bmp_v v;
    memcpy(v.f, p, sizeof v.f);
    return v;
}
static inline void bmp_store(float *p, bmp_v v)
{
    memcpy(p, v.f, sizeof v.f);
}
static inline bmp_v bmp_max(bmp_v p, bmp_v b)
{
    for (int j = 0; j < 16; j++)
        b.f[j] = p.f[j] > b.f[j] ? p.f[j] : b.f[j];
    return b;
}
#include "kernels/x86/pool_blocked_body.inc"
#undef MP_ISA

#define POPRT__MAXPOOL_VARIANT(isa, level)                                                         \
    {#isa, level, poprt__maxpool2d_row_floats_##isa, poprt__maxpool2d_plane_##isa,                 \
     poprt__bmaxpool_rows_##isa},
const poprt__maxpool_variant poprt__maxpool_variants[] = {
#include "kernels/x86/pool_kernels.inc"
};
#undef POPRT__MAXPOOL_VARIANT
const int poprt__maxpool_n_variants =
    (int)(sizeof poprt__maxpool_variants / sizeof poprt__maxpool_variants[0]);

int poprt__maxpool_usable(const poprt__maxpool_variant *v)
{
    return v && poprt__cpu_features()->isa >= v->isa;
}

const poprt__maxpool_variant *poprt__maxpool_best(void)
{
    const int i = POPRT__ISA_FIRST(poprt__maxpool_variants, poprt__maxpool_n_variants);
    return &poprt__maxpool_variants[i < 0 ? poprt__maxpool_n_variants - 1 : i];
}
