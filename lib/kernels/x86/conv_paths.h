/* The float32 convolution of the registry's Conv and FusedConv (x86/conv.c)
 * and the paths it chooses among, one file each: the tiled implicit GEMM and
 * the transposed GEMM (conv_gemm.c), the direct convolution on the GEMM
 * micro-kernel and the depthwise planes (conv_direct.c), the blocked
 * convolution (conv_blocked.c). The operator's checks, its im2col
 * and its reference loops are lib/kernels/ref/conv.h's. */
#ifndef POPRT_X86_CONV_PATHS_H
#define POPRT_X86_CONV_PATHS_H
#include "kernels/ref/conv.h"
#include "kernels/ref/poprt_compiled.h"
#include "kernels/x86/fp8_round.h"
#include "kernels/x86/conv_blocked.h"
#include "kernels/x86/sgemm.h"
#include "kernels/x86/vmath.h"

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

typedef struct poprt__conv_plan {
    poprt__geom3 g;
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
    /* the activation and the post steps as one chain of vm (0 steps: not
     * one it computes, or nothing to do): one call per span of outputs
     * instead of one per step, the same bits */
    int n_chain;
    poprt__vmath_step chain[POPRT__EW_MAX_STEPS + 1];
    const poprt__vmath_variant *vm;
} poprt__conv_plan;

/* FusedConv has an epilogue to apply */
static inline int poprt__x86_conv_has_epilogue(const poprt__conv_plan *p)
{
    return p->act != CONV_ACT_NONE || p->z || p->fp8 || p->n_post;
}

/* The epilogue is a Relu alone: the AVX-512 paths apply it (max(0, v), as
 * the Relu kernel computes it) while storing their results. */
static inline int poprt__x86_conv_lone_relu(const poprt__conv_plan *p)
{
    return p->act == CONV_ACT_RELU && !p->z && !p->fp8 && !p->n_post;
}

/* Weights packed when the session is compiled (poprt__x86_conv_prepare):
 * a header, then per group the path's operand. */
#define CONV_PACK_MAGIC 0x31434b5043525050ull /* "PPRCPKC1" */
#define CONV_PACK_HEADER 64u
#define CONV_TRANS_MAGIC 0x31524e5443525050ull  /* "PPRCTNR1" */
#define CONV_DIRECT_MAGIC 0x31524443525050ull   /* "PPRCDR1" */
#define CONV_DIRECT_MAX_TAPS 64 /* more: one micro-kernel call per tap */
/* Work items of a path go round-robin to this many lanes, each with its
 * own scratch; the pool balances lanes over threads. */
#define CONV_LANES 8

/* The plan of a convolution of shape s without an epilogue (FusedConv's
 * kernel adds its own). */
void poprt__x86_conv_plan_of(const poprt__conv_shape *s, poprt__conv_plan *p);
/* y[off + i] = act(y[off + i] + z[off + i]) for i < n, then the post
 * steps, then the float8 rounding (FusedConv's epilogue, x86/conv.c). */
void poprt__x86_conv_epilogue(const poprt__conv_plan *p, float *y, int64_t off, int64_t n);
/* d[i] = s[i] + v (d may be s): the bias pass of the paths. */
void poprt__x86_row_plus(float *d, const float *s, float v, int64_t n);

/* The bias (b: the block's rows', or NULL) and the epilogue on block
 * [m0, m1) x [n0, n1) of output rows y + off + m * out_sz + n, as the
 * GEMM's epilogue (poprt__sgemm_epi: ctx a poprt__conv_epi_task). */
typedef struct poprt__conv_epi_task {
    const poprt__conv_plan *p;
    float *y;
    int64_t off;    /* of the block's first row */
    const float *b; /* the rows' bias, or NULL */
} poprt__conv_epi_task;
void poprt__x86_conv_epi_block(void *ctx, int64_t m0, int64_t m1, int64_t n0, int64_t n1);

/* ---- conv_gemm.c ---- */
/* Runs the conv tiled when the weights are pre-packed for this CPU and the
 * shape gives enough work items; *done 0: the caller takes the plain path. */
poprt_status poprt__x86_conv_tiled(poprt__kctx *k, const poprt__conv_plan *p, int pointwise,
                                   const float *x, const float *b, const unsigned char *apack,
                                   uint64_t per_group, float *y, int *done);
/* Whether the transposed GEMM pays off; poprt__x86_conv_trans runs it with
 * W^T pre-packed as the GEMM's B operand (bpack). */
int poprt__x86_conv_trans_fits(int64_t G, int64_t M, int64_t Kc, int64_t out_sz);
poprt_status poprt__x86_conv_trans(poprt__kctx *k, const poprt__conv_plan *p, int pointwise,
                                   const float *x, const float *b, const void *bpack, float *y);

/* ---- conv_pairs.c: bfloat16 convolution on channel pairs ---- */
#define CONV_PAIRS_MAGIC 0x31525043525050ull /* "PPRCPR1" */
/* Whether the pair path runs a conv with these weights (not pointwise:
 * that one's B is X itself) on v, a bfloat16 GEMM variant. */
int poprt__x86_conv_pairs_fits(const poprt__geom3 *g, int64_t Cg,
                               const poprt__sgemm_variant *v);
/* The weights (G groups of Mg x Cg x k_sz) as v's packed A in the pair
 * order of conv_pairs.c, one block per group after a CONV_PACK_HEADER. */
poprt_status poprt__x86_conv_pairs_pack(const poprt__sgemm_variant *v, const float *w,
                                        int64_t G, int64_t Mg, int64_t Cg, int64_t k_sz,
                                        void **state, size_t *size);
/* The node's pair-path weights for this CPU and plan, or NULL (another
 * path's, or packed for another CPU: an executable file); per-group bytes
 * in *per. */
const unsigned char *poprt__x86_conv_pairs_state(const poprt__kctx *k, const poprt__conv_plan *p,
                                                 uint64_t *per);
poprt_status poprt__x86_conv_pairs(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                   const float *b, const unsigned char *apack, uint64_t per,
                                   float *y);

/* conv_pairs_avx512.c: a run of a panel's columns that lie in one output
 * row (lanes [j, j + n) of the panel, output columns ow..ow + n - 1), with
 * that row's input origin d = od*s0 - pb0, h = oh*s1 - pb1, w = ow*s2 - pb2. */
typedef struct poprt__pairs_run {
    int64_t j, n, d, h, w;
} poprt__pairs_run;
/* What the B packer reads: X as pair words (xp[cp * in_sz + pos]), the
 * taps' offsets (kd*d0, kh*d1, kw*d2 per tap), the runs of each panel
 * (panel i: runs[panel_runs[i] .. panel_runs[i + 1])) and where B goes. */
typedef struct poprt__pairs_b {
    const poprt__geom3 *g;
    const uint32_t *xp;
    const int64_t *taps;
    const poprt__pairs_run *runs;
    const int64_t *panel_runs;
    const poprt__sgemm_b_layout *l;
} poprt__pairs_b;
void poprt__conv_pairs_convert_avx512(const float *x, int64_t Cg, int64_t in_sz, int64_t cp0,
                                      int64_t cp1, uint32_t *xp);
/* Panels [i0, i1) of every K block of B. */
void poprt__conv_pairs_pack_b_avx512(const poprt__pairs_b *t, int64_t i0, int64_t i1);

/* ---- conv_taps.c: bfloat16 convolution tap by tap on AMX tiles ---- */
#define CONV_TAPS_MAGIC 0x31535054435050ull /* "PPCTPS1" */
/* The geometry of the taps path (2-D, one group): X as bfloat16 pair words
 * in a zero-padded NHWC copy, Ck channels per position (C rounded up to 32),
 * Hp x Wp positions (padded row hp holds input row hp - pt, padded column
 * wp input column wp - pl), every row long enough for whole 16-position
 * tiles; the weights packed per 32 output channels (block), tap and 32
 * input channels as one 16 x 32 word B operand (2 KiB). */
typedef struct poprt__taps_geom {
    int64_t C, H, W, M;
    int64_t Ck, Hp, Wp, pt, pl;
    int64_t KH, KW, sh, sw, dh, dw;
    int64_t OH, OW;
    int64_t mblocks; /* output channel blocks of 32 */
} poprt__taps_geom;
/* Whether the taps path runs a conv of this geometry (2-D, one group, Cg a
 * multiple of 16 and at least 32, output rows of at least 16) on v, the
 * session's bfloat16 GEMM variant (AMX tiles only), and pays off. */
int poprt__x86_conv_taps_fits(const poprt__geom3 *g, int64_t G, int64_t Cg, int64_t Mg,
                              const poprt__sgemm_variant *v);
poprt_status poprt__x86_conv_taps_pack(const float *w, int64_t M, int64_t C, int64_t KH,
                                       int64_t KW, void **state, size_t *size);
/* The node's packed weights for this plan, or NULL (another path's, or AMX
 * not usable here: an executable file). */
const uint32_t *poprt__x86_conv_taps_state(const poprt__kctx *k, const poprt__conv_plan *p);
int poprt__x86_conv_taps_usable(void);
poprt_status poprt__x86_conv_taps(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                  const float *b, const uint32_t *wpk, float *y);
/* conv_taps_amx.c: padded row hp of 32-channel block cb of one image x
 * (NCHW float32) into xp (the image's padded NHWC pair words). */
void poprt__conv_taps_convert_amx(const poprt__taps_geom *tg, const float *x, int64_t hp,
                                  int64_t cb, uint32_t *xp);
/* Output row oh of output block mb of one image: y (the image's first
 * channel) gets the sums plus bias (the image's M values, or NULL), then
 * max(0, .) when relu. The thread's tile configuration must be loaded
 * (poprt__sgemm_enter_amx). */
void poprt__conv_taps_row_amx(const poprt__taps_geom *tg, const uint32_t *xp,
                              const uint32_t *wpk, int64_t oh, int64_t mb, const float *bias,
                              int relu, float *y);

/* ---- conv_direct.c ---- */
/* Whether v's tap micro-kernel runs this conv (its weights then packed
 * channel-major), and whether the direct path pays off. */
int poprt__x86_conv_direct_taps(const poprt__sgemm_variant *v, int64_t k_sz);
int poprt__x86_conv_direct_fits(const poprt__geom3 *g, int64_t Cg, const poprt__sgemm_variant *v);
/* The direct conv with v's micro-kernel over apack (a_group floats per group). */
poprt_status poprt__x86_conv_direct(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                    const float *b, const float *apack, int64_t a_group,
                                    const poprt__sgemm_variant *v, float *y);
/* Depthwise and grouped 2-D convs (poprt__x86_dwconv_blocked_fits,
 * conv_blocked.h) with X, Y (and Z) in NCHW16c; 0
 * in *done otherwise. The taps come from the node's prepared state
 * (poprt__x86_dwconv_pack) when it has one for this shape, else from w,
 * reordered into scratch. */
poprt_status poprt__x86_dwconv_blocked(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                       const float *w, const float *b, float *y, int *done);
/* The weights [C, g, KH, KW] of such a conv whose X and Y are NCHW16c as
 * the blocked functions' taps, packed once when the session is compiled: a
 * CONV_PACK_HEADER {CONV_DWB_MAGIC, C, taps, g}, then [C / 16][taps][g][16]
 * floats. Every CPU runs them (conv_dw.h has portable blocked functions). */
#define CONV_DWB_MAGIC 0x31425744435050ull /* "PPCDWB1" */
poprt_status poprt__x86_dwconv_pack(const float *w, int64_t C, int64_t g, int64_t taps,
                                    void **state, size_t *size);
/* Depthwise 1-D / 2-D convs on a padded copy; 0 in *done for 3-D. */
poprt_status poprt__x86_dwconv_padded(poprt__kctx *k, const poprt__conv_plan *p, const float *x,
                                      const float *w, const float *b, float *y, int *done);

/* ---- conv_blocked.c ---- */
/* Whether the blocked path can run a conv (2-D or 1-D, one group); its
 * weights packed by poprt__x86_convb_pack for variant v (NULL: the best
 * here; bf16 1: as bfloat16 pair words for poprt__convb_run_bf16_avx512, C
 * a multiple of 16, or column-pair words for a stem that
 * poprt__x86_convb_stem_bf16_fits, on a CPU where
 * poprt__convb_bf16_usable()), found
 * again (for variant v and this shape, else NULL) by
 * poprt__x86_convb_state, with their element count per group of output
 * channels and their form; poprt__x86_conv_blocked runs them with v. */
int poprt__x86_convb_fits(const poprt__geom3 *g, int64_t G);
/* Whether the bfloat16 form takes a conv of C channels, C not a multiple
 * of 16, as a stem (one channel per block): column stride 2 without column
 * dilation, at least 16 output columns, AVX512-BF16 here (conv_blocked.h:
 * poprt__convb_rows_bf16_avx512). */
int poprt__x86_convb_stem_bf16_fits(const poprt__geom3 *g, int64_t C);
/* Whether variant v pays for a conv of C input and M output channels that
 * fits: always on the interleaved (AVX-512) tiles; on the by-block (AVX2)
 * ones for whole 16-channel blocks, an NCHW16c operand (blocked_io), or C a
 * multiple of 8 (blocks of 8, v->cb8) with M a multiple of 16, or stems
 * of fewer than 8 channels that the row tiles take: with one channel per
 * block and more channels each block pass reads the input again for 12
 * FMAs a step (oww_embedding's 24- and 72-channel convs took 2x the GEMM
 * paths' time). */
int poprt__x86_convb_worth(const poprt__convb_variant *v, const poprt__geom3 *g, int64_t C,
                           int64_t M, int blocked_io);
poprt_status poprt__x86_convb_pack(const poprt__convb_variant *v, const float *w, int64_t M,
                                   int64_t C, int64_t KH, int64_t KW, int bf16, void **state,
                                   size_t *size);
/* The weights [G Mg][Cg][KH][KW] of a grouped conv that
 * poprt__x86_convb_grouped_fits (float32), each group as
 * poprt__x86_convb_pack packs a conv of Mg outputs and Cg inputs, one after
 * the other; poprt__x86_convb_state and poprt__x86_conv_blocked take them
 * for that plan (G, Mg, Cg). */
poprt_status poprt__x86_convb_pack_grouped(const poprt__convb_variant *v, const float *w,
                                           int64_t G, int64_t Mg, int64_t Cg, int64_t KH,
                                           int64_t KW, void **state, size_t *size);
/* 1 when state is a blocked convolution's float32 weights, 2 bfloat16, else 0. */
int poprt__x86_convb_state_magic(const void *state, size_t size);
/* 1 when a blocked (or Winograd) state's weights are in the layout of this
 * CPU's best variant (an executable file from a CPU whose variant packs
 * them otherwise is prepared again at load). */
int poprt__x86_convb_layout_current(const void *state, size_t size);
const void *poprt__x86_convb_state(const poprt__kctx *k, const poprt__conv_plan *p,
                                   const poprt__convb_variant *v, int64_t *w_group, int *bf16);
poprt_status poprt__x86_conv_blocked(poprt__kctx *k, const poprt__conv_plan *p,
                                     const poprt__convb_variant *v, const float *x,
                                     const float *b, const void *w, int64_t w_group, int bf16,
                                     float *y);
/* Winograd F(2x2, 3x3) and F(4x4, 3x3), and F(4, 3) for 3x1 and 1x3
 * kernels (conv_blocked.h): the output tile edge (2 or 4; 4 for 3x1 and
 * 1x3) a conv takes, or 0 when it does not fit (3x3, 3x1 or 1x3, stride 1,
 * dilation 1, one group, outputs of at least 2 along the kernel's axes) or
 * would not pay; force 2 or 4: that tile wherever the kernels fit (session
 * option conv_algorithm; 3x1 and 1x3 take 4). Its weights packed by
 * poprt__x86_convw_pack for variant v (NULL: the best here) and tile edge,
 * found again by poprt__x86_convw_state with their tile edge (NULL: not
 * this path's, packed for another variant, or no blocked variant here),
 * run by poprt__x86_conv_winograd with v. Either layout of X and Y.
 * bf16 (F(2x2, 3x3) only, on a CPU where poprt__convb_bf16_usable()): U
 * packed as bfloat16 pair words, each V rounded to them too, the products
 * on VDPBF16PS with float32 sums; the transforms stay float32. */
int poprt__x86_convw_fits(const poprt__geom3 *g, int64_t G, int64_t C, int64_t M, int force);
poprt_status poprt__x86_convw_pack(const poprt__convb_variant *v, const float *w, int64_t M,
                                   int64_t C, int64_t KH, int64_t KW, int tile, int bf16,
                                   void **state, size_t *size);
const void *poprt__x86_convw_state(const poprt__kctx *k, const poprt__conv_plan *p,
                                   const poprt__convb_variant *v, int64_t *w_group, int *tile,
                                   int *bf16);
/* 1: poprt__x86_convw_pack's float32 weights, 2: its bfloat16 ones, 0: neither */
int poprt__x86_convw_state_magic(const void *state, size_t size);
poprt_status poprt__x86_conv_winograd(poprt__kctx *k, const poprt__conv_plan *p,
                                      const poprt__convb_variant *v, const float *x,
                                      const float *b, const void *u, int64_t w_group, int tile,
                                      int bf16, float *y);

#endif
