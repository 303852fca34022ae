"""snug: how much memory a model takes, before anything runs.

    >>> import snug
    >>> snug.plan("resnet50.onnx", dims={"batch": 8}).predicted_peak_bytes

plan() is `snugc plan`, compile() is `snugc compile`, both through the same
C++ libraries (compiler/Driver.h); Session runs a bundle on the host
executor (or CUDA) through the runtime's C API. snug.torch plans PyTorch
modules through an in-memory ONNX export. Every failure is a snug.Error
subclass with fields (UnsupportedOpError, BindingError, BudgetError,
OutOfMemoryError, BundleError, DeviceError).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from . import _snug
from ._errors import (BindingError, BudgetError, BundleError, DeviceError,
                      DriverVersionError, Error, InputValueError, OutOfMemoryError,
                      UnsupportedOpError, from_runtime_status, _RuntimeStatus)
from ._report import (BranchRun, FusionSummary, LiveTensor, MemoryReport,
                      RematSummary, OffloadSummary, StepBreakdown,
                      UnsupportedOp)

__version__ = _snug.version
__all__ = ["plan", "compile", "load", "Session", "Bundle", "TensorInfo",
           "Sizes", "MemoryReport", "LiveTensor", "FusionSummary", "RematSummary",
           "OffloadSummary", "StepBreakdown", "BranchRun",
           "UnsupportedOp", "Error",
           "UnsupportedOpError", "BindingError", "BudgetError",
           "OutOfMemoryError", "BundleError", "DeviceError",
           "DriverVersionError", "InputValueError",
           "parse_size"]

ModelLike = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]

# snugc's flags as keyword options (README, *snugc*).
_OPTIONS = {
    "planner": str,            # --planner
    "alignment": int,          # --alignment
    "time_limit": float,       # --time-limit (seconds)
    "schedule": bool,          # not --no-schedule
    "verify_plan": bool,       # --verify-plan
    "target": str,             # --target=cuda|host
    "arch": None,              # --arch: "sm_80,sm_90" or [80, 90]
    "cublas_workspace": int,   # --cublas-workspace
    "memory_budget": None,     # --memory-budget: bytes or "20GiB"
    "allow_micro_batches": bool,  # --allow-micro-batches
    "allow_offload": bool,     # --allow-offload
    "offload_bandwidth": float,  # --offload-bandwidth (GB/s)
    "precision": str,          # --precision=fp32|tf32|fp16|bf16
    "keep_fp32": str,          # --keep-fp32: "NAME,OP,..."
    "io_precision": str,       # --io-precision=model|lowered
    "passes": str,             # --passes
    "disable_pass": None,      # --disable-pass (str or list)
    "allow_external_data_outside_model_dir": bool,
}


def parse_size(size: Union[int, str], what: str = "size") -> int:
    """Bytes of `size`: an int, or a string as --memory-budget takes it
    (B, KiB, MiB, GiB, KB, MB, GB or plain bytes: "20GiB")."""
    if isinstance(size, bool):
        raise TypeError(f"{what}: a bool is not a size")
    if isinstance(size, int):
        if size < 0:
            raise Error(f"{what}: '{size}' is not a byte size")
        return size
    if isinstance(size, str):
        return _snug.parse_byte_size(size, what)
    raise TypeError(f"{what}: expected bytes as int or str, not "
                    f"{type(size).__name__}")


def _archs(arch: Union[str, Sequence[Union[int, str]]]) -> List[int]:
    items = arch.split(",") if isinstance(arch, str) else list(arch)
    result = []
    for item in items:
        text = str(item).strip()
        text = text[3:] if text.startswith("sm_") else text
        if not text.isdigit() or not 75 <= int(text) < 130:
            raise Error(f"--arch: '{item}' is not an architecture of the "
                        "form sm_XY with 75 <= XY < 130")
        result.append(int(text))
    if not result:
        raise Error("--arch: no architecture given")
    return sorted(set(result))


def _native_options(options: Mapping[str, Any]) -> Dict[str, Any]:
    native: Dict[str, Any] = {}
    for key, value in options.items():
        if key not in _OPTIONS:
            raise TypeError(f"unknown option '{key}' (snug takes "
                            f"{', '.join(sorted(_OPTIONS))})")
        if value is None:
            continue
        if key == "arch":
            native["archs"] = _archs(value)
        elif key == "memory_budget":
            native[key] = parse_size(value, "memory_budget")
        elif key == "disable_pass":
            native[key] = [value] if isinstance(value, str) else list(value)
        else:
            kind = _OPTIONS[key]
            if kind is int and (isinstance(value, bool)
                                or not isinstance(value, int)):
                raise TypeError(f"option '{key}' must be an int")
            native[key] = kind(value)
    return native


_DTYPE_NAMES = {"float32": "f32", "float16": "f16", "float64": "f64",
                "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8",
                "uint8": "u8", "uint16": "u16", "uint32": "u32",
                "uint64": "u64", "bool": "bool"}


def _input_bindings(inputs: Union[None, Mapping[str, Any], Sequence[str]]
                    ) -> List[str]:
    """--input strings from {name: shape} or {name: (shape, dtype)}."""
    if inputs is None:
        return []
    if not isinstance(inputs, Mapping):
        return [str(text) for text in inputs]
    bindings = []
    for name, spec in inputs.items():
        dtype = None
        if (isinstance(spec, tuple) and len(spec) == 2
                and not isinstance(spec[1], int)):
            spec, dtype = spec
        text = f"{name}:" + "x".join(str(int(d)) for d in spec)
        if dtype is not None:
            dtype_name = _DTYPE_NAMES.get(np.dtype(dtype).name, str(dtype))
            text += ("x" if len(spec) else "") + dtype_name
        bindings.append(text)
    return bindings


class _ModelFile:
    """A path for `model`: the file itself, or a temporary copy of bytes or
    an onnx.ModelProto."""

    def __init__(self, model: ModelLike, name: Optional[str]):
        self._directory = None
        if isinstance(model, (str, os.PathLike)):
            self.path = os.fspath(model)
            self.name = name or os.path.basename(self.path)
            return
        if hasattr(model, "SerializeToString"):
            model = model.SerializeToString()
        if not isinstance(model, (bytes, bytearray, memoryview)):
            raise TypeError("model must be a path, bytes or an "
                            f"onnx.ModelProto, not {type(model).__name__}")
        self.name = name or "model.onnx"
        self._directory = tempfile.TemporaryDirectory(prefix="snug-")
        self.path = os.path.join(self._directory.name, "model.onnx")
        with open(self.path, "wb") as file:
            file.write(model)

    def __enter__(self) -> "_ModelFile":
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._directory is not None:
            self._directory.cleanup()


def _plan(model: ModelLike, dims: Optional[Mapping[str, int]], inputs: Any,
          name: Optional[str], options: Mapping[str, Any]) -> Any:
    native = _native_options(options)
    with _ModelFile(model, name) as file:
        return _snug.plan_model(file.path, file.name, _input_bindings(inputs),
                                {str(k): int(v) for k, v in
                                 (dims or {}).items()}, native)


def _report(planned: Any) -> MemoryReport:
    return MemoryReport._from_json(planned.report_json(),
                                   planned.report_pretty(), planned)


def plan(model: ModelLike, dims: Optional[Mapping[str, int]] = None,
         inputs: Union[None, Mapping[str, Any], Sequence[str]] = None, *,
         name: Optional[str] = None, **options: Any) -> MemoryReport:
    """The memory report of `model` (a path, bytes or an onnx.ModelProto),
    as `snugc plan --memory-report=json` gives it.

    dims binds symbolic dims ({"batch": 8}, --dim); inputs binds input
    shapes ({"x": (1, 3, 224, 224)} or {"x": ((1, 3, 224, 224), "float16")},
    --input). options mirror snugc's flags: planner, alignment, time_limit,
    schedule, verify_plan, target, arch, cublas_workspace, memory_budget
    ("20GiB": a BudgetError when the predicted peak is over it),
    allow_micro_batches (with a budget remat cannot meet), allow_offload
    and offload_bandwidth (GB/s: values may wait in pinned host memory
    where moving them is cheaper than recomputing them), passes,
    disable_pass. `name` heads the report (default: the file name, or
    model.onnx)."""
    return _report(_plan(model, dims, inputs, name, options))


@dataclass(frozen=True)
class TensorInfo:
    """A graph input or output of a bundle."""
    name: str
    dtype: Optional[np.dtype]  # None for bf16 (no numpy type)
    shape: Tuple[int, ...]
    bytes: int
    arena_offset: int


@dataclass(frozen=True)
class Sizes:
    """snug_sizes: what a session allocates (runtime/include/snug/snug.h)."""
    arena: int
    alignment: int
    weights: int
    io: int
    lower_bound: int
    device_arena: int
    workspace: int


_NUMPY_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16,
                 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
                 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def _tensor_info(record: Dict[str, Any]) -> TensorInfo:
    dtype = _NUMPY_DTYPES.get(record["dtype"])
    return TensorInfo(record["name"], np.dtype(dtype) if dtype else None,
                      tuple(record["shape"]), record["bytes"],
                      record["arena_offset"])


class Bundle:
    """A compiled bundle (.snug): its inputs, outputs and sizes.

    From load(path), or compile(): then `report` is the compile's memory
    report, and a bundle compiled in memory (no output path) keeps its
    bytes (to_bytes(), save())."""

    def __init__(self, path: str, *, report: Optional[MemoryReport] = None,
                 data: Optional[bytes] = None, _display: Optional[str] = None):
        self.path: Optional[str] = None if data is not None else path
        try:
            self._native = _snug.Bundle(path)
        except _RuntimeStatus as failure:
            raise from_runtime_status(failure, path=path,
                                      loading=True) from None
        self.inputs: List[TensorInfo] = [_tensor_info(r)
                                         for r in self._native.inputs()]
        self.outputs: List[TensorInfo] = [_tensor_info(r)
                                          for r in self._native.outputs()]
        self.sizes = Sizes(**self._native.sizes())
        self.pipeline: str = self._native.pipeline()
        self.compiler_version: str = self._native.compiler_version()
        self.report = report
        self._data = data

    def to_bytes(self) -> bytes:
        if self._data is not None:
            return self._data
        with open(self.path, "rb") as file:
            return file.read()

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        _write_atomically(os.fspath(path), self.to_bytes())

    def __repr__(self) -> str:
        where = self.path or "in memory"
        return (f"<snug.Bundle {where}: {len(self.inputs)} inputs, "
                f"{len(self.outputs)} outputs, arena {self.sizes.arena} B, "
                f"weights {self.sizes.weights} B>")


def _write_atomically(path: str, data: bytes) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    fd, scratch = tempfile.mkstemp(prefix=".snug-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.replace(scratch, path)
    except BaseException:
        if os.path.exists(scratch):
            os.unlink(scratch)
        raise


def compile(model: ModelLike, output: Union[None, str, "os.PathLike[str]"] = None,
            dims: Optional[Mapping[str, int]] = None,
            inputs: Union[None, Mapping[str, Any], Sequence[str]] = None, *,
            name: Optional[str] = None, **options: Any) -> Bundle:
    """Compiles `model` as `snugc compile` does, into a bundle written to
    `output` (atomically) or kept in memory; options as for plan(). With
    target="cuda" (the default where snug was built with NVRTC) the bundle
    carries the kernels for `arch` too."""
    planned = _plan(model, dims, inputs, name, options)
    report = _report(planned)
    data = planned.bundle_bytes()
    if output is not None:
        path = os.fspath(output)
        _write_atomically(path, data)
        return Bundle(path, report=report)
    with tempfile.TemporaryDirectory(prefix="snug-") as directory:
        path = os.path.join(directory, "model.snug")
        with open(path, "wb") as file:
            file.write(data)
        # The runtime maps the file; the mapping outlives the name.
        return Bundle(path, report=report, data=data)


def load(path: Union[str, "os.PathLike[str]"]) -> Bundle:
    """Loads a bundle; a BundleError names what is wrong with it."""
    return Bundle(os.fspath(path))


def _as_array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        if hasattr(value, "detach"):  # torch: no autograd across DLPack
            value = value.detach()
        try:
            return np.from_dlpack(value)
        except (BufferError, RuntimeError, TypeError) as error:
            raise BindingError(f"input '{name}' cannot be read on the host "
                               f"through DLPack ({error}); give a CPU "
                               "array", input=name) from None
    return np.asarray(value)


class Session:
    """A bundle ready to run on `device` ("host" or "cuda"), in one arena of
    the planned size (its own, or `arena`: a writable buffer of at least
    sizes.arena bytes aligned to min(sizes.alignment, 64) on the host; a
    device pointer as an int, to sizes.device_arena bytes, for CUDA).

    run({name: array}) takes numpy arrays or anything with __dlpack__ (a
    torch CPU tensor is read without a copy) and returns numpy arrays, which
    torch.from_dlpack takes without a copy."""

    def __init__(self, bundle: Union[Bundle, str, "os.PathLike[str]"],
                 device: str = "host", arena: Any = None):
        if not isinstance(bundle, Bundle):
            bundle = load(bundle)
        if device not in ("host", "cuda"):
            raise Error(f"device must be 'host' or 'cuda', not '{device}'")
        self.bundle = bundle
        self.device = device
        pointer, size, owner = 0, 0, None
        if arena is not None:
            if device == "host":
                view = np.frombuffer(arena, dtype=np.uint8) \
                    if not isinstance(arena, np.ndarray) else arena
                if not view.flags.c_contiguous or not view.flags.writeable:
                    raise Error("arena must be a writable contiguous buffer")
                pointer, size, owner = view.ctypes.data, view.nbytes, view
            else:
                pointer, size = int(arena), bundle.sizes.device_arena
        sizes = bundle.sizes
        if device == "cuda":
            arena_part = 0 if arena is not None else sizes.device_arena
            required = sizes.weights + arena_part
            parts = [("weights", sizes.weights), ("arena", arena_part)]
        else:
            required = 0 if arena is not None else sizes.arena
            parts = [("arena", required)]
        try:
            self._native = _snug.Session(bundle._native,
                                         1 if device == "cuda" else 0,
                                         pointer, size, owner)
        except _RuntimeStatus as failure:
            raise from_runtime_status(failure, path=bundle.path,
                                      required=required,
                                      parts=parts) from None

    def run(self, inputs: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        """Runs once; every input must be given (the plan may reuse their
        memory, so they are copied in before every run)."""
        names = {info.name for info in self.bundle.inputs}
        for name in inputs:
            if name not in names:
                raise BindingError(f"'{name}' is not an input of the bundle "
                                   f"(inputs: {', '.join(sorted(names))})",
                                   input=name)
        try:
            for index, info in enumerate(self.bundle.inputs):
                if info.name not in inputs:
                    raise BindingError(f"input '{info.name}' is not given",
                                       input=info.name)
                self._native.set_input(index, self._prepare(info,
                                                            inputs[info.name]))
            self._native.run()
            outputs = {}
            for index, info in enumerate(self.bundle.outputs):
                if info.dtype is None:
                    raise Error(f"output '{info.name}' is bf16, which numpy "
                                "has no type for")
                array = np.empty(info.shape, dtype=info.dtype)
                self._native.get_output(index, array)
                outputs[info.name] = array
            return outputs
        except _RuntimeStatus as failure:
            raise from_runtime_status(failure) from None

    @staticmethod
    def _prepare(info: TensorInfo, value: Any) -> np.ndarray:
        given = isinstance(value, np.ndarray) or hasattr(value, "__dlpack__")
        array = _as_array(info.name, value)
        if info.dtype is None:
            raise Error(f"input '{info.name}' is bf16, which numpy has no "
                        "type for")
        if array.dtype != info.dtype:
            if given:
                raise BindingError(f"input '{info.name}' is {info.dtype}, "
                                   f"not {array.dtype}", input=info.name)
            array = array.astype(info.dtype)
        if array.shape != info.shape:
            dim = next((i for i, (a, b) in
                        enumerate(zip(array.shape, info.shape)) if a != b),
                       min(len(array.shape), len(info.shape)))
            raise BindingError(f"input '{info.name}' has shape "
                               f"{tuple(info.shape)}, not {array.shape}",
                               input=info.name, dim=dim)
        return np.ascontiguousarray(array)

    def memory(self) -> Dict[str, int]:
        """What the session allocated (snug_session_memory)."""
        return self._native.memory()

    @property
    def uses_cuda_graphs(self) -> bool:
        """Whether the session's runs replay a CUDA graph
        (snug_session_uses_cuda_graphs): never on the host, nor for a plan
        with branches."""
        return self._native.uses_cuda_graphs()


def __getattr__(name: str) -> Any:
    # snug.torch imports torch, so only on first use.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'snug' has no attribute '{name}'")
