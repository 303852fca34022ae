#!/usr/bin/env python3
"""expect-exit.py CODE COMMAND...: runs COMMAND, passes its output through,
and exits 0 only if COMMAND exited with exactly CODE (lit's `not` accepts any
non-zero code; snug's tools promise 1 for user errors and 2 for internal
ones)."""
import subprocess
import sys

expected = int(sys.argv[1])
result = subprocess.run(sys.argv[2:])
if result.returncode != expected:
    sys.stderr.write(f"expect-exit: exit code {result.returncode}, expected {expected}\n")
    sys.exit(1)
