#!/usr/bin/env python3
"""Plan a torchvision model at several batches and print a table: how much
memory will it take, and which batch fits a budget, before any GPU is
touched.

    python examples/python/plan_batches.py                  # resnet18
    python examples/python/plan_batches.py --model mobilenet_v2 \
        --batches 1,8,64 --budget 4GiB

The model is exported once through torch.onnx with a symbolic batch
(snug.torch.export), then planned at each batch with snug.plan (what
`snugc plan --dim batch=N` does); snug.torch.fit_batch finds the largest
batch under --budget. Weights are random (no download).
"""
import argparse

import torch
import torchvision

import snug
import snug.torch


def mib(count: int) -> str:
    return f"{count / (1 << 20):10.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet18",
                        help="a torchvision.models constructor (resnet18)")
    parser.add_argument("--batches", default="1,2,4,8,16,32,64")
    parser.add_argument("--budget", default="2GiB",
                        help="memory budget for fit_batch (2GiB)")
    parser.add_argument("--target", default=None, help="cuda or host")
    args = parser.parse_args()

    torch.manual_seed(0)
    module = getattr(torchvision.models, args.model)().eval()
    image = lambda batch: torch.randn(batch, 3, 224, 224)  # noqa: E731
    model = snug.torch.export(module, image(2), dynamic=True)
    options = {"target": args.target} if args.target else {}

    print(f"{args.model}: predicted device memory by batch (MiB)")
    print(f"{'batch':>6} {'weights':>10} {'arena':>10} {'peak':>10}  "
          "largest live at the peak")
    for batch in (int(b) for b in args.batches.split(",")):
        report = snug.plan(model, dims={"batch": batch},
                           name=f"{args.model}.onnx", **options)
        largest = report.live_at_peak[0] if report.live_at_peak else None
        where = (f"{largest.op} {largest.name[:40]}" if largest else "")
        print(f"{batch:>6} {mib(report.weights_bytes)} "
              f"{mib(report.arena_bytes)} "
              f"{mib(report.predicted_peak_bytes)}  {where}")
    fits = snug.torch.fit_batch(module, image, budget=args.budget, **options)
    print(f"largest batch within {args.budget}: {fits}")


if __name__ == "__main__":
    main()
