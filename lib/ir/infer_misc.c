/* Operator family 'misc': schemas and shape/type inference. */
#include <string.h>
#include "ir/op.h"
#include "ir/dtype.h"
#include "core/regex.h"
#include "ir/geom.h"

/* ==== Recurrent ops: RNN, GRU, LSTM =========================================
 * X is [seq, batch, input] (layout 0) or [batch, seq, input] (layout 1);
 * Y is [seq, dirs, batch, hidden] or [batch, seq, dirs, hidden]; Y_h and
 * Y_c are [dirs, batch, hidden] or [batch, dirs, hidden]. */

static int64_t rnn_dim(const poprt__type *t, int d)
{
    if (!t || t->kind != POPRT__KIND_TENSOR || t->rank <= d)
        return -1;
    return t->dims[d].value;
}

static poprt_status inf_recurrent(poprt__infer_ctx *c, int gates)
{
    const poprt__type *x = c->in[0].type;
    int32_t elem = x ? x->elem : 0;
    if (elem && !poprt__dtype_is_float(elem))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "X must be a float tensor, not %s",
                               poprt__dtype_name((poprt_dtype)elem));
    if (x && x->kind == POPRT__KIND_TENSOR && x->rank >= 0 && x->rank != 3)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "X has rank %d, expected 3",
                               x->rank);
    int layout = (int)poprt__attr_i(c->node, "layout", 0);
    if (layout != 0 && layout != 1)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "layout %d is not 0 or 1", layout);
    const char *dir = poprt__attr_s(c->node, "direction", "forward");
    int dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    /* GRU-1 declares its default direction as "foward" (sic): a model that
     * writes the default out means forward */
    int gru1_default = gates == 3 && c->opset < 3 && strcmp(dir, "foward") == 0;
    if (dirs == 1 && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0 && !gru1_default)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "unknown direction '%s'", dir);
    int64_t hidden = poprt__attr_i(c->node, "hidden_size", -1);
    const poprt__type *r = c->n_in > 2 ? c->in[2].type : NULL;
    if (hidden < 0)
        hidden = rnn_dim(r, 2);
    if (rnn_dim(r, 1) >= 0 && hidden >= 0 && rnn_dim(r, 1) != gates * hidden)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "R has %lld rows, expected %d x hidden_size %lld",
                               (long long)rnn_dim(r, 1), gates, (long long)hidden);
    int64_t seq = rnn_dim(x, layout ? 1 : 0), batch = rnn_dim(x, layout ? 0 : 1);
    int64_t y[4], yh[3];
    if (layout == 0) {
        y[0] = seq, y[1] = dirs, y[2] = batch, y[3] = hidden;
        yh[0] = dirs, yh[1] = batch, yh[2] = hidden;
    } else {
        y[0] = batch, y[1] = seq, y[2] = dirs, y[3] = hidden;
        yh[0] = batch, yh[1] = dirs, yh[2] = hidden;
    }
    poprt__infer_set_i64(c, 0, elem, 4, y);
    for (int j = 1; j < c->n_out; j++)
        poprt__infer_set_i64(c, j, elem, 3, yh);
    return POPRT_OK;
}

static poprt_status inf_rnn(poprt__infer_ctx *c) { return inf_recurrent(c, 1); }
static poprt_status inf_gru(poprt__infer_ctx *c) { return inf_recurrent(c, 3); }
static poprt_status inf_lstm(poprt__infer_ctx *c) { return inf_recurrent(c, 4); }

/* RNN-1, GRU-1, GRU-3, LSTM-1: the opset-7 computation without layout (the
 * schemas have no such attribute) and with output_sequence: Y may be
 * omitted when it is 0 (the default) and must be there otherwise. A Y
 * present with output_sequence 0 is computed all the same. */
static poprt_status inf_recurrent_v1(poprt__infer_ctx *c, int gates)
{
    const int64_t seq = poprt__attr_i(c->node, "output_sequence", 0);
    if (seq != 0 && (c->n_out < 1 || !poprt__node_out(c->node, 0)))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "output_sequence is %lld but output Y is omitted", (long long)seq);
    if (gates == 3 && c->opset < 3 && (c->n_out < 2 || !poprt__node_out(c->node, 1)))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "output Y_h is required (GRU-1)");
    return inf_recurrent(c, gates);
}

static poprt_status inf_rnn_v1(poprt__infer_ctx *c) { return inf_recurrent_v1(c, 1); }
static poprt_status inf_gru_v1(poprt__infer_ctx *c) { return inf_recurrent_v1(c, 3); }
static poprt_status inf_lstm_v1(poprt__infer_ctx *c) { return inf_recurrent_v1(c, 4); }

static const poprt__op op_rnn1 = {"RNN", "", 1, 3, 6, 0, 2, 0, inf_rnn_v1};
static const poprt__op op_gru1 = {"GRU", "", 1, 3, 6, 2, 2, 0, inf_gru_v1}; /* Y_h required */
static const poprt__op op_gru3 = {"GRU", "", 3, 3, 6, 0, 2, 0, inf_gru_v1};
static const poprt__op op_lstm1 = {"LSTM", "", 1, 3, 8, 0, 3, 0, inf_lstm_v1};
static const poprt__op op_rnn = {"RNN", "", 7, 3, 6, 0, 2, 0, inf_rnn};
static const poprt__op op_gru = {"GRU", "", 7, 3, 6, 0, 2, 0, inf_gru};
static const poprt__op op_lstm = {"LSTM", "", 7, 3, 8, 0, 3, 0, inf_lstm};
/* ==== end of recurrent ops ================================================== */

/* ==== TfIdfVectorizer ========================================================
 * X [C] or [N, C] of strings (pool_strings) or int32/int64 (pool_int64s);
 * Y float [out] or [N, out], out = max(ngram_indexes) + 1. */
static poprt_status inf_tfidf(poprt__infer_ctx *c)
{
    poprt__tfidf t;
    poprt_status st = poprt__tfidf_parse(c->node, &t);
    if (st)
        return st;
    const poprt__type *x = c->in[0].type;
    if (x && x->kind == POPRT__KIND_TENSOR && x->elem &&
        (t.strings ? x->elem != POPRT_DTYPE_STRING : x->elem == POPRT_DTYPE_STRING))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "X is %s but the pool holds %s", poprt__dtype_name(x->elem),
                               t.strings ? "strings" : "integers");
    if (!x || x->kind != POPRT__KIND_TENSOR || x->rank < 0) {
        poprt__infer_unknown(c, 0, POPRT_DTYPE_FLOAT);
        return POPRT_OK;
    }
    if (x->rank != 1 && x->rank != 2)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "X must have rank 1 or 2, has %d", x->rank);
    int64_t yd[2] = {x->rank == 2 ? x->dims[0].value : t.out_size, t.out_size};
    poprt__infer_set_i64(c, 0, POPRT_DTYPE_FLOAT, x->rank, yd);
    return POPRT_OK;
}

static const poprt__op op_tfidf = {"TfIdfVectorizer", "", 9, 1, 1, 1, 1, 0, inf_tfidf};
/* ==== end of TfIdfVectorizer ================================================= */

/* ==== section 'quant' helper: long-tail ops (signal, detection, random, strings,
 * ai.onnx.preview.training; ai.onnx.ml is lib/ir/infer_ml.c) ==== */
#include <string.h>
#include "ir/dtype.h"

static int qm_dims(const poprt__infer_ctx *c, int i, int64_t *dims)
{
    if (i >= c->n_in || !c->in[i].type || c->in[i].type->kind != POPRT__KIND_TENSOR)
        return -1;
    const poprt__type *t = c->in[i].type;
    if (t->rank < 0 || t->rank > POPRT__MAX_RANK)
        return -1;
    for (int d = 0; d < t->rank; d++)
        dims[d] = t->dims ? t->dims[d].value : -1;
    return t->rank;
}

/* Scalar integer input i when its value is known, else dflt_unknown. */
static int64_t qm_in_scalar(poprt__infer_ctx *c, int i, int64_t dflt_unknown)
{
    int64_t *v, n;
    if (i < c->n_in && c->in[i].type && poprt__infer_input_ints(c, i, &v, &n) && n >= 1)
        return v[0];
    return dflt_unknown;
}

static int qm_has(const poprt__infer_ctx *c, int i) { return i < c->n_in && c->in[i].type; }

static poprt_status qm_dtype_attr(poprt__infer_ctx *c, const char *name, int32_t dflt, int32_t *out)
{
    *out = (int32_t)poprt__attr_i(c->node, name, dflt);
    if (!poprt__dtype_valid(*out))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "invalid %s %d", name, (int)*out);
    return POPRT_OK;
}

static poprt_status inf_window(poprt__infer_ctx *c)
{
    int32_t dt;
    poprt_status st = qm_dtype_attr(c, "output_datatype", POPRT_DTYPE_FLOAT, &dt);
    if (st)
        return st;
    int64_t n = qm_in_scalar(c, 0, -1);
    if (poprt__ival_data(&c->in[0]) && n < 0)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "negative window size");
    poprt__infer_set_i64(c, 0, dt, 1, &n);
    return POPRT_OK;
}

static poprt_status inf_mel(poprt__infer_ctx *c)
{
    int32_t dt;
    poprt_status st = qm_dtype_attr(c, "output_datatype", POPRT_DTYPE_FLOAT, &dt);
    if (st)
        return st;
    int64_t nmel = qm_in_scalar(c, 0, -1), dft = qm_in_scalar(c, 1, -1);
    int64_t od[2] = {dft >= 0 ? dft / 2 + 1 : -1, nmel};
    poprt__infer_set_i64(c, 0, dt, 2, od);
    return POPRT_OK;
}

static poprt_status inf_dft(poprt__infer_ctx *c)
{
    int64_t xd[POPRT__MAX_RANK];
    int r = qm_dims(c, 0, xd);
    int32_t elem = poprt__infer_elem(c, 0);
    if (r < 0) {
        poprt__infer_unknown(c, 0, elem);
        return POPRT_OK;
    }
    if (r < 2 || (xd[r - 1] >= 0 && xd[r - 1] != 1 && xd[r - 1] != 2))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "input must be [..., n, 1 or 2]");
    int64_t axis;
    if (c->opset >= 20) {
        axis = qm_in_scalar(c, 2, qm_has(c, 2) ? INT64_MIN : -2);
        if (axis == INT64_MIN) { /* axis given but unknown: only the rank is known */
            poprt__infer_set_i64(c, 0, elem, r, NULL);
            return POPRT_OK;
        }
    } else
        axis = poprt__attr_i(c->node, "axis", 1);
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r - 1)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "invalid DFT axis");
    int64_t L = qm_has(c, 1) ? qm_in_scalar(c, 1, -1) : xd[axis];
    if (qm_has(c, 1) && poprt__ival_data(&c->in[1]) && L <= 0)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "dft_length must be > 0");
    const int onesided = (int)poprt__attr_i(c->node, "onesided", 0);
    xd[axis] = L < 0 ? -1 : (onesided ? L / 2 + 1 : L);
    xd[r - 1] = 2;
    poprt__infer_set_i64(c, 0, elem, r, xd);
    return POPRT_OK;
}

static poprt_status inf_stft(poprt__infer_ctx *c)
{
    int64_t xd[POPRT__MAX_RANK], wd[POPRT__MAX_RANK];
    int r = qm_dims(c, 0, xd);
    int32_t elem = poprt__infer_elem(c, 0);
    if (r >= 0 && r != 3)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH,
                               "signal must be [batch, length, 1 or 2]");
    int64_t step = qm_in_scalar(c, 1, -1);
    int64_t fl = qm_has(c, 3) ? qm_in_scalar(c, 3, -1) : -1;
    if (fl < 0 && qm_has(c, 2) && qm_dims(c, 2, wd) == 1)
        fl = wd[0];
    int64_t od[4] = {r == 3 ? xd[0] : -1, -1, -1, 2};
    if (r == 3 && xd[1] >= 0 && fl > 0 && step > 0)
        od[1] = xd[1] >= fl ? 1 + (xd[1] - fl) / step : 0;
    if (fl >= 0)
        od[2] = poprt__attr_i(c->node, "onesided", 1) ? fl / 2 + 1 : fl;
    poprt__infer_set_i64(c, 0, elem, 4, od);
    return POPRT_OK;
}

static poprt_status inf_nms(poprt__infer_ctx *c)
{
    int64_t od[2] = {-1, 3};
    poprt__infer_set_i64(c, 0, POPRT_DTYPE_INT64, 2, od);
    return POPRT_OK;
}

static poprt_status inf_roi(poprt__infer_ctx *c, int64_t ph, int64_t pw, int64_t rcols)
{
    int64_t xd[POPRT__MAX_RANK], rd[POPRT__MAX_RANK];
    int rx = qm_dims(c, 0, xd), rr = qm_dims(c, 1, rd);
    if ((rx >= 0 && rx != 4) || (rr >= 0 && rr != 2))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "X must be 4-D and rois 2-D");
    if (rr == 2 && rd[1] >= 0 && rd[1] != rcols)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "rois must have %lld columns",
                               (long long)rcols);
    if (ph < 1 || pw < 1)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "output size must be >= 1");
    int64_t od[4] = {rr == 2 ? rd[0] : -1, rx == 4 ? xd[1] : -1, ph, pw};
    poprt__infer_set_i64(c, 0, poprt__infer_elem(c, 0), 4, od);
    return POPRT_OK;
}

static poprt_status inf_roi_align(poprt__infer_ctx *c)
{
    return inf_roi(c, poprt__attr_i(c->node, "output_height", 1),
                   poprt__attr_i(c->node, "output_width", 1), 4);
}

static poprt_status inf_max_roi_pool(poprt__infer_ctx *c)
{
    int64_t n;
    const int64_t *ps = poprt__attr_ints(c->node, "pooled_shape", &n);
    if (!ps || n != 2)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "pooled_shape must have 2 values");
    return inf_roi(c, ps[0], ps[1], 5);
}

static poprt_status inf_random(poprt__infer_ctx *c)
{
    int32_t dt;
    poprt_status st = qm_dtype_attr(c, "dtype", POPRT_DTYPE_FLOAT, &dt);
    if (st)
        return st;
    int64_t n;
    const int64_t *shape = poprt__attr_ints(c->node, "shape", &n);
    if (!shape && !poprt__node_attr(c->node, "shape"))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "attribute 'shape' is required");
    if (n > POPRT__MAX_RANK)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_UNSUPPORTED, "rank %lld", (long long)n);
    for (int64_t i = 0; i < n; i++)
        if (shape[i] < 0)
            return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "negative dimension");
    poprt__infer_set_i64(c, 0, dt, (int)n, shape);
    return POPRT_OK;
}

/* Same shape as input 0; dtype attribute or input 0's type. */
static poprt_status inf_random_like(poprt__infer_ctx *c)
{
    int32_t dt;
    poprt_status st = qm_dtype_attr(c, "dtype", poprt__infer_elem(c, 0), &dt);
    if (st && poprt__node_attr(c->node, "dtype"))
        return st;
    if (st)
        dt = 0;
    poprt__infer_same(c, 0, 0);
    c->out[0].kind = POPRT__KIND_TENSOR;
    c->out[0].elem = dt;
    return POPRT_OK;
}

static poprt_status inf_multinomial(poprt__infer_ctx *c)
{
    int32_t dt;
    poprt_status st = qm_dtype_attr(c, "dtype", POPRT_DTYPE_INT32, &dt);
    if (st)
        return st;
    if (dt != POPRT_DTYPE_INT32 && dt != POPRT_DTYPE_INT64)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "dtype must be int32 or int64");
    int64_t xd[POPRT__MAX_RANK];
    int r = qm_dims(c, 0, xd);
    if (r >= 0 && r != 2)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "input must be [batch, classes]");
    int64_t od[2] = {r == 2 ? xd[0] : -1, poprt__attr_i(c->node, "sample_size", 1)};
    poprt__infer_set_i64(c, 0, dt, 2, od);
    return POPRT_OK;
}

static poprt_status inf_string_normalizer(poprt__infer_ctx *c)
{
    int64_t xd[POPRT__MAX_RANK];
    int r = qm_dims(c, 0, xd);
    const char *act = poprt__attr_s(c->node, "case_change_action", "NONE");
    if (strcmp(act, "NONE") && strcmp(act, "LOWER") && strcmp(act, "UPPER"))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "case_change_action must be NONE, LOWER or UPPER");
    if (r >= 0 && r != 1 && r != 2)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "input must be [C] or [1, C]");
    int64_t od[2] = {1, -1};
    if (r < 0)
        poprt__infer_unknown(c, 0, POPRT_DTYPE_STRING);
    else
        poprt__infer_set_i64(c, 0, POPRT_DTYPE_STRING, r, r == 2 ? od : od + 1);
    return POPRT_OK;
}

static poprt_status inf_string_concat(poprt__infer_ctx *c)
{
    return poprt__infer_broadcast(c, 0, 0, 2, POPRT_DTYPE_STRING);
}

static poprt_status inf_string_split(poprt__infer_ctx *c)
{
    int64_t xd[POPRT__MAX_RANK + 1];
    int r = qm_dims(c, 0, xd);
    if (r < 0 || r >= POPRT__MAX_RANK) {
        poprt__infer_unknown(c, 0, POPRT_DTYPE_STRING);
        poprt__infer_unknown(c, 1, POPRT_DTYPE_INT64);
        return POPRT_OK;
    }
    xd[r] = -1;
    poprt__infer_set_i64(c, 0, POPRT_DTYPE_STRING, r + 1, xd);
    poprt__infer_set_i64(c, 1, POPRT_DTYPE_INT64, r, xd);
    return POPRT_OK;
}

static void *qm_arena_alloc(void *ctx, size_t n) { return poprt__arena_alloc(ctx, n); }

static poprt_status inf_regex_full_match(poprt__infer_ctx *c)
{
    int32_t t = poprt__infer_elem(c, 0);
    if (t && t != POPRT_DTYPE_STRING)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "expects a string input");
    poprt__regex *re;
    poprt_status st = poprt__regex_compile(poprt__attr_s(c->node, "pattern", ""), qm_arena_alloc,
                                           c->arena, &re);
    if (st)
        return poprt__node_err_last(c->node, st);
    poprt__infer_same(c, 0, 0);
    c->out[0].kind = POPRT__KIND_TENSOR;
    c->out[0].elem = POPRT_DTYPE_BOOL;
    return POPRT_OK;
}

/* Optimizers: inputs R, T, then `groups` lists of n tensors; output list g
 * (of groups - 1) has the types of input list g. */
static poprt_status inf_optimizer(poprt__infer_ctx *c, int groups)
{
    if ((c->n_in - 2) % groups || c->n_in <= 2 || c->n_out != (c->n_in - 2) / groups * (groups - 1))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "%d inputs / %d outputs do not fit the optimizer", c->n_in, c->n_out);
    const int n = (c->n_in - 2) / groups;
    for (int j = 0; j < c->n_out; j++) {
        int list = j / n, idx = j % n;
        /* outputs: X_new, then the state lists (Adagrad H; Momentum V; Adam V, H) */
        int src = 2 + (list == 0 ? idx : (list + 1) * n + idx);
        poprt__infer_same(c, j, src);
    }
    return POPRT_OK;
}

static poprt_status inf_adagrad(poprt__infer_ctx *c) { return inf_optimizer(c, 3); }
static poprt_status inf_momentum(poprt__infer_ctx *c) { return inf_optimizer(c, 3); }
static poprt_status inf_adam(poprt__infer_ctx *c) { return inf_optimizer(c, 4); }

/* Gradient: output i has the type of input i (the value of xs[i]); the
 * compiler writes the node out as ordinary nodes (lib/passes/gradient.c). */
static poprt_status inf_gradient(poprt__infer_ctx *c)
{
    if (c->n_out > c->n_in)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "%d outputs for %d inputs: xs names at most as many tensors as "
                               "there are inputs", c->n_out, c->n_in);
    for (int j = 0; j < c->n_out; j++)
        poprt__infer_same(c, j, j);
    return POPRT_OK;
}

#define QM_NOFOLD POPRT__OP_NO_FOLD
static const poprt__op qm_op_hann = {"HannWindow", "", 17, 1, 1, 1, 1, 0, inf_window};
static const poprt__op qm_op_hamming = {"HammingWindow", "", 17, 1, 1, 1, 1, 0, inf_window};
static const poprt__op qm_op_blackman = {"BlackmanWindow", "", 17, 1, 1, 1, 1, 0, inf_window};
static const poprt__op qm_op_mel = {"MelWeightMatrix", "", 17, 5, 5, 1, 1, 0, inf_mel};
static const poprt__op qm_op_dft17 = {"DFT", "", 17, 1, 2, 1, 1, 0, inf_dft};
static const poprt__op qm_op_dft20 = {"DFT", "", 20, 1, 3, 1, 1, 0, inf_dft};
static const poprt__op qm_op_stft = {"STFT", "", 17, 2, 4, 1, 1, 0, inf_stft};
static const poprt__op qm_op_nms = {"NonMaxSuppression", "", 10, 2, 5, 1, 1, POPRT__OP_DYNAMIC,
                                    inf_nms};
static const poprt__op qm_op_roi_align = {"RoiAlign", "", 10, 3, 3, 1, 1, 0, inf_roi_align};
static const poprt__op qm_op_max_roi_pool = {"MaxRoiPool", "", 1, 2, 2, 1, 1, 0,
                                             inf_max_roi_pool};
static const poprt__op qm_op_rnormal = {"RandomNormal", "", 1, 0, 0, 1, 1, QM_NOFOLD, inf_random};
static const poprt__op qm_op_runiform = {"RandomUniform", "", 1, 0, 0, 1, 1, QM_NOFOLD,
                                         inf_random};
static const poprt__op qm_op_rnormal_like = {"RandomNormalLike", "", 1, 1, 1, 1, 1, QM_NOFOLD,
                                             inf_random_like};
static const poprt__op qm_op_runiform_like = {"RandomUniformLike", "", 1, 1, 1, 1, 1, QM_NOFOLD,
                                              inf_random_like};
static const poprt__op qm_op_bernoulli = {"Bernoulli", "", 15, 1, 1, 1, 1, QM_NOFOLD,
                                          inf_random_like};
static const poprt__op qm_op_multinomial = {"Multinomial", "", 7, 1, 1, 1, 1, QM_NOFOLD,
                                            inf_multinomial};
static const poprt__op qm_op_strnorm = {"StringNormalizer", "", 10, 1, 1, 1, 1,
                                        POPRT__OP_DYNAMIC, inf_string_normalizer};
static const poprt__op qm_op_strconcat = {"StringConcat", "", 20, 2, 2, 1, 1, 0,
                                          inf_string_concat};
static const poprt__op qm_op_strsplit = {"StringSplit", "", 20, 1, 1, 2, 2, POPRT__OP_DYNAMIC,
                                         inf_string_split};
static const poprt__op qm_op_regex = {"RegexFullMatch", "", 20, 1, 1, 1, 1, 0,
                                      inf_regex_full_match};
static const poprt__op qm_op_adagrad = {"Adagrad", "ai.onnx.preview.training", 1, 3, -1, 1, -1,
                                        0, inf_adagrad};
static const poprt__op qm_op_momentum = {"Momentum", "ai.onnx.preview.training", 1, 3, -1, 1,
                                         -1, 0, inf_momentum};
static const poprt__op qm_op_adam = {"Adam", "ai.onnx.preview.training", 1, 4, -1, 1, -1,
                                     0, inf_adam};
static const poprt__op qm_op_gradient = {"Gradient", "ai.onnx.preview.training", 1, 1, -1, 1,
                                         -1, QM_NOFOLD, inf_gradient};
#undef QM_NOFOLD
static poprt_status inf_image_decoder(poprt__infer_ctx *c)
{
    const char *fmt = poprt__attr_s(c->node, "pixel_format", "RGB");
    if (strcmp(fmt, "RGB") && strcmp(fmt, "BGR") && strcmp(fmt, "Grayscale"))
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL,
                               "pixel_format must be RGB, BGR or Grayscale");
    int64_t od[3] = {-1, -1, strcmp(fmt, "Grayscale") ? 3 : 1};
    poprt__infer_set_i64(c, 0, POPRT_DTYPE_UINT8, 3, od);
    return POPRT_OK;
}

static const poprt__op qm_op_image = {"ImageDecoder", "", 20, 1, 1, 1, 1, POPRT__OP_DYNAMIC,
                                      inf_image_decoder};
/* ==== end of section 'quant' helper ==== */

const poprt__op *const poprt__ops_misc[] = {
    &op_rnn1, &op_gru1, &op_gru3, &op_lstm1, &op_rnn, &op_gru, &op_lstm, /* recurrent */
    &op_tfidf,
    /* section 'quant' helper */
    &qm_op_hann,
    &qm_op_hamming,
    &qm_op_blackman,
    &qm_op_mel,
    &qm_op_dft17,
    &qm_op_dft20,
    &qm_op_stft,
    &qm_op_nms,
    &qm_op_roi_align,
    &qm_op_max_roi_pool,
    &qm_op_rnormal,
    &qm_op_runiform,
    &qm_op_rnormal_like,
    &qm_op_runiform_like,
    &qm_op_bernoulli,
    &qm_op_multinomial,
    &qm_op_strnorm,
    &qm_op_strconcat,
    &qm_op_strsplit,
    &qm_op_regex,
    &qm_op_adagrad,
    &qm_op_momentum,
    &qm_op_adam,
    &qm_op_gradient,
    &qm_op_image,
    /* end of section 'quant' helper */
    NULL,
};
