/* Compile-time fusion of the QDQ form static quantization writes (ONNX
 * Runtime's quantize_static with QuantFormat.QDQ, and other tools): each
 * quantized Conv or MatMul sits between DequantizeLinear nodes on its inputs
 * and a QuantizeLinear on its output,
 *
 *   DequantizeLinear(xq, xs, xz) -> X     DequantizeLinear(wq, ws, wz) -> W
 *   [DequantizeLinear(bq int32, bs) -> B]
 *   Conv(X, W[, B]) [-> Relu] -> QuantizeLinear(., ys, yz) -> yq
 *
 * and becomes QLinearConv(xq, xs, xz, wq, ws, wz, ys, yz[, bq]) (MatMul, with
 * no bias: QLinearMatMul; a MatMul whose float result goes elsewhere, a bias
 * Add first as in transformers: ai.poprt FusedMatMulInteger, see
 * to_float), which runs on the integer GEMM
 * (lib/kernels/x86/igemm.h) instead of dequantizing the weights into a
 * float32 convolution. Conditions: the weights wq are a constant of int8 or
 * uint8; x and y use one scale and zero point each; the weight scale is one
 * value or one per output channel (Conv: DequantizeLinear axis 0; MatMul: one
 * per column, axis 1 of a 2-D B); the bias, when there is one, is int32
 * with zero point 0 and scale xs * ws (within 2^-20 relative), as the
 * QLinearConv bias is defined; a Relu between the product and the
 * QuantizeLinear only when y's zero point is the type's lowest value (the
 * saturation then does what the Relu did); the product's output (and the
 * Relu's) has the chain as its only reader and is not a graph output. The
 * DequantizeLinear nodes stay where something else reads them (a residual
 * branch reading the same dequantized input).
 *
 * Results: the QDQ graph computes the float32 product of the dequantized
 * values and rounds it once; the fused node sums the integer products
 * exactly and rounds once with the same scales (the reference's double
 * arithmetic). Both are the same real number rounded, except that the float32
 * sum's own rounding can move a value across a rounding boundary: an output
 * may differ by one quantization step (test_compiler checks the bound).
 * Gemm: see gemm_one. Runs before constant folding, which would turn
 * DequantizeLinear(wq) into float32 weights; only the main graph is
 * rewritten. */
#include <math.h>
#include <string.h>
#include "compiler/compiler.h"
#include "passes/rewrite.h"

/* A DequantizeLinear or QuantizeLinear node's parts: value, scale, zero
 * point (NULL: none) and the scale's element count (constants only). */
typedef struct qparts {
    poprt__tensor *v, *s, *z;
    int64_t ns;
    const float *scale;
} qparts;

/* n is op (DequantizeLinear / QuantizeLinear, ai.onnx) with a constant float
 * scale of 1 or `per` values (axis `axis` when more than one) and a constant
 * zero point of as many (or none), no block quantization. */
static int qnode(const poprt__node *n, const char *op, int64_t per, int axis, qparts *q)
{
    if (!poprt__rw_is(n, op) || n->n_inputs < 2 || n->n_inputs > 3 || n->n_outputs != 1 ||
        poprt__attr_i(n, "block_size", 0) != 0)
        return 0;
    q->v = poprt__node_in(n, 0);
    q->s = poprt__node_in(n, 1);
    q->z = n->n_inputs > 2 ? poprt__node_in(n, 2) : NULL;
    if (!q->v || !q->s || !(q->scale = poprt__rw_f32(q->s, POPRT__RW_ANY, &q->ns)))
        return 0;
    if (q->ns != 1 && (q->ns != per || poprt__attr_i(n, "axis", 1) != axis))
        return 0;
    poprt__rw_const zc;
    if (q->z && (!poprt__rw_const_of(q->z, POPRT__RW_ANY, &zc) || zc.numel != q->ns))
        return 0;
    for (int64_t i = 0; i < q->ns; i++)
        if (!(q->scale[i] > 0) || !isfinite(q->scale[i]))
            return 0;
    return 1;
}

/* The element type of q's integer value: its zero point's, else the value's
 * own (or its constant's), else 0 when unknown or not 8-bit. */
static int32_t qtype(const qparts *q)
{
    poprt__rw_const c;
    int32_t e = 0;
    if (q->z && poprt__rw_const_of(q->z, POPRT__RW_ANY, &c))
        e = c.elem;
    else if (q->v->type.kind == POPRT__KIND_TENSOR && q->v->type.elem)
        e = q->v->type.elem;
    else if (poprt__rw_const_of(q->v, POPRT__RW_ANY, &c))
        e = c.elem;
    return e == POPRT_DTYPE_UINT8 || e == POPRT_DTYPE_INT8 ? e : 0;
}

/* q's zero point, or a new 0 of type elem when it has none. */
static poprt__tensor *zero_point(poprt__graph *g, const qparts *q, int32_t elem)
{
    return q->z ? q->z : poprt__rw_new_scalar(g, "qdq_zero_point", elem, 0, 0.0);
}

/* The sole reader of t in g when it is op, else NULL. */
static poprt__node *only_reader(const poprt__graph *g, const poprt__tensor *t, const char *op)
{
    poprt__node *r = poprt__graph_sole_consumer(g, t);
    return r && poprt__rw_is(r, op) ? r : NULL;
}

/* A new node op (ai.poprt when poprt, else ai.onnx) named after p, reading
 * the n tensors of ins. */
static poprt_status new_fused(poprt__graph *g, const poprt__node *p, const char *op, int poprt,
                              int n, poprt__tensor *const *ins, poprt__node **out)
{
    *out = NULL;
    const char *name = poprt__model_unique_name(g->model, p->name);
    if (!name)
        return poprt__rw_oom();
    poprt_status st = poprt ? poprt__rw_poprt_domain(g->model) : POPRT_OK;
    if (st)
        return st;
    poprt__node *f = poprt__graph_add_node(g, op, poprt ? "ai.poprt" : "", name, n, 1);
    if (!f)
        return poprt__rw_oom();
    for (int i = 0; i < n; i++)
        poprt__node_set_input(f, i, ins[i]);
    *out = f;
    return POPRT_OK;
}

/* The fused node f writes out, the last tensor of the chain p [-> b] [-> a],
 * whose nodes leave g (a, b: NULL when absent). */
static poprt_status replace_chain(poprt__graph *g, poprt__node *f, poprt__tensor *out,
                                  poprt__node *a, poprt__node *b, poprt__node *p, int *done)
{
    if (a)
        poprt__graph_remove_node(g, a);
    if (b)
        poprt__graph_remove_node(g, b);
    poprt__graph_remove_node(g, p);
    f->outputs[0] = out;
    out->producer = f;
    out->producer_slot = 0;
    *done = 1;
    return POPRT_OK;
}

/* A dequantized MatMul whose result stays float (no QuantizeLinear right
 * after it: a bias Add, a residual, a LayerNorm come first): the integer
 * product scaled to float, ai.poprt FusedMatMulInteger(xq, wq, xz, wz, S[,
 * C]) with S = x_scale * w_scale (one per column, a new constant) and C a
 * constant per-column bias Add that follows, taken in. Y differs from the
 * unfused float32 sum of dequantized products by that sum's own rounding. */
static poprt_status to_float(poprt__graph *g, poprt__node *p, const qparts *x, const qparts *w,
                             int *done)
{
    poprt__tensor *out = poprt__node_out(p, 0);
    const int64_t n = w->ns;
    float *sv = poprt__malloc((size_t)n * sizeof *sv);
    if (!sv)
        return poprt__rw_oom();
    for (int64_t j = 0; j < n; j++)
        sv[j] = x->scale[0] * w->scale[j];
    const int64_t sd[1] = {n};
    poprt__tensor *s = poprt__graph_add_const(g, "qdq_scale", POPRT_DTYPE_FLOAT, 1, sd, sv,
                                              (size_t)n * sizeof *sv);
    poprt__free(sv);
    if (!s)
        return poprt__rw_oom();
    /* a constant bias of 1 or N values (N: the columns) added right after */
    poprt__node *add = only_reader(g, out, "Add");
    poprt__tensor *c = NULL;
    if (add && add->n_inputs == 2 && poprt__node_out(add, 0)) {
        poprt__tensor *o = poprt__node_in(add, poprt__node_in(add, 0) == out ? 1 : 0);
        int64_t d[POPRT__MAX_RANK], wd[POPRT__MAX_RANK];
        int r, wr;
        if (o && o != out && poprt__rw_is_const(o) && o->type.elem == POPRT_DTYPE_FLOAT &&
            poprt__rw_static_dims(o, d, &r) && r == 1 &&
            poprt__rw_static_dims(w->v, wd, &wr) && wr == 2 && (d[0] == 1 || d[0] == wd[1]))
            c = o;
    }
    poprt__tensor *ins[6] = {x->v, w->v, x->z, w->z, s, c};
    poprt__node *f;
    poprt_status st = new_fused(g, p, "FusedMatMulInteger", 1, c ? 6 : 5, ins, &f);
    if (st)
        return st;
    return replace_chain(g, f, c ? poprt__node_out(add, 0) : out, c ? add : NULL, NULL, p, done);
}

static poprt_status fuse_one(poprt__graph *g, poprt__node *p, int *done)
{
    *done = 0;
    const int conv = poprt__rw_is(p, "Conv");
    if (p->n_outputs != 1 || p->n_inputs < 2 || p->n_inputs > (conv ? 3 : 2))
        return POPRT_OK;
    /* the weights: a constant, 4-D [M, C/g, kh, kw]-like for Conv (any rank
     * >= 3), 2-D [K, N] for MatMul */
    poprt__node *dw = poprt__node_in(p, 1) ? poprt__node_in(p, 1)->producer : NULL;
    poprt__tensor *wq0 = dw && dw->n_inputs >= 1 ? poprt__node_in(dw, 0) : NULL;
    int64_t wd[POPRT__MAX_RANK];
    int wr;
    if (!wq0 || !poprt__rw_is_const(wq0) || !poprt__rw_static_dims(wq0, wd, &wr) ||
        (conv ? wr < 3 : wr != 2))
        return POPRT_OK;
    const int64_t outs = conv ? wd[0] : wd[1];
    qparts x, w, b = {0}, y;
    poprt__node *dx = poprt__node_in(p, 0) ? poprt__node_in(p, 0)->producer : NULL;
    if (!dx || !qnode(dx, "DequantizeLinear", 1, 1, &x) ||
        !qnode(dw, "DequantizeLinear", outs, conv ? 0 : 1, &w))
        return POPRT_OK;
    const int32_t xt = qtype(&x), wt = qtype(&w);
    if (!xt || !wt)
        return POPRT_OK;
    /* the bias: int32 at scale xs * ws, zero point 0 */
    poprt__node *db = NULL;
    if (conv && p->n_inputs > 2 && poprt__node_in(p, 2)) {
        db = poprt__node_in(p, 2)->producer;
        poprt__rw_const bc;
        if (!db || !qnode(db, "DequantizeLinear", outs, 0, &b) || !poprt__rw_is_const(b.v) ||
            !poprt__rw_const_of(b.v, POPRT__RW_DATA, &bc) || bc.elem != POPRT_DTYPE_INT32 ||
            bc.numel != outs)
            return POPRT_OK;
        int64_t bz[1];
        if (b.z && (poprt__rw_ints(b.z, POPRT__RW_ANY, bz, 1) != 1 || bz[0] != 0))
            return POPRT_OK;
        for (int64_t m = 0; m < outs; m++) {
            const double want = (double)x.scale[0] * w.scale[w.ns > 1 ? m : 0];
            if (fabs(b.scale[b.ns > 1 ? m : 0] - want) > want * 0x1p-20)
                return POPRT_OK;
        }
    }
    /* the output: [Relu ->] QuantizeLinear */
    poprt__tensor *pt = poprt__node_out(p, 0);
    poprt__node *relu = only_reader(g, pt, "Relu");
    poprt__tensor *qin = relu ? poprt__node_out(relu, 0) : pt;
    poprt__node *qy = qin ? only_reader(g, qin, "QuantizeLinear") : NULL;
    if (!qy || !qnode(qy, "QuantizeLinear", 1, 1, &y) || !poprt__node_out(qy, 0))
        return conv ? POPRT_OK : to_float(g, p, &x, &w, done);
    int32_t yt = y.z ? qtype(&y) : POPRT_DTYPE_UINT8;
    const int64_t odt = poprt__attr_i(qy, "output_dtype", 0);
    if (!yt || (odt && odt != yt) || (!y.z && odt && odt != POPRT_DTYPE_UINT8))
        return POPRT_OK;
    if (relu) {
        int64_t z[1] = {0};
        if (y.z && poprt__rw_ints(y.z, POPRT__RW_ANY, z, 1) != 1)
            return POPRT_OK;
        if (z[0] != (yt == POPRT_DTYPE_UINT8 ? 0 : -128))
            return POPRT_OK;
    }
    poprt__tensor *xz = zero_point(g, &x, xt), *wz = zero_point(g, &w, wt),
                  *yz = zero_point(g, &y, yt);
    if (!xz || !wz || !yz)
        return poprt__rw_oom();
    poprt__tensor *ins[9] = {x.v, x.s, xz, w.v, w.s, wz, y.s, yz, db ? b.v : NULL};
    poprt__node *f;
    poprt_status st =
        new_fused(g, p, conv ? "QLinearConv" : "QLinearMatMul", 0, db ? 9 : 8, ins, &f);
    if (st)
        return st;
    static const char *const attrs[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads",
                                        "strides"};
    for (size_t i = 0; conv && i < sizeof attrs / sizeof attrs[0] && !st; i++)
        st = poprt__rw_copy_attr(f, p, attrs[i]);
    if (st)
        return st;
    return replace_chain(g, f, poprt__node_out(qy, 0), qy, relu, p, done);
}

/* Gemm(DQ(xq), DQ(wq)[, C]) (transA 0; the classifier heads of quantized
 * CNNs): ai.poprt FusedMatMulInteger with the weights as [K, N] (transposed
 * at compile time for transB 1), S = alpha x_scale w_scale per column and C
 * (a float constant, or a DequantizeLinear of one, evaluated here as the
 * operator does) times beta. A QuantizeLinear after it stays. */
static poprt_status gemm_one(poprt__graph *g, poprt__node *p, int *done)
{
    *done = 0;
    const int tb = poprt__attr_i(p, "transB", 0) != 0;
    const float alpha = poprt__attr_f(p, "alpha", 1.0f), beta = poprt__attr_f(p, "beta", 1.0f);
    if (p->n_outputs != 1 || p->n_inputs < 2 || poprt__attr_i(p, "transA", 0) != 0 ||
        !poprt__node_out(p, 0))
        return POPRT_OK;
    poprt__node *dx = poprt__node_in(p, 0) ? poprt__node_in(p, 0)->producer : NULL;
    poprt__node *dw = poprt__node_in(p, 1) ? poprt__node_in(p, 1)->producer : NULL;
    poprt__tensor *wq = dw && dw->n_inputs >= 1 ? poprt__node_in(dw, 0) : NULL;
    int64_t wd[POPRT__MAX_RANK];
    int wr;
    poprt__rw_const wc;
    if (!dx || !wq || !poprt__rw_is_const(wq) || !poprt__rw_static_dims(wq, wd, &wr) || wr != 2 ||
        !poprt__rw_const_of(wq, POPRT__RW_DATA, &wc))
        return POPRT_OK;
    const int64_t K = tb ? wd[1] : wd[0], N = tb ? wd[0] : wd[1];
    qparts x, w;
    if (!qnode(dx, "DequantizeLinear", 1, 1, &x) ||
        !qnode(dw, "DequantizeLinear", N, tb ? 0 : 1, &w) || !qtype(&x) || !qtype(&w))
        return POPRT_OK;
    /* C: one value or one per column, float, constant or dequantized */
    float *cv = NULL;
    poprt__tensor *ct = p->n_inputs > 2 ? poprt__node_in(p, 2) : NULL;
    int64_t cn = 0;
    if (ct) {
        const float *f = poprt__rw_f32(ct, POPRT__RW_ANY, &cn);
        qparts cq;
        poprt__rw_const cc;
        poprt__node *dc = ct->producer;
        int64_t cd[POPRT__MAX_RANK];
        if (!f && dc && qnode(dc, "DequantizeLinear", N, 0, &cq) &&
            poprt__rw_const_of(cq.v, POPRT__RW_DATA, &cc) && cc.elem == POPRT_DTYPE_INT32 &&
            (cc.numel == 1 || cc.numel == N) && (cq.ns == 1 || cc.numel == N) && !cq.z) {
            cn = cc.numel;
            if (!(cv = poprt__malloc((size_t)cn * sizeof *cv)))
                return poprt__rw_oom();
            for (int64_t j = 0; j < cn; j++)
                cv[j] = (float)((const int32_t *)cc.data)[j] * cq.scale[cq.ns > 1 ? j : 0];
        } else if (f && (cn == 1 || cn == N) && poprt__rw_dims(ct, cd) <= 1) {
            if (!(cv = poprt__malloc((size_t)cn * sizeof *cv)))
                return poprt__rw_oom();
            memcpy(cv, f, (size_t)cn * sizeof *cv);
        } else {
            return POPRT_OK;
        }
        for (int64_t j = 0; j < cn; j++)
            cv[j] *= beta;
    }
    /* the weights as [K, N] and S */
    const size_t es = poprt__dtype_size(wc.elem);
    unsigned char *wt = poprt__malloc((size_t)(K * N) * es);
    float *sv = poprt__malloc((size_t)N * sizeof *sv);
    poprt__tensor *c = NULL, *s = NULL, *wkn = wq;
    if (!wt || !sv) {
        poprt__free(wt);
        poprt__free(sv);
        poprt__free(cv);
        return poprt__rw_oom();
    }
    for (int64_t j = 0; j < N; j++)
        sv[j] = alpha * (x.scale[0] * w.scale[w.ns > 1 ? j : 0]);
    const int64_t sd[1] = {N}, kn[2] = {K, N};
    s = poprt__graph_add_const(g, "qdq_scale", POPRT_DTYPE_FLOAT, 1, sd, sv,
                               (size_t)N * sizeof *sv);
    if (s && cv)
        c = poprt__graph_add_const(g, "qdq_bias", POPRT_DTYPE_FLOAT, 1, &cn, cv,
                                   (size_t)cn * sizeof *cv);
    if (s && tb) {
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++)
                memcpy(wt + (size_t)(k * N + j) * es,
                       (const unsigned char *)wc.data + (size_t)(j * K + k) * es, es);
        wkn = poprt__graph_add_const(g, "qdq_weight", wc.elem, 2, kn, wt, (size_t)(K * N) * es);
    }
    poprt__free(wt);
    poprt__free(sv);
    poprt__free(cv);
    if (!s || !wkn || (ct && !c))
        return poprt__rw_oom();
    /* (a per-column weight zero point holds N values whichever way B was stored) */
    poprt__tensor *ins[6] = {x.v, wkn, x.z, w.z, s, c};
    poprt__node *f;
    poprt_status st = new_fused(g, p, "FusedMatMulInteger", 1, c ? 6 : 5, ins, &f);
    if (st)
        return st;
    return replace_chain(g, f, poprt__node_out(p, 0), NULL, NULL, p, done);
}

/* DequantizeLinear(aq) + DequantizeLinear(bq) -> Add (or a 2-input Sum) [-> Relu] ->
 * QuantizeLinear, operands of one static shape and every scale and zero
 * point one value (a QDQ model's residual connections): ai.poprt
 * QLinearAdd, one pass over the bytes with the same float32 steps (results
 * equal the unfused graph's). After shape inference. */
static poprt_status add_one(poprt__graph *g, poprt__node *p, int *done)
{
    *done = 0;
    if (p->n_inputs != 2 || p->n_outputs != 1 || !poprt__node_out(p, 0))
        return POPRT_OK;
    qparts a, b, y;
    poprt__node *da = poprt__node_in(p, 0) ? poprt__node_in(p, 0)->producer : NULL;
    poprt__node *db = poprt__node_in(p, 1) ? poprt__node_in(p, 1)->producer : NULL;
    int64_t ad[POPRT__MAX_RANK], bd[POPRT__MAX_RANK];
    int ar, br;
    if (!da || !db || !qnode(da, "DequantizeLinear", 1, 1, &a) ||
        !qnode(db, "DequantizeLinear", 1, 1, &b) || !a.z || !b.z || !qtype(&a) || !qtype(&b) ||
        !poprt__rw_static_dims(a.v, ad, &ar) || !poprt__rw_static_dims(b.v, bd, &br) || ar != br)
        return POPRT_OK;
    for (int i = 0; i < ar; i++)
        if (ad[i] != bd[i])
            return POPRT_OK;
    poprt__tensor *pt = poprt__node_out(p, 0);
    poprt__node *relu = only_reader(g, pt, "Relu");
    poprt__tensor *qin = relu ? poprt__node_out(relu, 0) : pt;
    poprt__node *qy = qin ? only_reader(g, qin, "QuantizeLinear") : NULL;
    if (!qy || !qnode(qy, "QuantizeLinear", 1, 1, &y) || !y.z || !qtype(&y) ||
        !poprt__node_out(qy, 0) || poprt__attr_i(qy, "output_dtype", 0) != 0)
        return POPRT_OK;
    poprt__tensor *ins[8] = {a.v, a.s, a.z, b.v, b.s, b.z, y.s, y.z};
    poprt__node *f;
    poprt_status st = new_fused(g, p, "QLinearAdd", 1, 8, ins, &f);
    if (st)
        return st;
    if (relu && (st = poprt__rw_attr_i(f, "relu", 1)))
        return st;
    return replace_chain(g, f, poprt__node_out(qy, 0), qy, relu, p, done);
}

poprt_status poprt__compile_fuse_qlinear_add(poprt__model *m, int *any)
{
    int changed = 0;
    poprt_status st = poprt__compile_fuse_from(m, "Add", add_one, "QDQ Add fusion", &changed);
    if (!st) /* a Sum of two operands is the same Add */
        st = poprt__compile_fuse_from(m, "Sum", add_one, "QDQ Sum fusion", &changed);
    if (!st && changed) {
        poprt__graph_remove_dead(m->graph);
        st = poprt__model_check(m);
        *any = 1;
    }
    return st;
}

poprt_status poprt__compile_fuse_qdq(poprt__model *m, int *any)
{
    int changed = 0;
    poprt_status st = poprt__compile_fuse_from(m, "Conv", fuse_one, "QDQ Conv fusion", &changed);
    if (!st)
        st = poprt__compile_fuse_from(m, "MatMul", fuse_one, "QDQ MatMul fusion", &changed);
    if (!st)
        st = poprt__compile_fuse_from(m, "Gemm", gemm_one, "QDQ Gemm fusion", &changed);
    if (!st && changed) {
        /* the DequantizeLinear nodes of the weights, biases and inputs that
         * only the fused products read */
        poprt__graph_remove_dead(m->graph);
        st = poprt__model_check(m);
        *any = 1;
    }
    return st;
}
