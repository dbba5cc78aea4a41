/* Image files decoded to RGB pixels, for the ImageDecoder kernel
 * (lib/kernels/ref/image.c): BMP, PNM, uncompressed TIFF and PNG (with our
 * own inflate). JPEG, JPEG 2000 and WebP are not decoded (UNSUPPORTED). */
#ifndef POPRT_KERNELS_IMAGE_DECODE_H
#define POPRT_KERNELS_IMAGE_DECODE_H

#include "kernels/kernel.h"

typedef struct poprt__image {
    int64_t w, h;
    uint8_t *rgb; /* h * w * 3, in k's scratch */
} poprt__image;

/* Decodes the n bytes at p into im. Errors name k's node: UNSUPPORTED for
 * other formats and for images of more than 2^27 pixels, RUNTIME_ERROR for
 * malformed files, OUT_OF_MEMORY. */
poprt_status poprt__image_decode(poprt__kctx *k, const uint8_t *p, size_t n, poprt__image *im);

#endif
