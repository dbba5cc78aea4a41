/* Integer GEMM: C[M x N] (int32) = A[M x K] (uint8) * B[K x N] (int8), the
 * engine of MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv
 * (x86/quant_ops.c).
 *
 * B is packed once (at session creation for constant weights) into panels
 * of 16 columns, K in groups of 4 (zero-padded): panel p, group q holds
 * B[4q + t][16p + j] at byte q*64 + j*4 + t. Every variant reads the same
 * layout, so a packed B never depends on the CPU. The pack also records the
 * column sums of the stored values, for the zero-point correction:
 *   sum_k (a - az)(b - bz_j) = dot(a, b) - bz_j * rowsum(a) - az * colsum_j
 *                              + K * az * bz_j
 * Signed operands are shifted into the unsigned/signed pair the instructions
 * take: an int8 A is stored as a + 128 with az + 128, a uint8 B as b - 128
 * with bz - 128; the sums are unchanged. All sums are int32 with wrap-around
 * (exact whenever the true value fits: K * 255 * 255 < 2^31, K <= 33025).
 *
 * Variants (igemm_kernels.inc, best first): AMX-INT8 (tdpbusd on 32 x 32
 * tiles, the rest of a block on the VNNI micro-kernel, igemm_amx.c),
 * AVX-512 VNNI (vpdpbusd,
 * igemm_avx512.c), AVX2 for 7-bit weights (vpmaddubsw's pair sums of
 * uint8 x int8 saturate at 32767, but not when every packed B value lies in
 * [-64, 63]: 2 * 255 * 64 = 32640; igemm_avx2.c), AVX2 (operands widened to
 * int16 and multiplied with vpmaddwd: pair sums of at most 2 * 255 * 128
 * never saturate, igemm_avx2.c) and portable C (igemm.c). A variant marked
 * b7 serves only a packed B whose values all fit 7 bits (the pack records
 * it, poprt__igemm_packed_b7): given another B, poprt__igemm runs the first
 * usable variant after it that is not so marked. Each also requantizes rows of
 * accumulators (poprt__igemm_rq_fn) the way the reference kernels do, in
 * double with round-half-to-even. Integer results are exact, so every
 * variant gives the same bits for any thread count. Nothing here allocates:
 * callers pass a workspace of poprt__igemm_ws_size bytes. */
#ifndef POPRT_X86_IGEMM_H
#define POPRT_X86_IGEMM_H

#include <stddef.h>
#include <stdint.h>
#include "kernels/x86/cpu.h"
#include "kernels/x86/sgemm.h"

#define POPRT__IGEMM_PANEL 16 /* columns per packed panel */
#define POPRT__IGEMM_NB 256   /* at most this many columns per epilogue block */

/* Micro-kernel: the mr x nr (mr <= MR, nr <= NR) tile
 *   c[i*ldc + j] (+)= sum_{q<kq} sum_{t<4} a[i*lda + 4q + t] * B[4q + t][j]
 * (accumulate 0: stores, 1: adds to c). a: rows of at least 4*kq readable
 * bytes (a variant with a16 set: rows of 4*kq int16 values, the driver's
 * widened copy of A, a and lda still in bytes). b: the tile's first column
 * in its packed panel (a multiple of NR columns from the start); columns
 * past 16 are in the following panels, pstride bytes apart. */
typedef void (*poprt__igemm_ukr)(int64_t kq, int mr, int nr, const uint8_t *a, int64_t lda,
                                 const int8_t *b, int64_t pstride, int32_t *c, int64_t ldc,
                                 int accumulate);

/* Per-column data of a requantization: for column j of a row with row sum
 * rs, v = c[j] + colterm[j] - bz[j] * rs (int32, wrapping), then
 *   out[j] = sat(round_half_even(((double)v + bias[j]) * mult[j] + yz))
 * in [lo, hi] (the reference kernels' arithmetic); bz NULL: all zero.
 * Stored as uint8 (s8 0) or int8 (s8 1); rq_i32 stores v unscaled. */
typedef struct poprt__igemm_cols {
    const int32_t *colterm, *bz;
    const double *bias; /* NULL: all zero */
    const float *mult;
    double yz;
    int lo, hi, s8;
} poprt__igemm_cols;
typedef void (*poprt__igemm_rq_fn)(const poprt__igemm_cols *q, int64_t j0, int64_t n,
                                   const int32_t *c, int32_t rs, void *out);
typedef void (*poprt__igemm_fix_fn)(const poprt__igemm_cols *q, int64_t j0, int64_t n,
                                    const int32_t *c, int32_t rs, int32_t *out);
/* FusedMatMulInteger's float output (deq): v as for fix, then
 *   out[j] = (float)v * s[j] (+ b[j] when b is not NULL)
 * one float multiply and one float add, as poprt__q_float_cols (ref/quant.h)
 * does them; s_all / b_all 0: one value for every column. */
typedef struct poprt__igemm_deq {
    const float *s, *b;
    int s_all, b_all;
} poprt__igemm_deq;
typedef void (*poprt__igemm_deq_fn)(const poprt__igemm_cols *q, const poprt__igemm_deq *d,
                                    int64_t j0, int64_t n, const int32_t *c, int32_t rs,
                                    float *out);

/* Quantization of float32 activations (QuantizeLinear, DynamicQuantizeLinear
 * per tensor), the reference's arithmetic: minmax lowers *mn / raises *mx
 * to the smallest / largest of x[0..n) (NaN ignored); quant stores
 * y[i] = sat(round_half_even(x[i] / scale) + zp) in [lo, hi] (NaN: 0) as
 * uint8 (s8 0) or int8. */
typedef void (*poprt__igemm_minmax_fn)(const float *x, int64_t n, float *mn, float *mx);
typedef void (*poprt__igemm_quant_fn)(const float *x, int64_t n, float scale, float zp, int lo,
                                      int hi, int s8, void *y);

typedef struct poprt__igemm_variant {
    const char *name; /* "avx512_vnni", "avx2", "scalar" */
    poprt__isa isa;   /* level the CPU must have */
    uint32_t flags;   /* and these POPRT__CPU_* features */
    int mr, nr;
    poprt__igemm_ukr ukr;
    /* columns [j0, j0 + n) of one row: q's arrays are indexed by j0 + j,
     * c and out by j */
    poprt__igemm_rq_fn rq;
    poprt__igemm_fix_fn fix;
    poprt__igemm_deq_fn deq;
    poprt__igemm_minmax_fn minmax;
    poprt__igemm_quant_fn quant;
    void (*enter)(void); /* run on a thread before its micro-kernel calls (AMX:
                          * the tile configuration), or NULL */
    int a16; /* 1: the micro-kernel reads A widened to int16, which the
              * driver writes once per block of rows and K (AVX2: its
              * multiply takes int16 pairs, and widening in the micro-kernel
              * took a shuffle per row and step, once per 8 columns) */
    int b7;  /* 1: exact only for a packed B whose values all lie in
              * [-64, 63] (see above) */
} poprt__igemm_variant;

/* The kernel list (igemm_kernels.inc), best first; the last is portable. */
extern const poprt__igemm_variant poprt__igemm_variants[];
extern const int poprt__igemm_n_variants;
int poprt__igemm_usable(const poprt__igemm_variant *v);
/* The variant the operators use: the first usable one, or the forced one. */
const poprt__igemm_variant *poprt__igemm_best(void);
/* For tests and benchmarks of one process: makes poprt__igemm_best()
 * return v (a usable entry of the list; NULL: back to the CPU's choice).
 * Not to be called while kernels run. */
void poprt__igemm_force(const poprt__igemm_variant *v);

/* ---- packed B -------------------------------------------------------------
 * A 64-byte header {magic, K, N, kq, npan}, int32 colsum[npan * 16], then
 * the panels. */
size_t poprt__igemm_pack_size(int64_t K, int64_t N);
/* Packs B[k][n] = src[koff[k] + n*cs] (koff NULL: k*rs; int8, or uint8
 * stored minus 128 when b_u8) into dst (64-byte aligned,
 * poprt__igemm_pack_size bytes). */
void poprt__igemm_pack(int64_t K, int64_t N, const void *src, const int64_t *koff, int64_t rs,
                       int64_t cs, int b_u8, void *dst);
/* 1 when the size bytes at p are a packed B of K x N as written above. */
int poprt__igemm_packed_fits(const void *p, size_t size, int64_t K, int64_t N);
const int32_t *poprt__igemm_colsum(const void *packed);
/* 1 when every value of the packed B lies in [-64, 63] (recorded by
 * poprt__igemm_pack; weights quantized to 7 bits, as ONNX Runtime's
 * reduce_range and float_to_int8's reduce_range=1 write them). */
int poprt__igemm_packed_b7(const void *packed);

/* Epilogue: fn(ctx, m0, m1, n0, n1, c, ldc, scratch) once per finished
 * block of C (at most POPRT__IGEMM_MB x POPRT__IGEMM_NB), c pointing at its
 * element (m0, n0), on the thread that computed it; it may overwrite the
 * block, and scratch holds POPRT__IGEMM_EPI_BYTES bytes (64-byte aligned)
 * of that thread's own. */
#define POPRT__IGEMM_MB 96
#define POPRT__IGEMM_EPI_BYTES ((size_t)POPRT__IGEMM_MB * (POPRT__IGEMM_NB + 16) * 4)
typedef struct poprt__igemm_epi {
    void (*fn)(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int32_t *c,
               int64_t ldc, void *scratch);
    void *ctx;
} poprt__igemm_epi;

/* Workspace bytes of poprt__igemm for nthreads (>= 1) threads (for a b7
 * variant, enough for the variant that stands in for it too). */
size_t poprt__igemm_ws_size(const poprt__igemm_variant *v, int64_t M, int64_t N, int nthreads);
/* The product with variant v (NULL: the best; a b7 variant and a B not
 * within 7 bits: the first usable variant after it without b7) over par's
 * threads (par NULL or nthreads 1: inline). A: rows lda bytes apart, each with 4 * ceil(K/4)
 * readable bytes (the pad multiplies zeros). Blocks of C go to epi, never
 * to memory the caller sees. */
void poprt__igemm(const poprt__igemm_variant *v, const poprt__par *par, int nthreads, void *ws,
                  int64_t M, int64_t N, int64_t K, const uint8_t *A, int64_t lda,
                  const void *Bpacked, const poprt__igemm_epi *epi);

/* d[j*ds + i] = s[i*ss + j] for i < rows, j < cols: the int32 outputs of
 * ConvInteger back to channel-major, 4 x 4 blocks in SSE2 registers. */
void poprt__igemm_transpose_i32(const int32_t *s, int64_t ss, int32_t *d, int64_t ds,
                                int64_t rows, int64_t cols);

/* d[j*ds + i] = s[i*ss + j] ^ flip for i < rows, j < cols: the byte
 * transposes of the convolutions (channel-major to channels-last and back),
 * 16 x 16 blocks in SSE2 registers. */
void poprt__igemm_transpose_u8(const uint8_t *s, int64_t ss, uint8_t *d, int64_t ds, int64_t rows,
                               int64_t cols, uint8_t flip);

/* The row-sum of K bytes (the A zero-point term). */
int32_t poprt__igemm_rowsum(const uint8_t *a, int64_t K);

#define POPRT__IGEMM_VARIANT(isa, level, flags, mr, nr)                                           \
    void poprt__igemm_ukr_##isa(int64_t kq, int m, int n, const uint8_t *a, int64_t lda,          \
                                const int8_t *b, int64_t pstride, int32_t *c, int64_t ldc,        \
                                int accumulate);                                                  \
    void poprt__igemm_rq_##isa(const poprt__igemm_cols *q, int64_t j0, int64_t n,                 \
                               const int32_t *c, int32_t rs, void *out);                          \
    void poprt__igemm_fix_##isa(const poprt__igemm_cols *q, int64_t j0, int64_t n,                \
                                const int32_t *c, int32_t rs, int32_t *out);                      \
    void poprt__igemm_deq_##isa(const poprt__igemm_cols *q, const poprt__igemm_deq *d,            \
                                int64_t j0, int64_t n, const int32_t *c, int32_t rs, float *out); \
    void poprt__igemm_minmax_##isa(const float *x, int64_t n, float *mn, float *mx);              \
    void poprt__igemm_quant_##isa(const float *x, int64_t n, float scale, float zp, int lo,       \
                                  int hi, int s8, void *y);
#include "kernels/x86/igemm_kernels.inc"
#undef POPRT__IGEMM_VARIANT

#endif
