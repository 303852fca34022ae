"""Input and expected output of mlp.ir, computed by hand in plain Python.
Writes the ONNX backend-test layout (input_0.pb, output_0.pb) to argv[1] and
x.npy / y.npy to argv[2]."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import tensors  # noqa: E402

x = [1.0, -2.0, 0.5, 3.0]
w = [[0.5, -1.0, 2.0], [1.0, 0.25, -0.5], [-2.0, 1.5, 0.0], [0.75, 0.5, 1.0]]
b = [0.1, -0.2, 0.3]
h = [sum(x[k] * w[k][j] for k in range(4)) + b[j] for j in range(3)]
r = [max(v, 0.0) for v in h]
top = max(r)
e = [math.exp(v - top) for v in r]
y = [v / sum(e) for v in e]

pb_dir, npy_dir = sys.argv[1], sys.argv[2]
os.makedirs(pb_dir, exist_ok=True)
os.makedirs(npy_dir, exist_ok=True)
tensors.write_pb(os.path.join(pb_dir, "input_0.pb"), "f32", [1, 4], x, "x")
tensors.write_pb_float_data(os.path.join(pb_dir, "output_0.pb"), [1, 3], y)
tensors.write_npy(os.path.join(npy_dir, "x.npy"), "f32", [1, 4], x)
tensors.write_npy(os.path.join(npy_dir, "y.npy"), "f32", [1, 3], y)
# A deliberately wrong expectation, to see --check fail.
tensors.write_npy(os.path.join(npy_dir, "wrong_y.npy"), "f32", [1, 3],
                  [v + 0.01 for v in y])
