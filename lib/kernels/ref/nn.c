/* Reference kernels of the 'nn' family.
 *
 * float32 is the hot path: Conv lowers to im2col (or a direct loop for
 * depthwise) plus a GEMM, as do ConvTranspose (GEMM + col2im), Gemm and
 * MatMul. Those GEMMs run on the fast, CPU-dispatched poprt__sgemm
 * (lib/kernels/x86); the blocked GEMM below is the portable oracle it is
 * tested against. float16/bfloat16 are computed in float32 through
 * scratch copies; double runs its own (simple) GEMM. Work is split over
 * output rows/channels so each output element is produced by one thread with
 * a fixed summation order: results do not depend on the thread count. */
#include <math.h>
#include <string.h>
#include <float.h>
#include "kernels/ref/nn.h"
#include "kernels/ref/poprt_compiled.h"
#include "kernels/x86/sgemm.h"
#include "kernels/x86/conv_dw.h"
#include "kernels/x86/conv_blocked.h"
#include "kernels/x86/pool.h"
#include "kernels/x86/vmath.h"

/* ======================================================================
 * small helpers
 * ==================================================================== */

static int64_t prod64(const int64_t *d, int n)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= d[i];
    return p;
}

static poprt_status oom(const poprt__kctx *k)
{
    return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
}

static int is_half(int32_t dt)
{
    return dt == POPRT_DTYPE_FLOAT16 || dt == POPRT_DTYPE_BFLOAT16;
}

/* A float32 view of t: t's own data when float32, else a converted scratch
 * copy (float16, bfloat16, double, small ints). NULL when out of memory. */
static const float *as_f32(poprt__kctx *k, const poprt__tval *t)
{
    if (t->dtype == POPRT_DTYPE_FLOAT)
        return (const float *)t->data;
    float *f = poprt__kctx_scratch(k, (size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
    if (!f)
        return NULL;
    if (t->dtype == POPRT_DTYPE_FLOAT16) {
        const uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            f[i] = poprt__half_to_float(h[i]);
    } else if (t->dtype == POPRT_DTYPE_BFLOAT16) {
        const uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            f[i] = poprt__bf16_to_float(h[i]);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            f[i] = (float)poprt__load_f64(t->data, t->dtype, i);
    }
    return f;
}

/* Where to compute an output in float32: its own buffer when float32, else
 * scratch that store_f32 converts back. */
static float *out_f32(poprt__kctx *k, poprt__tval *t)
{
    if (t->dtype == POPRT_DTYPE_FLOAT)
        return (float *)t->data;
    return poprt__kctx_scratch(k, (size_t)(t->numel > 0 ? t->numel : 1) * sizeof(float));
}

static void store_f32(poprt__tval *t, const float *f)
{
    if (t->dtype == POPRT_DTYPE_FLOAT)
        return;
    if (t->dtype == POPRT_DTYPE_FLOAT16) {
        uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            h[i] = poprt__float_to_half(f[i]);
    } else if (t->dtype == POPRT_DTYPE_BFLOAT16) {
        uint16_t *h = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            h[i] = poprt__float_to_bf16(f[i]);
    } else {
        for (int64_t i = 0; i < t->numel; i++)
            poprt__store_f64(t->data, t->dtype, i, f[i]);
    }
}

/* ======================================================================
 * GEMM
 * ==================================================================== */

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

/* y[i] += a * x[i] and y[i] = x[i] * a + b, four lanes at a time: GCC's
 * -O2 cost model leaves loops that need a scalar tail unvectorised. */
static void axpy_f32(int64_t n, float a, const float *restrict x, float *restrict y)
{
    int64_t i = 0;
#if defined(__GNUC__)
    const sg_v4 av = {a, a, a, a};
    for (; i + 4 <= n; i += 4) {
        sg_v4 xv, yv;
        memcpy(&xv, x + i, 16);
        memcpy(&yv, y + i, 16);
        yv += av * xv;
        memcpy(y + i, &yv, 16);
    }
#endif
    for (; i < n; i++)
        y[i] += a * x[i];
}

static void affine_f32(int64_t n, const float *restrict x, float a, float b, float *restrict y)
{
    int64_t i = 0;
#if defined(__GNUC__)
    const sg_v4 av = {a, a, a, a}, bv = {b, b, b, b};
    for (; i + 4 <= n; i += 4) {
        sg_v4 xv;
        memcpy(&xv, x + i, 16);
        xv = xv * av + bv;
        memcpy(y + i, &xv, 16);
    }
#endif
    for (; i < n; i++)
        y[i] = x[i] * a + b;
}

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

/* Units of work per parallel chunk so that a chunk is worth a wake-up. */
static int64_t grain_for(int64_t unit_cost, int64_t min_cost)
{
    if (unit_cost <= 0)
        return 1;
    int64_t g = min_cost / unit_cost;
    return g < 1 ? 1 : g;
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
    int64_t grain = grain_for(unit_cost, 1 << 16);
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
static int fast_gemm_fits(int64_t M, int64_t N, int64_t K)
{
    return M > 0 && N >= 4 && K > 0;
}

/* Workspace for fast_gemm calls of this shape, taken once per kernel call
 * (scratch is only released when the kernel returns). NULL: out of memory,
 * or a shape fast_gemm hands to the reference anyway. */
static void *fast_gemm_ws(poprt__kctx *k, int ta, int tb, int64_t M, int64_t N, int64_t K)
{
    if (!fast_gemm_fits(M, N, K))
        return NULL;
    return poprt__kctx_scratch(k, poprt__sgemm_workspace(NULL, ta, tb, M, N, K));
}

/* C = alpha op(A) op(B) + beta C over the session's threads (split over M
 * and N blocks only, so bits do not depend on the thread count). k NULL:
 * one thread. ws from fast_gemm_ws for the same shape. */
static void fast_gemm(poprt__kctx *k, void *ws, int ta, int tb, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc)
{
    if (!ws || !fast_gemm_fits(M, N, K)) {
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

/* The kernels lift 1-D and 2-D windows to 3-D with leading unit axes so one
 * loop nest serves all. */
typedef struct geom3 {
    int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
    int64_t in_sz, out_sz, k_sz;
} geom3;

static int lift3(const poprt__nn_geom *g, geom3 *o)
{
    if (g->nsp > 3)
        return 0;
    int off = 3 - g->nsp;
    for (int i = 0; i < 3; i++) {
        int j = i - off;
        o->in[i] = j < 0 ? 1 : g->in[j];
        o->out[i] = j < 0 ? 1 : g->out[j];
        o->k[i] = j < 0 ? 1 : g->k[j];
        o->s[i] = j < 0 ? 1 : g->s[j];
        o->d[i] = j < 0 ? 1 : g->d[j];
        o->pb[i] = j < 0 ? 0 : g->pb[j];
        o->pe[i] = j < 0 ? 0 : g->pe[j];
    }
    o->in_sz = o->in[0] * o->in[1] * o->in[2];
    o->out_sz = o->out[0] * o->out[1] * o->out[2];
    o->k_sz = o->k[0] * o->k[1] * o->k[2];
    return 1;
}

/* Range [lo, hi) of output positions o along one axis for which the input
 * position o*s - pb + off lies in [0, in). */
static void valid_range(int64_t out, int64_t s, int64_t pb, int64_t off, int64_t in, int64_t *lo,
                        int64_t *hi)
{
    int64_t base = off - pb; /* input pos = o*s + base */
    int64_t l = base >= 0 ? 0 : poprt__ceil_div(-base, s);
    int64_t h = poprt__floor_div(in - 1 - base, s) + 1;
    if (l > out)
        l = out;
    if (h > out)
        h = out;
    if (h < l)
        h = l;
    *lo = l;
    *hi = h;
}

/* ======================================================================
 * Conv
 * ==================================================================== */

/* im2col rows [r0, r1) of one group: row r = (c, kd, kh, kw), column =
 * output position. Pure copies, so the same template serves every type. */
#define DEF_IM2COL(NAME, T)                                                                    \
    static void NAME(const T *x, const geom3 *g, int64_t r0, int64_t r1, T *col)               \
    {                                                                                          \
        const int64_t k12 = g->k[1] * g->k[2];                                                 \
        for (int64_t r = r0; r < r1; r++) {                                                    \
            const int64_t c = r / g->k_sz, rem = r % g->k_sz;                                  \
            const int64_t kd = rem / k12, kh = (rem / g->k[2]) % g->k[1], kw = rem % g->k[2];  \
            const T *xp = x + c * g->in_sz;                                                    \
            T *dst = col + r * g->out_sz;                                                      \
            int64_t d0, d1, h0, h1, w0, w1;                                                    \
            valid_range(g->out[0], g->s[0], g->pb[0], kd * g->d[0], g->in[0], &d0, &d1);       \
            valid_range(g->out[1], g->s[1], g->pb[1], kh * g->d[1], g->in[1], &h0, &h1);       \
            valid_range(g->out[2], g->s[2], g->pb[2], kw * g->d[2], g->in[2], &w0, &w1);       \
            const int64_t woff = kw * g->d[2] - g->pb[2];                                      \
            for (int64_t od = 0; od < g->out[0]; od++) {                                       \
                for (int64_t oh = 0; oh < g->out[1]; oh++) {                                   \
                    T *o = dst + (od * g->out[1] + oh) * g->out[2];                            \
                    if (od < d0 || od >= d1 || oh < h0 || oh >= h1) {                          \
                        memset(o, 0, sizeof(T) * (size_t)g->out[2]);                           \
                        continue;                                                              \
                    }                                                                          \
                    const int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];                 \
                    const int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];                 \
                    const T *row = xp + (id * g->in[1] + ih) * g->in[2];                       \
                    for (int64_t ow = 0; ow < w0; ow++)                                        \
                        o[ow] = 0;                                                             \
                    if (g->s[2] == 1 && w1 > w0) {                                             \
                        memcpy(o + w0, row + w0 + woff, sizeof(T) * (size_t)(w1 - w0));        \
                    } else {                                                                   \
                        const int64_t s2 = g->s[2];                                            \
                        for (int64_t ow = w0; ow < w1; ow++)                                   \
                            o[ow] = row[ow * s2 + woff];                                       \
                    }                                                                          \
                    for (int64_t ow = w1; ow < g->out[2]; ow++)                                \
                        o[ow] = 0;                                                             \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
DEF_IM2COL(im2col_f32, float)
DEF_IM2COL(im2col_f64, double)

/* col2im for channels [m0, m1) of one group (ConvTranspose): y[m] gets the
 * sum over taps of the column rows, scattered to o = i*s - pb + t*d. */
#define DEF_COL2IM(NAME, T)                                                                    \
    static void NAME(const T *col, const geom3 *g, int64_t m0, int64_t m1, T *y)               \
    {                                                                                          \
        const int64_t k12 = g->k[1] * g->k[2];                                                 \
        for (int64_t m = m0; m < m1; m++) {                                                    \
            T *yp = y + m * g->out_sz;                                                         \
            for (int64_t t = 0; t < g->k_sz; t++) {                                            \
                const int64_t kd = t / k12, kh = (t / g->k[2]) % g->k[1], kw = t % g->k[2];    \
                const T *row = col + (m * g->k_sz + t) * g->in_sz;                             \
                int64_t d0, d1, h0, h1, w0, w1;                                                \
                valid_range(g->in[0], g->s[0], g->pb[0], kd * g->d[0], g->out[0], &d0, &d1);   \
                valid_range(g->in[1], g->s[1], g->pb[1], kh * g->d[1], g->out[1], &h0, &h1);   \
                valid_range(g->in[2], g->s[2], g->pb[2], kw * g->d[2], g->out[2], &w0, &w1);   \
                for (int64_t id = d0; id < d1; id++) {                                         \
                    const int64_t od = id * g->s[0] - g->pb[0] + kd * g->d[0];                 \
                    for (int64_t ih = h0; ih < h1; ih++) {                                     \
                        const int64_t oh = ih * g->s[1] - g->pb[1] + kh * g->d[1];             \
                        const T *r = row + (id * g->in[1] + ih) * g->in[2];                    \
                        T *o = yp + (od * g->out[1] + oh) * g->out[2];                         \
                        const int64_t s2 = g->s[2], off = kw * g->d[2] - g->pb[2];             \
                        for (int64_t iw = w0; iw < w1; iw++)                                   \
                            o[iw * s2 + off] += r[iw];                                         \
                    }                                                                          \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
DEF_COL2IM(col2im_f32, float)
DEF_COL2IM(col2im_f64, double)

/* FusedConv epilogue: Y = act(conv + B + Z) (see docs/ops.md). */
enum {
    CONV_ACT_NONE = 0,
    CONV_ACT_RELU,
    CONV_ACT_CLIP,    /* a = min, b = max */
    CONV_ACT_LEAKY,   /* a = alpha */
    CONV_ACT_SIGMOID,
    CONV_ACT_HSIGMOID, /* a = alpha, b = beta */
    CONV_ACT_HSWISH
};

typedef struct conv_plan {
    geom3 g;
    int64_t N, C, M, G, Cg, Mg, Kc;
    int act;        /* CONV_ACT_*; Conv: none */
    float act_a, act_b;
    const float *z; /* residual added before act (Y's shape), or NULL */
    int xblk, yblk; /* X, and Y with Z, in NCHW16c (FusedConv x_layout / y_layout) */
    poprt__vmath_binary_fn add_fn;
    poprt__vmath_unary_fn act_fn; /* NULL: no activation */
    poprt__vmath_param act_p;
    int fp8;        /* FusedConv y_fp8: 0, 1 float8e4m3fn, 2 float8e5m2 */
    float fp8_scale;
    int fp8_zp;
    int n_post;     /* FusedConv post_*: scalar steps after the activation */
    poprt__ew_scalar_step post[POPRT__EW_MAX_STEPS];
    const poprt__vmath_variant *vm;
} conv_plan;

/* Whether the AVX-512 kernels (kernels/x86/conv_blocked.h, pool.h) may run:
 * the CPU has AVX-512 and POPRT_ISA does not cap it. */
static int avx512_usable(void)
{
#if defined(__x86_64__)
    return poprt__cpu_features()->isa >= POPRT__ISA_AVX512;
#else
    return 0;
#endif
}

static int conv_has_epilogue(const conv_plan *p)
{
    return p->act != CONV_ACT_NONE || p->z || p->fp8 || p->n_post;
}

/* The epilogue is a Relu alone: the AVX-512 paths apply it (max(0, v), as
 * the Relu kernel computes it) while storing their results. */
static int conv_lone_relu(const conv_plan *p)
{
    return p->act == CONV_ACT_RELU && !p->z && !p->fp8 && !p->n_post;
}

/* y[off + i] = act(y[off + i] + z[off + i]) for i < n, then the post steps,
 * then rounded to float8 and back (y_fp8): run on each output block right
 * after it is written, while it is in cache. The vectorised functions of
 * the Add and activation kernels and FusedElementwise's steps, so results
 * match the unfused graph's. */
static void conv_epilogue(const conv_plan *p, float *y, int64_t off, int64_t n)
{
    if (p->z)
        p->add_fn(y + off, 1, p->z + off, 1, y + off, n);
    if (p->act_fn)
        p->act_fn(y + off, y + off, n, &p->act_p);
    if (p->n_post)
        poprt__ew_scalar_run(p->vm, p->post, p->n_post, y + off, n);
    if (p->fp8)
        poprt__fp8_round(y + off, y + off, n, p->fp8_scale, p->fp8 == 2, p->fp8_zp);
}

/* d[i] = s[i] + v (d may be s): the bias pass of the conv paths, compiled
 * per vector width like maxpool2d_plane (exact, so every clone agrees). */
POPRT__CLONES
static void row_plus(float *d, const float *s, float v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        d[i] = s[i] + v;
}

typedef struct conv_epi_task {
    const conv_plan *p;
    float *y;
    int64_t off;    /* of the block's first row */
    const float *b; /* the rows' bias, or NULL */
} conv_epi_task;

/* The same on block [m0, m1) x [n0, n1) of the output rows, as the GEMM's
 * epilogue (poprt__sgemm_epi). */
static void conv_epi_block(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1)
{
    const conv_epi_task *t = ctx;
    const int64_t n = t->p->g.out_sz;
    for (int64_t m = m0; m < m1; m++) {
        float *row = t->y + t->off + m * n + n0;
        if (t->b)
            row_plus(row, row, t->b[m], n1 - n0);
        if (conv_has_epilogue(t->p))
            conv_epilogue(t->p, t->y, row - t->y, n1 - n0);
    }
}

static void conv_epi_task_fn(void *ctx, int64_t m0, int64_t m1)
{
    conv_epi_block(ctx, m0, m1, 0, ((const conv_epi_task *)ctx)->p->g.out_sz);
}

/* Checks X/W/B and computes the geometry. transposed: ConvTranspose
 * (W is [C, M/group, k...]). */
static poprt_status conv_setup(poprt__kctx *k, int transposed, conv_plan *p)
{
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    const poprt__tval *y = poprt__kout(k, 0);
    p->act = CONV_ACT_NONE;
    p->act_a = p->act_b = 0.0f;
    p->z = NULL;
    p->xblk = p->yblk = 0;
    p->add_fn = NULL;
    p->act_fn = NULL;
    p->fp8 = p->fp8_zp = 0;
    p->fp8_scale = 1.0f;
    p->n_post = 0;
    p->vm = NULL;
    if (!x || !w || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X, W or Y");
    if (x->rank < 3 || w->rank != x->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X rank %d and W rank %d do not fit", x->rank, w->rank);
    const int nsp = x->rank - 2;
    poprt__nn_geom gg;
    poprt_status st =
        transposed ? poprt__nn_convtranspose_geom(k->node, nsp, x->dims + 2, w->dims + 2, &gg)
                   : poprt__nn_window_geom(k->node, nsp, x->dims + 2, w->dims + 2, 0, &gg);
    if (st)
        return st;
    for (int i = 0; i < nsp; i++)
        if (gg.k[i] != w->dims[2 + i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "kernel_shape does not match W on axis %d", i);
    if (!lift3(&gg, &p->g))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "more than 3 spatial axes are not supported");
    p->N = x->dims[0];
    p->C = x->dims[1];
    p->G = poprt__attr_i(k->node, "group", 1);
    if (p->G < 1 || p->C % p->G)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "%lld channels do not split into %lld groups", (long long)p->C,
                               (long long)p->G);
    p->Cg = p->C / p->G;
    if (!transposed) {
        p->M = w->dims[0];
        p->Mg = p->M / p->G;
        if (w->dims[1] != p->Cg || p->M % p->G)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "W has %lld input channels, X gives %lld per group",
                                   (long long)w->dims[1], (long long)p->Cg);
    } else {
        if (w->dims[0] != p->C)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "W has %lld input channels, X has %lld", (long long)w->dims[0],
                                   (long long)p->C);
        p->Mg = w->dims[1];
        p->M = p->Mg * p->G;
    }
    p->Kc = p->Cg * p->g.k_sz;
    if (b && b->numel != p->M)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "B has %lld values for %lld output channels", (long long)b->numel,
                               (long long)p->M);
    if (y->rank != x->rank || y->dims[0] != p->N || y->dims[1] != p->M)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output shape mismatch");
    for (int i = 0; i < nsp; i++)
        if (y->dims[2 + i] != gg.out[i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape mismatch on axis %d", 2 + i);
    return POPRT_OK;
}

typedef struct im2col_task {
    const float *x;
    const geom3 *g;
    float *col;
} im2col_task;

static void im2col_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const im2col_task *t = ctx;
    im2col_f32(t->x, t->g, r0, r1, t->col);
}

typedef struct dw_task {
    const conv_plan *p;
    const float *x, *w, *b;
    float *y;
} dw_task;

/* Direct convolution for one input channel per group (depthwise): output
 * planes [q0, q1) of the N*M planes; taps accumulate in a fixed order. */
static void dwconv_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const dw_task *t = ctx;
    const conv_plan *p = t->p;
    const geom3 *g = &p->g;
    const int64_t k12 = g->k[1] * g->k[2];
    for (int64_t q = q0; q < q1; q++) {
        const int64_t n = q / p->M, m = q % p->M, c = m / p->Mg;
        const float *xp = t->x + (n * p->C + c) * g->in_sz;
        const float *wp = t->w + m * g->k_sz;
        float *yp = t->y + q * g->out_sz;
        const float bias = t->b ? t->b[m] : 0.0f;
        for (int64_t i = 0; i < g->out_sz; i++)
            yp[i] = bias;
        for (int64_t tap = 0; tap < g->k_sz; tap++) {
            const int64_t kd = tap / k12, kh = (tap / g->k[2]) % g->k[1], kw = tap % g->k[2];
            const float wv = wp[tap];
            int64_t d0, d1, h0, h1, w0, w1;
            valid_range(g->out[0], g->s[0], g->pb[0], kd * g->d[0], g->in[0], &d0, &d1);
            valid_range(g->out[1], g->s[1], g->pb[1], kh * g->d[1], g->in[1], &h0, &h1);
            valid_range(g->out[2], g->s[2], g->pb[2], kw * g->d[2], g->in[2], &w0, &w1);
            const int64_t s2 = g->s[2];
            for (int64_t od = d0; od < d1; od++) {
                const int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
                for (int64_t oh = h0; oh < h1; oh++) {
                    const int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
                    float *restrict o = yp + (od * g->out[1] + oh) * g->out[2];
                    const float *restrict r = xp + (id * g->in[1] + ih) * g->in[2];
                    const int64_t off = kw * g->d[2] - g->pb[2];
                    if (s2 == 1) {
                        axpy_f32(w1 - w0, wv, r + w0 + off, o + w0);
                    } else {
                        for (int64_t ow = w0; ow < w1; ow++)
                            o[ow] += wv * r[ow * s2 + off];
                    }
                }
            }
        }
        if (conv_has_epilogue(p))
            conv_epilogue(p, t->y, q * g->out_sz, g->out_sz);
    }
}

#define CONV_PACK_MAGIC 0x31434b5043525050ull /* "PPRCPKC1" */
#define CONV_PACK_HEADER 64u

/* ---- tiled implicit GEMM ----------------------------------------------------
 * The output positions of each (image, group) are cut into column chunks.
 * A work item im2cols one chunk (Kc x cw, sized to stay in L2), multiplies
 * it by the pre-packed weights on one thread and adds the bias while the
 * output block is still in cache. Items go round-robin to a fixed number of lanes, each with its
 * own scratch, and the pool balances lanes over threads. The chunking
 * depends on the shape only, so results do not depend on the thread count. */

#define CONV_TILE_BYTES (768 * 1024) /* im2col block of one chunk */
#define CONV_TILE_MAX_COLS 512       /* B stays unpacked up to the GEMM's NC */
#define CONV_LANES 8
#define CONV_MIN_ITEMS 4 /* fewer: one multi-threaded GEMM splits better */

typedef struct conv_tile_job {
    const conv_plan *p;
    const float *x, *b;
    const unsigned char *apack;
    uint64_t per_group;
    float *y;
    int64_t cw, nchunks, items, lanes;
    unsigned char *scratch;
    size_t lane_bytes, col_bytes;
} conv_tile_job;

/* im2col of output columns [c0, c1) of one group: rows (c, kd, kh, kw) of
 * c1 - c0 values each, walking the chunk one output row segment at a time. */
static void im2col_cols_f32(const float *x, const geom3 *g, int64_t rows, int64_t c0, int64_t c1,
                            float *col)
{
    const int64_t k12 = g->k[1] * g->k[2], ow_n = g->out[2], cw = c1 - c0, s2 = g->s[2];
    for (int64_t r = 0; r < rows; r++) {
        const int64_t c = r / g->k_sz, rem = r % g->k_sz;
        const int64_t kd = rem / k12, kh = (rem / g->k[2]) % g->k[1], kw = rem % g->k[2];
        const float *xp = x + c * g->in_sz;
        float *dst = col + r * cw;
        int64_t d0, d1, h0, h1, w0, w1;
        valid_range(g->out[0], g->s[0], g->pb[0], kd * g->d[0], g->in[0], &d0, &d1);
        valid_range(g->out[1], g->s[1], g->pb[1], kh * g->d[1], g->in[1], &h0, &h1);
        valid_range(g->out[2], g->s[2], g->pb[2], kw * g->d[2], g->in[2], &w0, &w1);
        const int64_t woff = kw * g->d[2] - g->pb[2];
        int64_t pos = c0, ow = c0 % ow_n, orow = c0 / ow_n;
        while (pos < c1) {
            const int64_t n = ow_n - ow < c1 - pos ? ow_n - ow : c1 - pos;
            float *o = dst + (pos - c0) - ow; /* o[ow'] for ow' in [ow, ow + n) */
            const int64_t oh = orow % g->out[1], od = orow / g->out[1];
            if (od < d0 || od >= d1 || oh < h0 || oh >= h1) {
                memset(o + ow, 0, sizeof(float) * (size_t)n);
            } else {
                const int64_t id = od * g->s[0] - g->pb[0] + kd * g->d[0];
                const int64_t ih = oh * g->s[1] - g->pb[1] + kh * g->d[1];
                const float *src = xp + (id * g->in[1] + ih) * g->in[2] + woff;
                const int64_t end = ow + n;
                const int64_t a = w0 < ow ? ow : w0 > end ? end : w0;
                const int64_t e = w1 < a ? a : w1 > end ? end : w1;
                for (int64_t j = ow; j < a; j++)
                    o[j] = 0;
                if (s2 == 1) {
                    if (e > a)
                        memcpy(o + a, src + a, sizeof(float) * (size_t)(e - a));
                } else {
                    for (int64_t j = a; j < e; j++)
                        o[j] = src[j * s2];
                }
                for (int64_t j = e; j < end; j++)
                    o[j] = 0;
            }
            pos += n;
            ow = 0;
            orow++;
        }
    }
}

static void conv_tile_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const conv_tile_job *t = ctx;
    const conv_plan *p = t->p;
    const geom3 *g = &p->g;
    for (int64_t l = l0; l < l1; l++) {
        unsigned char *mem = t->scratch + (size_t)l * t->lane_bytes;
        float *col = (float *)mem;
        void *ws = mem + t->col_bytes;
        for (int64_t it = l; it < t->items; it += t->lanes) {
            const int64_t ch = it % t->nchunks, ng = it / t->nchunks;
            const int64_t n = ng / p->G, gi = ng % p->G;
            const int64_t c0 = ch * t->cw;
            const int64_t cols = g->out_sz - c0 < t->cw ? g->out_sz - c0 : t->cw;
            const float *xg = t->x + (n * p->C + gi * p->Cg) * g->in_sz;
            float *yg = t->y + (n * p->M + gi * p->Mg) * g->out_sz + c0;
            im2col_cols_f32(xg, g, p->Kc, c0, c0 + cols, col);
            /* variant and shape were checked by conv_tiled: cannot fail */
            (void)poprt__sgemm_packed(NULL, ws, 0, 0, p->Mg, cols, p->Kc, 1.0f, NULL, 0,
                                      t->apack + (uint64_t)gi * t->per_group, col, cols, NULL,
                                      0.0f, yg, g->out_sz);
            if (t->b) {
                const float *bg = t->b + gi * p->Mg;
                for (int64_t m = 0; m < p->Mg; m++) {
                    float *row = yg + m * g->out_sz;
                    row_plus(row, row, bg[m], cols);
                }
            }
            if (conv_has_epilogue(p))
                for (int64_t m = 0; m < p->Mg; m++)
                    conv_epilogue(p, t->y, yg + m * g->out_sz - t->y, cols);
        }
    }
}

/* Runs the conv tiled when the weights are pre-packed for this CPU and the
 * shape gives enough work items; *done 0: the caller takes the plain path. */
static poprt_status conv_tiled(poprt__kctx *k, const conv_plan *p, int pointwise, const float *x,
                               const float *b, const unsigned char *apack, uint64_t per_group,
                               float *y, int *done)
{
    const geom3 *g = &p->g;
    *done = 0;
    const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(apack);
    /* 1x1 stride-1: no im2col to save; one multi-threaded GEMM over the
     * whole image shares the packed weights better, unless the input rows
     * are a multiple of 4 KiB apart (the GEMM reads them in place, all in
     * the same cache sets) and few (the copy is cheap): then chunks are
     * copied like im2col blocks (measured: C16 -> M32 at 320x320 1.3x) */
    if ((pointwise && ((g->out_sz * (int64_t)sizeof(float)) % 4096 != 0 || p->Kc > p->Mg)) ||
        !v || !poprt__sgemm_usable(v))
        return POPRT_OK;
    const int64_t nr = v->nr, ng = p->N * p->G;
    int64_t cw = CONV_TILE_BYTES / ((int64_t)sizeof(float) * p->Kc) / nr * nr;
    if (cw > CONV_TILE_MAX_COLS / nr * nr)
        cw = CONV_TILE_MAX_COLS / nr * nr;
    if (cw < 2 * nr)
        cw = 2 * nr;
    /* enough items for a few threads: narrower chunks, down to two panels */
    if (ng * poprt__ceil_div(g->out_sz, cw) < 2 * CONV_LANES) {
        const int64_t per = poprt__ceil_div(2 * CONV_LANES, ng);
        int64_t want = poprt__ceil_div(poprt__ceil_div(g->out_sz, per), nr) * nr;
        if (want < 2 * nr)
            want = 2 * nr;
        if (want < cw)
            cw = want;
    }
    if (cw > g->out_sz)
        cw = g->out_sz;
    const int64_t nchunks = poprt__ceil_div(g->out_sz, cw), items = ng * nchunks;
    if (items < CONV_MIN_ITEMS)
        return POPRT_OK;
    conv_tile_job t = {p, x, b, apack, per_group, y, cw, nchunks, items, 0, NULL, 0, 0};
    t.lanes = items < CONV_LANES ? items : CONV_LANES;
    t.col_bytes = ((size_t)(p->Kc * cw) * sizeof(float) + 63) & ~(size_t)63;
    size_t ws = poprt__sgemm_packed_workspace(apack, NULL, 0, 0, p->Mg, cw, p->Kc);
    t.lane_bytes = (t.col_bytes + ws + 63) & ~(size_t)63;
    size_t all;
    if (!poprt__mul_size(t.lane_bytes, (size_t)t.lanes, &all) ||
        !(t.scratch = poprt__kctx_scratch(k, all)))
        return oom(k);
    poprt__kctx_parallel_for(k, t.lanes, 1, conv_tile_lane_fn, &t);
    *done = 1;
    return POPRT_OK;
}

/* ---- direct conv on the GEMM micro-kernel ----------------------------------
 * For stride-1 2-D convs no im2col is needed: on a zero-padded copy of the
 * input with row pitch Wp, output position q = oh*Wp + ow reads tap (kh, kw)
 * of channel c at xpad[c][q + kh*dh*Wp + kw*dw], so each tap's B operand is
 * the padded input itself, shifted, with one row stride (the plane size).
 * The micro-kernel then runs once per tap over the channels, accumulating
 * in a register tile; the (kw-1)*dw extra columns per row are computed and
 * dropped when the block is copied out with the bias. Stride 2 becomes
 * stride 1 by splitting each padded plane into its 4 phases
 * (rows/columns even/odd): tap (kh, kw) reads phase (kh%2, kw%2) shifted by
 * (kh/2, kw/2). Weights are packed per MR-row panel and tap:
 * apanel(i, t)[c*MR + r] = W[i*MR + r][c][t]; for a variant with a tap
 * micro-kernel, channel-major instead: apanel(i)[(c*taps + t)*MR + r], so
 * that the kernel walks the taps of one channel (a few neighbouring rows of
 * one plane, in L1) before the next channel. */

#define CONV_DIRECT_MAGIC 0x31524443525050ull /* "PPRCDR1" */
#define CONV_DIRECT_B_BYTES (512 * 1024)     /* B block of one chunk */
#define CONV_DIRECT_MAX_TAPS 64 /* more: one micro-kernel call per tap */

/* Whether the direct path pays off: at most 2-D, stride 1 or 2 (undilated),
 * not 1x1 (a plain GEMM; with stride 2 only a quarter of the phases would be
 * read), enough channels for the micro-kernel's K loop (per tap when v runs
 * one call per tap; over all taps when it has a tap micro-kernel, which
 * keeps the sum in registers: then a 3-channel stem conv needs no im2col),
 * little width wasted on the grid. */
/* Whether v's tap micro-kernel runs this conv (and so the weights are
 * packed channel-major for it). */
static int conv_direct_taps(const poprt__sgemm_variant *v, int64_t k_sz)
{
    return v->ukr_taps && k_sz <= CONV_DIRECT_MAX_TAPS;
}

static int conv_direct_fits(const geom3 *g, int64_t Cg, const poprt__sgemm_variant *v)
{
    const int taps = conv_direct_taps(v, g->k_sz);
    if (g->in[0] != 1 || g->k[0] != 1 || g->out[0] != 1 || g->s[1] != g->s[2] ||
        (taps ? Cg * g->k_sz < 16 : Cg < 8) || g->out_sz < 32 || g->k_sz < 2)
        return 0;
    if (g->s[1] == 1)
        return g->out[2] >= 3 * g->d[2] * (g->k[2] - 1);
    return g->s[1] == 2 && g->d[1] == 1 && g->d[2] == 1 && g->out[2] >= 3 * ((g->k[2] - 1) / 2);
}

typedef struct conv_direct_job {
    const conv_plan *p;
    const float *x, *b;
    const float *apack; /* group 0 */
    int64_t a_group;    /* floats per group */
    const poprt__sgemm_variant *v;
    float *xpad, *tmp;
    float *y;
    int64_t Hp, Wp, plane, Q, cw, cwp, nchunks, items, lanes, tmp_floats;
    int64_t pblk, nmb; /* MR-row panels per M block, M blocks */
    int64_t ph;        /* 2: planes split into 4 phases of Hp x Wp (stride 2) */
    int64_t toff[CONV_DIRECT_MAX_TAPS]; /* B offset of each tap, for v->ukr_taps */
} conv_direct_job;

/* Input offset of tap (kh, kw) from an output position on the grid. */
static int64_t conv_tap_off(const conv_direct_job *t, int64_t kh, int64_t kw)
{
    const geom3 *g = &t->p->g;
    if (t->ph != 2)
        return kh * g->d[1] * t->Wp + kw * g->d[2];
    return ((kh % 2) * 2 + kw % 2) * t->Hp * t->Wp + (kh / 2) * t->Wp + kw / 2;
}

/* Stride 2: phase (a, b) of plane q holds padded rows 2i+a, columns 2j+b. */
static void conv_phase_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const conv_direct_job *t = ctx;
    const geom3 *g = &t->p->g;
    const int64_t H = g->in[1], W = g->in[2], pt = g->pb[1], pl = g->pb[2];
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        for (int64_t a = 0; a < 2; a++)
            for (int64_t b = 0; b < 2; b++) {
                float *dst = t->xpad + q * t->plane + (a * 2 + b) * t->Hp * t->Wp;
                /* columns j with 0 <= 2j + b - pl < W */
                int64_t j0 = (pl - b + 1) / 2, j1 = (W - 1 + pl - b) / 2 + 1;
                j0 = j0 < 0 ? 0 : j0 > t->Wp ? t->Wp : j0;
                j1 = j1 < j0 ? j0 : j1 > t->Wp ? t->Wp : j1;
                for (int64_t i = 0; i < t->Hp; i++) {
                    float *restrict row = dst + i * t->Wp;
                    const int64_t ih = 2 * i + a - pt;
                    if (ih < 0 || ih >= H) {
                        memset(row, 0, sizeof(float) * (size_t)t->Wp);
                        continue;
                    }
                    const float *restrict src = xp + ih * W + b - pl;
                    for (int64_t j = 0; j < j0; j++)
                        row[j] = 0.0f;
                    for (int64_t j = j0; j < j1; j++)
                        row[j] = src[2 * j];
                    for (int64_t j = j1; j < t->Wp; j++)
                        row[j] = 0.0f;
                }
            }
    }
}

static void conv_pad_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const conv_direct_job *t = ctx;
    const geom3 *g = &t->p->g;
    const int64_t H = g->in[1], W = g->in[2], pt = g->pb[1], pl = g->pb[2];
    const int64_t j0 = pl < 0 ? 0 : pl > t->Wp ? t->Wp : pl;
    const int64_t j1 = pl + W < j0 ? j0 : pl + W > t->Wp ? t->Wp : pl + W;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        float *dst = t->xpad + q * t->plane;
        for (int64_t i = 0; i < t->Hp; i++) {
            float *row = dst + i * t->Wp;
            const int64_t ih = i - pt;
            if (ih < 0 || ih >= H) {
                memset(row, 0, sizeof(float) * (size_t)t->Wp);
                continue;
            }
            memset(row, 0, sizeof(float) * (size_t)j0);
            memcpy(row + j0, xp + ih * W + (j0 - pl), sizeof(float) * (size_t)(j1 - j0));
            memset(row + j1, 0, sizeof(float) * (size_t)(t->Wp - j1));
        }
    }
}

static void conv_direct_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const conv_direct_job *t = ctx;
    const conv_plan *p = t->p;
    const geom3 *g = &p->g;
    const poprt__sgemm_variant *v = t->v;
    const int MR = v->mr, NR = v->nr;
    const int64_t OW = g->out[2], panels = (p->Mg + MR - 1) / MR;
    for (int64_t l = l0; l < l1; l++) {
        float *tmp = t->tmp + l * t->tmp_floats;
        for (int64_t it = l; it < t->items; it += t->lanes) {
            const int64_t mbi = it % t->nmb, rest = it / t->nmb;
            const int64_t ch = rest % t->nchunks, ng = rest / t->nchunks;
            const int64_t n = ng / p->G, gi = ng % p->G;
            const int64_t q0 = ch * t->cw, cols = t->Q - q0 < t->cw ? t->Q - q0 : t->cw;
            const float *xb = t->xpad + (n * p->C + gi * p->Cg) * t->plane + q0;
            const float *ag = t->apack + gi * t->a_group;
            const int64_t i0 = mbi * t->pblk, i1 = i0 + t->pblk < panels ? i0 + t->pblk : panels;
            const int64_t m1 = i1 * MR < p->Mg ? i1 * MR : p->Mg;
            for (int64_t i = i0; i < i1; i++) {
                const int mr = (int)(p->Mg - i * MR < MR ? p->Mg - i * MR : MR);
                const float *ai = ag + i * g->k_sz * p->Cg * MR;
                for (int64_t j = 0; j < cols; j += NR) {
                    float *cp = tmp + i * MR * t->cwp + j;
                    if (conv_direct_taps(v, g->k_sz)) {
                        /* all taps summed in registers, C written once; a
                         * last partial panel runs full height too (its A rows
                         * are zero-padded and tmp has room for them), so it
                         * keeps the sum in registers as well */
                        v->ukr_taps(p->Cg, g->k_sz, t->toff, MR, NR, ai, xb + j, t->plane, cp,
                                    t->cwp, 1.0f, 0.0f);
                        continue;
                    }
                    int64_t tap = 0;
                    for (int64_t kh = 0; kh < g->k[1]; kh++)
                        for (int64_t kw = 0; kw < g->k[2]; kw++, tap++)
                            v->ukr(p->Cg, mr, NR, ai + tap * p->Cg * MR,
                                   xb + j + conv_tap_off(t, kh, kw), t->plane, cp, t->cwp, 1.0f,
                                   tap ? 1.0f : 0.0f);
                }
            }
            /* copy the valid columns out, with the bias */
            float *yg = t->y + (n * p->M + gi * p->Mg) * g->out_sz;
            for (int64_t m = i0 * MR; m < m1; m++) {
                const float *src = tmp + m * t->cwp;
                float *restrict dst = yg + m * g->out_sz;
                const float bv = t->b ? t->b[gi * p->Mg + m] : 0.0f;
                int64_t q = q0, oh = q0 / t->Wp, ow = q0 % t->Wp, y0 = -1, y1 = 0;
                while (q < q0 + cols) {
                    const int64_t n_ = t->Wp - ow < q0 + cols - q ? t->Wp - ow : q0 + cols - q;
                    const int64_t e = ow + n_ < OW ? ow + n_ : OW;
                    if (e > ow)
                        row_plus(dst + oh * OW + ow, src + (q - q0), bv, e - ow);
                    if (e > ow) {
                        y0 = y0 < 0 ? oh * OW + ow : y0;
                        y1 = oh * OW + e;
                    }
                    q += n_;
                    ow = 0;
                    oh++;
                }
                /* the chunk's valid positions are one run of Y's row */
                if (y0 >= 0 && conv_has_epilogue(p))
                    conv_epilogue(p, t->y, dst + y0 - t->y, y1 - y0);
            }
        }
    }
}

static poprt_status conv_direct(poprt__kctx *k, const conv_plan *p, const float *x,
                                const float *b, const float *apack, int64_t a_group,
                                const poprt__sgemm_variant *v, float *y)
{
    const geom3 *g = &p->g;
    conv_direct_job t;
    memset(&t, 0, sizeof t);
    t.p = p;
    t.x = x;
    t.b = b;
    t.apack = apack;
    t.a_group = a_group;
    t.v = v;
    t.y = y;
    t.ph = g->s[1] == 2 ? 2 : 1;
    if (t.ph == 2) {
        t.Hp = g->out[1] + (g->k[1] - 1) / 2;
        t.Wp = g->out[2] + (g->k[2] - 1) / 2;
        t.plane = 4 * t.Hp * t.Wp;
    } else {
        t.Hp = g->out[1] + g->d[1] * (g->k[1] - 1);
        t.Wp = g->out[2] + g->d[2] * (g->k[2] - 1);
        t.plane = t.Hp * t.Wp;
    }
    t.Q = (g->out[1] - 1) * t.Wp + g->out[2];
    for (int64_t kh = 0, tap = 0; kh < g->k[1]; kh++)
        for (int64_t kw = 0; kw < g->k[2]; kw++, tap++)
            if (tap < CONV_DIRECT_MAX_TAPS)
                t.toff[tap] = conv_tap_off(&t, kh, kw);
    /* columns a chunk reads past its own in each phase */
    const int64_t halo = t.ph == 2 ? (g->k[1] - 1) / 2 * t.Wp + (g->k[2] - 1) / 2
                                   : conv_tap_off(&t, g->k[1] - 1, g->k[2] - 1);
    const int64_t NR = v->nr, ng = p->N * p->G;
    int64_t cw = CONV_DIRECT_B_BYTES / ((int64_t)sizeof(float) * p->Cg * t.ph * t.ph) - halo;
    cw = cw / NR * NR;
    if (cw > 1024)
        cw = 1024;
    if (cw < 2 * NR)
        cw = 2 * NR;
    /* small images: narrower chunks (and below, M blocks) so that several
     * threads get work; one thread keeps whole chunks (the split never
     * changes how an output is computed, only which item computes it) */
    const int64_t want_items = poprt__kctx_threads(k) > 1 ? 2 * CONV_LANES : 1;
    if (ng * poprt__ceil_div(t.Q, cw) < want_items) {
        int64_t want = poprt__ceil_div(poprt__ceil_div(t.Q, poprt__ceil_div(want_items, ng)), NR) * NR;
        if (want < 2 * NR)
            want = 2 * NR;
        if (want < cw)
            cw = want;
    }
    t.cw = cw;
    t.cwp = poprt__ceil_div(cw, NR) * NR;
    t.nchunks = poprt__ceil_div(t.Q, cw);
    /* small images: split the output channels too */
    const int64_t panels = poprt__ceil_div(p->Mg, v->mr);
    t.nmb = poprt__ceil_div(want_items, ng * t.nchunks);
    if (t.nmb > panels)
        t.nmb = panels;
    t.pblk = poprt__ceil_div(panels, t.nmb);
    t.nmb = poprt__ceil_div(panels, t.pblk);
    t.items = ng * t.nchunks * t.nmb;
    t.lanes = t.items < CONV_LANES ? t.items : CONV_LANES;
    t.tmp_floats = (poprt__ceil_div(p->Mg, v->mr) * v->mr * t.cwp + 15) & ~(int64_t)15;
    /* the micro-kernel reads NR columns past the last grid position */
    size_t pad_n, tmp_n;
    if (!poprt__mul_size((size_t)(p->N * p->C), (size_t)t.plane, &pad_n) ||
        !poprt__mul_size((size_t)t.lanes, (size_t)t.tmp_floats, &tmp_n) ||
        !(t.xpad = poprt__kctx_scratch(k, (pad_n + (size_t)(2 * NR)) * sizeof(float))) ||
        !(t.tmp = poprt__kctx_scratch(k, tmp_n * sizeof(float))))
        return oom(k);
    memset(t.xpad + pad_n, 0, sizeof(float) * (size_t)(2 * NR));
    poprt__kctx_parallel_for(k, p->N * p->C, grain_for(t.plane, 1 << 14),
                             t.ph == 2 ? conv_phase_task_fn : conv_pad_task_fn, &t);
    poprt__kctx_parallel_for(k, t.lanes, 1, conv_direct_lane_fn, &t);
    return POPRT_OK;
}

/* ---- depthwise planes on a padded copy ---------------------------------------
 * Each input plane is copied once with its zero border (conv_pad_task_fn),
 * then every output plane runs the ISA's plane function (conv_dw.h): all
 * taps of a block of columns accumulate in registers, no bounds checks. */

#define DW_PLANE_NAME dwconv_plane_scalar
#define DW_PLANE_LINKAGE static
#include "kernels/x86/conv_dw_body.inc"
#undef DW_PLANE_NAME
#undef DW_PLANE_LINKAGE

static poprt__dwconv_plane_fn dwconv_plane_best(void)
{
#if defined(__x86_64__)
    const poprt__isa isa = poprt__cpu_features()->isa;
    if (isa >= POPRT__ISA_AVX512)
        return poprt__dwconv_plane_avx512;
    if (isa >= POPRT__ISA_AVX2)
        return poprt__dwconv_plane_avx2;
#endif
    return dwconv_plane_scalar;
}

typedef struct dw_plane_job {
    const conv_direct_job *pad; /* the padded input */
    const float *w, *b;
    float *y;
    poprt__dwconv_plane_fn fn;
} dw_plane_job;

static void dw_plane_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const dw_plane_job *t = ctx;
    const conv_plan *p = t->pad->p;
    const geom3 *g = &p->g;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t n = q / p->M, m = q % p->M, c = m / p->Mg;
        t->fn(t->pad->xpad + (n * p->C + c) * t->pad->plane, t->pad->Wp, t->w + m * g->k_sz,
              g->k[1], g->k[2], g->s[1], g->s[2], g->d[1], g->d[2], t->b ? t->b[m] : 0.0f, g->out[1],
              g->out[2], t->y + q * g->out_sz);
        if (conv_has_epilogue(p))
            conv_epilogue(p, t->y, q * g->out_sz, g->out_sz);
    }
}

/* Depthwise 1-D / 2-D convs; 0 in *done for 3-D (the generic loop). */
static poprt_status dwconv_padded(poprt__kctx *k, const conv_plan *p, const float *x,
                                  const float *w, const float *b, float *y, int *done)
{
    const geom3 *g = &p->g;
    *done = 0;
    if (g->in[0] != 1 || g->k[0] != 1 || g->out[0] != 1)
        return POPRT_OK;
    conv_direct_job pad;
    memset(&pad, 0, sizeof pad);
    pad.p = p;
    pad.x = x;
    pad.Hp = (g->out[1] - 1) * g->s[1] + g->d[1] * (g->k[1] - 1) + 1;
    pad.Wp = (g->out[2] - 1) * g->s[2] + g->d[2] * (g->k[2] - 1) + 1;
    pad.plane = pad.Hp * pad.Wp;
    const int64_t slack = 16 * g->s[2] + 16; /* whole 16-column blocks (conv_dw.h) */
    size_t n;
    if (!poprt__mul_size((size_t)(p->N * p->C), (size_t)pad.plane, &n) ||
        !(pad.xpad = poprt__kctx_scratch(k, (n + (size_t)slack) * sizeof(float))))
        return oom(k);
    memset(pad.xpad + n, 0, (size_t)slack * sizeof(float));
    poprt__kctx_parallel_for(k, p->N * p->C, grain_for(pad.plane, 1 << 14), conv_pad_task_fn,
                             &pad);
    dw_plane_job t = {&pad, w, b, y, dwconv_plane_best()};
    poprt__kctx_parallel_for(k, p->N * p->M, grain_for(g->out_sz * g->k_sz, 1 << 15),
                             dw_plane_task_fn, &t);
    *done = 1;
    return POPRT_OK;
}

/* ---- small images: the GEMM transposed ---------------------------------------
 * With few output positions (7x7, 13x13, 14x14) and many channels, the
 * weights are the big operand and each weight would be used by only a few
 * NR-column tiles. Computing Y^T = X^T W^T instead makes the positions the
 * rows (MR-row panels of the im2col matrix, or of the input itself for
 * 1x1) and the weights the pre-packed B operand, each value of which then
 * meets every position from cache; Y^T is transposed into Y with the bias
 * and the epilogue (measured: 512x49x4608 139 -> 173, 2048x49x512 150 ->
 * 189, 256x196x2304 151 -> 170 GFLOP/s). */

#define CONV_TRANS_MAGIC 0x31524e5443525050ull /* "PPRCTNR1" */
#define CONV_TRANS_MAX_POSITIONS 256
#define CONV_TRANS_BLOCK 16 /* output channels transposed together */

/* Whether the transposed GEMM pays off (2-D or less, one group, 4 to
 * CONV_TRANS_MAX_POSITIONS outputs: an STFT-like conv with 8 positions fills
 * 8 of 32 columns the other way round, 8 of 14 rows this way; channels
 * enough to fill the tiles: with
 * fewer than 4 column panels of output channels the threads have too little
 * to share; measured on oww_embedding's 72- and 96-channel layers). */
static int conv_trans_fits(int64_t G, int64_t M, int64_t Kc, int64_t out_sz)
{
    return G == 1 && out_sz >= 4 && out_sz <= CONV_TRANS_MAX_POSITIONS && M >= 128 && Kc >= 32;
}

typedef struct conv_trans_job {
    const conv_plan *p;
    const float *ct, *b; /* Y^T of one image (out_sz x M), bias */
    float *y;            /* Y of that image */
    float *yall;         /* Y (for the epilogue's offsets) */
    int avx512;          /* transpose with poprt__transpose_bias_avx512 */
} conv_trans_job;

/* The GEMM's epilogue (poprt__sgemm_epi): positions [q0, q1) x channels
 * [m0, m1) of Y^T, just computed, go to Y with the bias, 16 channels at a
 * time, then get the conv's epilogue, on the thread that computed them. */
static void conv_trans_epi(void *ctx, int64_t q0, int64_t q1, int64_t m0, int64_t m1)
{
    const conv_trans_job *t = ctx;
    const conv_plan *p = t->p;
    const int64_t Q = p->g.out_sz, M = p->M;
    const int relu = t->avx512 && conv_lone_relu(p); /* applied in the transposition */
    for (int64_t mb = m0; mb < m1; mb += CONV_TRANS_BLOCK) {
        const int64_t nm = m1 - mb < CONV_TRANS_BLOCK ? m1 - mb : CONV_TRANS_BLOCK;
        if (t->avx512)
            poprt__transpose_bias_avx512(t->ct + q0 * M + mb, M, q1 - q0, nm,
                                         t->b ? t->b + mb : NULL, relu, t->y + mb * Q + q0, Q);
        else {
            float bias[CONV_TRANS_BLOCK];
            for (int64_t i = 0; i < nm; i++)
                bias[i] = t->b ? t->b[mb + i] : 0.0f;
            for (int64_t q = q0; q < q1; q++) {
                const float *restrict src = t->ct + q * M + mb;
                for (int64_t i = 0; i < nm; i++)
                    t->y[(mb + i) * Q + q] = src[i] + bias[i];
            }
        }
        for (int64_t i = 0; conv_has_epilogue(p) && !relu && i < nm; i++)
            conv_epilogue(p, t->yall, t->y + (mb + i) * Q + q0 - t->yall, q1 - q0);
    }
}

static poprt_status conv_trans(poprt__kctx *k, const conv_plan *p, int pointwise, const float *x,
                               const float *b, const void *bpack, float *y)
{
    const geom3 *g = &p->g;
    const int64_t Q = g->out_sz;
    float *col = NULL, *ct;
    void *ws;
    size_t n;
    if (!pointwise && (!poprt__mul_size((size_t)p->Kc, (size_t)Q * sizeof(float), &n) ||
                       !(col = poprt__kctx_scratch(k, n))))
        return oom(k);
    if (!poprt__mul_size((size_t)p->M, (size_t)Q * sizeof(float), &n) ||
        !(ct = poprt__kctx_scratch(k, n)) ||
        !(ws = poprt__kctx_scratch(
              k, poprt__sgemm_packed_workspace(NULL, bpack, 1, 0, Q, p->M, p->Kc) + 64)))
        return oom(k);
    poprt__par par = poprt__par_kctx(k);
    for (int64_t in = 0; in < p->N; in++) {
        const float *xn = x + in * p->C * g->in_sz;
        const float *a = xn;
        if (!pointwise) {
            im2col_task t = {xn, g, col};
            poprt__kctx_parallel_for(k, p->Kc, grain_for(Q, 1 << 14), im2col_task_fn, &t);
            a = col;
        }
        /* cannot fail: the packed variant was checked by the caller */
        conv_trans_job t = {p, ct, b, y + in * p->M * Q, y, avx512_usable()};
        const poprt__sgemm_epi epi = {conv_trans_epi, &t};
        (void)poprt__sgemm_packed_epi(&par, ws, 1, 0, Q, p->M, p->Kc, 1.0f, a, Q, NULL, NULL, 0,
                                      bpack, 0.0f, ct, p->M, &epi);
    }
    return POPRT_OK;
}

/* ---- blocked direct convolution (kernels/x86/conv_blocked.h) -----------------
 * The input is copied once into 16-channel blocks with its zero border
 * (xb[cbi][hp][wp][cb]); each work item then computes a run of about 48
 * output positions of one group of up to 64 output channels, summing a few
 * input blocks at a time (their weights stay in L1), and transposes the run
 * back into Y's channel rows, where the epilogue runs while the rows are in
 * cache. The weights are packed per
 * group when the session is compiled. Used for 2-D convs with one group and
 * more than one tap, on CPUs with AVX-512; inputs whose channels are not a
 * multiple of 16 (3-channel stems) are blocked one channel per block. */

#define CONV_BLOCKED_MAGIC 0x31424b4243525050ull /* "PPRCBKB1" */
#define CONVB_GROUP 64                          /* output channels per group */
#define CONVB_CHUNK 48                          /* output positions per work item */

typedef struct convb_job {
    const conv_plan *p;
    const float *x, *b, *w; /* w: packed, group og at og * w_group */
    float *y, *xb, *tmp;    /* tmp: per lane, 4 * 16 floats per position of a chunk */
    int64_t w_group, Hp, n_og, chunk, nchunks, cstep, items, lanes, tmp_floats;
    poprt__convb_geom g;
    int xblk, yblk; /* x, y (and the residual) in NCHW16c */
} convb_job;

/* Whether the blocked path can run a conv: 2-D (or 1-D), one group. */
static int convb_fits(const geom3 *g, int64_t G)
{
    return G == 1 && g->in[0] == 1 && g->k[0] == 1 && g->out[0] == 1 && g->out_sz >= 1;
}

/* Channels per input block: 16 when they divide C, else 1 (plain padded
 * planes; also for stems with 3 channels, whose weights per channel then
 * fit in L1 on their own). */
static int64_t convb_cb(int64_t C) { return C % 16 == 0 ? 16 : 1; }

/* Blocked geometry: cb channels per block, zero-padded input of Hp x Wp
 * (only the rows and columns some tap reads). */
static void convb_geom_of(const geom3 *g, int64_t C, poprt__convb_geom *cg, int64_t *Hp)
{
    cg->cb = convb_cb(C);
    cg->split = 0;
    cg->ncb = C / cg->cb;
    cg->KH = g->k[1];
    cg->KW = g->k[2];
    cg->sh = g->s[1];
    cg->sw = g->s[2];
    cg->dh = g->d[1];
    cg->dw = g->d[2];
    cg->OW = g->out[2];
    cg->Wp = (g->out[2] - 1) * g->s[2] + (g->k[2] - 1) * g->d[2] + 1;
    *Hp = (g->out[1] - 1) * g->s[1] + (g->k[1] - 1) * g->d[1] + 1;
    cg->plane = *Hp * cg->Wp * cg->cb;
}

/* Rows [r0, r1) of the blocked input: row r = (image * ncb + cbi) * Hp + hp. */
static void convb_block_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const convb_job *t = ctx;
    const conv_plan *p = t->p;
    const geom3 *g = &p->g;
    const poprt__convb_geom *cg = &t->g;
    const int64_t H = g->in[1], W = g->in[2], HW = H * W, pt = g->pb[1], pl = g->pb[2];
    const int64_t cb = cg->cb, Wp = cg->Wp;
    /* padded columns [c0, c1) hold input columns [c0 - pl, c1 - pl) */
    int64_t c0 = pl < 0 ? 0 : pl, c1 = pl + W;
    if (c1 > Wp)
        c1 = Wp;
    if (c0 > c1)
        c0 = c1;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t hp = r % t->Hp, cbi = (r / t->Hp) % cg->ncb, n = r / t->Hp / cg->ncb;
        float *dst = t->xb + r * Wp * cb;
        const int64_t ih = hp - pt;
        if (ih < 0 || ih >= H) {
            memset(dst, 0, sizeof(float) * (size_t)(Wp * cb));
            continue;
        }
        if (cg->split) /* the border columns are spread over the row */
            memset(dst, 0, sizeof(float) * (size_t)Wp);
        else {
            memset(dst, 0, sizeof(float) * (size_t)(c0 * cb));
            memset(dst + c1 * cb, 0, sizeof(float) * (size_t)((Wp - c1) * cb));
        }
        if (t->xblk) { /* already blocked: the row's run of positions */
            memcpy(dst + c0 * 16, t->x + (n * p->C + cbi * 16) * HW + (ih * W + c0 - pl) * 16,
                   sizeof(float) * (size_t)((c1 - c0) * 16));
            continue;
        }
        const float *src = t->x + (n * p->C + cbi * cb) * HW + ih * W + (c0 - pl);
        if (cb == 16)
            poprt__convb_block_avx512(src, HW, 16, c1 - c0, dst + c0 * 16);
        else if (cg->split) { /* even columns, then odd ones */
            const int64_t a = c0 & 1; /* src[a] is the first even column */
            poprt__convb_even_avx512(src + a, (c1 - c0 - a + 1) / 2, dst + ((c0 + a) >> 1));
            poprt__convb_even_avx512(src + !a, (c1 - c0 - !a + 1) / 2,
                                     dst + cg->split + ((c0 + !a) >> 1));
        }
        else /* one channel per block: a padded copy of the row */
            memcpy(dst + c0, src, sizeof(float) * (size_t)(c1 - c0));
    }
}

static void convb_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const convb_job *t = ctx;
    const conv_plan *p = t->p;
    const poprt__convb_geom *cg = &t->g;
    const int64_t OHW = p->g.out_sz;
    float bias[CONVB_GROUP];
    const int relu = conv_lone_relu(p); /* applied in the transposition */
    /* an NCHW16c output whose epilogue is a residual and/or a Relu gets it
     * in the registers, with the last input blocks */
    const int in_regs =
        t->yblk && !p->fp8 && !p->n_post && (p->act == CONV_ACT_NONE || p->act == CONV_ACT_RELU);
    const int regs_relu = in_regs && p->act == CONV_ACT_RELU;
    for (int64_t l = l0; l < l1; l++) {
        float *tmp = t->tmp ? t->tmp + l * t->tmp_floats : NULL;
        /* a lane takes a contiguous run of items: neighbouring chunks share
         * the cache lines at their ends, which two threads writing them at
         * once would pass back and forth */
        const int64_t i0 = l * t->items / t->lanes, i1 = (l + 1) * t->items / t->lanes;
        for (int64_t it = i0; it < i1; it++) {
            /* items: image-major, then group, then chunk (a lane's chunks of
             * one group follow each other, so its weights stay in cache) */
            const int64_t ch = it % t->nchunks, og = (it / t->nchunks) % t->n_og;
            const int64_t n = it / t->nchunks / t->n_og;
            const int64_t q0 = ch * t->chunk, q1 = q0 + t->chunk < OHW ? q0 + t->chunk : OHW;
            const int64_t oc0 = og * CONVB_GROUP;
            const int64_t mc = p->M - oc0 < CONVB_GROUP ? p->M - oc0 : CONVB_GROUP;
            const int nb = (int)((mc + 15) / 16);
            if (t->b) {
                memset(bias, 0, sizeof bias);
                memcpy(bias, t->b + oc0, sizeof(float) * (size_t)mc);
            }
            const float *xn = t->xb + n * cg->ncb * cg->plane;
            const float *wg = t->w + og * t->w_group;
            /* NCHW16c output: the tiles store straight into its blocks */
            float *out = t->yblk ? t->y + (n * p->M + oc0) * OHW + q0 * 16 : tmp;
            const int64_t ldo = t->yblk ? OHW : q1 - q0;
            const float *z = in_regs && p->z ? p->z + (out - t->y) : NULL;
            /* a few input blocks at a time: their weights stay in L1 while
             * the chunk's tiles run over them */
            for (int64_t c0 = 0; c0 < cg->ncb; c0 += t->cstep) {
                const int64_t c1 = c0 + t->cstep < cg->ncb ? c0 + t->cstep : cg->ncb;
                const int last = c1 == cg->ncb;
                poprt__convb_run_avx512(xn, wg, t->b ? bias : NULL, nb, cg, q0, q1, c0, c1,
                                        c0 > 0, out, ldo, last ? z : NULL, last && regs_relu);
            }
            if (t->yblk) {
                for (int bi = 0; !in_regs && conv_has_epilogue(p) && bi < nb; bi++)
                    conv_epilogue(p, t->y, out + bi * 16 * OHW - t->y, (q1 - q0) * 16);
                continue;
            }
            float *yq = t->y + (n * p->M + oc0) * OHW + q0;
            for (int bi = 0; bi < nb; bi++) {
                const int rows = (int)(mc - bi * 16 < 16 ? mc - bi * 16 : 16);
                poprt__transpose_bias_avx512(tmp + bi * (q1 - q0) * 16, 16, q1 - q0, rows, NULL,
                                             relu, yq + bi * 16 * OHW, OHW);
            }
            if (conv_has_epilogue(p) && !relu)
                for (int64_t m = 0; m < mc; m++)
                    conv_epilogue(p, t->y, yq + m * OHW - t->y, q1 - q0);
        }
    }
}

/* One channel per block with column stride 1 or 2 and rows of at least 16
 * columns: whole output rows straight into place
 * (poprt__convb_rows_avx512). Items: image-major, then group, then row.
 * (Splitting the channels first, as the next MaxPool splits its planes,
 * measured no faster on light_squeezenet: the conv then reads its whole
 * input once per channel share.) */
static int convb_by_rows(const poprt__convb_geom *cg)
{
    return cg->cb == 1 && (cg->sw == 1 || cg->sw == 2) && cg->OW >= 16;
}

static void convb_rows_lane_fn(void *ctx, int64_t l0, int64_t l1)
{
    const convb_job *t = ctx;
    const conv_plan *p = t->p;
    const poprt__convb_geom *cg = &t->g;
    const int64_t OH = p->g.out[1], OHW = p->g.out_sz;
    float bias[CONVB_GROUP];
    const int relu = conv_lone_relu(p); /* applied in the tiles' registers */
    for (int64_t l = l0; l < l1; l++) {
        const int64_t i0 = l * t->items / t->lanes, i1 = (l + 1) * t->items / t->lanes;
        for (int64_t it = i0; it < i1; it++) {
            const int64_t oh = it % OH, og = (it / OH) % t->n_og, n = it / OH / t->n_og;
            const int64_t oc0 = og * CONVB_GROUP;
            const int64_t mc = p->M - oc0 < CONVB_GROUP ? p->M - oc0 : CONVB_GROUP;
            if (t->b) {
                memset(bias, 0, sizeof bias);
                memcpy(bias, t->b + oc0, sizeof(float) * (size_t)mc);
            }
            /* NCHW16c: the group's first block; else its first row oh */
            float *yg = t->y + (n * p->M + oc0) * OHW;
            float *yr = t->yblk ? yg : yg + oh * cg->OW;
            poprt__convb_rows_avx512(t->xb + n * cg->ncb * cg->plane, t->w + og * t->w_group,
                                     poprt__ceil_div(mc, 16) * 16, t->b ? bias : NULL, mc, cg, oh, relu,
                                     t->yblk, yr, OHW);
            if (conv_has_epilogue(p) && !relu && t->yblk)
                for (int64_t bi = 0; bi < mc / 16; bi++) /* row oh of each block */
                    conv_epilogue(p, t->y, yg + (bi * OHW + oh * cg->OW) * 16 - t->y,
                                  cg->OW * 16);
            else if (conv_has_epilogue(p) && !relu)
                for (int64_t m = 0; m < mc; m++)
                    conv_epilogue(p, t->y, yr + m * OHW - t->y, cg->OW);
        }
    }
}

static poprt_status conv_blocked(poprt__kctx *k, const conv_plan *p, const float *x,
                                 const float *b, const float *w, int64_t w_group, float *y)
{
    const geom3 *g = &p->g;
    convb_job t = {.p = p, .x = x, .b = b, .w = w, .y = y, .w_group = w_group,
                   .xblk = p->xblk, .yblk = p->yblk};
    convb_geom_of(g, p->C, &t.g, &t.Hp);
    /* an NCHW16c input that no tap reads past (no padding) is read in
     * place, with its own row pitch and plane */
    const int in_place = p->xblk && g->pb[1] == 0 && g->pb[2] == 0 && t.Hp <= g->in[1] &&
                         t.g.Wp <= g->in[2];
    if (in_place) {
        t.Hp = g->in[1];
        t.g.Wp = g->in[2];
        t.g.plane = g->in[1] * g->in[2] * 16;
    }
    const int by_rows = convb_by_rows(&t.g);
    if (by_rows && t.g.sw == 2)
        t.g.split = (t.g.Wp + 1) / 2;
    t.n_og = poprt__ceil_div(p->M, CONVB_GROUP);
    if (by_rows)
        t.items = p->N * t.n_og * g->out[1];
    else {
        /* chunks of about CONVB_CHUNK positions, in whole tiles */
        const int64_t nch = poprt__ceil_div(g->out_sz, CONVB_CHUNK);
        t.chunk = poprt__ceil_div(poprt__ceil_div(g->out_sz, nch), 6) * 6;
        t.nchunks = poprt__ceil_div(g->out_sz, t.chunk);
        /* input blocks per step: their weights (64 output channels) in ~24 KiB */
        const int64_t wblk = t.g.KH * t.g.KW * t.g.cb * CONVB_GROUP * (int64_t)sizeof(float);
        t.cstep = (24 << 10) / wblk;
        if (t.cstep < 1)
            t.cstep = 1;
        t.items = p->N * t.n_og * t.nchunks;
        t.tmp_floats = 4 * 16 * t.chunk;
    }
    t.lanes = t.items < CONV_LANES ? t.items : CONV_LANES;
    if (t.yblk) /* the tiles store into the output itself */
        t.tmp_floats = 0;
    /* the blocked input, then zeros: the row tiles read up to 31 floats
     * past the last plane */
    enum { SLACK = 32 };
    size_t xb_n, tmp_n = 0;
    if (!poprt__mul_size((size_t)(p->N * t.g.ncb), (size_t)t.g.plane, &xb_n) ||
        xb_n > SIZE_MAX / sizeof(float) - SLACK ||
        !poprt__mul_size((size_t)t.lanes, (size_t)t.tmp_floats, &tmp_n) ||
        (tmp_n && !(t.tmp = poprt__kctx_scratch(k, tmp_n * sizeof(float)))))
        return oom(k);
    if (in_place)
        t.xb = (float *)x;
    else {
        if (!(t.xb = poprt__kctx_scratch(k, (xb_n + SLACK) * sizeof(float))))
            return oom(k);
        memset(t.xb + xb_n, 0, SLACK * sizeof(float));
        poprt__kctx_parallel_for(k, p->N * t.g.ncb * t.Hp,
                                 grain_for(t.g.Wp * t.g.cb, 1 << 14), convb_block_task_fn, &t);
    }
    poprt__kctx_parallel_for(k, t.lanes, 1, by_rows ? convb_rows_lane_fn : convb_lane_fn, &t);
    return POPRT_OK;
}

/* Packs W [M][C][KH][KW] for conv_blocked: per group of 64 output channels,
 * [cbi][kh][kw][i][nb * 16], zero for channels past C and M. */
static poprt_status convb_pack(const float *w, int64_t M, int64_t C, int64_t KH, int64_t KW,
                               void **state, size_t *size)
{
    const int64_t cb = convb_cb(C), ncb = C / cb;
    const int64_t n_og = poprt__ceil_div(M, CONVB_GROUP);
    const int64_t w_group = ncb * KH * KW * cb * CONVB_GROUP; /* floats, the last may use fewer */
    const size_t total = CONV_PACK_HEADER + (size_t)(n_og * w_group) * sizeof(float);
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    memset(blob, 0, total);
    uint64_t h[8] = {CONV_BLOCKED_MAGIC, (uint64_t)M, (uint64_t)C, (uint64_t)KH,
                     (uint64_t)KW, (uint64_t)w_group, 0, 0};
    memcpy(blob, h, sizeof h);
    float *dst = (float *)(blob + CONV_PACK_HEADER);
    for (int64_t og = 0; og < n_og; og++) {
        const int64_t oc0 = og * CONVB_GROUP;
        const int64_t mc = M - oc0 < CONVB_GROUP ? M - oc0 : CONVB_GROUP;
        const int64_t width = poprt__ceil_div(mc, 16) * 16;
        float *wg = dst + og * w_group;
        for (int64_t cbi = 0; cbi < ncb; cbi++)
            for (int64_t kh = 0; kh < KH; kh++)
                for (int64_t kw = 0; kw < KW; kw++)
                    for (int64_t i = 0; i < cb; i++) {
                        float *o = wg + (((cbi * KH + kh) * KW + kw) * cb + i) * width;
                        for (int64_t m = 0; m < mc; m++)
                            o[m] = w[(((oc0 + m) * C + cbi * cb + i) * KH + kh) * KW + kw];
                    }
    }
    *state = blob;
    *size = total;
    return POPRT_OK;
}

static poprt_status conv_layout(poprt__kctx *k, const conv_plan *p, const float *x,
                                const float *w, const float *b, float *y);

/* The weights convb_pack made for this conv, when the blocked path can run
 * them on this CPU (*w_group: floats per group of output channels); else
 * NULL (no such blob, or one made for another shape). */
static const float *convb_state(const poprt__kctx *k, const conv_plan *p, int64_t *w_group)
{
    const geom3 *g = &p->g;
    if (!k->state || k->state_size < CONV_PACK_HEADER || !convb_fits(g, p->G) ||
        !avx512_usable())
        return NULL;
    uint64_t h[8];
    memcpy(h, k->state, sizeof h);
    const uint64_t floats = (k->state_size - CONV_PACK_HEADER) / sizeof(float);
    if (h[0] != CONV_BLOCKED_MAGIC || h[1] != (uint64_t)p->M || h[2] != (uint64_t)p->C ||
        h[3] != (uint64_t)g->k[1] || h[4] != (uint64_t)g->k[2] || h[5] == 0 ||
        (uint64_t)poprt__ceil_div(p->M, CONVB_GROUP) > floats / h[5])
        return NULL;
    *w_group = (int64_t)h[5];
    return (const float *)((const unsigned char *)k->state + CONV_PACK_HEADER);
}

static poprt_status conv_f32(poprt__kctx *k, const conv_plan *p, const float *x, const float *w,
                             const float *b, float *y)
{
    const geom3 *g = &p->g;
    if (p->xblk || p->yblk)
        return conv_layout(k, p, x, w, b, y);
    if (p->Cg == 1 && p->G > 1) {
        int done;
        poprt_status st = dwconv_padded(k, p, x, w, b, y, &done);
        if (st || done)
            return st;
        dw_task t = {p, x, w, b, y};
        int64_t planes = p->N * p->M;
        poprt__kctx_parallel_for(k, planes, grain_for(g->out_sz * g->k_sz, 1 << 15),
                                 dwconv_task_fn, &t);
        return POPRT_OK;
    }
    const int pointwise = g->k_sz == 1 && g->s[0] == 1 && g->s[1] == 1 && g->s[2] == 1 &&
                          g->pb[0] == 0 && g->pb[1] == 0 && g->pb[2] == 0 && g->pe[0] == 0 &&
                          g->pe[1] == 0 && g->pe[2] == 0;
    {
        int64_t w_group;
        const float *packed = convb_state(k, p, &w_group);
        if (packed) /* else packed for another CPU (an executable file): the paths below */
            return conv_blocked(k, p, x, b, packed, w_group, y);
    }
    if (k->state && k->state_size >= CONV_PACK_HEADER) {
        uint64_t h[4];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_TRANS_MAGIC && p->G == 1 && h[1] == (uint64_t)p->M &&
            h[2] == (uint64_t)p->Kc && h[3] <= k->state_size - CONV_PACK_HEADER &&
            conv_trans_fits(p->G, p->M, p->Kc, g->out_sz)) {
            const void *bp = (const unsigned char *)k->state + CONV_PACK_HEADER;
            const poprt__sgemm_variant *v = poprt__sgemm_packed_variant(bp);
            /* packed for another CPU (an executable file): plain path below */
            if (v && poprt__sgemm_usable(v))
                return conv_trans(k, p, pointwise, x, b, bp, y);
        }
    }
    if (k->state && k->state_size >= CONV_PACK_HEADER) {
        uint64_t h[8];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_DIRECT_MAGIC && h[1] == (uint64_t)p->G && h[2] == (uint64_t)p->Mg &&
            h[4] == (uint64_t)p->Cg && h[5] == (uint64_t)g->k_sz &&
            h[6] < (uint64_t)poprt__sgemm_n_variants && h[3] > 0 &&
            (uint64_t)p->G <= (k->state_size - CONV_PACK_HEADER) / h[3]) {
            const poprt__sgemm_variant *v = &poprt__sgemm_variants[h[6]];
            /* packed for another CPU (an executable file): plain path below */
            if (poprt__sgemm_usable(v) && h[7] == ((uint64_t)v->nr << 16 | (uint64_t)v->mr) &&
                conv_direct_fits(g, p->Cg, v))
                return conv_direct(k, p, x, b,
                                   (const float *)((const unsigned char *)k->state +
                                                   CONV_PACK_HEADER),
                                   (int64_t)(h[3] / sizeof(float)), v, y);
        }
    }
    /* weights pre-packed by poprt__ref_conv_prepare, one block per group */
    const unsigned char *apack = NULL;
    uint64_t per_group = 0;
    void *pws = NULL;
    if (k->state && k->state_size >= CONV_PACK_HEADER && fast_gemm_fits(p->Mg, g->out_sz, p->Kc)) {
        uint64_t h[4];
        memcpy(h, k->state, sizeof h);
        if (h[0] == CONV_PACK_MAGIC && h[1] == (uint64_t)p->G && h[2] == (uint64_t)p->Mg &&
            h[3] > 0 && (uint64_t)p->G <= (k->state_size - CONV_PACK_HEADER) / h[3]) {
            apack = (const unsigned char *)k->state + CONV_PACK_HEADER;
            per_group = h[3];
            int done;
            poprt_status st = conv_tiled(k, p, pointwise, x, b, apack, per_group, y, &done);
            if (st || done)
                return st;
            pws = poprt__kctx_scratch(
                k, poprt__sgemm_packed_workspace(apack, NULL, 0, 0, p->Mg, g->out_sz, p->Kc));
            if (!pws)
                apack = NULL;
        }
    }
    void *ws = NULL;
    if (!apack && fast_gemm_fits(p->Mg, g->out_sz, p->Kc) &&
        !(ws = fast_gemm_ws(k, 0, 0, p->Mg, g->out_sz, p->Kc)))
        return oom(k);
    float *col = NULL;
    if (!pointwise) {
        size_t n;
        if (!poprt__mul_size((size_t)p->Kc, (size_t)g->out_sz, &n) ||
            !poprt__mul_size(n, sizeof(float), &n))
            return oom(k);
        col = poprt__kctx_scratch(k, n ? n : 1);
        if (!col)
            return oom(k);
    }
    for (int64_t n = 0; n < p->N; n++) {
        for (int64_t gi = 0; gi < p->G; gi++) {
            const float *xg = x + (n * p->C + gi * p->Cg) * g->in_sz;
            const float *wg = w + gi * p->Mg * p->Kc;
            float *yg = y + (n * p->M + gi * p->Mg) * g->out_sz;
            const float *B = xg;
            if (!pointwise) {
                im2col_task t = {xg, g, col};
                poprt__kctx_parallel_for(k, p->Kc, grain_for(g->out_sz, 1 << 14),
                                         im2col_task_fn, &t);
                B = col;
            }
            const float beta = 0.0f; /* the bias is added with the epilogue */
            int done = 0;
            conv_epi_task et = {p, y, yg - y, b ? b + gi * p->Mg : NULL};
            const int epilogue = b || conv_has_epilogue(p);
            if (apack) {
                /* the bias and epilogue run on each finished block of Y */
                poprt__par par = poprt__par_kctx(k);
                const poprt__sgemm_epi epi = {conv_epi_block, &et};
                done = poprt__sgemm_packed_epi(&par, pws, 0, 0, p->Mg, g->out_sz, p->Kc, 1.0f,
                                               NULL, 0, apack + (uint64_t)gi * per_group, B,
                                               g->out_sz, NULL, beta, yg, g->out_sz,
                                               epilogue ? &epi : NULL) == 0;
                /* packed for another CPU (an executable file): plain path */
                if (!done && !ws && !(ws = fast_gemm_ws(k, 0, 0, p->Mg, g->out_sz, p->Kc)))
                    return oom(k);
                if (done)
                    continue;
            }
            fast_gemm(k, ws, 0, 0, p->Mg, g->out_sz, p->Kc, 1.0f, wg, p->Kc, B, g->out_sz, beta,
                      yg, g->out_sz);
            if (epilogue) {
                poprt__kctx_parallel_for(k, p->Mg, grain_for(g->out_sz, 1 << 14),
                                         conv_epi_task_fn, &et);
            }
        }
    }
    return POPRT_OK;
}

/* NCHW16c (lib/compiler/layout.c): channel c of position q of image n at
 * ((n * C/16 + c/16) * HW + q) * 16 + c % 16. C must be a multiple of 16. */
static void nchw16c_from_nchw(const float *src, int64_t N, int64_t C, int64_t HW, float *dst)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t q = 0; q < HW; q++)
                dst[((n * C + (c & ~(int64_t)15)) * HW + q * 16) + (c & 15)] =
                    src[(n * C + c) * HW + q];
}

static void nchw16c_to_nchw(const float *src, int64_t N, int64_t C, int64_t HW, float *dst)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t q = 0; q < HW; q++)
                dst[(n * C + c) * HW + q] =
                    src[((n * C + (c & ~(int64_t)15)) * HW + q * 16) + (c & 15)];
}

/* Whether node attribute `name` asks for NCHW16c. */
static int layout_blocked(const poprt__node *n, const char *name)
{
    return strcmp(poprt__attr_s(n, name, "NCHW"), "NCHW16c") == 0;
}

/* A convolution with an NCHW16c input or output: the blocked path reads
 * and writes that layout directly; where it cannot run (an executable file
 * loaded on a CPU without AVX-512), the operands are converted around the
 * plain paths, which gives the same results. */
static poprt_status conv_layout(poprt__kctx *k, const conv_plan *p, const float *x,
                                const float *w, const float *b, float *y)
{
    const geom3 *g = &p->g;
    if ((p->xblk && p->C % 16) || (p->yblk && p->M % 16) || g->out[0] != 1 || g->in[0] != 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "NCHW16c needs 2-D tensors with channels in blocks of 16 (X "
                               "has %lld, Y %lld)",
                               (long long)p->C, (long long)p->M);
    int64_t w_group;
    const float *packed = convb_state(k, p, &w_group);
    if (packed)
        return conv_blocked(k, p, x, b, packed, w_group, y);
    conv_plan q = *p;
    q.xblk = q.yblk = 0;
    const size_t xn = (size_t)(p->N * p->C * g->in_sz), yn = (size_t)(p->N * p->M * g->out_sz);
    float *xs = p->xblk ? poprt__kctx_scratch(k, xn * sizeof(float)) : NULL;
    float *ys = p->yblk ? poprt__kctx_scratch(k, yn * sizeof(float)) : NULL;
    float *zs = p->yblk && p->z ? poprt__kctx_scratch(k, yn * sizeof(float)) : NULL;
    if ((p->xblk && !xs) || (p->yblk && !ys) || (p->yblk && p->z && !zs))
        return oom(k);
    if (xs)
        nchw16c_to_nchw(x, p->N, p->C, g->in_sz, xs);
    if (zs) {
        nchw16c_to_nchw(p->z, p->N, p->M, g->out_sz, zs);
        q.z = zs;
    }
    poprt_status st = conv_f32(k, &q, xs ? xs : x, w, b, ys ? ys : y);
    if (!st && ys)
        nchw16c_from_nchw(ys, p->N, p->M, g->out_sz, y);
    return st;
}

/* Conv weights packed once when the session is compiled: the blob is a
 * header {magic, groups, rows per group, bytes per group} then one packed
 * A operand per group (the GEMM's own position-independent format); for
 * convs of the direct path, a header {magic, groups, rows per group, bytes
 * per group, channels per group, taps, GEMM variant index, NR << 16 | MR}
 * then per group the panels conv_direct reads (checked against the running
 * CPU's variant list when an executable file is loaded). */
/* The micro-kernel for a conv's weights: among the usable variants of the
 * best one's ISA level (their speeds differ by a few percent), the one
 * whose tiles cover M output channels x N positions with the least padding
 * (M = 16: 14-row tiles compute 28 rows, 6-row tiles 18). */
static double conv_tile_cost(const poprt__sgemm_variant *v, int64_t M, int64_t N)
{
    return (double)(poprt__ceil_div(M, v->mr) * v->mr) * (double)(poprt__ceil_div(N, v->nr) * v->nr);
}

static const poprt__sgemm_variant *conv_variant(int64_t M, int64_t N)
{
    const poprt__sgemm_variant *pick = poprt__sgemm_best();
    for (int i = 0; i < poprt__sgemm_n_variants; i++) {
        const poprt__sgemm_variant *v = &poprt__sgemm_variants[i];
        /* a clear gain only */
        if (v->isa == pick->isa && poprt__sgemm_usable(v) &&
            conv_tile_cost(v, M, N) < 0.97 * conv_tile_cost(pick, M, N))
            pick = v;
    }
    return pick;
}

poprt_status poprt__ref_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in < 2 || !c->in[1].type || !c->in[1].data || c->in[1].type->elem != POPRT_DTYPE_FLOAT ||
        c->n_out < 1 || c->out[0].kind != POPRT__KIND_TENSOR || c->out[0].rank < 3)
        return POPRT_OK;
    const poprt__type *wt = c->in[1].type;
    int64_t wnum = poprt__type_numel(wt), out_sz = 1;
    if (wnum <= 0 || wt->rank < 3)
        return POPRT_OK;
    for (int d = 2; d < c->out[0].rank; d++) {
        if (c->out[0].dims[d].value < 0)
            return POPRT_OK;
        out_sz *= c->out[0].dims[d].value;
    }
    const int64_t M = wt->dims[0].value, G = poprt__attr_i(c->node, "group", 1);
    if (M <= 0 || G <= 0 || M % G)
        return POPRT_OK;
    const int64_t Mg = M / G, Kc = wnum / M, Cg = wt->dims[1].value;
    if ((Cg == 1 && G > 1) || !fast_gemm_fits(Mg, out_sz, Kc))
        return POPRT_OK; /* depthwise, or shapes the GEMM hands to the reference */
    const poprt__type *xt = c->in[0].type;
    const poprt__sgemm_variant *v = conv_variant(Mg, out_sz); /* direct and tiled paths */
    if (xt && xt->rank == 4 && wt->rank == 4 && G == 1 && avx512_usable()) {
        int64_t in_sp[2] = {xt->dims[2].value, xt->dims[3].value};
        int64_t ker[2] = {wt->dims[2].value, wt->dims[3].value};
        poprt__nn_geom gg;
        geom3 g3;
        /* 1x1 convs stay on the GEMM paths: with no taps to share the
         * input's blocking and the output's transposition, those cost more
         * than they save (resnet50's 1x1 convs 0.85x slower blocked) */
        /* (unless an operand is NCHW16c, lib/compiler/layout.c: then there
         * is neither) */
        const int blk = layout_blocked(c->node, "x_layout") || layout_blocked(c->node, "y_layout");
        if (in_sp[0] > 0 && in_sp[1] > 0 &&
            poprt__nn_window_geom(c->node, 2, in_sp, ker, 0, &gg) == POPRT_OK && lift3(&gg, &g3) &&
            convb_fits(&g3, G) && (g3.k_sz > 1 || blk))
            return convb_pack(c->in[1].data, M, Cg, ker[0], ker[1], state, size);
    }
    if (wt->rank <= 4 && conv_trans_fits(G, M, Kc, out_sz)) {
        /* small images: W^T as the GEMM's pre-packed B operand */
        const size_t per = (poprt__sgemm_pack_b_size(NULL, Kc, M) + 63) & ~(size_t)63;
        if (per) {
            const size_t total = CONV_PACK_HEADER + per;
            unsigned char *blob = poprt__aligned_alloc(total);
            if (!blob)
                return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
            memset(blob, 0, total);
            uint64_t h[4] = {CONV_TRANS_MAGIC, (uint64_t)M, (uint64_t)Kc, per};
            memcpy(blob, h, sizeof h);
            poprt__sgemm_pack_b(NULL, NULL, 1, Kc, M, c->in[1].data, Kc, blob + CONV_PACK_HEADER);
            *state = blob;
            *size = total;
            return POPRT_OK;
        }
    }
    if (xt && xt->rank == wt->rank && wt->rank - 2 <= 3) {
        /* stride-1 convs of the direct path: weights per MR-row panel and tap */
        const int nsp = wt->rank - 2;
        int64_t in_sp[3], ker[3];
        int known = 1;
        for (int i = 0; i < nsp; i++) {
            in_sp[i] = xt->dims[2 + i].value;
            ker[i] = wt->dims[2 + i].value;
            known &= in_sp[i] >= 0 && ker[i] > 0;
        }
        poprt__nn_geom gg;
        geom3 g3;
        if (known && poprt__nn_window_geom(c->node, nsp, in_sp, ker, 0, &gg) == POPRT_OK &&
            lift3(&gg, &g3) && g3.k_sz * Cg == Kc &&
            conv_direct_fits(&g3, Cg, v)) {
            const int64_t MR = v->mr, panels = (Mg + MR - 1) / MR, ksz = g3.k_sz;
            const size_t per = ((size_t)(panels * MR * Kc) * sizeof(float) + 63) & ~(size_t)63;
            const size_t total = CONV_PACK_HEADER + per * (size_t)G;
            float *blob = poprt__aligned_alloc(total);
            if (!blob)
                return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
            memset(blob, 0, total);
            uint64_t h[8] = {CONV_DIRECT_MAGIC, (uint64_t)G, (uint64_t)Mg, per, (uint64_t)Cg,
                             (uint64_t)ksz, (uint64_t)(v - poprt__sgemm_variants),
                             (uint64_t)v->nr << 16 | (uint64_t)MR};
            memcpy(blob, h, sizeof h);
            const float *w = c->in[1].data;
            for (int64_t gi = 0; gi < G; gi++) {
                float *dst = (float *)((unsigned char *)blob + CONV_PACK_HEADER + per * (size_t)gi);
                for (int64_t m = 0; m < Mg; m++)
                    for (int64_t ci = 0; ci < Cg; ci++)
                        for (int64_t t = 0; t < ksz; t++)
                            dst[(conv_direct_taps(v, ksz) ? ((m / MR) * Cg + ci) * ksz + t
                                             : ((m / MR) * ksz + t) * Cg + ci) *
                                    MR + m % MR] =
                                w[((gi * Mg + m) * Cg + ci) * ksz + t];
            }
            *state = blob;
            *size = total;
            return POPRT_OK;
        }
    }
    const size_t per = (poprt__sgemm_pack_a_size(v, Mg, Kc) + 63) & ~(size_t)63;
    if (!per)
        return POPRT_OK;
    size_t total = CONV_PACK_HEADER + per * (size_t)G;
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing Conv weights");
    memset(blob, 0, total);
    uint64_t h[4] = {CONV_PACK_MAGIC, (uint64_t)G, (uint64_t)Mg, per};
    memcpy(blob, h, sizeof h);
    const float *w = c->in[1].data;
    for (int64_t gi = 0; gi < G; gi++)
        poprt__sgemm_pack_a(v, NULL, 0, Mg, Kc, w + gi * Mg * Kc, Kc,
                            blob + CONV_PACK_HEADER + (size_t)gi * per);
    *state = blob;
    *size = total;
    return POPRT_OK;
}

static poprt_status conv_f64(poprt__kctx *k, const conv_plan *p, const double *x,
                             const double *w, const double *b, double *y)
{
    const geom3 *g = &p->g;
    double *col = poprt__kctx_scratch(k, (size_t)(p->Kc * g->out_sz + 1) * sizeof(double));
    if (!col)
        return oom(k);
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t gi = 0; gi < p->G; gi++) {
            im2col_f64(x + (n * p->C + gi * p->Cg) * g->in_sz, g, 0, p->Kc, col);
            double *yg = y + (n * p->M + gi * p->Mg) * g->out_sz;
            for (int64_t m = 0; m < p->Mg; m++)
                for (int64_t i = 0; i < g->out_sz; i++)
                    yg[m * g->out_sz + i] = b ? b[gi * p->Mg + m] : 0.0;
            poprt__ref_dgemm(0, 0, p->Mg, g->out_sz, p->Kc, 1.0, w + gi * p->Mg * p->Kc, p->Kc,
                             col, g->out_sz, 1.0, yg, g->out_sz);
        }
    return POPRT_OK;
}

poprt_status poprt__ref_conv(poprt__kctx *k)
{
    conv_plan p;
    poprt_status st = conv_setup(k, 0, &p);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (y->numel == 0)
        return POPRT_OK;
    if (x->dtype == POPRT_DTYPE_DOUBLE)
        return conv_f64(k, &p, x->data, w->data, b ? b->data : NULL, y->data);
    const float *xf = as_f32(k, x), *wf = as_f32(k, w), *bf = b ? as_f32(k, b) : NULL;
    float *yf = out_f32(k, y);
    if (!xf || !wf || (b && !bf) || !yf)
        return oom(k);
    if ((st = conv_f32(k, &p, xf, wf, bf, yf)))
        return st;
    store_f32(y, yf);
    return POPRT_OK;
}

/* ai.poprt FusedConv (lib/compiler/fuse_conv.c): Conv plus its epilogue
 * Y = fp8(post(act(conv(X, W) + B + Z))), float32, on the same paths as Conv. */
poprt_status poprt__ref_poprt_fused_conv(poprt__kctx *k)
{
    static const struct {
        const char *name;
        int act;
        float a, b; /* defaults of activation_alpha / activation_beta */
    } acts[] = {
        {"", CONV_ACT_NONE, 0.0f, 0.0f},
        {"Relu", CONV_ACT_RELU, 0.0f, 0.0f},
        {"Clip", CONV_ACT_CLIP, -INFINITY, INFINITY},
        {"LeakyRelu", CONV_ACT_LEAKY, 0.01f, 0.0f},
        {"Sigmoid", CONV_ACT_SIGMOID, 0.0f, 0.0f},
        {"HardSigmoid", CONV_ACT_HSIGMOID, 0.2f, 0.5f},
        {"HardSwish", CONV_ACT_HSWISH, 0.0f, 0.0f},
    };
    conv_plan p;
    poprt_status st = conv_setup(k, 0, &p);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    const poprt__tval *z = poprt__kin(k, 3);
    poprt__tval *y = poprt__kout(k, 0);
    if (x->dtype != POPRT_DTYPE_FLOAT || w->dtype != POPRT_DTYPE_FLOAT ||
        (b && b->dtype != POPRT_DTYPE_FLOAT) || (z && z->dtype != POPRT_DTYPE_FLOAT))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "FusedConv takes float32 X, W, B and Z");
    if (z && (z->rank != y->rank || memcmp(z->dims, y->dims, sizeof(int64_t) * (size_t)y->rank)))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "Z must have the shape of Y");
    const char *act = poprt__attr_s(k->node, "activation", "");
    size_t i = 0;
    while (i < sizeof acts / sizeof acts[0] && strcmp(acts[i].name, act) != 0)
        i++;
    if (i == sizeof acts / sizeof acts[0])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "unknown activation '%s'",
                               act);
    p.act = acts[i].act;
    p.act_a = poprt__attr_f(k->node, "activation_alpha", acts[i].a);
    p.act_b = poprt__attr_f(k->node, "activation_beta", acts[i].b);
    p.z = z ? z->data : NULL;
    p.xblk = layout_blocked(k->node, "x_layout");
    p.yblk = layout_blocked(k->node, "y_layout");
    const char *fp8 = poprt__attr_s(k->node, "y_fp8", "");
    if (*fp8) {
        if (strcmp(fp8, "float8e4m3fn") != 0 && strcmp(fp8, "float8e5m2") != 0)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                                   "y_fp8 '%s' is not float8e4m3fn or float8e5m2", fp8);
        p.fp8 = strcmp(fp8, "float8e5m2") == 0 ? 2 : 1;
        p.fp8_scale = poprt__attr_f(k->node, "y_fp8_scale", 1.0f);
        p.fp8_zp = poprt__attr_i(k->node, "y_fp8_zero_point", 0) != 0;
    }
    const poprt__vmath_variant *vm = poprt__vmath_best();
    p.vm = vm;
    static const char *const post_attrs[4] = {"post_ops", "post_reverse", "post_alpha",
                                               "post_beta"};
    if ((st = poprt__ew_scalar_read(k->node, post_attrs, p.post, &p.n_post)))
        return st;
    static const int vm_index[] = {
        [CONV_ACT_RELU] = POPRT__VMATH_relu,       [CONV_ACT_CLIP] = POPRT__VMATH_clip,
        [CONV_ACT_LEAKY] = POPRT__VMATH_leaky_relu, [CONV_ACT_SIGMOID] = POPRT__VMATH_sigmoid,
        [CONV_ACT_HSIGMOID] = POPRT__VMATH_hard_sigmoid,
        [CONV_ACT_HSWISH] = POPRT__VMATH_hard_swish};
    p.add_fn = vm->binary[POPRT__VMATH_add];
    p.act_fn = p.act != CONV_ACT_NONE ? vm->unary[vm_index[p.act]] : NULL;
    p.act_p.alpha = p.act_a;
    p.act_p.beta = p.act_b;
    p.act_p.gamma = 0.0f;
    if (y->numel == 0)
        return POPRT_OK;
    return conv_f32(k, &p, x->data, w->data, b ? b->data : NULL, y->data);
}

/* ======================================================================
 * ConvTranspose: col = W_g^T X_g (GEMM), then col2im into Y
 * ==================================================================== */

typedef struct col2im_task {
    const float *col;
    const geom3 *g;
    float *y;
} col2im_task;

static void col2im_task_fn(void *ctx, int64_t m0, int64_t m1)
{
    const col2im_task *t = ctx;
    col2im_f32(t->col, t->g, m0, m1, t->y);
}

/* A transposed convolution whose kernel equals its stride, without padding
 * or dilation (out = in * stride): every output element takes exactly one
 * product sum, from one input position and one kernel tap (the 2x2 / 2
 * upsampling of detection heads). */
static int tconv_patches(const geom3 *g)
{
    for (int i = 0; i < 3; i++)
        if (g->k[i] != g->s[i] || g->d[i] != 1 || g->pb[i] != 0 || g->out[i] != g->in[i] * g->s[i])
            return 0;
    return 1;
}

/* Writes y = bias + col for input rows [r0, r1) (a row: one (d, h) of the
 * input, in[2] positions) of col = W^T X over those rows only. */
typedef struct tconv_scatter_task {
    const float *col;  /* [Mg * k_sz][npos] */
    const geom3 *g;
    const float *bias; /* of the group's channels, or NULL */
    int64_t r0, r1, npos;
    float *y;          /* the group's first output channel */
} tconv_scatter_task;

static void tconv_scatter_fn(void *ctx, int64_t m0, int64_t m1)
{
    const tconv_scatter_task *t = ctx;
    const geom3 *g = t->g;
    const int64_t W = g->in[2], K2 = g->k[2]; /* = s[2]: the taps of a row interleave */
    for (int64_t m = m0; m < m1; m++) {
        const float bv = t->bias ? t->bias[m] : 0.0f;
        float *yp = t->y + m * g->out_sz;
        for (int64_t kd = 0; kd < g->k[0]; kd++)
            for (int64_t kh = 0; kh < g->k[1]; kh++) {
                /* col rows of the taps (kd, kh, 0 .. K2-1) */
                const float *row =
                    t->col + (m * g->k_sz + (kd * g->k[1] + kh) * K2) * t->npos;
                for (int64_t r = t->r0; r < t->r1; r++) {
                    const int64_t od = (r / g->in[1]) * g->s[0] + kd;
                    const int64_t oh = (r % g->in[1]) * g->s[1] + kh;
                    float *o = yp + (od * g->out[1] + oh) * g->out[2];
                    const float *src = row + (r - t->r0) * W;
                    if (K2 == 2) { /* the common case, as two streams the compiler interleaves */
                        const float *s1 = src + t->npos;
                        for (int64_t iw = 0; iw < W; iw++) {
                            o[2 * iw] = bv + src[iw];
                            o[2 * iw + 1] = bv + s1[iw];
                        }
                    } else {
                        for (int64_t iw = 0; iw < W; iw++)
                            for (int64_t kw = 0; kw < K2; kw++)
                                o[iw * K2 + kw] = bv + src[kw * t->npos + iw];
                    }
                }
            }
    }
}

poprt_status poprt__ref_conv_transpose(poprt__kctx *k)
{
    conv_plan p;
    poprt_status st = conv_setup(k, 1, &p);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (y->numel == 0)
        return POPRT_OK;
    const geom3 *g = &p.g;
    const int64_t rows = p.Mg * g->k_sz; /* col is rows x in_sz */
    const int dbl = x->dtype == POPRT_DTYPE_DOUBLE;
    const size_t esz = dbl ? sizeof(double) : sizeof(float);
    const int patches = !dbl && tconv_patches(g);
    /* col: rows x in_sz, or (patches) rows x one slab of R input rows */
    const int64_t W = g->in[2], nrows = g->in[0] * g->in[1];
    int64_t R = (65536 / (rows > 0 ? rows : 1)) / (W > 0 ? W : 1);
    R = R < 1 ? 1 : R > nrows ? nrows : R;
    void *col = poprt__kctx_scratch(k, (size_t)(rows * (patches ? R * W : g->in_sz) + 1) * esz);
    if (!col)
        return oom(k);
    if (dbl) {
        const double *xd = x->data, *wd = w->data, *bd = b ? b->data : NULL;
        double *yd = y->data;
        for (int64_t n = 0; n < p.N; n++)
            for (int64_t gi = 0; gi < p.G; gi++) {
                poprt__ref_dgemm(1, 0, rows, g->in_sz, p.Cg, 1.0, wd + gi * p.Cg * rows, rows,
                                 xd + (n * p.C + gi * p.Cg) * g->in_sz, g->in_sz, 0.0, col,
                                 g->in_sz);
                double *yg = yd + (n * p.M + gi * p.Mg) * g->out_sz;
                for (int64_t m = 0; m < p.Mg; m++)
                    for (int64_t i = 0; i < g->out_sz; i++)
                        yg[m * g->out_sz + i] = bd ? bd[gi * p.Mg + m] : 0.0;
                col2im_f64(col, g, 0, p.Mg, yg);
            }
        return POPRT_OK;
    }
    const float *xf = as_f32(k, x), *wf = as_f32(k, w), *bf = b ? as_f32(k, b) : NULL;
    float *yf = out_f32(k, y);
    if (!xf || !wf || (b && !bf) || !yf)
        return oom(k);
    void *ws = NULL;
    if (patches) {
        /* in slabs of input rows whose col (rows x slab positions, ~256 KiB)
         * stays in cache between the GEMM and the scatter, which writes each
         * output element once: bias + its product sum (what the general
         * path's bias fill and col2im add compute, in one pass). The GEMM
         * workspaces, for a full slab and the shorter last one, are taken
         * once (scratch lives until the kernel returns). */
        const int64_t last = (nrows % R) * W;
        void *ws_last = NULL;
        if ((fast_gemm_fits(rows, R * W, p.Cg) && !(ws = fast_gemm_ws(k, 1, 0, rows, R * W, p.Cg))) ||
            (last && fast_gemm_fits(rows, last, p.Cg) &&
             !(ws_last = fast_gemm_ws(k, 1, 0, rows, last, p.Cg))))
            return oom(k);
        for (int64_t n = 0; n < p.N; n++)
            for (int64_t gi = 0; gi < p.G; gi++)
                for (int64_t r0 = 0; r0 < nrows; r0 += R) {
                    const int64_t r1 = r0 + R < nrows ? r0 + R : nrows, npos = (r1 - r0) * W;
                    void *wsr = npos == R * W ? ws : ws_last;
                    fast_gemm(k, wsr, 1, 0, rows, npos, p.Cg, 1.0f, wf + gi * p.Cg * rows, rows,
                              xf + (n * p.C + gi * p.Cg) * g->in_sz + r0 * W, g->in_sz, 0.0f,
                              col, npos);
                    tconv_scatter_task t = {col, g, bf ? bf + gi * p.Mg : NULL, r0, r1, npos,
                                            yf + (n * p.M + gi * p.Mg) * g->out_sz};
                    poprt__kctx_parallel_for(k, p.Mg, grain_for(g->k_sz * npos, 1 << 14),
                                             tconv_scatter_fn, &t);
                }

        store_f32(y, yf);
        return POPRT_OK;
    }
    if (fast_gemm_fits(rows, g->in_sz, p.Cg) &&
        !(ws = fast_gemm_ws(k, 1, 0, rows, g->in_sz, p.Cg)))
        return oom(k);
    for (int64_t n = 0; n < p.N; n++)
        for (int64_t gi = 0; gi < p.G; gi++) {
            fast_gemm(k, ws, 1, 0, rows, g->in_sz, p.Cg, 1.0f, wf + gi * p.Cg * rows, rows,
                      xf + (n * p.C + gi * p.Cg) * g->in_sz, g->in_sz, 0.0f, col, g->in_sz);
            float *yg = yf + (n * p.M + gi * p.Mg) * g->out_sz;
            for (int64_t m = 0; m < p.Mg; m++) {
                const float bv = bf ? bf[gi * p.Mg + m] : 0.0f;
                for (int64_t i = 0; i < g->out_sz; i++)
                    yg[m * g->out_sz + i] = bv;
            }
            col2im_task t = {col, g, yg};
            poprt__kctx_parallel_for(k, p.Mg, grain_for(g->k_sz * g->in_sz, 1 << 14),
                                     col2im_task_fn, &t);
        }
    store_f32(y, yf);
    return POPRT_OK;
}

/* ======================================================================
 * Pools
 * ==================================================================== */

enum { POOL_MAX, POOL_AVG, POOL_LP };

typedef struct pool_task {
    geom3 g;
    int kind, count_include_pad, storage_order;
    float p;
    const float *x;
    float *y;
    int64_t *ind;
} pool_task;

/* 2-D max pooling without indices or dilation, the common CNN case: the
 * kernel-height maximum of whole input rows first (contiguous, vectorised),
 * then the kernel-width maximum at the strided positions (stride 2: even
 * and odd lanes split with shuffles, 16 outputs at a time). Same result as
 * the generic loop: max is exact and NaN-free inputs compare the same way;
 * a plane holding a NaN takes the generic loop (pool_task_fn), whose
 * first-element rule decides where NaN wins. */
/* Row width maxpool2d_plane needs: the input row with a -inf border on
 * both sides covering every window, plus room for whole 16-lane blocks. */
static int64_t maxpool2d_row(const geom3 *g)
{
    const int64_t need = (g->out[2] - 1) * g->s[2] + g->k[2];
    return (need > g->pb[2] + g->in[2] ? need : g->pb[2] + g->in[2]) + 1 + 2 * 16 + 16;
}

typedef float mp_v16 __attribute__((vector_size(64)));
typedef int mp_i16 __attribute__((vector_size(64)));

/* *v = p[0], p[2], ..., p[30] */
static inline __attribute__((always_inline)) void mp_even16(const float *p, mp_v16 *v)
{
    mp_v16 lo, hi;
    memcpy(&lo, p, sizeof lo);
    memcpy(&hi, p + 16, sizeof hi);
    *v = POPRT__EVEN16(lo, hi, mp_i16);
}

/* Compiled for each vector width the CPU may have and picked by the loader
 * from the CPU's features (POPRT_ISA does not cap it: max is exact, so every
 * clone gives the same result). Returns 0 when a window holds a NaN; what it
 * wrote is then overwritten by the generic loop. */
POPRT__CLONES
static int maxpool2d_plane(const geom3 *g, const float *xp, float *yp, float *rowmax)
{
    const int64_t IH = g->in[1], IW = g->in[2], OH = g->out[1], OW = g->out[2];
    const int64_t KH = g->k[1], KW = g->k[2], SH = g->s[1], SW = g->s[2], PH = g->pb[1],
                  PW = g->pb[2], RW = maxpool2d_row(g);
    /* NaN check over the rows the windows read (no early exit, so it
     * vectorises; elements outside every window cannot reach the output) */
    int ok = 1;
    /* max over the window rows, then over the columns of the -inf-bordered
     * row, both vectorisable */
    float *restrict r = rowmax;
    for (int64_t w = 0; w < RW; w++)
        r[w] = -INFINITY;
    for (int64_t oh = 0; oh < OH; oh++) {
        int64_t h0 = oh * SH - PH, h1 = h0 + KH;
        if (h0 < 0)
            h0 = 0;
        if (h1 > IH)
            h1 = IH;
        float *restrict rm = r + PW;
        const float *restrict row0 = xp + h0 * IW;
        for (int64_t w = 0; w < IW; w++) {
            rm[w] = row0[w];
            ok &= row0[w] == row0[w];
        }
        for (int64_t h = h0 + 1; h < h1; h++) {
            const float *restrict row = xp + h * IW;
            for (int64_t w = 0; w < IW; w++) {
                rm[w] = row[w] > rm[w] ? row[w] : rm[w];
                ok &= row[w] == row[w];
            }
        }
        float *restrict yr = yp + oh * OW;
        int64_t ow0 = 0;
        if (SW == 2) {
            for (; ow0 + 16 <= OW; ow0 += 16) {
                mp_v16 m, e;
                mp_even16(r + 2 * ow0, &m);
                for (int64_t kw = 1; kw < KW; kw++) {
                    mp_even16(r + 2 * ow0 + kw, &e);
                    const mp_i16 gt = e > m;
                    m = (mp_v16)(((mp_i16)e & gt) | ((mp_i16)m & ~gt));
                }
                memcpy(yr + ow0, &m, sizeof m);
            }
        }
        for (int64_t ow = ow0; ow < OW; ow++)
            yr[ow] = r[ow * SW];
        for (int64_t kw = 1; kw < KW; kw++) {
            const float *restrict rk = r + kw;
            if (SW == 1) {
                for (int64_t ow = ow0; ow < OW; ow++)
                    yr[ow] = rk[ow] > yr[ow] ? rk[ow] : yr[ow];
            } else {
                for (int64_t ow = ow0; ow < OW; ow++)
                    yr[ow] = rk[ow * SW] > yr[ow] ? rk[ow * SW] : yr[ow];
            }
        }
    }
    return ok;
}

static void pool_task_fn(void *ctx, int64_t q0, int64_t q1);

typedef struct maxpool2d_task {
    const pool_task *pool; /* the generic loop, for planes holding a NaN */
    float *scratch;        /* one row per chunk start: indexed by plane */
    int64_t row;           /* floats per row */
    int avx512;            /* poprt__maxpool2d_plane_avx512 */
    poprt__maxpool2d_geom xg;
} maxpool2d_task;

static void maxpool2d_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const maxpool2d_task *t = ctx;
    const geom3 *g = &t->pool->g;
    float *rowmax = t->scratch + q0 * t->row;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->pool->x + q * g->in_sz;
        float *yp = t->pool->y + q * g->out_sz;
        const int ok = t->avx512 ? poprt__maxpool2d_plane_avx512(&t->xg, xp, yp, rowmax)
                                 : maxpool2d_plane(g, xp, yp, rowmax);
        if (!ok)
            pool_task_fn((void *)t->pool, q, q + 1);
    }
}

static void pool_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const pool_task *t = ctx;
    const geom3 *g = &t->g;
    const int lp2 = t->kind == POOL_LP && t->p == 2.0f;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * g->in_sz;
        float *yp = t->y + q * g->out_sz;
        int64_t *ip = t->ind ? t->ind + q * g->out_sz : NULL;
        for (int64_t od = 0; od < g->out[0]; od++)
            for (int64_t oh = 0; oh < g->out[1]; oh++)
                for (int64_t ow = 0; ow < g->out[2]; ow++) {
                    const int64_t sd = od * g->s[0] - g->pb[0], sh = oh * g->s[1] - g->pb[1],
                                  sw = ow * g->s[2] - g->pb[2];
                    float best = -INFINITY;
                    int64_t best_i = -1;
                    double sum = 0.0;
                    int64_t cnt = 0, cnt_pad = 1;
                    if (t->kind == POOL_AVG && t->count_include_pad) {
                        /* taps inside the padded extent [-pb, in + pe) */
                        const int64_t st[3] = {sd, sh, sw};
                        for (int a = 0; a < 3; a++) {
                            int64_t c = 0;
                            for (int64_t kk = 0; kk < g->k[a]; kk++) {
                                int64_t pos = st[a] + kk * g->d[a];
                                c += pos >= -g->pb[a] && pos < g->in[a] + g->pe[a];
                            }
                            cnt_pad *= c;
                        }
                    }
                    for (int64_t kd = 0; kd < g->k[0]; kd++) {
                        const int64_t id = sd + kd * g->d[0];
                        if (id < 0 || id >= g->in[0])
                            continue;
                        for (int64_t kh = 0; kh < g->k[1]; kh++) {
                            const int64_t ih = sh + kh * g->d[1];
                            if (ih < 0 || ih >= g->in[1])
                                continue;
                            const float *row = xp + (id * g->in[1] + ih) * g->in[2];
                            for (int64_t kw = 0; kw < g->k[2]; kw++) {
                                const int64_t iw = sw + kw * g->d[2];
                                if (iw < 0 || iw >= g->in[2])
                                    continue;
                                const float v = row[iw];
                                if (t->kind == POOL_MAX) {
                                    if (v > best || best_i < 0) {
                                        best = v;
                                        best_i = t->storage_order
                                                     ? id + (ih + iw * g->in[1]) * g->in[0]
                                                     : (id * g->in[1] + ih) * g->in[2] + iw;
                                    }
                                } else if (t->kind == POOL_AVG) {
                                    sum += v;
                                    cnt++;
                                } else {
                                    const double a = fabs((double)v);
                                    sum += lp2 ? a * a : pow(a, t->p);
                                }
                            }
                        }
                    }
                    const int64_t o = (od * g->out[1] + oh) * g->out[2] + ow;
                    if (t->kind == POOL_MAX) {
                        yp[o] = best;
                        if (ip)
                            ip[o] = best_i < 0 ? -1 : q * g->in_sz + best_i;
                    } else if (t->kind == POOL_AVG) {
                        int64_t div = t->count_include_pad ? cnt_pad : cnt;
                        yp[o] = div > 0 ? (float)(sum / (double)div) : 0.0f;
                    } else {
                        yp[o] = (float)(lp2 ? sqrt(sum) : pow(sum, 1.0 / t->p));
                    }
                }
    }
}

static poprt_status pool_run(poprt__kctx *k, int kind)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0), *ind = poprt__kout(k, 1);
    if (!x || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X or Y");
    if (x->rank < 3)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X must have rank >= 3, has %d", x->rank);
    const int nsp = x->rank - 2;
    poprt__nn_geom gg;
    /* ceil_mode exists for MaxPool/AveragePool >= 10 and LpPool >= 18 */
    int allow_ceil = kind == POOL_LP ? k->opset >= 18 : k->opset >= 10;
    poprt_status st = poprt__nn_window_geom(k->node, nsp, x->dims + 2, NULL, allow_ceil, &gg);
    if (st)
        return st;
    pool_task t;
    memset(&t, 0, sizeof t);
    if (!lift3(&gg, &t.g))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "more than 3 spatial axes are not supported");
    for (int i = 0; i < nsp; i++)
        if (y->dims[2 + i] != gg.out[i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output shape mismatch on axis %d", 2 + i);
    t.kind = kind;
    t.count_include_pad = (int)poprt__attr_i(k->node, "count_include_pad", 0);
    t.storage_order = (int)poprt__attr_i(k->node, "storage_order", 0);
    if (kind == POOL_LP) {
        /* p was a float attribute in LpPool-1, an int since 2 */
        const poprt__attr *pa = poprt__node_attr(k->node, "p");
        t.p = !pa ? 2.0f : pa->type == POPRT__ATTR_FLOAT ? pa->f : (float)pa->i;
    }
    if (y->numel == 0)
        return POPRT_OK;
    t.x = as_f32(k, x);
    t.y = out_f32(k, y);
    if (!t.x || !t.y)
        return oom(k);
    if (ind) {
        if (ind->dtype != POPRT_DTYPE_INT64)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "Indices must be int64");
        t.ind = ind->data;
    }
    const int64_t planes = x->dims[0] * x->dims[1];
    int fast = kind == POOL_MAX && !ind && t.g.in[0] == 1 && t.g.k[0] == 1 && t.g.d[1] == 1 &&
               t.g.d[2] == 1 && x->dtype == POPRT_DTYPE_FLOAT;
    /* every window must hold at least one real element */
    for (int a = 1; fast && a < 3; a++)
        fast = t.g.pb[a] < t.g.k[a] && t.g.pe[a] < t.g.k[a];
    if (fast) {
        maxpool2d_task mt = {&t, NULL, maxpool2d_row(&t.g), avx512_usable(),
                             {t.g.in[1], t.g.in[2], t.g.out[1], t.g.out[2], t.g.k[1], t.g.k[2],
                              t.g.s[1], t.g.s[2], t.g.pb[1], t.g.pb[2]}};
        if (mt.avx512)
            mt.row = poprt__maxpool2d_row_floats(&mt.xg);
        mt.scratch = poprt__kctx_scratch(k, (size_t)(planes * mt.row) * sizeof(float));
        if (!mt.scratch)
            return oom(k);
        poprt__kctx_parallel_for(k, planes, grain_for(t.g.out_sz * t.g.k_sz, 1 << 14),
                                 maxpool2d_task_fn, &mt);
    } else
        poprt__kctx_parallel_for(k, planes, grain_for(t.g.out_sz * t.g.k_sz, 1 << 14),
                                 pool_task_fn, &t);
    store_f32(y, t.y);
    return POPRT_OK;
}

poprt_status poprt__ref_maxpool(poprt__kctx *k) { return pool_run(k, POOL_MAX); }
poprt_status poprt__ref_averagepool(poprt__kctx *k) { return pool_run(k, POOL_AVG); }
poprt_status poprt__ref_lppool(poprt__kctx *k) { return pool_run(k, POOL_LP); }

/* ai.poprt BlockedMaxPool (lib/compiler/layout.c): MaxPool on NCHW16c
 * tensors, 2-D. Each output vector holds 16 channels of one position; the
 * window's taps are taken in MaxPool's order with its rule (the first tap
 * inside the input, then any greater value), so NaNs come out as the
 * generic loop gives them. */
typedef struct bmp_task {
    const geom3 *g;
    const float *x;
    float *y;
} bmp_task;

/* Taps k < K with k * d <= room (room >= 0): the window's end inside the
 * input. */
static inline int64_t bmp_taps(int64_t room, int64_t d, int64_t K)
{
    return room / d + 1 < K ? room / d + 1 : K;
}

POPRT__CLONES
static void bmp_rows(const geom3 *g, const float *x, float *y, int64_t r0, int64_t r1)
{
    const int64_t IH = g->in[1], IW = g->in[2], OH = g->out[1], OW = g->out[2];
    const int64_t KH = g->k[1], KW = g->k[2], DH = g->d[1], DW = g->d[2];
    const int k33 = KH == 3 && KW == 3;
    for (int64_t r = r0; r < r1; r++) { /* r = block * OH + oh */
        const int64_t blk = r / OH, oh = r % OH;
        const float *xb = x + blk * IH * IW * 16;
        float *yr = y + r * OW * 16;
        /* the taps inside the input: kh in [kh0, kh1), kw in [kw0, kw1) */
        const int64_t h0 = oh * g->s[1] - g->pb[1];
        const int64_t kh0 = h0 >= 0 ? 0 : (-h0 + DH - 1) / DH;
        const int64_t kh1 = h0 >= IH ? 0 : bmp_taps(IH - 1 - h0, DH, KH);
        for (int64_t ow = 0; ow < OW; ow++) {
            const int64_t w0 = ow * g->s[2] - g->pb[2];
            const int64_t kw0 = w0 >= 0 ? 0 : (-w0 + DW - 1) / DW;
            const int64_t kw1 = w0 >= IW ? 0 : bmp_taps(IW - 1 - w0, DW, KW);
            mp_v16 best = (mp_v16){0} - INFINITY;
            if (k33 && kh0 == 0 && kh1 == 3 && kw0 == 0 && kw1 == 3) {
                /* 3x3 inside the input (most windows): unrolled, same order */
                const float *xp = xb + (h0 * IW + w0) * 16;
                memcpy(&best, xp, sizeof best);
#pragma GCC unroll 9
                for (int t = 1; t < 9; t++) {
                    mp_v16 v;
                    memcpy(&v, xp + ((t / 3) * DH * IW + (t % 3) * DW) * 16, sizeof v);
                    const mp_i16 gt = v > best;
                    best = (mp_v16)(((mp_i16)v & gt) | ((mp_i16)best & ~gt));
                }
            } else if (kh0 < kh1 && kw0 < kw1) {
                const float *xp = xb + ((h0 + kh0 * DH) * IW + w0 + kw0 * DW) * 16;
                memcpy(&best, xp, sizeof best); /* the first tap, then greater values */
                for (int64_t kh = kh0; kh < kh1; kh++) {
                    const float *xr = xb + ((h0 + kh * DH) * IW + w0) * 16;
                    for (int64_t kw = kh == kh0 ? kw0 + 1 : kw0; kw < kw1; kw++) {
                        mp_v16 v;
                        memcpy(&v, xr + kw * DW * 16, sizeof v);
                        const mp_i16 gt = v > best;
                        best = (mp_v16)(((mp_i16)v & gt) | ((mp_i16)best & ~gt));
                    }
                }
            }
            memcpy(yr + ow * 16, &best, sizeof best);
        }
    }
}

static void bmp_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const bmp_task *t = ctx;
    bmp_rows(t->g, t->x, t->y, r0, r1);
}

poprt_status poprt__ref_poprt_blocked_maxpool(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X or Y");
    if (x->dtype != POPRT_DTYPE_FLOAT || x->rank != 4 || x->dims[1] % 16 || y->rank != 4)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED,
                               "BlockedMaxPool takes float32 NCHW16c tensors of rank 4 with "
                               "channels in blocks of 16");
    poprt__nn_geom gg;
    geom3 g;
    poprt_status st = poprt__nn_window_geom(k->node, 2, x->dims + 2, NULL, 1, &gg);
    if (st)
        return st;
    if (!lift3(&gg, &g) || y->dims[0] != x->dims[0] || y->dims[1] != x->dims[1] ||
        y->dims[2] != gg.out[0] || y->dims[3] != gg.out[1])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output shape mismatch");
    if (y->numel == 0)
        return POPRT_OK;
    bmp_task t = {&g, x->data, y->data};
    const int64_t rows = x->dims[0] * (x->dims[1] / 16) * g.out[1];
    poprt__kctx_parallel_for(k, rows, grain_for(g.out[2] * 16 * g.k_sz, 1 << 14), bmp_task_fn, &t);
    return POPRT_OK;
}

typedef struct gpool_task {
    int kind;
    float p;
    int64_t sp;
    const float *x;
    float *y;
} gpool_task;

static void gpool_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const gpool_task *t = ctx;
    for (int64_t q = q0; q < q1; q++) {
        const float *xp = t->x + q * t->sp;
        if (t->kind == POOL_MAX) {
            float m = t->sp > 0 ? xp[0] : -INFINITY;
            for (int64_t i = 1; i < t->sp; i++)
                m = xp[i] > m ? xp[i] : m;
            t->y[q] = m;
        } else if (t->kind == POOL_AVG) {
            /* float lanes of partial sums keep this vectorised; the order
             * is fixed, so results stay deterministic */
            float part[8] = {0};
            int64_t i = 0;
            for (; i + 8 <= t->sp; i += 8)
                for (int j = 0; j < 8; j++)
                    part[j] += xp[i + j];
            double s = 0.0;
            for (int j = 0; j < 8; j++)
                s += part[j];
            for (; i < t->sp; i++)
                s += xp[i];
            t->y[q] = t->sp > 0 ? (float)(s / (double)t->sp) : 0.0f;
        } else {
            double s = 0.0;
            for (int64_t i = 0; i < t->sp; i++) {
                double a = fabs((double)xp[i]);
                s += t->p == 2.0f ? a * a : pow(a, t->p);
            }
            t->y[q] = (float)(t->p == 2.0f ? sqrt(s) : pow(s, 1.0 / t->p));
        }
    }
}

static poprt_status gpool_run(poprt__kctx *k, int kind)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "X must have rank >= 2");
    gpool_task t = {kind, 2.0f, prod64(x->dims + 2, x->rank - 2), NULL, NULL};
    if (kind == POOL_LP) {
        const poprt__attr *pa = poprt__node_attr(k->node, "p");
        t.p = !pa ? 2.0f : pa->type == POPRT__ATTR_FLOAT ? pa->f : (float)pa->i;
    }
    if (y->numel == 0)
        return POPRT_OK;
    t.x = as_f32(k, x);
    t.y = out_f32(k, y);
    if (!t.x || !t.y)
        return oom(k);
    poprt__kctx_parallel_for(k, x->dims[0] * x->dims[1], grain_for(t.sp, 1 << 14),
                             gpool_task_fn, &t);
    store_f32(y, t.y);
    return POPRT_OK;
}

poprt_status poprt__ref_global_averagepool(poprt__kctx *k) { return gpool_run(k, POOL_AVG); }
poprt_status poprt__ref_global_maxpool(poprt__kctx *k) { return gpool_run(k, POOL_MAX); }
poprt_status poprt__ref_global_lppool(poprt__kctx *k) { return gpool_run(k, POOL_LP); }

poprt_status poprt__ref_maxunpool(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *ind = poprt__kin(k, 1);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ind || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X, I or Y");
    if (ind->numel != x->numel || x->rank < 3 || y->rank != x->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "I must match X (rank >= 3) and Y must have X's rank");
    /* Indices address the default output shape (what MaxPool saw); an
     * explicit output_shape only moves the same coordinates into a larger
     * tensor. */
    const int nsp = x->rank - 2;
    int64_t ks[POPRT__MAX_RANK], s[POPRT__MAX_RANK], pads[2 * POPRT__MAX_RANK];
    poprt_status st;
    if ((st = poprt__attr_ints_n(k->node, "kernel_shape", nsp, 1, ks)) ||
        (st = poprt__attr_ints_n(k->node, "strides", nsp, 1, s)) ||
        (st = poprt__attr_ints_n(k->node, "pads", 2 * nsp, 0, pads)))
        return st;
    int64_t def[POPRT__MAX_RANK];
    def[0] = x->dims[0];
    def[1] = x->dims[1];
    for (int i = 0; i < nsp; i++)
        def[2 + i] = (x->dims[2 + i] - 1) * s[i] + ks[i] - pads[i] - pads[nsp + i];
    int same = 1;
    for (int i = 0; i < x->rank; i++)
        same &= def[i] == y->dims[i];
    const int64_t def_numel = prod64(def, x->rank);
    const size_t esz = poprt_dtype_size((poprt_dtype)y->dtype);
    memset(y->data, 0, y->nbytes);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t j = poprt__load_i64(ind->data, ind->dtype, i);
        if (j < 0 || j >= def_numel)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                   "index %lld out of range [0, %lld)", (long long)j,
                                   (long long)def_numel);
        if (!same) {
            int64_t o = 0, mul = 1, r = j;
            for (int d = x->rank - 1; d >= 0; d--) {
                int64_t cd = r % def[d];
                r /= def[d];
                if (cd >= y->dims[d])
                    return POPRT__NODE_ERR(k->node, POPRT_STATUS_RUNTIME_ERROR,
                                           "index %lld falls outside output_shape",
                                           (long long)j);
                o += cd * mul;
                mul *= y->dims[d];
            }
            j = o;
        }
        memcpy((char *)y->data + (size_t)j * esz, (const char *)x->data + (size_t)i * esz, esz);
    }
    return POPRT_OK;
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
    if (y->dtype == POPRT_DTYPE_FLOAT || is_half(y->dtype)) {
        const float *af = as_f32(k, a), *bf = as_f32(k, b), *cf = c ? as_f32(k, c) : NULL;
        float *yf = out_f32(k, y);
        if (!af || !bf || (c && !cf) || !yf)
            return oom(k);
        if (c && beta != 0.0f)
            for (int64_t i = 0; i < M; i++)
                for (int64_t j = 0; j < N; j++)
                    yf[i * N + j] = cf[i * cs0 + j * cs1];
        const void *bp = y->dtype == POPRT_DTYPE_FLOAT && fast_gemm_fits(M, N, K)
                             ? packed_b_find(k, GEMM_PACK_MAGIC, K, N, tb)
                             : NULL;
        void *pws;
        if (bp && (pws = poprt__kctx_scratch(
                       k, poprt__sgemm_packed_workspace(NULL, bp, ta, 0, M, N, K)))) {
            poprt__par par = poprt__par_kctx(k);
            /* -1: packed for another CPU (an executable file): the plain path */
            if (poprt__sgemm_packed(&par, pws, ta, 0, M, N, K, alpha, af, a->dims[1], NULL, NULL, 0,
                                    bp, beta, yf, N) == 0) {
                store_f32(y, yf);
                return POPRT_OK;
            }
        }
        void *ws = NULL;
        if (fast_gemm_fits(M, N, K) && !(ws = fast_gemm_ws(k, ta, tb, M, N, K)))
            return oom(k);
        fast_gemm(k, ws, ta, tb, M, N, K, alpha, af, a->dims[1], bf, b->dims[1], beta, yf, N);
        store_f32(y, yf);
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
        fast_gemm(NULL, t->ws ? t->ws + (size_t)bi * t->ws_size : NULL, 0, 0, p->M, p->N, p->K,
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
    if (y->dtype != POPRT_DTYPE_FLOAT && !is_half(y->dtype))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "MatMul of %s",
                               poprt_dtype_name((poprt_dtype)y->dtype));
    const float *af = as_f32(k, a), *bf = as_f32(k, b);
    float *yf = out_f32(k, y);
    if (!af || !bf || !yf)
        return oom(k);
    const int fits = fast_gemm_fits(p.M, p.N, p.K);
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
            return oom(k);
        poprt__kctx_parallel_for(k, p.batch, grain_for(p.M * p.N * p.K, 1 << 16),
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
                store_f32(y, yf);
                return POPRT_OK;
            }
        }
        void *ws = NULL;
        if (fits && !(ws = fast_gemm_ws(k, 0, 0, p.M, p.N, p.K)))
            return oom(k);
        for (int64_t bi = 0; bi < p.batch; bi++) {
            int64_t ao, bo;
            matmul_offsets(&p, bi, &ao, &bo);
            fast_gemm(k, ws, 0, 0, p.M, p.N, p.K, 1.0f, af + ao, p.K, bf + bo, p.N, 0.0f,
                      yf + bi * p.M * p.N, p.N);
        }
    }
    store_f32(y, yf);
    return POPRT_OK;
}

/* ======================================================================
 * Normalisations
 * ==================================================================== */

/* Sum of x[i] (or of (x[i] - shift)^2) over a row. Sixteen float lanes the
 * compiler keeps in vector registers sum blocks of 256 values; block sums
 * are added in double, so long rows (GroupNorm) lose no more than short
 * ones. The order depends only on n, never on threads. */
#define ROW_LANES 16
#define ROW_BLOCK 256
static double row_sum(const float *x, int64_t n, double shift, int squares)
{
    const float sh = (float)shift;
    double total = 0.0;
    for (int64_t b0 = 0; b0 < n; b0 += ROW_BLOCK) {
        const int64_t b1 = n - b0 < ROW_BLOCK ? n : b0 + ROW_BLOCK;
        float acc[ROW_LANES] = {0};
        int64_t i = b0;
        if (squares) {
            for (; i + ROW_LANES <= b1; i += ROW_LANES)
                for (int j = 0; j < ROW_LANES; j++) {
                    const float d = x[i + j] - sh;
                    acc[j] += d * d;
                }
            for (; i < b1; i++) {
                const float d = x[i] - sh;
                acc[0] += d * d;
            }
        } else {
            for (; i + ROW_LANES <= b1; i += ROW_LANES)
                for (int j = 0; j < ROW_LANES; j++)
                    acc[j] += x[i + j];
            for (; i < b1; i++)
                acc[0] += x[i];
        }
        double bs = 0.0;
        for (int j = 0; j < ROW_LANES; j++)
            bs += acc[j];
        total += bs;
    }
    return total;
}

/* Mean and population variance of n floats, two passes in double. */
static void row_stats(const float *x, int64_t n, double *mean, double *var)
{
    double m = n > 0 ? row_sum(x, n, 0.0, 0) / (double)n : 0.0;
    *mean = m;
    *var = n > 0 ? row_sum(x, n, m, 1) / (double)n : 0.0;
}

/* y[i] = x[i] * a + b over a plane: the hot loop of BatchNormalization. */
typedef struct affine_task {
    const float *x;
    float *y;
    const float *a, *b; /* per channel (stride 0 within a plane) or per element */
    int64_t C, inner;
    int per_elem;
} affine_task;

static void affine_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const affine_task *t = ctx;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t c = q % t->C;
        const float *restrict x = t->x + q * t->inner;
        float *restrict y = t->y + q * t->inner;
        if (t->per_elem) {
            const float *a = t->a + c * t->inner, *b = t->b + c * t->inner;
            for (int64_t i = 0; i < t->inner; i++)
                y[i] = x[i] * a[i] + b[i];
        } else {
            affine_f32(t->inner, x, t->a[c], t->b[c], y);
        }
    }
}

poprt_status poprt__ref_batchnorm(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    const poprt__tval *ts = poprt__kin(k, 1), *tb = poprt__kin(k, 2), *tm = poprt__kin(k, 3),
                      *tv = poprt__kin(k, 4);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !ts || !tb || !tm || !tv || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing input or output");
    const int64_t N = x->rank >= 1 ? x->dims[0] : 1, C = x->rank >= 2 ? x->dims[1] : 1;
    const int64_t inner = x->rank > 2 ? prod64(x->dims + 2, x->rank - 2) : 1;
    const int64_t np = ts->numel;
    const int per_elem = np != C && np == C * inner;
    if ((np != C && !per_elem) || tb->numel != np || tm->numel != np || tv->numel != np)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "scale/B/mean/var need %lld values", (long long)C);
    const double eps = poprt__attr_f(k->node, "epsilon", 1e-5f);
    const double momentum = poprt__attr_f(k->node, "momentum", 0.9f);
    const int training = k->opset >= 14 && poprt__attr_i(k->node, "training_mode", 0) != 0;
    if (x->numel == 0)
        return POPRT_OK;
    const float *xf = as_f32(k, x), *sf = as_f32(k, ts), *bf = as_f32(k, tb),
                *mf = as_f32(k, tm), *vf = as_f32(k, tv);
    float *yf = out_f32(k, y);
    float *a = poprt__kctx_scratch(k, (size_t)np * sizeof(float));
    float *b = poprt__kctx_scratch(k, (size_t)np * sizeof(float));
    double *bm = poprt__kctx_scratch(k, (size_t)np * 2 * sizeof(double));
    if (!xf || !sf || !bf || !mf || !vf || !yf || !a || !b || !bm)
        return oom(k);
    double *bv = bm + np;
    if (training) {
        /* batch statistics over every axis but 1 */
        const int64_t cnt = N * (per_elem ? 1 : inner);
        for (int64_t i = 0; i < np; i++)
            bm[i] = bv[i] = 0.0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++) {
                const float *p = xf + (n * C + c) * inner;
                for (int64_t i = 0; i < inner; i++)
                    bm[per_elem ? c * inner + i : c] += p[i];
            }
        for (int64_t i = 0; i < np; i++)
            bm[i] /= (double)cnt;
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++) {
                const float *p = xf + (n * C + c) * inner;
                for (int64_t i = 0; i < inner; i++) {
                    int64_t j = per_elem ? c * inner + i : c;
                    double d = p[i] - bm[j];
                    bv[j] += d * d;
                }
            }
        for (int64_t i = 0; i < np; i++)
            bv[i] /= (double)cnt;
    } else {
        for (int64_t i = 0; i < np; i++) {
            bm[i] = mf[i];
            bv[i] = vf[i];
        }
    }
    for (int64_t i = 0; i < np; i++) {
        double s = sf[i] / sqrt(bv[i] + eps);
        a[i] = (float)s;
        b[i] = (float)(bf[i] - bm[i] * s);
    }
    affine_task t = {xf, yf, a, b, C, inner, per_elem};
    poprt__kctx_parallel_for(k, N * C, grain_for(inner, 1 << 14), affine_task_fn, &t);
    store_f32(y, yf);
    /* running statistics (training) or pass-through of the inputs */
    for (int j = 1; j <= 2; j++) {
        poprt__tval *o = poprt__kout(k, j);
        if (!o)
            continue;
        if (o->numel != np)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "output %d has %lld values, expected %lld", j,
                                   (long long)o->numel, (long long)np);
        const float *in = j == 1 ? mf : vf;
        const double *cur = j == 1 ? bm : bv;
        for (int64_t i = 0; i < np; i++)
            poprt__store_f64(o->data, o->dtype, i,
                             training ? in[i] * momentum + cur[i] * (1.0 - momentum) : in[i]);
    }
    /* BatchNormalization-7/9 saved_mean / saved_var */
    for (int j = 3; j <= 4; j++) {
        poprt__tval *o = poprt__kout(k, j);
        if (o && o->numel == np)
            for (int64_t i = 0; i < np; i++)
                poprt__store_f64(o->data, o->dtype, i, j == 3 ? bm[i] : bv[i]);
    }
    return POPRT_OK;
}

typedef struct inorm_task {
    const float *x, *scale, *bias;
    float *y;
    int64_t C, inner;
    double eps;
} inorm_task;

static void inorm_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const inorm_task *t = ctx;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t c = q % t->C;
        const float *x = t->x + q * t->inner;
        float *y = t->y + q * t->inner;
        double m, v;
        row_stats(x, t->inner, &m, &v);
        const float a = (float)(t->scale[c] / sqrt(v + t->eps));
        const float b = (float)(t->bias[c] - m * (t->scale[c] / sqrt(v + t->eps)));
        affine_f32(t->inner, x, a, b, y);
    }
}

poprt_status poprt__ref_instancenorm(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *s = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !s || !b || !y || x->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "needs input, scale, B and X of rank >= 2");
    const int64_t C = x->dims[1], inner = prod64(x->dims + 2, x->rank - 2);
    if (s->numel != C || b->numel != C)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "scale and B need %lld values", (long long)C);
    if (x->numel == 0)
        return POPRT_OK;
    inorm_task t = {as_f32(k, x), as_f32(k, s), as_f32(k, b), out_f32(k, y), C, inner,
                    poprt__attr_f(k->node, "epsilon", 1e-5f)};
    if (!t.x || !t.scale || !t.bias || !t.y)
        return oom(k);
    poprt__kctx_parallel_for(k, x->dims[0] * C, grain_for(inner * 3, 1 << 14), inorm_task_fn,
                             &t);
    store_f32(y, t.y);
    return POPRT_OK;
}

/* Scale/bias operand of LayerNormalization/RMSNormalization: it broadcasts
 * to X; the common cases (the normalised shape, or all of X) are indexed
 * directly, anything else is expanded to X's size once. */
static poprt_status norm_operand(poprt__kctx *k, const poprt__tval *t, const poprt__tval *x,
                                 int64_t inner, const float **out, int *full)
{
    *out = NULL;
    *full = 0;
    if (!t)
        return POPRT_OK;
    const float *f = as_f32(k, t);
    if (!f)
        return oom(k);
    if (t->numel == inner) {
        *out = f;
        return POPRT_OK;
    }
    if (t->rank > x->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "scale/bias rank %d exceeds X rank %d", t->rank, x->rank);
    for (int i = 0; i < t->rank; i++) {
        int64_t dt = t->dims[i], dx = x->dims[x->rank - t->rank + i];
        if (dt != dx && dt != 1)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "scale/bias does not broadcast to X");
    }
    float *e = poprt__kctx_scratch(k, (size_t)x->numel * sizeof(float));
    if (!e)
        return oom(k);
    int64_t str[POPRT__MAX_RANK], idx[POPRT__MAX_RANK] = {0};
    poprt__bcast_strides(t, x->rank, x->dims, str);
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t off = 0;
        for (int d = 0; d < x->rank; d++)
            off += idx[d] * str[d];
        e[i] = f[off];
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[d])
                break;
            idx[d] = 0;
        }
    }
    *out = e;
    *full = 1;
    return POPRT_OK;
}

typedef struct lnorm_task {
    const float *x, *scale, *bias;
    float *y, *mean, *inv;
    int64_t inner;
    int sfull, bfull, rms;
    double eps;
} lnorm_task;

static void lnorm_task_fn(void *ctx, int64_t r0, int64_t r1)
{
    const lnorm_task *t = ctx;
    const int64_t n = t->inner;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = t->x + r * n;
        float *y = t->y + r * n;
        double m = 0.0, v = 0.0;
        if (n > 0) {
            if (!t->rms)
                m = row_sum(x, n, 0.0, 0) / (double)n;
            v = row_sum(x, n, m, 1) / (double)n; /* centred: two passes */
        }
        const double inv = 1.0 / sqrt(v + t->eps);
        const float mf = (float)m, invf = (float)inv;
        const float *sc = t->scale ? t->scale + (t->sfull ? r * n : 0) : NULL;
        const float *bi = t->bias ? t->bias + (t->bfull ? r * n : 0) : NULL;
        /* one branch-free loop per operand combination, so each vectorises */
        if (sc && bi)
            for (int64_t i = 0; i < n; i++)
                y[i] = (x[i] - mf) * invf * sc[i] + bi[i];
        else if (sc)
            for (int64_t i = 0; i < n; i++)
                y[i] = (x[i] - mf) * invf * sc[i];
        else if (bi)
            for (int64_t i = 0; i < n; i++)
                y[i] = (x[i] - mf) * invf + bi[i];
        else
            for (int64_t i = 0; i < n; i++)
                y[i] = (x[i] - mf) * invf;
        if (t->mean)
            t->mean[r] = mf;
        if (t->inv)
            t->inv[r] = invf;
    }
}

static poprt_status lnorm_run(poprt__kctx *k, int rms)
{
    const poprt__tval *x = poprt__kin(k, 0), *s = poprt__kin(k, 1),
                      *b = rms ? NULL : poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    poprt__tval *om = rms ? NULL : poprt__kout(k, 1), *oi = rms ? NULL : poprt__kout(k, 2);
    if (!x || !s || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X, scale or Y");
    int64_t axis;
    if (!poprt__norm_axis(poprt__attr_i(k->node, "axis", -1), x->rank, &axis))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "axis out of range");
    const int64_t outer = prod64(x->dims, (int)axis);
    const int64_t inner = prod64(x->dims + axis, x->rank - (int)axis);
    lnorm_task t;
    memset(&t, 0, sizeof t);
    t.inner = inner;
    t.rms = rms;
    t.eps = poprt__attr_f(k->node, "epsilon", 1e-5f);
    poprt_status st;
    if ((st = norm_operand(k, s, x, inner, &t.scale, &t.sfull)) ||
        (st = norm_operand(k, b, x, inner, &t.bias, &t.bfull)))
        return st;
    t.x = as_f32(k, x);
    t.y = out_f32(k, y);
    if (!t.x || !t.y)
        return oom(k);
    if (om) {
        if (om->numel != outer)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "Mean size mismatch");
        t.mean = out_f32(k, om);
    }
    if (oi) {
        if (oi->numel != outer)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "InvStdDev size mismatch");
        t.inv = out_f32(k, oi);
    }
    if ((om && !t.mean) || (oi && !t.inv))
        return oom(k);
    poprt__kctx_parallel_for(k, outer, grain_for(inner * 3, 1 << 14), lnorm_task_fn, &t);
    store_f32(y, t.y);
    if (om)
        store_f32(om, t.mean);
    if (oi)
        store_f32(oi, t.inv);
    return POPRT_OK;
}

poprt_status poprt__ref_layernorm(poprt__kctx *k) { return lnorm_run(k, 0); }
poprt_status poprt__ref_rmsnorm(poprt__kctx *k) { return lnorm_run(k, 1); }

typedef struct gnorm_task {
    const float *x, *scale, *bias;
    float *y;
    int64_t C, G, Cg, inner;
    int per_channel;
    double eps;
} gnorm_task;

static void gnorm_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const gnorm_task *t = ctx;
    for (int64_t q = q0; q < q1; q++) { /* q = n * G + g */
        const int64_t g = q % t->G;
        const float *x = t->x + q * t->Cg * t->inner;
        float *y = t->y + q * t->Cg * t->inner;
        double m, v;
        row_stats(x, t->Cg * t->inner, &m, &v);
        const double inv = 1.0 / sqrt(v + t->eps);
        for (int64_t cc = 0; cc < t->Cg; cc++) {
            const int64_t pi = t->per_channel ? g * t->Cg + cc : g;
            const float a = (float)(t->scale[pi] * inv);
            const float b = (float)(t->bias[pi] - m * t->scale[pi] * inv);
            affine_f32(t->inner, x + cc * t->inner, a, b, y + cc * t->inner);
        }
    }
}

poprt_status poprt__ref_groupnorm(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *s = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !s || !b || !y || x->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "needs X of rank >= 2, scale and bias");
    gnorm_task t;
    memset(&t, 0, sizeof t);
    t.C = x->dims[1];
    t.G = poprt__attr_i(k->node, "num_groups", 0);
    if (t.G < 1 || t.C % t.G)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "num_groups %lld does not divide %lld channels", (long long)t.G,
                               (long long)t.C);
    t.Cg = t.C / t.G;
    t.inner = prod64(x->dims + 2, x->rank - 2);
    /* GroupNormalization-18 scales per group, -21 per channel */
    t.per_channel = s->numel == t.C; /* when G == C the two readings agree */
    int64_t want = t.per_channel ? t.C : t.G;
    if (s->numel != want || b->numel != want)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "scale and bias need %lld values", (long long)want);
    t.eps = poprt__attr_f(k->node, "epsilon", 1e-5f);
    if (x->numel == 0)
        return POPRT_OK;
    t.x = as_f32(k, x);
    t.scale = as_f32(k, s);
    t.bias = as_f32(k, b);
    t.y = out_f32(k, y);
    if (!t.x || !t.scale || !t.bias || !t.y)
        return oom(k);
    poprt__kctx_parallel_for(k, x->dims[0] * t.G, grain_for(t.Cg * t.inner * 3, 1 << 14),
                             gnorm_task_fn, &t);
    store_f32(y, t.y);
    return POPRT_OK;
}

typedef struct lrn_task {
    const float *x;
    float *y;
    int64_t C, inner, size;
    double alpha, beta, bias;
} lrn_task;

static void lrn_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const lrn_task *t = ctx;
    const int64_t lo_off = (t->size - 1) / 2, hi_off = t->size - 1 - lo_off;
    for (int64_t q = q0; q < q1; q++) {
        const int64_t n = q / t->C, c = q % t->C;
        const int64_t c0 = c - lo_off < 0 ? 0 : c - lo_off;
        const int64_t c1 = c + hi_off >= t->C ? t->C - 1 : c + hi_off;
        const float *xp = t->x + q * t->inner;
        float *yp = t->y + q * t->inner;
        for (int64_t i = 0; i < t->inner; i++) {
            double s = 0.0;
            for (int64_t cc = c0; cc <= c1; cc++) {
                double v = t->x[(n * t->C + cc) * t->inner + i];
                s += v * v;
            }
            yp[i] = (float)(xp[i] / pow(t->bias + t->alpha / (double)t->size * s, t->beta));
        }
    }
}

poprt_status poprt__ref_lrn(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "needs X of rank >= 2");
    lrn_task t = {NULL, NULL, x->dims[1], prod64(x->dims + 2, x->rank - 2),
                  poprt__attr_i(k->node, "size", 0), poprt__attr_f(k->node, "alpha", 1e-4f),
                  poprt__attr_f(k->node, "beta", 0.75f), poprt__attr_f(k->node, "bias", 1.0f)};
    if (t.size < 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "size must be >= 1");
    if (x->numel == 0)
        return POPRT_OK;
    t.x = as_f32(k, x);
    t.y = out_f32(k, y);
    if (!t.x || !t.y)
        return oom(k);
    poprt__kctx_parallel_for(k, x->dims[0] * t.C, grain_for(t.inner * t.size, 1 << 14),
                             lrn_task_fn, &t);
    store_f32(y, t.y);
    return POPRT_OK;
}

poprt_status poprt__ref_mvn(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing X or Y");
    int reduce[POPRT__MAX_RANK] = {0};
    int64_t na = 0;
    const int64_t *axes = poprt__attr_ints(k->node, "axes", &na);
    static const int64_t dflt[3] = {0, 2, 3};
    if (!axes) {
        axes = dflt;
        na = 3;
    }
    for (int64_t i = 0; i < na; i++) {
        int64_t a;
        if (!poprt__norm_axis(axes[i], x->rank, &a))
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                                   "axis %lld out of range for rank %d", (long long)axes[i],
                                   x->rank);
        reduce[a] = 1;
    }
    /* group index of an element: its position among the kept axes */
    int64_t gstr[POPRT__MAX_RANK], ngroups = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        gstr[d] = reduce[d] ? 0 : ngroups;
        if (!reduce[d])
            ngroups *= x->dims[d];
    }
    if (x->numel == 0)
        return POPRT_OK;
    const float *xf = as_f32(k, x);
    float *yf = out_f32(k, y);
    double *acc = poprt__kctx_scratch(k, (size_t)ngroups * 2 * sizeof(double));
    int64_t *gi = poprt__kctx_scratch(k, (size_t)x->numel * sizeof(int64_t));
    if (!xf || !yf || !acc || !gi)
        return oom(k);
    double *sum = acc, *sq = acc + ngroups;
    for (int64_t g = 0; g < 2 * ngroups; g++)
        acc[g] = 0.0;
    int64_t idx[POPRT__MAX_RANK] = {0};
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t g = 0;
        for (int d = 0; d < x->rank; d++)
            g += idx[d] * gstr[d];
        gi[i] = g;
        sum[g] += xf[i];
        sq[g] += (double)xf[i] * xf[i];
        for (int d = x->rank - 1; d >= 0; d--) {
            if (++idx[d] < x->dims[d])
                break;
            idx[d] = 0;
        }
    }
    const double cnt = (double)(x->numel / (ngroups > 0 ? ngroups : 1));
    for (int64_t g = 0; g < ngroups; g++) {
        double m = sum[g] / cnt, var = sq[g] / cnt - m * m;
        sum[g] = m;
        sq[g] = sqrt(var > 0.0 ? var : 0.0) + 1e-9; /* as the function body */
    }
    for (int64_t i = 0; i < x->numel; i++)
        yf[i] = (float)((xf[i] - sum[gi[i]]) / sq[gi[i]]);
    store_f32(y, yf);
    return POPRT_OK;
}

/* ======================================================================
 * Einsum (generic: one loop over every label combination) and Det
 * ==================================================================== */

poprt_status poprt__ref_einsum(poprt__kctx *k)
{
    const int n_in = k->n_in;
    int ranks[POPRT__EINSUM_MAX_IN];
    const poprt__tval *in[POPRT__EINSUM_MAX_IN];
    if (n_in < 1 || n_in > POPRT__EINSUM_MAX_IN)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "%d inputs", n_in);
    for (int i = 0; i < n_in; i++) {
        in[i] = poprt__kin(k, i);
        if (!in[i])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "input %d missing", i);
        ranks[i] = in[i]->rank;
    }
    poprt__tval *y = poprt__kout(k, 0);
    poprt__einsum e;
    if (!poprt__einsum_parse(poprt__attr_s(k->node, "equation", ""), n_in, ranks, &e))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "bad equation '%s'",
                               poprt__attr_s(k->node, "equation", ""));
    int64_t size[64];
    int used[64] = {0};
    for (int l = 0; l < 64; l++)
        size[l] = 1;
    for (int i = 0; i < n_in; i++)
        for (int d = 0; d < e.rank[i]; d++) {
            int l = e.lab[i][d];
            int64_t s = in[i]->dims[d];
            if (used[l] && size[l] != s && s != 1 && size[l] != 1)
                return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                       "label size mismatch: %lld vs %lld", (long long)size[l],
                                       (long long)s);
            if (!used[l] || size[l] == 1)
                size[l] = s;
            used[l] = 1;
        }
    /* loop labels: output labels first, then the summed ones */
    int loop[64], nl = 0, nout = e.out_rank;
    int in_out[64] = {0};
    for (int i = 0; i < e.out_rank; i++) {
        loop[nl++] = e.out_lab[i];
        in_out[e.out_lab[i]] = 1;
    }
    for (int l = 0; l < 64; l++)
        if (used[l] && !in_out[l])
            loop[nl++] = l;
    /* per input, stride of each loop label (dims sharing a label add up:
     * diagonals; size-1 dims broadcast with stride 0) */
    int64_t lstr[POPRT__EINSUM_MAX_IN][64];
    for (int i = 0; i < n_in; i++) {
        int64_t str[POPRT__MAX_RANK];
        poprt__strides(in[i]->rank, in[i]->dims, str);
        for (int j = 0; j < nl; j++) {
            lstr[i][j] = 0;
            for (int d = 0; d < e.rank[i]; d++)
                if (e.lab[i][d] == loop[j] && in[i]->dims[d] != 1)
                    lstr[i][j] += str[d];
        }
    }
    int64_t n_outer = 1, n_inner = 1;
    for (int j = 0; j < nl; j++)
        *(j < nout ? &n_outer : &n_inner) *= size[loop[j]];
    if (y->numel != n_outer)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "output size mismatch");
    const int is_int = poprt__dtype_is_int(y->dtype);
    int64_t idx[64] = {0};
    for (int64_t o = 0; o < n_outer; o++) {
        double acc = 0.0;
        int64_t iacc = 0;
        for (int j = nout; j < nl; j++)
            idx[j] = 0;
        for (int64_t r = 0; r < n_inner; r++) {
            double prod = 1.0;
            int64_t iprod = 1;
            for (int i = 0; i < n_in; i++) {
                int64_t off = 0;
                for (int j = 0; j < nl; j++)
                    off += idx[j] * lstr[i][j];
                if (is_int)
                    iprod *= poprt__load_i64(in[i]->data, in[i]->dtype, off);
                else
                    prod *= poprt__load_f64(in[i]->data, in[i]->dtype, off);
            }
            acc += prod;
            iacc += iprod;
            for (int j = nl - 1; j >= nout; j--) {
                if (++idx[j] < size[loop[j]])
                    break;
                idx[j] = 0;
            }
        }
        if (is_int)
            poprt__store_i64(y->data, y->dtype, o, iacc);
        else
            poprt__store_f64(y->data, y->dtype, o, acc);
        for (int j = nout - 1; j >= 0; j--) {
            if (++idx[j] < size[loop[j]])
                break;
            idx[j] = 0;
        }
    }
    return POPRT_OK;
}

poprt_status poprt__ref_det(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X must be [..., n, n]");
    const int64_t n = x->dims[x->rank - 1], nn = n * n;
    const int64_t batch = prod64(x->dims, x->rank - 2);
    double *a = poprt__kctx_scratch(k, (size_t)(nn > 0 ? nn : 1) * sizeof(double));
    if (!a)
        return oom(k);
    for (int64_t b = 0; b < batch; b++) {
        for (int64_t i = 0; i < nn; i++)
            a[i] = poprt__load_f64(x->data, x->dtype, b * nn + i);
        /* LU with partial pivoting */
        double det = 1.0;
        for (int64_t c = 0; c < n && det != 0.0; c++) {
            int64_t piv = c;
            for (int64_t r = c + 1; r < n; r++)
                if (fabs(a[r * n + c]) > fabs(a[piv * n + c]))
                    piv = r;
            if (a[piv * n + c] == 0.0) {
                det = 0.0;
                break;
            }
            if (piv != c) {
                for (int64_t j = 0; j < n; j++) {
                    double t = a[c * n + j];
                    a[c * n + j] = a[piv * n + j];
                    a[piv * n + j] = t;
                }
                det = -det;
            }
            det *= a[c * n + c];
            for (int64_t r = c + 1; r < n; r++) {
                double f = a[r * n + c] / a[c * n + c];
                for (int64_t j = c; j < n; j++)
                    a[r * n + j] -= f * a[c * n + j];
            }
        }
        poprt__store_f64(y->data, y->dtype, b, det);
    }
    return POPRT_OK;
}
