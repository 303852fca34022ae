#!/usr/bin/env python3
"""Seeds and dictionary for snug-fuzz-flags (tests/fuzz/SnugcFlagsFuzzer.cpp).

Every snugc command line of the lit tests becomes one seed: its arguments,
one per line, with each path replaced by a name in the fuzzer's scratch
directory. A file the test reads (a model, a .npy) is copied into MODELS
under that name; a path the test would create (%t/...) keeps only its base
name, and a model it would generate becomes model.onnx (the demo model).
The dictionary holds every flag of every subcommand (from `snugc SUB
--help-hidden`), each enumerated value, and numbers and sizes at the edges.

usage: flags_seeds.py SNUGC LIT_DIR CORPUS MODELS DICT
"""
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

SUBCOMMANDS = ["compile", "train", "plan", "plan-buffers"]
EDGE_VALUES = ["0", "1", "-1", "2", "3", "7", "4096", "65536", "2147483648",
               "1099511627776", "9223372036854775807", "18446744073709551615",
               "1e30", "nan", "inf", "-0", "0.5", "", "1KiB", "1MiB", "64MiB",
               "1GiB", "80GB", "batch=2", "batch=1024", "x:1x3x8x8",
               "mse:y,target", "cross-entropy:y,target", "fp16", "bf16",
               "tf32", "fp32", "host", "cuda", "sm_80", "sm_90", "Gemm",
               "Conv", "MatMul", "Relu", "Softmax", "model.onnx", "out.snug"]
PATH = re.compile(r"(%tests|%[sStT]|/)[^\s,=:@'\"]*")


def resolve(token, test):
    """The file a lit path names (None when the test creates it)."""
    text = (token.replace("%tests", str(LIT.parent))
            .replace("%S", str(test.parent)).replace("%s", str(test)))
    if "%t" in text or "%T" in text:
        return None
    path = pathlib.Path(text)
    return path if path.is_file() else None


def local_name(match, test, models):
    """The scratch directory's name for one path of a RUN line."""
    source = resolve(match.group(0), test)
    base = pathlib.PurePosixPath(match.group(0)).name or "out"
    if source is None:
        return "model.onnx" if base.endswith((".onnx", ".onnxtxt")) else base
    name = base
    target = models / name
    if target.exists() and target.read_bytes() != source.read_bytes():
        name = f"{test.stem}-{base}"
        target = models / name
    shutil.copyfile(source, target)
    return name


def seeds(lit, models):
    for test in sorted(lit.rglob("*")):
        if not test.is_file() or test.suffix not in (".ir", ".test", ".onnxtxt",
                                                     ".txt", ".py", ".sh"):
            continue
        for line in test.read_text(errors="replace").splitlines():
            command = line.partition("RUN:")[2]
            if " snugc " not in f" {command} ":
                continue
            command = command.split("|")[0].split(" snugc ", 1)[-1]
            command = command.removeprefix("snugc ")
            try:
                words = shlex.split(command)
            except ValueError:
                continue
            args = []
            for word in words:
                if word.startswith(("2>", ">", "<", "&&")) or word in ("2>&1",):
                    break
                args.append(PATH.sub(lambda m: local_name(m, test, models),
                                     word))
            if args and args[0] in SUBCOMMANDS:
                yield args


def dictionary(snugc):
    entries = set(f"\n--{v}" for v in ("o=out.snug",))
    for sub in SUBCOMMANDS:
        text = subprocess.run([snugc, sub, "--help-hidden"], text=True,
                              capture_output=True).stdout
        for line in text.splitlines():
            flag = re.match(r"\s+(--?[\w-]+)(=?)", line)
            value = re.match(r"\s+=([\w.-]+)\s+-", line)
            if flag and not flag.group(1).lstrip("-").startswith("help"):
                entries.add(flag.group(1) + flag.group(2))
                entries.add("\n" + flag.group(1) + flag.group(2))
            if value:
                entries.add(value.group(1))
        entries.add(sub + "\n")
    entries.update(v for v in EDGE_VALUES if v)
    return sorted(entries)


def main():
    global LIT
    snugc, LIT, corpus, models, dict_path = sys.argv[1:6]
    LIT, corpus, models = map(pathlib.Path, (LIT, corpus, models))
    models.mkdir(parents=True, exist_ok=True)
    corpus.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(LIT.parent.parent / "models/default/model.onnx",
                    models / "model.onnx")
    count = 0
    for count, args in enumerate(seeds(LIT, models), 1):
        (corpus / f"lit-{count:04d}").write_text("\n".join(args) + "\n")
    with open(dict_path, "w") as out:
        for entry in dictionary(snugc):
            escaped = entry.replace("\\", "\\\\").replace('"', '\\"')
            out.write('"' + escaped.replace("\n", "\\x0A") + '"\n')
    print(f"flags seeds: {count} command lines, "
          f"{len(list(models.iterdir()))} model files")


if __name__ == "__main__":
    main()
