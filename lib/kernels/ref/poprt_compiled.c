/* Kernels of the 'poprt_compiled' family: see poprt_compiled.h. */
#include <math.h>
#include <string.h>
#include "kernels/ref/poprt_compiled.h"

/* A step as the kernel runs it. */
typedef struct ew_step {
    int op;
    int operand; /* -1: scalar / none, else input index */
    int reverse;
    float alpha, beta;
} ew_step;

/* How a tensor operand maps onto Y's flat index i: value index
 * (i / inner) % mid, with inner == 1 meaning "contiguous, period mid". */
typedef struct ew_operand {
    const float *data;
    int64_t mid, inner;
    /* layout NCHW16c, one value per channel (inner = H * W): the value of
     * flat index i is ((i / (16 inner)) % (mid / 16)) * 16 + i % 16 */
    int blocked;
} ew_operand;

typedef struct ew_job {
    int n_steps;
    ew_step steps[POPRT__EW_MAX_STEPS];
    ew_operand ops[POPRT__EW_MAX_STEPS + 1]; /* by input index */
    const float *x;
    float *y;
    const poprt__vmath_variant *vm;
} ew_job;

/* Reads and checks the step attributes. */
static poprt_status read_steps(const poprt__kctx *k, ew_job *j)
{
    const poprt__node *n = k->node;
    int64_t c_ops, c_opd, c_rev, c_a, c_b;
    const int64_t *ops = poprt__attr_ints(n, "ops", &c_ops);
    const int64_t *opd = poprt__attr_ints(n, "operand", &c_opd);
    const int64_t *rev = poprt__attr_ints(n, "reverse", &c_rev);
    const float *a = poprt__attr_floats(n, "alpha", &c_a);
    const float *b = poprt__attr_floats(n, "beta", &c_b);
    if (!ops || c_ops < 1 || c_ops > POPRT__EW_MAX_STEPS)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "attribute 'ops' must list 1..%d steps", POPRT__EW_MAX_STEPS);
    if (!opd || !rev || !a || !b || c_opd != c_ops || c_rev != c_ops || c_a != c_ops ||
        c_b != c_ops)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "attributes 'operand', 'reverse', 'alpha' and 'beta' must have "
                               "one value per step (%lld)",
                               (long long)c_ops);
    j->n_steps = (int)c_ops;
    for (int s = 0; s < j->n_steps; s++) {
        ew_step *st = &j->steps[s];
        if (!poprt__ew_known(ops[s]))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "step %d: unknown operation %lld",
                                   s, (long long)ops[s]);
        if (opd[s] < -1 || opd[s] >= k->n_in || (opd[s] >= 0 && !poprt__ew_is_binary(ops[s])))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL, "step %d: bad operand %lld", s,
                                   (long long)opd[s]);
        st->op = (int)ops[s];
        st->operand = (int)opd[s];
        st->reverse = rev[s] != 0;
        st->alpha = a[s];
        st->beta = b[s];
    }
    return POPRT_OK;
}

/* Classifies tensor input i against Y's shape. */
static poprt_status classify(const poprt__kctx *k, int i, const poprt__tval *y, ew_operand *o)
{
    const poprt__tval *t = poprt__kin(k, i);
    if (!t || t->dtype != POPRT_DTYPE_FLOAT)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT,
                               "input %d must be a float tensor", i);
    if (t->rank > y->rank)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "input %d has rank %d, above the output's %d", i, t->rank, y->rank);
    const int pad = y->rank - t->rank;
    int first = -1, last = -1;
    for (int d = 0; d < t->rank; d++)
        if (t->dims[d] != 1) {
            if (first < 0)
                first = d + pad;
            last = d + pad;
        }
    int64_t mid = 1, inner = 1;
    for (int d = first; first >= 0 && d <= last; d++) {
        if (t->dims[d - pad] != y->dims[d])
            return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                                   "input %d does not broadcast to the output over one run of "
                                   "axes (axis %d: %lld vs %lld)",
                                   i, d, (long long)t->dims[d - pad], (long long)y->dims[d]);
        mid *= y->dims[d];
    }
    for (int d = last + 1; d < y->rank; d++)
        inner *= y->dims[d];
    if (first < 0) /* a single value: constant over the whole output */
        inner = y->numel > 0 ? y->numel : 1;
    o->data = t->data;
    o->mid = mid;
    o->inner = inner;
    return POPRT_OK;
}

/* Layout NCHW16c (lib/compiler/layout.c): operand i as the blocked data
 * reads it. Y's shape, one value, or one per image sit where they do in
 * NCHW; one value per channel ([C,1,1], [N|1,C,1,1]) is read per block. */
static poprt_status classify_blocked(const poprt__kctx *k, int i, const poprt__tval *y,
                                     ew_operand *o)
{
    const int64_t C = y->dims[1], HW = y->dims[2] * y->dims[3];
    if (HW == 1 || (o->inner == 1 && o->mid == y->numel) || o->inner % (C * HW) == 0)
        return POPRT_OK;
    if (o->inner == HW && o->mid % C == 0) {
        o->blocked = 1;
        return POPRT_OK;
    }
    return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                           "input %d: layout NCHW16c takes operands of Y's shape, one value per "
                           "channel, per image or in all",
                           i);
}

enum { EW_BLOCK = 512 };

/* dst = f(src) over n floats (dst == src allowed) */
static void apply_unary(const poprt__vmath_variant *vm, int op, float alpha, float beta,
                        const float *src, float *dst, int64_t n)
{
    poprt__vmath_param p = {alpha, beta, 0.0f};
    int f = -1;
    switch (op) {
    case POPRT__EW_RELU: f = POPRT__VMATH_relu; break;
    case POPRT__EW_LEAKY_RELU: f = POPRT__VMATH_leaky_relu; break;
    case POPRT__EW_SIGMOID: f = POPRT__VMATH_sigmoid; break;
    case POPRT__EW_HARD_SIGMOID: f = POPRT__VMATH_hard_sigmoid; break;
    case POPRT__EW_HARD_SWISH: /* alpha set: as a graph writes it (fused_elementwise.h) */
        f = alpha != 0.0f ? POPRT__VMATH_x_relu6 : POPRT__VMATH_hard_swish;
        break;
    case POPRT__EW_TANH: f = POPRT__VMATH_tanh; break;
    case POPRT__EW_EXP: f = POPRT__VMATH_exp; break;
    case POPRT__EW_LOG: f = POPRT__VMATH_log; break;
    case POPRT__EW_ERF: f = POPRT__VMATH_erf; break;
    case POPRT__EW_SOFTPLUS: f = POPRT__VMATH_softplus; break;
    case POPRT__EW_GELU: f = POPRT__VMATH_gelu; break;
    case POPRT__EW_GELU_TANH: f = POPRT__VMATH_gelu_tanh; break;
    case POPRT__EW_SWISH: f = POPRT__VMATH_swish; break;
    case POPRT__EW_CLIP: f = POPRT__VMATH_clip; break;
    case POPRT__EW_NEG:
        for (int64_t i = 0; i < n; i++)
            dst[i] = -src[i];
        return;
    case POPRT__EW_ABS:
        for (int64_t i = 0; i < n; i++)
            dst[i] = fabsf(src[i]);
        return;
    case POPRT__EW_SQRT:
        for (int64_t i = 0; i < n; i++)
            dst[i] = sqrtf(src[i]);
        return;
    case POPRT__EW_RECIPROCAL:
        for (int64_t i = 0; i < n; i++)
            dst[i] = 1.0f / src[i];
        return;
    case POPRT__EW_FP8_E4M3FN:
    case POPRT__EW_FP8_E5M2:
        vm->fp8_round(src, dst, n, alpha, op == POPRT__EW_FP8_E5M2, beta != 0);
        return;
    default: return;
    }
    vm->unary[f](src, dst, n, &p);
}

/* dst = src op p (reverse: p op src), p's stride ps (0: one value). */
static void apply_binary(const poprt__vmath_variant *vm, int op, int reverse, const float *src,
                         const float *p, int64_t ps, float *dst, int64_t len)
{
    const float *l = reverse ? p : src, *r = reverse ? src : p;
    const int64_t ls = reverse ? ps : 1, rs = reverse ? 1 : ps;
    switch (op) {
    case POPRT__EW_ADD: vm->binary[POPRT__VMATH_add](l, ls, r, rs, dst, len); break;
    case POPRT__EW_SUB: vm->binary[POPRT__VMATH_sub](l, ls, r, rs, dst, len); break;
    case POPRT__EW_MUL: vm->binary[POPRT__VMATH_mul](l, ls, r, rs, dst, len); break;
    case POPRT__EW_DIV: vm->binary[POPRT__VMATH_div](l, ls, r, rs, dst, len); break;
    case POPRT__EW_MAX: vm->binary[POPRT__VMATH_max](l, ls, r, rs, dst, len); break;
    default: vm->binary[POPRT__VMATH_min](l, ls, r, rs, dst, len); break;
    }
}

void poprt__ew_scalar_run(const poprt__vmath_variant *vm, const poprt__ew_scalar_step *steps,
                          int n_steps, float *y, int64_t n)
{
    if (poprt__vmath_chain_takes(steps, n_steps)) { /* in registers */
        vm->chain(steps, n_steps, y, n);
        return;
    }
    for (int64_t b = 0; b < n; b += EW_BLOCK) {
        const int64_t len = n - b < EW_BLOCK ? n - b : EW_BLOCK;
        for (int s = 0; s < n_steps; s++) {
            const poprt__ew_scalar_step *st = &steps[s];
            if (poprt__ew_is_binary(st->op))
                apply_binary(vm, st->op, st->reverse, y + b, &st->alpha, 0, y + b, len);
            else
                apply_unary(vm, st->op, st->alpha, st->beta, y + b, y + b, len);
        }
    }
}

poprt_status poprt__ew_scalar_read(const poprt__node *n, const char *const names[4],
                                   poprt__ew_scalar_step *steps, int *n_steps)
{
    int64_t c_ops, c_rev, c_a, c_b;
    const int64_t *ops = poprt__attr_ints(n, names[0], &c_ops);
    *n_steps = 0;
    if (!ops)
        return POPRT_OK;
    const int64_t *rev = poprt__attr_ints(n, names[1], &c_rev);
    const float *a = poprt__attr_floats(n, names[2], &c_a);
    const float *b = poprt__attr_floats(n, names[3], &c_b);
    if (c_ops > POPRT__EW_MAX_STEPS || !rev || !a || !b || c_rev != c_ops || c_a != c_ops ||
        c_b != c_ops)
        return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                               "%s, %s, %s and %s must have one value per step (at most %d)",
                               names[0], names[1], names[2], names[3], POPRT__EW_MAX_STEPS);
    for (int64_t s = 0; s < c_ops; s++) {
        if (!poprt__ew_known(ops[s]))
            return POPRT__NODE_ERR(n, POPRT_STATUS_INVALID_MODEL,
                                   "%s: step %lld: unknown operation %lld", names[0],
                                   (long long)s, (long long)ops[s]);
        steps[s].op = (int)ops[s];
        steps[s].reverse = rev[s] != 0;
        steps[s].alpha = a[s];
        steps[s].beta = b[s];
    }
    *n_steps = (int)c_ops;
    return POPRT_OK;
}

/* Runs the chain over Y's flat range [b, e). Blocks are cut where an
 * operand's period or row ends, so that within a block every operand is
 * either contiguous or one value. The first step reads X and the last
 * writes Y directly (when Y shares X's bytes, every step reads element i
 * before the last one writes it). */
static void ew_range(void *ctx, int64_t b, int64_t e)
{
    const ew_job *j = ctx;
    float acc[EW_BLOCK] __attribute__((aligned(64)));
    float pat[EW_BLOCK] __attribute__((aligned(64))); /* a blocked operand's run */
    while (b < e) {
        int64_t len = e - b < EW_BLOCK ? e - b : EW_BLOCK;
        for (int s = 0; s < j->n_steps; s++) {
            const int i = j->steps[s].operand;
            if (i <= 0)
                continue;
            const ew_operand *o = &j->ops[i];
            const int64_t span = o->blocked ? 16 * o->inner : o->inner; /* one block's run */
            const int64_t room = o->inner == 1 ? o->mid - b % o->mid : span - b % span;
            if (room < len)
                len = room;
        }
        for (int s = 0; s < j->n_steps; s++) {
            const ew_step *st = &j->steps[s];
            const float *src = s == 0 ? j->x + b : acc;
            float *dst = s == j->n_steps - 1 ? j->y + b : acc;
            if (!poprt__ew_is_binary(st->op)) {
                apply_unary(j->vm, st->op, st->alpha, st->beta, src, dst, len);
                continue;
            }
            const float *p;
            int64_t ps;
            if (st->operand < 0) {
                p = &st->alpha;
                ps = 0;
            } else if (st->operand == 0) {
                p = j->x + b;
                ps = 1;
            } else {
                const ew_operand *o = &j->ops[st->operand];
                if (o->blocked) { /* the block's 16 values, lane by lane */
                    const float *v = o->data + ((b / (16 * o->inner)) % (o->mid / 16)) * 16;
                    for (int64_t q = 0; q < 16; q++)
                        pat[q] = v[(b + q) % 16];
                    /* doubling the filled part: a copy of 16 floats at a
                     * time was a `rep movsq` each, 16% of densenet_lite
                     * (its BatchNormalization + Relu in NCHW16c): 0.885x
                     * the model's time (Zen 3, 1 thread, in one process) */
                    for (int64_t q = 16; q < len; q *= 2)
                        memcpy(pat + q, pat, sizeof(float) * (size_t)(len - q < q ? len - q : q));
                    p = pat;
                    ps = 1;
                } else if (o->inner == 1) {
                    p = o->data + b % o->mid;
                    ps = 1;
                } else {
                    p = o->data + (b / o->inner) % o->mid;
                    ps = 0;
                }
            }
            apply_binary(j->vm, st->op, st->reverse, src, p, ps, dst, len);
        }
        b += len;
    }
}

poprt_status poprt__ref_poprt_fused_elementwise(poprt__kctx *k)
{
    ew_job j;
    memset(&j, 0, sizeof j);
    poprt_status st = read_steps(k, &j);
    if (st)
        return st;
    const poprt__tval *x = poprt__kin(k, 0);
    poprt__tval *y = poprt__kout(k, 0);
    if (!x || !y || x->dtype != POPRT_DTYPE_FLOAT || y->dtype != POPRT_DTYPE_FLOAT)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_ARGUMENT,
                               "X and Y must be float tensors");
    if (x->numel != y->numel)
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X has %lld elements, Y %lld", (long long)x->numel,
                               (long long)y->numel);
    const char *layout = poprt__attr_s(k->node, "layout", "NCHW");
    const int blocked = strcmp(layout, "NCHW16c") == 0;
    if (!blocked && strcmp(layout, "NCHW"))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_INVALID_MODEL,
                               "attribute 'layout' must be NCHW or NCHW16c, not '%s'", layout);
    if (blocked && (y->rank != 4 || y->dims[1] % 16))
        return POPRT__NODE_ERR(k->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "layout NCHW16c needs a rank-4 Y with channels in blocks of 16");
    for (int s = 0; s < j.n_steps; s++) {
        const int i = j.steps[s].operand;
        if (i > 0 && !j.ops[i].data && (st = classify(k, i, y, &j.ops[i])))
            return st;
        if (i > 0 && blocked && (st = classify_blocked(k, i, y, &j.ops[i])))
            return st;
    }
    if (y->numel == 0)
        return POPRT_OK;
    j.x = x->data;
    j.y = y->data;
    j.vm = poprt__kctx_vmath(k);
    /* about 16K elements per task: cheap steps would not pay for a thread
     * below that, and any split gives the same bits */
    const int64_t grain = 16384;
    if (y->numel <= grain)
        ew_range(&j, 0, y->numel);
    else
        poprt__kctx_parallel_for(k, y->numel, grain, ew_range, &j);
    return POPRT_OK;
}
