//===- ConvAffinePattern.cpp - A constant scale or shift folded into a Conv ===//
//
// Exporters leave per-channel affine maps after a Conv as elementwise
// nodes: Paddle's learnable affine blocks (PP-OCRv4's detector scales and
// shifts each Conv's result by constants before its HardSwish), a
// framework's BatchNorm already rewritten as Mul and Add, a bias added
// apart. With the Conv's weight and bias constant they fold into them,
// as onnxruntime's ConvMulFusion and ConvAddFusion fold them:
//   Mul(conv, s):  W'[m, ...] = W[m, ...] * s[m],  b'[m] = b[m] * s[m]
//   Div(conv, d):  the same with s = 1 / d
//   Add(conv, t):  b'[m] = b[m] + t[m]
//   Sub(conv, t):  b'[m] = b[m] - t[m]
// (b = 0 without a bias; Mul and Add either way round). A chain folds one
// node at a time, in schedule order. In 16 bits this is precision, not only
// a kernel fewer: each node of the chain stored its result rounded, the
// folded Conv rounds once (fold-batchnorm runs it before lower-precision,
// in f32 and double).
//
// What must hold: the Conv's result is read by that node alone and is no
// graph output; the node's result has the Conv result's type (the constant
// broadcasts into it, not it into the constant's); the constant is an f32
// weight with data holding one value, or one per output channel laid out
// along the result's dim 1 (every other dim 1, after numpy's right
// alignment); the Conv's weight and its bias, if any, are f32 weights with
// data. New weights are made (the old ones may have other readers).
//
//===----------------------------------------------------------------------===//
#include "passes/fusion/FusePatterns.h"

#include "ir/Module.h"

#include "llvm/ADT/DenseSet.h"

#include <cmath>
#include <vector>

namespace snug {

namespace {

using ir::OpCode;
using ir::Value;

/// The constant's value per output channel (`channels` of them) when
/// `constant` broadcasts along dim 1 of `result` alone.
bool readPerChannel(const ir::Module &module, const Value *constant,
                    const ir::TensorType &result, int64_t channels,
                    std::vector<double> &values) {
  const ir::TensorType &type = constant->getType();
  if (type.getRank() > result.getRank())
    return false;
  unsigned offset = result.getRank() - type.getRank();
  for (unsigned i = 0; i < type.getRank(); ++i) {
    int64_t dim = type.getDims()[i];
    bool channelAxis = offset + i == 1;
    if (dim != 1 && !(channelAxis && dim == channels))
      return false;
  }
  int64_t count = type.getNumElements();
  std::vector<float> data;
  if (!readF32Weight(module, constant, count, data))
    return false;
  values.assign(size_t(channels), 0.0);
  for (int64_t m = 0; m < channels; ++m)
    values[size_t(m)] = double(data[count == 1 ? 0 : size_t(m)]);
  return true;
}

struct Folder {
  ir::Module &module;
  llvm::StringSet<> names;

  /// Folds `node` into the Conv it reads when the pattern holds.
  bool tryFold(ir::Node &node) {
    bool scale = node.is(OpCode::Mul) || node.is(OpCode::Div);
    if (!(scale || node.is(OpCode::Add) || node.is(OpCode::Sub)) ||
        node.getNumOperands() != 2)
      return false;
    // The Conv's side: either for Mul and Add, the left for Div and Sub.
    bool commutes = node.is(OpCode::Mul) || node.is(OpCode::Add);
    for (unsigned side = 0; side < (commutes ? 2u : 1u); ++side) {
      Value *convResult = node.getOperand(side);
      Value *constant = node.getOperand(1 - side);
      ir::Node *conv = convResult->getDefiningNode();
      if (!conv || !conv->is(OpCode::Conv) || module.isOutput(convResult) ||
          convResult->getUses().size() != 1 ||
          node.getResult(0)->getType() != convResult->getType() ||
          convResult->getType().getRank() < 2)
        continue;
      const ir::TensorType &weightType = conv->getOperand(1)->getType();
      int64_t channels = convResult->getType().getDims()[1];
      if (weightType.getRank() < 1 || weightType.getDims()[0] != channels ||
          channels <= 0)
        continue;
      std::vector<double> values;
      if (!readPerChannel(module, constant, convResult->getType(), channels,
                          values))
        continue;
      std::vector<float> weight, bias(size_t(channels), 0.0f);
      if (!readF32Weight(module, conv->getOperand(1),
                         weightType.getNumElements(), weight) ||
          (conv->getNumOperands() > 2 && conv->getOperand(2) &&
           !readF32Weight(module, conv->getOperand(2), channels, bias)))
        continue;
      if (node.is(OpCode::Div))
        for (double &v : values) {
          if (v == 0)
            return false; // a division by 0 runs as written
          v = 1 / v;
        }
      if (node.is(OpCode::Sub))
        for (double &v : values)
          v = -v;
      std::vector<float> newBias(static_cast<size_t>(channels));
      Value *w = conv->getOperand(1);
      if (scale) {
        int64_t perChannel = weightType.getNumElements() / channels;
        std::vector<float> newWeight(weight.size());
        for (int64_t m = 0; m < channels; ++m)
          for (int64_t k = 0; k < perChannel; ++k)
            newWeight[size_t(m * perChannel + k)] = float(
                double(weight[size_t(m * perChannel + k)]) * values[size_t(m)]);
        for (int64_t m = 0; m < channels; ++m)
          newBias[size_t(m)] = float(double(bias[size_t(m)]) * values[size_t(m)]);
        w = addFreshWeight(module, names, node, "affine", "/folded_weight",
                           weightType, newWeight);
      } else {
        for (int64_t m = 0; m < channels; ++m)
          newBias[size_t(m)] = float(double(bias[size_t(m)]) + values[size_t(m)]);
      }
      Value *b = addFreshWeight(module, names, node, "affine", "/folded_bias",
                                ir::TensorType(ir::DType::F32, {channels}),
                                newBias);
      conv->setOperands({conv->getOperand(0), w, b});
      // The Conv now computes the node's result: its readers and its name
      // move over.
      module.replaceValue(node.getResult(0), convResult);
      return true;
    }
    return false;
  }
};

} // namespace

unsigned foldAffinesIntoConvs(ir::Module &module) {
  Folder folder{module, getValueNames(module)};
  unsigned total = 0;
  // A folded node reads the Conv until it is erased, so the next node of a
  // chain folds in the next round.
  for (;;) {
    llvm::DenseSet<const ir::Node *> folded;
    for (const std::unique_ptr<ir::Node> &node : module.getNodes())
      if (folder.tryFold(*node))
        folded.insert(node.get());
    if (folded.empty())
      return total;
    module.eraseNodesIf(
        [&](const ir::Node &node) { return folded.count(&node) != 0; });
    total += unsigned(folded.size());
  }
}

} // namespace snug
