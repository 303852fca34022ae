"""The memory report as Python data: the fields of `snugc plan
--memory-report=json`, one for one (compiler/MemoryReport.cpp writes the
JSON this is read from), and the CLI's table as its repr."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class LiveTensor:
    """A value live at the peak step: its name(s), producer op and bytes."""
    name: str
    op: str
    bytes: int


@dataclass(frozen=True)
class BranchRun:
    """One side of an If on runtime data: the run of steps a snug.skip_if
    skips unless the condition takes this side, and the most bytes live at
    one of its steps."""
    condition: str
    side: str
    skip_step: int
    steps: int
    depth: int
    peak_live_bytes: int
    peak_step: int


@dataclass(frozen=True)
class UnsupportedOp:
    """One node of an op snug does not import."""
    op_type: str
    domain: str
    opset: int
    node: str


@dataclass(frozen=True)
class FusionSummary:
    """What the fuse pass did: fused groups and the nodes in them, kernels
    launched with every group run node by node and as planned, and the bytes
    of the intermediates kept in registers."""
    groups: int
    nodes_fused: int
    kernels_before: int
    kernels_after: int
    intermediate_bytes_removed: int


@dataclass(frozen=True)
class RematSummary:
    """What rematerialization did under memory_budget: decisions kept,
    nodes run a second time, the FLOPs they add (and the model's before),
    and the predicted peak before and after."""
    decisions: int
    nodes_recomputed: int
    extra_flops: int
    flops_before: int
    peak_before_bytes: int
    peak_after_bytes: int


@dataclass(frozen=True)
class OffloadSummary:
    """What offload did under memory_budget with allow_offload: values
    parked in pinned host memory across the peak, the bytes copied out (and
    back), and the pinned host region the runtime allocates (host memory,
    not part of the predicted device peak)."""
    values: int
    bytes: int
    pinned_host_bytes: int


@dataclass(frozen=True)
class StepBreakdown:
    """A training step's predicted peak in parts, at the peak step
    (parameters + optimizer state + other weights + gradients + saved
    activations + workspace + other arena + runtime = predicted peak),
    every saved activation once, and the cost model's FLOPs by phase
    (forward + backward + optimizer + recompute = flops). README, *The
    memory report*."""
    parameter_bytes: int
    optimizer_state_bytes: int
    other_weights_bytes: int
    gradient_bytes: int
    saved_activation_bytes: int
    workspace_bytes: int
    other_arena_bytes: int
    runtime_bytes: int
    saved_activations: int
    saved_activation_total_bytes: int
    forward_flops: int
    backward_flops: int
    optimizer_flops: int
    recompute_flops: int
    recompute_nodes: int


@dataclass(frozen=True)
class PrecisionSummary:
    """What precision lowering did: the lowered dtype, the nodes computing
    in it and in f32, the casts inserted, and the weights and arena the
    same model plans to in fp32 (0 when not recorded). With tf32, dtype
    stays "f32" and math is "tf32" (None otherwise)."""
    dtype: str
    math: Optional[str]
    nodes_lowered: int
    nodes_kept_f32: int
    casts: int
    weights_before_bytes: int
    arena_before_bytes: int
    # A training step's master weights and optimizer state dtype ("f32";
    # "mixed" when they differ), None for inference; the bytes of the values
    # the nodes compute in the lowered dtype and in f32.
    state_dtype: Optional[str]
    lowered_value_bytes: int
    f32_value_bytes: int


@dataclass(eq=True)
class LocalMemory:
    """The local memory the CUDA driver reserves for the compiled kernel with
    the largest stack, outside the predicted peak: roundUp(stack + 512, 256)
    bytes per thread x resident threads per SM x SMs of the arch's largest
    GPU (`gpu`). bytes is 0, kernel and arch None, when no kernel has a
    stack."""
    bytes: int
    kernel: Optional[str]
    arch: Optional[str]
    bytes_per_thread: int
    threads_per_sm: int
    sms: int
    gpu: str


@dataclass(eq=True)
class MemoryReport:
    """What a planned model needs on the device, as `snugc plan` reports it.

    predicted_peak_bytes = weights_bytes + arena_bytes + runtime_bytes;
    io_bytes and workspace_bytes lie inside the arena. The cost fields are
    the cost model's estimates (README, *The memory report*)."""
    model: str
    weights_bytes: int
    # Inside weights_bytes: a training step's persistent state, its
    # parameters, its optimizer state and the BatchNorm running statistics
    # it updates (0 for inference).
    parameter_state_bytes: int
    optimizer_state_bytes: int
    statistic_state_bytes: int
    arena_bytes: int
    lower_bound_bytes: int
    lower_bound_unshared_bytes: int
    no_reuse_bytes: int
    workspace_bytes: int
    scratch_buffers: int
    device_arena_bytes: int
    io_bytes: int
    runtime_bytes: int
    predicted_peak_bytes: int
    alignment: int
    peak_step: int
    live_at_peak: List[LiveTensor]
    planner: str
    # The planner's wall time: left out of ==, as it varies run to run.
    planning_ms: float = field(compare=False)
    nodes: int
    flops: int
    macs: int
    flops_by_dtype: Dict[str, int]
    bytes_read: int
    bytes_written: int
    bytes_moved: int
    arithmetic_intensity: float
    roofline_device: str
    roofline_estimate_us: float
    roofline_compute_bound_nodes: int
    roofline_memory_bound_nodes: int
    fusion: FusionSummary
    # Copies of the graph run one after the other on 1/micro_batches of the
    # batch each (allow_micro_batches); 1 when not split.
    micro_batches: int
    # None when remat did not run (no memory_budget).
    remat: Optional[RematSummary]
    # None without precision lowering.
    precision: Optional[PrecisionSummary]
    # None when offload did not run (no allow_offload).
    offload: Optional[OffloadSummary]
    # Each side of each If on runtime data; empty without one.
    branches: List[BranchRun]
    # None for a model without persistent state (inference).
    step: Optional[StepBreakdown]
    # None when no kernels were compiled (a plan, or the host target).
    local_memory: Optional[LocalMemory]
    _pretty: str = field(default="", repr=False, compare=False)
    _planned: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def _from_json(cls, text: str, pretty: str = "",
                   planned: Any = None) -> "MemoryReport":
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)
                 if not f.name.startswith("_")}
        if set(data) != names:
            raise AssertionError(
                "the native report's fields differ from MemoryReport's: "
                f"{sorted(set(data) ^ names)}")
        data["live_at_peak"] = [LiveTensor(**t) for t in data["live_at_peak"]]
        data["branches"] = [BranchRun(**b) for b in data["branches"]]
        data["fusion"] = FusionSummary(**data["fusion"])
        if data["remat"] is not None:
            data["remat"] = RematSummary(**data["remat"])
        if data["precision"] is not None:
            data["precision"] = PrecisionSummary(**data["precision"])
        if data["local_memory"] is not None:
            data["local_memory"] = LocalMemory(**data["local_memory"])
        if data["offload"] is not None:
            data["offload"] = OffloadSummary(**data["offload"])
        if data["step"] is not None:
            data["step"] = StepBreakdown(**data["step"])
        return cls(**data, _pretty=pretty, _planned=planned)

    def to_dict(self) -> Dict[str, Any]:
        """The report as the CLI's JSON object (live_at_peak as dicts)."""
        def plain(name):
            value = getattr(self, name)
            if name in ("live_at_peak", "branches"):
                return [dataclasses.asdict(t) for t in value]
            if (name in ("fusion", "remat", "precision", "offload", "step")
                    and value is not None):
                return dataclasses.asdict(value)
            return value
        return {f.name: plain(f.name)
                for f in dataclasses.fields(self) if not f.name.startswith("_")}

    def timeline_html(self) -> str:
        """A self-contained HTML page drawing the arena as address against
        time (what `snugc plan --timeline=plan.html` writes)."""
        if self._planned is None:
            from ._errors import Error
            raise Error("this report has no planned model to draw")
        return self._planned.timeline_html()

    def __repr__(self) -> str:
        if self._pretty:
            return self._pretty.rstrip("\n")
        return (f"MemoryReport(model={self.model!r}, "
                f"predicted_peak_bytes={self.predicted_peak_bytes})")

    __str__ = __repr__
