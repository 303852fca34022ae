"""Ten (or N) training steps of mlp-train.onnxtxt in PyTorch, the reference
for snug-run --steps: the same MLP (Gemm, Relu, MatMul, Add), MSE loss, and
torch.optim.SGD(momentum=MU) or torch.optim.AdamW, from the model's
initializers on the inputs train_reference.py wrote. It then reads what snug
printed (the 'step K: loss X' lines) and the state it wrote (--state-dir:
each parameter and optimizer state as NAME.npy) and compares: every loss
and every final tensor within rtol, and the losses strictly decreasing.

usage: train_torch.py MODEL momentum|adamw LR WEIGHT_DECAY STEPS DATA_DIR
                      SNUG_STDOUT SNUG_STATE_DIR [SNUG_STDOUT SNUG_STATE_DIR]...
Each pair is one snug run (the host's, the simulator's) checked against one
torch run; rtol 1e-4. Prints one line per check, prefixed with the run's
stdout file name; exits 1 when one fails."""
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import onnxtxt_weights  # noqa: E402

model_path, kind, lr, decay, steps, data_dir = sys.argv[1:7]
runs = list(zip(sys.argv[7::2], sys.argv[8::2]))
lr, decay, steps = float(lr), float(decay), int(steps)
rtol, atol = 1e-4, 1e-6

torch.manual_seed(0)
params = {name: torch.tensor(data, dtype=torch.float32).reshape(dims)
          .requires_grad_()
          for name, (dims, data) in
          onnxtxt_weights.read_initializers(model_path).items()}
x = torch.from_numpy(np.load(os.path.join(data_dir, "x.npy")))
target = torch.from_numpy(np.load(os.path.join(data_dir, "target.npy")))
order = ["W1", "b1", "W2", "b2"]
if kind == "momentum":
    optimizer = torch.optim.SGD([params[n] for n in order], lr=lr,
                                momentum=0.9, weight_decay=decay)
else:
    optimizer = torch.optim.AdamW([params[n] for n in order], lr=lr,
                                  weight_decay=decay)

losses = []
for _ in range(steps):
    optimizer.zero_grad()
    h = x @ params["W1"] + params["b1"]
    y = torch.relu(h) @ params["W2"] + params["b2"]
    loss = torch.mean((y - target) ** 2)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

# What snug's optimizer state is called, per torch's state key.
expected = {}
for name in order:
    p = params[name]
    expected[name] = p.detach().numpy()
    state = optimizer.state[p]
    if kind == "momentum":
        expected[name + ".momentum"] = state["momentum_buffer"].numpy()
    else:
        expected[name + ".exp_avg"] = state["exp_avg"].numpy()
        expected[name + ".exp_avg_sq"] = state["exp_avg_sq"].numpy()
        expected["optimizer.step"] = np.float32(state["step"].item())

failed = False


def check(ok, message):
    global failed
    failed |= not ok
    print(("ok: " if ok else "FAIL: ") + message)


for snug_stdout, state_dir in runs:
    run = os.path.basename(snug_stdout)
    with open(snug_stdout) as f:
        snug_losses = [float(v) for v in
                       re.findall(r"^step \d+: loss (\S+)$", f.read(), re.M)]
    check(len(snug_losses) == steps, "%s: snug printed %d losses, expected %d"
          % (run, len(snug_losses), steps))
    worst = max((abs(a - b) / abs(b) for a, b in zip(snug_losses, losses)),
                default=0)
    check(len(snug_losses) == steps and
          np.allclose(snug_losses, losses, rtol=rtol, atol=atol),
          "%s: %d losses match torch within rtol %g (worst %.2g): %s" %
          (run, steps, rtol, worst, " ".join("%.6f" % v for v in losses)))
    check(all(b < a for a, b in zip(losses, losses[1:])) and
          all(b < a for a, b in zip(snug_losses, snug_losses[1:])),
          "%s: losses decrease at every step" % run)
    for name, want in expected.items():
        path = os.path.join(state_dir, name + ".npy")
        got = np.load(path) if os.path.exists(path) else None
        check(got is not None and got.shape == np.shape(want) and
              np.allclose(got, want, rtol=rtol, atol=atol),
              "%s: state %s matches torch after %d steps" % (run, name, steps))
sys.exit(1 if failed else 0)
