/* 2-D max pooling of one plane, AVX-512 (see pool.h). */
#include <immintrin.h>
#include "kernels/x86/pool.h"

/* Lanes of a vector at column w of a run of n columns: all 16, or the
 * n - w left at its end. */
static inline __mmask16 lanes_at(int64_t w, int64_t n)
{
    return n - w >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - w)) - 1u);
}

/* Layout of the row buffer: PW + 16 floats of -inf border before the first
 * input column is not needed, only PW; the reads of the column pass reach
 * (OW - 1) * SW + KW rounded up to whole vectors plus one vector for the
 * odd lanes of stride 2, so the buffer covers that and the input row. */
int64_t poprt__maxpool2d_row_floats_avx512(const poprt__maxpool2d_geom *g)
{
    int64_t need = (g->OW - 1) * g->SW + g->KW;
    if (need < g->PW + g->IW)
        need = g->PW + g->IW;
    return need + 3 * 16;
}

int poprt__maxpool2d_plane_avx512(const poprt__maxpool2d_geom *g, const float *x, float *y,
                                  float *row)
{
    const int64_t IH = g->IH, IW = g->IW, OH = g->OH, OW = g->OW;
    const int64_t KH = g->KH, KW = g->KW, SH = g->SH, SW = g->SW, PW = g->PW;
    const int64_t RW = poprt__maxpool2d_row_floats_avx512(g);
    const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27,
                                          29, 31);
    __mmask16 nan = 0;
    /* the border: -inf everywhere, the input columns overwritten per row
     * (the vector stores past IW write -inf too, from the masked loads) */
    for (int64_t w = 0; w < RW; w += 16)
        _mm512_mask_storeu_ps(row + w, lanes_at(w, RW), ninf);
    float *rm = row + PW;
    for (int64_t oh = 0; oh < OH; oh++) {
        int64_t h0 = oh * SH - g->PH, h1 = h0 + KH;
        if (h0 < 0)
            h0 = 0;
        if (h1 > IH)
            h1 = IH;
        for (int64_t w = 0; w < IW; w += 16) {
            const __mmask16 m = lanes_at(w, IW);
            __m512 v = _mm512_mask_loadu_ps(ninf, m, x + h0 * IW + w);
            nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
            for (int64_t h = h0 + 1; h < h1; h++) {
                const __m512 u = _mm512_mask_loadu_ps(ninf, m, x + h * IW + w);
                nan |= _mm512_cmp_ps_mask(u, u, _CMP_UNORD_Q);
                v = _mm512_max_ps(v, u);
            }
            _mm512_storeu_ps(rm + w, v);
        }
        float *yr = y + oh * OW;
        if (SW == 2) {
            for (int64_t ow = 0; ow < OW; ow += 16) {
                const float *p = row + 2 * ow;
                __m512 lo = _mm512_loadu_ps(p), hi = _mm512_loadu_ps(p + 16);
                __m512 v = _mm512_permutex2var_ps(lo, even, hi);
                if (KW > 1)
                    v = _mm512_max_ps(v, _mm512_permutex2var_ps(lo, odd, hi));
                for (int64_t kw = 2; kw < KW; kw += 2) {
                    lo = _mm512_loadu_ps(p + kw);
                    hi = _mm512_loadu_ps(p + kw + 16);
                    v = _mm512_max_ps(v, _mm512_permutex2var_ps(lo, even, hi));
                    if (kw + 1 < KW)
                        v = _mm512_max_ps(v, _mm512_permutex2var_ps(lo, odd, hi));
                }
                _mm512_mask_storeu_ps(yr + ow, lanes_at(ow, OW), v);
            }
        } else if (SW == 1) {
            for (int64_t ow = 0; ow < OW; ow += 16) {
                __m512 v = _mm512_loadu_ps(row + ow);
                for (int64_t kw = 1; kw < KW; kw++)
                    v = _mm512_max_ps(v, _mm512_loadu_ps(row + ow + kw));
                _mm512_mask_storeu_ps(yr + ow, lanes_at(ow, OW), v);
            }
        } else {
            for (int64_t ow = 0; ow < OW; ow++) {
                const float *p = row + ow * SW;
                float v = p[0];
                for (int64_t kw = 1; kw < KW; kw++)
                    v = p[kw] > v ? p[kw] : v;
                yr[ow] = v;
            }
        }
    }
    return nan == 0;
}

/* BlockedMaxPool's rows (pool_blocked_body.inc): one zmm per position. */
typedef __m512 bmp_v;
static inline __attribute__((always_inline)) bmp_v bmp_load(const float *p)
{
    return _mm512_loadu_ps(p);
}
static inline __attribute__((always_inline)) void bmp_store(float *p, bmp_v v)
{
    _mm512_storeu_ps(p, v);
}
static inline __attribute__((always_inline)) bmp_v bmp_max(bmp_v p, bmp_v b)
{
    return _mm512_max_ps(p, b);
}
#define MP_ISA avx512
#include "kernels/x86/pool_blocked_body.inc"
