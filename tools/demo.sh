#!/usr/bin/env bash
# make demo: the main job on the bundled default model: compile it (with the
# memory report), run the bundle, check its outputs against the reference
# computed by onnxruntime at export time, and end with PASS or FAIL.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
bin="$build/bin"
model_dir=models/default
bundle="$build/demo/model.snug"
mkdir -p "$build/demo"

echo "== snug demo: $model_dir/model.onnx =="
# shellcheck disable=SC2046 # inputs.txt holds the model's binding flags
"$bin/snugc" compile "$model_dir/model.onnx" -o "$bundle" $(cat "$model_dir/inputs.txt")

# The bundle holds both plans. The host executor runs it at the same arena
# offsets as the device; --poison fills the arena with NaN bytes first, so a
# wrong plan cannot pass.
echo "== running on the host executor =="
if ! "$bin/snug-run" "$bundle" --device host --check "$model_dir/test_data_set_0" --poison; then
  echo "FAIL"
  exit 1
fi
# On a machine with a CUDA device, the same bundle runs there too.
echo "== running on the CUDA executor =="
cuda_log="$build/demo/cuda.log"
if "$bin/snug-run" "$bundle" --device cuda --check "$model_dir/test_data_set_0" >"$cuda_log" 2>&1; then
  cat "$cuda_log"
elif grep -q "no CUDA device" "$cuda_log"; then
  echo "skipped: $(grep -o 'no CUDA device.*' "$cuda_log")"
else
  cat "$cuda_log"
  echo "FAIL"
  exit 1
fi
echo "PASS"
