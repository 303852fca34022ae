#!/usr/bin/env python3
"""gpu_check.py: runs every bundle of a gpu_prepare.py part on the CUDA device
and prints the table tools/gpu-check.sh ends with.

Per bundle: snug-run --device cuda --check test_data_set_0 --runs N. A bundle
passes when its outputs match the reference and the device memory snug
allocated equals the bundle's prediction exactly. For zoo models
(<name>-opset17) the PyTorch side (bench/gpu/torch_bench.py: eager and
torch.compile latency and peak memory) is measured too.
Last, the kernel resources snugc predicted (each bundle's kernels.json, its
--kernel-report, written by gpu_prepare.py): per bundle the kernels, the
worst registers per thread and any local or spill bytes, which must be
none (tests/e2e/kernel_report.py's rule; a bundle breaking it fails the
check). These are the cubins' own figures (registers, stack) as
cuobjdump --dump-resource-usage gives them, so the driver loads the same.
"""
import argparse
import json
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
import kernel_report  # noqa: E402
MEMORY = re.compile(r"device memory: predicted (\d+) bytes.*allocated (\d+) bytes.*: (match|MISMATCH)")
USED = re.compile(r"device memory used by the session: (\d+) bytes")
LATENCY = re.compile(r"latency: median ([\d.]+) ms, min ([\d.]+) ms, max ([\d.]+) ms")


def mib(n):
    return f"{n / 2**20:.1f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("part")
    parser.add_argument("--snug-run", required=True)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--gpu-tests", default="")
    parser.add_argument("--no-torch", action="store_true")
    args = parser.parse_args()
    if not os.path.isdir(args.part):
        print(f"gpu-check: no bundles at {args.part} (run tools/gpu_prepare.py "
              "where snugc builds, and carry the part)")
        return 1
    names = sorted(d for d in os.listdir(args.part)
                   if os.path.exists(os.path.join(args.part, d, "model.snug")))
    rows, failures, node = [], [], {"passed": 0, "failed": 0}
    for name in names:
        bundle = os.path.join(args.part, name, "model.snug")
        is_zoo = not name.startswith("node-")
        runs = args.runs if is_zoo else 1
        result = subprocess.run(
            [args.snug_run, bundle, "--device", "cuda", "--check",
             os.path.join(args.part, name, "test_data_set_0"),
             "--runs", str(runs), "--warmup", "3" if is_zoo else "1"],
            capture_output=True, text=True, timeout=600)
        out = result.stdout + result.stderr
        memory, used, latency = MEMORY.search(out), USED.search(out), LATENCY.search(out)
        ok = result.returncode == 0 and memory is not None and memory.group(3) == "match"
        if not ok:
            lines = [l for l in out.splitlines() if "MISMATCH" in l or "error" in l]
            failures.append(f"{name}: {lines[0] if lines else out.strip()[-300:]}")
        if not is_zoo:
            node["passed" if ok else "failed"] += 1
            continue
        rows.append({"name": name, "ok": ok,
                     "predicted": int(memory.group(1)) if memory else 0,
                     "allocated": int(memory.group(2)) if memory else 0,
                     "used": int(used.group(1)) if used else 0,
                     "median": float(latency.group(1)) if latency else 0.0})
    torch = {}
    zoo = [r["name"].rsplit("-opset", 1)[0] for r in rows]
    if zoo and not args.no_torch:
        result = subprocess.run(
            [sys.executable, os.path.join(REPO, "bench", "gpu", "torch_bench.py")] + zoo,
            capture_output=True, text=True, timeout=900)
        for line in result.stdout.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            torch[(entry["model"], entry["mode"])] = entry
    for failure in failures:
        print("FAILED", failure)
    print()
    print(f"gpu tests: {'passed' if args.gpu_tests == '0' else args.gpu_tests or 'not run'}; "
          f"node tests on the device: {node['passed']} passed, {node['failed']} failed")
    header = ("model", "check", "snug ms", "predicted MiB", "allocated MiB",
              "session MiB", "eager ms", "eager MiB", "compile ms", "compile MiB")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))

    def torch_cells(model, mode):
        entry = torch.get((model, mode))
        if not entry or "skipped" in entry:
            return ["-", "-"]
        return [f"{entry['median_ms']:.3f}", mib(entry["peak_bytes"])]
    for r in rows:
        model = r["name"].rsplit("-opset", 1)[0]
        cells = [model, "ok" if r["ok"] else "FAIL", f"{r['median']:.3f}",
                 mib(r["predicted"]), mib(r["allocated"]), mib(r["used"])]
        cells += torch_cells(model, "eager") + torch_cells(model, "compile")
        print("| " + " | ".join(cells) + " |")
    failures += print_kernel_table(args.part, names)
    return 1 if failures else 0


def print_kernel_table(part, names):
    """The kernel report of every bundle of the part with one (zoo models
    and the default model; node tests are summed in one row): kernels,
    worst registers, local and spill bytes. Returns the failure lines."""
    rows, failures = [], []
    node = []
    for name in names:
        path = os.path.join(part, name, "kernels.json")
        if not os.path.exists(path):
            continue
        records = kernel_report.load(path)
        failures += [f"{name}: kernel {line}"
                     for line in kernel_report.problems(records)]
        if name.startswith("node-"):
            node += records
        else:
            rows.append((name.rsplit("-opset", 1)[0], records))
    if node:
        rows.append(("node tests", node))
    if not rows:
        print("\nno kernel reports in the part (gpu_prepare.py writes them)")
        return failures
    print()
    print("| kernels of | kernels | worst registers (kernel) | max threads | "
          "max shared B | local B | spill B |")
    print("|---|---|---|---|---|---|---|")
    for label, records in rows:
        s = kernel_report.summary(records)
        print(f"| {label} | {s['kernels']} | {s['max_registers']} "
              f"({s['max_registers_kernel']}) | {s['max_threads']} | "
              f"{s['max_shared_bytes']} | {s['local_bytes']} | "
              f"{s['spill_bytes']} |")
    for failure in failures:
        print("FAILED", failure)
    return failures


if __name__ == "__main__":
    sys.exit(main())
