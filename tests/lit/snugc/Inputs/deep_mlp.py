"""A stack of BLOCKS Linear+Relu blocks (Gemm with bias, Relu) of WIDTH
features, then a Gemm to OUT features: a chain deep enough for
checkpointing to matter in a training step (each block leaves the Gemm's
input and the Relu's input for the backward pass).

usage: deep_mlp.py OUT_DIR BLOCKS WIDTH BATCH
BATCH is a number, or a name for a symbolic dim (bound with --dim NAME=N or
found with --fit-batch=NAME). Writes OUT_DIR/deep-mlp.onnx and, for a
numeric BATCH, x.npy and target.npy (seeded, so every run writes the same
bytes)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out_dir, blocks, width, batch = sys.argv[1], int(sys.argv[2]), int(
    sys.argv[3]), sys.argv[4]
outputs = 4
os.makedirs(out_dir, exist_ok=True)
rng = np.random.default_rng(7)
nodes, initializers = [], []
previous = "x"
for i in range(blocks + 1):
    last = i == blocks
    w = rng.uniform(-1, 1, (width, outputs if last else width)) / np.sqrt(width)
    b = rng.uniform(-0.1, 0.1, (outputs if last else width,))
    initializers += [numpy_helper.from_array(w.astype(np.float32), f"W{i}"),
                     numpy_helper.from_array(b.astype(np.float32), f"b{i}")]
    hidden = "y" if last else f"h{i}"
    nodes.append(helper.make_node("Gemm", [previous, f"W{i}", f"b{i}"],
                                  [hidden], name=f"fc{i}"))
    if not last:
        nodes.append(helper.make_node("Relu", [hidden], [f"a{i}"],
                                      name=f"act{i}"))
        previous = f"a{i}"
dim = int(batch) if batch.isdigit() else batch
graph = helper.make_graph(
    nodes, "deep_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, width])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [dim, outputs])],
    initializers)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
model.ir_version = 8
onnx.save(model, os.path.join(out_dir, "deep-mlp.onnx"))
if batch.isdigit():
    np.save(os.path.join(out_dir, "x.npy"),
            rng.standard_normal((dim, width)).astype(np.float32))
    np.save(os.path.join(out_dir, "target.npy"),
            rng.standard_normal((dim, outputs)).astype(np.float32))
