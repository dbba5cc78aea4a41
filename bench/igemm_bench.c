/* int8 GEMM benchmark: GMAC/s (multiply-accumulates per second, medians of
 * repeated runs) of poprt__igemm (lib/kernels/x86/igemm.h) for every
 * variant of its kernel list that this CPU runs, on shapes of int8 models:
 * 512^3, the MatMuls of a BERT-base-sized MLP and of MiniLM-L6 (rows 128), the im2col
 * products of a CNN's 3x3 convolutions (pixels x output channels x
 * 9 * input channels), with B packed once as the operators do and an
 * epilogue that reads nothing (the GEMM alone). One thread: the thread's CPU
 * time (time slices other processes take are not charged); 2 threads (with
 * --threads 2): wall time through the library's pool.
 *
 * usage: igemm_bench [--threads N] [--reps N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels/x86/igemm.h"
#include "runtime/runtime.h"

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

static void *xalloc(size_t bytes)
{
    void *p = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static void no_epi(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int32_t *c,
                   int64_t ldc, void *scratch)
{
    (void)ctx, (void)m0, (void)m1, (void)n0, (void)n1, (void)c, (void)ldc, (void)scratch;
}

static void pool_run(void *self, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t),
                     void *ctx)
{
    if (!poprt__pool_run(self, n, grain, fn, ctx))
        fn(ctx, 0, n);
}

int main(int argc, char **argv)
{
    int threads = 1, reps = 15;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--threads N] [--reps N]\n", argv[0]);
            return 2;
        }
    }
    if (threads < 1 || reps < 1 || reps > 1000)
        return 2;
    poprt__pool *pool = NULL;
    if (threads > 1) {
        g_clock = CLOCK_MONOTONIC;
        if (poprt__pool_create(threads, &pool)) {
            fprintf(stderr, "cannot create a pool of %d threads\n", threads);
            return 1;
        }
    }
    const poprt__par par = {pool ? pool_run : NULL, pool};
    static const struct {
        const char *what;
        int64_t M, N, K;
    } shapes[] = {
        {"square", 512, 512, 512},     {"MLP up 128x768->3072", 128, 3072, 768},
        {"MLP down 128x3072->768", 128, 768, 3072},
        {"MiniLM QKV/out 128x384->384", 128, 384, 384},
        {"MiniLM MLP up 128x384->1536", 128, 1536, 384},
        {"MiniLM MLP down 128x1536->384", 128, 384, 1536},
        {"conv 3x3 64->64 at 64x64", 4096, 64, 576},
        {"conv 3x3 128->128 at 32x32", 1024, 128, 1152},
        {"conv 3x3 256->256 at 16x16", 256, 256, 2304},
    };
    printf("igemm_bench: %d thread%s, medians of %d runs, GMAC/s (uint8 x int8 -> int32; the "
           "7-bit variants get the weights halved)\n",
           threads, threads > 1 ? "s" : "", reps);
    double *t = xalloc(sizeof(double) * (size_t)reps);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
        uint8_t *A = xalloc((size_t)(M * K));
        int8_t *B = xalloc((size_t)(K * N));
        for (int64_t i = 0; i < M * K; i++)
            A[i] = (uint8_t)(i * 2654435761u >> 11);
        for (int64_t i = 0; i < K * N; i++)
            B[i] = (int8_t)(i * 40503u >> 5);
        void *bp = xalloc(poprt__igemm_pack_size(K, N));
        poprt__igemm_pack(K, N, B, NULL, N, 1, 0, bp);
        /* the 7-bit variants (igemm.h) get the same weights halved */
        int8_t *B7 = xalloc((size_t)(K * N));
        for (int64_t i = 0; i < K * N; i++)
            B7[i] = (int8_t)(B[i] >> 1);
        void *bp7 = xalloc(poprt__igemm_pack_size(K, N));
        poprt__igemm_pack(K, N, B7, NULL, N, 1, 0, bp7);
        printf("%-28s %5lld x %5lld x %5lld", shapes[s].what, (long long)M, (long long)N,
               (long long)K);
        for (int v = 0; v < poprt__igemm_n_variants; v++) {
            const poprt__igemm_variant *var = &poprt__igemm_variants[v];
            if (!poprt__igemm_usable(var))
                continue;
            void *ws = xalloc(poprt__igemm_ws_size(var, M, N, threads));
            const poprt__igemm_epi epi = {no_epi, NULL};
            /* the portable variant is ~200x slower: a few runs */
            const int n = var->isa == POPRT__ISA_SCALAR ? (reps < 3 ? reps : 3) : reps;
            const void *b = var->b7 ? bp7 : bp;
            poprt__igemm(var, &par, threads, ws, M, N, K, A, K, b, &epi); /* warm-up */
            for (int r = 0; r < n; r++) {
                const double t0 = now();
                poprt__igemm(var, &par, threads, ws, M, N, K, A, K, b, &epi);
                t[r] = now() - t0;
            }
            qsort(t, (size_t)n, sizeof *t, cmp_d);
            printf("  %s %7.1f", var->name, (double)(M * N * K) / t[n / 2] * 1e-9);
            free(ws);
        }
        printf("\n");
        free(A);
        free(B);
        free(bp);
        free(B7);
        free(bp7);
    }
    free(t);
    poprt__pool_free(pool);
    return 0;
}
