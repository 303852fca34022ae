#!/usr/bin/env python3
"""Groups the findings of a snug-bundle-mutants report by where they crashed.

Reads the report (stdin or a file) and prints one row per sanitizer summary
(its file:line or function, addresses and build ids dropped), with the count,
the bundles and the first mutant numbers to reproduce
(`snug-bundle-mutants --only I BUNDLES...`). bench/fuzz/mutants.sh calls it.
"""
import collections
import re
import sys


def main():
    text = open(sys.argv[1]).read() if len(sys.argv) > 1 else sys.stdin.read()
    groups = collections.OrderedDict()
    current = None
    for line in text.splitlines():
        head = re.match(r"mutant (\d+) \(seed [^)]*\): (CRASH|HANG)\b(.*?), log", line)
        if head:
            current = {"index": head.group(1), "how": head.group(2) + head.group(3),
                       "bundle": "?", "summary": None, "error": None}
            groups.setdefault("pending", []).append(current)
            continue
        if current is None:
            continue
        described = re.match(r"  mutant \d+ of (\S+) \(seed", line)
        if described:
            current["bundle"] = described.group(1).split("/")[-1]
        elif "runtime error:" in line and not current["error"]:
            current["error"] = line.split("runtime error:", 1)[1].strip()
        elif line.startswith("  SUMMARY:"):
            summary = re.sub(r"\(/[^)]*\)", "", line.strip())
            summary = re.sub(r"0x[0-9a-f]+", "", summary)
            summary = re.sub(r"\(BuildId: [0-9a-f]+\)", "", summary)
            current["summary"] = " ".join(summary.split())
    findings = groups.get("pending", [])
    byPlace = collections.OrderedDict()
    for finding in findings:
        key = finding["summary"] or finding["how"] + " (no sanitizer summary)"
        byPlace.setdefault(key, []).append(finding)
    print(f"{len(findings)} findings in {len(byPlace)} places")
    for key, items in sorted(byPlace.items(), key=lambda kv: -len(kv[1])):
        bundles = sorted({f["bundle"] for f in items})
        first = ", ".join(f["index"] for f in items[:6])
        print(f"{len(items):5d}  {key}")
        if items[0]["error"]:
            print(f"       {items[0]['error']}")
        print(f"       bundles: {', '.join(bundles)}; mutants: {first}")


if __name__ == "__main__":
    main()
