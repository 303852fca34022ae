"""Data for conv.ir, by hand: a 2x2 convolution with two filters, Relu,
Sigmoid, and a 2x2 max pool doubled."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import tensors  # noqa: E402

x = [[1.0, -2.0, 3.0], [0.5, 4.0, -1.0], [2.0, -3.0, 0.25]]
filters = [[[1.0, 0.0], [0.0, 1.0]], [[0.5, 0.5], [-0.5, -0.5]]]
bias = [0.0, 1.0]
relu = []
for f in range(2):
    plane = []
    for i in range(2):
        for j in range(2):
            s = bias[f] + sum(filters[f][a][b] * x[i + a][j + b]
                              for a in range(2) for b in range(2))
            plane.append(max(s, 0.0))
    relu.append(plane)
y = [1.0 / (1.0 + math.exp(-v)) for plane in relu for v in plane]
pooled = [2.0 * max(plane) for plane in relu]
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
tensors.write_npy(os.path.join(d, "x.npy"), "f32", [1, 1, 3, 3],
                  [v for row in x for v in row])
tensors.write_npy(os.path.join(d, "y.npy"), "f32", [1, 2, 2, 2], y)
tensors.write_npy(os.path.join(d, "pooled.npy"), "f32", [1, 2, 1, 1], pooled)
