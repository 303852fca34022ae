#!/usr/bin/env python3
"""Every zoo model's device plan through CudaExecutor on the strict fake
driver (tests/unit/FakeCuda.cpp), with time per model.

For each model of models/zoo.json exported at opset 17: compiled for CUDA
(snugc compile --target=cuda --dump-cuda), its kernels built as host C++
(tests/cudasim/compile_kernels.sh), run on the simulator (snug-cudasim) and
through the real runtime on the fake driver (snug-run --device cuda, one
eager run then one captured into a CUDA graph, LD_LIBRARY_PATH at the fake
and SNUG_FAKE_CUDA_KERNELS at the kernels), both against the reference
outputs; the fake's outputs must also be bit-identical to the simulator's.
The e2e tier does this for every opset-17 zoo model at compute capability
9.0, and for a lean subset at 8.6 too (tests/e2e/CMakeLists.txt); this is
the whole zoo at one compute capability, timed, with a table. Prints a table; --cc picks the compute capability the
fake reports (9.0: the sm_90 cubin; 8.6: the PTX through the JIT).
"""
import filecmp
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from zoo import REPO, bench_arguments, write_results, zoo_dir, zoo_names  # noqa: E402


def timed(command, env=None):
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    return result, time.monotonic() - start


def last_line(result):
    lines = (result.stdout + result.stderr).strip().splitlines()
    errors = [line for line in lines if "error" in line or "MISMATCH" in line]
    return (errors or lines or ["?"])[0][:160]


def run_model(args, name, scratch):
    model_dir = zoo_dir(args.cache, name)
    model = os.path.join(model_dir, "model.onnx")
    if not os.path.exists(model):
        return {"model": name, "result": "not exported"}
    inputs = os.path.join(model_dir, "inputs.txt")
    bindings = open(inputs).read().split() if os.path.exists(inputs) else []
    data = os.path.join(model_dir, "test_data_set_0")
    bin_dir = os.path.join(args.build, "bin")
    work = os.path.join(scratch, name)
    bundle = os.path.join(work, "m.snug")
    library = os.path.join(work, "model.so")
    result, _ = timed([os.path.join(bin_dir, "snugc"), "compile", model, "-o",
                       bundle, "--target=cuda", "--dump-cuda", work] + bindings)
    if result.returncode != 0:
        return {"model": name, "result": "compile failed: " + last_line(result)}
    result, build_s = timed([os.path.join(REPO, "tests", "cudasim",
                                          "compile_kernels.sh"),
                             os.path.join(work, "model.cu"), library])
    if result.returncode != 0:
        return {"model": name, "result": "kernels failed: " + last_line(result)}
    sim_out = os.path.join(work, "sim")
    sim, sim_s = timed([os.path.join(bin_dir, "snug-cudasim"), bundle,
                        "--kernels", library, "--check", data,
                        "--output-dir", sim_out])
    fake_out = os.path.join(work, "fake")
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(args.build, "fake-cuda"),
               SNUG_FAKE_CUDA_KERNELS=library, SNUG_FAKE_CUDA_CC=args.cc)
    fake, fake_s = timed([os.path.join(bin_dir, "snug-run"), bundle,
                          "--device", "cuda", "--runs", "1", "--warmup", "1",
                          "--check", data, "--output-dir", fake_out], env)
    row = {"model": name, "kernels_build_s": round(build_s, 1),
           "sim_s": round(sim_s, 1), "fake_s": round(fake_s, 1)}
    if fake.returncode != 0:
        row["result"] = "FAIL: " + last_line(fake)
    elif sim.returncode != 0:
        row["result"] = "fake ok, simulator failed: " + last_line(sim)
    elif not all(filecmp.cmp(os.path.join(sim_out, f), os.path.join(fake_out, f),
                             shallow=False) for f in os.listdir(sim_out)):
        row["result"] = "FAIL: outputs differ from the simulator's"
    else:
        row["result"] = "match, bit-identical to the simulator"
    return row


def main():
    parser = bench_arguments()
    parser.add_argument("--cc", default="9.0")
    parser.add_argument("models", nargs="*")
    args = parser.parse_args()
    names = zoo_names(args.models)
    rows = []
    print(f"| model | kernels build s | simulator s | CudaExecutor on the fake "
          f"(cc {args.cc}, 2 runs) s | result |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            row = run_model(args, name, scratch)
            rows.append(row)
            print(f"| {row['model']} | {row.get('kernels_build_s', '')} | "
                  f"{row.get('sim_s', '')} | {row.get('fake_s', '')} | "
                  f"{row['result']} |", flush=True)
    write_results(args.out, "fake-cuda.json", rows)
    return 0 if all(not r["result"].startswith("FAIL") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
