#!/usr/bin/env bash
# gpu-check.sh: the one script to run on a GPU machine (tools/gpu_prepare.py
# prepares what it needs here, without a GPU).
#
#   tools/gpu-check.sh [PART_DIR]      (default .cache/gpu/1)
#
# 1. builds the runtime and snug-run in Release (-DSNUG_RUNTIME_ONLY=ON: the
#    GPU machine has no LLVM, protobuf or ONNX);
# 2. runs the `gpu` tests: snug-gpu-tests (built here when GoogleTest is
#    available, else the binary gpu_prepare.py built and put in
#    .cache/gpu/bin), against the bundles in .cache/gpu/bin/bundles;
# 3. runs every bundle of PART_DIR on the device (snug-run --device cuda
#    --check: outputs against the reference, predicted against allocated
#    device memory, latency), and the PyTorch eager / torch.compile
#    benchmark of the zoo models among them;
# 4. prints a compact table last, then the kernel resources snugc predicted
#    (each bundle's kernels.json, its --kernel-report: kernels, worst
#    registers, local and spill bytes per bundle). Exit 0 only when every
#    gpu test passes, every bundle matches its reference, predicted ==
#    allocated, and no kernel has local or spill bytes.
set -uo pipefail
cd "$(dirname "$0")/.."
part=${1:-.cache/gpu/1}
python=${PYTHON:-python3}
build=build-gpu

echo "== building the runtime (Release, runtime only) into $build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSNUG_RUNTIME_ONLY=ON >"$build.log" 2>&1 && ninja -C "$build" >>"$build.log" 2>&1 \
  || { tail -30 "$build.log"; echo "gpu-check: FAILED to build"; exit 1; }

status=0
echo "== gpu tests"
gpu_tests=.cache/gpu/bin/snug-gpu-tests
if [ -x "$gpu_tests" ]; then
  SNUG_GPU_TEST_BUNDLES=.cache/gpu/bin/bundles "$gpu_tests" --gtest_brief=1 \
    >"$build/gpu-tests.log" 2>&1
  gpu_rc=$?
  tail -5 "$build/gpu-tests.log"
  [ $gpu_rc -eq 0 ] || status=1
else
  echo "no $gpu_tests (run tools/gpu_prepare.py on the build machine)"
  gpu_rc=missing
fi

echo "== bundles in $part"
"$python" tools/gpu_check.py "$part" --snug-run "$build/bin/snug-run" \
  --gpu-tests "$gpu_rc" || status=1
exit $status
