"""Small ONNX models for the package's tests, built with onnx.helper."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tiny_mlp(batch="batch", features=64, hidden=256):
    """x[batch, 64] -> MatMul(64x256) + b -> Relu -> MatMul(256x10) -> y."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(
        rng.standard_normal((features, hidden)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(
        rng.standard_normal(hidden).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(
        rng.standard_normal((hidden, 10)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
             helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2")]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, features])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])],
        [w1, b1, w2])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def unsupported_ops():
    """Two nodes of ops snug does not import (Det, and one of a custom
    domain) around a supported Relu."""
    nodes = [helper.make_node("Det", ["x"], ["d"], name="det_node"),
             helper.make_node("Relu", ["d"], ["r"], name="relu_node"),
             helper.make_node("Frobnicate", ["r"], ["y"], name="custom_node",
                              domain="com.example")]
    graph = helper.make_graph(
        nodes, "unsupported",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])


def huge_relu(batch):
    """Relu over x[batch, 1024, 1024] f32: 4 MiB a batch, input and output."""
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "huge",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1024, 1024])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1024, 1024])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
