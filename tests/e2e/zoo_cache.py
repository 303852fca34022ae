"""What the e2e tests share: finding a zoo model in the cache, exporting it
when it is missing, and its snugc bindings."""
import argparse
import os
import subprocess
import sys

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def ensure_model(args):
    """The model directory for args.model/args.opset (or args.dir), exported
    into args.cache first when missing. None when it is missing and cannot be
    exported here (no torch or onnxruntime): the caller skips."""
    model_dir = getattr(args, "dir", None) or os.path.join(
        args.cache, f"{args.model}-opset{args.opset}")
    model = os.path.join(model_dir, "model.onnx")
    if not os.path.exists(model):
        try:
            import torch  # noqa: F401
            import onnxruntime  # noqa: F401
        except ImportError as error:
            print(f"skipped: {model} is missing and cannot be exported here ({error})")
            return None
        print(f"exporting {args.model} opset {args.opset} into {args.cache}")
        subprocess.run([sys.executable, args.export_script, "--out", args.cache,
                        "--models", args.model, "--opsets", str(args.opset)],
                       check=True)
    return model_dir


def model_parser():
    """The arguments every zoo-model e2e script takes: --model, --opset,
    --cache, --tools (snugc's directory) and --export-script."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--opset", type=int, required=True)
    parser.add_argument("--cache", required=True)
    parser.add_argument("--tools", required=True)
    parser.add_argument("--export-script")
    return parser


def bindings(model_dir):
    """The snugc flags in the export's inputs.txt (e.g. --dim batch=1)."""
    path = os.path.join(model_dir, "inputs.txt")
    return open(path).read().split() if os.path.exists(path) else []
