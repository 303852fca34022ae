#!/usr/bin/env python3
"""e2e: snugc --fit-batch on a zoo model with a stated budget.

    fit_batch.py --model NAME --opset N --budget SIZE --cache DIR --tools BIN
                 --export-script models/export_models.py

Runs `snugc plan --fit-batch=batch --memory-budget=SIZE`, reads the answer
N it prints, and checks it independently: planning at --dim batch=N with
the budget succeeds (the peak fits) and at batch=N+1 fails with the budget
error (it does not). Exits 77 (skipped) when the model is not exported and
cannot be here.
"""
import os
import re
import subprocess
import sys

from zoo_cache import SKIP, ensure_model, model_parser


def main():
    parser = model_parser()
    parser.add_argument("--budget", required=True)
    args = parser.parse_args()
    model_dir = ensure_model(args)
    if model_dir is None:
        return SKIP
    snugc = os.path.join(args.tools, "snugc")
    model = os.path.join(model_dir, "model.onnx")
    budget = f"--memory-budget={args.budget}"
    result = subprocess.run([snugc, "plan", model, "--fit-batch=batch", budget,
                             "--memory-report=none"],
                            capture_output=True, text=True)
    sys.stdout.write(result.stderr)
    match = re.search(r"fit-batch: batch=(\d+) is the largest that fits",
                      result.stderr)
    if result.returncode != 0 or not match:
        print(f"FAILED: --fit-batch exited {result.returncode} without an answer")
        return 1
    batch = int(match.group(1))
    for value, expected in ((batch, 0), (batch + 1, 1)):
        check = subprocess.run([snugc, "plan", model, f"--dim=batch={value}",
                                budget, "--memory-report=none"],
                               capture_output=True, text=True)
        if check.returncode != expected or (
                expected == 1 and "over the memory budget" not in check.stderr):
            print(f"FAILED: at batch={value} snugc plan with {budget} exited "
                  f"{check.returncode}, expected {expected}:\n{check.stderr}")
            return 1
    print(f"batch={batch} fits {args.budget}, batch={batch + 1} does not")
    return 0


if __name__ == "__main__":
    sys.exit(main())
