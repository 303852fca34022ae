#!/usr/bin/env bash
# make fuzz: the libFuzzer targets (tests/fuzz/) each for a bounded time
# (FUZZ_SECONDS, default 60) from seed corpora, under ASan and UBSan:
#   importer           the ONNX importer (real models, node tests, bad inputs)
#   bundle             the bundle reader on raw bytes (half get the hash fixed)
#   bundle-structured  the bundle reader and host executor behind a fixed
#                      hash, with the structure-aware mutator
#   ir                 the textual IR parser, verifier and printer round trip
#   passes             infer-shapes then fuse on what parses, the verifier
#                      after each (seeded like ir)
#   tensor-files       snug-run's .npy and TensorProto readers
#   flags              snugc command lines: the lit tests' as seeds, every
#                      flag and value in the dictionary (flags_seeds.py); a
#                      case must exit 0 or 1 within 60 s, leaving nothing
#                      half-written
# Builds a clang tree in build-fuzz/ and needs snugc and snug-opt from the
# normal build (argument 1, default build/) for the bundle seeds. FUZZ_TARGETS picks a
# subset ("ir bundle"). Prints a table per target: executions, coverage
# (edges, features) and findings. Exits 1 when a fuzzer finds a crash, a
# leak, a timeout or an out-of-memory; its input is kept in
# build-fuzz/findings/T/ to reproduce (`build-fuzz/bin/snug-fuzz-T FILE`;
# for flags, with SNUG_FUZZ_MODELS=build-fuzz/flags-models and
# SNUG_FUZZ_VERBOSE=1 to see snugc's output).
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${FUZZ_SECONDS:-60}
build=${1:-build}
# Absolute: the flags target runs its command lines in a scratch directory.
fuzz=$PWD/build-fuzz
targets=${FUZZ_TARGETS:-importer bundle bundle-structured ir passes tensor-files flags}

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
CC=clang CXX=clang++ cmake -S . -B $fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DSNUG_FUZZ=ON -DSNUG_BUILD_TESTS=OFF "${launcher[@]}" >/dev/null
cmake --build $fuzz --target $(for t in $targets; do echo snug-fuzz-$t; done)

corpus=$fuzz/corpus
mkdir -p $fuzz/findings
# Every target's seed directory, chosen or not: the seeding below fills all.
for t in importer bundle bundle-structured ir passes tensor-files flags; do
  mkdir -p $corpus/$t
done

# Seeds: the demo model, small ONNX node tests, the importer's bad inputs.
cp models/default/model.onnx $corpus/importer/default.onnx
cp tests/lit/onnx/Inputs/*.onnx $corpus/importer/ 2>/dev/null || true
for test in /usr/share/libonnx-testdata/data/node/test_{conv,relu,concat,reshape,gemm,maxpool,softmax,slice,transpose,resize,if,loop,scan}*; do
  [ -f "$test/model.onnx" ] && cp "$test/model.onnx" "$corpus/importer/$(basename "$test").onnx"
done

# Bundles of the demo model for both executors' sections (host only, and
# with the CUDA device plan and kernel images).
for target in host cuda; do
  "$build/bin/snugc" compile models/default/model.onnx --target=$target \
    -o $corpus/bundle/default-$target.snug --memory-report=none >/dev/null 2>&1 ||
    echo "note: could not compile the $target seed bundle"
done
# The lit tests' small bundles: fused ops with bodies, f16, conv, mlp (a
# kilobyte each, so they run hundreds of times faster than the demo model).
for ir in fused5 fused-f16 conv mlp; do
  "$build/bin/snug-opt" tests/lit/bundle/Inputs/$ir.ir --passes=plan-memory \
    --emit-bundle=$corpus/bundle/$ir.snug -o /dev/null 2>/dev/null ||
    echo "note: could not compile the $ir seed bundle"
done
# The structured target gets the small ones only: it runs every mutant that
# loads, and the demo model's CUDA bundle (360 KB, with kernel images) runs
# ten times slower; the raw target and mutants.sh cover its device plan.
for seed in default-host fused5 fused-f16 conv mlp; do
  cp $corpus/bundle/$seed.snug $corpus/bundle-structured/ 2>/dev/null || true
done

# The IR parser and the passes: each `// -----` chunk of the lit tests is
# one seed.
for target in ir passes; do
  [ -d "$corpus/$target" ] || continue
  python3 - "$corpus/$target" tests/lit <<'EOF'
import pathlib, sys
out, root = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
for path in sorted(root.rglob("*.ir")):
    for i, chunk in enumerate(path.read_text().split("// -----")):
        (out / f"{path.stem}-{i}.ir").write_text(chunk)
EOF
done

# snug-run's readers: TensorProto files of the ONNX test data, and small
# .npy files of every dtype and header version written here.
cp models/default/test_data_set_0/*.pb $corpus/tensor-files/ 2>/dev/null || true
for test in /usr/share/libonnx-testdata/data/node/test_{abs,cast_FLOAT_to_FLOAT16,gather_0,where_example}; do
  [ -f "$test/test_data_set_0/input_0.pb" ] &&
    cp "$test/test_data_set_0/input_0.pb" "$corpus/tensor-files/$(basename "$test").pb"
done
python3 - "$corpus/tensor-files" <<'EOF'
import pathlib, struct, sys
out = pathlib.Path(sys.argv[1])
def npy(name, descr, shape, data, major=1):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        descr, "(" + "".join(f"{d}, " for d in shape).rstrip(" ") + ")")
    lead = 10 if major == 1 else 12
    pad = (64 - (lead + len(header) + 1) % 64) % 64
    header = header + " " * pad + "\n"
    length = struct.pack("<H" if major == 1 else "<I", len(header))
    (out / name).write_bytes(b"\x93NUMPY" + bytes([major, 0]) + length +
                             header.encode("latin1") + data)
npy("f32.npy", "<f4", [2, 3], struct.pack("<6f", *range(6)))
npy("i64.npy", "<i8", [3], struct.pack("<3q", -1, 0, 1))
npy("u8.npy", "|u1", [4], bytes(range(4)))
npy("bool.npy", "|b1", [2], b"\x01\x00")
npy("f16.npy", "<f2", [1, 1], b"\x00\x3c")
npy("scalar.npy", "<f8", [], struct.pack("<d", 1.5))
npy("v2.npy", "<i4", [2], struct.pack("<2i", 7, 8), major=2)
EOF

# snugc's command lines: the lit tests' as seeds, the models they read
# copied to the directory the fuzzer runs them in.
if [[ " $targets " == *" flags "* ]]; then
  rm -rf $fuzz/flags-models
  python3 bench/fuzz/flags_seeds.py "$build/bin/snugc" tests/lit \
    $corpus/flags $fuzz/flags-models $fuzz/flags.dict
fi
export SNUG_FUZZ_MODELS=$fuzz/flags-models

# UBSan stops at its first report, so that it counts as a finding.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
status=0
results=()
for target in $targets; do
  echo "== fuzzing the $target for ${seconds}s =="
  rm -rf "$fuzz/findings/$target"
  mkdir -p "$fuzz/findings/$target"
  # A command line compiles a model, kernels included: 60 s a case. Leak
  # checks are off there: each NVRTC load leaves its libstdc++'s pool when
  # unloaded (LSan's "<unknown module>"), which is not snug's.
  options=(-timeout=20)
  environment=()
  [ "$target" = flags ] &&
    options=(-timeout=60 -detect_leaks=0 -dict="$fuzz/flags.dict") &&
    environment=(ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0)
  env "${environment[@]}" \
    "$fuzz/bin/snug-fuzz-$target" -max_total_time="$seconds" -rss_limit_mb=4096 \
      "${options[@]}" -artifact_prefix="$fuzz/findings/$target/" \
      -print_final_stats=1 "$corpus/$target" >"$fuzz/$target.log" 2>&1 || true
  grep -E "^(#[0-9]+.*DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)" \
    "$fuzz/$target.log" || true
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$fuzz/$target.log" | tail -1)
  # The last status line has the coverage: "#N ... cov: E ft: F corp: ...".
  cov=$(grep -oE "cov: [0-9]+ ft: [0-9]+" "$fuzz/$target.log" | tail -1)
  # A slow unit (over 10 s, under the timeout) is kept to look at, not a
  # finding: the flags seeds compile kernels for three architectures.
  findings=$(find "$fuzz/findings/$target" -type f ! -name 'slow-unit-*' | wc -l)
  results+=("$(printf "%-18s %12s %8s %9s %8s" "$target" "${execs:-?}" \
    "$(echo "$cov" | awk '{print $2}')" "$(echo "$cov" | awk '{print $4}')" "$findings")")
  if [ "$findings" -gt 0 ]; then
    echo "FINDING: see $fuzz/findings/$target/ and $fuzz/$target.log"
    status=1
  fi
done
echo
echo "fuzzing ${seconds}s per target (ASan+UBSan)"
printf "%-18s %12s %8s %9s %8s\n" target executions edges features findings
printf "%s\n" "${results[@]}"
exit $status
