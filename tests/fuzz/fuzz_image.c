/* fuzz_image: the ImageDecoder kernel's decoders (BMP, PNM, uncompressed
 * TIFF, PNG with its inflate) through the operator: one session per pixel
 * format (RGB, BGR, Grayscale) of a one-node model whose input is the
 * encoded bytes (uint8[n]), created once; each input is run through the
 * format its first byte chooses. */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

static poprt_session *sessions[3];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    static const char *const files[3] = {"fuzz/models/image_rgb.onnx",
                                         "fuzz/models/image_bgr.onnx",
                                         "fuzz/models/image_grayscale.onnx"};
    (void)argc;
    (void)argv;
    unsetenv("POPRT_CACHE_DIR");
    for (int i = 0; i < 3; i++) {
        poprt_model *m = fz_model(files[i]);
        fz_check(poprt_session_create(m, NULL, &sessions[i]), files[i]);
        poprt_model_free(m);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_bytes b = {data, size};
    poprt_session *s = sessions[fz_u8(&b) % 3];
    poprt_stepio *io;
    fz_check(poprt_stepio_create(&io), "poprt_stepio_create");
    const int64_t dims[1] = {(int64_t)b.n};
    fz_check(poprt_stepio_set_input(io, "x", POPRT_DTYPE_UINT8, dims, 1, b.p, b.n),
             "poprt_stepio_set_input");
    fz_check(poprt_stepio_set_output_alloc(io, "y"), "poprt_stepio_set_output_alloc");
    if (poprt_session_run(s, io) == POPRT_OK) {
        poprt_dtype dt;
        int rank;
        const int64_t *od;
        size_t nbytes;
        fz_check(poprt_stepio_output(io, "y", &dt, &od, &rank, NULL, &nbytes),
                 "poprt_stepio_output");
        if (dt != POPRT_DTYPE_UINT8 || rank != 3 || (size_t)(od[0] * od[1] * od[2]) != nbytes)
            fz_fail("ImageDecoder", "output shape and size disagree");
    }
    poprt_stepio_free(io);
    return 0;
}
