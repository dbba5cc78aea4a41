/* fuzz_model: bytes as an ONNX ModelProto through the public API: load,
 * serialize and load again (the second serialization must equal the first),
 * then, unless a tensor of the model would be huge (fz_model_too_big),
 * compile a session (threads=1) and run it once on inputs made from the
 * same bytes (fz_run). */
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    unsetenv("POPRT_CACHE_DIR"); /* no engine cache: nothing is written */
    return 0;
}

/* What the model serializes to must load back and serialize the same. */
static void round_trip(const poprt_model *m)
{
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    poprt_model *again = NULL;
    poprt_status st = poprt_model_serialize(m, &a, &na);
    if (st == POPRT_STATUS_OUT_OF_MEMORY)
        return;
    fz_check(st, "poprt_model_serialize of a loaded model");
    fz_check(poprt_model_load_from_memory(a, na, NULL, &again),
             "loading what poprt_model_serialize wrote");
    fz_check(poprt_model_serialize(again, &b, &nb), "poprt_model_serialize, second time");
    if (na != nb || memcmp(a, b, na) != 0)
        fz_fail("round trip", "serialize(load(serialize(m))) differs from serialize(m)");
    poprt_buffer_free(a);
    poprt_buffer_free(b);
    poprt_model_free(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    poprt_model *m = NULL;
    if (poprt_model_load_from_memory(data, size, NULL, &m) != POPRT_OK)
        return 0;
    round_trip(m);
    if (!fz_model_too_big(m))
        fz_session_run(m, NULL, (fz_bytes){data, size});
    poprt_model_free(m);
    return 0;
}
