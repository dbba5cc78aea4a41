/* CPU features, detected once (cpuid + xgetbv for the OS-enabled register
 * state; AMX also needs Linux's ARCH_REQ_XCOMP_PERM) and cached behind a
 * run-once guard. Kernels ask poprt__cpu_features() which variants they may
 * run.
 *
 * POPRT_ISA (environment, read once at first use) caps the features to a
 * lower level for testing and for comparing kernels on one machine:
 *   POPRT_ISA=scalar   portable C kernels only
 *   POPRT_ISA=avx2     AVX2 + FMA (+F16C), no AVX-512
 *   POPRT_ISA=avx512   AVX-512 F/BW/VL/DQ (+VNNI/BF16/FP16), no AMX
 *   POPRT_ISA=native   everything detected (the default; so is any other value)
 * It can only lower what the CPU has, never add a feature. */
#ifndef POPRT_X86_CPU_H
#define POPRT_X86_CPU_H

#include <stddef.h>
#include <stdint.h>

enum {
    POPRT__CPU_AVX = 1u << 0,
    POPRT__CPU_F16C = 1u << 1,
    POPRT__CPU_FMA = 1u << 2,
    POPRT__CPU_AVX2 = 1u << 3,
    POPRT__CPU_AVX512F = 1u << 4,
    POPRT__CPU_AVX512BW = 1u << 5,
    POPRT__CPU_AVX512VL = 1u << 6,
    POPRT__CPU_AVX512DQ = 1u << 7,
    POPRT__CPU_AVX512_VNNI = 1u << 8,
    POPRT__CPU_AVX512_BF16 = 1u << 9,
    POPRT__CPU_AVX512_FP16 = 1u << 10,
    POPRT__CPU_AVX_VNNI = 1u << 11,
    POPRT__CPU_AMX_TILE = 1u << 12,
    POPRT__CPU_AMX_BF16 = 1u << 13,
    POPRT__CPU_AMX_INT8 = 1u << 14,
};

/* ISA levels: each includes the previous one. */
typedef enum poprt__isa {
    POPRT__ISA_SCALAR = 0,
    POPRT__ISA_AVX2 = 1,   /* AVX2 + FMA with the OS saving ymm state */
    POPRT__ISA_AVX512 = 2, /* AVX-512 F/BW/VL/DQ with the OS saving zmm/opmask state */
    POPRT__ISA_AMX = 3,    /* AVX512 + AMX-TILE/BF16/INT8, tile data permitted */
} poprt__isa;

typedef struct poprt__cpu {
    uint32_t detected; /* what the CPU and OS support (before POPRT_ISA) */
    uint32_t flags;    /* what kernels may use (after POPRT_ISA) */
    poprt__isa isa;    /* highest level in flags */
    poprt__isa isa_detected;
    /* data cache sizes per core, in bytes, from cpuid's cache descriptors
     * (leaf 4 on Intel, 0x8000001D on AMD; 32 KiB / 512 KiB when the CPU
     * does not say): blocking of the GEMM and the convolutions */
    int64_t l1d_bytes, l2_bytes;
} poprt__cpu;

/* The cached features (thread-safe; detection runs once). Never NULL. */
const poprt__cpu *poprt__cpu_features(void);
/* Bytes of this core's L2 that a blocked kernel lets one reused operand
 * take (a GEMM's A or B block, a convolution's weights of all output
 * groups): half of it, the rest for the streamed operand and the outputs. */
static inline int64_t poprt__cpu_l2_reuse_bytes(void)
{
    return poprt__cpu_features()->l2_bytes / 2;
}
/* 1 when every feature bit in mask is usable. */
int poprt__cpu_has(uint32_t mask);
/* The kernel families of lib/kernels/x86 declare their variants in lists,
 * best first, each with the ISA level it needs (sgemm_kernels.inc,
 * vmath_kernels.inc, conv_dw_kernels.inc, conv_blocked_kernels.inc,
 * pool_kernels.inc, igemm_kernels.inc). One list drives dispatch, the tests and the
 * benchmarks. poprt__isa_first: the index of the first of the n entries
 * (elem_size bytes each, the level a poprt__isa at byte isa_off) the CPU
 * may run after POPRT_ISA, or -1; POPRT__ISA_FIRST(list, n) for an array of
 * structs with an `isa` member. */
int poprt__isa_first(const void *list, int n, size_t elem_size, size_t isa_off);
#define POPRT__ISA_FIRST(list, n)                                                                  \
    poprt__isa_first((list), (n), sizeof(list)[0],                                                 \
                     (size_t)((const char *)&(list)[0].isa - (const char *)&(list)[0]))
/* "scalar", "avx2", "avx512", "amx". */
const char *poprt__isa_name(poprt__isa isa);

#endif
