#!/usr/bin/env python3
"""bench/accumulate: the predicted peak of one training step (snugc train,
SGD) compiled on the whole batch and with gradient accumulation
(--accumulate=K: K micro-batches of batch / K samples, one update).

    .venv/bin/python bench/accumulate/run.py [--build build] [--cache DIR]
        [--out bench/results] [--batch 8]

Models: the MLP of tests/lit/snugc/train.test (batch 4, its own), the CNN
of train-cnn.test (Conv, BatchNormalization, MaxPool, grouped Conv, Gemm;
written by its reference script, which needs torch) and, where the zoo is
exported, squeezenet1_1 and resnet50 (cross-entropy over their logits).
Columns: K, samples per micro-batch, predicted peak and arena (bytes), and
the peak as a share of the whole batch's. Compiled for the host target, so
no cuBLAS workspace is in the arena. Models a step cannot be compiled for
yet (an op without a gradient rule) are listed with the error.
A markdown table goes to stdout, JSON to OUT/accumulate.json.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import REPO, bench_arguments, write_results, zoo_model  # noqa: E402

LIT_INPUTS = os.path.join(REPO, "tests", "lit", "snugc", "Inputs")


def train_report(build, model, flags, scratch):
    """The JSON memory report of `snugc train model flags`, or the error."""
    path = os.path.join(scratch, "report.json")
    command = [os.path.join(build, "bin", "snugc"), "train", model,
               "--lr=0.01", "--target=host", "-o", os.devnull,
               "--memory-report=json", "--memory-report-file=" + path]
    result = subprocess.run(command + flags, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [l for l in result.stderr.splitlines() if "error" in l]
        return None, (lines or ["exit %d" % result.returncode])[0]
    with open(path) as f:
        return json.load(f), None


def main():
    parser = bench_arguments()
    parser.add_argument("--batch", type=int, default=8)
    args = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="snug-accumulate-")
    batch = args.batch
    models = [("mlp", os.path.join(LIT_INPUTS, "mlp-train.onnxtxt"), 4,
               ["--loss=mse:y,target"])]
    cnn_dir = os.path.join(scratch, "cnn")
    made = subprocess.run([sys.executable,
                           os.path.join(LIT_INPUTS, "cnn_train_reference.py"),
                           cnn_dir, "0.1", "eval", str(batch)],
                          capture_output=True, text=True)
    if made.returncode == 0:
        models.append(("cnn (train-cnn.test)",
                       os.path.join(cnn_dir, "cnn-train.onnxtxt"), batch,
                       ["--loss=mse:y,target"]))
    for name in ("squeezenet1_1", "resnet50"):
        path = zoo_model(args.cache, name)
        if path:
            models.append((name, path, batch,
                           ["--dim", "batch=%d" % batch,
                            "--loss=cross-entropy:output,labels"]))
    rows = []
    print("| model | batch | K | micro-batch | predicted peak | arena | peak / whole |")
    print("|---|---|---|---|---|---|---|")
    for label, path, size, flags in models:
        whole = None
        for k in (1, 2, 4, 8):
            if size % k:
                continue
            extra = ["--accumulate=%d" % k] if k > 1 else []
            report, error = train_report(args.build, path, flags + extra, scratch)
            if error:
                print("| %s | %d | %d | %d | %s | | |" % (label, size, k, size // k, error))
                rows.append({"model": label, "batch": size, "k": k, "error": error})
                break
            peak, arena = report["predicted_peak_bytes"], report["arena_bytes"]
            whole = whole or peak
            print("| %s | %d | %d | %d | %d | %d | %.2f |" % (
                label, size, k, size // k, peak, arena, peak / whole))
            rows.append({"model": label, "batch": size, "k": k,
                         "micro_batch": size // k, "predicted_peak_bytes": peak,
                         "arena_bytes": arena})
    write_results(args.out, "accumulate.json", rows)


if __name__ == "__main__":
    main()
