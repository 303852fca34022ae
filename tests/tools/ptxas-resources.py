#!/usr/bin/env python3
"""ptxas-resources.py NVCC ARCH PATTERN FILE.cu...: compiles each emitted
CUDA file (snug-opt --emit-cuda, snugc --dump-cuda) to a cubin for ARCH with
`nvcc -cubin -Xptxas -v`, and prints, for every kernel whose name contains
PATTERN, one line

  NAME: R registers, S bytes stack, T bytes spill stores, L bytes spill loads

from ptxas's report. Exits 1 when a matched kernel has a stack frame or
spills (a per-thread array in local memory, or registers spilled: the local
memory the plan does not count), or when no kernel matched."""
import os
import re
import subprocess
import sys
import tempfile

nvcc, arch, pattern = sys.argv[1:4]
files = sys.argv[4:]
entry = re.compile(r"Compiling entry function '([^']+)'")
stack = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                   r"(\d+) bytes spill loads")
registers = re.compile(r"Used (\d+) registers")
bad = matched = 0
for path in files:
    with tempfile.TemporaryDirectory() as scratch:
        result = subprocess.run(
            [nvcc, "-cubin", "-arch=" + arch, "-Xptxas", "-v", "-w", path,
             "-o", os.path.join(scratch, "out.cubin")],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout)
        sys.exit(f"ptxas-resources: nvcc failed on {path}")
    name = frame = None
    for line in result.stdout.splitlines():
        if m := entry.search(line):
            name, frame = m.group(1), None
        elif m := stack.search(line):
            frame = m.groups()
        elif (m := registers.search(line)) and name and pattern in name:
            matched += 1
            s, t, l = (int(x) for x in frame)
            print(f"{name}: {m.group(1)} registers, {s} bytes stack, "
                  f"{t} bytes spill stores, {l} bytes spill loads")
            if s or t or l:
                bad += 1
if not matched:
    sys.exit(f"ptxas-resources: no kernel named *{pattern}*")
if bad:
    sys.exit(f"ptxas-resources: {bad} of {matched} kernels use local memory")
