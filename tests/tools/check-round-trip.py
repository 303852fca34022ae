#!/usr/bin/env python3
"""check-round-trip.py TESTS_DIR: every .ir file under TESTS_DIR must
round-trip through snug-opt byte for byte.

For each file, snug-opt --split-input-file prints every chunk that parses in
canonical form (and nothing for a chunk that is an error case). Printing that
output again must give the same bytes. A file with no comments is already
canonical: its own bytes must come back unchanged."""
import pathlib
import subprocess
import sys


def snug_opt(text):
    result = subprocess.run(["snug-opt", "--split-input-file", "-"],
                            input=text, capture_output=True, text=True)
    return result.stdout


def main():
    root = pathlib.Path(sys.argv[1])
    files = sorted(root.rglob("*.ir"))
    failures = []
    modules = 0
    for path in files:
        source = path.read_text()
        first = snug_opt(source)
        second = snug_opt(first)
        modules += sum(1 for chunk in first.split("// -----\n") if chunk.strip())
        if first != second:
            failures.append(f"{path}: printing the printed form changed it")
        if "//" not in source and first != source:
            failures.append(f"{path}: canonical file does not print back unchanged")
    for failure in failures:
        print("FAIL:", failure)
    print(f"round-trip: {len(files)} files, {modules} modules, {len(failures)} failures")
    if not files or modules == 0:
        print("FAIL: no .ir files found under", root)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
