#!/usr/bin/env python3
"""torch_bench.py: the PyTorch side of the GPU benchmark in tools/gpu-check.sh.

For each zoo model name given, builds the same architecture as
models/export_models.py (same builder, same seed, same inputs), moves it to
the GPU and measures, in eager mode and under torch.compile:
  latency   median and min/max of --runs runs after --warmup, CUDA events
  peak      torch.cuda.max_memory_allocated during the runs, weights included
Prints one JSON object per line: {"model", "mode", "median_ms", "min_ms",
"max_ms", "peak_bytes"} or {"model", "mode", "skipped": reason}. Never fails
the check: a model torch cannot build or compile here is reported as skipped.
"""
import argparse
import json
import os
import statistics
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "models"))


def measure(fn, args, warmup, runs, torch):
    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(runs):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return {"median_ms": statistics.median(times), "min_ms": min(times),
            "max_ms": max(times), "peak_bytes": torch.cuda.max_memory_allocated()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--no-compile", action="store_true")
    args = parser.parse_args()
    try:
        import torch
        if not torch.cuda.is_available():
            raise ImportError("torch has no CUDA device")
        import export_models
        builders = export_models.all_models()
    except Exception as error:  # no torch, no torchvision, no device
        for name in args.models:
            print(json.dumps({"model": name, "mode": "eager", "skipped": str(error)}))
        return 0
    for name in args.models:
        if name not in builders:
            print(json.dumps({"model": name, "mode": "eager", "skipped": "not a zoo model"}))
            continue
        torch.manual_seed(0)
        try:
            model, inputs, _ = builders[name]()
            model = model.eval().cuda()
            feeds = tuple(t.cuda() for _, t, _ in inputs)
        except Exception as error:
            print(json.dumps({"model": name, "mode": "eager", "skipped": str(error)}))
            continue
        modes = [("eager", model)]
        if not args.no_compile:
            try:
                modes.append(("compile", torch.compile(model)))
            except Exception as error:
                print(json.dumps({"model": name, "mode": "compile", "skipped": str(error)}))
        for mode, fn in modes:
            try:
                with torch.inference_mode():
                    result = measure(fn, feeds, args.warmup, args.runs, torch)
                print(json.dumps({"model": name, "mode": mode, **result}), flush=True)
            except Exception as error:
                print(json.dumps({"model": name, "mode": mode,
                                  "skipped": str(error).splitlines()[0][:200]}), flush=True)
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
