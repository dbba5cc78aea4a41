#!/usr/bin/env python3
"""Writes ONNX models that imitate, node for node, what PyTorch's exporter
(torch.onnx.export, opset 13-17, eval mode: BatchNormalization folded into the
preceding Conv unless noted) emits for popular architectures, with random
weights, to look for slow or broken paths in libpoprt against ONNX Runtime.

  mobilenet_v2        1x3x224x224  torchvision MobileNetV2 (ReLU6 = Clip with min/max inputs), opset 13
  mobilenet_v3_small  1x3x224x224  torchvision MobileNetV3-Small (HardSwish, SE with HardSigmoid), opset 14
  efficientnet_b0     1x3x224x224  torchvision EfficientNet-B0 (SiLU = Sigmoid*Mul, SE), opset 13
  resnext50_lite      1x3x224x224  torchvision resnext50_32x4d (3,4,6,3 blocks, grouped 3x3), opset 13
  vit_tiny            1x3x224x224  timm vit_tiny_patch16_224 (LayerNormalization, fused qkv + Gather), opset 17
  gpt2_small_lite     int64 1x128  HF GPT-2 layout, 6 layers, d 512, 8 heads, vocab 8192 (decomposed LN), opset 13
  yolov8n_lite        1x3x320x320  ultralytics YOLOv8n incl. the DFL/dist2bbox decode, opset 17
  unet_lite           1x3x224x224  U-Net 32..256 + 512 with real BatchNormalization nodes, opset 13
  densenet_lite       1x3x224x224  torchvision DenseNet-121 (pre-activation BatchNormalization nodes), opset 13
  conformer_lite      1x80x400     Conv2d subsampling + 4 conformer blocks (dim 144, 4 heads), opset 17

Each goes to OUT/<name>/model.onnx with OUT/<name>/test_data_set_0/input_k.pb
(deterministic inputs: images uniform[-1,1], token ids in [0,1000), log-mel
N(0,1)) and output_k.pb: ONNX Runtime's outputs (graph optimisation 'all',
1 thread), computed by bench/ort_expected.js under Node.js, which also gives
the ORT single-thread latency (median of 10 runs) printed at the end.

Weights: He-style random normal, then an LSUV-style calibration pass (in ORT,
on the test input, see ort_expected.js --calibrate) scales each Conv / Gemm /
Linear (weight and bias together) in graph order so that its output has rms
1 (0.5 for the last layer of a residual branch): activations stay O(1)
through the depth whatever the activation functions, SE gates, pools and
concatenations do to the variance.

usage: make_zoo_models.py OUT [--only NAME,...]
Needs /usr/bin/python3 with onnx + numpy (Debian: python3-onnx), node and
onnxruntime-node in $ORT_NODE_MODULES (default ~/.cache/poprt-ort/node_modules).
Deterministic (up to ORT's float rounding in the calibration).
"""
import json
import math
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
RES_TARGET = 0.5  # output rms of the last layer of a residual branch


# ----------------------------------------------------------------------------
# graph builder

class Builder:
    """Collects nodes and parameters. Node names follow the exporter,
    '/scope/path/OpType' (with '_N' suffixes when repeated), their outputs
    '<node name>_output_<i>'. calib lists (parameter names, output, target
    rms) per weighted layer, in graph order."""

    def __init__(self, name, opset, seed):
        self.name, self.opset = name, opset
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inputs, self.outputs = [], [], []
        self.params = {}  # name -> np.ndarray (initializers, in creation order)
        self.calib = []
        self.node_names = set()
        self.anon = 0

    # -- plumbing
    def op(self, op_type, inputs, scope="", n_out=1, **attrs):
        base = f"{scope}/{op_type}"
        name, i = base, 0
        while name in self.node_names:
            i += 1
            name = f"{base}_{i}"
        self.node_names.add(name)
        outs = [f"{name}_output_{k}" for k in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def param(self, name, arr):
        """Initializer with an exact name (a module parameter, 'layer1.0.conv1.weight')."""
        assert name not in self.params, name
        self.params[name] = np.ascontiguousarray(arr)
        return name

    def anon_param(self, hint, arr):
        """Initializer named as the exporter names folded/derived tensors ('onnx::Conv_12')."""
        self.anon += 1
        return self.param(f"onnx::{hint}_{self.anon}", arr)

    def const(self, arr, scope=""):
        """Constant node (the exporter's '/scope/Constant' for shapes and scalars)."""
        return self.op("Constant", [], scope, value=numpy_helper.from_array(np.asarray(arr)))

    def input(self, name, elem, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def output(self, tensor, name, elem, shape):
        """Renames tensor (a node output) to the graph output name."""
        for n in self.nodes:
            for seq in (n.input, n.output):
                for k, t in enumerate(seq):
                    if t == tensor:
                        seq[k] = name
        self.calib = [(p, name if o == tensor else o, t) for p, o, t in self.calib]
        self.outputs.append(helper.make_tensor_value_info(name, elem, shape))

    def model(self):
        inits = [numpy_helper.from_array(a, n) for n, a in self.params.items()]
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                              producer_name="libpoprt-bench-make_zoo_models", producer_version="1")
        m.ir_version = 8
        return m

    # -- random tensors
    def normal(self, shape, std):
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def he(self, shape, fan_in, gain=2.0):
        return self.normal(shape, math.sqrt(gain / fan_in))

    @staticmethod
    def pname(scope):
        return scope.strip("/").replace("/", ".")

    def _calibrated(self, params, out, res):
        self.calib.append((params, out, RES_TARGET if res else 1.0))
        return out

    # -- layers
    def conv(self, x, cin, cout, k, scope, s=1, p=None, g=1, d=1, bias=True, folded=True,
             nd=2, res=False, weight=None):
        """Conv[12]d. folded=True: eval-mode export with the BatchNormalization
        after it folded in (weight and bias 'onnx::Conv_N'); else module params.
        res: last layer of a residual branch. weight: fixed (not calibrated)."""
        ks = [k] * nd if isinstance(k, int) else list(k)
        p = (ks[0] - 1) // 2 * d if p is None else p
        w = weight if weight is not None else self.he([cout, cin // g] + ks,
                                                      cin // g * int(np.prod(ks)))
        if folded:
            ins = [self.anon_param("Conv", w)]
            if bias:
                ins.append(self.anon_param("Conv", self.normal([cout], 0.05)))
        else:
            ins = [self.param(self.pname(scope) + ".weight", w)]
            if bias:
                ins.append(self.param(self.pname(scope) + ".bias", self.normal([cout], 0.05)))
        y = self.op("Conv", [x] + ins, scope, dilations=[d] * nd, group=g, kernel_shape=ks,
                    pads=[p] * (2 * nd), strides=[s] * nd)
        return y if weight is not None else self._calibrated(ins, y, res)

    def conv_transpose(self, x, cin, cout, k, s, scope):
        pn = self.pname(scope)
        ins = [self.param(pn + ".weight", self.he([cin, cout, k, k], cin)),
               self.param(pn + ".bias", self.normal([cout], 0.05))]
        y = self.op("ConvTranspose", [x] + ins, scope, dilations=[1, 1], group=1,
                    kernel_shape=[k, k], pads=[0, 0, 0, 0], strides=[s, s])
        return self._calibrated(ins, y, False)

    def bn(self, x, c, scope, eps=1e-5):
        """Real BatchNormalization node (inference form) with plausible statistics."""
        pn = self.pname(scope)
        gamma = (1.0 + 0.1 * self.rng.standard_normal(c)).astype(np.float32)
        beta = (0.1 * self.rng.standard_normal(c)).astype(np.float32)
        mean = (0.1 * self.rng.standard_normal(c)).astype(np.float32)
        var = self.rng.uniform(0.6, 1.4, c).astype(np.float32)
        ins = [x, self.param(pn + ".weight", gamma), self.param(pn + ".bias", beta),
               self.param(pn + ".running_mean", mean), self.param(pn + ".running_var", var)]
        return self.op("BatchNormalization", ins, scope, epsilon=eps, momentum=0.9)

    def linear(self, x, din, dout, scope, res=False):
        """nn.Linear on a >2-D input: MatMul with the transposed weight, then Add(bias, .)."""
        w = self.anon_param("MatMul", self.he([din, dout], din))
        bias = self.param(self.pname(scope) + ".bias", self.normal([dout], 0.02))
        y = self.op("MatMul", [x, w], scope)
        y = self.op("Add", [bias, y], scope)
        return self._calibrated([w, bias], y, res)

    def gemm(self, x, din, dout, scope, trans_b=True, res=False):
        """nn.Linear on a 2-D input: Gemm(transB=1); trans_b=False: HF Conv1D's addmm."""
        pn = self.pname(scope)
        shape = [dout, din] if trans_b else [din, dout]
        ins = [self.param(pn + ".weight", self.he(shape, din)),
               self.param(pn + ".bias", self.normal([dout], 0.02))]
        attrs = {"transB": 1} if trans_b else {}
        y = self.op("Gemm", [x] + ins, scope, alpha=1.0, beta=1.0, **attrs)
        return self._calibrated(ins, y, res)

    def layernorm(self, x, d, scope, eps=1e-5):
        """nn.LayerNorm at opset 17: one LayerNormalization node."""
        pn = self.pname(scope)
        gamma = (1.0 + 0.1 * self.rng.standard_normal(d)).astype(np.float32)
        beta = (0.02 * self.rng.standard_normal(d)).astype(np.float32)
        return self.op("LayerNormalization",
                       [x, self.param(pn + ".weight", gamma), self.param(pn + ".bias", beta)],
                       scope, axis=-1, epsilon=eps)

    def layernorm_decomposed(self, x, d, scope, eps=1e-5):
        """nn.LayerNorm as the exporter writes it below opset 17."""
        pn = self.pname(scope)
        gamma = (1.0 + 0.1 * self.rng.standard_normal(d)).astype(np.float32)
        beta = (0.02 * self.rng.standard_normal(d)).astype(np.float32)
        mean = self.op("ReduceMean", [x], scope, axes=[-1], keepdims=1)
        xc = self.op("Sub", [x, mean], scope)
        sq = self.op("Pow", [xc, self.const(np.array(2.0, np.float32), scope)], scope)
        var = self.op("ReduceMean", [sq], scope, axes=[-1], keepdims=1)
        ve = self.op("Add", [var, self.const(np.array(eps, np.float32), scope)], scope)
        y = self.op("Div", [xc, self.op("Sqrt", [ve], scope)], scope)
        y = self.op("Mul", [y, self.param(pn + ".weight", gamma)], scope)
        return self.op("Add", [y, self.param(pn + ".bias", beta)], scope)

    def relu(self, x, scope):
        return self.op("Relu", [x], scope)

    def relu6(self, x, scope):
        """ReLU6 at opset >= 11: Clip with min/max initializer inputs."""
        lo = self.anon_param("Clip", np.array(0.0, np.float32))
        hi = self.anon_param("Clip", np.array(6.0, np.float32))
        return self.op("Clip", [x, lo, hi], scope)

    def hardswish(self, x, scope):
        return self.op("HardSwish", [x], scope)

    def silu(self, x, scope):
        """nn.SiLU as the exporter writes it: Mul(x, Sigmoid(x))."""
        return self.op("Mul", [x, self.op("Sigmoid", [x], scope)], scope)

    def gelu_erf(self, x, scope):
        """nn.GELU(): x * (Erf(x / sqrt 2) + 1) * 0.5."""
        y = self.op("Div", [x, self.const(np.array(1.4142135381698608, np.float32), scope)], scope)
        y = self.op("Erf", [y], scope)
        y = self.op("Add", [y, self.const(np.array(1.0, np.float32), scope)], scope)
        y = self.op("Mul", [x, y], scope)
        return self.op("Mul", [y, self.const(np.array(0.5, np.float32), scope)], scope)

    def gelu_tanh(self, x, scope):
        """HF 'gelu_new': 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))."""
        def c(v):
            return self.const(np.array(v, np.float32), scope)
        half = self.op("Mul", [c(0.5), x], scope)
        t = self.op("Mul", [c(0.044715), self.op("Pow", [x, c(3.0)], scope)], scope)
        t = self.op("Add", [x, t], scope)
        t = self.op("Tanh", [self.op("Mul", [c(math.sqrt(2.0 / math.pi)), t], scope)], scope)
        return self.op("Mul", [half, self.op("Add", [c(1.0), t], scope)], scope)

    def pool_flatten(self, x, scope=""):
        """adaptive_avg_pool2d(x, 1) + torch.flatten(x, 1)."""
        return self.op("Flatten", [self.op("GlobalAveragePool", [x], scope)], "", axis=1)

    def maxpool(self, x, k, s, p, scope):
        return self.op("MaxPool", [x], scope, ceil_mode=0, kernel_shape=[k, k], pads=[p] * 4,
                       strides=[s, s])


def i64(v):
    return np.array(v, np.int64)


def make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def image_input(b, size, name="input"):
    x = b.input(name, TensorProto.FLOAT, [1, 3, size, size])
    return x, {name: b.rng.uniform(-1.0, 1.0, (1, 3, size, size)).astype(np.float32)}


# ----------------------------------------------------------------------------
# models

def mobilenet_v2():
    b = Builder("mobilenet_v2", 13, 101)
    x, feeds = image_input(b, 224)
    y = b.relu6(b.conv(x, 3, 32, 3, "/features/0/0", s=2), "/features/0/2")
    cin, idx = 32, 1
    for t, c, n, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                       (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]:
        for i in range(n):
            stride = s if i == 0 else 1
            res = stride == 1 and cin == c
            sc, hid = f"/features/{idx}/conv", cin * t
            h, j = y, 0
            if t != 1:  # expand
                h = b.relu6(b.conv(h, cin, hid, 1, f"{sc}/0/0"), f"{sc}/0/2")
                j = 1
            h = b.relu6(b.conv(h, hid, hid, 3, f"{sc}/{j}/0", s=stride, g=hid), f"{sc}/{j}/2")
            h = b.conv(h, hid, c, 1, f"{sc}/{j + 1}", res=res)  # project (+ folded BN)
            y = b.op("Add", [y, h], f"/features/{idx}") if res else h
            cin, idx = c, idx + 1
    y = b.relu6(b.conv(y, 320, 1280, 1, f"/features/{idx}/0"), f"/features/{idx}/2")
    y = b.gemm(b.pool_flatten(y), 1280, 1000, "/classifier/1")
    b.output(y, "output", TensorProto.FLOAT, [1, 1000])
    return b, feeds


def mobilenet_v3_small():
    b = Builder("mobilenet_v3_small", 14, 102)
    x, feeds = image_input(b, 224)
    y = b.hardswish(b.conv(x, 3, 16, 3, "/features/0/0", s=2), "/features/0/2")
    cfg = [  # in, kernel, expanded, out, use_se, activation, stride (torchvision)
        (16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2),
        (24, 3, 88, 24, False, "RE", 1), (24, 5, 96, 40, True, "HS", 2),
        (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
        (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1),
        (48, 5, 288, 96, True, "HS", 2), (96, 5, 576, 96, True, "HS", 1),
        (96, 5, 576, 96, True, "HS", 1)]
    for idx, (cin, k, exp, cout, se, act, s) in enumerate(cfg, start=1):
        sc = f"/features/{idx}/block"
        activ = b.relu if act == "RE" else b.hardswish
        h, j = y, 0
        if exp != cin:
            h = activ(b.conv(h, cin, exp, 1, f"{sc}/0/0"), f"{sc}/0/2")
            j = 1
        h = activ(b.conv(h, exp, exp, k, f"{sc}/{j}/0", s=s, g=exp), f"{sc}/{j}/2")
        j += 1
        if se:  # SqueezeExcitation
            sq, ss = make_divisible(exp // 4, 8), f"{sc}/{j}"
            p = b.op("GlobalAveragePool", [h], ss)
            p = b.relu(b.conv(p, exp, sq, 1, f"{ss}/fc1", folded=False), f"{ss}/activation")
            p = b.conv(p, sq, exp, 1, f"{ss}/fc2", folded=False)
            p = b.op("HardSigmoid", [p], f"{ss}/scale_activation", alpha=1.0 / 6, beta=0.5)
            h = b.op("Mul", [p, h], ss)
            j += 1
        res = s == 1 and cin == cout
        h = b.conv(h, exp, cout, 1, f"{sc}/{j}/0", res=res)
        y = b.op("Add", [h, y], f"/features/{idx}") if res else h
    y = b.hardswish(b.conv(y, 96, 576, 1, "/features/12/0"), "/features/12/2")
    y = b.pool_flatten(y, "/avgpool")
    y = b.hardswish(b.gemm(y, 576, 1024, "/classifier/0"), "/classifier/1")
    y = b.gemm(y, 1024, 1000, "/classifier/3")
    b.output(y, "output", TensorProto.FLOAT, [1, 1000])
    return b, feeds


def efficientnet_b0():
    b = Builder("efficientnet_b0", 13, 103)
    x, feeds = image_input(b, 224)
    y = b.silu(b.conv(x, 3, 32, 3, "/features/0/0", s=2), "/features/0/2")
    cfg = [  # expand_ratio, kernel, stride, in, out, layers (torchvision B0)
        (1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
        (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
    for stage, (t, k, s, cin0, cout, n) in enumerate(cfg, start=1):
        for i in range(n):
            cin, stride = (cin0, s) if i == 0 else (cout, 1)
            res = stride == 1 and cin == cout
            sc, exp = f"/features/{stage}/{i}/block", cin * t
            h, j = y, 0
            if exp != cin:
                h = b.silu(b.conv(h, cin, exp, 1, f"{sc}/0/0"), f"{sc}/0/2")
                j = 1
            h = b.silu(b.conv(h, exp, exp, k, f"{sc}/{j}/0", s=stride, g=exp), f"{sc}/{j}/2")
            ss, sq = f"{sc}/{j + 1}", max(1, cin // 4)  # SqueezeExcitation
            p = b.op("GlobalAveragePool", [h], f"{ss}/avgpool")
            p = b.silu(b.conv(p, exp, sq, 1, f"{ss}/fc1", folded=False), f"{ss}/activation")
            p = b.conv(p, sq, exp, 1, f"{ss}/fc2", folded=False)
            p = b.op("Sigmoid", [p], f"{ss}/scale_activation")
            h = b.op("Mul", [p, h], ss)
            h = b.conv(h, exp, cout, 1, f"{sc}/{j + 2}/0", res=res)
            y = b.op("Add", [h, y], f"/features/{stage}/{i}") if res else h
    y = b.silu(b.conv(y, 320, 1280, 1, "/features/8/0"), "/features/8/2")
    y = b.gemm(b.pool_flatten(y, "/avgpool"), 1280, 1000, "/classifier/1")
    b.output(y, "output", TensorProto.FLOAT, [1, 1000])
    return b, feeds


def resnext50_lite(blocks=(3, 4, 6, 3)):  # (2, 2, 2, 2): 61 MB, ~50 ms
    b = Builder("resnext50_lite", 13, 104)
    x, feeds = image_input(b, 224)
    y = b.relu(b.conv(x, 3, 64, 7, "/conv1", s=2, p=3), "/relu")
    y = b.maxpool(y, 3, 2, 1, "/maxpool")
    cin = 64
    for li, (planes, n) in enumerate(zip([64, 128, 256, 512], blocks), start=1):
        width, cout = planes * 4 // 64 * 32, planes * 4  # groups 32, width_per_group 4
        for i in range(n):
            stride = 2 if (i == 0 and li > 1) else 1
            sc = f"/layer{li}/{i}"
            h = b.relu(b.conv(y, cin, width, 1, f"{sc}/conv1"), f"{sc}/relu")
            h = b.relu(b.conv(h, width, width, 3, f"{sc}/conv2", s=stride, g=32), f"{sc}/relu_1")
            h = b.conv(h, width, cout, 1, f"{sc}/conv3", res=True)
            idn = b.conv(y, cin, cout, 1, f"{sc}/downsample/0", s=stride) if i == 0 else y
            y = b.relu(b.op("Add", [h, idn], sc), f"{sc}/relu_2")
            cin = cout
    y = b.gemm(b.pool_flatten(y, "/avgpool"), 2048, 1000, "/fc")
    b.output(y, "output", TensorProto.FLOAT, [1, 1000])
    return b, feeds


def vit_tiny(depth=12, dim=192, heads=3, mlp=768):
    b = Builder("vit_tiny", 17, 105)
    x, feeds = image_input(b, 224)
    n, hd = 197, dim // heads
    y = b.conv(x, 3, dim, 16, "/patch_embed/proj", s=16, p=0, folded=False)
    y = b.op("Reshape", [y, b.const(i64([1, dim, -1]), "/patch_embed")], "/patch_embed")
    y = b.op("Transpose", [y], "/patch_embed", perm=[0, 2, 1])
    cls = b.op("Expand", [b.param("cls_token", b.normal([1, 1, dim], 0.02)),
                          b.const(i64([1, 1, 1]))])  # expand(B, -1, -1): -1 -> 1
    y = b.op("Concat", [cls, y], axis=1)
    y = b.op("Add", [y, b.param("pos_embed", b.normal([1, n, dim], 0.02))])
    for i in range(depth):
        sc, a = f"/blocks/{i}", f"/blocks/{i}/attn"
        h = b.layernorm(y, dim, f"{sc}/norm1", eps=1e-6)
        qkv = b.linear(h, dim, 3 * dim, f"{a}/qkv")
        qkv = b.op("Reshape", [qkv, b.const(i64([1, n, 3, heads, hd]), a)], a)
        qkv = b.op("Transpose", [qkv], a, perm=[2, 0, 3, 1, 4])
        q, k, v = (b.op("Gather", [qkv, b.const(i64(j), a)], a, axis=0) for j in range(3))
        s = b.op("MatMul", [q, b.op("Transpose", [k], a, perm=[0, 1, 3, 2])], a)
        s = b.op("Mul", [s, b.const(np.array(hd ** -0.5, np.float32), a)], a)
        s = b.op("Softmax", [s], a, axis=-1)
        o = b.op("Transpose", [b.op("MatMul", [s, v], a)], a, perm=[0, 2, 1, 3])
        o = b.op("Reshape", [o, b.const(i64([1, n, dim]), a)], a)
        y = b.op("Add", [y, b.linear(o, dim, dim, f"{a}/proj", res=True)], sc)
        h = b.layernorm(y, dim, f"{sc}/norm2", eps=1e-6)
        h = b.gelu_erf(b.linear(h, dim, mlp, f"{sc}/mlp/fc1"), f"{sc}/mlp/act")
        y = b.op("Add", [y, b.linear(h, mlp, dim, f"{sc}/mlp/fc2", res=True)], sc)
    y = b.layernorm(y, dim, "/norm", eps=1e-6)
    y = b.op("Gather", [y, b.const(i64(0))], axis=1)  # x[:, 0]
    y = b.gemm(y, dim, 1000, "/head")
    b.output(y, "output", TensorProto.FLOAT, [1, 1000])
    return b, feeds


def gpt2_small_lite(layers=6, dim=512, heads=8, vocab=8192, seq=128, n_pos=1024):
    b = Builder("gpt2_small_lite", 13, 106)
    hd = dim // heads
    ids = b.input("input_ids", TensorProto.INT64, [1, seq])
    feeds = {"input_ids": b.rng.integers(0, 1000, (1, seq)).astype(np.int64)}
    wte = b.param("transformer.wte.weight", b.normal([vocab, dim], 0.05))
    wpe = b.param("transformer.wpe.weight", b.normal([n_pos, dim], 0.05))
    pos = b.const(i64(np.arange(seq)[None, :]), "/transformer")  # position_ids, folded
    y = b.op("Add", [b.op("Gather", [wte, ids], "/transformer/wte"),
                     b.op("Gather", [wpe, pos], "/transformer/wpe")], "/transformer")
    # attn.bias[:, :, :T, :T] (lower-triangular bool), constant-folded, shared by the layers
    mask = b.param("transformer.causal_mask", np.tril(np.ones((seq, seq), bool))[None, None])
    neg = b.anon_param("Where", np.array(np.finfo(np.float32).min, np.float32))
    for i in range(layers):
        sc, a, m = f"/transformer/h/{i}", f"/transformer/h/{i}/attn", f"/transformer/h/{i}/mlp"
        h = b.layernorm_decomposed(y, dim, f"{sc}/ln_1")
        qkv = b.linear(h, dim, 3 * dim, f"{a}/c_attn")
        q, k, v = b.op("Split", [qkv, b.const(i64([dim] * 3), a)], a, n_out=3, axis=2)
        shape = b.const(i64([1, seq, heads, hd]), a)
        q = b.op("Transpose", [b.op("Reshape", [q, shape], a)], a, perm=[0, 2, 1, 3])
        k = b.op("Transpose", [b.op("Reshape", [k, shape], a)], a, perm=[0, 2, 3, 1])  # fused k^T
        v = b.op("Transpose", [b.op("Reshape", [v, shape], a)], a, perm=[0, 2, 1, 3])
        s = b.op("MatMul", [q, k], a)
        s = b.op("Div", [s, b.const(np.array(hd ** 0.5, np.float32), a)], a)
        s = b.op("Softmax", [b.op("Where", [mask, s, neg], a)], a, axis=-1)
        o = b.op("Transpose", [b.op("MatMul", [s, v], a)], a, perm=[0, 2, 1, 3])
        o = b.op("Reshape", [o, b.const(i64([1, seq, dim]), a)], a)
        y = b.op("Add", [b.linear(o, dim, dim, f"{a}/c_proj", res=True), y], sc)
        h = b.layernorm_decomposed(y, dim, f"{sc}/ln_2")
        # HF Conv1D = addmm on the flattened input: Reshape, Gemm (transB=0), Reshape
        for name, din, dout in [("c_fc", dim, 4 * dim), ("c_proj", 4 * dim, dim)]:
            ms = f"{m}/{name}"
            h = b.op("Reshape", [h, b.const(i64([-1, din]), ms)], ms)
            h = b.gemm(h, din, dout, ms, trans_b=False, res=name == "c_proj")
            h = b.op("Reshape", [h, b.const(i64([1, seq, dout]), ms)], ms)
            if name == "c_fc":
                h = b.gelu_tanh(h, f"{m}/act")
        y = b.op("Add", [y, h], sc)
    y = b.layernorm_decomposed(y, dim, "/transformer/ln_f")
    wt = b.op("Transpose", [wte], "/lm_head", perm=[1, 0])  # tied weights (left unfolded)
    y = b.op("MatMul", [y, wt], "/lm_head")
    b.output(y, "logits", TensorProto.FLOAT, [1, seq, vocab])
    return b, feeds


def yolov8n_lite(size=320, nc=80, reg_max=16):
    b = Builder("yolov8n_lite", 17, 107)
    x, feeds = image_input(b, size, "images")

    def cbs(h, cin, cout, k, sc, s=1, res=False):  # ultralytics Conv: conv (BN folded) + SiLU
        return b.silu(b.conv(h, cin, cout, k, f"{sc}/conv", s=s, res=res), f"{sc}/act")

    def c2f(h, cin, cout, n, shortcut, sc):
        c = cout // 2
        h = cbs(h, cin, 2 * c, 1, f"{sc}/cv1")
        ys = list(b.op("Split", [h, b.const(i64([c, c]), sc)], sc, n_out=2, axis=1))
        for i in range(n):  # Bottleneck(c, c, shortcut, k=(3, 3), e=1.0)
            bs = f"{sc}/m/{i}"
            t = cbs(cbs(ys[-1], c, c, 3, f"{bs}/cv1"), c, c, 3, f"{bs}/cv2", res=shortcut)
            ys.append(b.op("Add", [ys[-1], t], bs) if shortcut else t)
        return cbs(b.op("Concat", ys, sc, axis=1), (2 + n) * c, cout, 1, f"{sc}/cv2")

    def sppf(h, cin, cout, sc):
        c = cin // 2
        ys = [cbs(h, cin, c, 1, f"{sc}/cv1")]
        for _ in range(3):
            ys.append(b.op("MaxPool", [ys[-1]], f"{sc}/m", ceil_mode=0, dilations=[1, 1],
                           kernel_shape=[5, 5], pads=[2, 2, 2, 2], strides=[1, 1]))
        return cbs(b.op("Concat", ys, sc, axis=1), 4 * c, cout, 1, f"{sc}/cv2")

    def up(h, sc):  # nn.Upsample(scale_factor=2, mode='nearest')
        scales = b.const(np.array([1.0, 1.0, 2.0, 2.0], np.float32), sc)
        return b.op("Resize", [h, "", scales], sc, coordinate_transformation_mode="asymmetric",
                    cubic_coeff_a=-0.75, mode="nearest", nearest_mode="floor")

    m = "/model"
    p = cbs(x, 3, 16, 3, f"{m}/0", s=2)
    p = cbs(p, 16, 32, 3, f"{m}/1", s=2)
    p = c2f(p, 32, 32, 1, True, f"{m}/2")
    p = cbs(p, 32, 64, 3, f"{m}/3", s=2)
    p4 = c2f(p, 64, 64, 2, True, f"{m}/4")
    p = cbs(p4, 64, 128, 3, f"{m}/5", s=2)
    p6 = c2f(p, 128, 128, 2, True, f"{m}/6")
    p = cbs(p6, 128, 256, 3, f"{m}/7", s=2)
    p = c2f(p, 256, 256, 1, True, f"{m}/8")
    p9 = sppf(p, 256, 256, f"{m}/9")
    p = b.op("Concat", [up(p9, f"{m}/10"), p6], f"{m}/11", axis=1)
    p12 = c2f(p, 384, 128, 1, False, f"{m}/12")
    p = b.op("Concat", [up(p12, f"{m}/13"), p4], f"{m}/14", axis=1)
    p15 = c2f(p, 192, 64, 1, False, f"{m}/15")
    p = b.op("Concat", [cbs(p15, 64, 64, 3, f"{m}/16", s=2), p12], f"{m}/17", axis=1)
    p18 = c2f(p, 192, 128, 1, False, f"{m}/18")
    p = b.op("Concat", [cbs(p18, 128, 128, 3, f"{m}/19", s=2), p9], f"{m}/20", axis=1)
    p21 = c2f(p, 384, 256, 1, False, f"{m}/21")

    # Detect head
    d, no = f"{m}/22", 4 * reg_max + nc
    c2, c3 = max(16, 64 // 4, reg_max * 4), max(64, min(nc, 100))
    flat = []
    for i, (feat, ch) in enumerate([(p15, 64), (p18, 128), (p21, 256)]):
        bx = cbs(cbs(feat, ch, c2, 3, f"{d}/cv2/{i}/0"), c2, c2, 3, f"{d}/cv2/{i}/1")
        bx = b.conv(bx, c2, 4 * reg_max, 1, f"{d}/cv2/{i}/2", folded=False)
        cl = cbs(cbs(feat, ch, c3, 3, f"{d}/cv3/{i}/0"), c3, c3, 3, f"{d}/cv3/{i}/1")
        cl = b.conv(cl, c3, nc, 1, f"{d}/cv3/{i}/2", folded=False)
        o = b.op("Concat", [bx, cl], d, axis=1)
        flat.append(b.op("Reshape", [o, b.const(i64([1, no, -1]), d)], d))
    xc = b.op("Concat", flat, d, axis=2)
    box, cls = b.op("Split", [xc, b.const(i64([4 * reg_max, nc]), d)], d, n_out=2, axis=1)
    # make_anchors (constant-folded): cell centres and strides
    anchors, strides = [], []
    for s in (8, 16, 32):
        hw = size // s
        sy, sx = np.meshgrid(np.arange(hw) + 0.5, np.arange(hw) + 0.5, indexing="ij")
        anchors.append(np.stack([sx.ravel(), sy.ravel()], 0))
        strides.append(np.full(hw * hw, s))
    anchors = np.concatenate(anchors, 1)[None].astype(np.float32)
    strides = np.concatenate(strides)[None].astype(np.float32)
    na = anchors.shape[2]
    # DFL: softmax over the reg_max bins, expectation by a fixed 1x1 conv (weights 0..15)
    f = f"{d}/dfl"
    t = b.op("Reshape", [box, b.const(i64([1, 4, reg_max, na]), f)], f)
    t = b.op("Softmax", [b.op("Transpose", [t], f, perm=[0, 2, 1, 3])], f, axis=1)
    t = b.conv(t, reg_max, 1, 1, f"{f}/conv", bias=False, folded=False,
               weight=np.arange(reg_max, dtype=np.float32).reshape(1, reg_max, 1, 1))
    t = b.op("Reshape", [t, b.const(i64([1, 4, na]), f)], f)
    # dist2bbox(xywh=True) * strides
    lt, rb = b.op("Split", [t, b.const(i64([2, 2]), d)], d, n_out=2, axis=1)
    anc = b.anon_param("Sub", anchors)
    x1y1, x2y2 = b.op("Sub", [anc, lt], d), b.op("Add", [anc, rb], d)
    cxy = b.op("Div", [b.op("Add", [x1y1, x2y2], d), b.const(np.array(2.0, np.float32), d)], d)
    wh = b.op("Sub", [x2y2, x1y1], d)
    dbox = b.op("Mul", [b.op("Concat", [cxy, wh], d, axis=1), b.anon_param("Mul", strides)], d)
    y = b.op("Concat", [dbox, b.op("Sigmoid", [cls], d)], d, axis=1)
    b.output(y, "output0", TensorProto.FLOAT, [1, 4 + nc, na])
    return b, feeds


def unet_lite(size=224, widths=(32, 64, 128, 256, 512)):
    b = Builder("unet_lite", 13, 108)
    x, feeds = image_input(b, size)

    def double_conv(h, cin, cout, sc):  # (Conv 3x3 no bias, BatchNorm, ReLU) x 2, BN unfolded
        for j, ci in enumerate([cin, cout]):
            h = b.conv(h, ci, cout, 3, f"{sc}/double_conv/{3 * j}", bias=False, folded=False)
            h = b.bn(h, cout, f"{sc}/double_conv/{3 * j + 1}")
            h = b.relu(h, f"{sc}/double_conv/{3 * j + 2}")
        return h

    skips = [double_conv(x, 3, widths[0], "/inc")]
    for i in range(1, len(widths)):
        sc = f"/down{i}/maxpool_conv"
        h = b.maxpool(skips[-1], 2, 2, 0, f"{sc}/0")
        skips.append(double_conv(h, widths[i - 1], widths[i], f"{sc}/1"))
    y = skips.pop()
    for i in range(len(widths) - 1, 0, -1):
        sc, cin, cout = f"/up{len(widths) - i}", widths[i], widths[i - 1]
        y = b.conv_transpose(y, cin, cout, 2, 2, f"{sc}/up")
        y = b.op("Concat", [skips.pop(), y], sc, axis=1)
        y = double_conv(y, 2 * cout, cout, f"{sc}/conv")
    y = b.conv(y, widths[0], 2, 1, "/outc/conv", folded=False)
    b.output(y, "output", TensorProto.FLOAT, [1, 2, size, size])
    return b, feeds


def densenet_lite(blocks=(6, 12, 24, 16), growth=32, bn_size=4, init=64):
    b = Builder("densenet_lite", 13, 109)
    x, feeds = image_input(b, 224)
    f = "/features"
    y = b.relu(b.conv(x, 3, init, 7, f"{f}/conv0", s=2, p=3), f"{f}/relu0")  # norm0 folded
    y = b.maxpool(y, 3, 2, 1, f"{f}/pool0")
    c = init
    for bi, n in enumerate(blocks, start=1):
        feats = [y]
        for li in range(1, n + 1):
            sc, cin = f"{f}/denseblock{bi}/denselayer{li}", c + (li - 1) * growth
            h = b.op("Concat", feats, sc, axis=1) if len(feats) > 1 else feats[0]
            h = b.relu(b.bn(h, cin, f"{sc}/norm1"), f"{sc}/relu1")
            # norm2 directly follows conv1, so the eval-mode export folds it into conv1
            h = b.relu(b.conv(h, cin, bn_size * growth, 1, f"{sc}/conv1"), f"{sc}/relu2")
            feats.append(b.conv(h, bn_size * growth, growth, 3, f"{sc}/conv2", bias=False,
                                folded=False))
        y = b.op("Concat", feats, f"{f}/denseblock{bi}", axis=1)
        c += n * growth
        if bi != len(blocks):
            sc = f"{f}/transition{bi}"
            h = b.relu(b.bn(y, c, f"{sc}/norm"), f"{sc}/relu")
            h = b.conv(h, c, c // 2, 1, f"{sc}/conv", bias=False, folded=False)
            y = b.op("AveragePool", [h], f"{sc}/pool", ceil_mode=0, kernel_shape=[2, 2],
                     pads=[0, 0, 0, 0], strides=[2, 2])
            c //= 2
    y = b.relu(b.bn(y, c, f"{f}/norm5"), "")
    y = b.gemm(b.pool_flatten(y), c, 1000, "/classifier")
    b.output(y, "output", TensorProto.FLOAT, [1, 1000])
    return b, feeds


def conformer_lite(n_mels=80, frames=400, dim=144, heads=4, blocks=4, ff=576, kernel=31):
    b = Builder("conformer_lite", 17, 110)
    x = b.input("feats", TensorProto.FLOAT, [1, n_mels, frames])
    feeds = {"feats": b.rng.standard_normal((1, n_mels, frames)).astype(np.float32)}
    hd = dim // heads
    # Conv2dSubsampling (ESPnet-style, on [B, 1, T, F]); shapes/scalars as initializers here
    e = "/embed"
    h = b.op("Transpose", [x], e, perm=[0, 2, 1])
    h = b.op("Unsqueeze", [h, b.anon_param("Unsqueeze", i64([1]))], e)
    h = b.relu(b.conv(h, 1, dim, 3, f"{e}/conv/0", s=2, p=0, folded=False), f"{e}/conv/1")
    h = b.relu(b.conv(h, dim, dim, 3, f"{e}/conv/2", s=2, p=0, folded=False), f"{e}/conv/3")
    def sub(n):  # two 3x3 stride-2 unpadded convs
        return ((n - 3) // 2 + 1 - 3) // 2 + 1
    t, fq = sub(frames), sub(n_mels)
    h = b.op("Transpose", [h], e, perm=[0, 2, 1, 3])
    h = b.op("Reshape", [h, b.anon_param("Reshape", i64([1, t, dim * fq]))], e)
    h = b.linear(h, dim * fq, dim, f"{e}/out/0")
    # absolute sinusoidal positional encoding: x * xscale + pe
    pos = np.arange(t)[:, None] / np.power(10000.0, np.arange(0, dim, 2)[None, :] / dim)
    pe = np.zeros((1, t, dim), np.float32)
    pe[0, :, 0::2], pe[0, :, 1::2] = np.sin(pos), np.cos(pos)
    h = b.op("Mul", [h, b.anon_param("Mul", np.array(1.0, np.float32))], f"{e}/out/1")
    y = b.op("Add", [h, b.anon_param("Add", pe)], f"{e}/out/1")

    def ffn(y, sc, norm):  # macaron half-step FFN with Swish
        h = b.layernorm(y, dim, norm)
        h = b.silu(b.linear(h, dim, ff, f"{sc}/w_1"), f"{sc}/activation")
        h = b.linear(h, ff, dim, f"{sc}/w_2", res=True)
        h = b.op("Mul", [h, b.anon_param("Mul", np.array(0.5, np.float32))], sc)
        return b.op("Add", [y, h], sc)

    for i in range(blocks):
        sc = f"/encoders/{i}"
        y = ffn(y, f"{sc}/feed_forward_macaron", f"{sc}/norm_ff_macaron")
        # MHSA, separate q/k/v projections (ESPnet MultiHeadedAttention)
        a = f"{sc}/self_attn"
        h = b.layernorm(y, dim, f"{sc}/norm_mha")
        shape = b.anon_param("Reshape", i64([1, t, heads, hd]))

        def heads_of(proj, perm):
            return b.op("Transpose", [b.op("Reshape", [b.linear(h, dim, dim, f"{a}/{proj}"), shape],
                                           a)], a, perm=perm)
        q = heads_of("linear_q", [0, 2, 1, 3])
        k = heads_of("linear_k", [0, 2, 3, 1])
        v = heads_of("linear_v", [0, 2, 1, 3])
        s = b.op("MatMul", [q, k], a)
        s = b.op("Div", [s, b.anon_param("Div", np.array(math.sqrt(hd), np.float32))], a)
        s = b.op("Softmax", [s], a, axis=-1)
        o = b.op("Transpose", [b.op("MatMul", [s, v], a)], a, perm=[0, 2, 1, 3])
        o = b.op("Reshape", [o, b.anon_param("Reshape", i64([1, t, dim]))], a)
        y = b.op("Add", [y, b.linear(o, dim, dim, f"{a}/linear_out", res=True)], sc)
        # convolution module
        cm = f"{sc}/conv_module"
        h = b.layernorm(y, dim, f"{sc}/norm_conv")
        h = b.op("Transpose", [h], cm, perm=[0, 2, 1])
        h = b.conv(h, dim, 2 * dim, 1, f"{cm}/pointwise_conv1", nd=1, folded=False)
        ga, gb = b.op("Split", [h, b.anon_param("Split", i64([dim, dim]))], cm, n_out=2, axis=1)
        h = b.op("Mul", [ga, b.op("Sigmoid", [gb], cm)], cm)  # GLU(dim=1)
        h = b.conv(h, dim, dim, kernel, f"{cm}/depthwise_conv", g=dim, nd=1, folded=False)
        h = b.silu(b.bn(h, dim, f"{cm}/norm"), f"{cm}/activation")
        h = b.conv(h, dim, dim, 1, f"{cm}/pointwise_conv2", nd=1, folded=False, res=True)
        y = b.op("Add", [y, b.op("Transpose", [h], cm, perm=[0, 2, 1])], sc)
        y = ffn(y, f"{sc}/feed_forward", f"{sc}/norm_ff")
        y = b.layernorm(y, dim, f"{sc}/norm_final")
    y = b.layernorm(y, dim, "/after_norm")
    b.output(y, "encoder_out", TensorProto.FLOAT, [1, t, dim])
    return b, feeds


MODELS = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "efficientnet_b0": efficientnet_b0,
    "resnext50_lite": resnext50_lite,
    "vit_tiny": vit_tiny,
    "gpt2_small_lite": gpt2_small_lite,
    "yolov8n_lite": yolov8n_lite,
    "unet_lite": unet_lite,
    "densenet_lite": densenet_lite,
    "conformer_lite": conformer_lite,
}


# ----------------------------------------------------------------------------
# driver: ONNX Runtime through bench/ort_expected.js, raw .bin side files

NP_OF = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}


def write_bins(tdir, prefix, arrays):
    spec = []
    for k, (name, arr) in enumerate(arrays):
        fn = f"{prefix}_{k}.bin"
        np.ascontiguousarray(arr).tofile(os.path.join(tdir, fn))
        spec.append({"name": name, "type": str(arr.dtype),
                     "shape": list(arr.shape), "file": fn})
    return spec


def run_node(model_path, tdir, spec, extra=()):
    """Runs ort_expected.js on model_path with spec (io_in.json); returns io_out.json's
    content and removes every side file."""
    with open(os.path.join(tdir, "io_in.json"), "w") as f:
        json.dump(spec, f)
    env = dict(os.environ)
    env.setdefault("ORT_NODE_MODULES", os.path.join(os.path.expanduser("~"), ".cache",
                                                    "poprt-ort", "node_modules"))
    try:
        subprocess.run(["node", os.path.join(HERE, "ort_expected.js"), model_path, tdir,
                        *extra], check=True, env=env)
        with open(os.path.join(tdir, "io_out.json")) as f:
            info = json.load(f)
        info["arrays"] = [(o["name"], np.fromfile(os.path.join(tdir, o["file"]),
                                                  NP_OF[o["type"]]).reshape(o["shape"]))
                          for o in info.get("outputs", [])]
    finally:
        for fn in os.listdir(tdir):
            if fn.endswith(".bin") or fn.startswith("io_") or fn == "calib.onnx":
                os.remove(os.path.join(tdir, fn))
    return info


def calibrate(b, feeds, tdir):
    """LSUV-style: in graph order, scale each weighted layer (weight and bias
    together) so that its output has the target rms on the test input. The
    weights become graph inputs (not initializers: onnxruntime-node only feeds
    true inputs) of a calibration copy, so one ORT session serves all steps."""
    m = b.model()
    pnames = sorted({p for ps, _, _ in b.calib for p in ps}, key=list(b.params).index)
    keep = [t for t in m.graph.initializer if t.name not in set(pnames)]
    del m.graph.initializer[:]
    m.graph.initializer.extend(keep)
    for p in pnames:
        m.graph.input.append(helper.make_tensor_value_info(p, TensorProto.FLOAT, b.params[p].shape))
    have = {o.name for o in m.graph.output}
    for _, out, _ in b.calib:
        if out not in have:
            m.graph.output.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, None))
    path = os.path.join(tdir, "calib.onnx")
    onnx.save(m, path)
    spec = {"inputs": write_bins(tdir, "in", feeds.items()),
            "params": write_bins(tdir, "param", [(p, b.params[p]) for p in pnames]),
            "calib": [{"params": ps, "out": out, "target": t} for ps, out, t in b.calib]}
    info = run_node(path, tdir, spec, ["--calibrate"])
    for (ps, _, _), f in zip(b.calib, info["factors"]):
        for p in ps:
            b.params[p] = (b.params[p] * np.float32(f)).astype(np.float32)
    return info["factors"]


def build_one(out_dir, name):
    b, feeds = MODELS[name]()
    mdir = os.path.join(out_dir, name)
    tdir = os.path.join(mdir, "test_data_set_0")
    os.makedirs(tdir, exist_ok=True)
    for fn in os.listdir(tdir):  # stale files of an earlier run
        os.remove(os.path.join(tdir, fn))
    calibrate(b, feeds, tdir)
    model = b.model()
    onnx.checker.check_model(model, full_check=True)
    mpath = os.path.join(mdir, "model.onnx")
    onnx.save(model, mpath)
    for k, (iname, arr) in enumerate(feeds.items()):
        onnx.save_tensor(numpy_helper.from_array(arr, iname), os.path.join(tdir, f"input_{k}.pb"))
    info = run_node(mpath, tdir, {"inputs": write_bins(tdir, "in", feeds.items())})
    stats = []
    for k, (oname, arr) in enumerate(info["arrays"]):
        onnx.save_tensor(numpy_helper.from_array(arr, oname), os.path.join(tdir, f"output_{k}.pb"))
        a = arr.astype(np.float64)
        stats.append(f"{oname}{list(arr.shape)} rms {np.sqrt((a * a).mean()):.3g} "
                     f"max|.| {np.abs(a).max():.3g}" + ("" if np.isfinite(a).all() else " NON-FINITE"))
    return {"name": name, "opset": b.opset, "nodes": len(model.graph.node),
            "size_mb": os.path.getsize(mpath) / 1e6, "ms": info["median_ms"],
            "ort": info["ort_version"], "stats": "; ".join(stats)}


def main(argv):
    args = list(argv[1:])
    only = None
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1].split(",")
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit("usage: make_zoo_models.py OUT [--only NAME,...]")
    names = only or list(MODELS)
    for n in names:
        if n not in MODELS:
            sys.exit(f"unknown model {n}; known: {', '.join(MODELS)}")
    rows = []
    for n in names:
        r = build_one(args[0], n)
        print(f"{n}: {r['nodes']} nodes, {r['size_mb']:.1f} MB, ORT {r['ms']:.1f} ms; {r['stats']}",
              flush=True)
        rows.append(r)
    print(f"\nONNX Runtime {rows[0]['ort']}, 1 thread, graph optimisation 'all', median of 10 runs:")
    print(f"{'model':<20} {'opset':>5} {'nodes':>6} {'MB':>7} {'ORT ms':>8}")
    for r in rows:
        print(f"{r['name']:<20} {r['opset']:>5} {r['nodes']:>6} {r['size_mb']:>7.1f} {r['ms']:>8.1f}")


if __name__ == "__main__":
    main(sys.argv)
