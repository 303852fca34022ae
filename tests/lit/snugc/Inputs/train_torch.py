"""Ten (or N) training steps of mlp-train.onnxtxt in PyTorch, the reference
for snug-run --steps: the same MLP (Gemm, Relu, MatMul, Add), MSE loss, and
torch.optim.SGD(momentum=MU), torch.optim.Adam, torch.optim.AdamW or
Adafactor (torch 1.13 has none: adafactor_step below, written from Shazeer &
Stern 2018 as fairseq and HuggingFace run it, relative_step and
scale_parameter off; adafactor-beta1 adds the first moment, beta1 0.9), from the model's
initializers on the inputs train_reference.py wrote. It then reads what snug
printed (the 'step K: loss X' lines) and the state it wrote (--state-dir:
each parameter and optimizer state as NAME.npy) and compares: every loss
and every final tensor within rtol, and the losses strictly decreasing.

usage: train_torch.py MODEL momentum|adam|adamw|adafactor|adafactor-beta1
                      LR WEIGHT_DECAY STEPS DATA_DIR
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


class Adafactor:
    """Adafactor with a fixed step size: the second moment of a matrix
    factored into row and column means, update clipping at RMS 1, decay
    1 - t^-0.8, eps 1e-30, optional first moment, decoupled weight decay."""

    def __init__(self, params, lr, weight_decay, beta1=None):
        self.params, self.lr, self.decay, self.beta1 = params, lr, weight_decay, beta1
        self.state = {p: {"step": 0} for p in params}

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        for p in self.params:
            grad, state = p.grad, self.state[p]
            state["step"] += 1
            beta2t = 1.0 - state["step"] ** -0.8
            squared = grad * grad + 1e-30
            if p.dim() >= 2:
                if "exp_avg_sq_row" not in state:
                    state["exp_avg_sq_row"] = torch.zeros(p.shape[:-1])
                    state["exp_avg_sq_col"] = torch.zeros(p.shape[:-2] + p.shape[-1:])
                row, col = state["exp_avg_sq_row"], state["exp_avg_sq_col"]
                row.mul_(beta2t).add_(squared.mean(dim=-1), alpha=1 - beta2t)
                col.mul_(beta2t).add_(squared.mean(dim=-2), alpha=1 - beta2t)
                r = (row / row.mean(dim=-1, keepdim=True)).rsqrt().unsqueeze(-1)
                c = col.unsqueeze(-2).rsqrt()
                update = r * c * grad
            else:
                v = state.setdefault("exp_avg_sq", torch.zeros_like(p))
                v.mul_(beta2t).add_(squared, alpha=1 - beta2t)
                update = v.rsqrt() * grad
            rms = update.norm(2) / update.numel() ** 0.5
            update = update / torch.clamp(rms, min=1.0) * self.lr
            if self.beta1 is not None:
                m = state.setdefault("exp_avg", torch.zeros_like(p))
                m.mul_(self.beta1).add_(update, alpha=1 - self.beta1)
                update = m
            if self.decay:
                p.add_(p, alpha=-self.decay * self.lr)
            p.add_(-update)


if kind == "momentum":
    optimizer = torch.optim.SGD([params[n] for n in order], lr=lr,
                                momentum=0.9, weight_decay=decay)
elif kind == "adam":
    optimizer = torch.optim.Adam([params[n] for n in order], lr=lr,
                                 weight_decay=decay)
elif kind == "adamw":
    optimizer = torch.optim.AdamW([params[n] for n in order], lr=lr,
                                  weight_decay=decay)
else:
    optimizer = Adafactor([params[n] for n in order], lr, decay,
                          0.9 if kind == "adafactor-beta1" else None)

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
        continue
    for key in ("exp_avg", "exp_avg_sq", "exp_avg_sq_row", "exp_avg_sq_col"):
        if key in state:
            expected[name + "." + key] = state[key].numpy()
    expected["optimizer.step"] = np.float32(float(state["step"]))

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
