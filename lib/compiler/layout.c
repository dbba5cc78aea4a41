/* Layout choice when a session is compiled: activations that flow only
 * between convolutions, pools, channel concatenations and elementwise nodes are
 * kept in NCHW16c (channels in blocks of 16, the 16 values of a position
 * contiguous: [N][C/16][H][W][16]), the layout of the blocked direct
 * convolution (lib/kernels/x86/conv_blocked.h). A convolution then reads its
 * input without copying it into blocks (with padding: one copy of whole
 * rows) and its tiles store their results without the transposition back
 * to channel rows; 1x1 convolutions run blocked too. NCHW stays at the
 * graph's edges: convolutions convert on the way in (their input copy) and
 * on the way out (their transposition), so no conversion node is added.
 *
 * A tensor is made NCHW16c when it is a float32 activation of rank 4 with
 * static dims and a channel count that is a multiple of 16 (the layout then
 * has exactly the bytes of NCHW, so the memory plan, Concat elision and
 * in-place Relu work unchanged), it is not a graph output, and it is
 * produced and read only by:
 *   - a 2-D Conv or FusedConv with constant 4-D weights, of one group or
 *     of groups of whole blocks of 16 channels (as X,
 *     or as FusedConv's residual Z, which then has Y's layout; a stem with
 *     3 input channels writes NCHW16c from its row tiles too);
 *   - a depthwise or grouped 2-D Conv or FusedConv whose groups lie inside
 *     blocks of 16 (C = M, C / G = 1, 2, 4 or 8, constant weights) when
 *     its X, Y and Z all have the layout (vectors of the 16 channels of a
 *     position: lib/kernels/x86/conv_dw.h);
 *   - MaxPool without Indices (input and output share the layout: it
 *     becomes ai.poprt BlockedMaxPool), AveragePool and GlobalAveragePool
 *     (ai.poprt BlockedAveragePool, BlockedGlobalAveragePool);
 *   - Concat on the channel axis (all inputs and the output share it: a
 *     channel concatenation of whole blocks is the same copy in both
 *     layouts), and Split on it into parts of whole blocks likewise;
 *   - Relu (elementwise: any layout), Identity and inference Dropout (views
 *     of their input's bytes: input and output share the layout);
 *   - other elementwise nodes (unary activations, Add / Sub / Mul / Div,
 *     FusedElementwise): their inputs of the output's shape share its
 *     layout; their other operands hold one value, one per image (the same
 *     bytes in both layouts) or one per channel, which FusedElementwise
 *     reads per block: a binary node with such an operand becomes a
 *     one-step FusedElementwise, and either gets layout = "NCHW16c".
 * Convolutions with an NCHW16c operand become ai.poprt FusedConv with
 * attributes x_layout / y_layout = "NCHW16c" (docs/ops.md).
 *
 * A tensor of spatial size 1 x 1 ([N, C, 1, 1]) has the same bytes in both
 * layouts: it stays NCHW, and a node between it and an NCHW16c tensor
 * needs nothing else (a global pool reads NCHW16c and writes it; a network
 * whose last blocks end in a global pool keeps them in NCHW16c).
 *
 * Only on CPUs whose kernels include the blocked convolution (AVX2 or
 * AVX-512, conv_blocked_kernels.inc): an
 * executable file made here and loaded elsewhere still runs, as the
 * kernels convert the operands around their plain paths. */
#include <string.h>
#include "compiler/compiler.h"
#include "ir/fused_elementwise.h"
#include "kernels/x86/conv_blocked.h"
#include "passes/rewrite.h"

static const char BLOCKED[] = "NCHW16c";

static int is_fused_conv(const poprt__node *n)
{
    return n->domain && strcmp(n->domain, "ai.poprt") == 0 && strcmp(n->op_type, "FusedConv") == 0;
}

/* A float32 rank-4 tensor with static dims. */
static int static4(const poprt__tensor *t)
{
    return poprt__cc_static_float(t, 4) && t->type.rank == 4;
}

/* Conv / FusedConv that the blocked convolution can run. */
static int conv_ok(const poprt__node *n)
{
    if (!(poprt__rw_is(n, "Conv") || is_fused_conv(n)) || n->n_outputs != 1)
        return 0;
    const poprt__tensor *x = poprt__node_in(n, 0), *w = poprt__node_in(n, 1);
    if (!static4(x) || !static4(poprt__node_out(n, 0)) || !w || !w->raw || !static4(w))
        return 0;
    const int64_t G = poprt__attr_i(n, "group", 1);
    return G == 1 || (poprt__x86_convb_grouped_fits(x->type.dims[1].value,
                                                    w->type.dims[0].value, G) &&
                      w->type.dims[1].value * G == x->type.dims[1].value);
}

/* A depthwise or grouped Conv / FusedConv whose groups lie inside blocks
 * of 16 channels (group G, C = M channels, C / G = 1, 2, 4 or 8 per
 * group, constant weights [M, C / G, KH, KW]): poprt__x86_dwconv_blocked
 * runs it with X, Y and Z all in NCHW16c, so they share a layout
 * (share_of). */
static int dwconv_ok(const poprt__node *n)
{
    if (!(poprt__rw_is(n, "Conv") || is_fused_conv(n)) || n->n_outputs != 1)
        return 0;
    const poprt__tensor *x = poprt__node_in(n, 0), *w = poprt__node_in(n, 1);
    if (!static4(x) || !static4(poprt__node_out(n, 0)) || !w || !w->raw || !static4(w))
        return 0;
    const int64_t C = x->type.dims[1].value, G = poprt__attr_i(n, "group", 1);
    return poprt__x86_dwconv_blocked_fits(C, w->type.dims[0].value, G) &&
           w->type.dims[1].value == C / G;
}

/* MaxPool that BlockedMaxPool can run: 2-D, no Indices output. */
static int pool_ok(const poprt__node *n)
{
    return poprt__rw_is(n, "MaxPool") && (n->n_outputs == 1 || !poprt__node_out(n, 1)) &&
           static4(poprt__node_in(n, 0)) && static4(poprt__node_out(n, 0));
}

/* AveragePool (2-D: its X is rank 4) and GlobalAveragePool on rank-4
 * tensors: BlockedAveragePool / BlockedGlobalAveragePool run them. */
static int avgpool_ok(const poprt__node *n)
{
    return (poprt__rw_is(n, "AveragePool") || poprt__rw_is(n, "GlobalAveragePool")) &&
           n->n_outputs == 1 && static4(poprt__node_in(n, 0)) && static4(poprt__node_out(n, 0));
}

/* [N, C, 1, 1]: the same bytes in NCHW and NCHW16c. */
static int neutral(const poprt__tensor *t)
{
    return t && static4(t) && t->type.dims[2].value == 1 && t->type.dims[3].value == 1;
}

static int concat_ok(const poprt__node *n)
{
    if (!poprt__rw_is(n, "Concat") || n->n_outputs != 1 || n->n_inputs < 1)
        return 0;
    const int64_t axis = poprt__attr_i(n, "axis", 0);
    return axis == 1 || axis == -3;
}

/* Split on the channel axis into parts of whole blocks of 16: each part
 * is then the same run of bytes in both layouts (image n's channels
 * [c0, c1) at n C H W + c0 H W floats), so the Split's input and outputs
 * share a layout and its kernel needs nothing else (YOLOv8's C2f blocks
 * split a conv's output in two halves). */
static int split_ok(const poprt__node *n)
{
    if (!poprt__rw_is(n, "Split") || n->n_inputs < 1 || n->n_outputs < 1 ||
        !static4(poprt__node_in(n, 0)))
        return 0;
    const int64_t axis = poprt__attr_i(n, "axis", 0);
    if (axis != 1 && axis != -3)
        return 0;
    for (int i = 0; i < n->n_outputs; i++) {
        const poprt__tensor *t = poprt__node_out(n, i);
        if (!t || !static4(t) || t->type.dims[1].value % 16)
            return 0;
    }
    return 1;
}

/* Relu, and the views that pass their input's bytes through unchanged
 * (Identity, inference Dropout with no mask read: lib/compiler/plan.c):
 * the output has the input's layout. */
static int same_bytes(const poprt__node *n)
{
    if (n->n_inputs < 1 || n->n_outputs < 1 || !poprt__node_out(n, 0))
        return 0;
    if (poprt__rw_is(n, "Relu") || poprt__rw_is(n, "Identity"))
        return n->n_outputs == 1;
    if (!poprt__rw_is(n, "Dropout") || poprt__node_in(n, 2))
        return 0;
    const poprt__tensor *mask = poprt__node_out(n, 1);
    return !mask || (!mask->is_output && !poprt__tensor_use_count(n->graph, mask));
}

/* Elementwise nodes: unary operators (other inputs scalars, as Clip's
 * bounds), the binary arithmetic ones, and FusedElementwise. */
static int ew_unary(const poprt__node *n)
{
    static const char *const ops[] = {"Sigmoid", "Tanh",  "HardSigmoid", "HardSwish", "LeakyRelu",
                                      "Clip",    "Elu",   "Selu",        "Softplus",  "Softsign",
                                      "Exp",     "Log",   "Neg",         "Abs",       "Sqrt",
                                      "Reciprocal", "Erf", "Mish",       "Gelu",      "Swish"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (poprt__rw_is(n, ops[i]))
            return 1;
    return 0;
}

static int ew_binary(const poprt__node *n)
{
    return poprt__rw_is(n, "Add") || poprt__rw_is(n, "Sub") || poprt__rw_is(n, "Mul") ||
           poprt__rw_is(n, "Div");
}

static int is_fused_ew(const poprt__node *n)
{
    return n->domain && strcmp(n->domain, "ai.poprt") == 0 &&
           strcmp(n->op_type, "FusedElementwise") == 0;
}

/* How operand t of an elementwise node with output y reads y's layout:
 * EW_FULL (y's shape: the same layout), EW_SAME (one value, or one per
 * image: the same in both layouts), EW_CHANNEL (one value per channel,
 * [C,1,1] or [N|1,C,1,1]: FusedElementwise reads it per block), else
 * EW_NO. */
enum { EW_NO, EW_FULL, EW_SAME, EW_CHANNEL };
static int ew_operand(const poprt__tensor *t, const poprt__tensor *y)
{
    if (!poprt__cc_static_float(t, 4))
        return EW_NO;
    if (t->type.rank == 4 && poprt__cc_same_shape(t, y))
        return EW_FULL;
    const int pad = 4 - t->type.rank;
    int channel = 0;
    for (int d = 0; d < t->type.rank; d++) {
        const int64_t v = t->type.dims[d].value, axis = d + pad;
        if (v == 1)
            continue;
        if (axis >= 2 || v != y->type.dims[axis].value)
            return EW_NO;
        channel |= axis == 1;
    }
    return channel ? EW_CHANNEL : EW_SAME;
}

/* An elementwise node whose output may be NCHW16c: a static rank-4 float
 * output, input 0 (any input of a binary operator) of its shape, the other
 * inputs as ew_operand allows; one value per channel only where
 * FusedElementwise takes it (binary operators become one). */
static int ew_ok(const poprt__node *n)
{
    const int fused = is_fused_ew(n), binary = ew_binary(n);
    if ((!fused && !binary && !ew_unary(n)) || n->n_outputs != 1 || n->n_inputs < 1)
        return 0;
    const poprt__tensor *y = poprt__node_out(n, 0);
    if (!y || !static4(y))
        return 0;
    int full = -1;
    for (int s = 0; s < n->n_inputs; s++) {
        const poprt__tensor *t = poprt__node_in(n, s);
        if (!t)
            continue;
        const int k = ew_operand(t, y);
        if (k == EW_NO || (!binary && s == 0 && k != EW_FULL) ||
            (!binary && !fused && s > 0 && k != EW_SAME))
            return 0;
        if (k == EW_FULL && full < 0)
            full = s;
    }
    if (full < 0)
        return 0;
    if (binary) { /* a per-channel side: the step it makes */
        poprt__tensor *a = poprt__node_in(n, 0), *b = poprt__node_in(n, 1);
        poprt__cc_step st;
        if (a && b && (ew_operand(a, y) == EW_CHANNEL || ew_operand(b, y) == EW_CHANNEL) &&
            !poprt__cc_step_of(n->graph, (poprt__node *)n, full == 0 ? a : b, &st))
            return 0;
    }
    return 1;
}

/* May node n read (slot) or write its output in NCHW16c? */
static int reads_ok(const poprt__node *n, int slot)
{
    if (conv_ok(n) || dwconv_ok(n))
        return slot == 0 || (slot == 3 && is_fused_conv(n));
    if (pool_ok(n) || avgpool_ok(n) || same_bytes(n) || split_ok(n))
        return slot == 0;
    if (ew_ok(n))
        return ew_operand(poprt__node_in(n, slot), poprt__node_out(n, 0)) == EW_FULL;
    return concat_ok(n);
}

static int writes_ok(const poprt__node *n)
{
    return conv_ok(n) || dwconv_ok(n) || pool_ok(n) || avgpool_ok(n) || concat_ok(n) ||
           same_bytes(n) || split_ok(n) || ew_ok(n);
}

/* The initial candidates: each tensor by itself. */
static poprt_status candidates(poprt__graph *g, unsigned char *blk)
{
    poprt__vec readers = {0};
    poprt_status st = POPRT_OK;
    for (size_t i = 0; !st && i < g->tensors.len; i++) {
        poprt__tensor *t = g->tensors.items[i];
        blk[t->id] = 0;
        if (!static4(t) || neutral(t) || t->is_input || t->is_output || t->is_initializer ||
            t->raw || !t->producer || t->type.dims[1].value % 16 ||
            t->type.dims[1].value == 0 || !writes_ok(t->producer))
            continue;
        if ((st = poprt__graph_consumers(g, t, &readers)))
            break;
        int reads = 0, ok = readers.len > 0;
        for (size_t r = 0; ok && r < readers.len; r++) {
            const poprt__node *n = readers.items[r];
            for (int s = 0; s < n->n_inputs; s++)
                if (n->inputs[s] == t) {
                    reads++;
                    ok &= reads_ok(n, s);
                }
        }
        /* every read is one of those (none in a subgraph) */
        blk[t->id] = (unsigned char)(ok && reads == poprt__tensor_use_count(g, t));
    }
    poprt__vec_free(&readers);
    return st;
}

/* The tensors node n keeps in one layout, because its kernel reads and
 * writes them alike: the pools, Relu, the views and Concat keep the layout
 * through (a 1 x 1 output fits either); a residual has its convolution's
 * output layout; a depthwise convolution's X, Y and Z share one; an
 * elementwise node's inputs of Y's shape have Y's. The set is its anchor
 * (NULL: none) and the members share_member gives for slots [0, count). */
typedef struct share_set {
    enum { SHARE_INPUTS, SHARE_OUTPUTS, SHARE_CONV, SHARE_DWCONV, SHARE_EW } kind;
    poprt__tensor *anchor;
    int count;
} share_set;

static share_set share_of(const poprt__node *n)
{
    share_set s = {SHARE_INPUTS, NULL, 0};
    if (concat_ok(n))
        s = (share_set){SHARE_INPUTS, n->outputs[0], n->n_inputs};
    else if (pool_ok(n) || avgpool_ok(n) || same_bytes(n))
        s = (share_set){SHARE_INPUTS, n->outputs[0], 1};
    else if (split_ok(n))
        s = (share_set){SHARE_OUTPUTS, n->inputs[0], n->n_outputs};
    else if (conv_ok(n))
        s = (share_set){SHARE_CONV, n->outputs[0], 2};
    else if (dwconv_ok(n))
        s = (share_set){SHARE_DWCONV, n->outputs[0], 2};
    else if (ew_ok(n))
        s = (share_set){SHARE_EW, n->outputs[0], n->n_inputs};
    if ((s.kind == SHARE_INPUTS || s.kind == SHARE_OUTPUTS) && s.anchor && neutral(s.anchor))
        s.anchor = NULL; /* (a 1 x 1 output of a pool, view or Concat, Split's input) */
    return s;
}

/* Slot k < s->count of node n's set: a tensor sharing the anchor's layout,
 * or NULL when that slot does not. */
static poprt__tensor *share_member(const poprt__node *n, const share_set *s, int k)
{
    switch (s->kind) {
    case SHARE_INPUTS: return n->inputs[k];
    case SHARE_OUTPUTS: return n->outputs[k];
    case SHARE_CONV:   /* slot 1: Z */
    case SHARE_DWCONV: /* slot 0: X (depthwise only), slot 1: Z */
        if (k == 1)
            return is_fused_conv(n) ? poprt__node_in(n, 3) : NULL;
        return s->kind == SHARE_DWCONV ? n->inputs[0] : NULL;
    default: {
        poprt__tensor *t = poprt__node_in(n, k);
        return t && ew_operand(t, n->outputs[0]) == EW_FULL ? t : NULL;
    }
    }
}

/* Node n's set (share_of) must share a layout: clears all of its tensors
 * unless all are set; returns 1 when it cleared one. */
static int agree(unsigned char *blk, const poprt__node *n)
{
    const share_set s = share_of(n);
    if (!s.anchor)
        return 0;
    int all = blk[s.anchor->id], any = all;
    for (int k = 0; k < s.count; k++) {
        const poprt__tensor *t = share_member(n, &s, k);
        if (t) {
            all &= blk[t->id];
            any |= blk[t->id];
        }
    }
    if (all || !any)
        return 0;
    for (int k = 0; k < s.count; k++) {
        const poprt__tensor *t = share_member(n, &s, k);
        if (t)
            blk[t->id] = 0;
    }
    blk[s.anchor->id] = 0;
    return 1;
}

/* Every node's set to one layout, repeated until nothing changes. */
static void settle(const poprt__graph *g, unsigned char *blk)
{
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < g->nodes.len; i++)
            changed |= agree(blk, g->nodes.items[i]);
    }
}

/* Union-find over tensor ids: the root of a's set */
static size_t uf_root(size_t *par, size_t a)
{
    while (par[a] != a)
        a = par[a] = par[par[a]];
    return a;
}

/* a and b in one set when both are NCHW16c */
static void uf_join(size_t *par, const unsigned char *blk, const poprt__tensor *a,
                    const poprt__tensor *b)
{
    if (a && b && blk[a->id] && blk[b->id])
        par[uf_root(par, a->id)] = uf_root(par, b->id);
}

/* A convolution with more than one tap (constant 4-D weights: conv_ok). */
static int has_taps(const poprt__node *n)
{
    const poprt__tensor *w = poprt__node_in(n, 1);
    return w->type.dims[2].value * w->type.dims[3].value > 1;
}

/* The NCHW16c tensors fall into sets that change layout together: those a
 * node keeps in one layout (share_of) and the X and Y of a
 * convolution that reads and writes NCHW16c. A set pays when a dense
 * convolution with taps reads or writes one of its tensors: that
 * convolution runs blocked anyway, and reads its input in place or stores
 * without a transposition. A set whose convolutions are all 1x1 with the
 * other operand NCHW, or depthwise on wide planes, only moves the
 * conversions into them: each 1x1 convolution then runs blocked with a copy
 * into blocks or a transposition out, where both operands NCHW make it one
 * GEMM. (ppocr_mobile_v2_cls, whose 16-, 32- and 48-channel tensors lie
 * between 1x1 convolutions of 8, 24, 40, 88, 104 or 200 channels: 0.92x
 * the time with no NCHW16c at all, Zen 3.) Such sets go back to NCHW.
 * A depthwise (or grouped) convolution with taps whose output rows are
 * narrower than DW_NARROW_COLS pays too: on NCHW planes it pads and walks
 * each small plane on its own, where the blocked form takes 16 channels a
 * vector. On Zen 3 (AVX2), one process alternating the two sessions,
 * medians of 15-21 rounds: MobileNetV2 (bench/make_zoo_models.py) 0.87x
 * the time at 1 thread and 0.82x at 2, MobileNetV3-Small 0.91x / 0.79x,
 * EfficientNet-B0 0.96x / 0.91x, ResNeXt-50 (grouped 3x3 at 7 x 7) 0.96x
 * at 1; ppocr_mobile_v2_cls 1.00x / 0.99x. Taking
 * every depthwise set (wide planes too) gained no more on MobileNetV2
 * (0.87x). */
#define DW_NARROW_COLS 16
static poprt_status drop_unpaid(const poprt__graph *g, unsigned char *blk)
{
    const size_t nt = g->tensors.len + 1;
    size_t *par = poprt__malloc(nt * sizeof *par);
    unsigned char *pays = poprt__calloc(nt, 1);
    if (!par || !pays) {
        poprt__free(par);
        poprt__free(pays);
        return poprt__rw_oom();
    }
    for (size_t i = 0; i < nt; i++)
        par[i] = i;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        const share_set s = share_of(n);
        for (int k = 0; s.anchor && k < s.count; k++)
            uf_join(par, blk, share_member(n, &s, k), s.anchor);
        if (s.kind == SHARE_CONV) /* a dense conv's X and Y: one set, though they may differ */
            uf_join(par, blk, n->inputs[0], n->outputs[0]);
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        const poprt__node *n = g->nodes.items[i];
        const int narrow_dw = dwconv_ok(n) && has_taps(n) &&
                              n->outputs[0]->type.dims[3].value < DW_NARROW_COLS;
        if (!narrow_dw && (!conv_ok(n) || !has_taps(n)))
            continue;
        for (int k = 0; k < 2; k++) {
            const poprt__tensor *t = k ? n->outputs[0] : n->inputs[0];
            if (blk[t->id])
                pays[uf_root(par, t->id)] = 1;
        }
    }
    for (size_t i = 0; i < g->tensors.len; i++) {
        const poprt__tensor *t = g->tensors.items[i];
        if (blk[t->id] && !pays[uf_root(par, t->id)])
            blk[t->id] = 0;
    }
    poprt__free(par);
    poprt__free(pays);
    return POPRT_OK;
}

/* A node of type (domain, op) in place of n, with n's inputs, outputs and
 * attributes. */
static poprt__node *replace(poprt__graph *g, poprt__node *n, const char *op, const char *domain)
{
    const char *name = poprt__model_unique_name(g->model, n->name);
    poprt__node *f = name ? poprt__graph_add_node(g, op, domain, name, n->n_inputs,
                                                  n->n_outputs > 1 ? 1 : n->n_outputs)
                          : NULL;
    if (!f)
        return NULL;
    for (int a = 0; a < n->n_attrs; a++)
        if (poprt__rw_copy_attr(f, n, n->attrs[a].name))
            return NULL;
    for (int i = 0; i < n->n_inputs; i++)
        poprt__node_set_input(f, i, n->inputs[i]);
    f->outputs[0] = n->outputs[0];
    f->outputs[0]->producer = f;
    f->outputs[0]->producer_slot = 0;
    poprt__graph_remove_node(g, n);
    return f;
}

poprt_status poprt__compile_layout(poprt__model *m, int *any)
{
    if (!poprt__convb_best())
        return POPRT_OK;
    poprt__graph *g = m->graph;
    unsigned char *blk = poprt__calloc(g->tensors.len + 1, 1);
    poprt__vec nodes = {0};
    if (!blk)
        return poprt__rw_oom();
    poprt_status st = candidates(g, blk);
    if (!st)
        settle(g, blk);
    if (!st)
        st = drop_unpaid(g, blk);
    /* the rewrite: snapshot the nodes first, replace() moves them */
    for (size_t i = 0; !st && i < g->nodes.len; i++)
        st = poprt__vec_push(&nodes, g->nodes.items[i]);
    int changed = 0;
    for (size_t i = 0; !st && i < nodes.len; i++) {
        poprt__node *n = nodes.items[i];
        if (conv_ok(n) || dwconv_ok(n)) {
            const int xb = blk[n->inputs[0]->id], yb = blk[n->outputs[0]->id];
            if (!xb && !yb)
                continue;
            poprt__node *f = is_fused_conv(n) ? n : replace(g, n, "FusedConv", "ai.poprt");
            if (!f || (xb && poprt__rw_attr_s(f, "x_layout", BLOCKED)) ||
                (yb && poprt__rw_attr_s(f, "y_layout", BLOCKED)))
                st = poprt__rw_oom();
            changed = 1;
        } else if (ew_ok(n) && blk[n->outputs[0]->id]) {
            /* a per-channel operand needs FusedElementwise's blocked reading;
             * otherwise every value sits where it did (the node stays) */
            poprt__node *f = is_fused_ew(n) ? n : NULL;
            for (int s = 0; !f && ew_binary(n) && s < 2; s++)
                if (ew_operand(n->inputs[s], n->outputs[0]) == EW_CHANNEL) {
                    if ((st = poprt__cc_fuse_node(g, n, n->inputs[1 - s], &f)))
                        break;
                    if (!f)
                        st = poprt__err(POPRT_STATUS_INTERNAL, "node '%s': no elementwise step",
                                        n->name);
                    break;
                }
            if (f && !st && poprt__rw_attr_s(f, "layout", BLOCKED))
                st = poprt__rw_oom();
            changed |= f != NULL;
        } else if ((pool_ok(n) || avgpool_ok(n)) && blk[n->inputs[0]->id]) {
            const char *op = pool_ok(n)                  ? "BlockedMaxPool"
                             : poprt__rw_is(n, "AveragePool") ? "BlockedAveragePool"
                                                             : "BlockedGlobalAveragePool";
            if (!replace(g, n, op, "ai.poprt"))
                st = poprt__rw_oom();
            changed = 1;
        }
    }
    poprt__vec_free(&nodes);
    poprt__free(blk);
    poprt__graph_compact(g); /* (the binary nodes poprt__cc_fuse_node replaced) */
    if (st)
        return poprt__err_prefix(st, "compiling (layout choice): ");
    *any |= changed;
    return changed ? poprt__compile_commit(m, "layout choice") : POPRT_OK;
}
