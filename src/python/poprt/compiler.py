"""poprt.compiler: compiling a model into an executable (a session's
program) and writing it as a ``.popef`` file.

.. code-block:: python

    from poprt import compiler
    opts = compiler.CompilerOptions(threads=2)
    exe = compiler.Compiler.compile("mlp.onnx", opts)
    compiler.Compiler.compile_and_export("mlp.onnx", "mlp.popef", opts)
"""

from __future__ import annotations

import os
from ctypes import c_void_p
from typing import Any, Dict, Iterator, List, Mapping, MutableMapping, Optional, Union

from ._lib import Handle, check, create, encode, lib, make_options
from ._types import TensorInfo, read_infos
from .model import ModelSource, as_model

__all__ = ["CompilerOptions", "Compiler", "Executable", "option_value"]


def option_value(v: Any) -> str:
    """An option's text: booleans are "1"/"0", sequences comma-separated
    ("input_shape.x": (1, 16) is "1,16")."""
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    return str(v)


class CompilerOptions(MutableMapping[str, str]):
    """Session and compile options (``poprt_options``: docs in
    include/poprt/poprt.h and docs/runtime.md), as a dict of strings.

    Keys: "threads", "batches_per_step", "anchors", "anchor.<output>",
    "input_shape.<input>", "optimize", "profile", "cache_dir",
    "matmul_precision", "conv_algorithm", the limits
    "max_nodes", "max_tensor_bytes", ...; for runners also "replicas",
    "max_batch", "pack", ... Values may be given as ints, bools or
    sequences (see :func:`option_value`). Each key and value is checked by
    the library when set: an unknown key or a malformed value raises
    :class:`poprt.InvalidOptionError` naming both. Keyword arguments whose
    names cannot hold a dot use ``input_shape={"x": [1, 16]}`` and
    ``anchor={"y": "Final"}``.
    """

    def __init__(self, values: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> None:
        self._values: Dict[str, str] = {}
        for source in (values or {}, kwargs):
            for k, v in source.items():
                if k in ("input_shape", "anchor") and isinstance(v, Mapping):
                    for name, inner in v.items():
                        self["%s.%s" % (k, name)] = inner
                else:
                    self[k] = v

    def __setitem__(self, key: str, value: Any) -> None:
        text = option_value(value)
        h = make_options({key: text}, "option")  # validates the pair now
        lib.poprt_options_free(h)
        self._values[key] = text

    def __getitem__(self, key: str) -> str:
        return self._values[key]

    def __delitem__(self, key: str) -> None:
        del self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return "CompilerOptions(%r)" % self._values



OptionsLike = Union[CompilerOptions, Mapping[str, Any], None]


def as_options(options: OptionsLike) -> CompilerOptions:
    return options if isinstance(options, CompilerOptions) else CompilerOptions(options or {})


class Executable(Handle):
    """A compiled model (``poprt_session``): kernels chosen, memory planned,
    weights prepared. Made by :meth:`Compiler.compile` or loaded from a
    ``.popef`` file with :meth:`load`; run it with
    :class:`poprt.runtime.Runner`. Thread safe for runs."""

    _free = "poprt_session_free"
    _what = "executable"

    def __init__(self, handle: c_void_p) -> None:
        self._h = handle

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"], options: OptionsLike = None
             ) -> "Executable":
        """Loads a ``.popef`` file (mapped: weights used in place). options
        may change "threads", "batches_per_step" and the anchors. A corrupt
        file raises ParseError, another format or version UnsupportedError."""
        return cls(create(lib.poprt_session_load, dict(as_options(options)),
                          encode(os.fspath(path))))

    @property
    def inputs(self) -> List[TensorInfo]:
        """Inputs as compiled (shapes fixed by the options)."""
        return read_infos(self.handle, lib.poprt_session_num_inputs, lib.poprt_session_input)

    @property
    def outputs(self) -> List[TensorInfo]:
        """Outputs as compiled."""
        return read_infos(self.handle, lib.poprt_session_num_outputs, lib.poprt_session_output)

    @property
    def batches_per_step(self) -> int:
        return int(lib.poprt_session_batches_per_step(self.handle))

    @property
    def arena_bytes(self) -> int:
        """Activation memory one concurrent run uses."""
        return int(lib.poprt_session_arena_bytes(self.handle))

    def export(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes the executable as a ``.popef`` file (written to a temporary
        name and renamed)."""
        check(lib.poprt_session_export(self.handle, encode(os.fspath(path))))

    def share(self, options: OptionsLike = None) -> "Executable":
        """Another executable running the same compiled program (no
        compilation; weights held once) with its own run options
        ("threads", "batches_per_step", anchors). Experimental C API
        (poprt_session_share)."""
        return Executable(create(lib.poprt_session_share, dict(as_options(options)),
                                 self.handle))


class Compiler:
    """Compiles models (PopRT's ``poprt.compiler.Compiler``)."""

    @staticmethod
    def compile(model: ModelSource, options: OptionsLike = None) -> Executable:
        """Compiles a model (a Model, an ONNX path, bytes or a ModelProto)
        with options. Raises InvalidOptionError, InvalidModelError,
        UnsupportedError, ShapeMismatchError with the library's message."""
        m = as_model(model)
        return Executable(create(lib.poprt_session_create, dict(as_options(options)), m.handle))

    @staticmethod
    def compile_and_export(model: ModelSource, path: Union[str, "os.PathLike[str]"],
                           options: OptionsLike = None) -> Executable:
        """Compiles and writes the executable to ``path`` (a ``.popef``
        file); returns the executable."""
        exe = Compiler.compile(model, options)
        exe.export(path)
        return exe


def is_executable(path: Union[str, "os.PathLike[str]"]) -> bool:
    """True when the file starts like a libpoprt executable (.popef)."""
    return bool(lib.poprt_file_is_executable(encode(os.fspath(path))))


