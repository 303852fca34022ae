#!/usr/bin/env python3
"""schema_attr_models.py DIR: writes DIR/CASE.onnxtxt for schema-attributes.test,
one small text-format model per case (the builders of hostile_model.py, each
case at its own opset), and DIR/slice9/{x,y}.npy, the input and expected
output of the opset-9 Slice whose bounds are attributes (computed here in
plain Python)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bundle", "Inputs"))
from hostile_model import X, Y, attr, input4d, ints_initializer, node  # noqa: E402
import tensors  # noqa: E402

INTS_2_1 = "ints: 2 ints: 1"


def scales_initializer(values):
    data = " ".join(f"float_data: {v}" for v in values)
    return f'initializer {{ name: "scales" data_type: 1 dims: {len(values)} {data} }}'


# case: (opset, graph body)
CASES = {
    # Attributes of snug's canonical form only: ONNX's Tile has none (its
    # repeats are an input), Reshape's shape is an input from opset 5,
    # Slice's bounds from opset 10, and steps never were attributes.
    "tile-repeats-opset13": (13, [X, Y, ints_initializer("r", [2, 1]),
                                  node("Tile", ["x", "r"], attr("repeats", "INTS", INTS_2_1))]),
    "reshape-shape-opset13": (13, [X, Y, ints_initializer("s", [3, 2]),
                                   node("Reshape", ["x", "s"], attr("shape", "INTS", "ints: 3 ints: 2"))]),
    "slice-starts-opset13": (13, [X, Y, ints_initializer("b", [0]), ints_initializer("e", [1]),
                                  node("Slice", ["x", "b", "e"], attr("starts", "INTS", "ints: 0"))]),
    "slice-steps-opset9": (9, [X, Y, node("Slice", ["x"], attr("starts", "INTS", "ints: 0") +
                                          attr("ends", "INTS", "ints: 1") +
                                          attr("steps", "INTS", "ints: 1"))]),
    # Opset 9's Slice takes its bounds as attributes.
    "slice-attrs-opset9": (9, [input4d("x", [4, 5]), Y,
                               node("Slice", ["x"], attr("starts", "INTS", "ints: 1 ints: -4") +
                                    attr("ends", "INTS", "ints: 3 ints: 1000") +
                                    attr("axes", "INTS", "ints: 0 ints: 1"))]),
    # Squeeze's axes: an attribute up to opset 12, an input from 13.
    "squeeze-attr-opset11": (11, [input4d("x", [2, 1, 3]), Y,
                                  node("Squeeze", ["x"], attr("axes", "INTS", "ints: 1"))]),
    "squeeze-attr-opset13": (13, [input4d("x", [2, 1, 3]), Y,
                                  node("Squeeze", ["x"], attr("axes", "INTS", "ints: 1"))]),
    "squeeze-input-opset13": (13, [input4d("x", [2, 1, 3]), Y, ints_initializer("a", [1]),
                                   node("Squeeze", ["x", "a"])]),
    # In the schema's type only (a list of ints, not one int).
    "squeeze-int-axes-opset11": (11, [input4d("x", [2, 1, 3]), Y,
                                      node("Squeeze", ["x"], attr("axes", "INT", "i: 1"))]),
    # An ONNX_ATTR of OnnxAttrs.def, before the opset that brought it (19).
    "cast-saturate-opset17": (17, [X, Y, node("Cast", ["x"], attr("to", "INT", "i: 1") +
                                              attr("saturate", "INT", "i: 1"))]),
    # Trilu's first schema is opset 14's.
    "trilu-upper-opset13": (13, [X, Y, node("Trilu", ["x"], attr("upper", "INT", "i: 0"))]),
    # Resize's antialias (opset 18) filters a linear downscale; an upscale
    # it does not change.
    "resize-antialias-down": (18, [input4d("x", [1, 1, 4, 4]), Y, scales_initializer([1, 1, 0.5, 0.5]),
                                   node("Resize", ["x", "", "scales"], attr("mode", "STRING", 's: "linear"') +
                                        attr("antialias", "INT", "i: 1"))]),
    "resize-antialias-up": (18, [input4d("x", [1, 1, 4, 4]), Y, scales_initializer([1, 1, 2, 2]),
                                 node("Resize", ["x", "", "scales"], attr("mode", "STRING", 's: "linear"') +
                                      attr("antialias", "INT", "i: 1"))]),
    # In the schema (opset 11 on), and refused by the Constant importer.
    "constant-sparse-opset13": (13, [Y, node("Constant", [], attr(
        "sparse_value", "SPARSE_TENSOR",
        "sparse_tensor { values { dims: 1 data_type: 1 float_data: 1 } "
        "indices { dims: 1 data_type: 7 int64_data: 0 } dims: 3 }"))]),
}


def model(case):
    opset, body = CASES[case]
    body = "\n  ".join(body)
    return (f'ir_version: 8\nopset_import {{ domain: "" version: {opset} }}\n'
            f'graph {{\n  name: "{case.replace("-", "_")}"\n  {body}\n}}\n')


def main():
    directory = sys.argv[1]
    for case in CASES:
        with open(os.path.join(directory, case + ".onnxtxt"), "w") as out:
            out.write(model(case))
    # x[1:3, 1:5] of a 4x5 ramp: starts 1 and -4 (= 1), ends 3 and 1000
    # (clamped to 5).
    x = [[10.0 * i + j for j in range(5)] for i in range(4)]
    y = [row[1:5] for row in x[1:3]]
    data = os.path.join(directory, "slice9")
    os.makedirs(data, exist_ok=True)
    tensors.write_npy(os.path.join(data, "x.npy"), "f32", [4, 5], sum(x, []))
    tensors.write_npy(os.path.join(data, "y.npy"), "f32", [2, 4], sum(y, []))


if __name__ == "__main__":
    main()
