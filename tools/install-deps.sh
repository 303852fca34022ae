#!/usr/bin/env bash
# Installs what snug's build and tests need on a fresh Debian 12 machine:
# Debian packages with apt-get and the Python test tooling in .venv.
# Idempotent and quiet when everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages. Keep this list in step with README.md and ARCHITECTURE.md.
packages=(
  cmake ninja-build g++ clang libclang-rt-14-dev python3-venv python3-pip
  llvm-14-dev llvm-14-tools
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  libgtest-dev libgmock-dev
  coinor-libcbc-dev
  python3-torch python3-torchvision
  chromium
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python test tooling. The venv sees Debian's python3-torch (system site
# packages) for model export; numpy stays below 2 for that torch build.
venv=.venv
requirements=tools/requirements.txt
stamp="$venv/.requirements-installed"
if [ ! -x "$venv/bin/python" ]; then
  echo "install-deps: creating $venv"
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
if [ ! -f "$stamp" ] || ! cmp -s "$requirements" "$stamp"; then
  echo "install-deps: installing Python test tooling into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
  cp "$requirements" "$stamp"
fi

# Newer ONNX node tests: the onnx 1.22.0 wheel is the last release that ships
# them as files. Only its test data is kept (the venv keeps its pinned onnx).
node_tests=.cache/onnx-1.22.0/node
if [ ! -d "$node_tests" ]; then
  echo "install-deps: fetching the ONNX 1.22.0 node tests into $node_tests"
  scratch=$(mktemp -d)
  "$venv/bin/python" -m pip download -q --disable-pip-version-check --no-deps \
    --only-binary=:all: onnx==1.22.0 -d "$scratch"
  "$venv/bin/python" - "$scratch" "$node_tests" <<'EOF'
import glob, os, sys, zipfile
scratch, target = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(scratch, "onnx-1.22.0-*.whl"))[0]
prefix = "onnx/backend/test/data/node/"
partial = target + ".partial"
with zipfile.ZipFile(wheel) as archive:
    for member in archive.namelist():
        if member.startswith(prefix) and not member.endswith("/"):
            path = os.path.join(partial, member[len(prefix):])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as out:
                out.write(archive.read(member))
os.rename(partial, target)
EOF
  rm -rf "$scratch"
fi

# The CUDA toolkit is optional: without it the build leaves the CUDA parts out.
cuda_root="${CUDAToolkit_ROOT:-/usr/local/cuda}"
if [ ! -x "$cuda_root/bin/nvcc" ] && [ -z "${SNUG_QUIET_CUDA:-}" ]; then
  echo "install-deps: no CUDA toolkit at $cuda_root; the CUDA parts will not be built"
fi
exit 0
