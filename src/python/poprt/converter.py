"""poprt.converter: converting ONNX models as ``poprt -i MODEL`` does
(docs/cli.md, "The pipeline and its summary"), from Python.

.. code-block:: python

    from poprt.converter import Converter
    conv = Converter(convert_version=11, precision="fp16", input_shape={"x": [4, 16]})
    model = conv.convert("mlp_dynamic.onnx")   # a poprt.Model
    model.save("mlp.fp16.onnx")
"""

from __future__ import annotations

import logging
import os
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .errors import PoprtError
from .model import Model, ModelSource
from .passes import PassManager, PassSpec, format_args, get_registered_passes

__all__ = ["Converter", "DEFAULT_PASSES", "PassResult"]

logger = logging.getLogger("poprt")

# The CLI's default passes (src/convert.c, cli_default_passes), run after
# convert_version when no passes are named; tests/python checks the copy.
DEFAULT_PASSES: Tuple[str, ...] = (
    "shape_inference",
    "eliminate_identity", "eliminate_nop_cast", "eliminate_nop_reshape",
    "eliminate_nop_transpose", "eliminate_nop_expand", "eliminate_nop_flatten",
    "eliminate_nop_pad", "eliminate_nop_arithmetic", "eliminate_nop_if",
    "fuse_consecutive_cast", "fuse_consecutive_reshape", "fuse_consecutive_transpose",
    "fuse_consecutive_squeeze", "fuse_consecutive_unsqueeze", "constant_folding",
    "fuse_bn_into_conv", "fuse_bn_into_gemm", "layer_norm_pattern",
    "erf_gelu_pattern", "gelu_pattern", "fused_attention",
    "eliminate_deadend", "eliminate_unused_initializer",
    "eliminate_duplicate_initializer",
)


@dataclass
class PassResult:
    """What one step of a conversion did: ``state`` is "changed",
    "unchanged", "skipped" (by ``skip_passes``) or "failed" (a default pass
    that failed and was skipped; ``error`` says why)."""

    name: str
    args: Optional[str]
    state: str
    error: str = ""


@dataclass
class _Step:
    name: str
    args: Optional[str]
    optional: bool  # a default pass: a failure is reported and skipped


PRECISIONS = ("fp32", "fp16", "fp8", "fp8_weight", "int8", "int8_static", "bf16")


class Converter:
    """The conversion pipeline (PopRT's ``poprt.converter.Converter``).

    Steps, each its own pass-manager run, in this order: input shapes
    (``input_shape`` {name: dims}, ``batch_size`` on ``batch_axis``);
    ``convert_version`` (not given: as the CLI, 11 is tried and the opset
    kept when the model cannot convert, and nothing is converted when
    ``used_passes`` is given; None keeps the opset; a version given that
    cannot be reached is an error); ``remove_outputs``,
    ``checkpoints``; ``used_passes`` (names, :class:`poprt.Pass` objects or
    ``(name, {args})``) or else the CLI's :data:`DEFAULT_PASSES`; the
    precision pass (``precision`` "fp32" (none), "fp16" with
    ``fp16_skip_op_types``, "fp8"/"fp8_weight" with ``fp8_skip_op_names``,
    ``fp8_params``, ``calibration_data``; "int8" (dynamic, float_to_int8),
    "int8_static" (QDQ calibrated on ``calibration_data``), both with
    ``int8_reduce_range`` (weights in 7 bits, the passes' reduce_range=1); "bf16": the
    model stays float32 and runs in bfloat16 where sessions set
    ``matmul_precision="bfloat16"``, with ``bf16_target_cosine`` pass
    bf16_fallback marks the nodes kept float32); ``check`` (pass
    check_with_fake_data against the input model, tolerance 1e-3 / 2e-2
    fp16 / 0.25 fp8 / 0.05 int8, as the CLI's --check). ``skip_passes`` skips any of them by name. A default
    pass that fails leaves the model as before it (logged as a warning and
    in :attr:`results`); a pass asked for that fails raises
    :class:`poprt.PassFailedError` (or the pass's status) with the
    library's message.
    """

    def __init__(self, *, input_shape: Optional[Mapping[str, Sequence[int]]] = None,
                 batch_size: Optional[int] = None, batch_axis: int = 0,
                 convert_version: Optional[int] = -1, precision: str = "fp32",
                 used_passes: Optional[Sequence[PassSpec]] = None,
                 skip_passes: Sequence[str] = (), remove_outputs: Sequence[str] = (),
                 checkpoints: Sequence[str] = (), fp16_skip_op_types: Sequence[str] = (),
                 fp8_skip_op_names: Sequence[str] = (),
                 fp8_params: Sequence[Union[str, float]] = ("F143", "F143", -1, -1),
                 calibration_data: Optional[str] = None, check: bool = False,
                 bf16_target_cosine: Optional[float] = None,
                 int8_reduce_range: bool = False) -> None:
        if precision not in PRECISIONS:
            raise ValueError("precision must be one of %s, not %r"
                             % (", ".join(PRECISIONS), precision))
        if int8_reduce_range and not precision.startswith("int8"):
            raise ValueError("int8_reduce_range needs precision='int8' or 'int8_static'")
        if bf16_target_cosine is not None and precision != "bf16":
            raise ValueError("bf16_target_cosine needs precision='bf16'")
        self.input_shape = dict(input_shape or {})
        self.batch_size = batch_size
        self.batch_axis = batch_axis
        self.convert_version = convert_version
        self.precision = precision
        self.used_passes = list(used_passes) if used_passes is not None else None
        self.skip_passes = set(skip_passes)
        self.remove_outputs = list(remove_outputs)
        self.checkpoints = list(checkpoints)
        self.fp16_skip_op_types = list(fp16_skip_op_types)
        self.fp8_skip_op_names = list(fp8_skip_op_names)
        self.fp8_params = list(fp8_params)
        self.calibration_data = calibration_data
        self.check = check
        self.bf16_target_cosine = bf16_target_cosine
        self.int8_reduce_range = int8_reduce_range
        self.results: List[PassResult] = []

    def _rr(self) -> Optional[int]:
        return 1 if self.int8_reduce_range else None

    # ---------------------------------------------------------- the steps

    def _steps(self, origin: Optional[str]) -> List[_Step]:
        steps: List[_Step] = []
        if self.convert_version == -1:  # not given: as the CLI without --convert_version
            if self.used_passes is None:
                steps.append(_Step("convert_version", "version=11", True))
        elif self.convert_version is not None:
            steps.append(_Step("convert_version", "version=%d" % self.convert_version, False))
        if self.remove_outputs:
            steps.append(_Step("remove_outputs", format_args(outputs=self.remove_outputs), False))
        if self.checkpoints:
            steps.append(_Step("add_checkpoints", format_args(checkpoints=self.checkpoints),
                               False))
        if self.used_passes is not None:
            pm_specs = PassManager(self.used_passes).passes  # checks the names now
            steps.extend(_Step(p.name, p.args, False) for p in pm_specs)
        else:
            known = get_registered_passes()
            steps.extend(_Step(p, None, True) for p in DEFAULT_PASSES if p in known)
        if self.precision == "fp16":
            steps.append(_Step("float_to_half", format_args(
                skip_op_types=self.fp16_skip_op_types, data=self.calibration_data), False))
        elif self.precision.startswith("fp8"):
            steps.append(_Step("float_to_fp8", format_args(
                mode=self.precision, fp8_params=self.fp8_params,
                skip_op_names=self.fp8_skip_op_names, calibration=self.calibration_data),
                False))
        elif self.precision == "int8":
            steps.append(_Step("float_to_int8", format_args(reduce_range=self._rr()), False))
        elif self.precision == "int8_static":
            steps.append(_Step("float_to_int8_static", format_args(
                data=self.calibration_data, reduce_range=self._rr()), False))
        elif self.precision == "bf16" and self.bf16_target_cosine is not None:
            steps.append(_Step("bf16_fallback", format_args(
                target_cosine=self.bf16_target_cosine, calibration=self.calibration_data), False))
        if self.check:
            tol = {"fp16": "0.02", "fp8": "0.25", "fp8_weight": "0.25", "int8": "0.05",
                   "int8_static": "0.05"}.get(self.precision, "0.001")
            steps.append(_Step("check_with_fake_data",
                               format_args(origin=origin, tolerance=tol), False))
        return steps

    def _shapes(self, model: Model) -> None:
        for name, dims in self.input_shape.items():
            model.set_input_shape(name, dims)
        if self.batch_size is None:
            return
        for info in model.inputs:
            if info.kind != "tensor":
                continue
            if info.shape is None or self.batch_axis >= len(info.shape):
                raise ValueError("batch_size: input '%s' has no axis %d" % (info.name,
                                                                           self.batch_axis))
            dims = list(info.shape)
            dims[self.batch_axis] = self.batch_size
            if any(not isinstance(d, int) for d in dims):
                raise ValueError("batch_size: input '%s' has other unknown dims (%s); use "
                                 "input_shape" % (info.name, info.shape))
            model.set_input_shape(info.name, dims)

    # -------------------------------------------------------- conversion

    def convert(self, model: ModelSource) -> Any:
        """Converts a model (a Model is copied, never changed). Returns a
        :class:`poprt.Model` for a Model or a path, bytes for bytes, and an
        ``onnx.ModelProto`` for a ModelProto (PopRT's form)."""
        origin = os.fspath(model) if isinstance(model, (str, os.PathLike)) else None
        m = model.clone() if isinstance(model, Model) else Model(model)
        self._shapes(m)
        self.results = []
        with tempfile.TemporaryDirectory(prefix="poprt-convert-") as tmp:
            if self.check and origin is None:  # check_with_fake_data compares with a file
                origin = os.path.join(tmp, "origin.onnx")
                m.save(origin)
            self._run_steps(m, self._steps(origin))
        if isinstance(model, (Model, str, os.PathLike)):
            return m
        if isinstance(model, (bytes, bytearray, memoryview)):
            return m.to_bytes()
        return m.to_onnx()

    def _run_steps(self, m: Model, steps: List[_Step]) -> None:
        for step in steps:
            if step.name in self.skip_passes:
                self.results.append(PassResult(step.name, step.args, "skipped"))
                continue
            pm = PassManager()
            try:
                pm.add(step.name, step.args)
                pm.run(m)
                state = "changed" if pm.changed else "unchanged"
            except PoprtError as e:
                if not step.optional:
                    raise
                logger.warning("pass %s failed and was skipped: %s", step.name, e)
                self.results.append(PassResult(step.name, step.args, "failed", str(e)))
                continue
            finally:
                pm.close()
            self.results.append(PassResult(step.name, step.args, state))

    def summary(self) -> Dict[str, List[str]]:
        """The last conversion's pass names by state."""
        out: Dict[str, List[str]] = {}
        for r in self.results:
            out.setdefault(r.state, []).append(r.name)
        return out

