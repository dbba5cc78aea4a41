/* Reference kernels of the 'signal' group: HannWindow, HammingWindow,
 * BlackmanWindow, MelWeightMatrix, DFT, STFT (computed in double). */
#include <math.h>
#include <string.h>
#include "kernels/ref/signal.h"
#include "kernels/ref/util.h"

#define QM_PI 3.14159265358979323846

/* ---- window functions ---------------------------------------------------------- */

poprt_status poprt__misc_window(poprt__kctx *k, int kind)
{
    const poprt__tval *sz = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, sz && y);
    if (st)
        return st;
    const int64_t n = y->numel;
    const int periodic = (int)poprt__attr_i(k->node, "periodic", 1);
    const double den = periodic ? (double)n : (double)(n - 1);
    for (int64_t i = 0; i < n; i++) {
        double t = den > 0 ? 2.0 * QM_PI * (double)i / den : 0.0, v;
        if (kind == POPRT__WIN_HANN)
            v = 0.5 - 0.5 * cos(t);
        else if (kind == POPRT__WIN_HAMMING)
            v = 25.0 / 46.0 - (21.0 / 46.0) * cos(t);
        else
            v = 0.42 - 0.5 * cos(t) + 0.08 * cos(2.0 * t);
        poprt__store_f64(y->data, y->dtype, i, v);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_hann_window(poprt__kctx *k) { return poprt__misc_window(k, POPRT__WIN_HANN); }
poprt_status poprt__ref_hamming_window(poprt__kctx *k)
{
    return poprt__misc_window(k, POPRT__WIN_HAMMING);
}
poprt_status poprt__ref_blackman_window(poprt__kctx *k)
{
    return poprt__misc_window(k, POPRT__WIN_BLACKMAN);
}

poprt_status poprt__ref_mel_weight_matrix(poprt__kctx *k)
{
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, y && poprt__kin(k, 0) && poprt__kin(k, 1) && poprt__kin(k, 2) &&
                                     poprt__kin(k, 3) && poprt__kin(k, 4));
    if (st)
        return st;
    const int64_t nmel = poprt__ref_scalar_i(poprt__kin(k, 0), 0);
    const int64_t dft = poprt__ref_scalar_i(poprt__kin(k, 1), 0);
    const int64_t rate = poprt__ref_scalar_i(poprt__kin(k, 2), 1);
    const double lo = poprt__ref_scalar_f(poprt__kin(k, 3), 0), hi = poprt__ref_scalar_f(poprt__kin(k, 4), 0);
    const int64_t nspec = dft / 2 + 1;
    if (nmel < 0 || rate <= 0 || y->numel != nspec * nmel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "invalid mel parameters");
    int64_t *bins = poprt__kctx_scratch(k, (size_t)(nmel + 2) * sizeof *bins);
    if (!bins)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    /* mel-spaced edges mapped to FFT bins (ONNX's reference formulation) */
    const double lmel = 2595.0 * log10(1.0 + lo / 700.0), hmel = 2595.0 * log10(1.0 + hi / 700.0);
    const double step = (hmel - lmel) / (double)(nmel + 2);
    for (int64_t i = 0; i < nmel + 2; i++) {
        double hz = 700.0 * (pow(10.0, ((double)i * step + lmel) / 2595.0) - 1.0);
        bins[i] = (int64_t)floor((double)(dft + 1) * hz / (double)rate);
    }
    for (int64_t i = 0; i < y->numel; i++)
        poprt__store_f64(y->data, y->dtype, i, 0.0);
    for (int64_t m = 0; m < nmel; m++) {
        int64_t l = bins[m], c = bins[m + 1], r = bins[m + 2];
        if (c - l == 0) {
            if (c >= 0 && c < nspec)
                poprt__store_f64(y->data, y->dtype, c * nmel + m, 1.0);
        } else {
            for (int64_t j = l; j <= c; j++)
                if (j >= 0 && j < nspec)
                    poprt__store_f64(y->data, y->dtype, j * nmel + m,
                                     (double)(j - l) / (double)(c - l));
        }
        if (r - c > 0)
            for (int64_t j = c; j < r; j++)
                if (j >= 0 && j < nspec)
                    poprt__store_f64(y->data, y->dtype, j * nmel + m,
                                     (double)(r - j) / (double)(r - c));
    }
    return POPRT_OK;
}

/* ---- DFT / STFT -------------------------------------------------------------------- */

/* out[0..nout) (complex, interleaved) = DFT of length L of the complex
 * signal in[0..n) (zero padded / truncated to L); sign -1 forward, +1 inverse. */
static void qm_dft(const double *in, int64_t n, int64_t L, int inverse, const double *cs,
                   const double *sn, double *out, int64_t nout)
{
    const int64_t m = n < L ? n : L;
    for (int64_t f = 0; f < nout; f++) {
        double re = 0, im = 0;
        int64_t idx = 0; /* (f * t) mod L, kept exact */
        for (int64_t t = 0; t < m; t++) {
            const double c = cs[idx], s = inverse ? sn[idx] : -sn[idx];
            re += in[2 * t] * c - in[2 * t + 1] * s;
            im += in[2 * t] * s + in[2 * t + 1] * c;
            idx += f;
            idx %= L;
        }
        if (inverse) {
            re /= (double)L;
            im /= (double)L;
        }
        out[2 * f] = re;
        out[2 * f + 1] = im;
    }
}

static poprt_status qm_twiddles(poprt__kctx *k, int64_t L, double **cs, double **sn)
{
    *cs = poprt__kctx_scratch(k, (size_t)(L + 1) * sizeof **cs);
    *sn = poprt__kctx_scratch(k, (size_t)(L + 1) * sizeof **sn);
    if (!*cs || !*sn)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (int64_t i = 0; i < L; i++) {
        double a = 2.0 * QM_PI * (double)i / (double)L;
        (*cs)[i] = cos(a);
        (*sn)[i] = sin(a);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_dft(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y);
    if (st)
        return st;
    int64_t axis;
    if (k->opset >= 20)
        axis = poprt__ref_scalar_i(poprt__kin(k, 2), -2);
    else
        axis = poprt__attr_i(k->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (x->rank < 2 || axis < 0 || axis >= x->rank - 1)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "invalid DFT axis");
    const int inverse = (int)poprt__attr_i(k->node, "inverse", 0);
    const int64_t n = x->dims[axis], cin = x->dims[x->rank - 1];
    const int64_t L = poprt__kin(k, 1) ? poprt__ref_scalar_i(poprt__kin(k, 1), n) : n;
    const int64_t nout = y->dims[axis];
    if (L <= 0 || (cin != 1 && cin != 2))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "invalid DFT length or input");
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; i++)
        outer *= x->dims[i];
    for (int i = (int)axis + 1; i < x->rank - 1; i++)
        inner *= x->dims[i];
    double *cs, *sn;
    if ((st = qm_twiddles(k, L, &cs, &sn)))
        return st;
    double *sig = poprt__kctx_scratch(k, (size_t)(2 * n + 2) * sizeof *sig);
    double *res = poprt__kctx_scratch(k, (size_t)(2 * nout + 2) * sizeof *res);
    if (!sig || !res)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (int64_t o = 0; o < outer; o++)
        for (int64_t r = 0; r < inner; r++) {
            for (int64_t t = 0; t < n; t++) {
                int64_t base = ((o * n + t) * inner + r) * cin;
                sig[2 * t] = poprt__load_f64(x->data, x->dtype, base);
                sig[2 * t + 1] = cin == 2 ? poprt__load_f64(x->data, x->dtype, base + 1) : 0.0;
            }
            qm_dft(sig, n, L, inverse, cs, sn, res, nout);
            for (int64_t f = 0; f < nout; f++) {
                int64_t base = ((o * nout + f) * inner + r) * 2;
                poprt__store_f64(y->data, y->dtype, base, res[2 * f]);
                poprt__store_f64(y->data, y->dtype, base + 1, res[2 * f + 1]);
            }
        }
    return POPRT_OK;
}

poprt_status poprt__ref_stft(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0), *stp = poprt__kin(k, 1), *win = poprt__kin(k, 2);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && stp && y && x->rank == 3 && y->rank == 4);
    if (st)
        return st;
    const int64_t B = x->dims[0], n = x->dims[1], cin = x->dims[2];
    const int64_t step = poprt__ref_scalar_i(stp, 1);
    const int64_t fl = poprt__kin(k, 3) ? poprt__ref_scalar_i(poprt__kin(k, 3), 0) : (win ? win->numel : 0);
    const int64_t nfr = y->dims[1], nbins = y->dims[2];
    if (fl <= 0 || step <= 0 || (cin != 1 && cin != 2) || (win && win->numel != fl))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "invalid STFT parameters");
    double *cs, *sn;
    if ((st = qm_twiddles(k, fl, &cs, &sn)))
        return st;
    double *sig = poprt__kctx_scratch(k, (size_t)(2 * fl + 2) * sizeof *sig);
    double *res = poprt__kctx_scratch(k, (size_t)(2 * nbins + 2) * sizeof *res);
    if (!sig || !res)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    for (int64_t b = 0; b < B; b++)
        for (int64_t f = 0; f < nfr; f++) {
            for (int64_t t = 0; t < fl; t++) {
                int64_t pos = f * step + t;
                double w = win ? poprt__load_f64(win->data, win->dtype, t) : 1.0;
                double re = 0, im = 0;
                if (pos < n) {
                    int64_t base = (b * n + pos) * cin;
                    re = poprt__load_f64(x->data, x->dtype, base);
                    im = cin == 2 ? poprt__load_f64(x->data, x->dtype, base + 1) : 0.0;
                }
                sig[2 * t] = re * w;
                sig[2 * t + 1] = im * w;
            }
            qm_dft(sig, fl, fl, 0, cs, sn, res, nbins);
            for (int64_t i = 0; i < 2 * nbins; i++)
                poprt__store_f64(y->data, y->dtype, ((b * nfr + f) * nbins) * 2 + i, res[i]);
        }
    return POPRT_OK;
}
