#!/usr/bin/env python3
"""Writes the recurrent benchmark folders under OUT: one LSTM or GRU node each
(opset 14, random weights of scale 0.1, default activations), with the
expected outputs computed here with NumPy in float64 (so model_bench checks
them):
  lstm_t64_h256    LSTM, 64 steps, batch 1, input 128, hidden 256
  gru_bi_t100_b4   GRU, bidirectional, 100 steps, batch 4, input 80, hidden 256
  lstm_t200_h512   LSTM, 200 steps, batch 1, input 512, hidden 512

usage: make_rnn_models.py OUT
Needs python3 with onnx + numpy (Debian: python3-onnx). Deterministic.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def run_dir(op, X, W, R, Bi, reverse):
    """One direction per the ONNX formulas: Y [T, B, H], last h [B, H]."""
    T, B, _ = X.shape
    H = R.shape[1]
    G = 4 if op == "LSTM" else 3
    wb, rb = Bi[: G * H], Bi[G * H:]
    h = np.zeros((B, H))
    c = np.zeros((B, H))
    Y = np.zeros((T, B, H))
    for s in range(T):
        t = T - 1 - s if reverse else s
        xw = X[t] @ W.T + wb
        if op == "LSTM":  # gates i, o, f, c
            g = xw + h @ R.T + rb
            i, o, f, cc = (g[:, k * H:(k + 1) * H] for k in range(4))
            c = sigmoid(f) * c + sigmoid(i) * np.tanh(cc)
            h = sigmoid(o) * np.tanh(c)
        else:  # gates z, r, h; linear_before_reset 0
            hr = h @ R[: 2 * H].T + rb[: 2 * H]
            z = sigmoid(xw[:, :H] + hr[:, :H])
            r = sigmoid(xw[:, H:2 * H] + hr[:, H:])
            hh = np.tanh(xw[:, 2 * H:] + (r * h) @ R[2 * H:].T + rb[2 * H:])
            h = (1 - z) * hh + z * h
        Y[t] = h
    return Y, h


def make(out, name, op, T, B, I, H, dirs):
    G = 4 if op == "LSTM" else 3
    rng = np.random.default_rng(len(name))
    W = (rng.standard_normal((dirs, G * H, I)) * 0.1).astype(np.float32)
    R = (rng.standard_normal((dirs, G * H, H)) * 0.1).astype(np.float32)
    Bi = (rng.standard_normal((dirs, 2 * G * H)) * 0.1).astype(np.float32)
    X = rng.standard_normal((T, B, I)).astype(np.float32)
    node = helper.make_node(op, ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=H,
                            direction="bidirectional" if dirs == 2 else "forward")
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info("X", TensorProto.FLOAT, [T, B, I])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [T, dirs, B, H]),
         helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [dirs, B, H])],
        [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"),
         numpy_helper.from_array(Bi, "B")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    Ys, hs = [], []
    for d in range(dirs):
        Y, h = run_dir(op, X.astype(np.float64), W[d].astype(np.float64),
                       R[d].astype(np.float64), Bi[d].astype(np.float64), d == 1)
        Ys.append(Y)
        hs.append(h)
    Y = np.stack(Ys, axis=1).astype(np.float32)
    Yh = np.stack(hs, axis=0).astype(np.float32)
    d = os.path.join(out, name, "test_data_set_0")
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(out, name, "model.onnx"))
    for fname, arr, nm in (("input_0.pb", X, "X"), ("output_0.pb", Y, "Y"),
                           ("output_1.pb", Yh, "Y_h")):
        with open(os.path.join(d, fname), "wb") as f:
            f.write(numpy_helper.from_array(arr, nm).SerializeToString())


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    make(out, "lstm_t64_h256", "LSTM", 64, 1, 128, 256, 1)
    make(out, "gru_bi_t100_b4", "GRU", 100, 4, 80, 256, 2)
    make(out, "lstm_t200_h512", "LSTM", 200, 1, 512, 512, 1)


if __name__ == "__main__":
    main()
