/* Reference kernel of the 'image' group: ImageDecoder (the formats:
 * lib/kernels/image_decode.h). */
#include <string.h>
#include "kernels/image_decode.h"
#include "kernels/ref/image.h"
#include "kernels/ref/util.h"

poprt_status poprt__ref_image_decoder(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt_status st = poprt__ref_need(k, x && x->dtype == POPRT_DTYPE_UINT8);
    if (st)
        return st;
    const uint8_t *p = x->data;
    const size_t n = (size_t)x->numel;
    const char *fmt = poprt__attr_s(k->node, "pixel_format", "RGB");
    poprt__image im = {0};
    st = poprt__image_decode(k, p, n, &im);
    if (st)
        return st;
    const int gray = strcmp(fmt, "Grayscale") == 0, bgr = strcmp(fmt, "BGR") == 0;
    int64_t od[3] = {im.h, im.w, gray ? 1 : 3};
    if ((st = poprt__kctx_alloc_output(k, 0, POPRT_DTYPE_UINT8, 3, od)))
        return st;
    poprt__tval *y = poprt__kout(k, 0);
    if (!y)
        return POPRT_OK;
    uint8_t *o = y->data;
    for (int64_t i = 0; i < im.w * im.h; i++) {
        const uint8_t *px = im.rgb + i * 3;
        if (gray) /* ITU-R 601-2 luma, as PIL's convert("L") */
            o[i] = (uint8_t)((px[0] * 19595u + px[1] * 38470u + px[2] * 7471u + 0x8000u) >> 16);
        else {
            o[i * 3] = px[bgr ? 2 : 0];
            o[i * 3 + 1] = px[1];
            o[i * 3 + 2] = px[bgr ? 0 : 2];
        }
    }
    return POPRT_OK;
}
