"""A stack of BLOCKS Linear+Relu blocks (Gemm with bias, Relu) of WIDTH
features, then a Gemm to 4 features: a chain deep enough for
checkpointing to matter in a training step (each block leaves the Gemm's
result and the Relu's for the backward pass).

usage: deep_mlp.py OUT_DIR BLOCKS WIDTH BATCH
BATCH is a number, or a name for a symbolic dim (bound with --dim NAME=N or
found with --fit-batch=NAME). Writes OUT_DIR/deep-mlp.onnxtxt (ONNX text
format) and, for a numeric BATCH, x.npy and target.npy; seeded, so every
run writes the same bytes. Standard library only (the lit tests' %python
has neither numpy nor onnx)."""
import math
import os
import random
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "bundle", "Inputs"))
import tensors  # noqa: E402

out_dir, blocks, width, batch = sys.argv[1], int(sys.argv[2]), int(
    sys.argv[3]), sys.argv[4]
outputs = 4
os.makedirs(out_dir, exist_ok=True)
rng = random.Random(7)


def f32(value):
    """`value` rounded to f32, printed so that it reads back exactly."""
    return repr(struct.unpack("<f", struct.pack("<f", value))[0])


def initializer(name, dims, scale):
    data = " ".join(f"float_data: {f32(rng.uniform(-scale, scale))}"
                    for _ in range(math.prod(dims)))
    shape = " ".join(f"dims: {d}" for d in dims)
    return f'  initializer {{ name: "{name}" data_type: 1 {shape} {data} }}'


def tensor_type(name, dims):
    shape = " ".join(
        f'dim {{ dim_value: {d} }}' if isinstance(d, int) else
        f'dim {{ dim_param: "{d}" }}' for d in dims)
    return (f'{{ name: "{name}" type {{ tensor_type {{ elem_type: 1 '
            f'shape {{ {shape} }} }} }} }}')


nodes, initializers = [], []
previous = "x"
for i in range(blocks + 1):
    last = i == blocks
    features = outputs if last else width
    initializers.append(initializer(f"W{i}", [width, features],
                                    width ** -0.5))
    initializers.append(initializer(f"b{i}", [features], 0.1))
    hidden = "y" if last else f"h{i}"
    nodes.append(f'  node {{ name: "fc{i}" op_type: "Gemm" input: '
                 f'"{previous}" input: "W{i}" input: "b{i}" output: '
                 f'"{hidden}" }}')
    if not last:
        nodes.append(f'  node {{ name: "act{i}" op_type: "Relu" input: '
                     f'"{hidden}" output: "a{i}" }}')
        previous = f"a{i}"
dim = int(batch) if batch.isdigit() else batch
text = "\n".join(
    ["ir_version: 8", 'opset_import { domain: "" version: 13 }', "graph {",
     '  name: "deep_mlp"'] + nodes + initializers +
    ["  input " + tensor_type("x", [dim, width]),
     "  output " + tensor_type("y", [dim, outputs]), "}"]) + "\n"
with open(os.path.join(out_dir, "deep-mlp.onnxtxt"), "w") as f:
    f.write(text)
if isinstance(dim, int):
    tensors.write_npy(os.path.join(out_dir, "x.npy"), "f32", [dim, width],
                      [rng.gauss(0, 1) for _ in range(dim * width)])
    tensors.write_npy(os.path.join(out_dir, "target.npy"), "f32",
                      [dim, outputs],
                      [rng.gauss(0, 1) for _ in range(dim * outputs)])
