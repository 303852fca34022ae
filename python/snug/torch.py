"""snug for PyTorch modules: plan through an in-memory ONNX export.

    >>> import snug.torch, torchvision
    >>> snug.torch.plan(torchvision.models.resnet18(), torch.randn(8, 3, 224, 224))

export() is torch.onnx.export into bytes (inputs named input0, input1, ...,
outputs output0, ...); plan() plans those bytes with snug.plan;
fit_batch() finds the largest batch whose predicted peak fits a budget by
planning candidates (each plan rematerializes under the budget), as snugc's
--fit-batch does for an ONNX file.
"""
from __future__ import annotations

import io
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import torch

import snug
from snug._errors import BudgetError, Error

Dynamic = Union[None, bool, Mapping[Union[str, int], Mapping[int, str]]]


def _as_tuple(example_inputs: Any) -> Tuple[Any, ...]:
    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,)
    return tuple(example_inputs)


def _dynamic_axes(dynamic: Dynamic, inputs: Sequence[str],
                  outputs: Sequence[str]) -> Dict[str, Dict[int, str]]:
    if not dynamic:
        return {}
    if dynamic is True:  # dim 0 of every input and output is "batch"
        return {name: {0: "batch"} for name in list(inputs) + list(outputs)}
    axes = {}
    for key, spec in dynamic.items():
        name = inputs[key] if isinstance(key, int) else str(key)
        axes[name] = {int(axis): str(symbol) for axis, symbol in spec.items()}
    return axes


def export(module: torch.nn.Module, example_inputs: Any,
           dynamic: Dynamic = None, opset: int = 17,
           num_outputs: Optional[int] = None) -> bytes:
    """The ONNX model of `module` traced on `example_inputs`, as bytes.

    dynamic: True makes dim 0 of every input and output the symbol "batch";
    a mapping {input name or index: {axis: symbol}} names others."""
    args = _as_tuple(example_inputs)
    input_names = [f"input{i}" for i in range(len(args))]
    if num_outputs is None:
        with torch.no_grad():
            result = module(*args)
        num_outputs = len(result) if isinstance(result, (tuple, list)) else 1
    output_names = [f"output{i}" for i in range(num_outputs)]
    buffer = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(module, args, buffer, opset_version=opset,
                          input_names=input_names, output_names=output_names,
                          dynamic_axes=_dynamic_axes(dynamic, input_names,
                                                     output_names) or None,
                          do_constant_folding=True)
    return buffer.getvalue()


def _dims(dynamic: Dynamic, args: Tuple[Any, ...]) -> Dict[str, int]:
    """Each symbol of `dynamic` bound to the example inputs' size."""
    names = [f"input{i}" for i in range(len(args))]
    dims: Dict[str, int] = {}
    for name, axes in _dynamic_axes(dynamic, names, []).items():
        if name not in names:
            continue
        for axis, symbol in axes.items():
            dims[symbol] = int(args[names.index(name)].shape[axis])
    return dims


def plan(module: torch.nn.Module, example_inputs: Any,
         dynamic: Dynamic = None, **options: Any) -> "snug.MemoryReport":
    """snug.plan on the export of `module` (see export()); the symbols of
    `dynamic` are bound to the example inputs' sizes unless `dims` says
    otherwise. options as for snug.plan."""
    args = _as_tuple(example_inputs)
    dims = {**_dims(dynamic, args), **options.pop("dims", {})}
    options.setdefault("name", type(module).__name__ + ".onnx")
    return snug.plan(export(module, args, dynamic), dims=dims, **options)


def fit_batch(module: torch.nn.Module, make_inputs: Callable[[int], Any],
              budget: Union[int, str] = "20GiB", max_batch: int = 1 << 16,
              **options: Any) -> int:
    """The largest batch whose predicted peak fits in `budget`.

    make_inputs(batch) gives example inputs whose dim 0 is the batch. The
    module is exported once with a symbolic batch, then planned at doubling
    batches and bisected between the last that fits and the first that does
    not (each plan is snug.plan with memory_budget=budget). A BudgetError
    when batch 1 does not fit."""
    budget_bytes = snug.parse_size(budget, "budget")
    if max_batch < 1:
        raise Error(f"max_batch must be at least 1, not {max_batch}")
    # Traced at batch 2: a batch of 1 could be specialized into the graph.
    model = export(module, make_inputs(min(2, max_batch)), dynamic=True)
    options.setdefault("name", type(module).__name__ + ".onnx")

    def fits(batch: int) -> bool:
        try:
            snug.plan(model, dims={"batch": batch},
                      memory_budget=budget_bytes, **options)
            return True
        except BudgetError:
            if batch == 1:
                raise
            return False

    if not fits(1):
        return 0  # not reached: fits(1) raises
    low, high = 1, None
    while high is None:
        candidate = min(low * 2, max_batch)
        if candidate == low:
            return low
        if fits(candidate):
            low = candidate
        else:
            high = candidate
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low
