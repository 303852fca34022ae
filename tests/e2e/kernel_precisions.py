#!/usr/bin/env python3
"""The zoo's kernel-report rule (tests/e2e/kernel_report.py: no kernel with
local or spill bytes, none over a launch limit) at the lowered precisions:
the model compiled with `snugc compile --target=cuda --precision=P
--kernel-report` (sm_80 and sm_90, the default --arch) for each P of
--precisions, its report checked. run_model.py checks the fp32 compile it
does anyway; this is the rest of issue 36's "every zoo model at f32, fp16,
bf16 and tf32", a test of its own per model so that ctest runs them side by
side. Compiles only: what the lowered kernels compute is checked by the
precision tests. Exits 77 (ctest: skipped) when the model is missing and
cannot be exported here.

    kernel_precisions.py --model M --opset 17 --cache DIR --tools BIN
        [--precisions fp16,bf16,tf32] [--export-script S]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import kernel_report
from zoo_cache import SKIP, bindings, ensure_model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--opset", type=int, default=17)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--tools", required=True)
    parser.add_argument("--export-script")
    parser.add_argument("--precisions", default="fp16,bf16,tf32")
    args = parser.parse_args()
    model_dir = ensure_model(args)
    if model_dir is None:
        return SKIP
    snugc = os.path.join(args.tools, "snugc")
    failed = False
    with tempfile.TemporaryDirectory() as scratch:
        for precision in args.precisions.split(","):
            report = os.path.join(scratch, precision + ".json")
            command = [snugc, "compile", os.path.join(model_dir, "model.onnx"),
                       "-o", os.path.join(scratch, precision + ".snug"),
                       "--target=cuda", "--precision=" + precision,
                       "--memory-report=none", "--kernel-report=" + report
                       ] + bindings(model_dir)
            start = time.monotonic()
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                print(result.stdout + result.stderr)
                print(f"FAILED ({result.returncode}): {' '.join(command)}")
                failed = True
                continue
            print(f"{precision}: compiled in {time.monotonic() - start:.1f} s")
            if not kernel_report.check(report, precision):
                failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
