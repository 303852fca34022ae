#!/usr/bin/env python3
"""make_recurrent_tests.py OUT: writes ONNX node tests (model.onnx +
test_data_set_0/) of RNN, GRU and LSTM variants into OUT, for
run_conformance.py.

The onnx node tests cover only forward passes without sequence_lens, clip or
the other activations; these cover what compiler/onnx/OnnxRecurrentOps.cpp
also implements: reverse and bidirectional passes, runtime sequence_lens
(padded steps keep the state and write zeros to Y), initial states,
peepholes, clip, GRU's linear_before_reset, LSTM's input_forget, every
activation function with its alpha / beta, partial output lists, layout 1
and opset 7. Expected outputs come from onnxruntime's CPU kernels. It does
not run layout 1, so a layout-1 test is the layout-0 case with its inputs
and outputs transposed. Activation parameters are chosen so that the two
readings of activation_alpha (onnxruntime's RNN indexes it by function,
its GRU and LSTM consume it in order) agree. Inputs are seeded, so the
output is the same on every run.
"""
import argparse
import os

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
rng = np.random.default_rng(7)


def write_test(out, name, model, inputs, outputs):
    directory = os.path.join(out, "test_" + name)
    os.makedirs(os.path.join(directory, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(directory, "model.onnx"))
    for kind, tensors in (("input", inputs), ("output", outputs)):
        for index, (tensor_name, value) in enumerate(tensors.items()):
            path = os.path.join(directory, "test_data_set_0",
                                f"{kind}_{index}.pb")
            with open(path, "wb") as f:
                f.write(numpy_helper.from_array(value, tensor_name)
                        .SerializeToString())


def case(out, name, op, seq=4, batch=3, input_size=5, hidden=4,
         direction="forward", bias=True, sequence_lens=None, initial=False,
         peepholes=False, outputs=("Y", "Y_h", "Y_c"), layout=0, opset=14,
         **attributes):
    gates = GATES[op]
    dirs = 2 if direction == "bidirectional" else 1

    def normal(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    # Inputs in ONNX's order; None for an absent optional one.
    feeds = {"X": normal(seq, batch, input_size),
             "W": normal(dirs, gates * hidden, input_size, scale=0.5),
             "R": normal(dirs, gates * hidden, hidden, scale=0.5),
             "B": normal(dirs, 2 * gates * hidden) if bias else None,
             "sequence_lens": None if sequence_lens is None
             else np.array(sequence_lens, dtype=np.int32),
             "initial_h": normal(dirs, batch, hidden) if initial else None}
    if op == "LSTM":
        feeds["initial_c"] = normal(dirs, batch, hidden) if initial else None
        feeds["P"] = normal(dirs, 3 * hidden) if peepholes else None
    input_names = [n if v is not None else "" for n, v in feeds.items()]
    while not input_names[-1]:
        input_names.pop()
    feeds = {n: v for n, v in feeds.items() if v is not None}
    output_names = [n if n in outputs else ""
                    for n in ("Y", "Y_h", "Y_c")[:3 if op == "LSTM" else 2]]
    while not output_names[-1]:
        output_names.pop()

    def model(model_layout):
        extra = {"layout": model_layout} if model_layout else {}
        node = helper.make_node(op, input_names, output_names,
                                hidden_size=hidden, direction=direction,
                                **attributes, **extra)
        graph_inputs = [helper.make_tensor_value_info(
            n, TensorProto.INT32 if n == "sequence_lens" else TensorProto.FLOAT,
            v.shape) for n, v in feeds.items()]
        graph_outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT,
                                                       None)
                         for n in output_names if n]
        graph = helper.make_graph([node], name, graph_inputs, graph_outputs)
        result = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)])
        result.ir_version = 8
        return result

    session = onnxruntime.InferenceSession(
        model(0).SerializeToString(), providers=["CPUExecutionProvider"])
    expected = dict(zip([n for n in output_names if n],
                        session.run(None, feeds)))
    if layout:
        # Batch first: X [batch, seq, input], states [batch, dirs, hidden],
        # Y [batch, seq, dirs, hidden].
        swaps = {"X": (1, 0, 2), "initial_h": (1, 0, 2),
                 "initial_c": (1, 0, 2), "Y": (2, 0, 1, 3),
                 "Y_h": (1, 0, 2), "Y_c": (1, 0, 2)}
        for tensors in (feeds, expected):
            for n in tensors:
                if n in swaps:
                    tensors[n] = np.ascontiguousarray(
                        tensors[n].transpose(swaps[n]))
    write_test(out, name, model(layout), feeds, expected)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    out = parser.parse_args().out
    for op in GATES:
        low = op.lower()
        case(out, f"{low}_forward_no_bias", op, bias=False)
        case(out, f"{low}_reverse_initial", op, direction="reverse",
             initial=True)
        case(out, f"{low}_bidirectional", op, direction="bidirectional",
             initial=True)
        case(out, f"{low}_bidirectional_seq_lens", op,
             direction="bidirectional", sequence_lens=[4, 2, 3], initial=True)
        case(out, f"{low}_seq_lens_zero_state", op, sequence_lens=[1, 4, 2])
        case(out, f"{low}_bidirectional_layout1", op,
             direction="bidirectional", initial=True, layout=1)
        case(out, f"{low}_clip", op, clip=0.7, initial=True)
        case(out, f"{low}_only_y", op, outputs=("Y",), direction="reverse")
        case(out, f"{low}_opset7", op, opset=7, initial=True)
    case(out, "rnn_relu", "RNN", activations=["Relu"])
    case(out, "rnn_leakyrelu_elu", "RNN", direction="bidirectional",
         activations=["LeakyRelu", "Elu"], activation_alpha=[0.2, 0.3])
    case(out, "rnn_affine", "RNN", activations=["Affine"],
         activation_alpha=[0.5], activation_beta=[0.25], seq=2)
    case(out, "rnn_scaledtanh", "RNN", activations=["ScaledTanh"],
         activation_alpha=[1.5], activation_beta=[0.5])
    case(out, "rnn_softsign_relu", "RNN", direction="bidirectional",
         activations=["Softsign", "Relu"])
    case(out, "rnn_softplus", "RNN", activations=["Softplus"], seq=2)
    case(out, "rnn_thresholdedrelu", "RNN", activations=["ThresholdedRelu"],
         activation_alpha=[0.1], seq=2)
    case(out, "gru_linear_before_reset", "GRU", linear_before_reset=1,
         initial=True)
    case(out, "gru_linear_before_reset_zero_state", "GRU",
         linear_before_reset=1)
    case(out, "gru_linear_before_reset_no_bias", "GRU", linear_before_reset=1,
         bias=False, initial=True)
    case(out, "gru_linear_before_reset_bidirectional_seq_lens", "GRU",
         linear_before_reset=1, direction="bidirectional",
         sequence_lens=[3, 1, 4])
    case(out, "gru_hardsigmoid_softsign", "GRU",
         activations=["HardSigmoid", "Softsign"], activation_alpha=[0.3],
         activation_beta=[0.6])
    case(out, "lstm_peepholes", "LSTM", peepholes=True, initial=True)
    case(out, "lstm_peepholes_zero_state", "LSTM", peepholes=True,
         direction="bidirectional")
    case(out, "lstm_input_forget", "LSTM", input_forget=1, initial=True)
    case(out, "lstm_peepholes_seq_lens_clip_reverse", "LSTM", peepholes=True,
         sequence_lens=[2, 4, 3], clip=1.2, direction="reverse", initial=True)
    case(out, "lstm_hardsigmoid_softsign", "LSTM",
         activations=["HardSigmoid", "Tanh", "Softsign"],
         activation_alpha=[0.25])


if __name__ == "__main__":
    main()
