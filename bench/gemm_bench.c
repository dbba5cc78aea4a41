/* fp32 GEMM benchmark: this machine's FMA peak, then GFLOP/s (medians of
 * repeated runs) of poprt__sgemm for the kernel list at 512^3 and for the
 * shapes real models use (square, BERT-base MatMuls with the weight
 * pre-packed as the MatMul kernel does, attention products, ResNet-50 convs
 * as im2col GEMMs, GEMV) at 1 and 2 threads, next to the scalar reference.
 * The shape table runs through thread pools of 1 and 2 threads the way a
 * session runs kernels (a 1-thread pool runs the task grid inline); "B
 * packed" shapes cycle through 64 MiB of packed copies of B, so that B comes
 * from memory like a model's weights (see COLD_BYTES). One-thread figures
 * are timed with the thread's CPU time, two-thread figures with wall time
 * (see now()).
 *
 * The peak is a genuine FMA-throughput loop: 16 independent zmm (12 ymm)
 * accumulator chains, more than FMA latency (4 cycles) x 2 FMA ports, no
 * loads. "standalone peak" is the median of nine 50 ms runs of that loop.
 *
 * The headline (last line)
 *   sgemm 512x512x512 1 thread: X GFLOP/s = P% of peak
 * is measured so that the peak and the GEMM see the same machine: this is a
 * shared VM whose FMA throughput drifts over seconds (other guests, clock
 * changes), so a peak measured once, before, can be 30% off the one the
 * GEMM actually ran under. It alternates FMA-loop samples and GEMM samples
 * of about the same duration (two GEMMs, ~3 ms), F0 G0 F1 G1 ... Gn-1 Fn,
 * and for every GEMM sample takes the ratio Gi / ((Fi + Fi+1) / 2) to the
 * FMA rate measured just before and just after it. P is the median of those
 * ratios, X the median GEMM rate. The line before it gives the median FMA
 * rate of the alternation and the standalone peak, so the two can be
 * compared. The durations matter: short FMA bursts between GEMM runs
 * measure lower than long ones (P would look ~10% better with 0.15 ms
 * bursts), hence samples of equal length.
 *
 * usage: gemm_bench [--quick] [--variant NAME] [--kc N] [--nc N] [--reps N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>
#include "kernels/ref/gemm.h"
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
    int packed_b; /* B (the weight) packed once beforehand, as MatMul/Conv do */
} shape;

static void *xalloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static float *rand_mat(int64_t n)
{
    float *p = xalloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
    return p;
}

static int g_reps = 15;

/* One problem ready to run: operands, workspace, optional packed B. */
typedef struct problem {
    const poprt__sgemm_variant *v; /* NULL: the reference */
    const poprt__par *par;
    int64_t M, N, K;
    float *A, *B, *C;
    void *ws;
    void *bpk[64]; /* packed copies of B, used in turn */
    int ncopy, next;
} problem;

/* Packed B is cycled through copies totalling >= 64 MiB, so that it comes
 * from memory like the weights of a model do (BERT-base: ~340 MiB) rather
 * than from a cache that kept it since the previous call. */
#define COLD_BYTES ((size_t)64 << 20)

static void problem_init(problem *pr, const poprt__sgemm_variant *v, const poprt__par *par,
                         int64_t M, int64_t N, int64_t K, int packed_b)
{
    memset(pr, 0, sizeof *pr);
    pr->v = v;
    pr->par = par;
    pr->M = M;
    pr->N = N;
    pr->K = K;
    pr->A = rand_mat(M * K);
    pr->B = rand_mat(K * N);
    pr->C = rand_mat(M * N);
    if (v && packed_b) {
        const size_t sz = poprt__sgemm_pack_b_size(v, K, N);
        pr->ncopy = (int)(COLD_BYTES / sz) + 1;
        if (pr->ncopy > 64)
            pr->ncopy = 64;
        for (int c = 0; c < pr->ncopy; c++) {
            pr->bpk[c] = xalloc(sz);
            poprt__sgemm_pack_b(v, NULL, 0, K, N, pr->B, N, pr->bpk[c]);
        }
        pr->ws = xalloc(poprt__sgemm_packed_workspace(NULL, pr->bpk[0], 0, 0, M, N, K));
    } else {
        pr->ws = xalloc(v ? poprt__sgemm_workspace(v, 0, 0, M, N, K) : 64);
    }
}

static void problem_run(problem *pr)
{
    if (!pr->v)
        poprt__ref_sgemm(0, 0, pr->M, pr->N, pr->K, 1.0f, pr->A, pr->K, pr->B, pr->N, 0.0f,
                         pr->C, pr->N);
    else if (pr->ncopy) {
        const void *bpk = pr->bpk[pr->next];
        pr->next = (pr->next + 1) % pr->ncopy;
        if (poprt__sgemm_packed(pr->par, pr->ws, 0, 0, pr->M, pr->N, pr->K, 1.0f, pr->A, pr->K,
                                NULL, NULL, 0, bpk, 0.0f, pr->C, pr->N)) {
            fprintf(stderr, "gemm_bench: the packed GEMM refused its operand (%s)\n",
                    pr->v->name);
            exit(1);
        }
    }
    else
        poprt__sgemm(pr->v, pr->par, pr->ws, 0, 0, pr->M, pr->N, pr->K, 1.0f, pr->A, pr->K,
                     pr->B, pr->N, 0.0f, pr->C, pr->N);
}

static void problem_free(problem *pr)
{
    free(pr->A);
    free(pr->B);
    free(pr->C);
    free(pr->ws);
    for (int c = 0; c < pr->ncopy; c++)
        free(pr->bpk[c]);
}

/* median GFLOP/s of poprt__sgemm (v) or of the reference (v NULL) */
static double bench_gemm(const poprt__sgemm_variant *v, const poprt__par *par, int nthreads,
                         int64_t M, int64_t N, int64_t K, int packed_b)
{
    g_clock = nthreads > 1 ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
    problem pr;
    problem_init(&pr, v, par, M, N, K, packed_b);
    const double flops = 2.0 * M * N * K;
    /* repeat each timed sample to >= ~20 ms so short shapes are measurable */
    double t0 = now();
    problem_run(&pr);
    double one = now() - t0;
    int inner = one > 0.02 ? 1 : (int)(0.02 / (one > 1e-7 ? one : 1e-7)) + 1;
    int reps = v ? g_reps : 5;
    double *g = malloc(sizeof(double) * (size_t)reps);
    for (int r = 0; r < reps; r++) {
        t0 = now();
        for (int i = 0; i < inner; i++)
            problem_run(&pr);
        g[r] = flops * inner / (now() - t0) * 1e-9;
    }
    double med = median(g, reps);
    free(g);
    problem_free(&pr);
    return med;
}

/* FMA-loop rate of one sample of iters iterations, GFLOP/s (thread CPU time) */
static double fma_sample(int zmm, long iters)
{
    double r = 0;
#if defined(__x86_64__)
    static volatile float sink;
    double t0 = now();
    sink = sink + (zmm ? fma_loop_zmm(iters) : fma_loop_ymm(iters));
    r = (double)iters * (zmm ? 16 * 16 : 12 * 8) * 2 / (now() - t0) * 1e-9;
#else
    (void)zmm;
    (void)iters;
#endif
    return r;
}

/* The headline: 512^3 on one thread, GEMM samples between FMA-loop samples
 * of similar duration (see the comment at the top). Returns the median
 * GEMM rate, the median of per-sample GEMM / neighbouring-FMA ratios and
 * the median FMA rate of the alternation. */
static void headline(const poprt__sgemm_variant *v, int zmm, double *gemm, double *ratio,
                     double *fma)
{
    const int64_t n = 512;
    const int runs = 2 * g_reps + 1, inner = 2;
    problem pr;
    problem_init(&pr, v, NULL, n, n, n, 0);
    double *g = malloc(sizeof(double) * (size_t)runs);
    double *f = malloc(sizeof(double) * (size_t)(runs + 1));
    double *q = malloc(sizeof(double) * (size_t)runs);
    if (!g || !f || !q) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    g_clock = CLOCK_THREAD_CPUTIME_ID;
    /* warm up, then size the FMA samples to last as long as a GEMM sample */
    problem_run(&pr);
    double t0 = now();
    for (int i = 0; i < inner; i++)
        problem_run(&pr);
    const double tg = now() - t0;
    long iters = 1 << 14;
    t0 = now();
    fma_sample(zmm, iters);
    const double tf = now() - t0;
    if (tf > 0)
        iters = (long)((double)iters * tg / tf) + 1;
    for (int r = 0; r <= runs; r++) {
        f[r] = fma_sample(zmm, iters);
        if (r == runs)
            break;
        t0 = now();
        for (int i = 0; i < inner; i++)
            problem_run(&pr);
        g[r] = inner * 2.0 * n * n * n / (now() - t0) * 1e-9;
    }
    for (int r = 0; r < runs; r++) {
        const double around = 0.5 * (f[r] + f[r + 1]);
        q[r] = around > 0 ? g[r] / around : 0;
    }
    *gemm = median(g, runs);
    *ratio = median(q, runs);
    *fma = median(f, runs + 1);
    free(g);
    free(f);
    free(q);
    /* The timed result against the reference GEMM on the same operands:
     * each element within the float rounding bound 2 K u sum_k |a_ik b_kj|
     * (u = 2^-24), the bound both results must satisfy against the exact sum;
     * a bfloat16 variant rounds each operand by up to 2^-9 relative first, so
     * its products are off by up to 2^-8 of |a_ik b_kj| on top of that. */
    float *ref = xalloc(sizeof(float) * (size_t)(n * n));
    poprt__ref_sgemm(0, 0, n, n, n, 1.0f, pr.A, n, pr.B, n, 0.0f, ref, n);
    double worst = 0, worst_bound = 0;
    int bad = 0;
    for (int64_t i = 0; i < n && !bad; i++)
        for (int64_t j = 0; j < n; j++) {
            double mag = 0;
            for (int64_t k = 0; k < n; k++)
                mag += fabs((double)pr.A[i * n + k] * pr.B[k * n + j]);
            const double bound =
                (2.0 * 2.0 * (double)n * 0x1p-24 + (v->kpack == 2 ? 0x1p-8 : 0.0)) * mag;
            const double err = fabs((double)pr.C[i * n + j] - ref[i * n + j]);
            if (err > worst) {
                worst = err;
                worst_bound = bound;
            }
            if (!(err <= bound)) {
                bad = 1;
                fprintf(stderr, "sgemm 512^3 (%s): C[%lld,%lld] = %.9g, reference %.9g, beyond "
                        "the rounding bound %.3g\n", v->name, (long long)i, (long long)j,
                        pr.C[i * n + j], ref[i * n + j], bound);
                break;
            }
        }
    printf("check: sgemm 512x512x512 (%s) against poprt__ref_sgemm: largest difference %.3g "
           "(its bound %.3g): %s\n", v->name, worst, worst_bound, bad ? "FAIL" : "ok");
    free(ref);
    problem_free(&pr);
    if (bad)
        exit(1);
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

    /* the shape table runs through pools like a session's: a 1-thread pool
     * runs the GEMM's task grid inline, in order (as threads=1 does) */
    poprt__pool *pool = NULL, *pool1 = NULL;
    if (poprt__pool_create(2, &pool) != POPRT_OK || poprt__pool_create(1, &pool1) != POPRT_OK) {
        fprintf(stderr, "cannot create a thread pool\n");
        return 1;
    }
    poprt__par par1 = {pool_run, pool1}, par2 = {pool_run, pool};

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
        double g = bench_gemm(v, NULL, 1, 512, 512, 512, 0);
        const double pk = v->isa >= POPRT__ISA_AVX512 ? peak_avx512 : peak_avx2;
        printf("  %-16s %7.1f GFLOP/s", v->name, g);
        if (v->isa >= POPRT__ISA_AVX2 && pk > 0)
            printf(" = %5.1f%% of standalone %s peak", 100.0 * g / pk,
                   poprt__isa_name(v->isa >= POPRT__ISA_AVX512 ? POPRT__ISA_AVX512 : v->isa));
        if (v->kpack == 2 && v->isa < POPRT__ISA_AMX)
            printf(" (bfloat16 operands: VDPBF16PS adds 2 products per float lane,\n"
                   "  %-16s so up to 2x the float32 FMA peak; accuracy: test_kernels_x86)",
                   "");
        else if (v->kpack == 2)
            printf(" (bfloat16 operands on AMX tiles: TDPBF16PS adds 16x16x32 products,\n"
                   "  %-16s up to 16x the float32 FMA peak; accuracy: test_kernels_x86)",
                   "");
        printf("\n");
    }
    if (!quick)
        printf("  %-16s %7.1f GFLOP/s (poprt__ref_sgemm, the oracle)\n", "reference",
               bench_gemm(NULL, NULL, 1, 512, 512, 512, 0));

    /* "B packed" shapes run poprt__sgemm_packed with B packed beforehand,
     * like the MatMul and Conv kernels with constant weights, and cycled
     * through 64 MiB of copies (see COLD_BYTES) */
    static const shape shapes[] = {
        {"square", 512, 512, 512, 0},
        {"bert-base QKV/out (seq 128)", 128, 768, 768, 0},
        {"  same, B packed", 128, 768, 768, 1},
        {"bert-base FFN up, B packed", 128, 3072, 768, 1},
        {"bert-base FFN down, B packed", 128, 768, 3072, 1},
        {"attention Q.K^T (head 64)", 128, 128, 64, 0},
        {"attention P.V (head 64)", 128, 64, 128, 0},
        {"FFN slice", 384, 384, 1536, 0},
        {"GEMV-like (batch 1)", 1, 4096, 4096, 0},
        {"GEMV-like classifier, B packed", 1, 1000, 2048, 1},
        {"ResNet-50 conv1 7x7/2 (im2col)", 64, 12544, 147, 0},
        {"ResNet-50 res2 1x1 256->64", 64, 3136, 256, 0},
        {"ResNet-50 res2 3x3 64->64", 64, 3136, 576, 0},
        {"ResNet-50 res3 3x3 128->128", 128, 784, 1152, 0},
        {"ResNet-50 res4 1x1 1024->256", 256, 196, 1024, 0},
        {"ResNet-50 res5 3x3 512->512", 512, 49, 4608, 0},
    };
    const int nshapes = quick ? 1 : (int)(sizeof shapes / sizeof shapes[0]);
    printf("\n%s (kc %d, nc %d), GFLOP/s, median of %d runs:\n", var.name, var.kc, var.nc,
           g_reps);
    printf("  %-32s %20s %9s %9s %8s\n", "shape", "MxNxK", "1 thread", "2 threads", "speedup");
    for (int s = 0; s < nshapes; s++) {
        const shape *sh = &shapes[s];
        if (sh->packed_b && kc > 0) {
            /* a packed operand's K blocks are its variant's in the list (the
             * GEMM refuses others): nothing to time under --kc */
            printf("  %-32s %20s   skipped: --kc (packed B keeps the list's K blocks)\n",
                   sh->what, "");
            continue;
        }
        double g1 = bench_gemm(&var, &par1, 1, sh->M, sh->N, sh->K, sh->packed_b);
        double g2 = bench_gemm(&var, &par2, 2, sh->M, sh->N, sh->K, sh->packed_b);
        char dims[64];
        snprintf(dims, sizeof dims, "%lldx%lldx%lld", (long long)sh->M, (long long)sh->N,
                 (long long)sh->K);
        printf("  %-32s %20s %9.1f %9.1f %7.2fx\n", sh->what, dims, g1, g2, g2 / g1);
    }
    poprt__pool_free(pool);
    poprt__pool_free(pool1);
    double hg = 0, hq = 0, hf = 0;
    headline(&var, peak_avx512 > 0, &hg, &hq, &hf);
    printf("\nheadline, %d GEMM samples between %d FMA-loop samples: FMA loop %.1f GFLOP/s "
           "(standalone peak %.1f), sgemm %.1f GFLOP/s = %.1f%% of standalone peak\n",
           2 * g_reps + 1, 2 * g_reps + 2, hf, peak, hg, peak > 0 ? 100.0 * hg / peak : 0.0);
    printf("sgemm 512x512x512 1 thread: %.1f GFLOP/s = %.1f%% of peak (interleaved); "
           "%.1f%% of the standalone peak\n",
           hg, 100.0 * hq, peak > 0 ? 100.0 * hg / peak : 0.0);
    return 0;
}
