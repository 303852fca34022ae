"""einsum_topk_check.py DIR [--cudasim TESTS]: Einsum and TopK against
numpy, beyond the few forms the onnx node tests hold (einsum-topk-values.test).

Writes two models (one node per case, so each is one compile): DIR/einsum.onnx
(diagonals, ellipsis broadcasting, implicit outputs, three-operand chains,
outer and elementwise products, a scalar, integers) and DIR/topk.onnx (both
orders, inner and outer axes, lines longer than a block, ties, NaN, inf and
-0.0, f16 and integers, k = n), with random inputs (seed 0) as .npy files.
Runs each on the host executor (snug-run) and, with --cudasim, on the CUDA
simulator (the kernels the CUDA backend emits; TESTS is the tests/ folder),
snug's tools found on PATH, and compares every output
with numpy: Einsum to 1e-5 relative (the sums' order differs), TopK exactly,
values and indices. The TopK reference is onnx's (a stable lexsort: equal
values by increasing index, NaN above every number). Prints one 'ok:' or
'FAIL:' line per output and backend; exits 1 when one fails."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, TensorProto

rng = np.random.default_rng(0)
DTYPES = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE,
          np.float16: TensorProto.FLOAT16, np.int64: TensorProto.INT64,
          np.int32: TensorProto.INT32}

EINSUM = [  # equation, operand shapes, dtype
    ("ij,jk->ik", [(2, 3), (3, 4)], np.float32),
    ("bij, bjk -> bik", [(2, 3, 4), (2, 4, 5)], np.float64),
    ("ii->i", [(4, 4)], np.float32),
    ("ii", [(4, 4)], np.float32),
    ("...ii->...i", [(2, 3, 3)], np.float64),
    ("iji->j", [(3, 4, 3)], np.float32),
    ("iij,jk->ik", [(3, 3, 4), (4, 2)], np.float32),
    ("i,j", [(3,), (4,)], np.float32),
    ("i,i", [(5,), (5,)], np.float32),
    ("ij,ij->ij", [(3, 4), (3, 4)], np.float32),
    ("...ij,...jk", [(2, 1, 3, 4), (6, 4, 2)], np.float32),
    ("i...,i...", [(2, 3), (2, 3)], np.float32),
    ("ij,j", [(3, 4), (1,)], np.float32),
    ("ij->", [(3, 4)], np.float32),
    ("ijk->kji", [(2, 3, 4)], np.float32),
    ("bA", [(2, 3)], np.float32),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)], np.float32),
    ("a,b,c", [(2,), (3,), (4,)], np.float32),
    ("bij,bjk,bkl->bli", [(2, 2, 3), (2, 3, 4), (2, 4, 2)], np.float32),
    ("ij,jk->ik", [(3, 4), (4, 2)], np.int64),
    ("->", [()], np.float32),
    (",i->i", [(), (3,)], np.float32),
    ("bi,bi->b", [(4, 5), (4, 5)], np.float32),
    ("iii->i", [(3, 3, 3)], np.float32),
    ("ij->...ij", [(2, 3)], np.float32),
    ("ij->ij", [(2, 3)], np.float32),
]

SPECIAL = np.array([np.nan, 1.0, -0.0, np.inf, 0.0, -np.inf, 1.0, np.nan,
                    -2.0, 0.0], np.float32)
TOPK = [  # data, axis, k, largest
    (rng.standard_normal((3, 4)).astype(np.float32), 1, 2, 1),
    (rng.standard_normal((3, 4)).astype(np.float32), -1, 3, 0),
    (rng.standard_normal((5, 3, 2)).astype(np.float32), 0, 2, 1),
    (rng.standard_normal((2, 300)).astype(np.float32), 1, 7, 1),
    (rng.standard_normal((4, 1000)).astype(np.float32), 1, 1, 0),
    (rng.integers(0, 4, (3, 9)).astype(np.int64), 1, 9, 1),
    (rng.integers(-3, 3, (2, 40)).astype(np.int32), 1, 40, 0),
    (SPECIAL.reshape(1, 10), 1, 10, 1),
    (SPECIAL.reshape(1, 10), 1, 10, 0),
    (rng.standard_normal((2, 5, 3)).astype(np.float16), 1, 4, 1),
    (rng.standard_normal((1, 600)).astype(np.float64), 1, 600, 0),
]


def topk_reference(x, axis, k, largest):
    """onnx's reference: a lexsort by value then index (the index negated
    for largest, then the order flipped)."""
    index = np.indices(x.shape)[axis]
    order = np.lexsort((-index if largest else index, x), axis=axis)
    if largest:
        order = np.flip(order, axis=axis)
    order = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, order, axis=axis), order.astype(np.int64)


def einsum_model(directory):
    nodes, inputs, outputs, feeds, expected = [], [], [], {}, {}
    for c, (equation, shapes, dtype) in enumerate(EINSUM):
        names = []
        for j, shape in enumerate(shapes):
            name = f"e{c}_{j}"
            if np.issubdtype(dtype, np.integer):
                value = rng.integers(-5, 5, shape).astype(dtype)
            else:
                value = np.asarray(rng.standard_normal(shape), dtype)
            feeds[name] = value
            names.append(name)
            inputs.append(helper.make_tensor_value_info(name, DTYPES[dtype],
                                                        list(shape)))
        out = f"e{c}_out"
        nodes.append(helper.make_node("Einsum", names, [out], name=f"e{c}",
                                      equation=equation))
        outputs.append(helper.make_tensor_value_info(out, DTYPES[dtype], None))
        expected[out] = (equation, np.einsum(equation.replace(" ", ""),
                                             *[feeds[n] for n in names]))
    graph = helper.make_graph(nodes, "einsum", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    return model, feeds, expected


def topk_model(directory):
    nodes, inputs, outputs, inits, feeds, expected = [], [], [], [], {}, {}
    for c, (x, axis, k, largest) in enumerate(TOPK):
        name = f"t{c}_x"
        feeds[name] = x
        inputs.append(helper.make_tensor_value_info(name, DTYPES[x.dtype.type],
                                                    list(x.shape)))
        inits.append(helper.make_tensor(f"t{c}_k", TensorProto.INT64, [1], [k]))
        values, indices = f"t{c}_values", f"t{c}_indices"
        nodes.append(helper.make_node("TopK", [name, f"t{c}_k"],
                                      [values, indices], name=f"t{c}",
                                      axis=axis, largest=largest))
        outputs += [helper.make_tensor_value_info(values, DTYPES[x.dtype.type], None),
                    helper.make_tensor_value_info(indices, TensorProto.INT64, None)]
        ref_values, ref_indices = topk_reference(x, axis, k, largest)
        what = f"TopK {x.dtype}{list(x.shape)} axis {axis} k {k} largest {largest}"
        expected[values] = (what + " values", ref_values)
        expected[indices] = (what + " indices", ref_indices)
    graph = helper.make_graph(nodes, "topk", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    return model, feeds, expected


def matches(got, want, exact):
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    if exact:
        return np.array_equal(got, want, equal_nan=True) and np.array_equal(
            np.signbit(got), np.signbit(want))
    return np.allclose(got, want, rtol=1e-5, atol=1e-6)


def run(cmd):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if done.returncode != 0:
        print("FAIL: " + " ".join(cmd) + "\n" + done.stdout)
        sys.exit(1)


def main():
    directory = sys.argv[1]
    tests = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--cudasim" else None
    failed = False
    for kind, build in (("einsum", einsum_model), ("topk", topk_model)):
        model, feeds, expected = build(directory)
        path = os.path.join(directory, kind + ".onnx")
        onnx.save(model, path)
        flags = []
        for name, value in feeds.items():
            np.save(os.path.join(directory, name + ".npy"), value)
            flags += ["--input", f"{name}=@" + os.path.join(directory, name + ".npy")]
        for backend in ["host"] + (["cudasim"] if tests else []):
            out = os.path.join(directory, f"{kind}-{backend}")
            bundle = out + ".snug"
            if backend == "host":
                run(["snugc", "compile", path, "-o", bundle,
                     "--target=host", "--memory-report=none"])
                run(["snug-run", bundle, "--device", "host",
                     "--output-dir", out] + flags)
            else:
                run(["snugc", "compile", path, "-o", bundle,
                     "--target=cuda", "--dump-cuda", out + "-cu",
                     "--memory-report=none"])
                run(["sh", os.path.join(tests, "cudasim", "compile_kernels.sh"),
                     os.path.join(out + "-cu", kind + ".cu"), out + ".so"])
                run(["snug-cudasim", bundle, "--kernels",
                     out + ".so", "--output-dir", out] + flags)
            for name, (what, want) in expected.items():
                got = np.load(os.path.join(out, name + ".npy"))
                ok = matches(got, want, kind == "topk")
                failed |= not ok
                print(("ok: " if ok else "FAIL: ") + f"{backend} {what}" +
                      ("" if ok else f"\n  got {got.tolist()}\n  want {want.tolist()}"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
