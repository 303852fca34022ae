"""snug.plan equals snugc plan's JSON report, field by field, on every zoo
model; the model as a path, bytes or ModelProto; the options."""
import dataclasses
import os
import subprocess

import onnx
import pytest

import snug
from conftest import ZOO, cli_report, zoo_dims, zoo_model
from models import tiny_mlp

# The planner's own time differs run to run; every other field must not.
TIMED = {"planning_ms"}


def same_fields(python, cli):
    python = python.to_dict()
    assert set(python) == set(cli)
    for key in cli:
        if key not in TIMED:
            assert python[key] == cli[key], key


@pytest.mark.parametrize("name", ZOO)
def test_zoo_plan_equals_cli(name, snugc):
    directory = zoo_model(name)
    model = os.path.join(directory, "model.onnx")
    dims, flags = zoo_dims(directory)
    same_fields(snug.plan(model, dims=dims), cli_report(snugc, model, *flags))


def test_options_mirror_the_cli(snugc, tmp_path):
    directory = zoo_model("squeezenet1_1-opset17")
    model = os.path.join(directory, "model.onnx")
    report = snug.plan(model, dims={"batch": 2}, planner="none",
                       alignment=64, target="host", schedule=False)
    same_fields(report, cli_report(snugc, model, "--dim", "batch=2",
                                   "--planner=none", "--alignment=64",
                                   "--target=host", "--no-schedule"))
    assert report.planner == "none" and report.alignment == 64
    assert report.workspace_bytes == 0


def test_model_as_path_bytes_or_proto(tmp_path):
    proto = tiny_mlp()
    path = tmp_path / "mlp.onnx"
    onnx.save(proto, path)
    from_path = snug.plan(path, dims={"batch": 4})
    from_bytes = snug.plan(proto.SerializeToString(), dims={"batch": 4},
                           name="mlp.onnx")
    from_proto = snug.plan(proto, dims={"batch": 4}, name="mlp.onnx")
    assert from_path == from_bytes == from_proto
    assert from_path.model == "mlp.onnx"
    assert snug.plan(proto, inputs={"x": (4, 64)}, name="mlp.onnx") == from_path


def test_report_fields_repr_and_timeline():
    report = snug.plan(tiny_mlp(), dims={"batch": 4})
    assert report.predicted_peak_bytes == (report.weights_bytes +
                                           report.arena_bytes +
                                           report.runtime_bytes)
    assert report.live_at_peak and all(isinstance(t, snug.LiveTensor)
                                       for t in report.live_at_peak)
    # The largest live value: an op's result, or (on the CUDA target) a
    # GEMM's cuBLAS workspace, at least 16 KiB since issue 36.
    assert report.live_at_peak[0].op in ("MatMul", "Add", "Relu", "Gemm",
                                         "workspace")
    text = repr(report)
    assert text.startswith("memory report: model.onnx (")
    assert "predicted peak" in text and "peak at step" in text
    html = report.timeline_html()
    assert html.lstrip().lower().startswith("<!doctype html")


def test_unknown_option_is_a_type_error():
    with pytest.raises(TypeError, match="unknown option 'planer'"):
        snug.plan(tiny_mlp(), dims={"batch": 1}, planer="best")


def test_bad_option_values_are_errors_naming_the_flag():
    with pytest.raises(snug.Error, match="--alignment: '3'"):
        snug.plan(tiny_mlp(), dims={"batch": 1}, alignment=3)
    with pytest.raises(snug.Error, match="--target must be cuda or host"):
        snug.plan(tiny_mlp(), dims={"batch": 1}, target="tpu")
    with pytest.raises(snug.Error, match="planner"):
        snug.plan(tiny_mlp(), dims={"batch": 1}, planner="magic")
    for text in ["6 GB", "-1", "1e3", "abc", ""]:
        with pytest.raises(snug.Error, match="memory_budget: '.*' is not a byte size"):
            snug.plan(tiny_mlp(), dims={"batch": 1}, memory_budget=text)


def test_memory_budget_that_fits():
    report = snug.plan(tiny_mlp(), dims={"batch": 4})
    again = snug.plan(tiny_mlp(), dims={"batch": 4},
                      memory_budget=report.predicted_peak_bytes)
    # The budget is met as planned: remat ran and decided nothing.
    assert again.remat is not None and again.remat.decisions == 0
    assert again.remat.peak_after_bytes == report.predicted_peak_bytes
    assert dataclasses.replace(again, remat=None) == report
    assert report.remat is None and report.micro_batches == 1
    assert snug.parse_size("20GiB") == 20 << 30
    assert snug.parse_size("3MB") == 3_000_000


def test_micro_batches_meet_a_budget_remat_cannot():
    report = snug.plan(tiny_mlp(), dims={"batch": 8})
    budget = report.weights_bytes + report.arena_bytes * 3 // 4
    with pytest.raises(snug.BudgetError):
        snug.plan(tiny_mlp(), dims={"batch": 8}, memory_budget=budget)
    split = snug.plan(tiny_mlp(), dims={"batch": 8}, memory_budget=budget,
                      allow_micro_batches=True)
    assert split.micro_batches > 1
    assert split.predicted_peak_bytes <= budget < report.predicted_peak_bytes


def test_offload_parks_a_value_remat_cannot_recompute():
    # tests/lit/snugc/offload.test: the graph input x, live across the
    # peak, waits in pinned host memory: 1792 B -> 1536 B.
    model = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "lit",
                         "snugc", "Inputs", "skip.onnxtxt")
    report = snug.plan(model, target="host", memory_budget=1600,
                       allow_offload=True)
    assert report.offload == snug.OffloadSummary(
        values=1, bytes=256, pinned_host_bytes=256)
    assert report.predicted_peak_bytes == 1536
    assert snug.plan(model, target="host", memory_budget=1600).offload is None
    with pytest.raises(snug.Error, match="offload-bandwidth"):
        snug.plan(model, target="host", memory_budget=1600,
                  allow_offload=True, offload_bandwidth=-1.0)


def test_training_step_report_parses(snugc, tmp_path):
    """A training step's JSON (its step breakdown) reads back as a
    MemoryReport whose parts sum to the peak and phases to the FLOPs."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    model = os.path.join(root, "tests", "lit", "snugc", "Inputs",
                         "mlp-train.onnxtxt")
    result = subprocess.run(
        [snugc, "train", model, "--loss=mse:y,target", "--optimizer=adam",
         "--lr=0.01", "--target=host", "-o", str(tmp_path / "step.snug"),
         "--memory-report=json", "--memory-report-file=-"],
        capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = snug.MemoryReport._from_json(result.stdout)
    step = report.step
    assert isinstance(step, snug.StepBreakdown)
    assert step.optimizer_state_bytes == report.optimizer_state_bytes > 0
    assert (step.parameter_bytes + step.optimizer_state_bytes +
            step.other_weights_bytes + step.gradient_bytes +
            step.saved_activation_bytes + step.workspace_bytes +
            step.other_arena_bytes + step.runtime_bytes
            == report.predicted_peak_bytes)
    assert (step.forward_flops + step.backward_flops + step.optimizer_flops +
            step.recompute_flops == report.flops)
    assert report.to_dict()["step"] == dataclasses.asdict(step)
    assert snug.plan(tiny_mlp(), dims={"batch": 4}).step is None


@pytest.mark.parametrize("precision", ["fp16", "bf16", "tf32"])
def test_precision_report_equals_cli(precision, snugc, tmp_path):
    """The precision object reads back (its tf32 'math' field was missing:
    every lowered plan raised TypeError) and equals snugc's."""
    model = tmp_path / "mlp.onnx"
    onnx.save(tiny_mlp(), model)
    report = snug.plan(model, dims={"batch": 2}, target="host",
                       precision=precision, keep_fp32="Relu")
    same_fields(report, cli_report(snugc, str(model), "--dim", "batch=2",
                                   "--target=host",
                                   f"--precision={precision}",
                                   "--keep-fp32=Relu"))
    assert report.precision.math == ("tf32" if precision == "tf32" else None)


def test_branches_of_an_if_on_runtime_data(snugc, tmp_path):
    """Each side of an If whose condition is a graph input, as
    snugc plan's JSON has it."""
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    then_y = helper.make_tensor_value_info("then_y", TensorProto.FLOAT, [2])
    else_y = helper.make_tensor_value_info("else_y", TensorProto.FLOAT, [2])
    branch = helper.make_node(
        "If", ["flag"], ["y"], name="gate",
        then_branch=helper.make_graph(
            [helper.make_node("Relu", ["x"], ["then_y"])], "then", [],
            [then_y]),
        else_branch=helper.make_graph(
            [helper.make_node("Neg", ["x"], ["else_y"])], "else", [],
            [else_y]))
    proto = helper.make_model(
        helper.make_graph(
            [branch], "if_runtime",
            [helper.make_tensor_value_info("flag", TensorProto.BOOL, []), x],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "if.onnx"
    onnx.save(proto, path)
    report = snug.plan(path, target="host")
    assert [(b.side, b.condition, b.steps, b.depth) for b in report.branches] \
        == [("then", "flag", 1, 0), ("else", "flag", 1, 0)]
    assert all(isinstance(b, snug.BranchRun) for b in report.branches)
    assert all(0 < b.peak_live_bytes <= report.arena_bytes
               for b in report.branches)
    same_fields(report, cli_report(snugc, str(path), "--target=host"))
    assert snug.plan(tiny_mlp(), dims={"batch": 2}).branches == []
