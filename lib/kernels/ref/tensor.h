/* Reference kernels of the 'tensor' family (data movement, indexing,
 * padding, resizing). The parameter helpers that inference shares with
 * them (Slice, Pad, Resize) live in lib/ir/geom.h. */
#ifndef POPRT_REF_TENSOR_H
#define POPRT_REF_TENSOR_H
#include "kernels/kernel.h"
#include "ir/geom.h"

/* ---- helpers the tensor-family files share (tensor.c, sort.c, resample.c) ---- */

static inline size_t poprt__ref_esize(int32_t dt) { return poprt__dtype_size((poprt_dtype)dt); }

static inline poprt_status poprt__ref_kerr(const poprt__kctx *k, poprt_status st, const char *msg)
{
    return POPRT__NODE_ERR(k->node, st, "%s", msg);
}

/* Element i of an integer tensor (indices, axes, shapes). */
static inline int64_t poprt__ref_tv_int(const poprt__tval *t, int64_t i)
{
    switch (t->dtype) {
    case POPRT_DTYPE_INT64:
        return ((const int64_t *)t->data)[i];
    case POPRT_DTYPE_INT32:
        return ((const int32_t *)t->data)[i];
    default:
        return poprt__load_i64(t->data, t->dtype, i);
    }
}

/* Element i of a float tensor as double. */
static inline double poprt__ref_tv_f64(const poprt__tval *t, int64_t i)
{
    switch (t->dtype) {
    case POPRT_DTYPE_FLOAT:
        return ((const float *)t->data)[i];
    case POPRT_DTYPE_DOUBLE:
        return ((const double *)t->data)[i];
    default:
        return poprt__load_f64(t->data, t->dtype, i);
    }
}

/* Integer values of input i into buf (at most cap); *n gets the count.
 * Returns 0 when the input is absent. */
int poprt__ref_kin_ints(const poprt__kctx *k, int i, int64_t *buf, int64_t cap, int64_t *n);
/* dst[o] = src[sum_a maps[a][o_a] * istr[a]], or *fill when any map entry
 * is negative (padding, out-of-range). */
void poprt__ref_gather_mapped(void *dst, const void *src, int rank, const int64_t *odims,
                              int64_t *const *maps, const int64_t *istr, size_t es,
                              const void *fill);
/* Per-axis index maps for poprt__ref_gather_mapped, in k's scratch memory. */
int64_t **poprt__ref_alloc_maps(poprt__kctx *k, int rank, const int64_t *odims);
/* A zero element of dtype dt (strings: ""), in a 16-byte buffer. */
void poprt__ref_zero_elem(int32_t dt, void *buf);

/* ---- kernels ------------------------------------------------------------- */
poprt_status poprt__ref_copy_input(poprt__kctx *k); /* Reshape, Squeeze, Unsqueeze, Flatten */
poprt_status poprt__ref_identity(poprt__kctx *k);
poprt_status poprt__ref_transpose(poprt__kctx *k);
poprt_status poprt__ref_concat(poprt__kctx *k);
poprt_status poprt__ref_split(poprt__kctx *k);
poprt_status poprt__ref_slice(poprt__kctx *k);
poprt_status poprt__ref_gather(poprt__kctx *k);
poprt_status poprt__ref_gather_elements(poprt__kctx *k);
poprt_status poprt__ref_gather_nd(poprt__kctx *k);
poprt_status poprt__ref_scatter_elements(poprt__kctx *k); /* also Scatter */
poprt_status poprt__ref_scatter_nd(poprt__kctx *k);
poprt_status poprt__ref_tensor_scatter(poprt__kctx *k);
poprt_status poprt__ref_expand(poprt__kctx *k);
poprt_status poprt__ref_tile(poprt__kctx *k);
poprt_status poprt__ref_pad(poprt__kctx *k);
poprt_status poprt__ref_shape(poprt__kctx *k);
poprt_status poprt__ref_size(poprt__kctx *k);
poprt_status poprt__ref_constant_of_shape(poprt__kctx *k);
poprt_status poprt__ref_constant(poprt__kctx *k);
poprt_status poprt__ref_range(poprt__kctx *k);
poprt_status poprt__ref_dropout(poprt__kctx *k);
poprt_status poprt__ref_depth_to_space(poprt__kctx *k);
poprt_status poprt__ref_space_to_depth(poprt__kctx *k);
poprt_status poprt__ref_trilu(poprt__kctx *k);
poprt_status poprt__ref_nonzero(poprt__kctx *k);
poprt_status poprt__ref_compress(poprt__kctx *k);
poprt_status poprt__ref_reverse_sequence(poprt__kctx *k);
poprt_status poprt__ref_eye_like(poprt__kctx *k);
poprt_status poprt__ref_one_hot(poprt__kctx *k);
poprt_status poprt__ref_cumsum(poprt__kctx *k);
poprt_status poprt__ref_cumprod(poprt__kctx *k);
poprt_status poprt__ref_topk(poprt__kctx *k);
poprt_status poprt__ref_unique(poprt__kctx *k);
poprt_status poprt__ref_center_crop_pad(poprt__kctx *k);
poprt_status poprt__ref_col2im(poprt__kctx *k);
poprt_status poprt__ref_resize(poprt__kctx *k); /* also Upsample */
poprt_status poprt__ref_grid_sample(poprt__kctx *k);
poprt_status poprt__ref_affine_grid(poprt__kctx *k);

#endif
