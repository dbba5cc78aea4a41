/* The x86 instances of the vectorised float32 math (lib/kernels/vmath.h):
 * AVX-512 (vmath_avx512.c, 16 lanes) and AVX2+FMA (vmath_avx2.c, 8 lanes;
 * its elementwise functions on pairs of vectors, vmath_avx2_pairs.c),
 * each vmath_body.inc on that ISA's primitives and compiled alone with its
 * own -m flags, listed best first with the portable instance last
 * (vmath_kernels.inc), and the choice among them for this CPU (after
 * POPRT_ISA). Only the kernel binder (poprt__kernels_vmath) and x86 drivers
 * choose; ref kernels take the table from their context. */
#ifndef POPRT_X86_VMATH_H
#define POPRT_X86_VMATH_H

#include "kernels/vmath.h"
#include "kernels/x86/cpu.h"

/* The kernel list (vmath_kernels.inc), best first; the last is portable. */
extern const poprt__vmath_variant poprt__vmath_variants[];
extern const int poprt__vmath_n_variants;
/* 1 when the CPU (after POPRT_ISA) can run v. */
int poprt__vmath_usable(const poprt__vmath_variant *v);
/* The first usable variant (cached; never NULL). */
const poprt__vmath_variant *poprt__vmath_best(void);
/* The functions of each ISA file (declared for the kernel list). */
#define POPRT__VMATH_DECL_U_avx512(f) POPRT__VMATH_DECL_U(avx512, f)
#define POPRT__VMATH_DECL_U_avx2(f) POPRT__VMATH_DECL_U(avx2, f)
#define POPRT__VMATH_DECL_B_avx512(f) POPRT__VMATH_DECL_B(avx512, f)
#define POPRT__VMATH_DECL_B_avx2(f) POPRT__VMATH_DECL_B(avx2, f)
#define POPRT__VMATH_PTR_avx512(f) poprt__vmath_avx512_##f,
#define POPRT__VMATH_PTR_avx2(f) poprt__vmath_avx2_##f,
#define POPRT__VMATH_VARIANT(isa, level, width) POPRT__VMATH_DECLARE(isa)
#include "kernels/x86/vmath_kernels.inc"
#undef POPRT__VMATH_VARIANT

#endif
