"""Inputs of indexing.ir as .npy files in argv[1]: valid ones, and in
argv[1]/bad-* the same with one value out of range (indexing-errors.test)."""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(__file__))
import tensors  # noqa: E402

INPUTS = {
    "x": ("f32", [2, 3], [1, 2, 3, 4, 5, 6]),
    "i": ("i64", [2, 2], [2, 0, 1, -1]),
    "axis": ("i64", [], [1]),
    "t": ("i64", [1, 1], [1]),
    "u": ("f32", [1, 3], [10, 20, 30]),
}
BAD = {"i": [2, 0, 3, 0], "axis": [2], "t": [-3]}


def write(directory, overrides):
    os.makedirs(directory, exist_ok=True)
    for name, (dtype, shape, values) in INPUTS.items():
        tensors.write_npy(os.path.join(directory, name + ".npy"), dtype, shape,
                          overrides.get(name, values))


root = sys.argv[1]
write(os.path.join(root, "good"), {})
for name, values in BAD.items():
    write(os.path.join(root, "bad-" + name), {name: values})
