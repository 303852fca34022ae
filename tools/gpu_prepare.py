#!/usr/bin/env python3
"""gpu_prepare.py: compile, here (no GPU needed), the bundles tools/gpu-check.sh
runs on a GPU machine, which has no snugc (no LLVM, protobuf or ONNX there).

Writes ROOT/bin (snug-gpu-tests and its bundles, carried with part 1) and
ROOT/<part>/<name>/{model.snug, report.json, kernels.json, test_data_set_0/}
(kernels.json: snugc's --kernel-report, which gpu_check.py tabulates and
checks: no local or spill bytes; a few KiB per model) where part 1 holds
the default model, the ONNX node tests that pass on the host executor, the
default model and bert_small with every value the offload pass may move in
pinned host memory, and the smallest zoo models, and parts 2.. hold the rest of the zoo, each part at most
--part-mib, default 56 (the device tool carries 64 MiB of ignored files per
call, bin/ included with part 1; run
gpu-check.sh once per part, carrying that part). Bundles are compiled for
--arch (default sm_90, the H200) with PTX, at opset 17.

    .venv/bin/python tools/gpu_prepare.py [--root .cache/gpu] [--jobs 2]
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "conformance"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import kernel_report  # noqa: E402
import run_conformance  # noqa: E402
import zoo_cache  # noqa: E402


def size_of(path):
    total = 0
    for dirpath, _, filenames in os.walk(path):
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in filenames)
    return total


def compile_one(snugc, model_dir, out_dir, flags, arch):
    """The bundle and test data of one model in out_dir; False when snugc or
    the host check refuses it."""
    os.makedirs(out_dir, exist_ok=True)
    bundle = os.path.join(out_dir, "model.snug")
    result = subprocess.run(
        [snugc, "compile", os.path.join(model_dir, "model.onnx"), "-o", bundle,
         "--target=cuda", "--arch=" + arch, "--memory-report=json",
         "--memory-report-file=" + os.path.join(out_dir, "report.json"),
         "--kernel-report=" + os.path.join(out_dir, "kernels.json")] + flags,
        capture_output=True, text=True)
    if result.returncode != 0:
        shutil.rmtree(out_dir)
        return False, result.stderr.strip().splitlines()[-1:]
    shutil.copytree(os.path.join(model_dir, "test_data_set_0"),
                    os.path.join(out_dir, "test_data_set_0"))
    return True, []


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=os.path.join(REPO, ".cache", "gpu"))
    parser.add_argument("--tools", default=os.path.join(REPO, "build", "bin"))
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--part-mib", type=int, default=56)
    parser.add_argument("--node-tests", nargs="*", default=[
        os.path.join(REPO, ".cache", "onnx-1.22.0", "node")])
    parser.add_argument("--zoo", default=os.path.join(REPO, ".cache", "models"))
    args = parser.parse_args()
    snugc = os.path.join(args.tools, "snugc")
    snug_run = os.path.join(args.tools, "snug-run")
    shutil.rmtree(args.root, ignore_errors=True)
    part1 = os.path.join(args.root, "1")

    # snug-gpu-tests and its bundles (the GPU machine may lack GoogleTest);
    # the binary links libstdc++ statically.
    build = os.path.dirname(args.tools)
    tests = os.path.join(args.tools, "snug-gpu-tests")
    bundles = os.path.join(build, "tests", "gpu", "bundles")
    if os.path.exists(tests) and os.path.isdir(bundles):
        os.makedirs(os.path.join(args.root, "bin"))
        shutil.copy2(tests, os.path.join(args.root, "bin"))
        shutil.copytree(bundles, os.path.join(args.root, "bin", "bundles"))
        print(f"bin: snug-gpu-tests and {len(os.listdir(bundles))} test bundles")
    else:
        print(f"no {tests} or {bundles}: the gpu tests will not be carried")

    jobs = [("default", os.path.join(REPO, "models", "default"),
             zoo_cache.bindings(os.path.join(REPO, "models", "default")))]
    # Host offload on the device (bert_small: 6 values, 768 KiB): every
    # value the offload pass may move goes to pinned host memory and back (an arena budget of one byte, a
    # link fast enough that each qualifies), so the DtoH/HtoD copy steps
    # run on real hardware against the same reference.
    offload = ["--passes=import,schedule,offload{arena-budget=1 "
               "host-bandwidth=1000000 target=cuda},plan-memory{target=cuda},"
               "verify-plan"]
    bert = os.path.join(args.zoo, "bert_small-opset17")
    if os.path.isdir(bert):
        jobs.append(("bert_small-offload", bert, zoo_cache.bindings(bert) + offload))
    for test in run_conformance.find_tests([r for r in args.node_tests if os.path.isdir(r)]):
        # Only tests the host executor passes: the GPU check compares
        # devices, not conformance gaps.
        name = "node-" + os.path.basename(test)
        jobs.append((name, test, run_conformance.bindings_for(test)))
    compiled, refused = 0, 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(compile_one, snugc, d, os.path.join(part1, n), f, args.arch): n
                   for n, d, f in jobs}
        for future, name in futures.items():
            ok, _ = future.result()
            if ok:
                out = os.path.join(part1, name, "model.snug")
                check = subprocess.run([snug_run, out, "--device", "host", "--check",
                                        os.path.join(part1, name, "test_data_set_0")],
                                       capture_output=True, text=True)
                if check.returncode != 0:
                    shutil.rmtree(os.path.join(part1, name))
                    ok = False
            compiled += ok
            refused += not ok
    print(f"part 1: {compiled} node tests and the default model compiled "
          f"({refused} refused or failing on the host), {size_of(part1) >> 20} MiB")

    models = []
    if os.path.isdir(args.zoo):
        for entry in sorted(os.listdir(args.zoo)):
            if entry.endswith("-opset17"):
                models.append((size_of(os.path.join(args.zoo, entry)), entry))
    budget = args.part_mib << 20
    # bin/ travels with part 1.
    part, used = 1, size_of(part1) + size_of(os.path.join(args.root, "bin"))
    for size, entry in sorted(models):
        if size > budget:
            print(f"{entry}: {size >> 20} MiB does not fit in one part; skipped")
            continue
        if used + size > budget:
            part, used = part + 1, 0
        out = os.path.join(args.root, str(part), entry)
        ok, message = compile_one(snugc, os.path.join(args.zoo, entry), out,
                                  zoo_cache.bindings(os.path.join(args.zoo, entry)),
                                  args.arch)
        if not ok:
            print(f"{entry}: not compiled: {' '.join(message)}")
            continue
        used += size_of(out)
        kernels = kernel_report.summary(
            kernel_report.load(os.path.join(out, "kernels.json")))
        print(f"part {part}: {entry} ({size_of(out) >> 20} MiB; "
              f"{kernels['kernels']} kernels, worst {kernels['max_registers']} "
              f"registers, {kernels['framed']} with local or spill bytes)")
    with open(os.path.join(args.root, "parts.json"), "w") as f:
        json.dump({"parts": part, "arch": args.arch}, f)
    print(f"{part} parts under {args.root}; carry {args.root}/bin with part 1, "
          f"and on the GPU machine run tools/gpu-check.sh ROOT/P per part P")
    return 0


if __name__ == "__main__":
    sys.exit(main())
