"""Training steps of zoo models in PyTorch, the reference for `snugc train`
on them: resnet18 (torchvision, 10 classes, BatchNorm in training mode:
batch statistics, running statistics updated), the GPT-2 style decoder of
models/export_models.py (build_gpt2 at a short sequence) and the default
TinyNet (models/export_models.py's build_default, BatchNorm in training
mode too).

usage: zoo_train_torch.py export MODEL OUT_DIR
         builds MODEL with a fixed seed and writes OUT_DIR/model.onnx (the
         weights as initializers named as PyTorch names its parameters and
         buffers, the names snug-run --state-dir writes; BatchNorm nodes kept, not folded into the Convs), the
         step's data (x.npy and target.npy, or labels.npy) and the initial
         weights (weights.pt).
       zoo_train_torch.py check MODEL OUT_DIR momentum|adamw LR STEPS
                                SNUG_STDOUT SNUG_STATE_DIR [...]
         runs STEPS steps of torch.optim.SGD(momentum=0.9) or
         torch.optim.AdamW (weight decay 0.01, eps 1e-3) from weights.pt on the data
         and compares each snug run (the 'step K: loss X' lines of snug-run
         --steps, and the state --state-dir wrote): the losses, every
         parameter and every BatchNorm running statistic after the last
         step, within rtol 1e-4 (atol 1e-6); losses strictly decreasing when
         STEPS > 1. Prints one line per check with the worst error as a
         fraction of the tolerance (|a - b| / (atol + rtol |b|), what
         np.allclose bounds by 1); exits 1 when one fails.

Losses: resnet18 and GPT-2 cross-entropy on logits (GPT-2's next-token
labels over its 16 positions, its logits reshaped to [positions, vocab]),
TinyNet mse of its softmax output against a one-hot target."""
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                "..", "models"))
import export_models  # noqa: E402

RTOL, ATOL = 1e-4, 1e-6
SEQ, VOCAB = 16, 1000
DATA_SEED = 1


class Flat(torch.nn.Module):
    """The decoder's logits as [positions, vocab], cross-entropy's [N, C]."""

    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids):
        return self.decoder(input_ids).reshape(-1, VOCAB)


def build(name):
    """(module in training mode, example input, loss kind, target)."""
    torch.manual_seed(0)
    if name == "resnet18":
        import torchvision
        net = torchvision.models.resnet18(num_classes=10)
        # Data that keeps every Relu input off 0 by more than fp32 rounding
        # (BatchNorm over a layer4 channel's 8 elements amplifies it): with
        # seed 0's data the last Relu has an input 1.3e-6 from 0 that torch's
        # and snug's f32 sums put on different sides, one gradient element
        # that changes every upstream gradient by 2 %.
        torch.manual_seed(DATA_SEED)
        x = torch.randn(2, 3, 64, 64)
        return net, x, "cross-entropy", torch.tensor([3, 7])
    if name == "gpt2":
        decoder, inputs, _ = export_models.build_gpt2(SEQ=SEQ)
        ids = torch.randint(0, VOCAB, (1, SEQ + 1))
        return Flat(decoder), ids[:, :SEQ], "cross-entropy", ids[0, 1:]
    if name == "default":
        net, _, _ = export_models.build_default()
        x = torch.randn(4, 3, 32, 32)
        return net, x, "mse", torch.eye(10)[torch.tensor([1, 4, 0, 9])]
    sys.exit("zoo_train_torch.py: no model " + name)


def export(name, out_dir):
    net, x, kind, target = build(name)
    os.makedirs(out_dir, exist_ok=True)
    torch.save(net.state_dict(), os.path.join(out_dir, "weights.pt"))
    # PRESERVE with the submodules in eval mode: BatchNormalization nodes in
    # inference form (no Conv folding, which only EVAL does), weights under
    # PyTorch's names (no constant folding renaming transposed weights). The
    # top module's training flag stays set: torch 1.13 deduplicates equal
    # initializers (every fresh BatchNorm's ones and zeros) into Identity
    # nodes of one weight unless it is, which would train them as one.
    net.eval()
    net.training = True
    torch.onnx.export(net, (x,), os.path.join(out_dir, "model.onnx"),
                      opset_version=13, input_names=["x"],
                      output_names=["y"], do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE)
    np.save(os.path.join(out_dir, "x.npy"), x.numpy())
    np.save(os.path.join(out_dir, "labels.npy" if kind == "cross-entropy"
                         else "target.npy"), target.numpy())


def reference(name, out_dir, optimizer_kind, lr, steps):
    """torch's losses and final named tensors (parameters and buffers)."""
    net, x, kind, target = build(name)
    net.load_state_dict(torch.load(os.path.join(out_dir, "weights.pt")))
    net.train()
    params = list(net.parameters())
    if optimizer_kind == "momentum":
        optimizer = torch.optim.SGD(params, lr=lr, momentum=0.9)
    else:
        # eps 1e-3, not 1e-8: Adam's first step is lr g / (|g| + eps), so a
        # gradient element near 0 moves its parameter by up to lr |dg| / eps
        # for a rounding difference dg of its gradient. snug's and torch's
        # fp32 gradients differ by ~1e-6 of their largest: with eps 1e-8
        # that was 20x the tolerance on GPT-2's parameters (lr 1e-3) and
        # 3000x on resnet18's; eps 1e-3 and, for resnet18, lr 1e-4 bring
        # both under a third, while a step of twice the lr still misses by
        # 100x.
        optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=0.01,
                                      eps=1e-3)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        y = net(x)
        if kind == "cross-entropy":
            loss = torch.nn.functional.cross_entropy(y, target)
        else:
            loss = torch.nn.functional.mse_loss(y, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    # The parameters and BatchNorm's running statistics; not other buffers
    # (GPT-2's causal mask, BatchNorm's step count), which do not train.
    tensors = {n: t.detach().numpy() for n, t in net.named_parameters()}
    tensors.update((n, t.numpy()) for n, t in net.named_buffers()
                   if n.endswith(("running_mean", "running_var")))
    return losses, tensors


def worst(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.max(np.abs(got - want) / (ATOL + RTOL * np.abs(want)),
                        initial=0.0))


def check(name, out_dir, optimizer_kind, lr, steps, runs):
    losses, tensors = reference(name, out_dir, optimizer_kind, lr, steps)
    failed = False

    def report(ok, message):
        nonlocal failed
        failed |= not ok
        print(("ok: " if ok else "FAIL: ") + message)

    for stdout, state_dir in runs:
        run = os.path.basename(stdout)
        with open(stdout) as f:
            got = [float(v) for v in
                   re.findall(r"^step \d+: loss (\S+)$", f.read(), re.M)]
        report(len(got) == steps,
               "%s: snug printed %d losses, expected %d" %
               (run, len(got), steps))
        same = len(got) == steps
        error = worst(got, losses) if same else float("inf")
        report(same and error <= 1,
               "%s: %d losses match torch (worst %.3g of the tolerance): %s" %
               (run, steps, error, " ".join("%.6f" % v for v in losses)))
        if steps > 1:
            report(all(b < a for a, b in zip(got, got[1:])) and
                   all(b < a for a, b in zip(losses, losses[1:])),
                   "%s: losses decrease at every step" % run)
        kinds = {"parameter": (0.0, 0), "statistic": (0.0, 0)}
        missing = []
        for tensor, want in tensors.items():
            path = os.path.join(state_dir, tensor + ".npy")
            if not os.path.exists(path):
                missing.append(tensor)
                continue
            got_tensor = np.load(path)
            error = (worst(got_tensor, want) if got_tensor.shape == want.shape
                     else float("inf"))
            role = ("statistic" if tensor.endswith(("running_mean",
                                                    "running_var"))
                    else "parameter")
            largest, count = kinds[role]
            kinds[role] = (max(largest, error), count + 1)
            if error > 1:
                report(False, "%s: %s differs from torch (%.3g of the "
                       "tolerance)" % (run, tensor, error))
        report(not missing, "%s: snug wrote every tensor torch has%s" %
               (run, ": missing " + " ".join(missing[:5]) if missing else ""))
        # What else snug keeps across steps is a parameter's optimizer
        # buffers (<parameter>.momentum, ...) or the optimizer's own
        # (optimizer.step): never a tensor torch does not train, such as
        # a LayerNorm's epsilon held in an ONNX Constant.
        extra = sorted(
            f[:-len(".npy")] for f in os.listdir(state_dir)
            if f.endswith(".npy") and f[:-len(".npy")] not in tensors and
            not f.startswith("optimizer.") and
            not any(f.startswith(t + ".") for t in tensors))
        report(not extra, "%s: snug keeps no state torch does not train%s" %
               (run, ": " + " ".join(extra[:5]) if extra else ""))
        for role, (largest, count) in kinds.items():
            if count:
                report(largest <= 1, "%s: %d %ss match torch after %d steps "
                       "(worst %.3g of the tolerance)" %
                       (run, count, role, steps, largest))
    sys.exit(1 if failed else 0)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "export":
        export(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 9 and sys.argv[1] == "check" and len(sys.argv) % 2:
        name, out_dir, kind, lr, steps = sys.argv[2:7]
        if kind not in ("momentum", "adamw"):
            sys.exit("the optimizer must be momentum or adamw, not " + kind)
        check(name, out_dir, kind, float(lr), int(steps),
              list(zip(sys.argv[7::2], sys.argv[8::2])))
    else:
        sys.exit(__doc__)


main()
