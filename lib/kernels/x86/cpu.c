/* CPU feature detection (see cpu.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/x86/cpu.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* Linux keeps AMX tile data disabled until the process asks for it. */
static int amx_permitted(void)
{
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_GET_XCOMP_PERM = 0x1022, ARCH_REQ_XCOMP_PERM = 0x1023, XTILEDATA = 18 };
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XTILEDATA) != 0)
        return 0;
    unsigned long bits = 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bits) != 0)
        return 0;
    return (bits >> XTILEDATA) & 1;
#else
    return 0;
#endif
}

static uint32_t detect(int want_amx)
{
    unsigned a, b, c, d;
    uint32_t f = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    const int osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    if (!osxsave || !avx)
        return 0;
    const uint64_t xcr0 = xgetbv0();
    /* XMM|YMM state; opmask|ZMM_Hi256|Hi16_ZMM; XTILECFG|XTILEDATA */
    const int os_avx = (xcr0 & 0x6) == 0x6;
    const int os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
    const int os_amx = (xcr0 & 0x60000) == 0x60000;
    if (!os_avx)
        return 0;
    f |= POPRT__CPU_AVX;
    if ((c >> 29) & 1)
        f |= POPRT__CPU_F16C;
    if ((c >> 12) & 1)
        f |= POPRT__CPU_FMA;
    if (__get_cpuid_max(0, NULL) < 7)
        return f;
    unsigned b7, c7, d7, a71 = 0, tmp;
    __cpuid_count(7, 0, a, b7, c7, d7);
    const unsigned max7 = a;
    if (max7 >= 1)
        __cpuid_count(7, 1, a71, tmp, tmp, tmp);
    if ((b7 >> 5) & 1)
        f |= POPRT__CPU_AVX2;
    if ((a71 >> 4) & 1)
        f |= POPRT__CPU_AVX_VNNI;
    if (os_avx512) {
        if ((b7 >> 16) & 1)
            f |= POPRT__CPU_AVX512F;
        if ((b7 >> 17) & 1)
            f |= POPRT__CPU_AVX512DQ;
        if ((b7 >> 30) & 1)
            f |= POPRT__CPU_AVX512BW;
        if ((b7 >> 31) & 1)
            f |= POPRT__CPU_AVX512VL;
        if ((c7 >> 11) & 1)
            f |= POPRT__CPU_AVX512_VNNI;
        if ((d7 >> 23) & 1)
            f |= POPRT__CPU_AVX512_FP16;
        if ((a71 >> 5) & 1)
            f |= POPRT__CPU_AVX512_BF16;
    }
    const int amx_cpu = ((d7 >> 24) & 1) != 0;
    if (want_amx && amx_cpu && os_amx && amx_permitted()) {
        f |= POPRT__CPU_AMX_TILE;
        if ((d7 >> 22) & 1)
            f |= POPRT__CPU_AMX_BF16;
        if ((d7 >> 25) & 1)
            f |= POPRT__CPU_AMX_INT8;
    }
    return f;
}

/* Size of the level-`level` data (or unified) cache from the deterministic
 * cache descriptors of leaf `leaf` (4 on Intel, 0x8000001D on AMD), or 0. */
static int64_t cache_bytes(unsigned leaf, unsigned level)
{
    unsigned a, b, c, d;
    for (unsigned i = 0; i < 16; i++) {
        __cpuid_count(leaf, i, a, b, c, d);
        const unsigned type = a & 31, lvl = (a >> 5) & 7;
        if (type == 0)
            break;
        if ((type == 1 || type == 3) && lvl == level)
            return (int64_t)((b >> 22) + 1) * (((b >> 12) & 1023) + 1) * ((b & 4095) + 1) *
                   ((int64_t)c + 1);
    }
    return 0;
}

static void detect_caches(int64_t *l1d, int64_t *l2)
{
    unsigned a, b, c, d;
    *l1d = *l2 = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d))
        return;
    const int amd = b == 0x68747541u; /* "Auth"enticAMD */
    unsigned leaf = 0;
    if (!amd && a >= 4)
        leaf = 4;
    else if (amd && (unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x8000001Du) {
        __get_cpuid(0x80000001u, &a, &b, &c, &d);
        if ((c >> 22) & 1) /* TOPOEXT: the descriptors are there */
            leaf = 0x8000001Du;
    }
    if (leaf) {
        *l1d = cache_bytes(leaf, 1);
        *l2 = cache_bytes(leaf, 2);
    }
}
#else
static uint32_t detect(int want_amx)
{
    (void)want_amx;
    return 0;
}

static void detect_caches(int64_t *l1d, int64_t *l2)
{
    *l1d = *l2 = 0;
}
#endif

#define AVX2_SET (POPRT__CPU_AVX | POPRT__CPU_AVX2 | POPRT__CPU_FMA)
#define AVX512_SET                                                                         \
    (AVX2_SET | POPRT__CPU_AVX512F | POPRT__CPU_AVX512BW | POPRT__CPU_AVX512VL |            \
     POPRT__CPU_AVX512DQ)
#define AMX_SET (POPRT__CPU_AMX_TILE | POPRT__CPU_AMX_BF16 | POPRT__CPU_AMX_INT8)

static poprt__isa level_of(uint32_t f)
{
    if ((f & AVX512_SET) == AVX512_SET)
        return (f & AMX_SET) == AMX_SET ? POPRT__ISA_AMX : POPRT__ISA_AVX512;
    return (f & AVX2_SET) == AVX2_SET ? POPRT__ISA_AVX2 : POPRT__ISA_SCALAR;
}

/* Features allowed at a level (a cap, intersected with what was detected). */
static uint32_t allowed_at(poprt__isa lvl)
{
    switch (lvl) {
    case POPRT__ISA_SCALAR: return 0;
    case POPRT__ISA_AVX2: return AVX2_SET | POPRT__CPU_F16C | POPRT__CPU_AVX_VNNI;
    case POPRT__ISA_AVX512:
        return ~(uint32_t)AMX_SET;
    default: return ~(uint32_t)0;
    }
}

static poprt__cpu g_cpu;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_once(void)
{
    poprt__isa cap = POPRT__ISA_AMX;
    const char *e = getenv("POPRT_ISA");
    if (e) {
        if (!strcmp(e, "scalar"))
            cap = POPRT__ISA_SCALAR;
        else if (!strcmp(e, "avx2"))
            cap = POPRT__ISA_AVX2;
        else if (!strcmp(e, "avx512"))
            cap = POPRT__ISA_AVX512;
    }
    /* only ask the kernel for AMX state when AMX may be used */
    g_cpu.detected = detect(cap >= POPRT__ISA_AMX);
    g_cpu.isa_detected = level_of(g_cpu.detected);
    g_cpu.flags = g_cpu.detected & allowed_at(cap);
    g_cpu.isa = level_of(g_cpu.flags);
    detect_caches(&g_cpu.l1d_bytes, &g_cpu.l2_bytes);
    if (g_cpu.l1d_bytes < 16 * 1024 || g_cpu.l1d_bytes > 1024 * 1024)
        g_cpu.l1d_bytes = 32 * 1024;
    if (g_cpu.l2_bytes < 128 * 1024 || g_cpu.l2_bytes > 64 * 1024 * 1024)
        g_cpu.l2_bytes = 512 * 1024;
    /* a level's kernels need the whole level: drop partial extras below it */
    if (g_cpu.isa < POPRT__ISA_AVX512)
        g_cpu.flags &= allowed_at(g_cpu.isa) | POPRT__CPU_F16C;
}

const poprt__cpu *poprt__cpu_features(void)
{
    pthread_once(&g_once, init_once);
    return &g_cpu;
}

int poprt__cpu_has(uint32_t mask)
{
    return (poprt__cpu_features()->flags & mask) == mask;
}

const char *poprt__isa_name(poprt__isa isa)
{
    switch (isa) {
    case POPRT__ISA_SCALAR: return "scalar";
    case POPRT__ISA_AVX2: return "avx2";
    case POPRT__ISA_AVX512: return "avx512";
    case POPRT__ISA_AMX: return "amx";
    }
    return "?";
}

int poprt__isa_first(const void *list, int n, size_t elem_size, size_t isa_off)
{
    const poprt__isa have = poprt__cpu_features()->isa;
    for (int i = 0; i < n; i++) {
        poprt__isa need;
        memcpy(&need, (const char *)list + (size_t)i * elem_size + isa_off, sizeof need);
        if (have >= need)
            return i;
    }
    return -1;
}
