/* Blocked direct convolution (AVX-512), the layout ONNX Runtime calls
 * NCHWc: channels are kept in blocks of CB (16, or all of them when a conv
 * has fewer than 16 input channels), so the CB values of one position are
 * one contiguous run.
 *
 *   input   xb[cbi][hp][wp][i]      the zero-padded input, block cbi holds
 *                                   channels cbi*CB + i (zero past C)
 *   weights wb[og][cbi][kh][kw][i][nb*16 + o]
 *                                   per group og of up to 4 blocks of 16
 *                                   output channels (nb = blocks in it);
 *                                   the AVX2 variant's wb[og][n][cbi][kh][kw][i][o]
 *                                   (the variant's wlayout)
 *   output  a run of positions of a group: out[n][q][16], n < nb
 *
 * An output tile is up to 6 consecutive positions of the plane x nb blocks of
 * 16 output channels: 24 zmm accumulators, started from the bias. For each
 * input channel of a block and each tap, nb weight vectors are loaded and
 * each position's input value is broadcast against them, so every
 * accumulator gets one FMA per (channel, tap): sum over c of cbi-major,
 * then kh, kw, i, in that order (the same order for every thread count and
 * every tile, so results do not depend on how the work is split). */
#ifndef POPRT_X86_CONV_BLOCKED_H
#define POPRT_X86_CONV_BLOCKED_H

#include <stdint.h>
#include "kernels/x86/cpu.h"

typedef struct poprt__convb_geom {
    int64_t cb;    /* channels per input block: 1..16 */
    int64_t ncb;   /* input blocks */
    int64_t Wp;    /* padded input row pitch, in positions */
    int64_t plane; /* floats between input blocks (Hp * Wp * cb) */
    int64_t KH, KW, sh, sw, dh, dw;
    int64_t OW;
    int64_t split; /* rows path, column stride 2: each padded row holds its
                    * even columns, then from `split` on its odd ones */
    float lo, hi;  /* the bounds a tile's relu 2 clips to (below) */
} poprt__convb_geom;

/* (the ISA functions are declared on x86-64 only; other CPUs get the
 * never-called stubs at the end) */
#if defined(__x86_64__)
/* Output positions [q0, q1) of the plane (q = oh * OW + ow) for one group
 * of nb (1..4) output blocks, summing input blocks [c0, c1) only: x is the
 * image's blocked input (block 0, padded row 0, column 0), w the group's
 * packed weights, bias nb*16 values (zero-padded) or NULL. Block n's
 * position q goes to out[(n * ldo + q - q0) * 16 ..]: ldo = q1 - q0 for a
 * run of its own, the plane's positions to write straight into a blocked
 * (NCHW16c) output. It starts from the bias (acc_in 0) or from its own
 * values (acc_in 1: the partial sums of the blocks before c0), so a caller
 * can sum the blocks a few at a time while their weights stay in L1. On
 * the last of those calls the epilogue can be applied in the registers: z
 * (laid out as out, or NULL) is added, then relu 1 stores max(0, v), as the
 * Add and Relu kernels compute them, relu 2 min(g->hi, max(g->lo, v)):
 * the Clip kernel's bits (v < lo ? lo : v, then > hi ? hi : v; NaN stays). */
void poprt__convb_run_avx512(const float *x, const float *w, const float *bias, int nb,
                             const poprt__convb_geom *g, int64_t q0, int64_t q1, int64_t c0,
                             int64_t c1, int acc_in, float *out, int64_t ldo, const float *z,
                             int relu, const void *pf, int64_t pf_bytes);

/* dst[j * 16 + i] = src[i * spitch + j] for j < n, i < 16, with rows
 * i >= rows read as zeros: 16 channel rows into a blocked run. */
void poprt__convb_block_avx512(const float *src, int64_t spitch, int rows, int64_t n,
                               float *dst);

/* Output row oh of mc (<= 64) channels of one group straight into their
 * rows, for one channel per block (cb 1) and column stride 1 or 2: a tile
 * is up to 2 vectors of 16 consecutive columns x 8 channels, so no
 * transposition is needed. For stride 2 the padded rows are split into
 * even and odd columns (g->split), so every tap's columns are one
 * contiguous run. x: the image's padded planes, followed by at
 * least 32 readable floats; w: the group's packed weights, wpitch floats
 * per (channel, kh, kw); bias: the group's (zero-padded to 8) or NULL;
 * relu: store max(0, sum) (as the Relu kernel computes it); y: the group's
 * first channel at row oh, column 0; ldy: floats between channel planes.
 * blk: y is NCHW16c instead (mc a multiple of 16): the group's first
 * block, ldy positions per block; each tile is transposed in registers
 * into 16 positions x 8 channels. Sums in the same order as
 * poprt__convb_run_avx512. */
void poprt__convb_rows_avx512(const float *x, const float *w, int64_t wpitch, const float *bias,
                              int64_t mc, const poprt__convb_geom *g, int64_t oh, int relu,
                              int blk, float *y, int64_t ldy);

/* dst[i] = src[2 * i] for i < n (reads src[0 .. 2n - 2] only): one phase
 * of a row split into even and odd columns. */
void poprt__convb_even_avx512(const float *src, int64_t n, float *dst);

/* dst[i * dpitch + j] = src[j * spitch + i] + bias[i] (bias NULL: no
 * addition), then max(0, .) if relu (as the Relu kernel computes it), for
 * i < m, j < n, 16 x 16 at a time: a run of positions x channels (the
 * blocked conv's output blocks, spitch 16; a GEMM result with the positions
 * as rows) back into channel rows. */
void poprt__transpose_bias_avx512(const float *src, int64_t spitch, int64_t n, int64_t m,
                                  const float *bias, int relu, float *dst, int64_t dpitch);

/* The bfloat16 form (conv_blocked_bf16_avx512.c, AVX512-BF16): the same
 * tiles and arguments as poprt__convb_run_avx512, with x and w holding
 * channel-pair words, bf16(channel 2i) | bf16(channel 2i + 1) << 16:
 *   input   x[cbi][hp][wp][i], i < 8, the pairs of a block of 16 channels
 *   weights w[og][cbi][kh][kw][i][nb*16 + o] (output o's words)
 * and g->plane in words (Hp * Wp * 8); g->cb is not read. Each VDPBF16PS
 * adds the two products of a pair to a float32 lane. */
void poprt__convb_run_bf16_avx512(const uint32_t *x, const uint32_t *w, const float *bias, int nb,
                                  const poprt__convb_geom *g, int64_t q0, int64_t q1, int64_t c0,
                                  int64_t c1, int acc_in, float *out, int64_t ldo, const float *z,
                                  int relu, const void *pf, int64_t pf_bytes);
/* dst[k] = bf16(src[2k]) | bf16(src[2k + 1]) << 16 for k < n, n a multiple
 * of 8, each rounded to nearest even as every bfloat16 packer rounds
 * (VCVTNEPS2BF16). */
void poprt__convb_words_avx512(const float *src, int64_t n, uint32_t *dst);
/* poprt__convb_rows_avx512's bfloat16 form for column stride 2 (stems):
 * x holds the padded rows as column-pair words, bf16(column 2i) |
 * bf16(column 2i + 1) << 16, g->Wp words per row and g->plane per
 * channel, followed by at least 32 readable words; g->KW is the number of
 * kernel column pairs (kw 2kp and 2kp + 1, a zero weight past an odd KW)
 * and output column ow's pair kp is word ow + kp (g->sw, g->dw, g->split
 * not read); w: wpitch words per (channel, kh, kp), each output channel's
 * pair word. Each VDPBF16PS adds a pair's two products to a float32 lane. */
void poprt__convb_rows_bf16_avx512(const uint32_t *x, const uint32_t *w, int64_t wpitch,
                                   const float *bias, int64_t mc, const poprt__convb_geom *g,
                                   int64_t oh, int relu, int blk, float *y, int64_t ldy);
#endif
/* 1 when the bfloat16 form can run here: the blocked convolution's variant
 * and AVX512-BF16 (after POPRT_ISA). */
int poprt__convb_bf16_usable(void);

/* The Winograd transforms' types (F(2x2, 3x3) below, then F(4x4, 3x3) and
 * F(4, 3), per ISA) */
typedef void poprt__convw_in_fn(const float *xb, int64_t Wp, int64_t tw, float *v,
                                int64_t vstep);
typedef void poprt__convw_out_fn(const float *m, int64_t mstep, int64_t tw, const float *bias,
                                 int rows, int64_t OW, int64_t ow, const float *z, int relu,
                                 int yblk, float *y, int64_t ldy, int nch);

#if defined(__x86_64__)
/* Winograd F(2x2, 3x3) for 3x3 convolutions of stride 1 and dilation 1 on
 * blocks of 16 channels (conv_blocked.c): Y = A^T [U . V] A per 2x2 output
 * tile, U = G g G^T from the weights (packed at compile), V = B^T d B from
 * the 4x4 input patch, with
 *   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1],  A^T = [1 1 1 0; 0 1 -1 -1],
 *   G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1].
 * The 16 products U[xi] . V[xi] over the channels are 1x1 blocked
 * convolutions over the tiles (the variant's run).
 *
 * in: tw consecutive tiles of one tile row of one 16-channel block: xb
 * points at the first tile's patch (padded row 2 ty, column 2 tx0; rows of
 * Wp positions of 16 floats); tile tx's V[xi] (16 floats) goes to
 * v[xi * vstep + tx * 16].
 * out: tw consecutive tiles of one tile row of one block of 16 output
 * channels: m[xi * mstep + tx * 16] holds tile tx's product xi; writes
 * the tiles' rows (rows: 1 or 2, OW positions apart) and their columns
 * < ow, counted from y's first (the first tile's first position):
 * NCHW16c (yblk) at y[q * 16], else the 16 channels' planes at
 * y[i * ldy + q], q = r * OW + column. bias (16 values)
 * is added (NULL: none), then z (yblk only, laid out as y; NULL: none),
 * then relu stores max(0, v); only the block's first nch channels are
 * stored (16 with yblk; fewer for the last block of M channels not a
 * multiple of 16, whose products are computed for 16). */
poprt__convw_in_fn poprt__convw_in_avx512;
poprt__convw_out_fn poprt__convw_out_avx512;
/* Winograd F(4x4, 3x3) (conv_wino4_body.inc): the same arguments for 4x4
 * output tiles from 6x6 input patches, 36 products, with
 *   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
 *          0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1],
 *   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1],
 *   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6;
 *        1/24 -1/12 1/6; 0 0 1]:
 * in reads patches of 6 x 6 positions 4 apart; out writes rows 1..4
 * of the tile row (rows) and the columns < ow. 4x fewer products than the
 * direct sums (2.25x for F(2x2, 3x3)), larger transforms, and roundings
 * magnified by the transforms' coefficients (docs/compiler.md). */
poprt__convw_in_fn poprt__convw4_in_avx512;
poprt__convw_out_fn poprt__convw4_out_avx512;
/* F(4, 3) along one axis (conv_wino4_body.inc) for 3x1 (h: tiles of 4
 * rows x 1 column, patches of 6 rows) and 1x3 kernels (w: 1 row x 4
 * columns, patches of 6 columns), 6 products, the same B^T, A^T and G;
 * the same arguments: in reads tile tx's patch at xb + tx * 16 (h) or
 * xb + tx * 4 * 16 (w), Wp the padded row pitch; out writes rows < rows of
 * column tx (h) or columns < ow of the row (w). */
poprt__convw_in_fn poprt__convw4h_in_avx512, poprt__convw4w_in_avx512;
poprt__convw_out_fn poprt__convw4h_out_avx512, poprt__convw4w_out_avx512;

/* The AVX2 + FMA variant (conv_blocked_avx2.c): the same functions, layout
 * and order of sums, on two ymm vectors per block of 16 channels. */
void poprt__convb_run_avx2(const float *x, const float *w, const float *bias, int nb,
                           const poprt__convb_geom *g, int64_t q0, int64_t q1, int64_t c0,
                           int64_t c1, int acc_in, float *out, int64_t ldo, const float *z,
                           int relu, const void *pf, int64_t pf_bytes);
void poprt__convb_block_avx2(const float *src, int64_t spitch, int rows, int64_t n, float *dst);
/* dst[j * 8 + i] = src[i * spitch + j] for j < n, i < 8: 8 channel rows
 * into a run of blocks of 8 (AVX2; the AVX-512 variant has none). */
void poprt__convb_block8_avx2(const float *src, int64_t spitch, int64_t n, float *dst);
void poprt__convb_rows_avx2(const float *x, const float *w, int64_t wpitch, const float *bias,
                            int64_t mc, const poprt__convb_geom *g, int64_t oh, int relu, int blk,
                            float *y, int64_t ldy);
void poprt__convb_even_avx2(const float *src, int64_t n, float *dst);
void poprt__transpose_bias_avx2(const float *src, int64_t spitch, int64_t n, int64_t m,
                                const float *bias, int relu, float *dst, int64_t dpitch);
poprt__convw_in_fn poprt__convw_in_avx2, poprt__convw4_in_avx2, poprt__convw4h_in_avx2,
    poprt__convw4w_in_avx2;
poprt__convw_out_fn poprt__convw_out_avx2, poprt__convw4_out_avx2, poprt__convw4h_out_avx2,
    poprt__convw4w_out_avx2;

#endif

/* A blocked-convolution variant: the functions above for one ISA. */
typedef struct poprt__convb_variant {
    const char *name; /* "avx512" */
    poprt__isa isa;   /* level the CPU must have */
    /* how a group's packed weights (poprt__x86_convb_pack) are laid out:
     * POPRT__CONVB_INTERLEAVED, w[cbi][kh][kw][i][nb*16 + o] (a tile reads
     * every block's weights of a step from one run), or
     * POPRT__CONVB_BY_BLOCK, w[n][cbi][kh][kw][i][o], n < nb (a tile of one
     * block reads its own contiguous run; the interleaved rows, 256 bytes
     * apart for a 64-channel group, use a quarter of L1's sets) */
    int wlayout;
    void (*run)(const float *x, const float *w, const float *bias, int nb,
                const poprt__convb_geom *g, int64_t q0, int64_t q1, int64_t c0, int64_t c1,
                int acc_in, float *out, int64_t ldo, const float *z, int relu, const void *pf,
                int64_t pf_bytes);
    void (*block)(const float *src, int64_t spitch, int rows, int64_t n, float *dst);
    /* channels per input block for C a multiple of 8 but not of 16: 8 (the
     * input blocked by block8, the tiles' weights 8 rows per tap), or 1 (one
     * channel per block) */
    int cb8;
    void (*block8)(const float *src, int64_t spitch, int64_t n, float *dst);
    void (*rows)(const float *x, const float *w, int64_t wpitch, const float *bias, int64_t mc,
                 const poprt__convb_geom *g, int64_t oh, int relu, int blk, float *y,
                 int64_t ldy);
    void (*even)(const float *src, int64_t n, float *dst);
    void (*transpose_bias)(const float *src, int64_t spitch, int64_t n, int64_t m,
                           const float *bias, int relu, float *dst, int64_t dpitch);
    /* the Winograd transforms: F(2x2, 3x3), F(4x4, 3x3), F(4, 3) for 3x1
     * (h) and 1x3 (w) kernels */
    poprt__convw_in_fn *wino_in, *wino4_in, *wino4h_in, *wino4w_in;
    poprt__convw_out_fn *wino_out, *wino4_out, *wino4h_out, *wino4w_out;
} poprt__convb_variant;

enum { POPRT__CONVB_INTERLEAVED = 0, POPRT__CONVB_BY_BLOCK = 1 };

/* The kernel list (conv_blocked_kernels.inc), best first. It has no
 * portable variant: where none is usable, convolutions take the other
 * paths (lib/kernels/x86/conv.c). */
extern const poprt__convb_variant poprt__convb_variants[];
extern const int poprt__convb_n_variants;
/* 1 when the CPU (after POPRT_ISA) can run v. */
int poprt__convb_usable(const poprt__convb_variant *v);
/* The first usable variant, or NULL. */
const poprt__convb_variant *poprt__convb_best(void);
/* Whether the NCHW16c depthwise / grouped path (poprt__x86_dwconv_blocked,
 * conv_paths.h) takes a conv of C input and M output channels in G groups:
 * C = M, a multiple of 16, whose groups (C / G channels: 1 for depthwise,
 * 2, 4 or 8) lie inside blocks of 16. */
int poprt__x86_dwconv_blocked_fits(int64_t C, int64_t M, int64_t G);
/* Whether the blocked direct convolution (conv_paths.h) takes a grouped
 * conv of C input and M output channels in G > 1 groups: whole blocks of
 * 16 channels per group on both sides (ResNeXt's 3x3 convs of 16 and 32
 * channels per group); each group is then a convolution of its own over
 * its input blocks, into its output blocks. */
int poprt__x86_convb_grouped_fits(int64_t C, int64_t M, int64_t G);

#if !defined(__x86_64__)
static inline void poprt__transpose_bias_avx512(const float *src, int64_t spitch, int64_t n,
                                                int64_t m, const float *bias, int relu,
                                                float *dst, int64_t dpitch)
{
    (void)src, (void)spitch, (void)n, (void)m, (void)bias, (void)relu, (void)dst, (void)dpitch;
}
static inline void poprt__convb_even_avx512(const float *src, int64_t n, float *dst)
{
    (void)src, (void)n, (void)dst;
}
static inline void poprt__convb_rows_avx512(const float *x, const float *w, int64_t wpitch,
                                            const float *bias, int64_t mc,
                                            const poprt__convb_geom *g, int64_t oh, int relu,
                                            int blk, float *y, int64_t ldy)
{
    (void)x, (void)w, (void)wpitch, (void)bias, (void)mc, (void)g, (void)oh, (void)relu,
        (void)blk, (void)y, (void)ldy;
}
/* other CPUs: never called (the variant needs AVX-512) */
static inline void poprt__convb_run_avx512(const float *x, const float *w, const float *bias,
                                           int nb, const poprt__convb_geom *g, int64_t q0,
                                           int64_t q1, int64_t c0, int64_t c1, int acc_in,
                                           float *out, int64_t ldo, const float *z, int relu,
                                           const void *pf, int64_t pf_bytes)
{
    (void)x, (void)w, (void)bias, (void)nb, (void)g, (void)q0, (void)q1, (void)c0, (void)c1,
        (void)acc_in, (void)out, (void)ldo, (void)z, (void)relu, (void)pf, (void)pf_bytes;
}
static inline void poprt__convb_block_avx512(const float *src, int64_t spitch, int rows,
                                             int64_t n, float *dst)
{
    (void)src, (void)spitch, (void)rows, (void)n, (void)dst;
}
static inline void poprt__convb_run_bf16_avx512(const uint32_t *x, const uint32_t *w,
                                                const float *bias, int nb,
                                                const poprt__convb_geom *g, int64_t q0,
                                                int64_t q1, int64_t c0, int64_t c1, int acc_in,
                                                float *out, int64_t ldo, const float *z,
                                                int relu, const void *pf, int64_t pf_bytes)
{
    (void)x, (void)w, (void)bias, (void)nb, (void)g, (void)q0, (void)q1, (void)c0, (void)c1,
        (void)acc_in, (void)out, (void)ldo, (void)z, (void)relu, (void)pf, (void)pf_bytes;
}
static inline void poprt__convw_in_avx512(const float *xb, int64_t Wp, int64_t tw, float *v,
                                          int64_t vstep)
{
    (void)xb, (void)Wp, (void)tw, (void)v, (void)vstep;
}
static inline void poprt__convw_out_avx512(const float *m, int64_t mstep, int64_t tw,
                                           const float *bias, int rows, int64_t OW, int64_t ow,
                                           const float *z, int relu, int yblk, float *y,
                                           int64_t ldy, int nch)
{
    (void)m, (void)mstep, (void)tw, (void)bias, (void)rows, (void)OW, (void)ow, (void)z, (void)relu,
        (void)yblk, (void)y, (void)ldy, (void)nch;
}
static inline void poprt__convb_words_avx512(const float *src, int64_t n, uint32_t *dst)
{
    (void)src, (void)n, (void)dst;
}
static inline void poprt__convb_rows_bf16_avx512(const uint32_t *x, const uint32_t *w,
                                                 int64_t wpitch, const float *bias, int64_t mc,
                                                 const poprt__convb_geom *g, int64_t oh, int relu,
                                                 int blk, float *y, int64_t ldy)
{
    (void)x, (void)w, (void)wpitch, (void)bias, (void)mc, (void)g, (void)oh, (void)relu,
        (void)blk, (void)y, (void)ldy;
}
/* other CPUs: never called (the variants need AVX2 or AVX-512) */
static inline void poprt__convb_run_avx2(const float *x, const float *w, const float *bias,
                                         int nb, const poprt__convb_geom *g, int64_t q0,
                                         int64_t q1, int64_t c0, int64_t c1, int acc_in,
                                         float *out, int64_t ldo, const float *z, int relu,
                                         const void *pf, int64_t pf_bytes)
{
    poprt__convb_run_avx512(x, w, bias, nb, g, q0, q1, c0, c1, acc_in, out, ldo, z, relu, pf,
                            pf_bytes);
}
static inline void poprt__convb_block_avx2(const float *src, int64_t spitch, int rows,
                                           int64_t n, float *dst)
{
    poprt__convb_block_avx512(src, spitch, rows, n, dst);
}
static inline void poprt__convb_block8_avx2(const float *src, int64_t spitch, int64_t n,
                                            float *dst)
{
    (void)src, (void)spitch, (void)n, (void)dst;
}
static inline void poprt__convb_rows_avx2(const float *x, const float *w, int64_t wpitch,
                                          const float *bias, int64_t mc,
                                          const poprt__convb_geom *g, int64_t oh, int relu,
                                          int blk, float *y, int64_t ldy)
{
    poprt__convb_rows_avx512(x, w, wpitch, bias, mc, g, oh, relu, blk, y, ldy);
}
static inline void poprt__convb_even_avx2(const float *src, int64_t n, float *dst)
{
    poprt__convb_even_avx512(src, n, dst);
}
static inline void poprt__transpose_bias_avx2(const float *src, int64_t spitch, int64_t n,
                                              int64_t m, const float *bias, int relu, float *dst,
                                              int64_t dpitch)
{
    poprt__transpose_bias_avx512(src, spitch, n, m, bias, relu, dst, dpitch);
}
static inline void poprt__convw_in_avx2(const float *xb, int64_t Wp, int64_t tw, float *v,
                                        int64_t vstep)
{
    poprt__convw_in_avx512(xb, Wp, tw, v, vstep);
}
static inline void poprt__convw_out_avx2(const float *m, int64_t mstep, int64_t tw,
                                         const float *bias, int rows, int64_t OW, int64_t ow,
                                         const float *z, int relu, int yblk, float *y, int64_t ldy,
                                         int nch)
{
    poprt__convw_out_avx512(m, mstep, tw, bias, rows, OW, ow, z, relu, yblk, y, ldy, nch);
}
/* the Winograd transforms other than F(2x2, 3x3)'s: never called either */
#define POPRT__CONVW_STUBS(in, out)                                                                \
    static inline void in(const float *xb, int64_t Wp, int64_t tw, float *v, int64_t vstep)       \
    {                                                                                              \
        poprt__convw_in_avx512(xb, Wp, tw, v, vstep);                                              \
    }                                                                                              \
    static inline void out(const float *m, int64_t mstep, int64_t tw, const float *bias, int rows, \
                           int64_t OW, int64_t ow, const float *z, int relu, int yblk, float *y,   \
                           int64_t ldy, int nch)                                                   \
    {                                                                                              \
        poprt__convw_out_avx512(m, mstep, tw, bias, rows, OW, ow, z, relu, yblk, y, ldy, nch);     \
    }
POPRT__CONVW_STUBS(poprt__convw4_in_avx512, poprt__convw4_out_avx512)
POPRT__CONVW_STUBS(poprt__convw4h_in_avx512, poprt__convw4h_out_avx512)
POPRT__CONVW_STUBS(poprt__convw4w_in_avx512, poprt__convw4w_out_avx512)
POPRT__CONVW_STUBS(poprt__convw4_in_avx2, poprt__convw4_out_avx2)
POPRT__CONVW_STUBS(poprt__convw4h_in_avx2, poprt__convw4h_out_avx2)
POPRT__CONVW_STUBS(poprt__convw4w_in_avx2, poprt__convw4w_out_avx2)
#undef POPRT__CONVW_STUBS
#endif

#endif
