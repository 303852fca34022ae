#!/usr/bin/env python3
"""bench/compile: compile time per zoo model and per pass, and how planning
grows on synthetic graphs.

    .venv/bin/python bench/compile/run.py [--build build] [--cache DIR]
        [--out bench/results] [--sizes 1000,10000,100000]

Per model: wall time of `snugc plan` (import, folding, schedule, planning)
and each pass's share from --time-passes, peak RSS.
Synthetic: textual IR of N nodes (residual blocks with branches, concats and
splits, f32[1,64] tensors), through `snug-opt --passes=dce,schedule,
plan-memory`: wall time and peak RSS (parse, passes and print included), and
the fitted exponent of time between the two largest sizes (1.0 is linear;
n log n from 10k to 100k fits about 1.1). Also the planner alone on the same
graphs (plan-memory's own planning time, one core).
Shapes: chains of N Relus, and fan-outs (one value read by N Relus) whose
results are summed by a tree of Adds, concatenated by one Concat, or are
each a graph output, through `snug-opt --passes=plan,verify-plan` (schedule,
plan-memory, verify-plan; --time-limit's default): wall time, arena bytes,
peak RSS. None should take over 10 s (issue 12 item 7).
CUDA compiles (unless --skip-cuda): `snugc compile --target=cuda` per zoo
model with an empty kernel cache (cold: NVRTC compiles every image) and
again with it filled (warm: the images come from the cache), wall time and
peak RSS of each, the model's weight bytes (the memory report's), whether
each peak is within 1.5x the weights plus 100 MiB (a cold compile holds
NVRTC's or ptxas's working memory, 40-75 MiB more than a warm one), and
whether the two bundles are byte-identical (they must be). --large adds a decoder of
GPT-2 medium's size (24 blocks, d 1024, 16 heads, vocab 32000, sequence
128: about 1.47 GB of f32 weights, random), exported into the cache on
first use (a few minutes), never into git.
A markdown table goes to stdout, JSON to OUT/compile.json.
"""
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import REPO, bench_arguments  # noqa: E402
sys.path.insert(0, os.path.join(REPO, "tests", "lit", "Inputs"))
import large_graph  # noqa: E402
with open(os.path.join(REPO, "models", "zoo.json")) as manifest:
    MODELS = [entry["name"] for entry in json.load(manifest)["models"]]


def timed(command):
    """Runs command under /usr/bin/time; returns (seconds, peak KiB, stderr)."""
    result = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M"] + command,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr[-2000:]}")
    match = re.search(r"TIME ([0-9.]+) ([0-9]+)", result.stderr)
    return float(match.group(1)), int(match.group(2)), result.stderr


def pass_times(text):
    times = {}
    for line in text.splitlines():
        match = re.match(r"\s+([0-9.]+) \(\s*[0-9.]+%\)\s+([a-z-]+)$", line)
        if match:
            times[match.group(2)] = times.get(match.group(2), 0) + float(match.group(1))
    return times


def synthetic_ir(nodes, seed=1):
    """A residual network written out: blocks of branch-join-split."""
    rng = random.Random(seed)
    lines = []
    values = ["%x"]
    count = 0
    current = "%x"

    def emit(text):
        nonlocal count
        name = f"%{count}"
        lines.append(f"  {name} = {text}")
        count += 1
        return name

    while count < nodes:
        kind = rng.random()
        if kind < 0.5:
            a = emit(f"Relu({current}) : f32[1,64]")
            b = emit(f"Exp({a}) : f32[1,64]")
            current = emit(f"Add({b}, {current}) : f32[1,64]")
        elif kind < 0.8:
            a = emit(f"Sigmoid({current}) : f32[1,64]")
            b = emit(f"Neg({current}) : f32[1,64]")
            c = emit(f"Concat({a}, {b}) {{axis = 1}} : f32[1,128]")
            lines.append(f"  %{count}, %{count + 1} = Split({c}) {{axis = 1}} : "
                         f"f32[1,64], f32[1,64]")
            left, right = f"%{count}", f"%{count + 1}"
            count += 2
            current = emit(f"Mul({left}, {right}) : f32[1,64]")
        else:
            far = values[rng.randrange(max(1, len(values) - 50), len(values))]
            current = emit(f"Add({current}, {far}) : f32[1,64]")
        values.append(current)
    body = "\n".join(lines)
    return (f"func @synthetic(%x: f32[1,64]) -> f32[1,64] {{\n{body}\n"
            f"  return {current}\n}}\n")


def shape_ir(kind, nodes):
    """The planning-time tests' generator (tests/lit/Inputs/large_graph.py):
    "chain", or a fan-out combined by "sum", "concat" or "outputs"."""
    head, lines, tail = (large_graph.chain(nodes) if kind == "chain"
                         else large_graph.fanout(nodes, kind))
    return "\n".join([head] + lines + [tail, "}"]) + "\n"


def shape_rows(snug_opt, scratch, chain_sizes, fanout_sizes):
    """Plans each generated shape; one row per shape and size."""
    cases = [("chain", n, shape_ir("chain", n)) for n in chain_sizes]
    for combine in ("sum", "concat", "outputs"):
        cases += [(f"fan-out {combine}", n, shape_ir(combine, n)) for n in fanout_sizes]
    rows = []
    for shape, size, text in cases:
        path = os.path.join(scratch, f"{shape.replace(' ', '-')}-{size}.ir")
        with open(path, "w") as f:
            f.write(text)
        seconds, kib, stderr = timed(
            [snug_opt, path, "--passes=plan,verify-plan", "--pass-statistics", "--time-passes",
             "-o", os.devnull])
        arena = re.search(r"([0-9]+) plan-memory - arena-bytes", stderr)
        os.unlink(path)
        rows.append({"shape": shape, "nodes": size, "seconds": seconds,
                     "peak_rss_kib": kib,
                     "arena_bytes": int(arena.group(1)) if arena else None,
                     "passes": pass_times(stderr)})
    return rows


LARGE_DECODER = "gpt2_medium_size"


def export_large_decoder(cache):
    """The GPT-2-medium-sized decoder's directory, exported if missing."""
    out = os.path.join(cache, f"{LARGE_DECODER}-opset17")
    if not os.path.exists(os.path.join(out, "model.onnx")):
        import functools
        sys.path.insert(0, os.path.join(REPO, "models"))
        import export_models
        print(f"exporting {LARGE_DECODER} into {out} (a few minutes)", file=sys.stderr)
        export_models.export(LARGE_DECODER, functools.partial(
            export_models.build_gpt2, SEQ=128, vocab=32000, d_model=1024, heads=16,
            layers=24), 17, out)
    return out


def bindings(model):
    """The model's export-time bindings (its inputs.txt: `--dim batch=1`, or
    nothing for a model without symbolic dims)."""
    path = os.path.join(os.path.dirname(model), "inputs.txt")
    return open(path).read().split() if os.path.exists(path) else []


def same_file(a, b):
    with open(a, "rb") as x, open(b, "rb") as y:
        while True:
            left, right = x.read(1 << 24), y.read(1 << 24)
            if left != right:
                return False
            if not left:
                return True


def cuda_compile_rows(snugc, models, scratch):
    """Cold and warm `snugc compile --target=cuda` per (name, model path)."""
    rows = []
    for name, model in models:
        xdg = os.path.join(scratch, f"xdg-{name}")
        env_command = (["env", f"XDG_CACHE_HOME={xdg}", snugc, "compile", model]
                       + bindings(model) + ["--target=cuda"])
        cold, cold_kib, stderr = timed(env_command + ["-o", os.path.join(scratch, "cold.snug")])
        weights = re.search(r"^\s+weights\s+([0-9]+) B", stderr, re.M)
        warm, warm_kib, stderr = timed(env_command + ["-o", os.path.join(scratch, "warm.snug")])
        identical = same_file(os.path.join(scratch, "cold.snug"),
                              os.path.join(scratch, "warm.snug"))
        for product in ("cold.snug", "warm.snug"):
            os.unlink(os.path.join(scratch, product))
        reused = re.search(r"kernels: ([0-9]+) images compiled by NVRTC, ([0-9]+) from", stderr)
        rows.append({"model": name, "cold_seconds": cold, "warm_seconds": warm,
                     "cold_peak_rss_kib": cold_kib, "warm_peak_rss_kib": warm_kib,
                     "weight_bytes": int(weights.group(1)) if weights else None,
                     "identical": identical,
                     "warm_images_from_cache": int(reused.group(2)) if reused else None})
    return rows


def main():
    parser = bench_arguments()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--chain-sizes", default="1000,10000,100000")
    parser.add_argument("--fanout-sizes", default="1000,10000,20000,100000")
    parser.add_argument("--skip-cuda", action="store_true")
    parser.add_argument("--large", action="store_true",
                        help="also compile a GPT-2-medium-sized decoder (exported on first use)")
    args = parser.parse_args()
    snugc = os.path.join(args.build, "bin", "snugc")
    snug_opt = os.path.join(args.build, "bin", "snug-opt")

    model_rows = []
    for name in MODELS:
        model = os.path.join(args.cache, f"{name}-opset17", "model.onnx")
        if not os.path.exists(model):
            print(f"skipped {name}: {model} missing (run `make zoo`)", file=sys.stderr)
            continue
        seconds, kib, stderr = timed([snugc, "plan", model] + bindings(model)
                                     + ["--memory-report=none", "--time-passes"])
        model_rows.append({"model": name, "seconds": seconds, "peak_rss_kib": kib,
                           "passes": pass_times(stderr)})

    synthetic_rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in [int(s) for s in args.sizes.split(",")]:
            path = os.path.join(scratch, f"synthetic-{size}.ir")
            with open(path, "w") as f:
                f.write(synthetic_ir(size))
            seconds, kib, stderr = timed(
                [snug_opt, path, "--passes=dce,schedule,plan-memory",
                 "--verify-each=false", "--pass-statistics", "--time-passes",
                 "-o", os.devnull])
            planning = re.search(r"([0-9]+) plan-memory - planning-us", stderr)
            synthetic_rows.append({
                "nodes": size, "seconds": seconds, "peak_rss_kib": kib,
                "planner_ms": int(planning.group(1)) / 1000 if planning else None,
                "passes": pass_times(stderr)})
        shapes = shape_rows(snug_opt, scratch,
                            [int(s) for s in args.chain_sizes.split(",") if s],
                            [int(s) for s in args.fanout_sizes.split(",") if s])
        compiled = [(name, os.path.join(args.cache, f"{name}-opset17", "model.onnx"))
                    for name in MODELS]
        compiled = [(name, path) for name, path in compiled if os.path.exists(path)]
        if args.large:
            compiled.append((LARGE_DECODER,
                             os.path.join(export_large_decoder(args.cache), "model.onnx")))
        cuda_rows = [] if args.skip_cuda else cuda_compile_rows(snugc, compiled, scratch)

    print("### Compile time per model (`snugc plan`, 1 core)\n")
    print("| model | total s | peak RSS MiB | import+fold+dce s | schedule s | plan-memory s |")
    print("|---|---|---|---|---|---|")
    for row in model_rows:
        passes = row["passes"]
        front = sum(v for k, v in passes.items() if k in ("fold-constants", "dce"))
        print(f"| {row['model']} | {row['seconds']:.2f} | {row['peak_rss_kib'] / 1024:.0f} | "
              f"{front:.3f} | {passes.get('schedule', 0):.3f} | "
              f"{passes.get('plan-memory', 0):.3f} |")
    if cuda_rows:
        print("\n### CUDA compile, cold and warm kernel cache (`snugc compile --target=cuda`)\n")
        print("| model | cold s | warm s | images from cache (warm) | bundles identical | "
              "weights MiB | peak RSS MiB cold, warm | within 1.5x weights + 100 MiB, "
              "cold, warm |")
        print("|---|---|---|---|---|---|---|---|")
        for row in cuda_rows:
            weights = row["weight_bytes"] or 0

            def within(kib):
                return "yes" if kib * 1024 <= 1.5 * weights + 100 * 2**20 else "NO"
            print(f"| {row['model']} | {row['cold_seconds']:.2f} | {row['warm_seconds']:.2f} | "
                  f"{row['warm_images_from_cache']} | {'yes' if row['identical'] else 'NO'} | "
                  f"{weights / 2**20:.1f} | {row['cold_peak_rss_kib'] / 1024:.0f}, "
                  f"{row['warm_peak_rss_kib'] / 1024:.0f} | "
                  f"{within(row['cold_peak_rss_kib'])}, {within(row['warm_peak_rss_kib'])} |")
    print("\n### Synthetic graphs (`snug-opt --passes=dce,schedule,plan-memory`)\n")
    print("| nodes | total s | peak RSS MiB | schedule s | plan-memory s | planner ms |")
    print("|---|---|---|---|---|---|")
    for row in synthetic_rows:
        passes = row["passes"]
        print(f"| {row['nodes']} | {row['seconds']:.2f} | {row['peak_rss_kib'] / 1024:.0f} | "
              f"{passes.get('schedule', 0):.3f} | {passes.get('plan-memory', 0):.3f} | "
              f"{row['planner_ms']:.1f} |")
    print("\n### Chains and fan-outs (`snug-opt --passes=plan,verify-plan`: schedule, "
          "plan-memory, verify-plan)\n")
    print("| shape | nodes | plan s | schedule s | plan-memory s | verify-plan s | "
          "arena bytes | peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for row in shapes:
        passes = row["passes"]
        print(f"| {row['shape']} | {row['nodes']} | {row['seconds']:.2f} | "
              f"{passes.get('schedule', 0):.3f} | {passes.get('plan-memory', 0):.3f} | "
              f"{passes.get('verify-plan', 0):.3f} | {row['arena_bytes']} | "
              f"{row['peak_rss_kib'] / 1024:.0f} |")
    slow = [row for row in shapes if row["seconds"] > 10]
    for row in slow:
        print(f"\nover 10 s: {row['shape']} of {row['nodes']} nodes "
              f"({row['seconds']:.1f} s)")
    exponent = None
    if len(synthetic_rows) >= 2:
        small, large = synthetic_rows[-2], synthetic_rows[-1]
        if small["seconds"] > 0:
            exponent = (math.log(large["seconds"] / small["seconds"])
                        / math.log(large["nodes"] / small["nodes"]))
            print(f"\nfitted exponent of total time from {small['nodes']} to "
                  f"{large['nodes']} nodes: {exponent:.2f}")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "compile.json"), "w") as f:
        json.dump({"models": model_rows, "synthetic": synthetic_rows,
                   "shapes": shapes, "cuda_compile": cuda_rows,
                   "exponent": exponent}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
