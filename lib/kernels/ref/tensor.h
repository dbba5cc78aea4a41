/* Reference kernels of the 'tensor' family (data movement, indexing,
 * padding, resizing). The parameter helpers that inference shares with
 * them (Slice, Pad, Resize) live in lib/ir/geom.h. */
#ifndef POPRT_REF_TENSOR_H
#define POPRT_REF_TENSOR_H
#include "kernels/kernel.h"
#include "ir/geom.h"

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
