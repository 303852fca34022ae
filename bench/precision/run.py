#!/usr/bin/env python3
"""bench/precision: what --precision=fp16 and bf16 cost and save on every
zoo model.

    .venv/bin/python bench/precision/run.py [--build build] [--cache DIR]
        [--out bench/results] [--models a,b]

Per model (opset 17, or a trained model's own; the export's bindings, batch 1): weights and arena
bytes at fp32, fp16 and bf16 (`snugc compile --target=host`) and their
ratios to fp32, the arena also with --io-precision=lowered (inputs and
outputs in 16 bits too, which a large output such as GPT-2's logits needs
to halve), then each lowered bundle run on the host executor on the
export's test inputs against the fp32 bundle's outputs: relative error
||out - ref|| / ||ref|| (the largest over the outputs), the largest absolute
error, and whether any output holds a NaN or an Inf.
Where a lowered model's error is 1e-2 or more (or not finite), the table
adds what `--calibration` on the same inputs keeps in f32 (nodes and %)
and the error then; exit 1 when even that does not bring it under 1e-2.
The input floor columns measure the model rather than the lowering: the
fp32 bundle run on the same inputs with only its float inputs rounded to
fp16 or bf16, against its own outputs. A lowered model whose first cast
stores those inputs in 16 bits is perturbed at least that much before any
other rounding; on the random-weight CNNs (BatchNorm statistics
calibrated, so activations are unit-scale as in a trained net) it is
already 1e-2 or more in bf16.
A markdown table goes to stdout, JSON to OUT/precision.json.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import bench_arguments, write_results, zoo_dir  # noqa: E402

MODELS = ["resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
          "squeezenet1_1", "googlenet", "densenet121", "vit_small",
          "bert_small", "bert_small_s512", "gpt2_small", "gpt2_small_s1024",
          "unet"]
PRECISIONS = ["fp32", "fp16", "bf16"]


def compile_and_run(build, model_dir, precision, scratch):
    bindings = open(os.path.join(model_dir, "inputs.txt")).read().split()
    bundle = os.path.join(scratch, precision + ".snug")
    report = os.path.join(scratch, precision + ".json")
    result = subprocess.run(
        [os.path.join(build, "bin", "snugc"), "compile",
         os.path.join(model_dir, "model.onnx"), "-o", bundle, "--target=host",
         "--precision=" + precision, "--memory-report=json",
         "--memory-report-file=" + report] + bindings,
        capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stderr)
    outputs = os.path.join(scratch, "out-" + precision)
    # Loose tolerances: the run is for its outputs, compared below.
    result = subprocess.run(
        [os.path.join(build, "bin", "snug-run"), bundle, "--device", "host",
         "--check", os.path.join(model_dir, "test_data_set_0"),
         "--rtol", "1e9", "--atol", "1e9", "--output-dir", outputs],
        capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stdout + result.stderr)
    with open(report) as f:
        data = json.load(f)
    if precision != "fp32":
        result = subprocess.run(
            [os.path.join(build, "bin", "snugc"), "plan",
             os.path.join(model_dir, "model.onnx"), "--target=host",
             "--precision=" + precision, "--io-precision=lowered",
             "--memory-report=json"] + bindings,
            capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(result.stderr)
        data["arena_io_lowered"] = json.loads(result.stdout)["arena_bytes"]
    return data, outputs


def round_to(array, precision):
    """array (f32) rounded to fp16 or bf16 (to nearest even) and back."""
    if precision == "fp16":
        return array.astype(np.float16).astype(np.float32)
    bits = array.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def input_floor(build, model_dir, scratch, precision, reference):
    """The model's own sensitivity: the fp32 bundle's outputs on the test
    inputs with only the float inputs rounded to `precision`, against its
    outputs on the inputs as they are (relative error, the largest over
    the outputs). A lowering that stores those inputs in 16 bits starts
    from at least this much perturbation; None without float inputs."""
    from onnx import load_tensor, numpy_helper
    data = os.path.join(model_dir, "test_data_set_0")
    command = [os.path.join(build, "bin", "snug-run"),
               os.path.join(scratch, "fp32.snug"), "--device", "host",
               "--output-dir", os.path.join(scratch, "floor-" + precision)]
    rounded = False
    for file in sorted(os.listdir(data)):
        if not file.startswith("input_"):
            continue
        tensor = load_tensor(os.path.join(data, file))
        array = numpy_helper.to_array(tensor)
        if array.dtype == np.float32:
            array = round_to(array, precision)
            rounded = True
        path = os.path.join(scratch, f"{precision}-{tensor.name}.npy")
        np.save(path, array)
        command += ["--input", f"{tensor.name}=@{path}"]
    if not rounded:
        return None
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(result.stdout + result.stderr)
    return compare(reference, os.path.join(scratch, "floor-" + precision))[0]


def compare(reference, outputs):
    """(relative error, largest absolute error, all finite) of the outputs
    in directory `outputs` against those in `reference`, the largest over
    the outputs; relative error ||out - ref|| / ||ref||."""
    rel, worst, finite = 0.0, 0.0, True
    for file in sorted(os.listdir(reference)):
        ref = np.load(os.path.join(reference, file)).astype(np.float64)
        out = np.load(os.path.join(outputs, file)).astype(np.float64)
        finite &= bool(np.isfinite(out).all())
        norm = np.linalg.norm(ref)
        rel = max(rel, float(np.linalg.norm(out - ref) / (norm or 1.0)))
        worst = max(worst, float(np.abs(out - ref).max()))
    return rel, worst, finite


def calibrate(build, model_dir, precision):
    """What --calibration keeps in f32 ("N of M nodes (P %)") and the
    largest output error after it, from snugc's own lines."""
    data = os.path.join(model_dir, "test_data_set_0")
    bindings = open(os.path.join(model_dir, "inputs.txt")).read().split()
    result = subprocess.run(
        [os.path.join(build, "bin", "snugc"), "plan",
         os.path.join(model_dir, "model.onnx"), "--target=host",
         "--precision=" + precision, "--calibration=" + data,
         "--check-accuracy=" + data, "--memory-report=none"] + bindings,
        capture_output=True, text=True)
    kept, worst = None, None
    for line in result.stderr.splitlines():
        if line.startswith("calibration: ") and " nodes kept in f32 (" in line:
            kept = line.split(":")[1].split("(")[0].strip() + " (" + \
                line.split("(")[1].split(")")[0] + ")"
        if "relative error" in line and line.strip().startswith("output"):
            value = float(line.split("relative error ")[1].split(",")[0])
            worst = value if worst is None else max(worst, value)
    return kept, worst


def floor(value):
    return "-" if value is None else f"{value:.2e}"


def main():
    parser = bench_arguments()
    parser.add_argument("--models", default="")
    args = parser.parse_args()
    wanted = [m for m in args.models.split(",") if m] or MODELS
    rows, broken = [], []
    print("| model | weights fp32 | fp16 x | bf16 x | arena fp32 | fp16 x | "
          "bf16 x | fp16 x (io lowered) | rel err fp16 | rel err bf16 | "
          "max abs fp16 | max abs bf16 | input floor fp16 | "
          "input floor bf16 |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for name in wanted:
        model_dir = zoo_dir(args.cache, name)
        if not os.path.exists(os.path.join(model_dir, "model.onnx")):
            print(f"| {name} | (not exported) |")
            continue
        with tempfile.TemporaryDirectory() as scratch:
            reports, outputs = {}, {}
            for precision in PRECISIONS:
                reports[precision], outputs[precision] = compile_and_run(
                    args.build, model_dir, precision, scratch)
            row = {"model": name}
            for precision in PRECISIONS:
                row[f"weights_{precision}"] = reports[precision]["weights_bytes"]
                row[f"arena_{precision}"] = reports[precision]["arena_bytes"]
            row["arena_fp16_io_lowered"] = reports["fp16"]["arena_io_lowered"]
            for precision in ("fp16", "bf16"):
                rel, worst, finite = compare(outputs["fp32"],
                                             outputs[precision])
                row[f"rel_err_{precision}"] = rel
                row[f"max_abs_{precision}"] = worst
                row[f"finite_{precision}"] = finite
                row[f"input_floor_{precision}"] = input_floor(
                    args.build, model_dir, scratch, precision,
                    outputs["fp32"])
                if not finite or rel >= 1e-2:
                    kept, after = calibrate(args.build, model_dir, precision)
                    row[f"calibrated_{precision}"] = {"kept": kept,
                                                     "rel_err": after}
                    if after is None or after >= 1e-2:
                        broken.append(f"{name} {precision}: relative error "
                                      f"{rel:.3g}, {after} after calibration")
        w, a = row["weights_fp32"], row["arena_fp32"]
        print(f"| {name} | {w} | {w / row['weights_fp16']:.2f} | "
              f"{w / row['weights_bf16']:.2f} | {a} | "
              f"{a / row['arena_fp16']:.2f} | {a / row['arena_bf16']:.2f} | "
              f"{a / row['arena_fp16_io_lowered']:.2f} | "
              f"{row['rel_err_fp16']:.2e} | {row['rel_err_bf16']:.2e} | "
              f"{row['max_abs_fp16']:.2e} | {row['max_abs_bf16']:.2e} | "
              f"{floor(row['input_floor_fp16'])} | "
              f"{floor(row['input_floor_bf16'])} |")
        for precision in ("fp16", "bf16"):
            if f"calibrated_{precision}" in row:
                c = row[f"calibrated_{precision}"]
                print(f"|   {name} {precision} with --calibration | "
                      f"{c['kept']} | | | | | | | relative error "
                      f"{c['rel_err']} | | | |")
        rows.append(row)
    write_results(args.out, "precision.json", rows)
    for problem in broken:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
