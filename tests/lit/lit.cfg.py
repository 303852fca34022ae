# lit configuration for snug's textual tests. ctest runs each test file on its
# own (tests/lit/CMakeLists.txt) and passes the build's tool directory in
# SNUG_TOOLS_DIR; FileCheck and not come from LLVM 14.
import os
import shutil
import lit.formats

config.name = "snug"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py"]
# Scratch files (%t) go to the build tree, never the source tree.
config.test_exec_root = os.environ.get("SNUG_LIT_EXEC_ROOT", "/tmp/snug-lit")

tools_dir = os.environ.get("SNUG_TOOLS_DIR")
if not tools_dir:
    lit_config.fatal("SNUG_TOOLS_DIR is not set: run the lit tests through ctest")
llvm_bin = os.environ.get("SNUG_LLVM_BIN", "/usr/lib/llvm-14/bin")
config.environment["PATH"] = os.pathsep.join(
    [tools_dir, llvm_bin, config.environment.get("PATH", os.environ.get("PATH", ""))])
for name in ["ASAN_OPTIONS", "UBSAN_OPTIONS", "SNUG_SHARED_DIR"]:
    if name in os.environ:
        config.environment[name] = os.environ[name]
config.substitutions.append(("%tests", os.path.dirname(os.path.dirname(__file__))))
config.substitutions.append(("%expect-exit", os.environ.get("SNUG_PYTHON", "python3") + " " + os.path.join(os.path.dirname(os.path.dirname(__file__)), "tools", "expect-exit.py")))
config.substitutions.append(("%python", os.environ.get("SNUG_PYTHON", "python3")))

# Tests that compile emitted kernels with nvcc to read ptxas's report.
_nvcc = os.environ.get("SNUG_NVCC", "")
if _nvcc and os.path.exists(_nvcc):
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", _nvcc))
# Tests that drive a browser run where Chromium is installed
# (tools/install-deps.sh installs it).
if os.environ.get("SNUG_HAVE_NVRTC") == "1":
    config.available_features.add("nvrtc")
# Tests of CudaExecutor on the strict fake driver (tests/unit/FakeCuda).
_fake_cuda = os.environ.get("SNUG_FAKE_CUDA_DIR", "")
if _fake_cuda and os.path.exists(os.path.join(_fake_cuda, "libcuda.so.1")):
    config.available_features.add("fake-cuda")
    config.substitutions.append(("%fake-cuda", _fake_cuda))
if shutil.which("chromium"):
    config.available_features.add("chromium")

# cuobjdump (`REQUIRES: cuobjdump`, %cuobjdump) checks what snug reads from
# its cubins: SNUG_CUOBJDUMP, else PATH, else the CUDA toolkit's. Only a
# CUDA 12 cuobjdump counts: snug's cubins come from nvJitLink 12.0 (ELF ABI
# 7), which cuobjdump 13 refuses ("does not contain device code"), and PyPI
# has no CUDA 12 cuobjdump wheel, so the test runs where a CUDA 12 toolkit
# is installed and is unsupported elsewhere.
import re  # noqa: E402
import subprocess  # noqa: E402

_cuobjdump = [os.environ.get("SNUG_CUOBJDUMP"), shutil.which("cuobjdump"),
              "/usr/local/cuda/bin/cuobjdump"]
for _candidate in _cuobjdump:
    if not (_candidate and os.access(_candidate, os.X_OK)):
        continue
    try:
        _version = subprocess.run([_candidate, "--version"], capture_output=True,
                                  text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        continue
    if re.search(r"release 12\.", _version):
        config.available_features.add("cuobjdump")
        config.substitutions.append(("%cuobjdump", _candidate))
        break

# Tests that compare with PyTorch (`REQUIRES: torch`) run their reference
# script with %torch-python: the first of SNUG_TORCH_PYTHON (CMake sets it
# to the project's .venv), SNUG_PYTHON, the checkout's .venv and the system
# python3 that has torch and numpy (probed by find_spec, without importing
# torch: importing it would cost seconds).
import subprocess  # noqa: E402

_repo = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))
for _candidate in [os.environ.get("SNUG_TORCH_PYTHON"),
                   os.environ.get("SNUG_PYTHON"),
                   os.path.join(_repo, ".venv", "bin", "python"),
                   "/usr/bin/python3"]:
    if not _candidate or not shutil.which(_candidate):
        continue
    _probe = subprocess.run(
        [_candidate, "-c", "import importlib.util as u, sys; "
         "sys.exit(not (u.find_spec('torch') and u.find_spec('numpy')))"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if _probe.returncode == 0:
        config.available_features.add("torch")
        config.substitutions.append(("%torch-python", _candidate))
        break
