/* The x86 vectorised math kernel list and its dispatch (see vmath.h). */
#include "kernels/x86/fp8_round.h"
#include "kernels/x86/vmath.h"

/* (every entry rounds to float8 with the clones of x86/fp8_round.c) */
#define POPRT__VMATH_VARIANT(isa, level, width)                                              \
    POPRT__VMATH_TABLE(isa, level, width, poprt__fp8_round),
const poprt__vmath_variant poprt__vmath_variants[] = {
#include "kernels/x86/vmath_kernels.inc"
};
#undef POPRT__VMATH_VARIANT
const int poprt__vmath_n_variants =
    (int)(sizeof poprt__vmath_variants / sizeof poprt__vmath_variants[0]);

int poprt__vmath_usable(const poprt__vmath_variant *v)
{
    return v && (int)poprt__cpu_features()->isa >= v->isa;
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
