#!/usr/bin/env python3
"""run_conformance.py: ONNX backend tests through the whole of snug.

For every test directory (model.onnx + test_data_set_0/) under the roots:
    snugc compile model.onnx -o T.snug [--input bindings]   (import, default
        pipeline, schedule, plan-memory, bundle)
    snug-run T.snug --device host --check test_data_set_0 --poison
A test is SKIPPED, with its reason, when the model needs something snug
refuses by design or does not support yet, and says so: an unsupported op
(named), an element type snug lacks (string, complex, float8, ...), an opset outside
7..27, a non-default domain only (training ops), training-mode ops, or a
shape or parameter that is a runtime value other than a graph input
(snug compiles static shapes; it names the value), a zero-size dim (rejected by design: every value has
positive dims), or a graph input that is not a tensor (a sequence or map;
snug's values are tensors). Any other failure to compile, run or match is FAILED: a
mismatch is never skipped. Prints the
failures, the skipped ops by count, and a closing line
    conformance: N passed, N failed, N skipped
Exit 1 when passed / (passed + failed) is below --min-pass-ratio, or when
fewer than --min-passed tests pass.

A graph input that snugc refuses as a runtime parameter (Reshape's shape,
a Reduce's axes, Resize's sizes), or that such a parameter is computed
from, is frozen to its test data with --freeze-input and the test compiled
again; such passes are counted as
passes and the summary says how many.

Inputs whose shapes in the model are symbolic are bound (--input NAME:DIMS)
from the test's own input_N.pb.

--device cuda runs the CUDA bundles on the device (exit 77, skipped, without
one). --device cudasim runs the CUDA backend's product on the CUDA simulator
(tests/cudasim) instead:
    snugc compile model.onnx -o T.snug --target=cuda --dump-cuda DIR
    tests/cudasim/compile_kernels.sh DIR/model.cu DIR/model.so
    snug-run T.snug --device host --check test_data_set_0 --poison
    snug-cudasim T.snug --kernels DIR/model.so --check test_data_set_0
A model the CUDA backend refuses ("cannot compile for CUDA: ...", an op
without a CUDA kernel) is SKIPPED with the op; an NVRTC or g++ failure of
the emitted kernels, a simulator error or a mismatch is FAILED. With
--require-host-parity the exit status is 1 when any test passes on the host
executor but fails on the simulator. Bounded subsets: --max-test-bytes N
keeps the tests whose model and test data take at most N bytes,
--per-op-set N the first N tests of each set of op types a model uses.
--snugc-flag F (repeatable) adds F to every compile, e.g.
--snugc-flag=--disable-pass=fuse to run the tests with fusion off.
"""
import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import onnx

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from cuda_device import no_device_reason  # noqa: E402

UNSUPPORTED = re.compile(r"^\s+(\S+) \(domain ([^,]*), opset (\d+)\): \d+ node", re.M)
# What the compiler says when a model is outside what snug supports.
SKIP_REASONS = [
    ("element type", re.compile(r"has element type (\w+), which snug does not support")),
    ("element type", re.compile(r"cast to (\w+) is not supported")),
    ("opset", re.compile(r"(older than snug supports|newer than snug supports)")),
    ("domain", re.compile(r"(imports no opset of the default ONNX domain)")),
    ("training mode", re.compile(r"(training-mode \w+) is not supported")),
    ("zero-size dim", re.compile(r"(dim \d+ is 0); snug needs positive dims")),
    ("non-tensor value", re.compile(r"graph (input) '[^']*' is not a tensor")),
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


RUNTIME_PARAMETER = re.compile(
    r"\(\w+\): \w+ '([^']*)' is not a constant; snug needs it known at compile time")


def graph_inputs(test_dir):
    """{name: its test_data_set_0 file} of the graph inputs that are not
    initializers (the node tests number their files by this order)."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    return {name: os.path.join(test_dir, "test_data_set_0", f"input_{index}.pb")
            for index, name in enumerate(names)}


def source_inputs(test_dir, name, inputs):
    """The graph inputs among `inputs` that value `name` is computed from
    (through the graph's nodes; itself when it is one)."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    producer = {out: node for node in model.graph.node for out in node.output}
    found, seen, stack = [], set(), [name]
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        if value in inputs:
            found.append(value)
        elif value in producer:
            stack.extend(v for v in producer[value].input if v)
    return sorted(found)


def compile_freezing(compile_cmd, test_dir):
    """Runs snugc; while it refuses a runtime parameter (a shape, axes or
    bound snug needs at compile time) that is a graph input or computed
    from graph inputs (an ONNX function's expansion casts its size input
    first), compiles again with those inputs frozen to their test data
    (--freeze-input), as a deployment that knows them would. (result,
    frozen, snug-run's --input flags: when inputs were frozen, the bundle's
    input indices no longer match the files', so the rest go by name; none
    otherwise). The model is read only once a parameter is refused."""
    files, frozen = None, {}
    while True:
        flags = [f"--freeze-input={n}=@{p}" for n, p in frozen.items()]
        result = subprocess.run(compile_cmd + flags, capture_output=True,
                                text=True, timeout=300)
        match = RUNTIME_PARAMETER.search(result.stderr)
        if result.returncode == 0 or not match:
            inputs = [f"--input={n}=@{p}" for n, p in files.items()
                      if n not in frozen] if frozen else []
            return result, frozen, inputs
        files = files or graph_inputs(test_dir)
        sources = [n for n in source_inputs(test_dir, match.group(1), files)
                   if n not in frozen]
        if not sources or not all(os.path.exists(files[n]) for n in sources):
            return result, frozen, []
        for n in sources:
            frozen[n] = files[n]


def compile_failure(stderr):
    """(outcome, detail) of a failed snugc compile."""
    ops = UNSUPPORTED.findall(stderr)
    if ops and "does not support" in stderr:
        return "skipped", ",".join(
            "op " + op for op in sorted({op for op, _, _ in ops}))
    for kind, pattern in SKIP_REASONS:
        match = pattern.search(stderr)
        if match:
            return "skipped", f"{kind} {match.group(1)}"
    message = [l for l in stderr.splitlines() if "error" in l]
    return "failed", "compile: " + (message[0] if message else stderr[-300:])


# What snugc says when the CUDA backend refuses a node (EmitContext::
# unsupported, or an op without an emitter).
CUDA_REFUSED = re.compile(r"cannot compile for CUDA: node '[^']*' \((\w+)\): (.*?)"
                          r"(?: \(--target=host|$)", re.M)


def first_error(text, fallback_chars=300):
    lines = [l for l in text.splitlines()
             if "MISMATCH" in l or "error" in l]
    return lines[0] if lines else text[-fallback_chars:]


def run_one_cudasim(test_dir, tools, scratch, planner, cudasim_dir, extra=()):
    """(name, outcome, detail, passes on the host) on the CUDA simulator."""
    name = os.path.relpath(test_dir, os.path.dirname(os.path.dirname(test_dir)))
    work = os.path.join(scratch, name.replace(os.sep, "__"))
    os.makedirs(work, exist_ok=True)
    bundle = os.path.join(work, "model.snug")
    data = os.path.join(test_dir, "test_data_set_0")
    try:
        flags = bindings_for(test_dir)
    except Exception as error:  # a model onnx itself cannot read
        return name, "failed", f"cannot read the model: {error}", False
    compile_cmd = ([os.path.join(tools, "snugc"), "compile",
                    os.path.join(test_dir, "model.onnx"), "-o", bundle,
                    "--memory-report=none", "--planner=" + planner,
                    "--target=cuda", "--arch=sm_80", "--dump-cuda", work]
                   + list(extra) + flags)
    result, frozen, inputs = compile_freezing(compile_cmd, test_dir)
    if result.returncode != 0:
        refused = CUDA_REFUSED.search(result.stderr)
        if refused:
            why = refused.group(2)
            if "has no CUDA kernel" in why:
                return name, "skipped", f"cuda: no kernel for {refused.group(1)}", None
            return name, "skipped", f"cuda: {refused.group(1)} unsupported ({why[:60]})", None
        outcome, detail = compile_failure(result.stderr)
        host_ok = None
        if outcome == "failed":  # NVRTC, or an emitter's internal error
            host_ok = run_one(test_dir, tools, work, planner)[1].startswith("passed")
        return name, outcome, detail, host_ok
    source = os.path.join(work, "model.cu")
    library = os.path.join(work, "model.so")
    result = subprocess.run(
        ["sh", os.path.join(cudasim_dir, "compile_kernels.sh"), source, library],
        capture_output=True, text=True, timeout=300)
    def host():  # only asked when the simulator fails
        return subprocess.run([os.path.join(tools, "snug-run"), bundle, "--device",
                               "host", "--check", data, "--poison"] + inputs,
                              capture_output=True, text=True, timeout=300)
    if result.returncode == 0:
        try:
            sim = subprocess.run([os.path.join(tools, "snug-cudasim"), bundle,
                                  "--kernels", library, "--check", data] + inputs,
                                 capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            sim = subprocess.CompletedProcess([], 124, "", "error: timed out "
                                              "after 300 s (a kernel that never ends?)")
    if result.returncode != 0:
        host_ok = host().returncode == 0
        shutil.rmtree(work, ignore_errors=True)
        return (name, "failed", "g++ (kernels as host C++): " +
                first_error(result.stderr), host_ok)
    if sim.returncode != 0:
        detail = "cudasim: " + first_error(sim.stdout + sim.stderr)
        on_host = host()
        if on_host.returncode != 0:
            detail += (" (fails on the host too: " +
                       first_error(on_host.stdout + on_host.stderr) + ")")
        shutil.rmtree(work, ignore_errors=True)
        return name, "failed", detail, on_host.returncode == 0
    shutil.rmtree(work, ignore_errors=True)
    return name, pass_outcome(frozen), "", True


def test_bytes(test_dir):
    """The bytes of model.onnx and test_data_set_0/."""
    total = os.path.getsize(os.path.join(test_dir, "model.onnx"))
    data = os.path.join(test_dir, "test_data_set_0")
    for entry in os.listdir(data):
        total += os.path.getsize(os.path.join(data, entry))
    return total


def first_per_op_set(tests, count):
    """The first `count` tests of each set of op types (tests onnx cannot
    read are kept: they fail visibly)."""
    seen, kept = collections.Counter(), []
    for test in tests:
        try:
            model = onnx.load(os.path.join(test, "model.onnx"),
                              load_external_data=False)
            key = tuple(sorted({node.op_type for node in model.graph.node}))
        except Exception:
            key = test
        if seen[key] < count:
            seen[key] += 1
            kept.append(test)
    return kept


def run_one(test_dir, tools, scratch, planner, device="host", extra=()):
    name = os.path.relpath(test_dir, os.path.dirname(os.path.dirname(test_dir)))
    bundle = os.path.join(scratch, name.replace(os.sep, "__") + ".snug")
    try:
        flags = bindings_for(test_dir)
    except Exception as error:  # a model onnx itself cannot read
        return name, "failed", f"cannot read the model: {error}"
    compile_cmd = ([os.path.join(tools, "snugc"), "compile",
                    os.path.join(test_dir, "model.onnx"), "-o", bundle,
                    "--memory-report=none", "--planner=" + planner,
                    "--target=" + ("cuda" if device == "cuda" else "host")]
                   + list(extra) + flags)
    result, frozen, inputs = compile_freezing(compile_cmd, test_dir)
    if result.returncode != 0:
        refused = CUDA_REFUSED.search(result.stderr)
        if device == "cuda" and refused:
            return name, "skipped", f"cuda: {refused.group(1)} unsupported"
        return (name,) + compile_failure(result.stderr)
    run_cmd = [os.path.join(tools, "snug-run"), bundle, "--device", device,
               "--check", os.path.join(test_dir, "test_data_set_0")]
    run_cmd += inputs
    run_cmd += ["--poison"] if device == "host" else ["--runs", "1", "--warmup", "0"]
    result = subprocess.run(run_cmd, capture_output=True, text=True, timeout=300)
    os.remove(bundle)
    if result.returncode != 0:
        lines = [l for l in (result.stdout + result.stderr).splitlines()
                 if "MISMATCH" in l or "error" in l]
        return name, "failed", "run: " + (lines[0] if lines else result.stderr[-300:])
    return name, pass_outcome(frozen), ""


def pass_outcome(frozen):
    """A pass, told apart when inputs were frozen (counted as passes; the
    summary says how many)."""
    return "passed (frozen inputs)" if frozen else "passed"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--tools", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--planner", default="best")
    parser.add_argument("--snugc-flag", action="append", default=[],
                        help="one more snugc compile flag (repeatable), e.g. "
                             "--snugc-flag=--disable-pass=fuse")
    parser.add_argument("--min-pass-ratio", type=float, default=0.9)
    parser.add_argument("--min-passed", type=int, default=1)
    parser.add_argument("--device", choices=["host", "cudasim", "cuda"], default="host")
    parser.add_argument("--cudasim-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "cudasim"),
        help="where compile_kernels.sh is (--device cudasim)")
    parser.add_argument("--max-test-bytes", type=int, default=0,
                        help="only tests whose model and data take at most "
                             "this many bytes (0: all)")
    parser.add_argument("--per-op-set", type=int, default=0,
                        help="only the first N tests (by name) of each set of "
                             "op types a model uses (0: all)")
    parser.add_argument("--require-host-parity", action="store_true",
                        help="--device cudasim: exit 1 when a test passes on "
                             "the host but fails on the simulator")
    args = parser.parse_args()

    if args.device == "cuda":
        reason = no_device_reason()
        if reason:
            print(f"skipped: no CUDA device: {reason}")
            return 77
    tests = find_tests(args.roots)
    if args.max_test_bytes:
        tests = [t for t in tests if test_bytes(t) <= args.max_test_bytes]
    if args.per_op_set:
        tests = first_per_op_set(tests, args.per_op_set)
    if not tests:
        print("conformance: no tests found under", " ".join(args.roots))
        return 1
    outcomes = collections.Counter()
    failures, skipped_ops = [], collections.Counter()
    host_only = []  # --device cudasim: pass on the host, fail on the simulator
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            if args.device == "cudasim":
                futures = [pool.submit(run_one_cudasim, t, args.tools, scratch,
                                       args.planner, args.cudasim_dir,
                                       args.snugc_flag)
                           for t in tests]
            else:
                futures = [pool.submit(run_one, t, args.tools, scratch,
                                       args.planner, args.device,
                                       args.snugc_flag)
                           for t in tests]
            for future in futures:
                name, outcome, detail = future.result()[:3]
                if outcome == "failed" and future.result()[3:] == (True,):
                    host_only.append(name)
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
    frozen = outcomes["passed (frozen inputs)"]
    passed, failed = outcomes["passed"] + frozen, outcomes["failed"]
    ratio = passed / max(1, passed + failed)
    print(f"pass ratio of tests whose ops are supported: {passed}/{passed + failed}"
          f" = {100 * ratio:.1f}%")
    if args.device == "cudasim":
        print(f"cudasim: {len(tests)} tests in {time.monotonic() - start:.0f} s; "
              f"{len(host_only)} pass on the host but fail on the simulator"
              + (": " + ", ".join(host_only) if host_only else ""))
    print(f"of the passed, {frozen} with inputs frozen at compile time "
          f"(--freeze-input: shapes, axes or bounds snug needs then)")
    print(f"conformance: {passed} passed, {failed} failed, {outcomes['skipped']} skipped")
    if args.require_host_parity and host_only:
        return 1
    return 0 if ratio >= args.min_pass_ratio and passed >= args.min_passed else 1


if __name__ == "__main__":
    sys.exit(main())
