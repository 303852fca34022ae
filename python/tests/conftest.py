"""What the snug package's tests share: the zoo (exported into the cache
when missing, as the e2e tier does), the snugc to compare against, and
small ONNX models built with onnx.helper."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

ZOO_ENTRIES = json.load(open(os.path.join(ROOT, "models", "zoo.json")))["models"]
ZOO_MODELS = [m["name"] for m in ZOO_ENTRIES]
# Every model at the opsets the manifest exports it at.
ZOO = [f"{m['name']}-opset{opset}" for m in ZOO_ENTRIES for opset in m["opsets"]]
MODEL_CACHE = os.environ.get("SNUG_MODEL_CACHE",
                             os.path.join(ROOT, ".cache", "models"))


def snugc_path():
    tools = os.environ.get("SNUG_TOOLS_DIR", os.path.join(ROOT, "build", "bin"))
    return os.path.join(tools, "snugc")


@pytest.fixture(scope="session")
def snugc():
    path = snugc_path()
    if not os.access(path, os.X_OK):
        pytest.skip(f"no snugc at {path} (set SNUG_TOOLS_DIR)")
    return path


def cli_report(snugc, model, *flags):
    """`snugc plan MODEL FLAGS --memory-report=json` as a dict."""
    result = subprocess.run([snugc, "plan", model, *flags,
                             "--memory-report=json"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def zoo_model(name):
    """The directory of zoo model NAME-opsetN, exported when missing."""
    from zoo_cache import ensure_model

    model, opset = name.rsplit("-opset", 1)

    class Args:
        dir = None
        cache = MODEL_CACHE
        export_script = os.path.join(ROOT, "models", "export_models.py")
    Args.model, Args.opset = model, int(opset)
    directory = ensure_model(Args)
    if directory is None:
        pytest.skip(f"{name} is missing and cannot be exported here")
    return directory


def zoo_dims(directory):
    """{"batch": 1} from the export's inputs.txt (--dim batch=1)."""
    from zoo_cache import bindings

    flags = bindings(directory)
    dims = {}
    for flag, value in zip(flags[::2], flags[1::2]):
        assert flag == "--dim", flags
        symbol, size = value.split("=")
        dims[symbol] = int(size)
    return dims, flags
