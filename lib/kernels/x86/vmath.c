/* The vectorised math kernel list and its dispatch (see vmath.h). */
#include "kernels/x86/vmath.h"

#define POPRT__VMATH_PTR_U_avx512(f) poprt__vmath_avx512_##f,
#define POPRT__VMATH_PTR_U_avx2(f) poprt__vmath_avx2_##f,
#define POPRT__VMATH_PTR_U_scalar(f) poprt__vmath_scalar_##f,
#define POPRT__VMATH_VARIANT(isa, level, width)                                              \
    {#isa,                                                                                   \
     level,                                                                                  \
     width,                                                                                  \
     {POPRT__VMATH_UNARY(POPRT__VMATH_PTR_U_##isa)},                                         \
     {POPRT__VMATH_BINARY(POPRT__VMATH_PTR_U_##isa)},                                        \
     poprt__vmath_##isa##_softmax,                                                           \
     poprt__vmath_##isa##_sum},
const poprt__vmath_variant poprt__vmath_variants[] = {
#include "kernels/x86/vmath_kernels.inc"
};
#undef POPRT__VMATH_VARIANT
const int poprt__vmath_n_variants =
    (int)(sizeof poprt__vmath_variants / sizeof poprt__vmath_variants[0]);

#define POPRT__VMATH_NAME(f) #f,
const char *const poprt__vmath_unary_names[POPRT__VMATH_N_UNARY] = {
    POPRT__VMATH_UNARY(POPRT__VMATH_NAME)};
const char *const poprt__vmath_binary_names[POPRT__VMATH_N_BINARY] = {
    POPRT__VMATH_BINARY(POPRT__VMATH_NAME)};

int poprt__vmath_usable(const poprt__vmath_variant *v)
{
    return v && poprt__cpu_features()->isa >= v->isa;
}

const poprt__vmath_variant *poprt__vmath_best(void)
{
    /* Racing threads compute the same pointer, so a relaxed cache is enough. */
    static const poprt__vmath_variant *best;
    const poprt__vmath_variant *b = __atomic_load_n(&best, __ATOMIC_RELAXED);
    if (b)
        return b;
    b = &poprt__vmath_variants[poprt__vmath_n_variants - 1];
    for (int i = 0; i < poprt__vmath_n_variants; i++)
        if (poprt__vmath_usable(&poprt__vmath_variants[i])) {
            b = &poprt__vmath_variants[i];
            break;
        }
    __atomic_store_n(&best, b, __ATOMIC_RELAXED);
    return b;
}
