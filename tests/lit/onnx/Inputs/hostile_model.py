#!/usr/bin/env python3
"""hostile_model.py DIR: writes DIR/CASE.onnxtxt, a small text-format ONNX
model (opset 17 unless OPSETS says otherwise) for each case of issue 12
(hostile and broken input), all in one run (a Python start per case would
slow the test). Text format needs no onnx package; each case is one graph body, so the test reads as a
list of what is wrong with each model. x is always a graph input f32[2,3]
unless the case declares its own inputs."""
import os
import sys

INT64_MAX = 2**63 - 1
X = ('input { name: "x" type { tensor_type { elem_type: 1 shape { '
     'dim { dim_value: 2 } dim { dim_value: 3 } } } } }')
Y = 'output { name: "y" type { tensor_type { elem_type: 1 } } }'


def node(op, inputs, attrs="", name="n"):
    ins = " ".join(f'input: "{i}"' for i in inputs)
    return f'node {{ name: "{name}" op_type: "{op}" {ins} output: "y" {attrs} }}'


def attr(name, kind, field):
    return f'attribute {{ name: "{name}" type: {kind} {field} }}'


def input4d(name, dims):
    shape = " ".join(f"dim {{ dim_value: {d} }}" for d in dims)
    return (f'input {{ name: "{name}" type {{ tensor_type {{ elem_type: 1 '
            f'shape {{ {shape} }} }} }} }}')


def ints_initializer(name, values):
    data = " ".join(f"int64_data: {v}" for v in values)
    return f'initializer {{ name: "{name}" data_type: 7 dims: {len(values)} {data} }}'


def floats_initializer(name, dims, count):
    shape = " ".join(f"dims: {d}" for d in dims)
    data = " ".join("float_data: 1" for _ in range(count))
    return f'initializer {{ name: "{name}" data_type: 1 {shape} {data} }}'


CASES = {
    # Attributes of the wrong kind, unknown, or given twice.
    "softmax-string-axis": [X, Y, node("Softmax", ["x"], attr("axis", "STRING", 's: "zero"'))],
    "conv-float-group": [
        input4d("x", [1, 2, 4, 4]), Y, floats_initializer("w", [2, 1, 1, 1], 2),
        node("Conv", ["x", "w"], attr("group", "FLOAT", "f: 2.0") +
             attr("kernel_shape", "INTS", "ints: 1 ints: 1"))],
    "gemm-float-transb": [X, Y, floats_initializer("w", [2, 3], 6),
                          node("Gemm", ["x", "w"], attr("transB", "FLOAT", "f: 1.0"))],
    "transpose-float-perm": [X, Y, node("Transpose", ["x"],
                                        attr("perm", "FLOATS", "floats: 1.0 floats: 0.0"))],
    "int-for-float": [X, Y, node("LeakyRelu", ["x"], attr("alpha", "INT", "i: 1"))],
    "unknown-attribute": [X, Y, node("Softmax", ["x"], attr("axes", "INT", "i: 1"))],
    "duplicate-attribute": [X, Y, node("Softmax", ["x"], attr("axis", "INT", "i: 1") +
                                       attr("axis", "INT", "i: 0"))],
    "ignored-attribute": [X, Y, node("Dropout", ["x"], attr("seed", "INT", "i: 7"))],
    # Graph structure: user errors, not "the module does not verify".
    "duplicate-input": [X, X, Y, node("Relu", ["x"])],
    "duplicate-initializer": [X, Y, floats_initializer("w", [3], 3),
                              floats_initializer("w", [3], 3), node("Add", ["x", "w"])],
    "too-many-inputs": [X, Y, node("Relu", ["x", "x"])],
    # What the runtime would refuse, refused at compile time.
    "gather-out-of-range": [X, Y, ints_initializer("i", [0, 7]),
                            node("Gather", ["x", "i"], attr("axis", "INT", "i: 1"))],
    "softmax-axis-99": [X, Y, node("Softmax", ["x"], attr("axis", "INT", "i: 99"))],
    "lrn-size-0": [X, Y, node("LRN", ["x"], attr("size", "INT", "i: 0"))],
    "rank-17": [input4d("x", [1] * 17), Y, node("Relu", ["x"])],
    "batchnorm-parameters": [X, Y, floats_initializer("s", [2], 2),
                             node("BatchNormalization", ["x", "s", "s", "s", "s"])],
    # Shape arithmetic at the edges of int64.
    "slice-step-max": [input4d("x", [4, 10]), Y, ints_initializer("starts", [0]),
                       ints_initializer("ends", [INT64_MAX]), ints_initializer("axes", [0]),
                       ints_initializer("steps", [INT64_MAX]),
                       node("Slice", ["x", "starts", "ends", "axes", "steps"])],
    "conv-extreme-pads": [
        input4d("x", [1, 1, 4, 4]), Y, floats_initializer("w", [1, 1, 1, 1], 1),
        node("Conv", ["x", "w"], attr("pads", "INTS", f"ints: {INT64_MAX} ints: 0 ints: 1 ints: 0"))],
    "conv-zero-stride-same": [
        input4d("x", [1, 1, 4, 4]), Y, floats_initializer("w", [1, 1, 1, 1], 1),
        node("Conv", ["x", "w"], attr("auto_pad", "STRING", 's: "SAME_UPPER"') +
             attr("strides", "INTS", "ints: 0 ints: 1"))],
    "conv-same-extreme-dilations": [
        input4d("x", [1, 1, 4, 4]), Y, floats_initializer("w", [1, 1, 3, 3], 9),
        node("Conv", ["x", "w"], attr("auto_pad", "STRING", 's: "SAME_LOWER"') +
             attr("dilations", "INTS", f"ints: {2**62} ints: 1"))],
    "split-num-outputs": [X, Y, node("Split", ["x"], attr("num_outputs", "INT", f"i: {2**62}") +
                                     attr("axis", "INT", "i: 1"))],
    "pad-extreme": [X, Y, ints_initializer("p", [0, INT64_MAX, 0, 1]), node("Pad", ["x", "p"])],
}


# Cases that need a newer opset than 17 (num_outputs is opset 18's).
OPSETS = {"split-num-outputs": 18}


def deep(levels):
    # ModelProto.graph > node > attribute > g (a GraphProto) > node > ...
    return ("ir_version: 8\nopset_import { domain: \"\" version: 17 }\ngraph { " +
            "node { attribute { g { " * (levels // 3) + "} } } " * (levels // 3) + "}\n")


def model(case):
    if case == "deep":
        return deep(20000)
    body = "\n  ".join(CASES[case])
    return (f'ir_version: 8\nopset_import {{ domain: "" version: {OPSETS.get(case, 17)} }}\n'
            f'graph {{\n  name: "{case}"\n  {body}\n}}\n')


def main():
    directory = sys.argv[1]
    for case in list(CASES) + ["deep"]:
        with open(os.path.join(directory, case + ".onnxtxt"), "w") as out:
            out.write(model(case))


if __name__ == "__main__":
    main()
