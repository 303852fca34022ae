#!/usr/bin/env python3
"""check_layering.py [ROOT]: checks snug's include graph against the layers
of ARCHITECTURE.md and exits 1 naming every include that breaks a rule (the
ctest `layering`).

The floors, each knowing only those below it:
  core/            the standard library (and POSIX) only: no LLVM, protobuf,
                   ONNX or CUDA, and of snug's own headers only core/'s;
  runtime/         core/, runtime/ and its public API (snug/snug.h): an
                   application links the runtime without the compiler;
  ir/              core/, ir/ and LLVM (never runtime/, passes/ or
                   compiler/);
  passes/planner/  core/, passes/planner/ and LLVM (the packers are IR-free;
                   the build enforces it too: snug_planner links neither
                   snug_ir nor snug_passes);
  passes/          core/, ir/, runtime/ (constant folding runs the host
                   kernels), passes/ and LLVM; never compiler/ or tools/.
Only snug's quoted includes ("dir/File.h") name layers; for core/ the
angled ones are checked too, against the libraries it must not use.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
SOURCES = (".h", ".cpp", ".def", ".inc")

# Directory prefix -> the top-level folders its quoted includes may name.
# LLVM's ADT and Support headers ("llvm/...") are allowed from ir/ up (the
# planner links LLVMSupport alone); "snug/" is the runtime's public C API
# (runtime/include/snug).
RULES = [
    ("core/", {"core"}),
    ("runtime/", {"core", "runtime", "snug"}),
    ("ir/", {"core", "ir", "llvm"}),
    ("passes/planner/", {"core", "passes/planner", "llvm"}),
    ("passes/", {"core", "ir", "runtime", "passes", "llvm"}),
]
# Angled includes core/ may not use (it is std-only).
CORE_FORBIDDEN = re.compile(r"^(llvm|onnx|google|cuda|cublas|nvrtc|gtest|"
                            r"nanobind|pybind11)")


def allowed(path, target, layers):
    return any(target == layer or target.startswith(layer + "/")
               for layer in layers)


def check(root):
    problems = []
    for prefix, layers in RULES:
        top = os.path.join(root, prefix)
        for folder, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith(SOURCES):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, root)
                # The most specific rule owns a file (passes/planner/ over
                # passes/).
                owner = max((p for p, _ in RULES if rel.startswith(p)),
                            key=len)
                if owner != prefix:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                for match in INCLUDE.finditer(text):
                    kind, target = match.groups()
                    line = text.count("\n", 0, match.start()) + 1
                    if kind == '"' and "/" in target and \
                            not allowed(rel, target, layers):
                        problems.append(
                            f"{rel}:{line}: includes \"{target}\"; {prefix} "
                            f"may include only {', '.join(sorted(layers))}")
                    if kind == "<" and prefix == "core/" and \
                            CORE_FORBIDDEN.match(target):
                        problems.append(
                            f"{rel}:{line}: includes <{target}>; core/ is "
                            f"standard-library only")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"layering: {len(problems)} include(s) break the layers")
        return 1
    print("layering: every include of core/, runtime/, ir/ and passes/ "
          "follows the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
