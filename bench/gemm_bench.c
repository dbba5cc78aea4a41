/* fp32 GEMM benchmark: measures this machine's FMA peak (independent FMAs
 * on zmm / ymm registers), then GFLOP/s (median of repeated runs) of
 * poprt__sgemm for several shapes with 1 and 2 threads, next to the scalar
 * reference GEMM. One-thread figures are timed with the thread's CPU time,
 * two-thread figures with wall time (see now()). The peak is the median of
 * nine 50 ms runs of the FMA loop alone. The last line is
 *   sgemm 512x512x512 1 thread: X GFLOP/s = P% of peak
 * with the peak of the widest FMA unit the CPU has.
 *
 * usage: gemm_bench [--quick] [--variant NAME] [--kc N] [--nc N] [--reps N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
#include "kernels/ref/nn.h"
#include "kernels/x86/sgemm.h"
#include "runtime/runtime.h"

/* One-thread figures use this thread's CPU time: on a shared machine the
 * time slices other processes take are not charged to the kernel (on an
 * idle machine it equals wall time). Multi-thread figures use wall time. */
static clockid_t g_clock = CLOCK_THREAD_CPUTIME_ID;

static double now(void)
{
    struct timespec ts;
    clock_gettime(g_clock, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- FMA peak: independent accumulator chains (16 zmm / 12 ymm, all in
 * registers), more than FMA latency (4 cycles) x two ports. ---------------------------------- */
#if defined(__x86_64__)
#define PEAK_BODY(T, SET1, FMA, WIDTH, NACC)                                                    \
    T x[NACC];                                                                             \
    const T m = SET1(0.999999f), a = SET1(1e-7f);                                          \
    for (int i = 0; i < NACC; i++)                                                         \
        x[i] = SET1((float)i);                                                             \
    for (long it = 0; it < iters; it++) {                                                  \
        _Pragma("GCC unroll 16") for (int i = 0; i < NACC; i++) x[i] = FMA(x[i], m, a);    \
                                                                                           \
    }                                                                                      \
    float s = 0;                                                                           \
    for (int i = 0; i < NACC; i++) {                                                       \
        float t[WIDTH];                                                                    \
        memcpy(t, &x[i], sizeof t);                                                        \
        s += t[0];                                                                         \
    }                                                                                      \
    return s;

__attribute__((target("avx512f,fma"), noinline)) static float fma_loop_zmm(long iters)
{
    PEAK_BODY(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16, 16)
}
__attribute__((target("avx2,fma"), noinline)) static float fma_loop_ymm(long iters)
{
    PEAK_BODY(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8, 12)
}

/* GFLOP/s of one core: median of 9 runs of ~50 ms (thread CPU time) */
static double fma_peak(int zmm)
{
    g_clock = CLOCK_THREAD_CPUTIME_ID;
    const int lanes = zmm ? 16 : 8;
    long iters = 1 << 20;
    volatile float sink = 0;
    double runs[9];
    for (int r = 0; r < 9; r++) {
        double t0 = now();
        sink += zmm ? fma_loop_zmm(iters) : fma_loop_ymm(iters);
        double dt = now() - t0;
        runs[r] = (double)iters * (zmm ? 16 : 12) * lanes * 2 / dt * 1e-9;
    }
    (void)sink;
    return median(runs, 9);
}
#endif

/* ---- threads -------------------------------------------------------------- */
static void pool_run(void *self, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t),
                     void *ctx)
{
    if (!poprt__pool_run(self, n, grain, fn, ctx))
        fn(ctx, 0, n);
}

/* ---- one measurement ------------------------------------------------------ */
typedef struct shape {
    const char *what;
    int64_t M, N, K;
} shape;

static float *rand_mat(int64_t n)
{
    float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    return p;
}

static int g_reps = 15;

/* median GFLOP/s of poprt__sgemm (v) or of the reference (v NULL) */
static double bench_gemm(const poprt__sgemm_variant *v, const poprt__par *par, int64_t M,
                         int64_t N, int64_t K)
{
    g_clock = par ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
    float *A = rand_mat(M * K), *B = rand_mat(K * N), *C = rand_mat(M * N);
    size_t wsz = v ? poprt__sgemm_workspace(v, 0, 0, M, N, K) : 64;
    void *ws = aligned_alloc(64, (wsz + 63) / 64 * 64);
    if (!ws) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    const double flops = 2.0 * M * N * K;
    /* repeat each timed sample to >= ~20 ms so short shapes are measurable */
    double t0 = now();
    if (v)
        poprt__sgemm(v, par, ws, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    else
        poprt__ref_sgemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    double one = now() - t0;
    int inner = one > 0.02 ? 1 : (int)(0.02 / (one > 1e-7 ? one : 1e-7)) + 1;
    int reps = v ? g_reps : 5;
    double *g = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        t0 = now();
        for (int i = 0; i < inner; i++) {
            if (v)
                poprt__sgemm(v, par, ws, 0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
            else
                poprt__ref_sgemm(0, 0, M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
        }
        g[r] = flops * inner / (now() - t0) * 1e-9;
    }
    double med = median(g, reps);
    free(g);
    free(A);
    free(B);
    free(C);
    free(ws);
    return med;
}

/* 512^3 on one thread, each GEMM sample next to a peak sample */
static void headline(const poprt__sgemm_variant *v, int zmm, double *gemm, double *pk)
{
    const int64_t n = 512;
    const int runs = 2 * g_reps + 1;
    float *A = rand_mat(n * n), *B = rand_mat(n * n), *C = rand_mat(n * n);
    void *ws = aligned_alloc(64, (poprt__sgemm_workspace(v, 0, 0, n, n, n) + 63) / 64 * 64);
    double *g = malloc(sizeof(double) * (size_t)runs), *p = malloc(sizeof(double) * (size_t)runs);
    if (!ws || !g || !p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    g_clock = CLOCK_THREAD_CPUTIME_ID;
    poprt__sgemm(v, NULL, ws, 0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
    volatile float sink = 0;
    for (int r = 0; r < runs; r++) {
        p[r] = 0;
#if defined(__x86_64__)
        const long iters = 1 << 17;
        double t0 = now();
        sink += zmm ? fma_loop_zmm(iters) : fma_loop_ymm(iters);
        p[r] = (double)iters * (zmm ? 16 * 16 : 12 * 8) * 2 / (now() - t0) * 1e-9;
#endif
        double t1 = now();
        for (int i = 0; i < 4; i++)
            poprt__sgemm(v, NULL, ws, 0, 0, n, n, n, 1.0f, A, n, B, n, 0.0f, C, n);
        g[r] = 4 * 2.0 * n * n * n / (now() - t1) * 1e-9;
    }
    (void)sink;
    *gemm = median(g, runs);
#if defined(__x86_64__)
    *pk = median(p, runs);
#endif
    free(g);
    free(p);
    free(A);
    free(B);
    free(C);
    free(ws);
}

int main(int argc, char **argv)
{
    const char *want = NULL;
    int kc = 0, nc = 0, quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--variant") && i + 1 < argc)
            want = argv[++i];
        else if (!strcmp(argv[i], "--kc") && i + 1 < argc)
            kc = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--nc") && i + 1 < argc)
            nc = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick"))
            quick = 1;
        else {
            fprintf(stderr, "usage: %s [--quick] [--variant NAME] [--kc N] [--nc N] [--reps N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (g_reps < 1)
        g_reps = 1;
    const poprt__cpu *cpu = poprt__cpu_features();
    printf("cpu: detected %s, using %s (POPRT_ISA caps it)\n", poprt__isa_name(cpu->isa_detected),
           poprt__isa_name(cpu->isa));

    double peak = 0, peak_avx2 = 0, peak_avx512 = 0;
#if defined(__x86_64__)
    if (cpu->isa_detected >= POPRT__ISA_AVX2) {
        peak_avx2 = fma_peak(0);
        printf("FMA peak, ymm (AVX2), 1 core: %.1f GFLOP/s\n", peak_avx2);
    }
    if (cpu->isa_detected >= POPRT__ISA_AVX512) {
        peak_avx512 = fma_peak(1);
        printf("FMA peak, zmm (AVX-512), 1 core: %.1f GFLOP/s\n", peak_avx512);
    }
#endif
    peak = peak_avx512 > 0 ? peak_avx512 : peak_avx2;

    /* the variant under test: best usable, or --variant, with --kc/--nc */
    poprt__sgemm_variant var = *poprt__sgemm_best();
    if (want) {
        int found = 0;
        for (int i = 0; i < poprt__sgemm_n_variants; i++)
            if (!strcmp(poprt__sgemm_variants[i].name, want)) {
                if (!poprt__sgemm_usable(&poprt__sgemm_variants[i])) {
                    fprintf(stderr, "variant %s: this CPU lacks its ISA\n", want);
                    return 1;
                }
                var = poprt__sgemm_variants[i];
                found = 1;
            }
        if (!found) {
            fprintf(stderr, "no variant %s\n", want);
            return 2;
        }
    }
    if (kc > 0)
        var.kc = kc;
    if (nc > 0)
        var.nc = nc;

    poprt__pool *pool = NULL;
    if (poprt__pool_create(2, &pool) != POPRT_OK) {
        fprintf(stderr, "cannot create a thread pool\n");
        return 1;
    }
    poprt__par par2 = {pool_run, pool};

    /* every usable variant of the kernel list at 512^3, one thread */
    printf("\nkernel list at 512x512x512, 1 thread (median of %d):\n", g_reps);
    for (int i = 0; i < poprt__sgemm_n_variants; i++) {
        const poprt__sgemm_variant *v = &poprt__sgemm_variants[i];
        if (!poprt__sgemm_usable(v)) {
            printf("  %-16s skipped: CPU lacks %s\n", v->name, poprt__isa_name(v->isa));
            continue;
        }
        if (quick && v->isa == POPRT__ISA_SCALAR)
            continue;
        double g = bench_gemm(v, NULL, 512, 512, 512);
        const double pk = v->isa >= POPRT__ISA_AVX512 ? peak_avx512 : peak_avx2;
        printf("  %-16s %7.1f GFLOP/s", v->name, g);
        if (v->isa >= POPRT__ISA_AVX2 && pk > 0)
            printf(" = %5.1f%% of %s peak", 100.0 * g / pk, poprt__isa_name(v->isa));
        printf("\n");
    }
    if (!quick)
        printf("  %-16s %7.1f GFLOP/s (poprt__ref_sgemm, the oracle)\n", "reference",
               bench_gemm(NULL, NULL, 512, 512, 512));

    static const shape shapes[] = {
        {"square", 512, 512, 512},
        {"bert-base QKV (seq 128)", 128, 768, 768},
        {"FFN slice", 384, 384, 1536},
        {"GEMV-like (batch 1)", 1, 4096, 4096},
        {"ResNet-50 conv1 7x7/2 (im2col)", 64, 12544, 147},
        {"ResNet-50 res2 1x1 256->64", 64, 3136, 256},
        {"ResNet-50 res2 3x3 64->64", 64, 3136, 576},
        {"ResNet-50 res3 3x3 128->128", 128, 784, 1152},
        {"ResNet-50 res4 1x1 1024->256", 256, 196, 1024},
        {"ResNet-50 res5 3x3 512->512", 512, 49, 4608},
    };
    const int nshapes = quick ? 1 : (int)(sizeof shapes / sizeof shapes[0]);
    printf("\n%s (kc %d, nc %d), GFLOP/s, median of %d runs:\n", var.name, var.kc, var.nc,
           g_reps);
    printf("  %-32s %20s %9s %9s %8s\n", "shape", "MxNxK", "1 thread", "2 threads", "speedup");
    double g512 = 0;
    for (int s = 0; s < nshapes; s++) {
        const shape *sh = &shapes[s];
        double g1 = bench_gemm(&var, NULL, sh->M, sh->N, sh->K);
        double g2 = bench_gemm(&var, &par2, sh->M, sh->N, sh->K);
        char dims[64];
        snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)sh->M, (long long)sh->N,
                 (long long)sh->K);
        printf("  %-32s %20s %9.1f %9.1f %7.2fx\n", sh->what, dims, g1, g2, g2 / g1);
        if (s == 0)
            g512 = g1;
    }
    poprt__pool_free(pool);
    (void)g512;
    /* headline: GEMM runs alternate with short FMA-loop bursts. The bursts
     * right after a GEMM run measure lower than the loop alone, so the
     * percentage uses the standalone peak measured first (the conservative
     * one); the alternating peak is shown for information. */
    double hg = 0, hp = peak;
    headline(&var, peak_avx512 > 0, &hg, &hp);
    printf("\nheadline, %d alternating runs: sgemm %.1f GFLOP/s, FMA loop between them %.1f "
           "GFLOP/s (%.1f%%)\n",
           2 * g_reps + 1, hg, hp, hp > 0 ? 100.0 * hg / hp : 0.0);
    printf("sgemm 512x512x512 1 thread: %.1f GFLOP/s = %.1f%% of peak\n", hg,
           peak > 0 ? 100.0 * hg / peak : 0.0);
    return 0;
}
