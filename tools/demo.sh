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

# The CUDA executor is not built yet (snug-run says so when asked for it), so
# the bundle runs on the host executor, at the same arena offsets. --poison
# fills the arena with NaN bytes first, so a wrong plan cannot pass.
device=host
echo "== running on the $device executor =="
if "$bin/snug-run" "$bundle" --device "$device" --check "$model_dir/test_data_set_0" --poison; then
  echo "PASS"
else
  echo "FAIL"
  exit 1
fi
