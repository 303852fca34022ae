"""Session.run matches onnxruntime on the host; compile, load, sizes; DLPack
in and out with torch CPU tensors."""
import glob
import os

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import numpy_helper

import snug
from conftest import zoo_dims, zoo_model
from models import tiny_mlp

# The small zoo models (the rest are planned only, in test_plan.py).
RUN_ZOO = ["squeezenet1_1-opset17", "mobilenet_v3_small-opset13",
           "bert_small-opset17", "gpt2_small-opset13"]


def onnxruntime_outputs(model, feeds):
    session = onnxruntime.InferenceSession(
        model, providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def assert_close(actual, expected):
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual, expected, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", RUN_ZOO)
def test_zoo_run_matches_onnxruntime(name):
    directory = zoo_model(name)
    model = os.path.join(directory, "model.onnx")
    dims, _ = zoo_dims(directory)
    bundle = snug.compile(model, dims=dims, target="host")
    feeds = {}
    for info, path in zip(bundle.inputs, sorted(glob.glob(
            os.path.join(directory, "test_data_set_0", "input_*.pb")))):
        feeds[info.name] = numpy_helper.to_array(
            onnx.load_tensor(path)).reshape(info.shape)
    outputs = snug.Session(bundle).run(feeds)
    expected = onnxruntime_outputs(model, feeds)
    assert set(outputs) == set(expected)
    for key in expected:
        assert_close(outputs[key], expected[key])


def test_compile_to_a_path_and_load(tmp_path):
    path = tmp_path / "mlp.snug"
    compiled = snug.compile(tiny_mlp(), path, dims={"batch": 3}, target="host")
    assert compiled.path == str(path) and path.exists()
    loaded = snug.load(path)
    assert loaded.sizes == compiled.sizes
    assert loaded.sizes.arena == compiled.report.arena_bytes
    assert loaded.sizes.weights == compiled.report.weights_bytes
    assert [(i.name, i.shape, i.dtype) for i in loaded.inputs] == \
        [("x", (3, 64), np.dtype(np.float32))]
    assert [(o.name, o.shape) for o in loaded.outputs] == [("y", (3, 10))]
    assert "plan-memory" in loaded.pipeline
    assert loaded.compiler_version == snug.__version__
    in_memory = snug.compile(tiny_mlp(), dims={"batch": 3}, target="host")
    assert in_memory.path is None
    # The same model and options give a byte-identical bundle.
    assert in_memory.to_bytes() == path.read_bytes()
    copy = tmp_path / "copy.snug"
    in_memory.save(copy)
    assert snug.load(copy).sizes == loaded.sizes


def test_run_matches_onnxruntime_and_a_caller_arena():
    proto = tiny_mlp()
    bundle = snug.compile(proto, dims={"batch": 5}, target="host")
    x = np.random.default_rng(1).standard_normal((5, 64)).astype(np.float32)
    expected = onnxruntime_outputs(proto.SerializeToString(), {"x": x})["y"]
    assert_close(snug.Session(bundle).run({"x": x})["y"], expected)
    # Host arenas are aligned to min(alignment, 64) bytes.
    raw = np.zeros(bundle.sizes.arena + 64, dtype=np.uint8)
    start = -raw.ctypes.data % 64
    arena = raw[start:start + bundle.sizes.arena]
    session = snug.Session(bundle, arena=arena)
    assert_close(session.run({"x": x})["y"], expected)
    assert session.memory()["allocated_bytes"] == 0
    assert session.uses_cuda_graphs is False  # a host session
    # Runs again with new inputs (they are set before every run).
    assert_close(session.run({"x": 2 * x})["y"],
                 onnxruntime_outputs(proto.SerializeToString(),
                                     {"x": 2 * x})["y"])


def test_dlpack_round_trip_with_torch_cpu_tensors():
    torch = pytest.importorskip("torch")
    bundle = snug.compile(tiny_mlp(), dims={"batch": 2}, target="host")
    x = torch.randn(2, 64)
    out = snug.Session(bundle).run({"x": x})["y"]
    y = torch.from_dlpack(out)
    # No copy out: the tensor is the numpy array's memory.
    assert y.data_ptr() == out.ctypes.data
    w1, b1, w2 = (torch.from_numpy(numpy_helper.to_array(t).copy())
                  for t in tiny_mlp().graph.initializer)
    torch.testing.assert_close(y, torch.relu(x @ w1 + b1) @ w2,
                               rtol=1e-3, atol=1e-4)
    # And back in: the output tensor is the next run's input of a model
    # whose input is [2, 10].
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Neg", ["y"], ["z"])], "neg",
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 10])])
    neg = snug.compile(helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17)]), target="host")
    z = torch.from_dlpack(snug.Session(neg).run({"y": y})["z"])
    torch.testing.assert_close(z, -y)


@pytest.mark.parametrize("target", ["host", "cuda"])
def test_compile_gives_the_cli_bundle_byte_for_byte(snugc, tmp_path, target):
    import subprocess
    if target == "cuda" and snug._snug.default_target() != "cuda":
        pytest.skip("built without NVRTC")
    model = tmp_path / "mlp.onnx"
    onnx.save(tiny_mlp(), model)
    cli = tmp_path / "cli.snug"
    subprocess.run([snugc, "compile", str(model), "--dim", "batch=3",
                    f"--target={target}", "--memory-report=none", "-o",
                    str(cli)], check=True, capture_output=True)
    python = snug.compile(model, dims={"batch": 3}, target=target)
    assert python.to_bytes() == cli.read_bytes()
