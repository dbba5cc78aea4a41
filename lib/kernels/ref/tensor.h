/* Reference kernels of the 'tensor' family (data movement, indexing,
 * padding, resizing), plus the parameter helpers that inference
 * (lib/ir/infer_tensor.c) shares with the kernels so both compute the same
 * shapes from the same attributes and inputs. */
#ifndef POPRT_REF_TENSOR_H
#define POPRT_REF_TENSOR_H
#include "kernels/kernel.h"

/* ---- shared parameter helpers ------------------------------------------- */

/* Slice of one axis of size dim (ONNX clamping rules, negative steps):
 * writes the first index taken to *first and returns the element count. */
int64_t poprt__slice_axis(int64_t dim, int64_t start, int64_t end, int64_t step, int64_t *first);

/* Expands ONNX pads ([begins..., ends...] for `axes`, or for every axis when
 * axes is NULL) to full[2*rank]. Returns 0 when sizes or axes are invalid. */
int poprt__pad_full(int rank, const int64_t *pads, int64_t npads, const int64_t *axes,
                    int64_t naxes, int64_t *full);

/* Resize/Upsample output plan. in_dims: input dims (all known). scales
 * (nscales) or sizes (nsizes) as given by the node (for `axes` when axes is
 * not NULL). Fills out_dims[rank] and eff_scales[rank] (the scale used by
 * the coordinate transform). Returns 0 on invalid parameters. */
int poprt__resize_plan(const poprt__node *node, int rank, const int64_t *in_dims,
                       const float *scales, int64_t nscales, const int64_t *sizes,
                       int64_t nsizes, const int64_t *axes, int64_t naxes, int64_t *out_dims,
                       double *eff_scales);

/* Squeeze/Unsqueeze/Reshape-like ops read integer lists either from an
 * input (newer opsets) or an attribute (older ones). */

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
