/* Reference kernels of the 'random' group: RandomNormal(Like),
 * RandomUniform(Like), Bernoulli, Multinomial, drawn from the kernel
 * context's seeded stream (per node, per run). */
#include <math.h>
#include <string.h>
#include "kernels/ref/random.h"
#include "kernels/ref/util.h"

#define QM_PI 3.14159265358979323846

/* splitmix64: tiny, well mixed, and fully determined by the seed */
static uint64_t qm_rand_u64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static double qm_rand_01(uint64_t *s)
{
    return (double)(qm_rand_u64(s) >> 11) * (1.0 / 9007199254740992.0);
}

static double qm_rand_normal(uint64_t *s)
{
    double u1 = 1.0 - qm_rand_01(s), u2 = qm_rand_01(s);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * QM_PI * u2);
}

/* The seed attribute (a float) when given, else the runtime's per-node stream. */
static uint64_t qm_seed(poprt__kctx *k)
{
    const poprt__attr *a = poprt__node_attr(k->node, "seed");
    if (!a)
        return poprt__kctx_random_seed(k);
    float f = a->type == POPRT__ATTR_INT ? (float)a->i : a->f;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return 0x5eed000000000000ull ^ u;
}

static poprt_status qm_random_fill(poprt__kctx *k, int normal)
{
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, y != NULL);
    if (st)
        return st;
    uint64_t s = qm_seed(k);
    double a, b;
    if (normal) {
        a = poprt__attr_f(k->node, "mean", 0.0f);
        b = poprt__attr_f(k->node, "scale", 1.0f);
    } else {
        a = poprt__attr_f(k->node, "low", 0.0f);
        b = poprt__attr_f(k->node, "high", 1.0f);
    }
    for (int64_t i = 0; i < y->numel; i++) {
        double v = normal ? a + b * qm_rand_normal(&s) : a + (b - a) * qm_rand_01(&s);
        poprt__store_f64(y->data, y->dtype, i, v);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_random_normal(poprt__kctx *k) { return qm_random_fill(k, 1); }
poprt_status poprt__ref_random_uniform(poprt__kctx *k) { return qm_random_fill(k, 0); }

poprt_status poprt__ref_bernoulli(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y);
    if (st)
        return st;
    uint64_t s = qm_seed(k);
    for (int64_t i = 0; i < y->numel; i++) {
        double p = poprt__load_f64(x->data, x->dtype, i);
        poprt__store_f64(y->data, y->dtype, i, qm_rand_01(&s) < p ? 1.0 : 0.0);
    }
    return POPRT_OK;
}

poprt_status poprt__ref_multinomial(poprt__kctx *k)
{
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    poprt_status st = poprt__ref_need(k, x && y && x->rank == 2 && y->rank == 2);
    if (st)
        return st;
    const int64_t B = x->dims[0], C = x->dims[1], S = y->dims[1];
    double *cdf = poprt__kctx_scratch(k, (size_t)(C + 1) * sizeof *cdf);
    if (!cdf)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_OUT_OF_MEMORY, "out of scratch memory");
    uint64_t s = qm_seed(k);
    for (int64_t b = 0; b < B; b++) {
        double mx = -INFINITY, tot = 0.0;
        for (int64_t c = 0; c < C; c++)
            mx = fmax(mx, poprt__load_f64(x->data, x->dtype, b * C + c));
        for (int64_t c = 0; c < C; c++) {
            tot += exp(poprt__load_f64(x->data, x->dtype, b * C + c) - mx); /* unnormalised log-probs */
            cdf[c] = tot;
        }
        for (int64_t j = 0; j < S; j++) {
            double u = qm_rand_01(&s) * tot;
            int64_t c = 0;
            while (c < C - 1 && cdf[c] <= u)
                c++;
            poprt__store_i64(y->data, y->dtype, b * S + j, c);
        }
    }
    return POPRT_OK;
}
