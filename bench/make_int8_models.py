#!/usr/bin/env python3
"""Writes quantized (int8) benchmark models as backend-test folders.

usage: /usr/bin/python3 bench/make_int8_models.py [OUT_DIR]   (default build/bench-models-int8)

Four models in the forms ONNX Runtime's quantization tools write, with random weights and
calibrated scales (so activations use their range instead of saturating):

  int8_cnn_qlinear   QOperator form: QuantizeLinear, 8 QLinearConv (3x3 and 1x1, strides 1 and 2,
                     uint8 activations, int8 weights with per-channel scales, int32 bias, the ReLU
                     folded into the uint8 output range), DequantizeLinear, GlobalAveragePool.
                     Input [1, 3, 128, 128].
  int8_cnn_qdq       the same network in QDQ form (quantize_static's QuantFormat.QDQ): per layer
                     DequantizeLinear of the input, of the weights (per channel) and of the int32
                     bias, float Conv, Relu, QuantizeLinear. Its expected output is the QOperator
                     form's (the float32 products can round a value to the next step).
  int8_mlp_dynamic   quantize_dynamic form: per layer DynamicQuantizeLinear, MatMulInteger (int8
                     weights), Cast, Mul by the two scales, Add bias, Relu. Input [128, 768],
                     layers 768-3072-768-768.
  int8_mlp_qlinear   QOperator form: QuantizeLinear, 3 QLinearMatMul (uint8 x int8), Dequantize.
                     Input [128, 768], layers 768-3072-768-768.

Each folder gets test_data_set_0 with input_0.pb and output_0.pb, the outputs computed here in
numpy with the operators' ONNX definitions (exact integer sums, round half to even), which is what
libpoprt's reference kernels compute. Needs onnx (1.12 works) and numpy."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(20261124)
F32 = np.float32


def rint_clip(v, lo, hi):
    return np.clip(np.rint(v), lo, hi)


def quantize(x, s, zp, lo=0, hi=255):
    q = (x.astype(np.float64) / np.float64(s)).astype(F32)
    return rint_clip(q.astype(np.float64) + zp, lo, hi)


def im2col(x, k, stride, pad):
    """x [C, H, W] (int64) -> [C*k*k, OH*OW] with zero padding (x already minus its zero point)"""
    C, H, W = x.shape
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    OH = (H + 2 * pad - k) // stride + 1
    OW = (W + 2 * pad - k) // stride + 1
    cols = np.empty((C, k, k, OH, OW), dtype=np.int64)
    for i in range(k):
        for j in range(k):
            cols[:, i, j] = xp[:, i:i + stride * OH:stride, j:j + stride * OW:stride]
    return cols.reshape(C * k * k, OH * OW), OH, OW


def save(out, name, model, x, y):
    d = os.path.join(out, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for fn, arr, nm in (("input_0.pb", x, model.graph.input[0].name),
                        ("output_0.pb", y, model.graph.output[0].name)):
        t = numpy_helper.from_array(arr, nm)
        with open(os.path.join(d, "test_data_set_0", fn), "wb") as f:
            f.write(t.SerializeToString())
    print("wrote", d)


def finish(out, name, nodes, inits, x, y):
    """the graph x -> y (float32, opset 13) and its test folder"""
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y.shape))],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="poprt")
    m.ir_version = 7
    save(out, name, m, x, y)


def cnn(out):
    layers = [  # (cin, cout, k, stride)
        (3, 32, 3, 2), (32, 64, 3, 1), (64, 64, 1, 1), (64, 128, 3, 2),
        (128, 128, 3, 1), (128, 256, 3, 2), (256, 256, 3, 1), (256, 64, 1, 1)]
    x = RNG.uniform(-1, 1, (1, 3, 128, 128)).astype(F32)
    inits, nodes, qdq = [], [], []
    s_in, zp_in = F32(2.0 / 255), 128
    inits += [numpy_helper.from_array(np.array(s_in, F32), "x_scale"),
              numpy_helper.from_array(np.array(zp_in, np.uint8), "x_zp")]
    nodes.append(helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["q0"]))
    qdq.append(helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["q0"]))
    b_scales = []
    q = quantize(x[0], s_in, zp_in).astype(np.int64)  # [C, H, W]
    xs, xzp, cur = s_in, zp_in, "q0"
    for li, (ci, co, k, st) in enumerate(layers):
        w = RNG.integers(-127, 128, (co, ci, k, k)).astype(np.int8)
        wsc = (RNG.uniform(0.5, 1.5, co) / (127 * np.sqrt(ci * k * k))).astype(F32)
        bias = RNG.integers(-2000, 2000, co).astype(np.int32)
        cols, OH, OW = im2col(q - xzp, k, st, k // 2)
        acc = w.reshape(co, -1).astype(np.int64) @ cols + bias[:, None]  # [co, OH*OW]
        real = acc * (np.float64(xs) * wsc.astype(np.float64))[:, None]
        ys = F32(max(np.percentile(real, 99.5), 1e-3) / 255)
        mult = ((np.float64(xs) * wsc.astype(np.float64)).astype(F32).astype(np.float64) /
                np.float64(ys)).astype(F32).astype(np.float64)
        q = rint_clip(acc * mult[:, None] + 0, 0, 255).astype(np.int64).reshape(co, OH, OW)
        p = "c%d_" % li
        inits += [numpy_helper.from_array(w, p + "w"),
                  numpy_helper.from_array(wsc, p + "w_scale"),
                  numpy_helper.from_array(np.zeros(co, np.int8), p + "w_zp"),
                  numpy_helper.from_array(np.array(ys, F32), p + "y_scale"),
                  numpy_helper.from_array(np.array(0, np.uint8), p + "y_zp"),
                  numpy_helper.from_array(bias, p + "b")]
        y = "q%d" % (li + 1)
        inputs = [cur, "x_scale" if li == 0 else "c%d_y_scale" % (li - 1),
                  "x_zp" if li == 0 else "c%d_y_zp" % (li - 1), p + "w", p + "w_scale",
                  p + "w_zp", p + "y_scale", p + "y_zp", p + "b"]
        nodes.append(helper.make_node("QLinearConv", inputs, [y], name="conv%d" % li,
                                      kernel_shape=[k, k], strides=[st, st],
                                      pads=[k // 2] * 4))
        # the same layer in QDQ form: DequantizeLinear of the input, the weights (per channel,
        # axis 0) and the int32 bias (scale x_scale * w_scale), float Conv, Relu, QuantizeLinear
        b_scales.append(numpy_helper.from_array((np.float32(xs) * wsc).astype(F32), p + "b_scale"))
        qdq += [helper.make_node("DequantizeLinear", inputs[0:3], [p + "xf"]),
                helper.make_node("DequantizeLinear", [p + "w", p + "w_scale", p + "w_zp"],
                                 [p + "wf"], axis=0),
                helper.make_node("DequantizeLinear", [p + "b", p + "b_scale"], [p + "bf"], axis=0),
                helper.make_node("Conv", [p + "xf", p + "wf", p + "bf"], [p + "conv"],
                                 name="conv%d" % li, kernel_shape=[k, k], strides=[st, st],
                                 pads=[k // 2] * 4),
                helper.make_node("Relu", [p + "conv"], [p + "relu"]),
                helper.make_node("QuantizeLinear", [p + "relu", p + "y_scale", p + "y_zp"], [y])]
        xs, xzp, cur = ys, 0, y
    last = "c%d_" % (len(layers) - 1)
    nodes.append(helper.make_node("DequantizeLinear", [cur, last + "y_scale", last + "y_zp"],
                                  ["f"]))
    nodes.append(helper.make_node("GlobalAveragePool", ["f"], ["y"]))
    qdq += nodes[-2:]
    deq = (q.astype(F32) - F32(0)) * xs
    yref = deq.mean(axis=(1, 2), dtype=np.float64).astype(F32).reshape(1, -1, 1, 1)
    finish(out, "int8_cnn_qlinear", nodes, inits, x, yref)
    # the QDQ form's float32 products may round a value to the next step now and then: its
    # expected output is the QOperator form's (compare with model_bench --cosine)
    finish(out, "int8_cnn_qdq", qdq, inits + b_scales, x, yref)


def dyn_quant(x):
    """DynamicQuantizeLinear as ONNX defines it (float32 scale, uint8)"""
    mn, mx = min(F32(0), x.min()), max(F32(0), x.max())
    s = F32((mx - mn) if mx != mn else F32(1)) / F32(255)
    zp = float(np.clip(np.rint(np.clip(F32(0) - mn / s, 0, 255)), 0, 255))
    q = rint_clip(np.rint((x / s).astype(F32)).astype(np.float64) + zp, 0, 255)
    return q.astype(np.int64), s, zp


def mlp_dynamic(out):
    dims = [768, 3072, 768, 768]
    x = RNG.uniform(-1, 1, (128, dims[0])).astype(F32)
    inits, nodes = [], []
    cur, h = "x", x
    for li in range(len(dims) - 1):
        ci, co = dims[li], dims[li + 1]
        wf = RNG.normal(0, 1 / np.sqrt(ci), (ci, co)).astype(F32)
        wscale = F32(np.abs(wf).max() / 127)
        w = np.clip(np.rint(wf / wscale), -127, 127).astype(np.int8)
        b = RNG.normal(0, 0.1, co).astype(F32)
        p = "l%d_" % li
        inits += [numpy_helper.from_array(w, p + "w"),
                  numpy_helper.from_array(np.array(wscale, F32), p + "w_scale"),
                  numpy_helper.from_array(b, p + "b")]
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [cur], [p + "xq", p + "xs", p + "xzp"]),
            helper.make_node("MatMulInteger", [p + "xq", p + "w", p + "xzp"], [p + "acc"],
                             name="mm%d" % li),
            helper.make_node("Cast", [p + "acc"], [p + "accf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [p + "xs", p + "w_scale"], [p + "s"]),
            helper.make_node("Mul", [p + "accf", p + "s"], [p + "mm"]),
            helper.make_node("Add", [p + "mm", p + "b"], [p + "pre"]),
        ]
        last = li == len(dims) - 2
        y = "y" if last else p + "out"
        nodes.append(helper.make_node("Relu" if not last else "Identity", [p + "pre"], [y]))
        q, s, zp = dyn_quant(h)
        acc = (q - int(zp)) @ w.astype(np.int64)
        hp = acc.astype(F32) * (s * wscale) + b
        h = hp if last else np.maximum(hp, F32(0))
        cur = y
    finish(out, "int8_mlp_dynamic", nodes, inits, x, h.astype(F32))


def mlp_qlinear(out):
    dims = [768, 3072, 768, 768]
    x = RNG.uniform(-1, 1, (128, dims[0])).astype(F32)
    s_in, zp_in = F32(2.0 / 255), 128
    inits = [numpy_helper.from_array(np.array(s_in, F32), "x_scale"),
             numpy_helper.from_array(np.array(zp_in, np.uint8), "x_zp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_scale", "x_zp"], ["q0"])]
    q = quantize(x, s_in, zp_in).astype(np.int64)
    xs, xzp, xs_n, xzp_n, cur = s_in, zp_in, "x_scale", "x_zp", "q0"
    for li in range(len(dims) - 1):
        ci, co = dims[li], dims[li + 1]
        w = RNG.integers(-127, 128, (ci, co)).astype(np.int8)
        wscale = F32(1.0 / (127 * np.sqrt(ci)))
        acc = (q - xzp) @ w.astype(np.int64)
        real = acc * (np.float64(xs) * np.float64(wscale))
        ys = F32((real.max() - real.min()) / 255)
        yzp = int(np.clip(np.rint(-real.min() / np.float64(ys)), 0, 255))
        mult = np.float64(F32(np.float64(F32(np.float64(xs) * np.float64(wscale))) /
                              np.float64(ys)))
        q = rint_clip(acc * mult + yzp, 0, 255).astype(np.int64)
        p = "l%d_" % li
        inits += [numpy_helper.from_array(w, p + "w"),
                  numpy_helper.from_array(np.array(wscale, F32), p + "w_scale"),
                  numpy_helper.from_array(np.array(0, np.int8), p + "w_zp"),
                  numpy_helper.from_array(np.array(ys, F32), p + "y_scale"),
                  numpy_helper.from_array(np.array(yzp, np.uint8), p + "y_zp")]
        y = "q%d" % (li + 1)
        nodes.append(helper.make_node(
            "QLinearMatMul", [cur, xs_n, xzp_n, p + "w", p + "w_scale", p + "w_zp",
                              p + "y_scale", p + "y_zp"], [y], name="mm%d" % li))
        xs, xzp, xs_n, xzp_n, cur = ys, yzp, p + "y_scale", p + "y_zp", y
    nodes.append(helper.make_node("DequantizeLinear", [cur, xs_n, xzp_n], ["y"]))
    yref = ((q.astype(F32) - F32(xzp)) * xs).astype(F32)
    finish(out, "int8_mlp_qlinear", nodes, inits, x, yref)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "bench-models-int8")
    cnn(out)
    mlp_dynamic(out)
    mlp_qlinear(out)


if __name__ == "__main__":
    main()
