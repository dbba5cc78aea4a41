/* Unit tests: x86 kernels (lib/kernels/x86). CPU detection against
 * /proc/cpuinfo, the POPRT_ISA cap, and every fp32 GEMM variant of the kernel
 * list (sgemm_kernels.inc) the CPU has against poprt__ref_sgemm at awkward
 * sizes, all transpositions, alpha/beta and padded leading dimensions.
 * Variants the CPU lacks are reported as skipped on stdout.
 *
 * Tolerance: |C - C_ref| <= 1e-5 * max(1, K / 256) * mag, where
 * mag = |alpha| * sum_k |a_ik b_kj| + |beta c_ij| (relative to the size of
 * the terms, widened with K because the two GEMMs sum in different orders).
 * Thread-count determinism and pre-packed operands are checked bit-exactly. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/ref/gemm.h"
#include "kernels/x86/sgemm.h"
#include "runtime/runtime.h"

/* deterministic data in [-1, 1] */
static float *mat(int64_t n, uint32_t seed)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(p);
    uint32_t s = seed * 2654435761u + 12345u;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return p;
}

static void *ws_alloc(size_t n)
{
    void *p = aligned_alloc(64, (n + 63) / 64 * 64);
    ck_assert_ptr_nonnull(p);
    return p;
}

typedef struct prob {
    int ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    float alpha, beta;
    float *A, *B, *C0;
} prob;

static prob mkprob(int ta, int tb, int64_t M, int64_t N, int64_t K, int pad, float alpha,
                   float beta, uint32_t seed)
{
    prob p = {ta, tb, M, N, K, 0, 0, 0, alpha, beta, NULL, NULL, NULL};
    p.lda = (ta ? M : K) + pad;
    p.ldb = (tb ? K : N) + pad;
    p.ldc = N + pad;
    p.A = mat((ta ? K : M) * p.lda, seed);
    p.B = mat((tb ? N : K) * p.ldb, seed + 1);
    p.C0 = mat(M * p.ldc, seed + 2);
    /* NaN in C must not leak through beta == 0 */
    if (beta == 0.0f)
        p.C0[0] = NAN;
    return p;
}

static void freeprob(prob *p)
{
    free(p->A);
    free(p->B);
    free(p->C0);
}

static float *copy_c(const prob *p)
{
    float *c = malloc((size_t)(p->M * p->ldc) * sizeof(float));
    ck_assert_ptr_nonnull(c);
    memcpy(c, p->C0, (size_t)(p->M * p->ldc) * sizeof(float));
    return c;
}

/* compares C with the reference; returns the number of bad elements */
static int64_t check_c(const prob *p, const float *C, const char *what)
{
    float *R = copy_c(p);
    poprt__ref_sgemm(p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B, p->ldb,
                     p->beta, R, p->ldc);
    const double widen = p->K > 256 ? p->K / 256.0 : 1.0;
    int64_t bad = 0;
    for (int64_t i = 0; i < p->M; i++)
        for (int64_t j = 0; j < p->ldc; j++) {
            const float c = C[i * p->ldc + j], r = R[i * p->ldc + j];
            if (j >= p->N) { /* padding columns untouched */
                if (memcmp(&c, &p->C0[i * p->ldc + j], sizeof c))
                    bad++;
                continue;
            }
            double mag = p->beta == 0.0f ? 0.0 : fabs(p->beta * p->C0[i * p->ldc + j]);
            for (int64_t k = 0; k < p->K; k++) {
                const float a = p->ta ? p->A[k * p->lda + i] : p->A[i * p->lda + k];
                const float b = p->tb ? p->B[j * p->ldb + k] : p->B[k * p->ldb + j];
                mag += fabs(p->alpha) * fabs((double)a * b);
            }
            const double tol = 1e-5 * widen * mag + 1e-30;
            if (!(fabs((double)c - r) <= tol)) {
                if (bad < 3)
                    fprintf(stderr, "%s: C[%lld][%lld] = %.9g, ref %.9g (tol %.3g)\n", what,
                            (long long)i, (long long)j, c, r, tol);
                bad++;
            }
        }
    free(R);
    return bad;
}

static void run_variant(const poprt__sgemm_variant *v, const prob *p, const poprt__par *par,
                        float *C)
{
    void *ws = ws_alloc(poprt__sgemm_workspace(v, p->ta, p->tb, p->M, p->N, p->K));
    poprt__sgemm(v, par, ws, p->ta, p->tb, p->M, p->N, p->K, p->alpha, p->A, p->lda, p->B,
                 p->ldb, p->beta, C, p->ldc);
    free(ws);
}

/* ---- CPU detection ---------------------------------------------------------- */

static int cpuinfo_has(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[8192];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "flags", 5)) {
            char *tok = strtok(line, " \t\n:");
            while (tok) {
                if (!strcmp(tok, flag))
                    found = 1;
                tok = strtok(NULL, " \t\n:");
            }
            break;
        }
    fclose(f);
    return found;
}

START_TEST(test_cpu_matches_cpuinfo)
{
    const poprt__cpu *c = poprt__cpu_features();
    static const struct {
        uint32_t bit;
        const char *flag;
    } map[] = {
        {POPRT__CPU_AVX2, "avx2"},           {POPRT__CPU_FMA, "fma"},
        {POPRT__CPU_AVX512F, "avx512f"},     {POPRT__CPU_AVX512BW, "avx512bw"},
        {POPRT__CPU_AVX512VL, "avx512vl"},   {POPRT__CPU_AVX512DQ, "avx512dq"},
        {POPRT__CPU_AVX512_FP16, "avx512_fp16"}, {POPRT__CPU_AVX512_BF16, "avx512_bf16"},
        {POPRT__CPU_AMX_TILE, "amx_tile"},   {POPRT__CPU_AMX_BF16, "amx_bf16"},
        {POPRT__CPU_AMX_INT8, "amx_int8"},
    };
    if (cpuinfo_has("fpu") != 1) {
        printf("kernels_x86: no /proc/cpuinfo flags; detection not cross-checked\n");
        return;
    }
    /* AMX permission is only requested when POPRT_ISA allows AMX */
    const char *isa_env = getenv("POPRT_ISA");
    const int amx_asked = !isa_env || (strcmp(isa_env, "scalar") && strcmp(isa_env, "avx2") &&
                                       strcmp(isa_env, "avx512"));
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (!amx_asked && (map[i].bit & (POPRT__CPU_AMX_TILE | POPRT__CPU_AMX_BF16 |
                                         POPRT__CPU_AMX_INT8)))
            continue;
        /* the kernel lists a feature only when the OS enables its state */
        int want = cpuinfo_has(map[i].flag) == 1;
        int got = (c->detected & map[i].bit) != 0;
        ck_assert_msg(want == got, "%s: cpuinfo %d, detected %d", map[i].flag, want, got);
    }
    ck_assert((c->flags & ~c->detected) == 0);
    ck_assert_int_le(c->isa, c->isa_detected);
    printf("kernels_x86: CPU level %s, kernels use %s, best sgemm %s\n",
           poprt__isa_name(c->isa_detected), poprt__isa_name(c->isa), poprt__sgemm_best()->name);
}
END_TEST

/* POPRT_ISA is read once per process: Check runs each test in a child
 * process, so this one sets it before anything detects the CPU. */
START_TEST(test_isa_override)
{
    const char *fork_env = getenv("CK_FORK");
    if (fork_env && !strcmp(fork_env, "no")) {
        printf("kernels_x86: POPRT_ISA override not tested with CK_FORK=no\n");
        return;
    }
    setenv("POPRT_ISA", "avx2", 1);
    const poprt__cpu *c = poprt__cpu_features();
    ck_assert_int_le(c->isa, POPRT__ISA_AVX2);
    ck_assert(!(c->flags & (POPRT__CPU_AVX512F | POPRT__CPU_AMX_TILE)));
    const poprt__sgemm_variant *v = poprt__sgemm_best();
    ck_assert_int_le(v->isa, POPRT__ISA_AVX2);
    if (c->isa_detected >= POPRT__ISA_AVX2)
        ck_assert_str_eq(v->name, "avx2_6x16");
    for (int i = 0; i < poprt__sgemm_n_variants; i++)
        if (poprt__sgemm_variants[i].isa > POPRT__ISA_AVX2)
            ck_assert(!poprt__sgemm_usable(&poprt__sgemm_variants[i]));
}
END_TEST

START_TEST(test_isa_scalar)
{
    const char *fork_env = getenv("CK_FORK");
    if (fork_env && !strcmp(fork_env, "no"))
        return;
    setenv("POPRT_ISA", "scalar", 1);
    ck_assert_int_eq(poprt__cpu_features()->isa, POPRT__ISA_SCALAR);
    ck_assert_str_eq(poprt__sgemm_best()->name, "scalar_4x16");
    /* the dispatcher still computes the right thing */
    prob p = mkprob(0, 1, 37, 45, 70, 0, 1.0f, 0.0f, 3);
    float *C = copy_c(&p);
    run_variant(NULL, &p, NULL, C);
    ck_assert_int_eq(check_c(&p, C, "scalar dispatch"), 0);
    free(C);
    freeprob(&p);
}
END_TEST

/* ---- every variant against the reference --------------------------------- */

static const int64_t shapes[][3] = {
    {1, 1, 1},     {1, 7, 31},   {7, 1, 33},    {31, 33, 7},  {33, 31, 1},   {13, 65, 64},
    {14, 32, 17},  {15, 33, 9},  {29, 97, 130}, {1, 513, 33}, {2, 100, 600}, {513, 31, 33},
    {64, 530, 40}, {40, 64, 1100}, {100, 1030, 5}, {300, 1024, 20}, {30, 2048, 3},
};
static const float ab[][2] = {{1.0f, 0.0f}, {0.5f, 1.0f}, {-1.5f, 0.25f}};

START_TEST(test_variant_vs_ref)
{
    const poprt__sgemm_variant *v = &poprt__sgemm_variants[_i];
    if (!poprt__sgemm_usable(v)) {
        printf("kernels_x86: %s skipped: CPU lacks %s\n", v->name, poprt__isa_name(v->isa));
        return;
    }
    int64_t total = 0, bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int t = 0; t < 4; t++)
            for (size_t a = 0; a < sizeof ab / sizeof ab[0]; a++) {
                const int pad = (int)((s + a) % 3 == 0 ? 0 : 3);
                prob p = mkprob(t & 1, t >> 1, shapes[s][0], shapes[s][1], shapes[s][2], pad,
                                ab[a][0], ab[a][1], (uint32_t)(s * 16 + t * 4 + a));
                float *C = copy_c(&p);
                run_variant(v, &p, NULL, C);
                char what[128];
                snprintf(what, sizeof what, "%s %lldx%lldx%lld tA%d tB%d a%g b%g", v->name,
                         (long long)p.M, (long long)p.N, (long long)p.K, p.ta, p.tb, p.alpha,
                         p.beta);
                int64_t nb = check_c(&p, C, what);
                ck_assert_msg(nb == 0, "%s: %lld bad elements", what, (long long)nb);
                bad += nb;
                total++;
                free(C);
                freeprob(&p);
            }
    printf("kernels_x86: %s passed %lld GEMMs against poprt__ref_sgemm\n", v->name,
           (long long)total);
    ck_assert_int_eq(bad, 0);
}
END_TEST

/* The tap-summing micro-kernel (direct convolution, channel-major) against a double sum:
 * full and partial tiles (mr, nr), 1..9 taps with offsets forward, backward
 * and overlapping, odd and even kc, beta 0 and 1; tolerance 1e-5 of the sum
 * of |terms| (float accumulation over at most 9*kc terms). */
START_TEST(test_ukr_taps)
{
    const poprt__sgemm_variant *v = &poprt__sgemm_variants[_i];
    if (!v->ukr_taps) {
        printf("kernels_x86: %s has no tap micro-kernel: skipped\n", v->name);
        return;
    }
    if (!poprt__sgemm_usable(v)) {
        printf("kernels_x86: %s taps skipped: CPU lacks %s\n", v->name, poprt__isa_name(v->isa));
        return;
    }
    const int MR = v->mr, NR = v->nr;
    const int64_t bs = 3 * NR + 5, ldc = NR + 3, toff_all[9] = {0, 1, 2, 57, 58, 59, -3, 7, 4};
    float *B = malloc(sizeof(float) * 70 * bs), *C = malloc(sizeof(float) * MR * ldc);
    float *A = malloc(sizeof(float) * 9 * 19 * MR);
    uint32_t seed = 11;
    for (int64_t i = 0; i < 70 * bs; i++) {
        seed = seed * 1664525u + 1013904223u;
        B[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    for (int64_t i = 0; i < 9 * 19 * MR; i++) {
        seed = seed * 1664525u + 1013904223u;
        A[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
    }
    const float *b0 = B + 8; /* tap offsets may be negative */
    static const int kcs[] = {1, 2, 7, 19};
    int64_t checked = 0;
    for (int ntaps = 1; ntaps <= 9; ntaps += 4)
        for (size_t ki = 0; ki < sizeof kcs / sizeof kcs[0]; ki++)
            for (int mr = MR; mr >= 1; mr -= MR - 1 > 4 ? 5 : 1)
                for (int nr = NR; nr >= 1; nr -= NR / 2 + 3)
                    for (int beta = 0; beta < 2; beta++) {
                        const int kc = kcs[ki];
                        for (int64_t i = 0; i < MR * ldc; i++)
                            C[i] = (float)(i % 7) - 3.0f;
                        v->ukr_taps(kc, ntaps, toff_all, mr, nr, A, b0, bs, C, ldc, 1.0f,
                                    (float)beta);
                        for (int r = 0; r < MR; r++)
                            for (int j = 0; j < NR; j++) {
                                const float got = C[r * ldc + j];
                                const float old = (float)((r * ldc + j) % 7) - 3.0f;
                                if (r >= mr || j >= nr) {
                                    ck_assert_msg(got == old, "%s: C[%d][%d] outside the tile "
                                                  "written", v->name, r, j);
                                    continue;
                                }
                                double sum = beta ? old : 0.0, mag = fabs(sum);
                                for (int k = 0; k < kc; k++)
                                    for (int t = 0; t < ntaps; t++) {
                                        const double term =
                                            (double)A[(k * ntaps + t) * MR + r] *
                                            b0[toff_all[t] + k * bs + j];
                                        sum += term;
                                        mag += fabs(term);
                                    }
                                ck_assert_msg(fabs(got - sum) <= 1e-5 * mag + 1e-30,
                                              "%s taps %d kc %d tile %dx%d beta %d: C[%d][%d] = "
                                              "%g, want %g", v->name, ntaps, kc, mr, nr, beta, r,
                                              j, got, sum);
                                checked++;
                            }
                    }
    printf("kernels_x86: %s tap micro-kernel: %lld elements checked\n", v->name,
           (long long)checked);
    free(A);
    free(B);
    free(C);
}
END_TEST

/* ---- determinism and packed operands --------------------------------------- */

/* a parallel-for that runs units one by one in reverse order: a different
 * split and order than any pool */
static void rev_run(void *self, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t),
                    void *ctx)
{
    (void)self;
    (void)grain;
    for (int64_t i = n - 1; i >= 0; i--)
        fn(ctx, i, i + 1);
}

static void pool_run(void *self, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t),
                     void *ctx)
{
    if (!poprt__pool_run(self, n, grain, fn, ctx))
        fn(ctx, 0, n);
}

START_TEST(test_threads_bit_identical)
{
    poprt__pool *pool = NULL;
    ck_assert_int_eq(poprt__pool_create(2, &pool), POPRT_OK);
    poprt__par p2 = {pool_run, pool}, prev = {rev_run, NULL};
    static const int64_t sh[][3] = {
        {512, 512, 512}, {100, 1030, 700}, {3, 4100, 64}, {700, 40, 90}, {200, 600, 64}};
    for (int i = 0; i < poprt__sgemm_n_variants; i++) {
        const poprt__sgemm_variant *v = &poprt__sgemm_variants[i];
        if (!poprt__sgemm_usable(v))
            continue;
        for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++) {
            prob p = mkprob((int)s & 1, 0, sh[s][0], sh[s][1], sh[s][2], 0, 1.0f, 0.5f, 7);
            float *c1 = copy_c(&p), *c2 = copy_c(&p), *c3 = copy_c(&p);
            run_variant(v, &p, NULL, c1);
            run_variant(v, &p, &p2, c2);
            run_variant(v, &p, &prev, c3);
            const size_t n = (size_t)(p.M * p.ldc) * sizeof(float);
            ck_assert_msg(!memcmp(c1, c2, n), "%s: 2 threads differ", v->name);
            ck_assert_msg(!memcmp(c1, c3, n), "%s: reversed split differs", v->name);
            free(c1);
            free(c2);
            free(c3);
            freeprob(&p);
        }
    }
    poprt__pool_free(pool);
}
END_TEST

/* a parallel-for that runs everything inline in one call, as a session with
 * one thread does (the task grid is still planned for threads) */
static void inline_run(void *self, int64_t n, int64_t grain,
                       void (*fn)(void *, int64_t, int64_t), void *ctx)
{
    (void)self;
    (void)grain;
    fn(ctx, 0, n);
}

/* The driver picks its loop order by how much of packed A stays in L2 (all
 * of it, one K block of it, or less) and plans the task grid from that.
 * Shapes for each case, with B given (read in place or packed per call) or
 * pre-packed, through no parallel-for, an inline one, 2 threads and a
 * reversed split: the same bits everywhere, within tolerance of the
 * reference (checked once per shape). */
START_TEST(test_blocking_orders)
{
    poprt__pool *pool = NULL;
    ck_assert_int_eq(poprt__pool_create(2, &pool), POPRT_OK);
    const poprt__par pars[] = {{inline_run, NULL}, {pool_run, pool}, {rev_run, NULL}};
    static const int64_t sh[][3] = {
        {128, 256, 3072}, /* BERT FFN-down-like: A in L2 one K block at a time */
        {128, 768, 768},  /* BERT QKV: all of A in L2 */
        {100, 300, 700},  /* all of A in L2, edge tiles both ways */
        {600, 200, 300},  /* A panel by panel against L2 blocks of B */
        {30, 70, 1500},   /* few rows, several K blocks */
        {1, 300, 700},    /* GEMV-like: B read in place, K block by K block */
        {300, 500, 40},   /* short K: row panels whatever the size of A */
    };
    int64_t runs = 0;
    for (int i = 0; i < poprt__sgemm_n_variants; i++) {
        const poprt__sgemm_variant *v = &poprt__sgemm_variants[i];
        if (!poprt__sgemm_usable(v))
            continue;
        for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++)
            for (int tb = 0; tb < 2; tb++) {
                prob p = mkprob(0, tb, sh[s][0], sh[s][1], sh[s][2], (int)s % 2, 1.0f, 0.5f,
                                (uint32_t)(31 + s * 2 + tb));
                const size_t n = (size_t)(p.M * p.ldc) * sizeof(float);
                float *c0 = copy_c(&p), *c = copy_c(&p);
                run_variant(v, &p, NULL, c0);
                char what[128];
                snprintf(what, sizeof what, "%s %lldx%lldx%lld tB%d", v->name,
                         (long long)p.M, (long long)p.N, (long long)p.K, tb);
                if (tb == 0)
                    ck_assert_int_eq(check_c(&p, c0, what), 0);
                void *pb = ws_alloc(poprt__sgemm_pack_b_size(v, p.K, p.N));
                poprt__sgemm_pack_b(v, NULL, tb, p.K, p.N, p.B, p.ldb, pb);
                void *ws = ws_alloc(poprt__sgemm_packed_workspace(NULL, pb, 0, tb, p.M, p.N, p.K));
                for (size_t q = 0; q < sizeof pars / sizeof pars[0]; q++) {
                    memcpy(c, p.C0, n);
                    run_variant(v, &p, &pars[q], c);
                    ck_assert_msg(!memcmp(c0, c, n), "%s: parallel-for %zu differs", what, q);
                    memcpy(c, p.C0, n);
                    ck_assert_int_eq(poprt__sgemm_packed(&pars[q], ws, 0, tb, p.M, p.N, p.K,
                                                         p.alpha, p.A, p.lda, NULL, NULL, 0, pb,
                                                         p.beta, c, p.ldc),
                                     0);
                    ck_assert_msg(!memcmp(c0, c, n), "%s: packed B, parallel-for %zu differs",
                                  what, q);
                    runs += 2;
                }
                free(ws);
                free(pb);
                free(c0);
                free(c);
                freeprob(&p);
            }
    }
    printf("kernels_x86: blocking orders: %lld runs bit-identical\n", (long long)runs);
    poprt__pool_free(pool);
}
END_TEST

/* poprt__sgemm_packed_epi: the epilogue sees every element of C exactly
 * once, each block already final (equal to the result without an
 * epilogue), on 1 and 2 threads and for shapes of each loop order. */
typedef struct epi_check {
    const float *want, *c;
    int64_t ldc;
    int *seen;
    int bad;
} epi_check;

static void epi_record(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    epi_check *e = ctx;
    for (int64_t m = m0; m < m1; m++)
        for (int64_t n = n0; n < n1; n++) {
            __atomic_add_fetch(&e->seen[m * e->ldc + n], 1, __ATOMIC_RELAXED);
            if (e->c[m * e->ldc + n] != e->want[m * e->ldc + n])
                __atomic_store_n(&e->bad, 1, __ATOMIC_RELAXED);
        }
}

START_TEST(test_packed_epilogue)
{
    static const int64_t shapes[][3] = {{45, 77, 600}, {300, 1024, 20}, {196, 256, 700},
                                        {1000, 169, 512}, {7, 3, 5}};
    poprt__pool *pool = NULL;
    ck_assert_int_eq(poprt__pool_create(2, &pool), POPRT_OK);
    poprt__par p2 = {pool_run, pool};
    const poprt__sgemm_variant *v = poprt__sgemm_best();
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int threads = 1; threads <= 2; threads++) {
            prob p = mkprob(1, 0, shapes[si][0], shapes[si][1], shapes[si][2], 0, 1.0f, 0.0f, 5);
            void *pb = ws_alloc(poprt__sgemm_pack_b_size(v, p.K, p.N));
            poprt__sgemm_pack_b(v, NULL, 0, p.K, p.N, p.B, p.ldb, pb);
            void *ws = ws_alloc(poprt__sgemm_packed_workspace(NULL, pb, 1, 0, p.M, p.N, p.K));
            float *c0 = copy_c(&p), *c1 = copy_c(&p);
            ck_assert_int_eq(poprt__sgemm_packed(threads > 1 ? &p2 : NULL, ws, 1, 0, p.M, p.N,
                                                 p.K, 1.0f, p.A, p.lda, NULL, NULL, 0, pb, 0.0f,
                                                 c0, p.ldc),
                             0);
            epi_check e = {c0, c1, p.ldc, calloc((size_t)(p.M * p.ldc), sizeof(int)), 0};
            const poprt__sgemm_epi epi = {epi_record, &e};
            ck_assert_int_eq(poprt__sgemm_packed_epi(threads > 1 ? &p2 : NULL, ws, 1, 0, p.M,
                                                     p.N, p.K, 1.0f, p.A, p.lda, NULL, NULL, 0,
                                                     pb, 0.0f, c1, p.ldc, &epi),
                             0);
            ck_assert_msg(!e.bad, "%lldx%lldx%lld, %d threads: a block was not final",
                          (long long)p.M, (long long)p.N, (long long)p.K, threads);
            for (int64_t m = 0; m < p.M; m++)
                for (int64_t n = 0; n < p.N; n++)
                    ck_assert_msg(e.seen[m * p.ldc + n] == 1,
                                  "%lldx%lldx%lld, %d threads: C[%lld][%lld] seen %d times",
                                  (long long)p.M, (long long)p.N, (long long)p.K, threads,
                                  (long long)m, (long long)n, e.seen[m * p.ldc + n]);
            free(e.seen);
            free(c0);
            free(c1);
            free(ws);
            free(pb);
            freeprob(&p);
        }
    poprt__pool_free(pool);
}
END_TEST

START_TEST(test_prepacked)
{
    poprt__pool *pool = NULL;
    ck_assert_int_eq(poprt__pool_create(2, &pool), POPRT_OK);
    poprt__par p2 = {pool_run, pool};
    for (int i = 0; i < poprt__sgemm_n_variants; i++) {
        const poprt__sgemm_variant *v = &poprt__sgemm_variants[i];
        if (!poprt__sgemm_usable(v))
            continue;
        for (int t = 0; t < 4; t++) {
            const int ta = t & 1, tb = t >> 1;
            prob p = mkprob(ta, tb, 45, 77, 600, 2, 1.0f, 1.0f, 11);
            void *pa = ws_alloc(poprt__sgemm_pack_a_size(v, p.M, p.K));
            void *pb = ws_alloc(poprt__sgemm_pack_b_size(v, p.K, p.N));
            poprt__sgemm_pack_a(v, &p2, ta, p.M, p.K, p.A, p.lda, pa);
            poprt__sgemm_pack_b(v, NULL, tb, p.K, p.N, p.B, p.ldb, pb);
            ck_assert_ptr_eq(poprt__sgemm_packed_variant(pb), v);
            float *c0 = copy_c(&p), *c1 = copy_c(&p), *c2 = copy_c(&p), *c3 = copy_c(&p);
            run_variant(v, &p, NULL, c0);
            void *ws = ws_alloc(poprt__sgemm_packed_workspace(NULL, pb, ta, tb, p.M, p.N, p.K));
            ck_assert_int_eq(poprt__sgemm_packed(NULL, ws, ta, tb, p.M, p.N, p.K, p.alpha, p.A,
                                                 p.lda, NULL, NULL, 0, pb, p.beta, c1, p.ldc),
                             0);
            free(ws);
            ws = ws_alloc(poprt__sgemm_packed_workspace(pa, NULL, ta, tb, p.M, p.N, p.K));
            ck_assert_int_eq(poprt__sgemm_packed(&p2, ws, ta, tb, p.M, p.N, p.K, p.alpha, NULL, 0,
                                                 pa, p.B, p.ldb, NULL, p.beta, c2, p.ldc),
                             0);
            free(ws);
            ck_assert_int_eq(poprt__sgemm_packed(NULL, NULL, ta, tb, p.M, p.N, p.K, p.alpha, NULL,
                                                 0, pa, NULL, 0, pb, p.beta, c3, p.ldc),
                             0);
            const size_t n = (size_t)(p.M * p.ldc) * sizeof(float);
            ck_assert_msg(!memcmp(c0, c1, n), "%s: packed B differs", v->name);
            ck_assert_msg(!memcmp(c0, c2, n), "%s: packed A differs", v->name);
            ck_assert_msg(!memcmp(c0, c3, n), "%s: packed A and B differ", v->name);
            ck_assert_int_eq(check_c(&p, c3, v->name), 0);
            /* wrong shapes and swapped sides are refused without writing */
            ck_assert_int_eq(poprt__sgemm_packed(NULL, NULL, ta, tb, p.M + 1, p.N, p.K, 1.0f,
                                                 NULL, 0, pa, NULL, 0, pb, 0.0f, c3, p.ldc),
                             -1);
            ck_assert_int_eq(poprt__sgemm_packed(NULL, NULL, ta, tb, p.M, p.N, p.K, 1.0f, NULL, 0,
                                                 pb, NULL, 0, pa, 0.0f, c3, p.ldc),
                             -1);
            ck_assert_ptr_null(poprt__sgemm_packed_variant(p.A));
            ck_assert(!memcmp(c0, c3, n));
            free(c0);
            free(c1);
            free(c2);
            free(c3);
            free(pa);
            free(pb);
            freeprob(&p);
        }
    }
    poprt__pool_free(pool);
}
END_TEST

START_TEST(test_degenerate)
{
    const poprt__sgemm_variant *v = poprt__sgemm_best();
    float C[6] = {1, 2, 3, 4, 5, 6};
    float A[1] = {1}, B[1] = {1};
    char ws[256] __attribute__((aligned(64)));
    /* K == 0: C = beta * C */
    poprt__sgemm(v, NULL, ws, 0, 0, 2, 3, 0, 1.0f, A, 1, B, 3, 2.0f, C, 3);
    ck_assert_float_eq(C[5], 12.0f);
    /* alpha == 0, beta == 0: zeros, even over NaN */
    C[0] = NAN;
    poprt__sgemm(v, NULL, ws, 0, 0, 2, 3, 1, 0.0f, A, 1, B, 3, 0.0f, C, 3);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(C[i], 0.0f);
    /* M == 0 / N == 0: nothing touched */
    C[0] = 7.0f;
    poprt__sgemm(v, NULL, ws, 0, 0, 0, 3, 1, 1.0f, A, 1, B, 3, 0.0f, C, 3);
    poprt__sgemm(v, NULL, ws, 0, 0, 2, 0, 1, 1.0f, A, 1, B, 3, 0.0f, C, 3);
    ck_assert_float_eq(C[0], 7.0f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kernels_x86");
    TCase *tc = tcase_create("kernels_x86");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, test_cpu_matches_cpuinfo);
    tcase_add_test(tc, test_isa_override);
    tcase_add_test(tc, test_isa_scalar);
    tcase_add_loop_test(tc, test_variant_vs_ref, 0, poprt__sgemm_n_variants);
    tcase_add_loop_test(tc, test_ukr_taps, 0, poprt__sgemm_n_variants);
    tcase_add_test(tc, test_threads_bit_identical);
    tcase_add_test(tc, test_blocking_orders);
    tcase_add_test(tc, test_prepacked);
    tcase_add_test(tc, test_packed_epilogue);
    tcase_add_test(tc, test_degenerate);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
