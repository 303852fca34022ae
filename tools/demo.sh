#!/usr/bin/env bash
# make demo: the main job on the bundled default model, as far as snug goes
# today. Each step that does not exist yet is named as missing, never faked.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
bin="$build/bin"
model_dir=models/default

echo "== snug demo =="
if [ -x "$bin/snugc" ] && [ -f "$model_dir/model.onnx" ]; then
  echo "-- importing $model_dir/model.onnx"
  "$bin/snugc" compile "$model_dir/model.onnx" --emit=ir -o "$build/demo-model.ir"
  echo "-- imported IR: $(grep -c ' = ' "$build/demo-model.ir") nodes (in $build/demo-model.ir); head:"
  head -n 8 "$build/demo-model.ir"
else
  echo "-- the ONNX importer (snugc compile) is not built yet; running the IR tool on the bundled example instead"
  "$bin/snug-opt" models/examples/mlp.ir --passes=dce --pass-statistics
fi
echo "-- not there yet: memory planning and report, bundle writer, host and CUDA executors, output check"
