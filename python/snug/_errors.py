"""snug's exceptions: every one a subclass of snug.Error, with fields.

The native module raises them with their fields set, from the compiler's
structured errors (compiler/onnx/OnnxImporter.h, compiler/Driver.h); runtime
failures arrive as _RuntimeStatus and are mapped here (from_runtime_status).
"""
from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple


class Error(Exception):
    """Any snug failure. `message` is the text snugc would print."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UnsupportedOpError(Error, NotImplementedError):
    """The model has ops snug does not import: all of them, in graph order.

    `ops` is a list of UnsupportedOp records (op_type, domain, opset, node);
    `op_types` the distinct op types, `nodes` the node names."""

    def __init__(self, message: str, ops: Sequence[dict] = ()):
        super().__init__(message)
        from ._report import UnsupportedOp
        self.ops: List[UnsupportedOp] = [UnsupportedOp(**op) for op in ops]

    @property
    def op_types(self) -> List[str]:
        return sorted({op.op_type for op in self.ops})

    @property
    def nodes(self) -> List[str]:
        return [op.node for op in self.ops]


class BindingError(Error, ValueError):
    """An input the bindings leave unsettled or contradict, or a binding
    that names nothing: which `input` (or None), which `dim` (its index, or
    None) and which symbolic dim `symbol` (or None)."""

    def __init__(self, message: str, input: Optional[str] = None,
                 dim: Optional[int] = None, symbol: Optional[str] = None):
        super().__init__(message)
        self.input = input
        self.dim = dim
        self.symbol = symbol


class BudgetError(Error):
    """The predicted peak is over `memory_budget`: the `budget`, the
    smallest `peak` rematerialization reached, what is live at the peak step (`live_at_peak`, LiveTensor
    records with their producers) and the whole `report`."""

    def __init__(self, message: str, budget: int = 0, peak: int = 0,
                 live_at_peak: Sequence[dict] = (), report_json: str = ""):
        super().__init__(message)
        from ._report import LiveTensor, MemoryReport
        self.budget = budget
        self.peak = peak
        self.live_at_peak: List[LiveTensor] = [LiveTensor(**t)
                                               for t in live_at_peak]
        self.report: Optional[MemoryReport] = (
            MemoryReport._from_json(report_json) if report_json else None)


class OutOfMemoryError(Error, MemoryError):
    """A session could not allocate what the bundle needs: `required`
    bytes, `free` bytes on the device (None when unknown, as on the host),
    and the `parts` of `required`, largest first, as (name, bytes)."""

    def __init__(self, message: str, required: int = 0,
                 free: Optional[int] = None,
                 parts: Sequence[Tuple[str, int]] = ()):
        super().__init__(message)
        self.required = required
        self.free = free
        self.parts = sorted(parts, key=lambda part: -part[1])


class BundleError(Error):
    """A bundle that cannot be read: missing, corrupt, truncated, a hash
    mismatch, a newer format. `path` and the runtime's `status` name."""

    def __init__(self, message: str, path: Optional[str] = None,
                 status: str = ""):
        super().__init__(message)
        self.path = path
        self.status = status


class DeviceError(Error):
    """No usable device for the session (e.g. no NVIDIA driver)."""


class DriverVersionError(DeviceError):
    """The CUDA driver is older than the one the bundle's kernels need:
    `required` and `driver` as CUDA versions ("12.0", "11.8")."""

    def __init__(self, message: str, required: Optional[str] = None,
                 driver: Optional[str] = None):
        super().__init__(message)
        self.required = required
        self.driver = driver


class InputValueError(Error, ValueError):
    """An input holds a value the bundle cannot take, found while running
    it: a cross-entropy label outside [0, C), an index past its dim. Which
    `input`, and where the message gives them, the bad `value` and its
    `position` (the element's flat index in the input), else None. A
    training step that raises it has left its state as it was."""

    def __init__(self, message: str, input: Optional[str] = None,
                 value: Optional[int] = None,
                 position: Optional[int] = None):
        super().__init__(message)
        self.input = input
        self.value = value
        self.position = position


class _RuntimeStatus(Exception):
    """A failed runtime C API call, raised by the native module."""

    def __init__(self, status: int, message: str):
        super().__init__(status, message)
        self.status = status
        self.message = message


_STATUS_NAMES = {1: "invalid argument", 2: "io", 3: "invalid bundle",
                 4: "unsupported", 5: "out of memory", 6: "no device",
                 7: "runtime", 8: "input not set", 9: "driver too old"}


def from_runtime_status(failure: _RuntimeStatus, *, path: Optional[str] = None,
                        required: int = 0,
                        parts: Sequence[Tuple[str, int]] = (),
                        loading: bool = False) -> Error:
    """The snug.Error for a failed runtime call; `loading`: while loading a
    bundle (io, invalid and unsupported bundles are BundleErrors)."""
    status, message = failure.status, failure.message
    if loading and status in (2, 3, 4):
        return BundleError(message, path=path, status=_STATUS_NAMES[status])
    if status == 5:
        # The CUDA check says "... has N bytes (...) free of ...".
        free = re.search(r"has (\d+) bytes[^,]* free", message)
        return OutOfMemoryError(message, required=required,
                                free=int(free.group(1)) if free else None,
                                parts=parts)
    if status == 6:
        return DeviceError(message)
    if status == 9:
        # runtime/cuda/DeviceChecks.cpp: "needs a CUDA 12.0 driver (...);
        # this driver is CUDA 11.8 ..."
        versions = re.search(r"needs a CUDA ([\d.]+) driver.*this driver is "
                             r"CUDA ([\d.]+)", message)
        return DriverVersionError(
            message, required=versions.group(1) if versions else None,
            driver=versions.group(2) if versions else None)
    if status == 8:
        return BindingError(message)
    # The runtime's data errors (runtime/LabelCheck.h, the host kernels'
    # dataError) start "input 'NAME' holds ...".
    data = re.match(r"input '([^']*)' holds (?:(-?\d+) at position (\d+))?",
                    message)
    if status == 1 and data:
        return InputValueError(
            message, input=data.group(1),
            value=int(data.group(2)) if data.group(2) else None,
            position=int(data.group(3)) if data.group(3) else None)
    return Error(message)
