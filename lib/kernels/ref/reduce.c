/* Reference kernels of the 'reduce' group: Reduce*, ArgMax/ArgMin,
 * Softmax/LogSoftmax/Hardmax.
 *
 * Determinism: every output element is computed by one thread in a fixed
 * order; work split across threads never changes the summation order. */
#include <math.h>
#include <string.h>
#include "kernels/ref/elem.h"
#include "kernels/ref/reduce.h"

/* Smallest / largest key of an integer dtype (identities of Max / Min). */
static void key_limits(int32_t dt, int64_t *lo, int64_t *hi)
{
    switch (dt) {
    case POPRT_DTYPE_BOOL:
        *lo = 0, *hi = 1;
        break;
    case POPRT_DTYPE_INT8:
        *lo = INT8_MIN, *hi = INT8_MAX;
        break;
    case POPRT_DTYPE_UINT8:
        *lo = 0, *hi = UINT8_MAX;
        break;
    case POPRT_DTYPE_INT16:
        *lo = INT16_MIN, *hi = INT16_MAX;
        break;
    case POPRT_DTYPE_UINT16:
        *lo = 0, *hi = UINT16_MAX;
        break;
    case POPRT_DTYPE_INT32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        break;
    case POPRT_DTYPE_UINT32:
        *lo = 0, *hi = UINT32_MAX;
        break;
    case POPRT_DTYPE_INT4:
        *lo = -8, *hi = 7;
        break;
    case POPRT_DTYPE_UINT4:
        *lo = 0, *hi = 15;
        break;
    default: /* int64, and uint64 in its shifted key form */
        *lo = INT64_MIN, *hi = INT64_MAX;
    }
}

/* ============================== Reduce* ===================================== */

typedef enum rkind {
    R_SUM,
    R_MEAN,
    R_MAX,
    R_MIN,
    R_PROD,
    R_L1,
    R_L2,
    R_LOGSUM,
    R_LOGSUMEXP,
    R_SUMSQ
} rkind;

static int rkind_of(const char *op, rkind *out)
{
    static const struct {
        const char *name;
        rkind kind;
    } map[] = {
        {"ReduceSum", R_SUM},       {"ReduceMean", R_MEAN},       {"ReduceMax", R_MAX},
        {"ReduceMin", R_MIN},       {"ReduceProd", R_PROD},       {"ReduceL1", R_L1},
        {"ReduceL2", R_L2},         {"ReduceLogSum", R_LOGSUM},   {"ReduceLogSumExp", R_LOGSUMEXP},
        {"ReduceSumSquare", R_SUMSQ},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(op, map[i].name) == 0) {
            *out = map[i].kind;
            return 1;
        }
    return 0;
}

/* Combining steps applied to a row of loaded values. */
enum { C_ADD, C_MUL, C_MAX, C_MIN, C_ADDABS, C_ADDSQ, C_ADDEXP };

#define ROWBUF 1024

static void comb_f64(int op, double *acc, const double *v, int64_t n, int red, const double *mx)
{
    double a;
    switch (op) {
    case C_ADD:
        if (red) {
            for (a = *acc; n-- > 0;)
                a += *v++;
            *acc = a;
        } else
            for (int64_t j = 0; j < n; j++)
                acc[j] += v[j];
        break;
    case C_MUL:
        if (red) {
            for (a = *acc; n-- > 0;)
                a *= *v++;
            *acc = a;
        } else
            for (int64_t j = 0; j < n; j++)
                acc[j] *= v[j];
        break;
    case C_MAX: /* NaN propagates, as numpy's maximum */
        for (int64_t j = 0; j < n; j++) {
            double *p = red ? acc : acc + j;
            if (v[j] > *p || isnan(v[j]))
                *p = isnan(*p) ? *p : v[j];
        }
        break;
    case C_MIN:
        for (int64_t j = 0; j < n; j++) {
            double *p = red ? acc : acc + j;
            if (v[j] < *p || isnan(v[j]))
                *p = isnan(*p) ? *p : v[j];
        }
        break;
    case C_ADDABS:
        if (red) {
            for (a = *acc; n-- > 0;)
                a += fabs(*v++);
            *acc = a;
        } else
            for (int64_t j = 0; j < n; j++)
                acc[j] += fabs(v[j]);
        break;
    case C_ADDSQ:
        if (red) {
            for (a = *acc; n-- > 0; v++)
                a += *v * *v;
            *acc = a;
        } else
            for (int64_t j = 0; j < n; j++)
                acc[j] += v[j] * v[j];
        break;
    case C_ADDEXP: /* sum of exp(x - max) for LogSumExp */
        if (red) {
            a = *acc;
            if (isfinite(*mx))
                for (int64_t j = 0; j < n; j++)
                    a += exp(v[j] - *mx);
            *acc = a;
        } else
            for (int64_t j = 0; j < n; j++)
                if (isfinite(mx[j]))
                    acc[j] += exp(v[j] - mx[j]);
        break;
    }
}

/* float32 input straight from memory (the common case): sums over a
 * contiguous reduced run use four partial sums in a fixed order. */
static int comb_f32(int op, double *acc, const float *v, int64_t n, int red)
{
    if (op != C_ADD && op != C_ADDSQ && op != C_ADDABS)
        return 0;
    if (red) {
        double p[4] = {0, 0, 0, 0};
        int64_t j = 0;
        for (; j + 4 <= n; j += 4)
            for (int l = 0; l < 4; l++) {
                double x = v[j + l];
                p[l] += op == C_ADD ? x : op == C_ADDSQ ? x * x : fabs(x);
            }
        for (; j < n; j++) {
            double x = v[j];
            p[0] += op == C_ADD ? x : op == C_ADDSQ ? x * x : fabs(x);
        }
        *acc += (p[0] + p[1]) + (p[2] + p[3]);
    } else {
        for (int64_t j = 0; j < n; j++) {
            double x = v[j];
            acc[j] += op == C_ADD ? x : op == C_ADDSQ ? x * x : fabs(x);
        }
    }
    return 1;
}

static void comb_i64(int op, int64_t *acc, const int64_t *v, int64_t n, int red)
{
    for (int64_t j = 0; j < n; j++) {
        int64_t *p = red ? acc : acc + j;
        int64_t x = v[j];
        switch (op) {
        case C_ADD: /* wrap-around like the fixed-width types */
            *p = (int64_t)((uint64_t)*p + (uint64_t)x);
            break;
        case C_MUL:
            *p = (int64_t)((uint64_t)*p * (uint64_t)x);
            break;
        case C_MAX:
            if (x > *p)
                *p = x;
            break;
        case C_MIN:
            if (x < *p)
                *p = x;
            break;
        case C_ADDABS:
            *p = (int64_t)((uint64_t)*p + (uint64_t)(x < 0 ? -(uint64_t)x : (uint64_t)x));
            break;
        case C_ADDSQ:
            *p = (int64_t)((uint64_t)*p + (uint64_t)x * (uint64_t)x);
            break;
        }
    }
}

/* Walks x in row-major order: the input's axes are collapsed into groups
 * of consecutive reduced / kept axes; the innermost group is the contiguous
 * run handed to the combining step together with its output slot(s). */
typedef struct rwalk {
    int G;
    int64_t gs[POPRT__MAX_RANK]; /* group sizes */
    int64_t os[POPRT__MAX_RANK]; /* output stride of each group (0: reduced) */
    unsigned char gr[POPRT__MAX_RANK];
} rwalk;

static void rwalk_init(rwalk *w, int rank, const int64_t *dims, const unsigned char *red)
{
    w->G = 0;
    for (int i = 0; i < rank; i++) {
        if (dims[i] == 1)
            continue;
        if (w->G > 0 && w->gr[w->G - 1] == red[i]) {
            w->gs[w->G - 1] *= dims[i];
        } else {
            w->gs[w->G] = dims[i];
            w->gr[w->G] = red[i];
            w->G++;
        }
    }
    if (w->G == 0) {
        w->gs[0] = 1;
        w->gr[0] = 1;
        w->G = 1;
    }
    int64_t s = 1;
    for (int g = w->G - 1; g >= 0; g--) {
        w->os[g] = w->gr[g] ? 0 : s;
        if (!w->gr[g])
            s *= w->gs[g];
    }
}

/* Runs one pass over x. f64 path when acc_d, else int64 path with acc_i. */
static void reduce_pass(const rwalk *w, const poprt__tval *x, int op, double *acc_d,
                        int64_t *acc_i, const double *mx, double *bufd, int64_t *bufi)
{
    int G = w->G;
    int64_t inner = w->gs[G - 1];
    int red = w->gr[G - 1];
    int64_t nouter = x->numel / inner;
    int64_t idx[POPRT__MAX_RANK] = {0};
    int64_t o = 0;
    for (int64_t it = 0; it < nouter; it++) {
        int64_t base = it * inner;
        for (int64_t j0 = 0; j0 < inner; j0 += ROWBUF) {
            int64_t m = inner - j0 < ROWBUF ? inner - j0 : ROWBUF;
            int64_t oo = o + (red ? 0 : j0);
            if (acc_d && x->dtype == POPRT_DTYPE_FLOAT &&
                comb_f32(op, acc_d + oo, (const float *)x->data + base + j0, m, red))
                continue;
            if (acc_d) {
                if (x->dtype == POPRT_DTYPE_FLOAT) {
                    const float *p = (const float *)x->data + base + j0;
                    for (int64_t j = 0; j < m; j++)
                        bufd[j] = p[j];
                } else {
                    for (int64_t j = 0; j < m; j++)
                        bufd[j] = poprt__ref_ld_f64(x->data, x->dtype, base + j0 + j);
                }
                comb_f64(op, acc_d + oo, bufd, m, red, mx ? mx + oo : NULL);
            } else {
                for (int64_t j = 0; j < m; j++)
                    bufi[j] = poprt__ref_ld_key(x->data, x->dtype, base + j0 + j);
                comb_i64(op, acc_i + oo, bufi, m, red);
            }
        }
        for (int g = G - 2; g >= 0; g--) {
            o += w->os[g];
            if (++idx[g] < w->gs[g])
                break;
            o -= w->os[g] * w->gs[g];
            idx[g] = 0;
        }
    }
}

/* Reads the reduction axes into red[]; *n_axes gets their count. */
static poprt_status reduce_axes(poprt__kctx *k, int rank, unsigned char *red, int64_t *n_axes)
{
    const poprt__node *n = k->node;
    memset(red, 0, POPRT__MAX_RANK);
    *n_axes = 0;
    if (poprt__reduce_axes_from_input(n, k->opset)) {
        const poprt__tval *a = poprt__kin(k, 1);
        if (!a)
            return POPRT_OK;
        for (int64_t i = 0; i < a->numel; i++) {
            int64_t v = poprt__load_i64(a->data, a->dtype, i), ax;
            if (!poprt__norm_axis(v, rank, &ax))
                return POPRT__NODE_ERR(n, POPRT_STATUS_RUNTIME_ERROR,
                                       "axis %lld out of range for rank %d", (long long)v, rank);
            red[ax] = 1;
        }
        *n_axes = a->numel;
    } else {
        int64_t na;
        const int64_t *axes = poprt__attr_ints(n, "axes", &na);
        for (int64_t i = 0; i < na; i++) {
            int64_t ax;
            if (!poprt__norm_axis(axes[i], rank, &ax))
                return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                       "axis %lld out of range for rank %d", (long long)axes[i],
                                       rank);
            red[ax] = 1;
        }
        *n_axes = na;
    }
    return POPRT_OK;
}

poprt_status poprt__ref_reduce(poprt__kctx *k) { return poprt__reduce_op(k, NULL); }

poprt_status poprt__reduce_op(poprt__kctx *k, poprt__reduce_rows_fn *rows_fn)
{
    const poprt__node *n = k->node;
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    rkind kind;
    if (!x || !y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing input or output");
    if (!rkind_of(n->op_type, &kind))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "not a reduction");
    int rank = x->rank;
    unsigned char red[POPRT__MAX_RANK];
    int64_t na;
    poprt_status st = reduce_axes(k, rank, red, &na);
    if (st)
        return st;
    if (na == 0 && poprt__attr_i(n, "noop_with_empty_axes", 0)) {
        if (y->nbytes != x->nbytes)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output size differs from input");
        if (x->nbytes && y->data != x->data)
            memcpy(y->data, x->data, x->nbytes);
        return POPRT_OK;
    }
    int64_t count = 1, out_n = 1;
    for (int i = 0; i < rank; i++) {
        if (na == 0)
            red[i] = 1;
        if (red[i])
            count *= x->dims[i];
        else
            out_n *= x->dims[i];
    }
    if (out_n != y->numel)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output has %lld elements, expected %lld",
                               (long long)y->numel, (long long)out_n);
    if (out_n == 0)
        return POPRT_OK;
    if (!poprt__ref_is_float_dt(x->dtype) && !poprt__dtype_is_int(x->dtype) &&
        x->dtype != POPRT_DTYPE_BOOL)
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt__dtype_name(x->dtype));

    /* integers keep exact int64 accumulation where the result is an integer */
    int int_path = !poprt__ref_is_float_dt(x->dtype) && kind != R_MEAN && kind != R_L2 &&
                   kind != R_LOGSUM && kind != R_LOGSUMEXP;
    int op = C_ADD;
    switch (kind) {
    case R_SUM:
    case R_MEAN:
    case R_LOGSUM:
        op = C_ADD;
        break;
    case R_MAX:
    case R_LOGSUMEXP:
        op = C_MAX;
        break;
    case R_MIN:
        op = C_MIN;
        break;
    case R_PROD:
        op = C_MUL;
        break;
    case R_L1:
        op = C_ADDABS;
        break;
    case R_L2:
    case R_SUMSQ:
        op = C_ADDSQ;
        break;
    }
    size_t nacc = (size_t)out_n * (kind == R_LOGSUMEXP ? 2 : 1);
    void *acc = poprt__kctx_scratch(k, nacc * 8);
    void *buf = poprt__kctx_scratch(k, ROWBUF * 8);
    if (!acc || !buf)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    rwalk w;
    rwalk_init(&w, rank, x->dims, red);
    int64_t numel = x->numel;

    if (int_path) {
        int64_t *ai = acc, lo, hi;
        key_limits(x->dtype, &lo, &hi);
        int64_t init = op == C_MUL ? 1 : op == C_MAX ? lo : op == C_MIN ? hi : 0;
        /* poprt__ref_ld_key shifts uint64 keys; their sum/product identity must be shifted too */
        int shifted = x->dtype == POPRT_DTYPE_UINT64 && op != C_MAX && op != C_MIN;
        if (shifted)
            return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED,
                                   "uint64 supports only ReduceMax/ReduceMin");
        for (int64_t i = 0; i < out_n; i++)
            ai[i] = init;
        if (numel)
            reduce_pass(&w, x, op, NULL, ai, NULL, NULL, buf);
        for (int64_t i = 0; i < out_n; i++)
            poprt__ref_st_key(y->data, y->dtype, i, ai[i]);
        return POPRT_OK;
    }

    double *ad = acc;
    double *mx = kind == R_LOGSUMEXP ? ad + out_n : NULL;
    double init = op == C_MUL ? 1.0 : op == C_MAX ? -INFINITY : op == C_MIN ? INFINITY : 0.0;
    for (int64_t i = 0; i < out_n; i++)
        ad[i] = init;
    if (kind == R_LOGSUMEXP) {
        /* stable: max first, then sum exp(x - max) */
        if (numel)
            reduce_pass(&w, x, C_MAX, ad, NULL, NULL, buf, NULL);
        memcpy(mx, ad, (size_t)out_n * sizeof *mx);
        for (int64_t i = 0; i < out_n; i++)
            ad[i] = 0.0;
        if (numel)
            reduce_pass(&w, x, C_ADDEXP, ad, NULL, mx, buf, NULL);
    } else if (numel && rows_fn && x->dtype == POPRT_DTYPE_FLOAT &&
               (op == C_ADD || op == C_ADDSQ || op == C_ADDABS) &&
               (w.G == 1 ? w.gr[0] : w.G == 2 && !w.gr[0] && w.gr[1])) {
        /* the reduced axes trail: rows of w.gs[G - 1] contiguous values */
        const int64_t inner = w.gs[w.G - 1];
        rows_fn(k, x->data, numel / inner, inner, op == C_ADD ? 0 : op == C_ADDSQ ? 1 : 2, ad);
    } else if (numel) {
        reduce_pass(&w, x, op, ad, NULL, NULL, buf, NULL);
    }
    for (int64_t i = 0; i < out_n; i++) {
        double v = ad[i];
        switch (kind) {
        case R_MEAN:
            v = count ? v / (double)count : NAN;
            if (!count && !poprt__ref_is_float_dt(y->dtype))
                v = 0;
            break;
        case R_L2:
            v = sqrt(v);
            break;
        case R_LOGSUM:
            v = log(v);
            break;
        case R_LOGSUMEXP:
            v = isfinite(mx[i]) ? mx[i] + log(v) : mx[i];
            break;
        default:
            break;
        }
        poprt__ref_st_f64(y->data, y->dtype, i, v);
    }
    return POPRT_OK;
}

/* ============================== ArgMax / ArgMin ============================= */

static poprt_status arg_common(poprt__kctx *k, int is_max)
{
    const poprt__node *n = k->node;
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing input or output");
    int64_t axis = poprt__attr_i(n, "axis", 0), ax;
    int last = poprt__attr_i(n, "select_last_index", 0) != 0;
    if (!poprt__norm_axis(axis, x->rank, &ax))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "axis %lld out of range",
                               (long long)axis);
    int64_t outer = 1, inner = 1, len = x->dims[ax];
    for (int i = 0; i < ax; i++)
        outer *= x->dims[i];
    for (int i = (int)ax + 1; i < x->rank; i++)
        inner *= x->dims[i];
    if (outer * inner == 0)
        return POPRT_OK;
    if (len == 0)
        return POPRT__NODE_ERR(n, POPRT_STATUS_RUNTIME_ERROR, "cannot reduce an empty axis");
    int64_t *out = y->data;
    int fl = poprt__ref_is_float_dt(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best_j = 0;
            if (fl) {
                double best = poprt__ref_ld_f64(x->data, x->dtype, base);
                /* NaN wins and the first NaN is kept, like numpy */
                for (int64_t j = 1; j < len && !isnan(best); j++) {
                    double v = poprt__ref_ld_f64(x->data, x->dtype, base + j * inner);
                    int better = isnan(v) || (is_max ? v > best : v < best) ||
                                 (last && v == best);
                    if (better) {
                        best = v;
                        best_j = j;
                    }
                }
            } else {
                int64_t best = poprt__ref_ld_key(x->data, x->dtype, base);
                for (int64_t j = 1; j < len; j++) {
                    int64_t v = poprt__ref_ld_key(x->data, x->dtype, base + j * inner);
                    if ((is_max ? v > best : v < best) || (last && v == best)) {
                        best = v;
                        best_j = j;
                    }
                }
            }
            out[o * inner + i] = best_j;
        }
    return POPRT_OK;
}

poprt_status poprt__ref_argmax(poprt__kctx *k) { return arg_common(k, 1); }
poprt_status poprt__ref_argmin(poprt__kctx *k) { return arg_common(k, 0); }

/* ============================== Softmax family ============================== */

void poprt__ref_softmax_row_f32(const poprt__vmath_variant *vm, const float *x, float *y,
                                int64_t n, int mode)
{
    if (n <= 0)
        return;
    if (mode == 2) {
        int64_t arg = 0;
        for (int64_t j = 1; j < n; j++)
            if (x[j] > x[arg])
                arg = j;
        for (int64_t j = 0; j < n; j++)
            y[j] = j == arg ? 1.0f : 0.0f;
        return;
    }
    /* softmax / log-softmax: max-subtract, exp, sum and scale fused in vector
     * code (lib/kernels/vmath.h); a NaN makes the row NaN */
    vm->softmax(x, y, n, mode);
}

void poprt__ref_softmax_row_f64(const double *x, double *y, int64_t n, int mode)
{
    if (n <= 0)
        return;
    if (mode == 2) {
        int64_t arg = 0;
        for (int64_t j = 1; j < n; j++)
            if (x[j] > x[arg])
                arg = j;
        for (int64_t j = 0; j < n; j++)
            y[j] = j == arg ? 1.0 : 0.0;
        return;
    }
    double m = x[0], s = 0;
    for (int64_t j = 1; j < n; j++)
        if (x[j] > m || isnan(x[j]))
            m = isnan(m) ? m : x[j];
    if (mode == 0) {
        for (int64_t j = 0; j < n; j++) {
            y[j] = exp(x[j] - m);
            s += y[j];
        }
        for (int64_t j = 0; j < n; j++)
            y[j] /= s;
    } else {
        for (int64_t j = 0; j < n; j++)
            s += exp(x[j] - m);
        double ls = log(s);
        for (int64_t j = 0; j < n; j++)
            y[j] = (x[j] - m) - ls;
    }
}

typedef struct smx_job {
    const poprt__tval *x;
    poprt__tval *y;
    int64_t n, inner;
    int mode;
    poprt__ref_chunking ch;
    char *scratch; /* n elements of float or double per chunk */
    const poprt__vmath_variant *vm;
} smx_job;

static void smx_chunk(void *ctx, int64_t c0, int64_t c1)
{
    const smx_job *j = ctx;
    int32_t dt = j->x->dtype;
    int64_t n = j->n, inner = j->inner;
    for (int64_t c = c0; c < c1; c++) {
        int64_t r0, r1;
        poprt__ref_chunk_range(&j->ch, c, &r0, &r1);
        for (int64_t r = r0; r < r1; r++) {
            int64_t o = r / inner, i = r % inner, base = o * n * inner + i;
            if (dt == POPRT_DTYPE_FLOAT && inner == 1) {
                poprt__ref_softmax_row_f32(j->vm, (const float *)j->x->data + base,
                                           (float *)j->y->data + base, n, j->mode);
            } else if (dt == POPRT_DTYPE_DOUBLE) {
                double *b = (double *)j->scratch + c * n;
                for (int64_t t = 0; t < n; t++)
                    b[t] = ((const double *)j->x->data)[base + t * inner];
                poprt__ref_softmax_row_f64(b, b, n, j->mode);
                for (int64_t t = 0; t < n; t++)
                    ((double *)j->y->data)[base + t * inner] = b[t];
            } else {
                float *b = (float *)j->scratch + c * n;
                for (int64_t t = 0; t < n; t++)
                    b[t] = (float)poprt__ref_ld_f64(j->x->data, dt, base + t * inner);
                poprt__ref_softmax_row_f32(j->vm, b, b, n, j->mode);
                for (int64_t t = 0; t < n; t++)
                    poprt__ref_st_f64(j->y->data, dt, base + t * inner, b[t]);
            }
        }
    }
}

static poprt_status softmax_common(poprt__kctx *k, int mode)
{
    const poprt__node *n = k->node;
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing input or output");
    if (!poprt__ref_is_float_dt(x->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt__dtype_name(x->dtype));
    int rank = x->rank;
    int64_t outer = 1, len = 1, inner = 1;
    if (rank > 0) {
        int64_t axis = poprt__attr_i(n, "axis", k->opset >= 13 ? -1 : 1), ax;
        if (!poprt__norm_axis(axis, rank, &ax))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "axis %lld out of range",
                                   (long long)axis);
        for (int i = 0; i < ax; i++)
            outer *= x->dims[i];
        if (k->opset >= 13) {
            len = x->dims[ax];
            for (int i = (int)ax + 1; i < rank; i++)
                inner *= x->dims[i];
        } else {
            /* before 13 the input is coerced to 2-D [outer, rest] */
            for (int i = (int)ax; i < rank; i++)
                len *= x->dims[i];
        }
    }
    if (x->numel == 0)
        return POPRT_OK;
    smx_job job = {x, y, len, inner, mode, poprt__ref_make_chunks(outer * inner, 256), NULL,
                   poprt__kctx_vmath(k)};
    if (!(x->dtype == POPRT_DTYPE_FLOAT && inner == 1)) {
        size_t es = x->dtype == POPRT_DTYPE_DOUBLE ? 8 : 4;
        job.scratch = poprt__kctx_scratch(k, (size_t)job.ch.nchunks * (size_t)len * es);
        if (!job.scratch)
            return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    }
    /* small tensors stay on this thread: waking workers costs more */
    if (x->numel < 16384)
        smx_chunk(&job, 0, job.ch.nchunks);
    else
        poprt__kctx_parallel_for(k, job.ch.nchunks, 1, smx_chunk, &job);
    return POPRT_OK;
}

poprt_status poprt__ref_softmax(poprt__kctx *k) { return softmax_common(k, 0); }
poprt_status poprt__ref_logsoftmax(poprt__kctx *k) { return softmax_common(k, 1); }
poprt_status poprt__ref_hardmax(poprt__kctx *k) { return softmax_common(k, 2); }
