"""STEPS steps of plain SGD on dropout-train.onnxtxt (x @ W1 -> training
Dropout -> @ W2, mse against a target), computed here in float64 numpy with
the masks recomputed by dropout_mask.py (the Python port of snug's hash):
step k draws its mask from seed SEED + k, salt 0. Compares each snug run
(the 'step K: loss X' lines it printed, and the state it wrote with
--state-dir) with it: the losses, W1 and W2 after the last step within rtol
1e-5, and the seed state SEED + STEPS.

usage: dropout_train_check.py data OUT_DIR       (writes x.npy, target.npy)
       dropout_train_check.py check MODEL LR STEPS SEED RATIO DATA_DIR
           [--fixed-mask] STDOUT STATE_DIR [STDOUT STATE_DIR ...]
--fixed-mask uses step 0's mask at every step: the reference of a seed
that does not advance, which snug's runs must miss."""
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import dropout_mask  # noqa: E402
import onnxtxt_weights  # noqa: E402

N, K, H, C = 4, 8, 16, 2


def inputs():
    x = np.array([[math.sin(1.0 + i * 3 + j) for j in range(K)]
                  for i in range(N)], np.float32)
    target = np.array([[math.cos(0.5 + i * C + j) for j in range(C)]
                       for i in range(N)], np.float32)
    return x, target


if sys.argv[1] == "data":
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    x, target = inputs()
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "target.npy"), target)
    sys.exit(0)

model, lr, steps, seed, ratio, data_dir = sys.argv[2:8]
lr, steps, seed, ratio = float(lr), int(steps), int(seed), float(ratio)
rest = sys.argv[8:]
fixed = rest[:1] == ["--fixed-mask"]
runs = list(zip(rest[fixed::2], rest[fixed + 1::2]))

weights = onnxtxt_weights.read_initializers(model)
W = {name: np.array(data, np.float32).astype(np.float64).reshape(dims)
     for name, (dims, data) in weights.items()}
x = np.load(os.path.join(data_dir, "x.npy")).astype(np.float64)
t = np.load(os.path.join(data_dir, "target.npy")).astype(np.float64)
losses = []
for k in range(steps):
    m = dropout_mask.mask(seed + (0 if fixed else k), 0, ratio,
                          (N, H)).astype(np.float64)
    h = x @ W["W1"]
    d = h * m
    y = d @ W["W2"]
    losses.append(float(np.mean((y - t) ** 2)))
    dy = 2 * (y - t) / y.size
    dW2 = d.T @ dy
    dW1 = x.T @ ((dy @ W["W2"].T) * m)
    W["W1"] -= lr * dW1
    W["W2"] -= lr * dW2

failed = False


def check(ok, message):
    global failed
    failed |= not ok
    print(("ok: " if ok else "FAIL: ") + message)


rtol, atol = 1e-5, 1e-7
for stdout, state_dir in runs:
    run = os.path.basename(stdout)
    with open(stdout) as f:
        got = [float(v) for v in
               re.findall(r"^step \d+: loss (\S+)$", f.read(), re.M)]
    check(len(got) == steps and np.allclose(got, losses, rtol=rtol, atol=atol),
          "%s: %d losses match the reference within rtol %g" %
          (run, steps, rtol))
    for name in ("W1", "W2"):
        path = os.path.join(state_dir, name + ".npy")
        value = np.load(path) if os.path.exists(path) else None
        check(value is not None and value.shape == W[name].shape and
              np.allclose(value, W[name], rtol=rtol, atol=atol),
              "%s: %s matches the reference after %d steps" %
              (run, name, steps))
    path = os.path.join(state_dir, "dropout.seed.npy")
    value = np.load(path) if os.path.exists(path) else None
    check(value is not None and value.dtype == np.int64 and
          int(value) == seed + steps,
          "%s: the seed state is %d after %d steps" % (run, seed + steps,
                                                      steps))
sys.exit(1 if failed else 0)
