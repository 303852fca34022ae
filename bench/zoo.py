"""What the benchmark scripts share: the zoo manifest's rows, snugc's JSON
memory report of one model, and where the tables' JSON goes."""

import argparse
import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def zoo_manifest():
    """models/zoo.json's entries."""
    with open(os.path.join(REPO, "models", "zoo.json")) as f:
        return json.load(f)["models"]


def zoo_opset(name):
    """The opset the benchmarks read zoo model `name` at: the newest it is
    exported at (17, or a trained model's own)."""
    for entry in zoo_manifest():
        if entry["name"] == name:
            return entry["opsets"][-1]
    return 17


def zoo_dir(cache, name):
    """Zoo model `name`'s export directory in cache, at zoo_opset."""
    return os.path.join(cache, f"{name}-opset{zoo_opset(name)}")


def zoo_model(cache, name):
    """The exported model.onnx of zoo model `name` in cache, or None."""
    for directory in (zoo_dir(cache, name),
                      os.path.join(cache, f"{name}-opset13")):
        path = os.path.join(directory, "model.onnx")
        if os.path.exists(path):
            return path
    return None


def zoo_rows():
    """(label, model name, cache dir, bindings) for every model and binding
    in the manifest, models/zoo.json."""
    rows = []
    for entry in zoo_manifest():
        for bindings in entry["bench"]:
            label = entry["name"]
            if len(entry["bench"]) > 1:
                label += " " + " ".join(b for b in bindings if not b.startswith("--"))
            rows.append((label, entry["name"],
                         f"{entry['name']}-opset{entry['opsets'][-1]}", bindings))
    return rows


def zoo_names(chosen=()):
    """`chosen` when given (a benchmark's model arguments), else the name of
    every model in the manifest, models/zoo.json, in its order."""
    if chosen:
        return list(chosen)
    return [entry["name"] for entry in zoo_manifest()]


def snugc_plan(build, model_dir, bindings, extra=()):
    """`snugc plan`'s JSON memory report of model_dir/model.onnx."""
    command = [os.path.join(build, "bin", "snugc"), "plan",
               os.path.join(model_dir, "model.onnx"), "--memory-report=json"]
    command += list(bindings) + list(extra)
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{result.stderr}")
    return json.loads(result.stdout)


def write_results(out, name, rows):
    """The table's rows as out/name (JSON), beside the printed table."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, name), "w") as f:
        json.dump(rows, f, indent=2)


def bench_arguments():
    """The options every benchmark takes: --build (snug's build tree),
    --cache (the exported zoo) and --out (where the JSON goes)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--cache", default=os.environ.get(
        "SNUG_MODEL_CACHE", os.path.join(REPO, ".cache", "models")))
    parser.add_argument("--out", default=os.path.join(REPO, "bench", "results"))
    return parser
