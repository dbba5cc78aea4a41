/* Unit tests: x86 kernels (lib/kernels/x86). CPU detection against
 * /proc/cpuinfo, the POPRT_ISA cap, and every variant of every kernel list
 * against the reference kernels of lib/kernels/ref: the fp32 GEMM
 * (sgemm_kernels.inc) against poprt__ref_sgemm at awkward sizes, all
 * transpositions, alpha/beta and padded leading dimensions; vmath,
 * depthwise conv, blocked conv and max pooling at the end of the file
 * (tolerances stated there). Variants the CPU lacks are reported as skipped
 * on stdout.
 *
 * GEMM tolerance: |C - C_ref| <= 1e-5 * max(1, K / 256) * mag, where
 * mag = |alpha| * sum_k |a_ik b_kj| + |beta c_ij| (relative to the size of
 * the terms, widened with K because the two GEMMs sum in different orders).
 * Thread-count determinism and pre-packed operands are checked bit-exactly. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kernels/ref/conv.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/gemm.h"
#include "kernels/ref/pool.h"
#include "kernels/ref/reduce.h"
#include "kernels/x86/conv_dw.h"
#include "kernels/x86/conv_paths.h"
#include "kernels/x86/gemm_ops.h"
#include "kernels/x86/pool.h"
#include "kernels/x86/sgemm.h"
#include "kernels/x86/vmath.h"
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

/* compares C with the reference; returns the number of bad elements.
 * Tolerance: 1e-5 of the sum of |terms| (more for K > 256) for float32
 * variants; bfloat16 variants (kpack 2) round both operands to 8 significant
 * bits, so each product may be off by 2^-7 of its size, plus the same. */
static int64_t check_c_k(const prob *p, const float *C, const char *what, int kpack)
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
            const double tol = (1e-5 * widen + (kpack == 2 ? 1.0 / 128 : 0.0)) * mag + 1e-30;
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

static int64_t check_c(const prob *p, const float *C, const char *what)
{
    return check_c_k(p, C, what, 1);
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
                int64_t nb = check_c_k(&p, C, what, v->kpack);
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
        {1, 300, 700},    /* GEMV-like: B read in place, K block by K block; packed:
                           * four panels at once (ukr_row), then two, then the part */
        {1, 48, 100},     /* one row, three whole panels (ukr_row with three) */
        {1, 1000, 1030},  /* a classifier's row: 62 whole panels, a part, 5 K blocks */
        {2, 600, 1000},   /* few rows, B of 2.4 MB: split by B's bytes (1.2 MFLOP) */
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
                    ck_assert_int_eq(check_c_k(&p, c0, what, v->kpack), 0);
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

/* Found by fuzz_popef: a packed B read from an executable file with its K
 * blocking changed made the GEMM's task planning overflow. A packed operand
 * is now used only when its header is the one this library writes for its
 * variant and its data is complete. */
START_TEST(test_packed_header_checked)
{
    const poprt__sgemm_variant *v = poprt__sgemm_best();
    prob p = mkprob(1, 0, 45, 77, 600, 0, 1.0f, 0.0f, 5);
    const size_t size = poprt__sgemm_pack_b_size(v, p.K, p.N);
    unsigned char *pb = ws_alloc(size);
    poprt__sgemm_pack_b(v, NULL, 0, p.K, p.N, p.B, p.ldb, pb);
    void *ws = ws_alloc(poprt__sgemm_packed_workspace(NULL, pb, 1, 0, p.M, p.N, p.K));
    ck_assert_int_eq(poprt__sgemm_packed_fits(pb, size), 1);
    ck_assert_int_eq(poprt__sgemm_packed_fits(pb, size - 4), 0);
    ck_assert_int_eq(poprt__sgemm_packed_fits(pb, 63), 0);
    /* the K blocking (kcb at byte 32, nkb at 40) and the panel width (12) */
    const size_t fields[] = {32, 40, 12};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        unsigned char keep[8];
        memcpy(keep, pb + fields[i], 8);
        const int64_t huge = (int64_t)1 << 61;
        memcpy(pb + fields[i], &huge, fields[i] == 12 ? 4 : 8);
        ck_assert_int_eq(poprt__sgemm_packed_fits(pb, size), 0);
        ck_assert_int_eq(poprt__sgemm_packed(NULL, ws, 1, 0, p.M, p.N, p.K, 1.0f, p.A, p.lda, NULL,
                                             NULL, 0, pb, 0.0f, p.C0, p.ldc),
                         -1);
        memcpy(pb + fields[i], keep, 8);
    }
    ck_assert_int_eq(poprt__sgemm_packed_fits(pb, size), 1);
    /* an operand packed with another K block (an executable file from a
     * library whose variant had another kc) is not current: the program
     * prepares it again (poprt__x86_state_usable) */
    ck_assert_int_eq(poprt__sgemm_packed_current(pb), 1);
    int64_t kcb, nkb;
    memcpy(&kcb, pb + 32, 8);
    memcpy(&nkb, pb + 40, 8);
    const int64_t other[2] = {kcb / 2, nkb * 2};
    memcpy(pb + 32, other, sizeof other);
    ck_assert_int_eq(poprt__sgemm_packed_current(pb), 0);
    memcpy(pb + 32, &kcb, 8);
    memcpy(pb + 40, &nkb, 8);
    ck_assert_int_eq(poprt__sgemm_packed_current(pb), 1);
    free(ws);
    free(pb);
    freeprob(&p);
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
            ck_assert_int_eq(check_c_k(&p, c3, v->name, v->kpack), 0);
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

/* ==== the other kernel lists, every variant against lib/kernels/ref ========
 * Each list's variants the CPU lacks are reported as skipped. Tolerances:
 *   vmath (vmath_kernels.inc): each function with an ONNX operator against
 *     that operator's reference kernel computing in double, within the
 *     bounds test_vmath.c states against libm (ulps of the reference, plus
 *     absolute and relative terms for functions that cancel); Add, Sub, Mul,
 *     Div, Max, Min exactly; softmax rows 1e-6 relative + 1e-7.
 *   depthwise conv (conv_dw_kernels.inc): the plane functions against the
 *     reference Conv with one group per channel, which adds the taps in the
 *     same order: within 1e-6 of the sum of |terms| (in practice equal).
 *   blocked conv (conv_blocked_kernels.inc): the driver on each variant
 *     against the reference Conv (im2col and poprt__ref_sgemm, another
 *     order): within 2 Kc 2^-24 of the sum of |terms|, what two float sums
 *     of Kc terms can differ by.
 *   max pooling (pool_kernels.inc): each plane function against the
 *     reference window loop, bit for bit (max is exact); a NaN is reported.
 * And the registry's Gemm, MatMul and ConvTranspose (the fast GEMM engine)
 * against their reference kernels (poprt__ref_gemm_engine), within
 * 2 K 2^-24 of the sum of |terms|. */

/* ---- a kernel call: one node, tensors in and out, no thread pool ---- */

typedef struct kcall {
    poprt__node node;
    poprt__attr attrs[8];
    poprt__value vals[5]; /* inputs 0..3, output 4 */
    poprt__value *in[4], *out[1];
    struct poprt__exec ex;
    poprt__kctx k;
} kcall;

static void kc_init(kcall *c, const char *op, int opset)
{
    memset(c, 0, sizeof *c);
    c->node.name = "variant_check";
    c->node.op_type = op;
    c->node.domain = "";
    c->node.attrs = c->attrs;
    c->k.node = &c->node;
    c->k.opset = opset;
    c->k.in = c->in;
    c->k.out = c->out;
    c->k.n_out = 1;
    c->k.exec = &c->ex;
    c->out[0] = &c->vals[4];
}

/* Tensor slot i: inputs 0..3, the output 4. */
static void kc_tensor(kcall *c, int i, int32_t dt, int rank, const int64_t *dims, void *data)
{
    poprt__tval *t = &c->vals[i].t;
    c->vals[i].kind = POPRT__KIND_TENSOR;
    t->dtype = dt;
    t->rank = rank;
    memcpy(t->dims, dims, sizeof(int64_t) * (size_t)rank);
    t->numel = poprt__tval_numel(t);
    t->nbytes = (size_t)t->numel * poprt_dtype_size((poprt_dtype)dt);
    t->data = data;
    if (i < 4) {
        c->in[i] = &c->vals[i];
        c->k.n_in = c->k.n_in > i + 1 ? c->k.n_in : i + 1;
    }
}

static poprt__attr *kc_attr(kcall *c, const char *name, poprt__attr_type type)
{
    ck_assert_int_lt(c->node.n_attrs, 8);
    poprt__attr *a = &c->attrs[c->node.n_attrs++];
    a->name = name;
    a->type = type;
    return a;
}

static void kc_ints(kcall *c, const char *name, int64_t n, int64_t *v)
{
    poprt__attr *a = kc_attr(c, name, POPRT__ATTR_INTS);
    a->n = n;
    a->ints = v;
}

/* Releases the scratch memory of c's kernel calls. */
static void kc_release(kcall *c)
{
    while (c->ex.scratch) {
        poprt__scratch_chunk *s = c->ex.scratch;
        c->ex.scratch = s->next;
        poprt__aligned_free(s);
    }
}

/* Runs fn, which must succeed. */
static void kc_run(kcall *c, poprt__kernel_fn fn)
{
    ck_assert_msg(fn(&c->k) == POPRT_OK, "%s: %s", c->node.op_type, poprt_last_error());
    kc_release(c);
}

static float *fvec(int64_t n, uint32_t seed)
{
    return mat(n, seed);
}

static float *fabs_of(const float *x, int64_t n)
{
    float *a = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    ck_assert_ptr_nonnull(a);
    for (int64_t i = 0; i < n; i++)
        a[i] = fabsf(x[i]);
    return a;
}

/* ---- vmath ----------------------------------------------------------------- */

typedef struct vcase {
    int fn;               /* POPRT__VMATH_* */
    poprt__kernel_fn ref; /* the operator's reference kernel */
    const char *op;
    int opset;
    const char *a_name, *b_name; /* attributes taking p.alpha / p.beta, or NULL */
    poprt__vmath_param p;
    double ulp, abs, rel; /* tolerance (test_vmath.c's) */
    float lo, hi;         /* inputs */
} vcase;

static const vcase vcases[] = {
    {POPRT__VMATH_exp, poprt__ref_exp, "Exp", 13, NULL, NULL, {0, 0, 0}, 2, 0, 0, -80, 80},
    {POPRT__VMATH_log, poprt__ref_log, "Log", 13, NULL, NULL, {0, 0, 0}, 2, 0, 0, 1e-3f, 1e4f},
    {POPRT__VMATH_tanh, poprt__ref_tanh, "Tanh", 13, NULL, NULL, {0, 0, 0}, 3, 0, 0, -10, 10},
    {POPRT__VMATH_erf, poprt__ref_erf, "Erf", 13, NULL, NULL, {0, 0, 0}, 3, 0, 0, -5, 5},
    {POPRT__VMATH_sigmoid, poprt__ref_sigmoid, "Sigmoid", 13, NULL, NULL, {0, 0, 0}, 2.5, 0, 0,
     -30, 30},
    {POPRT__VMATH_gelu, poprt__ref_gelu, "Gelu", 20, NULL, NULL, {0, 0, 0}, 5, 0, 4e-7, -5, 5},
    {POPRT__VMATH_softplus, poprt__ref_softplus, "Softplus", 1, NULL, NULL, {0, 0, 0}, 4, 0,
     2e-6, -20, 20},
    {POPRT__VMATH_mish, poprt__ref_mish, "Mish", 18, NULL, NULL, {0, 0, 0}, 4, 0, 2e-6, -20, 20},
    {POPRT__VMATH_elu, poprt__ref_elu, "Elu", 6, "alpha", NULL, {1.0f, 0, 0}, 4, 0, 1e-6, -10,
     10},
    {POPRT__VMATH_relu, poprt__ref_relu, "Relu", 14, NULL, NULL, {0, 0, 0}, 0.5, 0, 0, -10, 10},
    {POPRT__VMATH_leaky_relu, poprt__ref_leaky_relu, "LeakyRelu", 16, "alpha", NULL,
     {0.01f, 0, 0}, 0.5, 0, 0, -10, 10},
    {POPRT__VMATH_hard_sigmoid, poprt__ref_hard_sigmoid, "HardSigmoid", 6, "alpha", "beta",
     {0.2f, 0.5f, 0}, 1, 1e-7, 0, -6, 6},
    {POPRT__VMATH_hard_swish, poprt__ref_hard_swish, "HardSwish", 14, NULL, NULL, {0, 0, 0}, 1,
     1e-7, 0, -6, 6},
};

static double ulps(double r)
{
    const double a = fabs(r);
    return a < FLT_MIN ? ldexp(1.0, -149) : ldexp(1.0, ilogb(a) - 23);
}

/* The reference kernel fn of op on n doubles. */
static void ref_double(poprt__kernel_fn fn, const char *op, int opset, const vcase *vc,
                       int n_in, double *const *in, int64_t n, double *out)
{
    kcall c;
    kc_init(&c, op, opset);
    for (int i = 0; i < n_in; i++)
        kc_tensor(&c, i, POPRT_DTYPE_DOUBLE, 1, &n, in[i]);
    kc_tensor(&c, 4, POPRT_DTYPE_DOUBLE, 1, &n, out);
    if (vc && vc->a_name)
        kc_attr(&c, vc->a_name, POPRT__ATTR_FLOAT)->f = vc->p.alpha;
    if (vc && vc->b_name)
        kc_attr(&c, vc->b_name, POPRT__ATTR_FLOAT)->f = vc->p.beta;
    kc_run(&c, fn);
}

START_TEST(test_vmath_vs_ref)
{
    const poprt__vmath_variant *v = &poprt__vmath_variants[_i];
    if (!poprt__vmath_usable(v)) {
        printf("kernels_x86: vmath %s skipped: CPU lacks %s\n", v->name, poprt__isa_name(v->isa));
        return;
    }
    enum { N = 4001 };
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y), *b = malloc(N * sizeof *b);
    double *xd = malloc(N * sizeof *xd), *bd = malloc(N * sizeof *bd), *r = malloc(N * sizeof *r);
    ck_assert(x && y && b && xd && bd && r);
    int64_t checked = 0;
    for (size_t c = 0; c < sizeof vcases / sizeof vcases[0]; c++) {
        const vcase *vc = &vcases[c];
        /* a grid that keeps off 0, where the double formulas of Elu and
         * Gelu cancel */
        for (int i = 0; i < N; i++) {
            x[i] = vc->lo + (vc->hi - vc->lo) * ((float)i + 0.37f) / (float)N;
            xd[i] = x[i];
        }
        v->unary[vc->fn](x, y, N, &vc->p);
        ref_double(vc->ref, vc->op, vc->opset, vc, 1, (double *[]){xd}, N, r);
        for (int i = 0; i < N; i++) {
            const double tol = vc->ulp * ulps(r[i]) + vc->abs + vc->rel * fabs(r[i]);
            ck_assert_msg(fabs(y[i] - r[i]) <= tol, "vmath %s %s(%a) = %a, %s says %a", v->name,
                          poprt__vmath_unary_names[vc->fn], (double)x[i], (double)y[i], vc->op,
                          r[i]);
        }
        checked += N;
    }
    static const struct {
        int fn;
        poprt__kernel_fn ref;
        const char *op;
    } bins[] = {
        {POPRT__VMATH_add, poprt__ref_add, "Add"}, {POPRT__VMATH_sub, poprt__ref_sub, "Sub"},
        {POPRT__VMATH_mul, poprt__ref_mul, "Mul"}, {POPRT__VMATH_div, poprt__ref_div, "Div"},
        {POPRT__VMATH_max, poprt__ref_max, "Max"}, {POPRT__VMATH_min, poprt__ref_min, "Min"}};
    for (int i = 0; i < N; i++) {
        x[i] = (float)((i * 7919) % 2001 - 1000) * 0.0173f;
        b[i] = (float)((i * 104729) % 1999 - 999) * 0.0311f + 0.005f; /* never 0 */
        xd[i] = x[i];
        bd[i] = b[i];
    }
    for (size_t o = 0; o < sizeof bins / sizeof bins[0]; o++) {
        v->binary[bins[o].fn](x, 1, b, 1, y, N);
        ref_double(bins[o].ref, bins[o].op, 14, NULL, 2, (double *[]){xd, bd}, N, r);
        for (int i = 0; i < N; i++)
            ck_assert_msg(y[i] == (float)r[i], "vmath %s %s(%a, %a) = %a, %s says %a", v->name,
                          poprt__vmath_binary_names[bins[o].fn], (double)x[i], (double)b[i],
                          (double)y[i], bins[o].op, (double)(float)r[i]);
        checked += N;
    }
    /* softmax and log-softmax rows of several lengths */
    for (int mode = 0; mode < 2; mode++)
        for (int64_t n = 1; n <= 300; n += n < 20 ? 1 : 41) {
            for (int64_t i = 0; i < n; i++) {
                x[i] = (float)((i * 7919 + n) % 101) * 0.3f - 15.0f;
                xd[i] = x[i];
            }
            v->softmax(x, y, n, mode);
            kcall c;
            kc_init(&c, mode ? "LogSoftmax" : "Softmax", 13);
            kc_tensor(&c, 0, POPRT_DTYPE_DOUBLE, 1, &n, xd);
            kc_tensor(&c, 4, POPRT_DTYPE_DOUBLE, 1, &n, r);
            kc_run(&c, mode ? poprt__ref_logsoftmax : poprt__ref_softmax);
            for (int64_t i = 0; i < n; i++)
                ck_assert_msg(fabs(y[i] - r[i]) <= 1e-6 * fabs(r[i]) + 1e-7,
                              "vmath %s softmax mode %d n %lld [%lld] = %g, want %g", v->name,
                              mode, (long long)n, (long long)i, (double)y[i], r[i]);
            checked += n;
        }
    printf("kernels_x86: vmath %s passed %lld values against the ref kernels in double\n",
           v->name, (long long)checked);
    free(x);
    free(y);
    free(b);
    free(xd);
    free(bd);
    free(r);
}
END_TEST

/* ---- convolutions ------------------------------------------------------------- */

typedef struct ccase {
    int64_t C, M, G, H, W, KH, KW, sh, sw, dh, dw, pt, pl, pb, pr;
} ccase;

static int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1)
{
    return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

/* A Conv node of case cc (one image) set up in c, with x, w, b and y bound. */
static void conv_call(kcall *c, const ccase *cc, float *x, float *w, float *b, float *y,
                      int64_t attrs[4][4])
{
    kc_init(c, "Conv", 11);
    const int64_t OH = conv_out(cc->H, cc->KH, cc->sh, cc->dh, cc->pt, cc->pb);
    const int64_t OW = conv_out(cc->W, cc->KW, cc->sw, cc->dw, cc->pl, cc->pr);
    int64_t xd[4] = {1, cc->C, cc->H, cc->W}, wd[4] = {cc->M, cc->C / cc->G, cc->KH, cc->KW};
    int64_t yd[4] = {1, cc->M, OH, OW};
    kc_tensor(c, 0, POPRT_DTYPE_FLOAT, 4, xd, x);
    kc_tensor(c, 1, POPRT_DTYPE_FLOAT, 4, wd, w);
    kc_tensor(c, 2, POPRT_DTYPE_FLOAT, 1, &cc->M, b);
    kc_tensor(c, 4, POPRT_DTYPE_FLOAT, 4, yd, y);
    int64_t *a = attrs[0];
    a[0] = cc->KH, a[1] = cc->KW;
    attrs[1][0] = cc->sh, attrs[1][1] = cc->sw;
    attrs[2][0] = cc->dh, attrs[2][1] = cc->dw;
    attrs[3][0] = cc->pt, attrs[3][1] = cc->pl, attrs[3][2] = cc->pb, attrs[3][3] = cc->pr;
    kc_ints(c, "kernel_shape", 2, attrs[0]);
    kc_ints(c, "strides", 2, attrs[1]);
    kc_ints(c, "dilations", 2, attrs[2]);
    kc_ints(c, "pads", 4, attrs[3]);
    kc_attr(c, "group", POPRT__ATTR_INT)->i = cc->G;
}

/* The reference Conv of case cc into y, and the same on |x|, |w|, |b|: the
 * sum of |terms| of each output, for the tolerances. */
static void conv_ref(const ccase *cc, const float *x, const float *w, const float *b, float *y,
                     float *mag, int64_t nx, int64_t nw)
{
    int64_t attrs[4][4];
    kcall c;
    conv_call(&c, cc, (float *)x, (float *)w, (float *)b, y, attrs);
    kc_run(&c, poprt__ref_conv);
    float *ax = fabs_of(x, nx), *aw = fabs_of(w, nw), *ab = fabs_of(b, cc->M);
    conv_call(&c, cc, ax, aw, ab, mag, attrs);
    kc_run(&c, poprt__ref_conv);
    free(ax);
    free(aw);
    free(ab);
}

/* The data of a case: random x, w, b; the reference output r and the sum
 * of |terms| mag; y for the variant. */
typedef struct cdata {
    int64_t OH, OW, nx, nw, ny;
    float *x, *w, *b, *r, *mag, *y;
} cdata;

static void cdata_init(cdata *d, const ccase *cc, uint32_t seed)
{
    d->OH = conv_out(cc->H, cc->KH, cc->sh, cc->dh, cc->pt, cc->pb);
    d->OW = conv_out(cc->W, cc->KW, cc->sw, cc->dw, cc->pl, cc->pr);
    d->nx = cc->C * cc->H * cc->W;
    d->nw = cc->M * (cc->C / cc->G) * cc->KH * cc->KW;
    d->ny = cc->M * d->OH * d->OW;
    d->x = fvec(d->nx, seed);
    d->w = fvec(d->nw, seed + 50);
    d->b = fvec(cc->M, seed + 99);
    d->r = fvec(d->ny, 0);
    d->mag = fvec(d->ny, 0);
    d->y = fvec(d->ny, 0);
    conv_ref(cc, d->x, d->w, d->b, d->r, d->mag, d->nx, d->nw);
}

/* Checks d->y against the reference within tol of the sum of |terms|. */
static void cdata_check(const cdata *d, double tol, const char *what, const char *name, size_t s)
{
    for (int64_t i = 0; i < d->ny; i++)
        ck_assert_msg(fabs(d->y[i] - d->r[i]) <= tol * d->mag[i] + 1e-30,
                      "%s %s case %zu: y[%lld] = %.9g, ref %.9g", what, name, s, (long long)i,
                      (double)d->y[i], (double)d->r[i]);
}

static void cdata_free(cdata *d)
{
    free(d->x);
    free(d->w);
    free(d->b);
    free(d->r);
    free(d->mag);
    free(d->y);
}

/* C, M, G, H, W, KH, KW, strides, dilations, pads (top, left, bottom, right) */
static const ccase dw_cases[] = {
    {3, 3, 3, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* 3x3, 37 columns: 3 blocks */
    {2, 2, 2, 12, 40, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0}, /* stride 2 */
    {4, 4, 4, 7, 19, 5, 5, 1, 1, 2, 2, 4, 4, 4, 4},  /* dilated 5x5 */
    {1, 1, 1, 5, 70, 1, 7, 1, 3, 1, 1, 0, 3, 0, 3},  /* column stride 3 */
    {2, 2, 2, 16, 64, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1}, /* 64 columns: one 4-block group */
    {5, 5, 5, 1, 100, 1, 9, 1, 2, 1, 1, 0, 4, 0, 4}, /* 50 columns: 3 + 1 partial blocks */
    /* kernel rows that read only zero rows are skipped: */
    {3, 3, 3, 2, 40, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},  /* 2 rows, 5x5: 2 of 5 rows read */
    {2, 2, 2, 3, 21, 5, 5, 2, 1, 1, 1, 2, 2, 2, 2},  /* 3 rows, row stride 2 */
    {2, 2, 2, 4, 17, 3, 3, 1, 1, 3, 1, 3, 1, 3, 1},  /* dilated rows over 4 */
    {1, 1, 1, 1, 20, 3, 3, 1, 1, 1, 1, 5, 1, 0, 1},  /* top rows all zeros */
    {1, 1, 1, 2, 20, 3, 3, 2, 1, 1, 1, 0, 1, 6, 1},  /* bottom rows all zeros */
};

/* NCHW16c (conv_dw.h's blocked functions): C a multiple of 16 */
static const ccase dwb_cases[] = {
    {16, 16, 16, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* 3x3: interior groups and edges */
    {32, 32, 32, 12, 40, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0}, /* stride 2, two blocks */
    {16, 16, 16, 7, 19, 5, 5, 1, 1, 2, 2, 4, 4, 4, 4},  /* dilated 5x5 */
    {16, 16, 16, 5, 70, 1, 7, 1, 3, 1, 1, 0, 3, 0, 3},  /* column stride 3 */
    {16, 16, 16, 2, 40, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},  /* 2 rows, 5x5 */
    {16, 16, 16, 1, 20, 3, 3, 1, 1, 1, 1, 5, 1, 0, 1},  /* top rows all zeros */
    {16, 16, 16, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* fewer columns than a group */
    {48, 48, 48, 8, 30, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},  /* no padding */
    {16, 16, 16, 6, 33, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1},  /* stride 2, pads after only */
    {32, 32, 32, 9, 45, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2},  /* 5x5 stride 2 */
    {16, 16, 16, 5, 29, 5, 3, 1, 1, 2, 1, 4, 1, 4, 1},  /* 5 x 3, dilated rows only */
};

/* The blocked (g = 1, clip as conv_dw.h's) or grouped function of
 * variant v on case cc, g = C / G channels per group: x and w to blocks
 * (taps [C / 16][KH * KW][g][16]), the rows of each block in two calls
 * (oh0 / oh1), y back to NCHW. */
static void dwb_run(const poprt__dwconv_variant *v, const ccase *cc, const cdata *d,
                    const float *clip, float *y)
{
    const int64_t HW = cc->H * cc->W, OHW = d->OH * d->OW, taps = cc->KH * cc->KW;
    const int64_t g = cc->C / cc->G;
    float *xb = fvec(d->nx, 0), *wb = fvec(d->nw, 0), *yb = fvec(d->ny, 0);
    for (int64_t c = 0; c < cc->C; c++) {
        for (int64_t q = 0; q < HW; q++)
            xb[((c / 16) * HW + q) * 16 + c % 16] = d->x[c * HW + q];
        for (int64_t ci = 0; ci < g; ci++)
            for (int64_t i = 0; i < taps; i++)
                wb[(((c / 16) * taps + i) * g + ci) * 16 + c % 16] = d->w[(c * g + ci) * taps + i];
    }
    const int64_t half = d->OH / 2;
    for (int64_t cb = 0; cb < cc->C / 16; cb++)
        for (int part = 0; part < 2; part++) {
            const float *xc = xb + cb * HW * 16, *wc = wb + cb * taps * g * 16;
            const int64_t oh0 = part ? half : 0, oh1 = part ? d->OH : half;
            if (g == 1)
                v->blocked(xc, cc->H, cc->W, wc, d->b + cb * 16, cc->KH, cc->KW, cc->sh, cc->sw,
                           cc->dh, cc->dw, cc->pt, cc->pl, oh0, oh1, d->OW, clip,
                           yb + cb * OHW * 16);
            else
                v->grouped(xc, cc->H, cc->W, wc, d->b + cb * 16, (int)g, cc->KH, cc->KW, cc->sh,
                           cc->sw, cc->dh, cc->dw, cc->pt, cc->pl, oh0, oh1, d->OW,
                           yb + cb * OHW * 16);
        }
    for (int64_t c = 0; c < cc->C; c++)
        for (int64_t q = 0; q < OHW; q++)
            y[c * OHW + q] = yb[((c / 16) * OHW + q) * 16 + c % 16];
    free(xb);
    free(wb);
    free(yb);
}

/* Grouped, NCHW16c (the grouped functions): g = C / G channels per group,
 * 16 % g == 0 */
static const ccase gwb_cases[] = {
    {16, 16, 8, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* g 2: interior groups and edges */
    {32, 32, 8, 12, 40, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0}, /* g 4, stride 2, two blocks */
    {32, 32, 4, 7, 19, 5, 5, 1, 1, 2, 2, 4, 4, 4, 4},  /* g 8, dilated 5x5 */
    {16, 16, 1, 6, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* g 16 */
    {48, 48, 12, 4, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* g 4, fewer columns than a group */
    {16, 16, 4, 6, 33, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1},  /* g 4, stride 2, pads after only */
    {64, 64, 8, 9, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},  /* g 8, stride 2, four blocks */
    {32, 32, 2, 8, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},  /* g 16, stride 2 */
    {16, 16, 2, 5, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* g 8, 7 interior columns: no tile */
    {32, 32, 4, 6, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* g 8, 26 interior: a tile overlaps */
};

/* Variant v's blocked or grouped function on n cases against
 * poprt__ref_conv within 1e-6 of the sum of |terms|, and bit-equal to the
 * portable one (conv_dw.h). */
static void dwb_check(const poprt__dwconv_variant *v, const ccase *cases, size_t n,
                      const char *what)
{
    const poprt__dwconv_variant *port = &poprt__dwconv_variants[poprt__dwconv_n_variants - 1];
    if (!poprt__dwconv_usable(v)) {
        printf("kernels_x86: %s %s skipped: CPU lacks %s\n", what, v->name,
               poprt__isa_name(v->isa));
        return;
    }
    int64_t checked = 0;
    for (size_t s = 0; s < n; s++) {
        const ccase *cc = &cases[s];
        cdata d;
        cdata_init(&d, cc, (uint32_t)s + 7);
        dwb_run(v, cc, &d, NULL, d.y);
        cdata_check(&d, 1e-6, what, v->name, s);
        float *yp = fvec(d.ny, 0);
        dwb_run(port, cc, &d, NULL, yp);
        ck_assert_msg(memcmp(yp, d.y, sizeof(float) * (size_t)d.ny) == 0,
                      "%s %s case %zu: not the portable function's bits", what, v->name, s);
        /* depthwise with a clip (a Relu's {0, +inf} and a Clip's bounds):
         * the unclipped outputs put through the Clip kernel's selects, bit
         * for bit, on this variant and the portable one */
        static const float clips[2][2] = {{0.0f, INFINITY}, {-0.05f, 0.04f}};
        for (int k = 0; k < 2 && cc->G == cc->C; k++) {
            float *yc = fvec(d.ny, 0), *want = fvec(d.ny, 0);
            for (int64_t i = 0; i < d.ny; i++) {
                const float lo = d.y[i] < clips[k][0] ? clips[k][0] : d.y[i];
                want[i] = lo > clips[k][1] ? clips[k][1] : lo;
            }
            dwb_run(v, cc, &d, clips[k], yc);
            ck_assert_msg(memcmp(yc, want, sizeof(float) * (size_t)d.ny) == 0,
                          "%s %s case %zu: clip %d not the Clip kernel's bits", what, v->name, s,
                          k);
            dwb_run(port, cc, &d, clips[k], yc);
            ck_assert_msg(memcmp(yc, want, sizeof(float) * (size_t)d.ny) == 0,
                          "%s portable case %zu: clip %d not the Clip kernel's bits", what, s, k);
            free(yc);
            free(want);
        }
        free(yp);
        checked += d.ny;
        cdata_free(&d);
    }
    printf("kernels_x86: %s %s passed %lld outputs against poprt__ref_conv\n", what, v->name,
           (long long)checked);
}

START_TEST(test_dwconv_blocked_variants)
{
    dwb_check(&poprt__dwconv_variants[_i], dwb_cases, sizeof dwb_cases / sizeof dwb_cases[0],
              "blocked dwconv");
}
END_TEST

START_TEST(test_gconv_blocked_variants)
{
    dwb_check(&poprt__dwconv_variants[_i], gwb_cases, sizeof gwb_cases / sizeof gwb_cases[0],
              "blocked grouped conv");
}
END_TEST

START_TEST(test_dwconv_variants_vs_ref)
{
    const poprt__dwconv_variant *v = &poprt__dwconv_variants[_i];
    if (!poprt__dwconv_usable(v)) {
        printf("kernels_x86: dwconv %s skipped: CPU lacks %s\n", v->name, poprt__isa_name(v->isa));
        return;
    }
    int64_t checked = 0;
    for (size_t s = 0; s < sizeof dw_cases / sizeof dw_cases[0]; s++) {
        const ccase *cc = &dw_cases[s];
        cdata d;
        cdata_init(&d, cc, (uint32_t)s + 1);
        /* each channel on its own zero-padded plane, read 16 sw + 16 floats
         * past its end (conv_dw.h) */
        const int64_t Hp = (d.OH - 1) * cc->sh + cc->dh * (cc->KH - 1) + 1;
        const int64_t Wp = (d.OW - 1) * cc->sw + cc->dw * (cc->KW - 1) + 1;
        float *xpad = calloc((size_t)(Hp * Wp + 16 * cc->sw + 16), sizeof(float));
        ck_assert_ptr_nonnull(xpad);
        for (int64_t ch = 0; ch < cc->C; ch++) {
            for (int64_t i = 0; i < Hp; i++)
                for (int64_t j = 0; j < Wp; j++) {
                    const int64_t ih = i - cc->pt, iw = j - cc->pl;
                    xpad[i * Wp + j] = ih >= 0 && ih < cc->H && iw >= 0 && iw < cc->W
                                           ? d.x[(ch * cc->H + ih) * cc->W + iw]
                                           : 0.0f;
                }
            v->plane(xpad, Wp, d.w + ch * cc->KH * cc->KW, cc->KH, cc->KW, cc->sh, cc->sw,
                     cc->dh, cc->dw, cc->pt, cc->H, d.b[ch], d.OH, d.OW,
                     d.y + ch * d.OH * d.OW);
        }
        cdata_check(&d, 1e-6, "dwconv", v->name, s);
        checked += d.ny;
        free(xpad);
        cdata_free(&d);
    }
    printf("kernels_x86: dwconv %s passed %lld outputs against poprt__ref_conv\n", v->name,
           (long long)checked);
}
END_TEST

static const ccase convb_cases[] = {
    {16, 32, 1, 10, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* 16-channel blocks, tiles */
    {32, 20, 1, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},   /* a partial output block */
    {3, 16, 1, 20, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},  /* one channel per block, rows, stride 2 */
    {3, 8, 1, 17, 33, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},   /* rows, stride 1 */
    {5, 70, 1, 6, 7, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},    /* narrow rows: tiles; two groups of 64 */
    {16, 16, 1, 8, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},   /* 1x1 */
    /* channels a multiple of 8, not 16: blocks of 8 on AVX2 (cb8), rows of
     * one channel per block on AVX-512 */
    {24, 40, 1, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {40, 16, 1, 7, 30, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},
    {24, 32, 1, 15, 17, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {24, 48, 1, 9, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, /* 1x1: one run of the plane (AVX2) */
    /* tiles that are runs of one row (AVX2 reads them from one pointer),
     * at column stride 2, 1 with dilation 2, and rows of 7 (a run, then a
     * tile across rows) */
    {32, 48, 1, 14, 14, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},
    {32, 32, 1, 6, 27, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {48, 16, 1, 5, 20, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},
    /* 1x1 over more input blocks than a step takes (AVX2: 24), two groups
     * (the next one's weights prefetched), a 7 x 7 plane in chunks of 30 and
     * 19 positions (tiles of 5 and 6, then of 4 and 5); and a run of 13
     * (tiles 4, 4, 5) */
    {416, 80, 1, 7, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {32, 16, 1, 1, 13, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    /* stems (rows): 7x7 at stride 2 of 3 channels into 64 and a 3x3 of one
     * channel into 32, rows of 23 and 35 columns (tiles of 6 and a last
     * partial one into NCHW16c) */
    {3, 64, 1, 30, 46, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},
    {1, 32, 1, 12, 35, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    /* rows with column dilation (the taps' starts stepped in pairs): at
     * stride 2, dilation 2 (every tap on the even columns) and 3 (odd taps
     * on the odd ones, KW odd); at stride 1, dilation 2 with KW even */
    {3, 16, 1, 9, 44, 3, 3, 2, 2, 1, 2, 2, 2, 2, 2},
    {3, 32, 1, 9, 47, 3, 5, 2, 2, 1, 3, 1, 3, 1, 3},
    {2, 16, 1, 7, 30, 3, 4, 1, 1, 2, 2, 2, 3, 2, 3},
    /* groups of whole blocks of 16 channels (ResNeXt): 2 groups of 16, 3
     * of 32 inputs into 48 outputs at stride 2, 2 of 80 into 80 (two
     * groups of 64 outputs each, the second partial; input blocks over
     * several steps), a 1x1 of 4 groups (one run of the plane) */
    {32, 32, 2, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {96, 144, 3, 11, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {160, 160, 2, 6, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
    {64, 64, 4, 6, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
};

/* The Conv node of case cc on d's data set up in c, and its x86 plan. */
static void conv_planned(kcall *c, const ccase *cc, cdata *d, int64_t attrs[4][4],
                         poprt__conv_plan *plan)
{
    conv_call(c, cc, d->x, d->w, d->b, d->y, attrs);
    poprt__conv_shape shape;
    ck_assert_int_eq(poprt__conv_setup(&c->k, 0, &shape), POPRT_OK);
    poprt__x86_conv_plan_of(&shape, plan);
}

/* Runs case cc (data d) through the blocked convolution of variant v with
 * weights packed as float32 or (bf16) bfloat16 pair words into d->y; yb
 * non-NULL: into yb as NCHW16c instead (M a multiple of 16). */
static void convb_run_into(const poprt__convb_variant *v, const ccase *cc, cdata *d, int bf16,
                           float *yb)
{
    int64_t attrs[4][4];
    kcall c;
    poprt__conv_plan plan;
    conv_planned(&c, cc, d, attrs, &plan);
    plan.yblk = yb != NULL;
    void *state;
    size_t size;
    if (cc->G > 1)
        ck_assert_int_eq(poprt__x86_convb_pack_grouped(v, d->w, cc->G, cc->M / cc->G,
                                                       cc->C / cc->G, cc->KH, cc->KW, &state,
                                                       &size),
                         POPRT_OK);
    else
        ck_assert_int_eq(
            poprt__x86_convb_pack(v, d->w, cc->M, cc->C, cc->KH, cc->KW, bf16, &state, &size),
            POPRT_OK);
    c.k.state = state;
    c.k.state_size = size;
    int64_t w_group;
    int got_bf16 = -1;
    const void *packed = poprt__x86_convb_state(&c.k, &plan, v, &w_group, &got_bf16);
    ck_assert_ptr_nonnull(packed);
    ck_assert_int_eq(got_bf16, bf16);
    ck_assert_int_eq(poprt__x86_conv_blocked(&c.k, &plan, v, d->x, d->b, packed, w_group, bf16,
                                             yb ? yb : d->y),
                     POPRT_OK);
    kc_release(&c);
    poprt__aligned_free(state);
}

static void convb_run(const poprt__convb_variant *v, const ccase *cc, cdata *d, int bf16)
{
    convb_run_into(v, cc, d, bf16, NULL);
}

/* Case cc (M a multiple of 16) run again into an NCHW16c output: bit for
 * bit the values d->y holds from the plain run. */
static void check_blocked_same(const poprt__convb_variant *v, const ccase *cc, cdata *d, int bf16,
                               const char *what, size_t s)
{
    const int64_t OHW = d->OH * d->OW;
    float *yb = fvec(d->ny, 0);
    convb_run_into(v, cc, d, bf16, yb);
    for (int64_t m = 0; m < cc->M; m++)
        for (int64_t q = 0; q < OHW; q++)
            ck_assert_msg(memcmp(&yb[((m / 16) * OHW + q) * 16 + m % 16], &d->y[m * OHW + q],
                                 sizeof(float)) == 0,
                          "%s %s case %zu: NCHW16c output %lld, %lld differs", what, v->name, s,
                          (long long)m, (long long)q);
    free(yb);
}

START_TEST(test_convb_variants_vs_ref)
{
    const poprt__convb_variant *v = &poprt__convb_variants[_i];
    if (!poprt__convb_usable(v)) {
        printf("kernels_x86: convb %s skipped: CPU lacks %s\n", v->name, poprt__isa_name(v->isa));
        return;
    }
    int64_t checked = 0;
    for (size_t s = 0; s < sizeof convb_cases / sizeof convb_cases[0]; s++) {
        const ccase *cc = &convb_cases[s];
        cdata d;
        cdata_init(&d, cc, (uint32_t)s + 3);
        convb_run(v, cc, &d, 0);
        cdata_check(&d, 2.0 * (double)(cc->C * cc->KH * cc->KW) * ldexp(1.0, -24), "convb",
                    v->name, s);
        if (cc->M % 16 == 0) /* NCHW16c output: the same sums, so the same bits */
            check_blocked_same(v, cc, &d, 0, "convb", s);
        checked += d.ny;
        cdata_free(&d);
    }
    printf("kernels_x86: convb %s passed %lld outputs against poprt__ref_conv\n", v->name,
           (long long)checked);
}
END_TEST

/* Weights packed for variant _i carry its layout: the best variant here
 * takes them only in its own (an executable file from a CPU whose variant
 * packs them otherwise is prepared again at load), for the direct and the
 * Winograd forms alike; both layouts hold the same weights. */
START_TEST(test_convb_layout_in_state)
{
    const poprt__convb_variant *v = &poprt__convb_variants[_i], *best = poprt__convb_best();
    const ccase cc = {32, 48, 1, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    cdata d;
    cdata_init(&d, &cc, 77);
    void *sb, *sw;
    size_t nb, nw;
    ck_assert_int_eq(poprt__x86_convb_pack(v, d.w, cc.M, cc.C, 3, 3, 0, &sb, &nb), POPRT_OK);
    ck_assert_int_eq(poprt__x86_convw_pack(v, d.w, cc.M, cc.C, 3, 3, 4, 0, &sw, &nw), POPRT_OK);
    const int same = best && best->wlayout == v->wlayout;
    ck_assert_int_eq(poprt__x86_convb_layout_current(sb, nb), same);
    ck_assert_int_eq(poprt__x86_convb_layout_current(sw, nw), same);
    ck_assert_int_eq(poprt__x86_conv_state_usable(sb, nb), same);
    ck_assert_int_eq(poprt__x86_conv_state_usable(sw, nw), same);
    {
        /* direct weights of 24 channels are blocked by the channels per
         * block v takes (8 or 1), kept in the header's h[7]: the best
         * variant takes them only when that is its own, and files from
         * before it was kept (0) are prepared again */
        const ccase c24 = {24, 16, 1, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
        cdata d24;
        cdata_init(&d24, &c24, 78);
        void *s24;
        size_t n24;
        ck_assert_int_eq(poprt__x86_convb_pack(v, d24.w, c24.M, c24.C, 3, 3, 0, &s24, &n24),
                         POPRT_OK);
        uint64_t h[8];
        memcpy(h, s24, sizeof h);
        ck_assert_uint_eq(h[7], (uint64_t)v->cb8);
        const int same24 = same && best->cb8 == v->cb8;
        ck_assert_int_eq(poprt__x86_conv_state_usable(s24, n24), same24);
        h[7] = 0;
        memcpy(s24, h, sizeof h);
        ck_assert_int_eq(poprt__x86_conv_state_usable(s24, n24), 0);
        poprt__aligned_free(s24);
        cdata_free(&d24);
    }
    /* the other layout's floats are a permutation of these */
    const poprt__convb_variant *o = NULL;
    for (int i = 0; i < poprt__convb_n_variants; i++)
        if (poprt__convb_variants[i].wlayout != v->wlayout)
            o = &poprt__convb_variants[i];
    if (o) {
        void *so;
        size_t no;
        ck_assert_int_eq(poprt__x86_convb_pack(o, d.w, cc.M, cc.C, 3, 3, 0, &so, &no), POPRT_OK);
        ck_assert_uint_eq(no, nb);
        double sa = 0, sq = 0;
        const float *fa = (const float *)((const char *)sb + CONV_PACK_HEADER);
        const float *fo = (const float *)((const char *)so + CONV_PACK_HEADER);
        for (size_t i = 0; i < (nb - CONV_PACK_HEADER) / sizeof(float); i++) {
            sa += fa[i];
            sq += fo[i];
        }
        ck_assert_double_eq_tol(sa, sq, 1e-9);
        ck_assert(memcmp(fa, fo, nb - CONV_PACK_HEADER) != 0);
        poprt__aligned_free(so);
    }
    poprt__aligned_free(sb);
    poprt__aligned_free(sw);
    cdata_free(&d);
}
END_TEST

/* The bfloat16 form: whole blocks of 16 input channels. */
static const ccase convb_bf16_cases[] = {
    {32, 64, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* res5-like: 2 blocks, one step each */
    {16, 20, 1, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},   /* stride 2, a partial output block */
    {256, 72, 1, 5, 6, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},   /* 1x1: 16 blocks in steps of 12 */
    {48, 130, 1, 8, 8, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},   /* 1x1 stride 2, three groups */
    {16, 32, 1, 12, 13, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},  /* dilated */
    {64, 16, 1, 6, 20, 5, 3, 1, 2, 1, 1, 2, 1, 2, 1},   /* 5x3 window, column stride 2 */
    /* tiles within one row (the one-pointer loop of column stride 1 and 2)
     * and tiles across rows, with padding, in one conv */
    {32, 48, 1, 6, 26, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* 3x3, 26 columns */
    {32, 40, 1, 5, 30, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},   /* 1x1 stride 2, 15 columns */
    {16, 64, 1, 9, 40, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0},   /* 3x3 stride 2, 20 columns */
    /* stems (one channel per block, column stride 2) on column-pair words */
    {3, 64, 1, 40, 45, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3},   /* resnet's 7x7: 20 x 23 */
    {3, 16, 1, 33, 64, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},   /* 3x3: 17 x 32, two full vectors */
    {1, 24, 1, 10, 41, 5, 5, 2, 2, 2, 1, 2, 2, 2, 2},   /* row dilation 2, 24 outputs */
    {4, 80, 1, 9, 70, 3, 4, 1, 2, 1, 1, 0, 1, 0, 2},    /* even KW, row stride 1, 2 groups */
};

/* The operands rounded to bfloat16 (to nearest even, as VCVTNEPS2BF16 rounds
 * finite values): the products the kernel adds are then exact. */
static void round_bf16(float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &v[i], sizeof u);
        u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
        memcpy(&v[i], &u, sizeof u);
    }
}

/* Winograd F(2x2, 3x3) and F(4x4, 3x3): C, M, G, H, W, 3x3, stride 1,
 * dilation 1, pads (tiles of 2 x 2 / 4 x 4 in the comments) */
static const ccase convw_cases[] = {
    {16, 16, 1, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* 6 x 6 / 3 x 3 tiles */
    {32, 48, 1, 13, 14, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0},  /* 11 x 12: a partial tile row */
    {64, 80, 1, 16, 15, 3, 3, 1, 1, 1, 1, 1, 0, 2, 1},  /* 17 x 14, uneven pads; 64 + 16 outputs */
    {16, 128, 1, 20, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* 20 x 21: partial tile columns */
    {64, 64, 1, 16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* one whole group */
    {32, 32, 1, 7, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* 7 x 9: last tiles of 3 rows, 1 column */
    {48, 16, 1, 62, 58, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* 62 x 58: several chunks of tiles */
    {96, 24, 1, 18, 19, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* 24 outputs: a block of 8 */
    {32, 71, 1, 9, 10, 3, 3, 1, 1, 1, 1, 0, 1, 0, 1},   /* 71 outputs: 64 + a block of 7 */
    {16, 24, 1, 100, 98, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, /* chunks of tiles: the fused form */
    {24, 32, 1, 30, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* 24 inputs: a block of 8 zeros */
    {72, 40, 1, 14, 15, 3, 3, 1, 1, 1, 1, 1, 0, 1, 0},  /* 72 inputs: 64 + 8 */
    {3, 16, 1, 10, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* 3 inputs (forced only) */
    {40, 20, 1, 90, 92, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},  /* 40 inputs, fused */
    /* F(4, 3) along one axis (both tile runs take it): 3x1, 1x3, partial
     * tiles, 72 and 24 inputs, fused */
    {72, 72, 1, 32, 8, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {24, 48, 1, 11, 14, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},
    {16, 40, 1, 7, 5, 3, 1, 1, 1, 1, 1, 1, 0, 2, 0},
    {32, 16, 1, 100, 60, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},
    {16, 16, 1, 200, 101, 1, 3, 1, 1, 1, 1, 0, 1, 0, 1},  /* 8 chunks: fused */
    {16, 24, 1, 203, 100, 3, 1, 1, 1, 1, 1, 1, 0, 1, 0},  /* 8 chunks: fused */
};

/* Runs case cc (data d) through the Winograd path of variant v with tiles
 * of tile x tile into d->y; relu: the plan's activation Relu (applied in
 * the output transform); bf16: U and V as bfloat16 pair words. */
static void convw_run(const poprt__convb_variant *v, const ccase *cc, cdata *d, int tile,
                      int relu, int bf16)
{
    int64_t attrs[4][4];
    kcall c;
    poprt__conv_plan plan;
    conv_planned(&c, cc, d, attrs, &plan);
    if (relu)
        plan.act = CONV_ACT_RELU;
    void *state;
    size_t size;
    ck_assert_int_eq(
        poprt__x86_convw_pack(v, d->w, cc->M, cc->C, cc->KH, cc->KW, tile, bf16, &state, &size),
        POPRT_OK);
    ck_assert_int_eq(poprt__x86_convw_state_magic(state, size), bf16 ? 2 : 1);
    ck_assert_int_eq(poprt__x86_convb_state_magic(state, size), 0);
    c.k.state = state;
    c.k.state_size = size;
    int64_t w_group;
    int got_tile = 0, got_bf16 = -1;
    const void *u = poprt__x86_convw_state(&c.k, &plan, v, &w_group, &got_tile, &got_bf16);
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(got_tile, tile);
    ck_assert_int_eq(got_bf16, bf16);
    if (tile == 2) { /* files written before F(4x4, 3x3): tile 0 in the header reads as 2 */
        uint64_t h7 = 0, keep;
        memcpy(&keep, (char *)state + 7 * sizeof h7, sizeof keep);
        memcpy((char *)state + 7 * sizeof h7, &h7, sizeof h7);
        got_tile = 0;
        ck_assert_ptr_eq(poprt__x86_convw_state(&c.k, &plan, v, &w_group, &got_tile, &got_bf16),
                         u);
        ck_assert_int_eq(got_tile, 2);
        memcpy((char *)state + 7 * sizeof h7, &keep, sizeof keep);
    }
    /* 3x3 weights are not a 3x1 conv's, nor 3x1 a 1x3 conv's */
    plan.g.k[1] = cc->KW, plan.g.k[2] = cc->KH;
    if (cc->KH != cc->KW)
        ck_assert_ptr_null(
            poprt__x86_convw_state(&c.k, &plan, v, &w_group, &got_tile, &got_bf16));
    plan.g.k[1] = cc->KH, plan.g.k[2] = cc->KW;
    ck_assert_int_eq(
        poprt__x86_conv_winograd(&c.k, &plan, v, d->x, d->b, u, w_group, tile, bf16, d->y),
        POPRT_OK);
    kc_release(&c);
    poprt__aligned_free(state);
}

/* With Relu (case s, d->y holding the run without it): max(0, .) of the
 * same values. */
static void convw_check_relu(const poprt__convb_variant *v, const ccase *cc, cdata *d, int tile,
                             int bf16, size_t s)
{
    float *plain = malloc(sizeof(float) * (size_t)d->ny);
    ck_assert_ptr_nonnull(plain);
    memcpy(plain, d->y, sizeof(float) * (size_t)d->ny);
    convw_run(v, cc, d, tile, 1, bf16);
    for (int64_t i = 0; i < d->ny; i++)
        ck_assert_msg(d->y[i] == (plain[i] > 0 ? plain[i] : 0.0f),
                      "Winograd%s relu case %zu: y[%lld]", bf16 ? " bfloat16" : "", s,
                      (long long)i);
    free(plain);
}

START_TEST(test_convw_variants_vs_ref)
{
    const poprt__convb_variant *v = &poprt__convb_variants[_i];
    if (!poprt__convb_usable(v)) {
        printf("kernels_x86: Winograd %s skipped: CPU lacks %s\n", v->name,
               poprt__isa_name(v->isa));
        return;
    }
    /* what the compiler does not give it: stride 2, 5x5, 7 x 7 outputs (16
     * tiles), channels not in blocks of 16 or fewer than 64, groups */
    const poprt__geom3 s2 = {.in = {1, 24, 24}, .out = {1, 12, 12}, .k = {1, 3, 3},
                             .s = {1, 2, 2}, .d = {1, 1, 1}, .out_sz = 144};
    const poprt__geom3 k5 = {.in = {1, 24, 24}, .out = {1, 20, 20}, .k = {1, 5, 5},
                             .s = {1, 1, 1}, .d = {1, 1, 1}, .out_sz = 400};
    const poprt__geom3 small = {.in = {1, 9, 9}, .out = {1, 7, 7}, .k = {1, 3, 3},
                                .s = {1, 1, 1}, .d = {1, 1, 1}, .out_sz = 49};
    const poprt__geom3 ok = {.in = {1, 14, 14}, .out = {1, 12, 12}, .k = {1, 3, 3},
                             .s = {1, 1, 1}, .d = {1, 1, 1}, .out_sz = 144};
    for (int force = 0; force <= 4; force += 2) {
        ck_assert_int_eq(poprt__x86_convw_fits(&s2, 1, 64, 16, force), 0);
        ck_assert_int_eq(poprt__x86_convw_fits(&k5, 1, 64, 16, force), 0);
        ck_assert_int_eq(poprt__x86_convw_fits(&ok, 2, 64, 16, force), 0);
        /* forced: wherever the kernels fit */
        if (force) {
            ck_assert_int_eq(poprt__x86_convw_fits(&small, 1, 64, 16, force), force);
            ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 16, 16, force), force);
            ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 64, 24, force), force);
            ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 8, 16, force), force);
        }
    }
    /* the choice (conv_blocked.c): 4x4 tiles up to 128 input channels, 2x2
     * above; none for too few tiles, or 16 channels at 12 x 12 */
    const poprt__geom3 tiny = {.in = {1, 6, 6}, .out = {1, 4, 4}, .k = {1, 3, 3},
                               .s = {1, 1, 1}, .d = {1, 1, 1}, .out_sz = 16};
    ck_assert_int_eq(poprt__x86_convw_fits(&small, 1, 64, 16, 0), 4);
    ck_assert_int_eq(poprt__x86_convw_fits(&small, 1, 128, 24, 0), 4);
    ck_assert_int_eq(poprt__x86_convw_fits(&small, 1, 512, 16, 0), 0); /* 16 tiles of 2 x 2 */
    ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 16, 16, 0), 0);
    ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 32, 16, 0), 4);
    ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 256, 16, 0), 2);
    ck_assert_int_eq(poprt__x86_convw_fits(&tiny, 1, 64, 16, 0), 0);
    ck_assert_int_eq(poprt__x86_convw_fits(&tiny, 1, 256, 16, 0), 0);
    /* input channels padded to 16: at most a third more products */
    ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 8, 16, 0), 0);
    ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 3, 16, 0), 0);
    ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 20, 16, 0), 0);
    ck_assert_int_eq(poprt__x86_convw_fits(&ok, 1, 40, 16, 0), 4);
    ck_assert_int_eq(poprt__x86_convw_fits(&small, 1, 72, 16, 0), 4);
    /* 3x1 and 1x3: F(4, 3) along the axis, for at least 16 tiles; forced 2 too */
    const poprt__geom3 k31 = {.in = {1, 34, 16}, .out = {1, 32, 16}, .k = {1, 3, 1},
                              .s = {1, 1, 1}, .d = {1, 1, 1}, .out_sz = 512};
    const poprt__geom3 k13 = {.in = {1, 3, 8}, .out = {1, 3, 6}, .k = {1, 1, 3},
                              .s = {1, 1, 1}, .d = {1, 1, 1}, .out_sz = 18};
    ck_assert_int_eq(poprt__x86_convw_fits(&k31, 1, 72, 72, 0), 4);
    ck_assert_int_eq(poprt__x86_convw_fits(&k31, 1, 512, 72, 0), 4);
    ck_assert_int_eq(poprt__x86_convw_fits(&k31, 1, 72, 72, 2), 4);
    ck_assert_int_eq(poprt__x86_convw_fits(&k13, 1, 96, 96, 0), 0); /* 6 tiles */
    ck_assert_int_eq(poprt__x86_convw_fits(&k13, 1, 96, 96, 4), 4);
    ck_assert_int_eq(poprt__x86_convw_fits(&k31, 1, 24, 24, 0), 0); /* 32 x 32 of 24 x 24 */
    ck_assert_int_eq(poprt__x86_convw_fits(&k31, 1, 24, 48, 0), 4);
    /* the kernels themselves take any whole blocks: the cases below run
     * 16 and 32 channels too */
    for (int tile = 2; tile <= 4; tile += 2) {
        int64_t checked = 0;
        double worst = 0;
        /* Tolerance, in float32 roundings of the sum of |terms| per product
         * summed (unit below). F(2x2, 3x3): 4, twice the direct path's bound
         * (the transforms add up to 4 inputs per V and 3 weights per U, and the
         * output transform sums 9 products: their roundings add to the direct
         * sums'). F(4x4, 3x3): 8; its
         * transforms' coefficients (up to 5 in B, 8 in A, 1/24 .. 1/4 in G)
         * magnify the roundings of V, U and the products: random data here
         * reaches 0.62, seven times F(2x2, 3x3)'s worst (0.09). The 3x1 and
         * 1x3 cases run F(4, 3) along their axis in both rounds (bound 4). */
        const double bound = tile == 2 ? 4.0 : 8.0;
        for (size_t s = 0; s < sizeof convw_cases / sizeof convw_cases[0]; s++) {
            const ccase *cc = &convw_cases[s];
            cdata d;
            cdata_init(&d, cc, (uint32_t)s + 21);
            const int ct = cc->KH == 3 && cc->KW == 3 ? tile : 4; /* 1-D: F(4, 3) */
            convw_run(v, cc, &d, ct, 0, 0);
            const double unit = (double)(cc->C * 9) * ldexp(1.0, -24);
            for (int64_t i = 0; i < d.ny; i++) {
                const double e = fabs(d.y[i] - d.r[i]) / (unit * d.mag[i] + 1e-30);
                worst = e > worst ? e : worst;
            }
            cdata_check(&d, bound * unit, tile == 2 ? "Winograd 2x2" : "Winograd 4x4", v->name, s);
            convw_check_relu(v, cc, &d, ct, 0, s);
            checked += d.ny;
            cdata_free(&d);
        }
        printf("kernels_x86: Winograd %dx%d %s passed %lld outputs against poprt__ref_conv (worst "
               "error %.2f of C * 9 * 2^-24 * sum |terms|, bound %.0f)\n",
               tile, tile, v->name, (long long)checked, worst, bound);
    }
}
END_TEST

/* F(2x2, 3x3) with bfloat16 products: U and V rounded to bfloat16 (relative
 * error 2^-9 each), their products exact, float32 sums. Against float64
 * sums of the unrounded operands the error is in units of 2^-8 * sum |terms|
 * per output: the transforms' sums and differences (V of up to 4 inputs, U
 * of up to 9 weights / 4) and the output transform's 9 products make it
 * larger than the direct bfloat16 sums' (at most 1 unit); random data here
 * reaches 1.3 units; bound 4. Relu stores max(0, .) of the same values. */
START_TEST(test_convw_bf16_vs_ref)
{
    const poprt__convb_variant *v = poprt__convb_best();
    if (!v || !poprt__convb_bf16_usable()) {
        printf("kernels_x86: Winograd bfloat16 skipped: CPU lacks AVX512-BF16 (or POPRT_ISA "
               "caps it)\n");
        return;
    }
    int64_t checked = 0;
    double worst = 0;
    const double bound = 4.0;
    for (size_t s = 0; s < sizeof convw_cases / sizeof convw_cases[0]; s++) {
        const ccase *cc = &convw_cases[s];
        if (cc->KH != 3 || cc->KW != 3)
            continue; /* (F(4, 3) along one axis stays float32) */
        cdata d;
        cdata_init(&d, cc, (uint32_t)s + 41);
        convw_run(v, cc, &d, 2, 0, 1);
        for (int64_t i = 0; i < d.ny; i++) {
            const double e = fabs(d.y[i] - d.r[i]) / (ldexp(1.0, -8) * d.mag[i] + 1e-30);
            worst = e > worst ? e : worst;
        }
        cdata_check(&d, bound * ldexp(1.0, -8), "Winograd 2x2 bfloat16", v->name, s);
        convw_check_relu(v, cc, &d, 2, 1, s);
        checked += d.ny;
        cdata_free(&d);
    }
    /* F(4x4, 3x3) and 1-D tiles have no bfloat16 form */
    void *state = NULL;
    size_t size = 0;
    const float w[9] = {0};
    ck_assert_int_ne(poprt__x86_convw_pack(v, w, 1, 1, 3, 3, 4, 1, &state, &size), POPRT_OK);
    ck_assert_int_ne(poprt__x86_convw_pack(v, w, 1, 1, 3, 1, 4, 1, &state, &size), POPRT_OK);
    ck_assert_ptr_null(state);
    printf("kernels_x86: Winograd 2x2 bfloat16 passed %lld outputs against poprt__ref_conv "
           "(worst error %.2f of 2^-8 * sum |terms|, bound %.0f)\n",
           (long long)checked, worst, bound);
}
END_TEST

START_TEST(test_convb_bf16_vs_ref)
{
    const poprt__convb_variant *v = poprt__convb_best();
    if (!poprt__convb_bf16_usable()) {
        printf("kernels_x86: convb bfloat16 skipped: CPU lacks AVX512-BF16 (or POPRT_ISA caps "
               "it)\n");
        return;
    }
    int64_t checked = 0;
    for (size_t s = 0; s < sizeof convb_bf16_cases / sizeof convb_bf16_cases[0]; s++) {
        const ccase *cc = &convb_bf16_cases[s];
        cdata d;
        cdata_init(&d, cc, (uint32_t)s + 11);
        /* the reference on the rounded operands; the kernel rounds x and w
         * itself, and rounding them twice changes nothing */
        round_bf16(d.x, d.nx);
        round_bf16(d.w, d.nw);
        conv_ref(cc, d.x, d.w, d.b, d.r, d.mag, d.nx, d.nw);
        convb_run(v, cc, &d, 1);
        /* exact products, float32 sums in another order */
        cdata_check(&d, 2.0 * (double)(cc->C * cc->KH * cc->KW) * ldexp(1.0, -24),
                    "convb bfloat16", v->name, s);
        if (cc->M % 16 == 0) /* NCHW16c output: the same values, blocked */
            check_blocked_same(v, cc, &d, 1, "convb bfloat16", s);
        checked += d.ny;
        cdata_free(&d);
    }
    printf("kernels_x86: convb bfloat16 passed %lld outputs against poprt__ref_conv on "
           "bfloat16 operands\n",
           (long long)checked);
}
END_TEST

/* ---- max pooling ------------------------------------------------------------------ */

/* A MaxPool task of the window loop over one plane's geometry: rows in,
 * out, kernel, strides, dilations, pads at the start, pads at the end. */
static poprt__pool_task max_task(const int64_t g3[7][3])
{
    poprt__pool_task t;
    memset(&t, 0, sizeof t);
    memcpy(t.g.in, g3[0], sizeof t.g.in);
    memcpy(t.g.out, g3[1], sizeof t.g.out);
    memcpy(t.g.k, g3[2], sizeof t.g.k);
    memcpy(t.g.s, g3[3], sizeof t.g.s);
    memcpy(t.g.d, g3[4], sizeof t.g.d);
    memcpy(t.g.pb, g3[5], sizeof t.g.pb);
    memcpy(t.g.pe, g3[6], sizeof t.g.pe);
    t.g.in_sz = g3[0][1] * g3[0][2];
    t.g.out_sz = g3[1][1] * g3[1][2];
    t.g.k_sz = g3[2][1] * g3[2][2];
    t.kind = POPRT__POOL_MAX;
    return t;
}

static const int64_t pool_cases[][10] = {
    /* IH, IW, KH, KW, SH, SW, pads top, left, bottom, right */
    {9, 37, 3, 3, 2, 2, 1, 1, 1, 1}, {16, 64, 2, 2, 2, 2, 0, 0, 0, 0},
    {7, 50, 3, 3, 1, 1, 1, 1, 1, 1}, {12, 33, 5, 4, 3, 3, 2, 1, 2, 1},
    {5, 100, 1, 9, 1, 1, 0, 4, 0, 4}, {20, 21, 4, 4, 2, 2, 0, 0, 2, 3},
};

START_TEST(test_maxpool_variants_vs_ref)
{
    const poprt__maxpool_variant *v = &poprt__maxpool_variants[_i];
    if (!poprt__maxpool_usable(v)) {
        printf("kernels_x86: maxpool %s skipped: CPU lacks %s\n", v->name,
               poprt__isa_name(v->isa));
        return;
    }
    enum { PLANES = 3 };
    int64_t checked = 0;
    for (size_t s = 0; s < sizeof pool_cases / sizeof pool_cases[0]; s++) {
        const int64_t *pc = pool_cases[s];
        const int64_t OH = (pc[0] + pc[6] + pc[8] - pc[2]) / pc[4] + 1;
        const int64_t OW = (pc[1] + pc[7] + pc[9] - pc[3]) / pc[5] + 1;
        const poprt__maxpool2d_geom mg = {pc[0], pc[1], OH, OW, pc[2], pc[3],
                                          pc[4], pc[5], pc[6], pc[7]};
        /* the reference: the window loop of MaxPool */
        const int64_t g3[7][3] = {{1, pc[0], pc[1]}, {1, OH, OW}, {1, pc[2], pc[3]},
                                  {1, pc[4], pc[5]}, {1, 1, 1},   {0, pc[6], pc[7]},
                                  {0, pc[8], pc[9]}};
        poprt__pool_task t = max_task(g3);
        float *x = fvec(PLANES * t.g.in_sz, (uint32_t)s + 5), *r = fvec(PLANES * t.g.out_sz, 0);
        float *y = fvec(PLANES * t.g.out_sz, 1);
        float *row = malloc(sizeof(float) * (size_t)v->row_floats(&mg));
        ck_assert_ptr_nonnull(row);
        t.x = x;
        t.y = r;
        poprt__pool_planes(&t, 0, PLANES);
        for (int64_t q = 0; q < PLANES; q++)
            ck_assert_int_eq(v->plane(&mg, x + q * t.g.in_sz, y + q * t.g.out_sz, row), 1);
        ck_assert_msg(!memcmp(y, r, sizeof(float) * (size_t)(PLANES * t.g.out_sz)),
                      "maxpool %s case %zu differs from the window loop", v->name, s);
        checked += PLANES * t.g.out_sz;
        /* a NaN a window reads: the plane says so (its caller redoes it) */
        x[(pc[0] / 2) * pc[1] + pc[1] / 2] = NAN;
        ck_assert_int_eq(v->plane(&mg, x, y, row), 0);
        free(row);
        free(x);
        free(r);
        free(y);
    }
    printf("kernels_x86: maxpool %s passed %lld outputs against poprt__pool_planes\n", v->name,
           (long long)checked);
}
END_TEST

/* BlockedMaxPool's rows of every variant against MaxPool's window loop
 * (poprt__pool_planes) on the same values in NCHW, bit for bit: windows
 * with padding, strides, dilations and 1..5 taps a side, NaNs among the
 * inputs (MaxPool's first-tap rule decides where they win). */
static const int64_t bpool_cases[][12] = {
    /* IH, IW, KH, KW, SH, SW, DH, DW, pads top, left, bottom, right */
    {111, 111, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1}, {9, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},
    {16, 20, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0},   {12, 33, 5, 4, 3, 3, 1, 1, 2, 1, 2, 1},
    {13, 17, 3, 3, 1, 1, 2, 3, 2, 3, 2, 3},   {7, 9, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0},
    {5, 6, 3, 2, 2, 1, 2, 2, 1, 1, 2, 2},
};

START_TEST(test_blocked_maxpool_variants_vs_ref)
{
    const poprt__maxpool_variant *v = &poprt__maxpool_variants[_i];
    if (!poprt__maxpool_usable(v)) {
        printf("kernels_x86: blocked maxpool %s skipped: CPU lacks %s\n", v->name,
               poprt__isa_name(v->isa));
        return;
    }
    enum { C = 32, B = C / 16 };
    int64_t checked = 0;
    for (size_t s = 0; s < sizeof bpool_cases / sizeof bpool_cases[0]; s++) {
        const int64_t *pc = bpool_cases[s];
        const int64_t IH = pc[0], IW = pc[1];
        const int64_t OH = (IH + pc[8] + pc[10] - (pc[2] - 1) * pc[6] - 1) / pc[4] + 1;
        const int64_t OW = (IW + pc[9] + pc[11] - (pc[3] - 1) * pc[7] - 1) / pc[5] + 1;
        const int64_t g3[7][3] = {{1, IH, IW},       {1, OH, OW},       {1, pc[2], pc[3]},
                                  {1, pc[4], pc[5]}, {1, pc[6], pc[7]}, {0, pc[8], pc[9]},
                                  {0, pc[10], pc[11]}};
        poprt__pool_task t = max_task(g3);
        const int64_t nx = C * IH * IW, ny = C * OH * OW;
        float *x = fvec(nx, (uint32_t)s + 17), *r = fvec(ny, 0), *xb = fvec(nx, 0);
        float *yb = fvec(ny, 1), *y = fvec(ny, 0);
        /* NaNs: a few channels, one of them at a window's first tap */
        x[3 * IH * IW + (IH / 2) * IW + IW / 2] = NAN;
        x[20 * IH * IW] = NAN;
        x[31 * IH * IW + IH * IW - 1] = -NAN;
        for (int64_t c = 0; c < C; c++) /* NCHW -> NCHW16c */
            for (int64_t i = 0; i < IH * IW; i++)
                xb[((c / 16) * IH * IW + i) * 16 + c % 16] = x[c * IH * IW + i];
        t.x = x;
        t.y = r;
        poprt__pool_planes(&t, 0, C);
        /* in two calls, as chunks of a parallel loop */
        v->blocked_rows(&t.g, xb, yb, 0, 3);
        v->blocked_rows(&t.g, xb, yb, 3, B * OH);
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < OH * OW; i++)
                y[c * OH * OW + i] = yb[((c / 16) * OH * OW + i) * 16 + c % 16];
        ck_assert_msg(!memcmp(y, r, sizeof(float) * (size_t)ny),
                      "blocked maxpool %s case %zu differs from the window loop", v->name, s);
        checked += ny;
        free(x);
        free(r);
        free(xb);
        free(yb);
        free(y);
    }
    printf("kernels_x86: blocked maxpool %s passed %lld outputs against poprt__pool_planes\n",
           v->name, (long long)checked);
}
END_TEST

/* ---- the GEMM-based operators: the registry's against the ref kernels ---- */

/* The registry's kernel of op and the reference one on the same inputs
 * (slots 0..2, the output 4), then the reference on |inputs| for the sum of
 * |terms|; K terms per output. */
static void op_vs_ref(kcall *c, poprt__kernel_fn ref, int n_in, int64_t ny, int64_t K,
                      const char *what)
{
    const poprt__kernel *kn = poprt__kernel_find("", c->node.op_type, c->k.opset);
    ck_assert_ptr_nonnull(kn);
    float *fast = c->vals[4].t.data, *r = fvec(ny, 0), *mag = fvec(ny, 0), *abs_in[3];
    void *given[3]; /* the inputs, put back at the end (a second call reads them) */
    for (int i = 0; i < n_in; i++)
        given[i] = c->vals[i].t.data;
    kc_run(c, kn->run);
    c->vals[4].t.data = r;
    kc_run(c, ref);
    for (int i = 0; i < n_in; i++) {
        abs_in[i] = fabs_of(c->vals[i].t.data, c->vals[i].t.numel);
        c->vals[i].t.data = abs_in[i];
    }
    c->vals[4].t.data = mag;
    kc_run(c, ref);
    const double tol = 2.0 * (double)K * ldexp(1.0, -24);
    for (int64_t i = 0; i < ny; i++)
        ck_assert_msg(fabs(fast[i] - r[i]) <= tol * mag[i] + 1e-30, "%s: y[%lld] = %.9g, ref %.9g",
                      what, (long long)i, (double)fast[i], (double)r[i]);
    for (int i = 0; i < n_in; i++) {
        free(abs_in[i]);
        c->vals[i].t.data = given[i];
    }
    c->vals[4].t.data = fast;
    free(r);
    free(mag);
}

START_TEST(test_gemm_ops_vs_ref)
{
    static const int64_t gemm_shapes[][3] = {
        {1, 10, 64}, {37, 45, 70}, {64, 3, 200}, {128, 96, 300},
        /* one column: the GEMV (16 lanes, 8, the tail) */
        {50, 1, 200}, {7, 1, 37}, {1, 1, 5}};
    for (size_t s = 0; s < sizeof gemm_shapes / sizeof gemm_shapes[0]; s++)
        for (int tb = 0; tb < 2; tb++) {
            const int64_t M = gemm_shapes[s][0], N = gemm_shapes[s][1], K = gemm_shapes[s][2];
            float *a = fvec(M * K, 1), *b = fvec(K * N, 2), *bias = fvec(N, 3), *y = fvec(M * N, 0);
            kcall c;
            kc_init(&c, "Gemm", 13);
            int64_t ad[2] = {M, K}, bd[2] = {tb ? N : K, tb ? K : N}, yd[2] = {M, N};
            kc_tensor(&c, 0, POPRT_DTYPE_FLOAT, 2, ad, a);
            kc_tensor(&c, 1, POPRT_DTYPE_FLOAT, 2, bd, b);
            kc_tensor(&c, 2, POPRT_DTYPE_FLOAT, 1, &N, bias);
            kc_tensor(&c, 4, POPRT_DTYPE_FLOAT, 2, yd, y);
            kc_attr(&c, "transB", POPRT__ATTR_INT)->i = tb;
            op_vs_ref(&c, poprt__ref_gemm, 3, M * N, K, "Gemm");
            /* MatMul, batched over 2 */
            float *a2 = fvec(2 * M * K, 4), *y2 = fvec(2 * M * N, 0);
            kc_init(&c, "MatMul", 13);
            int64_t a2d[3] = {2, M, K}, b2d[2] = {K, N}, y2d[3] = {2, M, N};
            kc_tensor(&c, 0, POPRT_DTYPE_FLOAT, 3, a2d, a2);
            kc_tensor(&c, 1, POPRT_DTYPE_FLOAT, 2, b2d, b);
            kc_tensor(&c, 4, POPRT_DTYPE_FLOAT, 3, y2d, y2);
            op_vs_ref(&c, poprt__ref_matmul, 2, 2 * M * N, K, "MatMul");
            free(a);
            free(b);
            free(bias);
            free(y);
            free(a2);
            free(y2);
        }
    /* ConvTranspose: kernel = stride, the direct path (2x2 / 2: 16-column
     * blocks and the tail, output channels in fours and the rest, groups;
     * 3x3 / 3), and a padded 3x3 / 2 one (col2im) */
    static const int64_t ct[][8] = {
        {8, 16, 6, 7, 2, 0, 2, 1},   {5, 12, 9, 11, 3, 1, 2, 1},  {24, 24, 5, 37, 2, 0, 2, 1},
        {6, 10, 4, 20, 2, 0, 2, 1},  {4, 6, 3, 17, 3, 0, 3, 1},   {8, 12, 3, 33, 2, 0, 2, 2},
        /* more input channels than the direct path takes, slabs of rows */
        {96, 20, 9, 13, 2, 0, 2, 1}, {130, 64, 70, 5, 2, 0, 2, 2},
    };
    for (size_t s = 0; s < sizeof ct / sizeof ct[0]; s++) {
        const int64_t C = ct[s][0], M = ct[s][1], H = ct[s][2], W = ct[s][3], k = ct[s][4];
        const int64_t p = ct[s][5], st = ct[s][6], G = ct[s][7];
        const int64_t OH = (H - 1) * st + k - 2 * p, OW = (W - 1) * st + k - 2 * p;
        float *x = fvec(C * H * W, 7), *w = fvec(C * (M / G) * k * k, 8), *b = fvec(M, 9);
        float *y = fvec(M * OH * OW, 0);
        kcall c;
        kc_init(&c, "ConvTranspose", 11);
        int64_t xd[4] = {1, C, H, W}, wd[4] = {C, M / G, k, k}, yd[4] = {1, M, OH, OW};
        int64_t strides[2] = {st, st}, pads[4] = {p, p, p, p};
        if (G > 1)
            kc_attr(&c, "group", POPRT__ATTR_INT)->i = G;
        kc_tensor(&c, 0, POPRT_DTYPE_FLOAT, 4, xd, x);
        kc_tensor(&c, 1, POPRT_DTYPE_FLOAT, 4, wd, w);
        kc_tensor(&c, 2, POPRT_DTYPE_FLOAT, 1, &M, b);
        kc_tensor(&c, 4, POPRT_DTYPE_FLOAT, 4, yd, y);
        kc_ints(&c, "strides", 2, strides);
        kc_ints(&c, "pads", 4, pads);
        op_vs_ref(&c, poprt__ref_conv_transpose, 3, M * OH * OW, C / G * k * k, "ConvTranspose");
        /* again on W packed by the prepare (kernel = stride: W^T as the
         * GEMM's A per group); padded ones get no state */
        poprt__dim dims[2][4];
        poprt__type types[2];
        poprt__ival iv[3];
        memset(iv, 0, sizeof iv);
        for (int i = 0; i < 2; i++) {
            const poprt__tval *t = &c.vals[i].t;
            types[i] = (poprt__type){.kind = POPRT__KIND_TENSOR, .elem = t->dtype,
                                     .rank = t->rank, .dims = dims[i]};
            for (int d = 0; d < t->rank; d++)
                dims[i][d].value = t->dims[d];
            iv[i].type = &types[i];
            iv[i].data = t->data;
            iv[i].nbytes = t->nbytes;
        }
        poprt__prep_ctx pc = {&c.node, 11, 3, iv, 0, NULL, 0};
        void *state = NULL;
        size_t size = 0;
        ck_assert_int_eq(poprt__x86_conv_transpose_prepare(&pc, &state, &size), POPRT_OK);
        ck_assert_int_eq(state != NULL, p == 0 && k == st);
        if (state) {
            ck_assert_int_eq(poprt__x86_state_usable(state, size), 1);
            c.k.state = state;
            c.k.state_size = size;
            op_vs_ref(&c, poprt__ref_conv_transpose, 3, M * OH * OW, C / G * k * k,
                      "ConvTranspose (packed)");
            c.k.state = NULL;
            poprt__aligned_free(state);
        }
        free(x);
        free(w);
        free(b);
        free(y);
    }
    printf("kernels_x86: Gemm, MatMul and ConvTranspose agree with their ref kernels\n");
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
    tcase_add_test(tc, test_packed_header_checked);
    tcase_add_test(tc, test_degenerate);
    tcase_add_loop_test(tc, test_vmath_vs_ref, 0, poprt__vmath_n_variants);
    tcase_add_loop_test(tc, test_dwconv_variants_vs_ref, 0, poprt__dwconv_n_variants);
    tcase_add_loop_test(tc, test_dwconv_blocked_variants, 0, poprt__dwconv_n_variants);
    tcase_add_loop_test(tc, test_gconv_blocked_variants, 0, poprt__dwconv_n_variants);
    tcase_add_loop_test(tc, test_convb_variants_vs_ref, 0, poprt__convb_n_variants);
    tcase_add_loop_test(tc, test_convb_layout_in_state, 0, poprt__convb_n_variants);
    tcase_add_test(tc, test_convb_bf16_vs_ref);
    tcase_add_loop_test(tc, test_convw_variants_vs_ref, 0, poprt__convb_n_variants);
    tcase_add_test(tc, test_convw_bf16_vs_ref);
    tcase_add_loop_test(tc, test_maxpool_variants_vs_ref, 0, poprt__maxpool_n_variants);
    tcase_add_loop_test(tc, test_blocked_maxpool_variants_vs_ref, 0, poprt__maxpool_n_variants);
    tcase_add_test(tc, test_gemm_ops_vs_ref);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
