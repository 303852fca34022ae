#!/usr/bin/env python3
"""run_conformance.py: ONNX backend tests through the whole of snug.

For every test directory (model.onnx + test_data_set_0/) under the roots:
    snugc compile model.onnx -o T.snug [--input bindings]   (import, default
        pipeline, schedule, plan-memory, bundle)
    snug-run T.snug --device host --check test_data_set_0 --poison
A test is SKIPPED, with its reason, when the model needs something snug
refuses by design or does not support yet, and says so: an unsupported op
(named), an element type snug lacks (string, uint32, ...), an opset outside
7..21, a non-default domain only (training ops), training-mode ops, or a
shape or parameter that is a runtime input (snug compiles static shapes; it
names the value), or a zero-size dim (rejected by design: every value has
positive dims). Any other failure to compile, run or match is FAILED: a
mismatch is never skipped. Prints the
failures, the skipped ops by count, and a closing line
    conformance: N passed, N failed, N skipped
Exit 1 when passed / (passed + failed) is below --min-pass-ratio, or when
fewer than --min-passed tests pass.

Inputs whose shapes in the model are symbolic are bound (--input NAME:DIMS)
from the test's own input_N.pb.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

import onnx

UNSUPPORTED = re.compile(r"^\s+(\S+) \(domain ([^,]*), opset (\d+)\): \d+ node", re.M)
# What the compiler says when a model is outside what snug supports.
SKIP_REASONS = [
    ("element type", re.compile(r"has element type (\w+), which snug does not support")),
    ("element type", re.compile(r"cast to (\w+) is not supported")),
    ("opset", re.compile(r"(older than snug supports|newer than snug supports)")),
    ("domain", re.compile(r"(imports no opset of the default ONNX domain)")),
    ("training mode", re.compile(r"(training-mode \w+) is not supported")),
    ("zero-size dim", re.compile(r"(dim \d+ is 0); snug needs positive dims")),
    ("runtime parameter", re.compile(r"\((\w+)\): \w+ '[^']*' is not a constant; snug needs it known at compile time")),
]


def find_tests(roots):
    tests = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            if "model.onnx" in filenames and os.path.isdir(
                    os.path.join(dirpath, "test_data_set_0")):
                tests.append(dirpath)
                dirnames[:] = []
    return sorted(tests)


def bindings_for(test_dir):
    """--input flags for graph inputs with symbolic or unknown dims."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    flags = []
    for index, value in enumerate(inputs):
        shape = value.type.tensor_type.shape
        static = value.type.tensor_type.HasField("shape") and all(
            d.HasField("dim_value") for d in shape.dim)
        if static:
            continue
        path = os.path.join(test_dir, "test_data_set_0", f"input_{index}.pb")
        if not os.path.exists(path):
            continue
        tensor = onnx.TensorProto()
        with open(path, "rb") as f:
            tensor.ParseFromString(f.read())
        if any(d <= 0 for d in tensor.dims):
            continue  # bindings take positive dims only
        flags += ["--input", f"{value.name}:" + "x".join(str(d) for d in tensor.dims)]
    return flags


def run_one(test_dir, tools, scratch, planner):
    name = os.path.relpath(test_dir, os.path.dirname(os.path.dirname(test_dir)))
    bundle = os.path.join(scratch, name.replace(os.sep, "__") + ".snug")
    try:
        flags = bindings_for(test_dir)
    except Exception as error:  # a model onnx itself cannot read
        return name, "failed", f"cannot read the model: {error}"
    compile_cmd = [os.path.join(tools, "snugc"), "compile",
                   os.path.join(test_dir, "model.onnx"), "-o", bundle,
                   "--memory-report=none", "--planner=" + planner,
                   "--target=host"] + flags
    result = subprocess.run(compile_cmd, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        ops = UNSUPPORTED.findall(result.stderr)
        if ops and "does not support" in result.stderr:
            return name, "skipped", ",".join(
                "op " + op for op in sorted({op for op, _, _ in ops}))
        for kind, pattern in SKIP_REASONS:
            match = pattern.search(result.stderr)
            if match:
                return name, "skipped", f"{kind} {match.group(1)}"
        message = [l for l in result.stderr.splitlines() if "error" in l]
        return name, "failed", "compile: " + (message[0] if message else result.stderr[-300:])
    run_cmd = [os.path.join(tools, "snug-run"), bundle, "--device", "host",
               "--check", os.path.join(test_dir, "test_data_set_0"), "--poison"]
    result = subprocess.run(run_cmd, capture_output=True, text=True, timeout=300)
    os.remove(bundle)
    if result.returncode != 0:
        lines = [l for l in (result.stdout + result.stderr).splitlines()
                 if "MISMATCH" in l or "error" in l]
        return name, "failed", "run: " + (lines[0] if lines else result.stderr[-300:])
    return name, "passed", ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--tools", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--planner", default="best")
    parser.add_argument("--min-pass-ratio", type=float, default=0.9)
    parser.add_argument("--min-passed", type=int, default=1)
    args = parser.parse_args()

    tests = find_tests(args.roots)
    if not tests:
        print("conformance: no tests found under", " ".join(args.roots))
        return 1
    outcomes = collections.Counter()
    failures, skipped_ops = [], collections.Counter()
    with tempfile.TemporaryDirectory() as scratch:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_one, t, args.tools, scratch, args.planner)
                       for t in tests]
            for future in futures:
                name, outcome, detail = future.result()
                outcomes[outcome] += 1
                if outcome == "failed":
                    failures.append((name, detail))
                elif outcome == "skipped":
                    for op in detail.split(","):
                        skipped_ops[op] += 1
    for name, detail in failures:
        print(f"FAILED {name}: {detail}")
    if skipped_ops:
        print("skipped, by reason (tests):")
        for op, count in skipped_ops.most_common():
            print(f"  {op}: {count}")
    passed, failed = outcomes["passed"], outcomes["failed"]
    ratio = passed / max(1, passed + failed)
    print(f"pass ratio of tests whose ops are supported: {passed}/{passed + failed}"
          f" = {100 * ratio:.1f}%")
    print(f"conformance: {passed} passed, {failed} failed, {outcomes['skipped']} skipped")
    return 0 if ratio >= args.min_pass_ratio and passed >= args.min_passed else 1


if __name__ == "__main__":
    sys.exit(main())
