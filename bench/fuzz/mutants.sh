#!/usr/bin/env bash
# make fuzz-mutants: the acceptance run of issue 12 — MUTANTS (default
# 10000) hash-fixed structured mutants of bundles, each loaded and run on
# the host executor in a forked child under ASan and UBSan; every one must
# be refused at load or run (or fail its run with a status) without a
# sanitizer report, a crash or a hang. Builds snug-bundle-mutants in the
# clang tree build-mutants/ (Release, ASan+UBSan, no coverage
# instrumentation: mutants are not coverage-guided, and a zoo model runs
# about 4x faster without it than in build-fuzz/) and compiles the bundles
# with snugc and snug-opt from the normal build (argument 1, default
# build/):
#  - with MUTANT_SMALL=1 (the default): the demo model for the host and for
#    CUDA (device plan and kernel images) and the lit tests' small bundles
#    (tests/lit/bundle/Inputs: fused ops with bodies, f16, conv, mlp);
#  - MUTANT_MODELS from the zoo cache (.cache/models; none by default), each
#    NAME for the host or NAME@cuda for CUDA (its host plan runs; its
#    device plan and kernel images go through the loader's checks). A zoo
#    model runs for 0.3-1 s a mutant under ASan (unet and vit for 15 s).
# Mutants are spread over the bundles in turn; one still running after
# MUTANT_TIMEOUT seconds (default 20) is a hang. Prints each finding (mutant
# number, seed, what was mutated, the sanitizer's summary; logs in
# build-mutants/mutants/logs), the counts, and the findings grouped by where
# they crashed (group_findings.py); exits 1 when there is a finding.
#   the zoo acceptance run:
#     MUTANT_SMALL=0 MUTANT_MODELS="bert_small-opset17 bert_small-opset17@cuda
#       gpt2_small-opset13 mobilenet_v3_small-opset13 squeezenet1_1-opset17"
#       make fuzz-mutants
#   reproduce: build-mutants/bin/snug-bundle-mutants --only I BUNDLES...
#   write it:  ... --only I --write DIR BUNDLES...   (then snug-run it)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
fuzz=build-mutants
count=${MUTANTS:-10000}
seed=${MUTANT_SEED:-1}
jobs=${JOBS:-$(nproc)}
small=${MUTANT_SMALL:-1}
timeout=${MUTANT_TIMEOUT:-20}
models=${MUTANT_MODELS:-}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# SNUG_BUILD_TESTS=ON: tests/fuzz (where snug-bundle-mutants is defined) is
# part of the test tree; only the one target is built.
CC=clang CXX=clang++ cmake -S . -B $fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSNUG_SANITIZE=ON -DSNUG_BUILD_TESTS=ON "${launcher[@]}" >/dev/null
cmake --build $fuzz --target snug-bundle-mutants

dir=$fuzz/mutants
rm -rf $dir/logs
mkdir -p $dir/logs
bundles=()
if [ "$small" = 1 ]; then
  for target in host cuda; do
    "$build/bin/snugc" compile models/default/model.onnx --target=$target \
      -o $dir/default-$target.snug --memory-report=none >/dev/null
    bundles+=($dir/default-$target.snug)
  done
  for ir in fused5 fused-f16 conv mlp; do
    "$build/bin/snug-opt" tests/lit/bundle/Inputs/$ir.ir --passes=plan-memory \
      --emit-bundle=$dir/$ir.snug -o /dev/null
    bundles+=($dir/$ir.snug)
  done
fi
for entry in $models; do
  model=${entry%@*}
  target=host
  [ "$entry" != "$model" ] && target=${entry#*@}
  onnx=.cache/models/$model/model.onnx
  [ -f "$onnx" ] || { echo "note: $onnx is not in the zoo cache; skipped"; continue; }
  # inputs.txt holds the model's --dim flags (batch=1).
  "$build/bin/snugc" compile "$onnx" --target=$target $(cat .cache/models/$model/inputs.txt 2>/dev/null) \
    -o $dir/$model-$target.snug --memory-report=none >/dev/null
  bundles+=($dir/$model-$target.snug)
done
[ ${#bundles[@]} -gt 0 ] || { echo "error: no bundles (MUTANT_SMALL=0 and no MUTANT_MODELS)" >&2; exit 1; }

echo "== $count mutants of ${bundles[*]} (seed $seed, $jobs jobs) =="
start=$(date +%s)
status=0
"$fuzz/bin/snug-bundle-mutants" --count "$count" --seed "$seed" --jobs "$jobs" --timeout "$timeout" \
  --logs $dir/logs "${bundles[@]}" | tee $dir/report.txt || status=$?
echo "took $(( $(date +%s) - start ))s; report in $dir/report.txt"
python3 bench/fuzz/group_findings.py $dir/report.txt | tee $dir/findings.txt
exit $status
