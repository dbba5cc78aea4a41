/* Fast float32 GEMM: C = alpha * op(A) * op(B) + beta * C, row-major,
 * op(X) = X or X^T, op(A) M x K, op(B) K x N (the contract of
 * poprt__ref_sgemm, which stays the oracle).
 *
 * Structure (Goto/BLIS): A is packed into MR-row micro-panels and B into
 * NR-column micro-panels per K block of at most KC; a register-blocked
 * MR x NR micro-kernel (one per ISA, listed in sgemm_kernels.inc) runs over
 * them. The loop order depends on the size of packed A: when it fits in L2
 * (all of it, or one K block of it: the M = 128 MatMuls of transformers),
 * each B panel is run against every A panel in turn, so B (often a weight
 * matrix coming from memory) is read once per call and threads split N
 * only; otherwise an L2-sized block of B panels runs against one A panel
 * at a time (packed as it is reached when one such block covers N). Threads
 * split the output into blocks of whole MR x NR tiles over M and N, never
 * over K: every C element is computed by the same instruction sequence
 * whatever the thread count or the block it falls in, so results are
 * bit-identical for any number of threads (they may differ from
 * poprt__ref_sgemm in the last bits).
 *
 * Memory: the caller passes a 64-byte aligned workspace of at least
 * poprt__sgemm_workspace() bytes (kernels take it from poprt__kctx_scratch);
 * nothing here allocates. Weights can be packed once with
 * poprt__sgemm_pack_a / poprt__sgemm_pack_b and used by poprt__sgemm_packed. */
#ifndef POPRT_X86_SGEMM_H
#define POPRT_X86_SGEMM_H

#include <stddef.h>
#include <stdint.h>
#include "kernels/x86/cpu.h"

struct poprt__kctx;

/* A parallel-for: run(self, n, grain, fn, ctx) calls fn(ctx, b, e) over
 * disjoint ranges covering [0, n), possibly on several threads, and returns
 * when all are done. NULL (or run NULL) means "inline, one thread". */
typedef struct poprt__par {
    void (*run)(void *self, int64_t n, int64_t grain, void (*fn)(void *, int64_t, int64_t),
                void *ctx);
    void *self;
    int threads; /* how many run shares the items among (0: not known) */
} poprt__par;

/* A parallel-for over the kernel context's threads (poprt__kctx_parallel_for). */
poprt__par poprt__par_kctx(struct poprt__kctx *k);

/* Micro-kernel: the mr x nr (mr <= MR, nr <= NR) corner of
 *   acc = sum_{p<kc} a[p*MR + r] * b[p*bs + j]
 * then C = alpha*acc (beta == 0, C not read) or C = alpha*acc + beta*C.
 * a is a packed A micro-panel (zero-padded to MR rows), b holds NR readable
 * columns per k (a packed panel, bs = NR, or B itself, bs = ldb). */
typedef void (*poprt__sgemm_ukr)(int64_t kc, int mr, int nr, const float *a, const float *b,
                                 int64_t bs, float *c, int64_t ldc, float alpha, float beta);
/* Packs rows [0, mr) x k [0, kc) of op(A) (x(r, p) = src[r*rs + p*ps]) into
 * dst[p*MR + r], zero rows mr..MR-1. Likewise for B with columns. NULL in a
 * variant means the portable packer. */
/* Direct-convolution micro-kernel: the same tile with the sum running over
 * kc channels and ntaps taps, channel-major: A holds (channel, tap) rows,
 * and tap t of channel ch reads B at b + ch*bs + toff[t]:
 *   acc = sum_{ch<kc} sum_{t<ntaps} a[(ch*ntaps + t)*MR + r] * b[ch*bs + toff[t] + j]
 * in that order, then C as above. */
typedef void (*poprt__sgemm_ukr_taps)(int64_t kc, int64_t ntaps, const int64_t *toff, int mr,
                                      int nr, const float *a, const float *b, int64_t bs,
                                      float *c, int64_t ldc, float alpha, float beta);
typedef void (*poprt__sgemm_pack_fn)(int64_t kc, int n, const float *src, int64_t rs,
                                     int64_t ps, int width, float *dst);
/* One row of A against np (1..4) whole B panels, panel i at b + i * pstride
 * (rows bs apart within it): per panel the same sums, in the same order,
 * and the same C update as ukr with mr = 1 and nr = NR, C the np * NR
 * floats at c. The panels' loads interleave in one k loop: a single row's
 * product is bound by reading B, and one core reads a few streams from
 * memory faster than one (Zen 3: 4 streams 1.7x the bytes per second). */
typedef void (*poprt__sgemm_ukr_row)(int64_t kc, int np, const float *a, const float *b,
                                     int64_t bs, int64_t pstride, float *c, float alpha,
                                     float beta);

typedef struct poprt__sgemm_variant {
    const char *name;       /* <isa>_<MR>x<NR> */
    poprt__isa isa;         /* level the CPU must have */
    int mr, nr;             /* register tile */
    int kc;                 /* K block (A panel + B panel stay in L1/L2) */
    int nc;                 /* columns of B per L2 block */
    poprt__sgemm_ukr ukr;
    poprt__sgemm_ukr_taps ukr_taps; /* NULL: callers loop over taps with ukr */
    poprt__sgemm_pack_fn pack; /* transposing packer, or NULL */
    int kpack;              /* k values per packed 32-bit word: 1 (fp32) or 2 (bf16) */
    uint32_t need;          /* POPRT__CPU_* bits beyond the level (AVX512_BF16) */
    /* A's packer when A's panels are laid out otherwise than B's (AMX:
     * a[r*kw + p], row by row), else NULL (pack for both, a[p*MR + r]) */
    poprt__sgemm_pack_fn pack_a;
    int kalign; /* the 32-bit words of a packed row are padded with zeros to
                 * a multiple of this (AMX: 16, a tile's depth), and K
                 * blocks hold a multiple of 2 * kalign k values */
    void (*enter)(void); /* run by the driver on a thread before it calls ukr
                          * there (AMX: the tile configuration), or NULL */
    poprt__sgemm_ukr_row ukr_row; /* for products of one row, or NULL */
} poprt__sgemm_variant;

/* The kernel list (sgemm_kernels.inc): among the usable variants of one
 * kpack, the highest ISA level wins, then the first in the list. */
extern const poprt__sgemm_variant poprt__sgemm_variants[];
extern const int poprt__sgemm_n_variants;
/* 1 when the CPU (after POPRT_ISA) can run v. */
int poprt__sgemm_usable(const poprt__sgemm_variant *v);
/* The best usable float32 variant of the list (the portable one always is usable). */
const poprt__sgemm_variant *poprt__sgemm_best(void);
/* Among the usable variants of first's ISA level and kpack, the one whose
 * MR x NR tiles cover an M x N output with clearly less padding than
 * first's (below 0.97 of it, then of the pick so far): their speeds differ
 * by a few percent, padded rows and columns are computed in full (M = 16
 * output channels: 14-row tiles compute 28 rows, 6-row tiles 18; 128 rows
 * of activations: 12-row tiles 132, 14-row ones 140). first when none. */
const poprt__sgemm_variant *poprt__sgemm_fit(const poprt__sgemm_variant *first, int64_t M,
                                             int64_t N);
/* The best usable bfloat16 variant (kpack 2: AMX tiles, else AVX512-BF16),
 * or NULL when the CPU has none. A bfloat16 variant takes the same float operands and gives the same
 * float C, but rounds A and B to bfloat16 (round to nearest even) when it
 * packs them and accumulates their products in float32: each product's
 * relative error is at most 2^-8 (the session option matmul_precision). Packed
 * operands hold k in pairs, 32 bits per pair; B is never read in place. */
const poprt__sgemm_variant *poprt__sgemm_best_bf16(void);

/* Workspace bytes poprt__sgemm needs for this problem. */
size_t poprt__sgemm_workspace(const poprt__sgemm_variant *v, int transA, int transB, int64_t M,
                              int64_t N, int64_t K);
/* The GEMM with variant v (NULL: poprt__sgemm_best()). ws: 64-byte aligned,
 * >= poprt__sgemm_workspace(v, ...) bytes; ws NULL falls back to
 * poprt__ref_sgemm. par may be NULL. */
void poprt__sgemm(const poprt__sgemm_variant *v, const poprt__par *par, void *ws, int transA,
                  int transB, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* ---- pre-packed operands ------------------------------------------------
 * A packed operand is self-describing (variant, rows/cols, K blocking); it
 * is only valid for the variant it was packed for, on a CPU that can run it
 * (check poprt__sgemm_usable(poprt__sgemm_packed_variant(p)) after loading
 * packed weights from a file). The bytes do not depend on thread count. */
size_t poprt__sgemm_pack_a_size(const poprt__sgemm_variant *v, int64_t M, int64_t K);
size_t poprt__sgemm_pack_b_size(const poprt__sgemm_variant *v, int64_t K, int64_t N);
/* op(A) (M x K) / op(B) (K x N) into dst (64-byte aligned, size above). */
void poprt__sgemm_pack_a(const poprt__sgemm_variant *v, const poprt__par *par, int transA,
                         int64_t M, int64_t K, const float *A, int64_t lda, void *dst);
void poprt__sgemm_pack_b(const poprt__sgemm_variant *v, const poprt__par *par, int transB,
                         int64_t K, int64_t N, const float *B, int64_t ldb, void *dst);
/* The variant a packed operand was made for, or NULL if p is not one. */
const poprt__sgemm_variant *poprt__sgemm_packed_variant(const void *p);
/* 1 when the size bytes at p hold a packed operand as this library writes
 * it (header consistent with its variant, data complete): what a prepared
 * state read from an executable file must pass before it is used. */
int poprt__sgemm_packed_fits(const void *p, size_t size);
/* A packed B its producer writes itself, word by word (variants with kpack
 * 2, whose B is never read in place): poprt__sgemm_pack_b_begin writes the
 * header of a K x N operand at dst (poprt__sgemm_pack_b_size bytes, 64-byte
 * aligned) and fills *l. K block b (k from b * kcb, the last one shorter)
 * holds npanels panels of nr columns, each `words` rows of nr 32-bit words:
 * word (p, j), p < pairs, is bf16(B(k0 + 2p, i*nr + j)) | bf16(B(k0 + 2p + 1,
 * i*nr + j)) << 16 (poprt__sgemm_pack_bf16's words); rows pairs..words-1,
 * and the columns past N, are zero. The producer writes all of them. */
typedef struct poprt__sgemm_b_layout {
    uint32_t *data;
    int64_t K, N, kcb, nkb, npanels;
    int nr, kalign;
} poprt__sgemm_b_layout;
void poprt__sgemm_pack_b_begin(const poprt__sgemm_variant *v, int64_t K, int64_t N, void *dst,
                               poprt__sgemm_b_layout *l);
/* Panel i of K block b: its first word; *pairs and *words as above. */
uint32_t *poprt__sgemm_b_panel(const poprt__sgemm_b_layout *l, int64_t b, int64_t i,
                               int64_t *pairs, int64_t *words);
/* 1 when the packed operand at p (its header read, not its size) is laid
 * out as its variant packs today (panel width, K blocking) and that
 * variant can run here: prepared data from an executable file that fails
 * this is prepared again. */
int poprt__sgemm_packed_current(const void *p);
/* Workspace for poprt__sgemm_packed (packs the operands given unpacked). */
size_t poprt__sgemm_packed_workspace(const void *Apacked, const void *Bpacked, int transA,
                                     int transB, int64_t M, int64_t N, int64_t K);
/* C = alpha * op(A) op(B) + beta * C where A and/or B come pre-packed
 * (Apacked/Bpacked non-NULL; then A/lda/transA resp. B/ldb/transB are
 * ignored). Both packed operands must share a variant and match M, N, K.
 * Returns 0, or -1 (nothing written) when they do not. */
int poprt__sgemm_packed(const poprt__par *par, void *ws, int transA, int transB, int64_t M,
                        int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                        const void *Apacked, const float *B, int64_t ldb, const void *Bpacked,
                        float beta, float *C, int64_t ldc);
/* An epilogue for poprt__sgemm_packed_epi: fn(ctx, m0, m1, n0, n1) runs once
 * per finished block of C (rows [m0, m1), columns [n0, n1); the blocks
 * cover C exactly once) on the thread that computed it, right after its
 * last K block, while the block is in cache: the place for a bias, an
 * activation or a transposed copy. */
typedef struct poprt__sgemm_epi {
    void (*fn)(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1);
    void *ctx;
} poprt__sgemm_epi;
/* poprt__sgemm_packed, then epi on each block (epi NULL: none). */
int poprt__sgemm_packed_epi(const poprt__par *par, void *ws, int transA, int transB, int64_t M,
                            int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                            const void *Apacked, const float *B, int64_t ldb,
                            const void *Bpacked, float beta, float *C, int64_t ldc,
                            const poprt__sgemm_epi *epi);

/* Micro-kernels and packers of the ISA files (declared for the kernel list). */
#define POPRT__SGEMM_DECL(isa, mr, nr)                                                      \
    void poprt__sgemm_ukr_##isa##_##mr##x##nr(int64_t kc, int m, int n, const float *a,      \
                                              const float *b, int64_t bs, float *c,          \
                                              int64_t ldc, float alpha, float beta);
#define POPRT__SGEMM_VARIANT(isa, level, mr, nr, kc, nc, pack, kpack, need)               \
    POPRT__SGEMM_DECL(isa, mr, nr)
#include "kernels/x86/sgemm_kernels.inc"
#undef POPRT__SGEMM_VARIANT
#define POPRT__SGEMM_TAPS_DECL(mr, nr)                                                      \
    void poprt__sgemm_ukr_taps_avx512_##mr##x##nr(int64_t kc, int64_t ntaps,                 \
                                                  const int64_t *toff, int m, int n,         \
                                                  const float *a, const float *b, int64_t bs, \
                                                  float *c, int64_t ldc, float alpha,        \
                                                  float beta);
POPRT__SGEMM_TAPS_DECL(14, 32)
POPRT__SGEMM_TAPS_DECL(12, 32)
POPRT__SGEMM_TAPS_DECL(6, 64)
#undef POPRT__SGEMM_TAPS_DECL
void poprt__sgemm_pack_avx512(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                              int width, float *dst);
void poprt__sgemm_pack_avx2(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                            int width, float *dst);
void poprt__sgemm_row_avx2_6x16(int64_t kc, int np, const float *a, const float *b, int64_t bs,
                                int64_t pstride, float *c, float alpha, float beta);
/* bfloat16 packers: dst[p*width + r] (32 bits) = bf16(x(r, 2p)) | bf16(x(r, 2p+1)) << 16
 * for p < ceil(kc/2) (x(r, kc) = 0 when kc is odd), zero rows n..width-1. */
void poprt__sgemm_pack_bf16(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                            int width, float *dst);
void poprt__sgemm_pack_bf16_avx512(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                                   int width, float *dst);
/* The AMX variant's packers (sgemm_bf16_amx.c): B as above with the pairs
 * zero-padded to a multiple of 16; A row by row, dst[r*kw + p], kw =
 * ceil(kc/2) rounded up to 16, zero words beyond the pairs and rows. */
void poprt__sgemm_pack_a_bf16_amx(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                                  int width, float *dst);
void poprt__sgemm_pack_b_bf16_amx(int64_t kc, int n, const float *src, int64_t rs, int64_t ps,
                                  int width, float *dst);
void poprt__sgemm_enter_amx(void);
/* The bfloat16 micro-kernels' C update (sgemm_bf16_avx512.c, AVX-512): from
 * the sums a k loop saved in acc (rows of 32 floats), rows [0, mr) and nr
 * columns of C = alpha * acc (beta 0, C not read) or alpha * acc + beta * C. */
void poprt__sgemm_bf16_store(const float *acc, int mr, int nr, float *c, int64_t ldc,
                             float alpha, float beta);
/* f as bfloat16 bits, rounded to nearest even (NaN stays a quiet NaN). */
uint32_t poprt__sgemm_bf16_bits(float f);

#endif
