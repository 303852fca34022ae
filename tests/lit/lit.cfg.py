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

# The PyTorch references (`%torch-python`, `REQUIRES: torch`): a Python
# with torch, the project's .venv by default. Only its existence is checked
# here: importing torch for every test file would cost seconds each.
torch_python = os.environ.get("SNUG_TORCH_PYTHON", "")
if torch_python and os.path.exists(torch_python):
    config.available_features.add("torch")
    config.substitutions.append(("%torch-python", torch_python))

# Tests that drive a browser run where Chromium is installed
# (tools/install-deps.sh installs it).
if os.environ.get("SNUG_HAVE_NVRTC") == "1":
    config.available_features.add("nvrtc")
if shutil.which("chromium"):
    config.available_features.add("chromium")
