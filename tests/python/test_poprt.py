"""Tests of the Python package poprt (src/python), run by `meson test python`
with PYTHONPATH=src/python and POPRT_LIBRARY=the built libpoprt.so.

Exit status 77 (meson: skipped) when NumPy is missing. Expected values are
computed with NumPy from the weights tests/data/make_models.py writes
(xorshift32, re-derived here); tolerances are stated per test.
"""

import concurrent.futures
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

try:
    import numpy as np
except ImportError:
    print("SKIP: python3-numpy is not installed (the poprt package needs it)")
    sys.exit(77)

import poprt
from poprt import compiler, converter, runtime

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "tests", "data")
MLP = os.path.join(DATA, "mlp.onnx")
MLP_DYN = os.path.join(DATA, "mlp_dynamic.onnx")
CONV = os.path.join(DATA, "conv.onnx")
CUSTOM = os.path.join(DATA, "custom_op.onnx")

# float32 results of one kernel order against NumPy's: absolute tolerance
ATOL = 1e-5


def xorshift(seed, dims, scale):
    """The weights make_models.py writes: xorshift32 floats in [-scale, scale)."""
    n = int(np.prod(dims))
    x = seed & 0xFFFFFFFF
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out[i] = (x / 4294967296.0 * 2.0 - 1.0) * scale
    return out.astype(np.float32).reshape(dims)


W1, B1 = xorshift(1, [32, 16], 0.25), xorshift(2, [32], 0.1)
W2, B2 = xorshift(3, [10, 32], 0.25), xorshift(4, [10], 0.1)


def mlp_ref(x):
    h = np.maximum(x.astype(np.float64) @ W1.T + B1, 0)
    z = h @ W2.T + B2
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def conv_ref(x):
    """conv.onnx: Conv(4, 3x3, pad 1) -> Relu -> MaxPool 2 -> Flatten -> Gemm(5)."""
    cw, cb = xorshift(11, [4, 3, 3, 3], 0.3), xorshift(12, [4], 0.1)
    fw, fb = xorshift(13, [5, 64], 0.2), xorshift(14, [5], 0.1)
    xp = np.pad(x[0].astype(np.float64), ((0, 0), (1, 1), (1, 1)))
    c = np.zeros((4, 8, 8))
    for i in range(8):
        for j in range(8):
            c[:, i, j] = np.tensordot(cw, xp[:, i:i + 3, j:j + 3], axes=3) + cb
    r = np.maximum(c, 0)
    p = r.reshape(4, 4, 2, 4, 2).max(axis=(2, 4))
    return (p.reshape(1, 64) @ fw.T + fb)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


class TestModel(unittest.TestCase):
    def test_version(self):
        self.assertRegex(poprt.__version__, r"^\d+\.\d+\.\d+$")
        major, minor, patch = (int(v) for v in poprt.__version__.split("."))
        self.assertEqual(poprt.version_num(), (major << 16) | (minor << 8) | patch)

    def test_library_search(self):
        """POPRT_LIBRARY first (an explicit path that fails is an error),
        then the installed path, the system's, build/lib beside the tree."""
        pkg = os.path.dirname(os.path.dirname(poprt.__file__))
        code = "import poprt; print(poprt.library_path)"
        env = dict(os.environ, PYTHONPATH=pkg, POPRT_LIBRARY="/nonexistent/libpoprt.so")
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("POPRT_LIBRARY=/nonexistent/libpoprt.so cannot be loaded", p.stderr)
        env.pop("POPRT_LIBRARY")
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        if p.returncode == 0:  # the system's library, or build/lib of the tree
            self.assertTrue(p.stdout.strip().endswith(("libpoprt.so", "libpoprt.so.1")), p.stdout)
        else:
            self.assertIn("set POPRT_LIBRARY", p.stderr)

    def test_load_describe_save(self):
        m = poprt.Model.load(MLP)
        self.assertEqual([(i.name, i.dtype, i.shape) for i in m.inputs], [("x", "float", (1, 16))])
        self.assertEqual([(o.name, o.shape) for o in m.outputs], [("y", (1, 10))])
        self.assertEqual(m.opset, 13)
        self.assertEqual(m.num_nodes, 4)
        self.assertIn("w1", m.tensor_ids())
        self.assertEqual(m.tensor_info("h1").shape, (1, 32))
        data = m.to_bytes()
        m2 = poprt.Model.from_bytes(data)
        self.assertEqual(m2.inputs, m.inputs)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "saved.onnx")
            m.save(path)
            self.assertEqual(poprt.Model(path).outputs, m.outputs)

    def test_symbolic_shape(self):
        m = poprt.Model(MLP_DYN)
        self.assertEqual(m.inputs[0].shape, ("batch", 16))
        m.set_input_shape("x", [3, 16])
        self.assertEqual(m.outputs[0].shape, (3, 10))
        with self.assertRaises(poprt.ShapeMismatchError) as e:
            m.set_input_shape("x", [3, 17])
        self.assertIn("x", str(e.exception))

    def test_load_errors(self):
        with self.assertRaises(poprt.FileIOError) as e:
            poprt.Model("/nonexistent/model.onnx")
        self.assertIn("/nonexistent/model.onnx", e.exception.message)
        self.assertEqual(e.exception.status, 3)
        with self.assertRaises(poprt.ParseError) as e:
            poprt.Model(b"\x08\x07\x12not a model")
        self.assertEqual(e.exception.status, 4)
        self.assertTrue(e.exception.message)
        self.assertIsInstance(e.exception, poprt.PoprtError)


class TestPasses(unittest.TestCase):
    def test_registered(self):
        passes = poprt.get_registered_passes()
        for name in ("convert_version", "float_to_half", "constant_folding"):
            self.assertIn(name, passes)
            self.assertTrue(passes[name])

    def test_default_passes_match_cli(self):
        """converter.DEFAULT_PASSES is the copy of src/convert.c's list."""
        with open(os.path.join(ROOT, "src", "convert.c")) as f:
            text = f.read()
        body = re.search(r"cli_default_passes\[\] = \{(.*?)\};", text, re.S).group(1)
        self.assertEqual(tuple(re.findall(r'"([a-z0-9_]+)"', body)), converter.DEFAULT_PASSES)

    def test_pass_manager(self):
        m = poprt.Model(MLP)
        pm = poprt.PassManager(["eliminate_identity", ("convert_version", {"version": 11})])
        self.assertIs(pm.run(m), m)
        self.assertEqual(m.opset, 11)
        self.assertEqual(pm.changed, 1)
        m2 = poprt.get_pass("convert_version", version=17)(MLP)
        self.assertEqual(m2.opset, 17)
        data = poprt.PassManager([poprt.get_pass("convert_version", "version=12")]).run(
            read(MLP))
        self.assertIsInstance(data, bytes)
        self.assertEqual(poprt.Model(data).opset, 12)

    def test_pass_errors(self):
        with self.assertRaises(poprt.NotFoundError) as e:
            poprt.PassManager(["no_such_pass"])
        self.assertIn("no_such_pass", str(e.exception))
        # arguments are checked when the pass runs (the model is restored)
        with self.assertRaises(poprt.PassFailedError) as e:
            poprt.PassManager().add("convert_version", bogus=1).run(MLP)
        self.assertIn("bogus", str(e.exception))
        m = poprt.Model(MLP)
        with self.assertRaises(poprt.PoprtError):
            poprt.PassManager([("convert_version", {"version": 99})]).run(m)
        self.assertEqual(m.opset, 13)  # left as it was

    def test_python_pass(self):
        seen = []

        @poprt.register_pass("py_fix_batch", "fixes the first dim of every input (test)")
        def fix_batch(model, args):
            seen.append(args)
            n = int(args.split("=")[1]) if args else 1
            for i in model.inputs:
                model.set_input_shape(i.name, [n] + list(i.shape[1:]))

        self.assertIn("py_fix_batch", poprt.get_registered_passes())
        m = poprt.PassManager([poprt.get_pass("py_fix_batch", n=5)]).run(MLP_DYN)
        self.assertEqual(m.inputs[0].shape, (5, 16))
        self.assertEqual(seen, ["n=5"])
        y = runtime.Runner(m).run({"x": rand(5, 16)})["y"]
        np.testing.assert_allclose(y, mlp_ref(rand(5, 16)), atol=ATOL)

        @poprt.register_pass("py_failing", "raises (test)")
        def failing(model, args):
            raise ValueError("deliberate failure in a Python pass")

        m = poprt.Model(MLP)
        with self.assertRaises(poprt.PoprtError) as e:
            poprt.PassManager(["py_failing"]).run(m)
        self.assertIn("py_failing", str(e.exception))
        self.assertIsInstance(e.exception.__cause__, ValueError)
        with self.assertRaises(poprt.InvalidArgumentError):
            poprt.register_pass("py_failing")(failing)


class TestConverter(unittest.TestCase):
    def test_default_pipeline(self):
        conv = converter.Converter()
        m = conv.convert(MLP)
        self.assertEqual(m.opset, 11)
        self.assertIn("convert_version", conv.summary()["changed"])
        y = runtime.Runner(m).run({"x": rand(1, 16)})["y"]
        np.testing.assert_allclose(y, mlp_ref(rand(1, 16)), atol=ATOL)

    def test_fp16_and_shapes(self):
        conv = converter.Converter(convert_version=None, precision="fp16",
                                   input_shape={"x": [4, 16]}, skip_passes=["constant_folding"])
        src = poprt.Model(MLP_DYN)
        m = conv.convert(src)
        self.assertEqual(src.inputs[0].shape, ("batch", 16))  # the source is not changed
        self.assertEqual(m.inputs[0].shape, (4, 16))
        self.assertEqual(m.opset, 13)
        self.assertIn("constant_folding", conv.summary()["skipped"])
        self.assertIn("float_to_half", [r.name for r in conv.results])
        x = rand(4, 16)
        # weights and activations stored in float16: a few float16 roundings
        np.testing.assert_allclose(runtime.Runner(m).run({"x": x})["y"], mlp_ref(x), atol=2e-3)

    def test_used_passes_and_bytes(self):
        data = read(CONV)
        out = converter.Converter(used_passes=["eliminate_identity"], convert_version=17,
                                  check=True).convert(data)
        self.assertIsInstance(out, bytes)
        self.assertEqual(poprt.Model(out).opset, 17)
        with self.assertRaises(poprt.NotFoundError):
            converter.Converter(used_passes=["nope"]).convert(data)
        # used_passes without convert_version keeps the opset, as --passes does
        kept = converter.Converter(used_passes=["eliminate_identity"]).convert(CONV)
        self.assertEqual(kept.opset, 13)


    def test_int8_and_bf16(self):
        # int8: dynamic quantization, the check within the CLI's 0.05
        conv = converter.Converter(convert_version=None, precision="int8", check=True)
        m = conv.convert(MLP)
        self.assertEqual([r.state for r in conv.results if r.name == "float_to_int8"],
                         ["changed"])
        self.assertEqual([r.state for r in conv.results if r.name == "check_with_fake_data"],
                         ["unchanged"])
        # bf16: the file stays float32; with a target of 1 every Conv/Gemm is
        # kept float32 where the CPU has bfloat16 kernels, so a bfloat16 run
        # gives the float32 bits either way
        conv = converter.Converter(convert_version=None, precision="bf16", bf16_target_cosine=1.0)
        m = conv.convert(CONV)
        self.assertIn("bf16_fallback", [r.name for r in conv.results])
        x = rand(1, 3, 8, 8)
        y32 = runtime.Runner(m).run({"x": x})["y"]
        y16 = runtime.Runner(m, compiler.CompilerOptions(matmul_precision="bfloat16")).run(
            {"x": x})["y"]
        np.testing.assert_array_equal(y16, y32)
        with self.assertRaises(ValueError):
            converter.Converter(precision="fp16", bf16_target_cosine=0.99)
        with self.assertRaises(ValueError):
            converter.Converter(precision="bf17")


class TestCompilerRuntime(unittest.TestCase):
    def test_options(self):
        opts = compiler.CompilerOptions(threads=2, input_shape={"x": (2, 16)}, optimize=True)
        self.assertEqual(dict(opts), {"threads": "2", "input_shape.x": "2,16", "optimize": "1"})
        with self.assertRaises(poprt.InvalidOptionError) as e:
            opts["no_such_option"] = 1
        self.assertIn("no_such_option", str(e.exception))
        with self.assertRaises(poprt.InvalidOptionError) as e:
            compiler.CompilerOptions(threads="many")
        self.assertIn("threads", str(e.exception))

    def test_compile_run_mlp(self):
        exe = compiler.Compiler.compile(MLP_DYN, {"input_shape.x": "3,16"})
        self.assertEqual(exe.inputs[0].shape, (3, 16))
        x = rand(3, 16)
        y = runtime.Runner(exe).run({"x": x})["y"]
        self.assertEqual(y.shape, (3, 10))
        np.testing.assert_allclose(y, mlp_ref(x), atol=ATOL)

    def test_conv(self):
        x = rand(1, 3, 8, 8, seed=3)
        y = runtime.Runner(CONV).run({"x": x})["y"]
        np.testing.assert_allclose(y, conv_ref(x), atol=1e-4)  # 27- and 64-term sums

    def test_popef_roundtrip(self):
        x = rand(1, 16, seed=5)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mlp.popef")
            exe = compiler.Compiler.compile_and_export(MLP, path, {"threads": 1})
            self.assertTrue(compiler.is_executable(path))
            self.assertFalse(compiler.is_executable(MLP))
            direct = runtime.Runner(exe).run({"x": x})["y"]
            loaded = runtime.Runner(path).run({"x": x})["y"]
            np.testing.assert_array_equal(direct, loaded)  # the same program: bit-equal
            self.assertEqual(compiler.Executable.load(path).outputs[0].shape, (1, 10))
            with self.assertRaises(poprt.UnsupportedError):
                runtime.ModelRunner(path)
            with open(path, "r+b") as f:
                f.seek(100)
                f.write(b"\xff" * 64)
            with self.assertRaises(poprt.PoprtError) as e:
                runtime.Runner(path)
            self.assertIn("mlp.popef", str(e.exception))

    def test_outputs_given(self):
        r = runtime.Runner(MLP)
        y = np.zeros((1, 10), dtype=np.float32)
        x = rand(1, 16, seed=2)
        out = r.run({"x": x}, outputs={"y": y})
        self.assertIs(out["y"], y)
        np.testing.assert_allclose(y, mlp_ref(x), atol=ATOL)
        with self.assertRaises(poprt.ShapeMismatchError) as e:
            r.run({"x": x}, outputs={"y": np.zeros((1, 10))})
        self.assertIn("'y'", str(e.exception))
        d = {"y": y}
        r.execute({"x": rand(1, 16, seed=9)}, d)
        np.testing.assert_allclose(d["y"], mlp_ref(rand(1, 16, seed=9)), atol=ATOL)

    def test_input_errors(self):
        r = runtime.Runner(MLP)
        with self.assertRaises(poprt.NotFoundError) as e:
            r.run({"nope": rand(1, 16)})
        self.assertIn("'nope'", str(e.exception))
        with self.assertRaises(poprt.ShapeMismatchError) as e:
            r.run({"x": rand(1, 16).astype(np.float64)})
        self.assertIn("'x'", str(e.exception))
        self.assertIn("float64", str(e.exception))
        with self.assertRaises(poprt.ShapeMismatchError) as e:  # the library's own check
            r.run({"x": rand(2, 16)})
        self.assertIn("x", e.exception.message)
        self.assertEqual(e.exception.status, 8)
        with self.assertRaises(poprt.NotFoundError) as e:  # the library: missing input
            r.run({})
        self.assertIn("x", e.exception.message)
        # lists and scalars are converted to the input's dtype
        np.testing.assert_allclose(r.run({"x": [[0.5] * 16]})["y"],
                                   mlp_ref(np.full((1, 16), 0.5, np.float32)), atol=ATOL)

    def test_copies(self):
        r = runtime.Runner(MLP_DYN)
        x = rand(4, 16)
        r.run({"x": x})
        self.assertEqual(r.input_copies, 0)
        xt = np.asfortranarray(x)
        np.testing.assert_allclose(r.run({"x": xt})["y"], mlp_ref(x), atol=ATOL)
        self.assertEqual(r.input_copies, 1)
        raw = np.zeros(4 * 16 * 4 + 1, np.uint8)  # a float32 view at an odd address
        odd = raw[1:].view(np.float32).reshape(4, 16)
        odd[...] = x
        self.assertFalse(odd.flags.aligned)
        np.testing.assert_allclose(r.run({"x": odd})["y"], mlp_ref(x), atol=ATOL)
        self.assertEqual(r.input_copies, 2)
        self.assertEqual(r.stats()["requests"], 3)

    def test_async_many(self):
        r = runtime.Runner(MLP_DYN, {"async_workers": 2})
        xs = [rand(i % 5 + 1, 16, seed=i) for i in range(64)]
        futs = [r.run_async({"x": x}) for x in xs]
        for x, f in zip(xs, futs):
            self.assertIsInstance(f, concurrent.futures.Future)
            np.testing.assert_allclose(f.result(timeout=60)["y"], mlp_ref(x), atol=ATOL)
        bad = r.run_async({"x": rand(2, 17)})
        with self.assertRaises(poprt.ShapeMismatchError) as e:
            bad.result(timeout=60)
        self.assertIn("x", str(e.exception))
        self.assertEqual(r.stats()["failed"], 1)
        self.assertFalse(futs[0].cancel())  # completed: too late

    def test_model_runner_batching(self):
        with runtime.ModelRunner(MLP_DYN, {"max_batch": 8, "replicas": 2,
                                           "batch_timeout_us": 2000}) as r:
            xs = [rand(1, 16, seed=100 + i) for i in range(100)]
            futs = [r.run_async({"x": x}) for x in xs]
            for x, f in zip(xs, futs):
                np.testing.assert_allclose(f.result(timeout=60)["y"], mlp_ref(x), atol=ATOL)
            y = r.run({"x": rand(3, 16)})["y"]
            np.testing.assert_allclose(y, mlp_ref(rand(3, 16)), atol=ATOL)
            s = r.stats()
            self.assertEqual(s["requests"], 101)
            self.assertEqual(s["failed"], 0)
            self.assertGreater(s["mean_batch"], 1.0)  # requests were batched
            with self.assertRaises(poprt.ShapeMismatchError) as e:  # more rows than max_batch
                r.run({"x": rand(9, 16)})
            self.assertIn("x", str(e.exception))
        with self.assertRaises(poprt.InvalidOptionError):
            runtime.ModelRunner(MLP_DYN, {"max_batch": "x"})

    def test_model_runner_queue(self):
        """Host-driven runner (nothing runs until work()): a full queue, a
        cancel, a deadline, each with its own exception."""
        r = runtime.ModelRunner(MLP_DYN, {"host_threads": 1, "queue_size": 2, "replicas": 1})
        try:
            x = rand(1, 16, seed=11)
            first = r.run_async({"x": x})
            late = r.run_async({"x": x}, deadline_us=1)
            with self.assertRaises(poprt.QueueFullError) as e:
                r.run_async({"x": x})
            self.assertEqual(e.exception.status, 16)
            self.assertTrue(first.cancel())
            self.assertTrue(first.cancelled())
            with self.assertRaises(concurrent.futures.CancelledError):
                first.result(timeout=0)
            ok = r.run_async({"x": x})
            time.sleep(0.01)  # past late's deadline
            while r.work(0):
                pass
            with self.assertRaises(poprt.TimeoutError) as e:
                late.result(timeout=0)
            self.assertTrue(e.exception.message)
            np.testing.assert_allclose(ok.result(timeout=0)["y"], mlp_ref(x), atol=ATOL)
            self.assertFalse(r.work(1000))  # nothing queued: times out
            self.assertEqual(r.stats()["failed"], 2)  # the cancelled and the late one
        finally:
            r.close()

    def test_model_runner_pack(self):
        """Packing options pass through: requests of 1..24 tokens packed into
        rows of bert_tiny get what they get run alone padded to 24 tokens,
        within 1e-4 + 1e-4 |solo| (docs/runtime.md, test_pack.c's bound)."""
        bert = os.path.join(DATA, "bert_tiny.onnx")
        solo = runtime.Runner(bert, {"input_shape": {n: (1, 24) for n in
                                                     ("input_ids", "attention_mask",
                                                      "token_type_ids")}})
        rng = np.random.default_rng(4)
        lengths = [1, 5, 24, 7, 12, 3, 18, 9]
        reqs = [{"input_ids": rng.integers(0, 32, (1, n)), "token_type_ids":
                 np.zeros((1, n), np.int64)} for n in lengths]
        with runtime.ModelRunner(bert, {"pack": 1, "pack_max_rows": 4, "replicas": 1}) as r:
            futs = [r.run_async(q) for q in reqs]
            for n, q, f in zip(lengths, reqs, futs):
                got = f.result(timeout=60)
                padded = {k: np.pad(v, ((0, 0), (0, 24 - n))) for k, v in q.items()}
                padded["attention_mask"] = (np.arange(24) < n).astype(np.int64)[None]
                want = solo.run(padded)
                self.assertEqual(got["last_hidden_state"].shape, (1, n, 8))
                for k, w in (("last_hidden_state", want["last_hidden_state"][:, :n]),
                             ("pooler_output", want["pooler_output"])):
                    np.testing.assert_allclose(got[k], w, rtol=1e-4, atol=1e-4, err_msg=k)
            self.assertLess(r.stats()["batches"], len(lengths))  # requests shared runs

    def test_threads(self):
        """4 Python threads running one Runner give the sequential results."""
        r = runtime.Runner(MLP_DYN)
        xs = [rand(2, 16, seed=i) for i in range(40)]
        want = [r.run({"x": x})["y"] for x in xs]
        got = [None] * len(xs)

        def work(k):
            for i in range(k, len(xs), 4):
                got[i] = r.run({"x": xs[i]})["y"]

        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        for a, b in zip(want, got):
            np.testing.assert_array_equal(a, b)

    def test_async_from_threads(self):
        """4 Python threads submitting to one ModelRunner at once: every
        future gets its own rows."""
        with runtime.ModelRunner(MLP_DYN, {"max_batch": 4, "replicas": 2}) as r:
            results = {}

            def submit(k):
                futs = [(i, r.run_async({"x": rand(1, 16, seed=1000 * k + i)}))
                        for i in range(50)]
                results[k] = [(i, f.result(timeout=60)["y"]) for i, f in futs]

            ts = [threading.Thread(target=submit, args=(k,)) for k in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            for k in range(4):
                for i, y in results[k]:
                    np.testing.assert_allclose(y, mlp_ref(rand(1, 16, seed=1000 * k + i)),
                                               atol=ATOL)
            self.assertEqual(r.stats()["requests"], 200)

    def test_exit_with_requests_in_flight(self):
        """An interpreter that exits with queued requests and log messages
        still to come exits cleanly (the runners are closed at exit)."""
        code = ("import numpy as np, poprt\n"
                "from poprt import runtime\n"
                "poprt.set_log_level('DEBUG')\n"
                "r = runtime.ModelRunner(%r, {'max_batch': 2})\n"
                "s = runtime.Runner(%r, {'async_workers': 2})\n"
                "fs = [r.run_async({'x': np.ones((1, 16), np.float32)}) for _ in range(200)]\n"
                "gs = [s.run_async({'x': np.ones((1, 16), np.float32)}) for _ in range(200)]\n"
                "print('submitted')\n" % (MLP_DYN, MLP_DYN))
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(poprt.__file__)),
                   POPRT_LIBRARY=os.path.abspath(poprt.library_path))
        p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr[-2000:])
        self.assertEqual(p.stdout.strip(), "submitted")
        self.assertNotIn("Traceback", p.stderr)
        self.assertNotIn("Exception ignored", p.stderr)

    def test_logging(self):
        poprt.set_log_level("INFO")
        try:
            with self.assertLogs("poprt", level="INFO") as cm:
                r = runtime.Runner(MLP, {"profile": 1})
                r.run({"x": rand(1, 16)})
                r.close()  # the profile goes to the log when the session is freed
            self.assertTrue(any("Gemm" in line for line in cm.output), cm.output)
        finally:
            poprt.set_log_level("WARNING")


SCALE_CALLS = []


@poprt.register_op("com.example", "Scale")
def scale_op(x, *, attrs):
    """com.example.Scale (tests/data/custom_op.onnx) computed in Python."""
    if np.isnan(x).any():
        raise ValueError("Scale got a NaN")
    SCALE_CALLS.append((x.__array_interface__["data"][0], attrs.node_name))
    return x * np.float32(attrs.float("factor", 1.0))


class TestCustomOp(unittest.TestCase):
    def test_python_op_and_zero_copy(self):
        r = runtime.Runner(CUSTOM, {"input_shape.x": "3,4"})
        x = rand(3, 4, seed=7)
        SCALE_CALLS.clear()
        y = r.run({"x": x})["y"]
        np.testing.assert_array_equal(y, np.maximum(x * np.float32(3), 0))  # exact
        # the operator read the caller's array in place: no copy on the way
        self.assertEqual(SCALE_CALLS, [(x.ctypes.data, "scale")])
        self.assertEqual(r.input_copies, 0)
        # later runs rebind every buffer in one call (poprt_session_run_buffers):
        # each run reads its own array in place and writes a new result
        for seed in (8, 9):
            x2 = rand(3, 4, seed=seed)
            SCALE_CALLS.clear()
            y2 = r.run({"x": x2})["y"]
            np.testing.assert_array_equal(y2, np.maximum(x2 * np.float32(3), 0))
            self.assertEqual(SCALE_CALLS, [(x2.ctypes.data, "scale")])
            self.assertIsNot(y2, y)
        np.testing.assert_array_equal(y, np.maximum(x * np.float32(3), 0))  # kept
        self.assertEqual(r.input_copies, 0)
        xt = np.asfortranarray(x)
        SCALE_CALLS.clear()
        r.run({"x": xt})
        self.assertNotEqual(SCALE_CALLS[0][0], xt.ctypes.data)  # one copy, counted
        self.assertEqual(r.input_copies, 1)

    def test_python_op_error(self):
        r = runtime.Runner(CUSTOM, {"input_shape.x": "1,4"})
        with self.assertRaises(poprt.RunError) as e:
            r.run({"x": np.array([[1, np.nan, 2, 3]], dtype=np.float32)})
        self.assertIn("Scale got a NaN", str(e.exception))
        self.assertIn("scale", str(e.exception))
        with self.assertRaises(poprt.InvalidArgumentError):
            poprt.register_op("com.example", "Scale")(scale_op)


try:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError:
    onnx = None


@unittest.skipUnless(onnx is not None, "the onnx package (python3-onnx) is absent")
class TestOnnxModels(unittest.TestCase):
    """Sequence, optional and string values, ModelProto objects (models
    built with the onnx package)."""

    @staticmethod
    def build(nodes, inputs, outputs):
        graph = helper.make_graph(nodes, "values", inputs, outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        return model

    def test_int8_reduce_range(self):
        # int8_reduce_range: every int8 weight within [-63, 63], a column's
        # largest magnitude at 63 (8 bits: 127); the check passes
        spans = []
        for rr in (False, True):
            conv = converter.Converter(convert_version=None, precision="int8",
                                       int8_reduce_range=rr, check=True)
            out = conv.convert(MLP).to_onnx()
            ws = [numpy_helper.to_array(t) for t in out.graph.initializer
                  if t.data_type == TensorProto.INT8 and np.prod(t.dims) > 1]
            self.assertTrue(ws)
            spans.append(max(int(np.abs(w.astype(np.int32)).max()) for w in ws))
            self.assertEqual([r.state for r in conv.results
                              if r.name == "check_with_fake_data"], ["unchanged"])
        self.assertEqual(spans, [127, 63])
        with self.assertRaises(ValueError):
            converter.Converter(precision="fp16", int8_reduce_range=True)

    def test_sequence(self):
        seq_in = helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, [None])
        model = self.build(
            [helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
             helper.make_node("SequenceLength", ["s"], ["n"]),
             helper.make_node("Identity", ["s"], ["s2"])],
            [seq_in],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None]),
             helper.make_tensor_value_info("n", TensorProto.INT64, []),
             helper.make_tensor_sequence_value_info("s2", TensorProto.FLOAT, [None])])
        r = runtime.Runner(model)
        self.assertEqual(r.inputs[0].kind, "sequence")
        parts = [np.arange(3, dtype=np.float32), np.array([7, 8], np.float32)]
        out = r.run({"s": parts})
        np.testing.assert_array_equal(out["y"], np.concatenate(parts))
        self.assertEqual(int(out["n"]), 2)
        self.assertEqual(len(out["s2"]), 2)
        np.testing.assert_array_equal(out["s2"][1], parts[1])
        with self.assertRaises(TypeError):
            r.run({"s": parts[0]})

    def test_strings(self):
        model = self.build(
            [helper.make_node("StringNormalizer", ["t"], ["u"], case_change_action="UPPER"),
             helper.make_node("Identity", ["t"], ["same"])],
            [helper.make_tensor_value_info("t", TensorProto.STRING, [3])],
            [helper.make_tensor_value_info("u", TensorProto.STRING, [3]),
             helper.make_tensor_value_info("same", TensorProto.STRING, [3])])
        r = runtime.Runner(model)
        out = r.run({"t": np.array(["abc", "Déjà", ""], dtype=object)})
        self.assertEqual(out["same"].tolist(), ["abc", "Déjà", ""])
        self.assertEqual(out["u"][0], "ABC")
        self.assertEqual(r.run({"t": ["x", "y", "z"]})["same"].tolist(), ["x", "y", "z"])

    def test_model_proto(self):
        """A ModelProto in, a ModelProto out (PopRT's convert and run)."""
        proto = onnx.load(MLP)
        out = converter.Converter(convert_version=12).convert(proto)
        self.assertIsInstance(out, onnx.ModelProto)
        self.assertEqual([o.version for o in out.opset_import if o.domain == ""], [12])
        again = poprt.PassManager(["eliminate_identity"]).run(out)
        self.assertIsInstance(again, onnx.ModelProto)
        self.assertEqual(poprt.Model(MLP).to_onnx().graph.output[0].name, "y")
        x = rand(1, 16)
        np.testing.assert_allclose(runtime.Runner(out).run({"x": x})["y"], mlp_ref(x),
                                   atol=ATOL)

    def test_python_op_infer(self):
        """A Python operator with two outputs typed by its infer function,
        reading int and string attributes."""
        def infer(infos, attrs):
            self.assertEqual(infos[0].dtype, "float")
            return [(np.float32, infos[0].shape), (np.int64, [])]

        @poprt.register_op("com.pytest", "ScaleCount", num_outputs=(2, 2), infer=infer)
        def scale_count(x, *, attrs):
            k = attrs.int("k", 1)
            if attrs.string("mode") == "neg":
                k = -k
            return x * np.float32(k), np.array(x.size, dtype=np.int64)

        node = helper.make_node("ScaleCount", ["x"], ["y", "n"], domain="com.pytest", k=4,
                                mode="neg")
        graph = helper.make_graph(
            [node], "pyop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
             helper.make_tensor_value_info("n", TensorProto.INT64, [])])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.pytest", 1)])
        model.ir_version = 8
        m = poprt.Model(model)
        self.assertEqual(m.outputs[1].dtype, "int64")
        x = rand(2, 3)
        out = runtime.Runner(m).run({"x": x})
        np.testing.assert_array_equal(out["y"], x * np.float32(-4))
        self.assertEqual(int(out["n"]), 6)

    def test_optional(self):
        opt = helper.make_value_info("o", helper.make_optional_type_proto(
            helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))
        opt_out = helper.make_value_info("o2", helper.make_optional_type_proto(
            helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))
        model = self.build(
            [helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("Identity", ["o"], ["o2"])], [opt],
            [helper.make_tensor_value_info("has", TensorProto.BOOL, []), opt_out])
        r = runtime.Runner(model)
        self.assertEqual(r.inputs[0].kind, "optional")
        out = r.run({"o": np.array([1, 2], np.float32)})
        self.assertTrue(bool(out["has"]))
        np.testing.assert_array_equal(out["o2"], [1, 2])
        out = r.run({"o": None})
        self.assertFalse(bool(out["has"]))
        self.assertIsNone(out["o2"])


SHARED_MODELS = os.path.join(ROOT, "..", "shared", "models")


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def read_tensor_pb(path):
    """A serialized onnx.TensorProto with raw_data (shared/models' .pb files)
    as a NumPy array: fields dims (1), data_type (2), raw_data (9)."""
    with open(path, "rb") as f:
        b = f.read()
    dims, dtype, raw, i = [], 0, b"", 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
        elif wire == 2:
            n, i = _varint(b, i)
            chunk, i = b[i:i + n], i + n
            if field == 1:  # packed dims
                k = 0
                while k < len(chunk):
                    v, k = _varint(chunk, k)
                    dims.append(v)
            elif field == 9:
                raw = chunk
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
    want = poprt.TensorInfo("", "", None, "tensor", dtype).numpy_dtype
    return np.frombuffer(raw, dtype=want).reshape(dims).copy()


@unittest.skipUnless(os.path.isdir(SHARED_MODELS), "../shared/models is absent")
class TestSharedModels(unittest.TestCase):
    def test_convert_and_run(self):
        """Every shared model, converted by the default pipeline and run from
        Python, matches ONNX Runtime's outputs within the folder's tolerance
        (|got - want| <= 1e-5 + 1e-3 |want|); the unconverted model gives
        the same outputs within it too."""
        ran = 0
        for name in sorted(os.listdir(SHARED_MODELS)):
            folder = os.path.join(SHARED_MODELS, name)
            path = os.path.join(folder, "model.onnx")
            data = os.path.join(folder, "test_data_set_0")
            if not os.path.isfile(path) or not os.path.isdir(data):
                continue
            with self.subTest(model=name):
                plain = runtime.Runner(path)
                names = [i.name for i in plain.inputs]
                feeds = {n: read_tensor_pb(os.path.join(data, "input_%d.pb" % k))
                         for k, n in enumerate(names)}
                converted = runtime.Runner(converter.Converter().convert(path))
                for runner in (plain, converted):
                    got = runner.run(feeds)
                    for k, out in enumerate(runner.outputs):
                        want = read_tensor_pb(os.path.join(data, "output_%d.pb" % k))
                        g = got[out.name]
                        self.assertEqual(g.shape, want.shape, out.name)
                        if want.dtype.kind == "f":
                            np.testing.assert_allclose(g, want, rtol=1e-3, atol=1e-5,
                                                       err_msg="%s %s" % (name, out.name))
                        else:
                            np.testing.assert_array_equal(g, want)
                ran += 1
        self.assertGreater(ran, 0)


class TestDocs(unittest.TestCase):
    def test_python_md(self):
        """Every example of docs/python.md runs and prints what it shows (in a
        fresh interpreter: the examples register an operator and a pass)."""
        script = ("import doctest, sys\n"
                  "r = doctest.testfile(sys.argv[1], module_relative=False,\n"
                  "    globs={'DATA': sys.argv[2]}, report=True,\n"
                  "    optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)\n"
                  "print('attempted', r.attempted, 'failed', r.failed)\n"
                  "sys.exit(1 if r.failed or r.attempted < 20 else 0)\n")
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(poprt.__file__)),
                   POPRT_LIBRARY=os.path.abspath(poprt.library_path))
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([sys.executable, "-c", script,
                                os.path.join(ROOT, "docs", "python.md"), DATA],
                               cwd=d, env=env, capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    unittest.main(verbosity=2)
