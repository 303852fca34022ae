#!/usr/bin/env bash
# make fuzz-mutants: the acceptance run of issue 12 — MUTANTS (default
# 10000) hash-fixed structured mutants of zoo bundles, each loaded and run on
# the host executor in a forked child under ASan and UBSan; every one must
# be refused at load or run (or fail its run with a status) without a
# sanitizer report, a crash or a hang. Builds snug-bundle-mutants in the
# clang tree build-fuzz/ and compiles the bundles with snugc and snug-opt
# from the normal build (argument 1, default build/): the demo model for the
# host and for CUDA (device plan and kernel images), the lit tests' small
# bundles (tests/lit/bundle/Inputs: fused ops with bodies, f16, conv, mlp),
# and MUTANT_MODELS from the zoo cache (.cache/models; none by default: a
# zoo model runs for seconds per mutant under ASan), for the host.
# Prints each finding (mutant number, seed, what was mutated, the
# sanitizer's summary; logs in build-fuzz/mutants/logs), the counts, and
# the findings grouped by where they crashed (group_findings.py);
# exits 1 when there is a finding.
#   reproduce: build-fuzz/bin/snug-bundle-mutants --only I BUNDLES...
#   write it:  ... --only I --write DIR BUNDLES...   (then snug-run it)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
fuzz=build-fuzz
count=${MUTANTS:-10000}
seed=${MUTANT_SEED:-1}
jobs=${JOBS:-$(nproc)}
models=${MUTANT_MODELS:-}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B $fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSNUG_FUZZ=ON -DSNUG_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null
cmake --build $fuzz --target snug-bundle-mutants

dir=$fuzz/mutants
rm -rf $dir/logs
mkdir -p $dir/logs
bundles=()
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
for model in $models; do
  onnx=.cache/models/$model/model.onnx
  [ -f "$onnx" ] || { echo "note: $onnx is not in the zoo cache; skipped"; continue; }
  # inputs.txt holds the model's --dim flags (batch=1).
  "$build/bin/snugc" compile "$onnx" --target=host $(cat .cache/models/$model/inputs.txt 2>/dev/null) \
    -o $dir/$model.snug --memory-report=none >/dev/null
  bundles+=($dir/$model.snug)
done

echo "== $count mutants of ${bundles[*]} (seed $seed, $jobs jobs) =="
start=$(date +%s)
status=0
"$fuzz/bin/snug-bundle-mutants" --count "$count" --seed "$seed" --jobs "$jobs" \
  --logs $dir/logs "${bundles[@]}" | tee $dir/report.txt || status=$?
echo "took $(( $(date +%s) - start ))s; report in $dir/report.txt"
python3 bench/fuzz/group_findings.py $dir/report.txt | tee $dir/findings.txt
exit $status
