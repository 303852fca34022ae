#!/usr/bin/env python3
"""--kernel-report for every zoo model at every precision (issue 36): each
model exported at opset 17, compiled with `snugc compile --target=cuda`
(sm_80 and sm_90, the default --arch) at --precision fp32, fp16, bf16 and
tf32, and its report checked by tests/e2e/kernel_report.py: no kernel with
local or spill bytes, none over a launch limit. Prints the table (kernels,
worst registers, records with a frame, compile seconds) and writes
bench/results/kernel-report.json; exits 1 when any report breaks the rule.

The e2e tier checks the same rule (tests/e2e/run_model.py at fp32,
tests/e2e/kernel_precisions.py at fp16, bf16 and tf32); this is the sweep
as one table, with compile times.

    bench/kernel-report/run.py [--build build] [--precisions fp32,fp16] [model ...]
"""
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import REPO, bench_arguments, write_results, zoo_dir, zoo_names  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import kernel_report  # noqa: E402


def run_one(args, name, precision, scratch):
    model_dir = zoo_dir(args.cache, name)
    model = os.path.join(model_dir, "model.onnx")
    row = {"model": name, "precision": precision}
    if not os.path.exists(model):
        row["result"] = "not exported"
        return row
    inputs = os.path.join(model_dir, "inputs.txt")
    bindings = open(inputs).read().split() if os.path.exists(inputs) else []
    report = os.path.join(scratch, f"{name}-{precision}.json")
    start = time.monotonic()
    result = subprocess.run(
        [os.path.join(args.build, "bin", "snugc"), "compile", model, "-o",
         os.path.join(scratch, "m.snug"), "--target=cuda",
         "--precision=" + precision, "--kernel-report=" + report] + bindings,
        capture_output=True, text=True)
    row["compile_s"] = round(time.monotonic() - start, 1)
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        row["result"] = "FAIL: compile: " + (lines[-1] if lines else "?")[:200]
        return row
    records = kernel_report.load(report)
    row.update(kernel_report.summary(records))
    found = kernel_report.problems(records)
    row["result"] = "FAIL: " + "; ".join(found[:3]) if found else "ok"
    return row


def main():
    parser = bench_arguments()
    parser.add_argument("--precisions", default="fp32,fp16,bf16,tf32")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    names = zoo_names(args.models)
    rows = []
    print("| model | precision | kernels | worst registers | max threads | "
          "records with local/spill | local B | spill B | compile s | result |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            for precision in args.precisions.split(","):
                row = run_one(args, name, precision, scratch)
                rows.append(row)
                print(f"| {name} | {precision} | {row.get('kernels', '')} | "
                      f"{row.get('max_registers', '')} | "
                      f"{row.get('max_threads', '')} | {row.get('framed', '')} | "
                      f"{row.get('local_bytes', '')} | "
                      f"{row.get('spill_bytes', '')} | "
                      f"{row.get('compile_s', '')} | {row['result']} |",
                      flush=True)
    write_results(args.out, "kernel-report.json", rows)
    return 1 if any(r["result"].startswith("FAIL") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
