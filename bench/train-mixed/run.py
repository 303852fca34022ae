#!/usr/bin/env python3
"""bench/train-mixed: ten SGD steps of resnet18 (torchvision, random
weights, seed 0, 10 classes, input Nx3x64x64 (N = --batch, 2), MSE loss
against a random target or, with --loss=cross-entropy, cross-entropy on
random class labels) compiled by `snugc train` at fp32 and --precision=bf16 and run on
the host executor (`snug-run --steps=10`), beside PyTorch's own ten steps
of the same net in fp32 and under CPU bf16 autocast (each Conv+BN fused as
the ONNX export in eval mode does, so both train the same parameters).

    .venv/bin/python bench/train-mixed/run.py [--build build] [--lr 0.0005]
        [--batch 2] [--loss mse|cross-entropy] [--work DIR]

Prints each run's ten losses and, per run, the largest relative difference
from fp32's losses (snug's and torch's); the figures of README.md came from
it. Not a test: bf16 noise on a loss that falls 35x in ten steps is what is
measured, and torch's bf16 has as much.
"""
import argparse
import copy
import os
import re
import subprocess
import tempfile

import numpy as np
import torch
import torchvision
from torch.nn.utils.fusion import fuse_conv_bn_eval


def fuse_bn(module):
    """Conv+BN pairs of a torchvision ResNet folded as the exporter does."""
    for child in module.children():
        fuse_bn(child)
    names = dict(module.named_children())
    for conv, bn in (("conv1", "bn1"), ("conv2", "bn2"), ("conv3", "bn3")):
        if conv in names and bn in names:
            setattr(module, conv,
                    fuse_conv_bn_eval(names[conv], names[bn]))
            setattr(module, bn, torch.nn.Identity())
    if isinstance(names.get("downsample"), torch.nn.Sequential):
        d = module.downsample
        module.downsample = torch.nn.Sequential(fuse_conv_bn_eval(d[0], d[1]))


def torch_losses(net, x, target, lr, bf16, loss_kind):
    net = copy.deepcopy(net)
    optimizer = torch.optim.SGD(net.parameters(), lr=lr)
    losses = []
    for _ in range(10):
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            y = net(x)
        loss = (torch.nn.functional.mse_loss(y.float(), target)
                if loss_kind == "mse" else
                torch.nn.functional.cross_entropy(y.float(), target))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def snug_losses(build, work, precision, lr, loss_kind):
    target_name = "target" if loss_kind == "mse" else "labels"
    bundle = os.path.join(work, "resnet18-%s.snug" % precision)
    subprocess.run([os.path.join(build, "bin", "snugc"), "train",
                    os.path.join(work, "resnet18.onnx"), "--loss=%s:y,%s" % (loss_kind, target_name),
                    "--optimizer=sgd", "--lr=%g" % lr,
                    "--precision=" + precision, "--target=host", "-o", bundle,
                    "--memory-report=none"], check=True,
                   stderr=subprocess.DEVNULL)
    out = subprocess.run([os.path.join(build, "bin", "snug-run"), bundle,
                          "--input", "x=@" + os.path.join(work, "x.npy"),
                          "--input",
                          "%s=@%s" % (target_name,
                                      os.path.join(work, target_name + ".npy")),
                          "--steps=10"], check=True, capture_output=True,
                         text=True).stdout
    return [float(v) for v in re.findall(r"step \d+: loss (\S+)", out)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--lr", type=float, default=0.0005)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--loss", choices=("mse", "cross-entropy"),
                        default="mse")
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="train-mixed-")
    os.makedirs(work, exist_ok=True)
    torch.manual_seed(0)
    net = torchvision.models.resnet18(num_classes=10).eval()
    x = torch.randn(args.batch, 3, 64, 64)
    torch.onnx.export(net, x, os.path.join(work, "resnet18.onnx"),
                      opset_version=13, input_names=["x"],
                      output_names=["y"])
    if args.loss == "mse":
        target = 0.1 * torch.randn(args.batch, 10)
        np.save(os.path.join(work, "target.npy"), target.numpy())
    else:
        target = torch.randint(0, 10, (args.batch,))
        np.save(os.path.join(work, "labels.npy"), target.numpy())
    np.save(os.path.join(work, "x.npy"), x.numpy())
    fuse_bn(net)
    rows = [
        ("snug fp32", snug_losses(args.build, work, "fp32", args.lr,
                                  args.loss)),
        ("snug bf16", snug_losses(args.build, work, "bf16", args.lr,
                                  args.loss)),
        ("torch fp32", torch_losses(net, x, target, args.lr, False,
                                    args.loss)),
        ("torch bf16 autocast", torch_losses(net, x, target, args.lr, True,
                                             args.loss)),
    ]
    worst = lambda a, b: max(abs(p - q) / abs(p) for p, q in zip(a, b))
    print("resnet18, batch %d, %s, SGD lr %g, ten steps (losses):"
          % (args.batch, args.loss, args.lr))
    for name, losses in rows:
        print("  %-20s %s" % (name, " ".join("%.5g" % v for v in losses)))
    snug32, torch32 = rows[0][1], rows[2][1]
    print("  snug bf16 vs snug fp32: worst relative difference %.4f"
          % worst(snug32, rows[1][1]))
    print("  torch bf16 vs torch fp32: worst relative difference %.4f"
          % worst(torch32, rows[3][1]))
    print("  snug fp32 vs torch fp32: worst relative difference %.4f"
          % worst(torch32, snug32))


if __name__ == "__main__":
    main()
