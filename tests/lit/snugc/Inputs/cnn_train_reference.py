"""A tiny CNN (Conv with bias, inference BatchNormalization, Relu, MaxPool,
a grouped Conv of stride 2 whose stride leaves a remainder, GlobalAveragePool,
Flatten, Gemm) written as an ONNX text model, and one SGD step of it
under an MSE loss computed by PyTorch (float64, then stored as f32): the
reference `snugc train` is checked against.

usage: cnn_train_reference.py OUT_DIR LR [eval|train] [BATCH]
Writes OUT_DIR/cnn-train.onnxtxt and, for snug-run --check OUT_DIR, x.npy,
target.npy, loss.npy and <weight>.updated.npy for every trained weight (the
BatchNormalization's running mean and variance are not trained: eval mode in
PyTorch, left out of snug's default wrt). Weights and data are fixed
functions of their index, so the test needs no random state. With `train`
the BatchNormalization uses the batch's statistics (PyTorch's training
mode, `snugc train --batchnorm=batch`); the step's loss and updated weights
do not depend on the running statistics PyTorch then also updates, which
snug updates too: bn_mean.updated.npy and bn_var.updated.npy hold them
(momentum 0.1, the unbiased batch variance)."""
import math
import os
import sys

import numpy as np
import torch

out_dir, lr = sys.argv[1], float(sys.argv[2])
mode = sys.argv[3] if len(sys.argv) > 3 else "eval"
if mode not in ("eval", "train"):
    sys.exit("the mode must be eval or train, not " + mode)
os.makedirs(out_dir, exist_ok=True)

N, C, H, M, K = 2, 2, 6, 4, 3  # batch, channels, size, filters, classes
if len(sys.argv) > 4:  # a larger batch, for gradient accumulation's tests
    N = int(sys.argv[4])


def values(shape, phase, scale=1.0, offset=0.0):
    n = int(np.prod(shape))
    v = [offset + scale * math.sin(phase + 1.7 * i) for i in range(n)]
    return np.array(v, dtype=np.float32).reshape(shape)


weights = {
    "conv_w": values((M, C, 2, 2), 0.3, 0.4),
    "conv_b": values((M,), 1.1, 0.1),
    "bn_scale": values((M,), 2.0, 0.3, 1.0),
    "bn_bias": values((M,), 0.7, 0.2),
    "bn_mean": values((M,), 1.9, 0.1),
    "bn_var": values((M,), 0.4, 0.3, 1.0),
    "conv2_w": values((M, M // 2, 3, 3), 1.4, 0.4),
    "fc_w": values((K, M), 0.9, 0.6),
    "fc_b": values((K,), 2.5, 0.1),
}
x = values((N, C, H, H), 0.1)
target = values((N, K), 1.3, 0.5)


def dims(shape):
    return " ".join("dim { dim_value: %d }" % d for d in shape)


def initializer(name, array):
    data = " ".join("float_data: %r" % float(v) for v in array.flatten())
    shape = " ".join("dims: %d" % d for d in array.shape)
    return '  initializer { name: "%s" data_type: 1 %s %s }' % (name, shape,
                                                              data)


def ints(name, vs):
    return 'attribute { name: "%s" %s type: INTS }' % (
        name, " ".join("ints: %d" % v for v in vs))


model = [
    'ir_version: 8',
    'opset_import { domain: "" version: 13 }',
    'graph {',
    '  name: "cnn_train"',
    '  node { name: "conv" op_type: "Conv" input: "x" input: "conv_w" '
    'input: "conv_b" output: "c" %s }' % ints("kernel_shape", [2, 2]),
    '  node { name: "bn" op_type: "BatchNormalization" input: "c" '
    'input: "bn_scale" input: "bn_bias" input: "bn_mean" input: "bn_var" '
    'output: "b" }',
    '  node { name: "relu" op_type: "Relu" input: "b" output: "r" }',
    '  node { name: "pool" op_type: "MaxPool" input: "r" output: "p" %s %s }'
    % (ints("kernel_shape", [2, 2]), ints("strides", [1, 1])),
    '  node { name: "conv2" op_type: "Conv" input: "p" input: "conv2_w" '
    'output: "c2" %s %s %s attribute { name: "group" i: 2 type: INT } }' % (
        ints("kernel_shape", [3, 3]), ints("strides", [2, 2]),
        ints("pads", [1, 1, 1, 1])),
    '  node { name: "gap" op_type: "GlobalAveragePool" input: "c2" '
    'output: "g" }',
    '  node { name: "flat" op_type: "Flatten" input: "g" output: "f" }',
    '  node { name: "fc" op_type: "Gemm" input: "f" input: "fc_w" '
    'input: "fc_b" output: "y" attribute { name: "transB" i: 1 type: INT } }',
]
model += [initializer(n, a) for n, a in weights.items()]
model += [
    '  input { name: "x" type { tensor_type { elem_type: 1 shape { %s } } } }'
    % dims(x.shape),
    '  output { name: "y" type { tensor_type { elem_type: 1 shape { %s } } } }'
    % dims((N, K)),
    '}',
]
with open(os.path.join(out_dir, "cnn-train.onnxtxt"), "w") as f:
    f.write("\n".join(model) + "\n")

# The same net in PyTorch, BatchNorm in eval mode (running statistics) or
# train mode (batch statistics).
torch.set_default_dtype(torch.float64)
conv = torch.nn.Conv2d(C, M, 2)
bn = torch.nn.BatchNorm2d(M, eps=1e-5)
conv2 = torch.nn.Conv2d(M, M, 3, stride=2, padding=1, groups=2, bias=False)
fc = torch.nn.Linear(M, K)
net = torch.nn.Sequential(conv, bn, torch.nn.ReLU(), torch.nn.MaxPool2d(2, 1),
                          conv2, torch.nn.AdaptiveAvgPool2d(1),
                          torch.nn.Flatten(), fc)
params = {"conv_w": conv.weight, "conv_b": conv.bias, "bn_scale": bn.weight,
          "bn_bias": bn.bias, "conv2_w": conv2.weight, "fc_w": fc.weight,
          "fc_b": fc.bias}
with torch.no_grad():
    for name, p in params.items():
        p.copy_(torch.from_numpy(weights[name].astype(np.float64)))
    bn.running_mean.copy_(torch.from_numpy(weights["bn_mean"]))
    bn.running_var.copy_(torch.from_numpy(weights["bn_var"]))
net.train(mode == "train")
optimizer = torch.optim.SGD(net.parameters(), lr=lr)
optimizer.zero_grad()
loss = torch.nn.functional.mse_loss(
    net(torch.from_numpy(x.astype(np.float64))),
    torch.from_numpy(target.astype(np.float64)))
loss.backward()
optimizer.step()

np.save(os.path.join(out_dir, "x.npy"), x)
np.save(os.path.join(out_dir, "target.npy"), target)
np.save(os.path.join(out_dir, "loss.npy"), np.array(loss.item(), np.float32))
for name, p in params.items():
    np.save(os.path.join(out_dir, name + ".updated.npy"),
            p.detach().numpy().astype(np.float32))
if mode == "train":
    for name, stat in (("bn_mean", bn.running_mean), ("bn_var", bn.running_var)):
        np.save(os.path.join(out_dir, name + ".updated.npy"),
                stat.numpy().astype(np.float32))
print("loss %.6f" % loss.item())
