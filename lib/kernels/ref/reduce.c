/* Reference kernels of the 'reduce' family: Reduce*, ArgMax/ArgMin,
 * Softmax/LogSoftmax/Hardmax, Attention, LinearAttention, RotaryEmbedding,
 * NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
 *
 * Determinism: every output element is computed by one thread in a fixed
 * order; work split across threads never changes the summation order. */
#include <math.h>
#include <string.h>
#include "kernels/ref/reduce.h"
#include "kernels/ref/gemm.h"
#include "kernels/x86/vmath.h"

/* ---- element access -------------------------------------------------------- */

static inline double ld_f64(const void *p, int32_t dt, int64_t i)
{
    switch (dt) {
    case POPRT_DTYPE_FLOAT:
        return ((const float *)p)[i];
    case POPRT_DTYPE_DOUBLE:
        return ((const double *)p)[i];
    case POPRT_DTYPE_FLOAT16:
        return poprt__half_to_float(((const uint16_t *)p)[i]);
    case POPRT_DTYPE_BFLOAT16:
        return poprt__bf16_to_float(((const uint16_t *)p)[i]);
    case POPRT_DTYPE_INT32:
        return ((const int32_t *)p)[i];
    case POPRT_DTYPE_INT64:
        return (double)((const int64_t *)p)[i];
    case POPRT_DTYPE_UINT8:
    case POPRT_DTYPE_BOOL:
        return ((const uint8_t *)p)[i];
    case POPRT_DTYPE_INT8:
        return ((const int8_t *)p)[i];
    default:
        return poprt__load_f64(p, dt, i);
    }
}

static inline void st_f64(void *p, int32_t dt, int64_t i, double v)
{
    switch (dt) {
    case POPRT_DTYPE_FLOAT:
        ((float *)p)[i] = (float)v;
        break;
    case POPRT_DTYPE_DOUBLE:
        ((double *)p)[i] = v;
        break;
    case POPRT_DTYPE_FLOAT16:
        ((uint16_t *)p)[i] = poprt__float_to_half((float)v);
        break;
    case POPRT_DTYPE_BFLOAT16:
        ((uint16_t *)p)[i] = poprt__float_to_bf16((float)v);
        break;
    default:
        poprt__store_f64(p, dt, i, v);
    }
}

/* Integers as int64 keys that order like the stored values (uint64 is
 * shifted by 2^63 so signed comparison orders it correctly). */
static inline int64_t ld_key(const void *p, int32_t dt, int64_t i)
{
    switch (dt) {
    case POPRT_DTYPE_INT64:
        return ((const int64_t *)p)[i];
    case POPRT_DTYPE_INT32:
        return ((const int32_t *)p)[i];
    case POPRT_DTYPE_UINT64:
        return (int64_t)(((const uint64_t *)p)[i] ^ 0x8000000000000000ull);
    default:
        return poprt__load_i64(p, dt, i);
    }
}

static inline void st_key(void *p, int32_t dt, int64_t i, int64_t v)
{
    switch (dt) {
    case POPRT_DTYPE_INT64:
        ((int64_t *)p)[i] = v;
        break;
    case POPRT_DTYPE_INT32:
        ((int32_t *)p)[i] = (int32_t)(uint32_t)(uint64_t)v; /* wraps like ONNX's int32 */
        break;
    case POPRT_DTYPE_UINT64:
        ((uint64_t *)p)[i] = (uint64_t)v ^ 0x8000000000000000ull;
        break;
    default:
        poprt__store_i64(p, dt, i, v);
    }
}

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

static int is_float_dt(int32_t dt)
{
    return dt == POPRT_DTYPE_FLOAT || dt == POPRT_DTYPE_DOUBLE || dt == POPRT_DTYPE_FLOAT16 ||
           dt == POPRT_DTYPE_BFLOAT16;
}

/* Splits rows [0, rows) into at most max_chunks fixed chunks so each chunk
 * can own a slice of scratch; results do not depend on the thread count. */
typedef struct chunking {
    int64_t rows, nchunks;
} chunking;

static chunking make_chunks(int64_t rows, int64_t max_chunks)
{
    chunking c = {rows, rows < max_chunks ? rows : max_chunks};
    if (c.nchunks < 1)
        c.nchunks = 1;
    return c;
}

static void chunk_range(const chunking *c, int64_t i, int64_t *b, int64_t *e)
{
    *b = c->rows * i / c->nchunks;
    *e = c->rows * (i + 1) / c->nchunks;
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
                        bufd[j] = ld_f64(x->data, x->dtype, base + j0 + j);
                }
                comb_f64(op, acc_d + oo, bufd, m, red, mx ? mx + oo : NULL);
            } else {
                for (int64_t j = 0; j < m; j++)
                    bufi[j] = ld_key(x->data, x->dtype, base + j0 + j);
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

poprt_status poprt__ref_reduce(poprt__kctx *k)
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
    if (!is_float_dt(x->dtype) && !poprt__dtype_is_int(x->dtype) && x->dtype != POPRT_DTYPE_BOOL)
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt_dtype_name(x->dtype));

    /* integers keep exact int64 accumulation where the result is an integer */
    int int_path = !is_float_dt(x->dtype) && kind != R_MEAN && kind != R_L2 &&
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
        /* ld_key shifts uint64 keys; their sum/product identity must be shifted too */
        int shifted = x->dtype == POPRT_DTYPE_UINT64 && op != C_MAX && op != C_MIN;
        if (shifted)
            return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED,
                                   "uint64 supports only ReduceMax/ReduceMin");
        for (int64_t i = 0; i < out_n; i++)
            ai[i] = init;
        if (numel)
            reduce_pass(&w, x, op, NULL, ai, NULL, NULL, buf);
        for (int64_t i = 0; i < out_n; i++)
            st_key(y->data, y->dtype, i, ai[i]);
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
    } else if (numel) {
        reduce_pass(&w, x, op, ad, NULL, NULL, buf, NULL);
    }
    for (int64_t i = 0; i < out_n; i++) {
        double v = ad[i];
        switch (kind) {
        case R_MEAN:
            v = count ? v / (double)count : NAN;
            if (!count && !is_float_dt(y->dtype))
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
        st_f64(y->data, y->dtype, i, v);
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
    int fl = is_float_dt(x->dtype);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            int64_t base = o * len * inner + i, best_j = 0;
            if (fl) {
                double best = ld_f64(x->data, x->dtype, base);
                /* NaN wins and the first NaN is kept, like numpy */
                for (int64_t j = 1; j < len && !isnan(best); j++) {
                    double v = ld_f64(x->data, x->dtype, base + j * inner);
                    int better = isnan(v) || (is_max ? v > best : v < best) ||
                                 (last && v == best);
                    if (better) {
                        best = v;
                        best_j = j;
                    }
                }
            } else {
                int64_t best = ld_key(x->data, x->dtype, base);
                for (int64_t j = 1; j < len; j++) {
                    int64_t v = ld_key(x->data, x->dtype, base + j * inner);
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

void poprt__ref_softmax_row_f32(const float *x, float *y, int64_t n, int mode)
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
     * code (lib/kernels/x86/vmath.h); a NaN makes the row NaN */
    poprt__vmath_best()->softmax(x, y, n, mode);
}

static void softmax_row_f64(const double *x, double *y, int64_t n, int mode)
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
    chunking ch;
    char *scratch; /* n elements of float or double per chunk */
} smx_job;

static void smx_chunk(void *ctx, int64_t c0, int64_t c1)
{
    const smx_job *j = ctx;
    int32_t dt = j->x->dtype;
    int64_t n = j->n, inner = j->inner;
    for (int64_t c = c0; c < c1; c++) {
        int64_t r0, r1;
        chunk_range(&j->ch, c, &r0, &r1);
        for (int64_t r = r0; r < r1; r++) {
            int64_t o = r / inner, i = r % inner, base = o * n * inner + i;
            if (dt == POPRT_DTYPE_FLOAT && inner == 1) {
                poprt__ref_softmax_row_f32((const float *)j->x->data + base,
                                           (float *)j->y->data + base, n, j->mode);
            } else if (dt == POPRT_DTYPE_DOUBLE) {
                double *b = (double *)j->scratch + c * n;
                for (int64_t t = 0; t < n; t++)
                    b[t] = ((const double *)j->x->data)[base + t * inner];
                softmax_row_f64(b, b, n, j->mode);
                for (int64_t t = 0; t < n; t++)
                    ((double *)j->y->data)[base + t * inner] = b[t];
            } else {
                float *b = (float *)j->scratch + c * n;
                for (int64_t t = 0; t < n; t++)
                    b[t] = (float)ld_f64(j->x->data, dt, base + t * inner);
                poprt__ref_softmax_row_f32(b, b, n, j->mode);
                for (int64_t t = 0; t < n; t++)
                    st_f64(j->y->data, dt, base + t * inner, b[t]);
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
    if (!is_float_dt(x->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt_dtype_name(x->dtype));
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
    smx_job job = {x, y, len, inner, mode, make_chunks(outer * inner, 256), NULL};
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

/* ============================== Attention =================================== */

/* A float view of a [B, H, S, D] tensor stored either 4-D (b, h, s, d) or
 * 3-D (b, s, h*d): row (b, h, s) is D contiguous floats. */
typedef struct view4 {
    const float *p;
    int64_t sb, sh, ss;
} view4;

static inline const float *view_row(const view4 *v, int64_t b, int64_t h, int64_t s)
{
    return v->p + b * v->sb + h * v->sh + s * v->ss;
}

static view4 make_view(const float *p, int three_d, int64_t H, int64_t S, int64_t D)
{
    view4 v;
    v.p = p;
    if (three_d) {
        v.sb = S * H * D;
        v.sh = D;
        v.ss = H * D;
    } else {
        v.sb = H * S * D;
        v.sh = S * D;
        v.ss = D;
    }
    return v;
}

/* A float copy of t (or t's own data when it is float already). */
static const float *as_f32(poprt__kctx *k, const poprt__tval *t)
{
    if (!t)
        return NULL;
    if (t->dtype == POPRT_DTYPE_FLOAT)
        return t->data;
    float *f = poprt__kctx_scratch(k, (size_t)(t->numel ? t->numel : 1) * sizeof(float));
    if (!f)
        return NULL;
    for (int64_t i = 0; i < t->numel; i++)
        f[i] = (float)ld_f64(t->data, t->dtype, i);
    return f;
}

/* Attention works on units of up to ATT_RB query rows of one (batch, head):
 * two GEMMs give the scores (past keys, then current keys), each row is
 * capped, masked and soft-maxed, two GEMMs accumulate probs @ V. */
#define ATT_RB 32

typedef struct att_job {
    int64_t B, Hq, Hkv, Sq, Skv, P, T, Dk, Dv;
    view4 q, k, v, pk, pv; /* pk / pv: past (4-D) */
    int has_past;
    const float *mask;      /* NULL: none */
    const uint8_t *mask_b;  /* bool mask, NULL: none */
    int64_t mstr[4], mlast; /* broadcast strides over (b, h, i, t); mask's last dim */
    const int64_t *nonpad;  /* [B] or NULL */
    int causal;
    float scale, softcap;
    int qk_mode;
    float *qk_out; /* [B, Hq, Sq, T] float, or NULL */
    view4 yv;      /* float output rows (Y's layout) */
    int64_t nblk;  /* row blocks per (batch, head) */
    chunking ch;   /* over units = B * Hq * nblk */
    float *scratch; /* per chunk: ATT_RB * T scores */
} att_job;

/* Bias, softcap, softmax of one score row s (query i of batch b, head h). */
static void att_row(const att_job *a, int64_t b, int64_t h, int64_t i, float *s)
{
    float *qk = a->qk_out ? a->qk_out + ((b * a->Hq + h) * a->Sq + i) * a->T : NULL;
    /* causal frontier: key t is visible iff t <= i + off */
    int64_t off = a->P;
    if (!a->has_past && a->nonpad)
        off = a->nonpad[b] - a->Sq;
    for (int64_t t = 0; t < a->T; t++) {
        float d = s[t];
        if (qk && a->qk_mode == 0)
            qk[t] = d;
        /* softcap before the mask so masked scores stay -inf */
        if (a->softcap > 0)
            d = a->softcap * tanhf(d / a->softcap);
        if (qk && a->qk_mode == 1)
            qk[t] = d;
        float bias = 0;
        if (a->mask || a->mask_b) {
            if (t >= a->mlast) {
                bias = -INFINITY; /* short masks are padded with -inf */
            } else {
                int64_t mo = b * a->mstr[0] + h * a->mstr[1] + i * a->mstr[2] + t * a->mstr[3];
                bias = a->mask_b ? (a->mask_b[mo] ? 0.0f : -INFINITY) : a->mask[mo];
            }
        }
        if (a->causal && t > i + off)
            bias += -INFINITY;
        if (a->nonpad && t >= a->nonpad[b])
            bias += -INFINITY;
        d += bias;
        if (qk && a->qk_mode == 2)
            qk[t] = d;
        s[t] = d;
    }
    poprt__ref_softmax_row_f32(s, s, a->T, 0);
    if (qk && a->qk_mode == 3)
        memcpy(qk, s, (size_t)a->T * sizeof *s);
}

static void att_chunk(void *ctx, int64_t c0, int64_t c1)
{
    const att_job *a = ctx;
    int64_t rep = a->Hq / a->Hkv, T = a->T, P = a->P;
    for (int64_t c = c0; c < c1; c++) {
        int64_t u0, u1;
        chunk_range(&a->ch, c, &u0, &u1);
        float *S = a->scratch + c * ATT_RB * T;
        for (int64_t u = u0; u < u1; u++) {
            int64_t blk = u % a->nblk, h = (u / a->nblk) % a->Hq, b = u / (a->nblk * a->Hq);
            int64_t hk = h / rep, i0 = blk * ATT_RB;
            int64_t rows = a->Sq - i0 < ATT_RB ? a->Sq - i0 : ATT_RB;
            const float *q = view_row(&a->q, b, h, i0);
            float *y = (float *)view_row(&a->yv, b, h, i0);
            if (T == 0) {
                for (int64_t r = 0; r < rows; r++)
                    memset(y + r * a->yv.ss, 0, (size_t)a->Dv * sizeof *y);
                continue;
            }
            if (P > 0)
                poprt__ref_sgemm(0, 1, rows, P, a->Dk, a->scale, q, a->q.ss,
                                 view_row(&a->pk, b, hk, 0), a->pk.ss, 0.0f, S, T);
            if (a->Skv > 0)
                poprt__ref_sgemm(0, 1, rows, a->Skv, a->Dk, a->scale, q, a->q.ss,
                                 view_row(&a->k, b, hk, 0), a->k.ss, 0.0f, S + P, T);
            for (int64_t r = 0; r < rows; r++)
                att_row(a, b, h, i0 + r, S + r * T);
            if (P > 0)
                poprt__ref_sgemm(0, 0, rows, a->Dv, P, 1.0f, S, T, view_row(&a->pv, b, hk, 0),
                                 a->pv.ss, 0.0f, y, a->yv.ss);
            if (a->Skv > 0)
                poprt__ref_sgemm(0, 0, rows, a->Dv, a->Skv, 1.0f, S + P, T,
                                 view_row(&a->v, b, hk, 0), a->v.ss, P > 0 ? 1.0f : 0.0f, y,
                                 a->yv.ss);
        }
    }
}

/* present = concat(past, cur) along the sequence axis, in the input dtype. */
static void write_present(poprt__tval *out, const poprt__tval *past, const poprt__tval *cur,
                          int three_d, int64_t B, int64_t H, int64_t P, int64_t S, int64_t D)
{
    size_t es = poprt_dtype_size(out->dtype), row = (size_t)D * es;
    char *o = out->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++) {
            for (int64_t t = 0; t < P; t++, o += row)
                memcpy(o, (const char *)past->data + (size_t)(((b * H + h) * P + t) * D) * es,
                       row);
            for (int64_t t = 0; t < S; t++, o += row) {
                int64_t off = three_d ? (b * S + t) * H * D + h * D : ((b * H + h) * S + t) * D;
                memcpy(o, (const char *)cur->data + (size_t)off * es, row);
            }
        }
}

poprt_status poprt__ref_attention(poprt__kctx *k)
{
    const poprt__node *n = k->node;
    const poprt__tval *Q = poprt__kin(k, 0), *K = poprt__kin(k, 1), *V = poprt__kin(k, 2);
    const poprt__tval *M = poprt__kin(k, 3), *PK = poprt__kin(k, 4), *PV = poprt__kin(k, 5);
    const poprt__tval *NP = poprt__kin(k, 6);
    poprt__tval *Y = poprt__kout(k, 0), *PKo = poprt__kout(k, 1), *PVo = poprt__kout(k, 2);
    poprt__tval *QKo = poprt__kout(k, 3);
    if (!Q || !K || !V || !Y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing Q, K, V or Y");
    if (!is_float_dt(Q->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt_dtype_name(Q->dtype));
    if ((Q->rank != 3 && Q->rank != 4) || K->rank != Q->rank || V->rank != Q->rank)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q, K, V must all be 3-D or 4-D");
    if ((PK == NULL) != (PV == NULL))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "past_key and past_value go together");
    int three = Q->rank == 3;
    att_job a;
    memset(&a, 0, sizeof a);
    a.B = Q->dims[0];
    if (K->dims[0] != a.B || V->dims[0] != a.B || (three && V->dims[1] != K->dims[1]))
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "Q, K and V must have one batch size and K, V one sequence");
    if (three) {
        a.Hq = poprt__attr_i(n, "q_num_heads", 0);
        a.Hkv = poprt__attr_i(n, "kv_num_heads", 0);
        if (a.Hq <= 0 || a.Hkv <= 0 || Q->dims[2] % a.Hq || K->dims[2] % a.Hkv ||
            V->dims[2] % a.Hkv)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "hidden sizes must divide by q_num_heads / kv_num_heads");
        a.Sq = Q->dims[1];
        a.Skv = K->dims[1];
        a.Dk = K->dims[2] / a.Hkv;
        a.Dv = V->dims[2] / a.Hkv;
        if (Q->dims[2] / a.Hq != a.Dk)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q and K head sizes differ");
    } else {
        a.Hq = Q->dims[1];
        a.Hkv = K->dims[1];
        a.Sq = Q->dims[2];
        a.Skv = K->dims[2];
        a.Dk = K->dims[3];
        a.Dv = V->dims[3];
        if (Q->dims[3] != a.Dk || V->dims[1] != a.Hkv || V->dims[2] != a.Skv)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q, K, V shapes disagree");
    }
    if (a.Hkv <= 0 || a.Hq % a.Hkv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "q heads (%lld) must be a multiple of kv heads (%lld)",
                               (long long)a.Hq, (long long)a.Hkv);
    a.P = PK ? PK->dims[2] : 0;
    if (PK && (PK->rank != 4 || PV->rank != 4 || PK->dims[0] != a.B || PK->dims[1] != a.Hkv ||
               PK->dims[3] != a.Dk || PV->dims[2] != a.P || PV->dims[3] != a.Dv))
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "past_key/past_value shapes");
    a.T = a.P + a.Skv;
    a.has_past = PK != NULL;
    a.causal = poprt__attr_i(n, "is_causal", 0) != 0;
    const poprt__attr *sa = poprt__node_attr(n, "scale");
    a.scale = sa ? sa->f : (float)(1.0 / sqrt((double)a.Dk));
    a.softcap = poprt__attr_f(n, "softcap", 0.0f);
    a.qk_mode = (int)poprt__attr_i(n, "qk_matmul_output_mode", 0);
    if (a.qk_mode < 0 || a.qk_mode > 3)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "qk_matmul_output_mode %d",
                               a.qk_mode);

    const float *q = as_f32(k, Q), *kk = as_f32(k, K), *vv = as_f32(k, V);
    const float *pk = as_f32(k, PK), *pv = as_f32(k, PV);
    if (!q || !kk || !vv || (PK && (!pk || !pv)))
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    a.q = make_view(q, three, a.Hq, a.Sq, a.Dk);
    a.k = make_view(kk, three, a.Hkv, a.Skv, a.Dk);
    a.v = make_view(vv, three, a.Hkv, a.Skv, a.Dv);
    if (PK) {
        a.pk = make_view(pk, 0, a.Hkv, a.P, a.Dk);
        a.pv = make_view(pv, 0, a.Hkv, a.P, a.Dv);
    }
    if (M && M->numel > 0) {
        if (M->rank < 1 || M->rank > 4)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "attn_mask rank %d", M->rank);
        int64_t full[4] = {a.B, a.Hq, a.Sq, a.T}, s = 1;
        int off = 4 - M->rank;
        for (int d = 3; d >= 0; d--) {
            int md = d - off;
            int64_t md_size = md >= 0 ? M->dims[md] : 1;
            int ok = md_size == 1 || md_size == full[d] || (d == 3 && md_size < full[d]);
            if (!ok)
                return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                       "attn_mask dim %d (%lld) does not broadcast to %lld", md,
                                       (long long)md_size, (long long)full[d]);
            a.mstr[d] = md_size == 1 ? 0 : s; /* size 1 broadcasts */
            s *= md_size;
        }
        int64_t last = M->dims[M->rank - 1];
        a.mlast = (last == 1) ? a.T : last;
        if (M->dtype == POPRT_DTYPE_BOOL) {
            a.mask_b = M->data;
        } else {
            a.mask = as_f32(k, M);
            if (!a.mask)
                return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
        }
    }
    int64_t *np = NULL;
    if (NP) {
        if (NP->numel != a.B)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                                   "nonpad_kv_seqlen has %lld values, batch is %lld",
                                   (long long)NP->numel, (long long)a.B);
        np = poprt__kctx_scratch(k, (size_t)(a.B ? a.B : 1) * sizeof *np);
        if (!np)
            return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
        for (int64_t b = 0; b < a.B; b++)
            np[b] = poprt__load_i64(NP->data, NP->dtype, b);
        a.nonpad = np;
    }
    int64_t rows = a.B * a.Hq * a.Sq;
    if (QKo) {
        if (QKo->numel != rows * a.T)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "qk_matmul_output size");
        a.qk_out = QKo->dtype == POPRT_DTYPE_FLOAT
                       ? QKo->data
                       : poprt__kctx_scratch(k, (size_t)(rows * a.T + 1) * 4);
        if (!a.qk_out)
            return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    }
    if (Y->numel != rows * a.Dv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output Y size");
    float *y = Y->dtype == POPRT_DTYPE_FLOAT
                   ? Y->data
                   : poprt__kctx_scratch(k, (size_t)(Y->numel ? Y->numel : 1) * 4);
    if (!y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    a.yv = make_view(y, three, a.Hq, a.Sq, a.Dv);
    a.nblk = (a.Sq + ATT_RB - 1) / ATT_RB;
    a.ch = make_chunks(a.B * a.Hq * a.nblk, 64);
    a.scratch = poprt__kctx_scratch(k, (size_t)a.ch.nchunks * ATT_RB * (size_t)(a.T + 1) * 4);
    if (!a.scratch)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    if (rows > 0)
        poprt__kctx_parallel_for(k, a.ch.nchunks, 1, att_chunk, &a);

    if (Y->dtype != POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < Y->numel; i++)
            st_f64(Y->data, Y->dtype, i, y[i]);
    if (QKo && QKo->dtype != POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < QKo->numel; i++)
            st_f64(QKo->data, QKo->dtype, i, a.qk_out[i]);
    if (PKo) {
        if (PKo->numel != a.B * a.Hkv * a.T * a.Dk || PKo->dtype != K->dtype)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "present_key shape");
        write_present(PKo, PK, K, three, a.B, a.Hkv, a.P, a.Skv, a.Dk);
    }
    if (PVo) {
        if (PVo->numel != a.B * a.Hkv * a.T * a.Dv || PVo->dtype != V->dtype)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "present_value shape");
        write_present(PVo, PV, V, three, a.B, a.Hkv, a.P, a.Skv, a.Dv);
    }
    return POPRT_OK;
}

/* ============================== FlexAttention =============================== */

/* Values returned by poprt__kctx_run_graph are heap copies owned by the
 * caller (lib/runtime/exec.c). */

/* Applies graph attribute `name` (scores -> scores) to s [B, H, L, S] in
 * place; a bool result is a keep-mask (false -> -inf). */
static poprt_status flex_mod(poprt__kctx *k, const char *name, int32_t dt, const int64_t *dims,
                             float *s, int64_t cnt)
{
    const poprt__attr *a = poprt__node_attr(k->node, name);
    if (!a || a->type != POPRT__ATTR_GRAPH || !a->g)
        return POPRT_OK;
    poprt__value in;
    memset(&in, 0, sizeof in);
    in.kind = POPRT__KIND_TENSOR;
    in.t.dtype = dt;
    in.t.rank = 4;
    memcpy(in.t.dims, dims, 4 * sizeof *dims);
    in.t.numel = cnt;
    in.t.nbytes = (size_t)cnt * poprt_dtype_size(dt);
    if (dt == POPRT_DTYPE_FLOAT) {
        in.t.data = s;
    } else {
        in.t.data = poprt__kctx_scratch(k, in.t.nbytes + 1);
        if (!in.t.data)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
        for (int64_t i = 0; i < cnt; i++)
            st_f64(in.t.data, dt, i, s[i]);
    }
    const poprt__value *ins[1] = {&in};
    poprt__value out;
    memset(&out, 0, sizeof out);
    poprt_status st = poprt__kctx_run_graph(k, a->g, 1, ins, 1, &out);
    if (st)
        return st;
    if (out.kind != POPRT__KIND_TENSOR || out.t.numel != cnt) {
        st = POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                             "%s must return a tensor of the scores' shape", name);
    } else if (out.t.dtype == POPRT_DTYPE_BOOL) {
        for (int64_t i = 0; i < cnt; i++)
            if (!((const uint8_t *)out.t.data)[i])
                s[i] = -INFINITY;
    } else if (is_float_dt(out.t.dtype)) {
        for (int64_t i = 0; i < cnt; i++)
            s[i] = (float)ld_f64(out.t.data, out.t.dtype, i);
    } else {
        st = POPRT__NODE_ERR(k->node, POPRT_STATUS_UNSUPPORTED, "%s returns %s", name,
                             poprt_dtype_name(out.t.dtype));
    }
    poprt__kctx_release_value(k, &out);
    return st;
}

typedef struct flex_job {
    int64_t Hq, Hkv, L, S, E, Ev;
    const float *q, *k, *v;
    float *s, *y;
    float scale;
    int stage; /* 0 scores, 1 softmax, 2 output */
} flex_job;

static void flex_rows(void *ctx, int64_t r0, int64_t r1)
{
    const flex_job *a = ctx;
    int64_t rep = a->Hq / a->Hkv;
    for (int64_t r = r0; r < r1; r++) {
        int64_t h = (r / a->L) % a->Hq, b = r / (a->L * a->Hq), hk = b * a->Hkv + h / rep;
        float *s = a->s + r * a->S;
        if (a->stage == 0) {
            const float *qr = a->q + r * a->E;
            for (int64_t t = 0; t < a->S; t++) {
                const float *kr = a->k + (hk * a->S + t) * a->E;
                float d = 0;
                for (int64_t e = 0; e < a->E; e++)
                    d += qr[e] * kr[e];
                s[t] = d * a->scale;
            }
        } else if (a->stage == 1) {
            poprt__ref_softmax_row_f32(s, s, a->S, 0);
        } else {
            float *yr = a->y + r * a->Ev;
            for (int64_t e = 0; e < a->Ev; e++)
                yr[e] = 0;
            for (int64_t t = 0; t < a->S; t++) {
                const float *vr = a->v + (hk * a->S + t) * a->Ev;
                for (int64_t e = 0; e < a->Ev; e++)
                    yr[e] += s[t] * vr[e];
            }
        }
    }
}

poprt_status poprt__ref_flex_attention(poprt__kctx *k)
{
    const poprt__node *n = k->node;
    const poprt__tval *Q = poprt__kin(k, 0), *K = poprt__kin(k, 1), *V = poprt__kin(k, 2);
    poprt__tval *Y = poprt__kout(k, 0);
    if (!Q || !K || !V || !Y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing Q, K, V or Y");
    if (!is_float_dt(Q->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt_dtype_name(Q->dtype));
    if (Q->rank != 4 || K->rank != 4 || V->rank != 4)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q, K, V must be 4-D");
    flex_job a;
    int64_t B = Q->dims[0];
    a.Hq = Q->dims[1];
    a.L = Q->dims[2];
    a.E = Q->dims[3];
    a.Hkv = K->dims[1];
    a.S = K->dims[2];
    a.Ev = V->dims[3];
    if (K->dims[0] != B || V->dims[0] != B || K->dims[3] != a.E || V->dims[1] != a.Hkv ||
        V->dims[2] != a.S || a.Hkv <= 0 || a.Hq % a.Hkv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "Q, K, V shapes disagree");
    if (Y->numel != B * a.Hq * a.L * a.Ev)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output Y size");
    const poprt__attr *sa = poprt__node_attr(n, "scale");
    a.scale = sa ? sa->f : (float)(1.0 / sqrt((double)a.E));
    int64_t rows = B * a.Hq * a.L, cnt = rows * a.S;
    a.q = as_f32(k, Q);
    a.k = as_f32(k, K);
    a.v = as_f32(k, V);
    a.s = poprt__kctx_scratch(k, (size_t)(cnt + 1) * sizeof(float));
    a.y = Y->dtype == POPRT_DTYPE_FLOAT ? Y->data
                                        : poprt__kctx_scratch(k, (size_t)(Y->numel + 1) * 4);
    if (!a.q || !a.k || !a.v || !a.s || !a.y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    if (rows == 0)
        return POPRT_OK;
    int64_t sd[4] = {B, a.Hq, a.L, a.S};
    /* scores, score_mod, mask_mod, softmax, prob_mod, probs @ V */
    poprt_status st;
    a.stage = 0;
    poprt__kctx_parallel_for(k, rows, 16, flex_rows, &a);
    if ((st = flex_mod(k, "score_mod", Q->dtype, sd, a.s, cnt)) ||
        (st = flex_mod(k, "mask_mod", Q->dtype, sd, a.s, cnt)))
        return st;
    a.stage = 1;
    poprt__kctx_parallel_for(k, rows, 16, flex_rows, &a);
    if ((st = flex_mod(k, "prob_mod", Q->dtype, sd, a.s, cnt)))
        return st;
    a.stage = 2;
    poprt__kctx_parallel_for(k, rows, 16, flex_rows, &a);
    if (Y->dtype != POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < Y->numel; i++)
            st_f64(Y->data, Y->dtype, i, a.y[i]);
    return POPRT_OK;
}

/* ============================== LinearAttention ============================= */

typedef struct lin_job {
    int64_t B, T, Hq, Hkv, dk, dv, decay_w, beta_w;
    const float *q, *k, *v, *decay, *beta, *erase;
    float *state; /* [B, Hkv, dk, dv] */
    float *out;   /* [B, T, Hq * dv] */
    float scale;
    int gating, delta;
    float *scratch; /* per (b, hkv) pair: dv + dk floats */
} lin_job;

static void lin_pair(void *ctx, int64_t p0, int64_t p1)
{
    const lin_job *a = ctx;
    int64_t dk = a->dk, dv = a->dv, rep = a->Hq / a->Hkv;
    for (int64_t p = p0; p < p1; p++) {
        int64_t b = p / a->Hkv, h = p % a->Hkv;
        float *S = a->state + p * dk * dv;
        float *vt = a->scratch + p * (dv + dk), *ke = vt + dv;
        for (int64_t t = 0; t < a->T; t++) {
            int64_t bt = b * a->T + t;
            const float *kt = a->k + (bt * a->Hkv + h) * dk;
            const float *vin = a->v + (bt * a->Hkv + h) * dv;
            if (a->gating) {
                /* per-head scalar or per-key-dim decay: state *= exp(g) */
                for (int64_t i = 0; i < dk; i++) {
                    float g = a->decay_w == a->Hkv ? a->decay[bt * a->Hkv + h]
                                                   : a->decay[(bt * a->Hkv + h) * dk + i];
                    float e = expf(g);
                    for (int64_t m = 0; m < dv; m++)
                        S[i * dv + m] *= e;
                }
            }
            memcpy(vt, vin, (size_t)dv * sizeof *vt);
            if (a->delta) {
                for (int64_t i = 0; i < dk; i++)
                    ke[i] = a->erase ? a->erase[(bt * a->Hkv + h) * dk + i] * kt[i] : kt[i];
                float beta = a->beta_w == 1 ? a->beta[bt] : a->beta[bt * a->Hkv + h];
                for (int64_t m = 0; m < dv; m++) {
                    float r = 0;
                    for (int64_t i = 0; i < dk; i++)
                        r += S[i * dv + m] * ke[i];
                    vt[m] = beta * (vt[m] - r);
                }
            }
            for (int64_t i = 0; i < dk; i++)
                for (int64_t m = 0; m < dv; m++)
                    S[i * dv + m] += kt[i] * vt[m];
            for (int64_t g = 0; g < rep; g++) {
                int64_t hq = h * rep + g;
                const float *qt = a->q + (bt * a->Hq + hq) * dk;
                float *o = a->out + (bt * a->Hq + hq) * dv;
                for (int64_t m = 0; m < dv; m++) {
                    float s = 0;
                    for (int64_t i = 0; i < dk; i++)
                        s += qt[i] * S[i * dv + m];
                    o[m] = a->scale * s;
                }
            }
        }
    }
}

poprt_status poprt__ref_linear_attention(poprt__kctx *k)
{
    const poprt__node *n = k->node;
    const poprt__tval *Q = poprt__kin(k, 0), *K = poprt__kin(k, 1), *V = poprt__kin(k, 2);
    const poprt__tval *PS = poprt__kin(k, 3), *DC = poprt__kin(k, 4), *BT = poprt__kin(k, 5);
    const poprt__tval *EG = poprt__kin(k, 6);
    poprt__tval *O = poprt__kout(k, 0), *PSo = poprt__kout(k, 1);
    if (!Q || !K || !V || !O)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing query, key, value or output");
    if (!is_float_dt(Q->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt_dtype_name(Q->dtype));
    const char *rule = poprt__attr_s(n, "update_rule", "gated_delta");
    lin_job a;
    memset(&a, 0, sizeof a);
    if (!strcmp(rule, "linear"))
        ;
    else if (!strcmp(rule, "gated"))
        a.gating = 1;
    else if (!strcmp(rule, "delta"))
        a.delta = 1;
    else if (!strcmp(rule, "gated_delta"))
        a.gating = a.delta = 1;
    else
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "unknown update_rule '%s'", rule);
    a.Hq = poprt__attr_i(n, "q_num_heads", 0);
    a.Hkv = poprt__attr_i(n, "kv_num_heads", 0);
    if (Q->rank != 3 || K->rank != 3 || V->rank != 3)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "query, key, value must be 3-D");
    if (a.Hq <= 0 || a.Hkv <= 0 || a.Hq % a.Hkv || Q->dims[2] % a.Hq || V->dims[2] % a.Hkv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "head counts do not divide sizes");
    a.B = Q->dims[0];
    a.T = Q->dims[1];
    a.dk = Q->dims[2] / a.Hq;
    a.dv = V->dims[2] / a.Hkv;
    if (K->dims[0] != a.B || K->dims[1] != a.T || K->dims[2] != a.Hkv * a.dk ||
        V->dims[0] != a.B || V->dims[1] != a.T)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "query, key, value shapes disagree");
    if (a.gating != (DC != NULL))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "update_rule '%s' %s decay", rule,
                               a.gating ? "requires" : "forbids");
    if (a.delta != (BT != NULL))
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "update_rule '%s' %s beta", rule,
                               a.delta ? "requires" : "forbids");
    if (DC) {
        a.decay_w = DC->rank == 3 ? DC->dims[2] : -1;
        if (DC->numel != a.B * a.T * a.decay_w ||
            (a.decay_w != a.Hkv && a.decay_w != a.Hkv * a.dk))
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "decay shape");
    }
    if (BT) {
        a.beta_w = BT->rank == 3 ? BT->dims[2] : -1;
        if (BT->numel != a.B * a.T * a.beta_w || (a.beta_w != a.Hkv && a.beta_w != 1))
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "beta shape");
    }
    if (EG && (EG->numel != a.B * a.T * a.Hkv * a.dk || !a.delta))
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "erase_gate");
    if (PS && PS->numel != a.B * a.Hkv * a.dk * a.dv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "past_state shape");
    float sc = poprt__attr_f(n, "scale", 0.0f);
    a.scale = sc != 0.0f ? sc : (float)(1.0 / sqrt((double)a.dk));
    a.q = as_f32(k, Q);
    a.k = as_f32(k, K);
    a.v = as_f32(k, V);
    a.decay = as_f32(k, DC);
    a.beta = as_f32(k, BT);
    a.erase = as_f32(k, EG);
    int64_t pairs = a.B * a.Hkv, ns = pairs * a.dk * a.dv;
    a.state = poprt__kctx_scratch(k, (size_t)(ns ? ns : 1) * 4);
    a.out = O->dtype == POPRT_DTYPE_FLOAT ? O->data
                                          : poprt__kctx_scratch(k, (size_t)(O->numel + 1) * 4);
    a.scratch = poprt__kctx_scratch(k, (size_t)(pairs * (a.dk + a.dv) + 1) * 4);
    if (!a.q || !a.k || !a.v || (DC && !a.decay) || (BT && !a.beta) || (EG && !a.erase) ||
        !a.state || !a.out || !a.scratch)
        return POPRT__NODE_ERR(n, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    if (O->numel != a.B * a.T * a.Hq * a.dv)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output size");
    for (int64_t i = 0; i < ns; i++)
        a.state[i] = PS ? (float)ld_f64(PS->data, PS->dtype, i) : 0.0f;
    if (pairs > 0)
        poprt__kctx_parallel_for(k, pairs, 1, lin_pair, &a);
    if (O->dtype != POPRT_DTYPE_FLOAT)
        for (int64_t i = 0; i < O->numel; i++)
            st_f64(O->data, O->dtype, i, a.out[i]);
    if (PSo) {
        if (PSo->numel != ns)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "present_state size");
        for (int64_t i = 0; i < ns; i++)
            st_f64(PSo->data, PSo->dtype, i, a.state[i]);
    }
    return POPRT_OK;
}

/* ============================== RotaryEmbedding ============================= */

poprt_status poprt__ref_rotary_embedding(poprt__kctx *k)
{
    const poprt__node *n = k->node;
    const poprt__tval *X = poprt__kin(k, 0), *C = poprt__kin(k, 1), *S = poprt__kin(k, 2);
    const poprt__tval *P = poprt__kin(k, 3);
    poprt__tval *Y = poprt__kout(k, 0);
    if (!X || !C || !S || !Y)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing input or output");
    if (!is_float_dt(X->dtype))
        return POPRT__NODE_ERR(n, POPRT_STATUS_UNSUPPORTED, "element type %s",
                               poprt_dtype_name(X->dtype));
    int interleaved = poprt__attr_i(n, "interleaved", 0) != 0;
    int64_t B = X->dims[0], H, Sq, D;
    int three = X->rank == 3;
    if (three) {
        H = poprt__attr_i(n, "num_heads", 0);
        if (H <= 0 || X->dims[2] % H)
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "3-D input needs num_heads dividing the hidden size");
        Sq = X->dims[1];
        D = X->dims[2] / H;
    } else if (X->rank == 4) {
        H = X->dims[1];
        Sq = X->dims[2];
        D = X->dims[3];
    } else {
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "X must be 3-D or 4-D");
    }
    int64_t rot = poprt__attr_i(n, "rotary_embedding_dim", 0);
    if (rot <= 0)
        rot = D;
    if (rot > D || rot % 2)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "rotary_embedding_dim %lld",
                               (long long)rot);
    int64_t half = rot / 2;
    if (C->dims[C->rank - 1] < half || S->dims[S->rank - 1] < half)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "cos/sin cache too narrow");
    int64_t cw = C->dims[C->rank - 1];
    if (P) {
        if (P->numel != B * Sq)
            return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "position_ids shape");
    } else if (C->numel != B * Sq * cw || S->numel != C->numel) {
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH,
                               "without position_ids the caches must be [batch, seq, dim/2]");
    }
    int64_t max_pos = C->numel / cw;
    for (int64_t b = 0; b < B; b++)
        for (int64_t s = 0; s < Sq; s++) {
            int64_t row = b * Sq + s;
            if (P) {
                row = poprt__load_i64(P->data, P->dtype, b * Sq + s);
                if (row < 0 || row >= max_pos)
                    return POPRT__NODE_ERR(n, POPRT_STATUS_RUNTIME_ERROR,
                                           "position id %lld out of range", (long long)row);
            }
            for (int64_t h = 0; h < H; h++) {
                int64_t base = three ? (b * Sq + s) * H * D + h * D : ((b * H + h) * Sq + s) * D;
                for (int64_t i = 0; i < half; i++) {
                    double c = ld_f64(C->data, C->dtype, row * cw + i);
                    double sn = ld_f64(S->data, S->dtype, row * cw + i);
                    int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
                    double x1 = ld_f64(X->data, X->dtype, base + i1);
                    double x2 = ld_f64(X->data, X->dtype, base + i2);
                    st_f64(Y->data, Y->dtype, base + i1, x1 * c - x2 * sn);
                    st_f64(Y->data, Y->dtype, base + i2, x2 * c + x1 * sn);
                }
                for (int64_t i = rot; i < D; i++)
                    st_f64(Y->data, Y->dtype, base + i, ld_f64(X->data, X->dtype, base + i));
            }
        }
    return POPRT_OK;
}

/* ============================== losses ====================================== */

/* Negative log-likelihood over lp [N, C, D...] (double, log-probabilities)
 * with target [N, D...]; writes output 0 of k. */
static poprt_status nll_core(poprt__kctx *k, const double *lp, const int64_t *dims, int rank,
                             const poprt__tval *target, const poprt__tval *weight)
{
    const poprt__node *n = k->node;
    poprt__tval *out = poprt__kout(k, 0);
    if (!out)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "missing output");
    if (rank < 2)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "input must be at least 2-D");
    int64_t N = dims[0], C = dims[1], D = 1;
    for (int i = 2; i < rank; i++)
        D *= dims[i];
    if (target->numel != N * D || target->rank != rank - 1)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "target shape");
    if (weight && weight->numel != C)
        return POPRT__NODE_ERR(n, POPRT_STATUS_SHAPE_MISMATCH, "weight must have C values");
    const char *red = poprt__attr_s(n, "reduction", "mean");
    int none = !strcmp(red, "none"), mean = !strcmp(red, "mean");
    const poprt__attr *iia = poprt__node_attr(n, "ignore_index");
    int has_ii = iia != NULL;
    int64_t ii = iia ? iia->i : 0;
    double sum = 0, wsum = 0;
    if (none && out->numel != N * D)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INTERNAL, "output size");
    for (int64_t i = 0; i < N; i++)
        for (int64_t d = 0; d < D; d++) {
            int64_t c = poprt__load_i64(target->data, target->dtype, i * D + d);
            double l = 0, w = 0;
            if (!(has_ii && c == ii)) {
                if (c < 0 || c >= C)
                    return POPRT__NODE_ERR(n, POPRT_STATUS_RUNTIME_ERROR,
                                           "target class %lld out of range [0, %lld)",
                                           (long long)c, (long long)C);
                w = weight ? ld_f64(weight->data, weight->dtype, c) : 1.0;
                l = -lp[(i * C + c) * D + d] * w;
            }
            if (none)
                st_f64(out->data, out->dtype, i * D + d, l);
            sum += l;
            wsum += w;
        }
    if (!none)
        st_f64(out->data, out->dtype, 0, mean ? sum / wsum : sum);
    return POPRT_OK;
}

poprt_status poprt__ref_nllloss(poprt__kctx *k)
{
    const poprt__tval *X = poprt__kin(k, 0), *T = poprt__kin(k, 1), *W = poprt__kin(k, 2);
    if (!X || !T)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing input");
    double *lp = poprt__kctx_scratch(k, (size_t)(X->numel + 1) * sizeof(double));
    if (!lp)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    for (int64_t i = 0; i < X->numel; i++)
        lp[i] = ld_f64(X->data, X->dtype, i);
    return nll_core(k, lp, X->dims, X->rank, T, W);
}

poprt_status poprt__ref_sce_loss(poprt__kctx *k)
{
    const poprt__tval *X = poprt__kin(k, 0), *T = poprt__kin(k, 1), *W = poprt__kin(k, 2);
    poprt__tval *LP = poprt__kout(k, 1);
    if (!X || !T)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL, "missing input");
    if (X->rank < 2)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH, "scores must be at least 2-D");
    int64_t N = X->dims[0], C = X->dims[1], NC = N * C, D = NC > 0 ? X->numel / NC : 0;
    double *lp = poprt__kctx_scratch(k, (size_t)(X->numel + 1) * sizeof(double));
    double *row = poprt__kctx_scratch(k, (size_t)(C + 1) * sizeof(double));
    if (!lp || !row)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "no scratch memory");
    /* log-softmax along the class axis */
    for (int64_t i = 0; i < N; i++)
        for (int64_t d = 0; d < D; d++) {
            for (int64_t c = 0; c < C; c++)
                row[c] = ld_f64(X->data, X->dtype, (i * C + c) * D + d);
            softmax_row_f64(row, row, C, 1);
            for (int64_t c = 0; c < C; c++) {
                /* round like the input type so loss and log_prob agree */
                double v = row[c];
                if (X->dtype == POPRT_DTYPE_FLOAT)
                    v = (float)v;
                lp[(i * C + c) * D + d] = v;
            }
        }
    if (LP) {
        if (LP->numel != X->numel)
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_INTERNAL, "log_prob size");
        for (int64_t i = 0; i < X->numel; i++)
            st_f64(LP->data, LP->dtype, i, lp[i]);
    }
    return nll_core(k, lp, X->dims, X->rank, T, W);
}
