"""Every error class, raised for its bad input, with its fields set."""
import dataclasses
import os
import subprocess

import numpy as np
import onnx
import pytest

import snug
from models import huge_relu, tiny_mlp, unsupported_ops


def test_every_error_is_a_snug_error():
    for cls in (snug.UnsupportedOpError, snug.BindingError, snug.BudgetError,
                snug.OutOfMemoryError, snug.BundleError, snug.DeviceError,
                snug.InputValueError):
        assert issubclass(cls, snug.Error)


def test_unsupported_op_error_lists_every_op_and_node():
    with pytest.raises(snug.UnsupportedOpError) as caught:
        snug.plan(unsupported_ops())
    error = caught.value
    assert [(op.op_type, op.domain, op.node) for op in error.ops] == [
        ("Det", "ai.onnx", "det_node"), ("Frobnicate", "com.example", "custom_node")]
    assert error.op_types == ["Det", "Frobnicate"]
    assert error.nodes == ["det_node", "custom_node"]
    assert error.ops[0].opset == 17
    assert "Det" in str(error) and "custom_node" in str(error)


def test_binding_error_names_the_input_and_dim():
    with pytest.raises(snug.BindingError) as caught:
        snug.plan(tiny_mlp())  # batch is unbound
    assert (caught.value.input, caught.value.dim, caught.value.symbol) == \
        ("x", 0, "batch")
    assert "give --dim batch=N" in str(caught.value)
    with pytest.raises(snug.BindingError) as caught:
        snug.plan(tiny_mlp(), dims={"batch": 1, "seq": 4})
    assert (caught.value.input, caught.value.symbol) == (None, "seq")
    with pytest.raises(snug.BindingError) as caught:
        snug.plan(tiny_mlp(), inputs={"x": (2, 63)})
    assert (caught.value.input, caught.value.dim) == ("x", 1)
    with pytest.raises(snug.BindingError) as caught:
        snug.plan(tiny_mlp(), inputs={"nope": (2, 64)}, dims={"batch": 2})
    assert caught.value.input == "nope"


def test_binding_error_from_a_session():
    session = snug.Session(snug.compile(tiny_mlp(), dims={"batch": 2},
                                        target="host"))
    with pytest.raises(snug.BindingError) as caught:
        session.run({})
    assert caught.value.input == "x"
    with pytest.raises(snug.BindingError) as caught:
        session.run({"x": np.zeros((2, 65), np.float32)})
    assert (caught.value.input, caught.value.dim) == ("x", 1)
    with pytest.raises(snug.BindingError) as caught:
        session.run({"x": np.zeros((2, 64), np.float64)})
    assert caught.value.input == "x"
    with pytest.raises(snug.BindingError) as caught:
        session.run({"x": np.zeros((2, 64), np.float32), "extra": 1})
    assert caught.value.input == "extra"


def test_budget_error_has_budget_peak_and_what_is_live():
    report = snug.plan(tiny_mlp(), dims={"batch": 8})
    budget = report.predicted_peak_bytes - 1
    with pytest.raises(snug.BudgetError) as caught:
        snug.plan(tiny_mlp(), dims={"batch": 8}, memory_budget=budget)
    error = caught.value
    assert error.budget == budget
    assert error.peak == report.predicted_peak_bytes
    assert error.live_at_peak == report.live_at_peak
    assert error.live_at_peak[0].op and error.live_at_peak[0].bytes > 0
    # The same plan, plus what remat tried (nothing lowers this MLP's peak).
    assert error.report.remat is not None
    assert error.report.remat.decisions == 0
    assert dataclasses.replace(error.report, remat=None) == report
    assert f"over the memory budget of {budget} B" in str(error)
    with pytest.raises(snug.BudgetError) as caught:
        snug.compile(tiny_mlp(), dims={"batch": 8}, memory_budget="1KiB",
                     target="host")
    assert caught.value.budget == 1024


def test_out_of_memory_error_has_required_free_and_parts():
    # 2 TiB of arena (input and output of 1 TiB each) is more than any
    # host here can allocate: the session fails before running.
    batch = 1 << 18
    bundle = snug.compile(huge_relu(batch), dims={"batch": batch},
                          target="host")
    assert bundle.sizes.arena >= 2 << 40
    with pytest.raises(snug.OutOfMemoryError) as caught:
        snug.Session(bundle)
    error = caught.value
    assert error.required == bundle.sizes.arena
    assert error.free is None
    assert error.parts == [("arena", bundle.sizes.arena)]
    assert isinstance(error, MemoryError)


def test_bundle_error_names_the_file(tmp_path):
    with pytest.raises(snug.BundleError) as caught:
        snug.load(tmp_path / "missing.snug")
    assert caught.value.path == str(tmp_path / "missing.snug")
    assert caught.value.status == "io"
    path = tmp_path / "mlp.snug"
    snug.compile(tiny_mlp(), path, dims={"batch": 1}, target="host")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt = tmp_path / "corrupt.snug"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(snug.BundleError) as caught:
        snug.load(corrupt)
    assert caught.value.status == "invalid bundle"
    assert str(corrupt) in str(caught.value)
    truncated = tmp_path / "truncated.snug"
    truncated.write_bytes(bytes(data[:100]))
    with pytest.raises(snug.BundleError):
        snug.load(truncated)


def test_cuda_session_without_a_device_is_a_clean_error():
    if snug._snug.default_target() != "cuda":
        pytest.skip("built without NVRTC")
    bundle = snug.compile(tiny_mlp(), dims={"batch": 1}, target="cuda")
    try:
        session = snug.Session(bundle, device="cuda")
    except snug.DeviceError as error:
        assert "CUDA" in str(error) or "cuda" in str(error)
        return
    # A machine with a GPU: the session runs like the host one.
    x = np.ones((1, 64), np.float32)
    np.testing.assert_allclose(session.run({"x": x})["y"],
                               snug.Session(bundle).run({"x": x})["y"],
                               rtol=1e-3, atol=1e-4)


def test_other_failures_are_snug_errors(tmp_path):
    with pytest.raises(snug.Error, match="device must be"):
        snug.Session(snug.compile(tiny_mlp(), dims={"batch": 1},
                                  target="host"), device="tpu")
    with pytest.raises(snug.Error):
        snug.plan(b"not an onnx model")
    with pytest.raises(snug.Error):
        snug.plan(os.path.join(str(tmp_path), "missing.onnx"))


# An option that acts only beside another (tests/lit/snugc/companion-flags):
# the keywords as given, the flags snugc gets for them.
COMPANIONS = [
    ({"memory_budget": 0}, ["--memory-budget=0"]),
    ({"allow_micro_batches": True}, ["--allow-micro-batches"]),
    ({"allow_offload": True}, ["--allow-offload"]),
    ({"memory_budget": "1GiB", "offload_bandwidth": 50},
     ["--memory-budget=1GiB", "--offload-bandwidth=50"]),
    ({"keep_fp32": "MatMul"}, ["--keep-fp32=MatMul"]),
    ({"precision": "fp32", "io_precision": "lowered"},
     ["--precision=fp32", "--io-precision=lowered"]),
]


@pytest.mark.parametrize("options,flags", COMPANIONS)
def test_companion_options_are_refused_as_snugc_refuses(options, flags,
                                                         snugc, tmp_path):
    """Refused in the Python API (they were accepted and ignored) with
    snugc's message, word for word: both check in compiler/Driver.cpp."""
    model = tmp_path / "mlp.onnx"
    onnx.save(tiny_mlp(), model)
    cli = subprocess.run([snugc, "plan", str(model), "--dim", "batch=1",
                          "--target=host", *flags],
                         capture_output=True, text=True)
    assert cli.returncode == 1, cli.stderr
    [message] = [line[len("error: "):] for line in cli.stderr.splitlines()
                 if line.startswith("error: ")]
    for call in (snug.plan, snug.compile):
        with pytest.raises(snug.Error) as caught:
            call(tiny_mlp(), dims={"batch": 1}, target="host", **options)
        assert str(caught.value) == message


def test_companion_options_with_their_companions_are_taken():
    snug.plan(tiny_mlp(), dims={"batch": 1}, target="host",
              memory_budget="1GiB", allow_micro_batches=True,
              allow_offload=True, offload_bandwidth=50)
    snug.plan(tiny_mlp(), dims={"batch": 1}, target="host",
              precision="fp16", keep_fp32="MatMul", io_precision="lowered")
    # None is not given.
    snug.plan(tiny_mlp(), dims={"batch": 1}, target="host",
              memory_budget=None, offload_bandwidth=None, keep_fp32=None,
              io_precision=None)


def test_keep_fp32_name_that_keeps_nothing_is_an_error():
    """tests/lit/snugc/keep-fp32: a name that is neither a node nor an op
    type was ignored; a known op type the model lacks is taken."""
    with pytest.raises(snug.Error, match=r"--keep-fp32: 'matmul' is neither "
                       r"a node of '.*' nor an op type, so it would keep "
                       r"nothing \(did you mean the op type 'MatMul'\?\)"):
        snug.plan(tiny_mlp(), dims={"batch": 1}, target="host",
                  precision="fp16", keep_fp32="matmul")
    with pytest.raises(snug.Error, match=r"did you mean the node 'fc1'"):
        snug.plan(tiny_mlp(), dims={"batch": 1}, target="host",
                  precision="fp16", keep_fp32="Relu,fc_1")
    snug.plan(tiny_mlp(), dims={"batch": 1}, target="host",
              precision="fp16", keep_fp32="fc1,Relu,Conv,Gemm")


def test_input_value_error_names_the_label_and_keeps_the_state(snugc,
                                                               tmp_path):
    """A cross-entropy label outside [0, C) fails the training step with
    the input, the label and its position; the state stays as it was, and
    the next step with good labels runs from it."""
    import subprocess
    model = os.path.join(os.path.dirname(__file__), "..", "..", "tests",
                         "lit", "snugc", "Inputs", "ce8-train.onnxtxt")
    step = str(tmp_path / "step.snug")
    subprocess.run([snugc, "train", model,
                    "--loss=cross-entropy:logits,labels", "--lr=0.1",
                    "--target=host", "-o", step, "--memory-report=none"],
                   check=True, capture_output=True)
    session = snug.Session(snug.load(step))
    x = np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4)
    bad = np.array([1, 2, 3, 7, 8, 0], dtype=np.int64)
    with pytest.raises(snug.InputValueError) as caught:
        session.run({"x": x, "labels": bad})
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.input, error.value, error.position) == ("labels", 8, 4)
    assert "not a class index in [0, 8)" in error.message
    good = np.array([1, 2, 3, 7, 5, 0], dtype=np.int64)
    first = session.run({"x": x, "labels": good})
    fresh = snug.Session(snug.load(step)).run({"x": x, "labels": good})
    for name in first:
        np.testing.assert_array_equal(first[name], fresh[name])
