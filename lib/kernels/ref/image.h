/* Reference kernel of the 'image' group. */
#ifndef POPRT_REF_IMAGE_H
#define POPRT_REF_IMAGE_H
#include "kernels/kernel.h"

/* ImageDecoder: BMP, PNM, PNG and uncompressed TIFF (others: UNSUPPORTED). */
poprt_status poprt__ref_image_decoder(poprt__kctx *k);

#endif
