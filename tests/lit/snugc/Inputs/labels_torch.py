"""The references of train-labels.test: one SGD step (lr 1, so each
<weight>.updated is the weight minus torch's gradient) of ce8-train.onnxtxt
(Gemm, Relu, Gemm to logits [6, 8]) under
torch.nn.functional.cross_entropy, for one labelling.

usage: labels_torch.py MODEL.onnxtxt OUT_DIR LABELS [IGNORE_INDEX]
LABELS is a comma-separated list of 6 class labels; IGNORE_INDEX, when
given, is torch's ignore_index (otherwise torch's default, -100). Writes
x.npy and labels.npy into OUT_DIR, and, unless torch raises on a label
(which it prints), loss.npy and <weight>.updated.npy (what snug-run
--check DIR reads); prints torch's loss and, for comparison, the mean that
counts ignored items as zero loss (what snug computed before ignore-index
existed)."""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import onnxtxt_weights  # noqa: E402

model_path, out_dir, labels_text = sys.argv[1:4]
ignore = int(sys.argv[4]) if len(sys.argv) > 4 else -100
os.makedirs(out_dir, exist_ok=True)

params = {name: torch.tensor(data, dtype=torch.float32).reshape(dims)
          .requires_grad_()
          for name, (dims, data) in
          onnxtxt_weights.read_initializers(model_path).items()}
x = torch.tensor([[2.0 * np.sin(0.7 * i + 1.3 * j) for j in range(4)]
                  for i in range(6)], dtype=torch.float32)
labels = torch.tensor([int(v) for v in labels_text.split(",")],
                      dtype=torch.int64)

a = torch.relu(x @ params["W1"] + params["b1"])
logits = a @ params["W2"] + params["b2"]
np.save(os.path.join(out_dir, "x.npy"), x.numpy())
np.save(os.path.join(out_dir, "labels.npy"), labels.numpy())
try:
    loss = torch.nn.functional.cross_entropy(logits, labels,
                                             ignore_index=ignore)
except IndexError as error:
    print(f"torch raises IndexError: {error}")
    sys.exit(0)
loss.backward()
np.save(os.path.join(out_dir, "loss.npy"),
        np.array(loss.item(), dtype=np.float32))
for name, value in params.items():
    np.save(os.path.join(out_dir, name + ".updated.npy"),
            (value - value.grad).detach().numpy())

kept = labels != ignore
picked = -torch.log_softmax(logits.detach(), 1)[torch.arange(6),
                                                labels.clamp(0, 7)]
zero_counted = float((picked * kept).sum() / 6)
print(f"torch loss {loss.item():.6f}, ignored items counted as zero "
      f"{zero_counted:.6f}, gradient of W2 all zero: "
      f"{bool((params['W2'].grad == 0).all())}")
