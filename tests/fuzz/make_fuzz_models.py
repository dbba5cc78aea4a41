#!/usr/bin/env python3
"""Writes the small models the fuzz targets load at start (tests/fuzz/models/):
the models fuzz_options and fuzz_pass_args run their inputs on, and the
one-node ImageDecoder models fuzz_image feeds.

Run from anywhere:  python3 tests/fuzz/make_fuzz_models.py  (Debian: python3-onnx)
The .onnx files are committed; re-run this only to change them.
"""
import os

from onnx import TensorProto, helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
F, I64, U8, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.UINT8, TensorProto.BOOL


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, dtype, dims, vals):
    return helper.make_tensor(name, dtype, dims, vals)


def node(op, ins, outs, name, **attrs):
    return helper.make_node(op, ins, outs, name=name, **attrs)


def save(name, nodes, inputs, outputs, inits=(), opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, producer_name="make_fuzz_models",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    with open(os.path.join(HERE, name + ".onnx"), "wb") as f:
        f.write(m.SerializeToString())


def ramp(n, scale=0.125):
    return [((i * 7) % 11 - 5) * scale for i in range(n)]


def image_decoders():
    """x uint8[n] -> ImageDecoder(pixel_format) -> y uint8[h, w, c]."""
    for fmt in ("RGB", "BGR", "Grayscale"):
        save("image_" + fmt.lower(),
             [node("ImageDecoder", ["x"], ["y"], "decode", pixel_format=fmt)],
             [vi("x", U8, ["n"])], [vi("y", U8, None)], opset=20)


def small():
    """Two outputs (for anchors), a symbolic batch (for input_shape)."""
    save("small",
         [node("Add", ["x", "c"], ["s"], "add"),
          node("Relu", ["s"], ["y"], "relu"),
          node("MatMul", ["y", "w"], ["m"], "matmul"),
          node("Softmax", ["m"], ["z"], "softmax", axis=-1)],
         [vi("x", F, ["N", 4])], [vi("y", F, ["N", 4]), vi("z", F, ["N", 3])],
         [const("c", F, [4], [-1, 0, 0.5, 1]), const("w", F, [4, 3], ramp(12))])


def patterns():
    """One graph with something for most passes to rewrite: BN after Conv,
    the GELU and LayerNorm patterns, no-op nodes, consecutive casts,
    reshapes, transposes, squeezes, attention-like MatMul/Softmax, Where,
    Pow, Div by a constant, HardSwish, Celu, Einsum, CumSum, TopK, Trilu,
    NonZero, comparisons, Clip, Pad, Expand, Flatten."""
    n = []
    inits = [
        const("cw", F, [4, 2, 1, 1], ramp(8)), const("cb", F, [4], [0.1, -0.1, 0.2, 0]),
        const("bn_s", F, [4], [1, 0.5, 2, 1]), const("bn_b", F, [4], [0, 0.1, -0.1, 0]),
        const("bn_m", F, [4], [0, 0.1, 0, -0.1]), const("bn_v", F, [4], [1, 1, 0.5, 2]),
        const("shape_a", I64, [2], [2, 16]), const("shape_b", I64, [2], [4, 8]),
        const("half", F, [], [0.5]), const("one", F, [], [1.0]), const("sqrt2", F, [], [1.4142135]),
        const("two", F, [], [2.0]), const("eps", F, [], [1e-5]), const("axes0", I64, [1], [0]),
        const("ln_g", F, [8], [1] * 8), const("ln_b", F, [8], [0] * 8),
        const("wq", F, [8, 8], ramp(64, 0.05)), const("bq", F, [8], ramp(8, 0.01)),
        const("wk", F, [8, 8], ramp(64, 0.03)), const("bk", F, [8], ramp(8, 0.02)),
        const("zero_pads", I64, [4], [0, 0, 0, 0]), const("shape_e", I64, [2], [4, 8]),
        const("k2", I64, [1], [2]), const("lo", F, [], [-1.0]), const("hi", F, [], [1.0]),
    ]
    n += [node("Conv", ["x", "cw", "cb"], ["c1"], "conv"),
          node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["c2"], "bn"),
          node("Identity", ["c2"], ["c3"], "ident"),
          node("Cast", ["c3"], ["c4"], "cast1", to=TensorProto.DOUBLE),
          node("Cast", ["c4"], ["c5"], "cast2", to=F),
          node("Reshape", ["c5", "shape_a"], ["r1"], "reshape1"),
          node("Reshape", ["r1", "shape_b"], ["r2"], "reshape2"),
          node("Transpose", ["r2"], ["t1"], "tr1", perm=[1, 0]),
          node("Transpose", ["t1"], ["t2"], "tr2", perm=[1, 0]),
          node("Unsqueeze", ["t2", "axes0"], ["u1"], "unsq"),
          node("Squeeze", ["u1", "axes0"], ["h"], "sq"),
          # GELU with Erf
          node("Div", ["h", "sqrt2"], ["g1"], "gelu_div"),
          node("Erf", ["g1"], ["g2"], "gelu_erf"),
          node("Add", ["g2", "one"], ["g3"], "gelu_add"),
          node("Mul", ["h", "g3"], ["g4"], "gelu_mul"),
          node("Mul", ["g4", "half"], ["g"], "gelu_half"),
          # LayerNorm
          node("ReduceMean", ["g"], ["l1"], "ln_mean", axes=[-1]),
          node("Sub", ["g", "l1"], ["l2"], "ln_sub"),
          node("Pow", ["l2", "two"], ["l3"], "ln_pow"),
          node("ReduceMean", ["l3"], ["l4"], "ln_var", axes=[-1]),
          node("Add", ["l4", "eps"], ["l5"], "ln_eps"),
          node("Sqrt", ["l5"], ["l6"], "ln_sqrt"),
          node("Div", ["l2", "l6"], ["l7"], "ln_div"),
          node("Mul", ["l7", "ln_g"], ["l8"], "ln_scale"),
          node("Add", ["l8", "ln_b"], ["ln"], "ln_bias"),
          # attention-like
          node("MatMul", ["ln", "wq"], ["q0"], "mm_q"), node("Add", ["q0", "bq"], ["q"], "add_q"),
          node("MatMul", ["ln", "wk"], ["k0"], "mm_k"), node("Add", ["k0", "bk"], ["k"], "add_k"),
          node("Transpose", ["k"], ["kt"], "tr_k", perm=[1, 0]),
          node("MatMul", ["q", "kt"], ["att0"], "mm_att"),
          node("Div", ["att0", "two"], ["att1"], "att_scale"),
          node("Softmax", ["att1"], ["att"], "att_softmax", axis=-1),
          node("MatMul", ["att", "q"], ["ctx"], "mm_ctx"),
          # odds and ends
          node("HardSwish", ["ctx"], ["hs"], "hardswish"),
          node("Celu", ["hs"], ["ce"], "celu"),
          node("Clip", ["ce", "lo", "hi"], ["cl"], "clip"),
          node("Pad", ["cl", "zero_pads"], ["pd"], "pad"),
          node("Expand", ["pd", "shape_e"], ["ex"], "expand"),
          node("Flatten", ["ex"], ["fl"], "flatten", axis=1),
          node("Trilu", ["fl"], ["tri"], "trilu"),
          node("Einsum", ["tri", "wq"], ["es"], "einsum", equation="ij,jk->ik"),
          node("CumSum", ["es", "axes0"], ["cs"], "cumsum"),
          node("TopK", ["cs", "k2"], ["tv", "ti"], "topk"),
          node("GreaterOrEqual", ["tv", "half"], ["ge"], "ge"),
          node("LessOrEqual", ["tv", "hi"], ["le"], "le"),
          node("And", ["ge", "le"], ["both"], "and"),
          node("Where", ["both", "tv", "half"], ["y"], "where"),
          node("NonZero", ["both"], ["nz"], "nonzero")]
    save("patterns", n, [vi("x", F, [1, 2, 2, 4])],
         [vi("y", F, [4, 2]), vi("ti", I64, [4, 2]), vi("nz", I64, [2, None])], inits)


def main():
    os.makedirs(HERE, exist_ok=True)
    image_decoders()
    small()
    patterns()
    print("wrote", HERE)


if __name__ == "__main__":
    main()
