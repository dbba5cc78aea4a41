/* Operator family 'misc': schemas and shape/type inference. */
#include <string.h>
#include "ir/op.h"
#include "ir/dtype.h"
#include "kernels/ref/misc.h"

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
                               poprt_dtype_name((poprt_dtype)elem));
    if (x && x->kind == POPRT__KIND_TENSOR && x->rank >= 0 && x->rank != 3)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_SHAPE_MISMATCH, "X has rank %d, expected 3",
                               x->rank);
    int layout = (int)poprt__attr_i(c->node, "layout", 0);
    if (layout != 0 && layout != 1)
        return POPRT__NODE_ERR(c->node, POPRT_STATUS_INVALID_MODEL, "layout %d is not 0 or 1", layout);
    const char *dir = poprt__attr_s(c->node, "direction", "forward");
    int dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    if (dirs == 1 && strcmp(dir, "forward") != 0 && strcmp(dir, "reverse") != 0)
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

static const poprt__op op_rnn = {"RNN", "", 7, 3, 6, 0, 2, 0, inf_rnn, poprt__ref_rnn};
static const poprt__op op_gru = {"GRU", "", 7, 3, 6, 0, 2, 0, inf_gru, poprt__ref_gru};
static const poprt__op op_lstm = {"LSTM", "", 7, 3, 8, 0, 3, 0, inf_lstm, poprt__ref_lstm};
/* ==== end of recurrent ops ================================================== */

const poprt__op *const poprt__ops_misc[] = {
    &op_rnn, &op_gru, &op_lstm, /* recurrent */
    NULL,
};
