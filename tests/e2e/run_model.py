#!/usr/bin/env python3
"""One e2e test: a zoo model compiled, run and checked, under two planners.

    run_model.py --model NAME --opset N --cache DIR --tools BIN
                 --export-script models/export_models.py
    run_model.py --model default --dir models/default --tools BIN

Compiles the model twice, with the default planner and with --planner=none
(every intermediate in its own block), runs both bundles on the host
executor with a poisoned arena against the reference outputs onnxruntime
computed at export (rtol 1e-3, atol 1e-4), and checks that the two runs give
bit-identical outputs: the arena plan may move tensors, never change them.
At opset 17 more bundles are planned under budgets of 60 % and 85 % of
the arena, by rematerialization (passes/memory/budget/Remat.cpp) and by host offload
then remat (passes/memory/budget/Offload.cpp, every candidate admitted by a very fast
link; the decisions they can make are kept even where a budget is out of
reach): their outputs must be bit-identical too, on the host and, where
they changed the graph and with --cudasim, on the simulator against the
default bundle's simulator run, and their arenas no larger than the plan
without them.
Also checks that the memory report's arena and weights bytes are exactly
what the bundle tells the runtime to allocate.
With --cuda the default planner's bundle is compiled for CUDA as well (every
kernel through NVRTC for sm_80 and sm_90): plan-memory then plans every
GEMM's cuBLAS workspace into the arena, so the device arena the bundle asks
for must be exactly the report's arena (and its largest workspace the
report's workspace line), and the predicted peak weights + arena; its
--kernel-report must show no kernel with local or spill bytes and none over
a launch limit (tests/e2e/kernel_report.py; fp16, bf16 and tf32:
kernel_precisions.py, a test of its own). With --cudasim BIN the
emitted kernels and the device plan also run on the host CUDA simulator
(tests/cudasim) against the same reference, and with --fake-cuda DIR (the
strict fake driver of tests/unit/FakeCuda, whose kernels are those same
host-compiled ones) through the real CUDA executor (snug-run --device cuda:
an eager run, then a captured one whose outputs are checked, on compute
capability 9.0, and 8.6 with --fake-cuda-ccs=9.0,8.6) against the
reference and bit for bit against the simulator. At opset 17 the model is also
compiled with the fuse pass left out and checked against the reference on
the host and, with --cudasim, on the simulator (fusion on and off).
Exports the model first when the cache lacks it; exits 77 (ctest: skipped)
when it is missing and cannot be exported here.
"""
import argparse
import json
import filecmp
import os
import re
import subprocess
import sys
import tempfile
import time

import kernel_report
from zoo_cache import SKIP, bindings, ensure_model

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from cuda_device import no_device_reason  # noqa: E402


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stdout.write(result.stderr)
    if result.returncode != 0:
        print(f"FAILED ({result.returncode}): {' '.join(command)}")
        sys.exit(1)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# The newest PTX ISA a bundle may embed: 8.0, which every CUDA 12.0 or newer
# driver compiles (compiler/cuda/Nvrtc.h kMaxPtxIsa).
MAX_PTX_ISA = (8, 0)


def check_ptx_isa(bundle, described):
    """Every PTX the CUDA bundle embeds is at most ISA 8.0, read from the
    bundle's bytes as the driver reads it (each PTX's `.version` line), and
    --describe names the toolchain with the newest of them: the bundle loads
    on CUDA 12.0 and newer drivers (issue 36)."""
    with open(bundle, "rb") as f:
        versions = [(int(major), int(minor)) for major, minor in
                    re.findall(rb"(?m)^\.version (\d+)\.(\d)$", f.read())]
    recorded = re.search(r"CUDA kernels: NVRTC ([\d.]+), nvJitLink ([\d.]+), "
                         r"PTX ISA (\d+)\.(\d); needs a CUDA ([\d.]+) or "
                         r"newer driver", described)
    if not versions or max(versions) > MAX_PTX_ISA or not recorded or (
            (int(recorded.group(3)), int(recorded.group(4))) != max(versions)):
        print(f"FAILED: the bundle's PTX is ISA {versions} (at most "
              f"{MAX_PTX_ISA} wanted); it says: {described.strip()}")
        return False
    print(f"PTX ISA {'.'.join(map(str, max(versions)))} in "
          f"{len(versions)} PTX images (NVRTC {recorded.group(1)}, nvJitLink "
          f"{recorded.group(2)}): loads on CUDA {recorded.group(5)} drivers")
    return True


def check_device_arena(described, report):
    """The device arena the bundle asks for is the planned arena (the
    workspaces are planned buffers inside it), its largest cuBLAS workspace
    is within the report's largest workspace, and the predicted peak is
    weights + arena: what the memory report predicts is what the runtime
    allocates. (The report's workspace line counts every planned scratch
    buffer, the attention kernel's row blocks as well as cuBLAS's, and a
    product with an epilogue runs as snug's kernel and takes none, so a
    transformer's largest one can be an attention block.)"""
    match = re.search(r"CUDA device arena (\d+) bytes \(cuBLAS workspace (\d+) "
                      r"inside\)", described)
    arena = report["arena_bytes"]
    if not match or int(match.group(1)) != arena or (
            report["device_arena_bytes"] != arena) or (
            int(match.group(2)) > report["workspace_bytes"]) or (
            report["predicted_peak_bytes"] != report["weights_bytes"] + arena):
        print(f"FAILED: the report plans an arena of {arena} bytes (device "
              f"arena {report['device_arena_bytes']}, largest workspace "
              f"{report['workspace_bytes']}) and predicts a peak of "
              f"{report['predicted_peak_bytes']}; the bundle says: "
              f"{described.strip()}")
        return False
    print(f"device arena {arena} bytes == planned arena, "
          f"{report['scratch_buffers']} workspaces inside (largest "
          f"{report['workspace_bytes']} bytes)")
    return True


def run_on_device(args):
    """The default planner's CUDA bundle on the device: outputs against the
    reference, and the device memory snug allocates equal to the prediction."""
    reason = no_device_reason()
    if reason:
        print(f"skipped: no CUDA device: {reason}")
        return SKIP
    model_dir = ensure_model(args)
    if model_dir is None:
        return SKIP
    with tempfile.TemporaryDirectory() as scratch:
        bundle = os.path.join(scratch, "cuda.snug")
        run([os.path.join(args.tools, "snugc"), "compile",
             os.path.join(model_dir, "model.onnx"), "-o", bundle,
             "--target=cuda", "--memory-report=none"] + bindings(model_dir))
        result = subprocess.run(
            [os.path.join(args.tools, "snug-run"), bundle, "--device", "cuda",
             "--check", os.path.join(model_dir, "test_data_set_0"),
             "--runs", "5", "--warmup", "2"], capture_output=True, text=True)
        print(result.stdout + result.stderr)
        if result.returncode != 0 or "allocations: match" not in result.stdout:
            print("FAILED: the device run does not match the reference or "
                  "the prediction")
            return 1
    return 0


def run_on_fake_driver(args, snug_run, bundle, library, data, scratch,
                       sim_dir):
    """The bundle's device plan through CudaExecutor on the strict fake
    driver: two runs (eager, then captured into a graph), the outputs
    against the reference and bit-identical to the simulator's; on a
    device of each compute capability of --fake-cuda-ccs: 9.0 takes the
    sm_90 cubin, 8.6 the PTX through the JIT (no exact cubin)."""
    for cc in args.fake_cuda_ccs.split(","):
        out = os.path.join(scratch, "fake-cuda-" + cc)
        env = dict(os.environ, LD_LIBRARY_PATH=args.fake_cuda,
                   SNUG_FAKE_CUDA_KERNELS=library, SNUG_FAKE_CUDA_CC=cc)
        command = [snug_run, bundle, "--device", "cuda", "--runs", "1",
                   "--warmup", "1", "--check", data, "--output-dir", out]
        start = time.monotonic()
        result = subprocess.run(command, capture_output=True, text=True,
                                env=env)
        sys.stdout.write(result.stdout + result.stderr)
        print(f"CudaExecutor on the fake driver, compute capability {cc}: "
              f"{time.monotonic() - start:.1f} s")
        if result.returncode != 0:
            print(f"FAILED ({result.returncode}) on the fake driver "
                  f"(SNUG_FAKE_CUDA_CC={cc}): {' '.join(command)}")
            return 1
        if not same_outputs({"best": sim_dir, "fake-cuda cc " + cc: out},
                            sorted(os.listdir(sim_dir)),
                            "the simulator and the {} run (CudaExecutor)"):
            return 1
    return 0


def same_outputs(runs, names, between):
    """Whether every run in `runs` wrote exactly `names`, each bit-identical
    to runs["best"]'s; prints the first difference (`between` formatted
    with the run's name)."""
    for other in runs:
        if other == "best":
            continue
        if sorted(os.listdir(runs[other])) != names:
            print(f"FAILED: the {other} run wrote a different output set")
            return False
        for name in names:
            if not filecmp.cmp(os.path.join(runs["best"], name),
                               os.path.join(runs[other], name), shallow=False):
                print(f"FAILED: output {name} differs between "
                      + between.format(other))
                return False
    return True


def budget_passes(kind, budget, target):
    """The pipeline of a budget variant: remat alone, or offload over a link
    fast enough that every value it may move qualifies, then remat."""
    passes = "import,schedule,"
    if kind == "offload":
        passes += (f"offload{{arena-budget={budget} host-bandwidth=1000000 "
                   f"target={target}}},")
    return passes + (f"remat{{arena-budget={budget} target={target}}},"
                     f"plan-memory{{target={target}}},verify-plan")


def run_budget_variant(args, model, flags, scratch, kind, percent, free_arena,
                       outputs, sim_outputs):
    """Compiles `kind` (remat, or offload then remat) toward `percent` % of
    the arena (the decisions it can make are kept even where the budget is
    out of reach), runs it on the host into outputs[name] and, where it
    changed the graph and --cudasim is given, on the simulator into
    sim_outputs[name], for main's bit-for-bit comparison. The arena must
    never be above the plan without it. Returns 1 on failure, else 0."""
    name = f"{kind}-{percent}"
    budget = max(1, free_arena * percent // 100)
    targets = ["host"] + (["cuda"] if args.cudasim else [])
    for target in targets:
        bundle = os.path.join(scratch, f"{name}-{target}.snug")
        report_path = bundle + ".json"
        dump = os.path.join(scratch, f"{name}-cuda")
        run([os.path.join(args.tools, "snugc"), "compile", model, "-o", bundle,
             "--target=" + target, "--passes=" + budget_passes(kind, budget, target),
             "--memory-report=json", "--memory-report-file=" + report_path]
            + (["--dump-cuda", dump] if target == "cuda" else []) + flags)
        with open(report_path) as f:
            report = json.load(f)
        summary = report.get(kind)
        if summary is None or (target == "host" and
                               report["arena_bytes"] > free_arena):
            print(f"FAILED: {kind} toward {budget} bytes gave an arena of "
                  f"{report['arena_bytes']} (without: {free_arena}), report "
                  f"{summary}")
            return 1
        changed = summary["decisions"] if kind == "remat" else summary["values"]
        print(f"{kind} toward {budget} B ({percent} %, {target}): {summary}, "
              f"arena {free_arena} -> {report['arena_bytes']} B")
        data = os.path.join(os.path.dirname(model), "test_data_set_0")
        if target == "host":
            outputs[name] = os.path.join(scratch, "out-" + name)
            run([os.path.join(args.tools, "snug-run"), bundle, "--device",
                 "host", "--check", data, "--poison", "--output-dir",
                 outputs[name]])
            if not changed:
                break  # the same graph: the simulator would repeat best's run
        else:
            library = os.path.join(dump, "model.so")
            run([os.path.join(REPO, "tests", "cudasim", "compile_kernels.sh"),
                 os.path.join(dump, "model.cu"), library])
            sim_outputs[name] = os.path.join(scratch, "sim-" + name)
            run([os.path.join(args.cudasim, "snug-cudasim"), bundle,
                 "--kernels", library, "--check", data,
                 "--output-dir", sim_outputs[name]])
    return 0


def run_unfused(args, model, flags, scratch, data):
    """The model with the fuse pass left out (--disable-pass=fuse: every
    node its own kernel), on the host and, with --cudasim, on the
    simulator, each against the reference: issue 14 asks every zoo model to
    pass with fusion on and off. Within tolerance, not bit for bit: fused
    products and attentions add in another order."""
    target = "cuda" if args.cudasim else "host"
    bundle = os.path.join(scratch, "unfused.snug")
    dump = os.path.join(scratch, "unfused-cuda")
    run([os.path.join(args.tools, "snugc"), "compile", model, "-o", bundle,
         "--target=" + target, "--disable-pass=fuse"]
        + (["--dump-cuda", dump] if args.cudasim else []) + flags)
    run([os.path.join(args.tools, "snug-run"), bundle, "--device", "host",
         "--check", data, "--poison", "--output-dir",
         os.path.join(scratch, "out-unfused")])
    if args.cudasim:
        library = os.path.join(dump, "model.so")
        run([os.path.join(REPO, "tests", "cudasim", "compile_kernels.sh"),
             os.path.join(dump, "model.cu"), library])
        run([os.path.join(args.cudasim, "snug-cudasim"), bundle,
             "--kernels", library, "--check", data])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--opset", type=int, default=0)
    parser.add_argument("--dir")
    parser.add_argument("--cache")
    parser.add_argument("--tools", required=True)
    parser.add_argument("--export-script")
    parser.add_argument("--cuda", action="store_true")
    parser.add_argument("--cudasim", help="directory of snug-cudasim")
    parser.add_argument("--fake-cuda",
                        help="directory of the fake libcuda.so.1 (with --cudasim)")
    parser.add_argument("--fake-cuda-ccs", default="9.0",
                        help="compute capabilities the fake driver reports, "
                             "one run each (comma-separated)")
    parser.add_argument("--gpu", action="store_true",
                        help="run the CUDA bundle on the device (skip without one)")
    args = parser.parse_args()
    if args.gpu:
        return run_on_device(args)

    model_dir = ensure_model(args)
    if model_dir is None:
        return SKIP
    model = os.path.join(model_dir, "model.onnx")
    flags = bindings(model_dir)
    snugc = os.path.join(args.tools, "snugc")
    snug_run = os.path.join(args.tools, "snug-run")
    data = os.path.join(model_dir, "test_data_set_0")
    with tempfile.TemporaryDirectory() as scratch:
        outputs = {}
        sim_outputs = {}
        for planner in ("best", "none"):
            bundle = os.path.join(scratch, f"{planner}.snug")
            report_path = os.path.join(scratch, f"{planner}.json")
            cuda = planner == "best" and (args.cuda or args.cudasim)
            dump = os.path.join(scratch, "cuda")
            kernels = os.path.join(scratch, "kernels.json")
            run([snugc, "compile", model, "-o", bundle, "--planner=" + planner,
                 "--target=" + ("cuda" if cuda else "host"),
                 "--memory-report=json", "--memory-report-file=" + report_path]
                + (["--dump-cuda", dump, "--kernel-report=" + kernels]
                   if cuda else []) + flags)
            if cuda and not kernel_report.check(kernels, "fp32"):
                return 1
            with open(report_path) as f:
                report = json.load(f)
            described = subprocess.run([snug_run, bundle, "--describe"],
                                       capture_output=True, text=True).stdout
            sizes = re.search(r"arena (\d+) bytes, weights (\d+) bytes", described)
            if not sizes or (int(sizes.group(1)), int(sizes.group(2))) != (
                    report["arena_bytes"], report["weights_bytes"]):
                print(f"FAILED: the report predicts arena {report['arena_bytes']} "
                      f"and weights {report['weights_bytes']} bytes; the bundle "
                      f"says: {described.strip()}")
                return 1
            if cuda and not (check_device_arena(described, report)
                             and check_ptx_isa(bundle, described)):
                return 1
            if cuda and args.cudasim:
                library = os.path.join(dump, "model.so")
                run([os.path.join(REPO, "tests", "cudasim", "compile_kernels.sh"),
                     os.path.join(dump, "model.cu"), library])
                sim_outputs["best"] = os.path.join(scratch, "sim-best")
                run([os.path.join(args.cudasim, "snug-cudasim"), bundle,
                     "--kernels", library, "--check", data,
                     "--output-dir", sim_outputs["best"]])
                if args.fake_cuda:
                    failed = run_on_fake_driver(args, snug_run, bundle,
                                                library, data, scratch,
                                                sim_outputs["best"])
                    if failed:
                        return failed
            outputs[planner] = os.path.join(scratch, f"out-{planner}")
            run([snug_run, bundle, "--device", "host", "--check", data,
                 "--poison", "--output-dir", outputs[planner]])
        if args.opset == 17:
            with open(os.path.join(scratch, "best.json")) as f:
                free_arena = json.load(f)["arena_bytes"]
            for kind, percent in (("remat", 60), ("remat", 85),
                                  ("offload", 60), ("offload", 85)):
                failed = run_budget_variant(args, model, flags, scratch, kind,
                                            percent, free_arena, outputs,
                                            sim_outputs)
                if failed:
                    return failed
            run_unfused(args, model, flags, scratch, data)
        names = sorted(os.listdir(outputs["best"]))
        if not names:
            print("FAILED: the run wrote no outputs")
            return 1
        if not (same_outputs(outputs, names, "--planner=best and the {} run")
                and same_outputs(sim_outputs, names, "the simulator's default "
                                 "bundle and its {} one")):
            return 1
        print(f"{len(names)} outputs match the reference and are bit-identical "
              f"under {', '.join(sorted(outputs))}"
              + (f"; on the simulator under {', '.join(sorted(sim_outputs))}"
                 if len(sim_outputs) > 1 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
