//===- AddLoss.cpp - Loss functions appended to a model -------------------===//
//
// `add-loss{kind=mse|cross-entropy output=NAME target=NAME [ignore-index=I]}`
// appends a loss over the graph output `output` and makes it the only graph
// output, named `loss` (f32[] for an f32 model): the function autodiff then
// differentiates. The target becomes a new graph input named `target`:
//   mse            mean((output - target)^2) over every element; the
//                  target has the output's type (PyTorch's MSELoss).
//   cross-entropy  output is logits [N, C]; the target holds N class
//                  indices (i64[N]); the loss is the mean over the batch of
//                  -log softmax(logits)[n, target[n]] (PyTorch's
//                  CrossEntropyLoss). The indices are turned into one-hot
//                  rows by comparing them with a constant 0..C-1, so the
//                  gradient needs no scatter. They first pass
//                  snug.check_labels, which fails the run on a label
//                  outside [0, C) (torch raises there; a one-hot row of
//                  zeros would count as zero loss in the mean).
//                  Option ignore-index=I (torch's ignore_index): items
//                  labelled I contribute neither loss nor gradient, and the
//                  mean is over the other items: -sum / count, count the
//                  one-hot rows' sum. With every item ignored torch's loss
//                  is NaN (0/0) and its gradient zero; so is this one's:
//                  the sum is divided by max(count, 1) and 0/count (NaN at
//                  count 0, else 0, and no weight reaches it) is added.
//                  The count and its constants are i64, cast: a float
//                  constant would be a weight autodiff trains.
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

#include <optional>

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
  std::optional<int64_t> ignoreIndex;
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
  } else if (key == "ignore-index") {
    int64_t index = 0;
    if (value.getAsInteger(10, index))
      return gradientError("option 'ignore-index' must be a whole number, "
                           "got '" +
                           value + "'");
    ignoreIndex = index;
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

static llvm::Expected<Value *>
addCrossEntropy(GraphBuilder &b, Value *logits, Value *labels,
                std::optional<int64_t> ignoreIndex) {
  llvm::ArrayRef<int64_t> dims = logits->getType().getDims();
  ir::AttributeMap checkAttributes = {
      {"classes", Attribute::getInt(dims[1])},
      {"input", Attribute::getString(labels->getName())}};
  if (ignoreIndex)
    checkAttributes.emplace("ignore_index", Attribute::getInt(*ignoreIndex));
  auto checked = b.emit(OpCode::SnugCheckLabels, {labels}, checkAttributes);
  if (!checked)
    return checked.takeError();
  llvm::SmallVector<double, 16> classIds;
  for (int64_t c = 0; c < dims[1]; ++c)
    classIds.push_back(double(c));
  // An ignore index that is a class: its column matches no label (-1
  // passes no check), so its items' one-hot rows are zero too.
  if (ignoreIndex && *ignoreIndex >= 0 && *ignoreIndex < dims[1])
    classIds[size_t(*ignoreIndex)] = -1;
  Value *classes = b.constant(TensorType(ir::DType::I64, {dims[1]}), classIds);
  auto column = b.emit(OpCode::Reshape, {*checked},
                       {{"shape", Attribute::getInts({dims[0], 1})}});
  if (!column)
    return column.takeError();
  auto isLabel = b.emit(OpCode::Equal, {*column, classes});
  if (!isLabel)
    return isLabel.takeError();
  ir::DType dtype = logits->getType().getDType();
  llvm::StringRef dtypeName = ir::getDTypeName(dtype);
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
  if (!ignoreIndex) {
    auto mean = b.emit(OpCode::ReduceMean, {*perRow},
                       {{"axes", Attribute::getInts({0})},
                        {"keepdims", Attribute::getInt(0)}});
    if (!mean)
      return mean.takeError();
    return b.emit(OpCode::Neg, {*mean});
  }
  auto total = b.emit(
      OpCode::ReduceSum, {*perRow},
      {{"axes", Attribute::getInts({0})}, {"keepdims", Attribute::getInt(0)}});
  if (!total)
    return total.takeError();
  // The count and its constants are integers, so no float weight (which
  // autodiff would train) enters the loss.
  auto asFloat = [&](Value *value) {
    return b.emit(OpCode::Cast, {value},
                  {{"to", Attribute::getString(dtypeName)}});
  };
  auto labelled =
      b.emit(OpCode::Cast, {*isLabel}, {{"to", Attribute::getString("i64")}});
  if (!labelled)
    return labelled.takeError();
  auto count = b.emit(OpCode::ReduceSum, {*labelled},
                      {{"axes", Attribute::getInts({0, 1})},
                       {"keepdims", Attribute::getInt(0)}});
  if (!count)
    return count.takeError();
  auto atLeastOne = b.emit(OpCode::Max, {*count, b.scalar(1, ir::DType::I64)});
  if (!atLeastOne)
    return atLeastOne.takeError();
  auto denominator = asFloat(*atLeastOne);
  if (!denominator)
    return denominator.takeError();
  auto mean = b.emit(OpCode::Div, {*total, *denominator});
  if (!mean)
    return mean.takeError();
  auto zero = asFloat(b.scalar(0, ir::DType::I64));
  auto countAsFloat = asFloat(*count);
  if (!zero || !countAsFloat)
    return llvm::joinErrors(zero.takeError(), countAsFloat.takeError());
  auto nanWhenNone = b.emit(OpCode::Div, {*zero, *countAsFloat});
  if (!nanWhenNone)
    return nanWhenNone.takeError();
  auto marked = b.emit(OpCode::Add, {*mean, *nanWhenNone});
  if (!marked)
    return marked.takeError();
  return b.emit(OpCode::Neg, {*marked});
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
  if (ignoreIndex && !crossEntropy)
    return gradientError("option 'ignore-index' applies to kind=cross-entropy "
                         "only");
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
  auto loss = crossEntropy
                  ? addCrossEntropy(builder, output, targetValue, ignoreIndex)
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
