#!/usr/bin/env python3
"""Writes a large textual-IR graph to stdout, for the planning-time tests.

    large_graph.py chain N        N Relus in a row
    large_graph.py sum N          %x read by N Relus, summed by a tree of Adds
    large_graph.py concat N       %x read by N Relus, joined by one Concat
    large_graph.py outputs N      %x read by N Relus, each a graph output

Every tensor is f32[1,64] (256 bytes), so the expected bounds are simple
arithmetic (see the tests that use it).
"""
import sys


def chain(n):
    lines = []
    current = "%x"
    for i in range(n):
        lines.append(f"  %{i} = Relu({current}) : f32[1,64]")
        current = f"%{i}"
    return "func @chain(%x: f32[1,64]) -> f32[1,64] {", lines, f"  return {current}"


def fanout(n, combine):
    lines = [f"  %r{i} = Relu(%x) : f32[1,64]" for i in range(n)]
    values = [f"%r{i}" for i in range(n)]
    if combine == "outputs":
        types = ", ".join(["f32[1,64]"] * n)
        return (f"func @fanout(%x: f32[1,64]) -> ({types}) {{", lines,
                "  return " + ", ".join(values))
    if combine == "concat":
        lines.append(f"  %c = Concat({', '.join(values)}) {{axis = 1}} : f32[1,{64 * n}]")
        return (f"func @fanout(%x: f32[1,64]) -> f32[1,{64 * n}] {{", lines,
                "  return %c")
    count = 0
    while len(values) > 1:
        paired = []
        for j in range(0, len(values) - 1, 2):
            lines.append(f"  %s{count} = Add({values[j]}, {values[j + 1]}) : f32[1,64]")
            paired.append(f"%s{count}")
            count += 1
        values = paired + values[len(values) - len(values) % 2:]
    return "func @fanout(%x: f32[1,64]) -> f32[1,64] {", lines, f"  return {values[0]}"


def main():
    kind, n = sys.argv[1], int(sys.argv[2])
    head, lines, tail = chain(n) if kind == "chain" else fanout(n, kind)
    sys.stdout.write("\n".join([head] + lines + [tail, "}"]) + "\n")


if __name__ == "__main__":
    main()
