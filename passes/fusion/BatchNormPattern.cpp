//===- BatchNormPattern.cpp - Inference BatchNorm folded into its Conv ----===//
//
// In inference BatchNormalization is a per-channel affine map,
//   y = (x - mean) / sqrt(var + epsilon) * scale + beta = x * s + t,
// with s = scale / sqrt(var + epsilon) and t = beta - mean * s. After a
// Conv whose weights and bias are constants, it folds into them:
//   W'[m, ...] = W[m, ...] * s[m],  b'[m] = (b[m] - mean[m]) * s[m] + beta[m]
// (b = 0 without a bias), so the Conv alone computes the pair and the
// normalized tensor is never written. One that follows no such Conv (a
// pre-activation network's, DenseNet's, after a Concat) becomes Mul(x, s)
// and Add(., t) over [C, 1, ...] constants: elementwise, so it fuses with
// the activation after it into one kernel instead of two. Exporters fold this themselves in
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
#include "passes/fusion/FusePatterns.h"

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

std::string getFreshName(const llvm::StringSet<> &taken,
                         const std::string &stem) {
  if (!taken.count(stem))
    return stem;
  for (unsigned i = 1;; ++i)
    if (!taken.count(stem + "_" + std::to_string(i)))
      return stem + "_" + std::to_string(i);
}

/// An inference BatchNormalization's parameters, with s = scale /
/// sqrt(var + epsilon) in double.
struct NormParams {
  std::vector<float> beta, mean;
  std::vector<double> s;
};

/// Reads `norm`'s four parameters (f32 weights with data, `channels` values
/// each) and computes s; false when one is not, when a result past the
/// first is used, or when s is not finite (a variance at or below
/// -epsilon: the node runs as written).
static bool readNormParams(const ir::Module &module, const ir::Node &norm,
                           int64_t channels, NormParams &params) {
  for (unsigned i = 1; i < norm.getNumResults(); ++i)
    if (norm.getResult(i)->hasUses() || module.isOutput(norm.getResult(i)))
      return false;
  std::vector<float> scale, var;
  if (!readF32Weight(module, norm.getOperand(1), channels, scale) ||
      !readF32Weight(module, norm.getOperand(2), channels, params.beta) ||
      !readF32Weight(module, norm.getOperand(3), channels, params.mean) ||
      !readF32Weight(module, norm.getOperand(4), channels, var))
    return false;
  const ir::Attribute *epsilonAttr = norm.getAttribute("epsilon");
  double epsilon =
      epsilonAttr && epsilonAttr->getKind() == ir::Attribute::Kind::Float
          ? epsilonAttr->getFloat()
          : 1e-5;
  for (int64_t m = 0; m < channels; ++m) {
    params.s.push_back(double(scale[m]) / std::sqrt(double(var[m]) + epsilon));
    if (!std::isfinite(params.s.back()))
      return false;
  }
  return true;
}

Value *addFreshWeight(ir::Module &module, llvm::StringSet<> &names,
                      const ir::Node &node, const char *unnamed,
                      const char *suffix, const ir::TensorType &type,
                      const std::vector<float> &values) {
  std::string stem =
      node.getName().empty() ? std::string(unnamed) : node.getName().str();
  std::string name = getFreshName(names, stem + suffix);
  names.insert(name);
  return module.addWeight(name, type, bytesOf(values));
}

/// Folds `norm` into the Conv before it when the pattern holds.
static bool tryFold(ir::Module &module, ir::Node &norm,
                    llvm::StringSet<> &names) {
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
  std::vector<float> weight, bias(size_t(channels), 0.0f);
  NormParams params;
  if (!readF32Weight(module, conv->getOperand(1), weightType.getNumElements(),
               weight) ||
      (conv->getNumOperands() > 2 && conv->getOperand(2) &&
       !readF32Weight(module, conv->getOperand(2), channels, bias)) ||
      !readNormParams(module, norm, channels, params))
    return false;
  std::vector<float> newWeight(weight.size());
  std::vector<float> newBias(static_cast<size_t>(channels));
  for (int64_t m = 0; m < channels; ++m) {
    double s = params.s[size_t(m)];
    for (int64_t k = 0; k < perChannel; ++k)
      newWeight[size_t(m * perChannel + k)] =
          float(double(weight[size_t(m * perChannel + k)]) * s);
    newBias[size_t(m)] = float((double(bias[m]) - double(params.mean[m])) * s +
                               double(params.beta[m]));
  }
  Value *w = addFreshWeight(module, names, norm, "batchnorm", "/folded_weight",
                            weightType, newWeight);
  Value *b = addFreshWeight(module, names, norm, "batchnorm", "/folded_bias",
                            ir::TensorType(ir::DType::F32, {channels}),
                            newBias);
  conv->setOperands({conv->getOperand(0), w, b});
  // The Conv now computes the BatchNormalization's result: its readers and
  // its name move over.
  module.replaceValue(norm.getResult(0), convResult);
  return true;
}

/// Rewrites `norm`, at schedule position `index`, as Mul(x, s) and Add(.,
/// t) over per-channel constants shaped [C, 1, ...] to broadcast along
/// dim 1, when it is f32 with constant parameters.
static bool tryAffine(ir::Module &module, ir::Node &norm, size_t index,
                      llvm::StringSet<> &names) {
  Value *x = norm.getOperand(0);
  const ir::TensorType &type = x->getType();
  if (type.getDType() != ir::DType::F32 || type.getRank() < 2 ||
      type.getDims()[1] <= 0 || norm.getResult(0)->getType() != type)
    return false;
  int64_t channels = type.getDims()[1];
  NormParams params;
  if (!readNormParams(module, norm, channels, params))
    return false;
  std::vector<float> s(static_cast<size_t>(channels)),
      t(static_cast<size_t>(channels));
  for (int64_t m = 0; m < channels; ++m) {
    s[size_t(m)] = float(params.s[size_t(m)]);
    t[size_t(m)] = float(double(params.beta[m]) -
                         double(params.mean[m]) * params.s[size_t(m)]);
  }
  llvm::SmallVector<int64_t, 4> dims(type.getRank() - 1, 1);
  dims[0] = channels;
  ir::TensorType perChannel(ir::DType::F32, dims);
  Value *sW = addFreshWeight(module, names, norm, "batchnorm", "/scale",
                             perChannel, s);
  Value *tW = addFreshWeight(module, names, norm, "batchnorm", "/shift",
                             perChannel, t);
  ir::Node *mul = module.insertNode(index, OpCode::Mul, {x, sW}, {type});
  ir::Node *add =
      module.insertNode(index + 1, OpCode::Add, {mul->getResult(0), tW}, {type});
  mul->setName(norm.getName());
  add->setName(norm.getName());
  module.replaceValue(norm.getResult(0), add->getResult(0));
  return true;
}

llvm::StringSet<> getValueNames(const ir::Module &module) {
  llvm::StringSet<> names;
  for (const std::unique_ptr<Value> &argument : module.getArguments())
    names.insert(argument->getName());
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    for (unsigned i = 0; i < node->getNumResults(); ++i)
      names.insert(node->getResult(i)->getName());
  return names;
}

unsigned foldBatchNormsIntoConvs(ir::Module &module) {
  llvm::StringSet<> names = getValueNames(module);
  llvm::DenseSet<const ir::Node *> folded;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (node->is(OpCode::BatchNormalization) && tryFold(module, *node, names))
      folded.insert(node.get());
  if (!folded.empty())
    module.eraseNodesIf(
        [&](const ir::Node &node) { return folded.count(&node) != 0; });
  return unsigned(folded.size());
}

unsigned rewriteBatchNormsAsAffine(ir::Module &module) {
  llvm::StringSet<> names = getValueNames(module);
  std::vector<ir::Node *> norms;
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    if (node->is(OpCode::BatchNormalization))
      norms.push_back(node.get());
  llvm::DenseSet<const ir::Node *> rewritten;
  for (ir::Node *norm : norms) {
    size_t index = 0;
    while (module.getNodes()[index].get() != norm)
      ++index;
    if (tryAffine(module, *norm, index, names))
      rewritten.insert(norm);
  }
  if (!rewritten.empty())
    module.eraseNodesIf(
        [&](const ir::Node &node) { return rewritten.count(&node) != 0; });
  return unsigned(rewritten.size());
}

} // namespace snug
