/* Reference kernels of the 'gemm' group: the float32 GEMM every GEMM-based
 * kernel is tested against (poprt__ref_sgemm), its double form, and the
 * Gemm and MatMul operators, written once against a GEMM engine
 * (poprt__gemm_engine): the reference kernels compute with poprt__ref_sgemm,
 * the registry's entries with the fast, CPU-dispatched poprt__sgemm
 * (lib/kernels/x86/gemm_ops.c). float16/bfloat16 are computed in float32
 * through scratch copies, double with its own (simple) GEMM. Work is split
 * over output rows/columns so each output element is produced by one thread
 * with a fixed summation order: results do not depend on the thread count. */
#include <string.h>
#include "kernels/ref/gemm.h"
#include "kernels/ref/util.h"

/* Register block MR x NR; k blocked by KC and rows by MC so a packed B
 * panel (KC x NR) sits in L1 and an MC x KC block of A in L2 while the
 * panels stream past it. */
#define SG_MR 4
#define SG_NR 8
#define SG_KC 256
#define SG_MC 128

#if defined(__GNUC__)
/* GCC/Clang generic vectors: portable C that compiles to SSE on baseline
 * x86-64 (wider units when the file is built for them). Plain loops left to
 * the auto-vectoriser kept the accumulators in memory at -O2. */
typedef float sg_v4 __attribute__((vector_size(16)));

/* acc[MR][NR] = sum over p of a(r, p) * bp[p][.]; a(r, p) = a[r*rs + p*ps]. */
__attribute__((noinline)) static void sgemm_micro(int64_t kc, const float *restrict a,
                                                  int64_t rs, int64_t ps,
                                                  const float *restrict bp,
                                                  float *restrict acc)
{
    sg_v4 c00 = {0}, c01 = {0}, c10 = {0}, c11 = {0}, c20 = {0}, c21 = {0}, c30 = {0}, c31 = {0};
    const float *a0 = a, *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs;
    for (int64_t p = 0; p < kc; p++) {
        sg_v4 b0, b1;
        memcpy(&b0, bp + p * SG_NR, sizeof b0);
        memcpy(&b1, bp + p * SG_NR + 4, sizeof b1);
        const float x0 = a0[p * ps], x1 = a1[p * ps], x2 = a2[p * ps], x3 = a3[p * ps];
        const sg_v4 v0 = {x0, x0, x0, x0}, v1 = {x1, x1, x1, x1};
        const sg_v4 v2 = {x2, x2, x2, x2}, v3 = {x3, x3, x3, x3};
        c00 += v0 * b0;
        c01 += v0 * b1;
        c10 += v1 * b0;
        c11 += v1 * b1;
        c20 += v2 * b0;
        c21 += v2 * b1;
        c30 += v3 * b0;
        c31 += v3 * b1;
    }
    memcpy(acc + 0, &c00, 16);
    memcpy(acc + 4, &c01, 16);
    memcpy(acc + 8, &c10, 16);
    memcpy(acc + 12, &c11, 16);
    memcpy(acc + 16, &c20, 16);
    memcpy(acc + 20, &c21, 16);
    memcpy(acc + 24, &c30, 16);
    memcpy(acc + 28, &c31, 16);
}
#else
static void sgemm_micro(int64_t kc, const float *restrict a, int64_t rs, int64_t ps,
                        const float *restrict bp, float *restrict acc)
{
    for (int i = 0; i < SG_MR * SG_NR; i++)
        acc[i] = 0.0f;
    for (int64_t p = 0; p < kc; p++)
        for (int r = 0; r < SG_MR; r++) {
            const float x = a[r * rs + p * ps];
            for (int j = 0; j < SG_NR; j++)
                acc[r * SG_NR + j] += x * bp[p * SG_NR + j];
        }
}
#endif

void poprt__ref_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0 || alpha == 0.0f) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
        return;
    }
    float bp[SG_KC * SG_NR] __attribute__((aligned(64)));
    float ap[SG_KC * SG_MR] __attribute__((aligned(64)));
    float acc[SG_MR * SG_NR] __attribute__((aligned(64)));
    for (int64_t pc = 0; pc < K; pc += SG_KC) {
        const int64_t kc = K - pc < SG_KC ? K - pc : SG_KC;
        const int first = pc == 0;
        for (int64_t mc = 0; mc < M; mc += SG_MC) {
            const int64_t mend = M - mc < SG_MC ? M : mc + SG_MC;
            for (int64_t jc = 0; jc < N; jc += SG_NR) {
                const int64_t nr = N - jc < SG_NR ? N - jc : SG_NR;
                /* pack B[pc:pc+kc, jc:jc+nr], zero-padded to NR columns */
                for (int64_t p = 0; p < kc; p++) {
                    float *dst = bp + p * SG_NR;
                    if (!transB) {
                        const float *src = B + (pc + p) * ldb + jc;
                        for (int64_t j = 0; j < nr; j++)
                            dst[j] = src[j];
                    } else {
                        const float *src = B + jc * ldb + (pc + p);
                        for (int64_t j = 0; j < nr; j++)
                            dst[j] = src[j * ldb];
                    }
                    for (int64_t j = nr; j < SG_NR; j++)
                        dst[j] = 0.0f;
                }
                for (int64_t ic = mc; ic < mend; ic += SG_MR) {
                    const int64_t mr = mend - ic < SG_MR ? mend - ic : SG_MR;
                    if (!transA && mr == SG_MR) {
                        /* rows of A read in place: four streams along k */
                        sgemm_micro(kc, A + ic * lda + pc, lda, 1, bp, acc);
                    } else {
                        /* A^T or a partial row block: pack, zero-padded */
                        for (int64_t r = 0; r < SG_MR; r++)
                            for (int64_t p = 0; p < kc; p++)
                                ap[p * SG_MR + r] =
                                    r >= mr ? 0.0f
                                    : transA ? A[(pc + p) * lda + ic + r]
                                             : A[(ic + r) * lda + pc + p];
                        sgemm_micro(kc, ap, 1, SG_MR, bp, acc);
                    }
                    for (int64_t r = 0; r < mr; r++) {
                        float *c = C + (ic + r) * ldc + jc;
                        const float *a = acc + r * SG_NR;
                        if (first && beta == 0.0f) {
                            for (int64_t j = 0; j < nr; j++)
                                c[j] = alpha * a[j];
                        } else if (first && beta != 1.0f) {
                            for (int64_t j = 0; j < nr; j++)
                                c[j] = beta * c[j] + alpha * a[j];
                        } else {
                            for (int64_t j = 0; j < nr; j++)
                                c[j] += alpha * a[j];
                        }
                    }
                }
            }
        }
    }
}

void poprt__ref_dgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
                      const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                      double *C, int64_t ldc)
{
    for (int64_t i = 0; i < M; i++) {
        double *c = C + i * ldc;
        for (int64_t j = 0; j < N; j++)
            c[j] = beta == 0.0 ? 0.0 : beta * c[j];
        for (int64_t p = 0; p < K; p++) {
            const double a = alpha * (transA ? A[p * lda + i] : A[i * lda + p]);
            if (!transB) {
                const double *b = B + p * ldb;
                for (int64_t j = 0; j < N; j++)
                    c[j] += a * b[j];
            } else {
                for (int64_t j = 0; j < N; j++)
                    c[j] += a * B[j * ldb + p];
            }
        }
    }
}

typedef struct sgemm_task {
    int transA, transB, by_rows;
    int64_t M, N, K, lda, ldb, ldc, block;
    float alpha, beta;
    const float *A, *B;
    float *C;
} sgemm_task;

static void sgemm_task_fn(void *ctx, int64_t begin, int64_t end)
{
    const sgemm_task *t = ctx;
    int64_t lo = begin * t->block, hi = end * t->block;
    if (t->by_rows) {
        if (hi > t->M)
            hi = t->M;
        const float *A = t->transA ? t->A + lo : t->A + lo * t->lda;
        poprt__ref_sgemm(t->transA, t->transB, hi - lo, t->N, t->K, t->alpha, A, t->lda, t->B,
                         t->ldb, t->beta, t->C + lo * t->ldc, t->ldc);
    } else {
        if (hi > t->N)
            hi = t->N;
        const float *B = t->transB ? t->B + lo * t->ldb : t->B + lo;
        poprt__ref_sgemm(t->transA, t->transB, t->M, hi - lo, t->K, t->alpha, t->A, t->lda, B,
                         t->ldb, t->beta, t->C + lo, t->ldc);
    }
}

void poprt__ref_sgemm_mt(poprt__kctx *k, int transA, int transB, int64_t M, int64_t N,
                         int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                         int64_t ldb, float beta, float *C, int64_t ldc)
{
    sgemm_task t = {transA, transB, 1, M, N, K, lda, ldb, ldc, SG_MR, alpha, beta, A, B, C};
    /* split the larger dimension: rows by MR, columns by NR panels */
    t.by_rows = M >= N || N < 2 * SG_NR;
    t.block = t.by_rows ? SG_MR : SG_NR;
    int64_t units = ((t.by_rows ? M : N) + t.block - 1) / t.block;
    int64_t unit_cost = t.block * (t.by_rows ? N : M) * (K > 0 ? K : 1);
    int64_t grain = poprt__ref_grain(unit_cost, 1 << 16);
    if (!k || units <= grain) {
        sgemm_task_fn(&t, 0, units);
        return;
    }
    poprt__kctx_parallel_for(k, units, grain, sgemm_task_fn, &t);
}

/* ---- the reference engine ---------------------------------------------------- */

static size_t ref_ws_size(int ta, int tb, int64_t M, int64_t N, int64_t K)
{
    (void)ta, (void)tb, (void)M, (void)N, (void)K;
    return 0;
}

static void ref_run(poprt__kctx *k, void *ws, int ta, int tb, int64_t M, int64_t N, int64_t K,
                    float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                    float beta, float *C, int64_t ldc)
{
    (void)ws;
    if (k)
        poprt__ref_sgemm_mt(k, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else
        poprt__ref_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

const poprt__gemm_engine poprt__ref_gemm_engine = {ref_ws_size, ref_run, NULL};

int poprt__gemm_engine_ws(poprt__kctx *k, const poprt__gemm_engine *e, int ta, int tb, int64_t M,
                          int64_t N, int64_t K, void **ws)
{
    const size_t n = e->ws_size(ta, tb, M, N, K);
    *ws = n ? poprt__kctx_scratch(k, n) : NULL;
    return !n || *ws;
}

/* ======================================================================
 * Gemm
 * ==================================================================== */

poprt_status poprt__gemm_op(poprt__kctx *k, const poprt__gemm_engine *e)
{
    const poprt__tval *a = poprt__kin(k, 0), *b = poprt__kin(k, 1), *c = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!a || !b || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing A, B or Y");
    if (a->rank != 2 || b->rank != 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "A and B must be 2-D");
    const int ta = poprt__attr_i(k->node, "transA", 0) != 0;
    const int tb = poprt__attr_i(k->node, "transB", 0) != 0;
    const float alpha = poprt__attr_f(k->node, "alpha", 1.0f);
    float beta = poprt__attr_f(k->node, "beta", 1.0f);
    const int64_t M = ta ? a->dims[1] : a->dims[0], K = ta ? a->dims[0] : a->dims[1];
    const int64_t N = tb ? b->dims[0] : b->dims[1], Kb = tb ? b->dims[1] : b->dims[0];
    if (K != Kb || y->rank != 2 || y->dims[0] != M || y->dims[1] != N)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "A is %lldx%lld, B is %lldx%lld after transposition",
                               (long long)M, (long long)K, (long long)Kb, (long long)N);
    /* C broadcasts (right-aligned) to M x N */
    int64_t cs0 = 0, cs1 = 0;
    if (c) {
        if (c->rank > 2)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "C has rank %d",
                                   c->rank);
        int64_t c0 = c->rank == 2 ? c->dims[0] : 1, c1 = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        if ((c0 != 1 && c0 != M) || (c1 != 1 && c1 != N))
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "C does not broadcast to %lldx%lld", (long long)M,
                                   (long long)N);
        cs0 = c0 == 1 ? 0 : c1;
        cs1 = c1 == 1 ? 0 : 1;
    } else {
        beta = 0.0f;
    }
    if (y->numel == 0)
        return POPRT_OK;
    if (y->dtype == POPRT_DTYPE_FLOAT || poprt__ref_is_half(y->dtype)) {
        /* B is read after the packed B is tried: a weight the session
         * keeps packed only is not copied for nothing */
        const float *af = poprt__ref_in_f32(k, a), *cf = c ? poprt__ref_in_f32(k, c) : NULL;
        float *yf = poprt__ref_out_f32(k, y);
        if (!af || (c && !cf) || !yf)
            return poprt__ref_oom(k);
        if (c && beta != 0.0f)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    yf[i * N + j] = cf[i * cs0 + j * cs1];
        /* -1: no packed B, or packed for another CPU (an executable file) */
        if (y->dtype == POPRT_DTYPE_FLOAT && e->run_packed_b &&
            e->run_packed_b(k, ta, tb, M, N, K, alpha, af, a->dims[1], beta, yf, N) == 0) {
            poprt__ref_store_f32(y, yf);
            return POPRT_OK;
        }
        const float *bf = poprt__ref_in_f32(k, b);
        void *ws;
        if (!bf || !poprt__gemm_engine_ws(k, e, ta, tb, M, N, K, &ws))
            return poprt__ref_oom(k);
        e->run(k, ws, ta, tb, M, N, K, alpha, af, a->dims[1], bf, b->dims[1], beta, yf, N);
        poprt__ref_store_f32(y, yf);
        return POPRT_OK;
    }
    if (y->dtype == POPRT_DTYPE_DOUBLE) {
        double *yd = y->data;
        if (c && beta != 0.0f)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    yd[i * N + j] = ((const double *)c->data)[i * cs0 + j * cs1];
        poprt__ref_dgemm(ta, tb, M, N, K, alpha, a->data, a->dims[1], b->data, b->dims[1], beta,
                         yd, N);
        return POPRT_OK;
    }
    /* integer types: exact products in int64 (wrapping), alpha/beta applied
     * when they are not 1 */
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            uint64_t s = 0;
            for (int64_t p = 0; p < K; p++) {
                int64_t av = poprt__load_i64(a->data, a->dtype, ta ? p * M + i : i * K + p);
                int64_t bv = poprt__load_i64(b->data, b->dtype, tb ? j * K + p : p * N + j);
                s += (uint64_t)av * (uint64_t)bv;
            }
            int64_t v = (int64_t)s;
            if (alpha != 1.0f)
                v = (int64_t)((double)v * alpha);
            if (c && beta != 0.0f) {
                int64_t cv = poprt__load_i64(c->data, c->dtype, i * cs0 + j * cs1);
                v = (int64_t)((uint64_t)v + (uint64_t)(beta == 1.0f ? cv : (int64_t)(cv * beta)));
            }
            poprt__store_i64(y->data, y->dtype, i * N + j, v);
        }
    return POPRT_OK;
}

/* ======================================================================
 * MatMul (numpy semantics: batched broadcasting, 1-D operands)
 * ==================================================================== */

typedef struct matmul_plan {
    int64_t M, N, K, batch;
    int nb;                       /* batch rank */
    int64_t bdims[POPRT__MAX_RANK];
    int64_t astr[POPRT__MAX_RANK]; /* batch strides in matrices (0: broadcast) */
    int64_t bstr[POPRT__MAX_RANK];
} matmul_plan;

static void matmul_offsets(const matmul_plan *p, int64_t bi, int64_t *ao, int64_t *bo)
{
    int64_t a = 0, b = 0;
    for (int i = p->nb - 1; i >= 0; i--) {
        int64_t idx = bi % p->bdims[i];
        bi /= p->bdims[i];
        a += idx * p->astr[i];
        b += idx * p->bstr[i];
    }
    *ao = a * p->M * p->K;
    *bo = b * p->K * p->N;
}

typedef struct matmul_task {
    const matmul_plan *p;
    const poprt__gemm_engine *e;
    const float *a, *b;
    float *y;
    char *ws;        /* one fast-GEMM workspace per batch item, or NULL */
    size_t ws_size;
} matmul_task;

static void matmul_task_fn(void *ctx, int64_t b0, int64_t b1)
{
    const matmul_task *t = ctx;
    const matmul_plan *p = t->p;
    for (int64_t bi = b0; bi < b1; bi++) {
        int64_t ao, bo;
        matmul_offsets(p, bi, &ao, &bo);
        t->e->run(NULL, t->ws ? t->ws + (size_t)bi * t->ws_size : NULL, 0, 0, p->M, p->N, p->K,
                  1.0f, t->a + ao, p->K, t->b + bo, p->N, 0.0f, t->y + bi * p->M * p->N, p->N);
    }
}

#define DEF_MATMUL_INT(NAME, T)                                                                \
    static void NAME(const matmul_plan *p, const T *a, const T *b, T *y)                       \
    {                                                                                          \
        for (int64_t bi = 0; bi < p->batch; bi++) {                                            \
            int64_t ao, bo;                                                                    \
            matmul_offsets(p, bi, &ao, &bo);                                                   \
            for (int64_t i = 0; i < p->M; i++) {                                               \
                T *yr = y + (bi * p->M + i) * p->N;                                            \
                for (int64_t j = 0; j < p->N; j++)                                             \
                    yr[j] = 0;                                                                 \
                for (int64_t q = 0; q < p->K; q++) {                                           \
                    const uint64_t av = (uint64_t)a[ao + i * p->K + q];                        \
                    const T *br = b + bo + q * p->N;                                           \
                    for (int64_t j = 0; j < p->N; j++) /* wraps like the hardware */           \
                        yr[j] = (T)((uint64_t)yr[j] + av * (uint64_t)br[j]);                   \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
DEF_MATMUL_INT(matmul_i32, int32_t)
DEF_MATMUL_INT(matmul_i64, int64_t)
DEF_MATMUL_INT(matmul_u32, uint32_t)
DEF_MATMUL_INT(matmul_u64, uint64_t)

poprt_status poprt__matmul_op(poprt__kctx *k, const poprt__gemm_engine *e)
{
    const poprt__tval *a = poprt__kin(k, 0), *b = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!a || !b || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing A, B or Y");
    if (a->rank < 1 || b->rank < 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "MatMul operands must have rank >= 1");
    matmul_plan p;
    memset(&p, 0, sizeof p);
    p.M = a->rank == 1 ? 1 : a->dims[a->rank - 2];
    p.K = a->dims[a->rank - 1];
    const int64_t Kb = b->rank == 1 ? b->dims[0] : b->dims[b->rank - 2];
    p.N = b->rank == 1 ? 1 : b->dims[b->rank - 1];
    if (p.K != Kb)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "inner dimensions differ: %lld and %lld", (long long)p.K,
                               (long long)Kb);
    const int na = a->rank > 2 ? a->rank - 2 : 0, nbb = b->rank > 2 ? b->rank - 2 : 0;
    p.nb = na > nbb ? na : nbb;
    p.batch = 1;
    int64_t sa = 1, sb = 1;
    for (int i = p.nb - 1; i >= 0; i--) {
        int ia = i - (p.nb - na), ib = i - (p.nb - nbb);
        int64_t da = ia >= 0 ? a->dims[ia] : 1, db = ib >= 0 ? b->dims[ib] : 1;
        if (da != db && da != 1 && db != 1)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "batch dimensions %lld and %lld do not broadcast",
                                   (long long)da, (long long)db);
        p.bdims[i] = da > db ? da : db;
        if (da == 0 || db == 0)
            p.bdims[i] = 0;
        p.astr[i] = da == 1 ? 0 : sa;
        p.bstr[i] = db == 1 ? 0 : sb;
        sa *= da;
        sb *= db;
        p.batch *= p.bdims[i];
    }
    if (y->numel != p.batch * p.M * p.N)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output size mismatch");
    if (y->numel == 0)
        return POPRT_OK;
    /* B shared by every batch and A dense: one tall GEMM */
    if (sb == 1 && sa == p.batch) {
        p.M *= p.batch;
        p.batch = 1;
        p.nb = 0;
    }
    switch (y->dtype) {
    case POPRT_DTYPE_INT32: matmul_i32(&p, a->data, b->data, y->data); return POPRT_OK;
    case POPRT_DTYPE_INT64: matmul_i64(&p, a->data, b->data, y->data); return POPRT_OK;
    case POPRT_DTYPE_UINT32: matmul_u32(&p, a->data, b->data, y->data); return POPRT_OK;
    case POPRT_DTYPE_UINT64: matmul_u64(&p, a->data, b->data, y->data); return POPRT_OK;
    case POPRT_DTYPE_DOUBLE:
        for (int64_t bi = 0; bi < p.batch; bi++) {
            int64_t ao, bo;
            matmul_offsets(&p, bi, &ao, &bo);
            poprt__ref_dgemm(0, 0, p.M, p.N, p.K, 1.0, (const double *)a->data + ao, p.K,
                             (const double *)b->data + bo, p.N, 0.0,
                             (double *)y->data + bi * p.M * p.N, p.N);
        }
        return POPRT_OK;
    default: break;
    }
    if (y->dtype != POPRT_DTYPE_FLOAT && !poprt__ref_is_half(y->dtype))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "MatMul of %s",
                               poprt__dtype_name((poprt_dtype)y->dtype));
    /* B is read after the packed B is tried (see Gemm) */
    const float *af = poprt__ref_in_f32(k, a), *bf = NULL;
    float *yf = poprt__ref_out_f32(k, y);
    if (!af || !yf)
        return poprt__ref_oom(k);
    const size_t ws_size = (e->ws_size(0, 0, p.M, p.N, p.K) + 63) & ~(size_t)63;
    /* many small products: one per thread at a time, each with its own
     * workspace (when that stays modest); else threads inside each product */
    size_t all_ws = 0;
    const int per_item = p.batch > 1 && (p.batch >= 4 || p.M * p.N * p.K < (1 << 16)) &&
                         poprt__mul_size(ws_size, (size_t)p.batch, &all_ws) &&
                         all_ws <= ((size_t)64 << 20);
    if (per_item) {
        if (!(bf = poprt__ref_in_f32(k, b)))
            return poprt__ref_oom(k);
        matmul_task t = {&p, e, af, bf, yf, NULL, ws_size};
        if (ws_size && !(t.ws = poprt__kctx_scratch(k, all_ws)))
            return poprt__ref_oom(k);
        poprt__kctx_parallel_for(k, p.batch, poprt__ref_grain(p.M * p.N * p.K, 1 << 16),
                                 matmul_task_fn, &t);
    } else {
        /* a constant B packed when the session was compiled (-1: none, or
         * packed for another CPU) */
        if (p.batch == 1 && y->dtype == POPRT_DTYPE_FLOAT && e->run_packed_b &&
            e->run_packed_b(k, 0, 0, p.M, p.N, p.K, 1.0f, af, p.K, 0.0f, yf, p.N) == 0) {
            poprt__ref_store_f32(y, yf);
            return POPRT_OK;
        }
        void *ws;
        bf = poprt__ref_in_f32(k, b);
        if (!bf || !poprt__gemm_engine_ws(k, e, 0, 0, p.M, p.N, p.K, &ws))
            return poprt__ref_oom(k);
        for (int64_t bi = 0; bi < p.batch; bi++) {
            int64_t ao, bo;
            matmul_offsets(&p, bi, &ao, &bo);
            e->run(k, ws, 0, 0, p.M, p.N, p.K, 1.0f, af + ao, p.K, bf + bo, p.N, 0.0f,
                   yf + bi * p.M * p.N, p.N);
        }
    }
    poprt__ref_store_f32(y, yf);
    return POPRT_OK;
}

poprt_status poprt__ref_gemm(poprt__kctx *k)
{
    return poprt__gemm_op(k, &poprt__ref_gemm_engine);
}

poprt_status poprt__ref_matmul(poprt__kctx *k)
{
    return poprt__matmul_op(k, &poprt__ref_gemm_engine);
}
