#!/usr/bin/env python3
"""bench/cost: what the cost model (passes/analysis/CostModel.h) counts for each zoo
model, as the memory report states it, beside the MACs torchvision publishes
where it publishes them.

    .venv/bin/python bench/cost/run.py [--build build] [--cache DIR]
        [--out bench/results] [--models a,b]

Columns:
  nodes        nodes after the import pipeline (views included)
  GFLOP        every operation; a multiply-add is 2
  GMAC         multiply-accumulates of Conv, ConvTranspose, MatMul and Gemm
  published    torchvision's figure for the architecture at 224x224, batch 1
               (it lists MACs, calling them GFLOPS); "—" where there is none
  MB moved     bytes read + written (10^6), every node its own kernel,
               weights counted as reads
  FLOP/B       arithmetic intensity: GFLOP / bytes moved
  H200 us      roofline estimate: per node max(FLOPs / peak, bytes / 4.8
               TB/s), summed (f32: 67 TFLOP/s). An estimate from counts and
               vendor peaks, not a measurement
  bound        nodes compute-bound / memory-bound on that roofline
It prints a table; nothing here passes or fails. Markdown goes to stdout,
JSON to OUT/cost.json.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import bench_arguments, snugc_plan, write_results, zoo_rows  # noqa: E402

# torchvision's model documentation ("GFLOPS", which are MACs by its
# convention), for the architectures the zoo exports unchanged.
PUBLISHED_GMACS = {
    "resnet50": 4.09,
    "mobilenet_v2": 0.30,
    "mobilenet_v3_small": 0.06,
    "efficientnet_b0": 0.39,
    "squeezenet1_1": 0.35,
    "googlenet": 1.50,
    "densenet121": 2.83,
}


def main():
    parser = bench_arguments()
    parser.add_argument("--models", default="")
    args = parser.parse_args()
    wanted = set(args.models.split(",")) if args.models else None

    rows = []
    for label, name, directory, bindings in zoo_rows():
        if wanted and name not in wanted:
            continue
        model_dir = os.path.join(args.cache, directory)
        if not os.path.exists(os.path.join(model_dir, "model.onnx")):
            print(f"skipped {label}: {model_dir} missing (run `make zoo`)",
                  file=sys.stderr)
            continue
        # The counts do not depend on the packing, so the quickest planner,
        # and no CUDA emission.
        report = snugc_plan(args.build, model_dir, bindings,
                            ["--planner=greedy-size", "--target=host"])
        batch_one = "batch=1" in bindings or "batch=" not in " ".join(bindings)
        rows.append({
            "model": label,
            "nodes": report["nodes"],
            "flops": report["flops"],
            "macs": report["macs"],
            "flops_by_dtype": report["flops_by_dtype"],
            "published_gmacs": PUBLISHED_GMACS.get(name) if batch_one else None,
            "bytes_moved": report["bytes_moved"],
            "arithmetic_intensity": report["arithmetic_intensity"],
            "roofline_device": report["roofline_device"],
            "roofline_estimate_us": report["roofline_estimate_us"],
            "compute_bound_nodes": report["roofline_compute_bound_nodes"],
            "memory_bound_nodes": report["roofline_memory_bound_nodes"],
        })
        print(f"measured {label}", file=sys.stderr)

    device = rows[0]["roofline_device"] if rows else "H200"
    print("Cost model counts (f32, every node its own kernel); the roofline "
          "is an estimate, not a measurement.\n")
    header = (f"| model | nodes | GFLOP | GMAC | published GMAC | MB moved | "
              f"FLOP/B | {device} us (est.) | bound compute/memory |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        published = row["published_gmacs"]
        cells = [row["model"], str(row["nodes"]),
                 f"{row['flops'] / 1e9:.3f}", f"{row['macs'] / 1e9:.3f}",
                 "—" if published is None else f"{published:.2f}",
                 f"{row['bytes_moved'] / 1e6:.1f}",
                 f"{row['arithmetic_intensity']:.1f}",
                 f"{row['roofline_estimate_us']:.1f}",
                 f"{row['compute_bound_nodes']}/{row['memory_bound_nodes']}"]
        print("| " + " | ".join(cells) + " |")
    write_results(args.out, "cost.json", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
