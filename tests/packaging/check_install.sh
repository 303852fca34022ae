#!/usr/bin/env bash
#===- check_install.sh - Install the runtime and build an app against it ---===#
#
# The packaging test: installs a build into a temporary prefix, checks the
# installed files and that libsnugrt exports the C API only and links no
# LLVM, protobuf or ONNX, builds examples/c-app against the prefix twice
# (CMake find_package(snug) -> snug::runtime, and cc + pkg-config), checks
# both executables load libsnugrt from the prefix, compiles models/default
# with snugc and runs both apps on test_data_set_0's input (converted to a
# raw file with numpy): they must print the same, and the first values, sum
# and checksum must match output_0.pb (|a - b| <= atol + rtol * |b|). The
# installed snug-run --check runs on the same bundle.
#
# Without a Python that has numpy and onnx, everything but the value check
# runs (the apps run on zeros) and the test exits 77 (skipped).
#
#   check_install.sh --build DIR --source DIR --snugc PATH [--python PATH]
#     [--cmake PATH] [--generator NAME] [--make-program PATH] [--cc PATH]
#     [--cxx PATH] [--cflags FLAGS] [--keep]
#
#===------------------------------------------------------------------------===#
set -euo pipefail

build='' source='' snugc='' python='' cmake=cmake generator='' makeprogram=''
cc=cc cxx=c++ cflags='' keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --source) source=$2; shift 2 ;;
    --snugc) snugc=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --cmake) cmake=$2; shift 2 ;;
    --generator) generator=$2; shift 2 ;;
    --make-program) makeprogram=$2; shift 2 ;;
    --cc) cc=$2; shift 2 ;;
    --cxx) cxx=$2; shift 2 ;;
    --cflags) cflags=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "error: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [ -z "$build" ] || [ -z "$source" ] || [ -z "$snugc" ]; then
  echo "error: --build, --source and --snugc are required" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/snug-packaging.XXXXXX")
if [ "$keep" = 1 ]; then
  echo "packaging: keeping $work"
else
  trap 'rm -rf "$work"' EXIT
fi
prefix=$work/prefix
model=$source/models/default
data=$model/test_data_set_0

fail() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "packaging: $*"; }
# Runs a command quietly; on failure shows its output and fails the test.
quiet() {
  local what=$1; shift
  if ! "$@" > "$work/last.log" 2>&1; then
    cat "$work/last.log" >&2
    fail "$what"
  fi
}

step "cmake --install $build --prefix $prefix"
quiet "cmake --install" "$cmake" --install "$build" --prefix "$prefix"

# The library directory is lib or lib64 or lib/<multiarch> (GNUInstallDirs).
config=$(find "$prefix" -path '*/cmake/snug/snugConfig.cmake' | head -n 1)
pc=$(find "$prefix" -name snug.pc | head -n 1)
[ -n "$config" ] || fail "no lib/cmake/snug/snugConfig.cmake installed"
[ -n "$pc" ] || fail "no lib/pkgconfig/snug.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in include/snug/snug.h include/snug/snug.hpp bin/snug-run; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done
for f in snugConfigVersion.cmake snugTargets.cmake; do
  [ -f "$(dirname "$config")/$f" ] || fail "lib/cmake/snug/$f not installed"
done
lib=$libdir/libsnugrt.so
[ -e "$lib" ] || fail "libsnugrt.so not installed in $libdir"
step "installed libsnugrt in $libdir"

if command -v nm > /dev/null; then
  exported=$(nm -D --defined-only "$lib" | awk '{print $3}')
  echo "$exported" | grep -qx snug_session_run || fail "libsnugrt does not export snug_session_run"
  others=$(echo "$exported" | grep -v '^snug_' || true)
  [ -z "$others" ] ||
    fail "libsnugrt exports more than the C API: $(echo "$others" | head -n 5)"
  step "libsnugrt exports $(echo "$exported" | wc -l) symbols, all snug_*"
fi
if ldd "$lib" | grep -Ei 'libLLVM|libprotobuf|libonnx'; then
  fail "libsnugrt links LLVM, protobuf or ONNX"
fi

# The app must load libsnugrt from the prefix, not from the build tree.
check_loads_prefix() {
  local exe=$1 resolved
  resolved=$(ldd "$exe" | awk '/libsnugrt/ {print $3}')
  [ -n "$resolved" ] || fail "$exe does not link libsnugrt"
  case "$(realpath "$resolved")" in
    "$(realpath "$libdir")"/*) ;;
    *) fail "$exe loads libsnugrt from $resolved, not from $libdir" ;;
  esac
}

step "examples/c-app with find_package(snug) (CMAKE_PREFIX_PATH=$prefix)"
gen_args=()
[ -n "$generator" ] && gen_args+=(-G "$generator")
[ -n "$makeprogram" ] && gen_args+=("-DCMAKE_MAKE_PROGRAM=$makeprogram")
quiet "configure examples/c-app against the prefix" \
  "$cmake" -S "$source/examples/c-app" -B "$work/app-cmake" "${gen_args[@]}" \
  "-DCMAKE_PREFIX_PATH=$prefix" "-DCMAKE_C_COMPILER=$cc" \
  "-DCMAKE_C_FLAGS=$cflags" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF \
  -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF
found=$(sed -n 's/^snug_DIR:PATH=//p' "$work/app-cmake/CMakeCache.txt")
[ "$(realpath "$found")" = "$(realpath "$(dirname "$config")")" ] ||
  fail "find_package(snug) found $found, not the prefix"
quiet "build examples/c-app (CMake)" "$cmake" --build "$work/app-cmake"
app_cmake=$work/app-cmake/snug-c-app
check_loads_prefix "$app_cmake"

step "examples/c-app with pkg-config (PKG_CONFIG_PATH=$(dirname "$pc"))"
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
pcflags=$(pkg-config --cflags --libs snug) || fail "pkg-config snug"
[ "$(pkg-config --modversion snug)" != "" ] || fail "snug.pc has no version"
app_pc=$work/snug-c-app-pc
# shellcheck disable=SC2086 # pkg-config's output is a list of flags
quiet "cc main.c \$(pkg-config --cflags --libs snug)" \
  "$cc" $cflags -std=c99 -Wall -Wextra -Werror \
  "$source/examples/c-app/main.c" $pcflags -Wl,-rpath,"$libdir" -o "$app_pc"
check_loads_prefix "$app_pc"
if command -v "$cxx" > /dev/null; then
  printf '#include <snug/snug.hpp>\nint main() { snug::Bundle b; return 0; }\n' \
    > "$work/wrapper.cpp"
  # shellcheck disable=SC2086,SC2046
  quiet "the installed snug.hpp compiles" \
    "$cxx" $cflags -std=c++17 -fsyntax-only $(pkg-config --cflags snug) \
    "$work/wrapper.cpp"
fi

step "snugc compile models/default"
quiet "snugc compile" "$snugc" compile "$model/model.onnx" -o "$work/model.snug"
quiet "installed snug-run --check" \
  "$prefix/bin/snug-run" "$work/model.snug" --check "$data"

if [ -n "$python" ] && "$python" -c 'import numpy, onnx' 2> /dev/null; then
  step "input_0.pb -> raw with $python"
  "$python" - "$data/input_0.pb" "$work/input_0.raw" <<'PY'
import sys
import onnx
from onnx import numpy_helper
t = onnx.TensorProto()
with open(sys.argv[1], "rb") as f:
    t.ParseFromString(f.read())
numpy_helper.to_array(t).tofile(sys.argv[2])
PY
  inputs=("$work/input_0.raw")
else
  step "no Python with numpy and onnx: apps run on zeros, values unchecked"
  inputs=()
fi

step "running both apps on the host device"
"$app_cmake" "$work/model.snug" "${inputs[@]}" > "$work/out-cmake.txt" ||
  fail "snug-c-app (CMake) failed"
"$app_pc" "$work/model.snug" "${inputs[@]}" > "$work/out-pc.txt" ||
  fail "snug-c-app (pkg-config) failed"
cat "$work/out-cmake.txt"
diff "$work/out-cmake.txt" "$work/out-pc.txt" ||
  fail "the two builds of the app print different results"
[ ${#inputs[@]} -gt 0 ] || exit 77

"$python" - "$data/output_0.pb" "$work/out-cmake.txt" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
rtol, atol = 1e-3, 1e-4
t = onnx.TensorProto()
with open(sys.argv[1], "rb") as f:
    t.ParseFromString(f.read())
want = numpy_helper.to_array(t).astype(np.float64).ravel()
values = {}
for line in open(sys.argv[2]):
    for key in ("first", "sum", "checksum"):
        if line.startswith(f"output 0 {key}:"):
            values[key] = [float(v) for v in line.split(":")[1].split()]
if len(values) != 3 or not values["first"]:
    sys.exit("FAIL: the app printed no first values, sum or checksum")
first = np.array(values["first"])
n = len(first)
if not np.all(np.abs(first - want[:n]) <= atol + rtol * np.abs(want[:n])):
    sys.exit(f"FAIL: first values {first} != reference {want[:n]}")
weights = np.arange(want.size) % 97 + 1
for key, ref, w in (("sum", want.sum(), 1), ("checksum", (weights * want).sum(), weights)):
    got = values[key][0]
    bound = (atol * w * np.ones(want.size)).sum() + rtol * (w * np.abs(want)).sum()
    if abs(got - ref) > bound:
        sys.exit(f"FAIL: {key} {got} != reference {ref} (+-{bound})")
print(f"packaging: first values, sum and checksum {values['checksum'][0]:.9g} "
      f"match output_0.pb ({(weights * want).sum():.9g}); PASS")
PY
