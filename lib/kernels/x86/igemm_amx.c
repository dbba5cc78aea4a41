/* The integer GEMM's AMX-INT8 variant (igemm.h): a 32 x 32 tile of C as 4
 * accumulator tiles of 16 x 16 int32, TDPBUSD multiplying 16 rows x 64
 * bytes of A (uint8, read in place, rows lda apart) by 16 groups of 4 k x
 * 16 columns of B (int8): the packed B panel's layout is already the one a
 * B tile takes (group q of panel p at q * 64, column j at j * 4), so a B
 * tile is 16 consecutive groups of one panel and the two panels of a tile
 * are pstride bytes apart. Compiled alone with -mamx-tile -mamx-int8 on top
 * of the AVX-512 flags, entered only at the AMX level.
 *
 * Tiles read whole rows of 64 bytes and whole tiles of 16 rows, so the
 * parts of the tile a full tile would read past (rows past mr of A, panels
 * past nr, the groups after the last whole 16 of this K block) go to the
 * VNNI micro-kernel instead, which adds them to the same int32 sums: every
 * product is exact, so the result is the same whichever unit computed it. */
#include <immintrin.h>
#include <string.h>
#include "kernels/x86/igemm.h"

#define MR 32
#define NR 32
#define VNNI_MR 12 /* the avx512_vnni variant's rows */

/* the VNNI micro-kernel over rows [0, mr) in its own tile height */
static void vnni_rows(int64_t kq, int mr, int nr, const uint8_t *a, int64_t lda, const int8_t *b,
                      int64_t pstride, int32_t *c, int64_t ldc, int accumulate)
{
    for (int r = 0; r < mr; r += VNNI_MR)
        poprt__igemm_ukr_avx512_vnni(kq, mr - r < VNNI_MR ? mr - r : VNNI_MR, nr, a + r * lda,
                                     lda, b, pstride, c + r * ldc, ldc, accumulate);
}

void poprt__igemm_ukr_amx_int8(int64_t kq, int mr, int nr, const uint8_t *a, int64_t lda,
                               const int8_t *b, int64_t pstride, int32_t *c, int64_t ldc,
                               int accumulate)
{
    const int64_t kt = kq / 16 * 16; /* groups on the tiles */
    if (mr < MR || nr < NR || kt == 0) {
        vnni_rows(kq, mr, nr, a, lda, b, pstride, c, ldc, accumulate);
        return;
    }
    const int64_t cs = ldc * 4;
    if (accumulate) {
        _tile_loadd(0, c, cs);
        _tile_loadd(1, c + 16, cs);
        _tile_loadd(2, c + 16 * ldc, cs);
        _tile_loadd(3, c + 16 * ldc + 16, cs);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
    for (int64_t q = 0; q < kt; q += 16) {
        _tile_loadd(4, a + 4 * q, lda);
        _tile_loadd(6, b + q * 64, 64);
        _tile_loadd(7, b + pstride + q * 64, 64);
        _tile_loadd(5, a + 16 * lda + 4 * q, lda);
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
    }
    _tile_stored(0, c, cs);
    _tile_stored(1, c + 16, cs);
    _tile_stored(2, c + 16 * ldc, cs);
    _tile_stored(3, c + 16 * ldc + 16, cs);
    if (kt < kq)
        vnni_rows(kq - kt, mr, nr, a + 4 * kt, lda, b + kt * 64, pstride, c, ldc, 1);
}
