"""The initializers of a textual ONNX model (the .onnxtxt files of these
tests): {name: (dims, float_data)}, shared by the training references."""
import re


def read_initializers(model_path):
    weights = {}
    with open(model_path) as f:
        for line in f:
            m = re.search(r'initializer \{ name: "(\w+)"(.*)\}', line)
            if m:
                dims = [int(d) for d in re.findall(r"dims: (\d+)", m.group(2))]
                data = [float(v) for v in
                        re.findall(r"float_data: ([-0-9.e]+)", m.group(2))]
                weights[m.group(1)] = (dims, data)
    return weights
