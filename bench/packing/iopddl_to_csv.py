#!/usr/bin/env python3
"""Converts an ASPLOS 2025 IOPDDL contest problem (github.com/google/iopddl,
benchmarks/*.json.gz) into a buffer-packing problem for snugc plan-buffers:
each node becomes one buffer live over its half-open interval with the usage
of its smallest-usage strategy. Nodes with an empty interval or zero usage
occupy nothing and are left out. Usage: iopddl_to_csv.py PROBLEM.json[.gz] OUT.csv
"""
import gzip
import json
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 1
    source, target = sys.argv[1], sys.argv[2]
    opener = gzip.open if source.endswith(".gz") else open
    with opener(source, "rt") as f:
        nodes = json.load(f)["problem"]["nodes"]
    rows = []
    for node, ((lower, upper), usages) in enumerate(
            zip(nodes["intervals"], nodes["usages"])):
        size = min(usages)
        if upper > lower and size > 0:
            rows.append(f"{node},{lower},{upper},{size}\n")
    with open(target, "w") as f:
        f.write("id,lower,upper,size\n")
        f.writelines(rows)
    print(f"{target}: {len(rows)} buffers of {len(nodes['intervals'])} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
