"""N training steps of cnn_train_reference.py's CNN in PyTorch (float64,
BatchNorm in eval mode, torch.optim.SGD with momentum MU, 0 for plain SGD)
from its initial weights, checked against the losses snug printed ('step K:
loss X') within rtol 1e-4: the fp32 baseline train-mixed.test compares the
lowered steps with.

usage: cnn_torch_steps.py OUT_DIR LR MU STEPS SNUG_STDOUT
(OUT_DIR receives cnn_train_reference.py's files.) Prints one line per
check; exits 1 when one fails."""
import re
import runpy
import os
import sys

import numpy as np
import torch

out_dir, lr, mu, steps, stdout = sys.argv[1:6]
lr, mu, steps = float(lr), float(mu), int(steps)
sys.argv = [sys.argv[0], out_dir, str(lr)]
here = os.path.dirname(os.path.abspath(__file__))
ns = runpy.run_path(os.path.join(here, "cnn_train_reference.py"))
net, params, weights = ns["net"], ns["params"], ns["weights"]
x = torch.from_numpy(ns["x"].astype(np.float64))
target = torch.from_numpy(ns["target"].astype(np.float64))
with torch.no_grad():  # the reference took one step: start again
    for name, p in params.items():
        p.copy_(torch.from_numpy(weights[name].astype(np.float64)))
optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=mu)
expected = []
for _ in range(steps):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(net(x), target)
    loss.backward()
    optimizer.step()
    expected.append(loss.item())

with open(stdout) as f:
    got = [float(v) for v in re.findall(r"step \d+: loss (\S+)", f.read())]
ok = len(got) == steps and np.allclose(got, expected, rtol=1e-4, atol=0)
print("%s: %d snug losses match torch's %d within rtol 0.0001"
      % ("ok" if ok else "FAIL", len(got), steps))
if not ok:
    print("snug  " + " ".join("%.6g" % v for v in got))
    print("torch " + " ".join("%.6g" % v for v in expected))
sys.exit(0 if ok else 1)
