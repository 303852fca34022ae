#!/usr/bin/env python3
"""deep_attribute.py LEVELS: prints a textual-IR module whose one attribute
nests lists LEVELS deep (issue 12: the parser must refuse it, not overflow
its stack)."""
import sys

levels = int(sys.argv[1])
print("func @deep(%x: f32[2]) -> f32[2] {")
print("  %0 = Relu(%x) {a = " + "[" * levels + "]" * levels + "} : f32[2]")
print("  return %0")
print("}")
