//===- AddLoss.cpp - Loss functions appended to a model -------------------===//
//
// `add-loss{kind=mse|cross-entropy output=NAME target=NAME}` appends a loss
// over the graph output `output` and makes it the only graph output, named
// `loss` (f32[] for an f32 model): the function autodiff then
// differentiates. The target becomes a new graph input named `target`:
//   mse            mean((output - target)^2) over every element; the
//                  target has the output's type (PyTorch's MSELoss).
//   cross-entropy  output is logits [N, C]; the target holds N class
//                  indices (i64[N]); the loss is the mean over the batch of
//                  -log softmax(logits)[n, target[n]] (PyTorch's
//                  CrossEntropyLoss). The indices are turned into one-hot
//                  rows by comparing them with a constant 0..C-1, so the
//                  gradient needs no scatter.
// The loss's nodes are listed in keep_f32 (passes/precision/KeepF32.h): under
// --precision they compute in f32 on the output cast back, as torch's
// autocast computes mse_loss and cross_entropy, so the loss and the first
// gradients of its backward (the seed, or the loss scale, over N) keep f32's
// range.
//
//===----------------------------------------------------------------------===//
#include "ir/Module.h"
#include "passes/training/GradientRules.h"
#include "passes/precision/KeepF32.h"
#include "passes/Passes.h"

namespace snug {

using ir::Attribute;
using ir::OpCode;
using ir::TensorType;
using ir::Value;

namespace {
/// The training step's loss output (what snug-run and the report name).
constexpr const char *kLossName = "loss";

class AddLoss : public Pass {
public:
  llvm::StringRef getName() const override { return "add-loss"; }
  llvm::Error setOption(llvm::StringRef key, llvm::StringRef value) override;
  llvm::Expected<bool> run(ir::Module &module) override;

private:
  std::string kind, outputName, targetName;
};
} // namespace

llvm::Error AddLoss::setOption(llvm::StringRef key, llvm::StringRef value) {
  if (key == "kind") {
    if (value != "mse" && value != "cross-entropy")
      return gradientError("option 'kind' must be mse or cross-entropy, got '" +
                           value + "'");
    kind = value.str();
  } else if (key == "output") {
    outputName = value.str();
  } else if (key == "target") {
    targetName = value.str();
  } else {
    return Pass::setOption(key, value);
  }
  return llvm::Error::success();
}

static llvm::Expected<Value *> addMse(GraphBuilder &b, Value *output,
                                      Value *target) {
  auto difference = b.emit(OpCode::Sub, {output, target});
  if (!difference)
    return difference.takeError();
  auto squared = b.emit(OpCode::Mul, {*difference, *difference});
  if (!squared)
    return squared.takeError();
  llvm::SmallVector<int64_t, 4> axes;
  for (unsigned i = 0; i < output->getType().getRank(); ++i)
    axes.push_back(i);
  return b.emit(
      OpCode::ReduceMean, {*squared},
      {{"axes", Attribute::getInts(axes)}, {"keepdims", Attribute::getInt(0)}});
}

static llvm::Expected<Value *> addCrossEntropy(GraphBuilder &b, Value *logits,
                                               Value *labels) {
  llvm::ArrayRef<int64_t> dims = logits->getType().getDims();
  llvm::SmallVector<double, 16> classIds;
  for (int64_t c = 0; c < dims[1]; ++c)
    classIds.push_back(double(c));
  Value *classes = b.constant(TensorType(ir::DType::I64, {dims[1]}), classIds);
  auto column = b.emit(OpCode::Reshape, {labels},
                       {{"shape", Attribute::getInts({dims[0], 1})}});
  if (!column)
    return column.takeError();
  auto isLabel = b.emit(OpCode::Equal, {*column, classes});
  if (!isLabel)
    return isLabel.takeError();
  llvm::StringRef dtypeName = ir::getDTypeName(logits->getType().getDType());
  auto oneHot = b.emit(OpCode::Cast, {*isLabel},
                       {{"to", Attribute::getString(dtypeName)}});
  if (!oneHot)
    return oneHot.takeError();
  auto logProbs =
      b.emit(OpCode::LogSoftmax, {logits}, {{"axis", Attribute::getInt(1)}});
  if (!logProbs)
    return logProbs.takeError();
  auto picked = b.emit(OpCode::Mul, {*oneHot, *logProbs});
  if (!picked)
    return picked.takeError();
  auto perRow = b.emit(
      OpCode::ReduceSum, {*picked},
      {{"axes", Attribute::getInts({1})}, {"keepdims", Attribute::getInt(0)}});
  if (!perRow)
    return perRow.takeError();
  auto mean = b.emit(
      OpCode::ReduceMean, {*perRow},
      {{"axes", Attribute::getInts({0})}, {"keepdims", Attribute::getInt(0)}});
  if (!mean)
    return mean.takeError();
  return b.emit(OpCode::Neg, {*mean});
}

llvm::Expected<bool> AddLoss::run(ir::Module &module) {
  if (kind.empty())
    return gradientError("give kind=mse or kind=cross-entropy");
  Value *output = nullptr;
  std::string names;
  for (Value *candidate : module.getOutputs()) {
    if (candidate->getName() == outputName)
      output = candidate;
    names += (names.empty() ? "'" : ", '") + candidate->getName().str() + "'";
  }
  if (!output)
    return gradientError("output '" + outputName +
                         "' is not a graph output (outputs: " + names + ")");
  const TensorType &type = output->getType();
  if (!ir::isFloatDType(type.getDType()))
    return gradientError("output '" + outputName + "' is " + type.str() +
                         ": a loss needs floating-point values");
  bool crossEntropy = kind == "cross-entropy";
  if (crossEntropy && type.getRank() != 2)
    return gradientError("cross-entropy needs logits [N, C]; output '" +
                         outputName + "' is " + type.str());
  // The new input and the loss output take names of their own: a clash
  // with any value of the model is the user's to resolve, named here.
  std::string target = targetName.empty() ? "target" : targetName;
  for (const std::unique_ptr<Value> &argument : module.getArguments()) {
    if (argument->getName() == target)
      return gradientError("target '" + target +
                           "' is already an input or weight of the graph");
    if (argument->getName() == kLossName)
      return gradientError("the graph has an input or weight named '" +
                           std::string(kLossName) +
                           "', the name of the training step's loss output");
  }
  for (const std::unique_ptr<ir::Node> &node : module.getNodes())
    for (Value *result : node->getResults()) {
      if (result->getName() == target)
        return gradientError("target '" + target + "' is already a value of "
                             "the graph (a result of " + node->describe() +
                             ")");
      if (result->getName() == kLossName)
        return gradientError("the graph has a value named '" +
                             std::string(kLossName) + "' (a result of " +
                             node->describe() +
                             "), the name of the training step's loss output");
    }
  Value *targetValue = module.addInput(
      target,
      crossEntropy ? TensorType(ir::DType::I64, {type.getDims()[0]}) : type);
  size_t firstNew = module.getNodes().size(); // the builder appends
  GraphBuilder builder(module, "loss.c");
  auto loss = crossEntropy ? addCrossEntropy(builder, output, targetValue)
                           : addMse(builder, output, targetValue);
  if (!loss)
    return loss.takeError();
  (*loss)->setName(kLossName);
  module.setOutputs({*loss});
  markKeepF32From(module, firstNew, "loss");
  return true;
}

std::unique_ptr<Pass> createAddLossPass() {
  return std::make_unique<AddLoss>();
}

} // namespace snug
