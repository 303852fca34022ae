"""One SGD step of mlp-train.onnxtxt, computed independently of snug in plain
Python (float64, then stored as f32): the forward pass, the loss, the
gradients written out by hand (the chain rule for Gemm, Relu, MatMul, Add and
the loss), and w - lr * g.

usage: train_reference.py MODEL.onnxtxt mse|cross-entropy LR OUT_DIR
Writes x.npy, the target (target.npy, f32[4,2]) or labels (labels.npy,
i64[4]), loss.npy and <weight>.updated.npy for W1, b1, W2, b2: what snug-run
--check DIR reads as inputs and expected outputs."""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "bundle", "Inputs"))
import tensors  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import onnxtxt_weights  # noqa: E402

model_path, loss_kind, lr, out_dir = sys.argv[1], sys.argv[2], float(
    sys.argv[3]), sys.argv[4]

weights = onnxtxt_weights.read_initializers(model_path)


def matrix(name):
    dims, data = weights[name]
    if len(dims) == 1:
        return [data[:]]
    return [data[i * dims[1]:(i + 1) * dims[1]] for i in range(dims[0])]


def matmul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(len(b)))
             for j in range(len(b[0]))] for i in range(len(a))]


def transpose(a):
    return [list(row) for row in zip(*a)]


def add_row(a, row):
    return [[v + row[j] for j, v in enumerate(r)] for r in a]


def column_sums(a):
    return [sum(r[j] for r in a) for j in range(len(a[0]))]


W1, b1, W2, b2 = matrix("W1"), matrix("b1")[0], matrix("W2"), matrix("b2")[0]
N, C = 4, 2
x = [[math.sin(1.0 + i * 3 + j) for j in range(3)] for i in range(N)]

h = add_row(matmul(x, W1), b1)
a = [[max(v, 0.0) for v in r] for r in h]
y = add_row(matmul(a, W2), b2)

if loss_kind == "mse":
    target = [[math.cos(0.5 + i * C + j) for j in range(C)] for i in range(N)]
    diff = [[y[i][j] - target[i][j] for j in range(C)] for i in range(N)]
    loss = sum(v * v for r in diff for v in r) / (N * C)
    dy = [[2 * v / (N * C) for v in r] for r in diff]
else:
    labels = [1, 0, 1, 1]
    loss, dy = 0.0, []
    for i in range(N):
        top = max(y[i])
        e = [math.exp(v - top) for v in y[i]]
        s = sum(e)
        loss -= math.log(e[labels[i]] / s) / N
        dy.append([(e[j] / s - (1.0 if j == labels[i] else 0.0)) / N
                   for j in range(C)])

dW2 = matmul(transpose(a), dy)
db2 = column_sums(dy)
da = matmul(dy, transpose(W2))
dh = [[da[i][j] if h[i][j] > 0 else 0.0 for j in range(len(h[0]))]
      for i in range(N)]
dW1 = matmul(transpose(x), dh)
db1 = column_sums(dh)


def flat(a):
    return [v for r in a for v in r] if isinstance(a[0], list) else a


def step(w, g):
    return [wv - lr * gv for wv, gv in zip(flat(w), flat(g))]


os.makedirs(out_dir, exist_ok=True)
tensors.write_npy(os.path.join(out_dir, "x.npy"), "f32", [N, 3], flat(x))
if loss_kind == "mse":
    tensors.write_npy(os.path.join(out_dir, "target.npy"), "f32", [N, C],
                      flat(target))
else:
    tensors.write_npy(os.path.join(out_dir, "labels.npy"), "i64", [N], labels)
tensors.write_npy(os.path.join(out_dir, "loss.npy"), "f32", [], [loss])
for name, w, g in [("W1", W1, dW1), ("b1", b1, db1), ("W2", W2, dW2),
                   ("b2", b2, db2)]:
    tensors.write_npy(os.path.join(out_dir, name + ".updated.npy"), "f32",
                      weights[name][0], step(w, g))
print("loss %.6f" % loss)
