#!/usr/bin/env python3
"""bench/remat: the memory/compute frontier of every zoo model under
rematerialization (passes/memory/budget/Remat.cpp).

    .venv/bin/python bench/remat/run.py [--build build] [--cache DIR]
        [--out bench/results] [--models a,b] [--steps N]

Per model (the zoo manifest's bench bindings, CUDA target as snugc plans by
default): the remat-free predicted peak, then budgets from it down in steps
of 5 % of the arena (at most --steps of them, default 10), each planned with
`snugc plan --memory-budget`. A budget remat cannot meet still shows the
smallest peak it reached (snugc exits 1 there; the JSON report is written
first). Columns: budget (% of the remat-free arena), arena, predicted peak,
peak as % of the remat-free peak, decisions, nodes recomputed, extra FLOPs
(% of the model). The sweep stops once the arena stops falling.
Checks, exit 1 when broken: a smaller budget never gives a larger arena
(monotonic), and every plan that meets its budget is within it.
A markdown table goes to stdout, JSON to OUT/remat.json, and an SVG of
peak (% of remat-free) against extra FLOPs (%) to OUT/remat.svg.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import bench_arguments, snugc_plan, write_results, zoo_rows  # noqa: E402


def plan_with_budget(build, model_dir, bindings, budget):
    command = [os.path.join(build, "bin", "snugc"), "plan",
               os.path.join(model_dir, "model.onnx"), "--memory-report=json",
               f"--memory-budget={budget}"] + list(bindings)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode not in (0, 1) or not result.stdout.strip():
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr}")
    return json.loads(result.stdout), result.returncode == 0


def svg(frontiers):
    """Peak (% of remat-free) against extra FLOPs (%), one polyline each."""
    width, height, pad = 640, 400, 50
    max_x = max([p["extra_flops_pct"] for f in frontiers.values() for p in f]
                + [1.0])
    min_y = min([p["peak_pct"] for f in frontiers.values() for p in f] + [90])
    def xy(point):
        x = pad + (width - 2 * pad) * point["extra_flops_pct"] / max_x
        y = pad + (height - 2 * pad) * (100 - point["peak_pct"]) / (100 - min_y)
        return f"{x:.1f},{y:.1f}"
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"]
    lines = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
             f'height="{height}" font-family="sans-serif" font-size="11">',
             f'<text x="{pad}" y="20">predicted peak (% of remat-free) '
             f'against extra FLOPs (%), per zoo model</text>',
             f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" '
             f'y2="{height - pad}" stroke="black"/>',
             f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" '
             f'stroke="black"/>',
             f'<text x="{width - pad}" y="{height - pad + 30}" '
             f'text-anchor="end">+{max_x:.1f} % FLOPs</text>',
             f'<text x="5" y="{height - pad}">{min_y:.0f} %</text>',
             f'<text x="5" y="{pad}">100 %</text>']
    for k, (label, points) in enumerate(sorted(frontiers.items())):
        colour = colours[k % len(colours)]
        path = " ".join(xy(p) for p in points)
        lines.append(f'<polyline points="{path}" fill="none" '
                     f'stroke="{colour}"/>')
        lines.append(f'<text x="{width - pad + 5}" y="{pad + 14 * k}" '
                     f'fill="{colour}" text-anchor="end">{label}</text>')
    lines.append("</svg>")
    return "\n".join(lines) + "\n"


def main():
    parser = bench_arguments()
    parser.add_argument("--models", default="")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    wanted = set(filter(None, args.models.split(",")))
    rows, frontiers, broken = [], {}, []
    print("| model | budget | arena | peak | peak % | decisions | nodes "
          "recomputed | extra FLOPs % |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|")
    for label, name, cache_dir, bindings in zoo_rows():
        if wanted and name not in wanted and label not in wanted:
            continue
        model_dir = os.path.join(args.cache, cache_dir)
        if not os.path.exists(os.path.join(model_dir, "model.onnx")):
            print(f"| {label} | (not exported) | | | | | | |")
            continue
        free = snugc_plan(args.build, model_dir, bindings)
        free_arena, free_peak = free["arena_bytes"], free["predicted_peak_bytes"]
        points, last_arena = [], free_arena
        for step in range(args.steps + 1):
            fraction = 1.0 - 0.05 * step
            budget = free["weights_bytes"] + int(free_arena * fraction)
            report, fits = plan_with_budget(args.build, model_dir, bindings,
                                            budget)
            remat = report.get("remat", {})
            flops_before = remat.get("flops_before") or 1
            point = {"model": label, "budget_pct": round(100 * fraction),
                     "budget_bytes": budget, "fits": fits,
                     "arena_bytes": report["arena_bytes"],
                     "peak_bytes": report["predicted_peak_bytes"],
                     "peak_pct": 100.0 * report["predicted_peak_bytes"] / free_peak,
                     "decisions": remat.get("decisions", 0),
                     "nodes_recomputed": remat.get("nodes_recomputed", 0),
                     "extra_flops_pct": 100.0 * remat.get("extra_flops", 0)
                     / flops_before}
            if point["arena_bytes"] > last_arena:
                broken.append(f"{label}: budget {budget} gave arena "
                              f"{point['arena_bytes']} > {last_arena}")
            if fits and point["peak_bytes"] > budget:
                broken.append(f"{label}: fits {budget} with a peak of "
                              f"{point['peak_bytes']}")
            print(f"| {label} | {point['budget_pct']} %{'' if fits else ' (not met)'} | "
                  f"{point['arena_bytes']} | {point['peak_bytes']} | "
                  f"{point['peak_pct']:.1f} | {point['decisions']} | "
                  f"{point['nodes_recomputed']} | {point['extra_flops_pct']:.2f} |")
            points.append(point)
            rows.append(point)
            stalled = not fits and point["arena_bytes"] == last_arena and step > 0
            last_arena = point["arena_bytes"]
            if stalled:
                break
        frontiers[label] = points
        smallest = min(points, key=lambda p: p["peak_bytes"])
        print(f"| {label}: smallest peak | | {smallest['arena_bytes']} | "
              f"{smallest['peak_bytes']} | {smallest['peak_pct']:.1f} | | | "
              f"{smallest['extra_flops_pct']:.2f} |")
    write_results(args.out, "remat.json", rows)
    with open(os.path.join(args.out, "remat.svg"), "w") as f:
        f.write(svg(frontiers))
    for problem in broken:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
