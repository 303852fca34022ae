//===- BatchNormPattern.cpp - Inference BatchNorm folded into its Conv ----===//
//
// In inference BatchNormalization is a per-channel affine map,
//   y = (x - mean) / sqrt(var + epsilon) * scale + beta = x * s + t,
// with s = scale / sqrt(var + epsilon) and t = beta - mean * s. After a
// Conv whose weights and bias are constants, it folds into them:
//   W'[m, ...] = W[m, ...] * s[m],  b'[m] = (b[m] - mean[m]) * s[m] + beta[m]
// (b = 0 without a bias), so the Conv alone computes the pair and the
// normalized tensor is never written. Exporters fold this themselves in
// most cases (torch in eval mode does); models exported without it (or
// from other frameworks) keep the pair.
//
// What must hold: the Conv's result is read by the BatchNormalization
// alone and is no graph output; its weight, its bias if any, and the
// BatchNormalization's four parameters are f32 weights with data, one value
// per output channel; only the first result of the BatchNormalization is
// used (the others exist in training mode only). The folded values are
// computed in double and rounded once, so they differ from the pair run
// node by node by float rounding only. New weights are made (the old ones
// may have other readers; the bundle writer drops unread ones).
//
//===----------------------------------------------------------------------===//
#include "passes/FusePatterns.h"

#include "ir/Module.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstring>
#include <vector>

namespace snug {

namespace {

using ir::OpCode;
using ir::Value;

llvm::ArrayRef<uint8_t> bytesOf(const std::vector<float> &values) {
  return llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(values.data()),
      values.size() * sizeof(float));
}

} // namespace

/// A name no value of the module has: `stem`, or `stem` with a number.
static std::string freshName(const llvm::StringSet<> &taken,
                             const std::string &stem) {
  if (!taken.count(stem))
    return stem;
  for (unsigned i = 1;; ++i)
    if (!taken.count(stem + "_" + std::to_string(i)))
      return stem + "_" + std::to_string(i);
}

/// Folds `norm` into the Conv before it when the pattern holds.
static bool tryFold(ir::Module &module, ir::Node &norm,
                    llvm::StringSet<> &names) {
  for (unsigned i = 1; i < norm.getNumResults(); ++i)
    if (norm.getResult(i)->hasUses() || module.isOutput(norm.getResult(i)))
      return false;
  ir::Node *conv = norm.getOperand(0)->getDefiningNode();
  if (!conv || !conv->is(OpCode::Conv))
    return false;
  Value *convResult = conv->getResult(0);
  if (module.isOutput(convResult) || convResult->getUses().size() != 1)
    return false;
  const ir::TensorType &weightType = conv->getOperand(1)->getType();
  if (weightType.getRank() < 1 || weightType.getDims()[0] <= 0)
    return false;
  int64_t channels = weightType.getDims()[0];
  int64_t perChannel = weightType.getNumElements() / channels;
  std::vector<float> weight, bias(size_t(channels), 0.0f), scale, beta, mean,
      var;
  if (!readF32Weight(module, conv->getOperand(1), weightType.getNumElements(),
               weight) ||
      (conv->getNumOperands() > 2 && conv->getOperand(2) &&
       !readF32Weight(module, conv->getOperand(2), channels, bias)) ||
      !readF32Weight(module, norm.getOperand(1), channels, scale) ||
      !readF32Weight(module, norm.getOperand(2), channels, beta) ||
      !readF32Weight(module, norm.getOperand(3), channels, mean) ||
      !readF32Weight(module, norm.getOperand(4), channels, var))
    return false;
  const ir::Attribute *epsilonAttr = norm.getAttribute("epsilon");
  double epsilon =
      epsilonAttr && epsilonAttr->getKind() == ir::Attribute::Kind::Float
          ? epsilonAttr->getFloat()
          : 1e-5;
  std::vector<float> newWeight(weight.size());
  std::vector<float> newBias(static_cast<size_t>(channels));
  for (int64_t m = 0; m < channels; ++m) {
    double s = double(scale[m]) / std::sqrt(double(var[m]) + epsilon);
    // A variance at or below -epsilon: the pair runs as written.
    if (!std::isfinite(s))
      return false;
    for (int64_t k = 0; k < perChannel; ++k)
      newWeight[size_t(m * perChannel + k)] =
          float(double(weight[size_t(m * perChannel + k)]) * s);
    newBias[size_t(m)] =
        float((double(bias[m]) - double(mean[m])) * s + double(beta[m]));
  }
  std::string stem =
      norm.getName().empty() ? std::string("batchnorm") : norm.getName().str();
  std::string weightName = freshName(names, stem + "/folded_weight");
  names.insert(weightName);
  std::string biasName = freshName(names, stem + "/folded_bias");
  names.insert(biasName);
  Value *w = module.addWeight(weightName, weightType, bytesOf(newWeight));
  Value *b = module.addWeight(biasName,
                              ir::TensorType(ir::DType::F32, {channels}),
                              bytesOf(newBias));
  conv->setOperands({conv->getOperand(0), w, b});
  // The Conv now computes the BatchNormalization's result: its readers and
  // its name move over.
  module.replaceValue(norm.getResult(0), convResult);
  return true;
}

unsigned foldBatchNormsIntoConvs(ir::Module &module) {
  llvm::StringSet<> names;
  for (const std::unique_ptr<Value> &argument : module.getArguments())
    names.insert(argument->getName());
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      names.insert(node->getResult(i)->getName());
  llvm::DenseSet<const ir::Node *> folded;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (node->is(OpCode::BatchNormalization) && tryFold(module, *node, names))
      folded.insert(node.get());
  if (!folded.empty())
    module.eraseNodesIf(
        [&](const ir::Node &node) { return folded.count(&node) != 0; });
  return unsigned(folded.size());
}

} // namespace snug
