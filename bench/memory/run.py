#!/usr/bin/env python3
"""bench/memory: what snug predicts for each zoo model, per planner strategy,
with and without the schedule pass, beside a peer's measured figure.

    .venv/bin/python bench/memory/run.py [--build build] [--cache DIR]
        [--out bench/results] [--models a,b] [--skip-peer]

Columns (bytes unless noted):
  no reuse     every intermediate in its own block (planner none)
  LB unshared  lower bound with no views / in-place / concat sharing
  LB imported  lower bound of the imported node order (--no-schedule)
  arena imported  the default strategy's arena without the schedule pass
  LB           lower bound after the schedule pass (what the arena can reach)
  arena <s>    the arena each strategy packs (schedule on)
  weights      device bytes of the weights
  peak         predicted peak device memory (weights + arena + runtime; the
               CUDA target, whose cuBLAS workspaces are planned in the arena)
  ms           planning time of the default strategy (best)
A second table: fusion on (the default) against --disable-pass=fuse, per
model: kernels launched (every node that is not a view; a fused group is
one), the device plan's steps (`snugc compile --dump-cuda`: kernel
launches + cuBLAS GEMM calls, and the copies apart), the arena, the cost
model's bytes moved, and the intermediate bytes the fused groups keep in
registers.
Peer: onnxruntime CPU (memory pattern and CPU arena on, one thread): the
resident memory its first run adds to the process after session creation
(what its arena keeps for activations), in a fresh process. It is a
measurement of a different engine on a different device, shown for scale,
not as like for like.
A markdown table goes to stdout, JSON to OUT/memory.json.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import bench_arguments, snugc_plan, write_results, zoo_rows  # noqa: E402

STRATEGIES = ["none", "greedy-size", "greedy-breadth", "search", "best"]


PEER_SCRIPT = r"""
import resource, sys, numpy as np, onnxruntime as ort, onnx
from onnx import numpy_helper
path, batch = sys.argv[1], int(sys.argv[2])
options = ort.SessionOptions()
options.enable_mem_pattern = True
options.enable_cpu_mem_arena = True
options.intra_op_num_threads = 1
session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
feeds = {}
for i in session.get_inputs():
    shape = [batch if not isinstance(d, int) else d for d in i.shape]
    if "int64" in i.type:
        feeds[i.name] = np.zeros(shape, dtype=np.int64)
    elif "bool" in i.type:
        feeds[i.name] = np.ones(shape, dtype=bool)
    else:
        feeds[i.name] = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
before = rss()
session.run(None, feeds)
print(rss() - before)
"""


def peer_rss(model_dir, bindings):
    batch = 1
    for i, arg in enumerate(bindings):
        if arg == "--dim" and bindings[i + 1].startswith("batch="):
            batch = int(bindings[i + 1].split("=")[1])
    result = subprocess.run([sys.executable, "-c", PEER_SCRIPT,
                             os.path.join(model_dir, "model.onnx"), str(batch)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        return None
    return int(result.stdout.strip())


def device_steps(build, model_dir, bindings, extra=()):
    """(kernel launches, GEMM calls, copies) of the device plan `snugc
    compile` emits for model_dir/model.onnx, from its --dump-cuda listing."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [os.path.join(build, "bin", "snugc"), "compile",
                   os.path.join(model_dir, "model.onnx"), "--target=cuda",
                   "--dump-cuda=" + tmp, "-o", os.path.join(tmp, "m.snug")]
        command += list(bindings) + list(extra)
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr}")
        counts = {"launch": 0, "gemm": 0, "copy": 0}
        with open(os.path.join(tmp, "model.cu")) as listing:
            for line in listing:
                match = re.match(r"// step [0-9]+ op [0-9]+: (launch|gemm|copy) ",
                                 line)
                if match:
                    counts[match.group(1)] += 1
        return counts["launch"], counts["gemm"], counts["copy"]


def mib(value):
    return "—" if value is None else f"{value / 2**20:.2f}"


def main():
    parser = bench_arguments()
    parser.add_argument("--models", default="")
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()
    wanted = set(args.models.split(",")) if args.models else None

    rows = []
    for label, _, directory, bindings in zoo_rows():
        if wanted and label.split()[0] not in wanted:
            continue
        model_dir = os.path.join(args.cache, directory)
        if not os.path.exists(os.path.join(model_dir, "model.onnx")):
            print(f"skipped {label}: {model_dir} missing (run `make zoo`)",
                  file=sys.stderr)
            continue
        row = {"model": label}
        for strategy in STRATEGIES:
            report = snugc_plan(args.build, model_dir, bindings,
                                ["--planner=" + strategy])
            row["arena_" + strategy] = report["arena_bytes"]
            if strategy == "best":
                row.update(
                    no_reuse=report["no_reuse_bytes"],
                    lb_unshared=report["lower_bound_unshared_bytes"],
                    lb=report["lower_bound_bytes"],
                    weights=report["weights_bytes"],
                    peak=report["predicted_peak_bytes"],
                    planning_ms=report["planning_ms"],
                    nodes=report["nodes"])
        fusion = snugc_plan(args.build, model_dir, bindings, [])
        unfused = snugc_plan(args.build, model_dir, bindings,
                             ["--disable-pass=fuse"])
        row.update(
            kernels_fused=fusion["fusion"]["kernels_after"],
            kernels_unfused=unfused["fusion"]["kernels_after"],
            arena_fused=fusion["arena_bytes"],
            arena_unfused=unfused["arena_bytes"],
            bytes_moved_fused=fusion["bytes_moved"],
            bytes_moved_unfused=unfused["bytes_moved"],
            fused_groups=fusion["fusion"]["groups"],
            intermediate_bytes_removed=fusion["fusion"]["intermediate_bytes_removed"])
        for key, extra in (("fused", []), ("unfused", ["--disable-pass=fuse"])):
            launches, gemms, copies = device_steps(args.build, model_dir,
                                                   bindings, extra)
            row.update({"launches_" + key: launches, "gemms_" + key: gemms,
                        "copies_" + key: copies})
        unscheduled = snugc_plan(args.build, model_dir, bindings,
                                 ["--no-schedule"])
        row["lb_imported"] = unscheduled["lower_bound_bytes"]
        row["arena_imported"] = unscheduled["arena_bytes"]
        row["peer_ort_cpu_rss_growth"] = (None if args.skip_peer
                                          else peer_rss(model_dir, bindings))
        rows.append(row)
        print(f"measured {label}", file=sys.stderr)

    header = ("| model | nodes | no reuse | LB unshared | LB imported | arena imported | LB | "
              + " | ".join("arena " + s for s in STRATEGIES)
              + " | arena/LB | weights | peak | plan ms | ORT CPU first-run RSS growth |")
    print("All sizes in MiB (2^20 bytes); arena per planner strategy with the "
          "schedule pass on.\n")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        cells = [row["model"], str(row["nodes"]), mib(row["no_reuse"]),
                 mib(row["lb_unshared"]), mib(row["lb_imported"]),
                 mib(row["arena_imported"]), mib(row["lb"])]
        cells += [mib(row["arena_" + s]) for s in STRATEGIES]
        cells += [f"{row['arena_best'] / max(1, row['lb']):.4f}",
                  mib(row["weights"]), mib(row["peak"]),
                  f"{row['planning_ms']:.2f}",
                  mib(row["peer_ort_cpu_rss_growth"])]
        print("| " + " | ".join(cells) + " |")

    print("\nFusion on (default) and off (--disable-pass=fuse); sizes in MiB, "
          "bytes moved in MB (the cost model's, 10^6 bytes).\n")
    header = ("| model | groups | kernels off | kernels on | ratio | "
              "launches+GEMMs off | launches+GEMMs on | ratio | copies off | "
              "copies on | arena off | "
              "arena on | bytes moved off | bytes moved on | intermediates removed |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        cells = [row["model"], str(row["fused_groups"]),
                 str(row["kernels_unfused"]), str(row["kernels_fused"]),
                 f"{row['kernels_unfused'] / max(1, row['kernels_fused']):.2f}"]
        steps_off = row["launches_unfused"] + row["gemms_unfused"]
        steps_on = row["launches_fused"] + row["gemms_fused"]
        cells += [f"{row['launches_unfused']}+{row['gemms_unfused']}",
                  f"{row['launches_fused']}+{row['gemms_fused']}",
                  f"{steps_off / max(1, steps_on):.2f}",
                  str(row["copies_unfused"]), str(row["copies_fused"]),
                  mib(row["arena_unfused"]), mib(row["arena_fused"]),
                 f"{row['bytes_moved_unfused'] / 1e6:.1f}",
                 f"{row['bytes_moved_fused'] / 1e6:.1f}",
                 mib(row["intermediate_bytes_removed"])]
        print("| " + " | ".join(cells) + " |")
    write_results(args.out, "memory.json", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
