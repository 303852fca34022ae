//===- OnnxRecurrentOps.cpp - RNN, GRU and LSTM, unrolled -----------------===//
//
// ONNX's recurrent ops imported as their recurrence unrolled over the
// sequence, which is static once the inputs are bound: each time step is a
// handful of table ops, so folding, the host executor, the CUDA kernels and
// autodiff need nothing new. One skeleton serves the three cells; only the
// step itself (Unroller::step*) differs.
//
// Per direction (forward, reverse, or both), with G gates (RNN 1, GRU 3,
// LSTM 4) and hidden size H:
//   - the input projection of every step at once: one Gemm of X, flattened
//     to [seq * batch, input], by W^T, plus Wb + Rb (GRU with
//     linear_before_reset leaves Rbh out: it goes inside the reset);
//   - at each step t (seq - 1 down to 0 in reverse) the rows of step t of
//     that projection plus Gemm(H, R^T), split into the gates, each gate's
//     pre-activation clipped to [-clip, clip] when clip is given and passed
//     through the cell's activation (attribute `activations`, with
//     activation_alpha / activation_beta consumed in order by the functions
//     that take them, as onnxruntime reads them);
//   - with sequence_lens, a step at or past a batch entry's length keeps the
//     previous state and writes zeros to Y: Where(t < sequence_lens, new,
//     old), which also makes a reverse pass start at each entry's own last
//     step (onnxruntime's semantics). A constant sequence_lens that covers
//     the whole sequence drops the masks.
// A state without initial_h / initial_c is zero, and the terms it would
// feed (the first step's recurrence, peepholes) are left out.
// layout 1 (batch first) is handled at the edges: X and the initial states
// are read along their own axes, and Y, Y_h, Y_c are concatenated in their
// layout directly.
//
// LSTM's input_forget couples the gates as f = 1 - i (onnxruntime's
// reading; the f rows of W and R are then unused).
//
//===----------------------------------------------------------------------===//
#include "compiler/onnx/OnnxInternal.h"

#include "passes/simplify/ConstantEval.h"
#include "passes/simplify/HostAttributes.h"
#include "runtime/host/Kernels.h"

#include <map>
#include <sstream>

namespace snug {
namespace onnx_import {

using ir::Attribute;
using ir::DType;
using ir::TensorType;
using ir::Value;

namespace {

enum class Cell { Rnn, Gru, Lstm };

/// What tells the three cells apart to the shared skeleton.
struct CellInfo {
  Cell cell;
  /// Blocks of W's and R's rows, and of each half of B.
  int64_t gates;
  /// The activation functions of one direction, by default.
  llvm::ArrayRef<const char *> defaultActivations;
  /// Inputs and outputs the op defines.
  int maxInputs;
  int maxOutputs;
};

const char *const kRnnActivations[] = {"Tanh"};
const char *const kGruActivations[] = {"Sigmoid", "Tanh"};
const char *const kLstmActivations[] = {"Sigmoid", "Tanh", "Tanh"};
const CellInfo kRnn{Cell::Rnn, 1, kRnnActivations, 6, 2};
const CellInfo kGru{Cell::Gru, 3, kGruActivations, 6, 2};
const CellInfo kLstm{Cell::Lstm, 4, kLstmActivations, 8, 3};

/// The activation functions the recurrent ops name, with how many of
/// activation_alpha / activation_beta each takes and their defaults (those
/// of the ONNX op of the same name; Affine and ScaledTanh have none left).
struct ActivationKind {
  const char *name;
  bool takesAlpha, takesBeta;
  float alpha, beta;
};
const ActivationKind kActivationKinds[] = {
    {"Relu", false, false, 0, 0},
    {"Tanh", false, false, 0, 0},
    {"Sigmoid", false, false, 0, 0},
    {"Affine", true, true, 1.0f, 0.0f},
    {"LeakyRelu", true, false, 0.01f, 0},
    {"ThresholdedRelu", true, false, 1.0f, 0},
    {"ScaledTanh", true, true, 1.0f, 1.0f},
    {"HardSigmoid", true, true, 0.2f, 0.5f},
    {"Elu", true, false, 1.0f, 0},
    {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0},
};

/// One activation function with its parameters resolved.
struct Activation {
  llvm::StringRef name;
  float alpha = 0, beta = 0;
};

/// The recurrent state; nullptr while it is still zero.
struct State {
  Value *h = nullptr, *c = nullptr;
};

/// One direction's weights, activations, running state and outputs.
struct Direction {
  std::string tag;
  bool reverse = false;
  /// X W^T + biases of every step, [seq * batch, G * H], step t in rows
  /// [t * batch, (t + 1) * batch).
  Value *projected = nullptr;
  /// R [G * H, H]; for GRU its z and r rows [2H, H].
  Value *recurrence = nullptr;
  /// GRU: R's h rows [H, H], and Rbh [H] with linear_before_reset.
  Value *candidateRecurrence = nullptr, *candidateBias = nullptr;
  /// LSTM: the peepholes of i, o and f, [H] each; nullptr without P.
  Value *peepholes[3] = {nullptr, nullptr, nullptr};
  llvm::ArrayRef<Activation> activations;
  State state;
  /// Y's value at each time index.
  std::vector<Value *> outputs;
};

class Unroller {
public:
  Unroller(Importer &importer, onnx::NodeProto &node, const CellInfo &info)
      : importer(importer), node(node), info(info) {}
  llvm::Error run();

private:
  llvm::Error readInputs();
  llvm::Error readAttributes();
  llvm::Error expectType(Value *value, llvm::StringRef what,
                         llvm::ArrayRef<int64_t> dims, llvm::StringRef meaning);
  llvm::Error readSequenceLengths();
  void prepare(Direction &direction, int64_t index);
  State step(Direction &direction, int64_t t);
  State stepRnn(Direction &direction, Value *projected, const llvm::Twine &at);
  State stepGru(Direction &direction, Value *projected, const llvm::Twine &at);
  State stepLstm(Direction &direction, Value *projected, const llvm::Twine &at);
  Value *gate(Value *preActivation, const Activation &activation,
              const llvm::Twine &suffix);
  Value *activate(Value *x, const Activation &activation,
                  const llvm::Twine &suffix);
  Value *maskAt(int64_t t);
  void bindResults(llvm::ArrayRef<Direction> directions);

  // Emitting. After the first failure every emit returns nullptr (and
  // emits nothing); run() returns that first error.
  Value *emit(llvm::StringRef op, llvm::ArrayRef<Value *> operands,
              ir::AttributeMap attributes, const llvm::Twine &suffix);
  llvm::SmallVector<Value *, 4> split(Value *value, int64_t axis,
                                      llvm::ArrayRef<int64_t> sizes,
                                      const llvm::Twine &suffix);
  Value *slice(Value *value, int64_t axis, int64_t begin, int64_t end,
               const llvm::Twine &suffix);
  /// Entry `index` of `value`'s `axis` of num_directions, that axis dropped.
  Value *pickDirection(Value *value, int64_t axis, int64_t index,
                       const llvm::Twine &suffix);
  Value *gemm(Value *a, Value *bMatrix, Value *c, const llvm::Twine &suffix);
  Value *scalar(double value, DType dtype, llvm::StringRef suffix);
  void fail(llvm::Error error);

  Importer &importer;
  onnx::NodeProto &node;
  const CellInfo &info;
  bool failed = false;
  llvm::Error failure = llvm::Error::success();

  // Inputs; absent optional ones are nullptr.
  Value *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr;
  Value *sequenceLengths = nullptr, *initialH = nullptr, *initialC = nullptr;
  Value *p = nullptr;
  DType dtype = DType::F32;
  int64_t seq = 0, batch = 0, inputSize = 0, hidden = 0, numDirections = 1;
  // Attributes.
  std::string direction;
  int64_t layout = 0;
  llvm::Optional<float> clip;
  bool linearBeforeReset = false, inputForget = false;
  std::vector<Activation> activations;

  /// X as [seq * batch, input] rows in time-major order.
  Value *rowsOfX = nullptr;
  std::string weightPrefix;
  std::map<std::pair<double, DType>, Value *> scalars;
  Value *zero = nullptr, *one = nullptr;
  std::vector<Value *> masks;
};

void Unroller::fail(llvm::Error error) {
  if (failed) {
    llvm::consumeError(std::move(error));
    return;
  }
  llvm::cantFail(std::move(failure));
  failure = std::move(error);
  failed = true;
}

Value *Unroller::emit(llvm::StringRef op, llvm::ArrayRef<Value *> operands,
                      ir::AttributeMap attributes, const llvm::Twine &suffix) {
  if (failed)
    return nullptr;
  auto result = firstResult(importer.emit(
      node, op, operands, std::move(attributes), 1, suffix.str()));
  if (!result) {
    fail(result.takeError());
    return nullptr;
  }
  return *result;
}

llvm::SmallVector<Value *, 4> Unroller::split(Value *value, int64_t axis,
                                              llvm::ArrayRef<int64_t> sizes,
                                              const llvm::Twine &suffix) {
  llvm::SmallVector<Value *, 4> parts(sizes.size(), nullptr);
  if (failed)
    return parts;
  auto results = importer.emit(
      node, "Split", {value},
      {{"axis", Attribute::getInt(axis)}, {"split", Attribute::getInts(sizes)}},
      sizes.size(), suffix.str());
  if (!results) {
    fail(results.takeError());
    return parts;
  }
  llvm::copy(*results, parts.begin());
  return parts;
}

Value *Unroller::slice(Value *value, int64_t axis, int64_t begin, int64_t end,
                       const llvm::Twine &suffix) {
  return emit("Slice", {value},
              {{"starts", Attribute::getInts({begin})},
               {"ends", Attribute::getInts({end})},
               {"axes", Attribute::getInts({axis})},
               {"steps", Attribute::getInts({1})}},
              suffix);
}

Value *Unroller::pickDirection(Value *value, int64_t axis, int64_t index,
                               const llvm::Twine &suffix) {
  Value *entry = value;
  if (numDirections > 1)
    entry = slice(value, axis, index, index + 1, suffix + ".slice");
  return emit("Squeeze", {entry}, {{"axes", Attribute::getInts({axis})}},
              suffix);
}

Value *Unroller::gemm(Value *a, Value *bMatrix, Value *c,
                      const llvm::Twine &suffix) {
  llvm::SmallVector<Value *, 3> operands{a, bMatrix};
  if (c)
    operands.push_back(c);
  return emit("Gemm", operands,
              {{"alpha", Attribute::getFloat(1.0f)},
               {"beta", Attribute::getFloat(1.0f)},
               {"transA", Attribute::getInt(0)},
               {"transB", Attribute::getInt(1)}},
              suffix);
}

Value *Unroller::scalar(double value, DType type, llvm::StringRef suffix) {
  // One weight per value: the steps share their constants.
  Value *&cached = scalars[{value, type}];
  if (cached)
    return cached;
  TensorType scalarType(type, {});
  std::vector<uint8_t> bytes(scalarType.getByteSize());
  rt::storeDouble(bytes.data(), toBundleCode(type), 0, value);
  cached =
      importer.module.addWeight(weightPrefix + suffix.str(), scalarType, bytes);
  return cached;
}

//===----------------------------------------------------------------------===//
// Reading the node
//===----------------------------------------------------------------------===//

llvm::Error Unroller::expectType(Value *value, llvm::StringRef what,
                                 llvm::ArrayRef<int64_t> dims,
                                 llvm::StringRef meaning) {
  if (!value)
    return llvm::Error::success();
  const TensorType &type = value->getType();
  DType expected = what == "sequence_lens" ? type.getDType() : dtype;
  if (type.getDType() == expected && type.getDims() == dims)
    return llvm::Error::success();
  return importer.error(node, what + " " + type.str() + " is not " +
                                  TensorType(expected, dims).str() + " (" +
                                  meaning + ")");
}

llvm::Error Unroller::readAttributes() {
  direction = attrString(node, "direction", "forward");
  if (direction != "forward" && direction != "reverse" &&
      direction != "bidirectional")
    return importer.error(node, "direction '" + direction +
                                    "' is not forward, reverse or "
                                    "bidirectional");
  numDirections = direction == "bidirectional" ? 2 : 1;
  layout = attrInt(node, "layout", 0);
  if (layout != 0 && layout != 1)
    return importer.error(node,
                          "layout " + llvm::Twine(layout) + " is not 0 or 1");
  if (findAttr(node, "clip")) {
    clip = attrFloat(node, "clip", 0);
    if (!(*clip > 0)) {
      std::ostringstream text;
      text << "clip " << *clip << " is not positive";
      return importer.error(node, text.str());
    }
  }
  linearBeforeReset = attrInt(node, "linear_before_reset", 0) != 0;
  inputForget = attrInt(node, "input_forget", 0) != 0;

  // The activations: the cell's defaults for each direction, or exactly one
  // list entry per function and direction.
  size_t perDirection = info.defaultActivations.size();
  std::vector<std::string> names;
  if (const onnx::AttributeProto *attr = findAttr(node, "activations")) {
    names.assign(attr->strings().begin(), attr->strings().end());
    if (names.size() != perDirection * numDirections)
      return importer.error(
          node, "activations has " + llvm::Twine(names.size()) +
                    " functions; a " + direction + " " + node.op_type() +
                    " takes " + llvm::Twine(perDirection * numDirections));
  } else {
    for (int64_t d = 0; d < numDirections; ++d)
      names.insert(names.end(), info.defaultActivations.begin(),
                   info.defaultActivations.end());
  }
  llvm::SmallVector<float, 4> alphas =
      attrFloats(node, "activation_alpha")
          .getValueOr(llvm::SmallVector<float, 4>());
  llvm::SmallVector<float, 4> betas =
      attrFloats(node, "activation_beta")
          .getValueOr(llvm::SmallVector<float, 4>());
  size_t nextAlpha = 0, nextBeta = 0;
  for (const std::string &name : names) {
    const ActivationKind *kind = nullptr;
    for (const ActivationKind &candidate : kActivationKinds)
      if (llvm::StringRef(candidate.name).equals_insensitive(name))
        kind = &candidate;
    if (!kind)
      return importer.error(node, "activation '" + name +
                                      "' is not one snug implements");
    Activation activation{kind->name, kind->alpha, kind->beta};
    if (kind->takesAlpha && nextAlpha < alphas.size())
      activation.alpha = alphas[nextAlpha++];
    if (kind->takesBeta && nextBeta < betas.size())
      activation.beta = betas[nextBeta++];
    activations.push_back(activation);
  }
  // A value no function takes means the lists were written for another
  // reading of them; refuse rather than guess.
  if (nextAlpha < alphas.size() || nextBeta < betas.size())
    return importer.error(
        node, "activation_alpha / activation_beta hold " +
                  llvm::Twine(alphas.size()) + " / " +
                  llvm::Twine(betas.size()) + " values; the activations take " +
                  llvm::Twine(nextAlpha) + " / " + llvm::Twine(nextBeta));
  return llvm::Error::success();
}

llvm::Error Unroller::readInputs() {
  if (node.input_size() > info.maxInputs)
    return importer.error(node, "has " + llvm::Twine(node.input_size()) +
                                    " inputs; " + node.op_type() +
                                    " takes at most " +
                                    llvm::Twine(info.maxInputs));
  if (node.output_size() > info.maxOutputs)
    return importer.error(node, "has " + llvm::Twine(node.output_size()) +
                                    " outputs; " + node.op_type() +
                                    " has at most " +
                                    llvm::Twine(info.maxOutputs));
  Value **slots[] = {&x,        &w,        &r, &b, &sequenceLengths,
                     &initialH, &initialC, &p};
  for (int i = 0; i < info.maxInputs; ++i) {
    auto input =
        i < 3 ? requireInput(importer, node, i) : importer.getInput(node, i);
    if (!input)
      return input.takeError();
    *slots[i] = *input;
  }
  const TensorType &xType = x->getType();
  dtype = xType.getDType();
  if (!ir::isFloatDType(dtype) || xType.getRank() != 3)
    return importer.error(node, "X " + xType.str() +
                                    " is not a float tensor of rank 3");
  if (w->getType().getRank() != 3 || r->getType().getRank() != 3)
    return importer.error(node, "W " + w->getType().str() + " and R " +
                                    r->getType().str() +
                                    " must both have rank 3");
  seq = xType.getDims()[layout];
  batch = xType.getDims()[1 - layout];
  inputSize = xType.getDims()[2];
  hidden = r->getType().getDims()[2];
  if (findAttr(node, "hidden_size") &&
      attrInt(node, "hidden_size", 0) != hidden)
    return importer.error(
        node, "hidden_size " + llvm::Twine(attrInt(node, "hidden_size", 0)) +
                  " is not R's last dim " + llvm::Twine(hidden));
  std::string g = std::to_string(info.gates);
  int64_t rows = info.gates * hidden;
  llvm::SmallVector<int64_t, 3> stateDims =
      layout ? llvm::SmallVector<int64_t, 3>{batch, numDirections, hidden}
             : llvm::SmallVector<int64_t, 3>{numDirections, batch, hidden};
  std::string stateMeaning = layout ? "[batch_size, num_directions, "
                                      "hidden_size]"
                                    : "[num_directions, batch_size, "
                                      "hidden_size]";
  if (llvm::Error error =
          expectType(w, "W", {numDirections, rows, inputSize},
                     "[num_directions, " + g + "*hidden_size, input_size]"))
    return error;
  if (llvm::Error error =
          expectType(r, "R", {numDirections, rows, hidden},
                     "[num_directions, " + g + "*hidden_size, hidden_size]"))
    return error;
  if (llvm::Error error =
          expectType(b, "B", {numDirections, 2 * rows},
                     "[num_directions, " + std::to_string(2 * info.gates) +
                         "*hidden_size]"))
    return error;
  if (llvm::Error error =
          expectType(initialH, "initial_h", stateDims, stateMeaning))
    return error;
  if (llvm::Error error =
          expectType(initialC, "initial_c", stateDims, stateMeaning))
    return error;
  if (llvm::Error error = expectType(p, "P", {numDirections, 3 * hidden},
                                     "[num_directions, 3*hidden_size]"))
    return error;
  return readSequenceLengths();
}

llvm::Error Unroller::readSequenceLengths() {
  if (!sequenceLengths)
    return llvm::Error::success();
  if (!ir::isIntegerDType(sequenceLengths->getType().getDType()))
    return importer.error(node, "sequence_lens " +
                                    sequenceLengths->getType().str() +
                                    " is not an integer tensor");
  if (llvm::Error error =
          expectType(sequenceLengths, "sequence_lens", {batch}, "[batch_size]"))
    return error;
  auto data = importer.getConstant(sequenceLengths);
  if (!data)
    return data.takeError();
  if (!*data)
    return llvm::Error::success();
  // Known lengths: check them, and drop the masks when none is short.
  auto lengths = readIntegers(sequenceLengths->getType(), **data);
  bool full = true;
  for (int64_t length : *lengths) {
    if (length < 0 || length > seq)
      return importer.error(node, "sequence_lens holds " + llvm::Twine(length) +
                                      ", outside [0, " + llvm::Twine(seq) +
                                      "]");
    full &= length == seq;
  }
  if (full)
    sequenceLengths = nullptr;
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// Unrolling
//===----------------------------------------------------------------------===//

/// W, R, B and P of direction `index`, and its initial state.
void Unroller::prepare(Direction &dir, int64_t index) {
  dir.reverse = direction == "reverse" || index == 1;
  dir.tag = dir.reverse ? ".bw" : ".fw";
  int64_t perDirection = info.defaultActivations.size();
  dir.activations =
      llvm::makeArrayRef(activations).slice(index * perDirection, perDirection);
  std::string tag = dir.tag;

  Value *bias = nullptr;
  if (b) {
    Value *biases = pickDirection(b, 0, index, tag + ".B");
    int64_t rows = info.gates * hidden;
    auto halves = split(biases, 0, {rows, rows}, tag + ".Wb_Rb");
    if (info.cell == Cell::Gru && linearBeforeReset) {
      // Rbh is added inside the reset gate's product; Wbh outside it.
      auto wb = split(halves[0], 0, {2 * hidden, hidden}, tag + ".Wb");
      auto rb = split(halves[1], 0, {2 * hidden, hidden}, tag + ".Rb");
      Value *gates = emit("Add", {wb[0], rb[0]}, {}, tag + ".bias_zr");
      bias = emit("Concat", {gates, wb[1]}, {{"axis", Attribute::getInt(0)}},
                  tag + ".bias");
      dir.candidateBias = rb[1];
    } else {
      bias = emit("Add", {halves[0], halves[1]}, {}, tag + ".bias");
    }
  }
  dir.projected = gemm(rowsOfX, pickDirection(w, 0, index, tag + ".W"), bias,
                       tag + ".projected");

  dir.recurrence = pickDirection(r, 0, index, tag + ".R");
  if (info.cell == Cell::Gru) {
    auto parts =
        split(dir.recurrence, 0, {2 * hidden, hidden}, tag + ".R_zr_h");
    dir.recurrence = parts[0];
    dir.candidateRecurrence = parts[1];
  }
  if (p) {
    auto peepholes = split(pickDirection(p, 0, index, tag + ".P"), 0,
                           {hidden, hidden, hidden}, tag + ".P_iof");
    llvm::copy(peepholes, dir.peepholes);
  }
  if (initialH)
    dir.state.h = pickDirection(initialH, layout, index, tag + ".initial_h");
  if (initialC)
    dir.state.c = pickDirection(initialC, layout, index, tag + ".initial_c");
}

Value *Unroller::activate(Value *value, const Activation &activation,
                          const llvm::Twine &suffix) {
  llvm::StringRef name = activation.name;
  if (name == "Affine") {
    Value *scaled =
        emit("Mul", {value, scalar(activation.alpha, dtype, ".alpha")}, {},
             suffix + ".scaled");
    return emit("Add", {scaled, scalar(activation.beta, dtype, ".beta")}, {},
                suffix);
  }
  if (name == "ScaledTanh") {
    Value *scaled =
        emit("Mul", {value, scalar(activation.beta, dtype, ".beta")}, {},
             suffix + ".scaled");
    Value *tanh = emit("Tanh", {scaled}, {}, suffix + ".tanh");
    return emit("Mul", {tanh, scalar(activation.alpha, dtype, ".alpha")}, {},
                suffix);
  }
  ir::AttributeMap attributes;
  if (name == "LeakyRelu" || name == "ThresholdedRelu" || name == "Elu" ||
      name == "HardSigmoid")
    attributes["alpha"] = Attribute::getFloat(activation.alpha);
  if (name == "HardSigmoid")
    attributes["beta"] = Attribute::getFloat(activation.beta);
  return emit(name, {value}, std::move(attributes), suffix);
}

Value *Unroller::gate(Value *preActivation, const Activation &activation,
                      const llvm::Twine &suffix) {
  if (clip)
    preActivation = emit("Clip", {preActivation},
                         {{"min", Attribute::getFloat(-*clip)},
                          {"max", Attribute::getFloat(*clip)}},
                         suffix + ".clip");
  return activate(preActivation, activation, suffix);
}

/// Ht = f(Xt W^T + Ht-1 R^T + Wb + Rb).
State Unroller::stepRnn(Direction &dir, Value *projected,
                        const llvm::Twine &at) {
  Value *pre = dir.state.h
                   ? gemm(dir.state.h, dir.recurrence, projected, at + ".pre")
                   : projected;
  return {gate(pre, dir.activations[0], at + ".h"), nullptr};
}

/// z, r = f(Xt W^T + Ht-1 R^T + biases); the candidate
/// h = g(Xt Wh^T + (r * Ht-1) Rh^T + Rbh + Wbh), or with linear_before_reset
/// g(Xt Wh^T + r * (Ht-1 Rh^T + Rbh) + Wbh); Ht = (1 - z) * h + z * Ht-1.
State Unroller::stepGru(Direction &dir, Value *projected,
                        const llvm::Twine &at) {
  Value *h = dir.state.h;
  auto parts = split(projected, 1, {2 * hidden, hidden}, at + ".x_zr_h");
  Value *zrPre =
      h ? gemm(h, dir.recurrence, parts[0], at + ".zr_pre") : parts[0];
  auto zr = split(zrPre, 1, {hidden, hidden}, at + ".zr");
  const Activation &f = dir.activations[0];
  Value *z = gate(zr[0], f, at + ".z");
  Value *reset = gate(zr[1], f, at + ".r");
  Value *candidatePre = parts[1];
  if (linearBeforeReset) {
    Value *recurrent =
        h ? gemm(h, dir.candidateRecurrence, dir.candidateBias, at + ".hr")
          : dir.candidateBias;
    if (recurrent)
      candidatePre = emit(
          "Add", {parts[1], emit("Mul", {reset, recurrent}, {}, at + ".reset")},
          {}, at + ".h_pre");
  } else if (h) {
    Value *resetState = emit("Mul", {reset, h}, {}, at + ".reset");
    candidatePre =
        gemm(resetState, dir.candidateRecurrence, parts[1], at + ".h_pre");
  }
  Value *candidate = gate(candidatePre, dir.activations[1], at + ".h");
  // (1 - z) * candidate + z * Ht-1, as candidate + z * (Ht-1 - candidate).
  Value *update = h ? emit("Sub", {h, candidate}, {}, at + ".delta")
                    : emit("Neg", {candidate}, {}, at + ".delta");
  return {emit("Add", {candidate, emit("Mul", {z, update}, {}, at + ".kept")},
               {}, at + ".H"),
          nullptr};
}

/// i, o, f, c (W's row order) from Xt W^T + Ht-1 R^T + biases;
/// i = f(. + Pi * Ct-1), f = f(. + Pf * Ct-1) (1 - i with input_forget),
/// Ct = f * Ct-1 + i * g(c), o = f(. + Po * Ct), Ht = o * h(Ct).
State Unroller::stepLstm(Direction &dir, Value *projected,
                         const llvm::Twine &at) {
  State previous = dir.state;
  Value *pre = previous.h
                   ? gemm(previous.h, dir.recurrence, projected, at + ".pre")
                   : projected;
  auto gates = split(pre, 1, {hidden, hidden, hidden, hidden}, at + ".iofc");
  auto peephole = [&](Value *gatePre, int which, Value *cell,
                      const char *name) -> Value * {
    if (!dir.peepholes[which] || !cell)
      return gatePre;
    Value *term = emit("Mul", {dir.peepholes[which], cell}, {},
                       at + "." + name + ".peephole");
    return emit("Add", {gatePre, term}, {}, at + "." + name + ".pre");
  };
  const Activation &f = dir.activations[0];
  Value *input = gate(peephole(gates[0], 0, previous.c, "i"), f, at + ".i");
  Value *forget =
      inputForget ? emit("Sub", {one, input}, {}, at + ".f")
                  : gate(peephole(gates[2], 2, previous.c, "f"), f, at + ".f");
  Value *candidate = gate(gates[3], dir.activations[1], at + ".c");
  Value *cell = emit("Mul", {input, candidate}, {}, at + ".ic");
  if (previous.c)
    cell =
        emit("Add", {emit("Mul", {forget, previous.c}, {}, at + ".fc"), cell},
             {}, at + ".C");
  Value *output = gate(peephole(gates[1], 1, cell, "o"), f, at + ".o");
  Value *state =
      emit("Mul", {output, activate(cell, dir.activations[2], at + ".C_act")},
           {}, at + ".H");
  return {state, cell};
}

/// [batch, 1]: whether step t is within each batch entry's length.
Value *Unroller::maskAt(int64_t t) {
  if (!masks[t]) {
    std::string at = ".t" + std::to_string(t);
    Value *within =
        emit("Less",
             {scalar(double(t), sequenceLengths->getType().getDType(), at),
              sequenceLengths},
             {}, at + ".within");
    masks[t] = emit("Unsqueeze", {within}, {{"axes", Attribute::getInts({1})}},
                    at + ".mask");
  }
  return masks[t];
}

State Unroller::step(Direction &dir, int64_t t) {
  std::string at = dir.tag + ".t" + std::to_string(t);
  Value *projected =
      slice(dir.projected, 0, t * batch, (t + 1) * batch, at + ".x");
  State next;
  switch (info.cell) {
  case Cell::Rnn:
    next = stepRnn(dir, projected, at);
    break;
  case Cell::Gru:
    next = stepGru(dir, projected, at);
    break;
  case Cell::Lstm:
    next = stepLstm(dir, projected, at);
    break;
  }
  if (!sequenceLengths) {
    dir.outputs[t] = next.h;
    return next;
  }
  // Past an entry's length: the state stays, Y is zero.
  Value *mask = maskAt(t);
  auto keep = [&](Value *updated, Value *old, const char *name) {
    return emit("Where", {mask, updated, old ? old : zero}, {},
                at + "." + name + ".masked");
  };
  dir.outputs[t] = keep(next.h, nullptr, "Y");
  State kept;
  kept.h = dir.state.h ? keep(next.h, dir.state.h, "H") : dir.outputs[t];
  if (next.c)
    kept.c = keep(next.c, dir.state.c, "C");
  return kept;
}

/// Y [seq, dirs, batch, H] (layout 1: [batch, seq, dirs, H]), Y_h and Y_c
/// [dirs, batch, H] (layout 1: [batch, dirs, H]), those the node names.
void Unroller::bindResults(llvm::ArrayRef<Direction> directions) {
  int64_t seqAxis = layout, yDirAxis = layout + 1, stateDirAxis = layout;
  auto concat = [&](llvm::ArrayRef<Value *> parts, int64_t axis,
                    const llvm::Twine &suffix) {
    if (parts.size() == 1)
      return parts[0];
    return emit("Concat", parts, {{"axis", Attribute::getInt(axis)}}, suffix);
  };
  llvm::SmallVector<Value *, 3> results(node.output_size(), nullptr);
  auto wanted = [&](int index) {
    return index < node.output_size() && !node.output(index).empty();
  };
  if (wanted(0)) {
    std::vector<Value *> steps;
    for (int64_t t = 0; t < seq; ++t) {
      std::string at = ".t" + std::to_string(t);
      llvm::SmallVector<Value *, 2> parts;
      for (const Direction &dir : directions)
        parts.push_back(
            emit("Unsqueeze", {dir.outputs[t]},
                 {{"axes", Attribute::getInts({seqAxis, yDirAxis})}},
                 dir.tag + at + ".Y"));
      steps.push_back(concat(parts, yDirAxis, at + ".Y"));
    }
    results[0] = concat(steps, seqAxis, ".Y");
  }
  auto finalState = [&](Value *State::*member, const char *name) {
    llvm::SmallVector<Value *, 2> parts;
    for (const Direction &dir : directions)
      parts.push_back(emit("Unsqueeze", {dir.state.*member},
                           {{"axes", Attribute::getInts({stateDirAxis})}},
                           dir.tag + "." + name));
    return concat(parts, stateDirAxis, llvm::Twine(".") + name);
  };
  if (wanted(1))
    results[1] = finalState(&State::h, "Y_h");
  if (wanted(2))
    results[2] = finalState(&State::c, "Y_c");
  if (!failed)
    importer.bindOutputs(node, results);
}

llvm::Error Unroller::run() {
  if (llvm::Error error = readAttributes())
    return error;
  if (llvm::Error error = readInputs())
    return error;
  weightPrefix = node.name();
  for (const std::string &output : node.output())
    if (weightPrefix.empty())
      weightPrefix = output;
  if (sequenceLengths) {
    zero = scalar(0, dtype, ".zero");
    masks.assign(seq, nullptr);
  }
  if (inputForget && info.cell == Cell::Lstm)
    one = scalar(1, dtype, ".one");

  // The input projection of all steps reads X as rows, layout 1
  // transposed to time-major first.
  rowsOfX = x;
  if (layout)
    rowsOfX = emit("Transpose", {x}, {{"perm", Attribute::getInts({1, 0, 2})}},
                   ".time_major");
  rowsOfX =
      emit("Reshape", {rowsOfX},
           {{"shape", Attribute::getInts({seq * batch, inputSize})}}, ".rows");

  std::vector<Direction> directions(numDirections);
  for (int64_t d = 0; d < numDirections; ++d) {
    Direction &dir = directions[d];
    prepare(dir, d);
    dir.outputs.assign(seq, nullptr);
    for (int64_t s = 0; s < seq; ++s)
      dir.state = step(dir, dir.reverse ? seq - 1 - s : s);
  }
  bindResults(directions);
  return std::move(failure);
}

llvm::Error importRnn(Importer &importer, onnx::NodeProto &node) {
  return Unroller(importer, node, kRnn).run();
}
llvm::Error importGru(Importer &importer, onnx::NodeProto &node) {
  return Unroller(importer, node, kGru).run();
}
llvm::Error importLstm(Importer &importer, onnx::NodeProto &node) {
  return Unroller(importer, node, kLstm).run();
}

} // namespace

void registerRecurrentOpImporters(llvm::StringMap<OpImporter> &map) {
  map["RNN"] = importRnn;
  map["GRU"] = importGru;
  map["LSTM"] = importLstm;
}

} // namespace onnx_import
} // namespace snug
