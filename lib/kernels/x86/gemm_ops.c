/* The GEMM-based operators on the fast GEMM (sgemm.h): the engine that Gemm,
 * MatMul and ConvTranspose compute with in the registry (the operators
 * themselves are written once, in lib/kernels/ref, against
 * poprt__gemm_engine), and the compile-time packing of a constant B. */
#include <string.h>
#include "kernels/ref/gemm.h"
#include "kernels/ref/conv.h"
#include "kernels/ref/rnn.h"
#include "kernels/ref/util.h"
#include "kernels/x86/gemm_ops.h"
#include "kernels/x86/sgemm.h"

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

typedef float gemv_v8 __attribute__((vector_size(32)));

/* C[r * ldc + n] = alpha (A[r, :] . x_n) + beta C[..] for r < RB rows of A
 * (lda apart) and NX vectors x_n = X + n * ldx (K contiguous floats each):
 * sixteen partial sums per (row, vector) added in a fixed order, then the
 * tail, so every clone and every blocking gives the same bits (no FMA
 * contraction: ISO C). beta 0 does not read C. Several rows or vectors at
 * once share the loads and keep 2 RB NX sums in flight (one row's two
 * sums wait on the adds' latency: 3 cycles per 16 products). */
static inline __attribute__((always_inline)) void
gemv_tile(const int RB, const int NX, int64_t K, float alpha, const float *A, int64_t lda,
          const float *X, int64_t ldx, float beta, float *C, int64_t ldc)
{
    /* every loop over r and n unrolled, so that the sums live in
     * registers (GCC -O2 left them in memory: a store-to-load chain per
     * 8 products, lstm_t200_h512's recurrent GEMV at 2/3 of the speed) */
    gemv_v8 s0[4][8], s1[4][8];
#pragma GCC unroll 4
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 8
        for (int n = 0; n < NX; n++)
            s0[r][n] = s1[r][n] = (gemv_v8){0};
    int64_t k = 0;
    for (; k + 16 <= K; k += 16)
#pragma GCC unroll 4
        for (int r = 0; r < RB; r++) {
            gemv_v8 a0, a1;
            memcpy(&a0, A + r * lda + k, sizeof a0);
            memcpy(&a1, A + r * lda + k + 8, sizeof a1);
#pragma GCC unroll 8
            for (int n = 0; n < NX; n++) {
                gemv_v8 x0, x1;
                memcpy(&x0, X + n * ldx + k, sizeof x0);
                memcpy(&x1, X + n * ldx + k + 8, sizeof x1);
                s0[r][n] += a0 * x0;
                s1[r][n] += a1 * x1;
            }
        }
#pragma GCC unroll 4
    for (int r = 0; r < RB; r++)
#pragma GCC unroll 8
        for (int n = 0; n < NX; n++) {
            const gemv_v8 v = s0[r][n] + s1[r][n];
            float s = ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
            for (int64_t q = k; q < K; q++)
                s += A[r * lda + q] * X[n * ldx + q];
            float *y = C + r * ldc + n;
            *y = beta == 0.0f ? alpha * s : alpha * s + beta * *y;
        }
}

/* y[m * incy] = alpha (A[m, :] . x) + beta y[m * incy] for m < M, four
 * rows at a time */
POPRT__CLONES
static void gemv_rows(int64_t M, int64_t K, float alpha, const float *A, int64_t lda,
                      const float *x, float beta, float *y, int64_t incy)
{
    int64_t m = 0;
    for (; m + 4 <= M; m += 4)
        gemv_tile(4, 1, K, alpha, A + m * lda, lda, x, 0, beta, y + m * incy, incy);
    for (; m < M; m++)
        gemv_tile(1, 1, K, alpha, A + m * lda, lda, x, 0, beta, y + m * incy, incy);
}

/* The same for NX (2..8) vectors at once: C[m * ldc + n] = alpha (A[m, :] .
 * x_n) + beta C[..], A read once (the same bits as NX calls of gemv_rows) */
POPRT__CLONES
static void gemv_multi(int NX, int64_t M, int64_t K, float alpha, const float *A, int64_t lda,
                       const float *X, int64_t ldx, float beta, float *C, int64_t ldc)
{
    for (int64_t m = 0; m < M; m++)
        switch (NX) {
#define GEMV_NX(n)                                                                            \
    case n: gemv_tile(1, n, K, alpha, A + m * lda, lda, X, ldx, beta, C + m * ldc, 1); break;
            GEMV_NX(2) GEMV_NX(3) GEMV_NX(4) GEMV_NX(5) GEMV_NX(6) GEMV_NX(7) GEMV_NX(8)
#undef GEMV_NX
        default: break;
        }
}

typedef struct gemv_task {
    int64_t N, K, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
} gemv_task;

static void gemv_task_fn(void *ctx, int64_t m0, int64_t m1)
{
    const gemv_task *t = ctx;
    if (t->N == 1)
        gemv_rows(m1 - m0, t->K, t->alpha, t->A + m0 * t->lda, t->lda, t->B, t->beta,
                  t->C + m0 * t->ldc, t->ldc);
    else
        gemv_multi((int)t->N, m1 - m0, t->K, t->alpha, t->A + m0 * t->lda, t->lda, t->B, t->ldb,
                   t->beta, t->C + m0 * t->ldc, t->ldc);
}

/* Few columns of C = alpha op(A) op(B) + beta C, with op(A)'s rows and
 * op(B)'s columns contiguous: one column (GEMV), or 2..8 (op(B) = B^T: the
 * recurrent products of a small batch, A read once for all), over k's
 * threads in blocks of rows (k NULL: one thread; each row's sums are the
 * same either way). 1 when done. */
static int gemv(poprt__kctx *k, int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha,
                const float *A, int64_t lda, const float *B, int64_t ldb, float beta, float *C,
                int64_t ldc)
{
    if (ta || N < 1 || N > 8 || (N == 1 && !tb && ldb != 1 && K > 1) || (N > 1 && !tb))
        return 0;
    gemv_task t = {N, K, lda, ldb, ldc, alpha, beta, A, B, C};
    if (k && M * N * K >= (1 << 16)) /* (an LSTM's R of 256 x 1024 per step) */
        poprt__kctx_parallel_for(k, M, poprt__ref_grain(N * K, 1 << 14), gemv_task_fn, &t);
    else
        gemv_task_fn(&t, 0, M);
    return 1;
}

/* C = alpha op(A) op(B) + beta C over the session's threads (split over M
 * and N blocks only, so bits do not depend on the thread count). k NULL:
 * one thread. ws from fast_gemm_ws for the same shape. */
void poprt__fast_gemm(poprt__kctx *k, void *ws, int ta, int tb, int64_t M, int64_t N, int64_t K,
                      float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                      float beta, float *C, int64_t ldc)
{
    if (!ws || !poprt__fast_gemm_fits(M, N, K)) {
        if (gemv(k, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
            return;
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

/* A constant float B (Gemm's and MatMul's weight) packed when the session is
 * compiled: a header {magic, K, N, transB}, then op(B) as the GEMM's packed
 * B operand. */
#define PACKED_B_HEADER 64u
#define GEMM_PACK_MAGIC 0x314b504d47525050ull /* "PPRGMPK1" */
#define MM_PACK_MAGIC 0x314b50424d525050ull   /* "PPRMBPK1" */

/* The bfloat16 variant for an M x N product (M 0: unknown, the first
 * usable one), or NULL when the CPU has none. */
static const poprt__sgemm_variant *bf16_variant(int64_t M, int64_t N)
{
    const poprt__sgemm_variant *first = poprt__sgemm_best_bf16();
    return M > 0 ? poprt__sgemm_fit(first, M, N) : first;
}

/* Rows of the GEMM a node's A gives (MatMul: all leading dims; Gemm: op(A)'s
 * first), 0 when not static. */
static int64_t a_rows(const poprt__prep_ctx *c, int gemm_ta)
{
    const poprt__type *t = c->in[0].type;
    if (!t || t->rank < 1)
        return 0;
    if (gemm_ta >= 0)
        return t->rank == 2 ? t->dims[gemm_ta ? 1 : 0].value : 0;
    int64_t m = 1;
    for (int d = 0; d + 1 < t->rank; d++) {
        if (t->dims[d].value <= 0 || m > ((int64_t)1 << 40) / t->dims[d].value)
            return 0;
        m *= t->dims[d].value;
    }
    return m;
}

static poprt_status packed_b_make(const poprt__prep_ctx *c, uint64_t magic, const float *B,
                                  int tb, int64_t K, int64_t N, int64_t ldb, int64_t M,
                                  const char *what, void **state, size_t *size)
{
    /* matmul_precision = bfloat16: the bfloat16 GEMM, when the CPU has one
     * (else float32); the packed operand names its variant, so the run
     * needs no option */
    const poprt__sgemm_variant *v =
        (c->flags & POPRT__PREP_MATMUL_BF16) ? bf16_variant(M, N) : NULL;
    if (!v)
        v = poprt__sgemm_best();
    const size_t psz = poprt__sgemm_pack_b_size(v, K, N);
    if (!psz)
        return POPRT_OK;
    unsigned char *blob = poprt__aligned_alloc(PACKED_B_HEADER + psz);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing %s weights", what);
    /* all of it: padding the packing skips must not hold stale bytes, or
     * two programs' identical weights would not compare equal
     * (poprt__program_share_states) */
    memset(blob, 0, PACKED_B_HEADER + psz);
    uint64_t h[4] = {magic, (uint64_t)K, (uint64_t)N, (uint64_t)tb};
    memcpy(blob, h, sizeof h);
    poprt__sgemm_pack_b(v, NULL, tb, K, N, B, ldb, blob + PACKED_B_HEADER);
    *state = blob;
    *size = PACKED_B_HEADER + psz;
    return POPRT_OK;
}

/* A Gemm's or MatMul's prepared data: the variant its packed B names (NULL
 * when that is none); *ours 0 when the data is another kernel's. */
static const poprt__sgemm_variant *packed_b_variant(const void *state, size_t size, int *ours)
{
    uint64_t magic = 0;
    *ours = 0;
    if (!state || size < sizeof magic)
        return NULL;
    memcpy(&magic, state, sizeof magic);
    *ours = magic == GEMM_PACK_MAGIC || magic == MM_PACK_MAGIC;
    return *ours && size > PACKED_B_HEADER
               ? poprt__sgemm_packed_variant((const unsigned char *)state + PACKED_B_HEADER)
               : NULL;
}

static int rnn_pack_usable(const void *state, size_t size);

int poprt__x86_state_usable(const void *state, size_t size)
{
    int ours;
    const poprt__sgemm_variant *v = packed_b_variant(state, size, &ours);
    if (ours)
        return v && poprt__sgemm_packed_current((const unsigned char *)state + PACKED_B_HEADER);
    return poprt__x86_conv_state_usable(state, size) &&
           poprt__x86_tconv_state_usable(state, size) && rnn_pack_usable(state, size);
}

int poprt__x86_state_bf16(const void *state, size_t size)
{
    int ours;
    const poprt__sgemm_variant *v = packed_b_variant(state, size, &ours);
    return v && v->kpack == 2;
}

/* The node's packed B for (K, N, transB), or NULL. */
static const void *packed_b_find(const poprt__kctx *k, uint64_t magic, int64_t K, int64_t N,
                                 int tb)
{
    uint64_t h[4];
    if (!k->state || k->state_size <= PACKED_B_HEADER)
        return NULL;
    memcpy(h, k->state, sizeof h);
    if (h[0] != magic || h[1] != (uint64_t)K || h[2] != (uint64_t)N || h[3] != (uint64_t)tb ||
        !poprt__sgemm_packed_fits((const unsigned char *)k->state + PACKED_B_HEADER,
                                  k->state_size - PACKED_B_HEADER))
        return NULL;
    return (const unsigned char *)k->state + PACKED_B_HEADER;
}

/* Gemm's constant B: the usual classifier / linear weight. */
poprt_status poprt__x86_gemm_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in < 2 || !c->in[1].type || !c->in[1].data ||
        c->in[1].type->elem != POPRT_DTYPE_FLOAT || c->in[1].type->rank != 2 || !c->in[0].type ||
        c->in[0].type->elem != POPRT_DTYPE_FLOAT || c->n_out < 1 ||
        c->out[0].elem != POPRT_DTYPE_FLOAT)
        return POPRT_OK;
    const int tb = poprt__attr_i(c->node, "transB", 0) != 0;
    const int64_t d0 = c->in[1].type->dims[0].value, d1 = c->in[1].type->dims[1].value;
    const int64_t K = tb ? d1 : d0, N = tb ? d0 : d1;
    if (K <= 0 || N < 4)
        return POPRT_OK;
    poprt_status st = packed_b_make(c, GEMM_PACK_MAGIC, c->in[1].data, tb, K, N, d1,
                                    a_rows(c, poprt__attr_i(c->node, "transA", 0) != 0), "Gemm",
                                    state, size);
    if (!st && *state)
        c->consumed |= 1u << 1; /* poprt__gemm_op reads B only when the packed one does not fit */
    return st;
}

/* A constant 2-D float B packed once (packed_b_make). */
poprt_status poprt__x86_matmul_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in < 2 || !c->in[1].type || !c->in[1].data ||
        c->in[1].type->elem != POPRT_DTYPE_FLOAT || c->in[1].type->rank != 2 || !c->in[0].type ||
        c->in[0].type->elem != POPRT_DTYPE_FLOAT || c->in[0].type->rank < 2)
        return POPRT_OK;
    const int64_t K = c->in[1].type->dims[0].value, N = c->in[1].type->dims[1].value;
    if (K <= 0 || N < 4)
        return POPRT_OK;
    poprt_status st = packed_b_make(c, MM_PACK_MAGIC, c->in[1].data, 0, K, N, N, a_rows(c, -1),
                                    "MatMul", state, size);
    /* poprt__matmul_op (and FusedAttention's projection, whose prepare this
     * is too) read B only when the packed one does not fit */
    if (!st && *state)
        c->consumed |= 1u << 1;
    return st;
}

/* ---- the engine ------------------------------------------------------------- */

static size_t fast_ws_size(int ta, int tb, int64_t M, int64_t N, int64_t K)
{
    return poprt__fast_gemm_fits(M, N, K) ? poprt__sgemm_workspace(NULL, ta, tb, M, N, K) : 0;
}

/* C = alpha op(A) B + beta C with the node's B as packed_b_make made it. */
static int packed_b_run(poprt__kctx *k, uint64_t magic, int ta, int tb, int64_t M, int64_t N,
                        int64_t K, float alpha, const float *A, int64_t lda, float beta, float *C,
                        int64_t ldc)
{
    const void *bp = poprt__fast_gemm_fits(M, N, K) ? packed_b_find(k, magic, K, N, tb) : NULL;
    void *pws;
    if (!bp || !(pws = poprt__kctx_scratch(
                     k, poprt__sgemm_packed_workspace(NULL, bp, ta, 0, M, N, K))))
        return -1;
    poprt__par par = poprt__par_kctx(k);
    /* -1: packed for another CPU (an executable file) */
    return poprt__sgemm_packed(&par, pws, ta, 0, M, N, K, alpha, A, lda, NULL, NULL, 0, bp, beta,
                               C, ldc);
}

static int gemm_packed_b(poprt__kctx *k, int ta, int tb, int64_t M, int64_t N, int64_t K,
                         float alpha, const float *A, int64_t lda, float beta, float *C,
                         int64_t ldc)
{
    return packed_b_run(k, GEMM_PACK_MAGIC, ta, tb, M, N, K, alpha, A, lda, beta, C, ldc);
}

static int matmul_packed_b(poprt__kctx *k, int ta, int tb, int64_t M, int64_t N, int64_t K,
                           float alpha, const float *A, int64_t lda, float beta, float *C,
                           int64_t ldc)
{
    return packed_b_run(k, MM_PACK_MAGIC, ta, tb, M, N, K, alpha, A, lda, beta, C, ldc);
}

/* Gemm's and MatMul's engines differ in the packed B they look for. */
static const poprt__gemm_engine gemm_engine = {fast_ws_size, poprt__fast_gemm, gemm_packed_b};
const poprt__gemm_engine poprt__x86_matmul_engine = {fast_ws_size, poprt__fast_gemm,
                                                     matmul_packed_b};
static const poprt__gemm_engine plain_engine = {fast_ws_size, poprt__fast_gemm, NULL};

poprt_status poprt__x86_gemm(poprt__kctx *k)
{
    return poprt__gemm_op(k, &gemm_engine);
}

poprt_status poprt__x86_matmul(poprt__kctx *k)
{
    return poprt__matmul_op(k, &poprt__x86_matmul_engine);
}

/* ---- RNN, GRU and LSTM --------------------------------------------------------
 * The projections and recurrent products on the fast GEMM (one batch row:
 * the threaded GEMV), with R and W packed when the session is compiled: per
 * step the product H R^T of B rows reads all of R (a bidirectional GRU of
 * hidden size 256: 768 KiB per direction, more than a 512 KiB L2), and the
 * few columns of the GEMV's form (R's rows against B vectors) ran it at
 * half the speed of the micro-kernel on R packed once (B 4: 55 -> 27 us per
 * step, Zen 3); the input projection X W^T of all T B rows packed W on
 * every call (lstm_t200_h512: 4 MiB, 5.7% of its time). The state: a header
 * of RNN_PACK_HEADER bytes {magic, H, per R part i = d * 2 + p its offset
 * and N (0: none), I, per W part i = POPRT__RNN_PART_W + d its offset and
 * N}, then the parts, each an op(B) as the GEMM's packed B: part 2d all of
 * direction d's G H rows of R (K = H), or for a GRU without
 * linear_before_reset its z r rows (N = 2 H) and, part 2d + 1, its h rows
 * (N = H), whose product waits for r; part POPRT__RNN_PART_W + d W's rows
 * of direction d (K = I, N = G H). (States made before W was packed hold
 * zeros where the W parts are described: no W part.) */
#define RNN_PACK_MAGIC 0x314b504e52525050ull /* "PPRRNPK1" */
#define RNN_PACK_HEADER 128u
enum { RNN_PARTS = POPRT__RNN_PART_W + 2, RNN_HDR_WORDS = 15 };

/* header word of part i's offset (its N follows), and part i's K */
static int rnn_hdr_slot(int i)
{
    return i < POPRT__RNN_PART_W ? 2 + 2 * i : 11 + 2 * (i - POPRT__RNN_PART_W);
}

static uint64_t rnn_hdr_k(const uint64_t *h, int i)
{
    return i < POPRT__RNN_PART_W ? h[1] : h[10];
}

static int rnn_pack_ours(const void *state, size_t size)
{
    uint64_t magic = 0;
    if (state && size >= sizeof magic)
        memcpy(&magic, state, sizeof magic);
    return magic == RNN_PACK_MAGIC;
}

/* Part i of a state rnn_pack_ours took, or NULL. */
static const void *rnn_pack_part(const void *state, size_t size, int i, int64_t K, int64_t N)
{
    uint64_t h[RNN_HDR_WORDS];
    if (!rnn_pack_ours(state, size) || size <= RNN_PACK_HEADER || i < 0 || i >= RNN_PARTS)
        return NULL;
    memcpy(h, state, sizeof h);
    const uint64_t off = h[rnn_hdr_slot(i)], n = h[rnn_hdr_slot(i) + 1];
    if (rnn_hdr_k(h, i) != (uint64_t)K || n != (uint64_t)N || n == 0 || off < RNN_PACK_HEADER ||
        off >= size)
        return NULL;
    const unsigned char *p = (const unsigned char *)state + off;
    return poprt__sgemm_packed_fits(p, size - off) && poprt__sgemm_packed_current(p) ? p : NULL;
}

/* A constant float input of rank 3, or NULL. */
static const float *rnn_const3(const poprt__prep_ctx *c, int i)
{
    if (c->n_in <= i || !c->in[i].type || !c->in[i].data ||
        c->in[i].type->elem != POPRT_DTYPE_FLOAT || c->in[i].type->rank != 3)
        return NULL;
    return c->in[i].data;
}

poprt_status poprt__x86_rnn_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    const char *op = c->node->op_type;
    const int64_t G = !strcmp(op, "LSTM") ? 4 : !strcmp(op, "GRU") ? 3 : 1;
    const float *W = rnn_const3(c, 1), *R = rnn_const3(c, 2);
    if ((!W && !R) || !c->in[0].type || c->in[0].type->rank != 3)
        return POPRT_OK;
    const poprt__type *wt = W ? c->in[1].type : NULL;
    const int64_t dirs = (W ? wt : c->in[2].type)->dims[0].value,
                  GH = (W ? wt : c->in[2].type)->dims[1].value, H = GH / G,
                  I = W ? wt->dims[2].value : 0;
    if (dirs < 1 || dirs > 2 || H < 1 || GH != G * H ||
        (R && (c->in[2].type->dims[0].value != dirs || c->in[2].type->dims[1].value != GH ||
               c->in[2].type->dims[2].value != H)))
        return POPRT_OK; /* (the kernel reports what is wrong) */
    const int layout = poprt__attr_i(c->node, "layout", 0) != 0;
    const int64_t batch = c->in[0].type->dims[layout ? 0 : 1].value,
                  steps = c->in[0].type->dims[layout ? 1 : 0].value;
    /* R for two or more batch rows (a batch of one runs the GEMV on R as
     * stored, rnn.c); W when the projection has more than
     * POPRT__RNN_FEW_ROWS rows, or rows not known yet */
    const int64_t px = batch <= 0 || steps <= 0 ? -1 : !layout || batch == 1 ? steps * batch
                                                                              : steps;
    const int pack_r = R && batch != 1 && H >= 4;
    const int pack_w = W && I >= 1 && (px < 0 || px > POPRT__RNN_FEW_ROWS);
    if (!pack_r && !pack_w)
        return POPRT_OK;
    const int split = G == 3 && !poprt__attr_i(c->node, "linear_before_reset", 0);
    const poprt__sgemm_variant *v = poprt__sgemm_best();
    uint64_t h[RNN_HDR_WORDS] = {RNN_PACK_MAGIC, (uint64_t)H};
    h[10] = (uint64_t)I;
    size_t total = RNN_PACK_HEADER;
    for (int i = 0; i < RNN_PARTS; i++) {
        const int64_t d = i < POPRT__RNN_PART_W ? i / 2 : i - POPRT__RNN_PART_W;
        const int p = i < POPRT__RNN_PART_W ? i % 2 : 0;
        const int w = i >= POPRT__RNN_PART_W;
        if (d >= dirs || (w ? !pack_w : !pack_r || p > split))
            continue;
        const int64_t N = w ? GH : split ? (p ? H : 2 * H) : GH;
        const size_t sz = (poprt__sgemm_pack_b_size(v, w ? I : H, N) + 63) & ~(size_t)63;
        if (sz == 0)
            return POPRT_OK;
        h[rnn_hdr_slot(i)] = total;
        h[rnn_hdr_slot(i) + 1] = (uint64_t)N;
        total += sz;
    }
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing %s '%s' weights",
                          op, c->node->name ? c->node->name : "");
    /* all of it (see packed_b_make) */
    memset(blob, 0, total);
    memcpy(blob, h, sizeof h);
    for (int i = 0; i < RNN_PARTS; i++) {
        const uint64_t off = h[rnn_hdr_slot(i)], N = h[rnn_hdr_slot(i) + 1];
        if (!N)
            continue;
        if (i >= POPRT__RNN_PART_W)
            poprt__sgemm_pack_b(v, NULL, 1, I, GH, W + (i - POPRT__RNN_PART_W) * GH * I, I,
                                blob + off);
        else
            poprt__sgemm_pack_b(v, NULL, 1, H, (int64_t)N,
                                R + ((i / 2) * GH + (i % 2 ? 2 * H : 0)) * H, H, blob + off);
    }
    *state = blob;
    *size = total;
    return POPRT_OK;
}

/* 0 when state is packed recurrent weights this CPU cannot run (or cut
 * short), else 1 */
static int rnn_pack_usable(const void *state, size_t size)
{
    uint64_t h[RNN_HDR_WORDS];
    if (!rnn_pack_ours(state, size))
        return 1;
    if (size <= RNN_PACK_HEADER)
        return 0;
    memcpy(h, state, sizeof h);
    for (int i = 0; i < RNN_PARTS; i++) {
        const uint64_t n = h[rnn_hdr_slot(i) + 1];
        if (n && !rnn_pack_part(state, size, i, (int64_t)rnn_hdr_k(h, i), (int64_t)n))
            return 0;
    }
    return 1;
}

static const void *rnn_part(const poprt__kctx *k, int i, int64_t K, int64_t N)
{
    return poprt__fast_gemm_fits(1, N, K) ? rnn_pack_part(k->state, k->state_size, i, K, N)
                                          : NULL;
}

static size_t rnn_part_ws(const void *b, int64_t M, int64_t N, int64_t K)
{
    return poprt__sgemm_packed_workspace(NULL, b, 0, 1, M, N, K);
}

static void rnn_run_part(poprt__kctx *k, void *ws, int64_t M, int64_t N, int64_t K,
                         const float *A, int64_t lda, const void *b, float beta, float *C,
                         int64_t ldc)
{
    poprt__par par = poprt__par_kctx(k);
    poprt__sgemm_packed(k ? &par : NULL, ws, 0, 1, M, N, K, 1.f, A, lda, NULL, NULL, 0, b, beta,
                        C, ldc);
}

static const poprt__gemm_engine rnn_engine = {
    fast_ws_size, poprt__fast_gemm, NULL, rnn_part, rnn_part_ws, rnn_run_part};

poprt_status poprt__x86_rnn(poprt__kctx *k)
{
    return poprt__rnn_op(k, 1, &rnn_engine);
}

poprt_status poprt__x86_gru(poprt__kctx *k)
{
    return poprt__rnn_op(k, 3, &rnn_engine);
}

poprt_status poprt__x86_lstm(poprt__kctx *k)
{
    return poprt__rnn_op(k, 4, &rnn_engine);
}

/* ---- ConvTranspose whose kernel equals its stride ---------------------------
 * (2-D, no padding or dilation, out = in * stride: the 2x2 / 2 upsampling
 * of decoders and detection heads). Each output element is one product sum
 * over the group's input channels at one input position and one tap:
 *   y[m][i s + kh][j s + kw] = b[m] + sum_c w[c][m][kh][kw] x[c][i][j],
 * c in order. Computed directly, 16 input columns at a time for four
 * output channels and both taps of a row (s 2: interleaved into 32 output
 * columns), instead of the GEMM into a column buffer and the scatter. */
typedef float tc_v16 __attribute__((vector_size(64)));
typedef int tc_i16 __attribute__((vector_size(64)));
enum { TC_MB = 4 };

typedef struct tconv_job {
    const poprt__conv_shape *p;
    const float *x, *w, *b;
    float *y;
    int64_t mblocks; /* per group: ceil(Mg / TC_MB) */
} tconv_job;

/* Output channels m0 .. m0+nm-1 (nm <= TC_MB) of group gi, input row i. */
POPRT__CLONES
static void tconv_row(const tconv_job *t, int64_t n, int64_t gi, int64_t m0, int nm, int64_t i)
{
    const poprt__conv_shape *p = t->p;
    const poprt__geom3 *g = &p->g;
    const int64_t W = g->in[2], S = g->s[2], KH = g->k[1], OW = g->out[2];
    const int64_t C = p->Cg, Mg = p->Mg, ksz = g->k_sz;
    const float *xg = t->x + (n * p->C + gi * C) * g->in_sz + i * W;
    /* w[c][m][kh][kw] of the group: (gi C + c) Mg ksz + m ksz + kh KW + kw */
    const float *wg = t->w + gi * C * Mg * ksz;
    float *yg = t->y + (n * p->M + gi * Mg) * g->out_sz;
    for (int64_t kh = 0; kh < KH; kh++) {
        int64_t j = 0;
        if (S == 2)
            for (; j + 16 <= W; j += 16) {
                tc_v16 acc[TC_MB][2];
                for (int mi = 0; mi < nm; mi++) {
                    const float bv = t->b ? t->b[gi * Mg + m0 + mi] : 0.0f;
                    acc[mi][0] = (tc_v16){0} + bv;
                    acc[mi][1] = acc[mi][0];
                }
                for (int64_t c = 0; c < C; c++) {
                    tc_v16 xv;
                    memcpy(&xv, xg + c * g->in_sz + j, sizeof xv);
                    const float *wc = wg + (c * Mg + m0) * ksz + kh * 2;
                    for (int mi = 0; mi < nm; mi++) {
                        acc[mi][0] += wc[mi * ksz] * xv;
                        acc[mi][1] += wc[mi * ksz + 1] * xv;
                    }
                }
                for (int mi = 0; mi < nm; mi++) {
                    float *o = yg + (m0 + mi) * g->out_sz + (i * 2 + kh) * OW + j * 2;
#if defined(__clang__)
                    const tc_v16 lo = __builtin_shufflevector(acc[mi][0], acc[mi][1], 0, 16, 1, 17,
                                                              2, 18, 3, 19, 4, 20, 5, 21, 6, 22,
                                                              7, 23);
                    const tc_v16 hi = __builtin_shufflevector(acc[mi][0], acc[mi][1], 8, 24, 9,
                                                              25, 10, 26, 11, 27, 12, 28, 13, 29,
                                                              14, 30, 15, 31);
#else
                    const tc_v16 lo = __builtin_shuffle(
                        acc[mi][0], acc[mi][1],
                        (tc_i16){0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23});
                    const tc_v16 hi = __builtin_shuffle(
                        acc[mi][0], acc[mi][1],
                        (tc_i16){8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31});
#endif
                    memcpy(o, &lo, sizeof lo);
                    memcpy(o + 16, &hi, sizeof hi);
                }
            }
        /* the rest (and strides other than 2): one column at a time */
        for (; j < W; j++)
            for (int mi = 0; mi < nm; mi++)
                for (int64_t kw = 0; kw < S; kw++) {
                    float acc = t->b ? t->b[gi * Mg + m0 + mi] : 0.0f;
                    for (int64_t c = 0; c < C; c++)
                        acc += wg[((c * Mg + m0 + mi) * KH + kh) * S + kw] *
                               xg[c * g->in_sz + j];
                    yg[(m0 + mi) * g->out_sz + (i * S + kh) * OW + j * S + kw] = acc;
                }
    }
}

static void tconv_task_fn(void *ctx, int64_t q0, int64_t q1)
{
    const tconv_job *t = ctx;
    const poprt__conv_shape *p = t->p;
    const int64_t H = p->g.in[1];
    for (int64_t q = q0; q < q1; q++) {
        /* q = ((n G + gi) mblocks + mb) H + i */
        const int64_t i = q % H, r = q / H, mb = r % t->mblocks, ng = r / t->mblocks;
        const int64_t m0 = mb * TC_MB;
        const int nm = (int)(p->Mg - m0 < TC_MB ? p->Mg - m0 : TC_MB);
        tconv_row(t, ng / p->G, ng % p->G, m0, nm, i);
    }
}

/* 1 when the direct form applies (float32, 2-D, kernel = stride) and pays:
 * at least a block of four output channels per group (fewer leave each
 * input load two products), and few input channels (the product sums are
 * short; longer ones the GEMM, whose packed operands stay in cache, does
 * better: 256 -> 128 at 32 x 32 took twice its time). */
static int tconv_direct(poprt__kctx *k, const poprt__conv_shape *p)
{
    if (p->Mg < TC_MB || p->Cg > 64)
        return 0;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    return x->dtype == POPRT_DTYPE_FLOAT && w->dtype == POPRT_DTYPE_FLOAT &&
           (!b || b->dtype == POPRT_DTYPE_FLOAT) && x->rank == 4 && poprt__tconv_patches(&p->g);
}

/* ---- ConvTranspose whose kernel equals its stride, W packed ---------------
 * When the session is compiled, a constant float32 W [C, Mg, KH, KW] of a
 * 2-D ConvTranspose with kernel = stride, no padding, dilation 1 and no
 * output padding is packed, group by group, as the fast GEMM's A operand
 * W_g^T ([Mg KH KW] x Cg; header {magic, G, rows, Cg, bytes per group}).
 * Each run then computes col = W_g^T X slab by slab of input rows (col
 * about 256 KiB, in cache for the scatter) on the packed A and writes
 * y = bias + col (poprt__tconv_scatter): the plain engine packed W^T again
 * for every slab (U-Net's 512 -> 256 2x2 upsampling at 14 x 14: 2 MB of
 * weights packed four times per run), and the direct kernel above reads
 * each input vector for eight products only. W itself stays (the other
 * paths read it when the shape or the CPU is not the packed one's). */
#define TCONV_PACK_MAGIC 0x314b504354525050ull /* "PPRTCPK1" */
#define TCONV_PACK_HEADER 64u

/* Attribute `name` of n: absent, or `count` values all equal to want[i]
 * (want NULL: all equal to one). */
static int tconv_attr_is(const poprt__node *n, const char *name, int count, const int64_t *want)
{
    const poprt__attr *a = poprt__node_attr(n, name);
    if (!a)
        return 1;
    if (a->type != POPRT__ATTR_INTS || a->n != count)
        return 0;
    for (int i = 0; i < count; i++)
        if (a->ints[i] != (want ? want[i] : 1))
            return 0;
    return 1;
}

poprt_status poprt__x86_conv_transpose_prepare(poprt__prep_ctx *c, void **state, size_t *size)
{
    *state = NULL;
    *size = 0;
    if (c->n_in < 2 || !c->in[0].type || !c->in[1].type || !c->in[1].data ||
        c->in[0].type->elem != POPRT_DTYPE_FLOAT || c->in[1].type->elem != POPRT_DTYPE_FLOAT ||
        c->in[0].type->rank != 4 || c->in[1].type->rank != 4 ||
        poprt__node_attr(c->node, "output_shape"))
        return POPRT_OK;
    const poprt__node *n = c->node;
    const poprt__type *wt = c->in[1].type;
    const int64_t C = wt->dims[0].value, Mg = wt->dims[1].value, KH = wt->dims[2].value,
                  KW = wt->dims[3].value, G = poprt__attr_i(n, "group", 1);
    const int64_t k2[2] = {KH, KW}, zeros[4] = {0, 0, 0, 0};
    const char *pad = poprt__attr_s(n, "auto_pad", "NOTSET");
    if (C <= 0 || Mg <= 0 || KH <= 0 || KW <= 0 || G < 1 || C % G ||
        (strcmp(pad, "NOTSET") != 0 && strcmp(pad, "VALID") != 0) ||
        !tconv_attr_is(n, "kernel_shape", 2, k2) || !poprt__node_attr(n, "strides") ||
        !tconv_attr_is(n, "strides", 2, k2) || !tconv_attr_is(n, "pads", 4, zeros) ||
        !tconv_attr_is(n, "dilations", 2, NULL) || !tconv_attr_is(n, "output_padding", 2, zeros))
        return POPRT_OK;
    const int64_t Cg = C / G, rows = Mg * KH * KW;
    const poprt__sgemm_variant *v = poprt__sgemm_best();
    if (!poprt__fast_gemm_fits(rows, 4, Cg))
        return POPRT_OK;
    const size_t per = (poprt__sgemm_pack_a_size(v, rows, Cg) + 63) & ~(size_t)63;
    if (!per)
        return POPRT_OK;
    const size_t total = TCONV_PACK_HEADER + per * (size_t)G;
    unsigned char *blob = poprt__aligned_alloc(total);
    if (!blob)
        return poprt__err(POPRT_STATUS_OUT_OF_MEMORY, "out of memory packing ConvTranspose weights");
    memset(blob, 0, total); /* (identical weights compare equal: poprt__program_share_states) */
    const uint64_t h[5] = {TCONV_PACK_MAGIC, (uint64_t)G, (uint64_t)rows, (uint64_t)Cg, per};
    memcpy(blob, h, sizeof h);
    const float *w = c->in[1].data;
    for (int64_t gi = 0; gi < G; gi++) /* W_g is [Cg][rows]: A = W_g^T */
        poprt__sgemm_pack_a(v, NULL, 1, rows, Cg, w + gi * Cg * rows, rows,
                            blob + TCONV_PACK_HEADER + (size_t)gi * per);
    *state = blob;
    *size = total;
    return POPRT_OK;
}

/* The packed W^T of group 0 of a state poprt__x86_conv_transpose_prepare
 * made, NULL when state is not one; *per: bytes per group. */
static const unsigned char *tconv_packed(const void *state, size_t size, uint64_t h[5])
{
    if (!state || size < TCONV_PACK_HEADER)
        return NULL;
    memcpy(h, state, 5 * sizeof *h);
    if (h[0] != TCONV_PACK_MAGIC || h[4] == 0 || h[1] > (size - TCONV_PACK_HEADER) / h[4])
        return NULL;
    return (const unsigned char *)state + TCONV_PACK_HEADER;
}

/* Runs the ConvTranspose on its packed weights: 1 done (*st set), 0 when
 * there are none for this shape and CPU. */
static int tconv_run_packed(poprt__kctx *k, const poprt__conv_shape *p, poprt_status *st)
{
    const poprt__geom3 *g = &p->g;
    const poprt__tval *x = poprt__kin(k, 0), *w = poprt__kin(k, 1), *b = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    uint64_t h[5];
    const unsigned char *apack = tconv_packed(k->state, k->state_size, h);
    const int64_t rows = p->Mg * g->k_sz;
    if (!apack || x->dtype != POPRT_DTYPE_FLOAT || w->dtype != POPRT_DTYPE_FLOAT ||
        (b && b->dtype != POPRT_DTYPE_FLOAT) || y->dtype != POPRT_DTYPE_FLOAT || x->rank != 4 ||
        !poprt__tconv_patches(g) || h[1] != (uint64_t)p->G || h[2] != (uint64_t)rows ||
        h[3] != (uint64_t)p->Cg)
        return 0;
    for (int64_t gi = 0; gi < p->G; gi++)
        if (!poprt__sgemm_packed_fits(apack + gi * h[4], h[4]))
            return 0; /* packed for another CPU (an executable file) */
    /* slabs of R input rows, col about 256 KiB (as the plain path) */
    const int64_t W = g->in[2], nrows = g->in[0] * g->in[1];
    int64_t R = (65536 / rows) / (W > 0 ? W : 1);
    R = R < 1 ? 1 : R > nrows ? nrows : R;
    float *col = poprt__kctx_scratch(k, (size_t)(rows * R * W) * sizeof(float));
    void *ws = poprt__kctx_scratch(
        k, poprt__sgemm_packed_workspace(apack, NULL, 0, 0, rows, R * W, p->Cg) + 1);
    if (!col || !ws) {
        *st = poprt__ref_oom(k);
        return 1;
    }
    const float *xf = x->data, *bf = b ? b->data : NULL;
    float *yf = y->data;
    const poprt__par par = poprt__par_kctx(k);
    for (int64_t n = 0; n < p->N; n++)
        for (int64_t gi = 0; gi < p->G; gi++)
            for (int64_t r0 = 0; r0 < nrows; r0 += R) {
                const int64_t r1 = r0 + R < nrows ? r0 + R : nrows, npos = (r1 - r0) * W;
                if (poprt__sgemm_packed(&par, ws, 0, 0, rows, npos, p->Cg, 1.0f, NULL, 0,
                                        apack + gi * h[4],
                                        xf + (n * p->C + gi * p->Cg) * g->in_sz + r0 * W,
                                        g->in_sz, NULL, 0.0f, col, npos) != 0) {
                    *st = POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL,
                                          "packed ConvTranspose weights do not fit the GEMM");
                    return 1;
                }
                poprt__tconv_scatter(k, col, g, bf ? bf + gi * p->Mg : NULL, p->Mg, r0, r1, npos,
                                     yf + (n * p->M + gi * p->Mg) * g->out_sz);
            }
    *st = POPRT_OK;
    return 1;
}

int poprt__x86_tconv_state_usable(const void *state, size_t size)
{
    uint64_t h[5];
    const unsigned char *apack = tconv_packed(state, size, h);
    return !apack || poprt__sgemm_packed_current(apack);
}

poprt_status poprt__x86_conv_transpose(poprt__kctx *k)
{
    poprt__conv_shape p;
    poprt_status st = poprt__conv_setup(k, 1, &p);
    if (st)
        return st;
    poprt__tval *y = poprt__kout(k, 0);
    if (y->numel > 0 && tconv_run_packed(k, &p, &st))
        return st;
    if (y->numel == 0 || !tconv_direct(k, &p))
        return poprt__conv_transpose_op(k, &plain_engine);
    const poprt__tval *b = poprt__kin(k, 2);
    tconv_job t = {&p, poprt__kin(k, 0)->data, poprt__kin(k, 1)->data, b ? b->data : NULL,
                   y->data, poprt__ceil_div(p.Mg, TC_MB)};
    const int64_t items = p.N * p.G * t.mblocks * p.g.in[1];
    poprt__kctx_parallel_for(
        k, items, poprt__ref_grain(TC_MB * p.Cg * p.g.in[2] * p.g.k_sz, 1 << 15), tconv_task_fn,
        &t);
    return POPRT_OK;
}

poprt_status poprt__x86_deform_conv(poprt__kctx *k)
{
    return poprt__deform_conv_op(k, &plain_engine);
}
