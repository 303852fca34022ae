#!/usr/bin/env python3
"""e2e: a zoo model fits a budget well below its remat-free peak.

    budget_fit.py --model NAME --opset N --batch B --below PERCENT
                  --cache DIR --tools BIN --export-script models/export_models.py

Plans the model at --dim batch=B without a budget (the remat-free peak P),
then compiles it for the host with --memory-budget = P * (100 - PERCENT) /
100 and --allow-micro-batches (or, with --offload GB/S, --allow-offload
at that link bandwidth and no micro-batches, and the report must show
values offloaded): the compile must succeed with a predicted peak within
that budget. Both bundles then run on the host executor on
the same random inputs (a poisoned arena), and their outputs must be the
same bits. Exits 77 (skipped) when the model is not exported and cannot be.
"""
import filecmp
import json
import os
import subprocess
import sys
import tempfile

from zoo_cache import SKIP, ensure_model, model_parser


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stdout.write(result.stdout + result.stderr)
        print(f"FAILED ({result.returncode}): {' '.join(command)}")
        sys.exit(1)
    return result


def main():
    parser = model_parser()
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--below", type=int, required=True)
    parser.add_argument("--offload", type=float,
                        help="fit with --allow-offload at this many GB/s")
    args = parser.parse_args()
    model_dir = ensure_model(args)
    if model_dir is None:
        return SKIP
    snugc = os.path.join(args.tools, "snugc")
    snug_run = os.path.join(args.tools, "snug-run")
    model = os.path.join(model_dir, "model.onnx")
    dims = [f"--dim=batch={args.batch}", "--target=host"]
    free = json.loads(run([snugc, "plan", model, "--memory-report=json"]
                          + dims).stdout)
    peak = free["predicted_peak_bytes"]
    budget = peak * (100 - args.below) // 100
    with tempfile.TemporaryDirectory() as scratch:
        whole = os.path.join(scratch, "whole.snug")
        fitted = os.path.join(scratch, "fitted.snug")
        report_path = os.path.join(scratch, "fitted.json")
        run([snugc, "compile", model, "-o", whole, "--memory-report=none"]
            + dims)
        fit = (["--allow-offload", f"--offload-bandwidth={args.offload}"]
               if args.offload else ["--allow-micro-batches"])
        run([snugc, "compile", model, "-o", fitted,
             f"--memory-budget={budget}",
             "--memory-report=json", "--memory-report-file=" + report_path]
            + fit + dims)
        with open(report_path) as f:
            report = json.load(f)
        if report["predicted_peak_bytes"] > budget:
            print(f"FAILED: predicted peak {report['predicted_peak_bytes']} "
                  f"over the budget {budget}")
            return 1
        if args.offload and not (report["offload"] or {}).get("values"):
            print(f"FAILED: nothing offloaded: {report['offload']}")
            return 1
        print(f"{args.model} batch {args.batch}: remat-free peak {peak} B, "
              f"budget {budget} B ({args.below} % below), predicted "
              f"{report['predicted_peak_bytes']} B in "
              f"{report['micro_batches']} micro-batches, remat "
              f"{report.get('remat', {})}, offload {report['offload']}")
        inputs = []
        described = run([snug_run, whole, "--describe"]).stdout
        for line in described.splitlines():
            words = line.split()
            if len(words) > 2 and words[0] == "input":
                inputs += ["--input", f"{words[2]}=random"]
        outputs = {}
        for name, bundle in (("whole", whole), ("fitted", fitted)):
            outputs[name] = os.path.join(scratch, "out-" + name)
            run([snug_run, bundle, "--device", "host", "--seed", "11",
                 "--poison", "--output-dir", outputs[name]] + inputs)
        names = sorted(os.listdir(outputs["whole"]))
        if not names or names != sorted(os.listdir(outputs["fitted"])):
            print("FAILED: the two runs wrote different output sets")
            return 1
        for name in names:
            if not filecmp.cmp(os.path.join(outputs["whole"], name),
                               os.path.join(outputs["fitted"], name),
                               shallow=False):
                print(f"FAILED: output {name} differs")
                return 1
        print(f"{len(names)} outputs bit-identical with and without the budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
