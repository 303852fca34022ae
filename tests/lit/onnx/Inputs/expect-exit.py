"""expect-exit.py CODE COMMAND...: runs COMMAND (stdout and stderr dropped)
and succeeds only when it exits with exactly CODE; lit's `not` cannot tell a
user error (1) from an internal one (2)."""
import subprocess
import sys

code = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode
if code != int(sys.argv[1]):
    print(f"expected exit status {sys.argv[1]}, got {code}: {sys.argv[2:]}")
    sys.exit(1)
