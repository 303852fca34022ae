"""Data for overlap.ir: c = -x + exp(x), the value a correct plan gives."""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import tensors  # noqa: E402

x = [0.0, 1.0, -1.0, 2.0]
c = [-v + math.exp(v) for v in x]
os.makedirs(sys.argv[1], exist_ok=True)
tensors.write_npy(os.path.join(sys.argv[1], "x.npy"), "f32", [1, 4], x)
tensors.write_npy(os.path.join(sys.argv[1], "c.npy"), "f32", [1, 4], c)
