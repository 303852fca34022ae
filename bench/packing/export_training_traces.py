#!/usr/bin/env python3
"""bench/packing/export_training_traces.py: the buffer-packing problems of
snug's own training steps on zoo models, for the packing benchmark.

    .venv/bin/python bench/packing/export_training_traces.py OUT_DIR
        [--build build] [--cache DIR] [--out bench/results]
        [--models densenet121,efficientnet_b0,...] [--batch 32]
        [--target cuda]

Per model: one Adam step (`snugc train --optimizer=adam`, cross-entropy
over the classifier's logits, BatchNormalization in training mode with
--batchnorm=batch) compiled with `--emit=buffers`, which writes the arena's
problem exactly as plan-memory hands it to the planner (schedule, fusion,
sharing and, on the CUDA target, the cuBLAS workspaces included) as
OUT_DIR/NAME.csv in the format `snugc plan-buffers` reads (id,lower,upper,
size; sizes are footprints at the default 256-byte alignment, so plan them
at alignment 1). The default models are the zoo's CNNs whose steps snug
compiles, most buffers first; --models may also name gpt2_small,
gpt2_small_s1024 and bert_small (an MSE loss on their last output, as
their logits are 3-D) or squeezenet1_1. Each file is checked: plan-buffers
--planner=none must give the step's own lower bound (exit 1 otherwise).
A markdown table (buffers, steps, lower bound, export seconds) goes to
stdout, JSON to OUT/training-traces.json.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import bench_arguments, write_results, zoo_model  # noqa: E402

CNN = ["--loss=cross-entropy:output,labels", "--batchnorm=batch"]
# Model name -> its step's flags besides the optimizer (every one binds the
# symbolic dim `batch`).
MODELS = {
    "densenet121": CNN,
    "efficientnet_b0": CNN,
    "googlenet": CNN,
    "resnet50": CNN,
    "mobilenet_v2": CNN,
    "squeezenet1_1": ["--loss=cross-entropy:output,labels"],
    "gpt2_small": ["--loss=mse:logits,target"],
    "gpt2_small_s1024": ["--loss=mse:logits,target"],
    "bert_small": ["--loss=mse:hidden,target"],
}
DEFAULT_MODELS = "densenet121,efficientnet_b0,googlenet,resnet50,mobilenet_v2"


def export(build, model, flags, csv, report):
    """Runs `snugc train ... --emit=buffers -o csv`: the seconds it took,
    or None and snugc's error."""
    command = [os.path.join(build, "bin", "snugc"), "train", model,
               "--optimizer=adam", "--lr=0.001", "--emit=buffers", "-o", csv,
               "--memory-report=json", "--memory-report-file=" + report] + flags
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if result.returncode != 0:
        return None, "%s failed:\n%s" % (" ".join(command), result.stderr)
    return seconds, None


def problem_bound(build, csv):
    """plan-buffers' lower bound of the file (bump allocation: instant)."""
    command = [os.path.join(build, "bin", "snugc"), "plan-buffers", csv,
               "--planner=none", "--format=json"]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(result.stdout)[0]["lower_bound_bytes"]


def count_rows(csv):
    buffers, steps = 0, 0
    with open(csv) as f:
        next(f)
        for line in f:
            _, _, upper, _ = line.split(",")
            buffers += 1
            steps = max(steps, int(upper))
    return buffers, steps


def main():
    parser = bench_arguments()
    parser.add_argument("out_dir", help="where NAME.csv are written")
    parser.add_argument("--models", default=DEFAULT_MODELS)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--target", default="cuda", choices=["cuda", "host"])
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    rows, broken = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.models.split(","):
            if name not in MODELS:
                parser.error("--models: no training flags for '%s' (known: %s)"
                             % (name, ", ".join(MODELS)))
            model = zoo_model(args.cache, name)
            if not model:
                broken.append("%s: not in %s (make zoo)" % (name, args.cache))
                continue
            flags = MODELS[name] + ["--target=" + args.target,
                                    "--dim", "batch=%d" % args.batch]
            csv = os.path.join(args.out_dir, name + ".csv")
            report_path = os.path.join(scratch, name + ".json")
            seconds, error = export(args.build, model, flags, csv, report_path)
            if error:
                broken.append(error)
                continue
            with open(report_path) as f:
                report = json.load(f)
            buffers, steps = count_rows(csv)
            bound = problem_bound(args.build, csv)
            if bound != report["lower_bound_bytes"]:
                broken.append("%s: the file's lower bound %d is not the step's "
                              "%d" % (name, bound, report["lower_bound_bytes"]))
            rows.append({"model": name, "csv": csv, "flags": flags,
                         "buffers": buffers, "steps": steps,
                         "lower_bound_bytes": report["lower_bound_bytes"],
                         "arena_bytes": report["arena_bytes"],
                         "planner": report["planner"],
                         "export_seconds": round(seconds, 3)})
    print("training steps (Adam, batch %d, %s target): arena packing problems "
          "in %s\n" % (args.batch, args.target, args.out_dir))
    print("| model | buffers | steps | lower bound (B) | snug's arena (B) | "
          "export (s) |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %d | %d | %d | %.2f |" % (
            r["model"], r["buffers"], r["steps"], r["lower_bound_bytes"],
            r["arena_bytes"], r["export_seconds"]))
    write_results(args.out, "training-traces.json", rows)
    for line in broken:
        print("BROKEN: " + line, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
