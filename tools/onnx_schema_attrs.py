#!/usr/bin/env python3
"""onnx_schema_attrs.py [--check FILE]: writes compiler/onnx/OnnxSchemaAttrs.def,
the attributes of the ONNX schemas (onnx.defs.get_schema(op, opset)) of every
op of the default domain that snug imports, over every opset the importer
accepts, to stdout; with --check, compares them with FILE instead and exits 1
on any difference (the ctest onnx-schema-attrs).

What snug imports is read from the sources, so that the table cannot miss an
op: the ONNX names of core/Ops.def's OP lines (snug's own ops, `snug.*`, are
not ONNX ops), of compiler/onnx/OnnxAttrs.def's ONNX_ATTR lines (ONNX ops the table does not hold,
like Upsample or Trilu) and of the importer's registrations (`map["Op"] =`
in compiler/onnx/*.cpp: compositions without attributes, like
MatMulInteger); the opset range from kMinOnnxOpset and
kMaxOnnxOpset in compiler/onnx/OnnxImporter.h. An op with no schema in that
range is an error (a misspelt ONNX_ATTR op), except in an older onnx's
--check, which leaves out the ops newer than its opsets (RMSNormalization,
opset 23, for the venv's onnx 1.16). The output depends only on
those sources and the onnx version: ops and attributes are sorted by name.

The table covers opsets newer than the project's venv's onnx (pinned in
tools/requirements.txt for onnxruntime's sake) knows, so it is generated
with a newer onnx in a venv of its own (a dev tool; the table is
committed):
    python3 -m venv /tmp/onnx122 && /tmp/onnx122/bin/pip install onnx==1.22.0
    /tmp/onnx122/bin/python tools/onnx_schema_attrs.py > compiler/onnx/OnnxSchemaAttrs.def
With an onnx that knows every opset of the range, --check compares the text;
with an older one (the venv's, as the ctest runs it) it compares what that
onnx knows: every op, attribute and type at the opsets it has, the table's
lines clipped to them, so the older half of the table still cannot drift.
"""
import argparse
import difflib
import os
import re
import sys

import onnx
import onnx.defs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPS_DEF = os.path.join(ROOT, "core", "Ops.def")
ONNX_ATTRS_DEF = os.path.join(ROOT, "compiler", "onnx", "OnnxAttrs.def")
IMPORTER_H = os.path.join(ROOT, "compiler", "onnx", "OnnxImporter.h")
IMPORTER_DIR = os.path.join(ROOT, "compiler", "onnx")
OUTPUT = "compiler/onnx/OnnxSchemaAttrs.def"


def imported_ops():
    with open(OPS_DEF) as f:
        text = f.read()
    table = re.findall(r'^\s*OP\(\s*\w+\s*,\s*"([^"]+)"', text, re.M)
    with open(ONNX_ATTRS_DEF) as f:
        onnx_attr = re.findall(r'^\s*ONNX_ATTR\(\s*"([^"]+)"', f.read(),
                               re.M)
    if not table:
        sys.exit(f"{OPS_DEF}: no OP lines found")
    # Ops with an importer of their own but neither a table row nor an
    # attribute (MatMulInteger, a composition): their registration line.
    registered = []
    for name in sorted(os.listdir(IMPORTER_DIR)):
        if name.endswith(".cpp"):
            with open(os.path.join(IMPORTER_DIR, name)) as f:
                registered += re.findall(r'^\s*map\["([^"]+)"\]\s*=', f.read(),
                                         re.M)
    return sorted({name for name in table + onnx_attr + registered
                   if not name.startswith("snug.")})


def opset_range():
    with open(IMPORTER_H) as f:
        text = f.read()
    found = []
    for name in ("kMinOnnxOpset", "kMaxOnnxOpset"):
        match = re.search(name + r"\s*=\s*(\d+)", text)
        if not match:
            sys.exit(f"{IMPORTER_H}: no {name} = N")
        found.append(int(match.group(1)))
    return found[0], found[1]


def schema_at(op, opset):
    try:
        return onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError:
        return None


def signature(schema):
    """What a node of `schema` may carry and how it is read: its inputs and
    outputs (name, single/optional/variadic) and its attributes (type,
    required, default), `consumed_inputs` aside (opsets 1-5's in-place
    hint, with no effect on the result)."""
    def params(formals):
        return [(p.name, int(p.option)) for p in formals]
    attrs = {name: (a.type.name, a.required, a.default_value.SerializeToString())
             for name, a in schema.attributes.items()
             if name != "consumed_inputs"}
    return params(schema.inputs), params(schema.outputs), attrs


def legacy_first(op, first):
    """The oldest opset from which `op`'s schemas, up to first - 1, read as
    its schema at `first` does (first itself when the one before does not)."""
    modern = schema_at(op, first)
    v = first
    while v > 1:
        older = schema_at(op, v - 1)
        if older is None or signature(older) != signature(modern):
            break
        v -= 1
    return v


def ranges(opsets):
    """[7, 8, 9, 13] -> [(7, 9), (13, 13)]."""
    spans = []
    for v in opsets:
        if spans and spans[-1][1] == v - 1:
            spans[-1] = (spans[-1][0], v)
        else:
            spans.append((v, v))
    return spans


def generate(first, last, newer_ops_allowed=False):
    """The table's text. With newer_ops_allowed (an older onnx's check), an
    op with no schema up to `last` is left out rather than an error: it came
    in a later opset, which that onnx cannot check."""
    out = []
    emit = out.append
    emit("//===- OnnxSchemaAttrs.def - ONNX schemas' attributes by opset -*- C++ -*-===//")
    emit("//")
    emit(f"// GENERATED by tools/onnx_schema_attrs.py from the schemas of onnx {onnx.__version__}")
    emit("// (onnx.defs.get_schema(op, opset) for the default domain); do not edit.")
    emit("// Regenerate with")
    emit(f"//   <python with onnx {onnx.__version__}> tools/onnx_schema_attrs.py > {OUTPUT}")
    emit("// (the script's docstring says how to get one beside the project's venv).")
    emit("// The unit test onnx-schema-attrs fails when this file is not what the")
    emit("// script writes.")
    emit("//")
    emit("// Every ONNX op snug imports (the ONNX names of core/Ops.def's OP lines,")
    emit("// OnnxAttrs.def's ONNX_ATTR lines and the importer's registrations), over the")
    emit("// opsets the importer accepts:")
    emit("//   ONNX_SCHEMA_OPSETS(first, last)  the importer's range")
    emit("//   ONNX_SCHEMA_OP(\"Op\", since)      Op has a schema at every opset from")
    emit("//                                    `since` to `last` (none before)")
    emit("//   ONNX_SCHEMA_ATTR(\"Op\", \"name\", TYPE, first, last)")
    emit("//       Op's schema at opsets first..last defines attribute `name`, of")
    emit("//       AttributeProto type TYPE (an attribute that comes, goes and")
    emit("//       comes back has a line per range)")
    emit("//   ONNX_SCHEMA_LEGACY(\"Op\", first)  Op's schemas at opsets first to")
    emit("//       first-1 of the range have the inputs, outputs and attributes")
    emit("//       (name, type, required, default) of its schema at the range's")
    emit("//       first opset, `consumed_inputs` (a legacy in-place hint) aside:")
    emit("//       a model of such an opset is read as the range's first when all")
    emit("//       its ops have this line (none has it for an op that changed)")
    emit("// A deprecated schema still counts (the importer decides what it imports);")
    emit("// its line says from which opset.")
    emit("//")
    emit("//===----------------------------------------------------------------------===//")
    emit("#ifndef ONNX_SCHEMA_OPSETS")
    emit("#define ONNX_SCHEMA_OPSETS(FIRST, LAST)")
    emit("#endif")
    emit("#ifndef ONNX_SCHEMA_OP")
    emit("#define ONNX_SCHEMA_OP(OP, SINCE)")
    emit("#endif")
    emit("#ifndef ONNX_SCHEMA_ATTR")
    emit("#define ONNX_SCHEMA_ATTR(OP, NAME, TYPE, FIRST, LAST)")
    emit("#endif")
    emit("#ifndef ONNX_SCHEMA_LEGACY")
    emit("#define ONNX_SCHEMA_LEGACY(OP, FIRST)")
    emit("#endif")
    emit("")
    emit(f"ONNX_SCHEMA_OPSETS({first}, {last})")
    missing = []
    for op in imported_ops():
        schemas = {v: schema_at(op, v) for v in range(first, last + 1)}
        present = [v for v, s in schemas.items() if s is not None]
        if not present:
            if not newer_ops_allowed:
                missing.append(op)
            continue
        # get_schema returns the newest schema at or before the opset, so once
        # an op exists it exists in every later opset.
        assert present == list(range(present[0], last + 1)), op
        deprecated = [v for v in present if schemas[v].deprecated]
        note = f"  // deprecated from opset {deprecated[0]}" if deprecated else ""
        emit("")
        emit(f'ONNX_SCHEMA_OP("{op}", {present[0]}){note}')
        legacy = legacy_first(op, first)
        if present[0] == first and legacy < first:
            emit(f'ONNX_SCHEMA_LEGACY("{op}", {legacy})')
        where = {}
        for v in present:
            for name, attr in schemas[v].attributes.items():
                where.setdefault((name, attr.type.name), []).append(v)
        for (name, kind), opsets in sorted(where.items()):
            for lo, hi in ranges(opsets):
                emit(f'ONNX_SCHEMA_ATTR("{op}", "{name}", {kind}, {lo}, {hi})')
    if missing:
        sys.exit(f"{OPS_DEF}: no ONNX schema of the default domain at opsets "
                 f"{first} to {last} for: {', '.join(missing)}")
    emit("")
    emit("#undef ONNX_SCHEMA_OPSETS")
    emit("#undef ONNX_SCHEMA_OP")
    emit("#undef ONNX_SCHEMA_ATTR")
    emit("#undef ONNX_SCHEMA_LEGACY")
    return "\n".join(out) + "\n"


LINE = re.compile(r'^ONNX_SCHEMA_(OPSETS|OP|ATTR|LEGACY)\((.*)\)(?:\s*//.*)?$')


def clipped(text, limit):
    """The table's lines as a set, restricted to opsets up to `limit`: what
    an onnx that knows only those opsets can check. A deprecation note is
    dropped (it may name a later opset)."""
    lines = set()
    for line in text.splitlines():
        match = LINE.match(line)
        if not match:
            continue
        kind = match.group(1)
        fields = [f.strip() for f in match.group(2).split(",")]
        if kind == "OPSETS":
            lines.add(("OPSETS", fields[0], min(int(fields[1]), limit)))
        elif kind == "OP":
            if int(fields[1]) <= limit:
                lines.add(("OP", fields[0], int(fields[1])))
        elif kind == "LEGACY":
            lines.add(("LEGACY", fields[0], int(fields[1])))
        elif int(fields[3]) <= limit:
            lines.add(("ATTR", fields[0], fields[1], fields[2],
                       int(fields[3]), min(int(fields[4]), limit)))
    return lines


def check(path, first, last):
    with open(path) as f:
        current = f.read()
    known = onnx.defs.onnx_opset_version()
    if known >= last:
        text = generate(first, last)
        if current == text:
            print(f"{path}: up to date (onnx {onnx.__version__})")
            return 0
        sys.stdout.writelines(difflib.unified_diff(
            current.splitlines(True), text.splitlines(True),
            path, "tools/onnx_schema_attrs.py"))
    else:
        have = clipped(current, known)
        want = clipped(generate(first, known, newer_ops_allowed=True), known)
        if have == want:
            print(f"{path}: up to date at opsets {first} to {known} (onnx "
                  f"{onnx.__version__} knows no later one; the table goes "
                  f"to {last})")
            return 0
        for line in sorted(want - have, key=str):
            print(f"missing from {path}: {line}")
        for line in sorted(have - want, key=str):
            print(f"not in onnx {onnx.__version__}'s schemas: {line}")
    print(f"{path}: out of date; regenerate it as tools/onnx_schema_attrs.py's "
          f"docstring says")
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", metavar="FILE",
                        help="compare with FILE; exit 1 when it differs")
    args = parser.parse_args()
    first, last = opset_range()
    if args.check:
        return check(args.check, first, last)
    if onnx.defs.onnx_opset_version() < last:
        sys.exit(f"onnx {onnx.__version__} knows opsets up to "
                 f"{onnx.defs.onnx_opset_version()}, the importer takes {last}: "
                 f"generate with a newer onnx (see the docstring)")
    sys.stdout.write(generate(first, last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
