/* Reference kernels of the 'nn' family: convolutions, pools, GEMM/MatMul,
 * normalisations, LRN, Einsum, Det. The float32 GEMM below is the engine of
 * Conv, ConvTranspose, Gemm and MatMul. */
#ifndef POPRT_REF_NN_H
#define POPRT_REF_NN_H
#include "kernels/kernel.h"

/* C = alpha * op(A) * op(B) + beta * C, row-major, op(X) = X or X^T.
 * op(A) is M x K, op(B) is K x N. beta == 0 ignores C's old contents (NaN
 * included). Single-threaded and allocation-free; every C element is summed
 * over k in the same fixed order whatever M/N sub-block a caller passes, so
 * callers may split M or N across threads and get identical bits. */
void poprt__ref_sgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, float alpha,
                      const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                      float *C, int64_t ldc);
/* The same in double (simple loop nest; for the rare double models). */
void poprt__ref_dgemm(int transA, int transB, int64_t M, int64_t N, int64_t K, double alpha,
                      const double *A, int64_t lda, const double *B, int64_t ldb, double beta,
                      double *C, int64_t ldc);
/* poprt__ref_sgemm split over the session's threads (by rows or by column
 * panels); bit-identical to the serial call. */
void poprt__ref_sgemm_mt(poprt__kctx *k, int transA, int transB, int64_t M, int64_t N,
                         int64_t K, float alpha, const float *A, int64_t lda, const float *B,
                         int64_t ldb, float beta, float *C, int64_t ldc);

/* Geometry of a sliding-window op (Conv, pools) over nsp spatial dims.
 * Values < 0 are unknown (inference with symbolic dims). */
typedef struct poprt__nn_geom {
    int nsp;
    int64_t in[POPRT__MAX_RANK];  /* input spatial sizes */
    int64_t out[POPRT__MAX_RANK]; /* output spatial sizes */
    int64_t k[POPRT__MAX_RANK];   /* kernel */
    int64_t s[POPRT__MAX_RANK];   /* strides */
    int64_t d[POPRT__MAX_RANK];   /* dilations */
    int64_t pb[POPRT__MAX_RANK];  /* pads at the beginning */
    int64_t pe[POPRT__MAX_RANK];  /* pads at the end */
} poprt__nn_geom;

/* Fills g for Conv and pools from the node's attributes (kernel_shape,
 * strides, dilations, pads, auto_pad, ceil_mode) and the input spatial
 * sizes in_sp; kernel (may be NULL) gives the kernel when kernel_shape is
 * absent (Conv takes it from W). INVALID_MODEL naming the node when the
 * attributes are inconsistent. */
poprt_status poprt__nn_window_geom(const poprt__node *n, int nsp, const int64_t *in_sp,
                                   const int64_t *kernel, int allow_ceil, poprt__nn_geom *g);
/* ConvTranspose: in_sp and kernel as above; fills out, pads (pb may be
 * negative-free; pe < 0 means extra zero rows at the end). */
poprt_status poprt__nn_convtranspose_geom(const poprt__node *n, int nsp, const int64_t *in_sp,
                                          const int64_t *kernel, poprt__nn_geom *g);

/* Kernels */
poprt_status poprt__ref_conv(poprt__kctx *k);
poprt_status poprt__ref_conv_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__ref_poprt_fused_conv(poprt__kctx *k); /* ai.poprt FusedConv */
poprt_status poprt__ref_poprt_blocked_maxpool(poprt__kctx *k); /* ai.poprt BlockedMaxPool */
poprt_status poprt__ref_matmul_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__ref_conv_transpose(poprt__kctx *k);
poprt_status poprt__ref_maxpool(poprt__kctx *k);
poprt_status poprt__ref_averagepool(poprt__kctx *k);
poprt_status poprt__ref_lppool(poprt__kctx *k);
poprt_status poprt__ref_global_averagepool(poprt__kctx *k);
poprt_status poprt__ref_global_maxpool(poprt__kctx *k);
poprt_status poprt__ref_global_lppool(poprt__kctx *k);
poprt_status poprt__ref_maxunpool(poprt__kctx *k);
poprt_status poprt__ref_gemm(poprt__kctx *k);
/* A constant float32 B packed once for the fast GEMM (op(B), transB applied). */
poprt_status poprt__ref_gemm_prepare(poprt__prep_ctx *c, void **state, size_t *size);
poprt_status poprt__ref_matmul(poprt__kctx *k);
poprt_status poprt__ref_batchnorm(poprt__kctx *k);
poprt_status poprt__ref_instancenorm(poprt__kctx *k);
poprt_status poprt__ref_layernorm(poprt__kctx *k);
poprt_status poprt__ref_groupnorm(poprt__kctx *k);
poprt_status poprt__ref_rmsnorm(poprt__kctx *k);
poprt_status poprt__ref_lrn(poprt__kctx *k);
poprt_status poprt__ref_mvn(poprt__kctx *k);
poprt_status poprt__ref_einsum(poprt__kctx *k);
poprt_status poprt__ref_det(poprt__kctx *k);

/* Einsum equation parsing shared by inference and kernel. Labels are
 * letters; '...' becomes up to POPRT__MAX_RANK broadcast dims. */
#define POPRT__EINSUM_MAX_IN 16
typedef struct poprt__einsum {
    int n_in;
    int rank[POPRT__EINSUM_MAX_IN];               /* input ranks (after ellipsis expansion) */
    int lab[POPRT__EINSUM_MAX_IN][POPRT__MAX_RANK]; /* label id per input dim */
    int out_rank;
    int out_lab[POPRT__MAX_RANK];
    int n_labels;   /* distinct labels (ellipsis dims are labels 52..) */
} poprt__einsum;
/* Parses eq for inputs of the given ranks; returns 0 on a malformed equation. */
int poprt__einsum_parse(const char *eq, int n_in, const int *ranks, poprt__einsum *e);

#endif
