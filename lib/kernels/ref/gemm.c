/* Reference kernels of the 'gemm' group: the float32 GEMM every GEMM-based
 * kernel is tested against (poprt__ref_sgemm), its double form, and the
 * Gemm and MatMul operators. Those run on the fast, CPU-dispatched
 * poprt__sgemm (lib/kernels/x86); float16/bfloat16 are computed in float32
 * through scratch copies, double with its own (simple) GEMM. Work is split
 * over output rows/columns so each output element is produced by one thread
 * with a fixed summation order: results do not depend on the thread count. */
#include <string.h>
#include "kernels/ref/gemm.h"
#include "kernels/ref/util.h"
#include "kernels/x86/sgemm.h"

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

/* ---- the fast GEMM (lib/kernels/x86) for Conv, ConvTranspose, Gemm and
 * MatMul; poprt__ref_sgemm above stays the oracle it is tested against. */

/* Problems too thin for register tiles (a column or two of output) stay
 * on the reference loops. Depends on the shape only, never on threads. */
int poprt__fast_gemm_fits(int64_t M, int64_t N, int64_t K)
{
    return M > 0 && N >= 4 && K > 0;
}

/* Workspace for fast_gemm calls of this shape, taken once per kernel call
 * (scratch is only released when the kernel returns). NULL: out of memory,
 * or a shape fast_gemm hands to the reference anyway. */
void *poprt__fast_gemm_ws(poprt__kctx *k, int ta, int tb, int64_t M, int64_t N, int64_t K)
{
    if (!poprt__fast_gemm_fits(M, N, K))
        return NULL;
    return poprt__kctx_scratch(k, poprt__sgemm_workspace(NULL, ta, tb, M, N, K));
}

/* C = alpha op(A) op(B) + beta C over the session's threads (split over M
 * and N blocks only, so bits do not depend on the thread count). k NULL:
 * one thread. ws from fast_gemm_ws for the same shape. */
void poprt__fast_gemm(poprt__kctx *k, void *ws, int ta, int tb, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc)
{
    if (!ws || !poprt__fast_gemm_fits(M, N, K)) {
        if (k)
            poprt__ref_sgemm_mt(k, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        else
            poprt__ref_sgemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    poprt__par par = poprt__par_kctx(k);
    poprt__sgemm(NULL, k ? &par : NULL, ws, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C,
                 ldc);
}

/* ======================================================================
 * Gemm
 * ==================================================================== */

/* A constant float B (Gemm's and MatMul's weight) packed when the session is
 * compiled: a header {magic, K, N, transB}, then op(B) as the GEMM's packed
 * B operand. */
#define PACKED_B_HEADER 64u
#define GEMM_PACK_MAGIC 0x314b504d47525050ull /* "PPRGMPK1" */
#define MM_PACK_MAGIC 0x314b50424d525050ull   /* "PPRMBPK1" */

static poprt_status packed_b_make(uint64_t magic, const float *B, int tb, int64_t K, int64_t N,
                                  int64_t ldb, const char *what, void **state, size_t *size)
{
    const size_t psz = poprt__sgemm_pack_b_size(NULL, K, N);
    if (!psz)
        return POPRT_OK;
    unsigned char *blob = poprt__aligned_alloc(PACKED_B_HEADER + psz);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing %s weights", what);
    memset(blob, 0, PACKED_B_HEADER);
    uint64_t h[4] = {magic, (uint64_t)K, (uint64_t)N, (uint64_t)tb};
    memcpy(blob, h, sizeof h);
    poprt__sgemm_pack_b(NULL, NULL, tb, K, N, B, ldb, blob + PACKED_B_HEADER);
    *state = blob;
    *size = PACKED_B_HEADER + psz;
    return POPRT_OK;
}

/* The node's packed B for (K, N, transB), or NULL. */
static const void *packed_b_find(const poprt__kctx *k, uint64_t magic, int64_t K, int64_t N,
                                 int tb)
{
    uint64_t h[4];
    if (!k->state || k->state_size <= PACKED_B_HEADER)
        return NULL;
    memcpy(h, k->state, sizeof h);
    if (h[0] != magic || h[1] != (uint64_t)K || h[2] != (uint64_t)N || h[3] != (uint64_t)tb)
        return NULL;
    return (const unsigned char *)k->state + PACKED_B_HEADER;
}

/* Gemm's constant B: the usual classifier / linear weight. */
poprt_status poprt__ref_gemm_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in < 2 || !c->in[1].type || !c->in[1].data || c->in[1].type->elem != POPRT_DTYPE_FLOAT ||
        c->in[1].type->rank != 2 || !c->in[0].type || c->in[0].type->elem != POPRT_DTYPE_FLOAT ||
        c->n_out < 1 || c->out[0].elem != POPRT_DTYPE_FLOAT)
        return POPRT_OK;
    const int tb = poprt__attr_i(c->node, "transB", 0) != 0;
    const int64_t d0 = c->in[1].type->dims[0].value, d1 = c->in[1].type->dims[1].value;
    const int64_t K = tb ? d1 : d0, N = tb ? d0 : d1;
    if (K <= 0 || N < 4)
        return POPRT_OK;
    return packed_b_make(GEMM_PACK_MAGIC, c->in[1].data, tb, K, N, d1, "Gemm", state, size);
}

poprt_status poprt__ref_gemm(poprt__kctx *k)
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
        const float *af = poprt__ref_in_f32(k, a), *bf = poprt__ref_in_f32(k, b),
                    *cf = c ? poprt__ref_in_f32(k, c) : NULL;
        float *yf = poprt__ref_out_f32(k, y);
        if (!af || !bf || (c && !cf) || !yf)
            return poprt__ref_oom(k);
        if (c && beta != 0.0f)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    yf[i * N + j] = cf[i * cs0 + j * cs1];
        const void *bp = y->dtype == POPRT_DTYPE_FLOAT && poprt__fast_gemm_fits(M, N, K)
                             ? packed_b_find(k, GEMM_PACK_MAGIC, K, N, tb)
                             : NULL;
        void *pws;
        if (bp && (pws = poprt__kctx_scratch(
                       k, poprt__sgemm_packed_workspace(NULL, bp, ta, 0, M, N, K)))) {
            poprt__par par = poprt__par_kctx(k);
            /* -1: packed for another CPU (an executable file): the plain path */
            if (poprt__sgemm_packed(&par, pws, ta, 0, M, N, K, alpha, af, a->dims[1], NULL, NULL, 0,
                                    bp, beta, yf, N) == 0) {
                poprt__ref_store_f32(y, yf);
                return POPRT_OK;
            }
        }
        void *ws = NULL;
        if (poprt__fast_gemm_fits(M, N, K) && !(ws = poprt__fast_gemm_ws(k, ta, tb, M, N, K)))
            return poprt__ref_oom(k);
        poprt__fast_gemm(k, ws, ta, tb, M, N, K, alpha, af, a->dims[1], bf, b->dims[1], beta, yf,
                         N);
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
        poprt__fast_gemm(NULL, t->ws ? t->ws + (size_t)bi * t->ws_size : NULL, 0, 0, p->M, p->N,
                         p->K, 1.0f, t->a + ao, p->K, t->b + bo, p->N, 0.0f,
                         t->y + bi * p->M * p->N, p->N);
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

/* A constant 2-D float B packed once (packed_b_make). */
poprt_status poprt__ref_matmul_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in < 2 || !c->in[1].type || !c->in[1].data || c->in[1].type->elem != POPRT_DTYPE_FLOAT ||
        c->in[1].type->rank != 2 || !c->in[0].type || c->in[0].type->elem != POPRT_DTYPE_FLOAT ||
        c->in[0].type->rank < 2)
        return POPRT_OK;
    const int64_t K = c->in[1].type->dims[0].value, N = c->in[1].type->dims[1].value;
    if (K <= 0 || N < 4)
        return POPRT_OK;
    return packed_b_make(MM_PACK_MAGIC, c->in[1].data, 0, K, N, N, "MatMul", state, size);
}

poprt_status poprt__ref_matmul(poprt__kctx *k)
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
                               poprt_dtype_name((poprt_dtype)y->dtype));
    const float *af = poprt__ref_in_f32(k, a), *bf = poprt__ref_in_f32(k, b);
    float *yf = poprt__ref_out_f32(k, y);
    if (!af || !bf || !yf)
        return poprt__ref_oom(k);
    const int fits = poprt__fast_gemm_fits(p.M, p.N, p.K);
    const size_t ws_size = fits ? (poprt__sgemm_workspace(NULL, 0, 0, p.M, p.N, p.K) + 63) &
                                      ~(size_t)63
                                : 0;
    /* many small products: one per thread at a time, each with its own
     * workspace (when that stays modest); else threads inside each product */
    size_t all_ws = 0;
    const int per_item = p.batch > 1 && (p.batch >= 4 || p.M * p.N * p.K < (1 << 16)) &&
                         poprt__mul_size(ws_size, (size_t)p.batch, &all_ws) &&
                         all_ws <= ((size_t)64 << 20);
    if (per_item) {
        matmul_task t = {&p, af, bf, yf, NULL, ws_size};
        if (fits && !(t.ws = poprt__kctx_scratch(k, all_ws)))
            return poprt__ref_oom(k);
        poprt__kctx_parallel_for(k, p.batch, poprt__ref_grain(p.M * p.N * p.K, 1 << 16),
                                 matmul_task_fn, &t);
    } else {
        /* a constant B packed when the session was compiled */
        const void *bp = fits && p.batch == 1 && y->dtype == POPRT_DTYPE_FLOAT
                             ? packed_b_find(k, MM_PACK_MAGIC, p.K, p.N, 0)
                             : NULL;
        void *pws;
        if (bp && (pws = poprt__kctx_scratch(
                       k, poprt__sgemm_packed_workspace(NULL, bp, 0, 0, p.M, p.N, p.K)))) {
            poprt__par par = poprt__par_kctx(k);
            /* -1: packed for another CPU (an executable file): the plain path */
            if (poprt__sgemm_packed(&par, pws, 0, 0, p.M, p.N, p.K, 1.0f, af, p.K, NULL, NULL, 0,
                                    bp, 0.0f, yf, p.N) == 0) {
                poprt__ref_store_f32(y, yf);
                return POPRT_OK;
            }
        }
        void *ws = NULL;
        if (fits && !(ws = poprt__fast_gemm_ws(k, 0, 0, p.M, p.N, p.K)))
            return poprt__ref_oom(k);
        for (int64_t bi = 0; bi < p.batch; bi++) {
            int64_t ao, bo;
            matmul_offsets(&p, bi, &ao, &bo);
            poprt__fast_gemm(k, ws, 0, 0, p.M, p.N, p.K, 1.0f, af + ao, p.K, bf + bo, p.N, 0.0f,
                             yf + bi * p.M * p.N, p.N);
        }
    }
    poprt__ref_store_f32(y, yf);
    return POPRT_OK;
}
