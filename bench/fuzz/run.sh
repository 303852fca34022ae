#!/usr/bin/env bash
# make fuzz: the libFuzzer targets over the ONNX importer and the bundle
# reader, each for a bounded time (FUZZ_SECONDS, default 60) from seed
# corpora of real models and bundles. Builds a clang tree in build-fuzz/.
# Exits non-zero when a fuzzer finds a crash; its input is kept in
# build-fuzz/findings/ to reproduce (`build-fuzz/bin/snug-fuzz-... FILE`).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-60}
build=${1:-build}
fuzz=build-fuzz

CC=clang CXX=clang++ cmake -S . -B $fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSNUG_FUZZ=ON -DSNUG_BUILD_TESTS=OFF >/dev/null
cmake --build $fuzz --target snug-fuzz-importer snug-fuzz-bundle

corpus=$fuzz/corpus
mkdir -p $corpus/importer $corpus/bundle $fuzz/findings
# Seeds: the demo model, small ONNX node tests, the importer's bad inputs.
cp models/default/model.onnx $corpus/importer/default.onnx
cp tests/lit/onnx/Inputs/*.onnx $corpus/importer/ 2>/dev/null || true
for test in /usr/share/libonnx-testdata/data/node/test_{conv,relu,concat,reshape,gemm,maxpool,softmax,slice,transpose,resize}*; do
  [ -f "$test/model.onnx" ] && cp "$test/model.onnx" "$corpus/importer/$(basename "$test").onnx"
done
"$build/bin/snugc" compile models/default/model.onnx -o $corpus/bundle/default.snug --memory-report=none 2>/dev/null

status=0
for target in importer bundle; do
  echo "== fuzzing the $target for ${seconds}s =="
  if ! "$fuzz/bin/snug-fuzz-$target" -max_total_time="$seconds" -rss_limit_mb=4096 \
      -artifact_prefix="$fuzz/findings/$target-" -print_final_stats=1 \
      "$corpus/$target" 2>&1 | tee "$fuzz/$target.log" | grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)"; then
    :
  fi
  if ls "$fuzz/findings/$target-"* >/dev/null 2>&1; then
    echo "FINDING: see $fuzz/findings/ and $fuzz/$target.log"
    status=1
  fi
done
exit $status
