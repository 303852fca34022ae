"""control_flow_check.py DIR [--cudasim TESTS [--fake-cuda LIBDIR]]: Loop and
Scan, unrolled at
import (compiler/onnx/OnnxControlFlow.cpp), against onnxruntime, in the
forms the onnx node tests leave out (control-flow.test).

Writes one model per case to DIR/CASE.onnx with random inputs (seed 0) as
.npy files, compiles it with snugc, runs it on the host executor (snug-run)
and, with --cudasim, on the CUDA simulator (TESTS is the tests/ folder)
and, with --fake-cuda, through CudaExecutor on the strict fake driver
(tests/unit/FakeCuda; LIBDIR holds its libcuda.so.1) with the simulator's
bundle and kernels (snug-run --device cuda: an eager run, then a timed
one), snug's tools found on PATH, and
compares every output with onnxruntime's to 1e-5 relative. Prints one
'ok:' or 'FAIL:' line per case and backend, and for the fake driver what
snug-run said of CUDA graphs; exits 1 when one fails.

Also writes the models snugc must refuse, to DIR/refused/CASE.onnx, for the
lit test to check the errors of."""
import argparse
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper

rng = np.random.default_rng(0)
F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def info(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def const(name, value, dtype=F, raw=False):
    value = np.asarray(value)
    return helper.make_node(
        "Constant", [], [name], name=name,
        value=helper.make_tensor(name + "_t", dtype, list(value.shape),
                                 value.flatten().tolist() if not raw else
                                 value.astype(onnx.helper.tensor_dtype_to_np_dtype(dtype)).tobytes(),
                                 raw=raw))


def model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def loop_trip():
    """M = 4 from an initializer: two carried values (y and a running sum
    of the iteration numbers), one scan output; the body reads the outer x,
    an initializer of its own (one weight for every iteration) and a
    Constant with raw bytes (read again in each iteration)."""
    body = helper.make_graph(
        [const("half", np.float32(0.5), raw=True),
         helper.make_node("Mul", ["y_in", "half"], ["scaled"]),
         helper.make_node("Add", ["scaled", "x"], ["shifted"]),
         helper.make_node("Mul", ["shifted", "w"], ["y_out"]),
         helper.make_node("Cast", ["i"], ["i_f"], to=F),
         helper.make_node("Add", ["s_in", "i_f"], ["s_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Sub", ["y_out", "s_out"], ["scan"])],
        "body",
        [info("i", I64, []), info("c_in", B, []), info("y_in", F, [3]),
         info("s_in", F, [])],
        [info("c_out", B, []), info("y_out", F, [3]), info("s_out", F, []),
         info("scan", F, [3])],
        [helper.make_tensor("w", F, [3], [1.0, -2.0, 0.25])])
    nodes = [helper.make_node("Loop", ["M", "", "y0", "s0"],
                              ["y", "s", "ys"], name="loop_trip", body=body)]
    inits = [helper.make_tensor("M", I64, [], [4]),
             helper.make_tensor("s0", F, [], [0.0])]
    return (model(nodes, [info("x", F, [3]), info("y0", F, [3])],
                  [info("y", F, [3]), info("s", F, []),
                   info("ys", F, [4, 3])], inits),
            {"x": rng.standard_normal(3).astype(np.float32),
             "y0": rng.standard_normal(3).astype(np.float32)})


def loop_condition():
    """No trip count: the body's condition, Less(i, 2) computed from the
    iteration number, stops it after three iterations; a nested If on the
    iteration number takes then_branch in the first only."""
    then_g = helper.make_graph([helper.make_node("Neg", ["v_in"], ["t_out"])],
                               "then", [], [info("t_out", F, [2, 2])])
    else_g = helper.make_graph([helper.make_node("Exp", ["v_in"], ["e_out"])],
                               "else", [], [info("e_out", F, [2, 2])])
    body = helper.make_graph(
        [const("two", 2, I64), const("zero", 0, I64),
         helper.make_node("Less", ["i", "two"], ["c_out"]),
         helper.make_node("Equal", ["i", "zero"], ["first"]),
         helper.make_node("If", ["first"], ["picked"], name="first_only",
                          then_branch=then_g, else_branch=else_g),
         helper.make_node("MatMul", ["picked", "a"], ["v_out"])],
        "body",
        [info("i", I64, []), info("c_in", B, []), info("v_in", F, [2, 2])],
        [info("c_out", B, []), info("v_out", F, [2, 2])])
    nodes = [helper.make_node("Loop", ["", "go", "v0"], ["v"],
                              name="loop_condition", body=body)]
    return (model(nodes, [info("a", F, [2, 2]), info("v0", F, [2, 2])],
                  [info("v", F, [2, 2])],
                  [helper.make_tensor("go", B, [], [True])]),
            {"a": (0.5 * rng.standard_normal((2, 2))).astype(np.float32),
             "v0": rng.standard_normal((2, 2)).astype(np.float32)})


def loop_nested():
    """A Loop in a Loop's body (3 x 2 iterations): the inner body's names
    are defined once per inner iteration of each outer one."""
    inner = helper.make_graph(
        [helper.make_node("Identity", ["ci"], ["co"]),
         helper.make_node("Cast", ["j"], ["j_f"], to=F),
         helper.make_node("Add", ["u_in", "j_f"], ["u_sum"]),
         helper.make_node("Mul", ["u_sum", "x"], ["u_out"])],
        "inner", [info("j", I64, []), info("ci", B, []), info("u_in", F, [4])],
        [info("co", B, []), info("u_out", F, [4])])
    outer = helper.make_graph(
        [const("two", 2, I64), const("yes", True, B),
         helper.make_node("Loop", ["two", "yes", "t_in"], ["t_inner"],
                          name="inner_loop", body=inner),
         helper.make_node("Tanh", ["t_inner"], ["t_out"]),
         helper.make_node("Identity", ["c_in"], ["c_out"])],
        "outer", [info("i", I64, []), info("c_in", B, []), info("t_in", F, [4])],
        [info("c_out", B, []), info("t_out", F, [4]), info("t_inner", F, [4])])
    nodes = [helper.make_node("Loop", ["three", "", "t0"], ["t", "inners"],
                              name="loop_nested", body=outer)]
    return (model(nodes, [info("x", F, [4]), info("t0", F, [4])],
                  [info("t", F, [4]), info("inners", F, [3, 4])],
                  [helper.make_tensor("three", I64, [], [3])]),
            {"x": rng.standard_normal(4).astype(np.float32),
             "t0": rng.standard_normal(4).astype(np.float32)})


def scan_axes():
    """Opset 9+ Scan: two states, two scan inputs (one along axis 1 in
    reverse), two scan outputs (one stacked along axis 1 in reverse)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "a"], ["sum_out"]),
         helper.make_node("Mul", ["prod_in", "b"], ["prod_out"]),
         helper.make_node("Sub", ["sum_out", "prod_out"], ["diff"]),
         helper.make_node("Relu", ["sum_out"], ["kept"])],
        "body",
        [info("sum_in", F, [2]), info("prod_in", F, [2]), info("a", F, [2]),
         info("b", F, [2])],
        [info("sum_out", F, [2]), info("prod_out", F, [2]), info("diff", F, [2]),
         info("kept", F, [2])])
    nodes = [helper.make_node(
        "Scan", ["s0", "p0", "xa", "xb"], ["s", "p", "diffs", "kepts"],
        name="scan_axes", body=body, num_scan_inputs=2,
        scan_input_axes=[1, 0], scan_input_directions=[1, 0],
        scan_output_axes=[1, -2], scan_output_directions=[1, 0])]
    return (model(nodes, [info("s0", F, [2]), info("p0", F, [2]),
                          info("xa", F, [2, 5]), info("xb", F, [5, 2])],
                  [info("s", F, [2]), info("p", F, [2]),
                   info("diffs", F, [2, 5]), info("kepts", F, [5, 2])]),
            {"s0": rng.standard_normal(2).astype(np.float32),
             "p0": rng.standard_normal(2).astype(np.float32),
             "xa": rng.standard_normal((2, 5)).astype(np.float32),
             "xb": rng.standard_normal((5, 2)).astype(np.float32)})


def scan_batched():
    """Opset 8's Scan: no sequence_lens, batch 2 along axis 0, the sequence
    along axis 1, the scan input read in reverse (directions)."""
    body = helper.make_graph(
        [helper.make_node("Add", ["h_in", "x"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["y"])],
        "body", [info("h_in", F, [3]), info("x", F, [3])],
        [info("h_out", F, [3]), info("y", F, [3])])
    nodes = [helper.make_node("Scan", ["", "h0", "xs"], ["h", "ys"],
                              name="scan_batched", body=body,
                              num_scan_inputs=1, directions=[1])]
    return (model(nodes, [info("h0", F, [2, 3]), info("xs", F, [2, 4, 3])],
                  [info("h", F, [2, 3]), info("ys", F, [2, 4, 3])], opset=8),
            {"h0": rng.standard_normal((2, 3)).astype(np.float32),
             "xs": rng.standard_normal((2, 4, 3)).astype(np.float32)})


def if_runtime(flag, picked):
    """An If on a graph input (a bool scalar, or of shape [1]): both
    branches are compiled, the executors run the one taken. then_branch
    computes y from x and passes the outer x through as z; else_branch
    looks rows up with a Gather whose indices (idx, a graph input) are out
    of range here when the flag is true (so running it would fail) and
    computes z. Two models: flag true and false."""
    def case():
        then = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["xw"]),
             helper.make_node("Relu", ["xw"], ["r"]),
             helper.make_node("Add", ["r", "x"], ["y_then"]),
             helper.make_node("Identity", ["x"], ["z_then"])],
            "then", [], [info("y_then", F, [3, 3]), info("z_then", F, [3, 3])])
        other = helper.make_graph(
            [const("two", np.float32(2.0)),
             helper.make_node("Gather", ["x", "idx"], ["rows"], axis=0),
             helper.make_node("Mul", ["rows", "two"], ["y_else"]),
             helper.make_node("Exp", ["x"], ["z_else"])],
            "else", [], [info("y_else", F, [3, 3]), info("z_else", F, [3, 3])])
        w = helper.make_tensor("w", F, [3, 3],
                               rng.standard_normal(9).astype(np.float32).tolist())
        nodes = [helper.make_node("If", ["flag"], ["y", "z"], name="gate",
                                  then_branch=then, else_branch=other)]
        shape = [1] if flag == "vector" else []
        value = np.array(picked).reshape(shape)
        idx = np.array([0, 2, 1] if not picked else [7, 9, 8], np.int64)
        return (model(nodes, [info("flag", B, shape), info("x", F, [3, 3]),
                              info("idx", I64, [3])],
                      [info("y", F, [3, 3]), info("z", F, [3, 3])], [w]),
                {"flag": value,
                 "x": rng.standard_normal((3, 3)).astype(np.float32),
                 "idx": idx})
    case.__name__ = f"if_runtime_{flag}_{'then' if picked else 'else'}"
    return case


def if_runtime_nested():
    """An If on runtime data inside one: the outer flag is an input, the
    inner condition a value the outer then_branch computes (the sum of x
    over 0), each branch of the inner one a node of its own."""
    inner_then = helper.make_graph(
        [helper.make_node("Sigmoid", ["s"], ["t_in"])], "inner_then", [],
        [info("t_in", F, [3])])
    inner_else = helper.make_graph(
        [helper.make_node("Tanh", ["s"], ["e_in"])], "inner_else", [],
        [info("e_in", F, [3])])
    zero = np.float32(0.0)
    then = helper.make_graph(
        [const("axis0", np.array([0], np.int64), dtype=I64),
         helper.make_node("ReduceSum", ["x", "axis0"], ["s"], keepdims=0),
         const("zero", zero),
         helper.make_node("ReduceSum", ["s"], ["total"], keepdims=0),
         helper.make_node("Greater", ["total", "zero"], ["positive"]),
         helper.make_node("If", ["positive"], ["picked"], name="inner",
                          then_branch=inner_then, else_branch=inner_else)],
        "then", [], [info("picked", F, [3])])
    other = helper.make_graph(
        [helper.make_node("ReduceMax", ["x"], ["m"], axes=[0], keepdims=0)],
        "else", [], [info("m", F, [3])])
    nodes = [helper.make_node("If", ["flag"], ["y"], name="outer",
                              then_branch=then, else_branch=other)]
    return (model(nodes, [info("flag", B, []), info("x", F, [4, 3])],
                  [info("y", F, [3])]),
            {"flag": np.array(True),
             "x": rng.standard_normal((4, 3)).astype(np.float32)})


def counting_body():
    """A Loop body that doubles its carried y and goes on."""
    return helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Add", ["y_in", "y_in"], ["y_out"])],
        "body", [info("i", I64, []), info("c_in", B, []), info("y_in", F, [2])],
        [info("c_out", B, []), info("y_out", F, [2])])


def loop_bounded_trips(trips):
    """A Loop whose trip count is a graph input, bounded by --max-trip 6:
    y0 doubled `trips` times (0 runs none)."""
    def case():
        nodes = [helper.make_node("Loop", ["n", "", "y0"], ["y"],
                                  name="runtime_trips", body=counting_body())]
        return (model(nodes, [info("n", I64, []), info("y0", F, [2])],
                      [info("y", F, [2])]),
                {"n": np.array(trips, np.int64),
                 "y0": np.array([1.5, -2.0], np.float32)},
                ["--max-trip", "runtime_trips=6"])
    case.__name__ = f"loop_bounded_trips{trips}"
    return case


def doubling_body():
    """A Loop body that doubles its carried y while y's sum stays under
    100."""
    return helper.make_graph(
        [const("limit", np.float32(100.0)),
         helper.make_node("Add", ["y_in", "y_in"], ["y_out"]),
         helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
         helper.make_node("Less", ["total", "limit"], ["c_out"])],
        "body", [info("i", I64, []), info("c_in", B, []), info("y_in", F, [2])],
        [info("c_out", B, []), info("y_out", F, [2])])


def loop_bounded_condition():
    """A while loop: no trip count, the body's condition reads the carried
    data (y doubles while its sum stays under 100: six iterations from
    [1, 2]), bounded by --max-trip 8."""
    nodes = [helper.make_node("Loop", ["", "go", "y0"], ["y"],
                              name="data_stop", body=doubling_body())]
    return (model(nodes, [info("go", B, []), info("y0", F, [2])],
                  [info("y", F, [2])]),
            {"go": np.array(True), "y0": np.array([1.0, 2.0], np.float32)},
            ["--max-trip", "data_stop=8"])


CASES = [loop_trip, loop_condition, loop_nested, scan_axes, scan_batched,
         if_runtime("scalar", True), if_runtime("scalar", False),
         if_runtime("vector", True), if_runtime_nested,
         loop_bounded_trips(3), loop_bounded_trips(0),
         loop_bounded_condition]


def refused(directory):
    """Models snugc refuses, for control-flow.test to check the errors."""
    os.makedirs(directory, exist_ok=True)
    counting = counting_body()
    # The trip count is a graph input.
    onnx.save(model([helper.make_node("Loop", ["n", "", "y0"], ["y"],
                                      name="runtime_trips", body=counting)],
                    [info("n", I64, []), info("y0", F, [2])],
                    [info("y", F, [2])]),
              os.path.join(directory, "runtime-trips.onnx"))
    # The condition the body computes reads the carried data.
    data_cond = doubling_body()
    onnx.save(model([helper.make_node("Loop", ["", "go", "y0"], ["y"],
                                      name="data_stop", body=data_cond)],
                    [info("y0", F, [2])], [info("y", F, [2])],
                    [helper.make_tensor("go", B, [], [True])]),
              os.path.join(directory, "runtime-condition.onnx"))
    # A million iterations.
    onnx.save(model([helper.make_node("Loop", ["M", "", "y0"], ["y"],
                                      name="too_long", body=counting)],
                    [info("y0", F, [2])], [info("y", F, [2])],
                    [helper.make_tensor("M", I64, [], [1000000])]),
              os.path.join(directory, "too-long.onnx"))
    # A body of no nodes, unbounded (M the largest int64): bounded by its
    # iterations. A Scan over 100000 steps: refused before its input is
    # split.
    passing = helper.make_graph(
        [], "body", [info("i", I64, []), info("c_in", B, []), info("y_in", F, [2])],
        [info("c_in", B, []), info("y_in", F, [2])])
    onnx.save(model([helper.make_node("Loop", ["M", "", "y0"], ["y"],
                                      name="endless", body=passing)],
                    [info("y0", F, [2])], [info("y", F, [2])],
                    [helper.make_tensor("M", I64, [], [2**63 - 1])]),
              os.path.join(directory, "endless.onnx"))
    summing = helper.make_graph(
        [helper.make_node("Add", ["s_in", "e"], ["s_out"])],
        "body", [info("s_in", F, [2]), info("e", F, [2])],
        [info("s_out", F, [2])])
    onnx.save(model([helper.make_node("Scan", ["s0", "xs"], ["s"],
                                      name="long_scan", body=summing,
                                      num_scan_inputs=1)],
                    [info("s0", F, [2]), info("xs", F, [100000, 2])],
                    [info("s", F, [2])]),
              os.path.join(directory, "long-scan.onnx"))
    # Unsupported ops in a Loop's and a Scan's body are listed together.
    unique = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Unique", ["y_in"], ["y_out"], name="unique_in_loop")],
        "body", [info("i", I64, []), info("c_in", B, []), info("y_in", F, [2])],
        [info("c_out", B, []), info("y_out", F, [2])])
    nonzero = helper.make_graph(
        [helper.make_node("NonZero", ["e"], ["nz"], name="nonzero_in_scan"),
         helper.make_node("Identity", ["s_in"], ["s_out"])],
        "body", [info("s_in", F, [2]), info("e", F, [2])],
        [info("s_out", F, [2]), info("nz", I64, [1, None])])
    onnx.save(model([helper.make_node("Loop", ["M", "", "y0"], ["y"],
                                      name="loop_unique", body=unique),
                     helper.make_node("Scan", ["y", "xs"], ["s", "nzs"],
                                      name="scan_nonzero", body=nonzero,
                                      num_scan_inputs=1)],
                    [info("y0", F, [2]), info("xs", F, [3, 2])],
                    [info("s", F, [2])],
                    [helper.make_tensor("M", I64, [], [2])]),
              os.path.join(directory, "unsupported.onnx"))


def run(cmd, env=None):
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=env)
    if done.returncode != 0:
        print("FAIL: " + " ".join(cmd) + "\n" + done.stdout)
        sys.exit(1)
    return done.stdout


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--cudasim", metavar="TESTS")
    parser.add_argument("--fake-cuda", metavar="LIBDIR")
    args = parser.parse_args()
    directory, tests, fake = args.directory, args.cudasim, args.fake_cuda
    if fake and not tests:
        parser.error("--fake-cuda runs the simulator's bundles: give --cudasim")
    refused(os.path.join(directory, "refused"))
    failed = False
    for case in CASES:
        kind = case.__name__
        onnx_model, feeds, *extra = case()
        extra = extra[0] if extra else []
        onnx.checker.check_model(onnx_model, full_check=True)
        path = os.path.join(directory, kind + ".onnx")
        onnx.save(onnx_model, path)
        session = onnxruntime.InferenceSession(
            path, providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        want = dict(zip(names, session.run(None, feeds)))
        flags = []
        for name, value in feeds.items():
            np.save(os.path.join(directory, f"{kind}.{name}.npy"), value)
            flags += ["--input", f"{name}=@" +
                      os.path.join(directory, f"{kind}.{name}.npy")]
        backends = ["host"] + (["cudasim"] if tests else []) + \
            (["fake-cuda"] if fake else [])
        for backend in backends:
            out = os.path.join(directory, f"{kind}-{backend}")
            bundle = out + ".snug"
            if backend == "host":
                run(["snugc", "compile", path, "-o", bundle,
                     "--target=host", "--memory-report=none"] + extra)
                run(["snug-run", bundle, "--device", "host", "--poison",
                     "--output-dir", out] + flags)
            elif backend == "cudasim":
                run(["snugc", "compile", path, "-o", bundle,
                     "--target=cuda", "--dump-cuda", out + "-cu",
                     "--memory-report=none"] + extra)
                run(["sh", os.path.join(tests, "cudasim", "compile_kernels.sh"),
                     os.path.join(out + "-cu", kind + ".cu"), out + ".so"])
                run(["snug-cudasim", bundle, "--kernels",
                     out + ".so", "--output-dir", out] + flags)
            else:
                # The simulator's bundle and kernels, through CudaExecutor.
                sim = os.path.join(directory, f"{kind}-cudasim")
                # Under the ASan tier, without the leak check: at exit
                # LeakSanitizer's tracer crashes ("Tracer caught signal
                # 11") reading the dynamic TLS of the kernels library the
                # fake driver loads (one case of 12, every time), as it
                # does for the in-process NVRTC tests CMake names; ASan
                # still checks every access.
                asan = os.environ.get("ASAN_OPTIONS", "")
                env = dict(os.environ, LD_LIBRARY_PATH=fake,
                           SNUG_FAKE_CUDA_KERNELS=sim + ".so",
                           SNUG_FAKE_CUDA_CC="9.0",
                           ASAN_OPTIONS=(asan + ":" if asan else "") +
                           "detect_leaks=0")
                said = run(["snug-run", sim + ".snug", "--device", "cuda",
                            "--runs", "1", "--warmup", "1", "--output-dir",
                            out] + flags, env)
                graphs = re.search(r"graphs (on|off[^)]*)", said)
                print(f"fake-cuda {kind}: "
                      f"{graphs.group(0) if graphs else 'no latency line'}")
            bad = []
            for name, expected in want.items():
                got = np.load(os.path.join(out, name + ".npy"))
                if got.shape != expected.shape or not np.allclose(
                        got, expected, rtol=1e-5, atol=1e-6):
                    bad.append(f"{name}: got {got.tolist()} want {expected.tolist()}")
            failed |= bool(bad)
            print(("FAIL: " if bad else "ok: ") + f"{backend} {kind} "
                  f"({', '.join(f'{n}{list(v.shape)}' for n, v in want.items())})"
                  + "".join("\n  " + b for b in bad))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
