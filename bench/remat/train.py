#!/usr/bin/env python3
"""bench/remat/train.py: checkpoint selection on training steps, snug's
remat against sqrt(n) checkpointing (Chen, Xu, Zhang, Guestrin, "Training
Deep Nets with Sublinear Memory Cost", 2016) at equal memory.

    .venv/bin/python bench/remat/train.py [--build build] [--out bench/results]
        [--blocks 8,12,16,24] [--width 32] [--batch 256] [--target host]

Per model (a chain of BLOCKS Linear+Relu blocks, tests/lit/snugc/Inputs/
deep_mlp.py; one SGD step of an MSE loss, `snugc train`):
  none     the step planned without a budget: its predicted peak and its
           saved activations (the report's step.saved_activation_total_bytes)
  sqrt(n)  the `sqrt-checkpoint` pass (passes/memory/budget/SqrtCheckpoint.cpp) after the
           import pipeline: the forward's n nodes in segments of ceil(sqrt(n)),
           each segment's last result kept, the rest recomputed in the
           backward; its predicted peak P and recompute FLOPs
  snug@P   `--memory-budget=P`: remat on the joint graph at the baseline's
           peak (equal memory); its peak and recompute FLOPs
  snug@50% `--memory-budget` = peak - 0.5 x saved activations (issue 18's
           acceptance budget)
Recompute FLOPs are the report's step.recompute_flops, as % of the step's
FLOPs. Checks, exit 1 when broken: every budgeted plan fits its budget and
snug@P recomputes no more FLOPs than sqrt(n). A markdown table goes to
stdout, JSON to OUT/remat-train.json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODEL_SCRIPT = os.path.join(ROOT, "tests", "lit", "snugc", "Inputs",
                            "deep_mlp.py")


def train(build, model, target, extra):
    # The planned IR goes beside the model (never -o /dev/null: snugc
    # renames its output into place).
    product = os.path.join(os.path.dirname(model), "step.ir")
    command = [os.path.join(build, "bin", "snugc"), "train", model,
               "--loss=mse:y,target", "--optimizer=sgd", "--lr=0.01",
               f"--target={target}", "--emit=ir", "-o", product,
               "--memory-report=json", "--memory-report-file=-"] + extra
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in (0, 1) or not result.stdout.strip():
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr}")
    return json.loads(result.stdout), result.returncode == 0


def row(name, report, fits=True):
    step = report["step"]
    return {"plan": name, "peak": report["predicted_peak_bytes"],
            "saved_at_peak": step["saved_activation_bytes"],
            "recompute_flops": step["recompute_flops"],
            "recompute_pct": 100.0 * step["recompute_flops"] / report["flops"],
            "flops": report["flops"], "fits": fits}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench",
                                                      "results"))
    parser.add_argument("--blocks", default="8,12,16,24")
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--target", default="host")
    args = parser.parse_args()
    results, broken = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for blocks in [int(b) for b in args.blocks.split(",")]:
            directory = os.path.join(scratch, f"b{blocks}")
            subprocess.run([sys.executable, MODEL_SCRIPT, directory,
                            str(blocks), str(args.width), str(args.batch)],
                           check=True)
            model = os.path.join(directory, "deep-mlp.onnxtxt")
            full, _ = train(args.build, model, args.target, [])
            sqrt, _ = train(args.build, model, args.target,
                            ["--passes=import,sqrt-checkpoint"])
            peak = sqrt["predicted_peak_bytes"]
            equal, fits = train(args.build, model, args.target,
                                [f"--memory-budget={peak}"])
            saved = full["step"]["saved_activation_total_bytes"]
            half_budget = full["predicted_peak_bytes"] - saved // 2
            half, half_fits = train(args.build, model, args.target,
                                    [f"--memory-budget={half_budget}"])
            rows = [row("none", full), row("sqrt(n)", sqrt),
                    row("snug@P", equal, fits),
                    row("snug@50%", half, half_fits)]
            if not fits or not half_fits:
                broken.append(f"{blocks} blocks: a budget was not met")
            if equal["step"]["recompute_flops"] > sqrt["step"][
                    "recompute_flops"]:
                broken.append(f"{blocks} blocks: snug recomputes more than "
                              f"sqrt(n) at equal memory")
            results.append({"blocks": blocks, "width": args.width,
                            "batch": args.batch, "saved_bytes": saved,
                            "half_budget": half_budget, "rows": rows})
    print(f"training steps: {args.target} target, Linear+Relu chains of "
          f"width {args.width}, batch {args.batch}, SGD, MSE\n")
    print("| blocks | plan | predicted peak (B) | saved act. at peak (B) | "
          "recompute FLOPs | % of step | fits |")
    print("|---|---|---|---|---|---|---|")
    for result in results:
        for r in result["rows"]:
            print(f"| {result['blocks']} | {r['plan']} | {r['peak']} | "
                  f"{r['saved_at_peak']} | {r['recompute_flops']} | "
                  f"{r['recompute_pct']:.2f} | {'yes' if r['fits'] else 'no'} |")
    print("\nsnug@P: --memory-budget at sqrt(n)'s peak; snug@50%: peak - half "
          "the saved activations of the unbudgeted step.")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "remat-train.json"), "w") as f:
        json.dump(results, f, indent=2)
    for line in broken:
        print("BROKEN: " + line, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
