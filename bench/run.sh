#!/usr/bin/env bash
# make bench: every benchmark table, in one run. Tables go to stdout and are
# saved with their JSON in bench/results/.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
python=.venv/bin/python
shared=${SNUG_SHARED_DIR:-../shared}
mkdir -p bench/results

echo "## Packing: real-model traces (alignment 1, default strategy budget 2 s)"
echo
"$build/bin/plan-buffers-bench" "$shared/bench-data/packing/real-traces" | tee bench/results/packing-real.md
echo
echo "## Packing: hard instances A-K"
echo
"$build/bin/plan-buffers-bench" "$shared/bench-data/packing/hard" | tee bench/results/packing-hard.md
echo
echo "## Packing: real training-step traces (5 s each; bench/packing/traces/README.md)"
echo
traces=$(mktemp -d)
trap 'rm -rf "$traces"' EXIT
for f in bench/packing/traces/*.csv.gz; do
  gunzip -c "$f" > "$traces/$(basename "${f%.gz}")"
done
cp "$shared/bench-data/packing/training/pangu_2.6B.csv" "$traces/somas-pangu_2.6B.csv"
$python bench/packing/export_training_traces.py --build "$build" "$traces/snug" >&2
for f in "$traces"/snug/*.csv; do mv "$f" "$traces/snug-$(basename "$f")"; done
"$build/bin/plan-buffers-bench" --time-limit=5 "$traces" | tee bench/results/packing-training-traces.md
echo
echo "## Packing: generated training steps (20k-60k buffers, 5 s) and guillotine tilings (optimum = LB)"
echo
"$build/bin/plan-buffers-bench" --time-limit=5 --strategies=greedy-size,best --training=20000,40000,60000 | tee bench/results/packing-training.md
"$build/bin/plan-buffers-bench" --time-limit=10 --strategies=greedy-size,best --tilings=12 | tee bench/results/packing-tilings.md
echo
echo "## Memory per zoo model"
echo
$python bench/memory/run.py --build "$build" | tee bench/results/memory.md
echo
echo "## Training step peaks with gradient accumulation (snugc train --accumulate)"
echo
$python bench/accumulate/run.py --build "$build" | tee bench/results/accumulate.md
echo
echo "## Cost per zoo model (cost model counts, H200 roofline estimate)"
echo
$python bench/cost/run.py --build "$build" | tee bench/results/cost.md
echo
echo "## Rematerialization frontier per zoo model"
echo
$python bench/remat/run.py --build "$build" | tee bench/results/remat.md
echo
echo "## Precision: fp16 and bf16 against fp32 per zoo model"
echo
$python bench/precision/run.py --build "$build" | tee bench/results/precision.md || true
echo
echo "## Compile time"
echo
$python bench/compile/run.py --build "$build" | tee bench/results/compile.md
echo
echo "## Every zoo model's device plan through CudaExecutor on the strict fake driver"
echo
$python bench/fake-cuda/run.py --build "$build" | tee bench/results/fake-cuda.md || true
echo
echo "## Kernel resources: every zoo model at fp32, fp16, bf16 and tf32 (--kernel-report)"
echo
$python bench/kernel-report/run.py --build "$build" | tee bench/results/kernel-report.md || true
